//! The engine's side of an incremental run: the changes a format read since the sync point
//! (a ResourceSync Change List's or Change Dump's entries, an ARC delta feed's pages), applied
//! one way for every format.
//!
//! A format reads and plans: which changes apply (the last per URI), what becomes of each
//! before any transfer ([`Disposal`]), and, after the run, the sync point from what this
//! module says was applied and what failed ([`Ends`]). This module applies: tombstones and
//! change events, the transfer of what is fetched, [`decide`] for what arrived (created,
//! updated, touched, unchanged), one writer for versions, events and problems, and the stop
//! on a full disk or an unwritable catalog with what landed committed.
//!
//! Every change leaves a change event (ResourceSync 1.1 §12.1 names created, updated and
//! deleted): `applied` with the version it made, else `unchanged`, `unknown-delete`,
//! `failed`, `refused` or `pending`.

use crate::engine::agreement::Agreement;
use crate::engine::apply::{self, Fetched, Job, JobResult, Then, Writer};
use crate::engine::context::{stop_early, stop_for_fault, stop_for_space, RunContext};
use crate::engine::decide::{decide, Basis, Held};
use crate::engine::snapshot::{self, SnapshotRows};
use crate::error::Error;
use crate::model::{Change, ChangeOutcome, ProblemClass};
use crate::net::Http;
use crate::progress::Progress;
use crate::report::{problem_line, Problem, Summary};
use crate::settings;
use crate::store::catalog::{write, ChangeEventRecord, CurrentState, NewVersion, SyncPoint};
use crate::store::{ObjectStore, StoreError};
use jiff::Timestamp;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;
use url::Url;

/// One change as the engine applies it; each format's change type says these.
pub(crate) trait Item {
    fn uri(&self) -> &Url;
    /// The change the source states (`created`, `updated`, `deleted`); `None` when it says
    /// only that the resource is there (an ARC delta page): then `created` or `updated` by
    /// whether the mirror holds it.
    fn stated(&self) -> Option<Change>;
    /// The change's time as the version records it.
    fn event_time(&self) -> Option<Timestamp>;
    /// The time of the change the source stated, as its event records it (`None`: it stated
    /// none, and a feed leaves it out).
    fn stated_time(&self) -> Option<Timestamp> {
        self.event_time()
    }
    /// Why the change is recorded without the time it was given (a Change List entry without
    /// `datetime`), for the run's problems; `None`: nothing to say.
    fn undated(&self) -> Option<&'static str> {
        None
    }
    /// The lastmod the source declares for the new state.
    fn lastmod(&self) -> Option<Timestamp>;
    /// The categories the source gives the resource (2012 draft §3.1.7); none by default.
    fn categories(&self) -> &[crate::model::Category] {
        &[]
    }
    /// The document (list, feed, package) the change was read from.
    fn document(&self) -> &str;
    /// The time this change moves the sync point to once applied (`None`: it does not).
    fn applied_time(&self) -> Option<Timestamp>;
    /// The time a failure of this change holds the sync point at.
    fn failed_time(&self) -> Option<Timestamp>;
    /// The version its fetched bytes make, `change` being what [`decide`] said.
    fn version(&self, collection: &str, change: Change, f: &Fetched) -> NewVersion;
    /// The tombstone a deletion leaves: a version without bytes.
    fn tombstone(&self, collection: &str) -> NewVersion {
        NewVersion {
            event_time: self.event_time(),
            lastmod: self.lastmod(),
            ..NewVersion::tombstone(self.uri().to_string(), collection.to_string())
        }
    }
    /// Whether bytes other than the change declares mean the resource changed again after
    /// the document was read, so that a later change will bring them (`pending`, as for a
    /// Change List entry), rather than a failure retried from this change on (an ARC page
    /// whose `ai_checksum` does not match).
    fn later_change_follows(&self) -> bool {
        true
    }
    /// The format's own rows written beside a version of this change (ARC's page metadata).
    fn side_rows(&self, _collection: &str) -> Option<Then> {
        None
    }
}

/// What becomes of one change before any transfer (the format's rules decide).
pub(crate) enum Disposal<J = Job> {
    /// Fetched: the job's index is the change's place in the list given to [`Changes::apply`].
    Fetch(J),
    /// An earlier state of the resource the source keeps (a memento): fetched before the
    /// other changes, and recorded in the order planned whatever order the transfers end in
    /// (a version's place in a resource's history is its order in the run).
    Earlier(J),
    /// Its bytes are in the store already, verified (a patch applied to the mirror's state):
    /// recorded as fetched bytes are, nothing transferred.
    Arrived(Box<Fetched>),
    /// A deletion of a resource the mirror holds.
    Tombstone,
    /// No version: only the event (`change`, `outcome`), `unchanged` or `unknown-delete`.
    Event(Change, ChangeOutcome),
}

/// What the sync point of a collection is made from, once its changes are applied.
#[derive(Debug, Default)]
pub(crate) struct Ends {
    /// The latest [`Item::applied_time`] of a change applied (or known to need nothing).
    pub(crate) applied_max: Option<Timestamp>,
    /// The earliest [`Item::failed_time`] of a change that failed: the sync point stays
    /// before it, so the next run retries it.
    pub(crate) failed_min: Option<Timestamp>,
    /// The documents a failed change came from.
    pub(crate) failed_docs: HashSet<String>,
}

/// One collection's changes since its sync point, read and planned by its format: what
/// `incremental` asks of a format that follows changes (a ResourceSync Change List, an ARC
/// delta feed). The format holds no writer, no summary and no network: [`follow`] applies
/// the changes, counts them, writes what is not applied, and records the sync point the
/// format says the applied changes justify, with the format's rows, in the last transaction.
pub(crate) trait ChangeSet {
    type Item: Item;
    fn collection(&self) -> &str;
    /// Every change read, in the order they are applied (`plan` says which are).
    fn items(&self) -> &[Self::Item];
    /// Tolerated oddities of the documents read, with document and line.
    fn warnings(&self) -> &[String];
    /// What was read, said with `-v`.
    fn trail(&self) -> &[String];
    /// Changes the source lists that the run counts as listed, given how many were
    /// planned.
    fn listed(&self, planned: usize) -> u64;
    /// Changes not asked for (outside the scope), with why.
    fn refused(&self) -> Vec<(&str, &str)>;
    /// Changes the source asks not to take (an ARC page behind a login), with why.
    fn skipped(&self) -> Vec<(&str, &str)> {
        Vec::new()
    }
    /// The events of changes a later one of the same resource supersedes.
    fn superseded(&self) -> Vec<ChangeEventRecord> {
        Vec::new()
    }
    /// The pause between requests the source asks for; the user's `--delay` wins.
    fn crawl_delay(&self) -> Option<Duration> {
        None
    }
    /// What becomes of each change to apply (indexes into [`ChangeSet::items`], in order),
    /// given the mirror's states of the resources they name; oddities go to `warnings`.
    fn plan(
        &self,
        states: &HashMap<String, CurrentState>,
        warnings: &mut Vec<String>,
    ) -> Vec<(usize, Disposal)>;
    /// The sync point the applied changes justify (`ends`), and the format's rows written with
    /// it.
    fn settle(self, ends: Ends) -> Settled;
}

/// What a [`ChangeSet`] leaves once applied.
pub(crate) struct Settled {
    pub(crate) sync_point: SyncPoint,
    /// The format's rows (its documents, the lists it closed), written with the sync point.
    pub(crate) rows: SnapshotRows,
    pub(crate) warnings: Vec<String>,
}

/// `incremental` of the collections of a format that follows changes: the mirror's states of
/// every resource the changes name read once, then each collection's changes applied through
/// one writer, paced as its source asks unless `--delay` says otherwise, and its sync point
/// recorded with the format's rows.
pub(crate) fn follow<C: ChangeSet>(
    ctx: &mut RunContext<'_, '_>,
    s: &settings::Incremental,
    sets: Vec<C>,
) -> Result<(), Error> {
    let states = ctx.catalog.current_states_of(
        sets.iter()
            .flat_map(|c| c.items().iter().map(|i| i.uri().as_str())),
    )?;
    let verbose = s.output.verbose > 0;
    let (source_id, run_id) = (ctx.source_id, ctx.run_id);
    let mut writer = Writer::new(ctx.catalog, ctx.objects, run_id);
    for set in sets {
        let summary = &mut *ctx.summary;
        summary.warnings.extend(set.warnings().iter().cloned());
        let paced = snapshot::paced_http(&s.source, set.crawl_delay(), &mut summary.warnings);
        if verbose {
            for t in set.trail() {
                ctx.progress.println(t);
            }
        }
        snapshot::record_refused_and_skipped(
            &mut writer,
            &set.refused(),
            &set.skipped(),
            verbose,
            summary,
            ctx.progress,
        )?;
        for e in set.superseded() {
            writer.event(e)?;
        }
        // IFCC-0001: a change without a datetime is ignored by feeds, and counted here.
        for item in set.items() {
            if let Some(why) = item.undated() {
                writer.problem(item.uri().as_str(), ProblemClass::Warning, why)?;
            }
        }
        let plan = set.plan(&states, &mut summary.warnings);
        summary.listed += set.listed(plan.len());
        let mut run = Changes::new(
            &mut writer,
            (set.collection(), ctx.docs.filter),
            Some(&states),
            ctx.staging,
            summary,
            ctx.progress,
        );
        let http = paced.as_ref().unwrap_or(ctx.http);
        run.apply((http, ctx.objects, s.jobs), set.items(), plan)?;
        let ends = run.ends()?;
        let Settled {
            sync_point,
            rows,
            warnings,
        } = set.settle(ends);
        let summary = &mut *ctx.summary;
        summary.warnings.extend(warnings);
        summary.sync_point = sync_point.at.map(|t| t.to_string());
        summary.anchored = sync_point.anchored;
        writer.flush(|tx| {
            rows(tx, source_id, run_id)?;
            write::sync_point(tx, source_id, run_id, &sync_point)
        })?;
    }
    Ok(())
}

/// A resource's live state as far as [`decide`] needs it.
#[derive(Debug, Clone)]
struct Live {
    sha256: Option<String>,
    lastmod: Option<Timestamp>,
}

/// The changes of one collection as they are applied: where each goes (the writer, the
/// summary, stderr), what the mirror holds of each resource, and what the sync point will
/// be made of.
pub(crate) struct Changes<'x, 'w> {
    writer: &'x mut Writer<'w>,
    collection: &'x str,
    /// The mirror's states read before the run, when the format read them for every URI its
    /// changes name; else each is asked of the catalog when first needed.
    read: Option<&'x HashMap<String, CurrentState>>,
    /// What this run applied, by URI (`None`: deleted): the catalog holds it only once the
    /// writer has flushed.
    applied: HashMap<String, Option<Live>>,
    staging: &'x Path,
    summary: &'x mut Summary,
    progress: &'x Progress,
    ends: Ends,
    /// Whether pending changes are believable ([`Agreement`]), and what they would hold of
    /// the sync point if they are not (as [`Ends`] has it of failures).
    agreement: Agreement,
    pending_ends: Ends,
    /// Changes left to fetch, for the message of a full disk.
    left: usize,
    /// What the mirror takes (`--include`/`--exclude`): a change of a resource it leaves out
    /// is not applied ([`Changes::left_out`]).
    filter: &'x crate::model::Filter,
}

impl<'x, 'w> Changes<'x, 'w> {
    /// The changes of `collection`; `read`: the mirror's states of every URI they name, when
    /// read before (`None`: asked one at a time); `filter`: the resources the mirror takes.
    pub(crate) fn new(
        writer: &'x mut Writer<'w>,
        (collection, filter): (&'x str, &'x crate::model::Filter),
        read: Option<&'x HashMap<String, CurrentState>>,
        staging: &'x Path,
        summary: &'x mut Summary,
        progress: &'x Progress,
    ) -> Self {
        Changes {
            writer,
            collection,
            read,
            applied: HashMap::new(),
            staging,
            summary,
            progress,
            ends: Ends::default(),
            agreement: Agreement::default(),
            pending_ends: Ends::default(),
            left: 0,
            filter,
        }
    }

    /// Whether `item` is of a resource the filter leaves out (`--include`/`--exclude`): then
    /// it is counted as excluded and nothing else happens, no event, no version; it moves the
    /// sync point as a change applied does (it needs nothing, now or later).
    fn left_out(&mut self, item: &impl Item) -> bool {
        // A deletion names no category: under `--category` it is the filter's when the
        // categories recorded with the mirror's copy are (else it is left alone).
        let categories = if item.stated() == Some(Change::Deleted) && self.filter.by_category() {
            let catalog = self.writer.catalog();
            let held = catalog.current_state(item.uri().as_str()).ok().flatten();
            held.and_then(|s| catalog.version_categories(s.version_id).ok())
                .unwrap_or_default()
        } else {
            item.categories().to_vec()
        };
        if self.filter.admits(item.uri().as_str()) && self.filter.admits_categories(&categories) {
            return false;
        }
        self.summary.excluded += 1;
        self.ends.applied_max = self.ends.applied_max.max(item.applied_time());
        true
    }

    /// The writer, for what the format records itself.
    pub(crate) fn writer(&mut self) -> &mut Writer<'w> {
        self.writer
    }

    pub(crate) fn summary(&mut self) -> &mut Summary {
        self.summary
    }

    pub(crate) fn progress(&self) -> &'x Progress {
        self.progress
    }

    /// What the applied changes leave for the sync point; pending changes that were more than
    /// the changes that agreed with their documents are failures first ([`Agreement`]).
    pub(crate) fn ends(self) -> Result<Ends, Error> {
        let mut ends = self.ends;
        let failed =
            self.agreement
                .settle(self.writer, self.summary, self.progress, self.collection)?;
        if failed > 0 {
            ends.failed_min = earliest(ends.failed_min, self.pending_ends.failed_min);
            ends.failed_docs.extend(self.pending_ends.failed_docs);
        }
        Ok(ends)
    }

    /// Apply `items` as `plan` disposes of them (indexes into `items`, in order): tombstones
    /// and events first, then every fetch through one transfer of `jobs` workers.
    pub(crate) fn apply<I: Item>(
        &mut self,
        (http, objects, jobs): (&Http, &ObjectStore, usize),
        items: &[I],
        plan: Vec<(usize, Disposal)>,
    ) -> Result<(), Error> {
        let mut fetch = Vec::new();
        let mut earlier = Vec::new();
        for (i, d) in plan {
            if self.left_out(&items[i]) {
                continue;
            }
            match d {
                Disposal::Fetch(job) => fetch.push(job),
                Disposal::Earlier(job) => earlier.push(job),
                Disposal::Arrived(f) => {
                    let item = &items[i];
                    self.arrived(item, &f.computed.sha256_hex, |c, change| {
                        Ok(item.version(c, change, &f))
                    })?;
                }
                Disposal::Tombstone => self.tombstone(&items[i])?,
                Disposal::Event(change, outcome) => self.known(&items[i], change, outcome)?,
            }
        }
        self.left = fetch.len() + earlier.len();
        self.progress
            .more("incremental", (fetch.len() + earlier.len()) as u64);
        if !earlier.is_empty() {
            // Each object is in the store once fetched; what is recorded of it waits for its
            // turn.
            let place: HashMap<usize, usize> = (earlier.iter().enumerate())
                .map(|(k, j)| (j.index, k))
                .collect();
            let mut landed: Vec<(usize, JobResult)> = Vec::new();
            apply::transfer(http, self.staging, objects, earlier, jobs, |r| {
                let index = match &r {
                    JobResult::Fetched(i, _) | JobResult::NotModified(i) => *i,
                    JobResult::Failed { index, .. } => *index,
                    _ => return self.on(items, r),
                };
                landed.push((place[&index], r));
                Ok(())
            })?;
            landed.sort_by_key(|(k, _)| *k);
            for (_, r) in landed {
                self.on(items, r)?;
            }
        }
        apply::transfer(http, self.staging, objects, fetch, jobs, |r| {
            self.on(items, r)
        })
    }

    /// A change that needs no version: its event, counted as `unchanged` or
    /// `unknown-delete`.
    pub(crate) fn known(
        &mut self,
        item: &impl Item,
        change: Change,
        outcome: ChangeOutcome,
    ) -> Result<(), Error> {
        if self.left_out(item) {
            return Ok(());
        }
        match outcome {
            ChangeOutcome::UnknownDelete => self.summary.unknown_deletes += 1,
            _ => self.summary.unchanged += 1,
        }
        // Known already: the source agrees with the mirror about it.
        self.agreement.agreed(1);
        self.ends.applied_max = self.ends.applied_max.max(item.applied_time());
        let event = self.event(item, change, outcome);
        Ok(self.writer.event(event)?)
    }

    /// A deletion applied to a resource the mirror holds: the tombstone ([`Item::tombstone`])
    /// and its event, counted and named as deleted.
    pub(crate) fn tombstone(&mut self, item: &impl Item) -> Result<(), Error> {
        self.record_tombstone(item, true)
    }

    /// A deletion of a resource the mirror never held (an OAI-PMH deleted record seen first):
    /// recorded, so that the mirror knows what the source says it deleted, but nothing went:
    /// it is neither counted nor named as deleted.
    pub(crate) fn tombstone_unheld(&mut self, item: &impl Item) -> Result<(), Error> {
        self.record_tombstone(item, false)
    }

    fn record_tombstone(&mut self, item: &impl Item, held: bool) -> Result<(), Error> {
        if self.left_out(item) {
            return Ok(());
        }
        // A deletion applied as the document says: no sign the source disagrees with itself.
        self.agreement.agreed(1);
        self.ends.applied_max = self.ends.applied_max.max(item.applied_time());
        let version = item.tombstone(self.collection);
        if held {
            self.summary.deleted += 1;
            // Every URL that goes is named, under cron too: the first ones on stderr, all of
            // them in the run's problems.
            let named = crate::report::NAMED as u64;
            match self.summary.deleted {
                n if n <= named => self.progress.println(&format!("deleted: {}", version.uri)),
                n if n == named + 1 => self.progress.println(
                    "deleted: ... and more (all of them in the run's problems: rsmirror log --run)",
                ),
                _ => {}
            }
            self.writer.problem(
                &version.uri,
                crate::model::ProblemClass::Deleted,
                "deleted at the source (the source's list of changes says so): tombstoned",
            )?;
        }
        self.applied.insert(version.uri.clone(), None);
        let event = self.event(item, Change::Deleted, ChangeOutcome::Applied);
        self.writer.version_with(version, Some(event), None)?;
        crate::store::kill::point("incremental.tombstone");
        Ok(())
    }

    /// Whether the mirror holds `uri` (`None`: never heard of), and if so its live state
    /// (`Some(None)`: deleted): this run's doing first, then what was read, else the
    /// catalog's.
    fn holds(&self, uri: &str) -> Result<Option<Option<Live>>, StoreError> {
        if let Some(now) = self.applied.get(uri) {
            return Ok(Some(now.clone()));
        }
        let live = |c: &CurrentState| {
            (!c.deleted).then(|| Live {
                sha256: c.sha256_hex.clone(),
                lastmod: c.lastmod,
            })
        };
        match self.read {
            Some(read) => Ok(read.get(uri).map(live)),
            None => Ok(self.writer.catalog().current_state(uri)?.as_ref().map(live)),
        }
    }

    /// Whether the mirror holds a live state (not a tombstone) of `item`'s resource.
    pub(crate) fn live(&self, item: &impl Item) -> Result<bool, Error> {
        Ok(self.holds(item.uri().as_str())?.flatten().is_some())
    }

    /// Whether the mirror holds `item`'s resource at all, a tombstone included.
    pub(crate) fn heard_of(&self, item: &impl Item) -> Result<bool, Error> {
        Ok(self.holds(item.uri().as_str())?.is_some())
    }

    /// The change event of `item`.
    fn event(&self, item: &impl Item, change: Change, outcome: ChangeOutcome) -> ChangeEventRecord {
        ChangeEventRecord {
            collection: self.collection.to_string(),
            uri: item.uri().to_string(),
            change,
            event_time: item.stated_time(),
            document_url: item.document().to_string(),
            outcome,
        }
    }

    /// The change `item` states, or what it is to the mirror (`live`: it holds the resource).
    fn stated(item: &impl Item, live: bool) -> Change {
        item.stated().unwrap_or(if live {
            Change::Updated
        } else {
            Change::Created
        })
    }

    /// One result of the transfer.
    fn on<I: Item>(&mut self, items: &[I], r: JobResult) -> Result<(), Error> {
        if matches!(
            r,
            JobResult::Fetched(..) | JobResult::NotModified(_) | JobResult::Failed { .. }
        ) {
            self.left = self.left.saturating_sub(1);
        }
        match r {
            JobResult::Fetched(i, f) => {
                self.progress.item(f.computed.length);
                self.summary.bytes += f.computed.length;
                let item = &items[i];
                self.arrived(item, &f.computed.sha256_hex, |c, change| {
                    Ok(item.version(c, change, &f))
                })?;
                Ok(())
            }
            // Changes are fetched whole: no validators are sent.
            JobResult::NotModified(_) => {
                self.agreement.agreed(1);
                self.summary.unchanged += 1;
                Ok(())
            }
            // What landed before is committed first.
            JobResult::Unwritable(e) => Err(stop_for_fault(self.writer, e)),
            JobResult::NoSpace(message) => {
                let needed = format!(", with {} resources left to fetch", self.left);
                Err(stop_for_space(self.writer, self.staging, message, needed))
            }
            JobResult::Stop(message) => Err(stop_early(self.writer, message)),
            JobResult::Failed {
                index,
                reason,
                refused,
                other_bytes,
                ..
            } => {
                self.progress.item(0);
                let item = &items[index];
                let class = if refused {
                    ProblemClass::Refused
                } else if other_bytes && item.later_change_follows() {
                    ProblemClass::Pending
                } else {
                    ProblemClass::Failed
                };
                self.failed(item, class, reason)
            }
        }
    }

    /// Bytes of `item` arrived (fetched, or from a package) with `sha256`: [`decide`] says
    /// whether they are a new version, which `version` then makes of the collection and the
    /// change (storing the bytes first, when they are not stored yet). False: they are not.
    pub(crate) fn arrived(
        &mut self,
        item: &impl Item,
        sha256: &str,
        version: impl FnOnce(&str, Change) -> Result<NewVersion, Error>,
    ) -> Result<bool, Error> {
        if self.left_out(item) {
            return Ok(false);
        }
        self.ends.applied_max = self.ends.applied_max.max(item.applied_time());
        let had = self.holds(item.uri().as_str())?.flatten();
        let held = had.as_ref().map(|h| Held {
            sha256: h.sha256.as_deref(),
            lastmod: h.lastmod,
        });
        let stated = Self::stated(item, held.is_some());
        let basis = Basis::Change {
            lastmod: item.lastmod(),
        };
        let decision = decide(held, sha256, basis);
        self.agreement.agreed(1);
        decision.count(self.summary);
        let Some(change) = decision.change() else {
            let event = self.event(item, stated, ChangeOutcome::Unchanged);
            self.writer.event(event)?;
            return Ok(false);
        };
        let v = version(self.collection, change)?;
        self.applied.insert(
            v.uri.clone(),
            Some(Live {
                sha256: v.sha256_hex.clone(),
                lastmod: v.lastmod,
            }),
        );
        let event = self.event(item, stated, ChangeOutcome::Applied);
        let side = item.side_rows(self.collection);
        self.writer.version_with(v, Some(event), side)?;
        Ok(true)
    }

    /// A change that could not be applied: `class` is `failed` (the sync point stays before
    /// it), `refused` (outside the scope) or `pending` (other bytes than it declares: the
    /// resource changed again after the document was read; that later change is dated after
    /// every change of this document, so after the sync point this run records, and it does
    /// not hold it back: a busy source would never be caught up with).
    pub(crate) fn failed(
        &mut self,
        item: &impl Item,
        class: ProblemClass,
        reason: String,
    ) -> Result<(), Error> {
        let uri = item.uri().as_str();
        let reason = match class {
            ProblemClass::Refused => {
                self.summary.refused += 1;
                reason
            }
            ProblemClass::Pending => {
                let why = format!(
                    "{reason} (it changed again after {} was read; pending until a later \
                     change is applied)",
                    item.document()
                );
                // Said by the agreement, once it is believable.
                let at = (&mut *self.writer, &*self.summary, self.progress);
                self.agreement.pending(at, uri, &why, &reason)?;
                self.summary.pending += 1;
                let ends = &mut self.pending_ends;
                ends.failed_min = earliest(ends.failed_min, item.failed_time());
                ends.failed_docs.insert(item.document().to_string());
                why
            }
            _ => {
                self.summary.failed += 1;
                self.ends.failed_min = earliest(self.ends.failed_min, item.failed_time());
                self.ends.failed_docs.insert(item.document().to_string());
                reason
            }
        };
        // A cause repeated: said once.
        let said = match class {
            ProblemClass::Pending => false,
            ProblemClass::Failed => self.agreement.say_failure(uri, &reason),
            _ => true,
        };
        if said {
            self.progress.println(&problem_line(class, uri, &reason));
        }
        self.writer.problem(uri, class, &reason)?;
        let stated = match item.stated() {
            Some(stated) => stated,
            None => Self::stated(item, self.live(item)?),
        };
        let outcome = match class {
            ProblemClass::Refused => ChangeOutcome::Refused,
            ProblemClass::Pending => ChangeOutcome::Pending,
            _ => ChangeOutcome::Failed,
        };
        let event = self.event(item, stated, outcome);
        self.writer.event(event)?;
        self.summary.problems.push(Problem {
            uri: uri.to_string(),
            class,
            reason,
        });
        Ok(())
    }
}

/// The earlier of two times, either of which may be unknown.
pub(crate) fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::catalog::write;
    use crate::store::Catalog;

    struct Entry {
        uri: Url,
        stated: Option<Change>,
        lastmod: Option<Timestamp>,
    }

    impl Item for Entry {
        fn uri(&self) -> &Url {
            &self.uri
        }
        fn stated(&self) -> Option<Change> {
            self.stated
        }
        fn event_time(&self) -> Option<Timestamp> {
            self.lastmod
        }
        fn lastmod(&self) -> Option<Timestamp> {
            self.lastmod
        }
        fn document(&self) -> &str {
            "http://x/changelist.xml"
        }
        fn applied_time(&self) -> Option<Timestamp> {
            self.lastmod
        }
        fn failed_time(&self) -> Option<Timestamp> {
            self.lastmod
        }
        fn version(&self, collection: &str, change: Change, f: &Fetched) -> NewVersion {
            version(self, f.computed.sha256_hex.clone())(collection, change).unwrap()
        }
    }

    /// The version `item` makes with bytes `sha256`, as [`Changes::arrived`] asks for it.
    fn version(
        item: &Entry,
        sha256: String,
    ) -> impl FnOnce(&str, Change) -> Result<NewVersion, Error> + '_ {
        move |collection, change| {
            Ok(NewVersion {
                uri: item.uri.to_string(),
                collection: collection.into(),
                change,
                lastmod: item.lastmod,
                sha256_hex: Some(sha256),
                arrived_via: crate::model::Via::Http,
                ..Default::default()
            })
        }
    }

    fn t(s: &str) -> Option<Timestamp> {
        Some(s.parse().unwrap())
    }

    fn change(uri: &str, stated: Option<Change>, lastmod: &str) -> Entry {
        Entry {
            uri: Url::parse(&format!("http://x/{uri}")).unwrap(),
            stated,
            lastmod: t(lastmod),
        }
    }

    /// Changes applied one after another, the mirror asked one resource at a time (as for a
    /// Change Dump): each sees what the ones before did, events say what became of each,
    /// and the sync point's ends move only with what was applied.
    #[test]
    fn changes_are_decided_against_the_mirror_and_this_runs_own_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open(dir.path()).unwrap();
        let objects = ObjectStore::open(dir.path()).unwrap();
        let run_id = catalog.begin_run("incremental", None, "test").unwrap();
        let sha = |n: u8| format!("{n:02x}").repeat(32);
        catalog
            .in_transaction(|tx| {
                for (uri, change, sha256) in [
                    ("a", Change::Created, Some(sha(1))),
                    ("gone", Change::Deleted, None),
                ] {
                    let v = NewVersion {
                        uri: format!("http://x/{uri}"),
                        collection: "c".into(),
                        change,
                        lastmod: t("2026-01-01T00:00:00Z"),
                        sha256_hex: sha256,
                        arrived_via: crate::model::Via::Http,
                        ..Default::default()
                    };
                    write::version(tx, run_id, &v)?;
                }
                Ok(())
            })
            .unwrap();

        let mut writer = Writer::new(&mut catalog, &objects, run_id);
        let mut summary = Summary::default();
        let progress = Progress::new(true);
        let staging = dir.path().join("staging");
        let filter = crate::model::Filter::new(crate::model::Rules {
            include: vec![],
            exclude: vec!["/left-out/*".into()],
            category: vec![],
        })
        .unwrap();
        let mut run = Changes::new(
            &mut writer,
            ("c", &filter),
            None,
            &staging,
            &mut summary,
            &progress,
        );

        // The same bytes under a later lastmod: a touch, recorded as updated.
        let touch = change("a", Some(Change::Updated), "2026-02-01T00:00:00Z");
        assert!(run
            .arrived(&touch, &sha(1), version(&touch, sha(1)))
            .unwrap());
        // The same bytes under the same lastmod again (this run's own state): unchanged.
        let again = change("a", Some(Change::Updated), "2026-02-01T00:00:00Z");
        assert!(!run
            .arrived(&again, &sha(1), version(&again, sha(1)))
            .unwrap());
        // A page that only says it is there: created, since the mirror never had it.
        let new = change("new", None, "2026-02-02T00:00:00Z");
        assert!(run.arrived(&new, &sha(2), version(&new, sha(2))).unwrap());
        assert!(run.live(&new).unwrap());
        // Deleted: this run's tombstone is what the next change sees.
        let delete = change("a", Some(Change::Deleted), "2026-02-03T00:00:00Z");
        assert!(run.live(&delete).unwrap());
        run.tombstone(&delete).unwrap();
        assert!(!run.live(&delete).unwrap());
        assert!(run.heard_of(&delete).unwrap());
        // A deletion of a tombstone, and of a resource never heard of.
        let gone = change("gone", Some(Change::Deleted), "2026-02-04T00:00:00Z");
        assert!(run.heard_of(&gone).unwrap() && !run.live(&gone).unwrap());
        run.known(&gone, Change::Deleted, ChangeOutcome::Unchanged)
            .unwrap();
        let never = change("never", Some(Change::Deleted), "2026-02-05T00:00:00Z");
        assert!(!run.heard_of(&never).unwrap());
        run.known(&never, Change::Deleted, ChangeOutcome::UnknownDelete)
            .unwrap();
        // Pending does not hold the sync point; a failure does, and names its document.
        let pending = change("p", None, "2026-01-15T00:00:00Z");
        run.failed(&pending, ProblemClass::Pending, "sha-256 mismatch".into())
            .unwrap();
        let failed = change("f", None, "2026-01-20T00:00:00Z");
        run.failed(&failed, ProblemClass::Failed, "HTTP 500".into())
            .unwrap();
        // A change the filter leaves out: counted, nothing recorded, the sync point moves.
        let out = change("left-out/x", None, "2026-02-05T00:00:00Z");
        assert!(!run.arrived(&out, &sha(3), version(&out, sha(3))).unwrap());
        run.tombstone(&out).unwrap();
        assert!(!run.heard_of(&out).unwrap());
        let ends = run.ends().unwrap();
        assert_eq!(ends.applied_max, t("2026-02-05T00:00:00Z"));
        assert_eq!(ends.failed_min, t("2026-01-20T00:00:00Z"));
        assert!(ends.failed_docs.contains("http://x/changelist.xml"));
        assert_eq!(ends.failed_docs.len(), 1);
        writer.flush(|_| Ok(())).unwrap();

        // A touch is counted as updated, as for a Change List.
        assert_eq!(
            (summary.updated, summary.unchanged, summary.created),
            (1, 2, 1),
            "{summary:?}"
        );
        assert_eq!((summary.deleted, summary.unknown_deletes), (1, 1));
        assert_eq!(summary.excluded, 2);
        assert_eq!((summary.pending, summary.failed), (1, 1));
        let problems: Vec<_> = summary.problems.iter().map(|p| p.class).collect();
        assert_eq!(problems, [ProblemClass::Pending, ProblemClass::Failed]);
        assert!(summary.problems[0].reason.contains("changed again after"));

        let events = crate::store::change_history::recorded_events(&catalog).unwrap();
        let events: Vec<_> = events
            .iter()
            .map(|(u, c, o)| (u.trim_start_matches("http://x/"), c.as_str(), o.as_str()))
            .collect();
        let mut sorted = events.clone();
        sorted.sort();
        let mut expected = vec![
            ("a", "updated", "applied"),
            ("a", "updated", "unchanged"),
            ("new", "created", "applied"),
            ("a", "deleted", "applied"),
            ("gone", "deleted", "unchanged"),
            ("never", "deleted", "unknown-delete"),
            ("p", "created", "pending"),
            ("f", "created", "failed"),
        ];
        expected.sort();
        assert_eq!(sorted, expected);
        let a = catalog.current_state("http://x/a").unwrap().unwrap();
        assert!(a.deleted);
        let new = catalog.current_state("http://x/new").unwrap().unwrap();
        assert_eq!(new.sha256_hex, Some(sha(2)));
    }
}
