//! `rsmirror diff WHEN1 [WHEN2]`: what changed between two points of the mirror's history,
//! one line per resource with the audit report's marks: `+` created, `-` deleted, `*` updated.
//! Only the resources a run between the two points touched are looked at, so the cost follows
//! the change, not the mirror.

use crate::access::{state_at, Out, Reader, VersionRow, When};
use crate::error::Error;
use crate::store::StoreError;
use std::path::Path;

pub struct Options {
    pub from: When,
    pub to: Option<When>,
    pub json: bool,
}

/// One line of `diff --json` (JSON Lines; the keys are stable). `before`/`after` are the
/// states at WHEN1 and WHEN2 (`null`: absent, or deleted).
#[derive(serde::Serialize)]
struct Line<'a> {
    mark: &'static str,
    change: &'static str,
    uri: &'a str,
    before: Option<&'a VersionRow>,
    after: Option<&'a VersionRow>,
}

pub fn run(mirror: &Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    let a = reader.point(Some(&o.from))?;
    let b = reader.point(o.to.as_ref())?;
    let (low, high) = if a.bound() <= b.bound() {
        (a.bound(), b.bound())
    } else {
        (b.bound(), a.bound())
    };
    // One read transaction: every state below comes from the same snapshot.
    reader
        .conn()
        .execute_batch("BEGIN")
        .map_err(StoreError::from)?;
    let mut stmt = reader
        .conn()
        .prepare(
            "SELECT r.id, r.uri FROM resources r
             WHERE r.id IN (SELECT resource_id FROM versions WHERE run_id > ?1 AND run_id <= ?2)
             ORDER BY r.uri",
        )
        .map_err(StoreError::from)?;
    let mut rows = stmt.query([low, high]).map_err(StoreError::from)?;
    let mut out = Out::stdout();
    while let Some(row) = rows.next().map_err(StoreError::from)? {
        let id: i64 = row.get(0).map_err(StoreError::from)?;
        let uri: String = row.get(1).map_err(StoreError::from)?;
        let before = present(state_at(reader.conn(), id, a)?);
        let after = present(state_at(reader.conn(), id, b)?);
        let (mark, change) = match (&before, &after) {
            (None, Some(_)) => ("+", "created"),
            (Some(_), None) => ("-", "deleted"),
            (Some(x), Some(y)) if x.sha256 != y.sha256 || x.length != y.length => ("*", "updated"),
            // The same bytes (a state re-recorded, metadata only), or absent at both ends.
            _ => continue,
        };
        let more = if o.json {
            out.json_line(&Line {
                mark,
                change,
                uri: &uri,
                before: before.as_ref(),
                after: after.as_ref(),
            })?
        } else {
            out.line(&format!("{mark} {uri}"))?
        };
        if !more {
            break;
        }
    }
    out.flush()?;
    Ok(())
}

/// A state with bytes (a tombstone counts as absent).
fn present(v: Option<VersionRow>) -> Option<VersionRow> {
    v.filter(|v| !v.deleted())
}
