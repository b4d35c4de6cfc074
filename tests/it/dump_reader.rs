//! The dump-package reader (`rs::dump`) through the crate's public API: packages built here
//! with the zip crate's writer (hostile ones by patching its bytes: no binary fixtures), and
//! the real third-party package in `../shared/corpus/`, read in place and skipped loudly when
//! the folder is absent.
//!
//! Every test works in a folder holding the package, `staging/` and a `canary/` directory
//! beside it; the fixture checks on drop that the canary is untouched and that nothing
//! appeared anywhere but in staging, under names the reader generated.

use rsmirror::rs::digest::{Computed, Hasher};
use rsmirror::rs::document::{Capability, Change, Syntax};
use rsmirror::rs::dump::{
    DumpError, DumpLimits, EntryErrorKind, Package, PackageFormat, SizeFound, StageError,
    StagedBitstream,
};
use rsmirror::rs::manifest_path::PathError;
use rsmirror::rs::sitemap::ReadOptions;
use std::collections::BTreeSet;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use url::Url;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

const PACKAGE_URL: &str = "https://data.example.org/rs/dump/part1.zip";

fn package_url() -> Url {
    Url::parse(PACKAGE_URL).unwrap()
}

fn computed(data: &[u8]) -> Computed {
    let mut h = Hasher::new(false);
    h.update(data);
    h.finish()
}

// ---------------------------------------------------------------------------------------------
// Fixture: package, staging and canary side by side.

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    staging: PathBuf,
    canary: PathBuf,
    packages: usize,
}

const CANARY_TEXT: &[u8] = b"if this changes, a package wrote outside staging\n";

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let staging = root.join("staging");
        let canary = root.join("canary");
        std::fs::create_dir(&staging).unwrap();
        std::fs::create_dir(&canary).unwrap();
        std::fs::write(canary.join("keep.txt"), CANARY_TEXT).unwrap();
        Fixture {
            _dir: dir,
            root,
            staging,
            canary,
            packages: 0,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> PathBuf {
        self.packages += 1;
        let path = self.root.join(format!("package-{}.zip", self.packages));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn open(&mut self, bytes: &[u8]) -> Result<Package, DumpError> {
        self.open_with(bytes, DumpLimits::default())
    }

    fn open_with(&mut self, bytes: &[u8], limits: DumpLimits) -> Result<Package, DumpError> {
        let path = self.write(bytes);
        Package::open(&path, &package_url(), limits, ReadOptions::default())
    }

    fn staged_names(&self) -> BTreeSet<String> {
        names_in(&self.staging)
    }

    /// The canary and the folder around it are as the fixture made them.
    fn assert_untouched(&self) {
        assert_eq!(names_in(&self.canary), BTreeSet::from(["keep.txt".into()]));
        assert_eq!(
            std::fs::read(self.canary.join("keep.txt")).unwrap(),
            CANARY_TEXT
        );
        let mut expected: BTreeSet<String> = ["staging".into(), "canary".into()].into();
        for i in 1..=self.packages {
            expected.insert(format!("package-{i}.zip"));
        }
        assert_eq!(names_in(&self.root), expected);
        // Staging holds only files, named by the reader.
        for entry in std::fs::read_dir(&self.staging).unwrap() {
            let entry = entry.unwrap();
            assert!(entry.file_type().unwrap().is_file());
            let name = entry.file_name().into_string().unwrap();
            let stem = name.strip_suffix(".part").unwrap_or("");
            let named_by_us = stem.split_once('-').is_some_and(|(pid, n)| {
                [pid, n]
                    .iter()
                    .all(|d| d.bytes().all(|b| b.is_ascii_digit()))
            });
            assert!(named_by_us, "unexpected staging file {name:?}");
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.assert_untouched();
        }
    }
}

fn names_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Building packages.

/// One `<url>` of a 1.1 manifest.
struct Item<'a> {
    loc: &'a str,
    change: Option<&'a str>,
    path: Option<&'a str>,
    /// The bytes the hash and length are declared for (the bitstream, normally).
    declared: Option<&'a [u8]>,
}

fn item<'a>(loc: &'a str, path: &'a str, data: &'a [u8]) -> Item<'a> {
    Item {
        loc,
        change: None,
        path: Some(path),
        declared: Some(data),
    }
}

fn manifest(root_md: &str, items: &[Item<'_>]) -> String {
    let mut s = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="https://data.example.org/rs/capabilitylist.xml"/>
"#,
    );
    s.push_str(&format!("  {root_md}\n"));
    for it in items {
        let mut md = String::new();
        if let Some(c) = it.change {
            md.push_str(&format!(r#" change="{c}" datetime="2024-05-02T10:00:00Z""#));
        }
        if let Some(p) = it.path {
            md.push_str(&format!(r#" path="{}""#, xml_escape(p)));
        }
        if let Some(d) = it.declared {
            let c = computed(d);
            md.push_str(&format!(
                r#" type="text/plain" length="{}" hash="md5:{} sha-256:{}""#,
                d.len(),
                c.md5_hex,
                c.sha256_hex
            ));
        }
        s.push_str(&format!(
            "  <url>\n    <loc>{}</loc>\n    <rs:md{md}/>\n  </url>\n",
            it.loc
        ));
    }
    s.push_str("</urlset>\n");
    s
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('\0', "&#0;")
}

const RESOURCEDUMP_MD: &str =
    r#"<rs:md capability="resourcedump-manifest" at="2024-05-01T06:00:00Z"/>"#;

fn deflated() -> SimpleFileOptions {
    SimpleFileOptions::default().compression_method(CompressionMethod::Deflated)
}

fn stored() -> SimpleFileOptions {
    SimpleFileOptions::default().compression_method(CompressionMethod::Stored)
}

/// A ZIP of `files` in order, written by the zip crate.
fn zip_of(files: &[(&str, &[u8])], options: SimpleFileOptions) -> Vec<u8> {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in files {
        w.start_file(*name, options).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

const RES1: &[u8] = b"<html><body>resource one</body></html>\n";
const RES2: &[u8] = b"{\"resource\": 2, \"text\": \"two two two two two two two\"}\n";

/// A normal 1.1 Resource Dump package: manifest + two bitstreams, md5 and sha-256 declared.
fn normal_package() -> Vec<u8> {
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            item("http://example.com/res1", "/resources/res1", RES1),
            item("http://example.com/res2", "/resources/res2", RES2),
        ],
    );
    zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("resources/res1", RES1),
            ("resources/res2", RES2),
        ],
        deflated(),
    )
}

/// Byte offsets of every occurrence of `needle`.
pub(crate) fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

/// Replace every occurrence of an entry name (local and central header) by another of the
/// same length: how hostile names the writer would refuse are made.
pub(crate) fn rename_entry(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let at = find_all(bytes, from);
    assert!(!at.is_empty(), "{from:?} not found");
    for i in at {
        bytes[i..i + to.len()].copy_from_slice(to);
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Headers {
    Local,
    Central,
    Both,
}

/// Set the uncompressed-size field of entry `name` (APPNOTE 4.3.7: offset 22 in the local
/// header, 4.3.12: offset 24 in the central one).
pub(crate) fn patch_uncompressed_size(bytes: &mut [u8], name: &[u8], size: u32, which: Headers) {
    let mut patched = 0;
    for at in find_all(bytes, name) {
        if at >= 30 && bytes[at - 30..at - 26] == *b"PK\x03\x04" && which != Headers::Central {
            bytes[at - 30 + 22..at - 30 + 26].copy_from_slice(&size.to_le_bytes());
            patched += 1;
        }
        if at >= 46 && bytes[at - 46..at - 42] == *b"PK\x01\x02" && which != Headers::Local {
            bytes[at - 46 + 24..at - 46 + 28].copy_from_slice(&size.to_le_bytes());
            patched += 1;
        }
    }
    let want = if which == Headers::Both { 2 } else { 1 };
    assert_eq!(patched, want, "headers of {name:?}");
}

fn stage_ok(p: &mut Package, i: usize, staging: &Path) -> StagedBitstream {
    match p.stage(i, staging) {
        Ok(Some(s)) => s,
        other => panic!("entry {i}: {other:?}"),
    }
}

fn entry_error(p: &mut Package, i: usize, staging: &Path) -> (String, EntryErrorKind) {
    match p.stage(i, staging) {
        Err(StageError::Entry(e)) => {
            let shown = e.to_string();
            (shown, e.kind)
        }
        other => panic!("entry {i}: expected an entry error, got {other:?}"),
    }
}

fn package_error(p: &mut Package, i: usize, staging: &Path) -> DumpError {
    match p.stage(i, staging) {
        Err(StageError::Package(e)) => *e,
        other => panic!("entry {i}: expected a package error, got {other:?}"),
    }
}

fn refused(r: Result<Package, DumpError>) -> DumpError {
    match r {
        Ok(p) => panic!("package accepted: {p:?}"),
        Err(e) => {
            assert_eq!(e.package(), PACKAGE_URL);
            assert!(e.to_string().starts_with(PACKAGE_URL), "{e}");
            e
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Packages that must be read.

#[test]
fn resource_dump_1_1_with_md5_and_sha256() {
    let mut fx = Fixture::new();
    let mut p = fx.open(&normal_package()).unwrap();
    let h = p.manifest_header();
    assert_eq!(h.capability(), Some(Capability::ResourceDumpManifest));
    assert_eq!(h.syntax, Syntax::V1);
    assert_eq!(p.entries().len(), 2);
    let e = &p.entries()[1];
    assert_eq!(e.loc.as_str(), "http://example.com/res2");
    assert_eq!(e.path.as_deref(), Some("/resources/res2"));
    assert_eq!(e.entry_name.as_deref(), Some("resources/res2"));
    assert_eq!(e.length, Some(RES2.len() as u64));
    assert_eq!(e.hash.len(), 2);
    assert_eq!(e.media_type.as_deref(), Some("text/plain"));
    assert!(!e.is_missing() && !e.is_deleted());
    assert!(p.extras().is_empty());
    assert!(p.warnings().is_empty(), "{:?}", p.warnings());

    let staged = p.stage_all(&fx.staging).unwrap();
    let staged: Vec<StagedBitstream> = staged.into_iter().map(|r| r.unwrap().unwrap()).collect();
    for (s, data) in staged.iter().zip([RES1, RES2]) {
        assert_eq!(std::fs::read(&s.path).unwrap(), data);
        assert_eq!(s.computed, computed(data));
        assert_eq!(s.path.parent(), Some(fx.staging.as_path()));
    }
    assert_eq!(staged[0].entry_name, "resources/res1");
    assert_eq!(fx.staged_names().len(), 2);
}

#[test]
fn stored_entries_and_paths_without_leading_slash() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            item("http://example.com/a", "fd8/a.json", RES1),
            item("http://example.com/b", "/b", RES2),
        ],
    );
    let bytes = zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("fd8/a.json", RES1),
            ("b", RES2),
        ],
        stored(),
    );
    let mut p = fx.open(&bytes).unwrap();
    assert_eq!(stage_ok(&mut p, 0, &fx.staging).computed, computed(RES1));
    assert_eq!(stage_ok(&mut p, 1, &fx.staging).computed, computed(RES2));
}

#[test]
fn draft_2012_manifest_with_rs_path() {
    use base64::Engine;
    let mut fx = Fixture::new();
    let fixity = |data: &[u8]| {
        base64::engine::general_purpose::STANDARD
            .encode(hex::decode(computed(data).md5_hex).unwrap())
    };
    // ResourceSync 2012 alpha draft §4.2.1, Example 4.2, with real digests and sizes.
    let m = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
   <xhtml:meta name="DCTERMS.modified" content="2012-08-08T16:30:00Z"/>
   <url>
      <loc>http://example.com/res1</loc>
      <lastmod>2012-08-08T08:15:00Z</lastmod>
      <rs:fixity type="md5">{}</rs:fixity>
      <rs:size>{}</rs:size>
      <rs:mimetype>text/html; charset=utf-8</rs:mimetype>
      <rs:path>resources/res1</rs:path>
   </url>
   <url>
      <loc>http://example.com/res2</loc>
      <lastmod>2012-08-08T13:22:00Z</lastmod>
      <rs:fixity type="md5">{}</rs:fixity>
      <rs:size>{}</rs:size>
      <rs:mimetype>application/json</rs:mimetype>
      <rs:path>resources/res2</rs:path>
   </url>
</urlset>
"#,
        fixity(RES1),
        RES1.len(),
        fixity(RES2),
        RES2.len()
    );
    let bytes = zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("resources/res1", RES1),
            ("resources/res2", RES2),
        ],
        deflated(),
    );
    let mut p = fx.open(&bytes).unwrap();
    assert_eq!(p.manifest_header().capability(), None);
    assert_eq!(p.manifest_header().syntax, Syntax::Alpha2012);
    let e = &p.entries()[0];
    assert_eq!(e.path.as_deref(), Some("/resources/res1"));
    assert_eq!(e.entry_name.as_deref(), Some("resources/res1"));
    assert_eq!(e.media_type.as_deref(), Some("text/html; charset=utf-8"));
    assert_eq!(
        e.hash[0].hex.as_deref(),
        Some(computed(RES1).md5_hex.as_str())
    );
    assert_eq!(stage_ok(&mut p, 0, &fx.staging).computed, computed(RES1));
    assert_eq!(stage_ok(&mut p, 1, &fx.staging).computed, computed(RES2));
}

#[test]
fn change_dump_with_a_deletion_and_two_bitstreams_for_one_uri() {
    let mut fx = Fixture::new();
    let v1: &[u8] = b"<p>res7 version 1</p>\n";
    let v2: &[u8] = b"<p>res7 version 2, longer</p>\n";
    let mut items = vec![
        item("http://example.com/res7", "/changes/res7.html", v1),
        item("http://example.com/res9", "/changes/res9.json", RES2),
        Item {
            loc: "http://example.com/res5",
            change: Some("deleted"),
            path: None,
            declared: None,
        },
        item("http://example.com/res7", "/changes/res7-v2.html", v2),
    ];
    for (it, change) in items
        .iter_mut()
        .zip(["created", "updated", "deleted", "updated"])
    {
        it.change = Some(change);
    }
    let m = manifest(
        r#"<rs:md capability="changedump-manifest" from="2024-05-01T00:00:00Z" until="2024-05-03T00:00:00Z"/>"#,
        &items,
    );
    let bytes = zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("changes/res7.html", v1),
            ("changes/res7-v2.html", v2),
            ("changes/res9.json", RES2),
        ],
        deflated(),
    );
    let mut p = fx.open(&bytes).unwrap();
    assert_eq!(
        p.manifest_header().capability(),
        Some(Capability::ChangeDumpManifest)
    );
    let changes: Vec<(String, Option<Change>)> = p
        .entries()
        .iter()
        .map(|e| (e.loc.to_string(), e.change))
        .collect();
    assert_eq!(
        changes,
        [
            ("http://example.com/res7".into(), Some(Change::Created)),
            ("http://example.com/res9".into(), Some(Change::Updated)),
            ("http://example.com/res5".into(), Some(Change::Deleted)),
            ("http://example.com/res7".into(), Some(Change::Updated)),
        ]
    );
    let deleted = &p.entries()[2];
    assert!(deleted.is_deleted() && deleted.entry_name.is_none() && !deleted.is_missing());
    assert!(deleted.event_time().is_some());

    let results = p.stage_all(&fx.staging).unwrap();
    assert!(matches!(results[2], Ok(None)));
    let first = results[0].as_ref().unwrap().as_ref().unwrap();
    let last = results[3].as_ref().unwrap().as_ref().unwrap();
    assert_eq!(std::fs::read(&first.path).unwrap(), v1);
    assert_eq!(std::fs::read(&last.path).unwrap(), v2);
    assert_eq!(fx.staged_names().len(), 3);
}

#[test]
fn zip64_package() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            item("http://example.com/res1", "/resources/res1", RES1),
            item("http://example.com/res2", "/resources/res2", RES2),
        ],
    );
    let bytes = zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("resources/res1", RES1),
            ("resources/res2", RES2),
        ],
        deflated().large_file(true),
    );
    // ZIP64: sizes in the headers are 0xFFFFFFFF, the real ones in the 0x0001 extra field.
    let local = find_all(&bytes, b"PK\x03\x04")[1];
    assert_eq!(bytes[local + 18..local + 26], [0xFF; 8]);
    let mut p = fx.open(&bytes).unwrap();
    assert_eq!(stage_ok(&mut p, 0, &fx.staging).computed, computed(RES1));
    assert_eq!(stage_ok(&mut p, 1, &fx.staging).computed, computed(RES2));
}

#[test]
#[cfg_attr(
    missing = "corpus",
    ignore = "../shared/corpus is not beside the checkout"
)]
fn real_package_from_the_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    let zip = dir.join("resync-client_bitstream-package.zip");
    assert!(zip.is_file(), "{} is missing", zip.display());
    let fx = Fixture::new();
    let url = Url::parse("http://corpus.invalid/resync-client_bitstream-package.zip").unwrap();
    let mut p = Package::open(&zip, &url, DumpLimits::default(), ReadOptions::default()).unwrap();
    assert_eq!(
        p.manifest_header().capability(),
        Some(Capability::ResourceDumpManifest)
    );
    // The manifest in the ZIP says `/resources/res1`; the ZIP stores `resources/res1`.
    let names: Vec<(&str, Option<&str>, Option<&str>)> = p
        .entries()
        .iter()
        .map(|e| (e.loc.as_str(), e.path.as_deref(), e.entry_name.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            (
                "http://example.com/res1",
                Some("/resources/res1"),
                Some("resources/res1")
            ),
            (
                "http://example.com/res2",
                Some("/resources/res2"),
                Some("resources/res2")
            ),
        ]
    );
    assert!(p.extras().is_empty());
    // The copy of the manifest beside the package is the same document.
    let copy = std::fs::read(dir.join("resync-client_manifest.xml")).unwrap();
    let mut r = rsmirror::rs::sitemap::open(&copy[..], &url, ReadOptions::default()).unwrap();
    let mut n = 0;
    while let Some(e) = r.next_entry().unwrap() {
        assert_eq!(e.loc, p.entries()[n].loc);
        assert_eq!(e.md.hash, p.entries()[n].hash);
        n += 1;
    }
    assert_eq!(n, 2);
    // Staging verifies each bitstream against the manifest's md5.
    let a = stage_ok(&mut p, 0, &fx.staging);
    let b = stage_ok(&mut p, 1, &fx.staging);
    assert_eq!(a.computed.md5_hex, "51b99b46c9980623b36b27e06a7e4a46");
    assert_eq!(a.computed.length, 446);
    assert_eq!(b.computed.md5_hex, "6205d276e0c120eb4bac47c14a8297d8");
    assert_eq!(b.computed.length, 447);
}

// ---------------------------------------------------------------------------------------------
// Per-entry failures: that resource fails, the others land.

#[test]
fn missing_bitstream_fails_that_resource_only() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            item("http://example.com/res1", "/resources/res1", RES1),
            item("http://example.com/gone", "/resources/gone", RES2),
            item("http://example.com/res2", "/resources/res2", RES2),
        ],
    );
    let bytes = zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("resources/res1", RES1),
            ("resources/res2", RES2),
        ],
        deflated(),
    );
    let mut p = fx.open(&bytes).unwrap();
    assert!(p.entries()[1].is_missing());
    let results = p.stage_all(&fx.staging).unwrap();
    assert!(results[0].is_ok() && results[2].is_ok());
    let e = results[1].as_ref().unwrap_err();
    assert!(
        matches!(&e.kind, EntryErrorKind::Missing { entry } if entry == "resources/gone"),
        "{e}"
    );
    assert_eq!(e.loc, "http://example.com/gone");
    assert_eq!(
        e.to_string(),
        format!("{PACKAGE_URL}: manifest.xml line 10 (http://example.com/gone): bitstream \"resources/gone\" is not in the package")
    );
    assert!(!p.is_refused());
    assert_eq!(fx.staged_names().len(), 2);
}

#[test]
fn extra_entries_are_ignored_and_listed() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[item("http://example.com/res1", "/resources/res1", RES1)],
    );
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    w.add_directory("resources/", deflated()).unwrap();
    for (name, data) in [
        ("manifest.xml", m.as_bytes()),
        ("resources/res1", RES1),
        ("resources/unlisted", RES2),
        ("README.txt", b"hello".as_slice()),
    ] {
        w.start_file(name, deflated()).unwrap();
        w.write_all(data).unwrap();
    }
    let bytes = w.finish().unwrap().into_inner();
    let mut p = fx.open(&bytes).unwrap();
    assert_eq!(p.extras(), ["resources/unlisted", "README.txt"]);
    stage_ok(&mut p, 0, &fx.staging);
    assert_eq!(fx.staged_names().len(), 1);
}

#[test]
fn length_and_digest_mismatches_fail_that_resource() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            // Declared for other bytes of the same length: the digests disagree.
            Item {
                declared: Some(b"<html><body>resource ONE</body></html>\n".as_slice()),
                ..item("http://example.com/res1", "/resources/res1", RES1)
            },
            // Declared for other bytes of another length.
            Item {
                declared: Some(b"short".as_slice()),
                ..item("http://example.com/res2", "/resources/res2", RES2)
            },
        ],
    );
    let bytes = zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("resources/res1", RES1),
            ("resources/res2", RES2),
        ],
        deflated(),
    );
    let mut p = fx.open(&bytes).unwrap();
    let (shown, kind) = entry_error(&mut p, 0, &fx.staging);
    match kind {
        EntryErrorKind::DigestMismatch {
            algorithm, actual, ..
        } => {
            assert_eq!(algorithm, "md5");
            assert_eq!(actual, computed(RES1).md5_hex);
        }
        k => panic!("{k}"),
    }
    assert!(shown.contains("md5 mismatch"), "{shown}");
    let (_, kind) = entry_error(&mut p, 1, &fx.staging);
    assert!(
        matches!(kind, EntryErrorKind::LengthMismatch { expected: 5, actual, .. } if actual == RES2.len() as u64),
        "{kind}"
    );
    assert!(fx.staged_names().is_empty(), "failed entries leave nothing");
}

/// The offset of entry `name`'s data (after its local header, APPNOTE 4.3.7).
fn data_offset(bytes: &[u8], name: &[u8]) -> usize {
    for at in find_all(bytes, name) {
        if at >= 30 && bytes[at - 30..at - 26] == *b"PK\x03\x04" {
            let extra = u16::from_le_bytes([bytes[at - 2], bytes[at - 1]]) as usize;
            return at + name.len() + extra;
        }
    }
    panic!("no local header for {name:?}");
}

#[test]
fn crc_mismatch_fails_that_resource() {
    let mut fx = Fixture::new();
    let mut bytes = normal_package();
    // Same CRC in both headers, wrong for the data.
    for at in find_all(&bytes, b"resources/res2") {
        for (sig, sig_at, crc_at) in [(b"PK\x03\x04", 30, 14), (b"PK\x01\x02", 46, 16)] {
            if at >= sig_at && bytes[at - sig_at..at - sig_at + 4] == *sig {
                bytes[at - sig_at + crc_at] ^= 0xFF;
            }
        }
    }
    let mut p = fx.open(&bytes).unwrap();
    stage_ok(&mut p, 0, &fx.staging);
    let (_, kind) = entry_error(&mut p, 1, &fx.staging);
    assert!(
        matches!(&kind, EntryErrorKind::Crc { entry, .. } if entry == "resources/res2"),
        "{kind}"
    );
    assert!(!p.is_refused());
    assert_eq!(fx.staged_names().len(), 1);
}

#[test]
fn corrupt_deflate_data_fails_that_resource() {
    let mut fx = Fixture::new();
    let mut bytes = normal_package();
    // RFC 1951 §3.2.3: BFINAL = 1, BTYPE = 11 is a reserved (invalid) block type.
    let at = data_offset(&bytes, b"resources/res2");
    bytes[at] = 0b111;
    let mut p = fx.open(&bytes).unwrap();
    let (shown, kind) = entry_error(&mut p, 1, &fx.staging);
    assert!(
        matches!(&kind, EntryErrorKind::Corrupt { entry, .. } if entry == "resources/res2"),
        "{kind}"
    );
    assert!(shown.contains("corrupt data"), "{shown}");
    stage_ok(&mut p, 0, &fx.staging);
}

#[test]
fn streamed_zip_with_data_descriptors() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            item("http://example.com/res1", "/resources/res1", RES1),
            item("http://example.com/res2", "/resources/res2", RES2),
        ],
    );
    let mut w = ZipWriter::new_stream(Vec::new());
    for (name, data) in [
        ("manifest.xml", m.as_bytes()),
        ("resources/res1", RES1),
        ("resources/res2", RES2),
    ] {
        w.start_file(name, deflated()).unwrap();
        w.write_all(data).unwrap();
    }
    let bytes = w.finish().unwrap().into_inner();
    // General-purpose flag bit 3: sizes and CRC follow the data (APPNOTE 4.3.9).
    let local = find_all(&bytes, b"PK\x03\x04")[1];
    assert_eq!(bytes[local + 6] & 0b1000, 0b1000);
    let mut p = fx.open(&bytes).unwrap();
    assert_eq!(stage_ok(&mut p, 0, &fx.staging).computed, computed(RES1));
    assert_eq!(stage_ok(&mut p, 1, &fx.staging).computed, computed(RES2));
}

#[test]
fn entry_without_path_fails_that_resource() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            Item {
                path: None,
                ..item("http://example.com/nopath", "", RES1)
            },
            item("http://example.com/res1", "/resources/res1", RES1),
        ],
    );
    let bytes = zip_of(
        &[("manifest.xml", m.as_bytes()), ("resources/res1", RES1)],
        deflated(),
    );
    let mut p = fx.open(&bytes).unwrap();
    let (_, kind) = entry_error(&mut p, 0, &fx.staging);
    assert!(matches!(kind, EntryErrorKind::NoPath), "{kind}");
    stage_ok(&mut p, 1, &fx.staging);
}

// ---------------------------------------------------------------------------------------------
// Refused packages: one test per hostile case, each with the exact error.

#[test]
fn unsupported_formats_are_reported_not_guessed_at() {
    let mut fx = Fixture::new();
    let cases: &[(&[u8], PackageFormat, &str)] = &[
        (
            b"\xFD7zXZ\x00\x00\x04\xE6\xD6\xB4\x46",
            PackageFormat::Xz,
            "xz (starts FD 37 7A 58 5A 00 00 04)",
        ),
        (
            b"\x1F\x8B\x08\x00",
            PackageFormat::Gzip,
            "gzip (starts 1F 8B 08 00)",
        ),
        (b"", PackageFormat::Empty, "empty file"),
        (
            b"<?xml",
            PackageFormat::Unknown,
            "unknown format (starts 3C 3F 78 6D 6C)",
        ),
    ];
    for (bytes, format, detected_text) in cases {
        assert_eq!(PackageFormat::sniff(bytes), *format);
        match refused(fx.open(bytes)) {
            DumpError::UnsupportedFormat { detected, .. } => assert_eq!(detected, *detected_text),
            e => panic!("{e}"),
        }
    }
    let mut tar = vec![0u8; 1024];
    tar[..12].copy_from_slice(b"manifest.xml");
    tar[257..263].copy_from_slice(b"ustar\0");
    let e = refused(fx.open(&tar));
    assert!(
        matches!(&e, DumpError::UnsupportedFormat { detected, .. } if detected.starts_with("tar ")),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!("{PACKAGE_URL}: unsupported package format: tar (starts 6D 61 6E 69 66 65 73 74); only ZIP packages are read")
    );
}

#[test]
fn truncated_zip_is_refused() {
    let mut fx = Fixture::new();
    let bytes = normal_package();
    let e = refused(fx.open(&bytes[..bytes.len() - 30]));
    assert!(matches!(e, DumpError::NotZip { .. }), "{e}");
}

#[test]
fn missing_manifest() {
    let mut fx = Fixture::new();
    let bytes = zip_of(&[("resources/res1", RES1)], deflated());
    let e = refused(fx.open(&bytes));
    assert!(matches!(e, DumpError::MissingManifest { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!("{PACKAGE_URL}: no manifest.xml at the package root")
    );
    // Not at the root is not there.
    let m = manifest(RESOURCEDUMP_MD, &[]);
    let bytes = zip_of(&[("dump/manifest.xml", m.as_bytes())], deflated());
    assert!(matches!(
        refused(fx.open(&bytes)),
        DumpError::MissingManifest { .. }
    ));
    // An empty ZIP (50 4B 05 06) is a ZIP without a manifest.
    let empty = zip_of(&[], deflated());
    assert_eq!(PackageFormat::sniff(&empty), PackageFormat::EmptyZip);
    assert!(matches!(
        refused(fx.open(&empty)),
        DumpError::MissingManifest { .. }
    ));
}

#[test]
fn manifest_of_the_wrong_kind() {
    let mut fx = Fixture::new();
    let m = manifest(
        r#"<rs:md capability="resourcelist" at="2024-05-01T06:00:00Z"/>"#,
        &[],
    );
    let bytes = zip_of(&[("manifest.xml", m.as_bytes())], deflated());
    let e = refused(fx.open(&bytes));
    assert!(
        matches!(&e, DumpError::WrongCapability { found, .. } if found == "resourcelist"),
        "{e}"
    );
    let bytes = zip_of(&[("manifest.xml", b"<urlset><url>".as_slice())], deflated());
    let e = refused(fx.open(&bytes));
    assert!(matches!(e, DumpError::Manifest { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("{PACKAGE_URL}#manifest.xml: line 1:")),
        "{e}"
    );
}

/// A package whose manifest names `path` for one bitstream stored as `res1`.
fn package_with_manifest_path(path: &str) -> Vec<u8> {
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            item("http://example.com/res1", "/res1", RES1),
            item("http://example.com/evil", path, RES2),
        ],
    );
    zip_of(
        &[("manifest.xml", m.as_bytes()), ("res1", RES1)],
        deflated(),
    )
}

fn assert_manifest_path_refused(path: &str, reason: PathError) {
    let mut fx = Fixture::new();
    let e = refused(fx.open(&package_with_manifest_path(path)));
    match &e {
        DumpError::UnsafeManifestPath {
            line,
            loc,
            path: p,
            reason: r,
            ..
        } => {
            assert_eq!(
                (*line, loc.as_str(), p.as_str()),
                (10, "http://example.com/evil", path)
            );
            assert_eq!(*r, reason, "{e}");
        }
        e => panic!("{path:?}: {e}"),
    }
}

#[test]
fn dotdot_in_manifest_path() {
    assert_manifest_path_refused("/../canary/keep.txt", PathError::ParentDir);
    assert_manifest_path_refused("/resources/../../canary/x", PathError::ParentDir);
    let mut fx = Fixture::new();
    let e = refused(fx.open(&package_with_manifest_path("/../canary/keep.txt")));
    assert_eq!(
        e.to_string(),
        format!("{PACKAGE_URL}: manifest.xml line 10 (http://example.com/evil): path \"/../canary/keep.txt\" refused: `..` component")
    );
}

#[test]
fn absolute_manifest_path() {
    assert_manifest_path_refused("//etc/passwd", PathError::Absolute);
}

#[test]
fn drive_letter_in_manifest_path() {
    assert_manifest_path_refused("/C:/Windows/win.ini", PathError::DriveLetter);
    assert_manifest_path_refused("c:evil", PathError::DriveLetter);
}

#[test]
fn backslash_in_manifest_path() {
    assert_manifest_path_refused("/..\\canary\\keep.txt", PathError::Backslash);
}

#[test]
fn nul_in_manifest_path() {
    // XML 1.0 cannot carry NUL even as a character reference: the manifest is malformed.
    let mut fx = Fixture::new();
    let e = refused(fx.open(&package_with_manifest_path("/res1\0.txt")));
    assert!(matches!(e, DumpError::Manifest { .. }), "{e}");
}

#[test]
fn deletion_with_a_hostile_path_still_refuses_the_package() {
    let mut fx = Fixture::new();
    let m = manifest(
        r#"<rs:md capability="changedump-manifest" from="2024-05-01T00:00:00Z"/>"#,
        &[Item {
            loc: "http://example.com/res5",
            change: Some("deleted"),
            path: Some("/../x"),
            declared: None,
        }],
    );
    let bytes = zip_of(&[("manifest.xml", m.as_bytes())], deflated());
    assert!(matches!(
        refused(fx.open(&bytes)),
        DumpError::UnsafeManifestPath {
            reason: PathError::ParentDir,
            ..
        }
    ));
}

/// A normal package plus one entry whose name is `safe` in the writer and `evil` in the
/// file (same length), so the zip crate's writer never sees the hostile name.
fn package_with_entry_named(safe: &[u8], evil: &[u8]) -> Vec<u8> {
    let m = manifest(
        RESOURCEDUMP_MD,
        &[item("http://example.com/res1", "/resources/res1", RES1)],
    );
    let mut bytes = zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("resources/res1", RES1),
            (std::str::from_utf8(safe).unwrap(), b"pwned\n"),
        ],
        deflated(),
    );
    rename_entry(&mut bytes, safe, evil);
    bytes
}

fn assert_entry_name_refused(safe: &[u8], evil: &[u8], reason: PathError) {
    let mut fx = Fixture::new();
    let e = refused(fx.open(&package_with_entry_named(safe, evil)));
    match &e {
        DumpError::UnsafeEntryName {
            entry, reason: r, ..
        } => {
            assert_eq!(entry.as_bytes(), evil);
            assert_eq!(*r, reason, "{e}");
        }
        e => panic!("{evil:?}: {e}"),
    }
}

#[test]
fn dotdot_in_entry_name() {
    assert_entry_name_refused(b"xx/canary/pwned", b"../canary/pwned", PathError::ParentDir);
    let mut fx = Fixture::new();
    let e = refused(fx.open(&package_with_entry_named(
        b"xx/canary/pwned",
        b"../canary/pwned",
    )));
    assert_eq!(
        e.to_string(),
        format!("{PACKAGE_URL}: entry \"../canary/pwned\" refused: `..` component")
    );
}

#[test]
fn absolute_entry_name() {
    assert_entry_name_refused(b"xtmp/pwned", b"/tmp/pwned", PathError::Absolute);
}

#[test]
fn drive_letter_in_entry_name() {
    assert_entry_name_refused(b"xx/pwned.txt", b"C:/pwned.txt", PathError::DriveLetter);
}

#[test]
fn backslash_in_entry_name() {
    assert_entry_name_refused(
        b"xxxcanaryxpwned",
        b"..\\canary\\pwned",
        PathError::Backslash,
    );
}

#[test]
fn nul_in_entry_name() {
    assert_entry_name_refused(b"pwnedXtxt", b"pwned\0txt", PathError::Nul);
}

#[test]
fn symlink_entry() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[item(
            "http://example.com/res1",
            "/resources/res1",
            b"/etc/passwd",
        )],
    );
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    w.start_file("manifest.xml", deflated()).unwrap();
    w.write_all(m.as_bytes()).unwrap();
    w.add_symlink("resources/res1", "/etc/passwd", deflated())
        .unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let e = refused(fx.open(&bytes));
    assert!(
        matches!(&e, DumpError::SymlinkEntry { entry, .. } if entry == "resources/res1"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!("{PACKAGE_URL}: entry \"resources/res1\" refused: symbolic link")
    );
}

#[test]
fn duplicate_entry_names() {
    let mut fx = Fixture::new();
    let m = manifest(
        RESOURCEDUMP_MD,
        &[item("http://example.com/res1", "/resources/res1", RES1)],
    );
    let mut bytes = zip_of(
        &[
            ("manifest.xml", m.as_bytes()),
            ("resources/res1", RES1),
            ("resources/resX", b"the other res1\n"),
        ],
        deflated(),
    );
    // The writer refuses a second "resources/res1"; rename the third entry in both headers.
    rename_entry(&mut bytes, b"resources/resX", b"resources/res1");
    let e = refused(fx.open(&bytes));
    assert!(
        matches!(&e, DumpError::DuplicateEntry { entry, .. } if entry == "resources/res1"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!("{PACKAGE_URL}: entry \"resources/res1\" refused: the name occurs more than once")
    );
}

/// A raw DEFLATE stream (RFC 1951) of `len` zero bytes in one fixed-Huffman block: a literal
/// 0, then matches of length 258 at distance 1 (13 bits each), then literals. Written by hand
/// because deflating 200 MB in a debug build takes the better part of a minute.
fn deflated_zeros(len: u64) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u32,
        n: u32,
    }
    impl Bits {
        /// Header bits and extra bits go least-significant bit first ...
        fn put(&mut self, value: u32, count: u32) {
            self.acc |= value << self.n;
            self.n += count;
            while self.n >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
        /// ... Huffman codes most-significant bit first.
        fn code(&mut self, code: u32, len: u32) {
            self.put(code.reverse_bits() >> (32 - len), len);
        }
    }
    const LITERAL_0: (u32, u32) = (0b0011_0000, 8);
    const LENGTH_258: (u32, u32) = (0b1100_0101, 8);
    const DISTANCE_1: (u32, u32) = (0, 5);
    const END_OF_BLOCK: (u32, u32) = (0, 7);
    let mut b = Bits {
        out: Vec::with_capacity((len / 258 * 13 / 8) as usize + 16),
        acc: 0,
        n: 0,
    };
    b.put(1, 1); // BFINAL
    b.put(1, 2); // BTYPE = 01, fixed Huffman codes
    let mut left = len;
    if left > 0 {
        b.code(LITERAL_0.0, LITERAL_0.1);
        left -= 1;
    }
    while left >= 258 {
        b.code(LENGTH_258.0, LENGTH_258.1);
        b.code(DISTANCE_1.0, DISTANCE_1.1);
        left -= 258;
    }
    for _ in 0..left {
        b.code(LITERAL_0.0, LITERAL_0.1);
    }
    b.code(END_OF_BLOCK.0, END_OF_BLOCK.1);
    if b.n > 0 {
        b.out.push(b.acc as u8);
    }
    b.out
}

#[test]
fn deflated_zeros_inflate_to_zeros_with_their_crc() {
    use std::io::Read;
    for len in [0u32, 1, 2, 258, 259, 1000, 1 << 20] {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(&deflated_zeros(u64::from(len))[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out.len() as u32, len);
        assert!(out.iter().all(|b| *b == 0));
        assert_eq!(crc32_of_zeros(len), crc32(&out), "{len}");
    }
}

/// One entry of a ZIP written by [`raw_zip`].
struct RawEntry {
    name: String,
    /// 0 stored, 8 deflated.
    method: u16,
    crc32: u32,
    size: u32,
    data: Vec<u8>,
}

impl RawEntry {
    fn stored(name: &str, data: &[u8]) -> RawEntry {
        RawEntry {
            name: name.into(),
            method: 0,
            crc32: crc32(data),
            size: data.len() as u32,
            data: data.to_vec(),
        }
    }

    /// `len` zeros, deflated; the CRC is computed, so the headers tell the truth.
    fn zeros(name: &str, len: u32) -> RawEntry {
        RawEntry {
            name: name.into(),
            method: 8,
            crc32: crc32_of_zeros(len),
            size: len,
            data: deflated_zeros(u64::from(len)),
        }
    }
}

/// CRC-32 of `len` zero bytes, by combining the CRCs of power-of-two runs (hashing 200 MB in
/// a debug build takes seconds).
fn crc32_of_zeros(len: u32) -> u32 {
    let mut powers = Vec::new();
    let mut one = flate2::Crc::new();
    one.update(&[0]);
    powers.push(one);
    for k in 1..32 {
        let mut c = flate2::Crc::new();
        c.combine(&powers[k - 1]);
        c.combine(&powers[k - 1]);
        powers.push(c);
    }
    let mut crc = flate2::Crc::new();
    for (k, power) in powers.iter().enumerate() {
        if len >> k & 1 == 1 {
            crc.combine(power);
        }
    }
    crc.sum()
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(data);
    crc.sum()
}

/// A plain ZIP (APPNOTE 4.3: local headers and data, central directory, end record), for
/// entries whose compressed bytes we make ourselves.
fn raw_zip(entries: &[RawEntry]) -> Vec<u8> {
    fn u16le(v: &mut Vec<u8>, x: u16) {
        v.extend_from_slice(&x.to_le_bytes());
    }
    fn u32le(v: &mut Vec<u8>, x: u32) {
        v.extend_from_slice(&x.to_le_bytes());
    }
    const DOS_DATE_1980_01_01: u16 = 0x21;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for e in entries {
        let offset = out.len() as u32;
        let name = e.name.as_bytes();
        out.extend_from_slice(b"PK\x03\x04");
        for v in [20, 0, e.method, 0, DOS_DATE_1980_01_01] {
            u16le(&mut out, v);
        }
        for v in [e.crc32, e.data.len() as u32, e.size] {
            u32le(&mut out, v);
        }
        u16le(&mut out, name.len() as u16);
        u16le(&mut out, 0);
        out.extend_from_slice(name);
        out.extend_from_slice(&e.data);

        central.extend_from_slice(b"PK\x01\x02");
        for v in [0x031E, 20, 0, e.method, 0, DOS_DATE_1980_01_01] {
            u16le(&mut central, v);
        }
        for v in [e.crc32, e.data.len() as u32, e.size] {
            u32le(&mut central, v);
        }
        for v in [name.len() as u16, 0, 0, 0, 0] {
            u16le(&mut central, v);
        }
        u32le(&mut central, 0o100644 << 16);
        u32le(&mut central, offset);
        central.extend_from_slice(name);
    }
    let central_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06");
    for v in [0, 0, entries.len() as u16, entries.len() as u16] {
        u16le(&mut out, v);
    }
    u32le(&mut out, central.len() as u32);
    u32le(&mut out, central_offset);
    u16le(&mut out, 0);
    out
}

/// `len` bytes of zeros as one deflated entry, with a manifest naming it after a good one.
fn zeros_package(len: u32) -> Vec<u8> {
    let m = manifest(
        RESOURCEDUMP_MD,
        &[
            item("http://example.com/res1", "/resources/res1", RES1),
            Item {
                declared: None,
                ..item("http://example.com/zeros", "/zeros", b"")
            },
        ],
    );
    raw_zip(&[
        RawEntry::stored("manifest.xml", m.as_bytes()),
        RawEntry::stored("resources/res1", RES1),
        RawEntry::zeros("zeros", len),
    ])
}

const BOMB_BYTES: u32 = 200 << 20;

fn bomb() -> &'static [u8] {
    static BOMB: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BOMB.get_or_init(|| zeros_package(BOMB_BYTES))
}

#[test]
fn zip_bomb_with_honest_headers_is_refused_before_reading() {
    let mut fx = Fixture::new();
    let bytes = bomb();
    assert!(bytes.len() < 2 << 20, "{} bytes", bytes.len());
    let start = Instant::now();
    let e = refused(fx.open(bytes));
    assert!(start.elapsed() < Duration::from_secs(2));
    match &e {
        DumpError::EntryTooLarge {
            entry,
            declared,
            compressed,
            cap,
            ..
        } => {
            assert_eq!(entry, "zeros");
            assert_eq!(*declared, BOMB_BYTES as u64);
            assert_eq!(*cap, (100 * compressed).max(1 << 20));
        }
        e => panic!("{e}"),
    }
    // The ratio is configurable: a higher one lets the entry through.
    let limits = DumpLimits {
        max_ratio: 10_000,
        ..DumpLimits::default()
    };
    assert!(fx.open_with(bytes, limits).is_ok());
}

#[test]
fn zip_bomb_with_lying_headers_is_stopped_while_reading() {
    let mut fx = Fixture::new();
    let mut bytes = bomb().to_vec();
    // Both headers claim 4096 bytes: within the cap, so the package opens ...
    patch_uncompressed_size(&mut bytes, b"zeros", 4096, Headers::Both);
    let mut p = fx.open(&bytes).unwrap();
    stage_ok(&mut p, 0, &fx.staging);
    // ... and reading stops one byte past the declared size, long before 200 MB.
    let start = Instant::now();
    let e = package_error(&mut p, 1, &fx.staging);
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(
            &e,
            DumpError::SizeMismatch { entry, declared: 4096, found: SizeFound::Longer, .. } if entry == "zeros"
        ),
        "{e}"
    );
    // The package is refused from now on, and the partial file is gone.
    assert!(p.is_refused());
    assert!(matches!(
        package_error(&mut p, 0, &fx.staging),
        DumpError::Refused { .. }
    ));
    assert_eq!(fx.staged_names().len(), 1, "only the earlier, good entry");

    // stage_all removes what it staged before the refusal.
    for f in fx.staged_names() {
        std::fs::remove_file(fx.staging.join(f)).unwrap();
    }
    let mut p = fx.open(&bytes).unwrap();
    let e = p.stage_all(&fx.staging).unwrap_err();
    assert!(matches!(e, DumpError::SizeMismatch { .. }), "{e}");
    assert!(fx.staged_names().is_empty());
}

#[test]
fn total_expansion_cap() {
    let mut fx = Fixture::new();
    // 40 entries of 1 MiB of zeros: each within the 1 MiB floor, together far over
    // 100 × the package size.
    let m = manifest(RESOURCEDUMP_MD, &[]);
    let mut entries = vec![RawEntry::stored("manifest.xml", m.as_bytes())];
    entries.extend((0..40).map(|i| RawEntry::zeros(&format!("z{i}"), 1 << 20)));
    let bytes = raw_zip(&entries);
    let e = refused(fx.open(&bytes));
    match &e {
        DumpError::PackageTooLarge {
            total,
            cap,
            package_bytes,
            ..
        } => {
            assert!(*total >= 40 << 20);
            assert_eq!(*package_bytes, bytes.len() as u64);
            assert_eq!(*cap, (100 * package_bytes).max(1 << 20));
        }
        e => panic!("{e}"),
    }
}

/// A package whose `resources/res2` headers are patched to `size`.
fn package_with_res2_size(size: u32, which: Headers) -> Vec<u8> {
    let mut bytes = normal_package();
    patch_uncompressed_size(&mut bytes, b"resources/res2", size, which);
    bytes
}

#[test]
fn header_smaller_than_the_data() {
    let mut fx = Fixture::new();
    let declared = RES2.len() as u32 - 10;
    let mut p = fx
        .open(&package_with_res2_size(declared, Headers::Both))
        .unwrap();
    let e = package_error(&mut p, 1, &fx.staging);
    assert!(
        matches!(&e, DumpError::SizeMismatch { entry, declared: d, found: SizeFound::Longer, .. }
            if entry == "resources/res2" && *d == u64::from(declared)),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!("{PACKAGE_URL}: entry \"resources/res2\" refused: its header declares {declared} bytes but the data is longer (reading stopped there)")
    );
    assert!(fx.staged_names().is_empty());
}

#[test]
fn header_larger_than_the_data() {
    let mut fx = Fixture::new();
    let declared = RES2.len() as u32 + 10;
    let mut p = fx
        .open(&package_with_res2_size(declared, Headers::Both))
        .unwrap();
    let e = package_error(&mut p, 1, &fx.staging);
    assert!(
        matches!(&e, DumpError::SizeMismatch { found: SizeFound::Shorter(n), .. } if *n == RES2.len() as u64),
        "{e}"
    );
}

#[test]
fn local_and_central_headers_that_disagree() {
    let mut fx = Fixture::new();
    let mut p = fx
        .open(&package_with_res2_size(
            RES2.len() as u32 - 10,
            Headers::Central,
        ))
        .unwrap();
    let e = package_error(&mut p, 1, &fx.staging);
    assert!(
        matches!(&e, DumpError::BrokenEntry { entry, message, .. }
            if entry == "resources/res2" && message.contains("uncompressed size mismatch")),
        "{e}"
    );
}

#[test]
fn lying_manifest_entry_refuses_the_package() {
    let mut fx = Fixture::new();
    let mut bytes = normal_package();
    let m_len = manifest(
        RESOURCEDUMP_MD,
        &[
            item("http://example.com/res1", "/resources/res1", RES1),
            item("http://example.com/res2", "/resources/res2", RES2),
        ],
    )
    .len() as u32;
    patch_uncompressed_size(&mut bytes, b"manifest.xml", m_len - 1, Headers::Both);
    let e = refused(fx.open(&bytes));
    assert!(
        matches!(&e, DumpError::SizeMismatch { entry, found: SizeFound::Longer, .. } if entry == "manifest.xml"),
        "{e}"
    );
}

#[test]
fn nothing_is_written_outside_staging() {
    let mut fx = Fixture::new();
    // Every hostile shape aimed at the canary beside staging.
    let hostile: Vec<Vec<u8>> = vec![
        package_with_manifest_path("/../canary/keep.txt"),
        package_with_manifest_path("/..\\canary\\keep.txt"),
        package_with_entry_named(b"xx/canary/keep.txt", b"../canary/keep.txt"),
        package_with_entry_named(b"xxXcanaryXkeep.txt", b"..\\canary\\keep.txt"),
        package_with_entry_named(b"xcanary/keep.txt", b"/canary/keep.txt"),
    ];
    for bytes in &hostile {
        refused(fx.open(bytes));
    }
    // A package with a symlink named like the canary, and one that reads fine.
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    w.start_file("manifest.xml", deflated()).unwrap();
    w.write_all(manifest(RESOURCEDUMP_MD, &[]).as_bytes())
        .unwrap();
    w.add_symlink("canary", "../canary", deflated()).unwrap();
    refused(fx.open(&w.finish().unwrap().into_inner()));
    let mut p = fx.open(&normal_package()).unwrap();
    p.stage_all(&fx.staging).unwrap();
    fx.assert_untouched();
}

// ---------------------------------------------------------------------------------------------
// Throughput (issue 5, acceptance 4 asks for it through the real binary; this measures the
// reader alone).

/// A Resource Dump package of `files` bitstreams totalling about `bytes`, text-like (deflates
/// about 3:1), md5 + sha-256 declared; written to `path`.
fn generate_dump(path: &Path, files: usize, bytes: u64) {
    let size = (bytes / files as u64) as usize;
    let out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut w = ZipWriter::new(out);
    let mut m = String::with_capacity(files * 300);
    m.push_str(&manifest(RESOURCEDUMP_MD, &[]).replace("</urlset>\n", ""));
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut data = Vec::with_capacity(size + 64);
    for i in 0..files {
        data.clear();
        while data.len() < size {
            // xorshift64: words from a small vocabulary, so the text deflates like XML does.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let word = [
                "<record>",
                "</record>",
                "title",
                "creator",
                "2024-05-01",
                "the",
                "of",
            ][(state % 7) as usize];
            data.extend_from_slice(word.as_bytes());
            data.extend_from_slice(format!(" {:x}\n", state >> 40).as_bytes());
        }
        data.truncate(size);
        let name = format!("r/{:03}/{i:07}.xml", i % 1000);
        w.start_file(name.as_str(), deflated()).unwrap();
        w.write_all(&data).unwrap();
        let c = computed(&data);
        m.push_str(&format!(
            "<url><loc>https://data.example.org/r/{i}</loc><rs:md path=\"/{name}\" length=\"{}\" hash=\"md5:{} sha-256:{}\"/></url>\n",
            data.len(),
            c.md5_hex,
            c.sha256_hex
        ));
    }
    m.push_str("</urlset>\n");
    w.start_file("manifest.xml", deflated()).unwrap();
    w.write_all(m.as_bytes()).unwrap();
    w.finish().unwrap().flush().unwrap();
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `cargo test --release --test it dump_reader::throughput -- --ignored --nocapture`;
/// `DUMP_FILES` and `DUMP_BYTES` change the default 100,000 files / 1 GiB.
#[test]
#[ignore]
fn throughput() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let files = env("DUMP_FILES", 100_000) as usize;
    let bytes = env("DUMP_BYTES", 1 << 30);
    let mut fx = Fixture::new();
    let path = fx.write(b"");
    let start = Instant::now();
    generate_dump(&path, files, bytes);
    let package_bytes = std::fs::metadata(&path).unwrap().len();
    println!(
        "generated {files} files, {bytes} bytes, package {package_bytes} bytes in {:.1} s",
        start.elapsed().as_secs_f64()
    );

    // unzip -p | sha256sum over the same package (page cache warm for both).
    let start = Instant::now();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("unzip -p '{}' | sha256sum", path.display()))
        .output();
    let unzip = start.elapsed().as_secs_f64();
    match out {
        Ok(o) if o.status.success() => println!(
            "unzip -p | sha256sum: {unzip:.2} s = {:.0} MB/s, {:.0} files/s",
            bytes as f64 / unzip / 1e6,
            files as f64 / unzip
        ),
        _ => println!("unzip -p | sha256sum: not available"),
    }

    // Reset the peak so that generation does not count (Linux: clear_refs 5).
    let before = peak_rss_kib();
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    println!(
        "peak RSS after generation {} MiB, after reset {} MiB",
        before / 1024,
        peak_rss_kib() / 1024
    );
    let start = Instant::now();
    let mut p = Package::open(
        &path,
        &package_url(),
        DumpLimits::default(),
        ReadOptions::default(),
    )
    .unwrap();
    let opened = start.elapsed().as_secs_f64();
    let opened_rss = peak_rss_kib();
    let staged = p.stage_all(&fx.staging).unwrap();
    let total = start.elapsed().as_secs_f64();
    assert_eq!(staged.len(), files);
    let mut staged_bytes = 0;
    for s in staged {
        let s = s.unwrap().unwrap();
        staged_bytes += s.computed.length;
        std::fs::remove_file(&s.path).unwrap();
    }
    assert_eq!(staged_bytes, bytes / files as u64 * files as u64);
    println!("peak RSS after open {} MiB", opened_rss / 1024);
    println!(
        "rs::dump open {opened:.2} s (manifest + checks), open + stage all {total:.2} s = {:.0} MB/s, {:.0} files/s, peak RSS {} MiB (md5 + sha-256, written to staging)",
        staged_bytes as f64 / total / 1e6,
        files as f64 / total,
        peak_rss_kib() / 1024
    );
    drop(p);
    // Free the space now; the fixture still expects the file.
    std::fs::write(&path, b"").unwrap();
}
