//! The network layer: one HTTP stack, libcurl, for documents and resources alike (one trust
//! store, one proxy convention), with timeouts, bounded retries and `Retry-After`, a scope
//! every URL and every redirect hop is checked against, conditional GETs, local `--map`
//! prefixes, and fetch-to-staging that hashes while it writes. It knows nothing of the
//! catalog.

pub mod agent;
pub(crate) mod bwlimit;
pub mod config;
pub(crate) mod document;
pub(crate) mod easy;
pub mod fetch;
pub(crate) mod in_step;
pub(crate) mod link;
pub(crate) mod one;
pub(crate) mod pool;
pub(crate) mod small_request;
pub(crate) mod sockets;
pub mod transfer;

pub use crate::model::Scope;
pub use crate::model::Validators;
pub use agent::{Body, DocumentResponse, Http};
pub use config::{Credentials, HttpConfig};
pub use fetch::{Expected, Staged};
pub use one::fetch_to_staging;

use std::time::Duration;

/// Requests in flight to a host that speaks HTTP/2, by default (`--streams`): curl's and
/// libcurl's default (`CURLMOPT_MAX_CONCURRENT_STREAMS`), below nginx's 128 and the 100 RFC 9113
/// recommends a server allow at least (§6.5.2).
pub const DEFAULT_STREAMS: usize = 100;

/// Why a document or resource could not be fetched (or was refused).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{url}: refused: {reason}")]
    OutOfScope { url: String, reason: String },
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: no response within {} s (--timeout)", .timeout.as_secs_f64())]
    Timeout { url: String, timeout: Duration },
    #[error("{url}: {message}")]
    Transport { url: String, message: String },
    #[error("{url}: more than {max} redirects")]
    TooManyRedirects { url: String, max: u32 },
    #[error("{url}: length mismatch: expected {expected} bytes, got {actual}")]
    LengthMismatch {
        url: String,
        expected: u64,
        actual: u64,
    },
    #[error("{url}: {algorithm} mismatch: expected {expected}, got {actual}")]
    DigestMismatch {
        url: String,
        algorithm: String,
        expected: String,
        actual: String,
    },
    #[error(
        "{url}: served an HTML page ({served}) where the list declares {declared}: an error or \
         login page, not the resource"
    )]
    NotAsListed {
        url: String,
        served: String,
        declared: String,
    },
    #[error("{url}: body larger than the {max}-byte limit")]
    TooLarge { url: String, max: u64 },
    #[error("{url}: not found in mapped folder {path}")]
    MapNotFound { url: String, path: String },
    #[error("staging: {0}")]
    Staging(#[from] std::io::Error),
}

impl FetchError {
    /// True for refusals (scope, scheme): the source is hostile or wrong, not failing.
    pub(crate) fn is_refusal(&self) -> bool {
        matches!(self, FetchError::OutOfScope { .. })
    }

    /// True when the body contradicts the declared length or a declared digest: what a
    /// resource that changed after its list was written gives (ResourceSync 1.1 §10.1).
    pub(crate) fn is_mismatch(&self) -> bool {
        matches!(
            self,
            FetchError::LengthMismatch { .. } | FetchError::DigestMismatch { .. }
        )
    }

    /// True when the mirror's file system is full (ENOSPC, EDQUOT): no other resource can be
    /// written either.
    pub(crate) fn is_no_space(&self) -> bool {
        matches!(self, FetchError::Staging(e) if is_no_space(e))
    }

    /// True when the server did not serve it: an error status of its own (5xx) or a "too many
    /// requests" (429), no answer in time, a broken connection. Not the resource's fault.
    pub(crate) fn is_unreachable(&self) -> bool {
        match self {
            FetchError::Status { status, .. } => *status >= 500 || *status == 429,
            FetchError::Timeout { .. } => true,
            // A transfer cut at --max-time was being served: the resource is big, not the
            // source down.
            FetchError::Transport { message, .. } => !message.contains("--max-time"),
            _ => false,
        }
    }

    /// True for a 404 or 410: the resource is not (or no longer) there.
    pub(crate) fn is_gone(&self) -> bool {
        matches!(
            self,
            FetchError::Status {
                status: 404 | 410,
                ..
            }
        )
    }
}

/// EROFS, EACCES or EPERM: the folder refuses writes (a read-only mount, permissions); no
/// other resource can be written there either.
pub(crate) fn is_unwritable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
    )
}

/// ENOSPC or EDQUOT: the file system (or the user's quota) is full.
pub(crate) fn is_no_space(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::StorageFull || e.kind() == std::io::ErrorKind::QuotaExceeded
}
