//! Issue 22 item 4: disk full and permissions, as tests. A full file system (a small tmpfs)
//! during `repair` and `export`; a read-only mirror folder; an unwritable `objects/`. Each
//! write that cannot happen stops the run at once with exit 5 and a message naming the place,
//! loses nothing, leaves the catalog consistent, and a re-run after the fault is gone
//! completes. (The full disk during `baseline` is in guard.rs.)
//!
//! Root ignores file modes, so "read-only" here is a read-only mount (a remounted tmpfs, a
//! read-only bind mount); where mounting is refused the tests skip with a message.

use crate::server::TestServer;
use crate::support::*;
use std::path::{Path, PathBuf};

/// A read-only bind mount of a folder onto itself, undone when dropped (even when an
/// assertion fails); `None` with a message where mounting is refused.
struct ReadOnlyBind(PathBuf);

impl ReadOnlyBind {
    fn mount(dir: &Path) -> Option<ReadOnlyBind> {
        let run = |args: &[&str]| {
            std::process::Command::new("mount")
                .args(args)
                .arg(dir)
                .arg(dir)
                .status()
                .is_ok_and(|s| s.success())
        };
        if !run(&["--bind"]) {
            eprintln!(
                "skipped: a bind mount was refused (run as root to test an unwritable folder)"
            );
            return None;
        }
        let guard = ReadOnlyBind(dir.to_path_buf());
        let ro = std::process::Command::new("mount")
            .args(["-o", "remount,bind,ro"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ro {
            eprintln!("skipped: remounting a bind mount read-only was refused");
            return None;
        }
        Some(guard)
    }
}

impl Drop for ReadOnlyBind {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Fill the file system holding `filler` by growing it until a write fails, then give back
/// `slack` bytes (a tmpfs frees the pages of a truncated file at once).
fn squeeze(filler: &Path, slack: u64) {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(filler)
        .unwrap();
    let chunk = vec![0x55u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let small = [0x55u8; 512];
    while f.write_all(&small).is_ok() {}
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(slack)).unwrap();
}

/// The catalog passes SQLite's integrity check (opening it needs a little room for its
/// shared-memory file, so the caller gives some).
fn integrity_ok(mirror: &Path) {
    let conn = rusqlite::Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let ic: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ic, "ok");
}

fn object_of(mirror: &Path, sha: &str) -> PathBuf {
    mirror.join("objects/sha256").join(&sha[..2]).join(sha)
}

/// Every regular file under `dir` (recursively), with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            let bytes = std::fs::read(&p).unwrap();
            out.push((p, bytes));
        }
    }
    out
}

fn audit_offline_is_clean(mirror: &Path) {
    ok_on_mirror(mirror, &["audit", "--offline"]);
}

/// `repair` on a full disk: the bytes fetched again cannot be written. It stops with exit 5
/// and says the disk is full; every damaged file is still where it was or in quarantine with
/// its object restored (nothing half-done, nothing deleted); the catalog passes its integrity
/// check. The --min-free margin stops it before it starts. After space is freed, a re-run
/// repairs everything and an offline audit is clean.
#[test]
fn repair_on_a_full_disk_stops_loses_nothing_and_a_rerun_repairs() {
    let Some(disk) = Tmpfs::mount("8m") else {
        return;
    };
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 24, 64 * 1024);
    let srv = TestServer::start(tree.path());
    let mirror = disk.0.path().join("mirror");
    let out = baseline(&srv.url("/resourcelist.xml"), &mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // Damage five objects: a byte flipped in each.
    let shas: Vec<String> = current(&mirror).into_values().take(5).collect();
    let mut damaged = Vec::new();
    for sha in &shas {
        let path = object_of(&mirror, sha);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[100] ^= 0x20;
        std::fs::write(&path, &bytes).unwrap();
        damaged.push((sha.clone(), bytes));
    }
    let filler = disk.0.path().join("filler");
    squeeze(&filler, 0);
    let mirror_s = mirror.display().to_string();

    let check_nothing_lost = |mirror: &Path| {
        let quarantined = files_under(&mirror.join("quarantine"));
        for (sha, bad) in &damaged {
            let now = std::fs::read(object_of(mirror, sha)).ok();
            let kept = quarantined.iter().any(|(_, b)| b == bad);
            match now {
                Some(b) if b == *bad => assert!(!kept, "{sha}: both in place and quarantined"),
                Some(_) => {
                    assert_eq!(sha256_file(&object_of(mirror, sha)), *sha);
                    assert!(
                        kept,
                        "{sha}: restored but its damaged file is not in quarantine"
                    );
                }
                None => panic!("{sha}: the damaged file is neither in place nor restored"),
            }
        }
        // Every file in quarantine has its record beside it.
        for (p, _) in &quarantined {
            let name = p.file_name().unwrap().to_string_lossy();
            if !name.ends_with(".json") {
                assert!(
                    p.with_file_name(format!("{name}.json")).exists(),
                    "{} has no record",
                    p.display()
                );
            }
        }
    };

    // The real full disk (no margin): exit 5, the disk named full.
    let out = on_mirror(&mirror, &["repair", "--min-free", "0"]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("is full") && err.contains(&mirror_s), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    check_nothing_lost(&mirror);
    squeeze(&filler, 1 << 20);
    integrity_ok(&mirror);

    // Room for the catalog's run record but not for an object (64 KiB each): the bytes
    // fetched again do not fit in staging; the same stop, nothing quarantined.
    squeeze(&filler, 40 * 1024);
    let out = on_mirror(&mirror, &["repair", "--min-free", "0"]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("is full")
            && err.contains(&mirror_s)
            && err.contains("5 damaged objects left to repair"),
        "{err}"
    );
    assert!(
        !mirror.join("quarantine").exists() || files_under(&mirror.join("quarantine")).is_empty()
    );
    check_nothing_lost(&mirror);
    squeeze(&filler, 1 << 20);
    integrity_ok(&mirror);

    // The margin: with room for the bytes but under --min-free, it does not start.
    std::fs::remove_file(&filler).unwrap();
    let out = on_mirror(&mirror, &["repair", "--min-free", "1G"]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("--min-free") && err.contains(&mirror_s),
        "{err}"
    );
    check_nothing_lost(&mirror);

    // Space freed: the re-run repairs every object.
    let out = on_mirror(&mirror, &["repair"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    check_nothing_lost(&mirror);
    for (sha, _) in &damaged {
        assert_eq!(sha256_file(&object_of(&mirror, sha)), *sha);
    }
    audit_offline_is_clean(&mirror);
    assert_consistent(&mirror);
}

/// `export` into a destination that fills up: exit 5 naming the destination and that it is
/// full, the export marked incomplete, the mirror untouched; once there is room, the same
/// command finishes (and the bag validates).
#[test]
#[cfg_attr(
    missing = "bagit",
    ignore = "bagit-python (bagit.py) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn export_into_a_full_destination_says_so_and_finishes_once_there_is_room() {
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 40, 64 * 1024);
    let srv = TestServer::start(tree.path());
    let home = tempfile::tempdir().unwrap();
    let mirror = home.path().join("mirror");
    let out = baseline(&srv.url("/resourcelist.xml"), &mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let (listed, _) = ok_on_mirror(&mirror, &["ls"]);
    let catalog = std::fs::read(mirror.join("catalog.sqlite")).unwrap();
    for format in ["tree", "bagit"] {
        let Some(disk) = Tmpfs::mount("1m") else {
            return;
        };
        let dest = disk.0.path().join(format);
        let dest_s = dest.display().to_string();
        let export = || {
            rsmirror()
                .args(["export", format])
                .arg(&dest)
                .arg("--mirror")
                .arg(&mirror)
                .timeout(std::time::Duration::from_secs(60))
                .output()
                .unwrap()
        };
        let out = export();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(5), "{format}: {err}");
        assert!(
            err.contains(&dest_s) && err.contains("full"),
            "{format}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            dest.join(".rsmirror-export/INCOMPLETE").exists(),
            "{format}"
        );
        assert!(
            err.contains("marked incomplete (.rsmirror-export/INCOMPLETE)"),
            "{err}"
        );
        // The mirror is untouched.
        assert_eq!(ok_on_mirror(&mirror, &["ls"]).0, listed);
        assert_eq!(
            std::fs::read(mirror.join("catalog.sqlite")).unwrap(),
            catalog
        );

        disk.resize("16m");
        let out = export();
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr_of(&out));
        assert!(!dest.join(".rsmirror-export/INCOMPLETE").exists());
        let left = files_under(&dest);
        assert!(
            left.iter()
                .all(|(p, _)| !p.to_string_lossy().contains(".rsmirror-tmp")),
            "{format}"
        );
        if format == "bagit" {
            crate::export::validate_bag(&dest);
        } else {
            assert_eq!(
                left.iter()
                    .filter(|(p, _)| !p.starts_with(dest.join(".rsmirror-export")))
                    .count(),
                40
            );
        }
    }
    // A destination full before the export starts: not even its record fits. The message
    // does not claim a mark that is not there, and the same command works once there is room.
    let Some(disk) = Tmpfs::mount("1m") else {
        return;
    };
    let filler = disk.0.path().join("filler");
    squeeze(&filler, 0);
    let dest = disk.0.path().join("tree");
    let out = on_mirror(&mirror, &["export", "tree", dest.to_str().unwrap()]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains(&dest.display().to_string())
            && err.contains("is full")
            && err.contains("nothing of the export is in place yet"),
        "{err}"
    );
    std::fs::remove_file(&filler).unwrap();
    disk.resize("16m");
    ok_on_mirror(&mirror, &["export", "tree", dest.to_str().unwrap()]);
    assert!(!dest.join(".rsmirror-export/INCOMPLETE").exists());
    assert_eq!(ok_on_mirror(&mirror, &["ls"]).0, listed);
    audit_offline_is_clean(&mirror);
}

/// A read-only mirror folder: every command that writes to it (baseline, incremental, repair)
/// fails at once, exit 5, naming the read-only place; export reads it and writes elsewhere,
/// and an export into read-only media fails the same way. Nothing panics or hangs, and the
/// mirror reads the same afterwards.
#[test]
fn a_read_only_mirror_refuses_writes_at_once_and_reads_the_same_after() {
    let Some(disk) = Tmpfs::mount("20m") else {
        return;
    };
    let srv = TestServer::start(crate::server::testdata("sample"));
    let mirror = disk.0.path().join("mirror");
    let out = baseline(&srv.url("/"), &mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let (listed, _) = ok_on_mirror(&mirror, &["ls"]);
    disk.remount("ro");
    let mirror_s = mirror.display().to_string();
    let source = srv.url("/");
    let elsewhere = tempfile::tempdir().unwrap();
    let read_only_dest = disk.0.path().join("export");
    let read_only_dest = read_only_dest.to_str().unwrap();
    let commands: Vec<(&str, Vec<&str>, &str)> = vec![
        ("baseline", vec!["baseline", &source], &mirror_s),
        ("incremental", vec!["incremental"], &mirror_s),
        ("repair", vec!["repair"], &mirror_s),
        (
            "export to read-only media",
            vec!["export", "tree", read_only_dest],
            read_only_dest,
        ),
    ];
    for (name, args, named) in commands {
        let started = std::time::Instant::now();
        let out = rsmirror()
            .args(&args)
            .arg("--mirror")
            .arg(&mirror)
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(5), "{name}: {err}");
        assert!(
            err.contains(named) && err.to_lowercase().contains("read-only"),
            "{name}: {err}"
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
        if named == mirror_s {
            assert!(err.contains("audit --offline"), "{name}: {err}");
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{name}: took {:?}",
            started.elapsed()
        );
    }
    // export reads the read-only mirror and writes elsewhere.
    let dest = elsewhere.path().join("tree");
    ok_on_mirror(&mirror, &["export", "tree", dest.to_str().unwrap()]);
    assert_eq!(ok_on_mirror(&mirror, &["ls"]).0, listed);

    disk.remount("rw");
    audit_offline_is_clean(&mirror);
    assert_eq!(ok_on_mirror(&mirror, &["ls"]).0, listed);
    assert_consistent(&mirror);
    assert!(!Path::new(read_only_dest).exists());
}

/// An unwritable `objects/` (a read-only bind mount): a baseline that brings new objects
/// fails with exit 5 naming objects/ and the error; no version points at an object that is not
/// there; once it is writable again the re-run completes.
#[test]
fn an_unwritable_objects_folder_stops_the_run_and_a_rerun_completes() {
    let small = tempfile::tempdir().unwrap();
    generate_source(small.path(), 5, 1024);
    let srv = TestServer::start(small.path());
    let home = tempfile::tempdir().unwrap();
    let mirror = home.path().join("mirror");
    let out = baseline(&srv.url("/resourcelist.xml"), &mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let bigger = tempfile::tempdir().unwrap();
    generate_source(bigger.path(), 30, 1024);
    srv.set_root(bigger.path());
    let objects = mirror.join("objects");
    {
        let Some(_ro) = ReadOnlyBind::mount(&objects) else {
            return;
        };
        let out = baseline(&srv.url("/resourcelist.xml"), &mirror)
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(5), "{err}");
        assert!(
            err.contains(&objects.display().to_string()) && err.contains("Read-only file system"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.lines().count() <= 3,
            "one message, not a line per resource: {err}"
        );
        assert_consistent(&mirror);
        assert!(current(&mirror).len() < 30);
    }
    let out = baseline(&srv.url("/resourcelist.xml"), &mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(&mirror).len(), 30);
    assert_consistent(&mirror);
    audit_offline_is_clean(&mirror);

    // repair cannot put the good bytes into an unwritable objects/: exit 5 naming the object,
    // the damaged file left where it was, nothing in quarantine.
    let sha = current(&mirror).into_values().next().unwrap();
    let path = object_of(&mirror, &sha);
    let mut bad = std::fs::read(&path).unwrap();
    bad[10] ^= 0x20;
    std::fs::write(&path, &bad).unwrap();
    {
        let Some(_ro) = ReadOnlyBind::mount(&objects) else {
            return;
        };
        let out = on_mirror(&mirror, &["repair"]);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(5), "{err}");
        assert!(
            err.contains(&path.display().to_string()) && err.contains("cannot write to"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), bad);
        assert!(files_under(&mirror.join("quarantine")).is_empty());
        integrity_ok(&mirror);
    }
    ok_on_mirror(&mirror, &["repair"]);
    assert_eq!(sha256_file(&path), sha);
    assert_consistent(&mirror);
    audit_offline_is_clean(&mirror);
}

/// Issue 24: a baseline copies the list to a scratch database in `staging/` before it plans.
/// On a disk too full for that copy the run stops with exit 5 naming the copy and the full
/// disk, before anything is fetched or recorded as a version; the mirror is as it was, and
/// once there is room the next run leaves no copy behind.
#[test]
fn a_list_too_big_for_the_disk_stops_the_baseline_before_anything_changes() {
    use std::fmt::Write as _;
    let Some(disk) = Tmpfs::mount("6m") else {
        return;
    };
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 5, 1024);
    let srv = TestServer::start(tree.path());
    let mirror = disk.0.path().join("mirror");
    let list = srv.url("/resourcelist.xml");
    let out = baseline(&list, &mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let before = current(&mirror);
    assert_eq!(before.len(), 5);

    // The same list and 40,000 more entries: about 10 MB in its scratch copy.
    let small = std::fs::read_to_string(tree.path().join("resourcelist.xml")).unwrap();
    let mut big = small.replace("</urlset>\n", "");
    for i in 0..40_000 {
        writeln!(
            big,
            "<url><loc>http://sample.example.org/more/{i:08}</loc><lastmod>2025-12-31T10:00:00Z\
             </lastmod><rs:md hash=\"sha-256:{:064x}\" length=\"100\"/></url>",
            i
        )
        .unwrap();
    }
    big.push_str("</urlset>\n");
    std::fs::write(tree.path().join("resourcelist.xml"), &big).unwrap();
    let filler = disk.0.path().join("filler");
    squeeze(&filler, 256 * 1024);
    let out = baseline(&list, &mirror)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("the list's scratch copy") && err.contains("full"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(current(&mirror), before);
    assert_consistent(&mirror);

    std::fs::write(tree.path().join("resourcelist.xml"), small).unwrap();
    let out = baseline(&list, &mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(&mirror), before);
    assert!(
        files_under(&mirror.join("staging")).is_empty(),
        "{:?}",
        files_under(&mirror.join("staging"))
    );
    audit_offline_is_clean(&mirror);
}

/// Issue 66, 12: a read-only `staging/` (a mount of its own, remounted read-only) is said to be
/// read-only, naming the folder, not "Device or resource busy"; nothing in the mirror changes,
/// and once it is writable again the same command runs.
#[test]
fn a_read_only_staging_folder_is_said_to_be_read_only() {
    let tree = Tree::new();
    generate_source(tree.path(), 5, 1024);
    let srv = TestServer::start(tree.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror");
    let list = srv.url("/resourcelist.xml");
    let out = baseline(&list, &mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let before = current(&mirror);
    let staging = mirror.join("staging");
    std::fs::write(staging.join("left-over"), b"from a run that died").unwrap();
    {
        let Some(_ro) = ReadOnlyBind::mount(&staging) else {
            return;
        };
        for args in [&["incremental"][..], &["baseline", &list], &["repair"]] {
            let out = rsmirror()
                .args(args)
                .arg("--mirror")
                .arg(&mirror)
                .output()
                .unwrap();
            let err = stderr_of(&out);
            assert_eq!(out.status.code(), Some(5), "{args:?}: {err}");
            assert!(
                err.contains("read-only")
                    && err.contains(&staging.display().to_string())
                    && !err.contains("busy"),
                "{args:?}: {err}"
            );
        }
        assert_eq!(current(&mirror), before);
    }
    let out = baseline(&list, &mirror).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(!staging.join("left-over").exists());
}
