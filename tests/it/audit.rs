//! `rsmirror audit` against a real HTTP server (issue 4's acceptance list): the corruption
//! matrix (each case alone on a freshly baselined mirror), source drift, the three report forms
//! (same findings; the JSON checked against `schemas/audit-report.schema.json`; a whole text
//! report against `tests/it/expected/`), `--sample` covering everything once, and the exit
//! codes around them (no mirror, lock held, source unreachable).

use crate::server::{testdata, Rule, TestServer};
use crate::support::*;
use rsmirror::finding::{Class, Finding};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `rsmirror audit --mirror DIR` (the remembered source unless a test adds one).
fn audit(mirror: &Path) -> assert_cmd::Command {
    let mut c = rsmirror();
    c.args(["audit", "--tries", "1", "--mirror"]).arg(mirror);
    c
}

/// Run an audit with `--json` and the extra `args`: (exit code, the report document).
fn audit_json(mirror: &Path, args: &[&str]) -> (i32, Value) {
    let out = audit(mirror).arg("--json").args(args).output().unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            stdout_of(&out),
            stderr_of(&out)
        )
    });
    (out.status.code().unwrap(), doc)
}

fn findings(doc: &Value) -> Vec<Finding> {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| Finding::from_json(f).expect("a finding"))
        .collect()
}

/// The findings that are not `=`, as (class, subject).
fn troubles(doc: &Value) -> Vec<(Class, String)> {
    findings(doc)
        .into_iter()
        .filter(|f| !f.class.is_ok())
        .map(|f| (f.class, f.subject().to_string()))
        .collect()
}

/// The path of the current object of `uri`.
fn object_of(mirror: &Path, uri: &str) -> PathBuf {
    let sha = current(mirror)
        .remove(uri)
        .unwrap_or_else(|| panic!("{uri} not in the mirror"));
    mirror.join("objects/sha256").join(&sha[0..2]).join(&sha)
}

fn writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// A served source of `n` same-size resources, and a mirror baselined from it.
struct Fixture {
    _source: tempfile::TempDir,
    srv: TestServer,
    mirror: tempfile::TempDir,
}

impl Fixture {
    fn generated(n: usize) -> Fixture {
        let source = tempfile::tempdir().unwrap();
        generate_source(source.path(), n, 64);
        let srv = TestServer::start(source.path());
        let mirror = tempfile::tempdir().unwrap();
        let out = baseline(&srv.url("/resourcelist.xml"), mirror.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        Fixture {
            _source: source,
            srv,
            mirror,
        }
    }

    fn uri(&self, i: usize) -> String {
        self.srv.url(&format!("/res/{i:06}"))
    }

    fn object(&self, i: usize) -> PathBuf {
        object_of(self.mirror.path(), &self.uri(i))
    }

    fn path(&self) -> &Path {
        self.mirror.path()
    }
}

// ------------------------------------------------------------------------------------------
// acceptance 1: the corruption matrix

#[test]
fn untouched_mirror_audits_clean_online_and_offline() {
    let fx = Fixture::generated(4);
    for args in [
        &[][..],
        &["--offline"],
        &["--all-versions"],
        &["--level", "size"],
    ] {
        let (code, doc) = audit_json(fx.path(), args);
        assert_eq!(code, 0, "{args:?}: {doc}");
        assert_eq!(troubles(&doc), vec![], "{args:?}");
        assert_eq!(findings(&doc).len(), 4, "{args:?}");
    }
    let (_, doc) = audit_json(fx.path(), &[]);
    assert!(findings(&doc).iter().all(|f| f.class == Class::InSync));
    assert_eq!(doc["summary"]["objects_checked"], 4);
    assert_eq!(doc["summary"]["bytes_hashed"], 4 * 64);
    // Quiet under cron: nothing on stderr or stdout when all is well.
    let out = audit(fx.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_of(&out), "");
    assert_eq!(stderr_of(&out), "");
    // -v shows every resource and the summary.
    let out = audit(fx.path()).arg("-v").output().unwrap();
    assert_eq!(
        stdout_of(&out)
            .lines()
            .filter(|l| l.starts_with("= "))
            .count(),
        4
    );
    assert!(
        stderr_of(&out).contains("audit: 4 in-sync;"),
        "{}",
        stderr_of(&out)
    );
    // Issue 44: what a level that hashes nothing checked is not called "verified", and a
    // source that cannot be read is not "nothing found".
    let out = audit(fx.path())
        .args(["--offline", "--level", "presence", "-v"])
        .output()
        .unwrap();
    assert!(
        stderr_of(&out).contains("audit: 4 present (not hashed: --level presence);"),
        "{}",
        stderr_of(&out)
    );
    let out = audit(fx.path())
        .arg("http://127.0.0.1:9/resourcelist.xml")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr_of(&out).contains("audit: nothing compared with the source (it could not be read"),
        "{}",
        stderr_of(&out)
    );
}

/// One corruption, alone on a fresh mirror: exit 1 and exactly `want` (class, subject).
fn corrupted(case: &str, corrupt: impl FnOnce(&Fixture) -> Vec<(Class, String)>) {
    let fx = Fixture::generated(4);
    let want = corrupt(&fx);
    let (code, doc) = audit_json(fx.path(), &["--offline"]);
    assert_eq!(code, 1, "{case}: {doc}");
    assert_eq!(troubles(&doc), want, "{case}");
    // Resources with a problem are never also `=`.
    let bad: BTreeSet<String> = want.iter().map(|(_, s)| s.clone()).collect();
    for f in findings(&doc) {
        if f.class.is_ok() {
            assert!(
                !bad.contains(f.subject()),
                "{case}: {} is also =",
                f.subject()
            );
        }
    }
    // The findings are in the catalog, one row per finding, for this run.
    let conn = Connection::open(fx.path().join("catalog.sqlite")).unwrap();
    let rows: Vec<(String, String)> = conn
        .prepare(
            "SELECT class, coalesce(uri, object) FROM audit_findings
             WHERE run_id = (SELECT max(id) FROM runs WHERE command = 'audit') ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let want_rows: Vec<(String, String)> = want
        .iter()
        .map(|(c, s)| (c.name().to_string(), s.clone()))
        .collect();
    assert_eq!(rows, want_rows, "{case}");
    let (outcome, exit): (String, i64) = conn
        .query_row(
            "SELECT outcome, exit_code FROM runs WHERE id = (SELECT max(id) FROM runs)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((outcome.as_str(), exit), ("ok", 1), "{case}");
}

#[test]
fn flipped_bit_is_corrupt() {
    corrupted("flipped bit", |fx| {
        let p = fx.object(1);
        writable(&p);
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[10] ^= 0x01;
        std::fs::write(&p, bytes).unwrap();
        vec![(Class::Corrupt, fx.uri(1))]
    });
}

#[test]
fn truncated_object_is_corrupt_at_size_level_too() {
    corrupted("truncated", |fx| {
        let p = fx.object(2);
        writable(&p);
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(20).unwrap();
        vec![(Class::Corrupt, fx.uri(2))]
    });
    let fx = Fixture::generated(2);
    let p = fx.object(0);
    writable(&p);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(3)
        .unwrap();
    let (code, doc) = audit_json(fx.path(), &["--offline", "--level", "size"]);
    assert_eq!(code, 1);
    let f = &findings(&doc)[0];
    assert_eq!(
        (
            f.class,
            f.field.as_deref(),
            f.expected.as_deref(),
            f.actual.as_deref()
        ),
        (Class::Corrupt, Some("length"), Some("64"), Some("3"))
    );
    assert_eq!(doc["summary"]["bytes_hashed"], 0);
}

#[test]
fn deleted_object_is_missing() {
    corrupted("deleted object", |fx| {
        std::fs::remove_file(fx.object(0)).unwrap();
        vec![(Class::MissingObject, fx.uri(0))]
    });
}

#[test]
fn same_size_swap_is_corrupt_and_invisible_to_size() {
    corrupted("same-size swap", |fx| {
        let (a, b) = (fx.object(0), fx.object(3));
        let tmp = fx.path().join("swap.tmp");
        std::fs::rename(&a, &tmp).unwrap();
        std::fs::rename(&b, &a).unwrap();
        std::fs::rename(&tmp, &b).unwrap();
        vec![(Class::Corrupt, fx.uri(0)), (Class::Corrupt, fx.uri(3))]
    });
    let fx = Fixture::generated(2);
    let (a, b) = (fx.object(0), fx.object(1));
    let (ba, bb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    writable(&a);
    writable(&b);
    std::fs::write(&a, bb).unwrap();
    std::fs::write(&b, ba).unwrap();
    // --level size cannot see it (the lengths are right); fixity can.
    assert_eq!(
        audit_json(fx.path(), &["--offline", "--level", "size"]).0,
        0
    );
    let (code, doc) = audit_json(fx.path(), &["--offline"]);
    assert_eq!(code, 1);
    let f = &findings(&doc)[0];
    assert_eq!(
        (f.class, f.field.as_deref()),
        (Class::Corrupt, Some("sha-256"))
    );
}

/// `--level sha256` re-hashes every byte with SHA-256 only: a changed byte is found exactly as
/// at `fixity`; a recorded md5 that no longer matches (the catalog, not the bytes) only `fixity`
/// finds, and the report says which level ran.
#[test]
fn level_sha256_finds_changed_bytes_but_does_not_recompute_md5() {
    let fx = Fixture::generated(3);
    let p = fx.object(1);
    writable(&p);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[3] ^= 0x20;
    std::fs::write(&p, bytes).unwrap();
    let (code, doc) = audit_json(fx.path(), &["--offline", "--level", "sha256"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["level"], "sha256");
    assert_eq!(troubles(&doc), vec![(Class::Corrupt, fx.uri(1))]);
    let f = &findings(&doc)[1];
    assert_eq!(
        (f.class, f.field.as_deref()),
        (Class::Corrupt, Some("sha-256"))
    );

    let fx = Fixture::generated(2);
    let conn = Connection::open(fx.path().join("catalog.sqlite")).unwrap();
    conn.execute("UPDATE versions SET md5_hex = ?1", [&"0".repeat(32)])
        .unwrap();
    drop(conn);
    let (code, doc) = audit_json(fx.path(), &["--offline", "--level", "sha256"]);
    assert_eq!((code, troubles(&doc)), (0, vec![]), "{doc}");
    let (code, doc) = audit_json(fx.path(), &["--offline"]);
    assert_eq!(code, 1, "{doc}");
    let f = &findings(&doc)[0];
    assert_eq!((f.class, f.field.as_deref()), (Class::Corrupt, Some("md5")));
}

#[test]
fn stray_file_in_objects() {
    corrupted("stray file", |fx| {
        let sha = "ab".repeat(32);
        let dir = fx.path().join("objects/sha256/ab");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(&sha), b"not referenced").unwrap();
        vec![(Class::StrayObject, format!("objects/sha256/ab/{sha}"))]
    });
    corrupted("misplaced file", |fx| {
        std::fs::write(fx.path().join("objects/sha256/notes.txt"), b"x").unwrap();
        vec![(Class::StrayObject, "objects/sha256/notes.txt".to_string())]
    });
}

#[test]
fn catalog_row_whose_object_is_gone() {
    corrupted("catalog row without object", |fx| {
        let ghost = fx.srv.url("/res/ghost");
        let conn = Connection::open(fx.path().join("catalog.sqlite")).unwrap();
        conn.execute_batch(&format!(
            "INSERT INTO resources (uri, collection_id, first_run_id)
               VALUES ('{ghost}', (SELECT min(id) FROM collections), 1);
             INSERT INTO versions (resource_id, run_id, change, length_bytes, md5_hex, sha256_hex,
                 arrived_via)
               VALUES (last_insert_rowid(), 1, 'created', 5, '{md5}', '{sha}', 'http');
             UPDATE resources SET current_version_id = last_insert_rowid() WHERE uri = '{ghost}';",
            md5 = "0".repeat(32),
            sha = "cd".repeat(32),
        ))
        .unwrap();
        vec![(Class::MissingObject, ghost)]
    });
}

#[test]
fn unreadable_object() {
    // The tests run as root, for whom chmod 000 changes nothing: a folder in the object's
    // place opens but cannot be read.
    corrupted("unreadable", |fx| {
        let p = fx.object(2);
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        vec![(Class::Unreadable, fx.uri(2))]
    });
}

#[test]
fn mtime_only_change_is_not_reported() {
    let fx = Fixture::generated(3);
    let p = fx.object(1);
    writable(&p);
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000))
        .unwrap();
    drop(f);
    for args in [&["--offline"][..], &[]] {
        let (code, doc) = audit_json(fx.path(), args);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(troubles(&doc), vec![]);
    }
}

#[test]
fn corruption_is_reported_beside_the_source_comparison() {
    let fx = Fixture::generated(3);
    let p = fx.object(0);
    writable(&p);
    std::fs::write(&p, vec![b'z'; 64]).unwrap();
    let (code, doc) = audit_json(fx.path(), &[]);
    assert_eq!(code, 1);
    let got: Vec<(Class, String)> = findings(&doc)
        .into_iter()
        .map(|f| (f.class, f.subject().to_string()))
        .collect();
    assert_eq!(
        got,
        vec![
            // The source still agrees with the catalog, but the bytes do not: no `=`.
            (Class::Corrupt, fx.uri(0)),
            (Class::InSync, fx.uri(1)),
            (Class::InSync, fx.uri(2)),
        ]
    );
}

#[test]
fn an_object_several_resources_share_is_hashed_once() {
    let v1 = tempfile::tempdir().unwrap();
    write_tree(
        v1.path(),
        &[
            ("a", b"same bytes\n", Declare::Full),
            ("b", b"same bytes\n", Declare::Full),
            ("c", b"other\n", Declare::Full),
        ],
    );
    let srv = TestServer::start(v1.path());
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), mirror.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let (code, doc) = audit_json(mirror.path(), &["--offline"]);
    assert_eq!(code, 0);
    assert_eq!(doc["summary"]["objects_checked"], 2);
    assert_eq!(doc["summary"]["bytes_hashed"], 11 + 6);
    // Its corruption concerns both resources.
    let p = object_of(mirror.path(), &srv.url("/res/a"));
    writable(&p);
    std::fs::write(&p, b"SAME BYTES\n").unwrap();
    let (code, doc) = audit_json(mirror.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        troubles(&doc),
        vec![
            (Class::Corrupt, srv.url("/res/a")),
            (Class::Corrupt, srv.url("/res/b")),
        ]
    );
}

#[test]
fn all_versions_checks_the_objects_of_earlier_versions() {
    let v1 = tempfile::tempdir().unwrap();
    write_tree(
        v1.path(),
        &[
            ("a", b"first\n", Declare::Full),
            ("b", b"bravo\n", Declare::Full),
        ],
    );
    let srv = TestServer::start(v1.path());
    let mirror = tempfile::tempdir().unwrap();
    let run = |what: &str| {
        let out = baseline(&srv.url("/resourcelist.xml"), mirror.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr_of(&out));
    };
    run("first baseline");
    let old = object_of(mirror.path(), &srv.url("/res/a"));
    let v2 = tempfile::tempdir().unwrap();
    write_tree(
        v2.path(),
        &[
            ("a", b"second\n", Declare::Full),
            ("b", b"bravo\n", Declare::Full),
        ],
    );
    srv.set_root(v2.path());
    run("second baseline");
    assert_eq!(version_count(mirror.path()), 3);
    writable(&old);
    std::fs::write(&old, b"rot").unwrap();
    // The current versions are intact.
    let (code, doc) = audit_json(mirror.path(), &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["summary"]["objects_checked"], 2);
    let (code, doc) = audit_json(mirror.path(), &["--all-versions"]);
    assert_eq!(code, 1);
    assert_eq!(doc["summary"]["objects_checked"], 3);
    let f = findings(&doc)
        .into_iter()
        .find(|f| !f.class.is_ok())
        .unwrap();
    assert_eq!(
        (f.class, f.uri.as_deref(), f.field.as_deref()),
        (
            Class::Corrupt,
            Some(srv.url("/res/a").as_str()),
            Some("length")
        )
    );
    assert_eq!(
        f.object.as_deref(),
        old.file_name().and_then(|n| n.to_str())
    );
}

// ------------------------------------------------------------------------------------------
// acceptance 2: source drift

/// How a tree entry declares itself.
#[derive(Clone, Copy)]
enum Declare {
    /// lastmod, length, md5 and sha-256.
    Full,
    /// lastmod and length only.
    LengthOnly,
}

/// Write a servable tree: `resourcelist.xml` (placeholder origin) and `res/NAME` per entry.
fn write_tree(dir: &Path, entries: &[(&str, &[u8], Declare)]) {
    use md5::Digest as _;
    use sha2::Digest as _;
    std::fs::create_dir_all(dir.join("res")).unwrap();
    let mut xml = String::from(concat!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n",
        "<rs:md capability=\"resourcelist\" at=\"2026-01-01T00:00:00Z\"/>\n"
    ));
    for (name, body, declare) in entries {
        std::fs::write(dir.join("res").join(name), body).unwrap();
        let hash = match declare {
            Declare::Full => format!(
                " hash=\"md5:{} sha-256:{}\"",
                hex::encode(md5::Md5::digest(body)),
                hex::encode(sha2::Sha256::digest(body))
            ),
            Declare::LengthOnly => String::new(),
        };
        xml.push_str(&format!(
            "<url><loc>http://sample.example.org/res/{name}</loc><lastmod>2025-12-01T00:00:00Z</lastmod>\
             <rs:md{hash} length=\"{}\"/></url>\n",
            body.len()
        ));
    }
    xml.push_str("</urlset>\n");
    std::fs::write(dir.join("resourcelist.xml"), xml).unwrap();
}

#[test]
fn source_drift_added_changed_and_removed() {
    let v1 = tempfile::tempdir().unwrap();
    write_tree(
        v1.path(),
        &[
            ("a", b"alpha\n", Declare::Full),
            ("b", b"bravo\n", Declare::Full),
            ("c", b"charlie\n", Declare::LengthOnly),
            ("d", b"delta\n", Declare::Full),
        ],
    );
    let srv = TestServer::start(v1.path());
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), mirror.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // a, b, d in sync; c (a length, no digest) unverifiable, which is not a difference.
    let (code, doc) = audit_json(mirror.path(), &[]);
    assert_eq!(code, 0, "{doc}");
    let marks: String = findings(&doc).iter().map(Finding::mark).collect();
    assert_eq!(marks, "==?=");

    let v2 = tempfile::tempdir().unwrap();
    write_tree(
        v2.path(),
        &[
            ("a", b"alpha\n", Declare::Full),
            // Same length, new bytes: only the digests differ.
            ("b", b"BRAVO\n", Declare::Full),
            // Declares a length only, and a new one.
            ("c", b"charlie, longer\n", Declare::LengthOnly),
            // d is gone; e is new.
            ("e", b"echo\n", Declare::Full),
        ],
    );
    srv.set_root(v2.path());
    let (code, doc) = audit_json(mirror.path(), &[]);
    assert_eq!(code, 1, "{doc}");
    let url = |n: &str| srv.url(&format!("/res/{n}"));
    let got: Vec<(char, Class, String, Option<String>)> = findings(&doc)
        .into_iter()
        .map(|f| (f.mark(), f.class, f.subject().to_string(), f.field.clone()))
        .collect();
    let want = vec![
        ('=', Class::InSync, url("a"), None),
        ('*', Class::Changed, url("b"), Some("md5".to_string())),
        ('*', Class::Changed, url("b"), Some("sha-256".to_string())),
        ('*', Class::Changed, url("c"), Some("length".to_string())),
        ('-', Class::Extra, url("d"), None),
        ('+', Class::Missing, url("e"), None),
    ];
    assert_eq!(got, want);
    // Expected is the source's value, actual the mirror's.
    let c = findings(&doc)
        .into_iter()
        .find(|f| f.field.as_deref() == Some("length"))
        .unwrap();
    assert_eq!(
        (c.expected.as_deref(), c.actual.as_deref()),
        (Some("16"), Some("8"))
    );
    // The plain lines carry the same marks; `=` only with -v.
    let out = audit(mirror.path()).output().unwrap();
    let marks: String = stdout_of(&out)
        .lines()
        .map(|l| l.chars().next().unwrap())
        .collect();
    assert_eq!(marks, "***-+");
    assert!(stdout_of(&out).contains("run rsmirror incremental"));
    // Issue 44: the summary counts resources, each once, and says how many findings there
    // are when a resource has several (b: md5 and sha-256).
    assert!(
        stderr_of(&out).contains("audit: 1 in-sync, 1 missing, 2 changed, 1 extra (6 findings);"),
        "{}",
        stderr_of(&out)
    );
    // An audit writes no content.
    assert_eq!(version_count(mirror.path()), 4);
    assert_consistent(mirror.path());
}

#[test]
fn source_without_digests_is_unverifiable() {
    let srv = TestServer::start(testdata("syntax/plain"));
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), mirror.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let (code, doc) = audit_json(mirror.path(), &[]);
    assert_eq!(code, 0, "{doc}");
    let classes: Vec<Class> = findings(&doc).iter().map(|f| f.class).collect();
    assert_eq!(classes, vec![Class::Unverifiable; 3]);
    assert!(findings(&doc).iter().all(|f| f.mark() == '?'));
    let (code, _) = audit_json(mirror.path(), &["--require-fixity"]);
    assert_eq!(code, 1);
    // Issue 25: quiet means quiet. Under cron (no terminal) and with -q, an audit that exits 0
    // prints nothing: `?` is not a difference, and is counted, not printed line by line.
    for args in [&[][..], &["-q"][..]] {
        let out = audit(mirror.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            (stdout_of(&out), stderr_of(&out)),
            (String::new(), String::new()),
            "{args:?}"
        );
    }
    // -v lists them, with the summary's count; --require-fixity makes them differences, printed.
    let out = audit(mirror.path()).arg("-v").output().unwrap();
    let unverifiable = |out: &std::process::Output| {
        stdout_of(out)
            .lines()
            .filter(|l| l.starts_with("? "))
            .count()
    };
    assert_eq!(unverifiable(&out), 3);
    assert!(
        stderr_of(&out).contains("3 unverifiable"),
        "{}",
        stderr_of(&out)
    );
    let out = audit(mirror.path())
        .args(["-q", "--require-fixity"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(unverifiable(&out), 3);
    // The catalog records them.
    let conn = Connection::open(mirror.path().join("catalog.sqlite")).unwrap();
    let recorded: i64 = conn
        .query_row(
            "SELECT count(*) FROM audit_findings WHERE mark = '?' AND run_id = (SELECT max(run_id) FROM audit_findings)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(recorded, 3);
}

// ------------------------------------------------------------------------------------------
// acceptance 3: reports

/// A mirror with a little of everything: in sync, changed, missing, extra, corrupt, stray.
fn eventful() -> (
    tempfile::TempDir,
    TestServer,
    tempfile::TempDir,
    tempfile::TempDir,
) {
    let v1 = tempfile::tempdir().unwrap();
    write_tree(
        v1.path(),
        &[
            ("a", b"alpha\n", Declare::Full),
            ("b", b"bravo\n", Declare::Full),
            ("c", b"charlie\n", Declare::Full),
            ("d", b"delta\n", Declare::Full),
        ],
    );
    let srv = TestServer::start(v1.path());
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), mirror.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v2 = tempfile::tempdir().unwrap();
    write_tree(
        v2.path(),
        &[
            ("a", b"alpha\n", Declare::Full),
            ("b", b"bravo, again\n", Declare::Full),
            ("c", b"charlie\n", Declare::Full),
            ("e", b"echo, \"quoted\"\n", Declare::Full),
        ],
    );
    srv.set_root(v2.path());
    let c = object_of(mirror.path(), &srv.url("/res/c"));
    writable(&c);
    std::fs::write(&c, b"CHARLIE\n").unwrap();
    let stray = mirror.path().join("objects/sha256/00");
    std::fs::create_dir_all(&stray).unwrap();
    std::fs::write(stray.join("0".repeat(64)), b"stray").unwrap();
    (v1, srv, mirror, v2)
}

/// A minimal RFC 4180 reader: the header row, then the records as maps.
fn read_csv(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut records = vec![];
    let mut record = vec![];
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => record.push(std::mem::take(&mut field)),
            ('\n', false) => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (c, _) => field.push(c),
        }
    }
    let header = records.remove(0);
    records
        .into_iter()
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

#[test]
fn text_json_and_csv_reports_carry_the_same_findings() {
    let (_v1, _srv, mirror, _v2) = eventful();
    let dir = tempfile::tempdir().unwrap();
    let report = |format: &str| {
        let path = dir.path().join(format!("report.{format}"));
        let out = audit(mirror.path())
            .args(["--report"])
            .arg(&path)
            .args(["--format", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
        (stdout_of(&out), std::fs::read_to_string(&path).unwrap())
    };
    let (stdout, text) = report("text");
    let (_, json) = report("json");
    let (_, csv) = report("csv");
    let (_, stdout_json) = audit_json(mirror.path(), &[]);

    let doc: Value = serde_json::from_str(&json).unwrap();
    let from_json = findings(&doc);
    assert_eq!(from_json, findings(&stdout_json));
    let classes: BTreeSet<Class> = from_json.iter().map(|f| f.class).collect();
    assert_eq!(
        classes,
        BTreeSet::from([
            Class::InSync,
            Class::Changed,
            Class::Extra,
            Class::Missing,
            Class::Corrupt,
            Class::StrayObject
        ])
    );
    // Text: every finding's line, in order, between the `#` lines.
    let text_lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let json_lines: Vec<String> = from_json.iter().map(Finding::line).collect();
    assert_eq!(text_lines, json_lines);
    // stdout: the same lines without the `=` ones.
    let not_ok: Vec<&String> = json_lines.iter().filter(|l| !l.starts_with('=')).collect();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), not_ok);
    // CSV: the same fields.
    let rows = read_csv(&csv);
    assert_eq!(rows.len(), from_json.len());
    for (row, f) in rows.iter().zip(&from_json) {
        let col = |k: &str| Some(row[k].clone()).filter(|v| !v.is_empty());
        assert_eq!(row["mark"], f.mark().to_string());
        assert_eq!(row["class"], f.class.name());
        assert_eq!(col("uri"), f.uri);
        assert_eq!(col("object"), f.object);
        assert_eq!(col("field"), f.field);
        assert_eq!(col("expected"), f.expected);
        assert_eq!(col("actual"), f.actual);
        assert_eq!(row["hint"], f.hint.as_ref());
    }
    // The catalog holds every finding but the `=` ones, for each of the four runs.
    let conn = Connection::open(mirror.path().join("catalog.sqlite")).unwrap();
    let per_run: Vec<i64> = conn
        .prepare("SELECT count(*) FROM audit_findings GROUP BY run_id ORDER BY run_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(per_run, vec![not_ok.len() as i64; 4]);
}

#[test]
fn json_report_validates_against_the_schema() {
    let validator = schema("audit-report.schema.json");
    let (_v1, _srv, mirror, _v2) = eventful();
    let check = |doc: &Value| valid(&validator, doc);
    for args in [
        &[][..],
        &["--offline"],
        &["--sample", "2/3", "--level", "presence", "--all-versions"],
    ] {
        let (_, doc) = audit_json(mirror.path(), args);
        check(&doc);
    }
    // The schema is not a rubber stamp.
    let (_, mut doc) = audit_json(mirror.path(), &[]);
    doc["findings"][0]["mark"] = Value::from("!");
    assert!(!validator.is_valid(&doc));
}

/// Replace what changes from run to run: the run id, times, the server's port, the mirror.
fn redact(report: &str, srv: &TestServer, mirror: &Path) -> String {
    report
        .replace(&srv.base(), "http://sample.example.org")
        .replace(&mirror.display().to_string(), "MIRROR")
        .lines()
        .map(|l| {
            for key in ["# run: ", "# started: ", "# time: "] {
                if l.starts_with(key) {
                    return format!("{key}[redacted]");
                }
            }
            l.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn whole_text_report_matches_the_expected_file() {
    let (_v1, srv, mirror, _v2) = eventful();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.txt");
    let out = audit(mirror.path())
        .args(["--report"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let got = redact(
        &std::fs::read_to_string(&path).unwrap(),
        &srv,
        mirror.path(),
    );
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/expected/audit-report.txt");
    if std::env::var_os("RSMIRROR_BLESS").is_some() {
        std::fs::write(&expected, &got).unwrap();
    }
    let want = std::fs::read_to_string(&expected)
        .unwrap_or_else(|e| panic!("{}: {e} (RSMIRROR_BLESS=1 writes it)", expected.display()));
    assert_eq!(
        got, want,
        "the report changed; RSMIRROR_BLESS=1 rewrites the expected file"
    );
}

// ------------------------------------------------------------------------------------------
// acceptance 4: --sample

#[test]
fn sample_slices_cover_everything_exactly_once() {
    let fx = Fixture::generated(40);
    // Drift (a resource added at the source) and a stray must be covered once too.
    let stray = fx.path().join("objects/sha256/ff");
    std::fs::create_dir_all(&stray).unwrap();
    std::fs::write(stray.join("f".repeat(64)), b"stray").unwrap();
    let added = tempfile::tempdir().unwrap();
    generate_source(added.path(), 41, 64);
    fx.srv.set_root(added.path());
    let all: BTreeSet<String> = (0..41)
        .map(|i| fx.uri(i))
        .chain([format!("objects/sha256/ff/{}", "f".repeat(64))])
        .collect();
    for m in [1u64, 3, 7] {
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut resources = 0;
        for n in 1..=m {
            let (_, doc) = audit_json(fx.path(), &["--sample", &format!("{n}/{m}")]);
            assert_eq!(doc["sample"], format!("{n}/{m}"));
            resources += doc["summary"]["resources"].as_u64().unwrap();
            for f in findings(&doc) {
                *seen.entry(f.subject().to_string()).or_default() += 1;
            }
        }
        assert_eq!(seen.keys().cloned().collect::<BTreeSet<_>>(), all, "M={m}");
        assert!(seen.values().all(|&n| n == 1), "M={m}: {seen:?}");
        assert_eq!(resources, 40, "M={m}");
    }
    // The slices are not all in the first run: a 3-night cycle really splits the work.
    let (_, first) = audit_json(fx.path(), &["--sample", "1/3", "--offline"]);
    let n = findings(&first).len();
    assert!(n > 3 && n < 30, "{n} of 41 in slice 1/3");
}

// ------------------------------------------------------------------------------------------
// exit codes around the audit (DESIGN.md §5)

#[test]
fn no_mirror_is_a_store_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = audit(&dir.path().join("nothing")).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(
        stderr_of(&out).contains("no mirror at")
            && stderr_of(&out).contains("run rsmirror baseline first"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_held_lock_is_exit_6() {
    let fx = Fixture::generated(1);
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(fx.path().join(".lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let out = audit(fx.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr_of(&out));
    drop(lock);
    assert_eq!(audit(fx.path()).output().unwrap().status.code(), Some(0));
}

#[test]
fn unreachable_source_is_exit_4_and_nothing_is_called_in_sync() {
    let fx = Fixture::generated(3);
    let p = fx.object(2);
    writable(&p);
    std::fs::write(&p, b"rot").unwrap();
    fx.srv.set_rule("/resourcelist.xml", Rule::Status(503));
    let out = audit(fx.path()).args(["-v", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("source error"),
        "{}",
        stderr_of(&out)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The local finding is reported; no resource is called in sync.
    assert_eq!(troubles(&doc), vec![(Class::Corrupt, fx.uri(2))]);
    assert!(findings(&doc).iter().all(|f| !f.class.is_ok()));
    assert_eq!(doc["summary"]["exit_code"], 4);
    assert!(doc["summary"]["error"].as_str().unwrap().contains("503"));
    // A malformed list is the same.
    fx.srv
        .set_rule("/resourcelist.xml", Rule::Body(b"<urlset><url>".to_vec()));
    let (code, doc) = audit_json(fx.path(), &[]);
    assert_eq!(code, 4);
    assert!(findings(&doc).iter().all(|f| !f.class.is_ok()));
}

#[test]
fn a_failed_index_part_is_reported_and_no_extra_is_derived() {
    let srv = TestServer::start(testdata("sample"));
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/"), mirror.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(audit_json(mirror.path(), &[]).0, 0);
    srv.set_rule("/rs/resourcelist-2.xml", Rule::Status(404));
    let (code, doc) = audit_json(mirror.path(), &[]);
    assert_eq!(code, 4, "{doc}");
    // The four resources of the readable part are compared; the other four are neither `=`
    // nor `-`: nothing is known of them.
    let marks: String = findings(&doc).iter().map(Finding::mark).collect();
    assert_eq!(marks, "====!");
    let part = findings(&doc).pop().unwrap();
    assert_eq!(part.class, Class::Source);
    assert_eq!(part.uri, Some(srv.url("/rs/resourcelist-2.xml")));
    assert!(part.actual.unwrap().contains("404"));
    let conn = Connection::open(mirror.path().join("catalog.sqlite")).unwrap();
    let outcome: String = conn
        .query_row(
            "SELECT outcome FROM runs WHERE id = (SELECT max(id) FROM runs)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(outcome, "partial");
}

/// ResourceSync 1.1 §10.3: the expected state is the Resource List with every change after
/// its `at` applied. Before `incremental` the mirror lags behind it; after, it is in sync.
#[test]
fn changes_after_the_lists_at_are_part_of_the_expected_state() {
    let t = Tree::new();
    for i in 1..=4 {
        t.put(&format!("r{i}"), format!("resource {i}\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list("2026-03-01T00:00:00Z", &["r1", "r2", "r3", "r4"]);
    t.change_list("changelist.xml", "2026-03-01T00:00:00Z", None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // The source changes; its Resource List is not republished (still at the old `at`).
    t.put("r1", b"resource 1, second version\n");
    t.put("r5", b"resource 5\n");
    t.change_list(
        "changelist.xml",
        "2026-03-01T00:00:00Z",
        None,
        &[
            ("r1", "updated", "2026-03-01T01:00:00Z"),
            ("r5", "created", "2026-03-01T02:00:00Z"),
            ("r2", "deleted", "2026-03-01T03:00:00Z"),
        ],
    );
    let (code, doc) = audit_json(dir.path(), &[]);
    assert_eq!(code, 1);
    let mut got = troubles(&doc);
    got.sort();
    let base = srv.base();
    let mut want = vec![
        (Class::Changed, format!("{base}/res/r1")),
        (Class::Changed, format!("{base}/res/r1")),
        (Class::Missing, format!("{base}/res/r5")),
        (Class::Extra, format!("{base}/res/r2")),
    ];
    want.sort();
    // r1 differs in md5 and sha-256 (and length): one finding per field.
    got.dedup();
    want.dedup();
    assert_eq!(got, want, "{doc}");

    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let (code, doc) = audit_json(dir.path(), &[]);
    assert_eq!(code, 0, "{doc}");
}

// ------------------------------------------------------------------------------------------
// issue 25: sources without digests

/// A plain Sitemap of `n` resources without digests, the same lastmod for all: (tree dir,
/// server, mirror baselined from it, the sitemap's URL).
fn digestless(n: usize) -> (tempfile::TempDir, TestServer, tempfile::TempDir, String) {
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir(site.path().join("res")).unwrap();
    let mut urls = String::new();
    for i in 0..n {
        std::fs::write(
            site.path().join(format!("res/p{i:02}")),
            format!("page {i:02} v1\n"),
        )
        .unwrap();
        urls.push_str(&format!(
            "<url><loc>{ORIGIN}/res/p{i:02}</loc><lastmod>2026-03-01T10:00:00Z</lastmod></url>\n"
        ));
    }
    std::fs::write(
        site.path().join("sitemap.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{urls}</urlset>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(site.path());
    let mirror = tempfile::tempdir().unwrap();
    let src = srv.url("/sitemap.xml");
    let out = baseline(&src, mirror.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    (site, srv, mirror, src)
}

/// The one collection's verification counts.
fn verification(doc: &Value) -> Value {
    let v = doc["summary"]["verification"]
        .as_object()
        .expect("verification");
    assert_eq!(v.len(), 1, "{v:?}");
    v.values().next().unwrap().clone()
}

#[test]
fn refetch_proves_what_no_digest_can_and_finds_a_silent_change() {
    let (site, srv, mirror, _) = digestless(6);
    let schema = schema("audit-report.schema.json");
    // Without --refetch: nothing proved, nothing to say (exit 0, `?` in the report).
    let (code, doc) = audit_json(mirror.path(), &[]);
    assert_eq!(code, 0);
    assert_eq!(verification(&doc)["unverified"], 6, "{doc}");
    assert!(schema.is_valid(&doc), "{doc}");

    // Full GETs: every resource compared byte for byte.
    srv.clear_requests();
    let (code, doc) = audit_json(mirror.path(), &["--refetch=bytes"]);
    assert_eq!(code, 0, "{doc}");
    let v = verification(&doc);
    assert_eq!(
        (v["refetched_bytes"].as_u64(), v["unverified"].as_u64()),
        (Some(6), Some(0)),
        "{v}"
    );
    assert!(troubles(&doc).is_empty(), "{doc}");
    assert!(schema.is_valid(&doc), "{doc}");
    let fetched: Vec<_> = srv
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/res/"))
        .collect();
    assert_eq!(fetched.len(), 6);
    assert!(
        fetched.iter().all(|r| r.header("if-none-match").is_none()),
        "{fetched:?}"
    );

    // The source changes one file's bytes, keeping its length and lastmod: the plain audit
    // cannot tell; the refetch can.
    std::fs::write(site.path().join("res/p03"), b"page 03 v2\n").unwrap();
    let (code, doc) = audit_json(mirror.path(), &[]);
    assert_eq!(code, 0, "{doc}");
    let p03 = format!("{}/res/p03", srv.base());
    let (code, doc) = audit_json(mirror.path(), &["--refetch=bytes"]);
    assert_eq!(code, 1, "{doc}");
    let changed: Vec<Finding> = findings(&doc)
        .into_iter()
        .filter(|f| f.class == Class::Changed)
        .collect();
    assert_eq!(changed.len(), 1, "{doc}");
    assert_eq!(changed[0].uri.as_deref(), Some(p03.as_str()));
    assert_eq!(changed[0].field.as_deref(), Some("sha-256"));
    assert_eq!(
        changed[0].expected.as_deref(),
        Some(sha256_file(&site.path().join("res/p03")).as_str())
    );
    assert_eq!(
        changed[0].actual.as_deref(),
        Some(current(mirror.path())[&p03].as_str())
    );
    assert_eq!(verification(&doc)["refetched_differs"], 1);

    // Conditional GETs: the unchanged ones are only claimed unchanged (304), never verified;
    // the changed one is fetched and found.
    srv.clear_requests();
    let (code, doc) = audit_json(mirror.path(), &["--refetch"]);
    assert_eq!(code, 1, "{doc}");
    let v = verification(&doc);
    assert_eq!(
        (
            v["claimed_unchanged"].as_u64(),
            v["refetched_bytes"].as_u64(),
            v["refetched_differs"].as_u64()
        ),
        (Some(5), Some(0), Some(1)),
        "{v}"
    );
    let claimed = findings(&doc)
        .into_iter()
        .filter(|f| {
            f.class == Class::Unverifiable && f.actual.as_deref().is_some_and(|a| a.contains("304"))
        })
        .count();
    assert_eq!(claimed, 5, "{doc}");
    let statuses: Vec<u16> = srv
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/res/"))
        .map(|r| r.status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|&&s| s == 304).count(),
        5,
        "{statuses:?}"
    );
    // An audit writes no content.
    assert_eq!(version_count(mirror.path()), 6);
    assert_consistent(mirror.path());
}

#[test]
fn refetch_with_a_sample_covers_the_source_over_m_nights() {
    let (_site, srv, mirror, _) = digestless(30);
    let mut seen = BTreeSet::new();
    for n in 1..=3 {
        srv.clear_requests();
        let sample = format!("{n}/3");
        let (code, doc) = audit_json(mirror.path(), &["--refetch=bytes", "--sample", &sample]);
        assert_eq!(code, 0, "{doc}");
        let paths: Vec<String> = srv
            .requests()
            .into_iter()
            .filter(|r| r.path.starts_with("/res/"))
            .map(|r| r.path)
            .collect();
        // The slices hash the URIs, which carry the server's port: a slice of 30 holds 10 on
        // average, and 3 to 17 failed about one run in 500 (seen once); 1 to 20 fails about
        // one in 100,000 and still catches a sample that refetches all or nothing.
        assert!(
            (1..=20).contains(&paths.len()),
            "about a third: {}",
            paths.len()
        );
        assert_eq!(
            verification(&doc)["refetched_bytes"].as_u64(),
            Some(paths.len() as u64)
        );
        for p in paths {
            assert!(seen.insert(p.clone()), "{p} refetched by two slices");
        }
    }
    assert_eq!(seen.len(), 30, "three nights cover every resource once");
}

// ------------------------------------------------------------------------------------------
// issue 24: a mirror too large for one pass is audited in several

/// A report with what changes from run to run taken out: its run, times and rates.
fn steady(mut doc: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.retain(|k, _| {
                    !matches!(k.as_str(), "run_id" | "started_at" | "mb_per_s")
                        && !k.ends_with("seconds")
                });
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut doc);
    doc
}

/// The same audit in one pass and in passes of `per` resources: the same exit code, the same
/// report (JSON), the same lines with `-v`.
/// The slice `N/m` of `--sample` whose audit (with `args`) has the most findings: which
/// slice a URI falls in is a hash of it, and the test server's port is in every URI.
fn fullest_slice(mirror: &Path, m: u32, args: &[&str]) -> String {
    (1..=m)
        .map(|n| format!("{n}/{m}"))
        .max_by_key(|slice| {
            let mut with = vec!["--sample", slice.as_str()];
            with.extend_from_slice(args);
            findings(&audit_json(mirror, &with).1).len()
        })
        .expect("m > 0")
}

fn same_in_passes(mirror: &Path, args: &[&str], per: &[&str]) {
    let run = |per: Option<&str>, json: bool| {
        let mut c = audit(mirror);
        match per {
            Some(per) => c.env("RSMIRROR_AUDIT_PASS_RESOURCES", per),
            None => c.env_remove("RSMIRROR_AUDIT_PASS_RESOURCES"),
        };
        match json {
            true => c.arg("--json"),
            false => c.arg("-v"),
        };
        let out = c.args(args).output().unwrap();
        let err = stderr_of(&out);
        (out.status.code(), out.stdout, err)
    };
    let (code, json, _) = run(None, true);
    let one: Value = serde_json::from_slice(&json).unwrap();
    let (_, lines, err) = run(None, false);
    assert!(!err.contains("passes"), "{err}");
    assert!(!findings(&one).is_empty(), "{one}");
    let mut several_passes = 0;
    for per in per {
        let (code_n, json_n, _) = run(Some(per), true);
        assert_eq!(code_n, code, "{args:?} in passes of {per}");
        let several: Value = serde_json::from_slice(&json_n).unwrap();
        assert_eq!(
            steady(several),
            steady(one.clone()),
            "{args:?} in passes of {per}"
        );
        let (_, lines_n, err_n) = run(Some(per), false);
        assert_eq!(
            String::from_utf8_lossy(&lines_n),
            String::from_utf8_lossy(&lines),
            "{args:?} in passes of {per}"
        );
        several_passes += usize::from(err_n.contains(" passes ("));
    }
    // Offline, no states are held at any size: there are no passes to speak of.
    assert!(
        several_passes > 0 || args.contains(&"--offline"),
        "{args:?}: never more than one pass"
    );
}

#[test]
fn an_audit_in_passes_reports_exactly_what_one_pass_does() {
    // In sync, changed, missing, extra, corrupt and a stray; against the source, with a
    // sample, offline, at the fixity level.
    let (_v1, srv, mirror, _v2) = eventful();
    // Which slice a URI falls in depends on the server's port: the fullest one is compared.
    let third = fullest_slice(mirror.path(), 3, &[]);
    let half = fullest_slice(mirror.path(), 2, &[]);
    for args in [
        &[][..],
        &["--sample", &third],
        &["--sample", &half],
        &["--offline"],
        &["--level", "fixity"],
    ] {
        same_in_passes(mirror.path(), args, &["1", "2", "3"]);
    }
    // No staging file is left behind by the spilled list.
    let staging = mirror.path().join("staging");
    let left: Vec<_> = std::fs::read_dir(&staging)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    // A deletion recorded (a tombstone is no resource, offline or not).
    let out = rsmirror()
        .args(["baseline", &srv.url("/resourcelist.xml")])
        .args(["--delete", "--force-delete", "--tries", "1", "--mirror"])
        .arg(mirror.path())
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{}",
        stderr_of(&out)
    );
    let (_, doc) = audit_json(mirror.path(), &["--offline"]);
    assert_eq!(doc["summary"]["resources"], 4, "{doc}");
    let half = fullest_slice(mirror.path(), 2, &["--offline"]);
    for args in [&[][..], &["--offline"], &["--sample", &half, "--offline"]] {
        same_in_passes(mirror.path(), args, &["1", "3"]);
    }

    // No digests: `?` for each, then a silent change only --refetch finds.
    let (site, _srv, mirror, _) = digestless(7);
    std::fs::write(site.path().join("res/p03"), b"page 03 v2\n").unwrap();
    same_in_passes(mirror.path(), &[], &["2", "5"]);
    same_in_passes(mirror.path(), &["--refetch=bytes"], &["2", "5"]);

    // URIs listed again: the warnings come in list order whichever pass meets them.
    let (site, _srv, mirror, _) = digestless(8);
    let map = site.path().join("sitemap.xml");
    let xml = std::fs::read_to_string(&map).unwrap();
    let again: String = [5, 1, 6, 0]
        .iter()
        .map(|i| format!("<url><loc>{ORIGIN}/res/p{i:02}</loc></url>\n"))
        .collect();
    std::fs::write(&map, xml.replace("</urlset>", &format!("{again}</urlset>"))).unwrap();
    let (_, doc) = audit_json(mirror.path(), &[]);
    let warned: Vec<&str> = doc["summary"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("listed again"))
        .collect();
    assert_eq!(warned.len(), 4, "{doc}");
    for (w, i) in warned.iter().zip([5, 1, 6, 0]) {
        assert!(
            w.contains(&format!("/res/p{i:02} listed again")),
            "{warned:?}"
        );
    }
    same_in_passes(mirror.path(), &[], &["1", "3"]);

    // More than 256 passes (later passes find their URIs by the slice noted modulo 256), with
    // resources added at the source and a stray.
    let fx = Fixture::generated(300);
    let added = tempfile::tempdir().unwrap();
    generate_source(added.path(), 303, 64);
    fx.srv.set_root(added.path());
    same_in_passes(fx.path(), &[], &["1", "7"]);
}

#[test]
fn a_pass_size_that_is_not_a_number_is_a_usage_error() {
    let (_site, _srv, mirror, _) = digestless(2);
    let out = audit(mirror.path())
        .env("RSMIRROR_AUDIT_PASS_RESOURCES", "lots")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("RSMIRROR_AUDIT_PASS_RESOURCES=lots"),
        "{}",
        stderr_of(&out)
    );
}
