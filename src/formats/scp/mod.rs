//! The Site Content Protocol (SCP 0.1) as a [`Format`]: `mirror` chooses the
//! collections to take and reports, `fetch` gets their bytes (conditional GETs), `apply` reads
//! one collection and hands its pages to the engine, which applies them whole
//! (`engine::whole`: pages as resources, their JSON as objects) beside what only SCP knows
//! (`scp_collections`, `scp_versions`, the section's position), `audit` compares the mirror
//! with the newest snapshots. The reader is `crate::formats::scp::read`.

pub mod apply;
pub mod audit;
pub mod fetch;
pub mod mirror;
pub mod read;

use super::{url_of, Expected, Format, OwnAudit};
use crate::engine::context::RunContext;
use crate::engine::discover::{Collection, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::expected::Item;
use crate::error::{Error, SourceError};
use crate::report::Summary;
use crate::settings;
use crate::store::{Catalog, StoreError};

pub struct Scp;

impl Format for Scp {
    fn inspect(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
    ) -> Option<Result<Vec<crate::report::DocumentReport>, SourceError>> {
        let url = url_of(&collection);
        Some(fetch::sitemap_to_take(docs, &url, collection.prefetched).map(|f| inspect_sitemap(&f)))
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Scp
    }

    fn baseline(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Baseline,
        collections: Vec<Collection>,
    ) -> Result<(), Error> {
        for c in collections {
            mirror::baseline(ctx, s, &url_of(&c), c.prefetched)?;
        }
        Ok(())
    }

    fn plan(
        &self,
        docs: &Documents<'_>,
        s: &settings::Baseline,
        source_url: &str,
        collections: Vec<Collection>,
        catalog: Option<&Catalog>,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        let failed = summary.failed;
        for c in collections {
            mirror::dry_run(
                docs,
                s,
                source_url,
                &url_of(&c),
                c.prefetched,
                catalog,
                summary,
            )?;
        }
        Ok(summary.failed == failed)
    }

    fn incremental(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
    ) -> Result<(), Error> {
        for c in collections {
            mirror::incremental(ctx, s, &url_of(&c))?;
        }
        Ok(())
    }

    fn plan_changes(
        &self,
        docs: &Documents<'_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
        catalog: &Catalog,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        let failed = summary.failed;
        for c in collections {
            mirror::plan_changes(docs, s, &url_of(&c), catalog, summary)?;
        }
        Ok(summary.failed == failed)
    }

    fn follows_its_records(&self) -> bool {
        true
    }

    /// SCP is compared by its own rule ([`Format::audit`]); a collection found by discovery
    /// during another source's audit is not walked.
    fn expected_state(
        &self,
        _docs: &Documents<'_>,
        collection: Collection,
        _visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
    ) -> Result<Expected, SourceError> {
        Err(SourceError::Unusable {
            url: collection.id,
            message: "an SCP sitemap: audit it as a source of its own (rsmirror audit SOURCE)"
                .into(),
        })
    }

    fn audit(
        &self,
        s: &settings::Audit,
        catalog: &Catalog,
        source_id: i64,
    ) -> Result<Option<OwnAudit>, StoreError> {
        audit::audit(s, catalog, source_id).map(Some)
    }
}

/// `inspect` of an SCP sitemap: the sitemap (its sections), then each collection it lists, a
/// snapshot or a delta, with its section, `generated` (as `at`), `since` (as `from`) and the
/// pages it advertises. No collection is fetched.
fn inspect_sitemap(f: &fetch::FetchedSitemap) -> Vec<crate::report::DocumentReport> {
    use crate::report::DocumentReport;
    use read::sitemap::EntryKind;
    let sm = &f.sitemap;
    let sections: Vec<String> = sm.sections.iter().map(|s| s.name.clone()).collect();
    let mut out = vec![DocumentReport {
        channels: Vec::new(),
        url: f.url.to_string(),
        kind: format!("scp sitemap (sections: {})", sections.join(", ")),
        syntax: "scp",
        at: None,
        completed: None,
        from: None,
        until: None,
        entries: sm.collections.len() as u64,
        digests: Vec::new(),
        up: None,
        warnings: sm.warnings.iter().map(|w| w.to_string()).collect(),
    }];
    for c in &sm.collections {
        let kind = match c.kind {
            EntryKind::Snapshot => "snapshot",
            EntryKind::Delta { .. } => "delta",
        };
        out.push(DocumentReport {
            channels: Vec::new(),
            url: c.url.to_string(),
            kind: format!("scp {kind} of section {}", c.section),
            syntax: "scp",
            at: Some(c.generated.to_string()),
            completed: None,
            from: c.since().map(|t| t.to_string()),
            until: None,
            entries: c.pages.unwrap_or(0),
            digests: c
                .checksum
                .iter()
                .map(|x| x.split(':').next().unwrap_or("").to_string())
                .collect(),
            up: Some(f.url.to_string()),
            warnings: Vec::new(),
        });
    }
    out
}
