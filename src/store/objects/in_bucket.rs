//! The objects of a mirror made with `--objects s3://BUCKET/PREFIX`: the folder's layout as
//! keys, `PREFIX/objects/sha256/ab/<sha256>`, uploaded create-only and checksummed
//! ([`Bucket::put_file_new`]), read back by streaming GETs.

use super::{
    check_sha256, is_fan, placed_in, Aside, In, Keep, Moved, ObjectMeta, ObjectStat, ObjectStore,
    Quarantined, Visited,
};
use crate::store::bucket::shared::{self, Lease, Refused};
use crate::store::bucket::{Bucket, Put};
use crate::store::new_file::NewFile;
use crate::store::StoreError;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The objects in a bucket.
#[derive(Debug)]
pub(super) struct InBucket {
    /// `mirror/objects`: where an entry would be in the folder (the paths of a walk).
    root: PathBuf,
    bucket: Arc<Bucket>,
}

impl InBucket {
    pub(super) fn new(root: PathBuf, bucket: Bucket) -> InBucket {
        InBucket {
            root,
            bucket: Arc::new(bucket),
        }
    }

    /// The store's error for what the bucket did or said.
    fn fault_of(&self, e: io::Error) -> StoreError {
        StoreError::Bucket {
            url: self.bucket.url().to_string(),
            message: e.to_string(),
        }
    }

    /// Upload `file` (verified: its SHA-256 is `sha256_hex`) to its place.
    fn upload(&self, file: &mut fs::File, sha256_hex: &str) -> io::Result<Put> {
        check_sha256(sha256_hex)?;
        self.bucket
            .put_file_new(&self.bucket.object_key(sha256_hex), file, sha256_hex)
    }

    /// Copy the object at `key` under `PREFIX/quarantine/run-RUN/` (its record beside it,
    /// first), then remove it: never deleted without a copy. The copy's key.
    fn quarantine(&self, key: &str, name: &str, aside: &Aside<'_>) -> io::Result<String> {
        let bucket = &self.bucket;
        let file_name = name.rsplit('/').next().unwrap_or("object");
        let folder = bucket.url().key(&format!("quarantine/run-{}", aside.run));
        let mut dest = format!("{folder}/{file_name}");
        let mut n = 1;
        while bucket.head(&dest)?.is_some() {
            dest = format!("{folder}/{file_name}.{n}");
            n += 1;
        }
        let record = aside.record(&bucket.describe(key));
        bucket.put_bytes(&format!("{dest}.json"), record.as_bytes())?;
        bucket.copy(key, &dest)?;
        bucket.delete(key)?;
        Ok(dest)
    }
}

impl Keep for InBucket {
    fn describe(&self, sha256_hex: &str) -> String {
        self.bucket.describe(&self.bucket.object_key(sha256_hex))
    }

    fn read(
        &self,
        sha256_hex: &str,
        _buf: &mut [u8],
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<bool> {
        self.bucket.get(&self.bucket.object_key(sha256_hex), sink)
    }

    /// Fetched first into an anonymous temporary file (`TMPDIR`).
    fn open(&self, sha256_hex: &str, _path: &Path) -> io::Result<Option<fs::File>> {
        use std::io::{Seek, Write};
        let mut file = tempfile::tempfile()?;
        let mut out = io::BufWriter::with_capacity(256 * 1024, &mut file);
        let found = self
            .bucket
            .get(&self.bucket.object_key(sha256_hex), &mut |data| {
                out.write_all(data)
            })?;
        out.flush()?;
        drop(out);
        if !found {
            return Ok(None);
        }
        file.seek(io::SeekFrom::Start(0))?;
        Ok(Some(file))
    }

    fn local_file(&self, _path: PathBuf) -> Option<PathBuf> {
        None
    }

    fn ingest(&self, staged: &Path, sha256_hex: &str) -> io::Result<()> {
        let mut file = fs::File::open(staged)?;
        self.upload(&mut file, sha256_hex)?;
        fs::remove_file(staged)
    }

    fn ingest_new(&self, mut file: NewFile, sha256_hex: &str) -> io::Result<bool> {
        Ok(self.upload(file.file_mut(), sha256_hex)? == Put::Stored)
    }

    fn sync(&self) -> io::Result<()> {
        // An upload is durable when the bucket has answered it.
        Ok(())
    }

    fn fault(&self, _what: &'static str, _sha256_hex: &str, e: io::Error) -> StoreError {
        // The bucket's words name the object.
        self.fault_of(e)
    }

    fn refused(&self, message: String) -> StoreError {
        StoreError::Bucket {
            url: self.bucket.url().to_string(),
            message: format!(
                "{message}; the run stopped at the first resource that could not go to the \
                 bucket (every other would fail the same way): when it is refused, check \
                 that these credentials may write there (and the bucket's quota); then run \
                 it again (a re-run is safe: what landed stays)"
            ),
        }
    }

    fn fails_every_ingest(&self, e: &io::Error) -> bool {
        // Refused, unreachable, failing: every other upload would be too. Other bytes under
        // this object's name are its own trouble.
        e.kind() != io::ErrorKind::InvalidData
    }

    fn remove(&self, sha256_hex: &str) -> io::Result<()> {
        self.bucket.delete(&self.bucket.object_key(sha256_hex))
    }

    fn holds_any(&self) -> Result<bool, StoreError> {
        self.bucket
            .holds_any(&self.bucket.url().key("objects/"))
            .map_err(|e| self.fault_of(e))
    }

    fn stat(&self) -> ObjectStat {
        let bucket = self.bucket.clone();
        ObjectStat(Box::new(move |sha256_hex| {
            match bucket.head(&bucket.object_key(sha256_hex))? {
                Some(len) => Ok(ObjectMeta {
                    is_file: true,
                    is_dir: false,
                    len,
                }),
                None => Err(io::Error::new(io::ErrorKind::NotFound, "no such object")),
            }
        }))
    }

    /// Every key under `PREFIX/objects/`, in key order (S3 lists keys in the order of their
    /// bytes), each with the size its listing gives. Placed objects (`sha256/ab/<sha256>`)
    /// share one prefix and so come in increasing name order; anything else under `objects/`
    /// is visited as not placed. A page of the listing is in memory at a time; nothing is
    /// taken ahead (`measure`): the listing gives every size.
    fn visit(
        &self,
        _measure: Option<&(dyn Fn(&str) -> bool + Sync)>,
        f: &mut dyn FnMut(Visited<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        let prefix = self.bucket.url().key("objects/");
        let mut folder = PathBuf::new();
        self.bucket.list(&prefix, &mut |listed| {
            let rel = &listed.key[prefix.len()..];
            let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel));
            folder.as_mut_os_string().clear();
            folder.push(&self.root);
            if !parent.is_empty() {
                folder.push(parent);
            }
            let placed = parent
                .strip_prefix("sha256/")
                .is_some_and(|fan| is_fan(fan) && placed_in(fan, name));
            let meta = ObjectMeta {
                is_file: true,
                is_dir: false,
                len: listed.size,
            };
            f(Visited {
                name,
                folder: In::Bucket(&folder, meta),
                placed,
                is_file: true,
                measured: None,
            })
        })
    }

    fn quarantine_object(
        &self,
        sha256_hex: &str,
        aside: &Aside<'_>,
    ) -> Result<Option<Quarantined>, StoreError> {
        let key = self.bucket.object_key(sha256_hex);
        if self
            .bucket
            .head(&key)
            .map_err(|e| self.fault_of(e))?
            .is_none()
        {
            return Ok(None);
        }
        let name = ObjectStore::relative_path(sha256_hex);
        let kept = self
            .quarantine(&key, &name, aside)
            .map_err(|e| self.fault_of(e))?;
        Ok(Some(Quarantined::Key(kept)))
    }

    fn quarantine_stray(&self, name: &str, aside: &Aside<'_>) -> Result<Option<Moved>, StoreError> {
        let key = self.bucket.url().key(name);
        let kept = self
            .quarantine(&key, name, aside)
            .map_err(|e| self.fault_of(e))?;
        Ok(Some(Moved {
            what: "an object no version names",
            to: self.bucket.describe(&kept),
        }))
    }

    fn unquarantine(&self, kept: &Quarantined, sha256_hex: &str) {
        if let Quarantined::Key(kept) = kept {
            let _ = self.bucket.copy(kept, &self.bucket.object_key(sha256_hex));
        }
    }

    fn quarantined_in(&self, run: i64) -> String {
        let folder = self.bucket.url().key(&format!("quarantine/run-{run}"));
        format!(
            "the damaged object is in {}/",
            self.bucket.describe(&folder)
        )
    }

    fn lease(&self, mirror: &Path, command: &str) -> Result<Option<Lease>, Refused> {
        shared::take_for_run(self.bucket.clone(), mirror, command).map(Some)
    }
}
