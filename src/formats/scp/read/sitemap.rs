//! Reader for the SCP sitemap extension (SCP 0.1, "Discovery via Sitemap" and Appendix A): a
//! Sitemap `<urlset>` whose direct children include elements in the namespace
//! [`SCP_NS`](crate::formats::scp::read::SCP_NS): `scp:version`, `scp:compression`, `scp:section`,
//! `scp:collection` (snapshots) and `scp:delta`.
//!
//! It owns: deciding whether a sitemap is an SCP source (the SCP namespace is declared or used;
//! matched by URI, never by prefix), reading the extension into typed items with their line,
//! refusing a DOCTYPE (entity expansion lives there), capping the input size, and resolving
//! relative collection URLs against the sitemap's URL. It leaves to others: plain `<url>`
//! entries (counted here, read by [`crate::rs::sitemap`]), choosing and fetching collections,
//! scope checks on URLs (the network layer), and cross-checking `size` / `pages` against what
//! arrives (the commands).
//!
//! An element that cannot be used (a snapshot without `url`, a delta without `since`, ...) is
//! skipped with a [`Warning`]; a missing attribute that is only informative (`expires`, `pages`,
//! `size`, `period`) becomes `None` with a warning. Malformed XML is a [`SitemapError`].

use crate::formats::scp::read::decompress::Decompressor;
use crate::formats::scp::read::error::ScpErrorKind;
use crate::formats::scp::read::limits::Limits;
use crate::formats::scp::read::warning::Warning;
use crate::formats::scp::read::SCP_NS;
use crate::rs::w3c_datetime::{self, Zone};
use jiff::Timestamp;
use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::{NsReader, XmlVersion};
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use url::Url;

/// The Sitemap namespace of `<urlset>`.
const SITEMAP_NS: &str = crate::rs::document::SITEMAP_NS;

/// Default cap on a sitemap's decompressed size: the Sitemap protocol's 50 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 50 * 1024 * 1024;

/// The SCP extension of one sitemap.
#[derive(Debug, Clone, PartialEq)]
pub struct ScpSitemap {
    /// `<scp:version>` as written (`MAJOR.MINOR`).
    pub version: Option<String>,
    /// `<scp:compression>`: formats the publisher offers, in its order of preference.
    pub compression: Vec<String>,
    pub sections: Vec<Section>,
    /// `<scp:collection>` (snapshots) and `<scp:delta>`, in document order.
    pub collections: Vec<CollectionEntry>,
    /// Plain `<url>` entries beside the extension (not read here).
    pub url_entries: u64,
    pub warnings: Vec<Warning>,
}

impl ScpSitemap {
    pub(crate) fn snapshots(&self) -> impl Iterator<Item = &CollectionEntry> {
        self.collections
            .iter()
            .filter(|c| c.kind == EntryKind::Snapshot)
    }

    pub(crate) fn deltas(&self) -> impl Iterator<Item = &CollectionEntry> {
        self.collections
            .iter()
            .filter(|c| c.kind != EntryKind::Snapshot)
    }

    /// The newest snapshot of `section` (by `generated`).
    pub(crate) fn latest_snapshot(&self, section: &str) -> Option<&CollectionEntry> {
        self.snapshots()
            .filter(|c| c.section == section)
            .max_by_key(|c| c.generated)
    }

    /// Deltas of `section` generated after `after`, oldest first (SCP 0.1, "Recovery from
    /// Missed Deltas": apply in chronological order by `generated`).
    pub(crate) fn deltas_after(&self, section: &str, after: Timestamp) -> Vec<&CollectionEntry> {
        let mut d: Vec<&CollectionEntry> = self
            .deltas()
            .filter(|c| c.section == section && c.generated > after)
            .collect();
        d.sort_by_key(|c| c.generated);
        d
    }
}

/// `<scp:section name= updateFreq= pages=/>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub line: u64,
    pub name: String,
    pub update_freq: Option<UpdateFreq>,
    pub pages: Option<PageCount>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpdateFreq {
    Hourly,
    Daily,
    Weekly,
    Monthly,
}

impl UpdateFreq {
    pub(crate) fn parse(s: &str) -> Option<UpdateFreq> {
        match s {
            "hourly" => Some(UpdateFreq::Hourly),
            "daily" => Some(UpdateFreq::Daily),
            "weekly" => Some(UpdateFreq::Weekly),
            "monthly" => Some(UpdateFreq::Monthly),
            _ => None,
        }
    }
}

/// A section's `pages`: a count, maybe an estimate (`~5000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCount {
    pub count: u64,
    pub estimate: bool,
}

/// Snapshot or delta, with what only a delta has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Snapshot,
    Delta {
        /// `period` ("day15", "2025-01-15"), as written; empty when missing.
        period: String,
        since: Timestamp,
    },
}

/// One `<scp:collection>` or `<scp:delta>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionEntry {
    pub line: u64,
    pub section: String,
    pub kind: EntryKind,
    /// Resolved against the sitemap's URL.
    pub url: Url,
    pub generated: Timestamp,
    pub expires: Option<Timestamp>,
    /// Pages the collection holds, as advertised.
    pub pages: Option<u64>,
    /// Compressed size in bytes, as advertised.
    pub size_bytes: Option<u64>,
    /// `checksum=` is not in the XSD, but the spec lets crawlers cross-reference "collection
    /// checksums advertised in sitemap.xml"; read when present and well-formed.
    pub checksum: Option<String>,
}

impl CollectionEntry {
    pub(crate) fn since(&self) -> Option<Timestamp> {
        match &self.kind {
            EntryKind::Delta { since, .. } => Some(*since),
            EntryKind::Snapshot => None,
        }
    }
}

/// A sitemap that cannot be read, with where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct SitemapError {
    pub line: u64,
    pub kind: SitemapErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SitemapErrorKind {
    #[error("malformed XML: {0}")]
    Xml(String),
    #[error("DOCTYPE refused (XML entity expansion and external entities are not allowed)")]
    Doctype,
    #[error("root element {0} is not a Sitemap <urlset> or <sitemapindex>")]
    NotASitemap(String),
    #[error("document ends before </urlset>: truncated")]
    Truncated,
    /// Decompression failed or the size cap was reached.
    #[error("{0}")]
    Input(ScpErrorKind),
}

/// Read a sitemap (plain or gzip / zstd, by magic bytes; at most `max_bytes` decompressed).
/// `Ok(None)`: a well-formed Sitemap without the SCP extension (or a sitemap index), which is
/// not an SCP source.
pub(crate) fn read_sitemap(
    input: impl Read,
    doc_url: &Url,
    max_bytes: u64,
) -> Result<Option<ScpSitemap>, SitemapError> {
    let limits = Limits {
        // A size cap, not the collection ratio rule: sitemaps are not SCP collections.
        max_ratio: u64::MAX,
        max_compressed_bytes: max_bytes,
        max_decompressed_bytes: max_bytes,
        ..Limits::default()
    };
    let source = Decompressor::new(input, &limits, None).map_err(|k| SitemapError {
        line: 1,
        kind: SitemapErrorKind::Input(k),
    })?;
    let counter = LineCounter {
        inner: BufReader::with_capacity(64 * 1024, Source(source)),
        newlines: 0,
    };
    let r = Reader {
        xml: NsReader::from_reader(counter),
        buf: Vec::with_capacity(1024),
        line: 1,
        doc_url,
        warnings: Vec::new(),
    };
    r.read()
}

/// The decompressor as `Read`, keeping its typed error for the reader to pick up.
struct Source<R: Read>(Decompressor<R>);

impl<R: Read> Read for Source<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.0
            .read(out)
            .map_err(|k| io::Error::other(InputFailure(k)))
    }
}

#[derive(Debug)]
struct InputFailure(ScpErrorKind);

impl fmt::Display for InputFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for InputFailure {}

/// Counts the newlines the XML parser consumes, for line numbers.
struct LineCounter<B> {
    inner: B,
    newlines: u64,
}

impl<B: BufRead> Read for LineCounter<B> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let available = self.fill_buf()?;
            let n = available.len().min(out.len());
            out[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<B: BufRead> BufRead for LineCounter<B> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        if let Ok(b) = self.inner.fill_buf() {
            let amt = amt.min(b.len());
            self.newlines += crate::rs::sitemap::count_newlines(&b[..amt]);
        }
        self.inner.consume(amt);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Sitemap,
    Scp,
    Other,
}

struct Reader<'u, B: BufRead> {
    xml: NsReader<LineCounter<B>>,
    buf: Vec<u8>,
    line: u64,
    doc_url: &'u Url,
    warnings: Vec<Warning>,
}

impl<B: BufRead> Reader<'_, B> {
    fn err(&self, kind: SitemapErrorKind) -> SitemapError {
        SitemapError {
            line: self.line,
            kind,
        }
    }

    fn warn(&mut self, line: u64, message: String) {
        self.warnings.push(Warning { line, message });
    }

    /// The next event, owned, with `self.line` set to where it starts.
    fn next(&mut self) -> Result<Event<'static>, SitemapError> {
        self.buf.clear();
        self.line = 1 + self.xml.get_mut().newlines;
        match self.xml.read_event_into(&mut self.buf) {
            // Sitemaps never need a DTD, and a DTD is where entity expansion attacks live.
            Ok(Event::DocType(_)) => Err(self.err(SitemapErrorKind::Doctype)),
            Ok(ev) => Ok(ev.into_owned()),
            Err(quick_xml::Error::Io(e)) => {
                let kind = match e.get_ref().and_then(|i| i.downcast_ref::<InputFailure>()) {
                    Some(InputFailure(k)) => SitemapErrorKind::Input(k.clone()),
                    None => SitemapErrorKind::Input(ScpErrorKind::Io(e.to_string())),
                };
                Err(self.err(kind))
            }
            Err(e) => Err(self.err(SitemapErrorKind::Xml(e.to_string()))),
        }
    }

    fn classify(&self, e: &BytesStart<'_>) -> Result<(Name, String), SitemapError> {
        let (ns, local) = self.xml.resolver().resolve_element(e.name());
        let local = local.as_ref().to_string();
        match ns {
            ResolveResult::Bound(n) if n.0 == SCP_NS => Ok((Name::Scp, local)),
            ResolveResult::Bound(n) if n.0 == SITEMAP_NS => Ok((Name::Sitemap, local)),
            ResolveResult::Unknown(p) => Err(self.err(SitemapErrorKind::Xml(format!(
                "namespace prefix {p:?} is not declared"
            )))),
            _ => Ok((Name::Other, local)),
        }
    }

    fn declares_scp(&self, e: &BytesStart<'_>) -> bool {
        e.attributes()
            .flatten()
            .any(|a| a.key.as_namespace_binding().is_some() && &*a.value == SCP_NS)
    }

    fn read(mut self) -> Result<Option<ScpSitemap>, SitemapError> {
        let Some((root_is_scp, empty)) = self.root()? else {
            return Ok(None);
        };
        let mut map = ScpSitemap {
            version: None,
            compression: Vec::new(),
            sections: Vec::new(),
            collections: Vec::new(),
            url_entries: 0,
            warnings: Vec::new(),
        };
        let mut is_scp = root_is_scp;
        if !empty {
            is_scp |= self.children(&mut map)?;
        }
        // Only whitespace, comments and PIs after the root.
        loop {
            match self.next()? {
                Event::Eof => break,
                Event::Text(t) if is_space(&t) => {}
                Event::Comment(_) | Event::PI(_) => {}
                _ => return Err(self.err(SitemapErrorKind::Xml("content after </urlset>".into()))),
            }
        }
        if !is_scp {
            return Ok(None);
        }
        map.warnings = std::mem::take(&mut self.warnings);
        Ok(Some(map))
    }

    /// The prolog and the root: whether the root declares the SCP namespace, and whether it
    /// is empty. `None` for a sitemap index (an SCP sitemap is a `urlset`).
    fn root(&mut self) -> Result<Option<(bool, bool)>, SitemapError> {
        let (root, empty) = loop {
            match self.next()? {
                Event::Start(e) => break (e, false),
                Event::Empty(e) => break (e, true),
                Event::Decl(_) | Event::Comment(_) | Event::PI(_) => {}
                Event::Text(t) if is_space(&t) => {}
                Event::Eof => return Err(self.err(SitemapErrorKind::Xml("no root element".into()))),
                _ => {
                    return Err(self.err(SitemapErrorKind::Xml(
                        "content before the root element".into(),
                    )))
                }
            }
        };
        let (ns, local) = self.classify(&root)?;
        match (ns, local.as_str()) {
            (Name::Sitemap, "urlset") => Ok(Some((self.declares_scp(&root), empty))),
            (Name::Sitemap, "sitemapindex") => Ok(None),
            _ => {
                let name = root.name().as_ref().to_string();
                Err(self.err(SitemapErrorKind::NotASitemap(format!("<{name}>"))))
            }
        }
    }

    /// The children of the root, into `map`: true when one of them is an SCP element or
    /// declares the SCP namespace.
    fn children(&mut self, map: &mut ScpSitemap) -> Result<bool, SitemapError> {
        let mut is_scp = false;
        loop {
            let (e, empty) = match self.next()? {
                Event::Start(e) => (e, false),
                Event::Empty(e) => (e, true),
                Event::End(_) => return Ok(is_scp),
                Event::Eof => return Err(self.err(SitemapErrorKind::Truncated)),
                Event::GeneralRef(r) => {
                    self.resolve_ref(&r)?;
                    continue;
                }
                _ => continue,
            };
            let line = self.line;
            is_scp |= self.declares_scp(&e);
            let (ns, local) = self.classify(&e)?;
            match (ns, local.as_str()) {
                (Name::Scp, "version") => {
                    is_scp = true;
                    let v = self.text(empty)?;
                    self.version(line, v, map);
                    continue;
                }
                (Name::Scp, "compression") => {
                    is_scp = true;
                    let v = self.text(empty)?;
                    self.compression(line, &v, map);
                    continue;
                }
                (Name::Scp, "section") => {
                    is_scp = true;
                    if let Some(s) = self.section(line, &e)? {
                        map.sections.push(s);
                    }
                }
                (Name::Scp, "collection") | (Name::Scp, "delta") => {
                    is_scp = true;
                    let delta = local == "delta";
                    if let Some(c) = self.collection(line, &e, delta)? {
                        map.collections.push(c);
                    }
                }
                (Name::Scp, other) => {
                    is_scp = true;
                    self.warn(line, format!("unknown element scp:{other} ignored"));
                }
                (Name::Sitemap, "url") => map.url_entries += 1,
                _ => {}
            }
            if !empty {
                self.skip()?;
            }
        }
    }

    /// `scp:compression`: the comma-separated formats the source offers.
    fn compression(&mut self, line: u64, v: &str, map: &mut ScpSitemap) {
        map.compression = v
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        for c in &map.compression {
            if c != "gzip" && c != "zstd" {
                self.warnings.push(Warning {
                    line,
                    message: format!("scp:compression {c:?} is not one SCP 0.1 defines"),
                });
            }
        }
    }

    fn version(&mut self, line: u64, v: String, map: &mut ScpSitemap) {
        let v = v.trim().to_string();
        match crate::formats::scp::read::Version::parse(&v) {
            None => self.warn(line, format!("scp:version {v:?} is not MAJOR.MINOR")),
            Some(parsed) if parsed.major > crate::formats::scp::read::SUPPORTED_VERSION.major => self.warn(
                line,
                format!(
                    "scp:version {v} has a newer major version than {}: its collections will be refused",
                    crate::formats::scp::read::SUPPORTED_VERSION
                ),
            ),
            Some(_) => {}
        }
        map.version = Some(v);
    }

    /// Text content of the element just opened.
    fn text(&mut self, empty: bool) -> Result<String, SitemapError> {
        let mut text = String::new();
        if empty {
            return Ok(text);
        }
        loop {
            match self.next()? {
                Event::Text(t) => text.push_str(&t),
                Event::CData(c) => text.push_str(&c),
                Event::GeneralRef(r) => text.push_str(&self.resolve_ref(&r)?),
                Event::End(_) => return Ok(text),
                Event::Start(_) | Event::Empty(_) => {
                    return Err(self.err(SitemapErrorKind::Xml(
                        "unexpected element inside a text element".into(),
                    )))
                }
                Event::Eof => return Err(self.err(SitemapErrorKind::Truncated)),
                _ => {}
            }
        }
    }

    /// Skip the subtree of the element just opened.
    fn skip(&mut self) -> Result<(), SitemapError> {
        let mut depth = 1u32;
        loop {
            match self.next()? {
                Event::Start(_) => depth += 1,
                Event::End(_) => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Event::GeneralRef(r) => {
                    self.resolve_ref(&r)?;
                }
                Event::Eof => return Err(self.err(SitemapErrorKind::Truncated)),
                _ => {}
            }
        }
    }

    /// Only the predefined entities and character references exist: a DTD is refused.
    fn resolve_ref(&self, r: &BytesRef<'_>) -> Result<String, SitemapError> {
        match r.resolve_char_ref() {
            Ok(Some(c)) => return Ok(c.to_string()),
            Ok(None) => {}
            Err(e) => return Err(self.err(SitemapErrorKind::Xml(e.to_string()))),
        }
        match quick_xml::escape::resolve_xml_entity(r) {
            Some(s) => Ok(s.to_string()),
            None => Err(self.err(SitemapErrorKind::Xml(format!(
                "undefined entity &{};",
                &**r
            )))),
        }
    }

    /// Unprefixed attributes (the XSD's are unqualified), normalised.
    fn attributes(&self, e: &BytesStart<'_>) -> Result<Vec<(String, String)>, SitemapError> {
        let mut out = Vec::new();
        for attr in e.attributes() {
            let attr = attr.map_err(|er| self.err(SitemapErrorKind::Xml(er.to_string())))?;
            if attr.key.as_namespace_binding().is_some() {
                continue;
            }
            let key = attr.key.as_ref().to_string();
            if key.contains(':') {
                continue;
            }
            let value = attr
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|er| self.err(SitemapErrorKind::Xml(er.to_string())))?;
            out.push((key, value.trim().to_string()));
        }
        Ok(out)
    }

    fn section(&mut self, line: u64, e: &BytesStart<'_>) -> Result<Option<Section>, SitemapError> {
        let mut a = Attrs::new(self.attributes(e)?, "scp:section", line);
        let Some(name) = a.take("name") else {
            a.missing("name", "element skipped");
            self.warnings.append(&mut a.warnings);
            return Ok(None);
        };
        let update_freq = match a.take("updateFreq") {
            None => {
                a.missing("updateFreq", "read as unknown");
                None
            }
            Some(f) => {
                let parsed = UpdateFreq::parse(&f);
                if parsed.is_none() {
                    a.warn(format!(
                        "updateFreq {f:?} is not hourly, daily, weekly or monthly"
                    ));
                }
                parsed
            }
        };
        let pages = match a.take("pages") {
            None => {
                a.missing("pages", "read as unknown");
                None
            }
            Some(p) => {
                let (estimate, digits) = match p.strip_prefix('~') {
                    Some(rest) => (true, rest.trim()),
                    None => (false, p.as_str()),
                };
                match digits.parse::<u64>() {
                    Ok(count) => Some(PageCount { count, estimate }),
                    Err(_) => {
                        a.warn(format!("pages {p:?} is not a count"));
                        None
                    }
                }
            }
        };
        self.warnings.append(&mut a.warnings);
        Ok(Some(Section {
            line,
            name,
            update_freq,
            pages,
        }))
    }

    fn collection(
        &mut self,
        line: u64,
        e: &BytesStart<'_>,
        delta: bool,
    ) -> Result<Option<CollectionEntry>, SitemapError> {
        let what = if delta { "scp:delta" } else { "scp:collection" };
        let mut a = Attrs::new(self.attributes(e)?, what, line);
        let entry = self.collection_attrs(&mut a, delta);
        self.warnings.append(&mut a.warnings);
        Ok(entry)
    }

    fn collection_attrs(&self, a: &mut Attrs, delta: bool) -> Option<CollectionEntry> {
        if !delta {
            // XSD: `type` on scp:collection may only be "snapshot".
            match a.take("type") {
                Some(t) if t == "snapshot" => {}
                Some(t) => {
                    a.warn(format!(
                        "type {t:?} is not \"snapshot\" (deltas are <scp:delta>): element skipped"
                    ));
                    return None;
                }
                None => a.missing("type", "read as snapshot"),
            }
        }
        let section = a.take("section").or_else(|| {
            a.missing("section", "element skipped");
            None
        })?;
        let url = a.take("url").or_else(|| {
            a.missing("url", "element skipped");
            None
        })?;
        let url = match Url::parse(&url) {
            Ok(u) => u,
            Err(url::ParseError::RelativeUrlWithoutBase) => match self.doc_url.join(&url) {
                Ok(u) => {
                    a.warn(format!("relative url {url:?} read as {u}"));
                    u
                }
                Err(e) => {
                    a.warn(format!("url {url:?} is not a URL ({e}): element skipped"));
                    return None;
                }
            },
            Err(e) => {
                a.warn(format!("url {url:?} is not a URL ({e}): element skipped"));
                return None;
            }
        };
        let generated = a.time("generated", true)?;
        let since = if delta {
            Some(a.time("since", true)?)
        } else {
            None
        };
        let expires = a.time("expires", false);
        let pages = a.number("pages");
        let size_bytes = a.number("size");
        let kind = match since {
            Some(since) => {
                let period = a.take("period").unwrap_or_else(|| {
                    a.missing("period", "read as empty");
                    String::new()
                });
                if since > generated {
                    a.warn(format!("since {since} is after generated {generated}"));
                }
                EntryKind::Delta { period, since }
            }
            None => EntryKind::Snapshot,
        };
        let checksum = a.take("checksum").and_then(|c| {
            match crate::formats::scp::read::checksum::parse_declared(&c) {
                Ok(c) => Some(c),
                Err(e) => {
                    a.warn(format!("checksum ignored: {e}"));
                    None
                }
            }
        });
        Some(CollectionEntry {
            line: a.line,
            section,
            kind,
            url,
            generated,
            expires,
            pages,
            size_bytes,
            checksum,
        })
    }
}

/// The attributes of one element, taken one by one, with warnings about them.
struct Attrs {
    list: Vec<(String, String)>,
    what: &'static str,
    line: u64,
    warnings: Vec<Warning>,
}

impl Attrs {
    fn new(list: Vec<(String, String)>, what: &'static str, line: u64) -> Attrs {
        Attrs {
            list,
            what,
            line,
            warnings: Vec::new(),
        }
    }

    fn take(&mut self, name: &str) -> Option<String> {
        let i = self.list.iter().position(|(k, _)| k == name)?;
        Some(self.list.swap_remove(i).1)
    }

    fn warn(&mut self, message: String) {
        self.warnings.push(Warning {
            line: self.line,
            message: format!("{}: {message}", self.what),
        });
    }

    fn missing(&mut self, name: &str, consequence: &str) {
        self.warn(format!(
            "required attribute {name} is missing: {consequence}"
        ));
    }

    /// An xs:dateTime; without a zone it is read as UTC, with a warning. `required`: a
    /// missing or bad value skips the element (returns `None` after warning).
    fn time(&mut self, name: &str, required: bool) -> Option<Timestamp> {
        let consequence = if required {
            "element skipped"
        } else {
            "ignored"
        };
        let Some(v) = self.take(name) else {
            self.missing(name, consequence);
            return None;
        };
        match w3c_datetime::parse(&v, Zone::AssumeUtc) {
            Ok(p) => {
                if p.assumed_utc || !v.contains('T') {
                    self.warn(format!("{name} {v:?} has no time zone: read as UTC"));
                }
                Some(p.timestamp)
            }
            Err(e) => {
                self.warn(format!("{name}: {e}: {consequence}"));
                None
            }
        }
    }

    fn number(&mut self, name: &str) -> Option<u64> {
        let Some(v) = self.take(name) else {
            self.missing(name, "read as unknown");
            return None;
        };
        match v.parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                self.warn(format!(
                    "{name} {v:?} is not a non-negative integer: read as unknown"
                ));
                None
            }
        }
    }
}

fn is_space(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::scp::read::decompress::tests::gzip;

    fn doc_url() -> Url {
        Url::parse("https://example.com/sitemap.xml").unwrap()
    }

    fn read(xml: &str) -> Result<Option<ScpSitemap>, SitemapError> {
        read_sitemap(xml.as_bytes(), &doc_url(), DEFAULT_MAX_BYTES)
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// SCP 0.1, "Discovery via Sitemap", verbatim.
    const SPEC_EXAMPLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:scp="https://scp-protocol.org/schemas/sitemap/1.0">

  <!-- SCP Metadata -->
  <scp:version>0.1</scp:version>
  <scp:compression>zstd,gzip</scp:compression>

  <!-- Available Sections -->
  <scp:section name="all" updateFreq="daily" pages="~12000"/>
  <scp:section name="blog" updateFreq="daily" pages="~5000"/>
  <scp:section name="docs" updateFreq="weekly" pages="~200"/>
  <scp:section name="products" updateFreq="hourly" pages="~1000"/>

  <!-- Snapshot Collections (full state) -->
  <scp:collection section="blog" type="snapshot"
                  url="https://r2.example.com/collections/blog-snapshot-day15.scp.gz"
                  generated="2000-01-15T00:00:00Z" expires="2000-01-16T00:00:00Z"
                  pages="5247" size="52000000"/>

  <scp:collection section="all" type="snapshot"
                  url="https://r2.example.com/collections/all-snapshot-latest.scp.gz"
                  generated="2000-01-15T00:00:00Z" expires="2000-01-16T00:00:00Z"
                  pages="12450" size="125000000"/>

  <!-- Delta Collections (incremental changes) -->
  <scp:delta section="blog" period="day15"
             url="https://r2.example.com/collections/blog-delta-day15.scp.gz"
             generated="2000-01-15T23:00:00Z" expires="2000-01-17T00:00:00Z"
             pages="47" size="480000"
             since="2000-01-14T00:00:00Z"/>

  <scp:delta section="all" period="day15"
             url="https://r2.example.com/collections/all-delta-day15.scp.gz"
             generated="2000-01-15T23:00:00Z" expires="2000-01-17T00:00:00Z"
             pages="124" size="1250000"
             since="2000-01-14T00:00:00Z"/>
</urlset>"#;

    #[test]
    fn the_spec_example() {
        let m = read(SPEC_EXAMPLE).unwrap().expect("an SCP sitemap");
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        assert_eq!(m.version.as_deref(), Some("0.1"));
        assert_eq!(m.compression, ["zstd", "gzip"]);
        assert_eq!(m.sections.len(), 4);
        assert_eq!(
            m.sections[3],
            Section {
                line: 13,
                name: "products".into(),
                update_freq: Some(UpdateFreq::Hourly),
                pages: Some(PageCount {
                    count: 1000,
                    estimate: true
                }),
            }
        );
        assert_eq!(m.collections.len(), 4);
        let blog = m.latest_snapshot("blog").unwrap();
        assert_eq!(
            *blog,
            CollectionEntry {
                line: 16,
                section: "blog".into(),
                kind: EntryKind::Snapshot,
                url: Url::parse("https://r2.example.com/collections/blog-snapshot-day15.scp.gz")
                    .unwrap(),
                generated: ts("2000-01-15T00:00:00Z"),
                expires: Some(ts("2000-01-16T00:00:00Z")),
                pages: Some(5247),
                size_bytes: Some(52_000_000),
                checksum: None,
            }
        );
        let deltas = m.deltas_after("blog", ts("2000-01-15T00:00:00Z"));
        assert_eq!(deltas.len(), 1);
        assert_eq!(
            deltas[0].kind,
            EntryKind::Delta {
                period: "day15".into(),
                since: ts("2000-01-14T00:00:00Z")
            }
        );
        assert_eq!(deltas[0].since(), Some(ts("2000-01-14T00:00:00Z")));
        assert_eq!(deltas[0].line, 27);
        assert_eq!(m.deltas().count(), 2);
        assert_eq!(m.snapshots().count(), 2);
        assert_eq!(m.url_entries, 0);
    }

    #[test]
    fn detection_is_by_namespace_uri_not_prefix() {
        let xml = r#"<s:urlset xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:c="https://scp-protocol.org/schemas/sitemap/1.0">
<s:url><s:loc>https://example.com/</s:loc></s:url>
<c:section name="all" updateFreq="daily" pages="3"/>
<scp xmlns="urn:other"><section name="not-scp" updateFreq="daily" pages="1"/></scp>
</s:urlset>"#;
        let m = read(xml).unwrap().unwrap();
        assert_eq!(m.sections.len(), 1);
        assert_eq!(
            m.sections[0].pages,
            Some(PageCount {
                count: 3,
                estimate: false
            })
        );
        assert_eq!(m.url_entries, 1);
        // The wrong URI under the usual prefix is not SCP.
        let xml = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:scp="https://scp-protocol.org/schemas/sitemap/2.0"><scp:version>0.1</scp:version></urlset>"#;
        assert_eq!(read(xml).unwrap(), None);
    }

    #[test]
    fn plain_sitemaps_and_indexes_are_not_scp() {
        let plain = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://example.com/</loc></url></urlset>"#;
        assert_eq!(read(plain).unwrap(), None);
        let index = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>https://example.com/s.xml</loc></sitemap></sitemapindex>"#;
        assert_eq!(read(index).unwrap(), None);
        // Declared but unused: an SCP source with nothing in it (yet).
        let declared = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:scp="https://scp-protocol.org/schemas/sitemap/1.0"/>"#;
        let m = read(declared).unwrap().unwrap();
        assert!(m.collections.is_empty());
    }

    #[test]
    fn doctype_and_bad_xml_are_refused() {
        let xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset [<!ENTITY a \"aaaa\">]>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"/>";
        let e = read(xml).unwrap_err();
        assert_eq!(e.kind, SitemapErrorKind::Doctype);
        assert_eq!(e.line, 2);
        let e = read("<rss/>").unwrap_err();
        assert!(matches!(e.kind, SitemapErrorKind::NotASitemap(_)), "{e}");
        let e = read(&SPEC_EXAMPLE.replace("</urlset>", "")).unwrap_err();
        assert_eq!(e.kind, SitemapErrorKind::Truncated);
        let e = read(&SPEC_EXAMPLE.replace(
            "<scp:version>0.1</scp:version>",
            "<scp:version>&bogus;</scp:version>",
        ))
        .unwrap_err();
        assert!(e.to_string().contains("undefined entity"), "{e}");
        assert_eq!(e.line, 6);
        let e = read(&SPEC_EXAMPLE.replace("<scp:version>", "<zz:version>")).unwrap_err();
        assert!(matches!(e.kind, SitemapErrorKind::Xml(_)), "{e}");
    }

    #[test]
    fn unusable_entries_are_skipped_with_warnings() {
        let xml = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:scp="https://scp-protocol.org/schemas/sitemap/1.0">
<scp:collection section="blog" type="snapshot" generated="2000-01-15T00:00:00Z"/>
<scp:collection section="blog" type="delta" url="https://e.org/d.scp" generated="2000-01-15T00:00:00Z"/>
<scp:delta section="blog" period="p" url="https://e.org/d.scp" generated="2000-01-15T00:00:00Z"/>
<scp:collection section="blog" type="snapshot" url="collections/b.scp.zst" generated="2000-01-15T00:00:00" pages="many" checksum="sha256:a1b2"/>
<scp:section updateFreq="daily"/>
<scp:section name="docs" updateFreq="yearly"/>
<scp:extra/>
</urlset>"#;
        let m = read(xml).unwrap().unwrap();
        assert_eq!(m.collections.len(), 1);
        let c = &m.collections[0];
        assert_eq!(c.url.as_str(), "https://example.com/collections/b.scp.zst");
        assert_eq!(c.generated, ts("2000-01-15T00:00:00Z"));
        assert_eq!(
            (c.pages, c.size_bytes, c.expires, &c.checksum),
            (None, None, None, &None)
        );
        assert_eq!(m.sections.len(), 1);
        assert_eq!(m.sections[0].update_freq, None);
        let text: Vec<String> = m
            .warnings
            .iter()
            .map(|w| format!("{}: {}", w.line, w.message))
            .collect();
        let want = [
            "2: scp:collection: required attribute url is missing: element skipped",
            "3: scp:collection: type \"delta\" is not \"snapshot\" (deltas are <scp:delta>): element skipped",
            "4: scp:delta: required attribute since is missing: element skipped",
            "5: scp:collection: relative url \"collections/b.scp.zst\" read as https://example.com/collections/b.scp.zst",
            "5: scp:collection: generated \"2000-01-15T00:00:00\" has no time zone: read as UTC",
            "5: scp:collection: required attribute expires is missing: ignored",
            "5: scp:collection: pages \"many\" is not a non-negative integer: read as unknown",
            "5: scp:collection: required attribute size is missing: read as unknown",
            "5: scp:collection: checksum ignored: checksum \"sha256:a1b2\" is malformed (expected \"sha256:\" and 64 hex digits)",
            "6: scp:section: required attribute name is missing: element skipped",
            "7: scp:section: updateFreq \"yearly\" is not hourly, daily, weekly or monthly",
            "7: scp:section: required attribute pages is missing: read as unknown",
            "8: unknown element scp:extra ignored",
        ];
        assert_eq!(text, want);
    }

    #[test]
    fn compressed_and_capped() {
        let m = read_sitemap(
            &gzip(SPEC_EXAMPLE.as_bytes())[..],
            &doc_url(),
            DEFAULT_MAX_BYTES,
        )
        .unwrap()
        .unwrap();
        assert_eq!(m.collections.len(), 4);
        let e = read_sitemap(SPEC_EXAMPLE.as_bytes(), &doc_url(), 100).unwrap_err();
        assert!(
            matches!(
                e.kind,
                SitemapErrorKind::Input(ScpErrorKind::CompressedTooLarge { limit: 100 })
            ),
            "{e}"
        );
    }

    #[test]
    fn newer_major_version_warns() {
        let m = read(&SPEC_EXAMPLE.replace(">0.1<", ">1.0<"))
            .unwrap()
            .unwrap();
        assert!(
            m.warnings[0].message.contains("newer major version"),
            "{:?}",
            m.warnings
        );
    }
}
