//! Sitemap Update Syndication (IFCC-0001, seed 001), issue 70: a site built from the
//! proposal's own examples — a Source Description at `/.well-known/resourcesync` with its
//! `describedby`, Capability Lists with `describes` and `describedby`, a Change List Index of
//! Change Lists, entries without `datetime`, a collection whose Capability List names no Change
//! List — followed by `baseline` and `incremental` alone (no Resource List), its feeds parsed by
//! a real feed parser (`feed-rs`). The feed's changes equal what the proposal's "Checking for
//! Updates" steps give, computed here from the documents the test wrote.

use crate::server::TestServer;
use crate::support::*;
use std::path::Path;

const NS: &str = r#"xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/""#;
const LEFT_OUT: &str = "no changes can be determined";

/// One change a Change List gives: (path, change, datetime; None: none given).
type Given = (&'static str, &'static str, Option<&'static str>);

struct Site {
    dir: tempfile::TempDir,
    srv: TestServer,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let srv = TestServer::start(dir.path());
        Site { dir, srv }
    }

    fn url(&self, path: &str) -> String {
        self.srv.url(path)
    }

    fn put(&self, path: &str, text: &str) {
        let file = self.dir.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }

    /// The proposal's example Source Description, with a third collection: `my-shrine` (its
    /// `describedby` on the entry and in the Capability List), `profile` (Dublin Core
    /// metadata), `gallery` (no Change List).
    fn source_description(&self) {
        let u = |p: &str| self.url(p);
        self.put(
            "/.well-known/resourcesync",
            &format!(
                r#"<urlset {NS}>
  <rs:ln rel="describedby" href="{}"/>
  <rs:md capability="description"/>
  <url>
    <loc>{}</loc>
    <rs:md capability="capabilitylist"/>
    <rs:ln rel="describes" href="{}"/>
    <rs:ln rel="describedby" href="{}"/>
  </url>
  <url><loc>{}</loc><rs:md capability="capabilitylist"/><rs:ln rel="describes" href="{}"/></url>
  <url><loc>{}</loc><rs:md capability="capabilitylist"/><rs:ln rel="describes" href="{}"/></url>
</urlset>"#,
                u("/info-about-my-website.html"),
                u("/my-shrine/capabilitylist.xml"),
                u("/my-shrine/"),
                u("/my-shrine/info-about-my-shrine.xml"),
                u("/profile/capabilitylist.xml"),
                u("/profile/"),
                u("/gallery/capabilitylist.xml"),
                u("/gallery/"),
            ),
        );
        self.put(
            "/info-about-my-website.html",
            "<!DOCTYPE html><html><head><meta charset=utf-8><title>Kibi&#8217;s  site</title>\
             <meta name=\"author\" content=\"Kibi &amp; co\"></head><body><p>hi</body></html>",
        );
        self.put(
            "/my-shrine/info-about-my-shrine.xml",
            r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>My Shrine</title><author><name>Kibi</name></author></feed>"#,
        );
        // The proposal's example Capability List (its describedby differs from the entry's:
        // the Capability List's own wins).
        self.put(
            "/my-shrine/capabilitylist.xml",
            &format!(
                r#"<urlset {NS}>
  <rs:ln rel="up" href="{}"/>
  <rs:ln rel="describes" href="{}"/>
  <rs:ln rel="describedby" href="{}"/>
  <rs:md capability="capabilitylist"/>
  <url><loc>{}</loc><rs:md capability="changelist"/></url>
</urlset>"#,
                u("/.well-known/resourcesync"),
                u("/my-shrine/"),
                u("/my-shrine/info-about-my-shrine.xml"),
                u("/my-shrine/changelist.xml"),
            ),
        );
        self.put(
            "/profile/capabilitylist.xml",
            &format!(
                r#"<urlset {NS}>
  <rs:ln rel="up" href="{}"/>
  <rs:ln rel="describes" href="{}"/>
  <rs:ln rel="describedby" href="{}"/>
  <rs:md capability="capabilitylist"/>
  <url><loc>{}</loc><rs:md capability="changelist"/></url>
</urlset>"#,
                u("/.well-known/resourcesync"),
                u("/profile/"),
                u("/profile/dc.xml"),
                u("/profile/changelist.xml"),
            ),
        );
        self.put(
            "/profile/dc.xml",
            r#"<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:dc="http://purl.org/dc/elements/1.1/"><rdf:Description><dc:title>Kibi's card</dc:title><dc:creator>K. Ibi</dc:creator></rdf:Description></rdf:RDF>"#,
        );
        // A hand-written quirk: no describes, no up, no changelist.
        self.put(
            "/gallery/capabilitylist.xml",
            &format!(r#"<urlset {NS}><rs:md capability="capabilitylist"/></urlset>"#),
        );
    }

    /// A Change List at `path` with the changes `given` (each page exists, with some bytes;
    /// the test server serves files, so pages are `.html`, not the proposal's folders).
    fn change_list(&self, path: &str, up: &str, md: &str, given: &[Given]) {
        let mut x = format!("<urlset {NS}>\n  <rs:ln rel=\"up\" href=\"{}\"/>\n  <rs:md capability=\"changelist\" {md}/>\n", self.url(up));
        for (page, change, datetime) in given {
            self.put(page, &format!("{page} as of {datetime:?}\n"));
            let dt = datetime
                .map(|d| format!(" datetime=\"{d}\""))
                .unwrap_or_default();
            x.push_str(&format!(
                "  <url><loc>{}</loc><rs:md change=\"{change}\"{dt}/></url>\n",
                self.url(page)
            ));
        }
        x.push_str("</urlset>\n");
        self.put(path, &x);
    }

    /// A Change List Index of (path, from, until).
    fn change_list_index(&self, path: &str, up: &str, lists: &[(&str, &str, Option<&str>)]) {
        let mut x = format!("<sitemapindex {NS}>\n  <rs:ln rel=\"up\" href=\"{}\"/>\n  <rs:md capability=\"changelist\" from=\"1972-12-31T00:00:00Z\"/>\n", self.url(up));
        for (list, from, until) in lists {
            let until = until.map(|u| format!(" until=\"{u}\"")).unwrap_or_default();
            x.push_str(&format!(
                "  <sitemap><loc>{}</loc><rs:md capability=\"changelist\" from=\"{from}\"{until}/></sitemap>\n",
                self.url(list)
            ));
        }
        x.push_str("</sitemapindex>\n");
        self.put(path, &x);
    }
}

fn run(cmd: &mut assert_cmd::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    out
}

fn feed(mirror: &Path, args: &[&str]) -> feed_rs::model::Feed {
    let mut c = rsmirror();
    c.args(["feed", "--mirror"]).arg(mirror).args(args);
    let out = run(&mut c);
    feed_rs::parser::parse(&out.stdout[..])
        .unwrap_or_else(|e| panic!("not a feed: {e}\n{}", String::from_utf8_lossy(&out.stdout)))
}

/// The changes the feed of `args` reports, as (URL, change, time of the change), sorted: read
/// from its JSON Feed twin, whose items name each change with its datetime; the Atom feed's
/// entries carry the same ids.
fn reported(mirror: &Path, args: &[&str]) -> Vec<(String, String, i64)> {
    let atom = feed(mirror, args);
    let mut c = rsmirror();
    c.args(["feed", "--format", "json", "--mirror"])
        .arg(mirror)
        .args(args);
    let doc: serde_json::Value = serde_json::from_slice(&run(&mut c).stdout).unwrap();
    let items = doc["items"].as_array().unwrap();
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        atom.entries
            .iter()
            .map(|e| e.id.as_str())
            .collect::<Vec<_>>()
    );
    let mut v = Vec::new();
    for item in items {
        for kind in ["created", "updated", "deleted"] {
            for ch in item["_rsmirror"][kind].as_array().unwrap() {
                let t: jiff::Timestamp = ch["datetime"].as_str().unwrap().parse().unwrap();
                v.push((
                    ch["url"].as_str().unwrap().to_string(),
                    kind.to_string(),
                    t.as_second(),
                ));
            }
        }
    }
    v.sort();
    v
}

/// The proposal's "Checking for Updates", steps 3 and 4, over what the test published: the
/// Change Lists whose `until` does not predate the last processing, and of their changes those
/// with a `datetime` after it (entries without one ignored). (URL, change, datetime), sorted.
fn checking_for_updates(
    site: &Site,
    lists: &[(Option<&str>, &[Given])],
    last: Option<&str>,
) -> Vec<(String, String, String)> {
    let ts = |s: &str| s.parse::<jiff::Timestamp>().unwrap();
    let mut v: Vec<_> = lists
        .iter()
        .filter(|(until, _)| match (until, last) {
            (Some(u), Some(l)) => ts(u) >= ts(l),
            _ => true,
        })
        .flat_map(|(_, given)| given.iter())
        .filter_map(|(page, change, datetime)| {
            let d = (*datetime)?;
            last.is_none_or(|l| ts(d) > ts(l))
                .then(|| (site.url(page), change.to_string(), d.to_string()))
        })
        .collect();
    v.sort();
    v
}

fn as_reported(v: &[(String, String, String)]) -> Vec<(String, String, i64)> {
    v.iter()
        .map(|(u, c, d)| {
            (
                u.clone(),
                c.clone(),
                d.parse::<jiff::Timestamp>().unwrap().as_second(),
            )
        })
        .collect()
}

#[test]
#[cfg_attr(
    missing = "feedvalidator",
    ignore = "the W3C Feed Validator's imports (lxml, html5lib, rdflib) are missing: bash .ci/run installs them into .ci/venv"
)]
fn a_site_of_the_proposals_examples_followed_by_its_change_lists_alone() {
    let site = Site::new();
    site.source_description();
    let closed: &[Given] = &[
        (
            "/my-shrine/my-page.html",
            "updated",
            Some("2022-11-06T00:00:00Z"),
        ),
        ("/my-shrine/undated.html", "updated", None),
        (
            "/my-shrine/old.html",
            "created",
            Some("2022-12-01T10:00:00Z"),
        ),
    ];
    let open1: &[Given] = &[(
        "/my-shrine/new.html",
        "created",
        Some("2023-02-01T00:00:00Z"),
    )];
    let profile: &[Given] = &[(
        "/profile/card.html",
        "updated",
        Some("2023-01-15T12:00:00Z"),
    )];
    site.change_list(
        "/my-shrine/cl-2022.xml",
        "/my-shrine/capabilitylist.xml",
        r#"from="1972-12-31T00:00:00Z" until="2023-01-01T00:00:00Z""#,
        closed,
    );
    site.change_list(
        "/my-shrine/cl-open.xml",
        "/my-shrine/capabilitylist.xml",
        r#"from="2023-01-01T00:00:00Z""#,
        open1,
    );
    site.change_list_index(
        "/my-shrine/changelist.xml",
        "/my-shrine/capabilitylist.xml",
        &[
            (
                "/my-shrine/cl-2022.xml",
                "1972-12-31T00:00:00Z",
                Some("2023-01-01T00:00:00Z"),
            ),
            ("/my-shrine/cl-open.xml", "2023-01-01T00:00:00Z", None),
        ],
    );
    site.change_list(
        "/profile/changelist.xml",
        "/profile/capabilitylist.xml",
        r#"from="2023-01-01T00:00:00Z""#,
        profile,
    );
    let m = tempfile::tempdir().unwrap();

    // baseline: no Resource List anywhere; the two collections with a Change List are
    // followed from their first change, the gallery left out, said once (warnings are said
    // under -v; the run's problems keep them).
    let out = run(baseline(&site.url("/"), m.path()).arg("-v"));
    let said = stderr_of(&out);
    assert_eq!(said.matches(LEFT_OUT).count(), 1, "{said}");
    assert!(
        said.contains(&site.url("/gallery/capabilitylist.xml")),
        "{said}"
    );

    // incremental: every change of both collections is applied; the gallery is said once more
    // (once a run), and is in the run's problems with each entry without a datetime.
    let out = run(incremental(m.path()).arg("-v"));
    let said = stderr_of(&out);
    assert_eq!(said.matches(LEFT_OUT).count(), 1, "{said}");
    let log = run(rsmirror()
        .args(["log", "--run", "2", "--mirror"])
        .arg(m.path()));
    let log = stdout_of(&log);
    assert!(log.contains(LEFT_OUT), "{log}");
    assert!(
        log.contains(&format!("{}: ", site.url("/my-shrine/undated.html")))
            && log.contains("has no datetime"),
        "{log}"
    );

    // The source-wide feed (two collections, one source: no --collection needed), titled and
    // authored by the site's HTML metadata.
    let whole = feed(m.path(), &[]);
    assert_eq!(whole.title.as_ref().unwrap().content, "Kibi\u{2019}s site");
    assert_eq!(whole.authors[0].name.as_deref(), Some("Kibi & co"));
    let all_lists: Vec<(Option<&str>, &[Given])> = vec![
        (Some("2023-01-01T00:00:00Z"), closed),
        (None, open1),
        (None, profile),
    ];
    let expected = checking_for_updates(&site, &all_lists, None);
    assert_eq!(expected.len(), 4, "{expected:?}");
    assert_eq!(reported(m.path(), &[]), as_reported(&expected));

    // Each collection's own feed: its Atom metadata, or its Dublin Core.
    let shrine = feed(m.path(), &["--collection", &site.url("/my-shrine/")]);
    assert_eq!(shrine.title.as_ref().unwrap().content, "My Shrine");
    assert_eq!(shrine.authors[0].name.as_deref(), Some("Kibi"));
    assert_eq!(shrine.id, site.url("/my-shrine/"));
    let card = feed(m.path(), &["--collection", &site.url("/profile/")]);
    assert_eq!(card.title.as_ref().unwrap().content, "Kibi's card");
    assert_eq!(card.authors[0].name.as_deref(), Some("K. Ibi"));
    let mut shrine_expected = checking_for_updates(&site, &all_lists[..2], None);
    shrine_expected.sort();
    assert_eq!(
        reported(m.path(), &["--collection", &site.url("/my-shrine/")]),
        as_reported(&shrine_expected)
    );
    // Step 5: one entry summarising the changes the run found.
    assert_eq!(shrine.entries.len(), 1);

    // Later: the open list grows (one dated change, one without datetime), the closed list is
    // not read again (its until predates the last processing), the shrine is renamed.
    let last = "2023-02-01T00:00:00Z";
    let open2: &[Given] = &[
        (
            "/my-shrine/new.html",
            "created",
            Some("2023-02-01T00:00:00Z"),
        ),
        (
            "/my-shrine/my-page.html",
            "updated",
            Some("2023-03-01T08:00:00Z"),
        ),
        ("/my-shrine/undated2.html", "deleted", None),
    ];
    site.change_list(
        "/my-shrine/cl-open.xml",
        "/my-shrine/capabilitylist.xml",
        r#"from="2023-01-01T00:00:00Z""#,
        open2,
    );
    site.put(
        "/my-shrine/info-about-my-shrine.xml",
        r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>My Shrine, renamed</title><author><name>Kibi</name></author></feed>"#,
    );
    site.srv.clear_requests();
    run(&mut incremental(m.path()));
    assert_eq!(
        site.srv.count("/my-shrine/cl-2022.xml"),
        0,
        "{:?}",
        site.srv.requests()
    );
    assert_eq!(site.srv.count("/my-shrine/cl-open.xml"), 1);
    let shrine2 = feed(m.path(), &["--collection", &site.url("/my-shrine/")]);
    assert_eq!(
        shrine2.title.as_ref().unwrap().content,
        "My Shrine, renamed"
    );
    assert_eq!(shrine2.entries.len(), 2);
    let newest = checking_for_updates(
        &site,
        &[(Some("2023-01-01T00:00:00Z"), closed), (None, open2)],
        Some(last),
    );
    assert_eq!(
        newest,
        vec![(
            site.url("/my-shrine/my-page.html"),
            "updated".to_string(),
            "2023-03-01T08:00:00Z".to_string()
        )]
    );
    let since = reported(
        m.path(),
        &["--collection", &site.url("/my-shrine/"), "--since", "run:2"],
    );
    assert_eq!(since, as_reported(&newest));
    assert_eq!(
        shrine2.entries[1].id, shrine.entries[0].id,
        "an entry never changes"
    );
    assert!(!String::from_utf8_lossy(
        &run(rsmirror().args(["feed", "--mirror"]).arg(m.path())).stdout
    )
    .contains("undated"));

    // The metadata's history is kept: two states of the shrine's, one of the site's per
    // collection.
    let conn = rusqlite::Connection::open(m.path().join("catalog.sqlite")).unwrap();
    let titles: Vec<String> = conn
        .prepare(
            "SELECT title FROM source_metadata WHERE role = 'collection' AND url LIKE '%my-shrine%'
             ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(titles, ["My Shrine", "My Shrine, renamed"]);
    drop(conn);

    // Every feed of the site as a static tree (issue 70): the source's and one per collection
    // with a change, titled by their metadata, each valid for the W3C Feed Validator.
    let out = tempfile::tempdir().unwrap();
    let base = "https://feeds.example.org/sites";
    run(rsmirror()
        .args(["feed", "--mirror"])
        .arg(m.path())
        .arg("--output-dir")
        .arg(out.path())
        .args(["--base-url", base, "--archive-size", "1"]));
    let opml = std::fs::read_to_string(out.path().join("index.opml")).unwrap();
    assert!(opml.contains("My Shrine, renamed"), "{opml}");
    let python = crate::peers::python_with("lxml, html5lib, rdflib");
    let checked = std::process::Command::new(python)
        .arg(crate::peers::script("feedvalidator/validate.py"))
        .args(["--base", base])
        .arg(out.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&checked.stdout);
    assert_eq!(checked.status.code(), Some(0), "{said}");
    for line in said.lines() {
        let d: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(d["errors"], serde_json::json!([]), "{d}");
    }
    assert!(said.lines().count() >= 4, "{said}");
}

/// A source whose only Capability List names nothing to follow: not a run that did its job.
#[test]
fn a_source_with_nothing_to_follow_is_an_error_naming_it() {
    let site = Site::new();
    site.put(
        "/.well-known/resourcesync",
        &format!(
            r#"<urlset {NS}><rs:md capability="description"/><url><loc>{}</loc><rs:md capability="capabilitylist"/></url></urlset>"#,
            site.url("/gallery/capabilitylist.xml")
        ),
    );
    site.put(
        "/gallery/capabilitylist.xml",
        &format!(r#"<urlset {NS}><rs:md capability="capabilitylist"/></urlset>"#),
    );
    let m = tempfile::tempdir().unwrap();
    let out = baseline(&site.url("/"), m.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "stderr: {}", stderr_of(&out));
    let said = stderr_of(&out);
    assert!(said.contains(LEFT_OUT), "{said}");
    assert!(
        said.contains(&site.url("/gallery/capabilitylist.xml")),
        "{said}"
    );
}
