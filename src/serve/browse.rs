//! Browsing the mirror as a person does (or a program, asking for JSON): what the mirror held
//! under a URL prefix at any WHEN (`/browse`), every version of one URI with links to its
//! mementos (`/versions/URL`), and what changed between two points (`/diff`). Each page is
//! what `ls`, `log URL` and `diff` return, rendered; `Accept: application/json` gets those
//! rows as JSON instead (the keys of `ls --json`, `log URL --json` and `diff --json`).

use crate::access::{diff, log, ls, Point, Reader, When};
use crate::error::Error;
use crate::serve::memento::{escaped, Urls};
use crate::serve::page::{esc, STYLE};
use crate::serve::reply::Reply;
use std::fmt::Write as _;

/// Rows on one listing page; the next page goes on after the last URI shown.
const PER_PAGE: usize = 500;
/// Lines of a diff page; past it the page says how to get the rest (`rsmirror diff`).
const DIFF_LINES: usize = 2000;

/// The parameters of a query string (`prefix=...&at=...`), decoded.
fn param(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

/// A WHEN of the query as a point of the mirror (none: now), or the 400 that says why not.
fn point(reader: &Reader, when: Option<&str>) -> Result<Point, Reply> {
    let when = match when {
        Some(w) => Some(When::parse(w).map_err(|e| Reply::error(400, &e.0))?),
        None => None,
    };
    reader
        .point(when.as_ref())
        .map_err(|e| Reply::error(400, &e.0))
}

fn html(title: &str, body: &str) -> Reply {
    let page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n\
         <p><a href=\"/\">status</a> · <a href=\"/browse\">browse</a></p>\n{body}</body></html>\n",
        esc(title)
    );
    Reply::text(200, "text/html; charset=utf-8", page)
        .header("cache-control", "no-store")
        .header(
            "content-security-policy",
            "default-src 'none'; style-src 'unsafe-inline'",
        )
}

fn json(value: &impl serde::Serialize) -> Result<Reply, Error> {
    let body = serde_json::to_vec_pretty(value).expect("rows of strings and numbers serialize");
    Ok(Reply::text(200, "application/json", body).header("cache-control", "no-store"))
}

/// A query string of these parameters, encoded.
fn query_of(pairs: &[(&str, &str)]) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if !v.is_empty() {
            q.append_pair(k, v);
        }
    }
    q.finish()
}

/// `/browse?prefix=URL&at=WHEN&after=URI`: the resources under a prefix at a point, in URI
/// order, a page at a time.
pub(crate) fn listing(reader: &Reader, query: Option<&str>, as_json: bool) -> Result<Reply, Error> {
    let prefix = param(query, "prefix");
    let at = param(query, "at");
    let point = match point(reader, at.as_deref()) {
        Ok(p) => p,
        Err(refused) => return Ok(refused),
    };
    let q = ls::Query {
        prefix: prefix.clone(),
        after: param(query, "after"),
        ..ls::Query::default()
    };
    let mut rows: Vec<serde_json::Value> = Vec::new();
    let mut last = None;
    let mut more = false;
    ls::list(reader, point, &q, |e| {
        if rows.len() == PER_PAGE {
            more = true;
            return Ok(false);
        }
        last = Some(e.uri.to_string());
        rows.push(serde_json::to_value(&e).expect("rows of strings and numbers serialize"));
        Ok(true)
    })?;
    if as_json {
        return json(&rows);
    }
    let shown = reader.describe_point(point);
    let mut b = String::new();
    let _ = write!(
        b,
        "<h1>The mirror at {}</h1>\n<form method=\"get\" action=\"/browse\">\
         <label>URL prefix <input name=\"prefix\" size=\"50\" value=\"{}\"></label> \
         <label>at <input name=\"at\" size=\"24\" value=\"{}\" placeholder=\"now, run:3, 2026-03-01\"></label> \
         <button>show</button></form>\n<table id=\"listing\"><tr><th>URI</th><th>arrived</th>\
         <th>length</th><th>type</th></tr>\n",
        esc(&shown),
        esc(prefix.as_deref().unwrap_or("")),
        esc(at.as_deref().unwrap_or(""))
    );
    for r in &rows {
        let uri = r["uri"].as_str().unwrap_or("");
        let _ =
            writeln!(
            b,
            "<tr><td><a href=\"/versions/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&escaped(uri)),
            esc(uri),
            esc(r["arrived"].as_str().unwrap_or("")),
            r["length"].as_i64().map(|n| n.to_string()).unwrap_or_default(),
            esc(r["media_type"].as_str().unwrap_or(""))
        );
    }
    b.push_str("</table>\n");
    if rows.is_empty() {
        b.push_str("<p>Nothing under this prefix at this point.</p>\n");
    }
    if let (true, Some(last)) = (more, &last) {
        let next = query_of(&[
            ("prefix", prefix.as_deref().unwrap_or("")),
            ("at", at.as_deref().unwrap_or("")),
            ("after", last),
        ]);
        let _ = writeln!(
            b,
            "<p><a rel=\"next\" href=\"/browse?{}\">next {PER_PAGE}</a></p>",
            esc(&next)
        );
    }
    Ok(html("rsmirror: browse", &b))
}

/// `/versions/URL`: every version of one URI, newest first, each linked to its memento.
pub(crate) fn versions(
    reader: &Reader,
    urls: &Urls,
    uri: &str,
    as_json: bool,
) -> Result<Reply, Error> {
    if reader.find(uri)?.is_none() {
        return Ok(Reply::error(404, &format!("{uri} is not in the mirror")));
    }
    let v = log::versions(reader, uri)?;
    if as_json {
        return json(&v);
    }
    let mut b = String::new();
    let _ = write!(
        b,
        "<h1>{}</h1>\n<p>collection <code>{}</code> · <a href=\"{}\">TimeMap</a></p>\n\
         <table id=\"versions\"><tr><th>arrived</th><th>run</th><th>change</th><th>length</th>\
         <th>SHA-256</th><th>type</th><th>via</th></tr>\n",
        esc(&v.uri),
        esc(&v.collection),
        esc(&urls.timemap(crate::serve::route::MapFormat::Link, 1, &v.uri))
    );
    for x in &v.versions {
        let arrived = match (x.change, x.arrived.parse::<jiff::Timestamp>()) {
            (crate::model::Change::Deleted, _) | (_, Err(_)) => esc(&x.arrived),
            (_, Ok(t)) => format!(
                "<a href=\"{}\">{}</a>",
                esc(&urls.memento(t.as_second(), &v.uri)),
                esc(&x.arrived)
            ),
        };
        let _ = writeln!(
            b,
            "<tr><td>{arrived}</td><td>{} <code>{}</code></td><td>{}</td><td>{}</td>\
             <td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            x.run,
            esc(&x.run_command),
            x.change,
            x.length.map(|n| n.to_string()).unwrap_or_default(),
            esc(x.sha256.as_deref().map_or("", |s| s.get(..16).unwrap_or(s))),
            esc(x.media_type.as_deref().unwrap_or("")),
            esc(&x.arrived_via.to_string())
        );
    }
    b.push_str("</table>\n");
    Ok(html(&format!("rsmirror: {}", v.uri), &b))
}

/// `/diff?from=WHEN&to=WHEN`: what changed between two points (`to` default: now).
pub(crate) fn changes(reader: &Reader, query: Option<&str>, as_json: bool) -> Result<Reply, Error> {
    let Some(from) = param(query, "from") else {
        return Ok(Reply::error(
            400,
            "/diff needs from=WHEN (and to=WHEN, default now): /diff?from=run:3&to=run:5",
        ));
    };
    let to = param(query, "to");
    let (a, b) = match (point(reader, Some(&from)), point(reader, to.as_deref())) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(r), _) | (_, Err(r)) => return Ok(r),
    };
    let mut lines = Vec::new();
    let mut cut = false;
    let marks = diff::between(reader, a, b, |l| {
        if lines.len() == DIFF_LINES {
            cut = true;
            return Ok(true);
        }
        lines.push(serde_json::to_value(&l).expect("rows of strings and numbers serialize"));
        Ok(true)
    })?;
    if as_json {
        return json(&serde_json::json!({ "marks": marks, "lines": lines, "cut": cut }));
    }
    let mut h = String::new();
    let _ = write!(
        h,
        "<h1>From {} to {}</h1>\n<p>{} created, {} updated, {} deleted.</p>\n\
         <table id=\"diff\"><tr><th></th><th>URI</th><th>before</th><th>after</th></tr>\n",
        esc(&reader.describe_point(a)),
        esc(&reader.describe_point(b)),
        marks.created,
        marks.updated,
        marks.deleted
    );
    let sha = |v: &serde_json::Value| {
        v["sha256"]
            .as_str()
            .map(|s| s.get(..16).unwrap_or(s).to_string())
            .unwrap_or_default()
    };
    for l in &lines {
        let uri = l["uri"].as_str().unwrap_or("");
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><a href=\"/versions/{}\">{}</a></td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            esc(l["mark"].as_str().unwrap_or("")),
            esc(&escaped(uri)),
            esc(uri),
            esc(&sha(&l["before"])),
            esc(&sha(&l["after"]))
        );
    }
    h.push_str("</table>\n");
    if cut {
        let _ = writeln!(
            h,
            "<p>The first {DIFF_LINES} lines; <code>rsmirror diff</code> gives them all.</p>"
        );
    }
    Ok(html("rsmirror: diff", &h))
}

/// Whether a request asks for JSON rather than a page (`Accept: application/json` before
/// any HTML, or `?format=json`).
pub(crate) fn wants_json(accept: Option<&str>, query: Option<&str>) -> bool {
    if param(query, "format").as_deref() == Some("json") {
        return true;
    }
    let Some(accept) = accept else { return false };
    let json = accept.find("application/json");
    let html = accept.find("text/html");
    match (json, html) {
        (Some(j), Some(h)) => j < h,
        (Some(_), None) => true,
        _ => false,
    }
}
