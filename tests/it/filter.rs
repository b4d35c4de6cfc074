//! `--include GLOB` / `--exclude GLOB` (rclone's filters, wget's `-A`/`-R`): what a filter
//! leaves out is neither fetched nor judged, the rules are remembered with the source, and a
//! resource the mirror holds is never deleted because a filter left it out.

use crate::support::*;
use std::path::Path;

const SOURCE: &str = "http://sample.example.org/";

fn sample() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
    format!("{SOURCE}={}", dir.display())
}

/// A command on the mirror `m`, its summary as JSON (exit `code`).
fn json(m: &Path, args: &[&str], code: i32) -> serde_json::Value {
    let out = rsmirror()
        .args(args)
        .arg("--mirror")
        .arg(m)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}\nstderr: {}\nstdout: {}",
        stderr_of(&out),
        stdout_of(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ls(m: &Path) -> Vec<String> {
    let out = rsmirror()
        .arg("ls")
        .arg("--mirror")
        .arg(m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    stdout_of(&out)
        .lines()
        .map(|l| l.rsplit('/').next().unwrap().to_string())
        .collect()
}

fn filter_of(m: &Path) -> serde_json::Value {
    let list = json(m, &["source", "list"], 0);
    list["sources"][0]["filter"].clone()
}

#[test]
fn a_filter_chooses_what_is_fetched_is_remembered_and_never_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let map = sample();

    // Eight resources listed; the five .txt ones (one in a sub-folder) left out.
    let s = json(
        &m,
        &["baseline", SOURCE, "--map", &map, "--exclude", "*.txt"],
        0,
    );
    assert_eq!(
        (s["created"].as_u64(), s["excluded"].as_u64()),
        (Some(3), Some(5)),
        "{s}"
    );
    assert_eq!(s["listed"], 8, "{s}");
    assert_eq!(ls(&m), ["data.json", "image.png", "page.html"]);
    assert_eq!(filter_of(&m), serde_json::json!({ "exclude": ["*.txt"] }));
    let text = rsmirror()
        .args(["source", "list", "--mirror"])
        .arg(&m)
        .output()
        .unwrap();
    assert!(
        stdout_of(&text).contains("filter --exclude '*.txt'"),
        "{}",
        stdout_of(&text)
    );

    // The Change List updates a.txt: left out by the remembered filter, not applied.
    let s = json(&m, &["incremental"], 0);
    assert_eq!(
        (s["excluded"].as_u64(), s["created"].as_u64()),
        (Some(1), Some(0)),
        "{s}"
    );
    assert_eq!(ls(&m).len(), 3);

    // A narrower filter with --delete: what the mirror holds and the filter now leaves out
    // stays; it is not gone.
    let s = json(
        &m,
        &["baseline", SOURCE, "--include", "/res/*.json", "--delete"],
        0,
    );
    assert_eq!(s["excluded"], 7, "{s}");
    assert_eq!(
        (s["gone"].as_u64(), s["deleted"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(ls(&m), ["data.json", "image.png", "page.html"]);
    assert_eq!(
        filter_of(&m),
        serde_json::json!({ "include": ["/res/*.json"] })
    );

    // Audit judges what the filter admits: the two it leaves out are not extra, the .txt
    // ones not missing. Without the filter, they are.
    let a = json(&m, &["audit"], 0);
    assert_eq!(a["summary"]["exit_code"], 0, "{a}");
    let out = rsmirror()
        .args(["audit", "--no-filter", "--mirror"])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
    assert_eq!(
        stdout_of(&out).matches("missing").count(),
        5,
        "{}",
        stdout_of(&out)
    );

    // A dry run plans as the run would: the remembered filter, or none.
    let plan = |extra: &[&str]| {
        let out = rsmirror()
            .args(["baseline", SOURCE, "--dry-run", "--mirror"])
            .arg(&m)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        stdout_of(&out)
    };
    assert!(!plan(&[]).contains("a.txt"), "{}", plan(&[]));
    assert!(plan(&["--no-filter"]).contains("+ http://sample.example.org/res/a.txt"));

    // --no-filter forgets the rules: everything is fetched, and nothing is remembered.
    let s = json(&m, &["baseline", SOURCE, "--no-filter"], 0);
    assert_eq!(
        (s["created"].as_u64(), s["excluded"].as_u64()),
        (Some(5), Some(0)),
        "{s}"
    );
    assert_eq!(ls(&m).len(), 8);
    assert!(filter_of(&m).is_null(), "{}", filter_of(&m));
}

/// A pattern that is not a glob is a usage error naming it, before anything is read.
#[test]
fn a_pattern_that_is_not_a_glob_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let out = rsmirror()
        .args([
            "baseline",
            SOURCE,
            "--map",
            &sample(),
            "--include",
            "/res/[a",
            "--mirror",
        ])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("--include \"/res/[a\""),
        "{}",
        stderr_of(&out)
    );
    assert!(!m.join("catalog.sqlite").exists());
}
