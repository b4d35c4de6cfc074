//! One SCP page (SCP 0.1, "Page Schema", "Page Fields", "Content Block Types"): parsing one
//! line of a collection into a typed [`Page`], keeping the line verbatim for the catalog.
//!
//! What is fatal and what is not follows SCP 0.1 "Validation" and "Error Handling":
//! - fatal (the whole collection is rejected): invalid JSON; a line that is not an object; a
//!   missing required field (`url`, `title`, `description`, `modified`, `language`,
//!   `content`) or one of the wrong type; an unparsable `modified`; more content blocks than
//!   the limit; a block without a string `type`; a block of a known type without its required
//!   fields (`text` without `text`, ...); a field given twice;
//! - the page is skipped with a warning: a `url` that is not an absolute http(s) URL;
//! - a warning and the page is kept: an unknown block type (kept raw, SCP 0.1: "MUST log a
//!   warning, MAY skip the block"), a heading level outside 1..=6 (clamped), optional fields
//!   of the wrong type (ignored), a language tag not shaped like BCP 47, an empty `content`,
//!   list items or table cells that are numbers or booleans (kept as their JSON text), block
//!   and canonical URLs that are not absolute http(s).
//!
//! Parsing is one pass of serde_json over the line: the page object is read field by field
//! (borrowing strings where it can), the `content` array stops materialising blocks once the
//! limit is reached and only counts the rest.

use crate::formats::scp::read::error::ScpErrorKind;
use crate::formats::scp::read::warning::{WarnKind, WarningLog};
use jiff::Timestamp;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use url::Url;

/// Block types SCP 0.1 defines.
pub const BLOCK_TYPES: &[&str] = &[
    "text", "heading", "link", "image", "list", "code", "table", "quote", "video", "audio",
];

/// One page of a collection.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Line of the collection it came from (1-based; line 1 is the metadata).
    pub line: u64,
    pub url: Url,
    pub title: String,
    pub description: String,
    pub modified: Timestamp,
    /// BCP 47 tag as written.
    pub language: String,
    pub author: Option<String>,
    pub published: Option<Timestamp>,
    /// As written (kept even when it is not an absolute http(s) URL, with a warning).
    pub canonical: Option<String>,
    pub blocks: Vec<Block>,
    /// The page object exactly as in the file (without its line terminator).
    pub json: String,
}

/// One content block.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text {
        text: String,
    },
    /// `level` is always within 1..=6 (SCP 0.1: "clamp to nearest valid value").
    Heading {
        level: u8,
        text: String,
    },
    Link {
        url: String,
        text: String,
        rel: Vec<String>,
    },
    Image {
        url: String,
        alt: String,
    },
    List {
        ordered: bool,
        items: Vec<String>,
    },
    Code {
        code: String,
        language: Option<String>,
    },
    Table {
        rows: Vec<Vec<String>>,
    },
    Quote {
        text: String,
        citation: Option<String>,
    },
    Video(Media),
    Audio(Media),
    /// A type SCP 0.1 does not define, kept as JSON (members in sorted order; the page's
    /// `json` has them as written).
    Unknown {
        kind: String,
        json: String,
    },
}

impl Block {
    /// The block's `type`.
    pub fn kind(&self) -> &str {
        match self {
            Block::Text { .. } => "text",
            Block::Heading { .. } => "heading",
            Block::Link { .. } => "link",
            Block::Image { .. } => "image",
            Block::List { .. } => "list",
            Block::Code { .. } => "code",
            Block::Table { .. } => "table",
            Block::Quote { .. } => "quote",
            Block::Video(_) => "video",
            Block::Audio(_) => "audio",
            Block::Unknown { kind, .. } => kind,
        }
    }
}

/// The parts of a `video` / `audio` block (ActivityStreams 2.0 style) a mirror may index;
/// the rest (captions, chapters, icon, sizes) stays in the page's `json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Media {
    pub name: String,
    /// `url` as a string (one entry, no media type) or as `[{href, mediaType}]`.
    pub urls: Vec<MediaUrl>,
    pub duration: Option<String>,
    pub summary: Option<String>,
    pub transcript: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MediaUrl {
    pub href: String,
    pub media_type: Option<String>,
}

/// Parse one page line (`json`: the line without its terminator). `Ok(None)`: the page is
/// skipped (a warning says why).
pub(crate) fn parse_page(
    line: u64,
    json: &str,
    max_blocks: usize,
    log: &mut WarningLog,
) -> Result<Option<Page>, ScpErrorKind> {
    let mut de = serde_json::Deserializer::from_str(json);
    let wire = PageSeed { max_blocks }
        .deserialize(&mut de)
        .and_then(|w| de.end().map(|()| w))
        .map_err(json_error)?;
    if let Some(field) = wire.duplicate {
        return Err(ScpErrorKind::DuplicateField { field });
    }
    // SCP 0.1 "Validation" 3: required fields; fatal whatever else is wrong with the page.
    let url = wire.url.ok_or(ScpErrorKind::MissingField("url"))?;
    let title = required(wire.title, "title")?;
    let description = required(wire.description, "description")?;
    let modified_raw = required(wire.modified, "modified")?;
    let language = required(wire.language, "language")?;
    let blocks = content_blocks(wire.content, max_blocks)?;
    let modified = modified_raw
        .parse::<Timestamp>()
        .map_err(|_| ScpErrorKind::InvalidField {
            field: "modified".into(),
            reason: format!("not an RFC 3339 date-time: {modified_raw:?}"),
        })?;
    if blocks.is_empty() {
        log.warn(WarnKind::Content, line, || {
            "empty \"content\" array (the schema asks for at least one block)".into()
        });
    }
    let blocks = blocks
        .into_iter()
        .enumerate()
        .map(|(i, v)| parse_block(line, i, v, log))
        .collect::<Result<Vec<Block>, ScpErrorKind>>()?;

    let Some(url) = page_url(url, line, log) else {
        return Ok(None);
    };
    if !is_bcp47_shaped(&language) {
        log.warn(WarnKind::Language, line, || {
            format!("language {language:?} is not a BCP 47 tag (kept as written)")
        });
    }
    let author = optional_str(wire.author, "author", line, log);
    let published = published(wire.published, line, log);
    let canonical = optional_str(wire.canonical, "canonical", line, log);
    if let Some(c) = &canonical {
        check_inner_url(c, "canonical", line, log);
    }
    if let Some(found) = wire.schema.filter(|&t| t != OBJECT) {
        log.warn(WarnKind::OptionalField, line, || {
            format!("schema is {found}, not an object: ignored")
        });
    }
    Ok(Some(Page {
        line,
        url,
        title: title.into_owned(),
        description: description.into_owned(),
        modified,
        language: language.into_owned(),
        author,
        published,
        canonical,
        blocks,
        json: json.to_string(),
    }))
}

/// The blocks of `content` (required), at most `max_blocks` of them.
fn content_blocks(content: Option<Content>, max_blocks: usize) -> Result<Vec<Value>, ScpErrorKind> {
    match content.ok_or(ScpErrorKind::MissingField("content"))? {
        Content::Blocks(blocks) => Ok(blocks),
        Content::TooMany(count) => Err(ScpErrorKind::TooManyBlocks {
            count,
            limit: max_blocks,
        }),
        Content::NotArray(found) => Err(ScpErrorKind::InvalidField {
            field: "content".into(),
            reason: format!("expected an array of blocks, found {found}"),
        }),
    }
}

/// The page's URL; `None` when it is no http(s) URL, and the page is skipped (SCP 0.1
/// "Non-Fatal Errors": invalid URL format: log a warning, skip the page).
fn page_url(url: Field<'_>, line: u64, log: &mut WarningLog) -> Option<Url> {
    match url {
        Field::Str(s) => match http_url(&s) {
            Ok(u) => Some(u),
            Err(reason) => {
                log.warn(WarnKind::PageSkipped, line, || {
                    format!("page skipped: url {s:?} {reason}")
                });
                None
            }
        },
        Field::Other(found) => {
            log.warn(WarnKind::PageSkipped, line, || {
                format!("page skipped: url is {found}, not a string")
            });
            None
        }
    }
}

/// `published` (optional): an RFC 3339 date-time, else ignored with a warning.
fn published(f: Option<Field<'_>>, line: u64, log: &mut WarningLog) -> Option<Timestamp> {
    let p = optional_str(f, "published", line, log)?;
    match p.parse::<Timestamp>() {
        Ok(t) => Some(t),
        Err(_) => {
            log.warn(WarnKind::OptionalField, line, || {
                format!("published {p:?} is not an RFC 3339 date-time: ignored")
            });
            None
        }
    }
}

/// An absolute http(s) URL with a host (SCP 0.1 "URL format: Valid HTTP/HTTPS URLs").
pub(crate) fn http_url(s: &str) -> Result<Url, String> {
    match Url::parse(s) {
        Ok(u)
            if matches!(u.scheme(), "http" | "https")
                && u.host_str().is_some_and(|h| !h.is_empty()) =>
        {
            Ok(u)
        }
        Ok(u) => Err(format!("has scheme {:?}, not http or https", u.scheme())),
        Err(e) => Err(format!("is not an absolute URL ({e})")),
    }
}

fn check_inner_url(s: &str, field: &str, line: u64, log: &mut WarningLog) {
    if let Err(reason) = http_url(s) {
        log.warn(WarnKind::InnerUrl, line, || {
            format!("{field} {s:?} {reason} (kept)")
        });
    }
}

/// The shape of a BCP 47 tag: subtags of 1-8 letters or digits, the first 2-8 letters (or a
/// private-use / grandfathered `x-` / `i-`). Looser than the spec's schema pattern, which
/// refuses valid tags such as `en-us` or `de-CH-1996`.
fn is_bcp47_shaped(tag: &str) -> bool {
    let mut subtags = tag.split('-');
    let first = subtags.next().unwrap_or("");
    let first_ok = (2..=8).contains(&first.len()) && first.bytes().all(|b| b.is_ascii_alphabetic())
        || first.eq_ignore_ascii_case("x")
        || first.eq_ignore_ascii_case("i");
    first_ok
        && subtags
            .all(|s| (1..=8).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn required<'a>(f: Option<Field<'a>>, name: &'static str) -> Result<Cow<'a, str>, ScpErrorKind> {
    match f {
        None => Err(ScpErrorKind::MissingField(name)),
        Some(Field::Str(s)) => Ok(s),
        Some(Field::Other(found)) => Err(ScpErrorKind::InvalidField {
            field: name.into(),
            reason: format!("expected a string, found {found}"),
        }),
    }
}

fn optional_str(
    f: Option<Field<'_>>,
    name: &str,
    line: u64,
    log: &mut WarningLog,
) -> Option<String> {
    match f {
        None => None,
        Some(Field::Str(s)) => Some(s.into_owned()),
        Some(Field::Other(found)) => {
            log.warn(WarnKind::OptionalField, line, || {
                format!("{name} is {found}, not a string: ignored")
            });
            None
        }
    }
}

fn json_error(e: serde_json::Error) -> ScpErrorKind {
    match e.classify() {
        serde_json::error::Category::Data => ScpErrorKind::NotAPage(e.to_string()),
        _ => ScpErrorKind::InvalidJson(e.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Blocks

fn parse_block(line: u64, i: usize, v: Value, log: &mut WarningLog) -> Result<Block, ScpErrorKind> {
    let Value::Object(mut map) = v else {
        return Err(ScpErrorKind::InvalidField {
            field: format!("content[{i}]"),
            reason: format!("expected a block object, found {}", type_name(&v)),
        });
    };
    // SCP 0.1 "Validation" 5: all content blocks have a valid `type` field.
    let kind = match map.remove("type") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(ScpErrorKind::InvalidField {
                field: format!("content[{i}].type"),
                reason: format!("expected a string, found {}", type_name(&other)),
            })
        }
        None => {
            return Err(ScpErrorKind::InvalidField {
                field: format!("content[{i}].type"),
                reason: "missing: every block has a type".into(),
            })
        }
    };
    let mut b = BlockFields {
        map,
        i,
        kind: &kind,
        line,
    };
    let block = match kind.as_str() {
        "text" => Block::Text {
            text: b.string("text")?,
        },
        "heading" => {
            let level = b.level(log)?;
            Block::Heading {
                level,
                text: b.string("text")?,
            }
        }
        "link" => {
            let url = b.string("url")?;
            check_inner_url(&url, &format!("content[{i}].url"), line, log);
            Block::Link {
                url,
                text: b.string("text")?,
                rel: b.optional_strings("rel", log),
            }
        }
        "image" => {
            let url = b.string("url")?;
            check_inner_url(&url, &format!("content[{i}].url"), line, log);
            Block::Image {
                url,
                alt: b.string("alt")?,
            }
        }
        "list" => Block::List {
            ordered: b.boolean("ordered")?,
            items: b.cells("items", log)?,
        },
        "code" => Block::Code {
            code: b.string("code")?,
            language: b.optional_string("language", log),
        },
        "table" => Block::Table { rows: b.rows(log)? },
        "quote" => Block::Quote {
            text: b.string("text")?,
            citation: b.optional_string("citation", log),
        },
        "video" => Block::Video(b.media(log)?),
        "audio" => Block::Audio(b.media(log)?),
        _ => {
            // SCP 0.1 "Non-Fatal Errors": unknown block type: MUST log a warning, MAY skip
            // the block, MUST continue. We keep it: the catalog stores the page verbatim.
            log.warn(WarnKind::UnknownBlock, line, || {
                format!("content[{i}]: unknown block type {kind:?} kept as raw JSON")
            });
            let mut map = b.map;
            map.insert("type".into(), Value::String(kind.clone()));
            return Ok(Block::Unknown {
                json: Value::Object(map).to_string(),
                kind,
            });
        }
    };
    Ok(block)
}

/// The members of one known block, taken out one by one.
struct BlockFields<'k> {
    map: Map<String, Value>,
    i: usize,
    kind: &'k str,
    line: u64,
}

impl BlockFields<'_> {
    fn path(&self, field: &str) -> String {
        format!("content[{}].{field}", self.i)
    }

    fn missing(&self, field: &str) -> ScpErrorKind {
        ScpErrorKind::InvalidField {
            field: self.path(field),
            reason: format!("required in a {:?} block but missing", self.kind),
        }
    }

    fn wrong(&self, field: &str, expected: &str, found: &Value) -> ScpErrorKind {
        ScpErrorKind::InvalidField {
            field: self.path(field),
            reason: format!("expected {expected}, found {}", type_name(found)),
        }
    }

    fn take(&mut self, field: &str) -> Result<Value, ScpErrorKind> {
        self.map.remove(field).ok_or_else(|| self.missing(field))
    }

    fn string(&mut self, field: &str) -> Result<String, ScpErrorKind> {
        match self.take(field)? {
            Value::String(s) => Ok(s),
            other => Err(self.wrong(field, "a string", &other)),
        }
    }

    fn boolean(&mut self, field: &str) -> Result<bool, ScpErrorKind> {
        match self.take(field)? {
            Value::Bool(b) => Ok(b),
            other => Err(self.wrong(field, "true or false", &other)),
        }
    }

    fn optional_string(&mut self, field: &str, log: &mut WarningLog) -> Option<String> {
        match self.map.remove(field) {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                let (path, found) = (self.path(field), type_name(&other));
                log.warn(WarnKind::OptionalField, self.line, || {
                    format!("{path} is {found}, not a string: ignored")
                });
                None
            }
        }
    }

    fn optional_strings(&mut self, field: &str, log: &mut WarningLog) -> Vec<String> {
        match self.map.remove(field) {
            None => Vec::new(),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
                .into_iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
            Some(_) => {
                let path = self.path(field);
                log.warn(WarnKind::OptionalField, self.line, || {
                    format!("{path} is not an array of strings: ignored")
                });
                Vec::new()
            }
        }
    }

    /// SCP 0.1 "Non-Fatal Errors": heading level outside 1-6: clamp to the nearest valid value.
    fn level(&mut self, log: &mut WarningLog) -> Result<u8, ScpErrorKind> {
        let v = self.take("level")?;
        let Value::Number(n) = &v else {
            return Err(self.wrong("level", "a number", &v));
        };
        let x = n.as_f64().unwrap_or(f64::MAX);
        let level = x.round().clamp(1.0, 6.0) as u8;
        if x != f64::from(level) {
            let path = self.path("level");
            log.warn(WarnKind::HeadingLevel, self.line, || {
                format!("{path} {n} read as {level}")
            });
        }
        Ok(level)
    }

    /// An array of strings; numbers and booleans are kept as their JSON text, with a warning.
    fn cells(&mut self, field: &str, log: &mut WarningLog) -> Result<Vec<String>, ScpErrorKind> {
        match self.take(field)? {
            Value::Array(items) => self.strings_of(items, field, log),
            other => Err(self.wrong(field, "an array of strings", &other)),
        }
    }

    fn rows(&mut self, log: &mut WarningLog) -> Result<Vec<Vec<String>>, ScpErrorKind> {
        match self.take("rows")? {
            Value::Array(rows) => rows
                .into_iter()
                .enumerate()
                .map(|(r, row)| match row {
                    Value::Array(cells) => self.strings_of(cells, &format!("rows[{r}]"), log),
                    other => Err(self.wrong(&format!("rows[{r}]"), "an array of strings", &other)),
                })
                .collect(),
            other => Err(self.wrong("rows", "an array of arrays of strings", &other)),
        }
    }

    fn strings_of(
        &self,
        items: Vec<Value>,
        field: &str,
        log: &mut WarningLog,
    ) -> Result<Vec<String>, ScpErrorKind> {
        items
            .into_iter()
            .enumerate()
            .map(|(j, v)| match v {
                Value::String(s) => Ok(s),
                Value::Number(_) | Value::Bool(_) => {
                    let path = format!("{}[{j}]", self.path(field));
                    let text = v.to_string();
                    log.warn(WarnKind::Content, self.line, || {
                        format!("{path} is {}, kept as the text {text:?}", type_name(&v))
                    });
                    Ok(text)
                }
                other => Err(self.wrong(&format!("{field}[{j}]"), "a string", &other)),
            })
            .collect()
    }

    /// `video` / `audio`: `name` and `url` required; `url` a string or `[{href, mediaType}]`.
    fn media(&mut self, log: &mut WarningLog) -> Result<Media, ScpErrorKind> {
        let name = self.string("name")?;
        let urls = match self.take("url")? {
            Value::String(href) => vec![MediaUrl {
                href,
                media_type: None,
            }],
            Value::Array(items) if !items.is_empty() => items
                .into_iter()
                .enumerate()
                .map(|(j, item)| {
                    let field = format!("url[{j}]");
                    let Value::Object(mut o) = item else {
                        return Err(self.wrong(&field, "an object with href", &item));
                    };
                    let href = match o.remove("href") {
                        Some(Value::String(h)) => h,
                        Some(other) => {
                            return Err(self.wrong(&format!("{field}.href"), "a string", &other))
                        }
                        None => return Err(self.missing(&format!("{field}.href"))),
                    };
                    let media_type = match o.remove("mediaType") {
                        Some(Value::String(m)) => Some(m),
                        _ => None,
                    };
                    Ok(MediaUrl { href, media_type })
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(self.wrong(
                    "url",
                    "a URL or a non-empty array of {href, mediaType}",
                    &other,
                ))
            }
        };
        for u in &urls {
            check_inner_url(&u.href, &self.path("url"), self.line, log);
        }
        Ok(Media {
            name,
            urls,
            duration: self.optional_string("duration", log),
            summary: self.optional_string("summary", log),
            transcript: self.optional_string("transcript", log),
        })
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Number(_) => NUMBER,
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    }
}

const NULL: &str = "null";
const BOOLEAN: &str = "a boolean";
const NUMBER: &str = "a number";
const STRING: &str = "a string";
const ARRAY: &str = "an array";
const OBJECT: &str = "an object";

// ---------------------------------------------------------------------------------------------
// The page object on the wire

/// A string field, or what was found instead.
enum Field<'a> {
    Str(Cow<'a, str>),
    Other(&'static str),
}

enum Content {
    Blocks(Vec<Value>),
    /// The `content` array had this many blocks, more than the limit; none were kept.
    TooMany(usize),
    NotArray(&'static str),
}

#[derive(Default)]
struct Wire<'a> {
    url: Option<Field<'a>>,
    title: Option<Field<'a>>,
    description: Option<Field<'a>>,
    modified: Option<Field<'a>>,
    language: Option<Field<'a>>,
    author: Option<Field<'a>>,
    published: Option<Field<'a>>,
    canonical: Option<Field<'a>>,
    /// The JSON type of `schema`.
    schema: Option<&'static str>,
    content: Option<Content>,
    /// The first field seen twice.
    duplicate: Option<String>,
}

struct PageSeed {
    max_blocks: usize,
}

impl<'de> DeserializeSeed<'de> for PageSeed {
    type Value = Wire<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Wire<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed {
    type Value = Wire<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a page object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Wire<'de>, A::Error> {
        let mut w = Wire::default();
        while let Some(Key(key)) = map.next_key()? {
            let slot = match key.as_ref() {
                "url" => &mut w.url,
                "title" => &mut w.title,
                "description" => &mut w.description,
                "modified" => &mut w.modified,
                "language" => &mut w.language,
                "author" => &mut w.author,
                "published" => &mut w.published,
                "canonical" => &mut w.canonical,
                "schema" => {
                    let Kind(k) = map.next_value()?;
                    if w.schema.replace(k).is_some() {
                        w.duplicate.get_or_insert_with(|| key.to_string());
                    }
                    continue;
                }
                "content" => {
                    let c = map.next_value_seed(ContentSeed {
                        max: self.max_blocks,
                    })?;
                    if w.content.replace(c).is_some() {
                        w.duplicate.get_or_insert_with(|| key.to_string());
                    }
                    continue;
                }
                _ => {
                    // SCP 0.1: parsers MUST ignore unknown fields.
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            let FieldOf(value) = map.next_value()?;
            if slot.replace(value).is_some() {
                w.duplicate.get_or_insert_with(|| key.to_string());
            }
        }
        Ok(w)
    }
}

/// An object key, borrowed from the line when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, read as a [`Field`].
struct FieldOf<'a>(Field<'a>);

impl<'de> Deserialize<'de> for FieldOf<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FieldOf<'de>, D::Error> {
        d.deserialize_any(AnyVisitor(|s: Cow<'de, str>| Field::Str(s), Field::Other))
            .map(FieldOf)
    }
}

/// Any JSON value, reduced to its type name.
struct Kind(&'static str);

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        d.deserialize_any(AnyVisitor(|_: Cow<'de, str>| STRING, |k| k))
            .map(Kind)
    }
}

/// Accepts any JSON value: a string through `.0`, anything else (skipped without allocating)
/// as its type name through `.1`.
struct AnyVisitor<S, O>(S, O);

impl<'de, T, S, O> Visitor<'de> for AnyVisitor<S, O>
where
    S: FnOnce(Cow<'de, str>) -> T,
    O: FnOnce(&'static str) -> T,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
        Ok((self.0)(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(Cow::Owned(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<T, E> {
        Ok((self.0)(Cow::Owned(v)))
    }

    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok((self.1)(BOOLEAN))
    }

    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok((self.1)(NUMBER))
    }

    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok((self.1)(NUMBER))
    }

    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok((self.1)(NUMBER))
    }

    fn visit_unit<E>(self) -> Result<T, E> {
        Ok((self.1)(NULL))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((self.1)(ARRAY))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((self.1)(OBJECT))
    }
}

/// `content`: blocks up to the limit, then only a count.
struct ContentSeed {
    max: usize,
}

impl<'de> DeserializeSeed<'de> for ContentSeed {
    type Value = Content;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Content, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentSeed {
    type Value = Content;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of content blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
        let mut blocks = Vec::new();
        while blocks.len() < self.max {
            match seq.next_element::<Value>()? {
                Some(v) => blocks.push(v),
                None => return Ok(Content::Blocks(blocks)),
            }
        }
        if seq.next_element::<IgnoredAny>()?.is_none() {
            return Ok(Content::Blocks(blocks));
        }
        // One over the limit: stop materialising, count the rest without allocating.
        let mut count = blocks.len() + 1;
        drop(blocks);
        while seq.next_element::<IgnoredAny>()?.is_some() {
            count += 1;
        }
        Ok(Content::TooMany(count))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Content::NotArray(OBJECT))
    }

    fn visit_str<E>(self, _: &str) -> Result<Content, E> {
        Ok(Content::NotArray(STRING))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Content, E> {
        Ok(Content::NotArray(BOOLEAN))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Content, E> {
        Ok(Content::NotArray(NUMBER))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Content, E> {
        Ok(Content::NotArray(NUMBER))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Content, E> {
        Ok(Content::NotArray(NUMBER))
    }

    fn visit_unit<E>(self) -> Result<Content, E> {
        Ok(Content::NotArray(NULL))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#""url":"https://example.com/p","title":"T","description":"D","modified":"2025-01-15T10:00:00Z","language":"en""#;

    fn with_content(blocks: &str) -> String {
        format!("{{{HEAD},\"content\":[{blocks}]}}")
    }

    fn parse(json: &str) -> (Result<Option<Page>, ScpErrorKind>, Vec<String>) {
        let mut log = WarningLog::default();
        let r = parse_page(7, json, 1000, &mut log);
        let msgs = log.take().into_iter().map(|w| {
            assert_eq!(w.line, 7);
            w.message
        });
        (r, msgs.collect())
    }

    fn ok(json: &str) -> (Page, Vec<String>) {
        let (r, w) = parse(json);
        (r.unwrap().expect("not skipped"), w)
    }

    fn err(json: &str) -> ScpErrorKind {
        parse(json).0.unwrap_err()
    }

    #[test]
    fn every_v0_1_block_type() {
        let json = with_content(concat!(
            r#"{"type":"text","text":"Paragraph"},"#,
            r#"{"type":"heading","level":2,"text":"H"},"#,
            r#"{"type":"link","url":"https://example.com","text":"L","rel":["nofollow","sponsored"]},"#,
            r#"{"type":"image","url":"https://example.com/i.jpg","alt":"A"},"#,
            r#"{"type":"list","ordered":true,"items":["a","b"]},"#,
            r#"{"type":"code","language":"python","code":"print('x')"},"#,
            r#"{"type":"table","rows":[["h1","h2"],["c1","c2"]]},"#,
            r#"{"type":"quote","text":"Q","citation":"S"},"#,
            r#"{"type":"video","name":"V","url":[{"href":"https://example.com/v.mp4","mediaType":"video/mp4"}],"duration":"PT5M20S","transcript":"words","chapters":[{"time":0,"title":"Intro"}]},"#,
            r#"{"type":"audio","name":"A","url":"https://example.com/a.mp3","summary":"S"}"#
        ));
        let (p, w) = ok(&json);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(p.json, json);
        let kinds: Vec<&str> = p.blocks.iter().map(Block::kind).collect();
        assert_eq!(kinds, BLOCK_TYPES);
        assert_eq!(
            p.blocks[2],
            Block::Link {
                url: "https://example.com".into(),
                text: "L".into(),
                rel: vec!["nofollow".into(), "sponsored".into()]
            }
        );
        assert_eq!(
            p.blocks[6],
            Block::Table {
                rows: vec![
                    vec!["h1".into(), "h2".into()],
                    vec!["c1".into(), "c2".into()]
                ]
            }
        );
        match &p.blocks[8] {
            Block::Video(m) => {
                assert_eq!(m.urls[0].media_type.as_deref(), Some("video/mp4"));
                assert_eq!(m.duration.as_deref(), Some("PT5M20S"));
                assert_eq!(m.transcript.as_deref(), Some("words"));
            }
            b => panic!("{b:?}"),
        }
        match &p.blocks[9] {
            Block::Audio(m) => assert_eq!(
                m.urls,
                vec![MediaUrl {
                    href: "https://example.com/a.mp3".into(),
                    media_type: None
                }]
            ),
            b => panic!("{b:?}"),
        }
    }

    #[test]
    fn optional_page_fields() {
        let json = format!(
            r#"{{{HEAD},"author":"Jane","published":"2000-01-15T10:30:00+01:00","canonical":"https://example.com/c","schema":{{"@type":"Product"}},"extra":[1,{{"x":2}}],"content":[{{"type":"text","text":"t"}}]}}"#
        );
        let (p, w) = ok(&json);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(p.author.as_deref(), Some("Jane"));
        assert_eq!(p.published, Some("2000-01-15T09:30:00Z".parse().unwrap()));
        assert_eq!(p.canonical.as_deref(), Some("https://example.com/c"));
        let json = format!(
            r#"{{{HEAD},"author":5,"published":"yesterday","canonical":"/rel","schema":"x","content":[{{"type":"text","text":"t"}}]}}"#
        );
        let (p, w) = ok(&json);
        assert_eq!((p.author, p.published), (None, None));
        assert_eq!(p.canonical.as_deref(), Some("/rel"));
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w[0].contains("author is a number, not a string: ignored"));
        assert!(w[1].contains("published \"yesterday\" is not an RFC 3339 date-time"));
        assert!(w[2].contains("canonical \"/rel\" is not an absolute URL"));
        assert!(w[3].contains("schema is a string, not an object"));
    }

    #[test]
    fn heading_levels_are_clamped() {
        for (level, want) in [
            ("0", 1),
            ("-3", 1),
            ("7", 6),
            ("99999999999999999999", 6),
            ("2.4", 2),
            ("6", 6),
        ] {
            let (p, w) = ok(&with_content(&format!(
                r#"{{"type":"heading","level":{level},"text":"H"}}"#
            )));
            assert_eq!(
                p.blocks[0],
                Block::Heading {
                    level: want,
                    text: "H".into()
                },
                "{level}"
            );
            assert_eq!(w.len(), usize::from(level != "6"), "{level}: {w:?}");
        }
        let (_, w) = ok(&with_content(r#"{"type":"heading","level":9,"text":"H"}"#));
        assert_eq!(w, ["content[0].level 9 read as 6"]);
        let e = err(&with_content(
            r#"{"type":"heading","level":"2","text":"H"}"#,
        ));
        assert_eq!(
            e.to_string(),
            r#"field "content[0].level": expected a number, found a string"#
        );
    }

    #[test]
    fn unknown_block_types_are_kept_with_a_warning() {
        let (p, w) = ok(&with_content(
            r#"{"type":"structured","format":"json-ld","data":{"@type":"Product"}},{"type":"text","text":"after"}"#,
        ));
        assert_eq!(
            p.blocks[0],
            Block::Unknown {
                kind: "structured".into(),
                json: r#"{"data":{"@type":"Product"},"format":"json-ld","type":"structured"}"#
                    .into()
            }
        );
        assert_eq!(p.blocks[1].kind(), "text");
        assert_eq!(
            w,
            [r#"content[0]: unknown block type "structured" kept as raw JSON"#]
        );
    }

    #[test]
    fn broken_blocks_are_fatal() {
        for (blocks, want) in [
            (
                r#""just text""#,
                r#"field "content[0]": expected a block object, found a string"#,
            ),
            (
                r#"{"text":"no type"}"#,
                r#"field "content[0].type": missing: every block has a type"#,
            ),
            (
                r#"{"type":3}"#,
                r#"field "content[0].type": expected a string, found a number"#,
            ),
            (
                r#"{"type":"text"}"#,
                r#"field "content[0].text": required in a "text" block but missing"#,
            ),
            (
                r#"{"type":"image","url":"https://e.org/i"}"#,
                r#"field "content[0].alt": required in a "image" block but missing"#,
            ),
            (
                r#"{"type":"list","ordered":"yes","items":[]}"#,
                r#"field "content[0].ordered": expected true or false, found a string"#,
            ),
            (
                r#"{"type":"list","ordered":true,"items":[["nested"]]}"#,
                r#"field "content[0].items[0]": expected a string, found an array"#,
            ),
            (
                r#"{"type":"table","rows":[["a"],"b"]}"#,
                r#"field "content[0].rows[1]": expected an array of strings, found a string"#,
            ),
            (
                r#"{"type":"video","name":"V","url":[]}"#,
                r#"field "content[0].url": expected a URL or a non-empty array of {href, mediaType}, found an array"#,
            ),
            (
                r#"{"type":"audio","name":"A","url":[{"mediaType":"audio/mpeg"}]}"#,
                r#"field "content[0].url[0].href": required in a "audio" block but missing"#,
            ),
        ] {
            let e = err(&with_content(blocks));
            assert_eq!(e.to_string(), want, "{blocks}");
        }
    }

    #[test]
    fn scalar_cells_are_kept_as_text() {
        let (p, w) = ok(&with_content(
            r#"{"type":"table","rows":[["Price",29.99,true]]}"#,
        ));
        assert_eq!(
            p.blocks[0],
            Block::Table {
                rows: vec![vec!["Price".into(), "29.99".into(), "true".into()]]
            }
        );
        assert_eq!(w.len(), 2);
        assert_eq!(
            w[0],
            r#"content[0].rows[0][1] is a number, kept as the text "29.99""#
        );
    }

    #[test]
    fn required_fields() {
        for field in [
            "url",
            "title",
            "description",
            "modified",
            "language",
            "content",
        ] {
            let mut v: serde_json::Map<String, Value> =
                serde_json::from_str(&with_content(r#"{"type":"text","text":"t"}"#)).unwrap();
            v.remove(field);
            let e = err(&Value::Object(v.clone()).to_string());
            assert_eq!(
                e,
                ScpErrorKind::MissingField(match field {
                    "url" => "url",
                    "title" => "title",
                    "description" => "description",
                    "modified" => "modified",
                    "language" => "language",
                    _ => "content",
                })
            );
            if field != "url" && field != "content" {
                v.insert(field.into(), Value::Null);
                let e = err(&Value::Object(v).to_string());
                assert_eq!(
                    e.to_string(),
                    format!("field {field:?}: expected a string, found null")
                );
            }
        }
        let e = err(&format!(r#"{{{HEAD},"content":{{}}}}"#));
        assert_eq!(
            e.to_string(),
            r#"field "content": expected an array of blocks, found an object"#
        );
        let e = err(&with_content(r#"{"type":"text","text":"t"}"#)
            .replace("2025-01-15T10:00:00Z", "2025-01-15 10:00"));
        assert_eq!(
            e.to_string(),
            r#"field "modified": not an RFC 3339 date-time: "2025-01-15 10:00""#
        );
    }

    #[test]
    fn fatal_checks_come_before_the_url_skip() {
        let json = with_content(r#"{"type":"text"}"#).replace("https://example.com/p", "not a url");
        assert!(matches!(err(&json), ScpErrorKind::InvalidField { .. }));
        let json = with_content(r#"{"type":"text","text":"t"}"#)
            .replace("\"https://example.com/p\"", "null");
        let (r, w) = parse(&json);
        assert_eq!(r, Ok(None));
        assert_eq!(w, ["page skipped: url is null, not a string"]);
        let json = with_content(r#"{"type":"text","text":"t"}"#)
            .replace("https://example.com/p", "ftp://example.com/p");
        let (r, w) = parse(&json);
        assert_eq!(r, Ok(None));
        assert_eq!(
            w,
            [r#"page skipped: url "ftp://example.com/p" has scheme "ftp", not http or https"#]
        );
    }

    #[test]
    fn duplicate_fields_and_escaped_keys() {
        let json =
            format!(r#"{{{HEAD},"title":"again","content":[{{"type":"text","text":"t"}}]}}"#);
        assert_eq!(
            err(&json),
            ScpErrorKind::DuplicateField {
                field: "title".into()
            }
        );
        let json = format!(r#"{{{HEAD},"content":[],"content":[]}}"#);
        assert_eq!(
            err(&json),
            ScpErrorKind::DuplicateField {
                field: "content".into()
            }
        );
        // An escaped key is the same key.
        let json =
            with_content(r#"{"type":"text","text":"t"}"#).replace("\"title\"", "\"\\u0074itle\"");
        let (p, _) = ok(&json);
        assert_eq!(p.title, "T");
    }

    #[test]
    fn empty_content_and_odd_language_warn() {
        let (p, w) = ok(&with_content("").replace("\"en\"", "\"English!\""));
        assert!(p.blocks.is_empty());
        assert_eq!(w.len(), 2, "{w:?}");
        for tag in [
            "en",
            "en-US",
            "zh-Hans-CN",
            "de-CH-1996",
            "x-private",
            "en-us",
        ] {
            assert!(is_bcp47_shaped(tag), "{tag}");
        }
        for tag in ["", "e", "en_US", "englishlanguage", "en--US", "123"] {
            assert!(!is_bcp47_shaped(tag), "{tag}");
        }
    }

    #[test]
    fn block_limit_counts_without_keeping() {
        let blocks = [r#"{"type":"text","text":"b"}"#; 12].join(",");
        let mut log = WarningLog::default();
        let e = parse_page(1, &with_content(&blocks), 10, &mut log).unwrap_err();
        assert_eq!(
            e,
            ScpErrorKind::TooManyBlocks {
                count: 12,
                limit: 10
            }
        );
        let blocks = [r#"{"type":"text","text":"b"}"#; 10].join(",");
        assert_eq!(
            parse_page(1, &with_content(&blocks), 10, &mut log)
                .unwrap()
                .unwrap()
                .blocks
                .len(),
            10
        );
    }

    #[test]
    fn json_errors() {
        assert!(matches!(err("{"), ScpErrorKind::InvalidJson(_)));
        assert!(matches!(err("{} x"), ScpErrorKind::InvalidJson(_)));
        assert!(matches!(err("[]"), ScpErrorKind::NotAPage(_)));
        assert!(matches!(err("\"page\""), ScpErrorKind::NotAPage(_)));
        // Deep nesting: where a value is kept (a block), serde_json's recursion limit refuses
        // it; where it is skipped (an ignored or type-checked field), it is skipped without
        // recursion. Neither can overflow the stack.
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let json = with_content(&format!(
            r#"{{"type":"text","text":"t","x":{}}}"#,
            deep(10_000)
        ));
        assert!(
            err(&json).to_string().contains("recursion limit"),
            "{}",
            err(&json)
        );
        let json = format!(
            "{{{HEAD},\"schema\":{},\"other\":{},\"content\":[]}}",
            deep(100_000),
            deep(100_000)
        );
        let (_, w) = ok(&json);
        assert!(w.iter().any(|m| m.contains("schema is an array")), "{w:?}");
    }
}
