//! `rsmirror baseline` against a real HTTP server: discovery paths, syntax generations, every
//! broken input (exit code, message, and a mirror with nothing wrong in it afterwards), the
//! lock, and a SIGKILL in the middle of a run.

use crate::server::{testdata, Rule, TestServer};
use crate::support::*;
use std::time::{Duration, Instant};

const SAMPLE: &[&str] = &[
    "/res/a.txt",
    "/res/b.txt",
    "/res/data.json",
    "/res/image.png",
    "/res/sub/nested.txt",
    "/res/with%20space.txt",
    "/res/empty.txt",
    "/res/page.html",
];
const ABC: &[&str] = &["/res/a.txt", "/res/b.txt", "/res/c.txt"];

fn run_ok(source: &str, mirror: &std::path::Path) {
    let out = baseline(source, mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    assert_eq!(object_index(mirror).as_deref(), Some(OBJECT_INDEX_SQL));
}

#[test]
fn discovery_from_the_site_root() {
    let srv = TestServer::start(testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), dir.path());
    assert_mirror_is(dir.path(), &srv.base(), &testdata("sample"), SAMPLE);
    assert_eq!(srv.count("/.well-known/resourcesync"), 1);
    // Anchored at the list's `at`.
    assert_eq!(
        sync_point(dir.path()),
        Some((Some("2026-01-01T00:00:00Z".into()), true))
    );
}

#[test]
fn discovery_from_robots_txt() {
    let srv = TestServer::start(testdata("syntax/discovery_robots"));
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), dir.path());
    assert_mirror_is(
        dir.path(),
        &srv.base(),
        &testdata("syntax/discovery_robots"),
        ABC,
    );
    assert_eq!(srv.count("/robots.txt"), 1);
}

#[test]
fn discovery_from_a_capability_list_and_from_an_index() {
    let srv = TestServer::start(testdata("sample"));
    for entry in ["/rs/capabilitylist.xml", "/rs/resourcelist-index.xml"] {
        let dir = tempfile::tempdir().unwrap();
        run_ok(&srv.url(entry), dir.path());
        assert_mirror_is(dir.path(), &srv.base(), &testdata("sample"), SAMPLE);
    }
}

#[test]
fn resourcesync_1_1_1_0_alpha_2012_plain_and_gzip() {
    for (tree, entry) in [
        ("syntax/v1_1", "/resourcelist.xml"),
        ("syntax/v1_0", "/resourcelist.xml"),
        ("syntax/alpha2012", "/resourcelist.xml"),
        ("syntax/plain", "/resourcelist.xml"),
        ("syntax/gzip", "/"),
    ] {
        let srv = TestServer::start(testdata(tree));
        let dir = tempfile::tempdir().unwrap();
        run_ok(&srv.url(entry), dir.path());
        assert_mirror_is(dir.path(), &srv.base(), &testdata(tree), ABC);
        let anchored = sync_point(dir.path()).map(|(_, a)| a);
        match tree {
            "syntax/plain" | "syntax/alpha2012" => assert_eq!(anchored, Some(false), "{tree}"),
            _ => assert_eq!(anchored, Some(true), "{tree}"),
        }
    }
}

#[test]
fn rerun_fetches_nothing_when_nothing_changed() {
    let srv = TestServer::start(testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), dir.path());
    srv.clear_requests();
    let out = baseline(&srv.url("/"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["unchanged"], 8);
    assert_eq!(summary["created"], 0);
    assert!(srv.requests().iter().all(|r| !r.path.starts_with("/res/")));
    assert_eq!(version_count(dir.path()), 8);
}

/// A broken list: exit 4, the message, and no resource in the mirror.
fn assert_source_error(tree: &str, needles: &[&str]) {
    let srv = TestServer::start(testdata(tree));
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{tree}: {err}");
    for n in needles {
        assert!(err.contains(n), "{tree}: {err:?} lacks {n:?}");
    }
    assert!(current(dir.path()).is_empty(), "{tree}");
    assert_eq!(sync_point(dir.path()), None);
    assert!(
        srv.requests().iter().all(|r| !r.path.starts_with("/res/")),
        "{tree}: fetched resources"
    );
    assert_consistent(dir.path());
}

#[test]
fn malformed_xml() {
    assert_source_error(
        "broken/malformed_xml",
        &["resourcelist.xml: line ", "malformed XML"],
    );
}

#[test]
fn truncated_list() {
    assert_source_error(
        "broken/truncated",
        &[
            "resourcelist.xml: line ",
            "document ends before </urlset>: truncated",
        ],
    );
}

#[test]
fn doctype_is_refused() {
    assert_source_error("broken/doctype", &["DOCTYPE or entity declaration refused"]);
}

#[test]
fn wrong_namespace() {
    assert_source_error(
        "broken/wrong_namespace",
        &["is not a Sitemap <urlset> or <sitemapindex>"],
    );
}

#[test]
fn a_time_without_a_zone() {
    assert_source_error(
        "broken/no_zone",
        &[
            "time without a zone in \"2026-01-01T00:00:00\"",
            "--assume-utc",
        ],
    );
    // With --assume-utc the same list mirrors.
    let srv = TestServer::start(testdata("broken/no_zone"));
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .arg("--assume-utc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// One bad resource: exit 3, the others land, the bad one is reported and absent. A resource
/// whose bytes contradict the list, or that is gone (404), is `pending` instead (issue 26: it
/// changed after the list was written): exit 0, and the sync point is recorded.
fn assert_partial(srv: &TestServer, tree: &str, good: &[&str], class: &str, needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    let code = if class == "pending" { 0 } else { 3 };
    assert_eq!(out.status.code(), Some(code), "{tree}: {err}");
    for n in needles {
        assert!(err.contains(n), "{tree}: {err:?} lacks {n:?}");
    }
    assert_mirror_is(dir.path(), &srv.base(), &testdata(tree), good);
    // Built again at the end of a run that failed in part, as of one that did not.
    assert_eq!(object_index(dir.path()).as_deref(), Some(OBJECT_INDEX_SQL));
    let problems = last_run_problems(dir.path());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].1, class);
    // A baseline with failures records no sync point: an incremental must not start from it.
    // Refusals are policy, not accidents: they do not hold the sync point back.
    if class == "failed" {
        assert_eq!(sync_point(dir.path()), None);
    } else {
        assert!(sync_point(dir.path()).is_some());
    }
    assert!(
        std::fs::read_dir(dir.path().join("staging"))
            .unwrap()
            .next()
            .is_none(),
        "staging left over"
    );
}

#[test]
fn digest_mismatch() {
    let srv = TestServer::start(testdata("broken/digest_mismatch"));
    assert_partial(
        &srv,
        "broken/digest_mismatch",
        &["/res/a.txt", "/res/c.txt"],
        "pending",
        &["pending: ", "b.txt", "md5 mismatch: expected"],
    );
}

#[test]
fn length_mismatch() {
    let srv = TestServer::start(testdata("broken/length_mismatch"));
    assert_partial(
        &srv,
        "broken/length_mismatch",
        &["/res/a.txt", "/res/c.txt"],
        "pending",
        &["pending: ", "b.txt", "length mismatch: expected"],
    );
}

#[test]
fn a_404_for_one_resource() {
    let srv = TestServer::start(testdata("broken/missing_resource"));
    assert_partial(
        &srv,
        "broken/missing_resource",
        &["/res/a.txt", "/res/c.txt"],
        "pending",
        &["pending: ", "b.txt: HTTP 404"],
    );
    assert_eq!(srv.count("/res/b.txt"), 1, "a 404 is not retried");
}

#[test]
fn out_of_scope_url() {
    let srv = TestServer::start(testdata("broken/out_of_scope"));
    assert_partial(
        &srv,
        "broken/out_of_scope",
        ABC,
        "refused",
        &["evil.example.net", "outside the source's scope"],
    );
}

#[test]
fn file_url_in_a_list() {
    let srv = TestServer::start(testdata("broken/file_url"));
    assert_partial(
        &srv,
        "broken/file_url",
        ABC,
        "refused",
        &["file:///etc/passwd", "scheme file"],
    );
}

#[test]
fn redirect_to_another_host() {
    let srv = TestServer::start(testdata("broken/redirect_offsite"));
    srv.set_rule(
        "/res/moved",
        Rule::Redirect {
            location: "http://evil.example.net/moved".into(),
            status: 302,
        },
    );
    let listed: Vec<&str> = vec!["/res/a.txt", "/res/b.txt", "/res/c.txt"];
    assert_partial(
        &srv,
        "broken/redirect_offsite",
        &listed,
        "refused",
        &["evil.example.net"],
    );
    // A redirect within the site is followed and verified.
    srv.set_rule(
        "/res/moved",
        Rule::Redirect {
            location: "/res/moved-target".into(),
            status: 301,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/resourcelist.xml"), dir.path());
}

#[test]
fn retried_503_then_200_lands() {
    let srv = TestServer::start(testdata("sample"));
    srv.set_rule(
        "/res/a.txt",
        Rule::FailThen {
            status: 503,
            times: 2,
            retry_after: None,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), dir.path());
    assert_mirror_is(dir.path(), &srv.base(), &testdata("sample"), SAMPLE);
    assert_eq!(srv.count("/res/a.txt"), 3);
}

/// Whatever the number of transfers (and so of fetching threads and of helpers for retries),
/// a retried resource lands after exactly the requests the retries allow.
#[test]
fn retries_land_whatever_the_jobs() {
    for jobs in ["1", "2", "8"] {
        let srv = TestServer::start(testdata("sample"));
        srv.set_rule(
            "/res/a.txt",
            Rule::FailThen {
                status: 503,
                times: 2,
                retry_after: None,
            },
        );
        srv.set_rule(
            "/res/b.txt",
            Rule::FailThen {
                status: 429,
                times: 1,
                retry_after: Some("1".into()),
            },
        );
        let dir = tempfile::tempdir().unwrap();
        let out = baseline(&srv.url("/"), dir.path())
            .args(["-q", "-j", jobs])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "-j {jobs}: {}", stderr_of(&out));
        assert_mirror_is(dir.path(), &srv.base(), &testdata("sample"), SAMPLE);
        assert_eq!(srv.count("/res/a.txt"), 3, "-j {jobs}");
        assert_eq!(srv.count("/res/b.txt"), 2, "-j {jobs}");
    }
}

#[test]
fn retry_after_is_honoured() {
    let srv = TestServer::start(testdata("sample"));
    srv.set_rule(
        "/res/b.txt",
        Rule::FailThen {
            status: 429,
            times: 1,
            retry_after: Some("2".into()),
        },
    );
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), dir.path());
    let times: Vec<Instant> = srv
        .requests()
        .iter()
        .filter(|r| r.path == "/res/b.txt")
        .map(|r| r.at)
        .collect();
    assert_eq!(times.len(), 2);
    assert!(
        times[1] - times[0] >= Duration::from_millis(1900),
        "waited {:?}",
        times[1] - times[0]
    );
}

/// A 429 (or 503) with `Retry-After` asks the client, not one request, for time: no new request
/// goes to the host until it has passed, whichever transfer would send it; those already under
/// way finish.
#[test]
fn retry_after_holds_every_request_to_the_host() {
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), 40, 1000);
    let srv = TestServer::start(src.path());
    srv.set_delay(Duration::from_millis(30));
    srv.set_rule(
        "/res/000005",
        Rule::FailThen {
            status: 429,
            times: 1,
            retry_after: Some("2".into()),
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .args(["-q", "-j", "4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(dir.path()).len(), 40);
    let requests = srv.requests();
    let refused = requests
        .iter()
        .find(|r| r.status == 429)
        .expect("the 429 was sent")
        .at;
    // Up to three requests were under way beside the refused one (-j 4) and may land in the
    // first moments; after those, nothing until the two seconds have passed.
    let asked_too_soon: Vec<Duration> = requests
        .iter()
        .filter(|r| r.path.starts_with("/res/") && r.at > refused)
        .map(|r| r.at - refused)
        .filter(|d| *d > Duration::from_millis(500) && *d < Duration::from_millis(1900))
        .collect();
    assert!(
        asked_too_soon.is_empty(),
        "requested {asked_too_soon:?} after the 429"
    );
    let after: Vec<Duration> = requests
        .iter()
        .filter(|r| r.path.starts_with("/res/") && r.at > refused)
        .map(|r| r.at - refused)
        .collect();
    assert!(
        after
            .iter()
            .filter(|d| **d >= Duration::from_millis(1900))
            .count()
            >= 30,
        "{after:?}"
    );
}

#[test]
fn a_stalled_server_cannot_hang_the_run() {
    let srv = TestServer::start(testdata("sample"));
    srv.set_rule("/res/b.txt", Rule::Stall);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = baseline(&srv.url("/"), dir.path())
        .args(["--timeout", "3", "--tries", "3"])
        .output()
        .unwrap();
    // Three tries of 3 s each plus backoffs; generous for a loaded machine (the resources that
    // do answer get retries too), far from a hang.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("b.txt: no response within 3 s"),
        "{}",
        stderr_of(&out)
    );
    let good: Vec<&str> = SAMPLE
        .iter()
        .copied()
        .filter(|p| *p != "/res/b.txt")
        .collect();
    assert_mirror_is(dir.path(), &srv.base(), &testdata("sample"), &good);
}

#[test]
fn a_second_run_while_the_first_holds_the_lock() {
    let srv = TestServer::start(testdata("sample"));
    srv.set_delay(Duration::from_millis(400));
    let dir = tempfile::tempdir().unwrap();
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["baseline", &srv.url("/"), "-q", "-j", "1", "--mirror"])
        .arg(dir.path())
        .spawn()
        .unwrap();
    // Wait until the first run is fetching resources (it holds the lock by then).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !srv.requests().iter().any(|r| r.path.starts_with("/res/")) {
        assert!(
            Instant::now() < deadline,
            "first run never started fetching"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = baseline(&srv.url("/"), dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains(&format!(
            "another rsmirror run (pid {}) holds the lock",
            first.id()
        )),
        "{err}"
    );
    assert!(first.wait().unwrap().success());
    assert_mirror_is(dir.path(), &srv.base(), &testdata("sample"), SAMPLE);
}

#[test]
fn sigkill_mid_run_then_rerun_converges() {
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 300, 2048);
    let srv = TestServer::start(tree.path());
    srv.set_delay(Duration::from_millis(15));
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args([
            "baseline",
            &srv.url("/resourcelist.xml"),
            "-q",
            "-j",
            "2",
            "--mirror",
        ])
        .arg(dir.path())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while srv
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/res/"))
        .count()
        < 120
    {
        assert!(Instant::now() < deadline, "run never got going");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let landed = current(dir.path()).len();
    assert!(
        landed < 300,
        "the kill came too late to test anything ({landed} landed)"
    );
    assert_consistent(dir.path());
    assert_eq!(
        object_index(dir.path()),
        None,
        "the first load runs without the index of versions by object"
    );

    // The re-run's open builds it before anything else (its own load is not a first one).
    srv.set_delay(Duration::ZERO);
    run_ok(&srv.url("/resourcelist.xml"), dir.path());
    let reference = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/resourcelist.xml"), reference.path());
    assert_eq!(current(dir.path()), current(reference.path()));
    assert_eq!(current(dir.path()).len(), 300);
    assert_eq!(
        version_count(dir.path()),
        300,
        "no duplicate versions after the re-run"
    );
    assert_eq!(sync_point(dir.path()), sync_point(reference.path()));
    assert_consistent(dir.path());
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    let abandoned: i64 = conn
        .query_row(
            "SELECT count(*) FROM runs WHERE outcome = 'abandoned'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(abandoned, 1, "the killed run is recorded as abandoned");
}

#[test]
fn gone_resources_are_reported_and_deleted_only_with_delete() {
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 10, 100);
    let srv = TestServer::start(tree.path());
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/resourcelist.xml"), dir.path());
    // The source drops three resources.
    let smaller = tempfile::tempdir().unwrap();
    generate_source(smaller.path(), 7, 100);
    srv.set_root(smaller.path());
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["gone"].as_u64(), s["deleted"].as_u64()),
        (Some(3), Some(0))
    );
    assert_eq!(current(dir.path()).len(), 10);
    // --max-delete below the count stops before the first delete.
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .args(["--delete", "--max-delete", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("more than --max-delete 2"));
    assert!(tombstoned(dir.path()).is_empty());
    // A list that fails to load never deletes.
    srv.set_rule("/resourcelist.xml", Rule::Status(500));
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .args(["--delete", "--tries", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(tombstoned(dir.path()).is_empty());
    srv.clear_rule("/resourcelist.xml");
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .arg("--delete")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(tombstoned(dir.path()).len(), 3);
    assert_eq!(current(dir.path()).len(), 7);
    // Bytes stay: every version's object (the tombstoned ones' too) is still there.
    assert_eq!(version_count(dir.path()), 13);
    assert_consistent(dir.path());
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let srv = TestServer::start(testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let out = baseline(&srv.url("/"), &mirror).arg("-n").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let plan = stdout_of(&out);
    assert_eq!(
        plan.lines().filter(|l| l.starts_with("+ ")).count(),
        8,
        "{plan}"
    );
    assert!(!mirror.exists(), "a dry run created the mirror");
    assert!(srv.requests().iter().all(|r| !r.path.starts_with("/res/")));
}

#[test]
fn index_part_that_fails_means_partial_and_no_deletes() {
    let srv = TestServer::start(testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), dir.path());
    srv.set_rule("/rs/resourcelist-2.xml", Rule::Status(404));
    let out = baseline(&srv.url("/"), dir.path())
        .arg("--delete")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(
        tombstoned(dir.path()).is_empty(),
        "deleted after an incomplete list"
    );
    assert_eq!(current(dir.path()).len(), 8);
}

/// Two Capability Lists behind one Source Description: both mirrored, or the one chosen.
#[test]
fn several_capability_lists_all_or_the_one_chosen() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    let ns = "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\"";
    let o = "http://sample.example.org";
    std::fs::create_dir_all(root.join(".well-known")).unwrap();
    std::fs::create_dir_all(root.join("res")).unwrap();
    std::fs::write(
        root.join(".well-known/resourcesync"),
        format!(
            "<urlset {ns}><rs:md capability=\"description\"/>\
             <url><loc>{o}/texts/cl.xml</loc><rs:md capability=\"capabilitylist\"/></url>\
             <url><loc>{o}/images/cl.xml</loc><rs:md capability=\"capabilitylist\"/></url></urlset>"
        ),
    )
    .unwrap();
    for set in ["texts", "images"] {
        std::fs::create_dir_all(root.join(set)).unwrap();
        std::fs::write(root.join("res").join(set), format!("{set}\n")).unwrap();
        std::fs::write(
            root.join(set).join("cl.xml"),
            format!(
                "<urlset {ns}><rs:md capability=\"capabilitylist\"/>\
                 <url><loc>{o}/{set}/rl.xml</loc><rs:md capability=\"resourcelist\"/></url></urlset>"
            ),
        )
        .unwrap();
        std::fs::write(
            root.join(set).join("rl.xml"),
            format!(
                "<urlset {ns}><rs:md capability=\"resourcelist\" at=\"2026-01-01T00:00:00Z\"/>\
                 <url><loc>{o}/res/{set}</loc></url></urlset>"
            ),
        )
        .unwrap();
    }
    let srv = TestServer::start(root);
    let all = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), all.path());
    assert_mirror_is(
        all.path(),
        &srv.base(),
        root,
        &["/res/texts", "/res/images"],
    );
    let conn = rusqlite::Connection::open(all.path().join("catalog.sqlite")).unwrap();
    let points: i64 = conn
        .query_row("SELECT count(*) FROM sync_points", [], |r| r.get(0))
        .unwrap();
    assert_eq!(points, 2, "one sync point per Capability List");

    let one = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/"), one.path())
        .args(["--capability-list", &srv.url("/images/cl.xml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_mirror_is(one.path(), &srv.base(), root, &["/res/images"]);
    let out = baseline(&srv.url("/"), one.path())
        .args(["--capability-list", &srv.url("/nope.xml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(stderr_of(&out).contains("is not among the Capability Lists found"));
}

/// A re-run repairs what a cheap look can see: a missing or truncated object is fetched again
/// (the catalog and the source agreeing is not enough; the bytes must be there).
#[test]
fn rerun_refetches_missing_or_truncated_objects() {
    let srv = TestServer::start(testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), dir.path());
    let m = current(dir.path());
    let object = |uri: &str| {
        let sha = &m[&format!("{}{uri}", srv.base())];
        dir.path().join("objects/sha256").join(&sha[0..2]).join(sha)
    };
    std::fs::remove_file(object("/res/a.txt")).unwrap();
    let truncated = object("/res/page.html");
    let mut perms = std::fs::metadata(&truncated).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&truncated, perms).unwrap();
    std::fs::write(&truncated, b"cut").unwrap();
    srv.clear_requests();
    let out = baseline(&srv.url("/"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            s["unchanged"].as_u64(),
            s["repaired"].as_u64(),
            s["updated"].as_u64()
        ),
        (Some(6), Some(2), Some(0)),
        "{s}"
    );
    assert_eq!(version_count(dir.path()), 8, "a repair adds no version");
    assert_eq!(srv.count("/res/a.txt") + srv.count("/res/page.html"), 2);
    assert_mirror_is(dir.path(), &srv.base(), &testdata("sample"), SAMPLE);
}

/// A part of an index that breaks off half-way contributes nothing (not even the entries read
/// before the break), and the snapshot is incomplete: exit 3, no sync point.
#[test]
fn a_part_truncated_half_way_contributes_nothing() {
    let srv = TestServer::start(testdata("sample"));
    let part = std::fs::read_to_string(testdata("sample/rs/resourcelist-2.xml")).unwrap();
    let cut = part.find("</url>").unwrap() + "</url>".len();
    srv.set_rule(
        "/rs/resourcelist-2.xml",
        Rule::Body(part.as_bytes()[..cut].to_vec()),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/"), dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("truncated"), "{}", stderr_of(&out));
    let part1: Vec<&str> = vec![
        "/res/a.txt",
        "/res/b.txt",
        "/res/data.json",
        "/res/image.png",
    ];
    let got: Vec<String> = current(dir.path()).into_keys().collect();
    assert_eq!(got.len(), 4, "{got:?}");
    for p in part1 {
        assert!(
            got.contains(&format!("{}{p}", srv.base())),
            "{p} missing from {got:?}"
        );
    }
    assert_eq!(sync_point(dir.path()), None);
}

/// Workers keep their connections: a few connections for hundreds of requests, not one per
/// resource (one for the documents, one per transfer in flight).
#[test]
fn connections_are_kept_alive_across_resources() {
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 200, 256);
    let srv = TestServer::start(tree.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .args(["-j", "8", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(current(dir.path()).len(), 200);
    let requests = srv.requests();
    let peers: std::collections::BTreeSet<_> = requests.iter().filter_map(|r| r.peer).collect();
    assert_eq!(requests.len(), 201);
    assert!(
        peers.len() <= 9,
        "{} connections for {} requests with 8 workers",
        peers.len(),
        requests.len()
    );
    // The workers' staging folders are gone with the run.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("staging"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A mirror made before catalog version 2 (objects in two folder levels) is upgraded to the
/// current version by the next writing run: objects moved, nothing fetched again, audit
/// clean; read-only commands refuse it with a hint until then.
#[test]
fn a_version_1_mirror_is_upgraded_to_one_folder_level() {
    let srv = TestServer::start(testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    run_ok(&srv.url("/"), dir.path());
    let before = current(dir.path());
    // Make it look like a version 1 mirror.
    for sha in before.values() {
        let top = dir.path().join("objects/sha256").join(&sha[0..2]);
        let old = top.join(&sha[2..4]);
        std::fs::create_dir_all(&old).unwrap();
        std::fs::rename(top.join(sha), old.join(sha)).unwrap();
    }
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    conn.execute_batch("PRAGMA user_version = 1").unwrap();
    drop(conn);

    let out = baseline(&srv.url("/"), dir.path())
        .arg("--dry-run")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr_of(&out));
    let said = format!(
        "has schema version 1; this rsmirror reads version {} (an older mirror: one run of \
         baseline, incremental or audit upgrades it)",
        rsmirror::store::catalog::SCHEMA_VERSION
    );
    assert!(stderr_of(&out).contains(&said), "{}", stderr_of(&out));

    srv.clear_requests();
    run_ok(&srv.url("/"), dir.path());
    assert!(
        srv.requests().iter().all(|r| !r.path.starts_with("/res/")),
        "nothing fetched again: {:?}",
        srv.requests()
    );
    assert_eq!(current(dir.path()), before);
    for sha in before.values() {
        let top = dir.path().join("objects/sha256").join(&sha[0..2]);
        assert!(top.join(sha).is_file(), "{sha} moved");
        assert!(!top.join(&sha[2..4]).exists(), "emptied folder removed");
    }
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, rsmirror::store::catalog::SCHEMA_VERSION);
    assert_consistent(dir.path());
    let out = rsmirror()
        .args(["audit", "--offline", "-q", "--mirror"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
}

/// Issue 67, 6: the 2012 draft names a mirror of a resource with `xhtml:link
/// rel="alternate http://www.openarchives.org/rs/mirror"` (1.1: `rel="duplicate"`): when the
/// origin fails, the mirror is tried and its bytes kept; a plain `alternate` is not a mirror.
#[test]
fn a_2012_draft_mirror_link_is_tried_when_the_origin_fails() {
    let t = Tree::new();
    std::fs::create_dir_all(t.path().join("mirror")).unwrap();
    std::fs::write(t.path().join("mirror/a.txt"), b"alpha\n").unwrap();
    t.put("b.txt", b"beta\n");
    std::fs::write(t.path().join("b.html"), b"<p>beta</p>\n").unwrap();
    list_2012(
        &t,
        &format!(
            r#"   <url>
      <loc>{p}/res/a.txt</loc>
      <lastmod>2012-08-08T08:15:00Z</lastmod>
      <xhtml:link rel="alternate http://www.openarchives.org/rs/mirror" href="{p}/mirror/a.txt"/>
   </url>
   <url>
      <loc>{p}/res/b.txt</loc>
      <lastmod>2012-08-08T08:15:00Z</lastmod>
      <xhtml:link rel="alternate" href="{p}/b.html"/>
   </url>
"#,
            p = crate::server::PLACEHOLDER
        ),
    );
    let srv = TestServer::start(t.path());
    srv.set_rule("/res/a.txt", Rule::Status(403));
    srv.set_rule("/res/b.txt", Rule::Status(403));
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/rl2012.xml"), dir.path())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let held = current(dir.path());
    let a = format!("{}/res/a.txt", srv.base());
    assert_eq!(held.keys().collect::<Vec<_>>(), vec![&a], "{held:?}");
    let (bytes, _) = ok_on_mirror(dir.path(), &["cat", &a]);
    assert_eq!(bytes, "alpha\n");
    assert_eq!(srv.count("/mirror/a.txt"), 1);
    assert_eq!(srv.count("/b.html"), 0, "an alternate is not a mirror");
    assert!(err.contains(&format!("{}/res/b.txt", srv.base())), "{err}");
}

/// Issue 67, 7: the 2012 draft's `<loc rs:protocol="…OAI…">` names an OAI-PMH endpoint, not
/// a resource: refused with a word on stderr and in the run's problems, never fetched nor
/// stored as the resource; the list's other entries are mirrored.
#[test]
fn a_2012_draft_loc_with_a_protocol_is_refused_not_stored() {
    let t = Tree::new();
    t.put("a.txt", b"alpha\n");
    std::fs::write(
        t.path().join("oai"),
        b"<OAI-PMH><error code=\"badVerb\"/></OAI-PMH>\n",
    )
    .unwrap();
    list_2012(
        &t,
        &format!(
            r#"   <url>
       <loc rs:protocol="http://www.openarchives.org/OAI/openarchivesprotocol.html">
            {p}/oai</loc>
       <lastmod>2012-08-08T08:15:00Z</lastmod>
   </url>
   <url><loc>{p}/res/a.txt</loc><lastmod>2012-08-08T08:15:00Z</lastmod></url>
"#,
            p = crate::server::PLACEHOLDER
        ),
    );
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/rl2012.xml"), dir.path())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("rs:protocol"), "{err}");
    assert!(err.contains(&format!("{}/oai", srv.base())), "{err}");
    assert_eq!(srv.count("/oai"), 0);
    let held = current(dir.path());
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(held.contains_key(&format!("{}/res/a.txt", srv.base())));
    let problems = last_run_problems(dir.path());
    assert!(
        problems.iter().any(|(uri, class, why)| class == "refused"
            && uri.ends_with("/oai")
            && why.contains("OAI")),
        "{problems:?}"
    );
}

/// `rl2012.xml` in `t`: a Resource List in the 2012 draft's syntax (`xhtml:meta
/// DCTERMS.modified`) of the `<url>` elements `urls`.
fn list_2012(t: &Tree, urls: &str) {
    let list = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
{urls}</urlset>
"#
    );
    std::fs::write(t.path().join("rl2012.xml"), list).unwrap();
}

/// Issue 66, 9: one collection, one source. `baseline http://H/rs/capabilitylist.xml` on a
/// mirror following `http://H/` (whose Source Description lists that Capability List) does not
/// add a second source for the same collection: it is refused before anything is recorded,
/// naming the source that holds it and the command that baselines it alone; the reverse (the
/// Capability List followed first, then the site root) is refused likewise, and the site root
/// is not left followed. Both commands it names then work.
#[test]
fn a_collection_followed_already_is_not_a_second_source() {
    let srv = TestServer::start(testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    let (root, cap) = (srv.url("/"), srv.url("/rs/capabilitylist.xml"));
    let sources = |m: &std::path::Path| -> Vec<(String, bool)> {
        let conn = rusqlite::Connection::open(m.join("catalog.sqlite")).unwrap();
        let mut stmt = conn
            .prepare("SELECT url, removed_at IS NULL FROM sources ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };

    let m = dir.path().join("root-first");
    run_ok(&root, &m);
    let runs_before = runs_of(&m);
    let out = baseline(&cap, &m).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "its collection {cap} is followed already, as part of the source {root}"
        )) && err.contains(&format!("rsmirror baseline {root}; where it lists several collections, --capability-list {cap} takes this one alone")),
        "{err}"
    );
    assert_eq!(sources(&m), vec![(root.clone(), true)]);
    assert_eq!(runs_of(&m), runs_before, "nothing recorded");
    let out = baseline(&root, &m)
        .args(["--capability-list", &cap])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_mirror_is(&m, &srv.base(), &testdata("sample"), SAMPLE);

    let m = dir.path().join("list-first");
    run_ok(&cap, &m);
    let out = baseline(&root, &m).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "its collection {cap} is followed already, as part of the source {cap}"
        )) && err.contains(&format!("rsmirror source remove {cap}")),
        "{err}"
    );
    assert_eq!(
        sources(&m),
        vec![(cap.clone(), true), (root.clone(), false)],
        "the site root is not left followed"
    );
    let out = rsmirror()
        .args(["source", "remove", &cap, "--mirror"])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    run_ok(&root, &m);
    assert_mirror_is(&m, &srv.base(), &testdata("sample"), SAMPLE);
    let out = rsmirror()
        .args(["incremental", "-q", "--mirror"])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// How many runs the mirror at `m` recorded.
fn runs_of(m: &std::path::Path) -> i64 {
    rusqlite::Connection::open(m.join("catalog.sqlite"))
        .unwrap()
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap()
}
