//! The reader contract: a format that only reads. The engine fetches every document a reader
//! asks for, hands it over as bytes ([`Doc`]), and applies what the reader says the source
//! publishes ([`Entry`]); the reader never holds the writer, the summary, the network or the
//! catalog. A harvest is a conversation: [`Reader::start`] names the first document,
//! each [`Reader::read`] names the next ([`Next`]) until the reader says it is done.
//!
//! A reader that keeps state between documents (an OAI-PMH `resumptionToken`) says it with
//! [`Reader::checkpoint`]; the engine stores it in the same transaction as what the document
//! brought, and hands it back to [`Reader::start`] after a harvest killed between documents,
//! so that no document is fetched twice.
//!
//! The contract sits in the engine, below the formats that keep it (as rustic_core's
//! `ReadSource`): `formats/oai/` (OAI-PMH 2.0) and `formats/iiif/` (IIIF Change Discovery API
//! 1.0) each give a [`Registration`] (`formats::readers`), and the commands hand the list down
//! to the engine with the documents ([`crate::engine::documents::Documents::readers`]).

use crate::model::Change;
use jiff::Timestamp;
use url::Url;

/// A document the engine fetched for a reader.
#[derive(Debug, Clone, Copy)]
pub struct Doc<'a> {
    /// Where it was fetched (after redirects).
    pub url: &'a Url,
    /// The `Content-Type` it was served with, as served (`None`: a local file, or none sent).
    pub media_type: Option<&'a str>,
    pub bytes: &'a [u8],
}

pub use crate::model::ReaderOptions as Options;

/// Where a harvest starts.
#[derive(Debug, Clone, Default)]
pub struct Start<'a> {
    /// The collection's sync point: `None` harvests everything (a baseline).
    pub since: Option<Timestamp>,
    /// What [`Reader::checkpoint`] said after the last document a killed harvest applied.
    pub resume: Option<&'a str>,
}

/// What to do after a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Fetch this document and hand it to [`Reader::read`].
    Fetch(Url),
    /// The harvest is complete.
    Done,
}

/// Where an entry's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bytes {
    /// In the document itself (an OAI-PMH record's metadata), with their media type.
    Inline {
        bytes: Vec<u8>,
        media_type: &'static str,
    },
    /// At this URL: the engine fetches them (a IIIF Manifest).
    At(Url),
    /// None: a deletion.
    None,
}

/// One thing the source publishes: a state of a resource, or its deletion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The resource's identity in the mirror (an OAI identifier is a URI: `oai:host:1`).
    pub uri: Url,
    /// The change the source states; `None`: only that the resource is as given.
    pub change: Option<Change>,
    /// The source's time for this state (an OAI datestamp, an activity's `endTime`).
    pub time: Option<Timestamp>,
    pub bytes: Bytes,
}

/// A document the reader cannot read: the harvest stops, nothing of that document applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url}: {message}")]
pub struct ReadError {
    pub url: String,
    pub message: String,
}

impl ReadError {
    pub fn new(url: &Url, message: impl Into<String>) -> ReadError {
        ReadError {
            url: url.to_string(),
            message: message.into(),
        }
    }
}

/// A format that reads a source document by document.
pub trait Reader: Send {
    /// The first document to fetch from `base` (the URL that identifies the collection).
    fn start(&mut self, base: &Url, from: Start<'_>) -> Result<Url, ReadError>;

    /// Read one document the engine fetched: what it publishes goes to `out` in the order
    /// the source means it to be applied (oldest first); the result says what to fetch next.
    fn read(&mut self, doc: Doc<'_>, out: &mut Vec<Entry>) -> Result<Next, ReadError>;

    /// State to store with what the last document brought, so that a harvest killed after it
    /// resumes with the next document (`None`: nothing to resume; a killed harvest starts over).
    fn checkpoint(&self) -> Option<String> {
        None
    }

    /// The sync point the documents read justify, once [`Next::Done`] was said, with its
    /// basis in words (`None`: the collection's sync point stays).
    fn sync_point(&self) -> Option<(Timestamp, String)>;

    /// Oddities read past (a publisher's deviation from its specification), each naming the
    /// document; drained by the engine after each document.
    fn warnings(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// Whether a baseline's listing is the whole collection, so that resources the mirror
    /// holds and the harvest did not name are gone (false for a stream of changes whose
    /// beginning may have been pruned).
    fn lists_everything(&self) -> bool {
        false
    }
}

/// How a format of this kind plugs in: one of these in `formats::readers`.
pub struct Registration {
    pub kind: crate::model::SourceKind,
    /// The format's name in messages ("OAI-PMH").
    pub name: &'static str,
    /// Whether `doc` (fetched from the URL the user gave, or one discovery followed) is one of
    /// this format's documents: `Some` with what was read past to say so (a missing media
    /// type parameter, a context out of order), `None` when it is not.
    pub recognise: fn(Doc<'_>) -> Option<Vec<String>>,
    /// The URL that identifies the collection `doc` belongs to, with `options` in it where
    /// they select what is harvested (an OAI-PMH base URL with its `metadataPrefix` and
    /// `set`): the collection's name in the catalog, and the `base` of [`Reader::start`].
    pub collection: fn(Doc<'_>, &Options) -> Result<Url, ReadError>,
    /// A reader for one harvest.
    pub reader: fn() -> Box<dyn Reader>,
}
