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
pub mod feed;
pub mod log;
pub mod ls;
pub mod status;

use crate::error::{Error, UsageError};
use crate::store::catalog::Catalog;
use crate::store::history;
pub use crate::store::history::{Filter, Point, RunInfo, RunVersions, VersionRow};
use crate::store::{ObjectStore, StoreError};
use jiff::Timestamp;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// A point in the mirror's history, as the user wrote it (`WHEN`).
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    /// The mirror as run N left it; a negative N counts from the newest run (`run:-1`: the
    /// last run).
    Run(i64),
    /// The mirror as the runs started at or before this time left it.
    Time(Timestamp),
}

impl When {
    /// `run:N` (`run:0`: before the first run; `run:-1`: the last run, `run:-2` the one
    /// before), an RFC 3339 time (`2026-03-01T12:00:00Z`, any offset), a date (`2026-03-01`:
    /// its midnight, UTC), or a time relative to now as git writes them (`now`, `yesterday`,
    /// `2 days ago`, `2.weeks.ago`, `last month`, `3 years ago`, `@1700000000`).
    pub(crate) fn parse(s: &str) -> Result<When, UsageError> {
        let t = s.trim();
        if let Some(n) = t.strip_prefix("run:") {
            return match n.parse::<i64>() {
                Ok(n) => Ok(When::Run(n)),
                _ => Err(UsageError(format!(
                    "WHEN {s:?}: after run: comes a run id (a whole number, as `rsmirror log` \
                     lists them; run:-1 is the last run)"
                ))),
            };
        }
        if let Some(ago) = relative(t) {
            return Ok(When::Time(ago?));
        }
        if let Ok(ts) = t.parse::<Timestamp>() {
            return Ok(When::Time(ts));
        }
        if let Some(local) = local_time(t) {
            return local.map(When::Time);
        }
        if let Ok(date) = t.parse::<jiff::civil::Date>() {
            if t.len() == 10 {
                if let Ok(z) = date.to_zoned(jiff::tz::TimeZone::UTC) {
                    return Ok(When::Time(z.timestamp()));
                }
            }
        }
        Err(UsageError(format!(
            "WHEN {s:?} is not a time: give an RFC 3339 time (2026-03-01T12:00:00Z), a local \
             time (2026-03-01T12:00 or 2026-03-01 12:00), a date (2026-03-01, its midnight \
             UTC), a time ago (yesterday, 2 days ago, 2.weeks.ago, last month) or Unix time \
             (@1700000000), or a run id (run:42; run:-1 the last run)"
        )))
    }
    /// How a WHEN written as a local time (no zone) was read, for the caller to say beside its
    /// output: `WHEN "2026-03-01 12:00" read as local time (Europe/Paris): 2026-03-01T11:00:00Z`.
    /// None for every other form.
    pub(crate) fn local_note(s: &str) -> Option<String> {
        let t = s.trim();
        if relative(t).is_some() || t.parse::<Timestamp>().is_ok() {
            return None;
        }
        let ts = local_time(t)?.ok()?;
        let tz = jiff::tz::TimeZone::system();
        let zone = tz.iana_name().unwrap_or("the system's zone").to_string();
        Some(format!("WHEN {t:?} read as local time ({zone}): {ts}"))
    }
}

/// A date and time without a zone (`2026-03-01T12:00`, `2026-03-01 12:00:30`): this machine's
/// local time (`TZ`, else the system's zone), as git reads one ([`When::local_note`] says
/// which instant it was read as). None when `t` is not one; an error when the local clock skips it (a change to
/// summer time) or reads it twice.
fn local_time(t: &str) -> Option<Result<Timestamp, UsageError>> {
    // A date alone is its midnight UTC (above); this needs a time of day.
    if t.len() <= 10 {
        return None;
    }
    let civil = t
        .replacen(' ', "T", 1)
        .parse::<jiff::civil::DateTime>()
        .ok()?;
    let tz = jiff::tz::TimeZone::system();
    let zone = tz.iana_name().unwrap_or("the system's zone").to_string();
    Some(match tz.to_ambiguous_zoned(civil).unambiguous() {
        Ok(z) => Ok(z.timestamp()),
        Err(_) => Err(UsageError(format!(
            "WHEN {t:?}: that local time ({zone}) is skipped or repeated by a clock change: \
                 give it with its offset (2026-03-29T02:30:00+01:00) or in UTC (...Z)"
        ))),
    })
}

/// A time relative to now as git reads them; None when `t` is none of these.
fn relative(t: &str) -> Option<Result<Timestamp, UsageError>> {
    relative_to(t, Timestamp::now())
}

/// `now`, `yesterday` (24 hours ago), `N UNIT(s) ago` or `N UNIT(s)` (seconds, minutes, hours,
/// days, weeks: fixed lengths; months and years: on the UTC calendar), `last UNIT`, `a UNIT
/// ago`, the words joined by dots or underscores as well (`2.days.ago`), and `@SECONDS` (Unix
/// time), as git reads them; counted back from `now`. None when `t` is none of these.
fn relative_to(t: &str, now: Timestamp) -> Option<Result<Timestamp, UsageError>> {
    if let Some(seconds) = t.strip_prefix('@') {
        return Some(
            seconds
                .parse::<i64>()
                .ok()
                .and_then(|s| Timestamp::from_second(s).ok())
                .ok_or_else(|| {
                    UsageError(format!(
                        "WHEN {t:?}: after @ come the seconds since 1970-01-01T00:00:00Z (Unix \
                         time, as date +%s prints it)"
                    ))
                }),
        );
    }
    let lower = t.to_ascii_lowercase().replace(['.', '_'], " ");
    let words: Vec<&str> = lower.split_whitespace().collect();
    let count = |n: &str| match n {
        "a" | "an" => Some(1),
        n => n.parse::<i64>().ok(),
    };
    let (n, unit) = match words.as_slice() {
        ["now"] => return Some(Ok(now)),
        ["yesterday"] => (1, "day"),
        ["last", unit] => (1, *unit),
        [n, unit, "ago"] | [n, unit] => (count(n)?, *unit),
        _ => return None,
    };
    let too_far = || UsageError(format!("WHEN {t:?}: too far back"));
    let calendar = |span: Result<jiff::Span, jiff::Error>| {
        span.ok()
            .and_then(|span| now.to_zoned(jiff::tz::TimeZone::UTC).checked_sub(span).ok())
            .map(|z| z.timestamp())
            .ok_or_else(too_far)
    };
    if n < 0 {
        return Some(Err(too_far()));
    }
    let seconds = match unit.trim_end_matches('s') {
        "second" | "sec" => 1,
        "minute" | "min" => 60,
        "hour" => 3_600,
        "day" => 86_400,
        "week" => 7 * 86_400,
        "month" => return Some(calendar(jiff::Span::new().try_months(n))),
        "year" => return Some(calendar(jiff::Span::new().try_years(n))),
        _ => {
            return Some(Err(UsageError(format!(
                "WHEN {t:?}: the unit is one of seconds, minutes, hours, days, weeks, months, \
                 years"
            ))))
        }
    };
    let back = n
        .checked_mul(seconds)
        .and_then(|s| now.checked_sub(jiff::SignedDuration::from_secs(s)).ok());
    Some(back.ok_or_else(too_far))
}

/// A mirror opened for reading.
pub struct Reader {
    catalog: Catalog,
    mirror: PathBuf,
    /// The object store, once asked for (a bucket is connected only by commands that read
    /// objects).
    objects: std::cell::OnceCell<ObjectStore>,
    /// Every run by id (a mirror has thousands at most: a cron job a day for years).
    pub runs: BTreeMap<i64, RunInfo>,
    /// The catalog's `data_version` when the runs were read ([`Reader::refresh`]).
    seen: i64,
}

impl Reader {
    pub(crate) fn open(mirror: &Path) -> Result<Reader, Error> {
        let catalog = history::open(mirror)?;
        let runs = history::runs(&catalog)?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
        let seen = crate::store::timeline::data_version(&catalog)?;
        Ok(Reader {
            catalog,
            mirror: mirror.to_path_buf(),
            objects: std::cell::OnceCell::new(),
            runs,
            seen,
        })
    }

    /// Read the runs again when a run beside this reader has committed since they were read
    /// (a reader kept open for many requests, as `serve` keeps them).
    pub(crate) fn refresh(&mut self) -> Result<(), Error> {
        let now = crate::store::timeline::data_version(&self.catalog)?;
        if now != self.seen {
            self.runs = history::runs(&self.catalog)?
                .into_iter()
                .map(|r| (r.id, r))
                .collect();
            self.seen = now;
        }
        Ok(())
    }

    /// A resource by its exact URI (None: the mirror does not hold it).
    pub(crate) fn find(&self, uri: &str) -> Result<Option<(i64, String)>, Error> {
        Ok(history::resource(&self.catalog, uri)?)
    }

    /// The mirror's object store: its folder, or the bucket its catalog names.
    pub(crate) fn objects(&self) -> Result<&ObjectStore, Error> {
        if let Some(objects) = self.objects.get() {
            return Ok(objects);
        }
        let objects =
            crate::store::mirror_settings::object_store(&self.mirror, &self.catalog, false)?;
        Ok(self.objects.get_or_init(|| objects))
    }

    /// The catalog, for the store's queries (`store::history`).
    pub(crate) fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The newest run, when it has not ended (running now, or its process died).
    pub(crate) fn in_progress(&self) -> Option<i64> {
        self.runs
            .values()
            .next_back()
            .filter(|r| !r.ended)
            .map(|r| r.id)
    }

    /// The newest run that has ended (0 before any).
    pub(crate) fn last_ended(&self) -> i64 {
        self.runs
            .values()
            .rev()
            .find(|r| r.ended)
            .map_or(0, |r| r.id)
    }

    /// What a reader shown the mirror "now" should say while a run is under way.
    pub(crate) fn in_progress_note(&self, when: Option<&When>) -> Option<String> {
        let running = self.in_progress().filter(|_| when.is_none())?;
        Some(format!(
            "note: run {running} has not ended (running, or its process died): shown is the \
             mirror as run {} left it; --at run:{running} shows what it has committed so far",
            self.last_ended()
        ))
    }

    /// Where `WHEN` points: a run that exists, or a time (before the first run: the empty
    /// mirror, run 0); no `WHEN`: now, or while a run is under way the last run that ended.
    pub(crate) fn point(&self, when: Option<&When>) -> Result<Point, UsageError> {
        match when {
            // A run under way has committed part of what it brings: until it ends, "now" is the
            // mirror as the last run that ended left it.
            None => Ok(match self.in_progress() {
                Some(_) => Point {
                    run: Some(self.last_ended()),
                },
                None => Point::NOW,
            }),
            // Before the first run: the empty mirror.
            Some(When::Run(0)) => Ok(Point { run: Some(0) }),
            Some(When::Run(n)) if *n < 0 => {
                let back = n.unsigned_abs() as usize;
                match self.runs.keys().rev().nth(back - 1) {
                    Some(id) => Ok(Point { run: Some(*id) }),
                    None => Err(UsageError(format!(
                        "WHEN run:{n}: the mirror has {} run(s) (rsmirror log lists them)",
                        self.runs.len()
                    ))),
                }
            }
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
    pub(crate) fn describe_run(&self, run: i64) -> String {
        match self.runs.get(&run) {
            Some(r) => format!("run {run} ({}, {})", r.command, shown_time(&r.started_at)),
            None => format!("run {run}"),
        }
    }

    /// How a point reads in messages.
    pub(crate) fn describe_point(&self, p: Point) -> String {
        match p.run {
            None => "now".into(),
            Some(0) => "before the first run".into(),
            Some(n) => format!("as {} left it", self.describe_run(n)),
        }
    }

    /// The start of a run: the time of every state it brought.
    pub(crate) fn arrived(&self, run: i64) -> &str {
        self.runs
            .get(&run)
            .map(|r| r.started_at.as_str())
            .unwrap_or("")
    }

    /// The resource with exactly this URI, or a usage error naming the closest URIs the mirror
    /// holds.
    pub(crate) fn resource(&self, uri: &str) -> Result<(i64, String), Error> {
        let found = history::resource(&self.catalog, uri)?;
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
        // The same path on another scheme or host spelling: neighbours of the path's tail.
        let tail = uri
            .split("://")
            .nth(1)
            .and_then(|r| r.find('/').map(|i| &r[i..]))
            .filter(|tail| tail.len() > 1);
        let mut candidates = history::uris_near(&self.catalog, uri, tail)?;
        candidates.sort();
        candidates.dedup();
        candidates.sort_by_key(|c| (!c.starts_with(uri), edit_distance(uri, c)));
        candidates.truncate(3);
        Ok(candidates)
    }
}

/// The collections `--collection` names: one by its exact name, or every section of an SCP
/// source given by its URL.
pub(crate) fn collection_ids(reader: &Reader, name: &str) -> Result<Vec<i64>, Error> {
    let all = history::collections(&reader.catalog)?;
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

/// The object of a state with bytes, open for reading, with its path; a missing object is
/// damage (exit 1), naming the URI.
pub(crate) fn open_object(
    objects: &ObjectStore,
    uri: &str,
    v: &VersionRow,
) -> Result<(std::fs::File, PathBuf), Error> {
    let mut path = PathBuf::new();
    let file = open_object_into(objects, uri, v, &mut path)?;
    Ok((file, path))
}

/// [`open_object`] with the path written into `path` (its memory kept: callers that open many
/// objects allocate nothing per object). For an object in a bucket the path is where it would
/// be in the mirror folder, and the file a temporary copy ([`ObjectStore::open_object_into`]).
pub(crate) fn open_object_into(
    objects: &ObjectStore,
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
    match objects.open_object_into(sha, path) {
        Ok(Some(file)) => Ok(file),
        Ok(None) => Err(Error::Damaged(format!(
            "{uri} (version {}): its object {} is missing from the mirror \
             (rsmirror audit --offline lists every such object)",
            v.version,
            objects.describe(sha)
        ))),
        Err(e) => Err(StoreError::io("reading the object", path, e).into()),
    }
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
    pub(crate) fn reader_gone(&self) -> bool {
        self.length == u64::MAX
    }
}

/// The buffer [`copy_hashing`] reads through: callers that copy many objects keep one.
pub const COPY_BUFFER: usize = 256 * 1024;

/// Copy an object's bytes through `buf`, hashing them on the way (to `io::sink()`: only
/// hash them).
pub(crate) fn copy_hashing(
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
pub(crate) fn check(uri: &str, v: &VersionRow, got: &Got) -> Result<(), Error> {
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

/// Every resource's state at a point, in URI order, streamed from the catalog's URI index
/// (one statement: one consistent snapshot). `f` returns `Ok(false)` to stop.
pub(crate) fn each_state(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    f: impl FnMut(&str, &str, &VersionRow) -> Result<bool, Error>,
) -> Result<(), Error> {
    history::each_state(&reader.catalog, point, filter, f)
}

/// The URIs [`each_state`] walks, in the same order, and nothing else (a quicker walk).
pub(crate) fn each_state_uri(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    f: impl FnMut(&str) -> Result<bool, Error>,
) -> Result<(), Error> {
    history::each_state_uri(&reader.catalog, point, filter, f)
}

/// Every version up to a point, tombstones included, in the order they arrived (by run, then
/// as recorded), for exports of the whole history. The prefix and collections of `filter` hold;
/// `filter.deleted` does not (a history has its deletions).
pub(crate) fn each_version(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    f: impl FnMut(&str, &VersionRow) -> Result<bool, Error>,
) -> Result<(), Error> {
    history::each_version(&reader.catalog, point, filter, f)
}

/// Every resource's versions up to a point (tombstones included, in the order they arrived),
/// one resource at a time in URI order: for exports that keep each resource's history.
pub(crate) fn each_history(
    reader: &Reader,
    point: Point,
    filter: &Filter,
    f: impl FnMut(&str, &[VersionRow]) -> Result<bool, Error>,
) -> Result<(), Error> {
    history::each_history(&reader.catalog, point, filter, f)
}

/// What each run recorded among the versions whose ids are above `after`, by run.
pub(crate) fn runs_versions_after(reader: &Reader, after: i64) -> Result<Vec<RunVersions>, Error> {
    Ok(history::runs_versions_after(&reader.catalog, after)?)
}

/// The versions of `run` whose ids are within `ids`, in the order they were recorded.
pub(crate) fn each_version_of_run(
    reader: &Reader,
    run: i64,
    ids: (i64, i64),
    f: impl FnMut(&str, &VersionRow) -> Result<bool, Error>,
) -> Result<(), Error> {
    history::each_version_of_run(&reader.catalog, run, ids, f)
}

/// A resource's state at a point (`None`: it was not in the mirror yet).
pub(crate) fn state_at(
    reader: &Reader,
    resource_id: i64,
    point: Point,
) -> Result<Option<VersionRow>, StoreError> {
    history::state_at(&reader.catalog, resource_id, point)
}

/// A run's time in milliseconds, for columns people read (`-` when none). Rounded up, so that
/// `--at` a time shown for a state includes that state (whole seconds would also include a
/// run started later in the same second).
pub(crate) fn shown_time(t: &str) -> String {
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
pub(crate) fn human_age(secs: i64) -> String {
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
pub(crate) fn age_of(t: &str) -> Option<i64> {
    let ts: Timestamp = t.parse().ok()?;
    Some(Timestamp::now().as_second() - ts.as_second())
}

/// A version's content coding as `log` and `cat -v` show it: "encoding gzip (served as
/// Content-Encoding, declared)", kept as served.
pub(crate) fn encoding_text(declared: &Option<String>, served: &Option<String>) -> Option<String> {
    let text = match (declared.as_deref(), served.as_deref()) {
        (None, None) => return None,
        (Some(d), Some(s)) if d.eq_ignore_ascii_case(s) => {
            format!("encoding {s} (served as Content-Encoding, and declared)")
        }
        (Some(d), Some(s)) => format!("encoding {s} (served as Content-Encoding; declared {d})"),
        (None, Some(s)) => format!("encoding {s} (served as Content-Encoding)"),
        (Some(d), None) => format!("encoding {d} (declared)"),
    };
    Some(format!("{text}: the bytes are kept encoded"))
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
        assert_eq!(When::parse("run:-1").unwrap(), When::Run(-1));
        for bad in [
            "run:x",
            "2026-13-01",
            "2026-03-01T25:00:00",
            "2 fortnights ago",
            "99999999999999 weeks ago",
        ] {
            let e = When::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    /// Issue 74: WHEN as git reads it, counted back from a fixed now (never today's date).
    #[test]
    fn when_reads_the_relative_forms_git_reads() {
        let now: Timestamp = "2026-03-31T12:00:00Z".parse().unwrap();
        let at = |s: &str| relative_to(s, now).unwrap().unwrap().to_string();
        assert_eq!(at("2.days.ago"), "2026-03-29T12:00:00Z");
        assert_eq!(at("2_days_ago"), "2026-03-29T12:00:00Z");
        assert_eq!(at("3 hours"), "2026-03-31T09:00:00Z");
        assert_eq!(at("last week"), "2026-03-24T12:00:00Z");
        assert_eq!(at("a week ago"), "2026-03-24T12:00:00Z");
        assert_eq!(at("an hour ago"), "2026-03-31T11:00:00Z");
        // Months and years on the calendar: the 31st a month back is the last of February.
        assert_eq!(at("1 month ago"), "2026-02-28T12:00:00Z");
        assert_eq!(at("last month"), "2026-02-28T12:00:00Z");
        assert_eq!(at("2.years.ago"), "2024-03-31T12:00:00Z");
        assert_eq!(at("@1700000000"), "2023-11-14T22:13:20Z");
        assert_eq!(at("now"), "2026-03-31T12:00:00Z");
        // Not relative: left to the other forms.
        for other in ["2026-03-01", "2026-03-01 12:00", "run:4", "x"] {
            assert!(relative_to(other, now).is_none(), "{other}");
        }
        for bad in [
            "@soon",
            "2 fortnights ago",
            "-2 days ago",
            "99999999 years ago",
        ] {
            let e = relative_to(bad, now).unwrap().unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn when_reads_times_ago_as_git_does() {
        let at = |s: &str| match When::parse(s).unwrap() {
            When::Time(t) => t,
            other => panic!("{s}: {other:?}"),
        };
        let close = |t: Timestamp, secs_ago: i64| {
            let want = Timestamp::now() - jiff::SignedDuration::from_secs(secs_ago);
            (t - want).get_seconds().abs() < 60
        };
        assert!(close(at("now"), 0));
        assert!(close(at("yesterday"), 86_400));
        assert!(close(at("2 days ago"), 2 * 86_400));
        assert!(close(at("1 day ago"), 86_400));
        assert!(close(at("3 Hours ago"), 3 * 3_600));
        assert!(close(at("10 minutes ago"), 600));
        assert!(close(at("1 week ago"), 7 * 86_400));
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
