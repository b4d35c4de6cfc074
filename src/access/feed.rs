//! The feeds of the changes the mirror applied: an Atom 1.0 feed (RFC 4287), or a JSON Feed
//! 1.1, per collection and per source (the Sitemap Update Syndication proposal, IFCC-0001), as
//! `rsmirror feed` writes them and `rsmirror serve` serves them under `/feeds/`, with their
//! archives (RFC 5005), an index page and an OPML file (below, "Every feed of the mirror").
//!
//! One feed per collection: a Capability List, known by its `rs:ln rel="describes"` when the
//! catalog recorded one, else by its URL; an ARC sitemap, known by its `site`; whatever other
//! collection ids the catalog holds (an SCP section), by their id (`collection_identities`).
//! One entry per run that applied something, summarising the resources it created, updated and
//! deleted, with a link to each. The feed is built from the catalog alone (`change_events` with
//! outcome `applied`, joined with `runs`, and the versions a baseline re-run wrote), read-only,
//! without the lock and without "now": the
//! same mirror gives byte-identical feeds, and an entry never changes once written.
//!
//! Seed 001's rules for feed generators, as they apply to a mirror's own history: a change
//! without a datetime "must be ignored" (it is not reported as new); a change already reported
//! by an earlier entry is not reported again (the mirror's counterpart of skipping what a
//! Change List Index's `from`/`until` says was processed before — the incremental run already
//! skips those lists). Entry ids are `urn:uuid:` values (RFC 9562 version 8) derived from the
//! collection id and the changes the entry reports — facts of the source, not of this mirror —
//! so a reader never sees an entry twice, and two mirrors that applied the same changes in the
//! same runs give the same ids. `updated` is the latest change time in the entry; the feed's is
//! its newest entry's.
//!
//! Without `--collection`, a mirror that follows one collection gives its feed, and one whose
//! collections all belong to one source (a site with several Capability Lists) gives the
//! source-wide feed (IFCC-0001: "implementations may also implement a source-wide Atom
//! feed"): the entries of every collection, newest first. `--collection SOURCE` asks for a
//! source's feed by name. A mirror of several sources asks which (a usage error listing the
//! collections and sources): several feeds cannot share stdout.

use crate::error::UsageError;
use crate::model::Change as ChangeKind;
use crate::store::change_history::{self, AppliedChange};
use crate::store::source_metadata::{self, MetadataRecord, Role};
use crate::store::{Catalog, StoreError};
use jiff::Timestamp;
use serde::Serialize;
use sha2::Digest as _;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

/// A collection as the feed names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedCollection {
    /// Its id in the catalog (`change_events.collection`, `sync_points.collection`).
    pub collection: String,
    /// How it is known outside the mirror: the feed's id.
    pub identity: String,
    /// The source it belongs to, if the catalog says.
    pub source: Option<String>,
}

/// What a feed covers: one collection, or every collection of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen<'a> {
    One(&'a FeedCollection),
    Source(String, Vec<&'a FeedCollection>),
}

/// One change an entry reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub uri: String,
    pub change: ChangeKind,
    pub time: Timestamp,
}

/// One run's changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    /// The run that applied its changes (an entry reports one run's changes to one collection).
    pub run: i64,
    /// The latest change time.
    pub updated: Timestamp,
    /// The earliest change time.
    pub published: Timestamp,
    /// In time order, then URI.
    pub changes: Vec<Change>,
}

/// A collection's feed, newest entry first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    pub collection: FeedCollection,
    /// The feed's title and author: from the `describedby` metadata the mirror keeps
    /// ([`named`]), else the fallbacks of [`title_of`] and [`author_of`].
    pub title: String,
    pub author: String,
    pub updated: Timestamp,
    pub entries: Vec<Entry>,
}

/// Every collection the mirror follows or applied changes to, in id order.
pub(crate) fn collections(catalog: &Catalog) -> Result<Vec<FeedCollection>, StoreError> {
    Ok(change_history::collections(catalog)?
        .into_iter()
        .map(|c| FeedCollection {
            identity: c.identity.unwrap_or_else(|| c.id.clone()),
            collection: c.id,
            source: c.source,
        })
        .collect())
}

/// The collection `wanted` names (by catalog id or identity, a trailing slash aside), or the
/// source it names (every collection of it); without `wanted`, the only collection, or the
/// only source; a usage error listing them otherwise.
pub(crate) fn choose<'a>(
    all: &'a [FeedCollection],
    wanted: Option<&str>,
) -> Result<Chosen<'a>, UsageError> {
    let mut sources: Vec<&str> = all.iter().filter_map(|c| c.source.as_deref()).collect();
    sources.sort_unstable();
    sources.dedup();
    let members = |src: &str| -> Vec<&'a FeedCollection> {
        all.iter()
            .filter(|c| c.source.as_deref() == Some(src))
            .collect()
    };
    let listing = || {
        let mut lines: Vec<String> = all
            .iter()
            .map(|c| {
                if c.identity == c.collection {
                    format!("  {}", c.collection)
                } else {
                    format!("  {} (known as {})", c.collection, c.identity)
                }
            })
            .collect();
        lines.extend(
            sources
                .iter()
                .map(|s| format!("  {s} (the source: all its collections)")),
        );
        lines.join("\n")
    };
    if all.is_empty() {
        return Err(UsageError(
            "the mirror follows no collection yet: run rsmirror baseline first".into(),
        ));
    }
    match wanted {
        None if all.len() == 1 => Ok(Chosen::One(&all[0])),
        None if sources.len() == 1 && all.iter().all(|c| c.source.is_some()) => {
            Ok(Chosen::Source(sources[0].to_string(), members(sources[0])))
        }
        None => Err(UsageError(format!(
            "the mirror follows {} collections of {} sources; give --collection with one of:\n{}",
            all.len(),
            sources.len(),
            listing()
        ))),
        Some(w) => {
            let w = normalise(w);
            if let Some(c) = all
                .iter()
                .find(|c| normalise(&c.collection) == w)
                .or_else(|| all.iter().find(|c| normalise(&c.identity) == w))
            {
                return Ok(Chosen::One(c));
            }
            match sources.iter().find(|s| normalise(s) == w) {
                Some(src) => Ok(Chosen::Source(src.to_string(), members(src))),
                None => Err(UsageError(format!(
                    "--collection {w}: not a collection or source of this mirror; it follows:\n{}",
                    listing()
                ))),
            }
        }
    }
}

/// The feed of what `chosen` covers: a collection's, or a source's: the entries of every one
/// of its collections, newest first (an entry still reports one run's changes to one
/// collection).
pub(crate) fn build_chosen(
    catalog: &Catalog,
    chosen: &Chosen<'_>,
    after: Option<i64>,
    upto: Option<i64>,
) -> Result<Feed, StoreError> {
    let (source, members) = match chosen {
        Chosen::One(c) => return build(catalog, c, after, upto),
        Chosen::Source(source, members) => (source, members),
    };
    let mut entries = Vec::new();
    let mut updated = Timestamp::UNIX_EPOCH;
    let mut site = None;
    for m in members {
        if site.is_none() {
            site = source_metadata::latest(catalog, &m.collection, Role::Site)?;
        }
        let f = build(catalog, m, after, upto)?;
        updated = updated.max(f.updated);
        entries.extend(f.entries);
    }
    entries.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| a.id.cmp(&b.id)));
    let collection = FeedCollection {
        collection: source.clone(),
        identity: source.clone(),
        source: Some(source.clone()),
    };
    let (title, author) = named(&collection, None, site.as_ref(), true);
    Ok(Feed {
        collection,
        title,
        author,
        updated,
        entries,
    })
}

/// The title and author of a feed: the collection's own metadata first, then the site's
/// (IFCC-0001's `describedby` documents, as `rs::metadata` read them), else a title made of
/// what the collection is known as and the host as author. A collection feed titled by its
/// site's metadata alone says which collection it is.
fn named(
    c: &FeedCollection,
    own: Option<&MetadataRecord>,
    site: Option<&MetadataRecord>,
    whole_site: bool,
) -> (String, String) {
    let own_title = own.and_then(|m| m.title.clone());
    let site_title = site.and_then(|m| m.title.clone());
    let title = match (own_title, site_title) {
        (Some(t), _) => t,
        (None, Some(s)) if whole_site => s,
        (None, Some(s)) => format!("{s}: {}", c.identity),
        (None, None) => title_of(c, whole_site),
    };
    let author = (own.and_then(|m| m.author.clone()))
        .or_else(|| site.and_then(|m| m.author.clone()))
        .unwrap_or_else(|| author_of(c));
    (title, author)
}

fn normalise(s: &str) -> String {
    let s = s.trim();
    match url::Url::parse(s) {
        Ok(u) => u.as_str().trim_end_matches('/').to_string(),
        Err(_) => s.trim_end_matches('/').to_string(),
    }
}

/// Build the feed of `c` from the catalog: the entries of the runs after run `after`, if given
/// (a change reported by an earlier run is not reported again), up to run `upto`, if given (a
/// run under way is left out until it ends).
pub(crate) fn build(
    catalog: &Catalog,
    c: &FeedCollection,
    after: Option<i64>,
    upto: Option<i64>,
) -> Result<Feed, StoreError> {
    let mut runs: BTreeMap<i64, Vec<Change>> = BTreeMap::new();
    change_history::each_applied_change(catalog, &c.collection, |a: AppliedChange| {
        // A time the catalog cannot read is as good as none (Sitemap Update Syndication: ignored).
        let Ok(time) = a.time.parse::<Timestamp>() else {
            return;
        };
        runs.entry(a.run).or_default().push(Change {
            uri: a.uri,
            change: a.change,
            time,
        });
    })?;
    let mut reported: HashSet<(String, ChangeKind, Timestamp)> = HashSet::new();
    let mut entries = Vec::new();
    for (run, mut changes) in runs {
        changes.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.uri.cmp(&b.uri)));
        changes.retain(|ch| reported.insert((ch.uri.clone(), ch.change, ch.time)));
        let (Some(first), Some(last)) = (changes.first(), changes.last()) else {
            continue;
        };
        if after.is_some_and(|after| run <= after) {
            continue;
        }
        if upto.is_some_and(|upto| run > upto) {
            break;
        }
        entries.push(Entry {
            id: entry_id(&c.collection, &changes),
            run,
            updated: last.time,
            published: first.time,
            changes,
        });
    }
    entries.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| a.id.cmp(&b.id)));
    let updated = match entries.first() {
        Some(e) => e.updated,
        None => catalog
            .sync_point(&c.collection)?
            .and_then(|p| p.at)
            .unwrap_or(Timestamp::UNIX_EPOCH),
    };
    let own = source_metadata::latest(catalog, &c.collection, Role::Collection)?;
    let site = source_metadata::latest(catalog, &c.collection, Role::Site)?;
    let (title, author) = named(c, own.as_ref(), site.as_ref(), false);
    Ok(Feed {
        collection: c.clone(),
        title,
        author,
        updated,
        entries,
    })
}

/// `urn:uuid:` of a version-8 UUID (RFC 9562 §5.8) from the sha256 of the collection id and
/// the changes: the same changes give the same id on any mirror, at any time.
fn entry_id(collection: &str, changes: &[Change]) -> String {
    let mut h = sha2::Sha256::new();
    h.update(b"rsmirror feed entry\n");
    h.update(collection.as_bytes());
    for ch in changes {
        h.update(format!("\n{} {} {}", ch.change, ch.time, ch.uri).as_bytes());
    }
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x = hex::encode(b);
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &x[0..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..32]
    )
}

/// `2 created, 1 deleted` (in created / updated / deleted order, zeros left out).
fn counts(changes: &[Change]) -> String {
    ChangeKind::ALL
        .iter()
        .filter_map(|kind| {
            let n = changes.iter().filter(|c| c.change == *kind).count();
            (n > 0).then(|| format!("{n} {kind}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn entry_title(e: &Entry) -> String {
    match e.changes.as_slice() {
        [one] => format!("{} {}", capitalised(one.change.as_str()), one.uri),
        many => format!("{} resources changed: {}", many.len(), counts(many)),
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The changes of an entry grouped by kind, in created / updated / deleted order.
fn groups(e: &Entry) -> Vec<(ChangeKind, Vec<&Change>)> {
    ChangeKind::ALL
        .iter()
        .copied()
        .map(|kind| {
            (
                kind,
                e.changes.iter().filter(|c| c.change == kind).collect(),
            )
        })
        .filter(|(_, v): &(_, Vec<_>)| !v.is_empty())
        .collect()
}

/// The title of a feed without metadata: "Changes to" the collection (or the site).
fn title_of(c: &FeedCollection, whole_site: bool) -> String {
    match whole_site {
        true => format!("Changes to the site {}", c.identity),
        false => format!("Changes to {}", c.identity),
    }
}

fn feed_subtitle(f: &Feed) -> String {
    format!(
        "Changes rsmirror applied to its mirror of {}",
        f.collection.collection
    )
}

/// Without metadata, the host of the collection, as the feed's author (the source made the
/// changes).
fn author_of(c: &FeedCollection) -> String {
    url::Url::parse(&c.identity)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| c.identity.clone())
}

fn is_web(s: &str) -> bool {
    url::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// XML character data and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 does not allow are left out.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// The links of a feed document that knows where it is served (`rsmirror serve`, `feed
/// --output-dir`); none for a feed written to stdout or a file.
#[derive(Debug, Default, Clone)]
pub(crate) struct Links {
    /// `rel="self"`: this document's URL.
    pub this: Option<String>,
    /// `rel="hub"`: the WebSub hub readers may subscribe at.
    pub hub: Option<String>,
    /// `rel="current"` (RFC 5005 §4): the subscription document, from an archive.
    pub current: Option<String>,
    /// `rel="prev-archive"` (RFC 5005 §4): the archive before this document.
    pub prev_archive: Option<String>,
    /// An archive document (`fh:archive`): it never changes.
    pub archive: bool,
}

/// The feed as Atom 1.0 (RFC 4287), without links to itself.
pub(crate) fn atom(f: &Feed) -> String {
    atom_with(f, &Links::default())
}

/// The feed as Atom 1.0 (RFC 4287) with its links (RFC 5005's archives, WebSub's hub).
pub(crate) fn atom_with(f: &Feed, links: &Links) -> String {
    let mut x = String::new();
    x.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    x.push_str(if links.archive {
        "<feed xmlns=\"http://www.w3.org/2005/Atom\" xmlns:fh=\"http://purl.org/syndication/history/1.0\">\n"
    } else {
        "<feed xmlns=\"http://www.w3.org/2005/Atom\">\n"
    });
    if links.archive {
        x.push_str("  <fh:archive/>\n");
    }
    let _ = writeln!(x, "  <id>{}</id>", esc(&f.collection.identity));
    let _ = writeln!(x, "  <title>{}</title>", esc(&f.title));
    let _ = writeln!(x, "  <subtitle>{}</subtitle>", esc(&feed_subtitle(f)));
    let _ = writeln!(x, "  <updated>{}</updated>", f.updated);
    let _ = writeln!(
        x,
        "  <author>\n    <name>{}</name>\n  </author>",
        esc(&f.author)
    );
    for (rel, href, kind) in [
        ("self", &links.this, " type=\"application/atom+xml\""),
        ("hub", &links.hub, ""),
        ("current", &links.current, " type=\"application/atom+xml\""),
        (
            "prev-archive",
            &links.prev_archive,
            " type=\"application/atom+xml\"",
        ),
    ] {
        if let Some(href) = href {
            let _ = writeln!(x, "  <link rel=\"{rel}\" href=\"{}\"{kind}/>", esc(href));
        }
    }
    if is_web(&f.collection.identity) {
        let _ = writeln!(
            x,
            "  <link rel=\"alternate\" href=\"{}\"/>",
            esc(&f.collection.identity)
        );
    }
    if is_web(&f.collection.collection) && f.collection.collection != f.collection.identity {
        let _ = writeln!(
            x,
            "  <link rel=\"via\" href=\"{}\"/>",
            esc(&f.collection.collection)
        );
    }
    let _ = writeln!(
        x,
        "  <generator version=\"{}\">rsmirror</generator>",
        env!("CARGO_PKG_VERSION")
    );
    for e in &f.entries {
        x.push_str("  <entry>\n");
        let _ = writeln!(x, "    <id>{}</id>", e.id);
        let _ = writeln!(x, "    <title>{}</title>", esc(&entry_title(e)));
        let _ = writeln!(x, "    <published>{}</published>", e.published);
        let _ = writeln!(x, "    <updated>{}</updated>", e.updated);
        let _ = writeln!(x, "    <summary>{}</summary>", esc(&counts(&e.changes)));
        for ch in &e.changes {
            let _ = writeln!(
                x,
                "    <link rel=\"related\" href=\"{}\" title=\"{}\"/>",
                esc(&ch.uri),
                ch.change
            );
        }
        x.push_str("    <content type=\"xhtml\">\n");
        x.push_str("      <div xmlns=\"http://www.w3.org/1999/xhtml\">\n");
        for (kind, changes) in groups(e) {
            let _ = writeln!(x, "        <p>{}:</p>", capitalised(kind.as_str()));
            x.push_str("        <ul>\n");
            for ch in changes {
                let _ = writeln!(
                    x,
                    "          <li><a href=\"{0}\">{0}</a> at {1}</li>",
                    esc(&ch.uri),
                    ch.time
                );
            }
            x.push_str("        </ul>\n");
        }
        x.push_str("      </div>\n    </content>\n  </entry>\n");
    }
    x.push_str("</feed>\n");
    x
}

/// HTML of an entry's changes, for JSON Feed's `content_html`.
fn html(e: &Entry) -> String {
    let mut h = String::new();
    for (kind, changes) in groups(e) {
        let _ = write!(h, "<p>{}:</p><ul>", capitalised(kind.as_str()));
        for ch in changes {
            let _ = write!(
                h,
                "<li><a href=\"{0}\">{0}</a> at {1}</li>",
                esc(&ch.uri),
                ch.time
            );
        }
        h.push_str("</ul>");
    }
    h
}

#[derive(Serialize)]
struct JsonFeed {
    version: &'static str,
    title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    home_page_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    feed_url: Option<String>,
    /// The older items (JSON Feed's pagination): the archive before this document.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_url: Option<String>,
    description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hubs: Vec<JsonHub>,
    authors: Vec<JsonAuthor>,
    #[serde(rename = "_rsmirror")]
    rsmirror: JsonFeedExtension,
    items: Vec<JsonItem>,
}

#[derive(Serialize)]
struct JsonHub {
    #[serde(rename = "type")]
    kind: &'static str,
    url: String,
}

#[derive(Serialize)]
struct JsonAuthor {
    name: String,
}

#[derive(Serialize)]
struct JsonFeedExtension {
    about: &'static str,
    collection: String,
    updated: String,
}

#[derive(Serialize)]
struct JsonItem {
    id: String,
    title: String,
    summary: String,
    content_html: String,
    date_published: String,
    date_modified: String,
    #[serde(rename = "_rsmirror")]
    rsmirror: JsonItemExtension,
}

#[derive(Serialize)]
struct JsonItemExtension {
    created: Vec<JsonChange>,
    updated: Vec<JsonChange>,
    deleted: Vec<JsonChange>,
}

#[derive(Serialize)]
struct JsonChange {
    url: String,
    datetime: String,
}

/// The feed as JSON Feed 1.1 (https://jsonfeed.org/version/1.1); rsmirror's additions are in
/// `_rsmirror` objects, as the spec asks of extensions.
pub(crate) fn json_feed(f: &Feed) -> String {
    json_feed_with(f, &Links::default())
}

/// [`json_feed`] with its links: `feed_url` (self), `next_url` (the previous archive: JSON
/// Feed pages towards older items), `hubs`.
pub(crate) fn json_feed_with(f: &Feed, links: &Links) -> String {
    let of = |e: &Entry, kind: ChangeKind| -> Vec<JsonChange> {
        e.changes
            .iter()
            .filter(|c| c.change == kind)
            .map(|c| JsonChange {
                url: c.uri.clone(),
                datetime: c.time.to_string(),
            })
            .collect()
    };
    let doc = JsonFeed {
        version: "https://jsonfeed.org/version/1.1",
        title: f.title.clone(),
        home_page_url: is_web(&f.collection.identity).then(|| f.collection.identity.clone()),
        feed_url: links.this.clone(),
        next_url: links.prev_archive.clone(),
        description: feed_subtitle(f),
        hubs: (links.hub.iter())
            .map(|url| JsonHub {
                kind: "WebSub",
                url: url.clone(),
            })
            .collect(),
        authors: vec![JsonAuthor {
            name: f.author.clone(),
        }],
        rsmirror: JsonFeedExtension {
            about: "https://jsonfeed.org/version/1.1 extension: the catalog's collection id and the feed's updated time",
            collection: f.collection.collection.clone(),
            updated: f.updated.to_string(),
        },
        items: f
            .entries
            .iter()
            .map(|e| JsonItem {
                id: e.id.clone(),
                title: entry_title(e),
                summary: counts(&e.changes),
                content_html: html(e),
                date_published: e.published.to_string(),
                date_modified: e.updated.to_string(),
                rsmirror: JsonItemExtension {
                    created: of(e, ChangeKind::Created),
                    updated: of(e, ChangeKind::Updated),
                    deleted: of(e, ChangeKind::Deleted),
                },
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("serialisable");
    s.push('\n');
    s
}

// Every feed of the mirror, where it is served and written: `rsmirror serve` under `/feeds/`,
// `rsmirror feed --output-dir DIR` under DIR, one layout for both (paths relative to the feeds'
// base URL):
//
//   index.html, index.opml                     every feed, for a person and for a feed reader
//   source/SLUG.atom, source/SLUG.json         a source's feed (every collection of it)
//   collection/SLUG.atom, collection/SLUG.json a collection's feed
//   KIND/SLUG/archive/N.atom (and .json)       archive N (RFC 5005 §4), from 1, the oldest
//
// SLUG is the catalog's id of the source or collection (its URL without the scheme, letters
// and digits kept, the rest `-`) and 8 hex digits of its sha256: it never changes.
//
// Archives: the entries in the order the runs applied them (run, then id), cut every
// `per_archive` entries at fixed boundaries: archive N holds entries (N-1)*per+1 to N*per and
// exists once that many exist. Nothing in it depends on what may change later (the site's
// metadata, the hub, the newest archive): its title and author are the fallbacks of the
// collection's own name, it links only back (`prev-archive`, `current`), so once complete it is
// the same bytes forever. The subscription document holds the newest `per_archive` entries and
// links the newest complete archive as `prev-archive`.

/// What a feed covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Source,
    Collection,
}

impl Kind {
    pub(crate) fn dir(self) -> &'static str {
        match self {
            Kind::Source => "source",
            Kind::Collection => "collection",
        }
    }
}

/// Which document of a feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Doc {
    /// The subscription document.
    Current,
    /// Archive N (from 1).
    Archive(usize),
}

/// A document under the feeds' base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FeedPath {
    /// `index.html` (or the base itself).
    Index,
    /// `index.opml`.
    Opml,
    Feed {
        kind: Kind,
        slug: String,
        doc: Doc,
        json: bool,
    },
}

/// A document's path relative to the feeds' base: `source/SLUG.atom`, `collection/SLUG/archive/2.json`.
pub(crate) fn path_of(kind: Kind, slug: &str, doc: Doc, json: bool) -> String {
    let ext = if json { "json" } else { "atom" };
    match doc {
        Doc::Current => format!("{}/{slug}.{ext}", kind.dir()),
        Doc::Archive(n) => format!("{}/{slug}/archive/{n}.{ext}", kind.dir()),
    }
}

/// The document a path below the feeds' base names ([`path_of`]'s inverse), if any.
pub(crate) fn parse_path(rest: &str) -> Option<FeedPath> {
    match rest {
        "" | "index.html" => return Some(FeedPath::Index),
        "index.opml" => return Some(FeedPath::Opml),
        _ => {}
    }
    let (dir, rest) = rest.split_once('/')?;
    let kind = [Kind::Source, Kind::Collection]
        .into_iter()
        .find(|k| k.dir() == dir)?;
    let (stem, json) = match (rest.strip_suffix(".atom"), rest.strip_suffix(".json")) {
        (Some(s), _) => (s, false),
        (_, Some(s)) => (s, true),
        _ => return None,
    };
    let (slug, doc) = match stem.split_once("/archive/") {
        None => (stem, Doc::Current),
        Some((slug, n)) => {
            if !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (slug, Doc::Archive(n.parse().ok().filter(|n| *n >= 1)?))
        }
    };
    let ok = !slug.is_empty()
        && slug
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.".contains(&b));
    ok.then(|| FeedPath::Feed {
        kind,
        slug: slug.to_string(),
        doc,
        json,
    })
}

/// The slug of a source or collection id: readable, and unique by its hash.
pub(crate) fn slug(id: &str) -> String {
    let bare = id.split_once("://").map_or(id, |(_, rest)| rest);
    let mut readable = String::new();
    for c in bare.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '.' {
            readable.push(c);
        } else if !readable.ends_with('-') {
            readable.push('-');
        }
    }
    let mut readable: String = readable.trim_matches(['-', '.']).chars().take(60).collect();
    readable.truncate(readable.trim_end_matches(['-', '.']).len());
    let hash = hex::encode(&sha2::Sha256::digest(id.as_bytes())[..4]);
    match readable.is_empty() {
        true => hash,
        false => format!("{readable}-{hash}"),
    }
}

/// One feed of the mirror: a source's or a collection's, with all its entries.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub kind: Kind,
    pub slug: String,
    pub feed: Feed,
}

/// Every source (in id order) with its collections.
fn by_source(all: &[FeedCollection]) -> Vec<(String, Vec<&FeedCollection>)> {
    let mut sources: BTreeMap<String, Vec<&FeedCollection>> = BTreeMap::new();
    for c in all {
        if let Some(s) = &c.source {
            sources.entry(s.clone()).or_default().push(c);
        }
    }
    sources.into_iter().collect()
}

/// Every feed of the mirror, up to run `upto`: each source's, then each collection's.
pub(crate) fn every(catalog: &Catalog, upto: Option<i64>) -> Result<Vec<Listed>, StoreError> {
    let all = collections(catalog)?;
    let mut out = Vec::new();
    for (source, members) in by_source(&all) {
        out.push(Listed {
            kind: Kind::Source,
            slug: slug(&source),
            feed: build_chosen(catalog, &Chosen::Source(source, members), None, upto)?,
        });
    }
    for c in &all {
        out.push(Listed {
            kind: Kind::Collection,
            slug: slug(&c.collection),
            feed: build(catalog, c, None, upto)?,
        });
    }
    Ok(out)
}

/// The feed `kind` and `slug` name, if the mirror has it (only it is built).
pub(crate) fn find(
    catalog: &Catalog,
    kind: Kind,
    wanted: &str,
    upto: Option<i64>,
) -> Result<Option<Listed>, StoreError> {
    let all = collections(catalog)?;
    let feed = match kind {
        Kind::Source => match by_source(&all).into_iter().find(|(s, _)| slug(s) == wanted) {
            Some((source, members)) => {
                build_chosen(catalog, &Chosen::Source(source, members), None, upto)?
            }
            None => return Ok(None),
        },
        Kind::Collection => match all.iter().find(|c| slug(&c.collection) == wanted) {
            Some(c) => build(catalog, c, None, upto)?,
            None => return Ok(None),
        },
    };
    Ok(Some(Listed {
        kind,
        slug: wanted.to_string(),
        feed,
    }))
}

/// Where the feeds are and what their current documents link.
#[derive(Debug, Clone)]
pub(crate) struct Site<'a> {
    /// The URL of the feeds' folder, without a trailing slash (`http://host:8080/feeds`).
    pub base: &'a str,
    /// A WebSub hub, linked from every subscription document.
    pub hub: Option<&'a str>,
    /// Entries in one archive (at least 1).
    pub per_archive: usize,
}

/// A document made: its text and the newest run whose entries it holds (None: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Made {
    pub text: String,
    pub last_run: Option<i64>,
}

impl Listed {
    /// The entries in the order they were applied (run, then id): archives cut this.
    fn applied_order(&self) -> Vec<&Entry> {
        let mut v: Vec<&Entry> = self.feed.entries.iter().collect();
        v.sort_by(|a, b| a.run.cmp(&b.run).then_with(|| a.id.cmp(&b.id)));
        v
    }

    /// How many archives are complete.
    pub(crate) fn archives(&self, site: &Site<'_>) -> usize {
        self.feed.entries.len() / site.per_archive.max(1)
    }

    fn url(&self, site: &Site<'_>, doc: Doc, json: bool) -> String {
        format!(
            "{}/{}",
            site.base,
            path_of(self.kind, &self.slug, doc, json)
        )
    }

    /// Document `doc` as Atom or JSON Feed; None: no such archive (yet).
    pub(crate) fn document(&self, site: &Site<'_>, doc: Doc, json: bool) -> Option<Made> {
        let per = site.per_archive.max(1);
        let order = self.applied_order();
        let complete = order.len() / per;
        let (chosen, links, feed_meta): (&[&Entry], Links, Feed) = match doc {
            Doc::Current => {
                let newest = &order[order.len().saturating_sub(per)..];
                let links = Links {
                    this: Some(self.url(site, doc, json)),
                    hub: site.hub.map(str::to_string),
                    current: None,
                    prev_archive: (complete > 0)
                        .then(|| self.url(site, Doc::Archive(complete), json)),
                    archive: false,
                };
                (newest, links, self.feed.clone())
            }
            Doc::Archive(n) if n >= 1 && n <= complete => {
                let part = &order[(n - 1) * per..n * per];
                let links = Links {
                    this: Some(self.url(site, doc, json)),
                    hub: None,
                    current: Some(self.url(site, Doc::Current, json)),
                    prev_archive: (n > 1).then(|| self.url(site, Doc::Archive(n - 1), json)),
                    archive: true,
                };
                let c = &self.feed.collection;
                let whole_site = self.kind == Kind::Source;
                let meta = Feed {
                    collection: c.clone(),
                    title: format!("{}, archive {n}", title_of(c, whole_site)),
                    author: author_of(c),
                    updated: Timestamp::UNIX_EPOCH,
                    entries: Vec::new(),
                };
                (part, links, meta)
            }
            Doc::Archive(_) => return None,
        };
        let mut entries: Vec<Entry> = chosen.iter().map(|e| (*e).clone()).collect();
        entries.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| a.id.cmp(&b.id)));
        let updated = match doc {
            Doc::Current => feed_meta.updated,
            Doc::Archive(_) => entries
                .iter()
                .map(|e| e.updated)
                .max()
                .unwrap_or(feed_meta.updated),
        };
        let last_run = entries.iter().map(|e| e.run).max();
        let f = Feed {
            updated,
            entries,
            ..feed_meta
        };
        let text = match json {
            true => json_feed_with(&f, &links),
            false => atom_with(&f, &links),
        };
        Some(Made { text, last_run })
    }
}

/// The index page: every feed, with its formats, archives and what it follows. Links are
/// relative, so the page works wherever the folder is published.
pub(crate) fn index_html(feeds: &[Listed], site: &Site<'_>) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<title>Feeds of the changes this mirror applied</title>\n");
    h.push_str(
        "<link rel=\"alternate\" type=\"text/x-opml\" href=\"index.opml\" title=\"Every feed (OPML)\">\n",
    );
    for l in feeds {
        let _ = writeln!(
            h,
            "<link rel=\"alternate\" type=\"application/atom+xml\" href=\"{}\" title=\"{}\">",
            esc(&path_of(l.kind, &l.slug, Doc::Current, false)),
            esc(&l.feed.title)
        );
    }
    h.push_str("<style>body{font-family:sans-serif;margin:2em}td,th{padding:.2em .6em;text-align:left;vertical-align:top}</style>\n");
    h.push_str("</head>\n<body>\n<h1>Feeds</h1>\n");
    let _ = writeln!(
        h,
        "<p>{} feed{} of the changes rsmirror applied, one entry per run that changed something; \
         each as Atom and as JSON Feed, with archives of {} entries each (RFC 5005). \
         <a href=\"index.opml\">Every feed as OPML</a>, for a feed reader.</p>",
        feeds.len(),
        if feeds.len() == 1 { "" } else { "s" },
        site.per_archive.max(1)
    );
    if feeds.is_empty() {
        h.push_str("<p>The mirror follows no collection yet.</p>\n");
    } else {
        h.push_str("<table>\n<thead><tr><th>Feed</th><th>Of</th><th>Entries</th><th>Updated</th><th>Documents</th></tr></thead>\n<tbody>\n");
        for l in feeds {
            let id = &l.feed.collection.identity;
            let of = match is_web(id) {
                true => format!("<a href=\"{0}\">{0}</a>", esc(id)),
                false => esc(id),
            };
            let archives: Vec<String> = (1..=l.archives(site))
                .map(|n| {
                    format!(
                        "<a href=\"{}\">{n}</a>",
                        esc(&path_of(l.kind, &l.slug, Doc::Archive(n), false))
                    )
                })
                .collect();
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>the {} {of}</td><td>{}</td><td>{}</td><td><a href=\"{}\">Atom</a> · <a href=\"{}\">JSON Feed</a>{}</td></tr>",
                esc(&l.feed.title),
                match l.kind {
                    Kind::Source => "source",
                    Kind::Collection => "collection",
                },
                l.feed.entries.len(),
                l.feed.updated,
                esc(&path_of(l.kind, &l.slug, Doc::Current, false)),
                esc(&path_of(l.kind, &l.slug, Doc::Current, true)),
                match archives.is_empty() {
                    true => String::new(),
                    false => format!(" · archives {}", archives.join(" ")),
                }
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
    h.push_str("</body>\n</html>\n");
    h
}

/// OPML 2.0 of every feed's Atom document (the subscription list a feed reader imports).
pub(crate) fn opml(feeds: &[Listed], site: &Site<'_>) -> String {
    let mut x = String::new();
    x.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<opml version=\"2.0\">\n  <head>\n");
    let _ = writeln!(
        x,
        "    <title>Feeds of the changes the mirror at {} applied</title>",
        esc(site.base)
    );
    x.push_str("  </head>\n  <body>\n");
    for l in feeds {
        let id = &l.feed.collection.identity;
        let html = match is_web(id) {
            true => format!(" htmlUrl=\"{}\"", esc(id)),
            false => String::new(),
        };
        let _ = writeln!(
            x,
            "    <outline text=\"{0}\" title=\"{0}\" type=\"rss\" xmlUrl=\"{1}\"{html}/>",
            esc(&l.feed.title),
            esc(&l.url(site, Doc::Current, false))
        );
    }
    x.push_str("  </body>\n</opml>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ChangeOutcome;
    use crate::store::change_history::record_identity;

    fn catalog() -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::open(dir.path()).unwrap();
        (dir, c)
    }

    fn event(
        c: &mut Catalog,
        run: i64,
        uri: &str,
        change: ChangeKind,
        time: Option<&str>,
        outcome: ChangeOutcome,
    ) {
        event_in(
            c,
            run,
            "http://x/capabilitylist.xml",
            uri,
            change,
            time,
            outcome,
        );
    }

    fn event_in(
        c: &mut Catalog,
        run: i64,
        collection: &str,
        uri: &str,
        change: ChangeKind,
        time: Option<&str>,
        outcome: ChangeOutcome,
    ) {
        let e = crate::store::catalog::ChangeEventRecord {
            collection: collection.into(),
            uri: uri.into(),
            change,
            event_time: time.map(|t| t.parse().unwrap()),
            document_url: "http://x/cl.xml".into(),
            outcome,
        };
        c.in_transaction(|tx| crate::store::catalog::write::change_event(tx, run, &e, None))
            .unwrap();
    }

    fn setup() -> (tempfile::TempDir, Catalog) {
        let (d, mut c) = catalog();
        let src = c.source_id("http://x/").unwrap();
        for _ in 0..4 {
            c.begin_run("incremental", Some(src), "rsmirror incremental")
                .unwrap();
        }
        event(
            &mut c,
            1,
            "http://x/r1",
            ChangeKind::Updated,
            Some("2026-03-01T01:00:00Z"),
            ChangeOutcome::Applied,
        );
        event(
            &mut c,
            1,
            "http://x/r6",
            ChangeKind::Created,
            Some("2026-03-01T02:00:00Z"),
            ChangeOutcome::Applied,
        );
        event(
            &mut c,
            1,
            "http://x/r2",
            ChangeKind::Deleted,
            Some("2026-03-01T03:00:00Z"),
            ChangeOutcome::Applied,
        );
        event(
            &mut c,
            1,
            "http://x/r3",
            ChangeKind::Updated,
            Some("2026-03-01T03:30:00Z"),
            ChangeOutcome::Unchanged,
        );
        // Run 2: only a change without a datetime: no entry (Sitemap Update Syndication).
        event(
            &mut c,
            2,
            "http://x/r4",
            ChangeKind::Updated,
            None,
            ChangeOutcome::Applied,
        );
        // Run 3: one change already reported, one new.
        event(
            &mut c,
            3,
            "http://x/r1",
            ChangeKind::Updated,
            Some("2026-03-01T01:00:00Z"),
            ChangeOutcome::Applied,
        );
        event(
            &mut c,
            3,
            "http://x/r5",
            ChangeKind::Updated,
            Some("2026-03-02T00:00:00.5Z"),
            ChangeOutcome::Applied,
        );
        (d, c)
    }

    #[test]
    fn one_entry_per_run_that_changed_something() {
        let (_d, c) = setup();
        let all = collections(&c).unwrap();
        assert_eq!(all.len(), 1);
        let f = build(&c, &all[0], None, None).unwrap();
        assert_eq!(f.entries.len(), 2);
        let newest = &f.entries[0];
        assert_eq!(
            newest.changes.len(),
            1,
            "r1 was reported by the first entry"
        );
        assert_eq!(newest.changes[0].uri, "http://x/r5");
        assert_eq!(f.updated, newest.updated);
        assert_eq!(newest.updated.to_string(), "2026-03-02T00:00:00.5Z");
        let first = &f.entries[1];
        assert_eq!(counts(&first.changes), "1 created, 1 updated, 1 deleted");
        assert_eq!(first.updated.to_string(), "2026-03-01T03:00:00Z");
        assert_eq!(first.published.to_string(), "2026-03-01T01:00:00Z");
        assert!(first.id.starts_with("urn:uuid:"));
        assert_eq!(&first.id[23..24], "8", "version 8: {}", first.id);
        // --since keeps the entries of the runs after it, whole.
        let later = build(&c, &all[0], Some(1), None).unwrap();
        assert_eq!(later.entries, f.entries[..1]);
        assert!(build(&c, &all[0], Some(3), None)
            .unwrap()
            .entries
            .is_empty());
        assert_eq!(
            build(&c, &all[0], Some(0), None).unwrap().entries,
            f.entries
        );
    }

    #[test]
    fn ids_depend_on_the_changes_not_on_the_mirror() {
        let ch = |uri: &str| Change {
            uri: uri.into(),
            change: ChangeKind::Updated,
            time: "2026-03-01T01:00:00Z".parse().unwrap(),
        };
        let a = entry_id("http://x/cl", &[ch("http://x/a")]);
        assert_eq!(a, entry_id("http://x/cl", &[ch("http://x/a")]));
        assert_ne!(a, entry_id("http://x/cl", &[ch("http://x/b")]));
        assert_ne!(a, entry_id("http://y/cl", &[ch("http://x/a")]));
    }

    #[test]
    fn atom_is_escaped_and_deterministic() {
        let (_d, c) = setup();
        let all = collections(&c).unwrap();
        let f = build(&c, &all[0], None, None).unwrap();
        let a = atom(&f);
        assert_eq!(a, atom(&build(&c, &all[0], None, None).unwrap()));
        assert!(a.contains("<id>http://x/capabilitylist.xml</id>"));
        assert!(a.contains("<updated>2026-03-02T00:00:00.5Z</updated>"));
        assert!(a.contains("<link rel=\"related\" href=\"http://x/r6\" title=\"created\"/>"));
        let mut weird = f.clone();
        weird.entries[0].changes[0].uri = "http://x/a?b=1&c=<2>".into();
        assert!(atom(&weird).contains("http://x/a?b=1&amp;c=&lt;2&gt;"));
        let j: serde_json::Value = serde_json::from_str(&json_feed(&f)).unwrap();
        assert_eq!(j["version"], "https://jsonfeed.org/version/1.1");
        assert_eq!(j["items"].as_array().unwrap().len(), 2);
        assert_eq!(
            j["items"][1]["_rsmirror"]["deleted"][0]["url"],
            "http://x/r2"
        );
    }

    #[test]
    fn identities_and_choosing() {
        let (_d, mut c) = setup();
        c.in_transaction(|tx| {
            record_identity(
                tx,
                "http://x/capabilitylist.xml",
                "http://x/shrine/",
                "describes",
            )
        })
        .unwrap();
        event_in(
            &mut c,
            1,
            "http://y/arc-sitemap.json",
            "http://y/p",
            ChangeKind::Created,
            Some("2026-01-01T00:00:00Z"),
            ChangeOutcome::Applied,
        );
        let all = collections(&c).unwrap();
        assert_eq!(all.len(), 2);
        let one = |w: &str| match choose(&all, Some(w)).unwrap() {
            Chosen::One(c) => c.clone(),
            other => panic!("{w}: {other:?}"),
        };
        // Both collections are of the source of run 1: without --collection, its feed.
        let Chosen::Source(src, members) = choose(&all, None).unwrap() else {
            panic!("a source-wide feed")
        };
        assert_eq!(src, "http://x/");
        assert_eq!(members.len(), 2);
        let whole = build_chosen(&c, &Chosen::Source(src, members), None, None).unwrap();
        assert_eq!(
            whole.entries.len(),
            3,
            "two of the Capability List, one of the ARC"
        );
        assert_eq!(whole.collection.identity, "http://x/");
        assert!(whole
            .entries
            .windows(2)
            .all(|w| w[0].updated >= w[1].updated));
        assert_eq!(
            choose(&all, Some("http://x")).unwrap(),
            choose(&all, None).unwrap()
        );
        // Collections of several sources: which one must be said.
        let mut two = all.clone();
        two[1].source = Some("http://y/".into());
        let e = choose(&two, None).unwrap_err().to_string();
        assert!(e.contains("give --collection"), "{e}");
        assert!(
            e.contains("http://x/capabilitylist.xml (known as http://x/shrine/)"),
            "{e}"
        );
        assert!(
            e.contains("http://y/ (the source: all its collections)"),
            "{e}"
        );
        assert_eq!(
            one("http://x/shrine").collection,
            "http://x/capabilitylist.xml"
        );
        assert_eq!(
            one("http://y/arc-sitemap.json").identity,
            "http://y/arc-sitemap.json"
        );
        assert!(choose(&all, Some("http://z/")).is_err());
        let f = build(&c, &one("http://x/shrine/"), None, None).unwrap();
        let a = atom(&f);
        assert!(a.contains("<id>http://x/shrine/</id>"));
        assert!(a.contains("<link rel=\"via\" href=\"http://x/capabilitylist.xml\"/>"));
    }

    #[test]
    fn paths_and_slugs() {
        let a = slug("http://127.0.0.1:8080/my-shrine/capabilitylist.xml");
        assert!(
            a.starts_with("127.0.0.1-8080-my-shrine-capabilitylist.xml-"),
            "{a}"
        );
        assert_ne!(slug("http://x/"), slug("https://x/"));
        assert_eq!(slug("http://x/"), slug("http://x/"));
        for (kind, doc, json) in [
            (Kind::Source, Doc::Current, false),
            (Kind::Collection, Doc::Current, true),
            (Kind::Collection, Doc::Archive(12), false),
        ] {
            let p = path_of(kind, &a, doc, json);
            assert_eq!(
                parse_path(&p),
                Some(FeedPath::Feed {
                    kind,
                    slug: a.clone(),
                    doc,
                    json
                }),
                "{p}"
            );
        }
        assert_eq!(parse_path(""), Some(FeedPath::Index));
        assert_eq!(parse_path("index.opml"), Some(FeedPath::Opml));
        for bad in [
            "source/x.xml",
            "other/x.atom",
            "source/../x.atom",
            "source/x/archive/0.atom",
            "source/x/archive/a.atom",
            "source/.atom",
        ] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn archives_are_cut_at_fixed_boundaries_and_never_change() {
        let (_d, mut c) = setup();
        let site = Site {
            base: "http://m/feeds",
            hub: Some("http://hub/"),
            per_archive: 1,
        };
        let listed = |c: &Catalog| every(c, None).unwrap().pop().unwrap();
        let l = listed(&c);
        assert_eq!(l.kind, Kind::Collection);
        assert_eq!(l.archives(&site), 2);
        let first = l.document(&site, Doc::Archive(1), false).unwrap();
        assert_eq!(first.last_run, Some(1));
        assert!(first.text.contains("<fh:archive/>"));
        assert!(first.text.contains("rel=\"current\""));
        assert!(!first.text.contains("prev-archive"));
        assert!(!first.text.contains("hub"), "an archive links no hub");
        let second = l.document(&site, Doc::Archive(2), false).unwrap();
        assert!(second.text.contains(&format!(
            "rel=\"prev-archive\" href=\"http://m/feeds/collection/{}/archive/1.atom\"",
            l.slug
        )));
        assert!(l.document(&site, Doc::Archive(3), false).is_none());
        let current = l.document(&site, Doc::Current, false).unwrap().text;
        assert!(current.contains("rel=\"hub\" href=\"http://hub/\""));
        assert!(current.contains("archive/2.atom"));
        assert_eq!(current.matches("<entry>").count(), 1);
        // A later run adds an entry: archive 1 and 2 are the same bytes, a third appears.
        c.begin_run("incremental", None, "rsmirror incremental")
            .unwrap();
        event(
            &mut c,
            5,
            "http://x/r9",
            ChangeKind::Created,
            Some("2026-03-03T00:00:00Z"),
            ChangeOutcome::Applied,
        );
        let later = listed(&c);
        assert_eq!(later.archives(&site), 3);
        assert_eq!(
            later.document(&site, Doc::Archive(1), false).unwrap(),
            first
        );
        assert_eq!(
            later.document(&site, Doc::Archive(2), false).unwrap(),
            second
        );
        // Up to run 3 (run 5 under way): as before.
        let upto = every(&c, Some(3)).unwrap().pop().unwrap();
        assert_eq!(upto.archives(&site), 2);
        let j: serde_json::Value =
            serde_json::from_str(&later.document(&site, Doc::Current, true).unwrap().text).unwrap();
        assert_eq!(j["hubs"][0]["type"], "WebSub");
        assert!(j["next_url"].as_str().unwrap().ends_with("archive/3.json"));
        assert!(j["feed_url"].as_str().unwrap().ends_with(".json"));
        let opml = opml(&every(&c, None).unwrap(), &site);
        assert!(opml.contains(&format!(
            "xmlUrl=\"http://m/feeds/collection/{}.atom\"",
            l.slug
        )));
        let html = index_html(&every(&c, None).unwrap(), &site);
        assert!(html.contains(&format!("href=\"collection/{}/archive/3.atom\"", l.slug)));
    }
}
