//! `baseline` of ResourceSync collections (its [`Format`](crate::sync::formats::Format) side):
//! read every Resource List (or Resource Dump), plan against the catalog, fetch and verify what
//! is new or changed, record versions, report (or tombstone, with `--delete`) what is gone, and
//! record the sync point (ResourceSync 1.1 §10.1).
//!
//! Every snapshot is read completely before anything is fetched, so a malformed or unreachable
//! list stops the run with nothing applied (exit 4). The list's entries go to a [`Listing`] on
//! disk as they are read, and the plan is a merge of it with the catalog in URI order
//! (`sync::listing`): memory does not grow with the list or the mirror. Resources that fail
//! are collected; the run finishes the rest and exits 3. The sync point is recorded only when
//! every listed resource is in the mirror.

use crate::cli::Via;
use crate::error::{Error, SourceError};
use crate::net::{Expected, Http};
use crate::progress::Progress;
use crate::report::{problem_line, Problem, Summary};
use crate::rs::digest::declared_hash;
use crate::rs::document::Capability;
use crate::rs::sitemap::ReadOptions;
use crate::settings;
use crate::store::catalog::{write, NewVersion, SyncPoint};
use crate::store::{Catalog, ObjectStore, StoreError};
use crate::sync::apply::{self, Job, JobResult, Writer};
use crate::sync::context::RunContext;
use crate::sync::decide::{decide, Basis, Held};
use crate::sync::discover::Collection;
use crate::sync::documents::Documents;
use crate::sync::feed::{self, DESCRIBES_BASIS};
use crate::sync::formats::resourcesync::dump_source::{DumpLocation, DumpSnapshot, ALPHA_DUMP_REL};
use crate::sync::formats::resourcesync::snapshot::{self, Snapshot};
use crate::sync::listing::{Counts, InFlight, Listing, Todo};
use crate::sync::plan::{self, Action, Listed};
use std::path::Path;

/// One collection's snapshot and what to do with it.
struct Planned {
    collection: String,
    /// The snapshot's documents, anchor and problems; its entries and their plan are in
    /// `listing`.
    snapshot: Snapshot,
    listing: Listing,
    counts: Counts,
    /// The packages holding the bytes, when the snapshot came from a Resource Dump.
    dump: Option<DumpSnapshot>,
    describes: Option<String>,
}

/// What a plan needs besides the documents: where dump packages are staged, how to read them.
struct PlanInputs<'a> {
    http: &'a Http,
    staging: &'a Path,
    via: Via,
    options: ReadOptions,
    /// The store, to see that a resource kept as it is still has its bytes.
    objects: ObjectStore,
}

/// `baseline` of the ResourceSync collections discovery found, in the run `ctx` records.
pub fn baseline(
    ctx: &mut RunContext<'_, '_>,
    s: &settings::Baseline,
    collections: Vec<Collection>,
) -> Result<(), Error> {
    let inputs = PlanInputs {
        http: ctx.http,
        staging: ctx.staging,
        via: s.via,
        options: ctx.docs.options,
        objects: ctx.objects.clone(),
    };
    let planned = plan_all(ctx.docs, &inputs, collections, Some(&*ctx.catalog))?;
    let mut writer = Writer::new(ctx.catalog, ctx.objects, ctx.run_id);
    for p in planned {
        apply_collection(
            ctx.http,
            ctx.staging,
            ctx.objects,
            &mut writer,
            s,
            p,
            ctx.source_id,
            ctx.run_id,
            ctx.summary,
            ctx.progress,
        )?;
    }
    Ok(())
}

/// `baseline --dry-run` of the ResourceSync collections: every list read and planned (dump
/// packages staged in a temporary folder), the plan printed; `Ok(true)` when every list was
/// read whole.
pub fn plan(
    docs: &Documents<'_>,
    s: &settings::Baseline,
    collections: Vec<Collection>,
    catalog: Option<&Catalog>,
    summary: &mut Summary,
) -> Result<bool, Error> {
    let dry_staging = std::env::temp_dir().join(format!("rsmirror-dry-run-{}", std::process::id()));
    std::fs::create_dir_all(&dry_staging)
        .map_err(|e| StoreError::io("creating", &dry_staging, e))?;
    let inputs = PlanInputs {
        http: docs.http,
        staging: &dry_staging,
        via: s.via,
        options: docs.options,
        objects: ObjectStore::at(&s.mirror),
    };
    let printed = plan_all(docs, &inputs, collections, catalog).and_then(|planned| {
        print_plan(&planned, s, summary)?;
        Ok(planned.iter().all(|p| p.snapshot.complete()))
    });
    let _ = std::fs::remove_dir_all(&dry_staging);
    printed
}

/// Read every collection's snapshot and plan it; any unreadable top-level list is fatal.
fn plan_all(
    docs: &Documents<'_>,
    inputs: &PlanInputs<'_>,
    collections: Vec<Collection>,
    catalog: Option<&Catalog>,
) -> Result<Vec<Planned>, Error> {
    let mut planned = Vec::new();
    for mut collection in collections {
        let mut listing = Listing::create(inputs.staging)?;
        let (snapshot, dump) = match (inputs.via, dump_location(&mut collection)) {
            (Via::Dump, None) => {
                return Err(SourceError::Unusable {
                    url: collection.id.clone(),
                    message: "--via dump: the source offers no Resource Dump".into(),
                }
                .into())
            }
            (Via::Dump, Some(location)) => {
                let mut d = DumpSnapshot::read(
                    docs,
                    inputs.http,
                    inputs.staging,
                    location,
                    inputs.options,
                )?;
                (std::mem::take(&mut d.snapshot), Some(d))
            }
            (Via::Auto, Some(location)) => {
                let dump_url = location.url().to_string();
                let read =
                    DumpSnapshot::read(docs, inputs.http, inputs.staging, location, inputs.options);
                // `auto` prefers the dump, but not a dump it cannot use in full (a package in
                // a format it does not read, a package that fails its checks): the Resource
                // List, when the source offers one, lists everything, a request per resource.
                let unusable = match &read {
                    Ok(d) if d.snapshot.complete() => None,
                    Ok(d) => Some(d.snapshot.failed_parts.join("; ")),
                    Err(e) => Some(e.to_string()),
                };
                let has_list = collection.opened.is_some()
                    || collection.url_of(&Capability::ResourceList).is_some();
                match unusable {
                    Some(why) if has_list => {
                        let mut snapshot = resource_list(docs, &mut collection, &mut listing)?;
                        snapshot.warnings.push(format!(
                            "{dump_url}: the Resource Dump cannot be used ({why}); the resources \
                             are taken from the Resource List instead (--via auto)"
                        ));
                        (snapshot, None)
                    }
                    _ => {
                        let mut d = read?;
                        (std::mem::take(&mut d.snapshot), Some(d))
                    }
                }
            }
            (Via::List | Via::Auto, _) => {
                (resource_list(docs, &mut collection, &mut listing)?, None)
            }
        };
        let mut snapshot = snapshot;
        // A dump's entries were read into memory with its packages (deduplicated there): in
        // order, so that an entry's place in the listing is its index in the dump.
        for l in std::mem::take(&mut snapshot.listed) {
            listing.push(l)?;
        }
        // The source and the catalog agree on a resource kept, but its bytes must be there
        // too: a missing or truncated object is fetched again (a cheap stat, no hashing;
        // `audit` finds the rest).
        let counts = listing.plan(catalog, &collection.id, &inputs.objects)?;
        planned.push(Planned {
            describes: collection.describes.clone(),
            collection: collection.id,
            snapshot,
            listing,
            counts,
            dump,
        });
    }
    Ok(planned)
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
    const SHOWN: usize = 100;
    for uri in listing.first_gone(SHOWN)? {
        progress.println(&format!("{what}: {uri}"));
    }
    if gone > SHOWN as u64 {
        progress.println(&format!(
            "{what}: ... and {} more (all of them in the run's problems: run_problems)",
            gone - SHOWN as u64
        ));
    }
    Ok(())
}

/// Read the collection's Resource List (the one discovery opened, else the one its
/// Capability List names).
fn resource_list(
    docs: &Documents<'_>,
    collection: &mut Collection,
    listing: &mut Listing,
) -> Result<Snapshot, Error> {
    let top = match collection.opened.take() {
        Some(doc) => doc,
        None => {
            let url = collection.resource_list_url()?;
            docs.fetch(url, &docs.scope_for(url))?
        }
    };
    snapshot::read(docs, top, listing)
}

/// Where a collection's Resource Dump is, if it offers one: the Capability List's
/// `resourcedump`, a dump given directly, or a 2012 Sitemap's dump link.
fn dump_location(c: &mut Collection) -> Option<DumpLocation> {
    if let Some(url) = c.url_of(&Capability::ResourceDump) {
        if c.opened
            .as_ref()
            .is_none_or(|d| d.header().capability() != Some(Capability::ResourceDump))
        {
            return Some(DumpLocation::Document(url.clone()));
        }
        return c.opened.take().map(|d| DumpLocation::Opened(Box::new(d)));
    }
    let doc = c.opened.as_ref()?;
    let link = doc
        .header()
        .links
        .iter()
        .find(|l| l.has_rel(ALPHA_DUMP_REL))?;
    Some(DumpLocation::AlphaPackage(link.href.clone()))
}

fn print_plan(
    planned: &[Planned],
    s: &settings::Baseline,
    summary: &mut Summary,
) -> Result<(), Error> {
    for p in planned {
        summary.listed += p.counts.listed;
        p.listing
            .each_planned(|uri, a| plan::print_mark(uri, a, s.output.verbose > 0, summary))?;
        for r in &p.snapshot.refused {
            summary.refused += 1;
            println!("! {} refused: {}", r.uri, r.reason);
        }
        for f in &p.snapshot.failed_parts {
            println!("! {f}");
        }
        let what = if s.delete && p.snapshot.complete() {
            "would be deleted"
        } else {
            "gone from the source"
        };
        p.listing.each_gone(|g| {
            summary.gone += 1;
            println!("- {g} ({what})");
            Ok::<(), StoreError>(())
        })?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn apply_collection(
    http: &Http,
    staging: &Path,
    objects: &ObjectStore,
    writer: &mut Writer<'_>,
    s: &settings::Baseline,
    mut p: Planned,
    source_id: i64,
    run_id: i64,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let dump = p.dump.take();
    let snap = &p.snapshot;
    let counts = p.counts;
    summary.listed += counts.listed;
    summary.warnings.extend(snap.warnings.iter().cloned());
    report_snapshot_problems(
        writer,
        snap,
        &p.collection,
        dump.is_some(),
        summary,
        progress,
    )?;

    summary.unchanged += counts.listed - counts.wanted;
    let listing = &p.listing;
    // Jobs are drawn from the listing a page at a time as the workers take them: only the
    // ones in flight are in memory, and kept there until their result comes back.
    let in_flight = InFlight::default();
    let unreadable = std::sync::Mutex::new(None);
    let jobs = listing.todo(in_flight.clone())?.map_while(|t| match t {
        Ok(t) => Some(job_of(t)),
        Err(e) => {
            *unreadable.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            None
        }
    });
    // A result's entry: the one drawn (or, for a dump's, read again by position).
    let take = |i: usize| -> Result<Todo, Error> {
        let drawn = in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&i);
        match drawn {
            Some(t) => Ok(t),
            None => Ok(listing.todo_at(i)?),
        }
    };
    progress.start("baseline", counts.wanted);
    let mut failed_here = 0u64;
    // What is left to fetch, for the message of a full disk.
    let mut left = (counts.wanted, counts.wanted_bytes);
    let on_result = |r| -> Result<(), Error> {
        let t = match &r {
            JobResult::Fetched(i, _)
            | JobResult::NotModified(i)
            | JobResult::Failed { index: i, .. } => {
                let t = take(*i)?;
                left.0 -= 1;
                left.1 -= t.listed.declared.length.unwrap_or(0).min(left.1);
                Some(t)
            }
            _ => None,
        };
        match r {
            JobResult::Unwritable(e) => {
                return Err(crate::sync::context::stop_for_fault(writer, e))
            }
            JobResult::NoSpace(message) => {
                let needed = format!(
                    ", with {} resources left to fetch ({} declared)",
                    left.0,
                    crate::report::human_bytes(left.1)
                );
                return Err(crate::sync::context::stop_for_space(
                    writer, staging, message, needed,
                ));
            }
            JobResult::Fetched(_, f) => {
                let t = t.expect("taken above");
                let l = &t.listed;
                progress.item(f.computed.length);
                summary.bytes += f.computed.length;
                let held = t.current.as_ref().map(|(_, sha)| Held {
                    sha256: sha.as_deref(),
                    lastmod: None,
                });
                let decision = decide(held, &f.computed.sha256_hex, Basis::Listed(&t.action));
                decision.count(summary);
                if let Some(change) = decision.change() {
                    writer.version(version_from(l, &f, change, &p.collection))?;
                }
            }
            // A 304 to the stored validators: the server says the version is current.
            JobResult::NotModified(_) => {
                progress.item(0);
                summary.unchanged += 1;
            }
            JobResult::Failed {
                reason,
                refused,
                other_bytes,
                gone,
                ..
            } => {
                let t = t.expect("taken above");
                let l = &t.listed;
                progress.item(0);
                // ResourceSync 1.1 §10.1: a source changes while a Destination fetches; the
                // Change Lists from the list's `at` on say what changed. Bytes that contradict
                // the list are not stored as the listed state, and do not keep the sync point
                // from being recorded: the resource is pending until incremental fetches it
                // for the change that explains it.
                let pending = (other_bytes || gone) && !refused && snap.anchored;
                let (class, reason) = if refused {
                    summary.refused += 1;
                    ("refused", reason)
                } else if pending {
                    summary.pending += 1;
                    let why = format!(
                        "{reason} (it changed or went after the Resource List was written; \
                         pending until rsmirror incremental applies the change after the sync \
                         point that explains it)"
                    );
                    ("pending", why)
                } else {
                    summary.failed += 1;
                    failed_here += 1;
                    ("failed", reason)
                };
                // Errors go to stderr even with -q: cron mails them.
                progress.println(&problem_line(class, l.uri.as_str(), &reason));
                writer.problem(l.uri.as_str(), class, &reason)?;
                summary.problems.push(Problem {
                    uri: l.uri.to_string(),
                    class,
                    reason,
                });
            }
        }
        Ok(())
    };
    match dump.as_ref() {
        // A Resource Dump: the bytes come out of the packages already downloaded.
        Some(d) => d.stage(&listing.todo_ords()?, staging, objects, on_result)?,
        None => apply::transfer(http, staging, objects, jobs, s.jobs, on_result)?,
    }
    drop(dump);
    if let Some(e) = unreadable
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(e.into());
    }
    writer.flush(|_| Ok(()))?;
    crate::store::kill::point("baseline.versions-committed");

    settle_gone(writer, s, &p, summary, progress)?;

    // The sync point advances with the last batch, only when the whole snapshot is mirrored.
    let record_sync_point = failed_here == 0 && snap.complete();
    let snap = &p.snapshot;
    let sync_point = SyncPoint {
        collection: p.collection.clone(),
        at: snap.at,
        anchored: snap.anchored,
        basis: snap.basis.clone(),
    };
    if record_sync_point {
        summary.sync_point = snap.at.map(|t| t.to_string());
        summary.anchored = snap.anchored;
    }
    let documents = &snap.documents;
    writer.flush(|tx| {
        for d in documents {
            write::document(tx, source_id, run_id, d)?;
        }
        if record_sync_point {
            write::sync_point(tx, source_id, run_id, &sync_point)?;
        }
        if let Some(d) = &p.describes {
            feed::record_identity(tx, &p.collection, d, DESCRIBES_BASIS)?;
        }
        Ok(())
    })?;
    Ok(())
}

fn version_from(
    l: &Listed,
    f: &apply::Fetched,
    change: &'static str,
    collection: &str,
) -> NewVersion {
    NewVersion {
        uri: l.uri.to_string(),
        collection: collection.to_string(),
        change,
        event_time: None,
        lastmod: l.declared.lastmod,
        length_bytes: Some(f.computed.length),
        declared_length_bytes: l.declared.length,
        declared_hash: declared_hash(&l.declared.digests),
        md5_hex: Some(f.computed.md5_hex.clone()),
        sha1_hex: f.computed.sha1_hex.clone(),
        sha256_hex: Some(f.computed.sha256_hex.clone()),
        media_type: l
            .media_type
            .as_deref()
            .map(str::to_string)
            .or_else(|| f.media_type.clone()),
        arrived_via: f.via,
        fetched_from: Some(f.final_url.to_string()),
        etag: f.etag.clone(),
        last_modified: f.last_modified.clone(),
    }
}

/// The entries the scope refused and the parts of an index (the packages of a dump, when
/// `from_dump`) that could not be read: counted, said on stderr, recorded.
fn report_snapshot_problems(
    writer: &mut Writer<'_>,
    snap: &Snapshot,
    collection: &str,
    from_dump: bool,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    for r in &snap.refused {
        summary.refused += 1;
        progress.println(&format!("refused: {}: {}", r.uri, r.reason));
        writer.problem(&r.uri, "refused", &r.reason)?;
        summary.problems.push(Problem {
            uri: r.uri.clone(),
            class: "refused",
            reason: r.reason.clone(),
        });
    }
    summary.failed_parts += snap.failed_parts.len() as u64;
    for f in &snap.failed_parts {
        let document = if from_dump {
            "Resource Dump"
        } else {
            "Resource List"
        };
        progress.println(&format!("failed: part of the {document}: {f}"));
        writer.problem(collection, "document", f)?;
        summary.problems.push(Problem {
            uri: collection.to_string(),
            class: "document",
            reason: f.clone(),
        });
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
                uri: uri.to_string(),
                collection: p.collection.clone(),
                change: "deleted",
                event_time: snap.at,
                arrived_via: "tombstone",
                ..Default::default()
            })?;
            writer.problem(uri, "deleted", "no longer listed by the source: tombstoned")?;
        } else {
            let reason = if s.delete {
                "no longer listed; not deleted because part of the list could not be read"
                    .to_string()
            } else {
                "no longer listed by the source; run with --delete to tombstone it".to_string()
            };
            writer.problem(uri, "gone", &reason)?;
            summary.problems.push(Problem {
                uri: uri.to_string(),
                class: "gone",
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
        },
        scope: l.scope,
        validators: t.validators.filter(|_| t.action == Action::Revalidate),
    }
}
