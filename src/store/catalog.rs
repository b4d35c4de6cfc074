//! The SQLite catalog (`MIRROR/catalog.sqlite`, schema in `schema.sql`): sources, runs,
//! documents, resources and their versions, sync points and per-run problems.
//!
//! WAL with `synchronous=FULL`. A version row is only written after its object is durable (the
//! caller syncs the object store before committing the transaction that references it), so the
//! catalog never points at bytes a crash could lose. Only one thread writes: the commands hand
//! their writes to a single writer (see `engine::apply`).

use crate::model::{Change, ChangeOutcome, ProblemClass};
pub use crate::store::rows::NewVersion;
use crate::store::tx::Tx;
use crate::store::StoreError;
use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use std::collections::HashMap;
use std::path::Path;

pub use crate::store::schema::{SCHEMA, SCHEMA_VERSION};

/// The index of versions by the object they name, as `schema.sql` defines it; see
/// [`Catalog::defer_object_index`].
const OBJECT_INDEX: &str = "CREATE INDEX IF NOT EXISTS versions_by_object ON versions(sha256_hex)";

pub struct Catalog {
    conn: Connection,
    /// A catalog open for writing: sealed when dropped (`store::seal`), with a copy made.
    sealing: Option<Sealing>,
}

impl Sealing {
    /// The log did not hold: marked, so that nothing more is written, and the error that says so.
    fn log_changed(&self, why: String) -> StoreError {
        self.damaged.set(true);
        StoreError::Damaged {
            path: self.mirror.join("catalog.sqlite").display().to_string(),
            what: format!("its write-ahead log was changed while this run wrote: {why}"),
        }
    }
}

/// What a catalog open for writing seals when it is dropped.
struct Sealing {
    mirror: std::path::PathBuf,
    /// The run the last `begin_run` recorded.
    run: std::cell::Cell<Option<i64>>,
    /// The write-ahead log as far as it is proven (`store::wal`).
    proven: std::cell::RefCell<crate::store::wal::Proven>,
    /// The log did not hold: nothing more is written, not even a checkpoint.
    damaged: std::cell::Cell<bool>,
    /// The connection's total changes at the last proof.
    changes: std::cell::Cell<u64>,
    /// Set by SQLite's commit hook, cleared by its rollback hook and by each proof.
    wrote: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// A run begun and not (yet) ended: the catalog is not sealed as whole if it never ends.
    open_run: std::cell::Cell<bool>,
    /// The run met what may be damage (an SQLite error saying so): not sealed, no copy.
    suspect: std::cell::Cell<bool>,
}

/// The current state of one resource, as the plan and audit compare it.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentState {
    pub resource_id: i64,
    /// The collection the resource was first listed in.
    pub collection: String,
    pub version_id: i64,
    pub deleted: bool,
    pub lastmod: Option<Timestamp>,
    pub length_bytes: Option<u64>,
    pub md5_hex: Option<String>,
    pub sha1_hex: Option<String>,
    pub sha256_hex: Option<String>,
}

/// One change event as an incremental run disposed of it.
#[derive(Debug, Clone)]
pub struct ChangeEventRecord {
    pub collection: String,
    pub uri: String,
    pub change: Change,
    pub event_time: Option<Timestamp>,
    pub document_url: String,
    pub outcome: ChangeOutcome,
}

/// A document read during a run.
#[derive(Debug, Clone, Default)]
pub struct DocumentRecord {
    pub url: String,
    pub capability: Option<String>,
    pub root: &'static str,
    pub syntax: &'static str,
    pub at: Option<Timestamp>,
    pub completed: Option<Timestamp>,
    pub from: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub entry_count: u64,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// A collection's sync point.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncPoint {
    pub collection: String,
    pub at: Option<Timestamp>,
    pub anchored: bool,
    pub basis: String,
}

fn now() -> String {
    Timestamp::now().to_string()
}

fn ts(s: Option<String>) -> Option<Timestamp> {
    s.and_then(|s| s.parse().ok())
}

/// The current state of each resource: the columns [`current_state_at`] reads, then `r.uri`.
const CURRENT_STATES: &str = "SELECT r.id, v.id, v.change, v.lastmod, v.length_bytes, v.md5_hex,
        v.sha1_hex, v.sha256_hex, c.name, r.uri
     FROM resources r JOIN versions v ON v.id = r.current_version_id
     JOIN collections c ON c.id = r.collection_id";

/// A row of [`CURRENT_STATES`] as a state.
fn current_state_at(r: &rusqlite::Row<'_>) -> rusqlite::Result<CurrentState> {
    Ok(CurrentState {
        resource_id: r.get(0)?,
        version_id: r.get(1)?,
        deleted: r.get_ref(2)?.as_str()? == Change::Deleted.as_str(),
        lastmod: ts(r.get(3)?),
        length_bytes: r.get::<_, Option<i64>>(4)?.map(|n| n as u64),
        md5_hex: r.get(5)?,
        sha1_hex: r.get(6)?,
        sha256_hex: r.get(7)?,
        collection: r.get(8)?,
    })
}

/// Have the kernel read the catalog's file into its cache, in order, on a thread of its own,
/// when the file takes under a quarter of the memory available. A writer reads all of it in the
/// end anyway (the copy and the seal's SHA-256, `store::copies`); read first and in order, the
/// lookups between find their pages there, where on a cold cache each waited for its own small
/// read. From a cold cache, 1,000,000 resources and 622 MB of catalog on two cores: an
/// incremental of 10,000 changes took 4.0-4.3 s instead of 6.6-7.1 s, a re-run with nothing
/// changed 8.3-8.7 s instead of 12.2-12.9 s (`POSIX_FADV_WILLNEED` of the whole file instead:
/// 5.2 s; the run's own reads waited behind it). Nothing fails and nothing waits for it.
fn read_ahead(path: &Path) {
    /// A smaller file is left to the lookups.
    const LEAST: u64 = 8 << 20;
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return;
    };
    if len < LEAST || len.saturating_mul(4) > available_memory() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("catalog-read-ahead".into())
        .spawn(move || {
            let mut file = file;
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd as _;
                // SAFETY: a valid open descriptor; the call only advises the kernel.
                unsafe {
                    libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
                }
            }
            let mut buf = vec![0u8; 1 << 20];
            while let Ok(n) = std::io::Read::read(&mut file, &mut buf) {
                if n == 0 {
                    break;
                }
            }
        });
}

/// `MemAvailable` of /proc/meminfo, in bytes (0 when unknown: nothing is read ahead).
fn available_memory() -> u64 {
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return 0;
    };
    info.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn opt_ts(t: Option<Timestamp>) -> Option<String> {
    t.map(|t| t.to_string())
}

impl Catalog {
    /// Open (creating and migrating when needed) the catalog of a mirror. The caller holds the
    /// mirror's lock.
    pub fn open(mirror: &Path) -> Result<Catalog, StoreError> {
        let path = mirror.join("catalog.sqlite");
        let mut conn = Connection::open(&path).map_err(|e| StoreError::sqlite(&path, e))?;
        // Until the check has passed, closing must not checkpoint a damaged log into the file.
        let no_checkpoint = |conn: &Connection, on: bool| {
            conn.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                on,
            )
            .map_err(|e| StoreError::sqlite(&path, e))
        };
        no_checkpoint(&conn, true)?;
        conn.execute_batch("PRAGMA busy_timeout=5000;")
            .map_err(|e| StoreError::sqlite(&path, e))?;
        crate::store::seal::check(mirror, &conn, crate::store::seal::Who::Writer)?;
        no_checkpoint(&conn, false)?;
        // A schema this rsmirror does not read (a newer rsmirror's, an overwritten header)
        // refuses the writer before it marks anything: the seal stays as it was.
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| StoreError::sqlite(&path, e))?;
        if !(0..=SCHEMA_VERSION).contains(&version) {
            return Err(StoreError::schema(&path, version));
        }
        crate::store::seal::open(mirror, &conn)?;
        // Only the writer checkpoints, a log it has proven (`committed`, `store::wal`): never
        // SQLite on its own, inside a commit, with frames nobody proved.
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; \
             PRAGMA wal_autocheckpoint=0;",
        )
        .map_err(|e| StoreError::sqlite(&path, e))?;
        // Whether a commit wrote since the last proof (a rolled-back transaction did not).
        let wrote = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (on_commit, on_rollback) = (wrote.clone(), wrote.clone());
        conn.commit_hook(Some(move || {
            on_commit.store(true, std::sync::atomic::Ordering::Relaxed);
            false
        }))
        .map_err(|e| StoreError::sqlite(&path, e))?;
        conn.rollback_hook(Some(move || {
            on_rollback.store(false, std::sync::atomic::Ordering::Relaxed);
        }))
        .map_err(|e| StoreError::sqlite(&path, e))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| StoreError::sqlite(&path, e))?;
        match version {
            0 => conn
                .execute_batch(&format!("BEGIN; {SCHEMA} COMMIT;"))
                .map_err(|e| StoreError::sqlite(&path, e))?,
            v if (1..SCHEMA_VERSION).contains(&v) => {
                crate::store::migrate::upgrade(mirror, &path, &mut conn, version)?
            }
            SCHEMA_VERSION => {}
            v => return Err(StoreError::schema(&path, v)),
        }
        // A run that loaded an empty catalog without the index and died before building it.
        conn.execute_batch(OBJECT_INDEX)
            .map_err(|e| StoreError::sqlite(&path, e))?;
        if crate::store::copies::kept() > 0 {
            read_ahead(&path);
        }
        Ok(Catalog {
            conn,
            sealing: Some(Sealing {
                mirror: mirror.to_path_buf(),
                run: std::cell::Cell::new(None),
                proven: Default::default(),
                damaged: std::cell::Cell::new(false),
                changes: std::cell::Cell::new(0),
                wrote,
                open_run: std::cell::Cell::new(false),
                suspect: std::cell::Cell::new(false),
            }),
        })
    }

    /// After a commit that matters (a batch of versions, a run begun or ended): what it added
    /// to the write-ahead log is proven (`store::wal`: a log cut, punched or overwritten while
    /// the run writes stops it here, exit 5, nothing more written), the seal says how far the
    /// catalog has come (commits a damaged log would lose are noticed by the next run), and a
    /// log past [`crate::store::wal::CHECKPOINT_AT`] is proven whole and checkpointed.
    pub(crate) fn committed(&self) -> Result<(), StoreError> {
        let Some(s) = &self.sealing else {
            return Ok(());
        };
        let wal = crate::store::wal::path_of(&s.mirror.join("catalog.sqlite"));
        let mut proven = s.proven.borrow_mut();
        let damaged = |why: String| s.log_changed(why);
        let advanced = proven.prove(&wal, false).map_err(damaged)?;
        // A commit that changed rows since the last proof wrote frames: the proof must have
        // come further (a log cut before it, and written again past the cut, leaves a hole).
        let changes = self.conn.total_changes();
        let wrote = s.wrote.swap(false, std::sync::atomic::Ordering::Relaxed);
        if changes != s.changes.replace(changes) && wrote && !advanced {
            return Err(damaged(format!(
                "the frames of its last commit do not follow those proven before (at byte {})",
                proven.proven_upto()
            )));
        }
        crate::store::seal::progress(&s.mirror, &self.conn, s.run.get());
        let long = std::fs::metadata(&wal).map_or(0, |m| m.len());
        if long > crate::store::wal::CHECKPOINT_AT {
            proven.prove(&wal, true).map_err(damaged)?;
            let busy: i64 = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
            if busy == 0 {
                proven.reset();
                s.changes.set(self.conn.total_changes());
            }
        }
        Ok(())
    }

    /// The run met an error that may be damage (SQLite says the file is corrupt): the catalog
    /// is not sealed as whole and no copy of it is made (a copy would push out a good one).
    pub(crate) fn suspect(&self) {
        if let Some(s) = &self.sealing {
            s.suspect.set(true);
        }
    }

    /// Before the run's end is recorded: the write-ahead log proven whole.
    pub(crate) fn prove_log(&self) -> Result<(), StoreError> {
        let Some(s) = &self.sealing else {
            return Ok(());
        };
        if s.damaged.get() {
            return Err(s.log_changed("as found at an earlier commit".into()));
        }
        let wal = crate::store::wal::path_of(&s.mirror.join("catalog.sqlite"));
        let result = s.proven.borrow_mut().prove(&wal, true);
        result.map(|_| ()).map_err(|why| s.log_changed(why))
    }

    /// Drop the index `versions_by_object` while the catalog has no versions, so that a first
    /// load does not keep a random-key b-tree up to date row by row (at 100,000 resources
    /// that upkeep was most of the writer's time, an eighth of the baseline's CPU);
    /// [`Catalog::build_object_index`] builds it in one sorted pass at the end. `true` when
    /// dropped. A process that dies in between leaves no index, and the next
    /// [`Catalog::open`] builds it; queries are correct without it, only slower.
    pub(crate) fn defer_object_index(&self) -> Result<bool, StoreError> {
        let empty: bool =
            self.conn
                .query_row("SELECT NOT EXISTS (SELECT 1 FROM versions)", [], |r| {
                    r.get(0)
                })?;
        if empty {
            self.conn
                .execute_batch("DROP INDEX IF EXISTS versions_by_object")?;
        }
        Ok(empty)
    }

    /// Build the index `versions_by_object` (as `schema.sql` defines it) when it is missing and
    /// the file system has room for it above the `--min-free` margin (about 100 bytes a version,
    /// in the log and then in the file); `Some` says why it was left for the next run.
    pub(crate) fn build_object_index(&self) -> Result<Option<String>, StoreError> {
        let missing: bool = self.conn.query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'versions_by_object')",
            [],
            |r| r.get(0),
        )?;
        if !missing {
            return Ok(None);
        }
        let versions: i64 =
            self.conn
                .query_row("SELECT coalesce(max(id), 0) FROM versions", [], |r| {
                    r.get(0)
                })?;
        if let Some(folder) = self.conn.path().and_then(|p| Path::new(p).parent()) {
            let need = (versions.max(0) as u64).saturating_mul(200);
            if let Err(why) =
                crate::store::space::room_left(folder, crate::store::space::min_free(), need)
            {
                return Ok(Some(format!(
                    "the index of versions by object was not built ({why}); the next run that \
                     writes builds it (queries are right without it, only slower)"
                )));
            }
        }
        self.conn.execute_batch(OBJECT_INDEX)?;
        Ok(None)
    }

    /// Open an existing catalog read-only, creating nothing (dry runs); `None` when the
    /// mirror has no catalog yet.
    pub fn open_read_only(mirror: &Path) -> Result<Option<Catalog>, StoreError> {
        let path = mirror.join("catalog.sqlite");
        if !Self::present(mirror)? {
            return Ok(None);
        }
        // Without SQLite's own locking of the connection, as `Connection::open` opens one (a
        // `Connection` is used by one thread at a time): it took and released a mutex around
        // every column read, a tenth of a million-row scan.
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(&path, flags).map_err(|e| StoreError::sqlite(&path, e))?;
        let (conn, version) = match conn.query_row("PRAGMA user_version", [], |r| r.get(0)) {
            Ok(version) => (conn, version),
            // A WAL catalog on read-only media: SQLite cannot make the shared-memory file it
            // reads through. Nothing can write there, so read the file as it is (`immutable`).
            Err(_) if Self::read_only_media(&path) => {
                let conn =
                    open_immutable(&path, flags).map_err(|e| StoreError::sqlite(&path, e))?;
                let version = conn
                    .query_row("PRAGMA user_version", [], |r| r.get(0))
                    .map_err(|e| StoreError::sqlite(&path, e))?;
                (conn, version)
            }
            Err(e) => return Err(StoreError::sqlite(&path, e)),
        };
        if version == 0 {
            // The first run of a new mirror has made the file, not yet its tables.
            return Err(StoreError::Creating {
                path: path.display().to_string(),
            });
        }
        if version != SCHEMA_VERSION {
            return Err(StoreError::schema(&path, version));
        }
        crate::store::seal::check(mirror, &conn, crate::store::seal::Who::Reader)?;
        Ok(Some(Catalog {
            conn,
            sealing: None,
        }))
    }

    /// Whether the mirror has a catalog: false when there is none, an error naming it when
    /// it cannot be told (a folder that cannot be read is not "no mirror").
    pub(crate) fn present(mirror: &Path) -> Result<bool, StoreError> {
        let path = mirror.join("catalog.sqlite");
        match std::fs::metadata(&path) {
            Ok(m) => Ok(m.is_file()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io("reading", &path, e)),
        }
    }

    /// The catalog's folder cannot be written (a read-only file system or no permission).
    pub(crate) fn read_only_media(catalog: &Path) -> bool {
        let folder = catalog.parent().unwrap_or(catalog);
        match tempfile_probe(folder) {
            Ok(()) => false,
            Err(e) => matches!(
                e.kind(),
                std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
            ),
        }
    }

    /// The connection, for the store's own SQL: nothing outside `store` runs any.
    pub(in crate::store) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// A transaction, for the store's own SQL ([`Catalog::in_transaction`] outside it).
    pub(in crate::store) fn transaction(&mut self) -> Result<Transaction<'_>, StoreError> {
        self.conn.transaction().map_err(StoreError::from)
    }

    /// Write what `f` writes in one transaction of its own, outside any writer: committed when
    /// `f` succeeds, rolled back when it fails (its error is returned).
    pub fn in_transaction<T>(
        &mut self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let tx = self.transaction()?;
        let out = f(&Tx::new(&tx))?;
        tx.commit().map_err(StoreError::from)?;
        Ok(out)
    }

    /// The id of a collection name (`collections.id`), if the mirror has it (nothing written).
    pub(crate) fn collection_id_of(&self, name: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT id FROM collections WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// The id of the source recorded with exactly this URL, if any (nothing written: the
    /// catalog may be open read-only).
    pub(crate) fn known_source_id(&self, url: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT id FROM sources WHERE url = ?1", [url], |r| r.get(0))
            .optional()?)
    }

    /// The id of a source URL, added when new.
    pub(crate) fn source_id(&self, url: &str) -> Result<i64, StoreError> {
        self.conn.execute(
            "INSERT INTO sources (url, added_at) VALUES (?1, ?2) ON CONFLICT(url) DO NOTHING",
            params![url, now()],
        )?;
        Ok(self
            .conn
            .query_row("SELECT id FROM sources WHERE url = ?1", [url], |r| r.get(0))?)
    }

    /// A source the mirror knows: `Some(None)` followed, `Some(Some(time))` no longer followed
    /// since then, `None` unknown.
    pub(crate) fn source_state(&self, url: &str) -> Result<Option<Option<String>>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT removed_at FROM sources WHERE url = ?1",
                [url],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The followed source that published the document at `url` (a list, a Change List, a
    /// Capability List it read), if one did.
    pub(crate) fn source_of_document(&self, url: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT s.url FROM documents d JOIN sources s ON s.id = d.source_id
                 WHERE d.url = ?1 AND s.removed_at IS NULL ORDER BY s.id LIMIT 1",
                [url],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The Change Lists the next incremental of the source at `url` is likely to read, at
    /// most `n`, each with the validators it would be asked for with (those of
    /// [`Catalog::open_list_validators`]): where each collection publishes its changes (its
    /// Capability List's Change List or Change List Index at the last run), then the open
    /// lists (no `until` yet) it read last, newest first.
    pub(crate) fn change_lists_ahead(
        &self,
        url: &str,
        n: usize,
    ) -> Result<Vec<KnownList>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT c.url FROM change_documents c JOIN sources s ON s.id = c.source_id
             WHERE s.url = ?1 ORDER BY c.collection",
        )?;
        let named = stmt.query_map([url], |r| r.get::<_, String>(0))?;
        let mut urls: Vec<String> = named.collect::<Result<_, _>>()?;
        let mut stmt = self.conn.prepare(
            "SELECT d.url FROM documents d JOIN sources s ON s.id = d.source_id
             WHERE s.url = ?1 AND d.capability = 'changelist' AND d.root = 'urlset'
                AND d.until_time IS NULL
             ORDER BY d.fetched_at DESC, d.id DESC LIMIT ?2",
        )?;
        let open = stmt.query_map(params![url, n as i64], |r| r.get::<_, String>(0))?;
        for list in open {
            let list = list?;
            if !urls.contains(&list) {
                urls.push(list);
            }
        }
        urls.truncate(n);
        urls.into_iter()
            .map(|u| {
                let (etag, last_modified) = self.open_list_validators(&u)?;
                Ok((u, etag, last_modified))
            })
            .collect()
    }

    /// Follow the source again (a baseline of a source removed before).
    pub(crate) fn follow_again(&self, source_id: i64) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sources SET removed_at = NULL WHERE id = ?1",
            [source_id],
        )?;
        Ok(())
    }

    /// Stop following the source at `url` (its versions stay); false when the mirror follows
    /// no such source.
    pub(crate) fn remove_source(&self, url: &str) -> Result<bool, StoreError> {
        Ok(self.conn.execute(
            "UPDATE sources SET removed_at = ?2 WHERE url = ?1 AND removed_at IS NULL",
            params![url, now()],
        )? > 0)
    }

    /// The followed source other than `source_url` whose collection `collection` is (the
    /// holder of its sync point), if any.
    pub(crate) fn followed_by_another(
        &self,
        collection: &str,
        source_url: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT s.url FROM sync_points p JOIN sources s ON s.id = p.source_id
                 WHERE p.collection = ?1 AND s.url <> ?2 AND s.removed_at IS NULL",
                params![collection, source_url],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The source found nothing in any of its runs: no sync point, and no run of it created,
    /// updated or ended without a record of what it did (a process that died).
    pub(crate) fn found_nothing(&self, source_id: i64) -> Result<bool, StoreError> {
        Ok(self.conn.query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM sync_points WHERE source_id = ?1)
                AND NOT EXISTS (SELECT 1 FROM runs WHERE source_id = ?1 AND (
                    counts_json IS NULL
                    OR coalesce(json_extract(counts_json, '$.created'), 0) > 0
                    OR coalesce(json_extract(counts_json, '$.updated'), 0) > 0))",
            [source_id],
            |r| r.get(0),
        )?)
    }

    /// Record which protocol a source speaks (`resourcesync`, `scp`, `arc`), so later runs
    /// go straight to it without rediscovering (and without unconditional requests).
    pub(crate) fn set_source_kind(&self, source_id: i64, kind: &str) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE sources SET kind = ?2 WHERE id = ?1",
            params![source_id, kind],
        )?;
        Ok(())
    }

    /// The protocol recorded for a source URL, if the mirror knows the source.
    pub(crate) fn source_kind(&self, url: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT kind FROM sources WHERE url = ?1", [url], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// The `--map` rules remembered with the mirror's sources (every source's, each rule once):
    /// a rule only ever applies to the URLs under its prefix.
    pub(crate) fn remembered_maps(&self) -> Result<Vec<(String, std::path::PathBuf)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT maps_json FROM sources WHERE maps_json IS NOT NULL ORDER BY id")?;
        let mut out: Vec<(String, std::path::PathBuf)> = Vec::new();
        for json in stmt.query_map([], |r| r.get::<_, String>(0))? {
            let rules: Vec<(String, std::path::PathBuf)> =
                serde_json::from_str(&json?).unwrap_or_default();
            for rule in rules {
                if !out.contains(&rule) {
                    out.push(rule);
                }
            }
        }
        Ok(out)
    }

    /// Remember the `--map` rules given with a source (`None`: forget them).
    pub(crate) fn remember_maps(
        &self,
        source_id: i64,
        maps: Option<&[(String, std::path::PathBuf)]>,
    ) -> Result<(), StoreError> {
        // A folder whose name is not UTF-8 cannot be written as JSON: nothing is remembered.
        let json = maps.and_then(|m| serde_json::to_string(m).ok());
        self.conn.execute(
            "UPDATE sources SET maps_json = ?2 WHERE id = ?1",
            params![source_id, json],
        )?;
        Ok(())
    }

    /// The options the source at `url` keeps (`model::Kept`; `None`: the mirror does not know
    /// it; empty: it keeps none).
    pub(crate) fn source_kept(&self, url: &str) -> Result<Option<crate::model::Kept>, StoreError> {
        let json: Option<Option<String>> = self
            .conn
            .query_row(
                "SELECT settings_json FROM sources WHERE url = ?1",
                [url],
                |r| r.get(0),
            )
            .optional()?;
        Ok(json.map(|j| {
            // Written by `remember_kept` alone; anything else reads as nothing kept.
            j.and_then(|j| serde_json::from_str(&j).ok())
                .unwrap_or_default()
        }))
    }

    /// Keep `kept` with a source (empty: keep nothing).
    pub(crate) fn remember_kept(
        &self,
        source_id: i64,
        kept: &crate::model::Kept,
    ) -> Result<(), StoreError> {
        let json = (!kept.is_empty())
            .then(|| serde_json::to_string(kept).ok())
            .flatten();
        self.conn.execute(
            "UPDATE sources SET settings_json = ?2 WHERE id = ?1",
            params![source_id, json],
        )?;
        Ok(())
    }

    /// The source the mirror remembers (the most recently added one).
    pub(crate) fn remembered_source(&self) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT url FROM sources WHERE removed_at IS NULL ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The sources the mirror follows (not removed), oldest first, each with whether it has
    /// Change Lists to follow (false: a plain Sitemap, whose sync point says so) and whether it
    /// has a sync point (one without, a first baseline that did not finish, is followed by
    /// `incremental` as if it had Change Lists; `audit` has nothing to compare it by).
    pub(crate) fn followed_sources(&self) -> Result<Vec<(String, bool, bool)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT s.url, coalesce(max(p.basis NOT LIKE 'plain Sitemap%'), 1),
                    count(p.source_id) > 0
             FROM sources s LEFT JOIN sync_points p ON p.source_id = s.id
             WHERE s.removed_at IS NULL
             GROUP BY s.id ORDER BY s.id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get::<_, bool>(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Runs left without an end by a process that died are marked `abandoned`.
    pub(crate) fn abandon_unfinished_runs(&self) -> Result<usize, StoreError> {
        Ok(self.conn.execute(
            "UPDATE runs SET outcome = 'abandoned', ended_at = ?1 WHERE ended_at IS NULL",
            [now()],
        )?)
    }

    pub fn begin_run(
        &self,
        command: &str,
        source_id: Option<i64>,
        arguments: &str,
    ) -> Result<i64, StoreError> {
        // Recorded and known to the signal watcher as one step, so that Ctrl-C at any point
        // after the insert records the run as interrupted.
        crate::interrupt::beginning(
            self.conn.path(),
            super::run_records::mark_interrupted,
            || {
                self.conn.execute(
                "INSERT INTO runs (command, source_id, arguments, started_at) VALUES (?1, ?2, ?3, ?4)",
                params![command, source_id, arguments, now()],
            )?;
                let run_id = self.conn.last_insert_rowid();
                if let Some(s) = &self.sealing {
                    s.run.set(Some(run_id));
                    s.open_run.set(true);
                }
                self.committed()?;
                Ok(run_id)
            },
        )
    }

    pub(crate) fn end_run(
        &self,
        run_id: i64,
        outcome: &str,
        exit_code: i32,
        counts_json: &str,
    ) -> Result<(), StoreError> {
        crate::interrupt::ending(run_id, || {
            self.conn.execute(
                "UPDATE runs SET ended_at = ?2, outcome = ?3, exit_code = ?4, counts_json = ?5 WHERE id = ?1",
                params![run_id, now(), outcome, exit_code, counts_json],
            )?;
            self.committed()
        })?;
        if let Some(s) = &self.sealing {
            s.open_run.set(false);
        }
        Ok(())
    }

    /// Current state of every resource (tombstones included), keyed by URI.
    pub(crate) fn current_states(&self) -> Result<HashMap<String, CurrentState>, StoreError> {
        let mut stmt = self.conn.prepare(CURRENT_STATES)?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(9)?, current_state_at(r)?)))?;
        let mut map = HashMap::new();
        for row in rows {
            let (uri, state) = row?;
            map.insert(uri, state);
        }
        Ok(map)
    }

    /// One resource's current state, if the mirror has the resource.
    pub(crate) fn current_state(&self, uri: &str) -> Result<Option<CurrentState>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{CURRENT_STATES} WHERE r.uri = ?1"))?;
        Ok(stmt.query_row([uri], current_state_at).optional()?)
    }

    /// The current states of the resources `uris` name (those the mirror has): what a run
    /// that touches a few of them needs, not the whole mirror.
    pub(crate) fn current_states_of<'u>(
        &self,
        uris: impl IntoIterator<Item = &'u str>,
    ) -> Result<HashMap<String, CurrentState>, StoreError> {
        let mut out = HashMap::new();
        for uri in uris {
            if out.contains_key(uri) {
                continue;
            }
            if let Some(state) = self.current_state(uri)? {
                out.insert(uri.to_string(), state);
            }
        }
        Ok(out)
    }

    /// Whether any resource has a current state (what
    /// [`Catalog::each_current_state_by_uri`] would hand over): not yet, before a first
    /// baseline.
    /// Whether any version (of any resource, deleted or not) is recorded: a mirror that has
    /// had objects.
    pub(crate) fn has_versions(&self) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT EXISTS (SELECT 1 FROM versions)", [], |r| r.get(0))?)
    }

    pub(crate) fn has_current_states(&self) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row(&format!("SELECT EXISTS ({CURRENT_STATES})"), [], |r| {
                r.get(0)
            })?)
    }

    /// Every resource's current state in URI order (byte order, as `str` compares), handed
    /// to `f` one at a time: what a plan merges a sorted list against, in flat memory.
    /// The categories recorded with version `version_id` (2012 draft §3.1.7), in the source's
    /// order.
    pub(crate) fn version_categories(
        &self,
        version_id: i64,
    ) -> Result<Vec<crate::model::Category>, StoreError> {
        Ok(crate::store::rows::categories_of(&self.conn, version_id)?)
    }

    pub(crate) fn each_current_state_by_uri<E: From<StoreError>>(
        &self,
        mut f: impl FnMut(&str, CurrentState) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut stmt = self
            .conn
            .prepare(&format!("{CURRENT_STATES} ORDER BY r.uri"))
            .map_err(StoreError::from)?;
        let mut rows = stmt.query([]).map_err(StoreError::from)?;
        while let Some(r) = rows.next().map_err(StoreError::from)? {
            let state = current_state_at(r).map_err(StoreError::from)?;
            let uri = r
                .get_ref(9)
                .and_then(|v| Ok(v.as_str()?))
                .map_err(StoreError::from)?;
            f(uri, state)?;
        }
        Ok(())
    }

    pub(crate) fn sync_point(&self, collection: &str) -> Result<Option<SyncPoint>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT collection, at, anchored, basis FROM sync_points WHERE collection = ?1",
                [collection],
                |r| {
                    Ok(SyncPoint {
                        collection: r.get(0)?,
                        at: ts(r.get(1)?),
                        anchored: r.get::<_, i64>(2)? != 0,
                        basis: r.get(3)?,
                    })
                },
            )
            .optional()?)
    }

    pub(crate) fn sync_points(&self) -> Result<Vec<SyncPoint>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT collection, at, anchored, basis FROM sync_points ORDER BY collection",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(SyncPoint {
                collection: r.get(0)?,
                at: ts(r.get(1)?),
                anchored: r.get::<_, i64>(2)? != 0,
                basis: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// True when this closed Change List was fully processed by an earlier run.
    pub(crate) fn change_list_processed(&self, url: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM processed_change_lists WHERE url = ?1",
                [url],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Resources of `source_id` left pending by a baseline (their bytes contradicted the list)
    /// and not settled since: no version recorded after it, no change applied or found
    /// unchanged after it, no clean baseline of the source after it, and nothing said of them
    /// by the run `run_id` (which reports them). (URI, reason, run id), by URI.
    pub(crate) fn open_pending(
        &self,
        source_id: i64,
        run_id: i64,
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "WITH latest AS (
                 SELECT uri, max(run_id) AS run_id FROM run_problems
                 WHERE class = 'pending' GROUP BY uri)
             SELECT l.uri, p.reason, l.run_id FROM latest l
             JOIN run_problems p ON p.run_id = l.run_id AND p.uri = l.uri AND p.class = 'pending'
             JOIN runs r ON r.id = l.run_id
             WHERE r.source_id = ?1
               AND NOT EXISTS (SELECT 1 FROM resources res JOIN versions v ON v.resource_id = res.id
                               WHERE res.uri = l.uri AND v.run_id > l.run_id)
               AND NOT EXISTS (SELECT 1 FROM change_events e
                               WHERE e.uri = l.uri AND e.run_id > l.run_id
                                 AND e.outcome IN ('applied', 'unchanged', 'unknown-delete'))
               AND NOT EXISTS (SELECT 1 FROM runs b
                               WHERE b.command = 'baseline' AND b.source_id = ?1
                                 AND b.id > l.run_id AND b.outcome = 'ok')
               AND NOT EXISTS (SELECT 1 FROM run_problems x WHERE x.run_id = ?2 AND x.uri = l.uri)
             GROUP BY l.uri ORDER BY l.uri",
        )?;
        let rows = stmt.query_map(params![source_id, run_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The ETag and Last-Modified stored with a resource's current version.
    pub(crate) fn current_validators(
        &self,
        uri: &str,
    ) -> Result<(Option<String>, Option<String>), StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT v.etag, v.last_modified FROM resources r
                 JOIN versions v ON v.id = r.current_version_id WHERE r.uri = ?1",
                [uri],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .unwrap_or((None, None)))
    }

    /// The ETag and Last-Modified the server sent with a version's bytes.
    pub(crate) fn version_validators(
        &self,
        version_id: i64,
    ) -> Result<(Option<String>, Option<String>), StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT etag, last_modified FROM versions WHERE id = ?1",
                [version_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .unwrap_or((None, None)))
    }

    /// The ETag / Last-Modified recorded for an open Change List (a `urlset` without
    /// `until`), for a conditional GET; nothing for any other document (an index must be
    /// re-read: its open child may have changed while it did not).
    pub(crate) fn open_list_validators(
        &self,
        url: &str,
    ) -> Result<(Option<String>, Option<String>), StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT etag, last_modified FROM documents
                 WHERE url = ?1 AND root = 'urlset' AND until_time IS NULL
                 ORDER BY id DESC LIMIT 1",
                [url],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .unwrap_or((None, None)))
    }

    /// `PRAGMA integrity_check`: "ok" or the problems SQLite lists.
    pub(crate) fn integrity_check(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare("PRAGMA integrity_check")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// A document's URL and the validators it came with (ETag, Last-Modified).
pub(crate) type KnownList = (String, Option<String>, Option<String>);

/// Writes that happen inside a writer's transaction.
pub mod write {
    use super::*;
    pub use crate::store::rows::{new_resource, resource, version_of};

    /// The id of a collection name (`collections`), added when new.
    pub(crate) fn collection_id(tx: &Tx<'_>, name: &str) -> Result<i64, StoreError> {
        crate::store::rows::collection_id(tx.conn(), name)
    }

    /// Record a version and make it the resource's current one. Returns the version id.
    pub fn version(tx: &Tx<'_>, run_id: i64, v: &NewVersion) -> Result<i64, StoreError> {
        let resource_id = resource(tx.conn(), &v.uri, &v.collection, run_id)?;
        version_of(tx.conn(), resource_id, run_id, v)
    }

    pub(crate) fn document(
        tx: &Tx<'_>,
        source_id: i64,
        run_id: i64,
        d: &DocumentRecord,
    ) -> Result<(), StoreError> {
        tx.conn().execute(
            "INSERT INTO documents (source_id, url, capability, root, syntax, at, completed,
                from_time, until_time, entry_count, etag, last_modified, fetched_at, run_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             ON CONFLICT(source_id, url) DO UPDATE SET capability = excluded.capability,
                root = excluded.root, syntax = excluded.syntax, at = excluded.at,
                completed = excluded.completed, from_time = excluded.from_time,
                until_time = excluded.until_time, entry_count = excluded.entry_count,
                etag = excluded.etag, last_modified = excluded.last_modified,
                fetched_at = excluded.fetched_at, run_id = excluded.run_id",
            params![
                source_id,
                d.url,
                d.capability,
                d.root,
                d.syntax,
                opt_ts(d.at),
                opt_ts(d.completed),
                opt_ts(d.from),
                opt_ts(d.until),
                d.entry_count as i64,
                d.etag,
                d.last_modified,
                now(),
                run_id
            ],
        )?;
        Ok(())
    }

    /// Record the sync point of a collection: `run_id` is kept as the run that set its time
    /// when the time is the same (a run that found nothing new confirms it, `updated_at`).
    pub(crate) fn sync_point(
        tx: &Tx<'_>,
        source_id: i64,
        run_id: i64,
        sp: &SyncPoint,
    ) -> Result<(), StoreError> {
        tx.conn().execute(
            "INSERT INTO sync_points (collection, source_id, at, anchored, basis, run_id, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT(collection) DO UPDATE SET source_id = excluded.source_id, at = excluded.at,
                anchored = excluded.anchored, basis = excluded.basis,
                run_id = CASE WHEN at IS excluded.at THEN run_id ELSE excluded.run_id END,
                updated_at = excluded.updated_at",
            params![
                sp.collection,
                source_id,
                opt_ts(sp.at),
                sp.anchored as i64,
                sp.basis,
                run_id,
                now()
            ],
        )?;
        Ok(())
    }

    /// Where `collection` publishes its changes (`url`, its Change List or Change List Index),
    /// as the run `run_id` found it named.
    pub(crate) fn change_document(
        tx: &Tx<'_>,
        (source_id, run_id): (i64, i64),
        collection: &str,
        url: &str,
    ) -> Result<(), StoreError> {
        tx.conn().execute(
            "INSERT INTO change_documents (collection, source_id, url, run_id)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(collection) DO UPDATE SET source_id = excluded.source_id,
                url = excluded.url, run_id = excluded.run_id",
            params![collection, source_id, url, run_id],
        )?;
        Ok(())
    }

    pub(crate) fn processed_change_list(
        tx: &Tx<'_>,
        run_id: i64,
        collection: &str,
        url: &str,
        from: Option<Timestamp>,
        until: Timestamp,
    ) -> Result<(), StoreError> {
        tx.conn().execute(
            "INSERT INTO processed_change_lists (url, collection, from_time, until_time, run_id)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(url) DO NOTHING",
            params![url, collection, opt_ts(from), until.to_string(), run_id],
        )?;
        Ok(())
    }

    pub(crate) fn change_event(
        tx: &Tx<'_>,
        run_id: i64,
        e: &ChangeEventRecord,
        version_id: Option<i64>,
    ) -> Result<(), StoreError> {
        tx.conn().execute(
            "INSERT INTO change_events (run_id, collection, uri, change, event_time, document_url, version_id, outcome)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run_id,
                e.collection,
                e.uri,
                e.change,
                opt_ts(e.event_time),
                e.document_url,
                version_id,
                e.outcome
            ],
        )?;
        Ok(())
    }

    pub(crate) fn problem(
        tx: &Tx<'_>,
        run_id: i64,
        uri: &str,
        class: ProblemClass,
        reason: &str,
    ) -> Result<(), StoreError> {
        tx.conn().execute(
            "INSERT INTO run_problems (run_id, uri, class, reason) VALUES (?1, ?2, ?3, ?4)",
            params![run_id, uri, class, reason],
        )?;
        Ok(())
    }

    /// The last ids of a run's problems and change events: the rows that come after are
    /// [`pending_failed`]'s to rewrite.
    pub(crate) fn marks(conn: &Connection, run_id: i64) -> Result<(i64, i64), StoreError> {
        let last = |table: &str| -> Result<i64, StoreError> {
            Ok(conn.query_row(
                &format!("SELECT coalesce(max(id), 0) FROM {table} WHERE run_id = ?1"),
                [run_id],
                |r| r.get(0),
            )?)
        };
        Ok((last("run_problems")?, last("change_events")?))
    }

    /// The `pending` problems and change events of run `run_id` recorded after `marks` become
    /// `failed`, their reasons followed by `note`.
    pub(crate) fn pending_failed(
        tx: &Tx<'_>,
        run_id: i64,
        (problem, event): (i64, i64),
        note: &str,
    ) -> Result<(), StoreError> {
        tx.conn().execute(
            "UPDATE run_problems SET class = 'failed', reason = reason || ?3
             WHERE run_id = ?1 AND id > ?2 AND class = 'pending'",
            params![run_id, problem, note],
        )?;
        tx.conn().execute(
            "UPDATE change_events SET outcome = 'failed'
             WHERE run_id = ?1 AND id > ?2 AND outcome = 'pending'",
            params![run_id, event],
        )?;
        Ok(())
    }
}

/// A catalog open for writing is sealed when it goes: its log checkpointed into the file, a
/// copy made (`--catalog-copies`) and the seal written (`store::seal`). Should that fail, the
/// seal stays open (the next writer reads the whole catalog) and stderr says why.
impl Drop for Catalog {
    fn drop(&mut self) {
        let Some(s) = &self.sealing else {
            return;
        };
        if s.open_run.get() || s.suspect.get() {
            // A run that did not end, or one that met damage: the seal stays open, so that the
            // next writer reads the catalog whole; no copy.
            self.sealing = None;
            return;
        }
        if let Err(e) = self.prove_log() {
            // Nothing of a damaged log goes into the file: no checkpoint, now or at the close.
            let _ = self.conn.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            );
            self.sealing = None;
            crate::report::say(&format!(
                "rsmirror: {e} (the log was not checkpointed and no copy was made)"
            ));
            return;
        }
        let Some(s) = self.sealing.take() else {
            return;
        };
        let conn = match Connection::open_in_memory() {
            Ok(spare) => std::mem::replace(&mut self.conn, spare),
            Err(_) => return,
        };
        let kept = crate::store::copies::kept();
        match crate::store::seal::seal(&s.mirror, conn, s.run.get(), kept) {
            Ok(sealed) => {
                if let Some(why) = sealed.skipped {
                    crate::report::say(&format!("rsmirror: warning: {why}"));
                }
            }
            Err(e) => crate::report::say(&format!(
                "rsmirror: warning: the catalog was not sealed{}: {e}; the next run reads it whole",
                if kept > 0 {
                    " and no copy of it was made"
                } else {
                    ""
                }
            )),
        }
    }
}

/// Whether a file can be made in `folder` (made and removed at once).
/// The catalog file at `path` opened as it is (SQLite's `immutable`: no shared-memory file
/// made beside it, no lock taken), for media nothing can write to. A log beside it
/// (`catalog.sqlite-wal`) is not read.
pub(crate) fn open_immutable(
    path: &Path,
    flags: rusqlite::OpenFlags,
) -> Result<Connection, rusqlite::Error> {
    let uri = std::path::absolute(path)
        .ok()
        .and_then(|p| url::Url::from_file_path(p).ok())
        .map(|u| format!("{u}?immutable=1"))
        .ok_or_else(|| rusqlite::Error::InvalidPath(path.to_path_buf()))?;
    Connection::open_with_flags(&uri, flags | rusqlite::OpenFlags::SQLITE_OPEN_URI)
}

fn tempfile_probe(folder: &Path) -> std::io::Result<()> {
    let probe = folder.join(format!(".rsmirror-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new catalog is made at the version this rsmirror reads (schema.sql sets it itself).
    #[test]
    fn the_schema_sets_the_current_version() {
        let want = format!("PRAGMA user_version = {SCHEMA_VERSION};");
        assert!(SCHEMA.contains(&want), "schema.sql does not say {want}");
    }

    fn object_index(c: &Catalog) -> Option<String> {
        c.conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'versions_by_object'",
                [],
                |r| r.get(0),
            )
            .optional()
            .unwrap()
    }

    fn one_version(c: &mut Catalog) {
        let run = c.begin_run("baseline", None, "").unwrap();
        let v = NewVersion {
            uri: "http://example.org/a".into(),
            collection: "http://example.org/resourcelist.xml".into(),
            change: crate::model::Change::Created,
            sha256_hex: Some("ab".repeat(32)),
            arrived_via: crate::model::Via::Http,
            ..Default::default()
        };
        c.in_transaction(|tx| write::version(tx, run, &v)).unwrap();
    }

    #[test]
    fn a_version_is_recorded_under_its_resource_and_becomes_the_current_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(dir.path()).unwrap();
        let run = c.begin_run("baseline", None, "").unwrap();
        let version = |uri: &str, change: Change, sha: &str| NewVersion {
            uri: uri.into(),
            collection: "http://example.org/resourcelist.xml".into(),
            change,
            sha256_hex: Some(sha.repeat(32)),
            arrived_via: crate::model::Via::Http,
            ..Default::default()
        };
        let (a1, b1) = c
            .in_transaction(|tx| {
                let a1 = write::version(
                    tx,
                    run,
                    &version("http://example.org/a", Change::Created, "a1"),
                )?;
                let b1 = write::version(
                    tx,
                    run,
                    &version("http://example.org/b", Change::Created, "b1"),
                )?;
                Ok((a1, b1))
            })
            .unwrap();
        let a2 = c
            .in_transaction(|tx| {
                write::version(
                    tx,
                    run,
                    &version("http://example.org/a", Change::Updated, "a2"),
                )
            })
            .unwrap();
        assert_eq!((a1, b1, a2), (1, 2, 3));
        let rows: Vec<(String, i64, i64, String, i64)> = c
            .conn
            .prepare(
                "SELECT r.uri, r.id, r.current_version_id, v.sha256_hex,
                        (SELECT count(*) FROM versions w WHERE w.resource_id = r.id)
                 FROM resources r JOIN versions v ON v.id = r.current_version_id ORDER BY r.id",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![
                ("http://example.org/a".into(), 1, 3, "a2".repeat(32), 2),
                ("http://example.org/b".into(), 2, 2, "b1".repeat(32), 1),
            ]
        );
    }

    #[test]
    fn an_empty_catalog_loads_without_the_object_index_and_gets_it_back_as_defined() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(dir.path()).unwrap();
        let defined = object_index(&c).expect("schema.sql defines it");
        assert_eq!(
            defined,
            "CREATE INDEX versions_by_object ON versions(sha256_hex)"
        );
        assert!(c.defer_object_index().unwrap());
        assert_eq!(object_index(&c), None);
        one_version(&mut c);
        c.build_object_index().unwrap();
        assert_eq!(object_index(&c).as_deref(), Some(defined.as_str()));
        let plan: String = c
            .conn
            .query_row(
                "EXPLAIN QUERY PLAN SELECT DISTINCT sha256_hex FROM versions
                 WHERE sha256_hex IS NOT NULL ORDER BY sha256_hex",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("versions_by_object"), "{plan}");
    }

    #[test]
    fn a_catalog_left_without_the_object_index_gets_it_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(dir.path()).unwrap();
        assert!(c.defer_object_index().unwrap());
        one_version(&mut c);
        drop(c); // the process died before the end of its load
        let c = Catalog::open(dir.path()).unwrap();
        assert_eq!(
            object_index(&c).as_deref(),
            Some("CREATE INDEX versions_by_object ON versions(sha256_hex)")
        );
    }

    #[test]
    fn a_catalog_with_versions_keeps_its_object_index() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(dir.path()).unwrap();
        one_version(&mut c);
        assert!(!c.defer_object_index().unwrap());
        assert!(object_index(&c).is_some());
    }

    /// Issue 43: a reader beside the first run of a new mirror (the file made, its tables not
    /// yet) is told the mirror is being made, not "schema version 0".
    #[test]
    fn a_reader_beside_a_first_run_is_told_the_mirror_is_being_made() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("catalog.sqlite")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL;").unwrap();
        let err = Catalog::open_read_only(dir.path()).err().unwrap();
        assert!(
            err.to_string().contains("being made by its first run"),
            "{err}"
        );
    }
}
