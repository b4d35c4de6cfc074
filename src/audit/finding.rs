//! Findings: what an audit found, as typed items (rustic's check: a collector of findings,
//! each with a class, a severity mark and a hint on how to repair), and the report that carries
//! them — one line per finding with rclone's one-character marks (`=` in sync, `+` missing
//! here, `-` extra here, `*` changed, `!` corrupt or error, `?` unverifiable), or one JSON
//! document, or CSV. Every form carries the same findings in the same order.
//!
//! It owns the vocabulary (classes, marks, hints), the renderings and the per-class counts. It
//! leaves to the audit what to check and in which order, and to the catalog where findings are
//! kept.

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, Write};

pub use crate::model::finding::{Class, Finding, CSV_HEADER};

/// How many findings of each class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(BTreeMap<Class, u64>);

impl Counts {
    pub(crate) fn add(&mut self, class: Class) {
        *self.0.entry(class).or_default() += 1;
    }

    pub(crate) fn get(&self, class: Class) -> u64 {
        self.0.get(&class).copied().unwrap_or(0)
    }

    pub(crate) fn differences(&self, require_fixity: bool) -> u64 {
        self.0
            .iter()
            .filter(|(c, _)| c.is_difference(require_fixity))
            .map(|(_, n)| n)
            .sum()
    }

    /// `7 in-sync, 1 changed` in class order; `nothing found` when empty.
    pub(crate) fn line(&self) -> String {
        if self.0.is_empty() {
            return "nothing found".into();
        }
        self.0
            .iter()
            .map(|(c, n)| format!("{n} {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(crate) fn to_json(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(c, n)| (c.name().to_string(), json!(n)))
                .collect(),
        )
    }
}

/// What the audit looked at, known before the first finding.
#[derive(Debug, Clone, Serialize)]
pub struct Header {
    pub run_id: Option<i64>,
    pub started_at: String,
    pub mirror: String,
    /// None with `--offline`.
    pub source: Option<String>,
    pub level: &'static str,
    /// `N/M`, or None for the whole mirror.
    pub sample: Option<String>,
    pub all_versions: bool,
    pub offline: bool,
    pub require_fixity: bool,
}

/// What the audit did, known after the last finding.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// The findings were reported and recorded with the run (what `--premis` reads back).
    pub recorded: bool,
    /// Findings per class (a resource with three differing fields is three `changed`).
    pub counts: Counts,
    /// Resources (or objects) per class, each counted once: what the summary line says.
    pub by_resource: Counts,
    /// Resources in the mirror (current, not deleted) within the sample.
    pub resources: u64,
    /// Entries the source lists within the sample.
    pub listed: u64,
    /// Distinct objects checked.
    pub objects_checked: u64,
    pub bytes_hashed: u64,
    pub hashing_seconds: f64,
    pub seconds: f64,
    pub exit_code: i32,
    /// Why the audit could not finish, when it could not.
    pub error: Option<String>,
    pub warnings: Vec<String>,
    /// Wall time per phase, in order (shown with `-vv`; not part of the report).
    pub phases: Vec<(&'static str, f64)>,
    /// How the resources present in the mirror and listed by the source were shown to match,
    /// per collection (none with `--offline`).
    pub verification: BTreeMap<String, Verification>,
}

/// How the copies of one collection's resources were shown to be the source's, each resource
/// counted once: preservation staff file this with the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verification {
    /// A digest the source declares agrees with the mirror's.
    pub declared_digest: u64,
    /// `--refetch`: the bytes fetched again hash (SHA-256) to the mirror's.
    pub refetched_bytes: u64,
    /// `--refetch`: the server answered 304 to the stored validators. Its claim, not a proof.
    pub claimed_unchanged: u64,
    /// Nothing proved it: no digest to compare, not refetched (or the refetch failed).
    pub unverified: u64,
    /// `--refetch`: fetched again and the bytes differ (a `*` finding).
    pub refetched_differs: u64,
}

impl Verification {
    fn to_json(self) -> Value {
        json!({
            "declared_digest": self.declared_digest,
            "refetched_bytes": self.refetched_bytes,
            "claimed_unchanged": self.claimed_unchanged,
            "unverified": self.unverified,
            "refetched_differs": self.refetched_differs,
        })
    }

    /// One line for people.
    pub(crate) fn line(&self) -> String {
        format!(
            "{} by a declared digest, {} by refetched bytes, {} only claimed unchanged by the server (304), {} unverified, {} refetched and different",
            self.declared_digest,
            self.refetched_bytes,
            self.claimed_unchanged,
            self.unverified,
            self.refetched_differs
        )
    }
}

impl Totals {
    pub(crate) fn mb_per_s(&self) -> f64 {
        if self.hashing_seconds > 0.0 {
            self.bytes_hashed as f64 / 1e6 / self.hashing_seconds
        } else {
            0.0
        }
    }

    /// The human summary (stderr): resources per class, each counted once (and the findings,
    /// when a resource had several); at the levels that hash nothing, `=` says what was
    /// checked, not "verified"; an audit that could not compare says so.
    pub(crate) fn line(&self, level: crate::settings::AuditLevel) -> String {
        use crate::settings::AuditLevel;
        let found = match (&self.error, self.by_resource.0.is_empty()) {
            (Some(_), true) => {
                "nothing compared with the source (it could not be read: below)".to_string()
            }
            _ => {
                let mut found = self.by_resource.line();
                let checked = match level {
                    AuditLevel::Presence => Some("present (not hashed: --level presence)"),
                    AuditLevel::Size => Some("of their recorded length (not hashed: --level size)"),
                    _ => None,
                };
                if let Some(checked) = checked {
                    found = found.replace(" verified", &format!(" {checked}"));
                }
                let (findings, classes): (u64, u64) = (
                    self.counts.0.values().sum(),
                    self.by_resource.0.values().sum(),
                );
                if findings != classes {
                    found.push_str(&format!(" ({findings} findings)"));
                }
                found
            }
        };
        format!(
            "audit: {}; {} resources, {} listed at the source; {} objects checked in {:.2} s, {} hashed ({:.1} MB/s); {:.2} s in all, exit {}",
            found,
            self.resources,
            self.listed,
            self.objects_checked,
            self.hashing_seconds,
            crate::report::human_bytes(self.bytes_hashed),
            self.mb_per_s(),
            self.seconds,
            self.exit_code
        )
    }

    /// The totals as (key, value) in the order the JSON report shows them.
    pub(crate) fn pairs(&self) -> Vec<(&'static str, Value)> {
        match self.to_json() {
            Value::Object(mut m) => TOTALS_KEYS
                .iter()
                .map(|k| (*k, m.remove(*k).unwrap_or(Value::Null)))
                .collect(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "counts": self.counts.to_json(),
            "resources": self.resources,
            "listed": self.listed,
            "objects_checked": self.objects_checked,
            "bytes_hashed": self.bytes_hashed,
            "hashing_seconds": self.hashing_seconds,
            "mb_per_s": self.mb_per_s(),
            "seconds": self.seconds,
            "exit_code": self.exit_code,
            "error": self.error,
            "warnings": self.warnings,
            "verification": self
                .verification
                .iter()
                .map(|(c, v)| (c.clone(), v.to_json()))
                .collect::<serde_json::Map<_, _>>(),
        })
    }
}

/// The forms a report takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Finding lines only (stdout): the differences, that is every line but `=` and `?` (`?`
    /// too with `--require-fixity`); all of them when `verbose`. A digest-less source is `?`
    /// from end to end: one line per resource every night would bury what matters, and `-q`
    /// promises silence on success. The `?` ones are counted, and listed in `--report` and
    /// `--json`.
    Lines { verbose: bool, require_fixity: bool },
    /// `#` header, every finding line, `#` totals (a text report file).
    Text,
    /// One JSON document (`--json`, or a JSON report file).
    Json,
    /// A header row and one row per finding.
    Csv,
    /// One HTML page, written at the end (`audit::html`).
    Html,
}

/// One destination of the report, written as findings arrive (a million findings are never
/// held in memory).
pub struct Sink {
    out: Box<dyn Write>,
    form: Form,
    written: u64,
    /// A write failed (say, a closed pipe): the sink is dropped, the audit goes on.
    broken: Option<io::Error>,
    /// The page an HTML sink gathers, written at the end.
    page: Option<Box<dyn Gathered>>,
}

/// A report that gathers the findings and is written whole at the end (the HTML page,
/// `audit::html`), where a sink's other forms write each finding as it comes.
pub(crate) trait Gathered {
    fn begin(&mut self, h: &Header);
    fn add(&mut self, f: &Finding);
    fn write(&self, out: &mut dyn Write, t: &Totals) -> io::Result<()>;
}

impl Sink {
    pub(crate) fn new(out: Box<dyn Write>, form: Form) -> Sink {
        Sink {
            out,
            form,
            written: 0,
            broken: None,
            page: None,
        }
    }

    /// A sink that gathers `page` and writes it at the end.
    pub(crate) fn html(out: Box<dyn Write>, page: Box<dyn Gathered>) -> Sink {
        Sink {
            page: Some(page),
            ..Sink::new(out, Form::Html)
        }
    }

    fn io(&mut self, f: impl FnOnce(&mut dyn Write, Form, u64) -> io::Result<()>) {
        if self.broken.is_none() {
            if let Err(e) = f(&mut self.out, self.form, self.written) {
                self.broken = Some(e);
            }
        }
    }

    pub(crate) fn begin(&mut self, h: &Header) {
        if let Some(page) = &mut self.page {
            page.begin(h);
        }
        self.io(|out, form, _| match form {
            Form::Lines { .. } | Form::Html => Ok(()),
            Form::Text => {
                writeln!(out, "# rsmirror audit report")?;
                writeln!(out, "# run: {}", opt(h.run_id.map(|r| r.to_string())))?;
                writeln!(out, "# started: {}", h.started_at)?;
                writeln!(out, "# mirror: {}", h.mirror)?;
                writeln!(
                    out,
                    "# source: {}",
                    h.source.as_deref().unwrap_or("none (--offline)")
                )?;
                writeln!(
                    out,
                    "# checks: level {}, sample {}, {} versions{}",
                    h.level,
                    h.sample.as_deref().unwrap_or("all"),
                    if h.all_versions { "all" } else { "current" },
                    if h.require_fixity {
                        ", --require-fixity"
                    } else {
                        ""
                    }
                )
            }
            Form::Json => {
                let head = serde_json::to_value(h).expect("serialisable");
                let mut pairs = vec![("report", json!("rsmirror-audit")), ("version", json!(1))];
                for k in HEADER_KEYS {
                    pairs.push((k, head[k].clone()));
                }
                // The object stays open: the findings are streamed into it.
                write!(out, "{{\n{},\n  \"findings\": [", ordered(&pairs, "  "))
            }
            Form::Csv => writeln!(out, "{CSV_HEADER}"),
        });
    }

    /// Does this sink write findings of `class`? A line sink that is not verbose writes only
    /// the differences; [`Self::skipped`] then stands for [`Self::finding`].
    pub(crate) fn wants(&self, class: Class) -> bool {
        match self.form {
            Form::Lines {
                verbose: false,
                require_fixity,
            } => class.is_difference(require_fixity),
            _ => true,
        }
    }

    /// A finding this sink does not write ([`Self::wants`]) went by.
    pub(crate) fn skipped(&mut self) {
        self.written += 1;
    }

    pub(crate) fn finding(&mut self, f: &Finding) {
        if let Some(page) = &mut self.page {
            page.add(f);
        }
        self.io(|out, form, written| match form {
            Form::Html => Ok(()),
            Form::Lines {
                verbose,
                require_fixity,
            } => {
                if verbose || f.class.is_difference(require_fixity) {
                    writeln!(out, "{}", f.line())?;
                }
                Ok(())
            }
            Form::Text => writeln!(out, "{}", f.line()),
            Form::Json => write!(
                out,
                "{}\n    {}",
                if written == 0 { "" } else { "," },
                serde_json::to_string(&f.view()).expect("serialisable")
            ),
            Form::Csv => writeln!(out, "{}", f.csv()),
        });
        self.written += 1;
    }

    pub(crate) fn end(&mut self, t: &Totals) {
        let page = self.page.take();
        self.io(|out, form, written| {
            match form {
                Form::Lines { .. } | Form::Csv => {}
                Form::Html => {
                    if let Some(page) = page {
                        page.write(out, t)?;
                    }
                }
                Form::Text => {
                    writeln!(out, "# found: {}", t.counts.line())?;
                    writeln!(
                        out,
                        "# checked: {} resources, {} listed at the source, {} objects, {} bytes hashed",
                        t.resources, t.listed, t.objects_checked, t.bytes_hashed
                    )?;
                    writeln!(
                        out,
                        "# time: {:.3} s, hashing {:.3} s ({:.1} MB/s)",
                        t.seconds,
                        t.hashing_seconds,
                        t.mb_per_s()
                    )?;
                    for (collection, v) in &t.verification {
                        writeln!(out, "# verified: {collection}: {}", v.line())?;
                    }
                    for w in &t.warnings {
                        writeln!(out, "# warning: {w}")?;
                    }
                    if let Some(e) = &t.error {
                        writeln!(out, "# error: {e}")?;
                    }
                    writeln!(out, "# exit: {}", t.exit_code)?;
                }
                Form::Json => {
                    write!(
                        out,
                        "{}],\n  \"summary\": {{\n{}\n  }}\n}}\n",
                        if written == 0 { "" } else { "\n  " },
                        ordered(&t.pairs(), "    ")
                    )?;
                }
            }
            out.flush()
        });
    }

    /// The first write error, if the sink broke.
    pub(crate) fn error(&self) -> Option<&io::Error> {
        self.broken.as_ref()
    }
}

/// The header's keys in report order.
const HEADER_KEYS: [&str; 9] = [
    "run_id",
    "started_at",
    "mirror",
    "source",
    "level",
    "sample",
    "all_versions",
    "offline",
    "require_fixity",
];

/// The totals' keys in report order.
const TOTALS_KEYS: [&str; 12] = [
    "counts",
    "resources",
    "listed",
    "objects_checked",
    "bytes_hashed",
    "hashing_seconds",
    "mb_per_s",
    "seconds",
    "exit_code",
    "error",
    "warnings",
    "verification",
];

/// `"key": value` lines at `indent`, in the order given (serde_json's map would sort them).
fn ordered(pairs: &[(&str, Value)], indent: &str) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            let v = serde_json::to_string_pretty(v)
                .expect("serialisable")
                .replace('\n', &format!("\n{indent}"));
            format!("{indent}{}: {v}", Value::from(*k))
        })
        .collect::<Vec<_>>()
        .join(",\n")
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "none".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed() -> Finding {
        Finding::new(Class::Changed)
            .uri("http://x/res/a.txt")
            .field("length")
            .expected("7")
            .actual("6")
    }

    #[test]
    fn marks_follow_classes() {
        let marks: String = Class::ALL.iter().map(|c| c.mark()).collect();
        assert_eq!(marks, "==+*-?!!!!!!!");
        for c in Class::ALL {
            assert_eq!(Class::parse(c.name()), Some(c));
        }
        assert!(!Class::Unverifiable.is_difference(false));
        assert!(Class::Unverifiable.is_difference(true));
        assert!(Class::Extra.is_difference(false));
        assert!(!Class::InSync.is_difference(true));
    }

    #[test]
    fn line_shapes() {
        assert_eq!(
            Finding::new(Class::InSync).uri("http://x/a").line(),
            "= http://x/a"
        );
        assert_eq!(
            changed().line(),
            "* http://x/res/a.txt  changed length: expected 7, actual 6  (run rsmirror incremental or rsmirror baseline to fetch the new version)"
        );
        let stray = Finding::new(Class::StrayObject).object("objects/sha256/ab/x");
        assert!(stray
            .line()
            .starts_with("! objects/sha256/ab/x  stray-object  ("));
    }

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let f = Finding::new(Class::Catalog)
            .field("integrity_check")
            .expected("ok")
            .actual("row 3 missing from index \"x\", page 4");
        assert_eq!(
            f.csv(),
            "!,catalog,,,integrity_check,ok,\"row 3 missing from index \"\"x\"\", page 4\",the catalog is damaged or inconsistent: rsmirror catalog restore puts back the newest good copy (see rsmirror catalog check)"
        );
    }

    #[test]
    fn json_document_streams_and_parses() {
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        struct W(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl Write for W {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        for n in [0, 1, 3] {
            buf.lock().unwrap().clear();
            let mut sink = Sink::new(Box::new(W(buf.clone())), Form::Json);
            sink.begin(&Header {
                run_id: Some(4),
                started_at: "2026-01-01T00:00:00Z".into(),
                mirror: "/m".into(),
                source: None,
                level: "fixity",
                sample: None,
                all_versions: false,
                offline: true,
                require_fixity: false,
            });
            let mut totals = Totals::default();
            for _ in 0..n {
                sink.finding(&changed());
                totals.counts.add(Class::Changed);
            }
            sink.end(&totals);
            let doc: Value = serde_json::from_slice(&buf.lock().unwrap()).unwrap();
            assert_eq!(doc["findings"].as_array().unwrap().len(), n);
            assert_eq!(doc["run_id"], 4);
            let changed = &doc["summary"]["counts"]["changed"];
            match n {
                0 => assert!(changed.is_null()),
                n => assert_eq!(changed, n as u64),
            }
        }
    }
}
