//! Streaming a collection's Resource List (or Resource List Index, or plain Sitemap) entry by
//! entry, for commands that must not hold the whole list: an audit of a million-entry index
//! runs in bounded memory this way.
//!
//! The rules are those of `snapshot::read` (which collects a baseline's snapshot): each
//! document's entries are scoped to that document (a local file's to its first entry's
//! origin); index parts are fetched within the index's scope, cycles skipped, nesting capped;
//! a part that cannot be read is recorded as a failed part, not fatal, and makes the list
//! incomplete (no deletion — and for audit no "extra" — may be derived from it); the anchor is
//! the list's `at` (the minimum of the parts' `at`), else the newest `<lastmod>`.
//!
//! Two differences, both inherent to streaming: entries reach the visitor as they are read, so
//! the entries of a part that fails half-way have been visited (the caller learns of the
//! failure from [`Walked::failed_parts`]); and a URI listed twice is visited twice (the caller
//! decides; "the later entry counts", as in a snapshot).

use crate::engine::documents::{Documents, OpenedDocument};
use crate::engine::expected::Refused;
use crate::engine::plan::{Declared, Listed};
use crate::engine::sync_point;
use crate::error::SourceError;
use crate::model::Scope;
use crate::rs::document::{Capability, Entry, Root, Syntax, Warning};
use crate::store::catalog::DocumentRecord;
use crossbeam_channel::{Receiver, Sender};
use jiff::Timestamp;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use url::Url;

/// How deep Resource List Indexes may nest.
const MAX_INDEX_DEPTH: usize = 3;

pub use crate::engine::expected::{Item, Walked, Warnings};

/// Walk the list starting from an opened top-level document, handing every entry to `visit`.
/// An error from the top-level document (or from `visit`) ends the walk.
pub(crate) fn walk(
    docs: &Documents<'_>,
    top: OpenedDocument,
    visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
) -> Result<Walked, SourceError> {
    match top.header().capability() {
        None | Some(Capability::ResourceList) => {}
        Some(other) => {
            return Err(SourceError::Unusable {
                url: top.url.to_string(),
                message: format!("this is a {other} document, not a Resource List"),
            })
        }
    }
    let header = top.header().clone();
    let top_url = top.url.to_string();
    let read_at = Timestamp::now();
    let mut w = Walker {
        docs,
        visit,
        out: Walked::default(),
        warnings: Warnings::default(),
        visited: HashSet::from([top.url.to_string()]),
        part_ats: Vec::new(),
        newest_lastmod: None,
        lists_read: 0,
        other_category: 0,
    };
    let mut top = top;
    w.document(&mut top, 0)?;
    if w.other_category > 0 {
        w.warnings.push(format!(
            "{top_url}: {} Resource List Index part(s) not fetched: the categories they aggregate \
             (2012 draft §3.2) name none of {}",
            w.other_category,
            docs.filter.rules().as_options()
        ));
    }
    if w.lists_read == 0 && w.out.failed_parts.is_empty() && w.other_category == 0 {
        // An index whose every part was skipped (itself, a cycle, out of scope, too deep) is
        // not an empty list: taken as one, a --delete would tombstone the whole collection.
        return Err(SourceError::Unusable {
            url: top_url,
            message: "the Resource List Index leads to no Resource List that could be read \
                      (every part is the index itself or one already read, out of scope, or \
                      nested too deep): the list is incomplete, nothing is applied or deleted"
                .into(),
        });
    }
    let mut out = w.out;
    out.warnings = w.warnings.into_vec();
    if header.root == Root::Urlset {
        out.part_of = header.link("index").map(|l| l.href.to_string());
    }
    let plain =
        header.syntax == Syntax::Plain || header.md.capability.is_none() && !header.alpha_changeset;
    if let Some(at) = header.md.at.filter(|_| !plain) {
        // ResourceSync 1.1 §10.1 step 2: with per-part `at`, the anchor is the minimum.
        out.at = w.part_ats.iter().copied().chain([at]).min();
        out.completed = header.md.completed;
        out.anchored = true;
        out.basis = if w.part_ats.is_empty() {
            "at of the Resource List".into()
        } else {
            "minimum at of the Resource List Index parts".into()
        };
    } else {
        out.at = w.newest_lastmod;
        out.anchored = false;
        out.basis = match header.syntax {
            Syntax::Alpha2012 if header.md.at.is_some() => {
                out.at = header.md.at;
                "2012-draft DCTERMS.modified (unanchored)".into()
            }
            // `Catalog::followed_sources` tells a plain Sitemap source by this prefix.
            _ => "plain Sitemap without at: newest lastmod (unanchored)".into(),
        };
    }
    if let Some(at) = out.at {
        let what = if out.anchored {
            format!("{}: {}", top_url, out.basis)
        } else {
            format!("{}: the newest lastmod", top_url)
        };
        // An `at` in the future cannot be trusted. The newest lastmod the list gives can: no
        // resource it lists changed later than the list was really written, so a resource made
        // between that writing and this reading is dated after it, and the Change Lists from
        // it bring that resource (the reading time as the sync point would skip it).
        let newest = w
            .newest_lastmod
            .filter(|t| out.anchored && !sync_point::is_future(*t, read_at));
        match newest {
            Some(newest) if sync_point::is_future(at, read_at) => {
                out.warnings.push(format!(
                    "{what} is {at}, later than the time it was read ({}): the sync point is \
                     the newest lastmod it lists, {newest}, not moved into the future",
                    read_at.strftime("%Y-%m-%dT%H:%M:%SZ")
                ));
                out.at = Some(newest);
                out.basis = "newest lastmod of the Resource List (its at is in the future)".into();
            }
            _ => {
                let (at, warning) = sync_point::bounded(at, read_at, &what);
                out.at = Some(at);
                out.warnings.extend(warning);
            }
        }
    }
    Ok(out)
}

struct Walker<'a, 'b, 'v> {
    docs: &'a Documents<'b>,
    visit: &'v mut dyn FnMut(Item) -> Result<(), SourceError>,
    out: Walked,
    warnings: Warnings,
    visited: HashSet<String>,
    part_ats: Vec<Timestamp>,
    newest_lastmod: Option<Timestamp>,
    /// Lists (urlsets) read, the top one included.
    lists_read: u64,
    /// Index parts not fetched: their aggregated categories name none of `--category`.
    other_category: u64,
}

/// A document's entries as the walker takes them: from the reader of a document opened here,
/// or from a part read ahead on a worker thread ([`Ahead`]). Either way the same entries, the
/// reader's warnings after the entry they came with, the same record.
trait Entries {
    fn url(&self) -> &Url;
    fn is_index(&self) -> bool;
    fn next_entry(&mut self) -> Result<Option<Entry>, SourceError>;
    /// The reader's warnings not taken yet.
    fn take_warnings(&mut self) -> Vec<Warning>;
    fn record(&self, count: u64) -> DocumentRecord;
}

impl Entries for OpenedDocument {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_index(&self) -> bool {
        self.header().root == Root::SitemapIndex
    }

    fn next_entry(&mut self) -> Result<Option<Entry>, SourceError> {
        Ok(self.reader.next_entry()?)
    }

    fn take_warnings(&mut self) -> Vec<Warning> {
        self.reader.take_warnings()
    }

    fn record(&self, count: u64) -> DocumentRecord {
        OpenedDocument::record(self, count)
    }
}

impl Walker<'_, '_, '_> {
    fn document(&mut self, doc: &mut dyn Entries, depth: usize) -> Result<(), SourceError> {
        let mut scope = Arc::new(self.docs.scope_for(doc.url()));
        let doc_url: std::sync::Arc<str> = doc.url().as_str().into();
        // A local file lists http(s) resources: its scope is the first entry's origin.
        let mut local = doc.url().scheme() == "file";
        let mut count = 0u64;
        if doc.is_index() {
            // An index names parts, not resources: a few hundred at most, held.
            let mut parts = Vec::new();
            while let Some(e) = doc.next_entry()? {
                count += 1;
                parts.push(e);
            }
            self.warnings(doc);
            self.out.documents.push(doc.record(count));
            return self.parts(&doc_url, &scope, parts, depth);
        }
        self.lists_read += 1;
        let mut gone_entries = 0u64;
        while let Some(e) = doc.next_entry()? {
            count += 1;
            self.out.entries += 1;
            if local {
                local = false;
                scope = Arc::new(self.docs.scope_for(&e.loc));
                self.warnings.push(format!(
                    "{doc_url}: a local document; resources accepted from {} (its first entry), --allow-host widens",
                    scope.describe()
                ));
            }
            if let Err(reason) = scope.check(&e.loc) {
                (self.visit)(Item::Refused(Refused {
                    uri: e.loc.to_string(),
                    reason: format!("{reason} (listed in {doc_url}, line {})", e.line),
                }))?;
                continue;
            }
            if let Some(why) = &e.invalid {
                (self.visit)(Item::Refused(Refused {
                    uri: e.loc.to_string(),
                    reason: format!("{doc_url}: {why}"),
                }))?;
                continue;
            }
            // An entry that says its resource is gone (a 2012-draft `<expires>`, ResourceSync
            // 1.1 §13; a `change="deleted"`) lists no state: not fetched, and the mirror's copy,
            // if any, is gone from the source (tombstoned by `--delete`).
            if e.md.change == Some(crate::model::Change::Deleted) {
                self.out.entries -= 1;
                gone_entries += 1;
                continue;
            }
            if let Some(t) = e.lastmod {
                self.newest_lastmod = self.newest_lastmod.max(Some(t));
            }
            let listed = Listed {
                duplicates: e.duplicates().into_iter().map(|l| l.href.clone()).collect(),
                declared: Declared {
                    lastmod: e.lastmod,
                    length: e.md.length,
                    digests: e.md.hash,
                    encoding: e.md.encoding,
                    categories: e.categories,
                },
                media_type: e.md.media_type,
                uri: e.loc,
                document: doc_url.clone(),
                line: e.line,
                scope: scope.clone(),
            };
            (self.visit)(Item::Listed(listed))?;
            self.warnings(doc);
        }
        if gone_entries > 0 {
            self.warnings.push(format!(
                "{doc_url}: {gone_entries} entries say their resource is gone (<expires>, or \
                 change=\"deleted\"): not fetched, and gone from the source for the mirror"
            ));
        }
        self.warnings(doc);
        self.out.documents.push(doc.record(count));
        Ok(())
    }

    /// The parts an index names, in order. The ones that will be fetched are read ahead on
    /// worker threads (parsing is most of an audit's work on the source's side, and a large
    /// index has many parts), while this thread takes their entries in the index's order: the
    /// visitor sees exactly what a walk part after part would show it.
    fn parts(
        &mut self,
        doc_url: &str,
        scope: &Arc<Scope>,
        parts: Vec<Entry>,
        depth: usize,
    ) -> Result<(), SourceError> {
        // What would be fetched, as far as can be told now: a part can still turn out to be
        // a cycle when a nested index before it lists it; it is then skipped below as without
        // reading ahead (the read-ahead is dropped).
        let mut planned = HashSet::new();
        let ahead: Vec<Option<usize>> = parts
            .iter()
            .map(|part| {
                let loc = part.loc.as_str();
                let fetched = !self.visited.contains(loc)
                    && self.docs.filter.admits_part(&part.categories)
                    && depth < MAX_INDEX_DEPTH
                    && scope.check(&part.loc).is_ok()
                    && planned.insert(loc);
                fetched.then(|| planned.len() - 1)
            })
            .collect();
        let locs: Vec<Url> = parts
            .iter()
            .zip(&ahead)
            .filter(|(_, a)| a.is_some())
            .map(|(p, _)| p.loc.clone())
            .collect();
        let docs = self.docs;
        let readers = read_ahead_threads().min(locs.len());
        let (senders, receivers): (Vec<Mutex<Option<Sender<Msg>>>>, Vec<_>) = locs
            .iter()
            .map(|_| {
                let (tx, rx) = crossbeam_channel::bounded::<Msg>(AHEAD_BATCHES);
                (Mutex::new(Some(tx)), Some(rx))
            })
            .unzip();
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|sc| {
            for _ in 0..readers {
                sc.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= locs.len() || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let tx = senders[k].lock().expect("not poisoned").take();
                    if let Some(tx) = tx {
                        read_ahead(docs, &locs[k], scope, &tx);
                    }
                });
            }
            // Owned here, so that leaving this closure in any way (a panic too) drops the
            // receivers and stops the readers before the scope waits for them.
            let mut receivers = receivers;
            let _stop = SetOnDrop(&stop);
            for (part, a) in parts.into_iter().zip(ahead) {
                let loc = part.loc.to_string();
                if let Some(at) = part.md.at {
                    self.part_ats.push(at);
                }
                if !self.visited.insert(loc.clone()) {
                    self.warnings.push(format!(
                        "{doc_url}: line {}: {loc} listed again (cycle); skipped",
                        part.line
                    ));
                    continue;
                }
                if !self.docs.filter.admits_part(&part.categories) {
                    // 2012 draft §3.2: the part aggregates its resources' categories, and
                    // none is asked for: none of its resources would be taken.
                    self.other_category += 1;
                    continue;
                }
                if depth + 1 > MAX_INDEX_DEPTH {
                    self.out.failed_parts.push((
                        loc,
                        format!(
                            "Resource List Indexes nested deeper than {MAX_INDEX_DEPTH} levels"
                        ),
                    ));
                    continue;
                }
                if let Err(reason) = scope.check(&part.loc) {
                    self.out
                        .failed_parts
                        .push((loc, format!("refused: {reason}")));
                    continue;
                }
                let rx = a
                    .and_then(|k| receivers[k].take())
                    .expect("every part fetched here was read ahead");
                // Dropping a part left half-way stops its reader at its next send.
                let result =
                    Ahead::open(rx).and_then(|mut child| self.document(&mut child, depth + 1));
                if let Err(e) = result {
                    self.out.failed_parts.push((loc, e.to_string()));
                }
            }
        });
        Ok(())
    }

    fn warnings(&mut self, doc: &mut dyn Entries) {
        let taken = doc.take_warnings();
        if taken.is_empty() {
            return;
        }
        let url = doc.url().to_string();
        for w in taken {
            self.warnings.push(format!("{url}: {w}"));
        }
    }
}
/// Entries per batch a part's reader sends, and batches in flight per part: what reading
/// ahead holds at most is a few thousand entries per reader.
const AHEAD_BATCH: usize = 64;
const AHEAD_BATCHES: usize = 4;

/// Threads reading an index's parts ahead: one per core (a few at most; the walking thread
/// itself mostly waits for them).
fn read_ahead_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
}

/// Sets the flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What a part's reader sends, in order: `Opened`, `Entries` batches, `End`; or `Failed` at
/// any point (after the entries read before the failure).
enum Msg {
    Opened {
        url: Url,
        index: bool,
    },
    /// Entries, each with the reader's warnings from reading it.
    Entries(Vec<(Entry, Vec<Warning>)>),
    End {
        warnings: Vec<Warning>,
        record: DocumentRecord,
    },
    Failed(SourceError),
}

/// Fetch and read one part of an index on a worker thread, sending everything the walker would
/// have taken from its reader. Returns early once the walker no longer wants the part.
fn read_ahead(docs: &Documents<'_>, loc: &Url, scope: &Scope, tx: &Sender<Msg>) {
    let mut doc = match docs.fetch(loc, scope) {
        Ok(doc) => doc,
        Err(e) => {
            let _ = tx.send(Msg::Failed(e));
            return;
        }
    };
    match doc.header().capability() {
        None | Some(Capability::ResourceList) => {}
        Some(other) => {
            let _ = tx.send(Msg::Failed(SourceError::Unusable {
                url: doc.url.to_string(),
                message: format!("part of a Resource List Index is a {other} document"),
            }));
            return;
        }
    }
    let opened = Msg::Opened {
        url: doc.url.clone(),
        index: doc.header().root == Root::SitemapIndex,
    };
    if tx.send(opened).is_err() {
        return;
    }
    let mut batch = Vec::with_capacity(AHEAD_BATCH);
    let mut count = 0u64;
    loop {
        let last = match doc.reader.next_entry() {
            Ok(Some(e)) => {
                count += 1;
                batch.push((e, doc.reader.take_warnings()));
                if batch.len() < AHEAD_BATCH {
                    continue;
                }
                None
            }
            Ok(None) => Some(Msg::End {
                warnings: doc.reader.take_warnings(),
                record: doc.record(count),
            }),
            Err(e) => Some(Msg::Failed(e.into())),
        };
        let full = std::mem::replace(&mut batch, Vec::with_capacity(AHEAD_BATCH));
        if !full.is_empty() && tx.send(Msg::Entries(full)).is_err() {
            return;
        }
        if let Some(last) = last {
            let _ = tx.send(last);
            return;
        }
    }
}

/// A part read ahead, as the walker takes it.
struct Ahead {
    url: Url,
    index: bool,
    rx: Receiver<Msg>,
    batch: std::vec::IntoIter<(Entry, Vec<Warning>)>,
    warnings: Vec<Warning>,
    record: Option<DocumentRecord>,
}

impl Ahead {
    /// The part once its reader has opened it (or the reason it could not).
    fn open(rx: Receiver<Msg>) -> Result<Ahead, SourceError> {
        match rx.recv() {
            Ok(Msg::Opened { url, index }) => Ok(Ahead {
                url,
                index,
                rx,
                batch: Vec::new().into_iter(),
                warnings: Vec::new(),
                record: None,
            }),
            Ok(Msg::Failed(e)) => Err(e),
            Ok(_) | Err(_) => Err(SourceError::Unusable {
                url: String::new(),
                message: "the part's reader stopped".into(),
            }),
        }
    }
}

impl Entries for Ahead {
    fn url(&self) -> &Url {
        &self.url
    }

    fn is_index(&self) -> bool {
        self.index
    }

    fn next_entry(&mut self) -> Result<Option<Entry>, SourceError> {
        loop {
            if let Some((e, warnings)) = self.batch.next() {
                self.warnings.extend(warnings);
                return Ok(Some(e));
            }
            if self.record.is_some() {
                return Ok(None);
            }
            match self.rx.recv() {
                Ok(Msg::Entries(batch)) => self.batch = batch.into_iter(),
                Ok(Msg::End { warnings, record }) => {
                    self.warnings.extend(warnings);
                    self.record = Some(record);
                }
                Ok(Msg::Failed(e)) => return Err(e),
                Ok(Msg::Opened { .. }) | Err(_) => {
                    return Err(SourceError::Unusable {
                        url: self.url.to_string(),
                        message: "the part's reader stopped".into(),
                    })
                }
            }
        }
    }

    fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    fn record(&self, count: u64) -> DocumentRecord {
        let record = self.record.clone().expect("recorded once read to the end");
        debug_assert_eq!(record.entry_count, count);
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::resourcesync::snapshot;
    use crate::net::{Http, HttpConfig};
    use std::path::Path;
    use url::Url;

    const ORIGIN: &str = "http://sample.example.org/";

    fn http_over(dir: &Path) -> Http {
        Http::new(HttpConfig {
            tries: 1,
            maps: vec![(ORIGIN.to_string(), dir.to_path_buf())],
            ..HttpConfig::default()
        })
    }

    /// Walk and snapshot the same list; they must agree on everything but the streaming
    /// differences the module names.
    fn agree(dir: &Path, top: &str) -> Walked {
        let http = http_over(dir);
        let docs = Documents {
            http: &http,
            options: Default::default(),
            allow_hosts: &[],
            filter: &Default::default(),
            reader: &Default::default(),
            readers: &[],
        };
        let url = Url::parse(top).unwrap();
        let open = || docs.fetch(&url, &docs.scope_for(&url)).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let mut listing =
            crate::engine::listing::Listing::create(scratch.path(), &Default::default()).unwrap();
        let snap = snapshot::read(&docs, open(), &mut listing).unwrap();
        let mut listed = Vec::new();
        let mut refused = Vec::new();
        let walked = walk(&docs, open(), &mut |item| {
            match item {
                Item::Listed(l) => listed.push((l.uri.to_string(), l.declared)),
                Item::Refused(r) => refused.push(r.uri),
            }
            Ok(())
        })
        .unwrap();
        let mut want = Vec::new();
        listing
            .each_listed(|l| want.push((l.uri.to_string(), l.declared)))
            .unwrap();
        assert_eq!(listed, want);
        let want_refused: Vec<_> = snap.refused.iter().map(|r| r.uri.clone()).collect();
        assert_eq!(refused, want_refused);
        assert_eq!(
            (walked.at, walked.completed, walked.anchored, &walked.basis),
            (snap.at, snap.completed, snap.anchored, &snap.basis)
        );
        assert_eq!(walked.documents.len(), snap.documents.len());
        assert_eq!(walked.failed_parts.len(), snap.failed_parts.len());
        walked
    }

    #[test]
    fn walks_an_index_as_a_snapshot_reads_it() {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
        let w = agree(
            &sample,
            "http://sample.example.org/rs/resourcelist-index.xml",
        );
        assert!(w.complete());
        assert_eq!(w.entries, 8);
        let plain = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/syntax/plain");
        let w = agree(&plain, "http://sample.example.org/resourcelist.xml");
        assert!(!w.anchored);
    }

    #[test]
    fn a_missing_part_is_a_failed_part_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample/rs");
        std::fs::create_dir_all(dir.path().join("rs")).unwrap();
        for f in ["resourcelist-index.xml", "resourcelist-1.xml"] {
            std::fs::copy(sample.join(f), dir.path().join("rs").join(f)).unwrap();
        }
        let w = agree(
            dir.path(),
            "http://sample.example.org/rs/resourcelist-index.xml",
        );
        assert!(!w.complete());
        assert_eq!(w.failed_parts.len(), 1);
        assert_eq!(
            w.failed_parts[0].0,
            "http://sample.example.org/rs/resourcelist-2.xml"
        );
    }
}
