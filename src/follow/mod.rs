//! `rsmirror follow`: changes pushed to the mirror. A long-running subscriber for every
//! followed source that offers push (ResourceSync Change Notification 1.0.1 over WebSub,
//! `websub`); what it does with a notification is transport-neutral and lives here.
//!
//! The Change Lists stay the truth (ResourceSync Change Notification 1.0.1: notifications may
//! be lost, arrive twice or out of order). A verified notification is read as the small Change
//! List it is; when it names a change newer than the mirror's sync point, its source is queued
//! for a catch-up, which is an `incremental` run through the same code (`commands::
//! incremental`: the same outcomes, sync point and deletion guard), so nothing a notification
//! names is applied in any other way. Notifications that come while a catch-up runs are
//! answered at once (202) and batched into the next one. A catch-up also runs on start, when
//! a lease lapsed or a subscription was refused, and every `--catch-up-every` (a hub that gave
//! up on a failing callback says nothing): a change is never lost, only later.
//!
//! Three threads: the callback listener (`callback`, on `serve`'s HTTP server), the worker
//! that runs catch-ups and writes the subscriptions to the catalog (the only one that writes,
//! under the mirror's lock), and the subscriber that (re)subscribes at half the lease each hub
//! granted. SIGTERM stops the listener, lets the catch-up in hand finish, and ends (exit 0).

mod callback;
mod discovery;
pub(crate) mod websub;

use crate::error::{Error, UsageError};
use crate::exit::Exit;
use crate::rs::notification::Channel;
use crate::settings;
use crate::store::subscriptions::{self as rows, Subscription};
use crate::store::{Catalog, MirrorLock};
use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use url::Url;
use websub::Mode;

/// What `follow` was told (`cli::FollowArgs` fills it).
pub struct Options {
    pub mirror: PathBuf,
    /// The sources to follow; empty: every source the mirror follows.
    pub sources: Vec<String>,
    pub listen: SocketAddr,
    /// The callback URLs given to hubs start with this (what the hub reaches `listen` at).
    pub callback_base: Url,
    /// The lease asked of each hub (it may grant another; renewal is at half the granted).
    pub lease: Duration,
    /// A notification body larger than this is refused (413).
    pub max_body: u64,
    /// A catch-up of every source this often, pushes or not.
    pub catch_up_every: Duration,
    /// The settings of each catch-up (`incremental`), its source filled in per source.
    pub incremental: settings::Incremental,
    /// A catch-up: `commands::incremental::run` (handed in by the command line, which sits
    /// above this module), with the settings and the arguments recorded with the run.
    pub catch_up: CatchUp,
    pub quiet: bool,
}

/// How a catch-up runs (see [`Options::catch_up`]).
pub type CatchUp = fn(
    &settings::Incremental,
    &str,
    &crate::progress::Progress,
) -> Result<crate::engine::context::Outcome, Error>;

/// One subscription as the follower holds it.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub row: Subscription,
    /// The callback's path (`/websub/<random>`).
    pub path: String,
    /// The (un)subscription we asked for and the hub has not verified yet.
    pub intent: Option<Mode>,
    /// When to send the next request (a renewal, a retry).
    pub next_request: Option<Instant>,
    /// When the lease the hub granted ends.
    pub lease_ends: Option<Instant>,
    /// Failed requests in a row (the retry waits twice as long each time, up to 5 minutes).
    pub failures: u32,
}

/// What every thread shares.
pub(crate) struct Follower {
    pub options: Options,
    pub subscriptions: Mutex<HashMap<String, Held>>,
    /// Sources waiting for a catch-up, and whether the process is stopping.
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Rows changed since the worker last wrote them.
    dirty: Mutex<BTreeSet<String>>,
    agent: String,
}

#[derive(Default)]
struct Queue {
    sources: BTreeSet<String>,
    stopping: bool,
}

/// Follow until SIGTERM (exit 0) or SIGINT (exit 130).
pub fn run(options: Options) -> Result<Exit, Error> {
    let sources = sources_to_follow(&options)?;
    let agent = crate::net::config::default_user_agent();
    let follower = Arc::new(Follower {
        options,
        subscriptions: Mutex::new(HashMap::new()),
        queue: Mutex::new(Queue::default()),
        wake: Condvar::new(),
        dirty: Mutex::new(BTreeSet::new()),
        agent,
    });
    follower.load(&sources)?;
    // Whatever happened while nobody listened is in the Change Lists: catch up first.
    for s in &sources {
        follower.queue_catch_up(s, "start");
    }
    let runtime = crate::serve::http::runtime("rsmirror-follow")?;
    let (listener, bound) = runtime.block_on(crate::serve::http::bind(follower.options.listen))?;
    say!(
        "rsmirror: following {} source(s) of {}: callbacks on http://{bound}/ as {} (SIGTERM \
         stops it)",
        sources.len(),
        follower.options.mirror.display(),
        follower.options.callback_base
    );
    let signal = crate::serve::http::signals();
    let worker = {
        let f = follower.clone();
        std::thread::Builder::new()
            .name("rsmirror-follow-worker".into())
            .spawn(move || f.work())
            .map_err(|e| UsageError(format!("follow: cannot start its worker: {e}")))?
    };
    let subscriber = {
        let (f, sources) = (follower.clone(), sources.clone());
        std::thread::Builder::new()
            .name("rsmirror-follow-subscriber".into())
            .spawn(move || f.subscribe_loop(&sources))
            .map_err(|e| UsageError(format!("follow: cannot start its subscriber: {e}")))?
    };
    let limits = crate::serve::http::Limits {
        max_connections: 64,
        header_timeout: Duration::from_secs(30),
        drain: Duration::from_secs(10),
        // A hub takes its answer at once; one that reads nothing for this long is let go.
        send_timeout: Duration::from_secs(30),
        quiet: false,
    };
    let site = Arc::new(callback::Callbacks {
        follower: follower.clone(),
    });
    let (exit, _) = runtime.block_on(crate::serve::http::serve_until(
        site, listener, limits, signal,
    ));
    say!("rsmirror: follow: stopping: the catch-up in hand finishes first");
    follower.stop();
    let _ = subscriber.join();
    let worker = worker.join();
    follower.write_rows();
    say!("rsmirror: follow: stopped");
    match worker {
        Ok(Ok(())) => Ok(exit),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(UsageError("follow: its worker panicked".into()).into()),
    }
}

/// The sources named, or every one the mirror follows.
fn sources_to_follow(o: &Options) -> Result<Vec<String>, Error> {
    let Some(catalog) = Catalog::open_read_only(&o.mirror)? else {
        return Err(crate::store::StoreError::Missing {
            path: o.mirror.display().to_string(),
        }
        .into());
    };
    let followed: Vec<String> = catalog
        .followed_sources()?
        .into_iter()
        .map(|(url, _, _)| url)
        .collect();
    if o.sources.is_empty() {
        if followed.is_empty() {
            return Err(UsageError(format!(
                "{} follows no source: rsmirror baseline SOURCE first",
                o.mirror.display()
            ))
            .into());
        }
        return Ok(followed);
    }
    let mut out = Vec::new();
    for s in &o.sources {
        let url = crate::engine::discover::source_url(s)?.to_string();
        if !followed.contains(&url) {
            return Err(UsageError(format!(
                "the mirror follows no source {url} (its sources: {}); rsmirror baseline {url} \
                 first",
                followed.join(", ")
            ))
            .into());
        }
        out.push(url);
    }
    Ok(out)
}

/// 24 random bytes in hex: a callback path or a secret nobody guesses.
fn random_hex() -> String {
    let mut b = [0u8; 24];
    getrandom::fill(&mut b).expect("the system's random source");
    hex::encode(b)
}

fn now_text() -> String {
    jiff::Timestamp::now().to_string()
}

impl Follower {
    /// The subscriptions the catalog records for `sources` (not ended), held again: the same
    /// callbacks and secrets, renewed at once (the leases may have lapsed meanwhile).
    fn load(&self, sources: &[String]) -> Result<(), Error> {
        let Some(catalog) = Catalog::open_read_only(&self.options.mirror)? else {
            return Ok(());
        };
        let mut held = self.subscriptions.lock().expect("never poisoned");
        for row in rows::all(&catalog)? {
            if !sources.contains(&row.source) || matches!(row.state.as_str(), "ended") {
                continue;
            }
            let Some(path) = self.path_of(&row.callback) else {
                continue; // another --callback-base: subscribed afresh below
            };
            held.insert(
                path.clone(),
                Held {
                    row,
                    path,
                    intent: None,
                    next_request: Some(Instant::now()),
                    lease_ends: None,
                    failures: 0,
                },
            );
        }
        Ok(())
    }

    /// The path of a callback URL under `--callback-base`, if it is one.
    fn path_of(&self, callback: &str) -> Option<String> {
        let base = self.options.callback_base.as_str().trim_end_matches('/');
        let rest = callback.strip_prefix(base)?;
        rest.starts_with("/websub/").then(|| rest.to_string())
    }

    fn callback_url(&self, path: &str) -> String {
        format!(
            "{}{path}",
            self.options.callback_base.as_str().trim_end_matches('/')
        )
    }

    /// A catch-up of `source` is due (`why`, said under -v).
    pub(crate) fn queue_catch_up(&self, source: &str, why: &str) {
        if !self.options.quiet && why != "start" {
            say!("rsmirror: follow: {source}: catch-up queued ({why})");
        }
        let mut q = self.queue.lock().expect("never poisoned");
        q.sources.insert(source.to_string());
        self.wake.notify_all();
    }

    /// A subscription's row changed: the worker writes it.
    pub(crate) fn mark_dirty(&self, path: &str) {
        self.dirty
            .lock()
            .expect("never poisoned")
            .insert(path.to_string());
        self.wake.notify_all();
    }

    fn stop(&self) {
        self.queue.lock().expect("never poisoned").stopping = true;
        self.wake.notify_all();
    }

    pub(crate) fn stopping(&self) -> bool {
        self.queue.lock().expect("never poisoned").stopping
    }

    /// The worker: catch-ups as they are queued (those queued meanwhile batched into the
    /// next), the subscriptions' rows written after each and every second they changed, a
    /// catch-up of every source each `--catch-up-every`. Ends when stopping, after the
    /// catch-up in hand.
    fn work(&self) -> Result<(), Error> {
        let mut last_all = Instant::now();
        loop {
            let batch = {
                let mut q = self.queue.lock().expect("never poisoned");
                loop {
                    if q.stopping {
                        return Ok(());
                    }
                    if !q.sources.is_empty() {
                        break std::mem::take(&mut q.sources);
                    }
                    let (g, _) = self
                        .wake
                        .wait_timeout(q, Duration::from_secs(1))
                        .expect("never poisoned");
                    q = g;
                    if last_all.elapsed() >= self.options.catch_up_every {
                        last_all = Instant::now();
                        let all: Vec<String> = self
                            .subscriptions
                            .lock()
                            .expect("never poisoned")
                            .values()
                            .map(|h| h.row.source.clone())
                            .collect();
                        q.sources.extend(all);
                    }
                    if !self.dirty.lock().expect("never poisoned").is_empty() {
                        drop(q);
                        self.write_rows();
                        q = self.queue.lock().expect("never poisoned");
                    }
                }
            };
            for source in batch {
                if !self.catch_up(&source) {
                    // The lock was held (a cron run) or the run failed: try again later.
                    std::thread::sleep(Duration::from_secs(1));
                    self.queue_catch_up(&source, "the last catch-up did not finish");
                }
            }
            self.write_rows();
        }
    }

    /// One catch-up of `source`: an `incremental` run of it. Whether it ended its job.
    fn catch_up(&self, source: &str) -> bool {
        let s = settings::Incremental {
            source: settings::SourceSettings {
                source: source.to_string(),
                ..self.options.incremental.source.clone()
            },
            source_given: true,
            ..self.options.incremental.clone()
        };
        let progress = crate::progress::Progress::new(true);
        let started = Instant::now();
        let arguments = format!("follow: catch-up of {source}");
        match (self.options.catch_up)(&s, &arguments, &progress) {
            Ok(outcome) => {
                let sum = &outcome.summary;
                if !self.options.quiet {
                    say!(
                        "rsmirror: follow: {source}: caught up in {:.3}s: {} created, {} \
                         updated, {} deleted, {} failed (exit {})",
                        started.elapsed().as_secs_f64(),
                        sum.created,
                        sum.updated,
                        sum.deleted,
                        sum.failed,
                        outcome.exit.code()
                    );
                }
                let done = outcome.exit == Exit::Ok;
                if done {
                    let mut held = self.subscriptions.lock().expect("never poisoned");
                    let at = now_text();
                    let mut changed = Vec::new();
                    for h in held.values_mut().filter(|h| h.row.source == source) {
                        h.row.last_catch_up_at = Some(at.clone());
                        changed.push(h.path.clone());
                    }
                    drop(held);
                    for p in changed {
                        self.mark_dirty(&p);
                    }
                }
                done
            }
            Err(e) => {
                say!("rsmirror: follow: {source}: catch-up: {e}");
                false
            }
        }
    }

    /// Write the changed rows (under the mirror's lock; a run holding it delays them).
    fn write_rows(&self) {
        let paths: Vec<String> = std::mem::take(&mut *self.dirty.lock().expect("never poisoned"))
            .into_iter()
            .collect();
        if paths.is_empty() {
            return;
        }
        let rows: Vec<Subscription> = {
            let held = self.subscriptions.lock().expect("never poisoned");
            paths
                .iter()
                .filter_map(|p| held.get(p).map(|h| h.row.clone()))
                .collect()
        };
        let written = MirrorLock::acquire(&self.options.mirror)
            .map_err(Error::from)
            .and_then(|lock| {
                let catalog = Catalog::open(&self.options.mirror)?;
                for r in &rows {
                    rows::save(&catalog, r)?;
                }
                drop(catalog);
                drop(lock);
                Ok(())
            });
        if let Err(e) = written {
            if !matches!(e, Error::Lock(_)) {
                say!("rsmirror: follow: recording the subscriptions: {e}");
            }
            self.dirty.lock().expect("never poisoned").extend(paths);
        }
    }

    /// The subscriber: discovers each source's channels, subscribes to each, renews at half
    /// the granted lease, retries what failed, and notices a lease that lapsed. Ends when
    /// stopping.
    fn subscribe_loop(&self, sources: &[String]) {
        let mut discovered_at: HashMap<String, Instant> = HashMap::new();
        while !self.stopping() {
            for source in sources {
                let due = discovered_at
                    .get(source)
                    .is_none_or(|t| t.elapsed() >= Duration::from_secs(3600));
                if due {
                    discovered_at.insert(source.clone(), Instant::now());
                    self.discover(source);
                }
            }
            self.requests_due();
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Find `source`'s channels and hold a subscription to each (a new one: a new callback
    /// path and secret).
    fn discover(&self, source: &str) {
        let url = match Url::parse(source) {
            Ok(u) => u,
            Err(_) => return, // a local file: no push
        };
        if !matches!(url.scheme(), "http" | "https") {
            return;
        }
        let channels = match discovery::channels(&url, &self.agent) {
            Ok(c) => c,
            Err(e) => {
                say!("rsmirror: follow: {source}: discovery: {e}");
                return;
            }
        };
        if channels.is_empty() && !self.options.quiet {
            say!(
                "rsmirror: follow: {source} advertises no push channel: followed by catch-ups \
                 every {}s",
                self.options.catch_up_every.as_secs()
            );
        }
        for c in channels {
            self.hold(source, &c);
        }
    }

    fn hold(&self, source: &str, c: &Channel) {
        let Some(hub) = &c.hub else {
            say!(
                "rsmirror: follow: {source}: channel {} names no hub: not subscribed",
                c.topic
            );
            return;
        };
        let mut held = self.subscriptions.lock().expect("never poisoned");
        let known = held.values().any(|h| {
            h.row.source == source && h.row.hub == hub.as_str() && h.row.topic == c.topic.as_str()
        });
        if known {
            return;
        }
        let path = format!("/websub/{}", random_hex());
        let row = Subscription {
            source: source.to_string(),
            hub: hub.to_string(),
            topic: c.topic.to_string(),
            callback: self.callback_url(&path),
            secret: random_hex(),
            state: "subscribing".into(),
            lease_requested_seconds: i64::try_from(self.options.lease.as_secs()).ok(),
            lease_granted_seconds: None,
            lease_until: None,
            last_notification_at: None,
            last_catch_up_at: None,
        };
        held.insert(
            path.clone(),
            Held {
                row,
                path: path.clone(),
                intent: None,
                next_request: Some(Instant::now()),
                lease_ends: None,
                failures: 0,
            },
        );
        drop(held);
        self.mark_dirty(&path);
    }

    /// Send the subscription requests that are due; notice lapsed leases.
    fn requests_due(&self) {
        let now = Instant::now();
        let due: Vec<Held> = {
            let mut held = self.subscriptions.lock().expect("never poisoned");
            let mut lapsed = Vec::new();
            for h in held.values_mut() {
                if h.lease_ends.is_some_and(|t| t <= now) {
                    // The lease ran out before a renewal was verified: pushes may have been
                    // missed meanwhile.
                    h.lease_ends = None;
                    h.row.state = "subscribing".into();
                    h.next_request = Some(now);
                    lapsed.push((h.row.source.clone(), h.path.clone()));
                }
            }
            let due = held
                .values_mut()
                .filter(|h| h.next_request.is_some_and(|t| t <= now))
                .map(|h| {
                    // Set before the request goes: the hub may verify before it answers.
                    h.intent = Some(Mode::Subscribe);
                    h.next_request = None;
                    h.clone()
                })
                .collect();
            drop(held);
            for (source, path) in lapsed {
                self.mark_dirty(&path);
                self.queue_catch_up(&source, "the lease lapsed");
            }
            due
        };
        for h in due {
            self.request(&h, Mode::Subscribe);
        }
    }

    /// POST a (un)subscription request for `h` to its hub.
    fn request(&self, h: &Held, mode: Mode) {
        let lease = h
            .row
            .lease_requested_seconds
            .unwrap_or(self.options.lease.as_secs() as i64)
            .to_string();
        let fields =
            websub::request_fields(mode, &h.row.callback, &h.row.topic, &lease, &h.row.secret);
        let answer = Url::parse(&h.row.hub)
            .map_err(|e| format!("{}: {e}", h.row.hub))
            .and_then(|hub| {
                crate::net::small_request::post_form(
                    &hub,
                    &fields,
                    &self.agent,
                    Duration::from_secs(30),
                )
            });
        let mut held = self.subscriptions.lock().expect("never poisoned");
        let Some(h) = held.get_mut(&h.path) else {
            return;
        };
        match answer {
            Ok(r) if (200..300).contains(&r.status) => {
                h.failures = 0;
                // Verification not come within a minute: ask again.
                if h.intent.is_some() {
                    h.next_request
                        .get_or_insert(Instant::now() + Duration::from_secs(60));
                }
                if !self.options.quiet {
                    say!(
                        "rsmirror: follow: {}: {} requested at {} for {} (HTTP {})",
                        h.row.source,
                        mode.as_str(),
                        h.row.hub,
                        h.row.topic,
                        r.status
                    );
                }
            }
            other => {
                let why = match other {
                    Ok(r) => format!("HTTP {} {}", r.status, r.body.trim()),
                    Err(e) => e,
                };
                h.failures += 1;
                let wait =
                    Duration::from_secs(5u64 << h.failures.min(6)).min(Duration::from_secs(300));
                say!(
                    "rsmirror: follow: {}: {} at {} refused: {}; again in {}s",
                    h.row.source,
                    mode.as_str(),
                    h.row.hub,
                    why.chars().take(300).collect::<String>(),
                    wait.as_secs()
                );
                h.next_request = Some(Instant::now() + wait);
            }
        }
    }

    /// The hub verified (or refused) an intent at `path`: what to answer (`Some(challenge)`:
    /// 200 with it; `None`: 404).
    pub(crate) fn verified(&self, path: &str, v: websub::Verification) -> Option<String> {
        let mut held = self.subscriptions.lock().expect("never poisoned");
        let h = held.get_mut(path)?;
        match v {
            websub::Verification::Denied { topic, reason } => {
                if topic != h.row.topic {
                    return None;
                }
                say!(
                    "rsmirror: follow: {}: the hub {} denied the subscription to {topic}: {}; \
                     followed by catch-ups, asked again in 10 minutes",
                    h.row.source,
                    h.row.hub,
                    reason.as_deref().unwrap_or("no reason given")
                );
                h.row.state = "denied".into();
                h.intent = None;
                h.lease_ends = None;
                h.next_request = Some(Instant::now() + Duration::from_secs(600));
                let (source, path) = (h.row.source.clone(), h.path.clone());
                drop(held);
                self.mark_dirty(&path);
                self.queue_catch_up(&source, "the hub denied the subscription");
                Some(String::new())
            }
            websub::Verification::Intent {
                mode,
                topic,
                challenge,
                lease_seconds,
            } => {
                // `follow --stop` (another process) asked the hub to end it: the catalog says.
                if mode == Mode::Unsubscribe
                    && h.intent != Some(mode)
                    && self.unsubscribing_recorded(&h.row.callback)
                {
                    h.intent = Some(mode);
                }
                // WebSub §5.3: only an intent we asked for, for the topic we asked it for.
                if topic != h.row.topic || h.intent != Some(mode) {
                    return None;
                }
                h.intent = None;
                h.failures = 0;
                match mode {
                    Mode::Subscribe => {
                        // Renew at half the lease the hub granted, not the one asked for.
                        let granted = lease_seconds
                            .or(h.row.lease_requested_seconds.map(|l| l.max(0) as u64))
                            .unwrap_or(86_400)
                            .max(2);
                        let now = Instant::now();
                        h.lease_ends = Some(now + Duration::from_secs(granted));
                        h.next_request = Some(now + Duration::from_secs(granted / 2));
                        h.row.state = "active".into();
                        h.row.lease_granted_seconds = i64::try_from(granted).ok();
                        h.row.lease_until = jiff::Timestamp::now()
                            .checked_add(jiff::SignedDuration::from_secs(granted as i64))
                            .ok()
                            .map(|t| t.to_string());
                        if !self.options.quiet {
                            say!(
                                "rsmirror: follow: {}: subscribed to {} at {}: lease {granted}s \
                                 granted, renewal in {}s",
                                h.row.source,
                                h.row.topic,
                                h.row.hub,
                                granted / 2
                            );
                        }
                    }
                    Mode::Unsubscribe => {
                        h.row.state = "ended".into();
                        h.lease_ends = None;
                        h.next_request = None;
                        if !self.options.quiet {
                            say!(
                                "rsmirror: follow: {}: unsubscribed from {} at {}",
                                h.row.source,
                                h.row.topic,
                                h.row.hub
                            );
                        }
                    }
                }
                let path = h.path.clone();
                drop(held);
                self.mark_dirty(&path);
                Some(challenge)
            }
        }
    }
}

impl Follower {
    /// Does the catalog say the subscription of `callback` is being ended?
    fn unsubscribing_recorded(&self, callback: &str) -> bool {
        Catalog::open_read_only(&self.options.mirror)
            .ok()
            .flatten()
            .and_then(|c| rows::all(&c).ok())
            .is_some_and(|all| {
                all.iter()
                    .any(|r| r.callback == callback && r.state == "unsubscribing")
            })
    }
}

/// `follow --stop` and `source remove`: ask each hub to end the subscriptions of `source`
/// (every source: `None`) that the catalog records, and mark them `unsubscribing` (the
/// running follower answers the hub's verification; without one, the lease lapses at its
/// end). What was asked, one line each. The caller holds the mirror's lock.
pub(crate) fn unsubscribe(catalog: &Catalog, source: Option<&str>) -> Result<Vec<String>, Error> {
    let agent = crate::net::config::default_user_agent();
    let mut said = Vec::new();
    for mut row in rows::all(catalog)? {
        if source.is_some_and(|s| s != row.source) || row.state == "ended" {
            continue;
        }
        row.state = "unsubscribing".into();
        rows::save(catalog, &row)?;
        let fields = websub::request_fields(Mode::Unsubscribe, &row.callback, &row.topic, "", "");
        let answer = Url::parse(&row.hub)
            .map_err(|e| format!("{}: {e}", row.hub))
            .and_then(|hub| {
                crate::net::small_request::post_form(&hub, &fields, &agent, Duration::from_secs(30))
            });
        said.push(match answer {
            Ok(r) if (200..300).contains(&r.status) => format!(
                "{}: unsubscribe from {} requested at {} (HTTP {})",
                row.source, row.topic, row.hub, r.status
            ),
            Ok(r) => format!(
                "{}: unsubscribe from {} refused by {}: HTTP {}; the lease ends {}",
                row.source,
                row.topic,
                row.hub,
                r.status,
                row.lease_until.as_deref().unwrap_or("when the hub says")
            ),
            Err(e) => format!(
                "{}: unsubscribe from {} at {}: {e}; the lease ends {}",
                row.source,
                row.topic,
                row.hub,
                row.lease_until.as_deref().unwrap_or("when the hub says")
            ),
        });
    }
    Ok(said)
}
