//! The HTTP side of `serve`: hyper's HTTP/1.1 server on a small tokio runtime.
//!
//! Safe by default: a cap on the connections served at once (more wait in the kernel's
//! queue), a request head of at most 16 KiB (hyper answers 431 beyond), a timeout on reading
//! a request head (a slow or idle client is closed), a timeout on sending (a client that takes
//! no bytes for `--send-timeout` is closed, [`Deadline`]), a Bearer token when one is set
//! (`auth`), GET and HEAD only and no request body.
//! The handlers run on tokio's blocking pool; an object's bytes are read whole and checked
//! before the headers go out when small, else streamed through a bounded channel with the last
//! chunk held back until the bytes proved whole, so a damaged copy is never served complete.
//! SIGTERM (and SIGINT) stop accepting, finish the requests under way (up to `--drain`), and
//! end. The connection handling is shared ([`Site`], [`serve_until`]): `follow`'s WebSub
//! callbacks are answered by the same code, with their own handler.

use crate::access::cat::Verified;
use crate::error::{Error, UsageError};
use crate::exit::Exit;
use crate::serve::reply::{Payload, Reply};
use crate::serve::{Head, State};
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future as _;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::sync::{mpsc, watch, Semaphore};

/// An object up to this size is read and checked whole before its headers go out.
const CHECKED_FIRST: u64 = 4 * 1024 * 1024;
/// The chunks a larger object streams in.
const CHUNK: usize = 256 * 1024;
/// Threads for the handlers (and the streams of large objects).
const BLOCKING_THREADS: usize = 32;
/// hyper's read buffer, which bounds a request head.
const MAX_HEAD: usize = 16 * 1024;

/// A response body: bytes made here, or an object's bytes arriving through a channel.
pub(crate) enum Body {
    Full(Option<Bytes>),
    Stream {
        chunks: mpsc::Receiver<io::Result<Bytes>>,
        length: u64,
    },
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            Body::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream { chunks, .. } => {
                chunks.poll_recv(cx).map(|c| c.map(|r| r.map(Frame::data)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream { length, .. } => SizeHint::with_exact(*length),
        }
    }
}

/// What answers the requests a listener accepts: `serve`'s mirror ([`State`]) and `follow`'s
/// WebSub callbacks share the connection handling below (limits, timeouts, draining).
pub(crate) trait Site: Send + Sync + 'static {
    fn respond(
        self: Arc<Self>,
        peer: SocketAddr,
        req: Request<Incoming>,
    ) -> Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>>;
}

/// How a listener bounds its clients.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Connections served at once; more wait in the kernel's queue.
    pub max_connections: usize,
    /// A connection without a whole request head within this is closed.
    pub header_timeout: std::time::Duration,
    /// How long a signal waits for the requests under way.
    pub drain: std::time::Duration,
    /// A connection whose client takes none of a response's bytes for this long is closed.
    pub send_timeout: std::time::Duration,
    /// Say nothing of connections cut (`-q`).
    pub quiet: bool,
}

/// The small tokio runtime a server runs on, its threads named `name`.
pub(crate) fn runtime(name: &str) -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // The handlers are short catalog reads: a few threads keep two cores busy, and each
        // keeps a catalog connection (its page cache) in the pool, which bounds the memory.
        // Streams of large objects take one each while they last.
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_name(name)
        .enable_all()
        .build()
        .map_err(|e| UsageError(format!("{name}: cannot start its runtime: {e}")).into())
}

/// Bind, serve until a signal, drain.
pub(crate) fn serve(state: State) -> Result<Exit, Error> {
    runtime("rsmirror-serve")?.block_on(accept(Arc::new(state)))
}

/// `--listen`: bound, or a usage error naming the address.
pub(crate) async fn bind(
    listen: SocketAddr,
) -> Result<(tokio::net::TcpListener, SocketAddr), Error> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| UsageError(format!("--listen {listen}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| UsageError(format!("--listen {listen}: {e}")))?;
    Ok((listener, bound))
}

/// The process's first SIGTERM (`Some(true)`) or SIGINT (`Some(false)`), handed over by
/// `interrupt` instead of ending the process.
pub(crate) fn signals() -> watch::Receiver<Option<bool>> {
    let (signalled, signal) = watch::channel(None::<bool>);
    crate::interrupt::hand_signals_to(move |term| {
        let _ = signalled.send(Some(term));
    });
    signal
}

async fn accept(state: Arc<State>) -> Result<Exit, Error> {
    let o = &state.options;
    let (listener, bound) = bind(o.listen).await?;
    say!(
        "rsmirror: serving {} read-only on http://{bound}/ (SIGTERM stops it)",
        o.mirror.display()
    );
    if !bound.ip().is_loopback() {
        say!(
            "rsmirror: warning: listening on {bound}, not on loopback: whoever reaches it reads \
             the whole mirror; put a reverse proxy with TLS and access control in front"
        );
    }
    let limits = Limits {
        max_connections: o.max_connections,
        header_timeout: o.header_timeout,
        drain: o.drain,
        send_timeout: o.send_timeout,
        quiet: o.quiet,
    };
    let signal = signals();
    let (exit, drained) = serve_until(state.clone(), listener, limits, signal).await;
    say!(
        "rsmirror: stopped serving{}",
        if drained {
            ""
        } else {
            " (requests still under way were cut at --drain)"
        }
    );
    Ok(exit)
}

/// Accept connections and hand their requests to `site` until `signal` says stop (exit 0 on
/// SIGTERM, 130 on SIGINT); then finish the requests under way, up to `limits.drain` (whether
/// they all ended in time is the second value).
pub(crate) async fn serve_until<S: Site>(
    site: Arc<S>,
    listener: tokio::net::TcpListener,
    limits: Limits,
    mut signal: watch::Receiver<Option<bool>>,
) -> (Exit, bool) {
    let stopped = |signal: &watch::Receiver<Option<bool>>| match *signal.borrow() {
        Some(false) => Exit::Interrupted,
        _ => Exit::Ok,
    };
    if signal.borrow().is_some() {
        return (stopped(&signal), true);
    }
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let (stop, stopping) = watch::channel(false);
    let exit = loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = signal.changed() => break stopped(&signal),
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors, a connection reset before it was accepted:
                    // the server goes on.
                    say!("rsmirror: accepting a connection: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = signal.changed() => break stopped(&signal),
        };
        let site = site.clone();
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let send_timeout = limits.send_timeout;
            let quiet = limits.quiet;
            let service = hyper::service::service_fn(move |req| {
                let site = site.clone();
                async move { Ok::<_, std::convert::Infallible>(site.respond(peer, req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                // As most servers write them (some Memento clients look headers up by case).
                .title_case_headers(true)
                .max_buf_size(MAX_HEAD)
                .serve_connection(TokioIo::new(Deadline::new(stream, send_timeout)), service);
            tokio::pin!(conn);
            let ended = tokio::select! {
                ended = conn.as_mut() => ended,
                _ = stopping.changed() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = ended {
                if stalled(&e) && !quiet {
                    say!(
                        "rsmirror: {peer} took none of its response for {send_timeout:?}: \
                         disconnected"
                    );
                }
            }
        });
    };
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a permit: all of them back means every request has ended.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let drained = tokio::time::timeout(limits.drain, permits.acquire_many(all))
        .await
        .is_ok();
    (exit, drained)
}

impl Site for State {
    fn respond(
        self: Arc<Self>,
        peer: SocketAddr,
        req: Request<Incoming>,
    ) -> Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>> {
        Box::pin(respond(self, peer, req))
    }
}

/// One request: GET or HEAD without a body, answered on the blocking pool; one log line.
async fn respond(state: Arc<State>, peer: SocketAddr, req: Request<Incoming>) -> Response<Body> {
    let started = Instant::now();
    let method = req.method().clone();
    let target = req.uri().to_string();
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let refused = state
        .token
        .as_ref()
        .and_then(|t| t.admits(header("authorization").as_deref()).err());
    let reply = if let Some(challenge) = refused {
        Reply::error(
            401,
            "this server answers only requests with its Bearer token",
        )
        .header("www-authenticate", challenge)
    } else if method != Method::GET && method != Method::HEAD {
        Reply::error(405, "read-only: GET and HEAD only").header("allow", "GET, HEAD")
    } else if !hyper::body::Body::is_end_stream(req.body())
        && hyper::body::Body::size_hint(req.body()).upper() != Some(0)
    {
        Reply::error(413, "a request to this server has no body").header("connection", "close")
    } else {
        let head = Head {
            path: req.uri().path().to_string(),
            query: req.uri().query().map(str::to_string),
            head: method == Method::HEAD,
            accept_datetime: header("accept-datetime"),
            accept: header("accept"),
            host: header("host"),
            if_none_match: header("if-none-match"),
            if_modified_since: header("if-modified-since"),
        };
        let shared = state.clone();
        let answered = tokio::task::spawn_blocking(move || {
            let reply = shared.answer(&head);
            body_of(reply, head.head)
        })
        .await;
        match answered {
            Ok(response) => return logged(&state, peer, &method, &target, started, response),
            Err(e) => Reply::error(500, &format!("rsmirror: the request failed: {e}")),
        }
    };
    let response = body_of(reply, method == Method::HEAD);
    logged(&state, peer, &method, &target, started, response)
}

/// A reply as a response: an object's bytes read and checked (small) or streamed (large).
pub(crate) fn body_of(reply: Reply, head: bool) -> Response<Body> {
    let Reply {
        status,
        headers,
        body,
    } = reply;
    let (body, status) = match body {
        Payload::Empty => (Body::Full(None), status),
        Payload::Bytes(_) if head => (Body::Full(None), status),
        Payload::Bytes(b) => (Body::Full(Some(Bytes::from(b))), status),
        Payload::Object { object, length } => {
            let mut bytes = (*object).verified();
            if length <= CHECKED_FIRST {
                let mut all = Vec::with_capacity(length as usize);
                match bytes.read_to_end(&mut all) {
                    Ok(_) => (Body::Full(Some(Bytes::from(all))), status),
                    Err(e) => {
                        let why = bytes
                            .damage()
                            .map_or_else(|| e.to_string(), |d| d.to_string());
                        return body_of(Reply::error(500, &format!("rsmirror: {why}")), head);
                    }
                }
            } else {
                let (tx, chunks) = mpsc::channel(4);
                tokio::runtime::Handle::current().spawn_blocking(move || pump(bytes, tx));
                (Body::Stream { chunks, length }, status)
            }
        }
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .append(HeaderName::from_static(name), v);
        }
    }
    response
}

/// Stream an object's bytes, always one chunk behind: the last chunk goes only once the
/// bytes matched the catalog; a mismatch ends the body in an error (hyper cuts the
/// connection), so a client never receives a damaged copy whole.
fn pump(mut bytes: Verified, tx: mpsc::Sender<io::Result<Bytes>>) {
    let mut held: Option<Bytes> = None;
    loop {
        let mut buf = vec![0u8; CHUNK];
        let n = match bytes.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                say!("rsmirror: serving an object: {e}");
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        buf.truncate(n);
        if let Some(previous) = held.replace(Bytes::from(buf)) {
            if tx.blocking_send(Ok(previous)).is_err() {
                return; // the client went away
            }
        }
    }
    if let Some(last) = held {
        let _ = tx.blocking_send(Ok(last));
    }
}

/// The request's log line (unless `--quiet`), text or JSON.
fn logged(
    state: &State,
    peer: SocketAddr,
    method: &Method,
    target: &str,
    started: Instant,
    response: Response<Body>,
) -> Response<Body> {
    if state.options.quiet {
        return response;
    }
    let status = response.status().as_u16();
    let bytes = match response.body() {
        Body::Full(Some(b)) => b.len() as u64,
        Body::Full(None) => 0,
        Body::Stream { length, .. } => *length,
    };
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let time = jiff::Timestamp::now();
    match state.options.log_format {
        crate::logfile::LogFormat::Json => say!(
            "{}",
            serde_json::json!({
                "time": time.to_string(),
                "remote": peer.to_string(),
                "method": method.as_str(),
                "target": target,
                "status": status,
                "bytes": bytes,
                "ms": (ms * 1000.0).round() / 1000.0,
            })
        ),
        crate::logfile::LogFormat::Text => say!(
            "{time} {peer} \"{method} {}\" {status} {bytes} {ms:.3}ms",
            target.escape_debug()
        ),
    }
    response
}

/// A connection whose writes may wait at most `limit` for the client to take bytes: past it a
/// write fails (`TimedOut`), hyper ends the connection, and the body's producer (an object
/// streaming on the blocking pool) stops at its next chunk. A slow or stopped reader cannot
/// hold a connection's place and a thread for ever.
struct Deadline {
    stream: tokio::net::TcpStream,
    limit: std::time::Duration,
    /// Since when a write has been waiting for the client, if one is.
    waiting: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Deadline {
    fn new(stream: tokio::net::TcpStream, limit: std::time::Duration) -> Deadline {
        Deadline {
            stream,
            limit,
            waiting: None,
        }
    }

    /// A write that made no progress: Pending while the limit holds, an error past it.
    fn wait(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let limit = self.limit;
        let sleep = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, Stalled))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Why a connection was cut: its client took nothing for `--send-timeout`.
#[derive(Debug)]
struct Stalled;

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the client took no bytes for --send-timeout")
    }
}

impl std::error::Error for Stalled {}

/// Whether hyper ended a connection because [`Deadline`] cut it.
fn stalled(e: &hyper::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let ours = |e: &(dyn std::error::Error + 'static)| e.is::<Stalled>();
        if ours(s)
            || s.downcast_ref::<io::Error>()
                .and_then(|io| io.get_ref())
                .is_some_and(|inner| inner.is::<Stalled>())
        {
            return true;
        }
        source = s.source();
    }
    false
}

impl tokio::io::AsyncRead for Deadline {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Deadline {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_write(cx, buf) {
            Poll::Pending => this.wait(cx),
            done => {
                this.waiting = None;
                done
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_write_vectored(cx, bufs) {
            Poll::Pending => this.wait(cx),
            done => {
                this.waiting = None;
                done
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
