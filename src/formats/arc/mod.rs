//! ARC sitemaps (ARC sitemap 2.1) as a [`Format`]: `mirror` reads a sitemap into a snapshot
//! the engine takes (`engine::snapshot`: its pages fetched, their declared checksums verified,
//! each version with its page's row in `arc_versions`) and follows its delta feeds; what only
//! ARC keeps is the store's (`store::arc_records`). The reader is `read`.

pub mod mirror;
pub mod read;
/// What the catalog keeps of ARC sources besides versions: the store's.
pub use crate::store::arc_records as records;

use super::{url_of, Expected, Format};
use crate::engine::context::RunContext;
use crate::engine::discover::{Collection, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::expected::Item;
use crate::engine::format::{Lists, Mirror, ToTake};
use crate::error::{Error, SourceError};
use crate::report::DocumentReport;
use crate::report::Summary;
use crate::settings;
use crate::store::Catalog;
use read::Page;
use records::PageRecord;

pub struct Arc;

/// An ARC sitemap lists every page of its site: the engine takes it as a snapshot.
impl Lists for Arc {
    fn snapshots(
        &self,
        docs: &Documents<'_>,
        s: &settings::Baseline,
        collections: Vec<Collection>,
        mirror: Mirror<'_>,
    ) -> Result<Vec<ToTake>, Error> {
        collections
            .into_iter()
            .map(|c| mirror::snapshot(docs, s, (&url_of(&c), c.received_json), mirror))
            .collect()
    }
}

impl Format for Arc {
    fn kind(&self) -> SourceKind {
        SourceKind::Arc
    }

    fn lists(&self) -> Option<&dyn Lists> {
        Some(self)
    }

    fn incremental(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
    ) -> Result<(), Error> {
        let urls: Vec<_> = collections.iter().map(url_of).collect();
        mirror::incremental(ctx, s, &urls)
    }

    fn plan_changes(
        &self,
        docs: &Documents<'_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
        catalog: &Catalog,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        for c in collections {
            mirror::plan_changes(docs, s, &url_of(&c), catalog, summary)?;
        }
        Ok(true)
    }

    fn inspect(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
    ) -> Option<Result<Vec<DocumentReport>, SourceError>> {
        let url = url_of(&collection);
        Some(mirror::inspect(docs, &url, collection.received_json).map(|r| vec![r]))
    }

    fn follows_its_records(&self) -> bool {
        true
    }

    fn expected_state(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
        visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
    ) -> Result<Expected, SourceError> {
        let url = url_of(&collection);
        let arc = mirror::expected_state(docs, &url, collection.received_json, visit)?;
        Ok(Expected {
            walked: arc.walked,
            skipped: arc.skipped.into_iter().collect(),
        })
    }
}

/// What the sitemap says of a page, as kept beside its version.
impl PageRecord {
    pub(crate) fn of(page: &Page, sitemap_url: &str, document_url: &str) -> PageRecord {
        PageRecord {
            sitemap_url: sitemap_url.to_string(),
            document_url: document_url.to_string(),
            ai_indexable: page.ai_indexable,
            ai_summary: page.ai_summary.clone(),
            ai_tags_json: page
                .ai_tags
                .as_ref()
                .map(|t| serde_json::to_string(t).expect("serialisable")),
            ai_checksum: page.ai_checksum.clone(),
            ai_snapshot_json: page.ai_snapshot.clone(),
            crawl_priority: page.crawl_priority,
            robots_directive: page.robots_directive.clone(),
        }
    }
}
