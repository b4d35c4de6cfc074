//! Issue 23: the deletion guard. `baseline --delete` refuses (exit 7, nothing deleted) to
//! tombstone from an empty list, from a list that is one part of an index, or more than the
//! default count (a tenth of the collection, at least 10, at most 1,000); `--max-delete N` and
//! `--force-delete` override. Every URL that goes, or would go, is named on stderr.

use crate::server::TestServer;
use crate::support::*;

/// A mirror of `n` generated resources, then the source trimmed to `keep` of them.
fn shrinking(n: usize, keep: usize) -> (TestServer, tempfile::TempDir, Vec<tempfile::TempDir>) {
    let full = tempfile::tempdir().unwrap();
    generate_source(full.path(), n, 16);
    let srv = TestServer::start(full.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let smaller = tempfile::tempdir().unwrap();
    generate_source(smaller.path(), keep, 16);
    srv.set_root(smaller.path());
    (srv, dir, vec![full, smaller])
}

fn delete(srv: &TestServer, mirror: &std::path::Path, args: &[&str]) -> std::process::Output {
    baseline(&srv.url("/resourcelist.xml"), mirror)
        .arg("--delete")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_mass_delete_is_refused_by_default_and_named() {
    // 60 of 200 go: more than a tenth (20).
    let (srv, dir, _keep) = shrinking(200, 140);
    let out = delete(&srv, dir.path(), &[]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains("60 of 200 resources are gone") && err.contains("default guard"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("would go: ")).count(),
        60,
        "{err}"
    );
    assert!(tombstoned(dir.path()).is_empty());
    // --max-delete 100 lets 60 go; each is named.
    let out = delete(&srv, dir.path(), &["--max-delete", "100"]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("deleted: ")).count(),
        60,
        "{err}"
    );
    assert_eq!(tombstoned(dir.path()).len(), 60);
}

/// Issue 44, 9: `baseline --delete -n` says what the real run would meet: the plan names the
/// resources the guard keeps, and the dry run exits 7 as the run would; within the guard (or
/// with --max-delete) it exits 0. Nothing is written either way.
#[test]
fn a_dry_run_says_the_deletion_guard_would_refuse() {
    let (srv, dir, _keep) = shrinking(200, 140);
    let before = version_count(dir.path());
    let out = delete(&srv, dir.path(), &["-n"]);
    let (plan, err) = (stdout_of(&out), stderr_of(&out));
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains("60 of 200 resources are gone") && err.contains("would delete nothing"),
        "{err}"
    );
    assert_eq!(
        plan.lines()
            .filter(|l| l.ends_with("(would be deleted, but the deletion guard refuses)"))
            .count(),
        60,
        "{plan}"
    );
    let out = delete(&srv, dir.path(), &["-n", "--max-delete", "100"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out)
            .lines()
            .filter(|l| l.ends_with("(would be deleted)"))
            .count(),
        60
    );
    assert_eq!(version_count(dir.path()), before);
    assert!(tombstoned(dir.path()).is_empty());
}

#[test]
fn a_few_deletes_pass_the_default_guard_and_force_overrides_it() {
    let (srv, dir, _keep) = shrinking(200, 190);
    let out = delete(&srv, dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(tombstoned(dir.path()).len(), 10);
    let (srv, dir, _keep) = shrinking(30, 1);
    assert_eq!(delete(&srv, dir.path(), &[]).status.code(), Some(7));
    let out = delete(&srv, dir.path(), &["--force-delete"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(tombstoned(dir.path()).len(), 29);
}

#[test]
fn an_empty_list_deletes_nothing() {
    let (srv, dir, _keep) = shrinking(5, 0);
    let out = delete(&srv, dir.path(), &[]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(err.contains("lists nothing (an empty list)"), "{err}");
    assert!(tombstoned(dir.path()).is_empty());
    // Without --delete the five are reported gone, by name.
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stderr_of(&out)
            .lines()
            .filter(|l| l.starts_with("gone: "))
            .count(),
        5
    );
}

#[test]
fn one_part_of_an_index_given_alone_deletes_nothing() {
    let t = Tree::new();
    for n in ["a", "b", "c", "d"] {
        t.put(n, format!("{n}\n").as_bytes());
    }
    let part = |file: &str, names: &[&str]| {
        let urls: String = names
            .iter()
            .map(|n| format!("<url><loc>{ORIGIN}/res/{n}</loc></url>\n"))
            .collect();
        std::fs::write(
            t.path().join(file),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
                 xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
                 <rs:ln rel=\"up\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n\
                 <rs:ln rel=\"index\" href=\"{ORIGIN}/index.xml\"/>\n\
                 <rs:md capability=\"resourcelist\" at=\"2026-03-01T00:00:00Z\"/>\n{urls}</urlset>\n"
            ),
        )
        .unwrap();
    };
    part("part1.xml", &["a", "b"]);
    part("part2.xml", &["c", "d"]);
    std::fs::write(
        t.path().join("index.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
             xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
             <rs:ln rel=\"up\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n\
             <rs:md capability=\"resourcelist\" at=\"2026-03-01T00:00:00Z\"/>\n\
             <sitemap><loc>{ORIGIN}/part1.xml</loc></sitemap>\n\
             <sitemap><loc>{ORIGIN}/part2.xml</loc></sitemap>\n</sitemapindex>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/index.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(dir.path()).len(), 4);
    // The first part alone, with --delete: the other part's resources are not gone. Its
    // collection (the `up` link) is the index's, followed already: refused before anything is
    // read (issue 66, 9: one collection, one source), naming the index.
    let out = baseline(&srv.url("/part1.xml"), dir.path())
        .arg("--delete")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "is followed already, as part of the source {}",
            srv.url("/index.xml")
        )),
        "{err}"
    );
    assert!(tombstoned(dir.path()).is_empty());
    // The same where the index is no longer followed: the part is taken for what it is, one
    // part of the index, and deletes nothing.
    let out = rsmirror()
        .args(["source", "remove", &srv.url("/index.xml"), "--mirror"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = baseline(&srv.url("/part1.xml"), dir.path())
        .arg("--delete")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains("one part of the index") && err.contains("index.xml"),
        "{err}"
    );
    assert!(tombstoned(dir.path()).is_empty());
}

/// Issue 23: `--mirror` pointing at a folder of other files (a typo, `~/Documents`) is refused
/// (exit 2, nothing written there) unless `--init-here`.
#[test]
fn a_folder_of_other_files_is_not_made_a_mirror_unless_asked() {
    let srv = TestServer::start(crate::server::testdata("sample"));
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("thesis.odt"), b"years of work").unwrap();
    let out = baseline(&srv.url("/"), folder.path()).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("thesis.odt") && err.contains("--init-here"),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(folder.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["thesis.odt"], "nothing written");
    let out = baseline(&srv.url("/"), folder.path())
        .arg("--init-here")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // Once it is a mirror, no flag is needed.
    let out = baseline(&srv.url("/"), folder.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// Issue 23: `--json` prints one JSON document on stdout when the run fails too, and a
/// scheme-less web address gets a hint instead of "No such file or directory".
#[test]
fn json_on_failure_and_a_hint_for_a_missing_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let out = baseline("127.0.0.1:9/", dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(
        (doc["command"].as_str(), doc["exit_code"].as_i64()),
        (Some("baseline"), Some(4)),
        "{doc}"
    );
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .contains("http://127.0.0.1:9/"),
        "{doc}"
    );
    assert!(
        stderr_of(&out).contains("give its scheme: http://127.0.0.1:9/"),
        "{}",
        stderr_of(&out)
    );
}

/// Issue 23: a catch-all web application answers `/.well-known/resourcesync` with a 200 HTML
/// page; discovery goes on to robots.txt (and says so with -v) instead of stopping.
#[test]
fn a_catch_all_page_at_the_well_known_uri_falls_through_to_robots_txt() {
    let site = tempfile::tempdir().unwrap();
    let from = crate::server::testdata("syntax/discovery_robots");
    let copy = |rel: &str| {
        let to = site.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from.join(rel), to).unwrap();
    };
    copy("robots.txt");
    copy("resourcelist.xml");
    for e in std::fs::read_dir(from.join("res")).unwrap() {
        copy(&format!("res/{}", e.unwrap().file_name().to_string_lossy()));
    }
    std::fs::create_dir_all(site.path().join(".well-known")).unwrap();
    std::fs::write(
        site.path().join(".well-known/resourcesync"),
        "<!DOCTYPE html>\n<html><body>Welcome to our repository!</body></html>\n",
    )
    .unwrap();
    let srv = TestServer::start(site.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/"), dir.path())
        .args(["-v", "--json"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("not a ResourceSync document") && err.contains("trying robots.txt"),
        "{err}"
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(s["created"].as_u64().unwrap() > 0, "{s}");
}

/// Issue 23: Ctrl-C (SIGINT) or SIGTERM during a run: one line saying what was stopped and that
/// a re-run is safe, exit 130, the run recorded as `interrupted` (it was `abandoned`, found by
/// the next run), and the re-run converges.
#[cfg(unix)]
#[test]
fn an_interrupted_run_says_so_and_is_recorded_as_interrupted() {
    use std::time::{Duration, Instant};
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 300, 64);
    let srv = TestServer::start(tree.path());
    srv.set_delay(Duration::from_millis(15));
    let dir = tempfile::tempdir().unwrap();
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        srv.clear_requests();
        let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
            .args([
                "baseline",
                &srv.url("/resourcelist.xml"),
                "-q",
                "-j",
                "2",
                "--mirror",
            ])
            .arg(dir.path())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while srv
            .requests()
            .iter()
            .filter(|r| r.path.starts_with("/res/"))
            .count()
            < 20
        {
            assert!(Instant::now() < deadline, "run never got going");
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: a plain kill(2) of our own child.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(130), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(
            err.contains(&format!("interrupted ({name})"))
                && err.contains("recorded as interrupted")
                && err.contains("a re-run is safe"),
            "{err}"
        );
        let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
        let (outcome, code): (String, i64) = conn
            .query_row(
                "SELECT outcome, exit_code FROM runs ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((outcome.as_str(), code), ("interrupted", 130));
        assert_consistent(dir.path());
    }
    srv.set_delay(Duration::ZERO);
    let out = baseline(&srv.url("/resourcelist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(dir.path()).len(), 300);
    assert_consistent(dir.path());
}

/// Issue 23: a full disk stops the run at the first resource that does not fit, with one
/// message naming the mirror and what was left to fetch (not one "No space left" line per
/// resource); the catalog stays intact; after space is freed a re-run completes.
#[test]
fn a_full_disk_stops_the_run_at_once_and_a_rerun_completes() {
    let Some(disk) = Tmpfs::mount("3m") else {
        return;
    };
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 400, 16 * 1024);
    let srv = TestServer::start(tree.path());
    let mirror = disk.0.path().join("mirror");
    let out = baseline(&srv.url("/resourcelist.xml"), &mirror)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("is full") && err.contains(&mirror.display().to_string()),
        "{err}"
    );
    assert!(
        err.lines().count() <= 3,
        "one message, not a line per resource: {err}"
    );
    assert_consistent(&mirror);
    let landed = current(&mirror).len();
    assert!(landed < 400, "{landed}");
    // What was left: the resources not yet done and their declared bytes (the plan's sum).
    let left: u64 = err
        .split(" resources left to fetch (")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of what was left: {err}"));
    assert!(left > 0 && left <= (400 - landed) as u64, "{left}: {err}");
    let declared = rsmirror::human_bytes(left * 16 * 1024);
    assert!(
        err.contains(&format!(
            "{left} resources left to fetch ({declared} declared)"
        )),
        "{err}"
    );

    disk.resize("40m");
    let out = baseline(&srv.url("/resourcelist.xml"), &mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(&mirror).len(), 400);
    assert_consistent(&mirror);
}

/// Issue 23: `https://` against a plain-HTTP port said only "received corrupt message of type
/// InvalidContentType"; now it says what that means and which URL to give.
#[test]
fn https_against_a_plain_http_port_says_so() {
    // A plain-HTTP server as nginx is: it answers a TLS ClientHello with an HTTP 400.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut conn, &mut buf);
            let _ = std::io::Write::write_all(
                &mut conn,
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&format!("https://127.0.0.1:{port}/"), dir.path())
        .args(["--tries", "1"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("does not answer TLS on this port")
            && err.contains(&format!("http://127.0.0.1:{port}/")),
        "{err}"
    );
}

/// Issue 23: `inspect` of a ZIP package or an SCP collection said "malformed XML"; it says what
/// the file is and what to give instead.
#[test]
fn inspect_says_what_a_zip_or_zstd_file_is() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("package.zip");
    std::fs::write(&zip, b"PK\x03\x04 rest of a package").unwrap();
    let zst = dir.path().join("blog.scp.zst");
    std::fs::write(&zst, [0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0]).unwrap();
    for (file, needle) in [(&zip, "a ZIP file"), (&zst, "SCP collection")] {
        let out = rsmirror().arg("inspect").arg(file).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(err.contains(needle) && err.contains("give"), "{err}");
        assert!(!err.contains("malformed XML"), "{err}");
    }
}

/// Issue 23: one bad `<lastmod>` aborted the whole baseline; now it fails that entry (refused,
/// named with its line) and the rest of the list is mirrored.
#[test]
fn a_bad_lastmod_fails_its_entry_not_the_run() {
    let t = Tree::new();
    for n in ["a", "b", "c"] {
        t.put(n, format!("{n}\n").as_bytes());
    }
    let urls: String = [
        ("a", "2026-01-01"),
        ("b", "last Tuesday"),
        ("c", "2026-01-03T10:00:00Z"),
    ]
    .iter()
    .map(|(n, lastmod)| {
        format!("<url><loc>{ORIGIN}/res/{n}</loc><lastmod>{lastmod}</lastmod></url>\n")
    })
    .collect();
    std::fs::write(
        t.path().join("sitemap.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{urls}</urlset>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/sitemap.xml"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["created"].as_u64(), s["refused"].as_u64()),
        (Some(2), Some(1)),
        "{s}"
    );
    assert!(
        err.contains("/res/b") && err.contains("line 4") && err.contains("last Tuesday"),
        "{err}"
    );
}

/// Issue 23: a mirror on read-only media (a WORM volume, a snapshot, a replica): `audit
/// --offline` verifies it without the lock and says that it recorded nothing; `feed` and
/// `baseline -n` read it; nothing is written there.
#[test]
fn a_read_only_mirror_can_be_audited_offline_and_read() {
    let Some(disk) = Tmpfs::mount("20m") else {
        return;
    };
    let srv = TestServer::start(crate::server::testdata("sample"));
    let mirror = disk.0.path().join("mirror");
    let out = baseline(&srv.url("/"), &mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let runs_before = {
        let conn = rusqlite::Connection::open(mirror.join("catalog.sqlite")).unwrap();
        conn.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    disk.resize("20m,ro");
    assert!(
        std::fs::write(mirror.join("probe"), b"").is_err(),
        "the mirror is read-only now"
    );

    let out = rsmirror()
        .args(["audit", "--offline", "-v", "--mirror"])
        .arg(&mirror)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("read-only") && err.contains("not recorded"),
        "{err}"
    );
    let out = rsmirror()
        .args(["audit", "--offline", "-q", "--mirror"])
        .arg(&mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(
        (stdout_of(&out), stderr_of(&out)),
        (String::new(), String::new())
    );

    let out = rsmirror()
        .args(["feed", "--mirror"])
        .arg(&mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = baseline(&srv.url("/"), &mirror).arg("-n").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    disk.resize("20m,rw");
    let conn = rusqlite::Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let runs_after: i64 = conn
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs_after, runs_before, "nothing was recorded");
}

/// Issue 23: a restricted source. `--header` values (literal, `$VAR`, `@FILE`) go with every
/// request to the source's host and to no other host, and never into the run record; without
/// `--header`, a `.netrc` entry for the host gives Basic authentication.
#[test]
fn headers_go_to_the_source_host_only_and_are_never_recorded() {
    let srv = TestServer::start(crate::server::testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "file-secret\n").unwrap();
    let mirror = dir.path().join("m");
    let out = baseline(&srv.url("/"), &mirror)
        .env("RS_TOKEN", "env-secret")
        .args(["--header", "X-Token: $RS_TOKEN", "--header"])
        .arg(format!("X-File: @{}", token_file.display()))
        .args(["--header", "X-Plain: plain-secret"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let requests = srv.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.header("x-token"), Some("env-secret"), "{r:?}");
        assert_eq!(r.header("x-file"), Some("file-secret"), "{r:?}");
        assert_eq!(r.header("x-plain"), Some("plain-secret"), "{r:?}");
    }
    let conn = rusqlite::Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let recorded: String = conn
        .query_row(
            "SELECT arguments FROM runs ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        !recorded.contains("secret") && recorded.contains("X-Plain: ***"),
        "{recorded}"
    );

    // Another host (the same server under another name) gets none of them.
    srv.clear_requests();
    let other = srv.url("/").replace("127.0.0.1", "localhost");
    let out = baseline(&other, &dir.path().join("m2"))
        .args(["--header", "X-Plain: plain-secret"])
        .arg("--allow-host")
        .arg("127.0.0.1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let requests = srv.requests();
    let (ours, others): (Vec<_>, Vec<_>) = requests
        .iter()
        .partition(|r| r.header("host").is_some_and(|h| h.starts_with("localhost")));
    assert!(!ours.is_empty() && !others.is_empty(), "{requests:?}");
    assert!(
        ours.iter()
            .all(|r| r.header("x-plain") == Some("plain-secret")),
        "{ours:?}"
    );
    assert!(
        others.iter().all(|r| r.header("x-plain").is_none()),
        "{others:?}"
    );

    // .netrc: Basic authentication for the source's host.
    let netrc = dir.path().join("netrc");
    std::fs::write(
        &netrc,
        "machine 127.0.0.1 login archivist password hunter2\n",
    )
    .unwrap();
    srv.clear_requests();
    let out = baseline(&srv.url("/"), &dir.path().join("m3"))
        .env("NETRC", &netrc)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // base64("archivist:hunter2")
    assert!(srv
        .requests()
        .iter()
        .all(|r| r.header("authorization") == Some("Basic YXJjaGl2aXN0Omh1bnRlcjI=")));
}

/// Issue 23: two sources in one mirror. `incremental` without SOURCE follows both, each from
/// its own sync point (a plain Sitemap by reading its list again), says which with -v, and
/// gives one summary; it used to follow only the last one baselined (or exit 2 for a plain
/// Sitemap).
#[test]
fn incremental_without_source_follows_every_source_of_the_mirror() {
    let a = Tree::new();
    for n in ["a1", "a2"] {
        a.put(n, format!("{n}\n").as_bytes());
    }
    a.capability_list("changelist.xml");
    a.resource_list("2026-03-01T00:00:00Z", &["a1", "a2"]);
    a.change_list("changelist.xml", "2026-03-01T00:00:00Z", None, &[]);
    let srv_a = TestServer::start(a.path());

    let b = tempfile::tempdir().unwrap();
    let plain = |names: &[&str]| {
        std::fs::create_dir_all(b.path().join("res")).unwrap();
        let urls: String = names
            .iter()
            .map(|n| {
                std::fs::write(b.path().join("res").join(n), format!("{n}\n")).unwrap();
                format!("<url><loc>{ORIGIN}/res/{n}</loc></url>\n")
            })
            .collect();
        std::fs::write(
            b.path().join("sitemap.xml"),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{urls}</urlset>\n"
            ),
        )
        .unwrap();
    };
    plain(&["b1"]);
    let srv_b = TestServer::start(b.path());
    let dir = tempfile::tempdir().unwrap();
    for src in [srv_a.url("/capabilitylist.xml"), srv_b.url("/sitemap.xml")] {
        let out = baseline(&src, dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    }

    a.put("a3", b"a3\n");
    a.change_list(
        "changelist.xml",
        "2026-03-01T00:00:00Z",
        None,
        &[("a3", "created", "2026-03-01T01:00:00Z")],
    );
    plain(&["b1", "b2"]);
    let out = incremental(dir.path())
        .args(["--json", "-v"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["created"], 2, "one from each source: {s}");
    assert!(
        err.contains(&srv_a.url("/capabilitylist.xml")) && err.contains(&srv_b.url("/sitemap.xml")),
        "{err}"
    );
    let have = current(dir.path());
    assert!(
        have.contains_key(&format!("{}/res/a3", srv_a.base())),
        "{have:?}"
    );
    assert!(
        have.contains_key(&format!("{}/res/b2", srv_b.base())),
        "{have:?}"
    );

    // An audit of one source judges extras within that source's collections: the other
    // source's resources are not `-` (it used to exit 1 every night).
    for src in [
        None,
        Some(srv_a.url("/capabilitylist.xml")),
        Some(srv_b.url("/sitemap.xml")),
    ] {
        let mut cmd = rsmirror();
        cmd.arg("audit")
            .args(src.iter())
            .arg("--mirror")
            .arg(dir.path());
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{src:?}: {}{}",
            stdout_of(&out),
            stderr_of(&out)
        );
    }
    // Without SOURCE the audit compares every source: a change at A (the source not last
    // baselined) is found.
    a.put("a1", b"a1 changed at the source\n");
    a.resource_list("2026-03-01T00:00:00Z", &["a1", "a2", "a3"]);
    let out = rsmirror()
        .args(["audit", "--mirror"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout_of(&out),
        stderr_of(&out)
    );
    assert!(
        stdout_of(&out).contains(&format!("* {}/res/a1", srv_a.base())),
        "{}",
        stdout_of(&out)
    );
}

/// The README's first command, then the next natural ones: `--map` is remembered with the
/// source, so `audit` and `incremental` read the same folder (no DNS lookup of the sample's
/// host); `--no-map` reads the network instead; a remembered folder that is gone is named.
#[test]
fn map_is_remembered_with_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let sample = crate::server::testdata("sample");
    // A copy of the sample, so that it can disappear.
    let tree = dir.path().join("sample");
    let st = std::process::Command::new("cp")
        .arg("-r")
        .arg(&sample)
        .arg(&tree)
        .status()
        .unwrap();
    assert!(st.success());
    let map = format!("http://sample.example.org/={}", tree.display());
    let out = baseline("http://sample.example.org/", &mirror)
        .args(["--map", &map])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let audit = || {
        let mut c = rsmirror();
        c.args(["audit", "--mirror"]).arg(&mirror);
        c
    };
    let out = audit().output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = incremental(&mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // --no-map: the network, where sample.example.org does not resolve (a source error).
    let out = audit().arg("--no-map").output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    // Given again elsewhere, --map replaces the rule for the runs after it.
    let moved = dir.path().join("moved");
    std::fs::rename(&tree, &moved).unwrap();
    let out = audit().output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains(&tree.display().to_string()), "{err}");
    assert!(err.contains("give --map again, or --no-map"), "{err}");
    // Offline, the source is not read: the folder does not matter.
    let out = audit().arg("--offline").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let map = format!("http://sample.example.org/={}", moved.display());
    let out = incremental(&mirror).args(["--map", &map]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = audit().output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// `--bwlimit RATE` (rclone's): a run receives at most RATE bytes a second in all, each of the
/// transfers in flight its share. 768 KiB in three resources at 256 KiB a second take at least
/// about three seconds (a lower bound: a slow machine only makes it slower); without the limit
/// the same run is far quicker. A RATE that is not one is refused.
#[test]
fn bwlimit_bounds_the_rate_of_a_whole_run() {
    let t = Tree::new();
    let bytes: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    for n in ["r1", "r2", "r3"] {
        t.put(n, &bytes);
    }
    t.resource_list("2026-01-01T00:00:00Z", &["r1", "r2", "r3"]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let started = std::time::Instant::now();
        let out = baseline(&srv.url("/resourcelist.xml"), &dir.path().join(name))
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        assert_eq!(current(&dir.path().join(name)).len(), 3);
        started.elapsed()
    };
    let limited = run("limited", &["--bwlimit", "256K", "-j", "3"]);
    assert!(limited.as_secs_f64() >= 2.4, "{limited:?}");
    let free = run("free", &["-j", "3"]);
    assert!(free < limited, "{free:?} vs {limited:?}");
    let out = baseline(&srv.url("/resourcelist.xml"), &dir.path().join("bad"))
        .args(["--bwlimit", "fast"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--bwlimit"), "{}", stderr_of(&out));
}

/// Issue 66, 10: a repair stopped by SIGTERM in its scan is a run of the mirror's history: it
/// is recorded from its start, so the signal marks it interrupted (exit 130), where before it
/// had no run row at all. The scan is held at one object deterministically: a FIFO in its
/// place, whose read waits for a writer that never comes.
#[cfg(unix)]
#[test]
fn a_repair_stopped_in_its_scan_is_recorded_as_interrupted() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let sample = crate::server::testdata("sample");
    let map = format!("http://sample.example.org/={}", sample.display());
    let out = rsmirror()
        .args([
            "baseline",
            "http://sample.example.org/",
            "--map",
            &map,
            "-q",
            "--mirror",
        ])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let sha = current(&m).into_values().next().unwrap();
    let object = m.join("objects/sha256").join(&sha[..2]).join(&sha);
    std::fs::remove_file(&object).unwrap();
    let fifo = std::ffi::CString::new(object.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);

    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["repair", "--offline", "-q", "--mirror"])
        .arg(&m)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let repair_runs = || -> Vec<(String, Option<String>, Option<i64>)> {
        let Ok(conn) = rusqlite::Connection::open(m.join("catalog.sqlite")) else {
            return Vec::new();
        };
        let Ok(mut stmt) =
            conn.prepare("SELECT command, outcome, exit_code FROM runs WHERE command = 'repair'")
        else {
            return Vec::new();
        };
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map(|rows| rows.flatten().collect())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while repair_runs().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the repair, held in its scan, has no run row"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = stopped_by_sigterm(child);
    assert!(err.contains("recorded as interrupted"), "{err}");
    assert_eq!(
        repair_runs(),
        vec![(
            "repair".to_string(),
            Some("interrupted".to_string()),
            Some(130)
        )]
    );
}

/// Issue 66, 12: SIGTERM while a baseline copies its list into the scratch copy
/// (`staging/listing-*.sqlite`) removes that copy as the process ends: a list of millions of
/// entries is a large file, and the next run may be days away. The second part of an index
/// never answers, so the signal comes while the first part is in the scratch copy.
#[cfg(unix)]
#[test]
fn a_signal_while_the_list_is_read_leaves_no_scratch_copy() {
    use std::time::{Duration, Instant};
    let t = Tree::new();
    let mut parts = String::new();
    for p in 1..=2 {
        let urls: String = (0..50)
            .map(|n| format!("<url><loc>{ORIGIN}/res/p{p}-{n}</loc></url>\n"))
            .collect();
        std::fs::write(
            t.path().join(format!("part{p}.xml")),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
                 xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
                 <rs:md capability=\"resourcelist\" at=\"2026-03-01T00:00:00Z\"/>\n{urls}</urlset>\n"
            ),
        )
        .unwrap();
        parts.push_str(&format!(
            "<sitemap><loc>{ORIGIN}/part{p}.xml</loc></sitemap>\n"
        ));
    }
    std::fs::write(
        t.path().join("index.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
             xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
             <rs:md capability=\"resourcelist\" at=\"2026-03-01T00:00:00Z\"/>\n{parts}</sitemapindex>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(t.path());
    srv.set_rule("/part2.xml", crate::server::Rule::Stall);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["baseline", &srv.url("/index.xml"), "-q", "--mirror"])
        .arg(&m)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let scratch = || -> Vec<String> {
        std::fs::read_dir(m.join("staging"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("listing-"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut child = child;
    let deadline = Instant::now() + Duration::from_secs(30);
    while srv.count("/part2.xml") == 0 || scratch().is_empty() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("the baseline ended ({status}) before the signal: {err}");
        }
        assert!(
            Instant::now() < deadline,
            "the list was never being read: {} part2 requests, scratch {:?}",
            srv.count("/part2.xml"),
            scratch()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = stopped_by_sigterm(child);
    assert_eq!(scratch(), Vec::<String>::new(), "{err}");
}

/// Send SIGTERM to `child` (its stderr piped), wait for it, and check that it exited 130; its
/// stderr.
#[cfg(unix)]
fn stopped_by_sigterm(child: std::process::Child) -> String {
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(130), "{err}");
    err
}
