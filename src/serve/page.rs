//! What `serve` says of the mirror as a whole: the status page (`/`), `/status.json` (what
//! `status --json` prints), `/healthz` (200 when `status` would exit 0, else 503) and
//! `/metrics` (Prometheus' text format). All rendered from `access::status` and
//! `access::log`; the page is one document with its styles and charts inline (SVG), nothing
//! fetched from elsewhere, so it works on an air-gapped machine.

use crate::access::log::{self, RunLine};
use crate::access::status::{self, Status};
use crate::access::{age_of, human_age, shown_time, Reader};
use crate::error::Error;
use crate::serve::reply::Reply;
use crate::serve::State;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

fn summary(state: &State) -> Result<Status, Error> {
    status::summary(&state.options.mirror, &state.options.limits)
}

/// `/status.json`: the document `rsmirror status --json` prints, byte for byte.
pub(crate) fn status_json(state: &State) -> Result<Reply, Error> {
    let st = summary(state)?;
    let body = serde_json::to_string_pretty(&st).expect("serialisable") + "\n";
    Ok(Reply::text(200, "application/json", body).header("cache-control", "no-store"))
}

/// `/healthz`: 200 `ok` when `status` would exit 0; else 503 with the hints that need a person.
pub(crate) fn healthz(state: &State) -> Result<Reply, Error> {
    let st = summary(state)?;
    let reply = match st.needs_person() {
        0 => Reply::text(200, "text/plain; charset=utf-8", "ok\n"),
        _ => {
            let mut body = String::new();
            for h in st.hints.iter().filter(|h| h.needs_person) {
                let _ = writeln!(body, "{}: {}", h.code, h.hint);
            }
            Reply::text(503, "text/plain; charset=utf-8", body)
        }
    };
    Ok(reply.header("cache-control", "no-store"))
}

/// The newest runs, newest first (at most `n`).
fn newest_runs(reader: &Reader, n: usize) -> Result<Vec<RunLine>, Error> {
    let mut runs = Vec::new();
    log::each_run(reader, |r| {
        runs.push(r);
        Ok(runs.len() < n)
    })?;
    Ok(runs)
}

/// `/metrics`: runs by command and outcome, what the mirror holds, the ages a monitor alerts
/// on, and this server's responses.
pub(crate) fn metrics(state: &State, reader: &Reader) -> Result<Reply, Error> {
    let st = summary(state)?;
    let mut by_outcome: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut last_good: Option<String> = None;
    log::each_run(reader, |r| {
        let outcome = r.outcome.clone().unwrap_or_else(|| "running".into());
        if outcome == "ok" && last_good.is_none() {
            last_good = r.ended_at.clone();
        }
        *by_outcome.entry((r.command, outcome)).or_default() += 1;
        Ok(true)
    })?;
    let mut m = String::new();
    let mut family = |name: &str, kind: &str, help: &str| {
        let _ = writeln!(m, "# HELP {name} {help}\n# TYPE {name} {kind}");
        name.to_string()
    };
    let mut lines = Vec::new();
    let n = family(
        "rsmirror_runs_total",
        "counter",
        "Runs recorded, by command and outcome.",
    );
    for ((command, outcome), count) in &by_outcome {
        lines.push(format!(
            "{n}{{command=\"{command}\",outcome=\"{outcome}\"}} {count}"
        ));
    }
    let _ = writeln!(m, "{}", lines.join("\n"));
    let gauge = |m: &mut String, name: &str, help: &str, samples: &[(&str, f64)]| {
        let _ = writeln!(m, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (labels, v) in samples {
            let _ = writeln!(m, "{name}{labels} {}", sample(*v));
        }
    };
    gauge(
        &mut m,
        "rsmirror_resources",
        "Resources the mirror holds now, present or deleted.",
        &[
            ("{state=\"present\"}", st.resources_present as f64),
            ("{state=\"deleted\"}", st.resources_deleted as f64),
        ],
    );
    gauge(
        &mut m,
        "rsmirror_versions",
        "Versions recorded, tombstones included.",
        &[("", st.versions as f64)],
    );
    gauge(
        &mut m,
        "rsmirror_objects",
        "Objects the catalog references.",
        &[("", st.objects as f64)],
    );
    gauge(
        &mut m,
        "rsmirror_object_bytes",
        "Bytes of those objects.",
        &[("", st.object_bytes as f64)],
    );
    let age = |t: &Option<String>| {
        t.as_deref()
            .and_then(age_of)
            .map_or(f64::INFINITY, |a| a as f64)
    };
    gauge(
        &mut m,
        "rsmirror_last_good_run_age_seconds",
        "Seconds since the last run that ended ok (+Inf: none).",
        &[("", age(&last_good))],
    );
    gauge(
        &mut m,
        "rsmirror_oldest_fixity_check_age_seconds",
        "Seconds since every current object was last re-hashed (+Inf: never).",
        &[("", age(&st.fixity.current_objects_rehashed_since))],
    );
    gauge(
        &mut m,
        "rsmirror_hints_needing_a_person",
        "Hints of rsmirror status that need a person (healthz is 503 above 0).",
        &[("", st.needs_person() as f64)],
    );
    gauge(
        &mut m,
        "rsmirror_serve_start_time_seconds",
        "When this server started, in Unix time.",
        &[("", state.started.as_second() as f64)],
    );
    let _ = writeln!(
        m,
        "# HELP rsmirror_http_responses_total Responses of this server by status class.\n\
         # TYPE rsmirror_http_responses_total counter"
    );
    for (i, n) in state.answered.iter().enumerate() {
        let _ = writeln!(
            m,
            "rsmirror_http_responses_total{{class=\"{}xx\"}} {}",
            i + 1,
            n.load(Ordering::Relaxed)
        );
    }
    Ok(
        Reply::text(200, "text/plain; version=0.0.4; charset=utf-8", m)
            .header("cache-control", "no-store"),
    )
}

/// A sample's value as Prometheus' text format writes it (`+Inf`, not Rust's `inf`).
fn sample(v: f64) -> String {
    match v {
        f64::INFINITY => "+Inf".into(),
        f64::NEG_INFINITY => "-Inf".into(),
        v if v.is_nan() => "NaN".into(),
        v => v.to_string(),
    }
}

/// Text for HTML.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

pub(crate) const STYLE: &str =
    "body{font:15px/1.4 system-ui,sans-serif;margin:2em auto;max-width:64em;\
padding:0 1em;color:#222}h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}\
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.2em .6em;\
border-bottom:1px solid #ddd;font-variant-numeric:tabular-nums}.ok{color:#176a2b}\
.bad{color:#a4161a;font-weight:bold}.hint{background:#fff3cd;padding:.4em .8em;margin:.3em 0}\
code{font-size:.9em}svg{display:block;margin:.5em 0}.legend span{margin-right:1em}";

/// `/`: every source and collection with its sync point and last runs, what the mirror holds,
/// the fixity checks, the hints, and charts of the changes per run and of the fixity age.
pub(crate) fn page(state: &State, reader: &Reader) -> Result<Reply, Error> {
    let st = summary(state)?;
    let runs = newest_runs(reader, 30)?;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>rsmirror: {}</title><style>{STYLE}</style></head><body>\n\
         <h1>rsmirror mirror <code>{}</code></h1>\n",
        esc(&st.mirror),
        esc(&st.mirror)
    );
    let health = match st.needs_person() {
        0 => "<p id=\"health\" class=\"ok\">healthy: nothing needs a person</p>".to_string(),
        n => format!("<p id=\"health\" class=\"bad\">{n} hint(s) need a person</p>"),
    };
    h.push_str(&health);
    for hint in &st.hints {
        let _ = writeln!(
            h,
            "<p class=\"hint\"><code>{}</code> {}</p>",
            esc(hint.code),
            esc(&hint.hint)
        );
    }
    let _ = writeln!(
        h,
        "<p>{} resources present, {} deleted; {} versions; {} objects ({}).</p>",
        st.resources_present,
        st.resources_deleted,
        st.versions,
        st.objects,
        crate::report::human_bytes(st.object_bytes)
    );
    if let Some(r) = &st.running {
        let _ = writeln!(
            h,
            "<p id=\"running\">Run {} ({}) under way since {}: shown is the mirror as the last \
             run that ended left it.</p>",
            r.run,
            esc(&r.command),
            esc(&shown_time(&r.started_at))
        );
    }
    sources(&mut h, &st);
    h.push_str("<h2>Changes per run</h2>\n");
    h.push_str(&changes_chart(&runs));
    runs_table(&mut h, &runs);
    h.push_str("<h2>Fixity</h2>\n");
    h.push_str(&fixity(&st));
    h.push_str(
        "<p><a href=\"/browse\">browse</a> · <a href=\"/status.json\">status.json</a> · <a href=\"/healthz\">healthz</a> · \
         <a href=\"/metrics\">metrics</a> · mementos at <code>/web/TIMESTAMP/URL</code>, \
         <code>/timegate/URL</code>, <code>/timemap/link/URL</code></p>\n</body></html>\n",
    );
    Ok(Reply::text(200, "text/html; charset=utf-8", h)
        .header("cache-control", "no-store")
        .header(
            "content-security-policy",
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
        ))
}

fn outcome_class(outcome: Option<&str>) -> &'static str {
    match outcome {
        Some("ok") => "ok",
        None => "",
        Some(_) => "bad",
    }
}

fn sources(h: &mut String, st: &Status) {
    h.push_str("<h2>Sources</h2>\n");
    if st.sources.is_empty() {
        h.push_str("<p>No sources yet: <code>rsmirror baseline SOURCE</code> adds one.</p>\n");
    }
    for s in &st.sources {
        let _ = writeln!(
            h,
            "<section class=\"source\"><h3><code>{}</code> {}</h3>",
            esc(&s.url),
            esc(&s.kind)
        );
        if let Some(removed) = &s.removed_at {
            let _ = writeln!(
                h,
                "<p>Not followed since {}.</p>",
                esc(&shown_time(removed))
            );
        }
        h.push_str(
            "<table><tr><th>collection</th><th>sync point</th><th>confirmed</th>\
                    <th>present</th><th>deleted</th><th>versions</th></tr>\n",
        );
        for c in &s.collections {
            let (at, confirmed) = match &c.sync_point {
                Some(p) => (
                    p.at.clone().unwrap_or_else(|| "(unanchored)".into()),
                    format!(
                        "{} ago (run {})",
                        human_age(p.age_seconds.unwrap_or(0)),
                        p.run
                    ),
                ),
                None => ("none yet".into(), "-".into()),
            };
            let _ = writeln!(
                h,
                "<tr><td><code>{}</code></td><td class=\"sync-point\">{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.name),
                esc(&at),
                esc(&confirmed),
                c.resources_present,
                c.resources_deleted,
                c.versions
            );
        }
        h.push_str(
            "</table>\n<table><tr><th>last</th><th>run</th><th>started</th>\
                    <th>outcome</th><th>exit</th></tr>\n",
        );
        for (command, r) in &s.last_runs {
            let _ = writeln!(
                h,
                "<tr class=\"last-run\"><td>{}</td><td>{}</td><td>{}</td>\
                 <td class=\"{}\">{}</td><td>{}</td></tr>",
                esc(command),
                r.run,
                esc(&shown_time(&r.started_at)),
                outcome_class(r.outcome.as_deref()),
                esc(r.outcome.as_deref().unwrap_or("running")),
                r.exit_code.map_or_else(|| "-".into(), |c| c.to_string())
            );
        }
        h.push_str("</table></section>\n");
    }
}

fn count_of(r: &RunLine, key: &str) -> u64 {
    r.counts.get(key).and_then(|v| v.as_u64()).unwrap_or(0)
}

/// Created, updated and deleted per run (the newest 30, oldest on the left), stacked bars.
fn changes_chart(runs: &[RunLine]) -> String {
    let changing: Vec<&RunLine> = runs.iter().rev().filter(|r| r.command != "audit").collect();
    if changing.is_empty() {
        return "<p>No runs yet.</p>\n".into();
    }
    let kinds = [
        ("created", "#2b8a3e"),
        ("updated", "#1971c2"),
        ("deleted", "#c92a2a"),
    ];
    let top = changing
        .iter()
        .map(|r| kinds.iter().map(|(k, _)| count_of(r, k)).sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (w, hgt, bar) = (640.0, 160.0, 640.0 / changing.len() as f64);
    let mut svg = format!(
        "<svg id=\"changes\" role=\"img\" aria-label=\"changes per run\" width=\"{w}\" \
         height=\"{}\" viewBox=\"0 0 {w} {}\" xmlns=\"http://www.w3.org/2000/svg\">",
        hgt + 20.0,
        hgt + 20.0
    );
    for (i, r) in changing.iter().enumerate() {
        let mut y = hgt;
        let x = i as f64 * bar;
        for (k, colour) in kinds {
            let n = count_of(r, k);
            if n == 0 {
                continue;
            }
            let height = n as f64 / top * (hgt - 10.0);
            y -= height;
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{height:.1}\" \
                 fill=\"{colour}\"><title>run {}: {n} {k}</title></rect>",
                x + 1.0,
                (bar - 2.0).max(1.0),
                r.run
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            x + bar / 2.0,
            hgt + 14.0,
            r.run
        );
    }
    svg.push_str("</svg>\n<p class=\"legend\">");
    for (k, colour) in kinds {
        let _ = write!(svg, "<span style=\"color:{colour}\">■ {k}</span>");
    }
    svg.push_str("</p>\n");
    svg
}

fn runs_table(h: &mut String, runs: &[RunLine]) {
    h.push_str(
        "<h2>Last runs</h2>\n<table id=\"runs\"><tr><th>run</th><th>command</th>\
                <th>started</th><th>duration</th><th>outcome</th><th>exit</th></tr>\n",
    );
    for r in runs {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td>\
             <td>{}</td></tr>",
            r.run,
            esc(&r.command),
            esc(&shown_time(&r.started_at)),
            r.duration_seconds
                .map_or_else(|| "-".into(), |s| format!("{s:.1} s")),
            outcome_class(r.outcome.as_deref()),
            esc(r.outcome.as_deref().unwrap_or("running")),
            r.exit_code.map_or_else(|| "-".into(), |c| c.to_string())
        );
    }
    h.push_str("</table>\n");
}

/// How long since the objects were last all re-hashed, against the 90-day mark `status` warns
/// at, as a bar.
fn fixity(st: &Status) -> String {
    let mut out = String::new();
    for (what, since) in [
        ("current objects", &st.fixity.current_objects_rehashed_since),
        ("every object", &st.fixity.all_objects_rehashed_since),
    ] {
        let (text, days) = match since.as_deref().and_then(|t| Some((t, age_of(t)?))) {
            Some((t, age)) => (
                format!("re-hashed since {} ({} ago)", shown_time(t), human_age(age)),
                age as f64 / 86_400.0,
            ),
            None => ("never all re-hashed".to_string(), 90.0),
        };
        let width = (days / 90.0).clamp(0.0, 1.0) * 300.0;
        let colour = if days >= 90.0 { "#c92a2a" } else { "#2b8a3e" };
        let _ = writeln!(
            out,
            "<p>{what}: {}</p><svg class=\"fixity-age\" width=\"300\" height=\"10\" \
             xmlns=\"http://www.w3.org/2000/svg\"><rect width=\"300\" height=\"10\" \
             fill=\"#eee\"/><rect width=\"{width:.1}\" height=\"10\" fill=\"{colour}\"/></svg>",
            esc(&text)
        );
    }
    out
}
