//! Issue 28: sources whose documents would push the sync point into the future or make an
//! incomplete list look complete. Each test fails on the code before the fix.

use crate::server::TestServer;
use crate::support::*;

const T0: &str = "2026-03-01T00:00:00Z";

fn json_of(cmd: &mut assert_cmd::Command, code: i32) -> (serde_json::Value, String) {
    let out = cmd.arg("--json").output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    (serde_json::from_slice(&out.stdout).unwrap(), err)
}

/// r1..r3 listed at `at`, with an (empty) open change list.
fn source(at: &str) -> Tree {
    let t = Tree::new();
    for i in 1..=3 {
        t.put(&format!("r{i}"), format!("r{i} v1\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(at, &["r1", "r2", "r3"]);
    t.change_list("changelist.xml", at, None, &[]);
    t
}

fn now_utc() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

fn second(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Issue 28.1: one future-dated entry in an open Change List must not move the sync point to
/// 2099; the next real change is applied.
#[test]
fn a_future_dated_change_does_not_freeze_the_mirror() {
    let t = source(T0);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    json_of(
        &mut baseline(&srv.url("/capabilitylist.xml"), dir.path()),
        0,
    );

    t.put("r1", b"r1 v2\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[("r1", "updated", "2099-01-01T00:00:00Z")],
    );
    let (s, _) = json_of(&mut incremental(dir.path()), 0);
    assert_eq!(s["updated"], 1, "the change itself is applied: {s}");
    assert_eq!(s["sync_point"], T0, "{s}");
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("changelist.xml: line")
            && warnings.contains("2099-01-01T00:00:00Z")
            && warnings.contains("/res/r1"),
        "the warning names the document, the entry and the date: {warnings}"
    );

    t.put("r2", b"r2 v2\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "updated", "2099-01-01T00:00:00Z"),
            ("r2", "updated", "2026-03-01T05:00:00Z"),
        ],
    );
    let (s, _) = json_of(&mut incremental(dir.path()), 0);
    assert_eq!(s["sync_point"], "2026-03-01T05:00:00Z", "{s}");
    let r2 = format!("{}/res/r2", srv.base());
    assert_eq!(
        current(dir.path())[&r2],
        sha256_file(&t.path().join("res/r2")),
        "the real change after the future-dated one is applied"
    );
}

/// Issue 28.2: a Resource List dated 2099 gives a sync point no later than the baseline; a
/// change made after the baseline is then applied by incremental.
#[test]
fn a_resource_list_dated_in_the_future_gives_a_sync_point_of_now() {
    let t = source("2099-01-01T00:00:00Z");
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    // The sync point is the reading time rounded down to the second.
    let before = now_utc();
    let (s, _) = json_of(
        &mut baseline(&srv.url("/capabilitylist.xml"), dir.path()),
        0,
    );
    let after = now_utc();
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("resourcelist.xml") && warnings.contains("2099-01-01T00:00:00Z"),
        "warned: {warnings}"
    );
    let at: jiff::Timestamp = s["sync_point"].as_str().unwrap().parse().unwrap();
    assert!(
        at >= before
            .checked_sub(jiff::SignedDuration::from_secs(1))
            .unwrap()
            && at <= after,
        "{at} not within the run [{before}, {after}]"
    );
    assert_eq!(
        sync_point(dir.path()).unwrap().0.as_deref(),
        s["sync_point"].as_str()
    );

    std::thread::sleep(std::time::Duration::from_millis(1100));
    t.put("r3", b"r3 v2\n");
    let changed = second(now_utc());
    t.change_list("changelist.xml", T0, None, &[("r3", "updated", &changed)]);
    let (s, _) = json_of(&mut incremental(dir.path()), 0);
    assert_eq!(
        s["updated"], 1,
        "the change after the baseline is applied: {s}"
    );
}

/// Issue 28.3: a Resource List Index that lists only itself leads to no list: an incomplete
/// source, exit 4, nothing deleted even with --delete.
#[test]
fn an_index_that_lists_only_itself_deletes_nothing() {
    let t = source(T0);
    let index = |parts: &[&str]| {
        let body: String = parts
            .iter()
            .map(|p| format!("<sitemap><loc>{ORIGIN}/{p}</loc></sitemap>\n"))
            .collect();
        std::fs::write(
            t.path().join("resourcelist-index.xml"),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
                 xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
                 <rs:md capability=\"resourcelist\" at=\"{T0}\"/>\n{body}</sitemapindex>\n"
            ),
        )
        .unwrap();
    };
    index(&["resourcelist.xml"]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let src = srv.url("/resourcelist-index.xml");
    let (s, _) = json_of(&mut baseline(&src, dir.path()), 0);
    assert_eq!(s["created"], 3, "{s}");

    index(&["resourcelist-index.xml"]);
    let out = baseline(&src, dir.path()).arg("--delete").output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("resourcelist-index.xml") && err.contains("incomplete"),
        "{err}"
    );
    assert!(tombstoned(dir.path()).is_empty());
    assert_eq!(current(dir.path()).len(), 3);
}

/// Issue 28.7: a ResourceSync 1.0 Change List (resync-build's) dates a delete by the lastmod
/// of the deleted state, which lies before the sync point. The delete is applied when the
/// mirror still holds that state, and not when it holds a later one; both are warned about.
#[test]
fn a_1_0_delete_dated_by_the_old_lastmod_is_applied() {
    let t = Tree::new();
    for n in ["r1", "r2", "r3"] {
        t.put(n, format!("{n}\n").as_bytes());
    }
    let write = |file: &str, md: &str, body: &str| {
        std::fs::write(
            t.path().join(file),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
                 xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n{md}\n{body}</urlset>\n"
            ),
        )
        .unwrap();
    };
    let url = |n: &str, lastmod: &str, md: &str| {
        format!("<url><loc>{ORIGIN}/res/{n}</loc><lastmod>{lastmod}</lastmod><rs:md {md}/></url>\n")
    };
    t.capability_list("changelist.xml");
    write(
        "resourcelist.xml",
        &format!("<rs:md capability=\"resourcelist\" at=\"{T0}\"/>"),
        &["r1", "r2", "r3"]
            .map(|n| {
                url(
                    n,
                    "2026-02-01T00:00:00Z",
                    &format!("length=\"{}\"", n.len() + 1),
                )
            })
            .concat(),
    );
    write(
        "changelist.xml",
        &format!("<rs:md capability=\"changelist\" from=\"{T0}\"/>"),
        "",
    );
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    json_of(
        &mut baseline(&srv.url("/capabilitylist.xml"), dir.path()),
        0,
    );

    t.remove("r1");
    write(
        "changelist.xml",
        &format!("<rs:md capability=\"changelist\" from=\"{T0}\"/>"),
        &[
            // The lastmod of the state the mirror holds: that state was deleted.
            url("r1", "2026-02-01T00:00:00Z", "change=\"deleted\""),
            // Older than the state the mirror holds: not this state's delete.
            url("r2", "2026-01-01T00:00:00Z", "change=\"deleted\""),
        ]
        .concat(),
    );
    let (s, _) = json_of(&mut incremental(dir.path()), 0);
    assert_eq!(s["deleted"], 1, "{s}");
    assert_eq!(
        tombstoned(dir.path()),
        vec![format!("{}/res/r1", srv.base())]
    );
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("deleted http://")
            && warnings.contains("/res/r1 dated 2026-02-01T00:00:00Z")
            && warnings.contains("applied"),
        "{warnings}"
    );
    assert!(
        warnings.contains("/res/r2") && warnings.contains("later state"),
        "{warnings}"
    );
    // The next run sees the same list and changes nothing.
    let (s, _) = json_of(&mut incremental(dir.path()), 0);
    assert_eq!(s["deleted"], 0, "{s}");
    assert_eq!(tombstoned(dir.path()).len(), 1);
}

/// A source written by hand: `res/NAME` files and documents with the given `<rs:md>` and body.
fn write_doc(t: &Tree, file: &str, md: &str, body: &str) {
    std::fs::write(
        t.path().join(file),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
             xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n{md}\n{body}</urlset>\n"
        ),
    )
    .unwrap();
}

fn md5_attr(bytes: &[u8]) -> String {
    use md5::Digest as _;
    format!("md5:{}", hex::encode(md5::Md5::digest(bytes)))
}

/// Issue 28.5: an `updated` change whose bytes are identical (a touch) records the new lastmod,
/// as baseline does, and audit calls a lastmod-only difference with an agreeing digest `=`.
#[test]
fn a_touched_resource_settles_and_audits_clean() {
    let t = Tree::new();
    t.put("r1", b"same bytes\n");
    let hash = md5_attr(b"same bytes\n");
    let entry = |lastmod: &str, extra: &str| {
        format!(
            "<url><loc>{ORIGIN}/res/r1</loc><lastmod>{lastmod}</lastmod>\
             <rs:md hash=\"{hash}\" length=\"11\"{extra}/></url>\n"
        )
    };
    t.capability_list("changelist.xml");
    let list = |lastmod: &str| {
        write_doc(
            &t,
            "resourcelist.xml",
            &format!("<rs:md capability=\"resourcelist\" at=\"{T0}\"/>"),
            &entry(lastmod, ""),
        )
    };
    list("2026-02-01T00:00:00Z");
    write_doc(
        &t,
        "changelist.xml",
        &format!("<rs:md capability=\"changelist\" from=\"{T0}\"/>"),
        "",
    );
    let srv = TestServer::start(t.path());
    let (touched, stale) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for dir in [&touched, &stale] {
        json_of(
            &mut baseline(&srv.url("/capabilitylist.xml"), dir.path()),
            0,
        );
    }

    // The source touches r1: a new lastmod, the same bytes.
    write_doc(
        &t,
        "changelist.xml",
        &format!("<rs:md capability=\"changelist\" from=\"{T0}\"/>"),
        &entry(
            "2026-03-01T01:00:00Z",
            " change=\"updated\" datetime=\"2026-03-01T01:00:00Z\"",
        ),
    );
    list("2026-03-01T01:00:00Z");
    let (s, _) = json_of(&mut incremental(touched.path()), 0);
    assert_eq!(
        (s["updated"].as_u64(), s["unchanged"].as_u64()),
        (Some(1), Some(0)),
        "{s}"
    );
    let conn = rusqlite::Connection::open(touched.path().join("catalog.sqlite")).unwrap();
    let lastmod: String = conn
        .query_row(
            "SELECT v.lastmod FROM resources r JOIN versions v ON v.id = r.current_version_id",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(lastmod, "2026-03-01T01:00:00Z");
    assert_eq!(
        version_count(touched.path()),
        2,
        "a new state, the same object"
    );
    assert_consistent(touched.path());

    // Both mirrors audit clean: the touched one has the new lastmod; the other has the old
    // one, but the digest agrees.
    for dir in [&touched, &stale] {
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
    }
    // And the next incremental has nothing to do.
    let (s, _) = json_of(&mut incremental(touched.path()), 0);
    assert_eq!(s["updated"], 0, "{s}");
}

/// Issue 28.10: `--map` read through a symbolic link out of the mapped folder (a link to
/// `/etc` put `/etc/passwd` in the mirror). Links that stay inside are read; one that leaves
/// is refused, naming the link and where it leads.
#[cfg(unix)]
#[test]
fn map_refuses_symbolic_links_that_leave_the_folder() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"not the source's\n").unwrap();
    let site = tempfile::tempdir().unwrap();
    let root = site.path();
    std::fs::create_dir(root.join("res")).unwrap();
    std::fs::write(root.join("res/a"), b"a\n").unwrap();
    std::os::unix::fs::symlink(root.join("res/a"), root.join("res/alias")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), root.join("res/secret")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("res/elsewhere")).unwrap();
    let urls: String = ["a", "alias", "secret", "elsewhere/secret"]
        .iter()
        .map(|n| format!("<url><loc>{ORIGIN}/res/{n}</loc></url>\n"))
        .collect();
    std::fs::write(
        root.join("sitemap.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{urls}</urlset>\n"
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&format!("{ORIGIN}/sitemap.xml"), dir.path())
        .arg("--map")
        .arg(format!("{ORIGIN}/={}", root.display()))
        .arg("--json")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["created"].as_u64(), s["refused"].as_u64()),
        (Some(2), Some(2)),
        "{s}"
    );
    assert!(
        err.contains("symbolic link") && err.contains("outside the folder"),
        "{err}"
    );
    let mirrored: Vec<String> = current(dir.path()).into_keys().collect();
    assert_eq!(
        mirrored,
        [format!("{ORIGIN}/res/a"), format!("{ORIGIN}/res/alias")]
    );
    let secret = sha256_file(&outside.path().join("secret"));
    assert!(!current(dir.path()).values().any(|v| *v == secret));
}

/// Issue 28.11: a `<loc>` with a raw NUL is not XML: the whole document is refused (exit 4,
/// naming the line), nothing is mirrored.
#[test]
fn a_nul_in_a_loc_refuses_the_document() {
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir(site.path().join("res")).unwrap();
    std::fs::write(site.path().join("res/a"), b"a\n").unwrap();
    std::fs::write(
        site.path().join("sitemap.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
             <url><loc>{ORIGIN}/res/a</loc></url>\n\
             <url><loc>{ORIGIN}/res/a\u{0}b</loc></url>\n</urlset>\n"
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&format!("{ORIGIN}/sitemap.xml"), dir.path())
        .arg("--map")
        .arg(format!("{ORIGIN}/={}", site.path().display()))
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("line 4") && err.contains("U+0000"), "{err}");
    assert!(current(dir.path()).is_empty());
}

/// Issue 28.8: a document is capped at the Sitemap protocol's 50 MB once decompressed
/// (`--max-document-size` sets another cap) and a gzip'd one at 200:1: a clean source error
/// (exit 4) naming the document and the option, nothing applied.
#[test]
fn documents_past_the_size_cap_or_inflating_like_a_bomb_are_refused() {
    let t = source(T0);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .args(["--max-document-size", "300"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("300-byte limit (--max-document-size"), "{err}");
    assert!(current(dir.path()).is_empty());

    // 64 MB of whitespace inside a urlset, gzip'd to about 64 KB.
    let mut bomb =
        b"<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"
            .to_vec();
    bomb.resize(bomb.len() + (64 << 20), b' ');
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, &bomb).unwrap();
    std::fs::write(t.path().join("bomb.xml.gz"), gz.finish().unwrap()).unwrap();
    let out = baseline(&srv.url("/bomb.xml.gz"), dir.path())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("bomb.xml.gz") && err.contains("decompression bomb"),
        "{err}"
    );
}

/// Issue 28.6: a plain Sitemap with date-only `<lastmod>`s and no digest (xml-sitemap-writer,
/// many CMSs): a change later the same day looks unchanged by the list. The re-run asks the
/// server with the stored ETag / Last-Modified: the changed file is fetched (same length,
/// new bytes), the others are answered 304 and keep their versions.
#[test]
fn a_same_day_change_under_a_date_only_lastmod_is_found_by_a_conditional_get() {
    let t = Tree::new();
    for n in ["r1", "r2", "r3"] {
        t.put(n, format!("{n} morning\n").as_bytes());
    }
    let urls: String = ["r1", "r2", "r3"]
        .iter()
        .map(|n| format!("<url><loc>{ORIGIN}/res/{n}</loc><lastmod>2026-03-01</lastmod></url>\n"))
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
    let src = srv.url("/sitemap.xml");
    let (s, _) = json_of(&mut baseline(&src, dir.path()), 0);
    assert_eq!(s["created"], 3, "{s}");

    t.put("r1", b"r1 evening\n");
    srv.clear_requests();
    let (s, _) = json_of(&mut baseline(&src, dir.path()), 0);
    assert_eq!(
        (s["updated"].as_u64(), s["unchanged"].as_u64()),
        (Some(1), Some(2)),
        "{s}"
    );
    let r1 = format!("{}/res/r1", srv.base());
    assert_eq!(
        current(dir.path())[&r1],
        sha256_file(&t.path().join("res/r1"))
    );
    let asked: Vec<_> = srv
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/res/"))
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    for r in &asked {
        assert!(r.header("if-none-match").is_some(), "{r:?}");
        let want = if r.path == "/res/r1" { 200 } else { 304 };
        assert_eq!(r.status, want, "{r:?}");
    }
    assert_eq!(version_count(dir.path()), 4);
}

/// Issue 42, 2: under a file-size limit (`ulimit -f`, a container's) a body without a declared
/// length that grows past it fails its resource (EFBIG, one message naming the limit); the
/// process is not killed by SIGXFSZ, the other resources land, and the run is recorded (exit 3).
#[cfg(unix)]
#[test]
fn a_file_size_limit_fails_one_resource_not_the_run() {
    let t = Tree::new();
    t.put("small1", b"small one\n");
    t.put("big", &vec![b'x'; 4 << 20]);
    t.put("small2", b"small two\n");
    let urls: String = ["small1", "big", "small2"]
        .iter()
        .map(|n| format!("<url><loc>{ORIGIN}/res/{n}</loc></url>\n"))
        .collect();
    std::fs::write(
        t.path().join("resourcelist.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
             xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
             <rs:md capability=\"resourcelist\" at=\"{T0}\"/>\n{urls}</urlset>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("rsmirror");
    // 2,048 blocks of 512 bytes (POSIX sh): 1 MiB, past the small ones and the catalog, short
    // of the big one.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 2048 && exec '{}' baseline '{}' --mirror '{}' --json",
            bin.display(),
            srv.url("/resourcelist.xml"),
            dir.path().display()
        ))
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(
        out.status.code(),
        Some(3),
        "not killed by a signal: {:?} {err}",
        out.status
    );
    assert!(
        err.contains("/res/big") && err.contains("file-size limit, ulimit -f"),
        "{err}"
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["created"].as_u64(), s["failed"].as_u64()),
        (Some(2), Some(1)),
        "{s}"
    );
    assert_consistent(dir.path());
    assert!(
        std::fs::read_dir(dir.path().join("staging"))
            .unwrap()
            .next()
            .is_none(),
        "staging left over"
    );
}

/// Issue 42, 3: a Resource List whose `at` is in the future, with lastmods: the sync point is
/// the newest lastmod it lists (no resource changed later than the list was really written),
/// not the reading time, so a resource made between the list's writing and the reading, dated
/// so in the Change List, is fetched by the next incremental.
#[test]
fn a_future_at_gives_the_newest_lastmod_as_sync_point() {
    let t = Tree::new();
    t.put("r1", b"r1\n");
    t.put("r2", b"r2\n");
    t.capability_list("changelist.xml");
    write_doc(
        &t,
        "resourcelist.xml",
        &format!(
            "<rs:ln rel=\"up\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n\
             <rs:md capability=\"resourcelist\" at=\"2099-01-01T00:00:00Z\"/>"
        ),
        &format!(
            "<url><loc>{ORIGIN}/res/r1</loc><lastmod>2026-03-01T01:00:00Z</lastmod></url>\n\
             <url><loc>{ORIGIN}/res/r2</loc><lastmod>2026-03-01T02:00:00Z</lastmod></url>\n"
        ),
    );
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = json_of(
        &mut baseline(&srv.url("/capabilitylist.xml"), dir.path()),
        0,
    );
    assert_eq!(s["sync_point"], "2026-03-01T02:00:00Z", "{s}");
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("2099-01-01T00:00:00Z")
            && warnings.contains("the newest lastmod it lists"),
        "{warnings}"
    );
    // r3 was made after the list was written (03:00), before it was read.
    t.put("r3", b"r3\n");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[("r3", "created", "2026-03-01T03:00:00Z")],
    );
    let (s, _) = json_of(&mut incremental(dir.path()), 0);
    assert_eq!(s["created"], 1, "{s}");
    assert_eq!(current(dir.path()).len(), 3);
}

/// Issue 42, 9: a 2012-draft Sitemap entry with `<expires>` says its resource is gone
/// (ResourceSync 1.1 §13): it is not fetched (a 404 would fail the run), and the mirror's copy
/// is gone from the source, tombstoned by `--delete`.
#[test]
fn an_expired_2012_entry_is_a_deletion_not_a_resource_to_fetch() {
    let t = Tree::new();
    t.put("a", b"a\n");
    t.put("b", b"b\n");
    let list = |b_entry: &str| {
        write_doc(
            &t,
            "resourcelist.xml",
            "<xhtml:meta xmlns:xhtml=\"http://www.w3.org/1999/xhtml\" name=\"DCTERMS.modified\" \
             content=\"2026-03-01T00:00:00Z\"/>",
            &format!(
                "<url><loc>{ORIGIN}/res/a</loc><lastmod>2026-02-01T00:00:00Z</lastmod></url>\n\
                 <url><loc>{ORIGIN}/res/b</loc>{b_entry}</url>\n"
            ),
        )
    };
    list("<lastmod>2026-02-01T00:00:00Z</lastmod>");
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = json_of(&mut baseline(&srv.url("/resourcelist.xml"), dir.path()), 0);
    assert_eq!(s["created"], 2, "{s}");

    // b expires and is gone from the server.
    t.remove("b");
    list("<expires>2026-02-15T00:00:00Z</expires>");
    srv.clear_requests();
    let (s, err) = json_of(&mut baseline(&srv.url("/resourcelist.xml"), dir.path()), 0);
    assert_eq!(
        (s["gone"].as_u64(), s["failed"].as_u64()),
        (Some(1), Some(0)),
        "{s}"
    );
    assert!(err.contains("gone: ") && err.contains("/res/b"), "{err}");
    assert_eq!(srv.count("/res/b"), 0, "an expired entry is not fetched");
    let (s, _) = json_of(
        baseline(&srv.url("/resourcelist.xml"), dir.path())
            .arg("--delete")
            .arg("--force-delete"),
        0,
    );
    assert_eq!(s["deleted"], 1, "{s}");
    assert_eq!(current(dir.path()).len(), 1);
}

/// Issue 42, 10: a touch (same bytes, newer lastmod) on a source that declares no digests:
/// `audit` says `*` lastmod, `audit --refetch=all,bytes` fetches it again and, the bytes being the
/// mirror's, says `=`; a different body stays `*`. The README's cron line (`incremental`
/// re-reads a plain Sitemap) then records the touch, and a plain audit is clean.
#[test]
fn a_touch_without_digests_is_settled_by_refetch_and_by_the_cron_line() {
    let t = Tree::new();
    t.put("a", b"a\n");
    let sitemap = |lastmod: &str| {
        std::fs::write(
            t.path().join("sitemap.xml"),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
                 <url><loc>{ORIGIN}/res/a</loc><lastmod>{lastmod}</lastmod></url>\n</urlset>\n"
            ),
        )
        .unwrap()
    };
    sitemap("2026-01-01T00:00:00Z");
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    json_of(&mut baseline(&srv.url("/sitemap.xml"), dir.path()), 0);
    let audit = |args: &[&str]| {
        rsmirror()
            .arg("audit")
            .args(args)
            .arg("--mirror")
            .arg(dir.path())
            .output()
            .unwrap()
    };
    sitemap("2026-01-05T00:00:00Z");
    assert_eq!(
        audit(&[]).status.code(),
        Some(1),
        "a lastmod alone differs: *"
    );
    // Bytes, not the server's 304 to the stored validators (a claim, kept apart).
    let out = audit(&["--refetch=all,bytes", "-v"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    assert!(stdout_of(&out).starts_with("= "), "{}", stdout_of(&out));
    // Other bytes under the new date: still `*`, the bytes named.
    t.put("a", b"a, changed\n");
    let out = audit(&["--refetch=all,bytes"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout_of(&out).contains("changed sha-256"),
        "{}",
        stdout_of(&out)
    );
    t.put("a", b"a\n");
    // The cron line records the touch; the audit is then clean without a refetch.
    let out = incremental(dir.path())
        .args(["--on-gap", "rebaseline", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = audit(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
}
