//! The corruption matrix (issue 22): faults injected into copies of a clean mirror, and
//! `audit --offline --all-versions` must find every fault that changes anything, report nothing
//! on clean copies, and never panic. Faults: bit flips, truncation, deletion and swaps of
//! objects, stray files, catalog rows altered (sha256, length, md5), garbage written into
//! catalog pages, and a deleted `-wal` holding a committed transaction.
//!
//! Garbage in a catalog page that changes nothing the catalog holds (a free page, unused space
//! in a page) is harmless: it is proven so when `PRAGMA integrity_check` passes and every row
//! of every table reads the same as before; then the audit must find nothing. Any other
//! garbage must make the audit fail (exit 1 with findings, or 5: the catalog cannot be read).
//!
//! CI runs `RSMIRROR_CORRUPTION_COPIES` copies (default 60: about 1,000 faults, 16 s) and
//! prints the tally (`.ci/run`); `benches/corruption.sh` runs more copies with other seeds.

use crate::server::TestServer;
use crate::support::*;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One object of the clean mirror.
#[derive(Clone, Debug)]
struct Obj {
    sha: String,
    length: u64,
}

/// What a fault must show up as.
#[derive(Debug)]
enum Expect {
    /// A corrupt / missing / unreadable finding about this object.
    Object(String),
    /// A stray-object finding with this path.
    Stray(String),
    /// A finding about this object on this field.
    Field(String, &'static str),
}

fn object_path(m: &Path, sha: &str) -> PathBuf {
    m.join("objects/sha256").join(&sha[..2]).join(sha)
}

fn writable(p: &Path) {
    let mut perms = std::fs::metadata(p).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(p, perms).unwrap();
}

fn clean_mirror(dir: &Path) -> (PathBuf, TestServer, Tree) {
    let t = Tree::new();
    let names: Vec<String> = (1..=40).map(|i| format!("r{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        // r1 is empty; r2 and r3 share their bytes (one object for two resources).
        let body = match i {
            0 => String::new(),
            2 => "resource 2\n".into(),
            _ => format!("resource {}\n{}", i + 1, "x".repeat(i * 37)),
        };
        t.put(n, body.as_bytes());
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    t.resource_list("2026-03-01T00:00:00Z", &refs);
    let srv = TestServer::start(t.path());
    let m = dir.join("clean");
    let out = baseline(&srv.url("/resourcelist.xml"), &m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // A second state for ten of them: versions and objects that are not current.
    for n in &names[30..] {
        t.put(n, format!("{n}, second state\n").as_bytes());
    }
    t.resource_list("2026-03-02T00:00:00Z", &refs);
    let out = baseline(&srv.url("/resourcelist.xml"), &m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    (m, srv, t)
}

fn objects(m: &Path) -> Vec<Obj> {
    let c = Connection::open(m.join("catalog.sqlite")).unwrap();
    let mut stmt = c
        .prepare(
            "SELECT sha256_hex, max(length_bytes) FROM versions WHERE sha256_hex IS NOT NULL
             GROUP BY sha256_hex ORDER BY sha256_hex",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok(Obj {
            sha: r.get(0)?,
            length: r.get::<_, i64>(1)? as u64,
        })
    })
    .unwrap()
    .map(|r| r.unwrap())
    .collect()
}

/// Every definition and every row of every table, as text: two catalogs with the same dump
/// hold the same data in the same tables.
fn dump(m: &Path) -> Option<String> {
    let c = Connection::open(m.join("catalog.sqlite")).ok()?;
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .ok()?
        .query_map([], |r| r.get(0))
        .ok()?
        .collect::<Result<_, _>>()
        .ok()?;
    // The definitions too: garbage in a `CREATE` text (SQLite finds the file sound, every row
    // the same) changes what the catalog is, and the seal of its schema says so.
    let mut out: String = c
        .prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY type, name")
        .ok()?
        .query_map([], |r| {
            Ok(format!(
                "{}|{}|{:?}\n",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?
            ))
        })
        .ok()?
        .collect::<Result<_, _>>()
        .ok()?;
    for t in tables {
        // A WITHOUT ROWID table (`version_categories`) has no rowid: it is read in its primary
        // key's order, which is as fixed.
        let mut stmt = match c.prepare(&format!("SELECT * FROM \"{t}\" ORDER BY rowid")) {
            Ok(stmt) => stmt,
            Err(_) => c.prepare(&format!("SELECT * FROM \"{t}\"")).ok()?,
        };
        let n = stmt.column_count();
        let mut rows = stmt.query([]).ok()?;
        while let Some(r) = rows.next().ok()? {
            for i in 0..n {
                out.push_str(&format!("{:?}|", r.get_ref(i).ok()?));
            }
            out.push('\n');
        }
    }
    Some(out)
}

fn integrity_ok(m: &Path) -> bool {
    Connection::open(m.join("catalog.sqlite"))
        .and_then(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)))
        .is_ok_and(|s| s == "ok")
}

/// Inject `k` object and catalog faults with distinct targets; what each must show up as.
fn inject(
    m: &Path,
    objs: &[Obj],
    rng: &mut Rng,
    k: usize,
    tally: &mut BTreeMap<&'static str, u64>,
) -> Vec<Expect> {
    let mut free: Vec<Obj> = objs.to_vec();
    let mut take = |rng: &mut Rng, nonempty: bool| -> Option<Obj> {
        let candidates: Vec<usize> = (0..free.len())
            .filter(|&i| !nonempty || free[i].length > 0)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        Some(free.swap_remove(candidates[rng.pick(candidates.len())]))
    };
    let conn = Connection::open(m.join("catalog.sqlite")).unwrap();
    let mut expect = Vec::new();
    // Commits to lose with the -wal, once this connection is closed (closing it would
    // checkpoint them into the catalog).
    let mut lost: Vec<String> = Vec::new();
    for _ in 0..k {
        let kind = rng.pick(9);
        match kind {
            0 => {
                let Some(o) = take(rng, true) else { continue };
                let p = object_path(m, &o.sha);
                writable(&p);
                let mut b = std::fs::read(&p).unwrap();
                let at = rng.pick(b.len());
                b[at] ^= 1 << rng.pick(8);
                std::fs::write(&p, b).unwrap();
                expect.push(Expect::Object(o.sha));
                *tally.entry("bit flip").or_default() += 1;
            }
            1 => {
                let Some(o) = take(rng, true) else { continue };
                let p = object_path(m, &o.sha);
                writable(&p);
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..rng.pick(b.len())]).unwrap();
                expect.push(Expect::Object(o.sha));
                *tally.entry("truncation").or_default() += 1;
            }
            2 => {
                let Some(o) = take(rng, false) else { continue };
                std::fs::remove_file(object_path(m, &o.sha)).unwrap();
                expect.push(Expect::Object(o.sha));
                *tally.entry("deletion").or_default() += 1;
            }
            3 => {
                let (Some(a), Some(b)) = (take(rng, false), take(rng, false)) else {
                    continue;
                };
                let (pa, pb) = (object_path(m, &a.sha), object_path(m, &b.sha));
                let tmp = pa.with_extension("swap");
                std::fs::rename(&pa, &tmp).unwrap();
                std::fs::rename(&pb, &pa).unwrap();
                std::fs::rename(&tmp, &pb).unwrap();
                expect.push(Expect::Object(a.sha));
                expect.push(Expect::Object(b.sha));
                *tally.entry("swap").or_default() += 1;
            }
            4 => {
                // A stray: a well-named object nobody references, or any other file.
                let rel = if rng.pick(2) == 0 {
                    let h = rng.hex();
                    format!("objects/sha256/{}/{h}", &h[..2])
                } else {
                    format!("objects/sha256/00/stray-{}.tmp", rng.pick(1_000_000))
                };
                let p = m.join(&rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, rng.hex()).unwrap();
                expect.push(Expect::Stray(rel));
                *tally.entry("stray file").or_default() += 1;
            }
            5 => {
                let Some(o) = take(rng, false) else { continue };
                let new = rng.hex();
                conn.execute(
                    "UPDATE versions SET sha256_hex = ?2 WHERE id = (SELECT min(id) FROM versions WHERE sha256_hex = ?1)",
                    [&o.sha, &new],
                )
                .unwrap();
                expect.push(Expect::Object(new));
                *tally.entry("catalog row: sha256").or_default() += 1;
            }
            6 => {
                let Some(o) = take(rng, false) else { continue };
                conn.execute(
                    "UPDATE versions SET length_bytes = length_bytes + ?2 WHERE sha256_hex = ?1",
                    rusqlite::params![o.sha, 1 + rng.pick(1000) as i64],
                )
                .unwrap();
                expect.push(Expect::Field(o.sha, "length"));
                *tally.entry("catalog row: length").or_default() += 1;
            }
            7 => {
                let Some(o) = take(rng, false) else { continue };
                let md5 = &rng.hex()[..32];
                conn.execute(
                    "UPDATE versions SET md5_hex = ?2 WHERE sha256_hex = ?1",
                    [&o.sha, md5],
                )
                .unwrap();
                expect.push(Expect::Field(o.sha, "md5"));
                *tally.entry("catalog row: md5").or_default() += 1;
            }
            _ => {
                // A run's commit that only the -wal held, lost with it: its object a stray.
                let Some(o) = take(rng, false) else { continue };
                let new = rng.hex();
                let rel = format!("objects/sha256/{}/{new}", &new[..2]);
                std::fs::copy(object_path(m, &o.sha), m.join(&rel))
                    .or_else(|_| {
                        std::fs::create_dir_all(m.join(&rel).parent().unwrap())?;
                        std::fs::copy(object_path(m, &o.sha), m.join(&rel))
                    })
                    .unwrap();
                lost.push(new);
                expect.push(Expect::Stray(rel));
                *tally.entry("deleted -wal").or_default() += 1;
            }
        }
    }
    drop(conn);
    for sha in lost {
        lose_wal_commit(m, &sha);
    }
    expect
}

/// Commit, in a process that dies without closing its connection (so the commit lives only in
/// `-wal`), a version naming `sha`; then delete `-wal`.
fn lose_wal_commit(m: &Path, sha: &str) {
    let db = m.join("catalog.sqlite");
    let script = format!(
        "import os, sqlite3\n\
         c = sqlite3.connect({db:?})\n\
         c.execute('PRAGMA journal_mode=WAL')\n\
         c.execute('PRAGMA wal_autocheckpoint=0')\n\
         c.execute(\"INSERT INTO versions (resource_id, run_id, change, length_bytes, sha256_hex, arrived_via) SELECT id, first_run_id, 'updated', 1, '{sha}', 'http' FROM resources LIMIT 1\")\n\
         c.commit()\n\
         os._exit(0)\n",
        db = db.to_str().unwrap()
    );
    let ok = std::process::Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let wal = m.join("catalog.sqlite-wal");
    assert!(
        wal.metadata().is_ok_and(|w| w.len() > 0),
        "the commit is in -wal"
    );
    std::fs::remove_file(wal).unwrap();
    let _ = std::fs::remove_file(m.join("catalog.sqlite-shm"));
}

fn audit(m: &Path) -> (Option<i32>, Vec<Value>, String) {
    let out = rsmirror()
        .args([
            "audit",
            "--offline",
            "--all-versions",
            "--json",
            "-q",
            "--mirror",
        ])
        .arg(m)
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let findings = serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|d| d["findings"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f["class"] != "verified")
        .collect();
    (out.status.code(), findings, stderr)
}

fn found(e: &Expect, findings: &[Value]) -> bool {
    findings.iter().any(|f| match e {
        Expect::Object(sha) => {
            f["object"] == *sha.as_str()
                && matches!(
                    f["class"].as_str(),
                    Some("corrupt" | "missing-object" | "unreadable")
                )
        }
        Expect::Stray(rel) => f["class"] == "stray-object" && f["object"] == *rel.as_str(),
        Expect::Field(sha, field) => f["object"] == *sha.as_str() && f["field"] == *field,
    })
}

#[test]
fn audit_finds_every_fault_that_changes_anything_and_nothing_else() {
    let copies: usize = std::env::var("RSMIRROR_CORRUPTION_COPIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let seed: u64 = std::env::var("RSMIRROR_CORRUPTION_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let dir = tempfile::tempdir().unwrap();
    let (clean, _srv, _tree) = clean_mirror(dir.path());
    let objs = objects(&clean);
    let clean_dump = dump(&clean).unwrap();
    let mut tally: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut faults, mut detected, mut harmless, mut clean_copies) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..copies {
        let mut rng = Rng(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let m = dir.path().join(format!("copy-{i}"));
        copy_tree(&clean, &m);
        match i % 10 {
            // A clean copy: no finding at all.
            0 => {
                let (code, findings, e) = audit(&m);
                assert_eq!(code, Some(0), "copy {i}: {findings:?} {e}");
                assert!(findings.is_empty(), "copy {i}: {findings:?}");
                clean_copies += 1;
            }
            // Garbage in one catalog page, alone in its copy.
            1 | 2 => {
                let db = m.join("catalog.sqlite");
                let size = std::fs::metadata(&db).unwrap().len() as usize;
                let mut bytes = std::fs::read(&db).unwrap();
                let at = 4096 + rng.pick(size - 4096 - 64);
                for b in &mut bytes[at..at + 16] {
                    *b = rng.next() as u8;
                }
                writable(&db);
                std::fs::write(&db, bytes).unwrap();
                faults += 1;
                *tally.entry("catalog page garbage").or_default() += 1;
                let proven_harmless =
                    integrity_ok(&m) && dump(&m).as_deref() == Some(clean_dump.as_str());
                let (code, findings, e) = audit(&m);
                if proven_harmless {
                    assert_eq!(
                        code,
                        Some(0),
                        "copy {i}: harmless garbage at {at}, yet {findings:?} {e}"
                    );
                    harmless += 1;
                } else {
                    assert!(
                        matches!(code, Some(1) | Some(5)),
                        "copy {i}: garbage at byte {at} changed the catalog and the audit said {code:?}: {e}"
                    );
                    detected += 1;
                }
            }
            _ => {
                let k = 14 + rng.pick(20);
                let expect = inject(&m, &objs, &mut rng, k, &mut tally);
                faults += expect.len() as u64;
                let (code, findings, e) = audit(&m);
                assert_eq!(code, Some(1), "copy {i}: {e}");
                for x in &expect {
                    assert!(
                        found(x, &findings),
                        "copy {i}: {x:?} not found in {findings:#?}"
                    );
                    detected += 1;
                }
            }
        }
    }
    assert_eq!(detected + harmless, faults);
    let line = format!(
        "corruption matrix: {copies} copies ({clean_copies} clean), {faults} faults injected, \
         {detected} found, {harmless} proven harmless, 0 missed, 0 false findings, 0 panics \
         (seed {seed}); by kind: {tally:?}"
    );
    record_tally(&line);
}
