//! Issue 44: what a cron job is told is true. A source that does not serve what it lists is a
//! failure, never "pending" (which is for resources a later change explains, ResourceSync 1.1
//! §10.1, on a source that otherwise agrees with its list).

use crate::server::TestServer;
use crate::support::*;

const T0: &str = "2026-03-01T00:00:00Z";
const LOGIN: &[u8] = b"<!DOCTYPE html><html><body><form>Please log in</form></body></html>\n";

fn json_run(cmd: &mut assert_cmd::Command) -> (Option<i32>, serde_json::Value, String) {
    let out = cmd.arg("--json").output().unwrap();
    let value = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), value, stderr_of(&out))
}

fn counts(s: &serde_json::Value) -> (u64, u64, u64) {
    let n = |k: &str| s[k].as_u64().unwrap_or(u64::MAX);
    (n("created"), n("pending"), n("failed"))
}

/// A Resource List of `names` as they are now; then the server has other bytes for each
/// (`serve`: Some(bytes)), or none at all (None: every one answers 404).
fn listed_then(t: &Tree, names: &[&str], serve: Option<&[u8]>) {
    for n in names {
        t.put(n, format!("{n} as listed\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, names);
    t.change_list("changelist.xml", T0, None, &[]);
    for n in names {
        match serve {
            Some(bytes) => t.put(n, bytes),
            None => t.remove(n),
        }
    }
}

/// Every problem of the last run is a failure that says why it is not pending; `status` names
/// the run as failed, and no sync point was recorded.
fn assert_failed_not_pending(dir: &std::path::Path, n: usize) {
    let problems = last_run_problems(dir);
    assert_eq!(problems.len(), n, "{problems:?}");
    for (uri, class, reason) in &problems {
        assert_eq!(class, "failed", "{uri}: {reason}");
        assert!(reason.contains("not pending"), "{uri}: {reason}");
    }
    assert_eq!(
        sync_point(dir),
        None,
        "no sync point from a source that disagrees"
    );
    let out = on_mirror(dir, &["status"]);
    let status = stdout_of(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a hint that needs a person: {status}"
    );
    assert!(
        status.contains("hint: the last baseline") && status.contains("(exit 3)"),
        "{status}"
    );
}

#[test]
fn a_source_whose_every_resource_is_gone_fails_instead_of_pending() {
    let t = Tree::new();
    let names = ["r1", "r2", "r3", "r4", "r5"];
    listed_then(&t, &names, None);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, s, err) = json_run(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(counts(&s), (0, 0, 5), "{s}");
    assert!(s["sync_point"].is_null(), "{s}");
    assert!(
        err.contains("5 of 5 resources contradict the list") && err.contains("not pending"),
        "{err}"
    );
    assert_failed_not_pending(dir.path(), 5);
}

#[test]
fn a_login_page_for_every_resource_fails_instead_of_pending() {
    let t = Tree::new();
    let names = ["a.html", "b.html", "c.html", "d.html"];
    listed_then(&t, &names, Some(LOGIN));
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, s, err) = json_run(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(counts(&s), (0, 0, 4), "{s}");
    assert_failed_not_pending(dir.path(), 4);
    assert!(current(dir.path()).is_empty());

    // Once the source serves what it lists again, the next run completes and records it.
    for n in names {
        t.put(n, format!("{n} as listed\n").as_bytes());
    }
    let (code, s, err) = json_run(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    assert_eq!((code, counts(&s)), (Some(0), (4, 0, 0)), "{err}");
    assert_eq!(sync_point(dir.path()).unwrap().0.as_deref(), Some(T0));
}

/// A few resources that changed after the list was written stay pending: the run exits 0 and
/// records its sync point (as many pending as agreeing is still a source that agrees).
#[test]
fn a_minority_of_changed_resources_stays_pending() {
    let t = Tree::new();
    let names = ["r1", "r2", "r3", "r4", "r5", "r6"];
    for n in names {
        t.put(n, format!("{n} as listed\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &names);
    t.change_list("changelist.xml", T0, None, &[]);
    t.put("r1", b"r1 changed\n");
    t.remove("r2");
    t.put("r3", b"r3 changed\n");
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, s, err) = json_run(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    assert_eq!((code, counts(&s)), (Some(0), (3, 3, 0)), "{err}");
    assert_eq!(sync_point(dir.path()).unwrap().0.as_deref(), Some(T0));
    assert!(!err.contains("not pending"), "{err}");
}

/// A page served as HTML where the list declares another media type is a failure at once
/// (never stored, never pending), even without a digest or a length to contradict.
#[test]
fn an_html_page_where_the_list_declares_another_type_is_not_stored() {
    let t = Tree::new();
    t.put("paper.html", LOGIN);
    t.put("notes.txt", b"notes\n");
    t.put("page.html", b"<html><body>a real page</body></html>\n");
    std::fs::write(
        t.path().join("resourcelist.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
             xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
             <rs:md capability=\"resourcelist\" at=\"{T0}\"/>\n\
             <url><loc>{ORIGIN}/res/paper.html</loc><rs:md type=\"application/pdf\"/></url>\n\
             <url><loc>{ORIGIN}/res/notes.txt</loc><rs:md type=\"text/plain\"/></url>\n\
             <url><loc>{ORIGIN}/res/page.html</loc><rs:md type=\"text/html; charset=utf-8\"/></url>\n\
             </urlset>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, s, err) = json_run(&mut baseline(&srv.url("/resourcelist.xml"), dir.path()));
    assert_eq!((code, counts(&s)), (Some(3), (2, 0, 1)), "{err}");
    let paper = format!("{}/res/paper.html", srv.base());
    assert!(
        err.contains(&format!(
            "failed: {paper}: served an HTML page (text/html) where the list declares \
             application/pdf"
        )),
        "{err}"
    );
    assert!(!current(dir.path()).contains_key(&paper));
    assert_eq!(srv.count("/res/paper.html"), 1, "not retried");
}

/// The same rule for `incremental`: changes whose every fetch brings other bytes than their
/// Change List declares fail and hold the sync point.
#[test]
fn an_incremental_whose_every_change_brings_other_bytes_fails() {
    let t = Tree::new();
    let names = ["r1", "r2", "r3"];
    for n in names {
        t.put(n, format!("{n} as listed\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &names);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = json_run(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    assert_eq!(code, Some(0), "{err}");

    for n in names {
        t.put(n, format!("{n} updated\n").as_bytes());
    }
    let changes: Vec<_> = names
        .iter()
        .map(|n| (*n, "updated", "2026-03-01T01:00:00Z"))
        .collect();
    t.change_list("changelist.xml", T0, None, &changes);
    for n in names {
        t.put(n, LOGIN);
    }
    let (code, s, err) = json_run(&mut incremental(dir.path()));
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(
        (s["updated"].as_u64(), counts(&s).1, counts(&s).2),
        (Some(0), 0, 3),
        "{s}"
    );
    assert!(
        err.contains("3 of 3 resources contradict the list"),
        "{err}"
    );
    assert_eq!(
        sync_point(dir.path()).unwrap().0.as_deref(),
        Some(T0),
        "the sync point stays before the changes that failed"
    );
    for (uri, class, reason) in last_run_problems(dir.path()) {
        assert_eq!(class, "failed", "{uri}: {reason}");
    }
}

/// A Resource List `resourcelist.xml` of `names` as they are now, with no link to a
/// Capability List: a source that publishes no changes.
fn list_alone(t: &Tree, at: &str, names: &[&str]) {
    t.resource_list(at, names);
    let path = t.path().join("resourcelist.xml");
    let list = std::fs::read_to_string(&path).unwrap();
    let up = format!("<rs:ln rel=\"up\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n");
    assert!(list.contains(&up));
    std::fs::write(&path, list.replace(&up, "")).unwrap();
}

/// Issue 44, 2: a first baseline that stopped part way (the server went down) leaves no sync
/// point; the README's cron line runs the baseline again and the mirror recovers by itself.
#[test]
fn a_partial_first_baseline_recovers_under_the_cron_line() {
    let t = Tree::new();
    let names = ["r1", "r2", "r3", "r4"];
    for n in names {
        t.put(n, format!("{n}\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &names);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    srv.set_rule("/res/r3", crate::server::Rule::Status(503));
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .args(["--tries", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert_eq!(sync_point(dir.path()), None);
    srv.clear_rule("/res/r3");

    // Without the option, the message names the way out.
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("no sync point")
            && stderr_of(&out).contains("--on-gap rebaseline"),
        "{}",
        stderr_of(&out)
    );

    let out = incremental(dir.path())
        .args(["--on-gap", "rebaseline", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(stderr_of(&out), "", "quiet under -q");
    assert_eq!(current(dir.path()).len(), 4);
    assert_eq!(sync_point(dir.path()).unwrap().0.as_deref(), Some(T0));
    // Followed by its changes from now on.
    let (status, _) = ok_on_mirror(dir.path(), &["status"]);
    assert!(!status.contains("hint: the last incremental"), "{status}");
    let out = incremental(dir.path()).arg("-q").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_consistent(dir.path());
}

/// Issue 44, 2: a source that publishes a Resource List and no changes is followed by reading
/// its list again, with or without `--on-gap rebaseline`, quietly.
#[test]
fn a_source_without_change_lists_is_followed_by_its_list() {
    let t = Tree::new();
    for n in ["r1", "r2"] {
        t.put(n, format!("{n} v1\n").as_bytes());
    }
    list_alone(&t, T0, &["r1", "r2"]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = json_run(&mut baseline(&srv.url("/resourcelist.xml"), dir.path()));
    assert_eq!(code, Some(0), "{err}");

    t.put("r2", b"r2 v2\n");
    t.put("r3", b"r3 v1\n");
    list_alone(&t, "2026-03-02T00:00:00Z", &["r1", "r2", "r3"]);
    let (code, s, err) = json_run(incremental(dir.path()).arg("-q"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err, "", "quiet under -q");
    assert_eq!(
        (s["created"].as_u64(), s["updated"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    assert_eq!(
        sync_point(dir.path()).unwrap().0.as_deref(),
        Some("2026-03-02T00:00:00Z")
    );
    // Followed by its list: no gap said or recorded, night after night.
    assert!(!s["warnings"].to_string().contains("gap"), "{s}");
    assert!(
        last_run_problems(dir.path())
            .iter()
            .all(|(_, class, _)| class != "gap"),
        "{:?}",
        last_run_problems(dir.path())
    );

    t.put("r1", b"r1 v2\n");
    list_alone(&t, "2026-03-03T00:00:00Z", &["r1", "r2", "r3"]);
    let (code, s, err) = json_run(incremental(dir.path()).args(["--on-gap", "rebaseline", "-q"]));
    assert_eq!((code, s["updated"].as_u64()), (Some(0), Some(1)), "{err}");
    assert_eq!(err, "");
    let (status, _) = ok_on_mirror(dir.path(), &["status"]);
    assert!(!status.contains("hint: the last"), "{status}");
    assert_consistent(dir.path());
}

/// Issue 44, 6: `--retry-lock DURATION` waits for a run that holds the lock instead of exiting
/// 6 at once; without it, or when the wait runs out, exit 6.
#[test]
fn retry_lock_waits_for_the_run_that_holds_the_lock() {
    let t = Tree::new();
    t.put("r1", b"r1\n");
    list_alone(&t, T0, &["r1"]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = json_run(&mut baseline(&srv.url("/resourcelist.xml"), dir.path()));
    assert_eq!(code, Some(0), "{err}");

    // The lock held by this process for `d`, or until told to let go.
    let hold = |d: std::time::Duration| {
        let lock = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join(".lock"))
            .unwrap();
        lock.try_lock().unwrap();
        let (let_go, told) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let _ = told.recv_timeout(d);
            drop(lock);
        });
        (let_go, thread)
    };
    let (let_go, thread) = hold(std::time::Duration::from_secs(60));
    let out = incremental(dir.path()).arg("-q").output().unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr_of(&out));
    let out = incremental(dir.path())
        .args(["-q", "--retry-lock", "1s"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(6),
        "the wait ran out: {}",
        stderr_of(&out)
    );
    let_go.send(()).unwrap();
    thread.join().unwrap();

    // A second source in the mirror: `incremental` without SOURCE runs both, and waits for
    // the lock all the same.
    let second = tempfile::tempdir().unwrap();
    generate_source(second.path(), 3, 16);
    let second_srv = TestServer::start(second.path());
    let (code, _, err) = json_run(&mut baseline(
        &second_srv.url("/resourcelist.xml"),
        dir.path(),
    ));
    assert_eq!(code, Some(0), "{err}");

    let (_let_go, thread) = hold(std::time::Duration::from_millis(1500));
    let started = std::time::Instant::now();
    for command in [
        &["incremental", "-q"][..],
        &["audit", "--offline", "-q"][..],
    ] {
        let out = rsmirror()
            .args(command)
            .args(["--retry-lock", "2m", "--mirror"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{command:?}: {}",
            stderr_of(&out)
        );
    }
    assert!(started.elapsed() >= std::time::Duration::from_millis(1500));
    thread.join().unwrap();
    let out = incremental(dir.path())
        .args(["--retry-lock", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("is not a duration"),
        "{}",
        stderr_of(&out)
    );
}

/// Issue 44, 5: a source that answers 503 to everything does not cost every resource its
/// retries: after 20 in a row the run stops (exit 3, nothing lost, no sync point), and a run
/// once the source is back completes.
#[test]
fn a_source_that_keeps_failing_stops_the_run_early() {
    let dir = tempfile::tempdir().unwrap();
    let source = tempfile::tempdir().unwrap();
    generate_source(source.path(), 60, 100);
    let srv = TestServer::start(source.path());
    for i in 0..60 {
        srv.set_rule(&format!("/res/{i:06}"), crate::server::Rule::Status(503));
    }
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .args(["--tries", "2", "--jobs", "2", "--json"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("stopped: the source did not serve 20 resources in a row"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["exit_code"], 3, "{doc}");
    let asked = srv
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/res/"))
        .count();
    assert!(
        asked < 60,
        "stopped asking: {asked} requests for 60 resources, 2 tries each"
    );
    assert_eq!(sync_point(dir.path()), None);
    let out = on_mirror(dir.path(), &["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout_of(&out).contains("ended partial (exit 3)"),
        "{}",
        stdout_of(&out)
    );

    for i in 0..60 {
        srv.clear_rule(&format!("/res/{i:06}"));
    }
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(dir.path()).len(), 60);
}

/// Issue 44, 5: `--max-duration` bounds a whole run: it stops fetching when the time is up,
/// keeps what landed (exit 3, no sync point), and the next run goes on from there.
#[test]
fn max_duration_stops_a_run_cleanly_and_the_next_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let source = tempfile::tempdir().unwrap();
    generate_source(source.path(), 40, 100);
    let srv = TestServer::start(source.path());
    srv.set_delay(std::time::Duration::from_millis(100));
    let started = std::time::Instant::now();
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .args(["--jobs", "1", "--max-duration", "1s"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("stopped: --max-duration 1s reached"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    let landed = current(dir.path()).len();
    assert!((1..40).contains(&landed), "{landed} of 40 landed");
    assert_eq!(sync_point(dir.path()), None);
    assert_consistent(dir.path());

    srv.set_delay(std::time::Duration::ZERO);
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .args(["--max-duration", "1h"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(dir.path()).len(), 40);
    assert!(sync_point(dir.path()).is_some());
}

/// Issue 44, 8: sources do not pile up. A first baseline that found nothing (a mistyped URL)
/// leaves its source unfollowed (no nightly failure, no hint); `incremental` given a Change
/// List of a followed source follows that source, not a second one; an unknown SOURCE is
/// refused without being registered; `source remove` stops following one, `baseline` follows
/// it again.
#[test]
fn sources_do_not_pile_up_and_can_be_removed() {
    let t = Tree::new();
    t.put("r1", b"r1\n");
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1"]);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path();
    let good = srv.url("/capabilitylist.xml");
    let (code, _, err) = json_run(&mut baseline(&good, m));
    assert_eq!(code, Some(0), "{err}");
    let sources = || -> Vec<(String, bool)> {
        let (list, _) = ok_on_mirror(m, &["source", "list", "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&list).unwrap();
        doc["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["url"].as_str().unwrap().to_string(),
                    s["removed_at"].is_null(),
                )
            })
            .collect()
    };

    let typo = srv.url("/capabilitylst.xml");
    let (code, _, err) = json_run(&mut baseline(&typo, m));
    assert_eq!(code, Some(4), "{err}");
    assert_eq!(sources(), [(good.clone(), true), (typo.clone(), false)]);
    let out = on_mirror(m, &["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    assert!(stdout_of(&out).contains("not followed since"));
    let out = incremental(m).arg("-q").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // The Change List of the followed source, given as SOURCE: no second source.
    let out = incremental(m)
        .arg(srv.url("/changelist.xml"))
        .arg("-q")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // A source the mirror does not follow: refused, not registered.
    let other = srv.url("/elsewhere/resourcelist.xml");
    let out = incremental(m).arg(&other).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("does not follow"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(sources().len(), 2);

    // Removed: incremental has no source left to follow; a baseline follows it again.
    let (said, _) = ok_on_mirror(m, &["source", "remove", &good]);
    assert!(said.contains("no longer following"), "{said}");
    let out = incremental(m).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let out = incremental(m).arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("no longer follows"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(current(m).len(), 1, "its versions stay");
    let (code, _, err) = json_run(&mut baseline(&good, m));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(sources()[0], (good.clone(), true));
    let out = incremental(m).arg("-q").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// Issue 44, 9, the smaller lies: `status` names the run that set the sync point (not a later
/// one that found it the same); an HTML page given as SOURCE is called that; a reader whose
/// output pipe closes ends quietly; a mirror folder that cannot be read is not "no mirror".
#[test]
fn the_smaller_lies_are_told_straight() {
    let t = Tree::new();
    t.put("r1", b"r1\n");
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1"]);
    t.change_list("changelist.xml", T0, None, &[]);
    std::fs::write(
        t.path().join("index.html"),
        "<!DOCTYPE html>\n<html><body>Our repository</body></html>\n",
    )
    .unwrap();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path();
    let (code, _, err) = json_run(&mut baseline(&srv.url("/capabilitylist.xml"), m));
    assert_eq!(code, Some(0), "{err}");
    let set_by = || {
        let (out, _) = ok_on_mirror(m, &["status", "--json"]);
        let st: serde_json::Value = serde_json::from_str(&out).unwrap();
        st["sources"][0]["collections"][0]["sync_point"]["run"]
            .as_i64()
            .unwrap()
    };
    // Run 2 finds nothing new: the sync point is still the one run 1 set.
    let out = incremental(m).arg("-q").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(set_by(), 1);
    let (text, _) = ok_on_mirror(m, &["status"]);
    assert!(text.contains("set by run 1, confirmed"), "{text}");
    // Run 3 applies a change: it sets the sync point.
    t.put("r1", b"r1, v2\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[("r1", "updated", "2026-03-01T02:00:00Z")],
    );
    let out = incremental(m).arg("-q").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(set_by(), 3);

    // An HTML page as SOURCE.
    let page = srv.url("/index.html");
    for cmd in [
        &["inspect", &page][..],
        &["baseline", &page, "--mirror", m.to_str().unwrap()],
    ] {
        let out = rsmirror().args(cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "{cmd:?}");
        assert!(
            stderr_of(&out).contains("this is an HTML page, not a Sitemap"),
            "{}",
            stderr_of(&out)
        );
    }

    // A plan far longer than a pipe holds, read by `head -1`: no panic, no error.
    let big = tempfile::tempdir().unwrap();
    generate_source(big.path(), 5000, 8);
    let big_srv = TestServer::start(big.path());
    let empty = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("rsmirror");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' baseline '{}' -n --mirror '{}' | head -1",
            bin.display(),
            big_srv.url("/resourcelist.xml"),
            empty.path().join("m").display()
        ))
        .output()
        .unwrap();
    assert_eq!(stdout_of(&out).lines().count(), 1);
    assert_eq!(stderr_of(&out), "", "quiet on a closed pipe");

    // A mirror path that cannot be read (a file where a folder must be): not "no mirror".
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let out = on_mirror(&file.join("mirror"), &["ls"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        !err.contains("no mirror at") && err.contains("Not a directory"),
        "{err}"
    );
}

/// Issue 44, 1: deletions a Change List applies, and changes already known, agree with it: one
/// change overtaken by a later one beside them stays pending (exit 0), as ResourceSync 1.1 §10.1
/// allows, not a failure of the run.
#[test]
fn deletions_and_known_changes_count_as_agreeing() {
    let t = Tree::new();
    for n in ["r1", "r2", "r3"] {
        t.put(n, format!("{n} v1\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3"]);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = json_run(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    assert_eq!(code, Some(0), "{err}");
    t.put("r3", b"r3 v2\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "deleted", "2026-03-01T01:00:00Z"),
            ("r2", "deleted", "2026-03-01T01:00:00Z"),
            ("r3", "updated", "2026-03-01T02:00:00Z"),
        ],
    );
    t.remove("r1");
    t.remove("r2");
    // r3 changed again after the Change List was written.
    t.put("r3", b"r3 v3, later\n");
    let (code, s, err) = json_run(&mut incremental(dir.path()));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        (
            s["deleted"].as_u64(),
            s["pending"].as_u64(),
            s["failed"].as_u64()
        ),
        (Some(2), Some(1), Some(0)),
        "{s}"
    );
}

/// `--log-file FILE` (rclone's): every run appends its command line, what it says on stderr,
/// its summary (even under -q) and its exit code, a line each with the time; `--log-format
/// json` one JSON object a line; a failure's message at level `error`; a FILE that cannot be
/// opened is a usage error naming it.
#[test]
fn a_log_file_records_every_run_even_a_quiet_one() {
    let dir = tempfile::tempdir().unwrap();
    let (m, log) = (dir.path().join("m"), dir.path().join("rsmirror.log"));
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
    let map = format!("http://sample.example.org/={}", sample.display());
    let out = rsmirror()
        .args([
            "baseline",
            "http://sample.example.org/",
            "--map",
            &map,
            "-q",
            "--log-file",
        ])
        .arg(&log)
        .arg("--mirror")
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        out.stderr.is_empty(),
        "quiet on stderr: {}",
        stderr_of(&out)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].contains(" notice ") && lines[0].contains("baseline http://sample.example.org/")
    );
    assert!(lines[1].contains("notice baseline: 8 created"), "{text}");
    assert!(lines[2].ends_with("notice exit 0"), "{text}");
    // Each line starts with its time.
    for l in &lines {
        let time = l.split(' ').next().unwrap();
        assert!(time.parse::<jiff::Timestamp>().is_ok(), "{l}");
    }

    // JSON lines, appended; a failure at level error.
    for mirror in [m.clone(), dir.path().join("none")] {
        rsmirror()
            .args(["incremental", "--log-format", "json", "--log-file"])
            .arg(&log)
            .arg("--mirror")
            .arg(&mirror)
            .output()
            .unwrap();
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let json: Vec<serde_json::Value> = text
        .lines()
        .skip(3)
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for j in &json {
        assert!(
            j["time"]
                .as_str()
                .unwrap()
                .parse::<jiff::Timestamp>()
                .is_ok(),
            "{j}"
        );
    }
    let said = |level: &str, part: &str| {
        json.iter()
            .any(|j| j["level"] == level && j["msg"].as_str().unwrap().contains(part))
    };
    assert!(said("notice", "incremental: 0 created"), "{text}");
    assert!(said("error", "no mirror at"), "{text}");
    assert!(said("notice", "exit 5"), "{text}");

    // A log file that cannot be opened: exit 2, named, nothing run.
    let out = rsmirror()
        .args(["incremental", "--log-file"])
        .arg(dir.path())
        .arg("--mirror")
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("--log-file"),
        "{}",
        stderr_of(&out)
    );
}

/// Issue 66, 6: a login page served for every one of 60 resources is said once, not as 60
/// `pending:` lines taken back by a `failed:` summary: no `pending:` line, the summary that
/// the source does not serve what it lists, three resources as examples and how many more.
/// Where the list declares a type, the HTML page served for each is said for three resources
/// and then once, with the count. The catalog still has every resource's problem.
#[test]
fn a_login_page_for_every_resource_is_said_once() {
    let names: Vec<String> = (0..60).map(|i| format!("r{i:02}.pdf")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let lines_of = |err: &str, what: &str| err.lines().filter(|l| l.contains(what)).count();

    // Digests declared, no type: each contradicts the list.
    let t = Tree::new();
    listed_then(&t, &names, Some(LOGIN));
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, s, err) = json_run(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(counts(&s), (0, 0, 60), "{s}");
    assert_eq!(lines_of(&err, "pending:"), 0, "{err}");
    assert!(
        err.contains("60 of 60 resources contradict the list"),
        "{err}"
    );
    assert_eq!(lines_of(&err, "/res/r"), 3, "{err}");
    assert!(
        err.contains("... and 57 more resources the same way"),
        "{err}"
    );
    assert!(err.lines().count() < 12, "{err}");
    assert_failed_not_pending(dir.path(), 60);

    // A type declared: the HTML page is refused for each, said once.
    let t = Tree::new();
    let mut list = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset \
         xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
         xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
         <rs:md capability=\"resourcelist\" at=\"{T0}\"/>\n"
    );
    let names: Vec<String> = names.iter().map(|n| n.replace(".pdf", ".html")).collect();
    for n in &names {
        t.put(n, LOGIN);
        list.push_str(&format!(
            "<url><loc>{ORIGIN}/res/{n}</loc><rs:md type=\"application/pdf\"/></url>\n"
        ));
    }
    list.push_str("</urlset>\n");
    std::fs::write(t.path().join("resourcelist.xml"), list).unwrap();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (code, s, err) = json_run(&mut baseline(&srv.url("/resourcelist.xml"), dir.path()));
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(counts(&s), (0, 0, 60), "{s}");
    assert_eq!(lines_of(&err, "served an HTML page"), 4, "{err}");
    assert!(
        err.contains(
            "failed: ... and 57 more resources the same way: served an HTML page (text/html) \
             where the list declares application/pdf"
        ),
        "{err}"
    );
    assert!(err.lines().count() < 12, "{err}");
    assert_eq!(last_run_problems(dir.path()).len(), 60);
}
