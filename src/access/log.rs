//! `rsmirror log`: a resource's versions, the runs (newest first, like `git log`), or one
//! run's problems and findings.

use crate::access::{age_of, human_age, shown_time, Out, Reader};
use crate::error::{Error, UsageError};
use crate::store::StoreError;
use rusqlite::OptionalExtension;
use serde_json::Value;
use std::path::Path;

pub struct Options {
    pub url: Option<String>,
    pub run: Option<i64>,
    pub json: bool,
}

pub fn run(mirror: &Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    match (&o.url, o.run) {
        (Some(url), _) => versions(&reader, url, o.json),
        (None, Some(id)) => one_run(&reader, id, o.json),
        (None, None) => runs(&reader, o.json),
    }
}

/// One version as `log URL` shows it (the keys of `--json` are stable).
#[derive(serde::Serialize)]
struct Version {
    version: i64,
    run: i64,
    /// The start of the run that brought it: when it arrived in the mirror.
    arrived: String,
    run_command: String,
    change: String,
    event_time: Option<String>,
    lastmod: Option<String>,
    length: Option<i64>,
    declared_length: Option<i64>,
    declared_hash: Option<String>,
    sha256: Option<String>,
    md5: Option<String>,
    sha1: Option<String>,
    media_type: Option<String>,
    /// http | dump | scp | arc | tombstone
    arrived_via: String,
    /// The URL the bytes came from after redirects, or the dump package.
    fetched_from: Option<String>,
    /// The document that announced the state: a Change List, an SCP collection, an ARC
    /// sitemap or delta feed.
    document: Option<String>,
    etag: Option<String>,
    last_modified: Option<String>,
}

fn versions(reader: &Reader, url: &str, json: bool) -> Result<(), Error> {
    let (resource_id, uri) = reader.resource(url)?;
    let collection: String = reader
        .conn()
        .query_row(
            "SELECT c.name FROM resources r JOIN collections c ON c.id = r.collection_id WHERE r.id = ?1",
            [resource_id],
            |r| r.get(0),
        )
        .map_err(StoreError::from)?;
    let mut stmt = reader
        .conn()
        .prepare(
            "SELECT v.id, v.run_id, v.change, v.event_time, v.lastmod, v.length_bytes,
                    v.declared_length_bytes, v.declared_hash, v.sha256_hex, v.md5_hex, v.sha1_hex,
                    v.media_type, v.arrived_via, v.fetched_from, v.etag, v.last_modified,
                    coalesce(
                      (SELECT e.document_url FROM change_events e
                        WHERE e.uri = ?2 AND e.version_id = v.id LIMIT 1),
                      (SELECT sc.url FROM scp_versions s JOIN scp_collections sc ON sc.id = s.collection_row
                        WHERE s.version_id = v.id),
                      (SELECT a.document_url FROM arc_versions a WHERE a.version_id = v.id))
             FROM versions v WHERE v.resource_id = ?1 ORDER BY v.run_id DESC, v.id DESC",
        )
        .map_err(StoreError::from)?;
    let rows = stmt
        .query_map(rusqlite::params![resource_id, uri], |r| {
            let run: i64 = r.get(1)?;
            Ok(Version {
                version: r.get(0)?,
                run,
                arrived: String::new(),
                run_command: String::new(),
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
                document: r.get(16)?,
            })
        })
        .map_err(StoreError::from)?;
    let mut all = Vec::new();
    for row in rows {
        let mut v = row.map_err(StoreError::from)?;
        v.arrived = reader.arrived(v.run).to_string();
        v.run_command = reader
            .runs
            .get(&v.run)
            .map(|r| r.command.clone())
            .unwrap_or_default();
        all.push(v);
    }
    let mut out = Out::stdout();
    if json {
        let doc = serde_json::json!({
            "uri": uri,
            "collection": collection,
            "versions": all,
        });
        out.line(&serde_json::to_string_pretty(&doc).expect("serialisable"))?;
        return Ok(out.flush()?);
    }
    for (i, v) in all.iter().enumerate() {
        if i > 0 && !out.line("")? {
            break;
        }
        let mut lines = vec![format!(
            "version {}  {}  run {} ({})  {}",
            v.version,
            v.change,
            v.run,
            v.run_command,
            shown_time(&v.arrived)
        )];
        let mut times = Vec::new();
        if let Some(t) = &v.event_time {
            times.push(format!("event {t}"));
        }
        if let Some(t) = &v.lastmod {
            times.push(format!("lastmod {t}"));
        }
        if !times.is_empty() {
            lines.push(format!("    {}", times.join("  ")));
        }
        if v.change != "deleted" {
            let mut bytes = format!(
                "    {} bytes  sha256 {}",
                v.length
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "?".into()),
                v.sha256.as_deref().unwrap_or("-")
            );
            if let Some(m) = &v.md5 {
                bytes.push_str(&format!("  md5 {m}"));
            }
            if let Some(s) = &v.sha1 {
                bytes.push_str(&format!("  sha1 {s}"));
            }
            if let Some(t) = &v.media_type {
                bytes.push_str(&format!("  {t}"));
            }
            lines.push(bytes);
        }
        let mut via = format!("    via {}", v.arrived_via);
        if let Some(f) = &v.fetched_from {
            via.push_str(&format!(" from {f}"));
        }
        if let Some(d) = &v.document {
            via.push_str(&format!("  (listed in {d})"));
        }
        lines.push(via);
        if !out.line(&lines.join("\n"))? {
            break;
        }
    }
    if all.is_empty() {
        out.line(&format!("{uri}: no versions"))?;
    }
    Ok(out.flush()?)
}

/// One run as `log` lists it (JSON Lines; the keys are stable).
#[derive(serde::Serialize)]
struct RunLine {
    run: i64,
    command: String,
    source: Option<String>,
    arguments: String,
    started_at: String,
    ended_at: Option<String>,
    duration_seconds: Option<f64>,
    outcome: Option<String>,
    exit_code: Option<i64>,
    counts: Value,
}

const RUN_COLUMNS: &str = "r.id, r.command, s.url, r.arguments, r.started_at, r.ended_at, \
                           r.outcome, r.exit_code, r.counts_json";

fn run_line(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunLine> {
    let started_at: String = r.get(4)?;
    let ended_at: Option<String> = r.get(5)?;
    let duration_seconds = ended_at.as_deref().and_then(|e| {
        let a: jiff::Timestamp = started_at.parse().ok()?;
        let b: jiff::Timestamp = e.parse().ok()?;
        Some((b.as_millisecond() - a.as_millisecond()) as f64 / 1000.0)
    });
    let counts: Option<String> = r.get(8)?;
    Ok(RunLine {
        run: r.get(0)?,
        command: r.get(1)?,
        source: r.get(2)?,
        arguments: r.get(3)?,
        started_at,
        ended_at,
        duration_seconds,
        outcome: r.get(6)?,
        exit_code: r.get(7)?,
        counts: counts
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or(Value::Null),
    })
}

/// The counts people look at, non-zero ones only: `created 3, updated 1, 12.0 MiB`.
fn counts_text(counts: &Value) -> String {
    let mut parts = Vec::new();
    let Some(map) = counts.as_object() else {
        return String::new();
    };
    for (k, v) in map {
        if k == "findings" {
            if let Some(f) = v.as_object() {
                for (class, n) in f {
                    if n.as_u64().unwrap_or(0) > 0 && class != "in-sync" {
                        parts.push(format!("{class} {n}"));
                    }
                }
            }
            continue;
        }
        let Some(n) = v.as_u64() else { continue };
        if n == 0 || k == "listed" && map.len() > 3 {
            continue;
        }
        if k == "bytes" || k == "bytes_hashed" {
            parts.push(crate::report::human_bytes(n));
        } else {
            parts.push(format!("{} {n}", k.replace('_', " ")));
        }
    }
    parts.join(", ")
}

fn duration_text(secs: Option<f64>) -> String {
    match secs {
        None => "-".into(),
        Some(s) if s < 90.0 => format!("{s:.1} s"),
        Some(s) => human_age(s as i64),
    }
}

fn runs(reader: &Reader, json: bool) -> Result<(), Error> {
    let mut stmt = reader
        .conn()
        .prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM runs r LEFT JOIN sources s ON s.id = r.source_id ORDER BY r.id DESC"
        ))
        .map_err(StoreError::from)?;
    let rows = stmt.query_map([], run_line).map_err(StoreError::from)?;
    let mut out = Out::stdout();
    if !json {
        out.line(&format!(
            "{:>6}  {:<11}  {:<24}  {:>8}  {:<11}  {:>4}  COUNTS",
            "RUN", "COMMAND", "STARTED", "DURATION", "OUTCOME", "EXIT"
        ))?;
    }
    for row in rows {
        let r = row.map_err(StoreError::from)?;
        let more = if json {
            out.json_line(&r)?
        } else {
            out.line(&format!(
                "{:>6}  {:<11}  {:<24}  {:>8}  {:<11}  {:>4}  {}",
                r.run,
                r.command,
                shown_time(&r.started_at),
                duration_text(r.duration_seconds),
                r.outcome.as_deref().unwrap_or("running"),
                r.exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "-".into()),
                counts_text(&r.counts)
            ))?
        };
        if !more {
            break;
        }
    }
    Ok(out.flush()?)
}

/// A problem a run recorded.
#[derive(serde::Serialize)]
struct Problem {
    class: String,
    uri: String,
    reason: String,
}

/// A finding an audit recorded.
#[derive(serde::Serialize)]
struct Finding {
    mark: String,
    class: String,
    uri: Option<String>,
    object: Option<String>,
    field: Option<String>,
    expected: Option<String>,
    actual: Option<String>,
    hint: Option<String>,
}

/// `log --run ID`: the run, its problems and (an audit) its findings. `--json` is one
/// document, `{"run": {..}, "problems": [..], "findings": [..]}`, written as it is read.
fn one_run(reader: &Reader, id: i64, json: bool) -> Result<(), Error> {
    let run = reader
        .conn()
        .query_row(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs r LEFT JOIN sources s ON s.id = r.source_id WHERE r.id = ?1"
            ),
            [id],
            run_line,
        )
        .optional()
        .map_err(StoreError::from)?
        .ok_or_else(|| {
            UsageError(format!(
                "--run {id}: the mirror has no run {id} (rsmirror log lists them)"
            ))
        })?;
    let mut out = Out::stdout();
    if json {
        out.write(b"{\"run\":")?;
        out.write(
            serde_json::to_string(&run)
                .expect("serialisable")
                .as_bytes(),
        )?;
        out.write(b",\"problems\":[")?;
    } else {
        let ended = match &run.ended_at {
            Some(e) => format!(
                "{}, {} ({})",
                shown_time(e),
                run.outcome.as_deref().unwrap_or("?"),
                run.exit_code
                    .map(|c| format!("exit {c}"))
                    .unwrap_or_default()
            ),
            None => "still running (or its process died: the next run marks it abandoned)".into(),
        };
        let mut head = vec![
            format!("run {}  {}", run.run, run.command),
            format!("  command line  {}", run.arguments),
        ];
        if let Some(s) = &run.source {
            head.push(format!("  source        {s}"));
        }
        head.push(format!(
            "  started       {}  ({} ago)",
            shown_time(&run.started_at),
            age_of(&run.started_at)
                .map(human_age)
                .unwrap_or_else(|| "?".into())
        ));
        head.push(format!("  ended         {ended}"));
        head.push(format!(
            "  duration      {}",
            duration_text(run.duration_seconds)
        ));
        let counts = counts_text(&run.counts);
        if !counts.is_empty() {
            head.push(format!("  counts        {counts}"));
        }
        if matches!(run.command.as_str(), "baseline" | "incremental") {
            head.push(format!(
                "  what changed  rsmirror diff run:{} run:{}",
                previous_run(reader, run.run),
                run.run
            ));
        }
        out.line(&head.join("\n"))?;
    }
    let mut stmt = reader
        .conn()
        .prepare("SELECT class, uri, reason FROM run_problems WHERE run_id = ?1 ORDER BY id")
        .map_err(StoreError::from)?;
    let problems = stmt
        .query_map([id], |r| {
            Ok(Problem {
                class: r.get(0)?,
                uri: r.get(1)?,
                reason: r.get(2)?,
            })
        })
        .map_err(StoreError::from)?;
    let mut n = 0u64;
    for p in problems {
        let p = p.map_err(StoreError::from)?;
        if json {
            if n > 0 {
                out.write(b",")?;
            }
            out.write(serde_json::to_string(&p).expect("serialisable").as_bytes())?;
        } else {
            if n == 0 {
                out.line("\nproblems:")?;
            }
            out.line(&format!("  {:<8} {}: {}", p.class, p.uri, p.reason))?;
        }
        n += 1;
    }
    if json {
        out.write(b"],\"findings\":[")?;
    }
    let mut stmt = reader
        .conn()
        .prepare(
            "SELECT mark, class, uri, object, field, expected, actual, hint
             FROM audit_findings WHERE run_id = ?1 ORDER BY id",
        )
        .map_err(StoreError::from)?;
    let findings = stmt
        .query_map([id], |r| {
            Ok(Finding {
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
    let mut k = 0u64;
    for f in findings {
        let f = f.map_err(StoreError::from)?;
        if json {
            if k > 0 {
                out.write(b",")?;
            }
            out.write(serde_json::to_string(&f).expect("serialisable").as_bytes())?;
        } else {
            if k == 0 {
                out.line("\nfindings:")?;
            }
            let what = f.uri.clone().or(f.object.clone()).unwrap_or_default();
            let mut line = format!("  {} {:<14} {what}", f.mark, f.class);
            if let Some(field) = &f.field {
                line.push_str(&format!(
                    "  {field}: expected {}, found {}",
                    f.expected.as_deref().unwrap_or("-"),
                    f.actual.as_deref().unwrap_or("-")
                ));
            }
            if let Some(h) = &f.hint {
                line.push_str(&format!("  ({h})"));
            }
            if !out.line(&line)? {
                break;
            }
        }
        k += 1;
    }
    if json {
        out.write(b"]}\n")?;
    } else if n == 0 && k == 0 {
        out.line("\nno problems recorded")?;
    }
    Ok(out.flush()?)
}

/// The run before `id` that could have changed the mirror (0: none).
fn previous_run(reader: &Reader, id: i64) -> i64 {
    reader
        .runs
        .range(..id)
        .rev()
        .find(|(_, r)| r.command != "audit")
        .map(|(k, _)| *k)
        .unwrap_or(0)
}
