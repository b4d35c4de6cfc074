//! `--bwlimit RATE`: the bytes a run receives, in all, held under RATE a second by one token
//! bucket that every transfer's write callback draws from (resources on every fetching thread,
//! documents too). A callback that finds the bucket in debt sleeps until it is not: the
//! transfers of its thread wait with it, and the server's sends back up into TCP's window, so
//! the link carries no more than RATE on average (a burst of a tenth of a second at most).
//!
//! Not libcurl's `CURLOPT_MAX_RECV_SPEED_LARGE`: the libcurl of Debian 12 (7.88) lets a
//! transfer of 2 MiB limited to 256 KiB a second through in one second (the curl tool's
//! `--limit-rate` does the same), and it would be one transfer's limit, not the run's.
//!
//! One bucket a process: a process runs one command.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

struct Bucket {
    /// Bytes a second.
    rate: f64,
    /// Tokens (bytes) available, negative in debt, as of the instant.
    state: Mutex<(Instant, f64)>,
}

static BUCKET: OnceLock<Bucket> = OnceLock::new();

/// Hold every later transfer of this process under `rate` bytes a second (the first call
/// counts).
pub(crate) fn set(rate: u64) {
    let _ = BUCKET.get_or_init(|| Bucket {
        rate: rate.max(1) as f64,
        state: Mutex::new((Instant::now(), 0.0)),
    });
}

/// `n` bytes arrived: draw them from the bucket, sleeping while it is in debt. Nothing when no
/// limit is set.
pub(crate) fn take(n: usize) {
    let Some(b) = BUCKET.get() else {
        return;
    };
    let wait = {
        let mut s = b
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let refill = now.duration_since(s.0).as_secs_f64() * b.rate;
        // At most a tenth of a second's worth saved up: no long burst after an idle spell.
        s.1 = (s.1 + refill).min(b.rate / 10.0) - n as f64;
        s.0 = now;
        (s.1 < 0.0).then(|| Duration::from_secs_f64(-s.1 / b.rate))
    };
    if let Some(wait) = wait {
        std::thread::sleep(wait);
    }
}
