//! The SCP part of the catalog (SCP 0.1; tables `scp_*` in `schema.sql`): the
//! sitemap a source announces its collections in, the sections followed and how far each is
//! applied, every collection applied, and the pages with their versions.
//!
//! Free functions over the [`Catalog`] (reads, and the writes made outside a writer), or over
//! the [`Tx`] of the whole writer that commits a collection (what is written with its pages).
//! It knows SQL and nothing of HTTP or of the SCP readers' rules; the commands
//! (`formats::scp`) decide what to write.
//!
//! Times are stored as RFC 3339 text (jiff's `Timestamp` display), like the rest of the catalog.

use crate::model::Validators;
pub use crate::store::scp_pages::SYNC_POINT_BASIS;
pub(crate) use crate::store::scp_pages::{page_url, qualified_uri, section_collection};
use crate::store::writer::Tx;
use crate::store::{Catalog, StoreError};
use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};

fn now() -> String {
    Timestamp::now().to_string()
}

fn ts(s: Option<String>) -> Option<Timestamp> {
    s.and_then(|s| s.parse().ok())
}

/// The sitemap of an SCP source, with the validators of the last clean run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapRecord {
    pub url: String,
    pub validators: Validators,
}

pub(crate) fn sitemap(
    catalog: &Catalog,
    source_id: i64,
) -> Result<Option<SitemapRecord>, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            "SELECT url, etag, last_modified FROM scp_sitemaps WHERE source_id = ?1",
            [source_id],
            |r| {
                Ok(SitemapRecord {
                    url: r.get(0)?,
                    validators: Validators {
                        etag: r.get(1)?,
                        last_modified: r.get(2)?,
                    },
                })
            },
        )
        .optional()?)
}

/// Record the sitemap; `validators` only when the run applied everything it listed.
pub(crate) fn save_sitemap(
    catalog: &Catalog,
    source_id: i64,
    run_id: i64,
    url: &str,
    validators: Option<&Validators>,
) -> Result<(), StoreError> {
    let (etag, last_modified) = match validators {
        Some(v) => (v.etag.clone(), v.last_modified.clone()),
        None => (None, None),
    };
    catalog.conn().execute(
        "INSERT INTO scp_sitemaps (source_id, url, etag, last_modified, fetched_at, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(source_id) DO UPDATE SET url = excluded.url, etag = excluded.etag,
            last_modified = excluded.last_modified, fetched_at = excluded.fetched_at,
            run_id = excluded.run_id",
        params![source_id, url, etag, last_modified, now(), run_id],
    )?;
    Ok(())
}

/// A section followed, and how far it is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionRecord {
    pub name: String,
    /// The snapshot the section's state rests on (`scp_collections.id`).
    pub snapshot_id: Option<i64>,
    /// That snapshot's listed `generated`; None before any snapshot landed.
    pub snapshot_generated: Option<Timestamp>,
    /// Listed `generated` of the newest collection applied.
    pub applied_through: Option<Timestamp>,
}

/// The sections followed for a source, by name.
pub(crate) fn sections(
    catalog: &Catalog,
    source_id: i64,
) -> Result<Vec<SectionRecord>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT name, snapshot_id, snapshot_generated, applied_through FROM scp_sections
         WHERE source_id = ?1 ORDER BY name",
    )?;
    let rows = stmt.query_map([source_id], |r| {
        Ok(SectionRecord {
            name: r.get(0)?,
            snapshot_id: r.get(1)?,
            snapshot_generated: ts(r.get(2)?),
            applied_through: ts(r.get(3)?),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Follow a section from now on (nothing changes when it is followed already).
pub(crate) fn follow_section(
    catalog: &Catalog,
    source_id: i64,
    run_id: i64,
    name: &str,
) -> Result<(), StoreError> {
    catalog.conn().execute(
        "INSERT INTO scp_sections (source_id, name, run_id, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(source_id, name) DO NOTHING",
        params![source_id, name, run_id, now()],
    )?;
    Ok(())
}

/// Record how far a section is applied (in the transaction that applied it), and the
/// section's sync point: the listed `generated` it is applied through.
pub(crate) fn set_section(
    tx: &Tx<'_>,
    source_id: i64,
    run_id: i64,
    s: &SectionRecord,
) -> Result<(), StoreError> {
    write_section(tx.conn(), source_id, run_id, s)
}

/// [`set_section`] of a section whose collection was found unchanged (a 304: the file is the
/// one applied before), outside any writer: the sync point and the section's row in one
/// transaction of their own, so a crash never leaves one moved without the other.
pub(crate) fn set_section_unchanged(
    catalog: &mut Catalog,
    source_id: i64,
    run_id: i64,
    s: &SectionRecord,
) -> Result<(), StoreError> {
    catalog.in_transaction(|tx| write_section(tx.conn(), source_id, run_id, s))
}

/// The rows of [`set_section`], on `conn`.
fn write_section(
    conn: &Connection,
    source_id: i64,
    run_id: i64,
    s: &SectionRecord,
) -> Result<(), StoreError> {
    if let Some(at) = s.applied_through {
        conn.execute(
            "INSERT INTO sync_points (collection, source_id, at, anchored, basis, run_id, updated_at)
             VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6)
             ON CONFLICT(collection) DO UPDATE SET at = excluded.at, run_id = excluded.run_id,
                updated_at = excluded.updated_at",
            params![
                section_collection_in(conn, source_id, &s.name)?,
                source_id,
                at.to_string(),
                SYNC_POINT_BASIS,
                run_id,
                now()
            ],
        )?;
    }
    conn.execute(
        "INSERT INTO scp_sections (source_id, name, snapshot_id, snapshot_generated,
            applied_through, run_id, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(source_id, name) DO UPDATE SET snapshot_id = excluded.snapshot_id,
            snapshot_generated = excluded.snapshot_generated,
            applied_through = excluded.applied_through, run_id = excluded.run_id,
            updated_at = excluded.updated_at",
        params![
            source_id,
            s.name,
            s.snapshot_id,
            s.snapshot_generated.map(|t| t.to_string()),
            s.applied_through.map(|t| t.to_string()),
            run_id,
            now()
        ],
    )?;
    Ok(())
}

/// A collection as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionRecord {
    pub id: i64,
    pub url: String,
    pub section: String,
    /// `snapshot` | `delta`.
    pub kind: String,
    pub collection_id: String,
    pub generated: Option<Timestamp>,
    pub listed_generated: Option<Timestamp>,
    pub checksum: Option<String>,
    /// The name of the checksum status the SCP reader gave (`ChecksumStatus::name`).
    pub checksum_status: String,
    pub sha256_hex: String,
    pub compressed_bytes: u64,
    pub decompressed_bytes: u64,
    pub page_count: u64,
    pub validators: Validators,
}

const COLLECTION_COLUMNS: &str = "id, url, section, type, collection_id, generated, \
    listed_generated, checksum, checksum_status, sha256_hex, compressed_bytes, \
    decompressed_bytes, page_count, etag, last_modified";

fn collection_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CollectionRecord> {
    Ok(CollectionRecord {
        id: r.get(0)?,
        url: r.get(1)?,
        section: r.get(2)?,
        kind: r.get(3)?,
        collection_id: r.get(4)?,
        generated: ts(r.get(5)?),
        listed_generated: ts(r.get(6)?),
        checksum: r.get(7)?,
        checksum_status: r.get(8)?,
        sha256_hex: r.get(9)?,
        compressed_bytes: r.get::<_, i64>(10)? as u64,
        decompressed_bytes: r.get::<_, i64>(11)? as u64,
        page_count: r.get::<_, i64>(12)? as u64,
        validators: Validators {
            etag: r.get(13)?,
            last_modified: r.get(14)?,
        },
    })
}

/// The latest collection fetched from `url` (its validators make the next GET conditional).
pub(crate) fn latest_collection_at(
    catalog: &Catalog,
    source_id: i64,
    url: &str,
) -> Result<Option<CollectionRecord>, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            &format!(
                "SELECT {COLLECTION_COLUMNS} FROM scp_collections
                 WHERE source_id = ?1 AND url = ?2 ORDER BY id DESC LIMIT 1"
            ),
            params![source_id, url],
            collection_row,
        )
        .optional()?)
}

/// True when the collection listed at `url` with this `generated` was applied already.
pub(crate) fn collection_applied(
    catalog: &Catalog,
    source_id: i64,
    url: &str,
    listed_generated: Timestamp,
) -> Result<bool, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            "SELECT 1 FROM scp_collections
             WHERE source_id = ?1 AND url = ?2 AND listed_generated = ?3 LIMIT 1",
            params![source_id, url, listed_generated.to_string()],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Every collection of a source, oldest first.
pub(crate) fn collections(
    catalog: &Catalog,
    source_id: i64,
) -> Result<Vec<CollectionRecord>, StoreError> {
    let mut stmt = catalog.conn().prepare(&format!(
        "SELECT {COLLECTION_COLUMNS} FROM scp_collections WHERE source_id = ?1 ORDER BY id"
    ))?;
    let rows = stmt.query_map([source_id], collection_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What is known of a collection before its pages are read (line 1 and the response).
#[derive(Debug, Clone)]
pub struct NewCollection<'a> {
    pub source_id: i64,
    pub run_id: i64,
    pub url: &'a str,
    pub fetched_from: &'a str,
    pub section: &'a str,
    pub kind: &'static str,
    pub collection_id: &'a str,
    pub generated: Timestamp,
    pub since: Option<Timestamp>,
    pub listed_generated: Timestamp,
    pub version: String,
    pub compression: &'static str,
    pub checksum: Option<&'a str>,
    pub listed_pages: Option<u64>,
    pub listed_size_bytes: Option<u64>,
    pub validators: &'a Validators,
}

/// Insert a collection row (inside the transaction that will commit its pages); the verdict
/// is filled in by [`complete_collection`] before the commit, so no committed row ever lacks it.
pub(crate) fn insert_collection(tx: &Tx<'_>, c: &NewCollection<'_>) -> Result<i64, StoreError> {
    let conn = tx.conn();
    conn.execute(
        "INSERT INTO scp_collections (source_id, url, fetched_from, section, type, collection_id,
            generated, since, listed_generated, version, compression, checksum, checksum_status,
            sha256_hex, compressed_bytes, decompressed_bytes, line_count, page_count,
            pages_skipped, listed_pages, listed_size_bytes, warning_count, etag, last_modified,
            fetched_at, run_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'unverified', '', 0, 0, 0, 0,
            0, ?13, ?14, 0, ?15, ?16, ?17, ?18)",
        params![
            c.source_id,
            c.url,
            c.fetched_from,
            c.section,
            c.kind,
            c.collection_id,
            c.generated.to_string(),
            c.since.map(|t| t.to_string()),
            c.listed_generated.to_string(),
            c.version,
            c.compression,
            c.checksum,
            c.listed_pages.map(|n| n as i64),
            c.listed_size_bytes.map(|n| n as i64),
            c.validators.etag,
            c.validators.last_modified,
            now(),
            c.run_id
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// The reader's verdict on a collection.
#[derive(Debug, Clone)]
pub struct CollectionVerdict<'a> {
    pub checksum_status: &'static str,
    pub sha256_hex: &'a str,
    pub compressed_bytes: u64,
    pub decompressed_bytes: u64,
    pub line_count: u64,
    pub page_count: u64,
    pub pages_skipped: u64,
    pub warning_count: u64,
}

pub(crate) fn complete_collection(
    tx: &Tx<'_>,
    id: i64,
    v: &CollectionVerdict<'_>,
) -> Result<(), StoreError> {
    tx.conn().execute(
        "UPDATE scp_collections SET checksum_status = ?2, sha256_hex = ?3, compressed_bytes = ?4,
            decompressed_bytes = ?5, line_count = ?6, page_count = ?7, pages_skipped = ?8,
            warning_count = ?9
         WHERE id = ?1",
        params![
            id,
            v.checksum_status,
            v.sha256_hex,
            v.compressed_bytes as i64,
            v.decompressed_bytes as i64,
            v.line_count as i64,
            v.page_count as i64,
            v.pages_skipped as i64,
            v.warning_count as i64
        ],
    )?;
    Ok(())
}

/// Drop a collection's validators, so that the next fetch of its URL is a full GET.
pub(crate) fn forget_validators(tx: &Tx<'_>, id: i64) -> Result<(), StoreError> {
    tx.conn().execute(
        "UPDATE scp_collections SET etag = NULL, last_modified = NULL WHERE id = ?1",
        params![id],
    )?;
    Ok(())
}

/// [`section_collection`] of a source known by its id.
pub(crate) fn section_collection_of(
    catalog: &Catalog,
    source_id: i64,
    section: &str,
) -> Result<String, StoreError> {
    section_collection_in(catalog.conn(), source_id, section)
}

/// [`section_collection_of`], on `conn`.
fn section_collection_in(
    conn: &Connection,
    source_id: i64,
    section: &str,
) -> Result<String, StoreError> {
    let url: String =
        conn.query_row("SELECT url FROM sources WHERE id = ?1", [source_id], |r| {
            r.get(0)
        })?;
    Ok(section_collection(&url, section))
}

/// The current state of one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageState {
    pub resource_id: i64,
    /// The page URL (the resource's URI without a section qualifier).
    pub url: String,
    /// The resource's URI is the URL qualified by the section.
    pub qualified: bool,
    /// None when the current version is a tombstone.
    pub modified: Option<Timestamp>,
    /// Of the page JSON (the version's object).
    pub sha256_hex: Option<String>,
    /// Listed `generated` of the collection that brought the current version.
    pub brought_by_generated: Option<Timestamp>,
}

impl PageState {
    pub(crate) fn deleted(&self) -> bool {
        self.modified.is_none()
    }
}

/// Every page of a section (collection `collection`) with its current state, streamed to `f`.
pub(crate) fn section_pages(
    catalog: &Catalog,
    collection: &str,
    section: &str,
    mut f: impl FnMut(PageState),
) -> Result<(), StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT r.id, r.uri, v.change, v.lastmod, v.sha256_hex, c.listed_generated
         FROM resources r
         JOIN versions v ON v.id = r.current_version_id
         JOIN scp_versions s ON s.version_id = v.id
         JOIN scp_collections c ON c.id = s.collection_row
         WHERE r.collection_id = (SELECT id FROM collections WHERE name = ?1)",
    )?;
    let mut rows = stmt.query(params![collection])?;
    while let Some(r) = rows.next()? {
        let change: String = r.get(2)?;
        let uri: String = r.get(1)?;
        let url = page_url(&uri, section);
        f(PageState {
            resource_id: r.get(0)?,
            qualified: url.len() != uri.len(),
            url: url.to_string(),
            modified: if change == crate::model::Change::Deleted.as_str() {
                None
            } else {
                ts(r.get(3)?)
            },
            sha256_hex: r.get(4)?,
            brought_by_generated: ts(r.get(5)?),
        });
    }
    Ok(())
}

/// What the mirror holds of one page of a section, as one lookup finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLookup {
    /// The URI its resource has, or would have if new: the page URL, or the URL qualified by
    /// the section when another collection holds that URL ([`page_resource`]).
    pub uri: String,
    /// Its resource and state, when the section has it.
    pub held: Option<PageHeld>,
}

/// A page's resource and current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageHeld {
    pub resource_id: i64,
    /// None when the current version is a tombstone.
    pub modified: Option<Timestamp>,
    /// Of the page JSON (the version's object).
    pub sha256_hex: Option<String>,
    /// Listed `generated` of the collection that brought the current version.
    pub brought_by: Option<Timestamp>,
}

/// The page `url` of `section` (the collection with id `collection_id`): one query, on the
/// index of resource URIs.
pub(crate) fn page_lookup(
    catalog: &Catalog,
    url: &str,
    section: &str,
    collection_id: i64,
) -> Result<PageLookup, StoreError> {
    let mut found = page_lookups(
        catalog,
        &[url],
        section,
        collection_id,
        &mut PageCursor::by_uri(),
    )?;
    Ok(found.remove(url).unwrap_or_else(|| PageLookup {
        uri: url.to_string(),
        held: None,
    }))
}

/// Where [`page_lookups`] looks for a collection's next pages first: the resources after the
/// last page it found, in id order. A snapshot read again lists its pages in the order their
/// resources were first written, so a batch's resources follow one another in the table: one
/// short range of it read in order, where a lookup by URI reads the URI index too, a page at a
/// time and, on a cold cache, out of order. A page not in the range is looked up by URI.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageCursor {
    /// The id after which the next batch is looked for first: that of the last page of the
    /// batch before that the collection holds. None: by URI only (the last batch found none of
    /// the collection's pages, as when it is read for the first time).
    after: Option<i64>,
}

impl PageCursor {
    /// A collection's first batch: the range is tried from the table's start.
    pub(crate) fn start() -> PageCursor {
        PageCursor { after: Some(0) }
    }

    /// Lookups by URI only.
    pub(crate) fn by_uri() -> PageCursor {
        PageCursor { after: None }
    }

    /// The id after which the next batch is looked for first.
    #[cfg(test)]
    pub(crate) fn after(&self) -> Option<i64> {
        self.after
    }
}

/// [`page_lookup`] of many pages at once, by URL; a URL absent holds nothing. The collection's
/// resources that follow `cursor` are read first (one range, [`PageCursor`]); then one query
/// for the other page URLs; a third, for the URIs qualified with the section, only for the URLs
/// this collection does not hold under their own (another collection has them, or nothing
/// does). A snapshot read again, every page held, makes one range read a batch.
pub(crate) fn page_lookups(
    catalog: &Catalog,
    urls: &[&str],
    section: &str,
    collection_id: i64,
    cursor: &mut PageCursor,
) -> Result<std::collections::HashMap<String, PageLookup>, StoreError> {
    let conn = catalog.conn();
    let mut out = std::collections::HashMap::new();
    let mut plain = match cursor.after {
        Some(after) => following_states(catalog, urls, collection_id, after)?,
        None => std::collections::HashMap::new(),
    };
    let rest: Vec<&str> = urls
        .iter()
        .copied()
        .filter(|u| !plain.contains_key(*u))
        .collect();
    plain.extend(held_states(conn, &rest, collection_id)?);
    // The URLs the collection does not hold under their own, each with its qualified URI.
    let mut others: std::collections::HashMap<&str, String> = urls
        .iter()
        .filter(|u| !matches!(plain.get(**u), Some(Some(_))))
        .map(|u| (*u, qualified_uri(u, section)))
        .collect();
    let others_ref: Vec<&str> = others.values().map(String::as_str).collect();
    let mut qualified = held_states(conn, &others_ref, collection_id)?;
    for url in urls {
        let lookup = match plain.remove(*url) {
            Some(Some(h)) => PageLookup {
                uri: url.to_string(),
                held: Some(h),
            },
            was => {
                let q = others
                    .remove(*url)
                    .unwrap_or_else(|| qualified_uri(url, section));
                match (was, qualified.remove(&q)) {
                    // Qualified: another collection holds the URL (or held it once).
                    (_, Some(Some(h))) => PageLookup {
                        uri: q,
                        held: Some(h),
                    },
                    (Some(_), _) => PageLookup { uri: q, held: None },
                    (None, _) => continue,
                }
            }
        };
        out.insert(url.to_string(), lookup);
    }
    // Where the list is now in the table: the last page of the batch the collection holds (not
    // the largest id: one page listed out of its place would move the range past the rest).
    cursor.after = urls
        .iter()
        .rev()
        .find_map(|u| out.get(*u).and_then(|l| l.held.as_ref()))
        .map(|h| h.resource_id);
    Ok(out)
}

/// The pages among `urls` that the collection with id `collection_id` holds under their own
/// URL among its resources with ids just after `after` (twice as many ids as `urls`: room for
/// pages gone since and other collections' rows between), with their states: one range of the
/// table, in id order.
pub(crate) fn following_states(
    catalog: &Catalog,
    urls: &[&str],
    collection_id: i64,
    after: i64,
) -> Result<std::collections::HashMap<String, Option<PageHeld>>, StoreError> {
    let mut found = std::collections::HashMap::new();
    if urls.is_empty() {
        return Ok(found);
    }
    let wanted: std::collections::HashSet<&str> = urls.iter().copied().collect();
    let mut stmt = catalog.conn().prepare_cached(&format!(
        "SELECT {HELD_COLUMNS} {HELD_FROM}
         WHERE r.id > ?1 AND r.id <= ?2 AND r.collection_id = ?3"
    ))?;
    let until = after.saturating_add(2 * urls.len() as i64);
    let mut rows = stmt.query(rusqlite::params![after, until, collection_id])?;
    while let Some(r) = rows.next()? {
        let Ok(uri) = r.get_ref(1)?.as_str() else {
            continue;
        };
        if wanted.contains(uri) {
            found.insert(uri.to_string(), Some(held_of(r)?));
        }
    }
    Ok(found)
}

/// The columns of a resource's state ([`held_of`]) and where they come from.
const HELD_COLUMNS: &str =
    "r.id, r.uri, r.collection_id, v.change, v.lastmod, v.sha256_hex, c.listed_generated";
const HELD_FROM: &str = "FROM resources r
         LEFT JOIN versions v ON v.id = r.current_version_id
         LEFT JOIN scp_versions s ON s.version_id = v.id
         LEFT JOIN scp_collections c ON c.id = s.collection_row";

/// A page's state from a row of [`HELD_COLUMNS`].
fn held_of(r: &rusqlite::Row<'_>) -> Result<PageHeld, StoreError> {
    let change: Option<String> = r.get(3)?;
    let live = change.is_some_and(|c| c != crate::model::Change::Deleted.as_str());
    Ok(PageHeld {
        resource_id: r.get(0)?,
        modified: if live { ts(r.get(4)?) } else { None },
        sha256_hex: r.get(5)?,
        brought_by: ts(r.get(6)?),
    })
}

/// The resources named `uris` (one query): each found with its state when the collection with
/// id `collection_id` holds it, `None` when another does.
fn held_states(
    conn: &Connection,
    uris: &[&str],
    collection_id: i64,
) -> Result<std::collections::HashMap<String, Option<PageHeld>>, StoreError> {
    let mut found = std::collections::HashMap::new();
    if uris.is_empty() {
        return Ok(found);
    }
    let marks = vec!["?"; uris.len()].join(", ");
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {HELD_COLUMNS} {HELD_FROM} WHERE r.uri IN ({marks})"
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(uris.iter().copied()))?;
    while let Some(r) = rows.next()? {
        let uri: String = r.get(1)?;
        let state = match r.get::<_, i64>(2)? == collection_id {
            true => Some(held_of(r)?),
            false => None,
        };
        found.insert(uri, state);
    }
    Ok(found)
}

/// The newest version id of the catalog (versions after it were written since).
pub(crate) fn last_version_id(catalog: &Catalog) -> Result<i64, StoreError> {
    Ok(catalog
        .conn()
        .query_row("SELECT coalesce(max(id), 0) FROM versions", [], |r| {
            r.get(0)
        })?)
}

/// The live pages of the collection with id `collection_id` whose current version is not
/// newer than `through`, by resource id, streamed to `f` (resource id, URI, listed
/// `generated` of the collection that brought the current version).
pub(crate) fn live_pages(
    catalog: &Catalog,
    collection_id: i64,
    through: i64,
    mut f: impl FnMut(i64, String, Option<Timestamp>),
) -> Result<(), StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT r.id, r.uri, c.listed_generated
         FROM resources r
         JOIN versions v ON v.id = r.current_version_id
         LEFT JOIN scp_versions s ON s.version_id = v.id
         LEFT JOIN scp_collections c ON c.id = s.collection_row
         WHERE r.collection_id = ?1 AND v.change <> 'deleted' AND v.id <= ?2
         ORDER BY r.id",
    )?;
    let mut rows = stmt.query(params![collection_id, through])?;
    while let Some(r) = rows.next()? {
        f(r.get(0)?, r.get(1)?, ts(r.get(2)?));
    }
    Ok(())
}

/// The SCP rows of a page version, written with it once it has an id: the collection that
/// brought it (`scp_collections.id`), and for a page (not a tombstone) its line, title and
/// language.
pub(crate) fn page_rows(
    collection_row: i64,
    line: Option<u64>,
    title: Option<String>,
    language: Option<String>,
) -> crate::store::writer::Then {
    Box::new(move |tx: &Tx<'_>, version_id| {
        tx.conn()
            .prepare_cached(
                "INSERT INTO scp_versions (version_id, collection_row, line, title, language)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                version_id,
                collection_row,
                line.map(|n| n as i64),
                title,
                language
            ])?;
        Ok(())
    })
}
