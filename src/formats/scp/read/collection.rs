//! The collection reader: one SCP collection file (snapshot or delta) in, its metadata, its
//! pages one at a time, and at the end a verdict on the whole file (SCP 0.1, "File Format",
//! "Collection Metadata", "Validation", "Error Handling", "Resource Exhaustion Attacks").
//!
//! It owns: checking line 1 (the metadata: `id`, `section`, `type`, `generated`, `since` iff
//! delta, `version` by the MAJOR.MINOR rule, the checksum's form), feeding every byte to the
//! checksum [`Verifier`], turning lines into [`Page`]s, and the verdict in
//! [`CollectionReader::finish`]. It leaves decompression and limits to
//! [`crate::formats::scp::read::decompress`], line splitting to [`crate::formats::scp::read::line`], page rules to
//! [`crate::formats::scp::read::page`], and everything about storing pages to its caller.

use crate::formats::scp::read::checksum::{parse_declared, ChecksumStatus, Verifier};
use crate::formats::scp::read::decompress::{Compression, Decompressor, GZIP_MAGIC, ZSTD_MAGIC};
use crate::formats::scp::read::error::{ScpError, ScpErrorKind};
use crate::formats::scp::read::limits::Limits;
use crate::formats::scp::read::line::LineReader;
use crate::formats::scp::read::page::{parse_page, Page};
use crate::formats::scp::read::warning::{WarnKind, Warning, WarningLog};
use jiff::Timestamp;
use serde_json::{Map, Value};
use std::fmt;
use std::io::Read;

/// The newest SCP version this reader implements fully.
pub const SUPPORTED_VERSION: Version = Version { major: 0, minor: 1 };

/// `collection.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CollectionType {
    /// The complete state of a section at `generated`.
    Snapshot,
    /// Pages created or modified since `since`.
    Delta,
}

impl CollectionType {
    pub(crate) fn name(self) -> &'static str {
        match self {
            CollectionType::Snapshot => "snapshot",
            CollectionType::Delta => "delta",
        }
    }
}

impl fmt::Display for CollectionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `collection.version`: "MAJOR.MINOR", both non-negative integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    /// SCP 0.1 "Version Compatibility" 1: `^\d+\.\d+$`.
    pub(crate) fn parse(s: &str) -> Option<Version> {
        let (major, minor) = s.split_once('.')?;
        let num = |p: &str| {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            p.parse::<u32>().ok()
        };
        Some(Version {
            major: num(major)?,
            minor: num(minor)?,
        })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Line 1 of a collection, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionMeta {
    pub id: String,
    pub section: String,
    pub kind: CollectionType,
    pub generated: Timestamp,
    /// Present exactly for deltas.
    pub since: Option<Timestamp>,
    pub version: Version,
    /// `sha256:<64 lower-case hex>`, when declared.
    pub checksum: Option<String>,
    /// Line 1 exactly as in the file (without its terminator).
    pub json: String,
}

/// What a fully read and verified collection was.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionSummary {
    pub meta: CollectionMeta,
    pub compression: Compression,
    /// Which rule verified the checksum, or [`ChecksumStatus::Unverified`] without one.
    pub checksum: ChecksumStatus,
    /// SHA-256 of the decompressed stream as received, hex: a content identity for the
    /// catalog whatever the checksum status.
    pub sha256_hex: String,
    /// Bytes of the file as received.
    pub compressed_bytes: u64,
    pub decompressed_bytes: u64,
    /// Lines in the stream, the metadata line included.
    pub lines: u64,
    /// Pages returned by [`CollectionReader::next_page`].
    pub pages: u64,
    /// Pages skipped with a warning (invalid URL).
    pub pages_skipped: u64,
    /// Warnings not yet taken with [`CollectionReader::take_warnings`], with per-kind totals
    /// for the kinds that went over the listing cap.
    pub warnings: Vec<Warning>,
}

/// Pull reader over one collection file. See the module documentation of [`crate::formats::scp::read`] for
/// the stage-then-commit protocol.
pub struct CollectionReader<R: Read> {
    lines: LineReader<R>,
    meta: CollectionMeta,
    verifier: Verifier,
    limits: Limits,
    log: WarningLog,
    pages: u64,
    skipped: u64,
    failed: Option<ScpError>,
    done: bool,
}

impl<R: Read> CollectionReader<R> {
    /// Detect the compression, read and check line 1. Fails on anything that is not an SCP
    /// collection this reader can use, before any page is read.
    pub fn open(input: R, limits: &Limits) -> Result<CollectionReader<R>, ScpError> {
        Self::open_inner(input, limits, None)
    }

    /// Like [`Self::open`], when the compressed length is known (a staged file): the ratio
    /// limit is then applied exactly from the first byte, and more input than `len` is an
    /// error.
    pub fn open_with_len(
        input: R,
        len: u64,
        limits: &Limits,
    ) -> Result<CollectionReader<R>, ScpError> {
        Self::open_inner(input, limits, Some(len))
    }

    fn open_inner(
        input: R,
        limits: &Limits,
        len: Option<u64>,
    ) -> Result<CollectionReader<R>, ScpError> {
        let source = Decompressor::new(input, limits, len).map_err(|k| ScpError::new(1, k))?;
        let mut lines = LineReader::new(source, limits.max_line_bytes);
        let mut log = WarningLog::default();
        let first = lines
            .next_line()?
            .ok_or(ScpError::new(1, ScpErrorKind::Empty))?;
        let raw = first.raw;
        let mut content = first.content();
        // A UTF-8 byte-order mark is not JSON; tolerate it (the checksum still covers it).
        if let Some(rest) = content.strip_prefix(b"\xEF\xBB\xBF") {
            log.warn(WarnKind::Metadata, 1, || {
                "UTF-8 byte-order mark before line 1 ignored".into()
            });
            content = rest;
        }
        let text = std::str::from_utf8(content).map_err(|e| {
            ScpError::new(
                1,
                not_a_collection(
                    content,
                    &format!("line 1 is not UTF-8 (byte {})", e.valid_up_to()),
                ),
            )
        })?;
        let meta = parse_meta(text, &mut log).map_err(|k| ScpError::new(1, k))?;
        let verifier = Verifier::new(meta.checksum.clone(), raw, text);
        Ok(CollectionReader {
            lines,
            meta,
            verifier,
            limits: *limits,
            log,
            pages: 0,
            skipped: 0,
            failed: None,
            done: false,
        })
    }

    pub fn meta(&self) -> &CollectionMeta {
        &self.meta
    }

    pub(crate) fn compression(&self) -> Compression {
        self.lines.decompressor().compression()
    }

    /// The next valid page, or `None` after the last line. Pages with an invalid URL are
    /// skipped (with a warning); any error is fatal for the whole collection and is returned
    /// again by every later call and by [`Self::finish`].
    pub fn next_page(&mut self) -> Result<Option<Page>, ScpError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.done {
            return Ok(None);
        }
        loop {
            let line = match self.lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => {
                    self.done = true;
                    return Ok(None);
                }
                Err(e) => {
                    self.failed = Some(e.clone());
                    return Err(e);
                }
            };
            self.verifier.update(line.raw);
            let number = line.number;
            let content = line.content();
            if content.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                self.log
                    .warn(WarnKind::BlankLine, number, || "blank line skipped".into());
                continue;
            }
            let parsed = match std::str::from_utf8(content) {
                Ok(text) => parse_page(number, text, self.limits.max_blocks, &mut self.log),
                Err(e) => Err(ScpErrorKind::NotUtf8 {
                    valid_up_to: e.valid_up_to(),
                }),
            };
            match parsed {
                Ok(Some(page)) => {
                    self.pages += 1;
                    return Ok(Some(page));
                }
                Ok(None) => self.skipped += 1,
                Err(kind) => {
                    let e = ScpError::new(number, kind);
                    self.failed = Some(e.clone());
                    return Err(e);
                }
            }
        }
    }

    /// Read (and validate) whatever is left, then verify the checksum. Only an `Ok` here
    /// means the collection may be used; until then nothing read from it may be committed.
    pub fn finish(mut self) -> Result<CollectionSummary, ScpError> {
        while self.next_page()?.is_some() {}
        let lines = self.lines.line_number();
        let decompressor = self.lines.decompressor();
        let (compression, compressed_bytes, decompressed_bytes) = (
            decompressor.compression(),
            decompressor.compressed_bytes(),
            decompressor.decompressed_bytes(),
        );
        // SCP 0.1 "Checksum Verification" 5: a mismatch is fatal; MUST NOT use the collection.
        let (checksum, sha256_hex) = self
            .verifier
            .finish()
            .map_err(|m| ScpError::new(1, ScpErrorKind::ChecksumMismatch(m)))?;
        self.log.summarise();
        Ok(CollectionSummary {
            meta: self.meta,
            compression,
            checksum,
            sha256_hex,
            compressed_bytes,
            decompressed_bytes,
            lines,
            pages: self.pages,
            pages_skipped: self.skipped,
            warnings: self.log.take(),
        })
    }
}

fn not_a_collection(head: &[u8], why: &str) -> ScpErrorKind {
    let hint = if head.starts_with(&GZIP_MAGIC) || head.starts_with(&ZSTD_MAGIC) {
        " (the decompressed content is itself compressed: compressed twice, or a Content-Encoding decoded and not declared?)"
    } else {
        ""
    };
    ScpErrorKind::NotACollection(format!("{why}{hint}"))
}

/// SCP 0.1 "Collection Metadata" and the collection metadata schema.
fn parse_meta(text: &str, log: &mut WarningLog) -> Result<CollectionMeta, ScpErrorKind> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| not_a_collection(text.as_bytes(), &format!("line 1 is not JSON ({e})")))?;
    let Some(Value::Object(c)) = value.get("collection") else {
        return Err(not_a_collection(
            text.as_bytes(),
            "line 1 has no \"collection\" object",
        ));
    };
    let id = required_identifier(c, "id")?;
    let section = required_identifier(c, "section")?;
    let kind = match required_string(c, "type")? {
        "snapshot" => CollectionType::Snapshot,
        "delta" => CollectionType::Delta,
        other => {
            return Err(invalid(
                "type",
                format!("{other:?} is neither \"snapshot\" nor \"delta\""),
            ))
        }
    };
    let generated = required_time(c, "generated")?;
    let since = checked_since(c, kind, generated, log)?;
    let version = checked_version(c, log)?;
    let checksum = match c.get("checksum") {
        None => None,
        Some(Value::String(s)) => Some(parse_declared(s)?),
        Some(other) => {
            return Err(ScpErrorKind::MalformedChecksum {
                value: other.to_string(),
            })
        }
    };
    Ok(CollectionMeta {
        id,
        section,
        kind,
        generated,
        since,
        version,
        checksum,
        json: text.to_string(),
    })
}

/// A required string of the `collection` object.
fn required_string<'c>(
    c: &'c Map<String, Value>,
    name: &'static str,
) -> Result<&'c str, ScpErrorKind> {
    match c.get(name) {
        None => Err(ScpErrorKind::MissingField(name)),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(invalid(name, "expected a string".into())),
    }
}

/// A required identifier (schema: `^[a-zA-Z0-9-_]+$`).
fn required_identifier(c: &Map<String, Value>, name: &'static str) -> Result<String, ScpErrorKind> {
    let s = required_string(c, name)?;
    if s.is_empty()
        || !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(invalid(
            name,
            format!("{s:?} is not made of letters, digits, '-' and '_'"),
        ));
    }
    Ok(s.to_string())
}

/// A required RFC 3339 date-time.
fn required_time(c: &Map<String, Value>, name: &'static str) -> Result<Timestamp, ScpErrorKind> {
    let s = required_string(c, name)?;
    s.parse::<Timestamp>()
        .map_err(|_| invalid(name, format!("not an RFC 3339 date-time: {s:?}")))
}

/// SCP 0.1: `since` is required for delta collections (and only means something there).
fn checked_since(
    c: &Map<String, Value>,
    kind: CollectionType,
    generated: Timestamp,
    log: &mut WarningLog,
) -> Result<Option<Timestamp>, ScpErrorKind> {
    let since = match kind {
        CollectionType::Delta => Some(required_time(c, "since")?),
        CollectionType::Snapshot => {
            if c.contains_key("since") {
                log.warn(WarnKind::Metadata, 1, || {
                    "\"since\" on a snapshot ignored".into()
                });
            }
            None
        }
    };
    if let Some(s) = since.filter(|s| *s > generated) {
        log.warn(WarnKind::Metadata, 1, || {
            format!("since {s} is after generated {generated}")
        });
    }
    Ok(since)
}

/// SCP 0.1 "Version Compatibility" 2 and 3: a newer major version is refused, a newer minor
/// one read as this one, with a warning.
fn checked_version(c: &Map<String, Value>, log: &mut WarningLog) -> Result<Version, ScpErrorKind> {
    let version_text = required_string(c, "version")?;
    let version = Version::parse(version_text)
        .ok_or_else(|| invalid("version", format!("{version_text:?} is not MAJOR.MINOR")))?;
    if version.major > SUPPORTED_VERSION.major {
        return Err(ScpErrorKind::UnsupportedVersion {
            version: version_text.to_string(),
            supported: SUPPORTED_VERSION.major,
        });
    }
    if version > SUPPORTED_VERSION {
        log.warn(WarnKind::Metadata, 1, || {
            format!("version {version} is newer than {SUPPORTED_VERSION}: read as {SUPPORTED_VERSION}, unknown fields and block types ignored")
        });
    }
    Ok(version)
}

fn invalid(field: &str, reason: String) -> ScpErrorKind {
    ScpErrorKind::InvalidField {
        field: format!("collection.{field}"),
        reason,
    }
}

/// What the unit tests look at.
#[cfg(test)]
impl<R: Read> CollectionReader<R> {
    /// Warnings so far (the first of each kind; see [`crate::formats::scp::read::warning`]).
    pub(crate) fn warnings(&self) -> &[Warning] {
        self.log.listed()
    }

    /// Drain the warnings listed so far.
    pub(crate) fn take_warnings(&mut self) -> Vec<Warning> {
        self.log.take()
    }

    /// Memory held for the current line (for tests of the memory bound).
    pub(crate) fn line_capacity(&self) -> usize {
        self.lines.line_capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::scp::read::decompress::tests::{gzip, gzip_padded, zstd};
    use crate::formats::scp::read::page::Block;
    use proptest::prelude::*;
    use sha2::{Digest as _, Sha256};

    const SNAPSHOT: &str = r#"{"collection":{"id":"blog-snapshot-1","section":"blog","type":"snapshot","generated":"2025-01-15T00:00:00Z","version":"0.1"}}"#;

    fn page(i: usize) -> String {
        format!(
            r#"{{"url":"https://example.com/blog/post-{i}","title":"Post {i}","description":"About {i}","modified":"2025-01-1{}T10:00:00Z","language":"en","content":[{{"type":"heading","level":1,"text":"Post {i}"}},{{"type":"text","text":"Body of post {i}."}}]}}"#,
            i % 10
        )
    }

    fn file(meta: &str, pages: &[String]) -> Vec<u8> {
        let mut s = meta.to_string();
        for p in pages {
            s.push('\n');
            s.push_str(p);
        }
        s.push('\n');
        s.into_bytes()
    }

    #[derive(Debug)]
    struct Read {
        pages: Vec<Page>,
        summary: CollectionSummary,
    }

    fn read_with(input: &[u8], limits: &Limits) -> Result<Read, ScpError> {
        let mut r = CollectionReader::open(input, limits)?;
        let mut pages = Vec::new();
        while let Some(p) = r.next_page()? {
            assert!(r.line_capacity() as u64 <= limits.max_line_bytes + 1);
            pages.push(p);
        }
        let summary = r.finish()?;
        Ok(Read { pages, summary })
    }

    fn read(input: &[u8]) -> Result<Read, ScpError> {
        read_with(input, &Limits::default())
    }

    fn warned(r: &Read, needle: &str) -> bool {
        r.summary
            .warnings
            .iter()
            .any(|w| w.message.contains(needle))
    }

    fn sha(data: &[u8]) -> String {
        hex::encode(Sha256::digest(data))
    }

    /// Commands may read collections on worker threads.
    #[test]
    fn reader_is_send() {
        fn send<T: Send>() {}
        send::<CollectionReader<std::fs::File>>();
        send::<CollectionSummary>();
        send::<ScpError>();
    }

    #[test]
    fn plain_gzip_and_zstd_read_alike_whatever_the_name() {
        let plain = file(SNAPSHOT, &[page(1), page(2)]);
        for (input, compression) in [
            (plain.clone(), Compression::None),
            (gzip(&plain), Compression::Gzip),
            (zstd(&plain), Compression::Zstd),
        ] {
            let r = read(&input).unwrap();
            let s = &r.summary;
            assert_eq!(s.compression, compression);
            assert_eq!(s.meta.id, "blog-snapshot-1");
            assert_eq!(s.meta.section, "blog");
            assert_eq!(s.meta.kind, CollectionType::Snapshot);
            assert_eq!(s.meta.since, None);
            assert_eq!(s.meta.version, Version { major: 0, minor: 1 });
            assert_eq!(s.meta.json, SNAPSHOT);
            assert_eq!(s.checksum, ChecksumStatus::Unverified);
            assert_eq!(s.sha256_hex, sha(&plain));
            assert_eq!(s.compressed_bytes, input.len() as u64);
            assert_eq!(s.decompressed_bytes, plain.len() as u64);
            assert_eq!((s.lines, s.pages, s.pages_skipped), (3, 2, 0));
            assert!(s.warnings.is_empty(), "{:?}", s.warnings);
            let p = &r.pages[1];
            assert_eq!(p.line, 3);
            assert_eq!(p.url.as_str(), "https://example.com/blog/post-2");
            assert_eq!(p.title, "Post 2");
            assert_eq!(p.modified, "2025-01-12T10:00:00Z".parse().unwrap());
            assert_eq!(p.json, page(2));
            assert_eq!(
                p.blocks[0],
                Block::Heading {
                    level: 1,
                    text: "Post 2".into()
                }
            );
        }
    }

    #[test]
    fn multi_member_gzip_is_read_whole() {
        let plain = file(SNAPSHOT, &[page(1), page(2), page(3)]);
        let cut = plain.len() / 2; // mid-line: members need not align with lines
        let mut gz = gzip(&plain[..cut]);
        gz.extend(gzip(&plain[cut..]));
        let r = read(&gz).unwrap();
        assert_eq!(r.pages.len(), 3);
        assert_eq!(r.summary.sha256_hex, sha(&plain));
    }

    #[test]
    fn last_line_without_newline_and_crlf() {
        let input = format!("{SNAPSHOT}\r\n{}\r\n{}", page(1), page(2));
        let r = read(input.as_bytes()).unwrap();
        assert_eq!(r.pages.len(), 2);
        assert_eq!(r.pages[0].json, page(1));
        assert_eq!(r.summary.sha256_hex, sha(input.as_bytes()));
    }

    #[test]
    fn delta_metadata() {
        let meta = r#"{"collection":{"id":"blog-delta-day2","section":"blog","type":"delta","generated":"2000-01-16T23:00:00Z","since":"2000-01-15T00:00:00Z","version":"0.1"}}"#;
        let r = read(&file(meta, &[page(1)])).unwrap();
        assert_eq!(r.summary.meta.kind, CollectionType::Delta);
        assert_eq!(
            r.summary.meta.since,
            Some("2000-01-15T00:00:00Z".parse().unwrap())
        );
        let no_since = meta.replace(r#""since":"2000-01-15T00:00:00Z","#, "");
        let e = read(&file(&no_since, &[])).unwrap_err();
        assert_eq!(e, ScpError::new(1, ScpErrorKind::MissingField("since")));
        let snap_since = meta.replace("\"delta\"", "\"snapshot\"");
        let r = read(&file(&snap_since, &[page(1)])).unwrap();
        assert_eq!(r.summary.meta.since, None);
        assert!(warned(&r, "\"since\" on a snapshot ignored"));
    }

    #[test]
    fn metadata_errors_are_on_line_one() {
        let cases: &[(&str, &str)] = &[
            (
                r#"{"collection":{"id":"x y","section":"s","type":"snapshot","generated":"2025-01-15T00:00:00Z","version":"0.1"}}"#,
                r#"line 1: field "collection.id": "x y" is not made of letters, digits, '-' and '_'"#,
            ),
            (
                r#"{"collection":{"id":"x","type":"snapshot","generated":"2025-01-15T00:00:00Z","version":"0.1"}}"#,
                r#"line 1: required field "section" is missing"#,
            ),
            (
                r#"{"collection":{"id":"x","section":"s","type":"full","generated":"2025-01-15T00:00:00Z","version":"0.1"}}"#,
                r#"line 1: field "collection.type": "full" is neither "snapshot" nor "delta""#,
            ),
            (
                r#"{"collection":{"id":"x","section":"s","type":"snapshot","generated":"2025-01-15","version":"0.1"}}"#,
                r#"line 1: field "collection.generated": not an RFC 3339 date-time: "2025-01-15""#,
            ),
            (
                r#"{"collection":{"id":"x","section":"s","type":"snapshot","generated":"2025-01-15T00:00:00Z","version":"1"}}"#,
                r#"line 1: field "collection.version": "1" is not MAJOR.MINOR"#,
            ),
            (
                r#"{"collection":{"id":"x","section":"s","type":"snapshot","generated":"2025-01-15T00:00:00Z","version":0.1}}"#,
                r#"line 1: field "collection.version": expected a string"#,
            ),
            (
                r#"{"collection":{"id":"x","section":"s","type":"snapshot","generated":"2025-01-15T00:00:00Z","version":"1.0"}}"#,
                r#"line 1: version "1.0" is not supported (this reader supports 0.x)"#,
            ),
            (
                r#"{"page":1}"#,
                r#"line 1: not an SCP collection: line 1 has no "collection" object"#,
            ),
            (
                r#"<!DOCTYPE html>"#,
                "line 1: not an SCP collection: line 1 is not JSON",
            ),
        ];
        for (meta, want) in cases {
            let e = read(&file(meta, &[page(1)])).unwrap_err();
            assert!(e.to_string().starts_with(want), "{e}\nwant {want}");
        }
        assert_eq!(
            read(b"").unwrap_err(),
            ScpError::new(1, ScpErrorKind::Empty)
        );
        // Compressed twice: the hint says so.
        let twice = gzip(&gzip(&file(SNAPSHOT, &[page(1)])));
        let e = read(&twice).unwrap_err();
        assert!(e.to_string().contains("compressed twice"), "{e}");
    }

    #[test]
    fn newer_minor_version_is_read_with_a_warning() {
        let meta = SNAPSHOT.replace("\"0.1\"", "\"0.7\"");
        let r = read(&file(&meta, &[page(1)])).unwrap();
        assert_eq!(r.summary.meta.version, Version { major: 0, minor: 7 });
        assert!(warned(&r, "version 0.7 is newer than 0.1"));
    }

    /// What the reference generator writes: checksum over the file without the key (lines
    /// joined by "\n", no trailing newline), key added last.
    fn reference_generated(pages: &[String]) -> Vec<u8> {
        let without = file(SNAPSHOT, pages);
        let without = &without[..without.len() - 1];
        let checksum = format!("sha256:{}", sha(without));
        let meta = format!(
            "{},\"checksum\":\"{checksum}\"}}}}",
            &SNAPSHOT[..SNAPSHOT.len() - 2]
        );
        let mut f = file(&meta, pages);
        f.pop();
        f
    }

    #[test]
    fn reference_variant_checksum_verifies() {
        let f = reference_generated(&[page(1), page(2)]);
        for input in [f.clone(), gzip(&f), zstd(&f)] {
            let r = read(&input).unwrap();
            assert_eq!(r.summary.checksum, ChecksumStatus::ReferenceVariant);
            assert_eq!(r.summary.sha256_hex, sha(&f));
            assert!(r.summary.meta.checksum.is_some());
        }
    }

    #[test]
    fn checksum_mismatch_rejects_the_collection_after_the_pages() {
        let f = reference_generated(&[page(1), page(2)]);
        let tampered = String::from_utf8(f).unwrap().replace("Post 2", "Post X");
        let mut r = CollectionReader::open(tampered.as_bytes(), &Limits::default()).unwrap();
        // Pages come out; only finish() knows they must not be used.
        assert!(r.next_page().unwrap().is_some());
        let e = r.finish().unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.is_checksum());
        match &e.kind {
            ScpErrorKind::ChecksumMismatch(m) => {
                assert_eq!(m.spec_literal, sha(tampered.as_bytes()));
            }
            k => panic!("{k}"),
        }
    }

    #[test]
    fn upper_case_checksum_is_accepted() {
        let f = String::from_utf8(reference_generated(&[page(1)])).unwrap();
        let (head, tail) = f.split_once("sha256:").unwrap();
        let upper = format!("{head}sha256:{}{}", tail[..64].to_uppercase(), &tail[64..]);
        // The variant re-serialises the line without the checksum: still verifies.
        let r = read(upper.as_bytes()).unwrap();
        assert_eq!(r.summary.checksum, ChecksumStatus::ReferenceVariant);
        assert_eq!(
            r.summary.meta.checksum.unwrap(),
            format!("sha256:{}", &tail[..64])
        );
    }

    #[test]
    fn placeholder_and_malformed_checksums_are_refused_at_open() {
        for (value, placeholder) in [
            (
                "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                true,
            ),
            (
                "sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
                true,
            ),
            (
                "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
                true,
            ),
            ("sha256:f7d8e9a1b2c3d4e5...", false),
            (
                "sha256:a1b2c3d4e5f6789012345678901234567890123456789012345678901234567890",
                false,
            ),
        ] {
            let meta = format!(
                "{},\"checksum\":\"{value}\"}}}}",
                &SNAPSHOT[..SNAPSHOT.len() - 2]
            );
            let e = CollectionReader::open(&file(&meta, &[page(1)])[..], &Limits::default())
                .err()
                .unwrap();
            assert_eq!(e.line, 1);
            assert!(e.is_checksum());
            assert_eq!(
                matches!(e.kind, ScpErrorKind::PlaceholderChecksum { .. }),
                placeholder,
                "{e}"
            );
        }
        let meta = format!("{},\"checksum\":42}}}}", &SNAPSHOT[..SNAPSHOT.len() - 2]);
        let e = read(&file(&meta, &[])).unwrap_err();
        assert!(
            matches!(e.kind, ScpErrorKind::MalformedChecksum { .. }),
            "{e}"
        );
    }

    fn with_blocks(n: usize) -> String {
        let blocks = vec![r#"{"type":"text","text":"b"}"#; n].join(",");
        format!(
            r#"{{"url":"https://example.com/many","title":"t","description":"d","modified":"2025-01-15T10:00:00Z","language":"en","content":[{blocks}]}}"#
        )
    }

    #[test]
    fn a_thousand_blocks_pass_and_a_thousand_and_one_fail() {
        let r = read(&file(SNAPSHOT, &[page(1), with_blocks(1000)])).unwrap();
        assert_eq!(r.pages[1].blocks.len(), 1000);
        let e = read(&file(SNAPSHOT, &[page(1), with_blocks(1001)])).unwrap_err();
        assert_eq!(
            e,
            ScpError::new(
                3,
                ScpErrorKind::TooManyBlocks {
                    count: 1001,
                    limit: 1000
                }
            )
        );
        assert!(e.is_limit());
        let e = read(&file(SNAPSHOT, &[with_blocks(5000)])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: 5000 content blocks, more than the limit of 1000 per page"
        );
    }

    /// A page line of exactly `len` bytes.
    fn page_of_len(len: usize) -> String {
        let head = r#"{"url":"https://example.com/big","title":"t","description":"d","modified":"2025-01-15T10:00:00Z","language":"en","content":[{"type":"text","text":""#;
        let tail = r#""}]}"#;
        let mut s = String::with_capacity(len);
        s.push_str(head);
        s.push_str(&"x".repeat(len - head.len() - tail.len()));
        s.push_str(tail);
        assert_eq!(s.len(), len);
        s
    }

    /// SCP 0.1: "Single page object: 100 MB maximum", at the real limit.
    #[test]
    fn a_line_of_exactly_the_limit_passes_and_one_byte_more_fails() {
        let limit = Limits::SPEC_MAX_LINE_BYTES as usize;
        let r = read(&file(SNAPSHOT, &[page_of_len(limit)])).unwrap();
        assert_eq!(r.pages[0].json.len(), limit);
        let e = read(&file(SNAPSHOT, &[page_of_len(limit + 1)])).unwrap_err();
        assert_eq!(
            e,
            ScpError::new(
                2,
                ScpErrorKind::LineTooLong {
                    limit: limit as u64
                }
            )
        );
        assert_eq!(
            e.to_string(),
            "line 2: line longer than the limit of 104857600 bytes"
        );
    }

    /// SCP 0.1: "Limit decompression ratio to 100:1 maximum", on a whole collection: the
    /// gzip header comment pads the compressed size to exactly 1/100 of the content.
    #[test]
    fn ratio_exactly_100_to_1_passes_and_just_over_fails() {
        let pages: Vec<String> = (0..4000).map(|i| page(i % 3)).collect();
        let mut plain = file(SNAPSHOT, &pages);
        while !plain.len().is_multiple_of(100) {
            plain.push(b'\n');
        }
        let target = plain.len() / 100;
        let natural = gzip_padded(&plain, 0).len();
        assert!(natural < target, "{natural} {target}");
        let exact = gzip_padded(&plain, target - natural);
        assert_eq!(exact.len() * 100, plain.len());
        let r = read(&exact).unwrap();
        assert_eq!(r.pages.len(), 4000);
        let mut r =
            CollectionReader::open_with_len(&exact[..], exact.len() as u64, &Limits::default())
                .unwrap();
        while r.next_page().unwrap().is_some() {}
        assert!(r.finish().is_ok());

        plain.push(b'\n');
        let natural = gzip_padded(&plain, 0).len();
        let over = gzip_padded(&plain, target - natural);
        assert_eq!(over.len(), exact.len());
        let e = read(&over).unwrap_err();
        assert_eq!(
            e.kind,
            ScpErrorKind::RatioExceeded {
                compressed: over.len() as u64,
                decompressed: plain.len() as u64,
                limit: 100
            }
        );
        assert!(e.is_limit());
        let mut r =
            CollectionReader::open_with_len(&over[..], over.len() as u64, &Limits::default())
                .unwrap();
        let e = loop {
            match r.next_page() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("read to the end"),
                Err(e) => break e,
            }
        };
        assert!(matches!(e.kind, ScpErrorKind::RatioExceeded { .. }), "{e}");
        // Reported again by finish(): nothing from this collection may be committed.
        assert_eq!(r.finish().unwrap_err(), e);
    }

    #[test]
    fn size_caps_are_errors_with_the_line_being_read() {
        let plain = file(SNAPSHOT, &[page(1), page(2), page(3)]);
        let limits = Limits {
            max_decompressed_bytes: plain.len() as u64 - 1,
            ..Limits::default()
        };
        let e = read_with(&gzip(&plain), &limits).unwrap_err();
        assert_eq!(
            e.kind,
            ScpErrorKind::DecompressedTooLarge {
                limit: plain.len() as u64 - 1
            }
        );
        assert_eq!(e.line, 4);
        let limits = Limits {
            max_decompressed_bytes: plain.len() as u64,
            ..Limits::default()
        };
        assert!(read_with(&gzip(&plain), &limits).is_ok());
        let limits = Limits {
            max_compressed_bytes: 100,
            ..Limits::default()
        };
        let e = read_with(&plain, &limits).unwrap_err();
        assert_eq!(
            e,
            ScpError::new(1, ScpErrorKind::CompressedTooLarge { limit: 100 })
        );
    }

    #[test]
    fn invalid_json_and_missing_fields_reject_the_collection_naming_the_line() {
        let e = read(&file(SNAPSHOT, &[page(1), "{\"url\": ".into(), page(3)])).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(matches!(e.kind, ScpErrorKind::InvalidJson(_)), "{e}");
        let e = read(&file(SNAPSHOT, &[page(1), format!("{} {{}}", page(2))])).unwrap_err();
        assert!(matches!(e.kind, ScpErrorKind::InvalidJson(_)), "{e}");
        let no_title = page(2).replace(r#""title":"Post 2","#, "");
        let e = read(&file(SNAPSHOT, &[page(1), no_title])).unwrap_err();
        assert_eq!(e, ScpError::new(3, ScpErrorKind::MissingField("title")));
        assert_eq!(
            e.to_string(),
            r#"line 3: required field "title" is missing"#
        );
        let e = read(&file(SNAPSHOT, &["[1,2]".into()])).unwrap_err();
        assert!(matches!(e.kind, ScpErrorKind::NotAPage(_)), "{e}");
        let mut bytes = file(SNAPSHOT, &[page(1)]);
        bytes.extend_from_slice(b"{\"url\":\"\xff\"}\n");
        let e = read(&bytes).unwrap_err();
        assert_eq!(
            e,
            ScpError::new(3, ScpErrorKind::NotUtf8 { valid_up_to: 8 })
        );
    }

    #[test]
    fn errors_stick() {
        let input = file(SNAPSHOT, &["nope".into(), page(2)]);
        let mut r = CollectionReader::open(&input[..], &Limits::default()).unwrap();
        let e = r.next_page().unwrap_err();
        assert_eq!(r.next_page().unwrap_err(), e);
        assert_eq!(r.finish().unwrap_err(), e);
    }

    #[test]
    fn invalid_page_url_skips_the_page_with_a_warning() {
        let bad = page(2).replace("https://example.com/blog/post-2", "javascript:alert(1)");
        let r = read(&file(SNAPSHOT, &[page(1), bad, page(3)])).unwrap();
        assert_eq!(r.pages.len(), 2);
        assert_eq!(r.summary.pages_skipped, 1);
        assert_eq!(r.summary.warnings[0].line, 3);
        assert!(warned(
            &r,
            r#"page skipped: url "javascript:alert(1)" has scheme "javascript""#
        ));
    }

    #[test]
    fn blank_lines_are_skipped_with_a_warning() {
        let input = format!("{SNAPSHOT}\n\n{}\n   \n", page(1));
        let r = read(input.as_bytes()).unwrap();
        assert_eq!(r.pages.len(), 1);
        assert_eq!(r.summary.lines, 4);
        assert_eq!(r.summary.warnings.len(), 2);
        assert_eq!(r.summary.warnings[0].line, 2);
    }

    #[test]
    fn many_warnings_are_summarised() {
        let weird = |i: usize| page(i).replace(r#""level":1"#, r#""level":9"#);
        let pages: Vec<String> = (0..50).map(weird).collect();
        let r = read(&file(SNAPSHOT, &pages)).unwrap();
        assert_eq!(r.summary.warnings.len(), 21);
        assert_eq!(
            r.summary.warnings[20].message,
            "heading levels clamped: 50 in all, 30 not listed"
        );
    }

    #[test]
    fn warnings_can_be_drained_as_they_come() {
        let weird = page(1).replace(r#""level":1"#, r#""level":0"#);
        let input = file(SNAPSHOT, &[weird]);
        let mut r = CollectionReader::open(&input[..], &Limits::default()).unwrap();
        r.next_page().unwrap().unwrap();
        assert_eq!(r.warnings().len(), 1);
        assert_eq!(r.take_warnings().len(), 1);
        assert!(r.finish().unwrap().warnings.is_empty());
    }

    fn small() -> Limits {
        Limits {
            max_ratio: 100,
            max_compressed_bytes: 32 * 1024,
            max_decompressed_bytes: 128 * 1024,
            max_line_bytes: 700,
            max_blocks: 3,
        }
    }

    fn drain(input: &[u8], limits: &Limits) {
        let Ok(mut r) = CollectionReader::open(input, limits) else {
            return;
        };
        loop {
            let next = r.next_page();
            assert!(r.line_capacity() as u64 <= limits.max_line_bytes + 1);
            match next {
                Ok(Some(p)) => assert!(p.blocks.len() <= limits.max_blocks),
                Ok(None) | Err(_) => break,
            }
        }
        let _ = r.finish();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Arbitrary bytes, raw or compressed, after a valid line 1 or not: no panic, the line
        /// buffer within the limit, pages within the block limit.
        #[test]
        fn arbitrary_collections_never_panic(
            tail in proptest::collection::vec(
                prop_oneof![
                    6 => any::<u8>(),
                    1 => Just(b'\n'),
                    1 => Just(b'{'),
                    1 => Just(b'"'),
                ], 0..2000),
            with_meta in any::<bool>(),
            wrap in 0u8..3,
        ) {
            let mut plain = Vec::new();
            if with_meta {
                plain.extend_from_slice(SNAPSHOT.as_bytes());
                plain.push(b'\n');
            }
            plain.extend_from_slice(&tail);
            let input = match wrap { 0 => plain, 1 => gzip(&plain), _ => zstd(&plain) };
            drain(&input, &small());
        }

        /// Mutations of a valid collection: no panic, bounds hold.
        #[test]
        fn mutated_collections_never_panic(
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
            pages in 0usize..6,
        ) {
            let mut plain = file(SNAPSHOT, &(0..pages).map(page).collect::<Vec<_>>());
            for (i, b) in flips {
                let i = i.index(plain.len());
                plain[i] = b;
            }
            drain(&plain, &small());
            drain(&gzip(&plain), &small());
        }
    }
}
