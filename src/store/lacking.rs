//! The present resources of a source whose current version has no bytes (recorded under
//! `--metadata-only`): what a run with full mirroring fetches first.

use crate::store::{Catalog, StoreError};

/// A current state recorded without bytes, with what the source declared of it.
#[derive(Debug, Clone)]
pub struct Lacking {
    pub uri: String,
    pub collection: String,
    pub lastmod: Option<jiff::Timestamp>,
    pub declared_length: Option<u64>,
    /// As recorded: `md5:… sha-256:…`.
    pub declared_hash: Option<String>,
    pub media_type: Option<String>,
    pub declared_encoding: Option<String>,
}

/// Every present resource of source `source_id` (its current version written by one of its
/// runs) whose current version arrived as `metadata`, in URI order.
pub(crate) fn of_source(catalog: &Catalog, source_id: i64) -> Result<Vec<Lacking>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT r.uri, c.name, v.lastmod, v.declared_length_bytes,
                v.declared_hash, v.media_type, v.declared_encoding
         FROM resources r
         JOIN versions v ON v.id = r.current_version_id
         JOIN collections c ON c.id = r.collection_id
         JOIN runs ON runs.id = v.run_id
         WHERE v.arrived_via = 'metadata' AND v.change != 'deleted' AND runs.source_id = ?1
         ORDER BY r.uri",
    )?;
    let rows = stmt.query_map([source_id], |r| {
        Ok(Lacking {
            uri: r.get(0)?,
            collection: r.get(1)?,
            lastmod: (r.get::<_, Option<String>>(2)?).and_then(|t| t.parse().ok()),
            declared_length: r.get::<_, Option<i64>>(3)?.map(|n| n.max(0) as u64),
            declared_hash: r.get(4)?,
            media_type: r.get(5)?,
            declared_encoding: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
