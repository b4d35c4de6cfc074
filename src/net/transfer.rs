//! Resource transfers on libcurl's multi interface: many GETs in flight on one thread, each
//! body hashed as its bytes arrive and written to its new file `WRITE_BATCH` bytes at a time
//! (the rest once the transfer is complete, before the file is handed over).
//!
//! libcurl does the HTTP: connection reuse (with its liveness check: an idle connection that
//! has become readable is closed, never read as the next response), asynchronous DNS, happy
//! eyeballs, TLS and HTTP/2, strict framing, the connect timeout, the low-speed cut-off
//! (`--min-rate` over a `--timeout` window), `--max-size` for a declared length and
//! `--max-time`. What stays ours, per GET:
//! - every hop's URL is checked against the [`Scope`] (libcurl follows no redirect), and only
//!   `http` and `https` are spoken;
//! - the response head must be complete within `--timeout` of the request, in at most
//!   [`MAX_HEAD`] bytes (interim `1xx` responses and trailers count) and with unambiguous
//!   framing (one `Transfer-Encoding: chunked` and no `Content-Length` beside it, none on an
//!   HTTP/1.0 response): anything else fails the resource;
//! - the declared length is checked against `Content-Length` before a byte is written and
//!   against the bytes while they arrive; a body without a declared length stops at
//!   `--max-size`; every usable declared digest is checked at the end;
//! - retries (connection failures, timeouts, 429, 5xx, a body that broke off) share the
//!   `--tries` budget, with the backoff or the server's `Retry-After`, paused without holding up
//!   the transfers beside them; `--delay` spaces the requests to one host;
//! - conditional GETs, the User-Agent, credentials for the source's host only, `--map`.
//!
//! The bytes are the representation as served: `Accept-Encoding: identity` is asked for and a
//! `Content-Encoding` sent anyway is recorded, not decoded.

use crate::net::agent::{is_redirect, is_retryable_status, parse_retry_after, Retries};
use crate::net::fetch::{
    check_announced, check_received, hasher_for, past_max_time, staging_error, truncated, verify,
    worker_folder,
};
use crate::net::{Expected, FetchError, Http, Scope, Staged, Validators};
use crate::rs::digest::Hasher;
use crate::store::new_file::NewFile;
use curl::easy::{Easy2, Handler, List, WriteError};
use curl::multi::{Easy2Handle, Multi};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// The most bytes of response head accepted for one GET: status lines and header fields of
/// every interim (`1xx`) response, the final one, and any trailer fields.
pub const MAX_HEAD: usize = 64 * 1024;
/// The most interim (`1xx`) responses accepted before the final one.
const MAX_INTERIM: u32 = 8;
/// The most bytes of an error or redirect body read (and dropped) before the connection is
/// given up instead.
const MAX_DROPPED_BODY: u64 = 64 * 1024;
/// The longest one wait on the sockets lasts, so that head deadlines and paused retries are
/// seen on time whatever libcurl's own timers say.
const MAX_WAIT: Duration = Duration::from_millis(250);

/// libcurl's receive buffer for a transfer (`CURLOPT_BUFFERSIZE`).
const RECEIVE_BUFFER: usize = 128 * 1024;
/// libcurl's own default, kept for a body declared no larger.
const DEFAULT_RECEIVE_BUFFER: u64 = 16 * 1024;

/// Body bytes are written to the staging file this many at a time: libcurl hands them over
/// 16 KiB a call, and a `write` per call was a quarter of a large body's system time.
const WRITE_BATCH: usize = 128 * 1024;

/// How one GET ended.
#[derive(Debug)]
pub enum Outcome {
    /// Verified and in a new file.
    Fetched(Box<Staged<NewFile>>),
    /// Failed for good: retries spent, refused, or the source is wrong. A conditional GET the
    /// server answered with 304 is [`FetchError::Status`] 304.
    Failed(FetchError),
}

impl Outcome {
    pub fn into_result(self) -> Result<Staged<NewFile>, FetchError> {
        match self {
            Outcome::Fetched(staged) => Ok(*staged),
            Outcome::Failed(e) => Err(e),
        }
    }
}

/// One GET to make.
#[derive(Debug, Clone)]
pub struct Request {
    pub url: Url,
    pub scope: Arc<Scope>,
    pub expected: Expected,
    /// Ask with these (a conditional GET); empty for an unconditional one.
    pub validators: Validators,
    /// How the new file is made: [`NewFile::create`] (anonymous, for the object store) or
    /// [`NewFile::create_named`] (a package read from its path).
    pub create: fn(&Path) -> io::Result<NewFile>,
}

impl Request {
    pub fn new(url: Url, scope: Arc<Scope>, expected: Expected) -> Request {
        Request {
            url,
            scope,
            expected,
            validators: Validators::default(),
            create: NewFile::create,
        }
    }
}

/// Up to `capacity` GETs in flight (or paused before a retry) on one libcurl multi handle.
pub struct Transfers<'h, T> {
    http: &'h Http,
    staging: &'h Path,
    multi: Multi,
    capacity: usize,
    /// GETs whose request is out, by the token their handle carries.
    running: Vec<Option<Running<'h, T>>>,
    /// GETs waiting to (re)start: a retry's pause, or their turn under `--delay`.
    paused: Vec<(Instant, Get<'h, T>)>,
    /// GETs that ended, not yet collected by [`Transfers::wait`].
    ended: Vec<(T, Outcome)>,
    /// Easy handles kept for the next GETs (a handle costs an allocation and a setup).
    spare: Vec<Easy2<Sink>>,
}

/// One GET and where it stands: the hop being fetched, the retries spent.
struct Get<'h, T> {
    token: T,
    request: Request,
    current: Url,
    came_from: Option<Url>,
    hops: u32,
    retries: Retries<'h>,
    /// `--delay`'s turn for this attempt has been taken already.
    turn_taken: bool,
    /// Send it on a new connection: a kept-alive one had bytes nobody asked for.
    fresh: bool,
}

struct Running<'h, T> {
    get: Get<'h, T>,
    handle: Easy2Handle<Sink>,
    /// The response head must be in by then.
    head_deadline: Instant,
}

impl<'h, T> Transfers<'h, T> {
    pub fn new(http: &'h Http, staging: &'h Path, capacity: usize) -> Transfers<'h, T> {
        let capacity = capacity.max(1);
        let mut multi = Multi::new();
        // Idle connections kept for reuse: one per GET in flight, as a browser would.
        let _ = multi.set_max_connects(capacity.max(4));
        Transfers {
            http,
            staging,
            multi,
            capacity,
            running: (0..capacity).map(|_| None).collect(),
            paused: Vec::new(),
            ended: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// Whether another GET can start.
    pub fn has_room(&self) -> bool {
        self.in_flight() + self.paused.len() + self.ended.len() < self.capacity
    }

    /// Whether nothing is in flight, paused or waiting to be collected.
    pub fn is_idle(&self) -> bool {
        self.in_flight() == 0 && self.paused.is_empty() && self.ended.is_empty()
    }

    fn in_flight(&self) -> usize {
        self.running.iter().filter(|r| r.is_some()).count()
    }

    /// Start a GET; its outcome comes from a later [`Transfers::wait`]. The caller keeps within
    /// [`Transfers::has_room`] (beyond it the GET still runs, as one more).
    pub fn start(&mut self, request: Request, token: T) {
        let get = Get {
            token,
            current: request.url.clone(),
            request,
            came_from: None,
            hops: 0,
            retries: self.http.retries(),
            turn_taken: false,
            fresh: false,
        };
        self.launch(get);
    }

    /// Wait until at least one GET has ended (or nothing is left in flight), and return those
    /// that have.
    pub fn wait(&mut self) -> Vec<(T, Outcome)> {
        loop {
            self.launch_due();
            if !self.ended.is_empty() {
                return std::mem::take(&mut self.ended);
            }
            if self.in_flight() == 0 {
                let Some(next) = self.paused.iter().map(|(at, _)| *at).min() else {
                    return Vec::new();
                };
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                continue;
            }
            if let Err(e) = self.multi.perform() {
                self.fail_all_running(&format!("libcurl: {e}"));
                continue;
            }
            let mut finished = Vec::new();
            self.multi.messages(|m| {
                if let (Ok(token), Some(result)) = (m.token(), m.result()) {
                    finished.push((token, result));
                }
            });
            for (token, result) in finished {
                self.finish(token, result);
            }
            self.check_head_deadlines();
            if !self.ended.is_empty() || self.in_flight() == 0 {
                continue;
            }
            let now = Instant::now();
            let mut wait = MAX_WAIT;
            if let Ok(Some(curl)) = self.multi.get_timeout() {
                wait = wait.min(curl);
            }
            for at in self.paused.iter().map(|(at, _)| *at).chain(
                self.running
                    .iter()
                    .flatten()
                    .filter(|r| !r.handle.get_ref().head_done)
                    .map(|r| r.head_deadline),
            ) {
                wait = wait.min(at.saturating_duration_since(now));
            }
            if let Err(e) = self.multi.wait(&mut [], wait) {
                self.fail_all_running(&format!("libcurl: {e}"));
            }
        }
    }

    /// Start the paused GETs whose time has come.
    fn launch_due(&mut self) {
        let now = Instant::now();
        let mut i = 0;
        while i < self.paused.len() {
            if self.paused[i].0 <= now {
                let (_, get) = self.paused.swap_remove(i);
                self.launch(get);
            } else {
                i += 1;
            }
        }
    }

    /// Send `get`'s current hop: check it against the scope, serve it from a `--map` folder,
    /// wait for `--delay`'s turn, or hand it to libcurl.
    fn launch(&mut self, mut get: Get<'h, T>) {
        if let Err(reason) = get.request.scope.check(&get.current) {
            let reason = match &get.came_from {
                None => reason,
                Some(from) => format!("redirected from {from}: {reason}"),
            };
            let url = get.current.to_string();
            return self.end(get, Err(FetchError::OutOfScope { url, reason }));
        }
        if self.http.is_mapped(&get.current) {
            let folder = worker_folder(self.staging);
            let r = folder.and_then(|folder| {
                crate::net::fetch::fetch_mapped(
                    self.http,
                    &get.current,
                    &folder,
                    &get.request.expected,
                    get.request.create,
                )
            });
            return self.end(get, r);
        }
        if !get.turn_taken {
            get.turn_taken = true;
            if let Some(at) = self.http.take_turn(get.current.host_str().unwrap_or("")) {
                if at > Instant::now() {
                    self.paused.push((at, get));
                    return;
                }
            }
        }
        get.turn_taken = false;
        let Some(slot) = self.running.iter().position(Option::is_none) else {
            self.running.push(None);
            return self.launch(get);
        };
        let mut easy = match self.spare.pop() {
            Some(mut easy) => {
                easy.reset();
                easy
            }
            None => Easy2::new(Sink::default()),
        };
        let folder = match worker_folder(self.staging) {
            Ok(folder) => folder,
            Err(e) => return self.end(get, Err(e)),
        };
        if let Err(e) = self.configure(&mut easy, &get, folder) {
            let error = transport(&get.current, format!("libcurl: {e}"));
            return self.end(get, Err(error));
        }
        match self.multi.add2(easy) {
            Ok(mut handle) => {
                let _ = handle.set_token(slot);
                self.running[slot] = Some(Running {
                    get,
                    handle,
                    head_deadline: Instant::now() + self.http.config().timeout,
                });
            }
            Err(e) => {
                let error = transport(&get.current, format!("libcurl: {e}"));
                self.end(get, Err(error))
            }
        }
    }

    fn configure(
        &self,
        easy: &mut Easy2<Sink>,
        get: &Get<'h, T>,
        folder: PathBuf,
    ) -> Result<(), curl::Error> {
        let cfg = self.http.config();
        let url = &get.current;
        let mut pending = std::mem::take(&mut easy.get_mut().pending);
        pending.clear();
        *easy.get_mut() = Sink {
            pending,
            ..Sink::new(url, folder, &get.request, cfg.max_size)
        };
        let mut target = url.clone();
        target.set_fragment(None);
        easy.url(target.as_str())?;
        only_http(easy)?;
        check_reused_connections(easy)?;
        if get.fresh {
            easy.fresh_connect(true)?;
        }
        easy.follow_location(false)?;
        easy.useragent(self.http.user_agent())?;
        // The representation as served: nothing decoded, `Content-Encoding` recorded.
        easy.http_content_decoding(false)?;
        easy.http_transfer_decoding(true)?;
        let mut headers = List::new();
        headers.append("Accept: */*")?;
        headers.append("Accept-Encoding: identity")?;
        let v = &get.request.validators;
        // A validator that cannot be a header value (hostile or corrupted) is simply not
        // sent: the GET becomes unconditional, which is always correct.
        if let Some(etag) = v.etag.as_deref().filter(|v| header_safe(v)) {
            headers.append(&format!("If-None-Match: {}", etag.trim()))?;
        }
        if let Some(lm) = v.last_modified.as_deref().filter(|v| header_safe(v)) {
            headers.append(&format!("If-Modified-Since: {}", lm.trim()))?;
        }
        for (name, value) in self.http.config().credentials.for_url(url) {
            headers.append(&format!("{name}: {value}"))?;
        }
        easy.http_headers(headers)?;
        if let Some(ca_file) = &cfg.ca_file {
            easy.cainfo(ca_file)?;
        }
        easy.connect_timeout(cfg.timeout)?;
        // Reads of up to this much a system call for a body that may be large (libcurl's
        // default is 16 KiB: eight times the `recvfrom` and `poll` calls of a large body; a
        // small one is left with the default, which libcurl need not allocate again).
        if (get.request.expected.length).is_none_or(|n| n > DEFAULT_RECEIVE_BUFFER) {
            easy.buffer_size(RECEIVE_BUFFER)?;
        }
        // A trickle is cut: under `--min-rate` bytes a second over a `--timeout` window (the
        // head included; a silent server is the slowest trickle).
        easy.low_speed_limit(cfg.min_rate.clamp(1, u32::MAX as u64) as u32)?;
        easy.low_speed_time(cfg.timeout.max(Duration::from_secs(1)))?;
        if cfg.max_size > 0 {
            easy.max_filesize(cfg.max_size)?;
        }
        if let Some(max_time) = cfg.max_time {
            easy.timeout(max_time)?;
        }
        Ok(())
    }

    /// Slot `token`'s transfer is over, as libcurl says.
    fn finish(&mut self, token: usize, result: Result<(), curl::Error>) {
        let Some(running) = self.running.get_mut(token).and_then(Option::take) else {
            return;
        };
        let Running { get, handle, .. } = running;
        let mut easy = match self.multi.remove2(handle) {
            Ok(easy) => easy,
            Err(e) => {
                let error = transport(&get.current, format!("libcurl: {e}"));
                return self.after(get, Step::Retry(error, None));
            }
        };
        let status = easy.response_code().unwrap_or(0) as u16;
        // libcurl's own words for a failure are in the handle's error buffer.
        let result = result.map_err(|mut e| {
            if let Some(s) = easy.take_error_buf() {
                e.set_extra(s);
            }
            e
        });
        let mut sink = std::mem::take(easy.get_mut());
        let step = sink.conclude(&get, status, result, self.http.config());
        easy.get_mut().pending = sink.pending;
        self.spare.push(easy);
        self.after(get, step);
    }

    /// Fail the GETs whose response head has not come within `--timeout`.
    fn check_head_deadlines(&mut self) {
        let now = Instant::now();
        for slot in 0..self.running.len() {
            let late = self.running[slot]
                .as_ref()
                .is_some_and(|r| !r.handle.get_ref().head_done && r.head_deadline <= now);
            if !late {
                continue;
            }
            let Running { get, handle, .. } = self.running[slot].take().expect("running");
            if let Ok(mut easy) = self.multi.remove2(handle) {
                // Dropped mid-response: libcurl closes the connection.
                *easy.get_mut() = Sink::default();
                self.spare.push(easy);
            }
            let timeout = self.http.config().timeout;
            let error = FetchError::Timeout {
                url: get.current.to_string(),
                timeout,
            };
            self.after(get, Step::Retry(error, None));
        }
    }

    fn fail_all_running(&mut self, message: &str) {
        for slot in 0..self.running.len() {
            if let Some(Running { get, handle, .. }) = self.running[slot].take() {
                let _ = self.multi.remove2(handle);
                let error = transport(&get.current, message.to_string());
                self.after(get, Step::Retry(error, None));
            }
        }
    }

    /// Carry on after one attempt at `get`'s current hop.
    fn after(&mut self, mut get: Get<'h, T>, step: Step) {
        match step {
            Step::Done(r) => self.end(get, r),
            // Not sent: again, at no cost, on a new connection.
            Step::Stale => {
                get.fresh = true;
                get.turn_taken = true;
                self.launch(get);
            }
            Step::Redirect { status, location } => {
                let max = self.http.config().max_redirects;
                get.hops += 1;
                if get.hops > max {
                    let url = get.request.url.to_string();
                    return self.end(get, Err(FetchError::TooManyRedirects { url, max }));
                }
                match crate::net::agent::redirect_target(&get.current, status, location.as_deref())
                {
                    Ok(next) => {
                        get.came_from = Some(std::mem::replace(&mut get.current, next));
                        self.launch(get);
                    }
                    Err(e) => self.end(get, Err(e)),
                }
            }
            Step::Retry(error, retry_after) => match get.retries.next_wait(retry_after) {
                Some(wait) => {
                    // Another attempt starts over from the URL asked for.
                    get.current = get.request.url.clone();
                    get.came_from = None;
                    get.hops = 0;
                    self.paused.push((Instant::now() + wait, get));
                }
                None => self.end(get, Err(error)),
            },
        }
    }

    fn end(&mut self, get: Get<'h, T>, r: Result<Staged<NewFile>, FetchError>) {
        let outcome = match r {
            Ok(staged) => Outcome::Fetched(Box::new(staged)),
            Err(e) => Outcome::Failed(e),
        };
        self.ended.push((get.token, outcome));
    }
}

/// Fetch one resource on a [`Transfers`] of its own: the blocking form, for the few GETs made
/// one at a time (repair, dump packages).
pub fn fetch_one(
    http: &Http,
    staging: &Path,
    request: Request,
) -> Result<Staged<NewFile>, FetchError> {
    let mut transfers = Transfers::new(http, staging, 1);
    transfers.start(request, ());
    loop {
        if let Some((_, outcome)) = transfers.wait().pop() {
            return outcome.into_result();
        }
    }
}

/// What to do after one attempt.
// One value per attempt, acted on at once: boxing the staged file would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Step {
    Done(Result<Staged<NewFile>, FetchError>),
    Redirect {
        status: u16,
        location: Option<String>,
    },
    /// Another attempt may mend it; the server's `Retry-After` when it gave one.
    Retry(FetchError, Option<Duration>),
    /// The kept-alive connection picked for the request had bytes waiting that nobody asked
    /// for: the request was not sent.
    Stale,
}

/// `CURLOPT_PREREQFUNCTION` and `CURLOPT_PREREQDATA` (libcurl 7.80) and `CURLINFO_SCHEME`
/// (7.52): not wrapped by the crates.
const CURLOPT_PREREQFUNCTION: curl_sys::CURLoption = 20_000 + 312;
const CURLOPT_PREREQDATA: curl_sys::CURLoption = 10_000 + 313;
const CURLINFO_SCHEME: curl_sys::CURLINFO = 0x10_0000 + 49;
const CURL_PREREQFUNC_ABORT: libc::c_int = 1;

/// A socket libcurl opened on this thread, and its (local, remote) ports once connected.
type Socket = (libc::c_int, Option<(libc::c_int, libc::c_int)>);

thread_local! {
    /// The sockets libcurl holds open on this thread: added when it makes one
    /// (`CURLOPT_SOCKOPTFUNCTION`), removed when it closes one (`CURLOPT_CLOSESOCKETFUNCTION`),
    /// so a lookup costs no system call once a socket's ports are known.
    static SOCKETS: std::cell::RefCell<Vec<Socket>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The socket of this thread's whose local and remote ports are these.
fn socket_with_ports(local: libc::c_int, remote: libc::c_int) -> Option<libc::c_int> {
    let port = |fd: libc::c_int, peer: bool| {
        // SAFETY: a zeroed sockaddr_storage is a valid buffer of the length passed.
        let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        let p = &mut addr as *mut libc::sockaddr_storage as *mut libc::sockaddr;
        // SAFETY: `p` points to `len` writable bytes.
        let rc = unsafe {
            if peer {
                libc::getpeername(fd, p, &mut len)
            } else {
                libc::getsockname(fd, p, &mut len)
            }
        };
        if rc != 0 {
            return None;
        }
        match addr.ss_family as libc::c_int {
            // SAFETY: the family says which structure the bytes are.
            libc::AF_INET => {
                Some(
                    u16::from_be(unsafe { (*(p as *const libc::sockaddr_in)).sin_port })
                        as libc::c_int,
                )
            }
            // SAFETY: as above.
            libc::AF_INET6 => {
                Some(
                    u16::from_be(unsafe { (*(p as *const libc::sockaddr_in6)).sin6_port })
                        as libc::c_int,
                )
            }
            _ => None,
        }
    };
    SOCKETS.with_borrow_mut(|sockets| {
        for (fd, ports) in sockets.iter_mut().filter(|(_, p)| p.is_none()) {
            *ports = port(*fd, false).zip(port(*fd, true));
        }
        sockets
            .iter()
            .find(|(_, ports)| *ports == Some((local, remote)))
            .map(|(fd, _)| *fd)
    })
}

/// Whether `fd` has bytes (or an end of stream) waiting to be read.
fn has_bytes_waiting(fd: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents != 0
}

/// Refuse a kept-alive plain-http connection that has bytes waiting before the request goes
/// out. libcurl checks an idle connection only when it has been idle for a second, so a stray
/// response that arrived since the last one (a broken or hostile server, a response smuggled
/// behind another) would be read as the answer to the next request: with no digest declared,
/// the wrong bytes would be stored under the next resource's name. (Over TLS the socket's
/// readability says nothing about the HTTP stream; there libcurl's own check stands.)
fn check_reused_connections(easy: &mut Easy2<Sink>) -> Result<(), curl::Error> {
    extern "C" fn prereq(
        clientp: *mut libc::c_void,
        _primary_ip: *mut libc::c_char,
        _local_ip: *mut libc::c_char,
        primary_port: libc::c_int,
        local_port: libc::c_int,
    ) -> libc::c_int {
        let handle = clientp as *mut curl_sys::CURL;
        let mut connects: libc::c_long = 1;
        let mut scheme: *const libc::c_char = std::ptr::null();
        // SAFETY: `handle` is the easy handle this callback was set on, alive while its
        // transfer runs; each getinfo writes one value of the type passed.
        unsafe {
            curl_sys::curl_easy_getinfo(handle, curl_sys::CURLINFO_NUM_CONNECTS, &mut connects);
            curl_sys::curl_easy_getinfo(handle, CURLINFO_SCHEME, &mut scheme);
        }
        let plain = !scheme.is_null()
            // SAFETY: libcurl gives a NUL-terminated string it owns.
            && unsafe { std::ffi::CStr::from_ptr(scheme) }
                .to_bytes()
                .eq_ignore_ascii_case(b"http");
        if connects != 0 || !plain {
            return 0;
        }
        // libcurl does not say which socket a reused connection is (CURLINFO_ACTIVESOCKET
        // is only set once the transfer is done): it is the one of this thread's sockets
        // with these ports.
        match socket_with_ports(local_port, primary_port) {
            Some(fd) if has_bytes_waiting(fd) => CURL_PREREQFUNC_ABORT,
            _ => 0,
        }
    }
    extern "C" fn sockopt(
        _clientp: *mut libc::c_void,
        fd: curl_sys::curl_socket_t,
        _purpose: curl_sys::curlsocktype,
    ) -> libc::c_int {
        let _ = SOCKETS.try_with(|s| {
            let mut s = s.borrow_mut();
            s.retain(|(known, _)| *known != fd);
            s.push((fd, None));
        });
        0
    }
    extern "C" fn closesocket(
        _clientp: *mut libc::c_void,
        fd: curl_sys::curl_socket_t,
    ) -> libc::c_int {
        let _ = SOCKETS.try_with(|s| s.borrow_mut().retain(|(known, _)| *known != fd));
        // SAFETY: libcurl hands over a socket it opened and will not use again.
        unsafe { libc::close(fd) }
    }
    type Sockopt = extern "C" fn(
        *mut libc::c_void,
        curl_sys::curl_socket_t,
        curl_sys::curlsocktype,
    ) -> libc::c_int;
    type Closesocket = extern "C" fn(*mut libc::c_void, curl_sys::curl_socket_t) -> libc::c_int;
    type Prereq = extern "C" fn(
        *mut libc::c_void,
        *mut libc::c_char,
        *mut libc::c_char,
        libc::c_int,
        libc::c_int,
    ) -> libc::c_int;
    let raw = easy.raw();
    // SAFETY: a valid easy handle; a function pointer of libcurl's prototype, and the handle
    // itself as its data.
    let rc = unsafe {
        let mut rc = curl_sys::curl_easy_setopt(raw, CURLOPT_PREREQFUNCTION, prereq as Prereq);
        if rc == curl_sys::CURLE_OK {
            rc = curl_sys::curl_easy_setopt(raw, CURLOPT_PREREQDATA, raw as *mut libc::c_void);
        }
        if rc == curl_sys::CURLE_OK {
            rc = curl_sys::curl_easy_setopt(
                raw,
                curl_sys::CURLOPT_SOCKOPTFUNCTION,
                sockopt as Sockopt,
            );
        }
        if rc == curl_sys::CURLE_OK {
            rc = curl_sys::curl_easy_setopt(
                raw,
                curl_sys::CURLOPT_CLOSESOCKETFUNCTION,
                closesocket as Closesocket,
            );
        }
        rc
    };
    if rc == curl_sys::CURLE_OK {
        Ok(())
    } else {
        Err(curl::Error::new(rc))
    }
}

/// Speak only http and https, whatever the URL says (a redirect is checked by the scope too).
fn only_http(easy: &mut Easy2<Sink>) -> Result<(), curl::Error> {
    // CURLOPT_PROTOCOLS_STR (libcurl 7.85) is not wrapped by the crate; CURLOPT_PROTOCOLS is
    // the older bitmask form of the same setting.
    const CURLPROTO_HTTP: libc::c_long = 1;
    const CURLPROTO_HTTPS: libc::c_long = 2;
    // SAFETY: a valid easy handle and a long-valued option.
    let rc = unsafe {
        curl_sys::curl_easy_setopt(
            easy.raw(),
            curl_sys::CURLOPT_PROTOCOLS,
            CURLPROTO_HTTP | CURLPROTO_HTTPS,
        )
    };
    if rc == curl_sys::CURLE_OK {
        Ok(())
    } else {
        Err(curl::Error::new(rc))
    }
}

/// Whether `v` can go into a request header as it is.
fn header_safe(v: &str) -> bool {
    let v = v.trim();
    !v.is_empty() && v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

fn transport(url: &Url, message: String) -> FetchError {
    FetchError::Transport {
        url: url.to_string(),
        message,
    }
}

/// The head of the response being received (the last one: a `1xx` is replaced by what follows).
#[derive(Debug, Default)]
struct Head {
    status: u16,
    http10: bool,
    content_length: Option<u64>,
    transfer_encoding: Vec<String>,
    etag: Option<String>,
    last_modified: Option<String>,
    content_type: Option<String>,
    content_encoding: Option<String>,
    location: Option<String>,
    retry_after: Option<String>,
}

/// The handler of one attempt: reads the head as libcurl hands it over, writes and hashes the
/// body, and keeps the first reason it stopped the transfer.
#[derive(Default)]
struct Sink {
    url: String,
    folder: PathBuf,
    create: Option<fn(&Path) -> io::Result<NewFile>>,
    expected: Expected,
    max_size: u64,
    head: Head,
    head_bytes: usize,
    interim: u32,
    /// The final response's head is complete (what follows is body, then trailers).
    head_done: bool,
    part: Option<NewFile>,
    /// Body bytes hashed and not yet written to `part` (under [`WRITE_BATCH`]); the buffer
    /// stays with the easy handle for its next transfer.
    pending: Vec<u8>,
    hasher: Option<Hasher>,
    received: u64,
    /// Bytes of an error or redirect body, dropped.
    dropped: u64,
    /// Why this handler stopped the transfer.
    error: Option<FetchError>,
}

impl Sink {
    fn new(url: &Url, folder: PathBuf, request: &Request, max_size: u64) -> Sink {
        Sink {
            url: url.to_string(),
            folder,
            create: Some(request.create),
            expected: request.expected.clone(),
            max_size,
            ..Sink::default()
        }
    }

    fn stop(&mut self, error: FetchError) -> bool {
        self.error.get_or_insert(error);
        false
    }

    fn stop_framing(&mut self, why: &str) -> bool {
        let message = format!("refused response framing: {why}");
        self.stop(FetchError::Transport {
            url: self.url.clone(),
            message,
        })
    }

    /// Whether the final response carries the representation (a body to keep).
    fn keeps_body(&self) -> bool {
        (200..=299).contains(&self.head.status) && self.head.status != 206
    }

    /// The final response's head is complete: check its framing and its length.
    fn head_complete(&mut self) -> bool {
        self.head_done = true;
        let te = &self.head.transfer_encoding;
        if !te.is_empty() {
            if te.len() > 1 || !te[0].eq_ignore_ascii_case("chunked") {
                let te = te.join(", ");
                return self.stop_framing(&format!(
                    "Transfer-Encoding {te:?} (only a single \"chunked\" is accepted)"
                ));
            }
            if self.head.content_length.is_some() {
                return self.stop_framing(
                    "both Transfer-Encoding and Content-Length (RFC 9112 §6.3: a sign of \
                     request smuggling)",
                );
            }
            if self.head.http10 {
                return self.stop_framing("Transfer-Encoding on an HTTP/1.0 response");
            }
        }
        if self.keeps_body() {
            if let Err(e) = check_announced(&self.url, &self.expected, self.head.content_length) {
                return self.stop(e);
            }
            if let Some(cl) = self.head.content_length {
                if self.max_size > 0 && cl > self.max_size {
                    let (url, max) = (self.url.clone(), self.max_size);
                    return self.stop(FetchError::TooLarge { url, max });
                }
            }
        }
        true
    }

    /// The outcome of the attempt, from libcurl's result and what this handler saw.
    fn conclude<T>(
        &mut self,
        get: &Get<'_, T>,
        status: u16,
        result: Result<(), curl::Error>,
        cfg: &crate::net::HttpConfig,
    ) -> Step {
        let url = get.current.to_string();
        if let Some(e) = self.error.take() {
            return Step::Done(Err(e));
        }
        if let Err(e) = &result {
            if e.code() == curl_sys::CURLE_ABORTED_BY_CALLBACK && !self.head_done {
                return Step::Stale;
            }
        }
        if let Err(e) = result {
            // An error or redirect body cut short by us: the status decides.
            let dropped_body = e.is_write_error() && !self.keeps_body() && status != 0;
            if !dropped_body {
                return self.curl_failure(get, e, cfg);
            }
        }
        if is_redirect(status) {
            return Step::Redirect {
                status,
                location: self.head.location.take(),
            };
        }
        if status == 304 && !get.request.validators.is_empty() {
            return Step::Done(Err(FetchError::Status { url, status }));
        }
        if is_retryable_status(status) {
            let retry_after = (self.head.retry_after.as_deref())
                .and_then(|v| parse_retry_after(v, jiff::Timestamp::now()));
            return Step::Retry(FetchError::Status { url, status }, retry_after);
        }
        if !self.keeps_body() {
            return Step::Done(Err(FetchError::Status { url, status }));
        }
        let part = match self.part.take() {
            Some(mut part) => {
                if let Err(e) = part.write_all(&self.pending) {
                    return Step::Done(Err(staging_error(&part.describe(), e)));
                }
                self.pending.clear();
                part
            }
            // No body at all: an empty representation.
            None => match self.new_part() {
                Ok(part) => part,
                Err(e) => return Step::Done(Err(e)),
            },
        };
        if let Some(announced) = self.head.content_length {
            if self.received < announced {
                return Step::Retry(truncated(url, self.received, announced), None);
            }
        }
        let hasher = self
            .hasher
            .take()
            .unwrap_or_else(|| hasher_for(&self.expected));
        let computed = match verify(url, &self.expected, self.received, hasher) {
            Ok(computed) => computed,
            Err(e) => return Step::Done(Err(e)),
        };
        let head = std::mem::take(&mut self.head);
        Step::Done(Ok(Staged {
            file: part,
            computed,
            final_url: get.current.clone(),
            etag: head.etag,
            last_modified: head.last_modified,
            media_type: head.content_type,
            content_encoding: head
                .content_encoding
                .filter(|e| !e.eq_ignore_ascii_case("identity")),
        }))
    }

    /// What a libcurl error comes to: a failure another attempt may mend, or a final one.
    fn curl_failure<T>(
        &self,
        get: &Get<'_, T>,
        e: curl::Error,
        cfg: &crate::net::HttpConfig,
    ) -> Step {
        let url = get.current.to_string();
        let detail = e
            .extra_description()
            .map(str::to_string)
            .unwrap_or_else(|| e.description().to_string());
        let message = |m: String| FetchError::Transport {
            url: url.clone(),
            message: m,
        };
        if e.is_filesize_exceeded() {
            let max = cfg.max_size;
            return Step::Done(Err(FetchError::TooLarge { url, max }));
        }
        if e.is_operation_timedout() {
            // The connect timeout, `--max-time`, or the low-speed cut-off.
            if detail.contains("too slow") && self.head_done {
                return Step::Retry(
                    message(format!(
                        "transfer cut off: under --min-rate {} bytes/s for {} s ({} bytes \
                         received)",
                        cfg.min_rate,
                        cfg.timeout.as_secs_f64(),
                        self.received
                    )),
                    None,
                );
            }
            if let Some(max_time) = cfg.max_time.filter(|_| self.head_done) {
                return Step::Done(Err(past_max_time(url, max_time, self.received)));
            }
            let timeout = cfg.timeout;
            return Step::Retry(FetchError::Timeout { url, timeout }, None);
        }
        // CURLE_TOO_LARGE (libcurl 8.6 and later; out of memory before).
        const CURLE_TOO_LARGE: curl_sys::CURLcode = 100;
        if (e.is_out_of_memory() || e.code() == CURLE_TOO_LARGE) && !self.head_done {
            // libcurl's answer to a header line longer than it takes (100 KiB).
            return Step::Done(Err(message(format!(
                "response head too large: a header line over libcurl's limit ({detail})"
            ))));
        }
        if e.is_partial_file() {
            if let Some(announced) = self.head.content_length {
                return Step::Retry(truncated(url, self.received, announced), None);
            }
        }
        let retryable = e.is_couldnt_resolve_host()
            || e.is_couldnt_connect()
            || e.is_partial_file()
            || e.is_got_nothing()
            || e.is_send_error()
            || e.is_recv_error()
            || e.is_http2_error()
            || e.is_http2_stream_error()
            || e.is_again()
            || e.code() == curl_sys::CURLE_FTP_WEIRD_SERVER_REPLY;
        let text = match (e.is_couldnt_resolve_host(), self.head_done) {
            (true, _) => format!("host not found ({detail})"),
            (false, true) => format!("{detail} (after {} bytes of the body)", self.received),
            (false, false) => detail,
        };
        let error = message(crate::net::agent::tls_hint(&get.current, text));
        if retryable {
            Step::Retry(error, None)
        } else {
            // TLS, unsupported protocols, malformed responses: the same request fails the
            // same way.
            Step::Done(Err(error))
        }
    }

    fn new_part(&self) -> Result<NewFile, FetchError> {
        let create = self.create.unwrap_or(NewFile::create);
        create(&self.folder).map_err(|e| staging_error(&self.folder, e))
    }
}

impl Handler for Sink {
    fn header(&mut self, line: &[u8]) -> bool {
        self.head_bytes += line.len();
        if self.head_bytes > MAX_HEAD {
            let message = format!(
                "response head (interim responses and trailers included) over {MAX_HEAD} bytes"
            );
            return self.stop(FetchError::Transport {
                url: self.url.clone(),
                message,
            });
        }
        if self.head_done {
            // Trailer fields, bounded with the head; nothing in them is used.
            return true;
        }
        if line.starts_with(b"HTTP/") {
            let status = line
                .split(|&b| b == b' ')
                .nth(1)
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.parse::<u16>().ok());
            let Some(status) = status else {
                return self.stop_framing("malformed status line");
            };
            self.head = Head {
                status,
                http10: line.starts_with(b"HTTP/1.0"),
                ..Head::default()
            };
            return true;
        }
        if line == b"\r\n" || line == b"\n" {
            if (100..=199).contains(&self.head.status) {
                self.interim += 1;
                if self.interim > MAX_INTERIM {
                    return self
                        .stop_framing(&format!("more than {MAX_INTERIM} interim (1xx) responses"));
                }
                return true;
            }
            return self.head_complete();
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return true;
        };
        let name = String::from_utf8_lossy(&line[..colon]).to_ascii_lowercase();
        let raw = &line[colon + 1..];
        let value = || {
            let v = String::from_utf8_lossy(raw).trim().to_string();
            (!v.is_empty()).then_some(v)
        };
        match name.trim_end() {
            "content-length" => {
                let text = String::from_utf8_lossy(raw);
                let Ok(n) = text.trim().parse::<u64>() else {
                    return self.stop_framing(&format!("Content-Length {:?}", text.trim()));
                };
                if self.head.content_length.is_some_and(|m| m != n) {
                    return self.stop_framing("two different Content-Length values");
                }
                self.head.content_length = Some(n);
            }
            "transfer-encoding" => {
                // Bytes outside ASCII make the whole value unusable: kept as they are, so the
                // check above refuses it rather than seeing no Transfer-Encoding.
                let text = String::from_utf8_lossy(raw);
                for part in text.split(',') {
                    let part = part.trim();
                    if !part.is_empty() || !raw.is_ascii() {
                        self.head.transfer_encoding.push(part.to_string());
                    }
                }
            }
            "etag" => self.head.etag = value(),
            "last-modified" => self.head.last_modified = value(),
            "content-type" => self.head.content_type = value(),
            "content-encoding" => self.head.content_encoding = value(),
            "location" => self.head.location = value(),
            "retry-after" => self.head.retry_after = value(),
            _ => {}
        }
        true
    }

    fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        if self.error.is_some() {
            return Ok(0);
        }
        if !self.keeps_body() {
            // An error page or a redirect's note: read (a little) so the connection can be
            // reused, kept nowhere.
            self.dropped += data.len() as u64;
            return Ok(if self.dropped > MAX_DROPPED_BODY {
                0
            } else {
                data.len()
            });
        }
        if self.part.is_none() {
            match self.new_part() {
                Ok(part) => self.part = Some(part),
                Err(e) => {
                    self.stop(e);
                    return Ok(0);
                }
            }
            self.hasher = Some(hasher_for(&self.expected));
        }
        self.received += data.len() as u64;
        if let Err(e) = check_received(&self.url, &self.expected, self.received) {
            self.stop(e);
            return Ok(0);
        }
        if self.max_size > 0 && self.received > self.max_size {
            let (url, max) = (self.url.clone(), self.max_size);
            self.stop(FetchError::TooLarge { url, max });
            return Ok(0);
        }
        if let Some(hasher) = self.hasher.as_mut() {
            hasher.update(data);
        }
        self.pending.extend_from_slice(data);
        if self.pending.len() < WRITE_BATCH {
            return Ok(data.len());
        }
        let part = self.part.as_mut().expect("created above");
        let written = part.write_all(&self.pending);
        self.pending.clear();
        if let Err(e) = written {
            let e = staging_error(&part.describe(), e);
            self.stop(e);
            return Ok(0);
        }
        Ok(data.len())
    }
}
