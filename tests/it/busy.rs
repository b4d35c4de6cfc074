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
