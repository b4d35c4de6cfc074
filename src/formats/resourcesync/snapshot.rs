//! Reading a Resource List (or Resource List Index, or plain Sitemap) into the snapshot a
//! baseline mirrors and an audit compares against: every listed resource, the documents read,
//! the anchor (ResourceSync 1.1 §10.1 step 2), and what was refused or could not be read.
//!
//! A top-level document that cannot be read is fatal (nothing is applied). A part of an index
//! that cannot be read is recorded as a failed part: the other parts still count (nothing from
//! the failed part itself is kept), but the snapshot is incomplete and no deletion may be
//! derived from it. The walk over lists and indexes is `resource_list::walk`, which audit
//! streams; here its entries are collected.

use crate::engine::documents::{Documents, OpenedDocument};
use crate::engine::listing::Listing;
use crate::error::{Error, SourceError};
use crate::formats::resourcesync::resource_list::{self, Item};
use crate::store::StoreError;

pub use crate::engine::snapshot::{Refused, Snapshot};

/// Read the whole snapshot starting from an opened top-level document, its entries into
/// `listing` (on disk: a list of ten million entries is not held in memory); the snapshot's
/// `listed` stays empty.
pub(crate) fn read(
    docs: &Documents<'_>,
    top: OpenedDocument,
    listing: &mut Listing,
) -> Result<Snapshot, Error> {
    let mut refused = Vec::new();
    let mut stored: Result<(), StoreError> = Ok(());
    let walked = resource_list::walk(docs, top, &mut |item| {
        match item {
            Item::Listed(l) => {
                let document = l.document.clone();
                if let Err(e) = listing.push(l) {
                    stored = Err(e);
                    // Stops the walk; the store's error is the one reported.
                    return Err(SourceError::Unusable {
                        url: document.to_string(),
                        message: "the listing could not be written".into(),
                    });
                }
            }
            Item::Refused(r) => refused.push(r),
        }
        Ok(())
    });
    stored?;
    let walked = walked?;
    // Nothing from a part that failed half-way is kept.
    for (url, _) in &walked.failed_parts {
        listing.drop_document(url)?;
    }
    let mut warnings = walked.warnings;
    warnings.extend(listing.take_warnings());
    Ok(Snapshot {
        refused,
        skipped: Vec::new(),
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
