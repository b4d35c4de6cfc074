//! The reader against the specification's own examples (IIIF Change Discovery 1.0 §2, §3),
//! assembled into small streams.
#![cfg(test)]

use super::{collection, recognise, registration, IiifReader};
use crate::engine::discover::SourceKind;
use crate::engine::reader::{Bytes, Doc, Entry, Next, Options, ReadError, Reader, Start};
use crate::model::Change;
use jiff::Timestamp;
use url::Url;

const LD: &str = "application/ld+json;profile=\"http://iiif.io/api/discovery/1/context.json\"";

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn doc<'a>(u: &'a Url, bytes: &'a str, media_type: Option<&'a str>) -> Doc<'a> {
    Doc {
        url: u,
        media_type,
        bytes: bytes.as_bytes(),
    }
}

/// §2.3: the collection, here with three pages.
const COLLECTION: &str = r#"{
  "@context": "http://iiif.io/api/discovery/1/context.json",
  "id": "https://example.org/activity/all-changes",
  "type": "OrderedCollection",
  "totalItems": 21456,
  "first": { "id": "https://example.org/activity/page-0", "type": "OrderedCollectionPage" },
  "last": { "id": "https://example.org/activity/page-2", "type": "OrderedCollectionPage" }
}"#;

/// A page of the collection above: `prev` (if any) and its activities (JSON, oldest first).
fn page(n: u32, prev: Option<u32>, items: &[&str]) -> String {
    let prev = prev.map_or(String::new(), |p| {
        format!(
            r#""prev": {{ "id": "https://example.org/activity/page-{p}", "type": "OrderedCollectionPage" }},"#
        )
    });
    format!(
        r#"{{
  "@context": "http://iiif.io/api/discovery/1/context.json",
  "id": "https://example.org/activity/page-{n}",
  "type": "OrderedCollectionPage",
  "partOf": {{ "id": "https://example.org/activity/all-changes", "type": "OrderedCollection" }},
  {prev}
  "orderedItems": [{}]
}}"#,
        items.join(",\n")
    )
}

/// An activity of `ty` on manifest `n` at `time`.
fn act(ty: &str, n: u32, time: &str) -> String {
    format!(
        r#"{{ "type": "{ty}", "object": {{ "id": "https://example.org/iiif/{n}/manifest", "type": "Manifest" }}, "endTime": "{time}" }}"#
    )
}

fn manifest(n: u32) -> Url {
    url(&format!("https://example.org/iiif/{n}/manifest"))
}

fn fetched(uri: Url, change: Option<Change>, time: &str) -> Entry {
    Entry {
        bytes: Bytes::At(uri.clone()),
        uri,
        change,
        time: Some(ts(time)),
    }
}

fn deleted(uri: Url, time: &str) -> Entry {
    Entry {
        uri,
        change: Some(Change::Deleted),
        time: Some(ts(time)),
        bytes: Bytes::None,
    }
}

/// A harvest run as the engine would: what was fetched, what came out (per document), the
/// warnings, and how it ended.
struct Harvest {
    reader: IiifReader,
    fetched: Vec<String>,
    entries: Vec<Entry>,
    warnings: Vec<String>,
    end: Result<(), ReadError>,
}

fn harvest(since: Option<&str>, base: &str, docs: &[(&str, String)]) -> Harvest {
    let mut reader = IiifReader::new();
    let start = Start {
        since: since.map(ts),
        resume: None,
    };
    let mut next = reader.start(&url(base), start).unwrap();
    let (mut fetched, mut entries, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
    let end = loop {
        fetched.push(next.to_string());
        let (_, body) = docs
            .iter()
            .find(|(u, _)| *u == next.as_str())
            .unwrap_or_else(|| panic!("no document at {next}"));
        let r = reader.read(doc(&next, body, Some(LD)), &mut entries);
        warnings.extend(reader.warnings());
        match r {
            Ok(Next::Fetch(u)) => next = u,
            Ok(Next::Done) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    Harvest {
        reader,
        fetched,
        entries,
        warnings,
        end,
    }
}

const BASE: &str = "https://example.org/activity/all-changes";
const P0: &str = "https://example.org/activity/page-0";
const P1: &str = "https://example.org/activity/page-1";
const P2: &str = "https://example.org/activity/page-2";

#[test]
fn registration_names_the_format() {
    let r = registration();
    assert_eq!(r.kind, SourceKind::Iiif);
    assert_eq!(r.name, "IIIF Change Discovery");
    let mut reader = (r.reader)();
    assert!(!reader.lists_everything());
    assert_eq!(reader.sync_point(), None);
    assert!(reader.warnings().is_empty());
}

#[test]
fn the_specification_examples_are_recognised_without_warnings() {
    let c = url(BASE);
    assert_eq!(recognise(doc(&c, COLLECTION, Some(LD))), Some(vec![]));
    assert_eq!(recognise(doc(&c, COLLECTION, None)), Some(vec![]));
    let p = url(P1);
    let body = page(1, Some(0), &[&act("Update", 9, "2018-03-10T10:00:00Z")]);
    assert_eq!(recognise(doc(&p, &body, Some(LD))), Some(vec![]));
    // The profile over https, and the parameter's case and spacing, are no deviation.
    let https = "application/ld+json; Profile=\"https://iiif.io/api/discovery/1/context.json\"";
    assert_eq!(recognise(doc(&c, COLLECTION, Some(https))), Some(vec![]));
}

#[test]
fn deviations_real_publishers_make_are_recognised_with_warnings() {
    let c = url(BASE);
    // The Discovery context before an extension's (§3.4.2 wants it last).
    let out_of_order = COLLECTION.replace(
        r#""@context": "http://iiif.io/api/discovery/1/context.json""#,
        r#""@context": ["http://iiif.io/api/discovery/1/context.json", "http://example.org/extension/context.json"]"#,
    );
    let w = recognise(doc(&c, &out_of_order, Some(LD))).unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("https://example.org/activity/all-changes: "));
    assert!(w[0].contains("not the last in @context"), "{w:?}");
    // Last, after an extension's: as the specification wants.
    let in_order = COLLECTION.replace(
        r#""@context": "http://iiif.io/api/discovery/1/context.json""#,
        r#""@context": ["http://example.org/extension/context.json", "http://iiif.io/api/discovery/1/context.json"]"#,
    );
    assert_eq!(recognise(doc(&c, &in_order, Some(LD))), Some(vec![]));
    // Plain JSON.
    let w = recognise(doc(&c, COLLECTION, Some("application/json"))).unwrap();
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("\"application/json\""), "{w:?}");
    // JSON-LD without the profile.
    let w = recognise(doc(&c, COLLECTION, Some("application/ld+json"))).unwrap();
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("without the profile"), "{w:?}");
    // Both at once, and the context over https.
    let https = out_of_order.replace("http://iiif.io", "https://iiif.io");
    let w = recognise(doc(&c, &https, Some("text/plain"))).unwrap();
    assert_eq!(w.len(), 3, "{w:?}");
}

#[test]
fn activity_streams_alone_is_recognised_only_for_activities() {
    let p = url(P1);
    let as_page = page(1, None, &[&act("Create", 1, "2019-01-01T00:00:00Z")]).replace(
        "http://iiif.io/api/discovery/1/context.json",
        "https://www.w3.org/ns/activitystreams",
    );
    let w = recognise(doc(&p, &as_page, Some("application/activity+json"))).unwrap();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("without the IIIF Discovery context"), "{w:?}");
    let notes = r#"{"@context": "https://www.w3.org/ns/activitystreams", "type": "OrderedCollectionPage",
        "orderedItems": [{"type": "Note", "content": "hello"}]}"#;
    assert_eq!(recognise(doc(&p, notes, None)), None);
    let bare = r#"{"@context": "https://www.w3.org/ns/activitystreams", "type": "OrderedCollection", "totalItems": 3}"#;
    assert_eq!(recognise(doc(&p, bare, None)), None);
}

#[test]
fn other_json_and_junk_are_not_recognised() {
    let u = url("https://example.com/arc-sitemap.json");
    let arc = r#"{"arc_sitemap_version":"2.1","site":"https://example.com","generated_at":"2025-11-09T08:00:00Z","pages":[{"url":"https://example.com/a","ai_indexable":true}]}"#;
    for junk in [
        arc,
        r#"{"a": 1, "b": [true, null]}"#,
        r#"[{"type": "OrderedCollection"}]"#,
        r#"{"type": "OrderedCollection", "last": "https://example.org/p"}"#,
        r#"{"@context": "http://iiif.io/api/presentation/3/context.json", "type": "Manifest"}"#,
        r#"{"@context": "http://iiif.io/api/discovery/1/context.json", "type": "Manifest"}"#,
        r#"{"@context": 7, "type": ["OrderedCollection"]}"#,
        "<?xml version=\"1.0\"?><urlset/>",
        "",
        "{\"@context\": \"http://iiif.io/api/discovery/1/context.json\", \"type\": ",
    ] {
        assert_eq!(
            recognise(doc(&u, junk, Some("application/json"))),
            None,
            "{junk}"
        );
    }
    let bytes = [0xff, 0xfe, 0x00, 0x7b];
    let d = Doc {
        url: &u,
        media_type: None,
        bytes: &bytes,
    };
    assert_eq!(recognise(d), None);
}

#[test]
fn the_collection_is_its_id_or_a_pages_part_of() {
    let o = Options::default();
    let c = url("http://example.org/activity/all-changes");
    assert_eq!(
        collection(doc(&c, COLLECTION, None), &o).unwrap(),
        url(BASE)
    );
    let p = url(P1);
    let body = page(1, Some(0), &[&act("Update", 9, "2018-03-10T10:00:00Z")]);
    assert_eq!(collection(doc(&p, &body, None), &o).unwrap(), url(BASE));
    let as_string = r#"{"type": "OrderedCollectionPage", "partOf": "https://example.org/activity/all-changes", "orderedItems": []}"#;
    assert_eq!(collection(doc(&p, as_string, None), &o).unwrap(), url(BASE));
    let orphan = r#"{"type": "OrderedCollectionPage", "orderedItems": []}"#;
    let e = collection(doc(&p, orphan, None), &o).unwrap_err();
    assert_eq!(e.url, P1);
    assert!(e.message.contains("without partOf"), "{e}");
    assert!(collection(doc(&p, "not json", None), &o).is_err());
    assert!(collection(doc(&p, r#"{"type": "Manifest", "id": "x"}"#, None), &o).is_err());
}

/// §2.2's page: two Updates, oldest first; the walk reads them newest first and hands them over
/// oldest first.
#[test]
fn a_first_harvest_walks_back_from_the_last_page_to_the_first() {
    let docs = [
        (BASE, COLLECTION.to_string()),
        (
            P2,
            page(
                2,
                Some(1),
                &[
                    &act("Create", 3, "2018-03-12T08:00:00Z"),
                    &act("Delete", 4, "2018-03-12T09:00:00Z"),
                ],
            ),
        ),
        (
            P1,
            page(
                1,
                Some(0),
                &[
                    &act("Update", 9, "2018-03-10T10:00:00Z"),
                    &act("Update", 2, "2018-03-11T16:30:00Z"),
                ],
            ),
        ),
        (
            P0,
            page(0, None, &[&act("Create", 1, "2018-01-01T00:00:00Z")]),
        ),
    ];
    let h = harvest(None, BASE, &docs);
    h.end.unwrap();
    assert_eq!(h.fetched, [BASE, P2, P1, P0]);
    assert_eq!(
        h.entries,
        [
            fetched(manifest(3), Some(Change::Created), "2018-03-12T08:00:00Z"),
            deleted(manifest(4), "2018-03-12T09:00:00Z"),
            fetched(manifest(9), None, "2018-03-10T10:00:00Z"),
            fetched(manifest(2), None, "2018-03-11T16:30:00Z"),
            fetched(manifest(1), Some(Change::Created), "2018-01-01T00:00:00Z"),
        ]
    );
    assert!(h.warnings.is_empty(), "{:?}", h.warnings);
    assert_eq!(
        h.reader.sync_point(),
        Some((
            ts("2018-03-12T09:00:00Z"),
            "endTime of the newest activity (IIIF Change Discovery 1.0 §3.5)".to_string()
        ))
    );
}

#[test]
fn the_walk_stops_at_the_first_activity_before_the_last_crawl() {
    let docs = [
        (BASE, COLLECTION.to_string()),
        (
            P2,
            page(2, Some(1), &[&act("Update", 5, "2018-03-12T08:00:00Z")]),
        ),
        (
            P1,
            page(
                1,
                Some(0),
                &[
                    &act("Update", 9, "2018-03-10T10:00:00Z"),
                    &act("Update", 2, "2018-03-11T16:30:00Z"),
                ],
            ),
        ),
        (
            P0,
            page(0, None, &[&act("Create", 1, "2018-01-01T00:00:00Z")]),
        ),
    ];
    let h = harvest(Some("2018-03-11T00:00:00Z"), BASE, &docs);
    h.end.unwrap();
    // Page 0 is never fetched: manifest 9 (before the last crawl) ended the walk.
    assert_eq!(h.fetched, [BASE, P2, P1]);
    assert_eq!(
        h.entries,
        [
            fetched(manifest(5), None, "2018-03-12T08:00:00Z"),
            fetched(manifest(2), None, "2018-03-11T16:30:00Z"),
        ]
    );
    assert_eq!(h.reader.sync_point().unwrap().0, ts("2018-03-12T08:00:00Z"));
}

#[test]
fn nothing_newer_than_the_last_crawl_keeps_the_sync_point() {
    let docs = [
        (BASE, COLLECTION.to_string()),
        (
            P2,
            page(2, Some(1), &[&act("Update", 5, "2018-03-12T08:00:00Z")]),
        ),
    ];
    let h = harvest(Some("2019-01-01T00:00:00Z"), BASE, &docs);
    h.end.unwrap();
    assert_eq!(h.fetched, [BASE, P2]);
    assert!(h.entries.is_empty());
    assert_eq!(h.reader.sync_point(), None);
    // An activity at the last crawl itself is not before it (§3.5.2 step 4.1): read again,
    // but nothing is newer, so the sync point stays.
    let docs = [
        (BASE, COLLECTION.to_string()),
        (
            P2,
            page(2, None, &[&act("Update", 5, "2018-03-12T08:00:00Z")]),
        ),
    ];
    let h = harvest(Some("2018-03-12T08:00:00Z"), BASE, &docs);
    h.end.unwrap();
    assert_eq!(
        h.entries,
        [fetched(manifest(5), None, "2018-03-12T08:00:00Z")]
    );
    assert_eq!(h.reader.sync_point(), None);
}

#[test]
fn the_newest_activity_for_an_object_wins_across_pages() {
    // Manifest 7 created on page 0, updated on page 1 and updated again (a repeat of the same
    // activity, as an aggregated stream may list it) on page 2.
    let update = act("Update", 7, "2018-05-01T00:00:00Z");
    let docs = [
        (BASE, COLLECTION.to_string()),
        (P2, page(2, Some(1), &[&update, &update])),
        (
            P1,
            page(
                1,
                Some(0),
                &[
                    &act("Update", 7, "2018-04-01T00:00:00Z"),
                    &act("Delete", 7, "2018-04-02T00:00:00Z"),
                ],
            ),
        ),
        (
            P0,
            page(0, None, &[&act("Create", 7, "2018-01-01T00:00:00Z")]),
        ),
    ];
    let h = harvest(None, BASE, &docs);
    h.end.unwrap();
    assert_eq!(h.fetched, [BASE, P2, P1, P0]);
    assert_eq!(
        h.entries,
        [fetched(manifest(7), None, "2018-05-01T00:00:00Z")]
    );
}

#[test]
fn a_prev_already_read_is_a_loop() {
    let docs = [
        (BASE, COLLECTION.to_string()),
        (
            P2,
            page(2, Some(1), &[&act("Update", 5, "2018-03-12T08:00:00Z")]),
        ),
        (
            P1,
            page(1, Some(2), &[&act("Update", 6, "2018-03-11T08:00:00Z")]),
        ),
    ];
    let h = harvest(None, BASE, &docs);
    let e = h.end.unwrap_err();
    assert_eq!(e.url, P1);
    assert!(e.message.contains("loop"), "{e}");
    assert_eq!(h.fetched, [BASE, P2, P1]);
    assert_eq!(h.reader.sync_point(), None);
    // A collection whose last page is itself.
    let selfish = COLLECTION.replace(P2, BASE);
    let h = harvest(None, BASE, &[(BASE, selfish)]);
    assert!(h.end.unwrap_err().message.contains("loop"));
}

/// §3.3 `target`: a Move is the removal of the old URI and the inclusion of the new one; both
/// are decided by it, so older activities on either are skipped.
#[test]
fn a_move_deletes_the_old_uri_and_fetches_the_new() {
    let moved = r#"{ "type": "Move",
      "object": { "id": "https://example.org/iiif/1/manifest", "type": "Manifest" },
      "target": { "id": "http://example.org/a/manifest", "type": "Manifest" },
      "endTime": "2018-06-01T00:00:00Z" }"#;
    let older_b = r#"{ "type": "Create", "object": { "id": "http://example.org/a/manifest", "type": "Manifest" }, "endTime": "2018-02-01T00:00:00Z" }"#;
    let docs = [
        (BASE, COLLECTION.to_string()),
        (P2, page(2, Some(1), &[moved])),
        (
            P1,
            page(
                1,
                None,
                &[
                    &act("Create", 1, "2018-01-01T00:00:00Z"),
                    older_b,
                    &act("Update", 1, "2018-03-01T00:00:00Z"),
                ],
            ),
        ),
    ];
    let h = harvest(None, BASE, &docs);
    h.end.unwrap();
    assert_eq!(
        h.entries,
        [
            deleted(manifest(1), "2018-06-01T00:00:00Z"),
            fetched(
                url("http://example.org/a/manifest"),
                None,
                "2018-06-01T00:00:00Z"
            ),
        ]
    );
    let no_target = moved.replace("target", "elsewhere");
    let h = harvest(
        None,
        BASE,
        &[
            (BASE, COLLECTION.into()),
            (P2, page(2, None, &[&no_target])),
        ],
    );
    assert!(h.entries.is_empty());
    assert!(
        h.warnings[0].contains("a Move without target.id: skipped"),
        "{:?}",
        h.warnings
    );
}

/// §2.1.5's Refresh, in a stream where manifest 1 was updated and manifest 2 deleted before it,
/// and the refresh re-issued manifest 1 after it.
fn refreshed_stream() -> [(&'static str, String); 4] {
    let refresh = r#"{ "type": "Refresh", "summary": "System refresh initiated", "startTime": "2020-06-21T00:00:00Z" }"#;
    [
        (BASE, COLLECTION.to_string()),
        (
            P2,
            page(
                2,
                Some(1),
                &[refresh, &act("Update", 1, "2020-06-21T00:01:00Z")],
            ),
        ),
        (
            P1,
            page(
                1,
                Some(0),
                &[
                    &act("Update", 3, "2020-06-01T00:00:00Z"),
                    &act("Delete", 2, "2020-06-02T00:00:00Z"),
                    &act("Update", 1, "2020-06-03T00:00:00Z"),
                ],
            ),
        ),
        (
            P0,
            page(
                0,
                None,
                &[
                    &act("Create", 1, "2019-01-01T00:00:00Z"),
                    &act("Delete", 1, "2019-02-01T00:00:00Z"),
                ],
            ),
        ),
    ]
}

#[test]
fn a_refresh_ends_a_first_harvest() {
    let h = harvest(None, BASE, &refreshed_stream());
    h.end.unwrap();
    assert_eq!(h.fetched, [BASE, P2]);
    assert_eq!(
        h.entries,
        [fetched(manifest(1), None, "2020-06-21T00:01:00Z")]
    );
    assert!(h.warnings.is_empty(), "{:?}", h.warnings);
    assert_eq!(h.reader.sync_point().unwrap().0, ts("2020-06-21T00:01:00Z"));
}

#[test]
fn after_a_refresh_an_incremental_harvest_reads_only_deletions() {
    let h = harvest(Some("2020-05-01T00:00:00Z"), BASE, &refreshed_stream());
    h.end.unwrap();
    // Page 0 is before the last crawl: the walk stops at its newest activity.
    assert_eq!(h.fetched, [BASE, P2, P1, P0]);
    assert_eq!(
        h.entries,
        [
            fetched(manifest(1), None, "2020-06-21T00:01:00Z"),
            // Manifest 3's update before the Refresh is skipped (onlyDelete); the deletion of
            // manifest 2 is not; manifest 1's older update was decided already.
            deleted(manifest(2), "2020-06-02T00:00:00Z"),
        ]
    );
}

/// §2.1.4's Add and Remove, in the aggregated stream they name.
#[test]
fn add_and_remove_count_in_the_stream_they_name() {
    let agg = "https://example.org/activity/aggregated-changes";
    let collection = COLLECTION.replace(BASE, agg);
    let add = r#"{ "type": "Add", "summary": "Added newly discovered manifest to stream",
      "object": { "id": "https://example.org/iiif/1/manifest", "type": "Manifest" },
      "target": { "id": "https://example.org/activity/aggregated-changes", "type": "OrderedCollection" },
      "endTime": "2019-11-22T00:00:00Z" }"#;
    let remove = r#"{ "type": "Remove", "summary": "Removed manifest from stream due to being out of scope",
      "object": { "id": "https://example.org/iiif/2/manifest", "type": "Manifest" },
      "origin": { "id": "https://example.org/activity/aggregated-changes", "type": "OrderedCollection" },
      "endTime": "2019-11-23T00:00:00Z" }"#;
    let elsewhere = add
        .replace("aggregated-changes", "other-stream")
        .replace("iiif/1/", "iiif/3/");
    let docs = [
        (agg, collection),
        (P2, page(2, None, &[add, &elsewhere, remove])),
    ];
    let h = harvest(None, agg, &docs);
    h.end.unwrap();
    assert_eq!(
        h.entries,
        [
            fetched(manifest(1), None, "2019-11-22T00:00:00Z"),
            deleted(manifest(2), "2019-11-23T00:00:00Z"),
        ]
    );
    assert_eq!(h.warnings.len(), 1, "{:?}", h.warnings);
    assert!(h.warnings[0].starts_with(&format!(
        "{P2}: orderedItems[1]: an Add whose target is another stream"
    )));
}

#[test]
fn unknown_activities_are_skipped_and_other_objects_mirrored_with_one_warning_per_type() {
    let canvas = |n: u32, t: &str| {
        format!(
            r#"{{ "type": "Update", "object": {{ "id": "https://example.org/iiif/c{n}", "type": "Canvas" }}, "endTime": "{t}" }}"#
        )
    };
    let like = r#"{ "type": "Like", "object": { "id": "https://example.org/iiif/5/manifest", "type": "Manifest" }, "endTime": "2018-01-03T00:00:00Z" }"#;
    let docs = [
        (BASE, COLLECTION.to_string()),
        (
            P2,
            page(
                2,
                None,
                &[
                    &canvas(1, "2018-01-01T00:00:00Z"),
                    &canvas(2, "2018-01-02T00:00:00Z"),
                    like,
                ],
            ),
        ),
    ];
    let h = harvest(None, BASE, &docs);
    h.end.unwrap();
    assert_eq!(
        h.entries,
        [
            fetched(
                url("https://example.org/iiif/c1"),
                None,
                "2018-01-01T00:00:00Z"
            ),
            fetched(
                url("https://example.org/iiif/c2"),
                None,
                "2018-01-02T00:00:00Z"
            ),
        ]
    );
    assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
    assert!(h.warnings[0].contains("unknown activity type \"Like\""));
    assert!(h.warnings[1].contains("of type Canvas"));
}

#[test]
fn a_time_without_zone_is_utc_and_disorder_is_warned() {
    let docs = [
        (BASE, COLLECTION.to_string()),
        (
            P2,
            page(
                2,
                None,
                &[
                    &act("Update", 1, "2018-03-12T08:00:00"),
                    &act("Update", 2, "2018-03-01T00:00:00Z"),
                ],
            ),
        ),
    ];
    let h = harvest(None, BASE, &docs);
    h.end.unwrap();
    assert_eq!(
        h.entries,
        [
            fetched(manifest(1), None, "2018-03-12T08:00:00Z"),
            fetched(manifest(2), None, "2018-03-01T00:00:00Z"),
        ]
    );
    assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
    assert!(h.warnings[0].contains("orderedItems[0]: the time has no zone; read as UTC"));
    assert!(h.warnings[1].contains("not ordered oldest first"));
    assert_eq!(h.reader.sync_point().unwrap().0, ts("2018-03-12T08:00:00Z"));
}

/// §2.1.1: a level 0 list has no times: everything is read, and there is no sync point.
#[test]
fn activities_without_a_time_are_read_with_a_warning() {
    let level0 = r#"{ "type": "Update", "object": { "id": "https://example.org/iiif/1/manifest", "type": "Manifest" } }"#;
    let collection = format!(
        r#"{{ "@context": "http://iiif.io/api/discovery/1/context.json", "id": "{BASE}",
        "type": "OrderedCollection", "orderedItems": [{level0}] }}"#
    );
    let h = harvest(Some("2020-01-01T00:00:00Z"), BASE, &[(BASE, collection)]);
    h.end.unwrap();
    assert_eq!(
        h.entries,
        [Entry {
            uri: manifest(1),
            change: None,
            time: None,
            bytes: Bytes::At(manifest(1)),
        }]
    );
    assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
    assert!(h.warnings[0].contains("no last page"));
    assert!(h.warnings[1].contains("1 activities have no time"));
    assert_eq!(h.reader.sync_point(), None);
}

#[test]
fn a_collection_without_last_or_items_and_a_non_stream_are_errors() {
    let no_last = COLLECTION.replace("\"last\"", "\"later\"");
    let h = harvest(None, BASE, &[(BASE, no_last)]);
    assert!(h.end.unwrap_err().message.contains("without last"));
    let h = harvest(None, BASE, &[(BASE, r#"{"type": "Manifest"}"#.to_string())]);
    assert!(h.end.is_err());
    let h = harvest(None, BASE, &[(BASE, "<html/>".to_string())]);
    assert!(h.end.is_err());
}
