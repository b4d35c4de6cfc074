//! `audit --refetch`: prove the copies a digest cannot prove. Each resource is fetched again
//! and its bytes hashed (SHA-256) as they stream, then dropped: an audit writes no content
//! (the bytes pass through an anonymous file in `staging/`, gone when it is closed). A
//! conditional GET with the ETag / Last-Modified stored with the mirror's version comes first
//! unless the caller asks for bytes: a 304 is the server's claim that nothing changed, which
//! the report keeps apart from a byte-for-byte comparison.
//!
//! The requests go out on a few threads through the run's agent, so `--delay` (and the
//! source's pacing) holds, and share its retries and timeouts.
//!
//! The candidates are written to a file in `staging/` as the comparison finds them
//! ([`Candidates`]) and read back one at a time as the requests go out: an audit that fetches
//! a million resources again holds only the ones in flight.

use crate::net::one::{fetch_new_object, fetch_new_object_if_changed};
use crate::net::{Expected, FetchError, Http, Scope, Validators};
use crate::store::StoreError;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use url::Url;

/// Requests in flight at once: baseline's default.
const IN_FLIGHT: usize = 8;

/// One resource to fetch again.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Its slot in the audit's index of current states.
    pub slot: usize,
    pub uri: Url,
    pub scope: Arc<Scope>,
    /// The collection it was listed in (the audit's per-collection counts).
    pub collection: Arc<str>,
}

/// A candidate with what the mirror holds of it.
#[derive(Debug)]
pub struct Job {
    pub candidate: Candidate,
    /// The SHA-256 of the mirror's current version.
    pub mirror_sha256: String,
    /// Stored with that version; empty for a full GET.
    pub validators: Validators,
}

/// What fetching it again showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The bytes hash to the mirror's SHA-256.
    Same,
    /// They do not: the source's SHA-256.
    Differs(String),
    /// The server answered 304: unchanged by its word.
    NotModified,
    /// No answer to compare (the reason).
    Failed(String),
}

/// Fetch every job again, `IN_FLIGHT` at a time, each outcome to `done` (on the calling
/// thread, in the order they come back). The jobs are drawn from `jobs` on the calling thread
/// as the requests go out: only those in flight are held. An error drawing a job stops the
/// drawing; the jobs in flight finish, and the error is returned.
pub(crate) fn run<E>(
    http: &Http,
    staging: &Path,
    jobs: impl Iterator<Item = Result<Job, E>>,
    mut done: impl FnMut(Job, Outcome),
) -> Result<(), E> {
    use crossbeam_channel::TrySendError;
    let (to_workers, work) = crossbeam_channel::bounded::<Job>(IN_FLIGHT);
    let (finished, outcomes) = crossbeam_channel::unbounded::<(Job, Outcome)>();
    std::thread::scope(|s| {
        for _ in 0..IN_FLIGHT {
            let (work, finished) = (work.clone(), finished.clone());
            s.spawn(move || {
                for job in work {
                    let outcome = refetch(http, staging, &job);
                    if finished.send((job, outcome)).is_err() {
                        return;
                    }
                }
            });
        }
        drop((work, finished));
        let mut failed = None;
        for job in jobs {
            let mut job = match job {
                Ok(job) => job,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            // Handed on when a place is free; until then, outcomes are taken back as they
            // come (a worker ends only when the sending side is dropped).
            loop {
                match to_workers.try_send(job) {
                    Ok(()) => break,
                    Err(TrySendError::Full(back)) => {
                        job = back;
                        if let Ok((j, o)) = outcomes.recv() {
                            done(j, o);
                        }
                    }
                    Err(TrySendError::Disconnected(_)) => unreachable!("the workers outlive it"),
                }
            }
            while let Ok((j, o)) = outcomes.try_recv() {
                done(j, o);
            }
        }
        drop(to_workers);
        for (j, o) in outcomes {
            done(j, o);
        }
        failed.map_or(Ok(()), Err)
    })
}

/// The resources `--refetch` fetches again, written to a file in `staging/` as the comparison
/// finds them (a line each: slot, scope, collection, URI; the scopes and collections, a few per
/// list document, held once) and read back by [`Candidates::take`]. The file goes when the
/// candidates (or what `take` gave) are dropped.
#[derive(Default)]
pub struct Candidates {
    dir: PathBuf,
    file: Option<(PathBuf, BufWriter<File>)>,
    scopes: Vec<Arc<Scope>>,
    collections: Vec<Arc<str>>,
    /// The first write that failed: said by `take`.
    failed: Option<StoreError>,
}

impl Candidates {
    /// None yet; the file will be made in `dir` (the mirror's `staging/`).
    pub(crate) fn new(dir: PathBuf) -> Candidates {
        Candidates {
            dir,
            file: None,
            scopes: Vec::new(),
            collections: Vec::new(),
            failed: None,
        }
    }

    /// One more to fetch again. A write that fails is kept and said by [`Candidates::take`].
    pub(crate) fn push(&mut self, c: Candidate) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.write(&c) {
            self.failed = Some(e);
        }
    }

    fn write(&mut self, c: &Candidate) -> Result<(), StoreError> {
        let scope = index_of(&mut self.scopes, &c.scope, Arc::ptr_eq);
        let collection = index_of(&mut self.collections, &c.collection, |a, b| a == b);
        if self.file.is_none() {
            std::fs::create_dir_all(&self.dir)
                .map_err(|e| StoreError::io("creating", &self.dir, e))?;
            static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = self
                .dir
                .join(format!("refetch-{}-{n}.txt", std::process::id()));
            // Written, then read back through the same descriptor.
            let file = File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(spilled(&path))?;
            self.file = Some((path, BufWriter::with_capacity(1 << 16, file)));
        }
        let (path, out) = self.file.as_mut().expect("made above");
        // A parsed URL holds no tab or line break.
        writeln!(out, "{}\t{scope}\t{collection}\t{}", c.slot, c.uri).map_err(spilled(path))
    }

    /// Every candidate pushed so far, to be read back in order; none are left here. `None`
    /// when there were none.
    pub(crate) fn take(&mut self) -> Result<Option<Drain>, StoreError> {
        if let Some(e) = self.failed.take() {
            self.drop_file();
            return Err(e);
        }
        let Some((path, out)) = self.file.take() else {
            return Ok(None);
        };
        let mut file = match out.into_inner() {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(spilled(&path)(e.into_error()));
            }
        };
        if let Err(e) = file.rewind() {
            let _ = std::fs::remove_file(&path);
            return Err(spilled(&path)(e));
        }
        Ok(Some(Drain {
            lines: BufReader::with_capacity(1 << 16, file),
            line: String::new(),
            path,
            scopes: self.scopes.clone(),
            collections: self.collections.clone(),
        }))
    }

    fn drop_file(&mut self) {
        if let Some((path, _)) = self.file.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for Candidates {
    fn drop(&mut self) {
        self.drop_file();
    }
}

/// The place of `item` in `held`, added at the end when new (the last one is looked at first:
/// a list's entries come one document after another).
fn index_of<T: Clone>(held: &mut Vec<T>, item: &T, same: impl Fn(&T, &T) -> bool) -> usize {
    if let Some(i) = held.iter().rposition(|h| same(h, item)) {
        return i;
    }
    held.push(item.clone());
    held.len() - 1
}

fn spilled(path: &Path) -> impl Fn(io::Error) -> StoreError + '_ {
    move |e| StoreError::io("the resources to fetch again", path, e)
}

/// The candidates read back, in the order they were pushed ([`Candidates::take`]).
pub struct Drain {
    lines: BufReader<File>,
    line: String,
    path: PathBuf,
    scopes: Vec<Arc<Scope>>,
    collections: Vec<Arc<str>>,
}

impl Drain {
    fn parse(&self) -> Option<Candidate> {
        let mut fields = self.line.trim_end_matches('\n').splitn(4, '\t');
        let slot = fields.next()?.parse().ok()?;
        let scope = self.scopes.get(fields.next()?.parse::<usize>().ok()?)?;
        let collection = self
            .collections
            .get(fields.next()?.parse::<usize>().ok()?)?;
        Some(Candidate {
            slot,
            uri: Url::parse(fields.next()?).ok()?,
            scope: scope.clone(),
            collection: collection.clone(),
        })
    }
}

impl Iterator for Drain {
    type Item = Result<Candidate, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.line.clear();
        match self.lines.read_line(&mut self.line) {
            Ok(0) => None,
            Ok(_) => Some(self.parse().ok_or_else(|| {
                spilled(&self.path)(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a line that does not read back: {:?}", self.line),
                ))
            })),
            Err(e) => Some(Err(spilled(&self.path)(e))),
        }
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn refetch(http: &Http, staging: &Path, job: &Job) -> Outcome {
    let c = &job.candidate;
    if let Err(reason) = c.scope.check(&c.uri) {
        return Outcome::Failed(format!("refused: {reason}"));
    }
    // Nothing declared: the comparison is ours, after the body is read.
    let expected = Expected::default();
    let fetched = if job.validators.is_empty() {
        fetch_new_object(http, &c.uri, &c.scope, staging, &expected)
    } else {
        fetch_new_object_if_changed(http, &c.uri, &c.scope, staging, &expected, &job.validators)
    };
    match fetched {
        // Dropped here: the anonymous file goes with it.
        Ok(staged) if staged.computed.sha256_hex == job.mirror_sha256 => Outcome::Same,
        Ok(staged) => Outcome::Differs(staged.computed.sha256_hex),
        Err(FetchError::Status { status: 304, .. }) if !job.validators.is_empty() => {
            Outcome::NotModified
        }
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(slot: usize, uri: &str, scope: &Arc<Scope>, collection: &Arc<str>) -> Candidate {
        Candidate {
            slot,
            uri: Url::parse(uri).unwrap(),
            scope: scope.clone(),
            collection: collection.clone(),
        }
    }

    /// Issue 48: the candidates wait on disk, each scope and collection held once, and come
    /// back in order; the file goes with them.
    #[test]
    fn candidates_go_to_a_file_and_come_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let staging = dir.path().join("staging");
        let scope = |u: &str| Arc::new(Scope::for_document(&Url::parse(u).unwrap(), &[]));
        let (a, b) = (
            scope("http://a.example/list.xml"),
            scope("http://b.example/x/list.xml"),
        );
        let (one, two): (Arc<str>, Arc<str>) = ("http://a.example/list.xml".into(), "c2".into());
        let mut c = Candidates::new(staging.clone());
        assert!(c.take().unwrap().is_none(), "none pushed: no file");
        assert!(!staging.exists());
        let pushed = vec![
            candidate(7, "http://a.example/r?q=1#f", &a, &one),
            candidate(0, "http://b.example/x/%20y", &b, &two),
            candidate(usize::MAX, "http://a.example/é", &a, &one),
        ];
        for p in &pushed {
            c.push(p.clone());
        }
        assert_eq!(c.scopes.len(), 2);
        let drained = c.take().unwrap().expect("three pushed");
        assert_eq!(std::fs::read_dir(&staging).unwrap().count(), 1);
        let back: Vec<Candidate> = drained.map(Result::unwrap).collect();
        assert_eq!(back.len(), 3);
        for (p, b) in pushed.iter().zip(&back) {
            assert_eq!(
                (p.slot, &p.uri, &p.collection),
                (b.slot, &b.uri, &b.collection)
            );
            assert!(Arc::ptr_eq(&p.scope, &b.scope));
        }
        assert_eq!(
            std::fs::read_dir(&staging).unwrap().count(),
            0,
            "the file went"
        );
        assert!(c.take().unwrap().is_none(), "taken: none left");
    }

    #[test]
    fn a_candidate_that_cannot_be_written_is_said_when_taken() {
        let dir = tempfile::tempdir().unwrap();
        // `staging` is a file: the folder cannot be made.
        let staging = dir.path().join("staging");
        std::fs::write(&staging, b"").unwrap();
        let scope = Arc::new(Scope::for_document(
            &Url::parse("http://a.example/").unwrap(),
            &[],
        ));
        let mut c = Candidates::new(staging);
        c.push(candidate(1, "http://a.example/r", &scope, &"c".into()));
        let err = c.take().err().expect("the write failed");
        assert!(err.to_string().contains("staging"), "{err}");
    }
}
