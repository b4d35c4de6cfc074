//! Bounded transfers on the HTTP side for what is not a resource (issue 22): a Resource Dump's
//! or a Change Dump's packages (fetched by libcurl like resources) and SCP collection files
//! (fetched by the document agent), against a raw-socket server whose bodies never end, are
//! larger than the bound, trickle, or take too long. Each such file fails with a message
//! naming its URL and the bound, the run ends in bounded time with its documented exit code,
//! nothing from it is stored, and `staging/` is empty afterwards (the disk held at most about
//! the bound while it was fetched: an endless body would otherwise fill it).

use crate::dump::{change_package, hashes, package, AT, NS};
use crate::hostile_http::{ok, Act, Raw};
use crate::support::*;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any run here may take before it is killed (and the test fails): every bound
/// under test cuts its transfer within a few seconds.
const WALL: Duration = Duration::from_secs(30);

const LIMIT: &str = "body larger than the 65536-byte limit";
const SLOW: &str = "under --min-rate 1024 bytes/s for 2 s";
/// The bounds the trickle tests run under: [`SLOW`] and a 4 s `--max-time`, one try.
const CUT_OFF: [&str; 8] = [
    "--min-rate",
    "1K",
    "--timeout",
    "2",
    "--tries",
    "1",
    "--max-time",
    "4",
];

/// A source on the raw server: files by path, and misbehaviours by path, both changeable
/// while it runs.
struct Source {
    raw: Raw,
    files: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    acts: Arc<Mutex<HashMap<String, Vec<Act>>>>,
}

impl Source {
    fn start() -> Source {
        let files: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        let acts: Arc<Mutex<HashMap<String, Vec<Act>>>> = Arc::default();
        let (f, a) = (Arc::clone(&files), Arc::clone(&acts));
        let raw = Raw::start(move |path| {
            if let Some(acts) = a.lock().unwrap().get(path) {
                return acts.clone();
            }
            match f.lock().unwrap().get(path) {
                Some(bytes) => vec![Act::W(ok(bytes))],
                None => vec![Act::W(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
                )],
            }
        });
        Source { raw, files, acts }
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    fn base(&self) -> String {
        self.raw.url("").as_str().trim_end_matches('/').to_string()
    }

    fn url(&self, path: &str) -> String {
        self.raw.url(path).to_string()
    }

    /// Serve `bytes` at `/path` (the placeholder origin in them read as this server's).
    fn put(&self, path: &str, bytes: &[u8]) {
        let bytes = match std::str::from_utf8(bytes) {
            Ok(text) => text.replace(ORIGIN, &self.base()).into_bytes(),
            Err(_) => bytes.to_vec(),
        };
        self.files.lock().unwrap().insert(format!("/{path}"), bytes);
    }

    /// Serve the file `name` of `tree` at `/name`.
    fn put_from(&self, tree: &Tree, name: &str) {
        self.put(name, &std::fs::read(tree.path().join(name)).unwrap());
    }

    /// Answer `/path` with `acts` (None: serve its file again).
    fn misbehave(&self, path: &str, acts: Option<Vec<Act>>) {
        let mut map = self.acts.lock().unwrap();
        match acts {
            Some(a) => map.insert(format!("/{path}"), a),
            None => map.remove(&format!("/{path}")),
        };
    }
}

fn head(h: &str) -> Act {
    Act::W(h.as_bytes().to_vec())
}

/// The misbehaviours past a 64 KiB bound, by name: close-delimited and chunked bodies that
/// never end, and an honest body of 200 KiB (its `Content-Length` says so).
fn too_large() -> Vec<(&'static str, Vec<Act>)> {
    vec![
        (
            "endless-close",
            vec![
                head("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"),
                Act::Endless(vec![b'z'; 65536]),
            ],
        ),
        (
            "endless-chunked",
            vec![
                head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
                Act::Endless(format!("10000\r\n{}\r\n", "z".repeat(65536)).into_bytes()),
            ],
        ),
        ("large", vec![Act::W(ok(&vec![b'z'; 200 * 1024]))]),
    ]
}

/// A body of 1,000 bytes sent a byte every 200 ms (5 bytes a second; 200 s in all).
fn trickle() -> Vec<Act> {
    vec![
        head("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"),
        Act::Trickle(vec![b'z'; 1000], 200),
    ]
}

/// A body of 60,000 bytes in 1,000-byte pieces 100 ms apart: about 10 KB a second, well over
/// `--min-rate`, and 6 s in all.
fn slow_but_steady() -> Vec<Act> {
    let mut acts = vec![head("HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n")];
    for _ in 0..60 {
        acts.push(Act::W(vec![b'z'; 1000]));
        acts.push(Act::Sleep(100));
    }
    acts
}

/// Run `cmd` with the wall-clock bound: (exit code, stderr, how long it took). A run killed
/// at the bound has no exit code.
fn run(mut cmd: assert_cmd::Command) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let out = cmd.timeout(WALL).output().unwrap();
    (out.status.code(), stderr_of(&out), started.elapsed())
}

fn staging_files(mirror: &Path) -> Vec<std::path::PathBuf> {
    walk_files(&mirror.join("staging"))
}

/// A line of stderr that names `url` and says `says`.
fn named(err: &str, url: &str, says: &str) -> bool {
    err.lines().any(|l| l.contains(url) && l.contains(says))
}

/// A source of six resources offering a Resource Dump: `p1.zip` (r1..r3, declared with its
/// length and digests) and the packages `bad` (declared without a length: only `--max-size`
/// bounds them), each answered by its misbehaviour.
fn dump_source(bad: &[(&str, Vec<Act>)]) -> (Source, Tree) {
    let t = Tree::new();
    for i in 1..=6 {
        t.put(&format!("r{i}"), format!("resource {i}\n").as_bytes());
    }
    t.resource_list(AT, &["r1", "r2", "r3", "r4", "r5", "r6"]);
    let src = Source::start();
    for i in 1..=6 {
        src.put_from(&t, &format!("res/r{i}"));
    }
    src.put_from(&t, "resourcelist.xml");
    let p1 = package(&t, &src.base(), &["r1", "r2", "r3"], &[]);
    let mut body = format!(
        "<url><loc>{ORIGIN}/p1.zip</loc><rs:md type=\"application/zip\" length=\"{}\" hash=\"{}\"/></url>\n",
        p1.len(),
        hashes(&p1)
    );
    src.put("p1.zip", &p1);
    for (name, acts) in bad {
        body.push_str(&format!(
            "<url><loc>{ORIGIN}/{name}.zip</loc><rs:md type=\"application/zip\"/></url>\n"
        ));
        src.misbehave(&format!("{name}.zip"), Some(acts.clone()));
    }
    src.put(
        "resourcedump.xml",
        format!("<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"resourcedump\" at=\"{AT}\"/>\n{body}</urlset>\n").as_bytes(),
    );
    src.put(
        "capabilitylist.xml",
        format!(
            "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"capabilitylist\"/>\n\
             <url><loc>{ORIGIN}/resourcelist.xml</loc><rs:md capability=\"resourcelist\"/></url>\n\
             <url><loc>{ORIGIN}/resourcedump.xml</loc><rs:md capability=\"resourcedump\"/></url>\n</urlset>\n"
        )
        .as_bytes(),
    );
    (src, t)
}

/// `baseline --via dump --max-size 64K` against a dump whose other packages never end or are
/// larger than the bound: each fails naming its URL and the bound, the run ends (exit 3: the
/// good package's resources landed), none of their bytes stay in `staging/`, and no sync
/// point is taken from an incomplete dump.
#[test]
fn dump_packages_past_max_size_fail_in_bounded_time_and_disk() {
    let bad = too_large();
    let (src, _t) = dump_source(&bad);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = baseline(&src.url("capabilitylist.xml"), dir.path());
    cmd.args(["--via", "dump", "--max-size", "64K"]);
    let (code, err, took) = run(cmd);
    assert_eq!(code, Some(3), "{err}");
    for (name, _) in &bad {
        let url = src.url(&format!("{name}.zip"));
        assert!(named(&err, &url, LIMIT), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "failed: part of the Resource Dump: package {url}: "
            )),
            "{err}"
        );
    }
    let got = current(dir.path());
    let want: Vec<String> = (1..=3).map(|i| src.url(&format!("res/r{i}"))).collect();
    assert_eq!(got.keys().cloned().collect::<Vec<_>>(), want);
    assert_eq!(sync_point(dir.path()), None, "an incomplete dump: {err}");
    assert_eq!(staging_files(dir.path()), Vec::<std::path::PathBuf>::new());
    assert_consistent(dir.path());
    record_tally(&format!(
        "bounds: {} dump packages past --max-size 64K (endless close-delimited, endless \
         chunked, 200 KiB) failed naming URL and bound, run ended in {:.1} s, staging/ empty",
        bad.len(),
        took.as_secs_f64()
    ));
}

/// A dump package trickled a byte every 200 ms is cut off under `--min-rate 1K` over the
/// `--timeout 2` window; one sent steadily above the rate but for longer than `--max-time 4`
/// (6 s in all) is cut off by that.
#[test]
fn dump_packages_trickled_or_too_slow_are_cut_off() {
    let (src, _t) = dump_source(&[("trickle", trickle()), ("steady", slow_but_steady())]);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = baseline(&src.url("capabilitylist.xml"), dir.path());
    cmd.args(["--via", "dump"]).args(CUT_OFF);
    let (code, err, took) = run(cmd);
    assert_eq!(code, Some(3), "{err}");
    assert!(named(&err, &src.url("trickle.zip"), SLOW), "{err}");
    assert!(
        named(
            &err,
            &src.url("steady.zip"),
            "transfer not complete within --max-time 4 s"
        ),
        "{err}"
    );
    assert_eq!(current(dir.path()).len(), 3, "{err}");
    assert_eq!(staging_files(dir.path()), Vec::<std::path::PathBuf>::new());
    assert_consistent(dir.path());
    record_tally(&format!(
        "bounds: a trickled dump package cut off by --min-rate, a slow one by --max-time; \
         run ended in {:.1} s",
        took.as_secs_f64()
    ));
}

/// `incremental` from a Change Dump whose package never ends, then trickles: each run fails
/// that package naming its URL and the bound (exit 3), applies nothing from it, leaves the
/// sync point and `staging/` as they were; once the package is served as it should be, the
/// next run applies it.
#[test]
fn a_change_dump_package_past_its_bounds_applies_nothing() {
    let t = Tree::new();
    for i in 1..=2 {
        t.put(&format!("r{i}"), format!("resource {i} v1\n").as_bytes());
    }
    t.resource_list(AT, &["r1", "r2"]);
    let src = Source::start();
    for name in ["res/r1", "res/r2", "resourcelist.xml"] {
        src.put_from(&t, name);
    }
    src.put(
        "capabilitylist.xml",
        crate::dump::capability_list("changedump.xml", "changedump").as_bytes(),
    );
    src.put(
        "changedump.xml",
        crate::dump::empty_change_dump().as_bytes(),
    );
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path();
    let mut cmd = baseline(&src.url("capabilitylist.xml"), mirror);
    cmd.args(["--via", "list"]);
    let (code, err, _) = run(cmd);
    assert_eq!(code, Some(0), "{err}");
    let before = current(mirror);
    let point = sync_point(mirror);

    // The package, with no length declared: only --max-size bounds it.
    let v2: &[u8] = b"resource 1 v2\n";
    let pkg = change_package(
        &src.base(),
        &[("r1", "updated", "2026-04-01T01:00:00Z", Some(v2))],
    );
    src.put("cd-1.zip", &pkg);
    src.put(
        "changedump.xml",
        format!(
            "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"changedump\" from=\"{AT}\"/>\n\
             <url><loc>{ORIGIN}/cd-1.zip</loc><rs:md type=\"application/zip\" from=\"{AT}\" until=\"2026-04-01T05:00:00Z\"/></url>\n</urlset>\n"
        )
        .as_bytes(),
    );
    let url = src.url("cd-1.zip");
    let mut tally = Vec::new();
    let cases: Vec<(Vec<Act>, &[&str], &str)> = vec![
        (too_large()[0].1.clone(), &["--max-size", "64K"][..], LIMIT),
        (too_large()[1].1.clone(), &["--max-size", "64K"][..], LIMIT),
        (
            trickle(),
            &["--min-rate", "1K", "--timeout", "2", "--tries", "1"][..],
            SLOW,
        ),
    ];
    for (acts, args, says) in cases {
        src.misbehave("cd-1.zip", Some(acts));
        let mut cmd = incremental(mirror);
        cmd.args(args);
        let (code, err, took) = run(cmd);
        assert_eq!(code, Some(3), "{args:?}: {err}");
        assert!(named(&err, &url, says), "{args:?}: {err}");
        assert!(err.contains("nothing from it applied"), "{err}");
        assert_eq!(current(mirror), before, "{args:?}");
        assert_eq!(version_count(mirror), 2, "{args:?}");
        assert_eq!(sync_point(mirror), point, "{args:?}");
        assert_eq!(staging_files(mirror), Vec::<std::path::PathBuf>::new());
        tally.push(format!("{:.1} s", took.as_secs_f64()));
    }
    src.misbehave("cd-1.zip", None);
    let (code, err, _) = run(incremental(mirror));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(version_count(mirror), 3);
    assert_ne!(current(mirror), before);
    assert_consistent(mirror);
    record_tally(&format!(
        "bounds: a Change Dump package endless (close, chunked) under --max-size 64K and \
         trickled under --min-rate 1K: nothing applied, runs ended in {}",
        tally.join(", ")
    ));
}

const T1: &str = "2026-01-01T00:00:00Z";

/// A plain SCP snapshot of `section` holding one page, without a checksum.
fn scp_snapshot(base: &str, section: &str) -> Vec<u8> {
    format!(
        "{{\"collection\":{{\"id\":\"{section}-snapshot\",\"section\":\"{section}\",\"type\":\"snapshot\",\"generated\":\"{T1}\",\"version\":\"0.1\"}}}}\n\
         {{\"url\":\"{base}/{section}/1\",\"title\":\"Page 1\",\"description\":\"About it\",\"modified\":\"2025-12-01T00:00:00Z\",\"language\":\"en\",\"content\":[{{\"type\":\"text\",\"text\":\"one\"}}]}}"
    )
    .into_bytes()
}

/// An SCP source: a sitemap listing one snapshot per section, `docs` served as it should be,
/// each of `bad` answered by its misbehaviour.
fn scp_source(bad: &[(&str, Vec<Act>)]) -> Source {
    let src = Source::start();
    let base = src.base();
    let mut sections = String::new();
    let mut collections = String::new();
    let docs = scp_snapshot(&base, "docs");
    let all = std::iter::once(("docs", docs.len())).chain(bad.iter().map(|(n, _)| (*n, 1000)));
    for (section, size) in all {
        sections.push_str(&format!(
            "  <scp:section name=\"{section}\" updateFreq=\"daily\" pages=\"~1\"/>\n"
        ));
        collections.push_str(&format!(
            "  <scp:collection section=\"{section}\" type=\"snapshot\" url=\"{base}/{section}.scp\" generated=\"{T1}\" expires=\"2027-01-01T00:00:00Z\" pages=\"1\" size=\"{size}\"/>\n"
        ));
    }
    src.put("docs.scp", &docs);
    for (section, acts) in bad {
        src.misbehave(&format!("{section}.scp"), Some(acts.clone()));
    }
    src.put(
        "sitemap.xml",
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"\n        \
             xmlns:scp=\"https://scp-protocol.org/schemas/sitemap/1.0\">\n  \
             <scp:version>0.1</scp:version>\n  <scp:compression>zstd,gzip</scp:compression>\n\
             {sections}{collections}</urlset>\n"
        )
        .as_bytes(),
    );
    src
}

fn count(mirror: &Path, table: &str) -> i64 {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// SCP collections that never end or are larger than `--max-size 64K` (the SCP limit, 50 GiB,
/// is the bound without it): each is a failed problem naming its URL and the bound, nothing
/// from it is committed, the good section lands (exit 3), `staging/` is empty; alone, such a
/// collection is a source error (exit 4).
#[test]
fn scp_collections_past_max_size_are_refused_in_bounded_time_and_disk() {
    let bad = too_large();
    let src = scp_source(&bad);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = baseline(&src.url("sitemap.xml"), dir.path());
    cmd.args(["--max-size", "64K"]);
    let (code, err, took) = run(cmd);
    assert_eq!(code, Some(3), "{err}");
    for (section, _) in &bad {
        let url = src.url(&format!("{section}.scp"));
        assert!(named(&err, &url, LIMIT), "{section}: {err}");
    }
    let pages: Vec<String> = current(dir.path()).into_keys().collect();
    assert_eq!(pages, [src.url("docs/1")], "{err}");
    assert_eq!(count(dir.path(), "scp_collections"), 1);
    assert_eq!(staging_files(dir.path()), Vec::<std::path::PathBuf>::new());
    assert_consistent(dir.path());

    let alone = tempfile::tempdir().unwrap();
    let mut cmd = baseline(&src.url("sitemap.xml"), alone.path());
    cmd.args(["--max-size", "64K", "--section", "endless-chunked"]);
    let (code, err, _) = run(cmd);
    assert_eq!(code, Some(4), "{err}");
    assert!(named(&err, &src.url("endless-chunked.scp"), LIMIT), "{err}");
    for table in ["resources", "versions", "scp_collections"] {
        assert_eq!(count(alone.path(), table), 0, "{table}");
    }
    assert_eq!(
        staging_files(alone.path()),
        Vec::<std::path::PathBuf>::new()
    );

    // A dry run reads the collections as a stream, nothing staged: the same bound ends it.
    let planned = tempfile::tempdir().unwrap();
    let out = baseline(&src.url("sitemap.xml"), planned.path())
        .args(["--max-size", "64K", "--dry-run"])
        .timeout(WALL)
        .output()
        .unwrap();
    let plan = stdout_of(&out);
    assert_eq!(out.status.code(), Some(3), "{plan}{}", stderr_of(&out));
    for (section, _) in &bad {
        let url = src.url(&format!("{section}.scp"));
        assert!(
            named(
                &plan,
                &format!("! {url} rejected: "),
                "larger than the limit of 65536 bytes"
            ),
            "{section}: {plan}"
        );
    }
    record_tally(&format!(
        "bounds: {} SCP collections past --max-size 64K refused naming URL and bound, \
         nothing committed, run ended in {:.1} s, staging/ empty",
        bad.len(),
        took.as_secs_f64()
    ));
}

/// An SCP collection trickled a byte every 200 ms is cut off under `--min-rate 1K` over the
/// `--timeout 2` window, and one sent steadily above the rate but for longer than
/// `--max-time 4` (6 s in all) is cut off by that; nothing is committed.
#[test]
fn scp_collections_trickled_or_too_slow_are_cut_off() {
    let src = scp_source(&[("trickle", trickle()), ("steady", slow_but_steady())]);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = baseline(&src.url("sitemap.xml"), dir.path());
    cmd.args(CUT_OFF);
    let (code, err, took) = run(cmd);
    assert_eq!(code, Some(3), "{err}");
    assert!(named(&err, &src.url("trickle.scp"), SLOW), "{err}");
    assert!(
        named(
            &err,
            &src.url("steady.scp"),
            "transfer not complete within --max-time 4 s"
        ),
        "{err}"
    );
    let pages: Vec<String> = current(dir.path()).into_keys().collect();
    assert_eq!(pages, [src.url("docs/1")], "{err}");
    assert_eq!(count(dir.path(), "scp_collections"), 1);
    assert_eq!(staging_files(dir.path()), Vec::<std::path::PathBuf>::new());
    record_tally(&format!(
        "bounds: a trickled SCP collection cut off by --min-rate, a slow one by --max-time; \
         run ended in {:.1} s",
        took.as_secs_f64()
    ));
}
