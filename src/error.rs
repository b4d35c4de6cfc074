//! The errors that end a command, and the one place they become exit codes.

use crate::exit::Exit;
use crate::net::FetchError;
use crate::rs::sitemap::ReadError;
use crate::store::lock::LockError;
use crate::store::StoreError;
use url::Url;

/// A usage error: exit 2 (what the user typed cannot be run; the settings say what).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A source document could not be had or understood: nothing is applied (exit 4).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}")]
    Fetch(#[from] FetchError),
    #[error("{0}")]
    Read(#[from] ReadError),
    #[error("{url}: {message}")]
    Unusable { url: String, message: String },
    /// A JSON document where XML was expected: an ARC sitemap, read by its format. The body
    /// comes along, unread, when it was fetched (discovery hands it to the format).
    #[error("{url}: a JSON document, not a Sitemap")]
    Json {
        url: Url,
        received: Option<Box<crate::net::Body>>,
    },
    #[error("{path}: {source}")]
    Local {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// ResourceSync 1.1 §10.2: the Change Lists (or Change Dumps) do not reach back to the
    /// sync point, or do not abut: what changed in between is unknown.
    #[error(
        "{collection}: gap in the change history: the changes from {from} to {to} are not available \
         from the source (no {covering} covers them); nothing was applied — run rsmirror baseline \
         again, or incremental --on-gap rebaseline"
    )]
    Gap {
        collection: String,
        from: jiff::Timestamp,
        to: jiff::Timestamp,
        covering: &'static str,
    },
}

/// Why a command ended early.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(#[from] UsageError),
    #[error("source error: {0}")]
    Source(#[from] SourceError),
    #[error("store error: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Lock(#[from] LockError),
    #[error("safety limit: {0}")]
    SafetyLimit(String),
    /// The mirror's own bytes do not match its catalog (`cat` of a damaged object): exit 1,
    /// as an audit that finds corruption.
    #[error("{0}")]
    Damaged(String),
    /// A run stopped fetching before it was done (the source kept failing, `--max-duration`):
    /// what landed is kept, exit 3.
    #[error("stopped: {0}")]
    Stopped(String),
    /// `incremental` cannot follow a collection by its changes: its list must be read (a
    /// baseline), which `incremental` itself does when it may (`commands::incremental`).
    #[error("{collection}: {why}")]
    NeedsBaseline {
        collection: String,
        why: NeedsBaseline,
    },
}

/// Why a collection needs its list read rather than its changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeedsBaseline {
    /// No baseline of it finished (the first one stopped part way, or never ran): exit 2
    /// unless `--on-gap rebaseline` crosses it.
    NoSyncPoint,
    /// The source publishes no changes for it (a Resource List alone, a 2012 Sitemap without
    /// change sets): it is followed by reading its list again, as a plain Sitemap is.
    NoChanges,
}

impl std::fmt::Display for NeedsBaseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NeedsBaseline::NoSyncPoint => {
                "no sync point: no baseline of it has finished; run rsmirror baseline, give \
                 --from DATETIME, or run incremental --on-gap rebaseline"
            }
            NeedsBaseline::NoChanges => {
                "no Change List found: the source advertises none (no changelist in its \
                 Capability List, no rs:ln rel=\"up\" to one, no 2012 change set link)"
            }
        })
    }
}

impl Error {
    /// An error that says the catalog may be damaged (SQLite's "malformed", "not a database",
    /// or the check before a write).
    pub(crate) fn is_damage(&self) -> bool {
        matches!(self, Error::Store(e) if e.is_damage())
    }

    pub(crate) fn exit(&self) -> Exit {
        match self {
            Error::Usage(_) => Exit::Usage,
            Error::Source(_) => Exit::Source,
            Error::Store(_) => Exit::Store,
            Error::Lock(LockError::Held { .. } | LockError::Leased { .. }) => Exit::Locked,
            Error::Lock(LockError::Io { .. }) => Exit::Store,
            Error::SafetyLimit(_) => Exit::SafetyLimit,
            Error::Damaged(_) => Exit::Differences,
            Error::Stopped(_) => Exit::Partial,
            Error::NeedsBaseline {
                why: NeedsBaseline::NoSyncPoint,
                ..
            } => Exit::Usage,
            Error::NeedsBaseline {
                why: NeedsBaseline::NoChanges,
                ..
            } => Exit::Source,
        }
    }
}
