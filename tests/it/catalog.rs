//! Issue 43: the catalog is the mirror. Damage is noticed before anything is written (a header
//! byte, garbage in random pages, a write-ahead log cut or overwritten after a run died): every
//! writing command and an idle `incremental` exit 5 with one message that names the damage and
//! the recovery, and nothing is written; `catalog restore` brings back a mirror that audits
//! clean; a closed stderr never panics a run and SIGTERM always stops it.

use crate::server::TestServer;
use crate::support::*;
use std::path::Path;

/// A generated source of `n` resources of `size` bytes, served: (its folder, the server, the
/// Resource List's URL).
fn served(n: usize, size: usize) -> (tempfile::TempDir, TestServer, String) {
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), n, size);
    let srv = TestServer::start(tree.path());
    let list = srv.url("/resourcelist.xml");
    (tree, srv, list)
}

/// A good mirror of a generated source (`n` resources), its server and the list's URL.
struct Good {
    _tree: tempfile::TempDir,
    srv: TestServer,
    list: String,
    dir: tempfile::TempDir,
}

impl Good {
    fn new(n: usize) -> Good {
        let (tree, srv, list) = served(n, 32);
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m");
        let out = baseline(&list, &m).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        Good {
            _tree: tree,
            srv,
            list,
            dir,
        }
    }

    fn mirror(&self) -> std::path::PathBuf {
        self.dir.path().join("m")
    }

    /// A copy of the good mirror to damage.
    fn copy(&self) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m");
        copy_tree(&self.mirror(), &m);
        (dir, m)
    }

    /// The commands that write (and the idle incremental), as they would be typed.
    fn writers(&self) -> Vec<Vec<String>> {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        vec![
            s(&["incremental"]),
            s(&["baseline", &self.list]),
            s(&["audit"]),
            s(&["audit", "--offline"]),
            s(&["repair", "--offline"]),
            s(&["source", "remove", &self.list]),
        ]
    }
}

/// What a command must leave as it found: the catalog's bytes, its log's, the seal, the
/// objects and the copies.
fn snapshot(m: &Path) -> Vec<String> {
    let hash = |p: &Path| match p.exists() {
        true => sha256_file(p),
        false => "absent".into(),
    };
    let wal = m.join("catalog.sqlite-wal");
    vec![
        hash(&m.join("catalog.sqlite")),
        match std::fs::metadata(&wal).map(|w| w.len()).unwrap_or(0) {
            0 => "no log".into(),
            _ => hash(&wal),
        },
        std::fs::read_to_string(m.join("catalog.seal")).unwrap_or_default(),
        walk_files(&m.join("objects")).len().to_string(),
        walk_files(&m.join("catalog-copies")).len().to_string(),
    ]
}

/// Every command in `commands` exits 5 on the mirror, saying the catalog is damaged and how to
/// recover, and writes nothing; `says` must be in each message. The number that held.
fn all_refused(m: &Path, commands: &[Vec<String>], says: &str) -> usize {
    let mut held = 0;
    for c in commands {
        let before = snapshot(m);
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        let out = on_mirror(m, &args);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(5), "{c:?}: {err}");
        assert!(
            err.contains("is damaged") && err.contains("catalog restore") && err.contains(says),
            "{c:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{c:?}: one message: {err}");
        assert_eq!(snapshot(m), before, "{c:?} wrote something");
        held += 1;
    }
    held
}

#[test]
fn one_header_byte_stops_every_command_and_nothing_is_written() {
    let good = Good::new(40);
    let (_d, m) = good.copy();
    // The case: one byte at offset 67 (incremental vacuum, without auto-vacuum).
    let db = m.join("catalog.sqlite");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[67] = 1;
    std::fs::write(&db, bytes).unwrap();
    let mut commands = good.writers();
    commands.push(vec!["ls".into()]);
    commands.push(vec!["status".into()]);
    let held = all_refused(&m, &commands, "header byte 64: incremental vacuum");
    // `catalog check` names it too, and exits 5.
    let out = on_mirror(&m, &["catalog", "check"]);
    assert_eq!(out.status.code(), Some(5));
    assert!(
        stdout_of(&out).contains("DAMAGED SQLite's file header"),
        "{}",
        stdout_of(&out)
    );
    record_tally(&format!(
        "catalog faults: header byte 67: {held}/{} commands exit 5 naming it, nothing written",
        commands.len()
    ));
}

#[test]
fn garbage_in_random_pages_stops_every_writer_seed_by_seed() {
    let good = Good::new(300);
    let writers = good.writers();
    let seeds = 32u64;
    let mut refused = 0;
    for seed in 1..=seeds {
        let (_d, m) = good.copy();
        let db = m.join("catalog.sqlite");
        let mut bytes = std::fs::read(&db).unwrap();
        let page = 4096;
        let pages = bytes.len() / page;
        let mut rng = Rng(seed * 7919);
        let at = rng.pick(pages) * page;
        for b in &mut bytes[at..at + page] {
            *b = rng.next() as u8;
        }
        std::fs::write(&db, bytes).unwrap();
        // Every writer (the idle incremental first), then `catalog check`.
        refused += all_refused(&m, &writers, "");
        let out = on_mirror(&m, &["catalog", "check"]);
        assert_eq!(
            out.status.code(),
            Some(5),
            "seed {seed}: {}",
            stdout_of(&out)
        );
    }
    record_tally(&format!(
        "catalog faults: a page of garbage, {seeds} seeds: {refused}/{} writer runs exit 5 with \
         nothing written; catalog check exits 5 on every seed",
        seeds as usize * writers.len()
    ));
}

/// Run a baseline of `list` killed at the second commit of versions (a debug build's kill
/// point), leaving its write-ahead log; the log's frames.
fn killed_with_a_log(list: &str, m: &Path) -> u64 {
    let out = rsmirror()
        .env("RSMIRROR_KILL_AT", "writer.committed:2")
        .args(["baseline", list, "-j", "2", "--mirror"])
        .arg(m)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "the run was to be killed");
    let wal = std::fs::metadata(m.join("catalog.sqlite-wal"))
        .unwrap()
        .len();
    assert!(wal > 32 + 4120 * 4, "a log with frames: {wal} bytes");
    (wal - 32) / (24 + 4096)
}

#[test]
#[cfg_attr(not(debug_assertions), ignore = "kill points need a debug build")]
fn a_cut_or_overwritten_log_after_a_killed_run_stops_every_writer() {
    let (_tree, _srv, list) = served(2000, 16);
    let writers: Vec<Vec<String>> = [
        vec!["incremental"],
        vec!["baseline", list.as_str()],
        vec!["audit"],
        vec!["audit", "--offline"],
        vec!["repair", "--offline"],
        vec!["source", "remove", list.as_str()],
    ]
    .iter()
    .map(|c| c.iter().map(|a| a.to_string()).collect())
    .collect();
    let mut held = 0;
    for damage in ["cut", "garbage"] {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m");
        let frames = killed_with_a_log(&list, &m);
        let wal = m.join("catalog.sqlite-wal");
        let at = 32 + (frames / 3) * (24 + 4096);
        match damage {
            "cut" => {
                let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
                f.set_len(at).unwrap();
            }
            _ => {
                let mut bytes = std::fs::read(&wal).unwrap();
                let mut rng = Rng(99);
                for b in &mut bytes[at as usize..at as usize + 4120] {
                    *b = rng.next() as u8;
                }
                std::fs::write(&wal, bytes).unwrap();
            }
        }
        held += all_refused(&m, &writers, "lost commits");
    }
    record_tally(&format!(
        "catalog faults: the log of a killed run cut, or a frame overwritten: {held}/{} writer \
         runs exit 5 naming the lost commits, nothing written",
        2 * writers.len()
    ));
}

#[test]
fn restore_brings_back_a_mirror_that_audits_clean() {
    let good = Good::new(60);
    let (_d, m) = good.copy();
    // A second run after the first (a copy each); then garbage in the catalog.
    ok_on_mirror(&m, &["baseline", &good.list]);
    let db = m.join("catalog.sqlite");
    let mut bytes = std::fs::read(&db).unwrap();
    for b in &mut bytes[4096 * 2..4096 * 3] {
        *b = 0xA5;
    }
    std::fs::write(&db, bytes).unwrap();
    assert_eq!(on_mirror(&m, &["incremental"]).status.code(), Some(5));

    let (_, err) = ok_on_mirror(&m, &["catalog", "restore"]);
    assert!(err.contains("restored the catalog from"), "{err}");
    // The damaged catalog is kept aside, not deleted.
    let aside: Vec<_> = std::fs::read_dir(&m)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("damaged-catalog-")
        })
        .collect();
    assert_eq!(aside.len(), 1);
    assert!(aside[0].path().join("catalog.sqlite").is_file());
    ok_on_mirror(&m, &["catalog", "check"]);
    let (out, _) = ok_on_mirror(&m, &["audit"]);
    assert!(!out.contains("stray"), "{out}");
    assert_eq!(current(&m).len(), 60);
    // A writer goes on from it.
    ok_on_mirror(&m, &["incremental"]);
    let _ = &good.srv;
}

#[test]
fn restore_takes_the_newest_good_copy_and_finds_again_what_came_after_it() {
    let tree = Tree::new();
    tree.put("a", b"a1");
    tree.resource_list("2026-01-01T00:00:00Z", &["a"]);
    let srv = TestServer::start(tree.path());
    let list = srv.url("/resourcelist.xml");
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    ok_on_mirror(&m, &["baseline", &list]);
    // The source grows; a second run brings b (and makes the newest copy).
    tree.put("b", b"b1");
    tree.resource_list("2026-01-02T00:00:00Z", &["a", "b"]);
    ok_on_mirror(&m, &["baseline", &list]);
    // The newest copy is damaged too: restore says so and takes the one before.
    let copies = rsmirror::store::copies::list(&m);
    assert_eq!(copies.len(), 2);
    std::fs::write(&copies[0].path, b"not zstd").unwrap();
    std::fs::write(m.join("catalog.sqlite"), b"garbage where a catalog was").unwrap();

    let (_, err) = ok_on_mirror(&m, &["catalog", "restore"]);
    assert!(
        err.contains(&format!("copy {} is not good", copies[0].record.file)),
        "{err}"
    );
    assert!(
        err.contains("1 object(s) in objects/ are newer than the copy"),
        "{err}"
    );
    // The baseline after it found b again: both present, nothing stray.
    let now = current(&m);
    assert_eq!(now.len(), 2, "{now:?}");
    let (out, _) = ok_on_mirror(&m, &["audit", "--offline"]);
    assert!(!out.contains("stray"), "{out}");
}

#[test]
fn restore_offline_puts_the_copy_back_and_names_the_baselines_to_run() {
    let good = Good::new(10);
    let (_d, m) = good.copy();
    std::fs::remove_file(m.join("catalog.sqlite")).unwrap();
    let (_, err) = ok_on_mirror(&m, &["catalog", "restore", "--offline"]);
    assert!(
        err.contains("run rsmirror baseline of each source"),
        "{err}"
    );
    assert!(err.contains(&good.list), "{err}");
    assert_eq!(current(&m).len(), 10);
    ok_on_mirror(&m, &["audit", "--offline"]);
}

#[test]
fn copies_are_kept_as_asked_and_prove_by_their_sha256() {
    let good = Good::new(5);
    let (_d, m) = good.copy();
    for _ in 0..4 {
        ok_on_mirror(&m, &["audit", "--offline", "--catalog-copies", "2"]);
    }
    let copies = rsmirror::store::copies::list(&m);
    assert_eq!(copies.len(), 2);
    for c in &copies {
        assert_eq!(sha256_file(&c.path), c.record.zst_sha256);
        let db = zstd::decode_all(std::fs::File::open(&c.path).unwrap()).unwrap();
        assert_eq!(
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&db)),
            c.record.sha256
        );
    }
    // The newest copy is the catalog as the run left it.
    assert_eq!(
        copies[0].record.sha256,
        sha256_file(&m.join("catalog.sqlite"))
    );
    ok_on_mirror(&m, &["audit", "--offline", "--catalog-copies", "0"]);
    assert_eq!(rsmirror::store::copies::list(&m).len(), 2, "0 makes none");
}

#[test]
fn a_sound_edit_of_the_catalog_is_checked_in_full_and_accepted() {
    let good = Good::new(5);
    let (_d, m) = good.copy();
    let conn = rusqlite::Connection::open(m.join("catalog.sqlite")).unwrap();
    conn.execute("UPDATE runs SET arguments = 'edited' WHERE id = 1", [])
        .unwrap();
    drop(conn);
    ok_on_mirror(&m, &["incremental"]);
    // The writer read it whole, went on, and sealed what it left: the seal names the file.
    let seal: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.join("catalog.seal")).unwrap()).unwrap();
    assert_eq!(seal["state"], "sealed");
    assert_eq!(
        seal["sha256"].as_str().unwrap(),
        sha256_file(&m.join("catalog.sqlite"))
    );
    let (out, _) = ok_on_mirror(&m, &["catalog", "check"]);
    assert!(out.contains("ok      PRAGMA integrity_check"), "{out}");
}

/// Stray bytes inside a text value (a run's time overwritten on disk) leave a file SQLite finds
/// sound: the bytes are not UTF-8, which rsmirror never writes, so every writer stops on it,
/// naming the table and column, and writes nothing.
#[test]
fn stray_bytes_inside_a_text_value_stop_every_writer() {
    let good = Good::new(5);
    let (_d, m) = good.copy();
    let db = m.join("catalog.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let started: String = conn
        .query_row("SELECT started_at FROM runs WHERE id = 1", [], |r| r.get(0))
        .unwrap();
    drop(conn);
    let mut bytes = std::fs::read(&db).unwrap();
    let at = bytes
        .windows(started.len())
        .position(|w| w == started.as_bytes())
        .expect("the run's time is in the file");
    bytes[at + 5..at + 9].copy_from_slice(&[0xc0, 0x7d, 0xff, 0x1b]);
    std::fs::write(&db, &bytes).unwrap();
    let held = all_refused(
        &m,
        &good.writers(),
        "table runs, row 1, column started_at is not UTF-8",
    );
    assert_eq!(held, good.writers().len());
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "written to");
}

/// A catalog emptied (0 bytes) under a mirror whose seal says it held rows is damage, not a
/// new mirror: nothing is made in its place.
#[test]
fn an_emptied_catalog_is_damage_not_a_new_mirror() {
    let good = Good::new(5);
    let (_d, m) = good.copy();
    std::fs::write(m.join("catalog.sqlite"), b"").unwrap();
    let held = all_refused(&m, &good.writers(), "it is empty (0 bytes)");
    assert_eq!(held, good.writers().len());
    assert_eq!(
        std::fs::metadata(m.join("catalog.sqlite")).unwrap().len(),
        0
    );
}

/// SIGTERM with stderr a closed pipe stops the run (exit 130, the run row closed); without a
/// signal, a closed stderr does not end the run at its first `failed:` line.
#[cfg(unix)]
#[test]
fn a_closed_stderr_neither_panics_a_run_nor_swallows_sigterm() {
    use std::time::{Duration, Instant};
    let (_tree, srv, list) = served(300, 64);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");

    srv.set_delay(Duration::from_millis(20));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["baseline", &list, "-v", "-j", "2", "--mirror"])
        .arg(&m)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take()); // the logger died
    let deadline = Instant::now() + Duration::from_secs(30);
    while srv
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/res/"))
        .count()
        < 20
    {
        assert!(Instant::now() < deadline, "run never got going");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let conn = rusqlite::Connection::open(m.join("catalog.sqlite")).unwrap();
    let (outcome, ended): (String, Option<String>) = conn
        .query_row(
            "SELECT outcome, ended_at FROM runs ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(outcome, "interrupted");
    assert!(ended.is_some());
    drop(conn);

    // No signal: resources fail (their lines go to a closed stderr) and the run ends as it
    // should (3), not with a panic (101), its row closed. A new mirror: all 300 to fetch.
    let m = dir.path().join("m2");
    srv.set_delay(Duration::ZERO);
    srv.set_rule("/res/000007", crate::server::Rule::Status(500));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["baseline", &list, "--mirror"])
        .arg(&m)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    let conn = rusqlite::Connection::open(m.join("catalog.sqlite")).unwrap();
    let (outcome, code): (String, i64) = conn
        .query_row(
            "SELECT outcome, exit_code FROM runs ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((outcome.as_str(), code), ("partial", 3));
}

/// Objects a run placed before it stopped (here: killed after placing one, before naming it)
/// are said to be that run's, not "left by hand", and the next baseline re-attaches them by
/// digest without fetching them again.
#[test]
#[cfg_attr(not(debug_assertions), ignore = "kill points need a debug build")]
fn objects_a_stopped_run_placed_are_its_and_are_re_attached() {
    let (_tree, srv, list) = served(20, 32);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let out = rsmirror()
        .env("RSMIRROR_KILL_AT", "object.placed:3")
        .args(["baseline", &list, "-j", "1", "--mirror"])
        .arg(&m)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let placed = walk_files(&m.join("objects")).len();
    assert!(placed >= 1, "the killed run placed objects");
    let out = on_mirror(&m, &["audit", "--offline"]);
    let text = stdout_of(&out);
    assert!(
        text.contains("placed by run 1, which stopped before it named it")
            && !text.contains("by hand"),
        "{text}"
    );
    srv.clear_requests();
    ok_on_mirror(&m, &["baseline", &list]);
    let fetched = srv
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/res/"))
        .count();
    assert!(
        fetched <= 20 - placed,
        "{fetched} fetched, {placed} were held"
    );
    let conn = rusqlite::Connection::open(m.join("catalog.sqlite")).unwrap();
    let held: i64 = conn
        .query_row(
            "SELECT count(*) FROM versions WHERE arrived_via = 'held'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(held >= 1, "{held} held of {placed} placed");
    drop(conn);
    let (text, _) = ok_on_mirror(&m, &["audit", "--offline"]);
    assert!(!text.contains("stray"), "{text}");
}

/// No copy is good: `catalog rebuild` makes a new catalog from the source's current list and
/// the objects already present, fetching none of the bytes it holds, and says the history
/// before it is lost.
#[test]
fn rebuild_without_a_good_copy_fetches_nothing_already_held() {
    let good = Good::new(50);
    let (_d, m) = good.copy();
    std::fs::remove_dir_all(m.join("catalog-copies")).unwrap();
    std::fs::write(m.join("catalog.sqlite"), vec![0x5a; 64 * 1024]).unwrap();
    assert_eq!(
        on_mirror(&m, &["catalog", "restore"]).status.code(),
        Some(5)
    );
    // Nothing can be read from it: the sources must be named.
    let out = on_mirror(&m, &["catalog", "rebuild"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("rsmirror catalog rebuild SOURCE"));

    good.srv.clear_requests();
    let (_, err) = ok_on_mirror(&m, &["catalog", "rebuild", &good.list]);
    assert!(
        err.contains("the history before this rebuild is lost"),
        "{err}"
    );
    assert!(
        err.contains("50 resource(s) taken from the objects already present, 0 fetched"),
        "{err}"
    );
    let fetched = good
        .srv
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/res/"))
        .count();
    assert_eq!(fetched, 0, "bytes already held were fetched again");
    let (ls, _) = ok_on_mirror(&m, &["ls"]);
    let listed: Vec<String> = (0..50)
        .map(|i| good.srv.url(&format!("/res/{i:06}")))
        .collect();
    assert_eq!(ls.lines().collect::<Vec<_>>(), listed);
    let (out, _) = ok_on_mirror(&m, &["audit"]);
    assert!(!out.contains("stray"), "{out}");
}

/// A rebuild keeps what each source kept: its `--map` rules, its filter and its options are
/// read from the damaged catalog and given to the baseline that rebuilds it, which keeps them
/// again (a rebuilt mirror that forgot its filter would fetch what was left out on purpose).
#[test]
fn rebuild_keeps_each_sources_filter_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
    let source = "http://sample.example.org/";
    let map = format!("{source}={}", sample.display());
    let made = on_mirror(
        &m,
        &[
            "baseline",
            source,
            "--map",
            &map,
            "--exclude",
            "*.png",
            "--timeout",
            "7",
            "--delay",
            "0.01",
            "-q",
        ],
    );
    assert_eq!(made.status.code(), Some(0), "{}", stderr_of(&made));
    let kept = |m: &Path| {
        let (out, _) = ok_on_mirror(m, &["source", "list", "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let s = &doc["sources"][0];
        (s["filter"].clone(), s["settings"].clone())
    };
    let before = kept(&m);
    assert_eq!(before.0["exclude"][0], "*.png", "{before:?}");
    let (ls_before, _) = ok_on_mirror(&m, &["ls"]);
    assert!(
        !ls_before.contains(".png") && ls_before.lines().count() == 7,
        "{ls_before}"
    );

    // Sound, so only with --force (a damaged one needs none: the other tests here).
    std::fs::remove_dir_all(m.join("catalog-copies")).unwrap();
    let (_, err) = ok_on_mirror(&m, &["catalog", "rebuild", "--force"]);
    assert!(
        err.contains("with what it kept: --exclude *.png --delay 0.01 --timeout 7"),
        "{err}"
    );
    assert_eq!(kept(&m), before);
    let (ls_after, _) = ok_on_mirror(&m, &["ls"]);
    assert_eq!(ls_after, ls_before);
}

/// The free space of the file system after the run, and its size.
fn free_on(path: &Path) -> u64 {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a zeroed statvfs is a valid buffer; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    st.f_bavail as u64 * st.f_frsize as u64
}

/// `--min-free` is kept whatever writes: the transfers in flight are counted (what is started
/// fits above it), the writer does not commit under it, and the catalog's copy is not made
/// under it (said); the run stops with exit 5.
#[test]
fn the_min_free_margin_is_kept_by_transfers_commits_and_copies() {
    let Some(disk) = Tmpfs::mount("48m") else {
        return;
    };
    let (_tree, srv, _list) = served(60, 1 << 20);
    let m = disk.0.path().join("m");
    let out = baseline(&srv.url("/resourcelist.xml"), &m)
        .args(["--min-free", "16M", "-j", "4"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("--min-free margin of 16.0 MiB"), "{err}");
    let free = free_on(disk.0.path());
    // A final commit and the run's row may take a little (the log of one small transaction).
    assert!(
        free + (1 << 20) >= 16 << 20,
        "{free} bytes free, under the margin: {err}"
    );
    assert!((1..60).contains(&current(&m).len()));
    assert_consistent(&m);
}

/// A file system out of inodes (not bytes) is named as such.
#[test]
fn running_out_of_inodes_is_named() {
    let Some(disk) = Tmpfs::mount_with("size=64m,nr_inodes=80") else {
        return;
    };
    let (_tree, srv, _list) = served(200, 16);
    let m = disk.0.path().join("m");
    let out = baseline(&srv.url("/resourcelist.xml"), &m)
        .args(["--min-free", "0"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("no inode left"), "{err}");
}

/// repair moves a folder where none belongs (`objects/sha256/zz/`) to quarantine, as it counts it.
#[test]
fn repair_quarantines_a_stray_folder_it_counts() {
    let good = Good::new(5);
    let (_d, m) = good.copy();
    let zz = m.join("objects/sha256/zz");
    std::fs::create_dir_all(&zz).unwrap();
    std::fs::write(zz.join("note"), b"left here").unwrap();
    let (_, err) = ok_on_mirror(&m, &["repair", "--offline"]);
    assert!(err.contains("1 stray file quarantined"), "{err}");
    assert!(!zz.exists(), "the folder is still there");
    let moved: Vec<_> = walk_files(&m.join("quarantine"))
        .into_iter()
        .filter(|p| p.ends_with("zz/note"))
        .collect();
    assert_eq!(moved.len(), 1, "{:?}", walk_files(&m.join("quarantine")));
    ok_on_mirror(&m, &["audit", "--offline"]);
}

/// The write-ahead log cut while a run writes (the case: that run exited 0 and the
/// catalog was corrupt): the run sees it at its next commit, stops with exit 5 writing nothing
/// more (no checkpoint of the damaged log), the next writer refuses, and `catalog restore`
/// brings the mirror back.
#[test]
fn a_log_cut_while_a_run_writes_stops_that_run() {
    use std::time::{Duration, Instant};
    let (tree, srv, list) = served(3000, 16);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    // A first, quick baseline (a copy to restore), then the source changes and a slow one.
    let out = baseline(&list, &m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    generate_source(tree.path(), 3000, 24);
    srv.set_delay(Duration::from_millis(2));
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["baseline", &list, "-j", "2", "--mirror"])
        .arg(&m)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let wal = m.join("catalog.sqlite-wal");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(&wal).map_or(0, |w| w.len()) < 32 + 3 * 4120 {
        assert!(Instant::now() < deadline, "the run never committed");
        std::thread::sleep(Duration::from_millis(5));
    }
    let at = std::fs::metadata(&wal).map_or(0, |w| w.len());
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.set_len(32 + 4120).unwrap();
    drop(f);
    eprintln!("cut the log from {at} bytes");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("write-ahead log was changed while this run wrote"),
        "{err}"
    );
    // The next writer goes on only from a catalog that is sound (SQLite recovers the log up to
    // the cut: as if the stopped run had stopped earlier) and refuses otherwise; `catalog
    // check` agrees with it. Either way restore brings back a mirror that audits clean.
    let check = on_mirror(&m, &["catalog", "check"]).status.code();
    let out = on_mirror(&m, &["incremental"]);
    assert_eq!(out.status.code(), check, "{}", stderr_of(&out));
    srv.set_delay(Duration::ZERO);
    ok_on_mirror(&m, &["catalog", "restore", "--force"]);
    let (text, _) = ok_on_mirror(&m, &["audit"]);
    assert!(!text.contains("stray"), "{text}");
    assert_eq!(current(&m).len(), 3000);
}

/// What a command was asked to print and stdout refused (a full disk under a redirection) is
/// not a success: exit 5, said on stderr; a stdout whose reader went away (a closed pipe) is
/// not held against a writing run.
#[test]
fn output_stdout_refused_is_not_a_success() {
    let good = Good::new(5);
    let (_d, m) = good.copy();
    for args in [
        vec!["incremental", "--json"],
        vec!["audit", "--offline", "--json"],
        vec!["catalog", "check"],
    ] {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
            .args(&args)
            .arg("--mirror")
            .arg(&m)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {err}");
        assert!(
            err.contains("could not be written to stdout"),
            "{args:?}: {err}"
        );
    }
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["incremental", "--json", "--mirror"])
        .arg(&m)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader went away
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// Issue 66, 4: `catalog restore` and `catalog rebuild` of a catalog `catalog check` finds
/// sound are refused (exit 7, nothing changed) unless `--force`; forced, the catalog they
/// replace is called replaced, not damaged, and kept.
#[test]
fn restore_and_rebuild_refuse_a_sound_catalog_without_force() {
    let good = Good::new(5);
    let (_d, m) = good.copy();
    let runs = |m: &std::path::Path| -> i64 {
        rusqlite::Connection::open(m.join("catalog.sqlite"))
            .unwrap()
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .unwrap()
    };
    let before = (runs(&m), current(&m));
    for args in [
        vec!["catalog", "restore"],
        vec!["catalog", "rebuild"],
        vec!["catalog", "rebuild", good.list.as_str()],
    ] {
        let out = on_mirror(&m, &args);
        assert_eq!(out.status.code(), Some(7), "{args:?}: {}", stderr_of(&out));
        let err = stderr_of(&out);
        assert!(err.contains("is sound") && err.contains("--force"), "{err}");
        assert_eq!(
            (runs(&m), current(&m)),
            before,
            "{args:?} changed the mirror"
        );
        assert!(!std::fs::read_dir(&m).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("damaged-catalog")));
    }
    let (_, err) = ok_on_mirror(&m, &["catalog", "restore", "--force", "--offline"]);
    assert!(err.contains("the replaced one is kept in"), "{err}");
    assert_eq!(current(&m), before.1);
}

/// Issue 66, 11: a catalog whose header says a schema this rsmirror does not read (its
/// `user_version` set to 99) is not "sound" to `catalog check`, as every command refuses it.
#[test]
fn catalog_check_names_a_schema_it_does_not_read() {
    let good = Good::new(3);
    let (_d, m) = good.copy();
    let (out, _) = ok_on_mirror(&m, &["catalog", "check"]);
    let want = format!(
        "ok      the schema: version {}",
        rsmirror::store::catalog::SCHEMA_VERSION
    );
    assert!(out.contains(&want), "{out}");
    rusqlite::Connection::open(m.join("catalog.sqlite"))
        .unwrap()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    let out = on_mirror(&m, &["catalog", "check"]);
    assert_eq!(out.status.code(), Some(5), "{}", stdout_of(&out));
    assert!(
        stdout_of(&out).contains("DAMAGED the schema: version 99, not one this rsmirror reads"),
        "{}",
        stdout_of(&out)
    );
    assert_eq!(on_mirror(&m, &["ls"]).status.code(), Some(5));
    // The writers it refuses leave the seal as it was (it said the last run had ended).
    let seal = std::fs::read(m.join("catalog.seal")).unwrap();
    for args in [
        &["incremental", "-q"][..],
        &["repair", "--offline", "-q"],
        &["audit", "--offline", "-q"],
        &["catalog", "check"],
    ] {
        let out = on_mirror(&m, args);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", stderr_of(&out));
        assert_eq!(
            std::fs::read(m.join("catalog.seal")).unwrap(),
            seal,
            "{args:?} rewrote the seal"
        );
    }
}
