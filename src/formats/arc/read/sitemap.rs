//! Reading an ARC sitemap or delta feed (ARC sitemap 2.1: the sitemap and its delta feeds) and
//! validating it against the format's JSON schema (ARC sitemap 2.1, "JSON Schema"): the top
//! level needs `arc_sitemap_version` (string), `site` (URI), `generated_at` (date-time) and
//! `pages` (array); each page needs `url` (URI) and `ai_indexable` (boolean), and every
//! optional field has its type (`crawl_priority` a number in 0..=1). A violation is an
//! [`ArcError::Schema`] naming the field and the page index; broken JSON is an
//! [`ArcError::Syntax`] naming line and column.
//!
//! Pages are handed to the caller one at a time as they are parsed (a page is held as a
//! `serde_json::Value` only while it is checked), so a large sitemap costs what the caller
//! keeps. A gzip body (ARC sitemap 2.1: "offer gzip compression") is inflated; input is capped
//! either way.
//!
//! Where the specification's own text and its schema differ, both forms are read, so that what
//! its reference generator writes is accepted: that generator writes `null` for a missing
//! `ai_summary` / `ai_snapshot`, which the schema's types forbid, so `null` in an optional
//! field reads as absent, with a warning; a W3C date (`2025-11-08`) where the schema wants a
//! date-time reads as that day, with a warning. Two keys are rsmirror's reading of things the
//! specification mentions without a schema: `crawl_rate` (the politeness hint, at the top
//! level or in a `metadata` object) and `delta_feeds` (URLs of delta feeds); and in a delta
//! feed a page may say `"deleted": true`.

use crate::formats::arc::read::crawl_rate::CrawlRate;
use crate::rs::digest::{Algorithm, Digest};
use crate::rs::w3c_datetime::{self, Zone};
use jiff::Timestamp;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use url::Url;

/// The most bytes (after inflating) a sitemap or delta feed may have.
pub const MAX_DOCUMENT_BYTES: u64 = 256 * 1024 * 1024;
/// Warnings kept per document; more are counted.
const MAX_WARNINGS: usize = 100;
/// Delta feeds kept per document; more are ignored with a warning.
pub const MAX_DELTA_FEEDS: usize = 1000;

/// How to read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// What a zone-less time means (`--assume-utc`).
    pub zone: Zone,
    pub max_bytes: u64,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            zone: Zone::Required,
            max_bytes: MAX_DOCUMENT_BYTES,
        }
    }
}

/// Why a document is not a usable ARC sitemap.
#[derive(Debug, thiserror::Error)]
pub enum ArcError {
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("not an ARC sitemap (line {line}, column {column}): {message}")]
    Shape {
        line: usize,
        column: usize,
        message: String,
    },
    /// A schema rule broken: `field` is a path such as `pages[3].ai_indexable`.
    #[error("{field}: {problem}{}", page.as_ref().map(|u| format!(" (page {u})")).unwrap_or_default())]
    Schema {
        field: String,
        problem: String,
        page: Option<String>,
    },
    #[error("larger than the {max}-byte limit")]
    TooLarge { max: u64 },
    #[error("unreadable: {0}")]
    Io(#[source] io::Error),
}

impl ArcError {
    fn schema(field: impl Into<String>, problem: impl Into<String>) -> ArcError {
        ArcError::Schema {
            field: field.into(),
            problem: problem.into(),
            page: None,
        }
    }
}

/// One page entry (ARC sitemap 2.1, page fields).
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Its position in `pages`, 0-based (as error messages name it).
    pub index: usize,
    pub url: Url,
    pub lastmod: Option<Timestamp>,
    /// Recorded, not enforced: a mirror is not an AI indexer.
    pub ai_indexable: bool,
    pub ai_summary: Option<String>,
    pub ai_tags: Option<Vec<String>>,
    /// As written (`sha256:<hex>`).
    pub ai_checksum: Option<String>,
    /// `ai_checksum` decoded; unusable when the algorithm is unknown or the value is not a
    /// digest of the right length (the specification's own example is `sha256:af3c...`).
    pub digest: Option<Digest>,
    /// A JSON object, its text as published (keys in their order, spacing kept): what a
    /// preservation copy keeps. [`Page::snapshot_value`] reads it.
    pub ai_snapshot: Option<String>,
    pub crawl_priority: Option<f64>,
    pub auth_required: bool,
    pub robots_directive: Option<String>,
    /// A delta feed's way of saying the page is gone (rsmirror's reading; not in ARC sitemap 2.1).
    pub deleted: bool,
}

impl Page {
    /// `ai_snapshot` read as JSON.
    pub fn snapshot_value(&self) -> Option<Value> {
        let raw = self.ai_snapshot.as_deref()?;
        serde_json::from_str(raw).ok()
    }

    /// Why a mirror must not fetch this page, if it must not: `auth_required` (ARC sitemap 2.1, access control) or a
    /// `robots_directive` with `noarchive` or `none` (which implies it).
    pub(crate) fn skip_reason(&self) -> Option<String> {
        if self.auth_required {
            return Some("auth_required: true: the page needs authentication; not fetched".into());
        }
        let directive = self.robots_directive.as_deref()?;
        directive
            .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
            .map(|t| t.trim().to_ascii_lowercase())
            .find(|t| t == "noarchive" || t == "none")
            .map(|t| format!("robots_directive {directive:?} says {t}: not archived"))
    }
}

/// Everything but the pages.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub version: String,
    pub site: Url,
    pub generated_at: Timestamp,
    pub crawl_rate: Option<CrawlRate>,
    /// Delta feed URLs the document names, resolved against its URL.
    pub delta_feeds: Vec<Url>,
    /// How many pages were read.
    pub pages: u64,
    pub warnings: Vec<String>,
}

/// A whole document.
#[derive(Debug, Clone, PartialEq)]
pub struct Sitemap {
    pub header: Header,
    pub pages: Vec<Page>,
}

/// Read a whole document into memory.
pub fn read_all(input: impl Read, base: &Url, opts: ReadOptions) -> Result<Sitemap, ArcError> {
    let mut pages = Vec::new();
    let header = read(input, base, opts, &mut |p| pages.push(p))?;
    Ok(Sitemap { header, pages })
}

/// Read a document, handing each valid page to `on_page` as it is parsed. On an error, the
/// pages already handed over must be thrown away by the caller.
pub fn read(
    input: impl Read,
    base: &Url,
    opts: ReadOptions,
    on_page: &mut dyn FnMut(Page),
) -> Result<Header, ArcError> {
    let exceeded = Cell::new(false);
    let mut buffered = BufReader::with_capacity(64 * 1024, input);
    let head = buffered.fill_buf().map_err(ArcError::Io)?;
    let body: Box<dyn Read + '_> = if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(buffered))
    } else {
        Box::new(buffered)
    };
    let mut body = BufReader::new(Capped {
        inner: body,
        left: opts.max_bytes,
        exceeded: &exceeded,
    });
    let too_large = |e: io::Error| match exceeded.get() {
        true => ArcError::TooLarge {
            max: opts.max_bytes,
        },
        false => ArcError::Io(e),
    };
    // serde_json does not skip a byte-order mark.
    if body
        .fill_buf()
        .map_err(too_large)?
        .starts_with(b"\xEF\xBB\xBF")
    {
        body.consume(3);
    }
    // ARC E.3.3: the same document as YAML. Read whole (within the same cap), converted to
    // JSON (keys in their order), and read by the same visitor as a JSON one.
    let head = body.fill_buf().map_err(too_large)?;
    if crate::engine::documents::arc_yaml(head) {
        let mut yaml = Vec::new();
        body.read_to_end(&mut yaml).map_err(too_large)?;
        let json = yaml_to_json(&yaml)?;
        return read_json(std::io::Cursor::new(json), base, opts, on_page, &exceeded);
    }
    read_json(body, base, opts, on_page, &exceeded)
}

/// An ARC sitemap in YAML as the equivalent JSON document.
fn yaml_to_json(yaml: &[u8]) -> Result<Vec<u8>, ArcError> {
    let shape = |message: String, line: usize, column: usize| ArcError::Shape {
        line,
        column,
        message: format!("YAML: {message}"),
    };
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_slice(yaml).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        shape(e.to_string(), line, column)
    })?;
    serde_json::to_vec(&value).map_err(|e| {
        shape(
            format!("not expressible as JSON (a key that is not a string?): {e}"),
            0,
            0,
        )
    })
}

/// [`read`] of a JSON document (inflated, its byte-order mark skipped).
fn read_json(
    body: impl Read,
    base: &Url,
    opts: ReadOptions,
    on_page: &mut dyn FnMut(Page),
    exceeded: &Cell<bool>,
) -> Result<Header, ArcError> {
    let mut warnings = Warnings::default();
    let mut failure = None;
    let mut de = serde_json::Deserializer::from_reader(body);
    let parsed = de::Deserializer::deserialize_map(
        &mut de,
        Document {
            opts,
            on_page,
            failure: &mut failure,
            warnings: &mut warnings,
        },
    )
    .and_then(|fields| de.end().map(|()| fields));
    let fields = match parsed {
        Ok(f) => f,
        Err(_) if failure.is_some() => return Err(failure.expect("checked")),
        Err(_) if exceeded.get() => {
            return Err(ArcError::TooLarge {
                max: opts.max_bytes,
            })
        }
        Err(e) => return Err(json_error(e)),
    };
    header(fields, base, opts, warnings)
}

fn json_error(e: serde_json::Error) -> ArcError {
    let (line, column) = (e.line(), e.column());
    match e.classify() {
        serde_json::error::Category::Io => ArcError::Io(e.into()),
        serde_json::error::Category::Data => ArcError::Shape {
            line,
            column,
            message: strip_position(&e),
        },
        _ => ArcError::Syntax {
            line,
            column,
            message: strip_position(&e),
        },
    }
}

/// serde_json's message without its own " at line L column C" (ours names them).
fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A reader that stops with an error after `left` bytes.
struct Capped<'a, R> {
    inner: R,
    left: u64,
    exceeded: &'a Cell<bool>,
}

impl<R: Read> Read for Capped<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            self.exceeded.set(true);
            return Err(io::Error::other("document larger than the limit"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Warnings up to a bound, then a count.
#[derive(Default)]
struct Warnings {
    list: Vec<String>,
    dropped: u64,
}

impl Warnings {
    fn push(&mut self, w: String) {
        if self.list.len() < MAX_WARNINGS {
            self.list.push(w);
        } else {
            self.dropped += 1;
        }
    }

    fn into_vec(mut self) -> Vec<String> {
        if self.dropped > 0 {
            self.list
                .push(format!("... and {} more warnings", self.dropped));
        }
        self.list
    }
}

/// The top-level values other than `pages`, unchecked.
#[derive(Default)]
struct Fields {
    version: Option<Value>,
    site: Option<Value>,
    generated_at: Option<Value>,
    crawl_rate: Option<Value>,
    metadata: Option<Value>,
    delta_feeds: Option<Value>,
    /// Entries of `delta_feeds` past [`MAX_DELTA_FEEDS`], not kept.
    delta_feeds_dropped: u64,
    pages: Option<u64>,
}

struct Document<'a> {
    opts: ReadOptions,
    on_page: &'a mut dyn FnMut(Page),
    failure: &'a mut Option<ArcError>,
    warnings: &'a mut Warnings,
}

impl<'de> Visitor<'de> for Document<'_> {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a JSON object with arc_sitemap_version, site, generated_at and pages (ARC sitemap 2.1 JSON schema)",
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<String>()? {
            let slot = match key.as_str() {
                "pages" => {
                    if fields.pages.is_some() {
                        return Err(fail(self.failure, ArcError::schema("pages", "given twice")));
                    }
                    let n = map.next_value_seed(Pages {
                        opts: self.opts,
                        on_page: &mut *self.on_page,
                        failure: &mut *self.failure,
                        warnings: &mut *self.warnings,
                    })?;
                    fields.pages = Some(n);
                    continue;
                }
                "arc_sitemap_version" => &mut fields.version,
                "site" => &mut fields.site,
                "generated_at" => &mut fields.generated_at,
                "crawl_rate" => &mut fields.crawl_rate,
                "metadata" => &mut fields.metadata,
                "delta_feeds" => &mut fields.delta_feeds,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if slot.is_some() {
                return Err(fail(self.failure, ArcError::schema(key, "given twice")));
            }
            // Only what is used is held: a value read whole as a `Value` costs 10 to 40 times
            // its bytes (`[[],[],...]`, `["a","a",...]`), gigabytes within the size limit.
            *slot = Some(match key.as_str() {
                "metadata" => map.next_value_seed(Shallow {
                    keep: Some("crawl_rate"),
                })?,
                "delta_feeds" => {
                    let (feeds, dropped) = map.next_value_seed(DeltaFeeds)?;
                    fields.delta_feeds_dropped = dropped;
                    feeds
                }
                _ => map.next_value_seed(Shallow { keep: None })?,
            });
        }
        Ok(fields)
    }
}

/// A visitor's scalar cases: each JSON scalar as its `Value`, passed through `$wrap` (the
/// same for every shallow reader below; only what they do with arrays and objects differs).
macro_rules! scalars {
    ($wrap:expr) => {
        fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
            Ok($wrap(Value::Bool(v)))
        }

        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok($wrap(v.into()))
        }

        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok($wrap(v.into()))
        }

        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            Ok($wrap(
                serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
            ))
        }

        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok($wrap(Value::String(v.to_owned())))
        }

        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok($wrap(Value::String(v)))
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($wrap(Value::Null))
        }

        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($wrap(Value::Null))
        }
    };
}

/// A value with its scalars (strings, numbers, booleans, null) as they are and its arrays and
/// objects empty (their contents skipped), but for the member `keep` of an object, itself read
/// shallow: what the header checks need (a type, for a message) and nothing more.
#[derive(Clone, Copy)]
struct Shallow {
    keep: Option<&'static str>,
}

impl<'de> DeserializeSeed<'de> for Shallow {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shallow {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars!(|v: Value| v);

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Value, S::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Array(Vec::new()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.keep {
                Some(k) if k == key => {
                    let v = map.next_value_seed(Shallow { keep: None })?;
                    kept.insert(key, v);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(kept))
    }
}

/// A page as far as [`page`] reads it: the fields it knows, scalars shallow, `ai_tags` an
/// array of shallow values, `ai_snapshot` whole (it is kept); other fields skipped. Anything but
/// an object, shallow.
struct PageValue;

impl<'de> DeserializeSeed<'de> for PageValue {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PageValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a page object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let v = match key.as_str() {
                // Kept as published: its text (see `PageCheck::raw_object`).
                "ai_snapshot" => {
                    let raw = map.next_value::<Box<serde_json::value::RawValue>>()?;
                    Value::String(raw.get().to_owned())
                }
                "ai_tags" => map.next_value_seed(Tags)?,
                "url" | "ai_indexable" | "lastmod" | "ai_summary" | "ai_checksum"
                | "crawl_priority" | "auth_required" | "robots_directive" | "deleted" => {
                    map.next_value_seed(Shallow { keep: None })?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            kept.insert(key, v);
        }
        Ok(Value::Object(kept))
    }

    fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<Value, S::Error> {
        Shallow { keep: None }.visit_seq(seq)
    }

    scalars!(|v: Value| v);
}

/// `ai_tags`: an array of shallow values (a tag that is not a string is an error naming its
/// type), or any other value shallow.
struct Tags;

impl<'de> DeserializeSeed<'de> for Tags {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Tags {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of tags")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Value, S::Error> {
        let mut tags = Vec::new();
        while let Some(v) = seq.next_element_seed(Shallow { keep: None })? {
            tags.push(v);
        }
        Ok(Value::Array(tags))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        Shallow { keep: None }.visit_map(map)
    }

    scalars!(|v: Value| v);
}

/// `delta_feeds`: an array of at most [`MAX_DELTA_FEEDS`] entries, each read shallow but for
/// an object's `url` (the count of entries past that comes second), or any other value
/// shallow.
struct DeltaFeeds;

impl<'de> DeserializeSeed<'de> for DeltaFeeds {
    type Value = (Value, u64);

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(Value, u64), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DeltaFeeds {
    type Value = (Value, u64);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of delta feed URLs")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(Value, u64), S::Error> {
        let mut kept = Vec::new();
        let mut dropped = 0u64;
        loop {
            if kept.len() < MAX_DELTA_FEEDS {
                match seq.next_element_seed(Shallow { keep: Some("url") })? {
                    Some(v) => kept.push(v),
                    None => break,
                }
            } else {
                match seq.next_element::<IgnoredAny>()? {
                    Some(_) => dropped += 1,
                    None => break,
                }
            }
        }
        Ok((Value::Array(kept), dropped))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(Value, u64), A::Error> {
        Shallow { keep: None }.visit_map(map).map(|v| (v, 0))
    }

    scalars!(|v: Value| (v, 0));
}

/// Keep the typed error for the caller; serde carries only its text out.
fn fail<E: de::Error>(slot: &mut Option<ArcError>, e: ArcError) -> E {
    let message = e.to_string();
    *slot = Some(e);
    E::custom(message)
}

struct Pages<'a> {
    opts: ReadOptions,
    on_page: &'a mut dyn FnMut(Page),
    failure: &'a mut Option<ArcError>,
    warnings: &'a mut Warnings,
}

impl<'de> DeserializeSeed<'de> for Pages<'_> {
    type Value = u64;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Pages<'_> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`pages` to be an array of page objects")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<u64, S::Error> {
        let mut index = 0usize;
        while let Some(v) = seq.next_element_seed(PageValue)? {
            match page(index, v, self.opts, self.warnings) {
                Ok(p) => (self.on_page)(p),
                Err(e) => return Err(fail(self.failure, e)),
            }
            index += 1;
        }
        Ok(index as u64)
    }
}

/// The JSON type of a value, with the value when short, for messages.
fn kind(v: &Value) -> String {
    let shown = |s: String| {
        if s.chars().count() > 60 {
            let cut: String = s.chars().take(57).collect();
            format!("{cut}...")
        } else {
            s
        }
    };
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => format!("a string ({})", shown(format!("{s:?}"))),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// One page's checks. `pages[i].field` names every problem.
struct PageCheck<'a> {
    index: usize,
    map: Map<String, Value>,
    page: Option<String>,
    opts: ReadOptions,
    warnings: &'a mut Warnings,
}

impl PageCheck<'_> {
    fn field(&self, name: &str) -> String {
        format!("pages[{}].{name}", self.index)
    }

    fn error(&self, name: &str, problem: impl Into<String>) -> ArcError {
        ArcError::Schema {
            field: self.field(name),
            problem: problem.into(),
            page: self.page.clone(),
        }
    }

    fn wrong(&self, name: &str, want: &str, got: &Value) -> ArcError {
        self.error(name, format!("expected {want}, got {}", kind(got)))
    }

    /// An optional object field kept as its published text (`PageValue` read it raw): `null`
    /// reads as absent, anything but an object is an error.
    fn raw_object(&mut self, name: &str) -> Result<Option<String>, ArcError> {
        let raw = match self.map.remove(name) {
            None => return Ok(None),
            Some(Value::String(raw)) => raw,
            Some(v) => return Err(self.wrong(name, "an object", &v)),
        };
        if raw.trim_start().starts_with('{') {
            return Ok(Some(raw));
        }
        let v: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
        self.map.insert(name.to_string(), v);
        match self.optional(name, "an object") {
            None => Ok(None),
            Some(v) => Err(self.wrong(name, "an object", &v)),
        }
    }

    /// The value of an optional field; `null` reads as absent (see the module comment).
    fn optional(&mut self, name: &str, want: &str) -> Option<Value> {
        match self.map.remove(name) {
            Some(Value::Null) => {
                let w = format!(
                    "{}: null where the schema wants {want}: read as absent",
                    self.field(name)
                );
                self.warnings.push(w);
                None
            }
            v => v,
        }
    }

    fn string(&mut self, name: &str) -> Result<Option<String>, ArcError> {
        match self.optional(name, "a string") {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.wrong(name, "a string", &v)),
        }
    }

    fn boolean(&mut self, name: &str) -> Result<Option<bool>, ArcError> {
        match self.optional(name, "a boolean") {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(v) => Err(self.wrong(name, "a boolean", &v)),
        }
    }

    fn lastmod(&mut self) -> Result<Option<Timestamp>, ArcError> {
        let Some(s) = self.string("lastmod")? else {
            return Ok(None);
        };
        let field = self.field("lastmod");
        match datetime(&s, &field, self.opts, self.warnings) {
            Ok(t) => Ok(Some(t)),
            Err(problem) => Err(self.error("lastmod", problem)),
        }
    }

    fn tags(&mut self) -> Result<Option<Vec<String>>, ArcError> {
        match self.optional("ai_tags", "an array of strings") {
            None => Ok(None),
            Some(Value::Array(items)) => {
                let mut tags = Vec::with_capacity(items.len());
                for (i, t) in items.into_iter().enumerate() {
                    match t {
                        Value::String(s) => tags.push(s),
                        other => {
                            return Err(self.wrong(&format!("ai_tags[{i}]"), "a string", &other))
                        }
                    }
                }
                Ok(Some(tags))
            }
            Some(v) => Err(self.wrong("ai_tags", "an array of strings", &v)),
        }
    }

    /// `ai_checksum` decoded, with a warning when it is a bare hex value or unusable.
    fn digest(&mut self, raw: &str) -> Digest {
        let (d, assumed) = checksum(raw);
        if assumed {
            let w = format!(
                "{}: {raw:?} has no algorithm prefix: read as sha256",
                self.field("ai_checksum")
            );
            self.warnings.push(w);
        } else if !d.is_usable() {
            let w = format!(
                "{}: {raw:?} is not a usable sha256, sha-1 or md5 digest: the page cannot be verified",
                self.field("ai_checksum")
            );
            self.warnings.push(w);
        }
        d
    }

    fn crawl_priority(&mut self) -> Result<Option<f64>, ArcError> {
        match self.optional("crawl_priority", "a number") {
            None => Ok(None),
            Some(Value::Number(n)) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                if !(0.0..=1.0).contains(&x) {
                    return Err(self.error(
                        "crawl_priority",
                        format!("must be between 0 and 1, got {n}"),
                    ));
                }
                Ok(Some(x))
            }
            Some(v) => Err(self.wrong("crawl_priority", "a number between 0 and 1", &v)),
        }
    }
}

fn page(
    index: usize,
    v: Value,
    opts: ReadOptions,
    warnings: &mut Warnings,
) -> Result<Page, ArcError> {
    let map = match v {
        Value::Object(m) => m,
        other => {
            return Err(ArcError::schema(
                format!("pages[{index}]"),
                format!("expected a page object, got {}", kind(&other)),
            ))
        }
    };
    let mut c = PageCheck {
        index,
        map,
        page: None,
        opts,
        warnings,
    };
    let url = match c.map.remove("url") {
        None => return Err(c.error("url", "missing (required)")),
        Some(Value::String(s)) => Url::parse(s.trim())
            .map_err(|e| c.error("url", format!("not an absolute URI ({e}): {s:?}")))?,
        Some(v) => return Err(c.wrong("url", "a string (URI, required)", &v)),
    };
    c.page = Some(url.to_string());
    let ai_indexable = match c.map.remove("ai_indexable") {
        None => return Err(c.error("ai_indexable", "missing (required)")),
        Some(Value::Bool(b)) => b,
        Some(v) => return Err(c.wrong("ai_indexable", "a boolean (required)", &v)),
    };
    let lastmod = c.lastmod()?;
    let ai_summary = c.string("ai_summary")?;
    let ai_tags = c.tags()?;
    let ai_checksum = c.string("ai_checksum")?;
    let digest = ai_checksum.as_deref().map(|raw| c.digest(raw));
    let ai_snapshot = c.raw_object("ai_snapshot")?;
    let crawl_priority = c.crawl_priority()?;
    let auth_required = c.boolean("auth_required")?.unwrap_or(false);
    let robots_directive = c.string("robots_directive")?;
    let deleted = c.boolean("deleted")?.unwrap_or(false);
    Ok(Page {
        index,
        url,
        lastmod,
        ai_indexable,
        ai_summary,
        ai_tags,
        ai_checksum,
        digest,
        ai_snapshot,
        crawl_priority,
        auth_required,
        robots_directive,
        deleted,
    })
}

/// `sha256:<hex>` (any algorithm name `rs::digest` knows); a bare 64-digit hex value is read as
/// sha256 (the second value says so).
fn checksum(raw: &str) -> (Digest, bool) {
    let raw = raw.trim();
    if let Some((alg, value)) = raw.split_once(':') {
        return (Digest::new(Algorithm::parse(alg), value), false);
    }
    if raw.len() == 64 && raw.bytes().all(|b| b.is_ascii_hexdigit()) {
        return (Digest::new(Algorithm::Sha256, raw), true);
    }
    (Digest::new(Algorithm::Other("unknown".into()), raw), false)
}

/// An RFC 3339 date-time (the schema's `format: date-time`), else a W3C datetime with a
/// warning; Err(problem) otherwise.
fn datetime(
    s: &str,
    field: &str,
    opts: ReadOptions,
    warnings: &mut Warnings,
) -> Result<Timestamp, String> {
    let t = s.trim();
    let rfc3339 = t.len() >= 20
        && t.as_bytes()
            .get(10)
            .is_some_and(|b| matches!(b, b'T' | b't'));
    if rfc3339 {
        if let Ok(ts) = t.parse::<Timestamp>() {
            return Ok(ts);
        }
    }
    match w3c_datetime::parse(t, opts.zone) {
        Ok(p) => {
            warnings.push(format!(
                "{field}: {s:?} is not an RFC 3339 date-time (the schema's format): read as {}",
                p.timestamp
            ));
            Ok(p.timestamp)
        }
        Err(e) => Err(format!(
            "not a date-time (RFC 3339, as 2025-11-09T08:00:00Z): {e}"
        )),
    }
}

/// Check the top-level fields once the whole object has been read.
fn header(
    f: Fields,
    base: &Url,
    opts: ReadOptions,
    mut warnings: Warnings,
) -> Result<Header, ArcError> {
    let required = |v: Option<Value>, name: &str, want: &str| -> Result<String, ArcError> {
        match v {
            None => Err(ArcError::schema(name, "missing (required)")),
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(ArcError::schema(
                name,
                format!("expected {want}, got {}", kind(&v)),
            )),
        }
    };
    let version = required(f.version, "arc_sitemap_version", "a string")?;
    if version.split('.').next() != Some("2") {
        warnings.push(format!(
            "arc_sitemap_version {version:?}: this reader knows ARC sitemap 2.1; read as such"
        ));
    }
    let site = required(f.site, "site", "a string (URI)")?;
    let site = Url::parse(site.trim())
        .map_err(|e| ArcError::schema("site", format!("not an absolute URI ({e}): {site:?}")))?;
    let generated = required(f.generated_at, "generated_at", "a string (date-time)")?;
    let generated_at = datetime(&generated, "generated_at", opts, &mut warnings)
        .map_err(|problem| ArcError::schema("generated_at", problem))?;
    let pages = f
        .pages
        .ok_or_else(|| ArcError::schema("pages", "missing (required)"))?;

    let crawl_rate = crawl_rate(f.crawl_rate, f.metadata, &mut warnings);
    let delta_feeds = delta_feeds(f.delta_feeds, f.delta_feeds_dropped, base, &mut warnings);
    Ok(Header {
        version,
        site,
        generated_at,
        crawl_rate,
        delta_feeds,
        pages,
        warnings: warnings.into_vec(),
    })
}

/// `crawl_rate` at the top level, else in a `metadata` object; a value that is no rate is
/// ignored, with a warning.
fn crawl_rate(
    top: Option<Value>,
    metadata: Option<Value>,
    warnings: &mut Warnings,
) -> Option<CrawlRate> {
    let rate_value = top.map(|v| ("crawl_rate", v)).or_else(|| match metadata {
        Some(Value::Object(mut m)) => m.remove("crawl_rate").map(|v| ("metadata.crawl_rate", v)),
        _ => None,
    });
    match rate_value {
        None | Some((_, Value::Null)) => None,
        Some((name, v)) => {
            let rate = match &v {
                Value::String(s) => CrawlRate::parse(s),
                Value::Number(n) => n.as_f64().and_then(CrawlRate::per_second),
                _ => None,
            };
            if rate.is_none() {
                warnings.push(format!(
                    "{name}: {} is not a rate such as \"1/s\": ignored",
                    kind(&v)
                ));
            }
            rate
        }
    }
}

/// The URLs of `delta_feeds` (strings, or objects with a `url`), resolved against `base`;
/// anything else is ignored, with a warning, as are the `dropped` entries past
/// [`MAX_DELTA_FEEDS`].
fn delta_feeds(
    value: Option<Value>,
    dropped: u64,
    base: &Url,
    warnings: &mut Warnings,
) -> Vec<Url> {
    let mut delta_feeds = Vec::new();
    match value {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.into_iter().enumerate() {
                let href = match &item {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(m) => m.get("url").and_then(Value::as_str),
                    _ => None,
                };
                match href.map(|h| base.join(h.trim())) {
                    Some(Ok(u)) => delta_feeds.push(u),
                    Some(Err(e)) => {
                        warnings.push(format!("delta_feeds[{i}]: not a URL ({e}): ignored"))
                    }
                    None => warnings.push(format!(
                        "delta_feeds[{i}]: expected a URL string, got {}: ignored",
                        kind(&item)
                    )),
                }
            }
        }
        Some(v) => warnings.push(format!(
            "delta_feeds: expected an array of URLs, got {}: ignored",
            kind(&v)
        )),
    }
    if dropped > 0 {
        warnings.push(format!(
            "delta_feeds: {dropped} entries past the first {MAX_DELTA_FEEDS} ignored"
        ));
    }
    delta_feeds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://example.com/arc-sitemap.json").unwrap()
    }

    fn parse(json: &str) -> Result<Sitemap, ArcError> {
        read_all(json.as_bytes(), &base(), ReadOptions::default())
    }

    /// ARC E.3.3's YAML example (a real checksum instead of `af3c...`) reads as E.3.1's JSON
    /// does, keys of its snapshot in their order; gzip'd too.
    #[test]
    fn the_yaml_example_reads_like_the_json_one() {
        let yaml = r#"arc_sitemap_version: "2.1"
site: "https://example.com"
generated_at: "2025-11-09T08:00:00Z"
pages:
  - url: "https://example.com/signup"
    lastmod: "2025-11-08T12:00:00Z"
    ai_indexable: true
    ai_summary: "Signup page for AquaGrow; collects email and password for onboarding."
    ai_tags: ["signup","onboarding","user-account"]
    ai_checksum: "sha256:2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824"
    ai_snapshot: {zeta: 1, alpha: 2}
"#;
        let s = parse(yaml).unwrap();
        assert_eq!(s.header.version, "2.1");
        assert_eq!(s.pages.len(), 1);
        let p = &s.pages[0];
        assert_eq!(p.url.as_str(), "https://example.com/signup");
        assert!(p.ai_indexable);
        assert_eq!(
            p.ai_tags.as_deref().unwrap(),
            ["signup", "onboarding", "user-account"]
        );
        assert_eq!(p.ai_snapshot.as_deref(), Some(r#"{"zeta":1,"alpha":2}"#));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, yaml.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let again = read_all(&gz[..], &base(), ReadOptions::default()).unwrap();
        assert_eq!(again.pages, s.pages);
    }

    /// A YAML billion-laughs document, broken YAML and a wrong type give errors naming what is
    /// wrong, never a hang or an allocation without bound.
    #[test]
    fn hostile_or_broken_yaml_is_refused() {
        let mut bomb = String::from("a0: &a0 [\"lol\"]\n");
        for i in 1..20 {
            let prev = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{prev},*a{prev},*a{prev},*a{prev},*a{prev},*a{prev},*a{prev},*a{prev},*a{prev}]\n"
            ));
        }
        bomb.push_str("pages: *a19\narc_sitemap_version: \"2.1\"\n");
        let err = parse(&bomb).unwrap_err().to_string();
        assert!(
            err.contains("YAML") && err.contains("repetition limit"),
            "{err}"
        );
        let err = parse("arc_sitemap_version: \"2.1\"\npages: [\n  - url: x\n").unwrap_err();
        assert!(err.to_string().contains("YAML"), "{err}");
        let err = parse("arc_sitemap_version: \"2.1\"\nsite: \"https://example.com\"\ngenerated_at: \"2025-11-09T08:00:00Z\"\npages:\n  - url: \"https://example.com/a\"\n    ai_indexable: \"yes\"\n")
            .unwrap_err();
        assert!(err.to_string().contains("ai_indexable"), "{err}");
    }

    /// The example of ARC sitemap 2.1, with a real checksum.
    const EXAMPLE: &str = r#"{
  "arc_sitemap_version": "2.1",
  "site": "https://example.com",
  "generated_at": "2025-11-09T08:00:00Z",
  "pages": [
    {
      "url": "https://example.com/signup",
      "lastmod": "2025-11-08T12:00:00Z",
      "ai_indexable": true,
      "ai_summary": "Signup page for AquaGrow; collects email and password for onboarding.",
      "ai_tags": ["signup","onboarding","user-account"],
      "ai_checksum": "sha256:2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824",
      "ai_snapshot": {
        "page": "signup",
        "title": "Create Your Account",
        "sections": [
          { "name": "registration_form", "fields": ["email","password"], "intent": "register_user" }
        ]
      }
    }
  ]
}"#;

    fn schema_error(json: &str) -> (String, String) {
        match parse(json) {
            Err(ArcError::Schema { field, problem, .. }) => (field, problem),
            other => panic!("expected a schema error, got {other:?}"),
        }
    }

    fn with_page(page: &str) -> String {
        format!(
            r#"{{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00Z","pages":[{{"url":"https://example.com/a","ai_indexable":true}},{page}]}}"#
        )
    }

    #[test]
    fn the_specifications_example_reads() {
        let s = parse(EXAMPLE).unwrap();
        assert_eq!(s.header.version, "2.1");
        assert_eq!(s.header.site.as_str(), "https://example.com/");
        assert_eq!(
            s.header.generated_at,
            "2025-11-09T08:00:00Z".parse::<Timestamp>().unwrap()
        );
        assert_eq!(s.header.pages, 1);
        assert!(s.header.warnings.is_empty(), "{:?}", s.header.warnings);
        let p = &s.pages[0];
        assert_eq!(p.url.as_str(), "https://example.com/signup");
        assert!(p.ai_indexable);
        assert_eq!(p.ai_tags.as_ref().unwrap().len(), 3);
        let d = p.digest.as_ref().unwrap();
        assert_eq!(d.algorithm, Algorithm::Sha256);
        assert_eq!(
            d.hex.as_deref(),
            Some("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        );
        assert_eq!(p.snapshot_value().unwrap()["title"], "Create Your Account");
        // As published: keys in their order, spacing kept.
        let raw = p.ai_snapshot.as_deref().unwrap();
        assert!(
            raw.starts_with("{\n        \"page\": \"signup\",\n        \"title\""),
            "{raw}"
        );
        assert!(EXAMPLE.contains(raw));
        assert_eq!(p.skip_reason(), None);
    }

    #[test]
    fn invalid_json_names_line_and_column() {
        let e = parse("{\n  \"site\": \"https://example.com\",\n  \"pages\": [ }\n").unwrap_err();
        match &e {
            ArcError::Syntax { line, column, .. } => assert_eq!((*line, *column), (3, 14)),
            other => panic!("{other:?}"),
        }
        assert!(
            e.to_string()
                .starts_with("invalid JSON at line 3, column 14: "),
            "{e}"
        );
        assert!(matches!(parse(""), Err(ArcError::Syntax { .. })));
        assert!(matches!(parse("{} trailing"), Err(ArcError::Syntax { .. })));
        assert!(matches!(parse("[1, 2]"), Err(ArcError::Shape { .. })));
    }

    #[test]
    fn required_top_level_fields() {
        let (f, p) = schema_error(
            r#"{"site":"https://example.com","generated_at":"2025-11-09T08:00:00Z","pages":[]}"#,
        );
        assert_eq!(
            (f.as_str(), p.as_str()),
            ("arc_sitemap_version", "missing (required)")
        );
        let (f, _) = schema_error(
            r#"{"arc_sitemap_version":"2.1","site":"https://example.com","pages":[]}"#,
        );
        assert_eq!(f, "generated_at");
        let (f, _) = schema_error(
            r#"{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00Z"}"#,
        );
        assert_eq!(f, "pages");
        let (f, p) = schema_error(
            r#"{"arc_sitemap_version":2.1,"site":"https://example.com","generated_at":"2025-11-09T08:00:00Z","pages":[]}"#,
        );
        assert_eq!(f, "arc_sitemap_version");
        assert_eq!(p, "expected a string, got a number (2.1)");
        let (f, p) = schema_error(
            r#"{"arc_sitemap_version":"2.1","site":"/relative","generated_at":"2025-11-09T08:00:00Z","pages":[]}"#,
        );
        assert_eq!(f, "site");
        assert!(p.starts_with("not an absolute URI"), "{p}");
        let (f, p) = schema_error(
            r#"{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"last tuesday","pages":[]}"#,
        );
        assert_eq!(f, "generated_at");
        assert!(p.contains("not a date-time"), "{p}");
    }

    #[test]
    fn page_errors_name_the_index_and_field() {
        let (f, p) = schema_error(&with_page(r#"{"ai_indexable":true}"#));
        assert_eq!(
            (f.as_str(), p.as_str()),
            ("pages[1].url", "missing (required)")
        );
        let (f, p) = schema_error(&with_page(r#"{"url":"https://example.com/b"}"#));
        assert_eq!(
            (f.as_str(), p.as_str()),
            ("pages[1].ai_indexable", "missing (required)")
        );
        let e = parse(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":"yes"}"#,
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "pages[1].ai_indexable: expected a boolean (required), got a string (\"yes\") (page https://example.com/b)"
        );
        let (f, _) = schema_error(&with_page(r#"{"url":42,"ai_indexable":true}"#));
        assert_eq!(f, "pages[1].url");
        let (f, _) = schema_error(&with_page(r#"{"url":"page.html","ai_indexable":true}"#));
        assert_eq!(f, "pages[1].url");
        let (f, p) = schema_error(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":true,"lastmod":"2025-02-30T00:00:00Z"}"#,
        ));
        assert_eq!(f, "pages[1].lastmod");
        assert!(p.starts_with("not a date-time"), "{p}");
        let (f, _) = schema_error(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":true,"ai_tags":["a",3]}"#,
        ));
        assert_eq!(f, "pages[1].ai_tags[1]");
        let (f, _) = schema_error(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":true,"ai_snapshot":"text"}"#,
        ));
        assert_eq!(f, "pages[1].ai_snapshot");
        let (f, p) = schema_error(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":true,"crawl_priority":1.5}"#,
        ));
        assert_eq!(f, "pages[1].crawl_priority");
        assert_eq!(p, "must be between 0 and 1, got 1.5");
        let (f, _) = schema_error(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":true,"auth_required":"no"}"#,
        ));
        assert_eq!(f, "pages[1].auth_required");
        let (f, _) = schema_error(&with_page("[]"));
        assert_eq!(f, "pages[1]");
    }

    #[test]
    fn the_reference_generators_output_reads_with_warnings() {
        // The reference generator writes null for a missing summary and snapshot.
        let s = parse(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":true,"ai_summary":null,"ai_snapshot":null,"ai_tags":[],"lastmod":"2025-11-08T12:00:00.123456Z"}"#,
        ))
        .unwrap();
        assert_eq!(s.pages[1].ai_summary, None);
        assert_eq!(s.pages[1].ai_snapshot, None);
        assert_eq!(s.header.warnings.len(), 2, "{:?}", s.header.warnings);
        // A W3C date where a date-time is wanted.
        let s = parse(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":true,"lastmod":"2025-11-08"}"#,
        ))
        .unwrap();
        assert_eq!(
            s.pages[1].lastmod,
            Some("2025-11-08T00:00:00Z".parse().unwrap())
        );
        assert_eq!(s.header.warnings.len(), 1);
    }

    #[test]
    fn checksums_placeholders_and_skips() {
        let s = parse(&with_page(
            r#"{"url":"https://example.com/b","ai_indexable":false,"ai_checksum":"sha256:af3c...","auth_required":true,"robots_directive":"noindex"}"#,
        ))
        .unwrap();
        let p = &s.pages[1];
        assert!(!p.digest.as_ref().unwrap().is_usable());
        assert!(s.header.warnings[0].contains("cannot be verified"));
        assert!(p.skip_reason().unwrap().starts_with("auth_required"));
        let directive = |d: &str| {
            let mut p = p.clone();
            p.auth_required = false;
            p.robots_directive = Some(d.into());
            p.skip_reason()
        };
        assert_eq!(directive("noindex, nofollow"), None);
        assert!(directive("noindex, NOARCHIVE").is_some());
        assert!(directive("none").is_some());
        assert_eq!(directive("nonearchive"), None);
    }

    /// Top-level values are held only as far as they are used: a `delta_feeds` of millions of
    /// entries keeps the first [`MAX_DELTA_FEEDS`], a `metadata` its `crawl_rate`, any other
    /// its scalars (a `site` that is an array still reads as an array, in the message).
    #[test]
    fn top_level_values_are_held_shallow() {
        let feeds = "\"d.json\",".repeat(MAX_DELTA_FEEDS + 7);
        let s = parse(&format!(
            r#"{{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00Z","pages":[],
                "metadata":{{"x":[[[]]],"crawl_rate":"2/s","y":{{}}}},
                "delta_feeds":[{feeds}{{"url":"e.json","x":[1]}}]}}"#
        ))
        .unwrap();
        assert_eq!(s.header.delta_feeds.len(), MAX_DELTA_FEEDS);
        assert!(s.header.crawl_rate.is_some());
        assert_eq!(
            s.header.warnings,
            [format!(
                "delta_feeds: 8 entries past the first {MAX_DELTA_FEEDS} ignored"
            )]
        );
        let e = parse(
            r#"{"arc_sitemap_version":"2.1","site":["https://example.com"],"generated_at":"2025-11-09T08:00:00Z","pages":[]}"#,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "site: expected a string (URI), got an array");
    }

    /// A page's unknown fields are skipped, not held (a page of `"x":[[],[],...]` held nine
    /// times its bytes); its known ones read as before.
    #[test]
    fn unknown_page_fields_are_skipped() {
        let junk = "[],".repeat(1000);
        let s = parse(&format!(
            r#"{{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00Z",
                "pages":[{{"x":[{junk}[]],"url":"https://example.com/a","ai_indexable":true,"ai_tags":["a","b"],
                "ai_snapshot":{{"k":[1,{{"v":2}}]}},"crawl_priority":0.5}}]}}"#
        ))
        .unwrap();
        let p = &s.pages[0];
        assert_eq!(
            p.ai_tags.as_deref(),
            Some(&["a".to_string(), "b".to_string()][..])
        );
        assert_eq!(p.ai_snapshot.as_deref(), Some(r#"{"k":[1,{"v":2}]}"#));
        assert_eq!(p.crawl_priority, Some(0.5));
        let e = parse(
            r#"{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00Z",
                "pages":[{"url":"https://example.com/a","ai_indexable":true,"ai_tags":["a",[1]]}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "pages[0].ai_tags[1]: expected a string, got an array (page https://example.com/a)"
        );
    }

    #[test]
    fn crawl_rate_and_delta_feeds() {
        let s = parse(
            r#"{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00Z","pages":[],
                "metadata":{"crawl_rate":"2/s"},
                "delta_feeds":["/arc-sitemap-deltas/2025-11-10.json",{"url":"https://example.com/d/2025-11-11.json"},7]}"#,
        )
        .unwrap();
        assert_eq!(
            s.header.crawl_rate.unwrap().delay(),
            std::time::Duration::from_millis(500)
        );
        let feeds: Vec<&str> = s.header.delta_feeds.iter().map(|u| u.as_str()).collect();
        assert_eq!(
            feeds,
            [
                "https://example.com/arc-sitemap-deltas/2025-11-10.json",
                "https://example.com/d/2025-11-11.json"
            ]
        );
        assert_eq!(s.header.warnings.len(), 1, "{:?}", s.header.warnings);
        let s = parse(
            r#"{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00Z","pages":[],"crawl_rate":"warp 9"}"#,
        )
        .unwrap();
        assert_eq!(s.header.crawl_rate, None);
        assert!(s.header.warnings[0].starts_with("crawl_rate: "));
    }

    #[test]
    fn pages_before_the_header_and_duplicates() {
        let s = parse(
            r#"{"pages":[{"url":"https://example.com/a","ai_indexable":true}],"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00+01:00","extra":{"x":[1,2]}}"#,
        )
        .unwrap();
        assert_eq!(s.pages.len(), 1);
        assert_eq!(
            s.header.generated_at,
            "2025-11-09T07:00:00Z".parse::<Timestamp>().unwrap()
        );
        let e = parse(r#"{"site":"https://a.example","site":"https://b.example"}"#).unwrap_err();
        assert!(e.to_string().contains("site"), "{e}");
    }

    #[test]
    fn gzip_bom_and_size_limit() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(EXAMPLE.as_bytes()).unwrap();
        let bytes = gz.finish().unwrap();
        let s = read_all(&bytes[..], &base(), ReadOptions::default()).unwrap();
        assert_eq!(s.pages.len(), 1);
        let with_bom = format!("\u{feff}{EXAMPLE}");
        assert!(parse(&with_bom).is_ok());
        let opts = ReadOptions {
            max_bytes: 100,
            ..Default::default()
        };
        assert!(matches!(
            read_all(EXAMPLE.as_bytes(), &base(), opts),
            Err(ArcError::TooLarge { max: 100 })
        ));
        assert!(matches!(
            read_all(&bytes[..], &base(), opts),
            Err(ArcError::TooLarge { .. })
        ));
    }
}
