//! `rsmirror feed` (issue 8, seed 001): the Atom feed of the changes a mirror applied, after a
//! baseline and two incremental runs of a ResourceSync source, parsed by a real feed parser
//! (`feed-rs`, Atom and JSON Feed): one entry per run that changed something, stable ids (the
//! same on a second mirror of the same source), `updated` = the latest change in the entry,
//! a link per changed resource; changes without a datetime not reported; `--since`; byte-identical
//! output on every run; a usage error when the mirror follows several collections.

use crate::server::TestServer;
use crate::support::*;
use std::path::Path;

const T0: &str = "2026-03-01T00:00:00Z";

fn ok(cmd: &mut assert_cmd::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    out
}

fn feed(mirror: &Path) -> assert_cmd::Command {
    let mut c = rsmirror();
    c.args(["feed", "--mirror"]).arg(mirror);
    c
}

/// Add a change-list entry without a datetime (seed 001: such changes are not reported), with
/// a `lastmod` when given (IFCC-0001: a generator ignores it all the same).
fn add_timeless_entry(t: &Tree, file: &str, name: &str, lastmod: Option<&str>) {
    use sha2::Digest as _;
    let bytes = std::fs::read(t.path().join("res").join(name)).unwrap();
    let lastmod = lastmod
        .map(|l| format!("<lastmod>{l}</lastmod>"))
        .unwrap_or_default();
    let entry = format!(
        "<url><loc>{ORIGIN}/res/{name}</loc>{lastmod}<rs:md change=\"updated\" hash=\"sha-256:{}\" length=\"{}\"/></url>\n</urlset>",
        hex::encode(sha2::Sha256::digest(&bytes)),
        bytes.len()
    );
    let path = t.path().join(file);
    let xml = std::fs::read_to_string(&path)
        .unwrap()
        .replace("</urlset>", &entry);
    std::fs::write(path, xml).unwrap();
}

/// Seconds since the epoch of an RFC 3339 time.
fn secs(t: &str) -> i64 {
    t.parse::<jiff::Timestamp>().unwrap().as_second()
}

/// A source, two mirrors of it baselined and followed through the same two incremental runs.
fn followed_twice() -> (Tree, TestServer, tempfile::TempDir, tempfile::TempDir) {
    let t = Tree::new();
    for i in 1..=5 {
        t.put(&format!("r{i}"), format!("resource {i}, v1\n").as_bytes());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3", "r4", "r5"]);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for m in [a.path(), b.path()] {
        ok(&mut baseline(&srv.url("/capabilitylist.xml"), m));
    }

    // Run 1: one of each kind of change.
    t.put("r1", b"resource 1, v2\n");
    t.put("r6", b"resource 6, v1\n");
    t.remove("r2");
    let run1 = [
        ("r1", "updated", "2026-03-01T01:00:00Z"),
        ("r6", "created", "2026-03-01T02:00:00Z"),
        ("r2", "deleted", "2026-03-01T03:00:00Z"),
    ];
    t.change_list("changelist.xml", T0, None, &run1);
    for m in [a.path(), b.path()] {
        ok(&mut incremental(m));
    }

    // Run 2: the open list grows; one new entry has no datetime.
    t.put("r3", b"resource 3, v2\n");
    t.put("r7", b"resource 7, v1\n");
    t.put("r4", b"resource 4, v2\n");
    let mut run2 = run1.to_vec();
    run2.push(("r3", "updated", "2026-03-02T00:00:00Z"));
    run2.push(("r7", "created", "2026-03-02T01:00:00Z"));
    t.change_list("changelist.xml", T0, None, &run2);
    add_timeless_entry(&t, "changelist.xml", "r4", None);
    // Issue 67, 10: a lastmod is no datetime: applied, never in the feed.
    t.put("r5", b"resource 5, v2\n");
    add_timeless_entry(&t, "changelist.xml", "r5", Some("2026-03-02T02:00:00Z"));
    for m in [a.path(), b.path()] {
        ok(&mut incremental(m));
    }
    (t, srv, a, b)
}

#[test]
fn the_atom_feed_of_a_baseline_and_two_incremental_runs() {
    let (_t, srv, a, b) = followed_twice();
    let base = srv.base();
    let out = ok(&mut feed(a.path()));
    let atom = out.stdout.clone();
    let parsed = feed_rs::parser::parse(&atom[..])
        .unwrap_or_else(|e| panic!("not a feed: {e}\n{}", String::from_utf8_lossy(&atom)));
    assert_eq!(parsed.feed_type, feed_rs::model::FeedType::Atom);

    // RFC 4287 §4.1.1: id, title, updated, and an author (here on the feed).
    assert_eq!(parsed.id, srv.url("/capabilitylist.xml"));
    assert!(parsed.title.as_ref().is_some_and(|t| !t.content.is_empty()));
    assert!(!parsed.authors.is_empty());
    assert_eq!(
        parsed.updated.map(|d| d.timestamp()),
        Some(secs("2026-03-02T01:00:00Z"))
    );

    // One entry per incremental run, newest first; the timeless r4 is not reported.
    assert_eq!(
        parsed.entries.len(),
        2,
        "{}",
        String::from_utf8_lossy(&atom)
    );
    let (second, first) = (&parsed.entries[0], &parsed.entries[1]);
    for e in &parsed.entries {
        assert!(e.id.starts_with("urn:uuid:"), "{}", e.id);
        assert!(e.title.as_ref().is_some_and(|t| !t.content.is_empty()));
        assert!(
            e.content.is_some(),
            "RFC 4287 §4.1.1.1: content or an alternate link"
        );
    }
    assert_ne!(first.id, second.id);
    assert_eq!(
        first.updated.map(|d| d.timestamp()),
        Some(secs("2026-03-01T03:00:00Z"))
    );
    assert_eq!(
        second.updated.map(|d| d.timestamp()),
        Some(secs("2026-03-02T01:00:00Z"))
    );
    let links = |e: &feed_rs::model::Entry| -> Vec<(String, Option<String>)> {
        e.links
            .iter()
            .filter(|l| l.rel.as_deref() == Some("related"))
            .map(|l| (l.href.clone(), l.title.clone()))
            .collect()
    };
    assert_eq!(
        links(first),
        vec![
            (format!("{base}/res/r1"), Some("updated".into())),
            (format!("{base}/res/r6"), Some("created".into())),
            (format!("{base}/res/r2"), Some("deleted".into())),
        ]
    );
    assert_eq!(
        links(second),
        vec![
            (format!("{base}/res/r3"), Some("updated".into())),
            (format!("{base}/res/r7"), Some("created".into())),
        ]
    );
    let text = String::from_utf8_lossy(&atom);
    assert!(
        !text.contains("/res/r4"),
        "a change without a datetime is not news"
    );

    // Byte-identical on every run, to stdout or to a file; the same ids on the other mirror.
    assert_eq!(ok(&mut feed(a.path())).stdout, atom);
    let file = a.path().join("feed.atom");
    ok(feed(a.path()).arg("--output").arg(&file));
    assert_eq!(std::fs::read(&file).unwrap(), atom);
    ok(feed(a.path()).arg("--output").arg(&file));
    assert_eq!(std::fs::read(&file).unwrap(), atom);
    let other = feed_rs::parser::parse(&ok(&mut feed(b.path())).stdout[..]).unwrap();
    let ids = |f: &feed_rs::model::Feed| f.entries.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&other), ids(&parsed));

    // A run that changes nothing adds no entry and changes no id.
    ok(&mut incremental(a.path()));
    assert_eq!(ok(&mut feed(a.path())).stdout, atom);

    // --since WHEN keeps the entries of the runs after it, whole, by the mirror's clock as
    // every WHEN: run 2 (the first incremental) brought the first entry, run 3 the second.
    let since = |when: &str| {
        let out = ok(feed(a.path()).args(["--since", when]));
        ids(&feed_rs::parser::parse(&out.stdout[..]).unwrap())
    };
    assert_eq!(since("run:2"), vec![second.id.clone()]);
    assert_eq!(since("run:1"), ids(&parsed));
    assert!(since("run:3").is_empty());
    assert!(since("run:-1").is_empty());
    // The source's event times (2026-03) are not the mirror's clock: every run came later.
    assert_eq!(since("2026-03-05T00:00:00Z"), ids(&parsed));
    assert!(since("now").is_empty());

    // JSON Feed 1.1: the same entries.
    let out = ok(feed(a.path()).args(["--format", "json"]));
    let json = feed_rs::parser::parse(&out.stdout[..]).unwrap();
    assert_eq!(json.feed_type, feed_rs::model::FeedType::JSON);
    assert_eq!(ids(&json), ids(&parsed));
    assert_eq!(
        json.entries
            .iter()
            .map(|e| e.updated.map(|d| d.timestamp()))
            .collect::<Vec<_>>(),
        vec![
            Some(secs("2026-03-02T01:00:00Z")),
            Some(secs("2026-03-01T03:00:00Z"))
        ]
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["items"][1]["_rsmirror"]["deleted"][0]["url"],
        format!("{base}/res/r2")
    );
    assert_eq!(
        ok(feed(a.path()).args(["--format", "json"])).stdout,
        out.stdout
    );
}

#[test]
fn several_collections_need_collection() {
    let (_t, srv, a, _b) = followed_twice();
    let other = Tree::new();
    other.put("x", b"x\n");
    other.resource_list(T0, &["x"]);
    let srv2 = TestServer::start(other.path());
    ok(&mut baseline(&srv2.url("/resourcelist.xml"), a.path()));

    let out = feed(a.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr_of(&out));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("give --collection with one of:"),
        "{stderr}"
    );
    assert!(stderr.contains(&srv.url("/capabilitylist.xml")), "{stderr}");
    assert!(stdout_of(&out).is_empty());

    let out = ok(feed(a.path()).args(["--collection", &srv.url("/capabilitylist.xml")]));
    let parsed = feed_rs::parser::parse(&out.stdout[..]).unwrap();
    assert_eq!(parsed.entries.len(), 2);
    let out = feed(a.path())
        .args(["--collection", "http://nowhere.example/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("not a collection or source of this mirror"));
}

#[test]
fn no_mirror_and_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let out = feed(&dir.path().join("none")).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "stderr: {}", stderr_of(&out));
    assert!(stderr_of(&out).contains("no mirror at"));
    let out = feed(dir.path())
        .args(["--since", "a fortnight ago"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("--since"), "{}", stderr_of(&out));
    let out = feed(dir.path()).args(["--format", "rss"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Seed 001: a collection is known by its Capability List's `rs:ln rel="describes"`.
#[test]
fn the_feed_id_is_the_capability_lists_describes_link() {
    let t = Tree::new();
    t.put("a", b"a v1\n");
    t.resource_list("2026-05-01T00:00:00Z", &["a"]);
    t.change_list("changelist.xml", "2026-05-01T00:00:00Z", None, &[]);
    t.capability_list("changelist.xml");
    let cl = std::fs::read_to_string(t.path().join("capabilitylist.xml")).unwrap();
    let cl = cl.replacen(
        "<rs:md capability=\"capabilitylist\"/>",
        "<rs:ln rel=\"describes\" href=\"http://collections.example.net/texts\"/>\n<rs:md capability=\"capabilitylist\"/>",
        1,
    );
    std::fs::write(t.path().join("capabilitylist.xml"), cl).unwrap();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/capabilitylist.xml"), dir.path()));
    t.put("a", b"a v2\n");
    t.change_list(
        "changelist.xml",
        "2026-05-01T00:00:00Z",
        None,
        &[("a", "updated", "2026-05-01T01:00:00Z")],
    );
    ok(&mut incremental(dir.path()));
    let out = ok(&mut feed(dir.path()));
    let atom = String::from_utf8(out.stdout).unwrap();
    assert!(
        atom.contains("<id>http://collections.example.net/texts</id>"),
        "{atom}"
    );
    assert_eq!(atom.matches("<entry>").count(), 1, "{atom}");
}

/// Issue 23: the changes a baseline re-run applies (an update, a delete) are an entry of the
/// feed too, dated by the source (the new lastmod; the list's `at` for the delete); the first
/// baseline, which only establishes the mirror, is not.
#[test]
fn a_baseline_re_run_that_changed_something_is_an_entry() {
    use md5::Digest as _;
    let t = Tree::new();
    let list = |at: &str, entries: &[(&str, &str)]| {
        let body: String = entries
            .iter()
            .map(|(n, lastmod)| {
                let bytes = std::fs::read(t.path().join("res").join(n)).unwrap();
                format!(
                    "<url><loc>{ORIGIN}/res/{n}</loc><lastmod>{lastmod}</lastmod>\
                     <rs:md hash=\"md5:{}\" length=\"{}\"/></url>\n",
                    hex::encode(md5::Md5::digest(&bytes)),
                    bytes.len()
                )
            })
            .collect();
        std::fs::write(
            t.path().join("resourcelist.xml"),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
                 xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
                 <rs:md capability=\"resourcelist\" at=\"{at}\"/>\n{body}</urlset>\n"
            ),
        )
        .unwrap();
    };
    for n in ["a", "b", "c"] {
        t.put(n, format!("{n} v1\n").as_bytes());
    }
    let day1 = "2026-03-01T00:00:00Z";
    list(day1, &[("a", day1), ("b", day1), ("c", day1)]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    ok(&mut baseline(&srv.url("/resourcelist.xml"), dir.path()));
    let parsed = feed_rs::parser::parse(&ok(&mut feed(dir.path())).stdout[..]).unwrap();
    assert!(parsed.entries.is_empty(), "the first baseline is no change");

    t.put("b", b"b v2\n");
    list(
        "2026-03-03T00:00:00Z",
        &[("a", day1), ("b", "2026-03-02T00:00:00Z")],
    );
    ok(baseline(&srv.url("/resourcelist.xml"), dir.path()).arg("--delete"));
    let atom = ok(&mut feed(dir.path())).stdout;
    let parsed = feed_rs::parser::parse(&atom[..]).unwrap();
    assert_eq!(
        parsed.entries.len(),
        1,
        "{}",
        String::from_utf8_lossy(&atom)
    );
    let text = String::from_utf8_lossy(&atom);
    assert!(text.contains("/res/b") && text.contains("/res/c"), "{text}");
    assert!(
        !text.contains("/res/a<") && !text.contains("/res/a\""),
        "{text}"
    );
    assert_eq!(
        parsed.entries[0].updated.map(|d| d.timestamp()),
        Some(secs("2026-03-03T00:00:00Z"))
    );
}

// Issue 70: the feeds served by `rsmirror serve` and written by `feed --output-dir`, judged by
// the W3C Feed Validator (vendored in tests/peers/feedvalidator/) and feedparser.

/// One JSON object a line of a peer script's stdout.
fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The W3C Feed Validator over `args` (URLs, or `--base URL DIR`): every document it read,
/// each with no error.
fn w3c_validate(args: &[String]) -> Vec<serde_json::Value> {
    let python = crate::peers::python_with("lxml, html5lib, rdflib");
    let out = std::process::Command::new(python)
        .arg(crate::peers::script("feedvalidator/validate.py"))
        .args(args)
        .output()
        .unwrap();
    let docs = json_lines(&out);
    for d in &docs {
        eprintln!("the W3C Feed Validator: {d}");
        assert_eq!(
            d["errors"].as_array().map(Vec::len),
            Some(0),
            "the W3C Feed Validator: {d}"
        );
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    docs
}

/// The `href` of every `<link rel="REL" href="..."/>` of an Atom document.
fn links(atom: &str, rel: &str) -> Vec<String> {
    atom.split(&format!("<link rel=\"{rel}\" href=\""))
        .skip(1)
        .map(|s| s.split('"').next().unwrap().replace("&amp;", "&"))
        .collect()
}

/// The entry ids of an Atom document, in its order.
fn entry_ids(atom: &str) -> Vec<String> {
    feed_rs::parser::parse(atom.as_bytes())
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.id)
        .collect()
}

#[test]
#[cfg_attr(
    any(missing = "feedvalidator", missing = "feedparser"),
    ignore = "lxml, html5lib, rdflib (the W3C Feed Validator's imports) or feedparser missing; .ci/run installs them"
)]
fn served_feeds_pass_the_w3c_validator_feedparser_reads_them_and_etags_give_304() {
    let (_t, _srv, a, _b) = followed_twice();
    let served = crate::serve::Served::start(
        a.path(),
        &[
            "--feed-archive-size",
            "1",
            "--feed-hub",
            "http://127.0.0.1:9/hub",
        ],
    );
    let base = served.base();
    assert_eq!(served.get("/feeds").status, 301);
    let index = served.get("/feeds/");
    assert_eq!(index.status, 200);
    assert!(index
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    let opml = served.get("/feeds/index.opml");
    assert_eq!(opml.status, 200);
    let opml = opml.text();
    // One source with one collection: two feeds, each linked from the index page.
    let currents: Vec<String> = opml
        .split("xmlUrl=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_string())
        .collect();
    assert_eq!(currents.len(), 2, "{opml}");
    assert!(currents.iter().any(|u| u.contains("/feeds/source/")));
    assert!(currents.iter().any(|u| u.contains("/feeds/collection/")));
    let mut atoms = Vec::new();
    for current in &currents {
        let path = current.strip_prefix(&base).unwrap();
        assert!(index.text().contains(&path["/feeds/".len()..]), "{path}");
        let got = served.get(path);
        assert_eq!(got.status, 200);
        assert_eq!(
            got.header("content-type"),
            Some("application/atom+xml; charset=utf-8")
        );
        let text = got.text();
        assert_eq!(links(&text, "self"), std::slice::from_ref(current));
        assert_eq!(links(&text, "hub"), ["http://127.0.0.1:9/hub"]);
        // Two entries, one to an archive: the current document holds the newest, and links
        // archive 2, which links archive 1 (RFC 5005).
        assert_eq!(entry_ids(&text).len(), 1);
        let mut chain = vec![current.clone()];
        let mut at = text.clone();
        while let Some(prev) = links(&at, "prev-archive").pop() {
            let got = served.get(prev.strip_prefix(&base).unwrap());
            assert_eq!(got.status, 200, "{prev}");
            assert!(got.header("cache-control").unwrap().contains("immutable"));
            at = got.text();
            assert!(at.contains("<fh:archive/>"));
            assert_eq!(links(&at, "current"), std::slice::from_ref(current));
            assert!(links(&at, "hub").is_empty());
            chain.push(prev);
        }
        assert_eq!(chain.len(), 3, "{chain:?}");
        assert!(chain[2].ends_with("/archive/1.atom"));
        // The archives hold every entry once.
        let mut all: Vec<String> = chain[1..]
            .iter()
            .flat_map(|u| entry_ids(&served.get(u.strip_prefix(&base).unwrap()).text()))
            .collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 2);
        // The JSON Feed: the same entries, its own self link and hub; pages to older items.
        let json = served.get(&path.replace(".atom", ".json"));
        assert_eq!(
            json.header("content-type"),
            Some("application/feed+json; charset=utf-8")
        );
        let j: serde_json::Value = serde_json::from_slice(&json.body).unwrap();
        assert_eq!(j["version"], "https://jsonfeed.org/version/1.1");
        assert_eq!(j["feed_url"], current.replace(".atom", ".json"));
        assert_eq!(j["hubs"][0]["url"], "http://127.0.0.1:9/hub");
        assert!(j["next_url"].as_str().unwrap().ends_with("/archive/2.json"));
        assert_eq!(j["items"][0]["id"], entry_ids(&text)[0]);
        // A JSON Feed parser (feed-rs) reads it: the same entries as the Atom document.
        let parsed = feed_rs::parser::parse(&json.body[..]).unwrap();
        assert_eq!(parsed.feed_type, feed_rs::model::FeedType::JSON);
        let ids: Vec<String> = parsed.entries.into_iter().map(|e| e.id).collect();
        assert_eq!(ids, entry_ids(&text));
        let tag = json.header("etag").unwrap();
        let json_path = path.replace(".atom", ".json");
        let again = served.request("GET", &json_path, &[("If-None-Match", tag)]);
        assert_eq!(again.status, 304);
        let head = served.request("HEAD", &json_path, &[]);
        assert_eq!(head.status, 200);
        assert_eq!(head.header("etag"), Some(tag));
        atoms.extend(chain);
    }
    assert_eq!(
        served.get("/feeds/source/nothing-00000000.atom").status,
        404
    );
    let archive3 = atoms[0].replace(".atom", "/archive/3.atom");
    assert_eq!(
        served.get(archive3.strip_prefix(&base).unwrap()).status,
        404
    );

    // Conditional requests, by ETag and by date; a stale ETag gets the document.
    let path = currents[0].strip_prefix(&base).unwrap();
    let first = served.get(path);
    let etag = first.header("etag").unwrap().to_string();
    let modified = first.header("last-modified").unwrap().to_string();
    let again = served.request("GET", path, &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let by_date = served.request("GET", path, &[("If-Modified-Since", &modified)]);
    assert_eq!(by_date.status, 304);
    let stale = served.request("GET", path, &[("If-None-Match", "\"0000\"")]);
    assert_eq!(stale.status, 200);
    assert_eq!(stale.body, first.body);

    // The W3C Feed Validator fetches every Atom document and the OPML file: no error.
    let mut docs = atoms.clone();
    docs.push(format!("{base}/feeds/index.opml"));
    assert_eq!(w3c_validate(&docs).len(), docs.len());

    // feedparser reads every entry of every document, and its second request, with the ETag
    // (or the Last-Modified) it was given, gets 304.
    let python = crate::peers::python_with("feedparser");
    let out = std::process::Command::new(python)
        .arg(crate::peers::script("feedparser_check.py"))
        .args(&atoms)
        .output()
        .unwrap();
    let read = json_lines(&out);
    assert_eq!(read.len(), atoms.len(), "{}", stderr_of(&out));
    for (r, url) in read.iter().zip(&atoms) {
        assert_eq!(r["status"], 200, "{r}");
        assert_eq!(r["bozo"], false, "{r}");
        assert_eq!(r["version"], "atom10", "{r}");
        let want = entry_ids(&served.get(url.strip_prefix(&base).unwrap()).text());
        assert_eq!(r["ids"], serde_json::json!(want), "{r}");
        assert_eq!(r["again"], 304, "{r}");
        assert_eq!(r["again_by_date"], 304, "{r}");
    }
}

/// Every file under `dir` with its inode and mtime (a rewrite renames a new file in: both
/// change).
fn stamps(dir: &Path) -> std::collections::BTreeMap<String, (u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt as _;
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                todo.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, (m.ino(), m.modified().unwrap()));
            }
        }
    }
    out
}

#[test]
#[cfg_attr(
    missing = "feedvalidator",
    ignore = "lxml, html5lib or rdflib missing (the W3C Feed Validator's imports; .ci/run installs them)"
)]
fn output_dir_writes_every_feed_and_rewrites_only_what_changed() {
    let (t, _srv, a, _b) = followed_twice();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("feeds");
    const BASE: &str = "https://me.example.org/feeds";
    let write = || {
        let mut c = feed(a.path());
        c.arg("--output-dir")
            .arg(&dir)
            .args(["--base-url", BASE, "--archive-size", "1"]);
        ok(&mut c)
    };
    // --output-dir needs the URL it is published at.
    let no_base = feed(a.path())
        .arg("--output-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(no_base.status.code(), Some(2));
    assert!(stderr_of(&no_base).contains("--base-url"));
    write();
    let first = stamps(&dir);
    let names: Vec<&str> = first.keys().map(String::as_str).collect();
    // Two feeds (the source's, the collection's), each current and two archives, in Atom and
    // JSON; the index page and the OPML file.
    assert_eq!(names.len(), 2 * 3 * 2 + 2, "{names:?}");
    assert!(names.contains(&"index.html") && names.contains(&"index.opml"));
    let opml = std::fs::read_to_string(dir.join("index.opml")).unwrap();
    for name in names
        .iter()
        .filter(|n| n.ends_with(".atom") && !n.contains("/archive/"))
    {
        assert!(
            opml.contains(&format!("xmlUrl=\"{BASE}/{name}\"")),
            "{name}"
        );
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(links(&text, "self"), [format!("{BASE}/{name}")]);
    }
    // Every Atom document and the OPML file, validated as published at BASE: no error.
    let validated = w3c_validate(&["--base".into(), BASE.into(), dir.display().to_string()]);
    assert_eq!(validated.len(), 2 * 3 + 1);

    // Again, nothing changed: no file is touched.
    write();
    assert_eq!(stamps(&dir), first, "a second run rewrote a file");

    // A run with one new change: the two current documents (Atom and JSON) of the collection
    // and of its source, and the index page, are rewritten; archive 3 of each is new; the
    // archives already written and the OPML file are untouched.
    t.put("r8", b"resource 8, v1\n");
    let mut run3 = vec![
        ("r1", "updated", "2026-03-01T01:00:00Z"),
        ("r6", "created", "2026-03-01T02:00:00Z"),
        ("r2", "deleted", "2026-03-01T03:00:00Z"),
        ("r3", "updated", "2026-03-02T00:00:00Z"),
        ("r7", "created", "2026-03-02T01:00:00Z"),
    ];
    run3.push(("r8", "created", "2026-03-03T00:00:00Z"));
    t.change_list("changelist.xml", T0, None, &run3);
    ok(&mut incremental(a.path()));
    write();
    let after = stamps(&dir);
    let mut rewritten: Vec<&str> = first
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(v))
        .map(|(k, _)| k.as_str())
        .collect();
    rewritten.sort();
    let mut want: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !n.contains("/archive/") && *n != "index.opml")
        .collect();
    want.sort();
    assert_eq!(rewritten, want);
    let new: Vec<&String> = after.keys().filter(|k| !first.contains_key(*k)).collect();
    assert_eq!(new.len(), 4, "{new:?}");
    assert!(new.iter().all(|n| n.contains("/archive/3.")), "{new:?}");
    w3c_validate(&["--base".into(), BASE.into(), dir.display().to_string()]);
}
