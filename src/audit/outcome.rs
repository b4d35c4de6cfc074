//! Where the report goes and how the audit ends: the sinks (stdout, `--report FILE`), the exit
//! code from what was found, the run recorded, and what stderr is told.

use crate::audit::finding::{Class, Form, Sink, Totals};
use crate::error::Error;
use crate::exit::Exit;
use crate::settings::{self, ReportFormat, UsageError};
use crate::store::{Catalog, StoreError};
use std::io::{self, BufWriter, IsTerminal};

/// End the audit: its exit code from what was found, every report closed, the run recorded,
/// stderr told; a report file that could not be written fails the audit.
pub(super) fn conclude(
    s: &settings::Audit,
    catalog: &Catalog,
    run_id: Option<i64>,
    result: Result<Verdict, Error>,
    totals: &mut Totals,
    mut sinks: Vec<Sink>,
    has_file: bool,
) -> Result<Exit, Error> {
    let exit = match &result {
        Err(e) => e.exit(),
        Ok(Verdict::SourceIncomplete) => Exit::Source,
        Ok(Verdict::Done) if totals.counts.differences(s.require_fixity) > 0 => Exit::Differences,
        Ok(Verdict::Done) => Exit::Ok,
    };
    totals.exit_code = exit.code();
    if let Err(e) = &result {
        totals.error = Some(e.to_string());
    }
    for sink in &mut sinks {
        sink.end(totals);
    }
    // Stdout's sinks (the report file's is judged below): output they could not write.
    let on_stdout = sinks.len() - usize::from(has_file);
    for sink in &sinks[..on_stdout] {
        if let Some(e) = sink.error() {
            crate::report::output_failed(e);
        }
    }
    let report_broken = has_file
        .then(|| sinks.last().and_then(|k| k.error()).map(|e| e.to_string()))
        .flatten();
    drop(sinks);
    // The PREMIS of this audit reads back the findings just recorded, before the run ends.
    let premis_broken = match (&s.premis, run_id) {
        (Some(path), Some(run_id)) if totals.recorded && report_broken.is_none() => {
            write_premis(s, catalog, run_id, path).err()
        }
        (Some(path), _) => {
            say!(
                "rsmirror: --premis {}: not written: the audit did not finish its checks",
                path.display()
            );
            None
        }
        (None, _) => None,
    };
    let (outcome, recorded_exit) = match &result {
        _ if report_broken.is_some() || premis_broken.is_some() => ("failed", Exit::Store),
        Ok(Verdict::Done) => ("ok", exit),
        Ok(Verdict::SourceIncomplete) => ("partial", exit),
        Err(_) => ("failed", exit),
    };
    match run_id {
        Some(run_id) => catalog.end_run(
            run_id,
            outcome,
            recorded_exit.code(),
            &counts_json(totals, s),
        )?,
        None if s.output.verbose > 0 || exit != Exit::Ok => say!(
            "audit: {} is read-only: this audit is not recorded in its catalog",
            s.mirror.display()
        ),
        None => {}
    }
    tell(s, totals, exit, &result);
    if let Some(e) = report_broken {
        let path = s
            .report
            .as_ref()
            .map(|(p, _)| p.as_path())
            .unwrap_or(std::path::Path::new(""));
        return Err(StoreError::io("writing the report", path, io::Error::other(e)).into());
    }
    if let Some(e) = premis_broken {
        return Err(e);
    }
    result.map(|_| exit)
}

/// `--premis FILE` can be written: its folder is there, and the audit is recorded (the
/// events are read back from what it records).
pub(super) fn premis_writable(path: &std::path::Path, read_only: bool) -> Result<(), Error> {
    if read_only {
        return Err(UsageError(format!(
            "--premis {}: the mirror is read-only, so this audit is not recorded, and its PREMIS events are written from the record",
            path.display()
        ))
        .into());
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !folder.is_dir() || path.is_dir() {
        return Err(UsageError(format!(
            "--premis {}: cannot write it: {} is not a folder",
            path.display(),
            if path.is_dir() { path } else { folder }.display()
        ))
        .into());
    }
    Ok(())
}

/// This audit's fixity checks, one PREMIS event per object it hashed (`export::premis`).
fn write_premis(
    s: &settings::Audit,
    catalog: &Catalog,
    run_id: i64,
    path: &std::path::Path,
) -> Result<(), Error> {
    use crate::export::premis::{AuditRecord, Report, Scope};
    let audit = AuditRecord {
        run: run_id,
        level: s.level.name().to_string(),
        sample: s.sample,
        all_versions: s.all_versions,
    };
    let report = Report::new(
        catalog,
        run_id,
        Scope::Audit(audit),
        crate::audit::mirror_states::uri_in_sample,
        None,
    )?;
    let counts = report.write(path, &|f| report.each_object(f))?;
    detail!(
        "audit: PREMIS of {} objects, {} fixity check events, written to {}",
        counts.objects,
        counts.events,
        path.display()
    );
    Ok(())
}

/// `--report FILE`: the sink that writes it, created now (a path that cannot be written is a
/// usage error before anything is checked).
pub(super) fn report_file(
    s: &settings::Audit,
    catalog: &Catalog,
    arguments: &str,
) -> Result<Option<Sink>, Error> {
    let Some((path, format)) = &s.report else {
        return Ok(None);
    };
    let file = std::fs::File::create(path)
        .map_err(|e| UsageError(format!("--report {}: cannot write it: {e}", path.display())))?;
    let form = match format {
        ReportFormat::Text => Form::Text,
        ReportFormat::Json => Form::Json,
        ReportFormat::Csv => Form::Csv,
        ReportFormat::Html => {
            let page = crate::audit::html::Page::new(catalog, arguments)?;
            return Ok(Some(Sink::html(
                Box::new(BufWriter::new(file)),
                Box::new(page),
            )));
        }
    };
    Ok(Some(Sink::new(Box::new(BufWriter::new(file)), form)))
}

/// What goes to stdout: lines, or `--json`.
pub(super) fn stdout_sink(s: &settings::Audit) -> Sink {
    if s.output.json {
        // The report says a failure itself (`summary.error`).
        crate::report::set_document_on_stdout();
    }
    Sink::new(
        Box::new(BufWriter::new(io::stdout().lock())),
        if s.output.json {
            Form::Json
        } else {
            Form::Lines {
                verbose: s.output.verbose > 0,
                require_fixity: s.require_fixity,
            }
        },
    )
}

/// What stderr hears at the end: the summary line (on a terminal, with `-v`, or when the
/// audit did not come out clean), the verifications, warnings and phases with `-v`/`-vv`,
/// and why a source error is one.
fn tell(s: &settings::Audit, totals: &Totals, exit: Exit, result: &Result<Verdict, Error>) {
    let tty = io::stderr().is_terminal();
    if crate::report::json_stderr() {
        // The audit report's summary (`schemas/audit-report.schema.json`), as the last line.
        crate::report::json_on_stderr(serde_json::json!({
            "message_type": "summary",
            "time": crate::report::now_shown(),
            "summary": totals.to_json(),
        }));
    } else if !s.output.quiet && (exit != Exit::Ok || tty || s.output.verbose > 0) {
        say!("{}", totals.line(s.level));
    }
    if s.output.verbose > 0 {
        for (collection, v) in &totals.verification {
            say!("verified: {collection}: {}", v.line());
        }
        for w in &totals.warnings {
            crate::report::said("warning", &format!("warning: {w}"));
        }
    }
    if s.output.verbose > 1 {
        for (phase, secs) in &totals.phases {
            say!("time: {phase}: {secs:.3} s");
        }
    }
    if let Ok(Verdict::SourceIncomplete) = result {
        say!(
            "rsmirror: source error: {} part(s) of the source's list could not be read (the `!` source findings); what they list was not compared",
            totals.counts.get(Class::Source)
        );
    }
}

/// How the checks ended (when they did not end in an [`Error`]).
pub(super) enum Verdict {
    Done,
    /// Part of the source's list could not be read: whatever was compared is reported, but
    /// the audit cannot call the mirror complete (exit 4).
    SourceIncomplete,
}

/// What an audit recorded in `runs.counts_json`: its counts and what it covered (`status` reads
/// the coverage to say how long since every object was last re-hashed).
fn counts_json(t: &Totals, s: &settings::Audit) -> String {
    serde_json::json!({
        "level": s.level.name(),
        "sample": s.sample.map(|(n, m)| format!("{n}/{m}")),
        "all_versions": s.all_versions,
        "offline": s.offline,
        "every_source": !s.source_given || s.offline,
        "findings": t.counts.to_json(),
        "resources": t.resources,
        "listed": t.listed,
        "objects_checked": t.objects_checked,
        "bytes_hashed": t.bytes_hashed,
    })
    .to_string()
}
