//! Partial content (issue 72): a Change List's `rel=".../rs/terms/patch"` (ResourceSync 1.1
//! §14, its example of a JSON Patch) applied to the state the mirror holds, kept only when the
//! result has the digest the change declares; otherwise the resource is fetched whole.

use crate::server::TestServer;
use crate::support::{baseline, incremental, on_mirror, stderr_of, stdout_of, Tree, ORIGIN};
use crate::versions::{change_list, run_ok, T0};
use rusqlite::Connection;
use std::path::Path;

/// RFC 6902's example document, pretty-printed as the source writes its JSON (with a long
/// `foo`, so that a patch is worth it).
fn held() -> Vec<u8> {
    format!(
        "{{\n  \"baz\": \"qux\",\n  \"foo\": \"{}\"\n}}\n",
        "bar ".repeat(400)
    )
    .into_bytes()
}
/// RFC 6902 A.1-A.2 in one patch: a member added, one replaced.
const PATCH: &str = r#"[
  { "op": "add", "path": "/hello", "value": ["world"] },
  { "op": "replace", "path": "/baz", "value": "boo" }
]"#;
fn after() -> Vec<u8> {
    format!(
        "{{\n  \"baz\": \"boo\",\n  \"foo\": \"{}\",\n  \"hello\": [\n    \"world\"\n  ]\n}}\n",
        "bar ".repeat(400)
    )
    .into_bytes()
}

fn sha256(b: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(b))
}

/// The current version of `uri`: (arrived via, fetched from, sha256).
fn current_of(mirror: &Path, uri: &str) -> (String, Option<String>, String) {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    conn.query_row(
        "SELECT v.arrived_via, v.fetched_from, v.sha256_hex FROM resources r
         JOIN versions v ON v.id = r.current_version_id WHERE r.uri = ?1",
        [uri],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

/// The patch link of ResourceSync 1.1's example, for `file` served from the tree.
fn patch_link(t: &Tree, file: &str, body: &[u8], media_type: &str) -> String {
    std::fs::write(t.path().join(file), body).unwrap();
    format!(
        "<rs:ln rel=\"http://www.openarchives.org/rs/terms/patch\" href=\"{ORIGIN}/{file}\" \
         modified=\"2013-01-03T17:00:00Z\" hash=\"sha-256:{}\" length=\"{}\" type=\"{media_type}\"/>",
        sha256(body),
        body.len()
    )
}

#[test]
fn a_json_patch_makes_the_new_state_and_a_wrong_one_falls_back_to_the_whole() {
    let t = Tree::new();
    for name in ["res4", "res5", "res6"] {
        t.put(name, &held());
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["res4", "res5", "res6"]);
    change_list(&t, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    run_ok(&mut baseline(&srv.url("/capabilitylist.xml"), &mirror));

    // res4: the patch makes exactly the new state. res5: the source's new state is not what
    // the patch makes (another spelling): fetched whole. res6: a patch of a type rsmirror does
    // not apply: fetched whole.
    let after = after();
    t.put("res4", &after);
    let res5_after = b"{\"baz\":\"boo\",\"foo\":\"bar\",\"hello\":[\"world\"],\"extra\":1}";
    t.put("res5", res5_after);
    // (Other bytes than res4's: the same would be taken from the store, not fetched.)
    let res6_after = b"{\"res6\": \"its own new state\"}\n";
    t.put("res6", res6_after);
    let l4 = patch_link(
        &t,
        "res4-json-patch",
        PATCH.as_bytes(),
        "application/json-patch",
    );
    let l5 = patch_link(
        &t,
        "res5-json-patch",
        PATCH.as_bytes(),
        "application/json-patch+json",
    );
    let l6 = patch_link(&t, "res6-diff", b"@@ -1 +1 @@\n", "text/x-diff");
    change_list(
        &t,
        &[
            ("res4", "2013-01-03T17:00:00Z", l4),
            ("res5", "2013-01-03T17:00:00Z", l5),
            ("res6", "2013-01-03T17:00:00Z", l6),
        ],
    );
    srv.clear_requests();
    let out = incremental(&mirror).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["updated"], 3, "{s}");

    let (via, from, sha) = current_of(&mirror, &srv.url("/res/res4"));
    assert_eq!((via.as_str(), sha), ("patch", sha256(&after)));
    assert_eq!(from, Some(srv.url("/res4-json-patch")));
    assert_eq!(srv.count("/res/res4"), 0, "res4 was fetched whole");
    let saved = after.len() as u64 - PATCH.len() as u64;
    assert_eq!(s["bytes_saved"].as_u64(), Some(saved), "{s}");

    for (name, bytes) in [("res5", &res5_after[..]), ("res6", &res6_after[..])] {
        let (via, _, sha) = current_of(&mirror, &srv.url(&format!("/res/{name}")));
        assert_eq!((via.as_str(), sha), ("http", sha256(bytes)), "{name}");
        assert_eq!(srv.count(&format!("/res/{name}")), 1, "{name}");
    }
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("res5-json-patch") && warnings.contains("digest"),
        "{warnings}"
    );
    assert!(warnings.contains("text/x-diff"), "{warnings}");

    let (log, _) = crate::support::ok_on_mirror(&mirror, &["log", &srv.url("/res/res4")]);
    assert!(log.contains("via patch from"), "{log}");
    let out = on_mirror(&mirror, &["audit"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout_of(&out),
        stderr_of(&out)
    );
}
