//! The single writer of a run: versions, change events, problems and a format's side rows
//! accumulate and are committed in batches, each after one `syncfs` of the object store, so a
//! version row never references bytes a crash could lose. A dry run never opens one.
//!
//! A writer opened [`Writer::whole`] commits everything it is given at once or not at all: its
//! batches are written into one open transaction (they only bound memory), and
//! [`Writer::commit`] makes the objects durable and commits; dropped before, it rolls back.
//! A collection that is trusted only once read to its end (an SCP collection's checksum, SCP
//! 0.1 "Checksum Verification") is applied so.

use crate::model::ProblemClass;
use crate::store::catalog::{write, ChangeEventRecord, NewVersion};
use crate::store::{Catalog, ObjectStore, StoreError};
use std::time::{Duration, Instant};

pub use crate::store::tx::Tx;

/// More rows to write once a version has its id.
pub type Then = Box<dyn FnOnce(&Tx<'_>, i64) -> Result<(), StoreError>>;

/// Rows a format writes in the last transaction of a collection (the records of its documents).
pub type LastRows<'h> = Box<dyn FnOnce(&Tx<'_>) -> Result<(), StoreError> + 'h>;

/// A version waiting for its batch.
struct PendingVersion {
    version: NewVersion,
    event: Option<ChangeEventRecord>,
    then: Option<Then>,
}

/// The single writer: versions and problems accumulate and are committed in batches, each
/// after one `syncfs` of the object store.
pub struct Writer<'a> {
    catalog: &'a mut Catalog,
    objects: &'a ObjectStore,
    run_id: i64,
    versions: Vec<PendingVersion>,
    events: Vec<ChangeEventRecord>,
    problems: Vec<(String, ProblemClass, String)>,
    last_flush: Instant,
    /// Opened [`Writer::whole`]: a transaction is open until [`Writer::commit`] (or the drop,
    /// which rolls it back).
    whole: bool,
    /// A whole writer wrote versions: the objects are synced before its commit.
    unsynced: bool,
}

/// Versions per transaction, and the longest a result waits for its commit.
const BATCH: usize = 512;
const BATCH_AGE: Duration = Duration::from_millis(500);

impl<'a> Writer<'a> {
    pub(crate) fn new(
        catalog: &'a mut Catalog,
        objects: &'a ObjectStore,
        run_id: i64,
    ) -> Writer<'a> {
        Writer {
            catalog,
            objects,
            run_id,
            versions: Vec::new(),
            events: Vec::new(),
            problems: Vec::new(),
            last_flush: Instant::now(),
            whole: false,
            unsynced: false,
        }
    }

    /// The run this writer records for.
    pub(crate) fn run_id(&self) -> i64 {
        self.run_id
    }

    /// A writer whose writes are committed all at once by [`Writer::commit`], or not at all.
    pub(crate) fn whole(
        catalog: &'a mut Catalog,
        objects: &'a ObjectStore,
        run_id: i64,
    ) -> Result<Writer<'a>, StoreError> {
        catalog.conn().execute_batch("BEGIN IMMEDIATE")?;
        let mut writer = Writer::new(catalog, objects, run_id);
        writer.whole = true;
        Ok(writer)
    }

    /// Write now, in the writer's open transaction (a writer opened [`Writer::whole`]).
    pub(crate) fn now<T>(
        &mut self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        assert!(self.whole, "only a whole writer has a transaction open");
        f(&Tx::new(self.catalog.conn()))
    }

    /// Commit a writer opened [`Writer::whole`]: what is pending and what `extra` writes,
    /// after one `syncfs` of the object store.
    pub(crate) fn commit(
        mut self,
        extra: impl FnOnce(&Tx<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        assert!(
            self.whole,
            "only a whole writer has a transaction to commit"
        );
        let committed = self.flush(extra).and_then(|()| {
            if self.unsynced {
                // The objects are durable before the catalog names them: new ones, and those
                // found in place, which an earlier run that died may have linked unsynced.
                self.objects
                    .sync()
                    .map_err(|e| StoreError::io("syncing", self.objects.root(), e))?;
            }
            crate::store::kill::point("whole.before-commit");
            Ok(self.catalog.conn().execute_batch("COMMIT")?)
        });
        if committed.is_err() {
            let _ = self.catalog.conn().execute_batch("ROLLBACK");
            return committed;
        }
        self.whole = false;
        self.catalog.committed()
    }

    /// Roll back a writer opened [`Writer::whole`]: nothing it was given stays. (Its owner
    /// calls this when it gives up; a whole writer merely dropped leaves its transaction
    /// open, and the catalog's next transaction fails.)
    pub(crate) fn rollback(self) {
        if self.whole {
            let _ = self.catalog.conn().execute_batch("ROLLBACK");
        }
    }

    /// The catalog, to read: what it holds is what the last flush committed.
    pub(crate) fn catalog(&self) -> &Catalog {
        self.catalog
    }

    pub(crate) fn version(&mut self, v: NewVersion) -> Result<(), StoreError> {
        self.version_with(v, None, None)
    }

    /// A version, the change event it applies (recorded with the version's id), and more rows
    /// that need that id (a protocol's own metadata), written in the same transaction.
    pub(crate) fn version_with(
        &mut self,
        version: NewVersion,
        event: Option<ChangeEventRecord>,
        then: Option<Then>,
    ) -> Result<(), StoreError> {
        self.versions.push(PendingVersion {
            version,
            event,
            then,
        });
        self.maybe_flush()
    }

    /// A change event that produced no version (unchanged, superseded, failed, ...).
    pub(crate) fn event(&mut self, e: ChangeEventRecord) -> Result<(), StoreError> {
        self.events.push(e);
        self.maybe_flush()
    }

    pub(crate) fn problem(
        &mut self,
        uri: &str,
        class: ProblemClass,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.problems
            .push((uri.to_string(), class, reason.to_string()));
        self.maybe_flush()
    }

    fn maybe_flush(&mut self) -> Result<(), StoreError> {
        if self.versions.len() >= BATCH || self.last_flush.elapsed() >= BATCH_AGE {
            // A commit grows the write-ahead log: not under the --min-free margin (the run
            // stops; what the batch placed is re-attached by the next run).
            let root = self.objects.root();
            if let Err(message) =
                crate::store::space::room_left(root, crate::store::space::min_free(), 0)
            {
                return Err(StoreError::NoSpace {
                    path: root.parent().unwrap_or(root).display().to_string(),
                    message,
                    needed: String::new(),
                });
            }
            self.flush(|_| Ok(()))
        } else {
            Ok(())
        }
    }

    /// Commit what is pending, plus whatever `extra` writes, in one transaction (a whole
    /// writer's: written into its open transaction).
    pub(crate) fn flush(
        &mut self,
        extra: impl FnOnce(&Tx<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        if self.whole {
            self.unsynced |= !self.versions.is_empty();
            let pending = self.drain();
            let tx = Tx::new(self.catalog.conn());
            Self::write(&tx, self.run_id, pending)?;
            extra(&tx)?;
            self.last_flush = Instant::now();
            return Ok(());
        }
        if !self.versions.is_empty() {
            self.objects
                .sync()
                .map_err(|e| StoreError::io("syncing", self.objects.root(), e))?;
        }
        let any_version = !self.versions.is_empty();
        let pending = self.drain();
        let tx = self.catalog.transaction()?;
        let open = Tx::new(&tx);
        Self::write(&open, self.run_id, pending)?;
        extra(&open)?;
        tx.commit()?;
        self.catalog.committed()?;
        if any_version {
            crate::store::kill::point("writer.committed");
        }
        self.last_flush = Instant::now();
        Ok(())
    }

    /// What is pending, taken out.
    fn drain(&mut self) -> Pending {
        (
            std::mem::take(&mut self.versions),
            std::mem::take(&mut self.events),
            std::mem::take(&mut self.problems),
        )
    }

    /// Write `pending` on `tx` (a transaction is open).
    fn write(tx: &Tx<'_>, run_id: i64, pending: Pending) -> Result<(), StoreError> {
        let (versions, events, problems) = pending;
        for p in versions {
            let id = write::version(tx, run_id, &p.version)?;
            crate::store::kill::point("writer.mid-batch");
            if let Some(e) = p.event {
                write::change_event(tx, run_id, &e, Some(id))?;
            }
            if let Some(then) = p.then {
                then(tx, id)?;
            }
        }
        for e in events {
            write::change_event(tx, run_id, &e, None)?;
        }
        for (uri, class, reason) in problems {
            write::problem(tx, run_id, &uri, class, &reason)?;
        }
        Ok(())
    }

    /// Commit what is pending, and say how far the run's problems and change events have
    /// come: [`Writer::pending_failed`] rewrites what follows.
    pub(crate) fn mark(&mut self) -> Result<Mark, StoreError> {
        self.flush(|_| Ok(()))?;
        Ok(Mark(write::marks(self.catalog.conn(), self.run_id)?))
    }

    /// Commit what is pending, and make every `pending` problem and change event recorded
    /// since `mark` a failure, `note` added to each reason.
    pub(crate) fn pending_failed(&mut self, mark: Mark, note: &str) -> Result<(), StoreError> {
        let run_id = self.run_id;
        self.flush(|tx| write::pending_failed(tx, run_id, mark.0, note))
    }
}

/// What a writer holds until its next batch: versions, change events, problems.
type Pending = (
    Vec<PendingVersion>,
    Vec<ChangeEventRecord>,
    Vec<(String, ProblemClass, String)>,
);

/// Where a run's problems and change events stood ([`Writer::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark((i64, i64));
