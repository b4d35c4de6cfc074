//! A collection's `rs:ln rel="describedby"` documents (IFCC-0001): the site's (from the Source
//! Description) and the collection's (from its Capability List, else its entry in the Source
//! Description), fetched with every run of the collection and read for a title and an author
//! (`rs::metadata`); the run keeps each state that changed (`store::source_metadata`). A
//! document that cannot be fetched is a warning: the mirror keeps the state it had.

use crate::engine::discover::Collection;
use crate::engine::documents::{self, Documents};
use crate::store::source_metadata::{MetadataState, Role};
use sha2::Digest as _;
use url::Url;

/// Metadata documents larger than this are not kept (a title and an author need little).
const MAX_BYTES: usize = 1024 * 1024;

/// Where a collection's metadata is ([`Collection::described`]).
#[derive(Debug, Clone)]
pub(crate) struct Described {
    pub collection: String,
    pub site: Option<Url>,
    pub own: Option<Url>,
}

impl Collection {
    /// Where this collection's metadata is.
    pub(crate) fn described(&self) -> Described {
        Described {
            collection: self.id.clone(),
            site: self.site_describedby.clone(),
            own: self.describedby.clone(),
        }
    }
}

/// Fetch and read the metadata documents `c` names; what fails is said in `warnings`.
pub(crate) fn fetch(
    docs: &Documents<'_>,
    c: &Described,
    warnings: &mut Vec<String>,
) -> Vec<MetadataState> {
    let mut out = Vec::new();
    for (role, url) in [(Role::Site, &c.site), (Role::Collection, &c.own)] {
        let Some(url) = url else { continue };
        let got = match documents::fetch(docs, url, &docs.scope_for(url)) {
            Ok(g) => g,
            Err(e) => {
                warnings.push(format!(
                    "{url}: the {} metadata (rs:ln rel=\"describedby\") could not be read: {e}; \
                     the mirror keeps what it had",
                    role.as_str()
                ));
                continue;
            }
        };
        let doc = got.doc();
        if doc.bytes.len() > MAX_BYTES {
            warnings.push(format!(
                "{url}: the {} metadata is larger than {MAX_BYTES} bytes: not kept",
                role.as_str()
            ));
            continue;
        }
        let read = crate::rs::metadata::read(doc.bytes);
        if read.format == "unrecognised" {
            warnings.push(format!(
                "{url}: the {} metadata gives no title or author that rsmirror reads (Atom, \
                 HTML <title> and <meta name=\"author\">, Dublin Core): kept, not used",
                role.as_str()
            ));
        }
        out.push(MetadataState {
            collection: c.collection.clone(),
            role,
            url: url.to_string(),
            sha256: hex::encode(sha2::Sha256::digest(doc.bytes)),
            media_type: doc.media_type.map(str::to_string),
            bytes: doc.bytes.to_vec(),
            format: read.format.to_string(),
            title: read.title,
            author: read.author,
        });
    }
    out
}
