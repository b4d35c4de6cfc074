//! The Site Content Protocol (SCP 0.1) as a [`Format`]: `mirror` chooses the
//! collections to take and reports, `fetch` gets their bytes (conditional GETs), `apply` reads,
//! verifies and commits one collection (pages as resources, their JSON as objects, what only
//! SCP knows in `scp_versions`), `audit` compares the mirror with the newest snapshots. The
//! reader is `crate::formats::scp::read`.

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
