//! `rsmirror ls`: the resources present at a point, sorted by URI, streamed from the catalog's
//! URI index (the first line comes at once; memory stays flat however many there are).

use crate::access::{
    collection_ids, each_state, shown_time, Filter, Out, Reader, VersionRow, When,
};
use crate::error::Error;

pub struct Options {
    pub prefix: Option<String>,
    pub at: Option<When>,
    pub long: bool,
    pub deleted: bool,
    pub collection: Option<String>,
    pub json: bool,
}
use crate::store::arc_records::{ArcPage, ArcPages};

/// One line of `ls --json` (JSON Lines; these keys are stable).
#[derive(serde::Serialize)]
struct Entry<'a> {
    uri: &'a str,
    collection: &'a str,
    deleted: bool,
    /// When the state arrived: the start of the run that brought it.
    arrived: &'a str,
    #[serde(flatten)]
    version: &'a VersionRow,
    /// An ARC page's `ai_indexable` (recorded, not enforced); absent for other sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    ai_indexable: Option<bool>,
    /// What the ARC sitemap or delta feed said of the page; absent for other sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    arc: Option<ArcPage>,
}

pub(crate) fn run(mirror: &std::path::Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    let point = reader.point(o.at.as_ref())?;
    if let Some(note) = reader.in_progress_note(o.at.as_ref()) {
        note!("rsmirror: {note}");
    }
    detail!(
        "rsmirror: listing the mirror {}",
        reader.describe_point(point)
    );
    let mut listed = 0u64;
    let collections = match &o.collection {
        None => None,
        Some(c) => Some(collection_ids(&reader, c)?),
    };
    let filter = Filter {
        prefix: o.prefix.clone().unwrap_or_default(),
        collections,
        deleted: o.deleted,
    };
    let mut out = Out::stdout();
    let mut first = true;
    // Each run's time as shown, formatted once (a million lines name a handful of runs).
    let mut shown: std::collections::HashMap<i64, String> = std::collections::HashMap::new();
    let ai = ArcPages::new(reader.catalog())?;
    each_state(&reader, point, &filter, |uri, collection, v| {
        let arrived = reader.arrived(v.run);
        let more = if o.json {
            let arc = ai.of(reader.catalog(), v.version)?;
            out.json_line(&Entry {
                uri,
                collection,
                deleted: v.deleted(),
                arrived,
                version: v,
                ai_indexable: arc.as_ref().map(|p| p.ai_indexable),
                arc,
            })?
        } else if o.long {
            let shown = shown.entry(v.run).or_insert_with(|| shown_time(arrived));
            out.line(&long_line(uri, v, shown))?
        } else if v.deleted() {
            let shown = shown.entry(v.run).or_insert_with(|| shown_time(arrived));
            out.line(&format!("{uri}  (deleted {shown})"))?
        } else {
            out.line(uri)?
        };
        if more && first {
            out.flush()?;
            first = false;
        }
        listed += 1;
        Ok(more)
    })?;
    out.flush()?;
    detail!("rsmirror: {listed} resource(s) listed");
    Ok(())
}

/// `ls -l`: length, lastmod, SHA-256 (12 hex), arrived (as shown), URI in fixed columns; then
/// the content coding of bytes kept encoded.
fn long_line(uri: &str, v: &VersionRow, arrived: &str) -> String {
    let length = match v.length {
        Some(n) if !v.deleted() => n.to_string(),
        _ => "-".into(),
    };
    let sha = if v.deleted() {
        "(deleted)".to_string()
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
    match v.encoding() {
        Some(coding) if !v.deleted() => format!("{line}  ({coding}-encoded)"),
        _ => line,
    }
}
