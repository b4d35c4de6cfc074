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

use crate::engine::discover::{Collection, SourceKind};
use url::Url;

pub use crate::engine::format::{Expected, Format, Formats, OwnAudit};

/// Every format rsmirror reads, as the commands hand them down to the engine and the audit
/// (which sit below the formats and name none).
pub(crate) fn all() -> Formats {
    Formats {
        of,
        readers: readers(),
    }
}

/// The formats that only read ([`crate::engine::reader::Reader`]), each registered once.
pub(crate) fn readers() -> Vec<crate::engine::reader::Registration> {
    vec![oai::registration(), iiif::registration()]
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
