//! `export tree`: the state as plain files (`paths` says where each URL goes). Three walks of
//! the catalog in URI order, none holding the mirror in memory:
//!
//! 1. every URL's natural path; the paths and folders seen kept as 64-bit keys, so a clash (a
//!    file where a folder must be, a path taken twice) is found in bounded memory;
//! 2. with an earlier export in DEST, its map (`.rsmirror-export/map.tsv`, in URI order) merged
//!    with the new state: the files of URLs gone, or moved, are removed;
//! 3. every file placed (or kept, when the earlier export has the same bytes at the same
//!    path), its bytes checked against the catalog, and the new map written.

use crate::access::status::Vouch;
use crate::access::{
    each_state, each_state_uri, open_object_into, Filter, Point, Reader, VersionRow,
};
use crate::error::Error;
use crate::export::paths::{self, Natural};
use crate::export::{Link, Summary};
#[cfg(unix)]
use crate::store::objects::with_c_name;
use crate::store::objects::{self, ObjectStore};
use crate::store::StoreError;
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

/// What to walk.
pub struct Walk<'a> {
    pub reader: &'a Reader,
    pub mirror: &'a Path,
    /// The run whose state is exported (what the export's record names).
    pub point: Point,
    /// `point` is the newest run the walk's snapshot of the catalog holds: its states are the
    /// current ones, a quicker join (`Walk::states`).
    pub newest: bool,
    pub filter: Filter,
    pub strip: Option<&'a str>,
    /// No `%` in names (a BagIt bag: see `paths`).
    pub no_percent: bool,
    /// Top-level names the format keeps for itself (a ResourceSync export's documents).
    pub reserved: &'a [&'a str],
    /// The audit whose word a link (no bytes copied) takes for an object that has not changed
    /// since it (see [`Placer`]); None: every object is read.
    pub vouch: Option<&'a Vouch>,
}

impl Walk<'_> {
    /// The point to walk the states at: the same states as `point`'s.
    pub(crate) fn states(&self) -> Point {
        match self.newest {
            true => Point::NOW,
            false => self.point,
        }
    }
}

/// One file of the export as a format sees it once placed.
pub struct Placed<'a> {
    /// Relative to the tree's root, `/`-separated.
    pub path: &'a str,
    pub version: &'a VersionRow,
}

/// A format's hook, called for every file placed or kept, in URI order (BagIt's manifests).
pub type Each<'a> = &'a mut dyn FnMut(Placed<'_>) -> Result<(), Error>;

/// One line of the map: `path\turi\tsha256\tlength\tnotes\tencoding` (the content coding
/// the bytes are kept in, empty for none; a map written before it has five columns).
struct MapLine {
    path: String,
    uri: String,
    sha256: String,
    length: u64,
}

fn parse_map_line(line: &str) -> Option<MapLine> {
    let mut f = line.split('\t');
    Some(MapLine {
        path: f.next()?.to_string(),
        uri: f.next()?.to_string(),
        sha256: f.next()?.to_string(),
        length: f.next()?.parse().ok()?,
    })
}

/// The earlier export's map, read in step with a walk in URI order.
struct OldMap {
    lines: Option<io::Lines<io::BufReader<File>>>,
    next: Option<MapLine>,
}

impl OldMap {
    fn open(own: &Path, earlier: bool) -> Result<OldMap, StoreError> {
        let path = own.join("map.tsv");
        let lines = match (earlier, File::open(&path)) {
            (true, Ok(f)) => Some(io::BufReader::new(f).lines()),
            (_, Err(e)) if earlier && e.kind() != io::ErrorKind::NotFound => {
                return Err(StoreError::io("reading", &path, e))
            }
            _ => None,
        };
        let mut m = OldMap { lines, next: None };
        m.advance()?;
        Ok(m)
    }

    fn advance(&mut self) -> Result<(), StoreError> {
        self.next = None;
        if let Some(lines) = &mut self.lines {
            for line in lines.by_ref() {
                let line = line.map_err(|e| StoreError::io("reading", Path::new("map.tsv"), e))?;
                if let Some(m) = parse_map_line(&line) {
                    self.next = Some(m);
                    break;
                }
            }
        }
        Ok(())
    }

    /// The entries before `uri` (gone from the new state), then the one for `uri` if any.
    fn take_through(&mut self, uri: &str) -> Result<(Vec<MapLine>, Option<MapLine>), StoreError> {
        let mut before = Vec::new();
        while let Some(n) = &self.next {
            match n.uri.as_str().cmp(uri) {
                std::cmp::Ordering::Less => {
                    before.push(self.next.take().expect("peeked"));
                    self.advance()?;
                }
                std::cmp::Ordering::Equal => {
                    let same = self.next.take();
                    self.advance()?;
                    return Ok((before, same));
                }
                std::cmp::Ordering::Greater => break,
            }
        }
        Ok((before, None))
    }

    fn rest(&mut self) -> Result<Vec<MapLine>, StoreError> {
        let mut out = Vec::new();
        while let Some(n) = self.next.take() {
            out.push(n);
            self.advance()?;
        }
        Ok(out)
    }
}

/// Paths and folders seen, as keys, and the URLs that came second to a path.
pub struct Clashes {
    files: HashSet<u64>,
    folders: HashSet<u64>,
    second: HashSet<String>,
}

impl Clashes {
    fn find(walk: &Walk<'_>) -> Result<Clashes, Error> {
        let mut c = Clashes {
            files: HashSet::new(),
            folders: HashSet::new(),
            second: HashSet::new(),
        };
        // The export's own folder is taken at the top.
        c.files.insert(paths::key(paths::OWN));
        let mut namer = paths::Namer::default();
        // This URL's folder, `a/b/`, and the last URL's: in URI order most files share their
        // folder, whose folders are in the set already.
        let mut folder = String::new();
        let mut last = String::new();
        each_state_uri(walk.reader, walk.states(), &walk.filter, |uri| {
            let Some(n) = namer.natural(uri, walk.strip, walk.no_percent) else {
                return Ok(true);
            };
            let (name, folders) = n.parts.split_last().expect("a path has a name");
            folder.clear();
            for part in folders {
                folder.push_str(part);
                folder.push('/');
            }
            if folder != last {
                // Names hold no `/`: each one ends a folder on the way.
                for (end, _) in folder.match_indices('/') {
                    c.folders.insert(paths::key(&folder[..end]));
                }
                std::mem::swap(&mut folder, &mut last);
            }
            let file = &mut folder;
            file.clear();
            file.push_str(&last);
            file.push_str(name);
            if !c.files.insert(paths::key(file)) {
                c.second.insert(uri.to_string());
            }
            Ok(true)
        })?;
        Ok(c)
    }

    /// Where a URL goes once clashes are settled: its path, and why it is not just host and
    /// path (see [`Natural::notes`]).
    pub(crate) fn place(&self, uri: &str, n: Natural) -> (String, Vec<&'static str>) {
        let path = n.joined();
        let own_top = n.parts.len() == 1 && n.parts[0] == paths::OWN;
        if own_top || self.folders.contains(&paths::key(&path)) || self.second.contains(uri) {
            let moved = paths::moved_aside(&n, uri);
            (moved.joined(), moved.notes)
        } else {
            (path, n.notes)
        }
    }
}

/// Export the tree under `root` (DEST, or a bag's `data/`); `own` is DEST's
/// `.rsmirror-export/`. `each` sees every file in URI order.
pub(crate) fn export(
    walk: &Walk<'_>,
    root: &Path,
    own: &Path,
    link: Link,
    earlier: bool,
    summary: &mut Summary,
    mut each: Option<Each<'_>>,
) -> Result<Clashes, Error> {
    std::fs::create_dir_all(root).map_err(|e| StoreError::io("creating", root, e))?;
    let clashes = Clashes::find(walk)?;
    if let Some(top) = walk.reserved.iter().find(|r| {
        clashes.files.contains(&paths::key(r)) || clashes.folders.contains(&paths::key(r))
    }) {
        return Err(crate::error::UsageError(format!(
            "export: a resource would be written at {top} in DEST, where the export keeps its own \
             documents: give --strip a prefix that leaves it under its folder, or none"
        ))
        .into());
    }

    // Walk 2: the earlier export's files that the new state does not have at the same path.
    if earlier {
        let mut old = OldMap::open(own, true)?;
        let mut namer = paths::Namer::default();
        each_state_uri(walk.reader, walk.states(), &walk.filter, |uri| {
            let (gone, same) = old.take_through(uri)?;
            for g in gone {
                summary.removed += remove(root, &g.path)?;
            }
            if let (Some(same), Some(n)) = (same, namer.natural(uri, walk.strip, walk.no_percent)) {
                if clashes.place(uri, n).0 != same.path {
                    summary.removed += remove(root, &same.path)?;
                }
            }
            Ok(true)
        })?;
        for g in old.rest()? {
            summary.removed += remove(root, &g.path)?;
        }
    }

    // Walk 3: place every file and write the new map.
    let map_path = own.join("map.tsv");
    let new_map = own.join("map.tsv.new");
    let mut map = BufWriter::new(
        File::create(&new_map).map_err(|e| StoreError::io("creating", &new_map, e))?,
    );
    let mut old = OldMap::open(own, earlier)?;
    let pool = Pool::new(walk, root, link, !earlier)?;
    // The paths placed, as keys: walk 4 removes whatever else is under `root`.
    let mut placed: Vec<u64> = Vec::new();
    std::thread::scope(|sc| -> Result<(), Error> {
        let mut pool = pool.start(sc);
        let mut namer = paths::Namer::default();
        each_state(walk.reader, walk.states(), &walk.filter, |uri, _, v| {
            let Some(n) = namer.natural(uri, walk.strip, walk.no_percent) else {
                return Ok(true);
            };
            let (path, notes) = clashes.place(uri, n);
            let (_, before) = old.take_through(uri)?;
            let sha = v.sha256.as_deref().unwrap_or("");
            let length = v.length.unwrap_or(0).max(0) as u64;
            let unchanged = before.is_some_and(|b| {
                b.path == path
                    && b.sha256 == sha
                    && b.length == length
                    && std::fs::metadata(root.join(&b.path))
                        .is_ok_and(|m| m.is_file() && m.len() == length)
            });
            if unchanged {
                summary.kept += 1;
            } else {
                if !pool.send(uri, v, &path) {
                    // A worker failed: its error ends the walk (below).
                    return Ok(false);
                }
                summary.written += 1;
            }
            placed.push(paths::key(&path));
            summary.files += 1;
            summary.bytes += length;
            for note in &notes {
                *summary.notes.entry((*note).to_string()).or_default() += 1;
            }
            let coding = v.encoding().unwrap_or("");
            writeln!(
                map,
                "{path}\t{uri}\t{sha}\t{length}\t{}\t{coding}",
                notes.join(",")
            )
            .map_err(|e| StoreError::io("writing", &new_map, e))?;
            if let Some(each) = each.as_mut() {
                each(Placed {
                    path: &path,
                    version: v,
                })?;
            }
            Ok(true)
        })?;
        summary.vouched += pool.finish()?;
        Ok(())
    })?;
    map.into_inner()
        .map_err(|e| StoreError::io("writing", &new_map, e.into_error()))
        .and_then(|f| {
            f.sync_all()
                .map_err(|e| StoreError::io("writing", &new_map, e))
        })?;
    std::fs::rename(&new_map, &map_path).map_err(|e| StoreError::io("writing", &map_path, e))?;

    // Walk 4: DEST holds exactly the exported state. What an export stopped midway placed that
    // no map names (a later one at another point would keep it), a temporary, a file put there
    // by hand: a bag with one file more than its manifest is invalid.
    placed.sort_unstable();
    let keep_top: Vec<&str> = walk.reserved.iter().copied().chain([paths::OWN]).collect();
    summary.removed += sweep_strays(root, &mut String::new(), &placed, &keep_top)?;
    Ok(clashes)
}

/// Remove every file under `dir` (at `rel` below the export's root) whose path is not among
/// `placed` (sorted keys), and the folders that leaves empty; `keep_top`: names at the top
/// that are not the tree's. How many files went.
fn sweep_strays(
    dir: &Path,
    rel: &mut String,
    placed: &[u64],
    keep_top: &[&str],
) -> Result<u64, Error> {
    let mut removed = 0;
    let entries = std::fs::read_dir(dir).map_err(|e| StoreError::io("reading", dir, e))?;
    for e in entries {
        let e = e.map_err(|e| StoreError::io("reading", dir, e))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if rel.is_empty() && keep_top.contains(&name.as_ref()) {
            continue;
        }
        let path = e.path();
        let len = rel.len();
        rel.push_str(&name);
        let kind = e
            .file_type()
            .map_err(|e| StoreError::io("reading", &path, e))?;
        if kind.is_dir() {
            rel.push('/');
            removed += sweep_strays(&path, rel, placed, keep_top)?;
            // Gone when nothing is left in it.
            let _ = std::fs::remove_dir(&path);
        } else if placed.binary_search(&paths::key(rel)).is_err() {
            std::fs::remove_file(&path).map_err(|e| StoreError::io("removing", &path, e))?;
            removed += 1;
        }
        rel.truncate(len);
    }
    Ok(removed)
}

/// Remove an earlier export's file, and the folders it leaves empty; 1 when a file went.
fn remove(root: &Path, path: &str) -> Result<u64, Error> {
    let full = root.join(path);
    match std::fs::remove_file(&full) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StoreError::io("removing", &full, e).into()),
    }
    let mut dir = full.parent();
    while let Some(d) = dir {
        if d == root || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(1)
}

/// One file for a worker to place.
struct Job {
    uri: String,
    version: VersionRow,
    path: String,
}

impl Job {
    /// Take another file's values, keeping the strings' memory: batches come back from the
    /// workers to be filled again, so the walk allocates nothing per file for them (and no
    /// thread frees what another allocated, which makes the threads wait on the allocator).
    fn refill(&mut self, uri: &str, v: &VersionRow, path: &str) {
        fn set(to: &mut String, from: &str) {
            to.clear();
            to.push_str(from);
        }
        fn set_opt(to: &mut Option<String>, from: Option<&str>) {
            match (to.as_mut(), from) {
                (Some(t), Some(f)) => set(t, f),
                (_, f) => *to = f.map(str::to_string),
            }
        }
        set(&mut self.uri, uri);
        set(&mut self.path, path);
        let d = &mut self.version;
        d.version = v.version;
        d.run = v.run;
        d.length = v.length;
        d.change = v.change;
        set_opt(&mut d.lastmod, v.lastmod.as_deref());
        set_opt(&mut d.sha256, v.sha256.as_deref());
        set_opt(&mut d.md5, v.md5.as_deref());
        set_opt(&mut d.media_type, v.media_type.as_deref());
        set_opt(&mut d.declared_encoding, v.declared_encoding.as_deref());
        set_opt(&mut d.content_encoding, v.content_encoding.as_deref());
    }
}

/// Places files on worker threads while the walk goes on: the walk reads the catalog and
/// works out every path (CPU), the workers make links and copies (system calls), so the two
/// overlap. A folder's files go to one worker, in URI order, the next folder to the next
/// worker (two workers making links in one folder at once wait on each other in the kernel);
/// the first failure stops the export.
struct Pool {
    placers: Vec<Placer>,
}

/// Files go to a worker in batches of this many (a channel's cost is per message).
const BATCH: usize = 64;

/// A started [`Pool`] within a thread scope.
struct Running<'scope> {
    /// Each worker's queue, its batch being filled and how many of the batch's jobs are.
    jobs: Vec<(crossbeam_channel::Sender<Vec<Job>>, Vec<Job>, usize)>,
    /// Batches the workers are done with, to fill again.
    done: crossbeam_channel::Receiver<Vec<Job>>,
    /// The folder of the last file handed out, and the worker it went to.
    folder: String,
    worker: usize,
    failed: std::sync::Arc<Failed>,
    /// Each returns how many files it linked on the audit's word.
    workers: Vec<std::thread::ScopedJoinHandle<'scope, u64>>,
}

/// The first failure of any worker.
#[derive(Default)]
struct Failed {
    any: std::sync::atomic::AtomicBool,
    first: std::sync::Mutex<Option<Error>>,
}

impl Pool {
    fn new(walk: &Walk<'_>, root: &Path, link: Link, direct: bool) -> Result<Pool, Error> {
        let objects = walk.reader.objects()?;
        // Two workers keep up with one walk; more only wait on the same folders.
        let n = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 2));
        let placers = (0..n)
            .map(|i| {
                let mut p = Placer::new((walk.mirror, objects), root, link, direct, walk.vouch);
                p.worker = i;
                p
            })
            .collect();
        Ok(Pool { placers })
    }

    fn start<'scope, 'env>(self, sc: &'scope std::thread::Scope<'scope, 'env>) -> Running<'scope> {
        let failed = std::sync::Arc::new(Failed::default());
        let mut jobs = Vec::new();
        let (done_tx, done) = crossbeam_channel::unbounded::<Vec<Job>>();
        let workers = self
            .placers
            .into_iter()
            .map(|mut placer| {
                let (tx, rx) = crossbeam_channel::bounded::<Vec<Job>>(16);
                jobs.push((tx, Vec::with_capacity(BATCH), 0));
                let failed = failed.clone();
                let done = done_tx.clone();
                sc.spawn(move || {
                    'batches: for batch in rx {
                        for job in &batch {
                            if let Err(e) = placer.place(&job.uri, &job.version, &job.path) {
                                let mut f = failed.first.lock().unwrap_or_else(|p| p.into_inner());
                                f.get_or_insert(e);
                                failed.any.store(true, std::sync::atomic::Ordering::Relaxed);
                                // The walk stops at its next file; nothing more is placed.
                                break 'batches;
                            }
                        }
                        // The walk has stopped when nobody takes it back.
                        let _ = done.send(batch);
                    }
                    placer.vouched
                })
            })
            .collect();
        Running {
            jobs,
            done,
            folder: String::new(),
            worker: 0,
            failed,
            workers,
        }
    }
}

impl Running<'_> {
    /// Hand a file to the workers; false once one of them failed.
    fn send(&mut self, uri: &str, v: &VersionRow, path: &str) -> bool {
        if self.failed.any.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        // Each new folder goes to the next worker in turn (files come in URI order: a
        // folder's files mostly together).
        let folder = path.rsplit_once('/').map_or("", |(f, _)| f);
        if folder != self.folder {
            self.folder.clear();
            self.folder.push_str(folder);
            self.worker = (self.worker + 1) % self.jobs.len();
        }
        let (tx, batch, filled) = &mut self.jobs[self.worker];
        match batch.get_mut(*filled) {
            Some(job) => job.refill(uri, v, path),
            None => batch.push(Job {
                uri: uri.to_string(),
                version: v.clone(),
                path: path.to_string(),
            }),
        }
        *filled += 1;
        if *filled < BATCH {
            return true;
        }
        *filled = 0;
        let next = self
            .done
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        // An error only when that worker stopped on a failure.
        tx.send(std::mem::replace(batch, next)).is_ok()
    }

    /// Wait for every file handed out: how many were linked on the audit's word, or the
    /// first failure.
    fn finish(mut self) -> Result<u64, Error> {
        for (tx, mut batch, filled) in self.jobs.drain(..) {
            batch.truncate(filled);
            if !batch.is_empty() {
                // A worker that stopped has its failure recorded: nothing is lost.
                let _ = tx.send(batch);
            }
        }
        let vouched = self
            .workers
            .drain(..)
            .map(|w| w.join().expect("a placing worker does not panic"))
            .sum();
        match self
            .failed
            .first
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            Some(e) => Err(e),
            None => Ok(vouched),
        }
    }
}

/// Puts files in place from the objects, checking the bytes: a copy is hashed as it is
/// written; a link (hard link or reflink: no bytes copied, the file is the object) reads the
/// object through, unless the last clean full audit ([`Vouch`]) re-hashed it and it has not
/// changed since: a state that arrived before that audit and was current at it, whose object
/// has the recorded length and was last modified before the audit began. Those are linked on
/// the audit's word (`export --verify` reads them too).
pub struct Placer {
    mirror: PathBuf,
    objects: ObjectStore,
    root: PathBuf,
    link: Link,
    /// Reflinks failed once: the file system makes none.
    no_reflink: bool,
    /// Hard links failed once (another file system): copies from then on.
    no_hard_link: bool,
    /// Files go straight to their names, made exclusively (nothing was there before: a first
    /// export); else under a temporary name, renamed over what is there.
    direct: bool,
    /// The folder made last (files come in URI order: most share their folder).
    made: PathBuf,
    /// `made` and the objects' folder, open, for links by name relative to them (Unix).
    made_dir: Option<File>,
    objects_dir: Option<File>,
    counter: u64,
    /// Which of a [`Pool`]'s workers (names its temporary files apart from the others').
    worker: usize,
    vouch: Option<Vouch>,
    /// Files linked on the audit's word.
    pub vouched: u64,
    buf: Vec<u8>,
    /// The file's and its object's paths, kept from file to file: nothing is allocated per
    /// file (two workers allocating and freeing per file wait on each other in the allocator).
    dest: PathBuf,
    object_path: PathBuf,
}

impl Placer {
    pub(crate) fn new(
        (mirror, objects): (&Path, &ObjectStore),
        root: &Path,
        link: Link,
        direct: bool,
        vouch: Option<&Vouch>,
    ) -> Placer {
        Placer {
            mirror: mirror.to_path_buf(),
            objects: objects.clone(),
            root: root.to_path_buf(),
            link,
            no_reflink: false,
            no_hard_link: false,
            direct,
            made: PathBuf::new(),
            made_dir: None,
            objects_dir: None,
            counter: 0,
            worker: 0,
            vouch: vouch.filter(|_| link != Link::Copy).cloned(),
            vouched: 0,
            buf: vec![0; crate::access::COPY_BUFFER],
            dest: PathBuf::new(),
            object_path: PathBuf::new(),
        }
    }

    /// Put the bytes of `v` at `path` under the root.
    pub(crate) fn place(&mut self, uri: &str, v: &VersionRow, path: &str) -> Result<(), Error> {
        crate::store::kill::point("export.between-files");
        let mut dest = std::mem::take(&mut self.dest);
        dest.as_mut_os_string().clear();
        dest.push(&self.root);
        dest.push(path);
        let result = self.place_at(uri, v, &dest);
        self.dest = dest;
        result
    }

    /// [`Placer::place`] at `dest`, the file's path under the root.
    fn place_at(&mut self, uri: &str, v: &VersionRow, dest: &Path) -> Result<(), Error> {
        let folder = dest.parent().unwrap_or(&self.root);
        if folder != self.made {
            std::fs::create_dir_all(folder).map_err(|e| StoreError::io("creating", folder, e))?;
            self.made = folder.to_path_buf();
            self.made_dir = None;
        }
        if self.direct {
            match self.write(uri, v, dest) {
                Ok(()) => return Ok(()),
                // Something is there after all: replace it the careful way.
                Err(Error::Store(StoreError::Io { source, .. }))
                    if source.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    let _ = std::fs::remove_file(dest);
                    return Err(e);
                }
            }
        }
        self.counter += 1;
        let tmp = self.made.join(format!(
            ".rsmirror-tmp-{}-{}-{}",
            std::process::id(),
            self.worker,
            self.counter
        ));
        let result = self.write(uri, v, &tmp).and_then(|()| {
            std::fs::rename(&tmp, dest)
                .map_err(|e| Error::from(StoreError::io("placing the file", dest, e)))
        });
        // A failure, or a rename onto a hard link of the same object (which does nothing),
        // leaves `tmp`.
        if result.is_err() || self.link != Link::Copy {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Write the state's bytes as a new file `to` (never replacing one).
    fn write(&mut self, uri: &str, v: &VersionRow, to: &Path) -> Result<(), Error> {
        let hard_first = self.link == Link::Hard
            || (self.link == Link::Auto && self.no_reflink && !self.no_hard_link);
        #[cfg(unix)]
        if hard_first {
            match self.link_vouched(v, to) {
                Ok(true) => {
                    self.vouched += 1;
                    return Ok(());
                }
                Ok(false) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(StoreError::io("hard-linking the object to", to, e).into());
                }
                // Anything else (another file system...): the careful way says what it is.
                Err(_) => {}
            }
        }
        // On Unix a hard link was tried on the audit's word just above.
        let vouched = match hard_first && cfg!(unix) {
            true => None,
            false => self.vouched_for(v),
        };
        if let (Some(object_path), true) = (&vouched, hard_first) {
            // No need to open the object: link it by name.
            match std::fs::hard_link(object_path, to) {
                Ok(()) => {
                    self.vouched += 1;
                    return Ok(());
                }
                // Another file system: the careful way below finds it again and copies.
                Err(e) if self.link == Link::Auto && e.kind() == io::ErrorKind::CrossesDevices => {}
                Err(e) => return Err(hard_link_failed(to, e)),
            }
        }
        let mut object_path = std::mem::take(&mut self.object_path);
        let result = self.write_object(uri, v, to, vouched.is_some(), &mut object_path);
        self.object_path = object_path;
        result
    }

    /// [`Placer::write`] from the object (its path written into `object_path`, for messages
    /// and links): a reflink, a hard link or a copy; `vouched`: the audit's word stands for
    /// reading it.
    fn write_object(
        &mut self,
        uri: &str,
        v: &VersionRow,
        to: &Path,
        vouched: bool,
        object_path: &mut PathBuf,
    ) -> Result<(), Error> {
        let mut object = match self.open_object_in_folder(v) {
            Some((object, sha)) => {
                ObjectStore::path_in_mirror(&self.mirror, sha, object_path);
                object
            }
            // The careful way says what is wrong.
            None => open_object_into(&self.objects, uri, v, object_path)?,
        };
        let object_path = &*object_path;
        if matches!(self.link, Link::Auto) && !self.no_reflink {
            match reflink(&object, to) {
                Ok(clone) => {
                    if vouched {
                        self.vouched += 1;
                    } else {
                        self.verify(&mut object, object_path, uri, v)?;
                    }
                    set_mtime(&clone, v);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(StoreError::io("creating", to, e).into());
                }
                Err(_) => {
                    let _ = std::fs::remove_file(to);
                    self.no_reflink = true;
                }
            }
        }
        if matches!(self.link, Link::Hard | Link::Auto) && !self.no_hard_link {
            if vouched {
                self.vouched += 1;
            } else {
                self.verify(&mut object, object_path, uri, v)?;
            }
            match std::fs::hard_link(object_path, to) {
                Ok(()) => return Ok(()),
                // Another file system: copies from here on (auto), or an error (hard).
                Err(e) if self.link == Link::Auto && e.kind() == io::ErrorKind::CrossesDevices => {
                    self.no_hard_link = true;
                    object = File::open(object_path)
                        .map_err(|e| StoreError::io("reading the object", object_path, e))?;
                }
                Err(e) => return Err(hard_link_failed(to, e)),
            }
        }
        let mut out = self.create_new(to)?;
        let got =
            crate::access::copy_hashing(&mut object, &mut out, &mut self.buf, object_path, to)?;
        crate::access::check(uri, v, &got)?;
        set_mtime(&out, v);
        Ok(())
    }

    /// The object, opened by its name in the open objects' folder (a path lookup of two names,
    /// not of the mirror's whole path); None on any failure, for the careful way to report.
    fn open_object_in_folder<'v>(&mut self, v: &'v VersionRow) -> Option<(File, &'v str)> {
        #[cfg(unix)]
        {
            let sha = v.sha256.as_deref()?;
            if !objects::is_sha256_hex(sha) {
                return None;
            }
            let dir = self.objects_dir().ok()?;
            let file = open_in(dir, &objects::name_in_folder(sha), libc::O_RDONLY).ok()?;
            Some((file, sha))
        }
        #[cfg(not(unix))]
        {
            let _ = v;
            None
        }
    }

    /// The objects' folder (`objects/sha256`), open.
    #[cfg(unix)]
    fn objects_dir(&mut self) -> io::Result<&File> {
        if self.objects_dir.is_none() {
            self.objects_dir = Some(File::open(self.mirror.join("objects").join("sha256"))?);
        }
        Ok(self.objects_dir.as_ref().expect("opened"))
    }

    /// A new file at `to` (never replacing one): by its name in the open folder made last
    /// when it is there (Unix), else by its path.
    fn create_new(&mut self, to: &Path) -> Result<File, Error> {
        #[cfg(unix)]
        if let (Some(name), Some(folder)) = (to.file_name(), to.parent()) {
            use std::os::unix::ffi::OsStrExt;
            if folder == self.made {
                if self.made_dir.is_none() {
                    self.made_dir = File::open(&self.made).ok();
                }
                if let Some(dir) = &self.made_dir {
                    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
                    match open_in(dir, name.as_bytes(), flags) {
                        Ok(file) => return Ok(file),
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                            return Err(StoreError::io("creating", to, e).into())
                        }
                        // The path below says what is wrong.
                        Err(_) => {}
                    }
                }
            }
        }
        File::options()
            .write(true)
            .create_new(true)
            .open(to)
            .map_err(|e| StoreError::io("creating", to, e).into())
    }

    /// The object's path when the audit vouches for it (see [`Placer`]): one `stat`, no read.
    /// Anything odd (no object, another length, a newer time) is left to the careful way,
    /// which reads it and says what is wrong.
    fn vouched_for(&self, v: &VersionRow) -> Option<PathBuf> {
        if !self.vouches_for_state(v) {
            return None;
        }
        // Only a file on this machine is linked.
        let path = self.objects.local_file(v.sha256.as_deref()?)?;
        let meta = std::fs::metadata(&path).ok()?;
        let modified = meta.modified().ok()?;
        self.vouches_for_file(v, meta.is_file(), meta.len(), modified)
            .then_some(path)
    }

    /// The state arrived before the audit (and was current at it: the export's point is
    /// after it, or the audit re-hashed every version; `export::run` sees to that).
    fn vouches_for_state(&self, v: &VersionRow) -> bool {
        self.vouch.as_ref().is_some_and(|a| v.run < a.run)
    }

    /// The object file is as the audit left it, by its length and time.
    fn vouches_for_file(
        &self,
        v: &VersionRow,
        is_file: bool,
        len: u64,
        modified: std::time::SystemTime,
    ) -> bool {
        let Some(vouch) = &self.vouch else {
            return false;
        };
        let same_length = v.length.is_some_and(|n| n >= 0 && n as u64 == len);
        is_file && same_length && modified < vouch.started_at
    }

    /// [`Placer::vouched_for`] and the hard link, by names relative to the open objects'
    /// folder and the open folder of `to` (two path lookups of one or two names, not two of
    /// the whole mirror's and DEST's paths: most of a link's cost). Ok(false): not vouched
    /// for, or not a name in the folder made last; nothing done.
    #[cfg(unix)]
    fn link_vouched(&mut self, v: &VersionRow, to: &Path) -> io::Result<bool> {
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStrExt;
        let Some(sha) = v.sha256.as_deref() else {
            return Ok(false);
        };
        let (Some(name), Some(folder)) = (to.file_name(), to.parent()) else {
            return Ok(false);
        };
        if !self.vouches_for_state(v) || folder != self.made || !objects::is_sha256_hex(sha) {
            return Ok(false);
        }
        if self.made_dir.is_none() {
            self.made_dir = Some(File::open(&self.made)?);
        }
        let objects = self.objects_dir()?.as_raw_fd();
        let made = self.made_dir.as_ref().expect("opened").as_raw_fd();
        let this = &*self;
        with_c_name(&objects::name_in_folder(sha), |object| {
            // SAFETY: a NUL-terminated name, an open folder, and a plain C struct fstatat
            // fills in.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstatat(objects, object.as_ptr(), &mut st, 0) } != 0 {
                return Ok(false);
            }
            let modified = std::time::UNIX_EPOCH
                + std::time::Duration::new(
                    st.st_mtime.max(0) as u64,
                    st.st_mtime_nsec.max(0) as u32,
                );
            let is_file = st.st_mode & libc::S_IFMT == libc::S_IFREG;
            if !this.vouches_for_file(v, is_file, st.st_size.max(0) as u64, modified) {
                return Ok(false);
            }
            with_c_name(name.as_bytes(), |name| {
                // SAFETY: NUL-terminated names and open folders.
                match unsafe { libc::linkat(objects, object.as_ptr(), made, name.as_ptr(), 0) } {
                    0 => Ok(true),
                    _ => Err(io::Error::last_os_error()),
                }
            })
        })
    }

    /// Read the object through and check it (for links, where nothing is copied).
    fn verify(
        &mut self,
        object: &mut File,
        object_path: &Path,
        uri: &str,
        v: &VersionRow,
    ) -> Result<(), Error> {
        let got = crate::access::copy_hashing(
            object,
            &mut io::sink(),
            &mut self.buf,
            object_path,
            Path::new("(nowhere: only hashed)"),
        )?;
        crate::access::check(uri, v, &got)
    }
}

/// `openat(2)` of `name` (a name or `ab/name`) in the open folder `dir`, the name
/// NUL-terminated on the stack; new files get mode 0666 less the umask, as `File::create`
/// gives.
#[cfg(unix)]
fn open_in(dir: &File, name: &[u8], flags: libc::c_int) -> io::Result<File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    with_c_name(name, |name| {
        // SAFETY: a NUL-terminated name and an open folder.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor openat just returned, owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd) })
    })
}

/// The file's time: the source's lastmod, when it gave one.
fn set_mtime(file: &File, v: &VersionRow) {
    if let Some(t) = v
        .lastmod
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    {
        let _ = file.set_modified(std::time::SystemTime::from(t));
    }
}

/// A copy-on-write clone of `object`, a new file at `dest` (Linux `FICLONE`).
fn reflink(object: &File, dest: &Path) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        const FICLONE: libc::c_ulong = 0x4004_9409;
        let out = File::options().write(true).create_new(true).open(dest)?;
        // SAFETY: two open file descriptors; the ioctl reads the second's extents.
        let rc = unsafe { libc::ioctl(out.as_raw_fd(), FICLONE as _, object.as_raw_fd()) };
        if rc == 0 {
            return Ok(out);
        }
        Err(io::Error::last_os_error())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (object, dest);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// A hard link to `to` that failed: across file systems, what to do instead.
fn hard_link_failed(to: &Path, e: io::Error) -> Error {
    if e.kind() != io::ErrorKind::CrossesDevices {
        return StoreError::io("hard-linking the object to", to, e).into();
    }
    crate::error::UsageError(format!(
        "--link hard: {} is on another file system than the mirror's objects, and a hard link \
         cannot cross file systems: --link auto copies there instead (or export onto the \
         mirror's file system)",
        to.display()
    ))
    .into()
}
