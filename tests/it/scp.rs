//! Mirroring an SCP source (issue 6) with the real binary against a real HTTP server: a site
//! generated here (two sections; gzip, zstd and plain collections; a snapshot, two deltas, a
//! newer snapshot without one page), the mirror's pages and versions after every step,
//! conditional GETs, rejected collections that leave nothing behind, and the SCP audit.
//!
//! The collections are generated with the server's real address in them (no placeholder
//! origin): the server rewrites the placeholder inside gzip bodies but not zstd ones, and a
//! rewrite would break the checksums anyway. Checksums follow the reference implementation's
//! rule (scp-notes §2.1: line 1 without `checksum`, compact, then the rest; no trailing
//! newline), computed here independently of the crate's verifier. The spec-literal rule is
//! self-referential (the checksum sits in the bytes it covers), so no generator can meet it;
//! the reader's unit tests cover it.

use crate::server::TestServer;
use crate::support::*;
use rusqlite::Connection;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

pub(crate) const T1: &str = "2026-01-01T00:00:00Z";
const T2: &str = "2026-01-02T00:00:00Z";
const T3: &str = "2026-01-03T00:00:00Z";
const T4: &str = "2026-01-04T00:00:00Z";

#[derive(Clone, Copy)]
pub(crate) enum Z {
    Gzip,
    Zstd,
    Plain,
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Sum {
    /// The reference implementation's rule.
    Reference,
    /// No checksum: recorded as unverified.
    Absent,
    /// A well-formed checksum of other content.
    Wrong,
}

/// A collection of the site, as listed in its sitemap.
#[derive(Clone)]
struct Listed {
    section: &'static str,
    /// None: a snapshot; Some(since): a delta.
    since: Option<&'static str>,
    file: String,
    generated: &'static str,
    pages: usize,
    size: u64,
}

/// A site served from a temporary folder, its files written with the server's own address.
pub(crate) struct Site {
    dir: tempfile::TempDir,
    pub(crate) srv: TestServer,
    listed: Vec<Listed>,
    /// The `expires` every listed collection is given: a fixed date, never today's.
    expires: &'static str,
}

impl Site {
    pub(crate) fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let srv = TestServer::start(dir.path());
        let site = Site {
            dir,
            srv,
            listed: Vec::new(),
            expires: "2999-01-01T00:00:00Z",
        };
        site.write(
            "robots.txt",
            format!("User-agent: *\nSitemap: {}/sitemap.xml\n", site.base()).as_bytes(),
        );
        site
    }

    fn base(&self) -> String {
        self.srv.base()
    }

    fn write(&self, file: &str, bytes: &[u8]) {
        std::fs::write(self.dir.path().join(file), bytes).unwrap();
    }

    /// One page line.
    pub(crate) fn page(&self, path: &str, modified: &str, text: &str) -> String {
        format!(
            r#"{{"url":"{}{path}","title":"Page {path}","description":"About {path}","modified":"{modified}","language":"en","content":[{{"type":"heading","level":1,"text":"Page {path}"}},{{"type":"text","text":"{text}"}}]}}"#,
            self.base()
        )
    }

    /// Write a collection file and list it in the sitemap (written by [`Site::sitemap`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn collection(
        &mut self,
        file: &str,
        z: Z,
        section: &'static str,
        since: Option<&'static str>,
        generated: &'static str,
        pages: &[String],
        sum: Sum,
    ) {
        let bytes = collection_bytes(file, section, since, generated, pages, sum);
        let bytes = compress(&bytes, z);
        self.write(file, &bytes);
        self.listed.retain(|l| l.file != file);
        self.listed.push(Listed {
            section,
            since,
            file: file.to_string(),
            generated,
            pages: pages.len(),
            size: bytes.len() as u64,
        });
    }

    /// `sitemap.xml` listing every collection so far.
    pub(crate) fn sitemap(&self) {
        let mut xml = String::from(concat!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
            "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"\n",
            "        xmlns:scp=\"https://scp-protocol.org/schemas/sitemap/1.0\">\n",
            "  <scp:version>0.1</scp:version>\n",
            "  <scp:compression>zstd,gzip</scp:compression>\n",
            "  <scp:section name=\"blog\" updateFreq=\"daily\" pages=\"~4\"/>\n",
            "  <scp:section name=\"docs\" updateFreq=\"weekly\" pages=\"~2\"/>\n",
        ));
        for l in &self.listed {
            let url = format!("{}/{}", self.base(), l.file);
            match l.since {
                None => xml.push_str(&format!(
                    "  <scp:collection section=\"{}\" type=\"snapshot\" url=\"{url}\" generated=\"{}\" expires=\"{}\" pages=\"{}\" size=\"{}\"/>\n",
                    l.section, l.generated, self.expires, l.pages, l.size
                )),
                Some(since) => xml.push_str(&format!(
                    "  <scp:delta section=\"{}\" period=\"{}\" url=\"{url}\" generated=\"{}\" expires=\"{}\" pages=\"{}\" size=\"{}\" since=\"{since}\"/>\n",
                    l.section, &l.generated[..10], l.generated, self.expires, l.pages, l.size
                )),
            }
        }
        xml.push_str("</urlset>\n");
        self.write("sitemap.xml", xml.as_bytes());
    }
}

fn sha_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The uncompressed collection: line 1, then the pages joined by `\n` (no trailing newline, as
/// the reference generator writes them).
fn collection_bytes(
    file: &str,
    section: &str,
    since: Option<&str>,
    generated: &str,
    pages: &[String],
    sum: Sum,
) -> Vec<u8> {
    let id: String = file
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let kind = if since.is_some() { "delta" } else { "snapshot" };
    let since = since
        .map(|s| format!(r#","since":"{s}""#))
        .unwrap_or_default();
    let head = format!(
        r#"{{"collection":{{"id":"{id}","section":"{section}","type":"{kind}","generated":"{generated}"{since}"#
    );
    let rest = pages.join("\n");
    let line1 = match sum {
        Sum::Absent => format!(r#"{head},"version":"0.1"}}}}"#),
        Sum::Reference | Sum::Wrong => {
            // scp-notes §2.1: the generator hashes the file without the checksum key, then
            // inserts the key.
            let without = format!(r#"{head},"version":"0.1"}}}}"#);
            let hashed = if sum == Sum::Reference {
                format!("{without}\n{rest}")
            } else {
                format!("{without}\n{rest} (not this content)")
            };
            format!(
                r#"{head},"checksum":"sha256:{}","version":"0.1"}}}}"#,
                sha_hex(hashed.as_bytes())
            )
        }
    };
    format!("{line1}\n{rest}").into_bytes()
}

fn compress(bytes: &[u8], z: Z) -> Vec<u8> {
    match z {
        Z::Gzip => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(bytes).unwrap();
            gz.finish().unwrap()
        }
        Z::Zstd => zstd::encode_all(bytes, 3).unwrap(),
        Z::Plain => bytes.to_vec(),
    }
}

/// Every page version of the mirror: "section path" -> [(change, modified)], oldest first.
/// Pages are resources (URI: the page URL), their versions `versions` rows with
/// `arrived_via = 'scp'` (the page's `modified` as `lastmod`) and an `scp_versions` row naming
/// the collection (and so the section) that brought them.
fn versions(mirror: &Path, base: &str) -> BTreeMap<String, Vec<(String, Option<String>)>> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT c.section, r.uri, v.change, v.lastmod FROM resources r
             JOIN versions v ON v.resource_id = r.id JOIN scp_versions s ON s.version_id = v.id
             JOIN scp_collections c ON c.id = s.collection_row
             WHERE v.arrived_via = 'scp' ORDER BY c.section, r.uri, v.id",
        )
        .unwrap();
    let mut out: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (section, url, change, modified) = row.unwrap();
        let path = url.strip_prefix(base).unwrap_or(&url).to_string();
        out.entry(format!("{section} {path}"))
            .or_default()
            .push((change, modified));
    }
    out
}

/// The current page JSON of every live page, read from its object (checked against the name
/// the catalog gives it): "section path" -> json.
fn current_pages(mirror: &Path, base: &str) -> BTreeMap<String, String> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT c.section, r.uri, v.sha256_hex, v.length_bytes, v.media_type FROM resources r
             JOIN versions v ON v.id = r.current_version_id
             JOIN scp_versions s ON s.version_id = v.id
             JOIN scp_collections c ON c.id = s.collection_row WHERE v.change != 'deleted'",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, Option<String>>(4)?,
        ))
    })
    .unwrap()
    .map(|r| {
        let (section, url, sha, len, media_type) = r.unwrap();
        let object = mirror.join(format!("objects/sha256/{}/{sha}", &sha[..2]));
        assert_eq!(sha256_file(&object), sha, "{url}");
        let json = std::fs::read_to_string(&object).unwrap();
        assert_eq!(json.len() as i64, len, "{url}");
        // Always JSON (`scp_catalog::PAGE_MEDIA_TYPE`): not repeated on every version.
        assert_eq!(media_type, None);
        (
            format!("{section} {}", url.strip_prefix(base).unwrap_or(&url)),
            json,
        )
    })
    .collect()
}

/// Collections recorded: (file, type, checksum status, page count).
fn collections(mirror: &Path) -> Vec<(String, String, String, i64)> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare("SELECT url, type, checksum_status, page_count FROM scp_collections ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| {
        let url: String = r.get(0)?;
        Ok((
            url.rsplit('/').next().unwrap().to_string(),
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
        ))
    })
    .unwrap()
    .map(|r| r.unwrap())
    .collect()
}

fn count(mirror: &Path, table: &str) -> i64 {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

fn run_json(cmd: &mut assert_cmd::Command, code: i32) -> serde_json::Value {
    let out = cmd.arg("--json").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "stderr: {}\nstdout: {}",
        stderr_of(&out),
        stdout_of(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn counts(s: &serde_json::Value) -> [u64; 5] {
    ["created", "updated", "unchanged", "deleted", "failed"].map(|k| s[k].as_u64().unwrap())
}

type Expected = BTreeMap<String, Vec<(String, Option<String>)>>;

fn created(e: &mut Expected, key: &str, modified: &str) {
    e.entry(key.to_string())
        .or_default()
        .push(("created".into(), Some(modified.into())));
}

fn updated(e: &mut Expected, key: &str, modified: &str) {
    e.get_mut(key)
        .unwrap()
        .push(("updated".into(), Some(modified.into())));
}

fn deleted(e: &mut Expected, key: &str) {
    e.get_mut(key).unwrap().push(("deleted".into(), None));
}

/// Acceptance 1 of issue 6: snapshot, two deltas, a newer snapshot with one page removed;
/// the mirror after each step holds exactly the expected pages and versions; a run with
/// nothing new makes only conditional requests, answered 304.
#[test]
fn snapshot_deltas_and_newer_snapshot_give_exactly_the_expected_versions() {
    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let b2 = site.page("/blog/2", "2025-12-02T00:00:00Z", "two");
    let b3 = site.page("/blog/3", "2025-12-03T00:00:00Z", "three");
    let d1 = site.page("/docs/1", "2025-12-01T00:00:00Z", "doc one");
    let d2 = site.page("/docs/2", "2025-12-02T00:00:00Z", "doc two");
    // Step 1: a snapshot of each section (gzip, zstd), checksums by the reference rule.
    site.collection(
        "blog-snapshot-1.scp.gz",
        Z::Gzip,
        "blog",
        None,
        T1,
        &[b1.clone(), b2.clone(), b3.clone()],
        Sum::Reference,
    );
    site.collection(
        "docs-snapshot-1.scp.zst",
        Z::Zstd,
        "docs",
        None,
        T1,
        &[d1.clone(), d2.clone()],
        Sum::Reference,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path();
    // From the site root: /.well-known/resourcesync is absent, robots.txt names the sitemap.
    let s = run_json(&mut baseline(&site.srv.url("/"), mirror), 0);
    assert_eq!(counts(&s), [5, 0, 0, 0, 0], "{s}");
    assert_eq!(s["sync_point"], T1);
    // Discovery found the sitemap through robots.txt and its read is the one used: one GET.
    assert_eq!(site.srv.count("/sitemap.xml"), 1);
    let mut want = Expected::new();
    created(&mut want, "blog /blog/1", "2025-12-01T00:00:00Z");
    created(&mut want, "blog /blog/2", "2025-12-02T00:00:00Z");
    created(&mut want, "blog /blog/3", "2025-12-03T00:00:00Z");
    created(&mut want, "docs /docs/1", "2025-12-01T00:00:00Z");
    created(&mut want, "docs /docs/2", "2025-12-02T00:00:00Z");
    assert_eq!(versions(mirror, &base), want);
    let json = current_pages(mirror, &base);
    assert_eq!(json["blog /blog/2"], b2);
    assert_eq!(json["docs /docs/1"], d1);
    assert_eq!(
        collections(mirror),
        vec![
            (
                "blog-snapshot-1.scp.gz".into(),
                "snapshot".into(),
                "reference-variant".into(),
                3
            ),
            (
                "docs-snapshot-1.scp.zst".into(),
                "snapshot".into(),
                "reference-variant".into(),
                2
            ),
        ]
    );
    assert_consistent(mirror);

    // A second baseline: the collections are asked for conditionally, and are unchanged.
    site.srv.clear_requests();
    let s = run_json(&mut baseline(&site.srv.url("/"), mirror), 0);
    assert_eq!(counts(&s), [0, 0, 5, 0, 0], "{s}");
    let scp: Vec<_> = site
        .srv
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(".scp"))
        .collect();
    assert_eq!(scp.len(), 2, "{scp:?}");
    for r in &scp {
        assert!(r.header("if-none-match").is_some(), "{r:?}");
        assert!(r.header("if-modified-since").is_some(), "{r:?}");
        assert_eq!(r.status, 304, "{r:?}");
    }
    assert_eq!(versions(mirror, &base), want);

    // Step 2: a plain delta without checksum: b2 newer (replaced), b4 new (inserted), b1
    // with the same `modified` (kept), b3 older (kept: SCP's rule).
    let b2v2 = site.page("/blog/2", "2026-01-01T12:00:00Z", "two, revised");
    let b4 = site.page("/blog/4", "2026-01-01T13:00:00Z", "four");
    let b3old = site.page("/blog/3", "2025-11-01T00:00:00Z", "three, stale");
    site.collection(
        "blog-delta-2.scp",
        Z::Plain,
        "blog",
        Some(T1),
        T2,
        &[b2v2.clone(), b4.clone(), b1.clone(), b3old],
        Sum::Absent,
    );
    site.sitemap();
    let s = run_json(&mut incremental(mirror), 0);
    assert_eq!(counts(&s), [1, 1, 2, 0, 0], "{s}");
    assert_eq!(s["sync_point"], T1, "docs is still current through T1");
    updated(&mut want, "blog /blog/2", "2026-01-01T12:00:00Z");
    created(&mut want, "blog /blog/4", "2026-01-01T13:00:00Z");
    assert_eq!(versions(mirror, &base), want);
    assert_eq!(current_pages(mirror, &base)["blog /blog/3"], b3);
    assert_eq!(
        collections(mirror).last().unwrap(),
        &(
            "blog-delta-2.scp".to_string(),
            "delta".to_string(),
            "unverified".to_string(),
            4
        )
    );

    // Step 3: a gzip delta for blog and a zstd delta for docs; the first delta is remembered
    // and not fetched again.
    let b4v2 = site.page("/blog/4", "2026-01-02T12:00:00Z", "four, revised");
    let d1v2 = site.page("/docs/1", "2026-01-02T06:00:00Z", "doc one, revised");
    site.collection(
        "blog-delta-3.scp.gz",
        Z::Gzip,
        "blog",
        Some(T2),
        T3,
        std::slice::from_ref(&b4v2),
        Sum::Reference,
    );
    site.collection(
        "docs-delta-3.scp.zst",
        Z::Zstd,
        "docs",
        Some(T1),
        T3,
        std::slice::from_ref(&d1v2),
        Sum::Reference,
    );
    site.sitemap();
    site.srv.clear_requests();
    let s = run_json(&mut incremental(mirror), 0);
    assert_eq!(counts(&s), [0, 2, 0, 0, 0], "{s}");
    assert_eq!(s["sync_point"], T3);
    assert_eq!(site.srv.count("/blog-delta-2.scp"), 0);
    assert_eq!(site.srv.count("/blog-snapshot-1.scp.gz"), 0);
    updated(&mut want, "blog /blog/4", "2026-01-02T12:00:00Z");
    updated(&mut want, "docs /docs/1", "2026-01-02T06:00:00Z");
    assert_eq!(versions(mirror, &base), want);

    // Step 4: a newer blog snapshot (zstd) without /blog/3: it is tombstoned; the pages it
    // lists are the mirror's already (same `modified`): no new versions.
    site.collection(
        "blog-snapshot-4.scp.zst",
        Z::Zstd,
        "blog",
        None,
        T4,
        &[b1.clone(), b2v2.clone(), b4v2.clone()],
        Sum::Reference,
    );
    site.sitemap();
    let s = run_json(&mut incremental(mirror), 0);
    assert_eq!(counts(&s), [0, 0, 3, 1, 0], "{s}");
    deleted(&mut want, "blog /blog/3");
    assert_eq!(versions(mirror, &base), want);
    let json = current_pages(mirror, &base);
    let live: Vec<&str> = json.keys().map(|k| k.as_str()).collect();
    assert_eq!(
        live,
        [
            "blog /blog/1",
            "blog /blog/2",
            "blog /blog/4",
            "docs /docs/1",
            "docs /docs/2"
        ]
    );
    assert_eq!(json["blog /blog/2"], b2v2);
    assert_eq!(json["blog /blog/4"], b4v2);
    assert_eq!(json["docs /docs/1"], d1v2);
    assert_consistent(mirror);

    // Step 5: nothing new: one conditional request for the sitemap, answered 304.
    site.srv.clear_requests();
    let s = run_json(&mut incremental(mirror), 0);
    assert_eq!(counts(&s), [0, 0, 0, 0, 0], "{s}");
    let requests = site.srv.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert!(
            r.header("if-none-match").is_some() && r.header("if-modified-since").is_some(),
            "{r:?}"
        );
        assert_eq!(r.status, 304, "{r:?}");
    }
    assert_eq!(versions(mirror, &base), want);
}

/// A collection whose checksum matches neither rule is rejected; nothing from it is committed;
/// the other section lands (exit 3); alone, the run is a source error naming URL and line.
#[test]
fn a_rejected_collection_commits_nothing() {
    let mut site = Site::new();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let d1 = site.page("/docs/1", "2025-12-01T00:00:00Z", "doc one");
    site.collection(
        "blog-snapshot.scp.gz",
        Z::Gzip,
        "blog",
        None,
        T1,
        &[b1],
        Sum::Wrong,
    );
    site.collection(
        "docs-snapshot.scp.zst",
        Z::Zstd,
        "docs",
        None,
        T1,
        &[d1],
        Sum::Reference,
    );
    site.sitemap();
    let sitemap = site.srv.url("/sitemap.xml");

    // Only the broken section: nothing could be mirrored (exit 4), nothing committed.
    let alone = tempfile::tempdir().unwrap();
    let out = baseline(&sitemap, alone.path())
        .args(["--section", "blog"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains(&site.srv.url("/blog-snapshot.scp.gz")),
        "{err}"
    );
    assert!(err.contains("line 1: checksum mismatch"), "{err}");
    for table in ["resources", "versions", "scp_versions", "scp_collections"] {
        assert_eq!(count(alone.path(), table), 0, "{table}");
    }
    // Issue 42, 6: SCP 0.1 lets a client that cannot parse the collections fall back to the
    // site's HTML pages; a mirror does not: it mirrors what the site publishes as SCP, and a
    // collection it cannot read fails, to be taken again (no page is fetched as HTML).
    assert!(
        site.srv
            .requests()
            .iter()
            .all(|r| !r.path.starts_with("/blog/")),
        "{:?}",
        site.srv.requests()
    );
    // Nor any page object: the ones written while reading were taken back.
    let objects: Vec<_> = walkdir(&alone.path().join("objects"));
    assert!(objects.is_empty(), "{objects:?}");
    assert!(std::fs::read_dir(alone.path().join("staging"))
        .unwrap()
        .next()
        .is_none());

    // Both sections: docs lands, blog is a failed problem (exit 3).
    let both = tempfile::tempdir().unwrap();
    let s = run_json(&mut baseline(&sitemap, both.path()), 3);
    assert_eq!(counts(&s), [1, 0, 0, 0, 1], "{s}");
    let base = site.base();
    let pages: Vec<String> = current_pages(both.path(), &base).into_keys().collect();
    assert_eq!(pages, ["docs /docs/1"]);
    assert_eq!(collections(both.path()).len(), 1);
    let problems = last_run_problems(both.path());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].0, site.srv.url("/blog-snapshot.scp.gz"));
    assert_eq!(problems[0].1, "failed");
    assert!(
        problems[0].2.contains("line 1: checksum mismatch"),
        "{problems:?}"
    );

    // Fixed at the source: the next incremental takes the snapshot it lacks.
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    site.collection(
        "blog-snapshot.scp.gz",
        Z::Gzip,
        "blog",
        None,
        T1,
        &[b1],
        Sum::Reference,
    );
    site.sitemap();
    let s = run_json(&mut incremental(both.path()), 0);
    assert_eq!(counts(&s), [1, 0, 0, 0, 0], "{s}");
    let pages: Vec<String> = current_pages(both.path(), &base).into_keys().collect();
    assert_eq!(pages, ["blog /blog/1", "docs /docs/1"]);
}

/// A delta rejected at a page line (invalid JSON) leaves nothing behind and holds back the
/// deltas after it; once fixed, both apply in `generated` order.
#[test]
fn a_rejected_delta_holds_back_the_later_ones() {
    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    site.collection(
        "blog-snapshot.scp.gz",
        Z::Gzip,
        "blog",
        None,
        T1,
        &[b1],
        Sum::Reference,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path();
    run_json(&mut baseline(&site.srv.url("/sitemap.xml"), mirror), 0);

    let b2 = site.page("/blog/2", "2026-01-01T10:00:00Z", "two");
    let b1v2 = site.page("/blog/1", "2026-01-02T10:00:00Z", "one, revised");
    site.collection(
        "blog-delta-2.scp.gz",
        Z::Gzip,
        "blog",
        Some(T1),
        T2,
        &[b2.clone(), "{\"url\": broken".to_string()],
        Sum::Absent,
    );
    site.collection(
        "blog-delta-3.scp.zst",
        Z::Zstd,
        "blog",
        Some(T2),
        T3,
        std::slice::from_ref(&b1v2),
        Sum::Reference,
    );
    site.sitemap();
    site.srv.clear_requests();
    let out = incremental(mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains(&format!("{base}/blog-delta-2.scp.gz: rejected: line 3:")),
        "{err}"
    );
    assert_eq!(site.srv.count("/blog-delta-3.scp.zst"), 0);
    assert_eq!(count(mirror, "scp_versions"), 1);
    assert_eq!(count(mirror, "scp_collections"), 1);

    site.collection(
        "blog-delta-2.scp.gz",
        Z::Gzip,
        "blog",
        Some(T1),
        T2,
        std::slice::from_ref(&b2),
        Sum::Absent,
    );
    site.sitemap();
    let s = run_json(&mut incremental(mirror), 0);
    assert_eq!(counts(&s), [1, 1, 0, 0, 0], "{s}");
    assert_eq!(s["sync_point"], T3);
    let json = current_pages(mirror, &base);
    assert_eq!(json["blog /blog/1"], b1v2);
    assert_eq!(json["blog /blog/2"], b2);
}

/// `--section` chooses one section; an unknown one is a usage error naming those there are.
#[test]
fn section_option_chooses_one_section() {
    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let d1 = site.page("/docs/1", "2025-12-01T00:00:00Z", "doc one");
    site.collection("b.scp", Z::Plain, "blog", None, T1, &[b1], Sum::Reference);
    site.collection("d.scp", Z::Plain, "docs", None, T1, &[d1], Sum::Reference);
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&site.srv.url("/sitemap.xml"), dir.path())
        .args(["--section", "news"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("sections with a snapshot: blog, docs"),
        "{}",
        stderr_of(&out)
    );
    run_json(
        baseline(&site.srv.url("/sitemap.xml"), dir.path()).args(["--section", "docs"]),
        0,
    );
    let pages: Vec<String> = current_pages(dir.path(), &base).into_keys().collect();
    assert_eq!(pages, ["docs /docs/1"]);
    assert_eq!(site.srv.count("/b.scp"), 0);
}

/// The SCP audit (library entry point; the `audit` command wires it): in sync after a
/// baseline; then a newer snapshot not yet mirrored shows `+`, `-` and `*`; an unverified
/// collection is `?`; a page object altered on disk is `!` corrupt (the command's local
/// fixity, the same as for every resource).
#[test]
fn audit_compares_with_the_newest_snapshot() {
    use rsmirror::cli::{Cli, Command};
    use rsmirror::finding::Class;
    use rsmirror::store::Catalog;

    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let b2 = site.page("/blog/2", "2025-12-02T00:00:00Z", "two");
    site.collection(
        "blog-snapshot-1.scp.gz",
        Z::Gzip,
        "blog",
        None,
        T1,
        &[b1.clone(), b2.clone()],
        Sum::Reference,
    );
    site.collection(
        "blog-delta-2.scp",
        Z::Plain,
        "blog",
        Some(T1),
        T2,
        &[site.page("/blog/5", "2026-01-01T10:00:00Z", "five")],
        Sum::Absent,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path();
    run_json(&mut baseline(&site.srv.url("/sitemap.xml"), mirror), 0);
    run_json(&mut incremental(mirror), 0);

    let audit = |offline: bool| {
        let mut args = vec![
            "rsmirror".to_string(),
            "audit".into(),
            "--mirror".into(),
            mirror.display().to_string(),
        ];
        if offline {
            args.push("--offline".into());
        }
        let cli = <Cli as clap::Parser>::try_parse_from(args).unwrap();
        let Command::Audit(a) = cli.command else {
            unreachable!()
        };
        let s = a.settings().unwrap();
        let source_id: i64 = Connection::open(mirror.join("catalog.sqlite"))
            .unwrap()
            .query_row("SELECT id FROM sources", [], |r| r.get(0))
            .unwrap();
        let catalog = Catalog::open(mirror).unwrap();
        rsmirror::formats::scp::mirror::audit(&s, &catalog, source_id).unwrap()
    };
    let marks = |a: &rsmirror::formats::scp::mirror::ScpAudit| -> Vec<String> {
        a.findings
            .iter()
            .map(|f| {
                format!(
                    "{} {}",
                    f.mark(),
                    f.subject().strip_prefix(&base).unwrap_or(f.subject())
                )
            })
            .collect()
    };
    let a = audit(false);
    assert!(a.source_error.is_none());
    assert!(a.failed_parts.is_empty(), "{:?}", a.failed_parts);
    // /blog/5 came with a delta after the snapshot: neither extra nor compared.
    assert_eq!(marks(&a), ["? /blog-delta-2.scp", "= /blog/1", "= /blog/2"]);
    assert_eq!(a.findings[0].class, Class::Unverifiable);

    // The source moves on: a newer snapshot drops /blog/1, changes /blog/2, adds /blog/3.
    site.collection(
        "blog-snapshot-3.scp.zst",
        Z::Zstd,
        "blog",
        None,
        T3,
        &[
            site.page("/blog/2", "2026-01-02T00:00:00Z", "two, revised"),
            site.page("/blog/3", "2026-01-02T00:00:00Z", "three"),
            site.page("/blog/5", "2026-01-01T10:00:00Z", "five"),
        ],
        Sum::Reference,
    );
    site.sitemap();
    let a = audit(false);
    assert_eq!(
        marks(&a),
        [
            "? /blog-delta-2.scp",
            "- /blog/1",
            "* /blog/2",
            "+ /blog/3",
            "= /blog/5"
        ]
    );
    // The same through the command line.
    let out = rsmirror()
        .args(["audit", "--json", "--mirror"])
        .arg(mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["mark"].as_str().unwrap(),
                f["uri"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert!(lines.contains(&format!("+ {base}/blog/3")), "{lines:?}");
    assert!(lines.contains(&format!("- {base}/blog/1")), "{lines:?}");
    let changed = &a.findings[2];
    assert_eq!(changed.field.as_deref(), Some("modified"));
    assert_eq!(changed.expected.as_deref(), Some("2026-01-02T00:00:00Z"));
    assert_eq!(changed.actual.as_deref(), Some("2025-12-02T00:00:00Z"));

    // Local fixity: a page is an object like any other, hashed by `--level fixity`.
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let sha: String = conn
        .query_row(
            "SELECT v.sha256_hex FROM resources r JOIN versions v ON v.id = r.current_version_id
             WHERE r.uri = ?1",
            [format!("{base}/blog/1")],
            |r| r.get(0),
        )
        .unwrap();
    drop(conn);
    let object = mirror.join(format!("objects/sha256/{}/{sha}", &sha[..2]));
    let mut perms = std::fs::metadata(&object).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&object, perms).unwrap();
    let json = std::fs::read_to_string(&object).unwrap();
    std::fs::write(&object, json.replace("one", "uno")).unwrap();
    let out = rsmirror()
        .args([
            "audit",
            "--offline",
            "--level",
            "fixity",
            "--json",
            "--mirror",
        ])
        .arg(mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let corrupt: Vec<&serde_json::Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["mark"] == "!")
        .collect();
    assert_eq!(corrupt.len(), 1, "{doc}");
    assert_eq!(corrupt[0]["uri"], format!("{base}/blog/1"), "{doc}");
}

/// Every file under `dir`, recursively.
fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The sitemap's `size` and `pages` are cross-checked against what arrived (warnings, the
/// pages still land); a file whose line 1 names another section than the sitemap lists it
/// under is rejected, naming both.
#[test]
fn sitemap_claims_are_cross_checked() {
    let mut site = Site::new();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let d1 = site.page("/docs/1", "2025-12-01T00:00:00Z", "doc one");
    site.collection(
        "blog.scp.gz",
        Z::Gzip,
        "blog",
        None,
        T1,
        &[b1],
        Sum::Reference,
    );
    site.listed[0].size += 7;
    site.listed[0].pages = 5;
    // Written as section "blog", listed under "docs".
    site.collection(
        "docs.scp",
        Z::Plain,
        "blog",
        None,
        T1,
        &[d1],
        Sum::Reference,
    );
    site.listed[1].section = "docs";
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let s = run_json(&mut baseline(&site.srv.url("/sitemap.xml"), dir.path()), 3);
    assert_eq!(counts(&s), [1, 0, 0, 0, 1], "{s}");
    let warnings: Vec<&str> = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let blog = site.srv.url("/blog.scp.gz");
    let size = std::fs::metadata(site.dir.path().join("blog.scp.gz"))
        .unwrap()
        .len();
    assert!(
        warnings.contains(
            &format!(
                "{blog}: the sitemap (line 8) gives size {} bytes, {size} bytes arrived",
                size + 7
            )
            .as_str()
        ),
        "{warnings:?}"
    );
    assert!(
        warnings.contains(
            &format!("{blog}: the sitemap (line 8) gives 5 pages, the collection holds 1").as_str()
        ),
        "{warnings:?}"
    );
    let problems = last_run_problems(dir.path());
    let docs = site.srv.url("/docs.scp");
    assert!(
        problems.iter().any(|(uri, class, reason)| uri == &docs
            && class == "failed"
            && reason
                == "rejected: line 1: section \"blog\", but the sitemap (line 9) lists it under section \"docs\""),
        "{problems:?}"
    );
    let base = site.base();
    let pages: Vec<String> = current_pages(dir.path(), &base).into_keys().collect();
    assert_eq!(pages, ["blog /blog/1"]);
}

/// Issue 28.4: a page absent from a newer snapshot stays gone until a run deletes it. After a
/// baseline without --delete has reported it, `incremental` applies the newer snapshot as the
/// state (a tombstone), and so does a `baseline --delete`; neither is answered by a 304 that
/// skips the comparison.
#[test]
fn a_page_gone_from_a_newer_snapshot_is_deleted_by_the_next_run() {
    let mut site = Site::new();
    let base = site.base();
    let p = |n: &str| site.page(&format!("/blog/{n}"), "2025-12-01T00:00:00Z", n);
    let (p1, p2, p3) = (p("1"), p("2"), p("3"));
    site.collection(
        "s1.scp",
        Z::Plain,
        "blog",
        None,
        T1,
        &[p1.clone(), p2.clone(), p3],
        Sum::Reference,
    );
    site.sitemap();
    let live = |dir: &Path| -> Vec<String> { current_pages(dir, &base).into_keys().collect() };

    let by_incremental = tempfile::tempdir().unwrap();
    let by_baseline = tempfile::tempdir().unwrap();
    for dir in [&by_incremental, &by_baseline] {
        run_json(&mut baseline(&site.srv.url("/sitemap.xml"), dir.path()), 0);
    }
    site.collection(
        "s2.scp",
        Z::Plain,
        "blog",
        None,
        T2,
        &[p1.clone(), p2],
        Sum::Reference,
    );
    site.sitemap();
    for dir in [&by_incremental, &by_baseline] {
        let s = run_json(&mut baseline(&site.srv.url("/sitemap.xml"), dir.path()), 0);
        assert_eq!(
            (s["gone"].as_u64(), s["deleted"].as_u64()),
            (Some(1), Some(0)),
            "{s}"
        );
        assert_eq!(live(dir.path()).len(), 3);
        let problems = last_run_problems(dir.path());
        assert!(
            problems
                .iter()
                .any(|(uri, class, _)| uri.ends_with("/blog/3") && class == "gone"),
            "{problems:?}"
        );
    }

    let out = incremental(by_incremental.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["deleted"], 1, "{s}");
    assert_eq!(
        live(by_incremental.path()),
        ["blog /blog/1", "blog /blog/2"]
    );
    // Issue 42, 5: the deletion is named on stderr and recorded, as every source's are.
    let blog3 = format!("{base}/blog/3");
    assert!(
        stderr_of(&out).contains(&format!("deleted: {blog3}")),
        "{}",
        stderr_of(&out)
    );
    assert!(
        last_run_problems(by_incremental.path())
            .iter()
            .any(|(uri, class, _)| *uri == blog3 && class == "deleted"),
        "{:?}",
        last_run_problems(by_incremental.path())
    );
    // The reading commands see SCP pages as resources like any other (issue 20).
    let read = |args: &[&str]| {
        let out = rsmirror()
            .args(args)
            .arg("--mirror")
            .arg(by_incremental.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
        out.stdout
    };
    let page = |n: &str| format!("{base}/blog/{n}");
    assert_eq!(
        String::from_utf8(read(&["ls"])).unwrap(),
        format!("{}\n{}\n", page("1"), page("2"))
    );
    assert_eq!(
        String::from_utf8(read(&["ls", "--at", "run:1"])).unwrap(),
        format!("{}\n{}\n{}\n", page("1"), page("2"), page("3"))
    );
    assert_eq!(
        String::from_utf8(read(&["diff", "run:1"])).unwrap(),
        format!("- {}\n", page("3"))
    );
    assert_eq!(read(&["cat", &page("1")]), p1.as_bytes());
    let log: serde_json::Value =
        serde_json::from_slice(&read(&["log", &page("3"), "--json"])).unwrap();
    assert_eq!(log["versions"][0]["change"], "deleted");
    assert_eq!(log["versions"][1]["arrived_via"], "scp");
    assert_eq!(log["versions"][1]["document"], site.srv.url("/s1.scp"));
    assert_eq!(
        log["collection"],
        format!("{base}/sitemap.xml#scp-section=blog")
    );
    // ... and so do the exports: each page's JSON as a file, the deleted page gone.
    let out_dir = tempfile::tempdir().unwrap();
    let tree = out_dir.path().join("tree");
    read(&["export", "tree", tree.to_str().unwrap(), "-q"]);
    let host = base.trim_start_matches("http://");
    assert_eq!(
        std::fs::read(tree.join(host).join("blog/1")).unwrap(),
        p1.as_bytes()
    );
    assert!(tree.join(host).join("blog/2").is_file());
    assert!(!tree.join(host).join("blog/3").exists());
    let at1 = out_dir.path().join("at1");
    read(&[
        "export",
        "tree",
        at1.to_str().unwrap(),
        "--at",
        "run:1",
        "-q",
    ]);
    assert!(at1.join(host).join("blog/3").is_file());

    // A baseline without --delete reports it again; with --delete it goes.
    let s = run_json(
        &mut baseline(&site.srv.url("/sitemap.xml"), by_baseline.path()),
        0,
    );
    assert_eq!(s["gone"], 1, "{s}");
    let out = baseline(&site.srv.url("/sitemap.xml"), by_baseline.path())
        .args(["--delete", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["gone"].as_u64(), s["deleted"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    assert!(
        stderr_of(&out).contains(&format!("deleted: {base}/blog/3")),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(live(by_baseline.path()), ["blog /blog/1", "blog /blog/2"]);

    // Both now rest on the newer snapshot: nothing more to do.
    for dir in [&by_incremental, &by_baseline] {
        let s = run_json(&mut incremental(dir.path()), 0);
        assert_eq!(counts(&s), [0, 0, 0, 0, 0], "{s}");
        assert_consistent(dir.path());
    }
}

/// Issue 26, SCP: a site whose newest snapshot is older than its newest delta (the site changed
/// since the snapshot was made). The baseline takes the snapshot and records where it stands;
/// incremental applies the newer delta; the mirror then audits clean.
#[test]
fn a_snapshot_older_than_the_newest_delta_leads_to_the_delta() {
    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let b2 = site.page("/blog/2", "2025-12-02T00:00:00Z", "two");
    site.collection(
        "s1.scp",
        Z::Plain,
        "blog",
        None,
        T1,
        &[b1.clone(), b2],
        Sum::Reference,
    );
    let b2v2 = site.page(
        "/blog/2",
        "2026-01-01T12:00:00Z",
        "two, changed after the snapshot",
    );
    site.collection(
        "d2.scp",
        Z::Plain,
        "blog",
        Some(T1),
        T2,
        std::slice::from_ref(&b2v2),
        Sum::Reference,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let s = run_json(&mut baseline(&site.srv.url("/sitemap.xml"), dir.path()), 0);
    assert_eq!(counts(&s), [2, 0, 0, 0, 0], "{s}");
    assert_eq!(s["sync_point"], T1, "{s}");
    let s = run_json(&mut incremental(dir.path()), 0);
    assert_eq!(counts(&s), [0, 1, 0, 0, 0], "{s}");
    assert_eq!(s["sync_point"], T2, "{s}");
    assert_eq!(current_pages(dir.path(), &base)["blog /blog/2"], b2v2);
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

/// A snapshot that does not fit the mirror's file system (here: its inodes, one per page)
/// stops with the one "full" message, saying to look at inodes too; nothing of the collection
/// is committed and the objects it added are taken back; with room, a re-run takes it whole.
#[test]
fn a_snapshot_that_does_not_fit_commits_nothing_and_a_rerun_takes_it() {
    let Some(disk) = Tmpfs::mount_with("size=40m,nr_inodes=80") else {
        return;
    };
    let mut site = Site::new();
    let pages: Vec<String> = (0..200)
        .map(|i| {
            site.page(
                &format!("/p/{i}"),
                "2025-12-01T00:00:00Z",
                &format!("page {i}"),
            )
        })
        .collect();
    site.collection(
        "all.scp.gz",
        Z::Gzip,
        "all",
        None,
        T1,
        &pages,
        Sum::Reference,
    );
    site.sitemap();
    let mirror = disk.0.path().join("mirror");
    let out = baseline(&site.srv.url("/sitemap.xml"), &mirror)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("is full") && err.contains("df -i"), "{err}");
    assert_eq!(count(&mirror, "versions"), 0);
    assert_eq!(count(&mirror, "scp_collections"), 0);
    assert!(walkdir(&mirror.join("objects")).is_empty());

    disk.remount("nr_inodes=2000");
    let s = run_json(&mut baseline(&site.srv.url("/sitemap.xml"), &mirror), 0);
    assert_eq!(counts(&s), [200, 0, 0, 0, 0], "{s}");
    assert_eq!(current_pages(&mirror, &site.base()).len(), 200);
    assert_consistent(&mirror);
}

/// `baseline --dry-run` of an SCP source (refused before issue 19): the newest snapshot is
/// read and verified, each page decided by the rule the baseline applies, and the plan printed
/// with the ResourceSync dry run's marks; nothing is written.
#[test]
fn a_dry_run_prints_the_plan_and_writes_nothing() {
    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let b2 = site.page("/blog/2", "2025-12-02T00:00:00Z", "two");
    let b3 = site.page("/blog/3", "2025-12-03T00:00:00Z", "three");
    site.collection(
        "s1.scp.gz",
        Z::Gzip,
        "all",
        None,
        T1,
        &[b1, b2.clone(), b3],
        Sum::Reference,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let sitemap = site.srv.url("/sitemap.xml");
    let dry = |extra: &[&str]| {
        let out = baseline(&sitemap, &mirror)
            .arg("--dry-run")
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        let mut lines: Vec<String> = stdout_of(&out)
            .lines()
            .map(|l| l.replace(&base, ""))
            .collect();
        lines.sort();
        lines
    };
    // No mirror yet: everything is created, and no mirror is made.
    assert_eq!(dry(&[]), ["+ /blog/1", "+ /blog/2", "+ /blog/3"]);
    assert!(!mirror.exists());
    run_json(&mut baseline(&site.srv.url("/sitemap.xml"), &mirror), 0);
    let before = versions(&mirror, &base);

    // A newer snapshot: /blog/1 gone, /blog/2 newer, /blog/4 new, /blog/3 as it was.
    let b2v2 = site.page("/blog/2", "2026-01-02T00:00:00Z", "two, revised");
    let b3 = site.page("/blog/3", "2025-12-03T00:00:00Z", "three");
    let b4 = site.page("/blog/4", "2026-01-02T00:00:00Z", "four");
    site.collection(
        "s2.scp.gz",
        Z::Gzip,
        "all",
        None,
        T2,
        &[b2v2, b3, b4],
        Sum::Reference,
    );
    site.sitemap();
    assert_eq!(
        dry(&[]),
        [
            "* /blog/2 (modified: 2025-12-02T00:00:00Z -> 2026-01-02T00:00:00Z)",
            "+ /blog/4",
            "- /blog/1 (gone from the source)"
        ]
    );
    let with_delete = dry(&["--delete", "-v"]);
    assert!(
        with_delete.contains(&"- /blog/1 (would be deleted)".to_string()),
        "{with_delete:?}"
    );
    assert!(
        with_delete.contains(&"= /blog/3".to_string()),
        "{with_delete:?}"
    );
    assert_eq!(versions(&mirror, &base), before, "a dry run writes nothing");

    // A snapshot that does not verify is named, and nothing of it is planned.
    site.collection(
        "s3.scp.gz",
        Z::Gzip,
        "all",
        None,
        T3,
        &[site.page("/blog/9", "2026-01-03T00:00:00Z", "nine")],
        Sum::Wrong,
    );
    site.sitemap();
    let out = baseline(&site.srv.url("/sitemap.xml"), &mirror)
        .arg("--dry-run")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let plan = stdout_of(&out);
    assert!(
        plan.contains("! ") && plan.contains("s3.scp.gz rejected:"),
        "{plan}"
    );
    assert!(!plan.contains("/blog/9"), "{plan}");
}

/// `incremental --dry-run` of an SCP source: the deltas not applied yet, each decided against
/// the state the ones before it would leave, and a newer snapshot's gone pages as deletions;
/// nothing is written, and the run after it does what the plan said.
#[test]
fn an_incremental_dry_run_plans_the_deltas_in_order() {
    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let b2 = site.page("/blog/2", "2025-12-02T00:00:00Z", "two");
    site.collection(
        "s1.scp.gz",
        Z::Gzip,
        "all",
        None,
        T1,
        &[b1, b2],
        Sum::Reference,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path();
    run_json(&mut baseline(&site.srv.url("/sitemap.xml"), mirror), 0);
    // Two deltas: /blog/3 created by the first and updated by the second; /blog/2 updated.
    let b3 = site.page("/blog/3", "2026-01-01T10:00:00Z", "three");
    let b3v2 = site.page("/blog/3", "2026-01-02T10:00:00Z", "three, again");
    let b2v2 = site.page("/blog/2", "2026-01-02T11:00:00Z", "two, revised");
    site.collection(
        "d2.scp",
        Z::Plain,
        "all",
        Some(T1),
        T2,
        &[b3],
        Sum::Reference,
    );
    site.collection(
        "d3.scp.gz",
        Z::Gzip,
        "all",
        Some(T2),
        T3,
        &[b3v2, b2v2],
        Sum::Reference,
    );
    site.sitemap();
    let before = versions(mirror, &base);
    let out = incremental(mirror).arg("--dry-run").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let plan: Vec<String> = stdout_of(&out)
        .lines()
        .map(|l| l.replace(&base, ""))
        .collect();
    assert_eq!(
        plan,
        [
            "+ /blog/3",
            "* /blog/2 (modified: 2025-12-02T00:00:00Z -> 2026-01-02T11:00:00Z)",
            "* /blog/3 (modified: 2026-01-01T10:00:00Z -> 2026-01-02T10:00:00Z)",
        ]
    );
    assert_eq!(versions(mirror, &base), before, "a dry run writes nothing");
    // The run does what the plan said.
    let s = run_json(&mut incremental(mirror), 0);
    assert_eq!(counts(&s), [1, 2, 0, 0, 0], "{s}");

    // A newer snapshot without /blog/1: an incremental run deletes it, and its plan says so.
    let b2v2 = site.page("/blog/2", "2026-01-02T11:00:00Z", "two, revised");
    let b3v2 = site.page("/blog/3", "2026-01-02T10:00:00Z", "three, again");
    site.collection(
        "s4.scp.gz",
        Z::Gzip,
        "all",
        None,
        T4,
        &[b2v2, b3v2],
        Sum::Reference,
    );
    site.sitemap();
    let out = incremental(mirror).arg("--dry-run").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let plan: Vec<String> = stdout_of(&out)
        .lines()
        .map(|l| l.replace(&base, ""))
        .collect();
    assert_eq!(plan, ["- /blog/1 (would be deleted)"]);
}

/// One mirror following an SCP source and a ResourceSync source: `audit` without SOURCE
/// compares both (each by its format's rule) in one report, and is clean; `incremental`
/// without SOURCE follows both.
#[test]
fn an_scp_source_beside_a_resourcesync_source_is_audited_and_followed() {
    let mut site = Site::new();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    site.collection("s1.scp.gz", Z::Gzip, "all", None, T1, &[b1], Sum::Reference);
    site.sitemap();
    let rs = crate::server::TestServer::start(crate::server::testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path();
    run_json(&mut baseline(&site.srv.url("/sitemap.xml"), mirror), 0);
    run_json(&mut baseline(&rs.url("/"), mirror), 0);
    for order in [0, 1] {
        let out = rsmirror()
            .args(["audit", "--json", "--mirror"])
            .arg(mirror)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}\n{}",
            stderr_of(&out),
            stdout_of(&out)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let uris: Vec<&str> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["uri"].as_str())
            .collect();
        assert!(uris.iter().any(|u| u.ends_with("/blog/1")), "{uris:?}");
        assert!(uris.iter().any(|u| u.ends_with("/res/a.txt")), "{uris:?}");
        if order == 0 {
            // The other source the most recent: the same report.
            let out = incremental(mirror).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
            run_json(&mut baseline(&site.srv.url("/sitemap.xml"), mirror), 0);
        }
    }
    // status: each source with its collection, the counts per collection adding up.
    let out = rsmirror()
        .args(["status", "--json", "--mirror"])
        .arg(mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sources = st["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2, "{st}");
    assert_eq!(sources[0]["kind"], "scp");
    assert_eq!(sources[1]["kind"], "resourcesync");
    let per = |s: &serde_json::Value, key: &str| -> Vec<u64> {
        s["collections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c[key].as_u64().unwrap())
            .collect()
    };
    assert_eq!(per(&sources[0], "resources_present"), [1]);
    assert_eq!(per(&sources[0], "versions"), [1]);
    assert_eq!(per(&sources[1], "resources_present"), [8]);
    assert_eq!(per(&sources[1], "versions"), [8]);
    assert_eq!(st["versions"], 9);
    // An audit of every source is the whole mirror's, not one source's.
    assert!(sources[0]["last_runs"]["audit"].is_null(), "{st}");
    assert!(sources[1]["last_runs"]["audit"].is_null(), "{st}");
    assert_eq!(st["whole_mirror_runs"]["audit"]["outcome"], "ok");
}

/// Issue 42, 4: a collection dated in the future (`generated="2099-..."`) is taken with a
/// warning, and the section's position is never moved past the time the sitemap was read: a
/// delta the site publishes after it is applied, not skipped as if already covered.
#[test]
fn a_collection_dated_in_the_future_does_not_hide_later_ones() {
    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    site.collection(
        "s1.scp",
        Z::Plain,
        "blog",
        None,
        "2099-01-01T00:00:00Z",
        std::slice::from_ref(&b1),
        Sum::Reference,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let s = run_json(&mut baseline(&site.srv.url("/sitemap.xml"), dir.path()), 0);
    assert_eq!(counts(&s), [1, 0, 0, 0, 0], "{s}");
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("generated 2099-01-01T00:00:00Z")
            && warnings.contains("later than the time the sitemap was read"),
        "{warnings}"
    );
    assert!(
        !s["sync_point"].to_string().contains("2099"),
        "the position stays at the reading: {s}"
    );

    // The site publishes a delta (dated now, as a site with a good clock does).
    let now = jiff::Timestamp::now();
    let leak = |t: jiff::Timestamp| -> &'static str {
        Box::leak(
            t.strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
                .into_boxed_str(),
        )
    };
    let since = leak(now - jiff::SignedDuration::from_hours(1));
    let generated = leak(now + jiff::SignedDuration::from_mins(5));
    let b1v2 = site.page("/blog/1", "2026-01-01T00:00:00Z", "one, changed");
    let b9 = site.page("/blog/9", "2026-01-01T00:00:00Z", "nine, new");
    site.collection(
        "d2.scp",
        Z::Plain,
        "blog",
        Some(since),
        generated,
        &[b1v2.clone(), b9],
        Sum::Reference,
    );
    site.sitemap();
    let s = run_json(&mut incremental(dir.path()), 0);
    assert_eq!(counts(&s)[1], 1, "the delta is applied: {s}");
    assert_eq!(current_pages(dir.path(), &base)["blog /blog/1"], b1v2);
    // The future-dated snapshot is not applied again: the page the delta brought stays.
    let s = run_json(&mut incremental(dir.path()), 0);
    assert_eq!(s["deleted"], 0, "{s}");
    assert!(current_pages(dir.path(), &base).contains_key("blog /blog/9"));
}

/// Issue 72: SCP's timestamp checks (SCP 0.1 "Security Considerations"). A snapshot taken
/// after its `expires` (the specification's own example dates, 2000-01-16) is noticed: a
/// warning and a run problem, the pages still taken. A sitemap that later lists, as the newest
/// snapshot of the section, one older than the mirror applied (an old sitemap served again) is
/// flagged, and nothing of it is applied.
#[test]
fn an_expired_collection_is_noticed_and_a_replayed_one_flagged() {
    let mut site = Site::new();
    let base = site.base();
    site.expires = "2000-01-16T00:00:00Z";
    let b1 = site.page("/blog/1", "2000-01-15T00:00:00Z", "one");
    site.collection(
        "blog-snapshot-2000-01-15.scp.gz",
        Z::Gzip,
        "blog",
        None,
        "2000-01-15T00:00:00Z",
        std::slice::from_ref(&b1),
        Sum::Reference,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let s = run_json(&mut baseline(&site.srv.url("/sitemap.xml"), dir.path()), 0);
    assert_eq!(counts(&s), [1, 0, 0, 0, 0], "{s}");
    let snap = site.srv.url("/blog-snapshot-2000-01-15.scp.gz");
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "{snap}: expired: the sitemap (line 8) gives expires 2000-01-16T00:00:00Z"
        )),
        "{warnings}"
    );
    let problems = last_run_problems(dir.path());
    assert!(
        problems.iter().any(|(uri, class, why)| uri == &snap
            && class == "warning"
            && why.starts_with("expired")),
        "{problems:?}"
    );

    // A newer snapshot, not expired, moves the mirror on.
    site.expires = "2999-01-01T00:00:00Z";
    let b1v2 = site.page("/blog/1", "2000-02-01T00:00:00Z", "one, changed");
    site.collection(
        "blog-snapshot-2000-02-01.scp.gz",
        Z::Gzip,
        "blog",
        None,
        "2000-02-01T00:00:00Z",
        std::slice::from_ref(&b1v2),
        Sum::Reference,
    );
    site.sitemap();
    let s = run_json(&mut incremental(dir.path()), 0);
    assert!(!s["warnings"].to_string().contains("expired"), "{s}");
    assert_eq!(current_pages(dir.path(), &base)["blog /blog/1"], b1v2);

    // The old sitemap is served again: only the January snapshot.
    site.listed
        .retain(|l| l.generated == "2000-01-15T00:00:00Z");
    site.sitemap();
    let s = run_json(&mut incremental(dir.path()), 0);
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "{snap}: replayed? the sitemap (line 8) lists this snapshot of section \\\"blog\\\" generated 2000-01-15T00:00:00Z, older than the one the mirror applied (generated 2000-02-01T00:00:00Z)"
        )),
        "{warnings}"
    );
    assert!(
        last_run_problems(dir.path())
            .iter()
            .any(|(uri, class, why)| uri == &snap
                && class == "warning"
                && why.starts_with("replayed?")),
        "{:?}",
        last_run_problems(dir.path())
    );
    assert_eq!(
        current_pages(dir.path(), &base)["blog /blog/1"],
        b1v2,
        "nothing of the replayed snapshot is applied"
    );
}

/// Issue 42, 6: a page whose `url` is on another host than the site is refused as an
/// out-of-scope Sitemap entry is (named, recorded, never mirrored; exit 3), and the reader's
/// warnings (an unknown block type) are in the run's problems, not only shown with -v.
#[test]
fn a_page_elsewhere_is_refused_and_warnings_are_recorded() {
    let mut site = Site::new();
    let base = site.base();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let elsewhere = site
        .page("/blog/2", "2025-12-01T00:00:00Z", "two")
        .replace(&base, "http://elsewhere.example.net");
    let odd = site
        .page("/blog/3", "2025-12-01T00:00:00Z", "three")
        .replace(
            r#"{"type":"text","text":"three"}"#,
            r#"{"type":"structured","data":{"a":1}}"#,
        );
    site.collection(
        "s1.scp",
        Z::Plain,
        "blog",
        None,
        T1,
        &[b1, elsewhere, odd],
        Sum::Reference,
    );
    site.sitemap();
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&site.srv.url("/sitemap.xml"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("refused: http://elsewhere.example.net/blog/2"),
        "{err}"
    );
    let pages = current_pages(dir.path(), &base);
    assert!(pages.keys().all(|k| !k.contains("elsewhere")), "{pages:?}");
    assert_eq!(pages.len(), 2, "{pages:?}");
    let problems = last_run_problems(dir.path());
    assert!(
        problems
            .iter()
            .any(|(_, class, reason)| class == "warning" && reason.contains("unknown block type")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|(uri, class, _)| class == "refused" && uri.contains("elsewhere")),
        "{problems:?}"
    );
}

/// Issue 42, 6: `inspect` of an SCP sitemap lists its sections and every collection it names
/// (a snapshot or a delta, its section, generated, since, pages), fetching none of them.
#[test]
fn inspect_lists_the_sections_and_collections() {
    let mut site = Site::new();
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    site.collection(
        "s1.scp",
        Z::Plain,
        "blog",
        None,
        T1,
        std::slice::from_ref(&b1),
        Sum::Reference,
    );
    site.collection(
        "d2.scp",
        Z::Plain,
        "blog",
        Some(T1),
        T2,
        std::slice::from_ref(&b1),
        Sum::Reference,
    );
    site.sitemap();
    let out = rsmirror()
        .args(["inspect", &site.srv.url("/sitemap.xml")])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{}{text}", stderr_of(&out));
    assert!(
        text.contains("scp sitemap (sections: blog, docs)"),
        "{text}"
    );
    assert!(text.contains("scp snapshot of section blog"), "{text}");
    assert!(text.contains("scp delta of section blog"), "{text}");
    assert!(text.contains(&format!("from={T1}")), "{text}");
    assert!(!text.contains("plain sitemap"), "{text}");
    assert_eq!(site.srv.count("/s1.scp") + site.srv.count("/d2.scp"), 0);
}

/// `--include`/`--exclude` on SCP pages: a page left out is not applied, and a page the mirror
/// holds that the filter leaves out is not gone from a newer snapshot (nor deleted).
#[test]
fn a_filter_leaves_pages_out_and_never_deletes_them() {
    let mut site = Site::new();
    let base = site.base();
    let p = |n: &str| site.page(&format!("/blog/{n}"), "2025-12-01T00:00:00Z", n);
    let (p1, p2, draft) = (p("1"), p("2"), p("draft-3"));
    site.collection(
        "s1.scp",
        Z::Plain,
        "blog",
        None,
        T1,
        &[p1.clone(), p2.clone(), draft.clone()],
        Sum::Reference,
    );
    site.sitemap();
    let live = |dir: &Path| -> Vec<String> { current_pages(dir, &base).into_keys().collect() };

    // Left out at once: two pages applied, one excluded.
    let filtered = tempfile::tempdir().unwrap();
    let mut cmd = baseline(&site.srv.url("/sitemap.xml"), filtered.path());
    let s = run_json(cmd.args(["--exclude", "draft-*"]), 0);
    assert_eq!(
        (s["created"].as_u64(), s["excluded"].as_u64()),
        (Some(2), Some(1)),
        "{s}"
    );
    assert_eq!(live(filtered.path()), ["blog /blog/1", "blog /blog/2"]);

    // Held, then left out: a newer snapshot without it does not make it gone.
    let held = tempfile::tempdir().unwrap();
    run_json(&mut baseline(&site.srv.url("/sitemap.xml"), held.path()), 0);
    assert_eq!(live(held.path()).len(), 3);
    site.collection(
        "s2.scp",
        Z::Plain,
        "blog",
        None,
        T2,
        &[p1.clone(), p2.clone()],
        Sum::Reference,
    );
    site.sitemap();
    // A dry run plans it so.
    let out = incremental(held.path())
        .args(["--dry-run", "--exclude", "/blog/draft-*"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(!stdout_of(&out).contains("draft-3"), "{}", stdout_of(&out));
    let s = run_json(
        incremental(held.path()).args(["--exclude", "/blog/draft-*"]),
        0,
    );
    assert_eq!(
        (s["gone"].as_u64(), s["deleted"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(live(held.path()).len(), 3, "the page left out stays");
    // Without the filter (forgotten), the next newer snapshot finds it gone and deletes it.
    site.collection(
        "s3.scp",
        Z::Plain,
        "blog",
        None,
        T3,
        &[p1, p2],
        Sum::Reference,
    );
    site.sitemap();
    let s = run_json(incremental(held.path()).arg("--no-filter"), 0);
    assert_eq!(s["deleted"], 1, "{s}");
    assert_eq!(live(held.path()), ["blog /blog/1", "blog /blog/2"]);
}

/// Issue 67, 9: as SCP 0.1's own examples have them, the sitemap on the site names collections
/// on a CDN host (here `localhost`, the site being `127.0.0.1`): they are fetched without
/// `--allow-host`, by baseline, a dry run and audit; a page inside them on the CDN host is
/// still refused (the scope rule is for the pages).
#[test]
fn collections_on_a_cdn_host_are_fetched_and_their_pages_held_to_the_site() {
    let mut site = Site::new();
    let base = site.base();
    let cdn = base.replace("127.0.0.1", "localhost");
    let b1 = site.page("/blog/1", "2025-12-01T00:00:00Z", "one");
    let b2 = site.page("/blog/2", "2025-12-01T00:00:00Z", "two");
    let on_cdn = site
        .page("/blog/3", "2025-12-01T00:00:00Z", "three")
        .replace(&base, &cdn);
    site.collection(
        "s1.scp",
        Z::Gzip,
        "blog",
        None,
        T1,
        &[b1, b2, on_cdn],
        Sum::Reference,
    );
    site.sitemap();
    let sitemap = site.dir.path().join("sitemap.xml");
    let xml = std::fs::read_to_string(&sitemap).unwrap();
    std::fs::write(
        &sitemap,
        xml.replace(&format!("url=\"{base}/"), &format!("url=\"{cdn}/")),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path();

    let out = baseline(&site.srv.url("/sitemap.xml"), m)
        .arg("--dry-run")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(
        stdout_of(&out).contains(&format!("+ {base}/blog/1")),
        "{}",
        stdout_of(&out)
    );

    let out = baseline(&site.srv.url("/sitemap.xml"), m).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("refused: {cdn}/blog/3")), "{err}");
    let pages = current_pages(m, &base);
    assert_eq!(pages.len(), 2, "{pages:?}");
    assert_eq!(site.srv.count("/s1.scp"), 2, "the dry run and the baseline");

    let out = on_mirror(m, &["audit"]);
    let lines = stdout_of(&out);
    assert!(lines.contains(&format!("! {cdn}/blog/3")), "{lines}");
    assert!(!lines.contains("+ ") && !lines.contains("* "), "{lines}");
    assert!(
        !stderr_of(&out).contains("outside the source's scope"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(site.srv.count("/s1.scp"), 3, "audit reads the snapshot");
}
