//! Following a source by metadata alone (`--metadata-only`, issue 70): each listed state and
//! change is recorded as a version without its bytes (no resource is asked for), every reading
//! command says "metadata only" where bytes would be, `cat` refuses with a clear message,
//! `audit` compares what the source's lists declare without calling missing bytes corrupt, and
//! turning the source to full mirroring (`--no-metadata-only`) fetches what it lacks.

use crate::server::TestServer;
use crate::support::*;
use rusqlite::Connection;
use std::path::Path;

const T0: &str = "2026-03-01T00:00:00Z";
const T1: &str = "2026-03-02T00:00:00Z";
const T2: &str = "2026-03-03T00:00:00Z";

fn run(cmd: &mut assert_cmd::Command, code: i32) -> (String, String) {
    let out = cmd.output().unwrap();
    let (o, e) = (stdout_of(&out), stderr_of(&out));
    assert_eq!(out.status.code(), Some(code), "stdout:\n{o}\nstderr:\n{e}");
    (o, e)
}

fn mirror_cmd(mirror: &Path, args: &[&str]) -> assert_cmd::Command {
    let mut c = rsmirror();
    c.args(args).arg("--mirror").arg(mirror);
    c
}

/// GETs of the resources themselves (not the lists).
fn resource_gets(srv: &TestServer) -> usize {
    (srv.requests().iter())
        .filter(|r| r.path.starts_with("/res/"))
        .count()
}

/// (uri, arrived_via, sha256 or None, declared hash) of each current version.
fn states(mirror: &Path) -> Vec<(String, String, Option<String>, Option<String>)> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut st = conn
        .prepare(
            "SELECT r.uri, v.arrived_via, v.sha256_hex, v.declared_hash FROM resources r \
             JOIN versions v ON v.id = r.current_version_id ORDER BY r.uri",
        )
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn a_source_followed_by_metadata_alone_then_mirrored_in_full() {
    let t = Tree::new();
    for n in ["a", "b", "c"] {
        t.put(n, format!("{n}, first\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["a", "b", "c"]);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path();
    let o = srv.base();

    run(
        baseline(&srv.url("/capabilitylist.xml"), m).arg("--metadata-only"),
        0,
    );
    assert_eq!(resource_gets(&srv), 0, "no resource is fetched");
    let s = states(m);
    assert_eq!(s.len(), 3);
    for (uri, via, sha, declared) in &s {
        assert_eq!((via.as_str(), sha), ("metadata", &None), "{uri}");
        assert!(declared.as_deref().unwrap().contains("sha-256:"), "{uri}");
    }

    // Reading commands say so.
    let a = format!("{o}/res/a");
    let (ls, _) = run(&mut mirror_cmd(m, &["ls", "-l"]), 0);
    assert!(ls.contains("metadata only"), "{ls}");
    let (log, _) = run(&mut mirror_cmd(m, &["log", &a]), 0);
    assert!(log.contains("metadata only"), "{log}");
    let (status, _) = run(&mut mirror_cmd(m, &["status"]), 0);
    assert!(status.contains("metadata only"), "{status}");
    let (_, err) = run(&mut mirror_cmd(m, &["cat", &a]), 2);
    assert!(err.contains("metadata only") && err.contains(&a), "{err}");
    // Audit: what the lists declare agrees; no bytes are no corruption.
    let (audit, _) = run(&mut mirror_cmd(m, &["audit"]), 0);
    assert!(!audit.contains("corrupt"), "{audit}");

    // Exports leave out states without bytes: no file is written for them.
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("tree");
    run(
        &mut mirror_cmd(m, &["export", "tree", dest.to_str().unwrap()]),
        0,
    );
    let files: Vec<_> = walk_files(&dest)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("res"))
        .collect();
    assert!(files.is_empty(), "{files:?}");

    // Changes, followed by the kept setting: still no bytes.
    t.put("b", b"b, second\n");
    t.put("d", b"d, new\n");
    t.remove("c");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("b", "updated", T1),
            ("d", "created", T1),
            ("c", "deleted", T2),
        ],
    );
    srv.clear_requests();
    run(&mut incremental(m), 0);
    assert_eq!(resource_gets(&srv), 0, "the kept --metadata-only applies");
    let (log, _) = run(&mut mirror_cmd(m, &["log", &format!("{o}/res/b")]), 0);
    assert_eq!(log.matches("metadata only").count(), 2, "{log}");
    let (diff, _) = run(&mut mirror_cmd(m, &["diff", "run:1"]), 0);
    assert!(
        diff.contains(&format!("* {o}/res/b  (metadata only)")),
        "{diff}"
    );
    assert!(
        diff.contains(&format!("+ {o}/res/d  (metadata only)")),
        "{diff}"
    );
    assert_eq!(tombstoned(m), [format!("{o}/res/c")]);

    // Full mirroring: the next run fetches the bytes of every present resource that has none.
    srv.clear_requests();
    run(incremental(m).arg("--no-metadata-only"), 0);
    assert_eq!(resource_gets(&srv), 3, "a, b and d fetched once each");
    let s = states(m);
    let live: Vec<_> = s.iter().filter(|x| x.0 != format!("{o}/res/c")).collect();
    assert!(
        live.iter()
            .all(|(_, via, sha, _)| via == "http" && sha.is_some()),
        "{s:?}"
    );
    let (body, _) = run(&mut mirror_cmd(m, &["cat", &format!("{o}/res/b")]), 0);
    assert_eq!(body, "b, second\n");
    // Remembered off: nothing more to fetch.
    srv.clear_requests();
    run(&mut incremental(m), 0);
    assert_eq!(resource_gets(&srv), 0);
    assert_consistent(m);
}

/// A small site of `names`, with a Resource List and a Change List, served on a port of its own.
fn small_site(names: &[&str]) -> (Tree, TestServer) {
    let t = Tree::new();
    for n in names {
        t.put(n, format!("{n}\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, names);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    (t, srv)
}

#[test]
fn many_sites_imported_from_a_list_and_followed_metadata_only_one_failing() {
    let (_ta, a) = small_site(&["a1", "a2"]);
    let (_tb, b) = small_site(&["b1"]);
    // A site whose documents are not there: its baseline fails, the others go on.
    let empty = tempfile::tempdir().unwrap();
    let gone = TestServer::start(empty.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("mirror");
    let list = dir.path().join("sites.txt");

    // A bad line: named by its number, nothing recorded.
    std::fs::write(
        &list,
        format!(
            "# sites\n{}\nftp://nowhere.example/\n",
            a.url("/capabilitylist.xml")
        ),
    )
    .unwrap();
    let (_, err) = run(
        &mut mirror_cmd(&m, &["source", "import", list.to_str().unwrap()]),
        2,
    );
    assert!(err.contains("sites.txt:3:") && err.contains("ftp"), "{err}");
    assert!(!m.join("catalog.sqlite").exists(), "nothing recorded");

    // --skip-bad: the others are imported.
    std::fs::write(
        &list,
        format!(
            "# sites\n{}\n{}  # b\nftp://nowhere.example/\n{}\n",
            a.url("/capabilitylist.xml"),
            b.url("/capabilitylist.xml"),
            gone.url("/capabilitylist.xml"),
        ),
    )
    .unwrap();
    let out = mirror_cmd(
        &m,
        &[
            "source",
            "import",
            list.to_str().unwrap(),
            "--skip-bad",
            "--metadata-only",
        ],
    )
    .output()
    .unwrap();
    let err = stderr_of(&out);
    assert_ne!(out.status.code(), Some(0), "one site failed: {err}");
    assert!(err.contains("sites.txt:4:"), "{err}");
    assert!(err.contains(&gone.url("/capabilitylist.xml")), "{err}");
    assert_eq!(resource_gets(&a) + resource_gets(&b), 0, "metadata only");
    let s = states(&m);
    assert_eq!(s.len(), 3, "{s:?}");
    assert!(s.iter().all(|x| x.1 == "metadata"), "{s:?}");

    // The sources are followed; each keeps --metadata-only.
    let (list_out, _) = run(&mut mirror_cmd(&m, &["source", "list"]), 0);
    assert!(
        list_out.contains(&a.base()) && list_out.contains(&b.base()),
        "{list_out}"
    );
    let (status, _) = run(&mut mirror_cmd(&m, &["status"]), 0);
    assert_eq!(status.matches("metadata only").count(), 3, "{status}");
    // The failing site has its own outcome.
    let failing = status
        .split("\n\n")
        .find(|block| block.contains(&gone.base()))
        .unwrap();
    assert!(
        failing.contains("last baseline") && failing.contains("failed"),
        "{failing}"
    );
}
