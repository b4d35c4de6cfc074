//! The mirror's history as the readers see it (`ls`, `cat`, `log`, `diff`, `export`): the runs,
//! the resources, and each resource's state at a point of that history, read from the catalog
//! alone. Everything here only reads, and works on a catalog opened read-only.
//!
//! A point is a run (`Point`): the mirror as the runs up to it left it. A resource's state at a
//! point is its newest version from those runs (by run, then by id: one run may bring several);
//! now, its current version. The walks stream in URI order from the catalog's URI index (one
//! statement: one consistent snapshot) and hand each row to a callback, so a listing of ten
//! million resources runs in flat memory. What a point means in time (`WHEN`), how a state is
//! shown and how its bytes are checked is left to `access`.

use crate::model::Change;
use crate::store::{Catalog, StoreError};
use rusqlite::{OptionalExtension, Row};
use std::path::Path;

/// A resolved point: the mirror as the runs up to `run` left it (`None`: now, every run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub run: Option<i64>,
}

impl Point {
    pub const NOW: Point = Point { run: None };

    /// The newest run whose states count (`i64::MAX` for now).
    pub(crate) fn bound(self) -> i64 {
        self.run.unwrap_or(i64::MAX)
    }
}

/// One run, as the readers name it.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub id: i64,
    pub command: String,
    pub started_at: String,
    /// The run has ended (it is not running, or its process died unnoticed yet).
    pub ended: bool,
    /// When it ended, as recorded (None: running, or its process died unnoticed yet).
    pub ended_at: Option<String>,
}

/// The columns of a version every reader shows.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VersionRow {
    pub version: i64,
    pub run: i64,
    pub change: Change,
    pub lastmod: Option<String>,
    pub length: Option<i64>,
    pub sha256: Option<String>,
    pub md5: Option<String>,
    pub media_type: Option<String>,
    /// The content coding the source declared, and the one the bytes were served with (kept
    /// as served: an export labels them with it).
    pub declared_encoding: Option<String>,
    pub content_encoding: Option<String>,
    /// The length the source declared.
    pub declared_length: Option<i64>,
    /// Recorded without bytes (`--metadata-only`, `versions.arrived_via` = `metadata`): what
    /// the source declares of the state, no object.
    pub metadata_only: bool,
}

impl VersionRow {
    /// The columns of `versions v`, for [`VersionRow::from_row`] at an offset.
    const SELECT: &'static str =
        "v.id, v.run_id, v.change, v.lastmod, v.length_bytes, v.sha256_hex, v.md5_hex, v.media_type,
         v.declared_encoding, v.content_encoding, v.declared_length_bytes,
         v.arrived_via = 'metadata'";

    fn from_row(r: &Row<'_>, at: usize) -> rusqlite::Result<VersionRow> {
        Ok(VersionRow {
            version: r.get(at)?,
            run: r.get(at + 1)?,
            change: r.get(at + 2)?,
            lastmod: r.get(at + 3)?,
            length: r.get(at + 4)?,
            sha256: r.get(at + 5)?,
            md5: r.get(at + 6)?,
            media_type: r.get(at + 7)?,
            declared_encoding: r.get(at + 8)?,
            content_encoding: r.get(at + 9)?,
            declared_length: r.get(at + 10)?,
            metadata_only: r.get(at + 11)?,
        })
    }

    /// The content coding the bytes are in: as served, else as declared.
    pub fn encoding(&self) -> Option<&str> {
        self.content_encoding
            .as_deref()
            .or(self.declared_encoding.as_deref())
    }

    /// Where the bytes would be shown: "metadata only" for a state recorded without them.
    pub const NO_BYTES: &'static str = "metadata only";

    /// A tombstone: the state has no bytes.
    pub(crate) fn deleted(&self) -> bool {
        self.change.is_deletion()
    }
}

/// Which states the walks hand over.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only URIs that begin with this ("" for all).
    pub prefix: String,
    /// Only URIs after this one (keyset paging: the last URI of the page before).
    pub after: Option<String>,
    /// Only resources of these collections (`None`: all).
    pub collections: Option<Vec<i64>>,
    /// Tombstones too.
    pub deleted: bool,
    /// Only states with bytes: none recorded by metadata alone (`--metadata-only`). The
    /// exports walk these: a state without bytes has no file to write.
    pub bytes_only: bool,
}

impl Filter {
    /// ` AND r.collection_id IN (...)` when the filter names collections (ids: no quoting);
    /// ` AND v.arrived_via != 'metadata'` for [`Filter::bytes_only`].
    fn collection_clause(&self) -> String {
        let bytes = match self.bytes_only {
            true => " AND v.arrived_via != 'metadata'",
            false => "",
        };
        bytes.to_string() + &self.collections_only()
    }

    fn collections_only(&self) -> String {
        match &self.collections {
            None => String::new(),
            Some(ids) => {
                let list: Vec<String> = ids.iter().map(i64::to_string).collect();
                format!(" AND r.collection_id IN ({})", list.join(","))
            }
        }
    }
}

/// A mirror's catalog opened for reading: read-only, waiting up to five seconds for a writer
/// that holds it. `StoreError::Missing` when the mirror has no catalog.
pub(crate) fn open(mirror: &Path) -> Result<Catalog, StoreError> {
    let catalog = Catalog::open_read_only(mirror)?.ok_or_else(|| StoreError::Missing {
        path: mirror.display().to_string(),
    })?;
    catalog
        .conn()
        .busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| StoreError::sqlite(&mirror.join("catalog.sqlite"), e))?;
    Ok(catalog)
}

/// One read transaction: every read through the catalog until it is dropped sees the same
/// snapshot, whatever a run beside it commits meanwhile.
pub struct Snapshot<'c> {
    catalog: &'c Catalog,
}

impl Snapshot<'_> {
    pub(crate) fn begin(catalog: &Catalog) -> Result<Snapshot<'_>, StoreError> {
        catalog.conn().execute_batch("BEGIN")?;
        Ok(Snapshot { catalog })
    }

    /// End the read transaction, saying whether that went well.
    pub(crate) fn end(self) -> Result<(), StoreError> {
        let catalog = self.catalog;
        std::mem::forget(self);
        catalog.conn().execute_batch("COMMIT")?;
        Ok(())
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        // Nothing was written: ending a read transaction cannot lose anything.
        let _ = self.catalog.conn().execute_batch("COMMIT");
    }
}

/// Every run, oldest first.
pub(crate) fn runs(catalog: &Catalog) -> Result<Vec<RunInfo>, StoreError> {
    let at = |e| StoreError::sqlite(Path::new(catalog.conn().path().unwrap_or("")), e);
    let mut stmt = catalog
        .conn()
        .prepare(
            "SELECT id, command, started_at, ended_at IS NOT NULL, ended_at FROM runs ORDER BY id",
        )
        .map_err(at)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(RunInfo {
                id: r.get(0)?,
                command: r.get(1)?,
                started_at: r.get(2)?,
                ended: r.get(3)?,
                ended_at: r.get(4)?,
            })
        })
        .map_err(at)?;
    rows.collect::<Result<_, _>>().map_err(at)
}

/// The versions one run recorded: how many, and the range of their ids (one writer at a time
/// records a run's versions, so no other run's ids fall inside it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunVersions {
    pub run: i64,
    pub count: u64,
    pub first: i64,
    pub last: i64,
}

/// What each run recorded among the versions whose ids are above `after`, by run (a walk of
/// the versions' rowids from `after` on: 0 reads them all, the last id seen reads only what
/// is new).
pub(crate) fn runs_versions_after(
    catalog: &Catalog,
    after: i64,
) -> Result<Vec<RunVersions>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT run_id, count(*), min(id), max(id) FROM versions WHERE id > ?1 \
         GROUP BY run_id ORDER BY run_id",
    )?;
    let rows = stmt.query_map([after], |r| {
        Ok(RunVersions {
            run: r.get(0)?,
            count: r.get::<_, i64>(1)?.max(0) as u64,
            first: r.get(2)?,
            last: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The versions of `run` whose ids are within `first..=last`, in the order they were
/// recorded, with their resources' URIs.
pub(crate) fn each_version_of_run<E: From<StoreError>>(
    catalog: &Catalog,
    run: i64,
    (first, last): (i64, i64),
    mut f: impl FnMut(&str, &VersionRow) -> Result<bool, E>,
) -> Result<(), E> {
    let sql = format!(
        "SELECT r.uri, {} FROM versions v JOIN resources r ON r.id = v.resource_id \
         WHERE v.id >= ?1 AND v.id <= ?2 AND v.run_id = ?3 ORDER BY v.id",
        VersionRow::SELECT
    );
    let mut stmt = catalog.conn().prepare(&sql).map_err(StoreError::from)?;
    let mut rows = stmt
        .query(rusqlite::params![first, last, run])
        .map_err(StoreError::from)?;
    while let Some(r) = rows.next().map_err(StoreError::from)? {
        let v = VersionRow::from_row(r, 1).map_err(StoreError::from)?;
        if !f(text(r, 0)?, &v)? {
            break;
        }
    }
    Ok(())
}

/// The newest run's id (0 before the first run).
pub(crate) fn newest_run(catalog: &Catalog) -> Result<i64, StoreError> {
    Ok(catalog
        .conn()
        .query_row("SELECT coalesce(max(id), 0) FROM runs", [], |r| r.get(0))?)
}

/// The id and URI of the resource with exactly this URI.
pub(crate) fn resource(catalog: &Catalog, uri: &str) -> Result<Option<(i64, String)>, StoreError> {
    Ok(catalog
        .conn()
        .query_row("SELECT id, uri FROM resources WHERE uri = ?1", [uri], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?)
}

/// URIs near `uri`, unranked and possibly repeated: six neighbours on each side in URI order,
/// and up to six URIs that end with `tail` (the same path on another scheme or host spelling).
pub(crate) fn uris_near(
    catalog: &Catalog,
    uri: &str,
    tail: Option<&str>,
) -> Result<Vec<String>, StoreError> {
    let mut candidates: Vec<String> = Vec::new();
    for sql in [
        "SELECT uri FROM resources WHERE uri >= ?1 ORDER BY uri LIMIT 6",
        "SELECT uri FROM resources WHERE uri < ?1 ORDER BY uri DESC LIMIT 6",
    ] {
        let mut stmt = catalog.conn().prepare(sql)?;
        for u in stmt.query_map([uri], |r| r.get::<_, String>(0))? {
            candidates.push(u?);
        }
    }
    if let Some(tail) = tail {
        let mut stmt = catalog
            .conn()
            .prepare("SELECT uri FROM resources WHERE uri LIKE '%' || ?1 ESCAPE '\\' LIMIT 6")?;
        let pattern = tail
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        for u in stmt.query_map([pattern], |r| r.get::<_, String>(0))? {
            candidates.push(u?);
        }
    }
    Ok(candidates)
}

/// Every collection (id, name), by name.
pub(crate) fn collections(catalog: &Catalog) -> Result<Vec<(i64, String)>, StoreError> {
    let mut stmt = catalog
        .conn()
        .prepare("SELECT id, name FROM collections ORDER BY name")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The id of the collection with this name, if the mirror has it (nothing added).
pub(crate) fn known_collection_id(
    catalog: &Catalog,
    name: &str,
) -> Result<Option<i64>, StoreError> {
    Ok(catalog
        .conn()
        .query_row("SELECT id FROM collections WHERE name = ?1", [name], |r| {
            r.get(0)
        })
        .optional()?)
}

/// The name of the collection a resource was first listed in.
pub(crate) fn collection_of(catalog: &Catalog, resource_id: i64) -> Result<String, StoreError> {
    Ok(catalog.conn().query_row(
        "SELECT c.name FROM resources r JOIN collections c ON c.id = r.collection_id WHERE r.id = ?1",
        [resource_id],
        |r| r.get(0),
    )?)
}

/// The URL of every source, oldest first.
pub(crate) fn source_urls(catalog: &Catalog) -> Result<Vec<String>, StoreError> {
    let mut stmt = catalog
        .conn()
        .prepare("SELECT url FROM sources ORDER BY id")?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every sync point as (collection, `at` as recorded, its source's URL), by source then
/// collection.
pub(crate) fn sync_points_by_source(
    catalog: &Catalog,
) -> Result<Vec<(String, Option<String>, String)>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT p.collection, p.at, s.url FROM sync_points p JOIN sources s ON s.id = p.source_id
         ORDER BY s.id, p.collection",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The SQL that picks a resource's state at a point: its current version now, else its
/// newest version from the runs up to `?N` (by run, then by id: one run may bring several).
fn state_join(point: Point, bound_param: &str) -> String {
    match point.run {
        None => "v.id = r.current_version_id".into(),
        Some(_) => format!(
            "v.id = (SELECT w.id FROM versions w WHERE w.resource_id = r.id AND w.run_id <= {bound_param} \
             ORDER BY w.run_id DESC, w.id DESC LIMIT 1)"
        ),
    }
}

/// The query of the states at `point` under `filter`, in URI order: `columns` of
/// `resources r`, `versions v` and `collections c`; `?1` the prefix, `?2` the point's bound.
fn states_sql(point: Point, filter: &Filter, columns: &str) -> String {
    let mut sql = format!(
        "SELECT {columns} FROM resources r JOIN versions v ON {} \
         JOIN collections c ON c.id = r.collection_id \
         WHERE r.uri >= ?1 AND r.uri < ?1 || char(1114111) AND r.first_run_id <= ?2",
        state_join(point, "?2")
    );
    if !filter.deleted {
        sql.push_str(&format!(" AND v.change != '{}'", Change::Deleted));
    }
    if filter.after.is_some() {
        sql.push_str(" AND r.uri > ?3");
    }
    sql.push_str(&filter.collection_clause());
    sql.push_str(" ORDER BY r.uri");
    sql
}

/// A text column, borrowed from the row.
fn text<'r>(r: &'r Row<'_>, i: usize) -> Result<&'r str, StoreError> {
    r.get_ref(i)?
        .as_str()
        .map_err(|e| StoreError::from(rusqlite::Error::from(e)))
}

/// `f` on each row of `sql` (bound to the prefix and the point's bound) until it says stop.
fn each_row<E: From<StoreError>>(
    catalog: &Catalog,
    sql: &str,
    filter: &Filter,
    point: Point,
    mut f: impl FnMut(&Row<'_>) -> Result<bool, E>,
) -> Result<(), E> {
    let mut stmt = catalog.conn().prepare(sql).map_err(StoreError::from)?;
    let mut rows = match &filter.after {
        Some(after) => stmt.query(rusqlite::params![filter.prefix, point.bound(), after]),
        None => stmt.query(rusqlite::params![filter.prefix, point.bound()]),
    }
    .map_err(StoreError::from)?;
    while let Some(r) = rows.next().map_err(StoreError::from)? {
        if !f(r)? {
            break;
        }
    }
    Ok(())
}

/// Every resource's state at a point, in URI order, with its collection's name: `f(uri,
/// collection, state)` returns `Ok(false)` to stop.
pub(crate) fn each_state<E: From<StoreError>>(
    catalog: &Catalog,
    point: Point,
    filter: &Filter,
    mut f: impl FnMut(&str, &str, &VersionRow) -> Result<bool, E>,
) -> Result<(), E> {
    let columns = format!("r.uri, c.name, {}", VersionRow::SELECT);
    let sql = states_sql(point, filter, &columns);
    each_row(catalog, &sql, filter, point, |r| {
        let v = VersionRow::from_row(r, 2).map_err(StoreError::from)?;
        f(text(r, 0)?, text(r, 1)?, &v)
    })
}

/// The URIs [`each_state`] walks, in the same order, and nothing else (a quicker walk).
pub(crate) fn each_state_uri<E: From<StoreError>>(
    catalog: &Catalog,
    point: Point,
    filter: &Filter,
    mut f: impl FnMut(&str) -> Result<bool, E>,
) -> Result<(), E> {
    let sql = states_sql(point, filter, "r.uri");
    each_row(catalog, &sql, filter, point, |r| f(text(r, 0)?))
}

/// Every version up to a point, tombstones included, in the order they arrived (by run, then
/// as recorded). The prefix and collections of `filter` hold; `filter.deleted` does not (a
/// history has its deletions).
pub(crate) fn each_version<E: From<StoreError>>(
    catalog: &Catalog,
    point: Point,
    filter: &Filter,
    mut f: impl FnMut(&str, &VersionRow) -> Result<bool, E>,
) -> Result<(), E> {
    let mut sql = format!(
        "SELECT r.uri, {} FROM versions v JOIN resources r ON r.id = v.resource_id \
         WHERE r.uri >= ?1 AND r.uri < ?1 || char(1114111) AND v.run_id <= ?2",
        VersionRow::SELECT
    );
    sql.push_str(&filter.collection_clause());
    sql.push_str(" ORDER BY v.run_id, v.id");
    each_row(catalog, &sql, filter, point, |r| {
        let uri: String = r.get(0).map_err(StoreError::from)?;
        let v = VersionRow::from_row(r, 1).map_err(StoreError::from)?;
        f(&uri, &v)
    })
}

/// Every resource's versions up to a point (tombstones included, in the order they arrived),
/// one resource at a time in URI order.
pub(crate) fn each_history<E: From<StoreError>>(
    catalog: &Catalog,
    point: Point,
    filter: &Filter,
    mut f: impl FnMut(&str, &[VersionRow]) -> Result<bool, E>,
) -> Result<(), E> {
    let mut sql = format!(
        "SELECT r.uri, {} FROM resources r JOIN versions v ON v.resource_id = r.id \
         WHERE r.uri >= ?1 AND r.uri < ?1 || char(1114111) AND r.first_run_id <= ?2 \
         AND v.run_id <= ?2",
        VersionRow::SELECT
    );
    sql.push_str(&filter.collection_clause());
    sql.push_str(" ORDER BY r.uri, v.run_id, v.id");
    let mut uri = String::new();
    let mut history: Vec<VersionRow> = Vec::new();
    let mut stopped = false;
    each_row(catalog, &sql, filter, point, |r| -> Result<bool, E> {
        let this = text(r, 0)?;
        if this != uri {
            if !history.is_empty() && !f(&uri, &history)? {
                stopped = true;
                return Ok(false);
            }
            history.clear();
            uri = this.to_string();
        }
        history.push(VersionRow::from_row(r, 1).map_err(StoreError::from)?);
        Ok(true)
    })?;
    if !stopped && !history.is_empty() {
        f(&uri, &history)?;
    }
    Ok(())
}

/// A resource's state at a point (`None`: it was not in the mirror yet).
pub(crate) fn state_at(
    catalog: &Catalog,
    resource_id: i64,
    point: Point,
) -> Result<Option<VersionRow>, StoreError> {
    let sql = format!(
        "SELECT {} FROM resources r JOIN versions v ON {} WHERE r.id = ?1",
        VersionRow::SELECT,
        state_join(point, "?2")
    );
    let mut stmt = catalog.conn().prepare_cached(&sql)?;
    let row = match point.run {
        None => stmt.query_row([resource_id], |r| VersionRow::from_row(r, 0)),
        Some(n) => stmt.query_row([resource_id, n], |r| VersionRow::from_row(r, 0)),
    };
    Ok(row.optional()?)
}

/// A version by its id, with the URI of its resource.
pub(crate) fn version(
    catalog: &Catalog,
    version_id: i64,
) -> Result<Option<(VersionRow, String)>, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            &format!(
                "SELECT {}, r.uri FROM versions v JOIN resources r ON r.id = v.resource_id WHERE v.id = ?1",
                VersionRow::SELECT
            ),
            [version_id],
            |r| Ok((VersionRow::from_row(r, 0)?, r.get::<_, String>(12)?)),
        )
        .optional()?)
}

/// A resource's first version: (version id, run id).
pub(crate) fn first_version(
    catalog: &Catalog,
    resource_id: i64,
) -> Result<Option<(i64, i64)>, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            "SELECT id, run_id FROM versions WHERE resource_id = ?1 ORDER BY run_id, id LIMIT 1",
            [resource_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// The newest state with bytes a resource had before one of its versions.
pub(crate) fn state_before(
    catalog: &Catalog,
    resource_id: i64,
    version_id: i64,
) -> Result<Option<VersionRow>, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            &format!(
                "SELECT {} FROM versions v WHERE v.resource_id = ?1 AND v.id != ?2 \
                 AND v.change != '{}' AND v.run_id <= (SELECT run_id FROM versions WHERE id = ?2) \
                 ORDER BY v.run_id DESC, v.id DESC LIMIT 1",
                VersionRow::SELECT,
                Change::Deleted
            ),
            [resource_id, version_id],
            |r| VersionRow::from_row(r, 0),
        )
        .optional()?)
}

/// The resources (id, URI) a run after `low` and up to `high` brought a version of, in URI
/// order: `f` returns `Ok(false)` to stop.
pub(crate) fn each_resource_changed_between<E: From<StoreError>>(
    catalog: &Catalog,
    low: i64,
    high: i64,
    mut f: impl FnMut(i64, &str) -> Result<bool, E>,
) -> Result<(), E> {
    let mut stmt = catalog
        .conn()
        .prepare(
            "SELECT r.id, r.uri FROM resources r
             WHERE r.id IN (SELECT resource_id FROM versions WHERE run_id > ?1 AND run_id <= ?2)
             ORDER BY r.uri",
        )
        .map_err(StoreError::from)?;
    let mut rows = stmt.query([low, high]).map_err(StoreError::from)?;
    while let Some(row) = rows.next().map_err(StoreError::from)? {
        let id: i64 = row.get(0).map_err(StoreError::from)?;
        if !f(id, text(row, 1)?)? {
            break;
        }
    }
    Ok(())
}

/// Every version that names object `sha256`, with its resource's URI, newest first.
pub(crate) fn each_version_naming(
    catalog: &Catalog,
    sha256: &str,
    mut f: impl FnMut(&str, VersionRow) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let mut stmt = catalog.conn().prepare(&format!(
        "SELECT r.uri, {} FROM versions v JOIN resources r ON r.id = v.resource_id
         WHERE v.sha256_hex = ?1 ORDER BY v.id DESC",
        VersionRow::SELECT
    ))?;
    let mut rows = stmt.query([sha256])?;
    while let Some(r) = rows.next()? {
        f(text(r, 0)?, VersionRow::from_row(r, 1)?)?;
    }
    Ok(())
}

/// The options the source at `source_url` keeps (`Catalog::source_kept`); none when the mirror
/// has no catalog, or one that cannot be opened for reading (the run that opens it says why;
/// one of an older schema version keeps none).
pub(crate) fn remembered_kept(mirror: &Path, source_url: &str) -> Option<crate::model::Kept> {
    match Catalog::open_read_only(mirror) {
        Ok(Some(catalog)) => catalog.source_kept(source_url).ok().flatten(),
        _ => None,
    }
}

/// The `--map` rules remembered with the mirror's sources (`Catalog::remembered_maps`); none
/// when the mirror has no catalog, or one that cannot be opened for reading.
pub fn remembered_maps(mirror: &Path) -> Result<Vec<(String, std::path::PathBuf)>, StoreError> {
    match Catalog::open_read_only(mirror) {
        Ok(Some(catalog)) => catalog.remembered_maps(),
        _ => Ok(Vec::new()),
    }
}
