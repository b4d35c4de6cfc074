//! The engine's run of a format that only reads ([`Reader`]: OAI-PMH, IIIF Change Discovery).
//! The reader names each document; this module fetches it (one HTTP stack: retries, a 503's
//! `Retry-After`, the scope), hands it over as bytes, and applies what it publishes through the
//! one [`Changes`] of every incremental: [`decide`](crate::engine::decide) for each state that
//! arrives, tombstones for deletions, change events, problems, and the transfer of what is
//! fetched from elsewhere (a IIIF Manifest). After each document, what it brought and the
//! reader's checkpoint commit in one transaction (`store::harvests`), so that a harvest killed
//! between two documents resumes after the last one applied; at the end the sync point the
//! reader justifies is recorded, never past a change that failed (it is retried next run).
//!
//! Every command runs through here for these formats: `baseline` (everything the source
//! publishes), `incremental` (since the sync point), their dry runs (the same walk, nothing
//! written), `audit` (the walk's end state as the expected state) and `inspect` (the documents).

use crate::engine::apply::{Fetched, Job, Writer};
use crate::engine::changes::{self, Changes, Disposal, Ends};
use crate::engine::context::RunContext;
use crate::engine::discover::{Collection, SourceKind};
use crate::engine::documents::{self, Documents};
use crate::engine::expected::{Item, Walked};
use crate::engine::plan::{Declared, Listed};
use crate::engine::reader::{Bytes, Entry, Next, Reader, Registration, Start};
use crate::error::{Error, SourceError};
use crate::model::{Change, ChangeOutcome, Via};
use crate::report::{DocumentReport, Summary};
use crate::rs::digest::Computed;
use crate::settings;
use crate::store::catalog::{write, NewVersion, SyncPoint};
use crate::store::new_file::NewFile;
use crate::store::{harvests, Catalog, ObjectStore, StoreError};
use jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use url::Url;

/// The registration of `kind` among those the commands handed down.
fn registration<'r>(docs: &'r Documents<'_>, kind: SourceKind) -> Result<&'r Registration, Error> {
    docs.readers.iter().find(|r| r.kind == kind).ok_or_else(|| {
        Error::Source(SourceError::Unusable {
            url: String::new(),
            message: format!("no reader registered for {} sources", kind.name()),
        })
    })
}

/// What a walk read, besides the entries.
#[derive(Debug, Default)]
struct Walk {
    /// The sync point the reader justifies once done, with its basis.
    sync_point: Option<(Timestamp, String)>,
    warnings: Vec<String>,
    /// The documents fetched, in order, with the entries each gave.
    documents: Vec<(String, u64)>,
    /// Whether it went on from a killed harvest's checkpoint.
    resumed: bool,
    /// Whether what it named is the whole collection ([`Reader::lists_everything`]).
    lists_everything: bool,
}

/// Walk the documents of the collection `base`: the reader names each, this fetches it and
/// hands it over; `each` receives each document's entries with the reader's checkpoint after
/// it. Stops at the first error (what `each` took of earlier documents stays taken).
fn walk(
    docs: &Documents<'_>,
    reg: &Registration,
    base: &Url,
    start: Start<'_>,
    mut each: impl FnMut(&Url, Vec<Entry>, Option<String>) -> Result<(), Error>,
) -> Result<Walk, Error> {
    let mut reader: Box<dyn Reader> = (reg.reader)();
    let scope = docs.scope_for(base);
    let mut out = Walk {
        resumed: start.resume.is_some(),
        ..Walk::default()
    };
    let unreadable = |e: crate::engine::reader::ReadError| {
        Error::Source(SourceError::Unusable {
            url: e.url,
            message: e.message,
        })
    };
    let mut next = reader.start(base, start).map_err(unreadable)?;
    loop {
        let got = documents::fetch(docs, &next, &scope)?;
        if out.documents.is_empty() {
            if let Some(w) = (reg.recognise)(got.doc()) {
                out.warnings.extend(w);
            }
        }
        let mut entries = Vec::new();
        let said = reader.read(got.doc(), &mut entries);
        out.warnings.extend(reader.warnings());
        let said = said.map_err(unreadable)?;
        out.documents
            .push((got.url.to_string(), entries.len() as u64));
        each(&got.url, entries, reader.checkpoint())?;
        match said {
            Next::Fetch(u) => next = u,
            Next::Done => break,
        }
    }
    out.sync_point = reader.sync_point();
    out.lists_everything = reader.lists_everything();
    Ok(out)
}

/// One entry as [`Changes`] applies it.
struct Arrival {
    entry: Entry,
    document: String,
}

impl changes::Item for Arrival {
    fn uri(&self) -> &Url {
        &self.entry.uri
    }
    fn stated(&self) -> Option<Change> {
        self.entry.change
    }
    fn event_time(&self) -> Option<Timestamp> {
        self.entry.time
    }
    fn lastmod(&self) -> Option<Timestamp> {
        self.entry.time
    }
    fn document(&self) -> &str {
        &self.document
    }
    fn applied_time(&self) -> Option<Timestamp> {
        self.entry.time
    }
    fn failed_time(&self) -> Option<Timestamp> {
        self.entry.time
    }
    fn version(&self, collection: &str, change: Change, f: &Fetched) -> NewVersion {
        let declared = Declared {
            lastmod: self.entry.time,
            ..Declared::default()
        };
        NewVersion {
            event_time: self.entry.time,
            ..f.version(&self.entry.uri, collection, change, &declared, None)
        }
    }
    /// Other bytes than expected cannot happen (nothing is declared): a failure is retried.
    fn later_change_follows(&self) -> bool {
        false
    }
}

/// Where a run that writes puts what a document brought.
struct Apply<'x, 'w> {
    writer: &'x mut Writer<'w>,
    collection: &'x str,
    docs: &'x Documents<'x>,
    objects: &'x ObjectStore,
    staging: &'x std::path::Path,
    summary: &'x mut Summary,
    progress: &'x crate::progress::Progress,
    jobs: usize,
    ids: (i64, i64),
    ends: Ends,
    /// Every resource the harvest named, kept by a baseline (to find what is gone).
    named: Option<HashSet<String>>,
}

impl Apply<'_, '_> {
    /// Apply one document's entries and commit them with the reader's checkpoint.
    fn document(
        &mut self,
        url: &Url,
        entries: Vec<Entry>,
        checkpoint: Option<String>,
    ) -> Result<(), Error> {
        let scope = Arc::new(self.docs.scope_for(url));
        let arrivals: Vec<Arrival> = entries
            .into_iter()
            .map(|entry| Arrival {
                entry,
                document: url.to_string(),
            })
            .collect();
        self.summary.listed += arrivals.len() as u64;
        let mut changes = Changes::new(
            self.writer,
            (self.collection, self.docs.filter),
            None,
            self.staging,
            self.summary,
            self.progress,
        );
        let mut plan = Vec::new();
        for (i, a) in arrivals.iter().enumerate() {
            if let Some(named) = &mut self.named {
                named.insert(a.entry.uri.to_string());
            }
            match &a.entry.bytes {
                // A deletion of a resource the mirror never held is recorded too: the
                // mirror knows what the source says it deleted (an OAI-PMH deleted record).
                Bytes::None if changes.live(a)? => changes.tombstone(a)?,
                Bytes::None if !changes.heard_of(a)? => changes.tombstone_unheld(a)?,
                Bytes::None => changes.known(a, Change::Deleted, ChangeOutcome::Unchanged)?,
                Bytes::Inline { bytes, media_type } => {
                    let computed = Computed::of(bytes);
                    let (objects, staging) = (self.objects, self.staging);
                    changes.arrived(a, &computed.sha256_hex, |collection, change| {
                        store_object(objects, staging, bytes, &computed.sha256_hex)?;
                        Ok(NewVersion {
                            uri: a.entry.uri.to_string(),
                            collection: collection.to_string(),
                            change,
                            event_time: a.entry.time,
                            lastmod: a.entry.time,
                            length_bytes: Some(computed.length),
                            md5_hex: Some(computed.md5_hex.clone()),
                            sha256_hex: Some(computed.sha256_hex.clone()),
                            media_type: Some(media_type.to_string()),
                            arrived_via: Via::Record,
                            fetched_from: Some(a.document.clone()),
                            ..NewVersion::default()
                        })
                    })?;
                }
                Bytes::At(at) => plan.push((
                    i,
                    Disposal::Fetch(Job {
                        index: i,
                        urls: vec![at.clone()],
                        expected: Default::default(),
                        scope: Arc::clone(&scope),
                        validators: None,
                    }),
                )),
            }
        }
        if !plan.is_empty() {
            changes.apply((self.docs.http, self.objects, self.jobs), &arrivals, plan)?;
        }
        let ends = changes.ends()?;
        self.ends.applied_max = self.ends.applied_max.max(ends.applied_max);
        self.ends.failed_min = changes::earliest(self.ends.failed_min, ends.failed_min);
        self.ends.failed_docs.extend(ends.failed_docs);
        let (ids, collection) = (self.ids, self.collection);
        self.writer
            .flush(|tx| harvests::save(tx, ids, collection, checkpoint.as_deref()))?;
        Ok(())
    }
}

/// Put `bytes` (whose SHA-256 is `sha256_hex`) into the store.
fn store_object(
    objects: &ObjectStore,
    staging: &std::path::Path,
    bytes: &[u8],
    sha256_hex: &str,
) -> Result<(), Error> {
    let mut file = NewFile::create(staging).map_err(|e| StoreError::io("creating", staging, e))?;
    file.write_all(bytes)
        .map_err(|e| StoreError::io("writing", staging, e))?;
    objects
        .ingest_new(file, sha256_hex)
        .map_err(|e| StoreError::io("storing", objects.root(), e))?;
    Ok(())
}

/// The collections a run goes through: discovery's, else (an incremental, which does not
/// discover a source whose records name what it follows) the ones the mirror records for the
/// source, else the source discovered again.
fn collections_of(
    docs: &Documents<'_>,
    catalog: &Catalog,
    source: Option<i64>,
    kind: SourceKind,
    given: Vec<Collection>,
) -> Result<Vec<Collection>, Error> {
    if given.iter().any(|c| c.prefetched.is_some()) {
        return Ok(given);
    }
    let source = match source {
        Some(id) => Some(id),
        None => match given.first() {
            Some(c) => catalog.known_source_id(&c.id)?,
            None => None,
        },
    };
    let recorded = match source {
        Some(id) => harvests::collections_of(catalog, id)?,
        None => Vec::new(),
    };
    if !recorded.is_empty() {
        return Ok(recorded
            .into_iter()
            .filter_map(|id| Url::parse(&id).ok())
            .map(|u| Collection::other(kind, &u))
            .collect());
    }
    let mut out = Vec::new();
    for c in given {
        let url = url_of(&c);
        let mut trail = Vec::new();
        match documents::recognise(docs, &url, &docs.scope_for(&url), None, &mut trail)? {
            Some(r) => out.push(Collection::recognised(r)),
            None => {
                return Err(SourceError::Unusable {
                    url: url.to_string(),
                    message: format!("no longer answers as a {} source", kind.name()),
                }
                .into())
            }
        }
    }
    Ok(out)
}

/// A baseline or incremental run of every collection: `since` of each is its sync point for an
/// incremental, nothing for a baseline.
fn run(
    ctx: &mut RunContext<'_, '_>,
    kind: SourceKind,
    collections: Vec<Collection>,
    (incremental, jobs, delete): (bool, usize, bool),
) -> Result<(), Error> {
    let reg = registration(ctx.docs, kind)?;
    let collections = collections_of(
        ctx.docs,
        ctx.catalog,
        Some(ctx.source_id),
        kind,
        collections,
    )?;
    for collection in collections {
        let base = url_of(&collection);
        let resume = harvests::state(ctx.catalog, &collection.id)?;
        let sync_point = ctx.catalog.sync_point(&collection.id)?.and_then(|sp| sp.at);
        let since = if incremental { sync_point } else { None };
        let (docs, objects, staging, progress) = (ctx.docs, ctx.objects, ctx.staging, ctx.progress);
        let mut writer = Writer::new(ctx.catalog, ctx.objects, ctx.run_id);
        let mut apply = Apply {
            writer: &mut writer,
            collection: &collection.id,
            docs,
            objects,
            staging,
            summary: &mut *ctx.summary,
            progress,
            jobs,
            ids: (ctx.source_id, ctx.run_id),
            ends: Ends::default(),
            named: (!incremental).then(HashSet::new),
        };
        let start = Start {
            since,
            resume: resume.as_deref(),
        };
        let walked = walk(docs, reg, &base, start, |url, entries, checkpoint| {
            apply.document(url, entries, checkpoint)
        })?;
        let (ends, named) = (
            std::mem::take(&mut apply.ends),
            std::mem::take(&mut apply.named),
        );
        ctx.summary.warnings.extend(walked.warnings.iter().cloned());
        let complete_listing = !walked.resumed && walked.lists_everything;
        if let Some(named) = named.filter(|_| complete_listing) {
            gone(
                &mut writer,
                &collection.id,
                &named,
                delete,
                ctx.summary,
                progress,
            )?;
        } else if !incremental && walked.resumed {
            ctx.summary.warnings.push(format!(
                "{}: this harvest went on from where a killed one stopped: resources it did \
                 not name are not called gone in this run",
                collection.id
            ));
        }
        let at = sync_point_of(&walked, &ends, sync_point);
        if let Some((at, _)) = &at {
            ctx.summary.sync_point = Some(at.to_string());
            ctx.summary.anchored = true;
        }
        let (ids, id) = ((ctx.source_id, ctx.run_id), collection.id.clone());
        writer.flush(|tx| {
            harvests::save(tx, ids, &id, None)?;
            match at {
                Some((at, basis)) => write::sync_point(
                    tx,
                    ids.0,
                    ids.1,
                    &SyncPoint {
                        collection: id.clone(),
                        at: Some(at),
                        anchored: true,
                        basis,
                    },
                ),
                None => Ok(()),
            }
        })?;
    }
    Ok(())
}

/// The collection's new sync point: the reader's claim, never past a change that failed (it is
/// retried from there next run), never backwards; `None`: it stays.
fn sync_point_of(
    walked: &Walk,
    ends: &Ends,
    was: Option<Timestamp>,
) -> Option<(Timestamp, String)> {
    let (mut at, mut basis) = walked.sync_point.clone()?;
    if let Some(f) = ends.failed_min {
        let before = f.checked_sub(SignedDuration::from_nanos(1)).unwrap_or(f);
        if before < at {
            at = before;
            basis = "just before the earliest change that failed (it is retried next run)".into();
        }
    }
    match was {
        Some(w) if at <= w => None,
        _ => Some((at, basis)),
    }
}

/// After a complete baseline harvest: the live resources of `collection` it did not name are
/// gone from the source; reported, and tombstoned with `--delete`.
fn gone(
    writer: &mut Writer<'_>,
    collection: &str,
    named: &HashSet<String>,
    delete: bool,
    summary: &mut Summary,
    progress: &crate::progress::Progress,
) -> Result<(), Error> {
    writer.flush(|_| Ok(()))?;
    let live = harvests::live_uris(writer.catalog(), collection)?;
    for uri in live.into_iter().filter(|u| !named.contains(u)) {
        summary.gone += 1;
        if delete {
            summary.deleted += 1;
            progress.println(&format!("deleted: {uri}"));
            writer.problem(
                &uri,
                crate::model::ProblemClass::Deleted,
                "no longer published by the source (a complete harvest did not name it): tombstoned (--delete)",
            )?;
            writer.version(NewVersion::tombstone(uri, collection.to_string()))?;
        } else {
            writer.problem(
                &uri,
                crate::model::ProblemClass::Gone,
                "no longer published by the source (a complete harvest did not name it); kept (--delete tombstones it)",
            )?;
        }
    }
    Ok(())
}

/// `baseline` of the collections of a format that only reads.
pub(crate) fn baseline(
    ctx: &mut RunContext<'_, '_>,
    kind: SourceKind,
    s: &settings::Baseline,
    collections: Vec<Collection>,
) -> Result<(), Error> {
    let jobs = s.source.jobs.unwrap_or(settings::DEFAULT_JOBS);
    run(ctx, kind, collections, (false, jobs, s.delete))
}

/// `incremental`: what changed since each collection's sync point.
pub(crate) fn incremental(
    ctx: &mut RunContext<'_, '_>,
    kind: SourceKind,
    s: &settings::Incremental,
    collections: Vec<Collection>,
) -> Result<(), Error> {
    let jobs = s.source.jobs.unwrap_or(settings::DEFAULT_JOBS);
    run(ctx, kind, collections, (true, jobs, false))
}

/// `audit`: the state the source publishes now (a walk of everything, each resource's last
/// state), handed to `visit` in URI order.
pub(crate) fn expected_state(
    docs: &Documents<'_>,
    kind: SourceKind,
    collection: Collection,
    visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
) -> Result<Walked, SourceError> {
    let reg = registration(docs, kind).map_err(unusable(&collection.id))?;
    let base = url_of(&collection);
    let state = end_state(docs, reg, &base).map_err(unusable(&collection.id))?;
    let mut walked = Walked {
        anchored: true,
        basis: (state.walk.sync_point.as_ref())
            .map(|(_, b)| b.clone())
            .unwrap_or_default(),
        at: state.walk.sync_point.as_ref().map(|(t, _)| *t),
        warnings: state.walk.warnings,
        ..Walked::default()
    };
    let scope = Arc::new(docs.scope_for(&base));
    for (uri, live) in state.live {
        let Ok(url) = Url::parse(&uri) else { continue };
        walked.entries += 1;
        visit(Item::Listed(Listed {
            uri: url,
            declared: Declared {
                lastmod: live.time,
                length: live.length,
                digests: live.digests,
                encoding: None,
                categories: Vec::new(),
            },
            media_type: None,
            duplicates: Vec::new(),
            document: Arc::from(live.document.as_str()),
            line: 0,
            scope: Arc::clone(&scope),
        }))?;
    }
    Ok(walked)
}

/// `inspect`: the documents of a harvest of `collection`, nothing applied.
pub(crate) fn inspect(
    docs: &Documents<'_>,
    kind: SourceKind,
    collection: Collection,
) -> Result<Vec<DocumentReport>, SourceError> {
    let inspect = || -> Result<Vec<DocumentReport>, Error> {
        let reg = registration(docs, kind)?;
        let base = url_of(&collection);
        let walked = walk(docs, reg, &base, Start::default(), |_, _, _| Ok(()))?;
        let last = walked.documents.len().saturating_sub(1);
        Ok(walked
            .documents
            .iter()
            .enumerate()
            .map(|(i, (url, entries))| DocumentReport {
                channels: Vec::new(),
                url: url.clone(),
                kind: reg.name.to_string(),
                entries: *entries,
                warnings: match i == last {
                    true => walked.warnings.clone(),
                    false => Vec::new(),
                },
                syntax: "",
                at: None,
                completed: None,
                from: None,
                until: None,
                digests: Vec::new(),
                up: None,
            })
            .collect())
    };
    inspect().map_err(unusable(&collection.id))
}

/// The URL a collection of a format that only reads is named by.
fn url_of(c: &Collection) -> Url {
    Url::parse(&c.id).expect("the collection of a reader is named by a URL")
}

/// An engine error where a source error is asked for.
fn unusable(id: &str) -> impl Fn(Error) -> SourceError + '_ {
    move |e| match e {
        Error::Source(e) => e,
        e => SourceError::Unusable {
            url: id.to_string(),
            message: e.to_string(),
        },
    }
}

/// A resource's state at the end of a walk.
struct Live {
    time: Option<Timestamp>,
    length: Option<u64>,
    digests: Vec<crate::rs::digest::Digest>,
    document: String,
    /// A deletion, kept so that a later entry for it is not mistaken for the first.
    deleted: bool,
}

/// What a walk of everything leaves: each resource's last state (in URI order), and the walk.
struct EndState {
    live: BTreeMap<String, Live>,
    walk: Walk,
}

/// Walk everything the source publishes and keep each resource's last state (the expected
/// state of `audit`; deletions dropped).
fn end_state(docs: &Documents<'_>, reg: &Registration, base: &Url) -> Result<EndState, Error> {
    let mut live: BTreeMap<String, Live> = BTreeMap::new();
    let walk = walk(docs, reg, base, Start::default(), |url, entries, _| {
        for e in entries {
            if !docs.filter.admits(e.uri.as_str()) {
                continue;
            }
            let (length, digests) = match &e.bytes {
                Bytes::Inline { bytes, .. } => {
                    let c = Computed::of(bytes);
                    (
                        Some(c.length),
                        vec![crate::rs::digest::Digest::new(
                            crate::rs::digest::Algorithm::Sha256,
                            &c.sha256_hex,
                        )],
                    )
                }
                _ => (None, Vec::new()),
            };
            live.insert(
                e.uri.to_string(),
                Live {
                    time: e.time,
                    length,
                    digests,
                    document: url.to_string(),
                    deleted: e.bytes == Bytes::None,
                },
            );
        }
        Ok(())
    })?;
    live.retain(|_, l| !l.deleted);
    Ok(EndState { live, walk })
}

/// `--dry-run`: the same walk, nothing written; each entry's mark printed against the mirror's
/// state (`+` new, `*` changed, `=` the same, `-` deleted, `?` to fetch and compare).
pub(crate) fn dry_run(
    docs: &Documents<'_>,
    kind: SourceKind,
    collections: Vec<Collection>,
    catalog: Option<&Catalog>,
    incremental: bool,
    summary: &mut Summary,
) -> Result<(), Error> {
    let reg = registration(docs, kind)?;
    let collections = match catalog {
        Some(c) if incremental => collections_of(docs, c, None, kind, collections)?,
        _ => collections,
    };
    for collection in collections {
        let base = url_of(&collection);
        let (since, resume) = match catalog {
            Some(c) if incremental => (
                c.sync_point(&collection.id)?.and_then(|sp| sp.at),
                harvests::state(c, &collection.id)?,
            ),
            _ => (None, None),
        };
        let start = Start {
            since,
            resume: resume.as_deref(),
        };
        let walked = walk(docs, reg, &base, start, |_, entries, _| {
            for e in entries {
                if !docs.filter.admits(e.uri.as_str()) {
                    summary.excluded += 1;
                    continue;
                }
                summary.listed += 1;
                let held = match catalog {
                    Some(c) => c.current_state(e.uri.as_str())?.filter(|s| !s.deleted),
                    None => None,
                };
                let uri = e.uri.as_str();
                match (&e.bytes, held) {
                    (Bytes::None, Some(_)) => {
                        summary.deleted += 1;
                        plan!("- {uri}");
                    }
                    (Bytes::None, None) => summary.unknown_deletes += 1,
                    (_, None) => {
                        summary.created += 1;
                        plan!("+ {uri}");
                    }
                    (Bytes::Inline { bytes, .. }, Some(h)) => {
                        if h.sha256_hex.as_deref() == Some(Computed::of(bytes).sha256_hex.as_str())
                        {
                            summary.unchanged += 1;
                        } else {
                            summary.updated += 1;
                            plan!("* {uri}");
                        }
                    }
                    (Bytes::At(_), Some(_)) => {
                        summary.updated += 1;
                        plan!("? {uri} (will fetch and compare bytes)");
                    }
                }
            }
            Ok(())
        })?;
        summary.warnings.extend(walked.warnings);
    }
    Ok(())
}
