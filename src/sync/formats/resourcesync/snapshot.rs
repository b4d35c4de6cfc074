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
use crate::sync::formats::resourcesync::resource_list::{self, Item};
use crate::sync::plan::Listed;
use jiff::Timestamp;
use std::collections::HashSet;

pub use crate::sync::expected::Refused;

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
    /// The index this list is one part of, when it says so.
    pub part_of: Option<String>,
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
    let walked = resource_list::walk(docs, top, &mut |item| {
        match item {
            Item::Listed(mut l) => {
                // A Vec grown by push keeps room for four digests; a list of a million
                // entries holds a million of these.
                l.declared.digests.shrink_to_fit();
                listed.push(l);
            }
            Item::Refused(r) => refused.push(r),
        }
        Ok(())
    })?;
    let twice = keep_the_later_of_twice_listed(&mut listed);
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
        part_of: walked.part_of,
    })
}

/// A URI listed more than once counts once, with its later entry, at the place of its first;
/// a warning names each later entry, in list order.
fn keep_the_later_of_twice_listed(listed: &mut Vec<Listed>) -> Vec<String> {
    let (swaps, gone) = twice_listed(listed);
    let twice: Vec<String> = (0..listed.len())
        .filter(|&j| gone[j])
        .map(|j| {
            let l = &listed[j];
            format!(
                "{}: line {}: {} listed twice; the later entry counts",
                l.document, l.line, l.uri
            )
        })
        .collect();
    keep_the_later(listed, &swaps, &gone);
    twice
}

/// Apply [`twice_listed`]'s answer to `v` (the listed entries, or a vector parallel to them).
pub fn keep_the_later<T>(v: &mut Vec<T>, swaps: &[(usize, usize)], gone: &[bool]) {
    if swaps.is_empty() {
        return;
    }
    for &(first, last) in swaps {
        v.swap(first, last);
    }
    let mut at = 0;
    v.retain(|_| {
        at += 1;
        !gone[at - 1]
    });
}

/// For URIs listed more than once: the swaps that put each one's last entry at the place of
/// its first, and the positions to drop afterwards (every entry but the first of each URI —
/// whose place the last one then holds). Found by sorting positions rather than with a map of
/// URIs, which would hold a second copy of every URI while the list is read.
pub fn twice_listed(listed: &[Listed]) -> (Vec<(usize, usize)>, Vec<bool>) {
    let mut order: Vec<usize> = (0..listed.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        listed[a]
            .uri
            .as_str()
            .cmp(listed[b].uri.as_str())
            .then(a.cmp(&b))
    });
    let mut gone = vec![false; listed.len()];
    let mut swaps = Vec::new();
    for group in order.chunk_by(|&a, &b| listed[a].uri == listed[b].uri) {
        if let [first, .., last] = *group {
            for &j in &group[1..] {
                gone[j] = true;
            }
            swaps.push((first, last));
        }
    }
    (swaps, gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(uri: &str, line: u64) -> Listed {
        Listed {
            uri: url::Url::parse(uri).unwrap(),
            declared: Default::default(),
            media_type: None,
            duplicates: Vec::new(),
            document: "http://x.org/rl.xml".into(),
            line,
            scope: std::sync::Arc::new(crate::net::Scope::for_document(
                &url::Url::parse(uri).unwrap(),
                &[],
            )),
        }
    }

    #[test]
    fn the_later_entry_counts_at_the_first_place() {
        let mut listed = vec![
            entry("http://x.org/a", 1),
            entry("http://x.org/b", 2),
            entry("http://x.org/a", 3),
            entry("http://x.org/c", 4),
            entry("http://x.org/b", 5),
            entry("http://x.org/a", 6),
        ];
        let warnings = keep_the_later_of_twice_listed(&mut listed);
        let kept: Vec<(&str, u64)> = listed.iter().map(|l| (l.uri.as_str(), l.line)).collect();
        assert_eq!(
            kept,
            vec![
                ("http://x.org/a", 6),
                ("http://x.org/b", 5),
                ("http://x.org/c", 4)
            ]
        );
        assert_eq!(
            warnings,
            vec![
                "http://x.org/rl.xml: line 3: http://x.org/a listed twice; the later entry counts",
                "http://x.org/rl.xml: line 5: http://x.org/b listed twice; the later entry counts",
                "http://x.org/rl.xml: line 6: http://x.org/a listed twice; the later entry counts",
            ]
        );
        let mut once = vec![entry("http://x.org/a", 1), entry("http://x.org/b", 2)];
        assert!(keep_the_later_of_twice_listed(&mut once).is_empty());
        assert_eq!(once.len(), 2);
    }
}
