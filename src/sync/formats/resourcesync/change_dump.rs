//! `incremental` from a Change Dump (ResourceSync 1.1 §6, §10.2 step 7): packages selected by
//! their `from`/`until` like Change Lists (the same gap rule), processed in order, each
//! manifest's entries in order — `deleted` entries have no bitstream, several bitstreams for
//! one URI become several versions in order. A package is staged whole before any of its
//! changes is recorded; one that is refused (or fails) stops the run there, so a later package
//! is never applied before an earlier one, and the sync point does not pass it.

use crate::error::{Error, SourceError};
use crate::net::fetch::fetch_to_staging;
use crate::net::Expected;
use crate::report::Problem;
use crate::report::Summary;
use crate::rs::digest::declared_hash;
use crate::rs::document::{Capability, Change, Root};
use crate::rs::dump::{DumpLimits, Package, StageError, StagedBitstream};
use crate::store::catalog::{write, ChangeEventRecord, DocumentRecord, NewVersion, SyncPoint};
use crate::store::Catalog;
use crate::sync::apply::Writer;
use crate::sync::context::RunContext;
use crate::sync::decide::{decide, Basis, Held};
use crate::sync::documents::Documents;
use jiff::Timestamp;
use std::collections::HashMap;
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
pub fn plan(
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

/// Apply the Change Dump at `dump_url` to `collection` from `since`.
pub fn apply(
    ctx: &mut RunContext<'_, '_>,
    collection: &str,
    dump_url: &Url,
    since: Timestamp,
) -> Result<(), Error> {
    let docs = ctx.docs;
    let (relevant, documents) = packages(docs, ctx.catalog, collection, dump_url, since)?;
    // What this run did to a resource (its SHA-256 now, None once deleted); the catalog says
    // the rest, one resource at a time (a mirror of millions is not read whole for a dump of
    // a few changes).
    // What this run has applied so far, by URI (None: deleted): the catalog holds it only
    // once the writer has flushed.
    let mut current: HashMap<String, Option<Live>> = HashMap::new();
    let mut writer = Writer::new(&mut *ctx.catalog, ctx.objects, ctx.run_id);
    let mut applied_max: Option<Timestamp> = None;
    let mut until_max: Option<Timestamp> = None;
    let mut stopped_at: Option<Timestamp> = None;
    let mut processed = Vec::new();
    for r in &relevant {
        let record = |uri: &Url, change: Change, t: Option<Timestamp>, outcome: &'static str| {
            ChangeEventRecord {
                collection: collection.to_string(),
                uri: uri.to_string(),
                change: change.name(),
                event_time: t,
                document_url: r.url.to_string(),
                outcome,
            }
        };
        // Download, open, and stage every bitstream the package brings after `since`.
        let staged_pkg = fetch_to_staging(
            ctx.http,
            &r.url,
            &docs.scope_for(&r.url),
            ctx.staging,
            &r.expected,
        )
        .map_err(|e| e.to_string())
        .and_then(|staged| {
            let opened = Package::open(&staged.file, &r.url, DumpLimits::default(), docs.options);
            let _ = std::fs::remove_file(&staged.file).ok();
            opened.map_err(|e| e.to_string())
        });
        // (entry index, event time, staged bitstream or entry error)
        let mut plan: Vec<Step> = Vec::new();
        let outcome = staged_pkg.and_then(|mut pkg| {
            let mut previous = r.from;
            for i in 0..pkg.entries().len() {
                let item = &pkg.entries()[i];
                let t = item.event_time().or(previous);
                previous = t;
                if t.is_some_and(|t| t < since) {
                    continue;
                }
                match pkg.stage(i, ctx.staging) {
                    Ok(sb) => plan.push((i, t, Ok(sb))),
                    Err(StageError::Entry(e)) => plan.push((i, t, Err(e.to_string()))),
                    Err(StageError::Package(e)) => return Err(e.to_string()),
                }
            }
            Ok(pkg)
        });
        let pkg = match outcome {
            Ok(p) => {
                crate::store::kill::point("change-dump.package-staged");
                p
            }
            Err(reason) => {
                for (_, _, sb) in &plan {
                    if let Ok(Some(sb)) = sb {
                        let _ = std::fs::remove_file(&sb.path);
                    }
                }
                let reason = format!(
                    "package {} refused, nothing from it applied: {reason}",
                    r.url
                );
                ctx.progress.println(&format!("failed: {reason}"));
                writer.problem(r.url.as_str(), "failed", &reason)?;
                ctx.summary.failed += 1;
                ctx.summary.problems.push(Problem {
                    uri: r.url.to_string(),
                    class: "failed",
                    reason,
                });
                stopped_at = Some(r.from.unwrap_or(since).max(since));
                break;
            }
        };
        let mut package_ok = true;
        for (i, t, sb) in plan {
            let item = &pkg.entries()[i];
            let change = item.change.unwrap_or(Change::Updated);
            let uri = item.loc.to_string();
            match sb {
                Err(reason) => {
                    package_ok = false;
                    stopped_at =
                        Some(stopped_at.map_or(t.unwrap_or(since), |s| s.min(t.unwrap_or(since))));
                    ctx.summary.failed += 1;
                    ctx.progress.println(&format!("failed: {uri}: {reason}"));
                    writer.problem(&uri, "failed", &reason)?;
                    writer.event(record(&item.loc, change, t, "failed"))?;
                    ctx.summary.problems.push(Problem {
                        uri,
                        class: "failed",
                        reason,
                    });
                }
                Ok(None) => {
                    // A deletion.
                    applied_max = applied_max.max(t);
                    match known(&current, &writer, &uri)? {
                        Some(Some(_)) => {
                            ctx.summary.deleted += 1;
                            current.insert(uri.clone(), None);
                            writer.version_for_event(
                                NewVersion {
                                    uri,
                                    collection: collection.to_string(),
                                    change: "deleted",
                                    event_time: t,
                                    lastmod: item.lastmod,
                                    arrived_via: "tombstone",
                                    fetched_from: Some(r.url.to_string()),
                                    ..Default::default()
                                },
                                record(&item.loc, change, t, "applied"),
                            )?;
                        }
                        Some(None) => writer.event(record(&item.loc, change, t, "unchanged"))?,
                        None => {
                            ctx.summary.unknown_deletes += 1;
                            writer.event(record(&item.loc, change, t, "unknown-delete"))?;
                        }
                    }
                }
                Ok(Some(sb)) => {
                    applied_max = applied_max.max(t);
                    ctx.summary.bytes += sb.computed.length;
                    let had = known(&current, &writer, &uri)?.flatten();
                    let held = had.as_ref().map(|h| Held {
                        sha256: h.sha256.as_deref(),
                        lastmod: h.lastmod,
                    });
                    let basis = Basis::Change {
                        lastmod: item.lastmod,
                    };
                    let decision = decide(held, &sb.computed.sha256_hex, basis);
                    decision.count(ctx.summary);
                    let Some(kind) = decision.change() else {
                        let _ = std::fs::remove_file(&sb.path);
                        writer.event(record(&item.loc, change, t, "unchanged"))?;
                        continue;
                    };
                    ctx.objects
                        .ingest(&sb.path, &sb.computed.sha256_hex)
                        .map_err(|e| crate::store::StoreError::io("storing", &sb.path, e))?;
                    crate::store::kill::point("change-dump.object-stored");
                    current.insert(
                        uri.clone(),
                        Some(Live {
                            sha256: Some(sb.computed.sha256_hex.clone()),
                            lastmod: item.lastmod,
                        }),
                    );
                    writer.version_for_event(
                        NewVersion {
                            uri,
                            collection: collection.to_string(),
                            change: kind,
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
                        },
                        record(&item.loc, change, t, "applied"),
                    )?;
                }
            }
        }
        if package_ok {
            if let Some(u) = r.until {
                until_max = until_max.max(Some(u));
                processed.push((r.url.to_string(), r.from, u));
            }
        } else {
            break;
        }
    }

    let mut at = since
        .max(until_max.unwrap_or(since))
        .max(applied_max.unwrap_or(since));
    let mut basis =
        "until of the last Change Dump package processed, or the latest change applied".to_string();
    if let Some(f) = stopped_at {
        if f < at {
            at = f.max(since);
            basis = "time of the earliest failed change (it is retried next run)".into();
        }
    }
    ctx.summary.sync_point = Some(at.to_string());
    ctx.summary.anchored = true;
    let sp = SyncPoint {
        collection: collection.to_string(),
        at: Some(at),
        anchored: true,
        basis,
    };
    let (source_id, run_id) = (ctx.source_id, ctx.run_id);
    writer.flush(|tx| {
        for d in &documents {
            write::document(tx, source_id, run_id, d)?;
        }
        for (url, from, until) in &processed {
            write::processed_change_list(tx, run_id, collection, url, *from, *until)?;
        }
        write::sync_point(tx, source_id, run_id, &sp)
    })?;
    Ok(())
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
