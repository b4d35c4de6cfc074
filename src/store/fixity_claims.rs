//! What local fixity (`audit::fixity`) reads of the catalog: the claims the versions make on
//! their objects (digest, length, the digests recorded at ingest), streamed in catalog order so
//! that an audit of ten million resources holds one row at a time; the objects several
//! versions share; and every referenced object in name order, as a cursor the walk of
//! `objects/` merges with to find strays. Each row is read lazily (a column is decoded only
//! when asked for), so the rows a sample skips cost no more than the scan. Hashing, judging a
//! claim and the findings are `audit::fixity`'s.

use crate::model::Change;
use crate::store::{Catalog, StoreError};
use rusqlite::{Row, Rows};
use std::path::Path;

/// A read-only connection for one streaming scan: a small page cache (reads are sequential;
/// a million-resource audit runs several of these side by side in bounded memory).
pub(crate) fn open_for_scan(mirror: &Path) -> Result<Catalog, StoreError> {
    let catalog = Catalog::open_read_only(mirror)?.ok_or_else(|| StoreError::Missing {
        path: mirror.display().to_string(),
    })?;
    crate::store::audit_records::small_page_cache(&catalog)?;
    Ok(catalog)
}

/// How many claims a check covers: versions that name an object (`all_versions`), else
/// resources with a current version.
pub(crate) fn count(catalog: &Catalog, all_versions: bool) -> Result<u64, StoreError> {
    let n: i64 = catalog.conn().query_row(
        if all_versions {
            "SELECT count(*) FROM versions WHERE sha256_hex IS NOT NULL"
        } else {
            "SELECT count(*) FROM resources WHERE current_version_id IS NOT NULL"
        },
        [],
        |r| r.get(0),
    )?;
    Ok(n as u64)
}

/// The URI of every resource with a current version, in catalog order.
pub(crate) fn each_current_uri(
    catalog: &Catalog,
    mut f: impl FnMut(&str),
) -> Result<(), StoreError> {
    let mut stmt = catalog
        .conn()
        .prepare("SELECT r.uri FROM resources r JOIN versions v ON v.id = r.current_version_id")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        f(text(r, 0)?);
    }
    Ok(())
}

/// The objects more than one version names (from the index `versions_by_object`: few, as a
/// rule).
pub(crate) fn shared_objects(catalog: &Catalog) -> Result<Vec<String>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT sha256_hex FROM versions WHERE sha256_hex IS NOT NULL
         GROUP BY sha256_hex HAVING count(*) > 1",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Which claims [`each_claim`] reads.
#[derive(Debug, Clone, Copy)]
pub struct ClaimScope {
    /// Every version's, not only the current ones.
    pub all_versions: bool,
    /// The digests recorded at ingest too (the bytes are hashed); without, they read as none.
    pub digests: bool,
}

/// One version's claim on its object, read from the catalog lazily.
pub struct ClaimRow<'r, 's> {
    row: &'r Row<'s>,
}

impl<'r> ClaimRow<'r, '_> {
    /// The object it names (`None`: a tombstone, or a version without one).
    pub(crate) fn sha256(&self) -> Result<Option<&'r str>, StoreError> {
        text_or_null(self.row, 0)
    }

    pub(crate) fn uri(&self) -> Result<&'r str, StoreError> {
        text(self.row, 1)
    }

    pub(crate) fn length(&self) -> Result<Option<u64>, StoreError> {
        Ok(self.row.get::<_, Option<i64>>(2)?.map(|n| n as u64))
    }

    pub(crate) fn md5(&self) -> Result<Option<String>, StoreError> {
        Ok(self.row.get(3)?)
    }

    pub(crate) fn sha1(&self) -> Result<Option<String>, StoreError> {
        Ok(self.row.get(4)?)
    }

    /// The source's digests, as recorded ("md5:… sha-256:…").
    pub(crate) fn declared_hash(&self) -> Result<Option<String>, StoreError> {
        Ok(self.row.get(5)?)
    }

    pub(crate) fn declared_length(&self) -> Result<Option<u64>, StoreError> {
        Ok(self.row.get::<_, Option<i64>>(6)?.map(|n| n as u64))
    }

    /// A tombstone.
    pub(crate) fn deleted(&self) -> Result<bool, StoreError> {
        Ok(text(self.row, 7)? == Change::Deleted.as_str())
    }

    /// Recorded without bytes (`--metadata-only`): no object to check.
    pub(crate) fn metadata_only(&self) -> Result<bool, StoreError> {
        Ok(self.row.get(8)?)
    }
}

/// The claims in `scope`, in catalog order (sequential reads, whatever the catalog's size),
/// handed to `f` one at a time; `Ok(false)` stops.
pub(crate) fn each_claim(
    catalog: &Catalog,
    scope: ClaimScope,
    mut f: impl FnMut(&ClaimRow<'_, '_>) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let digests = match scope.digests {
        true => "v.md5_hex, v.sha1_hex, v.declared_hash",
        false => "NULL, NULL, NULL",
    };
    let from = if scope.all_versions {
        "FROM versions v JOIN resources r ON r.id = v.resource_id"
    } else {
        "FROM resources r JOIN versions v ON v.id = r.current_version_id"
    };
    let mut stmt = catalog.conn().prepare(&format!(
        "SELECT v.sha256_hex, r.uri, v.length_bytes, {digests}, v.declared_length_bytes, v.change,
                v.arrived_via = 'metadata'
         {from}"
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        if !f(&ClaimRow { row })? {
            break;
        }
    }
    Ok(())
}

/// Every object the catalog references, in name order, pulled one at a time
/// ([`with_referenced_objects`]).
pub struct ReferencedObjects<'s> {
    rows: Rows<'s>,
}

impl ReferencedObjects<'_> {
    /// The next object's name (`None` after the last), borrowed until the next call. A name
    /// that is not text ends the walk as the last would.
    pub(crate) fn next_object(&mut self) -> Result<Option<&str>, StoreError> {
        Ok(match self.rows.next()? {
            Some(r) => r.get_ref(0).ok().and_then(|v| v.as_str().ok()),
            None => None,
        })
    }
}

/// `f` with a walk of every object the catalog references, in name order.
pub(crate) fn with_referenced_objects<R>(
    catalog: &Catalog,
    f: impl FnOnce(&mut ReferencedObjects<'_>) -> R,
) -> Result<R, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT DISTINCT sha256_hex FROM versions WHERE sha256_hex IS NOT NULL ORDER BY sha256_hex",
    )?;
    let mut objects = ReferencedObjects {
        rows: stmt.query([])?,
    };
    let out = f(&mut objects);
    drop(objects);
    Ok(out)
}

/// A text column, borrowed from the row.
fn text<'r>(r: &'r Row<'_>, i: usize) -> Result<&'r str, StoreError> {
    Ok(r.get_ref(i)?.as_str().map_err(rusqlite::Error::from)?)
}

/// A text column or NULL, borrowed from the row.
fn text_or_null<'r>(r: &'r Row<'_>, i: usize) -> Result<Option<&'r str>, StoreError> {
    Ok(r.get_ref(i)?
        .as_str_or_null()
        .map_err(rusqlite::Error::from)?)
}
