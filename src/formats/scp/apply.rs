//! Applying one staged SCP collection to the mirror: read it with the collection reader,
//! decide page by page against the section's current state, and commit the pages, the
//! collection record and the section's new position in ONE transaction that commits only
//! after [`CollectionReader::finish`] said the whole file is good (limits, every line, the
//! checksum). A page is a resource like any other (`store::scp_catalog`): each new state is a
//! `versions` row whose object, in `objects/`, is the page JSON exactly as published, made
//! durable before the transaction commits. A collection rejected at any line leaves nothing
//! behind: the transaction is rolled back and the objects it wrote that the mirror did not
//! already hold are removed.
//!
//! The page rule (SCP 0.1, "Delta Application", MUST): a page not in the mirror (or
//! tombstoned) is created; a page the mirror has is replaced only when the collection's
//! `modified` is newer; equal or older keeps the local page. Snapshots follow the same rule
//! (a snapshot cannot know what a later delta brought). Deletions are known only from a
//! snapshot (SCP 0.1: deltas carry no delete signal): a live page absent from a newer snapshot
//! is gone — unless a collection listed after that snapshot brought it. Whether gone pages
//! are tombstoned or only reported is the caller's [`GonePolicy`].
//!
//! It leaves fetching to `scp_fetch`, choosing collections and reporting to `scp_mirror`,
//! and SQL to `store::scp_catalog`.

use crate::engine::decide::{decide, Basis, Decision, Held};
use crate::formats::scp::fetch::StagedCollection;
use crate::formats::scp::read::sitemap::{CollectionEntry, EntryKind};
use crate::formats::scp::read::{
    CollectionMeta, CollectionReader, CollectionSummary, CollectionType, Limits, Page, ScpError,
};
use crate::model::Change;
use crate::progress::Progress;
use crate::store::catalog::{write, ChangeEventRecord};
use crate::store::new_file::NewFile;
use crate::store::scp_catalog::{
    self, CollectionTx, CollectionVerdict, NewCollection, NewPageVersion,
};
use crate::store::{Catalog, ObjectStore, StoreError};
use jiff::Timestamp;
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

/// A page's identity in memory: the first 128 bits of the SHA-256 of its URL (a million
/// pages collide with odds of about 1 in 10^26).
type Key = u128;

fn key(url: &str) -> Key {
    let d = Sha256::digest(url.as_bytes());
    u128::from_be_bytes(d[..16].try_into().expect("16 bytes"))
}

/// The start of a SHA-256: enough to tell two page JSONs apart in memory.
pub type Short = [u8; 16];

pub(crate) fn short(hex_digest: &str) -> Option<Short> {
    let mut out = [0u8; 16];
    hex::decode_to_slice(hex_digest.get(..32)?, &mut out).ok()?;
    Some(out)
}

/// The mirror's current state of one page, as the apply needs it.
#[derive(Debug, Clone)]
struct Local {
    resource_id: i64,
    /// The resource's URI is the page URL qualified by the section (another collection
    /// holds the plain URL).
    qualified: bool,
    /// None: tombstoned.
    modified: Option<Timestamp>,
    json: Option<Short>,
    /// Listed `generated` of the collection that brought the current version.
    brought_by: Option<Timestamp>,
    /// Listed in the collection being applied.
    seen: bool,
}

/// The current state of every page of one section, in memory (a few dozen bytes a page).
pub struct SectionPages {
    source_id: i64,
    section: String,
    /// The section's collection (`collections.name`) and its id.
    collection: String,
    collection_id: i64,
    map: HashMap<Key, Local>,
}

impl SectionPages {
    pub(crate) fn load(
        catalog: &Catalog,
        source_id: i64,
        section: &str,
    ) -> Result<SectionPages, StoreError> {
        let mut map = HashMap::new();
        let collection = scp_catalog::section_collection_of(catalog.conn(), source_id, section)?;
        let collection_id = write::collection_id(catalog.conn(), &collection)?;
        scp_catalog::section_pages(catalog.conn(), &collection, section, |p| {
            map.insert(
                key(&p.url),
                Local {
                    resource_id: p.resource_id,
                    qualified: p.qualified,
                    modified: p.modified,
                    json: p.sha256_hex.as_deref().and_then(short),
                    brought_by: p.brought_by_generated,
                    seen: false,
                },
            );
        })?;
        Ok(SectionPages {
            source_id,
            section: section.to_string(),
            collection,
            collection_id,
            map,
        })
    }
}

/// What a collection's page does to the mirror's (SCP 0.1, "Delta Application", MUST): the
/// one rule of `baseline`, `incremental` and their dry runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageChange {
    /// Not in the mirror, or tombstoned there.
    Create,
    /// Newer than the mirror's: replaces it.
    Update,
    /// The same `modified` as the mirror's: kept (`differs`: with other JSON).
    Same { differs: bool },
    /// Older than the mirror's: the mirror's is kept.
    OlderKept,
}

/// [`PageChange`] of a page (`modified`, start of the SHA-256 of its JSON) against the
/// mirror's state of it (`local`: its `modified`, None when tombstoned, and its JSON's digest):
/// what [`decide`] says of it.
pub(crate) fn page_change(
    local: Option<(Option<Timestamp>, Option<Short>)>,
    modified: Timestamp,
    json: Short,
) -> PageChange {
    let held = local.as_ref().map(|(lastmod, sha)| Held {
        sha256: sha.as_ref(),
        lastmod: *lastmod,
    });
    match decide(held, &json, Basis::Stamped { modified }) {
        Decision::Created => PageChange::Create,
        Decision::OlderKept => PageChange::OlderKept,
        Decision::Unchanged { differs } => PageChange::Same { differs },
        Decision::Updated | Decision::Touched | Decision::Repaired => PageChange::Update,
    }
}

/// SCP 0.1 "Deletion Detection": a page of the mirror is gone when a snapshot listed at
/// `listed` does not have it, it is live, and no collection listed after that snapshot
/// brought it.
pub(crate) fn gone_from_snapshot(
    modified: Option<Timestamp>,
    seen: bool,
    brought_by: Option<Timestamp>,
    listed: Timestamp,
) -> bool {
    modified.is_some() && !seen && brought_by.is_none_or(|b| b <= listed)
}

/// The position a collection listed as generated at `generated` moves its section to: that
/// time, but never past now (a collection dated in the future would make every later one look
/// applied already: ResourceSync and ARC times are held the same way, `engine::sync_point`).
pub(crate) fn position(generated: Timestamp) -> Timestamp {
    crate::engine::sync_point::bounded(generated, Timestamp::now(), "").0
}

/// What to do with live pages absent from a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GonePolicy {
    /// Report them; the mirror keeps them (baseline without `--delete`).
    Report,
    /// Tombstone them, unless there are more than `max` (then nothing is deleted).
    Tombstone { max: Option<u64> },
}

/// One collection to apply.
pub struct Applying<'a> {
    pub source_id: i64,
    pub run_id: i64,
    /// The sitemap's entry for it.
    pub entry: &'a CollectionEntry,
    pub staged: &'a StagedCollection,
    /// The section's position, updated in the same transaction.
    pub section: &'a mut scp_catalog::SectionRecord,
    pub gone: GonePolicy,
    pub limits: Limits,
    /// Where the page objects go, and the folder their new files are made in.
    pub objects: &'a ObjectStore,
    pub staging: &'a Path,
    /// Record each page change as a change event (incremental runs, for the feed).
    pub events: bool,
    /// Where page URLs may point (the sitemap's host, `--allow-host`): a page elsewhere is
    /// refused, as a Sitemap entry outside its scope is.
    pub scope: &'a crate::net::Scope,
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
    pub created: u64,
    pub updated: u64,
    /// Pages the mirror has with the same `modified`.
    pub unchanged: u64,
    /// Pages the mirror has with a newer `modified` (kept, SCP rule).
    pub older_kept: u64,
    /// Same `modified` as the mirror's but different JSON (kept, SCP rule).
    pub same_modified_differs: u64,
    /// Live pages absent from this snapshot (URLs, sorted).
    pub gone: Vec<String>,
    pub deleted: u64,
    /// More gone than `GonePolicy::Tombstone.max`: nothing was deleted.
    pub delete_refused: bool,
    /// Pages outside the scope: (URL, why) of the first hundred, never mirrored.
    pub refused: Vec<(String, String)>,
    /// How many there were.
    pub refused_count: u64,
    /// Pages the filter left out.
    pub excluded: u64,
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

/// Read, verify and commit one staged collection. On any error nothing is committed and
/// `pages` is reloaded from the catalog.
pub(crate) fn apply(
    catalog: &mut Catalog,
    pages: &mut SectionPages,
    a: Applying<'_>,
    progress: &Progress,
) -> Result<Applied, ApplyError> {
    let result = apply_inner(catalog, pages, a, progress);
    if result.is_err() {
        *pages = SectionPages::load(catalog, pages.source_id, &pages.section.clone())?;
    }
    // A collection's transaction is the bulk of an SCP run's writes: its log proven now.
    catalog.committed()?;
    result
}

fn apply_inner(
    catalog: &mut Catalog,
    pages: &mut SectionPages,
    mut a: Applying<'_>,
    progress: &Progress,
) -> Result<Applied, ApplyError> {
    let file = File::open(&a.staged.path)?;
    let mut reader = CollectionReader::open_with_len(file, a.staged.bytes, &a.limits)
        .map_err(ApplyError::Rejected)?;
    let meta = reader.meta().clone();
    check_as_listed(&meta, a.entry)?;
    debug_assert_eq!(pages.section, a.entry.section);
    for l in pages.map.values_mut() {
        l.seen = false;
    }
    std::thread::scope(|sc| {
        // Page objects are written by threads of their own while this one reads, hashes and
        // records: a file per page costs the kernel more than all the rest.
        let (send, receive) = crossbeam_channel::bounded(OBJECTS_IN_FLIGHT);
        let (objects, staging) = (a.objects, a.staging);
        let handles = (0..OBJECT_THREADS)
            .map(|_| {
                let receive = receive.clone();
                sc.spawn(move || write_objects(objects, staging, receive))
            })
            .collect();
        drop(receive);
        let mut writer = ObjectWriter {
            send: Some(send),
            handles,
            fresh: Vec::new(),
            placed: 0,
        };
        let result = (|| {
            let tx = CollectionTx::begin(catalog)?;
            let row = tx.insert_collection(&new_collection(&a, &meta, &reader))?;
            let mut n = Counts::default();
            let mut w = PageWriter {
                tx: &tx,
                a: &a,
                pages,
                row,
                objects: &mut writer,
            };
            while let Some(page) = reader.next_page().map_err(ApplyError::Rejected)? {
                progress.item(0);
                w.page(page, &mut n)?;
            }
            // SCP 0.1 "Checksum Verification": only now may anything read from the file be used.
            let summary = reader.finish().map_err(ApplyError::Rejected)?;
            let is_snapshot = meta.kind == CollectionType::Snapshot;
            if is_snapshot {
                w.gone(&mut n)?;
            }
            tx.complete_collection(row, &verdict(&summary))?;
            move_section(&tx, &mut a, row, is_snapshot, &n)?;
            writer.finish().map_err(ApplyError::Objects)?;
            if writer.placed > 0 {
                // The objects are durable before the catalog names them: new ones, and those
                // found in place, which an earlier run that died may have linked unsynced.
                a.objects.sync().map_err(ApplyError::Objects)?;
            }
            crate::store::kill::point("scp.before-commit");
            tx.commit()?;
            Ok(Applied {
                collection_row: row,
                summary,
                created: n.created,
                updated: n.updated,
                unchanged: n.unchanged,
                older_kept: n.older_kept,
                same_modified_differs: n.same_modified_differs,
                gone: n.gone,
                deleted: n.deleted,
                delete_refused: n.delete_refused,
                refused: std::mem::take(&mut n.refused),
                refused_count: n.refused_count,
                excluded: n.excluded,
            })
        })();
        if result.is_err() {
            // Whatever the writer got to: the objects this collection added go again.
            let _ = writer.finish();
            for sha in &writer.fresh {
                // Best effort: one left behind is a stray object for audit to report.
                let _ = std::fs::remove_file(a.objects.path_for(sha));
            }
        }
        result
    })
}

/// Page objects queued for the object threads at most (each a page's JSON, a few KB).
const OBJECTS_IN_FLIGHT: usize = 256;

/// Threads writing page objects. Two: on a 2-core machine a 1 GB snapshot of 2 KB pages was
/// held up by one (its file creations took more time than the reading, hashing and recording).
const OBJECT_THREADS: usize = 2;

/// What an object thread did: the objects the store did not hold before, how many objects it
/// put in place or found there, and the error that stopped it, if one did.
type Written = (Vec<String>, usize, Option<std::io::Error>);

/// The object thread: each (SHA-256 hex, page JSON) into the store (not yet durable).
fn write_objects(
    objects: &ObjectStore,
    staging: &Path,
    receive: crossbeam_channel::Receiver<(String, String)>,
) -> Written {
    let mut fresh = Vec::new();
    let mut placed = 0;
    for (sha, json) in receive {
        let written = NewFile::create(staging).and_then(|mut file| {
            file.write_all(json.as_bytes())?;
            objects.ingest_new_fresh(file, &sha)
        });
        match written {
            Ok(true) => fresh.push(sha),
            Ok(false) => {}
            Err(e) => return (fresh, placed, Some(e)),
        }
        placed += 1;
    }
    (fresh, placed, None)
}

/// The sending end of the object threads.
struct ObjectWriter<'scope> {
    send: Option<crossbeam_channel::Sender<(String, String)>>,
    handles: Vec<std::thread::ScopedJoinHandle<'scope, Written>>,
    /// Objects the store did not hold before (known once finished).
    fresh: Vec<String>,
    /// Objects put in place or found there already (known once finished).
    placed: usize,
}

impl ObjectWriter<'_> {
    fn write(&mut self, sha_hex: String, json: String) -> Result<(), ApplyError> {
        let sent = self.send.as_ref().map(|s| s.send((sha_hex, json)));
        match sent {
            Some(Ok(())) => Ok(()),
            // Every thread stopped at an error: `finish` has it.
            _ => self.finish().map_err(ApplyError::Objects),
        }
    }

    /// Wait for every object queued; the first error a thread met.
    fn finish(&mut self) -> std::io::Result<()> {
        self.send = None;
        let mut first = None;
        for handle in self.handles.drain(..) {
            let (fresh, placed, error) = handle.join().expect("the object threads do not panic");
            self.fresh.extend(fresh);
            self.placed += placed;
            first = first.or(error);
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
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

/// The section's new position, in the collection's transaction. A snapshot whose gone pages
/// were only reported (no --delete, or more than --max-delete) is not yet the state the
/// section rests on: its validators are forgotten and the section keeps its older snapshot,
/// so the next run reads it in full again and finds them gone again (a 304 would skip the
/// comparison), and `incremental` takes it as the newer snapshot that replaces the state
/// (SCP 0.1: "Deletion Detection").
fn move_section(
    tx: &CollectionTx<'_>,
    a: &mut Applying<'_>,
    row: i64,
    is_snapshot: bool,
    n: &Counts,
) -> Result<(), StoreError> {
    let listed_generated = position(a.entry.generated);
    let gone_pending = is_snapshot && !n.gone.is_empty() && n.deleted == 0;
    let section = &mut *a.section;
    if gone_pending {
        tx.forget_validators(row)?;
    } else if is_snapshot {
        section.snapshot_id = Some(row);
        section.snapshot_generated = Some(listed_generated);
    }
    section.applied_through = Some(
        section
            .applied_through
            .map_or(listed_generated, |t| t.max(listed_generated)),
    );
    tx.set_section(a.source_id, a.run_id, section)
}

/// Writes the pages of one collection: objects, versions, change events.
struct PageWriter<'x, 'a, 's> {
    tx: &'x CollectionTx<'x>,
    a: &'x Applying<'a>,
    pages: &'x mut SectionPages,
    /// `scp_collections.id` of the collection.
    row: i64,
    objects: &'x mut ObjectWriter<'s>,
}

impl PageWriter<'_, '_, '_> {
    /// One page of the collection, by SCP's rule.
    fn page(&mut self, page: Page, n: &mut Counts) -> Result<(), ApplyError> {
        if let Err(why) = self.a.scope.check(&page.url) {
            // Bounded like the reader's warnings: a collection of a million pages elsewhere
            // names the first ones and counts the rest.
            if n.refused.len() < REFUSED_NAMED {
                n.refused.push((
                    page.url.to_string(),
                    format!("{why} (line {} of {})", page.line, self.a.entry.url),
                ));
            }
            n.refused_count += 1;
            return Ok(());
        }
        if !self.a.filter.admits(page.url.as_str()) {
            n.excluded += 1;
            return Ok(());
        }
        let sha = Sha256::digest(page.json.as_bytes());
        let sha_short: Short = sha[..16].try_into().expect("16 bytes");
        let url = page.url.as_str();
        let k = key(url);
        let known = self
            .pages
            .map
            .get(&k)
            .map(|l| (l.resource_id, l.qualified, l.modified, l.json));
        let change = match page_change(known.map(|l| (l.2, l.3)), page.modified, sha_short) {
            PageChange::Create => Change::Created,
            PageChange::Update => Change::Updated,
            kept => {
                match kept {
                    PageChange::OlderKept => n.older_kept += 1,
                    _ => {
                        n.unchanged += 1;
                        if kept == (PageChange::Same { differs: true }) {
                            n.same_modified_differs += 1;
                        }
                    }
                }
                if let Some(l) = self.pages.map.get_mut(&k) {
                    l.seen = true;
                }
                return Ok(());
            }
        };
        let sha_hex = hex::encode(sha);
        let (resource_id, qualified) = match known {
            Some((id, qualified, ..)) => (id, qualified),
            None => self.tx.page_resource(
                url,
                &self.pages.section,
                self.pages.collection_id,
                self.a.run_id,
            )?,
        };
        let version_id = self.tx.insert_page_version(
            resource_id,
            &NewPageVersion {
                run_id: self.a.run_id,
                collection_row: self.row,
                change,
                modified: Some(page.modified),
                title: Some(&page.title),
                language: Some(&page.language),
                line: Some(page.line),
                object: Some((&sha_hex, page.json.len() as u64)),
            },
        )?;
        self.event(url, qualified, change, Some(page.modified), version_id)?;
        if change == Change::Created {
            n.created += 1;
        } else {
            n.updated += 1;
        }
        let state = Local {
            resource_id,
            qualified,
            modified: Some(page.modified),
            json: Some(sha_short),
            brought_by: Some(self.a.entry.generated),
            seen: true,
        };
        self.pages.map.insert(k, state);
        self.objects.write(sha_hex, page.json)
    }

    /// A change event for the feed (incremental runs).
    fn event(
        &self,
        url: &str,
        qualified: bool,
        change: crate::model::Change,
        time: Option<Timestamp>,
        version_id: i64,
    ) -> Result<(), StoreError> {
        if !self.a.events {
            return Ok(());
        }
        let uri = if qualified {
            scp_catalog::qualified_uri(url, &self.pages.section)
        } else {
            url.to_string()
        };
        self.tx.change_event(
            self.a.run_id,
            &ChangeEventRecord {
                collection: self.pages.collection.clone(),
                uri,
                change,
                event_time: time,
                document_url: self.a.entry.url.to_string(),
                outcome: crate::model::ChangeOutcome::Applied,
            },
            Some(version_id),
        )
    }

    /// SCP 0.1 "Deletion Detection": live, absent from this snapshot, and not brought by a
    /// collection listed after it; tombstoned or only reported, by the [`GonePolicy`].
    fn gone(&mut self, n: &mut Counts) -> Result<(), StoreError> {
        let listed_generated = self.a.entry.generated;
        let mut gone = Vec::new();
        for (k, l) in &self.pages.map {
            if gone_from_snapshot(l.modified, l.seen, l.brought_by, listed_generated) {
                let uri = self.tx.resource_uri(l.resource_id)?;
                // A page the filter leaves out is not judged: never gone.
                if self
                    .a
                    .filter
                    .admits(scp_catalog::page_url(&uri, &self.pages.section))
                {
                    gone.push((*k, l.resource_id, l.qualified, uri));
                }
            }
        }
        gone.sort_by_key(|(_, id, ..)| *id);
        let tombstone = match self.a.gone {
            GonePolicy::Report => false,
            GonePolicy::Tombstone { max: Some(max) } if gone.len() as u64 > max => {
                n.delete_refused = true;
                false
            }
            GonePolicy::Tombstone { .. } => true,
        };
        for (k, resource_id, qualified, uri) in gone {
            if tombstone {
                let version_id = self.tx.insert_page_version(
                    resource_id,
                    &NewPageVersion {
                        run_id: self.a.run_id,
                        collection_row: self.row,
                        change: crate::model::Change::Deleted,
                        modified: None,
                        title: None,
                        language: None,
                        line: None,
                        object: None,
                    },
                )?;
                // The page was gone by the time the snapshot was generated.
                let url = scp_catalog::page_url(&uri, &self.pages.section).to_string();
                self.event(
                    &url,
                    qualified,
                    Change::Deleted,
                    Some(listed_generated),
                    version_id,
                )?;
                n.deleted += 1;
                if let Some(l) = self.pages.map.get_mut(&k) {
                    l.modified = None;
                    l.json = None;
                    l.brought_by = Some(listed_generated);
                }
            }
            n.gone.push(uri);
        }
        n.gone.sort();
        Ok(())
    }
}

/// Pages outside the scope named one by one (the rest are counted).
const REFUSED_NAMED: usize = 100;

/// What [`Applied`] counts, while the collection is read.
#[derive(Default)]
struct Counts {
    refused_count: u64,
    excluded: u64,
    created: u64,
    updated: u64,
    unchanged: u64,
    older_kept: u64,
    same_modified_differs: u64,
    gone: Vec<String>,
    deleted: u64,
    delete_refused: bool,
    refused: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_short_digests() {
        assert_ne!(key("https://a.example/x"), key("https://a.example/y"));
        let hex = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";
        let s = short(hex).unwrap();
        assert_eq!(hex::encode(s), &hex[..32]);
        assert_eq!(short("zz"), None);
    }
}
