//! The formats that only read (`oai/`, `iiif/`), as the commands see them: each command is
//! the engine's run of the format's reader (`engine::paged`); nothing here reads or writes.

use crate::engine::context::RunContext;
use crate::engine::discover::{Collection, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::expected::Item;
use crate::engine::paged;
use crate::error::{Error, SourceError};
use crate::formats::{Expected, Format};
use crate::report::{DocumentReport, Summary};
use crate::settings;
use crate::store::Catalog;

/// A format that only reads.
pub(crate) struct Paged(SourceKind);

static OAI: Paged = Paged(SourceKind::Oai);
static IIIF: Paged = Paged(SourceKind::Iiif);

/// The [`Format`] of a kind of source whose format only reads.
pub(crate) fn format(kind: SourceKind) -> &'static dyn Format {
    match kind {
        SourceKind::Iiif => &IIIF,
        _ => &OAI,
    }
}

impl Format for Paged {
    fn kind(&self) -> SourceKind {
        self.0
    }

    fn baseline(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Baseline,
        collections: Vec<Collection>,
    ) -> Result<(), Error> {
        paged::baseline(ctx, self.0, s, collections)
    }

    fn plan(
        &self,
        docs: &Documents<'_>,
        _s: &settings::Baseline,
        _source_url: &str,
        collections: Vec<Collection>,
        catalog: Option<&Catalog>,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        paged::dry_run(docs, self.0, collections, catalog, false, summary)?;
        Ok(true)
    }

    fn incremental(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
    ) -> Result<(), Error> {
        paged::incremental(ctx, self.0, s, collections)
    }

    fn plan_changes(
        &self,
        docs: &Documents<'_>,
        _s: &settings::Incremental,
        collections: Vec<Collection>,
        catalog: &Catalog,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        paged::dry_run(docs, self.0, collections, Some(catalog), true, summary)?;
        Ok(true)
    }

    fn expected_state(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
        visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
    ) -> Result<Expected, SourceError> {
        Ok(Expected {
            walked: paged::expected_state(docs, self.0, collection, visit)?,
            skipped: Vec::new(),
        })
    }

    fn inspect(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
    ) -> Option<Result<Vec<DocumentReport>, SourceError>> {
        Some(paged::inspect(docs, self.0, collection))
    }

    /// The mirror's sync points name the collections (an OAI-PMH base URL with its prefix).
    fn follows_its_records(&self) -> bool {
        true
    }
}
