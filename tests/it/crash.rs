//! The crash matrix (issue 22): the real binary killed with SIGKILL at random moments of
//! baseline, incremental, audit, export and repair runs, each kill followed by a re-run. After
//! every kill and every re-run: `PRAGMA integrity_check` is ok, every object matches its catalog
//! digest and length, `staging/` holds nothing a run left, the sync point never runs ahead of
//! the source's list. After every re-run: the run finishes (exit 0), the mirror equals the
//! source, and an offline audit of every version is clean (nothing acknowledged is lost, no
//! stray). Exports killed and run again are complete and hold the mirror's state.
//!
//! CI runs `RSMIRROR_CRASH_KILLS` kills (default 300, about 30 s) and prints the tally;
//! `benches/crash.sh` runs more with other seeds.

use crate::server::TestServer;
use crate::support::*;
use rusqlite::Connection;
use std::path::Path;
use std::time::{Duration, Instant};

/// Start `args` on the mirror and SIGKILL it after `after` (or let it end first); true when
/// the kill landed while it ran.
fn kill_after(mirror: &Path, args: &[&str], after: Duration) -> bool {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
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

fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
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

#[test]
fn runs_killed_at_random_moments_leave_a_mirror_that_a_rerun_completes() {
    let kills: u64 = std::env::var("RSMIRROR_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rng = Rng(std::env::var("RSMIRROR_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0xC0FFEE));
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
        let landed = kill_after(&mirror, &argv, after);
        let entry = tally.entry(command).or_default();
        entry.0 += 1;
        if landed {
            entry.1 += 1;
        }
        invariants(&mirror, &at);
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
                if let Some(bagit) = crate::export::validator("bagit.py") {
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
         re-run finished, 0 invariant broken; by command (kills, landed): {tally:?}"
    );
    record_tally(&line);
    assert!(
        landed * 2 >= done,
        "most kills must land while the run runs: {tally:?}"
    );
}
