//! Versions the source keeps (issue 72): a resource that changed three times between two runs
//! keeps every state, each a version with its own datetime that arrived `via memento`: from a
//! TimeGate and a TimeMap served by pywb 2.10.0 over a WARC of three captures made with
//! warcio, and from the 2012 draft's `rel="memento"` links (its Example 6.2).

use crate::peers::{python_with, Server};
use crate::server::TestServer;
use crate::support::{baseline, incremental, on_mirror, stderr_of, stdout_of, Tree, ORIGIN};
use rusqlite::Connection;
use sha2::Digest as _;
use std::path::Path;

/// The mirror's state before the changes (the baseline's list is dated here).
pub const T0: &str = "2012-08-08T00:00:00Z";

/// Three captures: (datetime, 14-digit timestamp, bytes).
fn captures(name: &str) -> Vec<(&'static str, &'static str, Vec<u8>)> {
    vec![
        (
            "2012-08-08T08:15:00Z",
            "20120808081500",
            format!("{name}: Frogs, as of 08:15\n").into_bytes(),
        ),
        (
            "2012-08-08T10:00:00Z",
            "20120808100000",
            format!("{name}: Frogs and Fish, as of 10:00\n").into_bytes(),
        ),
        (
            "2012-08-08T13:22:00Z",
            "20120808132200",
            format!("{name}: <p>Frogs, Fish and Crocodiles</p>, as of 13:22\n").into_bytes(),
        ),
    ]
}

fn sha256(b: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(b))
}

fn hash_attr(b: &[u8]) -> String {
    format!("sha-256:{}", sha256(b))
}

pub fn run_ok(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr_of(&out));
    stderr_of(&out)
}

/// A version as the catalog holds it: (event time, arrived via, sha256, fetched from).
type Row = (Option<String>, String, Option<String>, Option<String>);

/// Every version of `uri`, in the order the mirror holds them.
fn versions_of(mirror: &Path, uri: &str) -> Vec<Row> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT v.event_time, v.arrived_via, v.sha256_hex, v.fetched_from FROM versions v
             JOIN resources r ON r.id = v.resource_id WHERE r.uri = ?1 ORDER BY v.run_id, v.id",
        )
        .unwrap();
    stmt.query_map([uri], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// The object of `sha` in the mirror, read back.
fn object(mirror: &Path, sha: &str) -> Vec<u8> {
    std::fs::read(mirror.join("objects/sha256").join(&sha[..2]).join(sha)).unwrap()
}

/// `versions_of` says: the baseline's state, then each capture at its datetime via memento,
/// byte-exact; and nothing after (the live state is the last capture).
fn assert_every_capture(
    mirror: &Path,
    uri: &str,
    first: &[u8],
    caps: &[(&str, &str, Vec<u8>)],
    from: &str,
) {
    let got = versions_of(mirror, uri);
    assert_eq!(got.len(), 1 + caps.len(), "{uri}: {got:#?}");
    assert_eq!(got[0].2.as_deref(), Some(sha256(first).as_str()));
    for ((at, stamp, bytes), v) in caps.iter().zip(&got[1..]) {
        assert_eq!(v.0.as_deref(), Some(*at), "{uri}: {got:#?}");
        assert_eq!(v.1, "memento", "{uri}: {got:#?}");
        assert_eq!(
            v.2.as_deref(),
            Some(sha256(bytes).as_str()),
            "{uri} at {at}"
        );
        assert_eq!(
            object(mirror, v.2.as_deref().unwrap()),
            *bytes,
            "{uri} at {at}"
        );
        let fetched = v.3.as_deref().unwrap_or_default();
        assert!(
            fetched.contains(stamp) && fetched.starts_with(from),
            "{uri} at {at} fetched from {fetched}"
        );
    }
}

/// A WARC (gzip per record) of `records` (URI, datetime, bytes), made by warcio.
fn make_warc(python: &Path, path: &Path, records: &[(String, &str, Vec<u8>)]) {
    let mut script = String::from(
        "import sys\nfrom io import BytesIO\nfrom warcio.warcwriter import WARCWriter\n\
         from warcio.statusandheaders import StatusAndHeaders\n\
         w = WARCWriter(open(sys.argv[1], 'wb'), gzip=True)\n",
    );
    for (uri, at, bytes) in records {
        script.push_str(&format!(
            "b = bytes.fromhex('{}')\n\
             h = StatusAndHeaders('200 OK', [('Content-Type', 'text/plain'), ('Content-Length', str(len(b)))], protocol='HTTP/1.1')\n\
             w.write_record(w.create_warc_record('{uri}', 'response', payload=BytesIO(b), http_headers=h, warc_headers_dict={{'WARC-Date': '{at}'}}))\n",
            hex::encode(bytes)
        ));
    }
    let out = std::process::Command::new(python)
        .args(["-c", &script])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A ResourceSync 1.1 Change List of `entries` (name, datetime, extra `rs:ln`s), each with the
/// current file's digest.
pub fn change_list(t: &Tree, entries: &[(&str, &str, String)]) {
    let mut body = String::new();
    for (name, at, links) in entries {
        let b = std::fs::read(t.path().join("res").join(name)).unwrap();
        body.push_str(&format!(
            "<url><loc>{ORIGIN}/res/{name}</loc><lastmod>{at}</lastmod>\
             <rs:md change=\"updated\" datetime=\"{at}\" hash=\"{}\" length=\"{}\"/>{links}</url>\n",
            hash_attr(&b),
            b.len()
        ));
    }
    std::fs::write(
        t.path().join("changelist.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
             <rs:ln rel=\"up\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n\
             <rs:md capability=\"changelist\" from=\"{T0}\"/>\n{body}</urlset>\n"
        ),
    )
    .unwrap();
}

#[test]
#[cfg_attr(
    any(missing = "pywb", missing = "warcio"),
    ignore = "pywb 2.10.0 or warcio (PyPI) is missing (.ci/run installs them)"
)]
fn every_capture_a_pywb_timegate_or_timemap_offers_becomes_its_own_version() {
    let t = Tree::new();
    let first: &[u8] = b"as the baseline found it\n";
    t.put("res1", first);
    t.put("res2", first);
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["res1", "res2"]);
    change_list(&t, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    run_ok(&mut baseline(&srv.url("/capabilitylist.xml"), &mirror));

    // The source changed three times; an archive captured each state.
    let python = python_with("pywb, warcio");
    let (c1, c2) = (captures("res1"), captures("res2"));
    let mut records = Vec::new();
    for (name, caps) in [("res1", &c1), ("res2", &c2)] {
        for (at, _, bytes) in caps {
            records.push((srv.url(&format!("/res/{name}")), *at, bytes.clone()));
        }
    }
    let warc = dir.path().join("captures.warc.gz");
    make_warc(&python, &warc, &records);
    let root = dir.path().join("pywb");
    std::fs::create_dir_all(&root).unwrap();
    let pywb = Server::start(
        &python,
        "pywb_server.py",
        &[root.to_str().unwrap(), warc.to_str().unwrap()],
    );
    let archive = format!("http://127.0.0.1:{}/c1", pywb.port);
    t.put("res1", &c1[2].2);
    t.put("res2", &c2[2].2);
    // res1 names its TimeGate (the 2012 draft §6.2.2), res2 its TimeMap (ResourceSync 1.1).
    let res1 = srv.url("/res/res1");
    let res2 = srv.url("/res/res2");
    change_list(
        &t,
        &[
            (
                "res1",
                c1[2].0,
                format!("<rs:ln rel=\"timegate\" href=\"{archive}/{res1}\"/>"),
            ),
            (
                "res2",
                c2[2].0,
                format!("<rs:ln rel=\"timemap\" href=\"{archive}/timemap/link/{res2}\"/>"),
            ),
        ],
    );
    run_ok(&mut incremental(&mirror));

    assert_every_capture(&mirror, &res1, first, &c1, &archive);
    assert_every_capture(&mirror, &res2, first, &c2, &archive);
    // The raw capture was asked for, never the page pywb rewrites for replay.
    let fetched = versions_of(&mirror, &res1);
    assert!(
        fetched[1].3.as_deref().unwrap().contains("id_/"),
        "{fetched:#?}"
    );

    // `log` (newest first) shows each in its place, with its datetime and its way in.
    let (log, _) = crate::support::ok_on_mirror(&mirror, &["log", &res1]);
    let at: Vec<usize> = c1
        .iter()
        .map(|(when, _, _)| {
            log.find(&format!("event {when}"))
                .unwrap_or_else(|| panic!("{when}: {log}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] > w[1]), "{log}");
    assert_eq!(log.matches("via memento from").count(), 3, "{log}");

    // A second run finds nothing new: the versions are not fetched again.
    run_ok(&mut incremental(&mirror));
    assert_eq!(versions_of(&mirror, &res1).len(), 4);

    // An audit against the source and the mirror's own bytes is clean.
    let out = on_mirror(&mirror, &["audit"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout_of(&out),
        stderr_of(&out)
    );
    drop(pywb);
}

/// The 2012 draft's Example 6.2: a change set whose entries link the version each made.
fn example_6_2(t: &Tree, entries: &[(&str, &str, &str, &[u8])]) {
    let mut body = String::new();
    for (name, at, stamp, bytes) in entries {
        use base64::Engine as _;
        use md5::Digest as _;
        let md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(bytes));
        body.push_str(&format!(
            "   <url>\n      <loc>{ORIGIN}/{name}</loc>\n      <lastmod rs:type=\"updated\">{at}</lastmod>\n\
             \x20     <rs:fixity type=\"md5\">{md5}</rs:fixity>\n      <rs:size>{}</rs:size>\n\
             \x20     <xhtml:link href=\"{ORIGIN}/{stamp}/{name}\"\n                  rel=\"memento\"/>\n   </url>\n",
            bytes.len()
        ));
    }
    std::fs::write(
        t.path().join("changeset.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset rs:type=\"changeset\"\n\
             \x20       xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"\n\
             \x20       xmlns:rs=\"http://www.openarchives.org/rs/terms/\"\n\
             \x20       xmlns:xhtml=\"http://www.w3.org/1999/xhtml\">\n\
             \x20  <xhtml:meta name=\"DCTERMS.modified\" content=\"2012-08-08T16:30:00Z\"/>\n\
             \x20  <xhtml:link href=\"{ORIGIN}/changeset.xml\"\n               rel=\"current http://www.openarchives.org/rs/changeset\"/>\n\
             {body}</urlset>\n"
        ),
    )
    .unwrap();
}

/// A 2012 Sitemap of `res1` at T0 pointing at its change set.
fn sitemap_2012(t: &Tree, bytes: &[u8]) {
    std::fs::write(t.path().join("res1"), bytes).unwrap();
    std::fs::write(
        t.path().join("sitemap.xml"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"\n\
             \x20       xmlns:xhtml=\"http://www.w3.org/1999/xhtml\">\n\
             \x20  <xhtml:meta name=\"DCTERMS.modified\" content=\"{T0}\"/>\n\
             \x20  <xhtml:link href=\"{ORIGIN}/changeset.xml\"\n               rel=\"current http://www.openarchives.org/rs/changeset\"/>\n\
             \x20  <url><loc>{ORIGIN}/res1</loc><lastmod>2012-08-07T23:00:00Z</lastmod></url>\n</urlset>\n"
        ),
    )
    .unwrap();
}

#[test]
fn the_2012_drafts_memento_links_in_a_change_set_give_every_state() {
    let t = Tree::new();
    let first: &[u8] = b"res1 before the changes\n";
    sitemap_2012(&t, first);
    example_6_2(&t, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    run_ok(&mut baseline(&srv.url("/sitemap.xml"), &mirror));

    let caps = captures("res1");
    for (_, stamp, bytes) in &caps {
        std::fs::create_dir_all(t.path().join(stamp)).unwrap();
        std::fs::write(t.path().join(stamp).join("res1"), bytes).unwrap();
    }
    std::fs::write(t.path().join("res1"), &caps[2].2).unwrap();
    let entries: Vec<(&str, &str, &str, &[u8])> = caps
        .iter()
        .map(|(at, stamp, b)| ("res1", *at, *stamp, b.as_slice()))
        .collect();
    example_6_2(&t, &entries);
    run_ok(&mut incremental(&mirror));
    let uri = srv.url("/res1");
    assert_every_capture(&mirror, &uri, first, &caps, &srv.base());
    // The version URI as the source gave it: no raw form to ask for.
    assert_eq!(srv.count("/20120808100000/res1"), 1);
    let out = on_mirror(&mirror, &["audit"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout_of(&out),
        stderr_of(&out)
    );
}

#[test]
fn a_memento_whose_bytes_contradict_its_change_is_a_failure_and_the_rest_holds() {
    let t = Tree::new();
    let first: &[u8] = b"res1 before the changes\n";
    sitemap_2012(&t, first);
    example_6_2(&t, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    run_ok(&mut baseline(&srv.url("/sitemap.xml"), &mirror));

    let caps = captures("res1");
    for (i, (_, stamp, bytes)) in caps.iter().enumerate() {
        std::fs::create_dir_all(t.path().join(stamp)).unwrap();
        // The middle one is not what its change declares.
        let served: &[u8] = if i == 1 {
            b"something else entirely\n"
        } else {
            bytes
        };
        std::fs::write(t.path().join(stamp).join("res1"), served).unwrap();
    }
    std::fs::write(t.path().join("res1"), &caps[2].2).unwrap();
    let entries: Vec<(&str, &str, &str, &[u8])> = caps
        .iter()
        .map(|(at, stamp, b)| ("res1", *at, *stamp, b.as_slice()))
        .collect();
    example_6_2(&t, &entries);
    let out = incremental(&mirror).output().unwrap();
    assert_ne!(
        out.status.code(),
        Some(0),
        "a failed memento must not exit 0"
    );
    let err = stderr_of(&out);
    assert!(err.contains("/res1"), "{err}");
    let uri = srv.url("/res1");
    let got = versions_of(&mirror, &uri);
    let shas: Vec<_> = got.iter().map(|v| v.2.clone().unwrap()).collect();
    // The first state, the first capture, the last: the contradicted one is not a version.
    assert_eq!(
        shas,
        [sha256(first), sha256(&caps[0].2), sha256(&caps[2].2)],
        "{got:#?}"
    );
    assert!(!shas.contains(&sha256(b"something else entirely\n")));
    let out = on_mirror(&mirror, &["audit"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout_of(&out),
        stderr_of(&out)
    );
}
