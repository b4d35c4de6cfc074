//! The changes the mirror applied, per collection, as `rsmirror feed` reports them: the
//! collections it follows or applied changes to, with how each is known outside the mirror
//! (`collection_identities`), and each collection's applied changes in the order they were
//! applied: the `change_events` an incremental run applied, and the versions a baseline re-run
//! wrote. Building the feed (entries, ids, Atom, JSON Feed) is `commands::feed`'s.

use crate::model::{Change, ChangeOutcome};
use crate::store::writer::Tx;
use crate::store::{Catalog, StoreError};
use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};

/// Record how a collection is known outside the mirror (inside the caller's transaction).
pub fn record_identity(
    tx: &Tx<'_>,
    collection: &str,
    identity: &str,
    basis: &str,
) -> Result<(), StoreError> {
    tx.conn().execute(
        "INSERT INTO collection_identities (collection, identity, basis, recorded_at)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(collection) DO UPDATE SET identity = excluded.identity,
            basis = excluded.basis, recorded_at = excluded.recorded_at
         WHERE identity != excluded.identity OR basis != excluded.basis",
        params![collection, identity, basis, Timestamp::now().to_string()],
    )?;
    Ok(())
}

/// A collection the mirror follows or applied changes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CollectionRow {
    pub id: String,
    /// How it is known outside the mirror, when recorded.
    pub identity: Option<String>,
    /// The source it belongs to (its sync point's, else that of the run of its first event).
    pub source: Option<String>,
}

/// Every collection the mirror follows or applied changes to, by id, with its recorded
/// identity and its source.
pub(crate) fn collections(catalog: &Catalog) -> Result<Vec<CollectionRow>, StoreError> {
    let conn = catalog.conn();
    let has_identities = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'collection_identities'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    let identity = match has_identities {
        true => "(SELECT identity FROM collection_identities i WHERE i.collection = c.collection)",
        false => "NULL",
    };
    let sql = format!(
        "SELECT c.collection, {identity},
            COALESCE(
              (SELECT s.url FROM sync_points p JOIN sources s ON s.id = p.source_id
               WHERE p.collection = c.collection),
              (SELECT s.url FROM change_events e JOIN runs r ON r.id = e.run_id
               JOIN sources s ON s.id = r.source_id
               WHERE e.collection = c.collection ORDER BY e.id LIMIT 1))
         FROM (SELECT collection FROM sync_points UNION SELECT collection FROM change_events) c
         ORDER BY c.collection"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map([], |r| {
        Ok(CollectionRow {
            id: r.get(0)?,
            identity: r.get(1)?,
            source: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A change applied to a resource of a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedChange {
    pub run: i64,
    pub uri: String,
    pub change: Change,
    /// When the source says it happened, as recorded.
    pub time: String,
}

/// Every change applied to `collection` that has a time, handed to `f`: first the change
/// events incremental runs applied (by run, then as recorded), then every version a baseline
/// of the collection wrote after the collection's first run, dated by the source (the event
/// time a tombstone has, else the lastmod), never by this mirror.
pub(crate) fn each_applied_change(
    catalog: &Catalog,
    collection: &str,
    mut f: impl FnMut(AppliedChange),
) -> Result<(), StoreError> {
    let conn = catalog.conn();
    let mut events = conn.prepare(
        "SELECT e.run_id, e.uri, e.change, e.event_time
         FROM change_events e JOIN runs r ON r.id = e.run_id
         WHERE e.collection = ?1 AND e.outcome = ?2 AND e.event_time IS NOT NULL
         ORDER BY e.run_id, e.id",
    )?;
    let mut baselines = conn.prepare(
        "WITH first AS (
             SELECT min(v.run_id) AS run_id FROM versions v
             JOIN resources rr ON rr.id = v.resource_id
             WHERE rr.collection_id = (SELECT id FROM collections WHERE name = ?1))
         SELECT v.run_id, rr.uri, v.change, COALESCE(v.event_time, v.lastmod)
         FROM versions v JOIN resources rr ON rr.id = v.resource_id
         JOIN runs r ON r.id = v.run_id, first
         WHERE rr.collection_id = (SELECT id FROM collections WHERE name = ?1)
           AND r.command = 'baseline' AND v.run_id > first.run_id
           AND COALESCE(v.event_time, v.lastmod) IS NOT NULL
         ORDER BY v.run_id, v.id",
    )?;
    let change = |r: &rusqlite::Row<'_>| {
        Ok(AppliedChange {
            run: r.get(0)?,
            uri: r.get(1)?,
            change: r.get(2)?,
            time: r.get(3)?,
        })
    };
    let applied = events.query_map(params![collection, ChangeOutcome::Applied], change)?;
    let rebaselined = baselines.query_map([collection], change)?;
    for row in applied.chain(rebaselined) {
        f(row?);
    }
    Ok(())
}

/// Every change event recorded, as (URI, change, outcome), in the order recorded.
#[cfg(test)]
pub(crate) fn recorded_events(
    catalog: &Catalog,
) -> Result<Vec<(String, String, String)>, StoreError> {
    let mut stmt = catalog
        .conn()
        .prepare("SELECT uri, change, outcome FROM change_events ORDER BY id")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The basis recorded for a Capability List's `rs:ln rel="describes"`.
pub(crate) const DESCRIBES_BASIS: &str = "rs:ln rel=\"describes\" of the Capability List";
