//! ARC sitemaps as a source (issue 8) against a real HTTP server: a site with a sitemap and two
//! delta feeds, one page `auth_required`, one `noarchive`, one whose bytes contradict its
//! `ai_checksum`, baselined, followed and audited; discovery from a site root and robots.txt;
//! `crawl_rate`; and every bad input (invalid JSON, a wrong type for `ai_indexable`, a page
//! outside the site, a delta feed for a day in the future) giving a clear error or finding
//! while nothing already in the mirror changes.
//!
//! Dates are relative to today (UTC): the delta feeds an incremental run reads are those from
//! the sync point's day to today.

use crate::server::{Rule, TestServer};
use crate::support::*;
use jiff::tz::TimeZone;
use jiff::Timestamp;
use rusqlite::Connection;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A site that publishes an ARC sitemap: pages under `/pages/`, the sitemap at
/// `/arc-sitemap.json`, delta feeds under `/arc-sitemap-deltas/`. URLs use the placeholder
/// origin the test server rewrites; page bodies never contain it (their checksums must hold).
pub(crate) struct ArcSite {
    dir: tempfile::TempDir,
}

impl ArcSite {
    pub(crate) fn new() -> ArcSite {
        let s = ArcSite {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(s.path().join("pages")).unwrap();
        std::fs::create_dir_all(s.path().join("arc-sitemap-deltas")).unwrap();
        s
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn put(&self, name: &str, body: &str) {
        std::fs::write(self.path().join("pages").join(name), body).unwrap();
    }

    fn write(&self, rel: &str, doc: &Value) {
        std::fs::write(
            self.path().join(rel),
            serde_json::to_string_pretty(doc).unwrap(),
        )
        .unwrap();
    }

    pub(crate) fn sitemap(&self, generated_at: &str, pages: Vec<Value>) {
        self.write("arc-sitemap.json", &document(generated_at, pages));
    }

    fn delta(&self, day: &str, generated_at: &str, pages: Vec<Value>) {
        self.write(
            &format!("arc-sitemap-deltas/{day}.json"),
            &document(generated_at, pages),
        );
    }
}

fn document(generated_at: &str, pages: Vec<Value>) -> Value {
    json!({
        "arc_sitemap_version": "2.1",
        "site": ORIGIN,
        "generated_at": generated_at,
        "pages": pages,
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A page entry whose checksum is that of `body`.
pub(crate) fn page(name: &str, lastmod: &str, body: &str) -> Value {
    json!({
        "url": format!("{ORIGIN}/pages/{name}"),
        "lastmod": lastmod,
        "ai_indexable": true,
        "ai_checksum": format!("sha256:{}", sha256_hex(body.as_bytes())),
    })
}

/// Today + `offset` days (UTC), `YYYY-MM-DD`.
fn day(offset: i64) -> String {
    let today = Timestamp::now().to_zoned(TimeZone::UTC).date();
    today
        .checked_add(jiff::Span::new().days(offset))
        .unwrap()
        .to_string()
}

/// Today + `offset` days at `time` (UTC), RFC 3339.
pub(crate) fn at(offset: i64, time: &str) -> String {
    format!("{}T{time}Z", day(offset))
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout {:?}", stdout_of(out)))
}

fn problems_by_uri(summary: &Value) -> BTreeMap<String, (String, String)> {
    summary["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["uri"].as_str().unwrap().to_string(),
                (
                    p["class"].as_str().unwrap().to_string(),
                    p["reason"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

/// Everything that says what the mirror holds: current versions, version and event counts,
/// the sync point.
fn snapshot(mirror: &Path) -> (BTreeMap<String, String>, i64, i64, Option<String>) {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let events: i64 = conn
        .query_row("SELECT count(*) FROM change_events", [], |r| r.get(0))
        .unwrap();
    let sp: Option<String> = conn
        .query_row("SELECT at FROM sync_points", [], |r| r.get(0))
        .ok();
    (current(mirror), version_count(mirror), events, sp)
}

/// The library's ARC audit of the mirror against the sitemap at `sitemap`: (mark, uri, class).
fn arc_audit(sitemap: &str, mirror: &Path) -> Vec<(char, String, String)> {
    let http = rsmirror::net::Http::new(rsmirror::net::HttpConfig::default());
    let docs = rsmirror::Documents {
        http: &http,
        options: Default::default(),
        allow_hosts: &[],
        filter: &Default::default(),
        reader: &Default::default(),
        readers: &[],
    };
    let catalog = rsmirror::store::Catalog::open_read_only(mirror)
        .unwrap()
        .unwrap();
    let url = url::Url::parse(sitemap).unwrap();
    let a = rsmirror::formats::arc::mirror::audit(&docs, &catalog, &url).unwrap();
    a.findings
        .iter()
        .map(|f| {
            (
                f.mark(),
                f.uri.clone().unwrap_or_default(),
                f.class.name().to_string(),
            )
        })
        .collect()
}

/// (uri, ai_indexable, ai_summary, ai_tags_json, ai_snapshot_json, arrived_via)
type Kept = (
    String,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
);

/// The acceptance site: p1, p2 fine; p3 `auth_required`; p4's bytes contradict its checksum;
/// p5 `noarchive`. Generated two days ago.
fn acceptance_site() -> ArcSite {
    let s = ArcSite::new();
    s.put("p1.html", "<html>page one, first version</html>\n");
    s.put("p2.html", "<html>page two</html>\n");
    s.put("p3.html", "<html>members only</html>\n");
    s.put("p4.html", "<html>page four as served</html>\n");
    s.put("p5.html", "<html>do not archive me</html>\n");
    s.sitemap(&at(-2, "08:00:00"), initial_pages());
    s
}

fn initial_pages() -> Vec<Value> {
    let t = at(-2, "07:00:00");
    let mut p1 = page("p1.html", &t, "<html>page one, first version</html>\n");
    p1["ai_summary"] = json!("The first page.");
    p1["ai_tags"] = json!(["first", "example"]);
    p1["ai_snapshot"] = json!({"page": "p1", "title": "One", "sections": []});
    p1["crawl_priority"] = json!(0.8);
    let mut p2 = page("p2.html", &t, "<html>page two</html>\n");
    p2["ai_indexable"] = json!(false);
    let mut p3 = page("p3.html", &t, "<html>members only</html>\n");
    p3["auth_required"] = json!(true);
    let p4 = page("p4.html", &t, "<html>page four as published</html>\n");
    let mut p5 = page("p5.html", &t, "<html>do not archive me</html>\n");
    p5["robots_directive"] = json!("noindex, noarchive");
    vec![p1, p2, p3, p4, p5]
}

#[test]
#[cfg_attr(
    missing = "bagit",
    ignore = "bagit-python (bagit.py) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_site_is_baselined_followed_and_audited() {
    let s = acceptance_site();
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path();
    let base = srv.base();
    let sitemap = srv.url("/arc-sitemap.json");

    // Baseline: p4 fails its checksum (exit 3), p3 and p5 are skipped and never requested.
    let out = baseline(&sitemap, mirror).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr_of(&out));
    let summary = json_of(&out);
    assert_eq!(summary["created"], 2);
    assert_eq!(summary["failed"], 1);
    assert_eq!(summary["refused"], 0);
    assert_eq!(summary["listed"], 5);
    let problems = problems_by_uri(&summary);
    let (class, reason) = &problems[&format!("{base}/pages/p4.html")];
    assert_eq!(class, "failed");
    assert!(reason.contains("sha-256 mismatch"), "{reason}");
    let (class, reason) = &problems[&format!("{base}/pages/p3.html")];
    assert_eq!(class, "skipped");
    assert!(reason.contains("auth_required"), "{reason}");
    let (class, reason) = &problems[&format!("{base}/pages/p5.html")];
    assert_eq!(class, "skipped");
    assert!(reason.contains("noarchive"), "{reason}");
    assert!(stderr_of(&out).contains("failed: "));
    assert_eq!(
        srv.count("/pages/p3.html"),
        0,
        "auth_required is never fetched"
    );
    assert_eq!(srv.count("/pages/p5.html"), 0, "noarchive is never fetched");
    assert_mirror_is(
        mirror,
        &base,
        &s.path().join("pages").join(".."),
        &["/pages/p1.html", "/pages/p2.html"],
    );
    assert_eq!(summary["sync_point"], at(-2, "08:00:00"));
    // Read and exported like any other format (issue 20, 21): each page's versions name the
    // ARC sitemap, and a bag of the mirror holds both pages and validates.
    let out = rsmirror()
        .args([
            "log",
            &format!("{base}/pages/p1.html"),
            "--json",
            "--mirror",
        ])
        .arg(mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(log["versions"][0]["arrived_via"], "arc");
    assert_eq!(log["versions"][0]["document"], sitemap);
    // Beside the mirror (its folder is `dir` itself), never inside it.
    let exports = tempfile::tempdir().unwrap();
    let bag = exports.path().join("bag");
    let out = rsmirror()
        .args(["export", "bagit"])
        .arg(&bag)
        .arg("--mirror")
        .arg(mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let host = base.trim_start_matches("http://");
    for p in ["p1.html", "p2.html"] {
        assert_eq!(
            std::fs::read(bag.join("data").join(host).join("pages").join(p)).unwrap(),
            std::fs::read(s.path().join("pages").join(p)).unwrap()
        );
    }
    {
        let bagit = crate::export::validator("bagit.py");
        let v = std::process::Command::new(bagit)
            .arg("--validate")
            .arg(&bag)
            .output()
            .unwrap();
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    }
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let kind: String = conn
        .query_row("SELECT kind FROM sources", [], |r| r.get(0))
        .unwrap();
    assert_eq!(kind, "arc");
    // What the sitemap said is kept with each version; ai_indexable recorded, not enforced.
    let kept: Vec<Kept> = conn
        .prepare(
            "SELECT r.uri, a.ai_indexable, a.ai_summary, a.ai_tags_json, a.ai_snapshot_json, v.arrived_via
             FROM arc_versions a JOIN versions v ON v.id = a.version_id JOIN resources r ON r.id = v.resource_id
             ORDER BY r.uri",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[0].0, format!("{base}/pages/p1.html"));
    assert_eq!(kept[0].1, 1);
    assert_eq!(kept[0].2.as_deref(), Some("The first page."));
    assert_eq!(kept[0].3.as_deref(), Some(r#"["first","example"]"#));
    let snap: Value = serde_json::from_str(kept[0].4.as_deref().unwrap()).unwrap();
    assert_eq!(snap["title"], "One");
    assert_eq!(kept[0].5, "arc");
    assert_eq!(
        kept[1].1, 0,
        "p2 is not ai_indexable, and mirrored all the same"
    );

    // The site changes: yesterday's delta updates p1 and creates p6; today's deletes p2.
    s.put("p1.html", "<html>page one, second version</html>\n");
    s.put("p6.html", "<html>page six, new</html>\n");
    s.delta(
        &day(-1),
        &at(-1, "12:00:00"),
        vec![
            page(
                "p1.html",
                &at(-1, "10:00:00"),
                "<html>page one, second version</html>\n",
            ),
            page(
                "p6.html",
                &at(-1, "11:00:00"),
                "<html>page six, new</html>\n",
            ),
        ],
    );
    s.delta(
        &day(0),
        &at(0, "00:00:00"),
        vec![
            json!({"url": format!("{ORIGIN}/pages/p2.html"), "lastmod": at(0, "00:00:00"),
                    "ai_indexable": false, "deleted": true}),
        ],
    );
    let mut now_pages = initial_pages();
    now_pages.retain(|p| !p["url"].as_str().unwrap().ends_with("/p2.html"));
    now_pages[0] = page(
        "p1.html",
        &at(-1, "10:00:00"),
        "<html>page one, second version</html>\n",
    );
    now_pages.push(page(
        "p6.html",
        &at(-1, "11:00:00"),
        "<html>page six, new</html>\n",
    ));
    s.sitemap(&at(0, "00:00:00"), now_pages);
    srv.clear_requests();

    let out = incremental(mirror).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    let summary = json_of(&out);
    assert_eq!(
        (
            &summary["created"],
            &summary["updated"],
            &summary["deleted"]
        ),
        (&json!(1), &json!(1), &json!(1)),
        "{summary:#}"
    );
    assert_eq!(summary["sync_point"], at(0, "00:00:00"));
    // The days from the sync point's to today: one request each.
    for d in [-2, -1, 0] {
        assert_eq!(
            srv.count(&format!("/arc-sitemap-deltas/{}.json", day(d))),
            1
        );
    }
    assert_mirror_is(
        mirror,
        &base,
        s.path(),
        &["/pages/p1.html", "/pages/p6.html"],
    );
    assert_eq!(tombstoned(mirror), vec![format!("{base}/pages/p2.html")]);
    let events: Vec<(String, String, String)> = conn
        .prepare(
            "SELECT uri, change, event_time FROM change_events WHERE outcome = 'applied' ORDER BY event_time",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        events,
        vec![
            (
                format!("{base}/pages/p1.html"),
                "updated".into(),
                at(-1, "10:00:00")
            ),
            (
                format!("{base}/pages/p6.html"),
                "created".into(),
                at(-1, "11:00:00")
            ),
            (
                format!("{base}/pages/p2.html"),
                "deleted".into(),
                at(0, "00:00:00")
            ),
        ]
    );
    let listed_by: String = conn
        .query_row(
            "SELECT a.document_url FROM arc_versions a JOIN versions v ON v.id = a.version_id
             JOIN resources r ON r.id = v.resource_id WHERE r.uri = ?1 ORDER BY v.id DESC LIMIT 1",
            [format!("{base}/pages/p1.html")],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        listed_by,
        srv.url(&format!("/arc-sitemap-deltas/{}.json", day(-1)))
    );

    // Followed again with nothing new: a 304 for the sitemap, today's feed only, no change.
    srv.clear_requests();
    let before = snapshot(mirror);
    let out = incremental(mirror).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    let summary = json_of(&out);
    assert_eq!(
        (
            &summary["created"],
            &summary["updated"],
            &summary["deleted"]
        ),
        (&json!(0), &json!(0), &json!(0))
    );
    let paths: Vec<(String, u16)> = srv
        .requests()
        .iter()
        .map(|r| (r.path.clone(), r.status))
        .collect();
    assert_eq!(
        paths,
        vec![
            ("/arc-sitemap.json".to_string(), 304),
            (format!("/arc-sitemap-deltas/{}.json", day(0)), 200),
        ]
    );
    let after = snapshot(mirror);
    assert_eq!((&before.0, before.1), (&after.0, after.1));

    // Audited against the current sitemap: p1 and p6 in sync, p4 missing (its bytes never
    // matched); the skipped pages are neither missing nor extra; p2 is gone on both sides.
    let found = arc_audit(&sitemap, mirror);
    assert_eq!(
        found,
        vec![
            ('=', format!("{base}/pages/p1.html"), "in-sync".into()),
            ('+', format!("{base}/pages/p4.html"), "missing".into()),
            ('=', format!("{base}/pages/p6.html"), "in-sync".into()),
        ]
    );
    let differences = found.iter().filter(|(m, _, _)| *m != '=').count();
    assert_eq!(differences, 1, "the audit exits 1");

    // The feed of the ARC collection: one entry, identified by the site.
    let out = rsmirror()
        .args(["feed", "--mirror"])
        .arg(mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    let atom = stdout_of(&out);
    assert!(atom.contains(&format!("<id>{base}/</id>")), "{atom}");
    assert_eq!(atom.matches("<entry>").count(), 1);
    assert!(atom.contains(&format!("<updated>{}</updated>", at(0, "00:00:00"))));
    assert_consistent(mirror);
}

/// The acceptance audit through the command line: `rsmirror audit` hands ARC collections to
/// `arc_mirror::expected_state`.
#[test]
fn the_audit_command_reports_the_arc_findings() {
    let s = acceptance_site();
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr_of(&out));
    let out = rsmirror()
        .args(["audit", "--mirror"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr_of(&out));
    let lines = stdout_of(&out);
    assert!(
        lines.contains(&format!("+ {}/pages/p4.html", srv.base())),
        "{lines}"
    );
    assert!(
        !lines.contains("p3.html") && !lines.contains("p5.html"),
        "{lines}"
    );
}

#[test]
fn found_from_the_site_root_and_from_robots_txt() {
    let s = ArcSite::new();
    s.put("a.html", "<html>a</html>\n");
    s.sitemap(
        &at(-1, "00:00:00"),
        vec![page("a.html", &at(-1, "00:00:00"), "<html>a</html>\n")],
    );
    let srv = TestServer::start(s.path());
    // No /.well-known/resourcesync, no robots.txt: /.well-known/arc-sitemap.json, then
    // /arc-sitemap.json.
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/"), dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    assert_mirror_is(dir.path(), &srv.base(), s.path(), &["/pages/a.html"]);
    // A second baseline compares lastmod and checksum and fetches nothing.
    srv.clear_requests();
    let out = baseline(&srv.url("/"), dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    assert_eq!(srv.count("/pages/a.html"), 0);
    assert_eq!(version_count(dir.path()), 1);
    // The mirror remembers the site root; incremental finds the sitemap from its records.
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));

    // robots.txt naming a JSON sitemap somewhere else.
    std::fs::create_dir_all(s.path().join("maps")).unwrap();
    std::fs::rename(
        s.path().join("arc-sitemap.json"),
        s.path().join("maps/site.json"),
    )
    .unwrap();
    std::fs::write(
        s.path().join("robots.txt"),
        format!("User-agent: *\nSitemap: {ORIGIN}/maps/site.json\n"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/"), dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    assert_mirror_is(dir.path(), &srv.base(), s.path(), &["/pages/a.html"]);
    let conn = Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    let collection: String = conn
        .query_row("SELECT collection FROM sync_points", [], |r| r.get(0))
        .unwrap();
    assert_eq!(collection, srv.url("/maps/site.json"));
}

#[test]
fn crawl_rate_paces_requests_unless_delay_is_given() {
    let s = ArcSite::new();
    let mut pages = Vec::new();
    for i in 0..4 {
        let body = format!("<html>page {i}</html>\n");
        s.put(&format!("{i}.html"), &body);
        pages.push(page(&format!("{i}.html"), &at(-1, "00:00:00"), &body));
    }
    let mut doc = document(&at(-1, "00:00:00"), pages);
    doc["crawl_rate"] = json!("4/s");
    s.write("arc-sitemap.json", &doc);
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    let requests = srv.requests();
    let first = requests[0].at;
    let starts: Vec<f64> = (requests.iter())
        .filter(|r| r.path.starts_with("/pages/"))
        .map(|r| (r.at - first).as_secs_f64())
        .collect();
    assert_eq!(starts.len(), 4);
    // 4/s: a request every 250 ms.
    assert_paced(&starts, 0.25);
}

/// Issue 28.9: `"crawl_rate": "0.000001/d"` asked for a pause of 2,740 years between requests
/// and got 60 s each (days for a real site): the pause is clamped to 2 s, with a warning.
#[test]
fn a_vanishing_crawl_rate_is_clamped_and_said() {
    let s = ArcSite::new();
    let mut pages = Vec::new();
    for i in 0..2 {
        let body = format!("<html>page {i}</html>\n");
        s.put(&format!("{i}.html"), &body);
        pages.push(page(&format!("{i}.html"), &at(-1, "00:00:00"), &body));
    }
    let mut doc = document(&at(-1, "00:00:00"), pages);
    doc["crawl_rate"] = json!("0.000001/d");
    s.write("arc-sitemap.json", &doc);
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .arg("--json")
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["created"], 2, "{summary}");
    let warnings = summary["warnings"].to_string();
    assert!(
        warnings.contains("crawl_rate asks for") && warnings.contains("using 2 s"),
        "{warnings}"
    );
    let mut times: Vec<_> = srv
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/pages/"))
        .map(|r| r.at)
        .collect();
    times.sort();
    let gap = times[1] - times[0];
    assert!(
        gap >= std::time::Duration::from_millis(1900),
        "still paced: {gap:?}"
    );
}

/// A mirror baselined from a good site, for the bad-input tests: (site, server, mirror).
fn good_mirror() -> (ArcSite, TestServer, tempfile::TempDir) {
    let s = ArcSite::new();
    s.put("a.html", "<html>a</html>\n");
    s.put("b.html", "<html>b</html>\n");
    s.sitemap(
        &at(-1, "00:00:00"),
        vec![
            page("a.html", &at(-1, "00:00:00"), "<html>a</html>\n"),
            page("b.html", &at(-1, "00:00:00"), "<html>b</html>\n"),
        ],
    );
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    (s, srv, dir)
}

/// Today's delta feed of [`good_mirror`]'s site: a.html changed, c.html new, b.html deleted.
fn changes_today(s: &ArcSite) {
    s.put("a.html", "<html>a, changed</html>\n");
    s.put("c.html", "<html>c</html>\n");
    let mut gone = page("b.html", &at(0, "00:00:02"), "");
    gone["deleted"] = json!(true);
    s.delta(
        &day(0),
        &at(0, "00:00:03"),
        vec![
            page("a.html", &at(0, "00:00:01"), "<html>a, changed</html>\n"),
            page("c.html", &at(0, "00:00:01"), "<html>c</html>\n"),
            gone,
        ],
    );
}

/// Run `cmd`, expect `code` and `message` on stderr, and a mirror unchanged by it.
fn fails_and_changes_nothing(
    mirror: &Path,
    cmd: &mut assert_cmd::Command,
    code: i32,
    message: &str,
) {
    let before = snapshot(mirror);
    let out = cmd.output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert!(
        stderr.contains(message),
        "{message:?} not in stderr: {stderr}"
    );
    assert_eq!(snapshot(mirror), before);
    assert_consistent(mirror);
}

#[test]
fn invalid_json_is_an_error_naming_line_and_column() {
    let (s, srv, dir) = good_mirror();
    std::fs::write(
        s.path().join("arc-sitemap.json"),
        "{\n  \"arc_sitemap_version\": \"2.1\",\n  \"pages\": [\n    {\"url\": \"x\",}\n  ]\n}\n",
    )
    .unwrap();
    let sitemap = srv.url("/arc-sitemap.json");
    fails_and_changes_nothing(
        dir.path(),
        &mut baseline(&sitemap, dir.path()),
        4,
        "not a valid ARC sitemap: invalid JSON at line 4, column 17: trailing comma",
    );
    fails_and_changes_nothing(
        dir.path(),
        &mut incremental(dir.path()),
        4,
        "invalid JSON at line 4",
    );
}

#[test]
fn a_wrong_type_for_ai_indexable_is_an_error_naming_the_page() {
    let (s, srv, dir) = good_mirror();
    s.put("a.html", "<html>a, changed</html>\n");
    let mut bad = page("b.html", &at(0, "00:00:00"), "<html>b</html>\n");
    bad["ai_indexable"] = json!("yes");
    s.sitemap(
        &at(0, "00:00:00"),
        vec![
            page("a.html", &at(0, "00:00:00"), "<html>a, changed</html>\n"),
            bad,
        ],
    );
    fails_and_changes_nothing(
        dir.path(),
        &mut baseline(&srv.url("/arc-sitemap.json"), dir.path()),
        4,
        &format!(
            "pages[1].ai_indexable: expected a boolean (required), got a string (\"yes\") (page {}/pages/b.html)",
            srv.base()
        ),
    );
    assert_eq!(
        srv.count("/pages/a.html"),
        1,
        "nothing fetched after the bad sitemap"
    );
    // The same page in a delta feed.
    let mut bad = page("a.html", &at(0, "00:00:00"), "<html>a, changed</html>\n");
    bad["ai_indexable"] = json!(1);
    s.delta(&day(0), &at(0, "00:00:00"), vec![bad]);
    s.sitemap(
        &at(-1, "00:00:00"),
        vec![
            page("a.html", &at(-1, "00:00:00"), "<html>a</html>\n"),
            page("b.html", &at(-1, "00:00:00"), "<html>b</html>\n"),
        ],
    );
    fails_and_changes_nothing(
        dir.path(),
        &mut incremental(dir.path()),
        4,
        "not a valid ARC delta feed: pages[0].ai_indexable: expected a boolean (required), got a number (1)",
    );
}

#[test]
fn a_page_outside_the_site_is_refused() {
    let s = ArcSite::new();
    s.put("a.html", "<html>a</html>\n");
    s.sitemap(
        &at(-1, "00:00:00"),
        vec![
            page("a.html", &at(-1, "00:00:00"), "<html>a</html>\n"),
            json!({"url": "http://elsewhere.example.net/steal", "ai_indexable": true}),
            json!({"url": "file:///etc/passwd", "ai_indexable": true}),
        ],
    );
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr_of(&out));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("refused: http://elsewhere.example.net/steal: outside the site: host elsewhere.example.net is outside the source's scope"),
        "{stderr}"
    );
    assert!(
        stderr.contains("refused: file:///etc/passwd: outside the site: scheme file:"),
        "{stderr}"
    );
    let summary = json_of(&out);
    assert_eq!(summary["refused"], 2);
    assert_eq!(summary["created"], 1);
    assert_mirror_is(dir.path(), &srv.base(), s.path(), &["/pages/a.html"]);

    // In a delta feed: refused, the rest applied; the mirror holds nothing from elsewhere.
    s.put("b.html", "<html>b</html>\n");
    s.delta(
        &day(0),
        &at(0, "00:00:00"),
        vec![
            json!({"url": "http://elsewhere.example.net/more", "ai_indexable": true, "lastmod": at(0, "00:00:00")}),
            page("b.html", &at(0, "00:00:00"), "<html>b</html>\n"),
        ],
    );
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr_of(&out));
    assert!(stderr_of(&out).contains("refused: http://elsewhere.example.net/more"));
    assert_mirror_is(
        dir.path(),
        &srv.base(),
        s.path(),
        &["/pages/a.html", "/pages/b.html"],
    );
}

#[test]
fn a_delta_feed_for_a_day_in_the_future_is_an_error() {
    let (s, srv, dir) = good_mirror();
    // The sitemap names its feeds: one of them is dated the day after tomorrow.
    s.put("a.html", "<html>a, changed</html>\n");
    s.delta(
        &day(0),
        &at(0, "00:00:00"),
        vec![page(
            "a.html",
            &at(0, "00:00:00"),
            "<html>a, changed</html>\n",
        )],
    );
    s.delta(&day(2), &at(0, "00:00:00"), vec![]);
    let mut doc = document(
        &at(-1, "00:00:00"),
        vec![
            page("a.html", &at(-1, "00:00:00"), "<html>a</html>\n"),
            page("b.html", &at(-1, "00:00:00"), "<html>b</html>\n"),
        ],
    );
    doc["delta_feeds"] = json!([
        format!("{ORIGIN}/arc-sitemap-deltas/{}.json", day(0)),
        format!("{ORIGIN}/arc-sitemap-deltas/{}.json", day(2)),
    ]);
    s.write("arc-sitemap.json", &doc);
    fails_and_changes_nothing(
        dir.path(),
        &mut incremental(dir.path()),
        4,
        &format!(
            "a delta feed for {}, a day in the future (today is {} UTC); nothing applied",
            day(2),
            day(0)
        ),
    );
    assert_eq!(
        srv.count("/pages/a.html"),
        1,
        "only the baseline fetched it"
    );

    // A feed generated in the future, whatever its name, is refused the same way.
    let mut doc = document(&at(-1, "00:00:00"), vec![]);
    doc["delta_feeds"] = json!([format!("{ORIGIN}/arc-sitemap-deltas/latest.json")]);
    s.write("arc-sitemap.json", &doc);
    s.write(
        "arc-sitemap-deltas/latest.json",
        &document(
            &at(3, "00:00:00"),
            vec![page(
                "a.html",
                &at(0, "00:00:00"),
                "<html>a, changed</html>\n",
            )],
        ),
    );
    fails_and_changes_nothing(
        dir.path(),
        &mut incremental(dir.path()),
        4,
        "a delta feed generated in the future",
    );

    // Once the site names sane feeds again, the change lands.
    doc["delta_feeds"] = json!([format!("{ORIGIN}/arc-sitemap-deltas/{}.json", day(0))]);
    s.write("arc-sitemap.json", &doc);
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    assert_mirror_is(
        dir.path(),
        &srv.base(),
        s.path(),
        &["/pages/a.html", "/pages/b.html"],
    );
}

#[test]
fn a_delta_feed_outside_the_site_is_refused_and_a_failed_page_is_retried() {
    let (s, srv, dir) = good_mirror();
    let mut doc = document(&at(-1, "00:00:00"), vec![]);
    doc["delta_feeds"] = json!(["http://elsewhere.example.net/arc-sitemap-deltas/x.json"]);
    s.write("arc-sitemap.json", &doc);
    fails_and_changes_nothing(
        dir.path(),
        &mut incremental(dir.path()),
        4,
        "a delta feed outside the site, refused",
    );

    // A delta whose page does not match its checksum: failed (exit 3), the sync point stays
    // before it, and the next run retries it.
    let doc = document(&at(-1, "00:00:00"), vec![]);
    s.write("arc-sitemap.json", &doc);
    s.put("c.html", "<html>c as served</html>\n");
    s.delta(
        &day(0),
        &at(0, "00:00:00"),
        vec![page(
            "c.html",
            &at(0, "00:00:00"),
            "<html>c as published</html>\n",
        )],
    );
    let out = incremental(dir.path()).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr_of(&out));
    let summary = json_of(&out);
    assert_eq!(summary["failed"], 1);
    assert!(summary["sync_point"].as_str().unwrap() < at(0, "00:00:00").as_str());
    s.put("c.html", "<html>c as published</html>\n");
    let out = incremental(dir.path()).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    assert_eq!(json_of(&out)["created"], 1);
    assert_mirror_is(
        dir.path(),
        &srv.base(),
        s.path(),
        &["/pages/a.html", "/pages/b.html", "/pages/c.html"],
    );
}

#[test]
fn a_stalled_or_missing_sitemap_is_a_source_error() {
    let (_s, srv, dir) = good_mirror();
    srv.set_rule("/arc-sitemap.json", Rule::Status(404));
    fails_and_changes_nothing(dir.path(), &mut incremental(dir.path()), 4, "HTTP 404");
}

/// A sync point older than the daily delta feeds an incremental run reads one by one (93 days)
/// is a gap in the change history, a condition of the source and the mirror (exit 4, like a
/// ResourceSync gap; `--on-gap rebaseline` applies), not a usage error (exit 2).
#[test]
fn a_sync_point_too_old_for_the_daily_feeds_is_a_gap() {
    let (_s, srv, dir) = good_mirror();
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    let old = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24 * 200);
    let n = conn
        .execute("UPDATE sync_points SET at = ?1", [old.to_string()])
        .unwrap();
    assert_eq!(n, 1);
    drop(conn);
    fails_and_changes_nothing(
        dir.path(),
        &mut incremental(dir.path()),
        4,
        "gap in the change history",
    );
    let out = incremental(dir.path()).output().unwrap();
    assert!(
        stderr_of(&out).contains("more than 93 days of daily delta feeds are not read one by one"),
        "{}",
        stderr_of(&out)
    );
    // --on-gap rebaseline takes the sitemap again: the mirror is current, and said so.
    let out = incremental(dir.path())
        .args(["--on-gap", "rebaseline"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    let at: String = conn
        .query_row("SELECT at FROM sync_points", [], |r| r.get(0))
        .unwrap();
    assert!(at.parse::<jiff::Timestamp>().unwrap() > old, "{at}");
    assert!(srv.count("/arc-sitemap.json") >= 3);
}

/// `baseline --dry-run` of an ARC sitemap (refused before issue 19): the sitemap read, every
/// page decided against the mirror as a baseline would, the plan printed with the shared marks;
/// no page fetched, nothing written.
#[test]
fn a_dry_run_prints_the_plan_without_fetching_a_page() {
    let (s, srv, dir) = good_mirror();
    s.put("a.html", "<html>a, changed</html>\n");
    s.put("c.html", "<html>c</html>\n");
    s.sitemap(
        &at(0, "00:00:00"),
        vec![
            page("a.html", &at(0, "00:00:00"), "<html>a, changed</html>\n"),
            page("c.html", &at(0, "00:00:00"), "<html>c</html>\n"),
        ],
    );
    let before = snapshot(dir.path());
    srv.clear_requests();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .args(["--dry-run", "--delete"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let base = srv.base();
    let mut plan: Vec<String> = stdout_of(&out)
        .lines()
        .map(|l| l.replace(&base, ""))
        .collect();
    plan.sort();
    assert_eq!(plan.len(), 3, "{plan:?}");
    assert!(plan[0].starts_with("* /pages/a.html ("), "{plan:?}");
    assert_eq!(plan[1], "+ /pages/c.html");
    assert_eq!(plan[2], "- /pages/b.html (would be deleted)");
    assert_eq!(snapshot(dir.path()), before, "a dry run writes nothing");
    assert_eq!(srv.count("/pages/a.html") + srv.count("/pages/c.html"), 0);
}

/// `incremental --dry-run` of an ARC source: the delta feeds since the sync point read, each
/// change printed with what it would do; no page fetched, nothing written; the run after it
/// does what the plan said.
#[test]
fn an_incremental_dry_run_plans_the_delta_feeds() {
    let (s, srv, dir) = good_mirror();
    changes_today(&s);
    let before = snapshot(dir.path());
    srv.clear_requests();
    let out = incremental(dir.path()).arg("--dry-run").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let base = srv.base();
    let plan: Vec<String> = stdout_of(&out)
        .lines()
        .map(|l| l.replace(&base, ""))
        .collect();
    assert_eq!(plan.len(), 3, "{plan:?}");
    assert!(
        plan[0].starts_with("* /pages/a.html (lastmod: "),
        "{plan:?}"
    );
    assert_eq!(plan[1], "+ /pages/c.html");
    assert_eq!(plan[2], "- /pages/b.html (would be deleted)");
    assert_eq!(snapshot(dir.path()), before, "a dry run writes nothing");
    assert_eq!(srv.count("/pages/a.html") + srv.count("/pages/c.html"), 0);
    let out = incremental(dir.path()).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let summary = json_of(&out);
    assert_eq!(
        (
            summary["created"].as_u64(),
            summary["updated"].as_u64(),
            summary["deleted"].as_u64()
        ),
        (Some(1), Some(1), Some(1)),
        "{summary}"
    );
}

/// The current version's lastmod of `uri`.
fn current_lastmod(mirror: &Path, uri: &str) -> Option<String> {
    Connection::open(mirror.join("catalog.sqlite"))
        .unwrap()
        .query_row(
            "SELECT v.lastmod FROM resources r JOIN versions v ON v.id = r.current_version_id
             WHERE r.uri = ?1",
            [uri],
            |r| r.get(0),
        )
        .unwrap()
}

/// `inspect` of an ARC sitemap goes through its format, as `baseline` does: it said "a JSON
/// document, not a Sitemap" and exited 4.
#[test]
fn inspect_reads_an_arc_sitemap_through_its_format() {
    let (_s, srv, _dir) = good_mirror();
    let sitemap = srv.url("/arc-sitemap.json");
    let out = rsmirror().args(["inspect", &sitemap]).output().unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{}{text}", stderr_of(&out));
    assert!(
        text.contains(&format!("ARC sitemap 2.1  {sitemap}")),
        "{text}"
    );
    assert!(
        text.contains("syntax=json entries=2")
            && text.contains(&format!("at={}", at(-1, "00:00:00")))
            && text.contains("digests=sha-256"),
        "{text}"
    );
    let out = rsmirror()
        .args(["inspect", &sitemap, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let report = json_of(&out);
    assert_eq!(report["documents"][0]["entries"], 2);
    assert_eq!(report["errors"], json!([]));
}

/// The sitemap is fetched once per run: discovery's copy is the one the baseline reads (it was
/// fetched twice), and a run that follows the source asks for it conditionally.
#[test]
fn the_sitemap_is_fetched_once_per_run_and_conditionally_when_followed() {
    let (_s, srv, dir) = good_mirror();
    assert_eq!(srv.count("/arc-sitemap.json"), 1, "the first baseline");
    srv.clear_requests();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(srv.count("/arc-sitemap.json"), 1, "a second baseline");
    srv.clear_requests();
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let asked: Vec<_> = srv
        .requests()
        .into_iter()
        .filter(|r| r.path == "/arc-sitemap.json")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].header("if-none-match").is_some()
            || asked[0].header("if-modified-since").is_some(),
        "{asked:?}"
    );
    assert_eq!(asked[0].status, 304);
}

/// A page a delta feed lists again with the same bytes under a newer lastmod (a touch) gets a
/// new version carrying that lastmod, as the same touch in a Change List does; it kept the old
/// lastmod, and an audit then found it out of date every night.
#[test]
fn a_touched_page_is_recorded_as_for_a_change_list() {
    let (s, srv, dir) = good_mirror();
    let mirror = dir.path();
    let a = format!("{}/pages/a.html", srv.base());
    let versions = version_count(mirror);
    let before = current(mirror);
    let touched = at(0, "00:00:00");
    s.delta(
        &day(0),
        &touched,
        vec![page("a.html", &touched, "<html>a</html>\n")],
    );
    let out = incremental(mirror).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let summary = json_of(&out);
    assert_eq!(
        (&summary["created"], &summary["updated"]),
        (&json!(0), &json!(1)),
        "{summary:#}"
    );
    assert_eq!(version_count(mirror), versions + 1);
    assert_eq!(current(mirror), before, "the same bytes");
    assert_eq!(current_lastmod(mirror, &a), Some(touched));
    assert_consistent(mirror);
}

/// A full disk stops an ARC run as it stops a ResourceSync one: the pages that landed before
/// it are committed (they were left out of the catalog), and a re-run fetches only the rest.
#[test]
fn a_full_disk_commits_the_pages_that_landed() {
    let Some(disk) = Tmpfs::mount("16m") else {
        return;
    };
    let s = ArcSite::new();
    let mut pages = Vec::new();
    for i in 0..40 {
        let name = format!("p{i}.html");
        let body =
            format!("<html>{}</html>\n", (b'a' + (i % 26) as u8) as char).repeat(256 * 1024 / 15);
        s.put(&name, &body);
        pages.push(page(&name, &at(-1, "00:00:00"), &body));
    }
    s.sitemap(&at(-1, "00:00:00"), pages);
    let srv = TestServer::start(s.path());
    let mirror = disk.0.path().join("mirror");
    let sitemap = srv.url("/arc-sitemap.json");
    let out = baseline(&sitemap, &mirror)
        .args(["--min-free", "12M", "-j", "1"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("--min-free margin of 12.0 MiB"), "{err}");
    let landed = current(&mirror).len();
    assert!((1..40).contains(&landed), "{landed} landed: {err}");
    assert!(
        err.contains(" resources left to fetch"),
        "what was left: {err}"
    );
    assert_consistent(&mirror);

    srv.clear_requests();
    let out = baseline(&sitemap, &mirror)
        .args(["--min-free", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(&mirror).len(), 40);
    let fetched = srv
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/pages/"))
        .count();
    // Pages whose objects the stopped run had placed (a batch not yet committed) are taken from
    // the store, re-hashed against the sitemap's digest, not fetched again (issue 43): at most
    // what had not landed is fetched.
    assert!(
        fetched <= 40 - landed,
        "only what had not landed: {fetched}"
    );
    assert_consistent(&mirror);
}

/// Issue 42, 7: an ARC sitemap offered gzip'd (`arc-sitemap.json.gz`, as the ARC format asks
/// publishers to) is read as JSON, not refused as malformed XML. Issue 72: a YAML one (E.3.3)
/// is read as the JSON one is; YAML that is no ARC sitemap is called that.
#[test]
fn a_gzipped_arc_sitemap_and_a_yaml_one_are_read() {
    use std::io::Write as _;
    let s = ArcSite::new();
    s.put("a.html", "<html>a</html>\n");
    s.put("b.html", "<html>b</html>\n");
    s.sitemap(
        &at(-1, "00:00:00"),
        vec![
            page("a.html", &at(-1, "00:00:00"), "<html>a</html>\n"),
            page("b.html", &at(-1, "00:00:00"), "<html>b</html>\n"),
        ],
    );
    let json = std::fs::read(s.path().join("arc-sitemap.json")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).unwrap();
    std::fs::write(s.path().join("arc-sitemap.json.gz"), gz.finish().unwrap()).unwrap();
    // ARC E.3.3: the same sitemap as YAML (block style at the top, each page a flow mapping).
    let doc: Value = serde_json::from_slice(&json).unwrap();
    let mut yaml = format!(
        "# ARC sitemap, YAML (E.3.3)\narc_sitemap_version: \"2.1\"\nsite: {}\ngenerated_at: {}\npages:\n",
        doc["site"], doc["generated_at"]
    );
    for p in doc["pages"].as_array().unwrap() {
        yaml.push_str(&format!("  - {p}\n"));
    }
    std::fs::write(s.path().join("arc-sitemap.yaml"), yaml).unwrap();
    std::fs::write(s.path().join("other.yaml"), "---\nname: not a sitemap\n").unwrap();
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.json.gz"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(json_of(&out)["created"], 2);

    let from_yaml = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.yaml"), from_yaml.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(json_of(&out)["created"], 2, "{}", stderr_of(&out));
    assert_eq!(current(from_yaml.path()), current(dir.path()));
    let out = incremental(from_yaml.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // YAML that is no ARC sitemap is still named for what it is.
    let other = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/other.yaml"), other.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("a YAML document, not a Sitemap (XML) or an ARC sitemap (JSON)"),
        "{}",
        stderr_of(&out)
    );
}

/// Issue 42, 8: an ARC page's `ai_indexable` is recorded and shown: in `ls --json` and
/// `log --json` (absent for other sources), and in the page's WARC record. rsmirror mirrors
/// the page whatever it says (a signal for AI indexers, not for an archive).
#[test]
#[cfg_attr(
    missing = "warcio",
    ignore = "warcio is not installed: bash .ci/run installs it into .ci/venv"
)]
fn ai_indexable_is_shown_by_the_readers_and_the_warc_export() {
    let s = ArcSite::new();
    s.put("a.html", "<html>a</html>\n");
    s.put("b.html", "<html>b</html>\n");
    let mut b = page("b.html", &at(-1, "00:00:00"), "<html>b</html>\n");
    b["ai_indexable"] = json!(false);
    s.sitemap(
        &at(-1, "00:00:00"),
        vec![page("a.html", &at(-1, "00:00:00"), "<html>a</html>\n"), b],
    );
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(json_of(&out)["created"], 2, "both mirrored");

    let (ls, _) = ok_on_mirror(dir.path(), &["ls", "--json"]);
    let flags: Vec<(String, Value)> = ls
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            (
                v["uri"].as_str().unwrap().to_string(),
                v["ai_indexable"].clone(),
            )
        })
        .collect();
    let b_uri = srv.url("/pages/b.html");
    assert_eq!(
        flags,
        [
            (srv.url("/pages/a.html"), json!(true)),
            (b_uri.clone(), json!(false))
        ]
    );
    let (log, _) = ok_on_mirror(dir.path(), &["log", &b_uri, "--json"]);
    let log: Value = serde_json::from_str(&log).unwrap();
    assert_eq!(log["versions"][0]["ai_indexable"], false, "{log}");

    // Beside the mirror (its folder is `dir` itself), never inside it.
    let exports = tempfile::tempdir().unwrap();
    let dest = exports.path().join("warc-out");
    ok_on_mirror(dir.path(), &["export", "warc", dest.to_str().unwrap()]);
    let mut text = String::new();
    for e in std::fs::read_dir(&dest).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "gz") {
            let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(e.path()).unwrap());
            std::io::Read::read_to_string(&mut d, &mut text).unwrap();
        }
    }
    assert!(text.contains("rsmirror-ARC-ai-indexable: false"), "{text}");
    assert!(text.contains("rsmirror-ARC-ai-indexable: true"), "{text}");
    crate::export::warcio_check(&dest);
}

/// Issue 67, 2: after delta feeds were applied, a baseline of the same (older) sitemap takes
/// nothing back: the changed page keeps its newer version (not the older one from the object
/// store), the deleted page is not brought back, the new page is not called gone, and the
/// sync point stays where the delta feed put it.
#[test]
fn a_baseline_of_a_sitemap_older_than_the_deltas_takes_nothing_back() {
    let (s, srv, dir) = good_mirror();
    let m = dir.path();
    changes_today(&s);
    std::fs::remove_file(s.path().join("pages/b.html")).unwrap();
    let out = incremental(m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let after = current(m);
    let tombstones = tombstoned(m);
    assert_eq!((after.len(), tombstones.len()), (2, 1), "{after:?}");
    let point = sync_point(m).unwrap().0;

    let out = baseline(&srv.url("/arc-sitemap.json"), m)
        .arg("--json")
        .output()
        .unwrap();
    let said = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("older than the mirror's state"), "{said}");
    let summary = json_of(&out);
    assert_eq!(
        (
            summary["updated"].as_u64(),
            summary["created"].as_u64(),
            summary["gone"].as_u64()
        ),
        (Some(0), Some(0), Some(0)),
        "{summary}"
    );
    assert_eq!(current(m), after);
    assert_eq!(tombstoned(m), tombstones);
    assert_eq!(sync_point(m).unwrap().0, point);
}

/// Issue 67, 1: an audit right after a clean incremental compares the mirror with the sitemap
/// *and* the delta feeds generated after it (a.html changed, c.html added, b.html deleted
/// today): exit 0. Before the incremental, the same audit names all three differences; the
/// readers and an export see the delta's state.
#[test]
fn an_audit_after_a_delta_incremental_is_clean() {
    let (s, srv, dir) = good_mirror();
    let m = dir.path();
    changes_today(&s);
    let base = srv.base();
    let out = on_mirror(m, &["audit"]);
    let lines = stdout_of(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    for want in [
        format!("* {base}/pages/a.html"),
        format!("+ {base}/pages/c.html"),
        format!("- {base}/pages/b.html"),
    ] {
        assert!(lines.contains(&want), "{want:?} not in {lines}");
    }

    let out = incremental(m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let (lines, said) = ok_on_mirror(m, &["audit"]);
    assert!(!lines.contains("* ") && !lines.contains("+ "), "{lines}");
    assert!(!said.contains("warning"), "{said}");
    let found = arc_audit(&srv.url("/arc-sitemap.json"), m);
    let marks: Vec<(char, String)> = found
        .iter()
        .map(|(mark, uri, _)| (*mark, uri.trim_start_matches(&base).to_string()))
        .collect();
    assert_eq!(
        marks,
        vec![('=', "/pages/a.html".into()), ('=', "/pages/c.html".into())],
        "{found:?}"
    );

    let (listing, _) = ok_on_mirror(m, &["ls"]);
    assert!(
        listing.contains("c.html") && !listing.contains("b.html"),
        "{listing}"
    );
    let (a, _) = ok_on_mirror(m, &["cat", &format!("{base}/pages/a.html")]);
    assert_eq!(a, "<html>a, changed</html>\n");
    let (log, _) = ok_on_mirror(m, &["log", &format!("{base}/pages/b.html")]);
    assert!(log.contains("deleted"), "{log}");
    let dest = tempfile::tempdir().unwrap();
    let tree = dest.path().join("tree");
    ok_on_mirror(m, &["export", "tree", tree.to_str().unwrap()]);
    let exported: Vec<String> = walk_files(&tree)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(exported.contains(&"c.html".to_string()), "{exported:?}");
    assert!(!exported.contains(&"b.html".to_string()), "{exported:?}");
}

/// Issue 67, 11: a page whose bytes contradict its `ai_checksum` is refused after one GET,
/// also on a kept-alive connection (it was asked for again on a new one, 0.5 s later, before
/// it counted), and a clean sitemap around it is fetched once per page.
#[test]
fn a_page_that_contradicts_its_checksum_is_fetched_once() {
    let s = ArcSite::new();
    let t = at(-1, "00:00:00");
    let mut pages = Vec::new();
    for n in 0..6 {
        let body = format!("<html>page {n}</html>\n");
        s.put(&format!("p{n}.html"), &body);
        let declared = if n == 3 {
            "<html>as published</html>\n"
        } else {
            &body
        };
        pages.push(page(&format!("p{n}.html"), &t, declared));
    }
    s.sitemap(&t, pages);
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/arc-sitemap.json"), dir.path())
        .args(["--jobs", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let problems = problems_by_uri(&json_of(&out));
    let (class, reason) = &problems[&format!("{}/pages/p3.html", srv.base())];
    assert_eq!(class, "failed");
    assert!(reason.contains("sha-256 mismatch"), "{reason}");
    for n in 0..6 {
        assert_eq!(srv.count(&format!("/pages/p{n}.html")), 1, "p{n}.html");
    }
}

/// Issue 67, 8: what the sitemap says of a page besides `ai_indexable` (`ai_summary`,
/// `ai_tags`, `ai_snapshot`, `crawl_priority`, `robots_directive`) is shown by `ls --json` and
/// `log` (text and JSON) and carried into the WARC export (a metadata record concurrent to the
/// page's) and the BagIt export (`arc-pages.jsonl`, a tag file); `ai_snapshot` keeps the text
/// as published, keys in their order.
#[test]
#[cfg_attr(
    any(missing = "warcio", missing = "bagit"),
    ignore = "warcio or bagit-python (bagit.py) is not installed: bash .ci/run installs both into .ci/venv"
)]
fn arc_page_metadata_is_shown_and_exported_as_published() {
    const SNAPSHOT: &str =
        r#"{"title": "One",  "page": "p1", "sections": [{"name": "intro", "fields": []}]}"#;
    let s = ArcSite::new();
    s.put("p1.html", "<html>one</html>\n");
    s.put("p2.html", "<html>two</html>\n");
    let t = at(-1, "00:00:00");
    let mut p1 = page("p1.html", &t, "<html>one</html>\n");
    p1["ai_summary"] = json!("The first page.");
    p1["ai_tags"] = json!(["first", "example"]);
    p1["ai_snapshot"] = json!("__SNAPSHOT__");
    p1["crawl_priority"] = json!(0.8);
    p1["robots_directive"] = json!("noindex");
    s.sitemap(&t, vec![p1, page("p2.html", &t, "<html>two</html>\n")]);
    let file = s.path().join("arc-sitemap.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("\"__SNAPSHOT__\"", SNAPSHOT)).unwrap();
    let srv = TestServer::start(s.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path();
    let out = baseline(&srv.url("/arc-sitemap.json"), m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let p1 = srv.url("/pages/p1.html");

    let kept: String = Connection::open(m.join("catalog.sqlite"))
        .unwrap()
        .query_row(
            "SELECT ai_snapshot_json FROM arc_versions a JOIN versions v ON v.id = a.version_id
             JOIN resources r ON r.id = v.resource_id WHERE r.uri = ?1",
            [&p1],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, SNAPSHOT, "kept as published");

    let (ls, _) = ok_on_mirror(m, &["ls", "--json"]);
    let line = ls.lines().find(|l| l.contains("p1.html")).unwrap();
    assert!(line.contains(SNAPSHOT), "{line}");
    let v: Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["arc"]["ai_summary"], "The first page.");
    assert_eq!(v["arc"]["ai_tags"], json!(["first", "example"]));
    assert_eq!(v["arc"]["crawl_priority"], 0.8);
    assert_eq!(v["arc"]["robots_directive"], "noindex");
    assert_eq!(v["arc"]["document"], srv.url("/arc-sitemap.json"));
    valid(&schema("ls-line.schema.json"), &v);
    let p2 = ls.lines().find(|l| l.contains("p2.html")).unwrap();
    let v2: Value = serde_json::from_str(p2).unwrap();
    assert_eq!(v2["arc"]["ai_indexable"], true);
    assert!(v2["arc"].get("ai_summary").is_none(), "{p2}");

    let (log, _) = ok_on_mirror(m, &["log", &p1]);
    for want in [
        "ARC page: ai_indexable true  crawl_priority 0.8  robots_directive \"noindex\"",
        "ai_summary: The first page.",
        "ai_tags: first, example",
        &format!("ai_snapshot: {SNAPSHOT}"),
    ] {
        assert!(log.contains(want), "{want:?} not in {log}");
    }
    let (log, _) = ok_on_mirror(m, &["log", &p1, "--json"]);
    assert!(log.contains(SNAPSHOT), "{log}");
    let doc: Value = serde_json::from_str(&log).unwrap();
    valid(&schema("log.schema.json"), &doc);

    let exports = tempfile::tempdir().unwrap();
    let warc = exports.path().join("warc");
    ok_on_mirror(m, &["export", "warc", warc.to_str().unwrap()]);
    let mut text = String::new();
    for e in std::fs::read_dir(&warc).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "gz") {
            let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(e.path()).unwrap());
            std::io::Read::read_to_string(&mut d, &mut text).unwrap();
        }
    }
    assert_eq!(text.matches("WARC-Concurrent-To: ").count(), 2, "{text}");
    assert!(text.contains("Content-Type: application/json"), "{text}");
    assert!(text.contains(SNAPSHOT), "{text}");
    assert!(
        text.contains("\"ai_summary\":\"The first page.\""),
        "{text}"
    );
    crate::export::warcio_check(&warc);

    let bag = exports.path().join("bag");
    ok_on_mirror(m, &["export", "bagit", bag.to_str().unwrap()]);
    let pages = std::fs::read_to_string(bag.join("arc-pages.jsonl")).unwrap();
    assert_eq!(pages.lines().count(), 2, "{pages}");
    assert!(pages.contains(SNAPSHOT), "{pages}");
    let host = srv.base().trim_start_matches("http://").to_string();
    let first: Value = serde_json::from_str(pages.lines().next().unwrap()).unwrap();
    assert_eq!(first["path"], format!("data/{host}/pages/p1.html"));
    let tags = std::fs::read_to_string(bag.join("tagmanifest-sha256.txt")).unwrap();
    assert!(tags.contains("  arc-pages.jsonl"), "{tags}");
    crate::export::validate_bag(&bag);
}
