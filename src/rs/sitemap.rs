//! Streaming, namespace-aware reader for Sitemap documents (`<urlset>` / `<sitemapindex>`), the
//! container of every ResourceSync document (ResourceSync 1.1 §1), of plain Sitemaps and of
//! the 2012 alpha / 2013 beta drafts (ResourceSync 1.1 §13).
//!
//! It owns: sniffing gzip and capping the decompressed size ([`decompress`]), refusing DTDs,
//! well-formedness (through quick-xml), namespace matching by URI, the header (root element,
//! document-level `rs:md` / `rs:ln`, syntax generation) and one [`Entry`] per `<url>` /
//! `<sitemap>`, pulled one at a time so that a document of any size is read in bounded memory.
//! Everything odd but readable becomes a [`Warning`] with its line; everything unreadable a
//! [`ReadError`] with its line. It leaves to others: what the metadata means (ordering, gaps,
//! sync points), scope and scheme checks on URLs (the network layer), and fetching.

use crate::rs::digest::{parse_hash_attr, Algorithm, Digest};
use crate::rs::document::{
    media_type, Capability, Change, Entry, Header, Link, Md, Root, Syntax, Warning, RS_NS,
    RS_NS_ALIASES, SITEMAP_NS, XHTML_NS,
};
use crate::rs::w3c_datetime::{self, DatetimeError, Zone};
use jiff::Timestamp;
use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::name::{NamespaceResolver, QName, ResolveResult};
use quick_xml::{NsReader, XmlVersion};
use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use url::Url;

/// Options every reader takes.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// What to do with times without a zone.
    pub zone: Zone,
    /// Cap on the decompressed size of one document, in bytes.
    pub max_bytes: u64,
}

/// The Sitemap protocol's limit on one document: "no larger than 50MB (52,428,800 bytes)"
/// uncompressed (sitemaps.org; ResourceSync 1.1 §8 keeps the Sitemap limits and splits larger
/// lists into an index). `--max-document-size` changes it.
pub const MAX_DOCUMENT_BYTES: u64 = 52_428_800;

/// The most a gzip'd document may inflate, as decompressed bytes per compressed byte, once it
/// is past [`RATIO_FLOOR`]. Sitemaps of similar URLs compress 20-50:1, a gzip bomb about
/// 1000:1; SCP's limit is 100:1, and 200 leaves room for very regular lists.
pub const MAX_RATIO: u64 = 200;
/// Below this many decompressed bytes the ratio is not checked: a tiny gzip file of a tiny
/// document has no meaningful ratio.
const RATIO_FLOOR: u64 = 1 << 20;

/// Warnings listed per document; past this many they are only counted, and one line at the
/// end of the document gives the count. Without a bound, a document repeating a tiny
/// document-level element (`<rs:md/>`, 8 bytes) listed two or three warnings for each: 35
/// bytes of memory per byte read, over 1.5 GB for a document within the 50 MB limit.
pub const MAX_LISTED_WARNINGS: u64 = 1000;

/// Links kept for the document (its header) and for each entry; more are ignored with a
/// warning. Real documents carry a handful; each kept link costs about 300 bytes, so an
/// unbounded list made a 50 MB document of `<rs:ln rel="a" href="b"/>` over 500 MB.
pub const MAX_LINKS: usize = 1000;

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            zone: Zone::Required,
            max_bytes: MAX_DOCUMENT_BYTES,
        }
    }
}

/// A document that cannot be read, with where.
#[derive(Debug, thiserror::Error)]
#[error("{url}: line {line}: {kind}")]
pub struct ReadError {
    pub url: String,
    pub line: u64,
    pub kind: ReadErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadErrorKind {
    #[error("malformed XML: {0}")]
    Xml(String),
    #[error("DOCTYPE or entity declaration refused (XML entity expansion and external entities are not allowed)")]
    Doctype,
    /// A web page where a Sitemap was expected: a site's home page, a login or error page.
    #[error(
        "this is an HTML page, not a Sitemap: give the URL of the Resource List, Capability List \
         or Source Description (a site root works when it publishes /.well-known/resourcesync)"
    )]
    Html,
    #[error(
        "root element {found} is not a Sitemap <urlset> or <sitemapindex> in namespace {}",
        crate::rs::document::SITEMAP_NS
    )]
    NotASitemap { found: String },
    #[error("document ends before </{0}>: truncated")]
    Truncated(String),
    #[error("<{0}> without <loc>")]
    MissingLoc(&'static str),
    #[error("bad URL {value:?}: {reason}")]
    BadUrl { value: String, reason: String },
    #[error("{what}: {source}")]
    BadDatetime {
        what: String,
        #[source]
        source: DatetimeError,
    },
    #[error("{what}={value:?} is not a non-negative integer")]
    BadNumber { what: String, value: String },
    #[error("document larger than the {0}-byte limit (--max-document-size; the Sitemap protocol allows 50 MB: a larger list belongs in an index)")]
    TooLarge(u64),
    #[error("refused, a decompression bomb: {0}")]
    Inflates(String),
    #[error("read failed: {0}")]
    Io(String),
}

/// Pull-reader over one Sitemap document.
///
/// [`SitemapReader::new`] reads the prolog, the root element and its children up to and
/// including the first entry, so the header is complete for any document that follows the
/// conventional order (`rs:md`/`rs:ln` before the first `<url>`). Document-level metadata found
/// after an entry is still applied to the header, with a warning; the syntax can only be
/// refined from [`Syntax::Plain`] to [`Syntax::Alpha2012`] by alpha markers in later entries.
pub struct SitemapReader<R: BufRead> {
    xml: NsReader<LineCounter<R>>,
    /// Event buffer, reused for every event.
    buf: Vec<u8>,
    st: State,
    /// The first entry, read by `new()` while looking for the end of the header.
    pending: Option<Entry>,
}

impl<R: BufRead> SitemapReader<R> {
    /// Read up to the first entry, so that [`Self::header`] is available.
    ///
    /// A UTF-8 byte-order mark and whitespace before the XML declaration are skipped (real
    /// documents start with a newline before `<?xml`); line numbers still count them.
    pub(crate) fn new(mut input: R, doc_url: &Url, opts: ReadOptions) -> Result<Self, ReadError> {
        let mut st = State::new(doc_url, opts);
        st.lead_newlines = skip_leading_space(&mut input).map_err(|e| st.io_error(&e))?;
        let xml = NsReader::from_reader(LineCounter::new(input));
        let mut reader = SitemapReader {
            xml,
            buf: Vec::with_capacity(1024),
            st,
            pending: None,
        };
        reader.read_root()?;
        reader.pending = reader.read_child()?;
        Ok(reader)
    }

    pub fn header(&self) -> &Header {
        &self.st.header
    }

    /// The next `<url>` / `<sitemap>`, or `None` after a well-formed end of document.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, ReadError> {
        if let Some(entry) = self.pending.take() {
            return Ok(Some(entry));
        }
        self.read_child()
    }

    pub fn warnings(&self) -> &[Warning] {
        &self.st.warnings
    }

    pub(crate) fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.st.warnings)
    }

    /// The prolog and the root start tag.
    fn read_root(&mut self) -> Result<(), ReadError> {
        loop {
            let ev = next_event(&mut self.xml, &mut self.buf, &mut self.st)?;
            let (e, empty) = match ev {
                Event::Start(e) => (e, false),
                Event::Empty(e) => (e, true),
                Event::Text(t) if is_xml_space(&t) => continue,
                Event::Decl(_) | Event::Comment(_) | Event::PI(_) => continue,
                Event::Eof => {
                    return Err(self.st.err(ReadErrorKind::Xml(
                        "no root element (empty document)".into(),
                    )))
                }
                _ => {
                    return Err(self
                        .st
                        .err(ReadErrorKind::Xml("content before the root element".into())))
                }
            };
            let resolver = self.xml.resolver();
            let (ns, local) = resolver.resolve_element(e.name());
            let root = match (&ns, local.as_ref()) {
                (ResolveResult::Bound(n), "urlset") if n.0 == SITEMAP_NS => Root::Urlset,
                (ResolveResult::Bound(n), "sitemapindex") if n.0 == SITEMAP_NS => {
                    Root::SitemapIndex
                }
                (_, l) if l.eq_ignore_ascii_case("html") => {
                    return Err(self.st.err(ReadErrorKind::Html));
                }
                (ResolveResult::Bound(n), l) => {
                    let found = format!("{{{}}}{l}", n.0);
                    return Err(self.st.err(ReadErrorKind::NotASitemap { found }));
                }
                (ResolveResult::Unbound, _) => {
                    let found = format!("<{}> (no namespace)", e.name().as_ref());
                    return Err(self.st.err(ReadErrorKind::NotASitemap { found }));
                }
                (ResolveResult::Unknown(p), _) => {
                    let found = format!("<{}> (prefix {p:?} not declared)", e.name().as_ref());
                    return Err(self.st.err(ReadErrorKind::NotASitemap { found }));
                }
            };
            self.st.set_root(root);
            // Namespaces declared on the root: how a Sitemap extension (SCP) announces itself.
            for attr in e.attributes().flatten() {
                if attr.key.as_namespace_binding().is_some() {
                    if let Ok(v) = attr.normalized_value(XmlVersion::Implicit1_0) {
                        self.st.header.namespaces.push(v.into_owned());
                    }
                }
            }
            // ResourceSync 1.1 §13: the 2012 alpha marks a Change Set on the root element.
            for_each_attr(&mut self.st, resolver, &e, |st, ns, local, value| {
                if ns == AttrNs::Rs && local == "type" {
                    if value.trim().eq_ignore_ascii_case("changeset") {
                        st.header.alpha_changeset = true;
                        st.alpha_root = true;
                    } else {
                        st.warn(format!("unknown root rs:type={value:?} ignored"));
                    }
                }
                Ok(())
            })?;
            self.st.refresh_syntax();
            let bound = |name: &str, ns: &str| {
                matches!(resolver.resolve_element(QName(name)),
                    (ResolveResult::Bound(n), _) if n.0 == ns)
            };
            self.st.plain = root == Root::Urlset
                && bound("url", SITEMAP_NS)
                && bound("rs:md", RS_NS)
                && !tests_without_plain_entries();
            if empty {
                self.finish()?;
            }
            return Ok(());
        }
    }

    /// Children of the root until the next entry or the end of the document.
    fn read_child(&mut self) -> Result<Option<Entry>, ReadError> {
        if self.st.done {
            return Ok(None);
        }
        loop {
            if self.st.plain && self.st.after_markup {
                if let Some(entry) = self.plain_entry() {
                    return entry.map(Some);
                }
            }
            let ev = next_event(&mut self.xml, &mut self.buf, &mut self.st)?;
            let (e, empty) = match ev {
                Event::Start(e) => (e, false),
                Event::Empty(e) => (e, true),
                Event::End(_) => {
                    // quick-xml checks end names: at this depth it is the root's end tag.
                    self.finish()?;
                    return Ok(None);
                }
                Event::Eof => return Err(self.st.truncated()),
                Event::Text(t) => {
                    if !is_xml_space(&t) {
                        self.st.stray_text();
                    }
                    continue;
                }
                Event::GeneralRef(r) => {
                    resolve_ref(&self.st, &r)?;
                    self.st.stray_text();
                    continue;
                }
                Event::CData(_) => {
                    self.st.stray_text();
                    continue;
                }
                _ => continue,
            };
            let resolver = self.xml.resolver();
            let tag = self.st.classify(resolver, &e)?;
            let line = self.st.line;
            if let Tag::Sitemap(name @ (Name::Url | Name::Sitemap)) = tag {
                let wanted = if self.st.header.root == Root::Urlset {
                    Name::Url
                } else {
                    Name::Sitemap
                };
                if name != wanted {
                    let msg = format!("<{}> inside <{}>", e.name().as_ref(), self.st.root_name());
                    return Err(self.st.err(ReadErrorKind::Xml(msg)));
                }
                if empty {
                    return Err(self.st.err(ReadErrorKind::MissingLoc(entry_name(wanted))));
                }
                return self.read_entry(line).map(Some);
            }
            header_element(&mut self.st, resolver, &e, tag, line)?;
            if !empty {
                self.skip()?;
            }
        }
    }

    /// One `<url>` / `<sitemap>`, after its start tag.
    fn read_entry(&mut self, line: u64) -> Result<Entry, ReadError> {
        let mut parts = EntryParts {
            tag: if self.st.header.root == Root::Urlset {
                "url"
            } else {
                "sitemap"
            },
            ..EntryParts::default()
        };
        loop {
            let ev = next_event(&mut self.xml, &mut self.buf, &mut self.st)?;
            let (e, empty) = match ev {
                Event::Start(e) => (e, false),
                Event::Empty(e) => (e, true),
                Event::End(_) => break,
                Event::Eof => return Err(self.st.truncated()),
                Event::GeneralRef(r) => {
                    resolve_ref(&self.st, &r)?;
                    continue;
                }
                _ => continue,
            };
            let resolver = self.xml.resolver();
            let tag = self.st.classify(resolver, &e)?;
            let el_line = self.st.line;
            // The start tag lives in the event buffer its content is read into: what it says
            // is taken first, then its content.
            let change = entry_child_start(&mut self.st, resolver, &e, tag, el_line, &mut parts)?;
            self.entry_child_content(tag, empty, el_line, change, &mut parts)?;
        }
        let EntryParts {
            tag,
            loc,
            lastmod,
            invalid,
            md,
            links,
            categories,
            mds: _,
        } = parts;
        let loc = loc.ok_or_else(|| self.st.err_at(line, ReadErrorKind::MissingLoc(tag)))?;
        self.st.check_intervals(&md, line, false);
        self.st.entries += 1;
        Ok(Entry {
            line,
            loc,
            lastmod,
            md,
            links,
            categories,
            invalid,
        })
    }

    /// The content of one child of an entry, after [`entry_child_start`] has read its start
    /// tag (`change`: the alpha `rs:type` of a `<lastmod>`).
    fn entry_child_content(
        &mut self,
        tag: Tag,
        empty: bool,
        el_line: u64,
        change: Option<Change>,
        parts: &mut EntryParts,
    ) -> Result<(), ReadError> {
        match tag {
            Tag::Sitemap(Name::Loc) => {
                self.read_text(empty, "loc")?;
                if parts.loc.is_some() {
                    self.st
                        .warn_at(el_line, "second <loc> in one entry ignored".into());
                } else {
                    parts.loc = Some(self.st.loc(el_line)?);
                }
            }
            Tag::Sitemap(Name::Lastmod) => {
                self.read_text(empty, "lastmod")?;
                match self.st.text_lastmod(el_line) {
                    Ok(t) => parts.lastmod = Some(t),
                    Err(Ok(why)) => parts.invalid = Some(why),
                    Err(Err(e)) => return Err(e),
                }
                if change.is_some() {
                    parts.md.change = change;
                    self.st.refresh_syntax();
                }
            }
            Tag::Sitemap(Name::Expires) => {
                // ResourceSync 1.1 §13: alpha `<expires>T</expires>` = deleted at T.
                self.read_text(empty, "expires")?;
                parts.md.datetime = Some(self.st.text_time(el_line, "<expires>")?);
                parts.md.change = Some(Change::Deleted);
                self.st.alpha_item = true;
                self.st.refresh_syntax();
            }
            Tag::Rs(
                name @ (Name::Fixity
                | Name::Size
                | Name::Mimetype
                | Name::ContentEncoding
                | Name::Path),
            ) => self.alpha_md_element(name, empty, el_line, &mut parts.md)?,
            // Everything else (`<changefreq>`, `<priority>`, `rs:md`, links, unknown
            // elements) was read from its start tag; its content is skipped.
            _ => {
                if !empty {
                    self.skip()?;
                }
            }
        }
        Ok(())
    }

    /// ResourceSync 1.1 §13: the 2012 alpha's metadata elements inside an entry
    /// (`rs:fixity`, whose `type` [`entry_child_start`] left in `st.scratch`, `rs:size`,
    /// `rs:mimetype`, `rs:contentencoding`, `rs:path`), each of which marks the document alpha.
    fn alpha_md_element(
        &mut self,
        name: Name,
        empty: bool,
        el_line: u64,
        md: &mut Md,
    ) -> Result<(), ReadError> {
        match name {
            Name::Fixity => {
                // `<rs:fixity type="md5">BASE64</rs:fixity>`.
                self.read_text(empty, "rs:fixity")?;
                let alg = Algorithm::parse(&self.st.scratch);
                md.hash.push(Digest::new(alg, &self.st.text));
            }
            Name::Size => {
                self.read_text(empty, "rs:size")?;
                md.length = Some(self.st.text_number(el_line, "<rs:size>")?);
            }
            Name::Mimetype => {
                self.read_text(empty, "rs:mimetype")?;
                md.media_type = Some(media_type(self.st.text.trim()));
            }
            Name::ContentEncoding => {
                self.read_text(empty, "rs:contentencoding")?;
                md.encoding = Some(self.st.text.trim().to_string());
            }
            Name::Path => {
                // Alpha paths have no leading `/`; 1.x ones do.
                self.read_text(empty, "rs:path")?;
                let p = self.st.text.trim();
                md.path = Some(if p.starts_with('/') {
                    p.to_string()
                } else {
                    format!("/{p}")
                });
            }
            _ => unreachable!("only alpha metadata elements are passed here"),
        }
        self.st.alpha_item = true;
        self.st.refresh_syntax();
        Ok(())
    }

    /// The next entry read straight from the buffered bytes when it is written the plain way,
    /// on one line, all in the buffer: whitespace, `<url><loc>L</loc>`, optionally
    /// `<lastmod>T</lastmod>`, optionally `<rs:md a="v" .../>` (unprefixed attributes, double
    /// quotes, single spaces), `</url>`, printable ASCII without `&`. That is most entries of
    /// real lists, and quick-xml would give exactly these events and values for them, so
    /// what is read and reported is what [`Self::read_entry`] gives (the same calls make the
    /// entry, its warnings and its errors); anything else is `None`, nothing is consumed,
    /// and the parser reads it. The parser's state is unchanged: it was after markup, and is
    /// after `</url>`.
    fn plain_entry(&mut self) -> Option<Result<Entry, ReadError>> {
        let plain = match plain_url(self.xml.get_ref().buffered()) {
            Some(plain) => plain,
            // Perhaps cut at the end of the buffer: once more with what follows.
            None if self.xml.get_mut().top_up(PLAIN_LINE) => {
                plain_url(self.xml.get_ref().buffered())?
            }
            None => return None,
        };
        let bytes = self.xml.get_ref().buffered();
        #[cfg(test)]
        PLAIN_ENTRIES.with(|c| c.set(c.get() + 1));
        let line = 1 + self.st.lead_newlines + self.xml.get_ref().newlines + plain.newlines;
        // One check of the whole entry (ASCII, as `plain_url` found it), not one per value.
        let all = std::str::from_utf8(&bytes[..plain.end]).expect("checked to be ASCII");
        let text = |r: &std::ops::Range<usize>| &all[r.clone()];
        let st = &mut self.st;
        let result = (|| {
            st.line = line;
            st.text.clear();
            st.text.push_str(text(&plain.loc));
            let loc = st.loc(line)?;
            let mut lastmod = None;
            let mut invalid = None;
            if let Some(r) = &plain.lastmod {
                st.text.clear();
                st.text.push_str(text(r));
                match st.text_lastmod(line) {
                    Ok(t) => lastmod = Some(t),
                    Err(Ok(why)) => invalid = Some(why),
                    Err(Err(e)) => return Err(e),
                }
            }
            let mut md = Md::default();
            if plain.md {
                let mut modified = None;
                for (name, value) in &plain.attrs[..plain.n_attrs] {
                    md_attr(st, text(name), text(value), &mut md, false, &mut modified)?;
                }
            }
            st.check_intervals(&md, line, false);
            st.entries += 1;
            Ok(Entry {
                line,
                loc,
                lastmod,
                md,
                links: Vec::new(),
                categories: Vec::new(),
                invalid,
            })
        })();
        self.xml.get_mut().consume(plain.end);
        Some(result)
    }

    /// Text content of the element just opened, into `st.text`.
    fn read_text(&mut self, empty: bool, what: &'static str) -> Result<(), ReadError> {
        self.st.text.clear();
        if empty {
            return Ok(());
        }
        loop {
            match next_event(&mut self.xml, &mut self.buf, &mut self.st)? {
                Event::Text(t) => self.st.text.push_str(&t),
                Event::CData(c) => self.st.text.push_str(&c),
                Event::GeneralRef(r) => match resolve_ref(&self.st, &r)? {
                    Resolved::Char(c) => self.st.text.push(c),
                    Resolved::Str(s) => self.st.text.push_str(s),
                },
                Event::End(_) => return check_chars(&self.st, what),
                Event::Start(e) | Event::Empty(e) => {
                    let msg = format!("unexpected element <{}> inside <{what}>", e.name().as_ref());
                    return Err(self.st.err(ReadErrorKind::Xml(msg)));
                }
                Event::Eof => return Err(self.st.truncated()),
                _ => {}
            }
        }
    }

    /// Skip the subtree of the element just opened (entities are still checked).
    fn skip(&mut self) -> Result<(), ReadError> {
        let mut depth = 1u32;
        loop {
            match next_event(&mut self.xml, &mut self.buf, &mut self.st)? {
                Event::Start(_) => depth += 1,
                Event::End(_) => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Event::GeneralRef(r) => {
                    resolve_ref(&self.st, &r)?;
                }
                Event::Eof => return Err(self.st.truncated()),
                _ => {}
            }
        }
    }

    /// After the root's end tag: only whitespace, comments and PIs may follow.
    fn finish(&mut self) -> Result<(), ReadError> {
        self.st.summarise_repeats();
        loop {
            match next_event(&mut self.xml, &mut self.buf, &mut self.st)? {
                Event::Eof => break,
                Event::Text(t) if is_xml_space(&t) => {}
                Event::Comment(_) | Event::PI(_) => {}
                _ => {
                    let msg = format!("content after </{}>", self.st.root_name());
                    return Err(self.st.err(ReadErrorKind::Xml(msg)));
                }
            }
        }
        self.st.done = true;
        Ok(())
    }
}

/// Wrap `input` in a gzip decoder when it starts with the gzip magic bytes (1F 8B), whatever
/// the URL says, and cap the decompressed size.
///
/// ResourceSync 1.1 §7: documents may be served as `*.xml.gz` files as well as with HTTP
/// Content-Encoding; detect by magic bytes. Multi-member gzip streams are read to the end.
/// Going over `max_bytes` is an I/O error that the readers report as
/// [`ReadErrorKind::TooLarge`]. The BOM and whitespace before `<?xml` are skipped by
/// [`SitemapReader::new`], which keeps their newlines in the line count.
pub(crate) fn decompress<'a>(
    input: impl Read + 'a,
    max_bytes: u64,
) -> std::io::Result<Box<dyn BufRead + 'a>> {
    let mut input = input;
    let mut head = [0u8; 2];
    let mut n = 0;
    while n < head.len() {
        match input.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let is_gzip = n == 2 && head == [0x1f, 0x8b];
    let whole = io::Cursor::new(head).take(n as u64).chain(input);
    let compressed = Arc::new(AtomicU64::new(0));
    let inner: Box<dyn Read + 'a> = if is_gzip {
        Box::new(flate2::read::MultiGzDecoder::new(Counted {
            inner: whole,
            count: compressed.clone(),
        }))
    } else {
        Box::new(whole)
    };
    Ok(Box::new(BufReader::with_capacity(
        64 * 1024,
        Capped {
            inner,
            remaining: max_bytes,
            limit: max_bytes,
            compressed: is_gzip.then_some(compressed),
        },
    )))
}

/// Counts the bytes read through it (the compressed side of a gzip'd document).
struct Counted<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// [`decompress`] then [`SitemapReader::new`].
pub fn open<'a>(
    input: impl Read + 'a,
    doc_url: &Url,
    opts: ReadOptions,
) -> Result<SitemapReader<Box<dyn BufRead + 'a>>, ReadError> {
    let input = decompress(input, opts.max_bytes).map_err(|e| ReadError {
        url: doc_url.as_str().to_string(),
        line: 1,
        kind: io_kind(&e, None),
    })?;
    SitemapReader::new(input, doc_url, opts)
}

// ---------------------------------------------------------------------------------------------
// Input plumbing

/// The error inside the `io::Error` raised when a document outgrows `max_bytes`.
#[derive(Debug)]
struct LimitExceeded(u64);

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "document larger than the {}-byte limit", self.0)
    }
}

impl std::error::Error for LimitExceeded {}

/// The error inside the `io::Error` raised when a gzip'd document inflates past [`MAX_RATIO`]:
/// (decompressed, compressed) bytes so far.
#[derive(Debug)]
struct RatioExceeded(u64, u64);

impl std::error::Error for RatioExceeded {}

impl fmt::Display for RatioExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} compressed bytes inflate to more than {} (over {MAX_RATIO}:1)",
            self.1, self.0
        )
    }
}

/// A reader that fails once more than `limit` bytes would be produced, or (gzip) once what it
/// produced is more than [`MAX_RATIO`] times what was read of the compressed stream.
struct Capped<R> {
    inner: R,
    remaining: u64,
    limit: u64,
    compressed: Option<Arc<AtomicU64>>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.remaining == 0 {
            // Exactly `limit` bytes is fine; one more is not.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(LimitExceeded(self.limit))),
            };
        }
        let max = out
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut out[..max])?;
        self.remaining -= n as u64;
        let produced = self.limit - self.remaining;
        if let Some(compressed) = &self.compressed {
            let compressed = compressed.load(Ordering::Relaxed);
            if produced > RATIO_FLOOR && produced > compressed.saturating_mul(MAX_RATIO) {
                return Err(io::Error::other(RatioExceeded(produced, compressed)));
            }
        }
        Ok(n)
    }
}

/// Counts the newlines in the bytes the XML parser consumes, so that the line of the current
/// position is known without rescanning anything. It keeps its own buffer so that the many
/// small `fill_buf`/`consume` calls quick-xml makes per event stay monomorphic and cheap.
struct LineCounter<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
    newlines: u64,
    /// An error met reading ahead ([`Self::top_up`]), given at the next read that needs
    /// bytes: where the parser would have met it.
    ahead_error: Option<io::Error>,
}

impl<R> LineCounter<R> {
    fn new(inner: R) -> LineCounter<R> {
        LineCounter {
            inner,
            buf: vec![0; 64 * 1024].into_boxed_slice(),
            pos: 0,
            filled: 0,
            newlines: 0,
            ahead_error: None,
        }
    }
}

impl<R> LineCounter<R> {
    /// The bytes read from the input and not consumed yet (no read is made).
    fn buffered(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }
}

impl<R: Read> Read for LineCounter<R> {
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

impl<R: Read> LineCounter<R> {
    /// Read more of the input behind the bytes buffered (moved to the front first), until
    /// `want` are buffered or the input ends: reads arrive in pieces of a few kilobytes, and
    /// an entry cut at the end of one would otherwise be left to the parser. True when bytes
    /// were added.
    fn top_up(&mut self, want: usize) -> bool {
        let before = self.filled - self.pos;
        if before >= want || self.ahead_error.is_some() {
            return false;
        }
        self.buf.copy_within(self.pos..self.filled, 0);
        self.filled = before;
        self.pos = 0;
        while self.filled < want.min(self.buf.len()) {
            match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(0) => break,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.ahead_error = Some(e);
                    break;
                }
            }
        }
        self.filled > before
    }
}

impl<R: Read> BufRead for LineCounter<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.filled {
            if let Some(e) = self.ahead_error.take() {
                return Err(e);
            }
            self.pos = 0;
            self.filled = 0;
            self.filled = loop {
                match self.inner.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            };
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, amt: usize) {
        let end = (self.pos + amt).min(self.filled);
        self.newlines += count_newlines(&self.buf[self.pos..end]);
        self.pos = end;
    }
}

/// The `\n` bytes in `b`, counted in runs of up to 255 with a byte-wide sum the compiler
/// vectorises (a sum as wide as the count widened every byte to 64 bits: a few percent of the
/// CPU of reading a large list).
pub(crate) fn count_newlines(b: &[u8]) -> u64 {
    b.chunks(255)
        .map(|run| {
            let n = run
                .iter()
                .fold(0u8, |n, &c| n.wrapping_add(u8::from(c == b'\n')));
            u64::from(n)
        })
        .sum()
}

/// Skip a UTF-8 BOM and XML whitespace at the very start; returns the newlines skipped.
fn skip_leading_space<R: BufRead>(input: &mut R) -> io::Result<u64> {
    const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
    let mut newlines = 0u64;
    // How much of the BOM has been matched; it may arrive split over reads.
    let mut bom = 0usize;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(newlines);
        }
        let mut i = 0;
        while bom < BOM.len() && i < available.len() && available[i] == BOM[bom] {
            bom += 1;
            i += 1;
        }
        if i < available.len() || bom == BOM.len() {
            // Past the BOM (or there was none): no BOM can start later.
            bom = BOM.len();
        }
        while i < available.len() && matches!(available[i], b' ' | b'\t' | b'\r' | b'\n') {
            if available[i] == b'\n' {
                newlines += 1;
            }
            i += 1;
        }
        let more = i == available.len();
        input.consume(i);
        if !more {
            return Ok(newlines);
        }
    }
}

/// A child of the root that is not an entry: document-level `rs:md`, links and the alpha's
/// `xhtml:meta` go into the header (with a warning when they come after an entry); an unknown
/// Sitemap or ResourceSync element is a warning. Its content is left to the caller.
fn header_element(
    st: &mut State,
    resolver: &NamespaceResolver,
    e: &BytesStart<'_>,
    tag: Tag,
    line: u64,
) -> Result<(), ReadError> {
    match tag {
        Tag::Rs(Name::Md) => {
            st.late_header("<rs:md>");
            if st.md_seen {
                st.warn("several document-level <rs:md>: attributes merged".into());
            }
            let mut md = std::mem::take(&mut st.header.md);
            let modified = apply_md(st, resolver, e, &mut md, true)?;
            st.header.md = md;
            st.md_seen = true;
            st.doc_md_done(modified);
        }
        Tag::Rs(Name::Ln) | Tag::Rs(Name::Link) | Tag::Xhtml(Name::Link) => {
            st.late_header("link");
            if let Some(link) = parse_link(st, resolver, e, tag)? {
                // Beta drafts (2013) pointed up with rel="resourcesync".
                if matches!(tag, Tag::Rs(_)) && link.has_rel("resourcesync") {
                    st.beta = true;
                    st.refresh_syntax();
                }
                if st.header.links.len() < MAX_LINKS {
                    st.header.links.push(link);
                } else {
                    st.repeat(Repeat::ExcessLink, line, || {
                        format!("document-level links past the first {MAX_LINKS} ignored")
                    });
                }
            }
        }
        Tag::Xhtml(Name::Meta) => {
            st.late_header("<xhtml:meta>");
            apply_alpha_meta(st, resolver, e)?;
        }
        Tag::Sitemap(_) | Tag::Rs(_) => {
            let name = e.name().as_ref().to_owned();
            st.unknown_element(&name, st.root_name());
        }
        Tag::Xhtml(_) | Tag::Other => {}
    }
    Ok(())
}

/// What the children of one `<url>` / `<sitemap>` gave so far ([`SitemapReader::read_entry`]).
#[derive(Default)]
struct EntryParts {
    /// `url` or `sitemap`, for messages.
    tag: &'static str,
    loc: Option<Url>,
    lastmod: Option<Timestamp>,
    /// Why `<lastmod>` is no datetime, when it is not.
    invalid: Option<String>,
    md: Md,
    links: Vec<Link>,
    /// Its `xhtml:meta` and Dublin Core `xhtml:link` (2012 draft §3.1.7).
    categories: Vec<crate::model::Category>,
    /// `rs:md` elements seen (several are merged, with a warning).
    mds: u32,
}

/// What the start tag of one child of an entry says, before its content is read: the alpha
/// `rs:type` of a `<lastmod>` (returned), `rs:md` attributes and links (into `parts`), the
/// `type` of an alpha `rs:fixity` (into `st.scratch`); an entry inside an entry is an error and
/// an unknown element a warning.
fn entry_child_start(
    st: &mut State,
    resolver: &NamespaceResolver,
    e: &BytesStart<'_>,
    tag: Tag,
    el_line: u64,
    parts: &mut EntryParts,
) -> Result<Option<Change>, ReadError> {
    let entry_tag = parts.tag;
    match tag {
        Tag::Sitemap(Name::Lastmod) => {
            // ResourceSync 1.1 §13: alpha `<lastmod rs:type="created|updated">`.
            let mut change = None;
            for_each_attr(st, resolver, e, |st, ns, local, value| {
                if ns == AttrNs::Rs && (local == "type" || local == "change") {
                    st.alpha_item = true;
                    change = st.change(&value);
                }
                Ok(())
            })?;
            return Ok(change);
        }
        Tag::Sitemap(Name::Loc) => {
            // The 2012 draft's alternate content transfer: `<loc rs:protocol="P">` names an
            // endpoint of protocol P (its example: an OAI-PMH base URL), not the resource's
            // bytes. Stored as the resource, it would be that endpoint's answer: refused.
            for_each_attr(st, resolver, e, |st, ns, local, value| {
                if ns == AttrNs::Rs && local == "protocol" {
                    st.alpha_item = true;
                    parts.invalid = Some(format!(
                        "line {el_line}: <loc rs:protocol=\"{value}\">: the 2012 draft's alternate content transfer (the URL is an endpoint of that protocol, not the resource's bytes), which rsmirror does not follow; entry refused"
                    ));
                }
                Ok(())
            })?;
        }
        Tag::Sitemap(Name::Url) | Tag::Sitemap(Name::Sitemap) => {
            let msg = format!("<{}> inside <{entry_tag}>", e.name().as_ref());
            return Err(st.err(ReadErrorKind::Xml(msg)));
        }
        Tag::Rs(Name::Md) => {
            parts.mds += 1;
            if parts.mds == 2 {
                st.repeat(Repeat::MergedMd, el_line, || {
                    format!("several <rs:md> in one <{entry_tag}>: attributes merged")
                });
            }
            apply_md(st, resolver, e, &mut parts.md, false)?;
        }
        Tag::Xhtml(Name::Meta) => {
            if let Some(c) = parse_category(st, resolver, e, false)? {
                add_category(st, &mut parts.categories, c);
            }
        }
        Tag::Rs(Name::Ln) | Tag::Rs(Name::Link) | Tag::Xhtml(Name::Link) => {
            if tag == Tag::Xhtml(Name::Link) {
                if let Some(c) = parse_category(st, resolver, e, true)? {
                    add_category(st, &mut parts.categories, c);
                }
            }
            if let Some(link) = parse_link(st, resolver, e, tag)? {
                if parts.links.len() < MAX_LINKS {
                    parts.links.push(link);
                } else {
                    let line = st.line;
                    st.repeat(Repeat::ExcessLink, line, || {
                        format!("links of one entry past the first {MAX_LINKS} ignored")
                    });
                }
            }
        }
        Tag::Rs(Name::Fixity) => {
            st.scratch.clear();
            for_each_attr(st, resolver, e, |st, ns, local, value| {
                if ns == AttrNs::None && local == "type" {
                    st.scratch.push_str(&value);
                }
                Ok(())
            })?;
        }
        Tag::Sitemap(Name::Expires | Name::Changefreq | Name::Priority)
        | Tag::Rs(Name::Size | Name::Mimetype | Name::ContentEncoding | Name::Path) => {}
        Tag::Sitemap(_) | Tag::Rs(_) => {
            let name = e.name().as_ref().to_owned();
            st.unknown_element(&name, entry_tag);
        }
        Tag::Xhtml(_) | Tag::Other => {}
    }
    Ok(None)
}

/// The next event, with `st.line` set to the line where it starts; a DOCTYPE is refused.
fn next_event<'b, R: BufRead>(
    xml: &mut NsReader<LineCounter<R>>,
    buf: &'b mut Vec<u8>,
    st: &mut State,
) -> Result<Event<'b>, ReadError> {
    buf.clear();
    st.line = 1 + st.lead_newlines + xml.get_ref().newlines;
    let ev = xml.read_event_into(buf);
    // After markup the parser looks for text next: the bytes that follow are where
    // `SitemapReader::plain_entry` may read an entry itself.
    st.after_markup = matches!(
        ev,
        Ok(Event::Start(_)
            | Event::End(_)
            | Event::Empty(_)
            | Event::Comment(_)
            | Event::PI(_)
            | Event::Decl(_))
    );
    match ev {
        // XML 1.0 §2.8; ResourceSync documents never need a DTD, and a DTD is where entity
        // expansion attacks live: refuse it outright.
        Ok(Event::DocType(d)) => Err(st.err(
            match d[..]
                .trim_start()
                .get(..4)
                .is_some_and(|t| t.eq_ignore_ascii_case("html"))
            {
                true => ReadErrorKind::Html,
                false => ReadErrorKind::Doctype,
            },
        )),
        Ok(ev) => Ok(ev),
        Err(e) => Err(st.xml_error(e)),
    }
}

#[cfg(test)]
thread_local! {
    /// Tests read documents with and without plain entries and compare.
    static WITHOUT_PLAIN_ENTRIES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Plain entries read (to check that tests reach them).
    static PLAIN_ENTRIES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn tests_without_plain_entries() -> bool {
    WITHOUT_PLAIN_ENTRIES.with(|c| c.get())
}

#[cfg(not(test))]
fn tests_without_plain_entries() -> bool {
    false
}

/// Attributes a plain `rs:md` may have ([`SitemapReader::plain_entry`]).
const PLAIN_ATTRS: usize = 8;

/// Where the parts of a plain entry are in the buffered bytes.
struct PlainUrl {
    /// Newlines before `<url>`.
    newlines: u64,
    loc: std::ops::Range<usize>,
    lastmod: Option<std::ops::Range<usize>>,
    md: bool,
    attrs: [(std::ops::Range<usize>, std::ops::Range<usize>); PLAIN_ATTRS],
    n_attrs: usize,
    /// Just after `</url>`.
    end: usize,
}

/// The longest plain entry looked for past the end of the buffer: real entries are a few
/// hundred bytes.
const PLAIN_LINE: usize = 4096;

/// A plain entry at the start of `b` (see [`SitemapReader::plain_entry`]), or None.
fn plain_url(b: &[u8]) -> Option<PlainUrl> {
    let mut i = 0;
    let mut newlines = 0u64;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        newlines += u64::from(b[i] == b'\n');
        i += 1;
    }
    // Printable ASCII but `<` and `&`, up to the next `<`.
    // Up to the next `stop`, if all of it is printable ASCII but `<` and `&` (each looked at
    // without an early exit, which the compiler vectorises).
    let printable = |from: usize, stop: u8| -> Option<std::ops::Range<usize>> {
        let len = memchr::memchr(stop, &b[from..])?;
        let bad = b[from..from + len].iter().fold(false, |bad, &c| {
            bad | !(0x20..0x7f).contains(&c) | (c == b'&') | (c == b'<')
        });
        (!bad).then_some(from..from + len)
    };
    let content = |from: usize| printable(from, b'<');
    let tag = |at: usize, t: &[u8]| b.get(at..at + t.len()) == Some(t);
    if !tag(i, b"<url><loc>") {
        return None;
    }
    let loc = content(i + 10)?;
    i = loc.end;
    if !tag(i, b"</loc>") {
        return None;
    }
    i += 6;
    let mut lastmod = None;
    if tag(i, b"<lastmod>") {
        let r = content(i + 9)?;
        i = r.end;
        if !tag(i, b"</lastmod>") {
            return None;
        }
        i += 10;
        lastmod = Some(r);
    }
    let mut md = false;
    let mut attrs: [(std::ops::Range<usize>, std::ops::Range<usize>); PLAIN_ATTRS] =
        Default::default();
    let mut n_attrs = 0;
    if tag(i, b"<rs:md ") {
        md = true;
        i += 6;
        loop {
            if tag(i, b"/>") {
                i += 2;
                break;
            }
            if b.get(i) != Some(&b' ') || n_attrs == PLAIN_ATTRS {
                return None;
            }
            i += 1;
            let name_len = b[i..].iter().position(|c| !c.is_ascii_lowercase())?;
            let name = i..i + name_len;
            if name_len == 0 || !tag(name.end, b"=\"") {
                return None;
            }
            let from = name.end + 2;
            let value = printable(from, b'"')?;
            // A repeated attribute is an error the parser reports.
            if attrs[..n_attrs]
                .iter()
                .any(|(n, _)| b[n.clone()] == b[name.clone()])
            {
                return None;
            }
            attrs[n_attrs] = (name, value.clone());
            n_attrs += 1;
            i = value.end + 1;
        }
    }
    if !tag(i, b"</url>") {
        return None;
    }
    Some(PlainUrl {
        newlines,
        loc,
        lastmod,
        md,
        attrs,
        n_attrs,
        end: i + 6,
    })
}

fn is_xml_space(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// The error kind for an I/O failure underneath the parser.
fn io_kind(e: &io::Error, root: Option<&str>) -> ReadErrorKind {
    if let Some(LimitExceeded(limit)) = e.get_ref().and_then(|i| i.downcast_ref::<LimitExceeded>())
    {
        return ReadErrorKind::TooLarge(*limit);
    }
    if let Some(r) = e.get_ref().and_then(|i| i.downcast_ref::<RatioExceeded>()) {
        return ReadErrorKind::Inflates(r.to_string());
    }
    match (e.kind(), root) {
        // A gzip stream cut short.
        (io::ErrorKind::UnexpectedEof, Some(root)) => ReadErrorKind::Truncated(root.to_string()),
        _ => ReadErrorKind::Io(e.to_string()),
    }
}

enum Resolved {
    Char(char),
    Str(&'static str),
}

/// A general entity or character reference in text: only the five predefined entities and
/// character references exist here, since a DTD is refused.
/// XML 1.0 §2.2 (`Char`): no control character but tab, LF and CR, raw or as a character
/// reference, and neither U+FFFE nor U+FFFF. quick-xml does not check this; a document that
/// breaks it is not XML, and its text (a `<loc>` with a NUL, say) is never used.
fn check_chars(st: &State, what: &str) -> Result<(), ReadError> {
    let bad = st.text.char_indices().find(|&(_, c)| {
        (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}')
    });
    match bad {
        None => Ok(()),
        Some((_, c)) => Err(st.err(ReadErrorKind::Xml(format!(
            "<{what}> contains U+{:04X}, a character XML does not allow: not a well-formed document",
            u32::from(c)
        )))),
    }
}

fn resolve_ref(st: &State, r: &BytesRef<'_>) -> Result<Resolved, ReadError> {
    match r.resolve_char_ref() {
        Ok(Some(c)) => return Ok(Resolved::Char(c)),
        Ok(None) => {}
        Err(e) => return Err(st.err(ReadErrorKind::Xml(e.to_string()))),
    }
    match quick_xml::escape::resolve_xml_entity(r) {
        Some(s) => Ok(Resolved::Str(s)),
        None => Err(st.err(ReadErrorKind::Xml(format!("undefined entity &{};", &**r)))),
    }
}

// ---------------------------------------------------------------------------------------------
// Names

/// The namespaces we act on; anything else is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Sitemap(Name),
    Rs(Name),
    Xhtml(Name),
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Url,
    Sitemap,
    Loc,
    Lastmod,
    Changefreq,
    Priority,
    Expires,
    Md,
    Ln,
    Link,
    Meta,
    Fixity,
    Size,
    Mimetype,
    ContentEncoding,
    Path,
    Unknown,
}

fn sitemap_name(local: &str) -> Name {
    match local {
        "url" => Name::Url,
        "sitemap" => Name::Sitemap,
        "loc" => Name::Loc,
        "lastmod" => Name::Lastmod,
        "changefreq" => Name::Changefreq,
        "priority" => Name::Priority,
        "expires" => Name::Expires,
        _ => Name::Unknown,
    }
}

fn rs_name(local: &str) -> Name {
    match local {
        "md" => Name::Md,
        "ln" => Name::Ln,
        // The 2013 beta called `rs:ln` `rs:link` for a while (ResourceSync 1.1 §13).
        "link" => Name::Link,
        "fixity" => Name::Fixity,
        "size" => Name::Size,
        "mimetype" => Name::Mimetype,
        "contentencoding" => Name::ContentEncoding,
        "path" => Name::Path,
        _ => Name::Unknown,
    }
}

fn xhtml_name(local: &str) -> Name {
    match local {
        "link" => Name::Link,
        "meta" => Name::Meta,
        _ => Name::Unknown,
    }
}

fn entry_name(n: Name) -> &'static str {
    if n == Name::Url {
        "url"
    } else {
        "sitemap"
    }
}

/// Where an attribute lives: unprefixed (ResourceSync attributes), the rs namespace (alpha
/// `rs:type`), or elsewhere (ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AttrNs {
    None,
    Rs,
    Other,
}

/// Call `f` for each attribute that is not a namespace declaration, with its value normalised
/// (entities resolved, XML whitespace folded to spaces).
fn for_each_attr<'e>(
    st: &mut State,
    resolver: &NamespaceResolver,
    e: &'e BytesStart<'_>,
    mut f: impl FnMut(&mut State, AttrNs, &str, Cow<'e, str>) -> Result<(), ReadError>,
) -> Result<(), ReadError> {
    for attr in e.attributes() {
        let attr = attr.map_err(|er| st.err(ReadErrorKind::Xml(er.to_string())))?;
        if attr.key.as_namespace_binding().is_some() {
            continue;
        }
        let key = attr.key.as_ref();
        if !key.contains(':') {
            // Unprefixed: no namespace (the common case, resolved without a lookup).
            let value = attr
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|er| st.err(ReadErrorKind::Xml(er.to_string())))?;
            f(st, AttrNs::None, key, value)?;
            continue;
        }
        let (ns, local) = resolver.resolve_attribute(attr.key);
        let ns = match ns {
            ResolveResult::Unbound => AttrNs::None,
            ResolveResult::Bound(n) => match st.ns_of(n.0) {
                Ns::Rs => AttrNs::Rs,
                _ => AttrNs::Other,
            },
            ResolveResult::Unknown(p) => {
                return Err(st.err(ReadErrorKind::Xml(format!(
                    "namespace prefix {p:?} of attribute {} is not declared",
                    attr.key.as_ref()
                ))))
            }
        };
        let value = attr
            .normalized_value(XmlVersion::Implicit1_0)
            .map_err(|er| st.err(ReadErrorKind::Xml(er.to_string())))?;
        f(st, ns, local.as_ref(), value)?;
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    Sitemap,
    Rs,
    Xhtml,
    Other,
}

// ---------------------------------------------------------------------------------------------
// Metadata

/// Apply one `rs:md`'s attributes to `md` (merging); returns the beta `modified=` value.
fn apply_md(
    st: &mut State,
    resolver: &NamespaceResolver,
    e: &BytesStart<'_>,
    md: &mut Md,
    document: bool,
) -> Result<Option<Timestamp>, ReadError> {
    let mut modified = None;
    for_each_attr(st, resolver, e, |st, ns, local, value| {
        // ResourceSync 1.1 §1: ResourceSync attributes carry no prefix. A prefix in the rs
        // namespace is a common slip we read the same way.
        if ns == AttrNs::Other {
            return Ok(());
        }
        md_attr(st, local, &value, md, document, &mut modified)
    })?;
    Ok(modified)
}

/// One `rs:md` attribute (not in another namespace) applied to `md`; `modified` takes the
/// beta `modified=` value.
fn md_attr(
    st: &mut State,
    local: &str,
    value: &str,
    md: &mut Md,
    document: bool,
    modified: &mut Option<Timestamp>,
) -> Result<(), ReadError> {
    match local {
        "capability" => md.capability = Some(st.capability(value, document)),
        "change" => {
            if let Some(c) = st.change(value) {
                md.change = Some(c);
            }
        }
        "datetime" => md.datetime = Some(st.time("rs:md datetime", value)?),
        "at" => md.at = Some(st.time("rs:md at", value)?),
        "completed" => md.completed = Some(st.time("rs:md completed", value)?),
        "from" => md.from = Some(st.time("rs:md from", value)?),
        "until" => md.until = Some(st.time("rs:md until", value)?),
        "modified" => *modified = Some(st.time("rs:md modified", value)?),
        // ResourceSync 1.1 §4: whitespace-separated `alg:digest` tokens.
        "hash" => {
            let digests = parse_hash_attr(value);
            if md.hash.is_empty() {
                md.hash = digests;
            } else {
                md.hash.extend(digests);
            }
        }
        "length" => md.length = Some(st.number("rs:md length", value)?),
        "type" => md.media_type = Some(media_type(value.trim())),
        "encoding" => md.encoding = Some(value.trim().to_string()),
        "path" => md.path = Some(value.trim().to_string()),
        _ => {}
    }
    Ok(())
}

/// One `rs:ln` (or alpha `xhtml:link`); `None` (with a warning) when it lacks rel or href.
fn parse_link(
    st: &mut State,
    resolver: &NamespaceResolver,
    e: &BytesStart<'_>,
    tag: Tag,
) -> Result<Option<Link>, ReadError> {
    let what = match tag {
        Tag::Xhtml(_) => "xhtml:link",
        Tag::Rs(Name::Link) => "rs:link",
        _ => "rs:ln",
    };
    if tag == Tag::Rs(Name::Link) {
        st.warn("beta <rs:link> read as <rs:ln>".into());
    }
    let mut rel: Option<String> = None;
    let mut href: Option<Url> = None;
    let mut bad_href = false;
    let mut link = Link {
        rel: String::new(),
        href: st.doc_url.clone(),
        pri: None,
        media_type: None,
        length: None,
        hash: Vec::new(),
        modified: None,
        path: None,
    };
    for_each_attr(st, resolver, e, |st, ns, local, value| {
        if ns == AttrNs::Other {
            return Ok(());
        }
        match local {
            // ResourceSync 1.1 §5: compare rel case-insensitively (CORE writes describedBy).
            "rel" => rel = Some(value.trim().to_ascii_lowercase()),
            "href" => match st.resolve_url(&value, Repeat::RelativeHref) {
                Ok(u) => href = Some(u),
                Err(reason) => {
                    bad_href = true;
                    st.repeat(Repeat::DroppedLink, st.line, || {
                        format!("{what} with bad href {:?} ignored: {reason}", value.trim())
                    });
                }
            },
            "pri" => match value.trim().parse::<u32>() {
                Ok(p) => {
                    if !(1..=999_999).contains(&p) {
                        st.repeat(Repeat::BadPri, st.line, || {
                            format!("{what} pri={p} outside 1..=999999")
                        });
                    }
                    link.pri = Some(p);
                }
                Err(_) => st.repeat(Repeat::BadPri, st.line, || {
                    format!("{what} pri={value:?} is not an integer; ignored")
                }),
            },
            "type" => link.media_type = Some(value.trim().to_string()),
            "length" => link.length = Some(st.number("rs:ln length", &value)?),
            "hash" => link.hash.extend(parse_hash_attr(&value)),
            "modified" => link.modified = Some(st.time("rs:ln modified", &value)?),
            "path" => link.path = Some(value.trim().to_string()),
            _ => {}
        }
        Ok(())
    })?;
    match (rel, href) {
        (Some(rel), Some(href)) => {
            link.rel = rel;
            link.href = href;
            Ok(Some(link))
        }
        (rel, href) => {
            if !bad_href {
                let missing = if rel.is_none() && href.is_none() {
                    "rel and href"
                } else if rel.is_none() {
                    "rel"
                } else {
                    "href"
                };
                st.repeat(Repeat::DroppedLink, st.line, || {
                    format!("{what} without {missing} ignored")
                });
            }
            Ok(None)
        }
    }
}

/// Categories of one entry past this many are ignored (with a warning).
const MAX_CATEGORIES: usize = 64;

fn add_category(st: &mut State, to: &mut Vec<crate::model::Category>, c: crate::model::Category) {
    if to.contains(&c) {
        return;
    }
    if to.len() < MAX_CATEGORIES {
        to.push(c);
    } else {
        let line = st.line;
        st.repeat(Repeat::ExcessLink, line, || {
            format!("categories of one entry past the first {MAX_CATEGORIES} ignored")
        });
    }
}

/// The category an entry's `xhtml:link` (`link`: rel, href, title; only a Dublin Core rel) or
/// `xhtml:meta` (name, content) gives (2012 draft §3.1.7), if it gives one; one without a
/// value is a warning.
fn parse_category(
    st: &mut State,
    resolver: &NamespaceResolver,
    e: &BytesStart<'_>,
    link: bool,
) -> Result<Option<crate::model::Category>, ReadError> {
    let (mut name, mut value, mut title) = (None, None, None);
    for_each_attr(st, resolver, e, |_, ns, local, v| {
        if ns == AttrNs::None {
            let v = v.trim().to_string();
            match (link, local) {
                (true, "rel") | (false, "name") => name = Some(v),
                (true, "href") | (false, "content") => value = Some(v),
                (true, "title") => title = Some(v),
                _ => {}
            }
        }
        Ok(())
    })?;
    let Some(name) = name else { return Ok(None) };
    if link && !crate::model::Category::is_category_rel(&name) {
        return Ok(None);
    }
    let what = if link { "xhtml:link" } else { "xhtml:meta" };
    let value = match value.filter(|v| !v.is_empty()) {
        Some(v) if link => match st.doc_url.join(&v) {
            Ok(u) => u.to_string(),
            Err(_) => v,
        },
        Some(v) => v,
        None => {
            st.warn(format!(
                "line {}: {what} {name:?} without a value ignored",
                st.line
            ));
            return Ok(None);
        }
    };
    Ok(Some(crate::model::Category {
        name,
        value,
        title: title.filter(|t| !t.is_empty()),
    }))
}

/// Alpha `<xhtml:meta name="DCTERMS.modified" content="T"/>` at document level.
fn apply_alpha_meta(
    st: &mut State,
    resolver: &NamespaceResolver,
    e: &BytesStart<'_>,
) -> Result<(), ReadError> {
    let mut is_modified = false;
    let mut content: Option<String> = None;
    for_each_attr(st, resolver, e, |_, ns, local, value| {
        if ns == AttrNs::None {
            match local {
                "name" => is_modified = value.trim().eq_ignore_ascii_case("DCTERMS.modified"),
                "content" => content = Some(value.into_owned()),
                _ => {}
            }
        }
        Ok(())
    })?;
    if !is_modified {
        return Ok(());
    }
    st.alpha_root = true;
    st.refresh_syntax();
    let Some(content) = content else {
        st.warn("xhtml:meta DCTERMS.modified without content ignored".into());
        return Ok(());
    };
    // ResourceSync 1.1 §13: DCTERMS.modified is the document time: `from` of a Change Set,
    // `at` of an inventory.
    let t = st.time("xhtml:meta DCTERMS.modified", &content)?;
    if st.header.alpha_changeset {
        st.header.md.from = Some(t);
    } else {
        st.header.md.at = Some(t);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// State: everything but the parser and its buffer

/// Warnings that can repeat per entry: the first is reported, the rest counted.
#[derive(Debug, Clone, Copy)]
enum Repeat {
    RelativeLoc,
    RelativeHref,
    AssumedUtc,
    MergedMd,
    UnknownElement,
    Interval,
    Capability,
    BadChange,
    BadPri,
    DroppedLink,
    StrayText,
    ExcessLink,
}

const REPEAT_KINDS: usize = 12;

impl Repeat {
    fn label(self) -> &'static str {
        match self {
            Repeat::RelativeLoc => "relative <loc> resolved against the document URL",
            Repeat::RelativeHref => "relative href resolved against the document URL",
            Repeat::AssumedUtc => "times without a zone read as UTC",
            Repeat::MergedMd => "entries with several <rs:md> merged",
            Repeat::UnknownElement => "unknown elements ignored",
            Repeat::Interval => "entries whose completed < at or until < from",
            Repeat::Capability => "entries with an unusual capability",
            Repeat::BadChange => "unknown change values ignored",
            Repeat::BadPri => "bad pri values",
            Repeat::DroppedLink => "links ignored",
            Repeat::StrayText => "text directly inside the root element ignored",
            Repeat::ExcessLink => "links past the limit ignored",
        }
    }
}

struct State {
    url: String,
    doc_url: Url,
    opts: ReadOptions,
    header: Header,
    warnings: Vec<Warning>,
    /// Warnings met so far, listed or not (see [`MAX_LISTED_WARNINGS`]).
    warnings_met: u64,
    /// Line where the current event starts.
    line: u64,
    /// Newlines skipped before the XML declaration.
    lead_newlines: u64,
    root_known: bool,
    done: bool,
    entries: u64,
    /// Text content of the last text element read, reused.
    text: String,
    /// Small reusable buffer (alpha fixity type).
    scratch: String,
    md_seen: bool,
    beta: bool,
    alpha_root: bool,
    alpha_item: bool,
    alias_warned: bool,
    repeats: [(u64, u64); REPEAT_KINDS],
    origin: LastOrigin,
    /// The last event was markup (the parser looks for text next).
    after_markup: bool,
    /// `<url>` and `<loc>` are in the Sitemap namespace and `rs:` is the ResourceSync one,
    /// as declared on the root: plain entries may be read without the parser.
    plain: bool,
}

/// The origin of the last absolute URL parsed, to parse the next one of the same origin
/// without parsing its scheme and host again (`<loc>` after `<loc>` of one site, a million
/// times).
#[derive(Default)]
struct LastOrigin {
    /// `scheme://host[:port]` as the URL serialises it, and a URL of that origin without
    /// query or fragment (its path is replaced).
    last: Option<(String, Url)>,
}

impl LastOrigin {
    /// `Url::parse(v)`, when `v` is the remembered origin followed by a plain path: only
    /// unreserved characters and `/`, no empty or dot segment, no query or fragment. Such a
    /// path is kept byte for byte by the parser, so setting it on the origin gives the same
    /// URL. `None` for anything else.
    fn parse(&self, v: &str) -> Option<Url> {
        let (prefix, base) = self.last.as_ref()?;
        let path = v.strip_prefix(prefix.as_str())?;
        let plain = path.len() > 1
            && path.starts_with('/')
            && path.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~')
            })
            && !path.contains("//")
            && !path.contains("/.");
        if !plain {
            return None;
        }
        let mut u = base.clone();
        u.set_path(path);
        debug_assert_eq!(Some(&u), Url::parse(v).ok().as_ref(), "{v}");
        Some(u)
    }

    fn remember(&mut self, u: &Url) {
        /// The longest path kept in the remembered URL.
        const KEPT_PATH: usize = 128;
        if !matches!(u.scheme(), "http" | "https") || u.cannot_be_a_base() {
            return;
        }
        let prefix = &u[..url::Position::BeforePath];
        if self.last.as_ref().is_some_and(|(p, _)| p == prefix) {
            return;
        }
        // The path is kept, not set to `/`: `parse` replaces it whole, and a clone of this
        // URL then has room for a path as long, so that setting one of a list's (mostly
        // alike) paths does not grow the string again. A long one is not kept, as every
        // URL parsed from it would carry its room.
        let mut base = u.clone();
        if base.path().len() > KEPT_PATH {
            base.set_path("/");
        }
        base.set_query(None);
        base.set_fragment(None);
        self.last = Some((prefix.to_string(), base));
    }
}

impl State {
    fn new(doc_url: &Url, opts: ReadOptions) -> State {
        State {
            url: doc_url.as_str().to_string(),
            doc_url: doc_url.clone(),
            opts,
            header: Header {
                root: Root::Urlset,
                syntax: Syntax::Plain,
                md: Md::default(),
                links: Vec::new(),
                alpha_changeset: false,
                namespaces: Vec::new(),
            },
            warnings: Vec::new(),
            warnings_met: 0,
            line: 1,
            lead_newlines: 0,
            root_known: false,
            done: false,
            entries: 0,
            text: String::with_capacity(256),
            scratch: String::new(),
            md_seen: false,
            beta: false,
            alpha_root: false,
            alpha_item: false,
            alias_warned: false,
            repeats: [(0, 0); REPEAT_KINDS],
            origin: LastOrigin::default(),
            after_markup: false,
            plain: false,
        }
    }

    fn set_root(&mut self, root: Root) {
        self.header.root = root;
        self.root_known = true;
    }

    fn root_name(&self) -> &'static str {
        match self.header.root {
            Root::Urlset => "urlset",
            Root::SitemapIndex => "sitemapindex",
        }
    }

    fn err(&self, kind: ReadErrorKind) -> ReadError {
        self.err_at(self.line, kind)
    }

    fn err_at(&self, line: u64, kind: ReadErrorKind) -> ReadError {
        ReadError {
            url: self.url.clone(),
            line,
            kind,
        }
    }

    fn truncated(&self) -> ReadError {
        self.err(ReadErrorKind::Truncated(self.root_name().to_string()))
    }

    fn io_error(&self, e: &io::Error) -> ReadError {
        let root = self.root_known.then(|| self.root_name());
        self.err(io_kind(e, root))
    }

    fn xml_error(&self, e: quick_xml::Error) -> ReadError {
        match e {
            quick_xml::Error::Io(io) => self.io_error(&io),
            // A document cut inside markup is as truncated as one cut between elements.
            quick_xml::Error::Syntax(s) if self.root_known && is_unclosed(s) => self.truncated(),
            other => self.err(ReadErrorKind::Xml(other.to_string())),
        }
    }

    fn warn(&mut self, message: String) {
        self.warn_at(self.line, message);
    }

    fn warn_at(&mut self, line: u64, message: String) {
        self.warnings_met += 1;
        if self.warnings_met <= MAX_LISTED_WARNINGS {
            self.warnings.push(Warning { line, message });
        }
    }

    fn repeat(&mut self, kind: Repeat, line: u64, message: impl FnOnce() -> String) {
        let slot = &mut self.repeats[kind as usize];
        slot.0 += 1;
        if slot.0 == 1 {
            slot.1 = line;
            let message = message();
            self.warn_at(line, message);
        }
    }

    /// At the end of the document: one line per repeated warning with its count.
    fn summarise_repeats(&mut self) {
        const ALL: [Repeat; REPEAT_KINDS] = [
            Repeat::RelativeLoc,
            Repeat::RelativeHref,
            Repeat::AssumedUtc,
            Repeat::MergedMd,
            Repeat::UnknownElement,
            Repeat::Interval,
            Repeat::Capability,
            Repeat::BadChange,
            Repeat::BadPri,
            Repeat::DroppedLink,
            Repeat::StrayText,
            Repeat::ExcessLink,
        ];
        for kind in ALL {
            let (count, first) = self.repeats[kind as usize];
            if count > 1 {
                let message = format!(
                    "{}: {count} times in this document (the first, line {first}, is reported above)",
                    kind.label()
                );
                // A summary is listed whatever the bound: at most one line per kind.
                self.warnings.push(Warning {
                    line: self.line,
                    message,
                });
            }
        }
        if self.warnings_met > MAX_LISTED_WARNINGS {
            let message = format!(
                "{} more warnings in this document not listed (the first {MAX_LISTED_WARNINGS} are)",
                self.warnings_met - MAX_LISTED_WARNINGS
            );
            self.warnings.push(Warning {
                line: self.line,
                message,
            });
        }
    }

    fn ns_of(&mut self, uri: &str) -> Ns {
        match uri {
            SITEMAP_NS => Ns::Sitemap,
            RS_NS => Ns::Rs,
            XHTML_NS => Ns::Xhtml,
            _ if RS_NS_ALIASES.contains(&uri) => {
                // ResourceSync 1.1 §1: aliases seen in the wild, accepted with a warning.
                if !self.alias_warned {
                    self.alias_warned = true;
                    self.warn(format!(
                        "ResourceSync namespace written as {uri:?}; read as {RS_NS:?}"
                    ));
                }
                Ns::Rs
            }
            _ => Ns::Other,
        }
    }

    /// What an element is, by namespace URI and local name (never by prefix).
    fn classify(
        &mut self,
        resolver: &NamespaceResolver,
        e: &BytesStart<'_>,
    ) -> Result<Tag, ReadError> {
        let (ns, local) = resolver.resolve_element(e.name());
        Ok(match ns {
            ResolveResult::Bound(n) => match self.ns_of(n.0) {
                Ns::Sitemap => Tag::Sitemap(sitemap_name(local.as_ref())),
                Ns::Rs => Tag::Rs(rs_name(local.as_ref())),
                Ns::Xhtml => Tag::Xhtml(xhtml_name(local.as_ref())),
                Ns::Other => Tag::Other,
            },
            ResolveResult::Unbound => Tag::Other,
            ResolveResult::Unknown(p) => {
                return Err(self.err(ReadErrorKind::Xml(format!(
                    "namespace prefix {p:?} of <{}> is not declared",
                    e.name().as_ref()
                ))))
            }
        })
    }

    fn unknown_element(&mut self, name: &str, parent: &str) {
        let line = self.line;
        self.repeat(Repeat::UnknownElement, line, || {
            format!("unknown element <{name}> inside <{parent}> ignored")
        });
    }

    fn stray_text(&mut self) {
        let (line, root) = (self.line, self.root_name());
        self.repeat(Repeat::StrayText, line, || {
            format!("text directly inside <{root}> ignored")
        });
    }

    fn late_header(&mut self, what: &str) {
        if self.entries > 0 {
            self.warn(format!(
                "document-level {what} after the first entry (applied to the header)"
            ));
        }
    }

    fn refresh_syntax(&mut self) {
        self.header.syntax = if self.alpha_root {
            Syntax::Alpha2012
        } else if self.md_seen {
            if self.beta {
                Syntax::Beta2013
            } else {
                Syntax::V1
            }
        } else if self.alpha_item {
            Syntax::Alpha2012
        } else {
            Syntax::Plain
        };
    }

    /// After a document-level `rs:md`: beta mapping and sanity warnings.
    fn doc_md_done(&mut self, modified: Option<Timestamp>) {
        let cap = self.header.md.capability.clone();
        let is_change_doc = matches!(
            cap,
            Some(Capability::ChangeList | Capability::ChangeDump | Capability::ChangeDumpManifest)
        );
        if let Some(t) = modified {
            // The 2013 beta's `modified=` is "the document's last modification time" (Klein
            // et al., "Evaluating Sitemaps for ResourceSync", 2013): a snapshot's `at`. Of a
            // change document it says when the last change was added, not where its changes
            // start: no `from=` (a list modified after the sync point is no gap), and no
            // `until=` either (the list is still open).
            self.beta = true;
            if is_change_doc {
                self.warn(format!(
                    "beta modified= ({t}) is when the change document last changed, not where \
                     it starts: read as neither from= nor until="
                ));
            } else if self.header.md.at.is_none() {
                self.header.md.at = Some(t);
                self.warn("beta modified= read as at=".into());
            } else {
                self.warn("beta modified= ignored: at= is also given".into());
            }
        }
        match &cap {
            None => self.warn("document-level <rs:md> without capability".into()),
            // Seen in rs-test: a Change List Index carrying at/completed (digest §11).
            Some(Capability::ChangeList)
                if self.header.md.from.is_none() && self.header.md.at.is_some() =>
            {
                self.warn(
                    "change list with at= but no from= (ResourceSync 1.1 §3 wants from=)".into(),
                );
            }
            _ => {}
        }
        let md = self.header.md.clone();
        let line = self.line;
        self.check_intervals(&md, line, true);
        self.refresh_syntax();
    }

    fn check_intervals(&mut self, md: &Md, line: u64, document: bool) {
        let mut problems = Vec::new();
        if let (Some(at), Some(completed)) = (md.at, md.completed) {
            if completed < at {
                problems.push(format!("completed {completed} is before at {at}"));
            }
        }
        if let (Some(from), Some(until)) = (md.from, md.until) {
            if until < from {
                problems.push(format!("until {until} is before from {from}"));
            }
        }
        for p in problems {
            if document {
                self.warn_at(line, format!("document-level rs:md: {p}"));
            } else {
                self.repeat(Repeat::Interval, line, || format!("entry rs:md: {p}"));
            }
        }
    }

    fn capability(&mut self, raw: &str, document: bool) -> Capability {
        let cap = Capability::parse(raw);
        let message = if crate::rs::notification::is_channel(&cap) {
            // ResourceSync Change Notification 1.0.1: a push channel, known (`follow`).
            None
        } else if let Capability::Other(name) = &cap {
            // ResourceSync 1.1 §2: unknown values are kept, logged, otherwise ignored.
            Some(format!("unknown capability {name:?}"))
        } else if raw != cap.name() {
            // The 2013 Sitemap-extension paper wrote `resourceList`.
            Some(format!("capability {raw:?} read as {:?}", cap.name()))
        } else {
            None
        };
        if let Some(message) = message {
            if document {
                self.warn(message);
            } else {
                let line = self.line;
                self.repeat(Repeat::Capability, line, || message);
            }
        }
        cap
    }

    fn change(&mut self, raw: &str) -> Option<Change> {
        let c = Change::parse(raw);
        if c.is_none() {
            let line = self.line;
            self.repeat(Repeat::BadChange, line, || {
                format!("unknown change value {raw:?} ignored")
            });
        }
        c
    }

    fn time(&mut self, what: &str, value: &str) -> Result<Timestamp, ReadError> {
        match w3c_datetime::parse(value, self.opts.zone) {
            Ok(p) => {
                if p.assumed_utc {
                    let line = self.line;
                    self.repeat(Repeat::AssumedUtc, line, || {
                        format!("{what}: time without a zone {value:?} read as UTC")
                    });
                }
                Ok(p.timestamp)
            }
            Err(source) => Err(self.err(ReadErrorKind::BadDatetime {
                what: what.to_string(),
                source,
            })),
        }
    }

    /// `<lastmod>` from the text just read. A value that is no datetime at all fails only its
    /// entry (`Err(Ok(why))`, the caller refuses that entry): one bad `lastmod` among a million
    /// must not stop a baseline. A time without a zone stays an error of the document
    /// (`Err(Err(_))`): it is the document's dialect, and `--assume-utc` reads it.
    fn text_lastmod(&mut self, line: u64) -> Result<Timestamp, Result<String, ReadError>> {
        match self.text_time(line, "<lastmod>") {
            Ok(t) => Ok(t),
            Err(e)
                if matches!(
                    e.kind,
                    ReadErrorKind::BadDatetime {
                        source: DatetimeError::Malformed(_),
                        ..
                    }
                ) =>
            {
                Err(Ok(format!("line {line}: {}", e.kind)))
            }
            Err(e) => Err(Err(e)),
        }
    }

    /// A datetime from the text just read, reported at the element's line.
    fn text_time(&mut self, line: u64, what: &str) -> Result<Timestamp, ReadError> {
        let text = std::mem::take(&mut self.text);
        let saved = std::mem::replace(&mut self.line, line);
        let r = self.time(what, &text);
        self.line = saved;
        self.text = text;
        r
    }

    fn number(&self, what: &str, value: &str) -> Result<u64, ReadError> {
        value.trim().parse::<u64>().map_err(|_| {
            self.err(ReadErrorKind::BadNumber {
                what: what.to_string(),
                value: value.to_string(),
            })
        })
    }

    fn text_number(&self, line: u64, what: &str) -> Result<u64, ReadError> {
        self.number(what, &self.text).map_err(|mut e| {
            e.line = line;
            e
        })
    }

    /// An absolute URL, or a relative one resolved against the document URL with a warning.
    fn resolve_url(&mut self, value: &str, kind: Repeat) -> Result<Url, String> {
        let v = value.trim();
        if v.is_empty() {
            return Err("empty".into());
        }
        if let Some(u) = self.origin.parse(v) {
            return Ok(u);
        }
        match Url::parse(v) {
            Ok(u) => {
                self.origin.remember(&u);
                Ok(u)
            }
            Err(url::ParseError::RelativeUrlWithoutBase) => {
                let u = self.doc_url.join(v).map_err(|e| e.to_string())?;
                let line = self.line;
                let what = match kind {
                    Repeat::RelativeLoc => "<loc>",
                    _ => "href",
                };
                self.repeat(kind, line, || format!("relative {what} {v:?} read as {u}"));
                Ok(u)
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// `<loc>` from the text just read (ResourceSync 1.1 §4: trimmed, relative resolved).
    fn loc(&mut self, line: u64) -> Result<Url, ReadError> {
        let text = std::mem::take(&mut self.text);
        let saved = std::mem::replace(&mut self.line, line);
        let r = self.resolve_url(&text, Repeat::RelativeLoc);
        self.line = saved;
        let r = r.map_err(|reason| {
            self.err_at(
                line,
                ReadErrorKind::BadUrl {
                    value: text.trim().to_string(),
                    reason,
                },
            )
        });
        self.text = text;
        r
    }
}

fn is_unclosed(s: quick_xml::errors::SyntaxError) -> bool {
    use quick_xml::errors::SyntaxError as S;
    matches!(
        s,
        S::UnclosedTag
            | S::UnclosedComment
            | S::UnclosedCData
            | S::UnclosedPI
            | S::UnclosedDoctype
            | S::UnclosedSingleQuotedAttributeValue
            | S::UnclosedDoubleQuotedAttributeValue
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rs::digest::Encoding;
    use std::io::Write;

    #[test]
    fn newlines_are_counted_across_runs_of_any_length() {
        for len in [0usize, 1, 254, 255, 256, 510, 511, 1000, 4096] {
            for every in [1usize, 2, 7, 255, 300] {
                let b: Vec<u8> = (0..len)
                    .map(|i| if i % every == 0 { b'\n' } else { b'x' })
                    .collect();
                let expected = b.iter().filter(|&&c| c == b'\n').count() as u64;
                assert_eq!(count_newlines(&b), expected, "{len} bytes, every {every}");
            }
        }
    }

    const DOC: &str = "https://data.example.org/rs/texts/doc.xml";

    fn url() -> Url {
        Url::parse(DOC).unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    struct Read {
        header: Header,
        entries: Vec<Entry>,
        warnings: Vec<Warning>,
    }

    fn read_bytes(input: &[u8], opts: ReadOptions) -> Result<Read, ReadError> {
        read_from(input, opts)
    }

    fn read_from(input: impl std::io::Read, opts: ReadOptions) -> Result<Read, ReadError> {
        let mut r = open(input, &url(), opts)?;
        let mut entries = Vec::new();
        while let Some(e) = r.next_entry()? {
            entries.push(e);
        }
        // A finished reader stays finished.
        assert!(r.next_entry()?.is_none());
        Ok(Read {
            header: r.header().clone(),
            entries,
            warnings: r.take_warnings(),
        })
    }

    fn read(xml: &str) -> Result<Read, ReadError> {
        read_bytes(xml.as_bytes(), ReadOptions::default())
    }

    fn read_ok(xml: &str) -> Read {
        read(xml).unwrap_or_else(|e| panic!("{e}"))
    }

    fn read_err(xml: &str) -> ReadError {
        match read(xml) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e,
        }
    }

    /// Read `doc` with plain entries read directly and without; both must give the same.
    /// Returns how many entries were read directly.
    fn same_without_plain_entries(doc: &[u8]) -> u64 {
        let with = |without: bool| {
            WITHOUT_PLAIN_ENTRIES.with(|c| c.set(without));
            PLAIN_ENTRIES.with(|c| c.set(0));
            let r = read_bytes(doc, ReadOptions::default());
            WITHOUT_PLAIN_ENTRIES.with(|c| c.set(false));
            (r, PLAIN_ENTRIES.with(|c| c.get()))
        };
        let (plain, n) = with(false);
        let (parsed, none) = with(true);
        assert_eq!(none, 0);
        let doc = String::from_utf8_lossy(doc);
        match (plain, parsed) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.header, b.header, "{doc}");
                assert_eq!(a.entries, b.entries, "{doc}");
                assert_eq!(a.warnings, b.warnings, "{doc}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{doc}"),
            (a, b) => panic!(
                "{doc}\nplain: {:?}\nparsed: {:?}",
                a.map(|r| r.entries.len()),
                b.map(|r| r.entries.len())
            ),
        }
        n
    }

    #[test]
    fn plain_entries_read_directly_read_as_the_parser_reads_them() {
        const MD: &str = r#"<rs:md hash="md5:9f9f90dbe3e5ee1218c86b8839db1995 sha-256:b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" length="6" type="text/plain"/>"#;
        let plain = |i: usize| {
            format!(
                "<url><loc>http://example.org/r/{i}</loc><lastmod>2024-05-01T03:00:{:02}Z</lastmod>{MD}</url>",
                i % 60
            )
        };
        let header = r#"<rs:md capability="resourcelist" at="2024-05-01T06:00:00Z"/>"#;
        let odd: Vec<String> = [
            "<url><loc>http://example.org/a</loc></url>",
            "<url><loc>http://example.org/a</loc><lastmod>2024-05-01</lastmod></url>",
            "<url><loc>http://example.org/a</loc><rs:md length=\"6\"/></url>",
            "<url><loc>r/relative</loc></url>",
            "<url><loc>  http://example.org/padded  </loc></url>",
            "<url><loc>http://example.org/a&amp;b</loc></url>",
            "<url><loc><![CDATA[http://example.org/cdata]]></loc></url>",
            "<url><loc>http://example.org/a</loc><!-- note --></url>",
            "<url><loc>http://example.org/é</loc></url>",
            "<url><loc>http://example.org/a</loc><lastmod>yesterday</lastmod></url>",
            "<url><loc>http://example.org/a</loc><lastmod>2024-05-01T03:00:00</lastmod></url>",
            "<url><loc>http://example.org/a</loc><rs:md length=\"x\"/></url>",
            "<url><loc>http://example.org/a</loc><rs:md length=\"1\" length=\"2\"/></url>",
            "<url><loc>http://example.org/a</loc><rs:md length='1'/></url>",
            "<url><loc>http://example.org/a</loc><rs:md  length=\"1\"/></url>",
            "<url><loc>http://example.org/a</loc><rs:md length=\"1\" capability=\"resourceList\" at=\"2024-05-01T06:00:00Z\" completed=\"2024-05-01T05:00:00Z\"/></url>",
            "<url><loc>http://example.org/a</loc><rs:md hash=\"MD5:9F9F90DBE3E5EE1218C86B8839DB1995 sha-1:zz\" change=\"gone\" xyz=\"1\"/></url>",
            "<url><loc>http://example.org/a</loc><rs:md rs:length=\"1\"/></url>",
            "<url><loc>http://example.org/a</loc><rs:md xmlns:rs=\"http://other\" length=\"1\"/></url>",
            "<url xmlns=\"http://other\"><loc>http://example.org/a</loc></url>",
            "<url><loc>http://example.org/a</loc><changefreq>daily</changefreq></url>",
            "<url><lastmod>2024-05-01</lastmod><loc>http://example.org/a</loc></url>",
            "<url><loc>http://example.org/a</loc><loc>http://example.org/b</loc></url>",
            "<url><loc></loc></url>",
            "<url><loc>http://exa mple.org/a</loc></url>",
            "<url><loc>http://example.org/a</loc><rs:md length=\"1\"></rs:md></url>",
            "<url><loc>http://example.org/a</loc><rs:md length=\"1\" /></url>",
            "<url><loc>http://example.org/a</loc></url>stray",
            "<url/>",
            "<url><loc>http://example.org/a</loc>",
            "<url><loc>http://example.org/a</loc></urlx>",
            "<sitemap><loc>http://example.org/a</loc></sitemap>",
            "<url><loc>http://example.org/a\t</loc></url>",
            "<url><loc>http://example.org/a</loc>\n<lastmod>2024-05-01</lastmod></url>",
            "<url><loc>http://example.org/a</loc><rs:md length=\"1\"/><rs:md type=\"x\"/></url>",
            "<url><loc>http://example.org/a</loc><rs:ln rel=\"duplicate\" href=\"http://m.example.org/a\"/></url>",
            "<!-- between --><url><loc>http://example.org/a</loc></url>",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut direct = 0;
        for body in &odd {
            for (before, after) in [(0, 0), (3, 0), (0, 3), (2, 2)] {
                let mut doc = String::new();
                for i in 0..before {
                    doc.push_str(&plain(i));
                    doc.push('\n');
                }
                doc.push_str(body);
                for i in 0..after {
                    doc.push('\n');
                    doc.push_str(&plain(i + 100));
                }
                let with_header = urlset(&format!("{header}\n{doc}"));
                direct += same_without_plain_entries(with_header.as_bytes());
                same_without_plain_entries(urlset(&doc).as_bytes());
                // Cut short inside the last entries.
                for cut in [13, 40, 90, 200] {
                    let end = with_header.len().saturating_sub(cut);
                    same_without_plain_entries(&with_header.as_bytes()[..end]);
                }
            }
        }
        assert!(direct > 100, "{direct}");
        // Large enough to cross the read buffer's edge, with odd entries here and there.
        let mut doc = String::new();
        for i in 0..3000 {
            doc.push_str(&plain(i));
            doc.push_str(match i % 3 {
                0 => "\n",
                1 => "\n  ",
                _ => "",
            });
            // Odd entries that read without error.
            let fine = [0, 1, 2, 3, 4, 5, 6, 7, 16, 20, 34, 35, 36];
            if i % 97 == 7 {
                doc.push_str(&odd[fine[i % fine.len()]]);
            }
        }
        assert!(same_without_plain_entries(urlset(&doc).as_bytes()) > 2500);
        // Another prefix, or an index: the parser reads everything.
        let other = urlset(&plain(1))
            .replace("xmlns:rs=", "xmlns:x=")
            .replace("rs:md", "x:md");
        assert_eq!(same_without_plain_entries(other.as_bytes()), 0);
        let index = format!(
            "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">{}</sitemapindex>",
            plain(1)
        );
        assert_eq!(same_without_plain_entries(index.as_bytes()), 0);
    }

    /// Gives `chunk` bytes a read (as a network does), and fails once `fail_at` are given.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
        fail_at: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.fail_at == 0 {
                return Err(io::Error::other("connection reset"));
            }
            let n = self
                .chunk
                .min(out.len())
                .min(self.data.len())
                .min(self.fail_at);
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            self.fail_at -= n;
            Ok(n)
        }
    }

    #[test]
    fn entries_cut_between_reads_are_read_directly_all_the_same() {
        let md = r#"<rs:md hash="md5:9f9f90dbe3e5ee1218c86b8839db1995" length="6"/>"#;
        let body: Vec<String> = (0..400)
            .map(|i| format!("<url><loc>http://example.org/r/{i}</loc>{md}</url>"))
            .collect();
        let doc = urlset(&body.join("\n"));
        let doc = doc.as_bytes();
        for chunk in [1, 7, 100, 4000, 70_000] {
            for fail_at in [usize::MAX, doc.len() / 2, doc.len() - 20] {
                let with = |without: bool| {
                    WITHOUT_PLAIN_ENTRIES.with(|c| c.set(without));
                    PLAIN_ENTRIES.with(|c| c.set(0));
                    let input = Trickle {
                        data: doc,
                        chunk,
                        fail_at,
                    };
                    let r = read_from(input, ReadOptions::default());
                    WITHOUT_PLAIN_ENTRIES.with(|c| c.set(false));
                    (r, PLAIN_ENTRIES.with(|c| c.get()))
                };
                let ((plain, n), (parsed, _)) = (with(false), with(true));
                match (plain, parsed) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.entries, b.entries, "{chunk} {fail_at}");
                        assert_eq!(a.warnings, b.warnings, "{chunk} {fail_at}");
                        // Every entry read directly (but perhaps the first, with the root).
                        assert!(n >= 399, "{chunk}: {n}");
                    }
                    (Err(a), Err(b)) => {
                        assert_eq!(a.to_string(), b.to_string(), "{chunk} {fail_at}");
                        assert!(a.to_string().contains("connection reset"), "{a}");
                    }
                    (a, b) => panic!("{chunk} {fail_at}: {:?} {:?}", a.is_ok(), b.is_ok()),
                }
            }
        }
    }

    fn warned(r: &Read, needle: &str) -> bool {
        r.warnings.iter().any(|w| w.message.contains(needle))
    }

    const URLSET: &str = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">"#;

    fn urlset(body: &str) -> String {
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{URLSET}\n{body}\n</urlset>\n")
    }

    /// ResourceSync 1.1 digest §14, example C.
    const EXAMPLE_C: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="https://data.example.org/rs/texts/capabilitylist.xml"/>
  <rs:md capability="resourcelist" at="2024-05-01T06:00:00Z" completed="2024-05-01T06:00:07Z"/>
  <url>
    <loc>https://data.example.org/r/alpha</loc>
    <lastmod>2024-05-01T03:00:00Z</lastmod>
    <rs:md hash="md5:9f9f90dbe3e5ee1218c86b8839db1995 sha-256:b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060"
           length="6" type="text/plain"/>
  </url>
  <url>
    <loc>https://data.example.org/r/beta</loc>
    <lastmod>2024-04-29T08:00:00+02:00</lastmod>   <!-- = 06:00:00Z -->
    <rs:md hash="md5:57a9abf56648bed40162ba3a384710ea" length="10" type="text/plain"/>
    <rs:ln rel="duplicate" pri="1" href="https://mirror.example.net/r/beta"/>
  </url>
</urlset>
"#;

    #[test]
    fn resource_list_example_c() {
        let r = read_ok(EXAMPLE_C);
        let h = &r.header;
        assert_eq!(h.root, Root::Urlset);
        assert_eq!(h.syntax, Syntax::V1);
        assert_eq!(h.capability(), Some(Capability::ResourceList));
        assert_eq!(h.md.at, Some(ts("2024-05-01T06:00:00Z")));
        assert_eq!(h.md.completed, Some(ts("2024-05-01T06:00:07Z")));
        assert_eq!(h.md.from, None);
        assert!(!h.alpha_changeset);
        assert_eq!(h.links.len(), 1);
        assert_eq!(
            h.link("up").unwrap().href.as_str(),
            "https://data.example.org/rs/texts/capabilitylist.xml"
        );
        assert_eq!(r.entries.len(), 2);

        let a = &r.entries[0];
        assert_eq!(a.line, 6);
        assert_eq!(a.loc.as_str(), "https://data.example.org/r/alpha");
        assert_eq!(a.lastmod, Some(ts("2024-05-01T03:00:00Z")));
        assert_eq!(a.md.length, Some(6));
        assert_eq!(a.md.media_type.as_deref(), Some("text/plain"));
        assert_eq!(a.md.change, None);
        assert_eq!(a.md.hash.len(), 2);
        assert_eq!(a.md.hash[0].algorithm, Algorithm::Md5);
        assert_eq!(
            a.md.hash[0].hex.as_deref(),
            Some("9f9f90dbe3e5ee1218c86b8839db1995")
        );
        assert_eq!(a.md.hash[1].algorithm, Algorithm::Sha256);
        assert_eq!(
            a.md.hash[1].hex.as_deref(),
            Some("b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060")
        );
        assert!(a.links.is_empty());

        let b = &r.entries[1];
        assert_eq!(b.line, 12);
        assert_eq!(b.loc.as_str(), "https://data.example.org/r/beta");
        // ResourceSync 1.1 §3: UTC = local − offset.
        assert_eq!(b.lastmod, Some(ts("2024-04-29T06:00:00Z")));
        assert_eq!(b.md.length, Some(10));
        assert_eq!(b.md.hash.len(), 1);
        assert_eq!(
            b.md.hash[0].hex.as_deref(),
            Some("57a9abf56648bed40162ba3a384710ea")
        );
        assert_eq!(b.links.len(), 1);
        assert_eq!(b.links[0].rel, "duplicate");
        assert_eq!(b.links[0].pri, Some(1));
        assert_eq!(
            b.links[0].href.as_str(),
            "https://mirror.example.net/r/beta"
        );
        assert_eq!(b.duplicates().len(), 1);

        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn header_is_available_before_the_first_next_entry() {
        let r = open(EXAMPLE_C.as_bytes(), &url(), ReadOptions::default()).unwrap();
        assert_eq!(r.header().capability(), Some(Capability::ResourceList));
        // The first entry is read, and held, with the header.
        assert_eq!(r.st.entries, 1);
    }

    #[test]
    fn resource_list_index() {
        let r = read_ok(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
              xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="https://data.example.org/rs/texts/capabilitylist.xml"/>
  <rs:md capability="resourcelist" at="2024-05-01T06:00:00Z"/>
  <sitemap><loc>https://data.example.org/rs/texts/rl-1.xml</loc>
           <lastmod>2024-05-01T06:01:00Z</lastmod>
           <rs:md at="2024-05-01T06:00:00Z" completed="2024-05-01T06:01:00Z"/></sitemap>
  <sitemap><loc>https://data.example.org/rs/texts/rl-2.xml</loc>
           <rs:md at="2024-05-01T06:01:00Z"/></sitemap>
</sitemapindex>"#,
        );
        assert_eq!(r.header.root, Root::SitemapIndex);
        assert!(r.header.is_index());
        assert_eq!(r.header.capability(), Some(Capability::ResourceList));
        assert_eq!(r.header.md.at, Some(ts("2024-05-01T06:00:00Z")));
        assert_eq!(r.entries.len(), 2);
        assert_eq!(
            r.entries[0].loc.as_str(),
            "https://data.example.org/rs/texts/rl-1.xml"
        );
        assert_eq!(r.entries[0].md.completed, Some(ts("2024-05-01T06:01:00Z")));
        assert_eq!(r.entries[0].lastmod, Some(ts("2024-05-01T06:01:00Z")));
        assert_eq!(r.entries[1].md.at, Some(ts("2024-05-01T06:01:00Z")));
        assert_eq!(r.entries[1].line, 9);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn change_list_1_0_uses_lastmod_as_event_time() {
        let r = read_ok(&urlset(
            r#"<rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
<rs:md capability="changelist" from="2013-01-03T00:00:00Z"/>
<url><loc>http://example.com/res1.html</loc><lastmod>2013-01-03T11:00:00Z</lastmod><rs:md change="created"/></url>
<url><loc>http://example.com/res3.tiff</loc><lastmod>2013-01-03T18:00:00Z</lastmod><rs:md change="deleted"/></url>
<url><loc>http://example.com/res2.pdf</loc><lastmod>2000-01-01T00:00:00Z</lastmod><rs:md change="updated" datetime="2013-01-03T21:00:00Z"/></url>"#,
        ));
        assert_eq!(r.header.capability(), Some(Capability::ChangeList));
        assert_eq!(r.header.md.from, Some(ts("2013-01-03T00:00:00Z")));
        assert_eq!(r.header.md.until, None);
        let e = &r.entries;
        assert_eq!(e[0].md.change, Some(Change::Created));
        assert_eq!(e[0].md.datetime, None);
        assert_eq!(e[0].event_time(), Some(ts("2013-01-03T11:00:00Z")));
        assert_eq!(e[1].md.change, Some(Change::Deleted));
        assert_eq!(e[1].event_time(), Some(ts("2013-01-03T18:00:00Z")));
        // 1.1: datetime wins over lastmod.
        assert_eq!(e[2].event_time(), Some(ts("2013-01-03T21:00:00Z")));
    }

    #[test]
    fn alpha_changeset_updated_and_expires_deleted() {
        let r = read_ok(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset rs:type="changeset"
        xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <url>
      <loc>http://example.com/a</loc>
      <lastmod rs:type="updated">2012-08-08T08:15:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://example.com/subjects/frogs" title="Frogs"/>
   </url>
   <url>
      <loc>http://example.com/b</loc>
      <expires>2012-08-08T13:22:00Z</expires>
   </url>
</urlset>"#,
        );
        assert_eq!(r.header.syntax, Syntax::Alpha2012);
        assert!(r.header.alpha_changeset);
        assert_eq!(r.header.capability(), Some(Capability::ChangeList));
        assert_eq!(r.header.md.capability, None);
        // DCTERMS.modified of a Change Set is its `from`.
        assert_eq!(r.header.md.from, Some(ts("2012-08-08T16:30:00Z")));
        assert_eq!(r.header.md.at, None);
        let a = &r.entries[0];
        assert_eq!(a.md.change, Some(Change::Updated));
        assert_eq!(a.event_time(), Some(ts("2012-08-08T08:15:00Z")));
        assert_eq!(a.links.len(), 1);
        assert_eq!(a.links[0].rel, "dcterms.subject");
        let b = &r.entries[1];
        assert_eq!(b.md.change, Some(Change::Deleted));
        assert_eq!(b.md.datetime, Some(ts("2012-08-08T13:22:00Z")));
        assert_eq!(b.event_time(), Some(ts("2012-08-08T13:22:00Z")));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn alpha_categories_of_entries_and_index_parts() {
        // The 2012 draft's Example 3.9 as written.
        let r = read_ok(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <url>
      <loc>http://example.com/res1</loc>
      <lastmod>2012-08-08T08:15:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Frogs" title="Frogs"/>
      <xhtml:meta name="DC.subject" content="Crocodiles"/>
   </url>
   <url>
      <loc>http://example.com/res2</loc>
      <lastmod>2012-08-08T13:22:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Fish" title="Fish"/>
      <xhtml:link rel="alternate" href="http://example.com/res2.html"/>
      <xhtml:meta name="DC.subject"/>
   </url>
</urlset>"#,
        );
        let c = &r.entries[0].categories;
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name, "DCTERMS.subject");
        assert_eq!(c[0].value, "http://en.wikipedia.org/wiki/Category:Frogs");
        assert_eq!(c[0].title.as_deref(), Some("Frogs"));
        assert_eq!(
            (
                c[1].name.as_str(),
                c[1].value.as_str(),
                c[1].title.as_deref()
            ),
            ("DC.subject", "Crocodiles", None)
        );
        // An alternate is a link, not a category; a meta without content is named.
        let c = &r.entries[1].categories;
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].title.as_deref(), Some("Fish"));
        assert_eq!(r.entries[1].links.len(), 2);
        assert!(
            r.warnings.iter().any(|w| w
                .message
                .contains("xhtml:meta \"DC.subject\" without a value")),
            "{:?}",
            r.warnings
        );
        // Example 3.11's aggregated categories on a Sitemap Index part.
        let r = read_ok(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
              xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <sitemap>
      <loc>http://example.com/sitemap2.xml</loc>
      <lastmod>2012-08-08T15:00:00Z</lastmod>
      <xhtml:link rel="DCTERMS.subject" href="http://en.wikipedia.org/wiki/Category:Animals" title="Animals"/>
   </sitemap>
</sitemapindex>"#,
        );
        assert_eq!(r.entries[0].categories[0].title.as_deref(), Some("Animals"));
    }

    #[test]
    fn alpha_loc_protocol_refuses_the_entry() {
        // The 2012 draft's own example 4.5 (its closing tag mended), and a plain entry after.
        let r = read_ok(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <url>
       <loc rs:protocol="http://www.openarchives.org/OAI/openarchivesprotocol.html">
            http://example.com/oaipmh</loc>
       <lastmod>2012-08-08T08:15:00Z</lastmod>
   </url>
   <url><loc>http://example.com/res1</loc></url>
</urlset>"#,
        );
        let why = r.entries[0].invalid.as_deref().expect("refused");
        assert!(why.contains("line 6"), "{why}");
        assert!(why.contains("openarchivesprotocol.html"), "{why}");
        assert_eq!(r.entries[0].loc.as_str(), "http://example.com/oaipmh");
        assert_eq!(r.entries[1].invalid, None);
        assert_eq!(r.header.syntax, Syntax::Alpha2012);
    }

    #[test]
    fn alpha_mirror_link_is_a_duplicate() {
        let r = read_ok(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <url>
      <loc>http://example.com/res1</loc>
      <xhtml:link rel="alternate http://www.openarchives.org/rs/mirror" href="http://mirror.example.com/res1"/>
      <xhtml:link rel="alternate" href="http://example.com/res1.html"/>
   </url>
</urlset>"#,
        );
        let d = r.entries[0].duplicates();
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].href.as_str(), "http://mirror.example.com/res1");
    }

    #[test]
    fn alpha_fixity_size_mimetype_path() {
        let r = read_ok(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <url>
      <loc>http://example.com/res1</loc>
      <lastmod>2012-08-08T08:15:00Z</lastmod>
      <rs:fixity type="md5">n5+Q2+Pl7hIYyGuIOdsZlQ==</rs:fixity>
      <rs:fixity type="sha-256">tqmNnOmi2RSSiPo99C03fD5Cc3r9za9xTjPAoQC1EGA=</rs:fixity>
      <rs:size>6</rs:size>
      <rs:mimetype>text/plain</rs:mimetype>
      <rs:path>resources/res1</rs:path>
   </url>
   <url>
      <loc>http://example.com/res2</loc>
      <rs:fixity type="md5">not base64 at all</rs:fixity>
      <rs:size>93660664</rs:size>
   </url>
</urlset>"#,
        );
        assert_eq!(r.header.syntax, Syntax::Alpha2012);
        assert!(!r.header.alpha_changeset);
        assert_eq!(r.header.capability(), None);
        assert_eq!(r.header.md.at, Some(ts("2012-08-08T16:30:00Z")));
        let a = &r.entries[0];
        assert_eq!(a.md.hash.len(), 2);
        assert_eq!(a.md.hash[0].algorithm, Algorithm::Md5);
        assert_eq!(a.md.hash[0].encoding, Encoding::Base64);
        assert_eq!(
            a.md.hash[0].hex.as_deref(),
            Some("9f9f90dbe3e5ee1218c86b8839db1995")
        );
        assert_eq!(
            a.md.hash[1].hex.as_deref(),
            Some("b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060")
        );
        assert_eq!(a.md.length, Some(6));
        assert_eq!(a.md.media_type.as_deref(), Some("text/plain"));
        assert_eq!(a.md.path.as_deref(), Some("/resources/res1"));
        let b = &r.entries[1];
        assert_eq!(b.md.length, Some(93_660_664));
        assert!(!b.md.hash[0].is_usable());
    }

    #[test]
    fn alpha_markers_in_entries_only() {
        // A pre-beta inventory: no rs:md, only <rs:size> (resync's sitemapindex1 fixtures).
        let r = read_ok(&urlset(
            "<url><loc>http://localhost/r/1</loc><lastmod>2012-06-13T17:13:47+00:00</lastmod><rs:size>794</rs:size></url>",
        ));
        assert_eq!(r.header.syntax, Syntax::Alpha2012);
        assert_eq!(r.entries[0].md.length, Some(794));
    }

    #[test]
    fn beta_modified_is_at_for_snapshots_and_nothing_for_changes() {
        let r = read_ok(&urlset(
            r#"<rs:ln rel="resourcesync" href="http://example.com/dataset1/capabilitylist.xml"/>
<rs:md capability="resourcedump" modified="2013-01-03T09:00:00Z"/>
<url><loc>http://example.com/part1.zip</loc><rs:md type="application/zip" length="2298"/></url>"#,
        ));
        assert_eq!(r.header.syntax, Syntax::Beta2013);
        assert_eq!(r.header.md.at, Some(ts("2013-01-03T09:00:00Z")));
        assert_eq!(r.header.md.from, None);
        assert!(warned(&r, "beta modified= read as at="));
        assert!(r.header.link("resourcesync").is_some());

        let r = read_ok(&urlset(
            r#"<rs:md capability="changelist" modified="2013-01-03T11:00:00Z"/>
<url><loc>http://example.com/res4</loc><lastmod>2013-01-02T17:00:00Z</lastmod><rs:md change="updated" length="9788456778"/></url>"#,
        ));
        assert_eq!(r.header.syntax, Syntax::Beta2013);
        // Issue 67, 4: not `from`: its entries (2013-01-02) come before it.
        assert_eq!(r.header.md.from, None);
        assert_eq!(r.header.md.until, None);
        assert_eq!(r.header.md.at, None);
        assert_eq!(r.entries[0].md.length, Some(9_788_456_778));
        assert!(warned(&r, "read as neither from= nor until="));

        // A beta up-link alone makes a V1-looking document beta.
        let r = read_ok(&urlset(
            r#"<rs:ln rel="resourcesync" href="http://example.com/cl.xml"/><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>"#,
        ));
        assert_eq!(r.header.syntax, Syntax::Beta2013);
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn gzip_is_sniffed_by_magic_bytes() {
        let gz = gzip(EXAMPLE_C.as_bytes());
        let r = read_bytes(&gz, ReadOptions::default()).unwrap();
        assert_eq!(r.entries.len(), 2);
        assert_eq!(r.entries[1].line, 12);
    }

    #[test]
    fn multi_member_gzip_is_read_to_the_end() {
        let (a, b) = EXAMPLE_C.split_at(EXAMPLE_C.find("  <url>").unwrap());
        let mut gz = gzip(a.as_bytes());
        gz.extend(gzip(b.as_bytes()));
        let r = read_bytes(&gz, ReadOptions::default()).unwrap();
        assert_eq!(r.entries.len(), 2);
        assert_eq!(r.header.capability(), Some(Capability::ResourceList));
    }

    #[test]
    fn truncated_gzip_is_truncated() {
        let gz = gzip(EXAMPLE_C.as_bytes());
        let cut = &gz[..gz.len() - 30];
        let e = read_bytes(cut, ReadOptions::default()).err().unwrap();
        assert!(
            matches!(e.kind, ReadErrorKind::Truncated(ref r) if r == "urlset"),
            "{e}"
        );
    }

    /// Regression: a gzip'd document that inflates past 200:1 is refused as a bomb as soon as
    /// that shows (after 1 MiB), long before the size cap; an ordinary gzip'd list is not.
    #[test]
    fn a_gzip_bomb_is_refused_by_its_ratio() {
        let mut bomb = format!("<?xml version=\"1.0\"?>\n{URLSET}\n").into_bytes();
        bomb.resize(bomb.len() + (64 << 20), b' ');
        let gz = gzip(&bomb);
        assert!(gz.len() < 200 << 10, "{}", gz.len());
        let e = read_bytes(&gz, ReadOptions::default()).err().unwrap();
        assert!(matches!(e.kind, ReadErrorKind::Inflates(_)), "{e}");
        assert!(e.to_string().contains("decompression bomb"), "{e}");
        // A regular list of 20,000 similar URLs (about 40:1) reads.
        let body: String = (0..20_000)
            .map(|i| format!("<url><loc>http://e.org/r/{i:08}</loc></url>\n"))
            .collect();
        let r = read_bytes(&gzip(urlset(&body).as_bytes()), ReadOptions::default()).unwrap();
        assert_eq!(r.entries.len(), 20_000);
    }

    #[test]
    fn too_large_plain_and_gzip() {
        let opts = ReadOptions {
            max_bytes: 200,
            ..Default::default()
        };
        for input in [EXAMPLE_C.as_bytes().to_vec(), gzip(EXAMPLE_C.as_bytes())] {
            let e = read_bytes(&input, opts).err().unwrap();
            assert!(matches!(e.kind, ReadErrorKind::TooLarge(200)), "{e}");
            assert!(
                e.to_string()
                    .contains("document larger than the 200-byte limit (--max-document-size"),
                "{e}"
            );
        }
        // Exactly at the limit is fine.
        let exact = ReadOptions {
            max_bytes: EXAMPLE_C.len() as u64,
            ..Default::default()
        };
        assert_eq!(
            read_bytes(EXAMPLE_C.as_bytes(), exact)
                .unwrap()
                .entries
                .len(),
            2
        );
    }

    #[test]
    fn leading_newline_before_declaration_and_bom() {
        let doc = format!("\n{EXAMPLE_C}");
        let r = read_ok(&doc);
        assert_eq!(r.entries.len(), 2);
        // Lines count the skipped newline.
        assert_eq!(r.entries[0].line, 7);

        let mut bom = vec![0xEF, 0xBB, 0xBF];
        bom.extend_from_slice(EXAMPLE_C.as_bytes());
        let r = read_bytes(&bom, ReadOptions::default()).unwrap();
        assert_eq!(r.entries.len(), 2);
        assert_eq!(r.entries[0].line, 6);
    }

    #[test]
    fn no_declaration_is_fine() {
        let r = read_ok(&format!(
            "{URLSET}<url><loc>http://example.com/x</loc></url></urlset>"
        ));
        assert_eq!(r.entries.len(), 1);
        assert_eq!(r.header.syntax, Syntax::Plain);
    }

    #[test]
    fn doctype_is_refused() {
        let e = read_err(&format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset [<!ENTITY x \"y\">]>\n{URLSET}<url><loc>http://e.org/&x;</loc></url></urlset>"
        ));
        assert!(matches!(e.kind, ReadErrorKind::Doctype), "{e}");
        assert_eq!(e.line, 2);
        assert_eq!(
            e.to_string(),
            format!("{DOC}: line 2: DOCTYPE or entity declaration refused (XML entity expansion and external entities are not allowed)")
        );
    }

    #[test]
    fn undefined_entity_is_an_error_and_predefined_ones_work() {
        let e = read_err(&urlset("<url><loc>http://e.org/&x;</loc></url>"));
        assert!(matches!(e.kind, ReadErrorKind::Xml(_)), "{e}");
        assert!(e.to_string().contains("undefined entity &x;"), "{e}");
        assert_eq!(e.line, 3);

        let r = read_ok(&urlset(
            "<url><loc>http://e.org/a?b=1&amp;c=&#50;</loc><rs:md type=\"text/x&amp;y\"/></url>",
        ));
        assert_eq!(r.entries[0].loc.as_str(), "http://e.org/a?b=1&c=2");
        assert_eq!(r.entries[0].md.media_type.as_deref(), Some("text/x&y"));

        let e = read_err(&urlset(
            "<url><loc>http://e.org/</loc><rs:md type=\"a&bogus;\"/></url>",
        ));
        assert!(matches!(e.kind, ReadErrorKind::Xml(_)), "{e}");
    }

    #[test]
    fn malformed_xml_reports_its_line() {
        let e = read_err(&urlset(
            "<url>\n<loc>http://e.org/a</loc>\n</url>\n<url>\n<loc>http://e.org/b</lo>\n</url>",
        ));
        assert!(matches!(e.kind, ReadErrorKind::Xml(_)), "{e}");
        assert_eq!(e.line, 7);
        assert!(
            e.to_string()
                .starts_with(&format!("{DOC}: line 7: malformed XML: ")),
            "{e}"
        );
        assert!(e.to_string().contains("</lo>"), "{e}");
    }

    #[test]
    fn truncated_before_the_root_closes() {
        let mut doc =
            urlset("<url><loc>http://e.org/a</loc></url>\n<url><loc>http://e.org/b</loc></url>");
        doc.truncate(doc.find("</urlset>").unwrap());
        let mut r = open(doc.as_bytes(), &url(), ReadOptions::default()).unwrap();
        assert!(r.next_entry().unwrap().is_some());
        assert!(r.next_entry().unwrap().is_some());
        let e = r.next_entry().unwrap_err();
        assert!(
            matches!(e.kind, ReadErrorKind::Truncated(ref r) if r == "urlset"),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!("{DOC}: line 5: document ends before </urlset>: truncated")
        );

        // Cut inside a tag, inside an entry, inside a sitemapindex.
        let e = read_err(&urlset("<url><loc>http://e.org/a</loc></url><url><lo")[..]);
        assert!(matches!(e.kind, ReadErrorKind::Truncated(_)), "{e}");
        let e = read_err(&format!("{URLSET}<url><loc>http://e.org/a</loc>"));
        assert!(
            matches!(e.kind, ReadErrorKind::Truncated(ref r) if r == "urlset"),
            "{e}"
        );
        let e = read_err(
            r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>http://e.org/a</loc></sitemap>"#,
        );
        assert!(
            matches!(e.kind, ReadErrorKind::Truncated(ref r) if r == "sitemapindex"),
            "{e}"
        );
    }

    #[test]
    fn trailing_content_after_the_root_is_an_error() {
        let doc = format!("{}<url><loc>http://e.org/x</loc></url>", urlset(""));
        let e = read_err(&doc);
        assert!(matches!(e.kind, ReadErrorKind::Xml(_)), "{e}");
        assert!(e.to_string().contains("content after </urlset>"), "{e}");
        // Comments and whitespace are fine.
        read_ok(&format!("{}<!-- generated -->\n\n", urlset("")));
    }

    #[test]
    fn wrong_or_missing_namespace_is_not_a_sitemap() {
        let e = read_err("<urlset><url><loc>http://e.org/</loc></url></urlset>");
        assert!(matches!(e.kind, ReadErrorKind::NotASitemap { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            format!("{DOC}: line 1: root element <urlset> (no namespace) is not a Sitemap <urlset> or <sitemapindex> in namespace http://www.sitemaps.org/schemas/sitemap/0.9")
        );
        let e = read_err(
            "<?xml version=\"1.0\"?>\n\n<urlset xmlns=\"http://example.com/wrong\"></urlset>",
        );
        match &e.kind {
            ReadErrorKind::NotASitemap { found } => {
                assert_eq!(found, "{http://example.com/wrong}urlset")
            }
            k => panic!("{k}"),
        }
        assert_eq!(e.line, 3);
        let e = read_err(r#"<feed xmlns="http://www.w3.org/2005/Atom"/>"#);
        assert!(matches!(e.kind, ReadErrorKind::NotASitemap { .. }), "{e}");
        let e = read_err("");
        assert!(matches!(e.kind, ReadErrorKind::Xml(_)), "{e}");
    }

    #[test]
    fn namespaces_match_by_uri_not_prefix() {
        let r = read_ok(
            r#"<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:x="http://www.openarchives.org/rs/terms/" xmlns:rs="http://example.com/not-rs">
  <x:md capability="resourcelist" at="2024-01-01T00:00:00Z"/>
  <sm:url><sm:loc>http://e.org/a</sm:loc><rs:md length="999"/><x:md length="5"/></sm:url>
</sm:urlset>"#,
        );
        assert_eq!(r.header.capability(), Some(Capability::ResourceList));
        assert_eq!(r.entries[0].md.length, Some(5));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn rs_namespace_alias_is_accepted_with_a_warning() {
        let r = read_ok(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms">
<rs:md capability="resourcelist" at="2024-01-01T00:00:00Z"/>
<url><loc>http://e.org/a</loc><rs:md length="5"/></url></urlset>"#,
        );
        assert_eq!(r.header.capability(), Some(Capability::ResourceList));
        assert_eq!(r.entries[0].md.length, Some(5));
        assert_eq!(r.warnings.len(), 1);
        assert_eq!(r.warnings[0].line, 2);
        assert!(warned(&r, "ResourceSync namespace written as"));
    }

    const CORE_LIKE: &str = r#"<rs:md capability="changedump-manifest" from="2020-03-18T00:00:00" until="2020-03-19T00:00:00Z"/>
<url><loc>https://e.org/a</loc><rs:md change="created" datetime="2020-03-18 01:20:10" path="fd8/a.json"/></url>"#;

    #[test]
    fn time_without_zone_is_an_error_naming_the_value() {
        let e = read_err(&urlset(CORE_LIKE));
        match &e.kind {
            ReadErrorKind::BadDatetime { what, source } => {
                assert_eq!(what, "rs:md from");
                assert_eq!(source, &DatetimeError::NoZone("2020-03-18T00:00:00".into()));
            }
            k => panic!("{k}"),
        }
        assert_eq!(e.line, 3);
        assert!(e.to_string().contains("\"2020-03-18T00:00:00\""), "{e}");
        assert!(
            e.to_string().contains("rs:md from: time without a zone"),
            "{e}"
        );

        // A `<lastmod>` that is no datetime fails its entry, not the document.
        let r = read_ok(&urlset(
            "<url><loc>https://e.org/a</loc><lastmod>yesterday</lastmod></url>\n\
             <url><loc>https://e.org/b</loc><lastmod>2020-03-18T00:00:00Z</lastmod></url>",
        ));
        let why = r.entries[0]
            .invalid
            .as_deref()
            .expect("the entry is marked");
        assert!(
            why.starts_with("line 3: ")
                && why.ends_with(r#"<lastmod>: not a W3C datetime: "yesterday""#),
            "{why}"
        );
        assert_eq!(r.entries[1].invalid, None);
        assert_eq!(r.entries[1].lastmod, Some(ts("2020-03-18T00:00:00Z")));
    }

    #[test]
    fn assume_utc_reads_and_warns_once_with_a_count() {
        let opts = ReadOptions {
            zone: Zone::AssumeUtc,
            ..Default::default()
        };
        let r = read_bytes(urlset(CORE_LIKE).as_bytes(), opts).unwrap();
        assert_eq!(r.header.md.from, Some(ts("2020-03-18T00:00:00Z")));
        let e = &r.entries[0];
        assert_eq!(e.md.datetime, Some(ts("2020-03-18T01:20:10Z")));
        // Paths are kept as written.
        assert_eq!(e.md.path.as_deref(), Some("fd8/a.json"));
        let utc: Vec<_> = r
            .warnings
            .iter()
            .filter(|w| w.message.contains("UTC"))
            .collect();
        assert_eq!(utc.len(), 2, "{:?}", r.warnings);
        assert!(utc[0].message.contains("\"2020-03-18T00:00:00\""));
        assert!(utc[1].message.contains("2 times"), "{}", utc[1].message);
    }

    #[test]
    fn a_url_of_the_last_origin_parses_as_url_parses_it() {
        let mut o = LastOrigin::default();
        o.remember(&Url::parse("http://Example.ORG:8080/a?q#f").unwrap());
        for v in [
            "http://example.org:8080/r/0001/x.txt",
            "http://example.org:8080/r/A-b_c~d",
            "http://example.org:8080/",
            "http://example.org:8080//x",
            "http://example.org:8080/a/./b",
            "http://example.org:8080/a/../b",
            "http://example.org:8080/.hidden",
            "http://example.org:8080/a%20b",
            "http://example.org:8080/a b",
            "http://example.org:8080/a\\b",
            "http://example.org:8080/a?x=1",
            "http://example.org:8080/a#top",
            "http://example.org:8080/é",
            "http://example.org:80801/a",
            "http://example.org:8080.evil/a",
            "http://example.org:8080@evil/a",
            "http://example.org/a",
        ] {
            if let Some(u) = o.parse(v) {
                assert_eq!(Some(u), Url::parse(v).ok(), "{v}");
            }
        }
        assert!(o.parse("http://example.org:8080/r/0001/x.txt").is_some());
        // Whatever the path of the URL remembered, a parse gives the URL parsed.
        for first in [
            "http://example.org/a/much/longer/path/than/the/next/ones/0001.txt",
            "http://example.org/",
            "http://example.org/x",
        ] {
            let mut o = LastOrigin::default();
            o.remember(&Url::parse(first).unwrap());
            for v in [
                "http://example.org/b",
                "http://example.org/r/0002/a-much-longer-path.txt",
            ] {
                assert_eq!(o.parse(v), Url::parse(v).ok(), "{first} {v}");
            }
        }
        let mut files = LastOrigin::default();
        files.remember(&Url::parse("file:///tmp/x").unwrap());
        assert!(files.parse("file:///tmp/y").is_none());
    }

    /// Regression: a raw NUL or U+0001 in `<loc>` (not well-formed XML 1.0, §2.2 Characters)
    /// was accepted and percent-encoded; the document is refused, naming the line.
    #[test]
    fn control_characters_in_text_refuse_the_document() {
        for (loc, code) in [
            ("http://e.org/a\u{0}b", "U+0000"),
            ("http://e.org/a\u{1}b", "U+0001"),
            ("http://e.org/a&#1;b", "U+0001"),
            ("http://e.org/a\u{ffff}b", "U+FFFF"),
        ] {
            let e = read_err(&urlset(&format!(
                "<url><loc>http://e.org/ok</loc></url>\n<url><loc>{loc}</loc></url>"
            )));
            let shown = e.to_string();
            assert!(shown.contains(code) && shown.contains("<loc>"), "{shown}");
            assert!(shown.contains("line 4"), "{shown}");
        }
        // Tab, CR and LF are characters XML allows.
        let r = read_ok(&urlset("<url><loc>\r\n\thttp://e.org/a\t</loc></url>"));
        assert_eq!(r.entries[0].loc.as_str(), "http://e.org/a");
    }

    #[test]
    fn loc_whitespace_is_trimmed() {
        let r = read_ok(&urlset(
            "\t<url>\n\t<loc>\n\thttp://e.org/a%3D%3D.pdf\n\t</loc>\n\t</url>",
        ));
        assert_eq!(r.entries[0].loc.as_str(), "http://e.org/a%3D%3D.pdf");
        assert_eq!(r.entries[0].line, 3);
    }

    #[test]
    fn relative_loc_is_resolved_with_a_warning() {
        let r = read_ok(&urlset(
            r#"<rs:ln rel="describedby" href="about.txt"/>
<url><loc>r1</loc></url><url><loc>../r2</loc></url><url><loc>file:///tmp/x</loc></url>"#,
        ));
        assert_eq!(
            r.entries[0].loc.as_str(),
            "https://data.example.org/rs/texts/r1"
        );
        assert_eq!(r.entries[1].loc.as_str(), "https://data.example.org/rs/r2");
        // Schemes are the network layer's business.
        assert_eq!(r.entries[2].loc.scheme(), "file");
        assert_eq!(
            r.header.links[0].href.as_str(),
            "https://data.example.org/rs/texts/about.txt"
        );
        assert!(warned(
            &r,
            "relative <loc> \"r1\" read as https://data.example.org/rs/texts/r1"
        ));
        assert!(warned(&r, "relative href \"about.txt\""));
        assert!(warned(
            &r,
            "relative <loc> resolved against the document URL: 2 times"
        ));
    }

    #[test]
    fn bad_and_missing_loc() {
        let e = read_err(&urlset("<url><lastmod>2024-01-01</lastmod></url>"));
        assert!(matches!(e.kind, ReadErrorKind::MissingLoc("url")), "{e}");
        assert!(
            e.to_string().ends_with("line 3: <url> without <loc>"),
            "{e}"
        );
        let e = read_err(&urlset("<url/>"));
        assert!(matches!(e.kind, ReadErrorKind::MissingLoc("url")), "{e}");
        let e = read_err(&urlset("<url>\n<loc>http://[::1</loc></url>"));
        match &e.kind {
            ReadErrorKind::BadUrl { value, .. } => assert_eq!(value, "http://[::1"),
            k => panic!("{k}"),
        }
        assert_eq!(e.line, 4);
        let e = read_err(&urlset("<url><loc>  </loc></url>"));
        assert!(matches!(e.kind, ReadErrorKind::BadUrl { .. }), "{e}");
    }

    #[test]
    fn two_rs_md_in_one_url_are_merged() {
        let r = read_ok(&urlset(
            r#"<rs:md capability="changelist" from="2022-03-25T08:22:12Z"/>
<url>
  <loc>https://e.org/api/items/1</loc>
  <rs:md hash="md5:cc9895a21e335bbe66d61f2b62ce3a8e" length="20" type="application/json" />
  <rs:md change="created" />
</url>
<url><loc>https://e.org/api/items/2</loc><rs:md length="1"/><rs:md change="updated"/></url>"#,
        ));
        let e = &r.entries[0];
        assert_eq!(e.md.change, Some(Change::Created));
        assert_eq!(e.md.length, Some(20));
        assert_eq!(e.md.media_type.as_deref(), Some("application/json"));
        assert_eq!(e.md.hash.len(), 1);
        assert_eq!(r.entries[1].md.change, Some(Change::Updated));
        assert_eq!(r.warnings[0].line, 7);
        assert!(warned(
            &r,
            "several <rs:md> in one <url>: attributes merged"
        ));
        assert!(warned(&r, "2 times"));
    }

    #[test]
    fn wrong_entry_element_for_the_root() {
        let e = read_err(&urlset("<sitemap><loc>http://e.org/</loc></sitemap>"));
        assert!(matches!(e.kind, ReadErrorKind::Xml(_)), "{e}");
        assert!(
            e.to_string()
                .ends_with("malformed XML: <sitemap> inside <urlset>"),
            "{e}"
        );
        let e = read_err(
            r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://e.org/</loc></url></sitemapindex>"#,
        );
        assert!(
            e.to_string()
                .ends_with("malformed XML: <url> inside <sitemapindex>"),
            "{e}"
        );
    }

    #[test]
    fn bad_numbers() {
        let e = read_err(&urlset(
            "<url><loc>http://e.org/</loc><rs:md length=\"-1\"/></url>",
        ));
        assert!(
            e.to_string()
                .ends_with(r#"rs:md length="-1" is not a non-negative integer"#),
            "{e}"
        );
        let e = read_err(&urlset(
            "<url><loc>http://e.org/</loc><rs:size>lots</rs:size></url>",
        ));
        assert!(matches!(e.kind, ReadErrorKind::BadNumber { .. }), "{e}");
    }

    #[test]
    fn unknown_elements_are_skipped() {
        let r = read_ok(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
<url><loc>http://e.org/a</loc><changefreq>daily</changefreq><priority>0.5</priority>
  <image:image><image:loc>http://e.org/a.png</image:loc><url><loc>http://nested/</loc></url></image:image>
  <colour>blue</colour>
</url>
<url><loc>http://e.org/b</loc><colour/></url>
</urlset>"#,
        );
        assert_eq!(r.entries.len(), 2);
        assert_eq!(r.entries[0].loc.as_str(), "http://e.org/a");
        assert!(warned(&r, "unknown element <colour> inside <url> ignored"));
        assert_eq!(r.warnings[0].line, 4);
        assert!(warned(&r, "unknown elements ignored: 2 times"));
    }

    #[test]
    fn links_rel_is_lower_cased_and_kept() {
        let r = read_ok(&urlset(
            r#"<url><loc>http://e.org/a</loc>
<rs:ln rel="describedBy" href="http://e.org/a.json"/>
<rs:ln rel="http://www.openarchives.org/rs/terms/patch" href="http://e.org/a-patch" type="application/json-patch" length="73" hash="sha-256:y66dER_t_HWEIKpesdkeb7rtSc-ippjf9823742opld" modified="2013-01-02T17:00:00Z"/>
<rs:ln rel="duplicate" pri="2" href="ftp://mirror.example.net/a"/>
<rs:ln rel="duplicate" href="http://mirror2.example.net/a"/>
<rs:ln href="http://e.org/no-rel"/>
</url>"#,
        ));
        let e = &r.entries[0];
        assert_eq!(e.links.len(), 4);
        assert_eq!(e.links[0].rel, "describedby");
        let patch = &e.links[1];
        assert_eq!(patch.media_type.as_deref(), Some("application/json-patch"));
        assert_eq!(patch.length, Some(73));
        assert!(!patch.hash[0].is_usable());
        assert_eq!(patch.modified, Some(ts("2013-01-02T17:00:00Z")));
        let d = e.duplicates();
        assert_eq!(d[0].href.as_str(), "ftp://mirror.example.net/a");
        assert_eq!(d[1].pri, None);
        assert!(warned(&r, "rs:ln without rel ignored"));
    }

    #[test]
    fn capability_case_and_unknown_values_warn() {
        let r = read_ok(&urlset(
            r#"<rs:md capability="resourceList" at="2013-01-01"/>"#,
        ));
        assert_eq!(r.header.capability(), Some(Capability::ResourceList));
        assert!(warned(
            &r,
            r#"capability "resourceList" read as "resourcelist""#
        ));
        let r = read_ok(&urlset(
            r#"<rs:md capability="unknown" from="2013-02-12T14:09:00Z"/>"#,
        ));
        assert_eq!(
            r.header.capability(),
            Some(Capability::Other("unknown".into()))
        );
        assert!(warned(&r, r#"unknown capability "unknown""#));
    }

    #[test]
    fn interval_order_warnings() {
        let r = read_ok(&urlset(
            r#"<rs:md capability="resourcedump" at="2015-05-22T16:06:04Z" completed="2015-05-05T16:23:20Z"/>
<url><loc>http://e.org/p.zip</loc><rs:md from="2015-05-22T16:06:04Z" until="2015-05-05T16:23:20Z"/></url>"#,
        ));
        assert!(warned(&r, "document-level rs:md: completed 2015-05-05T16:23:20Z is before at 2015-05-22T16:06:04Z"));
        assert!(warned(
            &r,
            "entry rs:md: until 2015-05-05T16:23:20Z is before from"
        ));
    }

    #[test]
    fn plain_sitemap_and_empty_root() {
        let r = read_ok(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://www.example.org/</loc></url>
</urlset>"#,
        );
        assert_eq!(r.header.syntax, Syntax::Plain);
        assert_eq!(r.header.capability(), None);
        assert_eq!(r.entries.len(), 1);

        let r = read_ok(r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>"#);
        assert_eq!(r.header.root, Root::SitemapIndex);
        assert!(r.entries.is_empty());
    }

    #[test]
    fn late_document_metadata_is_applied_with_a_warning() {
        let r = read_ok(&urlset(
            r#"<url><loc>http://e.org/a</loc></url>
<rs:md capability="resourcelist" at="2024-01-01T00:00:00Z"/>"#,
        ));
        assert_eq!(r.header.capability(), Some(Capability::ResourceList));
        assert!(warned(&r, "after the first entry"));
    }

    #[test]
    fn undeclared_prefix_is_an_error() {
        let e = read_err(&urlset("<url><loc>http://e.org/a</loc><zz:md/></url>"));
        assert!(e.to_string().contains("namespace prefix \"zz\""), "{e}");
    }

    #[test]
    fn take_warnings_drains() {
        let doc = urlset("<url><loc>r1</loc></url>");
        let mut r = open(doc.as_bytes(), &url(), ReadOptions::default()).unwrap();
        assert_eq!(r.warnings().len(), 1);
        assert_eq!(r.take_warnings().len(), 1);
        assert!(r.warnings().is_empty());
        assert!(r.next_entry().unwrap().is_some());
        assert!(r.next_entry().unwrap().is_none());
    }

    /// A Resource List of `n` entries with md5 + sha-256, as a large source would publish.
    fn big_resource_list(n: usize) -> String {
        let mut s = String::with_capacity(n * 400);
        s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        s.push_str(URLSET);
        s.push_str("\n<rs:ln rel=\"up\" href=\"https://data.example.org/rs/capabilitylist.xml\"/>\n<rs:md capability=\"resourcelist\" at=\"2024-05-01T06:00:00Z\" completed=\"2024-05-01T06:10:00Z\"/>\n");
        for i in 0..n {
            s.push_str(&format!(
                "<url>\n  <loc>https://data.example.org/r/{i:08}/item.xml</loc>\n  <lastmod>2024-04-{:02}T{:02}:{:02}:00Z</lastmod>\n  <rs:md hash=\"md5:{:032x} sha-256:{:064x}\" length=\"{}\" type=\"application/xml\"/>\n</url>\n",
                i % 28 + 1,
                i % 24,
                i % 60,
                i as u128 * 7919,
                i as u128 * 104_729,
                i * 13 + 1
            ));
        }
        s.push_str("</urlset>\n");
        s
    }

    #[test]
    fn many_entries_in_bounded_memory() {
        let doc = big_resource_list(2_000);
        let r = read_ok(&doc);
        assert_eq!(r.entries.len(), 2_000);
        assert_eq!(r.entries[1999].md.length, Some(1999 * 13 + 1));
        assert_eq!(r.entries[1999].line, 4 + 1999 * 5 + 1);
        assert!(r.warnings.is_empty());
    }

    /// Regression (found by tests/it/fuzz.rs): 100,000 repeated `<rs:md/>` (800 kB) listed
    /// 300,000 warnings, 28 MB; the list now stops at the bound and one line counts the rest.
    #[test]
    fn repeated_document_level_elements_list_a_bounded_number_of_warnings() {
        let doc = format!(
            "<urlset xmlns=\"{SITEMAP_NS}\" xmlns:rs=\"{RS_NS}\"><url><loc>a</loc></url>{}</urlset>\n",
            "<rs:md/>".repeat(100_000)
        );
        let mut r = open(doc.as_bytes(), &url(), ReadOptions::default()).unwrap();
        while r.next_entry().unwrap().is_some() {}
        let w = r.warnings();
        assert!(w.len() as u64 <= MAX_LISTED_WARNINGS + REPEAT_KINDS as u64 + 1);
        let last = w.last().unwrap();
        assert_eq!(last.line, 1);
        assert!(
            last.message
                .starts_with(&format!("{} more warnings", 300_000 - MAX_LISTED_WARNINGS)),
            "{last}"
        );
    }

    /// The document and each entry keep at most [`MAX_LINKS`] links; the rest are counted.
    #[test]
    fn links_past_the_limit_are_ignored_with_a_warning() {
        let links = "<rs:ln rel=\"alternate\" href=\"b\"/>".repeat(MAX_LINKS + 5);
        let doc = format!(
            "<urlset xmlns=\"{SITEMAP_NS}\" xmlns:rs=\"{RS_NS}\">{links}\n<url><loc>a</loc>{links}</url>\n</urlset>\n"
        );
        let mut r = open(doc.as_bytes(), &url(), ReadOptions::default()).unwrap();
        assert_eq!(r.header().links.len(), MAX_LINKS);
        let e = r.next_entry().unwrap().unwrap();
        assert_eq!(e.links.len(), MAX_LINKS);
        assert!(r.next_entry().unwrap().is_none());
        let w: Vec<String> = r.warnings().iter().map(|w| w.to_string()).collect();
        assert!(
            w.contains(&format!(
                "line 1: document-level links past the first {MAX_LINKS} ignored"
            )),
            "{w:?}"
        );
        assert!(
            w.contains(&"line 3: links past the limit ignored: 10 times in this document (the first, line 1, is reported above)".to_string()),
            "{w:?}"
        );
    }

    /// `cargo test --release --lib rs::sitemap::tests::throughput -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn throughput() {
        let doc = big_resource_list(50_000);
        let gz = gzip(doc.as_bytes());
        for (label, input) in [("plain", doc.as_bytes()), ("gzip", &gz[..])] {
            let mut best = f64::MAX;
            for _ in 0..5 {
                let start = std::time::Instant::now();
                let mut r = open(input, &url(), ReadOptions::default()).unwrap();
                let mut n = 0;
                while let Some(e) = r.next_entry().unwrap() {
                    n += 1;
                    std::hint::black_box(e);
                }
                assert_eq!(n, 50_000);
                best = best.min(start.elapsed().as_secs_f64());
            }
            println!(
                "{label}: {} bytes of XML, 50000 entries in {:.1} ms = {:.0} MB/s ({:.0} ns/entry)",
                doc.len(),
                best * 1e3,
                doc.len() as f64 / best / 1e6,
                best * 1e9 / 50_000.0
            );
        }
    }
}
