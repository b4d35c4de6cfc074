//! What an audit reads of the catalog besides the states (`store::state_shares`) and the
//! claims on objects (`store::fixity_claims`), and what it writes: every resource's URI in URI
//! order (the order of the report, streamed: a cursor the report merges with what the source
//! and local fixity found), the resources of a collection, the catalog's own checks
//! (`quick_check`), and the findings it records (`audit_findings`, in one transaction). Also
//! what `repair --from-audit` reads back: the damage the last audit recorded.
//!
//! Which findings there are, and what they mean, is `finding`'s; when and in which order they
//! are made is `audit`'s.

use crate::model::finding::{Class, Finding};
use crate::store::history::VersionRow;
use crate::store::{Catalog, StoreError};
use rusqlite::{params, Rows, Transaction};

/// How many resources the mirror has (tombstoned ones included).
pub(crate) fn resource_count(catalog: &Catalog) -> Result<u64, StoreError> {
    let n: i64 = catalog
        .conn()
        .query_row("SELECT count(*) FROM resources", [], |r| r.get(0))?;
    Ok(n as u64)
}

/// Every resource's URI in URI order (SQLite's BINARY collation orders as Rust's `str` does,
/// bytewise), read from the covering index on `uri`: no table lookups.
const URIS_IN_ORDER: &str = "SELECT uri FROM resources ORDER BY uri";

/// A walk of every resource's URI in URI order, pulled one at a time ([`with_uris_in_order`]).
pub struct UrisInOrder<'s> {
    rows: Rows<'s>,
}

impl UrisInOrder<'_> {
    /// The next URI (`None` after the last), borrowed until the next call.
    pub(crate) fn next_uri(&mut self) -> Result<Option<&str>, StoreError> {
        match self.rows.next()? {
            Some(r) => Ok(Some(r.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?)),
            None => Ok(None),
        }
    }

    /// Pass over the next URI without reading it; false after the last.
    pub(crate) fn skip(&mut self) -> Result<bool, StoreError> {
        Ok(self.rows.next()?.is_some())
    }
}

/// `f` with a walk of every resource's URI in URI order.
pub(crate) fn with_uris_in_order<R, E: From<StoreError>>(
    catalog: &Catalog,
    f: impl FnOnce(&mut UrisInOrder<'_>) -> Result<R, E>,
) -> Result<R, E> {
    let mut stmt = catalog
        .conn()
        .prepare(URIS_IN_ORDER)
        .map_err(StoreError::from)?;
    let mut uris = UrisInOrder {
        rows: stmt.query([]).map_err(StoreError::from)?,
    };
    let out = f(&mut uris);
    drop(uris);
    out
}

/// Every resource in URI order with whether its current version is a tombstone (`None`: it
/// has no current version).
pub(crate) fn each_resource_deletion_in_order(
    catalog: &Catalog,
    mut f: impl FnMut(&str, Option<bool>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT r.uri, v.change FROM resources r
         LEFT JOIN versions v ON v.id = r.current_version_id ORDER BY r.uri",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let deleted = r
            .get_ref(1)?
            .as_str_or_null()
            .map_err(rusqlite::Error::from)?
            .map(|change| change == crate::model::Change::Deleted.as_str());
        let uri = r.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        f(uri, deleted)?;
    }
    Ok(())
}

/// The URI of every resource first listed in the collection `name`.
pub(crate) fn each_uri_of_collection(
    catalog: &Catalog,
    name: &str,
    mut f: impl FnMut(&str),
) -> Result<(), StoreError> {
    let mut stmt = catalog.conn().prepare_cached(
        "SELECT uri FROM resources WHERE collection_id = (SELECT id FROM collections WHERE name = ?1)",
    )?;
    for uri in stmt.query_map([name], |r| r.get::<_, String>(0))? {
        f(&uri?);
    }
    Ok(())
}

/// `PRAGMA quick_check`: "ok" or the problems SQLite lists (no cross-check of index contents;
/// `Catalog::integrity_check` does that too).
pub(crate) fn quick_check(catalog: &Catalog) -> Result<Vec<String>, StoreError> {
    let mut stmt = catalog.conn().prepare("PRAGMA quick_check")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Keep SQLite's page cache small on this connection: its reads are sequential, and the
/// default 2 MB only added to an audit's peak.
pub(crate) fn small_page_cache(catalog: &Catalog) -> Result<(), StoreError> {
    catalog.conn().execute_batch("PRAGMA cache_size = -512")?;
    Ok(())
}

/// Records an audit's findings in `audit_findings`, in one transaction that
/// [`FindingLog::commit`] commits (dropped without it: nothing recorded).
pub struct FindingLog<'c> {
    tx: Transaction<'c>,
    run_id: i64,
}

impl<'c> FindingLog<'c> {
    pub(crate) fn begin(catalog: &'c Catalog, run_id: i64) -> Result<FindingLog<'c>, StoreError> {
        Ok(FindingLog {
            tx: catalog.conn().unchecked_transaction()?,
            run_id,
        })
    }

    pub(crate) fn record(&self, f: &Finding) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "INSERT INTO audit_findings (run_id, mark, class, uri, object, field, expected, actual, hint)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                self.run_id,
                f.mark().to_string(),
                f.class.name(),
                f.uri,
                f.object,
                f.field,
                f.expected,
                f.actual,
                (!f.hint.is_empty()).then_some(f.hint.as_ref()),
            ])?;
        Ok(())
    }

    pub(crate) fn commit(self) -> Result<(), StoreError> {
        self.tx.commit()?;
        Ok(())
    }
}

/// The newest audit that ended, if any.
pub(crate) fn last_finished_audit(catalog: &Catalog) -> Result<Option<i64>, StoreError> {
    Ok(catalog.conn().query_row(
        "SELECT max(id) FROM runs WHERE command = 'audit' AND ended_at IS NOT NULL",
        [],
        |r| r.get(0),
    )?)
}

/// The objects audit run `run_id` found damaged (corrupt, missing, unreadable) or stray, each
/// class and object once, by object.
pub(crate) fn damaged_objects(
    catalog: &Catalog,
    run_id: i64,
) -> Result<Vec<(Class, String)>, StoreError> {
    let damage = [
        Class::Corrupt,
        Class::MissingObject,
        Class::Unreadable,
        Class::StrayObject,
    ];
    let mut stmt = catalog.conn().prepare(
        "SELECT DISTINCT class, object FROM audit_findings WHERE run_id = ?1
         AND class IN (?2, ?3, ?4, ?5) AND object IS NOT NULL ORDER BY object",
    )?;
    let rows = stmt.query_map(
        params![
            run_id,
            damage[0].name(),
            damage[1].name(),
            damage[2].name(),
            damage[3].name()
        ],
        |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (class, object) = row?;
        if let Some(class) = Class::parse(&class) {
            out.push((class, object));
        }
    }
    Ok(out)
}

/// The URIs whose versions name object `sha256`, each once with its newest such version,
/// newest first.
pub(crate) fn versions_naming(
    catalog: &Catalog,
    sha256: &str,
) -> Result<Vec<(String, VersionRow)>, StoreError> {
    let mut out: Vec<(String, VersionRow)> = Vec::new();
    crate::store::history::each_version_naming(catalog, sha256, |uri, v| {
        if !out.iter().any(|(u, _)| u == uri) {
            out.push((uri.to_string(), v));
        }
        Ok(())
    })?;
    Ok(out)
}
