//! Upgrading a mirror made by an older rsmirror, in place, when a newer one opens it
//! (`PRAGMA user_version`; [`crate::store::Catalog::open`]). Each step is crash-safe: what it
//! does outside the catalog (moving or writing objects) is idempotent and made durable first,
//! and the catalog changes of a step, the new version number included, commit in one
//! transaction. A process killed anywhere leaves the mirror at the old version or the new
//! one, and the next open finishes the job.
//!
//! - 1 → 2: objects move from two fan-out folder levels to one ([`objects::migrate_two_level`]).
//! - 2 → 3: each collection named once (`collections`, `resources.collection_id`), no
//!   per-version recording time (a version's time is its run's), `sources.maps_json` (the
//!   `--map` rules remembered with a source), and SCP pages become resources. Every page state kept in `scp_page_versions`
//!   (the page JSON inside the catalog) becomes a `versions` row whose object is that JSON, plus
//!   an `scp_versions` row with what only SCP knows; `scp_pages` and `scp_page_versions` go.
//!   Every JSON is checked against the SHA-256 recorded at ingest before anything is written
//!   (a mismatch stops the upgrade and changes nothing), written to the object store, made
//!   durable, and read back and hashed again before the transaction that drops the old rows.
//! - 3 → 4: `sources.removed_at` (a source no longer followed), NULL for every source: each
//!   stays followed. One transaction.
//! - 4 → 5: `sources.settings_json` (a source's own settings: its `--include`/`--exclude`
//!   rules), NULL for every source: none has any. One transaction.
//! - 5 → 6: `mirror_settings` (settings of the whole mirror), empty: the objects stay in the
//!   mirror folder. One transaction.
//! - 6 → 7: `change_documents` (where each collection publishes its changes), empty: the next
//!   run of each collection records its own. One transaction.
//! - 7 → 8: `versions.declared_encoding` and `versions.content_encoding` (a version's content
//!   coding, as declared and as served), NULL in every row: no earlier version recorded one.
//!   One transaction.
//! - 8 → 9: `harvests` (where a harvest killed between two documents resumes), empty: no
//!   harvest of an earlier rsmirror is under way. One transaction.
//! - 9 → 10: `subscriptions` (the push subscriptions of `rsmirror follow`), empty: no earlier
//!   rsmirror subscribed anywhere. One transaction ([`nine_to_ten`]).
//! - 10 → 11: `source_metadata` (each state of a site's or a collection's `describedby`
//!   document), empty: the next run of each collection fetches its own
//!   ([`ten_to_eleven`]). One transaction.
//! - 11 → 12: `version_categories` (the categories a source gave each version, 2012 draft
//!   §3.1.7), empty: no earlier rsmirror read them; the next version of each resource records
//!   its own ([`eleven_to_twelve`]). One transaction.

use crate::store::new_file::NewFile;
use crate::store::objects;
use crate::store::rows as write;
use crate::store::scp_pages;
use crate::store::{ObjectStore, StoreError};
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

pub use crate::store::schema::{SCHEMA, SCHEMA_VERSION};

/// Bring the catalog at `path` (of the mirror `mirror`) from `from` to the current version.
pub(crate) fn upgrade(
    mirror: &Path,
    path: &Path,
    conn: &mut Connection,
    from: i64,
) -> Result<(), StoreError> {
    let sql = |e| StoreError::sqlite(path, e);
    if from < 2 {
        one_to_two(mirror)?;
        conn.execute_batch("PRAGMA user_version = 2;")
            .map_err(sql)?;
        kill_point("upgrade.after-1-to-2");
    }
    if from < 3 {
        two_to_three(mirror, path, conn)?;
    }
    if from < 4 {
        column_more(conn, "removed_at", 4).map_err(sql)?;
    }
    if from < 5 {
        column_more(conn, "settings_json", 5).map_err(sql)?;
    }
    if from < 6 {
        table_more(conn, MIRROR_SETTINGS, (6, "upgrade.5-to-6-before-commit")).map_err(sql)?;
    }
    if from < 7 {
        table_more(conn, CHANGE_DOCUMENTS, (7, "upgrade.6-to-7-before-commit")).map_err(sql)?;
    }
    if from < 8 {
        seven_to_eight(conn).map_err(sql)?;
    }
    if from < 9 {
        table_more(conn, HARVESTS, (9, "upgrade.8-to-9-before-commit")).map_err(sql)?;
    }
    if from < 10 {
        nine_to_ten(conn).map_err(sql)?;
    }
    if from < 11 {
        ten_to_eleven(conn).map_err(sql)?;
    }
    if from < 12 {
        eleven_to_twelve(conn).map_err(sql)?;
    }
    Ok(())
}

/// A column more on `sources`, NULL in every row (unless it is there: a catalog whose version
/// number was set back by hand), and the version `to`, in one transaction.
fn column_more(conn: &mut Connection, column: &str, to: i64) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    add_text_column(&tx, "sources", column)?;
    kill_point(match to {
        4 => "upgrade.3-to-4-before-commit",
        _ => "upgrade.4-to-5-before-commit",
    });
    tx.execute_batch(&format!("PRAGMA user_version = {to};"))?;
    tx.commit()
}

/// A table more (`create`, written `CREATE TABLE IF NOT EXISTS`: a catalog whose version number
/// was set back by hand has it), empty, and the version `to`, in one transaction; `point` is the
/// kill point before the commit.
fn table_more(
    conn: &mut Connection,
    create: &str,
    (to, point): (i64, &'static str),
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(create)?;
    kill_point(point);
    tx.execute_batch(&format!("PRAGMA user_version = {to};"))?;
    tx.commit()
}

/// `mirror_settings` (5 → 6).
const MIRROR_SETTINGS: &str = "CREATE TABLE IF NOT EXISTS mirror_settings (
     name  TEXT PRIMARY KEY,
     value TEXT NOT NULL
 );";

/// `change_documents` (6 → 7).
const CHANGE_DOCUMENTS: &str = "CREATE TABLE IF NOT EXISTS change_documents (
     collection TEXT PRIMARY KEY,
     source_id  INTEGER NOT NULL REFERENCES sources(id),
     url        TEXT NOT NULL,
     run_id     INTEGER NOT NULL REFERENCES runs(id)
 );";

/// `harvests` (8 → 9).
const HARVESTS: &str = "CREATE TABLE IF NOT EXISTS harvests (
     collection TEXT PRIMARY KEY,
     source_id  INTEGER NOT NULL REFERENCES sources(id),
     state      TEXT NOT NULL,
     run_id     INTEGER NOT NULL REFERENCES runs(id)
 );";

/// 9 → 10: `subscriptions`, empty, and version 10, in one transaction (the whole step here, so
/// that it can be renumbered alone).
fn nine_to_ten(conn: &mut Connection) -> rusqlite::Result<()> {
    const SUBSCRIPTIONS: &str = "CREATE TABLE IF NOT EXISTS subscriptions (
         id                      INTEGER PRIMARY KEY,
         source_id               INTEGER NOT NULL REFERENCES sources(id),
         hub                     TEXT NOT NULL,
         topic                   TEXT NOT NULL,
         callback                TEXT NOT NULL UNIQUE,
         secret                  TEXT NOT NULL,
         state                   TEXT NOT NULL,
         lease_requested_seconds INTEGER,
         lease_granted_seconds   INTEGER,
         lease_until             TEXT,
         last_notification_at    TEXT,
         last_catch_up_at        TEXT,
         UNIQUE (source_id, hub, topic)
     );";
    table_more(conn, SUBSCRIPTIONS, (10, "upgrade.9-to-10-before-commit"))
}

/// 10 → 11: `source_metadata` and its index, empty, and version 11, in one transaction (both
/// `IF NOT EXISTS`: a catalog whose version number was set back by hand has them).
fn ten_to_eleven(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS source_metadata (
    id            INTEGER PRIMARY KEY,
    collection    TEXT NOT NULL,               -- as in sync_points
    role          TEXT NOT NULL,               -- site (the Source Description's) | collection
    url           TEXT NOT NULL,               -- the rs:ln rel=\"describedby\" href
    run_id        INTEGER NOT NULL REFERENCES runs(id), -- the run that found this state
    sha256        TEXT NOT NULL,               -- of bytes
    media_type    TEXT,
    bytes         BLOB NOT NULL,               -- the document as served (small: a title, an author)
    format        TEXT NOT NULL,               -- Atom | HTML | Dublin Core | unrecognised
    title         TEXT,
    author        TEXT
);
CREATE INDEX IF NOT EXISTS source_metadata_by_collection ON source_metadata(collection, role, id);",
    )?;
    kill_point("upgrade.10-to-11-before-commit");
    tx.execute_batch("PRAGMA user_version = 11;")?;
    tx.commit()
}

/// 11 → 12: `version_categories`, empty, and version 12, in one transaction (`IF NOT EXISTS`:
/// a catalog whose version number was set back by hand has it).
fn eleven_to_twelve(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS version_categories (
    version_id    INTEGER NOT NULL REFERENCES versions(id),
    place         INTEGER NOT NULL,            -- the source's order, from 0
    name          TEXT NOT NULL,               -- xhtml:link rel / xhtml:meta name (DCTERMS.subject)
    value         TEXT NOT NULL,               -- its href (resolved) / content
    title         TEXT,                        -- xhtml:link title
    PRIMARY KEY (version_id, place)
) WITHOUT ROWID;",
    )?;
    kill_point("upgrade.11-to-12-before-commit");
    tx.execute_batch("PRAGMA user_version = 12;")?;
    tx.commit()
}

/// `versions.declared_encoding` and `versions.content_encoding`, NULL in every row (each added
/// unless it is there: a catalog whose version number was set back by hand), and version 8, in
/// one transaction.
fn seven_to_eight(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    for column in ["declared_encoding", "content_encoding"] {
        add_text_column(&tx, "versions", column)?;
    }
    kill_point("upgrade.7-to-8-before-commit");
    tx.execute_batch("PRAGMA user_version = 8;")?;
    tx.commit()
}

/// `ALTER TABLE table ADD COLUMN column TEXT`, unless the table has it (a catalog whose version
/// number was set back by hand).
fn add_text_column(tx: &Connection, table: &str, column: &str) -> rusqlite::Result<()> {
    let has: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)",
        [table, column],
        |r| r.get(0),
    )?;
    if !has {
        tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} TEXT;"))?;
    }
    Ok(())
}

/// Same tables; the objects move from two fan-out levels to one. The new version is recorded
/// only once every object has moved and the moves are durable, so a crash half-way repeats
/// the (idempotent) move at the next open.
fn one_to_two(mirror: &Path) -> Result<(), StoreError> {
    let objects = mirror.join("objects");
    let moving = |e| StoreError::io("moving objects to one folder level in", &objects, e);
    if objects::migrate_two_level(mirror).map_err(moving)? > 0 {
        ObjectStore::at(mirror).sync().map_err(moving)?;
    }
    Ok(())
}

/// One page state of a version-2 catalog.
struct OldVersion {
    id: i64,
    page_id: i64,
    run_id: i64,
    collection_row: i64,
    change: String,
    modified: Option<String>,
    title: Option<String>,
    language: Option<String>,
    line: Option<i64>,
    /// (SHA-256 hex, length) of the JSON; None for a tombstone.
    object: Option<(String, i64)>,
}

fn two_to_three(mirror: &Path, path: &Path, conn: &mut Connection) -> Result<(), StoreError> {
    let sql = |e| StoreError::sqlite(path, e);
    let has_pages: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'scp_page_versions')",
            [],
            |r| r.get(0),
        )
        .map_err(sql)?;
    let written = if has_pages {
        write_page_objects(mirror, conn)?
    } else {
        Vec::new()
    };
    let store = ObjectStore::at(mirror);
    let objects_dir = mirror.join("objects");
    if !written.is_empty() {
        store.sync().map_err(|e| {
            StoreError::io("making the SCP page objects durable in", &objects_dir, e)
        })?;
        kill_point("upgrade.after-sync");
        // Read back from the store, as the old rows are about to go.
        for sha in &written {
            let at = store.path_for(sha);
            let actual = hash_file(&at).map_err(|e| StoreError::io("reading", &at, e))?;
            if &actual != sha {
                return Err(StoreError::Migration(format!(
                    "{} does not hold the bytes just written to it (SHA-256 {actual}); the \
                     catalog was not changed: check the disk and open the mirror again",
                    at.display()
                )));
            }
        }
    }
    // The resources table is rebuilt (its collection named once, in `collections`): SQLite
    // checks no foreign key while the old table goes and the new one takes its name.
    conn.execute_batch("PRAGMA foreign_keys = OFF;")
        .map_err(sql)?;
    let moved = move_rows(conn, has_pages).map_err(|e| match e {
        StoreError::Sqlite(e) => StoreError::sqlite(path, e),
        e => e,
    });
    conn.execute_batch("PRAGMA foreign_keys = ON;")
        .map_err(sql)?;
    moved?;
    kill_point("upgrade.after-commit");
    Ok(())
}

/// The catalog side of 2 → 3, in one transaction.
fn move_rows(conn: &mut Connection, has_pages: bool) -> Result<(), StoreError> {
    let tx = conn.transaction()?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS collections (
             id                 INTEGER PRIMARY KEY,
             name               TEXT NOT NULL UNIQUE
         );",
    )?;
    let has = |table: &str, column: &str| -> rusqlite::Result<bool> {
        tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)",
            [table, column],
            |r| r.get(0),
        )
    };
    if has("resources", "collection")? {
        tx.execute_batch(
            "INSERT OR IGNORE INTO collections (name)
                 SELECT DISTINCT collection FROM resources ORDER BY collection;
             CREATE TABLE resources_v3 (
                 id                 INTEGER PRIMARY KEY,
                 uri                TEXT NOT NULL UNIQUE,
                 collection_id      INTEGER NOT NULL REFERENCES collections(id),
                 first_run_id       INTEGER NOT NULL REFERENCES runs(id),
                 current_version_id INTEGER
             );
             INSERT INTO resources_v3 (id, uri, collection_id, first_run_id, current_version_id)
                 SELECT r.id, r.uri, c.id, r.first_run_id, r.current_version_id
                 FROM resources r JOIN collections c ON c.name = r.collection ORDER BY r.id;
             DROP TABLE resources;
             ALTER TABLE resources_v3 RENAME TO resources;",
        )?;
    }
    // A version's time is its run's: the per-row recording time (a tenth of a small
    // resource's row) goes.
    if has("versions", "recorded_at")? {
        tx.execute_batch("ALTER TABLE versions DROP COLUMN recorded_at;")?;
    }
    // `--map` is remembered with the source.
    if !has("sources", "maps_json")? {
        tx.execute_batch("ALTER TABLE sources ADD COLUMN maps_json TEXT;")?;
    }
    tx.execute_batch(SCP_VERSIONS)?;
    if has_pages {
        move_page_rows(&tx)?;
        tx.execute_batch("DROP TABLE scp_page_versions; DROP TABLE scp_pages;")?;
    }
    let broken: Option<String> = tx
        .query_row(
            "SELECT \"table\" FROM pragma_foreign_key_check LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(table) = broken {
        return Err(StoreError::Migration(format!(
            "a row of {table} names a row that does not exist; nothing was changed"
        )));
    }
    kill_point("upgrade.before-commit");
    tx.execute_batch("PRAGMA user_version = 3;")?;
    tx.commit()?;
    Ok(())
}

const SCP_VERSIONS: &str = "CREATE TABLE IF NOT EXISTS scp_versions (
    version_id            INTEGER PRIMARY KEY REFERENCES versions(id),
    collection_row        INTEGER NOT NULL REFERENCES scp_collections(id),
    line                  INTEGER,
    title                 TEXT,
    language              TEXT
);";

/// Every page JSON of the old tables, in the order recorded: (version id, page URL, JSON,
/// recorded SHA-256).
fn each_page_json(
    conn: &Connection,
    mut f: impl FnMut(i64, &str, &str, Option<&str>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare(
        "SELECT v.id, p.url, v.json, v.json_sha256_hex FROM scp_page_versions v
         JOIN scp_pages p ON p.id = v.page_id WHERE v.json IS NOT NULL ORDER BY v.id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let recorded: Option<String> = r.get(3)?;
        f(
            r.get(0)?,
            &r.get::<_, String>(1)?,
            &r.get::<_, String>(2)?,
            recorded.as_deref(),
        )?;
    }
    Ok(())
}

/// Every page JSON, first all checked against the SHA-256 recorded at ingest (a mismatch
/// stops the upgrade before anything is written), then written to the object store (not yet
/// durable). Returns the objects, each once.
fn write_page_objects(mirror: &Path, conn: &Connection) -> Result<Vec<String>, StoreError> {
    each_page_json(conn, |id, url, json, recorded| {
        let sha = hex::encode(Sha256::digest(json.as_bytes()));
        match recorded {
            Some(rec) if rec != sha => Err(StoreError::Migration(format!(
                "page version {id} of {url} no longer matches the SHA-256 recorded at ingest \
                 ({rec}, now {sha}); nothing was changed: restore catalog.sqlite from a backup, \
                 or audit it with an rsmirror older than schema version 3"
            ))),
            _ => Ok(()),
        }
    })?;
    let store = ObjectStore::open(mirror)
        .map_err(|e| StoreError::io("opening", &mirror.join("objects"), e))?;
    let staging = mirror.join("staging");
    std::fs::create_dir_all(&staging).map_err(|e| StoreError::io("creating", &staging, e))?;
    let mut written = Vec::new();
    let mut seen = std::collections::HashSet::new();
    each_page_json(conn, |_, _, json, recorded| {
        // Checked against the JSON just above.
        let sha = match recorded {
            Some(sha) => sha.to_string(),
            None => hex::encode(Sha256::digest(json.as_bytes())),
        };
        if !seen.insert(sha.clone()) {
            return Ok(());
        }
        let at = store.path_for(&sha);
        let present = hash_file(&at).ok().is_some_and(|h| h == sha);
        if !present {
            let mut file = NewFile::create(&staging)
                .map_err(|e| StoreError::io("creating in", &staging, e))?;
            file.write_all(json.as_bytes())
                .map_err(|e| StoreError::io("writing", &file.describe(), e))?;
            store
                .ingest_new(file, &sha)
                .map_err(|e| StoreError::io("storing", &at, e))?;
        }
        written.push(sha);
        kill_point("upgrade.after-an-object");
        Ok(())
    })?;
    Ok(written)
}

/// The rows of the old page tables as resources, versions and `scp_versions`, in the order
/// they were recorded; section sync points for the feed and for audit.
fn move_page_rows(tx: &Connection) -> Result<(), StoreError> {
    // Each page becomes a resource: its URL, qualified by its section when another
    // collection holds that URL already (the first page of a URL keeps the plain one).
    let mut pages: HashMap<i64, i64> = HashMap::new();
    {
        let mut stmt = tx.prepare(
            "SELECT p.id, p.url, p.section, p.first_run_id, s.url FROM scp_pages p
             JOIN sources s ON s.id = p.source_id ORDER BY p.id",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let (page_id, url, section, first_run): (i64, String, String, i64) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
            let source_url: String = r.get(4)?;
            let collection = scp_pages::section_collection(&source_url, &section);
            let collection_id = write::collection_id(tx, &collection)?;
            let (resource_id, _) =
                scp_pages::page_resource(tx, &url, &section, collection_id, first_run)?;
            pages.insert(page_id, resource_id);
        }
    }
    let mut stmt = tx.prepare(
        "SELECT v.id, v.page_id, v.run_id, v.collection_id, v.change, v.modified, v.title,
            v.language, v.line, v.json_sha256_hex, length(CAST(v.json AS BLOB)),
            v.json IS NOT NULL
         FROM scp_page_versions v ORDER BY v.id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let has_json: bool = r.get(11)?;
        let object = if has_json {
            // Checked against the JSON (or computed, when none was recorded) above.
            let sha: Option<String> = r.get(9)?;
            let sha = match sha {
                Some(sha) => sha,
                None => {
                    let json: String = tx.query_row(
                        "SELECT json FROM scp_page_versions WHERE id = ?1",
                        [r.get::<_, i64>(0)?],
                        |r| r.get(0),
                    )?;
                    hex::encode(Sha256::digest(json.as_bytes()))
                }
            };
            Some((sha, r.get(10)?))
        } else {
            None
        };
        let v = OldVersion {
            id: r.get(0)?,
            page_id: r.get(1)?,
            run_id: r.get(2)?,
            collection_row: r.get(3)?,
            change: r.get(4)?,
            modified: r.get(5)?,
            title: r.get(6)?,
            language: r.get(7)?,
            line: r.get(8)?,
            object,
        };
        let resource_id = *pages.get(&v.page_id).ok_or_else(|| {
            StoreError::Migration(format!(
                "page version {} names page {}, which the catalog does not have",
                v.id, v.page_id
            ))
        })?;
        move_version(tx, resource_id, &v)?;
    }
    // The sections' positions as sync points (see `scp_catalog::set_section`).
    tx.execute(
        "INSERT INTO sync_points (collection, source_id, at, anchored, basis, run_id, updated_at)
         SELECT s.url || '#scp-section=' || x.name, x.source_id, x.applied_through, 1, ?1,
            x.run_id, x.updated_at
         FROM scp_sections x JOIN sources s ON s.id = x.source_id
         WHERE x.applied_through IS NOT NULL
         ON CONFLICT(collection) DO NOTHING",
        [scp_pages::SYNC_POINT_BASIS],
    )?;
    Ok(())
}

fn move_version(tx: &Connection, resource_id: i64, v: &OldVersion) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO versions (resource_id, run_id, change, lastmod, length_bytes, sha256_hex,
            arrived_via)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'scp')",
    )?
    .execute(params![
        resource_id,
        v.run_id,
        v.change,
        v.modified,
        v.object.as_ref().map(|o| o.1),
        v.object.as_ref().map(|o| &o.0),
    ])?;
    let version_id = tx.last_insert_rowid();
    tx.prepare_cached("UPDATE resources SET current_version_id = ?2 WHERE id = ?1")?
        .execute(params![resource_id, version_id])?;
    tx.prepare_cached(
        "INSERT INTO scp_versions (version_id, collection_row, line, title, language)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        version_id,
        v.collection_row,
        v.line,
        v.title,
        v.language
    ])?;
    Ok(())
}

fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// For the kill test of the upgrade (`tests/it/migrate.rs`): a debug build given
/// `RSMIRROR_KILL_UPGRADE_AT=N` dies at the N-th point (1-based) of the upgrade, as a crash
/// would. Release builds never read it. Each point is also a named one (`store::kill`).
fn kill_point(name: &'static str) {
    if !cfg!(debug_assertions) {
        return;
    }
    crate::store::kill::point(name);
    use std::sync::atomic::{AtomicU64, Ordering};
    static PASSED: AtomicU64 = AtomicU64::new(0);
    let Some(at) = std::env::var("RSMIRROR_KILL_UPGRADE_AT")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    if PASSED.fetch_add(1, Ordering::SeqCst) + 1 == at {
        std::process::abort();
    }
}
