//! The HTTP agent: keep-alive `ureq` agents (one per thread) with bounded waits.
//!
//! It owns what a single GET needs to be safe and polite (DESIGN §5): connect, header and
//! per-read timeouts so a stalled server cannot hang a cron job; bounded retries with
//! exponential backoff for connection failures, timeouts, 429 and 5xx, honouring `Retry-After`
//! up to a ceiling; redirects followed by hand so that every hop is checked against the
//! [`Scope`]; conditional GETs; a real `User-Agent`; `Accept-Encoding: identity` so that bodies
//! arrive exactly as the source's `length` and `hash` describe them (ResourceSync 1.1 §10.4);
//! an optional pause between requests to one host; and `--map` prefixes served from local
//! folders. Reading and verifying bodies is left to the caller (`fetch` for resources, the
//! readers for documents).

use crate::net::{FetchError, Scope};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use ureq::http::{header, HeaderValue, Response};
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
            max_retry_after: Duration::from_secs(120),
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

/// The certificates of a PEM file (`--ca-file`); an error names the file and what is wrong.
pub fn read_ca_file(path: &Path) -> Result<Vec<ureq::tls::Certificate<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => return Err(format!("{}: not PEM: {e}", path.display())),
        }
    }
    if certs.is_empty() {
        return Err(format!(
            "{}: no certificate (a PEM file of CERTIFICATE blocks was expected)",
            path.display()
        ));
    }
    Ok(certs)
}

/// `rsmirror/VERSION (ResourceSync Destination)`: what we send when nothing else was configured.
pub fn default_user_agent() -> String {
    format!(
        "rsmirror/{} (ResourceSync Destination)",
        env!("CARGO_PKG_VERSION")
    )
}

/// Validators for a conditional GET.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Validators {
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
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

/// How long a host's resolved addresses are reused.
const RESOLVE_TTL: Duration = Duration::from_secs(60);

/// ureq resolves the host before it looks for a pooled connection, on every request, and with
/// a resolve timeout it does so on a thread of its own: one thread spawn (and one
/// `getaddrinfo`, a DNS query for a real host) per resource. A mirror talks to one or a few
/// hosts, so their addresses are kept for [`RESOLVE_TTL`]; a failed lookup is not kept.
#[derive(Debug, Default)]
struct CachingResolver<R = ureq::unversioned::resolver::DefaultResolver> {
    inner: R,
    known: Mutex<HashMap<String, (Instant, ureq::unversioned::resolver::ResolvedSocketAddrs)>>,
}

/// One [`CachingResolver`] for all the agents of an [`Http`].
#[derive(Debug)]
struct SharedResolver(Arc<CachingResolver>);

impl ureq::unversioned::resolver::Resolver for SharedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        self.0.resolve(uri, config, timeout)
    }
}

impl<R: ureq::unversioned::resolver::Resolver> ureq::unversioned::resolver::Resolver
    for CachingResolver<R>
{
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or(""),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        if let Some((at, addrs)) = self.known.lock().unwrap().get(&key) {
            if at.elapsed() < RESOLVE_TTL {
                return Ok(addrs.clone());
            }
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        self.known
            .lock()
            .unwrap()
            .insert(key, (Instant::now(), addrs.clone()));
        Ok(addrs)
    }
}

/// Agents of one [`Http`]; a thread keeps to one of them.
const AGENTS: usize = 16;

thread_local! {
    /// This thread's agent, as an index into [`Http`]'s agents (assigned at first use).
    static AGENT_SLOT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// `&Http` is shared by all worker threads; each thread uses an agent (and so a connection
/// pool) of its own, up to [`AGENTS`] threads at a time. One agent for all made every request
/// take its pool's lock twice, and ureq holds that lock while it probes a pooled connection
/// (three system calls): eight workers queued on it.
pub struct Http {
    agents: Vec<ureq::Agent>,
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
        let user_agent = if cfg.user_agent.trim().is_empty() {
            default_user_agent()
        } else {
            cfg.user_agent.clone()
        };
        let t = Some(cfg.timeout);
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(certs) = cfg.ca_file.as_deref().and_then(|f| read_ca_file(f).ok()) {
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let config = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .timeout_resolve(t)
            .timeout_connect(t)
            .timeout_send_request(t)
            .timeout_recv_response(t)
            // Per read, not per body: a multi-GB body may take hours, a silent one may not.
            .timeout_per_read(t)
            .timeout_per_write(t)
            // Keep a connection per worker (--jobs is at most 256): with ureq's default of 3 idle
            // connections per host, 8 workers opened a new connection for most requests.
            .max_idle_connections(256)
            .max_idle_connections_per_host(256)
            // Redirects are ours: every hop goes through the scope.
            .max_redirects(0)
            .http_status_as_error(false)
            .user_agent(user_agent.clone())
            .accept_encoding("identity")
            .build();
        let resolver = Arc::new(CachingResolver::<
            ureq::unversioned::resolver::DefaultResolver,
        >::default());
        let agents = (0..AGENTS)
            .map(|_| {
                ureq::Agent::with_parts(
                    config.clone(),
                    ureq::unversioned::transport::DefaultConnector::new(),
                    SharedResolver(Arc::clone(&resolver)),
                )
            })
            .collect();
        let mut maps: Vec<(String, PathBuf)> = cfg
            .maps
            .iter()
            .map(|(prefix, dir)| (normalise_prefix(prefix), dir.clone()))
            .collect();
        maps.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
        Http {
            agents,
            cfg,
            maps,
            pacing: HostPacing::new(Duration::ZERO),
            user_agent,
        }
    }

    /// Wait at least `delay` between the starts of two requests to the same host (`--delay`),
    /// across all threads sharing this agent.
    pub fn with_host_delay(mut self, delay: Duration) -> Http {
        self.pacing = HostPacing::new(delay);
        self
    }

    /// The calling thread's agent.
    fn agent(&self) -> &ureq::Agent {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let slot = AGENT_SLOT.get().unwrap_or_else(|| {
            let slot = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % AGENTS;
            AGENT_SLOT.set(Some(slot));
            slot
        });
        &self.agents[slot]
    }

    pub fn config(&self) -> &HttpConfig {
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
    /// without a delay).
    pub(crate) fn take_turn(&self, host: &str) -> Option<Instant> {
        self.pacing.reserve(host)
    }

    /// GET with retries and scope-checked redirects; conditional when validators are given.
    pub fn get(
        &self,
        url: &Url,
        scope: &Scope,
        validators: &Validators,
    ) -> Result<DocumentResponse, FetchError> {
        self.get_with(url, scope, validators, &mut self.retries())
    }

    /// Turn an error from reading a [`Body`]'s reader into a [`FetchError`] for `url`.
    pub fn read_error(&self, url: &Url, e: io::Error) -> FetchError {
        self.classify(url, ureq::Error::from(e)).0
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
            let current = &hops.current;
            scope
                .check(current)
                .map_err(|reason| FetchError::OutOfScope {
                    url: current.to_string(),
                    reason: match &hops.came_from {
                        None => reason,
                        Some(from) => format!("redirected from {from}: {reason}"),
                    },
                })?;
            if let Some(body) = self.mapped(current)? {
                return Ok(DocumentResponse::Body(body));
            }
            let response = self.send_with_retries(current, validators, retries)?;
            let status = response.status().as_u16();
            match status {
                status if is_redirect(status) => {
                    let location = header_str(&response, header::LOCATION);
                    hops.redirect(url, status, location, self.cfg.max_redirects)?;
                }
                304 if !validators.is_empty() => return Ok(DocumentResponse::NotModified),
                // 206 would be part of a representation we never asked a range of.
                200..=299 if status != 206 => {
                    let mut body = body_of(hops.current, response);
                    body.reader = Box::new(RateGuard::new(body.reader, &self.cfg));
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
    ) -> Result<Response<ureq::Body>, FetchError> {
        loop {
            let (error, retry_after) = match self.send_once(url, validators) {
                Ok(response) => {
                    let status = response.status().as_u16();
                    if !is_retryable_status(status) {
                        return Ok(response);
                    }
                    let retry_after = header_str(&response, header::RETRY_AFTER)
                        .and_then(|v| parse_retry_after(v, jiff::Timestamp::now()));
                    let error = FetchError::Status {
                        url: url.to_string(),
                        status,
                    };
                    (error, retry_after)
                }
                Err(e) => match self.classify(url, e) {
                    (error, true) => (error, None),
                    (error, false) => return Err(error),
                },
            };
            match retries.next_wait(retry_after) {
                Some(wait) => std::thread::sleep(wait),
                None => return Err(error),
            }
        }
    }

    fn send_once(
        &self,
        url: &Url,
        validators: &Validators,
    ) -> Result<Response<ureq::Body>, ureq::Error> {
        let mut target = url.clone();
        target.set_fragment(None);
        self.pacing.wait_turn(target.host_str().unwrap_or(""));
        let mut request = self
            .agent()
            .get(target.as_str())
            .header(header::ACCEPT_ENCODING, "identity");
        // A validator that cannot be a header value (hostile or corrupted) is simply not sent:
        // the GET becomes unconditional, which is always correct.
        if let Some(v) = validators.etag.as_deref().and_then(header_value) {
            request = request.header(header::IF_NONE_MATCH, v);
        }
        if let Some(v) = validators.last_modified.as_deref().and_then(header_value) {
            request = request.header(header::IF_MODIFIED_SINCE, v);
        }
        for (name, value) in self.cfg.credentials.for_url(&target) {
            request = request.header(name.as_str(), value.as_str());
        }
        request.call()
    }

    /// Map a ureq error; the flag says whether another attempt may help.
    fn classify(&self, url: &Url, e: ureq::Error) -> (FetchError, bool) {
        let timeout = || FetchError::Timeout {
            url: url.to_string(),
            timeout: self.cfg.timeout,
        };
        let transport = |message: String| FetchError::Transport {
            url: url.to_string(),
            message: tls_hint(url, message),
        };
        match e {
            ureq::Error::Timeout(_) => (timeout(), true),
            ureq::Error::Io(io)
                if matches!(
                    io.kind(),
                    io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                ) =>
            {
                (timeout(), true)
            }
            ureq::Error::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof => {
                (transport(format!("connection closed early ({io})")), true)
            }
            ureq::Error::Io(io) => (transport(io.to_string()), true),
            ureq::Error::HostNotFound => (transport("host not found".to_string()), true),
            e @ (ureq::Error::ConnectionFailed
            | ureq::Error::Protocol(_)
            | ureq::Error::BodyStalled) => (transport(e.to_string()), true),
            // TLS, malformed URLs, oversized headers...: the same request fails the same way.
            e => (transport(e.to_string()), false),
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

/// How many more attempts a logical request may make, and how long to wait before each.
#[derive(Debug)]
pub(crate) struct Retries<'a> {
    cfg: &'a HttpConfig,
    used: u32,
}

impl Retries<'_> {
    /// The pause before another attempt, or `None` when the attempts are spent or the server
    /// asked for a longer pause than `max_retry_after`.
    pub(crate) fn next_wait(&mut self, retry_after: Option<Duration>) -> Option<Duration> {
        if self.used + 1 >= self.cfg.tries.max(1) {
            return None;
        }
        if retry_after.is_some_and(|ra| ra > self.cfg.max_retry_after) {
            return None;
        }
        // Doubling, capped at 64 × the first backoff.
        let backoff = self.cfg.backoff.saturating_mul(1 << self.used.min(6));
        self.used += 1;
        Some(retry_after.map_or(backoff, |ra| ra.max(backoff)))
    }
}

pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

fn header_value(v: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(v.trim()).ok()
}

fn header_str<B>(response: &Response<B>, name: header::HeaderName) -> Option<&str> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Where a GET stands in its chain of redirects.
struct Hops {
    current: Url,
    came_from: Option<Url>,
    hops: u32,
}

impl Hops {
    fn new(url: &Url) -> Hops {
        Hops {
            current: url.clone(),
            came_from: None,
            hops: 0,
        }
    }

    /// Follow a redirect `status` of the current URL to `location` (not yet scope-checked).
    fn redirect(
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

fn body_of(final_url: Url, response: Response<ureq::Body>) -> Body {
    let text = |name| header_str(&response, name).map(str::to_string);
    let validators = Validators {
        etag: text(header::ETAG),
        last_modified: text(header::LAST_MODIFIED),
    };
    let media_type = text(header::CONTENT_TYPE);
    let content_encoding =
        text(header::CONTENT_ENCODING).filter(|e| !e.eq_ignore_ascii_case("identity"));
    let content_length =
        header_str(&response, header::CONTENT_LENGTH).and_then(|v| v.parse::<u64>().ok());
    // `into_reader` has no size limit (unlike `read_to_vec`'s 10 MB): resource bodies can be
    // many GB; `fetch` bounds them by the declared length instead.
    let reader = response.into_body().into_reader();
    Body {
        final_url,
        validators,
        media_type,
        content_length,
        content_encoding,
        reader: Box::new(reader),
    }
}

/// `--min-rate` for a document read as a stream: ureq bounds each read by `--timeout`, not the
/// whole body, so a server that sends a byte now and then would hold the run for ever. Over
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

/// `Retry-After` (RFC 9110 §10.2.3): delta-seconds or an HTTP-date, as a wait from `now`.
/// A date in the past means "now"; an unparseable value means no advice.
pub(crate) fn parse_retry_after(value: &str, now: jiff::Timestamp) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // A huge number saturates; it is then larger than any max_retry_after.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = parse_http_date(value)?;
    let wait = now.duration_until(at);
    Some(if wait.is_negative() {
        Duration::ZERO
    } else {
        Duration::try_from(wait).unwrap_or(Duration::MAX)
    })
}

/// An HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms
/// that recipients must still accept.
pub(crate) fn parse_http_date(value: &str) -> Option<jiff::Timestamp> {
    static RFC2822: jiff::fmt::rfc2822::DateTimeParser = jiff::fmt::rfc2822::DateTimeParser::new();
    if let Ok(ts) = RFC2822.parse_timestamp(value) {
        return Some(ts);
    }
    let utc = |dt: jiff::civil::DateTime| {
        dt.to_zoned(jiff::tz::TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp())
    };
    // RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`.
    if let Some(dt) = jiff::fmt::strtime::parse("%A, %d-%b-%y %H:%M:%S GMT", value)
        .ok()
        .and_then(|t| t.to_datetime().ok())
    {
        return utc(dt);
    }
    // asctime: `Sun Nov  6 08:49:37 1994` (the day is space-padded).
    let squeezed = value.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
    jiff::fmt::strtime::parse("%a %b %d %H:%M:%S %Y", &squeezed)
        .ok()
        .and_then(|t| t.to_datetime().ok())
        .and_then(utc)
}

/// A TLS handshake that meets plain HTTP (`https://` given for an http port) fails with
/// rustls' "corrupt message of type InvalidContentType": say what it means.
pub(crate) fn tls_hint(url: &Url, message: String) -> String {
    if url.scheme() == "https"
        && (message.contains("InvalidContentType") || message.contains("corrupt message"))
    {
        let mut plain = url.clone();
        let _ = plain.set_scheme("http");
        format!(
            "{message}: the server does not answer TLS on this port; if it serves plain HTTP \
             there, give {plain}"
        )
    } else {
        message
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

/// `--delay`: the earliest start of the next request, per host.
struct HostPacing {
    delay: Duration,
    next: Mutex<HashMap<String, Instant>>,
}

impl HostPacing {
    fn new(delay: Duration) -> HostPacing {
        HostPacing {
            delay,
            next: Mutex::new(HashMap::new()),
        }
    }

    /// Reserve the next slot for `host` and sleep until it comes.
    fn wait_turn(&self, host: &str) {
        if let Some(start) = self.reserve(host) {
            std::thread::sleep(start.saturating_duration_since(Instant::now()));
        }
    }

    /// Reserve the next slot for `host`: when it comes (`None` without a delay).
    fn reserve(&self, host: &str) -> Option<Instant> {
        if self.delay.is_zero() {
            return None;
        }
        let now = Instant::now();
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let start = next.get(host).map_or(now, |&t| t.max(now));
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
    }

    impl Seen {
        pub fn header(&self, name: &str) -> Option<&str> {
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
        pub fn start<F>(handler: F) -> TestServer
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

        pub fn url(&self, path: &str) -> url::Url {
            url::Url::parse(&format!("{}{}", self.base, path)).unwrap()
        }

        pub fn requests(&self) -> usize {
            self.count.load(Ordering::SeqCst)
        }
    }

    /// The network tests' settings: short timeouts and backoff, three tries.
    pub fn config() -> super::HttpConfig {
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
        }
    }

    pub fn reply(status: u16, body: &str, headers: &[(&str, &str)]) -> Reply {
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

    /// Counts the lookups that reach the real resolver.
    #[derive(Debug, Default)]
    struct Counting(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl ureq::unversioned::resolver::Resolver for Counting {
        fn resolve(
            &self,
            uri: &ureq::http::Uri,
            config: &ureq::config::Config,
            timeout: ureq::unversioned::transport::NextTimeout,
        ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            ureq::unversioned::resolver::DefaultResolver::default().resolve(uri, config, timeout)
        }
    }

    #[test]
    fn each_thread_keeps_to_its_agent() {
        let server = TestServer::start(|_, _| reply(200, "x", &[]));
        let http = Http::new(cfg());
        let url = server.url("/a");
        let scope = scope_of(&url);
        std::thread::scope(|s| {
            // tiny_http serves up to four keep-alive connections at a time.
            for _ in 0..3 {
                s.spawn(|| {
                    let mine = http.agent() as *const ureq::Agent;
                    for _ in 0..5 {
                        assert_eq!(http.agent() as *const _, mine);
                        let (_, text) =
                            body_text(http.get(&url, &scope, &Validators::default()).unwrap());
                        assert_eq!(text, "x");
                    }
                });
            }
        });
        assert_eq!(server.requests(), 15);
    }

    #[test]
    fn a_host_is_resolved_once_not_once_per_request() {
        let server = TestServer::start(|_, _| reply(200, "x", &[]));
        let lookups = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let resolver = CachingResolver {
            inner: Counting(std::sync::Arc::clone(&lookups)),
            known: Mutex::default(),
        };
        // With a resolve timeout, as Http::new configures it.
        let config = ureq::Agent::config_builder()
            .timeout_resolve(Some(Duration::from_secs(5)))
            .build();
        let agent = ureq::Agent::with_parts(
            config,
            ureq::unversioned::transport::DefaultConnector::new(),
            resolver,
        );
        for path in ["/a", "/b", "/a", "/c", "/d"] {
            let mut r = agent.get(server.url(path).as_str()).call().unwrap();
            assert_eq!(r.body_mut().read_to_string().unwrap(), "x");
        }
        assert_eq!(lookups.load(std::sync::atomic::Ordering::SeqCst), 1);
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
    fn retry_after_delta_seconds() {
        let now = jiff::Timestamp::now();
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("1.5", now), None);
        assert_eq!(parse_retry_after("", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_http_dates() {
        // RFC 9110 §5.6.7's example instant in its three forms.
        let now: jiff::Timestamp = "1994-11-06T08:48:37Z".parse().unwrap();
        for v in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                parse_retry_after(v, now),
                Some(Duration::from_secs(60)),
                "{v}"
            );
        }
        // A date in the past: retry now.
        let later: jiff::Timestamp = "2000-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", later),
            Some(Duration::ZERO)
        );
    }

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
