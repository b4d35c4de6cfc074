//! The integration tests' HTTP server: a small HTTP/1.1 server on 127.0.0.1:0 that serves one
//! testdata tree as a site root.
//!
//! It rewrites the fixtures' placeholder origin (`http://sample.example.org`) to its own
//! `http://127.0.0.1:PORT` in every body (inside gzip bodies too), answers conditional GETs with
//! 304, logs every request, and misbehaves on demand: per-path [`Rule`]s and a global delay,
//! both changeable while it runs. Each connection has its own thread and is kept alive as long
//! as the client wants (tiny_http, used before, starved a burst of more than four keep-alive
//! connections), so a stalled path never blocks the others. Dropping the [`TestServer`] stops
//! it and releases stalled requests.
//!
//! It knows nothing of rsmirror: the tests that start it decide what a run should have done.
//! The trees it serves are described in `testdata/README.md`.

// Not every test module uses every helper.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use sha2::{Digest, Sha256};

/// The origin every absolute URL in the fixtures uses; replaced by [`TestServer::base`].
pub const PLACEHOLDER: &str = "http://sample.example.org";

/// Gzip bodies are inflated to look for the placeholder only up to this size; a larger body
/// (say, a decompression bomb a test serves on purpose) is sent untouched.
const MAX_INFLATE: u64 = 16 << 20;

/// `testdata/REL` in this crate, whatever the current directory.
pub fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Logged {
    /// `GET`, `HEAD`, ...
    pub method: String,
    /// The request path, percent-decoded, without the query: `/res/with space.txt`.
    pub path: String,
    /// The request target exactly as sent: `/res/with%20space.txt?x=1`.
    pub url: String,
    /// Request headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The status the server answered, or 0 for a request held by [`Rule::Stall`].
    pub status: u16,
    /// When the server decided the answer (before any delay).
    pub at: Instant,
    /// The client's address and port: one per connection the client opened.
    pub peer: Option<std::net::SocketAddr>,
}

impl Logged {
    /// The first value of a request header (`name` in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// What the server does for one path instead of serving the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Always answer this status with a short text body.
    Status(u16),
    /// The first `times` requests get `status` (with `Retry-After` when given), later ones
    /// are served normally.
    FailThen {
        status: u16,
        times: usize,
        retry_after: Option<String>,
    },
    /// Answer `status` with this `Location` (the placeholder origin in it is rewritten).
    Redirect { location: String, status: u16 },
    /// Accept the request and never answer, until the server is dropped.
    Stall,
    /// Serve these bytes (rewritten like a file, with ETag and 304s) whether or not a file
    /// exists.
    Body(Vec<u8>),
    /// [`Rule::Body`] with `Content-Encoding: coding` (the bytes already in that coding, as a
    /// server that keeps them compressed serves them whatever the request's Accept-Encoding).
    Encoded { body: Vec<u8>, coding: String },
    /// [`Rule::Body`] served as `content_type` with these extra header fields (the placeholder
    /// origin in their values rewritten): a page with `Link` headers.
    WithHeaders {
        body: Vec<u8>,
        content_type: String,
        headers: Vec<(String, String)>,
    },
}

/// A running server; dropping it stops the server.
pub struct TestServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when the server stops, to end delays and stalls.
    wake: Condvar,
    base: String,
}

struct State {
    root: PathBuf,
    rules: HashMap<String, Armed>,
    delay: Duration,
    log: Vec<Logged>,
    stopping: bool,
}

struct Armed {
    rule: Rule,
    hits: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking handler must not take the other tests' server down with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sleeps `d`, or less if the server stops; true if the server is still running.
    fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut state = self.lock();
        loop {
            if state.stopping {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            state = self
                .wake
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn wait_until_stopped(&self) {
        let mut state = self.lock();
        while !state.stopping {
            state = self
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl TestServer {
    /// Serves the folder `root` (relative paths are taken from the crate root, so
    /// `"testdata/sample"` works from any directory).
    pub fn start(root: impl AsRef<Path>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        let port = addr.port();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                root: served_root(root.as_ref()),
                rules: HashMap::new(),
                delay: Duration::ZERO,
                log: Vec::new(),
                stopping: false,
            }),
            wake: Condvar::new(),
            base: format!("http://127.0.0.1:{port}"),
        });
        let accept = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name(format!("test-server-{port}"))
                .spawn(move || {
                    for stream in listener.incoming() {
                        if shared.lock().stopping {
                            break;
                        }
                        // A failed accept is the client's loss: keep serving.
                        if let Ok(stream) = stream {
                            let shared = Arc::clone(&shared);
                            thread::spawn(move || serve_connection(&shared, stream));
                        }
                    }
                })
                .expect("spawn the accept thread")
        };
        TestServer {
            shared,
            addr,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn base(&self) -> String {
        self.shared.base.clone()
    }

    /// `base()` + `path` (`path` starts with '/').
    pub fn url(&self, path: &str) -> String {
        assert!(path.starts_with('/'), "path must start with '/': {path:?}");
        format!("{}{}", self.shared.base, path)
    }

    /// Every request so far, in the order the server decided its answer (before any delay).
    pub fn requests(&self) -> Vec<Logged> {
        self.shared.lock().log.clone()
    }

    /// Forgets the log (e.g. between a first and a second run).
    pub fn clear_requests(&self) {
        self.shared.lock().log.clear();
    }

    /// How many requests asked for `path` (compared percent-decoded, query ignored).
    pub fn count(&self, path: &str) -> usize {
        let path = rule_key(path);
        self.shared
            .lock()
            .log
            .iter()
            .filter(|l| l.path == path)
            .count()
    }

    /// Sets the behaviour of `path` (percent-decoded, query ignored); replaces an earlier rule
    /// for that path and restarts its count.
    pub fn set_rule(&self, path: &str, rule: Rule) {
        self.shared
            .lock()
            .rules
            .insert(rule_key(path), Armed { rule, hits: 0 });
    }

    /// Serves `path` normally again.
    pub fn clear_rule(&self, path: &str) {
        self.shared.lock().rules.remove(&rule_key(path));
    }

    /// Waits `d` before every response (0 to stop waiting).
    pub fn set_delay(&self, d: Duration) {
        self.shared.lock().delay = d;
    }

    /// Serves another folder from now on (same port, rules and log kept).
    pub fn set_root(&self, root: impl AsRef<Path>) {
        self.shared.lock().root = served_root(root.as_ref());
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_all();
        // Wake the accept loop, which then sees `stopping` and drops the listener.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        // Stalled or delayed handlers wake up and close their connection without an answer.
    }
}

fn served_root(root: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(root);
    assert!(root.is_dir(), "not a folder to serve: {}", root.display());
    root
}

/// Rules and counts are keyed by the decoded path without query.
fn rule_key(path: &str) -> String {
    let path = path.split(['?', '#']).next().unwrap_or("");
    percent_decode(path).unwrap_or_else(|| path.to_owned())
}

// ------------------------------------------------------------------------------------------
// answering one request

enum Reply {
    Stall,
    Send {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        /// Content-Length to announce; differs from `body.len()` only for 304.
        length: usize,
    },
}

impl Reply {
    fn status(&self) -> u16 {
        match self {
            Reply::Stall => 0,
            Reply::Send { status, .. } => *status,
        }
    }

    fn text(status: u16, text: &str) -> Reply {
        Reply::Send {
            status,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: text.as_bytes().to_vec(),
            length: text.len(),
        }
    }
}

/// One request as read off the wire.
struct Incoming {
    method: String,
    /// The request target as sent.
    url: String,
    headers: Vec<(String, String)>,
    /// The client asked for the connection to end after this answer.
    close: bool,
}

/// Reads one request head (and skips any body); None at the end of the connection or on a
/// request that cannot be read (the connection is then closed).
fn read_request(reader: &mut impl BufRead) -> Option<Incoming> {
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (method, url, version) = (parts.next()?, parts.next()?, parts.next()?);
    let (method, url, version) = (method.to_owned(), url.to_owned(), version.to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let length: u64 = header(&headers, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    std::io::copy(&mut reader.take(length), &mut std::io::sink()).ok()?;
    let connection = header(&headers, "connection")
        .unwrap_or("")
        .to_ascii_lowercase();
    let close = connection.contains("close")
        || (version == "HTTP/1.0" && !connection.contains("keep-alive"));
    Some(Incoming {
        method,
        url,
        headers,
        close,
    })
}

/// Answers the requests of one connection in turn, keeping it open while the client does.
fn serve_connection(shared: &Shared, stream: TcpStream) {
    let peer = stream.peer_addr().ok();
    // An idle connection of a client that has gone away does not keep its thread forever.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader) {
        let Some((status, headers, body, length)) = handle(shared, &request, peer) else {
            return; // stalled until the server stopped, or stopped while delayed
        };
        let no_body = request.method == "HEAD" || status == 304 || status == 204;
        // A body shorter than its Content-Length (a truncation on purpose) ends the
        // connection, so that the client sees the end of the data.
        let close = request.close || (!no_body && body.len() != length);
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        for (k, v) in &headers {
            if !k.eq_ignore_ascii_case("content-length") && !k.eq_ignore_ascii_case("connection") {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        head.push_str(&format!("Content-Length: {length}\r\n"));
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        if !no_body {
            out.extend_from_slice(&body);
        }
        // The client may have gone away: that is its business.
        if writer
            .write_all(&out)
            .and_then(|()| writer.flush())
            .is_err()
            || close
        {
            return;
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        410 => "Gone",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Logs the request and decides the answer: (status, headers, body, Content-Length), or None
/// when nothing is to be sent (a stall, or the server stopped during a delay).
#[allow(clippy::type_complexity)]
fn handle(
    shared: &Shared,
    request: &Incoming,
    peer: Option<SocketAddr>,
) -> Option<(u16, Vec<(String, String)>, Vec<u8>, usize)> {
    let method = request.method.clone();
    let url = request.url.clone();
    let headers = request.headers.clone();
    let raw_path = url.split(['?', '#']).next().unwrap_or("");
    let path = percent_decode(raw_path);

    let (reply, delay) = {
        let mut state = shared.lock();
        let reply = decide(&mut state, &shared.base, &method, path.as_deref(), &headers);
        state.log.push(Logged {
            method: method.clone(),
            path: path.unwrap_or_else(|| raw_path.to_owned()),
            url,
            headers,
            status: reply.status(),
            at: Instant::now(),
            peer,
        });
        (reply, state.delay)
    };

    if !delay.is_zero() && !shared.sleep(delay) {
        return None;
    }
    match reply {
        Reply::Stall => {
            shared.wait_until_stopped();
            None
        }
        Reply::Send {
            status,
            headers,
            body,
            length,
        } => Some((status, headers, body, length)),
    }
}

fn decide(
    state: &mut State,
    base: &str,
    method: &str,
    path: Option<&str>,
    headers: &[(String, String)],
) -> Reply {
    let Some(path) = path else {
        return Reply::text(400, "bad percent-encoding in the path\n");
    };
    if let Some(armed) = state.rules.get_mut(path) {
        armed.hits += 1;
        match &armed.rule {
            Rule::Status(status) => return Reply::text(*status, &format!("status {status}\n")),
            Rule::FailThen {
                status,
                times,
                retry_after,
            } if armed.hits <= *times => {
                let mut reply = Reply::text(*status, &format!("failure {}\n", armed.hits));
                if let (Some(after), Reply::Send { headers, .. }) = (retry_after, &mut reply) {
                    headers.push(("Retry-After".into(), after.clone()));
                }
                return reply;
            }
            Rule::FailThen { .. } => {}
            Rule::Redirect { location, status } => {
                return Reply::Send {
                    status: *status,
                    headers: vec![("Location".into(), location.replace(PLACEHOLDER, base))],
                    body: Vec::new(),
                    length: 0,
                };
            }
            Rule::Stall => return Reply::Stall,
            Rule::Body(bytes) => return entity(bytes.clone(), path, base, method, headers),
            Rule::Encoded { body, coding } => {
                let mut reply = entity(body.clone(), path, base, method, headers);
                if let Reply::Send { headers, .. } = &mut reply {
                    headers.push(("Content-Encoding".into(), coding.clone()));
                }
                return reply;
            }
            Rule::WithHeaders {
                body,
                content_type,
                headers: extra,
            } => {
                let mut reply = entity(body.clone(), path, base, method, headers);
                if let Reply::Send { headers, .. } = &mut reply {
                    headers.retain(|(n, _)| n != "Content-Type");
                    headers.push(("Content-Type".into(), content_type.clone()));
                    for (n, v) in extra {
                        headers.push((n.clone(), v.replace(PLACEHOLDER, base)));
                    }
                }
                return reply;
            }
        }
    }
    if method != "GET" && method != "HEAD" {
        let mut reply = Reply::text(405, "GET and HEAD only\n");
        if let Reply::Send { headers, .. } = &mut reply {
            headers.push(("Allow".into(), "GET, HEAD".into()));
        }
        return reply;
    }
    let Some(file) = resolve(&state.root, path) else {
        return Reply::text(400, "path escapes the served folder\n");
    };
    if !file.is_file() {
        return Reply::text(404, "not found\n");
    }
    match std::fs::read(&file) {
        Ok(bytes) => entity(bytes, path, base, method, headers),
        Err(_) => Reply::text(404, "not found\n"),
    }
}

/// A 200 (or 304) for `bytes` served at `path`.
fn entity(
    bytes: Vec<u8>,
    path: &str,
    base: &str,
    method: &str,
    request: &[(String, String)],
) -> Reply {
    let body = rewrite(bytes, base);
    let digest = Sha256::digest(&body);
    let etag = format!("\"{}\"", hex::encode(&digest[..16]));
    let last_modified = last_modified(&digest);
    let headers = vec![
        ("Content-Type".into(), content_type(path, &body).into()),
        ("ETag".into(), etag.clone()),
        ("Last-Modified".into(), last_modified.clone()),
    ];
    let length = body.len();
    let conditional = method == "GET" || method == "HEAD";
    if conditional && not_modified(request, &etag, &last_modified) {
        // RFC 9110 §8.6: a 304 may carry the Content-Length the 200 would have had.
        return Reply::Send {
            status: 304,
            headers,
            body: Vec::new(),
            length,
        };
    }
    Reply::Send {
        status: 200,
        headers,
        body,
        length,
    }
}

/// RFC 9110 §13.1.2 / §13.1.3: If-None-Match (weak comparison) wins over If-Modified-Since,
/// which is matched exactly against our Last-Modified (as nginx does by default).
fn not_modified(request: &[(String, String)], etag: &str, last_modified: &str) -> bool {
    if let Some(tags) = header(request, "if-none-match") {
        return tags
            .split(',')
            .map(str::trim)
            .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag);
    }
    header(request, "if-modified-since").is_some_and(|since| since.trim() == last_modified)
}

/// A Last-Modified derived from the served bytes: stable across runs and ports of the same
/// content, different (with near certainty) when a test swaps the content under a path, so an
/// exact If-Modified-Since match means "unchanged". Dates fall in 2025.
fn last_modified(digest: &[u8]) -> String {
    const START_2025: i64 = 1_735_689_600;
    const SPAN: u32 = 300 * 86_400;
    let offset = u32::from_be_bytes([digest[16], digest[17], digest[18], digest[19]]) % SPAN;
    jiff::Timestamp::from_second(START_2025 + i64::from(offset))
        .expect("a date in 2025")
        .strftime("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// Replaces the placeholder origin by `base`; a gzip body (magic 1F 8B, whatever its name) is
/// inflated, rewritten and deflated again if it contains the placeholder.
fn rewrite(body: Vec<u8>, base: &str) -> Vec<u8> {
    let from = PLACEHOLDER.as_bytes();
    if body.starts_with(&[0x1f, 0x8b]) {
        let mut plain = Vec::new();
        let inflated = MultiGzDecoder::new(&body[..])
            .take(MAX_INFLATE + 1)
            .read_to_end(&mut plain);
        if inflated.is_err() || plain.len() as u64 > MAX_INFLATE || find(&plain, from).is_none() {
            return body;
        }
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&replace_all(&plain, from, base.as_bytes()))
            .expect("deflate to memory");
        return gz.finish().expect("deflate to memory");
    }
    if find(&body, from).is_none() {
        return body;
    }
    replace_all(&body, from, base.as_bytes())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(i) = find(rest, from) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

fn content_type(path: &str, body: &[u8]) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or("");
    let ext = name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase());
    match ext.as_deref() {
        Some("xml") => "application/xml",
        Some("gz") => "application/gzip",
        Some("zst") => "application/zstd",
        Some("zip") => "application/zip",
        Some("txt") => "text/plain",
        Some("html" | "htm") => "text/html",
        Some("json") => "application/json",
        Some("png") => "image/png",
        // No telling extension (`/.well-known/resourcesync`): sniff.
        _ if body.starts_with(b"<") => "application/xml",
        _ => "application/octet-stream",
    }
}

/// The file a decoded URL path names inside `root`; None if a segment tries to leave it.
fn resolve(root: &Path, path: &str) -> Option<PathBuf> {
    let mut file = root.to_path_buf();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => return None,
            s if s.contains(['\\', '\0']) => return None,
            s => file.push(s),
        }
    }
    Some(file)
}

/// `%XX` decoding; None on a bad escape or if the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = hex_value(*bytes.get(i + 1)?)?;
            let lo = hex_value(*bytes.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::net::TcpStream;

    /// A response read off the wire.
    struct Answer {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Answer {
        fn header(&self, name: &str) -> Option<&str> {
            header(&self.headers, name)
        }
    }

    fn connect(server: &TestServer) -> TcpStream {
        let addr = server.base().trim_start_matches("http://").to_owned();
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream
    }

    /// Sends one request on `stream` (the target is sent verbatim, `..` included).
    fn send(stream: &mut TcpStream, method: &str, target: &str, extra: &[(&str, &str)]) {
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: test\r\n");
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).expect("send");
    }

    /// Reads one response, its body by Content-Length (none for HEAD and 304).
    fn receive(reader: &mut BufReader<TcpStream>, method: &str) -> std::io::Result<Answer> {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').expect("a header line");
            headers.push((k.to_ascii_lowercase(), v.trim().to_owned()));
        }
        let length: usize = header(&headers, "content-length")
            .map(|v| v.parse().unwrap())
            .unwrap_or(0);
        let mut body = vec![
            0;
            if method == "HEAD" || status == 304 {
                0
            } else {
                length
            }
        ];
        reader.read_exact(&mut body)?;
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// A GET with libcurl (the crate's own HTTP client), not this module's hand-made requests.
    fn curl_get(url: &str, extra: &[(&str, &str)]) -> Answer {
        let mut easy = curl::easy::Easy::new();
        easy.url(url).unwrap();
        let mut list = curl::easy::List::new();
        for (name, value) in extra {
            list.append(&format!("{name}: {value}")).unwrap();
        }
        easy.http_headers(list).unwrap();
        let (mut head, mut body) = (Vec::new(), Vec::new());
        {
            let mut transfer = easy.transfer();
            transfer
                .header_function(|line| {
                    head.push(String::from_utf8_lossy(line).trim_end().to_string());
                    true
                })
                .unwrap();
            transfer
                .write_function(|data| {
                    body.extend_from_slice(data);
                    Ok(data.len())
                })
                .unwrap();
            transfer.perform().unwrap();
        }
        let headers = head
            .iter()
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Answer {
            status: easy.response_code().unwrap() as u16,
            headers,
            body,
        }
    }

    fn request(server: &TestServer, method: &str, target: &str, extra: &[(&str, &str)]) -> Answer {
        let mut stream = connect(server);
        send(&mut stream, method, target, extra);
        receive(&mut BufReader::new(stream), method).expect("a response")
    }

    fn get(server: &TestServer, target: &str) -> Answer {
        request(server, "GET", target, &[])
    }

    fn file(rel: &str) -> Vec<u8> {
        std::fs::read(testdata(rel)).unwrap()
    }

    #[test]
    fn serves_files_and_rewrites_the_placeholder() {
        let server = TestServer::start("testdata/sample");
        let a = get(&server, "/rs/capabilitylist.xml");
        assert_eq!(a.status, 200);
        assert_eq!(a.header("content-type"), Some("application/xml"));
        let text = String::from_utf8(a.body.clone()).unwrap();
        assert!(
            text.contains(&server.url("/rs/resourcelist-index.xml")),
            "{text}"
        );
        assert!(!text.contains(PLACEHOLDER), "{text}");
        assert_eq!(a.header("content-length"), Some(&*a.body.len().to_string()));

        // Resources are served byte for byte.
        assert_eq!(
            get(&server, "/res/image.png").body,
            file("sample/res/image.png")
        );
        let spaced = get(&server, "/res/with%20space.txt");
        assert_eq!(spaced.status, 200);
        assert_eq!(spaced.body, file("sample/res/with space.txt"));
        let empty = get(&server, "/res/empty.txt");
        assert_eq!(
            (empty.status, empty.header("content-length")),
            (200, Some("0"))
        );
        let wk = get(&server, "/.well-known/resourcesync");
        assert_eq!(wk.header("content-type"), Some("application/xml"));
        assert!(String::from_utf8(get(&server, "/robots.txt").body)
            .unwrap()
            .contains(&format!("Sitemap: {}/rs/", server.base())));
    }

    #[test]
    fn rewrites_the_placeholder_inside_gzip_bodies() {
        let server = TestServer::start("testdata/syntax/gzip");
        let a = get(&server, "/resourcelist.xml.gz");
        assert_eq!(a.status, 200);
        assert_eq!(&a.body[..2], &[0x1f, 0x8b]);
        let mut text = String::new();
        MultiGzDecoder::new(&a.body[..])
            .read_to_string(&mut text)
            .unwrap();
        assert!(text.contains(&server.url("/res/a.txt")), "{text}");
        assert!(!text.contains(PLACEHOLDER));
    }

    #[test]
    fn rejects_escapes_directories_and_missing_files() {
        let server = TestServer::start("testdata/sample");
        assert_eq!(get(&server, "/../make_fixtures.py").status, 400);
        assert_eq!(
            get(&server, "/res/%2e%2e/%2e%2e/make_fixtures.py").status,
            400
        );
        assert_eq!(get(&server, "/res/%zz").status, 400);
        assert_eq!(get(&server, "/res").status, 404);
        assert_eq!(get(&server, "/res/").status, 404);
        assert_eq!(get(&server, "/res/nope.txt").status, 404);
        assert_eq!(request(&server, "POST", "/res/a.txt", &[]).status, 405);
        let statuses: Vec<u16> = server.requests().iter().map(|l| l.status).collect();
        assert_eq!(statuses, [400, 400, 400, 404, 404, 404, 405]);
    }

    #[test]
    fn answers_304_to_a_matching_etag_or_date() {
        let server = TestServer::start("testdata/syntax/v1_1");
        let url = server.url("/resourcelist.xml");
        // With the crate's own HTTP client, to be sure it reads our 304s.
        let first = curl_get(&url, &[]);
        assert_eq!(first.status, 200);
        let etag = first.header("etag").unwrap().to_owned();
        let date = first.header("last-modified").unwrap().to_owned();
        assert!(
            etag.starts_with('"') && etag.ends_with('"'),
            "strong: {etag}"
        );

        let again = curl_get(&url, &[("If-None-Match", &etag)]);
        assert_eq!(again.status, 304);
        assert_eq!(again.header("etag"), Some(etag.as_str()));
        assert!(again.body.is_empty());
        let weak = format!("\"x\", W/{etag}");
        let a = request(
            &server,
            "GET",
            "/resourcelist.xml",
            &[("If-None-Match", &weak)],
        );
        assert_eq!(a.status, 304);
        let a = request(
            &server,
            "GET",
            "/resourcelist.xml",
            &[("If-Modified-Since", &date)],
        );
        assert_eq!(a.status, 304);
        let a = request(
            &server,
            "HEAD",
            "/resourcelist.xml",
            &[("If-None-Match", &etag)],
        );
        assert_eq!(a.status, 304);
        let a = request(
            &server,
            "GET",
            "/resourcelist.xml",
            &[("If-None-Match", "\"x\"")],
        );
        assert_eq!(a.status, 200);

        // The same path with other content: a new validator, no 304 on the old ones.
        server.set_root("testdata/syntax/v1_0");
        let a = request(
            &server,
            "GET",
            "/resourcelist.xml",
            &[("If-None-Match", &etag)],
        );
        assert_eq!(a.status, 200);
        assert_ne!(a.header("etag"), Some(&*etag));
        let a = request(
            &server,
            "GET",
            "/resourcelist.xml",
            &[("If-Modified-Since", &date)],
        );
        assert_eq!(a.status, 200);
        assert_ne!(a.header("last-modified"), Some(&*date));
    }

    #[test]
    fn head_announces_the_length_without_a_body() {
        let server = TestServer::start("testdata/sample");
        let a = request(&server, "HEAD", "/res/a.txt", &[]);
        assert_eq!(a.status, 200);
        assert_eq!(
            a.header("content-length"),
            Some(&*file("sample/res/a.txt").len().to_string())
        );
        assert!(a.header("etag").is_some() && a.header("last-modified").is_some());
    }

    #[test]
    fn fail_then_fails_the_first_requests_then_serves() {
        let server = TestServer::start("testdata/sample");
        server.set_rule(
            "/res/a.txt",
            Rule::FailThen {
                status: 503,
                times: 2,
                retry_after: Some("2".into()),
            },
        );
        let answers: Vec<Answer> = (0..4).map(|_| get(&server, "/res/a.txt")).collect();
        let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
        assert_eq!(statuses, [503, 503, 200, 200]);
        assert_eq!(answers[0].header("retry-after"), Some("2"));
        assert_eq!(answers[2].header("retry-after"), None);
        assert_eq!(answers[3].body, file("sample/res/a.txt"));
        assert_eq!(server.count("/res/a.txt"), 4);
        assert_eq!(server.count("/res/b.txt"), 0);

        // Setting a rule again restarts its count.
        server.set_rule(
            "/res/a.txt",
            Rule::FailThen {
                status: 429,
                times: 1,
                retry_after: None,
            },
        );
        assert_eq!(get(&server, "/res/a.txt").status, 429);
        assert_eq!(get(&server, "/res/a.txt").status, 200);
    }

    #[test]
    fn redirect_sends_location_with_the_origin_rewritten() {
        let server = TestServer::start("testdata/broken/redirect_offsite");
        server.set_rule(
            "/res/moved",
            Rule::Redirect {
                location: "http://elsewhere.example.net/res/moved".into(),
                status: 301,
            },
        );
        let a = get(&server, "/res/moved");
        assert_eq!(a.status, 301);
        assert_eq!(
            a.header("location"),
            Some("http://elsewhere.example.net/res/moved")
        );

        server.set_rule(
            "/res/moved",
            Rule::Redirect {
                location: format!("{PLACEHOLDER}/res/moved-target"),
                status: 302,
            },
        );
        let a = get(&server, "/res/moved");
        assert_eq!(a.status, 302);
        let location = server.url("/res/moved-target");
        assert_eq!(a.header("location"), Some(&*location));
        assert_eq!(
            get(&server, "/res/moved-target").body,
            file("broken/redirect_offsite/res/moved")
        );
    }

    #[test]
    fn status_and_body_rules_replace_the_file() {
        let server = TestServer::start("testdata/sample");
        server.set_rule("/res/a.txt", Rule::Status(500));
        assert_eq!(get(&server, "/res/a.txt").status, 500);
        server.set_rule(
            "/res/with%20space.txt",
            Rule::Body(format!("see {PLACEHOLDER}/x\n").into_bytes()),
        );
        let a = get(&server, "/res/with%20space.txt");
        assert_eq!(a.status, 200);
        assert_eq!(a.body, format!("see {}/x\n", server.base()).into_bytes());
        server.set_rule("/not/a/file", Rule::Body(vec![0, 1, 2]));
        let a = get(&server, "/not/a/file");
        assert_eq!((a.status, a.body), (200, vec![0, 1, 2]));

        server.clear_rule("/res/a.txt");
        assert_eq!(get(&server, "/res/a.txt").status, 200);
        server.clear_rule("/not/a/file");
        assert_eq!(get(&server, "/not/a/file").status, 404);
    }

    #[test]
    fn a_stalled_request_blocks_nobody_and_is_released_on_drop() {
        let server = TestServer::start("testdata/sample");
        server.set_rule("/res/a.txt", Rule::Stall);
        let mut stalled = connect(&server);
        send(&mut stalled, "GET", "/res/a.txt", &[]);
        let waiter = thread::spawn(move || {
            let started = Instant::now();
            let answer = receive(&mut BufReader::new(stalled), "GET");
            (answer.map(|a| a.status).ok(), started.elapsed())
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.count("/res/a.txt") == 0 {
            assert!(
                Instant::now() < deadline,
                "the stalled request never arrived"
            );
            thread::sleep(Duration::from_millis(10));
        }

        // Other requests, on other connections, are answered meanwhile.
        let others: Vec<_> = (0..4)
            .map(|_| {
                let url = server.url("/res/b.txt");
                thread::spawn(move || curl_get(&url, &[]).status)
            })
            .collect();
        for other in others {
            assert_eq!(other.join().unwrap(), 200);
        }
        assert!(!waiter.is_finished());
        assert_eq!(server.requests()[0].status, 0);

        drop(server);
        let (status, waited) = waiter.join().unwrap();
        assert!(
            waited < Duration::from_secs(10),
            "released only after {waited:?}"
        );
        // tiny_http answers 500 for a dropped request, or the connection just closes.
        assert!(matches!(status, None | Some(500)), "{status:?}");
    }

    #[test]
    fn delay_holds_every_response() {
        let server = TestServer::start("testdata/sample");
        server.set_delay(Duration::from_millis(300));
        let started = Instant::now();
        assert_eq!(get(&server, "/res/b.txt").status, 200);
        assert!(started.elapsed() >= Duration::from_millis(300));
        server.set_delay(Duration::ZERO);
        let started = Instant::now();
        assert_eq!(get(&server, "/res/b.txt").status, 200);
        assert!(started.elapsed() < Duration::from_millis(300));
    }

    #[test]
    fn keeps_connections_alive_and_logs_headers() {
        let server = TestServer::start("testdata/sample");
        let mut stream = connect(&server);
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        send(&mut stream, "GET", "/res/a.txt?x=1", &[("X-Probe", "one")]);
        assert_eq!(receive(&mut reader, "GET").unwrap().status, 200);
        send(
            &mut stream,
            "GET",
            "/res/with%20space.txt",
            &[("X-Probe", "two")],
        );
        assert_eq!(receive(&mut reader, "GET").unwrap().status, 200);

        let log = server.requests();
        assert_eq!(log.len(), 2);
        assert_eq!(
            (log[0].method.as_str(), log[0].path.as_str()),
            ("GET", "/res/a.txt")
        );
        assert_eq!(log[0].url, "/res/a.txt?x=1");
        assert_eq!(log[0].header("X-PROBE"), Some("one"));
        assert!(log[0].headers.iter().any(|(k, _)| k == "x-probe"));
        assert_eq!(log[1].path, "/res/with space.txt");
        assert_eq!(server.count("/res/with%20space.txt"), 1);
        assert_eq!(server.count("/res/a.txt"), 1);
        server.clear_requests();
        assert!(server.requests().is_empty());
    }

    #[test]
    fn leaves_untouched_bytes_and_oversized_gzip_alone() {
        let base = "http://127.0.0.1:1";
        assert_eq!(rewrite(b"plain".to_vec(), base), b"plain");
        assert_eq!(
            rewrite(
                format!("a {PLACEHOLDER}/x {PLACEHOLDER}").into_bytes(),
                base
            ),
            format!("a {base}/x {base}").into_bytes()
        );
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(PLACEHOLDER.as_bytes()).unwrap();
        gz.write_all(&vec![b' '; MAX_INFLATE as usize]).unwrap();
        let bomb = gz.finish().unwrap();
        assert_eq!(rewrite(bomb.clone(), base), bomb);
        assert_eq!(percent_decode("/a%20b%2Fc").as_deref(), Some("/a b/c"));
        assert_eq!(percent_decode("/%+f"), None);
    }
}
