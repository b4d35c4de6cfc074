//! A resource's timeline: when each of its states arrived (the start of the run that brought
//! it), oldest first, for the Memento TimeGates and TimeMaps of `serve`. Only runs that have
//! ended count: while a run is under way the mirror is shown as the last run that ended left it,
//! as `ls` shows it. What the states are (their bytes, media type) is read by version id
//! through `history::version`.

use crate::store::catalog::Catalog;
use crate::store::StoreError;
use rusqlite::OptionalExtension;

/// One state on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Moment {
    pub version: i64,
    /// The start of the run that brought it (RFC 3339), as the runs table records it.
    pub started_at: String,
    /// A tombstone: the resource was gone from then on.
    pub deleted: bool,
}

/// Every state of resource `resource_id` brought by a run that ended, oldest first (by run,
/// then as recorded), handed to `f` (`Ok(false)` stops). One statement: one snapshot.
pub(crate) fn each_moment<E: From<StoreError>>(
    catalog: &Catalog,
    resource_id: i64,
    mut f: impl FnMut(Moment) -> Result<bool, E>,
) -> Result<(), E> {
    let mut stmt = catalog
        .conn()
        .prepare_cached(
            "SELECT v.id, r.started_at, v.change FROM versions v JOIN runs r ON r.id = v.run_id
              WHERE v.resource_id = ?1 AND r.ended_at IS NOT NULL
              ORDER BY v.run_id, v.id",
        )
        .map_err(StoreError::from)?;
    let mut rows = stmt.query([resource_id]).map_err(StoreError::from)?;
    while let Some(r) = rows.next().map_err(StoreError::from)? {
        let change: crate::model::Change = r.get(2).map_err(StoreError::from)?;
        let moment = Moment {
            version: r.get(0).map_err(StoreError::from)?,
            started_at: r.get(1).map_err(StoreError::from)?,
            deleted: change.is_deletion(),
        };
        if !f(moment)? {
            break;
        }
    }
    Ok(())
}

/// SQLite's `data_version`: it changes when another connection commits (a run beside the
/// reader), so a long-lived reader knows when to read the runs again.
pub(crate) fn data_version(catalog: &Catalog) -> Result<i64, StoreError> {
    Ok(catalog
        .conn()
        .query_row("PRAGMA data_version", [], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}
