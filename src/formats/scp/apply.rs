//! Applying one staged SCP collection: the collection reader reads it, and the engine applies
//! its pages whole ([`crate::engine::whole`]): each page is a resource like any other
//! (`store::scp_catalog`), each new state a `versions` row whose object, in `objects/`, is the
//! page JSON exactly as published, and nothing is committed before [`CollectionReader::finish`]
//! said the whole file is good (limits, every line, the checksum). The collection record and
//! the section's new position commit in the same transaction. A collection rejected at any
//! line leaves nothing behind.
//!
//! The page rule (SCP 0.1, "Delta Application", MUST) is `engine::decide`'s for a stamped
//! state: a page not in the mirror (or tombstoned) is created; a page the mirror has is
//! replaced only when the collection's `modified` is newer; equal or older keeps the local
//! page. Snapshots follow the same rule (a snapshot cannot know what a later delta brought).
//! Deletions are known only from a snapshot (SCP 0.1: deltas carry no delete signal): a live
//! page absent from a newer snapshot is gone, unless a collection listed after that snapshot
//! brought it (`Whole::gone`). Whether gone pages are tombstoned or only reported is the
//! caller's [`GonePolicy`].
//!
//! What this module adds to the engine is SCP's own: the collection must be what the sitemap
//! announced, its record (`scp_collections`), each page version's line, title and language
//! (`scp_versions`), and the section's position.

pub use crate::engine::whole::GonePolicy;
use crate::engine::whole::{Counts, Inline, Recent, Target, Whole, WholeError};
use crate::formats::scp::fetch::StagedCollection;
use crate::formats::scp::read::sitemap::{CollectionEntry, EntryKind};
use crate::formats::scp::read::{
    CollectionMeta, CollectionReader, CollectionSummary, CollectionType, Limits, ScpError,
};
use crate::progress::Progress;
use crate::store::scp_catalog::{self, CollectionVerdict, NewCollection, SectionRecord};
use crate::store::writer::LastRows;
use crate::store::{Catalog, ObjectStore, StoreError};
use jiff::Timestamp;
use std::fs::File;
use std::path::Path;

/// The position a collection listed as generated at `generated` moves its section to: that
/// time, but never past now (a collection dated in the future would make every later one look
/// applied already: ResourceSync and ARC times are held the same way, `engine::sync_point`).
pub(crate) fn position(generated: Timestamp) -> Timestamp {
    crate::engine::sync_point::bounded(generated, Timestamp::now(), "").0
}

/// One collection to apply.
pub struct Applying<'a> {
    pub source_id: i64,
    pub run_id: i64,
    /// The sitemap's entry for it.
    pub entry: &'a CollectionEntry,
    pub staged: &'a StagedCollection,
    /// The section's position, updated in the same transaction.
    pub section: &'a mut SectionRecord,
    pub gone: GonePolicy,
    pub limits: Limits,
    /// Where the page objects go, and the folder their new files are made in.
    pub objects: &'a ObjectStore,
    pub staging: &'a Path,
    /// Record each page change as a change event (incremental runs, for the feed).
    pub events: bool,
    /// Where page URLs may point (the sitemap's host, `--allow-host`): a page elsewhere is
    /// refused, as a Sitemap entry outside its scope is.
    pub scope: &'a crate::model::Scope,
    /// The pages the mirror takes (`--include`/`--exclude`): one it leaves out is not applied,
    /// and one of the mirror's it leaves out is never gone.
    pub filter: &'a crate::model::Filter,
}

/// What applying a collection did.
#[derive(Debug)]
pub struct Applied {
    /// `scp_collections.id`.
    pub collection_row: i64,
    pub summary: CollectionSummary,
    /// What the engine did with its pages.
    pub pages: Counts,
}

/// Why a collection was not applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The reader rejected the file (a limit, a line, the checksum).
    #[error("rejected: {0}")]
    Rejected(ScpError),
    /// The file is not the collection the sitemap announced.
    #[error("rejected: {0}")]
    NotAsListed(String),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("staged file: {0}")]
    Io(#[from] std::io::Error),
    /// Writing the page objects, or making them durable, failed.
    #[error("page objects: {0}")]
    Objects(std::io::Error),
}

impl From<WholeError> for ApplyError {
    fn from(e: WholeError) -> Self {
        match e {
            WholeError::Store(e) => ApplyError::Store(e),
            WholeError::Objects(e) => ApplyError::Objects(e),
        }
    }
}

/// Read, verify and commit one staged collection. On any error nothing is committed.
pub(crate) fn apply(
    catalog: &mut Catalog,
    a: Applying<'_>,
    progress: &Progress,
) -> Result<Applied, ApplyError> {
    let file = File::open(&a.staged.path)?;
    let mut reader = CollectionReader::open_with_len(file, a.staged.bytes, &a.limits)
        .map_err(ApplyError::Rejected)?;
    let meta = reader.meta().clone();
    check_as_listed(&meta, a.entry)?;
    let collection = scp_catalog::section_collection_of(catalog, a.source_id, &a.entry.section)?;
    let target = Target {
        collection: &collection,
        qualifier: &a.entry.section,
        document: a.entry.url.as_str(),
        listed: a.entry.generated,
        scope: a.scope,
        filter: a.filter,
        events: a.events,
    };
    let mut recent = Recent::default();
    let mut whole = Whole::write(
        (catalog, a.run_id),
        (a.objects, a.staging),
        target,
        &mut recent,
    )?;
    let new = new_collection(&a, &meta, &reader);
    let row = whole
        .writer()
        .expect("applied, not planned")
        .now(|tx| scp_catalog::insert_collection(tx, &new))?;
    while let Some(page) = reader.next_page().map_err(ApplyError::Rejected)? {
        progress.item(0);
        let side =
            scp_catalog::page_rows(row, Some(page.line), Some(page.title), Some(page.language));
        whole.item(Inline {
            url: page.url,
            modified: page.modified,
            bytes: page.json,
            line: page.line,
            side: Some(side),
        })?;
    }
    // SCP 0.1 "Checksum Verification": only now may anything read from the file be used.
    let summary = reader.finish().map_err(ApplyError::Rejected)?;
    let is_snapshot = meta.kind == CollectionType::Snapshot;
    if is_snapshot {
        whole.gone(a.gone, || {
            Some(scp_catalog::page_rows(row, None, None, None))
        })?;
    }
    let (source_id, run_id) = (a.source_id, a.run_id);
    let n = whole.counts();
    // A snapshot whose gone pages were only reported (no --delete, or more than --max-delete)
    // is not yet the state the section rests on: its validators are forgotten and the section
    // keeps its older snapshot, so the next run reads it in full again and finds them gone
    // again (a 304 would skip the comparison), and `incremental` takes it as the newer
    // snapshot that replaces the state (SCP 0.1: "Deletion Detection").
    let gone_pending = is_snapshot && !n.gone.is_empty() && n.deleted == 0;
    let mut moved = a.section.clone();
    move_section(
        &mut moved,
        a.entry.generated,
        (is_snapshot && !gone_pending).then_some(row),
    );
    let verdict = verdict(&summary);
    let last: LastRows<'_> = Box::new(|tx| {
        scp_catalog::complete_collection(tx, row, &verdict)?;
        if gone_pending {
            scp_catalog::forget_validators(tx, row)?;
        }
        scp_catalog::set_section(tx, source_id, run_id, &moved)
    });
    let (pages, _) = whole.commit(Some(last))?;
    *a.section = moved;
    Ok(Applied {
        collection_row: row,
        summary,
        pages,
    })
}

/// The sitemap files a collection under a section and a type; a file that says otherwise
/// would put pages (and, for a snapshot, deletions) in the wrong place.
fn check_as_listed(meta: &CollectionMeta, entry: &CollectionEntry) -> Result<(), ApplyError> {
    let listed_kind = match entry.kind {
        EntryKind::Snapshot => CollectionType::Snapshot,
        EntryKind::Delta { .. } => CollectionType::Delta,
    };
    if meta.section != entry.section {
        return Err(ApplyError::NotAsListed(format!(
            "line 1: section {:?}, but the sitemap (line {}) lists it under section {:?}",
            meta.section, entry.line, entry.section
        )));
    }
    if meta.kind != listed_kind {
        return Err(ApplyError::NotAsListed(format!(
            "line 1: type {:?}, but the sitemap (line {}) lists it as a {}",
            meta.kind.name(),
            entry.line,
            listed_kind.name()
        )));
    }
    Ok(())
}

fn new_collection<'a>(
    a: &'a Applying<'_>,
    meta: &'a CollectionMeta,
    reader: &CollectionReader<File>,
) -> NewCollection<'a> {
    NewCollection {
        source_id: a.source_id,
        run_id: a.run_id,
        url: a.entry.url.as_str(),
        fetched_from: a.staged.final_url.as_str(),
        section: &meta.section,
        kind: meta.kind.name(),
        collection_id: &meta.id,
        generated: meta.generated,
        since: meta.since,
        listed_generated: a.entry.generated,
        version: meta.version.to_string(),
        compression: reader.compression().name(),
        checksum: meta.checksum.as_deref(),
        listed_pages: a.entry.pages,
        listed_size_bytes: a.entry.size_bytes,
        validators: &a.staged.validators,
    }
}

fn verdict(summary: &CollectionSummary) -> CollectionVerdict<'_> {
    CollectionVerdict {
        checksum_status: summary.checksum.name(),
        sha256_hex: &summary.sha256_hex,
        compressed_bytes: summary.compressed_bytes,
        decompressed_bytes: summary.decompressed_bytes,
        line_count: summary.lines,
        page_count: summary.pages,
        pages_skipped: summary.pages_skipped,
        warning_count: summary.warnings.len() as u64,
    }
}

/// The section's new position once a collection listed at `generated` is applied; `snapshot`:
/// the snapshot (`scp_collections.id`) the section now rests on.
fn move_section(section: &mut SectionRecord, generated: Timestamp, snapshot: Option<i64>) {
    let listed_generated = position(generated);
    if let Some(row) = snapshot {
        section.snapshot_id = Some(row);
        section.snapshot_generated = Some(listed_generated);
    }
    section.applied_through = Some(
        section
            .applied_through
            .map_or(listed_generated, |t| t.max(listed_generated)),
    );
}
