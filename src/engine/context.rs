//! What every writing run shares: opening the mirror (lock, catalog, objects, an empty
//! staging folder, runs left by a dead process marked abandoned), ending the run (the exit
//! code derived from what happened, recorded in `runs`), and what a run hands to the code that
//! mirrors one collection of another protocol (SCP, ARC, Change Dumps).

use crate::engine::documents::Documents;
use crate::error::{Error, UsageError};
use crate::exit::Exit;
use crate::net::Http;
use crate::progress::Progress;
use crate::report::Summary;
use crate::store::bucket::shared::{Lease, Refused};
use crate::store::bucket::BucketUrl;
use crate::store::mirror_settings;
use crate::store::{Catalog, DiskSign, MirrorLock, ObjectStore, StoreError};
use std::path::{Path, PathBuf};

pub struct RunContext<'a, 'b> {
    pub http: &'a Http,
    pub docs: &'a Documents<'b>,
    pub catalog: &'a mut Catalog,
    pub objects: &'a ObjectStore,
    pub staging: &'a Path,
    pub source_id: i64,
    pub run_id: i64,
    pub summary: &'a mut Summary,
    pub progress: &'a Progress,
}

impl RunContext<'_, '_> {
    /// Record problems of the run (URI, class, why) through the one writer, committed at once.
    pub(crate) fn problems<'p>(
        &mut self,
        rows: impl IntoIterator<Item = (&'p str, crate::model::ProblemClass, &'p str)>,
    ) -> Result<(), Error> {
        let mut writer = crate::engine::apply::Writer::new(self.catalog, self.objects, self.run_id);
        for (uri, class, why) in rows {
            writer.problem(uri, class, why)?;
        }
        Ok(writer.flush(|_| Ok(()))?)
    }
}

/// How a baseline or incremental run ended (when it did not end in an [`Error`]).
pub struct Outcome {
    pub summary: Summary,
    pub exit: Exit,
}

/// A mirror opened for a run that writes: the lock is held for as long as this lives.
pub struct OpenMirror {
    pub catalog: Catalog,
    pub objects: ObjectStore,
    pub staging: PathBuf,
    /// A bucket mirror's lease (one writer across machines): dropped after the catalog, whose
    /// copy it then sends to the bucket before it lets go.
    _lease: Option<Lease>,
    /// Last, so dropped last: the catalog is sealed (and copied) before another run may start.
    _lock: MirrorLock,
}

impl OpenMirror {
    /// Take the lock, open (or create) the catalog and the object store, mark runs left
    /// unfinished by a process that died as abandoned, and empty `staging/`.
    /// The objects are where the catalog says (the mirror folder, or a bucket).
    /// A bucket mirror's lease is taken for `command` (see [`Lease`]).
    /// A bucket that refuses the run (its credentials, its answers) refuses it once the
    /// catalog is open: that run is recorded, `failed` with the bucket's words, so that
    /// `status` and `log` say so (`arguments` is its command line, for the record; `None`
    /// for a dry run, which records nothing).
    pub(crate) fn open(
        mirror: &Path,
        (command, arguments): (&str, Option<&str>),
    ) -> Result<OpenMirror, Error> {
        OpenMirror::open_with(mirror, None, (command, arguments))
    }

    /// [`OpenMirror::open`]; `objects` (`--objects s3://...`) puts a new mirror's objects in
    /// a bucket, remembered in the catalog. A mirror that has objects already keeps them where
    /// they are: another location is a usage error.
    pub(crate) fn open_with(
        mirror: &Path,
        objects: Option<&BucketUrl>,
        (command, arguments): (&str, Option<&str>),
    ) -> Result<OpenMirror, Error> {
        let lock = MirrorLock::acquire(mirror)?;
        let catalog = Catalog::open(mirror)?;
        catalog.abandon_unfinished_runs()?;
        let (objects, lease) = match object_store_and_lease(mirror, &catalog, objects, command) {
            Ok(opened) => opened,
            Err(e) => {
                if let Some(arguments) = arguments {
                    record_refused(&catalog, (command, arguments), &e);
                }
                return Err(e);
            }
        };
        let staging = mirror.join("staging");
        clean_staging(&staging)?;
        Ok(OpenMirror {
            catalog,
            objects,
            staging,
            _lease: lease,
            _lock: lock,
        })
    }

    /// Hand one collection of another protocol what it needs.
    pub(crate) fn context<'a, 'b>(
        &'a mut self,
        http: &'a Http,
        docs: &'a Documents<'b>,
        (source_id, run_id): (i64, i64),
        summary: &'a mut Summary,
        progress: &'a Progress,
    ) -> RunContext<'a, 'b> {
        RunContext {
            http,
            docs,
            catalog: &mut self.catalog,
            objects: &self.objects,
            staging: &self.staging,
            source_id,
            run_id,
            summary,
            progress,
        }
    }

    /// End the run: the exit code from the result and the counts (some resource failed or
    /// was refused, or part of a list could not be read: partial), recorded in `runs`.
    pub(crate) fn finish(
        &self,
        run_id: i64,
        mut summary: Summary,
        result: Result<(), Error>,
    ) -> Result<Outcome, Error> {
        // The log proven whole before anything more is written (the index, the run's end): a
        // log changed under the run is damage (exit 5), and nothing more goes into it.
        self.catalog.prove_log()?;
        if result.as_ref().err().is_some_and(|e| e.is_damage()) {
            self.catalog.suspect();
        }
        // Whatever the outcome: a first load may have deferred it. Should that fail, the run
        // fails with it, recorded as such (its versions stand; the next open builds the index).
        let result = match (result, self.catalog.build_object_index()) {
            (Ok(()), Err(e)) => Err(e.into()),
            (result, Ok(Some(left))) => {
                summary.warnings.push(left);
                result
            }
            (result, _) => result,
        };

        let exit = match &result {
            Ok(()) if partial(&summary) => Exit::Partial,
            Ok(()) => Exit::Ok,
            Err(e) => e.exit(),
        };
        summary.exit_code = exit.code();
        let outcome = match exit {
            Exit::Ok => "ok",
            Exit::Partial => "partial",
            _ => "failed",
        };
        self.catalog
            .end_run(run_id, outcome, exit.code(), &summary.counts_json())?;
        crate::net::fetch::remove_empty_worker_folders(&self.staging);
        result.map(|()| Outcome { summary, exit })
    }
}

/// The object store where the catalog says (or `objects`, for a new mirror), and a bucket
/// mirror's lease for `command`.
fn object_store_and_lease(
    mirror: &Path,
    catalog: &Catalog,
    objects: Option<&BucketUrl>,
    command: &str,
) -> Result<(ObjectStore, Option<Lease>), Error> {
    let recorded = mirror_settings::objects_location(catalog)?;
    let objects = match (objects, recorded) {
        (Some(given), Some(recorded)) if *given != recorded => {
            return Err(UsageError(format!(
                "--objects {given}: this mirror's objects are in {recorded}; they cannot be \
                 moved (leave --objects out: the mirror remembers where they are)"
            ))
            .into())
        }
        (Some(given), None) => {
            if catalog.has_versions()? {
                return Err(UsageError(format!(
                    "--objects {given}: this mirror keeps its objects in its folder \
                     ({}); they cannot be moved: make a new mirror with --objects",
                    mirror.join("objects").display()
                ))
                .into());
            }
            let store = mirror_settings::connect(mirror, given)?;
            if store.holds_any()? {
                return Err(UsageError(format!(
                    "--objects {given}: that prefix already holds objects (another \
                     mirror's?); a new mirror wants a prefix of its own (its audit and \
                     repair take every object there for its own)"
                ))
                .into());
            }
            mirror_settings::set_objects_location(catalog, given)?;
            store
        }
        _ => mirror_settings::object_store(mirror, catalog, true)?,
    };
    let lease = objects.lease(mirror, command).map_err(|r| match r {
        Refused::Leased(e) => Error::from(e),
        Refused::Store(e) => Error::from(e),
    })?;
    Ok((objects, lease))
}

/// Record a run the bucket refused before it began (its credentials, a fault, a catalog
/// behind another machine's): `failed`, with the bucket's words as its problem. Another
/// writer holding the lease is not a run (as the folder's lock is not), nor is a usage error.
/// Best effort: the refusal itself is what the command reports.
fn record_refused(catalog: &Catalog, (command, arguments): (&str, &str), e: &Error) {
    let Error::Store(StoreError::Bucket { url, message }) = e else {
        return;
    };
    let Ok(run_id) = catalog.begin_run(command, None, arguments) else {
        return;
    };
    let problem = (
        url.clone(),
        crate::model::ProblemClass::Objects,
        format!("the bucket refused the run: {message}"),
    );
    let _ = crate::store::run_records::record_problems(catalog, run_id, &[problem]);
    let _ = catalog.end_run(run_id, "failed", e.exit().code(), "{}");
}

/// Some resource failed or was refused, or part of a list could not be read.
pub(crate) fn partial(summary: &Summary) -> bool {
    summary.failed > 0
        || summary.refused > 0
        || summary
            .problems
            .iter()
            .any(|p| p.class == crate::model::ProblemClass::Document)
}

/// Staging holds only downloads in flight; anything there at the start of a run (we hold the
/// lock) is left over from a run that died, and is never referenced by the catalog. Its
/// contents go, not the folder (which may be a mount of its own); then the folder is proven
/// writable, so that a read-only one is said at once, as such.
pub(crate) fn clean_staging(staging: &Path) -> Result<(), StoreError> {
    std::fs::create_dir_all(staging).map_err(|e| unwritable_staging(staging, e))?;
    let entries = std::fs::read_dir(staging).map_err(|e| StoreError::io("reading", staging, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("reading", staging, e))?;
        let path = entry.path();
        let removed = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        removed.map_err(|e| unwritable_staging(&path, e))?;
    }
    let probe = staging.join(format!(".probe-{}", std::process::id()));
    std::fs::File::create(&probe).map_err(|e| unwritable_staging(staging, e))?;
    std::fs::remove_file(&probe).map_err(|e| unwritable_staging(staging, e))
}

/// `staging/` (or what is in it) could not be written: said as such when the media is read-only
/// or the permission is missing.
fn unwritable_staging(path: &Path, e: std::io::Error) -> StoreError {
    let what = match e.kind() {
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
            "cleaning staging/ (read-only: a run stages its downloads there, on the mirror's file \
             system, and needs it writable)"
        }
        _ => "cleaning staging/",
    };
    StoreError::io(what, path, e)
}

/// The mirror folder a staging folder belongs to, for messages.
pub(crate) fn mirror_of(staging: &Path) -> String {
    staging.parent().unwrap_or(staging).display().to_string()
}

/// The error that ends a run on a full disk ([`crate::engine::apply::JobResult::NoSpace`]);
/// `needed` says what the run had left, when the caller knows.
pub(crate) fn no_space(staging: &Path, message: String, needed: String) -> Error {
    StoreError::NoSpace {
        path: mirror_of(staging),
        message: crate::store::space::full_said(staging, message),
        needed,
    }
    .into()
}

/// [`no_space`] for a transfer that stopped: what landed before it (the writer's pending
/// versions) is committed first when the catalog still has room, so the next run need not
/// fetch it again. (Under `--min-free` there is room; on a full disk the commit may fail, and
/// the next run finds the objects by digest.)
pub(crate) fn stop_for_space(
    writer: &mut crate::engine::apply::Writer<'_>,
    staging: &Path,
    message: String,
    needed: String,
) -> Error {
    let _ = writer.flush(|_| Ok(()));
    no_space(staging, message, needed)
}

/// [`stop_for_space`] for an object store that refuses writes
/// ([`crate::engine::apply::JobResult::Unwritable`]): what landed before is committed first.
pub(crate) fn stop_for_fault(
    writer: &mut crate::engine::apply::Writer<'_>,
    e: StoreError,
) -> Error {
    let _ = writer.flush(|_| Ok(()));
    e.into()
}

/// A run that stops fetching early ([`crate::engine::apply::JobResult::Stop`]): what landed
/// is committed first, the sync point is left where it was, exit 3.
pub(crate) fn stop_early(writer: &mut crate::engine::apply::Writer<'_>, message: String) -> Error {
    match writer.flush(|_| Ok(())) {
        Ok(()) => Error::Stopped(message),
        Err(e) => e.into(),
    }
}

/// A run's error, with a full disk met by the catalog told as the same one message a full
/// disk met by an object gives: SQLITE_FULL, or a "disk I/O error" (what SQLite says when its
/// journal cannot grow) while the mirror's file system has no room left.
pub(crate) fn full_disk_said(e: Error, mirror: &Path) -> Error {
    let Error::Store(store) = &e else {
        return e;
    };
    let said = match store.disk_sign() {
        Some((DiskSign::Full, said)) => said,
        Some((DiskSign::IoError, said))
            if crate::engine::apply::room_left(mirror, Some(64 * 1024)).is_err() =>
        {
            said
        }
        _ => return e,
    };
    StoreError::NoSpace {
        path: mirror.display().to_string(),
        message: format!("catalog: {said}"),
        needed: String::new(),
    }
    .into()
}
