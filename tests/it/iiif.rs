//! IIIF Change Discovery API 1.0 sources, against a Django + djiiif 2.0.0 publisher
//! (`tests/peers/iiif_server.py`) on 127.0.0.1: level 1 (Create, Update) and level-2 streams
//! built from the specification's examples (Delete, Move, Add, Remove, Refresh). What the
//! mirror holds is every Manifest the stream leaves live, byte for byte as served.

use crate::peers::{python_with, Server};
use crate::support::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const MODULES: &str = "djiiif, django";

struct Stream {
    server: Server,
    items: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

fn item(slug: &str, kind: &str, end: &str) -> serde_json::Value {
    serde_json::json!({"id_slug": slug, "label": format!("Manifest {slug}"), "type": kind,
                       "endTime": end})
}

impl Stream {
    fn start(items: &[serde_json::Value], extra: &[&str]) -> Stream {
        let python = python_with(MODULES);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("items.json");
        std::fs::write(&path, serde_json::to_vec(items).unwrap()).unwrap();
        let log = dir.path().join("requests.log");
        let mut args = vec![
            "--items",
            path.to_str().unwrap(),
            "--page-size",
            "2",
            "--log",
        ];
        args.push(log.to_str().unwrap());
        args.extend_from_slice(extra);
        let server = Server::start(&python, "iiif_server.py", &args);
        Stream {
            server,
            items: path,
            log,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/activity/all-changes", self.server.port)
    }

    fn manifest(&self, slug: &str) -> String {
        format!(
            "http://127.0.0.1:{}/iiif/{slug}/manifest.json",
            self.server.port
        )
    }

    fn set(&self, items: &[serde_json::Value]) {
        let tmp = self.items.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(items).unwrap()).unwrap();
        std::fs::rename(tmp, &self.items).unwrap();
    }

    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The Manifest of `slug` as the server serves it now.
    fn served(&self, slug: &str) -> Vec<u8> {
        let out = std::process::Command::new("curl")
            .args(["-sf", &self.manifest(slug)])
            .output()
            .unwrap();
        assert!(out.status.success(), "{slug} not served");
        out.stdout
    }
}

fn live(m: &Path) -> BTreeSet<String> {
    current(m).into_keys().collect()
}

#[test]
#[cfg_attr(
    missing = "djiiif",
    ignore = "djiiif and Django missing: .ci/run installs them"
)]
fn a_level_1_stream_is_mirrored_then_followed_through_level_2_activities() {
    let mut items = vec![
        item("a", "Create", "2020-01-01T00:00:00Z"),
        item("b", "Create", "2020-01-02T00:00:00Z"),
        item("c", "Create", "2020-01-03T00:00:00Z"),
        item("b", "Update", "2020-01-04T00:00:00Z"),
        item("d", "Create", "2020-01-05T00:00:00Z"),
    ];
    let s = Stream::start(&items, &[]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let out = baseline(&s.url(), &m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let want: BTreeSet<String> = ["a", "b", "c", "d"].iter().map(|x| s.manifest(x)).collect();
    assert_eq!(live(&m), want);
    // b was fetched once: its newest activity wins, the older Create is skipped.
    let fetched_b = s
        .requests()
        .iter()
        .filter(|r| r.contains("/iiif/b/"))
        .count();
    assert_eq!(fetched_b, 1, "{:?}", s.requests());
    let (b, _) = ok_on_mirror(&m, &["cat", &s.manifest("b")]);
    assert_eq!(b.as_bytes(), s.served("b"));
    assert_consistent(&m);

    // Level 2, after the crawl: a deleted, c moved to e, f added, d removed, b updated.
    items.extend([
        item("a", "Delete", "2021-01-01T00:00:00Z"),
        serde_json::json!({"id_slug": "c", "type": "Move", "target_slug": "e",
                           "label": "Manifest e", "endTime": "2021-01-02T00:00:00Z"}),
        item("f", "Add", "2021-01-03T00:00:00Z"),
        item("d", "Remove", "2021-01-04T00:00:00Z"),
        item("b", "Update", "2021-01-05T00:00:00Z"),
    ]);
    s.set(&items);
    let before = s.requests().len();
    let out = incremental(&m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let want: BTreeSet<String> = ["b", "e", "f"].iter().map(|x| s.manifest(x)).collect();
    assert_eq!(live(&m), want);
    let gone: BTreeSet<String> = tombstoned(&m).into_iter().collect();
    for x in ["a", "c", "d"] {
        assert!(
            gone.contains(&s.manifest(x)),
            "{x} not tombstoned: {gone:?}"
        );
    }
    // The walk stopped at the last crawl: the first pages were not read again.
    let walked: Vec<String> = s.requests()[before..].to_vec();
    assert!(
        !walked.iter().any(|r| r.ends_with("/activity/page-0")),
        "{walked:?}"
    );
    assert_consistent(&m);
    let out = on_mirror(&m, &["audit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

#[test]
#[cfg_attr(
    missing = "djiiif",
    ignore = "djiiif and Django missing: .ci/run installs them"
)]
fn a_publisher_that_deviates_is_read_and_the_deviation_said() {
    let items = vec![
        item("a", "Create", "2020-01-01T00:00:00Z"),
        item("b", "Create", "2020-01-02T00:00:00Z"),
        item("c", "Create", "2020-01-03T00:00:00Z"),
    ];
    let s = Stream::start(&items, &["--lenient"]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let out = baseline(&s.url(), &m).arg("-v").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(live(&m).len(), 3);
    let err = stderr_of(&out);
    assert!(err.contains("context"), "{err}");
    assert!(err.contains("application/json"), "{err}");
}

#[test]
#[cfg_attr(
    missing = "djiiif",
    ignore = "djiiif and Django missing: .ci/run installs them"
)]
fn unknown_json_is_not_an_arc_sitemap() {
    let s = Stream::start(&[item("a", "Create", "2020-01-01T00:00:00Z")], &[]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    // A Manifest is JSON, but neither an ARC sitemap nor a stream of changes.
    let out = baseline(&s.manifest("a"), &m).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("neither an ARC sitemap"), "{err}");
}
