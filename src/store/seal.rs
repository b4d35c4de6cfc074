//! The catalog's seal (`MIRROR/catalog.seal`): what the last command that wrote left, so that
//! the next command can tell, before it trusts the catalog (and before a writer's first write),
//! whether the file is still the one it left, at the cost of a `stat` when nothing happened.
//!
//! A writer marks the seal `open` before its first write and records, after each commit, how
//! far it has come (the highest version and run ids: rows a later open must still find). When
//! it ends it checkpoints the write-ahead log into the file, closes it and seals it: `sealed`,
//! with the file's length and modification time, and its SHA-256 when a copy was made in the
//! same pass (`store::copies`). The check ([`check`]):
//!
//! - always: SQLite's 100-byte header read and judged (a byte of it changed is damage that
//!   SQLite itself writes on top of);
//! - `sealed`, the file's length and time as left, no write-ahead log: nothing more (a `stat`);
//! - `sealed` but the file changed (or a log appeared): its SHA-256 against the seal's, when
//!   there is one; if that differs too, `PRAGMA integrity_check` (a full read: what was
//!   changed may be sound, an edit with `sqlite3`, or damage) and the rows the seal counts;
//! - `open` (a writer died, or was stopped by a signal): the rows the seal counts (commits a
//!   damaged or cut write-ahead log would lose) and `PRAGMA quick_check` (a full read);
//! - no seal (a mirror made by an older rsmirror): `integrity_check`, once.
//!
//! Readers judge only what they can without the lock: the header, and a sealed file that
//! changed while no writer marked the seal open.

use crate::store::StoreError;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The seal's file name, in the mirror folder.
pub const FILE: &str = "catalog.seal";

/// What the last writer left.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Seal {
    /// `sealed` (the file as the last writer left it) or `open` (a writer at work, or one that
    /// died).
    pub state: String,
    /// The catalog file as it was left (`sealed` only): its length, modification time and,
    /// when a copy was made of it, its SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<(i64, u32)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The SHA-256 of the catalog's schema (every `sql` of `sqlite_schema`, in order) as the
    /// writer left it (`sealed` only): damage that SQLite's own checks find sound (a table's
    /// definition changed by a stray write) is still a different schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The highest version and run ids committed: a later open finds at least these.
    pub versions: i64,
    pub runs: i64,
    /// The run that wrote it last, when one was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<i64>,
    pub at: String,
    pub by: String,
}

/// Who checks: a writer (holds the lock; checks all) or a reader (judges what it can alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Who {
    Writer,
    Reader,
}

fn catalog_path(mirror: &Path) -> PathBuf {
    mirror.join("catalog.sqlite")
}

/// The seal as written, `None` when there is none or it cannot be read as one (a seal cut by
/// a power loss: the check then reads the whole catalog, as for a mirror without one).
pub(crate) fn read(mirror: &Path) -> Option<Seal> {
    let text = std::fs::read(mirror.join(FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Write the seal: a new file renamed over the old one; `durable`: synced, and its folder.
fn write(mirror: &Path, seal: &Seal, durable: bool) -> std::io::Result<()> {
    let tmp = mirror.join(format!("{FILE}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&serde_json::to_vec_pretty(seal).map_err(std::io::Error::other)?)?;
    f.write_all(b"\n")?;
    if durable {
        f.sync_all()?;
    }
    drop(f);
    std::fs::rename(&tmp, mirror.join(FILE))?;
    if durable {
        std::fs::File::open(mirror)?.sync_all()?;
    }
    Ok(())
}

/// The file's length and modification time.
fn stat(path: &Path) -> Option<(u64, (i64, u32))> {
    let m = std::fs::metadata(path).ok()?;
    let t = m.modified().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some((m.len(), (d.as_secs() as i64, d.subsec_nanos())))
}

/// The write-ahead log holds frames (more than its 32-byte header).
fn wal_has_frames(mirror: &Path) -> bool {
    std::fs::metadata(crate::store::wal::path_of(&catalog_path(mirror))).is_ok_and(|m| m.len() > 32)
}

/// The SHA-256 of the schema: every `sql` of `sqlite_schema`, in order, a line each.
fn schema_hash(conn: &Connection) -> Result<String, rusqlite::Error> {
    use sha2::Digest as _;
    let mut stmt = conn
        .prepare("SELECT type, name, coalesce(sql, '') FROM sqlite_schema ORDER BY type, name")?;
    let mut rows = stmt.query([])?;
    let mut h = sha2::Sha256::new();
    while let Some(r) = rows.next()? {
        for i in 0..3 {
            h.update(r.get_ref(i)?.as_str().unwrap_or("").as_bytes());
            h.update(b"\n");
        }
    }
    Ok(hex::encode(h.finalize()))
}

/// The highest version and run ids in the catalog (0 for an empty or new one).
fn rows(conn: &Connection) -> Result<(i64, i64), rusqlite::Error> {
    let has: bool = conn.query_row(
        "SELECT count(*) = 2 FROM sqlite_schema WHERE type = 'table' AND name IN ('versions', 'runs')",
        [],
        |r| r.get(0),
    )?;
    if !has {
        return Ok((0, 0));
    }
    conn.query_row(
        "SELECT (SELECT coalesce(max(id), 0) FROM versions), (SELECT coalesce(max(id), 0) FROM runs)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

fn damaged(mirror: &Path, what: String) -> StoreError {
    StoreError::Damaged {
        path: catalog_path(mirror).display().to_string(),
        what,
    }
}

/// SQLite's 100-byte database header (<https://www.sqlite.org/fileformat2.html#the_database_header>):
/// the values every valid file has, and the pair that must agree, whatever a write-ahead log
/// holds that the file does not yet (the schema's format and encoding are not judged: a new
/// catalog's file has them only once its log is checkpointed). `Err` names what is wrong.
pub(crate) fn header(path: &Path) -> Result<(), String> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot be read: {e}")),
    };
    let mut h = Vec::with_capacity(100);
    Read::by_ref(&mut f)
        .take(100)
        .read_to_end(&mut h)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if h.is_empty() {
        return Ok(());
    }
    judge_header(&h)
}

fn judge_header(h: &[u8]) -> Result<(), String> {
    if h.len() < 100 {
        return Err(format!(
            "{} bytes long, shorter than SQLite's 100-byte header",
            h.len()
        ));
    }
    if &h[..16] != b"SQLite format 3\0" {
        return Err("its first 16 bytes are not \"SQLite format 3\" (not an SQLite file)".into());
    }
    let be32 = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    let page = u16::from_be_bytes([h[16], h[17]]);
    if !(page == 1 || (page >= 512 && page.is_power_of_two())) {
        return Err(format!(
            "header byte 16: page size {page} is not one SQLite writes"
        ));
    }
    if !matches!(h[18], 1 | 2) || !matches!(h[19], 1 | 2) {
        return Err(format!(
            "header bytes 18-19: file format versions {} and {} (SQLite writes 1 or 2)",
            h[18], h[19]
        ));
    }
    if h[21] != 64 || h[22] != 32 || h[23] != 32 {
        return Err(format!(
            "header bytes 21-23: payload fractions {}, {}, {} (always 64, 32, 32)",
            h[21], h[22], h[23]
        ));
    }
    if be32(52) == 0 && be32(64) != 0 {
        return Err(format!(
            "header byte 64: incremental vacuum set to {} without auto-vacuum (largest root page 0)",
            be32(64)
        ));
    }
    if let Some(at) = (72..92).find(|&i| h[i] != 0) {
        return Err(format!(
            "header byte {at}: reserved for expansion, must be zero"
        ));
    }
    Ok(())
}

/// The problems `PRAGMA integrity_check` (or `quick_check`) lists, SQLite's error when it
/// cannot even run it; empty when the catalog is sound.
pub(crate) fn sqlite_check(conn: &Connection, pragma: &str) -> Vec<String> {
    let run = || -> Result<Vec<String>, rusqlite::Error> {
        let mut stmt = conn.prepare(&format!("PRAGMA {pragma}"))?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect()
    };
    match run() {
        Ok(lines) if lines.len() == 1 && lines[0] == "ok" => Vec::new(),
        Ok(lines) => lines,
        Err(e) => vec![e.to_string()],
    }
}

fn full_check(mirror: &Path, conn: &Connection, pragma: &str, why: &str) -> Result<(), StoreError> {
    let problems = sqlite_check(conn, pragma);
    if problems.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = problems
        .iter()
        .take(3)
        .map(|s| s.trim().replace('\n', " "))
        .collect();
    let more = match problems.len() {
        n if n > 3 => format!(" (and {} more)", n - 3),
        _ => String::new(),
    };
    Err(damaged(
        mirror,
        format!("{why}; PRAGMA {pragma}: {}{more}", shown.join("; ")),
    ))
}

/// The first text value of the catalog's tables that is not UTF-8 ("table T, row R, column
/// C"), if any: a full read, made only for a file that changed since it was sealed.
fn not_utf8(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let mut stmt =
        conn.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")?;
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for table in tables {
        let mut stmt =
            conn.prepare(&format!("SELECT * FROM \"{}\"", table.replace('"', "\"\"")))?;
        let names: Vec<String> = stmt.column_names().map(str::to_string).collect();
        let mut rows = stmt.query([])?;
        let mut n = 0u64;
        while let Some(row) = rows.next()? {
            n += 1;
            for (i, name) in names.iter().enumerate() {
                if let rusqlite::types::ValueRef::Text(bytes) = row.get_ref(i)? {
                    if std::str::from_utf8(bytes).is_err() {
                        return Ok(Some(format!("table {table}, row {n}, column {name}")));
                    }
                }
            }
        }
    }
    Ok(None)
}

/// Commits the seal counts and the catalog no longer holds.
fn lost(mirror: &Path, conn: &Connection, seal: &Seal) -> Result<(), StoreError> {
    let (versions, runs) = rows(conn).map_err(|e| damaged(mirror, e.to_string()))?;
    if versions < seal.versions || runs < seal.runs {
        return Err(damaged(
            mirror,
            format!(
                "it lost commits: the last writer committed versions up to #{} and runs up to #{}, \
                 it now holds #{versions} and #{runs} (its write-ahead log, catalog.sqlite-wal, \
                 was cut or damaged, or an older file was put in its place)",
                seal.versions, seal.runs
            ),
        ));
    }
    Ok(())
}

/// Check the catalog before it is trusted (see the module's text). `conn` is open on it and
/// has written nothing.
pub(crate) fn check(mirror: &Path, conn: &Connection, who: Who) -> Result<(), StoreError> {
    let path = catalog_path(mirror);
    header(&path).map_err(|what| damaged(mirror, format!("SQLite's file header: {what}")))?;
    let Some((bytes, modified)) = stat(&path) else {
        return Ok(());
    };
    let seal = read(mirror);
    if bytes == 0 {
        // A new catalog is empty; one the seal says held rows is not.
        return match &seal {
            Some(s) if s.versions > 0 || s.runs > 0 || s.bytes.is_some_and(|b| b > 0) => {
                Err(damaged(
                    mirror,
                    format!(
                        "it is empty (0 bytes); the last writer left runs up to #{} and \
                         versions up to #{}",
                        s.runs, s.versions
                    ),
                ))
            }
            _ => Ok(()),
        };
    }
    match &seal {
        Some(s) if s.state == "sealed" => {
            let logged = wal_has_frames(mirror);
            if !logged && s.bytes == Some(bytes) && s.modified == Some(modified) {
                return Ok(());
            }
            if !logged
                && s.sha256.is_some()
                && crate::store::copies::sha256_of(&path).ok() == s.sha256
            {
                return Ok(());
            }
            // A writer that began since (it marks the seal open first): not damage.
            if who == Who::Reader && read(mirror).as_ref() != seal.as_ref() {
                return Ok(());
            }
            full_check(
                mirror,
                conn,
                "integrity_check",
                "it is not the file the last run left",
            )?;
            // Stray bytes inside a text value leave a file SQLite finds sound; rsmirror only
            // ever writes UTF-8, and random bytes are almost never that.
            if let Some(what) = not_utf8(conn).map_err(|e| damaged(mirror, e.to_string()))? {
                return Err(damaged(
                    mirror,
                    format!(
                        "it is not the file the last run left, and {what} is not UTF-8 text \
                         (SQLite finds the file sound: bytes changed inside a value)"
                    ),
                ));
            }
            if let Some(sealed) = &s.schema {
                let now = schema_hash(conn).map_err(|e| damaged(mirror, e.to_string()))?;
                if &now != sealed {
                    return Err(damaged(
                        mirror,
                        "its schema (the definitions in sqlite_schema) is not the one the last run \
                         left, although SQLite finds the file sound"
                            .into(),
                    ));
                }
            }
            lost(mirror, conn, s)
        }
        Some(s) => match who {
            Who::Reader => Ok(()),
            Who::Writer => {
                lost(mirror, conn, s)?;
                full_check(
                    mirror,
                    conn,
                    "quick_check",
                    "the last writer did not end (it died or was stopped)",
                )
            }
        },
        None => match who {
            Who::Reader => Ok(()),
            Who::Writer => full_check(mirror, conn, "integrity_check", "no seal (a first check)"),
        },
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn by() -> String {
    format!("rsmirror {}", env!("CARGO_PKG_VERSION"))
}

/// A writer is about to write: the seal says so (durably) before anything changes, with how
/// far the catalog has come.
pub(crate) fn open(mirror: &Path, conn: &Connection) -> Result<(), StoreError> {
    let seal = opened(conn, None)?;
    write(mirror, &seal, true).map_err(|e| StoreError::io("writing", &mirror.join(FILE), e))
}

/// An `open` seal: how far the catalog has come, and the run writing it.
fn opened(conn: &Connection, run: Option<i64>) -> Result<Seal, rusqlite::Error> {
    let (versions, runs) = rows(conn)?;
    Ok(Seal {
        state: "open".into(),
        versions,
        runs,
        run,
        at: now(),
        by: by(),
        ..Seal::default()
    })
}

/// After a commit: how far the catalog has come (not synced: a seal that a power loss leaves
/// behind the catalog only asks for less).
pub(crate) fn progress(mirror: &Path, conn: &Connection, run: Option<i64>) {
    if let Ok(seal) = opened(conn, run) {
        let _ = write(mirror, &seal, false);
    }
}

/// What sealing did.
#[derive(Debug, Default)]
pub(crate) struct Sealed {
    /// The copy made, if any.
    pub copy: Option<PathBuf>,
    /// Why no copy was made when one was asked for.
    pub skipped: Option<String>,
}

/// The writer ends: the log checkpointed into the file, the connection closed, a copy made
/// (`copies` kept, 0: none) and the seal written. When the log cannot be emptied (a reader
/// holds it), the seal stays open (the next writer reads the whole catalog) and the copy is
/// made by SQLite's `VACUUM INTO`.
pub(crate) fn seal(
    mirror: &Path,
    conn: Connection,
    run: Option<i64>,
    copies: usize,
) -> Result<Sealed, StoreError> {
    let path = catalog_path(mirror);
    let (versions, runs) = rows(&conn)?;
    let schema = schema_hash(&conn).ok();
    let (busy, log, done): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    let emptied = busy == 0 && log <= 0 && done <= 0;
    let mut sealed = Sealed::default();
    if !emptied {
        if copies > 0 {
            sealed.copy = Some(crate::store::copies::make_by_vacuum(
                mirror, &conn, run, copies,
            )?);
        }
        progress(mirror, &conn, run);
        return Ok(sealed);
    }
    conn.close()
        .map_err(|(_, e)| StoreError::sqlite(&path, e))?;
    // A copy takes at most the catalog's length: not under the --min-free margin.
    let length = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let room = crate::store::space::room_left(mirror, crate::store::space::min_free(), length);
    if let (true, Err(why)) = (copies > 0, &room) {
        sealed.skipped = Some(format!("no copy of the catalog was made: {why}"));
    }
    let sha256 = if copies > 0 && room.is_ok() {
        let (copy, sha) = crate::store::copies::make(mirror, run, copies)?;
        sealed.copy = Some(copy);
        Some(sha)
    } else {
        None
    };
    write_sealed(mirror, sha256, schema, (versions, runs), run)?;
    Ok(sealed)
}

/// Write a `sealed` seal for the catalog file as it is now (closed, its log empty).
fn write_sealed(
    mirror: &Path,
    sha256: Option<String>,
    schema: Option<String>,
    (versions, runs): (i64, i64),
    run: Option<i64>,
) -> Result<(), StoreError> {
    let Some((bytes, modified)) = stat(&catalog_path(mirror)) else {
        return Ok(());
    };
    let seal = Seal {
        state: "sealed".into(),
        bytes: Some(bytes),
        modified: Some(modified),
        sha256,
        schema,
        versions,
        runs,
        run,
        at: now(),
        by: by(),
    };
    write(mirror, &seal, true).map_err(|e| StoreError::io("writing", &mirror.join(FILE), e))
}

/// `catalog restore`: the file put in place (whose SHA-256 is `sha256`) is the sealed one.
pub(crate) fn accept(mirror: &Path, sha256: Option<String>) -> Result<(), StoreError> {
    let path = catalog_path(mirror);
    let conn = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| StoreError::sqlite(&path, e))?;
    let counts = rows(&conn)?;
    let schema = schema_hash(&conn).ok();
    drop(conn);
    write_sealed(mirror, sha256, schema, counts, None)
}

/// What can still be read from a damaged catalog file, as far as it can be: the sources it
/// follows, each with the `--map` rules it remembers (for `catalog rebuild`). Empty where it
/// cannot.
pub(crate) fn salvage(path: &Path) -> Vec<Salvaged> {
    let Ok(conn) = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return Vec::new();
    };
    let rows = |sql: &str| -> Vec<(String, Option<String>, Option<String>)> {
        conn.prepare(sql)
            .and_then(|mut stmt| {
                stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)))
                    .map(|rows| rows.filter_map(Result::ok).collect())
            })
            .unwrap_or_default()
    };
    // Each older schema lacks a column: without `settings_json` (before 5) nothing kept but
    // the maps; without `removed_at` (before 4), every source.
    let mut sources = rows(
        "SELECT url, maps_json, settings_json FROM sources WHERE removed_at IS NULL ORDER BY id",
    );
    if sources.is_empty() {
        sources =
            rows("SELECT url, maps_json, NULL FROM sources WHERE removed_at IS NULL ORDER BY id");
    }
    if sources.is_empty() {
        sources = rows("SELECT url, maps_json, NULL FROM sources ORDER BY id");
    }
    sources
        .into_iter()
        .map(|(url, maps, kept)| Salvaged {
            url,
            maps: maps
                .and_then(|j| serde_json::from_str::<Vec<(String, PathBuf)>>(&j).ok())
                .unwrap_or_default(),
            kept: kept
                .and_then(|j| serde_json::from_str(&j).ok())
                .unwrap_or_default(),
        })
        .collect()
}

/// A source as a damaged catalog still says it: its URL, its `--map` rules (prefix, folder)
/// and the options it keeps.
#[derive(Debug, Clone, Default)]
pub(crate) struct Salvaged {
    pub url: String,
    pub maps: Vec<(String, PathBuf)>,
    pub kept: crate::model::Kept,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.sqlite");
        let c = Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
            .unwrap();
        drop(c);
        std::fs::read(&p).unwrap()[..100].to_vec()
    }

    #[test]
    fn a_header_sqlite_wrote_is_good_and_each_broken_field_is_named() {
        let h = good();
        judge_header(&h).unwrap();
        for (at, value, says) in [
            (67, 1, "header byte 64: incremental vacuum"),
            (0, b'X', "not an SQLite file"),
            (21, 65, "payload fractions"),
            (80, 7, "header byte 80"),
            (16, 3, "page size"),
        ] {
            let mut bad = h.clone();
            bad[at] = value;
            let err = judge_header(&bad).unwrap_err();
            assert!(err.contains(says), "byte {at}: {err}");
        }
        assert!(judge_header(&h[..40]).unwrap_err().contains("40 bytes"));
    }
}
