//! The HTTP agent: what a GET needs to be safe and polite, over libcurl for documents
//! (`document` makes their transfers, read as a stream) and resources (`transfer`, with the
//! same request options, retries and redirect checks).
//!
//! It owns: connect, header and per-read timeouts so a stalled server cannot hang a cron job;
//! bounded retries with exponential backoff for connection failures, timeouts, 429 and 5xx,
//! honouring `Retry-After` (RFC 9110 §10.2.3) up to a ceiling; redirects followed by hand so
//! that every hop is checked against the [`Scope`]; conditional GETs (RFC 9110 §13.1); a real
//! `User-Agent`; `Accept-Encoding: identity` so that bodies arrive exactly as the source's
//! `length` and `hash` describe them (ResourceSync 1.1 §10.4); an optional pause between
//! requests to one host; and `--map` prefixes served from local folders. Reading and
//! verifying bodies is left to the caller (`fetch` for resources, the readers for documents).

use crate::model::Validators;
use crate::net::config::{default_user_agent, HttpConfig};
use crate::net::document::{Documents, Response};
use crate::net::{FetchError, Scope};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use url::Url;

/// When this process made its first agent: what `--max-duration` counts from.
fn first_agent_made() -> std::time::Instant {
    static MADE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *MADE.get_or_init(std::time::Instant::now)
}

/// Check a `--ca-file`: a PEM file with at least one certificate (RFC 7468 §5: base64 between
/// `-----BEGIN CERTIFICATE-----` and `-----END CERTIFICATE-----`). The number of certificates,
/// or an error naming the file and what is wrong. libcurl (OpenSSL) reads the file itself.
pub(crate) fn read_ca_file(path: &Path) -> Result<usize, String> {
    use base64::Engine as _;
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&pem);
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut count = 0;
    let mut rest = text.as_ref();
    while let Some(at) = rest.find(BEGIN) {
        let after = &rest[at + BEGIN.len()..];
        let Some(end) = after.find(END) else {
            return Err(format!(
                "{}: not PEM: a certificate without its END line",
                path.display()
            ));
        };
        let b64: String = after[..end].split_whitespace().collect();
        if let Err(e) = base64::engine::general_purpose::STANDARD.decode(&b64) {
            return Err(format!(
                "{}: not PEM: certificate {}: {e}",
                path.display(),
                count + 1
            ));
        }
        count += 1;
        rest = &after[end + END.len()..];
    }
    if count == 0 {
        return Err(format!(
            "{}: no certificate (a PEM file of CERTIFICATE blocks was expected)",
            path.display()
        ));
    }
    Ok(count)
}

/// A response whose body has not been read yet.
pub struct Body {
    /// The URL after redirects.
    pub final_url: Url,
    pub validators: Validators,
    /// The `Content-Type` header as served (parameters included).
    pub media_type: Option<String>,
    pub content_length: Option<u64>,
    /// `Content-Encoding` as served despite our `Accept-Encoding: identity`; the body is NOT
    /// decoded (the bytes are the representation the source's digests describe).
    pub content_encoding: Option<String>,
    /// The `Link` header field values as served (RFC 8288), parsed by [`crate::net::link`].
    pub links: Vec<String>,
    /// Read errors are `io::Error`s; [`Http::read_error`] turns them into a [`FetchError`].
    pub reader: Box<dyn Read + Send>,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("final_url", &self.final_url.as_str())
            .field("validators", &self.validators)
            .field("media_type", &self.media_type)
            .field("content_length", &self.content_length)
            .field("content_encoding", &self.content_encoding)
            .finish_non_exhaustive()
    }
}

/// A document GET either has a body or was not modified.
// One value per request, moved straight to its reader: boxing the body would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum DocumentResponse {
    Body(Body),
    NotModified,
}

/// `&Http` is shared by all worker threads: documents go to its document workers, resources
/// to each thread's `Transfers`, with the same settings.
pub struct Http {
    documents: Documents,
    /// Connections kept between GETs, documents' and resources' alike.
    pool: std::sync::Arc<crate::net::pool::Pool>,
    cfg: HttpConfig,
    /// `--map` prefixes, normalised, longest first so the most specific one wins.
    maps: Vec<(String, PathBuf)>,
    pacing: HostPacing,
    /// The `User-Agent` sent (the configured one, or [`default_user_agent`]).
    user_agent: String,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Http {
    pub fn new(cfg: HttpConfig) -> Http {
        first_agent_made();
        // The writer's commits, the catalog's copy and the index build keep the same margin
        // as the transfers (`store::space`).
        crate::store::space::set_min_free(cfg.min_free);
        if let Some(rate) = cfg.bwlimit {
            crate::net::bwlimit::set(rate);
        }
        let user_agent = if cfg.user_agent.trim().is_empty() {
            default_user_agent()
        } else {
            cfg.user_agent.clone()
        };
        let mut maps: Vec<(String, PathBuf)> = cfg
            .maps
            .iter()
            .map(|(prefix, dir)| (normalise_prefix(prefix), dir.clone()))
            .collect();
        maps.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        let pool = std::sync::Arc::new(crate::net::pool::Pool::default());
        Http {
            documents: Documents::new(cfg.clone(), user_agent.clone(), pool.clone()),
            pool,
            cfg,
            maps,
            pacing: HostPacing::new(Duration::ZERO),
            user_agent,
        }
    }

    /// When the run must stop fetching (`--max-duration`), if ever: counted from the first
    /// agent this process made, so that a command of several sources (or one that hands a
    /// source to a baseline) is bounded as a whole.
    pub(crate) fn deadline(&self) -> Option<std::time::Instant> {
        self.cfg.max_duration.map(|d| first_agent_made() + d)
    }

    /// Wait at least `delay` between the starts of two requests to the same host (`--delay`),
    /// across all threads sharing this agent.
    pub(crate) fn with_host_delay(mut self, delay: Duration) -> Http {
        self.pacing = HostPacing::new(delay);
        self
    }

    /// The connections kept between GETs (`net::pool`).
    pub(crate) fn pool(&self) -> &crate::net::pool::Pool {
        &self.pool
    }

    pub(crate) fn config(&self) -> &HttpConfig {
        &self.cfg
    }

    pub(crate) fn user_agent(&self) -> &str {
        &self.user_agent
    }

    /// Whether `url` is read from a `--map` folder.
    pub(crate) fn is_mapped(&self, url: &Url) -> bool {
        self.map_for(url).is_some()
    }

    /// `--delay`: reserve the next request slot for `host`, and say when it comes (`None`
    /// without a delay, unless the host asked for time: [`Http::hold_host`]).
    pub(crate) fn take_turn(&self, host: &str) -> Option<Instant> {
        self.pacing.reserve(host)
    }

    /// `host` answered 429 or 503: no new request goes to it for `wait` (its `Retry-After`, or
    /// the backoff), whichever transfer asks.
    pub(crate) fn hold_host(&self, host: &str, wait: Duration) {
        self.pacing.hold(host, Instant::now() + wait);
    }

    /// GET with retries and scope-checked redirects; conditional when validators are given.
    pub(crate) fn get(
        &self,
        url: &Url,
        scope: &Scope,
        validators: &Validators,
    ) -> Result<DocumentResponse, FetchError> {
        self.get_with(url, scope, validators, &mut self.retries())
    }

    /// Send a document GET before it is asked for (a Change List the mirror read before,
    /// while the Capability List that names it is on its way): the first [`Http::get`] of
    /// `url` with the same validators takes its answer, one round trip sooner. Nothing is sent
    /// for a URL outside `scope` or served from a `--map` folder, or while requests to its
    /// host are paced (`--delay`, a `crawl_rate`, a 429's `Retry-After`): two at once would
    /// break the pace.
    pub(crate) fn send_ahead(&self, url: &Url, scope: &Scope, validators: &Validators) {
        let host = url.host_str().unwrap_or("");
        if Hops::new(url).check(scope).is_err()
            || self.map_for(url).is_some()
            || !self.pacing.delay.is_zero()
            || self.pacing.held_until(host, Instant::now()).is_some()
        {
            return;
        }
        self.documents.send_ahead(url, validators);
    }

    /// End the GETs sent ahead that no [`Http::get`] took: the resources are next, and each
    /// such GET holds a connection once its answer waits.
    pub(crate) fn forget_ahead(&self) {
        self.documents.forget_ahead();
    }

    /// Turn an error from reading a [`Body`]'s reader into a [`FetchError`] for `url`.
    pub(crate) fn read_error(&self, url: &Url, e: io::Error) -> FetchError {
        if e.get_ref().is_some_and(|inner| inner.is::<FetchError>()) {
            let inner = e.into_inner().expect("checked above");
            return *inner.downcast::<FetchError>().expect("checked above");
        }
        let url = url.to_string();
        match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => FetchError::Timeout {
                url,
                timeout: self.cfg.timeout,
            },
            io::ErrorKind::UnexpectedEof => FetchError::Transport {
                url,
                message: format!("connection closed early ({e})"),
            },
            _ => FetchError::Transport {
                url,
                message: e.to_string(),
            },
        }
    }

    /// The retry budget for one logical request (all its hops and body reads).
    pub(crate) fn retries(&self) -> Retries<'_> {
        Retries {
            cfg: &self.cfg,
            used: 0,
        }
    }

    /// Like [`Http::get`], spending retries from a budget the caller also spends when a body
    /// read fails and it starts over.
    pub(crate) fn get_with(
        &self,
        url: &Url,
        scope: &Scope,
        validators: &Validators,
        retries: &mut Retries<'_>,
    ) -> Result<DocumentResponse, FetchError> {
        self.follow(url, Hops::new(url), scope, validators, retries)
    }

    fn follow(
        &self,
        url: &Url,
        mut hops: Hops,
        scope: &Scope,
        validators: &Validators,
        retries: &mut Retries<'_>,
    ) -> Result<DocumentResponse, FetchError> {
        loop {
            hops.check(scope)?;
            let current = &hops.current;
            if let Some(body) = self.mapped(current)? {
                return Ok(DocumentResponse::Body(body));
            }
            let response = self.send_with_retries(current, validators, retries)?;
            let status = response.head.status;
            match status {
                status if is_redirect(status) => {
                    let location = response.head.location.as_deref();
                    hops.redirect(url, status, location, self.cfg.max_redirects)?;
                }
                304 if !validators.is_empty() => return Ok(DocumentResponse::NotModified),
                _ if response.head.has_representation() => {
                    let body = body_of(hops.current, response, &self.cfg);
                    return Ok(DocumentResponse::Body(body));
                }
                _ => {
                    return Err(FetchError::Status {
                        url: current.to_string(),
                        status,
                    })
                }
            }
        }
    }

    /// One hop: send, and retry on connection failures, timeouts, 429 and 5xx.
    fn send_with_retries(
        &self,
        url: &Url,
        validators: &Validators,
        retries: &mut Retries<'_>,
    ) -> Result<Response, FetchError> {
        loop {
            self.pacing.wait_turn(url.host_str().unwrap_or(""));
            let (error, retry_after) = match self.documents.send(url, validators) {
                Ok(response) => {
                    let status = response.head.status;
                    if !is_retryable_status(status) {
                        return Ok(response);
                    }
                    let retry_after = (response.head.retry_after.as_deref())
                        .and_then(|v| parse_retry_after(v, jiff::Timestamp::now()));
                    let error = FetchError::Status {
                        url: url.to_string(),
                        status,
                    };
                    (error, retry_after)
                }
                Err((error, true)) => (error, None),
                Err((error, false)) => return Err(error),
            };
            match retries.next_wait(retry_after) {
                Some(wait) => {
                    if matches!(
                        error,
                        FetchError::Status {
                            status: 429 | 503,
                            ..
                        }
                    ) {
                        self.hold_host(url.host_str().unwrap_or(""), wait);
                    }
                    std::thread::sleep(wait)
                }
                None => return Err(error),
            }
        }
    }

    /// Serve `url` from a `--map` folder, when a prefix matches.
    pub(crate) fn mapped(&self, url: &Url) -> Result<Option<Body>, FetchError> {
        let Some((dir, rest)) = self.map_for(url) else {
            return Ok(None);
        };
        let not_found = |path: &Path| FetchError::MapNotFound {
            url: url.to_string(),
            path: path.display().to_string(),
        };
        let path = match map_path(dir, rest) {
            Ok(Some(path)) => path,
            Ok(None) => return Err(not_found(&dir.join(rest))),
            Err(reason) => {
                return Err(FetchError::OutOfScope {
                    url: url.to_string(),
                    reason: format!("mapped path {reason} (folder {})", dir.display()),
                })
            }
        };
        let file_error = |e: io::Error| match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => not_found(&path),
            _ => FetchError::Transport {
                url: url.to_string(),
                message: format!("{}: {e}", path.display()),
            },
        };
        // A symbolic link may point anywhere (`/etc`): only what resolves inside the mapped
        // folder is read, and the resolved path is the one opened.
        let real = std::fs::canonicalize(&path).map_err(file_error)?;
        let inside = std::fs::canonicalize(dir).is_ok_and(|d| real.starts_with(d));
        if !inside {
            return Err(FetchError::OutOfScope {
                url: url.to_string(),
                reason: format!(
                    "mapped path {} is a symbolic link to {}, outside the folder {}",
                    path.display(),
                    real.display(),
                    dir.display()
                ),
            });
        }
        let file = File::open(&real).map_err(file_error)?;
        let meta = file.metadata().map_err(file_error)?;
        if !meta.is_file() {
            return Err(not_found(&path));
        }
        Ok(Some(Body {
            final_url: url.clone(),
            validators: Validators::default(),
            media_type: None,
            content_length: Some(meta.len()),
            content_encoding: None,
            links: Vec::new(),
            reader: Box::new(file),
        }))
    }

    /// The folder and the rest of the URL for the longest `--map` prefix `url` is under.
    fn map_for<'a>(&'a self, url: &'a Url) -> Option<(&'a Path, &'a str)> {
        let s = url.as_str();
        self.maps.iter().find_map(|(prefix, dir)| {
            let rest = s.strip_prefix(prefix.as_str())?;
            // `https://h/data` maps `https://h/data/x`, never `https://h/database`.
            let boundary =
                prefix.ends_with('/') || rest.is_empty() || rest.starts_with(['/', '?', '#']);
            boundary.then(|| (dir.as_path(), rest.trim_start_matches('/')))
        })
    }
}

/// How many more attempts a logical request may make, and how long to wait before each: the
/// one policy ([`crate::retry`]) with the agent's settings.
#[derive(Debug)]
pub(crate) struct Retries<'a> {
    cfg: &'a HttpConfig,
    used: u32,
}

impl Retries<'_> {
    /// The pause before another attempt, or `None` when the attempts are spent or the server
    /// asked for a longer pause than `max_retry_after`.
    pub(crate) fn next_wait(&mut self, retry_after: Option<Duration>) -> Option<Duration> {
        match self.cfg.retry_policy().next(&mut self.used, retry_after) {
            crate::retry::Next::Wait(wait) => Some(wait),
            crate::retry::Next::Spent | crate::retry::Next::TooLong(_) => None,
        }
    }
}

pub(crate) use crate::retry::{is_retryable_status, parse_retry_after};

/// Where a GET (a document's or a resource's) stands in its chain of redirects.
#[derive(Debug)]
pub(crate) struct Hops {
    /// The URL to fetch now.
    pub(crate) current: Url,
    came_from: Option<Url>,
    hops: u32,
}

impl Hops {
    pub(crate) fn new(url: &Url) -> Hops {
        Hops {
            current: url.clone(),
            came_from: None,
            hops: 0,
        }
    }

    /// The current URL must be within `scope`, be it the one asked for or a redirect's.
    pub(crate) fn check(&self, scope: &Scope) -> Result<(), FetchError> {
        scope
            .check(&self.current)
            .map_err(|reason| FetchError::OutOfScope {
                url: self.current.to_string(),
                reason: match &self.came_from {
                    None => reason,
                    Some(from) => format!("redirected from {from}: {reason}"),
                },
            })
    }

    /// Follow a redirect `status` of the current URL to `location` (not yet scope-checked);
    /// `url` is the one first asked for, named when there are too many.
    pub(crate) fn redirect(
        &mut self,
        url: &Url,
        status: u16,
        location: Option<&str>,
        max: u32,
    ) -> Result<(), FetchError> {
        self.hops += 1;
        if self.hops > max {
            return Err(FetchError::TooManyRedirects {
                url: url.to_string(),
                max,
            });
        }
        let next = redirect_target(&self.current, status, location)?;
        self.came_from = Some(std::mem::replace(&mut self.current, next));
        Ok(())
    }
}

/// Whether `status` is a redirect this agent follows.
pub(crate) fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

pub(crate) fn redirect_target(
    current: &Url,
    status: u16,
    location: Option<&str>,
) -> Result<Url, FetchError> {
    let Some(location) = location.filter(|l| !l.is_empty()) else {
        return Err(FetchError::Transport {
            url: current.to_string(),
            message: format!("HTTP {status} redirect without a usable Location header"),
        });
    };
    current.join(location).map_err(|e| FetchError::Transport {
        url: current.to_string(),
        message: format!("HTTP {status} redirect to an invalid Location {location:?}: {e}"),
    })
}

fn body_of(final_url: Url, response: Response, cfg: &HttpConfig) -> Body {
    let head = response.head;
    Body {
        final_url,
        validators: Validators {
            etag: head.etag.clone(),
            last_modified: head.last_modified.clone(),
        },
        media_type: head.content_type.clone(),
        content_length: head.content_length,
        content_encoding: head.encoding(),
        links: head.links.clone(),
        reader: Box::new(RateGuard::new(response.body, cfg)),
    }
}

/// `--min-rate` for a document read as a stream: the reader bounds each wait by `--timeout`,
/// not the whole body, so a server that sends a byte now and then would hold the run for ever. Over
/// each `--timeout` window of time spent waiting on the server (the reader's own pauses, while
/// the caller works on what it read, do not count) at least `min_rate` bytes a second must
/// arrive.
struct RateGuard<R> {
    inner: R,
    min_rate: u64,
    window: Duration,
    waited: Duration,
    bytes: u64,
}

impl<R> RateGuard<R> {
    fn new(inner: R, cfg: &HttpConfig) -> RateGuard<R> {
        RateGuard {
            inner,
            min_rate: cfg.min_rate,
            window: cfg.timeout.max(Duration::from_secs(1)),
            waited: Duration::ZERO,
            bytes: 0,
        }
    }
}

impl<R: Read> Read for RateGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let started = Instant::now();
        let n = self.inner.read(buf)?;
        self.waited += started.elapsed();
        self.bytes += n as u64;
        if n > 0 && self.waited >= self.window {
            let needed = (self.min_rate as f64 * self.waited.as_secs_f64()) as u64;
            if self.bytes < needed {
                return Err(io::Error::other(format!(
                    "transfer cut off: under --min-rate {} bytes/s for {} s ({} bytes in {:.1} s)",
                    self.min_rate,
                    self.window.as_secs_f64(),
                    self.bytes,
                    self.waited.as_secs_f64()
                )));
            }
            self.waited = Duration::ZERO;
            self.bytes = 0;
        }
        Ok(n)
    }
}

/// `--map` prefixes compare against `Url::as_str()`, so write them the same way.
fn normalise_prefix(prefix: &str) -> String {
    match Url::parse(prefix) {
        // `Url` adds the root slash to a bare origin; the boundary rule in `map_for` keeps
        // `https://h` from matching `https://hx`.
        Ok(u) => u.to_string(),
        Err(_) => prefix.to_string(),
    }
}

/// The file a mapped URL's rest (the part after the prefix) names inside `dir`.
/// `Ok(None)`: it names a folder (empty, or ending in `/`). `Err(why)`: it would read something
/// outside `dir` (`..`, NUL, backslash, a drive or root); hostile, never read.
pub(crate) fn map_path(dir: &Path, rest: &str) -> Result<Option<PathBuf>, String> {
    let path_part = rest.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode(path_part);
    let shown = String::from_utf8_lossy(&decoded).into_owned();
    if decoded.contains(&0) {
        return Err(format!("{shown:?} contains NUL"));
    }
    if decoded.contains(&b'\\') {
        return Err(format!("{shown:?} contains a backslash"));
    }
    if decoded.is_empty() || decoded.ends_with(b"/") {
        return Ok(None);
    }
    let mut path = dir.to_path_buf();
    for segment in decoded.split(|&b| b == b'/') {
        match segment {
            b"" | b"." => continue,
            b".." => return Err(format!("{shown:?} leaves the folder (..)")),
            _ => {}
        }
        let is_drive = segment.len() >= 2 && segment[0].is_ascii_alphabetic() && segment[1] == b':';
        if is_drive {
            return Err(format!("{shown:?} names a drive"));
        }
        let segment = segment_os_str(segment).ok_or_else(|| format!("{shown:?} is not UTF-8"))?;
        let mut components = Path::new(segment).components();
        match (components.next(), components.next()) {
            (Some(Component::Normal(c)), None) if c == segment => path.push(segment),
            _ => return Err(format!("{shown:?} is not a plain relative path")),
        }
    }
    Ok(Some(path))
}

#[cfg(unix)]
fn segment_os_str(segment: &[u8]) -> Option<&std::ffi::OsStr> {
    use std::os::unix::ffi::OsStrExt;
    Some(std::ffi::OsStr::from_bytes(segment))
}

#[cfg(not(unix))]
fn segment_os_str(segment: &[u8]) -> Option<&std::ffi::OsStr> {
    std::str::from_utf8(segment).ok().map(std::ffi::OsStr::new)
}

/// `%XX` to bytes; a `%` not followed by two hex digits stays as it is.
fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// `--delay`: the earliest start of the next request, per host; and a host that asked for
/// time (429 or 503, with or without `Retry-After`) gets no new request before then, from any
/// transfer (RFC 9110 §10.2.3: the wait is asked of the client, not of one request).
struct HostPacing {
    delay: Duration,
    next: Mutex<HashMap<String, Instant>>,
    held: Mutex<HashMap<String, Instant>>,
}

impl HostPacing {
    fn new(delay: Duration) -> HostPacing {
        HostPacing {
            delay,
            next: Mutex::new(HashMap::new()),
            held: Mutex::new(HashMap::new()),
        }
    }

    /// No new request to `host` before `until` (the latest such time asked holds).
    fn hold(&self, host: &str, until: Instant) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let at = held.entry(host.to_string()).or_insert(until);
        *at = (*at).max(until);
    }

    /// When `host` takes requests again, if it asked for time that has not passed.
    fn held_until(&self, host: &str, now: Instant) -> Option<Instant> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.get(host).copied().filter(|&t| t > now)
    }

    /// Reserve the next slot for `host` and sleep until it comes.
    fn wait_turn(&self, host: &str) {
        if let Some(start) = self.reserve(host) {
            std::thread::sleep(start.saturating_duration_since(Instant::now()));
        }
    }

    /// Reserve the next slot for `host`: when it comes (`None` without a delay).
    fn reserve(&self, host: &str) -> Option<Instant> {
        let now = Instant::now();
        let held = self.held_until(host, now);
        if self.delay.is_zero() {
            return held;
        }
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let start = next.get(host).map_or(now, |&t| t.max(now));
        let start = held.map_or(start, |h| h.max(start));
        next.insert(host.to_string(), start + self.delay);
        Some(start)
    }
}

/// A `tiny_http` server on 127.0.0.1 port 0 for the network tests.
#[cfg(test)]
pub(crate) mod test_server {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    pub(crate) type Reply = tiny_http::ResponseBox;

    /// What the handler sees of one request.
    #[derive(Debug, Clone)]
    pub(crate) struct Seen {
        pub url: String,
        pub headers: Vec<(String, String)>,
        /// The client's end of the connection the request came on.
        pub peer: Option<std::net::SocketAddr>,
    }

    impl Seen {
        pub(crate) fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    pub(crate) struct TestServer {
        pub base: String,
        pub count: Arc<AtomicUsize>,
        pub seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl TestServer {
        /// Serve every request with `handler(request, index)` (index counts from 0).
        pub(crate) fn start<F>(handler: F) -> TestServer
        where
            F: Fn(&Seen, usize) -> Reply + Send + 'static,
        {
            let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
            let port = server.server_addr().to_ip().unwrap().port();
            let count = Arc::new(AtomicUsize::new(0));
            let seen = Arc::new(Mutex::new(Vec::new()));
            let (c, s) = (count.clone(), seen.clone());
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let this = Seen {
                        url: request.url().to_string(),
                        headers: request
                            .headers()
                            .iter()
                            .map(|h| (h.field.to_string(), h.value.to_string()))
                            .collect(),
                        peer: request.remote_addr().copied(),
                    };
                    let i = c.fetch_add(1, Ordering::SeqCst);
                    s.lock().unwrap().push(this.clone());
                    let _ = request.respond(handler(&this, i));
                }
            });
            TestServer {
                base: format!("http://127.0.0.1:{port}"),
                count,
                seen,
            }
        }

        pub(crate) fn url(&self, path: &str) -> url::Url {
            url::Url::parse(&format!("{}{}", self.base, path)).unwrap()
        }

        pub(crate) fn requests(&self) -> usize {
            self.count.load(Ordering::SeqCst)
        }
    }

    /// The network tests' settings: short timeouts and backoff, three tries.
    pub(crate) fn config() -> super::HttpConfig {
        super::HttpConfig {
            timeout: std::time::Duration::from_secs(1),
            tries: 3,
            max_retry_after: std::time::Duration::from_secs(2),
            backoff: std::time::Duration::from_millis(10),
            user_agent: "rsmirror-test/1".to_string(),
            maps: Vec::new(),
            max_redirects: 5,
            credentials: Default::default(),
            max_size: 0,
            min_rate: 1024,
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

    pub(crate) fn reply(status: u16, body: &str, headers: &[(&str, &str)]) -> Reply {
        let mut r = tiny_http::Response::from_string(body).with_status_code(status);
        for (n, v) in headers {
            r.add_header(tiny_http::Header::from_bytes(n.as_bytes(), v.as_bytes()).unwrap());
        }
        r.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::test_server::{reply, TestServer};
    use super::*;
    use std::io::Write;

    use super::test_server::config as cfg;

    #[test]
    fn documents_keep_their_connection() {
        let server = TestServer::start(|seen, _| match seen.url.as_str() {
            "/old.xml" => reply(301, "moved", &[("Location", "/a.xml")]),
            _ => reply(200, "x", &[]),
        });
        let http = Http::new(cfg());
        for path in ["/a.xml", "/b.xml", "/old.xml", "/c.xml"] {
            let url = server.url(path);
            let (_, text) = body_text(
                http.get(&url, &scope_of(&url), &Validators::default())
                    .unwrap(),
            );
            assert_eq!(text, "x");
        }
        let seen = server.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 5);
        let peers: std::collections::BTreeSet<_> = seen.iter().map(|s| s.peer).collect();
        assert_eq!(peers.len(), 1, "{peers:?}");
    }

    /// A server that sends `head`, then `body` for ever, a piece at a time.
    fn endless_server(head: &'static str, piece: &'static [u8]) -> Url {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut request = [0u8; 4096];
                    let _ = stream.read(&mut request);
                    if stream.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    while stream.write_all(piece).is_ok() {}
                });
            }
        });
        Url::parse(&format!("http://127.0.0.1:{port}/dump.zip")).unwrap()
    }

    #[test]
    fn a_body_is_read_as_a_stream_not_held_whole() {
        // An endless body: a GET that buffered it whole would never return.
        let url = endless_server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/zip\r\n\r\n",
            &[b'z'; 4096],
        );
        let http = Http::new(cfg());
        let body = match http
            .get(&url, &scope_of(&url), &Validators::default())
            .unwrap()
        {
            DocumentResponse::Body(b) => b,
            DocumentResponse::NotModified => panic!(),
        };
        assert_eq!(body.media_type.as_deref(), Some("application/zip"));
        assert_eq!(body.content_length, None);
        let mut first = vec![0u8; 8 << 20];
        let mut reader = body.reader;
        reader.read_exact(&mut first).unwrap();
        assert!(first.iter().all(|&b| b == b'z'));
        // Dropped unread: the transfer ends, its worker is free for the next GET.
        drop(reader);
    }

    #[test]
    fn a_body_that_stalls_times_out_naming_the_url() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf");
                held.push(stream);
            }
        });
        let url = Url::parse(&format!("http://127.0.0.1:{port}/list.xml")).unwrap();
        let http = Http::new(HttpConfig { tries: 1, ..cfg() });
        let mut body = match http
            .get(&url, &scope_of(&url), &Validators::default())
            .unwrap()
        {
            DocumentResponse::Body(b) => b,
            DocumentResponse::NotModified => panic!(),
        };
        let t = Instant::now();
        let mut text = Vec::new();
        let e = body.reader.read_to_end(&mut text).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert_eq!(text, b"half");
        match http.read_error(&body.final_url, e) {
            FetchError::Timeout { url: u, .. } => assert_eq!(u, url.as_str()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_body_cut_short_is_a_transport_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf");
            }
        });
        let url = Url::parse(&format!("http://127.0.0.1:{port}/list.xml")).unwrap();
        let http = Http::new(cfg());
        let mut body = match http
            .get(&url, &scope_of(&url), &Validators::default())
            .unwrap()
        {
            DocumentResponse::Body(b) => b,
            DocumentResponse::NotModified => panic!(),
        };
        let mut text = Vec::new();
        let e = body.reader.read_to_end(&mut text).unwrap_err();
        match http.read_error(&body.final_url, e) {
            FetchError::Transport { url: u, message } => {
                assert_eq!(u, url.as_str());
                // libcurl 7.x: "transfer closed with 96 bytes remaining to read"; 8.x: "end
                // of response with 96 bytes missing".
                assert!(message.contains("96 bytes"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ca_files_are_checked_for_certificates() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = tmp.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let good = write(
            "good.pem",
            "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n\
             -----BEGIN CERTIFICATE-----\nAwQF\n-----END CERTIFICATE-----\n",
        );
        assert_eq!(read_ca_file(&good), Ok(2));
        let none = write("none.pem", "-----BEGIN PRIVATE KEY-----\nAAEC\n");
        assert!(read_ca_file(&none).unwrap_err().contains("no certificate"));
        let bad = write(
            "bad.pem",
            "-----BEGIN CERTIFICATE-----\n*not base64*\n-----END CERTIFICATE-----\n",
        );
        assert!(read_ca_file(&bad).unwrap_err().contains("not PEM"));
        assert!(read_ca_file(&tmp.path().join("missing.pem")).is_err());
    }

    fn body_text(r: DocumentResponse) -> (Url, String) {
        match r {
            DocumentResponse::Body(mut b) => {
                let mut s = String::new();
                b.reader.read_to_string(&mut s).unwrap();
                (b.final_url, s)
            }
            DocumentResponse::NotModified => panic!("unexpected 304"),
        }
    }

    fn scope_of(url: &Url) -> Scope {
        Scope::for_document(url, &[])
    }

    #[test]
    fn http_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Http>();
    }

    // -- Retry-After ----------------------------------------------------------------------

    #[test]
    fn retry_budget_and_ceiling() {
        let c = cfg();
        let mut r = Retries { cfg: &c, used: 0 };
        assert_eq!(r.next_wait(None), Some(Duration::from_millis(10)));
        assert_eq!(r.next_wait(None), Some(Duration::from_millis(20)));
        assert_eq!(r.next_wait(None), None, "3 tries = 2 retries");
        let mut r = Retries { cfg: &c, used: 0 };
        assert_eq!(
            r.next_wait(Some(Duration::from_secs(3))),
            None,
            "above max_retry_after"
        );
        assert_eq!(
            r.next_wait(Some(Duration::from_secs(1))),
            Some(Duration::from_secs(1))
        );
        let one = HttpConfig { tries: 1, ..cfg() };
        assert_eq!(Retries { cfg: &one, used: 0 }.next_wait(None), None);
        let zero = HttpConfig { tries: 0, ..cfg() };
        assert_eq!(
            Retries {
                cfg: &zero,
                used: 0
            }
            .next_wait(None),
            None
        );
    }

    // -- --map path safety ----------------------------------------------------------------

    #[test]
    fn map_paths_stay_inside_the_folder() {
        let dir = Path::new("/srv/mirror");
        let ok = |rest: &str| map_path(dir, rest).unwrap().unwrap();
        assert_eq!(ok("a/b.xml"), dir.join("a/b.xml"));
        assert_eq!(ok("a//./b.xml"), dir.join("a/b.xml"));
        assert_eq!(ok("res%20one.txt"), dir.join("res one.txt"));
        assert_eq!(ok("x.xml?q=../../etc/passwd#../y"), dir.join("x.xml"));
        assert_eq!(ok("100%"), dir.join("100%"));
        assert_eq!(ok("%zz"), dir.join("%zz"));
        for hostile in [
            "../etc/passwd",
            "%2e%2e/etc/passwd",
            "%2E%2E%2Fetc%2Fpasswd",
            "a/../../b",
            "a/%2e%2e/%2e%2e/b",
            "C:\\x",
            "C:/x",
            "c%3A/x",
            "a\\..\\..\\b",
            "a%5c..%5cb",
            "a%00b",
            "..",
        ] {
            assert!(map_path(dir, hostile).is_err(), "{hostile} must be refused");
        }
    }

    #[test]
    fn map_folders_are_not_files() {
        let dir = Path::new("/srv/mirror");
        assert_eq!(map_path(dir, ""), Ok(None));
        assert_eq!(map_path(dir, "sub/"), Ok(None));
        assert_eq!(map_path(dir, "sub%2F"), Ok(None));
        assert_eq!(map_path(dir, "?q=1"), Ok(None));
    }

    #[test]
    fn mapped_prefix_serves_files_and_refuses_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::File::create(root.join("sub/a.xml"))
            .unwrap()
            .write_all(b"<urlset/>")
            .unwrap();
        std::fs::write(tmp.path().join("secret"), b"secret").unwrap();
        let http = Http::new(HttpConfig {
            maps: vec![("https://example.org/data".to_string(), root.clone())],
            ..cfg()
        });
        let doc = Url::parse("https://example.org/rl.xml").unwrap();
        let scope = scope_of(&doc);
        let get = |u: &str| http.get(&Url::parse(u).unwrap(), &scope, &Validators::default());

        let (final_url, text) = body_text(get("https://example.org/data/sub/a.xml").unwrap());
        assert_eq!(text, "<urlset/>");
        assert_eq!(final_url.as_str(), "https://example.org/data/sub/a.xml");
        match get("https://example.org/data/sub/a.xml").unwrap() {
            DocumentResponse::Body(b) => {
                assert_eq!(b.content_length, Some(9));
                assert_eq!(b.validators, Validators::default());
            }
            DocumentResponse::NotModified => panic!(),
        }
        assert!(matches!(
            get("https://example.org/data/sub/missing.xml"),
            Err(FetchError::MapNotFound { .. })
        ));
        assert!(matches!(
            get("https://example.org/data/sub/"),
            Err(FetchError::MapNotFound { .. })
        ));
        assert!(matches!(
            get("https://example.org/data/sub"),
            Err(FetchError::MapNotFound { .. })
        ));
        // The url crate already removes `%2e%2e` segments: that URL is no longer under the
        // prefix at all, so it is not read from the folder.
        assert_eq!(
            Url::parse("https://example.org/data/%2e%2e/secret")
                .unwrap()
                .as_str(),
            "https://example.org/secret"
        );
        assert!(matches!(
            get("https://example.org/data/sub%2F..%2F..%2Fsecret"),
            Err(FetchError::OutOfScope { .. })
        ));
        // `/database` is not under `/data`; `/data` itself and `/data?x` are.
        let under = |u: &str| {
            http.map_for(&Url::parse(u).unwrap())
                .map(|(_, rest)| rest.to_string())
        };
        assert_eq!(under("https://example.org/database/sub/a.xml"), None);
        assert_eq!(under("https://example.org/data"), Some(String::new()));
        assert_eq!(under("https://example.org/data?x"), Some("?x".to_string()));
        assert_eq!(
            under("https://example.org/data/sub/a.xml"),
            Some("sub/a.xml".to_string())
        );
        assert_eq!(
            under("http://example.org/data/sub/a.xml"),
            None,
            "the scheme is part of the prefix"
        );
        // Mapped URLs pass the scope first.
        let evil = Http::new(HttpConfig {
            maps: vec![("https://evil.com/".to_string(), root)],
            ..cfg()
        });
        let r = evil.get(
            &Url::parse("https://evil.com/sub/a.xml").unwrap(),
            &scope,
            &Validators::default(),
        );
        assert!(matches!(r, Err(FetchError::OutOfScope { .. })));
    }

    // -- HTTP -----------------------------------------------------------------------------

    #[test]
    fn retries_503_then_succeeds() {
        let server = TestServer::start(|_, i| {
            if i == 0 {
                reply(503, "busy", &[])
            } else {
                reply(200, "hello", &[])
            }
        });
        let url = server.url("/doc.xml");
        let http = Http::new(cfg());
        let (_, text) = body_text(
            http.get(&url, &scope_of(&url), &Validators::default())
                .unwrap(),
        );
        assert_eq!(text, "hello");
        assert_eq!(server.requests(), 2);
    }

    #[test]
    fn gives_up_after_tries() {
        let server = TestServer::start(|_, _| reply(500, "broken", &[]));
        let url = server.url("/doc.xml");
        let http = Http::new(cfg());
        let r = http.get(&url, &scope_of(&url), &Validators::default());
        assert!(
            matches!(r, Err(FetchError::Status { status: 500, .. })),
            "{r:?}"
        );
        assert_eq!(server.requests(), 3);
    }

    #[test]
    fn honours_retry_after_on_429() {
        let server = TestServer::start(|_, i| {
            if i == 0 {
                reply(429, "slow down", &[("Retry-After", "1")])
            } else {
                reply(200, "ok", &[])
            }
        });
        let url = server.url("/doc.xml");
        let http = Http::new(cfg());
        let t = Instant::now();
        let (_, text) = body_text(
            http.get(&url, &scope_of(&url), &Validators::default())
                .unwrap(),
        );
        assert_eq!(text, "ok");
        assert_eq!(server.requests(), 2);
        assert!(t.elapsed() >= Duration::from_secs(1), "{:?}", t.elapsed());
    }

    #[test]
    fn retry_after_beyond_the_ceiling_stops_retrying() {
        let server = TestServer::start(|_, _| reply(503, "", &[("Retry-After", "3600")]));
        let url = server.url("/doc.xml");
        let http = Http::new(cfg());
        let t = Instant::now();
        let r = http.get(&url, &scope_of(&url), &Validators::default());
        assert!(
            matches!(r, Err(FetchError::Status { status: 503, .. })),
            "{r:?}"
        );
        assert_eq!(server.requests(), 1);
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn not_found_is_not_retried() {
        let server = TestServer::start(|_, i| reply(if i == 0 { 404 } else { 410 }, "", &[]));
        let url = server.url("/gone.xml");
        let http = Http::new(cfg());
        let r = http.get(&url, &scope_of(&url), &Validators::default());
        match r {
            Err(FetchError::Status {
                status: 404,
                url: u,
            }) => assert_eq!(u, url.as_str()),
            other => panic!("{other:?}"),
        }
        assert_eq!(server.requests(), 1);
        let r = http.get(&url, &scope_of(&url), &Validators::default());
        assert!(matches!(r, Err(FetchError::Status { status: 410, .. })));
        assert_eq!(server.requests(), 2);
    }

    #[test]
    fn redirect_to_another_host_is_refused() {
        let server = TestServer::start(|_, _| {
            reply(302, "", &[("Location", "http://evil.example.com/payload")])
        });
        let url = server.url("/doc.xml");
        let http = Http::new(cfg());
        match http.get(&url, &scope_of(&url), &Validators::default()) {
            Err(e @ FetchError::OutOfScope { .. }) => {
                assert!(e.is_refusal());
                let msg = e.to_string();
                assert!(msg.contains("http://evil.example.com/payload"), "{msg}");
                assert!(msg.contains("evil.example.com is outside"), "{msg}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.requests(), 1);
    }

    #[test]
    fn redirect_within_host_is_followed() {
        let server = TestServer::start(|seen, _| match seen.url.as_str() {
            "/old/doc.xml" => reply(301, "", &[("Location", "../new/doc.xml")]),
            "/new/doc.xml" => reply(307, "", &[("Location", "/final.xml?x=1")]),
            "/final.xml?x=1" => reply(200, "moved", &[("ETag", "\"v1\"")]),
            _ => reply(404, "", &[]),
        });
        let url = server.url("/old/doc.xml");
        let http = Http::new(cfg());
        match http
            .get(&url, &scope_of(&url), &Validators::default())
            .unwrap()
        {
            DocumentResponse::Body(mut b) => {
                assert_eq!(b.final_url, server.url("/final.xml?x=1"));
                assert_eq!(b.validators.etag.as_deref(), Some("\"v1\""));
                let mut s = String::new();
                b.reader.read_to_string(&mut s).unwrap();
                assert_eq!(s, "moved");
            }
            DocumentResponse::NotModified => panic!(),
        }
        assert_eq!(server.requests(), 3);
    }

    #[test]
    fn redirect_loops_end() {
        let server = TestServer::start(|_, _| reply(302, "", &[("Location", "/loop")]));
        let url = server.url("/loop");
        let http = Http::new(cfg());
        let r = http.get(&url, &scope_of(&url), &Validators::default());
        assert!(
            matches!(r, Err(FetchError::TooManyRedirects { max: 5, .. })),
            "{r:?}"
        );
        assert_eq!(server.requests(), 6);
    }

    #[test]
    fn sends_polite_headers_and_conditional_get() {
        let server = TestServer::start(|seen, _| {
            if seen.header("If-None-Match") == Some("\"abc\"") {
                reply(304, "", &[])
            } else {
                reply(
                    200,
                    "full",
                    &[
                        ("ETag", "\"abc\""),
                        ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
                    ],
                )
            }
        });
        let url = server.url("/doc.xml");
        let http = Http::new(cfg());
        let scope = scope_of(&url);
        let first = match http.get(&url, &scope, &Validators::default()).unwrap() {
            DocumentResponse::Body(b) => b.validators,
            DocumentResponse::NotModified => panic!(),
        };
        assert_eq!(first.etag.as_deref(), Some("\"abc\""));
        let r = http.get(&url, &scope, &first).unwrap();
        assert!(matches!(r, DocumentResponse::NotModified));
        let seen = server.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].header("If-None-Match"), None);
        assert_eq!(seen[1].header("If-None-Match"), Some("\"abc\""));
        assert_eq!(
            seen[1].header("If-Modified-Since"),
            Some("Sun, 06 Nov 1994 08:49:37 GMT")
        );
        for s in &seen {
            assert_eq!(s.header("User-Agent"), Some("rsmirror-test/1"));
            assert_eq!(s.header("Accept-Encoding"), Some("identity"));
        }
    }

    #[test]
    fn unsolicited_304_is_an_error() {
        let server = TestServer::start(|_, _| reply(304, "", &[]));
        let url = server.url("/doc.xml");
        let r = Http::new(cfg()).get(&url, &scope_of(&url), &Validators::default());
        assert!(
            matches!(r, Err(FetchError::Status { status: 304, .. })),
            "{r:?}"
        );
    }

    /// A server that accepts connections and never answers.
    fn stalled_server() -> (Url, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let a = accepted.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(stream);
            }
        });
        (
            Url::parse(&format!("http://127.0.0.1:{port}/doc.xml")).unwrap(),
            accepted,
        )
    }

    #[test]
    fn stalled_server_times_out() {
        let (url, accepted) = stalled_server();
        let http = Http::new(HttpConfig { tries: 1, ..cfg() });
        let t = Instant::now();
        let r = http.get(&url, &scope_of(&url), &Validators::default());
        let elapsed = t.elapsed();
        assert!(matches!(r, Err(FetchError::Timeout { .. })), "{r:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn timeouts_are_retried() {
        let (url, accepted) = stalled_server();
        let http = Http::new(HttpConfig {
            tries: 2,
            timeout: Duration::from_millis(300),
            ..cfg()
        });
        let r = http.get(&url, &scope_of(&url), &Validators::default());
        assert!(matches!(r, Err(FetchError::Timeout { .. })), "{r:?}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn connection_refused_is_a_transport_error() {
        // Bind, learn the port, close: nothing listens there now.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = Url::parse(&format!("http://127.0.0.1:{port}/x")).unwrap();
        let r = Http::new(cfg()).get(&url, &scope_of(&url), &Validators::default());
        match r {
            Err(FetchError::Transport { url: u, .. }) => assert_eq!(u, url.as_str()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn host_delay_spaces_requests() {
        let server = TestServer::start(|_, _| reply(200, "x", &[]));
        let url = server.url("/a");
        let http = Http::new(cfg()).with_host_delay(Duration::from_millis(200));
        let t = Instant::now();
        for _ in 0..3 {
            body_text(
                http.get(&url, &scope_of(&url), &Validators::default())
                    .unwrap(),
            );
        }
        assert!(
            t.elapsed() >= Duration::from_millis(400),
            "{:?}",
            t.elapsed()
        );
    }
}
