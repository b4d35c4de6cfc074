//! Many resource GETs in flight on one thread: keep-alive connections on `poll(2)`, each body
//! hashed and written to its new file as its bytes arrive.
//!
//! The blocking path ([`fetch_new_object`](crate::net::fetch::fetch_new_object) over ureq)
//! needs a thread per request in flight, and every request then costs that thread a sleep in
//! `recv` and a wake-up: on a small machine fetching small resources, the context switches
//! cost more than the hashing. Here one thread keeps several requests in flight and only
//! sleeps when none of them has anything to read.
//!
//! This path takes only what it can do exactly as the blocking path would, for plain `http`
//! URLs that go straight to the host ([`Http::sends_directly`]); the caller checks the scope
//! first. It sends the same request, reads `Content-Length`, chunked and close-delimited
//! bodies, checks the declared length before and while reading and every usable declared
//! digest at the end. Where the blocking path would retry or follow a redirect, the first
//! attempt's outcome is handed back ([`Resume`]) and the blocking path carries on from it,
//! so the retry budget, the pauses, `Retry-After` and the scope check of every hop stay the
//! blocking path's.

use crate::net::agent::{is_redirect, is_retryable_status, parse_retry_after};
use crate::net::fetch::{
    check_announced, check_received, hasher_for, staging_error, truncated, verify, worker_folder,
    Resume,
};
use crate::net::{Expected, FetchError, Http, Staged};
use crate::rs::digest::Hasher;
use crate::store::new_file::NewFile;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};
use url::{Position, Url};

/// How one GET ended.
#[derive(Debug)]
pub enum Outcome {
    /// Verified and in a new file.
    Fetched(Box<Staged<NewFile>>),
    /// Failed for good, as the blocking path would have failed.
    Failed(FetchError),
    /// Not over: the blocking path carries on from here.
    Resume(Resume),
}

/// Read buffer per thread; bodies stream through it.
const READ_BUFFER: usize = 64 * 1024;
/// The most response-header bytes accepted (ureq's limit is the same order).
const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;
/// How long resolved addresses are reused (as the blocking path's resolver does).
const RESOLVE_TTL: Duration = Duration::from_secs(60);

/// Up to `capacity` GETs in flight, each on a keep-alive connection of its own slot.
pub struct Multi<'h, T> {
    http: &'h Http,
    staging: &'h Path,
    slots: Vec<Slot<T>>,
    /// GETs that ended before they were sent (the connection could not be made).
    ended: Vec<(T, Outcome)>,
    buf: Vec<u8>,
    resolved: HashMap<String, (Instant, Vec<SocketAddr>)>,
    /// When [`Multi::wait`] last returned: time spent by the caller between two waits is not
    /// held against the server.
    left_at: Option<Instant>,
    /// The `poll` set and the slot of each entry, kept between waits.
    fds: Vec<libc::pollfd>,
    which: Vec<usize>,
}

struct Slot<T> {
    conn: Option<Conn>,
    get: Option<Get<T>>,
}

struct Conn {
    stream: TcpStream,
    /// `host:port` as written in the URL.
    authority: String,
    /// A response has been read on it already (it may have been closed since).
    used: bool,
}

/// One GET in flight.
struct Get<T> {
    token: T,
    url: Url,
    expected: Expected,
    /// The request, kept to send it again on a fresh connection when a kept-alive one turns
    /// out to have been closed by the server.
    request: Vec<u8>,
    deadline: Instant,
    state: State,
}

enum State {
    /// Waiting for (the rest of) the response head.
    Head(Vec<u8>),
    Body(Box<Receiving>),
}

/// A body being received.
struct Receiving {
    head: BodyHead,
    part: NewFile,
    hasher: Hasher,
    received: u64,
}

#[derive(Debug)]
enum Framing {
    Length(u64),
    Chunked(Chunked),
    /// Until the server closes the connection.
    Close,
}

/// What reading a slot's connection came to.
enum Step {
    /// Nothing more to read for now.
    Pending,
    Done(Outcome),
}

impl<'h, T> Multi<'h, T> {
    pub fn new(http: &'h Http, staging: &'h Path, capacity: usize) -> Multi<'h, T> {
        Multi {
            http,
            staging,
            slots: (0..capacity.max(1))
                .map(|_| Slot {
                    conn: None,
                    get: None,
                })
                .collect(),
            ended: Vec::new(),
            buf: vec![0; READ_BUFFER],
            resolved: HashMap::new(),
            left_at: None,
            fds: Vec::new(),
            which: Vec::new(),
        }
    }

    /// Whether another GET can start.
    pub fn has_room(&self) -> bool {
        self.in_flight() + self.ended.len() < self.slots.len()
    }

    /// Whether nothing is in flight and nothing is waiting to be collected.
    pub fn is_idle(&self) -> bool {
        self.in_flight() == 0 && self.ended.is_empty()
    }

    fn in_flight(&self) -> usize {
        self.slots.iter().filter(|s| s.get.is_some()).count()
    }

    /// Start a GET of `url`. `Err` gives the token back when this path cannot take the URL
    /// (see [`Http::sends_directly`]); the caller fetches it the blocking way. The caller has
    /// checked `url` against the scope.
    pub fn start(&mut self, url: Url, expected: Expected, token: T) -> Result<(), T> {
        if !self.http.sends_directly(&url) || !self.has_room() {
            return Err(token);
        }
        let authority = url[Position::BeforeHost..Position::BeforePath].to_string();
        let request = self.request(&url, &authority);
        let i = match self.slots.iter().position(|s| {
            s.get.is_none() && s.conn.as_ref().is_some_and(|c| c.authority == authority)
        }) {
            Some(i) => i,
            None => {
                let i = (self.slots.iter().position(|s| s.get.is_none()))
                    .expect("has_room found a free slot");
                self.slots[i].conn = None;
                i
            }
        };
        let get = Get {
            token,
            url,
            expected,
            request,
            deadline: Instant::now() + self.http.config().timeout,
            state: State::Head(Vec::new()),
        };
        match self.send(i, &authority, &get) {
            Ok(()) => self.slots[i].get = Some(get),
            Err(error) => self.ended.push((get.token, retry(error))),
        }
        Ok(())
    }

    /// Wait until at least one GET has ended (or nothing is in flight), and return those that
    /// have.
    pub fn wait(&mut self) -> Vec<(T, Outcome)> {
        // The caller's time between two waits (a blocking fetch, a full results channel) does
        // not count against the server.
        if let Some(left) = self.left_at.take() {
            let away = left.elapsed();
            for get in self.slots.iter_mut().filter_map(|s| s.get.as_mut()) {
                get.deadline += away;
            }
        }
        let mut done = std::mem::take(&mut self.ended);
        let (mut fds, mut which) = (
            std::mem::take(&mut self.fds),
            std::mem::take(&mut self.which),
        );
        while done.is_empty() && self.in_flight() > 0 {
            fds.clear();
            which.clear();
            let mut first_deadline: Option<Instant> = None;
            // Every GET in flight has its connection; one that lost it ends here rather than
            // leaving nothing to wait for.
            let lost: Vec<usize> = (0..self.slots.len())
                .filter(|&i| self.slots[i].get.is_some() && self.slots[i].conn.is_none())
                .collect();
            for i in lost {
                done.push(self.fail_slot(i, |url| transport(url, "connection lost".into())));
            }
            if !done.is_empty() {
                break;
            }
            for (i, slot) in self.slots.iter().enumerate() {
                if let (Some(get), Some(conn)) = (&slot.get, &slot.conn) {
                    fds.push(libc::pollfd {
                        fd: conn.stream.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    which.push(i);
                    first_deadline =
                        Some(first_deadline.map_or(get.deadline, |d| d.min(get.deadline)));
                }
            }
            let now = Instant::now();
            let wait = first_deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(now));
            // Rounded up, so a deadline is past when poll returns with nothing.
            let ms = wait.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Cannot happen with valid descriptors; fail what is in flight rather than spin.
                for &i in &which {
                    done.push(self.fail_slot(i, |url| transport(url, format!("poll: {e}"))));
                }
                break;
            }
            let now = Instant::now();
            for (fd, &i) in fds.iter().zip(&which) {
                if fd.revents != 0 {
                    if let Step::Done(outcome) = self.read_slot(i) {
                        done.push(self.end(i, outcome));
                        continue;
                    }
                }
                if self.slots[i].get.as_ref().expect("in flight").deadline <= now {
                    let timeout = self.http.config().timeout;
                    done.push(self.fail_slot(i, |url| FetchError::Timeout {
                        url: url.to_string(),
                        timeout,
                    }));
                }
            }
        }
        (self.fds, self.which) = (fds, which);
        self.left_at = Some(Instant::now());
        done
    }

    /// The request for `url`: what the blocking path's agent sends.
    fn request(&self, url: &Url, authority: &str) -> Vec<u8> {
        let target = &url[Position::BeforePath..Position::AfterQuery];
        let target = if target.is_empty() { "/" } else { target };
        format!(
            "GET {target} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: {}\r\nAccept: */*\r\n\
             Accept-Encoding: identity\r\n\r\n",
            self.http.user_agent()
        )
        .into_bytes()
    }

    /// Send `get`'s request on slot `i`'s connection, connecting first when it has none.
    fn send(&mut self, i: usize, authority: &str, get: &Get<T>) -> Result<(), FetchError> {
        if self.slots[i].conn.is_none() {
            let stream = self.connect(&get.url)?;
            self.slots[i].conn = Some(Conn {
                stream,
                authority: authority.to_string(),
                used: false,
            });
        }
        let conn = self.slots[i].conn.as_mut().expect("connected");
        // A request is far smaller than a socket's send buffer: it goes out whole or the
        // connection is gone.
        match conn.stream.write(&get.request) {
            Ok(n) if n == get.request.len() => Ok(()),
            Ok(_) => {
                self.slots[i].conn = None;
                Err(transport(&get.url, "request only partly sent".to_string()))
            }
            Err(e) => {
                self.slots[i].conn = None;
                Err(transport(&get.url, e.to_string()))
            }
        }
    }

    fn connect(&mut self, url: &Url) -> Result<TcpStream, FetchError> {
        let key = url[Position::BeforeHost..Position::BeforePath].to_string();
        let addrs = match self.resolved.get(&key) {
            Some((at, addrs)) if at.elapsed() < RESOLVE_TTL => addrs.clone(),
            _ => {
                let addrs = url
                    .socket_addrs(|| None)
                    .map_err(|e| transport(url, format!("host not found ({e})")))?;
                self.resolved.insert(key, (Instant::now(), addrs.clone()));
                addrs
            }
        };
        let timeout = self.http.config().timeout;
        let mut last = None;
        for addr in &addrs {
            match TcpStream::connect_timeout(addr, timeout) {
                Ok(stream) => {
                    let set = stream
                        .set_nonblocking(true)
                        .and_then(|()| stream.set_nodelay(true));
                    return match set {
                        Ok(()) => Ok(stream),
                        Err(e) => Err(transport(url, e.to_string())),
                    };
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    last = Some(FetchError::Timeout {
                        url: url.to_string(),
                        timeout,
                    })
                }
                Err(e) => last = Some(transport(url, format!("connection failed: {e}"))),
            }
        }
        Err(last.unwrap_or_else(|| transport(url, "host not found".to_string())))
    }

    /// Take slot `i`'s GET out with its outcome; a connection that cannot carry another
    /// request has been dropped already.
    fn end(&mut self, i: usize, outcome: Outcome) -> (T, Outcome) {
        let get = self.slots[i].get.take().expect("in flight");
        if let Some(conn) = self.slots[i].conn.as_mut() {
            conn.used = true;
        }
        (get.token, outcome)
    }

    /// End slot `i`'s GET with `error` for the blocking path to retry; its connection goes.
    fn fail_slot(&mut self, i: usize, error: impl FnOnce(&Url) -> FetchError) -> (T, Outcome) {
        self.slots[i].conn = None;
        let error = error(&self.slots[i].get.as_ref().expect("in flight").url);
        self.end(i, retry(error))
    }

    /// Read what slot `i`'s connection has.
    fn read_slot(&mut self, i: usize) -> Step {
        let timeout = self.http.config().timeout;
        loop {
            let slot = &mut self.slots[i];
            let (Some(conn), Some(get)) = (slot.conn.as_mut(), slot.get.as_mut()) else {
                return Step::Pending;
            };
            let n = match conn.stream.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let untouched = matches!(&get.state, State::Head(h) if h.is_empty());
                    let reused = conn.used;
                    return self.broken(i, untouched && reused, e.to_string());
                }
            };
            if n == 0 {
                return self.closed(i);
            }
            get.deadline = Instant::now() + timeout;
            let first_on_reused = conn.used && matches!(&get.state, State::Head(h) if h.is_empty());
            match feed(get, self.staging, &self.buf[..n]) {
                Ok(Fed::More) => {}
                Ok(Fed::Complete { reusable }) => {
                    if !reusable {
                        slot.conn = None;
                    }
                    return Step::Done(finish(get));
                }
                // A server may answer a connection it is closing for idleness with a 408 of
                // its own: the request never reached it, so it goes again on a fresh one.
                Err(Outcome::Failed(FetchError::Status { status: 408, .. })) if first_on_reused => {
                    return self.broken(i, true, String::new());
                }
                Err(outcome) => {
                    // The rest of the response is unread: the connection cannot be reused.
                    slot.conn = None;
                    return Step::Done(outcome);
                }
            }
        }
    }

    /// The server closed slot `i`'s connection.
    fn closed(&mut self, i: usize) -> Step {
        let slot = &mut self.slots[i];
        let reused = slot.conn.take().is_some_and(|c| c.used);
        let get = slot.get.as_mut().expect("in flight");
        let broke_off = match &get.state {
            State::Head(head) => {
                let stale = head.is_empty() && reused;
                return self.broken(i, stale, "connection closed early".to_string());
            }
            State::Body(body) => match body.head.framing {
                Framing::Close => return Step::Done(finish(get)),
                Framing::Length(left) => {
                    truncated(get.url.to_string(), body.received, body.received + left)
                }
                Framing::Chunked(_) => transport(&get.url, "connection closed early".to_string()),
            },
        };
        Step::Done(retry(broke_off))
    }

    /// Slot `i`'s connection failed. When it was a kept-alive connection and not a byte of
    /// the response had come (`stale`), the server most likely closed it while it was idle:
    /// the request goes again on a fresh connection (RFC 9112 §9.3.1: a GET may be
    /// retried), which costs no attempt.
    fn broken(&mut self, i: usize, stale: bool, message: String) -> Step {
        self.slots[i].conn = None;
        let mut get = self.slots[i].get.take().expect("in flight");
        if stale {
            let authority = get.url[Position::BeforeHost..Position::BeforePath].to_string();
            get.deadline = Instant::now() + self.http.config().timeout;
            match self.send(i, &authority, &get) {
                Ok(()) => {
                    self.slots[i].get = Some(get);
                    return Step::Pending;
                }
                Err(error) => {
                    self.slots[i].get = Some(get);
                    return Step::Done(retry(error));
                }
            }
        }
        let error = transport(&get.url, message);
        self.slots[i].get = Some(get);
        Step::Done(retry(error))
    }
}

fn transport(url: &Url, message: String) -> FetchError {
    FetchError::Transport {
        url: url.to_string(),
        message,
    }
}

fn retry(error: FetchError) -> Outcome {
    Outcome::Resume(Resume::Retry {
        error,
        retry_after: None,
    })
}

/// What feeding bytes to a GET came to.
enum Fed {
    More,
    /// The response is complete; `reusable` when the connection can carry another request.
    Complete {
        reusable: bool,
    },
}

/// Feed `bytes` just read to `get`. `Err` ends the GET with that outcome.
fn feed<T>(get: &mut Get<T>, staging: &Path, mut bytes: &[u8]) -> Result<Fed, Outcome> {
    loop {
        match &mut get.state {
            State::Head(head) => {
                // Most heads arrive in one read with (part of) their body: parse in place.
                let (consumed, parsed) = if head.is_empty() {
                    match parse_head(bytes, &get.url)? {
                        Some((n, parsed)) => (n, parsed),
                        None => {
                            head.extend_from_slice(bytes);
                            return Ok(Fed::More);
                        }
                    }
                } else {
                    let before = head.len();
                    head.extend_from_slice(bytes);
                    match parse_head(head, &get.url)? {
                        Some((n, parsed)) => (n - before, parsed),
                        None => {
                            if head.len() > MAX_HEAD {
                                return Err(Outcome::Failed(FetchError::Transport {
                                    url: get.url.to_string(),
                                    message: format!(
                                        "response headers larger than {MAX_HEAD} bytes"
                                    ),
                                }));
                            }
                            return Ok(Fed::More);
                        }
                    }
                };
                bytes = &bytes[consumed..];
                match parsed {
                    // 1xx (103 Early Hints): the real response follows.
                    Head::Interim => get.state = State::Head(Vec::new()),
                    Head::Ended(outcome) => return Err(outcome),
                    Head::Body(head) => {
                        let receiving = receive(get, staging, head)?;
                        get.state = State::Body(Box::new(receiving));
                        if let State::Body(b) = &get.state {
                            if matches!(b.head.framing, Framing::Length(0)) {
                                let reusable = b.head.keep_alive && bytes.is_empty();
                                return Ok(Fed::Complete { reusable });
                            }
                        }
                    }
                }
                if bytes.is_empty() {
                    return Ok(Fed::More);
                }
            }
            State::Body(body) => return take_body(body, &get.url, &get.expected, bytes),
        }
    }
}

/// Body bytes in; the response is complete when the framing says so.
fn take_body(
    body: &mut Receiving,
    url: &Url,
    expected: &Expected,
    bytes: &[u8],
) -> Result<Fed, Outcome> {
    let mut sink = |data: &[u8]| -> Result<(), Outcome> {
        body.received += data.len() as u64;
        check_received(url.as_str(), expected, body.received).map_err(Outcome::Failed)?;
        body.hasher.update(data);
        body.part
            .write_all(data)
            .map_err(|e| Outcome::Failed(staging_error(&body.part.describe(), e)))
    };
    match &mut body.head.framing {
        Framing::Length(left) => {
            let n = bytes.len().min(*left as usize);
            sink(&bytes[..n])?;
            *left -= n as u64;
            if *left > 0 {
                return Ok(Fed::More);
            }
            // Bytes beyond the body: the server is confused; do not read another response
            // from this connection.
            let reusable = body.head.keep_alive && n == bytes.len();
            Ok(Fed::Complete { reusable })
        }
        Framing::Chunked(chunked) => {
            let used = chunked.feed(bytes, &mut sink).map_err(|e| match e {
                ChunkError::Sink(outcome) => outcome,
                // ureq counts a malformed response as worth another attempt.
                ChunkError::Malformed(message) => retry(FetchError::Transport {
                    url: url.to_string(),
                    message,
                }),
            })?;
            if !chunked.is_done() {
                return Ok(Fed::More);
            }
            let reusable = body.head.keep_alive && used == bytes.len();
            Ok(Fed::Complete { reusable })
        }
        Framing::Close => {
            sink(bytes)?;
            Ok(Fed::More)
        }
    }
}

/// The whole body is in: verify it.
fn finish<T>(get: &mut Get<T>) -> Outcome {
    let state = std::mem::replace(&mut get.state, State::Head(Vec::new()));
    let State::Body(body) = state else {
        unreachable!("finish before the body")
    };
    let body = *body;
    match verify(
        get.url.to_string(),
        &get.expected,
        body.received,
        body.hasher,
    ) {
        Ok(computed) => Outcome::Fetched(Box::new(Staged {
            file: body.part,
            computed,
            final_url: get.url.clone(),
            etag: body.head.etag,
            last_modified: body.head.last_modified,
            media_type: body.head.media_type,
            content_encoding: body.head.content_encoding,
        })),
        Err(e) => Outcome::Failed(e),
    }
}

/// A response head, read.
enum Head {
    /// A 1xx response: another head follows.
    Interim,
    /// A response without a body we want: the GET ends here (or the blocking path resumes).
    Ended(Outcome),
    Body(BodyHead),
}

/// What a 2xx head says about its body.
struct BodyHead {
    framing: Framing,
    keep_alive: bool,
    etag: Option<String>,
    last_modified: Option<String>,
    media_type: Option<String>,
    content_encoding: Option<String>,
}

/// Parse a response head at the start of `bytes`: `None` when incomplete, else the bytes it
/// took.
fn parse_head(bytes: &[u8], url: &Url) -> Result<Option<(usize, Head)>, Outcome> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let n = match response.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            // ureq counts a malformed response as worth another attempt.
            return Err(retry(FetchError::Transport {
                url: url.to_string(),
                message: format!("malformed response: {e}"),
            }));
        }
    };
    let status = response.code.unwrap_or(0);
    let header = |name: &str| -> Option<String> {
        let h = response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))?;
        header_text(h.value)
    };
    let ended = |o: Outcome| Ok(Some((n, Head::Ended(o))));
    match status {
        101 => {
            return ended(Outcome::Failed(FetchError::Transport {
                url: url.to_string(),
                message: "unexpected 101 Switching Protocols".to_string(),
            }))
        }
        100..=199 => return Ok(Some((n, Head::Interim))),
        s if is_redirect(s) => {
            let location = header("location");
            return ended(Outcome::Resume(Resume::Redirect {
                status: s,
                location,
            }));
        }
        s if is_retryable_status(s) => {
            let retry_after =
                header("retry-after").and_then(|v| parse_retry_after(&v, jiff::Timestamp::now()));
            let error = FetchError::Status {
                url: url.to_string(),
                status: s,
            };
            return ended(Outcome::Resume(Resume::Retry { error, retry_after }));
        }
        // 206 would be part of a representation we never asked a range of; 304 answers a
        // conditional GET we never sent.
        s if !(200..=299).contains(&s) || s == 206 => {
            return ended(Outcome::Failed(FetchError::Status {
                url: url.to_string(),
                status: s,
            }))
        }
        _ => {}
    }
    let version_1_1 = response.version == Some(1);
    let connection = header("connection").unwrap_or_default();
    let closes = connection
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case("close"));
    let keeps = connection
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case("keep-alive"));
    let keep_alive = if version_1_1 {
        !closes
    } else {
        keeps && !closes
    };
    let lengths: Vec<&[u8]> = response
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
        .map(|h| h.value)
        .collect();
    let malformed = |message: String| {
        ended(Outcome::Failed(FetchError::Transport {
            url: url.to_string(),
            message,
        }))
    };
    let framing = if let Some(coding) = header("transfer-encoding") {
        // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length.
        if !coding.eq_ignore_ascii_case("chunked") {
            return malformed(format!("unsupported Transfer-Encoding {coding:?}"));
        }
        Framing::Chunked(Chunked::default())
    } else if let Some(first) = lengths.first() {
        let parse = |v: &[u8]| -> Option<u64> {
            let v = std::str::from_utf8(v).ok()?.trim();
            (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())).then(|| v.parse().ok())?
        };
        match parse(first) {
            Some(len) if lengths.iter().all(|v| parse(v) == Some(len)) => Framing::Length(len),
            _ => return malformed("invalid Content-Length".to_string()),
        }
    } else if status == 204 {
        Framing::Length(0)
    } else {
        Framing::Close
    };
    let head = BodyHead {
        keep_alive: keep_alive && !matches!(framing, Framing::Close),
        framing,
        etag: header("etag"),
        last_modified: header("last-modified"),
        media_type: header("content-type"),
        content_encoding: header("content-encoding")
            .filter(|e| !e.eq_ignore_ascii_case("identity")),
    };
    Ok(Some((n, Head::Body(head))))
}

/// A header value as text, as the blocking path reads it: visible ASCII only, trimmed, and
/// not empty.
fn header_text(value: &[u8]) -> Option<String> {
    if !value
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The body of a 2xx response begins: check the announced length, open the new file.
fn receive<T>(get: &Get<T>, staging: &Path, head: BodyHead) -> Result<Receiving, Outcome> {
    let announced = match head.framing {
        Framing::Length(len) => Some(len),
        Framing::Chunked(_) | Framing::Close => None,
    };
    check_announced(get.url.as_str(), &get.expected, announced).map_err(Outcome::Failed)?;
    let folder = worker_folder(staging).map_err(Outcome::Failed)?;
    let part = NewFile::create(&folder).map_err(|e| Outcome::Failed(staging_error(&folder, e)))?;
    Ok(Receiving {
        head,
        part,
        hasher: hasher_for(&get.expected),
        received: 0,
    })
}

/// Longest chunk-size or trailer line accepted.
const MAX_CHUNK_LINE: usize = 8 * 1024;

/// A chunked body being decoded (RFC 9112 §7.1).
#[derive(Debug, Default)]
struct Chunked {
    state: ChunkState,
    /// The chunk-size or trailer line read so far.
    line: Vec<u8>,
}

#[derive(Debug, Default, PartialEq)]
enum ChunkState {
    #[default]
    Size,
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    Trailer,
    Done,
}

impl Chunked {
    fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Decode `input`, handing the data to `sink`; returns the bytes used (all of them unless
    /// the body ended within `input`).
    fn feed<E>(
        &mut self,
        input: &[u8],
        sink: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<usize, ChunkError<E>> {
        let mut at = 0;
        while at < input.len() && self.state != ChunkState::Done {
            match self.state {
                ChunkState::Data(left) => {
                    let n = (input.len() - at).min(left as usize);
                    sink(&input[at..at + n]).map_err(ChunkError::Sink)?;
                    at += n;
                    self.state = if left == n as u64 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left - n as u64)
                    };
                }
                ChunkState::Size | ChunkState::DataEnd | ChunkState::Trailer => {
                    let Some(end) = memchr::memchr(b'\n', &input[at..]) else {
                        self.line.extend_from_slice(&input[at..]);
                        at = input.len();
                        if self.line.len() > MAX_CHUNK_LINE {
                            return Err(ChunkError::Malformed("chunk line too long".into()));
                        }
                        break;
                    };
                    self.line.extend_from_slice(&input[at..at + end]);
                    at += end + 1;
                    let line = std::mem::take(&mut self.line);
                    let line = line.strip_suffix(b"\r").unwrap_or(&line);
                    self.state = self.line_done(line)?;
                }
                ChunkState::Done => unreachable!(),
            }
        }
        Ok(at)
    }

    fn line_done<E>(&self, line: &[u8]) -> Result<ChunkState, ChunkError<E>> {
        match self.state {
            ChunkState::Size => {
                let size = line.split(|&b| b == b';').next().unwrap_or_default();
                let size = std::str::from_utf8(size).unwrap_or("").trim();
                let n = (!size.is_empty() && size.len() <= 16)
                    .then(|| u64::from_str_radix(size, 16).ok())
                    .flatten()
                    .ok_or_else(|| {
                        ChunkError::Malformed(format!(
                            "invalid chunk size {:?}",
                            String::from_utf8_lossy(line)
                        ))
                    })?;
                Ok(if n == 0 {
                    ChunkState::Trailer
                } else {
                    ChunkState::Data(n)
                })
            }
            ChunkState::DataEnd if line.is_empty() => Ok(ChunkState::Size),
            ChunkState::DataEnd => Err(ChunkError::Malformed(
                "chunk data longer than its size".to_string(),
            )),
            ChunkState::Trailer if line.is_empty() => Ok(ChunkState::Done),
            ChunkState::Trailer => Ok(ChunkState::Trailer),
            ChunkState::Data(_) | ChunkState::Done => unreachable!(),
        }
    }
}

#[derive(Debug)]
enum ChunkError<E> {
    Malformed(String),
    Sink(E),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::HttpConfig;
    use crate::rs::digest::parse_hash_attr;
    use std::io::BufRead;
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    // md5 / sha-256 of "alpha\n" (ResourceSync §14's example).
    const MD5: &str = "9f9f90dbe3e5ee1218c86b8839db1995";
    const SHA256: &str = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";

    fn cfg() -> HttpConfig {
        HttpConfig {
            timeout: Duration::from_millis(500),
            ..crate::net::agent::test_server::config()
        }
    }

    /// What the raw server does after writing a reply.
    #[derive(Clone, Copy, PartialEq)]
    enum Then {
        Keep,
        Close,
        /// Write nothing at all and keep the connection open.
        Hang,
    }

    /// A server on 127.0.0.1 that answers each request with `reply(path, n)` (n: the request's
    /// number on its connection, from 0), written exactly as given.
    struct Raw {
        base: Url,
        heads: Arc<Mutex<Vec<String>>>,
        connections: Arc<Mutex<usize>>,
    }

    impl Raw {
        fn start(reply: fn(&str, usize) -> (Vec<u8>, Then)) -> Raw {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let base = Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
            let heads = Arc::new(Mutex::new(Vec::new()));
            let connections = Arc::new(Mutex::new(0));
            let (h, c) = (Arc::clone(&heads), Arc::clone(&connections));
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { return };
                    *c.lock().unwrap() += 1;
                    let h = Arc::clone(&h);
                    std::thread::spawn(move || serve(stream, reply, h));
                }
            });
            Raw {
                base,
                heads,
                connections,
            }
        }

        fn url(&self, path: &str) -> Url {
            self.base.join(path).unwrap()
        }

        fn connections(&self) -> usize {
            *self.connections.lock().unwrap()
        }
    }

    fn serve(
        stream: TcpStream,
        reply: fn(&str, usize) -> (Vec<u8>, Then),
        heads: Arc<Mutex<Vec<String>>>,
    ) {
        let mut reader = io::BufReader::new(stream.try_clone().unwrap());
        let mut out = stream;
        for n in 0.. {
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let path = head.split(' ').nth(1).unwrap_or("").to_string();
            heads.lock().unwrap().push(head);
            let (bytes, then) = reply(&path, n);
            if then == Then::Hang {
                std::thread::sleep(Duration::from_secs(5));
                return;
            }
            if out.write_all(&bytes).is_err() || then == Then::Close {
                return;
            }
        }
    }

    fn ok(body: &str, extra: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{extra}\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    fn expected(length: Option<u64>) -> Expected {
        Expected {
            length,
            digests: parse_hash_attr(&format!("md5:{MD5} sha-256:{SHA256}")),
        }
    }

    /// Run one GET per URL with `capacity` in flight; the outcomes in URL order.
    fn run(http: &Http, urls: &[Url], expected: &Expected, capacity: usize) -> Vec<Outcome> {
        let staging = tempfile::tempdir().unwrap();
        let mut multi = Multi::new(http, staging.path(), capacity);
        let mut pending = urls.iter().cloned().enumerate();
        let mut out: Vec<Option<Outcome>> = urls.iter().map(|_| None).collect();
        loop {
            while multi.has_room() {
                let Some((i, url)) = pending.next() else {
                    break;
                };
                assert!(multi.start(url, expected.clone(), i).is_ok());
            }
            if multi.is_idle() {
                break;
            }
            for (i, outcome) in multi.wait() {
                out[i] = Some(outcome);
            }
        }
        out.into_iter()
            .map(|o| o.expect("every GET ends"))
            .collect()
    }

    fn fetched(o: &Outcome) -> &Staged<NewFile> {
        match o {
            Outcome::Fetched(staged) => staged,
            other => panic!("not fetched: {other:?}"),
        }
    }

    fn failed(o: &Outcome) -> String {
        match o {
            Outcome::Failed(e) => e.to_string(),
            other => panic!("not failed: {other:?}"),
        }
    }

    fn resumed(o: &Outcome) -> &Resume {
        match o {
            Outcome::Resume(r) => r,
            other => panic!("not resumed: {other:?}"),
        }
    }

    #[test]
    fn many_gets_on_few_kept_alive_connections_verified_as_they_arrive() {
        let srv = Raw::start(|_, _| {
            let extra = "ETag: \"e1\"\r\nLast-Modified: Tue, 01 Jul 2025 10:00:00 GMT\r\n\
                         Content-Type: text/plain\r\nContent-Encoding: identity\r\n";
            (ok("alpha\n", extra), Then::Keep)
        });
        let http = Http::new(cfg());
        let urls: Vec<Url> = (0..12).map(|i| srv.url(&format!("r/{i}?q=1"))).collect();
        let outcomes = run(&http, &urls, &expected(Some(6)), 3);
        for (url, o) in urls.iter().zip(&outcomes) {
            let s = fetched(o);
            assert_eq!(s.computed.md5_hex, MD5);
            assert_eq!(s.computed.sha256_hex, SHA256);
            assert_eq!(s.computed.length, 6);
            assert_eq!(&s.final_url, url);
            assert_eq!(s.etag.as_deref(), Some("\"e1\""));
            assert_eq!(
                s.last_modified.as_deref(),
                Some("Tue, 01 Jul 2025 10:00:00 GMT")
            );
            assert_eq!(s.media_type.as_deref(), Some("text/plain"));
            assert_eq!(s.content_encoding, None, "identity is no encoding");
        }
        assert_eq!(srv.connections(), 3, "one connection per GET in flight");
        let heads = srv.heads.lock().unwrap();
        assert_eq!(heads.len(), 12);
        let host = srv.base.host_str().unwrap();
        let port = srv.base.port().unwrap();
        assert!(heads[0].starts_with("GET /r/"), "{}", heads[0]);
        assert!(heads[0].contains("?q=1 HTTP/1.1\r\n"), "{}", heads[0]);
        for line in [
            format!("Host: {host}:{port}\r\n"),
            "User-Agent: rsmirror-test/1\r\n".to_string(),
            "Accept-Encoding: identity\r\n".to_string(),
        ] {
            assert!(heads[0].contains(&line), "{line:?} in {}", heads[0]);
        }
    }

    #[test]
    fn chunked_close_delimited_and_interim_responses() {
        let srv = Raw::start(|path, _| match path {
            "/chunked" => (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                  3;ext=1\r\nalp\r\n3\r\nha\n\r\n0\r\nX-Trailer: t\r\n\r\n"
                    .to_vec(),
                Then::Keep,
            ),
            "/close" => (b"HTTP/1.0 200 OK\r\n\r\nalpha\n".to_vec(), Then::Close),
            "/early-hints" => {
                let mut r = b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n".to_vec();
                r.extend(ok("alpha\n", ""));
                (r, Then::Keep)
            }
            _ => (ok("", ""), Then::Keep),
        });
        let http = Http::new(cfg());
        let urls = [
            srv.url("chunked"),
            srv.url("close"),
            srv.url("early-hints"),
            srv.url("chunked"),
        ];
        for o in run(&http, &urls, &expected(Some(6)), 2) {
            assert_eq!(fetched(&o).computed.sha256_hex, SHA256);
        }
    }

    #[test]
    fn chunked_bodies_decode_whatever_the_read_boundaries() {
        let body = b"5\r\nalpha\r\n1;x=y\r\n\n\r\n0\r\nT: 1\r\n\r\nNEXT";
        for split in 0..body.len() {
            let mut c = Chunked::default();
            let mut got = Vec::new();
            let mut sink = |d: &[u8]| -> Result<(), ()> {
                got.extend_from_slice(d);
                Ok(())
            };
            let a = c.feed(&body[..split], &mut sink).unwrap();
            let b = if c.is_done() {
                0
            } else {
                c.feed(&body[split..], &mut sink).unwrap()
            };
            assert!(c.is_done(), "split {split}");
            assert_eq!(got, b"alpha\n", "split {split}");
            assert_eq!(a + b, body.len() - 4, "stops before what follows the body");
        }
        let mut sink = |_: &[u8]| -> Result<(), ()> { Ok(()) };
        for bad in [&b"zz\r\n"[..], b"5\r\nalphaXX\r\n", b"\r\n"] {
            let mut c = Chunked::default();
            assert!(
                matches!(c.feed(bad, &mut sink), Err(ChunkError::Malformed(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn statuses_end_or_hand_over_as_the_blocking_path_would() {
        let srv = Raw::start(|path, _| {
            let head = match path {
                "/gone" => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
                "/busy" => "HTTP/1.1 503 Busy\r\nRetry-After: 7\r\nContent-Length: 0\r\n\r\n",
                "/moved" => {
                    "HTTP/1.1 301 Moved\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"
                }
                "/part" => "HTTP/1.1 206 Partial\r\nContent-Length: 0\r\n\r\n",
                _ => "HTTP/1.1 304 Not Modified\r\n\r\n",
            };
            (head.as_bytes().to_vec(), Then::Keep)
        });
        let http = Http::new(cfg());
        let urls = [
            srv.url("gone"),
            srv.url("busy"),
            srv.url("moved"),
            srv.url("part"),
            srv.url("other"),
        ];
        let o = run(&http, &urls, &expected(Some(6)), 2);
        assert_eq!(failed(&o[0]), format!("{}: HTTP 404", urls[0]));
        match resumed(&o[1]) {
            Resume::Retry { error, retry_after } => {
                assert_eq!(error.to_string(), format!("{}: HTTP 503", urls[1]));
                assert_eq!(*retry_after, Some(Duration::from_secs(7)));
            }
            other => panic!("{other:?}"),
        }
        match resumed(&o[2]) {
            Resume::Redirect { status, location } => {
                assert_eq!(*status, 301);
                assert_eq!(location.as_deref(), Some("/elsewhere"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(failed(&o[3]), format!("{}: HTTP 206", urls[3]));
        assert_eq!(failed(&o[4]), format!("{}: HTTP 304", urls[4]));
    }

    #[test]
    fn bodies_that_contradict_the_source_fail_for_good() {
        let srv = Raw::start(|path, _| {
            match path {
            "/longer" => (ok("alpha\nand more", ""), Then::Keep),
            "/wrong" => (ok("alphA\n", ""), Then::Keep),
            "/chunked-longer" => (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nalpha\nXYZ\r\n0\r\n\r\n"
                    .to_vec(),
                Then::Keep,
            ),
            _ => (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n".to_vec(), Then::Keep),
        }
        });
        let http = Http::new(cfg());
        let urls = [
            srv.url("longer"),
            srv.url("wrong"),
            srv.url("chunked-longer"),
            srv.url("bad-length"),
        ];
        let o = run(&http, &urls, &expected(Some(6)), 4);
        assert_eq!(
            failed(&o[0]),
            format!("{}: length mismatch: expected 6 bytes, got 14", urls[0])
        );
        assert!(failed(&o[1]).starts_with(&format!("{}: md5 mismatch", urls[1])));
        assert_eq!(
            failed(&o[2]),
            format!("{}: length mismatch: expected 6 bytes, got 9", urls[2])
        );
        assert_eq!(
            failed(&o[3]),
            format!("{}: invalid Content-Length", urls[3])
        );
    }

    #[test]
    fn broken_transfers_hand_over_to_the_retries() {
        let srv = Raw::start(|path, _| match path {
            "/truncated" => (
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nalp".to_vec(),
                Then::Close,
            ),
            "/garbage" => (b"NOT HTTP AT ALL\r\n\r\n".to_vec(), Then::Close),
            _ => (Vec::new(), Then::Hang),
        });
        let http = Http::new(cfg());
        let urls = [srv.url("truncated"), srv.url("garbage"), srv.url("silent")];
        let started = Instant::now();
        let o = run(&http, &urls, &expected(Some(6)), 3);
        let error = |r: &Resume| match r {
            Resume::Retry {
                error,
                retry_after: None,
            } => error.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            error(resumed(&o[0])),
            format!("{}: truncated transfer: 3 of 6 bytes", urls[0])
        );
        assert!(error(resumed(&o[1])).contains("malformed response"));
        assert_eq!(
            error(resumed(&o[2])),
            format!("{}: no response within 0.5 s (--timeout)", urls[2])
        );
        assert!(started.elapsed() >= Duration::from_millis(500));
    }

    #[test]
    fn a_kept_alive_connection_the_server_closed_is_replaced_at_no_cost() {
        // The server closes every connection after one response without saying so.
        let srv = Raw::start(|_, _| (ok("alpha\n", ""), Then::Close));
        let http = Http::new(cfg());
        let urls: Vec<Url> = (0..4).map(|i| srv.url(&format!("r/{i}"))).collect();
        for o in run(&http, &urls, &expected(Some(6)), 1) {
            assert_eq!(fetched(&o).computed.md5_hex, MD5);
        }
        assert_eq!(srv.connections(), 4);
        assert_eq!(srv.heads.lock().unwrap().len(), 4);
    }

    #[test]
    fn a_408_on_a_kept_alive_connection_means_send_again() {
        // The second request on every connection gets a 408 and the connection closes.
        let srv = Raw::start(|path, n| match (path, n) {
            ("/timeout", _) => (
                b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n".to_vec(),
                Then::Close,
            ),
            (_, 1) => (
                b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n".to_vec(),
                Then::Close,
            ),
            _ => (ok("alpha\n", ""), Then::Keep),
        });
        let http = Http::new(cfg());
        let urls: Vec<Url> = (0..3).map(|i| srv.url(&format!("r/{i}"))).collect();
        for o in run(&http, &urls, &expected(Some(6)), 1) {
            assert_eq!(fetched(&o).computed.md5_hex, MD5);
        }
        assert_eq!(srv.connections(), 3);
        assert_eq!(srv.heads.lock().unwrap().len(), 5);
        // On a fresh connection a 408 is the answer, as on the blocking path.
        let url = srv.url("timeout");
        let o = run(&http, std::slice::from_ref(&url), &expected(Some(6)), 1);
        assert_eq!(failed(&o[0]), format!("{url}: HTTP 408"));
    }

    #[test]
    fn connection_close_and_stray_bytes_end_a_connection() {
        let srv = Raw::start(|path, _| match path {
            "/close" => (ok("alpha\n", "Connection: close\r\n"), Then::Keep),
            _ => {
                let mut r = ok("alpha\n", "");
                r.extend_from_slice(b"stray");
                (r, Then::Keep)
            }
        });
        let http = Http::new(cfg());
        let urls = [
            srv.url("close"),
            srv.url("close"),
            srv.url("stray"),
            srv.url("stray"),
        ];
        for o in run(&http, &urls, &expected(Some(6)), 1) {
            assert_eq!(fetched(&o).computed.md5_hex, MD5);
        }
        assert_eq!(srv.connections(), 4);
    }

    #[test]
    fn a_refused_connection_hands_over_to_the_retries() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = Url::parse(&format!("http://127.0.0.1:{port}/x")).unwrap();
        let http = Http::new(cfg());
        let o = run(&http, std::slice::from_ref(&url), &expected(None), 1);
        match resumed(&o[0]) {
            Resume::Retry { error, .. } => {
                assert!(error.to_string().contains("connection failed"), "{error}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_plain_http_straight_to_the_host() {
        let staging = tempfile::tempdir().unwrap();
        let mapped = Http::new(HttpConfig {
            maps: vec![("http://m.example.org/".into(), staging.path().into())],
            ..cfg()
        });
        let paced = Http::new(cfg()).with_host_delay(Duration::from_millis(10));
        let plain = Http::new(cfg());
        let url = |s: &str| Url::parse(s).unwrap();
        let e = expected(None);
        let mut multi = Multi::new(&plain, staging.path(), 2);
        assert_eq!(
            multi.start(url("https://h.example.org/x"), e.clone(), 1),
            Err(1)
        );
        assert_eq!(
            multi.start(url("http://u:p@h.example.org/x"), e.clone(), 4),
            Err(4)
        );
        let mut multi = Multi::new(&mapped, staging.path(), 2);
        assert_eq!(
            multi.start(url("http://m.example.org/x"), e.clone(), 2),
            Err(2)
        );
        let mut multi = Multi::new(&paced, staging.path(), 2);
        assert_eq!(
            multi.start(url("http://h.example.org/x"), e.clone(), 3),
            Err(3)
        );
        assert!(multi.is_idle());
    }
}
