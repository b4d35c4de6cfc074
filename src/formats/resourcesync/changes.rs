//! Collecting the change events a mirror has not applied yet (ResourceSync 1.1 §10.2): from a
//! Change List, a Change List Index (children in forward order with `from`/`until`), a Change
//! List Archive when the index no longer reaches back far enough, or a 2012-draft change set
//! chain walked back through `prev` links.
//!
//! Closed lists already processed are never fetched again; open lists are re-fetched with a
//! conditional GET (304 = nothing new). A gap — the earliest list starting after the sync
//! point, or closed lists that do not abut — is an error before anything is applied.
//! Event time = `datetime`, else `lastmod` (1.0, 2012 draft), else the previous entry's time
//! (applied in document order, with a warning). Events before the sync point are skipped;
//! equal times are replayed.

use crate::engine::discover::Collection;
use crate::engine::documents::{Documents, OpenedDocument};
use crate::engine::expected::Refused;
use crate::engine::plan::Declared;
use crate::engine::sync_point;
use crate::error::SourceError;
use crate::model::{Scope, Validators};
use crate::rs::document::{Capability, Change, Root};
use crate::store::catalog::DocumentRecord;
use crate::store::Catalog;
use jiff::Timestamp;
use std::collections::HashSet;
use std::sync::Arc;
use url::Url;

/// The 2012 draft's change set relation (`rel="prev http://www.openarchives.org/rs/changeset"`).
pub const CHANGESET_REL: &str = "http://www.openarchives.org/rs/changeset";
/// How many change sets a `prev` chain may have.
const MAX_CHAIN: usize = 1000;

/// One change to a resource, as a Change List states it.
#[derive(Debug, Clone)]
pub struct Event {
    pub uri: Url,
    pub change: Change,
    /// `datetime`, else `lastmod`; None only when the source gave neither (see `inherited`).
    pub time: Option<Timestamp>,
    /// The time used for ordering when `time` is None: the previous entry's.
    pub order_time: Option<Timestamp>,
    pub declared: Declared,
    pub media_type: Option<crate::rs::document::MediaType>,
    pub duplicates: Vec<Url>,
    pub document: String,
    pub line: u64,
    pub scope: Arc<Scope>,
    /// Dated later than the list was read (see `engine::sync_point`): applied, but the sync
    /// point never moves to it.
    pub future: bool,
    /// A `deleted` entry dated only by `lastmod`, before the sync point. ResourceSync 1.0
    /// lists (resync-build's among them) give a delete the lastmod of the state that was
    /// deleted, not the time of the delete, so its time says nothing about whether it was
    /// applied: the mirror decides (see `incremental`).
    pub stale_delete: bool,
    /// An entry without `datetime`: its `lastmod` orders it, but is no time of the change: it
    /// is recorded without one, and a feed leaves it out (IFCC-0001: a generator must ignore
    /// it).
    pub undated: bool,
    /// Where the source keeps versions of the resource (its `rel="memento"`,
    /// `rel="timegate"` and `rel="timemap"` links: the 2012 draft §6.2, ResourceSync 1.1 §14).
    pub versions: SourceVersions,
    /// Not a listed change: an earlier state of the resource the source keeps, to be fetched
    /// from a memento before the listed changes are applied (`versions` reads them).
    pub memento: Option<MementoOf>,
    /// A patch the source offers from the previous state to this one (`rel=".../rs/terms/
    /// patch"`, the 2012 draft's `.../rs/partial`): see `patch`.
    pub patch: Option<crate::rs::document::Link>,
}

/// An entry's links to the versions the source keeps of its resource.
#[derive(Debug, Clone, Default)]
pub struct SourceVersions {
    /// `rel="memento"`: the version this change made, and its `modified` if the link says.
    pub memento: Option<(Url, Option<Timestamp>)>,
    pub timegate: Option<Url>,
    pub timemap: Option<Url>,
}

impl SourceVersions {
    fn of(links: &[crate::rs::document::Link]) -> SourceVersions {
        let first = |rel: &str| links.iter().find(|l| l.has_rel(rel));
        SourceVersions {
            memento: first("memento").map(|l| (l.href.clone(), l.modified)),
            timegate: first("timegate").map(|l| l.href.clone()),
            timemap: first("timemap").map(|l| l.href.clone()),
        }
    }
}

/// Where an earlier state comes from: a memento, and how it was found.
#[derive(Debug, Clone)]
pub struct MementoOf {
    /// The memento's URI as the source gave it.
    pub url: Url,
    /// Its raw form (a Wayback-style archive's `id_`), asked for first when there is one.
    pub raw: Option<Url>,
    /// The listed change it is the state of (its index among the events), if one.
    pub listed: Option<usize>,
}

impl Event {
    /// The time this event may move the sync point to: none for a future-dated one.
    pub(crate) fn sync_time(&self) -> Option<Timestamp> {
        self.order_time.filter(|_| !self.future)
    }
}

/// A Change List as an index (or archive, or capability list) names it.
#[derive(Debug, Clone)]
pub struct ListRef {
    pub url: Url,
    pub from: Option<Timestamp>,
    pub until: Option<Timestamp>,
}

/// A closed Change List read in full in this run.
#[derive(Debug, Clone)]
pub struct ClosedList {
    pub url: String,
    pub from: Option<Timestamp>,
    pub until: Timestamp,
}

/// Everything collected for one collection.
#[derive(Debug, Default)]
pub struct Changes {
    /// Events at or after the sync point, stable-sorted by event time (not coalesced).
    pub events: Vec<Event>,
    pub refused: Vec<Refused>,
    pub closed_read: Vec<ClosedList>,
    pub documents: Vec<DocumentRecord>,
    /// Closed lists skipped because an earlier run processed them.
    pub closed_skipped: u64,
    /// Open lists answered 304.
    pub not_modified: u64,
    /// Events before the sync point.
    pub skipped_before: u64,
    pub warnings: Vec<String>,
    /// How the lists were found, for -v and dry runs.
    pub trail: Vec<String>,
}

/// Where a collection's changes are, if it advertises any: (change document, archive). The
/// Capability List's `changelist` (and `changelist-archive`); a Change List given directly;
/// a list's `rs:ln rel="up"` Capability List; a 2012 Sitemap's `current` change set link.
pub(crate) fn location(
    docs: &Documents<'_>,
    collection: &Collection,
) -> Result<Option<(Url, Option<Url>)>, SourceError> {
    let archive = collection.url_of(&Capability::ChangeListArchive).cloned();
    if let Some(url) = collection.url_of(&Capability::ChangeList) {
        return Ok(Some((url.clone(), archive)));
    }
    let Some(doc) = &collection.opened else {
        return Ok(None);
    };
    let header = doc.header();
    if header.alpha_changeset || header.capability() == Some(Capability::ChangeList) {
        return Ok(Some((doc.url.clone(), archive)));
    }
    if let Some(l) = header
        .links
        .iter()
        .find(|l| l.has_rel("current") && l.has_rel(CHANGESET_REL))
    {
        return Ok(Some((l.href.clone(), None)));
    }
    let Some(up) = header
        .link("up")
        .or_else(|| header.link("resourcesync"))
        .map(|l| l.href.clone())
    else {
        return Ok(None);
    };
    let mut cl = docs.fetch(&up, &docs.scope_for(&up))?;
    if cl.header().capability() != Some(Capability::CapabilityList) {
        return Ok(None);
    }
    let (mut changelist, mut archive) = (None, None);
    while let Some(e) = cl.reader.next_entry()? {
        match e.md.capability {
            Some(Capability::ChangeList) => changelist = Some(e.loc),
            Some(Capability::ChangeListArchive) => archive = Some(e.loc),
            _ => {}
        }
    }
    Ok(changelist.map(|u| (u, archive)))
}

/// A gap in the change history: exit 4 before anything is applied.
fn gap(collection: &str, from: Timestamp, to: Timestamp) -> SourceError {
    SourceError::Gap {
        collection: collection.to_string(),
        from,
        to,
        covering: "Change List or Change List Archive",
    }
}

pub struct Collector<'a, 'b> {
    pub docs: &'a Documents<'b>,
    pub catalog: Option<&'a Catalog>,
    /// Use conditional GETs for open lists (not when replaying from --from).
    pub conditional: bool,
    pub collection: String,
    pub since: Timestamp,
    pub out: Changes,
    seen: HashSet<String>,
}

impl<'a, 'b> Collector<'a, 'b> {
    pub(crate) fn new(
        docs: &'a Documents<'b>,
        catalog: Option<&'a Catalog>,
        collection: &str,
        since: Timestamp,
    ) -> Self {
        Collector {
            docs,
            catalog,
            conditional: true,
            collection: collection.to_string(),
            since,
            out: Changes::default(),
            seen: HashSet::new(),
        }
    }

    /// Following from the beginning of time (a collection with no Resource List, whose first
    /// baseline set its sync point there): the first list's `from` is where the source's
    /// history starts, not a gap after the sync point (IFCC-0001: a Change List need not
    /// convey every change in the site's history).
    fn follows_from_the_start(&self) -> bool {
        self.since == Timestamp::UNIX_EPOCH
    }

    fn validators(&self, url: &Url) -> Result<Validators, SourceError> {
        let Some(c) = self.catalog.filter(|_| self.conditional) else {
            return Ok(Validators::default());
        };
        let (etag, last_modified) =
            c.open_list_validators(url.as_str())
                .map_err(|e| SourceError::Unusable {
                    url: url.to_string(),
                    message: format!("catalog: {e}"),
                })?;
        Ok(Validators {
            etag,
            last_modified,
        })
    }

    fn processed(&self, url: &Url) -> bool {
        self.catalog
            .and_then(|c| c.change_list_processed(url.as_str()).ok())
            .unwrap_or(false)
    }

    /// Collect from a change document at `url` (Change List, Change List Index or 2012 change
    /// set), or from `opened` when discovery already opened it.
    pub(crate) fn collect(
        mut self,
        url: &Url,
        opened: Option<OpenedDocument>,
        archive: Option<&Url>,
    ) -> Result<Changes, SourceError> {
        let scope = self.docs.scope_for(url);
        let doc = match opened {
            Some(d) => Some(d),
            None => self.docs.open(url, &scope, &self.validators(url)?)?,
        };
        let Some(doc) = doc else {
            self.out.not_modified += 1;
            self.out.trail.push(format!("{url}: not modified (304)"));
            return Ok(self.out);
        };
        let header = doc.header().clone();
        if header.alpha_changeset {
            self.alpha_chain(doc)?;
        } else {
            match header.capability() {
                Some(Capability::ChangeList) | Some(Capability::ChangeListArchive) => {}
                other => {
                    return Err(SourceError::Unusable {
                        url: doc.url.to_string(),
                        message: format!(
                            "this is a {} document; incremental needs a Change List",
                            other
                                .map(|c| c.to_string())
                                .unwrap_or_else(|| "plain sitemap".into())
                        ),
                    })
                }
            }
            if header.root == Root::SitemapIndex {
                let archive = archive
                    .cloned()
                    .or_else(|| header.link("archives").map(|l| l.href.clone()));
                self.index(doc, archive.as_ref())?;
            } else {
                let from = header.md.from.or(header.md.at);
                self.seen.insert(doc.url.to_string());
                if let Some(from) =
                    from.filter(|f| *f > self.since && !self.follows_from_the_start())
                {
                    // The list starts after the sync point: only an archive can fill the gap.
                    let archive = archive
                        .cloned()
                        .or_else(|| header.link("archives").map(|l| l.href.clone()));
                    let Some(archive) = archive else {
                        return Err(gap(&self.collection, self.since, from));
                    };
                    let mut lists = self.archive_lists(&archive)?;
                    lists.push(ListRef {
                        url: doc.url.clone(),
                        from: Some(from),
                        until: header.md.until,
                    });
                    lists.sort_by_key(|l| l.from);
                    self.check_gaps(&lists)?;
                    // Reads the archived lists; this one is marked seen and read below.
                    self.lists(lists)?;
                }
                self.list(doc)?;
            }
        }
        self.out.events.sort_by_key(|e| e.order_time);
        Ok(self.out)
    }

    fn index(&mut self, mut doc: OpenedDocument, archive: Option<&Url>) -> Result<(), SourceError> {
        let mut lists = Vec::new();
        let mut count = 0;
        while let Some(e) = doc.reader.next_entry()? {
            count += 1;
            lists.push(ListRef {
                url: e.loc,
                // rs-test publishes at/completed on a Change List Index: `at` read as `from`.
                from: e.md.from.or(e.md.at),
                until: e.md.until,
            });
        }
        self.warnings(&mut doc);
        self.out.documents.push(doc.record(count));
        self.out
            .trail
            .push(format!("{}: Change List Index with {count} lists", doc.url));
        lists.sort_by_key(|l| l.from);
        if let Err(e) = self.check_gaps(&lists) {
            let Some(archive) = archive else {
                return Err(e);
            };
            let mut all = self.archive_lists(archive)?;
            let known: HashSet<String> = all.iter().map(|l| l.url.to_string()).collect();
            all.extend(
                lists
                    .into_iter()
                    .filter(|l| !known.contains(l.url.as_str())),
            );
            all.sort_by_key(|l| l.from);
            self.check_gaps(&all)?;
            lists = all;
        }
        self.lists(lists)
    }

    /// The lists a Change List Archive names (ResourceSync Archives: `changelist-archive`).
    fn archive_lists(&mut self, archive: &Url) -> Result<Vec<ListRef>, SourceError> {
        let mut doc = self.docs.fetch(archive, &self.docs.scope_for(archive))?;
        let cap = doc.header().capability();
        if cap != Some(Capability::ChangeListArchive) {
            return Err(SourceError::Unusable {
                url: archive.to_string(),
                message:
                    "linked as the Change List Archive but is not a changelist-archive document"
                        .into(),
            });
        }
        let mut lists = Vec::new();
        let mut count = 0;
        while let Some(e) = doc.reader.next_entry()? {
            count += 1;
            lists.push(ListRef {
                url: e.loc,
                from: e.md.from,
                until: e.md.until,
            });
        }
        self.out.documents.push(doc.record(count));
        self.out
            .trail
            .push(format!("{archive}: Change List Archive with {count} lists"));
        Ok(lists)
    }

    /// §10.2 step 2: the lists must reach back to the sync point and abut.
    fn check_gaps(&self, lists: &[ListRef]) -> Result<(), SourceError> {
        let relevant: Vec<&ListRef> = lists
            .iter()
            .filter(|l| l.until.is_none_or(|u| u >= self.since))
            .collect();
        // Every list ending before the sync point, none open: nothing newer is published yet.
        let Some(first) = relevant.first() else {
            return Ok(());
        };
        if let Some(from) = first.from {
            if from > self.since && !self.follows_from_the_start() {
                return Err(gap(&self.collection, self.since, from));
            }
        }
        for pair in relevant.windows(2) {
            if let (Some(until), Some(next_from)) = (pair[0].until, pair[1].from) {
                if next_from > until {
                    return Err(gap(&self.collection, until, next_from));
                }
            }
        }
        Ok(())
    }

    fn lists(&mut self, lists: Vec<ListRef>) -> Result<(), SourceError> {
        for l in lists {
            if !self.seen.insert(l.url.to_string()) {
                continue;
            }
            if let Some(until) = l.until {
                if until < self.since {
                    continue;
                }
                if self.processed(&l.url) {
                    self.out.closed_skipped += 1;
                    self.out.trail.push(format!(
                        "{}: closed, processed by an earlier run; not fetched",
                        l.url
                    ));
                    continue;
                }
            }
            let scope = self.docs.scope_for(&l.url);
            let validators = if l.until.is_none() {
                self.validators(&l.url)?
            } else {
                Validators::default()
            };
            match self.docs.open(&l.url, &scope, &validators)? {
                None => {
                    self.out.not_modified += 1;
                    self.out
                        .trail
                        .push(format!("{}: not modified (304)", l.url));
                }
                Some(doc) => self.list(doc)?,
            }
        }
        Ok(())
    }

    /// Read one Change List (urlset).
    fn list(&mut self, mut doc: OpenedDocument) -> Result<(), SourceError> {
        let header = doc.header().clone();
        if header.root != Root::Urlset {
            return Err(SourceError::Unusable {
                url: doc.url.to_string(),
                message: "a Change List Index inside a Change List Index is not supported".into(),
            });
        }
        let from = header.md.from.or(header.md.at);
        let events = self.entries(&mut doc, from)?;
        let count = events.1;
        self.out.trail.push(format!(
            "{}: Change List ({}) with {count} entries",
            doc.url,
            if header.md.until.is_some() {
                "closed"
            } else {
                "open"
            }
        ));
        if let Some(until) = header.md.until {
            let what = format!("{}: until", doc.url);
            let (until, warning) = sync_point::bounded(until, Timestamp::now(), &what);
            self.out.warnings.extend(warning);
            self.out.closed_read.push(ClosedList {
                url: doc.url.to_string(),
                from,
                until,
            });
        }
        self.out.documents.push(doc.record(count));
        self.out.events.extend(events.0);
        Ok(())
    }

    /// The events of one document at or after the sync point, and the number of entries.
    fn entries(
        &mut self,
        doc: &mut OpenedDocument,
        from: Option<Timestamp>,
    ) -> Result<(Vec<Event>, u64), SourceError> {
        let scope = Arc::new(self.docs.scope_for(&doc.url));
        let doc_url = doc.url.to_string();
        let header = doc.header().clone();
        let mut previous = from;
        let mut last_given: Option<Timestamp> = None;
        let mut events = Vec::new();
        let mut count = 0;
        let mut timeless = 0;
        let mut out_of_order = false;
        let read_at = Timestamp::now();
        while let Some(e) = doc.reader.next_entry()? {
            count += 1;
            if let Some(why) = &e.invalid {
                self.out.refused.push(Refused {
                    uri: e.loc.to_string(),
                    reason: format!("{doc_url}: {why}"),
                });
                continue;
            }
            let Some(change) = e.md.change else {
                self.out.warnings.push(format!(
                    "{doc_url}: line {}: {} has no change attribute; entry ignored",
                    e.line, e.loc
                ));
                continue;
            };
            let time = e.event_time();
            if let (Some(t), Some(p)) = (time, last_given) {
                out_of_order |= t < p;
            }
            last_given = time.or(last_given);
            if time.is_none() {
                timeless += 1;
            }
            let order_time = time.or(previous);
            previous = order_time;
            if let (Some(t), Some(f), Some(u)) = (time, header.md.from, header.md.until) {
                if t < f || t > u {
                    self.out.warnings.push(format!(
                        "{doc_url}: line {}: event time {t} outside the list's interval [{f}, {u}]",
                        e.line
                    ));
                }
            }
            let stale_delete = change == Change::Deleted
                && e.md.datetime.is_none()
                && order_time.is_some_and(|t| t < self.since);
            if order_time.is_some_and(|t| t < self.since) && !stale_delete {
                self.out.skipped_before += 1;
                continue;
            }
            if let Err(reason) = scope.check(&e.loc) {
                self.out.refused.push(Refused {
                    uri: e.loc.to_string(),
                    reason: format!("{reason} (listed in {doc_url}, line {})", e.line),
                });
                continue;
            }
            let future = order_time.is_some_and(|t| sync_point::is_future(t, read_at));
            if future {
                self.out.warnings.push(format!(
                    "{doc_url}: line {}: {} {} is dated {}, later than the list was read ({}): \
                     applied, but the sync point does not move past the time of reading",
                    e.line,
                    change.as_str(),
                    e.loc,
                    order_time.map(|t| t.to_string()).unwrap_or_default(),
                    read_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                ));
            }
            events.push(Event {
                future,
                stale_delete,
                undated: e.md.datetime.is_none(),
                versions: SourceVersions::of(&e.links),
                memento: None,
                patch: crate::formats::resourcesync::patch::offered(&e.links).cloned(),
                duplicates: e.duplicates().into_iter().map(|l| l.href.clone()).collect(),
                declared: Declared {
                    lastmod: e.lastmod,
                    length: e.md.length,
                    digests: e.md.hash,
                    encoding: e.md.encoding,
                    categories: e.categories,
                },
                media_type: e.md.media_type,
                uri: e.loc,
                change,
                time,
                order_time,
                document: doc_url.clone(),
                line: e.line,
                scope: scope.clone(),
            });
        }
        if timeless > 0 {
            self.out.warnings.push(format!(
                "{doc_url}: {timeless} entries have neither datetime nor lastmod; applied in document order"
            ));
        }
        // An entry without `datetime` is applied by its `lastmod` (the one time ResourceSync
        // 1.0 and the 2012 draft give a change), but a feed must ignore it (IFCC-0001, "For
        // Feed Generators"): it is recorded without a time of change, and each one is a
        // warning in the run's problems (`engine::changes`).
        let undated = events.iter().filter(|e| e.undated).count();
        if undated > 0 {
            self.out.warnings.push(format!(
                "{doc_url}: {undated} entr{} no datetime: applied (ordered by lastmod where \
                 given), but recorded without a time of change and left out of feeds \
                 (IFCC-0001); each is in the run's problems",
                if undated == 1 { "y has" } else { "ies have" },
            ));
        }
        if out_of_order {
            self.out.warnings.push(format!(
                "{doc_url}: entries are not in forward chronological order; applied by event time"
            ));
        }
        self.warnings(doc);
        Ok((events, count))
    }

    /// 2012 draft: walk back through `prev` links until a change at or before the sync point
    /// (or the start of the chain), then take the change sets oldest first.
    fn alpha_chain(&mut self, first: OpenedDocument) -> Result<(), SourceError> {
        let mut collected: Vec<(DocumentRecord, Vec<Event>)> = Vec::new();
        let mut next = Some(first);
        while let Some(mut doc) = next.take() {
            let url = doc.url.to_string();
            self.seen.insert(url.clone());
            let prev = doc
                .header()
                .links
                .iter()
                .find(|l| l.has_rel("prev") && l.has_rel(CHANGESET_REL))
                .map(|l| l.href.clone());
            let skipped = self.out.skipped_before;
            let from = doc.header().md.from;
            let (events, count) = self.entries(&mut doc, from)?;
            let reaches_back = self.out.skipped_before > skipped
                || events
                    .iter()
                    .any(|e| e.order_time.is_some_and(|t| t <= self.since));
            self.out
                .trail
                .push(format!("{url}: 2012 change set with {count} entries"));
            collected.push((doc.record(count), events));
            match prev {
                Some(p) if !reaches_back && !self.seen.contains(p.as_str()) => {
                    if collected.len() >= MAX_CHAIN {
                        return Err(SourceError::Unusable {
                            url,
                            message: format!("change set chain longer than {MAX_CHAIN}"),
                        });
                    }
                    next = Some(self.docs.fetch(&p, &self.docs.scope_for(&p))?);
                }
                Some(_) => {}
                None if !reaches_back => self.out.trail.push(format!(
                    "{url}: oldest change set of the chain (no prev link); all its changes are applied"
                )),
                None => {}
            }
        }
        for (record, events) in collected.into_iter().rev() {
            self.out.documents.push(record);
            self.out.events.extend(events);
        }
        Ok(())
    }

    fn warnings(&mut self, doc: &mut OpenedDocument) {
        let url = doc.url.to_string();
        for w in doc.reader.take_warnings() {
            self.out.warnings.push(format!("{url}: {w}"));
        }
    }
}
