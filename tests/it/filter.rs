//! What a source keeps of its options. `--include GLOB` / `--exclude GLOB` (rclone's filters,
//! wget's `-A`/`-R`): what a filter leaves out is neither fetched nor judged, the rules are
//! remembered with the source, and a resource the mirror holds is never deleted because a filter
//! left it out. `--delay`, `--timeout`, `--jobs`, `--allow-host` and `--header` (`@FILE` and
//! `$VAR` forms) are kept too: flag > environment > kept > default.

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

/// `rsmirror source list` of the mirror `m`, as text.
fn source_list(m: &Path) -> String {
    let out = rsmirror()
        .args(["source", "list", "--mirror"])
        .arg(m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    stdout_of(&out)
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
    let text = source_list(&m);
    assert!(text.contains("filter --exclude '*.txt'"), "{text}");

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

/// A source keeps its own options; a later run without them uses them (said with -v), one given
/// (on the command line or in the environment) wins and replaces the kept one; a header's value
/// is never kept, only its `$VAR` or `@FILE` form, read again by each run.
#[test]
fn a_source_keeps_its_options_and_the_command_line_wins() {
    let srv = crate::server::TestServer::start(crate::server::testdata("sample"));
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let source = srv.url("/");
    let out = baseline(&source, &m)
        .env("RS_TOKEN", "one")
        .args([
            "--header",
            "X-Token: $RS_TOKEN",
            "--header",
            "X-Plain: plain-secret",
        ])
        .args([
            "--delay",
            "0.01",
            "--timeout",
            "7",
            "--jobs",
            "3",
            "--allow-host",
            "Mirror.Example.ORG",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let kept = || json(&m, &["source", "list"], 0)["sources"][0]["settings"].clone();
    assert_eq!(
        kept(),
        serde_json::json!({
            "delay": 0.01, "timeout": 7.0, "jobs": 3,
            "allow_host": ["mirror.example.org"], "header": ["X-Token: $RS_TOKEN"]
        })
    );
    let text = source_list(&m);
    assert!(
        text.contains(
            "settings --delay 0.01 --timeout 7 --jobs 3 --allow-host mirror.example.org \
             --header 'X-Token: $RS_TOKEN'"
        ),
        "{text}"
    );
    assert!(!text.contains("plain-secret"));

    // A later run names none of them: the kept ones apply, the header read again.
    srv.clear_requests();
    let out = incremental(&m)
        .env("RS_TOKEN", "two")
        .arg("-v")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains(&format!(
            "kept with {source}: --delay 0.01 --timeout 7 --jobs 3 --allow-host \
             mirror.example.org --header 'X-Token: $RS_TOKEN'"
        )),
        "{}",
        stderr_of(&out)
    );
    let requests = srv.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.header("x-token"), Some("two"), "{r:?}");
        assert_eq!(r.header("x-plain"), None, "{r:?}");
    }

    // Given on the command line or in the environment: it wins, and is kept from then on.
    let out = incremental(&m)
        .env("RS_TOKEN", "two")
        .env("RSMIRROR_TIMEOUT", "9")
        .args(["--jobs", "2", "-v"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let said = stderr_of(&out);
    let line = said
        .lines()
        .find(|l| l.starts_with("kept with"))
        .unwrap_or_default();
    assert!(
        !line.contains("--timeout") && !line.contains("--jobs"),
        "{said}"
    );
    assert!(line.contains("--delay 0.01"), "{said}");
    assert_eq!(kept()["timeout"], 9.0);
    assert_eq!(kept()["jobs"], 2);
    assert_eq!(kept()["delay"], 0.01);
}
