//! What a source lists now, as the engine compares it with the mirror (`audit`) and plans
//! from it: each format's walk of its documents hands [`Item`]s to a visitor, and says what it
//! walked ([`Walked`]). Format-neutral: a Resource List, an ARC sitemap and what a fourth
//! format lists all arrive in this shape.

use crate::engine::plan::Listed;
use crate::store::catalog::DocumentRecord;
use jiff::Timestamp;

/// A listed resource the scope refused.
#[derive(Debug, Clone)]
pub struct Refused {
    pub uri: String,
    pub reason: String,
}

/// Warnings, kept up to a bound (a list of a million oddities must not cost a million strings)
/// and counted beyond it.
#[derive(Debug, Default)]
pub struct Warnings {
    list: Vec<String>,
    dropped: u64,
}

impl Warnings {
    pub const MAX: usize = 1000;

    pub(crate) fn push(&mut self, w: String) {
        if self.list.len() < Self::MAX {
            self.list.push(w);
        } else {
            self.dropped += 1;
        }
    }

    pub(crate) fn into_vec(mut self) -> Vec<String> {
        if self.dropped > 0 {
            self.list
                .push(format!("... and {} more warnings", self.dropped));
        }
        self.list
    }
}

/// What the visitor is handed. (Not boxed: nearly every item is a listed entry, handed over
/// once; a box would cost an allocation per entry to save the rare refusal some bytes.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Item {
    Listed(Listed),
    /// A listed resource the scope refused.
    Refused(Refused),
}

/// What was walked, besides the entries.
#[derive(Debug, Default)]
pub struct Walked {
    pub documents: Vec<DocumentRecord>,
    pub at: Option<Timestamp>,
    pub completed: Option<Timestamp>,
    pub anchored: bool,
    pub basis: String,
    /// Index parts that could not be read: (part URL, why).
    pub failed_parts: Vec<(String, String)>,
    pub warnings: Vec<String>,
    /// Entries handed to the visitor (listed and refused).
    pub entries: u64,
    /// The index this list says it is one part of (`rs:ln rel="index"` on a urlset): alone,
    /// it is not the whole collection.
    pub part_of: Option<String>,
}

impl Walked {
    #[cfg(test)]
    /// True when every document was read in full.
    pub(crate) fn complete(&self) -> bool {
        self.failed_parts.is_empty()
    }
}
