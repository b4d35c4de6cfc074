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
}

impl Error {
    pub(crate) fn exit(&self) -> Exit {
        match self {
            Error::Usage(_) => Exit::Usage,
            Error::Source(_) => Exit::Source,
            Error::Store(_) => Exit::Store,
            Error::Lock(LockError::Held { .. }) => Exit::Locked,
            Error::Lock(LockError::Io { .. }) => Exit::Store,
            Error::SafetyLimit(_) => Exit::SafetyLimit,
            Error::Damaged(_) => Exit::Differences,
        }
    }
}
