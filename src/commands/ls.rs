//! `rsmirror ls`: the rows of `access::ls` as lines (URI; `-l` columns; `--json` JSON Lines).

use crate::access::{self, shown_time, Reader, VersionRow, When};
use crate::commands::output::Out;
use crate::error::Error;
use std::collections::HashMap;
use std::path::Path;

pub struct Options {
    pub query: access::ls::Query,
    pub at: Option<When>,
    pub long: bool,
    pub json: bool,
}

pub(crate) fn run(mirror: &Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    let point = reader.point(o.at.as_ref())?;
    if let Some(note) = reader.in_progress_note(o.at.as_ref()) {
        note!("rsmirror: {note}");
    }
    detail!(
        "rsmirror: listing the mirror {}",
        reader.describe_point(point)
    );
    let mut out = Out::stdout();
    let mut first = true;
    // Each run's time as shown, formatted once (a million lines name a handful of runs).
    let mut shown: HashMap<i64, String> = HashMap::new();
    let listed = access::ls::list(&reader, point, &o.query, |e| {
        let more = if o.json {
            out.json_line(&e)?
        } else if o.long {
            let shown = shown
                .entry(e.version.run)
                .or_insert_with(|| shown_time(e.arrived));
            out.line(&long_line(e.uri, e.version, shown, &e.categories))?
        } else if e.deleted {
            let shown = shown
                .entry(e.version.run)
                .or_insert_with(|| shown_time(e.arrived));
            out.line(&format!("{}  (deleted {shown})", e.uri))?
        } else {
            out.line(e.uri)?
        };
        if more && first {
            out.flush()?;
            first = false;
        }
        Ok(more)
    })?;
    out.flush()?;
    detail!("rsmirror: {listed} resource(s) listed");
    Ok(())
}

/// `ls -l`: length, lastmod, SHA-256 (12 hex), arrived (as shown), URI in fixed columns; then
/// the content coding of bytes kept encoded, and the categories the source gave it
/// (`[Frogs, Crocodiles]`: each one's title, else its value).
fn long_line(
    uri: &str,
    v: &VersionRow,
    arrived: &str,
    categories: &[crate::model::Category],
) -> String {
    let length = match (v.length, v.declared_length) {
        (Some(n), _) if !v.deleted() => n.to_string(),
        // What the source declares, marked: nothing here was measured.
        (None, Some(n)) if v.metadata_only => format!("~{n}"),
        _ => "-".into(),
    };
    let sha = if v.deleted() {
        "(deleted)".to_string()
    } else if v.metadata_only {
        format!("({})", VersionRow::NO_BYTES)
    } else {
        v.sha256
            .as_deref()
            .map(|s| s[..s.len().min(12)].to_string())
            .unwrap_or_else(|| "-".into())
    };
    let lastmod = v.lastmod.as_deref().unwrap_or("-");
    let line = format!("{length:>12}  {lastmod:<20}  {sha:<12}  {arrived}  {uri}");
    // Bytes kept in a content coding (as served, or as the source declared them) say so
    // after the URI, as `ls -l` names a link's target: they are not the resource decoded.
    let line = match v.encoding() {
        Some(coding) if !v.deleted() => format!("{line}  ({coding}-encoded)"),
        _ => line,
    };
    if categories.is_empty() {
        return line;
    }
    let names: Vec<&str> = categories
        .iter()
        .map(|c| c.title.as_deref().unwrap_or(&c.value))
        .collect();
    format!("{line}  [{}]", names.join(", "))
}
