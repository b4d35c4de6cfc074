//! Documents (Source Descriptions, Capability Lists, lists and their indexes, manifests, SCP
//! and ARC sitemaps, dump packages read as they arrive) on libcurl, read as a stream.
//!
//! One GET is one easy transfer on a worker thread of its own: the worker hands the response
//! head, then the body in the pieces libcurl delivers, over a bounded channel to a
//! [`BodyReader`], so a body of any size (a 10 GB dump, a list of millions of URLs) takes a
//! few hundred KiB of memory, and a reader that stops reading stops the transfer (libcurl's
//! write callback waits). Workers are kept between GETs with their easy handles: a worker that
//! has finished a transfer takes the next GET, a new one starts when none is free (a reader
//! still open holds its worker), and one left idle for [`IDLE`] ends. A GET over TLS runs on a
//! multi handle of `net::pool`, so that its kept-alive connection serves the next GET, a
//! document's or the resource transfers' (over HTTP/2, as streams); a cleartext one keeps its
//! connection with the worker's easy handle.
//!
//! What a GET is (the options, the head's framing, libcurl's errors) is `easy`'s, shared with
//! resource transfers; what a document needs besides (retries, redirects checked against the
//! scope, conditional GETs, `--map`, `--delay`) is `agent`'s. Waits are bounded here: the head
//! must come within `--timeout` of the request, and each piece of the body within `--timeout`
//! of the last (the reader's own pauses do not count); a transfer nobody reads any more is
//! ended by libcurl's progress callback.

use crate::model::Validators;
use crate::net::config::HttpConfig;
use crate::net::easy::{configure_get, failure, transport, Head, MAX_DROPPED_BODY};
use crate::net::easy::{host_key, http_version, CURL_HTTP_VERSION_2_0};
use crate::net::pool::Pool;
use crate::net::FetchError;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use curl::easy::{Easy2, Handler, WriteError};
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use url::Url;

/// Pieces of body a worker may hand over ahead of the reader (each at most [`BUFFER`]).
const PIECES: usize = 8;
/// libcurl's receive buffer for a document (`CURLOPT_BUFFERSIZE`), and so the largest piece.
const BUFFER: usize = 64 * 1024;
/// How long a worker without a GET to make stays (with its connections).
const IDLE: Duration = Duration::from_secs(30);

/// Why an attempt failed, and whether another attempt may mend it.
pub(crate) type Failure = (FetchError, bool);

/// What a worker hands to the reader of its GET while the transfer runs. When it is over,
/// the worker leaves the [`End`] and drops its sender: the reader, past the last piece, finds
/// the channel closed and the end in its place. (An end sent down the channel would wait for
/// the reader to catch up, holding the worker, and its connection, from the next GET.)
enum Message {
    /// The final response's head, when it has a representation.
    Head(Head),
    Data(Vec<u8>),
}

/// How a transfer ended: the final response's head when it was not sent ahead (a response
/// without a representation: a redirect, a 304, an error), and whether it completed.
type End = (Option<Head>, Result<(), Failure>);

/// One GET for a worker to make.
struct Job {
    url: Url,
    validators: Validators,
    to: Sender<Message>,
    end: Arc<Mutex<Option<End>>>,
    /// Set when nobody reads the answer any more.
    abandoned: Arc<AtomicBool>,
}

/// What every document GET is made with.
struct Settings {
    cfg: HttpConfig,
    user_agent: String,
    /// Where a GET over TLS takes its multi handle (and connections) from, and puts it back.
    pool: Arc<Pool>,
}

/// The document workers of one [`Http`](crate::net::Http).
pub(crate) struct Documents {
    settings: Arc<Settings>,
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    /// Workers waiting for a GET and not yet claimed by one.
    idle: Arc<AtomicUsize>,
    /// GETs sent before they were asked for ([`Documents::send_ahead`]), with their answers
    /// as they come: the first [`Documents::send`] of the same URL with the same validators
    /// takes one rather than sending again.
    ahead: Mutex<Vec<Ahead>>,
}

/// A GET sent ahead, and the reader of its answer.
struct Ahead {
    url: Url,
    validators: Validators,
    body: BodyReader,
}

/// GETs sent ahead and not asked for yet, at most: the oldest is dropped (and its transfer
/// ended) past them.
const AHEAD: usize = 4;

/// A response whose head is in; its body is read from `body`.
pub(crate) struct Response {
    pub(crate) head: Head,
    pub(crate) body: BodyReader,
}

impl Documents {
    pub(crate) fn new(cfg: HttpConfig, user_agent: String, pool: Arc<Pool>) -> Documents {
        let (jobs, queue) = crossbeam_channel::unbounded();
        Documents {
            settings: Arc::new(Settings {
                cfg,
                user_agent,
                pool,
            }),
            jobs,
            queue,
            idle: Arc::new(AtomicUsize::new(0)),
            ahead: Mutex::new(Vec::new()),
        }
    }

    /// Send a GET of `url` now, for a [`Documents::send`] of it to come: its answer waits
    /// (a few pieces of its body at most, then the transfer waits for its reader) until then,
    /// or until [`Documents::forget_ahead`].
    pub(crate) fn send_ahead(&self, url: &Url, validators: &Validators) {
        let body = self.dispatch_get(url, validators);
        let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        if ahead.len() >= AHEAD {
            ahead.remove(0);
        }
        ahead.push(Ahead {
            url: url.clone(),
            validators: validators.clone(),
            body,
        });
    }

    /// End the GETs sent ahead that nobody asked for (each holds a worker, and its connection,
    /// once its reader's pieces are full).
    pub(crate) fn forget_ahead(&self) {
        self.ahead.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// One attempt at a GET of `url` (no redirect followed, no retry): the response once its
    /// head is in. A GET of the same sent ahead is taken instead of sending another.
    pub(crate) fn send(&self, url: &Url, validators: &Validators) -> Result<Response, Failure> {
        let sent = {
            let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
            let at = ahead
                .iter()
                .position(|a| a.url == *url && a.validators == *validators);
            at.map(|i| ahead.remove(i).body)
        };
        let mut body = sent.unwrap_or_else(|| self.dispatch_get(url, validators));
        let timeout = self.settings.cfg.timeout;
        match body.from.recv_timeout(timeout) {
            Ok(Message::Head(head)) => Ok(Response { head, body }),
            // Dropping `body` tells the worker.
            Err(RecvTimeoutError::Timeout) => {
                let url = url.to_string();
                Err((FetchError::Timeout { url, timeout }, true))
            }
            Ok(Message::Data(_)) | Err(RecvTimeoutError::Disconnected) => match body.take_end() {
                Some((Some(head), Ok(()))) => {
                    body.ended = Some(Ok(()));
                    Ok(Response { head, body })
                }
                Some((_, Err(failure))) => Err(failure),
                Some((None, Ok(()))) | None => {
                    let message = "the transfer ended without a response".to_string();
                    Err((transport(url, message), true))
                }
            },
        }
    }

    /// Hand a GET of `url` to a worker: the reader of its answer.
    fn dispatch_get(&self, url: &Url, validators: &Validators) -> BodyReader {
        let (to, from) = crossbeam_channel::bounded(PIECES);
        let abandoned = Arc::new(AtomicBool::new(false));
        let end = Arc::new(Mutex::new(None));
        self.dispatch(Job {
            url: url.clone(),
            validators: validators.clone(),
            to,
            end: Arc::clone(&end),
            abandoned: Arc::clone(&abandoned),
        });
        BodyReader {
            from,
            end,
            abandoned,
            piece: Vec::new(),
            at: 0,
            timeout: self.settings.cfg.timeout,
            url: url.clone(),
            ended: None,
        }
    }

    /// Hand `job` to an idle worker, or to a new one when none is idle.
    fn dispatch(&self, job: Job) {
        let claimed = self
            .idle
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if !claimed {
            let (queue, idle) = (self.queue.clone(), Arc::clone(&self.idle));
            let settings = Arc::clone(&self.settings);
            // Without a thread (the system's limit reached), the GET waits for a worker to
            // finish, or times out.
            let _ = std::thread::Builder::new()
                .name("rsmirror-document".to_string())
                .spawn(move || work(&queue, &idle, &settings));
        }
        // The queue lives as long as `self`.
        let _ = self.jobs.send(job);
    }
}

/// A worker: one easy handle (and its connections), one GET at a time.
fn work(queue: &Receiver<Job>, idle: &AtomicUsize, settings: &Settings) {
    let mut easy = Easy2::new(Sink::default());
    loop {
        let job = match queue.recv_timeout(IDLE) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                // Leave, unless a GET has claimed this worker meanwhile (its job is coming).
                let leave = idle
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                if leave {
                    return;
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let (sink, result) = transfer(&mut easy, settings, &job);
        let head = (sink.head.complete && !sink.head_sent).then_some(sink.head);
        *job.end.lock().unwrap_or_else(|e| e.into_inner()) = Some((head, result));
        // Free before the reader learns of the end (when the channel closes), so that the GET
        // it leads to (a redirect's next hop, the next document) finds this worker and its
        // connection.
        idle.fetch_add(1, Ordering::SeqCst);
        drop(job);
    }
}

/// Make `job`'s GET on `easy`: what its handler saw, and how the transfer ended.
fn transfer(easy: &mut Easy2<Sink>, settings: &Settings, job: &Job) -> (Sink, Result<(), Failure>) {
    let cfg = &settings.cfg;
    let mut fresh = false;
    loop {
        easy.reset();
        *easy.get_mut() = Sink {
            url: job.url.to_string(),
            to: Some(job.to.clone()),
            abandoned: Arc::clone(&job.abandoned),
            ..Sink::default()
        };
        let configured = configure_get(
            easy,
            cfg,
            &settings.user_agent,
            &job.url,
            &job.validators,
            fresh,
        )
        .and_then(|()| easy.buffer_size(BUFFER))
        // The progress callback is how a transfer nobody reads any more is ended.
        .and_then(|()| easy.progress(true));
        if let Err(e) = configured {
            let error = transport(&job.url, format!("libcurl: {e}"));
            return (std::mem::take(easy.get_mut()), Err((error, false)));
        }
        // Over TLS on a kept multi handle, so that the resources after it can go out on the
        // same connection; a cleartext one stays on this thread's handle (`net::pool`).
        let result = if job.url.scheme() == "http" {
            easy.perform()
        } else {
            perform_pooled(&settings.pool, easy)
        };
        // The transfers to a host that spoke HTTP/2 here share a connection from the first.
        if http_version(easy.raw()) >= CURL_HTTP_VERSION_2_0 {
            settings.pool.speaks_h2(host_key(&job.url));
        }
        // How near the source is: from the request out to the first byte of its answer.
        if let (Ok(first), Ok(out)) = (easy.starttransfer_time(), easy.pretransfer_time()) {
            if result.is_ok() && first > out {
                settings.pool.answered(first - out);
            }
        }
        // libcurl's own words for a failure are in the handle's error buffer.
        let result = result.map_err(|mut e| {
            if let Some(s) = easy.take_error_buf() {
                e.set_extra(s);
            }
            e
        });
        let mut sink = std::mem::take(easy.get_mut());
        let stale = result.as_ref().is_err_and(|e| e.is_aborted_by_callback())
            && !sink.head.complete
            && !job.abandoned.load(Ordering::Relaxed);
        if stale && !fresh {
            // The kept-alive connection picked had bytes waiting that nobody asked for: the
            // request was not sent. Again, on a new connection.
            fresh = true;
            continue;
        }
        let result = sink.conclude(&job.url, result, cfg.timeout);
        return (sink, result);
    }
}

/// `easy`'s transfer, to its end, on a multi handle taken from `pool` and put back after (with
/// the connection it ran on).
fn perform_pooled(pool: &Pool, easy: &mut Easy2<Sink>) -> Result<(), curl::Error> {
    let multi_error = |e: curl::MultiError| {
        let mut error = curl::Error::new(curl_sys::CURLE_FAILED_INIT);
        error.set_extra(format!("libcurl: {e}"));
        error
    };
    let (multi, _) = pool.take();
    // `add2` takes the handle; this one stands in meanwhile.
    let own = std::mem::replace(easy, Easy2::new(Sink::default()));
    let handle = multi.add2(own).map_err(multi_error)?;
    let result = loop {
        if let Err(e) = multi.perform() {
            break Err(multi_error(e));
        }
        let mut done = None;
        multi.messages(|m| done = done.take().or_else(|| m.result_for2(&handle)));
        if let Some(result) = done {
            break result;
        }
        if let Err(e) = multi.wait(&mut [], Duration::from_secs(1)) {
            break Err(multi_error(e));
        }
    };
    let back = multi.remove2(handle).map_err(multi_error)?;
    *easy = back;
    pool.keep(multi);
    result
}

/// The handler of one document transfer: reads the head, hands the body on.
#[derive(Default)]
struct Sink {
    url: String,
    head: Head,
    to: Option<Sender<Message>>,
    abandoned: Arc<AtomicBool>,
    /// The head went to the reader: the body goes after it.
    head_sent: bool,
    received: u64,
    /// Bytes of an error or redirect body, dropped.
    dropped: u64,
    /// Why this handler stopped the transfer.
    error: Option<FetchError>,
}

impl Sink {
    fn send(&self, message: Message) -> bool {
        self.to.as_ref().is_some_and(|to| to.send(message).is_ok())
    }

    /// How the transfer ended, from libcurl's result and what this handler saw.
    fn conclude(
        &mut self,
        url: &Url,
        result: Result<(), curl::Error>,
        timeout: Duration,
    ) -> Result<(), Failure> {
        if let Some(e) = self.error.take() {
            // A response refused for its head: the same request gets the same answer.
            return Err((e, false));
        }
        match result {
            Ok(()) => Ok(()),
            // An error or redirect body cut short by us: the status decides.
            Err(e) if e.is_write_error() && self.head.complete && !self.head_sent => Ok(()),
            Err(e) => {
                let received = self.head_sent.then_some(self.received);
                Err(failure(url, &e, timeout, received))
            }
        }
    }
}

impl Handler for Sink {
    fn header(&mut self, line: &[u8]) -> bool {
        match self.head.line(line) {
            Ok(false) => true,
            Ok(true) if self.head.has_representation() => {
                self.head_sent = true;
                self.send(Message::Head(self.head.clone()))
            }
            Ok(true) => true,
            Err(message) => {
                let url = self.url.clone();
                self.error
                    .get_or_insert(FetchError::Transport { url, message });
                false
            }
        }
    }

    fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        crate::net::bwlimit::take(data.len());
        if !self.head_sent {
            // An error page, a redirect's note: read (a little) so the connection can be
            // reused, kept nowhere.
            self.dropped += data.len() as u64;
            return Ok(if self.dropped > MAX_DROPPED_BODY {
                0
            } else {
                data.len()
            });
        }
        self.received += data.len() as u64;
        // Waits while the reader is [`PIECES`] behind; fails once it is gone.
        if self.send(Message::Data(data.to_vec())) {
            Ok(data.len())
        } else {
            Ok(0)
        }
    }

    fn progress(&mut self, _: f64, _: f64, _: f64, _: f64) -> bool {
        !self.abandoned.load(Ordering::Relaxed)
    }
}

/// A document's body as it arrives. Errors are `io::Error`s carrying the [`FetchError`]
/// (`Http::read_error` gets it back): a piece that does not come within `--timeout` is
/// [`FetchError::Timeout`], a transfer that broke off is [`FetchError::Transport`].
pub(crate) struct BodyReader {
    from: Receiver<Message>,
    end: Arc<Mutex<Option<End>>>,
    abandoned: Arc<AtomicBool>,
    piece: Vec<u8>,
    at: usize,
    timeout: Duration,
    url: Url,
    /// The body is over: `Ok` at its end, `Err` with why it failed.
    ended: Option<Result<(), String>>,
}

impl BodyReader {
    fn take_end(&mut self) -> Option<End> {
        self.end.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn fail(&mut self, kind: io::ErrorKind, error: FetchError) -> io::Error {
        self.abandoned.store(true, Ordering::Relaxed);
        self.ended = Some(Err(error.to_string()));
        io::Error::new(kind, error)
    }
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.at < self.piece.len() {
                let n = buf.len().min(self.piece.len() - self.at);
                buf[..n].copy_from_slice(&self.piece[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            match &self.ended {
                Some(Ok(())) => return Ok(0),
                Some(Err(why)) => {
                    let message = format!("read after the body failed ({why})");
                    let url = self.url.to_string();
                    return Err(io::Error::other(FetchError::Transport { url, message }));
                }
                None => {}
            }
            match self.from.recv_timeout(self.timeout) {
                Ok(Message::Data(piece)) => {
                    self.piece = piece;
                    self.at = 0;
                }
                Ok(Message::Head(_)) => {}
                Err(RecvTimeoutError::Timeout) => {
                    let (url, timeout) = (self.url.to_string(), self.timeout);
                    let error = FetchError::Timeout { url, timeout };
                    return Err(self.fail(io::ErrorKind::TimedOut, error));
                }
                Err(RecvTimeoutError::Disconnected) => match self.take_end() {
                    Some((_, Ok(()))) => self.ended = Some(Ok(())),
                    Some((_, Err((error, _)))) => {
                        return Err(self.fail(io::ErrorKind::Other, error));
                    }
                    None => {
                        let message = "the transfer ended without a word".to_string();
                        let url = self.url.to_string();
                        let error = FetchError::Transport { url, message };
                        return Err(self.fail(io::ErrorKind::UnexpectedEof, error));
                    }
                },
            }
        }
    }
}

impl Drop for BodyReader {
    fn drop(&mut self) {
        self.abandoned.store(true, Ordering::Relaxed);
    }
}
