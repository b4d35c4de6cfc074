//! The versions a source keeps of a resource (the 2012 draft §6.2, ResourceSync 1.1 §14), as
//! earlier states an incremental run records before it applies the listed changes: a resource
//! that changed twice between two runs keeps its middle state when the source keeps it.
//!
//! Two ways, both read here and fetched by the engine:
//! - a listed change's `rel="memento"` link (the 2012 draft §6.2.1): the state that change
//!   made, at its time (the link's `modified`, else the change's);
//! - a `rel="timemap"` link, or a `rel="timegate"` whose `Link` header names the TimeMap (the
//!   2012 draft §6.2.2, RFC 7089 §4): every memento dated after the sync point and not in the
//!   future. A change listed at a memento's datetime lends it what it declares (length,
//!   digests, lastmod), so it is verified against them.
//!
//! Each becomes an [`Event`] with [`Event::memento`] set, applied in datetime order before the
//! listed changes; its version records its own datetime and arrives `via memento`. A resource
//! whose last listed change deletes it gets none (the tombstone is its state).

use crate::engine::documents::{self, Documents};
use crate::engine::plan::Declared;
use crate::formats::memento;
use crate::formats::resourcesync::changes::{Changes, Event, MementoOf};
use crate::rs::document::Change;
use jiff::Timestamp;
use std::collections::{BTreeMap, HashSet};
use url::Url;

/// How many TimeMaps one run reads (the pages of a paged one count).
const MAX_TIMEMAPS_PER_RESOURCE: usize = 20;

/// Add to `changes.events` the earlier states the source keeps of the resources it lists,
/// dated after `since` and not later than `now`. Returns the indexes of the events added, in
/// the order they are applied (by resource, then datetime).
pub(crate) fn add(
    docs: &Documents<'_>,
    changes: &mut Changes,
    since: Timestamp,
    now: Timestamp,
) -> Vec<usize> {
    let mut by_uri: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, e) in changes.events.iter().enumerate() {
        by_uri.entry(e.uri.as_str()).or_default().push(i);
    }
    let mut added: Vec<Event> = Vec::new();
    let mut warnings = Vec::new();
    let mut trail = Vec::new();
    for listed in by_uri.values() {
        let events = &changes.events;
        let last = &events[*listed.last().expect("a group has an event")];
        if last.change == Change::Deleted {
            continue;
        }
        let mut mine: Vec<Event> = Vec::new();
        for &i in listed {
            let e = &events[i];
            if e.change == Change::Deleted {
                continue;
            }
            if let Some((url, modified)) = &e.versions.memento {
                let Some(at) = modified.or(e.time).or(e.declared.lastmod) else {
                    warnings.push(format!(
                        "{}: line {}: memento <{url}> of {} has no time (no modified, datetime \
                         or lastmod); not fetched",
                        e.document, e.line, e.uri
                    ));
                    continue;
                };
                mine.push(earlier(e, url, at, Some(i), None));
            }
        }
        let timemap = listed.iter().rev().find_map(|&i| {
            let v = &events[i].versions;
            v.timemap
                .clone()
                .map(|t| (t, false))
                .or(v.timegate.clone().map(|g| (g, true)))
        });
        if let Some((url, gate)) = timemap {
            let found = read_versions(docs, last, &url, gate, &mut warnings, &mut trail);
            for m in found {
                if m.datetime <= since || m.datetime > now {
                    continue;
                }
                if mine.iter().any(|e| e.time == Some(m.datetime)) {
                    continue;
                }
                // A change listed at the memento's datetime declares what its state is.
                let matched = listed.iter().copied().find(|&i| {
                    let e = &events[i];
                    e.change != Change::Deleted
                        && (e.time == Some(m.datetime) || e.declared.lastmod == Some(m.datetime))
                });
                let from = matched.map(|i| &events[i]).unwrap_or(last);
                let mut e = earlier(from, &m.url, m.datetime, matched, Some(&m.document));
                if matched.is_none() {
                    e.declared = Declared::default();
                    e.media_type = None;
                }
                mine.push(e);
            }
        }
        mine.sort_by_key(|e| e.time);
        added.extend(mine);
    }
    changes.warnings.extend(warnings);
    changes.trail.extend(trail);
    let first = changes.events.len();
    changes.events.extend(added);
    (first..changes.events.len()).collect()
}

/// The state `e` names (or a memento of its resource) as an earlier state: fetched from `url`
/// (its raw form first), dated `at`.
fn earlier(
    e: &Event,
    url: &Url,
    at: Timestamp,
    listed: Option<usize>,
    document: Option<&str>,
) -> Event {
    let mut out = e.clone();
    out.change = Change::Updated;
    out.time = Some(at);
    out.order_time = Some(at);
    out.duplicates = Vec::new();
    out.future = false;
    out.stale_delete = false;
    out.undated = false;
    if let Some(d) = document {
        out.document = d.to_string();
        out.line = 0;
    }
    out.memento = Some(MementoOf {
        url: url.clone(),
        raw: memento::raw(url, &e.uri),
        listed,
    });
    out
}

/// One memento a TimeMap lists, with the TimeMap it came from.
struct Found {
    url: Url,
    datetime: Timestamp,
    document: String,
}

/// The mementos of `e`'s resource its TimeMap lists (asked for through its TimeGate when
/// `gate`), following a paged TimeMap's other pages. What cannot be read is a warning: the
/// listed changes are applied all the same.
fn read_versions(
    docs: &Documents<'_>,
    e: &Event,
    url: &Url,
    gate: bool,
    warnings: &mut Vec<String>,
    trail: &mut Vec<String>,
) -> Vec<Found> {
    let mut out = Vec::new();
    let said = |why: String| format!("{}: versions of {} not read: {why}", e.document, e.uri);
    let first = if gate {
        if let Err(why) = e.scope.check(url) {
            warnings.push(said(format!("its TimeGate <{url}>: {why}")));
            return out;
        }
        match documents::fetch(docs, url, &e.scope) {
            Err(err) => {
                warnings.push(said(format!("its TimeGate: {err}")));
                return out;
            }
            Ok(got) => match got
                .link
                .as_deref()
                .and_then(|l| memento::timemap_of(l, &got.url))
            {
                Some(t) => {
                    trail.push(format!("TimeGate {url} names TimeMap {t}"));
                    t
                }
                None => {
                    warnings.push(said(format!(
                        "its TimeGate <{url}> named no rel=\"timemap\" in its Link header \
                         (RFC 7089 §2.2.1)"
                    )));
                    return out;
                }
            },
        }
    } else {
        url.clone()
    };
    let mut queue = vec![first];
    let mut seen = HashSet::new();
    while let Some(map_url) = queue.pop() {
        if !seen.insert(map_url.clone()) {
            continue;
        }
        if seen.len() > MAX_TIMEMAPS_PER_RESOURCE {
            warnings.push(said(format!(
                "more than {MAX_TIMEMAPS_PER_RESOURCE} TimeMap pages; the rest not read"
            )));
            break;
        }
        if let Err(why) = e.scope.check(&map_url) {
            warnings.push(said(format!("its TimeMap <{map_url}>: {why}")));
            continue;
        }
        let got = match documents::fetch(docs, &map_url, &e.scope) {
            Ok(got) => got,
            Err(err) => {
                warnings.push(said(format!("its TimeMap: {err}")));
                continue;
            }
        };
        match memento::read_timemap(got.doc().bytes, &got.url) {
            Ok(map) => {
                trail.push(format!(
                    "TimeMap {} lists {} memento(s) of {}",
                    got.url,
                    map.mementos.len(),
                    e.uri
                ));
                warnings.extend(map.warnings.into_iter().map(|w| format!("{}: {w}", e.uri)));
                out.extend(map.mementos.into_iter().map(|m| Found {
                    url: m.url,
                    datetime: m.datetime,
                    document: got.url.to_string(),
                }));
                queue.extend(map.more);
            }
            Err(why) => warnings.push(said(why)),
        }
    }
    out.sort_by_key(|f| f.datetime);
    out.dedup_by(|a, b| a.datetime == b.datetime);
    out
}
