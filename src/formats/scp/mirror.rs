//! Mirroring a Site Content Protocol source (SCP 0.1): `baseline` takes the
//! newest snapshot of each section, `incremental` applies the deltas listed since (in
//! `generated` order) and re-takes a snapshot when a newer one is published, `audit` (in
//! `scp_audit`) compares the mirror with the newest snapshot.
//!
//! This module chooses WHICH collections to take and reports what happened; `scp_fetch` gets
//! the bytes (conditional GETs), `scp_apply` reads one collection into the engine, which
//! verifies and commits it in one transaction (`engine::whole`; a dry run is the same walk
//! recording nothing), `store::scp_catalog` holds the SQL. A page is a resource like any other: its
//! states are `versions` rows, its JSON the versions' objects in `objects/`.
//!
//! Failures are collected, not fatal: a collection that cannot be fetched or is rejected (a
//! limit, a malformed line, a checksum) is a `failed` problem naming its URL and line, and
//! nothing from it is committed; the other sections go on (exit 3). When nothing at all could
//! be applied and something failed, the run ends in a source error naming the first failed
//! collection (exit 4: nothing applied). Within a section, a failed delta stops the later ones
//! (the section's position never moves past a collection that was not applied), so a re-run
//! picks up exactly there.
//!
//! Conditional GETs: every collection is fetched with the validators stored for its URL (304:
//! the file is the one applied before, nothing to do). `incremental` also sends the sitemap's
//! validators, stored only after a run that applied everything it listed, so a run with
//! nothing new is one conditional request answered 304.

use crate::engine::context::RunContext;
use crate::engine::discover::Prefetched;
use crate::engine::whole::{Counts, Inline, Recent, Target, Whole, WholeError};
use crate::error::{Error, SourceError};
use crate::formats::scp::apply::{self as scp_apply, Applied, ApplyError, Applying, GonePolicy};
use crate::formats::scp::fetch::{self as scp_fetch, CollectionResponse, FetchedSitemap};
use crate::formats::scp::read::sitemap::{CollectionEntry, EntryKind};
use crate::formats::scp::read::Limits;
use crate::model::ProblemClass;
use crate::model::{Scope, Validators};
use crate::report::{problem_line, Problem};
use crate::settings::{self, UsageError};
use crate::store::scp_catalog::{self, SectionRecord};
use crate::store::StoreError;
use jiff::Timestamp;
use std::collections::BTreeSet;
use url::Url;

pub use crate::formats::scp::audit::{audit, ScpAudit};

/// The section a site publishes for all its pages; taken alone when no `--section` is given.
pub const ALL_SECTION: &str = "all";

/// `baseline` of the SCP source whose sitemap is at `sitemap` (`received`: as discovery
/// already fetched it).
pub(crate) fn baseline(
    ctx: &mut RunContext<'_, '_>,
    s: &settings::Baseline,
    sitemap: &Url,
    received: Option<Prefetched>,
) -> Result<(), Error> {
    let fetched = scp_fetch::sitemap_to_take(ctx.docs, sitemap, received)?;
    sitemap_warnings(ctx, &fetched);
    let names = choose_sections(&fetched, s.section.as_deref())?;
    for name in &names {
        scp_catalog::follow_section(ctx.catalog, ctx.source_id, ctx.run_id, name)?;
    }
    let gone = if s.delete {
        GonePolicy::Tombstone { max: s.max_delete }
    } else {
        GonePolicy::Report
    };
    let scope = ctx.docs.scope_for(&fetched.url);
    let mut run = Tally {
        max_delete: s.max_delete,
        ..Default::default()
    };
    for name in &names {
        let entry = fetched
            .sitemap
            .latest_snapshot(name)
            .expect("chosen sections have a snapshot");
        let mut section = section_record(ctx, name)?;
        take(ctx, &scope, &mut section, entry, gone, &mut run)?;
    }
    finish(ctx, &fetched, run)
}

/// `incremental` of the SCP source at `source` (the SOURCE given to baseline, or the sitemap
/// itself); the sitemap and the sections followed are the ones baseline recorded.
pub(crate) fn incremental(
    ctx: &mut RunContext<'_, '_>,
    s: &settings::Incremental,
    source: &Url,
) -> Result<(), Error> {
    let no_baseline = || {
        Error::Usage(UsageError(format!(
            "the mirror has no SCP baseline of {source}: run rsmirror baseline first"
        )))
    };
    let recorded = scp_catalog::sitemap(ctx.catalog, ctx.source_id)?.ok_or_else(no_baseline)?;
    let sections = scp_catalog::sections(ctx.catalog, ctx.source_id)?;
    if sections.is_empty() {
        return Err(no_baseline());
    }
    let sitemap_url = Url::parse(&recorded.url).map_err(|e| SourceError::Unusable {
        url: recorded.url.clone(),
        message: format!("the recorded sitemap URL does not parse: {e}"),
    })?;
    // --from re-reads from that time: no validators, so nothing is skipped as unchanged.
    let validators = match s.from {
        Some(_) => Validators::default(),
        None => recorded.validators.clone(),
    };
    let Some(fetched) = scp_fetch::sitemap(
        ctx.http,
        &sitemap_url,
        &ctx.docs.scope_for(&sitemap_url),
        &validators,
    )?
    else {
        // 304: the sitemap is the one of the last clean run; nothing new was published.
        set_sync_point(ctx, &sections);
        return Ok(());
    };
    sitemap_warnings(ctx, &fetched);
    let scope = ctx.docs.scope_for(&fetched.url);
    let mut run = Tally {
        events: true,
        ..Default::default()
    };
    for mut section in sections {
        let name = section.name.clone();
        // A newer snapshot first: it covers every delta listed up to it.
        match fetched.sitemap.latest_snapshot(&name) {
            // Newer than the section's position; but a snapshot dated in the future, which
            // moved the position only to its reading time, is not applied again once it was.
            Some(snap)
                if section
                    .snapshot_generated
                    .is_none_or(|g| snap.generated > g)
                    && !(crate::engine::sync_point::is_future(
                        snap.generated,
                        jiff::Timestamp::now(),
                    ) && scp_catalog::collection_applied(
                        ctx.catalog,
                        ctx.source_id,
                        snap.url.as_str(),
                        snap.generated,
                    )?) =>
            {
                let gone = GonePolicy::Tombstone { max: None };
                if !take(ctx, &scope, &mut section, snap, gone, &mut run)? {
                    continue;
                }
            }
            Some(snap) => {
                replayed(ctx, &section, snap)?;
            }
            None if section.snapshot_generated.is_none() => {
                let why =
                    format!("the sitemap publishes no snapshot of section {name:?} to start from");
                report(ctx, fetched.url.as_str(), ProblemClass::Failed, &why)?;
                run.failed.push((fetched.url.to_string(), why));
                continue;
            }
            None => {}
        }
        let Some(through) = section.applied_through else {
            continue;
        };
        let after = s.from.map_or(through, |f| f.min(through));
        // SCP 0.1 "Recovery from Missed Deltas": every delta since, oldest first.
        for delta in fetched.sitemap.deltas_after(&name, after) {
            if s.from.is_none()
                && scp_catalog::collection_applied(
                    ctx.catalog,
                    ctx.source_id,
                    delta.url.as_str(),
                    delta.generated,
                )?
            {
                continue;
            }
            if let (Some(since), Some(through)) = (delta.since(), section.applied_through) {
                if since > through {
                    warn(
                        ctx,
                        delta.url.as_str(),
                        &format!(
                            "gap: this delta lists changes since {since}, the mirror of section {name:?} is current only through {through}; pages changed in between are known again at the next snapshot"
                        ),
                    )?;
                }
            }
            let gone = GonePolicy::Report;
            if !take(ctx, &scope, &mut section, delta, gone, &mut run)? {
                // Later deltas wait for this one: the position never skips a collection.
                break;
            }
        }
    }
    finish(ctx, &fetched, run)
}

/// What a run did, across sections.
#[derive(Default)]
struct Tally {
    /// Collections applied or found unchanged (304).
    landed: u64,
    /// (collection URL, why) of every collection that failed.
    failed: Vec<(String, String)>,
    /// Snapshots whose gone pages exceeded --max-delete.
    delete_refused: Vec<(String, usize)>,
    max_delete: Option<u64>,
    /// Record page changes as change events (incremental runs).
    events: bool,
}

/// Record the sitemap (its validators only when the mirror is now current with everything
/// it lists) and decide how the run ends.
fn finish(ctx: &mut RunContext<'_, '_>, fetched: &FetchedSitemap, run: Tally) -> Result<(), Error> {
    let sections = scp_catalog::sections(ctx.catalog, ctx.source_id)?;
    let current = run.failed.is_empty()
        && run.delete_refused.is_empty()
        && current_with(ctx, fetched, &sections)?;
    scp_catalog::save_sitemap(
        ctx.catalog,
        ctx.source_id,
        ctx.run_id,
        fetched.url.as_str(),
        current.then_some(&fetched.validators),
    )?;
    set_sync_point(ctx, &sections);
    if run.landed == 0 {
        if let Some((url, why)) = run.failed.into_iter().next() {
            return Err(SourceError::Unusable { url, message: why }.into());
        }
    }
    if let Some((url, n)) = run.delete_refused.first() {
        return Err(Error::SafetyLimit(format!(
            "{n} pages are gone from the snapshot {url}, more than --max-delete {}; nothing was deleted",
            run.max_delete.unwrap_or(0)
        )));
    }
    Ok(())
}

/// True when every section followed rests on the newest snapshot listed and every delta
/// listed after it was applied: only then may a 304 on the sitemap mean "nothing to do"
/// (baseline takes snapshots only; the deltas it leaves are incremental's).
fn current_with(
    ctx: &RunContext<'_, '_>,
    fetched: &FetchedSitemap,
    sections: &[SectionRecord],
) -> Result<bool, Error> {
    for section in sections {
        let (Some(base), Some(through)) = (section.snapshot_generated, section.applied_through)
        else {
            return Ok(false);
        };
        if fetched
            .sitemap
            .latest_snapshot(&section.name)
            .is_some_and(|s| s.generated > base)
        {
            return Ok(false);
        }
        for delta in fetched.sitemap.deltas_after(&section.name, through) {
            if !scp_catalog::collection_applied(
                ctx.catalog,
                ctx.source_id,
                delta.url.as_str(),
                delta.generated,
            )? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// The summary's sync point: the oldest position among the sections (the whole mirror is
/// current at least through it).
fn set_sync_point(ctx: &mut RunContext<'_, '_>, sections: &[SectionRecord]) {
    let oldest = sections
        .iter()
        .map(|s| s.applied_through)
        .collect::<Option<Vec<Timestamp>>>()
        .and_then(|v| v.into_iter().min());
    ctx.summary.sync_point = oldest.map(|t| t.to_string());
    ctx.summary.anchored = oldest.is_some();
}

/// The sections to take: `--section NAME`, else `all` when the site publishes it (it holds
/// every page; the others would repeat them), else every section with a snapshot.
fn choose_sections(fetched: &FetchedSitemap, wanted: Option<&str>) -> Result<Vec<String>, Error> {
    let with_snapshot: BTreeSet<&str> = fetched
        .sitemap
        .snapshots()
        .map(|c| c.section.as_str())
        .collect();
    let listed = || {
        if with_snapshot.is_empty() {
            "none".to_string()
        } else {
            with_snapshot.iter().copied().collect::<Vec<_>>().join(", ")
        }
    };
    match wanted {
        Some(name) if with_snapshot.contains(name) => Ok(vec![name.to_string()]),
        Some(name) => Err(UsageError(format!(
            "--section {name}: {} publishes no snapshot of that section (sections with a snapshot: {})",
            fetched.url,
            listed()
        ))
        .into()),
        None if with_snapshot.contains(ALL_SECTION) => Ok(vec![ALL_SECTION.to_string()]),
        None if with_snapshot.is_empty() => Err(SourceError::Unusable {
            url: fetched.url.to_string(),
            message: "the SCP sitemap lists no snapshot collection (scp:collection) to start from"
                .into(),
        }
        .into()),
        None => Ok(with_snapshot.iter().map(|s| s.to_string()).collect()),
    }
}

/// The recorded position of a section (a new one when it was never applied).
fn section_record(ctx: &RunContext<'_, '_>, name: &str) -> Result<SectionRecord, StoreError> {
    Ok(scp_catalog::sections(ctx.catalog, ctx.source_id)?
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or(SectionRecord {
            name: name.to_string(),
            snapshot_id: None,
            snapshot_generated: None,
            applied_through: None,
        }))
}

/// Fetch, verify and apply one collection. `Ok(true)`: applied (or unchanged since it was
/// applied); `Ok(false)`: failed, recorded as a problem; `Err`: the store failed.
fn take(
    ctx: &mut RunContext<'_, '_>,
    scope: &Scope,
    section: &mut SectionRecord,
    entry: &CollectionEntry,
    gone: GonePolicy,
    run: &mut Tally,
) -> Result<bool, Error> {
    let url = entry.url.as_str();
    let limits = Limits::default();
    stale_or_replayed(ctx, section, entry, jiff::Timestamp::now())?;
    // SCP 0.1 "HTTP Caching": re-fetch with the stored validators of this URL.
    let previous = scp_catalog::latest_collection_at(ctx.catalog, ctx.source_id, url)?
        .filter(|c| c.section == entry.section);
    let validators = previous
        .as_ref()
        .map(|c| c.validators.clone())
        .unwrap_or_default();
    let response = scp_fetch::collection(
        ctx.http,
        &entry.url,
        scope,
        ctx.staging,
        &validators,
        limits.max_compressed_bytes,
    );
    let staged = match response {
        Err(e) => {
            let why = e.to_string();
            if e.is_refusal() {
                // Outside the sitemap's scope (--allow-host widens it): never fetched.
                report(ctx, url, ProblemClass::Refused, &why)?;
            } else {
                report(ctx, url, ProblemClass::Failed, &why)?;
            }
            run.failed.push((url.to_string(), why));
            return Ok(false);
        }
        Ok(CollectionResponse::NotModified) => {
            let previous = previous.expect("a 304 needs validators, which come from a record");
            // The file is the one applied before: only the position moves.
            let generated = scp_apply::position(entry.generated);
            if entry.kind == EntryKind::Snapshot {
                section.snapshot_id = Some(previous.id);
                section.snapshot_generated = Some(
                    section
                        .snapshot_generated
                        .map_or(generated, |g| g.max(generated)),
                );
                ctx.summary.unchanged += previous.page_count;
                ctx.summary.listed += previous.page_count;
            }
            section.applied_through = Some(
                section
                    .applied_through
                    .map_or(generated, |t| t.max(generated)),
            );
            scp_catalog::set_section_unchanged(ctx.catalog, ctx.source_id, ctx.run_id, section)?;
            run.landed += 1;
            return Ok(true);
        }
        Ok(CollectionResponse::Staged(staged)) => staged,
    };
    ctx.progress.start(
        &format!(
            "{} {}",
            entry.section,
            if entry.kind == EntryKind::Snapshot {
                "snapshot"
            } else {
                "delta"
            }
        ),
        entry.pages.unwrap_or(0),
    );
    ctx.summary.bytes += staged.bytes;
    let applied = scp_apply::apply(
        ctx.catalog,
        Applying {
            source_id: ctx.source_id,
            run_id: ctx.run_id,
            entry,
            staged: &staged,
            section,
            gone,
            limits,
            objects: ctx.objects,
            staging: ctx.staging,
            events: run.events,
            scope,
            filter: ctx.docs.filter,
        },
        ctx.progress,
    );
    let applied = match applied {
        Ok(a) => a,
        Err(e @ (ApplyError::Rejected(_) | ApplyError::NotAsListed(_))) => {
            let why = e.to_string();
            report(ctx, url, ProblemClass::Failed, &why)?;
            run.failed.push((url.to_string(), why));
            return Ok(false);
        }
        Err(ApplyError::Store(e)) => return Err(e.into()),
        Err(ApplyError::Io(e)) => {
            return Err(StoreError::io("reading the staged collection", &staged.path, e).into())
        }
        Err(ApplyError::Objects(e)) if crate::net::is_no_space(&e) => {
            // An SCP page is a file of its own: a snapshot of small pages may use up the
            // file system's inodes before its bytes.
            return Err(crate::engine::context::no_space(
                ctx.staging,
                format!("{e}; each SCP page is a file: `df -i` tells whether inodes ran out"),
                String::new(),
            ));
        }
        Err(ApplyError::Objects(e)) => {
            return Err(StoreError::io("writing page objects in", ctx.objects.root(), e).into())
        }
    };
    drop(staged);
    run.landed += 1;
    if applied.pages.delete_refused {
        run.delete_refused
            .push((url.to_string(), applied.pages.gone.len()));
    }
    record(ctx, entry, &applied, gone)?;
    Ok(true)
}

/// Count what a collection did, and report its warnings and cross-checks.
fn record(
    ctx: &mut RunContext<'_, '_>,
    entry: &CollectionEntry,
    a: &Applied,
    gone: GonePolicy,
) -> Result<(), Error> {
    let url = entry.url.as_str();
    let sum = &a.summary;
    let a = &a.pages;
    let summary = &mut *ctx.summary;
    summary.listed += sum.pages;
    summary.created += a.created;
    summary.updated += a.updated;
    summary.unchanged += a.unchanged + a.older_kept;
    summary.deleted += a.deleted;
    summary.gone += a.gone.len() as u64;
    summary.refused += a.refused_count;
    summary.excluded += a.excluded;
    for w in &sum.warnings {
        summary.warnings.push(format!("{url}: {w}"));
    }
    // Pages outside the scope: named on stderr and recorded, never mirrored (as a Sitemap
    // entry outside its scope); and the reader's warnings (an unknown block type: SCP 0.1
    // "MUST log a warning") recorded in the run's problems, not only shown with -v.
    for (page, why) in &a.refused {
        ctx.progress.println(&format!("refused: {page}: {why}"));
        ctx.summary.problems.push(Problem {
            uri: page.clone(),
            class: ProblemClass::Refused,
            reason: why.clone(),
        });
    }
    if a.refused_count > a.refused.len() as u64 {
        let more = a.refused_count - a.refused.len() as u64;
        ctx.progress.println(&format!(
            "refused: ... and {more} more pages of {url} outside the site's scope"
        ));
    }
    let warnings: Vec<String> = sum.warnings.iter().map(|w| w.to_string()).collect();
    let refused = a
        .refused
        .iter()
        .map(|(page, why)| (page.as_str(), ProblemClass::Refused, why.as_str()));
    let warned = warnings
        .iter()
        .map(|w| (url, ProblemClass::Warning, w.as_str()));
    ctx.problems(refused.chain(warned))?;
    let mut notes = Vec::new();
    if let Some(size) = entry.size_bytes {
        if size != sum.compressed_bytes {
            notes.push(format!(
                "the sitemap (line {}) gives size {size} bytes, {} bytes arrived",
                entry.line, sum.compressed_bytes
            ));
        }
    }
    if let Some(listed) = entry.pages {
        let read = sum.pages + sum.pages_skipped;
        if listed != read {
            notes.push(format!(
                "the sitemap (line {}) gives {listed} pages, the collection holds {read}",
                entry.line
            ));
        }
    }
    if sum.meta.generated != entry.generated {
        notes.push(format!(
            "line 1 says generated {}, the sitemap (line {}) {}",
            sum.meta.generated, entry.line, entry.generated
        ));
    }
    if let (Some(file), Some(listed)) = (sum.meta.since, entry.since()) {
        if file != listed {
            notes.push(format!(
                "line 1 says since {file}, the sitemap (line {}) {listed}",
                entry.line
            ));
        }
    }
    if a.same_modified_differs > 0 {
        notes.push(format!(
            "{} pages have the mirror's `modified` but different content: the mirror's were kept (SCP 0.1: equal timestamps keep the local page)",
            a.same_modified_differs
        ));
    }
    for note in notes {
        warn(ctx, url, &note)?;
    }
    if !a.gone.is_empty() {
        // Named on stderr (under cron too) and recorded, as every source's are.
        let (class, what, reason) = match (a.deleted > 0, gone) {
            (true, _) => (
                ProblemClass::Deleted,
                "deleted",
                format!("no longer in the snapshot {url}: tombstoned"),
            ),
            (false, GonePolicy::Tombstone { max: Some(max) }) => (
                ProblemClass::Gone,
                "gone",
                format!(
                    "no longer in the snapshot {url}; not deleted: {} pages are gone, more than --max-delete {max}",
                    a.gone.len()
                ),
            ),
            (false, _) => (
                ProblemClass::Gone,
                "gone",
                format!(
                    "no longer in the snapshot {url}; rsmirror incremental, or a baseline with --delete, tombstones it"
                ),
            ),
        };
        ctx.progress.name_first(
            what,
            a.gone.iter().map(String::as_str),
            a.gone.len() as u64,
            &format!("rsmirror log --run {}", ctx.run_id),
        );
        if class == ProblemClass::Gone {
            for page in &a.gone {
                ctx.summary.problems.push(Problem {
                    uri: page.clone(),
                    class,
                    reason: reason.clone(),
                });
            }
        }
        ctx.problems(
            a.gone
                .iter()
                .map(|page| (page.as_str(), class, reason.as_str())),
        )?;
    }
    Ok(())
}

/// A collection that could not be applied (`failed`) or was not even asked for (`refused`):
/// counted, recorded, said on stderr (cron mails it).
fn report(
    ctx: &mut RunContext<'_, '_>,
    url: &str,
    class: ProblemClass,
    why: &str,
) -> Result<(), Error> {
    if class == ProblemClass::Refused {
        ctx.summary.refused += 1;
    } else {
        ctx.summary.failed += 1;
    }
    ctx.progress.println(&problem_line(class, url, why));
    ctx.problems([(url, class, why)])?;
    ctx.summary.problems.push(Problem {
        uri: url.to_string(),
        class,
        reason: why.to_string(),
    });
    Ok(())
}

/// Something worth saying that changes nothing: a summary warning and a `warning` problem row.
fn warn(ctx: &mut RunContext<'_, '_>, url: &str, note: &str) -> Result<(), Error> {
    ctx.summary.warnings.push(format!("{url}: {note}"));
    ctx.problems([(url, ProblemClass::Warning, note)])
}

/// SCP 0.1 "Security Considerations" (timestamp validation, HTTP freshness): a collection taken
/// after its `expires` is noticed (the site may have stopped regenerating it), and one older
/// than what the mirror already applied of its section is flagged ([`replayed`]). Both are
/// warnings recorded as the run's problems; the collection is still read as it is.
fn stale_or_replayed(
    ctx: &mut RunContext<'_, '_>,
    section: &SectionRecord,
    entry: &CollectionEntry,
    now: jiff::Timestamp,
) -> Result<(), Error> {
    if let Some(note) = expired(entry, now) {
        warn(ctx, entry.url.as_str(), &note)?;
    }
    replayed(ctx, section, entry)
}

/// The note for a collection whose `expires` is before `now`.
fn expired(entry: &CollectionEntry, now: jiff::Timestamp) -> Option<String> {
    let expires = entry.expires.filter(|e| *e < now)?;
    Some(format!(
        "expired: the sitemap (line {}) gives expires {expires}, before this run ({}); the site \
         may no longer be regenerating it, so what it holds may be out of date",
        entry.line,
        now.strftime("%Y-%m-%dT%H:%M:%SZ")
    ))
}

/// A snapshot the sitemap lists as the newest of its section though it is older than the one
/// the mirror applied: an old sitemap or collection served again (a replay). Flagged; an
/// incremental run never applies it.
fn replayed(
    ctx: &mut RunContext<'_, '_>,
    section: &SectionRecord,
    entry: &CollectionEntry,
) -> Result<(), Error> {
    if let Some(note) = replay_note(section, entry) {
        warn(ctx, entry.url.as_str(), &note)?;
    }
    Ok(())
}

fn replay_note(section: &SectionRecord, entry: &CollectionEntry) -> Option<String> {
    let applied = section.snapshot_generated?;
    (entry.kind == EntryKind::Snapshot && entry.generated < applied).then(|| {
        format!(
            "replayed? the sitemap (line {}) lists this snapshot of section {:?} generated {}, \
             older than the one the mirror applied (generated {applied}): an old sitemap or \
             collection is being served; nothing older than the mirror is applied by incremental",
            entry.line, entry.section, entry.generated
        )
    })
}

fn sitemap_warnings(ctx: &mut RunContext<'_, '_>, fetched: &FetchedSitemap) {
    for w in &fetched.sitemap.warnings {
        ctx.summary.warnings.push(format!("{}: {w}", fetched.url));
    }
    // Dates a section's position comes from: one in the future never moves it past now
    // ([`scp_apply::position`]); one before the web is surely a mistake of the site.
    let now = jiff::Timestamp::now();
    let oldest: jiff::Timestamp = "1995-01-01T00:00:00Z".parse().expect("a valid time");
    for c in &fetched.sitemap.collections {
        let what = format!(
            "{}: line {}: the collection {} is dated generated {}",
            fetched.url, c.line, c.url, c.generated
        );
        if crate::engine::sync_point::is_future(c.generated, now) {
            ctx.summary.warnings.push(format!(
                "{what}, later than the time the sitemap was read: the section's position is not \
                 moved past {}, so later collections are not skipped",
                now.strftime("%Y-%m-%dT%H:%M:%SZ")
            ));
        } else if c.generated < oldest {
            ctx.summary.warnings.push(format!(
                "{what}, implausibly old: is the site's clock wrong?"
            ));
        }
    }
}

/// `baseline --dry-run` of an SCP source: the newest snapshot of each section it would take is
/// read through the collection reader (verified; nothing stored, nothing locked) and every page
/// compared with the mirror's by the engine, as the baseline applies it, with nothing recorded
/// ([`Whole::plan`]).
/// The plan is printed with the marks of a ResourceSync dry run, once the file verified: `+`
/// created, `*` updated (its `modified`), `=` kept (with `-v`), `-` gone from the snapshot
/// (deleted with `--delete`), `!` a collection that cannot be read (counted as failed).
pub(crate) fn dry_run(
    docs: &crate::engine::documents::Documents<'_>,
    s: &settings::Baseline,
    source_url: &str,
    sitemap: &Url,
    received: Option<Prefetched>,
    catalog: Option<&crate::store::Catalog>,
    summary: &mut crate::report::Summary,
) -> Result<(), Error> {
    let fetched = scp_fetch::sitemap_to_take(docs, sitemap, received)?;
    for w in &fetched.sitemap.warnings {
        summary.warnings.push(format!("{}: {w}", fetched.url));
    }
    let scope = docs.scope_for(&fetched.url);
    let verbose = s.output.verbose > 0;
    for name in choose_sections(&fetched, s.section.as_deref())? {
        let entry = fetched
            .sitemap
            .latest_snapshot(&name)
            .expect("chosen sections have a snapshot");
        let gone = if s.delete {
            "would be deleted"
        } else {
            "gone from the source"
        };
        let mut recent = Recent::default();
        let mirror = (catalog, source_url);
        plan_collection(
            docs,
            &scope,
            mirror,
            entry,
            &mut recent,
            Some(gone),
            verbose,
            summary,
        )?;
    }
    Ok(())
}

/// `incremental --dry-run` of an SCP source: for each section followed, a newer snapshot (its
/// gone pages would be deleted) and then every delta listed after the section's position that
/// was not applied yet, each read and verified and decided page by page against the state the
/// ones before it would leave, as `incremental` applies them. Nothing is stored.
pub(crate) fn plan_changes(
    docs: &crate::engine::documents::Documents<'_>,
    s: &settings::Incremental,
    source: &Url,
    catalog: &crate::store::Catalog,
    summary: &mut crate::report::Summary,
) -> Result<(), Error> {
    let no_baseline = || {
        Error::Usage(UsageError(format!(
            "the mirror has no SCP baseline of {source}: run rsmirror baseline first"
        )))
    };
    let source_id = catalog
        .known_source_id(source.as_str())?
        .ok_or_else(no_baseline)?;
    let recorded = scp_catalog::sitemap(catalog, source_id)?.ok_or_else(no_baseline)?;
    let sitemap_url = Url::parse(&recorded.url).map_err(|e| SourceError::Unusable {
        url: recorded.url.clone(),
        message: format!("the recorded sitemap URL does not parse: {e}"),
    })?;
    let fetched = scp_fetch::sitemap(
        docs.http,
        &sitemap_url,
        &docs.scope_for(&sitemap_url),
        &Validators::default(),
    )?
    .expect("an unconditional GET is never answered 304");
    for w in &fetched.sitemap.warnings {
        summary.warnings.push(format!("{}: {w}", fetched.url));
    }
    let scope = docs.scope_for(&fetched.url);
    let verbose = s.output.verbose > 0;
    for section in scp_catalog::sections(catalog, source_id)? {
        let name = section.name.clone();
        let mut recent = Recent::default();
        let mirror = (Some(catalog), source.as_str());
        let mut through = section.applied_through;
        if let Some(snap) = fetched.sitemap.latest_snapshot(&name) {
            if section
                .snapshot_generated
                .is_none_or(|g| snap.generated > g)
            {
                let gone = Some("would be deleted");
                if !plan_collection(
                    docs,
                    &scope,
                    mirror,
                    snap,
                    &mut recent,
                    gone,
                    verbose,
                    summary,
                )? {
                    continue;
                }
                through = Some(through.map_or(snap.generated, |t| t.max(snap.generated)));
            }
        }
        let Some(through) = through else {
            continue;
        };
        let after = s.from.map_or(through, |f| f.min(through));
        for delta in fetched.sitemap.deltas_after(&name, after) {
            if s.from.is_none()
                && scp_catalog::collection_applied(
                    catalog,
                    source_id,
                    delta.url.as_str(),
                    delta.generated,
                )?
            {
                continue;
            }
            if !plan_collection(
                docs,
                &scope,
                mirror,
                delta,
                &mut recent,
                None,
                verbose,
                summary,
            )? {
                // Later deltas wait for this one, as in a run.
                break;
            }
        }
    }
    Ok(())
}

/// Read one collection over HTTP (verified) and print what applying it would do to the mirror
/// (`mirror`: its catalog, if there is one, and the source) after what the run's earlier
/// collections of the section would do (`recent`, updated as applying it would leave it); for
/// a snapshot (`gone`: how to call a page it no longer lists), the live pages it does not
/// list are named too. `false`: the collection could not be read (named with `!`, counted as
/// failed; nothing of it counts, and `recent` is as it was).
#[allow(clippy::too_many_arguments)]
fn plan_collection(
    docs: &crate::engine::documents::Documents<'_>,
    scope: &Scope,
    (catalog, source_url): (Option<&crate::store::Catalog>, &str),
    entry: &CollectionEntry,
    recent: &mut Recent,
    gone: Option<&str>,
    verbose: bool,
    summary: &mut crate::report::Summary,
) -> Result<bool, Error> {
    let collection = scp_catalog::section_collection(source_url, &entry.section);
    let target = Target {
        collection: &collection,
        qualifier: &entry.section,
        document: entry.url.as_str(),
        listed: entry.generated,
        scope,
        filter: docs.filter,
        events: false,
    };
    let before = recent.clone();
    let policy = match gone {
        Some("would be deleted") => GonePolicy::Tombstone { max: None },
        _ => GonePolicy::Report,
    };
    let whole = Whole::plan(catalog, target, recent).map_err(whole_error)?;
    let (counts, lines) = match read_and_decide(docs, scope, entry, whole, gone.map(|_| policy))? {
        Ok((counts, lines, listed)) => {
            summary.listed += listed;
            (counts, lines)
        }
        Err(why) => {
            *recent = before;
            summary.failed += 1;
            plan!("! {} {why}", entry.url);
            return Ok(false);
        }
    };
    summary.refused += counts.refused_count;
    for (mark, line) in lines {
        match mark {
            // Left out by --include/--exclude: not applied, not printed.
            'x' => {
                summary.excluded += 1;
                continue;
            }
            '+' => summary.created += 1,
            '*' => summary.updated += 1,
            _ => summary.unchanged += 1,
        }
        if mark != '=' || verbose {
            plan!("{mark} {line}");
        }
    }
    if let Some(what) = gone {
        let mut urls: Vec<&str> = counts
            .gone
            .iter()
            .map(|uri| scp_catalog::page_url(uri, &entry.section))
            .collect();
        urls.sort();
        for url in urls {
            summary.gone += 1;
            plan!("- {url} ({what})");
        }
    }
    Ok(true)
}

/// What a collection read for a dry run did ([`Whole::commit`]'s counts and plan lines) and
/// how many pages it listed; `Err`: why it could not be read.
type Decided = Result<(Counts, Vec<(char, String)>, u64), String>;

/// Read one collection over HTTP and hand each page to `whole`, which decides it with nothing
/// recorded; then, for a snapshot (`gone`: a policy), the pages it no longer lists.
fn read_and_decide(
    docs: &crate::engine::documents::Documents<'_>,
    scope: &Scope,
    entry: &CollectionEntry,
    mut whole: Whole<'_, '_>,
    gone: Option<GonePolicy>,
) -> Result<Decided, Error> {
    let reject = |e: crate::formats::scp::read::ScpError| format!("rejected: {e}");
    let mut reader = match scp_fetch::stream(docs.http, &entry.url, scope, &Limits::default()) {
        Ok(reader) => reader,
        Err(why) => return Ok(Err(why)),
    };
    loop {
        let page = match reader.next_page() {
            Ok(Some(page)) => page,
            Ok(None) => break,
            Err(e) => return Ok(Err(reject(e))),
        };
        whole
            .item(Inline {
                url: page.url,
                modified: page.modified,
                bytes: page.json,
                line: page.line,
                side: None,
            })
            .map_err(whole_error)?;
    }
    let listed = match reader.finish() {
        Ok(summary) => summary.pages,
        Err(e) => return Ok(Err(reject(e))),
    };
    if let Some(policy) = gone {
        whole.gone(policy, || None).map_err(whole_error)?;
    }
    let (counts, lines) = whole.commit(None).map_err(whole_error)?;
    Ok(Ok((counts, lines, listed)))
}

/// A dry run writes no object: only the catalog's reading can fail.
fn whole_error(e: WholeError) -> Error {
    match e {
        WholeError::Store(e) => e.into(),
        WholeError::Objects(e) => {
            StoreError::io("reading", std::path::Path::new("objects"), e).into()
        }
    }
}
