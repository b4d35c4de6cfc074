//! Opening source documents: a URL through the network layer (scope-checked, conditional when
//! validators are known) or the user's own local file, then the streaming reader over it.

use crate::engine::reader::Doc;
use crate::error::SourceError;
use crate::model::SourceKind;
use crate::net::agent::{Body, DocumentResponse};
use crate::net::{Http, Scope, Validators};
use crate::rs::document::{Header, Root, Syntax};
use crate::rs::sitemap::{self, ReadOptions, SitemapReader};
use crate::store::catalog::DocumentRecord;
use std::io::{BufRead, Read};
use std::sync::{Arc, Mutex};
use url::Url;

/// An opened document: its header has been read, its entries have not.
pub struct OpenedDocument {
    /// The URL after redirects (entries are resolved and scoped against it).
    pub url: Url,
    pub reader: SitemapReader<Box<dyn BufRead>>,
    pub validators: Validators,
    /// The bytes received so far, while they fit [`RECORDED_BYTES`] (fetched documents only):
    /// a document that turns out to be another protocol's (an SCP sitemap.xml) is handed to
    /// its reader without a second request.
    recorded: Option<Arc<Mutex<Recording>>>,
}

/// How much of a fetched document is kept for [`OpenedDocument::into_bytes`].
pub const RECORDED_BYTES: usize = 4 << 20;

#[derive(Default)]
struct Recording {
    bytes: Vec<u8>,
    /// More arrived than [`RECORDED_BYTES`]: the recording is incomplete and dropped.
    overflow: bool,
}

/// Keeps what passes through it in a [`Recording`].
struct Recorder<R> {
    inner: R,
    to: Arc<Mutex<Recording>>,
}

impl<R: Read> Read for Recorder<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut r = self.to.lock().expect("recording lock");
        if !r.overflow {
            if r.bytes.len() + n > RECORDED_BYTES {
                r.overflow = true;
                r.bytes = Vec::new();
            } else {
                r.bytes.extend_from_slice(&buf[..n]);
            }
        }
        Ok(n)
    }
}

impl OpenedDocument {
    /// The whole document as received, for another protocol's reader: the rest of its entries
    /// are read through (and dropped) so that every byte has arrived. `None` for a local file,
    /// a document larger than [`RECORDED_BYTES`], or one the Sitemap reader cannot read to
    /// its end (the caller fetches it again).
    pub(crate) fn into_bytes(mut self) -> Option<Vec<u8>> {
        let recorded = self.recorded.take()?;
        loop {
            match self.reader.next_entry() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return None,
            }
        }
        drop(self.reader);
        let r = std::mem::take(&mut *recorded.lock().ok()?);
        (!r.overflow).then_some(r.bytes)
    }

    pub(crate) fn header(&self) -> &Header {
        self.reader.header()
    }

    /// The catalog's record of this document once `entry_count` entries were read.
    pub(crate) fn record(&self, entry_count: u64) -> DocumentRecord {
        let h = self.header();
        DocumentRecord {
            url: self.url.to_string(),
            capability: h.capability().map(|c| c.name().to_string()),
            root: match h.root {
                Root::Urlset => "urlset",
                Root::SitemapIndex => "sitemapindex",
            },
            syntax: syntax_name(h.syntax),
            at: h.md.at,
            completed: h.md.completed,
            from: h.md.from,
            until: h.md.until,
            entry_count,
            etag: self.validators.etag.clone(),
            last_modified: self.validators.last_modified.clone(),
        }
    }
}

pub(crate) fn syntax_name(s: Syntax) -> &'static str {
    match s {
        Syntax::Plain => "plain",
        Syntax::Alpha2012 => "alpha2012",
        Syntax::Beta2013 => "beta2013",
        Syntax::V1 => "v1",
    }
}

/// Fetches and opens documents for one command.
pub struct Documents<'a> {
    pub http: &'a Http,
    pub options: ReadOptions,
    pub allow_hosts: &'a [String],
    /// The resources the mirror takes of this source (`--include`/`--exclude`): what a list
    /// names that it leaves out is not planned ([`crate::engine::listing::Listing`]), nor a
    /// change applied ([`crate::engine::changes::Changes`]).
    pub filter: &'a crate::model::Filter,
    /// What the readers of formats that only read are asked (`--oai-prefix`, `--oai-set`).
    pub reader: &'a crate::engine::reader::Options,
    /// The formats that only read, as the commands registered them (`formats::readers`):
    /// discovery asks each whether a document is one of its.
    pub readers: &'a [crate::engine::reader::Registration],
}

impl Documents<'_> {
    /// Open `url`. A `file:` URL is read from disk (only the user's own SOURCE is ever a file:
    /// URL: the scope refuses `file:` inside documents). `Ok(None)` is a 304.
    pub(crate) fn open(
        &self,
        url: &Url,
        scope: &Scope,
        validators: &Validators,
    ) -> Result<Option<OpenedDocument>, SourceError> {
        if url.scheme() == "file" {
            let path = url.to_file_path().map_err(|_| SourceError::Unusable {
                url: url.to_string(),
                message: "not a local file path".into(),
            })?;
            let file = std::fs::File::open(&path).map_err(|source| SourceError::Local {
                path: path.display().to_string(),
                source,
            })?;
            let mut file = std::io::BufReader::new(file);
            let head = file.fill_buf().map_err(|source| SourceError::Local {
                path: path.display().to_string(),
                source,
            })?;
            if let Some(what) = not_a_document(head) {
                return Err(SourceError::Unusable {
                    url: url.to_string(),
                    message: what.into(),
                });
            }
            let reader = sitemap::open(file, url, self.options)?;
            return Ok(Some(OpenedDocument {
                url: url.clone(),
                reader,
                validators: Validators::default(),
                recorded: None,
            }));
        }
        match self.http.get(url, scope, validators)? {
            DocumentResponse::NotModified => Ok(None),
            DocumentResponse::Body(body) => {
                // JSON where a Sitemap was expected: an ARC sitemap (told apart by content).
                let recorded = Arc::new(Mutex::new(Recording::default()));
                let recorder = Recorder {
                    inner: body.reader,
                    to: Arc::clone(&recorded),
                };
                let mut input = std::io::BufReader::with_capacity(64 * 1024, recorder);
                let head = input
                    .fill_buf()
                    .map_err(|e| self.http.read_error(&body.final_url, e))?;
                // An ARC sitemap in YAML (ARC E.3.3) goes the same way: the ARC reader reads both.
                if first_byte(head) == Some(b'{') || arc_yaml(head) {
                    return Err(SourceError::Json {
                        url: body.final_url.clone(),
                        received: Some(Box::new(Body {
                            final_url: body.final_url,
                            validators: body.validators,
                            media_type: body.media_type,
                            content_length: body.content_length,
                            content_encoding: body.content_encoding,
                            links: body.links,
                            reader: Box::new(input),
                        })),
                    });
                }
                if let Some(what) = not_a_document(head) {
                    return Err(SourceError::Unusable {
                        url: body.final_url.to_string(),
                        message: what.into(),
                    });
                }
                let reader = sitemap::open(input, &body.final_url, self.options)?;
                // A ResourceSync document (it names its capability) is read by this reader to
                // its end: nothing to hand to another one, so nothing is kept (a list of
                // millions of entries is never copied, not even its first megabytes).
                let recorded = match reader.header().capability() {
                    Some(_) => {
                        let mut r = recorded.lock().expect("recording lock");
                        r.overflow = true;
                        r.bytes = Vec::new();
                        None
                    }
                    None => Some(recorded),
                };
                Ok(Some(OpenedDocument {
                    url: body.final_url,
                    reader,
                    validators: body.validators,
                    recorded,
                }))
            }
        }
    }

    /// Open without validators; a 304 cannot happen.
    pub(crate) fn fetch(&self, url: &Url, scope: &Scope) -> Result<OpenedDocument, SourceError> {
        Ok(self
            .open(url, scope, &Validators::default())?
            .expect("an unconditional GET is never answered 304"))
    }

    /// The scope for the entries of a document at `url`.
    pub(crate) fn scope_for(&self, url: &Url) -> Scope {
        Scope::for_document(url, self.allow_hosts)
    }
}

/// A document as fetched for a reader.
pub(crate) struct Got {
    pub(crate) url: Url,
    /// The `Link` header it was served with (a Memento TimeGate names its TimeMap there).
    pub(crate) link: Option<String>,
    media_type: Option<String>,
    bytes: Vec<u8>,
    validators: Validators,
}

impl Got {
    pub(crate) fn doc(&self) -> Doc<'_> {
        Doc {
            url: &self.url,
            media_type: self.media_type.as_deref(),
            bytes: &self.bytes,
        }
    }
}

/// Fetch `url` whole (at most `--max-document-size`), through the one HTTP stack.
pub(crate) fn fetch(docs: &Documents<'_>, url: &Url, scope: &Scope) -> Result<Got, SourceError> {
    let max = docs.options.max_bytes;
    if url.scheme() == "file" {
        let path = url.to_file_path().map_err(|_| SourceError::Unusable {
            url: url.to_string(),
            message: "not a local file path".into(),
        })?;
        let bytes = std::fs::read(&path).map_err(|source| SourceError::Local {
            path: path.display().to_string(),
            source,
        })?;
        return Ok(Got {
            url: url.clone(),
            link: None,
            media_type: None,
            bytes,
            validators: Validators::default(),
        });
    }
    let body = match docs.http.get(url, scope, &Validators::default())? {
        DocumentResponse::Body(b) => b,
        DocumentResponse::NotModified => {
            return Err(SourceError::Unusable {
                url: url.to_string(),
                message: "answered 304 Not Modified to a request without validators".into(),
            })
        }
    };
    let mut bytes = Vec::new();
    let final_url = body.final_url.clone();
    // Every `Link` field, joined as one list (RFC 9110 §5.3).
    let link = (!body.links.is_empty()).then(|| body.links.join(", "));
    body.reader
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| docs.http.read_error(&final_url, e))?;
    if bytes.len() as u64 > max {
        return Err(SourceError::Unusable {
            url: final_url.to_string(),
            message: format!("larger than --max-document-size ({max} bytes)"),
        });
    }
    Ok(Got {
        url: final_url,
        link,
        media_type: body.media_type,
        bytes,
        validators: body.validators,
    })
}

/// Ask the registered readers whether the document at `url` is one of theirs; fetched whole
/// when not `received`. The kind of the collection it belongs to, the collection's URL and the
/// document, when one says so.
pub(crate) fn recognise(
    docs: &Documents<'_>,
    url: &Url,
    scope: &Scope,
    received: Option<(Vec<u8>, Option<String>, Validators)>,
    trail: &mut Vec<String>,
) -> Result<Option<(SourceKind, Url, Prefetched)>, SourceError> {
    if docs.readers.is_empty() {
        return Ok(None);
    }
    let got = match received {
        Some((bytes, media_type, validators)) => Got {
            url: url.clone(),
            link: None,
            media_type,
            bytes,
            validators,
        },
        None => fetch(docs, url, scope)?,
    };
    for reg in docs.readers {
        let Some(warnings) = (reg.recognise)(got.doc()) else {
            continue;
        };
        let id = (reg.collection)(got.doc(), docs.reader).map_err(|e| SourceError::Unusable {
            url: e.url,
            message: e.message,
        })?;
        trail.push(format!("{}: {} (collection {id})", got.url, reg.name));
        trail.extend(warnings);
        let prefetched = Prefetched {
            url: got.url,
            bytes: got.bytes,
            validators: got.validators,
        };
        return Ok(Some((reg.kind, id, prefetched)));
    }
    Ok(None)
}

/// A document discovery fetched for another protocol's module: as received.
#[derive(Debug, Clone)]
pub struct Prefetched {
    /// After redirects.
    pub url: Url,
    pub bytes: Vec<u8>,
    pub validators: Validators,
}

/// Files people give where a document belongs, told by their first bytes, with what to give
/// instead (a ZIP package is read through the Resource Dump that lists it; a zstd file is an
/// SCP collection, read through the site's sitemap.xml).
/// The first byte of a document that is not whitespace or a byte-order mark, looked for in
/// what has arrived (`head`), inflated first when it is gzip'd (the ARC format asks publishers
/// to offer `arc-sitemap.json.gz`; a Sitemap may be `.xml.gz`).
fn first_byte(head: &[u8]) -> Option<u8> {
    let first = |bytes: &[u8]| {
        bytes
            .iter()
            .copied()
            .find(|b| !b.is_ascii_whitespace() && *b != 0xEF && *b != 0xBB && *b != 0xBF)
    };
    if !head.starts_with(&[0x1f, 0x8b]) {
        return first(head);
    }
    // A prefix of the stream inflates to a prefix of the document: enough to look at.
    let mut inflated = [0u8; 4096];
    let mut decoder = flate2::read::GzDecoder::new(head);
    let mut n = 0;
    while n < inflated.len() {
        match std::io::Read::read(&mut decoder, &mut inflated[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    first(&inflated[..n])
}

/// Whether `head` (a document's first bytes) is an ARC sitemap in YAML (ARC E.3.3): a YAML
/// document one of whose top-level keys is `arc_sitemap_version:` or `pages:`.
pub(crate) fn arc_yaml(head: &[u8]) -> bool {
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | b'[' | b'<') | None) {
        return false;
    }
    text.split(|b| *b == b'\n')
        .any(|line| line.starts_with(b"arc_sitemap_version:") || line.starts_with(b"pages:"))
}

fn not_a_document(head: &[u8]) -> Option<&'static str> {
    // YAML where a Sitemap or an ARC sitemap (JSON) was expected.
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    // An ARC sitemap's own keys, as YAML writes them (`version: 1`).
    const ARC_KEYS: [&[u8]; 5] = [
        b"arc_sitemap_version:",
        b"site:",
        b"generated_at:",
        b"pages:",
        b"crawl_rate:",
    ];
    let yaml_key = text
        .split(|b| *b == b'\n')
        .next()
        .is_some_and(|line| ARC_KEYS.iter().any(|k| line.trim_ascii().starts_with(k)));
    if (text.starts_with(b"---") || text.starts_with(b"%YAML") || yaml_key) && !arc_yaml(head) {
        return Some(
            "a YAML document, not a Sitemap (XML) or an ARC sitemap (JSON): give the sitemap \
             itself, or the site root that names it",
        );
    }
    if head.starts_with(b"PK\x03\x04") {
        return Some(
            "a ZIP file (a Resource Dump or Change Dump package?), not a Sitemap document: give \
             the Resource Dump, Capability List or site root that lists it",
        );
    }
    if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return Some(
            "a zstd-compressed file (an SCP collection?), not a Sitemap document: give the \
             site's sitemap.xml (SCP) or its root",
        );
    }
    None
}
