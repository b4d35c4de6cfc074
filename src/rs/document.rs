//! The typed items the ResourceSync readers yield: a document's header (root element,
//! document-level `rs:md` / `rs:ln`) and its entries (`<url>` / `<sitemap>`), in one shape for
//! ResourceSync 1.1, 1.0, the 2013 beta and 2012 alpha drafts, and plain Sitemaps. The readers
//! (`sitemap.rs`) fill these; nothing here reads bytes or touches the network.

use crate::rs::digest::Digest;
use jiff::Timestamp;
use std::fmt;
use url::Url;

/// The sitemap namespace (`urlset`, `sitemapindex`, `url`, `loc`, ...).
pub const SITEMAP_NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";
/// The ResourceSync namespace; the trailing slash is part of it.
pub const RS_NS: &str = "http://www.openarchives.org/rs/terms/";
/// Aliases seen in the wild, accepted with a warning (ResourceSync digest §1).
pub const RS_NS_ALIASES: &[&str] = &[
    "http://www.openarchives.org/rs/terms",
    "http://resourcesync.org/schemas/resync/0.9",
];
/// The 2012 draft's relation for a mirror of a resource (1.0 and 1.1: `duplicate`).
pub const MIRROR_2012_REL: &str = "http://www.openarchives.org/rs/mirror";

/// The XHTML namespace the 2012 draft used for `xhtml:link` / `xhtml:meta`.
pub const XHTML_NS: &str = "http://www.w3.org/1999/xhtml";

/// `<urlset>` or `<sitemapindex>`: the only way to tell a list from its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    Urlset,
    SitemapIndex,
}

/// Which generation of the syntax a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// A Sitemap with no ResourceSync metadata at the root.
    Plain,
    /// The August 2012 alpha draft (`rs:type="changeset"`, `rs:fixity`, `rs:size`,
    /// `xhtml:meta DCTERMS.modified`, `lastmod rs:type`, `expires`).
    Alpha2012,
    /// 2013 beta drafts (`modified=` on the root `rs:md`).
    Beta2013,
    /// ResourceSync 1.0 / 1.1 (`rs:md capability=` with `at`/`from`).
    V1,
}

/// `rs:md/@capability` (ResourceSync 1.1 §2), compared case-insensitively on input.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Capability {
    Description,
    CapabilityList,
    ResourceList,
    ResourceDump,
    ResourceDumpManifest,
    ChangeList,
    ChangeDump,
    ChangeDumpManifest,
    ResourceListArchive,
    ResourceDumpArchive,
    ChangeListArchive,
    ChangeDumpArchive,
    /// Kept verbatim (lower-cased), logged, otherwise ignored.
    Other(String),
}

impl Capability {
    pub(crate) fn parse(s: &str) -> Capability {
        match s.trim().to_ascii_lowercase().as_str() {
            "description" => Capability::Description,
            "capabilitylist" => Capability::CapabilityList,
            "resourcelist" => Capability::ResourceList,
            "resourcedump" => Capability::ResourceDump,
            "resourcedump-manifest" => Capability::ResourceDumpManifest,
            "changelist" => Capability::ChangeList,
            "changedump" => Capability::ChangeDump,
            "changedump-manifest" => Capability::ChangeDumpManifest,
            "resourcelist-archive" => Capability::ResourceListArchive,
            "resourcedump-archive" => Capability::ResourceDumpArchive,
            "changelist-archive" => Capability::ChangeListArchive,
            "changedump-archive" => Capability::ChangeDumpArchive,
            other => Capability::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Capability::Description => "description",
            Capability::CapabilityList => "capabilitylist",
            Capability::ResourceList => "resourcelist",
            Capability::ResourceDump => "resourcedump",
            Capability::ResourceDumpManifest => "resourcedump-manifest",
            Capability::ChangeList => "changelist",
            Capability::ChangeDump => "changedump",
            Capability::ChangeDumpManifest => "changedump-manifest",
            Capability::ResourceListArchive => "resourcelist-archive",
            Capability::ResourceDumpArchive => "resourcedump-archive",
            Capability::ChangeListArchive => "changelist-archive",
            Capability::ChangeDumpArchive => "changedump-archive",
            Capability::Other(s) => s,
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `rs:md/@change`: the model's change (created, updated, deleted).
pub use crate::model::Change;

/// A media type as a document gives it: the common ones are not allocated (a list of a million
/// entries names one or two types a million times, and a string each was one of the handful
/// of allocations that reading an entry cost). Reads as a `&str`.
pub type MediaType = std::borrow::Cow<'static, str>;

/// `value` as a [`MediaType`]: the same text, borrowed from a table when it is a common type.
pub(crate) fn media_type(value: &str) -> MediaType {
    const COMMON: &[&str] = &[
        "text/plain",
        "text/html",
        "text/xml",
        "text/csv",
        "text/css",
        "text/turtle",
        "text/markdown",
        "text/javascript",
        "application/xml",
        "application/json",
        "application/ld+json",
        "application/rdf+xml",
        "application/pdf",
        "application/octet-stream",
        "application/zip",
        "application/gzip",
        "application/javascript",
        "application/xhtml+xml",
        "image/jpeg",
        "image/png",
        "image/gif",
        "image/tiff",
        "image/webp",
        "image/svg+xml",
        "audio/mpeg",
        "video/mp4",
    ];
    match COMMON.iter().find(|&&c| c == value) {
        Some(c) => MediaType::Borrowed(c),
        None => MediaType::Owned(value.to_string()),
    }
}

/// The attributes of one `rs:md` (document- or item-level); several `rs:md` in one element
/// are merged (a warning says so).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Md {
    pub capability: Option<Capability>,
    pub at: Option<Timestamp>,
    pub completed: Option<Timestamp>,
    pub from: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub change: Option<Change>,
    pub datetime: Option<Timestamp>,
    pub hash: Vec<Digest>,
    pub length: Option<u64>,
    pub media_type: Option<MediaType>,
    pub encoding: Option<String>,
    /// Dump manifest path exactly as written (leading `/` or not); resolved elsewhere.
    pub path: Option<String>,
}

/// One `rs:ln` (or 2012 `xhtml:link`).
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Lower-cased (`describedBy` = `describedby`); several space-separated rels kept as written.
    pub rel: String,
    pub href: Url,
    /// 1..=999999, lower is preferred; absent = 999999.
    pub pri: Option<u32>,
    pub media_type: Option<String>,
    pub length: Option<u64>,
    pub hash: Vec<Digest>,
    pub modified: Option<Timestamp>,
    pub path: Option<String>,
}

impl Link {
    pub(crate) fn has_rel(&self, rel: &str) -> bool {
        self.rel.split_ascii_whitespace().any(|r| r == rel)
    }
}

/// Everything about a document that is not an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub root: Root,
    pub syntax: Syntax,
    /// Document-level metadata (`rs:md` child of the root; beta `modified=` is mapped to
    /// `at` for snapshot documents and to `from` for change documents; alpha
    /// `DCTERMS.modified` likewise).
    pub md: Md,
    pub links: Vec<Link>,
    /// The 2012 alpha `rs:type="changeset"` on the root: a Change List in old clothes.
    pub alpha_changeset: bool,
    /// Namespace URIs declared on the root element (a Sitemap extension such as SCP's
    /// announces itself this way).
    pub namespaces: Vec<String>,
}

impl Header {
    /// The capability, with the alpha changeset mapped to `changelist`.
    pub fn capability(&self) -> Option<Capability> {
        if self.alpha_changeset {
            return Some(Capability::ChangeList);
        }
        self.md.capability.clone()
    }

    pub(crate) fn link(&self, rel: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.has_rel(rel))
    }

    pub(crate) fn is_index(&self) -> bool {
        self.root == Root::SitemapIndex
    }
}

/// One `<url>` or `<sitemap>` element.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Line of the element's start tag in the (decompressed) document, 1-based.
    pub line: u64,
    /// `<loc>`, trimmed and resolved against the document URL.
    pub loc: Url,
    pub lastmod: Option<Timestamp>,
    pub md: Md,
    pub links: Vec<Link>,
    /// Its categories (2012 draft §3.1.7; on a Sitemap Index's part, §3.2, those of the
    /// part's resources, aggregated): its `xhtml:meta`, and its `xhtml:link` with a Dublin Core
    /// `rel` ([`crate::model::Category::is_category_rel`]).
    pub categories: Vec<crate::model::Category>,
    /// Why this entry cannot be used (a `<lastmod>` that is no datetime), when it cannot: the
    /// entry is refused, the rest of the document is read.
    pub invalid: Option<String>,
}

impl Entry {
    /// Event time for change documents: `datetime`, else `lastmod` (1.0, 2012 draft).
    pub fn event_time(&self) -> Option<Timestamp> {
        self.md.datetime.or(self.lastmod)
    }

    /// Mirrors in preference order (`pri`, absent = 999999): `rel="duplicate"` (1.0, 1.1), and
    /// the 2012 draft's `xhtml:link rel="alternate http://www.openarchives.org/rs/mirror"`.
    pub(crate) fn duplicates(&self) -> Vec<&Link> {
        let mut d: Vec<&Link> = self
            .links
            .iter()
            .filter(|l| l.has_rel("duplicate") || l.has_rel(MIRROR_2012_REL))
            .collect();
        d.sort_by_key(|l| l.pri.unwrap_or(999_999));
        d
    }
}

/// Something odd the reader tolerated; reported by `inspect` and `-v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub line: u64,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_media_type_reads_as_written_and_common_ones_are_not_allocated() {
        for t in [
            "text/plain",
            "application/json",
            "image/svg+xml",
            "text/plain; charset=utf-8",
            "Text/Plain",
            "application/x-unknown",
            "",
        ] {
            assert_eq!(media_type(t), t);
        }
        assert!(matches!(media_type("text/plain"), MediaType::Borrowed(_)));
        assert!(matches!(media_type("video/mp4"), MediaType::Borrowed(_)));
        assert!(matches!(media_type("Text/Plain"), MediaType::Owned(_)));
        assert!(matches!(media_type("text/plain "), MediaType::Owned(_)));
    }
}
