//! `rsmirror repair`: get back the bytes of every object found corrupt, missing or unreadable,
//! and prove them. The damage comes from a local check of every object every version names
//! (SHA-256 and length, as `audit --offline --level sha256 --all-versions`), or with
//! `--from-audit` from the last audit's findings (each checked again first).
//!
//! For each damaged object, the bytes are taken from `--from-mirror DIR` (another rsmirror
//! mirror: a second copy, a restored backup) by digest, else fetched again from the URLs of the
//! versions that name it; either way they are accepted only if they hash to the SHA-256 the
//! catalog recorded (what the source declares now proves nothing). The damaged file is moved to
//! `MIRROR/quarantine/RUN/` with a JSON record of what was found, never deleted; stray files in
//! `objects/` go there too. Every object restored, quarantined or left damaged is a problem
//! row of the repair run (`rsmirror log --run ID` shows them). Exit 0 when nothing damaged is
//! left, 1 when something could not be repaired (each named), 5 when the mirror cannot take the
//! bytes (a full disk, under `--min-free`, a read-only folder): the run stops at that object,
//! each damaged file still in place or in quarantine with its object restored.

use crate::access::{Got, VersionRow};
use crate::audit::finding::Class;
use crate::audit::fixity;
use crate::engine::context::OpenMirror;
use crate::error::Error;
use crate::exit::Exit;
use crate::model::ProblemClass;
use crate::net::fetch::Expected;
use crate::net::one::fetch_new_object;
use crate::net::{Http, Scope};
use crate::rs::digest::{Algorithm, Digest};
use crate::settings::AuditLevel;
use crate::settings::SourceSettings;
use crate::store::new_file::NewFile;
use crate::store::objects::{is_sha256_hex, Aside, ObjectStore};
use crate::store::{audit_records, run_records, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct Options {
    pub mirror: PathBuf,
    pub from_mirror: Option<PathBuf>,
    pub from_audit: bool,
    /// No request to the source (only `--from-mirror`).
    pub offline: bool,
    pub dry_run: bool,
    pub jobs: usize,
    pub quiet: bool,
    /// How requests go out (timeouts, headers, `--map`).
    pub source: SourceSettings,
}

/// What the check found wrong with an object.
#[derive(Debug, Clone)]
struct Damage {
    sha256: String,
    /// Corrupt, MissingObject, Unreadable (StrayObject: a stray file, no object)
    class: Class,
    /// What the bytes on disk gave, when read.
    actual: Option<String>,
}

/// What repair did, for the summary and `--json`.
#[derive(Debug, Default, serde::Serialize)]
pub struct Summary {
    pub damaged: u64,
    pub restored_from_mirror: u64,
    pub restored_from_source: u64,
    pub quarantined: u64,
    pub strays: u64,
    pub unrepaired: Vec<String>,
    pub dry_run: bool,
}

impl Summary {
    pub(crate) fn line(&self) -> String {
        let mut s = format!(
            "repair: {} damaged object{}",
            self.damaged,
            if self.damaged == 1 { "" } else { "s" }
        );
        if self.dry_run {
            s.push_str(&format!(
                ", {} stray file{} (a dry run: nothing fetched or moved)",
                self.strays,
                if self.strays == 1 { "" } else { "s" }
            ));
            return s;
        }
        s.push_str(&format!(
            ": {} restored from the source, {} from the other mirror, {} not; {} stray file{} \
             quarantined",
            self.restored_from_source,
            self.restored_from_mirror,
            self.unrepaired.len(),
            self.strays,
            if self.strays == 1 { "" } else { "s" }
        ));
        s
    }
}

/// A problem row of the repair run: (URI, class, what happened).
type Problem = (String, ProblemClass, String);

pub(crate) fn run(o: &Options, arguments: &str) -> Result<(Summary, Exit), Error> {
    let other = match &o.from_mirror {
        Some(other) => {
            check_other_mirror(&o.mirror, other)?;
            Some(other_store(other)?)
        }
        None => None,
    };
    let open = OpenMirror::open(&o.mirror, ("repair", (!o.dry_run).then_some(arguments)))?;
    // Recorded from the start, the scan included: a repair stopped in its scan (a signal, a
    // failure) is a run of the mirror's history like any other. A dry run records none.
    let run_id = match o.dry_run {
        false => Some(open.catalog.begin_run("repair", None, arguments)?),
        true => None,
    };
    let result = repair(o, &open, other.as_ref(), run_id);
    if let (Some(run_id), Err(e)) = (run_id, &result) {
        let _ = open
            .catalog
            .end_run(run_id, "failed", e.exit().code(), "{}");
    }
    result
}

/// The repair proper: the scan, then each damaged object and stray (`run_id`: the run
/// recorded, none for a dry run).
fn repair(
    o: &Options,
    open: &OpenMirror,
    other: Option<&ObjectStore>,
    run_id: Option<i64>,
) -> Result<(Summary, Exit), Error> {
    let (damage, strays) = if o.from_audit {
        from_audit(open)?
    } else {
        check(o)?
    };
    let mut summary = Summary {
        damaged: damage.len() as u64,
        strays: strays.len() as u64,
        dry_run: o.dry_run,
        ..Summary::default()
    };
    let Some(run_id) = run_id else {
        show_plan(open, &damage, &strays)?;
        // Damage found is damage found, dry run or not (as audit says it: exit 1).
        let exit = match damage.is_empty() && strays.is_empty() {
            true => Exit::Ok,
            false => Exit::Differences,
        };
        return Ok((summary, exit));
    };
    // Under the free-space margin nothing is repaired (as baseline's fetches nothing).
    let min_free = o.source.http.min_free;
    room(&o.mirror, &open.staging, min_free, damage.len())?;
    let http = (!o.offline).then(|| Http::new(o.source.http.clone()));
    let mut problems: Vec<Problem> = Vec::new();
    for (done, d) in damage.iter().enumerate() {
        let left = damage.len() - done;
        room(&o.mirror, &open.staging, min_free, left)?;
        let repair = Repair {
            o,
            open,
            other,
            http: http.as_ref(),
            run_id,
            left,
        };
        problems.push(repair.object(d, &mut summary)?);
    }
    summary.strays = quarantine_strays((o, &open.objects), &strays, run_id, &mut problems)?;
    open.objects
        .sync()
        .map_err(|e| StoreError::io("syncing", open.objects.root(), e))?;
    let exit = if summary.unrepaired.is_empty() {
        Exit::Ok
    } else {
        Exit::Differences
    };
    run_records::record_problems(&open.catalog, run_id, &problems)?;
    let counts = serde_json::json!({
        "damaged": summary.damaged,
        "restored": summary.restored_from_source + summary.restored_from_mirror,
        "quarantined": summary.quarantined + summary.strays,
        "unrepaired": summary.unrepaired.len(),
    });
    open.catalog.end_run(
        run_id,
        if exit == Exit::Ok { "ok" } else { "partial" },
        exit.code(),
        &counts.to_string(),
    )?;
    Ok((summary, exit))
}

/// `--from-mirror DIR` names another mirror: a folder with a catalog and objects, not this
/// mirror itself (which has no good copy of its own damage).
fn check_other_mirror(mirror: &Path, other: &Path) -> Result<(), Error> {
    let usage = |m: String| Error::Usage(crate::error::UsageError(m));
    // A mirror whose objects are in a bucket has a catalog and no objects/ folder.
    if !other.join("objects").is_dir() && !other.join("catalog.sqlite").is_file() {
        return Err(usage(format!(
            "--from-mirror {}: not a mirror (no objects/ folder or catalog there{})",
            other.display(),
            match other.exists() {
                true => "",
                false => "; the folder does not exist",
            }
        )));
    }
    let same = match (std::fs::canonicalize(mirror), std::fs::canonicalize(other)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(usage(format!(
            "--from-mirror {}: that is the mirror being repaired; name another copy of it",
            other.display()
        )));
    }
    Ok(())
}

/// `--dry-run`: what would be repaired and quarantined, one line each.
fn show_plan(open: &OpenMirror, damage: &[Damage], strays: &[String]) -> Result<(), Error> {
    for d in damage {
        let uris = audit_records::versions_naming(&open.catalog, &d.sha256)?;
        plan!(
            "! {} {} ({})",
            d.class,
            ObjectStore::relative_path(&d.sha256),
            uris.iter()
                .map(|(u, _)| u.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for s in strays {
        plan!("! stray-object {s}");
    }
    Ok(())
}

/// One damaged object's repair, within a run.
struct Repair<'a> {
    o: &'a Options,
    open: &'a OpenMirror,
    /// `--from-mirror`'s object store (its folder, or the bucket its catalog names).
    other: Option<&'a ObjectStore>,
    http: Option<&'a Http>,
    run_id: i64,
    /// The damaged objects left, this one included (for the message of a run that stops).
    left: usize,
}

impl Repair<'_> {
    /// Get the object's bytes back and put them in place, the damaged file (if any) moved to
    /// quarantine; the problem row that says what happened.
    fn object(&self, d: &Damage, summary: &mut Summary) -> Result<Problem, Error> {
        let (open, run_id) = (self.open, self.run_id);
        let uris = audit_records::versions_naming(&open.catalog, &d.sha256)?;
        let name = ObjectStore::relative_path(&d.sha256);
        let first_uri = uris.first().map(|(u, _)| u.clone()).unwrap_or_default();
        let (file, how) = match self.bytes(d, &uris)? {
            Ok(got) => got,
            Err(why) => {
                let reason = format!("{name} is {}; not repaired: {why}", what(d.class));
                summary
                    .unrepaired
                    .push(format!("{name} ({first_uri}): {why}"));
                return Ok((first_uri, ProblemClass::Unrepaired, reason));
            }
        };
        let damaged_file = self.place(d, file)?;
        if damaged_file {
            summary.quarantined += 1;
        }
        if how.starts_with("from the mirror") {
            summary.restored_from_mirror += 1;
        } else {
            summary.restored_from_source += 1;
        }
        Ok((
            first_uri,
            ProblemClass::Repaired,
            format!(
                "{name} was {} ({}); restored {how}, its bytes proven by the SHA-256 the catalog records{}",
                what(d.class),
                d.actual.as_deref().unwrap_or("no bytes"),
                match damaged_file {
                    true => format!("; {}", open.objects.quarantined_in(run_id)),
                    false => String::new(),
                }
            ),
        ))
    }

    /// Put the proven bytes in place, the damaged object (if any) moved to quarantine first;
    /// should they not go in, the damaged object goes back: nothing is left half done.
    /// Whether there was a damaged object.
    fn place(&self, d: &Damage, file: NewFile) -> Result<bool, Error> {
        let objects = &self.open.objects;
        let stop = |e: StoreError| stopped(&self.o.mirror, e, self.left);
        let aside = aside(d, self.run_id);
        let kept = objects.quarantine_object(&d.sha256, &aside).map_err(stop)?;
        if kept.is_some() {
            crate::store::kill::point("repair.quarantined");
        }
        if let Err(e) = objects.ingest_new(file, &d.sha256) {
            if let Some(kept) = &kept {
                objects.unquarantine(kept, &d.sha256);
            }
            return Err(stop(objects.fault("writing the object", &d.sha256, e)));
        }
        crate::store::kill::point("repair.object-restored");
        Ok(kept.is_some())
    }

    /// The object's bytes, proven, from `--from-mirror` else from the URLs of the versions that
    /// name it, with where they came from; `Ok(Err(why))` when no copy gave them.
    #[allow(clippy::type_complexity)]
    fn bytes(
        &self,
        d: &Damage,
        uris: &[(String, VersionRow)],
    ) -> Result<Result<(NewFile, String), String>, Error> {
        let (o, staging) = (self.o, &self.open.staging);
        let length = uris.first().and_then(|(_, v)| v.length).unwrap_or(0).max(0) as u64;
        let mut tried = Vec::new();
        if let (Some(other), Some(other_objects)) = (&o.from_mirror, self.other) {
            match from_other_mirror(other_objects, staging, &d.sha256, length) {
                Ok(f) => return Ok(Ok((f, format!("from the mirror at {}", other.display())))),
                Err(Refused::Store(e)) => return Err(stopped(&o.mirror, e, self.left)),
                Err(Refused::Not(why)) => tried.push(format!("{}: {why}", other.display())),
            }
        }
        if let Some(http) = self.http {
            for (uri, _) in uris {
                match from_source(http, &o.source, staging, uri, &d.sha256, length) {
                    Ok(f) => return Ok(Ok((f, format!("from the source ({uri})")))),
                    Err(Refused::Store(e)) => return Err(stopped(&o.mirror, e, self.left)),
                    Err(Refused::Not(why)) => tried.push(format!("{uri}: {why}")),
                }
            }
        }
        Ok(Err(if tried.is_empty() {
            "no copy to take it from (give --from-mirror DIR, or leave out --offline)".into()
        } else {
            tried.join("; ")
        }))
    }
}

/// Move the stray files (and folders where no folder belongs, with what they hold) to
/// quarantine, a problem row each; how many moved.
fn quarantine_strays(
    (o, objects): (&Options, &ObjectStore),
    strays: &[String],
    run_id: i64,
    problems: &mut Vec<Problem>,
) -> Result<u64, Error> {
    let mut moved = 0;
    let d = Damage {
        sha256: String::new(),
        class: Class::StrayObject,
        actual: None,
    };
    for s in strays {
        let Some(m) = objects
            .quarantine_stray(s, &aside(&d, run_id))
            .map_err(|e| stopped(&o.mirror, e, 0))?
        else {
            continue;
        };
        problems.push((
            s.clone(),
            ProblemClass::Quarantined,
            format!("{s}: {}; moved to {}", m.what, m.to),
        ));
        moved += 1;
    }
    Ok(moved)
}

/// What a damaged object (or stray) is moved aside with.
fn aside(d: &Damage, run: i64) -> Aside<'_> {
    Aside {
        run,
        found: d.class.name(),
        expected_sha256: (!d.sha256.is_empty()).then_some(d.sha256.as_str()),
        actual: d.actual.as_deref(),
    }
}

/// The local check: every object every version names, hashed (SHA-256) and measured.
fn check(o: &Options) -> Result<(Vec<Damage>, Vec<String>), Error> {
    let found = fixity::check(
        &o.mirror,
        fixity::Options {
            level: AuditLevel::Sha256,
            all_versions: true,
            sample: None,
            jobs: o.jobs,
            quiet: o.quiet,
        },
    )?;
    let mut damage: BTreeMap<String, Damage> = BTreeMap::new();
    let mut strays = Vec::new();
    for f in found.by_uri.iter().chain(found.other.iter()) {
        let class = match f.class {
            Class::Corrupt | Class::MissingObject | Class::Unreadable => f.class,
            Class::StrayObject => {
                if let Some(p) = &f.object {
                    strays.push(p.clone());
                }
                continue;
            }
            _ => continue,
        };
        if let Some(sha) = f.object.as_deref().filter(|s| is_sha256_hex(s)) {
            damage.entry(sha.to_string()).or_insert(Damage {
                sha256: sha.to_string(),
                class,
                actual: f.actual.clone(),
            });
        }
    }
    Ok((damage.into_values().collect(), strays))
}

/// The last audit's findings, each object checked again (what is good now is left alone).
fn from_audit(open: &OpenMirror) -> Result<(Vec<Damage>, Vec<String>), Error> {
    let Some(run) = audit_records::last_finished_audit(&open.catalog)? else {
        return Err(crate::error::UsageError(
            "repair --from-audit: the mirror has no audit yet (run rsmirror audit, or repair without --from-audit)".into(),
        )
        .into());
    };
    let rows = audit_records::damaged_objects(&open.catalog, run)?;
    let mut damage: BTreeMap<String, Damage> = BTreeMap::new();
    let mut strays = Vec::new();
    for (class, object) in rows {
        if class == Class::StrayObject {
            strays.push(object);
            continue;
        }
        if !is_sha256_hex(&object) || damage.contains_key(&object) {
            continue;
        }
        let now = hash_object(&open.objects, &object);
        let class = match &now {
            Ok(got) if got.sha256 == object => continue,
            Ok(_) => Class::Corrupt,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Class::MissingObject,
            Err(_) => Class::Unreadable,
        };
        damage.insert(
            object.clone(),
            Damage {
                sha256: object,
                class,
                actual: now
                    .ok()
                    .map(|g| format!("{} bytes, sha-256 {}", g.length, g.sha256)),
            },
        );
    }
    Ok((damage.into_values().collect(), strays))
}

/// A damage class as a sentence says it.
fn what(class: Class) -> &'static str {
    match class {
        Class::MissingObject => "missing",
        Class::Unreadable => "unreadable",
        _ => "corrupt",
    }
}

/// The object's length and SHA-256 as the store holds it now.
fn hash_object(objects: &ObjectStore, sha256: &str) -> std::io::Result<Got> {
    use sha2::Digest as _;
    let (mut hasher, mut length) = (sha2::Sha256::new(), 0u64);
    let found = objects.read_object(sha256, &mut |data| {
        hasher.update(data);
        length += data.len() as u64;
        Ok(())
    })?;
    match found {
        true => Ok(Got {
            sha256: hex::encode(hasher.finalize()),
            length,
        }),
        false => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such object",
        )),
    }
}

/// The object store of the mirror `other` (`--from-mirror`): where its catalog says, else its
/// folder's `objects/`.
fn other_store(other: &Path) -> Result<ObjectStore, Error> {
    // A folder of objects is read as it is, whatever its catalog's version.
    if other.join("objects").is_dir() {
        return Ok(ObjectStore::at(other));
    }
    match crate::store::Catalog::open_read_only(other)? {
        Some(catalog) => Ok(crate::store::mirror_settings::object_store(
            other, &catalog, false,
        )?),
        None => Ok(ObjectStore::at(other)),
    }
}

/// The object from another mirror, copied into a new file and proven by its digest.
fn from_other_mirror(
    other: &ObjectStore,
    staging: &Path,
    sha256: &str,
    length: u64,
) -> Result<NewFile, Refused> {
    let staging_fault = |e: std::io::Error| Refused::Store(StoreError::io("writing", staging, e));
    std::fs::create_dir_all(staging).map_err(staging_fault)?;
    let mut out = NewFile::create(staging).map_err(staging_fault)?;
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    let mut n_total = 0u64;
    // A write into staging that fails stops the run; a copy that cannot be read is tried no more.
    let mut write_failed = None;
    let found = other.read_object(sha256, &mut |data| {
        h.update(data);
        n_total += data.len() as u64;
        out.write_all(data).map_err(|e| {
            let kept = std::io::Error::new(e.kind(), e.to_string());
            write_failed = Some(e);
            kept
        })
    });
    if let Some(e) = write_failed {
        return Err(staging_fault(e));
    }
    match found {
        Ok(true) => {}
        Ok(false) => {
            return Err(Refused::Not(format!(
                "{}: no such object",
                other.describe(sha256)
            )))
        }
        Err(e) => return Err(Refused::Not(format!("{}: {e}", other.describe(sha256)))),
    }
    let got = hex::encode(h.finalize());
    if got != sha256 || n_total != length {
        return Err(Refused::Not(format!(
            "its copy is damaged too ({n_total} bytes, sha-256 {got})"
        )));
    }
    Ok(out)
}

/// The bytes fetched again from the source, accepted only with the recorded SHA-256.
fn from_source(
    http: &Http,
    source: &SourceSettings,
    staging: &Path,
    uri: &str,
    sha256: &str,
    length: u64,
) -> Result<NewFile, Refused> {
    let url = url::Url::parse(uri).map_err(|e| e.to_string())?;
    let scope = Scope::for_document(&url, &source.allow_hosts);
    std::fs::create_dir_all(staging)
        .map_err(|e| Refused::Store(StoreError::io("creating", staging, e)))?;
    let expected = Expected {
        length: Some(length),
        digests: vec![Digest::new(Algorithm::Sha256, sha256)],
        media_type: None,
    };
    match fetch_new_object(http, &url, &scope, staging, &expected) {
        Ok(staged) => Ok(staged.file),
        Err(crate::net::FetchError::Staging(e)) => {
            Err(Refused::Store(StoreError::io("writing", staging, e)))
        }
        Err(e) => Err(Refused::Not(format!(
            "the source no longer serves these bytes ({e})"
        ))),
    }
}

/// Why an object was not taken from a copy: that copy could not give it (try the next), or
/// the mirror could not store it (a full disk, a read-only folder: stop the run).
enum Refused {
    Not(String),
    Store(StoreError),
}

impl From<String> for Refused {
    fn from(why: String) -> Refused {
        Refused::Not(why)
    }
}

/// A store fault that stops the run, a full disk told as one (naming the mirror and how many
/// damaged objects were left; a bucket's fault says how many too, when any were).
fn stopped(mirror: &Path, e: StoreError, left: usize) -> Error {
    match e {
        StoreError::Io { source, .. } if crate::net::is_no_space(&source) => StoreError::NoSpace {
            path: mirror.display().to_string(),
            message: source.to_string(),
            needed: format!(", with {left} damaged objects left to repair"),
        }
        .into(),
        // objects/ read-only, or a mount of its own that a damaged file cannot leave by a
        // rename: one message naming the file, nothing moved.
        StoreError::Io { what, path, source }
            if crate::net::is_unwritable(&source)
                || source.kind() == std::io::ErrorKind::CrossesDevices =>
        {
            let hint = if source.kind() == std::io::ErrorKind::CrossesDevices {
                " (quarantine/ is on another file system than objects/: a mount at objects/?)"
            } else {
                ""
            };
            StoreError::Unwritable {
                path,
                message: format!("{what}: {source}{hint}"),
            }
            .into()
        }
        // The bucket's words, and what is left (after the strays, nothing to say).
        StoreError::Bucket { url, message } if left > 0 => StoreError::Bucket {
            url,
            message: format!("{message}; the repair stopped with {left} damaged objects left"),
        }
        .into(),
        e => e.into(),
    }
}

/// `Err` (a full disk under the `--min-free` margin) when too little space is left on the
/// mirror's file system to go on.
fn room(mirror: &Path, staging: &Path, min_free: Option<u64>, left: usize) -> Result<(), Error> {
    let at = if staging.exists() { staging } else { mirror };
    crate::engine::apply::room_left(at, min_free).map_err(|message| {
        StoreError::NoSpace {
            path: mirror.display().to_string(),
            message,
            needed: format!(", with {left} damaged objects left to repair"),
        }
        .into()
    })
}
