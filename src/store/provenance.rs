//! What the PREMIS reports (`export::premis`) read of the catalog: the runs (a few thousand
//! at most, read whole), every stored version that names an object, streamed in object order
//! with the version that followed it (so a tombstone is seen from the object it deleted), one
//! such version by id (an Archivematica transfer, file by file), and what audits and repairs
//! recorded of objects: the damage audits found and the repairs that followed.
//!
//! Which of these become which PREMIS events is `export::premis`'s; this file only reads.

use crate::store::{Catalog, StoreError};
use rusqlite::{params, Row};

/// A run, as `runs` records it, with the URL of its source (if it had one).
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub id: i64,
    pub command: String,
    pub source: Option<String>,
    pub arguments: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub outcome: Option<String>,
    pub counts_json: Option<String>,
}

/// Every run up to `until` (its id), in order.
pub(crate) fn runs(catalog: &Catalog, until: i64) -> Result<Vec<RunRecord>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT r.id, r.command, s.url, r.arguments, r.started_at, r.ended_at, r.outcome,
                r.counts_json
         FROM runs r LEFT JOIN sources s ON s.id = r.source_id WHERE r.id <= ?1 ORDER BY r.id",
    )?;
    let rows = stmt.query_map([until], |r| {
        Ok(RunRecord {
            id: r.get(0)?,
            command: r.get(1)?,
            source: r.get(2)?,
            arguments: r.get(3)?,
            started_at: r.get(4)?,
            ended_at: r.get(5)?,
            outcome: r.get(6)?,
            counts_json: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What names the mirror among others: its first run's start and its first source's URL
/// (empty for a mirror that never ran).
pub(crate) fn mirror_identity(catalog: &Catalog) -> Result<String, StoreError> {
    let first_run: Option<String> =
        catalog
            .conn()
            .query_row("SELECT min(started_at) FROM runs", [], |r| r.get(0))?;
    let first_source: Option<String> = catalog
        .conn()
        .query_row("SELECT url FROM sources ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    Ok(format!(
        "{} {}",
        first_run.unwrap_or_default(),
        first_source.unwrap_or_default()
    ))
}

/// How many distinct objects the current versions name.
pub(crate) fn current_object_count(catalog: &Catalog) -> Result<u64, StoreError> {
    let n: i64 = catalog.conn().query_row(
        "SELECT count(DISTINCT v.sha256_hex) FROM resources r
         JOIN versions v ON v.id = r.current_version_id WHERE v.sha256_hex IS NOT NULL",
        [],
        |r| r.get(0),
    )?;
    Ok(n as u64)
}

/// A version that names an object: what was recorded when it was stored, and the version of
/// the same resource that came after it (if any, up to the run the report covers).
#[derive(Debug, Clone)]
pub struct HeldVersion {
    pub version: i64,
    pub run: i64,
    pub uri: String,
    pub sha256: String,
    pub length: Option<i64>,
    pub md5: Option<String>,
    pub sha1: Option<String>,
    /// The source's digests, normalised: `md5:… sha-256:…`.
    pub declared_hash: Option<String>,
    pub media_type: Option<String>,
    pub arrived_via: String,
    pub fetched_from: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub lastmod: Option<String>,
    pub next: Option<NextVersion>,
}

/// The version that followed a [`HeldVersion`] of the same resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextVersion {
    pub version: i64,
    pub run: i64,
    /// A tombstone: the resource was deleted.
    pub deleted: bool,
}

/// The columns of a [`HeldVersion`]; `?1` is the last run covered.
const HELD: &str = "SELECT v.id, v.run_id, r.uri, v.sha256_hex, v.length_bytes, v.md5_hex,
        v.sha1_hex, v.declared_hash, v.media_type, v.arrived_via, v.fetched_from, v.etag,
        v.last_modified, v.lastmod, n.id, n.run_id, n.change
    FROM versions v JOIN resources r ON r.id = v.resource_id
    LEFT JOIN versions n ON n.id = (SELECT min(w.id) FROM versions w
        WHERE w.resource_id = v.resource_id AND w.id > v.id AND w.run_id <= ?1)
    WHERE v.sha256_hex IS NOT NULL AND v.run_id <= ?1";

fn held(r: &Row<'_>) -> rusqlite::Result<HeldVersion> {
    let next = match r.get::<_, Option<i64>>(14)? {
        Some(version) => Some(NextVersion {
            version,
            run: r.get(15)?,
            deleted: r.get::<_, String>(16)? == crate::model::Change::Deleted.as_str(),
        }),
        None => None,
    };
    Ok(HeldVersion {
        version: r.get(0)?,
        run: r.get(1)?,
        uri: r.get(2)?,
        sha256: r.get(3)?,
        length: r.get(4)?,
        md5: r.get(5)?,
        sha1: r.get(6)?,
        declared_hash: r.get(7)?,
        media_type: r.get(8)?,
        arrived_via: r.get(9)?,
        fetched_from: r.get(10)?,
        etag: r.get(11)?,
        last_modified: r.get(12)?,
        lastmod: r.get(13)?,
        next,
    })
}

/// Every version up to run `until` that names an object, in object order (then version
/// order), streamed: the versions of one object come one after another.
pub(crate) fn each_held_version<E: From<StoreError>>(
    catalog: &Catalog,
    until: i64,
    mut f: impl FnMut(HeldVersion) -> Result<(), E>,
) -> Result<(), E> {
    let sql = format!("{HELD} ORDER BY v.sha256_hex, v.id");
    let mut stmt = catalog.conn().prepare(&sql).map_err(StoreError::from)?;
    let mut rows = stmt.query([until]).map_err(StoreError::from)?;
    while let Some(r) = rows.next().map_err(StoreError::from)? {
        f(held(r).map_err(StoreError::from)?)?;
    }
    Ok(())
}

/// Version `version` (if it names an object), as of run `until`.
pub(crate) fn held_version(
    catalog: &Catalog,
    version: i64,
    until: i64,
) -> Result<Option<HeldVersion>, StoreError> {
    let sql = format!("{HELD} AND v.id = ?2");
    let mut stmt = catalog.conn().prepare_cached(&sql)?;
    let mut rows = stmt.query(params![until, version])?;
    Ok(match rows.next()? {
        Some(r) => Some(held(r)?),
        None => None,
    })
}

/// What an audit found wrong with an object's bytes.
#[derive(Debug, Clone)]
pub struct Damage {
    pub run: i64,
    /// corrupt | missing-object | unreadable
    pub class: String,
    pub object: String,
    pub field: Option<String>,
    pub expected: Option<String>,
    pub actual: Option<String>,
}

/// Every object an audit up to run `until` found corrupt, missing or unreadable. Only damage
/// is recorded by object, so this is as long as the damage found, not as the mirror.
pub(crate) fn damage(catalog: &Catalog, until: i64) -> Result<Vec<Damage>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT run_id, class, object, field, expected, actual FROM audit_findings
         WHERE run_id <= ?1 AND object IS NOT NULL
           AND class IN ('corrupt', 'missing-object', 'unreadable')
         ORDER BY object, run_id, id",
    )?;
    let rows = stmt.query_map([until], |r| {
        Ok(Damage {
            run: r.get(0)?,
            class: r.get(1)?,
            object: r.get(2)?,
            field: r.get(3)?,
            expected: r.get(4)?,
            actual: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What a repair run recorded of one object: repaired, or not.
#[derive(Debug, Clone)]
pub struct RepairRecord {
    pub run: i64,
    pub repaired: bool,
    pub object: String,
    pub reason: String,
}

/// Every object a repair up to run `until` restored or could not restore (named, as the
/// repair names it, by its path under `objects/`).
pub(crate) fn repairs(catalog: &Catalog, until: i64) -> Result<Vec<RepairRecord>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT p.run_id, p.class, p.reason FROM run_problems p JOIN runs r ON r.id = p.run_id
         WHERE r.command = 'repair' AND p.run_id <= ?1 AND p.class IN ('repaired', 'unrepaired')
         ORDER BY p.id",
    )?;
    let rows = stmt.query_map([until], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (run, class, reason) = row?;
        if let Some(object) = object_named(&reason) {
            out.push(RepairRecord {
                run,
                repaired: class == "repaired",
                object: object.to_string(),
                reason,
            });
        }
    }
    Ok(out)
}

/// The SHA-256 of the object a text names by its path under `objects/`
/// (`sha256/ab/<64 hex>`, as `ObjectStore::relative_path` writes it).
pub(crate) fn object_named(text: &str) -> Option<&str> {
    let is_hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    text.match_indices("sha256/").find_map(|(at, _)| {
        let rest = text.get(at + 7..)?;
        let (fan, name) = (rest.get(..2)?, rest.get(3..3 + 64)?);
        (rest.as_bytes().get(2) == Some(&b'/')
            && is_hex(fan)
            && is_hex(name)
            && name.starts_with(fan))
        .then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_found_by_its_path_in_a_repair_reason() {
        let sha = "ab".to_string() + &"0".repeat(62);
        let reason = format!("sha256/ab/{sha} was corrupt (x); restored from the source");
        assert_eq!(object_named(&reason), Some(sha.as_str()));
        assert_eq!(object_named("sha256/zz/nothing here"), None);
        assert_eq!(object_named(&format!("sha256/cd/{sha}")), None);
    }
}
