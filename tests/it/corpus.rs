//! The Sitemap reader against the corpus of real third-party documents in
//! `../shared/corpus/` (see its SOURCES.md): every XML file must read to the end with
//! `--assume-utc` semantics, with the header and entry count pinned here; the CORE documents
//! with zone-less datetimes must fail without it, naming the value. The files are read in
//! place, never copied into the project; when the folder is absent the build marks the tests
//! ignored with the reason (`build.rs`); under `CI=true` nothing is ignored, so they fail. Only the crate's public API is used.

use rsmirror::rs::document::{Capability, Change, Header, Root, Syntax};
use rsmirror::rs::sitemap::{open, ReadErrorKind, ReadOptions};
use rsmirror::rs::w3c_datetime::Zone;
use std::path::{Path, PathBuf};
use url::Url;

/// `../shared/corpus` (its tests are ignored where the build did not find it: `build.rs`).
fn corpus_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

fn doc_url(name: &str) -> Url {
    Url::parse(&format!("http://corpus.invalid/{name}")).unwrap()
}

fn assume_utc() -> ReadOptions {
    ReadOptions {
        zone: Zone::AssumeUtc,
        ..Default::default()
    }
}

/// Header and entries of one corpus file, read with `opts`.
fn read(
    dir: &Path,
    name: &str,
    opts: ReadOptions,
) -> Result<(Header, Vec<rsmirror::rs::document::Entry>), rsmirror::rs::sitemap::ReadError> {
    let file = std::fs::File::open(dir.join(name)).unwrap();
    let mut reader = open(file, &doc_url(name), opts)?;
    let mut entries = Vec::new();
    while let Some(e) = reader.next_entry()? {
        entries.push(e);
    }
    Ok((reader.header().clone(), entries))
}

/// (file, capability (alpha changeset → changelist), root, syntax, entries)
#[rustfmt::skip]
const EXPECTED: &[(&str, Option<&str>, Root, Syntax, usize)] = &[
    ("alexanarch_changelist_excerpt.xml", Some("changelist"), Root::Urlset, Syntax::V1, 20),
    ("go-resourcesync_core_changedump-manifest.xml", Some("changedump-manifest"), Root::Urlset, Syntax::V1, 3),
    ("go-resourcesync_core_changelist_datadumps.xml", Some("changelist"), Root::Urlset, Syntax::V1, 4),
    ("go-resourcesync_core_resourcelist-index.xml", Some("resourcelist"), Root::SitemapIndex, Syntax::V1, 2),
    ("go-resourcesync_core_resourcelist.xml", Some("resourcelist"), Root::Urlset, Syntax::V1, 2),
    ("go-resourcesync_resourcedump-manifest.xml", Some("resourcedump-manifest"), Root::Urlset, Syntax::V1, 2),
    ("nexarium_well-known_resourcesync", None, Root::Urlset, Syntax::Plain, 3),
    ("resourcesync-validator_sim100_resourcelist.xml", Some("resourcelist"), Root::Urlset, Syntax::V1, 112),
    ("resync-client_capability-list.xml", Some("capabilitylist"), Root::Urlset, Syntax::V1, 2),
    ("resync-client_change-list.xml", Some("changelist"), Root::Urlset, Syntax::V1, 1000),
    ("resync-client_changedump.xml", Some("changedump"), Root::Urlset, Syntax::V1, 1),
    ("resync-client_manifest.xml", Some("resourcedump-manifest"), Root::Urlset, Syntax::V1, 2),
    ("resync-client_resourcedump.xml", Some("resourcedump"), Root::Urlset, Syntax::V1, 1),
    ("resync-ruby_changedump-index.xml", Some("changedump"), Root::SitemapIndex, Syntax::V1, 3),
    ("resync_archives1_resourcesync", Some("description"), Root::Urlset, Syntax::Beta2013, 2),
    ("resync_archives_ex_3_2.xml", Some("resourcelist-archive"), Root::SitemapIndex, Syntax::V1, 2),
    ("resync_ex2_4.xml", Some("changelist"), Root::Urlset, Syntax::Alpha2012, 2),
    ("resync_ex3_6.xml", None, Root::Urlset, Syntax::Alpha2012, 2),
    ("resync_ex_5_1.xml", Some("resourcedump"), Root::Urlset, Syntax::Beta2013, 3),
    ("resync_ex_8_4.xml", Some("changelist"), Root::Urlset, Syntax::Beta2013, 2),
    ("resync_resourcesync_ex_12.xml", Some("description"), Root::Urlset, Syntax::V1, 3),
    ("resync_resourcesync_ex_14.xml", Some("resourcelist"), Root::Urlset, Syntax::V1, 2),
    ("resync_resourcesync_ex_15.xml", Some("resourcelist"), Root::SitemapIndex, Syntax::V1, 3),
    ("resync_resourcesync_ex_17.xml", Some("resourcedump"), Root::Urlset, Syntax::V1, 3),
    ("resync_resourcesync_ex_18.xml", Some("resourcedump-manifest"), Root::Urlset, Syntax::V1, 2),
    ("resync_resourcesync_ex_19.xml", Some("changelist"), Root::Urlset, Syntax::V1, 4),
    ("resync_resourcesync_ex_20.xml", Some("changelist"), Root::SitemapIndex, Syntax::V1, 3),
    ("resync_resourcesync_ex_21.xml", Some("changelist"), Root::Urlset, Syntax::V1, 4),
    ("resync_resourcesync_ex_22.xml", Some("changedump"), Root::Urlset, Syntax::V1, 3),
    ("resync_resourcesync_ex_23.xml", Some("changedump-manifest"), Root::Urlset, Syntax::V1, 4),
    ("resync_resourcesync_ex_27.xml", Some("changelist"), Root::Urlset, Syntax::V1, 2),
    ("resync_sitemapindex1_sitemap.xml", None, Root::SitemapIndex, Syntax::Plain, 3),
    ("resync_sitemapindex1_sitemap00000.xml", None, Root::Urlset, Syntax::Alpha2012, 6),
    ("resync_unknown1.xml", Some("unknown"), Root::Urlset, Syntax::V1, 2),
    ("resync_v1_0_resourcesync_ex_19.xml", Some("changelist"), Root::Urlset, Syntax::V1, 4),
    ("rs-test_changelist-index.xml", Some("changelist"), Root::SitemapIndex, Syntax::V1, 1),
    ("rs-test_changelist_000000.xml", Some("changelist"), Root::Urlset, Syntax::V1, 3),
];

#[test]
#[cfg_attr(
    missing = "corpus",
    ignore = "../shared/corpus is not beside the checkout"
)]
fn every_corpus_document_reads_to_the_end() {
    let dir = corpus_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut seen = Vec::new();
    for name in &names {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        // XML documents only: skip the ZIP package, the SCP files and SOURCES.md.
        if !bytes.trim_ascii_start().starts_with(b"<") {
            continue;
        }
        let (header, entries) =
            read(&dir, name, assume_utc()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = (
            header.capability().map(|c| c.name().to_string()),
            header.root,
            header.syntax,
            entries.len(),
        );
        let Some(&(_, cap, root, syntax, n)) = EXPECTED.iter().find(|x| x.0 == name) else {
            panic!("{name}: not pinned in EXPECTED; read as {got:?}");
        };
        assert_eq!(got, (cap.map(str::to_string), root, syntax, n), "{name}");
        seen.push(name.as_str());
    }
    for (name, ..) in EXPECTED {
        assert!(seen.contains(name), "{name}: pinned but not in the corpus");
    }
}

#[test]
#[cfg_attr(
    missing = "corpus",
    ignore = "../shared/corpus is not beside the checkout"
)]
fn core_zoneless_datetimes_fail_without_assume_utc() {
    let dir = corpus_dir();
    for (name, value) in [
        (
            "go-resourcesync_core_changedump-manifest.xml",
            "2020-03-18T00:00:00",
        ),
        (
            "go-resourcesync_core_changelist_datadumps.xml",
            "2020-06-02T00:00:00",
        ),
    ] {
        let err = match read(&dir, name, ReadOptions::default()) {
            Ok(_) => panic!("{name}: read without --assume-utc"),
            Err(e) => e,
        };
        assert!(
            matches!(err.kind, ReadErrorKind::BadDatetime { .. }),
            "{name}: {err}"
        );
        let msg = err.to_string();
        assert!(msg.contains(&format!("{value:?}")), "{name}: {msg}");
        assert!(msg.contains(name), "{name}: {msg}");
    }
}

#[test]
#[cfg_attr(
    missing = "corpus",
    ignore = "../shared/corpus is not beside the checkout"
)]
fn corpus_quirks_are_read_as_intended() {
    let dir = corpus_dir();

    // CORE wraps <loc> in newline + tab; %3D stays encoded; rel="describedBy" is lower-cased.
    let (_, e) = read(&dir, "go-resourcesync_core_resourcelist.xml", assume_utc()).unwrap();
    assert!(e[0]
        .loc
        .as_str()
        .starts_with("http://publisher-connector.core.ac.uk/resourcesync/data/Frontiers/pdf/000/"));
    assert!(e[0].loc.as_str().ends_with("%3D%3D.pdf"));
    assert_eq!(e[0].links[0].rel, "describedby");

    // CORE dump manifest: space-separated zone-less datetime read as UTC; path as written.
    let (h, e) = read(
        &dir,
        "go-resourcesync_core_changedump-manifest.xml",
        assume_utc(),
    )
    .unwrap();
    assert_eq!(h.md.from.unwrap().to_string(), "2020-03-18T00:00:00Z");
    assert_eq!(
        e[0].md.datetime.unwrap().to_string(),
        "2020-03-18T01:20:10Z"
    );
    assert_eq!(e[0].md.path.as_deref(), Some("fd8/43/287886262.json"));

    // CORE change list of dump packages: lengths beyond 32 bits.
    let (_, e) = read(
        &dir,
        "go-resourcesync_core_changelist_datadumps.xml",
        assume_utc(),
    )
    .unwrap();
    assert_eq!(e[3].md.length, Some(7_995_953_756));

    // The simulator's base64 md5 is decoded; its change list has no datetime (1.0 style).
    let (_, e) = read(&dir, "resync-client_change-list.xml", assume_utc()).unwrap();
    assert_eq!(e[0].md.change, Some(Change::Deleted));
    assert_eq!(
        e[1].md.hash[0].hex.as_deref(),
        Some("631f26e82a960498ca4f9541820a1679")
    );
    assert_eq!(e[1].event_time(), e[1].lastmod);

    // Two <rs:md> per <url> are merged.
    let (_, e) = read(&dir, "rs-test_changelist_000000.xml", assume_utc()).unwrap();
    assert_eq!(e[0].md.change, Some(Change::Created));
    assert_eq!(e[0].md.length, Some(20));

    // Alpha change set: updated via lastmod rs:type, deleted via <expires>.
    let (h, e) = read(&dir, "resync_ex2_4.xml", assume_utc()).unwrap();
    assert!(h.alpha_changeset);
    assert_eq!(e[0].md.change, Some(Change::Updated));
    assert_eq!(e[1].md.change, Some(Change::Deleted));
    assert_eq!(
        e[1].event_time().unwrap().to_string(),
        "2012-08-08T13:22:00Z"
    );

    // Relative <loc> values resolve against the document URL.
    let (h, e) = read(&dir, "resync_unknown1.xml", assume_utc()).unwrap();
    assert_eq!(h.capability(), Some(Capability::Other("unknown".into())));
    assert_eq!(e[0].loc.as_str(), "http://corpus.invalid/r1");

    // Spec patch examples: placeholder sha-256 values are kept but unusable.
    let (_, e) = read(&dir, "resync_resourcesync_ex_27.xml", assume_utc()).unwrap();
    assert!(!e[0].md.hash[0].is_usable());
    assert_eq!(e[1].md.length, Some(9_788_456_778));
}
