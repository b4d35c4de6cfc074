//! Property-based fuzzing, on stable Rust, of the readers that take bytes from a source: the
//! Sitemap / ResourceSync reader (`rs::sitemap`), the dump package reader (`rs::dump`), the ARC
//! sitemap reader (`formats::arc::read`) and W3C datetimes (`rs::w3c_datetime`). The SCP
//! readers and `rs::manifest_path` have their own property tests beside their code.
//!
//! The properties, for arbitrary bytes and for mutations of valid documents (byte flips,
//! truncation at any point, inserted tags, attributes, entities, huge numbers, bad hashes, deep
//! nesting; gzip-wrapped or not): no panic; no loop that does not end; bounded memory (inputs
//! that declare sizes and counts of 10^18 finish at once); every error names its place (the
//! document URL and a line within the document, the package and its member, the JSON field or
//! line and column, the datetime value). Valid generated documents read back what was written.
//!
//! Cases per property: 256, or `RSMIRROR_FUZZ_CASES` (a longer run:
//! `RSMIRROR_FUZZ_CASES=20000 cargo test --release fuzz`). The totals go to the tally file.

use crate::support::record_tally;
use flate2::write::GzEncoder;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rsmirror::formats::arc::read as arc;
use rsmirror::rs::digest::Hasher;
use rsmirror::rs::dump::{DumpError, DumpLimits, Package, PackageFormat, SNIFF_LEN};
use rsmirror::rs::sitemap::{self, ReadError, ReadOptions, MAX_LINKS, MAX_LISTED_WARNINGS};
use rsmirror::rs::w3c_datetime::{self, Zone};
use std::cell::Cell;
use std::fmt::Debug;
use std::io::{Cursor, Write};
use url::Url;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// Cases per property.
fn cases() -> u32 {
    std::env::var("RSMIRROR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(256)
}

/// Outcomes of one property's cases.
#[derive(Default)]
struct Count {
    cases: Cell<u64>,
    errors: Cell<u64>,
}

impl Count {
    fn case(&self) {
        self.cases.set(self.cases.get() + 1);
    }
    fn error(&self) {
        self.errors.set(self.errors.get() + 1);
    }
}

/// Run `test` on `cases()` values of `strategy` (a panic is a failure, shrunk and reported
/// like any other); returns how many cases ran.
fn run<S: Strategy>(
    name: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> u64
where
    S::Value: Debug,
{
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    let ran = Cell::new(0u64);
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |v| {
        ran.set(ran.get() + 1);
        test(v)
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    ran.get()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn newlines(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

/// An edit of a document.
#[derive(Debug, Clone)]
enum Edit {
    Flip(Index, u8),
    Truncate(Index),
    Insert(Index, usize),
    Delete(Index, usize),
}

fn edits(max: usize) -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        3 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        1 => any::<Index>().prop_map(Edit::Truncate),
        3 => (any::<Index>(), any::<usize>()).prop_map(|(i, s)| Edit::Insert(i, s)),
        1 => (any::<Index>(), 1usize..40).prop_map(|(i, n)| Edit::Delete(i, n)),
    ];
    proptest::collection::vec(edit, 1..max)
}

/// Apply `edits` to `doc`, inserting pieces of `snippets`.
fn apply(mut doc: Vec<u8>, edits: &[Edit], snippets: &[&[u8]]) -> Vec<u8> {
    for e in edits {
        match e {
            Edit::Flip(i, b) if !doc.is_empty() => {
                let i = i.index(doc.len());
                doc[i] = *b;
            }
            Edit::Truncate(i) => {
                let at = i.index(doc.len() + 1);
                doc.truncate(at);
            }
            Edit::Insert(i, s) => {
                let at = i.index(doc.len() + 1);
                let piece = snippets[s % snippets.len()];
                doc.splice(at..at, piece.iter().copied());
            }
            Edit::Delete(i, n) if !doc.is_empty() => {
                let at = i.index(doc.len());
                let end = (at + n).min(doc.len());
                doc.drain(at..end);
            }
            _ => {}
        }
    }
    doc
}

/// Deep nesting, as a snippet.
fn deep(open: &str, close: &str, depth: usize) -> &'static [u8] {
    let s = format!("{}{}", open.repeat(depth), close.repeat(depth));
    Box::leak(s.into_bytes().into_boxed_slice())
}

// ---------------------------------------------------------------------------------------------
// Sitemap / ResourceSync documents

const DOC: &str = "https://data.example.org/rs/list.xml";
const SM: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";
const RS: &str = "http://www.openarchives.org/rs/terms/";

/// One generated `<url>` / `<sitemap>`.
#[derive(Debug, Clone)]
struct GenEntry {
    id: u32,
    lastmod: Option<i64>,
    length: Option<u64>,
    hash: Option<u128>,
    change: usize,
}

fn gen_entry() -> impl Strategy<Value = GenEntry> {
    (
        any::<u32>(),
        proptest::option::of(0i64..253_402_300_799),
        proptest::option::of(prop_oneof![
            3 => 0u64..1_000_000,
            1 => Just(1_000_000_000_000_000_000u64),
            1 => Just(u64::MAX),
            1 => any::<u64>(),
        ]),
        proptest::option::of(any::<u128>()),
        0usize..4,
    )
        .prop_map(|(id, lastmod, length, hash, change)| GenEntry {
            id,
            lastmod,
            length,
            hash,
            change,
        })
}

/// A valid document: 0 Resource List, 1 Change List, 2 sitemap index.
fn sitemap_doc(kind: u8, entries: &[GenEntry]) -> String {
    let stamp = |s: i64| {
        jiff::Timestamp::from_second(s)
            .unwrap()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    };
    let (root, item, md) = match kind {
        0 => (
            "urlset",
            "url",
            r#"<rs:md capability="resourcelist" at="2024-05-01T06:00:00Z"/>"#,
        ),
        1 => (
            "urlset",
            "url",
            r#"<rs:md capability="changelist" from="2024-05-01T06:00:00Z"/>"#,
        ),
        _ => (
            "sitemapindex",
            "sitemap",
            r#"<rs:md capability="resourcelist" at="2024-05-01T06:00:00Z"/>"#,
        ),
    };
    let mut s = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{root} xmlns=\"{SM}\"\n        xmlns:rs=\"{RS}\">\n  <rs:ln rel=\"up\" href=\"https://data.example.org/rs/capabilitylist.xml\"/>\n  {md}\n"
    );
    for e in entries {
        s.push_str(&format!(
            "  <{item}>\n    <loc>https://data.example.org/r/{}</loc>\n",
            e.id
        ));
        if let Some(t) = e.lastmod {
            s.push_str(&format!("    <lastmod>{}</lastmod>\n", stamp(t)));
        }
        let mut attrs = String::new();
        if let Some(n) = e.length {
            attrs.push_str(&format!(" length=\"{n}\""));
        }
        if let Some(h) = e.hash {
            attrs.push_str(&format!(" hash=\"md5:{h:032x}\""));
        }
        if kind == 1 {
            let change = ["created", "updated", "deleted", "updated"][e.change];
            attrs.push_str(&format!(" change=\"{change}\""));
        }
        if !attrs.is_empty() {
            s.push_str(&format!("    <rs:md{attrs}/>\n"));
        }
        s.push_str(&format!("  </{item}>\n"));
    }
    s.push_str(&format!("</{root}>\n"));
    s
}

/// What gets inserted into Sitemap documents.
fn sitemap_snippets() -> &'static [&'static [u8]] {
    static SNIPPETS: std::sync::OnceLock<Vec<&'static [u8]>> = std::sync::OnceLock::new();
    SNIPPETS.get_or_init(|| {
        vec![
            b"<url>",
            b"</url>",
            b"<sitemap>",
            b"</urlset>",
            b"<loc>https://data.example.org/x</loc>",
            b"<loc>",
            b"<loc>not a url</loc>",
            b"<loc>javascript:alert(1)</loc>",
            b"<loc></loc>",
            b"<lastmod>2024-13-45T99:99:99Z</lastmod>",
            b"<lastmod>2024-05-01T03:00:00</lastmod>",
            b"<rs:md length=\"1000000000000000000\"/>",
            b"<rs:md length=\"18446744073709551616\"/>",
            b"<rs:md length=\"99999999999999999999999999999999999999\"/>",
            b"<rs:md length=\"-1\"/>",
            b" length=\"1e18\"",
            b" hash=\"md5:zz\"",
            b" hash=\"sha-256:0000 md5:\"",
            b" hash=\"md5:9f9f90dbe3e5ee1218c86b8839db1995 md5:9f9f90dbe3e5ee1218c86b8839db1996\"",
            b" hash=\"\"",
            b" hash=\"sha-1:\xff\xfe\"",
            b" capability=\"changelist\"",
            b" capability=\"resourcedump-manifest\"",
            b" at=\"9999-12-31T23:59:59Z\"",
            b" at=\"0000-01-01T00:00:00+23:59\"",
            b" from=\"x\"",
            b" change=\"deleted\"",
            b" change=\"bogus\"",
            b" datetime=\"2024-02-30T00:00:00Z\"",
            b" xmlns=\"urn:other\"",
            b" xmlns:rs=\"\"",
            b" xmlns:rs=\"http://www.openarchives.org/rs/terms\"",
            b" a=\"1\" a=\"2\"",
            b"<rs:ln rel=\"describedby\" href=\"../../../x\"/>",
            b"<rs:ln href=\"\"/>",
            b"<rs:md/>",
            b"&amp;",
            b"&lt;&gt;&quot;&apos;",
            b"&#0;",
            b"&#x110000;",
            b"&#99999999999999999999;",
            b"&unknown;",
            b"&",
            b"<![CDATA[<url>]]>",
            b"<![CDATA[",
            b"<!-- <url> -->",
            b"<!--",
            b"<?pi data?>",
            b"<!DOCTYPE urlset [<!ENTITY a \"aaaaaaaaaa\">]>",
            b"<!ENTITY x SYSTEM \"file:///etc/passwd\">",
            b"<?xml version=\"1.0\"?>",
            b"\xEF\xBB\xBF",
            b"\n\n\n",
            b"\r\n",
            b"\0",
            b"\xff\xfe",
            b"\xc3\x28",
            b"<a:b xmlns:a=\"http://www.sitemaps.org/schemas/sitemap/0.9\">",
            b"<xhtml:link rel=\"alternate\" href=\"https://data.example.org/y\"/>",
            deep("<a>", "</a>", 5000),
            deep("<url>", "</url>", 2000),
            deep("<rs:md>", "</rs:md>", 2000),
        ]
    })
}

/// Read all of `input`; check every error and entry names a line within `max_line` (None: do
/// not bound the line). Returns whether an error was met.
fn drain_sitemap(
    input: &[u8],
    opts: ReadOptions,
    max_line: Option<u64>,
) -> Result<bool, TestCaseError> {
    let url = Url::parse(DOC).unwrap();
    let check = |e: &ReadError| -> Result<(), TestCaseError> {
        let shown = e.to_string();
        prop_assert!(shown.starts_with(DOC), "error without its URL: {shown}");
        prop_assert!(e.line >= 1, "error at line 0: {shown}");
        prop_assert!(
            shown.contains(&format!("line {}", e.line)),
            "error without its line: {shown}"
        );
        if let Some(max) = max_line {
            prop_assert!(
                e.line <= max,
                "line {} past the end ({max}): {shown}",
                e.line
            );
        }
        Ok(())
    };
    let mut reader = match sitemap::open(input, &url, opts) {
        Ok(r) => r,
        Err(e) => {
            check(&e)?;
            return Ok(true);
        }
    };
    // Every entry takes at least a few bytes: more calls than bytes is a loop.
    for _ in 0..input.len() + 2 {
        match reader.next_entry() {
            Ok(Some(entry)) => {
                prop_assert!(entry.line >= 1);
                if let Some(max) = max_line {
                    prop_assert!(entry.line <= max);
                }
            }
            Ok(None) => {
                prop_assert!(reader.warnings().len() as u64 <= MAX_WARNINGS);
                for w in reader.warnings() {
                    prop_assert!(w.line >= 1, "warning at line 0: {w}");
                }
                return Ok(false);
            }
            Err(e) => {
                check(&e)?;
                // Asking again after an error must not panic either.
                let _ = reader.next_entry();
                return Ok(true);
            }
        }
    }
    Err(TestCaseError::fail("next_entry never ends"))
}

/// The most warnings a document may list: the bound, a summary line per kind of repeated
/// warning (12) and the line counting the rest.
const MAX_WARNINGS: u64 = MAX_LISTED_WARNINGS + 13;

/// One element repeated thousands of times, before or after the first entry, or inside it:
/// the warnings listed and the links kept stay bounded (neither was).
#[test]
fn fuzz_sitemap_repeats_keep_warnings_bounded() {
    const PIECES: &[&str] = &[
        "<rs:md/>",
        "<rs:md capability=\"x\"/>",
        "<rs:md at=\"2024-05-02T00:00:00Z\" completed=\"2024-05-01T00:00:00Z\"/>",
        "<rs:md modified=\"2024-05-01T00:00:00Z\"/>",
        "<rs:ln rel=\"a\" href=\"b\"/>",
        "<rs:ln/>",
        "<xhtml:link rel=\"a\" href=\"b\"/>",
        "<xhtml:meta name=\"DCTERMS.modified\"/>",
        "<x/>",
        "text",
        "<rs:md length=\"x\" change=\"y\" capability=\"z\"/>",
        "<lastmod>2024-05-01T00:00:00</lastmod>",
    ];
    let url = Url::parse(DOC).unwrap();
    let most = Cell::new(0usize);
    let ran = run(
        "sitemap: repeated elements",
        (0..PIECES.len(), 1usize..5000, 0u8..3, any::<bool>()),
        |(piece, n, place, lenient)| {
            let body = PIECES[piece].repeat(n);
            let entry = "<url><loc>https://data.example.org/a</loc></url>";
            let doc = match place {
                0 => format!("{body}{entry}"),
                1 => format!("{entry}{body}"),
                _ => format!("<url><loc>https://data.example.org/a</loc>{body}</url>"),
            };
            let doc = format!(
                "<urlset xmlns=\"{SM}\" xmlns:rs=\"{RS}\" xmlns:xhtml=\"http://www.w3.org/1999/xhtml\">{doc}</urlset>\n"
            );
            let opts = ReadOptions {
                zone: if lenient {
                    Zone::AssumeUtc
                } else {
                    Zone::Required
                },
                ..ReadOptions::default()
            };
            let mut r = match sitemap::open(doc.as_bytes(), &url, opts) {
                Ok(r) => r,
                Err(_) => return Ok(()),
            };
            while let Ok(Some(e)) = r.next_entry() {
                prop_assert!(e.links.len() <= MAX_LINKS);
            }
            prop_assert!(r.header().links.len() <= MAX_LINKS);
            let listed = r.warnings().len();
            most.set(most.get().max(listed));
            prop_assert!(listed as u64 <= MAX_WARNINGS, "{} warnings", listed);
            Ok(())
        },
    );
    record_tally(&format!(
        "fuzz: sitemap reader: {ran} cases of one element repeated up to 5,000 times, at most {} warnings listed (bound {MAX_WARNINGS}), at most {MAX_LINKS} links kept",
        most.get()
    ));
}

fn small_opts(small: bool) -> ReadOptions {
    ReadOptions {
        zone: Zone::Required,
        max_bytes: if small { 700 } else { 1 << 20 },
    }
}

#[test]
fn fuzz_sitemap_reader() {
    let snippets = sitemap_snippets();
    let count = Count::default();

    // Arbitrary bytes: tokens of XML and raw bytes, after a valid prolog or not, gzip'd or not.
    let token = prop_oneof![
        4 => any::<u8>().prop_map(|b| vec![b]),
        3 => any::<usize>().prop_map(|i| { let s = sitemap_snippets(); s[i % s.len()].to_vec() }),
    ];
    let arbitrary = run(
        "sitemap: arbitrary bytes",
        (
            proptest::collection::vec(token, 0..200),
            0u8..3,
            any::<bool>(),
        ),
        |(tokens, start, wrap)| {
            count.case();
            let mut plain = match start {
                0 => Vec::new(),
                1 => format!("<urlset xmlns=\"{SM}\" xmlns:rs=\"{RS}\">").into_bytes(),
                _ => format!("<?xml version=\"1.0\"?>\n<sitemapindex xmlns=\"{SM}\">\n<sitemap>")
                    .into_bytes(),
            };
            plain.extend(tokens.concat());
            let input = if wrap { gzip(&plain) } else { plain.clone() };
            if drain_sitemap(&input, small_opts(false), Some(newlines(&plain) + 1))? {
                count.error();
            }
            Ok(())
        },
    );

    // Valid documents read back what they say.
    let valid = run(
        "sitemap: valid documents",
        (
            0u8..3,
            proptest::collection::vec(gen_entry(), 0..8),
            any::<bool>(),
        ),
        |(kind, entries, wrap)| {
            count.case();
            let doc = sitemap_doc(kind, &entries);
            let input = if wrap {
                gzip(doc.as_bytes())
            } else {
                doc.clone().into_bytes()
            };
            let url = Url::parse(DOC).unwrap();
            let mut r = sitemap::open(input.as_slice(), &url, ReadOptions::default())
                .map_err(|e| TestCaseError::fail(format!("{e}\n{doc}")))?;
            for want in &entries {
                let got = r
                    .next_entry()
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{doc}")))?
                    .ok_or_else(|| TestCaseError::fail(format!("entry missing\n{doc}")))?;
                prop_assert_eq!(
                    got.loc.as_str(),
                    format!("https://data.example.org/r/{}", want.id)
                );
                prop_assert_eq!(got.md.length, want.length);
                prop_assert_eq!(got.lastmod.map(|t| t.as_second()), want.lastmod, "{}", doc);
            }
            prop_assert!(r.next_entry().unwrap().is_none());
            Ok(())
        },
    );

    // Mutated valid documents, plain, gzip'd, gzip'd then corrupted, under a tiny size cap.
    let mutated = run(
        "sitemap: mutated documents",
        (
            0u8..3,
            proptest::collection::vec(gen_entry(), 0..5),
            edits(8),
            0u8..4,
            any::<bool>(),
        ),
        |(kind, entries, edits, wrap, small)| {
            count.case();
            let doc = sitemap_doc(kind, &entries);
            let plain = apply(doc.into_bytes(), &edits, snippets);
            let lines = Some(newlines(&plain) + 1);
            let (input, lines) = match wrap {
                0 | 1 => (plain, lines),
                2 => (gzip(&plain), lines),
                _ => (apply(gzip(&plain), &edits, snippets), None),
            };
            if drain_sitemap(&input, small_opts(small), lines)? {
                count.error();
            }
            Ok(())
        },
    );

    // Huge declared numbers read as numbers (or refused), never allocated.
    let url = Url::parse(DOC).unwrap();
    for length in [
        "1000000000000000000",
        "18446744073709551615",
        "18446744073709551616",
        "1e18",
    ] {
        let doc = format!(
            "<urlset xmlns=\"{SM}\" xmlns:rs=\"{RS}\"><url><loc>https://data.example.org/a</loc><rs:md length=\"{length}\"/></url></urlset>"
        );
        let read = sitemap::open(doc.as_bytes(), &url, ReadOptions::default())
            .and_then(|mut r| r.next_entry());
        match read {
            Ok(Some(e)) => assert!(e.md.length.is_none() || e.md.length == length.parse().ok()),
            Ok(None) => panic!("entry lost"),
            Err(e) => assert!(e.to_string().contains("line 1"), "{e}"),
        }
    }

    let total = arbitrary + valid + mutated;
    record_tally(&format!(
        "fuzz: sitemap reader: {total} cases ({arbitrary} arbitrary, {valid} valid, {mutated} mutated; {} errors, each naming URL and line), no panic",
        count.errors.get()
    ));
}

// ---------------------------------------------------------------------------------------------
// Dump packages

const PACKAGE: &str = "https://data.example.org/rs/dump/part1.zip";

/// One generated bitstream.
#[derive(Debug, Clone)]
struct GenFile {
    data: Vec<u8>,
    deflate: bool,
    /// Manifest `path` of the bitstream, from [`HOSTILE`] when Some.
    hostile_path: Option<usize>,
}

/// Paths and names a hostile package might use.
const HOSTILE: &[&str] = &[
    "../evil",
    "/etc/evil",
    "/../evil",
    "a/../../evil",
    "..",
    ".",
    "a\\..\\..\\evil",
    "C:/evil",
    "C:\\evil",
    "a//b",
    "./a",
    "a\0b",
    "a/",
    "",
    "manifest.xml",
    "MANIFEST.XML",
    "%2e%2e/evil",
    "\u{202e}evil",
];

fn gen_file() -> impl Strategy<Value = GenFile> {
    (
        proptest::collection::vec(any::<u8>(), 0..300),
        any::<bool>(),
        proptest::option::weighted(0.1, 0..HOSTILE.len()),
    )
        .prop_map(|(data, deflate, hostile_path)| GenFile {
            data,
            deflate,
            hostile_path,
        })
}

fn manifest(files: &[GenFile]) -> String {
    let mut s = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"{SM}\" xmlns:rs=\"{RS}\">\n  <rs:md capability=\"resourcedump-manifest\" at=\"2024-05-01T06:00:00Z\"/>\n"
    );
    for (i, f) in files.iter().enumerate() {
        let mut h = Hasher::new(false);
        h.update(&f.data);
        let c = h.finish();
        let path = match f.hostile_path {
            Some(h) => HOSTILE[h].replace('\0', "&#0;"),
            None => format!("/r/{i}.bin"),
        };
        s.push_str(&format!(
            "  <url>\n    <loc>https://data.example.org/r/{i}</loc>\n    <rs:md path=\"{path}\" length=\"{}\" hash=\"md5:{}\"/>\n  </url>\n",
            c.length, c.md5_hex
        ));
    }
    s.push_str("</urlset>\n");
    s
}

/// A package of `manifest` and `files`, plus entries with the names of `extra`.
fn package(manifest: &[u8], files: &[GenFile], extra: &[usize]) -> Vec<u8> {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    let opts = |deflate: bool| {
        SimpleFileOptions::default().compression_method(if deflate {
            CompressionMethod::Deflated
        } else {
            CompressionMethod::Stored
        })
    };
    w.start_file("manifest.xml", opts(true)).unwrap();
    w.write_all(manifest).unwrap();
    for (i, f) in files.iter().enumerate() {
        w.start_file(format!("r/{i}.bin"), opts(f.deflate)).unwrap();
        w.write_all(&f.data).unwrap();
    }
    for &h in extra {
        // The writer may refuse a name; then the package simply lacks it.
        if w.start_file(HOSTILE[h], opts(false)).is_ok() {
            w.write_all(b"evil").unwrap();
        }
    }
    w.finish().unwrap().into_inner()
}

/// Offsets of every local (`PK\3\4`) and central (`PK\1\2`) header.
fn headers(zip: &[u8]) -> Vec<(usize, bool)> {
    zip.windows(4)
        .enumerate()
        .filter_map(|(i, w)| match w {
            b"PK\x03\x04" => Some((i, true)),
            b"PK\x01\x02" => Some((i, false)),
            _ => None,
        })
        .collect()
}

/// A header field that may lie.
#[derive(Debug, Clone)]
struct Lie {
    header: Index,
    /// 0 CRC, 1 compressed size, 2 uncompressed size, 3 name length.
    field: u8,
    value: u32,
}

fn lie() -> impl Strategy<Value = Lie> {
    (
        any::<Index>(),
        0u8..4,
        prop_oneof![
            Just(0u32),
            Just(1),
            Just(u32::MAX),
            Just(0xFFFF),
            any::<u32>()
        ],
    )
        .prop_map(|(header, field, value)| Lie {
            header,
            field,
            value,
        })
}

fn tell_lies(zip: &mut [u8], lies: &[Lie]) {
    let found = headers(zip);
    if found.is_empty() {
        return;
    }
    for l in lies {
        let (at, local) = found[l.header.index(found.len())];
        patch(zip, at, local, l.field, l.value);
    }
}

/// Set `field` (see [`Lie`]) of the header at `at` to `value`.
fn patch(zip: &mut [u8], at: usize, local: bool, field: u8, value: u32) {
    {
        // APPNOTE 4.3.7 / 4.3.12: local CRC at 14, sizes at 18 and 22, name length at 26;
        // central CRC at 16, sizes at 20 and 24, name length at 28.
        let base = if local { 14 } else { 16 };
        let (off, width) = match field {
            3 => (base + 12, 2),
            f => (base + 4 * usize::from(f), 4),
        };
        let pos = at + off;
        if pos + width <= zip.len() {
            zip[pos..pos + width].copy_from_slice(&value.to_le_bytes()[..width]);
        }
    }
}

/// The process's peak virtual memory, in bytes (0 where /proc is not there).
fn vm_peak() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmPeak:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// `zip` with its end record replaced by a ZIP64 one declaring `n` entries; `variant` picks
/// the directory size and offset declared: the real ones, or sizes to match `n`.
fn zip64_claiming(zip: &[u8], n: u64, variant: u8) -> Vec<u8> {
    let eocd = zip.len() - 22;
    assert_eq!(&zip[eocd..eocd + 4], b"PK\x05\x06");
    let le32 = |at: usize| u32::from_le_bytes(zip[at..at + 4].try_into().unwrap());
    let (cd_size, cd_offset) = (u64::from(le32(eocd + 12)), u64::from(le32(eocd + 16)));
    let (size, offset) = match variant {
        0 => (cd_size, cd_offset),
        1 => (n.saturating_mul(46), cd_offset),
        2 => (n.saturating_mul(46), n),
        _ => (cd_size, n),
    };
    let mut out = zip[..eocd].to_vec();
    let record = out.len() as u64;
    out.extend_from_slice(b"PK\x06\x06");
    out.extend_from_slice(&44u64.to_le_bytes());
    out.extend_from_slice(&45u16.to_le_bytes());
    out.extend_from_slice(&45u16.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(b"PK\x06\x07");
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&record.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0xFF; 8]);
    out.extend_from_slice(&[0xFF; 8]);
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// Open `bytes` as a package and stage everything; check every error names the package (and
/// the manifest line for a resource), and that nothing lands outside staging.
fn drain_package(bytes: &[u8], count: &Count) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("package.zip");
    std::fs::write(&path, bytes).unwrap();
    let staging = dir.path().join("staging");
    std::fs::create_dir(&staging).unwrap();
    let url = Url::parse(PACKAGE).unwrap();
    let _ = PackageFormat::sniff(&bytes[..bytes.len().min(SNIFF_LEN)]);
    let check = |e: &DumpError| -> Result<(), TestCaseError> {
        let shown = e.to_string();
        prop_assert_eq!(e.package(), PACKAGE);
        prop_assert!(
            shown.contains(PACKAGE),
            "error without its package: {}",
            shown
        );
        if let DumpError::Manifest { source, .. } = e {
            prop_assert!(
                shown.contains("manifest.xml") && shown.contains(&format!("line {}", source.line)),
                "manifest error without its member and line: {}",
                shown
            );
        }
        Ok(())
    };
    let limits = DumpLimits {
        max_ratio: 100,
        min_cap_bytes: 4096,
    };
    match Package::open(&path, &url, limits, ReadOptions::default()) {
        Err(e) => {
            count.error();
            check(&e)?;
        }
        Ok(mut p) => match p.stage_all(&staging) {
            Err(e) => {
                count.error();
                check(&e)?;
                prop_assert!(
                    std::fs::read_dir(&staging).unwrap().next().is_none(),
                    "a refused package left files in staging: {}",
                    e
                );
            }
            Ok(results) => {
                prop_assert_eq!(results.len(), p.entries().len());
                for r in results {
                    match r {
                        Ok(Some(s)) => prop_assert!(s.path.starts_with(&staging)),
                        Ok(None) => {}
                        Err(e) => {
                            count.error();
                            let shown = e.to_string();
                            prop_assert!(
                                shown.starts_with(PACKAGE)
                                    && shown.contains(&format!("manifest.xml line {}", e.line)),
                                "resource error without package and line: {}",
                                shown
                            );
                        }
                    }
                }
            }
        },
    }
    // Nothing but the package and staging in the folder, and nothing above it.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    prop_assert_eq!(
        names,
        vec!["package.zip".to_string(), "staging".to_string()]
    );
    prop_assert!(!dir.path().parent().unwrap().join("evil").exists());
    Ok(())
}

#[test]
fn fuzz_dump_reader() {
    let count = Count::default();
    let snippets = sitemap_snippets();

    // Arbitrary bytes, some behind a ZIP signature.
    let arbitrary = run(
        "dump: arbitrary bytes",
        (proptest::collection::vec(any::<u8>(), 0..600), 0u8..3),
        |(tail, start)| {
            count.case();
            let mut bytes = match start {
                0 => Vec::new(),
                1 => b"PK\x03\x04".to_vec(),
                _ => b"PK\x05\x06".to_vec(),
            };
            bytes.extend(tail);
            drain_package(&bytes, &count)
        },
    );

    // Valid packages stage every bitstream, byte for byte.
    let valid = run(
        "dump: valid packages",
        proptest::collection::vec(gen_file(), 0..5).prop_map(|mut files| {
            for f in &mut files {
                f.hostile_path = None;
            }
            files
        }),
        |files| {
            count.case();
            let bytes = package(manifest(&files).as_bytes(), &files, &[]);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("package.zip");
            std::fs::write(&path, &bytes).unwrap();
            let url = Url::parse(PACKAGE).unwrap();
            let mut p = Package::open(&path, &url, DumpLimits::default(), ReadOptions::default())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let staged = p
                .stage_all(dir.path())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(staged.len(), files.len());
            for (s, f) in staged.into_iter().zip(&files) {
                let s = s.map_err(|e| TestCaseError::fail(e.to_string()))?.unwrap();
                prop_assert_eq!(std::fs::read(&s.path).unwrap(), f.data.clone());
            }
            Ok(())
        },
    );

    // Hostile packages: a manifest mutated, paths and entry names with `..` or absolute, header
    // fields that lie, then flipped or truncated bytes.
    let mutated = run(
        "dump: mutated packages",
        (
            proptest::collection::vec(gen_file(), 0..4),
            proptest::option::weighted(0.3, edits(4)),
            proptest::collection::vec(0..HOSTILE.len(), 0..2),
            proptest::collection::vec(lie(), 0..3),
            proptest::option::weighted(0.5, edits(6)),
        ),
        |(files, manifest_edits, extra, lies, zip_edits)| {
            count.case();
            let mut m = manifest(&files).into_bytes();
            if let Some(e) = &manifest_edits {
                m = apply(m, e, snippets);
            }
            let mut bytes = package(&m, &files, &extra);
            tell_lies(&mut bytes, &lies);
            if let Some(e) = &zip_edits {
                bytes = apply(
                    bytes,
                    e,
                    &[
                        b"PK\x01\x02",
                        b"PK\x03\x04",
                        b"PK\x05\x06",
                        b"\xff\xff\xff\xff",
                    ],
                );
            }
            drain_package(&bytes, &count)
        },
    );

    // A package whose headers declare 4 GiB entries from a few bytes is refused before
    // anything expands.
    let files = vec![GenFile {
        data: vec![0; 100],
        deflate: true,
        hostile_path: None,
    }];
    let mut bytes = package(manifest(&files).as_bytes(), &files, &[]);
    for (at, local) in headers(&bytes) {
        patch(&mut bytes, at, local, 2, u32::MAX);
    }
    drain_package(&bytes, &count).unwrap();

    // A ZIP64 end record declaring up to 2^64 entries and a directory as large: refused or
    // read as what is there, without reserving room for what it declares.
    let before = vm_peak();
    let huge = [100_000_000u64, 1 << 32, 1_000_000_000_000_000_000, u64::MAX];
    for (i, &n) in huge.iter().enumerate() {
        for variant in 0..4 {
            let bytes = zip64_claiming(
                &package(manifest(&files).as_bytes(), &files, &[]),
                n,
                variant,
            );
            drain_package(&bytes, &count).unwrap_or_else(|e| panic!("{n} entries, {variant}: {e}"));
            count.case();
            let _ = i;
        }
    }
    let grown = vm_peak().saturating_sub(before);
    assert!(
        grown < 4 << 30,
        "declared sizes reserved {grown} bytes of address space"
    );

    let total = arbitrary + valid + mutated;
    record_tally(&format!(
        "fuzz: dump reader: {total} cases ({arbitrary} arbitrary, {valid} valid, {mutated} mutated; {} errors, each naming the package and the manifest line or member), no panic, nothing outside staging",
        count.errors.get()
    ));
}

// ---------------------------------------------------------------------------------------------
// ARC sitemaps

const ARC_URL: &str = "https://data.example.org/arc-sitemap.json";

#[derive(Debug, Clone)]
struct GenPage {
    id: u32,
    indexable: bool,
    lastmod: Option<i64>,
    checksum: Option<u128>,
    priority: Option<f64>,
    tags: Vec<String>,
}

fn gen_page() -> impl Strategy<Value = GenPage> {
    (
        any::<u32>(),
        any::<bool>(),
        proptest::option::of(0i64..253_402_300_799),
        proptest::option::of(any::<u128>()),
        proptest::option::of(0.0f64..=1.0),
        proptest::collection::vec("[a-z]{0,6}", 0..3),
    )
        .prop_map(
            |(id, indexable, lastmod, checksum, priority, tags)| GenPage {
                id,
                indexable,
                lastmod,
                checksum,
                priority,
                tags,
            },
        )
}

fn arc_doc(pages: &[GenPage]) -> String {
    let pages: Vec<serde_json::Value> = pages
        .iter()
        .map(|p| {
            let mut v = serde_json::json!({
                "url": format!("https://data.example.org/p/{}", p.id),
                "ai_indexable": p.indexable,
                "ai_tags": p.tags,
            });
            if let Some(t) = p.lastmod {
                v["lastmod"] = jiff::Timestamp::from_second(t).unwrap().to_string().into();
            }
            if let Some(c) = p.checksum {
                v["ai_checksum"] = format!("sha256:{c:032x}{c:032x}").into();
            }
            if let Some(x) = p.priority {
                v["crawl_priority"] = x.into();
            }
            v
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "arc_sitemap_version": "2.1",
        "site": "https://data.example.org/",
        "generated_at": "2025-11-09T08:00:00Z",
        "crawl_rate": "1/s",
        "delta_feeds": ["https://data.example.org/delta-1.json"],
        "pages": pages,
    }))
    .unwrap()
}

fn arc_snippets() -> &'static [&'static [u8]] {
    static SNIPPETS: std::sync::OnceLock<Vec<&'static [u8]>> = std::sync::OnceLock::new();
    SNIPPETS.get_or_init(|| {
        vec![
            b"{",
            b"}",
            b"[",
            b"]",
            b",",
            b":",
            b"\"",
            b"null",
            b"true",
            b"-0",
            b"1e999999",
            b"-1e-999999",
            b"99999999999999999999999999999999999999",
            b"1000000000000000000",
            b"\"\\ud800\"",
            b"\"\\u0000\"",
            b"\"\\x\"",
            b"\xff\xfe",
            b"\xEF\xBB\xBF",
            b"\n",
            b"\"pages\": [],",
            b"\"site\": \"not a url\",",
            b"\"generated_at\": \"2025-13-40T25:61:61Z\",",
            b"\"generated_at\": \"2025-11-09\",",
            b"\"crawl_rate\": \"1e-300/d\",",
            b"\"crawl_rate\": 1e308,",
            b"\"crawl_priority\": 1.5,",
            b"\"ai_checksum\": \"sha256:zz\",",
            b"\"ai_checksum\": 5,",
            b"\"ai_indexable\": \"yes\",",
            b"\"url\": null,",
            b"\"url\": \"/relative\",",
            b"\"lastmod\": \"2025-11-09T08:00:00\",",
            b"\"ai_snapshot\": [1],",
            b"\"ai_tags\": [1, 2],",
            b"\"deleted\": 1,",
            b"\"metadata\": {\"crawl_rate\": \"x\"},",
            b"\"delta_feeds\": [\"::\"],",
            b"{\"url\": \"https://x.example/\", \"ai_indexable\": true},",
            deep("[", "]", 10_000),
            deep("{\"a\":", "}", 10_000),
            deep("[", "", 10_000),
        ]
    })
}

/// Read `input`; check what each error names.
fn drain_arc(
    input: &[u8],
    opts: arc::ReadOptions,
    max_line: Option<usize>,
) -> Result<bool, TestCaseError> {
    let url = Url::parse(ARC_URL).unwrap();
    let mut pages = 0u64;
    match arc::read(input, &url, opts, &mut |p| {
        pages += 1;
        assert_eq!(p.index as u64 + 1, pages);
    }) {
        Ok(h) => {
            prop_assert_eq!(h.pages, pages);
            prop_assert!(h.delta_feeds.len() <= arc::sitemap::MAX_DELTA_FEEDS);
            Ok(false)
        }
        Err(e) => {
            let shown = e.to_string();
            match &e {
                arc::ArcError::Syntax { line, column, .. }
                | arc::ArcError::Shape { line, column, .. } => {
                    prop_assert!(*line >= 1, "line 0: {}", shown);
                    prop_assert!(
                        shown.contains(&format!("line {line}, column {column}")),
                        "{}",
                        shown
                    );
                    if let Some(max) = max_line {
                        prop_assert!(*line <= max, "line {} past the end: {}", line, shown);
                    }
                }
                arc::ArcError::Schema { field, .. } => {
                    prop_assert!(!field.is_empty());
                    prop_assert!(shown.starts_with(field.as_str()), "{}", shown);
                }
                arc::ArcError::TooLarge { max } => {
                    prop_assert_eq!(*max, opts.max_bytes);
                }
                arc::ArcError::Io(_) => {
                    prop_assert!(
                        input.starts_with(b"\x1f\x8b"),
                        "I/O error from memory: {}",
                        shown
                    );
                }
            }
            Ok(true)
        }
    }
}

#[test]
fn fuzz_arc_reader() {
    let count = Count::default();
    let snippets = arc_snippets();
    let opts = |small: bool| arc::ReadOptions {
        zone: Zone::Required,
        max_bytes: if small { 600 } else { 1 << 20 },
    };

    let token = prop_oneof![
        3 => any::<u8>().prop_map(|b| vec![b]),
        3 => any::<usize>().prop_map(|i| { let s = arc_snippets(); s[i % s.len()].to_vec() }),
    ];
    let arbitrary = run(
        "arc: arbitrary bytes",
        (
            proptest::collection::vec(token, 0..150),
            any::<bool>(),
            any::<bool>(),
        ),
        |(tokens, prefix, wrap)| {
            count.case();
            let mut plain = if prefix {
                b"{\"arc_sitemap_version\": \"2.1\", \"pages\": [".to_vec()
            } else {
                Vec::new()
            };
            plain.extend(tokens.concat());
            let input = if wrap { gzip(&plain) } else { plain.clone() };
            let max = newlines(&plain) as usize + 1;
            if drain_arc(&input, opts(false), Some(max))? {
                count.error();
            }
            Ok(())
        },
    );

    let valid = run(
        "arc: valid sitemaps",
        (proptest::collection::vec(gen_page(), 0..6), any::<bool>()),
        |(pages, wrap)| {
            count.case();
            let doc = arc_doc(&pages);
            let input = if wrap {
                gzip(doc.as_bytes())
            } else {
                doc.clone().into_bytes()
            };
            let url = Url::parse(ARC_URL).unwrap();
            let s = arc::read_all(&input[..], &url, arc::ReadOptions::default())
                .map_err(|e| TestCaseError::fail(format!("{e}\n{doc}")))?;
            prop_assert_eq!(s.pages.len(), pages.len());
            for (got, want) in s.pages.iter().zip(&pages) {
                prop_assert_eq!(
                    got.url.as_str(),
                    format!("https://data.example.org/p/{}", want.id)
                );
                prop_assert_eq!(got.lastmod.map(|t| t.as_second()), want.lastmod);
                prop_assert_eq!(got.crawl_priority, want.priority);
                prop_assert_eq!(
                    got.digest.as_ref().map(|d| d.is_usable()),
                    want.checksum.map(|_| true)
                );
            }
            Ok(())
        },
    );

    let mutated = run(
        "arc: mutated sitemaps",
        (
            proptest::collection::vec(gen_page(), 0..4),
            edits(8),
            0u8..4,
            any::<bool>(),
        ),
        |(pages, edits, wrap, small)| {
            count.case();
            let plain = apply(arc_doc(&pages).into_bytes(), &edits, snippets);
            let max = Some(newlines(&plain) as usize + 1);
            let (input, max) = match wrap {
                0 | 1 => (plain, max),
                2 => (gzip(&plain), max),
                _ => (apply(gzip(&plain), &edits, snippets), None),
            };
            if drain_arc(&input, opts(small), max)? {
                count.error();
            }
            Ok(())
        },
    );

    let total = arbitrary + valid + mutated;
    record_tally(&format!(
        "fuzz: ARC reader: {total} cases ({arbitrary} arbitrary, {valid} valid, {mutated} mutated; {} errors, each naming line and column or the field), no panic",
        count.errors.get()
    ));
}

// ---------------------------------------------------------------------------------------------
// W3C datetimes

/// A valid civil value and how to write it.
#[derive(Debug, Clone)]
struct GenTime {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
    second: i8,
    nanos: Option<(u32, usize)>,
    /// None: `Z`; Some(minutes east).
    offset: Option<i32>,
    /// 0 year, 1 year-month, 2 date, 3 minutes, 4 seconds, 5 fraction.
    form: u8,
}

fn gen_time() -> impl Strategy<Value = GenTime> {
    (
        0i16..=9999,
        1i8..=12,
        1i8..=31,
        (0i8..24, 0i8..60, 0i8..60),
        (1usize..=12, 0u32..1_000_000_000),
        proptest::option::of(-(23 * 60 + 59)..=(23 * 60 + 59)),
        0u8..6,
    )
        .prop_map(
            |(year, month, day, (hour, minute, second), (digits, nanos), offset, form)| {
                let max_day = jiff::civil::date(year, month, 1).days_in_month();
                GenTime {
                    year,
                    month,
                    day: day.min(max_day),
                    hour,
                    minute,
                    second,
                    nanos: (form == 5).then_some((nanos, digits)),
                    offset,
                    form,
                }
            },
        )
}

impl GenTime {
    fn text(&self) -> String {
        let mut s = format!("{:04}", self.year);
        if self.form >= 1 {
            s.push_str(&format!("-{:02}", self.month));
        }
        if self.form >= 2 {
            s.push_str(&format!("-{:02}", self.day));
        }
        if self.form >= 3 {
            s.push_str(&format!("T{:02}:{:02}", self.hour, self.minute));
            if self.form >= 4 {
                s.push_str(&format!(":{:02}", self.second));
            }
            if let Some((n, digits)) = self.nanos {
                let nine = format!("{n:09}");
                let frac = if digits <= 9 {
                    nine[..digits].to_string()
                } else {
                    format!("{nine}{}", "7".repeat(digits - 9))
                };
                s.push_str(&format!(".{frac}"));
            }
            match self.offset {
                None => s.push('Z'),
                Some(m) => {
                    let sign = if m < 0 { '-' } else { '+' };
                    s.push_str(&format!("{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60));
                }
            }
        }
        s
    }

    /// The instant it denotes, by jiff (past jiff's range at the end of 9999: its last).
    fn instant(&self) -> jiff::Timestamp {
        let (month, day) = if self.form >= 1 {
            (self.month, 1)
        } else {
            (1, 1)
        };
        let day = if self.form >= 2 { self.day } else { day };
        let timed = self.form >= 3;
        let nanos = self.nanos.map_or(0, |(n, digits)| {
            let nine = format!("{n:09}");
            let kept = &nine[..digits.min(9)];
            format!("{kept:0<9}").parse::<i32>().unwrap()
        });
        let dt = jiff::civil::date(self.year, month, day).at(
            if timed { self.hour } else { 0 },
            if timed { self.minute } else { 0 },
            if self.form >= 4 { self.second } else { 0 },
            nanos,
        );
        let offset = if timed {
            self.offset.map_or(0, |m| m * 60)
        } else {
            0
        };
        let offset = jiff::tz::Offset::from_seconds(offset).unwrap();
        offset.to_timestamp(dt).unwrap_or(if self.year > 5000 {
            jiff::Timestamp::MAX
        } else {
            jiff::Timestamp::MIN
        })
    }
}

#[test]
fn fuzz_w3c_datetime() {
    let errors = Cell::new(0u64);
    let named = |value: &str, zone: Zone| -> Result<(), TestCaseError> {
        if let Err(e) = w3c_datetime::parse(value, zone) {
            errors.set(errors.get() + 1);
            let shown = e.to_string();
            prop_assert!(
                shown.contains(&format!("{value:?}")),
                "error without its value: {}",
                shown
            );
        }
        Ok(())
    };

    // Arbitrary strings, and strings of datetime characters.
    let arbitrary = run(
        "w3c: arbitrary strings",
        (
            prop_oneof![
                ".*",
                "[0-9T:Z+\\-. ]{0,40}",
                "[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{0,30})?)?(Z|[+-][0-9]{2}:[0-9]{2})?",
            ],
            any::<bool>(),
        ),
        |(s, lenient)| named(&s, if lenient { Zone::AssumeUtc } else { Zone::Required }),
    );

    // Valid values with one character replaced, inserted or removed (any character, multi-byte
    // ones included, at any place: slicing must stay on character boundaries).
    let mutated = run(
        "w3c: mutated values",
        (
            gen_time(),
            any::<Index>(),
            any::<char>(),
            0u8..3,
            any::<bool>(),
        ),
        |(t, at, c, how, lenient)| {
            let mut chars: Vec<char> = t.text().chars().collect();
            let i = at.index(chars.len() + 1);
            match how {
                0 if i < chars.len() => chars[i] = c,
                1 if i < chars.len() => {
                    chars.remove(i);
                }
                _ => chars.insert(i, c),
            }
            let s: String = chars.into_iter().collect();
            named(
                &s,
                if lenient {
                    Zone::AssumeUtc
                } else {
                    Zone::Required
                },
            )
        },
    );

    // Generated valid values read as the instant they denote; written back in RFC 3339, read
    // as the same instant.
    let valid = run("w3c: valid values", gen_time(), |t| {
        let text = t.text();
        let parsed = w3c_datetime::parse(&text, Zone::Required)
            .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert!(!parsed.assumed_utc);
        prop_assert_eq!(parsed.timestamp, t.instant(), "{}", text);
        let again = parsed
            .timestamp
            .strftime("%Y-%m-%dT%H:%M:%S%.fZ")
            .to_string();
        if parsed.timestamp != jiff::Timestamp::MAX
            && parsed.timestamp.as_second() >= -62_167_219_200
        {
            let back = w3c_datetime::parse(&again, Zone::Required)
                .map_err(|e| TestCaseError::fail(format!("{again}: {e}")))?;
            prop_assert_eq!(back.timestamp, parsed.timestamp, "{}", again);
        }
        Ok(())
    });

    // A field out of range is refused, naming the value.
    let out_of_range = run(
        "w3c: out-of-range fields",
        (gen_time(), 0u8..6, 0u8..100),
        |(mut t, field, n)| {
            t.form = 4;
            t.nanos = None;
            let mut text = t.text();
            let bad = match field {
                0 => (n > 12 || n == 0).then(|| text.replace_range(5..7, &format!("{n:02}"))),
                1 => {
                    let max = jiff::civil::date(t.year, t.month, 1).days_in_month() as u8;
                    (n > max || n == 0).then(|| text.replace_range(8..10, &format!("{n:02}")))
                }
                2 => (n > 23).then(|| text.replace_range(11..13, &format!("{n:02}"))),
                3 => (n > 59).then(|| text.replace_range(14..16, &format!("{n:02}"))),
                4 => (n > 59).then(|| text.replace_range(17..19, &format!("{n:02}"))),
                _ => (n > 23).then(|| {
                    text.truncate(19);
                    text.push_str(&format!("+{n:02}:00"));
                }),
            };
            if bad.is_none() {
                return Ok(());
            }
            match w3c_datetime::parse(&text, Zone::AssumeUtc) {
                Ok(p) => Err(TestCaseError::fail(format!("{text} read as {p}"))),
                Err(e) => {
                    let quoted = format!("{text:?}");
                    prop_assert!(e.to_string().contains(&quoted), "{}", e);
                    Ok(())
                }
            }
        },
    );

    let total = arbitrary + mutated + valid + out_of_range;
    record_tally(&format!(
        "fuzz: W3C datetime: {total} cases ({arbitrary} arbitrary, {mutated} mutated, {valid} valid round trips, {out_of_range} out of range; {} errors, each naming the value), no panic",
        errors.get()
    ));
}

// ---------------------------------------------------------------------------------------------
// The place named is the right one

/// A fault put into one entry of a document whose entries take three lines each.
const SITEMAP_FAULTS: &[&str] = &[
    "bad URL",
    "no <loc>",
    "bad length",
    "bad lastmod",
    "mismatched end tag",
    "truncated",
];

/// One fault in entry `k` of `n`: the reader reads the entries before it, then reports the
/// fault at a line of entry `k` (an error, or for a bad `<lastmod>` the entry marked invalid).
#[test]
fn fuzz_sitemap_errors_name_the_right_line() {
    let url = Url::parse(DOC).unwrap();
    let ran = run(
        "sitemap: the line of a fault",
        (
            1usize..8,
            any::<Index>(),
            0..SITEMAP_FAULTS.len(),
            0u8..3,
            any::<bool>(),
        ),
        |(n, k, fault, kind, wrap)| {
            let k = k.index(n);
            let (root, item) = if kind == 2 {
                ("sitemapindex", "sitemap")
            } else {
                ("urlset", "url")
            };
            let mut lines = vec![
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>".to_string(),
                format!("<{root} xmlns=\"{SM}\" xmlns:rs=\"{RS}\">"),
                "  <rs:md capability=\"resourcelist\" at=\"2024-05-01T06:00:00Z\"/>".to_string(),
            ];
            for i in 0..n {
                lines.push(format!("  <{item}>"));
                lines.push(format!("    <loc>https://data.example.org/r/{i}</loc>"));
                lines.push(format!("  </{item}>"));
            }
            lines.push(format!("</{root}>"));
            // Entry k: its start tag on line `start` (1-based), its end tag two lines on.
            let start = 4 + 3 * k;
            let loc = start; // 0-based index of the <loc> line
            let here = format!("https://data.example.org/r/{k}");
            match fault {
                0 => lines[loc] = "    <loc>http://[::1</loc>".into(),
                1 => lines[loc] = "    <!-- no loc -->".into(),
                2 => lines[loc] = format!("    <loc>{here}</loc><rs:md length=\"12x\"/>"),
                3 => {
                    lines[loc] =
                        format!("    <loc>{here}</loc><lastmod>2024-13-01T00:00:00Z</lastmod>")
                }
                4 => lines[loc] = format!("    <loc>{here}</lox>"),
                _ => lines.truncate(loc + 1),
            }
            let doc = lines.join("\n") + "\n";
            let total = lines.len() as u64 + 1;
            let input = if wrap {
                gzip(doc.as_bytes())
            } else {
                doc.clone().into_bytes()
            };
            let (first, last) = (start as u64, start as u64 + 2);
            let in_entry = |line: u64| {
                if fault == 5 {
                    line >= first && line <= total
                } else {
                    line >= first && line <= last
                }
            };
            let mut r = match sitemap::open(input.as_slice(), &url, ReadOptions::default()) {
                Ok(r) => r,
                Err(e) => {
                    prop_assert!(k == 0 && in_entry(e.line), "{}\n{}", e, doc);
                    return Ok(());
                }
            };
            for i in 0..k {
                let e = r
                    .next_entry()
                    .map_err(|e| TestCaseError::fail(format!("entry {i}: {e}\n{doc}")))?
                    .ok_or_else(|| TestCaseError::fail(format!("entry {i} missing\n{doc}")))?;
                prop_assert_eq!(e.line, 4 + 3 * i as u64);
            }
            match r.next_entry() {
                Err(e) => {
                    prop_assert!(fault != 3, "a bad lastmod refused the document: {}", e);
                    prop_assert!(
                        in_entry(e.line),
                        "{} ({}): {}\n{}",
                        SITEMAP_FAULTS[fault],
                        first,
                        e,
                        doc
                    );
                    let place = format!("{DOC}: line {}: ", e.line);
                    prop_assert!(e.to_string().starts_with(&place), "{}", e);
                }
                Ok(Some(e)) => {
                    prop_assert!(
                        fault == 3 && e.invalid.is_some() && e.line == first,
                        "{}: entry {:?}\n{}",
                        SITEMAP_FAULTS[fault],
                        e,
                        doc
                    );
                }
                Ok(None) => {
                    return Err(TestCaseError::fail(format!(
                        "{}: the document ended early\n{doc}",
                        SITEMAP_FAULTS[fault]
                    )))
                }
            }
            Ok(())
        },
    );
    record_tally(&format!(
        "fuzz: sitemap reader: {ran} cases of one fault ({}) in one entry, each reported at a line of that entry",
        SITEMAP_FAULTS.join(", ")
    ));
}

/// One bitstream of a valid package broken (its length or digest in the manifest, or a byte of
/// its stored data): that resource fails, naming its manifest line and URL; the others land.
#[test]
fn fuzz_dump_errors_name_the_right_entry() {
    let ran = run(
        "dump: the entry of a fault",
        (
            proptest::collection::vec(
                (
                    proptest::collection::vec(any::<u8>(), 1..200),
                    any::<bool>(),
                ),
                1..6,
            ),
            any::<Index>(),
            0u8..3,
            any::<Index>(),
        ),
        |(data, j, fault, at)| {
            let j = j.index(data.len());
            let mut files: Vec<GenFile> = data
                .into_iter()
                .map(|(data, deflate)| GenFile {
                    data,
                    deflate,
                    hostile_path: None,
                })
                .collect();
            if fault == 2 {
                files[j].deflate = false;
            }
            let mut m = manifest(&files);
            match fault {
                0 => {
                    let want = format!("length=\"{}\"", files[j].data.len());
                    let lie = format!("length=\"{}\"", files[j].data.len() + 1);
                    let line_start = m.find(&format!("r/{j}</loc>")).unwrap();
                    let at = line_start + m[line_start..].find(&want).unwrap();
                    m.replace_range(at..at + want.len(), &lie);
                }
                1 => {
                    let line_start = m.find(&format!("r/{j}</loc>")).unwrap();
                    let at = line_start + m[line_start..].find("md5:").unwrap() + 4;
                    let c = if &m[at..at + 1] == "0" { "1" } else { "0" };
                    m.replace_range(at..at + 1, c);
                }
                _ => {}
            }
            let mut bytes = package(m.as_bytes(), &files, &[]);
            if fault == 2 {
                // The local header of r/j.bin: 30 fixed bytes, the name, the extra field.
                let name = format!("r/{j}.bin");
                let (h, _) = headers(&bytes)
                    .into_iter()
                    .find(|&(h, local)| local && bytes[h + 30..].starts_with(name.as_bytes()))
                    .unwrap();
                let le16 = |a: usize| usize::from(u16::from_le_bytes([bytes[a], bytes[a + 1]]));
                let data_at = h + 30 + le16(h + 26) + le16(h + 28);
                let i = data_at + at.index(files[j].data.len());
                bytes[i] ^= 0x55;
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("package.zip");
            std::fs::write(&path, &bytes).unwrap();
            let url = Url::parse(PACKAGE).unwrap();
            let mut p = Package::open(&path, &url, DumpLimits::default(), ReadOptions::default())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let results = p
                .stage_all(dir.path())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            for (i, r) in results.into_iter().enumerate() {
                match r {
                    Ok(_) => prop_assert!(i != j, "entry {} staged", j),
                    Err(e) => {
                        prop_assert_eq!(i, j, "entry {} failed: {}", i, e);
                        let line = 4 + 4 * j as u64;
                        prop_assert_eq!(e.line, line);
                        let shown = e.to_string();
                        let place = format!(
                            "{PACKAGE}: manifest.xml line {line} (https://data.example.org/r/{j}): "
                        );
                        prop_assert!(shown.starts_with(&place), "{}", shown);
                        prop_assert!(shown.contains(&format!("r/{j}.bin")), "{}", shown);
                    }
                }
            }
            Ok(())
        },
    );
    record_tally(&format!(
        "fuzz: dump reader: {ran} cases of one broken bitstream (length, digest, stored byte), each failing alone and naming its manifest line, URL and member"
    ));
}

/// One page of a valid ARC sitemap given a field of the wrong kind: the error names that page
/// and field, and the pages before it were handed over.
#[test]
fn fuzz_arc_errors_name_the_right_page() {
    const FAULTS: &[(&str, &str)] = &[
        ("url", "5"),
        ("url", "\"not a uri\""),
        ("ai_indexable", "\"yes\""),
        ("lastmod", "\"2025-13-01T00:00:00Z\""),
        ("crawl_priority", "1.5"),
        ("ai_tags", "[1]"),
        ("ai_snapshot", "[]"),
        ("auth_required", "0"),
    ];
    let url = Url::parse(ARC_URL).unwrap();
    let ran = run(
        "arc: the page of a fault",
        (
            proptest::collection::vec(gen_page(), 1..6),
            any::<Index>(),
            0..FAULTS.len(),
        ),
        |(pages, k, fault)| {
            let k = k.index(pages.len());
            let mut doc: serde_json::Value = serde_json::from_str(&arc_doc(&pages)).unwrap();
            let (field, value) = FAULTS[fault];
            doc["pages"][k][field] = serde_json::from_str(value).unwrap();
            let text = serde_json::to_string_pretty(&doc).unwrap();
            let mut seen = Vec::new();
            let e = match arc::read(
                text.as_bytes(),
                &url,
                arc::ReadOptions::default(),
                &mut |p| seen.push(p.index),
            ) {
                Ok(_) => return Err(TestCaseError::fail(format!("{field}={value} read"))),
                Err(e) => e,
            };
            prop_assert_eq!(seen, (0..k).collect::<Vec<_>>());
            let shown = e.to_string();
            let want = format!("pages[{k}].{field}");
            prop_assert!(shown.starts_with(&want), "{}", shown);
            if field != "url" {
                let page = format!("(page https://data.example.org/p/{})", pages[k].id);
                prop_assert!(shown.ends_with(&page), "{}", shown);
            }
            Ok(())
        },
    );
    record_tally(&format!(
        "fuzz: ARC reader: {ran} cases of one page with a field of the wrong kind, each naming that page and field"
    ));
}
