//! `status`: per source and collection, the sync point and its age, the last run of each
//! command, what the mirror holds, the last audit and how long since every object was last
//! re-hashed, and a hint when something needs a person, as one typed value ([`Status`], whose
//! JSON is `status --json`). `commands::status` prints it; `serve` renders it and answers
//! `/healthz` from it.

use crate::access::{age_of, human_age, Reader};
use crate::error::Error;
use crate::exit::Exit;
use crate::model::finding::Class;
use crate::store::history::Snapshot;
use crate::store::mirror_summary::{self, AuditRecord, CollectionRecord};
use crate::store::StoreError;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

pub struct Options {
    /// A sync point not confirmed for longer than this (seconds) needs a person (a daily cron
    /// job that stopped): `--stale-sync-point`, 7 days unless told.
    pub stale_sync_point: i64,
    /// Objects not all re-hashed for longer than this (seconds) need a person:
    /// `--stale-fixity`, 90 days unless told.
    pub stale_fixity: i64,
}

#[derive(Serialize, Default)]
pub struct Status {
    pub mirror: String,
    pub schema_version: i64,
    pub catalog_bytes: u64,
    /// Objects the catalog references (each stored once), and their bytes.
    pub objects: u64,
    pub object_bytes: u64,
    /// The bucket the objects are in (`s3://BUCKET/PREFIX`); absent: the mirror folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects_in: Option<String>,
    /// Free bytes on the mirror's file system (None: unknown).
    pub free_bytes: Option<u64>,
    pub resources_present: u64,
    pub resources_deleted: u64,
    pub versions: u64,
    pub sources: Vec<Source>,
    /// The last run of each command over the whole mirror (an audit of every source, an
    /// offline audit).
    pub whole_mirror_runs: BTreeMap<String, RunBrief>,
    /// A run without an end: running now (or its process died).
    pub running: Option<RunBrief>,
    pub last_audit: Option<AuditBrief>,
    pub fixity: Fixity,
    pub hints: Vec<Hint>,
}

/// Something about the mirror a person may need to act on: a stable `code` for monitoring,
/// the prose, and whether it needs a person (then `status` exits 1).
#[derive(Serialize)]
pub struct Hint {
    pub code: &'static str,
    pub hint: String,
    pub needs_person: bool,
}

impl Hint {
    fn new(code: &'static str, hint: String) -> Hint {
        Hint {
            code,
            hint,
            needs_person: true,
        }
    }
}

#[derive(Serialize)]
pub struct Source {
    pub url: String,
    pub kind: String,
    pub added_at: String,
    /// No longer followed since then (`rsmirror source remove`): no hints about it.
    pub removed_at: Option<String>,
    /// Its `--include`/`--exclude` rules, kept with it.
    #[serde(skip_serializing_if = "crate::model::Rules::is_empty")]
    pub filter: crate::model::Rules,
    /// The other options it keeps (`--delay`, `--timeout`, `--jobs`, `--allow-host`, `--header`).
    #[serde(skip_serializing_if = "crate::model::Kept::is_empty")]
    pub settings: crate::model::Kept,
    pub collections: Vec<Collection>,
    /// The last run of each command for this source.
    pub last_runs: BTreeMap<String, RunBrief>,
    /// Its push subscriptions (`rsmirror follow`): never the callback path nor the secret.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<SubscriptionBrief>,
}

/// A push subscription as `status` shows it.
#[derive(Serialize)]
pub struct SubscriptionBrief {
    pub hub: String,
    pub topic: String,
    /// subscribing | active | unsubscribing | ended | denied
    pub state: String,
    pub lease_granted_seconds: Option<i64>,
    pub lease_until: Option<String>,
    pub last_notification_at: Option<String>,
    pub last_catch_up_at: Option<String>,
}

#[derive(Serialize, Default)]
pub struct Collection {
    pub name: String,
    pub sync_point: Option<SyncPoint>,
    pub resources_present: u64,
    pub resources_deleted: u64,
    /// Every state its resources have had, tombstones included.
    pub versions: u64,
}

#[derive(Serialize)]
pub struct SyncPoint {
    pub at: Option<String>,
    pub anchored: bool,
    pub basis: String,
    /// The run that set its time (a later run that found it the same does not change it).
    pub run: i64,
    /// When a run last recorded it, setting or confirming it (the run's commit time).
    pub updated_at: String,
    /// Seconds since `updated_at`.
    pub age_seconds: Option<i64>,
}

#[derive(Serialize, Clone)]
pub struct RunBrief {
    pub run: i64,
    pub command: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub outcome: Option<String>,
    pub exit_code: Option<i64>,
}

#[derive(Serialize, Clone)]
pub struct AuditBrief {
    #[serde(flatten)]
    pub run: RunBrief,
    pub level: String,
    pub sample: Option<String>,
    pub all_versions: bool,
    pub offline: bool,
    pub findings: Value,
}

#[derive(Serialize, Default)]
pub struct Fixity {
    /// Since when every current object has been re-hashed by an audit (one full audit, or
    /// every slice of `--sample N/M`); None: never.
    pub current_objects_rehashed_since: Option<String>,
    /// The same for every stored object (audits with `--all-versions`).
    pub all_objects_rehashed_since: Option<String>,
}

impl From<mirror_summary::RunBrief> for RunBrief {
    fn from(r: mirror_summary::RunBrief) -> RunBrief {
        RunBrief {
            run: r.id,
            command: r.command,
            started_at: r.started_at,
            ended_at: r.ended_at,
            outcome: r.outcome,
            exit_code: r.exit_code,
        }
    }
}

/// `status`: the mirror described ([`Status::needs_person`]: a last run that did not
/// succeed, an audit that found differences, a sync point or fixity gone stale).
pub(crate) fn summary(mirror: &Path, o: &Options) -> Result<Status, Error> {
    let reader = Reader::open(mirror)?;
    let catalog = reader.catalog();
    // One read transaction: every figure below comes from the same snapshot.
    let snapshot = Snapshot::begin(catalog)?;
    let mut st = Status {
        mirror: mirror.display().to_string(),
        ..Status::default()
    };
    st.schema_version = mirror_summary::schema_version(catalog)?;
    st.catalog_bytes = ["catalog.sqlite", "catalog.sqlite-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(mirror.join(f)).ok())
        .map(|m| m.len())
        .sum();
    st.free_bytes = free_bytes(mirror);
    st.objects_in =
        crate::store::mirror_settings::objects_location(catalog)?.map(|u| u.to_string());
    (st.objects, st.object_bytes, st.versions) = mirror_summary::object_totals(catalog)?;
    (st.sources, st.whole_mirror_runs) = sources(&reader, st.versions)?;
    for c in st.sources.iter().flat_map(|s| &s.collections) {
        st.resources_present += c.resources_present;
        st.resources_deleted += c.resources_deleted;
    }
    st.running = mirror_summary::unfinished_run(catalog)
        .ok()
        .flatten()
        .map(RunBrief::from);
    let audits = audits(&reader)?;
    st.last_audit = audits.first().map(|(a, _)| a.clone());
    let multiple = st.sources.len() > 1;
    st.fixity = Fixity {
        current_objects_rehashed_since: rehashed_since(&audits, false, multiple),
        all_objects_rehashed_since: rehashed_since(&audits, true, multiple),
    };
    st.hints = hints(&st, o);
    snapshot.end()?;
    Ok(st)
}

impl Status {
    /// How many hints need a person: `status` exits 1 when any does, for a monitoring system
    /// to act on (`serve`'s `/healthz` answers 503).
    pub fn needs_person(&self) -> usize {
        self.hints.iter().filter(|h| h.needs_person).count()
    }

    /// The exit code `status` ends with.
    pub fn exit(&self) -> Exit {
        match self.needs_person() {
            0 => Exit::Ok,
            _ => Exit::Differences,
        }
    }
}

/// A collection as `status` shows it, with what it holds.
fn collection(
    c: CollectionRecord,
    counts: &std::collections::HashMap<i64, mirror_summary::CollectionCounts>,
) -> Collection {
    let held = c.id.and_then(|id| counts.get(&id)).copied();
    Collection {
        name: c.name,
        sync_point: c.sync_point.map(|p| SyncPoint {
            at: p.at,
            anchored: p.anchored,
            basis: p.basis,
            run: p.run,
            age_seconds: age_of(&p.updated_at),
            updated_at: p.updated_at,
        }),
        resources_present: held.map_or(0, |h| h.present),
        resources_deleted: held.map_or(0, |h| h.deleted),
        versions: held.map_or(0, |h| h.versions),
    }
}

/// Every source with its collections (those with a sync point, and those holding resources)
/// and the last run of each command.
/// (the sources, the last runs over the whole mirror).
#[allow(clippy::type_complexity)]
fn sources(
    reader: &Reader,
    all_versions: u64,
) -> Result<(Vec<Source>, BTreeMap<String, RunBrief>), StoreError> {
    let catalog = reader.catalog();
    let counts = mirror_summary::collection_counts(catalog, all_versions)?;
    let mut by_source: BTreeMap<Option<i64>, Vec<Collection>> = BTreeMap::new();
    for c in mirror_summary::collections(catalog)? {
        let source = c.source_id;
        by_source
            .entry(source)
            .or_default()
            .push(collection(c, &counts));
    }
    let mut last: HashMap<Option<i64>, BTreeMap<String, RunBrief>> = HashMap::new();
    for (run, source) in mirror_summary::last_runs(catalog)? {
        last.entry(source)
            .or_default()
            .insert(run.command.clone(), run.into());
    }
    let mut subscribed: BTreeMap<String, Vec<SubscriptionBrief>> = BTreeMap::new();
    for b in crate::store::subscriptions::all(catalog)? {
        subscribed
            .entry(b.source)
            .or_default()
            .push(SubscriptionBrief {
                hub: b.hub,
                topic: b.topic,
                state: b.state,
                lease_granted_seconds: b.lease_granted_seconds,
                lease_until: b.lease_until,
                last_notification_at: b.last_notification_at,
                last_catch_up_at: b.last_catch_up_at,
            });
    }
    let mut out = Vec::new();
    for r in mirror_summary::sources(catalog)? {
        out.push(Source {
            subscriptions: subscribed.remove(&r.url).unwrap_or_default(),
            url: r.url,
            kind: r.kind,
            added_at: r.added_at,
            removed_at: r.removed_at,
            filter: r.kept.filter.clone(),
            settings: crate::model::Kept {
                filter: Default::default(),
                ..r.kept
            },
            collections: by_source.remove(&Some(r.id)).unwrap_or_default(),
            last_runs: last.remove(&Some(r.id)).unwrap_or_default(),
        });
    }
    // Collections of no known source (none in a mirror made by rsmirror; kept visible).
    let orphans = by_source.into_values().flatten().collect::<Vec<_>>();
    if !orphans.is_empty() {
        out.push(Source {
            url: "(no source)".into(),
            kind: String::new(),
            added_at: String::new(),
            removed_at: None,
            subscriptions: Vec::new(),
            filter: Default::default(),
            settings: Default::default(),
            collections: orphans,
            last_runs: BTreeMap::new(),
        });
    }
    Ok((out, last.remove(&None).unwrap_or_default()))
}

/// What an audit covered, read from its counts (older mirrors: from its command line).
struct Coverage {
    hashes: bool,
    sample: Option<(u64, u64)>,
    all_versions: bool,
    every_source: bool,
}

fn coverage(counts: &Value, arguments: &str) -> (String, Coverage) {
    let args: Vec<&str> = arguments.split_whitespace().collect();
    let flag = |name: &str| -> Option<String> {
        args.iter().enumerate().find_map(|(i, a)| {
            if let Some(v) = a.strip_prefix(&format!("{name}=")) {
                Some(v.to_string())
            } else if *a == name {
                args.get(i + 1).map(|v| v.to_string())
            } else {
                None
            }
        })
    };
    let level = counts["level"]
        .as_str()
        .map(str::to_string)
        .or_else(|| flag("--level"))
        .unwrap_or_else(|| "fixity".into());
    let sample = counts["sample"]
        .as_str()
        .map(str::to_string)
        .or_else(|| flag("--sample"))
        .and_then(|s| {
            let (n, m) = s.split_once('/')?;
            Some((n.parse().ok()?, m.parse().ok()?))
        });
    let all_versions = counts["all_versions"]
        .as_bool()
        .unwrap_or_else(|| args.contains(&"--all-versions"));
    // Older runs did not record it: an audit given a SOURCE covered that source.
    let every_source = counts["every_source"].as_bool().unwrap_or(true);
    let hashes = matches!(level.as_str(), "sha256" | "fixity");
    (
        level,
        Coverage {
            hashes,
            sample,
            all_versions,
            every_source,
        },
    )
}

fn audits(reader: &Reader) -> Result<Vec<(AuditBrief, Coverage)>, StoreError> {
    let mut out = Vec::new();
    for AuditRecord {
        run,
        arguments,
        counts_json,
    } in mirror_summary::finished_audits(reader.catalog())?
    {
        let counts: Value = counts_json
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or(Value::Null);
        let (level, cov) = coverage(&counts, &arguments);
        out.push((
            AuditBrief {
                run: run.into(),
                level,
                sample: cov.sample.map(|(n, m)| format!("{n}/{m}")),
                all_versions: cov.all_versions,
                offline: counts["offline"]
                    .as_bool()
                    .unwrap_or_else(|| arguments.contains("--offline")),
                findings: counts["findings"].clone(),
            },
            cov,
        ));
    }
    Ok(out)
}

/// An audit that re-hashed every current object (or, with `all_versions`, every stored one) of
/// every source and found them all good: what an export that links objects instead of copying
/// them may take as their check ([`last_clean_fixity`]).
#[derive(Debug, Clone)]
pub struct Vouch {
    pub run: i64,
    pub started_at: std::time::SystemTime,
    pub all_versions: bool,
}

/// The last such audit (level sha256 or fixity, no `--sample`, every source, outcome ok). None
/// when there is none, or when an audit newer than it found damaged, missing or unreadable
/// objects or a damaged catalog.
pub(crate) fn last_clean_fixity(reader: &Reader) -> Result<Option<Vouch>, StoreError> {
    for (a, cov) in audits(reader)? {
        let damage: u64 = [
            Class::Corrupt,
            Class::MissingObject,
            Class::Unreadable,
            Class::Catalog,
        ]
        .iter()
        .map(|c| a.findings[c.name()].as_u64().unwrap_or(0))
        .sum();
        if damage > 0 {
            return Ok(None);
        }
        if a.run.outcome.as_deref() != Some("ok")
            || !cov.hashes
            || cov.sample.is_some()
            || !cov.every_source
        {
            continue;
        }
        let Ok(started) = a.run.started_at.parse::<jiff::Timestamp>() else {
            continue;
        };
        return Ok(Some(Vouch {
            run: a.run.run,
            started_at: started.into(),
            all_versions: cov.all_versions,
        }));
    }
    Ok(None)
}

/// The latest time since which every object (every current one, or with `all_versions` every
/// stored one) has been re-hashed by audits that finished: a full audit, or the newest runs of
/// every slice of one `--sample N/M`.
fn rehashed_since(
    audits: &[(AuditBrief, Coverage)],
    all_versions: bool,
    several_sources: bool,
) -> Option<String> {
    let mut slices: HashMap<u64, HashSet<u64>> = HashMap::new();
    for (a, cov) in audits {
        let finished = a.run.outcome.as_deref() == Some("ok");
        if !finished
            || !cov.hashes
            || (all_versions && !cov.all_versions)
            || (several_sources && !cov.every_source)
        {
            continue;
        }
        match cov.sample {
            None => return Some(a.run.started_at.clone()),
            Some((n, m)) => {
                let seen = slices.entry(m).or_default();
                seen.insert(n);
                if seen.len() as u64 == m {
                    return Some(a.run.started_at.clone());
                }
            }
        }
    }
    None
}

fn hints(st: &Status, o: &Options) -> Vec<Hint> {
    let mut out = Vec::new();
    let whole = ("the whole mirror".to_string(), &st.whole_mirror_runs, true);
    // A source no longer followed needs no one.
    let followed = || st.sources.iter().filter(|s| s.removed_at.is_none());
    let runs = followed()
        .map(|s| (s.url.clone(), &s.last_runs, false))
        .chain(std::iter::once(whole));
    // A whole-mirror run refused before it began (a bucket's refusal is recorded without a
    // source) is settled by a later run of the same command that ended well, of any source.
    let settled_later = |run: &RunBrief| {
        followed().any(|s| {
            s.last_runs.values().any(|r| {
                r.command == run.command
                    && r.run > run.run
                    && r.outcome.as_deref() == Some("ok")
                    && r.exit_code == Some(0)
            })
        })
    };
    for (of, last_runs, whole_mirror) in runs {
        for run in last_runs.values() {
            if whole_mirror && settled_later(run) {
                continue;
            }
            let ok = run.outcome.as_deref() == Some("ok") && run.exit_code == Some(0);
            let audit_differences = run.command == "audit" && run.exit_code == Some(1);
            if run.ended_at.is_some() && !ok && !audit_differences {
                let code = match run.exit_code {
                    Some(3) => "run-partial",
                    _ => "run-failed",
                };
                out.push(Hint::new(
                    code,
                    format!(
                        "the last {} of {of} ended {} (exit {}): rsmirror log --run {}",
                        run.command,
                        run.outcome.as_deref().unwrap_or("?"),
                        run.exit_code.map(|c| c.to_string()).unwrap_or("-".into()),
                        run.run
                    ),
                ));
            }
        }
    }
    for s in followed() {
        for c in &s.collections {
            if let Some(p) = &c.sync_point {
                if p.age_seconds.unwrap_or(0) > o.stale_sync_point {
                    out.push(Hint::new("sync-point-stale", format!(
                        "the sync point of {} was last confirmed {} ago (set by run {}): is the incremental cron job running?",
                        c.name,
                        human_age(p.age_seconds.unwrap_or(0)),
                        p.run
                    )));
                }
            }
        }
    }
    if let Some(a) = &st.last_audit {
        if a.run.exit_code == Some(1) {
            out.push(Hint::new(
                "audit-differences",
                format!(
                    "the last audit (run {}) found differences: rsmirror log --run {}",
                    a.run.run, a.run.run
                ),
            ));
        }
    }
    if st.resources_present + st.resources_deleted > 0 {
        match &st.fixity.current_objects_rehashed_since {
            // Advice on a young mirror; on one older than the fixity interval, as stale as
            // one whose last re-hash is that old.
            None => out.push(Hint {
                code: "fixity-never",
                hint: "the objects have never all been re-hashed: rsmirror audit --offline (or --sample N/M nightly)"
                    .into(),
                needs_person: st
                    .sources
                    .iter()
                    .filter_map(|s| age_of(&s.added_at))
                    .max()
                    .is_some_and(|age| age > o.stale_fixity),
            }),
            Some(t) if age_of(t).unwrap_or(0) > o.stale_fixity => out.push(Hint::new(
                "fixity-stale",
                format!(
                    "the objects were last all re-hashed {} ago: rsmirror audit --offline",
                    human_age(age_of(t).unwrap_or(0))
                ),
            )),
            Some(_) => {}
        }
    }
    out
}

/// Every source the mirror knows, followed or not (`rsmirror source list`).
pub(crate) fn sources_of(mirror: &Path) -> Result<Vec<Source>, Error> {
    let reader = Reader::open(mirror)?;
    let snapshot = Snapshot::begin(reader.catalog())?;
    let versions = mirror_summary::object_totals(reader.catalog())?.2;
    let (sources, _) = sources(&reader, versions)?;
    snapshot.end()?;
    Ok(sources)
}

/// Free bytes on the file system that holds the mirror.
fn free_bytes(mirror: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(mirror.as_os_str().as_bytes()).ok()?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a zeroed struct the call fills.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut s) };
    (rc == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit(id: i64, outcome: &str, counts: Value, arguments: &str) -> (AuditBrief, Coverage) {
        let (level, cov) = coverage(&counts, arguments);
        (
            AuditBrief {
                run: RunBrief {
                    run: id,
                    command: "audit".into(),
                    started_at: format!("2026-01-{id:02}T00:00:00Z"),
                    ended_at: Some(format!("2026-01-{id:02}T01:00:00Z")),
                    outcome: Some(outcome.into()),
                    exit_code: Some(0),
                },
                level,
                sample: None,
                all_versions: cov.all_versions,
                offline: false,
                findings: Value::Null,
            },
            cov,
        )
    }

    #[test]
    fn every_slice_of_a_sample_covers_the_objects_from_the_oldest_slice_needed() {
        let j = |level: &str, sample: Option<&str>| serde_json::json!({"level": level, "sample": sample, "all_versions": false});
        // Newest first: slices 2, 1, (a failed 3), presence only, 3, 2.
        let audits: Vec<_> = vec![
            audit(9, "ok", j("fixity", Some("2/3")), ""),
            audit(8, "ok", j("sha256", Some("1/3")), ""),
            audit(7, "failed", j("fixity", Some("3/3")), ""),
            audit(6, "ok", j("presence", None), ""),
            audit(5, "ok", j("fixity", Some("3/3")), ""),
            audit(4, "ok", j("fixity", Some("2/3")), ""),
        ];
        assert_eq!(
            rehashed_since(&audits, false, false).as_deref(),
            Some("2026-01-05T00:00:00Z")
        );
        assert_eq!(rehashed_since(&audits, true, false), None);
        // An older run without recorded coverage: read from its command line.
        let old = vec![audit(
            3,
            "ok",
            Value::Null,
            "rsmirror audit --all-versions --offline",
        )];
        assert_eq!(
            rehashed_since(&old, true, false).as_deref(),
            Some("2026-01-03T00:00:00Z")
        );
        let presence = vec![audit(
            2,
            "ok",
            Value::Null,
            "rsmirror audit --level=presence",
        )];
        assert_eq!(rehashed_since(&presence, false, false), None);
    }
}
