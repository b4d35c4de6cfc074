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
//! The smallest way is a reader (`engine::reader::Reader`: OAI-PMH and IIIF Change Discovery
//! are the models): bytes of the documents the engine fetched in, resources and their bytes'
//! whereabouts out, and a `Registration` in [`readers`]; the engine does the rest for every
//! command. A format whose sources list whole collections or publish change lists implements
//! [`Format`] with its modes:
//! 1. A folder `src/formats/<format>/` with `read/` (the reader, with unit tests against
//!    real documents) and a unit struct implementing [`Format`]. **Listing mode**
//!    (`Format::lists`, `engine::snapshot::Lists`): read each collection's current state into
//!    a `engine::snapshot::Snapshot` and a `engine::listing::Listing`, plan it, and return it
//!    as a `ToTake` with the format's side rows and documents' rows as `Hooks`; the engine
//!    (`engine::snapshot::{baseline, dry_run}`) opens the writer, fetches, verifies, decides
//!    with `engine::decide`, writes, counts, tombstones and records the sync point.
//!    **Changes mode** (`engine::changes::ChangeSet`): read what changed since the sync point
//!    and say what becomes of each change before any transfer (`engine::changes::Disposal`:
//!    fetch, tombstone, or an event only) and what sync point the applied changes justify;
//!    `engine::changes::follow` applies them. **Whole mode** (`engine::whole::Whole`): a
//!    collection applied at once, committed only when the whole file verified (SCP).
//!    `plan_changes` prints what would change; `expected_state` streams what the source lists
//!    now for `audit` (or `audit`, to compare by a rule of its own). `arc/` is the smallest.
//! 2. A [`SourceKind`] variant, told apart by discovery (`engine::discover`: a namespace, a
//!    content type, JSON), and its arm in [`of`] and [`by_format`]'s order. Nothing else
//!    changes: the commands, local fixity, the feed, tombstones and the reading of the mirror
//!    already treat every version alike.

pub mod arc;
pub mod iiif;
pub mod memento;
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
