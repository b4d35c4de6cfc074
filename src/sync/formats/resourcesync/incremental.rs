//! `incremental` of ResourceSync collections (their [`Format`](crate::sync::formats::Format)
//! side): apply exactly the changes the source published since the sync point, in event-time
//! order, and advance the sync point (ResourceSync 1.1 §10.2).
//!
//! Changes are collected for every collection before anything is fetched, so a gap or a
//! malformed list stops the run with nothing applied (exit 4). Several events for one URI are
//! coalesced to the last (created->deleted = deleted, deleted->created = fetch); the
//! superseded ones are recorded too. The sync point advances with the last batch, to the
//! `until` of the last fully processed closed list or the latest applied event time — never
//! past an event that failed, so a re-run retries it.

use crate::error::{Error, SourceError};
use crate::net::{Expected, Http};
use crate::progress::Progress;
use crate::report::{problem_line, Problem, Summary};
use crate::rs::document::{Capability, Change};
use crate::settings;
use crate::store::catalog::{write, ChangeEventRecord, CurrentState, NewVersion, SyncPoint};
use crate::store::{Catalog, ObjectStore, StoreError};
use crate::sync::apply::{self, Job, JobResult, Writer};
use crate::sync::context::RunContext;
use crate::sync::decide::{decide, Basis, Held};
use crate::sync::discover::Collection;
use crate::sync::documents::{Documents, OpenedDocument};
use crate::sync::feed::{self, DESCRIBES_BASIS};
use crate::sync::formats::resourcesync::change_dump;
use crate::sync::formats::resourcesync::changes::{self, Changes, Collector, Event};
use crate::sync::snapshot;
use crate::sync::sync_point;
use jiff::Timestamp;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use url::Url;

/// Everything to apply, by how it is applied.
struct Collected {
    pending: Vec<Pending>,
    dumps: Vec<DumpPending>,
}

/// A collection whose changes come as a Change Dump (applied by `change_dump`).
struct DumpPending {
    collection: String,
    url: Url,
    since: Timestamp,
}

/// One collection's collected changes, ready to apply.
struct Pending {
    collection: String,
    describes: Option<String>,
    since: Timestamp,
    changes: Changes,
    /// Indexes into `changes.events` of the events to apply (the last per URI), in order.
    apply: Vec<usize>,
}

/// `incremental` of the ResourceSync collections discovery found, in the run `ctx` records:
/// every collection's changes collected first (a gap or an unreadable list stops the run with
/// nothing applied), then applied; Change Dumps after them; then the resources a baseline left
/// pending that no change explained are named.
pub(crate) fn incremental(
    ctx: &mut RunContext<'_, '_>,
    s: &settings::Incremental,
    collections: Vec<Collection>,
) -> Result<(), Error> {
    let Collected { pending, dumps } = collect_all(ctx.docs, ctx.catalog, s, collections)?;
    let states = ctx.catalog.current_states_of(named(&pending))?;
    let mut writer = Writer::new(ctx.catalog, ctx.objects, ctx.run_id);
    for p in pending {
        apply_collection(
            ctx.http,
            ctx.staging,
            ctx.objects,
            &mut writer,
            s,
            p,
            &states,
            ctx.source_id,
            ctx.run_id,
            ctx.summary,
            ctx.progress,
        )?;
    }
    drop(writer);
    for d in dumps {
        change_dump::apply(ctx, &d.collection, &d.url, d.since)?;
    }
    unexplained_pending(
        ctx.catalog,
        ctx.source_id,
        ctx.run_id,
        ctx.summary,
        ctx.progress,
    )
}

/// `incremental --dry-run`: the changes collected as a run would, the plan printed.
pub(crate) fn plan(
    docs: &Documents<'_>,
    s: &settings::Incremental,
    collections: Vec<Collection>,
    catalog: &Catalog,
    summary: &mut Summary,
) -> Result<bool, Error> {
    let Collected { pending, dumps } = collect_all(docs, catalog, s, collections)?;
    let states = catalog.current_states_of(named(&pending))?;
    print_plan(&pending, &states, summary);
    for d in dumps {
        change_dump::plan(docs, catalog, &d.collection, &d.url, d.since, summary)?;
    }
    Ok(true)
}

/// The URIs the collected changes name: the only resources whose states a run reads (not the
/// whole mirror's).
fn named(pending: &[Pending]) -> impl Iterator<Item = &str> {
    pending
        .iter()
        .flat_map(|p| p.changes.events.iter().map(|e| e.uri.as_str()))
}

/// A baseline leaves pending the resources whose bytes contradicted the list (they changed
/// after it was written); the Change Lists after the sync point explain them, and this run
/// fetched them if so. Those no change explains are failures of this run, named, until a
/// change or a new baseline settles them.
fn unexplained_pending(
    catalog: &mut Catalog,
    source_id: i64,
    run_id: i64,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let open = catalog.open_pending(source_id, run_id)?;
    if open.is_empty() {
        return Ok(());
    }
    let tx = catalog.transaction()?;
    for (uri, reason, since) in open {
        let why = format!(
            "pending since run {since} ({reason}), and no change after the sync point explains \
             it: rsmirror baseline SOURCE fetches it again"
        );
        summary.failed += 1;
        progress.println(&format!("failed: {uri}: {why}"));
        write::problem(&tx, run_id, &uri, "failed", &why)?;
        summary.problems.push(Problem {
            uri,
            class: "failed",
            reason: why,
        });
    }
    tx.commit().map_err(StoreError::from)?;
    Ok(())
}

/// Collect every collection's changes; any gap or unreadable list is fatal (nothing applied).
fn collect_all(
    docs: &Documents<'_>,
    catalog: &Catalog,
    s: &settings::Incremental,
    rs: Vec<Collection>,
) -> Result<Collected, Error> {
    let mut pending = Vec::new();
    let mut dumps = Vec::new();
    for collection in rs {
        let since = match s.from {
            Some(t) => t,
            None => catalog
                .sync_point(&collection.id)?
                .and_then(|sp| sp.at)
                .ok_or_else(|| {
                    Error::Usage(settings::UsageError(format!(
                        "no sync point for {}: run rsmirror baseline first, or give --from DATETIME",
                        collection.id
                    )))
                })?,
        };
        let id = collection.id.clone();
        let describes = collection.describes.clone();
        if collection.url_of(&Capability::ChangeList).is_none() {
            if let Some(dump) = collection.url_of(&Capability::ChangeDump) {
                dumps.push(DumpPending {
                    collection: id,
                    url: dump.clone(),
                    since,
                });
                continue;
            }
        }
        let (url, opened, archive) = change_list_of(docs, collection)?;
        let mut collector = Collector::new(docs, Some(catalog), &id, since);
        collector.conditional = s.from.is_none();
        let changes = collector.collect(&url, opened, archive.as_ref())?;
        let apply = coalesce(&changes.events);
        pending.push(Pending {
            describes,
            collection: id,
            since,
            changes,
            apply,
        });
    }
    Ok(Collected { pending, dumps })
}

/// Where a collection's changes are (see [`changes::location`]); a Change List given
/// directly is used as already opened.
fn change_list_of(
    docs: &Documents<'_>,
    collection: Collection,
) -> Result<(Url, Option<OpenedDocument>, Option<Url>), SourceError> {
    let Some((url, archive)) = changes::location(docs, &collection)? else {
        return Err(SourceError::Unusable {
            url: collection.id.clone(),
            message: "no Change List found: the source advertises none (no changelist in its \
                      Capability List, no rs:ln rel=\"up\" to one, no 2012 change set link)"
                .into(),
        });
    };
    let opened = collection
        .opened
        .filter(|d| d.url == url || d.header().capability() == Some(Capability::ChangeList));
    Ok((url, opened, archive))
}

/// The last event per URI, in event order (§10.2 step 4: created->deleted = deleted,
/// deleted->created = fetch; both fall out of "the last one wins").
fn coalesce(events: &[Event]) -> Vec<usize> {
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        last.insert(e.uri.as_str(), i);
    }
    (0..events.len())
        .filter(|i| last[events[*i].uri.as_str()] == *i)
        .collect()
}

fn print_plan(pending: &[Pending], states: &HashMap<String, CurrentState>, summary: &mut Summary) {
    for p in pending {
        for t in &p.changes.trail {
            eprintln!("{t}");
        }
        for &i in &p.apply {
            let e = &p.changes.events[i];
            let when = e
                .time
                .map(|t| t.to_string())
                .unwrap_or_else(|| "no time given".into());
            let known = states.get(e.uri.as_str()).is_some_and(|c| !c.deleted);
            match e.change {
                Change::Deleted if known => {
                    summary.deleted += 1;
                    println!("- {} (deleted at {when})", e.uri);
                }
                Change::Deleted => {
                    summary.unknown_deletes += 1;
                    println!("- {} (deleted at {when}; not in the mirror)", e.uri);
                }
                Change::Created | Change::Updated if known => {
                    summary.updated += 1;
                    println!("* {} ({} at {when})", e.uri, e.change.name());
                }
                _ => {
                    summary.created += 1;
                    println!("+ {} ({} at {when})", e.uri, e.change.name());
                }
            }
        }
        for r in &p.changes.refused {
            summary.refused += 1;
            println!("! {} refused: {}", r.uri, r.reason);
        }
    }
}

fn event_record(collection: &str, e: &Event, outcome: &'static str) -> ChangeEventRecord {
    ChangeEventRecord {
        collection: collection.to_string(),
        uri: e.uri.to_string(),
        change: e.change.name(),
        event_time: e.time,
        document_url: e.document.clone(),
        outcome,
    }
}

/// The tombstone a `deleted` change leaves: a version without bytes.
fn tombstone(collection: &str, e: &Event) -> NewVersion {
    NewVersion {
        uri: e.uri.to_string(),
        collection: collection.to_string(),
        change: "deleted",
        event_time: e.time,
        lastmod: e.declared.lastmod,
        arrived_via: "tombstone",
        ..Default::default()
    }
}

#[allow(clippy::too_many_arguments)]
fn apply_collection(
    http: &Http,
    staging: &Path,
    objects: &ObjectStore,
    writer: &mut Writer<'_>,
    s: &settings::Incremental,
    p: Pending,
    states: &HashMap<String, CurrentState>,
    source_id: i64,
    run_id: i64,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let events = &p.changes.events;
    summary.warnings.extend(p.changes.warnings.iter().cloned());
    summary.listed += events.len() as u64;
    if s.output.verbose > 0 {
        for t in &p.changes.trail {
            progress.println(t);
        }
    }
    record_refused_and_superseded(writer, &p, summary, progress)?;
    let mut results = ChangeResults {
        writer: &mut *writer,
        collection: &p.collection,
        events,
        states,
        staging,
        summary: &mut *summary,
        progress,
        applied_max: None,
        failed_min: None,
        failed_docs: HashSet::new(),
    };
    let fetch = results.deletions(&p)?;
    let jobs = fetch.iter().map(|&i| job_of(i, &events[i]));
    progress.start("incremental", fetch.len() as u64);
    apply::transfer(http, staging, objects, jobs, s.jobs, |r| results.on(r))?;
    let ChangeResults {
        applied_max,
        failed_min,
        failed_docs,
        ..
    } = results;
    let ends = (applied_max, failed_min, &failed_docs);
    commit_changes(writer, (source_id, run_id), &p, ends, summary)
}

/// The changes the scope refused, and the events a later one for the same URI supersedes.
fn record_refused_and_superseded(
    writer: &mut Writer<'_>,
    p: &Pending,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let refused = snapshot::pairs(&p.changes.refused);
    snapshot::record_refused_and_skipped(writer, &refused, &[], false, summary, progress)?;
    let applied: HashSet<usize> = p.apply.iter().copied().collect();
    for (i, e) in p.changes.events.iter().enumerate() {
        if !applied.contains(&i) {
            writer.event(event_record(&p.collection, e, "superseded"))?;
        }
    }
    Ok(())
}

/// The fetch of a created or updated resource: its URL, then its `duplicate` mirrors.
fn job_of(index: usize, e: &Event) -> Job {
    let mut urls = vec![e.uri.clone()];
    urls.extend(e.duplicates.iter().cloned());
    Job {
        index,
        urls,
        expected: Expected {
            length: e.declared.length,
            digests: e.declared.digests.clone(),
        },
        scope: e.scope.clone(),
        validators: None,
    }
}

/// The sync point, the documents read and the Change Lists closed, in the last transaction.
/// `ends`: the latest change applied, the earliest that failed, and the lists that had one.
fn commit_changes(
    writer: &mut Writer<'_>,
    (source_id, run_id): (i64, i64),
    p: &Pending,
    (applied_max, failed_min, failed_docs): (Option<Timestamp>, Option<Timestamp>, &HashSet<&str>),
    summary: &mut Summary,
) -> Result<(), Error> {
    let closed_ok: Vec<_> = p
        .changes
        .closed_read
        .iter()
        .filter(|c| !failed_docs.contains(c.url.as_str()))
        .collect();
    let until_max = closed_ok.iter().map(|c| c.until).max();
    let sync_point = new_sync_point(p, until_max, applied_max, failed_min, summary);
    // A list with a failed change keeps no validators: the next run must read it again
    // even if it did not change, to retry that change.
    let documents: Vec<_> = p
        .changes
        .documents
        .iter()
        .map(|d| {
            let mut d = d.clone();
            if failed_docs.contains(d.url.as_str()) {
                d.etag = None;
                d.last_modified = None;
            }
            d
        })
        .collect();
    let collection = &p.collection;
    let describes = &p.describes;
    writer.flush(|tx| {
        for d in &documents {
            write::document(tx, source_id, run_id, d)?;
        }
        for c in &closed_ok {
            write::processed_change_list(tx, run_id, collection, &c.url, c.from, c.until)?;
        }
        write::sync_point(tx, source_id, run_id, &sync_point)?;
        if let Some(d) = &describes {
            feed::record_identity(tx, collection, d, DESCRIBES_BASIS)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// Where each change of one collection goes as it is applied: the writer, the summary,
/// stderr; and what the sync point will be made of.
struct ChangeResults<'e, 'x, 'w> {
    writer: &'x mut Writer<'w>,
    collection: &'e str,
    events: &'e [Event],
    states: &'e HashMap<String, CurrentState>,
    staging: &'e Path,
    summary: &'x mut Summary,
    progress: &'e Progress,
    /// The latest change applied.
    applied_max: Option<Timestamp>,
    /// The earliest change that failed: the sync point never passes it.
    failed_min: Option<Timestamp>,
    /// The lists a failed change came from.
    failed_docs: HashSet<&'e str>,
}

impl<'e> ChangeResults<'e, '_, '_> {
    /// Apply the deletions of `p` (they need no transfer); the events to fetch, in order.
    fn deletions(&mut self, p: &Pending) -> Result<Vec<usize>, Error> {
        let mut fetch = Vec::new();
        for &i in &p.apply {
            let e = &self.events[i];
            let current = self.states.get(e.uri.as_str());
            match e.change {
                Change::Deleted if e.stale_delete => {
                    // A 1.0 delete dated by the deleted state's lastmod, before the sync
                    // point: applied when the mirror still holds that state (or an older one),
                    // else it was applied before or the resource came back since. Either way
                    // it never moves the sync point (its time is before it).
                    let Some(c) = current.filter(|c| !c.deleted) else {
                        continue;
                    };
                    if stale_delete_holds(e, c, p.since, self.summary) {
                        self.tombstone(e)?;
                    }
                }
                Change::Deleted => {
                    self.applied_max = self.applied_max.max(e.sync_time());
                    let outcome = match current {
                        Some(c) if !c.deleted => {
                            self.tombstone(e)?;
                            continue;
                        }
                        Some(_) => {
                            self.summary.unchanged += 1;
                            "unchanged"
                        }
                        None => {
                            self.summary.unknown_deletes += 1;
                            "unknown-delete"
                        }
                    };
                    self.writer
                        .event(event_record(self.collection, e, outcome))?;
                }
                Change::Created | Change::Updated => fetch.push(i),
            }
        }
        Ok(fetch)
    }

    fn tombstone(&mut self, e: &Event) -> Result<(), Error> {
        self.summary.deleted += 1;
        self.writer.version_for_event(
            tombstone(self.collection, e),
            event_record(self.collection, e, "applied"),
        )?;
        crate::store::kill::point("incremental.tombstone");
        Ok(())
    }

    fn on(&mut self, r: JobResult) -> Result<(), Error> {
        match r {
            JobResult::Fetched(i, f) => self.fetched(&self.events[i], &f),
            // Changes are fetched whole: no validators are sent.
            JobResult::NotModified(_) => {
                self.summary.unchanged += 1;
                Ok(())
            }
            JobResult::Unwritable(e) => Err(crate::sync::context::stop_for_fault(self.writer, e)),
            JobResult::NoSpace(message) => Err(crate::sync::context::stop_for_space(
                self.writer,
                self.staging,
                message,
                String::new(),
            )),
            JobResult::Failed {
                index,
                reason,
                refused,
                other_bytes,
                ..
            } => self.failed(&self.events[index], reason, refused, other_bytes),
        }
    }

    fn fetched(&mut self, e: &'e Event, f: &apply::Fetched) -> Result<(), Error> {
        self.progress.item(f.computed.length);
        self.summary.bytes += f.computed.length;
        self.applied_max = self.applied_max.max(e.sync_time());
        let held = self
            .states
            .get(e.uri.as_str())
            .filter(|c| !c.deleted)
            .map(|c| Held {
                sha256: c.sha256_hex.as_deref(),
                lastmod: c.lastmod,
            });
        let basis = Basis::Change {
            lastmod: e.declared.lastmod,
        };
        let decision = decide(held, &f.computed.sha256_hex, basis);
        decision.count(self.summary);
        let Some(change) = decision.change() else {
            return Ok(self
                .writer
                .event(event_record(self.collection, e, "unchanged"))?);
        };
        self.writer.version_for_event(
            fetched_version(self.collection, e, f, change),
            event_record(self.collection, e, "applied"),
        )?;
        Ok(())
    }

    fn failed(
        &mut self,
        e: &'e Event,
        reason: String,
        refused: bool,
        other_bytes: bool,
    ) -> Result<(), Error> {
        self.progress.item(0);
        let (class, reason) = if refused {
            self.summary.refused += 1;
            ("refused", reason)
        } else if other_bytes {
            // Other bytes than the entry declares: the resource changed again after the list
            // was read. That later change is dated after every entry of this list, so after
            // the sync point this run records: it does not hold it back (a busy source would
            // never be caught up with); the resource is pending until the next run applies
            // the later change, and reported if none comes.
            self.summary.pending += 1;
            let why = format!(
                "{reason} (it changed again after the Change List was read; pending until a \
                 later change is applied)"
            );
            ("pending", why)
        } else {
            self.summary.failed += 1;
            // Never advance past a change that failed: the next run retries it.
            self.failed_min = match (self.failed_min, e.order_time) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            self.failed_docs.insert(e.document.as_str());
            ("failed", reason)
        };
        self.progress
            .println(&problem_line(class, e.uri.as_str(), &reason));
        self.writer.problem(e.uri.as_str(), class, &reason)?;
        self.writer.event(event_record(self.collection, e, class))?;
        self.summary.problems.push(Problem {
            uri: e.uri.to_string(),
            class,
            reason,
        });
        Ok(())
    }
}

/// A 1.0 delete dated before the sync point (by the deleted state's lastmod): applied when the
/// mirror still holds that state or an older one (said as a warning either way).
fn stale_delete_holds(
    e: &Event,
    c: &CurrentState,
    since: Timestamp,
    summary: &mut Summary,
) -> bool {
    let time = e.time.unwrap_or(since);
    let held = match c.lastmod {
        Some(lastmod) if lastmod <= time => true,
        Some(lastmod) => {
            summary.warnings.push(format!(
                "{}: line {}: deleted {} dated {time}, before the sync point; not \
                 applied: the mirror holds a later state (lastmod {lastmod})",
                e.document, e.line, e.uri
            ));
            false
        }
        None => {
            summary.warnings.push(format!(
                "{}: line {}: deleted {} dated {time}, before the sync point; not \
                 applied: the mirror's state has no lastmod to compare (if the \
                 resource is gone, rsmirror baseline SOURCE --delete records it)",
                e.document, e.line, e.uri
            ));
            false
        }
    };
    if !held {
        return false;
    }
    summary.warnings.push(format!(
        "{}: line {}: deleted {} dated {time}, before the sync point (a ResourceSync \
         1.0 list dates a delete by the deleted state's lastmod); applied: the mirror \
         still held that state",
        e.document, e.line, e.uri
    ));
    true
}

/// The version a fetched change records.
fn fetched_version(
    collection: &str,
    e: &Event,
    f: &apply::Fetched,
    change: &'static str,
) -> NewVersion {
    NewVersion {
        event_time: e.time,
        arrived_via: "http",
        ..f.version(
            &e.uri,
            collection,
            change,
            &e.declared,
            e.media_type.as_deref(),
        )
    }
}

/// The new sync point: the later of the last fully processed closed list's `until` and the
/// latest applied event time, never past a failed event, never backwards, never in the future.
fn new_sync_point(
    p: &Pending,
    until_max: Option<Timestamp>,
    applied_max: Option<Timestamp>,
    failed_min: Option<Timestamp>,
    summary: &mut Summary,
) -> SyncPoint {
    let mut at = p
        .since
        .max(until_max.unwrap_or(p.since))
        .max(applied_max.unwrap_or(p.since));
    let mut basis = match (until_max, applied_max) {
        (Some(u), Some(a)) if a > u => "latest applied event time".to_string(),
        (Some(_), _) => "until of the last closed Change List processed".to_string(),
        (None, Some(_)) => "latest applied event time".to_string(),
        (None, None) => "unchanged: no new changes".to_string(),
    };
    if let Some(f) = failed_min {
        if f < at {
            at = f.max(p.since);
            basis = "time of the earliest failed change (it is retried next run)".to_string();
        }
    }
    // Future-dated events and `until`s are left out above; this guards whatever else could
    // carry it there (never backwards, though: a --from in the future is the user's own).
    let now = Timestamp::now();
    if sync_point::is_future(at, now) {
        let kept = now.max(p.since);
        summary.warnings.push(format!(
            "{}: the new sync point would be {at}, later than the Change Lists were read; kept at {kept}",
            p.collection
        ));
        at = kept;
        basis = "time the Change Lists were read (their times lie in the future)".to_string();
    }
    summary.sync_point = Some(at.to_string());
    summary.anchored = true;
    SyncPoint {
        collection: p.collection.clone(),
        at: Some(at),
        anchored: true,
        basis,
    }
}
