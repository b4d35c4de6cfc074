//! Opening source documents: a URL through the network layer (scope-checked, conditional when
//! validators are known) or the user's own local file, then the streaming reader over it.

use crate::error::SourceError;
use crate::net::agent::DocumentResponse;
use crate::net::{Http, Scope, Validators};
use crate::rs::document::{Header, Root, Syntax};
use crate::rs::sitemap::{self, ReadOptions, SitemapReader};
use crate::store::catalog::DocumentRecord;
use std::io::BufRead;
use url::Url;

/// An opened document: its header has been read, its entries have not.
pub struct OpenedDocument {
    /// The URL after redirects (entries are resolved and scoped against it).
    pub url: Url,
    pub reader: SitemapReader<Box<dyn BufRead>>,
    pub validators: Validators,
}

impl OpenedDocument {
    pub fn header(&self) -> &Header {
        self.reader.header()
    }

    /// The catalog's record of this document once `entry_count` entries were read.
    pub fn record(&self, entry_count: u64) -> DocumentRecord {
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

pub fn syntax_name(s: Syntax) -> &'static str {
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
}

impl Documents<'_> {
    /// Open `url`. A `file:` URL is read from disk (only the user's own SOURCE is ever a file:
    /// URL: the scope refuses `file:` inside documents). `Ok(None)` is a 304.
    pub fn open(
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
            }));
        }
        match self.http.get(url, scope, validators)? {
            DocumentResponse::NotModified => Ok(None),
            DocumentResponse::Body(body) => {
                // JSON where a Sitemap was expected: an ARC sitemap (told apart by content).
                let mut input = std::io::BufReader::with_capacity(64 * 1024, body.reader);
                let head = input
                    .fill_buf()
                    .map_err(|e| self.http.read_error(&body.final_url, e))?;
                let first = head
                    .iter()
                    .copied()
                    .find(|b| !b.is_ascii_whitespace() && *b != 0xEF && *b != 0xBB && *b != 0xBF);
                if first == Some(b'{') {
                    return Err(SourceError::Json {
                        url: body.final_url,
                    });
                }
                if let Some(what) = not_a_document(head) {
                    return Err(SourceError::Unusable {
                        url: body.final_url.to_string(),
                        message: what.into(),
                    });
                }
                let reader = sitemap::open(input, &body.final_url, self.options)?;
                Ok(Some(OpenedDocument {
                    url: body.final_url,
                    reader,
                    validators: body.validators,
                }))
            }
        }
    }

    /// Open without validators; a 304 cannot happen.
    pub fn fetch(&self, url: &Url, scope: &Scope) -> Result<OpenedDocument, SourceError> {
        Ok(self
            .open(url, scope, &Validators::default())?
            .expect("an unconditional GET is never answered 304"))
    }

    /// The scope for the entries of a document at `url`.
    pub fn scope_for(&self, url: &Url) -> Scope {
        Scope::for_document(url, self.allow_hosts)
    }
}

/// Files people give where a document belongs, told by their first bytes, with what to give
/// instead (a ZIP package is read through the Resource Dump that lists it; a zstd file is an
/// SCP collection, read through the site's sitemap.xml).
fn not_a_document(head: &[u8]) -> Option<&'static str> {
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
