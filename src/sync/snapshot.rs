//! Reading a Resource List (or Resource List Index, or plain Sitemap) into the snapshot a
//! baseline mirrors and an audit compares against: every listed resource, the documents read,
//! the anchor (ResourceSync 1.1 §10.1 step 2), and what was refused or could not be read.
//!
//! A top-level document that cannot be read is fatal (nothing is applied). A part of an index
//! that cannot be read is recorded as a failed part: the other parts still count (nothing from
//! the failed part itself is kept), but the snapshot is incomplete and no deletion may be
//! derived from it. The walk over lists and indexes is `resource_list::walk`, which audit
//! streams; here its entries are collected.

use crate::error::SourceError;
use crate::store::catalog::DocumentRecord;
use crate::sync::documents::{Documents, OpenedDocument};
use crate::sync::plan::Listed;
use crate::sync::resource_list::{self, Item};
use jiff::Timestamp;
use std::collections::{HashMap, HashSet};

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
    let mut listed: Vec<Listed> = Vec::new();
    let mut refused = Vec::new();
    let mut index_of: HashMap<String, usize> = HashMap::new();
    let mut twice = Vec::new();
    let walked = resource_list::walk(docs, top, &mut |item| {
        match item {
            Item::Listed(l) => match index_of.get(l.uri.as_str()) {
                Some(&i) => {
                    twice.push(format!(
                        "{}: line {}: {} listed twice; the later entry counts",
                        l.document, l.line, l.uri
                    ));
                    listed[i] = l;
                }
                None => {
                    index_of.insert(l.uri.to_string(), listed.len());
                    listed.push(l);
                }
            },
            Item::Refused(r) => refused.push(r),
        }
        Ok(())
    })?;
    if !walked.failed_parts.is_empty() {
        // Nothing from a part that failed half-way is kept.
        let failed: HashSet<&str> = walked
            .failed_parts
            .iter()
            .map(|(u, _)| u.as_str())
            .collect();
        listed.retain(|l| !failed.contains(&*l.document));
    }
    let mut warnings = walked.warnings;
    warnings.extend(twice);
    Ok(Snapshot {
        listed,
        refused,
        documents: walked.documents,
        at: walked.at,
        completed: walked.completed,
        anchored: walked.anchored,
        basis: walked.basis,
        failed_parts: walked
            .failed_parts
            .into_iter()
            .map(|(url, why)| format!("{url}: {why}"))
            .collect(),
        warnings,
    })
}
