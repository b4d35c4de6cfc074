//! What every request is made with: timeouts, retries, limits, the `User-Agent`, `--map`
//! folders and the credentials of a restricted source. Read from the command line and the
//! settings once; the agent, the document streams and the resource transfers all take it.

use std::path::PathBuf;
use std::time::Duration;
use url::Url;

#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Connect timeout and the longest wait for response headers or for any body read.
    pub timeout: Duration,
    /// Attempts per request (1 = no retry).
    pub tries: u32,
    /// Longest `Retry-After` honoured; a longer one ends the retries.
    pub max_retry_after: Duration,
    /// First backoff; doubles per retry.
    pub backoff: Duration,
    pub user_agent: String,
    /// `--map URL_PREFIX=DIR`: URLs under a prefix are read from the folder instead.
    pub maps: Vec<(String, PathBuf)>,
    pub max_redirects: u32,
    /// Headers for a restricted source (`--header`, `.netrc`), sent only to these hosts.
    pub credentials: Credentials,
    /// `--max-size`: the most bytes a resource may have when its length is not declared (a
    /// declared length bounds it exactly); 0 for no bound.
    pub max_size: u64,
    /// `--min-rate`: a transfer slower than this many bytes a second over a `timeout` window
    /// is cut off (and retried).
    pub min_rate: u64,
    /// `--max-time`: the longest one resource transfer may take, whatever its rate.
    pub max_time: Option<Duration>,
    /// `--min-free`: the free space a run leaves on the mirror's file system (it stops cleanly
    /// under it); `None` for the default, 1% of the file system and at most 1 GiB.
    pub min_free: Option<u64>,
    /// `--ca-file`: trust the certificate authorities in this PEM file instead of the default
    /// ones (a source behind a private CA).
    pub ca_file: Option<PathBuf>,
    /// `--max-duration`: the longest a run fetches resources, from the making of its [`Http`];
    /// then it stops cleanly (what landed is kept, exit 3).
    pub max_duration: Option<Duration>,
    /// `--bwlimit`: the most bytes a second received in all (a document the whole of it, each
    /// resource transfer in flight an even share); `None` for no limit.
    pub bwlimit: Option<u64>,
    /// `--streams`: requests in flight to a host that speaks HTTP/2, as streams of the
    /// connections open (`--jobs` counts HTTP/1.1 connections).
    pub streams: usize,
    /// `--http2-prior-knowledge`: http:// URLs are asked over HTTP/2 from the first byte
    /// (RFC 9113 §3.3), for a cleartext source that speaks only HTTP/2.
    pub http2_prior_knowledge: bool,
    /// `--metadata-only`: a transfer fetches no resource; each job is answered with what its
    /// list declares (`engine::apply::transfer`), recorded as a version without bytes.
    pub metadata_only: bool,
}

/// Request headers a restricted source needs (an access token, Basic authentication), and the
/// hosts they may go to: the source's own (a redirect elsewhere gets none). Never recorded:
/// the `Debug` form shows the names only.
#[derive(Clone, Default)]
pub struct Credentials {
    pub hosts: Vec<String>,
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Credentials")
            .field("hosts", &self.hosts)
            .field("headers", &names)
            .finish()
    }
}

impl Credentials {
    /// The headers for a request to `url`: none unless its host is one of ours.
    pub(crate) fn for_url(&self, url: &Url) -> &[(String, String)] {
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        if self.hosts.contains(&host) {
            &self.headers
        } else {
            &[]
        }
    }
}

impl Default for HttpConfig {
    fn default() -> HttpConfig {
        HttpConfig {
            timeout: Duration::from_secs(30),
            tries: 4,
            max_retry_after: crate::retry::DEFAULT_MAX_RETRY_AFTER,
            backoff: Duration::from_secs(1),
            user_agent: default_user_agent(),
            maps: Vec::new(),
            max_redirects: 10,
            credentials: Credentials::default(),
            max_size: DEFAULT_MAX_SIZE,
            min_rate: DEFAULT_MIN_RATE,
            max_time: None,
            min_free: None,
            ca_file: None,
            max_duration: None,
            bwlimit: None,
            streams: crate::net::DEFAULT_STREAMS,
            http2_prior_knowledge: false,
            metadata_only: false,
        }
    }
}

impl HttpConfig {
    /// The retry policy of every request made with these settings (`--tries`, the backoff,
    /// `--max-retry-after`).
    pub(crate) fn retry_policy(&self) -> crate::retry::Policy {
        crate::retry::Policy {
            tries: self.tries,
            backoff: self.backoff,
            max_retry_after: self.max_retry_after,
        }
    }
}

/// `--max-size`'s default, 64 GiB: above the largest single files real repositories accept
/// (Zenodo takes 50 GB per record, Dryad 300 GB per dataset in files of at most 10 GB,
/// institutional repositories far less), far below what fills an archive's disk unseen.
pub const DEFAULT_MAX_SIZE: u64 = 64 << 30;
/// `--min-rate`'s default: 1 KiB/s over the `--timeout` window. A server that sends less is
/// stalled; even a slow link moves a hundred times more.
pub const DEFAULT_MIN_RATE: u64 = 1024;

/// `rsmirror/VERSION (ResourceSync Destination)`: what we send when nothing else was configured.
pub(crate) fn default_user_agent() -> String {
    format!(
        "rsmirror/{} (ResourceSync Destination)",
        env!("CARGO_PKG_VERSION")
    )
}
