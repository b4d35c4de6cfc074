//! `incremental` from a Change Dump (ResourceSync 1.1 §6, §10.2 step 7): packages selected by
//! their `from`/`until` like Change Lists (the same gap rule), processed in order, each
//! manifest's entries in order — `deleted` entries have no bitstream, several bitstreams for
//! one URI become several versions in order. A package is staged whole before any of its
//! changes is recorded; one that is refused (or fails) stops the run there, so a later package
//! is never applied before an earlier one, and the sync point does not pass it.

use crate::error::{Error, SourceError};
use crate::net::fetch::fetch_to_staging;
use crate::net::{Expected, Http};
use crate::progress::Progress;
use crate::report::Problem;
use crate::report::Summary;
use crate::rs::digest::declared_hash;
use crate::rs::document::{Capability, Change, Root};
use crate::rs::dump::{DumpLimits, ManifestItem, Package, StageError, StagedBitstream};
use crate::store::catalog::{write, ChangeEventRecord, DocumentRecord, NewVersion, SyncPoint};
use crate::store::{Catalog, ObjectStore};
use crate::sync::apply::Writer;
use crate::sync::context::RunContext;
use crate::sync::decide::{decide, Basis, Held};
use crate::sync::documents::Documents;
use jiff::Timestamp;
use std::collections::HashMap;
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
        println!(
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
    let mut run = DumpRun {
        writer: Writer::new(&mut *ctx.catalog, ctx.objects, ctx.run_id),
        objects: ctx.objects,
        collection,
        since,
        summary: &mut *ctx.summary,
        progress: ctx.progress,
        current: HashMap::new(),
        applied_max: None,
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
    run.finish((ctx.source_id, ctx.run_id), &documents)
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

/// A Change Dump run as its packages are applied: the writer, what this run did to each
/// resource, and how far the sync point may go.
struct DumpRun<'x, 'w> {
    writer: Writer<'w>,
    objects: &'x ObjectStore,
    collection: &'x str,
    since: Timestamp,
    summary: &'x mut Summary,
    progress: &'x Progress,
    /// What this run has applied so far, by URI (None: deleted): the catalog holds it only
    /// once the writer has flushed; for the rest it is asked one resource at a time (a mirror
    /// of millions is not read whole for a dump of a few changes).
    current: HashMap<String, Option<Live>>,
    /// The latest event time applied.
    applied_max: Option<Timestamp>,
    /// The latest `until` of a package processed whole.
    until_max: Option<Timestamp>,
    /// The earliest change that failed, or where a refused package starts.
    stopped_at: Option<Timestamp>,
    /// Closed packages processed whole: (URL, from, until).
    processed: Vec<(String, Option<Timestamp>, Timestamp)>,
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
        self.progress.println(&format!("failed: {reason}"));
        self.writer.problem(r.url.as_str(), "failed", &reason)?;
        self.summary.failed += 1;
        self.summary.problems.push(Problem {
            uri: r.url.to_string(),
            class: "failed",
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
            let item = &pkg.entries()[i];
            match sb {
                Err(reason) => {
                    package_ok = false;
                    self.failed_entry(r, item, t, reason)?;
                }
                Ok(None) => self.deletion(r, item, t)?,
                Ok(Some(sb)) => self.bitstream(r, item, t, sb)?,
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

    /// An entry whose bitstream could not be staged: a problem, and the sync point held
    /// before it.
    fn failed_entry(
        &mut self,
        r: &PackageRef,
        item: &ManifestItem,
        t: Option<Timestamp>,
        reason: String,
    ) -> Result<(), Error> {
        let uri = item.loc.to_string();
        let at = t.unwrap_or(self.since);
        self.stopped_at = Some(self.stopped_at.map_or(at, |s| s.min(at)));
        self.summary.failed += 1;
        self.progress.println(&format!("failed: {uri}: {reason}"));
        self.writer.problem(&uri, "failed", &reason)?;
        let event = self.event(r, item, t, "failed");
        self.writer.event(event)?;
        self.summary.problems.push(Problem {
            uri,
            class: "failed",
            reason,
        });
        Ok(())
    }

    /// A `deleted` entry: a tombstone for a resource the mirror holds, else an event.
    fn deletion(
        &mut self,
        r: &PackageRef,
        item: &ManifestItem,
        t: Option<Timestamp>,
    ) -> Result<(), Error> {
        self.applied_max = self.applied_max.max(t);
        let uri = item.loc.to_string();
        match known(&self.current, &self.writer, &uri)? {
            Some(Some(_)) => {
                self.summary.deleted += 1;
                self.current.insert(uri.clone(), None);
                let event = self.event(r, item, t, "applied");
                self.writer.version_for_event(
                    NewVersion {
                        uri,
                        collection: self.collection.to_string(),
                        change: "deleted",
                        event_time: t,
                        lastmod: item.lastmod,
                        arrived_via: "tombstone",
                        fetched_from: Some(r.url.to_string()),
                        ..Default::default()
                    },
                    event,
                )?;
            }
            Some(None) => {
                let event = self.event(r, item, t, "unchanged");
                self.writer.event(event)?;
            }
            None => {
                self.summary.unknown_deletes += 1;
                let event = self.event(r, item, t, "unknown-delete");
                self.writer.event(event)?;
            }
        }
        Ok(())
    }

    /// A staged bitstream: `decide` says whether it is a new version of its resource; if so
    /// it is stored, else its file is removed.
    fn bitstream(
        &mut self,
        r: &PackageRef,
        item: &ManifestItem,
        t: Option<Timestamp>,
        sb: StagedBitstream,
    ) -> Result<(), Error> {
        self.applied_max = self.applied_max.max(t);
        self.summary.bytes += sb.computed.length;
        let uri = item.loc.to_string();
        let had = known(&self.current, &self.writer, &uri)?.flatten();
        let held = had.as_ref().map(|h| Held {
            sha256: h.sha256.as_deref(),
            lastmod: h.lastmod,
        });
        let basis = Basis::Change {
            lastmod: item.lastmod,
        };
        let decision = decide(held, &sb.computed.sha256_hex, basis);
        decision.count(self.summary);
        let Some(kind) = decision.change() else {
            let _ = std::fs::remove_file(&sb.path);
            let event = self.event(r, item, t, "unchanged");
            self.writer.event(event)?;
            return Ok(());
        };
        self.objects
            .ingest(&sb.path, &sb.computed.sha256_hex)
            .map_err(|e| crate::store::StoreError::io("storing", &sb.path, e))?;
        crate::store::kill::point("change-dump.object-stored");
        self.current.insert(
            uri,
            Some(Live {
                sha256: Some(sb.computed.sha256_hex.clone()),
                lastmod: item.lastmod,
            }),
        );
        let version = dump_version(self.collection, r, item, t, kind, &sb);
        let event = self.event(r, item, t, "applied");
        self.writer.version_for_event(version, event)?;
        Ok(())
    }

    /// The change event of `item` in package `r`.
    fn event(
        &self,
        r: &PackageRef,
        item: &ManifestItem,
        t: Option<Timestamp>,
        outcome: &'static str,
    ) -> ChangeEventRecord {
        ChangeEventRecord {
            collection: self.collection.to_string(),
            uri: item.loc.to_string(),
            change: item.change.unwrap_or(Change::Updated).name(),
            event_time: t,
            document_url: r.url.to_string(),
            outcome,
        }
    }

    /// The new sync point: the latest `until` processed or change applied, never past the
    /// earliest failed change, never backwards.
    fn sync_point(&self) -> (Timestamp, String) {
        let since = self.since;
        let mut at = since
            .max(self.until_max.unwrap_or(since))
            .max(self.applied_max.unwrap_or(since));
        let mut basis =
            "until of the last Change Dump package processed, or the latest change applied"
                .to_string();
        if let Some(f) = self.stopped_at {
            if f < at {
                at = f.max(since);
                basis = "time of the earliest failed change (it is retried next run)".into();
            }
        }
        (at, basis)
    }

    /// The last transaction: the documents read, the packages processed and the sync point,
    /// with whatever versions are still pending.
    fn finish(
        mut self,
        (source_id, run_id): (i64, i64),
        documents: &[DocumentRecord],
    ) -> Result<(), Error> {
        let (at, basis) = self.sync_point();
        self.summary.sync_point = Some(at.to_string());
        self.summary.anchored = true;
        let collection = self.collection;
        let sp = SyncPoint {
            collection: collection.to_string(),
            at: Some(at),
            anchored: true,
            basis,
        };
        let processed = &self.processed;
        self.writer.flush(|tx| {
            for d in documents {
                write::document(tx, source_id, run_id, d)?;
            }
            for (url, from, until) in processed {
                write::processed_change_list(tx, run_id, collection, url, *from, *until)?;
            }
            write::sync_point(tx, source_id, run_id, &sp)
        })?;
        Ok(())
    }
}

/// The version a staged bitstream of `item` (package `r`) becomes.
fn dump_version(
    collection: &str,
    r: &PackageRef,
    item: &ManifestItem,
    t: Option<Timestamp>,
    change: &'static str,
    sb: &StagedBitstream,
) -> NewVersion {
    NewVersion {
        uri: item.loc.to_string(),
        collection: collection.to_string(),
        change,
        event_time: t,
        lastmod: item.lastmod,
        length_bytes: Some(sb.computed.length),
        declared_length_bytes: item.length,
        declared_hash: declared_hash(&item.hash),
        md5_hex: Some(sb.computed.md5_hex.clone()),
        sha1_hex: sb.computed.sha1_hex.clone(),
        sha256_hex: Some(sb.computed.sha256_hex.clone()),
        media_type: item.media_type.clone(),
        arrived_via: "dump",
        fetched_from: Some(r.url.to_string()),
        etag: None,
        last_modified: None,
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

/// Whether the mirror holds `uri` (`None`: never heard of), and if so the SHA-256 of its live
/// state (`Some(None)`: deleted): this run's doing first, else the catalog's.
fn known(
    current: &HashMap<String, Option<Live>>,
    writer: &Writer<'_>,
    uri: &str,
) -> Result<Option<Option<Live>>, crate::store::StoreError> {
    if let Some(now) = current.get(uri) {
        return Ok(Some(now.clone()));
    }
    Ok(writer.catalog().current_state(uri)?.map(|c| {
        (!c.deleted).then_some(Live {
            sha256: c.sha256_hex,
            lastmod: c.lastmod,
        })
    }))
}

/// A resource's live state, as far as [`decide`] needs it.
#[derive(Debug, Clone)]
struct Live {
    sha256: Option<String>,
    lastmod: Option<Timestamp>,
}
