//! Transfer: a bounded number of requests in flight (several per thread, on libcurl's multi
//! interface: [`Transfers`]); the results go to the calling thread, which commits them
//! through the store's one writer ([`Writer`], `store::writer`).
//!
//! A fetching thread fetches into `staging/`, verifies length and digests in the same pass, and moves
//! the verified file into the object store. The writer collects results; before each catalog
//! transaction it makes the batch's objects durable with one `syncfs`, so a version row never
//! references bytes a crash could lose.

use crate::net::transfer::{Outcome, Request, Transfers};
use crate::net::{Expected, FetchError, Http, Scope, Validators};
use crate::rs::digest::Computed;
use crate::store::catalog::NewVersion;
use crate::store::new_file::NewFile;
pub use crate::store::writer::{Then, Writer};
use crate::store::ObjectStore;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// One resource to fetch.
#[derive(Debug, Clone)]
pub struct Job {
    /// The caller's index for this job.
    pub index: usize,
    /// The primary URL, then `duplicate` mirrors in preference order.
    pub urls: Vec<Url>,
    pub expected: Expected,
    pub scope: Arc<Scope>,
    /// Ask with these (a conditional GET on the blocking path): the stored version's ETag /
    /// Last-Modified, when only the server can tell whether it changed.
    pub validators: Option<Validators>,
}

/// A verified object now in the store.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub computed: Computed,
    pub final_url: Url,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub media_type: Option<String>,
    /// The `Content-Encoding` they were served with (kept as served).
    pub content_encoding: Option<String>,
    /// How the bytes arrived: by HTTP, or from a dump (then `final_url` is the package).
    pub via: crate::model::Via,
}

impl Fetched {
    /// What stands for the bytes of `url` under `--metadata-only`: nothing computed (no length,
    /// no digest), arrived by [`crate::model::Via::Metadata`]; its version carries only what
    /// the source declares ([`Fetched::version`]).
    pub(crate) fn described(url: &Url) -> Fetched {
        Fetched {
            computed: Computed {
                length: 0,
                md5_hex: String::new(),
                sha256_hex: String::new(),
                sha1_hex: None,
            },
            final_url: url.clone(),
            etag: None,
            last_modified: None,
            media_type: None,
            content_encoding: None,
            via: crate::model::Via::Metadata,
        }
    }

    /// Whether these are no bytes but a declaration (`--metadata-only`).
    pub(crate) fn is_described(&self) -> bool {
        self.via == crate::model::Via::Metadata
    }

    /// The version these bytes make of `uri` in `collection`, with what the source declares of
    /// it; a declared media type wins over the one served. No event time (a snapshot's).
    pub(crate) fn version(
        &self,
        uri: &Url,
        collection: &str,
        change: crate::model::Change,
        declared: &crate::engine::plan::Declared,
        media_type: Option<&str>,
    ) -> NewVersion {
        let bytes = !self.is_described();
        NewVersion {
            uri: uri.to_string(),
            collection: collection.to_string(),
            change,
            event_time: None,
            lastmod: declared.lastmod,
            length_bytes: bytes.then_some(self.computed.length),
            declared_length_bytes: declared.length,
            declared_hash: crate::rs::digest::declared_hash(&declared.digests),
            md5_hex: bytes.then(|| self.computed.md5_hex.clone()),
            sha1_hex: self.computed.sha1_hex.clone().filter(|_| bytes),
            sha256_hex: bytes.then(|| self.computed.sha256_hex.clone()),
            media_type: media_type
                .map(str::to_string)
                .or_else(|| self.media_type.clone()),
            arrived_via: self.via,
            fetched_from: (!matches!(
                self.via,
                crate::model::Via::Held | crate::model::Via::Metadata
            ))
            .then(|| self.final_url.to_string()),
            etag: self.etag.clone(),
            last_modified: self.last_modified.clone(),
            declared_encoding: declared.encoding.clone(),
            content_encoding: self.content_encoding.clone(),
            categories: declared.categories.clone(),
        }
    }
}

/// What became of a job.
#[derive(Debug)]
pub enum JobResult {
    Fetched(usize, Box<Fetched>),
    /// The server answered 304 to the job's validators: the stored bytes are current.
    NotModified(usize),
    /// The mirror's file system is full: no other resource can land either; the caller stops
    /// the run with this message (naming the folder), not one line per resource.
    NoSpace(String),
    /// The object store refuses writes (a read-only mount, permissions): no other resource can
    /// land either; the caller stops the run with this error, not one line per resource.
    Unwritable(crate::store::StoreError),
    /// Every URL failed; `refused` when the reason was the scope; `other_bytes` when every URL
    /// served bytes that contradict the declared length or digests, `gone` when every URL
    /// answered 404 or 410 (what a change made after the list was read gives), `unreachable`
    /// when no URL was served at all (`FetchError::is_unreachable`).
    Failed {
        index: usize,
        reason: String,
        refused: bool,
        other_bytes: bool,
        gone: bool,
        unreachable: bool,
    },
    /// The run stops fetching ([`Breaker`]): the source keeps failing, or `--max-duration` has
    /// passed. The caller commits what landed and ends the run with this message.
    Stop(String),
}

/// Resources in a row that, after their retries, the source did not serve (a 5xx or 429, no
/// answer in time, a broken connection) before a run stops asking: a source down or refusing
/// us would otherwise cost every resource its retries and backoffs (hours for a large one).
pub const FAILURES_IN_A_ROW: u32 = 20;

/// When a transfer stops early: [`FAILURES_IN_A_ROW`] unreachable resources in a row, with no
/// other result in between, or the run's `--max-duration` passed.
struct Breaker {
    in_a_row: u32,
    deadline: Option<Instant>,
    max_duration: Option<Duration>,
}

impl Breaker {
    fn new(http: &Http) -> Breaker {
        Breaker {
            in_a_row: 0,
            deadline: http.deadline(),
            max_duration: http.config().max_duration,
        }
    }

    /// The message to stop with after `r`, if the run must stop.
    fn after(&mut self, r: &JobResult) -> Option<String> {
        match r {
            JobResult::Failed {
                unreachable: true, ..
            } => self.in_a_row += 1,
            _ => self.in_a_row = 0,
        }
        if self.in_a_row >= FAILURES_IN_A_ROW {
            return Some(format!(
                "the source did not serve {FAILURES_IN_A_ROW} resources in a row (server errors, \
                 no answer in time or broken connections, after --tries each): the run stops \
                 asking; what landed is kept, and the next run goes on"
            ));
        }
        self.timed_out()
    }

    /// The message to stop with once `--max-duration` has passed.
    fn timed_out(&self) -> Option<String> {
        let (deadline, d) = (self.deadline?, self.max_duration?);
        (Instant::now() >= deadline).then(|| {
            format!(
                "--max-duration {} reached: the run stops fetching; what landed is kept, and \
                 the next run goes on",
                humanised(d)
            )
        })
    }

    /// How long until the deadline (at most `cap`).
    fn wait(&self, cap: Duration) -> Duration {
        self.deadline.map_or(cap, |d| {
            d.saturating_duration_since(Instant::now()).min(cap)
        })
    }
}

/// A duration as `--max-duration` takes it.
fn humanised(d: Duration) -> String {
    match jiff::SignedDuration::try_from(d) {
        Ok(d) => format!("{d:#}"),
        Err(_) => format!("{} s", d.as_secs()),
    }
}

/// Results a worker hands to the writer at once, and the longest it keeps one back: each
/// hand-over wakes the writer, which on a 2-core machine cost more than the catalog work.
const RESULT_BATCH: usize = 16;
const RESULT_AGE: Duration = Duration::from_millis(100);

/// Run `jobs` with `workers` requests in flight; `on_result` runs on the calling thread for
/// each result (in completion order, in small batches per thread). An error from `on_result`
/// stops the transfer (the threads drop what they have in flight and exit). Threads draw jobs
/// from `jobs` as they free up, so only the jobs in flight exist at any time (memory does not
/// grow with the list).
///
/// A thread per core (no more than `workers`) keeps its share of the requests in flight on a
/// libcurl multi handle of its own ([`Transfers`]); a retry's pause or a `--delay` holds up
/// only the request concerned.
pub(crate) fn transfer<E>(
    http: &Http,
    staging: &Path,
    objects: &ObjectStore,
    jobs: impl IntoIterator<Item = Job, IntoIter: Send>,
    workers: usize,
    mut on_result: impl FnMut(JobResult) -> Result<(), E>,
) -> Result<(), E> {
    // A document asked for ahead and not taken by now never will be.
    http.forget_ahead();
    if http.config().metadata_only {
        return described(jobs, on_result);
    }
    let pool = http.pool();
    let one_connection = !pool.h2_hosts().is_empty() && !pool.near();
    let (threads, per_thread) = shares(workers, one_connection);
    let min_free = http.config().min_free;
    // The writer's commits and the catalog's copy keep the same margin.
    crate::store::space::set_min_free(min_free);
    if let Err(message) = room_left(staging, min_free) {
        return on_result(JobResult::NoSpace(message));
    }
    // What the requests in flight have yet to write, as their lists declare it: counted with
    // the margin, so that what was started fits above it.
    let reserved = std::sync::atomic::AtomicU64::new(0);
    let jobs = std::sync::Mutex::new(jobs.into_iter().fuse());
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Room for results while the writer waits on a syncfs and a commit, so the threads keep
    // fetching meanwhile.
    let (res_tx, res_rx) = crossbeam_channel::bounded::<Vec<JobResult>>(1024 / RESULT_BATCH);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let res_tx = res_tx.clone();
            let (jobs, stop, reserved) = (&jobs, &stop, &reserved);
            s.spawn(move || {
                let stopped = || stop.load(std::sync::atomic::Ordering::Relaxed);
                // A panicking thread cannot leave the iterator half-advanced in a way that
                // matters: the others carry on with the next job.
                let next = || {
                    jobs.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .next()
                };
                let mut out = Handover::new(res_tx);
                let mut transfers = Transfers::new(http, staging, per_thread);
                transfers.share_bandwidth(threads * per_thread);
                // An HTTP/2 source: `--streams` in flight, shared by the threads.
                transfers.multiplexing(http.config().streams.div_ceil(threads));
                if one_connection {
                    transfers.one_connection();
                }
                let mut drawn_all = false;
                let (mut checked, mut since) = (Instant::now(), 0);
                let mut room = Room::new(staging, min_free, reserved);
                while !stopped() {
                    // The disk margin, checked once a second or every few results while jobs
                    // are drawn.
                    if !drawn_all
                        && (checked.elapsed() >= FREE_SPACE_CHECK || since >= FREE_SPACE_RESULTS)
                    {
                        (checked, since) = (Instant::now(), 0);
                        if let Err(message) = room.measure() {
                            out.push(JobResult::NoSpace(message));
                            out.flush();
                            return;
                        }
                    }
                    while !drawn_all && transfers.has_room() && !stopped() {
                        let Some(job) = next() else {
                            drawn_all = true;
                            break;
                        };
                        if let Some(r) = held(&job, objects, transfers.is_idle()) {
                            if !out.push(r) {
                                return;
                            }
                            continue;
                        }
                        let promise = job.expected.length.unwrap_or(0);
                        if let Err(message) = room.promise(promise) {
                            out.push(JobResult::NoSpace(message));
                            out.flush();
                            return;
                        }
                        if let Some(r) = Attempts::new(job).start_next(&mut transfers) {
                            room.done(promise);
                            if !out.push(r) {
                                return;
                            }
                        }
                    }
                    if transfers.is_idle() {
                        break;
                    }
                    for (attempts, outcome) in transfers.wait() {
                        since += 1;
                        let promise = attempts.job.expected.length.unwrap_or(0);
                        let r = match attempts.outcome(outcome, objects) {
                            Ok(r) => Some(r),
                            Err(attempts) => attempts.start_next(&mut transfers),
                        };
                        if r.is_some() {
                            room.done(promise);
                        }
                        if let Some(r) = r {
                            if !out.push(r) {
                                return;
                            }
                        }
                    }
                }
                out.flush();
            });
        }
        drop(res_tx);
        let mut outcome = Ok(());
        let mut breaker = Breaker::new(http);
        'results: loop {
            let batch = match res_rx.recv_timeout(breaker.wait(Duration::from_secs(1))) {
                Ok(batch) => batch,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => match breaker.timed_out() {
                    Some(message) => {
                        outcome = on_result(JobResult::Stop(message));
                        break 'results;
                    }
                    None => continue,
                },
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            };
            for r in batch {
                let stop = breaker.after(&r);
                if let Err(e) = on_result(r) {
                    outcome = Err(e);
                    break 'results;
                }
                if let Some(message) = stop {
                    outcome = on_result(JobResult::Stop(message));
                    break 'results;
                }
            }
        }
        // The threads start no other job; dropping the receiver makes their next send fail.
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        drop(res_rx);
        outcome
    })
}

/// `--metadata-only`: no job is fetched; each is answered with what its list declares (a
/// version without bytes, [`Fetched::described`]), or refused as a transfer would refuse it.
fn described<E>(
    jobs: impl IntoIterator<Item = Job>,
    mut on_result: impl FnMut(JobResult) -> Result<(), E>,
) -> Result<(), E> {
    for job in jobs {
        let Some(url) = job.urls.first() else {
            continue;
        };
        let r = match job.scope.check(url) {
            Ok(()) => JobResult::Fetched(job.index, Box::new(Fetched::described(url))),
            Err(e) => JobResult::Failed {
                index: job.index,
                reason: e.to_string(),
                refused: true,
                other_bytes: false,
                gone: false,
                unreachable: false,
            },
        };
        on_result(r)?;
    }
    Ok(())
}

/// A resource whose declared SHA-256 names an object the store already holds: taken from the
/// store, not fetched, once the object is read again and found to be what the list declares
/// (its length and every usable digest). So a mirror whose catalog was restored from a copy, or
/// rebuilt, re-attaches the objects it holds without asking the source for them again, and
/// bytes the mirror holds under another URL are not fetched twice. A conditional GET's job (the
/// server decides), an object that is not as declared, and one over 16 MiB (or of no declared
/// length) while the thread has transfers in flight go to the source.
fn held(job: &Job, objects: &ObjectStore, idle: bool) -> Option<JobResult> {
    use crate::rs::digest::Algorithm;
    if job.validators.is_some() {
        return None;
    }
    // Re-reading a large object holds up this thread's transfers in flight (their rate would
    // look like a trickle): only while none is.
    const LARGE: u64 = 16 << 20;
    if !idle && job.expected.length.is_none_or(|n| n > LARGE) {
        return None;
    }
    let sha256 = job
        .expected
        .digests
        .iter()
        .find(|d| d.algorithm == Algorithm::Sha256)?
        .hex
        .as_ref()?;
    // What the source's scope refuses is refused here too, as a transfer would refuse it.
    let url = job.urls.first()?;
    job.scope.check(url).ok()?;
    // Read in place, where objects are files here (not fetched from a bucket).
    let path = objects.local_file(sha256)?;
    let mut file = crate::store::objects::open_to_read(&path).ok()??;
    let with_sha1 = job
        .expected
        .digests
        .iter()
        .any(|d| d.algorithm == Algorithm::Sha1);
    let mut hasher = crate::rs::digest::Hasher::new(with_sha1);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf).ok()?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let length = hasher.length();
    let computed =
        crate::net::fetch::verify(url.to_string(), &job.expected, length, hasher).ok()?;
    Some(JobResult::Fetched(
        job.index,
        Box::new(Fetched {
            computed,
            final_url: url.clone(),
            etag: None,
            last_modified: None,
            media_type: None,
            content_encoding: None,
            via: crate::model::Via::Held,
        }),
    ))
}

/// How often a fetching thread checks the free space left: after this long, or this many
/// results (a `statvfs` costs a few microseconds).
const FREE_SPACE_CHECK: Duration = Duration::from_secs(1);
const FREE_SPACE_RESULTS: usize = 16;

/// A fetching thread's view of the `--min-free` margin: what the transfers in flight (of every
/// thread) have yet to write, as their lists declare it, counts against it, so that what is
/// started fits above it.
struct Room<'a> {
    staging: &'a Path,
    min_free: Option<u64>,
    /// Bytes promised to transfers in flight, shared by the threads.
    reserved: &'a std::sync::atomic::AtomicU64,
    /// Free bytes above the margin at the last measure, less what this thread wrote since.
    free_above: u64,
}

impl<'a> Room<'a> {
    fn new(
        staging: &'a Path,
        min_free: Option<u64>,
        reserved: &'a std::sync::atomic::AtomicU64,
    ) -> Room<'a> {
        let mut room = Room {
            staging,
            min_free,
            reserved,
            free_above: u64::MAX,
        };
        room.free_above = room.free_above_margin();
        room
    }

    fn free_above_margin(&self) -> u64 {
        crate::store::space::free_and_margin(self.staging, self.min_free)
            .map_or(u64::MAX, |(free, margin)| free.saturating_sub(margin))
    }

    /// Measure again (once a second or every few results): `Err` under the margin.
    fn measure(&mut self) -> Result<(), String> {
        self.free_above = self.free_above_margin();
        let promised = self.reserved.load(std::sync::atomic::Ordering::Relaxed);
        crate::store::space::room_left(self.staging, self.min_free, promised)
    }

    /// Promise `bytes` to a transfer about to start. Within 64 MiB of the margin every start is
    /// measured; `Err` (nothing promised) when it would not fit above it.
    fn promise(&mut self, bytes: u64) -> Result<(), String> {
        use std::sync::atomic::Ordering::Relaxed;
        let promised = self.reserved.fetch_add(bytes, Relaxed) + bytes;
        if bytes > 0 && self.free_above < promised.saturating_add(64 << 20) {
            if let Err(message) =
                crate::store::space::room_left(self.staging, self.min_free, promised)
            {
                self.reserved.fetch_sub(bytes, Relaxed);
                return Err(message);
            }
            self.free_above = self.free_above_margin();
        }
        Ok(())
    }

    /// A transfer ended (its bytes written, or dropped): no longer promised, and counted as gone
    /// from the free space until the next measure.
    fn done(&mut self, bytes: u64) {
        self.reserved
            .fetch_sub(bytes, std::sync::atomic::Ordering::Relaxed);
        self.free_above = self.free_above.saturating_sub(bytes);
    }
}

/// `Err` with the message for the run's end when the free space on `staging`'s file system is
/// under `min_free` (by default 1% of the file system, at most 1 GiB), or its inodes are gone.
pub(crate) fn room_left(staging: &Path, min_free: Option<u64>) -> Result<(), String> {
    crate::store::space::room_left(staging, min_free, 0)
}

/// Threads, and requests in flight per thread, for `workers` requests in flight: no more
/// threads than cores (a thread keeps many requests in flight). A source known to speak
/// HTTP/2 and not near (`one_connection`: a document came over HTTP/2, none was answered within
/// `net::pool::NEAR`) gets one thread: its requests are streams of one connection (RFC 9113
/// §9.1), the one the documents came on (`net::pool`), and a connection is one multi handle's,
/// so a second thread would open a second connection (a handshake more, two round trips during
/// which its share of the streams waits). A near one gets a thread per core, as HTTP/1.1 does:
/// there the bodies' hashing and writing, not the round trips, set the pace.
fn shares(workers: usize, one_connection: bool) -> (usize, usize) {
    let workers = workers.max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if one_connection {
        1
    } else {
        workers.min(cores)
    };
    (threads, workers.div_ceil(threads))
}

/// A thread's results on their way to the writer, a few at a time.
struct Handover {
    tx: crossbeam_channel::Sender<Vec<JobResult>>,
    done: Vec<JobResult>,
    oldest: Instant,
}

impl Handover {
    fn new(tx: crossbeam_channel::Sender<Vec<JobResult>>) -> Handover {
        Handover {
            tx,
            done: Vec::with_capacity(RESULT_BATCH),
            oldest: Instant::now(),
        }
    }

    /// Add a result; false when the writer has gone.
    fn push(&mut self, r: JobResult) -> bool {
        if self.done.is_empty() {
            self.oldest = Instant::now();
        }
        self.done.push(r);
        if self.done.len() >= RESULT_BATCH || self.oldest.elapsed() >= RESULT_AGE {
            return self.send();
        }
        true
    }

    /// Hand over what there is now; false when the writer has gone.
    fn send(&mut self) -> bool {
        if self.done.is_empty() {
            return true;
        }
        let batch = std::mem::replace(&mut self.done, Vec::with_capacity(RESULT_BATCH));
        self.tx.send(batch).is_ok()
    }

    fn flush(self) {
        if !self.done.is_empty() {
            let _ = self.tx.send(self.done);
        }
    }
}

/// A job's way through its URLs: each is tried in turn until one gives verified bytes.
struct Attempts {
    job: Job,
    /// The next URL to try.
    next: usize,
    reasons: Vec<String>,
    all_refused: bool,
    all_other_bytes: bool,
    all_gone: bool,
    all_unreachable: bool,
}

impl Attempts {
    fn new(job: Job) -> Attempts {
        Attempts {
            job,
            next: 0,
            reasons: Vec::new(),
            all_refused: true,
            all_other_bytes: true,
            all_gone: true,
            all_unreachable: true,
        }
    }

    /// Start a GET of the next URL; the job's result when none is left.
    fn start_next(mut self, transfers: &mut Transfers<'_, Attempts>) -> Option<JobResult> {
        let Some(url) = self.job.urls.get(self.next).cloned() else {
            return Some(self.failed());
        };
        self.next += 1;
        let request = Request {
            url,
            scope: Arc::clone(&self.job.scope),
            expected: self.job.expected.clone(),
            validators: self.job.validators.clone().unwrap_or_default(),
            create: NewFile::create,
        };
        transfers.start(request, self);
        None
    }

    /// The job's result after the GET of its latest URL, or the job back to try the next.
    // Handed straight back to `start_next`: boxing it would buy nothing.
    #[allow(clippy::result_large_err)]
    fn outcome(mut self, outcome: Outcome, objects: &ObjectStore) -> Result<JobResult, Attempts> {
        let index = self.job.index;
        let fetched = outcome.into_result();
        if self.job.validators.is_some()
            && matches!(fetched, Err(FetchError::Status { status: 304, .. }))
        {
            return Ok(JobResult::NotModified(index));
        }
        match fetched {
            Err(e) if e.is_no_space() => return Ok(JobResult::NoSpace(e.to_string())),
            Ok(staged) => {
                let url = staged.final_url.clone();
                match objects.ingest_new(staged.file, &staged.computed.sha256_hex) {
                    Ok(_) => {
                        crate::store::kill::point("object.placed");
                        return Ok(JobResult::Fetched(
                            index,
                            Box::new(Fetched {
                                computed: staged.computed,
                                final_url: staged.final_url,
                                etag: staged.etag,
                                last_modified: staged.last_modified,
                                media_type: staged.media_type,
                                content_encoding: staged.content_encoding,
                                via: crate::model::Via::Http,
                            }),
                        ));
                    }
                    Err(e) if crate::net::is_no_space(&e) => {
                        return Ok(JobResult::NoSpace(format!(
                            "{url}: cannot store object: {e}"
                        )));
                    }
                    // A bucket that fails one upload (refused, unreachable, failing) would fail
                    // every other: the run stops, unless the trouble is this object's own.
                    Err(e) if crate::net::is_unwritable(&e) || objects.fails_every_ingest(&e) => {
                        return Ok(JobResult::Unwritable(
                            objects.refused(format!("{url}: cannot store object: {e}")),
                        ));
                    }
                    Err(e) => {
                        self.all_refused = false;
                        self.all_other_bytes = false;
                        self.all_gone = false;
                        self.all_unreachable = false;
                        self.reasons
                            .push(format!("{url}: cannot store object: {e}"));
                    }
                }
            }
            Err(e) => {
                self.all_refused &= e.is_refusal();
                self.all_other_bytes &= e.is_mismatch();
                self.all_gone &= e.is_gone();
                self.all_unreachable &= e.is_unreachable();
                self.reasons.push(e.to_string());
            }
        }
        if self.next < self.job.urls.len() {
            return Err(self);
        }
        Ok(self.failed())
    }

    fn failed(self) -> JobResult {
        let some = !self.reasons.is_empty();
        JobResult::Failed {
            index: self.job.index,
            reason: self.reasons.join("; then "),
            refused: self.all_refused && some,
            other_bytes: self.all_other_bytes && some,
            gone: self.all_gone && some,
            unreachable: self.all_unreachable && some,
        }
    }
}

#[cfg(test)]
mod shares_tests {
    use super::shares;

    #[test]
    fn one_connection_is_one_thread_with_every_request_else_a_thread_per_core() {
        assert_eq!(shares(8, true), (1, 8));
        assert_eq!(shares(1, true), (1, 1));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = 8.min(cores);
        assert_eq!(shares(8, false), (threads, 8usize.div_ceil(threads)));
        assert_eq!(shares(1, false), (1, 1));
    }
}
