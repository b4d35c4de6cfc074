//! The crash matrix (issue 22): the real binary killed with SIGKILL at random moments of
//! baseline, incremental, audit, export and repair runs of a ResourceSync source, and of SCP,
//! ARC and Change Dump runs (against a reference mirror that follows the source
//! uninterrupted), each kill followed by a re-run; and killed at every named point
//! (`rsmirror::store::kill::KILL_POINTS`, `RSMIRROR_KILL_AT`) by the run that reaches it. After
//! every kill and every re-run: `PRAGMA integrity_check` is ok, every object matches its catalog
//! digest and length, `staging/` holds nothing a run left, the sync point never runs ahead of
//! the source's list. After every re-run: the run finishes (exit 0), the mirror equals the
//! source, and an offline audit of every version is clean (nothing acknowledged is lost, no
//! stray). Exports killed and run again are complete and hold the mirror's state.
//!
//! CI runs `RSMIRROR_CRASH_KILLS` random kills (default 300: three quarters ResourceSync, a
//! quarter SCP / ARC / Change Dump; about 55 s with the named points, on 2 cores) and prints the
//! tallies, with the named points the killed runs had passed (`RSMIRROR_KILL_TRACE`);
//! `benches/crash.sh` runs more with other seeds.

use crate::server::TestServer;
use crate::support::*;
use rusqlite::Connection;
use std::path::Path;
use std::time::{Duration, Instant};

/// Start `args` on the mirror and SIGKILL it after `after` (or let it end first); true when
/// the kill landed while it ran. The named points the run passes are appended to `trace` (`RSMIRROR_KILL_TRACE`).
fn kill_after(mirror: &Path, args: &[&str], after: Duration, trace: Option<&Path>) -> bool {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"));
    if let Some(trace) = trace {
        let _ = std::fs::remove_file(trace);
        command.env("RSMIRROR_KILL_TRACE", trace);
    }
    let mut child = command
        .args(args)
        .arg("--mirror")
        .arg(mirror)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < after {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let landed = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    child.wait().unwrap();
    landed
}

/// What must hold after any kill.
fn invariants(mirror: &Path, list_at: &str) {
    if !mirror.join("catalog.sqlite").exists() {
        return; // killed before the catalog was made
    }
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    if version == 0 {
        // Killed after SQLite made the file, before the schema's transaction committed: the
        // next run makes the schema (`Catalog::open`).
        integrity_ok(mirror);
        return;
    }
    drop(conn);
    assert_consistent(mirror);
    // staging/ may hold a killed run's partial files: the next run empties it (checked in
    // `converged`).
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let ahead: i64 = conn
        .query_row(
            "SELECT count(*) FROM sync_points WHERE at > ?1",
            [list_at],
            |r| r.get(0),
        )
        .unwrap_or(0);
    assert_eq!(
        ahead, 0,
        "a sync point ran ahead of the source's list ({list_at})"
    );
}

/// Every version the catalog holds, as (URI, object, change): what a run acknowledged.
fn acknowledged(mirror: &Path) -> std::collections::BTreeSet<(String, Option<String>, String)> {
    let Ok(conn) = Connection::open(mirror.join("catalog.sqlite")) else {
        return Default::default();
    };
    let Ok(mut stmt) = conn.prepare(
        "SELECT r.uri, v.sha256_hex, v.change FROM versions v JOIN resources r ON r.id = v.resource_id",
    ) else {
        return Default::default(); // no schema yet
    };
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// Nothing `before` acknowledged is missing from the mirror now.
fn nothing_lost(
    mirror: &Path,
    before: &std::collections::BTreeSet<(String, Option<String>, String)>,
    what: &str,
) {
    let now = acknowledged(mirror);
    let lost: Vec<_> = before.difference(&now).collect();
    assert!(lost.is_empty(), "{what}: versions lost: {lost:?}");
}

/// After a re-run: the mirror is the source, and every version's object is clean.
fn converged(mirror: &Path, want: &std::collections::BTreeMap<String, String>) {
    assert_eq!(&current(mirror), want);
    ok_on_mirror(mirror, &["audit", "--offline", "--all-versions", "-q"]);
    // A re-run cleans what an earlier run left in staging/.
    assert!(
        walk_files(&mirror.join("staging")).is_empty(),
        "staging not clean"
    );
}

fn sha(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

/// Kills of the whole random matrix (`RSMIRROR_CRASH_KILLS`, default 300): three quarters
/// for the ResourceSync lists, one quarter for SCP, ARC and Change Dumps.
fn crash_kills() -> u64 {
    std::env::var("RSMIRROR_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

fn crash_seed() -> u64 {
    std::env::var("RSMIRROR_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0xC0FFEE)
}

/// The named points a killed run had passed (its trace), into the tally: how many kills fell
/// after each point was last passed, and every point passed at all.
fn tally_trace(
    trace: &Path,
    last: &mut std::collections::BTreeMap<String, u64>,
    seen: &mut std::collections::BTreeSet<String>,
) {
    let text = std::fs::read_to_string(trace).unwrap_or_default();
    for l in text.lines() {
        seen.insert(l.to_string());
    }
    let l = text.lines().last().unwrap_or("(none)");
    *last.entry(l.to_string()).or_default() += 1;
}

#[test]
#[cfg_attr(
    missing = "bagit",
    ignore = "bagit-python (bagit.py) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn runs_killed_at_random_moments_leave_a_mirror_that_a_rerun_completes() {
    let kills = crash_kills() - crash_kills() / 4;
    let mut rng = Rng(crash_seed());
    let t = Tree::new();
    let names: Vec<String> = (1..=40).map(|i| format!("r{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let srv = TestServer::start(t.path());
    srv.set_delay(Duration::from_millis(3));
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let mut round = 0u64;
    let publish =
        |round: u64, changed: &[&str]| -> (String, std::collections::BTreeMap<String, String>) {
            let at = format!("2026-03-01T00:{:02}:{:02}Z", round / 60, round % 60);
            let mut entries = Vec::new();
            for n in changed {
                t.put(
                    n,
                    format!(
                        "{n}, round {round}\n{}",
                        "z".repeat((round as usize * 7) % 300)
                    )
                    .as_bytes(),
                );
                entries.push((*n, "updated", at.as_str()));
            }
            t.capability_list("changelist.xml");
            t.resource_list(&at, &refs);
            t.change_list("changelist.xml", "2026-01-01T00:00:00Z", None, &entries);
            let want = names
                .iter()
                .map(|n| {
                    (
                        format!("{}/res/{n}", srv.base()),
                        sha(&std::fs::read(t.path().join("res").join(n)).unwrap()),
                    )
                })
                .collect();
            (at, want)
        };
    let (mut at, mut want) = publish(round, &refs);
    let mut tally = std::collections::BTreeMap::<&str, (u64, u64)>::new();
    let (mut last_point, mut points) = Default::default();
    let trace = dir.path().join("trace");
    let mut lengths = std::collections::HashMap::<&str, u64>::new();
    let mut done = 0u64;
    while done < kills {
        // Each kill: the source changes, then a run of some command is killed at a random
        // moment, then run again to the end.
        round += 1;
        let command = ["baseline", "incremental", "audit", "export", "repair"][(done % 5) as usize];
        let n_changed = 1 + rng.below(12) as usize;
        let changed: Vec<&str> = (0..n_changed)
            .map(|_| refs[rng.below(refs.len() as u64) as usize])
            .collect();
        if matches!(command, "baseline" | "incremental") || !mirror.join("catalog.sqlite").exists()
        {
            (at, want) = publish(round, &changed);
        }
        let list = srv.url("/resourcelist.xml");
        let export_dest = dir.path().join("export");
        let args: Vec<String> = match command {
            "baseline" => vec![
                "baseline".into(),
                list.clone(),
                "-q".into(),
                "-j".into(),
                "2".into(),
            ],
            "incremental" if mirror.join("catalog.sqlite").exists() => {
                vec!["incremental".into(), "-q".into(), "-j".into(), "2".into()]
            }
            "incremental" => vec!["baseline".into(), list.clone(), "-q".into()],
            "audit" => vec![
                "audit".into(),
                "--offline".into(),
                "--all-versions".into(),
                "-q".into(),
            ],
            "export" => vec![
                "export".into(),
                "bagit".into(),
                export_dest.to_str().unwrap().into(),
                "-q".into(),
            ],
            _ => vec!["repair".into(), "--offline".into(), "-q".into()],
        };
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        // A moment within the run: its length as last measured to the end.
        let length = *lengths.get(command).unwrap_or(&30);
        let after = Duration::from_millis(1 + rng.below(length.max(2)));
        let landed = kill_after(&mirror, &argv, after, Some(&trace));
        let entry = tally.entry(command).or_default();
        entry.0 += 1;
        if landed {
            entry.1 += 1;
            tally_trace(&trace, &mut last_point, &mut points);
        }
        invariants(&mirror, &at);
        let before = acknowledged(&mirror);
        // Run it again to the end, timed (the next kill of this command falls within that
        // length); then a baseline for the sync commands, to be sure of the state.
        match command {
            "baseline" | "incremental" | "repair" | "audit" => {
                let started = Instant::now();
                ok_on_mirror(&mirror, &argv);
                lengths.insert(command, started.elapsed().as_millis() as u64);
                invariants(&mirror, &at);
                ok_on_mirror(&mirror, &["baseline", &list, "-q"]);
                converged(&mirror, &want);
                nothing_lost(&mirror, &before, command);
            }
            _ => {
                if !mirror.join("catalog.sqlite").exists() {
                    ok_on_mirror(&mirror, &["baseline", &list, "-q"]);
                }
                let started = Instant::now();
                ok_on_mirror(&mirror, &argv);
                lengths.insert(command, started.elapsed().as_millis() as u64);
                assert!(!export_dest.join(".rsmirror-export/INCOMPLETE").exists());
                let files = walk_files(&export_dest.join("data"));
                assert_eq!(files.len(), want.len(), "the export holds every resource");
                {
                    let bagit = crate::export::validator("bagit.py");
                    let v = std::process::Command::new(bagit)
                        .args(["--validate", "--fast"])
                        .arg(&export_dest)
                        .output()
                        .unwrap();
                    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
                }
            }
        }
        done += 1;
    }
    let landed: u64 = tally.values().map(|(_, l)| l).sum();
    let line = format!(
        "crash matrix: {done} SIGKILLs at random moments ({landed} while the run ran), every \
         re-run finished, 0 invariant broken; by command (kills, landed): {tally:?}; named \
         points passed: {points:?}; kills by the last point passed: {last_point:?}"
    );
    record_tally(&line);
    assert!(
        landed * 2 >= done,
        "most kills must land while the run runs: {tally:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// SCP, ARC and Change Dump runs killed at random moments. Each round the source changes (a
// newer SCP snapshot, a newer ARC sitemap, one more Change Dump package), a reference mirror
// follows it uninterrupted, and the mirror under test is killed, checked, and run again: it
// must then equal the reference.

/// A source of one of the three formats, changed round by round.
enum FormatSource {
    Scp {
        site: crate::scp::Site,
        /// Each page's revision.
        pages: Vec<u64>,
    },
    Arc {
        site: crate::arc::ArcSite,
        srv: TestServer,
        pages: Vec<u64>,
    },
    Dump {
        t: Tree,
        srv: TestServer,
        /// Each resource's revision, None while deleted.
        live: Vec<Option<u64>>,
        /// (file, length, from, until) of every package so far.
        packages: Vec<(String, usize, String, String)>,
    },
}

impl FormatSource {
    fn name(&self) -> &'static str {
        match self {
            FormatSource::Scp { .. } => "scp",
            FormatSource::Arc { .. } => "arc",
            FormatSource::Dump { .. } => "change-dump",
        }
    }

    /// The first command, run on both mirrors to the end.
    fn first(&self) -> Vec<String> {
        match self {
            FormatSource::Scp { site, .. } => {
                vec!["baseline".into(), site.srv.url("/sitemap.xml"), "-q".into()]
            }
            FormatSource::Arc { srv, .. } => {
                vec!["baseline".into(), srv.url("/arc-sitemap.json"), "-q".into()]
            }
            FormatSource::Dump { srv, .. } => vec![
                "baseline".into(),
                srv.url("/capabilitylist.xml"),
                "--via".into(),
                "list".into(),
                "-q".into(),
            ],
        }
    }

    /// The command of round `round`, killed on the mirror under test.
    fn command(&self, round: u64) -> Vec<String> {
        match self {
            // A newer snapshot, taken by a baseline or followed by an incremental.
            FormatSource::Scp { .. } if round.is_multiple_of(2) => {
                vec!["incremental".into(), "-q".into()]
            }
            FormatSource::Scp { .. } | FormatSource::Arc { .. } => {
                let mut c = self.first();
                c.extend(["-j".into(), "2".into()]);
                c
            }
            FormatSource::Dump { .. } => vec!["incremental".into(), "-q".into()],
        }
    }

    /// Change the source for round `round` (1-based); the latest sync point it allows.
    fn publish(&mut self, round: u64, rng: &mut Rng) -> String {
        let time = |base: &str| {
            format!(
                "{base}T{:02}:{:02}:{:02}Z",
                round / 3600,
                (round / 60) % 60,
                round % 60
            )
        };
        match self {
            FormatSource::Scp { site, pages } => {
                use crate::scp::{Sum, Z};
                let generated: &'static str = Box::leak(time("2026-01-01").into_boxed_str());
                for _ in 0..1 + rng.below(8) {
                    let i = rng.pick(pages.len());
                    pages[i] = round;
                }
                let lines: Vec<String> = pages
                    .iter()
                    .enumerate()
                    .map(|(i, rev)| {
                        let modified = format!(
                            "2025-12-01T{:02}:{:02}:{:02}Z",
                            rev / 3600,
                            (rev / 60) % 60,
                            rev % 60
                        );
                        site.page(
                            &format!("/blog/{i}"),
                            &modified,
                            &format!(
                                "page {i} revision {rev} {}",
                                "x".repeat(*rev as usize % 200)
                            ),
                        )
                    })
                    .collect();
                site.collection(
                    "blog.scp",
                    Z::Plain,
                    "blog",
                    None,
                    generated,
                    &lines,
                    Sum::Reference,
                );
                site.sitemap();
                generated.to_string()
            }
            FormatSource::Arc { site, pages, .. } => {
                use crate::arc::{at, page};
                let clock = |t: u64| format!("{:02}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
                let generated = at(-1, &clock(round));
                for _ in 0..1 + rng.below(6) {
                    let i = rng.pick(pages.len());
                    pages[i] = round;
                }
                let mut entries = Vec::new();
                for (i, rev) in pages.iter().enumerate() {
                    let body = format!("<html>page {i} revision {rev}</html>\n");
                    let lastmod = at(-1, &clock(*rev));
                    site.put(&format!("p{i}.html"), &body);
                    entries.push(page(&format!("p{i}.html"), &lastmod, &body));
                }
                site.sitemap(&generated, entries);
                generated
            }
            FormatSource::Dump {
                t,
                srv,
                live,
                packages,
            } => {
                use crate::dump::{change_package_between, AT, NS};
                if round == 0 {
                    return AT.to_string();
                }
                let from = packages
                    .last()
                    .map(|p| p.3.clone())
                    .unwrap_or_else(|| AT.to_string());
                let until = time("2026-04-01");
                let mut entries: Vec<(String, &str, String, Option<Vec<u8>>)> = Vec::new();
                for _ in 0..1 + rng.below(6) {
                    let i = rng.pick(live.len());
                    let when = until.clone();
                    let name = format!("r{i}");
                    let (change, bytes) = match live[i] {
                        Some(_) if rng.below(5) == 0 => {
                            live[i] = None;
                            ("deleted", None)
                        }
                        Some(_) => {
                            live[i] = Some(round);
                            (
                                "updated",
                                Some(format!("{name} round {round}\n").into_bytes()),
                            )
                        }
                        None => {
                            live[i] = Some(round);
                            (
                                "created",
                                Some(format!("{name} round {round}\n").into_bytes()),
                            )
                        }
                    };
                    entries.push((name, change, when, bytes));
                }
                let borrowed: Vec<(&str, &str, &str, Option<&[u8]>)> = entries
                    .iter()
                    .map(|(n, c, w, b)| (n.as_str(), *c, w.as_str(), b.as_deref()))
                    .collect();
                let pkg = change_package_between(&srv.base(), &from, &until, &borrowed);
                let file = format!("cd-{round}.zip");
                std::fs::write(t.path().join(&file), &pkg).unwrap();
                packages.push((file, pkg.len(), from, until.clone()));
                let mut body = format!(
                    "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"changedump\" from=\"{AT}\"/>\n"
                );
                for (file, len, from, until) in packages.iter() {
                    body.push_str(&format!(
                        "<url><loc>{ORIGIN}/{file}</loc><rs:md type=\"application/zip\" length=\"{len}\" from=\"{from}\" until=\"{until}\"/></url>\n"
                    ));
                }
                body.push_str("</urlset>\n");
                std::fs::write(t.path().join("changedump.xml"), body).unwrap();
                until
            }
        }
    }
}

fn format_sources() -> Vec<FormatSource> {
    let scp = crate::scp::Site::new();
    scp.srv.set_delay(Duration::from_millis(2));
    let mut out = vec![FormatSource::Scp {
        site: scp,
        pages: vec![0; 80],
    }];
    let arc = crate::arc::ArcSite::new();
    let srv = TestServer::start(arc.path());
    srv.set_delay(Duration::from_millis(3));
    out.push(FormatSource::Arc {
        site: arc,
        srv,
        pages: vec![0; 20],
    });
    use crate::dump::AT;
    let t = Tree::new();
    let names: Vec<String> = (0..20).map(|i| format!("r{i}")).collect();
    for n in &names {
        t.put(n, format!("{n} first\n").as_bytes());
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    t.resource_list(AT, &refs);
    std::fs::write(
        t.path().join("capabilitylist.xml"),
        crate::dump::capability_list("changedump.xml", "changedump"),
    )
    .unwrap();
    std::fs::write(
        t.path().join("changedump.xml"),
        crate::dump::empty_change_dump(),
    )
    .unwrap();
    let srv = TestServer::start(t.path());
    srv.set_delay(Duration::from_millis(2));
    out.push(FormatSource::Dump {
        t,
        srv,
        live: vec![Some(0); 20],
        packages: Vec::new(),
    });
    out
}

#[test]
fn scp_arc_and_change_dump_runs_killed_at_random_moments_leave_a_mirror_that_a_rerun_completes() {
    let kills = crash_kills() / 4;
    let mut rng = Rng(crash_seed() ^ 0x5C0A);
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let mut sources = format_sources();
    let mut tally = std::collections::BTreeMap::<&str, (u64, u64)>::new();
    let (mut last_point, mut points) = Default::default();
    let mut lengths = std::collections::HashMap::<&str, u64>::new();
    let mut first_at = Vec::new();
    for (k, s) in sources.iter_mut().enumerate() {
        let at = s.publish(0, &mut rng);
        let args = s.first();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        for m in ["m", "reference"] {
            ok_on_mirror(&dir.path().join(format!("{k}-{m}")), &argv);
        }
        first_at.push(at);
    }
    let mut done = 0u64;
    let mut round = 0u64;
    while done < kills {
        round += 1;
        let k = (done % sources.len() as u64) as usize;
        let s = &mut sources[k];
        let name = s.name();
        let mirror = dir.path().join(format!("{k}-m"));
        let reference = dir.path().join(format!("{k}-reference"));
        let at = s.publish(round, &mut rng);
        let args = s.command(round);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        ok_on_mirror(&reference, &argv);
        let want = current(&reference);
        let length = *lengths.get(name).unwrap_or(&100);
        let after = Duration::from_millis(1 + rng.below(length.max(2)));
        let landed = kill_after(&mirror, &argv, after, Some(&trace));
        let entry = tally.entry(name).or_default();
        entry.0 += 1;
        if landed {
            entry.1 += 1;
            tally_trace(&trace, &mut last_point, &mut points);
        }
        invariants(&mirror, &at);
        let before = acknowledged(&mirror);
        let started = Instant::now();
        ok_on_mirror(&mirror, &argv);
        lengths.insert(name, started.elapsed().as_millis() as u64);
        invariants(&mirror, &at);
        converged(&mirror, &want);
        nothing_lost(&mirror, &before, name);
        assert_eq!(
            tombstoned(&mirror),
            tombstoned(&reference),
            "{name}, round {round}"
        );
        done += 1;
    }
    let landed: u64 = tally.values().map(|(_, l)| l).sum();
    let line = format!(
        "crash matrix, SCP/ARC/Change Dump: {done} SIGKILLs at random moments ({landed} while \
         the run ran), every re-run finished and equals an uninterrupted mirror, 0 invariant \
         broken; by format (kills, landed): {tally:?}; named points passed: {points:?}; kills \
         by the last point passed: {last_point:?}"
    );
    record_tally(&line);
    assert!(
        landed * 2 >= done,
        "most kills must land while the run runs: {tally:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Named points: every point of `rsmirror::store::kill::KILL_POINTS` reached by a real run,
// which dies there (`RSMIRROR_KILL_AT=<name>[:<nth>]`, a debug build aborts), then the
// invariants, then the same command again to the end and the mirror it should have made.

/// The runs that reach the named points. Every listed point must be in a row here (the test
/// fails for one that is not), and a row may name a point more than once, with other runs.
const NAMED: &[(&str, Kind, u64)] = &[
    ("object.placed", Kind::Baseline, 3),
    ("object.placed", Kind::Incremental, 1),
    ("object.placed", Kind::Arc, 1),
    ("writer.mid-batch", Kind::Baseline, 2),
    ("writer.mid-batch", Kind::ChangeDump, 1),
    ("writer.committed", Kind::Baseline, 1),
    ("writer.committed", Kind::Incremental, 1),
    ("writer.committed", Kind::Arc, 1),
    ("baseline.versions-committed", Kind::Baseline, 1),
    ("incremental.tombstone", Kind::Incremental, 1),
    ("whole.before-commit", Kind::Scp, 1),
    ("whole.before-commit", Kind::Scp, 2),
    ("arc.before-commit", Kind::Arc, 1),
    ("change-dump.package-staged", Kind::ChangeDump, 1),
    ("change-dump.object-stored", Kind::ChangeDump, 2),
    ("repair.quarantined", Kind::Repair, 1),
    ("repair.quarantined", Kind::Repair, 2),
    ("repair.object-restored", Kind::Repair, 1),
    ("repair.object-restored", Kind::Repair, 2),
    ("export.between-files", Kind::Export, 3),
    ("export.before-complete", Kind::Export, 1),
    ("upgrade.after-1-to-2", Kind::Upgrade, 1),
    ("upgrade.after-an-object", Kind::Upgrade, 1),
    ("upgrade.after-an-object", Kind::Upgrade, 3),
    ("upgrade.after-sync", Kind::Upgrade, 1),
    ("upgrade.before-commit", Kind::Upgrade, 1),
    ("upgrade.after-commit", Kind::Upgrade, 1),
    ("upgrade.3-to-4-before-commit", Kind::Upgrade, 1),
    ("upgrade.4-to-5-before-commit", Kind::Upgrade, 1),
    ("upgrade.5-to-6-before-commit", Kind::Upgrade, 1),
    ("upgrade.6-to-7-before-commit", Kind::Upgrade, 1),
    ("upgrade.7-to-8-before-commit", Kind::Upgrade, 1),
    ("upgrade.8-to-9-before-commit", Kind::Upgrade, 1),
    ("upgrade.9-to-10-before-commit", Kind::Upgrade, 1),
    ("upgrade.10-to-11-before-commit", Kind::Upgrade, 1),
    ("upgrade.11-to-12-before-commit", Kind::Upgrade, 1),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A first baseline of a Resource List.
    Baseline,
    /// An incremental from a Change List: updates, a create, a delete.
    Incremental,
    /// A baseline of an SCP site: two sections, each a snapshot collection.
    Scp,
    /// A baseline of an ARC sitemap.
    Arc,
    /// An incremental from a Change Dump package.
    ChangeDump,
    /// An online repair of two damaged objects.
    Repair,
    /// A BagIt export.
    Export,
    /// The schema upgrade of a version 1 mirror (tests/fixtures/v2-mirror, made version 1).
    Upgrade,
}

/// A mirror ready for the run to kill, with what keeps its source alive.
struct Scenario {
    _keep: Vec<Box<dyn std::any::Any>>,
    dir: tempfile::TempDir,
    mirror: std::path::PathBuf,
    args: Vec<String>,
    /// The latest sync point the source allows.
    at: String,
}

impl Scenario {
    fn argv(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }

    fn export_dest(&self) -> std::path::PathBuf {
        self.dir.path().join("export")
    }
}

const NAMED_AT: &str = "2026-03-01T00:00:00Z";

fn scenario(kind: Kind) -> Scenario {
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let s = |keep: Vec<Box<dyn std::any::Any>>, args: &[&str], at: &str, dir| Scenario {
        _keep: keep,
        dir,
        mirror: mirror.clone(),
        args: args.iter().map(|a| a.to_string()).collect(),
        at: at.to_string(),
    };
    match kind {
        Kind::Baseline | Kind::Incremental | Kind::Repair | Kind::Export => {
            let t = Tree::new();
            let names: Vec<String> = (1..=12).map(|i| format!("r{i}")).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            for n in &refs {
                t.put(n, format!("{n}, first\n").as_bytes());
            }
            t.capability_list("changelist.xml");
            t.resource_list(NAMED_AT, &refs);
            t.change_list("changelist.xml", NAMED_AT, None, &[]);
            let srv = TestServer::start(t.path());
            let list = srv.url("/resourcelist.xml");
            if kind == Kind::Baseline {
                let args = ["baseline", &list, "-q", "-j", "2"];
                return s(vec![Box::new(t), Box::new(srv)], &args, NAMED_AT, dir);
            }
            ok_on_mirror(&mirror, &["baseline", &list, "-q"]);
            match kind {
                Kind::Incremental => {
                    t.put("r1", b"r1, second\n");
                    t.put("r3", b"r3, second\n");
                    t.put("r13", b"r13, new\n");
                    t.remove("r2");
                    t.change_list(
                        "changelist.xml",
                        NAMED_AT,
                        None,
                        &[
                            ("r1", "updated", "2026-03-01T01:00:00Z"),
                            ("r2", "deleted", "2026-03-01T02:00:00Z"),
                            ("r3", "updated", "2026-03-01T03:00:00Z"),
                            ("r13", "created", "2026-03-01T04:00:00Z"),
                        ],
                    );
                    let args = ["incremental", "-q", "-j", "2"];
                    s(
                        vec![Box::new(t), Box::new(srv)],
                        &args,
                        "2026-03-01T04:00:00Z",
                        dir,
                    )
                }
                Kind::Repair => {
                    // Two objects damaged: one with other bytes, one gone.
                    let mut shas: Vec<String> = current(&mirror).into_values().collect();
                    shas.sort();
                    let path = |sha: &str| mirror.join("objects/sha256").join(&sha[..2]).join(sha);
                    let p0 = path(&shas[0]);
                    let mut perms = std::fs::metadata(&p0).unwrap().permissions();
                    #[allow(clippy::permissions_set_readonly_false)]
                    perms.set_readonly(false);
                    std::fs::set_permissions(&p0, perms).unwrap();
                    std::fs::write(&p0, b"rot\n").unwrap();
                    let p1 = path(&shas[1]);
                    let mut perms = std::fs::metadata(&p1).unwrap().permissions();
                    #[allow(clippy::permissions_set_readonly_false)]
                    perms.set_readonly(false);
                    std::fs::set_permissions(&p1, perms).unwrap();
                    std::fs::write(&p1, b"rot too\n").unwrap();
                    s(
                        vec![Box::new(t), Box::new(srv)],
                        &["repair", "-q"],
                        NAMED_AT,
                        dir,
                    )
                }
                _ => {
                    let dest = dir.path().join("export");
                    let args = ["export", "bagit", dest.to_str().unwrap(), "-q"];
                    s(vec![Box::new(t), Box::new(srv)], &args, NAMED_AT, dir)
                }
            }
        }
        Kind::Scp => {
            use crate::scp::{Site, Sum, T1, Z};
            let mut site = Site::new();
            let blog: Vec<String> = (1..=4)
                .map(|i| site.page(&format!("/blog/{i}"), "2025-12-01T00:00:00Z", "b"))
                .collect();
            let docs: Vec<String> = (1..=3)
                .map(|i| site.page(&format!("/docs/{i}"), "2025-12-01T00:00:00Z", "d"))
                .collect();
            site.collection(
                "blog-1.scp",
                Z::Plain,
                "blog",
                None,
                T1,
                &blog,
                Sum::Reference,
            );
            site.collection(
                "docs-1.scp.gz",
                Z::Gzip,
                "docs",
                None,
                T1,
                &docs,
                Sum::Reference,
            );
            site.sitemap();
            let url = site.srv.url("/sitemap.xml");
            s(vec![Box::new(site)], &["baseline", &url, "-q"], T1, dir)
        }
        Kind::Arc => {
            use crate::arc::{at, page, ArcSite};
            let site = ArcSite::new();
            let generated = at(-1, "00:00:00");
            let mut pages = Vec::new();
            for i in 1..=6 {
                let body = format!("<html>page {i}</html>\n");
                site.put(&format!("p{i}.html"), &body);
                pages.push(page(&format!("p{i}.html"), &generated, &body));
            }
            site.sitemap(&generated, pages);
            let srv = TestServer::start(site.path());
            let url = srv.url("/arc-sitemap.json");
            s(
                vec![Box::new(site), Box::new(srv)],
                &["baseline", &url, "-q", "-j", "2"],
                &generated,
                dir,
            )
        }
        Kind::ChangeDump => {
            use crate::dump::{change_package, AT, NS};
            let t = Tree::new();
            for i in 1..=4 {
                t.put(&format!("r{i}"), format!("resource {i} v1\n").as_bytes());
            }
            t.resource_list(AT, &["r1", "r2", "r3", "r4"]);
            std::fs::write(
                t.path().join("capabilitylist.xml"),
                crate::dump::capability_list("changedump.xml", "changedump"),
            )
            .unwrap();
            std::fs::write(
                t.path().join("changedump.xml"),
                crate::dump::empty_change_dump(),
            )
            .unwrap();
            let srv = TestServer::start(t.path());
            ok_on_mirror(
                &mirror,
                &[
                    "baseline",
                    &srv.url("/capabilitylist.xml"),
                    "--via",
                    "list",
                    "-q",
                ],
            );
            let v2: &[u8] = b"resource 1 v2\n";
            let v3: &[u8] = b"resource 1 v3\n";
            let r5: &[u8] = b"resource 5 v1\n";
            t.put("r1", v3);
            t.put("r5", r5);
            t.remove("r2");
            let pkg = change_package(
                &srv.base(),
                &[
                    ("r1", "updated", "2026-04-01T01:00:00Z", Some(v2)),
                    ("r1", "updated", "2026-04-01T02:00:00Z", Some(v3)),
                    ("r5", "created", "2026-04-01T03:00:00Z", Some(r5)),
                    ("r2", "deleted", "2026-04-01T04:00:00Z", None),
                ],
            );
            std::fs::write(t.path().join("cd-1.zip"), &pkg).unwrap();
            std::fs::write(
                t.path().join("changedump.xml"),
                format!(
                    "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"changedump\" from=\"{AT}\"/>\n\
                     <url><loc>{ORIGIN}/cd-1.zip</loc><rs:md type=\"application/zip\" length=\"{}\" from=\"{AT}\" until=\"2026-04-01T05:00:00Z\"/></url>\n</urlset>\n",
                    pkg.len()
                ),
            )
            .unwrap();
            s(
                vec![Box::new(t), Box::new(srv)],
                &["incremental", "-q"],
                "2026-04-01T05:00:00Z",
                dir,
            )
        }
        Kind::Upgrade => {
            let fixture = crate::migrate::copy_fixture();
            let m = crate::migrate::mirror(&fixture);
            let rs = crate::migrate::rs_states(&m);
            crate::migrate::make_version_1(&m, &rs);
            Scenario {
                _keep: vec![Box::new(fixture)],
                dir,
                mirror: m,
                args: Vec::new(),
                at: String::new(),
            }
        }
    }
}

#[test]
fn every_named_point_is_reached_and_a_run_killed_there_is_finished_by_the_next() {
    use std::os::unix::process::ExitStatusExt;
    for p in rsmirror::store::kill::KILL_POINTS {
        assert!(
            NAMED.iter().any(|(n, _, _)| n == p),
            "kill point {p} has no run in NAMED: add one that reaches it"
        );
    }
    let mut passed = std::collections::BTreeMap::<&str, u64>::new();
    for &(point, kind, nth) in NAMED {
        let sc = scenario(kind);
        let what = format!("{point}:{nth} in {kind:?}");
        if kind == Kind::Upgrade {
            let before = crate::migrate::old_states(&sc.mirror);
            let rs = crate::migrate::rs_states(&sc.mirror);
            let out = crate::migrate::audit(&sc.mirror)
                .env("RSMIRROR_KILL_AT", format!("{point}:{nth}"))
                .output()
                .unwrap();
            assert_eq!(out.status.signal(), Some(6), "{what}: {}", stderr_of(&out));
            assert!(stderr_of(&out).contains(&format!("killed at {point}")));
            let v = crate::migrate::user_version(&sc.mirror);
            assert!(
                (1..rsmirror::store::catalog::SCHEMA_VERSION).contains(&v),
                "{what}: version {v}"
            );
            assert!(
                !crate::migrate::has_table(&sc.mirror, "version_categories"),
                "{what}: the last step half done"
            );
            assert_eq!(
                crate::migrate::has_table(&sc.mirror, "scp_pages"),
                v < 3,
                "{what}"
            );
            integrity_ok(&sc.mirror);
            let out = crate::migrate::audit(&sc.mirror).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr_of(&out));
            crate::migrate::assert_upgraded(&sc.mirror, &before, &rs);
            *passed.entry(point).or_default() += 1;
            continue;
        }
        // What the run makes when nothing kills it, on a copy.
        let reference = sc.dir.path().join("reference");
        let made = sc.mirror.exists();
        if made {
            copy_tree(&sc.mirror, &reference);
        }
        let ref_args: Vec<String> = sc
            .args
            .iter()
            .map(|a| {
                a.replace(
                    sc.export_dest().to_str().unwrap(),
                    sc.dir.path().join("ref-export").to_str().unwrap(),
                )
            })
            .collect();
        let ref_argv: Vec<&str> = ref_args.iter().map(String::as_str).collect();
        ok_on_mirror(&reference, &ref_argv);
        let want = current(&reference);

        let out = rsmirror()
            .args(sc.argv())
            .arg("--mirror")
            .arg(&sc.mirror)
            .env("RSMIRROR_KILL_AT", format!("{point}:{nth}"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(6),
            "{what}: the run did not die there (exit {:?}): {}",
            out.status.code(),
            stderr_of(&out)
        );
        assert!(
            stderr_of(&out).contains(&format!("killed at {point}")),
            "{what}: {}",
            stderr_of(&out)
        );
        *passed.entry(point).or_default() += 1;
        if kind == Kind::Repair {
            // The damage was there before the run: only the catalog is checked here, and the
            // damaged bytes are kept (in place or in quarantine).
            integrity_ok(&sc.mirror);
        } else {
            invariants(&sc.mirror, &sc.at);
        }
        let before = acknowledged(&sc.mirror);
        ok_on_mirror(&sc.mirror, &sc.argv());
        invariants(&sc.mirror, &sc.at);
        converged(&sc.mirror, &want);
        nothing_lost(&sc.mirror, &before, &what);
        match kind {
            Kind::Export => {
                let dest = sc.export_dest();
                assert!(!dest.join(".rsmirror-export/INCOMPLETE").exists(), "{what}");
                assert_eq!(walk_files(&dest.join("data")).len(), want.len(), "{what}");
            }
            Kind::Repair => {
                let q = walk_files(&sc.mirror.join("quarantine"));
                let rot = q
                    .iter()
                    .filter(|p| {
                        std::fs::read(p)
                            .map(|b| b == b"rot\n" || b == b"rot too\n")
                            .unwrap_or(false)
                    })
                    .count();
                assert_eq!(rot, 2, "{what}: the damaged files are kept in quarantine");
            }
            Kind::Incremental | Kind::ChangeDump => {
                assert_eq!(tombstoned(&sc.mirror), tombstoned(&reference), "{what}");
                assert_eq!(
                    version_count(&sc.mirror),
                    version_count(&reference),
                    "{what}"
                );
            }
            _ => {}
        }
    }
    let line = format!(
        "crash matrix, named points: {} runs killed at {} named points (SIGABRT there), every \
         re-run finished, 0 invariant broken; passes by point: {passed:?}",
        NAMED.len(),
        passed.len()
    );
    record_tally(&line);
}

fn integrity_ok(mirror: &Path) {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let ic: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ic, "ok");
}
