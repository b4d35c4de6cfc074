//! `rsmirror serve`: the mirror on the web, read-only. Memento (RFC 7089) TimeGates, TimeMaps
//! and mementos for every URI the mirror holds (`memento`), the status page, `/status.json`,
//! `/healthz` and `/metrics` (`page`), and the mirror as a ResourceSync source another
//! destination follows (`resourcesync`), each rendered from what `access` returns.
//!
//! It never takes the writer's lock: every request reads through a catalog connection of its
//! own (kept in a small pool between requests), and SQLite's WAL gives each statement a
//! consistent snapshot while a run writes beside it; while a run is under way the mirror is
//! served as the last run that ended left it. The HTTP side (`http`) is hyper on a small tokio
//! runtime: the handlers are synchronous, on tokio's blocking pool, and stream an object's bytes
//! through a bounded channel.

mod auth;
mod browse;
mod feeds;
pub(crate) mod http;
mod memento;
mod page;
pub(crate) mod reply;
mod resourcesync;
mod route;

use crate::access::Reader;
use crate::error::Error;
use crate::exit::Exit;
use reply::Reply;
use route::{Refused, Route};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// What `serve` was told (`cli::ServeArgs` fills it).
pub struct Options {
    pub mirror: PathBuf,
    pub listen: SocketAddr,
    /// The URL clients reach this server at (behind a reverse proxy); None: `http://` and the
    /// request's `Host`.
    pub base_url: Option<String>,
    /// Connections served at once; more wait in the kernel's queue.
    pub max_connections: usize,
    /// A connection that has not sent a whole request head within this (a new one, or one
    /// kept alive between requests) is closed.
    pub header_timeout: Duration,
    /// A connection whose client takes none of a response's bytes for this long is closed.
    pub send_timeout: Duration,
    /// Where the Bearer token every request must carry is (its first line); None: no token.
    pub auth_token_file: Option<PathBuf>,
    /// How long SIGTERM waits for the requests under way before it stops.
    pub drain: Duration,
    /// Mementos on one TimeMap page.
    pub timemap_page: usize,
    /// Entries in one ResourceSync list document (at most 50,000).
    pub list_size: usize,
    /// The WebSub hub the feeds link (`--feed-hub`).
    pub feed_hub: Option<String>,
    /// Entries in one archive document of the feeds.
    pub feed_archive_size: usize,
    /// One line per request on stderr, as text or JSON; none with `quiet`.
    pub log_format: crate::logfile::LogFormat,
    pub quiet: bool,
    /// When `/healthz` says a sync point or the fixity checks are stale (as `status`).
    pub limits: crate::access::status::Options,
}

/// What every request shares.
pub(crate) struct State {
    options: Options,
    /// Readers between requests: a catalog connection and the runs, read again only when a
    /// run has committed since ([`Reader::refresh`]).
    readers: Mutex<Vec<Reader>>,
    /// Responses by status class (1xx..5xx), for `/metrics`.
    answered: [AtomicU64; 5],
    started: jiff::Timestamp,
    /// The token requests must carry (`--auth-token-file`).
    token: Option<auth::Token>,
    /// What the ResourceSync documents keep between requests.
    lists: resourcesync::Cache,
}

/// A request as the handlers see it.
pub(crate) struct Head {
    pub path: String,
    pub query: Option<String>,
    pub head: bool,
    pub accept_datetime: Option<String>,
    pub accept: Option<String>,
    pub host: Option<String>,
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<String>,
}

/// Serve until SIGTERM (exit 0) or SIGINT (exit 130), each draining the requests under way.
pub fn run(options: Options) -> Result<Exit, Error> {
    // A mirror that cannot be read is refused now, with its hint (a damaged catalog names the
    // way back), not at the first request.
    let first = Reader::open(&options.mirror)?;
    let token = match &options.auth_token_file {
        Some(file) => Some(auth::Token::read(file)?),
        None => None,
    };
    let state = State {
        token,
        lists: Default::default(),
        options,
        readers: Mutex::new(vec![first]),
        answered: Default::default(),
        started: jiff::Timestamp::now(),
    };
    http::serve(state)
}

impl State {
    /// The answer to one request: the handlers' reply, or their error as a 5xx said in one
    /// line. Runs on tokio's blocking pool.
    pub(crate) fn answer(&self, req: &Head) -> Reply {
        let reply = match self.reader() {
            Ok(mut reader) => {
                let reply = self.route(&mut reader, req);
                if reply.is_ok() {
                    self.readers.lock().expect("never poisoned").push(reader);
                }
                reply
            }
            Err(e) => Err(e),
        };
        let reply = reply.unwrap_or_else(|e| {
            let status = match &e {
                // The catalog busy or unreadable now: a client may try again.
                Error::Store(_) => 503,
                _ => 500,
            };
            Reply::error(status, &format!("rsmirror: {e}"))
        });
        self.answered[usize::from(reply.status / 100).clamp(1, 5) - 1]
            .fetch_add(1, Ordering::Relaxed);
        reply
    }

    fn reader(&self) -> Result<Reader, Error> {
        let pooled = self.readers.lock().expect("never poisoned").pop();
        let mut reader = match pooled {
            Some(r) => r,
            None => Reader::open(&self.options.mirror)?,
        };
        reader.refresh()?;
        Ok(reader)
    }

    fn route(&self, reader: &mut Reader, req: &Head) -> Result<Reply, Error> {
        let route = match route::route(&req.path, req.query.as_deref()) {
            Ok(r) => r,
            Err(Refused::NotFound(m)) => return Ok(Reply::error(404, &m)),
            Err(Refused::BadRequest(m)) => return Ok(Reply::error(400, &m)),
        };
        let base = self.base(req.host.as_deref());
        let urls = memento::Urls { base: &base };
        let as_json = browse::wants_json(req.accept.as_deref(), req.query.as_deref());
        match route {
            Route::TimeGate(uri) => {
                memento::timegate(reader, &urls, &uri, req.accept_datetime.as_deref())
            }
            Route::Memento { at, uri } => memento::memento(reader, &urls, &uri, at, req.head),
            Route::Latest(uri) => memento::latest(reader, &urls, &uri, req.head),
            Route::TimeMap { format, page, uri } => {
                memento::timemap(reader, &urls, &uri, format, page, self.options.timemap_page)
            }
            Route::StatusJson => page::status_json(self),
            Route::Healthz => page::healthz(self),
            Route::Metrics => page::metrics(self, reader),
            Route::Page => page::page(self, reader),
            Route::Browse => browse::listing(reader, req.query.as_deref(), as_json),
            Route::Versions(uri) => browse::versions(reader, &urls, &uri, as_json),
            Route::Diff => browse::changes(reader, req.query.as_deref(), as_json),
            Route::SourceDescription => Ok(self.source(&base).description()),
            Route::CapabilityList => Ok(self.source(&base).capabilities()),
            Route::ResourceList => self.source(&base).resource_list(reader),
            Route::ResourcePage { run, page } => {
                self.source(&base).resource_page(reader, run, page, true)
            }
            Route::ChangeLists => self.source(&base).change_lists(reader),
            Route::OpenChangeList => Ok(self.source(&base).open_change_list(reader)),
            Route::ChangeList { run, part } => self.source(&base).change_list(reader, run, part),
            Route::FeedsFolder => Ok(Reply::new(301).header("location", format!("{base}/feeds/"))),
            Route::Feeds(path) => {
                let site = crate::access::feed::Site {
                    base: &format!("{base}/feeds"),
                    hub: self.options.feed_hub.as_deref(),
                    per_archive: self.options.feed_archive_size,
                };
                feeds::answer(reader, &site, &path, req)
            }
        }
    }

    /// The mirror as a ResourceSync source, its URLs under `base`.
    fn source<'a>(&'a self, base: &'a str) -> resourcesync::Source<'a> {
        resourcesync::Source {
            base,
            per_list: self.options.list_size,
            cache: &self.lists,
        }
    }

    /// Where clients reach this server: `--base-url`, else `http://` and the request's `Host`
    /// (when it is a host name or address and a port, nothing else), else the listening
    /// address.
    fn base(&self, host: Option<&str>) -> String {
        if let Some(b) = &self.options.base_url {
            return b.trim_end_matches('/').to_string();
        }
        let plain = |h: &str| {
            !h.is_empty()
                && h.len() <= 255
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        };
        match host.filter(|h| plain(h)) {
            Some(h) => format!("http://{h}"),
            None => format!("http://{}", self.options.listen),
        }
    }
}
