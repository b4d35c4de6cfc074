//! What a source says about itself (IFCC-0001): each state of a site's or a collection's
//! `rs:ln rel="describedby"` document, kept with its bytes and what was read from it (title,
//! author), a row each time it changed (`source_metadata`). The feeds read the latest; the
//! history stays in the catalog.

use crate::store::writer::Tx;
use crate::store::{Catalog, StoreError};
use rusqlite::{params, OptionalExtension};

/// Whose metadata a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The Source Description's `describedby`: the whole site.
    Site,
    /// The Capability List's (or its Source Description entry's): one collection.
    Collection,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Site => "site",
            Role::Collection => "collection",
        }
    }
}

/// One state of a metadata document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataState {
    pub collection: String,
    pub role: Role,
    pub url: String,
    pub sha256: String,
    pub media_type: Option<String>,
    pub bytes: Vec<u8>,
    /// `Atom`, `HTML`, `Dublin Core` or `unrecognised` (`rs::metadata`).
    pub format: String,
    pub title: Option<String>,
    pub author: Option<String>,
}

/// A state as the catalog keeps it (without its bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRecord {
    pub collection: String,
    pub role: String,
    pub url: String,
    pub run_id: i64,
    /// When the run that found this state started.
    pub found_at: String,
    pub sha256: String,
    pub length: i64,
    pub format: String,
    pub title: Option<String>,
    pub author: Option<String>,
}

/// Record `m` as found by run `run_id`, unless the latest state of its collection and role is
/// the same document at the same URL. True when a row was added.
pub(crate) fn record(tx: &Tx<'_>, run_id: i64, m: &MetadataState) -> Result<bool, StoreError> {
    let conn = tx.conn();
    let latest: Option<(String, String)> = conn
        .query_row(
            "SELECT url, sha256 FROM source_metadata WHERE collection = ?1 AND role = ?2
             ORDER BY id DESC LIMIT 1",
            params![m.collection, m.role.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if latest.as_ref() == Some(&(m.url.clone(), m.sha256.clone())) {
        return Ok(false);
    }
    conn.execute(
        "INSERT INTO source_metadata (collection, role, url, run_id, sha256, media_type, bytes,
            format, title, author)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            m.collection,
            m.role.as_str(),
            m.url,
            run_id,
            m.sha256,
            m.media_type,
            m.bytes,
            m.format,
            m.title,
            m.author
        ],
    )?;
    Ok(true)
}

const COLUMNS: &str = "m.collection, m.role, m.url, m.run_id, r.started_at, m.sha256,
    length(m.bytes), m.format, m.title, m.author
    FROM source_metadata m JOIN runs r ON r.id = m.run_id";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<MetadataRecord> {
    Ok(MetadataRecord {
        collection: r.get(0)?,
        role: r.get(1)?,
        url: r.get(2)?,
        run_id: r.get(3)?,
        found_at: r.get(4)?,
        sha256: r.get(5)?,
        length: r.get(6)?,
        format: r.get(7)?,
        title: r.get(8)?,
        author: r.get(9)?,
    })
}

/// The latest state of `collection`'s metadata in `role`, if any was ever found.
pub(crate) fn latest(
    catalog: &Catalog,
    collection: &str,
    role: Role,
) -> Result<Option<MetadataRecord>, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            &format!(
                "SELECT {COLUMNS} WHERE m.collection = ?1 AND m.role = ?2 ORDER BY m.id DESC LIMIT 1"
            ),
            params![collection, role.as_str()],
            row,
        )
        .optional()?)
}
