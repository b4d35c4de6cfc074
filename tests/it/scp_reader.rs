//! The SCP readers through the crate's public API: the two real collections of the corpus in
//! `../shared/corpus/` (read in place, never copied; when the folder is absent the tests say
//! so loudly and pass), the specification's own examples as fixtures, detection by content
//! whatever a file is called, and (ignored by default) the throughput of a 1 GB snapshot.

use rsmirror::formats::scp::read::{
    Block, ChecksumStatus, CollectionReader, CollectionSummary, CollectionType, Compression,
    Limits, Page, ScpError, ScpErrorKind,
};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `../shared/corpus` (its tests are ignored where the build did not find it: `build.rs`).
fn corpus_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

/// Every page, then the verdict.
fn read_all(input: impl std::io::Read) -> Result<(Vec<Page>, CollectionSummary), ScpError> {
    let mut reader = CollectionReader::open(input, &Limits::default())?;
    let mut pages = Vec::new();
    while let Some(page) = reader.next_page()? {
        pages.push(page);
    }
    Ok((pages, reader.finish()?))
}

/// crawlcore/scp-protocol `examples/minimal-snapshot.scp`: its checksum has 66 hex digits, so
/// it can never verify; the reader says so at line 1 before reading any page.
#[test]
#[cfg_attr(
    missing = "corpus",
    ignore = "../shared/corpus is not beside the checkout"
)]
fn corpus_minimal_snapshot_has_a_malformed_checksum() {
    let dir = corpus_dir();
    let file = std::fs::File::open(dir.join("scp-protocol_minimal-snapshot.scp")).unwrap();
    let e = CollectionReader::open(file, &Limits::default())
        .err()
        .unwrap();
    assert_eq!(e.line, 1);
    assert_eq!(
        e.kind,
        ScpErrorKind::MalformedChecksum {
            value: format!(
                "sha256:a1b2c3d4e5f6{}",
                "789012345678901234567890123456789012345678901234567890"
            )
        }
    );
    assert!(e.is_checksum());
    assert!(
        e.to_string()
            .starts_with("line 1: checksum \"sha256:a1b2c3d4e5f6789012"),
        "{e}"
    );
}

/// crawlcore/scp-protocol `examples/rich-content.scp`: a `structured` block (not a v0.1 type)
/// is kept with a warning, the schema.org object is accepted, nothing is verified.
#[test]
#[cfg_attr(
    missing = "corpus",
    ignore = "../shared/corpus is not beside the checkout"
)]
fn corpus_rich_content_keeps_the_unknown_block_with_a_warning() {
    let dir = corpus_dir();
    let file = std::fs::File::open(dir.join("scp-protocol_rich-content.scp")).unwrap();
    let (pages, summary) = read_all(file).unwrap();
    assert_eq!(summary.meta.id, "rich-example");
    assert_eq!(summary.meta.section, "docs");
    assert_eq!(summary.meta.kind, CollectionType::Snapshot);
    assert_eq!(summary.compression, Compression::None);
    assert_eq!(summary.checksum, ChecksumStatus::Unverified);
    assert_eq!(
        (summary.lines, summary.pages, summary.pages_skipped),
        (3, 2, 0)
    );
    assert_eq!(pages[0].url.as_str(), "https://example.com/features");
    let kinds: Vec<&str> = pages[0].blocks.iter().map(Block::kind).collect();
    assert_eq!(kinds, ["heading", "text", "list", "heading", "table"]);
    let widget = &pages[1];
    assert_eq!(widget.title, "Amazing Widget");
    match &widget.blocks[2] {
        Block::Unknown { kind, json } => {
            assert_eq!(kind, "structured");
            assert!(json.contains("\"format\":\"json-ld\""), "{json}");
        }
        b => panic!("{b:?}"),
    }
    assert!(widget.json.contains(r#""type":"structured""#));
    assert_eq!(summary.warnings.len(), 1, "{:?}", summary.warnings);
    assert_eq!(summary.warnings[0].line, 3);
    assert_eq!(
        summary.warnings[0].message,
        r#"content[2]: unknown block type "structured" kept as raw JSON"#
    );
}

/// SCP 0.1 Appendix B, Example 1: its checksum is the SHA-256 of "foo", a placeholder.
#[test]
fn spec_example_1_placeholder_checksum_is_refused() {
    let example = concat!(
        r#"{"collection":{"id":"example-minimal","section":"all","type":"snapshot","generated":"2025-01-15T10:00:00Z","checksum":"sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae","version":"0.1"}}"#,
        "\n",
        r#"{"url":"https://example.com/","title":"Home Page","description":"Welcome to our site","modified":"2025-01-15T09:00:00Z","language":"en","content":[{"type":"heading","level":1,"text":"Welcome"},{"type":"text","text":"Hello World!"}]}"#,
        "\n"
    );
    let e = CollectionReader::open(example.as_bytes(), &Limits::default())
        .err()
        .unwrap();
    assert_eq!(e.line, 1);
    assert!(
        matches!(e.kind, ScpErrorKind::PlaceholderChecksum { what, .. } if what.contains("\"foo\"")),
        "{e}"
    );
}

/// SCP 0.1 Appendix B, Example 2: the snapshot and the delta, without checksums.
#[test]
fn spec_example_2_snapshot_and_delta() {
    let snapshot = concat!(
        r#"{"collection":{"id":"blog-snapshot-day1","section":"blog","type":"snapshot","generated":"2000-01-15T00:00:00Z","version":"0.1"}}"#,
        "\n",
        r#"{"url":"https://example.com/blog/post-1","title":"First Post","description":"The first blog post","modified":"2000-01-10T12:00:00Z","language":"en","content":[{"type":"heading","level":1,"text":"First Post"},{"type":"text","text":"This is the first post."}]}"#,
        "\n",
        r#"{"url":"https://example.com/blog/post-2","title":"Second Post","description":"The second blog post","modified":"2000-01-12T14:00:00Z","language":"en","content":[{"type":"heading","level":1,"text":"Second Post"},{"type":"text","text":"This is the second post."}]}"#,
    );
    let delta = concat!(
        r#"{"collection":{"id":"blog-delta-day2","section":"blog","type":"delta","generated":"2000-01-16T23:00:00Z","since":"2000-01-15T00:00:00Z","version":"0.1"}}"#,
        "\n",
        r#"{"url":"https://example.com/blog/post-2","title":"Second Post (Updated)","description":"The updated second post","modified":"2000-01-16T10:00:00Z","language":"en","content":[{"type":"heading","level":1,"text":"Second Post"},{"type":"text","text":"This post has been updated with new content."}]}"#,
        "\n",
        r#"{"url":"https://example.com/blog/post-3","title":"Third Post","description":"A newly published post","modified":"2000-01-16T15:00:00Z","language":"en","content":[{"type":"heading","level":1,"text":"Third Post"},{"type":"text","text":"This is a newly published post."}]}"#,
    );
    let (snap_pages, snap) = read_all(snapshot.as_bytes()).unwrap();
    let (delta_pages, delta) = read_all(delta.as_bytes()).unwrap();
    assert_eq!(snap.meta.kind, CollectionType::Snapshot);
    assert_eq!(delta.meta.kind, CollectionType::Delta);
    assert_eq!(
        delta.meta.since,
        Some("2000-01-15T00:00:00Z".parse().unwrap())
    );
    // The delta's post-2 is newer than the snapshot's: the SCP rule would replace it.
    assert!(delta_pages[0].modified > snap_pages[1].modified);
    assert_eq!(delta_pages[0].url, snap_pages[1].url);
}

/// Names mean nothing: a zstd file called `.scp.gz`, a gzip file called `.scp`.
#[test]
fn detection_is_by_content_not_by_name() {
    let plain = concat!(
        r#"{"collection":{"id":"c","section":"s","type":"snapshot","generated":"2025-01-15T00:00:00Z","version":"0.1"}}"#,
        "\n",
        r#"{"url":"https://example.com/","title":"t","description":"d","modified":"2025-01-15T09:00:00Z","language":"en","content":[{"type":"text","text":"x"}]}"#,
        "\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let zst = dir.path().join("misnamed.scp.gz");
    std::fs::write(&zst, zstd::stream::encode_all(plain.as_bytes(), 3).unwrap()).unwrap();
    let gz = dir.path().join("misnamed.scp");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(plain.as_bytes()).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let txt = dir.path().join("misnamed.scp.zst");
    std::fs::write(&txt, plain).unwrap();
    for (path, want) in [
        (&zst, Compression::Zstd),
        (&gz, Compression::Gzip),
        (&txt, Compression::None),
    ] {
        let (pages, summary) = read_all(std::fs::File::open(path).unwrap()).unwrap();
        assert_eq!(summary.compression, want);
        assert_eq!(pages.len(), 1);
    }
}

// ---------------------------------------------------------------------------------------------
// Throughput

/// Deterministic words for generated pages (an LCG; no dependency).
struct Words(u64);

const VOCABULARY: &[&str] = &[
    "archive",
    "mirror",
    "protocol",
    "snapshot",
    "delta",
    "section",
    "crawler",
    "content",
    "publisher",
    "checksum",
    "compression",
    "sitemap",
    "collection",
    "page",
    "block",
    "heading",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "with",
    "on",
    "that",
    "by",
    "this",
    "from",
    "data",
    "network",
    "server",
    "client",
    "request",
    "response",
    "cache",
    "storage",
    "index",
    "search",
    "quality",
    "reliable",
    "verified",
    "stream",
    "bounded",
    "memory",
    "limit",
    "ratio",
    "stable",
    "history",
    "version",
    "update",
    "release",
    "document",
    "format",
    "schema",
    "value",
];

impl Words {
    fn next(&mut self) -> &'static str {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        VOCABULARY[(self.0 >> 33) as usize % VOCABULARY.len()]
    }

    fn sentence(&mut self, words: usize, out: &mut String) {
        for i in 0..words {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(self.next());
        }
        out.push('.');
    }
}

/// One realistic page (~4 KB, a dozen blocks of several types).
fn bench_page(i: u64, out: &mut String) {
    let mut w = Words(i);
    out.clear();
    out.push_str(&format!(
        r#"{{"url":"https://example.com/blog/{i}","title":""#
    ));
    w.sentence(6, out);
    out.push_str(r#"","description":""#);
    w.sentence(20, out);
    out.push_str(&format!(
        r#"","author":"Author {}","modified":"2025-01-{:02}T{:02}:{:02}:00Z","language":"en","content":["#,
        i % 97,
        i % 28 + 1,
        i % 24,
        i % 60
    ));
    for b in 0..12 {
        if b > 0 {
            out.push(',');
        }
        match b % 6 {
            0 => {
                out.push_str(r#"{"type":"heading","level":2,"text":""#);
                w.sentence(5, out);
                out.push_str(r#""}"#);
            }
            3 => {
                out.push_str(r#"{"type":"list","ordered":false,"items":[""#);
                w.sentence(4, out);
                out.push_str(r#"",""#);
                w.sentence(4, out);
                out.push_str(r#""]}"#);
            }
            5 => {
                out.push_str(&format!(
                    r#"{{"type":"link","url":"https://example.com/ref/{}","text":""#,
                    i * 7 + b
                ));
                w.sentence(3, out);
                out.push_str(r#""}"#);
            }
            _ => {
                out.push_str(r#"{"type":"text","text":""#);
                for _ in 0..4 {
                    w.sentence(12, out);
                    out.push(' ');
                }
                out.push_str(r#""}"#);
            }
        }
    }
    out.push_str("]}");
}

/// A gzip snapshot of about `target` decompressed bytes, with a reference-implementation
/// checksum (so that both checksum rules run while reading). Returns the page count.
fn generate_snapshot(path: &Path, target: u64) -> u64 {
    use sha2::Digest as _;
    let meta = r#"{"collection":{"id":"bench","section":"blog","type":"snapshot","generated":"2025-02-01T00:00:00Z","version":"0.1"}}"#;
    let mut page = String::new();
    // Pass 1: the reference generator's hash (file without the checksum, no final newline).
    let mut hash = sha2::Sha256::new();
    hash.update(meta.as_bytes());
    let (mut bytes, mut pages) = (meta.len() as u64, 0u64);
    while bytes < target {
        bench_page(pages, &mut page);
        hash.update(b"\n");
        hash.update(page.as_bytes());
        bytes += 1 + page.len() as u64;
        pages += 1;
    }
    let checksum = hex::encode(hash.finalize());
    let line1 = format!(
        r#"{},"checksum":"sha256:{checksum}"}}}}"#,
        &meta[..meta.len() - 2]
    );
    // Pass 2: write it, gzip level 6 as the reference generator does.
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::new(6));
    gz.write_all(line1.as_bytes()).unwrap();
    for i in 0..pages {
        bench_page(i, &mut page);
        gz.write_all(b"\n").unwrap();
        gz.write_all(page.as_bytes()).unwrap();
    }
    gz.finish().unwrap().flush().unwrap();
    pages
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Reads a generated ~1 GiB (decompressed) gzip snapshot and prints pages/s, MB/s and the
/// peak RSS. The file is generated once (at `$SCP_BENCH_FILE`, default in the temp dir) and
/// reused, so a second run measures the reader alone:
///
/// `cargo test --release --test it scp_reader::throughput -- --ignored --nocapture`
#[test]
#[ignore]
fn throughput() {
    let path = std::env::var_os("SCP_BENCH_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("rsmirror-scp-bench-1g.scp.gz"));
    if !path.exists() {
        let start = std::time::Instant::now();
        let pages = generate_snapshot(&path, 1 << 30);
        println!(
            "generated {} ({pages} pages) in {:.1} s",
            path.display(),
            start.elapsed().as_secs_f64()
        );
    }
    let len = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::File::open(&path).unwrap();
    let start = std::time::Instant::now();
    let mut reader = CollectionReader::open_with_len(file, len, &Limits::default()).unwrap();
    let mut pages = 0u64;
    let mut blocks = 0usize;
    while let Some(page) = reader.next_page().unwrap() {
        pages += 1;
        blocks += page.blocks.len();
        std::hint::black_box(&page);
    }
    let summary = reader.finish().unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(summary.checksum, ChecksumStatus::ReferenceVariant);
    assert_eq!(summary.pages, pages);
    println!(
        "read {pages} pages ({blocks} blocks), {} decompressed bytes from {} gzip bytes in {secs:.2} s: {:.0} pages/s, {:.1} MB/s decompressed ({:.1} MB/s compressed); peak RSS {} KiB",
        summary.decompressed_bytes,
        summary.compressed_bytes,
        pages as f64 / secs,
        summary.decompressed_bytes as f64 / secs / 1e6,
        summary.compressed_bytes as f64 / secs / 1e6,
        peak_rss_kib().map_or("?".to_string(), |k| k.to_string()),
    );
}
