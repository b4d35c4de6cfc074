//! `baseline --via dump` against a real HTTP server: the same mirror as from the equivalent
//! Resource List, and hostile packages refused at the command level (nothing outside the
//! mirror, nothing from a refused package current).

use crate::dump_reader::{patch_uncompressed_size, rename_entry, Headers};
use crate::server::TestServer;
use crate::support::*;
use std::io::{Cursor, Write};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

pub(crate) const AT: &str = "2026-04-01T00:00:00Z";
pub(crate) const NS: &str = "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\"";

pub(crate) fn hashes(bytes: &[u8]) -> String {
    use md5::Digest as _;
    use sha2::Digest as _;
    format!(
        "md5:{} sha-256:{}",
        hex::encode(md5::Md5::digest(bytes)),
        hex::encode(sha2::Sha256::digest(bytes))
    )
}

/// A package of resources `res/NAME` (the manifest names them `/res/NAME` under `origin`: the
/// server does not rewrite inside ZIPs), plus raw extras.
pub(crate) fn package(
    tree: &Tree,
    origin: &str,
    names: &[&str],
    extra: &[(&str, &[u8])],
) -> Vec<u8> {
    let mut manifest = format!("<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"resourcedump-manifest\" at=\"{AT}\"/>\n");
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for n in names {
        let bytes = std::fs::read(tree.path().join("res").join(n)).unwrap();
        manifest.push_str(&format!(
            "<url><loc>{origin}/res/{n}</loc><rs:md path=\"/res/{n}\" length=\"{}\" hash=\"{}\"/></url>\n",
            bytes.len(),
            hashes(&bytes)
        ));
        files.push((format!("res/{n}"), bytes));
    }
    manifest.push_str("</urlset>\n");
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    w.start_file("manifest.xml", opts).unwrap();
    w.write_all(manifest.as_bytes()).unwrap();
    for (name, bytes) in files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .chain(extra.iter().copied())
    {
        w.start_file(name, opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// `/resourcedump.xml` naming the packages (with their lengths and digests), and a Capability
/// List offering both the list and the dump.
fn publish_dump(tree: &Tree, packages: &[(&str, &[u8])]) {
    let mut body = String::new();
    for (name, bytes) in packages {
        std::fs::write(tree.path().join(name), bytes).unwrap();
        body.push_str(&format!(
            "<url><loc>{ORIGIN}/{name}</loc><rs:md type=\"application/zip\" length=\"{}\" hash=\"{}\"/></url>\n",
            bytes.len(),
            hashes(bytes)
        ));
    }
    std::fs::write(
        tree.path().join("resourcedump.xml"),
        format!("<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"resourcedump\" at=\"{AT}\"/>\n{body}</urlset>\n"),
    )
    .unwrap();
    std::fs::write(
        tree.path().join("capabilitylist.xml"),
        format!(
            "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"capabilitylist\"/>\n\
             <url><loc>{ORIGIN}/resourcelist.xml</loc><rs:md capability=\"resourcelist\"/></url>\n\
             <url><loc>{ORIGIN}/resourcedump.xml</loc><rs:md capability=\"resourcedump\"/></url>\n</urlset>\n"
        ),
    )
    .unwrap();
}

fn six() -> Tree {
    let t = Tree::new();
    for i in 1..=6 {
        t.put(
            &format!("r{i}"),
            format!("resource {i}\n").repeat(i * 40).as_bytes(),
        );
    }
    t.resource_list(AT, &["r1", "r2", "r3", "r4", "r5", "r6"]);
    t
}

#[test]
fn baseline_from_a_two_package_dump_equals_baseline_from_the_list() {
    let t = six();
    let srv = TestServer::start(t.path());
    let p1 = package(&t, &srv.base(), &["r1", "r2", "r3"], &[]);
    let p2 = package(&t, &srv.base(), &["r4", "r5", "r6"], &[]);
    publish_dump(&t, &[("p1.zip", &p1), ("p2.zip", &p2)]);
    let from_dump = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), from_dump.path())
        .args(["--via", "dump"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        srv.requests().iter().all(|r| !r.path.starts_with("/res/")),
        "a dump baseline fetched resources"
    );
    let from_list = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), from_list.path())
        .args(["--via", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(from_dump.path()), current(from_list.path()));
    assert_eq!(current(from_dump.path()).len(), 6);
    assert_consistent(from_dump.path());
    // Each version records that it came from a dump, and which package.
    let conn = rusqlite::Connection::open(from_dump.path().join("catalog.sqlite")).unwrap();
    let via: Vec<(String, String)> = conn
        .prepare("SELECT arrived_via, fetched_from FROM versions ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(via.iter().all(|(v, _)| v == "dump"), "{via:?}");
    assert_eq!(via[0].1, format!("{}/p1.zip", srv.base()));
    assert_eq!(via[5].1, format!("{}/p2.zip", srv.base()));
    // auto takes the dump when offered; a re-run changes nothing.
    let out = baseline(&srv.url("/capabilitylist.xml"), from_dump.path())
        .arg("--json")
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["unchanged"], 6, "{s}");
    assert!(
        std::fs::read_dir(from_dump.path().join("staging"))
            .unwrap()
            .next()
            .is_none(),
        "package left in staging"
    );
}

/// Issue 28.12: a Resource Dump in a format rsmirror does not read (resync-build's `--warc`)
/// beside a complete Resource List: `--via auto` takes the list and says why; `--via dump`
/// still refuses, and its summary counts the part that was not mirrored.
#[test]
fn auto_falls_back_to_the_list_when_the_dump_cannot_be_read() {
    let t = six();
    let srv = TestServer::start(t.path());
    let warc = b"WARC/1.0\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n".to_vec();
    publish_dump(&t, &[("dump.warc", &warc)]);
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["created"], 6, "{s}");
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("resourcedump.xml") && warnings.contains("Resource List instead"),
        "{warnings}"
    );
    assert_eq!(current(dir.path()).len(), 6);

    let only_dump = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), only_dump.path())
        .args(["--via", "dump", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["created"], 0, "{s}");
    assert_eq!(
        s["failed_parts"], 1,
        "what was not mirrored is counted: {s}"
    );
}

/// Issue 26: a dump made while the source changed: one bitstream no longer matches the
/// manifest written before it was copied. That resource is pending, as from a list, and the
/// dump's `at` is the sync point (incremental then settles it as for a list: see `busy`).
#[test]
fn a_dump_whose_manifest_a_change_overtook_leaves_that_resource_pending() {
    let t = six();
    let srv = TestServer::start(t.path());
    // The manifest as of `at`; r2's bitstream as copied a moment later.
    let p1 = package(&t, &srv.base(), &["r1", "r2", "r3"], &[]);
    t.put("r2", b"r2 written after the manifest\n");
    let overtaken = {
        let mut zip = zip::ZipArchive::new(Cursor::new(p1)).unwrap();
        let mut w = ZipWriter::new(Cursor::new(Vec::new()));
        let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        for k in 0..zip.len() {
            let mut f = zip.by_index(k).unwrap();
            let name = f.name().unwrap().to_string();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut bytes).unwrap();
            if name == "res/r2" {
                bytes = std::fs::read(t.path().join("res/r2")).unwrap();
            }
            w.start_file(name, opts).unwrap();
            w.write_all(&bytes).unwrap();
        }
        w.finish().unwrap().into_inner()
    };
    publish_dump(&t, &[("p1.zip", &overtaken)]);
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .args(["--via", "dump", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["created"].as_u64(), s["pending"].as_u64()),
        (Some(2), Some(1)),
        "{s}"
    );
    assert_eq!(s["sync_point"], AT, "{s}");
    assert!(
        stderr_of(&out).contains("pending: ") && stderr_of(&out).contains("r2"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn hostile_packages_are_refused_and_nothing_from_them_lands() {
    type Make = fn(&Tree, &str) -> Vec<u8>;
    let cases: Vec<(&str, Make, &str)> = vec![
        (
            "dotdot entry name",
            |t, o| {
                let mut z = package(t, o, &["r4"], &[("xx/evil", b"evil")]);
                rename_entry(&mut z, b"xx/evil", b"../evil");
                z
            },
            "p2.zip",
        ),
        (
            "absolute entry name",
            |t, o| {
                let mut z = package(t, o, &["r4"], &[("xevil", b"evil")]);
                rename_entry(&mut z, b"xevil", b"/evil");
                z
            },
            "p2.zip",
        ),
        (
            "duplicate entry names",
            |t, o| {
                let mut z = package(t, o, &["r4"], &[("res/r5", b"shadow")]);
                rename_entry(&mut z, b"res/r5", b"res/r4");
                z
            },
            "p2.zip",
        ),
        (
            "lying size header",
            |t, o| {
                let mut z = package(t, o, &["r4", "r5"], &[]);
                patch_uncompressed_size(&mut z, b"res/r5", 10, Headers::Both);
                z
            },
            "p2.zip",
        ),
        (
            "not a zip",
            |_, _| b"\xFD7zXZ\x00 pretend xz".to_vec(),
            "p2.zip",
        ),
    ];
    for (what, make, package_name) in cases {
        let t = six();
        let srv = TestServer::start(t.path());
        let p1 = package(&t, &srv.base(), &["r1", "r2", "r3"], &[]);
        let p2 = make(&t, &srv.base());
        publish_dump(&t, &[("p1.zip", &p1), ("p2.zip", &p2)]);
        let outer = tempfile::tempdir().unwrap();
        let mirror = outer.path().join("mirror");
        let canary = outer.path().join("canary");
        std::fs::create_dir_all(&canary).unwrap();
        std::fs::write(canary.join("keep"), b"canary").unwrap();
        let out = baseline(&srv.url("/capabilitylist.xml"), &mirror)
            .args(["--via", "dump"])
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(3), "{what}: {err}");
        assert!(
            err.contains(package_name),
            "{what}: the error names no package: {err}"
        );
        // p1 landed; nothing from the refused package is current.
        let got = current(&mirror);
        assert_eq!(got.len(), 3, "{what}: {got:?}");
        assert!(
            got.keys().all(|k| k.ends_with("/res/r1")
                || k.ends_with("/res/r2")
                || k.ends_with("/res/r3")),
            "{what}"
        );
        // Nothing written outside the mirror.
        let beside: Vec<_> = std::fs::read_dir(outer.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside.len(), 2, "{what}: {beside:?}");
        assert_eq!(std::fs::read_dir(&canary).unwrap().count(), 1, "{what}");
        assert_eq!(std::fs::read(canary.join("keep")).unwrap(), b"canary");
        assert!(!outer.path().join("evil").exists());
        assert_consistent(&mirror);
        // Not even in the store: what a package refused half-way had staged (r4, before its
        // lying r5) is taken out again (issue 48: staged objects go to the store at once).
        let stored = walkdir(&mirror.join("objects"));
        assert_eq!(stored.len(), 3, "{what}: {stored:?}");
        // A refused package means an incomplete snapshot: no sync point, no deletes.
        assert_eq!(sync_point(&mirror), None, "{what}");
    }
}

#[test]
fn a_missing_bitstream_fails_that_resource_and_extras_are_reported() {
    let t = six();
    let srv = TestServer::start(t.path());
    let p1 = package(
        &t,
        &srv.base(),
        &["r1", "r2", "r3"],
        &[("res/unlisted", b"not in the manifest")],
    );
    // p2's manifest names r4..r6 but the archive lacks r6.
    let full = package(&t, &srv.base(), &["r4", "r5", "r6"], &[]);
    let mut z = zip::ZipArchive::new(Cursor::new(full)).unwrap();
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    for i in 0..z.len() {
        let f = z.by_index_raw(i).unwrap();
        if f.name().unwrap() != "res/r6" {
            w.raw_copy_file(f).unwrap();
        }
    }
    let p2 = w.finish().unwrap().into_inner();
    publish_dump(&t, &[("p1.zip", &p1), ("p2.zip", &p2)]);
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .args(["--via", "dump", "-v"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("res/r6"), "{err}");
    assert!(
        err.contains("\"res/unlisted\" is not in the manifest"),
        "{err}"
    );
    assert_eq!(current(dir.path()).len(), 5);
}

/// A Capability List of a Resource List and the document `doc` of capability `cap`.
pub(crate) fn capability_list(doc: &str, cap: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"capabilitylist\"/>\n\
         <url><loc>{ORIGIN}/resourcelist.xml</loc><rs:md capability=\"resourcelist\"/></url>\n\
         <url><loc>{ORIGIN}/{doc}</loc><rs:md capability=\"{cap}\"/></url>\n</urlset>\n"
    )
}

/// A Change Dump from [`AT`] with no package yet.
pub(crate) fn empty_change_dump() -> String {
    format!("<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"changedump\" from=\"{AT}\"/>\n</urlset>\n")
}

/// A Change Dump package: (uri name, change, datetime, bytes or None for a delete).
pub(crate) fn change_package(
    origin: &str,
    entries: &[(&str, &str, &str, Option<&[u8]>)],
) -> Vec<u8> {
    change_package_between(origin, AT, "2026-04-01T05:00:00Z", entries)
}

/// [`change_package`] whose manifest says `from` and `until`.
pub(crate) fn change_package_between(
    origin: &str,
    from: &str,
    until: &str,
    entries: &[(&str, &str, &str, Option<&[u8]>)],
) -> Vec<u8> {
    let mut manifest = format!(
        "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"changedump-manifest\" from=\"{from}\" until=\"{until}\"/>\n"
    );
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let mut files = Vec::new();
    for (k, (name, change, at, bytes)) in entries.iter().enumerate() {
        match bytes {
            Some(b) => {
                let path = format!("changes/{k}-{name}");
                manifest.push_str(&format!(
                    "<url><loc>{origin}/res/{name}</loc><rs:md change=\"{change}\" datetime=\"{at}\" path=\"/{path}\" length=\"{}\" hash=\"{}\"/></url>\n",
                    b.len(),
                    hashes(b)
                ));
                files.push((path, b.to_vec()));
            }
            None => manifest.push_str(&format!(
                "<url><loc>{origin}/res/{name}</loc><rs:md change=\"{change}\" datetime=\"{at}\"/></url>\n"
            )),
        }
    }
    manifest.push_str("</urlset>\n");
    w.start_file("manifest.xml", opts).unwrap();
    w.write_all(manifest.as_bytes()).unwrap();
    for (p, b) in files {
        w.start_file(p, opts).unwrap();
        w.write_all(&b).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[test]
fn incremental_from_a_change_dump_equals_incremental_from_the_change_list() {
    let t = Tree::new();
    for i in 1..=4 {
        t.put(&format!("r{i}"), format!("resource {i} v1\n").as_bytes());
    }
    t.resource_list(AT, &["r1", "r2", "r3", "r4"]);
    t.change_list("changelist.xml", AT, None, &[]);
    for (file, cap, doc) in [
        ("cl-list.xml", "changelist", "changelist.xml"),
        ("cl-dump.xml", "changedump", "changedump.xml"),
    ] {
        std::fs::write(t.path().join(file), capability_list(doc, cap)).unwrap();
    }
    // No dump yet: an empty Change Dump from the baseline's `at`.
    std::fs::write(t.path().join("changedump.xml"), empty_change_dump()).unwrap();
    let srv = TestServer::start(t.path());
    let by_list = tempfile::tempdir().unwrap();
    let by_dump = tempfile::tempdir().unwrap();
    for (m, cl) in [(&by_list, "/cl-list.xml"), (&by_dump, "/cl-dump.xml")] {
        let out = baseline(&srv.url(cl), m.path())
            .args(["--via", "list"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    }

    // The changes: r1 updated twice, r5 created, r2 deleted.
    let v2: &[u8] = b"resource 1 v2\n";
    let v3: &[u8] = b"resource 1 v3\n";
    let r5: &[u8] = b"resource 5 v1\n";
    t.put("r1", v3);
    t.put("r5", r5);
    t.remove("r2");
    t.change_list(
        "changelist.xml",
        AT,
        None,
        &[
            ("r1", "updated", "2026-04-01T02:00:00Z"),
            ("r5", "created", "2026-04-01T03:00:00Z"),
            ("r2", "deleted", "2026-04-01T04:00:00Z"),
        ],
    );
    let pkg = change_package(
        &srv.base(),
        &[
            ("r1", "updated", "2026-04-01T01:00:00Z", Some(v2)),
            ("r1", "updated", "2026-04-01T02:00:00Z", Some(v3)),
            ("r5", "created", "2026-04-01T03:00:00Z", Some(r5)),
            ("r2", "deleted", "2026-04-01T04:00:00Z", None),
        ],
    );
    std::fs::write(t.path().join("cd-1.zip"), &pkg).unwrap();
    std::fs::write(
        t.path().join("changedump.xml"),
        format!(
            "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"changedump\" from=\"{AT}\"/>\n\
             <url><loc>{ORIGIN}/cd-1.zip</loc><rs:md type=\"application/zip\" length=\"{}\" from=\"{AT}\" until=\"2026-04-01T05:00:00Z\"/></url>\n</urlset>\n",
            pkg.len()
        ),
    )
    .unwrap();
    // A dry run names the package it would fetch (what it changes is inside it), and fetches
    // nothing.
    srv.clear_requests();
    let out = incremental(by_dump.path())
        .arg("--dry-run")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out).trim(),
        format!(
            "? {}/cd-1.zip (a Change Dump package from {AT} until 2026-04-01T05:00:00Z: its changes are read when it is fetched)",
            srv.base()
        )
    );
    assert_eq!(srv.count("/cd-1.zip"), 0);
    srv.clear_requests();
    for m in [&by_list, &by_dump] {
        let out = incremental(m.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    }
    assert_eq!(current(by_list.path()), current(by_dump.path()));
    assert_eq!(
        tombstoned(by_dump.path()),
        vec![format!("{}/res/r2", srv.base())]
    );
    assert_eq!(
        srv.count("/res/r1") + srv.count("/res/r5"),
        2,
        "only the list run fetches resources"
    );
    // Both bitstreams for r1 are kept, in order: v1, v2, v3.
    let conn = rusqlite::Connection::open(by_dump.path().join("catalog.sqlite")).unwrap();
    let r1: i64 = conn
        .query_row(
            "SELECT count(*) FROM versions v JOIN resources r ON r.id = v.resource_id WHERE r.uri LIKE '%/res/r1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(r1, 3);
    assert_eq!(
        sync_point(by_dump.path()).unwrap().0.as_deref(),
        Some("2026-04-01T05:00:00Z")
    );
    assert_consistent(by_dump.path());
    // The closed package is remembered: a second run does not fetch it.
    srv.clear_requests();
    let out = incremental(by_dump.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(srv.count("/cd-1.zip"), 0);
}

/// A URI in two packages counts once, with the later package's entry and bitstream.
#[test]
fn a_resource_in_two_packages_is_taken_from_the_later_one() {
    let t = six();
    let srv = TestServer::start(t.path());
    let p1 = package(&t, &srv.base(), &["r1", "r2", "r3"], &[]);
    t.put("r2", b"resource 2, as the second package has it\n");
    let p2 = package(&t, &srv.base(), &["r4", "r2", "r5", "r6"], &[]);
    publish_dump(&t, &[("p1.zip", &p1), ("p2.zip", &p2)]);
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .args(["--via", "dump"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let now = current(dir.path());
    assert_eq!(now.len(), 6);
    assert_eq!(
        now[&srv.url("/res/r2")],
        sha256_file(&t.path().join("res/r2"))
    );
    assert_eq!(version_count(dir.path()), 6, "one version per resource");
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    let from: String = conn
        .query_row(
            "SELECT v.fetched_from FROM versions v JOIN resources r ON r.current_version_id = v.id
             WHERE r.uri = ?1",
            [srv.url("/res/r2")],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(from, format!("{}/p2.zip", srv.base()));
    assert_consistent(dir.path());
}

/// The files under `dir`, recursively.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// Issue 48: a manifest far larger than any buffer the reader keeps (25,000 entries, about
/// 4 MB: it is read as a stream, into the listing on disk, and again while staging) mirrors
/// completely, each resource from its own entry, and a URI listed again in a second package
/// is taken from there.
#[test]
fn a_dump_whose_manifest_is_larger_than_any_buffer_mirrors_completely() {
    const N: usize = 25_000;
    let t = Tree::new();
    let srv = TestServer::start(t.path());
    let origin = srv.base();
    let mut manifest = format!(
        "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"resourcedump-manifest\" at=\"{AT}\"/>\n"
    );
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    let body = |i: usize| format!("resource {i}\n").into_bytes();
    for i in 0..N {
        let bytes = body(i);
        manifest.push_str(&format!(
            "<url><loc>{origin}/res/{i}</loc><lastmod>{AT}</lastmod><rs:md path=\"/res/{i}\" length=\"{}\" hash=\"{}\"/></url>\n",
            bytes.len(),
            hashes(&bytes)
        ));
    }
    manifest.push_str("</urlset>\n");
    assert!(manifest.len() > 3_000_000, "{}", manifest.len());
    w.start_file(
        "manifest.xml",
        opts.compression_method(CompressionMethod::Deflated),
    )
    .unwrap();
    w.write_all(manifest.as_bytes()).unwrap();
    for i in 0..N {
        w.start_file(format!("res/{i}"), opts).unwrap();
        w.write_all(&body(i)).unwrap();
    }
    let p1 = w.finish().unwrap().into_inner();
    // A second package lists resource 7 again, with other bytes: the later entry counts.
    let later = b"resource 7, as the second package has it\n";
    t.put("r7", later);
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    w.start_file("manifest.xml", opts).unwrap();
    w.write_all(
        format!(
            "<?xml version=\"1.0\"?>\n<urlset {NS}>\n<rs:md capability=\"resourcedump-manifest\" at=\"{AT}\"/>\n\
             <url><loc>{origin}/res/7</loc><rs:md path=\"/r7\" length=\"{}\" hash=\"{}\"/></url>\n</urlset>\n",
            later.len(),
            hashes(later)
        )
        .as_bytes(),
    )
    .unwrap();
    w.start_file("r7", opts).unwrap();
    w.write_all(later).unwrap();
    let p2 = w.finish().unwrap().into_inner();
    t.resource_list(AT, &[]);
    publish_dump(&t, &[("p1.zip", &p1), ("p2.zip", &p2)]);
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcedump.xml"), dir.path())
        .args(["--via", "dump", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["created"], N, "{s}");
    let now = current(dir.path());
    assert_eq!(now.len(), N);
    for i in [0, 1, 4_096, 12_345, N - 1] {
        let want = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body(i)));
        assert_eq!(now[&format!("{origin}/res/{i}")], want, "resource {i}");
    }
    assert_eq!(
        now[&format!("{origin}/res/7")],
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(later))
    );
    assert!(s["warnings"].to_string().contains("listed twice"), "{s}");
    assert_consistent(dir.path());
}

/// Issue 66, 1: a Resource Dump older than the mirror's state never takes the mirror back.
/// After a baseline from the dump and an incremental (one resource updated, one deleted, one
/// created), a baseline again: `--via auto` takes the Resource List instead and says why;
/// `--via dump` holds back everything the dump contradicts (the update is kept, the deletion
/// stays, the new resource is not gone) and keeps the sync point; the next incremental and an
/// audit find the mirror as the source is.
#[test]
fn a_resource_dump_older_than_the_mirror_never_takes_it_back() {
    let t = six();
    let srv = TestServer::start(t.path());
    let p1 = package(&t, &srv.base(), &["r1", "r2", "r3", "r4", "r5", "r6"], &[]);
    publish_dump(&t, &[("p1.zip", &p1)]);
    let caps = std::fs::read_to_string(t.path().join("capabilitylist.xml")).unwrap();
    let caps = caps.replace(
        "</urlset>",
        &format!("<url><loc>{ORIGIN}/changelist.xml</loc><rs:md capability=\"changelist\"/></url>\n</urlset>"),
    );
    std::fs::write(t.path().join("capabilitylist.xml"), caps).unwrap();
    t.change_list("changelist.xml", AT, None, &[]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path();
    let out = baseline(&srv.url("/capabilitylist.xml"), m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        srv.count("/p1.zip") == 1,
        "the first baseline takes the dump"
    );

    // The source changes; its Resource List follows, its dump does not.
    let later = "2026-04-02T00:00:00Z";
    t.put("r1", b"resource 1, updated\n");
    t.remove("r2");
    t.put("r7", b"resource 7, new\n");
    t.change_list(
        "changelist.xml",
        AT,
        None,
        &[
            ("r1", "updated", "2026-04-01T10:00:00Z"),
            ("r2", "deleted", "2026-04-01T11:00:00Z"),
            ("r7", "created", "2026-04-01T12:00:00Z"),
        ],
    );
    t.resource_list(later, &["r1", "r3", "r4", "r5", "r6", "r7"]);
    let out = incremental(m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let after_changes = current(m);
    let gone = vec![format!("{}/res/r2", srv.base())];
    // Issue 66, 7: a deletion applied is named, under cron too, and is in the run's problems.
    assert_eq!(stderr_of(&out).trim(), format!("deleted: {}", gone[0]));
    assert!(last_run_problems(m)
        .iter()
        .any(|(uri, class, _)| *uri == gone[0] && class == "deleted"));
    assert_eq!(after_changes.len(), 6);
    assert_eq!(tombstoned(m), gone);
    let point = sync_point(m).unwrap().0.unwrap();
    assert!(point.as_str() > AT, "{point}");

    // --via dump: the dump is as of AT, older than the mirror: nothing goes back.
    let out = baseline(&srv.url("/capabilitylist.xml"), m)
        .args(["--via", "dump", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s["created"].as_u64(), s["updated"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(
        (s["gone"].as_u64(), s["deleted"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(s["held_back"], 3, "{s}");
    let said = stderr_of(&out);
    assert!(
        said.contains("older than the mirror's state")
            && said.contains("1 kept as the mirror holds them")
            && said.contains("1 deleted since, not brought back")
            && said.contains("1 not named by the list, not called gone"),
        "{said}"
    );
    assert!(!said.contains("gone: "), "{said}");
    assert_eq!(current(m), after_changes);
    assert_eq!(tombstoned(m), gone);
    assert_eq!(
        sync_point(m).unwrap().0.unwrap(),
        point,
        "the sync point stays"
    );

    // --via auto (the default): the Resource List, which is newer, and a word on why.
    srv.clear_requests();
    let out = baseline(&srv.url("/capabilitylist.xml"), m)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("older than the mirror's state")
            && warnings.contains("Resource List instead"),
        "{warnings}"
    );
    assert_eq!(current(m), after_changes);
    assert_eq!(tombstoned(m), gone);
    assert!(sync_point(m).unwrap().0.unwrap() >= point);

    // The next incremental and an audit find the mirror as the source is.
    let out = incremental(m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = on_mirror(m, &["audit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    assert_consistent(m);
}

/// Bytes that do not compress (a package of them is as large as they are).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Issue 66, 5: a full disk during a dump baseline stops the run with one message naming the
/// mirror (not a `failed:` line per resource left), the `--min-free` margin is kept on the
/// dump's path as on the list's (a package that would take the disk under it is not
/// downloaded), nothing is left in staging, the catalog stays sound, and once there is room a
/// re-run completes.
#[test]
fn a_full_disk_during_a_dump_baseline_stops_once_and_keeps_min_free() {
    let Some(disk) = Tmpfs::mount("6m") else {
        return;
    };
    let t = Tree::new();
    let names: Vec<String> = (0..200).map(|i| format!("r{i:03}")).collect();
    for (i, n) in names.iter().enumerate() {
        t.put(n, &noise(16 * 1024, i as u64));
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    t.resource_list(AT, &names);
    let srv = TestServer::start(t.path());
    let p1 = package(&t, &srv.base(), &names[..100], &[]);
    let p2 = package(&t, &srv.base(), &names[100..], &[]);
    publish_dump(&t, &[("p1.zip", &p1), ("p2.zip", &p2)]);
    let mirror = disk.0.path().join("mirror");
    let mirror_s = mirror.display().to_string();
    let source = srv.url("/capabilitylist.xml");
    let staging_is_empty = |m: &std::path::Path| {
        std::fs::read_dir(m.join("staging"))
            .map(|mut d| d.next().is_none())
            .unwrap_or(true)
    };

    // A margin larger than what is free: no package is downloaded.
    let out = baseline(&source, &mirror)
        .args(["--via", "dump", "--min-free", "5M"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains(&mirror_s) && err.contains("--min-free margin"),
        "{err}"
    );
    assert!(err.contains("2 packages left to download"), "{err}");
    assert!(!err.contains("failed:"), "{err}");
    assert_eq!(srv.count("/p1.zip") + srv.count("/p2.zip"), 0);
    assert!(staging_is_empty(&mirror));
    assert_consistent(&mirror);

    // The disk fills while the bitstreams are stored: one message, not a line per resource.
    let out = baseline(&source, &mirror)
        .args(["--via", "dump"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains(&mirror_s) && err.contains("full"), "{err}");
    assert!(!err.contains("failed:"), "{err}");
    assert!(
        err.lines().count() <= 4,
        "one message, not a line per resource: {err}"
    );
    assert!(staging_is_empty(&mirror));
    assert_consistent(&mirror);
    let landed = current(&mirror).len();
    assert!(landed < 200, "{landed}");

    disk.resize("40m");
    let out = baseline(&source, &mirror)
        .args(["--via", "dump"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(&mirror).len(), 200);
    assert_consistent(&mirror);
}
