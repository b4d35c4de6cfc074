//! Categories (the 2012 draft §3.1.7 and §3.2, issue 72): a source built from the draft's own
//! Example 3.9 (a Sitemap whose entries carry `xhtml:link rel="DCTERMS.subject"` and
//! `xhtml:meta name="DC.subject"`) and Example 3.11 (a Sitemap Index whose `<sitemap>` entries
//! aggregate their resources' categories), served on 127.0.0.1. Each version records its
//! categories (`ls --long`, `ls --json`, `log`); `--category` takes only the resources it names,
//! is remembered with the source as `--include` is, and the Index parts whose aggregated
//! categories name none of it are never requested.

use crate::server::{TestServer, PLACEHOLDER};
use crate::support::*;
use std::path::Path;

/// Example 3.11, its broken `xhtml:meta` mended (the draft drops its `<`) and its repeated
/// Frogs link left as written; sitemap1's aggregate also names Fish, which Example 3.9's res2
/// (the Sitemap it aggregates) carries.
const INDEX: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
              xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <sitemap>
      <loc>http://sample.example.org/sitemap1.xml</loc>
      <lastmod>2012-08-08T10:00:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Frogs" title="Frogs"/>
      <xhtml:meta name="DC.subject" content="Crocodiles"/>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Frogs" title="Frogs"/>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Fish" title="Fish"/>
   </sitemap>
   <sitemap>
      <loc>http://sample.example.org/sitemap2.xml</loc>
      <lastmod>2012-08-08T15:00:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Animals" title="Animals"/>
   </sitemap>
</sitemapindex>
"#;

/// Example 3.9 as written (example.com made the test server).
const SITEMAP1: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <url>
      <loc>http://sample.example.org/res1</loc>
      <lastmod>2012-08-08T08:15:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Frogs" title="Frogs"/>
      <xhtml:meta name="DC.subject" content="Crocodiles"/>
   </url>
   <url>
      <loc>http://sample.example.org/res2</loc>
      <lastmod>2012-08-08T13:22:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Fish" title="Fish"/>
   </url>
</urlset>
"#;

/// The part Example 3.11 aggregates as Animals.
const SITEMAP2: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <url>
      <loc>http://sample.example.org/res3</loc>
      <lastmod>2012-08-08T14:00:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Animals" title="Animals"/>
   </url>
</urlset>
"#;

fn source() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let put = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    put("sitemapindex.xml", INDEX);
    put("sitemap1.xml", SITEMAP1);
    put("sitemap2.xml", SITEMAP2);
    put("res1", "a frog and a crocodile\n");
    put("res2", "a fish\n");
    put("res3", "an animal\n");
    dir
}

fn run(args: &[&str], m: &Path) -> (String, String) {
    let out = rsmirror()
        .args(args)
        .arg("--mirror")
        .arg(m)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}\n{}\n{}",
        stderr_of(&out),
        stdout_of(&out)
    );
    (stdout_of(&out), stderr_of(&out))
}

fn names(m: &Path) -> Vec<String> {
    current(m)
        .keys()
        .map(|u| u.rsplit('/').next().unwrap().to_string())
        .collect()
}

#[test]
fn categories_are_recorded_shown_and_chosen_and_unwanted_index_parts_are_not_fetched() {
    let tree = source();
    let srv = TestServer::start(tree.path());
    let index = srv.url("/sitemapindex.xml");
    let dir = tempfile::tempdir().unwrap();

    // Without a filter: every part read, every category recorded with its version.
    let all = dir.path().join("all");
    run(&["baseline", &index, "-q"], &all);
    assert_eq!(names(&all), ["res1", "res2", "res3"]);
    assert_eq!(srv.count("/sitemap2.xml"), 1);
    let (long, _) = run(&["ls", "--long"], &all);
    let res1 = long.lines().find(|l| l.contains("/res1")).unwrap();
    assert!(res1.ends_with("[Frogs, Crocodiles]"), "{long}");
    assert!(
        long.lines()
            .any(|l| l.contains("/res3") && l.ends_with("[Animals]")),
        "{long}"
    );
    let (json, _) = run(&["ls", "--json"], &all);
    let rows: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        rows[0]["categories"],
        serde_json::json!([
            {"name": "DCTERMS.subject", "value": "http://en.wikipedia.org/wiki/Category:Frogs", "title": "Frogs"},
            {"name": "DC.subject", "value": "Crocodiles"}
        ])
    );
    assert_eq!(rows[1]["categories"][0]["title"], "Fish");
    let (log, _) = run(&["log", &srv.url("/res1")], &all);
    assert!(
        log.contains(
            "category DCTERMS.subject: Frogs <http://en.wikipedia.org/wiki/Category:Frogs>"
        ),
        "{log}"
    );
    assert!(log.contains("category DC.subject: Crocodiles"), "{log}");
    let (log, _) = run(&["log", &srv.url("/res1"), "--json"], &all);
    let log: serde_json::Value = serde_json::from_str(&log).unwrap();
    assert_eq!(log["versions"][0]["categories"][1]["value"], "Crocodiles");

    // --category Frogs (by its title): res1 only; sitemap2.xml, which aggregates Animals
    // alone, is never requested; res2 (Fish) is listed and left out.
    srv.clear_requests();
    let frogs = dir.path().join("frogs");
    let (json, _) = run(
        &["baseline", &index, "--category", "Frogs", "--json"],
        &frogs,
    );
    let summary: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(names(&frogs), ["res1"]);
    assert_eq!(srv.count("/sitemap1.xml"), 1);
    assert_eq!(srv.count("/sitemap2.xml"), 0, "{summary}");
    assert_eq!(summary["excluded"], 1, "{summary}");
    assert_eq!(srv.count("/res2"), 0);
    assert_eq!(srv.count("/res3"), 0);
    let warned = summary["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str().unwrap().ends_with(
            "1 Resource List Index part(s) not fetched: the categories they aggregate \
             (2012 draft §3.2) name none of --category 'Frogs'",
        )
    });
    assert!(warned, "{summary}");

    // Remembered with the source: the next run takes the same, skips the same part, and
    // deletes nothing it left out.
    let (list, _) = run(&["source", "list"], &frogs);
    assert!(list.contains("--category 'Frogs'"), "{list}");
    srv.clear_requests();
    run(&["baseline", &index, "--delete", "-q"], &frogs);
    assert_eq!(names(&frogs), ["res1"]);
    assert!(tombstoned(&frogs).is_empty());
    assert_eq!(srv.count("/sitemap2.xml"), 0);

    // By its URI, another category: Animals takes res3 from sitemap2.xml, and skips none.
    srv.clear_requests();
    let animals = dir.path().join("animals");
    let uri = "http://en.wikipedia.org/wiki/Category:Animals";
    run(&["baseline", &index, "--category", uri, "-q"], &animals);
    assert_eq!(names(&animals), ["res3"]);
    assert_eq!(srv.count("/sitemap2.xml"), 1);
    assert_eq!(srv.count("/res1"), 0);
    let _ = PLACEHOLDER;
}

#[test]
fn an_empty_category_is_refused_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let out = rsmirror()
        .args(["baseline", "http://127.0.0.1:9/x.xml", "--category", " "])
        .arg("--mirror")
        .arg(dir.path().join("m"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("--category ''"),
        "{}",
        stderr_of(&out)
    );
}
