//! `rsmirror repair` (issue 22): damaged objects get their bytes back from the source or from
//! another mirror, proven by the recorded SHA-256; damaged and stray files go to quarantine;
//! what cannot be repaired is named, with exit 1; an offline audit is clean afterwards.

use crate::server::TestServer;
use crate::support::*;
use std::path::{Path, PathBuf};

const T0: &str = "2026-03-01T00:00:00Z";

fn object(mirror: &Path, bytes: &[u8]) -> PathBuf {
    use sha2::Digest;
    let sha = hex::encode(sha2::Sha256::digest(bytes));
    mirror.join("objects/sha256").join(&sha[..2]).join(&sha)
}

fn overwrite(path: &Path, bytes: &[u8]) {
    let mut perms = std::fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn text(i: usize) -> Vec<u8> {
    format!("resource {i}, as mirrored\n").into_bytes()
}

#[test]
fn damaged_objects_come_back_from_the_source_or_a_copy_and_strays_go_to_quarantine() {
    let t = Tree::new();
    for i in 1..=5 {
        t.put(&format!("r{i}"), &text(i));
    }
    t.resource_list(T0, &["r1", "r2", "r3", "r4", "r5"]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let out = baseline(&srv.url("/resourcelist.xml"), &mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let backup = dir.path().join("backup");
    assert!(std::process::Command::new("cp")
        .arg("-a")
        .arg(&mirror)
        .arg(&backup)
        .status()
        .unwrap()
        .success());

    // r1 flipped, r2 gone: the source still serves them. r3 and r4 flipped and changed at the
    // source since: only a copy can help, and the backup's r4 is damaged too. A stray file.
    overwrite(&object(&mirror, &text(1)), b"resource 1, as mirrorEd\n");
    std::fs::remove_file(object(&mirror, &text(2))).unwrap();
    overwrite(&object(&mirror, &text(3)), b"rot\n");
    overwrite(&object(&mirror, &text(4)), b"rot\n");
    overwrite(&object(&backup, &text(4)), b"rot too\n");
    t.put("r3", b"r3, changed at the source\n");
    t.put("r4", b"r4, changed at the source\n");
    let stray = mirror.join("objects/sha256/ab").join("ab".repeat(32));
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, b"nobody's\n").unwrap();

    // A dry run names everything and changes nothing; what it found is damage: exit 1
    // (issue 44).
    let out = on_mirror(&mirror, &["repair", "--dry-run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let plan = stdout_of(&out);
    assert_eq!(plan.lines().count(), 5, "{plan}");
    assert!(plan.contains("missing-object"), "{plan}");
    assert!(plan.contains(&srv.url("/res/r3")), "{plan}");
    assert!(plan.contains("stray-object"), "{plan}");
    assert_eq!(
        std::fs::read(object(&mirror, &text(1))).unwrap(),
        b"resource 1, as mirrorEd\n"
    );
    assert!(stray.exists());

    // From the source: r1 and r2; r3 and r4 cannot be had (the source serves other bytes).
    let out = on_mirror(&mirror, &["repair", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["damaged"], 4);
    assert_eq!(s["restored_from_source"], 2);
    assert_eq!(s["unrepaired"].as_array().unwrap().len(), 2);
    let e = stderr_of(&out);
    assert!(e.contains("not repaired: "), "{e}");
    assert!(e.contains("no longer serves these bytes"), "{e}");
    assert_eq!(std::fs::read(object(&mirror, &text(1))).unwrap(), text(1));
    assert_eq!(std::fs::read(object(&mirror, &text(2))).unwrap(), text(2));
    assert!(!stray.exists());
    // The damaged r1 and the stray are kept in quarantine with a record of each.
    let quarantine: Vec<PathBuf> = std::fs::read_dir(mirror.join("quarantine"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    let kept: Vec<Vec<u8>> = quarantine
        .iter()
        .filter(|p| p.extension().is_none_or(|e| e != "json"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(
        kept.contains(&b"resource 1, as mirrorEd\n".to_vec()),
        "{quarantine:?}"
    );
    assert!(kept.contains(&b"nobody's\n".to_vec()), "{quarantine:?}");
    let records: Vec<serde_json::Value> = quarantine
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    assert!(
        records.iter().any(|r| r["found"] == "corrupt"),
        "{records:?}"
    );
    assert!(
        records.iter().any(|r| r["found"] == "stray-object"),
        "{records:?}"
    );
    // The repair run is in the log with what it did.
    let runs = stdout_of(&on_mirror(&mirror, &["log", "--json"]));
    let last: serde_json::Value = serde_json::from_str(runs.lines().next().unwrap()).unwrap();
    assert_eq!(last["command"], "repair");
    assert_eq!(last["exit_code"], 1);
    let shown = stdout_of(&on_mirror(
        &mirror,
        &["log", "--run", &last["run"].to_string()],
    ));
    assert!(shown.contains("repaired"), "{shown}");
    assert!(shown.contains("unrepaired"), "{shown}");
    assert!(shown.contains("quarantined"), "{shown}");

    // A --from-mirror that is not a mirror, or is this mirror: refused before anything is
    // read (issue 44), not one error per object.
    for (from, says) in [
        (mirror.join("no-such-folder"), "not a mirror"),
        (mirror.clone(), "the mirror being repaired"),
    ] {
        let out = on_mirror(
            &mirror,
            &[
                "repair",
                "--offline",
                "--from-mirror",
                from.to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
        assert!(stderr_of(&out).contains(says), "{}", stderr_of(&out));
        assert_eq!(stderr_of(&out).lines().count(), 1, "{}", stderr_of(&out));
    }

    // From the backup: r3; r4's copy is damaged too and is refused.
    let out = on_mirror(
        &mirror,
        &[
            "repair",
            "--offline",
            "--from-mirror",
            backup.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let e = stderr_of(&out);
    assert!(e.contains("its copy is damaged too"), "{e}");
    assert!(e.contains("1 from the other mirror"), "{e}");
    assert_eq!(std::fs::read(object(&mirror, &text(3))).unwrap(), text(3));

    // An offline audit now finds only r4.
    let out = on_mirror(&mirror, &["audit", "--offline", "--json", "--all-versions"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bad: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["class"] != "verified")
        .map(|f| f["uri"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(bad, vec![srv.url("/res/r4")], "{doc}");

    // --from-audit: what that audit found, checked again; r5 damaged since is not in it.
    overwrite(&object(&mirror, &text(5)), b"rot\n");
    let out = on_mirror(&mirror, &["repair", "--from-audit", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["damaged"], 1, "{s}");
    // With r4's good bytes back at the source, a repair finishes the job.
    t.put("r4", &text(4));
    let out = on_mirror(&mirror, &["repair"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = on_mirror(&mirror, &["audit", "--offline", "--all-versions"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_consistent(&mirror);
}
