//! `rsmirror incremental` against a real HTTP server: the mirror after following the Change
//! Lists equals a fresh baseline of the changed source; index / open-list / 1.0 / 2012 forms;
//! coalescing; gaps; conditional GETs; permutations; a SIGKILL mid-run.

use crate::server::{testdata, Rule, TestServer};
use crate::support::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const T0: &str = "2026-03-01T00:00:00Z";

fn ok(cmd: &mut assert_cmd::Command) -> serde_json::Value {
    let out = cmd.arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// State A: r1..r5 listed at T0, an (empty) open change list.
fn state_a() -> Tree {
    let t = Tree::new();
    for i in 1..=5 {
        t.put(
            &format!("r{i}"),
            format!("resource {i}, first version\n").as_bytes(),
        );
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3", "r4", "r5"]);
    t.change_list("changelist.xml", T0, None, &[]);
    t
}

/// The mirror equals a fresh baseline of the tree's current resource list.
fn assert_equals_fresh_baseline(srv: &TestServer, mirror: &std::path::Path) {
    let fresh = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), fresh.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(mirror), current(fresh.path()));
    assert_consistent(mirror);
}

#[test]
fn creates_updates_deletes_give_the_mirror_of_a_fresh_baseline() {
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    let before = current(dir.path());

    t.put("r1", b"resource 1, second version\n");
    t.put("r6", b"resource 6, new\n");
    t.remove("r2");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "updated", "2026-03-01T01:00:00Z"),
            ("r6", "created", "2026-03-01T02:00:00Z"),
            ("r2", "deleted", "2026-03-01T03:00:00Z"),
        ],
    );
    t.resource_list("2026-03-01T04:00:00Z", &["r1", "r3", "r4", "r5", "r6"]);
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(
        (
            s["created"].as_u64(),
            s["updated"].as_u64(),
            s["deleted"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(s["sync_point"], "2026-03-01T03:00:00Z");
    assert_equals_fresh_baseline(&srv, dir.path());
    assert_eq!(
        tombstoned(dir.path()),
        vec![format!("{}/res/r2", srv.base())]
    );
    // Earlier versions stay stored: r2's and r1's first bytes are still objects.
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    for r in ["r1", "r2"] {
        let sha = &before[&format!("{}/res/{r}", srv.base())];
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM versions WHERE sha256_hex = ?1",
                [sha],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1, "{r}'s first version is kept");
    }
    // Every applied change is recorded with its run and event time.
    let events: Vec<(String, String, String)> = conn
        .prepare("SELECT uri, change, event_time FROM change_events WHERE outcome = 'applied' ORDER BY event_time")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].1, "deleted");
}

#[test]
fn index_with_closed_lists_and_a_growing_open_list() {
    let t = state_a();
    t.capability_list("changelist-index.xml");
    t.put("r1", b"r1 v2\n");
    t.change_list(
        "cl1.xml",
        T0,
        Some("2026-03-02T00:00:00Z"),
        &[("r1", "updated", "2026-03-01T10:00:00Z")],
    );
    t.put("r6", b"r6 v1\n");
    t.change_list(
        "cl2.xml",
        "2026-03-02T00:00:00Z",
        Some("2026-03-03T00:00:00Z"),
        &[("r6", "created", "2026-03-02T10:00:00Z")],
    );
    t.put("r7", b"r7 v1\n");
    t.change_list(
        "cl3.xml",
        "2026-03-03T00:00:00Z",
        None,
        &[("r7", "created", "2026-03-03T10:00:00Z")],
    );
    t.change_list_index(
        "changelist-index.xml",
        T0,
        &[
            ("cl1.xml", T0, Some("2026-03-02T00:00:00Z")),
            (
                "cl2.xml",
                "2026-03-02T00:00:00Z",
                Some("2026-03-03T00:00:00Z"),
            ),
            ("cl3.xml", "2026-03-03T00:00:00Z", None),
        ],
    );
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    // Baseline from the state-A list (r1 v1 listed): serve the old r1 bytes for it.
    srv.set_rule(
        "/res/r1",
        Rule::Body(b"resource 1, first version\n".to_vec()),
    );
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    srv.clear_rule("/res/r1");
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(
        (s["created"].as_u64(), s["updated"].as_u64()),
        (Some(2), Some(1))
    );

    // The open list grows; the second run fetches no closed list and applies only the new entry.
    t.put("r8", b"r8 v1\n");
    t.change_list(
        "cl3.xml",
        "2026-03-03T00:00:00Z",
        None,
        &[
            ("r7", "created", "2026-03-03T10:00:00Z"),
            ("r8", "created", "2026-03-03T11:00:00Z"),
        ],
    );
    srv.clear_requests();
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(s["created"].as_u64(), Some(1), "{s}");
    assert_eq!(
        srv.count("/cl1.xml") + srv.count("/cl2.xml"),
        0,
        "closed lists fetched again"
    );
    assert_eq!(srv.count("/res/r8"), 1);
    assert_eq!(srv.count("/res/r6"), 0);
    t.resource_list(
        "2026-03-04T00:00:00Z",
        &["r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"],
    );
    assert_equals_fresh_baseline(&srv, dir.path());
}

#[test]
fn a_304_on_the_open_list_means_no_resource_requests() {
    let t = state_a();
    t.put("r6", b"r6\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[("r6", "created", "2026-03-01T05:00:00Z")],
    );
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    ok(&mut incremental(dir.path()));
    srv.clear_requests();
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(s["created"].as_u64(), Some(0));
    let list = srv
        .requests()
        .into_iter()
        .find(|r| r.path == "/changelist.xml")
        .expect("list polled");
    assert!(
        list.header("if-none-match").is_some(),
        "not a conditional GET"
    );
    assert_eq!(list.status, 304);
    assert!(
        srv.requests().iter().all(|r| !r.path.starts_with("/res/")),
        "{:?}",
        srv.requests()
    );
}

#[test]
fn resourcesync_1_0_lastmod_is_the_event_time() {
    let srv = TestServer::start(testdata("syntax/v1_0"));
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/"), dir.path()));
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(s["created"].as_u64(), Some(1));
    // The 1.0 list's change times are its <lastmod>s; the latest is the new sync point.
    assert_eq!(s["sync_point"], "2026-01-02T09:00:00Z");
    assert!(current(dir.path()).contains_key(&format!("{}/res/d.txt", srv.base())));
}

#[test]
fn a_2012_change_set_chain_is_walked_back_through_prev() {
    let srv = TestServer::start(testdata("syntax/alpha2012"));
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/resourcelist.xml"), dir.path()));
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(
        srv.count("/changeset-prev.xml"),
        1,
        "prev link not followed"
    );
    // d.txt created; tmp.txt created then deleted = a delete of a resource we never had.
    assert_eq!(
        (s["created"].as_u64(), s["unknown_deletes"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    assert_eq!(
        srv.count("/res/tmp.txt"),
        0,
        "created->deleted must not fetch"
    );
    let m = current(dir.path());
    assert!(m.contains_key(&format!("{}/res/d.txt", srv.base())));
    assert_eq!(m.len(), 4);
}

#[test]
fn created_then_deleted_and_deleted_then_created_in_one_list() {
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    t.put("r1", b"r1 back again\n");
    t.put("r9", b"r9, gone before anyone fetched it\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r9", "created", "2026-03-01T01:00:00Z"),
            ("r1", "deleted", "2026-03-01T02:00:00Z"),
            ("r9", "deleted", "2026-03-01T03:00:00Z"),
            ("r1", "created", "2026-03-01T04:00:00Z"),
            ("zz", "deleted", "2026-03-01T05:00:00Z"),
        ],
    );
    t.remove("r9");
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(s["unknown_deletes"].as_u64(), Some(2), "{s}"); // r9 (created->deleted) and zz
    assert_eq!(s["updated"].as_u64(), Some(1), "{s}"); // r1: deleted->created = fetch
    assert_eq!(srv.count("/res/r9"), 0);
    t.resource_list("2026-03-02T00:00:00Z", &["r1", "r2", "r3", "r4", "r5"]);
    assert_equals_fresh_baseline(&srv, dir.path());
}

#[test]
fn a_gap_stops_before_anything_is_applied() {
    let t = state_a();
    t.put("r6", b"r6\n");
    // The only list starts a day after the baseline's `at`.
    t.change_list(
        "changelist.xml",
        "2026-03-02T00:00:00Z",
        None,
        &[("r6", "created", "2026-03-02T05:00:00Z")],
    );
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    let before = (
        current(dir.path()),
        version_count(dir.path()),
        sync_point(dir.path()),
    );
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("gap in the change history: the changes from 2026-03-01T00:00:00Z to 2026-03-02T00:00:00Z are not available"),
        "{err}"
    );
    assert!(err.contains("run rsmirror baseline again"), "{err}");
    assert_eq!(
        (
            current(dir.path()),
            version_count(dir.path()),
            sync_point(dir.path())
        ),
        before
    );
    assert_eq!(srv.count("/res/r6"), 0);

    // Closed lists that do not abut are a gap too.
    t.change_list("cl1.xml", T0, Some("2026-03-01T12:00:00Z"), &[]);
    t.change_list("cl2.xml", "2026-03-01T13:00:00Z", None, &[]);
    t.change_list_index(
        "changelist.xml",
        T0,
        &[
            ("cl1.xml", T0, Some("2026-03-01T12:00:00Z")),
            ("cl2.xml", "2026-03-01T13:00:00Z", None),
        ],
    );
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr_of(&out).contains("from 2026-03-01T12:00:00Z to 2026-03-01T13:00:00Z"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_change_list_archive_fills_the_gap() {
    let t = state_a();
    t.put("r6", b"r6\n");
    t.put("r7", b"r7\n");
    t.change_list(
        "old.xml",
        T0,
        Some("2026-03-02T00:00:00Z"),
        &[("r6", "created", "2026-03-01T06:00:00Z")],
    );
    t.change_list(
        "changelist.xml",
        "2026-03-02T00:00:00Z",
        None,
        &[("r7", "created", "2026-03-02T05:00:00Z")],
    );
    std::fs::write(
        t.path().join("archive.xml"),
        format!(
            "<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
             <rs:md capability=\"changelist-archive\"/>\n\
             <url><loc>{ORIGIN}/old.xml</loc><rs:md from=\"{T0}\" until=\"2026-03-02T00:00:00Z\"/></url>\n</urlset>\n"
        ),
    )
    .unwrap();
    std::fs::write(
        t.path().join("capabilitylist.xml"),
        format!(
            "<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
             <rs:md capability=\"capabilitylist\"/>\n\
             <url><loc>{ORIGIN}/resourcelist.xml</loc><rs:md capability=\"resourcelist\"/></url>\n\
             <url><loc>{ORIGIN}/changelist.xml</loc><rs:md capability=\"changelist\"/></url>\n\
             <url><loc>{ORIGIN}/archive.xml</loc><rs:md capability=\"changelist-archive\"/></url>\n</urlset>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(s["created"].as_u64(), Some(2), "{s}");
}

#[test]
fn a_failed_change_holds_the_sync_point_back_and_is_retried() {
    let t = state_a();
    t.put("r6", b"r6\n");
    t.put("r7", b"r7\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r6", "created", "2026-03-01T01:00:00Z"),
            ("r7", "created", "2026-03-01T02:00:00Z"),
        ],
    );
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    srv.set_rule("/res/r6", Rule::Status(404));
    let out = incremental(dir.path()).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["sync_point"], "2026-03-01T01:00:00Z");
    srv.clear_rule("/res/r6");
    let s = ok(&mut incremental(dir.path()));
    assert_eq!(s["created"].as_u64(), Some(1));
    assert_eq!(s["sync_point"], "2026-03-01T02:00:00Z");
}

#[test]
fn dry_run_prints_the_changes_and_writes_nothing() {
    let t = state_a();
    t.put("r6", b"r6\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r6", "created", "2026-03-01T01:00:00Z"),
            ("r2", "deleted", "2026-03-01T02:00:00Z"),
        ],
    );
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    let before = (
        current(dir.path()),
        version_count(dir.path()),
        sync_point(dir.path()),
    );
    let out = incremental(dir.path()).arg("-n").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let plan = stdout_of(&out);
    assert!(
        plan.contains(&format!(
            "+ {}/res/r6 (created at 2026-03-01T01:00:00Z)",
            srv.base()
        )),
        "{plan}"
    );
    assert!(
        plan.contains(&format!(
            "- {}/res/r2 (deleted at 2026-03-01T02:00:00Z)",
            srv.base()
        )),
        "{plan}"
    );
    assert_eq!(
        (
            current(dir.path()),
            version_count(dir.path()),
            sync_point(dir.path())
        ),
        before
    );
    assert_eq!(srv.count("/res/r6"), 0);
}

#[test]
fn sigkill_mid_incremental_then_rerun_converges() {
    let t = Tree::new();
    t.capability_list("changelist.xml");
    t.put("seed", b"seed\n");
    t.resource_list(T0, &["seed"]);
    let mut entries = Vec::new();
    let names: Vec<String> = (0..200).map(|i| format!("n{i:03}")).collect();
    let times: Vec<String> = (0..200)
        .map(|i| format!("2026-03-01T01:{:02}:{:02}Z", i / 60, i % 60))
        .collect();
    for (n, at) in names.iter().zip(&times) {
        t.put(n, format!("{n} body\n").repeat(50).as_bytes());
        entries.push((n.as_str(), "created", at.as_str()));
    }
    t.change_list("changelist.xml", T0, None, &entries);
    let srv = TestServer::start(t.path());
    let reference = tempfile::tempdir().unwrap();
    ok(&mut baseline(
        &srv.url("/capabilitylist.xml"),
        reference.path(),
    ));
    ok(&mut incremental(reference.path()));

    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    srv.set_delay(Duration::from_millis(15));
    srv.clear_requests();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["incremental", "-q", "-j", "2", "--mirror"])
        .arg(dir.path())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while srv
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/res/"))
        .count()
        < 80
    {
        assert!(Instant::now() < deadline, "run never got going");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_consistent(dir.path());
    assert!(current(dir.path()).len() < 201);
    srv.set_delay(Duration::ZERO);
    ok(&mut incremental(dir.path()));
    assert_eq!(current(dir.path()), current(reference.path()));
    assert_eq!(sync_point(dir.path()), sync_point(reference.path()));
    assert_eq!(version_count(dir.path()), version_count(reference.path()));
    assert_consistent(dir.path());
}

/// A change list's entries as (uri index, change, minute): distinct minutes.
fn scenario() -> impl Strategy<Value = Vec<(usize, u8)>> {
    proptest::collection::vec((0usize..5, 0u8..3), 1..12)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    /// ResourceSync 1.1 §10.2: with distinct event times, document order does not matter.
    #[test]
    fn any_permutation_gives_the_same_mirror(ops in scenario(), seed in any::<u64>()) {
        let t = state_a();
        let srv = TestServer::start(t.path());
        let dir = tempfile::tempdir().unwrap();
        ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
        // The last event per URI decides the final state; serve content for it.
        let mut entries: Vec<(String, &str, String)> = Vec::new();
        for (minute, (r, c)) in ops.iter().enumerate() {
            let name = format!("p{r}");
            let change = ["created", "updated", "deleted"][*c as usize];
            entries.push((name, change, format!("2026-03-01T01:{minute:02}:00Z")));
        }
        let mut last: BTreeMap<String, &str> = BTreeMap::new();
        for (n, c, _) in &entries {
            last.insert(n.clone(), c);
        }
        for (n, c) in &last {
            if *c == "deleted" { t.remove(n) } else { t.put(n, format!("{n} final\n").as_bytes()) }
        }
        // Shuffle document order deterministically from the seed.
        let mut shuffled = entries.clone();
        let mut x = seed | 1;
        for i in (1..shuffled.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            shuffled.swap(i, (x % (i as u64 + 1)) as usize);
        }
        // The final event per URI describes the bytes served; superseded events are never
        // fetched, so whatever they declare does not matter.
        let doc: Vec<(&str, &str, &str)> = shuffled.iter().map(|(n, c, at)| (n.as_str(), *c, at.as_str())).collect();
        let finals: Vec<(&str, &str, &str)> = doc.iter().copied().filter(|(n, c, at)| {
            let latest = entries.iter().filter(|(m, _, _)| m == n).map(|(_, _, a)| a.as_str()).max().unwrap();
            *at == latest && *c == last[*n]
        }).collect();
        let plain: Vec<(&str, &str, &str)> = doc.iter().copied().filter(|e| !finals.contains(e)).collect();
        let mut body_entries = finals.clone();
        for (n, c, at) in plain {
            // Tree::change_list hashes the file a create/update names: give superseded
            // entries of since-deleted resources a stub for the time of writing.
            if c != "deleted" && !t.path().join("res").join(n).exists() { t.put(n, b"stub\n"); }
            body_entries.push((n, c, at));
        }
        body_entries.sort_by_key(|e| doc.iter().position(|d| d == e));
        t.change_list("changelist.xml", T0, None, &body_entries);
        for (n, c) in &last { if *c == "deleted" { t.remove(n) } }
        ok(&mut incremental(dir.path()));
        let mut names: Vec<&str> = vec!["r1", "r2", "r3", "r4", "r5"];
        let live: Vec<String> = last.iter().filter(|(_, c)| **c != "deleted").map(|(n, _)| n.clone()).collect();
        names.extend(live.iter().map(|s| s.as_str()));
        let want: BTreeMap<String, String> = names.iter().map(|n| {
            (format!("{}/res/{n}", srv.base()), sha256_file(&t.path().join("res").join(n)))
        }).collect();
        prop_assert_eq!(current(dir.path()), want);
    }
}

/// Where a collection publishes its changes is recorded by its baseline (and by each
/// incremental after), and the next incremental asks for that Change List at once, with the
/// Capability List that names it (one round trip sooner), conditionally once it has read the
/// list: that answer is the one the run reads (one GET of the list, its changes applied).
/// Under `--delay` nothing goes ahead: the list is asked for once the Capability List is in.
#[test]
fn the_change_list_is_asked_for_with_the_capability_list() {
    use sha2::Digest as _;
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    let pause = Duration::from_millis(400);
    srv.set_delay(pause);
    let mut entries = vec![];
    for (step, name) in ["r1", "r2", "r3"].into_iter().enumerate() {
        t.put(name, format!("{name}, changed\n").as_bytes());
        entries.push((
            name,
            "updated",
            [
                "2026-03-01T01:00:00Z",
                "2026-03-01T02:00:00Z",
                "2026-03-01T03:00:00Z",
            ][step],
        ));
        t.change_list("changelist.xml", T0, None, &entries);
        srv.clear_requests();
        let mut run = incremental(dir.path());
        if step == 2 {
            run.args(["--delay", "0.1"]);
        }
        ok(&mut run);
        let requests = srv.requests();
        let of = |path: &str| -> Vec<_> { requests.iter().filter(|r| r.path == path).collect() };
        let (cap, list) = (of("/capabilitylist.xml"), of("/changelist.xml"));
        assert_eq!((cap.len(), list.len()), (1, 1), "step {step}: {requests:?}");
        // The first run after the baseline has not read the list yet: no validators to send.
        let conditional = list[0].header("if-none-match").is_some();
        assert_eq!(conditional, step > 0, "step {step}: {requests:?}");
        assert_eq!(list[0].status, 200);
        let apart = list[0].at.saturating_duration_since(cap[0].at);
        if step < 2 {
            assert!(
                apart < pause / 2,
                "step {step}: the list {apart:?} after: {requests:?}"
            );
        } else {
            assert!(apart >= pause, "ahead under --delay: {requests:?}");
        }
        let want = hex::encode(sha2::Sha256::digest(format!("{name}, changed\n")));
        assert_eq!(
            current(dir.path())[&format!("{}/res/{name}", srv.base())],
            want
        );
    }
}

/// Issue 67, 4: a Change List in the 2013 beta syntax (`<rs:md capability="changelist"
/// modified="…"/>`, as in "Evaluating Sitemaps for ResourceSync", Listing 6) modified after the
/// sync point is no gap: `modified=` is when it last changed, not where it starts. Its change
/// is applied.
#[test]
fn a_beta_change_list_modified_after_the_sync_point_is_applied() {
    let t = Tree::new();
    t.put("res1", b"version 1\n");
    t.resource_list("2013-02-01T00:00:00Z", &["res1"]);
    t.change_list("changelist.xml", "2013-02-01T00:00:00Z", None, &[]);
    t.capability_list("changelist.xml");
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    t.put("res1", b"version 2, changed on the 2nd\n");
    let beta = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
         xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
         <rs:ln rel=\"resourcesync\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n\
         <rs:md capability=\"changelist\" modified=\"2013-02-03T09:00:00Z\"/>\n\
         <url><loc>{ORIGIN}/res/res1</loc><lastmod>2013-02-02T13:00:00Z</lastmod>\
         <rs:md change=\"updated\" length=\"30\"/></url>\n</urlset>\n"
    );
    std::fs::write(t.path().join("changelist.xml"), beta).unwrap();
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let now = current(dir.path());
    let (_, sha) = now.iter().next().unwrap();
    assert_eq!(*sha, sha256_file(&t.path().join("res/res1")));
}
