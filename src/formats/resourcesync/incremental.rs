//! `incremental` of ResourceSync collections (their [`Format`](crate::formats::Format)
//! side): apply exactly the changes the source published since the sync point, in event-time
//! order, and advance the sync point (ResourceSync 1.1 §10.2).
//!
//! Changes are collected for every collection before anything is fetched, so a gap or a
//! malformed list stops the run with nothing applied (exit 4). Several events for one URI are
//! coalesced to the last (created->deleted = deleted, deleted->created = fetch); the
//! superseded ones are recorded too. The sync point advances with the last batch, to the
//! `until` of the last fully processed closed list or the latest applied event time — never
//! past an event that failed, so a re-run retries it.

use crate::engine::apply::{self, Job};
use crate::engine::changes::{self, Disposal, Ends, Settled};
use crate::engine::context::RunContext;
use crate::engine::discover::Collection;
use crate::engine::documents::{Documents, OpenedDocument};
use crate::engine::snapshot;
use crate::engine::snapshot::SnapshotRows;
use crate::engine::sync_point;
use crate::error::{Error, NeedsBaseline, SourceError};
use crate::formats::resourcesync::changes::{
    self as rs_changes, Changes as RsChanges, Collector, Event,
};
use crate::formats::resourcesync::{change_dump, patch, versions};
use crate::model::{ChangeOutcome, ProblemClass};
use crate::net::Expected;
use crate::progress::Progress;
use crate::report::{Problem, Summary};
use crate::rs::document::{Capability, Change};
use crate::settings;
use crate::store::catalog::{write, ChangeEventRecord, CurrentState, NewVersion, SyncPoint};
use crate::store::change_history::{record_identity, DESCRIBES_BASIS};
use crate::store::source_metadata::{self, MetadataState};
use crate::store::Catalog;
use jiff::Timestamp;
use std::collections::{HashMap, HashSet};
use url::Url;

/// Everything to apply, by how it is applied.
struct Collected {
    pending: Vec<Pending>,
    dumps: Vec<DumpPending>,
    /// Collections whose Capability List names nothing to follow (IFCC-0001: "no changes
    /// can be determined"), one message each.
    left_out: Vec<(String, String)>,
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
    /// The site's and the collection's `describedby` documents, as fetched by this run.
    metadata: Vec<MetadataState>,
    /// Where the collection's changes were read from (its Change List or Change List Index).
    changes_at: Url,
    since: Timestamp,
    changes: RsChanges,
    /// Indexes into `changes.events` of the events to apply (the last per URI), in order.
    apply: Vec<usize>,
    /// Indexes into `changes.events` of the earlier states fetched from the source's
    /// mementos (`versions`), in the order they are recorded, before `apply`.
    earlier: Vec<usize>,
    /// Changes whose new state a patch made from the mirror's, stored already (`patch`).
    patched: HashMap<usize, Box<apply::Fetched>>,
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
    let Collected {
        mut pending,
        dumps,
        left_out,
    } = collect_all(ctx.docs, ctx.catalog, s, collections)?;
    for (id, w) in left_out {
        ctx.problems([(id.as_str(), ProblemClass::Warning, w.as_str())])?;
        ctx.summary.warnings.push(w);
    }
    patch_all(ctx, &mut pending)?;
    changes::follow(ctx, s, pending)?;
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

/// The changes whose new state a patch the source offers makes from the mirror's state (see
/// `patch`): the patch fetched and applied, the result stored when it has the declared digest,
/// and handed to the engine as arrived. A patch that cannot be used is a warning: the resource
/// is fetched whole.
fn patch_all(ctx: &mut RunContext<'_, '_>, pending: &mut [Pending]) -> Result<(), Error> {
    for p in pending.iter_mut() {
        let offered: Vec<usize> = (p.apply.iter().copied())
            .filter(|&i| {
                let e = &p.changes.events[i];
                e.patch.is_some()
                    && e.change == Change::Updated
                    && ctx.docs.filter.admits(e.uri.as_str())
            })
            .collect();
        if offered.is_empty() {
            continue;
        }
        let uris = offered.iter().map(|&i| p.changes.events[i].uri.as_str());
        let states = ctx.catalog.current_states_of(uris)?;
        for i in offered {
            let e = &p.changes.events[i];
            let link = e.patch.as_ref().expect("offered");
            let held = states.get(e.uri.as_str()).filter(|c| !c.deleted);
            let Some(held) = held.and_then(|c| c.sha256_hex.as_deref()) else {
                continue;
            };
            match patched(ctx, e, link, held) {
                Ok((f, patch_len)) => {
                    ctx.summary.bytes += patch_len;
                    ctx.summary.bytes_saved += f.computed.length.saturating_sub(patch_len);
                    p.patched.insert(i, f);
                }
                Err(why) => ctx.summary.warnings.push(format!(
                    "{}: line {}: patch <{}> of {} not used: {why}; fetched whole",
                    e.document, e.line, link.href, e.uri
                )),
            }
        }
    }
    Ok(())
}

/// The state `e` makes, from the mirror's state `held` and the patch `link` offers, stored;
/// with the patch's length. `Err`: why not.
fn patched(
    ctx: &RunContext<'_, '_>,
    e: &Event,
    link: &crate::rs::document::Link,
    held: &str,
) -> Result<(Box<apply::Fetched>, u64), String> {
    use crate::rs::digest::{mismatches, Computed};
    patch::understood(link)?;
    e.scope.check(&link.href).map_err(|why| why.to_string())?;
    let got = crate::engine::documents::fetch(ctx.docs, &link.href, &e.scope)
        .map_err(|err| err.to_string())?;
    let bytes = got.doc().bytes;
    if link.length.is_some_and(|n| n != bytes.len() as u64) {
        return Err(format!(
            "the patch has {} bytes, its link says {}",
            bytes.len(),
            link.length.unwrap_or_default()
        ));
    }
    if let Some(m) = mismatches(&link.hash, &Computed::of(bytes)).first() {
        return Err(format!(
            "the patch's {} is {}, its link says {}",
            m.algorithm.name(),
            m.actual,
            m.expected
        ));
    }
    let max = ctx.docs.options.max_bytes;
    let mut mine = Vec::new();
    let found = ctx
        .objects
        .read_object(held, &mut |b| {
            if (mine.len() + b.len()) as u64 > max {
                return Err(std::io::Error::other(format!(
                    "the mirror's state is larger than --max-document-size ({max} bytes)"
                )));
            }
            mine.extend_from_slice(b);
            Ok(())
        })
        .map_err(|err| format!("the mirror's state {held}: {err}"))?;
    if !found {
        return Err(format!(
            "the mirror's state {held} is not in the object store"
        ));
    }
    let result = patch::apply(&mine, bytes, &e.declared.digests)?;
    if e.declared.length.is_some_and(|n| n != result.len() as u64) {
        return Err("the patched state does not have the length the change declares".into());
    }
    let computed = Computed::of(&result);
    let staged = ctx.staging.join(format!("patched-{}", computed.sha256_hex));
    let store = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&staged)?;
        std::io::Write::write_all(&mut f, &result)?;
        f.sync_all()?;
        ctx.objects.ingest(&staged, &computed.sha256_hex)?;
        Ok(())
    };
    if let Err(err) = store() {
        let _ = std::fs::remove_file(&staged);
        return Err(format!("the patched state could not be stored: {err}"));
    }
    let patch_len = bytes.len() as u64;
    Ok((
        Box::new(apply::Fetched {
            computed,
            final_url: got.url.clone(),
            etag: None,
            last_modified: None,
            media_type: None,
            content_encoding: None,
            via: crate::model::Via::Patch,
        }),
        patch_len,
    ))
}

/// `incremental --dry-run`: the changes collected as a run would, the plan printed.
pub(crate) fn plan(
    docs: &Documents<'_>,
    s: &settings::Incremental,
    collections: Vec<Collection>,
    catalog: &Catalog,
    summary: &mut Summary,
) -> Result<bool, Error> {
    let Collected {
        pending,
        dumps,
        left_out,
    } = collect_all(docs, catalog, s, collections)?;
    summary
        .warnings
        .extend(left_out.into_iter().map(|(_, w)| w));
    let states = catalog.current_states_of(named(&pending))?;
    print_plan(&pending, (&states, docs.filter), summary);
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
    catalog.in_transaction(|tx| {
        for (uri, reason, since) in open {
            let why = format!(
                "pending since run {since} ({reason}), and no change after the sync point \
                 explains it: rsmirror baseline SOURCE fetches it again"
            );
            summary.failed += 1;
            progress.println(&format!("failed: {uri}: {why}"));
            write::problem(tx, run_id, &uri, ProblemClass::Failed, &why)?;
            summary.problems.push(Problem {
                uri,
                class: crate::model::ProblemClass::Failed,
                reason: why,
            });
        }
        Ok(())
    })?;
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
    let mut left_out = Vec::new();
    let total = rs.len();
    for collection in rs {
        if collection.follows_nothing() {
            left_out.push((collection.id.clone(), collection.nothing_to_follow()));
            continue;
        }
        let since = match s.from {
            Some(t) => Some(t),
            None => catalog.sync_point(&collection.id)?.and_then(|sp| sp.at),
        };
        // Whether the source publishes changes comes first: one that does not is followed by
        // its list, sync point or not.
        let id = collection.id.clone();
        let no_sync_point = || Error::NeedsBaseline {
            collection: id.clone(),
            why: NeedsBaseline::NoSyncPoint,
        };
        let describes = collection.describes.clone();
        let described = collection.described();
        if collection.url_of(&Capability::ChangeList).is_none() {
            if let Some(dump) = collection.url_of(&Capability::ChangeDump) {
                dumps.push(DumpPending {
                    collection: id.clone(),
                    url: dump.clone(),
                    since: since.ok_or_else(no_sync_point)?,
                });
                continue;
            }
        }
        let (url, opened, archive) = change_list_of(docs, collection)?;
        let since = since.ok_or_else(no_sync_point)?;
        let mut collector = Collector::new(docs, Some(catalog), &id, since);
        collector.conditional = s.from.is_none();
        let mut changes = collector.collect(&url, opened, archive.as_ref())?;
        let metadata = crate::engine::metadata::fetch(docs, &described, &mut changes.warnings);
        let apply = coalesce(&changes.events);
        let earlier = versions::add(docs, &mut changes, since, Timestamp::now());
        pending.push(Pending {
            describes,
            metadata,
            changes_at: url,
            collection: id,
            since,
            changes,
            apply,
            earlier,
            patched: HashMap::new(),
        });
    }
    if left_out.len() == total {
        if let Some((id, _)) = left_out.first() {
            return Err(SourceError::Unusable {
                url: id.clone(),
                message: crate::engine::discover::NOTHING_TO_FOLLOW.into(),
            }
            .into());
        }
    }
    Ok(Collected {
        pending,
        dumps,
        left_out,
    })
}

/// Where a collection's changes are (see [`rs_changes::location`]); a Change List given
/// directly is used as already opened.
fn change_list_of(
    docs: &Documents<'_>,
    collection: Collection,
) -> Result<(Url, Option<OpenedDocument>, Option<Url>), Error> {
    let Some((url, archive)) = rs_changes::location(docs, &collection)? else {
        return Err(Error::NeedsBaseline {
            collection: collection.id.clone(),
            why: NeedsBaseline::NoChanges,
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

fn print_plan(
    pending: &[Pending],
    (states, filter): (&HashMap<String, CurrentState>, &crate::model::Filter),
    summary: &mut Summary,
) {
    for p in pending {
        for t in &p.changes.trail {
            say!("{t}");
        }
        for &i in &p.earlier {
            let e = &p.changes.events[i];
            if let (Some(m), Some(t), true) = (&e.memento, e.time, filter.admits(e.uri.as_str())) {
                plan!("< {} (its state at {t}, from memento {})", e.uri, m.url);
            }
        }
        for &i in &p.apply {
            let e = &p.changes.events[i];
            if !filter.admits(e.uri.as_str()) {
                summary.excluded += 1;
                continue;
            }
            let when = e
                .time
                .map(|t| t.to_string())
                .unwrap_or_else(|| "no time given".into());
            let known = states.get(e.uri.as_str()).is_some_and(|c| !c.deleted);
            match e.change {
                Change::Deleted if known => {
                    summary.deleted += 1;
                    plan!("- {} (deleted at {when})", e.uri);
                }
                Change::Deleted => {
                    summary.unknown_deletes += 1;
                    plan!("- {} (deleted at {when}; not in the mirror)", e.uri);
                }
                Change::Created | Change::Updated if known => {
                    summary.updated += 1;
                    plan!("* {} ({} at {when})", e.uri, e.change);
                }
                _ => {
                    summary.created += 1;
                    plan!("+ {} ({} at {when})", e.uri, e.change);
                }
            }
        }
        for r in &p.changes.refused {
            summary.refused += 1;
            plan!("! {} refused: {}", r.uri, r.reason);
        }
    }
}

fn event_record(collection: &str, e: &Event, outcome: ChangeOutcome) -> ChangeEventRecord {
    ChangeEventRecord {
        collection: collection.to_string(),
        uri: e.uri.to_string(),
        change: e.change,
        event_time: e.time,
        document_url: e.document.clone(),
        outcome,
    }
}

/// A Change List's entry as the engine applies it.
impl changes::Item for Event {
    fn uri(&self) -> &Url {
        &self.uri
    }
    /// An earlier state from a memento is created or updated as the mirror holds the
    /// resource.
    fn stated(&self) -> Option<Change> {
        self.memento.is_none().then_some(self.change)
    }
    fn event_time(&self) -> Option<Timestamp> {
        self.time
    }
    fn stated_time(&self) -> Option<Timestamp> {
        self.time.filter(|_| !self.undated)
    }
    fn undated(&self) -> Option<&'static str> {
        self.undated.then_some(
            "the Change List entry has no datetime: applied, but no feed reports it \
             (IFCC-0001: a generator must ignore it)",
        )
    }
    fn categories(&self) -> &[crate::model::Category] {
        &self.declared.categories
    }
    fn lastmod(&self) -> Option<Timestamp> {
        self.declared.lastmod
    }
    fn document(&self) -> &str {
        &self.document
    }
    /// A 1.0 delete dated before the sync point never moves it, nor does an earlier state
    /// (the listed changes do).
    fn applied_time(&self) -> Option<Timestamp> {
        self.sync_time()
            .filter(|_| !self.stale_delete && self.memento.is_none())
    }
    fn failed_time(&self) -> Option<Timestamp> {
        self.order_time
    }
    /// A memento's bytes are what the source kept of that time: other bytes than a listed
    /// change declares of it are a failure, not a sign of a later change.
    fn later_change_follows(&self) -> bool {
        self.memento.is_none()
    }
    fn version(&self, collection: &str, change: Change, f: &apply::Fetched) -> NewVersion {
        NewVersion {
            event_time: self.time,
            arrived_via: match self.memento {
                Some(_) => crate::model::Via::Memento,
                None if matches!(
                    f.via,
                    crate::model::Via::Patch | crate::model::Via::Metadata
                ) =>
                {
                    f.via
                }
                None => crate::model::Via::Http,
            },
            ..f.version(
                &self.uri,
                collection,
                change,
                &self.declared,
                self.media_type.as_deref(),
            )
        }
    }
}

/// A collection's Change Lists, read and planned, as the engine applies them: every event
/// listed, the last per URI applied, the others superseded.
impl changes::ChangeSet for Pending {
    type Item = Event;
    fn collection(&self) -> &str {
        &self.collection
    }
    fn items(&self) -> &[Event] {
        &self.changes.events
    }
    fn warnings(&self) -> &[String] {
        &self.changes.warnings
    }
    fn trail(&self) -> &[String] {
        &self.changes.trail
    }
    fn listed(&self, _planned: usize) -> u64 {
        self.changes.events.len() as u64 - self.earlier.len() as u64
    }
    fn refused(&self) -> Vec<(&str, &str)> {
        snapshot::pairs(&self.changes.refused)
    }
    fn superseded(&self) -> Vec<ChangeEventRecord> {
        // An earlier state fetched from its memento records the event of the change it was.
        let events = &self.changes.events;
        let applied: HashSet<usize> = (self.apply.iter().copied())
            .chain(self.earlier.iter().copied())
            .chain(
                self.earlier
                    .iter()
                    .filter_map(|&i| events[i].memento.as_ref()?.listed),
            )
            .collect();
        (self.changes.events.iter().enumerate())
            .filter(|(i, _)| !applied.contains(i))
            .map(|(_, e)| event_record(&self.collection, e, ChangeOutcome::Superseded))
            .collect()
    }
    fn plan(
        &self,
        states: &HashMap<String, CurrentState>,
        warnings: &mut Vec<String>,
    ) -> Vec<(usize, Disposal)> {
        disposals(self, states, warnings)
    }
    fn settle(self, ends: Ends) -> Settled {
        settle(self, ends)
    }
}

/// What becomes of each change of `p` to apply, in order: deletions need no transfer, created
/// and updated resources are fetched.
fn disposals(
    p: &Pending,
    states: &HashMap<String, CurrentState>,
    warnings: &mut Vec<String>,
) -> Vec<(usize, Disposal)> {
    let mut plan = Vec::new();
    for &i in &p.earlier {
        let e = &p.changes.events[i];
        let Some(m) = &e.memento else { continue };
        let mut job = job_of(i, e);
        job.urls = m.raw.iter().chain([&m.url]).cloned().collect();
        plan.push((i, Disposal::Earlier(job)));
    }
    for &i in &p.apply {
        let e = &p.changes.events[i];
        let current = states.get(e.uri.as_str());
        let d = match e.change {
            Change::Deleted if e.stale_delete => {
                // A 1.0 delete dated by the deleted state's lastmod, before the sync point:
                // applied when the mirror still holds that state (or an older one), else it
                // was applied before or the resource came back since. Either way it never
                // moves the sync point (its time is before it).
                let Some(c) = current.filter(|c| !c.deleted) else {
                    continue;
                };
                if !stale_delete_holds(e, c, p.since, warnings) {
                    continue;
                }
                Disposal::Tombstone
            }
            Change::Deleted => match current {
                Some(c) if !c.deleted => Disposal::Tombstone,
                Some(_) => Disposal::Event(Change::Deleted, ChangeOutcome::Unchanged),
                None => Disposal::Event(Change::Deleted, ChangeOutcome::UnknownDelete),
            },
            Change::Updated if p.patched.contains_key(&i) => {
                Disposal::Arrived(p.patched[&i].clone())
            }
            Change::Created | Change::Updated => Disposal::Fetch(job_of(i, e)),
        };
        plan.push((i, d));
    }
    plan
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
            media_type: e.media_type.as_deref().map(str::to_string),
        },
        scope: e.scope.clone(),
        validators: None,
    }
}

/// The sync point, the documents read and the Change Lists closed, for the last transaction.
/// `ends`: the latest change applied, the earliest that failed, and the lists that had one.
fn settle(p: Pending, ends: Ends) -> Settled {
    let failed_docs = &ends.failed_docs;
    let closed_ok: Vec<_> = (p.changes.closed_read.iter())
        .filter(|c| !failed_docs.contains(c.url.as_str()))
        .cloned()
        .collect();
    let until_max = closed_ok.iter().map(|c| c.until).max();
    let mut warnings = Vec::new();
    let sync_point = new_sync_point(&p, until_max, &ends, &mut warnings);
    // A list with a failed change keeps no validators: the next run must read it again
    // even if it did not change, to retry that change.
    let documents: Vec<_> = (p.changes.documents.iter())
        .map(|d| {
            let mut d = d.clone();
            if failed_docs.contains(d.url.as_str()) {
                d.etag = None;
                d.last_modified = None;
            }
            d
        })
        .collect();
    let Pending {
        collection,
        describes,
        changes_at,
        metadata,
        ..
    } = p;
    let rows: SnapshotRows = Box::new(move |tx, source_id, run_id| {
        for d in &documents {
            write::document(tx, source_id, run_id, d)?;
        }
        for c in &closed_ok {
            write::processed_change_list(tx, run_id, &collection, &c.url, c.from, c.until)?;
        }
        write::change_document(tx, (source_id, run_id), &collection, changes_at.as_str())?;
        if let Some(d) = &describes {
            record_identity(tx, &collection, d, DESCRIBES_BASIS)?;
        }
        for m in &metadata {
            source_metadata::record(tx, run_id, m)?;
        }
        Ok(())
    });
    Settled {
        sync_point,
        rows,
        warnings,
    }
}

/// A 1.0 delete dated before the sync point (by the deleted state's lastmod): applied when the
/// mirror still holds that state or an older one (said as a warning either way).
fn stale_delete_holds(
    e: &Event,
    c: &CurrentState,
    since: Timestamp,
    warnings: &mut Vec<String>,
) -> bool {
    let time = e.time.unwrap_or(since);
    let held = match c.lastmod {
        Some(lastmod) if lastmod <= time => true,
        Some(lastmod) => {
            warnings.push(format!(
                "{}: line {}: deleted {} dated {time}, before the sync point; not \
                 applied: the mirror holds a later state (lastmod {lastmod})",
                e.document, e.line, e.uri
            ));
            false
        }
        None => {
            warnings.push(format!(
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
    warnings.push(format!(
        "{}: line {}: deleted {} dated {time}, before the sync point (a ResourceSync \
         1.0 list dates a delete by the deleted state's lastmod); applied: the mirror \
         still held that state",
        e.document, e.line, e.uri
    ));
    true
}

/// The new sync point: the later of the last fully processed closed list's `until` and the
/// latest applied event time, never past a failed event, never backwards, never in the future.
fn new_sync_point(
    p: &Pending,
    until_max: Option<Timestamp>,
    ends: &Ends,
    warnings: &mut Vec<String>,
) -> SyncPoint {
    let (applied_max, failed_min) = (ends.applied_max, ends.failed_min);
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
        warnings.push(format!(
            "{}: the new sync point would be {at}, later than the Change Lists were read; kept at {kept}",
            p.collection
        ));
        at = kept;
        basis = "time the Change Lists were read (their times lie in the future)".to_string();
    }
    SyncPoint {
        collection: p.collection.clone(),
        at: Some(at),
        anchored: true,
        basis,
    }
}
