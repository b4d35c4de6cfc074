//! `rsmirror audit`: prove the mirror matches the source and its own bytes (ResourceSync 1.1
//! §10.3), and say so in a report people can file.
//!
//! Three checks, each a collector of [`Finding`]s that never stops at the first problem:
//! the catalog (`PRAGMA integrity_check`, or `quick_check` below `--level fixity`); local
//! fixity of the stored objects (`audit::fixity`); and, unless `--offline`, the source's
//! expected state compared resource by resource with the mirror's current state through
//! `plan::compare`, the comparison baseline plans with. The mirror's side is held in a compact
//! index (`audit::mirror_states`) and the source's list is streamed through it
//! (each format's walk, `Format::expected_state`), so a list of a million entries is audited in
//! bounded memory. A mirror larger than `PASS_RESOURCES` is audited in passes, each holding
//! the states of one slice of the URIs' keys (the `--sample` slicing, composed with the user's
//! sample): the source's list is walked once into a spill (`audit::spill`) that each pass reads
//! again, each pass leaves its marks as one byte per resource in URI order (`ByRank`), and
//! local fixity takes the catalog-scan path (`fixity::check`), bounded at any size.
//!
//! Findings are reported after every check has run, in URI order, the same ones to every
//! form (lines on stdout, `--json`, `--report FILE`) and, except the `=` ones, to the
//! catalog's `audit_findings`. If the source cannot be read, nothing is said about it: no
//! resource is called in sync, the local findings are still reported, and the exit code is 4.
//! Audit takes the lock and records its run, and never writes content.

pub mod finding;
pub mod fixity;
pub mod mirror_states;
pub mod refetch;
pub mod repair;
pub mod spill;

use crate::audit::finding::{Class, Counts, Finding, Form, Header, Sink, Totals, Verification};
use crate::audit::fixity::Fixity;
use crate::audit::mirror_states::{in_sample, mark, slice_of, uri_key, HexBuf, Key, MirrorStates};
use crate::audit::spill::{Entry, SpillWriter};
use crate::engine::discover::{self, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::expected::{Item, Warnings};
use crate::engine::format::{Formats, OwnAudit};
use crate::engine::plan::{self, Comparison, Listed};
use crate::error::{Error, SourceError};
use crate::exit::Exit;
use crate::net::Http;
use crate::settings::{self, UsageError};
use crate::settings::{AuditLevel, ReportFormat};
use crate::store::audit_records::{self, FindingLog};
use crate::store::{Catalog, MirrorLock, StoreError};
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, BufWriter, IsTerminal};
use std::iter::Peekable;
use std::time::Instant;

pub(crate) fn run(s: &settings::Audit, formats: &Formats, arguments: &str) -> Result<Exit, Error> {
    let started = Instant::now();
    // Offline, nothing is read from the source: a remembered --map folder that is gone
    // does not matter then.
    let s = &settings::Audit {
        source: match s.offline {
            true => s.source.clone(),
            false if s.source.takes_remembered_maps() => s
                .source
                .with_maps(crate::store::history::remembered_maps(&s.mirror)?)?,
            false => s.source.clone(),
        },
        ..s.clone()
    };
    let started_at = jiff::Timestamp::now().to_string();
    let (_lock, catalog, read_only) = open_mirror(s)?;
    let source = match s.offline {
        true => None,
        false => Some(source_of(s, &catalog)?),
    };
    // Without SOURCE, every source the mirror follows is compared, in one report.
    let also: Vec<String> = match (&source, s.source_given) {
        (Some(first), false) => catalog
            .followed_sources()?
            .into_iter()
            .filter(|(_, _, synced)| *synced)
            .map(|(url, _, _)| url)
            .filter(|url| {
                url != first && discover::source_url(url).is_ok_and(|u| u.as_str() != first)
            })
            .collect(),
        _ => Vec::new(),
    };
    // The first source's own options (its filter, delay, timeout, hosts, headers), where the
    // command line gave none.
    let s = &match &source {
        Some(src) => {
            let url = discover::source_url(src)?.to_string();
            let kept = catalog.source_kept(&url)?.unwrap_or_default();
            settings::Audit {
                source: s.source.with(&kept, &url)?,
                ..s.clone()
            }
        }
        None => s.clone(),
    };
    let s = &settings::Audit {
        source_filters: source_filters(s, &catalog, source.as_deref(), &also)?,
        ..s.clone()
    };
    let report_file = report_file(s)?;
    // An audit of every source the mirror follows is the whole mirror's, recorded with none.
    let source_id = match &source {
        Some(src) if also.is_empty() => known_source_id(&catalog, src)?,
        _ => None,
    };
    let run_id = match read_only {
        false => Some(catalog.begin_run("audit", source_id, arguments)?),
        true => None,
    };
    let header = Header {
        run_id,
        started_at,
        mirror: s.mirror.display().to_string(),
        source: source.as_ref().map(|first| {
            std::iter::once(first)
                .chain(&also)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        }),
        level: s.level.name(),
        sample: s.sample.map(|(n, m)| format!("{n}/{m}")),
        all_versions: s.all_versions,
        offline: s.offline,
        require_fixity: s.require_fixity,
    };
    let mut sinks = vec![stdout_sink(s)];
    let has_file = report_file.is_some();
    sinks.extend(report_file);
    for sink in &mut sinks {
        sink.begin(&header);
    }

    let mut totals = Totals::default();
    let against = Against {
        formats,
        source: source.as_deref(),
        also: &also,
    };
    let result = check_and_report(s, against, &catalog, run_id, &mut sinks, &mut totals);
    totals.seconds = started.elapsed().as_secs_f64();
    conclude(s, &catalog, run_id, result, &mut totals, sinks, has_file)
}

/// End the audit: its exit code from what was found, every report closed, the run recorded,
/// stderr told; a report file that could not be written fails the audit.
fn conclude(
    s: &settings::Audit,
    catalog: &Catalog,
    run_id: Option<i64>,
    result: Result<Verdict, Error>,
    totals: &mut Totals,
    mut sinks: Vec<Sink>,
    has_file: bool,
) -> Result<Exit, Error> {
    let exit = match &result {
        Err(e) => e.exit(),
        Ok(Verdict::SourceIncomplete) => Exit::Source,
        Ok(Verdict::Done) if totals.counts.differences(s.require_fixity) > 0 => Exit::Differences,
        Ok(Verdict::Done) => Exit::Ok,
    };
    totals.exit_code = exit.code();
    if let Err(e) = &result {
        totals.error = Some(e.to_string());
    }
    for sink in &mut sinks {
        sink.end(totals);
    }
    // Stdout's sinks (the report file's is judged below): output they could not write.
    let on_stdout = sinks.len() - usize::from(has_file);
    for sink in &sinks[..on_stdout] {
        if let Some(e) = sink.error() {
            crate::report::output_failed(e);
        }
    }
    let report_broken = has_file
        .then(|| sinks.last().and_then(|k| k.error()).map(|e| e.to_string()))
        .flatten();
    drop(sinks);
    let (outcome, recorded_exit) = match &result {
        _ if report_broken.is_some() => ("failed", Exit::Store),
        Ok(Verdict::Done) => ("ok", exit),
        Ok(Verdict::SourceIncomplete) => ("partial", exit),
        Err(_) => ("failed", exit),
    };
    match run_id {
        Some(run_id) => catalog.end_run(
            run_id,
            outcome,
            recorded_exit.code(),
            &counts_json(totals, s),
        )?,
        None if s.output.verbose > 0 || exit != Exit::Ok => say!(
            "audit: {} is read-only: this audit is not recorded in its catalog",
            s.mirror.display()
        ),
        None => {}
    }
    tell(s, totals, exit, &result);
    if let Some(e) = report_broken {
        let path = s
            .report
            .as_ref()
            .map(|(p, _)| p.as_path())
            .unwrap_or(std::path::Path::new(""));
        return Err(StoreError::io("writing the report", path, io::Error::other(e)).into());
    }
    result.map(|_| exit)
}

/// The mirror's lock and catalog. A mirror on read-only media (a WORM volume, a snapshot, a
/// replica) cannot take the lock or record a run; an offline audit reads it all the same (no
/// lock, the catalog read-only: `true`) and says that it was not recorded. Against the source
/// it stays refused: that audit is a run of the mirror's.
fn open_mirror(s: &settings::Audit) -> Result<(Option<MirrorLock>, Catalog, bool), Error> {
    if !Catalog::present(&s.mirror)? {
        return Err(StoreError::Missing {
            path: s.mirror.display().to_string(),
        }
        .into());
    }
    let (lock, read_only) = match MirrorLock::acquire(&s.mirror) {
        Ok(lock) => (Some(lock), false),
        Err(crate::store::lock::LockError::Io { source, .. })
            if s.offline && is_read_only(&source) =>
        {
            (None, true)
        }
        Err(e) => return Err(e.into()),
    };
    let catalog = match read_only {
        false => Catalog::open(&s.mirror)?,
        true => Catalog::open_read_only(&s.mirror)?.ok_or_else(|| StoreError::Missing {
            path: s.mirror.display().to_string(),
        })?,
    };
    // Its reads are sequential (its share of the states load, the URIs in order for the report),
    // so SQLite's default 2 MB page cache only added to the peak: 1.5 MB of a 1M audit's 97.
    audit_records::small_page_cache(&catalog)?;
    if !read_only {
        catalog.abandon_unfinished_runs()?;
    }
    Ok((lock, catalog, read_only))
}

/// `--report FILE`: the sink that writes it, created now (a path that cannot be written is a
/// usage error before anything is checked).
fn report_file(s: &settings::Audit) -> Result<Option<Sink>, Error> {
    let Some((path, format)) = &s.report else {
        return Ok(None);
    };
    let file = std::fs::File::create(path)
        .map_err(|e| UsageError(format!("--report {}: cannot write it: {e}", path.display())))?;
    let form = match format {
        ReportFormat::Text => Form::Text,
        ReportFormat::Json => Form::Json,
        ReportFormat::Csv => Form::Csv,
    };
    Ok(Some(Sink::new(Box::new(BufWriter::new(file)), form)))
}

/// What goes to stdout: lines, or `--json`.
fn stdout_sink(s: &settings::Audit) -> Sink {
    if s.output.json {
        // The report says a failure itself (`summary.error`).
        crate::report::set_document_on_stdout();
    }
    Sink::new(
        Box::new(BufWriter::new(io::stdout().lock())),
        if s.output.json {
            Form::Json
        } else {
            Form::Lines {
                verbose: s.output.verbose > 0,
                require_fixity: s.require_fixity,
            }
        },
    )
}

/// What stderr hears at the end: the summary line (on a terminal, with `-v`, or when the
/// audit did not come out clean), the verifications, warnings and phases with `-v`/`-vv`,
/// and why a source error is one.
fn tell(s: &settings::Audit, totals: &Totals, exit: Exit, result: &Result<Verdict, Error>) {
    let tty = io::stderr().is_terminal();
    if crate::report::json_stderr() {
        // The audit report's summary (`schemas/audit-report.schema.json`), as the last line.
        crate::report::json_on_stderr(serde_json::json!({
            "message_type": "summary",
            "time": crate::report::now_shown(),
            "summary": totals.to_json(),
        }));
    } else if !s.output.quiet && (exit != Exit::Ok || tty || s.output.verbose > 0) {
        say!("{}", totals.line(s.level));
    }
    if s.output.verbose > 0 {
        for (collection, v) in &totals.verification {
            say!("verified: {collection}: {}", v.line());
        }
        for w in &totals.warnings {
            crate::report::said("warning", &format!("warning: {w}"));
        }
    }
    if s.output.verbose > 1 {
        for (phase, secs) in &totals.phases {
            say!("time: {phase}: {secs:.3} s");
        }
    }
    if let Ok(Verdict::SourceIncomplete) = result {
        say!(
            "rsmirror: source error: {} part(s) of the source's list could not be read (the `!` source findings); what they list was not compared",
            totals.counts.get(Class::Source)
        );
    }
}

/// How the checks ended (when they did not end in an [`Error`]).
enum Verdict {
    Done,
    /// Part of the source's list could not be read: whatever was compared is reported, but
    /// the audit cannot call the mirror complete (exit 4).
    SourceIncomplete,
}

/// Run every check, then report every finding in order. A source that cannot be read at all
/// ends in `Err(Source)` after the local findings are reported.
fn check_and_report(
    s: &settings::Audit,
    against: Against<'_>,
    catalog: &Catalog,
    run_id: Option<i64>,
    sinks: &mut [Sink],
    totals: &mut Totals,
) -> Result<Verdict, Error> {
    let started = Instant::now();
    let checked = check(s, against, catalog, totals)?;
    totals
        .phases
        .push(("all checks (concurrent)", since(started)));
    let report_started = Instant::now();
    let (compared, failed_parts) =
        report((catalog, &s.source_filters), run_id, checked, sinks, totals)?;
    totals.phases.push(("report", since(report_started)));
    match compared {
        Compared::Failed(e) => Err(e.into()),
        _ if failed_parts > 0 => Ok(Verdict::SourceIncomplete),
        _ => Ok(Verdict::Done),
    }
}

/// Seconds since `t`.
fn since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// What the checks found, for the report.
struct Checked {
    catalog_findings: Vec<Finding>,
    marks: Marks,
    compared: Compared,
    /// What the formats that compare by a rule of their own found.
    own: Option<OwnAudit>,
    fixity: Fixity,
}

/// Run every check: the catalog's own, local fixity and (unless offline) the comparison with
/// the source, side by side.
/// What an audit compares the mirror with: the source (and the `--also` ones), read by these
/// formats; no source for an offline audit.
#[derive(Clone, Copy)]
struct Against<'a> {
    formats: &'a Formats,
    source: Option<&'a str>,
    also: &'a [String],
}

fn check(
    s: &settings::Audit,
    against: Against<'_>,
    catalog: &Catalog,
    totals: &mut Totals,
) -> Result<Checked, Error> {
    let Against {
        formats,
        source,
        also,
    } = against;
    // Local fixity and the catalog check run on their own threads and read-only connections,
    // while the main thread loads the index of current states and compares with the source.
    // Below `--level fixity` and without `--all-versions`, local fixity takes its claims from
    // that index (`fixity::check_current`, no second scan of the catalog): it starts once the
    // index is loaded, beside the comparison.
    let fixity_options = fixity::Options {
        level: s.level,
        all_versions: s.all_versions,
        sample: s.sample,
        jobs: s.jobs,
        quiet: s.output.quiet,
    };
    // A mirror too large to hold in one pass is audited in several, each over a slice of the
    // URIs' keys: the source's list is walked once, into a spill, and read again by each pass.
    let (passes, resources) = passes(catalog, s.sample)?;
    if passes > 1 && s.output.verbose > 0 && !s.offline {
        say!("audit: {resources} resources in {passes} passes (one slice of the URIs' keys each)");
    }
    let from_states = !s.level.hashes() && !s.all_versions && passes == 1;
    // The states are loaded only for what reads them: the comparison with the source, and
    // local fixity below `--level fixity`. An offline audit that hashes needs only to know
    // which resources are deletions, which one scan of the catalog says (at any size).
    let single = passes == 1 && (from_states || !s.offline);
    let comparing = Comparing {
        s,
        formats,
        catalog,
        source,
        also,
        fixity_options,
        from_states,
        passes,
        resources,
    };
    let (early_fixity, main) = std::thread::scope(|sc| {
        let early = (!from_states).then(|| sc.spawn(|| fixity::check(&s.mirror, fixity_options)));
        let check = sc.spawn(|| {
            let t = Instant::now();
            let found = fixity::open_for_scan(&s.mirror).and_then(|c| catalog_check(&c, s.level));
            (found, since(t))
        });
        let main = match single {
            true => comparing.in_one_pass(),
            false => comparing.in_passes(),
        };
        let (catalog_findings, t) = check.join().expect("the catalog check does not panic");
        totals.phases.push(("catalog check", t));
        (
            early.map(|h| h.join().expect("local fixity does not panic")),
            catalog_findings.and_then(|f| main.map(|m| (f, m))),
        )
    });
    let (catalog_findings, side) = main?;
    side.phases.record(totals, single, &side.compared);
    let fixity = early_fixity
        .or(side.fixity)
        .expect("local fixity ran early or from the states")?;
    if side.marks.collisions() > 0 {
        totals.warnings.push(format!(
            "{} URIs share a 128-bit key with another: those are compared as one",
            side.marks.collisions()
        ));
    }
    totals.objects_checked = fixity.objects_checked;
    totals.bytes_hashed = fixity.bytes_hashed;
    totals.hashing_seconds = fixity.seconds;
    totals
        .phases
        .push(("local fixity: objects", fixity.seconds));
    totals
        .phases
        .push(("local fixity: strays", fixity.strays_seconds));
    Ok(Checked {
        catalog_findings,
        marks: side.marks,
        compared: side.compared,
        own: side.own,
        fixity,
    })
}

/// The mirror's side of the audit: the states loaded (in one pass or several) and compared
/// with the source's list.
struct Comparing<'a> {
    s: &'a settings::Audit,
    formats: &'a Formats,
    catalog: &'a Catalog,
    source: Option<&'a str>,
    also: &'a [String],
    fixity_options: fixity::Options,
    /// Local fixity takes its claims from the loaded states (one pass only).
    from_states: bool,
    passes: u64,
    resources: usize,
}

/// What [`Comparing`] gives: the marks the report reads, the phases' times, the comparison,
/// the formats' own audits, and local fixity when it ran from the states.
struct Side {
    marks: Marks,
    phases: Phases,
    compared: Compared,
    own: Option<OwnAudit>,
    fixity: Option<Result<Fixity, StoreError>>,
}

impl Comparing<'_> {
    /// Load the states within `slice`: one connection per core reads a share of them (the
    /// catalog check and the load are all that runs meanwhile).
    fn load(
        &self,
        slice: Option<(u64, u64)>,
        phases: &mut Phases,
    ) -> Result<MirrorStates, StoreError> {
        let t = Instant::now();
        let more = (1..cores())
            .map(|_| fixity::open_for_scan(&self.s.mirror))
            .collect::<Result<_, _>>()?;
        let states = MirrorStates::load(self.catalog, more, slice)?;
        phases.loading += since(t);
        Ok(states)
    }

    /// The whole mirror's states at once, the source's list streamed through them (and local
    /// fixity beside it, from the states, below `--level fixity`).
    fn in_one_pass(&self) -> Result<Side, StoreError> {
        let s = self.s;
        let mut phases = Phases::default();
        let states = self.load(s.sample, &mut phases)?;
        let t = Instant::now();
        let (options, held) = (self.fixity_options, &states);
        let (compared, fixity) = std::thread::scope(|inner| {
            let local = self
                .from_states
                .then(|| inner.spawn(move || fixity::check_current(&s.mirror, options, held)));
            let compared = self.compare_streamed(&states);
            let fixity = local.map(|h| h.join().expect("local fixity does not panic"));
            (compared, fixity)
        });
        let (mut compared, own) = compared?;
        phases.comparing += since(t);
        if let Compared::Source(c) = &mut compared {
            settle(s, self.catalog, &states, c, &mut phases)?;
        }
        Ok(Side {
            marks: Marks::States(states),
            phases,
            compared,
            own,
            fixity,
        })
    }

    /// The source's list walked and compared with `states` as it is read.
    fn compare_streamed(
        &self,
        states: &MirrorStates,
    ) -> Result<(Compared, Option<OwnAudit>), StoreError> {
        let s = self.s;
        let (walked, own) = own_audits(self.formats, self.catalog, s, self.source, self.also)?;
        let compared = match (self.source, walked.split_first()) {
            (Some(_), Some((first, rest))) => {
                let mut comparer = Comparer::new(states, s.sample, SourceComparison::new(s));
                let walk = walk_source(s, self.formats, first, rest, &mut |ord, e| {
                    comparer.take(ord, e);
                    Ok(())
                });
                match walk {
                    Ok(walk) => Compared::Source(comparer.finish_pass().finish(walk)),
                    Err(e) => Compared::Failed(e),
                }
            }
            _ => Compared::Offline,
        };
        Ok((compared, own))
    }

    /// Several passes, each over one slice of the URIs' keys: the source's list is spilled
    /// once, and each pass loads its slice's states, compares the spilled entries of that
    /// slice with them, and leaves its marks by rank (`ByRank`).
    fn in_passes(&self) -> Result<Side, StoreError> {
        let (s, catalog) = (self.s, self.catalog);
        let mut phases = Phases::default();
        let t = Instant::now();
        let (walked, own) = own_audits(self.formats, catalog, s, self.source, self.also)?;
        let (spilled, mut compared) = self.spill(&walked)?;
        phases.spilling += since(t);
        let mut by_rank = ByRank::new(self.resources);
        let Some((spill, walk)) = spilled else {
            // Nothing to compare: the marks are only which states are deletions.
            let t = Instant::now();
            by_rank.record_unmarked(catalog, s.sample)?;
            phases.recording += since(t);
            return Ok(Side {
                marks: Marks::ByRank(by_rank),
                phases,
                compared,
                own,
                fixity: None,
            });
        };
        let mut comparison = SourceComparison::new(s);
        for p in 1..=self.passes {
            let slice = pass_slice(s.sample, p, self.passes);
            let states = self.load(slice, &mut phases)?;
            let t = Instant::now();
            let mut comparer = Comparer::new(&states, slice, comparison);
            // Only this slice's entries are parsed and compared.
            let keep = |key: &Key| in_sample(key, slice);
            spill.replay(keep, |ord, e| comparer.take(ord, e))?;
            comparison = comparer.finish_pass();
            comparison.collections.clone_from(&walk.collections);
            phases.comparing += since(t);
            settle(s, catalog, &states, &mut comparison, &mut phases)?;
            let slice = slice.expect("a pass of several has a slice");
            let t = Instant::now();
            by_rank.record(catalog, &states, slice)?;
            phases.recording += since(t);
        }
        compared = Compared::Source(comparison.finish(walk));
        Ok(Side {
            marks: Marks::ByRank(by_rank),
            phases,
            compared,
            own,
            fixity: None,
        })
    }

    /// The source's list walked into a spill in `staging/` (none offline, or when the source
    /// could not be read: then the comparison says why).
    #[allow(clippy::type_complexity)]
    fn spill(
        &self,
        walked: &[String],
    ) -> Result<(Option<(crate::audit::spill::Spill, Walk)>, Compared), StoreError> {
        let s = self.s;
        let (Some(_), Some((first, rest))) = (self.source, walked.split_first()) else {
            return Ok((None, Compared::Offline));
        };
        let mut writer = SpillWriter::create(&s.mirror.join("staging"))?;
        let mut failed = None;
        let walk = walk_source(s, self.formats, first, rest, &mut |_, e| {
            writer.push(&e).map_err(|e| {
                let stop = SourceError::Unusable {
                    url: first.clone(),
                    message: e.to_string(),
                };
                failed = Some(e);
                stop
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(match walk {
            Ok(walk) => (Some((writer.finish()?, walk)), Compared::Offline),
            Err(e) => (None, Compared::Failed(e)),
        })
    }
}

/// Report every finding, in order, to every sink and (with a run) to the catalog: the
/// resources' findings in URI order, then the other local ones, the formats' own, the parts of
/// the source that could not be read and the catalog's. Returns the comparison (a failed one
/// says why) and how many parts of the source could not be read.
fn report(
    (catalog, filters): (&Catalog, &[(String, crate::model::Filter)]),
    run_id: Option<i64>,
    checked: Checked,
    sinks: &mut [Sink],
    totals: &mut Totals,
) -> Result<(Compared, usize), StoreError> {
    let Checked {
        catalog_findings,
        marks,
        mut compared,
        own,
        fixity,
    } = checked;
    // Findings are recorded with the run; a read-only mirror records none.
    let log = match run_id {
        Some(run_id) => Some(FindingLog::begin(catalog, run_id)?),
        None => None,
    };
    let mut emitter = Emitter {
        sinks,
        counts: Counts::default(),
        by_resource: Counts::default(),
        last: None,
        log: log.as_ref(),
    };
    let mut source_findings = BTreeMap::new();
    let mut failed_parts = Vec::new();
    let mut complete = false;
    if let Compared::Source(c) = &mut compared {
        totals.verification = std::mem::take(&mut c.verifying.counts);
        totals.listed = c.listed;
        totals.warnings.append(&mut c.warnings);
        std::mem::swap(&mut source_findings, &mut c.findings);
        std::mem::swap(&mut failed_parts, &mut c.failed_parts);
        complete = failed_parts.is_empty();
    }
    let mode = match &compared {
        Compared::Offline => Mode::Offline,
        Compared::Source(_) => Mode::Source { complete },
        Compared::Failed(_) => Mode::Failed,
    };
    let Fixity { by_uri, other, .. } = fixity;
    totals.resources = report_by_uri(
        (catalog, filters),
        &marks,
        mode,
        source_findings,
        by_uri,
        &mut emitter,
    )?;
    for f in other {
        emitter.emit(f)?;
    }
    if let Some(own) = own {
        // What a format compared by its own rule (SCP pages and collections).
        totals.listed += own.listed;
        totals.warnings.extend(own.warnings);
        for f in own.findings {
            emitter.emit(f)?;
        }
        failed_parts.extend(own.failed_parts);
        if let Some(e) = own.source_error {
            compared = Compared::Failed(e);
        }
    }
    for (url, why) in failed_parts.iter() {
        emitter.emit(
            Finding::new(Class::Source)
                .uri(url.clone())
                .actual(why.clone()),
        )?;
    }
    for f in catalog_findings {
        emitter.emit(f)?;
    }
    totals.counts = std::mem::take(&mut emitter.counts);
    totals.by_resource = std::mem::take(&mut emitter.by_resource);
    drop(emitter);
    if let Some(log) = log {
        log.commit()?;
    }
    Ok((compared, failed_parts.len()))
}

impl Phases {
    /// The phases' times, in the order people read them.
    fn record(&self, totals: &mut Totals, single: bool, compared: &Compared) {
        if !single {
            totals
                .phases
                .push(("reading the source's list into staging/", self.spilling));
            totals
                .phases
                .push(("recording each pass's marks", self.recording));
        }
        totals.phases.push(("loading current states", self.loading));
        totals.phases.push(("source comparison", self.comparing));
        if let Compared::Source(_) = compared {
            totals.phases.push(("refetch", self.refetching));
        }
    }
}

/// `--refetch`: fetch the candidates again, then mark each: `=` when the bytes agree; a `*`
/// finding (field `sha-256`, expected the source's, actual the mirror's) when they do not; a
/// `?` finding saying why when only the server's 304 or nothing at all answered.
fn refetch_and_mark(
    s: &settings::Audit,
    catalog: &Catalog,
    states: &MirrorStates,
    c: &mut SourceComparison,
) -> Result<(), StoreError> {
    let Some(mode) = s.refetch else {
        return Ok(());
    };
    let Some(candidates) = c.verifying.candidates.take()? else {
        return Ok(());
    };
    // Each job made as it goes out: the candidates stay on disk until then.
    let mut buf = HexBuf::default();
    let jobs = candidates.map(|candidate| {
        let candidate = candidate?;
        let mirror_sha256 = states
            .view(candidate.slot, &mut buf)
            .sha256_hex
            .unwrap_or_default()
            .to_string();
        let validators = match mode.bytes {
            true => crate::model::Validators::default(),
            false => {
                let (etag, last_modified) = catalog.current_validators(candidate.uri.as_str())?;
                crate::model::Validators {
                    etag,
                    last_modified,
                }
            }
        };
        Ok::<_, StoreError>(refetch::Job {
            candidate,
            mirror_sha256,
            validators,
        })
    });
    let staging = s.mirror.join("staging");
    std::fs::create_dir_all(&staging).map_err(|e| StoreError::io("creating", &staging, e))?;
    let http = s.source.http();
    let uri_of = |job: &refetch::Job| job.candidate.uri.to_string();
    refetch::run(&http, &staging, jobs, |job, outcome| {
        let slot = job.candidate.slot;
        let counts = c
            .verifying
            .counts
            .entry(job.candidate.collection.to_string())
            .or_default();
        // The comparison's verdict is replaced by what the bytes (or the server) said.
        states.clear(slot, mark::SAME | mark::UNVERIFIABLE | mark::NO_EVIDENCE);
        let unverifiable = |why: String| {
            Finding::new(Class::Unverifiable)
                .uri(uri_of(&job))
                .field("digest")
                .actual(why)
        };
        match outcome {
            refetch::Outcome::Same => {
                counts.refetched_bytes += 1;
                // A lastmod that alone differed is a touch: the bytes are the mirror's.
                if states.marks(slot) & mark::DIFFERS != 0 {
                    states.clear(slot, mark::DIFFERS);
                    c.findings.remove(&uri_of(&job));
                }
                states.set(slot, mark::SAME);
            }
            refetch::Outcome::Differs(source_sha256) => {
                counts.refetched_differs += 1;
                states.set(slot, mark::DIFFERS);
                let f = Finding::new(Class::Changed)
                    .uri(uri_of(&job))
                    .field("sha-256")
                    .expected(source_sha256)
                    .actual(job.mirror_sha256.clone())
                    .hint("the source serves other bytes under the same metadata: run rsmirror baseline SOURCE to fetch them (the mirror's version stays)");
                c.findings.entry(uri_of(&job)).or_default().push(f);
            }
            refetch::Outcome::NotModified => {
                counts.claimed_unchanged += 1;
                states.set(slot, mark::CLAIMED);
            }
            refetch::Outcome::Failed(why) => {
                counts.unverified += 1;
                let f = unverifiable(format!("refetch failed: {why}"));
                c.findings.entry(uri_of(&job)).or_default().push(f);
            }
        }
    })
}

/// Several sources in one mirror: the resources of collections this audit did not compare
/// are marked, so that none is called extra (`-`) for being absent from another source's list.
/// Only a mirror whose sync points name other collections pays for the scan.
fn mark_other_collections(
    catalog: &Catalog,
    states: &MirrorStates,
    compared: &[String],
) -> Result<(), StoreError> {
    let others: Vec<String> = catalog
        .sync_points()?
        .into_iter()
        .map(|p| p.collection)
        .filter(|c| !compared.contains(c))
        .collect();
    for c in &others {
        audit_records::each_uri_of_collection(catalog, c, |uri| {
            states.set_by_uri(uri, mark::ELSEWHERE)
        })?;
    }
    Ok(())
}

/// EROFS, or no permission to write: a mirror on read-only media (or mounted so).
fn is_read_only(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
    )
}

/// What the source comparison gave.
// One value per audit: boxing the comparison would only move it.
#[allow(clippy::large_enum_variant)]
enum Compared {
    Offline,
    Source(SourceComparison),
    /// The source could not be read: nothing about it is reported.
    Failed(SourceError),
}

#[derive(Clone, Copy)]
enum Mode {
    Offline,
    Source { complete: bool },
    Failed,
}

#[derive(Default)]
struct SourceComparison {
    /// Findings per URI that need the source's side to say (`*`, `+`, refused), held until
    /// the whole list has been read.
    findings: BTreeMap<String, Vec<Finding>>,
    failed_parts: Vec<(String, String)>,
    warnings: Vec<String>,
    listed: u64,
    /// How the resources were shown to match, and what `--refetch` is to fetch again.
    verifying: Verifying,
    /// The collections compared: resources of others are not this audit's to call extra.
    collections: Vec<String>,
    /// URIs listed again (the later entry counts), in list order whichever pass met them.
    twice: InListOrder,
}

impl SourceComparison {
    fn new(s: &settings::Audit) -> SourceComparison {
        let mut c = SourceComparison::default();
        c.verifying.refetch = s.refetch;
        c.verifying.candidates = refetch::Candidates::new(s.mirror.join("staging"));
        c
    }

    /// With what the walk said: the comparison's warnings, then the walk's.
    fn finish(mut self, walk: Walk) -> SourceComparison {
        let mut warnings = std::mem::take(&mut self.twice);
        for (i, (after, w)) in walk.warnings.into_iter().enumerate() {
            warnings.push((after, 0, i as u32), w);
        }
        self.warnings = warnings.into_vec();
        self.failed_parts = walk.failed_parts;
        self.collections = walk.collections;
        self
    }
}

/// What the comparison learns of how each resource can be proved: the per-collection counts,
/// and the resources `--refetch` fetches again (those no digest proved, or all of them).
#[derive(Default)]
struct Verifying {
    refetch: Option<settings::Refetch>,
    collection: std::sync::Arc<str>,
    /// On disk in `staging/` until the comparison is done.
    candidates: refetch::Candidates,
    counts: BTreeMap<String, Verification>,
}

impl Verifying {
    fn count(&mut self) -> &mut Verification {
        self.counts.entry(self.collection.to_string()).or_default()
    }

    /// A listed resource whose lastmod alone differs (no digest to compare): fetched again
    /// by `--refetch`, which calls it `=` when the bytes are the mirror's.
    fn touched(&mut self, slot: usize, l: &Listed) {
        if self.refetch.is_some() {
            self.refetch_later(slot, l);
        }
    }

    fn refetch_later(&mut self, slot: usize, l: &Listed) {
        self.candidates.push(refetch::Candidate {
            slot,
            uri: l.uri.clone(),
            scope: l.scope.clone(),
            collection: self.collection.clone(),
        });
    }

    /// A listed resource present in the mirror, compared.
    fn compared(&mut self, slot: usize, l: &Listed, by_digest: Option<bool>) {
        let Some(by_digest) = by_digest else { return };
        let wanted = match self.refetch {
            Some(r) => r.all || !by_digest,
            None => false,
        };
        if wanted {
            self.refetch_later(slot, l);
        } else if by_digest {
            self.count().declared_digest += 1;
        } else {
            self.count().unverified += 1;
        }
    }
}

/// What walking the source gave besides its entries.
struct Walk {
    /// The collections walked: resources of others are not this audit's to call extra.
    collections: Vec<String>,
    failed_parts: Vec<(String, String)>,
    /// The walk's own warnings, each with the number of entries handed on before it.
    warnings: Vec<(u64, String)>,
}

/// Warnings about the entries of a list, kept in list order whichever pass met them: the
/// first `Warnings::MAX` in the list, and a count of the others (as one pass would keep them).
/// A warning's place: the entry's place in the walk (or, for the walk's own warnings, the
/// number of entries walked before them), then 0 for the walk's, 1 for an entry's, then the
/// order among the walk's.
#[derive(Default)]
struct InListOrder {
    kept: BTreeMap<(u64, u8, u32), String>,
    dropped: u64,
}

impl InListOrder {
    fn push(&mut self, at: (u64, u8, u32), w: String) {
        self.kept.insert(at, w);
        if self.kept.len() > Warnings::MAX {
            self.kept.pop_last();
            self.dropped += 1;
        }
    }

    fn into_vec(self) -> Vec<String> {
        let mut out: Vec<String> = self.kept.into_values().collect();
        if self.dropped > 0 {
            out.push(format!("... and {} more warnings", self.dropped));
        }
        out
    }
}

/// Each source compared, with the resources the mirror takes of it: the first's as its
/// settings have it (given, `--no-filter`, or kept), the others' as they keep them.
fn source_filters(
    s: &settings::Audit,
    catalog: &Catalog,
    source: Option<&str>,
    also: &[String],
) -> Result<Vec<(String, crate::model::Filter)>, Error> {
    let mut out = Vec::new();
    for (i, src) in source
        .into_iter()
        .chain(also.iter().map(String::as_str))
        .enumerate()
    {
        let url = discover::source_url(src)?.to_string();
        let filter = match i {
            0 => s.source.filter.clone(),
            _ => {
                let rules = catalog.source_kept(&url)?.unwrap_or_default().filter;
                crate::model::Filter::new(rules).map_err(UsageError)?
            }
        };
        out.push((src.to_string(), filter));
    }
    Ok(out)
}

/// Discover the source (and the `also` ones) and walk every collection's expected state,
/// handing each entry to `visit` in the order the source lists it.
fn walk_source(
    s: &settings::Audit,
    formats: &Formats,
    source: &str,
    also: &[String],
    visit: &mut dyn FnMut(u64, Entry) -> Result<(), SourceError>,
) -> Result<Walk, SourceError> {
    let http = Http::new(s.source.http.clone());
    let docs = Documents {
        http: &http,
        options: s.source.read_options(),
        allow_hosts: &s.source.allow_hosts,
        // Each source's own filter is applied to its entries below.
        filter: &crate::model::Filter::default(),
        reader: &s.source.reader,
        readers: &formats.readers,
    };
    let mut collections = Vec::new();
    for src in std::iter::once(source).chain(also.iter().map(String::as_str)) {
        let filter = s.source_filters.iter().find(|(u, _)| u == src);
        let filter = filter.map(|(_, f)| f.clone()).unwrap_or_default();
        let found = discover::discover(&docs, src, None)?.collections;
        collections.extend(found.into_iter().map(|c| (c, filter.clone())));
    }
    let mut walk = Walk {
        collections: Vec::new(),
        failed_parts: Vec::new(),
        warnings: Vec::new(),
    };
    // Every entry's place in the walk (a spill's records are the same, one for one).
    let ord = std::cell::Cell::new(0u64);
    let mut visit = |e: Entry| {
        let at = ord.get();
        ord.set(at + 1);
        visit(at, e)
    };
    for (collection, filter) in collections {
        walk.collections.push(collection.id.clone());
        visit(Entry::Collection(collection.id.as_str().into()))?;
        // Each format walks its own documents; the comparison is the same.
        // What the filter leaves out is neither compared nor missing.
        let mut item = |item: Item| match &item {
            Item::Listed(l) if !filter.admits(l.uri.as_str()) => {
                visit(Entry::Skipped(l.uri.to_string()))
            }
            Item::Refused(r) if !filter.admits(&r.uri) => visit(Entry::Skipped(r.uri.clone())),
            _ => visit(Entry::Item(item)),
        };
        let expected =
            (formats.of)(collection.kind).expected_state(&docs, collection, &mut item)?;
        // What the format leaves out on purpose is neither missing nor extra.
        for uri in expected.skipped {
            visit(Entry::Skipped(uri))?;
        }
        let after = ord.get();
        let warnings = expected.walked.warnings.into_iter();
        walk.warnings.extend(warnings.map(|w| (after, w)));
        walk.failed_parts.extend(expected.walked.failed_parts);
    }
    Ok(walk)
}

/// The sources whose lists are walked and compared here, and what the formats that compare by
/// a rule of their own (SCP: `modified`, the newest snapshots) found, source by source.
fn own_audits(
    formats: &Formats,
    catalog: &Catalog,
    s: &settings::Audit,
    source: Option<&str>,
    also: &[String],
) -> Result<(Vec<String>, Option<OwnAudit>), StoreError> {
    let sources: Vec<String> = match source {
        Some(src) => std::iter::once(src.to_string())
            .chain(also.iter().cloned())
            .collect(),
        None => catalog.remembered_source()?.into_iter().collect(),
    };
    let mut own: Option<OwnAudit> = None;
    let mut walked: Vec<String> = Vec::new();
    for src in sources {
        // Read only: the catalog may be on read-only media.
        let found = match (catalog.source_kind(&src)?, catalog.known_source_id(&src)?) {
            (Some(kind), Some(id)) => {
                (formats.of)(SourceKind::parse(&kind)).audit(s, catalog, id)?
            }
            _ => None,
        };
        match found {
            Some(a) => own = Some(merge_own(own, a)),
            None => walked.push(src),
        }
    }
    Ok((walked, own))
}

/// The wall time of the phases that may run once per pass.
#[derive(Default)]
struct Phases {
    /// Several passes: walking the source into the spill.
    spilling: f64,
    /// Several passes: what each pass leaves for the report.
    recording: f64,
    loading: f64,
    comparing: f64,
    refetching: f64,
}

/// After a pass's comparison: mark the resources of collections this audit does not compare,
/// and fetch again what `--refetch` asks for.
fn settle(
    s: &settings::Audit,
    catalog: &Catalog,
    states: &MirrorStates,
    c: &mut SourceComparison,
    phases: &mut Phases,
) -> Result<(), StoreError> {
    mark_other_collections(catalog, states, &c.collections)?;
    let t = Instant::now();
    refetch_and_mark(s, catalog, states, c)?;
    phases.refetching += t.elapsed().as_secs_f64();
    Ok(())
}

/// Resources whose states one pass holds: about 80 bytes each, so that a pass stays near
/// 100 MB. `RSMIRROR_AUDIT_PASS_RESOURCES` sets another number (fewer: less memory and more
/// passes, each reading the catalog and the spilled list once more).
const PASS_RESOURCES: u64 = 1_250_000;

/// How many passes the audit takes, and how many resources the catalog has (with or without a
/// current version).
fn passes(catalog: &Catalog, sample: Option<(u64, u64)>) -> Result<(u64, usize), Error> {
    let per = match std::env::var("RSMIRROR_AUDIT_PASS_RESOURCES") {
        Err(_) => PASS_RESOURCES,
        Ok(v) => v.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
            UsageError(format!(
                "RSMIRROR_AUDIT_PASS_RESOURCES={v}: not a number of resources (1 or more)"
            ))
        })?,
    };
    let total = audit_records::resource_count(catalog)?;
    let in_sample = total.div_ceil(sample.map_or(1, |(_, m)| m));
    Ok((in_sample.div_ceil(per).max(1), total as usize))
}

/// The slice of keys pass `p` of `passes` covers, within `sample`: slice `n + m·(p − 1)` of
/// `m·passes`, since a key in slice k of m·P is in slice k mod m of m (`slice_of` takes the
/// same number modulo both). The passes cover the sample once.
fn pass_slice(sample: Option<(u64, u64)>, p: u64, passes: u64) -> Option<(u64, u64)> {
    if passes == 1 {
        return sample;
    }
    let (n, m) = sample.unwrap_or((1, 1));
    Some((n + m * (p - 1), m * passes))
}

/// What the report reads of each resource's marks: the states of a single pass, or what each
/// of several passes left, one byte per resource in URI order.
enum Marks {
    States(MirrorStates),
    ByRank(ByRank),
}

impl Marks {
    fn collisions(&self) -> u64 {
        match self {
            Marks::States(states) => states.collisions,
            Marks::ByRank(b) => b.collisions,
        }
    }

    /// The marks of the resource `uri`, the `rank`-th in URI order, and whether it is deleted:
    /// `None` when it has no current state within the sample.
    fn of(&self, rank: usize, uri: &str) -> Option<(u8, bool)> {
        match self {
            Marks::States(states) => states
                .find(&uri_key(uri))
                .map(|i| (states.marks(i), states.deleted(i))),
            Marks::ByRank(b) => b.get(rank),
        }
    }

    /// The marks of every current state within the sample, and whether it is deleted.
    fn each(&self) -> Box<dyn Iterator<Item = (u8, bool)> + '_> {
        match self {
            Marks::States(states) => {
                Box::new((0..states.len()).map(|i| (states.marks(i), states.deleted(i))))
            }
            Marks::ByRank(b) => Box::new((0..b.marks.len()).filter_map(|r| b.get(r))),
        }
    }
}

/// The marks each pass left, by the resource's rank in URI order (`SELECT uri FROM resources
/// ORDER BY uri`: no writer runs while the audit holds the lock, so the order is the same at
/// every pass and at the report).
struct ByRank {
    marks: Vec<u8>,
    /// The slice of each resource's key, modulo 256, found by the first pass: later passes
    /// hash only the URIs of their own slice (and a 256th of the others, beyond 256 slices).
    slices: Vec<u8>,
    collisions: u64,
}

impl ByRank {
    /// No current state (or not in the sample). The marks fill seven bits, and SAME and
    /// DIFFERS are never both set, so a recorded byte is never this.
    const ABSENT: u8 = 0xFF;
    const DELETED: u8 = 0x80;

    fn new(resources: usize) -> ByRank {
        ByRank {
            marks: vec![Self::ABSENT; resources],
            slices: Vec::new(),
            collisions: 0,
        }
    }

    fn set(&mut self, at: usize, marks: u8, deleted: bool) {
        debug_assert!(marks & Self::DELETED == 0);
        let b = marks | if deleted { Self::DELETED } else { 0 };
        debug_assert_ne!(b, Self::ABSENT);
        if at >= self.marks.len() {
            self.marks.resize(at + 1, Self::ABSENT);
        }
        self.marks[at] = b;
    }

    fn get(&self, rank: usize) -> Option<(u8, bool)> {
        match self.marks.get(rank).copied() {
            None | Some(Self::ABSENT) => None,
            Some(b) => Some((b & !Self::DELETED, b & Self::DELETED != 0)),
        }
    }

    /// Without a comparison (offline, or the source could not be read), what the report needs
    /// of the states: which resources have one within `sample`, and which are deletions. One
    /// scan of the catalog in URI order, no states held.
    fn record_unmarked(
        &mut self,
        catalog: &Catalog,
        sample: Option<(u64, u64)>,
    ) -> Result<(), StoreError> {
        let mut rank = 0usize;
        audit_records::each_resource_deletion_in_order(catalog, |uri, deleted| {
            let at = rank;
            rank += 1;
            let Some(deleted) = deleted else {
                return Ok(());
            };
            if sample.is_some() && !in_sample(&uri_key(uri), sample) {
                return Ok(());
            }
            self.set(at, 0, deleted);
            Ok(())
        })
    }

    /// Keep what the pass over slice `k` of `m` marked.
    fn record(
        &mut self,
        catalog: &Catalog,
        states: &MirrorStates,
        (k, m): (u64, u64),
    ) -> Result<(), StoreError> {
        self.collisions += states.collisions;
        let first = self.slices.is_empty();
        if first {
            self.slices.reserve_exact(self.marks.len());
        }
        audit_records::with_uris_in_order(catalog, |uris| {
            let mut at = 0usize;
            loop {
                // A resource of another pass's slice: its URI need not be read.
                if !first && self.slices.get(at) != Some(&(k as u8)) {
                    if !uris.skip()? {
                        return Ok(());
                    }
                    at += 1;
                    continue;
                }
                let Some(uri) = uris.next_uri()? else {
                    return Ok(());
                };
                let key = uri_key(uri);
                let slice = slice_of(&key, m);
                if first {
                    self.slices.push(slice as u8);
                }
                if slice == k {
                    if let Some(i) = states.find(&key) {
                        self.set(at, states.marks(i), states.deleted(i));
                    }
                }
                at += 1;
            }
        })
    }
}

/// Compares the source's entries with the mirror's states in the order they are listed, a few
/// entries behind: each entry's directory entry is prefetched when it arrives, and its slots
/// half-way to its turn ([`MirrorStates::prefetch_bucket`], [`MirrorStates::prefetch`]), so
/// that they are in the cache by the time it comes. Only the entries within `sample` (a pass's
/// slice) are compared.
struct Comparer<'s> {
    states: &'s MirrorStates,
    sample: Option<(u64, u64)>,
    /// Entries (with their places in the list and the keys of their URIs) not compared yet,
    /// in order.
    pending: VecDeque<(u64, Key, Item)>,
    out: SourceComparison,
}

impl<'s> Comparer<'s> {
    /// Entries held: about as many lookups as the memory system keeps in flight.
    const AHEAD: usize = 16;

    /// A comparer adding to `out` (what earlier passes found).
    fn new(
        states: &'s MirrorStates,
        sample: Option<(u64, u64)>,
        out: SourceComparison,
    ) -> Comparer<'s> {
        Comparer {
            states,
            sample,
            pending: VecDeque::with_capacity(Self::AHEAD),
            out,
        }
    }

    /// The entry at place `ord` of the walk.
    fn take(&mut self, ord: u64, e: Entry) {
        match e {
            Entry::Collection(id) => {
                self.flush();
                self.out.verifying.collection = id;
            }
            Entry::Item(item) => self.push(ord, item),
            Entry::Skipped(uri) => {
                self.flush();
                self.states.set_by_uri(&uri, mark::SEEN);
            }
        }
    }

    /// Everything compared: what this pass and the earlier ones found.
    fn finish_pass(mut self) -> SourceComparison {
        self.flush();
        self.out
    }

    fn push(&mut self, ord: u64, item: Item) {
        let key = match &item {
            Item::Listed(l) => uri_key(l.uri.as_str()),
            Item::Refused(r) => uri_key(&r.uri),
        };
        self.states.prefetch_bucket(&key);
        if let Some((_, half_way, _)) = self.pending.get(Self::AHEAD / 2) {
            self.states.prefetch(half_way);
        }
        if self.pending.len() == Self::AHEAD {
            self.compare_next();
        }
        self.pending.push_back((ord, key, item));
    }

    /// Compare every entry held.
    fn flush(&mut self) {
        while !self.pending.is_empty() {
            self.compare_next();
        }
    }

    fn compare_next(&mut self) {
        if let Some((ord, key, item)) = self.pending.pop_front() {
            compare_item(
                item,
                ord,
                key,
                self.states,
                self.sample,
                &mut self.out.findings,
                &mut self.out.twice,
                &mut self.out.listed,
                &mut self.out.verifying,
            );
        }
    }
}

/// Compare one entry of the source's list (`key`: its URI's) with the mirror's current state.
#[allow(clippy::too_many_arguments)]
fn compare_item(
    item: Item,
    ord: u64,
    key: Key,
    states: &MirrorStates,
    sample: Option<(u64, u64)>,
    findings: &mut BTreeMap<String, Vec<Finding>>,
    warnings: &mut InListOrder,
    listed: &mut u64,
    verifying: &mut Verifying,
) {
    let (uri, found) = match item {
        Item::Refused(r) => {
            if in_sample(&key, sample) {
                let f = Finding::new(Class::Refused)
                    .uri(r.uri.clone())
                    .actual(r.reason);
                findings.insert(r.uri, vec![f]);
            }
            return;
        }
        Item::Listed(l) => {
            if !in_sample(&key, sample) {
                return;
            }
            *listed += 1;
            let slot = states.find(&key);
            let again = match slot {
                Some(i) => states.marks(i) & mark::SEEN != 0,
                None => findings.contains_key(l.uri.as_str()),
            };
            if again {
                // As in a snapshot: the later entry counts.
                warnings.push(
                    (ord, 1, 0),
                    format!(
                        "{}: line {}: {} listed again; the later entry counts",
                        l.document, l.line, l.uri
                    ),
                );
                findings.remove(l.uri.as_str());
                if let Some(i) = slot {
                    states.clear(i, mark::VERDICT);
                }
            }
            match slot {
                Some(i) if !states.deleted(i) => {
                    states.set(i, mark::SEEN);
                    let mut buf = HexBuf::default();
                    let verdict = plan::compare_view(&l.declared, &states.view(i, &mut buf));
                    let by_digest = match verdict {
                        Comparison::Same { by_digest } => Some(by_digest),
                        Comparison::NoEvidence => Some(false),
                        Comparison::Differs(_) => None,
                    };
                    verifying.compared(i, &l, by_digest);
                    match verdict {
                        Comparison::Same { by_digest: true } => states.set(i, mark::SAME),
                        Comparison::Same { by_digest: false } => states.set(i, mark::UNVERIFIABLE),
                        Comparison::NoEvidence => states.set(i, mark::NO_EVIDENCE),
                        Comparison::Differs(diffs) => {
                            states.set(i, mark::DIFFERS);
                            // Only the lastmod differs, and no digest says anything: a touch
                            // (same bytes, new date) or a change. `--refetch` tells them
                            // apart by the bytes.
                            if diffs.iter().all(|d| d.field == "lastmod") {
                                verifying.touched(i, &l);
                            }
                            let uri = l.uri.to_string();
                            let f = diffs
                                .into_iter()
                                .map(|d| {
                                    Finding::new(Class::Changed)
                                        .uri(uri.clone())
                                        .field(d.field)
                                        .expected(d.expected)
                                        .actual(d.actual)
                                })
                                .collect();
                            findings.insert(uri, f);
                        }
                    }
                    return;
                }
                Some(i) => {
                    states.set(i, mark::SEEN);
                    (l.uri.to_string(), true)
                }
                None => (l.uri.to_string(), false),
            }
        }
    };
    let f = Finding::new(Class::Missing).uri(uri.clone());
    let f = if found {
        f.actual("deleted in the mirror")
    } else {
        f
    };
    findings.insert(uri, vec![f]);
}

/// Report every finding about a resource, in URI order: the catalog's resources merged with
/// the URIs only the source or local fixity has findings for. Returns the number of resources
/// in the mirror (not deleted) within the sample.
fn report_by_uri(
    (catalog, filters): (&Catalog, &[(String, crate::model::Filter)]),
    marks: &Marks,
    mode: Mode,
    source: BTreeMap<String, Vec<Finding>>,
    local: Vec<Finding>,
    emitter: &mut Emitter<'_, '_>,
) -> Result<u64, StoreError> {
    let (mut source, mut local) = (source, local);
    if let Some(resources) = report_without_uris(marks, mode, &mut source, &mut local, emitter)? {
        return Ok(resources);
    }
    let mut resources = 0u64;
    let mut source = source.into_iter().peekable();
    let mut local = local.into_iter().peekable();
    // The URIs in order, as `str` compares them. Resources without a current version, and
    // those outside the sample, have no marks: they get only what the source or fixity says of
    // them (nothing, outside the sample: both sides are sampled alike).
    audit_records::with_uris_in_order(catalog, |uris| {
        let mut rank = 0usize;
        loop {
            let next = uris.next_uri()?;
            // Everything sorting before this resource that only the source or fixity knows.
            loop {
                let first = [
                    source.peek().map(|(u, _)| u.as_str()),
                    local.peek().and_then(|f| f.uri.as_deref()),
                ]
                .into_iter()
                .flatten()
                .min()
                .map(str::to_string);
                match (first, next) {
                    (Some(u), Some(n)) if u.as_str() < n => {
                        report_uri(&u, None, mode, &mut source, &mut local, emitter)?
                    }
                    (Some(u), None) => {
                        report_uri(&u, None, mode, &mut source, &mut local, emitter)?
                    }
                    _ => break,
                }
            }
            let Some(uri) = next else { break };
            let slot = match mode {
                // What the filter leaves out is not judged against the source (its bytes are,
                // by local fixity): seen, and nothing more.
                Mode::Source { .. } if filters.iter().any(|(_, f)| !f.admits(uri)) => marks
                    .of(rank, uri)
                    .map(|(_, deleted)| (mark::SEEN, deleted)),
                _ => marks.of(rank, uri),
            };
            rank += 1;
            if slot.is_some_and(|(_, deleted)| !deleted) {
                resources += 1;
            }
            report_uri(uri, slot, mode, &mut source, &mut local, emitter)?;
        }
        Ok::<_, StoreError>(())
    })?;
    Ok(resources)
}

/// The verdict a resource's marks give, if any: its class and, for `?`, why (of the field
/// `digest`).
fn verdict(marks: u8, deleted: bool, mode: Mode) -> Option<(Class, Option<&'static str>)> {
    let local_bad = marks & mark::LOCAL_BAD != 0;
    match mode {
        _ if deleted => None,
        Mode::Offline => (!local_bad).then_some((Class::Verified, None)),
        Mode::Failed => None,
        Mode::Source { complete } => {
            if marks & mark::SAME != 0 {
                (!local_bad).then_some((Class::InSync, None))
            } else if marks & mark::CLAIMED == mark::CLAIMED {
                Some((
                    Class::Unverifiable,
                    Some("the server answered 304 to the stored validators: claimed unchanged, not compared (--refetch=bytes compares)"),
                ))
            } else if marks & mark::UNVERIFIABLE != 0 {
                Some((
                    Class::Unverifiable,
                    Some("none on both sides to compare (lastmod or length agree)"),
                ))
            } else if marks & mark::NO_EVIDENCE != 0 {
                Some((
                    Class::Unverifiable,
                    Some("nothing on both sides to compare (no digest, length or lastmod)"),
                ))
            } else if marks & (mark::SEEN | mark::ELSEWHERE) == 0 && complete {
                Some((Class::Extra, None))
            } else {
                None
            }
        }
    }
}

/// [`report_by_uri`] without reading the catalog's URIs, when they are not needed: no sink
/// writes `=` findings, and the marks give every resource `=` or nothing (an audit that finds
/// the mirror in sync). The `=` verdicts are then only counted, and what is written is the
/// source's and local fixity's findings merged in URI order, exactly as the full merge would
/// write them. `None` (nothing done) when the URIs are needed.
fn report_without_uris(
    marks: &Marks,
    mode: Mode,
    source: &mut BTreeMap<String, Vec<Finding>>,
    local: &mut Vec<Finding>,
    emitter: &mut Emitter<'_, '_>,
) -> Result<Option<u64>, StoreError> {
    let verdicts = || marks.each().map(|(m, deleted)| verdict(m, deleted, mode));
    // A resource local fixity found wrong is not `=`: which one it is takes its URI.
    if emitter.writes_ok()
        || marks.collisions() > 0
        || !local.is_empty()
        || verdicts().any(|v| v.is_some_and(|(class, _)| !class.is_ok()))
    {
        return Ok(None);
    }
    let resources = marks.each().filter(|&(_, deleted)| !deleted).count() as u64;
    for (class, _) in verdicts().flatten() {
        emitter.count_unwritten(class);
    }
    let mut source = std::mem::take(source).into_iter().peekable();
    let mut local = std::mem::take(local).into_iter().peekable();
    loop {
        let first = [
            source.peek().map(|(u, _)| u.as_str()),
            local.peek().and_then(|f| f.uri.as_deref()),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(str::to_string);
        match first {
            Some(u) => report_uri(&u, None, mode, &mut source, &mut local, emitter)?,
            None => break,
        }
    }
    Ok(Some(resources))
}

/// Every finding about one URI: the verdict its marks give, then the source's findings, then
/// local fixity's.
fn report_uri<S, L>(
    uri: &str,
    slot: Option<(u8, bool)>,
    mode: Mode,
    source: &mut Peekable<S>,
    local: &mut Peekable<L>,
    emitter: &mut Emitter<'_, '_>,
) -> Result<(), StoreError>
where
    S: Iterator<Item = (String, Vec<Finding>)>,
    L: Iterator<Item = Finding>,
{
    if let Some((marks, deleted)) = slot {
        let marks = match local.peek().is_some_and(|f| f.uri.as_deref() == Some(uri)) {
            true => marks | mark::LOCAL_BAD,
            false => marks,
        };
        if let Some((class, why)) = verdict(marks, deleted, mode) {
            let f = Finding::new(class);
            let f = match why {
                Some(why) => f.field("digest").actual(why),
                None => f,
            };
            emitter.emit_about(f, uri)?;
        }
    }
    if source.peek().is_some_and(|(u, _)| u == uri) {
        let (_, findings) = source.next().expect("peeked");
        for f in findings {
            emitter.emit(f)?;
        }
    }
    while local.peek().is_some_and(|f| f.uri.as_deref() == Some(uri)) {
        emitter.emit(local.next().expect("peeked"))?;
    }
    Ok(())
}

/// Hands each finding to every sink, counts it, and records it in the catalog (`=` findings
/// are counted, not recorded: a nightly audit of a million resources would add a million rows).
struct Emitter<'a, 'c> {
    sinks: &'a mut [Sink],
    counts: Counts,
    /// Resources per class, each counted once however many of its fields differ (the summary
    /// line's figures), and the last (URI, class) counted: a resource's findings come together.
    by_resource: Counts,
    last: Option<(String, Class)>,
    /// Where findings are recorded, with the run they belong to (none: not recorded).
    log: Option<&'a FindingLog<'c>>,
}

impl Emitter<'_, '_> {
    /// [`Self::emit`] of `f` about `uri`; an `=` finding no sink writes is only counted (a
    /// million of them need no million strings).
    fn emit_about(&mut self, f: Finding, uri: &str) -> Result<(), StoreError> {
        if f.class.is_ok() && !self.writes_ok() {
            self.count_unwritten(f.class);
            return Ok(());
        }
        self.emit(f.uri(uri))
    }

    /// Does some sink write `=` findings?
    fn writes_ok(&self) -> bool {
        self.sinks.iter().any(|s| s.wants(Class::InSync))
    }

    /// An `=` finding no sink writes ([`Self::writes_ok`]): counted, and never recorded.
    fn count_unwritten(&mut self, class: Class) {
        debug_assert!(class.is_ok() && !self.writes_ok());
        self.counts.add(class);
        self.by_resource.add(class);
        self.last = None;
        for sink in self.sinks.iter_mut() {
            sink.skipped();
        }
    }

    fn emit(&mut self, f: Finding) -> Result<(), StoreError> {
        self.counts.add(f.class);
        match &f.uri {
            Some(uri) => {
                let again = self
                    .last
                    .as_ref()
                    .is_some_and(|(u, c)| u == uri && *c == f.class);
                if !again {
                    self.by_resource.add(f.class);
                    self.last = Some((uri.clone(), f.class));
                }
            }
            None => self.by_resource.add(f.class),
        }
        for sink in self.sinks.iter_mut() {
            sink.finding(&f);
        }
        if let Some(log) = self.log.filter(|_| !f.class.is_ok()) {
            log.record(&f)?;
        }
        Ok(())
    }
}

/// The catalog's own health: `integrity_check` at `--level fixity`, the faster `quick_check`
/// (no index-content cross-check) below it.
fn catalog_check(catalog: &Catalog, level: AuditLevel) -> Result<Vec<Finding>, StoreError> {
    let (pragma, lines) = if level.hashes() {
        ("integrity_check", catalog.integrity_check()?)
    } else {
        ("quick_check", audit_records::quick_check(catalog)?)
    };
    Ok(lines
        .into_iter()
        .filter(|l| l != "ok")
        .map(|l| {
            Finding::new(Class::Catalog)
                .field(pragma)
                .expected("ok")
                .actual(l)
        })
        .collect())
}

/// The cores to use (a few at most).
fn cores() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
}

/// The SOURCE given, else the one the mirror remembers.
fn source_of(s: &settings::Audit, catalog: &Catalog) -> Result<String, Error> {
    if s.source_given {
        return Ok(s.source.source.clone());
    }
    catalog.remembered_source()?.ok_or_else(|| {
        Error::Usage(UsageError(format!(
            "the mirror at {} remembers no source: give SOURCE, or use --offline",
            s.mirror.display()
        )))
    })
}

/// The id of a source the mirror already knows; an audit adds none (it must not change the
/// source the mirror remembers).
/// Two formats' own audits (several sources of such formats) as one.
fn merge_own(into: Option<OwnAudit>, mut more: OwnAudit) -> OwnAudit {
    let Some(mut a) = into else {
        return more;
    };
    a.findings.append(&mut more.findings);
    a.failed_parts.append(&mut more.failed_parts);
    a.warnings.append(&mut more.warnings);
    a.source_error = a.source_error.or(more.source_error);
    a.listed += more.listed;
    a.pages += more.pages;
    a
}

fn known_source_id(catalog: &Catalog, source: &str) -> Result<Option<i64>, StoreError> {
    match discover::source_url(source) {
        Ok(url) => catalog.known_source_id(url.as_str()),
        Err(_) => Ok(None),
    }
}

/// What an audit recorded in `runs.counts_json`: its counts and what it covered (`status` reads
/// the coverage to say how long since every object was last re-hashed).
fn counts_json(t: &Totals, s: &settings::Audit) -> String {
    serde_json::json!({
        "level": s.level.name(),
        "sample": s.sample.map(|(n, m)| format!("{n}/{m}")),
        "all_versions": s.all_versions,
        "offline": s.offline,
        "every_source": !s.source_given || s.offline,
        "findings": t.counts.to_json(),
        "resources": t.resources,
        "listed": t.listed,
        "objects_checked": t.objects_checked,
        "bytes_hashed": t.bytes_hashed,
    })
    .to_string()
}
