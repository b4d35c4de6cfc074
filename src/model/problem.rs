//! The class of a problem a run recorded about one URI (`run_problems.class`): what it could
//! not mirror and why, what it left for later, and what `repair` did. `rsmirror log --run ID`
//! lists them; `status` and the next baseline read them back.

use crate::model::catalog_text;

/// `run_problems.class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemClass {
    /// A fetch or a check of the bytes failed (a re-run tries again).
    Failed,
    /// Outside the source's scope: never fetched.
    Refused,
    /// Listed, but gone at the source (404 / 410), or absent from a newer SCP snapshot.
    Gone,
    /// The bytes contradicted the list: left for an incremental run to settle.
    Pending,
    /// No longer listed: tombstoned by a baseline with `--delete`.
    Deleted,
    /// Listed, and left alone on purpose (an ARC page not to be fetched).
    Skipped,
    /// Recorded, not failed: something a person may want to know.
    Warning,
    /// A baseline run to cross a gap in the source's changes (`incremental --on-gap
    /// rebaseline`): the gap it crosses.
    Gap,
    /// A source document (part of an index) could not be read.
    Document,
    /// `repair` restored the object.
    Repaired,
    /// `repair` moved a stray file to quarantine.
    Quarantined,
    /// `repair` could not get the bytes back.
    Unrepaired,
    /// The source could not be read at all (a run's summary says so; the catalog keeps the
    /// error in the run's outcome).
    Source,
    /// The object store (a bucket) refused the run before it began: its credentials, its
    /// answers, or a catalog behind another machine's.
    Objects,
}

catalog_text!(ProblemClass, "problem class", {
    Failed => "failed",
    Refused => "refused",
    Gone => "gone",
    Pending => "pending",
    Deleted => "deleted",
    Skipped => "skipped",
    Warning => "warning",
    Gap => "gap",
    Document => "document",
    Repaired => "repaired",
    Quarantined => "quarantined",
    Unrepaired => "unrepaired",
    Source => "source",
    Objects => "objects",
});
