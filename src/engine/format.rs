//! What the commands and the audit ask of a source format ([`Format`]), and the table of the
//! formats a run can read ([`Formats`]). The formats implement it from the floor above; the
//! commands hand the table down, so nothing below the formats names one.

use crate::engine::context::RunContext;
use crate::engine::discover::{Collection, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::expected::{Item, Walked};
use crate::engine::reader::Registration;
use crate::engine::snapshot;
pub use crate::engine::snapshot::{Lists, Mirror, ToTake};
use crate::error::{Error, SourceError};
use crate::report::Summary;
use crate::settings;
use crate::store::{Catalog, StoreError};

/// The formats a run can read: the one for each kind of collection discovery tells, and the
/// readers discovery recognises documents by.
pub struct Formats {
    pub of: fn(SourceKind) -> &'static dyn Format,
    pub readers: Vec<Registration>,
}

/// What the commands ask of a source format.
pub trait Format: Sync {
    fn kind(&self) -> SourceKind;

    /// The format's listing mode: a format whose sources list the current state of a
    /// collection (a Resource List, an ARC sitemap) only reads and plans it ([`Lists`]); the
    /// engine drives `baseline` and its dry run for it. `None`: the format takes its
    /// collections by [`Format::baseline`] and [`Format::plan`] of its own.
    fn lists(&self) -> Option<&dyn Lists> {
        None
    }

    /// `baseline`: take the current state of `collections` (every collection of this format
    /// discovery found for the source) into the mirror, in the run `ctx` records. For a format
    /// that [`lists`](Format::lists), the engine's: every snapshot read and planned, then
    /// taken through one writer (`engine::snapshot::baseline`).
    fn baseline(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Baseline,
        collections: Vec<Collection>,
    ) -> Result<(), Error> {
        snapshot::baseline(ctx, s, listing_mode(self), collections)
    }

    /// `baseline --dry-run`: print what `baseline` would do (`+ * ? = - !`), writing nothing;
    /// `catalog` is the mirror's, read-only, when it has one. `Ok(true)`: the plan is complete
    /// (every list or collection could be read). For a format that
    /// [`lists`](Format::lists), the engine's (`engine::snapshot::dry_run`).
    fn plan(
        &self,
        docs: &Documents<'_>,
        s: &settings::Baseline,
        source_url: &str,
        collections: Vec<Collection>,
        catalog: Option<&Catalog>,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        let _ = source_url;
        snapshot::dry_run(docs, s, listing_mode(self), collections, catalog, summary)
    }

    /// `incremental`: apply what changed since the sync point of each of `collections` (all of
    /// this format), in the run `ctx` records.
    fn incremental(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
    ) -> Result<(), Error>;

    /// `incremental --dry-run`: print what `incremental` would do, writing nothing. `Ok(true)`:
    /// the plan is complete.
    fn plan_changes(
        &self,
        docs: &Documents<'_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
        catalog: &Catalog,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        let _ = (docs, s, catalog, summary);
        let which = collections.first().map(|c| c.id.as_str()).unwrap_or("");
        Err(settings::UsageError(format!(
            "--dry-run is not supported for incremental runs of {} sources yet ({which})",
            self.kind().name()
        ))
        .into())
    }

    /// `audit`: stream what the source lists now for `collection` (its expected state) to
    /// `visit`; the engine compares each item with the mirror as it comes, in bounded memory.
    fn expected_state(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
        visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
    ) -> Result<Expected, SourceError>;

    /// `audit` of a source of this format by a rule of its own, instead of the expected-state
    /// comparison (`None`: the engine compares [`Format::expected_state`]).
    fn audit(
        &self,
        s: &settings::Audit,
        catalog: &Catalog,
        source_id: i64,
    ) -> Result<Option<OwnAudit>, StoreError> {
        let _ = (s, catalog, source_id);
        Ok(None)
    }

    /// `inspect`: the documents of `collection` as this format reads them, fetching no
    /// resource and writing nothing (`None`: the engine walks them as Sitemap documents).
    fn inspect(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
    ) -> Option<Result<Vec<crate::report::DocumentReport>, SourceError>> {
        let _ = (docs, collection);
        None
    }

    /// True when the mirror's records of a source of this format name everything
    /// `incremental` follows (an SCP sitemap and its sections, an ARC sitemap), so that the
    /// source is not discovered again.
    fn follows_its_records(&self) -> bool {
        false
    }
}

/// The listing mode of a format that has one; a format without one overrides
/// [`Format::baseline`] and [`Format::plan`], so this is never asked of it.
fn listing_mode<F: Format + ?Sized>(format: &F) -> &dyn Lists {
    match format.lists() {
        Some(lists) => lists,
        None => panic!(
            "the {} format neither lists its collections (Format::lists) nor takes them itself \
             (Format::baseline, Format::plan)",
            format.kind().name()
        ),
    }
}

/// A collection's expected state, as walked for `audit`.
pub struct Expected {
    pub walked: Walked,
    /// URIs the format leaves out on purpose (an ARC page that asks not to be archived):
    /// neither missing nor extra.
    pub skipped: Vec<String>,
}

/// What a format's own audit found ([`Format::audit`]).
#[derive(Debug, Default)]
pub struct OwnAudit {
    /// Every finding (`=` ones included), ordered by subject.
    pub findings: Vec<crate::model::finding::Finding>,
    /// Parts that could not be read (URL, why): nothing they list was compared, so the audit
    /// cannot call the mirror complete (exit 4, like failed parts of a Resource List).
    pub failed_parts: Vec<(String, String)>,
    pub warnings: Vec<String>,
    /// Set when the source could not be had at all: nothing was compared with it.
    pub source_error: Option<SourceError>,
    /// Items the source lists now.
    pub listed: u64,
    /// Live items in the mirror.
    pub pages: u64,
}
