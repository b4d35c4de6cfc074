//! `ls`: the resources present at a point, sorted by URI, streamed from the catalog's URI index
//! to a sink one row at a time (the first row comes at once; memory stays flat however many
//! there are). The command line prints the rows (`commands::ls`); `serve` renders them.

use crate::access::{collection_ids, each_state, Filter, Point, Reader, VersionRow};
use crate::error::Error;
use crate::store::arc_records::{ArcPage, ArcPages};

/// Which resources: under a URI prefix, of one collection, tombstones or not.
#[derive(Default)]
pub struct Query {
    pub prefix: Option<String>,
    /// Only URIs after this one (a page that goes on where the page before ended).
    pub after: Option<String>,
    pub deleted: bool,
    pub collection: Option<String>,
    /// Read what an ARC sitemap said of each page (`ls --json`): one more lookup per row.
    pub arc: bool,
    /// Read the categories of each state (`ls --long`, `--json`): one more lookup per row.
    pub categories: bool,
}

/// One resource's state at the point (the keys of `ls --json`, JSON Lines, are stable).
#[derive(serde::Serialize)]
pub struct Entry<'a> {
    pub uri: &'a str,
    pub collection: &'a str,
    pub deleted: bool,
    /// When the state arrived: the start of the run that brought it.
    pub arrived: &'a str,
    #[serde(flatten)]
    pub version: &'a VersionRow,
    /// An ARC page's `ai_indexable` (recorded, not enforced); absent for other sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_indexable: Option<bool>,
    /// What the ARC sitemap or delta feed said of the page; absent for other sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arc: Option<ArcPage>,
    /// The categories the source gave this state (2012 draft §3.1.7); absent when none (or
    /// not asked for).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<crate::model::Category>,
}

/// Every resource the query selects at `point`, in URI order, handed to `sink` (`Ok(false)`
/// stops the walk); how many were handed over.
pub(crate) fn list(
    reader: &Reader,
    point: Point,
    q: &Query,
    mut sink: impl FnMut(Entry<'_>) -> Result<bool, Error>,
) -> Result<u64, Error> {
    let collections = match &q.collection {
        None => None,
        Some(c) => Some(collection_ids(reader, c)?),
    };
    let filter = Filter {
        prefix: q.prefix.clone().unwrap_or_default(),
        after: q.after.clone(),
        collections,
        deleted: q.deleted,
        bytes_only: false,
    };
    let ai = ArcPages::new(reader.catalog())?;
    let mut listed = 0u64;
    each_state(reader, point, &filter, |uri, collection, v| {
        let arc = match q.arc {
            true => ai.of(reader.catalog(), v.version)?,
            false => None,
        };
        let categories = match q.categories {
            true => reader.catalog().version_categories(v.version)?,
            false => Vec::new(),
        };
        listed += 1;
        sink(Entry {
            uri,
            collection,
            deleted: v.deleted(),
            arrived: reader.arrived(v.run),
            version: v,
            ai_indexable: arc.as_ref().map(|p| p.ai_indexable),
            arc,
            categories,
        })
    })?;
    Ok(listed)
}
