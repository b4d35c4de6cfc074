//! PREMIS 3.0 reports and Archivematica transfers (issue 71), judged by the tools that read
//! them: the Library of Congress XSD (`tests/fixtures/premis/`) with lxml and with xmlschema,
//! metsrw's PREMIS reader, and the rules of Archivematica's "Load PREMIS events from
//! metadata/premis.xml" (`tests/it/premis_check.py`), on a mirror with versions, a deletion,
//! a failed fixity check and a repair.

use crate::server::TestServer;
use crate::support::*;
use std::path::{Path, PathBuf};

const T0: &str = "2026-03-01T00:00:00Z";

pub fn text(i: usize) -> Vec<u8> {
    format!("resource {i}, first version\n").into_bytes()
}

pub fn object(mirror: &Path, bytes: &[u8]) -> PathBuf {
    use sha2::Digest;
    let sha = hex::encode(sha2::Sha256::digest(bytes));
    mirror.join("objects/sha256").join(&sha[..2]).join(&sha)
}

fn run(mirror: &Path, args: &[&str]) -> std::process::Output {
    on_mirror(mirror, args)
}

pub fn expect(out: &std::process::Output, code: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: {}{}",
        stdout_of(out),
        stderr_of(out)
    );
}

/// A mirror with history: a baseline of five, an update, a creation and a deletion, a clean
/// audit, an audit that finds r3's object corrupt, and the repair that restores it.
pub fn mirror_with_history() -> (Tree, TestServer, tempfile::TempDir, PathBuf) {
    let t = Tree::new();
    for i in 1..=5 {
        t.put(&format!("r{i}"), &text(i));
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3", "r4", "r5"]);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let out = baseline(&srv.url("/capabilitylist.xml"), &mirror)
        .output()
        .unwrap();
    expect(&out, 0, "baseline");
    t.put("r1", b"resource 1, second version\n");
    t.put("r6", b"resource 6, new\n");
    t.remove("r2");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "updated", "2026-03-01T01:00:00Z"),
            ("r6", "created", "2026-03-01T02:00:00Z"),
            ("r2", "deleted", "2026-03-01T03:00:00Z"),
        ],
    );
    t.resource_list("2026-03-01T04:00:00Z", &["r1", "r3", "r4", "r5", "r6"]);
    expect(&incremental(&mirror).output().unwrap(), 0, "incremental");
    expect(&run(&mirror, &["audit", "--offline"]), 0, "clean audit");
    let r3 = object(&mirror, &text(3));
    let mut perms = std::fs::metadata(&r3).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&r3, perms).unwrap();
    std::fs::write(&r3, b"resource 3, first versioN\n").unwrap();
    expect(
        &run(&mirror, &["audit", "--offline"]),
        1,
        "audit of a corrupt object",
    );
    expect(&run(&mirror, &["repair"]), 0, "repair");
    (t, srv, dir, mirror)
}

/// premis_check.py's verdict on a document (and the transfer it names files of).
fn check(premis: &Path, transfer: Option<&Path>) -> serde_json::Value {
    let python = crate::peers::python_with("lxml, xmlschema, metsrw, django");
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut c = std::process::Command::new(python);
    c.arg(here.join("tests/it/premis_check.py"))
        .arg(here.join("tests/fixtures/premis/premis-v3.0.xsd"))
        .arg(premis);
    if let Some(t) = transfer {
        c.arg(t);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "premis_check.py: {}", stderr_of(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["problems"], serde_json::json!([]), "{v:#}");
    assert_eq!(v["metsrw"], "0.7.0");
    v
}

fn count(v: &serde_json::Value, key: &str) -> u64 {
    v["by_type"][key].as_u64().unwrap_or(0)
}

#[test]
#[cfg_attr(
    missing = "premis",
    ignore = "needs lxml, xmlschema, metsrw 0.7 and Django (.ci/run)"
)]
fn the_history_exported_as_premis_is_valid_and_complete() {
    let (_t, _srv, dir, mirror) = mirror_with_history();
    let dest = dir.path().join("premis");
    let out = run(
        &mirror,
        &["export", "premis", dest.to_str().unwrap(), "--json"],
    );
    expect(&out, 0, "export premis");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let v = check(&dest.join("premis.xml"), None);
    // Seven objects: five first versions, r1's second and r6.
    assert_eq!(v["objects"], 7, "{v:#}");
    assert_eq!(summary["files"], 7);
    assert_eq!(summary["events"], v["events"]);
    assert_eq!(count(&v, "capture/success"), 7, "{v:#}");
    assert_eq!(count(&v, "ingestion/success"), 7, "{v:#}");
    assert_eq!(count(&v, "deletion/success"), 1, "{v:#}");
    assert_eq!(count(&v, "repair/success"), 1, "{v:#}");
    // Two audits of the five current objects each; the second found r3's corrupt.
    assert_eq!(count(&v, "fixity check/fail"), 1, "{v:#}");
    assert_eq!(count(&v, "fixity check/pass"), 9, "{v:#}");
    // rsmirror, the source, and the runs that did something: baseline, incremental, two
    // audits, the repair.
    assert_eq!(v["agents"], 7, "{v:#}");
    let names = v["original_names"].as_array().unwrap();
    // A stored object is named by the first URI it was fetched as: r2's, deleted, is there.
    assert!(
        names
            .iter()
            .any(|n| n.as_str().unwrap().ends_with("/res/r2")),
        "{v:#}"
    );
}

#[test]
#[cfg_attr(
    missing = "premis",
    ignore = "needs lxml, xmlschema, metsrw 0.7 and Django (.ci/run)"
)]
fn an_audit_writes_one_fixity_check_per_object_it_hashed() {
    let (_t, _srv, dir, mirror) = mirror_with_history();
    let file = dir.path().join("audit.premis.xml");
    let r4 = object(&mirror, &text(4));
    std::fs::remove_file(&r4).unwrap();
    let out = run(
        &mirror,
        &["audit", "--offline", "--premis", file.to_str().unwrap()],
    );
    expect(&out, 1, "audit with a missing object");
    let v = check(&file, None);
    assert_eq!(v["objects"], 5, "{v:#}");
    assert_eq!(v["events"], 5, "{v:#}");
    assert_eq!(count(&v, "fixity check/fail"), 1, "{v:#}");
    assert_eq!(count(&v, "fixity check/pass"), 4, "{v:#}");
    // rsmirror and this audit's run.
    assert_eq!(v["agents"], 2, "{v:#}");

    // A sample checks its slice only; a level that does not hash is refused at once.
    let out = run(
        &mirror,
        &[
            "audit",
            "--offline",
            "--level",
            "size",
            "--premis",
            file.to_str().unwrap(),
        ],
    );
    expect(&out, 2, "--premis with --level size");
    assert!(
        stderr_of(&out).contains("--level sha256 or fixity"),
        "{}",
        stderr_of(&out)
    );
    let out = run(
        &mirror,
        &[
            "audit",
            "--offline",
            "--premis",
            dir.path().join("no/such/folder.xml").to_str().unwrap(),
        ],
    );
    expect(&out, 2, "--premis into a folder that is not there");
    assert!(stderr_of(&out).contains("no/such"), "{}", stderr_of(&out));
}

#[test]
#[cfg_attr(
    missing = "premis",
    ignore = "needs lxml, xmlschema, metsrw 0.7 and Django (.ci/run)"
)]
fn an_archivematica_transfer_names_its_files_and_checks_them() {
    let (_t, _srv, dir, mirror) = mirror_with_history();
    let dest = dir.path().join("transfer");
    let out = run(
        &mirror,
        &["export", "archivematica", dest.to_str().unwrap()],
    );
    expect(&out, 0, "export archivematica");
    let v = check(&dest.join("metadata/premis.xml"), Some(&dest));
    // The five current files, each with its capture, ingestion, copy into the transfer and the
    // fixity checks that covered its version; r3's failed check and its repair.
    assert_eq!(v["objects"], 5, "{v:#}");
    assert_eq!(count(&v, "replication/success"), 5, "{v:#}");
    assert_eq!(count(&v, "fixity check/fail"), 1, "{v:#}");
    assert_eq!(count(&v, "repair/success"), 1, "{v:#}");
    assert_eq!(count(&v, "deletion/success"), 0, "{v:#}");
    let names: Vec<&str> = v["original_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let files: Vec<String> = walk_files(&dest.join("objects"))
        .iter()
        .map(|p| {
            format!(
                "objects/{}",
                p.strip_prefix(dest.join("objects")).unwrap().display()
            )
        })
        .collect();
    let mut files_sorted = files.clone();
    files_sorted.sort();
    assert_eq!(names, files_sorted);
    // The checksum files as Archivematica checks them: `sha256sum -c --strict` in objects/,
    // one line per file.
    for (tool, file) in [("sha256sum", "checksum.sha256"), ("md5sum", "checksum.md5")] {
        let list = dest.join("metadata").join(file);
        let lines = std::fs::read_to_string(&list).unwrap().lines().count();
        assert_eq!(lines, files.len(), "{file}");
        let out = std::process::Command::new(tool)
            .args(["-c", "--strict"])
            .arg(&list)
            .current_dir(dest.join("objects"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{tool}: {}{}",
            stdout_of(&out),
            stderr_of(&out)
        );
    }
}
