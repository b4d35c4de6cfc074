//! The change a state records (`versions.change`, `change_events.change`) and what an
//! incremental run did with a change event (`change_events.outcome`).
//!
//! ResourceSync 1.1 §12.1: `rs:md change` is created, updated or deleted; the catalog keeps
//! those three words. A tombstone is a version whose change is `deleted` (it has no object).

use crate::model::catalog_text;

/// `versions.change` and `change_events.change`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Change {
    Created,
    Updated,
    /// A tombstone: the state has no bytes.
    Deleted,
}

catalog_text!(Change, "change", {
    Created => "created",
    Updated => "updated",
    Deleted => "deleted",
});

impl Change {
    /// `rs:md/@change` as a document writes it (ResourceSync 1.1 §12.1), read leniently: the
    /// case and surrounding blanks of the three words do not matter.
    pub(crate) fn parse(s: &str) -> Option<Change> {
        match s.trim().to_ascii_lowercase().as_str() {
            "created" => Some(Change::Created),
            "updated" => Some(Change::Updated),
            "deleted" => Some(Change::Deleted),
            _ => None,
        }
    }

    /// A tombstone (no bytes).
    pub(crate) fn is_deletion(self) -> bool {
        self == Change::Deleted
    }
}

/// `change_events.outcome`: what a run did with one change it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeOutcome {
    /// A version was recorded for it (or the tombstone).
    Applied,
    /// The mirror held that state already.
    Unchanged,
    /// A later change to the same resource in the same run made it moot.
    Superseded,
    /// A deletion of a resource the mirror never had.
    UnknownDelete,
    Failed,
    /// Outside the source's scope: never fetched.
    Refused,
    /// Other bytes than the change declares: the resource changed again after the document
    /// was read, and a later change brings it.
    Pending,
}

catalog_text!(ChangeOutcome, "change outcome", {
    Applied => "applied",
    Unchanged => "unchanged",
    Superseded => "superseded",
    UnknownDelete => "unknown-delete",
    Failed => "failed",
    Refused => "refused",
    Pending => "pending",
});
