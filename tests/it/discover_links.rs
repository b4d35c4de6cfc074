//! Discovery by links (issue 72): a site with no `/.well-known/resourcesync` and no robots.txt
//! found through ResourceSync 1.1 §8's `Link: <…capabilitylist.xml>; rel="resourcesync"` header
//! on its home page, through an HTML page's `<link rel="resourcesync">` given as SOURCE, and
//! through the 2012 draft's `/.well-known/host-meta` (§7.3, RFC 6415's XRD); an ARC sitemap at a
//! path of its own found through the home page's JSON-LD `Dataset` (ARC E.3.2's example). Each
//! is baselined in full, and `inspect` says which way it found the source. An HTML page with
//! no such link still exits 4 naming the page.

use crate::server::{testdata, Rule, TestServer, PLACEHOLDER};
use crate::support::*;

/// The resources of the sample source's Resource Lists.
const SAMPLE: &[&str] = &[
    "/res/a.txt",
    "/res/b.txt",
    "/res/data.json",
    "/res/image.png",
    "/res/sub/nested.txt",
    "/res/with%20space.txt",
    "/res/empty.txt",
    "/res/page.html",
];

/// The sample source without its well-known Source Description and its robots.txt: only
/// links lead to its Capability List.
fn hidden_sample() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::remove_dir(dir.path()).unwrap();
    copy_tree(&testdata("sample"), dir.path());
    std::fs::remove_file(dir.path().join(".well-known/resourcesync")).unwrap();
    std::fs::remove_file(dir.path().join("robots.txt")).unwrap();
    dir
}

fn inspect(source: &str) -> (i32, String, String) {
    let out = rsmirror().args(["inspect", source]).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        stdout_of(&out),
        stderr_of(&out),
    )
}

fn baseline_ok(source: &str, mirror: &std::path::Path) {
    let out = baseline(source, mirror).arg("-q").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

const HOME: &str = "<!DOCTYPE html>\n<html><head><title>Example</title></head>\n\
                    <body><p>A site.</p></body></html>\n";

#[test]
fn a_link_header_on_the_site_root_names_the_capability_list() {
    let tree = hidden_sample();
    let srv = TestServer::start(tree.path());
    srv.set_rule(
        "/",
        Rule::WithHeaders {
            body: HOME.as_bytes().to_vec(),
            content_type: "text/html; charset=utf-8".into(),
            // ResourceSync 1.1 §8's example, at this source's address.
            headers: vec![(
                "Link".into(),
                format!(r#"<{PLACEHOLDER}/rs/capabilitylist.xml>; rel="resourcesync""#),
            )],
        },
    );
    let (code, out, err) = inspect(&srv.url("/"));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!(
            "found by the HTTP Link header rel=\"resourcesync\" of {}\n",
            srv.url("/")
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "capabilitylist  {}",
            srv.url("/rs/capabilitylist.xml")
        )),
        "{out}"
    );
    let mirror = tempfile::tempdir().unwrap();
    baseline_ok(&srv.url("/"), mirror.path());
    assert_mirror_is(mirror.path(), &srv.base(), tree.path(), SAMPLE);
}

#[test]
fn an_html_page_given_leads_on_by_its_link_element() {
    let tree = hidden_sample();
    // ResourceSync 1.1 §8's HTML example, relative to this source.
    std::fs::write(
        tree.path().join("about.html"),
        format!(
            "<!DOCTYPE html>\n<html><head><title>About</title>\n\
             <link rel=\"stylesheet\" href=\"/style.css\">\n\
             <link rel=\"resourcesync\" href=\"{PLACEHOLDER}/rs/capabilitylist.xml\">\n\
             </head><body>About us.</body></html>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(tree.path());
    let page = srv.url("/about.html");
    let (code, out, err) = inspect(&page);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!(
            "found by the HTML <link rel=\"resourcesync\"> of {page}\n"
        )),
        "{out}"
    );
    let mirror = tempfile::tempdir().unwrap();
    baseline_ok(&page, mirror.path());
    assert_mirror_is(mirror.path(), &srv.base(), tree.path(), SAMPLE);

    // A page without such a link is still refused, by name, and nothing is written.
    std::fs::write(tree.path().join("plain.html"), HOME).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/plain.html"), &empty.path().join("m"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("HTML page"), "{err}");
    assert!(err.contains("/plain.html"), "{err}");
}

#[test]
fn host_meta_names_the_capability_list() {
    let tree = hidden_sample();
    // RFC 6415's XRD with the link the 2012 draft §7.3 plans.
    std::fs::write(
        tree.path().join(".well-known/host-meta"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <XRD xmlns=\"http://docs.oasis-open.org/ns/xri/xrd-1.0\">\n\
             <Link rel=\"lrdd\" template=\"{PLACEHOLDER}/lrdd?uri={{uri}}\"/>\n\
             <Link rel=\"resourcesync\" href=\"{PLACEHOLDER}/rs/capabilitylist.xml\"/>\n\
             </XRD>\n"
        ),
    )
    .unwrap();
    let srv = TestServer::start(tree.path());
    let (code, out, err) = inspect(&srv.url("/"));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!(
            "found by the site's host-meta ({}, rel=\"resourcesync\")\n",
            srv.url("/.well-known/host-meta")
        )),
        "{out}"
    );
    let mirror = tempfile::tempdir().unwrap();
    baseline_ok(&srv.url("/"), mirror.path());
    assert_mirror_is(mirror.path(), &srv.base(), tree.path(), SAMPLE);
}

#[test]
fn an_arc_sitemap_is_found_through_the_home_pages_json_ld_dataset() {
    use sha2::Digest as _;
    let tree = tempfile::tempdir().unwrap();
    let page = b"Create Your Account\n";
    std::fs::write(tree.path().join("signup"), page).unwrap();
    std::fs::create_dir_all(tree.path().join("data")).unwrap();
    // ARC E.3.1's example, at a path none of ARC's well-known ones.
    let sitemap = serde_json::json!({
        "arc_sitemap_version": "2.1",
        "site": PLACEHOLDER,
        "generated_at": "2025-11-09T08:00:00Z",
        "pages": [{
            "url": format!("{PLACEHOLDER}/signup"),
            "lastmod": "2025-11-08T12:00:00Z",
            "ai_indexable": true,
            "ai_summary": "Signup page for AquaGrow; collects email and password for onboarding.",
            "ai_checksum": format!("sha256:{}", hex::encode(sha2::Sha256::digest(page))),
        }]
    });
    std::fs::write(
        tree.path().join("data/arc-sitemap.json"),
        serde_json::to_vec_pretty(&sitemap).unwrap(),
    )
    .unwrap();
    let srv = TestServer::start(tree.path());
    // ARC E.3.2's example in the home page.
    let home = format!(
        "<!DOCTYPE html>\n<html><head><title>AquaGrow</title>\n\
         <script type=\"application/ld+json\">\n{{\n  \"@context\": \"https://schema.org\",\n  \
         \"@type\": \"Dataset\",\n  \"name\": \"ARC Sitemap\",\n  \
         \"url\": \"{PLACEHOLDER}/data/arc-sitemap.json\",\n  \"distribution\": [\n    {{\n      \
         \"@type\": \"DataDownload\",\n      \"encodingFormat\": \"application/json\"\n    }}\n  \
         ]\n}}\n</script></head><body>Welcome.</body></html>\n"
    );
    srv.set_rule(
        "/",
        Rule::WithHeaders {
            body: home.into_bytes(),
            content_type: "text/html".into(),
            headers: Vec::new(),
        },
    );
    let (code, out, err) = inspect(&srv.url("/"));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!(
            "found by the JSON-LD Dataset of {}\n",
            srv.url("/")
        )),
        "{out}"
    );
    let mirror = tempfile::tempdir().unwrap();
    baseline_ok(&srv.url("/"), mirror.path());
    assert_mirror_is(mirror.path(), &srv.base(), tree.path(), &["/signup"]);
}
