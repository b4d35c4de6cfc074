//! `baseline` of ResourceSync collections (its [`Format`](crate::sync::formats::Format) side):
//! read every Resource List (or Resource Dump), plan against the catalog, fetch and verify what
//! is new or changed, record versions, report (or tombstone, with `--delete`) what is gone, and
//! record the sync point (ResourceSync 1.1 §10.1).
//!
//! Every snapshot is read completely before anything is fetched, so a malformed or unreachable
//! list stops the run with nothing applied (exit 4). Resources that fail are collected; the run
//! finishes the rest and exits 3. The sync point is recorded only when every listed resource is
//! in the mirror.

use crate::cli::Via;
use crate::error::{Error, SourceError};
use crate::net::{Expected, Http, Validators};
use crate::progress::Progress;
use crate::report::{problem_line, Problem, Summary};
use crate::rs::digest::Digest;
use crate::rs::document::Capability;
use crate::rs::sitemap::ReadOptions;
use crate::settings;
use crate::store::catalog::{write, CurrentState, NewVersion, SyncPoint};
use crate::store::{Catalog, ObjectStore, StoreError};
use crate::sync::apply::{self, Job, JobResult, Writer};
use crate::sync::context::RunContext;
use crate::sync::discover::Collection;
use crate::sync::documents::Documents;
use crate::sync::feed::{self, DESCRIBES_BASIS};
use crate::sync::formats::resourcesync::dump_source::{DumpLocation, DumpSnapshot, ALPHA_DUMP_REL};
use crate::sync::formats::resourcesync::snapshot::{self, Snapshot};
use crate::sync::plan::{self, Action, Listed};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// One collection's snapshot and what to do with it.
struct Planned {
    collection: String,
    snapshot: Snapshot,
    actions: Vec<Action>,
    gone: Vec<String>,
    /// The packages holding the bytes, when the snapshot came from a Resource Dump.
    dump: Option<DumpSnapshot>,
    describes: Option<String>,
    /// For each [`Action::Revalidate`] (by index), the validators stored with the mirror's
    /// version: the few resources only the server can judge.
    validators: HashMap<usize, Validators>,
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
    let states = ctx.catalog.current_states()?;
    let inputs = PlanInputs {
        http: ctx.http,
        staging: ctx.staging,
        via: s.via,
        options: ctx.docs.options,
        objects: ctx.objects.clone(),
    };
    let mut planned = plan_all(ctx.docs, &inputs, collections, &states)?;
    for p in &mut planned {
        p.validators = stored_validators(ctx.catalog, p, &states)?;
    }
    let mut writer = Writer::new(ctx.catalog, ctx.objects, ctx.run_id);
    for p in planned {
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
    let states = match catalog {
        Some(c) => c.current_states()?,
        None => HashMap::new(),
    };
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
    let planned = plan_all(docs, &inputs, collections, &states);
    let _ = std::fs::remove_dir_all(&dry_staging);
    let planned = planned?;
    print_plan(&planned, &states, s, summary);
    Ok(planned.iter().all(|p| p.snapshot.complete()))
}

/// Read every collection's snapshot and plan it; any unreadable top-level list is fatal.
fn plan_all(
    docs: &Documents<'_>,
    inputs: &PlanInputs<'_>,
    collections: Vec<Collection>,
    states: &HashMap<String, CurrentState>,
) -> Result<Vec<Planned>, Error> {
    let mut planned = Vec::new();
    for mut collection in collections {
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
                        let mut snapshot = resource_list(docs, &mut collection)?;
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
            (Via::List | Via::Auto, _) => (resource_list(docs, &mut collection)?, None),
        };
        let actions = snapshot
            .listed
            .iter()
            .map(|l| {
                let current = states.get(l.uri.as_str());
                match plan::action(&l.declared, current) {
                    // The source and the catalog agree, but the bytes must be there too: a
                    // missing or truncated object is fetched again (a cheap stat, no hashing;
                    // `audit` finds the rest).
                    Action::Keep => current
                        .and_then(|c| object_damage(&inputs.objects, c))
                        .map_or(Action::Keep, |d| Action::Update(vec![d])),
                    a => a,
                }
            })
            .collect();
        let listed: HashSet<&str> = snapshot.listed.iter().map(|l| l.uri.as_str()).collect();
        let mut gone: Vec<String> = states
            .iter()
            .filter(|(uri, st)| {
                !st.deleted && st.collection == collection.id && !listed.contains(uri.as_str())
            })
            .map(|(uri, _)| uri.clone())
            .collect();
        gone.sort();
        planned.push(Planned {
            describes: collection.describes.clone(),
            collection: collection.id,
            snapshot,
            actions,
            gone,
            dump,
            validators: HashMap::new(),
        });
    }
    Ok(planned)
}

/// Why deleting `gone` resources of a collection of `live` ones from this snapshot is refused,
/// if it is: the guard against a source that publishes an empty list one night, a list that is
/// one part of an index given alone, or a mass delete. `--max-delete N` replaces the default
/// count: a tenth of the collection, at least 10 and at most 1,000 (rclone's `--max-delete` has
/// none; a mirror kept for years should not lose a collection to one bad night).
fn deletion_guard(snap: &Snapshot, gone: u64, live: u64, max: Option<u64>) -> Option<String> {
    if let Some(index) = &snap.part_of {
        return Some(format!(
            "this Resource List is one part of the index {index}: alone it does not list the \
             collection ({gone} resources would go); give the index"
        ));
    }
    if snap.listed.is_empty() {
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
fn name_gone(gone: &[String], what: &str, progress: &Progress) {
    const SHOWN: usize = 100;
    for uri in gone.iter().take(SHOWN) {
        progress.println(&format!("{what}: {uri}"));
    }
    if gone.len() > SHOWN {
        progress.println(&format!(
            "{what}: ... and {} more (all of them in the run's problems: run_problems)",
            gone.len() - SHOWN
        ));
    }
}

/// Read the collection's Resource List (the one discovery opened, else the one its
/// Capability List names).
fn resource_list(docs: &Documents<'_>, collection: &mut Collection) -> Result<Snapshot, Error> {
    let top = match collection.opened.take() {
        Some(doc) => doc,
        None => {
            let url = collection.resource_list_url()?;
            docs.fetch(url, &docs.scope_for(url))?
        }
    };
    Ok(snapshot::read(docs, top)?)
}

/// The validators stored with the mirror's version of each resource to revalidate.
fn stored_validators(
    catalog: &Catalog,
    p: &Planned,
    states: &HashMap<String, CurrentState>,
) -> Result<HashMap<usize, Validators>, StoreError> {
    let mut out = HashMap::new();
    for (i, a) in p.actions.iter().enumerate() {
        if *a != Action::Revalidate {
            continue;
        }
        let Some(c) = states.get(p.snapshot.listed[i].uri.as_str()) else {
            continue;
        };
        let (etag, last_modified) = catalog.version_validators(c.version_id)?;
        let v = Validators {
            etag,
            last_modified,
        };
        // Nothing stored to ask with: a full GET, compared by its bytes.
        if !v.is_empty() {
            out.insert(i, v);
        }
    }
    Ok(out)
}

/// An update planned only because the stored object was damaged.
fn is_repair(a: &Action) -> bool {
    matches!(a, Action::Update(d) if d.iter().all(|d| d.field == "object"))
}

/// A current version whose object is missing or has the wrong length.
fn object_damage(objects: &ObjectStore, c: &CurrentState) -> Option<plan::Difference> {
    let sha = c.sha256_hex.as_deref()?;
    let path = objects.path_for(sha);
    let actual = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && Some(m.len()) == c.length_bytes => return None,
        Ok(m) if m.is_file() => format!("{} bytes", m.len()),
        Ok(_) => "not a file".to_string(),
        Err(e) => e.to_string(),
    };
    Some(plan::Difference {
        field: "object".into(),
        expected: ObjectStore::relative_path(sha),
        actual,
    })
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
    _states: &HashMap<String, CurrentState>,
    s: &settings::Baseline,
    summary: &mut Summary,
) {
    for p in planned {
        summary.listed += p.snapshot.listed.len() as u64;
        for (l, a) in p.snapshot.listed.iter().zip(&p.actions) {
            plan::print_mark(l.uri.as_str(), a, s.output.verbose > 0, summary);
        }
        for r in &p.snapshot.refused {
            summary.refused += 1;
            println!("! {} refused: {}", r.uri, r.reason);
        }
        for f in &p.snapshot.failed_parts {
            println!("! {f}");
        }
        for g in &p.gone {
            summary.gone += 1;
            let what = if s.delete && p.snapshot.complete() {
                "would be deleted"
            } else {
                "gone from the source"
            };
            println!("- {g} ({what})");
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn apply_collection(
    http: &Http,
    staging: &Path,
    objects: &ObjectStore,
    writer: &mut Writer<'_>,
    s: &settings::Baseline,
    mut p: Planned,
    states: &HashMap<String, CurrentState>,
    source_id: i64,
    run_id: i64,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let dump = p.dump.take();
    let snap = &p.snapshot;
    summary.listed += snap.listed.len() as u64;
    summary.warnings.extend(snap.warnings.iter().cloned());
    report_snapshot_problems(
        writer,
        snap,
        &p.collection,
        dump.is_some(),
        summary,
        progress,
    )?;

    // Jobs are made as the workers take them: only the ones in flight are in memory.
    let wanted: Vec<usize> = (0..snap.listed.len())
        .filter(|&i| p.actions[i] != Action::Keep)
        .collect();
    summary.unchanged += (snap.listed.len() - wanted.len()) as u64;
    let listed = &snap.listed;
    let jobs = wanted.iter().map(|&i| {
        let l = &listed[i];
        let mut urls = vec![l.uri.clone()];
        urls.extend(l.duplicates.iter().cloned());
        Job {
            index: i,
            urls,
            expected: Expected {
                length: l.declared.length,
                digests: l.declared.digests.clone(),
            },
            scope: l.scope.clone(),
            validators: p.validators.get(&i).cloned(),
        }
    });
    progress.start("baseline", wanted.len() as u64);
    let mut failed_here = 0u64;
    // What is left to fetch, for the message of a full disk.
    let mut left = (
        wanted.len() as u64,
        wanted
            .iter()
            .filter_map(|&i| listed[i].declared.length)
            .sum::<u64>(),
    );
    let on_result = |r| -> Result<(), Error> {
        if let JobResult::Fetched(i, _)
        | JobResult::NotModified(i)
        | JobResult::Failed { index: i, .. } = &r
        {
            left.0 -= 1;
            left.1 -= listed[*i].declared.length.unwrap_or(0).min(left.1);
        }
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
            JobResult::Fetched(i, f) => {
                let l = &snap.listed[i];
                let current = states.get(l.uri.as_str()).filter(|c| !c.deleted);
                progress.item(f.computed.length);
                summary.bytes += f.computed.length;
                let same_bytes = current.and_then(|c| c.sha256_hex.as_deref())
                    == Some(f.computed.sha256_hex.as_str());
                if same_bytes && matches!(p.actions[i], Action::Check | Action::Revalidate) {
                    summary.unchanged += 1;
                    return Ok(());
                }
                if same_bytes && is_repair(&p.actions[i]) {
                    // The object is back in the store; the version already describes it.
                    summary.repaired += 1;
                    return Ok(());
                }
                let change = if current.is_some() {
                    summary.updated += 1;
                    "updated"
                } else {
                    summary.created += 1;
                    "created"
                };
                writer.version(version_from(l, &f, change, &p.collection))?;
            }
            // A 304 to the stored validators: the server says the version is current.
            JobResult::NotModified(_) => {
                progress.item(0);
                summary.unchanged += 1;
            }
            JobResult::Failed {
                index,
                reason,
                refused,
                other_bytes,
                gone,
            } => {
                let l = &snap.listed[index];
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
        Some(d) => d.stage(&wanted, staging, objects, on_result)?,
        None => apply::transfer(http, staging, objects, jobs, s.jobs, on_result)?,
    }
    drop(dump);
    writer.flush(|_| Ok(()))?;
    crate::store::kill::point("baseline.versions-committed");

    settle_gone(writer, s, &p, states, summary, progress)?;

    // The sync point advances with the last batch, only when the whole snapshot is mirrored.
    let record_sync_point = failed_here == 0 && snap.complete();
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

/// The source's digests as one normalised string (`md5:… sha-256:…`), or None.
pub fn declared_hash(digests: &[Digest]) -> Option<String> {
    (!digests.is_empty()).then(|| {
        digests
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    })
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
    states: &HashMap<String, CurrentState>,
    summary: &mut Summary,
    progress: &Progress,
) -> Result<(), Error> {
    let snap = &p.snapshot;
    summary.gone += p.gone.len() as u64;
    let may_delete = s.delete && snap.complete();
    if may_delete && !p.gone.is_empty() && !s.force_delete {
        let live = states
            .values()
            .filter(|c| !c.deleted && c.collection == p.collection)
            .count() as u64;
        if let Some(why) = deletion_guard(snap, p.gone.len() as u64, live, s.max_delete) {
            name_gone(&p.gone, "would go", progress);
            return Err(Error::SafetyLimit(format!(
                "{}: {why}; nothing was deleted (--max-delete N or --force-delete to go ahead)",
                p.collection
            )));
        }
    }
    if may_delete {
        name_gone(&p.gone, "deleted", progress);
    } else {
        name_gone(&p.gone, "gone", progress);
    }
    for uri in &p.gone {
        if may_delete {
            summary.deleted += 1;
            writer.version(NewVersion {
                uri: uri.clone(),
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
                uri: uri.clone(),
                class: "gone",
                reason,
            });
        }
    }
    Ok(())
}
