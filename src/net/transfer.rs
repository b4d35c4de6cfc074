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

use crate::model::Validators;
use crate::net::agent::{is_redirect, is_retryable_status, parse_retry_after, Hops, Retries};
use crate::net::easy::{configure_get, failure, transport, Head, MAX_DROPPED_BODY};
use crate::net::easy::{host_key, http_version, CURL_HTTP_VERSION_2_0};
use crate::net::fetch::{
    check_announced, check_media_type, check_received, hasher_for, past_max_time, staging_error,
    truncated, verify, worker_folder,
};
use crate::net::in_step::{self, InStep, Verdict};
use crate::net::sockets::{self, Ports};
use crate::net::{Expected, FetchError, Http, Scope, Staged};
use crate::rs::digest::Algorithm;
use crate::rs::digest::Hasher;
use crate::store::new_file::NewFile;
use curl::easy::{Easy2, Handler, WriteError};
use curl::multi::{Easy2Handle, Multi};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

pub use crate::net::easy::MAX_HEAD;
/// The longest one wait on the sockets lasts, so that head deadlines and paused retries are
/// seen on time whatever libcurl's own timers say.
const MAX_WAIT: Duration = Duration::from_millis(250);

/// How many times one GET may be lost with its connection before any of its response came
/// ([`Step::Lost`]) and go again without spending a try: enough for a connection closed under
/// it by another stream's error or a GOAWAY now and then, few enough that a server that drops
/// every connection costs each resource at most this many requests more.
const MAX_LOST: u8 = 3;

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
    pub(crate) fn into_result(self) -> Result<Staged<NewFile>, FetchError> {
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
    /// `--bwlimit`'s share of each GET in flight, in bytes a second
    /// ([`Transfers::share_bandwidth`]): `--min-rate` is held under it.
    each_rate: Option<u64>,
    /// Responses read on reused connections, held until their connection is seen in step
    /// (`net::in_step`).
    held: InStep<(Get<'h, T>, Read)>,
    /// Hosts (`host:port`) whose connections had bytes nobody asked for: a new connection for
    /// every request to them for the rest of the run.
    no_reuse: std::collections::HashSet<String>,
    /// GETs in flight once a response came over HTTP/2 ([`Transfers::multiplexing`]): they
    /// share the connection as streams. None: as many as `capacity` (HTTP/1.1 connections).
    streams: Option<usize>,
    /// Threads that share `--bwlimit` with this one, each with as many GETs in flight.
    sharing: usize,
    /// A response came over HTTP/2: the next GETs wait for its connection rather than open one
    /// of their own (`CURLOPT_PIPEWAIT`).
    multiplexed: bool,
    /// Hosts (`host:port`) that answered over HTTP/2: their GETs share connections.
    h2_hosts: std::collections::HashSet<String>,
    /// A response came over HTTP/2 on this handle's connections (or they were kept from GETs
    /// before): the server's SETTINGS are known, and so how many streams it allows. Until then
    /// a host known to speak HTTP/2 gets only the first GETs, sharing one new connection (a
    /// first flight of streams past the server's limit would be refused).
    settings_known: bool,
    /// A cleartext `http://` GET ran here: the multi handle (its sockets watched from this
    /// thread) is not given back to the pool.
    plain: bool,
    /// [`Transfers::one_connection`] holds: one connection to a host until a response from
    /// it comes over HTTP/1.1; then as many as GETs at first (`first_capacity`).
    one: bool,
    first_capacity: usize,
    /// A response came over HTTP/1.1 (resources on a host other than the documents'): no GET
    /// is held for SETTINGS any more, whatever its host.
    h1_seen: bool,
}

impl<T> Drop for Transfers<'_, T> {
    /// The multi handle, and the connections in it, go back to the pool for the next GETs.
    fn drop(&mut self) {
        if self.plain {
            return;
        }
        for slot in &mut self.running {
            if let Some(Running { handle, .. }) = slot.take() {
                let _ = self.multi.remove2(handle);
            }
        }
        let multi = std::mem::replace(&mut self.multi, Multi::new());
        self.http.pool().keep(multi);
    }
}

/// One GET and where it stands: the hop being fetched, the retries spent.
struct Get<'h, T> {
    token: T,
    request: Request,
    /// The hop being fetched, and how it was reached.
    hops: Hops,
    retries: Retries<'h>,
    /// `--delay`'s turn for this attempt has been taken already.
    turn_taken: bool,
    /// Send it on a new connection: a kept-alive one had bytes nobody asked for.
    fresh: bool,
    /// Times it was lost with a shared HTTP/2 connection before its response began.
    lost: u8,
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
        // With the connections of the documents before (`net::pool`).
        let (mut multi, kept) = http.pool().take();
        // Idle connections kept for reuse: one per GET in flight, as a browser would.
        let _ = multi.set_max_connects(capacity.max(4));
        // Never more connections to one host than GETs at first: over HTTP/2, a GET that finds
        // the connections' streams all taken (a server that allows few) waits for one rather
        // than opening another connection.
        let _ = multi.set_max_host_connections(capacity);
        Transfers {
            http,
            staging,
            multi,
            capacity,
            running: (0..capacity).map(|_| None).collect(),
            paused: Vec::new(),
            ended: Vec::new(),
            spare: Vec::new(),
            held: InStep::new(),
            no_reuse: Default::default(),
            each_rate: http.config().bwlimit.map(|r| (r / capacity as u64).max(1)),
            streams: None,
            sharing: 1,
            multiplexed: false,
            h2_hosts: http.pool().h2_hosts(),
            settings_known: kept,
            plain: false,
            one: false,
            first_capacity: capacity,
            h1_seen: false,
        }
    }

    /// Up to `streams` GETs in flight, once a response shows the source speaks HTTP/2: the
    /// requests wait for its connection (`CURLOPT_PIPEWAIT`) and go out on it as streams, as
    /// many as the server allows (`SETTINGS_MAX_CONCURRENT_STREAMS`; libcurl queues the rest).
    /// Until then (and for a source that answers over HTTP/1.1) each GET has a connection of
    /// its own, as before: waiting for a connection whose protocol is not known yet would hold
    /// a request behind one that trickles.
    pub(crate) fn multiplexing(&mut self, streams: usize) {
        self.streams = Some(streams.max(1));
        self.streams_now();
    }

    /// One connection to a host (RFC 9113 §9.1: a client should not open more than one HTTP/2
    /// connection to a host), for a source whose documents came over HTTP/2: libcurl would
    /// otherwise open another when the first has no stream free (a server that allows few),
    /// and send it a first flight of streams before the server's SETTINGS say how many it
    /// takes. A host whose response comes over HTTP/1.1 gets its connections back.
    pub(crate) fn one_connection(&mut self) {
        self.one = true;
        let _ = self.multi.set_max_host_connections(1);
    }

    /// `--bwlimit` shared by `in_flight` GETs (those of every thread; `net::bwlimit` holds the
    /// whole run under it): a GET slower than `--min-rate` is a trickle only under half its
    /// share, or a limit below `--min-rate` x `--jobs` would cut every transfer.
    pub(crate) fn share_bandwidth(&mut self, in_flight: usize) {
        self.sharing = in_flight.div_ceil(self.capacity).max(1);
        let n = in_flight.max(1) as u64;
        self.each_rate = self.http.config().bwlimit.map(|r| (r / n).max(1));
    }

    /// Whether another GET can start.
    pub fn has_room(&self) -> bool {
        // A new connection to a host known to speak HTTP/2 carries one GET until the server's
        // SETTINGS are known: a first flight past its stream limit is refused, and libcurl
        // retries a refused stream on a new connection, which the waiting GETs then flood the
        // same way (RFC 9113 §5.1.2).
        let capacity = match self.multiplexed && !self.settings_known && !self.h1_seen {
            true => 1,
            false => self.capacity,
        };
        self.in_flight() + self.paused.len() + self.ended.len() < capacity
            && self.held.len() < self.capacity * in_step::HELD_PER_SLOT
    }

    /// A response came over `version` (`CURLINFO_HTTP_VERSION`): at the first one over HTTP/2
    /// (or later) with [`Transfers::multiplexing`] asked for, the GETs in flight become the
    /// streams asked for (more than `--jobs`, or fewer: `--streams 1`), and `--bwlimit`'s
    /// share of each is set to match.
    fn protocol_seen(&mut self, url: &Url, version: libc::c_long) {
        if version < CURL_HTTP_VERSION_2_0 {
            // A host of HTTP/1.1 connections (the resources elsewhere than the documents):
            // a request each, as many as at first.
            if std::mem::take(&mut self.one) {
                let _ = self.multi.set_max_host_connections(self.first_capacity);
            }
            self.h1_seen = true;
            return;
        }
        let host = host_key(url);
        if self.h2_hosts.insert(host.clone()) {
            self.http.pool().speaks_h2(host);
        }
        self.settings_known = true;
        self.streams_now();
    }

    /// A host answered over HTTP/2 (here, or to a document or another thread before): with
    /// [`Transfers::multiplexing`] asked for, the GETs in flight become the streams asked for.
    fn streams_now(&mut self) {
        if self.streams.is_none() || self.h2_hosts.is_empty() {
            return;
        }
        self.multiplexed = true;
        if !self.settings_known {
            return;
        }
        if let Some(streams) = self.streams.filter(|s| *s != self.capacity) {
            let sharing = self.sharing;
            self.capacity = streams;
            self.share_bandwidth(streams * sharing);
        }
    }

    /// Whether nothing is in flight, paused, held or waiting to be collected.
    pub fn is_idle(&self) -> bool {
        self.in_flight() == 0
            && self.paused.is_empty()
            && self.ended.is_empty()
            && self.held.is_empty()
    }

    fn in_flight(&self) -> usize {
        self.running.iter().filter(|r| r.is_some()).count()
    }

    /// Start a GET; its outcome comes from a later [`Transfers::wait`]. The caller keeps within
    /// [`Transfers::has_room`] (beyond it the GET still runs, as one more).
    pub fn start(&mut self, request: Request, token: T) {
        let get = Get {
            token,
            hops: Hops::new(&request.url),
            request,
            retries: self.http.retries(),
            turn_taken: false,
            fresh: false,
            lost: 0,
        };
        self.launch(get);
    }

    /// Wait until at least one GET has ended (or nothing is left in flight, or one ended into
    /// the responses held until their connection is seen in step, leaving room for another),
    /// and return those that have.
    pub fn wait(&mut self) -> Vec<(T, Outcome)> {
        loop {
            self.launch_due();
            self.sort_out_held();
            if !self.ended.is_empty() {
                return std::mem::take(&mut self.ended);
            }
            if self.in_flight() == 0 {
                let next = self.paused.iter().map(|(at, _)| *at);
                let Some(next) = next.chain(self.held.next_due(Instant::now())).min() else {
                    return Vec::new();
                };
                let wait = next.saturating_duration_since(Instant::now());
                std::thread::sleep(wait.min(MAX_WAIT));
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
            let freed = !finished.is_empty();
            for (token, result) in finished {
                self.finish(token, result);
            }
            self.check_head_deadlines();
            if freed && self.ended.is_empty() && self.has_room() {
                // Ended into the held responses: room for the caller's next GETs meanwhile.
                return Vec::new();
            }
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
                    .filter(|r| !r.handle.get_ref().head.complete)
                    .map(|r| r.head_deadline)
                    .chain(self.held.next_due(now)),
            ) {
                wait = wait.min(at.saturating_duration_since(now));
            }
            if let Err(e) = self.multi.wait(&mut [], wait) {
                self.fail_all_running(&format!("libcurl: {e}"));
            }
        }
    }

    /// Hand over the held responses whose connection was seen in step; fetch again, on new
    /// connections, those whose connection was not.
    fn sort_out_held(&mut self) {
        if self.held.is_empty() {
            return;
        }
        if self.in_flight() == 0 {
            // Nothing outstanding on any connection (a transfer given up mid-way leaves its
            // connection marked).
            sockets::none_busy();
        }
        for ((get, read), verdict) in self.held.sort_out(Instant::now()) {
            match verdict {
                Verdict::InStep => self.end(get, read),
                Verdict::Suspect | Verdict::OutOfStep => {
                    if verdict == Verdict::OutOfStep {
                        self.no_reuse.insert(host_key(&get.hops.current));
                    }
                    drop(read);
                    self.again_on_a_new_connection(get);
                }
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
        if let Err(e) = get.hops.check(&get.request.scope) {
            return self.end(get, Err(e));
        }
        if self.http.is_mapped(&get.hops.current) {
            let folder = worker_folder(self.staging);
            let r = folder.and_then(|folder| {
                crate::net::fetch::fetch_mapped(
                    self.http,
                    &get.hops.current,
                    &folder,
                    &get.request.expected,
                    get.request.create,
                )
            });
            return self.end(get, r);
        }
        if !get.turn_taken {
            get.turn_taken = true;
            if let Some(at) = self
                .http
                .take_turn(get.hops.current.host_str().unwrap_or(""))
            {
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
            let error = transport(&get.hops.current, format!("libcurl: {e}"));
            return self.end(get, Err(error));
        }
        self.plain |= get.hops.current.scheme() == "http";
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
                let error = transport(&get.hops.current, format!("libcurl: {e}"));
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
        let url = &get.hops.current;
        let mut pending = std::mem::take(&mut easy.get_mut().pending);
        pending.clear();
        *easy.get_mut() = Sink {
            pending,
            ..Sink::new(url, folder, &get.request, cfg.max_size)
        };
        let no_reuse = self.no_reuse.contains(&host_key(url));
        let (validators, fresh) = (&get.request.validators, get.fresh || no_reuse);
        configure_get(easy, cfg, self.http.user_agent(), url, validators, fresh)?;
        if no_reuse {
            easy.forbid_reuse(true)?;
        }
        if self.multiplexed {
            easy.pipewait(true)?;
        }
        // Reads of up to this much a system call for a body that may be large (libcurl's
        // default is 16 KiB: eight times the `recvfrom` and `poll` calls of a large body; a
        // small one is left with the default, which libcurl need not allocate again).
        if (get.request.expected.length).is_none_or(|n| n > DEFAULT_RECEIVE_BUFFER) {
            easy.buffer_size(RECEIVE_BUFFER)?;
        }
        // A trickle is cut: under `--min-rate` bytes a second over a `--timeout` window (the
        // head included; a silent server is the slowest trickle).
        let min_rate = match self.each_rate {
            Some(share) => cfg.min_rate.min(share / 2),
            None => cfg.min_rate,
        };
        easy.low_speed_limit(min_rate.clamp(1, u32::MAX as u64) as u32)?;
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
        let (raw, kept_alive) = (handle.raw() as usize, kept_alive(handle.raw()));
        let mut easy = match self.multi.remove2(handle) {
            Ok(easy) => easy,
            Err(e) => {
                let error = transport(&get.hops.current, format!("libcurl: {e}"));
                return self.after(get, Step::Retry(error, None));
            }
        };
        let status = easy.response_code().unwrap_or(0) as u16;
        if status != 0 {
            self.protocol_seen(&get.hops.current, http_version(easy.raw()));
        }
        // libcurl's own words for a failure are in the handle's error buffer.
        let result = result.map_err(|mut e| {
            if let Some(s) = easy.take_error_buf() {
                e.set_extra(s);
            }
            e
        });
        let connection = Connection::of(&easy, raw, &get, kept_alive);
        let mut sink = std::mem::take(easy.get_mut());
        let step = sink.conclude(&get, status, result, self.http.config());
        easy.get_mut().pending = sink.pending;
        self.spare.push(easy);
        match connection {
            Some(c) => self.after_reused(get, step, c),
            None => self.after(get, step),
        }
    }

    /// Carry on after an attempt on a reused plain-http connection (`net::in_step`): a
    /// response no digest proves, or one that contradicts what the list declares, is held until
    /// its connection is seen in step (asked for again on a new connection when it was not)
    /// before it counts as the source's.
    fn after_reused(&mut self, get: Get<'h, T>, step: Step, c: Connection) {
        match step {
            Step::Stale if sockets::refused_for_surplus(c.ports) => {
                self.no_reuse.insert(host_key(&get.hops.current));
                self.after(get, Step::Stale);
            }
            // A response that contradicts its list is not taken as the connection's fault
            // by itself (a resource that changed since its list was written gives the same):
            // held as any unproven one, it stands once the connection is seen in step (one
            // GET, not two), and is asked for again only when the connection was not.
            Step::Done(read)
                if (read.is_ok() && !proven(&get.request.expected))
                    || read.as_ref().is_err_and(|e| e.is_mismatch() && !get.fresh) =>
            {
                match sockets::serial_of(c.ports).filter(|_| c.kept_alive) {
                    Some(serial) => (self.held).hold(serial, c.settle, (get, read)),
                    // Closed as soon as it was read (the server's `Connection: close`, or
                    // bytes past the end of the response, which libcurl drops): it cannot be
                    // seen in step.
                    None => {
                        drop(read);
                        self.again_on_a_new_connection(get);
                    }
                }
            }
            step => self.after(get, step),
        }
    }

    /// Ask for `get` again from its first URL, on a new connection (its turn under `--delay`
    /// taken again; no retry spent: the source answered).
    fn again_on_a_new_connection(&mut self, mut get: Get<'h, T>) {
        get.hops = Hops::new(&get.request.url);
        get.fresh = true;
        self.launch(get);
    }

    /// Fail the GETs whose response head has not come within `--timeout` of their request.
    /// One still waiting for a connection or a stream to go out on (over HTTP/2, behind a
    /// server's `SETTINGS_MAX_CONCURRENT_STREAMS`) has not asked yet: its time starts again.
    fn check_head_deadlines(&mut self) {
        let now = Instant::now();
        let timeout = self.http.config().timeout;
        for slot in 0..self.running.len() {
            let late = self.running[slot]
                .as_ref()
                .is_some_and(|r| !r.handle.get_ref().head.complete && r.head_deadline <= now);
            if !late {
                continue;
            }
            if let Some(r) = self.running[slot]
                .as_mut()
                .filter(|r| !sent(r.handle.raw()))
            {
                r.head_deadline = now + timeout;
                continue;
            }
            let Running { get, handle, .. } = self.running[slot].take().expect("running");
            if let Ok(mut easy) = self.multi.remove2(handle) {
                // Dropped mid-response: libcurl closes the connection.
                *easy.get_mut() = Sink::default();
                self.spare.push(easy);
            }
            let error = FetchError::Timeout {
                url: get.hops.current.to_string(),
                timeout,
            };
            self.after(get, Step::Retry(error, None));
        }
    }

    fn fail_all_running(&mut self, message: &str) {
        for slot in 0..self.running.len() {
            if let Some(Running { get, handle, .. }) = self.running[slot].take() {
                let _ = self.multi.remove2(handle);
                let error = transport(&get.hops.current, message.to_string());
                self.after(get, Step::Retry(error, None));
            }
        }
    }

    /// Carry on after one attempt at `get`'s current hop.
    fn after(&mut self, mut get: Get<'h, T>, step: Step) {
        match step {
            Step::Done(r) => self.end(get, r),
            // One stream of a multiplexed connection that ended under it (another stream's
            // error, a GOAWAY past this stream, the server closing it): nothing of this
            // response came, so this resource is not at fault. Again at once, on whichever
            // connection is open by then, with no try spent (RFC 9113 §6.8: a stream the
            // server did not process may be retried); a few times only.
            Step::Lost(_)
                if get.lost < MAX_LOST && self.h2_hosts.contains(&host_key(&get.hops.current)) =>
            {
                get.lost += 1;
                get.hops = Hops::new(&get.request.url);
                self.launch(get);
            }
            Step::Lost(error) => self.after(get, Step::Retry(error, None)),
            // Not sent: again, at no cost, on a new connection.
            Step::Stale => {
                get.fresh = true;
                get.turn_taken = true;
                self.launch(get);
            }
            Step::Redirect { status, location } => {
                let max = self.http.config().max_redirects;
                let first = &get.request.url;
                match get.hops.redirect(first, status, location.as_deref(), max) {
                    Ok(()) => self.launch(get),
                    Err(e) => self.end(get, Err(e)),
                }
            }
            Step::Retry(error, retry_after) => match get.retries.next_wait(retry_after) {
                Some(wait) => {
                    // A host that asks for time gets it from every transfer, not this one only.
                    if matches!(
                        error,
                        FetchError::Status {
                            status: 429 | 503,
                            ..
                        }
                    ) {
                        let host = get.hops.current.host_str().unwrap_or("");
                        self.http.hold_host(host, wait);
                    }
                    // Another attempt starts over from the URL asked for.
                    get.hops = Hops::new(&get.request.url);
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

/// The reused plain-http connection an attempt was read on.
struct Connection {
    ports: Ports,
    settle: Duration,
    /// Back in libcurl's pool after the response, not closed.
    kept_alive: bool,
}

impl Connection {
    /// The connection of `easy`'s attempt, now done, when it was a reused plain-http one; a
    /// plain-http one is marked as having no request outstanding either way (only those are
    /// marked before a request goes out, `net::sockets::before_request`).
    fn of<T>(
        easy: &Easy2<Sink>,
        raw: usize,
        get: &Get<'_, T>,
        kept_alive: bool,
    ) -> Option<Connection> {
        if get.hops.current.scheme() != "http" {
            return None;
        }
        let local = easy.local_port().ok().filter(|p| *p != 0)?;
        let remote = easy.primary_port().ok().filter(|p| *p != 0)?;
        let ports = (local as libc::c_int, remote as libc::c_int);
        sockets::after_response(raw, ports);
        if easy.num_connects().ok()? != 0 {
            return None;
        }
        let ttfb = easy
            .starttransfer_time()
            .ok()?
            .saturating_sub(easy.pretransfer_time().ok()?);
        Some(Connection {
            ports,
            settle: in_step::settle(ttfb),
            kept_alive,
        })
    }
}

/// Whether the connection of a transfer just done went back to libcurl's pool
/// (`CURLINFO_ACTIVESOCKET`, asked while the handle is still in the multi handle: libcurl
/// 7.x answers only then).
fn kept_alive(handle: *mut curl_sys::CURL) -> bool {
    const CURLINFO_ACTIVESOCKET: curl_sys::CURLINFO = 0x50_0000 + 44;
    let mut socket: curl_sys::curl_socket_t = curl_sys::CURL_SOCKET_BAD;
    // SAFETY: a valid easy handle; the info is one socket value.
    let rc = unsafe { curl_sys::curl_easy_getinfo(handle, CURLINFO_ACTIVESOCKET, &mut socket) };
    rc == curl_sys::CURLE_OK && socket != curl_sys::CURL_SOCKET_BAD
}

/// Whether a transfer in flight has sent its request (`CURLINFO_PRETRANSFER_TIME` is set when
/// it goes out; before, it waits for a connection, or for a connection being made, which
/// libcurl's connect timeout bounds).
fn sent(handle: *mut curl_sys::CURL) -> bool {
    const CURLINFO_PRETRANSFER_TIME: curl_sys::CURLINFO = 0x30_0000 + 6;
    let mut seconds: libc::c_double = 0.0;
    // SAFETY: a valid easy handle; the info is one double.
    let rc =
        unsafe { curl_sys::curl_easy_getinfo(handle, CURLINFO_PRETRANSFER_TIME, &mut seconds) };
    rc != curl_sys::CURLE_OK || seconds > 0.0
}

/// Whether libcurl's error says the connection itself failed (rather than this stream):
/// `CURLE_HTTP2` without a reason of its own (the session ended under the stream), a failed
/// send or receive, or a connection closed with nothing on it.
fn connection_gone(e: &curl::Error) -> bool {
    (e.is_http2_error() && e.extra_description().is_none())
        || e.is_send_error()
        || e.is_recv_error()
        || e.is_got_nothing()
}

/// Whether a declared digest proves a body that passed verification.
fn proven(expected: &Expected) -> bool {
    (expected.digests.iter())
        .any(|d| d.hex.is_some() && !matches!(d.algorithm, Algorithm::Other(_)))
}

/// What one GET read: the staged bytes, or why they are not the resource.
type Read = Result<Staged<NewFile>, FetchError>;

/// What to do after one attempt.
// One value per attempt, acted on at once: boxing the staged file would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Step {
    Done(Read),
    Redirect {
        status: u16,
        location: Option<String>,
    },
    /// Another attempt may mend it; the server's `Retry-After` when it gave one.
    Retry(FetchError, Option<Duration>),
    /// The connection failed before any of the response came: over HTTP/2 another stream's
    /// doing as likely as this one's (`Transfers::after`).
    Lost(FetchError),
    /// The kept-alive connection picked for the request had bytes waiting that nobody asked
    /// for: the request was not sent.
    Stale,
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

    /// Whether the final response carries the representation (a body to keep).
    fn keeps_body(&self) -> bool {
        self.head.has_representation()
    }

    /// The final response's head is complete (its framing checked): check its length.
    fn head_complete(&mut self) -> bool {
        if self.keeps_body() {
            if let Err(e) = check_announced(&self.url, &self.expected, self.head.content_length)
                .and_then(|()| {
                    check_media_type(&self.url, &self.expected, self.head.content_type.as_deref())
                })
            {
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
        let url = get.hops.current.to_string();
        if let Some(e) = self.error.take() {
            return Step::Done(Err(e));
        }
        if let Err(e) = &result {
            if e.code() == curl_sys::CURLE_ABORTED_BY_CALLBACK && !self.head.complete {
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
            final_url: get.hops.current.clone(),
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
        let url = get.hops.current.to_string();
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
            if detail.contains("too slow") && self.head.complete {
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
            if let Some(max_time) = cfg.max_time.filter(|_| self.head.complete) {
                return Step::Done(Err(past_max_time(url, max_time, self.received)));
            }
        }
        if e.is_partial_file() {
            if let Some(announced) = self.head.content_length {
                return Step::Retry(truncated(url, self.received, announced), None);
            }
        }
        let received = self.head.complete.then_some(self.received);
        match failure(&get.hops.current, &e, cfg.timeout, received) {
            (error, true) if !self.head.started() && connection_gone(&e) => Step::Lost(error),
            (error, true) => Step::Retry(error, None),
            (error, false) => Step::Done(Err(error)),
        }
    }

    fn new_part(&self) -> Result<NewFile, FetchError> {
        let create = self.create.unwrap_or(NewFile::create);
        create(&self.folder).map_err(|e| staging_error(&self.folder, e))
    }
}

impl Handler for Sink {
    fn header(&mut self, line: &[u8]) -> bool {
        match self.head.line(line) {
            Ok(false) => true,
            Ok(true) => self.head_complete(),
            Err(message) => {
                let url = self.url.clone();
                self.stop(FetchError::Transport { url, message })
            }
        }
    }

    fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        crate::net::bwlimit::take(data.len());
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
