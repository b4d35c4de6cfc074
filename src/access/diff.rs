//! `rsmirror diff WHEN1 [WHEN2]`: what changed between two points of the mirror's history,
//! one line per resource with the audit report's marks: `+` created, `-` deleted, `*` updated.
//! Only the resources a run between the two points touched are looked at, so the cost follows
//! the change, not the mirror.

use crate::access::{state_at, Out, Reader, VersionRow, When};
use crate::error::Error;
use crate::model::Change;
use crate::store::history::{self, Snapshot};
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
    change: Change,
    uri: &'a str,
    before: Option<&'a VersionRow>,
    after: Option<&'a VersionRow>,
}

pub(crate) fn run(mirror: &Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    let a = reader.point(Some(&o.from))?;
    let b = reader.point(o.to.as_ref())?;
    if let Some(note) = reader.in_progress_note(o.to.as_ref()) {
        note!("rsmirror: {note}");
    }
    detail!(
        "rsmirror: from the mirror {} to the mirror {}",
        reader.describe_point(a),
        reader.describe_point(b)
    );
    let mut marks = [0u64; 3];
    let (low, high) = if a.bound() <= b.bound() {
        (a.bound(), b.bound())
    } else {
        (b.bound(), a.bound())
    };
    // One read transaction: every state below comes from the same snapshot.
    let _snapshot = Snapshot::begin(reader.catalog())?;
    let mut out = Out::stdout();
    history::each_resource_changed_between(reader.catalog(), low, high, |id, uri| {
        let before = present(state_at(&reader, id, a)?);
        let after = present(state_at(&reader, id, b)?);
        let (mark, change) = match (&before, &after) {
            (None, Some(_)) => ("+", Change::Created),
            (Some(_), None) => ("-", Change::Deleted),
            (Some(x), Some(y)) if x.sha256 != y.sha256 || x.length != y.length => {
                ("*", Change::Updated)
            }
            // The same bytes (a state re-recorded, metadata only), or absent at both ends.
            _ => return Ok(true),
        };
        marks[match mark {
            "+" => 0,
            "-" => 1,
            _ => 2,
        }] += 1;
        let more = if o.json {
            out.json_line(&Line {
                mark,
                change,
                uri,
                before: before.as_ref(),
                after: after.as_ref(),
            })?
        } else {
            out.line(&format!("{mark} {uri}"))?
        };
        Ok::<_, Error>(more)
    })?;
    out.flush()?;
    let [created, deleted, updated] = marks;
    detail!("rsmirror: {created} created (+), {deleted} deleted (-), {updated} updated (*)");
    Ok(())
}

/// A state with bytes (a tombstone counts as absent).
fn present(v: Option<VersionRow>) -> Option<VersionRow> {
    v.filter(|v| !v.deleted())
}
