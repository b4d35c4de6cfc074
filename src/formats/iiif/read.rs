//! The IIIF Change Discovery 1.0 reader: the collection and page algorithms of §3.5.
//!
//! The walk starts at the collection, goes to its `last` page and from each page to its
//! `prev`, reading each page's `orderedItems` newest first (in reverse). It stops at the first
//! activity whose time is before the previous crawl (`lastCrawl`, the collection's sync point),
//! or at a `Refresh` when there was no previous crawl; otherwise at the first page.
//!
//! Only the newest activity for an object counts (§3.5.2, `processedItems`): an object met
//! again further back, on the same page or an older one, is skipped, whether the stream repeats
//! it (an aggregator's stream may list the same activity more than once, §3.5.4) or it changed
//! several times. So every object appears at most once in a harvest, and the order in which the
//! entries of different pages are applied cannot matter: each page's entries go out oldest first,
//! as the contract asks, but the pages themselves go out newest first, the order they are read.

use super::{id_of, inline_items, kind, object, strings, Kind};
use crate::engine::reader::{Bytes, Doc, Entry, Next, ReadError, Reader, Start};
use crate::model::Change;
use jiff::Timestamp;
use serde_json::{Map, Value};
use std::collections::HashSet;
use url::Url;

/// The basis of the sync point [`IiifReader::sync_point`] gives.
const BASIS: &str = "endTime of the newest activity (IIIF Change Discovery 1.0 §3.5)";

/// One harvest of a IIIF Change Discovery stream.
#[derive(Debug, Default)]
pub(crate) struct IiifReader {
    /// `lastCrawl` (§3.5.1): the collection's sync point; `None` for a first harvest.
    last_crawl: Option<Timestamp>,
    /// The identifiers of this stream (the base URL, the collection's `id`, a page's `partOf`),
    /// scheme and trailing slash left out: an `Add`'s `target` and a `Remove`'s `origin` must
    /// name it (§3.5.2).
    stream: HashSet<String>,
    /// `processedItems` (§3.5.2): the objects an entry was decided for, by URL.
    processed: HashSet<String>,
    /// Every document fetched or asked for: a `last` or `prev` among them is a loop.
    seen: HashSet<String>,
    /// `onlyDelete` (§3.5.2): a `Refresh` was passed in an incremental harvest.
    only_delete: bool,
    /// [`Next::Done`] was said.
    done: bool,
    /// The newest activity time read (at or after `lastCrawl`).
    newest: Option<Timestamp>,
    warnings: Vec<String>,
    /// Object types other than Manifest and Collection already warned about.
    warned_types: HashSet<String>,
}

/// A URL as a member of [`IiifReader::stream`]: `http://x/a/` and `https://x/a` are one stream.
fn stream_key(u: &Url) -> String {
    let s = u.as_str();
    let s = s.split_once("://").map_or(s, |(_, rest)| rest);
    s.trim_end_matches('/').to_string()
}

/// An xsd:dateTime (§3.3 `endTime`): RFC 3339; one without a zone is read as UTC (the
/// specification says the value is in UTC), with `true` to say so.
fn parse_time(s: &str) -> Option<(Timestamp, bool)> {
    if let Ok(t) = s.trim().parse::<Timestamp>() {
        return Some((t, false));
    }
    let dt = s.trim().parse::<jiff::civil::DateTime>().ok()?;
    let t = dt.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
    Some((t, true))
}

/// "a Move", "an Add".
fn with_article(ty: &str) -> String {
    let article = if ty.starts_with(['A', 'E', 'I', 'O', 'U']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {ty}")
}

/// What an activity does, once read.
enum Action {
    /// The object is there (Create, Update, Add): fetch it.
    Include(Url, Option<Change>),
    /// The object is gone (Delete, Remove).
    Remove(Url),
    /// The object moved from the first URL to the second.
    Move(Url, Url),
}

impl IiifReader {
    pub(crate) fn new() -> IiifReader {
        IiifReader::default()
    }

    fn warn(&mut self, doc: Doc<'_>, message: impl std::fmt::Display) {
        self.warnings.push(format!("{}: {message}", doc.url));
    }

    fn add_stream(&mut self, doc: Doc<'_>, id: Option<&str>) {
        if let Some(u) = id.and_then(|id| doc.url.join(id).ok()) {
            self.stream.insert(stream_key(&u));
        }
    }

    /// `Next::Fetch(url)`, unless `url` was read already in this harvest (a loop).
    fn fetch(&mut self, doc: Doc<'_>, what: &str, id: &str) -> Result<Next, ReadError> {
        let url = doc
            .url
            .join(id)
            .map_err(|e| ReadError::new(doc.url, format!("{what} {id:?} is not a URL: {e}")))?;
        if !self.seen.insert(url.to_string()) {
            return Err(ReadError::new(
                doc.url,
                format!("{what} {url} was already read in this harvest: the pages loop"),
            ));
        }
        Ok(Next::Fetch(url))
    }

    fn finish(&mut self) -> Result<Next, ReadError> {
        self.done = true;
        Ok(Next::Done)
    }

    fn read_collection(
        &mut self,
        doc: Doc<'_>,
        o: &Map<String, Value>,
        out: &mut Vec<Entry>,
    ) -> Result<Next, ReadError> {
        self.add_stream(doc, Some(doc.url.as_str()));
        self.add_stream(doc, o.get("id").and_then(Value::as_str));
        if let Some(last) = id_of(o.get("last")) {
            return self.fetch(doc, "the last page", last);
        }
        if inline_items(o).is_some() {
            self.warn(
                doc,
                "the OrderedCollection has no last page (IIIF Change Discovery 1.0 §3.1 \
                 requires one); its inline activities are read as its only page",
            );
            return self.read_page(doc, o, out);
        }
        Err(ReadError::new(
            doc.url,
            "an OrderedCollection without last: there is no page to start the walk at \
             (IIIF Change Discovery 1.0 §3.1, §3.5.1)",
        ))
    }

    /// The page algorithm (§3.5.2) on one page.
    fn read_page(
        &mut self,
        doc: Doc<'_>,
        o: &Map<String, Value>,
        out: &mut Vec<Entry>,
    ) -> Result<Next, ReadError> {
        self.add_stream(doc, id_of(o.get("partOf")));
        let empty = Vec::new();
        let items = match (o.get("orderedItems"), o.get("items")) {
            (Some(Value::Array(a)), _) => a,
            (Some(_), _) => {
                return Err(ReadError::new(doc.url, "orderedItems is not an array"));
            }
            (None, Some(Value::Array(a))) => {
                self.warn(
                    doc,
                    "the activities are in items, not orderedItems (IIIF Change Discovery \
                     1.0 §3.2); read all the same",
                );
                a
            }
            _ => {
                self.warn(
                    doc,
                    "the page has no orderedItems (IIIF Change Discovery 1.0 §3.2): \
                     no activities",
                );
                &empty
            }
        };
        let mut page = Vec::new();
        let mut newer: Option<Timestamp> = None;
        let (mut disorder, mut untimed, mut start_only) = (false, 0usize, 0usize);
        let mut stop = false;
        for (i, v) in items.iter().enumerate().rev() {
            let Some(a) = v.as_object() else {
                self.warn(
                    doc,
                    format_args!("orderedItems[{i}] is not an object: skipped"),
                );
                continue;
            };
            let ty = strings(a.get("type")).first().copied().unwrap_or("");
            // §3.3: `endTime` is when the activity finished; a `Refresh` has `startTime` instead
            // (§2.1.5), and so do some publishers' activities.
            let raw = match (a.get("endTime"), a.get("startTime")) {
                (Some(t), _) => Some(t),
                (None, Some(t)) => {
                    if ty != "Refresh" {
                        start_only += 1;
                    }
                    Some(t)
                }
                (None, None) => None,
            };
            let time = match raw {
                None => None,
                Some(t) => match t.as_str().and_then(parse_time) {
                    Some((t, assumed_utc)) => {
                        if assumed_utc {
                            self.warn(
                                doc,
                                format_args!(
                                    "orderedItems[{i}]: the time has no zone; read as UTC"
                                ),
                            );
                        }
                        Some(t)
                    }
                    None => {
                        self.warn(
                            doc,
                            format_args!("orderedItems[{i}]: the time {t} is not an xsd:dateTime; read as unknown"),
                        );
                        None
                    }
                },
            };
            match time {
                Some(t) => {
                    // §3.5.2 step 4.1: an activity before lastCrawl ends the walk.
                    if self.last_crawl.is_some_and(|lc| t < lc) {
                        stop = true;
                        break;
                    }
                    disorder |= newer.is_some_and(|n| t > n);
                    newer = Some(t);
                    self.newest = self.newest.max(Some(t));
                }
                None => untimed += 1,
            }
            if ty == "Refresh" {
                // §2.1.5 and §3.5.2 step 4.2: the publisher re-issued an activity for every
                // resource after a Refresh. A first harvest has met them all: it stops. One
                // after a previous crawl goes on further back for the deletions only
                // (`onlyDelete`), since a resource deleted before the Refresh has no activity
                // after it.
                if self.last_crawl.is_none() {
                    stop = true;
                    break;
                }
                self.only_delete = true;
                continue;
            }
            let Some(action) = self.action(doc, i, ty, a) else {
                continue;
            };
            self.apply(action, time, &mut page);
        }
        if disorder {
            self.warn(
                doc,
                "orderedItems are not ordered oldest first (IIIF Change Discovery 1.0 §3.2): \
                 the walk may stop before activities newer than the last crawl",
            );
        }
        if start_only > 0 {
            self.warn(
                doc,
                format_args!(
                    "{start_only} activities have a startTime and no endTime \
                     (IIIF Change Discovery 1.0 §3.3); their startTime is used"
                ),
            );
        }
        if untimed > 0 {
            self.warn(
                doc,
                format_args!(
                    "{untimed} activities have no time (IIIF Change Discovery 1.0 §3.3 \
                     endTime): read as unknown; the walk cannot stop at the last crawl on them"
                ),
            );
        }
        page.reverse();
        out.extend(page);
        if stop {
            return self.finish();
        }
        match id_of(o.get("prev")) {
            Some(prev) => self.fetch(doc, "the previous page", prev),
            None => self.finish(),
        }
    }

    /// What activity `a` (`orderedItems[i]`, of type `ty`) asks, if anything (§3.5.2 steps
    /// 4.5 to 4.8).
    fn action(
        &mut self,
        doc: Doc<'_>,
        i: usize,
        ty: &str,
        a: &Map<String, Value>,
    ) -> Option<Action> {
        match ty {
            "Create" | "Update" | "Add" => {
                // §2.1.4: an Add is the first mention of a resource in this stream, like a
                // Create: it exists; fetch it. Only an Add to this stream counts (§3.5.2 4.7).
                if ty == "Add" && !self.of_this_stream(doc, i, ty, a.get("target"), "target") {
                    return None;
                }
                let url = self.object_url(doc, i, ty, a, "object")?;
                let change = (ty == "Create").then_some(Change::Created);
                Some(Action::Include(url, change))
            }
            // A Remove takes the object out of this stream's scope (§2.1.4: an aggregator no
            // longer considers it in scope, or it is embargoed or being edited). The stream
            // no longer publishes it, and the mirror mirrors the stream: like a deletion, the
            // resource leaves the mirror's current state, its versions kept (§3.5.2 4.5
            // processes both as a removal). An Add brings it back.
            "Delete" | "Remove" => {
                if ty == "Remove" && !self.of_this_stream(doc, i, ty, a.get("origin"), "origin") {
                    return None;
                }
                Some(Action::Remove(self.object_url(doc, i, ty, a, "object")?))
            }
            "Move" => {
                let from = self.object_url(doc, i, ty, a, "object")?;
                let to = self.object_url(doc, i, ty, a, "target")?;
                Some(Action::Move(from, to))
            }
            "" => {
                self.warn(doc, format_args!("orderedItems[{i}] has no type: skipped"));
                None
            }
            other => {
                self.warn(
                    doc,
                    format_args!(
                        "orderedItems[{i}]: unknown activity type {other:?} (IIIF Change \
                         Discovery 1.0 §3.3): skipped"
                    ),
                );
                None
            }
        }
    }

    /// Whether an Add's `target` or a Remove's `origin` names this stream. Absent: read as
    /// this stream, with a warning; another stream's: skipped, with a warning.
    fn of_this_stream(
        &mut self,
        doc: Doc<'_>,
        i: usize,
        ty: &str,
        v: Option<&Value>,
        key: &str,
    ) -> bool {
        let Some(id) = id_of(v) else {
            self.warn(
                doc,
                format_args!(
                    "orderedItems[{i}]: {} without {key}.id (IIIF Change Discovery 1.0 \
                     §3.5.2); read as one of this stream",
                    with_article(ty)
                ),
            );
            return true;
        };
        let ours = doc
            .url
            .join(id)
            .is_ok_and(|u| self.stream.contains(&stream_key(&u)));
        if !ours {
            self.warn(
                doc,
                format_args!(
                    "orderedItems[{i}]: {} whose {key} is another stream ({id}): skipped \
                     (IIIF Change Discovery 1.0 §3.5.2)",
                    with_article(ty)
                ),
            );
        }
        ours
    }

    /// The URL of an activity's `object` or `target`, warning once per object type that is not
    /// a Manifest or Collection (§3.3: any class may appear; this mirror keeps them all).
    fn object_url(
        &mut self,
        doc: Doc<'_>,
        i: usize,
        ty: &str,
        a: &Map<String, Value>,
        key: &str,
    ) -> Option<Url> {
        let v = a.get(key);
        let Some(id) = id_of(v) else {
            self.warn(
                doc,
                format_args!(
                    "orderedItems[{i}]: {} without {key}.id: skipped",
                    with_article(ty)
                ),
            );
            return None;
        };
        let url = match Url::parse(id) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            _ => {
                self.warn(
                    doc,
                    format_args!(
                        "orderedItems[{i}]: {key}.id {id:?} is not an HTTP(S) URI \
                         (IIIF Change Discovery 1.0 §3.3): skipped"
                    ),
                );
                return None;
            }
        };
        let types = match v {
            Some(Value::Object(o)) => strings(o.get("type")),
            _ => Vec::new(),
        };
        if !types
            .iter()
            .any(|t| matches!(*t, "Manifest" | "Collection"))
        {
            let name = types.first().copied().unwrap_or("(none)").to_string();
            if self.warned_types.insert(name.clone()) {
                self.warn(
                    doc,
                    format_args!(
                        "orderedItems[{i}]: {key} of type {name}, not a IIIF Manifest or \
                         Collection (first of its type); mirrored all the same"
                    ),
                );
            }
        }
        Some(url)
    }

    /// Turn an action into entries (newest first), skipping objects already decided in this
    /// harvest (§3.5.2 step 4.3) and, after an incremental harvest passed a `Refresh`, all but
    /// removals (step 4.6).
    fn apply(&mut self, action: Action, time: Option<Timestamp>, page: &mut Vec<Entry>) {
        let included = |uri: Url, change| Entry {
            bytes: Bytes::At(uri.clone()),
            uri,
            change,
            time,
        };
        let removed = |uri: Url| Entry {
            uri,
            change: Some(Change::Deleted),
            time,
            bytes: Bytes::None,
        };
        match action {
            Action::Include(url, change) => {
                // Marked processed even when `onlyDelete` skips it: this activity is the
                // newest for the object, so an older Delete of it must not remove it.
                if self.processed.insert(url.to_string()) && !self.only_delete {
                    page.push(included(url, change));
                }
            }
            Action::Remove(url) => {
                if self.processed.insert(url.to_string()) {
                    page.push(removed(url));
                }
            }
            Action::Move(from, to) => {
                // §3.5.2 step 4.8: the removal of the old URI, the inclusion of the new one.
                // The removal is kept under `onlyDelete` too: it is a deletion in all but name.
                // `page` is newest first: pushed in this order, the removal is applied first.
                if self.processed.insert(to.to_string()) && !self.only_delete {
                    page.push(included(to, None));
                }
                if self.processed.insert(from.to_string()) {
                    page.push(removed(from));
                }
            }
        }
    }
}

impl Reader for IiifReader {
    fn start(&mut self, base: &Url, from: Start<'_>) -> Result<Url, ReadError> {
        // No checkpoint: a killed harvest walks again from the newest page; what it applied
        // already is the state the mirror holds.
        self.last_crawl = from.since;
        self.stream.insert(stream_key(base));
        self.seen.insert(base.to_string());
        Ok(base.clone())
    }

    fn read(&mut self, doc: Doc<'_>, out: &mut Vec<Entry>) -> Result<Next, ReadError> {
        let o = object(doc.bytes)
            .ok_or_else(|| ReadError::new(doc.url, "not a JSON object (IIIF Change Discovery)"))?;
        self.seen.insert(doc.url.to_string());
        match kind(&o) {
            Some(Kind::Collection) => self.read_collection(doc, &o, out),
            Some(Kind::Page) => self.read_page(doc, &o, out),
            None => Err(ReadError::new(
                doc.url,
                "neither an OrderedCollection nor an OrderedCollectionPage \
                 (IIIF Change Discovery 1.0 §3.1, §3.2)",
            )),
        }
    }

    /// The newest activity time read, once the walk is done, when it is newer than the last
    /// crawl; `None` when nothing newer was read (the sync point stays).
    fn sync_point(&self) -> Option<(Timestamp, String)> {
        if !self.done {
            return None;
        }
        let t = self.newest?;
        if self.last_crawl.is_some_and(|lc| t <= lc) {
            return None;
        }
        Some((t, BASIS.to_string()))
    }

    fn warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn lists_everything(&self) -> bool {
        false
    }
}
