//! `log`: a resource's versions, the runs (newest first, like `git log`), and one run's
//! problems and findings, as typed rows (their JSON keys are stable). `commands::log` prints
//! them; `serve` renders them.

use crate::access::Reader;
use crate::error::{Error, UsageError};
use crate::model::{Change, Via};
use crate::store::arc_records::{ArcPage, ArcPages};
use crate::store::history;
use crate::store::run_records::{self, RunRecord, VersionDetail};
pub use crate::store::run_records::{FindingRecord, ProblemRecord};
use serde_json::Value;

/// One version as `log URL` shows it (the keys of `--json` are stable).
#[derive(serde::Serialize)]
pub struct Version {
    pub version: i64,
    pub run: i64,
    /// The start of the run that brought it: when it arrived in the mirror.
    pub arrived: String,
    pub run_command: String,
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
    /// The content coding the source declared, and the `Content-Encoding` the bytes were
    /// served with (kept as served, never decoded).
    pub declared_encoding: Option<String>,
    pub content_encoding: Option<String>,
    /// An ARC page's `ai_indexable` (recorded, not enforced); absent for other sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_indexable: Option<bool>,
    /// What the ARC sitemap or delta feed said of the page; absent for other sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arc: Option<ArcPage>,
    /// The categories the source gave this version (2012 draft §3.1.7); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<crate::model::Category>,
}

impl Version {
    fn of(
        reader: &Reader,
        v: VersionDetail,
        arc: Option<ArcPage>,
        categories: Vec<crate::model::Category>,
    ) -> Version {
        Version {
            categories,
            version: v.version,
            run: v.run,
            arrived: reader.arrived(v.run).to_string(),
            run_command: reader
                .runs
                .get(&v.run)
                .map(|r| r.command.clone())
                .unwrap_or_default(),
            change: v.change,
            event_time: v.event_time,
            lastmod: v.lastmod,
            length: v.length,
            declared_length: v.declared_length,
            declared_hash: v.declared_hash,
            sha256: v.sha256,
            md5: v.md5,
            sha1: v.sha1,
            media_type: v.media_type,
            arrived_via: v.arrived_via,
            fetched_from: v.fetched_from,
            document: v.document,
            etag: v.etag,
            last_modified: v.last_modified,
            declared_encoding: v.declared_encoding,
            content_encoding: v.content_encoding,
            ai_indexable: arc.as_ref().map(|p| p.ai_indexable),
            arc,
        }
    }
}

/// A resource's versions, newest first (the document of `log URL --json`).
#[derive(serde::Serialize)]
pub struct Versions {
    pub collection: String,
    pub uri: String,
    pub versions: Vec<Version>,
}

/// Every version of the resource `url` names (the versions of one URI: a few per run at most).
pub(crate) fn versions(reader: &Reader, url: &str) -> Result<Versions, Error> {
    let (resource_id, uri) = reader.resource(url)?;
    let collection = history::collection_of(reader.catalog(), resource_id)?;
    let ai = ArcPages::new(reader.catalog())?;
    let versions = run_records::version_details(reader.catalog(), resource_id, &uri)?
        .into_iter()
        .map(|v| {
            let arc = ai.of(reader.catalog(), v.version)?;
            let categories = reader.catalog().version_categories(v.version)?;
            Ok(Version::of(reader, v, arc, categories))
        })
        .collect::<Result<_, crate::store::StoreError>>()?;
    Ok(Versions {
        collection,
        uri,
        versions,
    })
}

/// One run as `log` lists it (JSON Lines; the keys are stable).
#[derive(serde::Serialize)]
pub struct RunLine {
    pub run: i64,
    pub command: String,
    pub source: Option<String>,
    pub arguments: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub duration_seconds: Option<f64>,
    pub outcome: Option<String>,
    pub exit_code: Option<i64>,
    pub counts: Value,
}

impl RunLine {
    pub(crate) fn of(r: RunRecord) -> RunLine {
        let duration_seconds = r.ended_at.as_deref().and_then(|e| {
            let a: jiff::Timestamp = r.started_at.parse().ok()?;
            let b: jiff::Timestamp = e.parse().ok()?;
            Some((b.as_millisecond() - a.as_millisecond()) as f64 / 1000.0)
        });
        RunLine {
            run: r.id,
            command: r.command,
            source: r.source,
            arguments: r.arguments,
            started_at: r.started_at,
            ended_at: r.ended_at,
            duration_seconds,
            outcome: r.outcome,
            exit_code: r.exit_code,
            counts: r
                .counts_json
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or(Value::Null),
        }
    }
}

/// Every run, newest first, handed to `sink` (`Ok(false)` stops).
pub(crate) fn each_run(
    reader: &Reader,
    mut sink: impl FnMut(RunLine) -> Result<bool, Error>,
) -> Result<(), Error> {
    run_records::each_run_newest_first(reader.catalog(), |r| sink(RunLine::of(r)))
}

/// Run `id`, or a usage error naming it.
pub(crate) fn one_run(reader: &Reader, id: i64) -> Result<RunLine, Error> {
    Ok(run_records::run(reader.catalog(), id)?
        .map(RunLine::of)
        .ok_or_else(|| {
            UsageError(format!(
                "--run {id}: the mirror has no run {id} (rsmirror log lists them)"
            ))
        })?)
}

/// The problems run `id` recorded, handed to `sink` (`Ok(false)` stops).
pub(crate) fn each_problem(
    reader: &Reader,
    id: i64,
    sink: impl FnMut(ProblemRecord) -> Result<bool, Error>,
) -> Result<(), Error> {
    run_records::each_problem(reader.catalog(), id, sink)
}

/// The findings audit run `id` recorded, handed to `sink` (`Ok(false)` stops).
pub(crate) fn each_finding(
    reader: &Reader,
    id: i64,
    sink: impl FnMut(FindingRecord) -> Result<bool, Error>,
) -> Result<(), Error> {
    run_records::each_finding(reader.catalog(), id, sink)
}

/// The run before `id` that could have changed the mirror (0: none).
pub(crate) fn previous_run(reader: &Reader, id: i64) -> i64 {
    reader
        .runs
        .range(..id)
        .rev()
        .find(|(_, r)| r.command != "audit")
        .map(|(k, _)| *k)
        .unwrap_or(0)
}
