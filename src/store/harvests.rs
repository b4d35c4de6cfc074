//! Harvests under way (`harvests`): what a reader needs to go on after the last document whose
//! records were committed (an OAI-PMH resumptionToken), written in the same transaction as
//! those records, so that a harvest killed between two documents resumes after the last one
//! applied and fetches none twice.

use crate::store::writer::Tx;
use crate::store::{Catalog, StoreError};
use rusqlite::{params, OptionalExtension};

/// The state a killed harvest of `collection` left, if one did.
pub(crate) fn state(catalog: &Catalog, collection: &str) -> Result<Option<String>, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            "SELECT state FROM harvests WHERE collection = ?1",
            [collection],
            |r| r.get(0),
        )
        .optional()?)
}

/// Within the transaction of a document's records: the harvest of `collection` goes on from
/// `state` (`None`: it is complete, nothing to resume).
pub(crate) fn save(
    tx: &Tx<'_>,
    (source_id, run_id): (i64, i64),
    collection: &str,
    state: Option<&str>,
) -> Result<(), StoreError> {
    match state {
        Some(state) => tx.conn().execute(
            "INSERT INTO harvests (collection, source_id, state, run_id) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (collection) DO UPDATE
             SET state = excluded.state, source_id = excluded.source_id, run_id = excluded.run_id",
            params![collection, source_id, state, run_id],
        )?,
        None => tx
            .conn()
            .execute("DELETE FROM harvests WHERE collection = ?1", [collection])?,
    };
    Ok(())
}

/// The collections the mirror records of the source `source_id`: those with a sync point and
/// those with a harvest under way.
pub(crate) fn collections_of(catalog: &Catalog, source_id: i64) -> Result<Vec<String>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT collection FROM sync_points WHERE source_id = ?1
         UNION SELECT collection FROM harvests WHERE source_id = ?1
         ORDER BY 1",
    )?;
    let rows = stmt.query_map([source_id], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The URIs of the live resources (not tombstoned) first listed in `collection`.
pub(crate) fn live_uris(catalog: &Catalog, collection: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT r.uri FROM resources r
         JOIN collections c ON c.id = r.collection_id
         JOIN versions v ON v.id = (SELECT max(id) FROM versions WHERE resource_id = r.id)
         WHERE c.name = ?1 AND v.change <> 'deleted'
         ORDER BY r.uri",
    )?;
    let rows = stmt.query_map([collection], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
