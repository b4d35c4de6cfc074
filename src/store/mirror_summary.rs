//! The figures `rsmirror status` shows of a whole mirror, read from the catalog: what it holds
//! (objects, bytes, versions, resources per collection), its sources and collections with their
//! sync points, the last run of each command and the audits. Each figure is one aggregate query
//! (no pass over every resource in Rust); how they are judged and shown is left to
//! `access::status`.

use crate::model::Change;
use crate::store::{Catalog, StoreError};
use rusqlite::Row;
use std::collections::HashMap;

/// The catalog's schema version (`PRAGMA user_version`).
pub(crate) fn schema_version(catalog: &Catalog) -> Result<i64, StoreError> {
    Ok(catalog
        .conn()
        .query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// The objects the catalog references (each stored once), their bytes, and the versions. Two
/// passes, neither a random read per version: the versions' lengths summed, and the objects
/// more than one version names counted from the index by object (their bytes counted once).
/// Current states by how their bytes came: (taken from objects already held, anything else
/// with bytes).
pub(crate) fn arrivals(catalog: &Catalog) -> Result<(u64, u64), StoreError> {
    Ok(catalog.conn().query_row(
        "SELECT count(*) FILTER (WHERE v.arrived_via = 'held'),
                count(*) FILTER (WHERE v.arrived_via NOT IN ('held', 'tombstone'))
         FROM resources r JOIN versions v ON v.id = r.current_version_id",
        [],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
    )?)
}

pub(crate) fn object_totals(catalog: &Catalog) -> Result<(u64, u64, u64), StoreError> {
    let conn = catalog.conn();
    let (versions, with_object, bytes): (i64, i64, i64) = conn.query_row(
        "SELECT count(*), count(sha256_hex),
                coalesce(sum(length_bytes) FILTER (WHERE sha256_hex IS NOT NULL), 0)
         FROM versions",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let (repeats, repeated_bytes): (i64, i64) = conn.query_row(
        "SELECT coalesce(sum(c - 1), 0),
                coalesce(sum((c - 1) * (SELECT length_bytes FROM versions WHERE sha256_hex = d.sha LIMIT 1)), 0)
         FROM (SELECT sha256_hex AS sha, count(*) AS c FROM versions
               WHERE sha256_hex IS NOT NULL GROUP BY sha256_hex HAVING count(*) > 1) d",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok((
        (with_object - repeats).max(0) as u64,
        (bytes - repeated_bytes).max(0) as u64,
        versions as u64,
    ))
}

/// What a collection holds: resources present, resources deleted, versions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollectionCounts {
    pub present: u64,
    pub deleted: u64,
    pub versions: u64,
}

/// [`CollectionCounts`] by collection id; `all_versions` is the mirror's count of versions
/// (what a mirror of one collection needs no query for).
pub(crate) fn collection_counts(
    catalog: &Catalog,
    all_versions: u64,
) -> Result<HashMap<i64, CollectionCounts>, StoreError> {
    let conn = catalog.conn();
    // Present and deleted resources per collection, without joining every resource to its
    // current version (at a million resources that join was half a second): the resources per
    // collection, less the deleted ones, found among the tombstones.
    let per_collection = |sql: &str| -> Result<Vec<(i64, u64)>, StoreError> {
        let mut stmt = conn.prepare(sql)?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as u64))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    };
    let mut counts: HashMap<i64, CollectionCounts> = HashMap::new();
    for (id, n) in
        per_collection("SELECT collection_id, count(*) FROM resources GROUP BY collection_id")?
    {
        counts.insert(
            id,
            CollectionCounts {
                present: n,
                ..CollectionCounts::default()
            },
        );
    }
    for (id, deleted) in per_collection(&format!(
        "SELECT r.collection_id, count(*) FROM versions v
         JOIN resources r ON r.id = v.resource_id AND r.current_version_id = v.id
         WHERE v.change = '{}' GROUP BY r.collection_id",
        Change::Deleted
    ))? {
        let c = counts.entry(id).or_default();
        c.present = c.present.saturating_sub(deleted);
        c.deleted = deleted;
    }
    // Versions per collection: in a mirror of one collection, all of them; else counted
    // (a quarter of a second more per million versions).
    if counts.len() == 1 {
        counts.values_mut().for_each(|c| c.versions = all_versions);
    } else {
        for (id, n) in per_collection(
            "SELECT r.collection_id, count(*) FROM versions v
             JOIN resources r ON r.id = v.resource_id GROUP BY r.collection_id",
        )? {
            counts.entry(id).or_default().versions = n;
        }
    }
    Ok(counts)
}

/// A sync point as recorded.
#[derive(Debug, Clone)]
pub struct SyncPointRecord {
    pub at: Option<String>,
    pub anchored: bool,
    pub basis: String,
    pub run: i64,
    pub updated_at: String,
}

/// A collection (or a sync point naming a collection without resources) with its source.
#[derive(Debug, Clone)]
pub struct CollectionRecord {
    /// `None`: a sync point's collection the `collections` table does not name.
    pub id: Option<i64>,
    pub name: String,
    /// Its sync point's source, else the source of the run that first listed one of its
    /// resources.
    pub source_id: Option<i64>,
    pub sync_point: Option<SyncPointRecord>,
}

/// Every collection and every sync point, by name.
pub(crate) fn collections(catalog: &Catalog) -> Result<Vec<CollectionRecord>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT c.id, c.name,
                coalesce(p.source_id,
                         (SELECT ru.source_id FROM resources r JOIN runs ru ON ru.id = r.first_run_id
                           WHERE r.collection_id = c.id LIMIT 1)),
                p.at, p.anchored, p.basis, p.run_id, p.updated_at
         FROM collections c LEFT JOIN sync_points p ON p.collection = c.name
         UNION ALL
         SELECT NULL, p.collection, p.source_id, p.at, p.anchored, p.basis, p.run_id, p.updated_at
         FROM sync_points p WHERE p.collection NOT IN (SELECT name FROM collections)
         ORDER BY 2",
    )?;
    let rows = stmt.query_map([], |r| {
        let basis: Option<String> = r.get(5)?;
        let sync_point = match basis {
            None => None,
            Some(basis) => Some(SyncPointRecord {
                at: r.get(3)?,
                anchored: r.get::<_, i64>(4)? != 0,
                basis,
                run: r.get(6)?,
                updated_at: r.get(7)?,
            }),
        };
        Ok(CollectionRecord {
            id: r.get(0)?,
            name: r.get(1)?,
            source_id: r.get(2)?,
            sync_point,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A source as recorded: (id, url, kind, added_at), oldest first.
pub(crate) fn sources(catalog: &Catalog) -> Result<Vec<SourceRecord>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT id, url, kind, added_at, removed_at, settings_json FROM sources ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(SourceRecord {
            id: r.get(0)?,
            url: r.get(1)?,
            kind: r.get(2)?,
            added_at: r.get(3)?,
            removed_at: r.get(4)?,
            // Written by `Catalog::remember_kept` alone; anything else reads as nothing kept.
            kept: r
                .get::<_, Option<String>>(5)?
                .and_then(|j| serde_json::from_str(&j).ok())
                .unwrap_or_default(),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A source as the mirror records it.
#[derive(Debug, Clone)]
pub struct SourceRecord {
    pub id: i64,
    pub url: String,
    pub kind: String,
    pub added_at: String,
    /// Not followed since then (`rsmirror source remove`, or a first baseline that found
    /// nothing).
    pub removed_at: Option<String>,
    /// The options it keeps (empty: none).
    pub kept: crate::model::Kept,
}

/// A run in brief.
#[derive(Debug, Clone)]
pub struct RunBrief {
    pub id: i64,
    pub command: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub outcome: Option<String>,
    pub exit_code: Option<i64>,
}

const BRIEF_COLUMNS: &str = "id, command, started_at, ended_at, outcome, exit_code";

fn run_brief(r: &Row<'_>) -> rusqlite::Result<RunBrief> {
    Ok(RunBrief {
        id: r.get(0)?,
        command: r.get(1)?,
        started_at: r.get(2)?,
        ended_at: r.get(3)?,
        outcome: r.get(4)?,
        exit_code: r.get(5)?,
    })
}

/// The newest run without an end (running now, or its process died).
pub(crate) fn unfinished_run(catalog: &Catalog) -> Result<Option<RunBrief>, StoreError> {
    use rusqlite::OptionalExtension;
    Ok(catalog
        .conn()
        .query_row(
            &format!(
                "SELECT {BRIEF_COLUMNS} FROM runs WHERE ended_at IS NULL ORDER BY id DESC LIMIT 1"
            ),
            [],
            run_brief,
        )
        .optional()?)
}

/// The last run of each command for each source (`None`: runs of no source), with that source.
pub(crate) fn last_runs(catalog: &Catalog) -> Result<Vec<(RunBrief, Option<i64>)>, StoreError> {
    let mut stmt = catalog.conn().prepare(&format!(
        "SELECT {BRIEF_COLUMNS}, source_id FROM runs
         WHERE id IN (SELECT max(id) FROM runs GROUP BY source_id, command)"
    ))?;
    let rows = stmt.query_map([], |r| Ok((run_brief(r)?, r.get::<_, Option<i64>>(6)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// An audit that ended: the run, its command line and its `counts_json`.
#[derive(Debug, Clone)]
pub struct AuditRecord {
    pub run: RunBrief,
    pub arguments: String,
    pub counts_json: Option<String>,
}

/// Every audit that ended, newest first.
pub(crate) fn finished_audits(catalog: &Catalog) -> Result<Vec<AuditRecord>, StoreError> {
    let mut stmt = catalog.conn().prepare(&format!(
        "SELECT {BRIEF_COLUMNS}, arguments, counts_json
         FROM runs WHERE command = 'audit' AND ended_at IS NOT NULL ORDER BY id DESC"
    ))?;
    let rows = stmt.query_map([], |r| {
        Ok(AuditRecord {
            run: run_brief(r)?,
            arguments: r.get(6)?,
            counts_json: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
