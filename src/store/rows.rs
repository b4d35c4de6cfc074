//! The rows every format writes the same way: a resource in its collection, and a version of
//! it (the catalog's `write` module re-exports them). Kept apart from `catalog` so that the
//! SCP tables (`scp_catalog`) and the upgrades of older mirrors (`migrate`) write versions
//! without reaching back into the catalog module that calls them.

use crate::model::{Change, Via};
use crate::store::StoreError;
use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};

fn opt_ts(t: Option<Timestamp>) -> Option<String> {
    t.map(|t| t.to_string())
}

/// A version to record.
#[derive(Debug, Clone)]
pub struct NewVersion {
    pub uri: String,
    pub collection: String,
    pub change: Change,
    pub event_time: Option<Timestamp>,
    pub lastmod: Option<Timestamp>,
    pub length_bytes: Option<u64>,
    pub declared_length_bytes: Option<u64>,
    pub declared_hash: Option<String>,
    pub md5_hex: Option<String>,
    pub sha1_hex: Option<String>,
    pub sha256_hex: Option<String>,
    pub media_type: Option<String>,
    pub arrived_via: Via,
    pub fetched_from: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The content coding the source declared (`rs:md encoding`, `rs:contentencoding`).
    pub declared_encoding: Option<String>,
    /// The `Content-Encoding` the bytes were served with (kept as served, never decoded).
    pub content_encoding: Option<String>,
    /// Its categories (2012 draft §3.1.7), as the source listed them (`version_categories`).
    pub categories: Vec<crate::model::Category>,
}

/// The base of a version written with struct-update syntax: every writer names its
/// `change` and `arrived_via`, which this leaves at `created` by `http`.
impl Default for NewVersion {
    fn default() -> Self {
        NewVersion {
            uri: String::new(),
            collection: String::new(),
            change: Change::Created,
            event_time: None,
            lastmod: None,
            length_bytes: None,
            declared_length_bytes: None,
            declared_hash: None,
            md5_hex: None,
            sha1_hex: None,
            sha256_hex: None,
            media_type: None,
            arrived_via: Via::Http,
            fetched_from: None,
            etag: None,
            last_modified: None,
            declared_encoding: None,
            content_encoding: None,
            categories: Vec::new(),
        }
    }
}

impl NewVersion {
    /// A tombstone of `uri` in `collection`: a `deleted` version without bytes.
    pub(crate) fn tombstone(uri: String, collection: String) -> NewVersion {
        NewVersion {
            uri,
            collection,
            change: Change::Deleted,
            arrived_via: Via::Tombstone,
            ..Default::default()
        }
    }
}

/// The id of the resource `uri`, added to `collection` when new.
pub fn resource(
    conn: &Connection,
    uri: &str,
    collection: &str,
    run_id: i64,
) -> Result<i64, StoreError> {
    if let Some(id) = new_resource(conn, uri, collection_id(conn, collection)?, run_id)? {
        return Ok(id);
    }
    Ok(conn
        .prepare_cached("SELECT id FROM resources WHERE uri = ?1")?
        .query_row([uri], |r| r.get(0))?)
}

/// Add the resource `uri` to the collection `collection_id`; `None` when the mirror has
/// that URI already (in whatever collection).
pub fn new_resource(
    conn: &Connection,
    uri: &str,
    collection_id: i64,
    run_id: i64,
) -> Result<Option<i64>, StoreError> {
    // A hot path (one call per resource): cached statements, and the ids from
    // `last_insert_rowid` rather than `RETURNING` (SQLite buffers a RETURNING statement's
    // rows in a temporary b-tree, which cost as much as the inserts themselves).
    let inserted = conn
        .prepare_cached(
            "INSERT INTO resources (uri, collection_id, first_run_id) VALUES (?1, ?2, ?3)
             ON CONFLICT(uri) DO NOTHING",
        )?
        .execute(params![uri, collection_id, run_id])?;
    Ok((inserted == 1).then(|| conn.last_insert_rowid()))
}

/// The id of a collection name (`collections`), added when new.
pub fn collection_id(conn: &Connection, name: &str) -> Result<i64, StoreError> {
    let known = conn
        .prepare_cached("SELECT id FROM collections WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?;
    if let Some(id) = known {
        return Ok(id);
    }
    conn.prepare_cached("INSERT INTO collections (name) VALUES (?1)")?
        .execute([name])?;
    Ok(conn.last_insert_rowid())
}

/// Record a version of resource `resource_id` (`v.uri` and `v.collection` are not read)
/// and make it the current one. Returns the version id.
pub fn version_of(
    conn: &Connection,
    resource_id: i64,
    run_id: i64,
    v: &NewVersion,
) -> Result<i64, StoreError> {
    conn.prepare_cached(
        "INSERT INTO versions (resource_id, run_id, change, event_time, lastmod, length_bytes,
            declared_length_bytes, declared_hash, md5_hex, sha1_hex, sha256_hex, media_type,
            arrived_via, fetched_from, etag, last_modified, declared_encoding, content_encoding)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
            ?18)",
    )?
    .execute(params![
        resource_id,
        run_id,
        v.change,
        opt_ts(v.event_time),
        opt_ts(v.lastmod),
        v.length_bytes.map(|n| n as i64),
        v.declared_length_bytes.map(|n| n as i64),
        v.declared_hash,
        v.md5_hex,
        v.sha1_hex,
        v.sha256_hex,
        v.media_type,
        v.arrived_via,
        v.fetched_from,
        v.etag,
        v.last_modified,
        v.declared_encoding,
        v.content_encoding,
    ])?;
    let version_id = conn.last_insert_rowid();
    for (place, c) in v.categories.iter().enumerate() {
        conn.prepare_cached(
            "INSERT INTO version_categories (version_id, place, name, value, title)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![version_id, place as i64, c.name, c.value, c.title])?;
    }
    conn.prepare_cached("UPDATE resources SET current_version_id = ?2 WHERE id = ?1")?
        .execute(params![resource_id, version_id])?;
    Ok(version_id)
}

/// The categories recorded with version `version_id`, in the source's order.
pub fn categories_of(
    conn: &Connection,
    version_id: i64,
) -> rusqlite::Result<Vec<crate::model::Category>> {
    conn.prepare_cached(
        "SELECT name, value, title FROM version_categories WHERE version_id = ?1 ORDER BY place",
    )?
    .query_map([version_id], |r| {
        Ok(crate::model::Category {
            name: r.get(0)?,
            value: r.get(1)?,
            title: r.get(2)?,
        })
    })?
    .collect()
}
