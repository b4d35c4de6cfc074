//! Connections kept between GETs, documents and resources alike: libcurl keeps a connection in
//! the multi handle its transfer ran on, so the multi handles themselves are what is kept.
//! A document's GET runs on one taken from here and puts it back; the resource transfers that
//! follow take it (with the connection the document came on) rather than a new one, and give
//! it back when they are done. Over HTTP/2 the resources then go out as streams of the
//! connection the Change List came on, with no new handshake (RFC 9113 §9.1: one connection
//! to a host is what a client should keep).
//!
//! Only multi handles that never carried a cleartext `http://` transfer are kept: the sockets
//! of those are watched from the thread that opened them (`net::sockets`), and a connection
//! must not leave that thread. Over TLS the socket's readability says nothing about the HTTP
//! stream and is not watched.

use curl::multi::Multi;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Multi handles kept at most: a few threads' worth; beyond that one is dropped (and its
/// connections closed) rather than kept.
const KEPT: usize = 8;

/// A multi handle with no transfer attached, in the pool or on its way between threads.
struct Idle(Multi);

// SAFETY: libcurl lets a handle move between threads as long as one thread at a time uses it
// (libcurl-thread(3)). An `Idle` has no easy handle attached and no callbacks set (none are
// set on these multi handles), and it is owned by the pool or by the one thread that took it.
unsafe impl Send for Idle {}

pub(crate) struct Pool {
    idle: Mutex<Vec<Idle>>,
    /// Hosts (`host:port`) that answered over HTTP/2 in this run, documents or resources: the
    /// transfers to them wait for a connection to share from their first request rather than
    /// open one each while the protocol is not known.
    h2: Mutex<HashSet<String>>,
    /// The quickest answer to a document GET so far (from its request out to its first byte
    /// in), in microseconds; `u64::MAX` before any: the round trip, at most.
    quickest: AtomicU64,
}

impl Default for Pool {
    fn default() -> Pool {
        Pool {
            idle: Mutex::default(),
            h2: Mutex::default(),
            quickest: AtomicU64::new(u64::MAX),
        }
    }
}

/// A source that answers a document within this is near (loopback, a LAN): its transfers are
/// bound by what is done with each body (hashed, written), not by round trips, and get a thread
/// per core, each on a connection of its own (`engine::apply`); a farther one, one connection.
/// One thread keeps 100 streams of 8 KiB resources fed up to about 16,000 a second, what 100
/// streams ask for at a round trip of 6 ms; a second connection costs two round trips.
pub(crate) const NEAR: Duration = Duration::from_millis(5);

impl Pool {
    /// A multi handle with the connections of earlier GETs when one is kept (true), else a new
    /// one (false).
    pub(crate) fn take(&self) -> (Multi, bool) {
        let kept = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        kept.map_or_else(|| (Multi::new(), false), |Idle(multi)| (multi, true))
    }

    /// Keep `multi` and its connections for the next GET. The caller has removed every easy
    /// handle from it and never ran a cleartext `http://` transfer on it.
    pub(crate) fn keep(&self, multi: Multi) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < KEPT {
            idle.push(Idle(multi));
        }
    }

    /// `host` (`host:port`) answered over HTTP/2.
    pub(crate) fn speaks_h2(&self, host: String) {
        self.h2
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(host);
    }

    /// A document GET was answered `after` its request went out.
    pub(crate) fn answered(&self, after: Duration) {
        let us = u64::try_from(after.as_micros()).unwrap_or(u64::MAX);
        self.quickest.fetch_min(us, Ordering::Relaxed);
    }

    /// Whether a document was answered within [`NEAR`].
    pub(crate) fn near(&self) -> bool {
        self.quickest.load(Ordering::Relaxed) < NEAR.as_micros() as u64
    }

    /// The hosts that answered over HTTP/2 so far.
    pub(crate) fn h2_hosts(&self) -> HashSet<String> {
        self.h2.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.idle.lock().map_or(0, |i| i.len());
        f.debug_struct("Pool").field("idle", &n).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_near_once_a_document_was_answered_within_five_ms() {
        let pool = Pool::default();
        assert!(!pool.near(), "nothing answered yet: not near");
        pool.answered(Duration::from_millis(50));
        assert!(!pool.near());
        pool.answered(NEAR);
        assert!(!pool.near(), "at the bound: not near");
        pool.answered(Duration::from_micros(300));
        assert!(pool.near());
        pool.answered(Duration::from_millis(80));
        assert!(pool.near(), "the quickest answer counts");
    }
}
