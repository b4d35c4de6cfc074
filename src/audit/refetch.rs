//! `audit --refetch`: prove the copies a digest cannot prove. Each resource is fetched again
//! and its bytes hashed (SHA-256) as they stream, then dropped: an audit writes no content
//! (the bytes pass through an anonymous file in `staging/`, gone when it is closed). A
//! conditional GET with the ETag / Last-Modified stored with the mirror's version comes first
//! unless the caller asks for bytes: a 304 is the server's claim that nothing changed, which
//! the report keeps apart from a byte-for-byte comparison.
//!
//! The requests go out on a few threads through the run's agent, so `--delay` (and the
//! source's pacing) holds, and share its retries and timeouts.

use crate::net::one::{fetch_new_object, fetch_new_object_if_changed};
use crate::net::{Expected, FetchError, Http, Scope, Validators};
use std::path::Path;
use std::sync::Arc;
use url::Url;

/// Requests in flight at once: baseline's default.
const IN_FLIGHT: usize = 8;

/// One resource to fetch again.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Its slot in the audit's index of current states.
    pub slot: usize,
    pub uri: Url,
    pub scope: Arc<Scope>,
    /// The collection it was listed in (the audit's per-collection counts).
    pub collection: Arc<str>,
}

/// A candidate with what the mirror holds of it.
#[derive(Debug)]
pub struct Job {
    pub candidate: Candidate,
    /// The SHA-256 of the mirror's current version.
    pub mirror_sha256: String,
    /// Stored with that version; empty for a full GET.
    pub validators: Validators,
}

/// What fetching it again showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The bytes hash to the mirror's SHA-256.
    Same,
    /// They do not: the source's SHA-256.
    Differs(String),
    /// The server answered 304: unchanged by its word.
    NotModified,
    /// No answer to compare (the reason).
    Failed(String),
}

/// Fetch every job again, `IN_FLIGHT` at a time; the outcomes in the jobs' order.
pub(crate) fn run(http: &Http, staging: &Path, jobs: Vec<Job>) -> Vec<(Job, Outcome)> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = IN_FLIGHT.min(jobs.len());
    let outcomes: Vec<std::sync::Mutex<Option<Outcome>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = jobs.get(k) else { break };
                let outcome = refetch(http, staging, job);
                *outcomes[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
            });
        }
    });
    jobs.into_iter()
        .zip(outcomes)
        .map(|(job, o)| {
            let o = o.into_inner().unwrap_or_else(|e| e.into_inner());
            (job, o.expect("every job was taken"))
        })
        .collect()
}

fn refetch(http: &Http, staging: &Path, job: &Job) -> Outcome {
    let c = &job.candidate;
    if let Err(reason) = c.scope.check(&c.uri) {
        return Outcome::Failed(format!("refused: {reason}"));
    }
    // Nothing declared: the comparison is ours, after the body is read.
    let expected = Expected::default();
    let fetched = if job.validators.is_empty() {
        fetch_new_object(http, &c.uri, &c.scope, staging, &expected)
    } else {
        fetch_new_object_if_changed(http, &c.uri, &c.scope, staging, &expected, &job.validators)
    };
    match fetched {
        // Dropped here: the anonymous file goes with it.
        Ok(staged) if staged.computed.sha256_hex == job.mirror_sha256 => Outcome::Same,
        Ok(staged) => Outcome::Differs(staged.computed.sha256_hex),
        Err(FetchError::Status { status: 304, .. }) if !job.validators.is_empty() => {
            Outcome::NotModified
        }
        Err(e) => Outcome::Failed(e.to_string()),
    }
}
