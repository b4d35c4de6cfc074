//! Issue 26: a source that changes while a baseline runs. Resources whose bytes contradict the
//! Resource List (they changed after it was written) are pending: the sync point is recorded
//! all the same, `incremental` fetches them for the changes that explain them, and one that no
//! change explains stays a failure that audit reports.

use crate::server::TestServer;
use crate::support::*;

const T0: &str = "2026-03-01T00:00:00Z";

fn run(cmd: &mut assert_cmd::Command, code: i32) -> (serde_json::Value, String) {
    let out = cmd.arg("--json").output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    (serde_json::from_slice(&out.stdout).unwrap(), err)
}

#[test]
fn a_baseline_of_a_changing_source_records_its_sync_point_and_incremental_settles_it() {
    let t = Tree::new();
    for i in 1..=4 {
        t.put(&format!("r{i}"), format!("r{i} as listed\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3", "r4"]);
    t.change_list("changelist.xml", T0, None, &[]);
    // r1 and r2 change after the list was written, before the baseline fetches them.
    t.put("r1", b"r1 changed while the baseline ran\n");
    t.put("r2", b"r2 changed too\n");
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();

    let (s, err) = run(
        &mut baseline(&srv.url("/capabilitylist.xml"), dir.path()),
        0,
    );
    assert_eq!(
        (
            s["created"].as_u64(),
            s["pending"].as_u64(),
            s["failed"].as_u64()
        ),
        (Some(2), Some(2), Some(0)),
        "{s}"
    );
    assert_eq!(s["sync_point"], T0, "the sync point is recorded: {s}");
    assert_eq!(sync_point(dir.path()).unwrap().0.as_deref(), Some(T0));
    for r in ["r1", "r2"] {
        assert!(
            err.contains(&format!("pending: {}/res/{r}", srv.base())),
            "named on stderr: {err}"
        );
    }
    let problems = last_run_problems(dir.path());
    assert_eq!(
        problems
            .iter()
            .filter(|(_, class, _)| class == "pending")
            .count(),
        2,
        "{problems:?}"
    );
    assert_eq!(
        current(dir.path()).len(),
        2,
        "the contradicting bytes are not stored as listed"
    );

    // The Change List explains r1 only.
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[("r1", "updated", "2026-03-01T01:00:00Z")],
    );
    let (s, err) = run(&mut incremental(dir.path()), 3);
    assert_eq!(
        (s["created"].as_u64(), s["failed"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    assert_eq!(s["sync_point"], "2026-03-01T01:00:00Z", "{s}");
    let r2 = format!("{}/res/r2", srv.base());
    assert!(
        err.contains(&format!("failed: {r2}: pending since run 1")),
        "{err}"
    );
    // Audit reports it.
    let out = rsmirror()
        .args(["audit", "--mirror"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout_of(&out).contains(&format!("+ {r2}")),
        "{}",
        stdout_of(&out)
    );

    // Once the source publishes r2's change, the mirror settles and audits clean.
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "updated", "2026-03-01T01:00:00Z"),
            ("r2", "updated", "2026-03-01T02:00:00Z"),
        ],
    );
    let (s, _) = run(&mut incremental(dir.path()), 0);
    assert_eq!(
        (s["created"].as_u64(), s["failed"].as_u64()),
        (Some(1), Some(0)),
        "{s}"
    );
    let out = rsmirror()
        .args(["audit", "--mirror"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout_of(&out),
        stderr_of(&out)
    );
    assert_eq!(current(dir.path()).len(), 4);
    assert_consistent(dir.path());
}

/// Issue 26: a Change List that no longer reaches back to the sync point. Without an option
/// the run stops (exit 4, nothing applied, as before); with `--on-gap rebaseline` it re-reads
/// the current Resource List, fetches what differs, takes the new list's `at`, and the run
/// record says it crossed a gap.
#[test]
fn on_gap_rebaseline_crosses_a_gap_and_records_it() {
    let t = Tree::new();
    for i in 1..=3 {
        t.put(&format!("r{i}"), format!("r{i} v1\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3"]);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    run(
        &mut baseline(&srv.url("/capabilitylist.xml"), dir.path()),
        0,
    );

    // A week later the source keeps only recent changes: its list starts after the sync point.
    t.put("r2", b"r2 v2\n");
    t.put("r4", b"r4 v1\n");
    t.resource_list("2026-03-08T00:00:00Z", &["r1", "r2", "r3", "r4"]);
    t.change_list("changelist.xml", "2026-03-07T00:00:00Z", None, &[]);
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("--on-gap rebaseline"),
        "the message names the way out"
    );
    assert_eq!(sync_point(dir.path()).unwrap().0.as_deref(), Some(T0));

    // Issue 44: a crossed gap is a warning of a successful run, quiet under -q.
    let (s, err) = run(
        incremental(dir.path()).args(["--on-gap", "rebaseline", "-q"]),
        0,
    );
    assert_eq!(err, "", "nothing on stderr under -q");
    assert_eq!(s["command"], "baseline", "{s}");
    assert_eq!(
        (s["created"].as_u64(), s["updated"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    assert_eq!(s["sync_point"], "2026-03-08T00:00:00Z", "{s}");
    assert!(s["warnings"].to_string().contains("crosses a gap"), "{s}");
    let problems = last_run_problems(dir.path());
    assert!(
        problems.iter().any(
            |(_, class, reason)| class == "gap" && reason.contains("gap in the change history")
        ),
        "{problems:?}"
    );
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    let runs: Vec<(String, String, i64)> = conn
        .prepare("SELECT command, outcome, exit_code FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let shape: Vec<(&str, &str, i64)> = runs
        .iter()
        .map(|(c, o, e)| (c.as_str(), o.as_str(), *e))
        .collect();
    assert_eq!(
        shape,
        [
            ("baseline", "ok", 0),
            ("incremental", "failed", 4),
            ("incremental", "ok", 0),
            ("baseline", "ok", 0)
        ]
    );
    let (status, _) = ok_on_mirror(dir.path(), &["status"]);
    assert!(!status.contains("hint: the last incremental"), "{status}");
    // From the new sync point the mirror follows the source again.
    let (s, _) = run(&mut incremental(dir.path()), 0);
    assert_eq!(s["failed"], 0, "{s}");
    assert_eq!(current(dir.path()).len(), 4);
    assert_consistent(dir.path());
}

/// Issue 26: a change overtaken by a later one while incremental runs (the bytes no longer
/// match the entry). It is pending and does not hold the sync point back, so a source that
/// never stands still is still caught up with; the next run applies the later change.
#[test]
fn an_overtaken_change_is_pending_and_does_not_hold_the_sync_point_back() {
    let t = Tree::new();
    for i in 1..=3 {
        t.put(&format!("r{i}"), format!("r{i} v1\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3"]);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    run(
        &mut baseline(&srv.url("/capabilitylist.xml"), dir.path()),
        0,
    );

    t.put("r1", b"r1 v2\n");
    t.put("r2", b"r2 v2\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "updated", "2026-03-01T01:00:00Z"),
            ("r2", "updated", "2026-03-01T02:00:00Z"),
        ],
    );
    // r1 changes again before the run fetches it.
    t.put("r1", b"r1 v3, after the list was read\n");
    let (s, err) = run(&mut incremental(dir.path()), 0);
    assert_eq!(
        (
            s["updated"].as_u64(),
            s["pending"].as_u64(),
            s["failed"].as_u64()
        ),
        (Some(1), Some(1), Some(0)),
        "{s}"
    );
    assert_eq!(
        s["sync_point"], "2026-03-01T02:00:00Z",
        "not held back at r1's change: {s}"
    );
    assert!(
        err.contains("pending: ") && err.contains("/res/r1"),
        "{err}"
    );

    // The source publishes r1's later change: the next run applies it.
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "updated", "2026-03-01T01:00:00Z"),
            ("r2", "updated", "2026-03-01T02:00:00Z"),
            ("r1", "updated", "2026-03-01T03:00:00Z"),
        ],
    );
    let (s, _) = run(&mut incremental(dir.path()), 0);
    assert_eq!(
        (s["updated"].as_u64(), s["failed"].as_u64()),
        (Some(1), Some(0)),
        "{s}"
    );
    let r1 = format!("{}/res/r1", srv.base());
    assert_eq!(
        current(dir.path())[&r1],
        sha256_file(&t.path().join("res/r1"))
    );
}
