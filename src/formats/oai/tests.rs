//! The OAI-PMH reader against responses shaped as pyoai 2.5.0 and DSpace 7 serve them.
#![cfg(test)]

use super::read::OaiReader;
use super::*;
use crate::engine::reader::{Bytes, Entry, Next, Start};
use crate::model::Change;
use jiff::Timestamp;
use quick_xml::events::Event;

const BASE: &str = "http://127.0.0.1:8000/oai";

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn doc<'a>(u: &'a Url, bytes: &'a str) -> Doc<'a> {
    Doc {
        url: u,
        media_type: Some("text/xml; charset=utf-8"),
        bytes: bytes.as_bytes(),
    }
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// pyoai 2.5.0's Identify (`oaipmh.server`), day granularity.
fn identify(granularity: &str, deleted: &str) -> String {
    format!(
        r#"<?xml version='1.0' encoding='UTF-8'?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
  <responseDate>2024-05-01T10:00:00Z</responseDate>
  <request verb="Identify">http://127.0.0.1:8000/oai</request>
  <Identify>
    <repositoryName>Test Repository</repositoryName>
    <baseURL>http://127.0.0.1:8000/oai</baseURL>
    <protocolVersion>2.0</protocolVersion>
    <adminEmail>admin@example.org</adminEmail>
    <earliestDatestamp>2001-01-01</earliestDatestamp>
    <deletedRecord>{deleted}</deletedRecord>
    <granularity>{granularity}</granularity>
  </Identify>
</OAI-PMH>
"#
    )
}

/// A first ListRecords page: three records (one deleted) and a resumptionToken.
const PAGE1: &str = r#"<?xml version='1.0' encoding='UTF-8'?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
  <responseDate>2024-05-01T10:00:02Z</responseDate>
  <request verb="ListRecords" metadataPrefix="oai_dc">http://127.0.0.1:8000/oai</request>
  <ListRecords>
    <record>
      <header>
        <identifier>oai:example.org:1</identifier>
        <datestamp>2024-01-10</datestamp>
        <setSpec>physics</setSpec>
      </header>
      <metadata>
        <oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd">
          <dc:title>On gravity &amp; light</dc:title>
          <dc:creator>Doe, Jane</dc:creator>
        </oai_dc:dc>
      </metadata>
    </record>
    <record>
      <header status="deleted">
        <identifier>oai:example.org:2</identifier>
        <datestamp>2024-02-01</datestamp>
      </header>
    </record>
    <record>
      <header>
        <identifier>oai:example.org:3</identifier>
        <datestamp>2024-03-05</datestamp>
      </header>
      <metadata>
        <oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Third</dc:title></oai_dc:dc>
      </metadata>
    </record>
    <resumptionToken completeListSize="4" cursor="0">oai_dc/physics/3</resumptionToken>
  </ListRecords>
</OAI-PMH>
"#;

/// The last page: one record and an empty resumptionToken.
const PAGE2: &str = r#"<?xml version='1.0' encoding='UTF-8'?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">
  <responseDate>2024-05-01T10:00:05Z</responseDate>
  <request verb="ListRecords" resumptionToken="oai_dc/physics/3">http://127.0.0.1:8000/oai</request>
  <ListRecords>
    <record>
      <header>
        <identifier>oai:example.org:4</identifier>
        <datestamp>2024-04-20</datestamp>
      </header>
      <metadata>
        <oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Fourth</dc:title></oai_dc:dc>
      </metadata>
    </record>
    <resumptionToken completeListSize="4" cursor="3"/>
  </ListRecords>
</OAI-PMH>
"#;

fn error(code: &str, message: &str) -> String {
    format!(
        r#"<?xml version='1.0' encoding='UTF-8'?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
  <responseDate>2024-05-01T10:00:09Z</responseDate>
  <request>http://127.0.0.1:8000/oai</request>
  <error code="{code}">{message}</error>
</OAI-PMH>
"#
    )
}

fn collection_url(set: Option<&str>) -> Url {
    let mut u = url(&format!("{BASE}?metadataPrefix=oai_dc"));
    if let Some(s) = set {
        u.query_pairs_mut().append_pair("set", s);
    }
    u
}

/// Start a harvest and read Identify; the URL of the first ListRecords.
fn started(r: &mut OaiReader, base: &Url, start: Start<'_>, identify_xml: &str) -> Url {
    let first = r.start(base, start).unwrap();
    assert_eq!(first.as_str(), format!("{BASE}?verb=Identify"));
    let mut out = Vec::new();
    match r.read(doc(&first, identify_xml), &mut out).unwrap() {
        Next::Fetch(u) => {
            assert!(out.is_empty());
            u
        }
        Next::Done => panic!("Identify ends nothing"),
    }
}

/// Parse `bytes` as a document of its own, with namespaces: the root's namespace and the
/// namespace of every element and attribute prefix resolve.
fn standalone_root(bytes: &[u8]) -> (String, String, usize) {
    let text = std::str::from_utf8(bytes).unwrap();
    let mut r = quick_xml::NsReader::from_str(text);
    let mut root = None;
    let mut elements = 0;
    let mut depth = 0i32;
    loop {
        let (ns, ev) = r.read_resolved_event().unwrap();
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let ns = match ns {
                    quick_xml::name::ResolveResult::Bound(n) => n.as_ref().to_string(),
                    other => panic!("element {:?} unbound: {other:?}", e.name()),
                };
                for a in e.attributes() {
                    let a = a.unwrap();
                    let (res, _) = r.resolver().resolve_attribute(a.key);
                    assert!(
                        !matches!(res, quick_xml::name::ResolveResult::Unknown(_)),
                        "attribute {:?} has an undeclared prefix",
                        a.key
                    );
                }
                elements += 1;
                if root.is_none() {
                    root = Some((ns, e.local_name().as_ref().to_string()));
                } else {
                    assert!(depth > 0, "a second root element");
                }
                if matches!(ev, Event::Start(_)) {
                    depth += 1;
                }
            }
            Event::End(_) => depth -= 1,
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0);
    let (ns, local) = root.unwrap();
    (ns, local, elements)
}

#[test]
fn registration_recognises_oai_pmh_and_nothing_else() {
    let reg = registration();
    assert_eq!(reg.name, "OAI-PMH");
    assert!(matches!(reg.kind, SourceKind::Oai));
    let u = url(BASE);
    let bad_verb = error("badVerb", "Illegal verb");
    assert_eq!((reg.recognise)(doc(&u, &bad_verb)), Some(vec![]));
    assert_eq!((reg.recognise)(doc(&u, PAGE1)), Some(vec![]));
    let html = Doc {
        url: &u,
        media_type: Some("text/html"),
        bytes: b"<html><body>OAI-PMH</body></html>",
    };
    assert_eq!((reg.recognise)(html), None);
    // The same root name in another namespace, junk, binary, empty: not OAI-PMH.
    let other = r#"<OAI-PMH xmlns="http://www.openarchives.org/OAI/1.1/"/>"#;
    assert_eq!((reg.recognise)(doc(&u, other)), None);
    for junk in [
        &b"<<<>"[..],
        b"\xff\xfe\x00<",
        b"",
        b"{\"a\":1}",
        b"<a><b></a>",
    ] {
        let d = Doc {
            url: &u,
            media_type: None,
            bytes: junk,
        };
        assert_eq!((reg.recognise)(d), None, "{junk:?}");
    }
    // Served as HTML: still OAI-PMH, with a warning naming the document.
    let d = Doc {
        url: &u,
        media_type: Some("text/html"),
        bytes: bad_verb.as_bytes(),
    };
    let w = (reg.recognise)(d).unwrap();
    assert_eq!(w.len(), 1);
    assert!(w[0].starts_with("http://127.0.0.1:8000/oai: "), "{w:?}");
    let r = (reg.reader)();
    assert!(r.sync_point().is_none());
}

#[test]
fn collection_is_the_base_url_with_prefix_and_set() {
    let reg = registration();
    let u = url("http://127.0.0.1:8000/oai?verb=Identify");
    let id = identify("YYYY-MM-DD", "persistent");
    let opts = Options {
        oai_prefix: None,
        oai_set: Some("physics".into()),
    };
    assert_eq!(
        (reg.collection)(doc(&u, &id), &opts).unwrap().as_str(),
        "http://127.0.0.1:8000/oai?metadataPrefix=oai_dc&set=physics"
    );
    let opts = Options {
        oai_prefix: Some("marc21".into()),
        oai_set: None,
    };
    assert_eq!(
        (reg.collection)(doc(&u, &id), &opts).unwrap().as_str(),
        "http://127.0.0.1:8000/oai?metadataPrefix=marc21"
    );
    // <request> names the path the repository knows itself by.
    let bare = url("http://127.0.0.1:8000/oai/?foo=1");
    let mut resp = error("badVerb", "Illegal verb");
    resp = resp.replace(
        "<request>http://127.0.0.1:8000/oai</request>",
        "<request>http://127.0.0.1:8000/oai/request</request>",
    );
    assert_eq!(
        (reg.collection)(doc(&bare, &resp), &Options::default())
            .unwrap()
            .as_str(),
        "http://127.0.0.1:8000/oai/request?metadataPrefix=oai_dc"
    );
    // A <request> naming another host (the inner side of a proxy) is not followed.
    let proxied = url("https://repo.example.org/oai/request?verb=Identify");
    let resp = error("badVerb", "x").replace(
        "http://127.0.0.1:8000/oai",
        "http://localhost:8080/server/oai/request",
    );
    assert_eq!(
        (reg.collection)(doc(&proxied, &resp), &Options::default())
            .unwrap()
            .as_str(),
        "https://repo.example.org/oai/request?metadataPrefix=oai_dc"
    );
    let empty = Options {
        oai_prefix: Some(String::new()),
        oai_set: None,
    };
    let e = (reg.collection)(doc(&u, &id), &empty).unwrap_err();
    assert!(e.message.contains("--oai-prefix"), "{e}");
}

#[test]
fn a_baseline_harvest_reads_two_pages() {
    let mut r = OaiReader::new();
    let base = collection_url(Some("physics"));
    let list = started(
        &mut r,
        &base,
        Start::default(),
        &identify("YYYY-MM-DD", "persistent"),
    );
    assert_eq!(
        list.as_str(),
        format!("{BASE}?verb=ListRecords&metadataPrefix=oai_dc&set=physics")
    );
    assert_eq!(r.checkpoint(), None);
    let mut out = Vec::new();
    let next = r.read(doc(&list, PAGE1), &mut out).unwrap();
    assert_eq!(
        next,
        Next::Fetch(url(&format!(
            "{BASE}?verb=ListRecords&resumptionToken=oai_dc%2Fphysics%2F3"
        )))
    );
    assert_eq!(out.len(), 3);
    let uris: Vec<&str> = out.iter().map(|e| e.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "oai:example.org:1",
            "oai:example.org:2",
            "oai:example.org:3"
        ]
    );
    assert_eq!(out[0].change, None);
    assert_eq!(out[0].time, Some(ts("2024-01-10T00:00:00Z")));
    let Bytes::Inline { bytes, media_type } = &out[0].bytes else {
        panic!("{:?}", out[0].bytes)
    };
    assert_eq!(*media_type, "application/xml");
    let text = std::str::from_utf8(bytes).unwrap();
    assert!(text.starts_with("<oai_dc:dc xmlns=\"http://www.openarchives.org/OAI/2.0/\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:oai_dc="), "{text}");
    assert!(text.contains("<dc:title>On gravity &amp; light</dc:title>\n          <dc:creator>Doe, Jane</dc:creator>"), "{text}");
    assert!(text.ends_with("</oai_dc:dc>"), "{text}");
    assert_eq!(
        out[1],
        Entry {
            uri: url("oai:example.org:2"),
            change: Some(Change::Deleted),
            time: Some(ts("2024-02-01T00:00:00Z")),
            bytes: Bytes::None,
        }
    );
    let cp: serde_json::Value = serde_json::from_str(&r.checkpoint().unwrap()).unwrap();
    assert_eq!(cp["token"], "oai_dc/physics/3");
    assert_eq!(cp["last"], "2024-03-05T00:00:00Z");
    assert_eq!(cp["from"], serde_json::Value::Null);
    assert!(r.sync_point().is_none());

    let Next::Fetch(page2) = next else {
        unreachable!()
    };
    let mut out = Vec::new();
    assert_eq!(r.read(doc(&page2, PAGE2), &mut out).unwrap(), Next::Done);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].uri.as_str(), "oai:example.org:4");
    assert_eq!(out[0].time, Some(ts("2024-04-20T00:00:00Z")));
    assert_eq!(r.checkpoint(), None);
    let (t, basis) = r.sync_point().unwrap();
    // The first ListRecords' responseDate, not the last page's.
    assert_eq!(t, ts("2024-05-01T10:00:02Z"));
    assert!(basis.contains("first ListRecords"), "{basis}");
    assert!(r.lists_everything());
    assert!(r.warnings().is_empty());
}

#[test]
fn metadata_becomes_a_standalone_document() {
    let mut r = OaiReader::new();
    let base = collection_url(None);
    let list = started(
        &mut r,
        &base,
        Start::default(),
        &identify("YYYY-MM-DD", "no"),
    );
    // DSpace-like: prefixes declared on the root and on <metadata>, used inside the record
    // (element, attribute), one redeclared by the element itself, an empty element.
    let page = r#"<?xml version="1.0" encoding="UTF-8"?>
<oai:OAI-PMH xmlns:oai="http://www.openarchives.org/OAI/2.0/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:x="urn:old">
<oai:responseDate>2024-05-02T00:00:00Z</oai:responseDate>
<oai:request verb="ListRecords">http://127.0.0.1:8000/oai</oai:request>
<oai:ListRecords>
<oai:record><oai:header><oai:identifier>oai:dspace.org:123456789/7</oai:identifier><oai:datestamp>2024-04-01T12:30:00Z</oai:datestamp></oai:header>
<oai:metadata xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/">
  <oai_dc:dc xmlns:x="urn:new" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd">
    <dc:title  xml:lang='en'>A &lt;title&gt;</dc:title>
    <x:y/>
  </oai_dc:dc>
</oai:metadata></oai:record>
<oai:record><oai:header><oai:identifier>oai:dspace.org:123456789/8</oai:identifier><oai:datestamp>2024-04-02T00:00:00Z</oai:datestamp></oai:header>
<oai:metadata><dc:title/></oai:metadata></oai:record>
<oai:resumptionToken></oai:resumptionToken>
</oai:ListRecords>
</oai:OAI-PMH>"#;
    let mut out = Vec::new();
    assert_eq!(r.read(doc(&list, page), &mut out).unwrap(), Next::Done);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].uri.as_str(), "oai:dspace.org:123456789/7");
    assert_eq!(out[0].time, Some(ts("2024-04-01T12:30:00Z")));
    let Bytes::Inline { bytes, .. } = &out[0].bytes else {
        panic!()
    };
    let text = std::str::from_utf8(bytes).unwrap();
    assert_eq!(
        text,
        "<oai_dc:dc xmlns:oai=\"http://www.openarchives.org/OAI/2.0/\" \
         xmlns:dc=\"http://purl.org/dc/elements/1.1/\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xmlns:oai_dc=\"http://www.openarchives.org/OAI/2.0/oai_dc/\" xmlns:x=\"urn:new\" \
         xsi:schemaLocation=\"http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd\">\n    \
         <dc:title  xml:lang='en'>A &lt;title&gt;</dc:title>\n    <x:y/>\n  </oai_dc:dc>"
    );
    let (ns, local, elements) = standalone_root(bytes);
    assert_eq!(ns, "http://www.openarchives.org/OAI/2.0/oai_dc/");
    assert_eq!(local, "dc");
    assert_eq!(elements, 3);
    // The redeclared x: keeps the element's own namespace, not the root's.
    assert!(!text.contains("urn:old"));

    let Bytes::Inline { bytes, .. } = &out[1].bytes else {
        panic!()
    };
    let (ns, local, elements) = standalone_root(bytes);
    assert_eq!(
        (ns.as_str(), local.as_str(), elements),
        ("http://purl.org/dc/elements/1.1/", "title", 1)
    );
    assert!(std::str::from_utf8(bytes).unwrap().ends_with("/>"));
    assert_eq!(r.sync_point().unwrap().0, ts("2024-05-02T00:00:00Z"));
}

#[test]
fn an_incremental_asks_from_one_step_before_the_sync_point() {
    let since = ts("2024-03-10T00:30:00Z");
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(None),
        Start {
            since: Some(since),
            resume: None,
        },
        &identify("YYYY-MM-DD", "transient"),
    );
    assert_eq!(
        list.as_str(),
        format!("{BASE}?verb=ListRecords&metadataPrefix=oai_dc&from=2024-03-09")
    );
    // Over a month boundary.
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(None),
        Start {
            since: Some(ts("2024-03-01T23:59:59Z")),
            resume: None,
        },
        &identify("YYYY-MM-DD", "transient"),
    );
    assert!(list.as_str().ends_with("&from=2024-02-29"), "{list}");
    // Seconds granularity: one second before.
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(Some("math")),
        Start {
            since: Some(ts("2024-03-10T00:00:00.250Z")),
            resume: None,
        },
        &identify("YYYY-MM-DDThh:mm:ssZ", "persistent"),
    );
    assert_eq!(
        list.as_str(),
        format!(
            "{BASE}?verb=ListRecords&metadataPrefix=oai_dc&set=math&from=2024-03-09T23%3A59%3A59Z"
        )
    );
    let mut out = Vec::new();
    r.read(doc(&list, PAGE1), &mut out).unwrap();
    let cp: serde_json::Value = serde_json::from_str(&r.checkpoint().unwrap()).unwrap();
    assert_eq!(cp["from"], "2024-03-09T23:59:59Z");
}

#[test]
fn no_records_match_is_an_empty_harvest() {
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(None),
        Start {
            since: Some(ts("2024-04-30T00:00:00Z")),
            resume: None,
        },
        &identify("YYYY-MM-DD", "persistent"),
    );
    let mut out = Vec::new();
    let resp = error(
        "noRecordsMatch",
        "The combination of the values of the from, until, set and metadataPrefix arguments results in an empty list.",
    );
    assert_eq!(r.read(doc(&list, &resp), &mut out).unwrap(), Next::Done);
    assert!(out.is_empty());
    assert_eq!(r.sync_point().unwrap().0, ts("2024-05-01T10:00:09Z"));
    assert_eq!(r.checkpoint(), None);
}

#[test]
fn cannot_disseminate_format_names_the_prefix() {
    let mut r = OaiReader::new();
    let base = url(&format!("{BASE}?metadataPrefix=mods"));
    let list = started(
        &mut r,
        &base,
        Start::default(),
        &identify("YYYY-MM-DD", "no"),
    );
    assert!(list.as_str().contains("metadataPrefix=mods"));
    let resp = error("cannotDisseminateFormat", "mods not supported");
    let e = r.read(doc(&list, &resp), &mut Vec::new()).unwrap_err();
    assert_eq!(e.url, list.as_str());
    assert_eq!(
        e.message,
        "the repository does not offer metadataPrefix mods (--oai-prefix): mods not supported"
    );
    // Other errors carry their code and message.
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(Some("nope")),
        Start::default(),
        &identify("YYYY-MM-DD", "no"),
    );
    let e = r
        .read(
            doc(
                &list,
                &error("noSetHierarchy", "This repository does not support sets"),
            ),
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(e.message.contains("noSetHierarchy"), "{e}");
    assert!(e.message.contains("does not support sets"), "{e}");
}

#[test]
fn a_repeated_token_stops_the_harvest() {
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(Some("physics")),
        Start::default(),
        &identify("YYYY-MM-DD", "no"),
    );
    let mut out = Vec::new();
    let Next::Fetch(page2) = r.read(doc(&list, PAGE1), &mut out).unwrap() else {
        panic!()
    };
    let mut out = Vec::new();
    let e = r.read(doc(&page2, PAGE1), &mut out).unwrap_err();
    assert_eq!(
        e.message,
        "the repository repeated resumptionToken oai_dc/physics/3: stopping rather than looping"
    );
    assert!(out.is_empty(), "nothing of a refused document is applied");
}

#[test]
fn bad_resumption_token_restarts_once_from_the_latest_datestamp() {
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(Some("physics")),
        Start::default(),
        &identify("YYYY-MM-DD", "persistent"),
    );
    let Next::Fetch(page2) = r.read(doc(&list, PAGE1), &mut Vec::new()).unwrap() else {
        panic!()
    };
    assert!(r.warnings().is_empty());
    let bad = error("badResumptionToken", "The resumptionToken has expired");
    let next = r.read(doc(&page2, &bad), &mut Vec::new()).unwrap();
    assert_eq!(
        next,
        Next::Fetch(url(&format!(
            "{BASE}?verb=ListRecords&metadataPrefix=oai_dc&set=physics&from=2024-03-05"
        )))
    );
    let w = r.warnings();
    assert_eq!(w.len(), 1);
    assert!(w[0].starts_with(&format!("{page2}: ")), "{w:?}");
    assert!(w[0].contains("from 2024-03-05"), "{w:?}");
    // The listing restarted later than the harvest's own from: not the whole collection.
    assert!(!r.lists_everything());
    let cp: serde_json::Value = serde_json::from_str(&r.checkpoint().unwrap()).unwrap();
    assert_eq!(cp["token"], serde_json::Value::Null);
    assert_eq!(cp["from"], "2024-03-05");
    // The restarted listing pages again; a second refusal is an error.
    let Next::Fetch(restart) = next else { panic!() };
    let Next::Fetch(page2) = r
        .read(
            doc(&restart, PAGE1.replace("oai_dc/physics/3", "t2").as_str()),
            &mut Vec::new(),
        )
        .unwrap()
    else {
        panic!()
    };
    let e = r.read(doc(&page2, &bad), &mut Vec::new()).unwrap_err();
    assert!(e.message.contains("badResumptionToken"), "{e}");
    assert!(e.message.contains("restarted once already"), "{e}");
}

#[test]
fn bad_resumption_token_out_of_order_restarts_from_the_harvests_from() {
    // Datestamps out of order: records not yet listed may be older than the latest seen.
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(None),
        Start::default(),
        &identify("YYYY-MM-DD", "persistent"),
    );
    let page = PAGE1.replace("2024-03-05", "2023-12-01");
    let Next::Fetch(page2) = r.read(doc(&list, &page), &mut Vec::new()).unwrap() else {
        panic!()
    };
    let bad = error("badResumptionToken", "expired");
    let next = r.read(doc(&page2, &bad), &mut Vec::new()).unwrap();
    assert_eq!(
        next,
        Next::Fetch(url(&format!(
            "{BASE}?verb=ListRecords&metadataPrefix=oai_dc"
        )))
    );
    assert!(r.lists_everything());
    assert_eq!(r.warnings().len(), 1);
}

#[test]
fn a_checkpoint_resumes_with_its_token_and_keeps_its_sync_point() {
    let mut r = OaiReader::new();
    let base = collection_url(Some("physics"));
    let list = started(
        &mut r,
        &base,
        Start::default(),
        &identify("YYYY-MM-DD", "persistent"),
    );
    r.read(doc(&list, PAGE1), &mut Vec::new()).unwrap();
    let cp = r.checkpoint().unwrap();

    // Killed; a new reader resumes.
    let mut r = OaiReader::new();
    let mut id = identify("YYYY-MM-DD", "persistent");
    id = id.replace("2024-05-01T10:00:00Z", "2024-05-03T08:00:00Z");
    let next = started(
        &mut r,
        &base,
        Start {
            since: None,
            resume: Some(&cp),
        },
        &id,
    );
    assert_eq!(
        next.as_str(),
        format!("{BASE}?verb=ListRecords&resumptionToken=oai_dc%2Fphysics%2F3")
    );
    // Killed again right after Identify: the checkpoint still resumes.
    assert_eq!(r.checkpoint().as_deref(), Some(cp.as_str()));
    let mut out = Vec::new();
    let page2 = PAGE2.replace("2024-05-01T10:00:05Z", "2024-05-03T08:00:01Z");
    assert_eq!(r.read(doc(&next, &page2), &mut out).unwrap(), Next::Done);
    assert_eq!(out.len(), 1);
    // The sync point is the first ListRecords' of the harvest that was resumed.
    assert_eq!(r.sync_point().unwrap().0, ts("2024-05-01T10:00:02Z"));
    assert!(!r.lists_everything());

    // A resumed token the repository forgot: start over from the checkpoint's last.
    let mut r = OaiReader::new();
    let next = started(
        &mut r,
        &base,
        Start {
            since: None,
            resume: Some(&cp),
        },
        &id,
    );
    let bad = error("badResumptionToken", "unknown token");
    assert_eq!(
        r.read(doc(&next, &bad), &mut Vec::new()).unwrap(),
        Next::Fetch(url(&format!(
            "{BASE}?verb=ListRecords&metadataPrefix=oai_dc&set=physics&from=2024-03-05"
        )))
    );

    // An unreadable checkpoint: a fresh harvest, said.
    let mut r = OaiReader::new();
    let next = started(
        &mut r,
        &base,
        Start {
            since: None,
            resume: Some("not json"),
        },
        &id,
    );
    assert_eq!(
        next.as_str(),
        format!("{BASE}?verb=ListRecords&metadataPrefix=oai_dc&set=physics")
    );
    assert_eq!(r.warnings().len(), 1);
}

#[test]
fn a_document_that_is_not_oai_pmh_is_an_error() {
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(None),
        Start::default(),
        &identify("YYYY-MM-DD", "no"),
    );
    let e = r
        .read(
            doc(&list, "<html><head><title>Login</title></head></html>"),
            &mut Vec::new(),
        )
        .unwrap_err();
    assert_eq!(
        e.message,
        "not an OAI-PMH response: its root element is <html> in no namespace"
    );
    let e = r
        .read(
            doc(
                &list,
                "<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\"><ListRecords><record>",
            ),
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(e.message.contains("truncated"), "{e}");
}

#[test]
fn an_identifier_that_is_not_a_uri_is_an_error() {
    let mut r = OaiReader::new();
    let list = started(
        &mut r,
        &collection_url(Some("physics")),
        Start::default(),
        &identify("YYYY-MM-DD", "no"),
    );
    let page = PAGE1.replace("oai:example.org:3", "not a uri");
    let mut out = Vec::new();
    let e = r.read(doc(&list, &page), &mut out).unwrap_err();
    assert_eq!(e.url, list.as_str());
    assert!(e.message.contains("\"not a uri\""), "{e}");
    assert!(out.is_empty());
}

#[test]
fn a_bad_verb_during_a_harvest_is_an_error() {
    let mut r = OaiReader::new();
    let first = r.start(&collection_url(None), Start::default()).unwrap();
    let e = r
        .read(
            doc(&first, &error("badVerb", "Illegal OAI verb")),
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(e.message.contains("badVerb: Illegal OAI verb"), "{e}");
}

#[test]
fn datestamps_of_either_granularity() {
    assert_eq!(
        read::datestamp("2024-01-02"),
        Some(ts("2024-01-02T00:00:00Z"))
    );
    assert_eq!(
        read::datestamp("2024-01-02T03:04:05Z"),
        Some(ts("2024-01-02T03:04:05Z"))
    );
    assert_eq!(read::datestamp("yesterday"), None);
}
