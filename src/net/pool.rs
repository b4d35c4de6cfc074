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
use std::sync::Mutex;

/// Multi handles kept at most: a few threads' worth; beyond that one is dropped (and its
/// connections closed) rather than kept.
const KEPT: usize = 8;

/// A multi handle with no transfer attached, in the pool or on its way between threads.
struct Idle(Multi);

// SAFETY: libcurl lets a handle move between threads as long as one thread at a time uses it
// (libcurl-thread(3)). An `Idle` has no easy handle attached and no callbacks set (none are
// set on these multi handles), and it is owned by the pool or by the one thread that took it.
unsafe impl Send for Idle {}

#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<Vec<Idle>>,
    /// Hosts (`host:port`) that answered over HTTP/2 in this run, documents or resources: the
    /// transfers to them wait for a connection to share from their first request rather than
    /// open one each while the protocol is not known.
    h2: Mutex<HashSet<String>>,
}

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
