//! The catalog's health for `rsmirror catalog check | restore | rebuild`: what SQLite and the
//! seal (`store::seal`) say of a catalog file, and which objects a catalog does not name.

use crate::store::{seal, Catalog, StoreError};
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// One line of what `catalog check` found.
pub(crate) struct Line {
    pub ok: bool,
    pub what: String,
}

/// A connection that never checkpoints a log into the file when it closes (a damaged log is
/// left as it was found).
fn open_untouched(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// The catalog's own lines of `catalog check`: SQLite's header, the seal as a writer judges
/// it, `PRAGMA integrity_check`.
pub(crate) fn findings(mirror: &Path) -> Vec<Line> {
    let path = mirror.join("catalog.sqlite");
    let mut lines = Vec::new();
    let header = seal::header(&path);
    lines.push(Line {
        ok: header.is_ok(),
        what: match &header {
            Ok(()) => "SQLite's file header".into(),
            Err(e) => format!("SQLite's file header: {e}"),
        },
    });
    // On read-only media SQLite cannot make the shared-memory file it reads a log through:
    // the file is read as it is, and a log beside it (a run that did not end) named, unread.
    let read_only = Catalog::read_only_media(&path);
    if read_only {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        if let Some(m) = std::fs::metadata(PathBuf::from(&wal))
            .ok()
            .filter(|m| m.len() > 0)
        {
            lines.push(Line {
                ok: false,
                what: format!(
                    "the log: catalog.sqlite-wal ({} bytes) cannot be read on read-only media, \
                     so what it holds is not checked: check a copy of the mirror on writable \
                     media",
                    m.len()
                ),
            });
        }
    }
    let opened = match read_only {
        true => crate::store::catalog::open_immutable(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        ),
        false => open_untouched(&path),
    };
    let conn = match opened {
        Ok(c) => c,
        Err(e) => {
            lines.push(Line {
                ok: false,
                what: format!("cannot be opened: {e}"),
            });
            return lines;
        }
    };
    // The seal, judged as a writer would (the lock is held), past a header already named.
    if header.is_ok() {
        lines.push(seal_line(mirror, &conn));
    }
    // The schema: one this rsmirror reads (or upgrades), else every command refuses it.
    let current = crate::store::schema::SCHEMA_VERSION;
    lines.push(
        match conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)) {
            Ok(v) if (1..=current).contains(&v) => Line {
                ok: true,
                what: format!("the schema: version {v} (this rsmirror's is {current})"),
            },
            Ok(v) => Line {
                ok: false,
                what: format!(
                    "the schema: version {v}, not one this rsmirror reads (1 to {current}): a \
                     newer rsmirror made it, or the header was overwritten"
                ),
            },
            Err(e) => Line {
                ok: false,
                what: format!("the schema: PRAGMA user_version: {e}"),
            },
        },
    );
    let problems = seal::sqlite_check(&conn, "integrity_check");
    lines.push(Line {
        ok: problems.is_empty(),
        what: match problems.len() {
            0 => "PRAGMA integrity_check".into(),
            n => format!(
                "PRAGMA integrity_check: {n} problem(s): {}",
                problems
                    .iter()
                    .take(5)
                    .map(|s| s.trim().replace('\n', " "))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        },
    });
    lines
}

/// The seal judged as a writer judges it before its first write.
fn seal_line(mirror: &Path, conn: &Connection) -> Line {
    match seal::check(mirror, conn, seal::Who::Writer) {
        Ok(()) => Line {
            ok: true,
            what: match seal::read(mirror) {
                Some(s) if s.state == "sealed" => format!(
                    "the seal: as the last run left it ({}), or sound where it changed",
                    s.run
                        .map(|r| format!("run {r}"))
                        .unwrap_or_else(|| s.at.clone())
                ),
                Some(_) => "the seal: the last writer did not end; nothing lost".into(),
                None => "the seal: none (a mirror of an older rsmirror)".into(),
            },
        },
        Err(StoreError::Damaged { what, .. }) => Line {
            ok: false,
            what: format!("the seal: {what}"),
        },
        Err(e) => Line {
            ok: false,
            what: format!("the seal: {e}"),
        },
    }
}

/// A catalog file that SQLite finds whole, of a schema this rsmirror reads or upgrades.
pub(crate) fn sound(path: &Path) -> Result<(), String> {
    seal::header(path)?;
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| e.to_string())?;
    let problems = seal::sqlite_check(&conn, "integrity_check");
    let version = conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
    drop(conn);
    // What opening it made beside it (an empty log and its shared memory).
    for end in ["-wal", "-shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(end);
        let _ = std::fs::remove_file(PathBuf::from(side));
    }
    if !problems.is_empty() {
        return Err(format!("PRAGMA integrity_check: {}", problems.join("; ")));
    }
    let version = version.map_err(|e| e.to_string())?;
    if !(1..=crate::store::schema::SCHEMA_VERSION).contains(&version) {
        return Err(format!(
            "schema version {version}, not one this rsmirror reads"
        ));
    }
    Ok(())
}

/// How many objects in `objects/` the catalog names in no version (after a restore: those
/// newer than the copy).
pub(crate) fn objects_not_named(mirror: &Path, catalog: &Catalog) -> Result<u64, StoreError> {
    let mut stmt = catalog
        .conn()
        .prepare("SELECT EXISTS (SELECT 1 FROM versions WHERE sha256_hex = ?1)")?;
    let mut newer = 0u64;
    crate::store::mirror_settings::object_store(mirror, catalog, false)?
        .visit_sorted(|v| {
            if v.placed && crate::store::objects::is_sha256_hex(v.name) {
                let named: bool = stmt
                    .query_row([v.name], |r| r.get(0))
                    .map_err(std::io::Error::other)?;
                if !named {
                    newer += 1;
                }
            }
            Ok(())
        })
        .map_err(|e| StoreError::io("reading", &mirror.join("objects"), e))?;
    Ok(newer)
}
