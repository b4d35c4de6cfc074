//! The source formats, each behind [`Format`]: what the commands (`commands::baseline`,
//! `commands::incremental`, `audit`) ask of a format, and one folder per format holding
//! its reader and its adapter.
//!
//! The engine (the rest of `sync/`: opening the mirror and its runs, discovery, the plan,
//! transfers, verification, the writer, sync points, tombstones, the audit's comparison and
//! local fixity) names no format: discovery tells each collection's [`SourceKind`], [`of`]
//! gives its format, and what a format's walk lists arrives in one shape
//! (`engine::expected`). A format's folder holds its reader (`read/`: bytes in, typed entries and
//! errors with line numbers out; no network, no catalog) and its adapter, which turns what
//! the reader gives into the mirror's one model: resources, versions and their objects
//! (`store::rows`), and a side table for what only the format knows, keyed by version id
//! (`scp_versions`, `arc_versions`).
//!
//! The Sitemap protocol is the exception that proves the layering: its reader (`crate::rs`:
//! Sitemap and ResourceSync documents, digests, W3C datetimes, dump packages) is shared by the
//! engine (discovery opens every Sitemap through it, whatever it turns out to be; fixity and
//! the plan compare digests), so it sits below the engine rather than in `resourcesync/`.
//!
//! ## Adding a format
//! 1. A folder `src/formats/<format>/` with `read/` (the reader, with unit tests against
//!    real documents) and a unit struct implementing [`Format`]: `baseline` reads the current
//!    state the source lists into a `engine::snapshot::Snapshot` and a `engine::listing::Listing`,
//!    plans it, and hands it to `engine::snapshot::take` (the engine fetches, verifies, decides
//!    with `engine::decide`, writes, tombstones and records the sync point; the format adds only
//!    its side rows, keyed by version id, and its documents' records as `Hooks`); `plan` prints
//!    the dry run (`engine::snapshot::print_plan`); `incremental` reads what changed since the
//!    sync point, says what becomes of each change before any transfer
//!    (`engine::changes::Disposal`: fetch, tombstone, or an event only), and hands the changes
//!    (each a `engine::changes::Item`) to `engine::changes::Changes`, which fetches, decides,
//!    writes the versions, tombstones and change events, and says what the sync point is made
//!    of; the format then records its sync point and documents. `plan_changes` prints what
//!    would change; `expected_state` streams what the source lists now for
//!    `audit` (or `audit`, to compare by a rule of its own). The three folders here are the
//!    models: `arc/` is the smallest.
//! 2. A [`SourceKind`] variant, told apart by discovery (`engine::discover`: a namespace, a
//!    content type, JSON), and its arm in [`of`] and [`by_format`]'s order. Nothing else
//!    changes: the commands, local fixity, the feed, tombstones and the reading of the mirror
//!    already treat every version alike.

pub mod arc;
pub mod iiif;
pub mod oai;
mod paged;
pub mod resourcesync;
pub mod scp;

use crate::engine::context::RunContext;
use crate::engine::discover::{Collection, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::expected::{Item, Walked};
use crate::error::{Error, SourceError};
use crate::report::Summary;
use crate::settings;
use crate::store::{Catalog, StoreError};
use url::Url;

/// What the commands ask of a source format.
pub trait Format: Sync {
    fn kind(&self) -> SourceKind;

    /// `baseline`: take the current state of `collections` (every collection of this format
    /// discovery found for the source) into the mirror, in the run `ctx` records.
    fn baseline(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Baseline,
        collections: Vec<Collection>,
    ) -> Result<(), Error>;

    /// `baseline --dry-run`: print what `baseline` would do (`+ * ? = - !`), writing nothing;
    /// `catalog` is the mirror's, read-only, when it has one. `Ok(true)`: the plan is complete
    /// (every list or collection could be read).
    fn plan(
        &self,
        docs: &Documents<'_>,
        s: &settings::Baseline,
        source_url: &str,
        collections: Vec<Collection>,
        catalog: Option<&Catalog>,
        summary: &mut Summary,
    ) -> Result<bool, Error>;

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
    pub findings: Vec<crate::audit::finding::Finding>,
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

/// The formats that only read ([`crate::engine::reader::Reader`]), each registered once.
pub(crate) fn readers() -> [crate::engine::reader::Registration; 2] {
    [oai::registration(), iiif::registration()]
}

/// The format of a kind of source.
pub(crate) fn of(kind: SourceKind) -> &'static dyn Format {
    match kind {
        SourceKind::ResourceSync => &resourcesync::ResourceSync,
        SourceKind::Scp => &scp::Scp,
        SourceKind::Arc => &arc::Arc,
        SourceKind::Oai | SourceKind::Iiif => paged::format(kind),
    }
}

/// Discovery's collections by format, in a fixed order (ResourceSync, SCP, ARC), each format
/// once.
pub(crate) fn by_format(
    collections: Vec<Collection>,
) -> Vec<(&'static dyn Format, Vec<Collection>)> {
    let mut out: Vec<(SourceKind, Vec<Collection>)> = Vec::new();
    for c in collections {
        match out.iter_mut().find(|(k, _)| *k == c.kind) {
            Some((_, v)) => v.push(c),
            None => out.push((c.kind, vec![c])),
        }
    }
    out.sort_by_key(|(k, _)| order(*k));
    out.into_iter().map(|(k, v)| (of(k), v)).collect()
}

fn order(kind: SourceKind) -> u8 {
    match kind {
        SourceKind::ResourceSync => 0,
        SourceKind::Scp => 1,
        SourceKind::Arc => 2,
        SourceKind::Oai => 3,
        SourceKind::Iiif => 4,
    }
}

/// The URL of a collection of another protocol than ResourceSync (its id).
pub(crate) fn url_of(c: &Collection) -> Url {
    Url::parse(&c.id).expect("collection ids of SCP and ARC are URLs")
}
