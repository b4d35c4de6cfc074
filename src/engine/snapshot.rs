//! Taking one collection's snapshot into the mirror, for every format whose source lists the
//! state of a collection (a Resource List or Resource Dump, an ARC sitemap): the format reads
//! the list into a [`Snapshot`] and a [`Listing`] and plans it (`Listing::plan`); this module
//! does the rest, the same for all of them. It draws the jobs from the listing, fetches them
//! (or stages them from the packages already downloaded), asks [`decide`] what each fetched
//! state is, writes versions, problems and the format's side rows through the one
//! [`Writer`], stops on a full disk with what landed committed, reports or tombstones what
//! is gone (within the deletion guard), and records the sync point and the documents read.
//!
//! ResourceSync 1.1 §10.1 is the model: a baseline takes a snapshot as of its `at`; resources
//! that fail are collected and retried by the next run; deletions come only from a complete
//! list.

use crate::engine::agreement::Agreement;
use crate::engine::apply::{self, Job, JobResult, Then, Writer};
use crate::engine::context::RunContext;
use crate::engine::decide::{decide, Basis, Held};
use crate::engine::discover::Collection;
use crate::engine::documents::Documents;
use crate::engine::listing::{Counts, InFlight, Listing, Older, Todo};
use crate::engine::plan::{self, Action, Listed};
use crate::error::Error;
use crate::model::ProblemClass;
use crate::net::{Expected, Http};
use crate::progress::Progress;
use crate::report::{problem_line, Problem, Summary};
use crate::settings;
use crate::store::catalog::{write, DocumentRecord, NewVersion, SyncPoint};
use crate::store::change_history::{record_identity, DESCRIBES_BASIS};
use crate::store::tx::Tx;
use crate::store::{Catalog, ObjectStore, StoreError};
use jiff::Timestamp;
use std::path::Path;
use std::time::Duration;

pub use crate::engine::expected::Refused;

/// Everything read from one collection's list.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub refused: Vec<Refused>,
    /// Entries the source asks not to take (an ARC page behind a login, or `noarchive`):
    /// recorded, never fetched, neither missing nor gone.
    pub skipped: Vec<Refused>,
    pub documents: Vec<DocumentRecord>,
    /// The sync point this snapshot gives: the list's `at` (min of per-part `at`).
    pub at: Option<Timestamp>,
    pub completed: Option<Timestamp>,
    /// False for a plain Sitemap (no `at`): `at` is then the newest `<lastmod>`, if any.
    pub anchored: bool,
    pub basis: String,
    /// Index parts that could not be read (message each).
    pub failed_parts: Vec<String>,
    /// Tolerated oddities, with document and line.
    pub warnings: Vec<String>,
    /// The index this list is one part of, when it says so.
    pub part_of: Option<String>,
}

impl Snapshot {
    /// True when every document was read: deletions may be derived.
    pub(crate) fn complete(&self) -> bool {
        self.failed_parts.is_empty()
    }
}

/// Where the bytes of a snapshot are when they are not fetched one by one from their URLs:
/// the packages of a Resource Dump, downloaded while the snapshot was read.
pub trait Packages {
    /// Stage the listing's entries to fetch into the store, each result to `on_result`.
    fn stage(
        &self,
        listing: &Listing,
        staging: &Path,
        objects: &ObjectStore,
        on_result: &mut dyn FnMut(JobResult) -> Result<(), Error>,
    ) -> Result<(), Error>;
}

/// One collection's snapshot, read and planned.
pub struct Planned {
    pub collection: String,
    /// The snapshot's documents, anchor and problems; its entries and their plan are in
    /// `listing`.
    pub snapshot: Snapshot,
    pub listing: Listing,
    pub counts: Counts,
    /// The packages holding the bytes, when they are not fetched from their URLs.
    pub packages: Option<Box<dyn Packages>>,
    /// How the collection is known outside the mirror (the feed's id), and on what basis.
    pub identity: Option<(String, &'static str)>,
    /// The site's and the collection's `describedby` documents as fetched
    /// (`engine::metadata`), kept with the sync point.
    pub metadata: Vec<crate::store::source_metadata::MetadataState>,
    /// What the list is called in messages: "Resource List", "ARC sitemap".
    pub list_name: &'static str,
    /// Where the collection publishes its changes (its Capability List's Change List), for
    /// the next incremental to ask for at once.
    pub changes: Option<String>,
    /// The mirror's sync point, when the list is older than it ([`older_than_mirror`]): the
    /// list takes nothing newer back, and the sync point stays.
    pub mirror_at: Option<Timestamp>,
}

impl Planned {
    /// A collection's planned snapshot, its bytes at their URLs.
    pub(crate) fn new(
        collection: String,
        snapshot: Snapshot,
        listing: Listing,
        counts: Counts,
    ) -> Self {
        Planned {
            collection,
            snapshot,
            listing,
            counts,
            packages: None,
            identity: None,
            metadata: Vec::new(),
            list_name: "Resource List",
            changes: None,
            mirror_at: None,
        }
    }

    /// The collection's `rs:ln rel="describes"`, for the feed.
    pub(crate) fn describes(mut self, describes: Option<String>) -> Self {
        self.identity = describes.map(|d| (d, DESCRIBES_BASIS));
        self
    }
}

/// Before the plan: whether the list is older than the mirror's state of `collection` (the
/// list's `at` before the collection's sync point), and if so, hold `listing` to it
/// ([`Listing::older_than_mirror`]). The sync point it is older than, if it is. A list without
/// an `at` cannot tell, and is planned as ever.
pub(crate) fn older_than_mirror(
    catalog: Option<&Catalog>,
    collection: &str,
    snapshot: &Snapshot,
    listing: &mut Listing,
    from_packages: bool,
) -> Result<Option<Timestamp>, StoreError> {
    if !snapshot.anchored {
        return Ok(None);
    }
    let newer = mirror_newer_than(catalog, collection, snapshot.at)?;
    if newer.is_some() {
        listing.older_than_mirror(Older { from_packages });
    }
    Ok(newer)
}

/// The collection's sync point, when it is later than `at` (a list's or a dump's): the mirror
/// holds a newer state than that list.
pub(crate) fn mirror_newer_than(
    catalog: Option<&Catalog>,
    collection: &str,
    at: Option<Timestamp>,
) -> Result<Option<Timestamp>, StoreError> {
    let (Some(catalog), Some(at)) = (catalog, at) else {
        return Ok(None);
    };
    let mirror_at = catalog.sync_point(collection)?.and_then(|sp| sp.at);
    Ok(mirror_at.filter(|m| at < *m))
}

/// What a list older than the mirror held back, said once (stderr and the run's problems, as
/// a warning on the collection): what, how many, and why.
fn say_held_back(
    writer: &mut Writer<'_>,
    p: &Planned,
    mirror_at: Timestamp,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let held = p.listing.held_back();
    let list_at = p.snapshot.at.map(|t| t.to_string()).unwrap_or_default();
    let mut parts = Vec::new();
    for (n, what) in [
        (
            held.newer_kept,
            "kept as the mirror holds them (their state there is newer)",
        ),
        (held.deletions_kept, "deleted since, not brought back"),
        (
            held.unknown_left,
            "not in the mirror, not taken from packages as old as the list",
        ),
        (held.not_gone, "not named by the list, not called gone"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    if parts.is_empty() {
        parts.push("it contradicts nothing the mirror holds".into());
    }
    let examples = match held.examples.is_empty() {
        true => String::new(),
        false => format!(" (such as {})", held.examples.join(", ")),
    };
    let message = format!(
        "{}: the {} is as of {list_at}, older than the mirror's state of this collection (sync \
         point {mirror_at}): nothing in it replaces a newer state: {}{examples}; the sync point \
         stays at {mirror_at}",
        p.collection,
        p.list_name,
        parts.join("; ")
    );
    progress.println(&format!("warning: {message}"));
    writer.problem(&p.collection, ProblemClass::Warning, &message)?;
    summary.warnings.push(message.clone());
    summary.held_back += held.total();
    Ok(())
}

/// When a snapshot's sync point is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPointRule {
    /// Only when every listed resource is in the mirror (ResourceSync 1.1 §10.1).
    WhenWhole,
    /// Also with resources that failed (the basis says how many; a re-run of baseline
    /// retries them): for a format with no other way to ask for one resource again.
    EvenWithFailures,
}

/// What a format whose sources list a collection's current state does in `baseline`: read
/// each list and plan it against the mirror, and say what it adds when the engine takes it.
/// It holds no writer, no summary and no run: the engine fetches, verifies, decides, writes,
/// counts, tombstones and records the sync point (`engine::snapshot`).
pub trait Lists: Sync {
    /// The snapshot of every one of `collections` (all of this format), read and planned
    /// against `mirror`; an unreadable top-level list is an error (nothing is taken then).
    fn snapshots(
        &self,
        docs: &Documents<'_>,
        s: &settings::Baseline,
        collections: Vec<Collection>,
        mirror: Mirror<'_>,
    ) -> Result<Vec<ToTake>, Error>;
}

/// The mirror as a format plans against it, read-only: its catalog (none before the first
/// run of a dry run), its objects, and the run's scratch folder for listings and packages.
#[derive(Clone, Copy)]
pub struct Mirror<'a> {
    pub catalog: Option<&'a Catalog>,
    pub objects: &'a ObjectStore,
    pub staging: &'a Path,
}

/// One collection's snapshot, read and planned by its format, for the engine to take.
pub struct ToTake {
    pub planned: Planned,
    /// What the format adds to taking it: side rows, its documents' rows, the sync point's
    /// rule.
    pub hooks: Hooks,
    /// The pause between requests the source asks for (an ARC sitemap's `crawl_rate`); the
    /// user's `--delay` wins.
    pub crawl_delay: Option<Duration>,
    /// Entries the list names that its listing does not count (an ARC page skipped, refused
    /// or listed twice): listed all the same.
    pub uncounted: u64,
}

impl ToTake {
    /// A snapshot taken as a Resource List's: its bytes at their URLs, no side rows.
    pub fn plain(planned: Planned) -> ToTake {
        ToTake {
            planned,
            hooks: Hooks::default(),
            crawl_delay: None,
            uncounted: 0,
        }
    }
}

/// What a format adds to taking its snapshot.
pub struct Hooks {
    /// How the versions arrived when not how they were fetched (`arc`).
    pub arrived_via: Option<crate::model::Via>,
    /// Rows only the format keeps, written with a version once it has its id.
    pub side_rows: Option<Box<SideRows>>,
    pub sync_point: SyncPointRule,
    /// The format's own rows in the last transaction (the records of its documents), given
    /// the source's and the run's ids.
    pub last_rows: Option<SnapshotRows>,
}

/// The rows a format keeps beside the version of a listed entry, if any.
pub type SideRows = dyn Fn(&Listed) -> Option<Then>;

/// The rows a format keeps of its documents, written with the sync point: given the open
/// transaction, the source's id and the run's.
pub type SnapshotRows = Box<dyn FnOnce(&Tx<'_>, i64, i64) -> Result<(), StoreError>>;

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            arrived_via: None,
            side_rows: None,
            sync_point: SyncPointRule::WhenWhole,
            last_rows: None,
        }
    }
}

/// What taking a snapshot needs of the run.
pub struct Run<'r> {
    pub http: &'r Http,
    pub staging: &'r Path,
    pub objects: &'r ObjectStore,
    pub source_id: i64,
    pub run_id: i64,
    pub summary: &'r mut Summary,
    pub progress: &'r Progress,
}

/// `baseline` of the collections of a format that lists them: every snapshot read and
/// planned first (an unreadable list stops the run with nothing taken), then each taken
/// through one writer, paced as its source asks unless `--delay` says otherwise.
pub(crate) fn baseline(
    ctx: &mut RunContext<'_, '_>,
    s: &settings::Baseline,
    lists: &dyn Lists,
    collections: Vec<Collection>,
) -> Result<(), Error> {
    let mirror = Mirror {
        catalog: Some(&*ctx.catalog),
        objects: ctx.objects,
        staging: ctx.staging,
    };
    let all = lists.snapshots(ctx.docs, s, collections, mirror)?;
    let mut writer = Writer::new(ctx.catalog, ctx.objects, ctx.run_id);
    for t in all {
        let paced = paced_http(&s.source, t.crawl_delay, &mut ctx.summary.warnings);
        ctx.summary.listed += t.uncounted;
        let run = Run {
            http: paced.as_ref().unwrap_or(ctx.http),
            staging: ctx.staging,
            objects: ctx.objects,
            source_id: ctx.source_id,
            run_id: ctx.run_id,
            summary: ctx.summary,
            progress: ctx.progress,
        };
        take(run, &mut writer, s, t.planned, t.hooks)?;
    }
    Ok(())
}

/// `baseline --dry-run` of the collections of a format that lists them: every snapshot read
/// and planned as a baseline would (packages staged in a temporary folder, removed after),
/// the plan printed; `Ok(true)` when every list was read whole.
pub(crate) fn dry_run(
    docs: &Documents<'_>,
    s: &settings::Baseline,
    lists: &dyn Lists,
    collections: Vec<Collection>,
    catalog: Option<&Catalog>,
    summary: &mut Summary,
) -> Result<bool, Error> {
    let staging = std::env::temp_dir().join(format!("rsmirror-dry-run-{}", std::process::id()));
    std::fs::create_dir_all(&staging).map_err(|e| StoreError::io("creating", &staging, e))?;
    let objects = match catalog {
        Some(c) => crate::store::mirror_settings::object_store(&s.mirror, c, false)?,
        None => ObjectStore::at(&s.mirror),
    };
    let mirror = Mirror {
        catalog,
        objects: &objects,
        staging: &staging,
    };
    let printed = lists
        .snapshots(docs, s, collections, mirror)
        .and_then(|all| {
            let mut planned = Vec::with_capacity(all.len());
            for t in all {
                summary.listed += t.uncounted;
                summary
                    .warnings
                    .extend(t.planned.snapshot.warnings.iter().cloned());
                planned.push(t.planned);
            }
            print_plan(&planned, s, summary)?;
            Ok(planned.iter().all(|p| p.snapshot.complete()))
        });
    let _ = std::fs::remove_dir_all(&staging);
    printed
}

/// The agent paced by the pause a source asks for (`crawl_delay`), when it asks for one and
/// `--delay` does not set one; at most [`MAX_CRAWL_DELAY`] (a longer one is said in
/// `warnings`).
pub(crate) fn paced_http(
    source: &settings::SourceSettings,
    crawl_delay: Option<Duration>,
    warnings: &mut Vec<String>,
) -> Option<Http> {
    if source.delay.is_some() {
        return None;
    }
    let d = crawl_delay.filter(|d| !d.is_zero())?;
    let (d, warning) = crawl_pause(d);
    warnings.extend(warning);
    Some(source.http_with_delay(Some(d)))
}

/// The longest pause between two requests a source's own pace (an ARC sitemap's
/// `crawl_rate`) may impose; `--delay` overrides it either way. A pause is paid once per
/// resource: at 60 s (the old bound) a site of 5,000 pages kept a cron run asleep for three
/// and a half days, and a typo such as `0.000001/d` always reaches the bound. At 2 s, twice
/// the ARC seed's own example (`1/s`), a 10,000-page site takes under six hours; an operator
/// who agrees to more gives `--delay`.
pub const MAX_CRAWL_DELAY: Duration = Duration::from_secs(2);

/// The pause a source asks for, at most [`MAX_CRAWL_DELAY`], with the warning when it was
/// clamped.
pub(crate) fn crawl_pause(asked: Duration) -> (Duration, Option<String>) {
    if asked <= MAX_CRAWL_DELAY {
        return (asked, None);
    }
    let warning = format!(
        "crawl_rate asks for {:.0} s between requests; using {} s (--delay sets any pause)",
        asked.as_secs_f64(),
        MAX_CRAWL_DELAY.as_secs()
    );
    (MAX_CRAWL_DELAY, Some(warning))
}

/// Take the planned snapshot `p` into the mirror (see the module's documentation).
pub(crate) fn take(
    run: Run<'_>,
    writer: &mut Writer<'_>,
    s: &settings::Baseline,
    mut p: Planned,
    hooks: Hooks,
) -> Result<(), Error> {
    let Run {
        http,
        staging,
        objects,
        source_id,
        run_id,
        summary,
        progress,
    } = run;
    let packages = p.packages.take();
    let counts = p.counts;
    summary.listed += counts.listed + counts.excluded;
    summary.excluded += counts.excluded;
    summary.warnings.extend(p.snapshot.warnings.iter().cloned());
    report_snapshot_problems(writer, &p, s.output.verbose > 0, summary, progress)?;
    if let Some(mirror_at) = p.mirror_at {
        say_held_back(writer, &p, mirror_at, summary, progress)?;
    }
    summary.unchanged += counts.listed - counts.wanted - p.listing.held_back().listed();

    let Hooks {
        arrived_via,
        side_rows,
        sync_point,
        last_rows,
    } = hooks;
    let failed = {
        let mut results = Results {
            writer: &mut *writer,
            listing: &p.listing,
            in_flight: InFlight::default(),
            collection: &p.collection,
            anchored: p.snapshot.anchored,
            arrived_via,
            side_rows: side_rows.as_deref(),
            rule: sync_point,
            staging,
            summary: &mut *summary,
            progress,
            failed: 0,
            agreement: Agreement::default(),
            left: (counts.wanted, counts.wanted_bytes),
        };
        // Known unchanged from the list: they agree with it.
        results.agreement.agreed(counts.listed - counts.wanted);
        progress.start("baseline", counts.wanted);
        match packages.as_ref() {
            Some(packages) => {
                packages.stage(&p.listing, staging, objects, &mut |r| results.on(r))?
            }
            None => fetch_all(http, s.jobs, objects, &mut results)?,
        }
        (results.failed, results.agreement)
    };
    let failed = failed.0 + failed.1.settle(writer, summary, progress, &p.collection)?;
    drop(packages);
    writer.flush(|_| Ok(()))?;
    crate::store::kill::point("baseline.versions-committed");

    settle_gone(writer, s, &p, summary, progress)?;
    let last = (sync_point, last_rows);
    finish(writer, (source_id, run_id), &p, last, failed, summary)
}

/// Fetch every job of the listing from its URLs, in list order, a page of jobs at a time.
fn fetch_all(
    http: &Http,
    jobs: usize,
    objects: &ObjectStore,
    results: &mut Results<'_, '_>,
) -> Result<(), Error> {
    // Jobs are drawn from the listing a page at a time as the workers take them: only the
    // ones in flight are in memory, and kept there until their result comes back.
    let unreadable = std::sync::Mutex::new(None);
    let todo = results.listing.todo(results.in_flight.clone())?;
    let drawn = todo.map_while(|t| match t {
        Ok(t) => Some(job_of(t)),
        Err(e) => {
            *unreadable.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            None
        }
    });
    apply::transfer(http, results.staging, objects, drawn, jobs, |r| {
        results.on(r)
    })?;
    match unreadable
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// The sync point (by the format's rule) and the documents read, with the last batch.
fn finish(
    writer: &mut Writer<'_>,
    (source_id, run_id): (i64, i64),
    p: &Planned,
    (rule, last_rows): (SyncPointRule, Option<SnapshotRows>),
    failed: u64,
    summary: &mut Summary,
) -> Result<(), Error> {
    let snap = &p.snapshot;
    // A list older than the mirror never moves its sync point back.
    let older = p.mirror_at.is_some();
    let (record, basis) = match rule {
        _ if older => (false, snap.basis.clone()),
        SyncPointRule::WhenWhole => (failed == 0 && snap.complete(), snap.basis.clone()),
        SyncPointRule::EvenWithFailures if failed > 0 => (
            snap.complete(),
            format!(
                "{}; {failed} resource(s) failed: rsmirror baseline retries them",
                snap.basis
            ),
        ),
        SyncPointRule::EvenWithFailures => (snap.complete(), snap.basis.clone()),
    };
    let sync_point = SyncPoint {
        collection: p.collection.clone(),
        at: snap.at,
        anchored: snap.anchored,
        basis,
    };
    if record {
        summary.sync_point = snap.at.map(|t| t.to_string());
        summary.anchored = snap.anchored;
    }
    writer.flush(|tx| {
        for d in &snap.documents {
            write::document(tx, source_id, run_id, d)?;
        }
        if let Some(rows) = last_rows {
            rows(tx, source_id, run_id)?;
        }
        if record {
            write::sync_point(tx, source_id, run_id, &sync_point)?;
        }
        if let Some((identity, basis)) = &p.identity {
            record_identity(tx, &p.collection, identity, basis)?;
        }
        for m in &p.metadata {
            crate::store::source_metadata::record(tx, run_id, m)?;
        }
        if let Some(url) = &p.changes {
            write::change_document(tx, (source_id, run_id), &p.collection, url)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// Where each result of the transfer goes: the writer, the summary, stderr.
struct Results<'x, 'w> {
    writer: &'x mut Writer<'w>,
    listing: &'x Listing,
    in_flight: InFlight,
    collection: &'x str,
    /// The list has an `at`: a resource that changed since is pending, not failed.
    anchored: bool,
    arrived_via: Option<crate::model::Via>,
    side_rows: Option<&'x SideRows>,
    rule: SyncPointRule,
    staging: &'x Path,
    summary: &'x mut Summary,
    progress: &'x Progress,
    /// Resources that failed here (a refusal or a pending change is not a failure).
    failed: u64,
    /// Whether pending resources are believable ([`Agreement`]).
    agreement: Agreement,
    /// What is left to fetch (resources, declared bytes), for the message of a full disk.
    left: (u64, u64),
}

impl Results<'_, '_> {
    fn on(&mut self, r: JobResult) -> Result<(), Error> {
        match r {
            JobResult::Unwritable(e) => Err(crate::engine::context::stop_for_fault(self.writer, e)),
            JobResult::NoSpace(message) => {
                let declared = match self.left.1 {
                    0 => String::new(),
                    n => format!(" ({} declared)", crate::report::human_bytes(n)),
                };
                let needed = format!(", with {} resources left to fetch{declared}", self.left.0);
                Err(crate::engine::context::stop_for_space(
                    self.writer,
                    self.staging,
                    message,
                    needed,
                ))
            }
            JobResult::Fetched(i, f) => {
                let t = self.take(i)?;
                self.agreement.agreed(1);
                self.fetched(t, &f)
            }
            // A 304 to the stored validators: the server says the version is current.
            JobResult::NotModified(i) => {
                self.take(i)?;
                self.agreement.agreed(1);
                self.progress.item(0);
                self.summary.unchanged += 1;
                Ok(())
            }
            JobResult::Failed {
                index,
                reason,
                refused,
                other_bytes,
                gone,
                ..
            } => {
                let t = self.take(index)?;
                self.failed(&t, reason, refused, other_bytes || gone)
            }
            JobResult::Stop(message) => {
                Err(crate::engine::context::stop_early(self.writer, message))
            }
        }
    }

    /// A result's entry: the one drawn (or, for a package's, read again by position).
    fn take(&mut self, i: usize) -> Result<Todo, Error> {
        let drawn = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&i);
        let t = match drawn {
            Some(t) => t,
            None => self.listing.todo_at(i)?,
        };
        self.left.0 -= 1;
        self.left.1 -= t.listed.declared.length.unwrap_or(0).min(self.left.1);
        Ok(t)
    }

    fn fetched(&mut self, t: Todo, f: &apply::Fetched) -> Result<(), Error> {
        self.progress.item(f.computed.length);
        self.summary.bytes += f.computed.length;
        let held = t.current.as_ref().map(|(_, sha)| Held {
            sha256: sha.as_deref(),
            lastmod: None,
        });
        let decision = decide(held, &f.computed.sha256_hex, Basis::Listed(&t.action));
        decision.count(self.summary);
        let Some(change) = decision.change() else {
            return Ok(());
        };
        let l = &t.listed;
        let mut v = f.version(
            &l.uri,
            self.collection,
            change,
            &l.declared,
            l.media_type.as_deref(),
        );
        if let Some(via) = self.arrived_via.filter(|_| !f.is_described()) {
            v.arrived_via = via;
        }
        let side = self.side_rows.and_then(|rows| rows(&t.listed));
        Ok(self.writer.version_with(v, None, side)?)
    }

    fn failed(
        &mut self,
        t: &Todo,
        reason: String,
        refused: bool,
        changed: bool,
    ) -> Result<(), Error> {
        let uri = t.listed.uri.as_str();
        self.progress.item(0);
        // ResourceSync 1.1 §10.1: a source changes while a Destination fetches; the Change
        // Lists from the list's `at` on say what changed. Bytes that contradict the list are
        // not stored as the listed state, and do not keep the sync point from being recorded:
        // the resource is pending until incremental fetches it for the change that explains
        // it.
        // Only where the sync point waits for every resource: a format whose sync point is
        // recorded despite failures has no change to wait for.
        let pending = changed && !refused && self.anchored && self.rule == SyncPointRule::WhenWhole;
        let (class, reason) = if refused {
            self.summary.refused += 1;
            (ProblemClass::Refused, reason)
        } else if pending {
            let why = format!(
                "{reason} (it changed or went after the Resource List was written; pending \
                 until rsmirror incremental applies the change after the sync point that \
                 explains it)"
            );
            // Said by the agreement, once it is believable.
            let at = (&mut *self.writer, &*self.summary, self.progress);
            self.agreement.pending(at, uri, &why, &reason)?;
            self.summary.pending += 1;
            (ProblemClass::Pending, why)
        } else {
            self.summary.failed += 1;
            self.failed += 1;
            (ProblemClass::Failed, reason)
        };
        // Errors go to stderr even with -q: cron mails them (a cause repeated: once).
        let said = match class {
            ProblemClass::Pending => false,
            ProblemClass::Failed => self.agreement.say_failure(uri, &reason),
            _ => true,
        };
        if said {
            self.progress.println(&problem_line(class, uri, &reason));
        }
        self.writer.problem(uri, class, &reason)?;
        self.summary.problems.push(Problem {
            uri: uri.to_string(),
            class,
            reason,
        });
        Ok(())
    }
}

/// `baseline --dry-run`: the plan of each collection printed with the shared marks.
pub(crate) fn print_plan(
    planned: &[Planned],
    s: &settings::Baseline,
    summary: &mut Summary,
) -> Result<(), Error> {
    for p in planned {
        summary.listed += p.counts.listed + p.counts.excluded;
        summary.excluded += p.counts.excluded;
        p.listing
            .each_planned(|uri, a| plan::print_mark(uri, a, s.output.verbose > 0, summary))?;
        for r in &p.snapshot.refused {
            summary.refused += 1;
            plan!("! {} refused: {}", r.uri, r.reason);
        }
        for f in &p.snapshot.failed_parts {
            plan!("! {f}");
        }
        let may_delete = s.delete && p.snapshot.complete();
        // The guard the real run would meet: the plan says so, and the dry run ends as that
        // run would (exit 7), not as if the deletions would happen.
        let c = p.counts;
        let refused = match may_delete && c.gone > 0 && !s.force_delete {
            true => deletion_guard(&p.snapshot, c.listed, c.gone, c.live, s.max_delete),
            false => None,
        };
        let what = match (&refused, may_delete) {
            (Some(_), _) => "would be deleted, but the deletion guard refuses",
            (None, true) => "would be deleted",
            (None, false) => "gone from the source",
        };
        p.listing.each_gone(|g| {
            summary.gone += 1;
            plan!("- {g} ({what})");
            Ok::<(), StoreError>(())
        })?;
        if let Some(why) = refused {
            return Err(Error::SafetyLimit(format!(
                "{}: {why}; the run would delete nothing and stop here (--max-delete N or \
                 --force-delete to go ahead)",
                p.collection
            )));
        }
    }
    Ok(())
}

/// Why deleting `gone` resources of a collection of `live` ones from this snapshot is refused,
/// if it is: the guard against a source that publishes an empty list one night, a list that is
/// one part of an index given alone, or a mass delete. `--max-delete N` replaces the default
/// count: a tenth of the collection, at least 10 and at most 1,000 (rclone's `--max-delete` has
/// none; a mirror kept for years should not lose a collection to one bad night).
fn deletion_guard(
    snap: &Snapshot,
    listed: u64,
    gone: u64,
    live: u64,
    max: Option<u64>,
) -> Option<String> {
    if let Some(index) = &snap.part_of {
        return Some(format!(
            "this Resource List is one part of the index {index}: alone it does not list the \
             collection ({gone} resources would go); give the index"
        ));
    }
    if listed == 0 {
        return Some(format!(
            "the source lists nothing (an empty list): all {gone} resources would go"
        ));
    }
    let limit = max.unwrap_or_else(|| (live / 10).clamp(10, 1000));
    (gone > limit).then(|| {
        let bound = match max {
            Some(_) => format!("--max-delete {limit}"),
            None => format!(
                "the {limit} the default guard allows (a tenth of the collection, at least 10, \
                 at most 1,000)"
            ),
        };
        format!("{gone} of {live} resources are gone from the source, more than {bound}")
    })
}

/// Name the URLs that go (or would go) on stderr, under cron too: one line each, the first
/// hundred, then how many more and where they are recorded.
fn name_gone(listing: &Listing, gone: u64, what: &str, progress: &Progress) -> Result<(), Error> {
    let first = listing.first_gone(crate::report::NAMED)?;
    progress.name_first(what, first.iter().map(String::as_str), gone, "run_problems");
    Ok(())
}

/// The entries the scope refused or the source asks not to take, and the parts of an index
/// (the packages of a dump) that could not be read: counted, said on stderr, recorded.
fn report_snapshot_problems(
    writer: &mut Writer<'_>,
    p: &Planned,
    verbose: bool,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let snap = &p.snapshot;
    let (refused, skipped) = (pairs(&snap.refused), pairs(&snap.skipped));
    record_refused_and_skipped(writer, &refused, &skipped, verbose, summary, progress)?;
    summary.failed_parts += snap.failed_parts.len() as u64;
    for f in &snap.failed_parts {
        progress.println(&format!("failed: part of the {}: {f}", p.list_name));
        writer.problem(&p.collection, crate::model::ProblemClass::Document, f)?;
        summary.problems.push(Problem {
            uri: p.collection.clone(),
            class: crate::model::ProblemClass::Document,
            reason: f.clone(),
        });
    }
    Ok(())
}

/// (URI, why) of each.
pub(crate) fn pairs(v: &[Refused]) -> Vec<(&str, &str)> {
    v.iter()
        .map(|r| (r.uri.as_str(), r.reason.as_str()))
        .collect()
}

/// Entries refused (by the scope, or as unsafe) and entries the source asks not to take,
/// as (URI, why): counted, said on stderr (the skipped ones with `-v` only), recorded as the
/// run's problems. The same for a snapshot and for changes, whatever the format.
pub(crate) fn record_refused_and_skipped(
    writer: &mut Writer<'_>,
    refused: &[(&str, &str)],
    skipped: &[(&str, &str)],
    verbose: bool,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    for (class, list) in [
        (ProblemClass::Refused, refused),
        (ProblemClass::Skipped, skipped),
    ] {
        for &(uri, reason) in list {
            if class == ProblemClass::Refused {
                summary.refused += 1;
            }
            if class == ProblemClass::Refused || verbose {
                progress.println(&format!("{class}: {uri}: {reason}"));
            }
            writer.problem(uri, class, reason)?;
            summary.problems.push(Problem {
                uri: uri.to_string(),
                class,
                reason: reason.to_string(),
            });
        }
    }
    Ok(())
}

/// Gone resources: reported; tombstoned only with --delete after a complete list, and within
/// the deletion guard.
fn settle_gone(
    writer: &mut Writer<'_>,
    s: &settings::Baseline,
    p: &Planned,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let snap = &p.snapshot;
    let counts = p.counts;
    summary.gone += counts.gone;
    let may_delete = s.delete && snap.complete();
    if may_delete && counts.gone > 0 && !s.force_delete {
        if let Some(why) =
            deletion_guard(snap, counts.listed, counts.gone, counts.live, s.max_delete)
        {
            name_gone(&p.listing, counts.gone, "would go", progress)?;
            return Err(Error::SafetyLimit(format!(
                "{}: {why}; nothing was deleted (--max-delete N or --force-delete to go ahead)",
                p.collection
            )));
        }
    }
    let what = if may_delete { "deleted" } else { "gone" };
    name_gone(&p.listing, counts.gone, what, progress)?;
    p.listing.each_gone(|uri| {
        if may_delete {
            summary.deleted += 1;
            writer.version(NewVersion {
                event_time: snap.at,
                ..NewVersion::tombstone(uri.to_string(), p.collection.clone())
            })?;
            writer.problem(
                uri,
                crate::model::ProblemClass::Deleted,
                "no longer listed by the source: tombstoned",
            )?;
        } else {
            let reason = if s.delete {
                "no longer listed; not deleted because part of the list could not be read"
                    .to_string()
            } else {
                "no longer listed by the source; run with --delete to tombstone it".to_string()
            };
            writer.problem(uri, crate::model::ProblemClass::Gone, &reason)?;
            summary.problems.push(Problem {
                uri: uri.to_string(),
                class: crate::model::ProblemClass::Gone,
                reason,
            });
        }
        Ok::<(), Error>(())
    })
}

/// The fetch of a listed resource: its URL, then its `duplicate` mirrors; what the list
/// declares; the stored validators for a revalidation.
fn job_of(t: Todo) -> Job {
    let l = t.listed;
    let mut urls = Vec::with_capacity(1 + l.duplicates.len());
    urls.push(l.uri);
    urls.extend(l.duplicates);
    Job {
        index: t.ord,
        urls,
        expected: Expected {
            length: l.declared.length,
            digests: l.declared.digests,
            media_type: l.media_type.map(|t| t.into_owned()),
        },
        scope: l.scope,
        validators: t.validators.filter(|_| t.action == Action::Revalidate),
    }
}
