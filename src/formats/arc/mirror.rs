//! Mirroring an ARC sitemap source (the ARC Sitemap specification, Appendix E): `baseline` fetches every page the
//! sitemap lists and verifies its `ai_checksum`; `incremental` follows the delta feeds from the
//! sync point; `audit` / `expected_state` compare the mirror with the current sitemap.
//!
//! The sitemap (or delta feed) is read and validated completely before anything is fetched, so
//! a broken document stops the run with nothing applied (exit 4); so does a delta feed for a
//! day that has not come yet, or a delta feed outside the site. Pages are handled like the
//! resources of a Resource List: planned with `plan::action` (lastmod and the sha256 of
//! `ai_checksum` against the mirror's current version), fetched through `apply::transfer` into
//! verified objects, failures collected. A page outside the site's scope is refused; a page
//! with `auth_required: true`, or a `robots_directive` with `noarchive` or `none`, is skipped
//! and reported, never fetched (§E.6, §E.11); `ai_indexable` is recorded, not enforced.
//! Versions arrive `arc`, each with what the sitemap said of it (`arc_versions`). A sitemap's
//! `crawl_rate` (§E.7) sets the pause between requests unless the user gave `--delay`.
//!
//! The sync point of an ARC collection (its sitemap URL) is a time T such that every change up
//! to T is in the mirror: the sitemap's `generated_at` after a baseline; then, after each
//! incremental, the latest `lastmod` applied or `generated_at` of a delta feed read, never past
//! a page that failed (a re-run retries it) and never past our own clock. A baseline with
//! failed pages still records it (the failures are in `run_problems`, the audit shows them as
//! missing, and a re-run of baseline retries them): the seed gives no other way to ask for one
//! page again, and an ARC mirror that could never be followed because one page is published
//! with a wrong checksum would help nobody.

use crate::audit::finding::{Class, Finding};
use crate::engine::apply::{self, Job, Then};
use crate::engine::changes;
use crate::engine::context::RunContext;
use crate::engine::documents::Documents;
use crate::engine::expected::Refused;
use crate::engine::expected::{Item, Walked};
use crate::engine::format::{Mirror, ToTake};
use crate::engine::listing::Listing;
use crate::engine::plan::{self, Comparison, Declared, Listed};
use crate::engine::snapshot::{self, Hooks, Planned, Snapshot, SyncPointRule};
use crate::error::{Error, NeedsBaseline, SourceError};
use crate::formats::arc::read::delta;
use crate::formats::arc::read::{self as arc, Page, ReadOptions, Sitemap};
use crate::formats::arc::records::{self as arc_records, write_arc, PageRecord, SitemapRecord};
use crate::model::{Change, ChangeOutcome};
use crate::net::{Body, Expected, FetchError, Http, Scope, Validators};
use crate::settings::{self, SourceSettings, UsageError};
use crate::store::catalog::{CurrentState, NewVersion, SyncPoint};
use crate::store::change_history::record_identity;
use crate::store::{Catalog, ObjectStore};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// How many days of delta feeds an incremental run reads one by one before it asks for a new
/// baseline instead (a cron job that stopped for months; a site without delta feeds).
pub const MAX_DELTA_DAYS: i32 = 93;

/// What an ARC source lacks when its sync point is older than [`MAX_DELTA_DAYS`].
const ARC_GAP_COVERING: &str = "delta feed the sitemap names, and more than 93 days of daily \
    delta feeds are not read one by one";

/// How far ahead of our clock a source's time may be before it is "in the future".
const CLOCK_SKEW: SignedDuration = SignedDuration::from_mins(5);

/// An ARC sitemap read for a baseline: its pages as a snapshot, planned in a listing (the
/// engine's, as for a Resource List), and what only ARC keeps.
struct ArcSnapshot {
    /// The sitemap's validators.
    validators: Validators,
    header: arc::Header,
    /// The pages to take, in the listing's order (the later entry for a URL listed twice):
    /// an entry's `line` in the listing is its place here.
    pages: Vec<Page>,
    planned: Planned,
}

/// Read the sitemap at `sitemap` (the body discovery received, else fetched) and plan its
/// pages against `catalog` in a listing in `dir`.
fn read_sitemap(
    docs: &Documents<'_>,
    s: &settings::Baseline,
    (sitemap, received): (&Url, Option<Box<Body>>),
    (catalog, objects, dir): (Option<&Catalog>, &ObjectStore, &std::path::Path),
    now: Timestamp,
) -> Result<ArcSnapshot, Error> {
    let collection = sitemap.to_string();
    let fetched = sitemap_now(docs, sitemap, received, read_options(&s.source))?;
    let Sitemap { header, pages } = fetched.sitemap;
    let mut snapshot = Snapshot {
        warnings: prefixed(&fetched.url, &header.warnings),
        at: Some(header.generated_at.min(now)),
        anchored: true,
        basis: "generated_at of the ARC sitemap".into(),
        ..Default::default()
    };
    let scope = Arc::new(page_scope(
        docs,
        &fetched.url,
        &header.site,
        &mut snapshot.warnings,
    ));
    if header.generated_at > now + CLOCK_SKEW {
        snapshot.warnings.push(format!(
            "{}: generated_at {} is in the future; the sync point is our clock instead",
            fetched.url, header.generated_at
        ));
    }
    let unique = once_each(&fetched.url, pages, &mut snapshot.warnings);
    let mut listing = Listing::create(dir, docs.filter)?;
    let document: std::sync::Arc<str> = collection.as_str().into();
    let mut taken = Vec::with_capacity(unique.len());
    for page in unique {
        let uri = page.url.to_string();
        if let Err(reason) = scope.check(&page.url) {
            let reason = format!("outside the site: {reason}");
            snapshot.refused.push(Refused { uri, reason });
            continue;
        }
        if let Some(reason) = page.skip_reason() {
            snapshot.skipped.push(Refused { uri, reason });
            continue;
        }
        listing.push(Listed {
            uri: page.url.clone(),
            declared: declared(&page),
            media_type: None,
            duplicates: Vec::new(),
            document: document.clone(),
            line: taken.len() as u64,
            scope: scope.clone(),
        })?;
        taken.push(page);
    }
    snapshot.skipped.sort_by(|a, b| a.uri.cmp(&b.uri));
    let mirror_at = crate::engine::snapshot::older_than_mirror(
        catalog,
        &collection,
        &snapshot,
        &mut listing,
        false,
    )?;
    let counts = listing.plan(catalog, &collection, objects)?;
    let mut planned = Planned::new(collection, snapshot, listing, counts);
    planned.mirror_at = mirror_at;
    planned.identity = Some((header.site.to_string(), "site of the ARC sitemap"));
    planned.list_name = "ARC sitemap";
    Ok(ArcSnapshot {
        validators: fetched.validators,
        header,
        pages: taken,
        planned,
    })
}

/// Every page once, the later entry for a URL listed twice (in the first one's place); a
/// page marked deleted in a sitemap (not a delta feed) is not listed.
fn once_each(url: &Url, pages: Vec<Page>, warnings: &mut Vec<String>) -> Vec<Page> {
    let mut unique: Vec<Page> = Vec::with_capacity(pages.len());
    let mut at_index: HashMap<String, usize> = HashMap::new();
    for page in pages {
        let uri = page.url.to_string();
        if page.deleted {
            warnings.push(format!(
                "{url}: pages[{}] {uri}: \"deleted\": true in a sitemap (not a delta feed): not listed",
                page.index
            ));
            continue;
        }
        match at_index.get(&uri) {
            Some(&i) => {
                warnings.push(format!(
                    "{url}: pages[{}] {uri} listed again; the later entry counts",
                    page.index
                ));
                unique[i] = page;
            }
            None => {
                at_index.insert(uri, unique.len());
                unique.push(page);
            }
        }
    }
    unique
}

/// The snapshot of the ARC source whose sitemap is at `sitemap`, for the engine to take as a
/// Resource List's resources are taken: each version arriving `arc` with what the sitemap says
/// of the page (`arc_versions`), paced by the sitemap's `crawl_rate`; the sync point is the
/// sitemap's `generated_at` even when pages failed (ARC has no other way to ask for one page
/// again; a re-run of baseline retries them, and the audit shows them as missing).
pub(crate) fn snapshot(
    docs: &Documents<'_>,
    s: &settings::Baseline,
    (sitemap, received): (&Url, Option<Box<Body>>),
    mirror: Mirror<'_>,
) -> Result<ToTake, Error> {
    let collection = sitemap.to_string();
    let ArcSnapshot {
        validators,
        header,
        pages,
        planned,
    } = read_sitemap(
        docs,
        s,
        (sitemap, received),
        (mirror.catalog, mirror.objects, mirror.staging),
        Timestamp::now(),
    )?;
    let crawl_delay = header.crawl_rate.map(|r| r.delay());
    // Pages skipped, refused or listed twice count as listed, as the sitemap lists them.
    let c = &planned.counts;
    let uncounted = header.pages - (c.listed + c.excluded).min(header.pages);
    let record = SitemapRecord {
        url: collection.clone(),
        site: header.site.to_string(),
        version: header.version.clone(),
        generated_at: header.generated_at,
        page_count: header.pages,
        crawl_delay,
        delta_feeds: header.delta_feeds.iter().map(|u| u.to_string()).collect(),
        etag: validators.etag.clone(),
        last_modified: validators.last_modified.clone(),
    };
    let side_rows = move |l: &Listed| -> Option<Then> {
        let page = PageRecord::of(&pages[l.line as usize], &collection, &collection);
        Some(write_arc::page_rows(page))
    };
    let hooks = Hooks {
        arrived_via: Some(crate::model::Via::Arc),
        side_rows: Some(Box::new(side_rows)),
        sync_point: SyncPointRule::EvenWithFailures,
        last_rows: Some(Box::new(move |tx, source_id, run_id| {
            crate::store::kill::point("arc.before-commit");
            write_arc::sitemap(tx, source_id, run_id, &record)
        })),
    };
    Ok(ToTake {
        planned,
        hooks,
        crawl_delay,
        uncounted,
    })
}

/// One delta page to apply: the last one listed for its URL.
struct Delta {
    page: Page,
    /// `lastmod`, else the feed's `generated_at`: the order changes are applied in.
    when: Timestamp,
    document: String,
}

/// What becomes of a delta page before any transfer (`None`: nothing, the mirror has this
/// state or a newer one already): the engine's disposal, its job made later.
type Disposal = changes::Disposal<()>;

/// What an incremental run of an ARC collection applies, all read before anything is applied:
/// the sitemap again (conditionally), then every delta feed since the sync point.
struct ArcChanges {
    record: SitemapRecord,
    collection: String,
    since: Timestamp,
    warnings: Vec<String>,
    /// What was read, said with `-v`.
    trail: Vec<String>,
    page_scope: Arc<Scope>,
    /// The pause between requests the sitemap's crawl_rate asks for.
    crawl_delay: Option<Duration>,
    /// When the changes were read: no sync point goes past it.
    now: Timestamp,
    /// The last change per URL, in the order they are applied.
    deltas: Vec<Delta>,
    refused: Vec<(String, String)>,
    skipped: BTreeMap<String, String>,
    /// The latest `generated_at` of the delta feeds read.
    feed_max: Option<Timestamp>,
}

/// What an incremental run of the ARC source at `url` applies, read and checked before
/// anything is: the recorded sitemap and where to start, the sitemap again, the delta feeds.
fn collect_changes(
    catalog: &Catalog,
    source_id: i64,
    docs: &Documents<'_>,
    s: &settings::Incremental,
    url: &Url,
    now: Timestamp,
) -> Result<ArcChanges, Error> {
    let opts = read_options(&s.source);
    let record = recorded_sitemap(catalog, source_id, url)?;
    let collection = record.url.clone();
    let since = since_of(catalog, s, &collection)?;
    let mut warnings = Vec::new();
    let mut trail = Vec::new();
    let (record, base) = sitemap_again(docs, record, opts, (&mut warnings, &mut trail))?;
    let site = Url::parse(&record.site).unwrap_or_else(|_| base.clone());
    let base = if base.scheme() == "file" {
        site.clone()
    } else {
        base
    };
    let page_scope = Arc::new(page_scope(docs, &base, &site, &mut warnings));
    let crawl_delay = record.crawl_delay;
    // The feeds are read at the pace the pages are fetched at (the engine says so if it
    // clamped it, once).
    let paced = snapshot::paced_http(&s.source, crawl_delay, &mut Vec::new());

    let days = (
        since.to_zoned(TimeZone::UTC).date(),
        now.to_zoned(TimeZone::UTC).date(),
    );
    let named = !record.delta_feeds.is_empty();
    let feeds = which_feeds(
        (&record.url, &record.delta_feeds),
        (&page_scope, &base),
        (since, now),
        days,
        &mut trail,
    )?;

    // Read them all before applying anything.
    let mut reading = FeedReading::new(
        paced.as_ref().unwrap_or(docs.http),
        &page_scope,
        (opts, now, named),
        (warnings, trail),
    );
    for u in feeds {
        reading.read(u)?;
    }
    reading.finish(&base, days);
    let FeedReading {
        warnings,
        trail,
        deltas,
        refused,
        skipped,
        feed_max,
        ..
    } = reading;
    Ok(ArcChanges {
        record,
        collection,
        since,
        warnings,
        trail,
        page_scope,
        crawl_delay,
        now,
        deltas,
        refused,
        skipped,
        feed_max,
    })
}

/// The sitemap recorded at baseline for the ARC source at `url`.
fn recorded_sitemap(catalog: &Catalog, source_id: i64, url: &Url) -> Result<SitemapRecord, Error> {
    arc_records::sitemap_of(catalog, source_id, url.as_str())?.ok_or_else(|| {
        UsageError(format!(
            "the mirror has no ARC sitemap for {url}: run rsmirror baseline first"
        ))
        .into()
    })
}

/// Where an incremental run starts: `--from`, else the collection's sync point.
fn since_of(
    catalog: &Catalog,
    s: &settings::Incremental,
    collection: &str,
) -> Result<Timestamp, Error> {
    if let Some(t) = s.from {
        return Ok(t);
    }
    let at = catalog.sync_point(collection)?.and_then(|sp| sp.at);
    at.ok_or_else(|| Error::NeedsBaseline {
        collection: collection.to_string(),
        why: NeedsBaseline::NoSyncPoint,
    })
}

/// The sitemap again, conditionally on the validators recorded: the record as the sitemap
/// now says it (the delta feeds it names, its crawl_rate) when it changed, and where it was
/// found (after redirects).
fn sitemap_again(
    docs: &Documents<'_>,
    record: SitemapRecord,
    opts: ReadOptions,
    (warnings, trail): (&mut Vec<String>, &mut Vec<String>),
) -> Result<(SitemapRecord, Url), Error> {
    let sitemap_url = &Url::parse(&record.url).map_err(|e| SourceError::Unusable {
        url: record.url.clone(),
        message: format!("the recorded sitemap URL does not parse: {e}"),
    })?;
    let validators = Validators {
        etag: record.etag.clone(),
        last_modified: record.last_modified.clone(),
    };
    let scope = docs.scope_for(sitemap_url);
    let Some(f) = fetch(docs.http, sitemap_url, &scope, &validators, opts, "sitemap")? else {
        trail.push(format!("{sitemap_url}: not modified"));
        return Ok((record, sitemap_url.clone()));
    };
    let h = &f.sitemap.header;
    warnings.extend(prefixed(&f.url, &h.warnings));
    trail.push(format!(
        "{}: {} pages, generated at {}",
        f.url, h.pages, h.generated_at
    ));
    let record = SitemapRecord {
        url: record.url,
        site: h.site.to_string(),
        version: h.version.clone(),
        generated_at: h.generated_at,
        page_count: h.pages,
        crawl_delay: h.crawl_rate.map(|r| r.delay()),
        delta_feeds: h.delta_feeds.iter().map(|u| u.to_string()).collect(),
        etag: f.validators.etag.clone(),
        last_modified: f.validators.last_modified.clone(),
    };
    Ok((record, f.url))
}

/// Which delta feeds to read: those the sitemap names, else one per day since the sync
/// point's day.
fn which_feeds(
    (sitemap, named): (&str, &[String]),
    (page_scope, base): (&Scope, &Url),
    (since, now): (Timestamp, Timestamp),
    days: (Date, Date),
    trail: &mut Vec<String>,
) -> Result<Vec<Url>, Error> {
    if named.is_empty() {
        daily_feeds(sitemap, base, (since, now), days)
    } else {
        named_feeds(named, sitemap, page_scope, days, trail)
    }
}

/// The delta feeds the sitemap names, all checked before any is read: each within the site
/// and none for a day after `today`; one for a day before the sync point's (`first_day`) is
/// not read.
fn named_feeds(
    named: &[String],
    collection: &str,
    page_scope: &Scope,
    (first_day, today): (Date, Date),
    trail: &mut Vec<String>,
) -> Result<Vec<Url>, Error> {
    let mut feeds = Vec::new();
    for f in named {
        let u = Url::parse(f).map_err(|e| SourceError::Unusable {
            url: collection.to_string(),
            message: format!("delta feed {f:?} does not parse: {e}"),
        })?;
        if let Err(reason) = page_scope.check(&u) {
            return Err(SourceError::Unusable {
                url: u.to_string(),
                message: format!(
                    "a delta feed outside the site, refused: {reason}; nothing applied"
                ),
            }
            .into());
        }
        match delta::day_of(&u) {
            Some(day) if day > today => return Err(future_feed(&u, day, today).into()),
            Some(day) if day < first_day => trail.push(format!(
                "{u}: for {day}, before the sync point's day: skipped"
            )),
            _ => feeds.push(u),
        }
    }
    Ok(feeds)
}

/// The conventional daily delta feeds (next to `base`) from the sync point's day to today,
/// unless they are more than [`MAX_DELTA_DAYS`].
fn daily_feeds(
    collection: &str,
    base: &Url,
    (since, now): (Timestamp, Timestamp),
    (first_day, today): (Date, Date),
) -> Result<Vec<Url>, Error> {
    let span = first_day.until(today).map(|s| s.get_days()).unwrap_or(0);
    if span > MAX_DELTA_DAYS {
        // A condition of the source and the mirror, not of the command line: the daily
        // feeds since the sync point are too many to read one by one (exit 4; --on-gap
        // rebaseline takes the sitemap again, fetching only what changed).
        return Err(SourceError::Gap {
            collection: collection.to_string(),
            from: since,
            to: now,
            covering: ARC_GAP_COVERING,
        }
        .into());
    }
    Ok(delta::days(first_day, today)
        .map(|d| delta::conventional_url(base, d))
        .collect())
}

/// The delta feeds of an incremental run as they are read, all before anything is applied:
/// the last change per URL, what is refused or skipped, what was said.
struct FeedReading<'h> {
    http: &'h Http,
    page_scope: &'h Scope,
    opts: ReadOptions,
    now: Timestamp,
    /// The feeds are those the sitemap names (one missing is worth a warning).
    named: bool,
    warnings: Vec<String>,
    trail: Vec<String>,
    deltas: Vec<Delta>,
    /// Where each URL's change is in `deltas`.
    at_uri: HashMap<String, usize>,
    refused: Vec<(String, String)>,
    skipped: BTreeMap<String, String>,
    /// The latest `generated_at` of the delta feeds read.
    feed_max: Option<Timestamp>,
    /// A delta feed was there.
    read_any: bool,
}

impl<'h> FeedReading<'h> {
    fn new(
        http: &'h Http,
        page_scope: &'h Scope,
        (opts, now, named): (ReadOptions, Timestamp, bool),
        (warnings, trail): (Vec<String>, Vec<String>),
    ) -> FeedReading<'h> {
        FeedReading {
            http,
            page_scope,
            opts,
            now,
            named,
            warnings,
            trail,
            deltas: Vec::new(),
            at_uri: HashMap::new(),
            refused: Vec::new(),
            skipped: BTreeMap::new(),
            feed_max: None,
            read_any: false,
        }
    }

    /// The delta feed at `u`, if there is one: a feed generated in the future stops the run.
    fn read(&mut self, u: Url) -> Result<(), Error> {
        let fetched = fetch(
            self.http,
            &u,
            self.page_scope,
            &Validators::default(),
            self.opts,
            "delta feed",
        );
        let f = match fetched {
            Ok(f) => f.expect("an unconditional GET is never answered 304"),
            Err(SourceError::Fetch(FetchError::Status {
                status: 404 | 410, ..
            })) => {
                self.trail.push(format!("{u}: no delta feed"));
                if self.named {
                    self.warnings.push(format!(
                        "{u}: named by the sitemap, but not there (HTTP 404)"
                    ));
                }
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let Sitemap { header, pages } = f.sitemap;
        if header.generated_at > self.now + CLOCK_SKEW {
            return Err(SourceError::Unusable {
                url: f.url.to_string(),
                message: format!(
                    "a delta feed generated in the future ({}, our clock says {}); nothing applied",
                    header.generated_at, self.now
                ),
            }
            .into());
        }
        self.read_any = true;
        self.warnings.extend(prefixed(&f.url, &header.warnings));
        self.trail.push(format!(
            "{}: {} pages, generated at {}",
            f.url, header.pages, header.generated_at
        ));
        self.feed_max = self.feed_max.max(Some(header.generated_at));
        let document = f.url.to_string();
        for page in pages {
            self.take(page, &document, header.generated_at);
        }
        Ok(())
    }

    /// A page of the delta feed `document`: refused outside the site or in the future,
    /// skipped when it must not be fetched, else its URL's change unless a later one is known.
    fn take(&mut self, page: Page, document: &str, generated_at: Timestamp) {
        let uri = page.url.to_string();
        if let Err(reason) = self.page_scope.check(&page.url) {
            self.refused
                .push((uri, format!("outside the site: {reason}")));
            return;
        }
        let when = page.lastmod.unwrap_or(generated_at);
        if when > self.now + CLOCK_SKEW {
            self.refused.push((
                uri,
                format!("{document}: lastmod {when} is in the future; not applied"),
            ));
            return;
        }
        if let Some(why) = page.skip_reason() {
            self.skipped.insert(uri, why);
            return;
        }
        let d = Delta {
            page,
            when,
            document: document.to_string(),
        };
        match self.at_uri.get(&uri) {
            Some(&i) if self.deltas[i].when > d.when => {}
            Some(&i) => self.deltas[i] = d,
            None => {
                self.at_uri.insert(uri, self.deltas.len());
                self.deltas.push(d);
            }
        }
    }

    /// After the last feed: a warning when no daily feed was there at all, and the changes
    /// in the order they are applied (by time, then URL).
    fn finish(&mut self, base: &Url, (first_day, today): (Date, Date)) {
        if !self.named && !self.read_any && first_day < today {
            self.warnings.push(format!(
                "no delta feed found at {} for {first_day} to {today}: if the site publishes none, rsmirror baseline picks up its changes",
                delta::conventional_url(base, today).join(".").expect("valid")
            ));
        }
        self.deltas.sort_by(|a, b| {
            a.when
                .cmp(&b.when)
                .then_with(|| a.page.url.cmp(&b.page.url))
        });
    }
}

/// `incremental --dry-run` of the ARC collection at `url`: the changes collected as a run
/// would, each printed with what it would do (`+` created, `*` updated, `-` deleted, `!`
/// refused, `=` known already, with `-v`); no page fetched, nothing written.
pub(crate) fn plan_changes(
    docs: &Documents<'_>,
    s: &settings::Incremental,
    url: &Url,
    catalog: &Catalog,
    summary: &mut crate::report::Summary,
) -> Result<(), Error> {
    let source_id = catalog.known_source_id(url.as_str())?.ok_or_else(|| {
        UsageError(format!(
            "the mirror has no ARC sitemap for {url}: run rsmirror baseline first"
        ))
    })?;
    let c = collect_changes(catalog, source_id, docs, s, url, Timestamp::now())?;
    summary.warnings.extend(c.warnings);
    // The states of the pages the feeds name, not the whole mirror's.
    let states = catalog.current_states_of(c.deltas.iter().map(|d| d.page.url.as_str()))?;
    let verbose = s.output.verbose > 0;
    for d in &c.deltas {
        let uri = d.page.url.as_str();
        if !docs.filter.admits(uri) {
            summary.excluded += 1;
            continue;
        }
        let current = states.get(uri);
        match disposal(d, current, c.since) {
            Some(Disposal::Fetch(()) | Disposal::Earlier(())) => {
                match current.filter(|c| !c.deleted) {
                    Some(here) => {
                        summary.updated += 1;
                        let was = here.lastmod.map(|t| t.to_string()).unwrap_or_default();
                        let now = d.page.lastmod.map(|t| t.to_string()).unwrap_or_default();
                        plan!("* {uri} (lastmod: {was} -> {now})");
                    }
                    None => {
                        summary.created += 1;
                        plan!("+ {uri}");
                    }
                }
            }
            Some(Disposal::Arrived(_)) => summary.updated += 1,
            Some(Disposal::Tombstone) => {
                summary.gone += 1;
                plan!("- {uri} (would be deleted)");
            }
            Some(Disposal::Event(_, ChangeOutcome::UnknownDelete)) => summary.unknown_deletes += 1,
            None | Some(Disposal::Event(..)) => {
                summary.unchanged += 1;
                if verbose {
                    plan!("= {uri}");
                }
            }
        }
    }
    for (uri, reason) in &c.refused {
        summary.refused += 1;
        plan!("! {uri} refused: {reason}");
    }
    Ok(())
}

/// `incremental` of the ARC sources whose sitemaps are at `urls`: each one's delta feeds since
/// its sync point read and planned (all before anything is applied), then applied by the
/// engine.
pub(crate) fn incremental(
    ctx: &mut RunContext<'_, '_>,
    s: &settings::Incremental,
    urls: &[Url],
) -> Result<(), Error> {
    let now = Timestamp::now();
    let sets = (urls.iter())
        .map(|url| collect_changes(ctx.catalog, ctx.source_id, ctx.docs, s, url, now))
        .collect::<Result<Vec<_>, _>>()?;
    changes::follow(ctx, s, sets)
}

/// An ARC collection's delta pages, read and planned, as the engine applies them; the sync
/// point is the feeds' time by the rule of [`delta_sync_point`], with the sitemap's record.
impl changes::ChangeSet for ArcChanges {
    type Item = Delta;
    fn collection(&self) -> &str {
        &self.collection
    }
    fn items(&self) -> &[Delta] {
        &self.deltas
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
    fn trail(&self) -> &[String] {
        &self.trail
    }
    /// The pages a feed names that are news (not those the mirror holds as they are).
    fn listed(&self, planned: usize) -> u64 {
        planned as u64
    }
    fn refused(&self) -> Vec<(&str, &str)> {
        (self.refused.iter()).map(|(u, r)| (&**u, &**r)).collect()
    }
    fn skipped(&self) -> Vec<(&str, &str)> {
        (self.skipped.iter()).map(|(u, r)| (&**u, &**r)).collect()
    }
    fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }
    fn plan(
        &self,
        states: &HashMap<String, CurrentState>,
        _warnings: &mut Vec<String>,
    ) -> Vec<(usize, changes::Disposal)> {
        let mut plan = Vec::new();
        for (i, d) in self.deltas.iter().enumerate() {
            let disposal = match disposal(d, states.get(d.page.url.as_str()), self.since) {
                None => continue,
                Some(Disposal::Fetch(())) => {
                    changes::Disposal::Fetch(job(i, &d.page, &self.page_scope))
                }
                Some(Disposal::Earlier(())) => {
                    changes::Disposal::Earlier(job(i, &d.page, &self.page_scope))
                }
                Some(Disposal::Arrived(f)) => changes::Disposal::Arrived(f),
                Some(Disposal::Tombstone) => changes::Disposal::Tombstone,
                Some(Disposal::Event(change, outcome)) => changes::Disposal::Event(change, outcome),
            };
            plan.push((i, disposal));
        }
        plan
    }
    fn settle(self, ends: changes::Ends) -> changes::Settled {
        let (at, basis) = delta_sync_point(&ends, self.since, self.feed_max, self.now);
        let ArcChanges {
            record, collection, ..
        } = self;
        let sync_point = SyncPoint {
            collection: collection.clone(),
            at: Some(at),
            anchored: true,
            basis,
        };
        changes::Settled {
            sync_point,
            rows: Box::new(move |tx, source_id, run_id| {
                crate::store::kill::point("arc.before-commit");
                write_arc::sitemap(tx, source_id, run_id, &record)?;
                record_identity(tx, &collection, &record.site, "site of the ARC sitemap")
            }),
            warnings: Vec::new(),
        }
    }
}

/// A delta page as the engine applies it: a page the feed lists is there (created or
/// updated by what the mirror holds), or deleted.
impl changes::Item for Delta {
    fn uri(&self) -> &Url {
        &self.page.url
    }
    fn stated(&self) -> Option<Change> {
        self.page.deleted.then_some(Change::Deleted)
    }
    fn event_time(&self) -> Option<Timestamp> {
        self.page.lastmod
    }
    fn lastmod(&self) -> Option<Timestamp> {
        self.page.lastmod
    }
    fn document(&self) -> &str {
        &self.document
    }
    fn applied_time(&self) -> Option<Timestamp> {
        Some(self.when)
    }
    fn failed_time(&self) -> Option<Timestamp> {
        Some(self.when)
    }
    fn version(&self, collection: &str, change: Change, f: &apply::Fetched) -> NewVersion {
        version(&self.page, f, change, collection, self.page.lastmod)
    }
    /// A page that does not match its `ai_checksum` failed: the sync point stays before it
    /// and the next run fetches it again.
    fn later_change_follows(&self) -> bool {
        false
    }
    fn side_rows(&self, collection: &str) -> Option<Then> {
        let page = PageRecord::of(&self.page, collection, &self.document);
        Some(write_arc::page_rows(page))
    }
}

/// The new sync point of an ARC collection: the latest change processed or delta feed read,
/// never past a failed change, never backwards, never past our clock.
fn delta_sync_point(
    ends: &changes::Ends,
    since: Timestamp,
    feed_max: Option<Timestamp>,
    now: Timestamp,
) -> (Timestamp, String) {
    let processed_max = ends.applied_max;
    let mut at = since
        .max(processed_max.unwrap_or(since))
        .max(feed_max.unwrap_or(since));
    let mut basis = match (processed_max, feed_max) {
        (Some(p), Some(f)) if p > f => "latest lastmod applied from the delta feeds",
        (_, Some(_)) => "generated_at of the latest delta feed read",
        (Some(_), None) => "latest lastmod applied from the delta feeds",
        (None, None) => "unchanged: no delta feed found",
    }
    .to_string();
    if let Some(f) = ends.failed_min {
        let before = f
            .checked_sub(SignedDuration::from_nanos(1))
            .unwrap_or(f)
            .max(since);
        if before < at {
            at = before;
            basis = "just before the earliest failed change (it is retried next run)".into();
        }
    }
    if at > now {
        at = now.max(since);
        basis = "our clock (the source's times are ahead of it)".into();
    }
    (at, basis)
}

/// What to do with a delta page, given the mirror's current state of its URL and the sync
/// point ("applied by lastmod": a page is news only if it is later than both).
fn disposal(d: &Delta, current: Option<&CurrentState>, since: Timestamp) -> Option<Disposal> {
    let known = current.filter(|c| !c.deleted);
    let newer_than_mirror = |c: &CurrentState| match (d.page.lastmod, c.lastmod) {
        (Some(p), Some(m)) => p > m,
        _ => true,
    };
    if d.page.deleted {
        return match known {
            _ if d.when <= since => None,
            Some(c) if !newer_than_mirror(c) => None,
            Some(_) => Some(Disposal::Tombstone),
            None if current.is_some() => {
                Some(Disposal::Event(Change::Deleted, ChangeOutcome::Unchanged))
            }
            None => Some(Disposal::Event(
                Change::Deleted,
                ChangeOutcome::UnknownDelete,
            )),
        };
    }
    // Processed before, unless the mirror never had it (a page that failed is retried).
    if d.when <= since && current.is_some() {
        return None;
    }
    match known {
        Some(c) if !newer_than_mirror(c) => None,
        // A newer lastmod, whatever the checksum says: fetched, and `decide` tells an update
        // from a touch (the same bytes under the new lastmod), as for a Change List.
        Some(_) | None => Some(Disposal::Fetch(())),
    }
}

fn future_feed(u: &Url, day: Date, today: Date) -> SourceError {
    SourceError::Unusable {
        url: u.to_string(),
        message: format!(
            "a delta feed for {day}, a day in the future (today is {today} UTC); nothing applied"
        ),
    }
}

/// The ARC audit's result: findings in URI order, as `finding` renders them.
#[derive(Debug, Default)]
pub struct ArcAudit {
    pub findings: Vec<Finding>,
    /// Pages the sitemap lists (skipped ones included).
    pub listed: u64,
    pub warnings: Vec<String>,
}

/// Compare the mirror with the current ARC sitemap at `sitemap` (lastmod, checksum, presence):
/// `=` in sync by checksum, `?` nothing to prove it, `*` changed, `+` missing here, `-` no
/// longer listed, `!` refused. Skipped pages (auth_required, noarchive) are neither missing nor
/// extra. Local fixity is not checked here (that is the audit's own, for every source).
pub fn audit(docs: &Documents<'_>, catalog: &Catalog, sitemap: &Url) -> Result<ArcAudit, Error> {
    let states = catalog.current_states()?;
    let mut by_uri: BTreeMap<String, Vec<Finding>> = BTreeMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    let walked = expected_state(docs, sitemap, None, &mut |item| {
        match item {
            Item::Refused(r) => {
                let f = Finding::new(Class::Refused)
                    .uri(r.uri.clone())
                    .actual(r.reason);
                by_uri.insert(r.uri, vec![f]);
            }
            Item::Listed(l) => {
                let uri = l.uri.to_string();
                seen.insert(uri.clone());
                let findings = match states.get(uri.as_str()) {
                    Some(c) if !c.deleted => match plan::compare(&l.declared, c) {
                        Comparison::Same { by_digest: true } => {
                            vec![Finding::new(Class::InSync).uri(uri.clone())]
                        }
                        Comparison::Same { by_digest: false } => {
                            vec![Finding::new(Class::Unverifiable)
                                .uri(uri.clone())
                                .actual("lastmod agrees; no ai_checksum to prove the bytes")]
                        }
                        Comparison::NoEvidence => vec![Finding::new(Class::Unverifiable)
                            .uri(uri.clone())
                            .actual("neither lastmod nor ai_checksum to compare")],
                        Comparison::Differs(diffs) => diffs
                            .into_iter()
                            .map(|d| {
                                Finding::new(Class::Changed)
                                    .uri(uri.clone())
                                    .field(d.field)
                                    .expected(d.expected)
                                    .actual(d.actual)
                            })
                            .collect(),
                    },
                    Some(_) => vec![Finding::new(Class::Missing)
                        .uri(uri.clone())
                        .actual("deleted in the mirror")],
                    None => vec![Finding::new(Class::Missing).uri(uri.clone())],
                };
                by_uri.insert(uri, findings);
            }
        }
        Ok(())
    })?;
    let collection = sitemap.as_str();
    for (uri, st) in &states {
        if !st.deleted
            && st.collection == collection
            && !seen.contains(uri)
            && !walked.skipped.contains(uri)
        {
            by_uri.insert(
                uri.clone(),
                vec![Finding::new(Class::Extra).uri(uri.clone())],
            );
        }
    }
    Ok(ArcAudit {
        findings: by_uri.into_values().flatten().collect(),
        listed: walked.walked.entries,
        warnings: walked.walked.warnings,
    })
}

/// What [`expected_state`] walked, and the pages it did not hand over because a mirror must
/// not fetch them.
#[derive(Debug, Default)]
pub struct ArcWalked {
    pub walked: Walked,
    /// URIs skipped: auth_required, or robots_directive noarchive / none.
    pub skipped: HashSet<String>,
}

/// The expected state of an ARC collection, streamed to `visit` as the audit's items (as
/// `resource_list::walk` does for a Resource List): each page the mirror should hold, with its
/// `lastmod` and `ai_checksum`, as the sitemap and the delta feeds generated after it say (a
/// page a later feed changed, added or deleted is expected as the feed says: an incremental
/// run applied it); a page outside the site as refused. Skipped pages are not
/// handed over (they are in [`ArcWalked::skipped`], and a warning says so). `Listed::line` is
/// the page's index in `pages`.
pub(crate) fn expected_state(
    docs: &Documents<'_>,
    sitemap: &Url,
    received: Option<Box<Body>>,
    visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
) -> Result<ArcWalked, SourceError> {
    let opts = arc::ReadOptions {
        zone: docs.options.zone,
        ..Default::default()
    };
    let f = sitemap_now(docs, sitemap, received, opts)?;
    let Sitemap { header, pages } = f.sitemap;
    let mut out = ArcWalked::default();
    let mut warnings = prefixed(&f.url, &header.warnings);
    let scope = Arc::new(page_scope(docs, &f.url, &header.site, &mut warnings));
    let document: std::sync::Arc<str> = f.url.as_str().into();
    // The delta feeds dated after the sitemap change what it says.
    let mut later = changes_since(docs, &f.url, &header, &scope, (&mut out, &mut warnings));
    // The later entry for a URL listed twice counts.
    let mut last: HashMap<String, usize> = HashMap::new();
    for (i, p) in pages.iter().enumerate() {
        last.insert(p.url.to_string(), i);
    }
    let mut walk: Vec<(Page, std::sync::Arc<str>)> = Vec::with_capacity(pages.len());
    for (i, page) in pages.into_iter().enumerate() {
        out.walked.entries += 1;
        if last.get(page.url.as_str()) != Some(&i) {
            continue;
        }
        walk.push(match later.remove(page.url.as_str()) {
            Some(d) => (d.page, d.document.into()),
            None => (page, document.clone()),
        });
    }
    // Pages the delta feeds add, in URL order.
    let mut added: Vec<Delta> = later.into_values().collect();
    added.sort_by(|a, b| a.page.url.cmp(&b.page.url));
    out.walked.entries += added.len() as u64;
    walk.extend(added.into_iter().map(|d| (d.page, d.document.into())));
    for (page, document) in walk {
        let uri = page.url.to_string();
        if page.deleted {
            continue;
        }
        if let Err(reason) = scope.check(&page.url) {
            visit(Item::Refused(Refused {
                uri,
                reason: format!("outside the site: {reason}"),
            }))?;
            continue;
        }
        if let Some(why) = page.skip_reason() {
            warnings.push(format!("{uri}: {why}; not compared"));
            out.skipped.insert(uri);
            continue;
        }
        visit(Item::Listed(Listed {
            declared: declared(&page),
            uri: page.url,
            media_type: None,
            duplicates: Vec::new(),
            document: document.clone(),
            line: page.index as u64,
            scope: scope.clone(),
        }))?;
    }
    if out.walked.at.is_none() {
        out.walked.at = Some(header.generated_at);
        out.walked.basis = "generated_at of the ARC sitemap".into();
    }
    out.walked.anchored = true;
    out.walked.warnings = warnings;
    Ok(out)
}

/// The last change of each page in the delta feeds generated after the sitemap (those it
/// names, else the daily ones from its `generated_at`'s day to today), as an incremental run
/// reads them: what the source says now of those pages. A feed that cannot be read is a part
/// of the source not compared (`failed_parts`); pages a feed skips are skipped. Sets the walk's
/// `at` to the latest feed read.
fn changes_since(
    docs: &Documents<'_>,
    sitemap: &Url,
    header: &arc::Header,
    scope: &Scope,
    (out, warnings): (&mut ArcWalked, &mut Vec<String>),
) -> HashMap<String, Delta> {
    let now = Timestamp::now();
    let since = header.generated_at;
    let days = (
        since.to_zoned(TimeZone::UTC).date(),
        now.to_zoned(TimeZone::UTC).date(),
    );
    let base = if sitemap.scheme() == "file" {
        &header.site
    } else {
        sitemap
    };
    let named: Vec<String> = header.delta_feeds.iter().map(Url::to_string).collect();
    let mut trail = Vec::new();
    let feeds = which_feeds(
        (sitemap.as_str(), &named),
        (scope, base),
        (since, now),
        days,
        &mut trail,
    );
    let feeds = match feeds {
        Ok(feeds) => feeds,
        Err(Error::Source(SourceError::Gap { .. })) => {
            warnings.push(format!(
                "{sitemap}: generated more than {MAX_DELTA_DAYS} days ago ({since}); its daily delta feeds are not read, the sitemap alone is compared"
            ));
            return HashMap::new();
        }
        Err(e) => {
            out.walked
                .failed_parts
                .push((sitemap.to_string(), e.to_string()));
            return HashMap::new();
        }
    };
    let opts = arc::ReadOptions {
        zone: docs.options.zone,
        ..Default::default()
    };
    let mut reading = FeedReading::new(
        docs.http,
        scope,
        (opts, now, !named.is_empty()),
        (Vec::new(), trail),
    );
    for u in feeds {
        let url = u.to_string();
        if let Err(e) = reading.read(u) {
            out.walked.failed_parts.push((url, e.to_string()));
        }
    }
    warnings.extend(reading.warnings);
    if let Some(at) = reading.feed_max.filter(|&t| t > since) {
        out.walked.at = Some(at);
        out.walked.basis = "generated_at of the latest ARC delta feed read".into();
    }
    out.skipped.extend(reading.skipped.into_keys());
    reading
        .deltas
        .into_iter()
        .filter(|d| d.when > since)
        .map(|d| (d.page.url.to_string(), d))
        .collect()
}

/// A sitemap or delta feed as fetched.
struct Fetched {
    /// After redirects.
    url: Url,
    validators: Validators,
    sitemap: Sitemap,
}

/// `inspect` of the ARC sitemap at `sitemap`: read whole (the body discovery received, else
/// fetched), reported as a document; no page and no delta feed is fetched.
pub(crate) fn inspect(
    docs: &Documents<'_>,
    sitemap: &Url,
    received: Option<Box<Body>>,
) -> Result<crate::report::DocumentReport, SourceError> {
    let opts = arc::ReadOptions {
        zone: docs.options.zone,
        ..Default::default()
    };
    let f = sitemap_now(docs, sitemap, received, opts)?;
    let Sitemap { header, pages } = f.sitemap;
    let digests: std::collections::BTreeSet<String> = pages
        .iter()
        .filter_map(|p| p.digest.as_ref())
        .map(|d| d.algorithm.name().to_string())
        .collect();
    let mut warnings = header.warnings;
    warnings.extend(
        header
            .delta_feeds
            .iter()
            .map(|u| format!("delta feed: {u} (not fetched by inspect)")),
    );
    Ok(crate::report::DocumentReport {
        channels: Vec::new(),
        url: f.url.to_string(),
        kind: format!("ARC sitemap {}", header.version),
        syntax: "json",
        at: Some(header.generated_at.to_string()),
        completed: None,
        from: None,
        until: None,
        entries: header.pages,
        digests: digests.into_iter().collect(),
        up: None,
        warnings,
    })
}

/// GET and read an ARC document (`what`: "sitemap" or "delta feed"); None on a 304. A `file:`
/// URL (the user's own SOURCE) is read from disk.
fn fetch(
    http: &Http,
    url: &Url,
    scope: &Scope,
    validators: &Validators,
    opts: ReadOptions,
    what: &str,
) -> Result<Option<Fetched>, SourceError> {
    let unusable = |u: &Url, e: arc::ArcError| SourceError::Unusable {
        url: u.to_string(),
        message: format!("not a valid ARC {what}: {e}"),
    };
    if url.scheme() == "file" {
        let path = url.to_file_path().map_err(|_| SourceError::Unusable {
            url: url.to_string(),
            message: "not a local file path".into(),
        })?;
        let file = std::fs::File::open(&path).map_err(|source| SourceError::Local {
            path: path.display().to_string(),
            source,
        })?;
        let sitemap = arc::read_all(file, url, opts).map_err(|e| match e {
            arc::ArcError::Io(source) => SourceError::Local {
                path: path.display().to_string(),
                source,
            },
            e => unusable(url, e),
        })?;
        return Ok(Some(Fetched {
            url: url.clone(),
            validators: Validators::default(),
            sitemap,
        }));
    }
    let body = match http.get(url, scope, validators)? {
        crate::net::DocumentResponse::NotModified => return Ok(None),
        crate::net::DocumentResponse::Body(b) => b,
    };
    read_received(http, body, opts, what).map(Some)
}

/// Read an ARC document already received (by discovery, or by [`fetch`]).
fn read_received(
    http: &Http,
    received: Body,
    opts: ReadOptions,
    what: &str,
) -> Result<Fetched, SourceError> {
    let final_url = received.final_url;
    let sitemap = arc::read_all(received.reader, &final_url, opts).map_err(|e| match e {
        arc::ArcError::Io(io) => SourceError::Fetch(http.read_error(&final_url, io)),
        e => SourceError::Unusable {
            url: final_url.to_string(),
            message: format!("not a valid ARC {what}: {e}"),
        },
    })?;
    Ok(Fetched {
        url: final_url,
        validators: received.validators,
        sitemap,
    })
}

/// The sitemap at `url`: the body discovery received, else fetched now (unconditionally).
fn sitemap_now(
    docs: &Documents<'_>,
    url: &Url,
    received: Option<Box<Body>>,
    opts: ReadOptions,
) -> Result<Fetched, SourceError> {
    match received {
        Some(r) => read_received(docs.http, *r, opts, "sitemap"),
        None => Ok(fetch(
            docs.http,
            url,
            &docs.scope_for(url),
            &Validators::default(),
            opts,
            "sitemap",
        )?
        .expect("an unconditional GET is never answered 304")),
    }
}

fn read_options(source: &SourceSettings) -> ReadOptions {
    ReadOptions {
        zone: source.zone,
        ..Default::default()
    }
}

/// Where page URLs may point: the sitemap's own host (and subdomains, and `--allow-host`s);
/// for a sitemap read from a local file, its `site`.
fn page_scope(
    docs: &Documents<'_>,
    sitemap: &Url,
    site: &Url,
    warnings: &mut Vec<String>,
) -> Scope {
    if sitemap.scheme() == "file" {
        return docs.scope_for(site);
    }
    let scope = docs.scope_for(sitemap);
    if let Err(reason) = scope.check(site) {
        warnings.push(format!(
            "{sitemap}: site {site} is not where the sitemap is ({reason}); pages must be on the sitemap's host"
        ));
    }
    scope
}

/// What a page declares, for `plan`: its lastmod, and its checksum when usable.
fn declared(page: &Page) -> Declared {
    Declared {
        lastmod: page.lastmod,
        length: None,
        encoding: None,
        categories: Vec::new(),
        digests: page
            .digest
            .iter()
            .filter(|d| d.is_usable())
            .cloned()
            .collect(),
    }
}

fn job(index: usize, page: &Page, scope: &Arc<Scope>) -> Job {
    Job {
        index,
        urls: vec![page.url.clone()],
        expected: Expected {
            length: None,
            digests: page.digest.iter().cloned().collect(),
            media_type: None,
        },
        scope: scope.clone(),
        validators: None,
    }
}

/// The version of a fetched page; `event_time` is the change's time (a delta page's lastmod),
/// None for a baseline (a snapshot has no events).
fn version(
    page: &Page,
    f: &apply::Fetched,
    change: Change,
    collection: &str,
    event_time: Option<Timestamp>,
) -> NewVersion {
    NewVersion {
        event_time,
        // As written, an unusable checksum too (the declared digests keep only usable ones).
        declared_hash: page.digest.as_ref().map(|d| d.to_string()),
        arrived_via: crate::model::Via::Arc,
        ..f.version(&page.url, collection, change, &declared(page), None)
    }
}

/// A document's warnings, each prefixed with its URL.
fn prefixed(url: &Url, warnings: &[String]) -> Vec<String> {
    warnings.iter().map(|w| format!("{url}: {w}")).collect()
}
