//! `audit --report FILE.html`: the audit as one self-contained HTML page a person reads or
//! prints. The verdict first; then fixity coverage (the share of the mirror's objects that an
//! audit re-hashed in the last 30, 90 and 365 days), the failures with the history of each
//! object (earlier failed checks, repairs), the changes per run and the source's agreement with
//! the mirror per audit as charts, and the commands that reproduce each figure.
//!
//! The page needs the verdict, known only at the end, before everything else: the findings
//! stream by and only the differences are kept (at most [`KEPT`], the rest counted); the
//! history is read from the catalog before the audit starts. Charts are inline SVG, styles
//! inline CSS: no script, nothing fetched from elsewhere, and a print style sheet.

use crate::audit::finding::{Class, Finding, Gathered, Header, Totals};
use crate::store::provenance::{self, Damage, RepairRecord, RunRecord};
use crate::store::{Catalog, StoreError};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

/// The failures a page lists; the rest are counted.
const KEPT: usize = 500;

/// The windows of fixity coverage, in days.
const WINDOWS: [i64; 3] = [30, 90, 365];

/// An earlier run, as the page shows it.
struct PastRun {
    record: RunRecord,
    counts: serde_json::Value,
}

/// The page being gathered.
pub struct Page {
    runs: Vec<PastRun>,
    damage: BTreeMap<String, Vec<Damage>>,
    repairs: BTreeMap<String, Vec<RepairRecord>>,
    objects: u64,
    /// This audit's command line, as the run records it.
    command: String,
    header: Option<Header>,
    failures: Vec<Finding>,
    more: u64,
}

impl Page {
    /// The history the page shows, read before the audit runs.
    pub(crate) fn new(catalog: &Catalog, command: &str) -> Result<Page, StoreError> {
        let runs = provenance::runs(catalog, i64::MAX)?
            .into_iter()
            .map(|record| PastRun {
                counts: record
                    .counts_json
                    .as_deref()
                    .and_then(|c| serde_json::from_str(c).ok())
                    .unwrap_or(serde_json::Value::Null),
                record,
            })
            .collect();
        let mut damage: BTreeMap<String, Vec<Damage>> = BTreeMap::new();
        for d in provenance::damage(catalog, i64::MAX)? {
            damage.entry(d.object.clone()).or_default().push(d);
        }
        let mut repairs: BTreeMap<String, Vec<RepairRecord>> = BTreeMap::new();
        for r in provenance::repairs(catalog, i64::MAX)? {
            repairs.entry(r.object.clone()).or_default().push(r);
        }
        Ok(Page {
            runs,
            damage,
            repairs,
            objects: provenance::current_object_count(catalog)?,
            command: command.to_string(),
            header: None,
            failures: Vec::new(),
            more: 0,
        })
    }

    fn mirror(&self) -> String {
        self.header
            .as_ref()
            .map(|h| h.mirror.clone())
            .unwrap_or_default()
    }

    fn verdict(&self, s: &mut String, t: &Totals) {
        let differences = t
            .counts
            .differences(self.header.as_ref().is_some_and(|h| h.require_fixity));
        let (class, text) = match (&t.error, t.exit_code, differences) {
            (Some(e), _, _) => ("fail", format!("The audit could not finish: {e}")),
            (None, 0, _) => (
                "pass",
                "The mirror is verified: no difference found.".to_string(),
            ),
            (None, _, n) => (
                "fail",
                format!(
                    "{n} difference{} found: the mirror does not match.",
                    if n == 1 { "" } else { "s" }
                ),
            ),
        };
        let h = self.header.as_ref();
        let _ = write!(
            s,
            "<header>\n<h1>{}</h1>\n<p id=\"verdict\" class=\"verdict {class}\">{}</p>\n\
             <p class=\"counts\">Exit code {}. Found: {}. Checked {} resources ({} listed at the source), {} objects, {} hashed, in {:.1} s.</p>\n\
             <dl class=\"meta\"><dt>Mirror</dt><dd>{}</dd><dt>Source</dt><dd>{}</dd><dt>Started</dt><dd>{}</dd><dt>Checks</dt><dd>level {}, sample {}, {} versions</dd></dl>\n\
             <p class=\"cmd\">Reproduce: <code>{}</code></p>\n</header>\n",
            esc(&format!(
                "Audit of {}{}",
                self.mirror(),
                h.and_then(|h| h.run_id)
                    .map(|r| format!(", run {r}"))
                    .unwrap_or_default()
            )),
            esc(&text),
            t.exit_code,
            esc(&t.counts.line()),
            t.resources,
            t.listed,
            t.objects_checked,
            esc(&crate::report::human_bytes(t.bytes_hashed)),
            t.seconds,
            esc(&self.mirror()),
            esc(h.and_then(|h| h.source.as_deref()).unwrap_or("none (--offline)")),
            esc(h.map(|h| h.started_at.as_str()).unwrap_or("")),
            h.map(|h| h.level).unwrap_or(""),
            esc(h.and_then(|h| h.sample.as_deref()).unwrap_or("all")),
            if h.is_some_and(|h| h.all_versions) { "all" } else { "current" },
            esc(&self.this_command()),
        );
    }

    /// The command line of this audit, as its run records it.
    fn this_command(&self) -> String {
        self.command.clone()
    }

    /// The audits that hashed objects: (time, sample), this one included.
    fn hashing_audits(&self, t: &Totals) -> Vec<(jiff::Timestamp, Option<(u64, u64)>)> {
        let parse_sample = |s: &str| -> Option<(u64, u64)> {
            let (n, m) = s.split_once('/')?;
            Some((n.parse().ok()?, m.parse().ok()?))
        };
        let mut out: Vec<_> = self
            .runs
            .iter()
            .filter(|r| r.record.command == "audit" && r.record.ended_at.is_some())
            .filter(|r| matches!(r.counts["level"].as_str(), Some("sha256" | "fixity")))
            // It hashed, or ended well (a slice of a sample may hold no object).
            .filter(|r| {
                r.counts["objects_checked"].as_u64().unwrap_or(0) > 0
                    || matches!(r.record.outcome.as_deref(), Some("ok" | "partial"))
            })
            .filter_map(|r| {
                let at = r.record.started_at.parse().ok()?;
                Some((at, r.counts["sample"].as_str().and_then(parse_sample)))
            })
            .collect();
        if let Some(h) = &self.header {
            let hashed = matches!(h.level, "sha256" | "fixity") && t.error.is_none();
            if let (true, Ok(at)) = (hashed, h.started_at.parse()) {
                out.push((at, h.sample.as_deref().and_then(parse_sample)));
            }
        }
        out
    }

    /// The share of objects re-hashed within `days` of this audit: 1 after a whole audit, else
    /// the slices of a sample seen (the most of any sample size).
    fn covered(&self, t: &Totals, days: i64) -> f64 {
        let now = self
            .header
            .as_ref()
            .and_then(|h| h.started_at.parse::<jiff::Timestamp>().ok())
            .unwrap_or_else(jiff::Timestamp::now);
        let since = now - jiff::SignedDuration::from_hours(24 * days);
        let mut slices: BTreeMap<u64, std::collections::BTreeSet<u64>> = BTreeMap::new();
        for (at, sample) in self.hashing_audits(t) {
            if at < since {
                continue;
            }
            match sample {
                None => return 1.0,
                Some((n, m)) => {
                    slices.entry(m).or_default().insert(n);
                }
            }
        }
        slices
            .iter()
            .map(|(m, ns)| ns.len() as f64 / *m as f64)
            .fold(0.0, f64::max)
    }

    fn coverage(&self, s: &mut String, t: &Totals) {
        let shares: Vec<(String, f64)> = WINDOWS
            .iter()
            .map(|d| (format!("last {d} days"), self.covered(t, *d)))
            .collect();
        s.push_str("<section id=\"coverage\">\n<h2>Fixity coverage</h2>\n");
        let _ = write!(
            s,
            "<p>The share of the mirror's {} objects whose bytes an audit re-hashed (<code>--level sha256</code> or <code>fixity</code>), by how long ago.</p>\n<table class=\"figures\"><tr>",
            self.objects
        );
        for (label, share) in &shares {
            let _ = write!(
                s,
                "<td><span class=\"figure\" data-window=\"{}\">{:.0}%</span><br>{}</td>",
                esc(label),
                share * 100.0,
                esc(label)
            );
        }
        s.push_str("</tr></table>\n");
        let bars: Vec<(String, f64, String)> = shares
            .iter()
            .map(|(l, v)| (l.clone(), *v, format!("{:.0}%", v * 100.0)))
            .collect();
        s.push_str(&bar_chart("chart-coverage", "Fixity coverage", &bars, 1.0));
        let _ = write!(
            s,
            "<p class=\"cmd\">Reproduce: <code>sqlite3 {}/catalog.sqlite \"SELECT id, started_at, json_extract(counts_json, '$.level'), json_extract(counts_json, '$.sample'), json_extract(counts_json, '$.objects_checked') FROM runs WHERE command = 'audit' ORDER BY id\"</code></p>\n</section>\n",
            esc(&self.mirror())
        );
    }

    fn failures(&self, s: &mut String) {
        s.push_str("<section id=\"failures\">\n<h2>Failures</h2>\n");
        if self.failures.is_empty() {
            s.push_str("<p>None.</p>\n</section>\n");
            return;
        }
        s.push_str("<table class=\"failures\">\n<thead><tr><th>mark</th><th>class</th><th>URI</th><th>object</th><th>expected</th><th>found</th><th>history of the object</th></tr></thead>\n<tbody>\n");
        let run = self.header.as_ref().and_then(|h| h.run_id);
        for f in &self.failures {
            let history = f
                .object
                .as_deref()
                .map(|o| self.history_of(o, run))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"hex\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&f.mark().to_string()),
                esc(f.class.name()),
                esc(f.uri.as_deref().unwrap_or("")),
                esc(f.object.as_deref().unwrap_or("")),
                esc(f.expected.as_deref().unwrap_or("")),
                esc(f.actual.as_deref().unwrap_or("")),
                history
            );
        }
        s.push_str("</tbody>\n</table>\n");
        if self.more > 0 {
            let _ = writeln!(
                s,
                "<p>And {} more (every one is in <code>--report FILE --format csv</code> and the catalog's <code>audit_findings</code>).</p>",
                self.more
            );
        }
        let _ = write!(
            s,
            "<p class=\"cmd\">Reproduce: <code>sqlite3 {}/catalog.sqlite \"SELECT run_id, mark, class, uri, object, expected, actual FROM audit_findings WHERE class NOT IN ('in-sync', 'verified', 'unverifiable') ORDER BY run_id\"</code></p>\n</section>\n",
            esc(&self.mirror())
        );
    }

    /// Earlier failed checks and the repairs of object `sha` (escaped HTML).
    fn history_of(&self, sha: &str, this_run: Option<i64>) -> String {
        let mut items = Vec::new();
        for d in self.damage.get(sha).into_iter().flatten() {
            if Some(d.run) != this_run {
                items.push(format!("audit run {}: {}", d.run, esc(&d.class)));
            }
        }
        for r in self.repairs.get(sha).into_iter().flatten() {
            items.push(format!(
                "repair run {}: {}",
                r.run,
                if r.repaired {
                    "repaired"
                } else {
                    "not repaired"
                }
            ));
        }
        match items.is_empty() {
            true => "first failure".into(),
            false => items.join("<br>"),
        }
    }

    fn changes(&self, s: &mut String) {
        let bars: Vec<(String, f64, String)> = self
            .runs
            .iter()
            .filter(|r| matches!(r.record.command.as_str(), "baseline" | "incremental"))
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .map(|r| {
                let n = |k: &str| r.counts[k].as_u64().unwrap_or(0);
                let changed = n("created") + n("updated") + n("deleted");
                (
                    format!("run {}", r.record.id),
                    changed as f64,
                    format!(
                        "{} +{} ~{} -{}",
                        changed,
                        n("created"),
                        n("updated"),
                        n("deleted")
                    ),
                )
            })
            .collect();
        let top = bars.iter().map(|b| b.1).fold(1.0, f64::max);
        s.push_str("<section id=\"changes\">\n<h2>Changes per run</h2>\n<p>Resources created (+), updated (~) and deleted (-) by each baseline and incremental run (the last 40).</p>\n");
        s.push_str(&bar_chart("chart-changes", "Changes per run", &bars, top));
        let _ = write!(
            s,
            "<p class=\"cmd\">Reproduce: <code>sqlite3 {}/catalog.sqlite \"SELECT id, command, started_at, json_extract(counts_json, '$.created'), json_extract(counts_json, '$.updated'), json_extract(counts_json, '$.deleted') FROM runs WHERE command IN ('baseline', 'incremental') ORDER BY id\"</code></p>\n</section>\n",
            esc(&self.mirror())
        );
    }

    fn agreement(&self, s: &mut String, t: &Totals) {
        let share = |counts: &serde_json::Value| -> Option<f64> {
            let n = |k: &str| counts[k].as_u64().unwrap_or(0) as f64;
            let compared =
                n("in-sync") + n("missing") + n("extra") + n("changed") + n("unverifiable");
            (compared > 0.0).then(|| n("in-sync") / compared)
        };
        let mut bars: Vec<(String, f64, String)> = self
            .runs
            .iter()
            .filter(|r| r.record.command == "audit" && r.counts["offline"] == false)
            .filter_map(|r| {
                Some((
                    format!("run {}", r.record.id),
                    share(&r.counts["findings"])?,
                ))
            })
            .map(|(l, v)| (l, v, format!("{:.1}%", v * 100.0)))
            .collect();
        if let Some(v) = share(&t.counts.to_json()) {
            let label = match self.header.as_ref().and_then(|h| h.run_id) {
                Some(r) => format!("run {r}"),
                None => "this audit".into(),
            };
            bars.push((label, v, format!("{:.1}%", v * 100.0)));
        }
        let keep = bars.len().saturating_sub(40);
        s.push_str("<section id=\"agreement\">\n<h2>Source and mirror agreement</h2>\n<p>The share of the resources compared that were in sync with the source, per audit against it (not offline).</p>\n");
        match bars.is_empty() {
            true => s.push_str("<p>No audit has compared the mirror with its source yet.</p>\n"),
            false => s.push_str(&bar_chart(
                "chart-agreement",
                "Source and mirror agreement",
                &bars[keep..],
                1.0,
            )),
        }
        let _ = write!(
            s,
            "<p class=\"cmd\">Reproduce: <code>sqlite3 {}/catalog.sqlite \"SELECT id, started_at, json_extract(counts_json, '$.findings') FROM runs WHERE command = 'audit' AND json_extract(counts_json, '$.offline') = 0 ORDER BY id\"</code></p>\n</section>\n",
            esc(&self.mirror())
        );
    }

    fn about(&self, s: &mut String, t: &Totals) {
        s.push_str("<footer>\n");
        for w in &t.warnings {
            let _ = writeln!(s, "<p>Warning: {}</p>", esc(w));
        }
        let _ = writeln!(
            s,
            "<p>Written by rsmirror {} at the end of the audit. Every finding is in the catalog (<code>audit_findings</code>); <code>rsmirror export premis DEST</code> writes the mirror's history as PREMIS 3.0.</p>\n</footer>",
            env!("CARGO_PKG_VERSION")
        );
    }
}

/// A horizontal bar chart as inline SVG: (label, value, text) per bar, `top` the full bar.
fn bar_chart(id: &str, title: &str, bars: &[(String, f64, String)], top: f64) -> String {
    let (row, label_w, bar_w) = (22.0, 110.0, 420.0);
    let height = row * bars.len() as f64 + 10.0;
    let mut s = format!(
        "<figure><svg id=\"{id}\" class=\"chart\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" viewBox=\"0 0 {} {height}\"><title>{}</title>\n",
        label_w + bar_w + 140.0,
        label_w + bar_w + 140.0,
        esc(title)
    );
    for (i, (label, value, text)) in bars.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let w = if top > 0.0 {
            (value / top).clamp(0.0, 1.0) * bar_w
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect class=\"track\" x=\"{label_w}\" y=\"{y}\" width=\"{bar_w}\" height=\"{}\"/><rect class=\"bar\" x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            label_w - 6.0,
            y + 14.0,
            esc(label),
            row - 6.0,
            row - 6.0,
            label_w + bar_w + 6.0,
            y + 14.0,
            esc(text)
        );
    }
    s.push_str("</svg><figcaption>");
    s.push_str(&esc(title));
    s.push_str("</figcaption></figure>\n");
    s
}

/// Text as HTML.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #111; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; }
.verdict { font-size: 1.3em; font-weight: bold; padding: .5em .8em; border-radius: 4px; }
.verdict.pass { background: #e3f4e1; border: 2px solid #2e7d32; }
.verdict.fail { background: #fde7e7; border: 2px solid #c62828; }
.meta dt { float: left; clear: left; width: 6em; font-weight: bold; } .meta dd { margin-left: 7em; }
.figures td { padding: 0 2em 0 0; } .figure { font-size: 1.8em; font-weight: bold; }
table.failures { border-collapse: collapse; font-size: .85em; width: 100%; }
table.failures td, table.failures th { border: 1px solid #ccc; padding: .2em .4em; vertical-align: top; overflow-wrap: anywhere; }
.hex { font-family: monospace; font-size: .85em; }
.chart text { font-size: 12px; } .chart .track { fill: #eee; } .chart .bar { fill: #1565c0; }
.cmd { font-size: .8em; color: #444; } code { overflow-wrap: anywhere; }
@media print {
  body { margin: 0; max-width: none; font-size: 11pt; }
  section, figure, tr { break-inside: avoid; }
  .verdict.pass, .verdict.fail { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .chart .bar { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
";

impl Gathered for Page {
    fn begin(&mut self, h: &Header) {
        self.header = Some(h.clone());
    }
    /// A finding went by: a difference is kept (up to [`KEPT`]).
    fn add(&mut self, f: &Finding) {
        if !f.class.is_difference(true) || f.class == Class::Unverifiable {
            return;
        }
        match self.failures.len() < KEPT {
            true => self.failures.push(f.clone()),
            false => self.more += 1,
        }
    }
    /// The whole page.
    fn write(&self, out: &mut dyn Write, t: &Totals) -> io::Result<()> {
        let h = self.header.as_ref();
        let mut s = String::with_capacity(64 * 1024);
        let title = format!(
            "rsmirror audit{}",
            h.and_then(|h| h.run_id)
                .map(|r| format!(", run {r}"))
                .unwrap_or_default()
        );
        let _ = write!(
            s,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
            esc(&title)
        );
        self.verdict(&mut s, t);
        self.coverage(&mut s, t);
        self.failures(&mut s);
        self.changes(&mut s);
        self.agreement(&mut s, t);
        self.about(&mut s, t);
        s.push_str("</body>\n</html>\n");
        out.write_all(s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit_run(id: i64, started_at: &str, sample: Option<&str>) -> PastRun {
        let counts =
            serde_json::json!({"level": "sha256", "sample": sample, "objects_checked": 10});
        PastRun {
            record: RunRecord {
                id,
                command: "audit".into(),
                source: None,
                arguments: String::new(),
                started_at: started_at.into(),
                ended_at: Some(started_at.into()),
                outcome: Some("ok".into()),
                counts_json: Some(counts.to_string()),
            },
            counts,
        }
    }

    #[test]
    fn coverage_counts_the_audits_of_each_window_from_this_audits_time() {
        let page = Page {
            runs: vec![
                audit_run(1, "2026-01-01T00:00:00Z", None),
                audit_run(2, "2026-05-01T00:00:00Z", Some("2/4")),
                audit_run(3, "2026-06-20T00:00:00Z", Some("1/4")),
                audit_run(4, "2026-06-25T00:00:00Z", Some("1/4")),
            ],
            damage: BTreeMap::new(),
            repairs: BTreeMap::new(),
            objects: 10,
            command: String::new(),
            header: Some(Header {
                run_id: Some(5),
                started_at: "2026-06-30T00:00:00Z".into(),
                mirror: "m".into(),
                source: None,
                level: "presence",
                sample: None,
                all_versions: false,
                offline: true,
                require_fixity: false,
            }),
            failures: Vec::new(),
            more: 0,
        };
        let t = Totals::default();
        assert_eq!(page.covered(&t, 30), 0.25);
        assert_eq!(page.covered(&t, 90), 0.5);
        assert_eq!(page.covered(&t, 365), 1.0);
    }

    #[test]
    fn html_text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn a_chart_has_a_bar_per_value_scaled_to_the_top() {
        let svg = bar_chart(
            "c",
            "T",
            &[("a".into(), 1.0, "1".into()), ("b".into(), 2.0, "2".into())],
            2.0,
        );
        assert_eq!(svg.matches("class=\"bar\"").count(), 2);
        assert!(svg.contains("width=\"210.0\""), "{svg}");
        assert!(svg.contains("width=\"420.0\""), "{svg}");
    }
}
