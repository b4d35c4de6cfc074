//! What the catalog records of each run, read back for people (`log`, `status`) and ended
//! from outside it: the run rows themselves, the problems a run recorded (`run_problems`), the
//! findings an audit recorded (`audit_findings`), every detail of a resource's versions, and
//! the mark a signal leaves on the run it stopped. The runs are begun and ended by
//! `Catalog::begin_run` / `Catalog::end_run`; what the fields mean is left to the readers.

use crate::model::{Change, ProblemClass, Via};
use crate::store::{Catalog, StoreError};
use rusqlite::{params, OptionalExtension, Row};
use std::path::Path;

/// A run as recorded (`runs`, with its source's URL).
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub id: i64,
    pub command: String,
    pub source: Option<String>,
    pub arguments: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub outcome: Option<String>,
    pub exit_code: Option<i64>,
    /// `runs.counts_json` as recorded.
    pub counts_json: Option<String>,
}

const RUN_COLUMNS: &str = "r.id, r.command, s.url, r.arguments, r.started_at, r.ended_at, \
                           r.outcome, r.exit_code, r.counts_json";

fn run_record(r: &Row<'_>) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: r.get(0)?,
        command: r.get(1)?,
        source: r.get(2)?,
        arguments: r.get(3)?,
        started_at: r.get(4)?,
        ended_at: r.get(5)?,
        outcome: r.get(6)?,
        exit_code: r.get(7)?,
        counts_json: r.get(8)?,
    })
}

/// One run.
pub(crate) fn run(catalog: &Catalog, id: i64) -> Result<Option<RunRecord>, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs r LEFT JOIN sources s ON s.id = r.source_id WHERE r.id = ?1"
            ),
            [id],
            run_record,
        )
        .optional()?)
}

/// Every run, newest first, handed to `f` (`Ok(false)` stops).
pub(crate) fn each_run_newest_first<E: From<StoreError>>(
    catalog: &Catalog,
    mut f: impl FnMut(RunRecord) -> Result<bool, E>,
) -> Result<(), E> {
    let mut stmt = catalog
        .conn()
        .prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM runs r LEFT JOIN sources s ON s.id = r.source_id ORDER BY r.id DESC"
        ))
        .map_err(StoreError::from)?;
    let rows = stmt.query_map([], run_record).map_err(StoreError::from)?;
    for row in rows {
        if !f(row.map_err(StoreError::from)?)? {
            break;
        }
    }
    Ok(())
}

/// A problem a run recorded. The class is kept as written: an older catalog may hold one
/// this build does not name.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProblemRecord {
    pub class: String,
    pub uri: String,
    pub reason: String,
}

/// The problems run `run_id` recorded, in the order it recorded them (`Ok(false)` stops).
pub(crate) fn each_problem<E: From<StoreError>>(
    catalog: &Catalog,
    run_id: i64,
    mut f: impl FnMut(ProblemRecord) -> Result<bool, E>,
) -> Result<(), E> {
    let mut stmt = catalog
        .conn()
        .prepare("SELECT class, uri, reason FROM run_problems WHERE run_id = ?1 ORDER BY id")
        .map_err(StoreError::from)?;
    let rows = stmt
        .query_map([run_id], |r| {
            Ok(ProblemRecord {
                class: r.get(0)?,
                uri: r.get(1)?,
                reason: r.get(2)?,
            })
        })
        .map_err(StoreError::from)?;
    for row in rows {
        if !f(row.map_err(StoreError::from)?)? {
            break;
        }
    }
    Ok(())
}

/// Record problems of run `run_id`, in one transaction.
pub(crate) fn record_problems(
    catalog: &Catalog,
    run_id: i64,
    problems: &[(String, ProblemClass, String)],
) -> Result<(), StoreError> {
    let tx = catalog.conn().unchecked_transaction()?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO run_problems (run_id, uri, class, reason) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for (uri, class, reason) in problems {
            insert.execute(params![run_id, uri, class, reason])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// A finding an audit recorded, as written.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FindingRecord {
    pub mark: String,
    pub class: String,
    pub uri: Option<String>,
    pub object: Option<String>,
    pub field: Option<String>,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub hint: Option<String>,
}

/// The findings audit run `run_id` recorded, in order (`Ok(false)` stops).
pub(crate) fn each_finding<E: From<StoreError>>(
    catalog: &Catalog,
    run_id: i64,
    mut f: impl FnMut(FindingRecord) -> Result<bool, E>,
) -> Result<(), E> {
    let mut stmt = catalog
        .conn()
        .prepare(
            "SELECT mark, class, uri, object, field, expected, actual, hint
             FROM audit_findings WHERE run_id = ?1 ORDER BY id",
        )
        .map_err(StoreError::from)?;
    let rows = stmt
        .query_map([run_id], |r| {
            Ok(FindingRecord {
                mark: r.get(0)?,
                class: r.get(1)?,
                uri: r.get(2)?,
                object: r.get(3)?,
                field: r.get(4)?,
                expected: r.get(5)?,
                actual: r.get(6)?,
                hint: r.get(7)?,
            })
        })
        .map_err(StoreError::from)?;
    for row in rows {
        if !f(row.map_err(StoreError::from)?)? {
            break;
        }
    }
    Ok(())
}

/// Every column of a version, with the document that announced it.
#[derive(Debug, Clone)]
pub struct VersionDetail {
    pub version: i64,
    pub run: i64,
    pub change: Change,
    pub event_time: Option<String>,
    pub lastmod: Option<String>,
    pub length: Option<i64>,
    pub declared_length: Option<i64>,
    pub declared_hash: Option<String>,
    pub sha256: Option<String>,
    pub md5: Option<String>,
    pub sha1: Option<String>,
    pub media_type: Option<String>,
    pub arrived_via: Via,
    /// The URL the bytes came from after redirects, or the dump package.
    pub fetched_from: Option<String>,
    /// The document that announced the state: a Change List, an SCP collection, an ARC
    /// sitemap or delta feed.
    pub document: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The content coding the source declared, and the one the bytes were served with.
    pub declared_encoding: Option<String>,
    pub content_encoding: Option<String>,
}

/// Every version of resource `resource_id` (whose URI is `uri`), newest first.
pub(crate) fn version_details(
    catalog: &Catalog,
    resource_id: i64,
    uri: &str,
) -> Result<Vec<VersionDetail>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT v.id, v.run_id, v.change, v.event_time, v.lastmod, v.length_bytes,
                v.declared_length_bytes, v.declared_hash, v.sha256_hex, v.md5_hex, v.sha1_hex,
                v.media_type, v.arrived_via, v.fetched_from, v.etag, v.last_modified,
                v.declared_encoding, v.content_encoding,
                coalesce(
                  (SELECT e.document_url FROM change_events e
                    WHERE e.uri = ?2 AND e.version_id = v.id LIMIT 1),
                  (SELECT sc.url FROM scp_versions s JOIN scp_collections sc ON sc.id = s.collection_row
                    WHERE s.version_id = v.id),
                  (SELECT a.document_url FROM arc_versions a WHERE a.version_id = v.id))
         FROM versions v WHERE v.resource_id = ?1 ORDER BY v.run_id DESC, v.id DESC",
    )?;
    let rows = stmt.query_map(params![resource_id, uri], |r| {
        Ok(VersionDetail {
            version: r.get(0)?,
            run: r.get(1)?,
            change: r.get(2)?,
            event_time: r.get(3)?,
            lastmod: r.get(4)?,
            length: r.get(5)?,
            declared_length: r.get(6)?,
            declared_hash: r.get(7)?,
            sha256: r.get(8)?,
            md5: r.get(9)?,
            sha1: r.get(10)?,
            media_type: r.get(11)?,
            arrived_via: r.get(12)?,
            fetched_from: r.get(13)?,
            etag: r.get(14)?,
            last_modified: r.get(15)?,
            declared_encoding: r.get(16)?,
            content_encoding: r.get(17)?,
            document: r.get(18)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Mark run `run_id` of the catalog at `db` interrupted (exit 130), waiting a little for a
/// writer that holds the catalog. False when it could not be recorded (or had ended).
/// The last run that fetched (`baseline`, `incremental`) when it did not end well (stopped by
/// a full disk, a signal, a death, failures): its id and start. Objects it placed after that
/// start and never named are its, not strays left by hand.
pub(crate) fn last_stopped_fetch(
    catalog: &Catalog,
) -> Result<Option<(i64, jiff::Timestamp)>, StoreError> {
    let row: Option<(i64, String, Option<String>)> = catalog
        .conn()
        .query_row(
            "SELECT id, started_at, outcome FROM runs WHERE command IN ('baseline', 'incremental')
             ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(
        row.and_then(|(id, started, outcome)| match outcome.as_deref() {
            Some("ok") => None,
            _ => started.parse().ok().map(|t| (id, t)),
        }),
    )
}

pub(crate) fn mark_interrupted(db: &Path, run_id: i64) -> bool {
    let Ok(conn) = rusqlite::Connection::open(db) else {
        return false;
    };
    let _ = conn.busy_timeout(std::time::Duration::from_secs(3));
    conn.execute(
        "UPDATE runs SET ended_at = ?2, outcome = 'interrupted', exit_code = 130
         WHERE id = ?1 AND ended_at IS NULL",
        params![run_id, jiff::Timestamp::now().to_string()],
    )
    .is_ok_and(|n| n == 1)
}
