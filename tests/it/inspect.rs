//! `rsmirror inspect`: documents and problems of every testdata source, the same errors as
//! `baseline` for broken ones, nothing fetched and nothing written; one output pinned.

use crate::server::{testdata, TestServer};
use crate::support::*;

fn inspect(source: &str) -> std::process::Output {
    rsmirror().args(["inspect", source]).output().unwrap()
}

#[test]
fn output_for_the_sample_source_is_pinned() {
    let out = rsmirror()
        .args(["inspect", "http://sample.example.org/", "--map"])
        .arg(format!(
            "http://sample.example.org/={}",
            testdata("sample").display()
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let expected = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/it/expected/inspect-sample.txt"
    ))
    .unwrap();
    assert_eq!(stdout_of(&out), expected);
}

#[test]
fn every_testdata_source_lists_its_documents_and_fetches_no_resource() {
    for (tree, entry, kinds) in [
        (
            "sample",
            "/",
            &[
                "description",
                "capabilitylist",
                "resourcelist index",
                "resourcelist",
                "changelist",
            ][..],
        ),
        (
            "syntax/v1_1",
            "/",
            &[
                "description",
                "capabilitylist",
                "resourcelist",
                "changelist",
            ][..],
        ),
        (
            "syntax/v1_0",
            "/",
            &[
                "description",
                "capabilitylist",
                "resourcelist",
                "changelist",
            ][..],
        ),
        (
            "syntax/alpha2012",
            "/resourcelist.xml",
            &["plain sitemap"][..],
        ),
        ("syntax/alpha2012", "/changeset.xml", &["changelist"][..]),
        ("syntax/plain", "/", &["plain sitemap"][..]),
        (
            "syntax/gzip",
            "/",
            &["description", "capabilitylist", "resourcelist"][..],
        ),
        ("syntax/discovery_robots", "/", &["resourcelist"][..]),
    ] {
        let srv = TestServer::start(testdata(tree));
        let out = inspect(&srv.url(entry));
        let text = stdout_of(&out);
        assert_eq!(out.status.code(), Some(0), "{tree}: {}", stderr_of(&out));
        for k in kinds {
            assert!(
                text.lines().any(|l| l.starts_with(&format!("{k}  "))),
                "{tree}: no {k} in {text}"
            );
        }
        assert!(
            srv.requests().iter().all(|r| !r.path.starts_with("/res/")),
            "{tree}: fetched a resource"
        );
    }
    // A gzip'd list is read and its entries counted.
    let srv = TestServer::start(testdata("syntax/gzip"));
    assert!(stdout_of(&inspect(&srv.url("/"))).contains("entries=3"));
}

#[test]
fn broken_fixtures_give_the_exact_errors_baseline_gives() {
    for (tree, error) in [
        ("broken/malformed_xml", "malformed XML"),
        (
            "broken/truncated",
            "document ends before </urlset>: truncated",
        ),
        ("broken/doctype", "DOCTYPE or entity declaration refused"),
        (
            "broken/wrong_namespace",
            "is not a Sitemap <urlset> or <sitemapindex>",
        ),
        (
            "broken/no_zone",
            "time without a zone in \"2026-01-01T00:00:00\"",
        ),
    ] {
        let srv = TestServer::start(testdata(tree));
        let url = srv.url("/resourcelist.xml");
        let out = inspect(&url);
        assert_eq!(out.status.code(), Some(4), "{tree}");
        let err = stderr_of(&out);
        assert!(err.contains(error), "{tree}: {err}");
        let dir = tempfile::tempdir().unwrap();
        let b = baseline(&url, dir.path()).output().unwrap();
        // The very same message (the line names the document and the line number).
        let line = err.lines().find(|l| l.contains(error)).unwrap();
        let detail = &line[line.find(url.as_str()).unwrap()..];
        assert!(
            stderr_of(&b).contains(detail),
            "{tree}: baseline said {}",
            stderr_of(&b)
        );
    }
    // Lists whose defects are in the resources read fine.
    for tree in [
        "broken/digest_mismatch",
        "broken/length_mismatch",
        "broken/missing_resource",
        "broken/out_of_scope",
        "broken/file_url",
    ] {
        let srv = TestServer::start(testdata(tree));
        let out = inspect(&srv.url("/resourcelist.xml"));
        assert_eq!(out.status.code(), Some(0), "{tree}: {}", stderr_of(&out));
        let text = stdout_of(&out);
        let (how, rest) = text.split_once('\n').unwrap();
        assert!(
            how.starts_with("found by the document given"),
            "{tree}: {how}"
        );
        assert!(rest.starts_with("resourcelist  "), "{tree}");
    }
}

#[test]
fn inspect_writes_nothing() {
    let srv = TestServer::start(testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    let out = rsmirror()
        .current_dir(dir.path())
        .args(["inspect", &srv.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Issue 67, 3: a valid ResourceSync 1.1 source that advertises Change Notification (a
/// Capability List entry of capability `changelist-notification`, its `loc` the topic, as the
/// Change Notification specification's example has it) is inspected without a GET of the
/// topic, which is named as a push channel; baseline of the same source still works.
#[test]
fn a_change_notification_channel_is_named_not_fetched() {
    let t = Tree::new();
    t.put("a", b"a\n");
    t.resource_list("2026-04-01T00:00:00Z", &["a"]);
    t.change_list("changelist.xml", "2026-04-01T00:00:00Z", None, &[]);
    t.capability_list("changelist.xml");
    let caps = std::fs::read_to_string(t.path().join("capabilitylist.xml")).unwrap();
    let caps = caps.replace(
        "</urlset>",
        "<url><loc>http://sample.example.org/notification/changelist</loc>\
         <rs:ln rel=\"hub\" href=\"http://sample.example.org/hub\"/>\
         <rs:md capability=\"changelist-notification\"/></url>\n</urlset>",
    );
    std::fs::write(t.path().join("capabilitylist.xml"), caps).unwrap();
    let srv = TestServer::start(t.path());
    let out = inspect(&srv.url("/capabilitylist.xml"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let said = format!("{}{}", stdout_of(&out), stderr_of(&out));
    // (The test server answers with its own address in place of sample.example.org.)
    let topic = srv.url("/notification/changelist");
    let hub = srv.url("/hub");
    assert!(
        said.contains(&format!(
            "push channel (changelist-notification, ResourceSync Change Notification): \
             topic={topic} hub={hub}"
        )),
        "{said}"
    );
    assert!(!said.contains("unknown capability"), "{said}");
    assert_eq!(srv.count("/notification/changelist"), 0);
    // The same in --json: the channel as data, under its Capability List.
    let out = rsmirror()
        .args(["inspect", "--json", &srv.url("/capabilitylist.xml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let channels: Vec<&serde_json::Value> = doc["documents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d.get("channels"))
        .flat_map(|c| c.as_array().unwrap())
        .collect();
    assert_eq!(channels.len(), 1, "{doc}");
    assert_eq!(channels[0]["hub"], hub.as_str());
    assert_eq!(channels[0]["topic"], topic.as_str());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}
