//! The engine's side of a collection applied whole: a document that carries its resources'
//! bytes inline, each stamped with a time that alone decides (SCP 0.1 collections, "Delta
//! Application"), and that is trusted only once read to its end ("Checksum Verification").
//!
//! The format reads the document and hands over each resource as an [`Inline`]; this module
//! checks it against the scope and the filter, looks up what the mirror holds of it (one query,
//! nothing of the mirror held in memory), asks [`decide`] what it is, stores its bytes (threads
//! of their own) and records the version through the one [`Writer`], opened
//! [`Writer::whole`]: nothing is committed until the format says the document is good
//! ([`Whole::commit`]); dropped before, everything is rolled back and the objects it added go
//! again. For a snapshot, [`Whole::gone`] finds the live resources it no longer lists and
//! tombstones them or only reports them, behind the deletion guard (`--max-delete`).
//!
//! A dry run is the same walk with nothing recorded ([`Whole::plan`]): the states it would
//! leave are kept as [`Recent`] (what the run changed, not the mirror), so that the next
//! collection of a section is decided against them, and the plan's lines are handed back.

use crate::engine::apply::{Then, Writer};
use crate::engine::decide::{decide, Basis, Decision, Held};
use crate::model::{Change, ChangeOutcome, Filter, Via};
use crate::net::Scope;
use crate::store::catalog::{ChangeEventRecord, NewVersion};
use crate::store::new_file::NewFile;
use crate::store::scp_catalog::{self as pages, PageLookup};
use crate::store::writer::LastRows;
use crate::store::{Catalog, ObjectStore, StoreError};
use jiff::Timestamp;
use sha2::{Digest as _, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use url::Url;

/// One resource of the collection with its bytes, as the format read it.
pub(crate) struct Inline {
    pub url: Url,
    /// The time the source stamps this state with; it decides alone.
    pub modified: Timestamp,
    pub bytes: String,
    /// Where it was read: a line of the document (for messages).
    pub line: u64,
    /// The format's rows written beside its version, once that has an id.
    pub side: Option<Then>,
}

/// The collection the resources are applied to.
pub(crate) struct Target<'a> {
    /// Its name (`collections.name`).
    pub collection: &'a str,
    /// What qualifies the URI of a resource whose URL another collection holds (an SCP
    /// section's name).
    pub qualifier: &'a str,
    /// The document read (events, messages).
    pub document: &'a str,
    /// The document's listed time: the states it brings are dated by it.
    pub listed: Timestamp,
    /// Where resources may be: one elsewhere is refused, as a list's entry outside the scope.
    pub scope: &'a Scope,
    /// What the mirror takes (`--include`/`--exclude`): one it leaves out is not applied, and
    /// one of the mirror's it leaves out is never gone.
    pub filter: &'a Filter,
    /// Record a change event for each version (incremental runs, for the feed).
    pub events: bool,
}

/// What to do with live resources absent from a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GonePolicy {
    /// Report them; the mirror keeps them (baseline without `--delete`).
    Report,
    /// Tombstone them, unless there are more than `max` (then nothing is deleted).
    Tombstone { max: Option<u64> },
}

/// What applying the collection did.
#[derive(Debug, Default)]
pub struct Counts {
    pub created: u64,
    pub updated: u64,
    /// Resources the mirror has with the same stamp.
    pub unchanged: u64,
    /// Resources the mirror has with a newer stamp (kept).
    pub older_kept: u64,
    /// The same stamp as the mirror's but other bytes (kept).
    pub same_modified_differs: u64,
    /// Live resources absent from this snapshot (URIs, sorted).
    pub gone: Vec<String>,
    pub deleted: u64,
    /// More gone than `GonePolicy::Tombstone.max`: nothing was deleted.
    pub delete_refused: bool,
    /// Resources outside the scope: (URL, why) of the first hundred, never mirrored.
    pub refused: Vec<(String, String)>,
    /// How many there were.
    pub refused_count: u64,
    /// Resources the filter left out.
    pub excluded: u64,
}

/// Resources looked up in the catalog with one query (their bytes wait meanwhile: about 0.6 MB
/// of SCP pages). One query a page cost a re-read of an unchanged 1 GB snapshot a quarter more
/// time than the map of the section it replaced.
const LOOKUP_BATCH: usize = 256;

/// Resources outside the scope named one by one (the rest are counted).
const REFUSED_NAMED: usize = 100;

/// A state this run gave a resource that the catalog does not show (yet): a whole writer's
/// batch not written, or a dry run's.
#[derive(Debug, Clone)]
struct Now {
    uri: String,
    resource_id: Option<i64>,
    /// None: tombstoned.
    modified: Option<Timestamp>,
    sha256_hex: Option<String>,
    brought_by: Timestamp,
    /// Listed in the collection being read.
    seen: bool,
}

/// What a run did to resources that the catalog does not show: bounded by a writer's batch,
/// or for a dry run by what it would change (never the mirror).
#[derive(Debug, Default, Clone)]
pub(crate) struct Recent {
    by_url: HashMap<String, Now>,
}

/// Where the decisions go (one a collection: the size of the writer does not matter).
#[allow(clippy::large_enum_variant)]
enum Sink<'w> {
    /// Recorded: the writer, and the threads that store the bytes.
    Write {
        writer: Writer<'w>,
        objects: ObjectThreads,
    },
    /// A dry run: nothing recorded; each resource's plan line (by URL, the later of a URL
    /// listed twice counting), printed once the document is verified.
    Plan {
        catalog: Option<&'w Catalog>,
        lines: BTreeMap<String, (char, String)>,
    },
}

/// One collection being applied whole.
pub(crate) struct Whole<'x, 'w> {
    sink: Sink<'w>,
    target: Target<'x>,
    recent: &'x mut Recent,
    /// The collection's id (`collections.id`; 0 for a dry run of a mirror without it).
    collection_id: i64,
    /// The newest version before this collection: a version after it is this collection's.
    through: i64,
    counts: Counts,
    /// The resources of the catalog this collection listed.
    seen: Seen,
    /// Resources read and not yet decided: looked up together ([`LOOKUP_BATCH`]).
    batch: Vec<Inline>,
    /// Where the next batch's resources are looked for first.
    cursor: pages::PageCursor,
    committed: bool,
}

/// Resources by id (a bit each, up to the largest id listed: an eighth of a byte per resource
/// of the catalog, never their states): the ones a collection listed.
#[derive(Debug, Default)]
pub(crate) struct Seen(Vec<u64>);

impl Seen {
    pub(crate) fn insert(&mut self, id: i64) {
        let Ok(id) = usize::try_from(id) else {
            return;
        };
        let (word, bit) = (id / 64, id % 64);
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << bit;
    }

    pub(crate) fn contains(&self, id: i64) -> bool {
        usize::try_from(id)
            .ok()
            .and_then(|id| self.0.get(id / 64).map(|w| w & (1 << (id % 64)) != 0))
            .unwrap_or(false)
    }
}

/// Why a collection could not be applied (beyond what the format rejects).
#[derive(Debug, thiserror::Error)]
pub enum WholeError {
    #[error("{0}")]
    Store(#[from] StoreError),
    /// Writing the objects, or making them durable, failed.
    #[error("objects: {0}")]
    Objects(std::io::Error),
}

impl<'x, 'w> Whole<'x, 'w> {
    /// Apply a collection to the mirror in the run `run_id`, through one writer that commits
    /// once at the end ([`Writer::whole`]), its bytes stored in `objects` by way of
    /// `staging`; `recent` is this collection's (empty).
    pub(crate) fn write(
        (catalog, run_id): (&'w mut Catalog, i64),
        (objects, staging): (&'w ObjectStore, &Path),
        target: Target<'x>,
        recent: &'x mut Recent,
    ) -> Result<Self, WholeError> {
        let mut writer = Writer::whole(catalog, objects, run_id)?;
        let collection_id =
            writer.now(|tx| crate::store::catalog::write::collection_id(tx, target.collection))?;
        // The newest version, read in the writer's open transaction.
        let through = pages::last_version_id(writer.catalog())?;
        Ok(Whole {
            sink: Sink::Write {
                writer,
                objects: ObjectThreads::start(objects, staging),
            },
            target,
            recent,
            collection_id,
            through,
            counts: Counts::default(),
            seen: Seen::default(),
            batch: Vec::new(),
            cursor: pages::PageCursor::start(),
            committed: false,
        })
    }

    /// A dry run of a collection against `catalog` (None: no mirror yet) and what the run's
    /// earlier collections would have left (`recent`, kept from one to the next).
    pub(crate) fn plan(
        catalog: Option<&'w Catalog>,
        target: Target<'x>,
        recent: &'x mut Recent,
    ) -> Result<Self, WholeError> {
        let (mut collection_id, mut through) = (0, 0);
        if let Some(c) = catalog {
            collection_id = c.collection_id_of(target.collection)?.unwrap_or(0);
            through = pages::last_version_id(c)?;
        }
        for now in recent.by_url.values_mut() {
            now.seen = false;
        }
        Ok(Whole {
            sink: Sink::Plan {
                catalog,
                lines: BTreeMap::new(),
            },
            target,
            recent,
            collection_id,
            through,
            counts: Counts::default(),
            seen: Seen::default(),
            batch: Vec::new(),
            cursor: pages::PageCursor::start(),
            committed: false,
        })
    }

    /// The writer, to write now in its open transaction (a dry run has none).
    pub(crate) fn writer(&mut self) -> Option<&mut Writer<'w>> {
        match &mut self.sink {
            Sink::Write { writer, .. } => Some(writer),
            Sink::Plan { .. } => None,
        }
    }

    /// What the collection did so far.
    pub(crate) fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The catalog as this collection has left it so far, and what `recent` holds beyond.
    fn catalog(&self) -> Option<&Catalog> {
        match &self.sink {
            Sink::Write { writer, .. } => Some(writer.catalog()),
            Sink::Plan { catalog, .. } => *catalog,
        }
    }

    /// What the mirror holds of `url` now: this run's doing first, then what the catalog
    /// held at the start of the batch (`held`; absent: nothing).
    fn lookup(&mut self, url: &str, held: &mut HashMap<String, PageLookup>) -> PageLookup {
        let Some(now) = self.recent.by_url.get_mut(url) else {
            let found = held.get(url).cloned().unwrap_or_else(|| PageLookup {
                uri: url.to_string(),
                held: None,
            });
            if let Some(h) = &found.held {
                self.seen.insert(h.resource_id);
            }
            return found;
        };
        now.seen = true;
        let now = now.clone();
        if let Some(id) = now.resource_id {
            self.seen.insert(id);
        }
        PageLookup {
            uri: now.uri,
            held: Some(pages::PageHeld {
                resource_id: now.resource_id.unwrap_or(0),
                modified: now.modified,
                sha256_hex: now.sha256_hex,
                brought_by: Some(now.brought_by),
            }),
        }
    }

    /// Decide the batch: one query for what the catalog holds of its resources (what the
    /// writer had is written first: `recent` then holds only what this batch does).
    fn run_batch(&mut self) -> Result<(), WholeError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        if let Sink::Write { writer, .. } = &mut self.sink {
            writer.flush(|_| Ok(()))?;
            self.recent.by_url.clear();
        }
        let batch = std::mem::take(&mut self.batch);
        let mut cursor = self.cursor;
        let mut held = match self.catalog() {
            Some(c) => {
                let urls: Vec<&str> = batch
                    .iter()
                    .map(|it| it.url.as_str())
                    .filter(|u| !self.recent.by_url.contains_key(*u))
                    .collect();
                let (section, id) = (self.target.qualifier, self.collection_id);
                pages::page_lookups(c, &urls, section, id, &mut cursor)?
            }
            None => HashMap::new(),
        };
        self.cursor = cursor;
        for it in batch {
            let found = self.lookup(it.url.as_str(), &mut held);
            self.decided(it, found)?;
        }
        Ok(())
    }

    /// One resource of the collection.
    pub(crate) fn item(&mut self, it: Inline) -> Result<(), WholeError> {
        let url = it.url.as_str();
        if let Err(why) = self.target.scope.check(&it.url) {
            // Bounded like a reader's warnings: a collection of a million resources elsewhere
            // names the first ones and counts the rest.
            if self.counts.refused.len() < REFUSED_NAMED {
                self.counts.refused.push((
                    url.to_string(),
                    format!("{why} (line {} of {})", it.line, self.target.document),
                ));
            }
            self.counts.refused_count += 1;
            return Ok(());
        }
        if !self.target.filter.admits(url) {
            self.counts.excluded += 1;
            if let Sink::Plan { lines, .. } = &mut self.sink {
                lines.insert(url.to_string(), ('x', url.to_string()));
            }
            return Ok(());
        }
        self.batch.push(it);
        if self.batch.len() >= LOOKUP_BATCH {
            self.run_batch()?;
        }
        Ok(())
    }

    /// One resource, against what the mirror holds of it (`found`).
    fn decided(&mut self, it: Inline, found: PageLookup) -> Result<(), WholeError> {
        let url = it.url.as_str();
        let sha256_hex = hex::encode(Sha256::digest(it.bytes.as_bytes()));
        let held = found.held.as_ref().map(|h| Held {
            sha256: h.sha256_hex.as_deref(),
            lastmod: h.modified,
        });
        let decision = decide(
            held,
            sha256_hex.as_str(),
            Basis::Stamped {
                modified: it.modified,
            },
        );
        let Some(change) = decision.change() else {
            match decision {
                Decision::OlderKept => self.counts.older_kept += 1,
                Decision::Unchanged { differs } => {
                    self.counts.unchanged += 1;
                    self.counts.same_modified_differs += u64::from(differs);
                }
                _ => {}
            }
            if let Sink::Plan { lines, .. } = &mut self.sink {
                lines.insert(url.to_string(), ('=', url.to_string()));
            }
            return Ok(());
        };
        match change {
            Change::Created => self.counts.created += 1,
            _ => self.counts.updated += 1,
        }
        let resource_id = found.held.as_ref().map(|h| h.resource_id);
        let was = found.held.as_ref().and_then(|h| h.modified);
        self.recent.by_url.insert(
            url.to_string(),
            Now {
                uri: found.uri.clone(),
                resource_id: resource_id.filter(|&id| id != 0),
                modified: Some(it.modified),
                sha256_hex: Some(sha256_hex.clone()),
                brought_by: self.target.listed,
                seen: true,
            },
        );
        let version = NewVersion {
            uri: found.uri,
            collection: self.target.collection.to_string(),
            change,
            lastmod: Some(it.modified),
            length_bytes: Some(it.bytes.len() as u64),
            sha256_hex: Some(sha256_hex.clone()),
            arrived_via: Via::Scp,
            ..Default::default()
        };
        match &mut self.sink {
            Sink::Write {
                writer, objects, ..
            } => {
                let event = self
                    .target
                    .events
                    .then(|| event(&self.target, &version.uri, change, Some(it.modified)));
                writer.version_with(version, event, it.side)?;
                objects.write(sha256_hex, it.bytes)
            }
            Sink::Plan { lines, .. } => {
                let line = match change {
                    Change::Created => ('+', url.to_string()),
                    _ => {
                        let was = was.map(|t| t.to_string()).unwrap_or_default();
                        ('*', format!("{url} (modified: {was} -> {})", it.modified))
                    }
                };
                lines.insert(url.to_string(), line);
                Ok(())
            }
        }
    }

    /// The collection is a snapshot listed at `listed`: the live resources it does not list,
    /// that no collection listed after it brought, are gone (SCP 0.1 "Deletion Detection");
    /// tombstoned or only reported by `policy`, `side` giving a tombstone's rows.
    pub(crate) fn gone(
        &mut self,
        policy: GonePolicy,
        side: impl Fn() -> Option<Then>,
    ) -> Result<(), WholeError> {
        let listed = self.target.listed;
        self.run_batch()?;
        if let Sink::Write { writer, .. } = &mut self.sink {
            writer.flush(|_| Ok(()))?;
            self.recent.by_url.clear();
        }
        let (collection_id, through) = (self.collection_id, self.through);
        let mut found = Vec::new();
        let seen = std::mem::take(&mut self.seen);
        if let Some(c) = self.catalog() {
            pages::live_pages(c, collection_id, through, |id, uri, by| {
                if !seen.contains(id) {
                    found.push((id, uri, by))
                }
            })?;
        }
        let qualifier = self.target.qualifier;
        let mut gone = Vec::new();
        for (id, uri, by) in found {
            let url = pages::page_url(&uri, qualifier);
            // This run's doing decides where there is some.
            let (live, seen, by) = match self.recent.by_url.get(url) {
                Some(now) => (now.modified.is_some(), now.seen, Some(now.brought_by)),
                None => (true, false, by),
            };
            if live && !seen && by.is_none_or(|b| b <= listed) && self.target.filter.admits(url) {
                gone.push((Some(id), uri));
            }
        }
        // What only this run made (a dry run's: a write has been flushed above).
        for (url, now) in &self.recent.by_url {
            if now.resource_id.is_none()
                && now.modified.is_some()
                && !now.seen
                && now.brought_by <= listed
                && self.target.filter.admits(url)
            {
                gone.push((None, now.uri.clone()));
            }
        }
        let tombstone = match policy {
            GonePolicy::Report => false,
            GonePolicy::Tombstone { max: Some(max) } if gone.len() as u64 > max => {
                self.counts.delete_refused = true;
                false
            }
            GonePolicy::Tombstone { .. } => true,
        };
        for (id, uri) in gone {
            if tombstone {
                self.tombstone(id, &uri, side())?;
            }
            self.counts.gone.push(uri);
        }
        self.counts.gone.sort();
        Ok(())
    }

    /// The tombstone of resource `id` (None: one only this dry run made), `uri`.
    fn tombstone(
        &mut self,
        id: Option<i64>,
        uri: &str,
        side: Option<Then>,
    ) -> Result<(), WholeError> {
        let listed = self.target.listed;
        self.counts.deleted += 1;
        let url = pages::page_url(uri, self.target.qualifier).to_string();
        self.recent.by_url.insert(
            url,
            Now {
                uri: uri.to_string(),
                resource_id: id,
                modified: None,
                sha256_hex: None,
                brought_by: listed,
                seen: false,
            },
        );
        if let Sink::Write { writer, .. } = &mut self.sink {
            let version = NewVersion {
                arrived_via: Via::Scp,
                ..NewVersion::tombstone(uri.to_string(), self.target.collection.to_string())
            };
            // The resource was gone by the time the snapshot was listed.
            let event = self
                .target
                .events
                .then(|| event(&self.target, uri, Change::Deleted, Some(listed)));
            writer.version_with(version, event, side)?;
        }
        Ok(())
    }

    /// The document is good: commit everything, and what `last` writes (the format's
    /// records of the document), after the objects are durable. Returns the counts and, for a
    /// dry run (which writes neither), the plan's lines (by URL).
    pub(crate) fn commit(
        mut self,
        last: Option<LastRows<'_>>,
    ) -> Result<(Counts, Vec<(char, String)>), WholeError> {
        self.run_batch()?;
        let counts = std::mem::take(&mut self.counts);
        let sink = self.take_sink();
        match sink {
            Sink::Write {
                writer,
                mut objects,
                ..
            } => {
                let result = match objects.finish() {
                    Ok(()) => writer
                        .commit(|tx| last.map_or(Ok(()), |last| last(tx)))
                        .map_err(WholeError::from),
                    Err(e) => {
                        writer.rollback();
                        Err(WholeError::Objects(e))
                    }
                };
                if let Err(e) = result {
                    objects.remove_fresh();
                    return Err(e);
                }
                self.committed = true;
                Ok((counts, Vec::new()))
            }
            Sink::Plan { lines, .. } => {
                self.committed = true;
                Ok((counts, lines.into_values().collect()))
            }
        }
    }
}

impl<'w> Whole<'_, 'w> {
    /// The sink, taken out (an empty dry run's left in its place).
    fn take_sink(&mut self) -> Sink<'w> {
        std::mem::replace(
            &mut self.sink,
            Sink::Plan {
                catalog: None,
                lines: BTreeMap::new(),
            },
        )
    }
}

impl Drop for Whole<'_, '_> {
    /// Not committed: the writer rolls back, and the objects this collection added go again.
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let sink = self.take_sink();
        if let Sink::Write {
            writer,
            mut objects,
            ..
        } = sink
        {
            writer.rollback();
            let _ = objects.finish();
            objects.remove_fresh();
        }
    }
}

/// The change event of a version this collection made.
fn event(
    target: &Target<'_>,
    uri: &str,
    change: Change,
    time: Option<Timestamp>,
) -> ChangeEventRecord {
    ChangeEventRecord {
        collection: target.collection.to_string(),
        uri: uri.to_string(),
        change,
        event_time: time,
        document_url: target.document.to_string(),
        outcome: ChangeOutcome::Applied,
    }
}

/// Objects queued for the object threads at most (each a resource's bytes, a few KB).
const OBJECTS_IN_FLIGHT: usize = 256;

/// Threads writing objects. Two: on a 2-core machine a 1 GB snapshot of 2 KB pages was held
/// up by one (its file creations took more time than the reading, hashing and recording).
const OBJECT_THREADS: usize = 2;

/// What an object thread did: the objects the store did not hold before, and the error that
/// stopped it, if one did.
type Written = (Vec<String>, Option<std::io::Error>);

/// The threads that store the inline bytes while the calling thread reads, hashes and
/// records: a file per resource costs the kernel more than all the rest.
struct ObjectThreads {
    objects: ObjectStore,
    send: Option<crossbeam_channel::Sender<(String, String)>>,
    handles: Vec<std::thread::JoinHandle<Written>>,
    /// Objects the store did not hold before (known once finished).
    fresh: Vec<String>,
}

impl ObjectThreads {
    fn start(objects: &ObjectStore, staging: &Path) -> ObjectThreads {
        let (send, receive) = crossbeam_channel::bounded(OBJECTS_IN_FLIGHT);
        let handles = (0..OBJECT_THREADS)
            .map(|_| {
                let (receive, objects, staging) =
                    (receive.clone(), objects.clone(), staging.to_path_buf());
                std::thread::spawn(move || write_objects(&objects, &staging, receive))
            })
            .collect();
        ObjectThreads {
            objects: objects.clone(),
            send: Some(send),
            handles,
            fresh: Vec::new(),
        }
    }

    fn write(&mut self, sha_hex: String, bytes: String) -> Result<(), WholeError> {
        let sent = self.send.as_ref().map(|s| s.send((sha_hex, bytes)));
        match sent {
            Some(Ok(())) => Ok(()),
            // Every thread stopped at an error: `finish` has it.
            _ => self.finish().map_err(WholeError::Objects),
        }
    }

    /// Wait for every object queued; the first error a thread met.
    fn finish(&mut self) -> std::io::Result<()> {
        self.send = None;
        let mut first = None;
        for handle in self.handles.drain(..) {
            let (fresh, error) = handle.join().expect("the object threads do not panic");
            self.fresh.extend(fresh);
            first = first.or(error);
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Remove the objects the store did not hold before (best effort: one left behind is a
    /// stray object for audit to report).
    fn remove_fresh(&mut self) {
        for sha in self.fresh.drain(..) {
            let _ = self.objects.remove_unreferenced(&sha);
        }
    }
}

/// An object thread: each (SHA-256 hex, bytes) into the store (made durable by the commit).
fn write_objects(
    objects: &ObjectStore,
    staging: &Path,
    receive: crossbeam_channel::Receiver<(String, String)>,
) -> Written {
    let mut fresh = Vec::new();
    for (sha, bytes) in receive {
        let written = NewFile::create(staging).and_then(|mut file| {
            file.write_all(bytes.as_bytes())?;
            objects.ingest_new_fresh(file, &sha)
        });
        match written {
            Ok(true) => fresh.push(sha),
            Ok(false) => {}
            Err(e) => return (fresh, Some(e)),
        }
    }
    (fresh, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Rules;

    const COLLECTION: &str = "http://x/sitemap.xml#scp-section=all";

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn page(url: &str, modified: &str, json: &str) -> Inline {
        Inline {
            url: Url::parse(url).unwrap(),
            modified: t(modified),
            bytes: json.to_string(),
            line: 2,
            side: None,
        }
    }

    struct Mirror {
        dir: tempfile::TempDir,
        catalog: Catalog,
        objects: ObjectStore,
        run_id: i64,
        scope: Scope,
        filter: Filter,
    }

    fn mirror() -> Mirror {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        let objects = ObjectStore::open(dir.path()).unwrap();
        std::fs::create_dir_all(dir.path().join("staging")).unwrap();
        let run_id = catalog.begin_run("baseline", None, "test").unwrap();
        let filter = Filter::new(Rules {
            include: vec![],
            exclude: vec!["/left-out/*".into()],
            category: vec![],
        })
        .unwrap();
        Mirror {
            dir,
            catalog,
            objects,
            run_id,
            scope: Scope::for_document(&Url::parse("http://x/sitemap.xml").unwrap(), &[]),
            filter,
        }
    }

    fn target<'a>(m: &'a Mirror, listed: &str) -> Target<'a> {
        Target {
            collection: COLLECTION,
            qualifier: "all",
            document: "http://x/all.jsonl",
            listed: t(listed),
            scope: &m.scope,
            filter: &m.filter,
            events: true,
        }
    }

    /// Apply `pages` through a whole writer; `gone`: a snapshot's policy. `commit`: false
    /// drops it instead.
    fn apply(
        m: &mut Mirror,
        listed: &str,
        pages: Vec<Inline>,
        gone: Option<GonePolicy>,
        commit: bool,
    ) -> Counts {
        let staging = m.dir.path().join("staging");
        let scope = m.scope.clone();
        let filter = m.filter.clone();
        let target = Target {
            collection: COLLECTION,
            qualifier: "all",
            document: "http://x/all.jsonl",
            listed: t(listed),
            scope: &scope,
            filter: &filter,
            events: true,
        };
        let mut recent = Recent::default();
        let mut whole = Whole::write(
            (&mut m.catalog, m.run_id),
            (&m.objects, &staging),
            target,
            &mut recent,
        )
        .unwrap();
        for p in pages {
            whole.item(p).unwrap();
        }
        if let Some(policy) = gone {
            whole.gone(policy, || None).unwrap();
        }
        if !commit {
            drop(whole);
            return Counts::default();
        }
        whole.commit(None).unwrap().0
    }

    /// Resources of another collection, `http://x/elsewhere`, one version each.
    fn held_elsewhere(m: &mut Mirror, uris: impl IntoIterator<Item = String>) {
        let run_id = m.run_id;
        m.catalog
            .in_transaction(|tx| {
                for uri in uris {
                    let other = NewVersion {
                        uri,
                        collection: "http://x/elsewhere".into(),
                        sha256_hex: Some("00".repeat(32)),
                        ..Default::default()
                    };
                    crate::store::catalog::write::version(tx, run_id, &other)?;
                }
                Ok(())
            })
            .unwrap();
        m.catalog.committed().unwrap();
    }

    fn state(m: &Mirror, uri: &str) -> Option<(bool, Option<Timestamp>)> {
        let s = m.catalog.current_state(uri).unwrap()?;
        Some((s.deleted, s.lastmod))
    }

    /// Pages decided by their stamps alone, against the catalog (no map of the mirror), each
    /// created, updated, kept or gone as SCP 0.1 says; a page listed twice is decided against
    /// the first; a URL another collection holds gets a qualified URI; out of scope, refused;
    /// left out by the filter, neither applied nor gone.
    #[test]
    fn pages_are_decided_by_their_stamps_against_the_catalog() {
        let mut m = mirror();
        // Another collection holds http://x/shared already.
        held_elsewhere(&mut m, ["http://x/shared".to_string()]);

        let n = apply(
            &mut m,
            "2026-01-01T00:00:00Z",
            vec![
                page("http://x/a", "2026-01-01T00:00:00Z", "{\"a\":1}"),
                page("http://x/b", "2026-01-01T00:00:00Z", "{\"b\":1}"),
                page("http://x/c", "2026-01-01T00:00:00Z", "{\"c\":1}"),
                page("http://x/shared", "2026-01-01T00:00:00Z", "{\"s\":1}"),
                // Listed twice: the second is decided against the first.
                page("http://x/b", "2026-01-02T00:00:00Z", "{\"b\":2}"),
                page("http://elsewhere/x", "2026-01-01T00:00:00Z", "{}"),
                page("http://x/left-out/x", "2026-01-01T00:00:00Z", "{}"),
            ],
            Some(GonePolicy::Tombstone { max: None }),
            true,
        );
        assert_eq!(
            (n.created, n.updated, n.refused_count, n.excluded),
            (4, 1, 1, 1)
        );
        assert!(n.gone.is_empty(), "{:?}", n.gone);
        assert_eq!(
            state(&m, "http://x/b"),
            Some((false, Some(t("2026-01-02T00:00:00Z"))))
        );
        assert!(state(&m, "http://x/shared#scp-section=all").is_some());
        assert_eq!(
            m.catalog
                .current_state("http://x/shared")
                .unwrap()
                .unwrap()
                .collection,
            "http://x/elsewhere"
        );

        // A later snapshot: a newer, an older, the same stamp with other bytes, one missing.
        let n = apply(
            &mut m,
            "2026-02-01T00:00:00Z",
            vec![
                page("http://x/a", "2026-02-01T00:00:00Z", "{\"a\":2}"),
                page("http://x/b", "2026-01-01T00:00:00Z", "{\"b\":0}"),
                page("http://x/shared", "2026-01-01T00:00:00Z", "{\"s\":2}"),
            ],
            Some(GonePolicy::Tombstone { max: None }),
            true,
        );
        assert_eq!((n.created, n.updated, n.older_kept), (0, 1, 1));
        assert_eq!((n.unchanged, n.same_modified_differs), (1, 1));
        assert_eq!(n.gone, ["http://x/c"]);
        assert_eq!(n.deleted, 1);
        assert_eq!(state(&m, "http://x/c").map(|s| s.0), Some(true));
        assert_eq!(
            state(&m, "http://x/a"),
            Some((false, Some(t("2026-02-01T00:00:00Z"))))
        );

        // More gone than --max-delete: reported, nothing deleted.
        let n = apply(
            &mut m,
            "2026-03-01T00:00:00Z",
            vec![],
            Some(GonePolicy::Tombstone { max: Some(1) }),
            true,
        );
        assert!(n.delete_refused);
        assert_eq!(n.gone.len(), 3, "{:?}", n.gone);
        assert_eq!(n.deleted, 0);
        assert_eq!(state(&m, "http://x/a").map(|s| s.0), Some(false));
    }

    /// A snapshot read again is looked up in its resources' id order (a range of the table a
    /// batch, [`pages::PageCursor`]) and finds what lookups by URI find: with pages new, gone,
    /// moved, listed twice, another collection's rows between, and a URL another collection
    /// holds.
    #[test]
    fn a_snapshot_read_again_finds_by_id_order_what_lookups_by_uri_find() {
        let mut m = mirror();
        let at = "2026-01-01T00:00:00Z";
        let p = |i: usize, stamp: &str| page(&format!("http://x/p{i}"), stamp, &format!("{i}"));
        apply(&mut m, at, (0..300).map(|i| p(i, at)).collect(), None, true);
        // Another collection's resources between the first 300 pages and the next.
        let others = (0..50).map(|i| format!("http://x/o{i}"));
        held_elsewhere(&mut m, others.chain(["http://x/shared".to_string()]));
        let second: Vec<Inline> = (0..700).map(|i| p(i, at)).collect();
        assert_eq!(apply(&mut m, at, second, None, true).created, 400);

        // Read again: one page newer, one new in the middle, one listed early and again in its
        // place, two gone, one held elsewhere.
        let later = "2026-02-01T00:00:00Z";
        let mut third: Vec<Inline> = Vec::new();
        for i in (0..700).filter(|&i| i != 5 && i != 450) {
            if i == 10 {
                third.push(p(600, at));
                third.push(p(i, later));
                continue;
            }
            if i == 320 {
                third.push(page("http://x/new", later, "{}"));
                third.push(page("http://x/shared", later, "{}"));
            }
            third.push(p(i, at));
        }
        let urls: Vec<String> = third.iter().map(|it| it.url.to_string()).collect();
        let catalog = &m.catalog;
        let collection_id = catalog.collection_id_of(COLLECTION).unwrap().unwrap();
        let mut cursor = pages::PageCursor::start();
        let mut ranged = 0;
        for batch in urls.chunks(LOOKUP_BATCH) {
            let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
            let by_uri = pages::page_lookups(
                catalog,
                &batch,
                "all",
                collection_id,
                &mut pages::PageCursor::by_uri(),
            )
            .unwrap();
            if let Some(after) = cursor.after() {
                ranged += pages::following_states(catalog, &batch, collection_id, after)
                    .unwrap()
                    .len();
            }
            let by_id =
                pages::page_lookups(catalog, &batch, "all", collection_id, &mut cursor).unwrap();
            assert_eq!(by_id, by_uri);
        }
        // All but three are found in the range: p600 listed early, the new page and the one
        // held elsewhere.
        assert_eq!(ranged, urls.len() - 3);

        let n = apply(
            &mut m,
            later,
            third,
            Some(GonePolicy::Tombstone { max: None }),
            true,
        );
        assert_eq!((n.created, n.updated, n.unchanged), (2, 1, 698), "{n:?}");
        assert_eq!(n.gone, ["http://x/p450", "http://x/p5"]);
        assert!(state(&m, "http://x/shared#scp-section=all").is_some());
        assert_eq!(state(&m, "http://x/p10"), Some((false, Some(t(later)))));
    }

    /// A collection given up before its commit (a line rejected, the checksum wrong) leaves
    /// nothing: no version, no event, and the objects it added are gone again.
    #[test]
    fn a_collection_not_committed_leaves_nothing() {
        let mut m = mirror();
        apply(
            &mut m,
            "2026-01-01T00:00:00Z",
            vec![page("http://x/a", "2026-01-01T00:00:00Z", "{\"a\":1}")],
            None,
            true,
        );
        let fresh = "{\"fresh\":1}";
        let sha = hex::encode(Sha256::digest(fresh.as_bytes()));
        let many: Vec<Inline> = (0..1200)
            .map(|i| page(&format!("http://x/p{i}"), "2026-02-01T00:00:00Z", fresh))
            .chain([page("http://x/a", "2026-02-01T00:00:00Z", "{\"a\":2}")])
            .collect();
        // More than a writer's batch: some of it was written into the open transaction.
        apply(&mut m, "2026-02-01T00:00:00Z", many, None, false);
        assert_eq!(state(&m, "http://x/p0"), None);
        assert_eq!(
            state(&m, "http://x/a"),
            Some((false, Some(t("2026-01-01T00:00:00Z"))))
        );
        assert!(!m.objects.path_for(&sha).exists());
        let events = crate::store::change_history::recorded_events(&m.catalog).unwrap();
        assert_eq!(events.len(), 1);
        // The catalog takes the next transaction (none was left open).
        apply(
            &mut m,
            "2026-03-01T00:00:00Z",
            vec![page("http://x/p0", "2026-03-01T00:00:00Z", fresh)],
            None,
            true,
        );
        assert!(m.objects.path_for(&sha).exists());
        assert_eq!(state(&m, "http://x/p0").map(|s| s.0), Some(false));
    }

    /// A dry run records nothing, and decides each collection against what the ones before it
    /// would have left: a delta after a snapshot sees the snapshot's tombstones and updates.
    #[test]
    fn a_dry_run_records_nothing_and_carries_its_states() {
        let mut m = mirror();
        apply(
            &mut m,
            "2026-01-01T00:00:00Z",
            vec![
                page("http://x/a", "2026-01-01T00:00:00Z", "{\"a\":1}"),
                page("http://x/b", "2026-01-01T00:00:00Z", "{\"b\":1}"),
            ],
            None,
            true,
        );
        let before = pages::last_version_id(&m.catalog).unwrap();
        let mut recent = Recent::default();
        let mut whole = Whole::plan(
            Some(&m.catalog),
            target(&m, "2026-02-01T00:00:00Z"),
            &mut recent,
        )
        .unwrap();
        whole
            .item(page("http://x/a", "2026-02-01T00:00:00Z", "{\"a\":2}"))
            .unwrap();
        whole
            .item(page("http://x/new", "2026-02-01T00:00:00Z", "{}"))
            .unwrap();
        whole
            .gone(GonePolicy::Tombstone { max: None }, || None)
            .unwrap();
        let (n, lines) = whole.commit(None).unwrap();
        assert_eq!(n.gone, ["http://x/b"]);
        let marks: Vec<char> = lines.iter().map(|l| l.0).collect();
        assert_eq!(marks, ['*', '+']);
        // The delta after it: b is tombstoned and a is at its new stamp, as the run would leave.
        let mut whole = Whole::plan(
            Some(&m.catalog),
            target(&m, "2026-02-02T00:00:00Z"),
            &mut recent,
        )
        .unwrap();
        whole
            .item(page("http://x/a", "2026-02-01T00:00:00Z", "{\"a\":2}"))
            .unwrap();
        whole
            .item(page("http://x/b", "2026-01-01T00:00:00Z", "{\"b\":1}"))
            .unwrap();
        whole
            .item(page("http://x/new", "2026-01-15T00:00:00Z", "{}"))
            .unwrap();
        let (n, _) = whole.commit(None).unwrap();
        assert_eq!((n.unchanged, n.created, n.older_kept), (1, 1, 1), "{n:?}");
        let after = pages::last_version_id(&m.catalog).unwrap();
        assert_eq!(before, after);
    }
}
