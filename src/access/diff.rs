//! `diff`: what changed between two points of the mirror's history, one row per resource with
//! the audit report's marks: `+` created, `-` deleted, `*` updated. Only the resources a run
//! between the two points touched are looked at, so the cost follows the change, not the
//! mirror. The rows go to a sink (`commands::diff` prints them; `serve` renders them).

use crate::access::{state_at, Point, Reader, VersionRow};
use crate::error::Error;
use crate::model::Change;
use crate::store::history::{self, Snapshot};

/// One resource that changed (the keys of `diff --json`, JSON Lines, are stable).
/// `before`/`after` are the states at the two points (`null`: absent, or deleted).
#[derive(serde::Serialize)]
pub struct Line<'a> {
    pub mark: &'static str,
    pub change: Change,
    pub uri: &'a str,
    pub before: Option<&'a VersionRow>,
    pub after: Option<&'a VersionRow>,
}

/// How many were created, deleted, updated.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Marks {
    pub created: u64,
    pub deleted: u64,
    pub updated: u64,
}

/// Every resource whose state differs between points `a` and `b`, handed to `sink`
/// (`Ok(false)` stops); how many of each mark were handed over.
pub(crate) fn between(
    reader: &Reader,
    a: Point,
    b: Point,
    mut sink: impl FnMut(Line<'_>) -> Result<bool, Error>,
) -> Result<Marks, Error> {
    let mut marks = Marks::default();
    let (low, high) = if a.bound() <= b.bound() {
        (a.bound(), b.bound())
    } else {
        (b.bound(), a.bound())
    };
    // One read transaction: every state below comes from the same snapshot.
    let _snapshot = Snapshot::begin(reader.catalog())?;
    history::each_resource_changed_between(reader.catalog(), low, high, |id, uri| {
        let before = present(state_at(reader, id, a)?);
        let after = present(state_at(reader, id, b)?);
        let (mark, change) = match (&before, &after) {
            (None, Some(_)) => ("+", Change::Created),
            (Some(_), None) => ("-", Change::Deleted),
            (Some(x), Some(y)) if x.sha256 != y.sha256 || x.length != y.length => {
                ("*", Change::Updated)
            }
            // Without bytes (`--metadata-only`) no digest tells states apart: each version is
            // a change the source declared.
            (Some(x), Some(y))
                if (x.metadata_only || y.metadata_only) && x.version != y.version =>
            {
                ("*", Change::Updated)
            }
            // The same bytes (a state re-recorded, metadata only), or absent at both ends.
            _ => return Ok(true),
        };
        match mark {
            "+" => marks.created += 1,
            "-" => marks.deleted += 1,
            _ => marks.updated += 1,
        }
        sink(Line {
            mark,
            change,
            uri,
            before: before.as_ref(),
            after: after.as_ref(),
        })
    })?;
    Ok(marks)
}

/// A state with bytes (a tombstone counts as absent).
fn present(v: Option<VersionRow>) -> Option<VersionRow> {
    v.filter(|v| !v.deleted())
}
