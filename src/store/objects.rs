//! The content-addressed object store: `objects/sha256/<2 hex>/<64 hex>`.
//!
//! This layout is a contract (doc/manual/layout.md): scripts may read objects by
//! sha256. Objects are write-once: a verified new file is linked or renamed into place
//! ([`NewFile`]), never written in place, so a crash leaves either the old state or the new
//! one. Durability is arranged per batch by [`ObjectStore::sync`] (one `syncfs`) before the
//! catalog transaction that references the batch commits. Source strings never become file
//! names.
//!
//! One fan-out level (256 folders, as git does): creating a folder allocates an inode as a file
//! does, and the two levels used before (65,536 folders) made nearly every object of a large
//! baseline cost two inodes and a 4 KiB directory block. Mirrors made with two levels are moved
//! to one by [`migrate_two_level`] when their catalog is upgraded.
//!
//! A mirror made with `--objects s3://BUCKET/PREFIX` keeps the same layout in a bucket
//! ([`crate::store::bucket`]): the store then uploads what it ingests (create-only, checksummed)
//! instead of linking it into the folder. Callers never ask where the objects are: an
//! [`ObjectStore`] is one interface over the two places that keep them ([`Keep`]: the mirror
//! folder, [`InFolder`]; a bucket, [`in_bucket::InBucket`]), chosen once, when it is made
//! ([`ObjectStore::open`], [`ObjectStore::at`], [`ObjectStore::in_bucket`]).

mod in_bucket;

use crate::store::bucket::shared::{Lease, Refused as LeaseRefused};
use crate::store::bucket::Bucket;
use crate::store::new_file::NewFile;
use crate::store::StoreError;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The mirror's objects, wherever they are kept. Cheap to clone: clones share the place.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    /// `mirror/objects`: where the objects are in the mirror folder, or would be (the paths
    /// of messages and reports, whatever keeps them).
    root: PathBuf,
    /// What keeps them.
    keep: Arc<dyn Keep>,
}

/// What a place that keeps a mirror's objects does, by an object's SHA-256 (64 lower-case hex
/// digits); [`ObjectStore`] is its one user.
trait Keep: Send + Sync + std::fmt::Debug {
    /// Where the object is, for messages.
    fn describe(&self, sha256_hex: &str) -> String;
    /// Hand the object's bytes to `sink`, read through `buf`; `Ok(false)` when there is none.
    fn read(
        &self,
        sha256_hex: &str,
        buf: &mut [u8],
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<bool>;
    /// The object open for reading from its start (`path`: [`ObjectStore::path_for`]).
    fn open(&self, sha256_hex: &str, path: &Path) -> io::Result<Option<fs::File>>;
    /// The object's own file on this machine (`path`), when objects are files here.
    fn local_file(&self, path: PathBuf) -> Option<PathBuf>;
    /// Take in the verified file `staged`, removing it.
    fn ingest(&self, staged: &Path, sha256_hex: &str) -> io::Result<()>;
    /// Take in a verified [`NewFile`]: whether there was no such object before.
    fn ingest_new(&self, file: NewFile, sha256_hex: &str) -> io::Result<bool>;
    /// Make what was taken in durable.
    fn sync(&self) -> io::Result<()>;
    /// The error of a failure to take in or remove an object (`what` was being done).
    fn fault(&self, what: &'static str, sha256_hex: &str, e: io::Error) -> StoreError;
    /// The error that stops a run when the store refuses writes.
    fn refused(&self, message: String) -> StoreError;
    /// Whether a failure to take in one object says that every other would fail too.
    fn fails_every_ingest(&self, e: &io::Error) -> bool;
    /// Remove an object no catalog row names.
    fn remove(&self, sha256_hex: &str) -> io::Result<()>;
    /// Whether anything is kept at all (a new mirror wants a store of its own).
    fn holds_any(&self) -> Result<bool, StoreError>;
    /// For many metadata lookups by sha256.
    fn stat(&self) -> ObjectStat;
    /// Every entry, in name order ([`ObjectStore::visit_sorted`]).
    fn visit(
        &self,
        measure: Option<&(dyn Fn(&str) -> bool + Sync)>,
        f: &mut dyn FnMut(Visited<'_>) -> io::Result<()>,
    ) -> io::Result<()>;
    /// Move the object aside into the quarantine of `aside.run`, if there is one.
    fn quarantine_object(
        &self,
        sha256_hex: &str,
        aside: &Aside<'_>,
    ) -> Result<Option<Quarantined>, StoreError>;
    /// Move the entry `name` (relative to the mirror, as a walk found it) aside.
    fn quarantine_stray(&self, name: &str, aside: &Aside<'_>) -> Result<Option<Moved>, StoreError>;
    /// Put back an object moved aside by [`Keep::quarantine_object`] (best effort).
    fn unquarantine(&self, kept: &Quarantined, sha256_hex: &str);
    /// Where run `run`'s quarantine keeps damaged objects, as a clause of a message.
    fn quarantined_in(&self, run: i64) -> String;
    /// The lease a run that writes takes, when others may write the objects elsewhere.
    fn lease(&self, mirror: &Path, command: &str) -> Result<Option<Lease>, LeaseRefused>;
}

/// What a damaged object or a stray is moved aside with: its record's words
/// (`quarantine/run-N/NAME.json`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Aside<'a> {
    /// The run that moves it.
    pub run: i64,
    /// What was found (a finding's class name).
    pub found: &'a str,
    /// The SHA-256 the catalog records for it (none for a stray).
    pub expected_sha256: Option<&'a str>,
    /// What its bytes gave, when read.
    pub actual: Option<&'a str>,
}

/// Where an object moved aside is kept, to put it back.
#[derive(Debug)]
pub(crate) enum Quarantined {
    /// A file under `MIRROR/quarantine/run-N/`.
    File(PathBuf),
    /// A key under `PREFIX/quarantine/run-N/`.
    Key(String),
}

/// A stray moved aside: what it was, and where it went (both for the message).
#[derive(Debug)]
pub(crate) struct Moved {
    pub what: &'static str,
    pub to: String,
}

impl ObjectStore {
    /// `mirror/objects`; created when missing.
    pub(crate) fn open(mirror: &Path) -> io::Result<ObjectStore> {
        let root = mirror.join("objects");
        let keep = InFolder::open(root.clone())?;
        Ok(ObjectStore {
            root,
            keep: Arc::new(keep),
        })
    }

    /// The object store of `mirror`, creating nothing (readers such as audit).
    pub(crate) fn at(mirror: &Path) -> ObjectStore {
        let root = mirror.join("objects");
        ObjectStore {
            keep: Arc::new(InFolder::at(root.clone())),
            root,
        }
    }

    /// The store of `mirror` whose objects are in `bucket`: nothing is made in the folder.
    pub(crate) fn in_bucket(mirror: &Path, bucket: Bucket) -> ObjectStore {
        let root = mirror.join("objects");
        ObjectStore {
            keep: Arc::new(in_bucket::InBucket::new(root.clone(), bucket)),
            root,
        }
    }

    /// Where the object with this sha256 is, for messages: its path relative to the mirror,
    /// or its `s3://` location.
    pub(crate) fn describe(&self, sha256_hex: &str) -> String {
        self.keep.describe(sha256_hex)
    }

    /// Hand the object's bytes to `sink` as they are read; `Ok(false)` when the store has no
    /// such object. Something other than a file in its place is an error that says what it
    /// is ("a folder, not a file").
    pub(crate) fn read_object(
        &self,
        sha256_hex: &str,
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<bool> {
        self.read_object_through(sha256_hex, &mut vec![0u8; 256 * 1024], sink)
    }

    /// [`ObjectStore::read_object`] through the caller's buffer (one per reader of many
    /// objects). Each object is read once: its cached pages are let go of after it.
    pub(crate) fn read_object_through(
        &self,
        sha256_hex: &str,
        buf: &mut [u8],
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<bool> {
        self.keep.read(sha256_hex, buf, sink)
    }

    /// The object's bytes, open for reading from the start; `Ok(None)` when the store has no
    /// such object. From a bucket they are fetched first into an anonymous temporary file
    /// (`TMPDIR`): readers stream from a file either way, in bounded memory. Its
    /// [`ObjectStore::path_for`] is written into `path` (for messages; its memory kept:
    /// callers that open many objects allocate nothing per object).
    pub(crate) fn open_object_into(
        &self,
        sha256_hex: &str,
        path: &mut PathBuf,
    ) -> io::Result<Option<fs::File>> {
        self.path_into(sha256_hex, path);
        self.keep.open(sha256_hex, path)
    }

    /// The object's own file on this machine, when the store keeps its objects as files (the
    /// mirror folder): to link, reflink or read in place. `None` where they are not files here
    /// (a bucket). Whether the file exists is not looked at.
    pub(crate) fn local_file(&self, sha256_hex: &str) -> Option<PathBuf> {
        self.keep.local_file(self.path_for(sha256_hex))
    }

    /// `objects/sha256/ab/<sha256>`: where an object lives, relative to the mirror (for
    /// messages and reports).
    pub(crate) fn relative_path(sha256_hex: &str) -> String {
        format!("objects/sha256/{}/{sha256_hex}", &sha256_hex[0..2])
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Where the object with this sha256 lives in the mirror folder (whether or not it
    /// exists; in a bucket, where it would be).
    pub(crate) fn path_for(&self, sha256_hex: &str) -> PathBuf {
        let mut path = self.root.clone();
        push_object(&mut path, sha256_hex);
        path
    }

    /// [`ObjectStore::path_for`], written into `path` (its memory kept).
    pub(crate) fn path_into(&self, sha256_hex: &str, path: &mut PathBuf) {
        path.as_mut_os_string().clear();
        path.push(&self.root);
        push_object(path, sha256_hex);
    }

    /// [`ObjectStore::path_for`] of the store of `mirror`, written into `path` (its memory
    /// kept: callers that name many objects, on several threads, allocate nothing per object).
    pub(crate) fn path_in_mirror(mirror: &Path, sha256_hex: &str, path: &mut PathBuf) {
        path.as_mut_os_string().clear();
        path.push(mirror);
        path.push("objects");
        push_object(path, sha256_hex);
    }

    /// Move a verified staging file into the store under its sha256. An existing object is
    /// replaced by the fresh copy (same content by construction; a copy torn by an earlier
    /// crash is healed this way). The object is made read-only.
    pub(crate) fn ingest(&self, staged: &Path, sha256_hex: &str) -> io::Result<PathBuf> {
        self.keep.ingest(staged, sha256_hex)?;
        Ok(self.path_for(sha256_hex))
    }

    /// [`ObjectStore::ingest`] for a [`NewFile`] (written by the caller and verified): it
    /// is linked into place when anonymous, renamed when named. An existing object of up to
    /// 64 KiB that holds exactly these bytes is kept instead ([`NewFile::put_at`]); any other
    /// is replaced, as by `ingest`.
    pub(crate) fn ingest_new(&self, file: NewFile, sha256_hex: &str) -> io::Result<PathBuf> {
        self.ingest_new_fresh(file, sha256_hex)?;
        Ok(self.path_for(sha256_hex))
    }

    /// [`ObjectStore::ingest_new`], saying whether the store had no such object before
    /// (`true`) or the new copy replaced it (`false`).
    pub(crate) fn ingest_new_fresh(&self, file: NewFile, sha256_hex: &str) -> io::Result<bool> {
        self.keep.ingest_new(file, sha256_hex)
    }

    /// Flush everything written to the file system holding the mirror (data and directory
    /// entries) — one call per batch instead of one fsync per file. The objects written before
    /// it are then let go of from the page cache ([`Unsynced`]). (In a bucket, nothing: an
    /// upload is durable when the bucket has answered it.)
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.keep.sync()
    }

    /// The error of a failure `e` to take in (or remove) the object `sha256_hex` while doing
    /// `what`: naming its path, or the bucket with its words.
    pub(crate) fn fault(&self, what: &'static str, sha256_hex: &str, e: io::Error) -> StoreError {
        self.keep.fault(what, sha256_hex, e)
    }

    /// The error that stops a run when the store refuses writes (`message` says which): every
    /// other resource would be refused the same way.
    pub(crate) fn refused(&self, message: String) -> StoreError {
        self.keep.refused(message)
    }

    /// Whether a failure to take in one object says that every other would fail the same way
    /// (beyond what a full or read-only file system says, which the caller tells): a bucket
    /// that refuses an upload, cannot be reached or keeps failing, unless the trouble is this
    /// object's own (`InvalidData`: other bytes under its name).
    pub(crate) fn fails_every_ingest(&self, e: &io::Error) -> bool {
        self.keep.fails_every_ingest(e)
    }

    /// Remove an object this run stored and no catalog row names (a run that rolled back).
    pub(crate) fn remove_unreferenced(&self, sha256_hex: &str) -> io::Result<()> {
        self.keep.remove(sha256_hex)
    }

    /// Whether the store holds anything under `objects/` (a new mirror wants a store of its
    /// own: its audit and repair take everything there for its own).
    pub(crate) fn holds_any(&self) -> Result<bool, StoreError> {
        self.keep.holds_any()
    }

    /// For many stats by sha256 ([`ObjectStat::metadata`]).
    pub(crate) fn stat(&self) -> ObjectStat {
        self.keep.stat()
    }

    /// Move the object aside into run `aside.run`'s quarantine with its record (the folder's
    /// `quarantine/run-N/`, or the bucket's `PREFIX/quarantine/run-N/`: copied there, then
    /// removed), if the store has one under that name: never deleted without a copy. Where it
    /// went, to put it back ([`ObjectStore::unquarantine`]).
    pub(crate) fn quarantine_object(
        &self,
        sha256_hex: &str,
        aside: &Aside<'_>,
    ) -> Result<Option<Quarantined>, StoreError> {
        self.keep.quarantine_object(sha256_hex, aside)
    }

    /// Move the stray entry `name` (relative to the mirror, `objects/...`, as a walk found it:
    /// a file or a folder) aside as [`ObjectStore::quarantine_object`] does; `None` when it is
    /// neither a file nor a folder (any more).
    pub(crate) fn quarantine_stray(
        &self,
        name: &str,
        aside: &Aside<'_>,
    ) -> Result<Option<Moved>, StoreError> {
        self.keep.quarantine_stray(name, aside)
    }

    /// Put an object moved aside back in its place (best effort: a repair whose new bytes did
    /// not go in leaves nothing half done).
    pub(crate) fn unquarantine(&self, kept: &Quarantined, sha256_hex: &str) {
        self.keep.unquarantine(kept, sha256_hex)
    }

    /// "the damaged file is in quarantine/run-N/", or where the bucket keeps them.
    pub(crate) fn quarantined_in(&self, run: i64) -> String {
        self.keep.quarantined_in(run)
    }

    /// What a run that writes holds besides the mirror folder's lock, when the objects may be
    /// written from elsewhere too: a bucket mirror's lease (one writer across machines), after
    /// proving that this folder's catalog is the newest. `None` for the mirror folder.
    pub(crate) fn lease(
        &self,
        mirror: &Path,
        command: &str,
    ) -> Result<Option<Lease>, LeaseRefused> {
        self.keep.lease(mirror, command)
    }

    /// Every entry of the store in name order, in bounded memory (one folder listing at a
    /// time): placed objects come in strictly increasing name order, so a caller can
    /// merge-join them with a sorted list of referenced digests. Entries that are not where an
    /// object belongs (files beside `sha256/` or in it, folders at the
    /// object level) are visited too, with `placed == false` (except that a folder in an
    /// object's place keeps `placed` true: it occupies that object's name). A missing store
    /// visits nothing.
    pub(crate) fn visit_sorted(
        &self,
        mut f: impl FnMut(Visited<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.keep.visit(None, &mut f)
    }

    /// [`Self::visit_sorted`], the fan-out folders listed and every placed entry's metadata
    /// taken ([`Visited::metadata`]) on another thread, a folder or two ahead: those system
    /// calls are most of a walk, and they run beside what `f` does with the entries. (One
    /// thread: two, on two cores, made an audit slower, taking the cores from the rest.)
    pub(crate) fn visit_sorted_measured(
        &self,
        mut f: impl FnMut(Visited<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.keep.visit(Some(&|_| true), &mut f)
    }

    /// [`Self::visit_sorted_measured`], metadata taken only in the fan-out folders `measure`
    /// names (`"00"` to `"ff"`); the others are only listed (ahead, on the same thread), which
    /// reads no object's inode.
    pub(crate) fn visit_sorted_measuring(
        &self,
        measure: &(dyn Fn(&str) -> bool + Sync),
        mut f: impl FnMut(Visited<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.keep.visit(Some(measure), &mut f)
    }

    #[cfg(test)]
    /// Every object file under `objects/sha256`, as (sha256 hex as named, path). Names that are
    /// not 64 hex digits are returned too (a stray file is a finding for audit).
    pub(crate) fn walk(&self) -> io::Result<Vec<(String, PathBuf)>> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.join("sha256")];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir)? {
                let entry = entry?;
                let ft = entry.file_type()?;
                let path = entry.path();
                if ft.is_dir() {
                    stack.push(path);
                } else {
                    out.push((entry.file_name().to_string_lossy().into_owned(), path));
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

/// The objects in the mirror folder, `MIRROR/objects/sha256/ab/<sha256>`.
#[derive(Debug)]
struct InFolder {
    /// `mirror/objects`.
    root: PathBuf,
    /// The fan-out folders known to exist, so that each is made (or checked) once per run.
    made: [AtomicBool; 256],
    /// `objects/sha256`, open (Linux, a store opened for writing): new objects are linked in
    /// by `ab/<sha256>` from here, two path components instead of the whole mirror path.
    sha256_dir: Option<fs::File>,
    /// The objects written since the last [`ObjectStore::sync`], still open.
    unsynced: Unsynced,
}

impl InFolder {
    /// `root` (`mirror/objects`), its `sha256` folder created when missing, open for writing.
    fn open(root: PathBuf) -> io::Result<InFolder> {
        let sha256 = root.join("sha256");
        fs::create_dir_all(&sha256)?;
        let store = InFolder::at(root);
        #[cfg(target_os = "linux")]
        let store = {
            use std::os::unix::fs::OpenOptionsExt;
            let dir = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY)
                .open(&sha256)?;
            InFolder {
                sha256_dir: Some(dir),
                ..store
            }
        };
        Ok(store)
    }

    /// `root`, creating nothing.
    fn at(root: PathBuf) -> InFolder {
        InFolder {
            root,
            made: std::array::from_fn(|_| AtomicBool::new(false)),
            sha256_dir: None,
            unsynced: Unsynced::default(),
        }
    }

    fn path_for(&self, sha256_hex: &str) -> PathBuf {
        let mut path = self.root.clone();
        push_object(&mut path, sha256_hex);
        path
    }

    /// Where the object named `sha256_hex` goes, its folder made.
    fn place_for(&self, sha256_hex: &str) -> io::Result<PathBuf> {
        check_sha256(sha256_hex)?;
        let dest = self.path_for(sha256_hex);
        let fan = usize::from_str_radix(&sha256_hex[0..2], 16).expect("two hex digits");
        if !self.made[fan].load(Ordering::Relaxed) {
            fs::create_dir_all(dest.parent().expect("object path has a parent"))?;
            self.made[fan].store(true, Ordering::Relaxed);
        }
        Ok(dest)
    }

    /// `MIRROR/quarantine/run-N`.
    fn quarantine(&self, run: i64) -> PathBuf {
        let mirror = self.root.parent().unwrap_or(&self.root);
        mirror.join("quarantine").join(format!("run-{run}"))
    }
}

impl Keep for InFolder {
    fn describe(&self, sha256_hex: &str) -> String {
        ObjectStore::relative_path(sha256_hex)
    }

    fn read(
        &self,
        sha256_hex: &str,
        buf: &mut [u8],
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<bool> {
        let Some(mut file) = open_to_read(&self.path_for(sha256_hex))? else {
            return Ok(false);
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other(match meta.is_dir() {
                true => "a folder, not a file",
                false => "not a regular file",
            }));
        }
        loop {
            match io::Read::read(&mut file, buf) {
                Ok(0) => break,
                Ok(n) => sink(&buf[..n])?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        // Each object is read once: its pages are the next object's (an audit of a million
        // objects would otherwise fill the page cache with them, each page new to the run).
        let_go_of(&file);
        Ok(true)
    }

    fn open(&self, _sha256_hex: &str, path: &Path) -> io::Result<Option<fs::File>> {
        open_to_read(path)
    }

    fn local_file(&self, path: PathBuf) -> Option<PathBuf> {
        Some(path)
    }

    fn ingest(&self, staged: &Path, sha256_hex: &str) -> io::Result<()> {
        let dest = self.place_for(sha256_hex)?;
        make_read_only(staged)?;
        fs::rename(staged, &dest)
    }

    fn ingest_new(&self, file: NewFile, sha256_hex: &str) -> io::Result<bool> {
        let dest = self.place_for(sha256_hex)?;
        match &self.sha256_dir {
            Some(dir) => {
                let relative = format!("{}/{sha256_hex}", &sha256_hex[0..2]);
                let placed = file.put_within(dir, Path::new(&relative), &dest)?;
                if let Some(file) = placed.file {
                    self.unsynced.hold(file);
                }
                Ok(placed.fresh)
            }
            None => file.put_at(&dest),
        }
    }

    fn sync(&self) -> io::Result<()> {
        let written = self.unsynced.take();
        sync_filesystem(&self.root)?;
        let_go(written);
        Ok(())
    }

    fn fault(&self, what: &'static str, sha256_hex: &str, e: io::Error) -> StoreError {
        StoreError::io(what, &self.path_for(sha256_hex), e)
    }

    fn refused(&self, message: String) -> StoreError {
        StoreError::Unwritable {
            path: self.root.display().to_string(),
            message,
        }
    }

    fn fails_every_ingest(&self, _e: &io::Error) -> bool {
        // A full or read-only file system is told by the caller; anything else is this
        // object's own.
        false
    }

    fn remove(&self, sha256_hex: &str) -> io::Result<()> {
        match fs::remove_file(self.path_for(sha256_hex)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn holds_any(&self) -> Result<bool, StoreError> {
        match fs::read_dir(&self.root) {
            Ok(mut entries) => Ok(entries.next().is_some()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io("reading", &self.root, e)),
        }
    }

    fn stat(&self) -> ObjectStat {
        let stat = FolderStat {
            root: self.root.clone(),
            #[cfg(unix)]
            dir: {
                use std::os::unix::fs::OpenOptionsExt;
                fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECTORY)
                    .open(self.root.join("sha256"))
                    .ok()
            },
        };
        ObjectStat(Box::new(move |sha256_hex| stat.metadata(sha256_hex)))
    }

    fn visit(
        &self,
        measure: Option<&(dyn Fn(&str) -> bool + Sync)>,
        f: &mut dyn FnMut(Visited<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.visit_folder(measure, f)
    }

    fn quarantine_object(
        &self,
        sha256_hex: &str,
        aside: &Aside<'_>,
    ) -> Result<Option<Quarantined>, StoreError> {
        let path = self.path_for(sha256_hex);
        if !path.exists() {
            return Ok(None);
        }
        let name = ObjectStore::relative_path(sha256_hex);
        let kept = quarantine_file(&self.quarantine(aside.run), &path, &name, aside)?;
        Ok(Some(Quarantined::File(kept)))
    }

    fn quarantine_stray(&self, name: &str, aside: &Aside<'_>) -> Result<Option<Moved>, StoreError> {
        let path = self.root.parent().unwrap_or(&self.root).join(name);
        let what = match (path.is_file(), path.is_dir()) {
            (true, _) => "a file no version names",
            (_, true) => "a folder where none belongs",
            _ => return Ok(None),
        };
        quarantine_file(&self.quarantine(aside.run), &path, name, aside)?;
        Ok(Some(Moved {
            what,
            to: format!("quarantine/run-{}/", aside.run),
        }))
    }

    fn unquarantine(&self, kept: &Quarantined, sha256_hex: &str) {
        let Quarantined::File(kept) = kept else {
            return;
        };
        if fs::rename(kept, self.path_for(sha256_hex)).is_ok() {
            let _ = fs::remove_file(record_beside(kept));
        }
    }

    fn quarantined_in(&self, run: i64) -> String {
        format!("the damaged file is in quarantine/run-{run}/")
    }

    fn lease(&self, _mirror: &Path, _command: &str) -> Result<Option<Lease>, LeaseRefused> {
        // The mirror folder's lock is the only one.
        Ok(None)
    }
}

/// Move the file (or folder) at `path`, `name` relative to the mirror, into `quarantine` with
/// its record (`NAME.json`) beside it, first: on a full disk the record is what fails, and
/// then nothing has moved. Where it went.
fn quarantine_file(
    quarantine: &Path,
    path: &Path,
    name: &str,
    aside: &Aside<'_>,
) -> Result<PathBuf, StoreError> {
    fs::create_dir_all(quarantine).map_err(|e| StoreError::io("creating", quarantine, e))?;
    let file_name = Path::new(name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let mut dest = quarantine.join(&file_name);
    let mut n = 1;
    while dest.exists() {
        dest = quarantine.join(format!("{file_name}.{n}"));
        n += 1;
    }
    let json = record_beside(&dest);
    if let Err(e) = fs::write(&json, aside.record(name)) {
        let _ = fs::remove_file(&json);
        return Err(StoreError::io("writing", &json, e));
    }
    if let Err(e) = fs::rename(path, &dest) {
        let _ = fs::remove_file(&json);
        return Err(StoreError::io("moving to quarantine", path, e));
    }
    Ok(dest)
}

/// `NAME.json` beside `NAME`: the record of what was moved aside.
fn record_beside(kept: &Path) -> PathBuf {
    kept.with_file_name(format!(
        "{}.json",
        kept.file_name().unwrap_or_default().to_string_lossy()
    ))
}

impl Aside<'_> {
    /// The record, as JSON text (`was`: where the object was, for the reader).
    fn record(&self, was: &str) -> String {
        let record = serde_json::json!({
            "was": was,
            "found": self.found,
            "expected_sha256": self.expected_sha256,
            "actual": self.actual,
            "run": self.run,
            "moved_at": jiff::Timestamp::now().to_string(),
        });
        serde_json::to_string_pretty(&record).expect("json") + "\n"
    }
}

/// `InvalidInput` unless `sha256_hex` is 64 lower-case hex digits: no name is made of anything
/// else.
fn check_sha256(sha256_hex: &str) -> io::Result<()> {
    match is_sha256_hex(sha256_hex) {
        true => Ok(()),
        false => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a sha256: {sha256_hex:?}"),
        )),
    }
}

/// One entry met by [`ObjectStore::visit_sorted`].
#[derive(Debug)]
pub struct Visited<'a> {
    /// The entry's file name.
    pub name: &'a str,
    /// The folder it is in.
    folder: In<'a>,
    /// True when the entry sits where an object of that name belongs
    /// (`sha256/<2 hex>/<64 hex>`); anything else is never an object.
    pub placed: bool,
    /// True when the folder's listing says the entry is a regular file (not a link, a
    /// folder or anything else): known without reading its inode.
    pub is_file: bool,
    /// Its metadata, when taken ahead ([`ObjectStore::visit_sorted_measured`]).
    measured: Option<io::Result<ObjectMeta>>,
}

/// Where a visited entry is.
#[derive(Debug, Clone, Copy)]
enum In<'a> {
    /// A folder of the mirror's store.
    Folder(&'a Folder),
    /// A bucket's listing: the entry's folder as a path in the mirror (for messages), and
    /// what the listing said of it.
    Bucket(&'a Path, ObjectMeta),
}

impl Visited<'_> {
    /// Its path; for an object in a bucket, where it would be in the mirror folder (as
    /// `objects/...` it names the key under the bucket's prefix).
    pub(crate) fn path(&self) -> PathBuf {
        match self.folder {
            In::Folder(folder) => folder.path.join(self.name),
            In::Bucket(path, _) => path.join(self.name),
        }
    }

    /// `fs::metadata` of the entry (following a symbolic link), resolving only its name; or
    /// what it was when taken ahead (once); in a bucket, what its listing said.
    pub(crate) fn metadata(&mut self) -> io::Result<ObjectMeta> {
        match (self.measured.take(), self.folder) {
            (Some(m), _) => m,
            (None, In::Folder(folder)) => folder.metadata(self.name),
            (None, In::Bucket(_, meta)) => Ok(meta),
        }
    }
}

/// A folder's entries sorted by name, the names in one buffer: a folder of a large store
/// holds thousands, and a `String` each was an allocation and a free per object of a walk.
#[derive(Debug, Default)]
struct Listing {
    names: String,
    /// Sorted by name, once sorted.
    entries: Vec<Entry>,
}

/// (the name's first eight bytes, where it is in `names`, what it is without following a
/// link).
type Entry = (u64, std::ops::Range<usize>, Kind);

/// What a folder's listing says an entry is (`d_type`), without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Folder,
    File,
    Other,
}

impl Listing {
    fn push(&mut self, name: &str, kind: Kind) {
        let start = self.names.len();
        self.names.push_str(name);
        // Zero-padded: a name has no NUL, so the heads order as the names do (but for ties).
        let mut head = [0u8; 8];
        let n = name.len().min(8);
        head[..n].copy_from_slice(&name.as_bytes()[..n]);
        self.entries
            .push((u64::from_be_bytes(head), start..self.names.len(), kind));
    }

    /// How two entries order: by the name's head, then the whole name.
    fn order(&self, (a, ar, _): &Entry, (b, br, _): &Entry) -> std::cmp::Ordering {
        a.cmp(b)
            .then_with(|| self.names[ar.clone()].cmp(&self.names[br.clone()]))
    }

    fn sort(&mut self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|a, b| self.order(a, b));
        self.entries = entries;
    }

    /// Sort, and `with` (one item per entry, in the entries' present order) along with them.
    fn sort_with<T>(&mut self, with: Vec<T>) -> Vec<T> {
        debug_assert_eq!(with.len(), self.entries.len());
        let mut both: Vec<_> = std::mem::take(&mut self.entries)
            .into_iter()
            .zip(with)
            .collect();
        both.sort_unstable_by(|(a, _), (b, _)| self.order(a, b));
        let (entries, with) = both.into_iter().unzip();
        self.entries = entries;
        with
    }

    /// (name, is a folder), in name order once sorted.
    fn iter(&self) -> impl Iterator<Item = (&str, bool)> {
        self.kinds()
            .map(|(name, kind)| (name, kind == Kind::Folder))
    }

    /// (name, what it is), in name order once sorted.
    fn kinds(&self) -> impl Iterator<Item = (&str, Kind)> {
        self.entries
            .iter()
            .map(|(_, r, kind)| (&self.names[r.clone()], *kind))
    }
}

/// A folder of the store being walked: listed, and its entries stat'ed, relative to the open
/// folder on Linux (`openat`, `readdir`, `fstatat`: one name resolved per call instead of the
/// whole mirror path, a million times in a walk), by path elsewhere.
#[derive(Debug)]
struct Folder {
    path: PathBuf,
    #[cfg(target_os = "linux")]
    dir: at::Dir,
}

impl Folder {
    fn open(path: PathBuf) -> io::Result<Folder> {
        Ok(Folder {
            #[cfg(target_os = "linux")]
            dir: at::Dir::open(&path)?,
            path,
        })
    }

    fn child(&self, name: &str) -> io::Result<Folder> {
        Ok(Folder {
            #[cfg(target_os = "linux")]
            dir: self.dir.open_in(name)?,
            path: self.path.join(name),
        })
    }

    /// The entries, sorted by name.
    fn sorted(&mut self) -> io::Result<Listing> {
        let mut out = self.listed()?;
        out.sort();
        Ok(out)
    }

    /// The entries in the order the folder gives them.
    fn listed(&mut self) -> io::Result<Listing> {
        let mut out = Listing::default();
        #[cfg(target_os = "linux")]
        self.dir.entries(&mut out)?;
        #[cfg(not(target_os = "linux"))]
        for entry in fs::read_dir(&self.path)? {
            let entry = entry?;
            let t = entry.file_type()?;
            let kind = match (t.is_dir(), t.is_file()) {
                (true, _) => Kind::Folder,
                (_, true) => Kind::File,
                _ => Kind::Other,
            };
            out.push(&entry.file_name().to_string_lossy(), kind);
        }
        Ok(out)
    }

    fn metadata(&self, name: &str) -> io::Result<ObjectMeta> {
        #[cfg(target_os = "linux")]
        return self.dir.metadata(name);
        #[cfg(not(target_os = "linux"))]
        {
            let m = fs::metadata(self.path.join(name))?;
            Ok(ObjectMeta {
                is_file: m.is_file(),
                is_dir: m.is_dir(),
                len: m.len(),
            })
        }
    }
}

#[cfg(target_os = "linux")]
mod at {
    use super::{with_c_name, Kind, Listing, ObjectMeta};
    use std::ffi::CStr;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr::NonNull;

    /// An open folder (`fdopendir` of an `openat`), closed on drop.
    pub struct Dir(NonNull<libc::DIR>);

    // SAFETY: a DIR stream may be used from any thread, one at a time: reading it
    // (`entries`) takes `&mut self`, and what `&self` allows (its descriptor, for `openat`
    // and `fstatat`) only reads the stream, as system calls any thread may make at once.
    unsafe impl Send for Dir {}
    unsafe impl Sync for Dir {}

    impl std::fmt::Debug for Dir {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Dir")
        }
    }

    impl Dir {
        pub(crate) fn open(path: &Path) -> io::Result<Dir> {
            with_c_name(path.as_os_str().as_bytes(), |c| {
                Dir::open_at(libc::AT_FDCWD, c)
            })
        }

        pub(crate) fn open_in(&self, name: &str) -> io::Result<Dir> {
            with_c_name(name.as_bytes(), |c| Dir::open_at(self.fd(), c))
        }

        fn open_at(at: libc::c_int, name: &CStr) -> io::Result<Dir> {
            // SAFETY: a NUL-terminated name; the descriptor belongs to the DIR once opened.
            let fd = unsafe {
                libc::openat(
                    at,
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` is an open folder descriptor nobody else owns.
            match NonNull::new(unsafe { libc::fdopendir(fd) }) {
                Some(dir) => Ok(Dir(dir)),
                None => {
                    let e = io::Error::last_os_error();
                    // SAFETY: fdopendir failed, so `fd` is still ours to close.
                    unsafe { libc::close(fd) };
                    Err(e)
                }
            }
        }

        fn fd(&self) -> libc::c_int {
            // SAFETY: `self.0` is an open DIR.
            unsafe { libc::dirfd(self.0.as_ptr()) }
        }

        fn stat(&self, name: &CStr, flags: libc::c_int) -> io::Result<libc::stat> {
            // SAFETY: a NUL-terminated name and a plain C struct for fstatat to fill in.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            let rc = unsafe { libc::fstatat(self.fd(), name.as_ptr(), &mut st, flags) };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(st)
        }

        /// Every entry but `.` and `..`, into `out`: (name, what it is without following a
        /// link), as `fs::read_dir` and `DirEntry::file_type` give them.
        pub(crate) fn entries(&mut self, out: &mut Listing) -> io::Result<()> {
            loop {
                // SAFETY: errno is this thread's; readdir reads the open DIR, and its entry
                // stays valid until the next readdir on it.
                unsafe { *libc::__errno_location() = 0 };
                let entry = unsafe { libc::readdir(self.0.as_ptr()) };
                if entry.is_null() {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() == Some(0) {
                        return Ok(());
                    }
                    return Err(e);
                }
                let (name, kind) =
                    unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()), (*entry).d_type) };
                let bytes = name.to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                let kind = match kind {
                    libc::DT_DIR => Kind::Folder,
                    libc::DT_REG => Kind::File,
                    // A file system that does not fill in `d_type`: one stat, without
                    // following a link.
                    libc::DT_UNKNOWN => {
                        match self.stat(name, libc::AT_SYMLINK_NOFOLLOW)?.st_mode & libc::S_IFMT {
                            libc::S_IFDIR => Kind::Folder,
                            libc::S_IFREG => Kind::File,
                            _ => Kind::Other,
                        }
                    }
                    _ => Kind::Other,
                };
                // `from_utf8` first: its ASCII path is much quicker than the lossy one's.
                match std::str::from_utf8(bytes) {
                    Ok(name) => out.push(name, kind),
                    Err(_) => out.push(&String::from_utf8_lossy(bytes), kind),
                }
            }
        }

        /// `fs::metadata` of an entry (following a symbolic link).
        pub(crate) fn metadata(&self, name: &str) -> io::Result<ObjectMeta> {
            let st = with_c_name(name.as_bytes(), |c| self.stat(c, 0))?;
            let kind = st.st_mode & libc::S_IFMT;
            Ok(ObjectMeta {
                is_file: kind == libc::S_IFREG,
                is_dir: kind == libc::S_IFDIR,
                len: st.st_size as u64,
            })
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            // SAFETY: `self.0` is an open DIR, closed once.
            unsafe { libc::closedir(self.0.as_ptr()) };
        }
    }
}

/// What a stat of an object says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectMeta {
    pub is_file: bool,
    pub is_dir: bool,
    pub len: u64,
}

/// `sha256/ab/<sha256>` onto the objects' folder.
fn push_object(objects: &mut PathBuf, sha256_hex: &str) {
    debug_assert!(is_sha256_hex(sha256_hex));
    objects.push("sha256");
    objects.push(sha256_hex.get(0..2).unwrap_or_default());
    objects.push(sha256_hex);
}

/// An object's name in the `objects/sha256` folder, `ab/<64 hex>`, for the `*at` calls
/// relative to it (`sha256_hex` is 64 hex digits).
pub(crate) fn name_in_folder(sha256_hex: &str) -> [u8; 67] {
    let mut name = [0u8; 67];
    name[0..2].copy_from_slice(&sha256_hex.as_bytes()[0..2]);
    name[2] = b'/';
    name[3..].copy_from_slice(sha256_hex.as_bytes());
    name
}

/// `name` as a C string, on the stack when it fits (file names always do).
#[cfg(unix)]
pub(crate) fn with_c_name<T>(
    name: &[u8],
    f: impl FnOnce(&std::ffi::CStr) -> io::Result<T>,
) -> io::Result<T> {
    let mut buf = [0u8; 256];
    if name.len() < buf.len() && !name.contains(&0) {
        buf[..name.len()].copy_from_slice(name);
        let c = std::ffi::CStr::from_bytes_until_nul(&buf).expect("NUL-terminated");
        return f(c);
    }
    let c =
        std::ffi::CString::new(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    f(&c)
}

/// Stats objects by sha256, as `fs::metadata` of [`ObjectStore::path_for`] does (in a bucket,
/// by a `HEAD` of its key).
pub struct ObjectStat(Box<StatBy>);

/// A metadata lookup by sha256.
type StatBy = dyn Fn(&str) -> io::Result<ObjectMeta> + Send + Sync;

impl std::fmt::Debug for ObjectStat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectStat")
    }
}

impl ObjectStat {
    pub(crate) fn metadata(&self, sha256_hex: &str) -> io::Result<ObjectMeta> {
        (self.0)(sha256_hex)
    }
}

/// [`ObjectStat`] in the mirror folder. On Unix the name is resolved relative to the open
/// `objects/sha256` folder: two path components instead of the whole mirror path, which is
/// most of the cost of the million stats of an audit at `--level size`.
struct FolderStat {
    /// `mirror/objects`.
    root: PathBuf,
    #[cfg(unix)]
    dir: Option<fs::File>,
}

impl FolderStat {
    fn metadata(&self, sha256_hex: &str) -> io::Result<ObjectMeta> {
        #[cfg(unix)]
        if let (Some(dir), true) = (&self.dir, is_sha256_hex(sha256_hex)) {
            use std::os::fd::AsRawFd;
            // SAFETY: a NUL-terminated name, `st` a plain C struct fstatat fills in.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            with_c_name(&name_in_folder(sha256_hex), |name| {
                match unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, 0) } {
                    0 => Ok(()),
                    _ => Err(io::Error::last_os_error()),
                }
            })?;
            let kind = st.st_mode & libc::S_IFMT;
            return Ok(ObjectMeta {
                is_file: kind == libc::S_IFREG,
                is_dir: kind == libc::S_IFDIR,
                len: st.st_size as u64,
            });
        }
        let mut path = self.root.clone();
        push_object(&mut path, sha256_hex);
        let m = fs::metadata(path)?;
        Ok(ObjectMeta {
            is_file: m.is_file(),
            is_dir: m.is_dir(),
            len: m.len(),
        })
    }
}

impl InFolder {
    /// The walk ([`ObjectStore::visit_sorted`]); `measure`: `None` lists each fan-out folder
    /// when it is reached, `Some` lists them ahead on another thread and takes the metadata of
    /// the placed entries of those it names.
    fn visit_folder(
        &self,
        measure: Option<&(dyn Fn(&str) -> bool + Sync)>,
        f: &mut dyn FnMut(Visited<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        if !self.root.is_dir() {
            return Ok(());
        }
        let mut root = Folder::open(self.root.clone())?;
        for (name, kind) in root.sorted()?.kinds() {
            if name == "sha256" && kind == Kind::Folder {
                continue;
            }
            f(Visited {
                name,
                folder: In::Folder(&root),
                placed: false,
                is_file: kind == Kind::File,
                measured: None,
            })?;
        }
        if !self.root.join("sha256").is_dir() {
            return Ok(());
        }
        let mut top = root.child("sha256")?;
        let top_listing = top.sorted()?;
        let fans: Vec<&str> = top_listing
            .iter()
            .filter(|&(a, a_dir)| a_dir && is_fan(a))
            .map(|(a, _)| a)
            .collect();
        std::thread::scope(|sc| {
            let top = &top;
            // The fan-out folders, listed (and measured) in order: here, or ahead on a thread
            // (which stops at its next send once leaving early drops the receiver).
            let ahead = measure.map(|measure| {
                let (tx, rx) = crossbeam_channel::bounded(1);
                let fans = &fans;
                sc.spawn(move || {
                    for a in fans {
                        if tx.send(Fan::read(top, a, measure(a))).is_err() {
                            return;
                        }
                    }
                });
                rx
            });
            let mut fans = fans.iter();
            let mut next_fan = || {
                let a = fans.next().expect("a fan-out folder");
                match &ahead {
                    Some(rx) => rx.recv().expect("a listing for every folder"),
                    None => Fan::read(top, a, false),
                }
            };
            for (a, a_kind) in top_listing.kinds() {
                if !(a_kind == Kind::Folder && is_fan(a)) {
                    f(Visited {
                        name: a,
                        folder: In::Folder(top),
                        placed: false,
                        is_file: a_kind == Kind::File,
                        measured: None,
                    })?;
                    continue;
                }
                let Fan {
                    folder,
                    listing,
                    measured,
                } = next_fan()?;
                let mut measured = measured.into_iter();
                for (name, kind) in listing.kinds() {
                    let placed = placed_in(a, name);
                    f(Visited {
                        name,
                        folder: In::Folder(&folder),
                        placed,
                        is_file: kind == Kind::File,
                        measured: if placed { measured.next() } else { None },
                    })?;
                }
            }
            Ok(())
        })
    }
}

/// A fan-out folder of the store, listed, and (when asked) the metadata of its placed entries
/// taken, in the listing's order.
struct Fan {
    folder: Folder,
    listing: Listing,
    measured: Vec<io::Result<ObjectMeta>>,
}

impl Fan {
    fn read(top: &Folder, a: &str, measure: bool) -> io::Result<Fan> {
        let mut folder = top.child(a)?;
        if !measure {
            let listing = folder.sorted()?;
            return Ok(Fan {
                folder,
                listing,
                measured: Vec::new(),
            });
        }
        // Measured in the order the folder lists its entries, then sorted: that is the order
        // their inodes and cached entries were met in by whatever listed the folder before
        // (`du`, `find`, an earlier audit), and a million lookups took about 18% less CPU in
        // it than in name order on the benchmark machine.
        let mut listing = folder.listed()?;
        let metadata: Vec<_> = listing
            .iter()
            .map(|(name, _)| placed_in(a, name).then(|| folder.metadata(name)))
            .collect();
        let measured = listing.sort_with(metadata).into_iter().flatten().collect();
        Ok(Fan {
            folder,
            listing,
            measured,
        })
    }
}

/// A fan-out folder's name: two lower-case hex digits.
fn is_fan(name: &str) -> bool {
    name.len() == 2 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `name`, in the fan-out folder `fan`, sits where an object of that name belongs.
/// The walk and the metadata taken ahead of it must agree on this entry for entry.
fn placed_in(fan: &str, name: &str) -> bool {
    is_sha256_hex(name) && name[0..2] == *fan
}

pub(crate) fn is_sha256_hex(s: &str) -> bool {
    // Every byte looked at without an early exit (the compiler vectorises it): every entry of
    // a store walk is checked.
    s.len() == 64
        && s.bytes()
            .fold(true, |hex, b| hex & matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(unix)]
fn make_read_only(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // One chmod, no stat first: an object is never writable, whatever it was staged as.
    fs::set_permissions(path, fs::Permissions::from_mode(0o444))
}

#[cfg(not(unix))]
fn make_read_only(path: &Path) -> io::Result<()> {
    let mut perms = fs::metadata(path)?.permissions();
    perms.set_readonly(true);
    fs::set_permissions(path, perms)
}

/// Moves the objects of a two-level store (`sha256/ab/cd/<sha256>`, the layout before catalog
/// version 2) to `sha256/ab/<sha256>` and removes the emptied folders; anything else found
/// there (a stray file) is left where it is, for audit to report. Safe to repeat after a
/// crash: each move is a rename, and objects already moved are not looked at again. Returns
/// the number of objects moved; the caller syncs before recording the new layout.
pub(crate) fn migrate_two_level(mirror: &Path) -> io::Result<u64> {
    let top = mirror.join("objects").join("sha256");
    if !top.is_dir() {
        return Ok(0);
    }
    let mut moved = 0;
    for a in fs::read_dir(&top)? {
        let a = a?;
        let a_name = a.file_name().to_string_lossy().into_owned();
        if !(a.file_type()?.is_dir() && is_fan(&a_name)) {
            continue;
        }
        for b in fs::read_dir(a.path())? {
            let b = b?;
            let b_name = b.file_name().to_string_lossy().into_owned();
            if !(b.file_type()?.is_dir() && is_fan(&b_name)) {
                continue;
            }
            for entry in fs::read_dir(b.path())? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type()?.is_file()
                    && is_sha256_hex(&name)
                    && name[0..2] == a_name
                    && name[2..4] == b_name
                {
                    fs::rename(entry.path(), a.path().join(&name))?;
                    moved += 1;
                }
            }
            // Not empty (a stray file stays): kept for audit.
            let _ = fs::remove_dir(b.path());
        }
    }
    Ok(moved)
}

/// The objects written since the last [`ObjectStore::sync`], kept open so that once the sync
/// has made them durable their pages can be let go of (`POSIX_FADV_DONTNEED`, [`let_go`]). A
/// run writes each object once and does not read it again; left in the page cache, a
/// baseline of a million objects of 256 bytes would hold 4 GiB of it (a page each), pushing
/// out what the machine was using, and every new object would take a page never used
/// before: on a virtual machine that gives free memory back to its host, the first touch of
/// such a page costs more than writing the object (measured: `benches/RESULTS.md`, issue
/// 48). Let go of, each batch's pages are the next batch's. At most [`Unsynced::held_at_most`]
/// files are held open; past that, a file is closed as before and its pages stay cached.
#[derive(Debug, Default)]
struct Unsynced {
    files: std::sync::Mutex<Vec<fs::File>>,
}

impl Unsynced {
    fn hold(&self, file: fs::File) {
        let mut files = self
            .files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if files.len() < Unsynced::held_at_most() {
            files.push(file);
        }
    }

    fn take(&self) -> Vec<fs::File> {
        std::mem::take(
            &mut *self
                .files
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// An eighth of the open-files limit (as it stands when first asked; rsmirror raises it at
    /// start), at most 4,096: the rest is left to connections, held responses and the catalog.
    fn held_at_most() -> usize {
        static AT_MOST: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *AT_MOST.get_or_init(|| {
            #[cfg(unix)]
            {
                // SAFETY: getrlimit on a local, fully initialised struct.
                let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
                if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
                    return usize::try_from(limit.rlim_cur / 8)
                        .unwrap_or(usize::MAX)
                        .min(4096);
                }
            }
            0
        })
    }
}

/// Open an object to read it, `None` when there is no such file, without changing its access
/// time (`O_NOATIME`, Linux, where the files are this user's; else as usual): reading a
/// mirror, an audit above all, writes nothing, and with `relatime` the first read of each new
/// file would otherwise write its inode back, a million inode writes for an audit after a
/// baseline of a million objects.
pub(crate) fn open_to_read(path: &Path) -> io::Result<Option<fs::File>> {
    match open_without_atime(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn open_without_atime(path: &Path) -> io::Result<fs::File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Refused once (the files are another user's): not asked again.
        static REFUSED: AtomicBool = AtomicBool::new(false);
        if !REFUSED.load(Ordering::Relaxed) {
            match fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOATIME)
                .open(path)
            {
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                    REFUSED.store(true, Ordering::Relaxed)
                }
                other => return other,
            }
        }
    }
    fs::File::open(path)
}

/// Drop the cached pages of objects a sync has made durable, then close them.
fn let_go(files: Vec<fs::File>) {
    for file in files {
        let_go_of(&file);
    }
}

/// Drop the cached pages of an object that was read or written and is not needed again soon
/// (clean pages only: one not yet written out is kept), so that the next object read or
/// written takes them, rather than pages new to the run ([`Unsynced`]).
#[cfg(target_os = "linux")]
pub(crate) fn let_go_of(file: &fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise takes a valid open file descriptor, which `file` holds.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn let_go_of(_file: &fs::File) {}

/// For tests: how many of the file's pages are in the page cache (`mincore`), or `None` where
/// that cannot be told, or where cached pages are the file itself (tmpfs) and so never let go.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn cached_pages(path: &Path) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let file = fs::File::open(path).ok()?;
    // SAFETY: statfs, mmap, mincore and munmap on a file this function holds open, a local
    // struct and a vector of the length mincore writes (one byte a page).
    unsafe {
        let mut fs_info: libc::statfs = std::mem::zeroed();
        if libc::fstatfs(file.as_raw_fd(), &mut fs_info) != 0 || fs_info.f_type == libc::TMPFS_MAGIC
        {
            return None;
        }
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return Some(0);
        }
        let map = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if map == libc::MAP_FAILED {
            return None;
        }
        let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).ok()?;
        let mut vec = vec![0u8; len.div_ceil(page)];
        let rc = libc::mincore(map, len, vec.as_mut_ptr());
        libc::munmap(map, len);
        (rc == 0).then(|| vec.iter().filter(|b| *b & 1 == 1).count())
    }
}

#[cfg(target_os = "linux")]
fn sync_filesystem(path: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let dir = fs::File::open(path)?;
    // SAFETY: syncfs takes a valid open file descriptor, which `dir` holds for the call.
    let rc = unsafe { libc::syncfs(dir.as_raw_fd()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn sync_filesystem(_path: &Path) -> io::Result<()> {
    // SAFETY: sync() has no preconditions.
    unsafe { libc::sync() };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn objects_written_leave_the_page_cache_once_a_sync_made_them_durable() {
        let dir = tempfile::tempdir().unwrap();
        // The folder's own store, to see what it holds.
        let store = InFolder::open(dir.path().join("objects")).unwrap();
        let staging = dir.path().join("staging");
        fs::create_dir(&staging).unwrap();
        let mut placed = Vec::new();
        for i in 0..3u8 {
            // Two pages and a bit each.
            let bytes = vec![i; 9000];
            let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
            let mut f = NewFile::create(&staging).unwrap();
            f.write_all(&bytes).unwrap();
            assert!(store.ingest_new(f, &sha).unwrap());
            placed.push((store.path_for(&sha), bytes));
        }
        let Some(before) = cached_pages(&placed[0].0) else {
            eprintln!(
                "SKIPPED: {} is on a file system whose cached pages cannot be told or let go of",
                dir.path().display()
            );
            return;
        };
        assert!(before > 0, "a new object is in the page cache until synced");
        store.sync().unwrap();
        for (path, bytes) in &placed {
            assert_eq!(cached_pages(path), Some(0), "{}", path.display());
            assert_eq!(&fs::read(path).unwrap(), bytes);
        }
        // Nothing is held once synced: the next sync has nothing of these to let go of.
        assert!(store.unsynced.take().is_empty());
    }

    #[test]
    fn layout_is_the_documented_contract() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let sha = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";
        let staged = dir.path().join("x.part");
        fs::write(&staged, b"alpha\n").unwrap();
        let p = store.ingest(&staged, sha).unwrap();
        assert_eq!(p, dir.path().join("objects/sha256/b6").join(sha));
        assert_eq!(
            ObjectStore::relative_path(sha),
            format!("objects/sha256/b6/{sha}")
        );
        assert_eq!(fs::read(&p).unwrap(), b"alpha\n");
        assert!(!staged.exists());
        assert!(fs::metadata(&p).unwrap().permissions().readonly());
        store.sync().unwrap();
        assert_eq!(store.walk().unwrap().len(), 1);
        // Re-ingesting the same content replaces the object atomically.
        fs::write(&staged, b"alpha\n").unwrap();
        store.ingest(&staged, sha).unwrap();
        assert!(store.ingest(&staged, "../../etc/passwd").is_err());
    }

    #[test]
    fn a_new_file_is_linked_in_under_its_place_and_replaces_a_torn_copy() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let staging = dir.path().join("staging");
        fs::create_dir(&staging).unwrap();
        let sha = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";
        let new = |bytes: &[u8]| {
            let mut f = NewFile::create(&staging).unwrap();
            f.write_all(bytes).unwrap();
            f
        };
        let p = store.ingest_new(new(b"alpha\n"), sha).unwrap();
        assert_eq!(p, dir.path().join("objects/sha256/b6").join(sha));
        assert_eq!(fs::read(&p).unwrap(), b"alpha\n");
        assert!(fs::metadata(&p).unwrap().permissions().readonly());
        // A copy torn by an earlier crash is replaced, and nothing is left in staging.
        let other = "ff".repeat(32);
        let torn = dir.path().join("objects/sha256/ff").join(&other);
        fs::create_dir_all(torn.parent().unwrap()).unwrap();
        fs::write(&torn, b"to").unwrap();
        assert_eq!(store.ingest_new(new(b"whole\n"), &other).unwrap(), torn);
        assert_eq!(fs::read(&torn).unwrap(), b"whole\n");
        assert_eq!(fs::read_dir(&staging).unwrap().count(), 0);
        assert_eq!(store.walk().unwrap().len(), 2);
        // Not a sha256: no name is made from it.
        assert!(store.ingest_new(new(b"x"), "../../etc/passwd").is_err());
        assert_eq!(store.walk().unwrap().len(), 2);
    }

    /// A copy in place that holds the same bytes is kept (its inode stays: no rename frees it),
    /// by an anonymous and by a named new file alike, through a store opened for writing (the
    /// link made from its open folder) and one that is not (by whole path); a copy of other
    /// bytes of the same length, a shorter or a longer one, a writable one, a symbolic link,
    /// and one over 64 KiB are replaced. Exactly 64 KiB is still compared.
    #[cfg(unix)]
    #[test]
    fn a_new_file_of_the_same_bytes_leaves_the_object_in_place() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        type Make = fn(&Path) -> io::Result<NewFile>;
        let makes: [(&str, Make); 2] = [
            ("anonymous", NewFile::create),
            ("named", NewFile::create_named),
        ];
        let inode = |p: &Path| fs::symlink_metadata(p).unwrap().ino();
        let sha = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";
        for opened in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let store = if opened {
                ObjectStore::open(dir.path()).unwrap()
            } else {
                ObjectStore::at(dir.path())
            };
            let staging = dir.path().join("staging");
            fs::create_dir(&staging).unwrap();
            for (make_how, make) in makes {
                let how = format!("{make_how}, opened {opened}");
                let new = |bytes: &[u8]| {
                    let mut f = make(&staging).unwrap();
                    f.write_all(bytes).unwrap();
                    f
                };
                // Put `bytes` over a copy in place made by `before`; whether the copy stayed.
                let over = |before: &dyn Fn(&Path), bytes: &[u8], sha: &str| -> bool {
                    let p = store.path_for(sha);
                    if fs::symlink_metadata(&p).is_ok() {
                        fs::remove_file(&p).unwrap();
                    }
                    store.ingest_new_fresh(new(bytes), sha).unwrap();
                    before(&p);
                    let was = inode(&p);
                    let fresh = store.ingest_new_fresh(new(bytes), sha).unwrap();
                    assert!(!fresh, "{how}: something was in place");
                    let meta = fs::symlink_metadata(&p).unwrap();
                    assert!(meta.file_type().is_file(), "{how}");
                    assert!(meta.permissions().readonly(), "{how}");
                    assert_eq!(fs::read(&p).unwrap(), bytes, "{how}");
                    inode(&p) == was
                };
                let unchanged = |_: &Path| {};
                let replaced_by = |content: &'static [u8]| {
                    move |p: &Path| {
                        fs::remove_file(p).unwrap();
                        fs::write(p, content).unwrap();
                        fs::set_permissions(p, fs::Permissions::from_mode(0o444)).unwrap();
                    }
                };
                let alpha = b"alpha\n";
                assert!(
                    over(&unchanged, alpha, sha),
                    "{how}: the same bytes were replaced"
                );
                // A torn copy: zeros of the same length, shorter, longer.
                assert!(!over(&replaced_by(b"\0\0\0\0\0\0"), alpha, sha), "{how}");
                assert!(!over(&replaced_by(b"alp"), alpha, sha), "{how}");
                assert!(!over(&replaced_by(b"alpha\nbeta\n"), alpha, sha), "{how}");
                // The right bytes, but writable.
                let writable =
                    |p: &Path| fs::set_permissions(p, fs::Permissions::from_mode(0o644)).unwrap();
                assert!(!over(&writable, alpha, sha), "{how}");
                // A symbolic link to a read-only file of the right bytes.
                let elsewhere = dir.path().join(format!("elsewhere-{make_how}"));
                fs::write(&elsewhere, alpha).unwrap();
                fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o444)).unwrap();
                let link = |p: &Path| {
                    fs::remove_file(p).unwrap();
                    std::os::unix::fs::symlink(&elsewhere, p).unwrap();
                };
                assert!(!over(&link, alpha, sha), "{how}");
                // The size bound: 64 KiB compared and kept, one byte more replaced unread.
                let limit = vec![7u8; 64 * 1024];
                assert!(over(&unchanged, &limit, &"dd".repeat(32)), "{how}");
                let big = vec![7u8; 64 * 1024 + 1];
                assert!(!over(&unchanged, &big, &"ee".repeat(32)), "{how}");
                // Nothing is left in staging, whichever way each went.
                assert_eq!(fs::read_dir(&staging).unwrap().count(), 0, "{how}");
            }
        }
    }

    #[test]
    fn measured_ahead_the_walk_is_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        // Ten fan-out folders of five objects, each of its own length: the metadata taken in
        // the folder's order must still go with the right name once sorted.
        for i in 0..50u8 {
            let sha = format!(
                "{:02x}{:02x}{}",
                (i % 10).wrapping_mul(37),
                i,
                "0".repeat(60)
            );
            let staged = dir.path().join("x.part");
            fs::write(&staged, vec![b'x'; usize::from(i)]).unwrap();
            store.ingest(&staged, &sha).unwrap();
        }
        let top = dir.path().join("objects/sha256");
        fs::write(dir.path().join("objects/notes.txt"), b"x").unwrap();
        fs::write(top.join("7g"), b"x").unwrap();
        fs::write(top.join("25").join("misplaced"), b"x").unwrap();
        fs::create_dir(top.join("25").join(format!("25{}", "1".repeat(62)))).unwrap();
        let walk = |measured: bool| {
            let mut seen = Vec::new();
            let visit = |mut v: Visited<'_>| {
                let meta = v.metadata().map_err(|e| e.kind());
                seen.push((v.path(), v.placed, meta));
                Ok(())
            };
            match measured {
                true => store.visit_sorted_measured(visit),
                false => store.visit_sorted(visit),
            }
            .unwrap();
            seen
        };
        let plain = walk(false);
        assert_eq!(plain.len(), 50 + 4);
        assert_eq!(walk(true), plain);
    }

    #[test]
    fn a_listing_is_in_name_order() {
        let names = [
            "b",
            "ab",
            "a",
            "abcdefgh",
            "abcdefgi",
            "abcdefghi",
            "abcdefg",
            "é",
            "Z",
        ];
        let mut listing = Listing::default();
        for (i, n) in names.iter().enumerate() {
            listing.push(n, if i % 2 == 0 { Kind::Folder } else { Kind::File });
        }
        listing.sort();
        let mut want: Vec<(&str, bool)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, i % 2 == 0))
            .collect();
        want.sort_unstable();
        assert_eq!(listing.iter().collect::<Vec<_>>(), want);
    }

    #[test]
    fn a_two_level_store_is_moved_to_one_level_and_strays_stay() {
        let dir = tempfile::tempdir().unwrap();
        let sha = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";
        let old = dir.path().join("objects/sha256/b6/a9");
        fs::create_dir_all(&old).unwrap();
        fs::write(old.join(sha), b"alpha\n").unwrap();
        let stray_dir = dir.path().join("objects/sha256/00/00");
        fs::create_dir_all(&stray_dir).unwrap();
        fs::write(stray_dir.join("notes.txt"), b"x").unwrap();
        assert_eq!(migrate_two_level(dir.path()).unwrap(), 1);
        let store = ObjectStore::at(dir.path());
        assert_eq!(fs::read(store.path_for(sha)).unwrap(), b"alpha\n");
        assert!(!old.exists(), "the emptied folder is removed");
        assert!(stray_dir.join("notes.txt").exists(), "a stray file stays");
        // Again (as after a crash half-way): nothing left to move, nothing lost.
        assert_eq!(migrate_two_level(dir.path()).unwrap(), 0);
        assert_eq!(fs::read(store.path_for(sha)).unwrap(), b"alpha\n");
        let mut placed = Vec::new();
        store
            .visit_sorted(|v| {
                placed.push((v.name.to_string(), v.placed));
                Ok(())
            })
            .unwrap();
        assert_eq!(
            placed,
            vec![("00".to_string(), false), (sha.to_string(), true)]
        );
    }
}
