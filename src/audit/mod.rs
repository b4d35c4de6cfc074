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
//!
//! This file opens the mirror and runs the checks side by side. The rest of the folder, in the
//! order an audit goes: `source` (which sources, with what filters, their lists walked),
//! `passes` (the plan: the whole mirror's states in one pass, or slices of them in several),
//! `compare` (each listed entry against the mirror's state), `marks` (what the comparison
//! leaves the report of each resource), `report` (every finding, in order, to every sink) and
//! `outcome` (the sinks, the exit code, the run recorded, stderr told). What they use:
//! `mirror_states` (the index of current states), `spill` (the source's list on disk),
//! `refetch` (`--refetch`), `fixity` (local fixity) and `finding` (the report's forms).
//! `repair` is `rsmirror repair`.

pub mod finding;
pub mod fixity;
pub mod html;
pub mod mirror_states;
pub mod refetch;
pub mod repair;
pub mod spill;

mod compare;
mod marks;
mod outcome;
mod passes;
mod report;
mod source;

use crate::audit::compare::Compared;
use crate::audit::finding::{Class, Finding, Header, Sink, Totals};
use crate::audit::outcome::{conclude, report_file, stdout_sink, Verdict};
use crate::audit::passes::{passes, since, Comparing};
use crate::audit::report::{report, Checked};
use crate::audit::source::{known_source_id, source_filters, source_of};
use crate::engine::discover;
use crate::engine::format::Formats;
use crate::error::Error;
use crate::exit::Exit;
use crate::settings::{self, AuditLevel};
use crate::store::audit_records;
use crate::store::{Catalog, MirrorLock, StoreError};
use std::io;
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
    if let Some(path) = &s.premis {
        outcome::premis_writable(path, read_only)?;
    }
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
    let report_file = report_file(s, &catalog, arguments)?;
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
    totals.recorded = run_id.is_some();
    totals.phases.push(("report", since(report_started)));
    match compared {
        Compared::Failed(e) => Err(e.into()),
        _ if failed_parts > 0 => Ok(Verdict::SourceIncomplete),
        _ => Ok(Verdict::Done),
    }
}

/// What an audit compares the mirror with: the source (and the `--also` ones), read by these
/// formats; no source for an offline audit.
#[derive(Clone, Copy)]
struct Against<'a> {
    formats: &'a Formats,
    source: Option<&'a str>,
    also: &'a [String],
}

/// Run every check: the catalog's own, local fixity and (unless offline) the comparison with
/// the source, side by side.
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

/// EROFS, or no permission to write: a mirror on read-only media (or mounted so).
fn is_read_only(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_catalog_is_sound_at_every_level() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        for level in [
            AuditLevel::Presence,
            AuditLevel::Size,
            AuditLevel::Sha256,
            AuditLevel::Fixity,
        ] {
            assert_eq!(catalog_check(&catalog, level).unwrap(), [], "{level:?}");
        }
    }

    #[test]
    fn a_damaged_catalog_is_named_by_the_check_its_level_runs() {
        use crate::audit::compare::tests::{held, mirror};
        let uris: Vec<String> = (0..300).map(|i| format!("http://x/{i:04}")).collect();
        let states: Vec<(&str, _)> = uris
            .iter()
            .map(|u| (u.as_str(), held(Some(5), None, None)))
            .collect();
        let (dir, catalog) = mirror(&states);
        drop(catalog);
        // The cells of the last page overwritten.
        let path = dir.path().join("catalog.sqlite");
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 4096 + 100..n - 100].fill(0x5a);
        std::fs::write(&path, &bytes).unwrap();
        let catalog = Catalog::open_read_only(dir.path()).unwrap().unwrap();
        for (level, pragma) in [
            (AuditLevel::Presence, "quick_check"),
            (AuditLevel::Size, "quick_check"),
            (AuditLevel::Sha256, "integrity_check"),
            (AuditLevel::Fixity, "integrity_check"),
        ] {
            let found = catalog_check(&catalog, level).unwrap();
            assert!(!found.is_empty(), "{level:?}");
            for f in found {
                assert_eq!(
                    (f.class, f.field.as_deref(), f.expected.as_deref()),
                    (Class::Catalog, Some(pragma), Some("ok")),
                    "{level:?}"
                );
                assert!(f.actual.is_some_and(|a| a != "ok"), "{level:?}");
            }
        }
    }
}
