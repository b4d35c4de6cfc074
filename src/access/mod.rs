//! Reading the mirror: `ls`, `cat`, `log`, `diff` and `status`. Catalog and objects only: no
//! network, nothing written, and no lock taken (a reader neither waits for a run nor holds one
//! up: SQLite's WAL gives each statement a consistent snapshot while a run writes).
//!
//! One clock everywhere: a state's time is the start of the run that brought it into the
//! mirror (runs hold the mirror's lock, so they never overlap and their ids follow their
//! starts). `WHEN` selects a point in that history: `run:N` is the mirror as run N left it, a
//! time T the mirror as the runs started by T left it, a date its midnight (UTC).

pub mod cat;
pub mod diff;
pub mod log;
pub mod ls;
pub mod status;

use crate::error::{Error, UsageError};
use crate::store::catalog::Catalog;
use crate::store::StoreError;
use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// A point in the mirror's history, as the user wrote it (`WHEN`).
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    /// The mirror as run N left it.
    Run(i64),
    /// The mirror as the runs started at or before this time left it.
    Time(Timestamp),
}

impl When {
    /// `run:N` (`run:0`: before the first run), an RFC 3339 time (`2026-03-01T12:00:00Z`, any offset), or a date
    /// (`2026-03-01`: its midnight, UTC).
    pub fn parse(s: &str) -> Result<When, UsageError> {
        let t = s.trim();
        if let Some(n) = t.strip_prefix("run:") {
            return match n.parse::<i64>() {
                Ok(n) if n >= 0 => Ok(When::Run(n)),
                _ => Err(UsageError(format!(
                    "WHEN {s:?}: after run: comes a run id (a whole number, as `rsmirror log` lists them)"
                ))),
            };
        }
        if let Ok(ts) = t.parse::<Timestamp>() {
            return Ok(When::Time(ts));
        }
        if let Ok(date) = t.parse::<jiff::civil::Date>() {
            if t.len() == 10 {
                if let Ok(z) = date.to_zoned(jiff::tz::TimeZone::UTC) {
                    return Ok(When::Time(z.timestamp()));
                }
            }
        }
        Err(UsageError(format!(
            "WHEN {s:?} is not a time: give an RFC 3339 time (2026-03-01T12:00:00Z), a date \
             (2026-03-01, its midnight UTC) or a run id (run:42)"
        )))
    }
}

/// A resolved point: the mirror as the runs up to `run` left it (`None`: now, every run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub run: Option<i64>,
}

impl Point {
    pub const NOW: Point = Point { run: None };

    /// The newest run whose states count (`i64::MAX` for now).
    pub fn bound(self) -> i64 {
        self.run.unwrap_or(i64::MAX)
    }
}

/// One run, as the readers name it.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub id: i64,
    pub command: String,
    pub started_at: String,
}

/// A mirror opened for reading.
pub struct Reader {
    pub mirror: PathBuf,
    catalog: Catalog,
    /// Every run by id (a mirror has thousands at most: a cron job a day for years).
    pub runs: BTreeMap<i64, RunInfo>,
}

impl Reader {
    pub fn open(mirror: &Path) -> Result<Reader, Error> {
        let catalog = Catalog::open_read_only(mirror)?.ok_or_else(|| StoreError::Missing {
            path: mirror.display().to_string(),
        })?;
        let path = mirror.join("catalog.sqlite");
        catalog
            .conn()
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| StoreError::sqlite(&path, e))?;
        let mut runs = BTreeMap::new();
        {
            let mut stmt = catalog
                .conn()
                .prepare("SELECT id, command, started_at FROM runs ORDER BY id")
                .map_err(|e| StoreError::sqlite(&path, e))?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(RunInfo {
                        id: r.get(0)?,
                        command: r.get(1)?,
                        started_at: r.get(2)?,
                    })
                })
                .map_err(|e| StoreError::sqlite(&path, e))?;
            for row in rows {
                let run = row.map_err(|e| StoreError::sqlite(&path, e))?;
                runs.insert(run.id, run);
            }
        }
        Ok(Reader {
            mirror: mirror.to_path_buf(),
            catalog,
            runs,
        })
    }

    pub fn conn(&self) -> &Connection {
        self.catalog.conn()
    }

    /// Where `WHEN` points: a run that exists, or a time (before the first run: the empty
    /// mirror, run 0).
    pub fn point(&self, when: Option<&When>) -> Result<Point, UsageError> {
        match when {
            None => Ok(Point::NOW),
            // Before the first run: the empty mirror.
            Some(When::Run(0)) => Ok(Point { run: Some(0) }),
            Some(When::Run(n)) => {
                if self.runs.contains_key(n) {
                    Ok(Point { run: Some(*n) })
                } else {
                    Err(UsageError(match (
                        self.runs.keys().next(),
                        self.runs.keys().next_back(),
                    ) {
                        (Some(a), Some(b)) => format!(
                            "WHEN run:{n}: the mirror has no run {n} (its runs are {a} to {b}: rsmirror log lists them)"
                        ),
                        _ => format!("WHEN run:{n}: the mirror has no runs yet"),
                    }))
                }
            }
            Some(When::Time(t)) => {
                let mut last = 0;
                for run in self.runs.values() {
                    match run.started_at.parse::<Timestamp>() {
                        Ok(started) if started <= *t => last = run.id,
                        Ok(_) => break,
                        Err(_) => {}
                    }
                }
                Ok(Point { run: Some(last) })
            }
        }
    }

    /// `run 5 (incremental, 2026-03-01T12:00:00Z)`, for messages.
    pub fn describe_run(&self, run: i64) -> String {
        match self.runs.get(&run) {
            Some(r) => format!("run {run} ({}, {})", r.command, shown_time(&r.started_at)),
            None => format!("run {run}"),
        }
    }

    /// How a point reads in messages.
    pub fn describe_point(&self, p: Point) -> String {
        match p.run {
            None => "now".into(),
            Some(0) => "before the first run".into(),
            Some(n) => format!("as {} left it", self.describe_run(n)),
        }
    }

    /// The start of a run: the time of every state it brought.
    pub fn arrived(&self, run: i64) -> &str {
        self.runs
            .get(&run)
            .map(|r| r.started_at.as_str())
            .unwrap_or("")
    }

    /// The resource with exactly this URI, or a usage error naming the closest URIs the mirror
    /// holds.
    pub fn resource(&self, uri: &str) -> Result<(i64, String), Error> {
        let found = self
            .conn()
            .query_row("SELECT id, uri FROM resources WHERE uri = ?1", [uri], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(StoreError::from)?;
        match found {
            Some(f) => Ok(f),
            None => {
                let near = self.closest(uri)?;
                let hint = if near.is_empty() {
                    " (the mirror holds no resources: run rsmirror baseline first)".to_string()
                } else {
                    format!("; the closest it holds: {}", near.join(", "))
                };
                Err(UsageError(format!("{uri} is not in the mirror{hint}")).into())
            }
        }
    }

    /// Up to three URIs near `uri`: its neighbours in URI order and the URIs it begins (an SCP
    /// page held as `URL#scp-section=NAME`, a folder's entries), by edit distance.
    fn closest(&self, uri: &str) -> Result<Vec<String>, StoreError> {
        let mut candidates: Vec<String> = Vec::new();
        for sql in [
            "SELECT uri FROM resources WHERE uri >= ?1 ORDER BY uri LIMIT 6",
            "SELECT uri FROM resources WHERE uri < ?1 ORDER BY uri DESC LIMIT 6",
        ] {
            let mut stmt = self.conn().prepare(sql)?;
            for u in stmt.query_map([uri], |r| r.get::<_, String>(0))? {
                candidates.push(u?);
            }
        }
        // The same path on another scheme or host spelling: neighbours of the path's tail.
        if let Some(tail) = uri
            .split("://")
            .nth(1)
            .and_then(|r| r.find('/').map(|i| &r[i..]))
        {
            if tail.len() > 1 {
                let mut stmt = self.conn().prepare(
                    "SELECT uri FROM resources WHERE uri LIKE '%' || ?1 ESCAPE '\\' LIMIT 6",
                )?;
                let pattern = tail
                    .replace('\\', "\\\\")
                    .replace('%', "\\%")
                    .replace('_', "\\_");
                for u in stmt.query_map([pattern], |r| r.get::<_, String>(0))? {
                    candidates.push(u?);
                }
            }
        }
        candidates.sort();
        candidates.dedup();
        candidates.sort_by_key(|c| (!c.starts_with(uri), edit_distance(uri, c)));
        candidates.truncate(3);
        Ok(candidates)
    }
}

/// The collections `--collection` names: one by its exact name, or every section of an SCP
/// source given by its URL.
pub fn collection_ids(reader: &Reader, name: &str) -> Result<Vec<i64>, Error> {
    let mut stmt = reader
        .conn()
        .prepare("SELECT id, name FROM collections ORDER BY name")
        .map_err(StoreError::from)?;
    let all: Vec<(i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(StoreError::from)?
        .collect::<Result<_, _>>()
        .map_err(StoreError::from)?;
    if let Some((id, _)) = all.iter().find(|(_, n)| n == name) {
        return Ok(vec![*id]);
    }
    let sections = format!("{name}#scp-section=");
    let ids: Vec<i64> = all
        .iter()
        .filter(|(_, n)| n.starts_with(&sections))
        .map(|(id, _)| *id)
        .collect();
    if !ids.is_empty() {
        return Ok(ids);
    }
    let names: Vec<&str> = all.iter().map(|(_, n)| n.as_str()).collect();
    Err(UsageError(format!(
        "--collection {name}: the mirror has no such collection; it has: {}",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    ))
    .into())
}

/// Levenshtein distance by characters (for suggestions; the strings are URLs).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diag + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diag = above;
        }
    }
    row[b.len()]
}

/// The columns of a version every reader shows, in [`VersionRow::SELECT`] order.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VersionRow {
    pub version: i64,
    pub run: i64,
    pub change: String,
    pub lastmod: Option<String>,
    pub length: Option<i64>,
    pub sha256: Option<String>,
    pub md5: Option<String>,
    pub media_type: Option<String>,
}

impl VersionRow {
    /// The columns of `versions v`, for [`VersionRow::from_row`] at an offset.
    pub const SELECT: &'static str =
        "v.id, v.run_id, v.change, v.lastmod, v.length_bytes, v.sha256_hex, v.md5_hex, v.media_type";

    pub fn from_row(r: &Row<'_>, at: usize) -> rusqlite::Result<VersionRow> {
        Ok(VersionRow {
            version: r.get(at)?,
            run: r.get(at + 1)?,
            change: r.get(at + 2)?,
            lastmod: r.get(at + 3)?,
            length: r.get(at + 4)?,
            sha256: r.get(at + 5)?,
            md5: r.get(at + 6)?,
            media_type: r.get(at + 7)?,
        })
    }

    pub fn deleted(&self) -> bool {
        self.change == "deleted"
    }
}

/// The SQL that picks a resource's state at a point: its current version now, else its
/// newest version from the runs up to `?N` (by run, then by id: one run may bring several).
pub fn state_join(point: Point, bound_param: &str) -> String {
    match point.run {
        None => "v.id = r.current_version_id".into(),
        Some(_) => format!(
            "v.id = (SELECT w.id FROM versions w WHERE w.resource_id = r.id AND w.run_id <= {bound_param} \
             ORDER BY w.run_id DESC, w.id DESC LIMIT 1)"
        ),
    }
}

/// The object of a state with bytes, open for reading, with its path; a missing object is
/// damage (exit 1), naming the URI.
pub fn open_object(
    mirror: &Path,
    uri: &str,
    v: &VersionRow,
) -> Result<(std::fs::File, PathBuf), Error> {
    let mut path = PathBuf::new();
    let file = open_object_into(mirror, uri, v, &mut path)?;
    Ok((file, path))
}

/// [`open_object`] with the path written into `path` (its memory kept: callers that open many
/// objects, on several threads, allocate nothing per object).
pub fn open_object_into(
    mirror: &Path,
    uri: &str,
    v: &VersionRow,
    path: &mut PathBuf,
) -> Result<std::fs::File, Error> {
    let sha = v
        .sha256
        .as_deref()
        .filter(|sha| crate::store::objects::is_sha256_hex(sha))
        .ok_or_else(|| {
            Error::Damaged(format!(
                "{uri}: version {} has no object recorded (a catalog without its digest: run rsmirror audit --offline)",
                v.version
            ))
        })?;
    crate::store::objects::ObjectStore::path_in_mirror(mirror, sha, path);
    std::fs::File::open(&*path).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            Error::Damaged(format!(
                "{uri} (version {}): its object {} is missing from the mirror \
                 (rsmirror audit --offline lists every such object)",
                v.version,
                crate::store::objects::ObjectStore::relative_path(sha)
            ))
        } else {
            StoreError::io("reading the object", path, e).into()
        }
    })
}

/// What the bytes that went out hashed to.
pub struct Got {
    /// Empty when the reader went away before the end.
    pub sha256: String,
    /// `u64::MAX` when the reader went away before the end (`cat | head`).
    pub length: u64,
}

impl Got {
    /// The reader went away before the end (`cat | head`): nothing to check.
    pub fn reader_gone(&self) -> bool {
        self.length == u64::MAX
    }
}

/// The buffer [`copy_hashing`] reads through: callers that copy many objects keep one.
pub const COPY_BUFFER: usize = 256 * 1024;

/// Copy an object's bytes through `buf`, hashing them on the way (to `io::sink()`: only
/// hash them).
pub fn copy_hashing(
    from: &mut impl Read,
    to: &mut impl Write,
    buf: &mut [u8],
    object: &Path,
    dest: &Path,
) -> Result<Got, Error> {
    let mut hasher = Sha256::new();
    let mut length = 0u64;
    loop {
        let n = match from.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StoreError::io("reading the object", object, e).into()),
        };
        hasher.update(&buf[..n]);
        length += n as u64;
        match to.write_all(&buf[..n]) {
            Ok(()) => {}
            // `cat | head`: the reader wanted no more.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                return Ok(Got {
                    sha256: String::new(),
                    length: u64::MAX,
                })
            }
            Err(e) => return Err(StoreError::io("writing to", dest, e).into()),
        }
    }
    to.flush()
        .map_err(|e| StoreError::io("writing to", dest, e))?;
    Ok(Got {
        sha256: hex::encode(hasher.finalize()),
        length,
    })
}

/// The bytes that went out are the state's, or the object is damaged (exit 1).
pub fn check(uri: &str, v: &VersionRow, got: &Got) -> Result<(), Error> {
    if got.reader_gone() {
        return Ok(());
    }
    let want = v.sha256.as_deref().unwrap_or("");
    let length_ok = v.length.is_none_or(|n| n as u64 == got.length);
    if got.sha256 == want && length_ok {
        return Ok(());
    }
    Err(Error::Damaged(format!(
        "{uri} (version {}): the stored object {} does not match the catalog: it has \
         {} bytes with SHA-256 {}, the catalog records {} bytes with SHA-256 {want}; the mirror's \
         copy is damaged (rsmirror audit --offline checks every object)",
        v.version,
        match crate::store::objects::is_sha256_hex(want) {
            true => crate::store::objects::ObjectStore::relative_path(want),
            false => "(none recorded)".into(),
        },
        got.length,
        got.sha256,
        v.length
            .map(|n| n.to_string())
            .unwrap_or_else(|| "?".into()),
    )))
}

/// Which states [`each_state`] walks.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only URIs that begin with this ("" for all).
    pub prefix: String,
    /// Only resources of these collections (`None`: all).
    pub collections: Option<Vec<i64>>,
    /// Tombstones too.
    pub deleted: bool,
}

impl Filter {
    /// ` AND r.collection_id IN (...)` when the filter names collections (ids: no quoting).
    fn collection_clause(&self) -> String {
        match &self.collections {
            None => String::new(),
            Some(ids) => {
                let list: Vec<String> = ids.iter().map(i64::to_string).collect();
                format!(" AND r.collection_id IN ({})", list.join(","))
            }
        }
    }
}

/// Every resource's state at a point, in URI order, streamed from the catalog's URI index
/// (one statement: one consistent snapshot). `f` returns `Ok(false)` to stop.
pub fn each_state(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    mut f: impl FnMut(&str, &str, &VersionRow) -> Result<bool, Error>,
) -> Result<(), Error> {
    let columns = format!("r.uri, c.name, {}", VersionRow::SELECT);
    each_state_row(reader, point, filter, &columns, |r| {
        let v = VersionRow::from_row(r, 2).map_err(StoreError::from)?;
        f(text(r, 0)?, text(r, 1)?, &v)
    })
}

/// The URIs [`each_state`] walks, in the same order, and nothing else (a quicker walk).
pub fn each_state_uri(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    mut f: impl FnMut(&str) -> Result<bool, Error>,
) -> Result<(), Error> {
    each_state_row(reader, point, filter, "r.uri", |r| f(text(r, 0)?))
}

/// `f` on each row of [`states_sql`] with these `columns`, until it says stop.
fn each_state_row(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    columns: &str,
    mut f: impl FnMut(&Row<'_>) -> Result<bool, Error>,
) -> Result<(), Error> {
    let sql = states_sql(point, filter, columns);
    let mut stmt = reader.conn().prepare(&sql).map_err(StoreError::from)?;
    let mut rows = stmt
        .query(rusqlite::params![filter.prefix, point.bound()])
        .map_err(StoreError::from)?;
    while let Some(r) = rows.next().map_err(StoreError::from)? {
        if !f(r)? {
            break;
        }
    }
    Ok(())
}

/// A text column, borrowed from the row.
fn text<'r>(r: &'r Row<'_>, i: usize) -> Result<&'r str, StoreError> {
    r.get_ref(i)
        .map_err(StoreError::from)?
        .as_str()
        .map_err(|e| StoreError::from(rusqlite::Error::from(e)))
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
        sql.push_str(" AND v.change != 'deleted'");
    }
    sql.push_str(&filter.collection_clause());
    sql.push_str(" ORDER BY r.uri");
    sql
}

/// Every version up to a point, tombstones included, in the order they arrived (by run, then
/// as recorded), for exports of the whole history. The prefix and collections of `filter` hold;
/// `filter.deleted` does not (a history has its deletions).
pub fn each_version(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    mut f: impl FnMut(&str, &VersionRow) -> Result<bool, Error>,
) -> Result<(), Error> {
    let mut sql = format!(
        "SELECT r.uri, {} FROM versions v JOIN resources r ON r.id = v.resource_id \
         WHERE r.uri >= ?1 AND r.uri < ?1 || char(1114111) AND v.run_id <= ?2",
        VersionRow::SELECT
    );
    sql.push_str(&filter.collection_clause());
    sql.push_str(" ORDER BY v.run_id, v.id");
    let mut stmt = reader.conn().prepare(&sql).map_err(StoreError::from)?;
    let mut rows = stmt
        .query(rusqlite::params![filter.prefix, point.bound()])
        .map_err(StoreError::from)?;
    while let Some(r) = rows.next().map_err(StoreError::from)? {
        let uri: String = r.get(0).map_err(StoreError::from)?;
        let v = VersionRow::from_row(r, 1).map_err(StoreError::from)?;
        if !f(&uri, &v)? {
            break;
        }
    }
    Ok(())
}

/// Every resource's versions up to a point (tombstones included, in the order they arrived),
/// one resource at a time in URI order: for exports that keep each resource's history.
pub fn each_history(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    mut f: impl FnMut(&str, &[VersionRow]) -> Result<bool, Error>,
) -> Result<(), Error> {
    let mut sql = format!(
        "SELECT r.uri, {} FROM resources r JOIN versions v ON v.resource_id = r.id \
         WHERE r.uri >= ?1 AND r.uri < ?1 || char(1114111) AND r.first_run_id <= ?2 \
         AND v.run_id <= ?2",
        VersionRow::SELECT
    );
    sql.push_str(&filter.collection_clause());
    sql.push_str(" ORDER BY r.uri, v.run_id, v.id");
    let mut stmt = reader.conn().prepare(&sql).map_err(StoreError::from)?;
    let mut rows = stmt
        .query(rusqlite::params![filter.prefix, point.bound()])
        .map_err(StoreError::from)?;
    let mut uri = String::new();
    let mut history: Vec<VersionRow> = Vec::new();
    while let Some(r) = rows.next().map_err(StoreError::from)? {
        let this = text(r, 0)?;
        if this != uri {
            if !history.is_empty() && !f(&uri, &history)? {
                return Ok(());
            }
            history.clear();
            uri = this.to_string();
        }
        history.push(VersionRow::from_row(r, 1).map_err(StoreError::from)?);
    }
    if !history.is_empty() {
        f(&uri, &history)?;
    }
    Ok(())
}

/// A resource's state at a point (`None`: it was not in the mirror yet).
pub fn state_at(
    conn: &Connection,
    resource_id: i64,
    point: Point,
) -> Result<Option<VersionRow>, StoreError> {
    let sql = format!(
        "SELECT {} FROM resources r JOIN versions v ON {} WHERE r.id = ?1",
        VersionRow::SELECT,
        state_join(point, "?2")
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let row = match point.run {
        None => stmt.query_row([resource_id], |r| VersionRow::from_row(r, 0)),
        Some(n) => stmt.query_row([resource_id, n], |r| VersionRow::from_row(r, 0)),
    };
    Ok(row.optional()?)
}

/// A run's time in milliseconds, for columns people read (`-` when none). Rounded up, so that
/// `--at` a time shown for a state includes that state (whole seconds would also include a
/// run started later in the same second).
pub fn shown_time(t: &str) -> String {
    match t.parse::<Timestamp>() {
        Ok(ts) => ts
            .round(
                jiff::TimestampRound::new()
                    .smallest(jiff::Unit::Millisecond)
                    .mode(jiff::RoundMode::Ceil),
            )
            .unwrap_or(ts)
            .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string(),
        Err(_) if t.is_empty() => "-".into(),
        Err(_) => t.into(),
    }
}

/// A span of seconds as people read it: `45 s`, `12 min`, `5.2 h`, `3.0 d`.
pub fn human_age(secs: i64) -> String {
    let s = secs.max(0) as f64;
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} d", s / 86_400.0)
    }
}

/// Seconds from an RFC 3339 time to now (`None`: not a time).
pub fn age_of(t: &str) -> Option<i64> {
    let ts: Timestamp = t.parse().ok()?;
    Some(Timestamp::now().as_second() - ts.as_second())
}

/// Standard output for a listing: buffered, and a reader that went away (`| head`) ends the
/// listing quietly.
pub struct Out {
    inner: io::BufWriter<io::StdoutLock<'static>>,
    pub closed: bool,
}

impl Out {
    pub fn stdout() -> Out {
        Out {
            inner: io::BufWriter::with_capacity(64 * 1024, io::stdout().lock()),
            closed: false,
        }
    }

    /// Write; `Ok(false)` once the reader has gone.
    pub fn write(&mut self, bytes: &[u8]) -> Result<bool, StoreError> {
        if self.closed {
            return Ok(false);
        }
        match self.inner.write_all(bytes) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(false)
            }
            Err(e) => Err(StoreError::io("writing to", Path::new("stdout"), e)),
        }
    }

    pub fn line(&mut self, s: &str) -> Result<bool, StoreError> {
        if !self.write(s.as_bytes())? {
            return Ok(false);
        }
        self.write(b"\n")
    }

    /// One JSON value on a line of its own.
    pub fn json_line(&mut self, v: &impl serde::Serialize) -> Result<bool, StoreError> {
        let s = serde_json::to_string(v).expect("serialisable");
        self.line(&s)
    }

    /// The first lines out at once (a person waits for them; `ls | head` wants them).
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(StoreError::io("writing to", Path::new("stdout"), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn when_reads_runs_times_and_dates() {
        assert_eq!(When::parse("run:42").unwrap(), When::Run(42));
        assert_eq!(
            When::parse("2026-03-01T12:00:00+01:00").unwrap(),
            When::Time("2026-03-01T11:00:00Z".parse().unwrap())
        );
        assert_eq!(
            When::parse("2026-03-01").unwrap(),
            When::Time("2026-03-01T00:00:00Z".parse().unwrap())
        );
        for bad in [
            "run:x",
            "run:-1",
            "yesterday",
            "2026-13-01",
            "2026-03-01T12:00:00",
        ] {
            let e = When::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn closest_by_edit_distance() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(human_age(30), "30 s");
        assert_eq!(human_age(600), "10 min");
        assert_eq!(human_age(7200), "2.0 h");
        assert_eq!(human_age(3 * 86_400), "3.0 d");
        assert_eq!(
            shown_time("2026-03-01T12:00:00.2001Z"),
            "2026-03-01T12:00:00.201Z"
        );
        assert_eq!(
            shown_time("2026-03-01T12:00:00Z"),
            "2026-03-01T12:00:00.000Z"
        );
    }
}
