//! `rsmirror incremental`: open the mirror, find what the source's collections are (a source
//! whose format records what it follows is not discovered again), and hand them to their
//! formats (`formats`), each of which applies what changed since its sync point; a gap
//! can be crossed by a recorded rebaseline (`--on-gap rebaseline`). Without SOURCE, every
//! source the mirror follows, one run each, in one summary.

use crate::engine::context::{partial, OpenMirror, Outcome};
use crate::engine::discover::{self, Collection, SourceKind};
use crate::engine::documents::Documents;
use crate::error::{Error, NeedsBaseline, SourceError};
use crate::exit::Exit;
use crate::formats;
use crate::model::Validators;
use crate::progress::Progress;
use crate::report::{Problem, Summary};
use crate::settings;
use crate::settings::{OnGap, Via};
use crate::store::{Catalog, StoreError};
use std::time::Instant;
use url::Url;

/// `incremental`: the SOURCE given; else every source the mirror follows, each from its own
/// sync point, one run each (a plain Sitemap source, which has no Change Lists, by re-reading
/// its list as a baseline does), combined into one summary whose exit code is the worst.
pub(crate) fn run(
    s: &settings::Incremental,
    arguments: &str,
    progress: &Progress,
) -> Result<Outcome, Error> {
    let s = &settings::Incremental {
        source: s.source.with_remembered_maps(&s.mirror)?,
        ..s.clone()
    };
    let followed = match (
        s.source_given || s.dry_run || s.from.is_some(),
        Catalog::open_read_only(&s.mirror),
    ) {
        (false, Ok(Some(catalog))) => catalog
            .followed_sources()?
            .into_iter()
            .map(|(url, followable, _)| (url, followable))
            .collect(),
        _ => Vec::new(),
    };
    if followed.len() <= 1 && followed.iter().all(|(_, followable)| *followable) {
        return run_source(s, arguments, progress);
    }
    let mut combined: Option<Outcome> = None;
    for (url, followable) in followed {
        if s.output.verbose > 0 {
            progress.println(&format!("incremental: {url}"));
        }
        let source = settings::SourceSettings {
            source: url.clone(),
            ..s.source.clone()
        };
        let one = if followable {
            let one = settings::Incremental {
                source,
                source_given: true,
                ..s.clone()
            };
            run_source(&one, arguments, progress)
        } else {
            let b = rebaseline(s, source, None);
            let arguments = format!("{arguments} [a plain Sitemap source: its list read again]");
            crate::commands::baseline::run(&b, &arguments, progress)
        };
        // Another run holds the lock before any source ran: the whole run waits for it
        // (`--retry-lock`) or ends with exit 6, as a run of one source does.
        let held = matches!(
            one,
            Err(Error::Lock(
                crate::store::lock::LockError::Held { .. }
                    | crate::store::lock::LockError::Leased { .. }
            ))
        );
        if held && combined.is_none() {
            return one;
        }
        let one = one.unwrap_or_else(|e| failed(("incremental", &url), &s.mirror, e, progress));
        combined = Some(match combined {
            None => one,
            Some(all) => combine(all, one),
        });
    }
    Ok(combined.expect("several sources"))
}

/// The outcome of a source whose run of `command` ended in `e`, as one of several sources' (it
/// is said at once; the others go on).
pub(crate) fn failed(
    (command, url): (&'static str, &str),
    mirror: &std::path::Path,
    e: Error,
    progress: &Progress,
) -> Outcome {
    progress.println(&format!("rsmirror: {url}: {e}"));
    let mut summary = Summary {
        command,
        source: url.to_string(),
        mirror: mirror.display().to_string(),
        ..Default::default()
    };
    summary.problems.push(Problem {
        uri: url.to_string(),
        class: crate::model::ProblemClass::Source,
        reason: e.to_string(),
    });
    summary.exit_code = e.exit().code();
    Outcome {
        summary,
        exit: e.exit(),
    }
}

/// The baseline an incremental run hands a source to (a plain Sitemap, a gap crossed): the
/// current list, fetching what differs, deleting nothing.
fn rebaseline(
    s: &settings::Incremental,
    source: settings::SourceSettings,
    crossing_gap: Option<String>,
) -> settings::Baseline {
    settings::Baseline {
        mirror: s.mirror.clone(),
        source,
        capability_list: None,
        section: None,
        via: Via::Auto,
        delete: false,
        max_delete: None,
        force_delete: false,
        init_here: false,
        objects: None,
        dry_run: false,
        jobs: s.jobs,
        output: s.output,
        crossing_gap,
    }
}

/// Two sources' outcomes as one: counts added, problems and warnings kept, the worse exit.
pub(crate) fn combine(mut all: Outcome, one: Outcome) -> Outcome {
    let (a, b) = (&mut all.summary, one.summary);
    a.command = "incremental";
    a.source = format!("{}, {}", a.source, b.source);
    a.run_id = b.run_id.or(a.run_id);
    for (x, y) in [
        (&mut a.listed, b.listed),
        (&mut a.created, b.created),
        (&mut a.updated, b.updated),
        (&mut a.unchanged, b.unchanged),
        (&mut a.repaired, b.repaired),
        (&mut a.failed, b.failed),
        (&mut a.pending, b.pending),
        (&mut a.failed_parts, b.failed_parts),
        (&mut a.refused, b.refused),
        (&mut a.gone, b.gone),
        (&mut a.deleted, b.deleted),
        (&mut a.unknown_deletes, b.unknown_deletes),
        (&mut a.bytes, b.bytes),
    ] {
        *x += y;
    }
    a.seconds += b.seconds;
    a.problems.extend(b.problems);
    a.warnings.extend(b.warnings);
    a.sync_point = None;
    if one.exit.code() > all.exit.code() {
        all.exit = one.exit;
    }
    a.exit_code = all.exit.code();
    all
}

/// `incremental` of one source.
fn run_source(
    s: &settings::Incremental,
    arguments: &str,
    progress: &Progress,
) -> Result<Outcome, Error> {
    let started = Instant::now();
    let s = &with_kept(s)?;
    let http = s.source.http();
    let docs = Documents {
        http: &http,
        options: s.source.read_options(),
        allow_hosts: &s.source.allow_hosts,
        filter: &s.source.filter,
        reader: &s.source.reader,
        readers: &crate::formats::readers(),
    };
    let mut summary = Summary {
        command: "incremental",
        mirror: s.mirror.display().to_string(),
        dry_run: s.dry_run,
        ..Default::default()
    };
    let no_mirror = || {
        Error::Store(StoreError::Missing {
            path: s.mirror.display().to_string(),
        })
    };

    if s.dry_run {
        let catalog = Catalog::open_read_only(&s.mirror)?.ok_or_else(no_mirror)?;
        let source = source_of(s, &catalog)?;
        summary.source = source.clone();
        let mut complete = true;
        for (format, collections) in
            formats::by_format(to_follow(&docs, &catalog, (&source, s.from.is_some()))?)
        {
            complete &= format.plan_changes(&docs, s, collections, &catalog, &mut summary)?;
        }
        summary.seconds = started.elapsed().as_secs_f64();
        let exit = if partial(&summary) || !complete {
            Exit::Partial
        } else {
            Exit::Ok
        };
        summary.exit_code = exit.code();
        return Ok(Outcome { summary, exit });
    }

    if !Catalog::present(&s.mirror)? {
        return Err(no_mirror());
    }
    let mut m = OpenMirror::open(&s.mirror, ("incremental", Some(arguments)))?;
    let source = source_of(s, &m.catalog)?;
    summary.source = source.clone();
    let source_url = discover::source_url(&source)?;
    let source_id = m.catalog.source_id(source_url.as_str())?;
    s.source.record_maps(&m.catalog, source_id)?;
    s.source
        .record_kept(&m.catalog, (source_id, source_url.as_str()))?;
    let run_id = m
        .catalog
        .begin_run("incremental", Some(source_id), arguments)?;
    summary.run_id = Some(run_id);

    let result = (|| {
        for (format, collections) in
            formats::by_format(to_follow(&docs, &m.catalog, (&source, s.from.is_some()))?)
        {
            let mut ctx = m.context(&http, &docs, (source_id, run_id), &mut summary, progress);
            format.incremental(&mut ctx, s, collections)?;
        }
        // A source turned to full mirroring: the bytes its metadata-only versions lack.
        let mut ctx = m.context(&http, &docs, (source_id, run_id), &mut summary, progress);
        crate::engine::lacking::fetch(&mut ctx, s.jobs)?;
        Ok::<(), Error>(())
    })();
    progress.finish();
    summary.seconds = started.elapsed().as_secs_f64();
    let Some(why) = result.as_ref().err().and_then(|e| handed_over(e, s.on_gap)) else {
        return m.finish(run_id, summary, result);
    };
    // What the changes cannot do, the list does: this run ends as what it is (a success that
    // found nothing to apply by changes, with a warning that says why), and a baseline run
    // reads the current list, deleting nothing.
    let e = result.expect_err("handed over at an error");
    let warning = format!("{e}: {why}");
    // A gap crossed (or a sync point missing) is recorded as such; a source that publishes no
    // changes is simply followed by its list, every run, as a plain Sitemap is.
    let gap = !matches!(
        e,
        Error::NeedsBaseline {
            why: NeedsBaseline::NoChanges,
            ..
        }
    );
    if gap {
        let row = (
            source.clone(),
            crate::model::ProblemClass::Gap,
            warning.clone(),
        );
        crate::store::run_records::record_problems(&m.catalog, run_id, &[row])?;
        summary.warnings.push(warning.clone());
    }
    m.finish(run_id, summary, Ok(()))?;
    // The lock goes with the mirror: the baseline takes it again, as a run of its own.
    drop(m);
    if s.output.verbose > 0 {
        progress.println(&format!("incremental: {warning}"));
    }
    let source = settings::SourceSettings {
        source,
        ..s.source.clone()
    };
    let crossing = gap.then(|| format!("incremental run {run_id}: {e}"));
    let b = rebaseline(s, source, crossing);
    let arguments = format!("{arguments} [{why} after run {run_id}]");
    crate::commands::baseline::run(&b, &arguments, progress)
}

/// Whether an incremental run that stopped at `e` hands its source to a baseline, and why: a
/// gap in the change history or a collection without a sync point (a first baseline that
/// did not finish) with `--on-gap rebaseline`; a source that publishes no changes always (it
/// is followed by its list, as a plain Sitemap is).
fn handed_over(e: &Error, on_gap: OnGap) -> Option<&'static str> {
    let rebaseline = on_gap == OnGap::Rebaseline;
    match e {
        Error::Source(SourceError::Gap { .. }) if rebaseline => Some("--on-gap rebaseline"),
        Error::NeedsBaseline {
            why: NeedsBaseline::NoSyncPoint,
            ..
        } if rebaseline => Some("--on-gap rebaseline"),
        Error::NeedsBaseline {
            why: NeedsBaseline::NoChanges,
            ..
        } => Some("no changes published: its list read again"),
        _ => None,
    }
}

/// `s` with what its source (as [`source_of`] finds it) keeps for every option neither the
/// command line nor the environment gave (`SourceSettings::with_kept`: the filter, delay,
/// timeout, jobs, hosts, headers). A mirror or a source that cannot be found keeps nothing:
/// the run says why when it opens the mirror.
fn with_kept(s: &settings::Incremental) -> Result<settings::Incremental, Error> {
    let catalog = Catalog::open_read_only(&s.mirror).ok().flatten();
    let Some(source) = catalog.and_then(|c| source_of(s, &c).ok()) else {
        return Ok(s.clone());
    };
    let url = discover::source_url(&source)?.to_string();
    let source = s.source.with_kept(&s.mirror, &url)?;
    if s.output.verbose > 0 && !source.from_kept.is_empty() {
        say!("kept with {url}: {}", source.from_kept);
    }
    Ok(settings::Incremental {
        jobs: source.jobs.unwrap_or(s.jobs),
        source,
        ..s.clone()
    })
}

/// The SOURCE given, else the one the mirror remembers. A SOURCE given is a source the mirror
/// follows, or a document one of them published (a Change List given directly: that source is
/// followed, not a second one registered); another is refused, unless `--from` or `--on-gap
/// rebaseline` says to start following it here.
fn source_of(s: &settings::Incremental, catalog: &Catalog) -> Result<String, Error> {
    if s.source_given {
        let given = &s.source.source;
        let url = discover::source_url(given)?.to_string();
        return match catalog.source_state(&url)? {
            Some(None) => Ok(given.clone()),
            Some(Some(removed)) => Err(settings::UsageError(format!(
                "the mirror no longer follows {url} (removed {removed}): rsmirror baseline \
                 {url} follows it again"
            ))
            .into()),
            None => match catalog.source_of_document(&url)? {
                Some(owner) => Ok(owner),
                None if s.from.is_some() || s.on_gap == OnGap::Rebaseline => Ok(given.clone()),
                None => Err(settings::UsageError(format!(
                    "the mirror does not follow {url}: rsmirror baseline {url} first (rsmirror \
                     source list says which sources it follows)"
                ))
                .into()),
            },
        };
    }
    catalog.remembered_source()?.ok_or_else(|| {
        Error::Usage(settings::UsageError(format!(
            "the mirror at {} remembers no source: give SOURCE, or run rsmirror baseline first",
            s.mirror.display()
        )))
    })
}

/// The collections to follow for `source`: a source the mirror knows to be of a format whose
/// records name what it follows (SCP, ARC) goes straight to that format, not discovered again
/// (a run with nothing new makes only conditional requests); otherwise discovery.
///
/// The Change Lists the mirror knows the source publishes its changes in (each collection's,
/// as its Capability List named it at the last run, and the open lists read last) are asked
/// for at once, conditionally as the run will ask for them (not under `--from`, which reads
/// them whole): they come with the documents that name them rather than a round trip after
/// them.
fn to_follow(
    docs: &Documents<'_>,
    catalog: &Catalog,
    (source, replay): (&str, bool),
) -> Result<Vec<Collection>, Error> {
    let url = discover::source_url(source)?;
    if let Some(kind) = catalog.source_kind(url.as_str())? {
        let kind = SourceKind::parse(&kind);
        if formats::of(kind).follows_its_records() {
            return Ok(vec![Collection::other(kind, &url)]);
        }
    }
    if !replay {
        for (list, etag, last_modified) in catalog.change_lists_ahead(url.as_str(), SENT_AHEAD)? {
            let Ok(list) = Url::parse(&list) else {
                continue;
            };
            let validators = Validators {
                etag,
                last_modified,
            };
            docs.http
                .send_ahead(&list, &docs.scope_for(&list), &validators);
        }
    }
    Ok(discover::discover(docs, source, None)?.collections)
}

/// Change Lists asked for ahead, at most: a collection's (or its index and the open list in
/// it), for a few collections (most sources have one).
const SENT_AHEAD: usize = 4;
