//! Copies of the catalog (`MIRROR/catalog-copies/`): after every command that wrote, a
//! consistent snapshot of `catalog.sqlite`, compressed with zstd, beside a small JSON record
//! of it (the run it follows, the SHA-256 and length of the catalog it holds and of the
//! compressed file); the newest `--catalog-copies N` are kept. `rsmirror catalog restore`
//! takes the newest one that proves good.
//!
//! The copy is the file itself, read once after the writer checkpointed the write-ahead log
//! into it and closed it under the mirror's lock (nothing else writes it then), so the same
//! pass gives the seal its SHA-256 (`store::seal`). When a reader kept the log from being
//! emptied, SQLite's `VACUUM INTO` makes the snapshot instead.

use crate::store::StoreError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The folder of the copies, in the mirror folder.
pub const FOLDER: &str = "catalog-copies";

/// How many copies a writing command keeps when not told (`--catalog-copies`).
pub const DEFAULT_KEPT: usize = 3;

/// The copies a command keeps, set once by the command (`--catalog-copies`).
static KEPT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(DEFAULT_KEPT);

/// `--catalog-copies N`: the copies kept from now on (0: none made).
pub fn keep(n: usize) {
    KEPT.store(n, std::sync::atomic::Ordering::Relaxed);
}

/// The copies kept.
pub(crate) fn kept() -> usize {
    KEPT.load(std::sync::atomic::Ordering::Relaxed)
}

/// zstd's level: the fastest, a catalog shrinks to about a third and the copy costs little
/// beside the run (figures in benches/RESULTS.md).
const LEVEL: i32 = 1;

/// The record beside each copy (`<copy>.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CopyRecord {
    /// The compressed copy's file name, in the same folder.
    pub file: String,
    /// When it was made, and after which run.
    pub made: String,
    pub run: Option<i64>,
    /// The catalog it holds: length and SHA-256.
    pub bytes: u64,
    pub sha256: String,
    /// The compressed file: length and SHA-256.
    pub zst_bytes: u64,
    pub zst_sha256: String,
    pub schema_version: i64,
    pub by: String,
}

/// A copy found in the folder.
#[derive(Debug, Clone)]
pub struct Copy {
    pub path: PathBuf,
    pub record: CopyRecord,
}

/// The SHA-256 of a file, read as a stream.
pub(crate) fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// A writer that hashes and counts what passes through it.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn folder(mirror: &Path) -> PathBuf {
    mirror.join(FOLDER)
}

/// Compress `db` into a new copy in the folder: (the copy, the SHA-256 of `db`).
fn compress(mirror: &Path, db: &Path, run: Option<i64>) -> Result<(PathBuf, String), StoreError> {
    let dir = folder(mirror);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::io("creating", &dir, e))?;
    let made = jiff::Timestamp::now();
    let stamp = format!(
        "{}{:03}Z",
        made.strftime("%Y%m%dT%H%M%S"),
        made.subsec_millisecond()
    );
    let name = format!("catalog-r{:06}-{stamp}.sqlite.zst", run.unwrap_or(0));
    let tmp = dir.join(format!(".{name}.tmp"));
    fn io<'p>(what: &'static str, p: &'p Path) -> impl Fn(std::io::Error) -> StoreError + 'p {
        move |e| StoreError::io(what, p, e)
    }
    let result = (|| {
        let mut input =
            BufReader::with_capacity(1 << 20, std::fs::File::open(db).map_err(io("reading", db))?);
        let out = std::fs::File::create(&tmp).map_err(io("writing", &tmp))?;
        let hashing = Hashing {
            inner: std::io::BufWriter::with_capacity(1 << 20, out),
            hash: Sha256::new(),
            bytes: 0,
        };
        let mut enc =
            zstd::stream::write::Encoder::new(hashing, LEVEL).map_err(io("writing", &tmp))?;
        // Compression on every core, beside this thread's reading and hashing.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        if cores > 1 {
            enc.multithread(cores).map_err(io("writing", &tmp))?;
        }
        let mut db_hash = Sha256::new();
        let mut db_bytes = 0u64;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = input.read(&mut buf).map_err(io("reading", db))?;
            if n == 0 {
                break;
            }
            db_hash.update(&buf[..n]);
            db_bytes += n as u64;
            enc.write_all(&buf[..n]).map_err(io("writing", &tmp))?;
        }
        let mut hashing = enc.finish().map_err(io("writing", &tmp))?;
        hashing.flush().map_err(io("writing", &tmp))?;
        let file = hashing
            .inner
            .into_inner()
            .map_err(|e| StoreError::io("writing", &tmp, e.into_error()))?;
        file.sync_all().map_err(io("syncing", &tmp))?;
        let record = CopyRecord {
            file: name.clone(),
            made: made.to_string(),
            run,
            bytes: db_bytes,
            sha256: hex::encode(db_hash.finalize()),
            zst_bytes: hashing.bytes,
            zst_sha256: hex::encode(hashing.hash.finalize()),
            schema_version: crate::store::schema::SCHEMA_VERSION,
            by: format!("rsmirror {}", env!("CARGO_PKG_VERSION")),
        };
        // The record first (written whole, synced), then the copy under its name: a copy in
        // the folder always has its record; a record without its copy is an orphan `prune`
        // removes.
        let path = dir.join(&name);
        let json = dir.join(format!("{name}.json"));
        let json_tmp = dir.join(format!(".{name}.json.tmp"));
        let mut f = std::fs::File::create(&json_tmp).map_err(io("writing", &json_tmp))?;
        f.write_all(&serde_json::to_vec_pretty(&record).expect("a record serialises"))
            .and_then(|()| f.write_all(b"\n"))
            .and_then(|()| f.sync_all())
            .map_err(io("writing", &json_tmp))?;
        std::fs::rename(&json_tmp, &json).map_err(io("writing", &json))?;
        std::fs::rename(&tmp, &path).map_err(io("writing", &path))?;
        std::fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(io("syncing", &dir))?;
        Ok((path, record.sha256))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(dir.join(format!(".{name}.json.tmp")));
    }
    result
}

/// A copy of the catalog file (closed, its log checkpointed, the lock held), then the oldest
/// copies past `keep` removed: (the copy, the catalog's SHA-256).
pub(crate) fn make(
    mirror: &Path,
    run: Option<i64>,
    keep: usize,
) -> Result<(PathBuf, String), StoreError> {
    let made = compress(mirror, &mirror.join("catalog.sqlite"), run)?;
    prune(mirror, keep);
    Ok(made)
}

/// A copy made by `VACUUM INTO` through an open connection (the log could not be emptied).
pub(crate) fn make_by_vacuum(
    mirror: &Path,
    conn: &rusqlite::Connection,
    run: Option<i64>,
    keep: usize,
) -> Result<PathBuf, StoreError> {
    let dir = folder(mirror);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::io("creating", &dir, e))?;
    let tmp = dir.join(".vacuum.sqlite.tmp");
    let _ = std::fs::remove_file(&tmp);
    if let Err(e) = conn.execute("VACUUM INTO ?1", [tmp.to_string_lossy()]) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    let made = compress(mirror, &tmp, run);
    let _ = std::fs::remove_file(&tmp);
    prune(mirror, keep);
    Ok(made?.0)
}

/// The copies in the folder, newest first (by when they were made); records that cannot be
/// read are left out (and left alone).
pub fn list(mirror: &Path) -> Vec<Copy> {
    let dir = folder(mirror);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut copies: Vec<Copy> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(".sqlite.zst.json")
        })
        .filter_map(|e| {
            let record: CopyRecord = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
            Some(Copy {
                path: dir.join(&record.file),
                record,
            })
        })
        .collect();
    // By time (parsed: RFC 3339 texts with fractions of different lengths do not sort as
    // text), then run.
    let when = |c: &Copy| c.record.made.parse::<jiff::Timestamp>().ok();
    copies.sort_by_key(|c| std::cmp::Reverse((when(c), c.record.run)));
    copies
}

/// Remove the oldest copies past `keep`, and what no copy owns: temporary files of a copy that
/// did not finish (the writer holds the lock: no other is being made) and records whose copy is
/// gone.
fn prune(mirror: &Path, keep: usize) {
    let all = list(mirror);
    for old in all.iter().skip(keep) {
        let _ = std::fs::remove_file(&old.path);
        let mut json = old.path.clone().into_os_string();
        json.push(".json");
        let _ = std::fs::remove_file(json);
    }
    let kept: Vec<String> = all
        .iter()
        .take(keep)
        .flat_map(|c| [c.record.file.clone(), format!("{}.json", c.record.file)])
        .collect();
    if let Ok(entries) = std::fs::read_dir(folder(mirror)) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let ours = name.starts_with("catalog-r") || name.starts_with('.');
            if ours && !kept.contains(&name) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Unpack a copy into `dest`, proving it on the way: the compressed file's SHA-256 and the
/// catalog's, against its record. `Err` says what did not hold.
pub(crate) fn unpack(copy: &Copy, dest: &Path) -> Result<(), String> {
    let zst = sha256_of(&copy.path).map_err(|e| format!("cannot be read: {e}"))?;
    if zst != copy.record.zst_sha256 {
        return Err(format!(
            "its SHA-256 is {zst}, its record says {}",
            copy.record.zst_sha256
        ));
    }
    let file = std::fs::File::open(&copy.path).map_err(|e| format!("cannot be read: {e}"))?;
    let mut dec = zstd::stream::read::Decoder::new(file).map_err(|e| e.to_string())?;
    let out = std::fs::File::create(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let mut hashing = Hashing {
        inner: std::io::BufWriter::with_capacity(1 << 20, out),
        hash: Sha256::new(),
        bytes: 0,
    };
    std::io::copy(&mut dec, &mut hashing).map_err(|e| format!("cannot be unpacked: {e}"))?;
    hashing.flush().map_err(|e| e.to_string())?;
    let sha = hex::encode(hashing.hash.clone().finalize());
    if sha != copy.record.sha256 || hashing.bytes != copy.record.bytes {
        return Err(format!(
            "it unpacks to {} bytes with SHA-256 {sha}, its record says {} bytes, {}",
            hashing.bytes, copy.record.bytes, copy.record.sha256
        ));
    }
    let file = hashing
        .inner
        .into_inner()
        .map_err(|e| e.into_error().to_string())?;
    file.sync_all().map_err(|e| e.to_string())?;
    Ok(())
}
