//! `rsmirror log`: the rows of `access::log` as text (a resource's versions, the runs newest
//! first, one run's problems and findings) or JSON.

use crate::access::log::{self, FindingRecord, ProblemRecord, RunLine};
use crate::access::{age_of, human_age, shown_time, Reader};
use crate::commands::output::Out;
use crate::error::Error;
use crate::store::arc_records::ArcPage;
use serde_json::Value;
use std::path::Path;

pub struct Options {
    pub url: Option<String>,
    pub run: Option<i64>,
    pub json: bool,
}

pub(crate) fn run(mirror: &Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    match (&o.url, o.run) {
        (Some(url), _) => versions(&reader, url, o.json),
        (None, Some(id)) => one_run(&reader, id, o.json),
        (None, None) => runs(&reader, o.json),
    }
}

fn versions(reader: &Reader, url: &str, json: bool) -> Result<(), Error> {
    let doc = log::versions(reader, url)?;
    let (uri, all) = (&doc.uri, &doc.versions);
    let mut out = Out::stdout();
    if json {
        // Serialised from the types, not through a `Value`: an ARC page's `ai_snapshot` is
        // shown as published, keys in their order.
        out.line(&serde_json::to_string_pretty(&doc).expect("serialisable"))?;
        detail!("rsmirror: {} version(s) of {uri}", all.len());
        return Ok(out.flush()?);
    }
    detail!("rsmirror: {} version(s) of {uri}", all.len());
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
        if v.arrived_via == crate::model::Via::Metadata && !v.change.is_deletion() {
            // No bytes: what the source declares of them.
            let mut declared = format!("    {}", crate::access::VersionRow::NO_BYTES);
            if let Some(n) = v.declared_length {
                declared.push_str(&format!("  declared {n} bytes"));
            }
            if let Some(h) = &v.declared_hash {
                declared.push_str(&format!("  {h}"));
            }
            if let Some(t) = &v.media_type {
                declared.push_str(&format!("  {t}"));
            }
            lines.push(declared);
        } else if !v.change.is_deletion() {
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
            if let Some(coding) =
                crate::access::encoding_text(&v.declared_encoding, &v.content_encoding)
            {
                lines.push(format!("    {coding}"));
            }
        }
        let mut via = format!("    via {}", v.arrived_via);
        if let Some(f) = &v.fetched_from {
            via.push_str(&format!(" from {f}"));
        }
        if let Some(d) = &v.document {
            via.push_str(&format!("  (listed in {d})"));
        }
        lines.push(via);
        for c in &v.categories {
            lines.push(format!("    category {}: {}", c.name, c.display()));
        }
        if let Some(a) = &v.arc {
            lines.extend(arc_lines(a));
        }
        if !out.line(&lines.join("\n"))? {
            break;
        }
    }
    if all.is_empty() {
        out.line(&format!("{uri}: no versions"))?;
    }
    Ok(out.flush()?)
}

/// What an ARC page said of a version, as `log` shows it (`log --json` has it whole).
fn arc_lines(a: &ArcPage) -> Vec<String> {
    let mut head = format!("    ARC page: ai_indexable {}", a.ai_indexable);
    if let Some(p) = a.crawl_priority {
        head.push_str(&format!("  crawl_priority {p}"));
    }
    if let Some(r) = &a.robots_directive {
        head.push_str(&format!("  robots_directive {r:?}"));
    }
    let mut lines = vec![head];
    if let Some(s) = &a.ai_summary {
        lines.push(format!("    ai_summary: {s}"));
    }
    if let Some(t) = &a.ai_tags {
        lines.push(format!("    ai_tags: {}", t.join(", ")));
    }
    if let Some(raw) = &a.ai_snapshot {
        let raw = raw.get();
        if raw.len() <= 200 && !raw.contains('\n') {
            lines.push(format!("    ai_snapshot: {raw}"));
        } else {
            lines.push(format!(
                "    ai_snapshot: {} bytes of JSON (log --json shows it as published)",
                raw.len()
            ));
        }
    }
    lines
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
    let mut out = Out::stdout();
    if !json {
        out.line(&format!(
            "{:>6}  {:<11}  {:<24}  {:>8}  {:<11}  {:>4}  COUNTS",
            "RUN", "COMMAND", "STARTED", "DURATION", "OUTCOME", "EXIT"
        ))?;
    }
    detail!("rsmirror: {} run(s), newest first", reader.runs.len());
    log::each_run(reader, |r| {
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
        Ok::<_, Error>(more)
    })?;
    Ok(out.flush()?)
}

/// `log --run ID`: the run, its problems and (an audit) its findings. `--json` is one
/// document, `{"run": {..}, "problems": [..], "findings": [..]}`, written as it is read.
fn one_run(reader: &Reader, id: i64, json: bool) -> Result<(), Error> {
    let run = log::one_run(reader, id)?;
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
        out.line(&run_head(reader, &run))?;
    }
    let problems = problems(reader, id, json, &mut out)?;
    if json {
        out.write(b"],\"findings\":[")?;
    }
    let findings = findings(reader, id, json, &mut out)?;
    if json {
        out.write(b"]}\n")?;
    } else if problems == 0 && findings == 0 {
        out.line("\nno problems recorded")?;
    }
    Ok(out.flush()?)
}

/// The head of `log --run ID`: the run's command line, source, times and counts.
fn run_head(reader: &Reader, run: &RunLine) -> String {
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
            log::previous_run(reader, run.run),
            run.run
        ));
    }
    head.join("\n")
}

/// The problems run `id` recorded, as lines or JSON array items; how many.
fn problems(reader: &Reader, id: i64, json: bool, out: &mut Out) -> Result<u64, Error> {
    let mut n = 0u64;
    log::each_problem(reader, id, |p: ProblemRecord| {
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
        Ok::<_, Error>(true)
    })?;
    Ok(n)
}

/// The findings audit run `id` recorded, as lines or JSON array items; how many were written
/// (the lines stop when the reader goes away).
fn findings(reader: &Reader, id: i64, json: bool, out: &mut Out) -> Result<u64, Error> {
    let mut k = 0u64;
    log::each_finding(reader, id, |f: FindingRecord| {
        if json {
            if k > 0 {
                out.write(b",")?;
            }
            out.write(serde_json::to_string(&f).expect("serialisable").as_bytes())?;
        } else {
            if k == 0 {
                out.line("\nfindings:")?;
            }
            if !out.line(&finding_line(&f))? {
                return Ok(false);
            }
        }
        k += 1;
        Ok::<_, Error>(true)
    })?;
    Ok(k)
}

/// A finding as `log --run ID` lists it.
fn finding_line(f: &FindingRecord) -> String {
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
    line
}
