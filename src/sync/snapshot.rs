//! Reading a Resource List (or Resource List Index, or plain Sitemap) into the snapshot a
//! baseline mirrors and an audit compares against: every listed resource, the documents read,
//! the anchor (ResourceSync 1.1 §10.1 step 2), and what was refused or could not be read.
//!
//! A top-level document that cannot be read is fatal (nothing is applied). A part of an index
//! that cannot be read is recorded as a failed part: the other parts still count, but the
//! snapshot is incomplete and no deletion may be derived from it.

use crate::error::SourceError;
use crate::rs::document::{Capability, Root, Syntax};
use crate::store::catalog::DocumentRecord;
use crate::sync::documents::{Documents, OpenedDocument};
use crate::sync::plan::{Declared, Listed};
use jiff::Timestamp;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How deep Resource List Indexes may nest.
const MAX_INDEX_DEPTH: usize = 3;

/// A listed resource the scope refused.
#[derive(Debug, Clone)]
pub struct Refused {
    pub uri: String,
    pub reason: String,
}

/// Everything read from one collection's Resource List.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub listed: Vec<Listed>,
    pub refused: Vec<Refused>,
    pub documents: Vec<DocumentRecord>,
    /// The sync point this snapshot gives: the list's `at` (min of per-part `at`).
    pub at: Option<Timestamp>,
    pub completed: Option<Timestamp>,
    /// False for a plain Sitemap (no `at`): `at` is then the newest `<lastmod>`, if any.
    pub anchored: bool,
    pub basis: String,
    /// Index parts that could not be read (message each).
    pub failed_parts: Vec<String>,
    /// Tolerated oddities, with document and line.
    pub warnings: Vec<String>,
}

impl Snapshot {
    /// True when every document was read: deletions may be derived.
    pub fn complete(&self) -> bool {
        self.failed_parts.is_empty()
    }
}

/// Read the whole snapshot starting from an opened top-level document.
pub fn read(docs: &Documents<'_>, top: OpenedDocument) -> Result<Snapshot, SourceError> {
    let cap = top.header().capability();
    match &cap {
        None | Some(Capability::ResourceList) => {}
        Some(other) => {
            return Err(SourceError::Unusable {
                url: top.url.to_string(),
                message: format!("this is a {other} document; a baseline needs a Resource List"),
            })
        }
    }
    let mut r = SnapshotReader {
        docs,
        snap: Snapshot::default(),
        index_of: HashMap::new(),
        visited: HashSet::new(),
        part_ats: Vec::new(),
    };
    let header = top.header().clone();
    r.visited.insert(top.url.to_string());
    r.document(top, 0)?;
    let mut snap = r.snap;
    let plain =
        header.syntax == Syntax::Plain || header.md.capability.is_none() && !header.alpha_changeset;
    if let Some(at) = header.md.at.filter(|_| !plain) {
        // §10.1 step 2: with per-part `at`, the anchor is the minimum.
        snap.at = r.part_ats.iter().copied().chain([at]).min();
        snap.completed = header.md.completed;
        snap.anchored = true;
        snap.basis = if r.part_ats.is_empty() {
            "at of the Resource List".into()
        } else {
            "minimum at of the Resource List Index parts".into()
        };
    } else {
        snap.at = snap.listed.iter().filter_map(|l| l.declared.lastmod).max();
        snap.anchored = false;
        snap.basis = match header.syntax {
            Syntax::Alpha2012 if header.md.at.is_some() => {
                snap.at = header.md.at;
                "2012-draft DCTERMS.modified (unanchored)".into()
            }
            _ => "plain Sitemap without at: newest lastmod (unanchored)".into(),
        };
    }
    Ok(snap)
}

struct SnapshotReader<'a, 'b> {
    docs: &'a Documents<'b>,
    snap: Snapshot,
    index_of: HashMap<String, usize>,
    visited: HashSet<String>,
    part_ats: Vec<Timestamp>,
}

impl SnapshotReader<'_, '_> {
    fn document(&mut self, mut doc: OpenedDocument, depth: usize) -> Result<(), SourceError> {
        let mut scope = Arc::new(self.docs.scope_for(&doc.url));
        let doc_url: std::sync::Arc<str> = doc.url.as_str().into();
        // A local file lists http(s) resources: its scope is the first entry's origin.
        let mut local = doc.url.scheme() == "file";
        let mut count = 0u64;
        if doc.header().root == Root::SitemapIndex {
            let mut parts = Vec::new();
            while let Some(e) = doc.reader.next_entry()? {
                count += 1;
                parts.push(e);
            }
            self.warnings(&mut doc);
            self.snap.documents.push(doc.record(count));
            for part in parts {
                let loc = part.loc.to_string();
                if let Some(at) = part.md.at {
                    self.part_ats.push(at);
                }
                if !self.visited.insert(loc.clone()) {
                    self.snap.warnings.push(format!(
                        "{doc_url}: line {}: {loc} listed again (cycle); skipped",
                        part.line
                    ));
                    continue;
                }
                if depth + 1 > MAX_INDEX_DEPTH {
                    self.snap.failed_parts.push(format!(
                        "{loc}: Resource List Indexes nested deeper than {MAX_INDEX_DEPTH} levels"
                    ));
                    continue;
                }
                if let Err(reason) = scope.check(&part.loc) {
                    self.snap
                        .failed_parts
                        .push(format!("{loc}: refused: {reason}"));
                    continue;
                }
                let mark = self.snap.listed.len();
                let result = self
                    .docs
                    .fetch(&part.loc, &scope)
                    .and_then(|child| self.part(child, depth + 1));
                if let Err(e) = result {
                    // Nothing from a part that failed half-way is kept.
                    for l in self.snap.listed.drain(mark..) {
                        self.index_of.remove(l.uri.as_str());
                    }
                    self.snap.failed_parts.push(e.to_string());
                }
            }
            return Ok(());
        }
        while let Some(e) = doc.reader.next_entry()? {
            count += 1;
            if local {
                local = false;
                scope = Arc::new(self.docs.scope_for(&e.loc));
                self.snap.warnings.push(format!(
                    "{doc_url}: a local document; resources accepted from {} (its first entry), --allow-host widens",
                    scope.describe()
                ));
            }
            if let Err(reason) = scope.check(&e.loc) {
                self.snap.refused.push(Refused {
                    uri: e.loc.to_string(),
                    reason: format!("{reason} (listed in {doc_url}, line {})", e.line),
                });
                continue;
            }
            let listed = Listed {
                duplicates: e.duplicates().into_iter().map(|l| l.href.clone()).collect(),
                declared: Declared {
                    lastmod: e.lastmod,
                    length: e.md.length,
                    digests: e.md.hash,
                },
                media_type: e.md.media_type,
                uri: e.loc,
                document: doc_url.clone(),
                line: e.line,
                scope: scope.clone(),
            };
            match self.index_of.get(listed.uri.as_str()) {
                Some(&i) => {
                    self.snap.warnings.push(format!(
                        "{doc_url}: line {}: {} listed twice; the later entry counts",
                        listed.line, listed.uri
                    ));
                    self.snap.listed[i] = listed;
                }
                None => {
                    self.index_of
                        .insert(listed.uri.to_string(), self.snap.listed.len());
                    self.snap.listed.push(listed);
                }
            }
        }
        self.warnings(&mut doc);
        self.snap.documents.push(doc.record(count));
        Ok(())
    }

    fn part(&mut self, doc: OpenedDocument, depth: usize) -> Result<(), SourceError> {
        match doc.header().capability() {
            None | Some(Capability::ResourceList) => self.document(doc, depth),
            Some(other) => Err(SourceError::Unusable {
                url: doc.url.to_string(),
                message: format!("part of a Resource List Index is a {other} document"),
            }),
        }
    }

    fn warnings(&mut self, doc: &mut OpenedDocument) {
        let url = doc.url.to_string();
        for w in doc.reader.take_warnings() {
            self.snap.warnings.push(format!("{url}: {w}"));
        }
    }
}
