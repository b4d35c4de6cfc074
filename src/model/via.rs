//! How a state's bytes arrived in the mirror (`versions.arrived_via`), one word per way a
//! format hands over bytes.

use crate::model::catalog_text;

/// `versions.arrived_via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// A GET of the resource's URL (or a `--map` folder standing in for it).
    Http,
    /// An entry of a Resource Dump or Change Dump package (ResourceSync 1.1 §11, §13).
    Dump,
    /// A page of an SCP collection: its JSON as published (SCP 0.1).
    Scp,
    /// A page an ARC sitemap or delta feed listed.
    Arc,
    /// No bytes: a deletion.
    Tombstone,
    /// Not fetched: the list's SHA-256 named an object the store already held, re-hashed and
    /// found to be what the list declares (a mirror after `catalog restore` or `rebuild`, or
    /// the same bytes under another URL).
    Held,
    /// Inside a document the source published, one record among others (an OAI-PMH
    /// `ListRecords` response): the record's metadata as published.
    Record,
    /// A memento of the resource the source offers (a `rel="memento"` link, or its TimeGate's
    /// or TimeMap's, RFC 7089): an earlier state, with its own datetime.
    Memento,
    /// The mirror's previous state with a patch the source offered applied (a Change List's
    /// `rel=".../rs/terms/patch"`, the 2012 draft's `.../rs/partial`), kept because the result
    /// has the digest the change declares.
    Patch,
    /// No bytes: the source is followed by metadata alone (`--metadata-only`); the version is
    /// what the list or the change declares (URI, datetime, change, lastmod, length, digests).
    Metadata,
}

catalog_text!(Via, "arrival way", {
    Http => "http",
    Dump => "dump",
    Scp => "scp",
    Arc => "arc",
    Tombstone => "tombstone",
    Held => "held",
    Record => "record",
    Memento => "memento",
    Patch => "patch",
    Metadata => "metadata",
});
