//! Responses read on a reused kept-alive HTTP/1.1 connection, held back until the connection
//! is known to be in step.
//!
//! A server that sends a response nobody asked for (a correct one, then an unsolicited one a
//! few milliseconds later) desynchronises the connection: if the next request went out
//! before the stray arrived, the stray is read as that request's response and the real one
//! waits unread behind it, and so on for every response after (`net::sockets`). The check
//! libcurl and rsmirror make before a request goes out cannot see bytes that have not
//! arrived yet. What can be seen is the surplus afterwards: bytes on the connection when no
//! request is outstanding on it. So a response read on a reused connection, whose bytes no
//! declared digest proves, is not handed over until the connection has been seen idle with
//! nothing waiting, at least a *settle* time after its last response was read (twice the
//! time that response took to start, between 2 ms and 1 s: the time a server takes to send
//! the response that would be left behind). Every response read on a connection since it
//! was last seen in step is then released together; if bytes were waiting instead, or the
//! connection was closed before it could be seen, they are all suspect and are fetched again
//! on new connections. A response on a new connection is the first one read on it and needs
//! no holding; one a declared digest proves needs none either.

use crate::net::sockets::{self, Connection, Waiting};
use std::time::{Duration, Instant};

/// Bounds of the settle time.
const SETTLE_MIN: Duration = Duration::from_millis(2);
const SETTLE_MAX: Duration = Duration::from_secs(1);

/// Responses held at most per request in flight: past it, no new request starts until the
/// connections have been seen idle (each held response keeps its staging file open).
pub(crate) const HELD_PER_SLOT: usize = 64;

/// Raise the soft limit of open files to the hard one (at most 65,536): the responses held
/// here keep their staging files open, `HELD_PER_SLOT` for each request `--jobs` allows in
/// flight, and a soft limit of 1,024 (the usual default) would be reached at `--jobs 16`.
/// Call once, at start.
#[cfg(unix)]
pub fn raise_open_files_limit() {
    // SAFETY: getrlimit and setrlimit on a local, fully initialised struct.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        let want = limit.rlim_max.min(65_536);
        if limit.rlim_cur < want {
            limit.rlim_cur = want;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

#[cfg(not(unix))]
pub fn raise_open_files_limit() {}

/// How long after a response was read its connection must stay quiet.
pub(crate) fn settle(time_to_first_byte: Duration) -> Duration {
    (time_to_first_byte * 2).clamp(SETTLE_MIN, SETTLE_MAX)
}

struct Held<X> {
    /// The connection it was read on (`net::sockets` serial).
    serial: u64,
    /// Its connection must be quiet until then.
    until: Instant,
    item: X,
}

/// What became of a held response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Its connection was seen in step after it: hand it over.
    InStep,
    /// Its connection was out of step, or closed before it could be seen: fetch it again.
    Suspect,
    /// As `Suspect`, and the connection had bytes nobody asked for: its host's connections
    /// are not to be reused again.
    OutOfStep,
}

/// The responses held back by one set of transfers.
pub(crate) struct InStep<X> {
    held: Vec<Held<X>>,
}

impl<X> InStep<X> {
    pub(crate) fn new() -> InStep<X> {
        InStep { held: Vec::new() }
    }

    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Hold `item`, read on connection `serial` just now.
    pub(crate) fn hold(&mut self, serial: u64, settle: Duration, item: X) {
        let until = Instant::now() + settle;
        self.held.push(Held {
            serial,
            until,
            item,
        });
    }

    /// When a held response's settle time is next over (one over already waits for its
    /// connection's response, which wakes the transfers anyway).
    pub(crate) fn next_due(&self, now: Instant) -> Option<Instant> {
        self.held.iter().map(|h| h.until).filter(|u| *u > now).min()
    }

    /// Sort the held responses out as their connections now stand; those still held stay.
    /// A connection is looked at (a system call) only once its settle time is over.
    pub(crate) fn sort_out(&mut self, now: Instant) -> Vec<(X, Verdict)> {
        let surplus = sockets::take_surplus();
        // Each connection holding responses, and when the last of them has settled.
        let mut connections: Vec<(u64, Instant)> = Vec::new();
        for h in &self.held {
            match connections.iter_mut().find(|(s, _)| *s == h.serial) {
                Some((_, until)) => *until = (*until).max(h.until),
                None => connections.push((h.serial, h.until)),
            }
        }
        let mut verdicts: Vec<(u64, Verdict)> = Vec::new();
        for (serial, until) in connections {
            let verdict = if surplus.contains(&serial) {
                Some(Verdict::OutOfStep)
            } else {
                match sockets::look(serial, now >= until) {
                    Connection::Gone => Some(Verdict::Suspect),
                    Connection::Busy | Connection::Idle(None) => None,
                    Connection::Idle(Some(Waiting::Bytes)) => Some(Verdict::OutOfStep),
                    // Closed by the server with nothing left unread: nothing more can come.
                    Connection::Idle(Some(Waiting::End)) => Some(Verdict::InStep),
                    Connection::Idle(Some(Waiting::Nothing)) => Some(Verdict::InStep),
                }
            };
            if let Some(v) = verdict {
                verdicts.push((serial, v));
            }
        }
        if verdicts.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut kept = Vec::with_capacity(self.held.len());
        for h in self.held.drain(..) {
            match verdicts.iter().find(|(s, _)| *s == h.serial) {
                Some((_, v)) => out.push((h.item, *v)),
                None => kept.push(h),
            }
        }
        self.held = kept;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settle_time_follows_the_servers_pace_within_bounds() {
        assert_eq!(settle(Duration::ZERO), SETTLE_MIN);
        assert_eq!(settle(Duration::from_millis(30)), Duration::from_millis(60));
        assert_eq!(settle(Duration::from_secs(5)), SETTLE_MAX);
    }

    #[test]
    fn a_response_on_a_closed_connection_is_suspect_and_nothing_else_is_touched() {
        let mut held = InStep::new();
        // Serials never handed out by the registry: closed connections.
        held.hold(u64::MAX, Duration::ZERO, "a");
        held.hold(u64::MAX, Duration::ZERO, "b");
        let out = held.sort_out(Instant::now());
        assert_eq!(out, vec![("a", Verdict::Suspect), ("b", Verdict::Suspect)]);
        assert!(held.is_empty());
    }
}
