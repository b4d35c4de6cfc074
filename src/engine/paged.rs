//! The engine's run of a format that only reads ([`Reader`]): it fetches every document the
//! reader asks for, applies what each publishes, stores the reader's checkpoint with it, and
//! moves the sync point the reader justifies.

use crate::engine::context::RunContext;
use crate::engine::discover::{Collection, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::expected::Item;
use crate::error::{Error, SourceError};
use crate::formats::reader::Reader;
use crate::formats::{Expected, Format};
use crate::report::Summary;
use crate::settings;
use crate::store::Catalog;

/// A format that only reads, as the commands see it.
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
        let _ = (ctx, s, collections);
        todo!()
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
        let _ = (docs, s, source_url, collections, catalog, summary);
        todo!()
    }

    fn incremental(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
    ) -> Result<(), Error> {
        let _ = (ctx, s, collections);
        todo!()
    }

    fn expected_state(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
        visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
    ) -> Result<Expected, SourceError> {
        let _ = (docs, collection, visit);
        let _: Option<Box<dyn Reader>> = None;
        todo!()
    }
}
