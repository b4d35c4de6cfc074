//! A mirror whose objects are in a bucket, beyond one machine:
//!
//! - **Catalog copies in the bucket.** After every run that held the lease, the catalog copy
//!   that run made (`catalog-copies/`, compressed, with its JSON record) goes to
//!   `PREFIX/catalog/`; the newest `--catalog-copies N` are kept there. `rsmirror attach` makes a
//!   mirror folder on another machine from the newest one that proves good.
//! - **One writer at a time across machines.** A lease, `PREFIX/lease` (JSON: host, pid,
//!   folder, command, since, renewed), taken with a create-only PUT (`If-None-Match: *`),
//!   renewed while the run lasts (`If-Match` its ETag), released at its end (a `DELETE` with
//!   `If-Match`: never another's). A lease not renewed for [`stale_after`] is stale: its holder
//!   died; the next writer takes it over (`If-Match` the stale one's ETag: of two that try, one
//!   wins). So is one left by a run of the same folder on the same machine (killed): the
//!   folder's lock, which the taker holds, says that run is gone.
//! - **No writer on a stale catalog.** A writer that takes the lease checks that the newest
//!   copy in the bucket is one its own folder made or attached from; another machine's newer
//!   one means this folder's catalog is behind: it refuses (attach again).

use super::Bucket;
use crate::store::copies::{self, CopyRecord};
use crate::store::lock::LockError;
use crate::store::StoreError;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A lease not renewed for this long is stale: 15 minutes, or `RSMIRROR_LEASE_STALE` seconds.
pub(crate) fn stale_after() -> Duration {
    Duration::from_secs(
        std::env::var("RSMIRROR_LEASE_STALE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(900)
            .max(1),
    )
}

/// What a lease says.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Holder {
    pub host: String,
    pub pid: u32,
    pub mirror: String,
    pub command: String,
    pub since: String,
    pub renewed: String,
}

/// Why the lease was not taken.
#[derive(Debug)]
pub(crate) enum NotTaken {
    /// Another writer holds it.
    Held(Box<Holder>),
    /// The bucket could not be asked, or answered what a lease never is.
    Fault(io::Error),
}

/// The lease, held: renewed by a thread of its own, released when dropped.
pub struct Lease {
    bucket: Arc<Bucket>,
    key: String,
    etag: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    renewer: Option<std::thread::JoinHandle<()>>,
    mirror: std::path::PathBuf,
    since: jiff::Timestamp,
    /// Whether the catalog copy made after `since` goes to the bucket when the lease is let go
    /// ([`Lease::send_catalog_copy`]): not for a run refused before it wrote.
    send: bool,
    /// A stale lease was taken over: whose.
    pub took_over: Option<Holder>,
}

/// Why a run may not write the mirror in a bucket.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Another machine's writer holds the lease.
    Leased(LockError),
    /// The bucket could not be asked, or this folder's catalog is behind another machine's.
    Store(StoreError),
}

/// The lease of the mirror in `bucket` for a run of `command` on the folder `mirror`, and the
/// proof that this folder's catalog is the newest; its catalog copy then goes to the bucket.
pub(crate) fn take_for_run(
    bucket: Arc<Bucket>,
    mirror: &Path,
    command: &str,
) -> Result<Lease, Refused> {
    let fault = |message: String| {
        Refused::Store(StoreError::Bucket {
            url: bucket.url().to_string(),
            message,
        })
    };
    let mut lease = match Lease::take(bucket.clone(), mirror, command) {
        Ok(lease) => lease,
        Err(NotTaken::Held(h)) => {
            return Err(Refused::Leased(LockError::Leased {
                lease: bucket.describe(&bucket.url().key("lease")),
                holder: format!(
                    "rsmirror {} on {} (pid {}, folder {})",
                    h.command, h.host, h.pid, h.mirror
                ),
                since: h.since,
                renewed: h.renewed,
                stale: format!("{} s", stale_after().as_secs()),
            }))
        }
        Err(NotTaken::Fault(e)) => return Err(fault(format!("the lease: {e}"))),
    };
    if let Some(h) = &lease.took_over {
        crate::report::say(&format!(
            "rsmirror: took over the stale lease of rsmirror {} on {} (pid {}, folder {}), last \
             renewed {}",
            h.command, h.host, h.pid, h.mirror, h.renewed
        ));
    }
    match check_current(&bucket, mirror) {
        Ok(Ok(())) => {
            lease.send_catalog_copy();
            Ok(lease)
        }
        Ok(Err(behind)) => Err(fault(behind)),
        Err(e) => Err(fault(format!("reading the catalog copies: {e}"))),
    }
}

impl Lease {
    /// Take the lease of the mirror in `bucket` for `command` run on the folder `mirror`.
    pub(crate) fn take(
        bucket: Arc<Bucket>,
        mirror: &Path,
        command: &str,
    ) -> Result<Lease, NotTaken> {
        let key = bucket.url().key("lease");
        let now = jiff::Timestamp::now();
        let me = Holder {
            host: host_name(),
            pid: std::process::id(),
            mirror: mirror.display().to_string(),
            command: command.to_string(),
            since: now.to_string(),
            renewed: now.to_string(),
        };
        let body = serde_json::to_vec_pretty(&me).expect("json");
        let (status, etag) = bucket
            .put_conditional(&key, &body, "If-None-Match: *")
            .map_err(NotTaken::Fault)?;
        let mut took_over = None;
        let etag = match (status, etag) {
            (200, Some(etag)) => etag,
            (412, _) => {
                let (holder, held_etag) = read(&bucket, &key)?;
                let renewed = holder
                    .renewed
                    .parse::<jiff::Timestamp>()
                    .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
                let age = now.duration_since(renewed);
                let stale =
                    age >= jiff::SignedDuration::try_from(stale_after()).unwrap_or_default();
                // Left by a run of this folder on this machine, which died: the caller holds
                // the folder's lock, which that run would hold were it alive.
                let ours_left = holder.host == me.host && holder.mirror == me.mirror;
                if !stale && !ours_left {
                    return Err(NotTaken::Held(holder));
                }
                let (status, etag) = bucket
                    .put_conditional(&key, &body, &format!("If-Match: {held_etag}"))
                    .map_err(NotTaken::Fault)?;
                match (status, etag) {
                    (200, Some(etag)) => {
                        took_over = Some(*holder);
                        etag
                    }
                    // Another writer took it over first.
                    (412, _) => return Err(NotTaken::Held(read(&bucket, &key)?.0)),
                    (s, _) => return Err(NotTaken::Fault(unexpected(&bucket, &key, s))),
                }
            }
            (s, _) => return Err(NotTaken::Fault(unexpected(&bucket, &key, s))),
        };
        let etag = Arc::new(Mutex::new(etag));
        let stop = Arc::new(AtomicBool::new(false));
        let renewer = {
            let (bucket, key, etag, stop) =
                (bucket.clone(), key.clone(), etag.clone(), stop.clone());
            std::thread::spawn(move || renew(&bucket, &key, &etag, &stop, me))
        };
        Ok(Lease {
            bucket,
            key,
            etag,
            stop,
            renewer: Some(renewer),
            mirror: mirror.to_path_buf(),
            since: now,
            send: false,
            took_over,
        })
    }

    /// When let go, the lease first sends the catalog copy made since it was taken (the
    /// catalog of a run that may write is current: [`check_current`]).
    pub(crate) fn send_catalog_copy(&mut self) {
        self.send = true;
    }
}

impl Drop for Lease {
    /// The catalog copy this run made goes to the bucket (the catalog is sealed before the
    /// lease is dropped), then the lease is released.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.renewer.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let newest = match self.send {
            true => copies::list(&self.mirror).into_iter().next(),
            false => None,
        };
        if let Some(copy) = newest {
            let made = copy.record.made.parse::<jiff::Timestamp>().ok();
            if made.is_some_and(|m| m >= self.since) {
                let sent = send_copy(&self.bucket, &copy.path, &copy.record);
                if sent.is_ok() {
                    remember_in_bucket(&self.mirror, &copy.record);
                }
                if let Err(e) = sent {
                    crate::report::say(&format!(
                        "rsmirror: warning: the catalog's copy did not go to {}: {e}; the next \
                         run that writes sends its own (until then a machine that attaches \
                         gets the one before)",
                        self.bucket.describe(&self.bucket.url().key("catalog/"))
                    ));
                }
            }
        }
        let etag = self.etag.lock().expect("lease etag").clone();
        let _ = self.bucket.delete_if(&self.key, &etag);
    }
}

/// Renew the lease every third of [`stale_after`] until told to stop.
fn renew(bucket: &Bucket, key: &str, etag: &Mutex<String>, stop: &AtomicBool, mut me: Holder) {
    let every = stale_after() / 3;
    loop {
        std::thread::park_timeout(every);
        if stop.load(Ordering::Relaxed) {
            return;
        }
        me.renewed = jiff::Timestamp::now().to_string();
        let body = serde_json::to_vec_pretty(&me).expect("json");
        let current = etag.lock().expect("lease etag").clone();
        match bucket.put_conditional(key, &body, &format!("If-Match: {current}")) {
            Ok((200, Some(new))) => *etag.lock().expect("lease etag") = new,
            Ok((412, _)) => {
                crate::report::say(&format!(
                    "rsmirror: warning: the lease {} was taken over by another writer (this \
                     run had not renewed it for longer than it may wait)",
                    bucket.describe(key)
                ));
                return;
            }
            // A passing fault: tried again at the next renewal.
            _ => {}
        }
    }
}

/// The lease as it is now, and its ETag.
fn read(bucket: &Bucket, key: &str) -> Result<(Box<Holder>, String), NotTaken> {
    let (body, etag) = bucket
        .get_small(key)
        .map_err(NotTaken::Fault)?
        .ok_or_else(|| {
            NotTaken::Fault(io::Error::other(format!(
                "{}: the lease was released while it was being taken: run again",
                bucket.describe(key)
            )))
        })?;
    let holder: Box<Holder> = serde_json::from_slice(&body).map_err(|e| {
        NotTaken::Fault(io::Error::other(format!(
            "{}: not a lease rsmirror wrote ({e}); remove it if no rsmirror writes this mirror",
            bucket.describe(key)
        )))
    })?;
    let etag = etag.ok_or_else(|| {
        NotTaken::Fault(io::Error::other(format!(
            "{}: the bucket gave no ETag",
            bucket.describe(key)
        )))
    })?;
    Ok((holder, etag))
}

fn unexpected(bucket: &Bucket, key: &str, status: u32) -> io::Error {
    io::Error::other(format!(
        "{}: the bucket answered {status} to a conditional PUT of the lease",
        bucket.describe(key)
    ))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown host".into())
}

/// Send a catalog copy (`zst`, its record beside it) to `PREFIX/catalog/`, then remove the
/// copies there past the newest [`copies::kept`].
pub(crate) fn send_copy(bucket: &Bucket, zst: &Path, record: &CopyRecord) -> io::Result<()> {
    let folder = bucket.url().key("catalog");
    let key = format!("{folder}/{}", record.file);
    let mut file = std::fs::File::open(zst)?;
    bucket.put_file_new(&key, &mut file, &record.zst_sha256)?;
    let json = serde_json::to_vec_pretty(record).expect("json");
    bucket.put_bytes(&format!("{key}.json"), &json)?;
    // Names order as the copies were made (run number, then time).
    let mut names = Vec::new();
    bucket.list(&format!("{folder}/"), &mut |l| {
        if let Some(name) = l.key.strip_suffix(".json") {
            names.push(name.to_string());
        }
        Ok(())
    })?;
    names.sort();
    let keep = copies::kept().max(1);
    for old in names.iter().rev().skip(keep) {
        bucket.delete(old)?;
        bucket.delete(&format!("{old}.json"))?;
    }
    Ok(())
}

/// The catalog copies in the bucket, newest first: (the compressed copy's key, its record).
pub(crate) fn copies_in(bucket: &Bucket) -> io::Result<Vec<(String, CopyRecord)>> {
    let folder = bucket.url().key("catalog/");
    let mut records = Vec::new();
    bucket.list(&folder, &mut |l| {
        if l.key.ends_with(".sqlite.zst.json") {
            records.push(l.key);
        }
        Ok(())
    })?;
    let mut out = Vec::new();
    for key in records {
        let Some((body, _)) = bucket.get_small(&key)? else {
            continue;
        };
        if let Ok(record) = serde_json::from_slice::<CopyRecord>(&body) {
            out.push((key.trim_end_matches(".json").to_string(), record));
        }
    }
    let when = |r: &CopyRecord| r.made.parse::<jiff::Timestamp>().ok();
    out.sort_by_key(|(_, r)| std::cmp::Reverse((when(r), r.run)));
    Ok(out)
}

/// The file in `catalog-copies/` that names the copy this folder last sent to the bucket or
/// attached from. Local copies come and go (every audit, every refused run makes one, and only
/// the newest `--catalog-copies` stay); this one is kept, so the folder still knows that the
/// bucket's newest copy is its own.
const IN_BUCKET: &str = "in-bucket.json";

/// Remember `record` as the copy this folder last sent to the bucket or attached from.
pub(crate) fn remember_in_bucket(mirror: &Path, record: &CopyRecord) {
    let path = mirror.join(copies::FOLDER).join(IN_BUCKET);
    let tmp = path.with_extension("json.tmp");
    let json = serde_json::to_vec_pretty(record).expect("json");
    if std::fs::write(&tmp, json).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}

/// The copy this folder last sent to the bucket or attached from, if it remembers one.
fn remembered_in_bucket(mirror: &Path) -> Option<CopyRecord> {
    let body = std::fs::read(mirror.join(copies::FOLDER).join(IN_BUCKET)).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Whether the folder `mirror` may write: the newest copy in the bucket is one of its own
/// copies (made here, or attached from: those it keeps, and the one it remembers sending or
/// attaching from); `Err` says whose is newer. A folder without copies (`--catalog-copies 0`),
/// or a bucket without any, cannot tell and may.
pub(crate) fn check_current(bucket: &Bucket, mirror: &Path) -> io::Result<Result<(), String>> {
    let mine: Vec<String> = copies::list(mirror)
        .into_iter()
        .map(|c| c.record)
        .chain(remembered_in_bucket(mirror))
        .map(|r| r.zst_sha256)
        .collect();
    if mine.is_empty() {
        return Ok(Ok(()));
    }
    let Some((key, newest)) = copies_in(bucket)?.into_iter().next() else {
        return Ok(Ok(()));
    };
    if mine.contains(&newest.zst_sha256) {
        return Ok(Ok(()));
    }
    Ok(Err(format!(
        "the newest catalog copy in the bucket ({}, made {} by {}) is not one this folder \
         made or attached from: another machine wrote to the mirror since, and this folder's \
         catalog is behind; `rsmirror attach {} --mirror NEW-FOLDER` takes up the mirror as \
         it is now",
        bucket.describe(&key),
        newest.made,
        newest.by,
        bucket.url()
    )))
}
