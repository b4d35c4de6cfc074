//! `incremental` from a Change Dump (ResourceSync 1.1 §6, §10.2 step 7): packages selected by
//! their `from`/`until` like Change Lists (the same gap rule), processed in order, each
//! manifest's entries in order — `deleted` entries have no bitstream, several bitstreams for
//! one URI become several versions in order. A package is staged whole before any of its
//! changes is recorded; one that is refused (or fails) stops the run there, so a later package
//! is never applied before an earlier one, and the sync point does not pass it.

use crate::engine::apply::{self, Writer};
use crate::engine::changes::{self, Changes};
use crate::engine::context::RunContext;
use crate::engine::documents::Documents;
use crate::engine::plan::Declared;
use crate::error::{Error, SourceError};
use crate::model::{ChangeOutcome, ProblemClass};
use crate::net::one::fetch_to_staging;
use crate::net::{Expected, Http};
use crate::report::Problem;
use crate::report::Summary;
use crate::rs::document::{Capability, Change, Root};
use crate::rs::dump::{DumpLimits, ManifestItem, Package, StageError, StagedBitstream};
use crate::store::catalog::{write, DocumentRecord, NewVersion, SyncPoint};
use crate::store::{Catalog, ObjectStore};
use jiff::Timestamp;
use std::path::Path;
use url::Url;

/// One manifest entry to apply: (entry index, event time, its staged bitstream, none for a
/// deletion, or why it failed).
type Step = (
    usize,
    Option<Timestamp>,
    Result<Option<StagedBitstream>, String>,
);

#[derive(Clone)]
struct PackageRef {
    url: Url,
    from: Option<Timestamp>,
    until: Option<Timestamp>,
    expected: Expected,
}

/// The packages of the Change Dump at `dump_url` still to apply to `collection` from `since`,
/// in order (they must reach back to `since` and abut, as Change Lists must), and the
/// documents read to find them.
fn packages(
    docs: &Documents<'_>,
    catalog: &Catalog,
    collection: &str,
    dump_url: &Url,
    since: Timestamp,
) -> Result<(Vec<PackageRef>, Vec<DocumentRecord>), Error> {
    // The packages, in forward order.
    let mut refs = Vec::new();
    let mut documents = Vec::new();
    let mut pending = vec![dump_url.clone()];
    while let Some(url) = pending.pop() {
        let mut doc = docs.fetch(&url, &docs.scope_for(&url))?;
        if doc.header().capability() != Some(Capability::ChangeDump) {
            return Err(SourceError::Unusable {
                url: url.to_string(),
                message: "expected a Change Dump".into(),
            }
            .into());
        }
        let index = doc.header().root == Root::SitemapIndex;
        let scope = docs.scope_for(&doc.url);
        let mut count = 0;
        while let Some(e) = doc.reader.next_entry().map_err(SourceError::from)? {
            count += 1;
            if let Err(reason) = scope.check(&e.loc) {
                return Err(SourceError::Unusable {
                    url: e.loc.to_string(),
                    message: format!("refused: {reason}"),
                }
                .into());
            }
            if index {
                pending.push(e.loc);
            } else {
                refs.push(PackageRef {
                    url: e.loc,
                    from: e.md.from,
                    until: e.md.until,
                    expected: Expected {
                        length: e.md.length,
                        digests: e.md.hash,
                        media_type: None,
                    },
                });
            }
        }
        documents.push(doc.record(count));
    }
    refs.sort_by_key(|r| r.from);
    // §10.2 step 2, as for Change Lists: the packages must reach back to `since` and abut.
    let relevant: Vec<&PackageRef> = refs
        .iter()
        .filter(|r| r.until.is_none_or(|u| u >= since))
        .collect();
    if let Some(from) = relevant.first().and_then(|r| r.from) {
        if from > since {
            return Err(gap(collection, since, from));
        }
    }
    for pair in relevant.windows(2) {
        if let (Some(u), Some(f)) = (pair[0].until, pair[1].from) {
            if f > u {
                return Err(gap(collection, u, f));
            }
        }
    }

    // Closed packages processed by an earlier run are not fetched again.
    let relevant = relevant
        .into_iter()
        .filter(|r| {
            r.until.is_none()
                || !catalog
                    .change_list_processed(r.url.as_str())
                    .unwrap_or(false)
        })
        .cloned()
        .collect();
    Ok((relevant, documents))
}

/// `incremental --dry-run` of a Change Dump: the packages a run would fetch, in order; what
/// each changes is in its manifest, known once it is fetched (`?`).
pub(crate) fn plan(
    docs: &Documents<'_>,
    catalog: &Catalog,
    collection: &str,
    dump_url: &Url,
    since: Timestamp,
    summary: &mut Summary,
) -> Result<(), Error> {
    let (packages, _) = packages(docs, catalog, collection, dump_url, since)?;
    for r in packages {
        summary.updated += 1;
        let range = match (r.from, r.until) {
            (Some(f), Some(u)) => format!(" from {f} until {u}"),
            (Some(f), None) => format!(" from {f}"),
            _ => String::new(),
        };
        plan!(
            "? {} (a Change Dump package{range}: its changes are read when it is fetched)",
            r.url
        );
    }
    Ok(())
}

/// Apply the Change Dump at `dump_url` to `collection` from `since`: each package staged
/// whole, then its changes recorded in manifest order; a package refused, or one with an
/// entry that failed, is the last one read.
pub(crate) fn apply(
    ctx: &mut RunContext<'_, '_>,
    collection: &str,
    dump_url: &Url,
    since: Timestamp,
) -> Result<(), Error> {
    let docs = ctx.docs;
    let (relevant, documents) = packages(docs, ctx.catalog, collection, dump_url, since)?;
    let mut writer = Writer::new(&mut *ctx.catalog, ctx.objects, ctx.run_id);
    // The mirror's states are asked one resource at a time (a mirror of millions is not read
    // whole for a dump of a few changes).
    let changes = Changes::new(
        &mut writer,
        (collection, docs.filter),
        None,
        ctx.staging,
        &mut *ctx.summary,
        ctx.progress,
    );
    let mut run = DumpRun {
        changes,
        objects: ctx.objects,
        since,
        until_max: None,
        stopped_at: None,
        processed: Vec::new(),
    };
    for r in &relevant {
        let (steps, staged) = stage_package((ctx.http, docs, ctx.staging), r, since);
        let pkg = match staged {
            Ok(p) => {
                crate::store::kill::point("change-dump.package-staged");
                p
            }
            Err(reason) => {
                run.refuse_package(r, &steps, reason)?;
                break;
            }
        };
        if !run.apply_package(r, &pkg, steps)? {
            break;
        }
    }
    let (sync_point, processed) = run.finish(collection)?;
    ctx.summary.sync_point = sync_point.at.map(|t| t.to_string());
    ctx.summary.anchored = true;
    let (source_id, run_id) = (ctx.source_id, ctx.run_id);
    writer.flush(|tx| {
        for d in &documents {
            write::document(tx, source_id, run_id, d)?;
        }
        for (url, from, until) in &processed {
            write::processed_change_list(tx, run_id, collection, url, *from, *until)?;
        }
        write::sync_point(tx, source_id, run_id, &sync_point)
    })?;
    Ok(())
}

/// Download package `r`, open it, and stage every bitstream it brings after `since`, in
/// manifest order: the entries staged so far (kept when the package is refused part way, so
/// their files can be removed), and the package, or why it is refused.
fn stage_package(
    (http, docs, staging): (&Http, &Documents<'_>, &Path),
    r: &PackageRef,
    since: Timestamp,
) -> (Vec<Step>, Result<Package, String>) {
    let opened = fetch_to_staging(http, &r.url, &docs.scope_for(&r.url), staging, &r.expected)
        .map_err(|e| e.to_string())
        .and_then(|staged| {
            let opened = Package::open(&staged.file, &r.url, DumpLimits::default(), docs.options);
            let _ = std::fs::remove_file(&staged.file).ok();
            opened.map_err(|e| e.to_string())
        });
    let mut steps: Vec<Step> = Vec::new();
    let outcome = opened.and_then(|mut pkg| {
        let mut previous = r.from;
        for i in 0..pkg.entries().len() {
            let item = &pkg.entries()[i];
            let t = item.event_time().or(previous);
            previous = t;
            if t.is_some_and(|t| t < since) {
                continue;
            }
            match pkg.stage(i, staging) {
                Ok(sb) => steps.push((i, t, Ok(sb))),
                Err(StageError::Entry(e)) => steps.push((i, t, Err(e.to_string()))),
                Err(StageError::Package(e)) => return Err(e.to_string()),
            }
        }
        Ok(pkg)
    });
    (steps, outcome)
}

/// A Change Dump run as its packages are applied: the engine's changes, and how far the
/// sync point may go.
struct DumpRun<'x, 'w> {
    changes: Changes<'x, 'w>,
    objects: &'x ObjectStore,
    since: Timestamp,
    /// The latest `until` of a package processed whole.
    until_max: Option<Timestamp>,
    /// Where a refused package starts.
    stopped_at: Option<Timestamp>,
    /// Closed packages processed whole: (URL, from, until).
    processed: Vec<(String, Option<Timestamp>, Timestamp)>,
}

/// A manifest entry as the engine applies it: with its package and its event time.
struct Entry<'a> {
    r: &'a PackageRef,
    item: &'a ManifestItem,
    /// The entry's time, else the one before it in the manifest, else the package's `from`.
    t: Option<Timestamp>,
    since: Timestamp,
}

impl changes::Item for Entry<'_> {
    fn uri(&self) -> &Url {
        &self.item.loc
    }
    fn stated(&self) -> Option<Change> {
        Some(self.item.change.unwrap_or(Change::Updated))
    }
    fn event_time(&self) -> Option<Timestamp> {
        self.t
    }
    fn lastmod(&self) -> Option<Timestamp> {
        self.item.lastmod
    }
    fn document(&self) -> &str {
        self.r.url.as_str()
    }
    fn applied_time(&self) -> Option<Timestamp> {
        self.t
    }
    fn failed_time(&self) -> Option<Timestamp> {
        Some(self.t.unwrap_or(self.since))
    }
    /// `f`: the entry's bitstream, which arrived in the package.
    fn version(&self, collection: &str, change: Change, f: &apply::Fetched) -> NewVersion {
        let declared = Declared {
            lastmod: self.item.lastmod,
            length: self.item.length,
            digests: self.item.hash.clone(),
            encoding: self.item.encoding.clone(),
            categories: Vec::new(),
        };
        let media_type = self.item.media_type.as_deref();
        NewVersion {
            event_time: self.t,
            ..f.version(&self.item.loc, collection, change, &declared, media_type)
        }
    }
    fn tombstone(&self, collection: &str) -> NewVersion {
        NewVersion {
            event_time: self.t,
            lastmod: self.item.lastmod,
            fetched_from: Some(self.r.url.to_string()),
            ..NewVersion::tombstone(self.item.loc.to_string(), collection.to_string())
        }
    }
}

impl DumpRun<'_, '_> {
    /// A package that could not be fetched, opened or staged: its staged bitstreams removed,
    /// nothing from it applied, and the sync point held where it starts.
    fn refuse_package(
        &mut self,
        r: &PackageRef,
        steps: &[Step],
        reason: String,
    ) -> Result<(), Error> {
        for (_, _, sb) in steps {
            if let Ok(Some(sb)) = sb {
                let _ = std::fs::remove_file(&sb.path);
            }
        }
        let reason = format!(
            "package {} refused, nothing from it applied: {reason}",
            r.url
        );
        self.changes
            .progress()
            .println(&format!("failed: {reason}"));
        self.changes.writer().problem(
            r.url.as_str(),
            crate::model::ProblemClass::Failed,
            &reason,
        )?;
        let summary = self.changes.summary();
        summary.failed += 1;
        summary.problems.push(Problem {
            uri: r.url.to_string(),
            class: crate::model::ProblemClass::Failed,
            reason,
        });
        self.stopped_at = Some(r.from.unwrap_or(self.since).max(self.since));
        Ok(())
    }

    /// The changes of package `r`, staged whole, in manifest order; false when an entry
    /// failed (the run stops after this package, which is not marked processed).
    fn apply_package(
        &mut self,
        r: &PackageRef,
        pkg: &Package,
        steps: Vec<Step>,
    ) -> Result<bool, Error> {
        let mut package_ok = true;
        for (i, t, sb) in steps {
            let entry = Entry {
                r,
                item: &pkg.entries()[i],
                t,
                since: self.since,
            };
            match sb {
                Err(reason) => {
                    package_ok = false;
                    self.changes.failed(&entry, ProblemClass::Failed, reason)?;
                }
                Ok(None) => self.deletion(&entry)?,
                Ok(Some(sb)) => self.bitstream(&entry, sb)?,
            }
        }
        if package_ok {
            if let Some(u) = r.until {
                self.until_max = self.until_max.max(Some(u));
                self.processed.push((r.url.to_string(), r.from, u));
            }
        }
        Ok(package_ok)
    }

    /// A `deleted` entry: a tombstone for a resource the mirror holds, else an event.
    fn deletion(&mut self, entry: &Entry<'_>) -> Result<(), Error> {
        if self.changes.live(entry)? {
            self.changes.tombstone(entry)
        } else if self.changes.heard_of(entry)? {
            self.changes
                .known(entry, Change::Deleted, ChangeOutcome::Unchanged)
        } else {
            self.changes
                .known(entry, Change::Deleted, ChangeOutcome::UnknownDelete)
        }
    }

    /// A staged bitstream: `decide` says whether it is a new version of its resource; if so
    /// it is stored, else its file is removed.
    fn bitstream(&mut self, entry: &Entry<'_>, sb: StagedBitstream) -> Result<(), Error> {
        self.changes.summary().bytes += sb.computed.length;
        let objects = self.objects;
        let stored =
            self.changes
                .arrived(entry, &sb.computed.sha256_hex, |collection, change| {
                    objects
                        .ingest(&sb.path, &sb.computed.sha256_hex)
                        .map_err(|e| crate::store::StoreError::io("storing", &sb.path, e))?;
                    crate::store::kill::point("change-dump.object-stored");
                    let arrived = apply::Fetched {
                        computed: sb.computed.clone(),
                        final_url: entry.r.url.clone(),
                        etag: None,
                        last_modified: None,
                        media_type: None,
                        content_encoding: None,
                        via: crate::model::Via::Dump,
                    };
                    Ok(changes::Item::version(entry, collection, change, &arrived))
                })?;
        if !stored {
            let _ = std::fs::remove_file(&sb.path);
        }
        Ok(())
    }

    /// The new sync point: the latest `until` processed or change applied, never past the
    /// earliest failed change or refused package, never backwards; and the packages processed
    /// whole.
    #[allow(clippy::type_complexity)]
    fn finish(
        self,
        collection: &str,
    ) -> Result<(SyncPoint, Vec<(String, Option<Timestamp>, Timestamp)>), Error> {
        let since = self.since;
        let ends = self.changes.ends()?;
        let mut at = since
            .max(self.until_max.unwrap_or(since))
            .max(ends.applied_max.unwrap_or(since));
        let mut basis =
            "until of the last Change Dump package processed, or the latest change applied"
                .to_string();
        let stopped = crate::engine::changes::earliest(self.stopped_at, ends.failed_min);
        if let Some(f) = stopped {
            if f < at {
                at = f.max(since);
                basis = "time of the earliest failed change (it is retried next run)".into();
            }
        }
        let sp = SyncPoint {
            collection: collection.to_string(),
            at: Some(at),
            anchored: true,
            basis,
        };
        Ok((sp, self.processed))
    }
}

fn gap(collection: &str, from: Timestamp, to: Timestamp) -> Error {
    SourceError::Gap {
        collection: collection.to_string(),
        from,
        to,
        covering: "Change Dump package",
    }
    .into()
}
