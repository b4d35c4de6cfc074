//! `rsmirror export FORMAT DEST`: the mirror, at a point of its history, written in a form a
//! preservation system or a plain web server takes. Reads the catalog and objects only (no
//! network, no lock on the mirror; DEST's own lock keeps a second export out) and checks every
//! object's bytes against the catalog as it places them
//! (a link of an object the last clean full audit vouches for, unchanged since, by its length
//! and time: `tree::Placer`): a damaged object stops the export (exit 1) naming the URI.
//!
//! DEST is empty, missing, or an earlier export of the same format (its `.rsmirror-export/`
//! says so); anything else is refused. While an export runs, `DEST/.rsmirror-export/INCOMPLETE`
//! says so; it goes only once everything is written. Re-running into the same DEST brings it
//! to the new state, touching only what changed, and removes whatever else the tree holds. Without
//! `--at`, the state is the one the last run that ended left (a run under way is not shown half
//! done).

pub mod archivematica;
pub mod bagit;
pub mod gzip;
pub mod ocfl;
pub mod paths;
pub mod premis;
pub mod resourcesync;
pub mod tree;
pub mod warc;

use crate::access::{Point, Reader, When};
use crate::error::{Error, UsageError};
use crate::store::history::{self, Snapshot};
use crate::store::StoreError;
use std::path::{Path, PathBuf};

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The state as plain files, `DEST/HOST[:PORT]/PATH`.
    Tree,
    /// A BagIt 1.0 bag (RFC 8493) whose `data/` is the tree.
    Bagit,
    /// WARC 1.1 files of resource records, gzip per record.
    Warc,
    /// An OCFL 1.1 storage root: an object per resource, its versions the mirror's.
    Ocfl,
    /// The tree plus the ResourceSync 1.1 documents that make DEST a source (`--base-url`).
    Resourcesync,
    /// The mirror's whole history as PREMIS 3.0 (`DEST/premis.xml`): objects, events, agents.
    Premis,
    /// An Archivematica standard transfer: `objects/` (the tree), `metadata/checksum.*` and
    /// `metadata/premis.xml`.
    Archivematica,
}

impl Format {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Tree => "tree",
            Format::Bagit => "bagit",
            Format::Warc => "warc",
            Format::Ocfl => "ocfl",
            Format::Resourcesync => "resourcesync",
            Format::Premis => "premis",
            Format::Archivematica => "archivematica",
        }
    }
}

/// How a file gets its bytes from `objects/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Link {
    /// A hard link: no bytes copied; the file is the object (read-only: never edit it).
    Hard,
    /// A copy.
    Copy,
    /// A reflink (a copy-on-write clone) where the file system makes one, else a hard link
    /// on the same file system, else a copy.
    Auto,
}

pub struct Options {
    pub format: Format,
    pub dest: PathBuf,
    pub at: Option<When>,
    pub collection: Option<String>,
    pub strip: Option<String>,
    pub link: Link,
    /// warc: every version, not only the state at WHEN.
    pub all_versions: bool,
    /// warc: start a new file past this many bytes.
    pub warc_size: u64,
    /// resourcesync: the URL DEST is served at.
    pub base_url: Option<String>,
    /// resourcesync: the Change List covers the runs after this point (default: the first).
    pub changes_since: Option<When>,
    /// Read every object a link places, even those the last clean audit vouches for.
    pub verify: bool,
    /// premis, archivematica: which URIs an audit's `--sample` slice held (the audit's own
    /// slicing, handed down).
    pub in_sample: premis::InSample,
}

/// What an export did, for the summary line and `--json`.
#[derive(Debug, Default, serde::Serialize)]
pub struct Summary {
    pub format: &'static str,
    pub dest: String,
    /// The run whose state was exported.
    pub run: i64,
    pub files: u64,
    pub bytes: u64,
    pub written: u64,
    pub kept: u64,
    pub removed: u64,
    /// Files linked on the word of the last clean full audit (checked by length and time, not
    /// read: see `tree::Placer`); 0 for copies and with `--verify`.
    pub vouched: u64,
    /// That audit's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vouched_by: Option<i64>,
    /// URLs written at a path of their own, by reason (`index`, `query`, `clash`...).
    pub notes: std::collections::BTreeMap<String, u64>,
    /// premis, archivematica: the PREMIS events written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
}

impl Summary {
    pub(crate) fn line(&self) -> String {
        let what = match self.format {
            "warc" => "records",
            "ocfl" | "premis" => "objects",
            _ => "files",
        };
        let mut s = format!(
            "export {}: {} {what}, {} ({} written, {} kept, {} removed) into {}, the mirror as run {} left it",
            self.format,
            self.files,
            crate::report::human_bytes(self.bytes),
            self.written,
            self.kept,
            self.removed,
            self.dest,
            self.run
        );
        if let Some(n) = self.events {
            s.push_str(&format!("; {n} PREMIS events"));
        }
        if self.vouched > 0 {
            s.push_str(&format!(
                "; {} linked on the word of the audit of run {} (length and time checked, bytes \
                 not read again: --verify reads them)",
                self.vouched,
                self.vouched_by.unwrap_or(0)
            ));
        }
        if !self.notes.is_empty() {
            let notes: Vec<String> = self.notes.iter().map(|(k, n)| format!("{k} {n}")).collect();
            s.push_str(&format!(
                "; at a path of their own ({}, listed in {}/map.tsv): {}",
                "rsmirror help exports",
                paths::OWN,
                notes.join(", ")
            ));
        }
        s
    }
}

/// A time as the exported documents give it: UTC to the microsecond (WARC-Date, ResourceSync
/// `at` and `datetime`; readers such as Python's `datetime` take no more digits than that).
pub(crate) fn micros(t: &str) -> String {
    t.parse::<jiff::Timestamp>()
        .map(|ts| ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .unwrap_or_else(|_| t.to_string())
}

/// The record an export leaves in `DEST/.rsmirror-export/export.json`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub format: String,
    pub rsmirror_version: String,
    /// The mirror exported (not in a ResourceSync export, which is published).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<String>,
    pub run: i64,
    pub collection: Option<String>,
    pub strip: Option<String>,
    pub complete: bool,
    pub started_at: String,
    pub finished_at: Option<String>,
}

pub(crate) fn run(mirror: &Path, o: &Options) -> Result<Summary, Error> {
    use crate::net::is_no_space;
    use crate::store::lock::LockError;
    export(mirror, o).map_err(|e| match e {
        // A full destination: one message naming DEST, not the file that happened not to fit.
        Error::Store(StoreError::Io { what, path, source }) if is_no_space(&source) => {
            dest_full(o, format!("{what} {path}: {source}"))
        }
        Error::Lock(LockError::Io { path, source }) if is_no_space(&source) => {
            dest_full(o, format!("locking {path}: {source}"))
        }
        e => e,
    })
}

/// DEST's file system is full: one message naming DEST and what of the export is there.
/// Flush a file an export wrote through `w` (at `tmp`, renamed into place later) and make it
/// durable.
pub(crate) fn finish_file(
    w: std::io::BufWriter<std::fs::File>,
    tmp: &Path,
) -> Result<(), StoreError> {
    w.into_inner()
        .map_err(|e| StoreError::io("writing", tmp, e.into_error()))?
        .sync_all()
        .map_err(|e| StoreError::io("writing", tmp, e))
}

fn dest_full(o: &Options, message: String) -> Error {
    let flag = own_files(&o.dest, o.format).2;
    let state = if flag.exists() {
        format!(
            "the export is marked incomplete ({})",
            flag.strip_prefix(&o.dest).unwrap_or(&flag).display()
        )
    } else {
        "nothing of the export is in place yet".into()
    };
    StoreError::DestFull {
        dest: o.dest.display().to_string(),
        message,
        state,
    }
    .into()
}

fn export(mirror: &Path, o: &Options) -> Result<Summary, Error> {
    let base = checked_options(o)?;
    let reader = Reader::open(mirror)?;
    // One read transaction for the whole export: its walks of the catalog see one snapshot,
    // whatever a run beside it commits meanwhile.
    let _snapshot = Snapshot::begin(reader.catalog())?;
    let point = reader.point(o.at.as_ref())?;
    if let Some(note) = reader.in_progress_note(o.at.as_ref()) {
        note!("rsmirror: {note}");
    }
    // Now is the newest run: the record names a point that stays the same.
    let run = point
        .run
        .unwrap_or_else(|| reader.runs.keys().next_back().copied().unwrap_or(0));
    let point = Point { run: Some(run) };
    detail!(
        "rsmirror: exporting the mirror {}",
        reader.describe_point(point)
    );
    // No run after it in this snapshot: its states are the current ones.
    let newest = history::newest_run(reader.catalog())? <= run;
    let collections = match &o.collection {
        None => None,
        Some(c) => Some(crate::access::collection_ids(&reader, c)?),
    };
    refuse_inside(mirror, &o.dest)?;
    let earlier = check_dest(&o.dest, o.format)?;
    // One export into a DEST at a time: two would interleave their files and maps.
    let lock = lock_dest(&o.dest, o.format)?;
    let (own, mut record, incomplete) = begin_dest(mirror, o, run)?;
    // A link copies no bytes: an object the last clean full audit re-hashed, unchanged since,
    // is taken on its word (`tree::Placer`). That audit covers the states current at it; a
    // point before it needs one that re-hashed every version.
    let vouch = match (o.verify, o.link) {
        (true, _) | (_, Link::Copy) => None,
        _ => crate::access::status::last_clean_fixity(&reader)?
            .filter(|v| v.all_versions || run >= v.run),
    };
    let walk = tree::Walk {
        reader: &reader,
        mirror,
        point,
        newest,
        filter: crate::access::Filter {
            prefix: String::new(),
            after: None,
            collections,
            deleted: false,
            // A state recorded by metadata alone (`--metadata-only`) has no bytes to export:
            // every format leaves it out (README, `rsmirror man export`).
            bytes_only: true,
        },
        strip: o.strip.as_deref(),
        no_percent: o.format == Format::Bagit,
        reserved: match o.format {
            Format::Resourcesync => resourcesync::RESERVED,
            _ => &[],
        },
        vouch: vouch.as_ref(),
    };
    let mut summary = Summary {
        format: o.format.name(),
        dest: o.dest.display().to_string(),
        run,
        vouched_by: vouch.as_ref().map(|v| v.run),
        ..Summary::default()
    };
    write_format(&walk, o, &own, earlier, base.as_deref(), &mut summary)?;
    record.0.complete = true;
    record.0.finished_at = Some(jiff::Timestamp::now().to_string());
    write_record(&record.1, &record.0)?;
    crate::store::kill::point("export.before-complete");
    std::fs::remove_file(&incomplete).map_err(|e| StoreError::io("removing", &incomplete, e))?;
    let lock_file = own.join(lock_name(o.format));
    lock.remove()
        .map_err(|e| StoreError::io("removing", &lock_file, e))?;
    Ok(summary)
}

/// The options that do not go together refused; for resourcesync, its `--base-url` checked.
fn checked_options(o: &Options) -> Result<Option<String>, Error> {
    if o.all_versions && o.format != Format::Warc {
        return Err(UsageError(format!(
            "export {}: --all-versions is for warc (a tree or a bag holds one state: give --at WHEN; an OCFL object always holds every version)",
            o.format.name()
        ))
        .into());
    }
    if o.format == Format::Premis && (o.strip.is_some() || o.collection.is_some()) {
        return Err(UsageError(
            "export premis: --strip and --collection are for the formats that lay out files (PREMIS names each object by its SHA-256 and URIs, and covers the whole mirror)".into(),
        )
        .into());
    }
    if o.strip.is_some() && matches!(o.format, Format::Warc | Format::Ocfl) {
        return Err(UsageError(format!(
            "export {}: --strip is for tree, bagit and archivematica (a record or an object names its whole URL)",
            o.format.name()
        ))
        .into());
    }
    if o.warc_size == 0 {
        return Err(UsageError("export warc: --warc-size must be more than 0 bytes".into()).into());
    }
    if o.format != Format::Resourcesync && (o.base_url.is_some() || o.changes_since.is_some()) {
        return Err(UsageError(
            "export: --base-url and --changes-since are for resourcesync".into(),
        )
        .into());
    }
    Ok(match o.format {
        Format::Resourcesync => Some(resourcesync::base_url(o.base_url.as_deref().ok_or_else(
            || {
                UsageError(
                    "export resourcesync: give --base-url, the URL DEST will be served at".into(),
                )
            },
        )?)?),
        _ => None,
    })
}

/// Make DEST the export's own before anything else goes in: its folder, the record (written
/// whole, by a rename), then the INCOMPLETE flag, so that an export killed at any point leaves
/// DEST recognisably its own. Returns (its own folder, (the record, where it is), the flag).
#[allow(clippy::type_complexity)]
fn begin_dest(
    mirror: &Path,
    o: &Options,
    run: i64,
) -> Result<(PathBuf, (Record, PathBuf), PathBuf), Error> {
    let (own, record_path, incomplete) = own_files(&o.dest, o.format);
    std::fs::create_dir_all(&own).map_err(|e| StoreError::io("creating", &own, e))?;
    if incomplete.exists() {
        // An earlier export of this DEST was stopped: the files it was writing go.
        sweep_temporaries(&o.dest)?;
    }
    let record = Record {
        format: o.format.name().into(),
        rsmirror_version: env!("CARGO_PKG_VERSION").into(),
        // A ResourceSync export is published as it is: no path of this machine in it.
        mirror: match o.format {
            Format::Resourcesync => None,
            _ => Some(mirror.display().to_string()),
        },
        run,
        collection: o.collection.clone(),
        strip: o.strip.clone(),
        complete: false,
        started_at: jiff::Timestamp::now().to_string(),
        finished_at: None,
    };
    write_record(&record_path, &record)?;
    std::fs::write(
        &incomplete,
        "This export is not finished: run the same rsmirror export again to finish it.\n",
    )
    .map_err(|e| StoreError::io("writing", &incomplete, e))?;
    crate::interrupt::stopping_leaves(format!(
        "the export into {} stopped midway and stays marked incomplete ({}); the same command \
         finishes it (the mirror is untouched)",
        o.dest.display(),
        incomplete.display()
    ));
    Ok((own, (record, record_path), incomplete))
}

/// Write the walk's states into DEST in the format asked for.
fn write_format(
    walk: &tree::Walk<'_>,
    o: &Options,
    own: &Path,
    earlier: bool,
    base: Option<&str>,
    summary: &mut Summary,
) -> Result<(), Error> {
    match o.format {
        Format::Tree => {
            tree::export(walk, &o.dest, own, o.link, earlier, summary, None)?;
        }
        Format::Bagit => bagit::export(walk, &o.dest, own, o.link, earlier, summary)?,
        Format::Premis => premis::export(
            walk.reader.catalog(),
            &o.dest,
            walk.point.run.unwrap_or(0),
            o.in_sample,
            summary,
        )?,
        Format::Archivematica => {
            archivematica::export(walk, &o.dest, own, o.link, earlier, o.in_sample, summary)?
        }
        Format::Warc => warc::export(walk, &o.dest, o.all_versions, o.warc_size, summary)?,
        Format::Ocfl => ocfl::export(walk, &o.dest, o.link, summary)?,
        Format::Resourcesync => {
            let since = match &o.changes_since {
                Some(w) => walk.reader.point(Some(w))?,
                // After the first run: every change the mirror applied since it was made.
                None => Point {
                    run: Some(walk.reader.runs.keys().next().copied().unwrap_or(0)),
                },
            };
            let base = base.expect("checked with the options");
            resourcesync::export(walk, &o.dest, own, o.link, earlier, base, since, summary)?
        }
    }
    Ok(())
}

/// The lock of DEST (`export.lock` in the export's own folder), held while an export writes:
/// a second export into the same DEST exits 6, as a second run on a mirror does. A finished
/// export removes it (DEST is published as it is).
fn lock_dest(dest: &Path, format: Format) -> Result<crate::store::lock::RemovableLock, Error> {
    let (own, _, _) = own_files(dest, format);
    std::fs::create_dir_all(&own).map_err(|e| StoreError::io("creating", &own, e))?;
    Ok(crate::store::lock::RemovableLock::acquire(
        &own.join(lock_name(format)),
    )?)
}

/// The name of DEST's lock file in the export's own folder.
fn lock_name(format: Format) -> &'static str {
    match format {
        Format::Ocfl => "rsmirror-export.lock",
        _ => "export.lock",
    }
}

/// Where an export keeps its own files: (the folder, the record, the INCOMPLETE flag).
/// `.rsmirror-export/` in DEST; in an OCFL storage root, where a folder that is not an object
/// is not allowed (E072), files beside `0=ocfl_1.1` instead.
fn own_files(dest: &Path, format: Format) -> (PathBuf, PathBuf, PathBuf) {
    match format {
        Format::Ocfl => (
            dest.to_path_buf(),
            dest.join("rsmirror-export.json"),
            dest.join("rsmirror-export.INCOMPLETE"),
        ),
        _ => {
            let own = dest.join(paths::OWN);
            (own.clone(), own.join("export.json"), own.join("INCOMPLETE"))
        }
    }
}

/// Remove the temporary files an export stopped midway left (`.rsmirror-tmp-*` beside the
/// files it places, `*.rsmirror-tmp` beside the documents it writes). A resource that happened
/// to have such a name is placed again by the export that follows.
fn sweep_temporaries(dir: &Path) -> Result<(), StoreError> {
    for e in std::fs::read_dir(dir).map_err(|e| StoreError::io("reading", dir, e))? {
        let e = e.map_err(|e| StoreError::io("reading", dir, e))?;
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let kind = e
            .file_type()
            .map_err(|e| StoreError::io("reading", &path, e))?;
        if kind.is_dir() {
            sweep_temporaries(&path)?;
        } else if name.starts_with(".rsmirror-tmp-") || name.ends_with(".rsmirror-tmp") {
            std::fs::remove_file(&path).map_err(|e| StoreError::io("removing", &path, e))?;
        }
    }
    Ok(())
}

/// DEST holds nothing but what an export makes before its record is in place: its own
/// (empty) folder, or a record being written.
fn only_a_started_record(dest: &Path) -> bool {
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let top = names(dest);
    let ocfl_started = top
        .iter()
        .all(|n| n == "rsmirror-export.json.tmp" || n == lock_name(Format::Ocfl));
    let own_started = top == [paths::OWN]
        && names(&dest.join(paths::OWN))
            .iter()
            .all(|n| n == "export.json.tmp" || n == lock_name(Format::Tree));
    ocfl_started || own_started
}

fn write_record(path: &Path, record: &Record) -> Result<(), StoreError> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(record).expect("serialisable");
    std::fs::write(&tmp, text + "\n")
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| StoreError::io("writing", path, e))
}

/// DEST inside the mirror folder is refused: its files would sit among the mirror's own (and
/// a tree of objects inside `objects/` would be taken for strays).
fn refuse_inside(mirror: &Path, dest: &Path) -> Result<(), Error> {
    // Where DEST is, through links: its nearest ancestor that exists, resolved.
    let resolved = |p: &Path| -> Option<std::path::PathBuf> {
        let p = std::path::absolute(p).ok()?;
        let mut rest = Vec::new();
        let mut at = p.as_path();
        loop {
            if let Ok(real) = at.canonicalize() {
                return Some(rest.iter().rev().fold(real, |acc, part| acc.join(part)));
            }
            rest.push(at.file_name()?.to_owned());
            at = at.parent()?;
        }
    };
    match (resolved(mirror), resolved(dest)) {
        (Some(m), Some(d)) if d.starts_with(&m) => Err(UsageError(format!(
            "export: {} is inside the mirror folder {}: export beside the mirror, never into it",
            dest.display(),
            mirror.display()
        ))
        .into()),
        _ => Ok(()),
    }
}

/// DEST is missing or empty (`Ok(false)`), or an earlier export of this format (`Ok(true)`);
/// anything else is refused.
fn check_dest(dest: &Path, format: Format) -> Result<bool, Error> {
    let mut entries = match std::fs::read_dir(dest) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest).map_err(|e| StoreError::io("creating", dest, e))?;
            return Ok(false);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(UsageError(format!(
                "export: {} is a file, not a folder to export into",
                dest.display()
            ))
            .into())
        }
        Err(e) => return Err(StoreError::io("reading", dest, e).into()),
    };
    if entries.next().is_none() {
        return Ok(false);
    }
    if only_a_started_record(dest) {
        // An export killed before its record was in place: nothing but its own beginnings.
        return Ok(false);
    }
    let found: Option<Record> = [Format::Tree, Format::Ocfl]
        .iter()
        .map(|f| own_files(dest, *f).1)
        .find_map(|record| std::fs::read_to_string(record).ok())
        .and_then(|t| serde_json::from_str(&t).ok());
    match found {
        Some(r) if r.format == format.name() => Ok(true),
        Some(r) => Err(UsageError(format!(
            "export: {} holds an rsmirror export of format {}, not {}: export into an empty \
             folder, or into that one with the same format",
            dest.display(),
            r.format,
            format.name()
        ))
        .into()),
        None => Err(UsageError(format!(
            "export: {} holds other files: rsmirror exports only into an empty (or new) folder, \
             or into an earlier export of the same format, and never overwrites anything else",
            dest.display()
        ))
        .into()),
    }
}
