//! `MIRROR/.lock`: one writer at a time. An OS advisory lock (`File::try_lock`), so a process
//! that dies — even by SIGKILL — releases it; the file holds the holder's pid for the message.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

#[derive(Debug)]
pub struct MirrorLock {
    _file: File,
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another rsmirror run (pid {holder}) holds the lock {path}; wait for it to finish")]
    Held { path: String, holder: String },
    /// A mirror whose objects are in a bucket: another machine's writer holds its lease.
    #[error(
        "{holder} holds the mirror's lease {lease} since {since} (renewed {renewed}); wait for it \
         to finish (a lease not renewed for {stale} is stale, and taken over)"
    )]
    Leased {
        lease: String,
        holder: String,
        since: String,
        renewed: String,
        stale: String,
    },
    #[error("cannot lock {path}: {source}{}", read_only_hint(source))]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What still works on a mirror that cannot be written.
fn read_only_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::ReadOnlyFilesystem => {
            " (the mirror is on read-only media: nothing can be written there; `audit --offline` \
             and the reading commands work)"
        }
        _ => "",
    }
}

impl MirrorLock {
    pub(crate) fn acquire(mirror: &Path) -> Result<MirrorLock, LockError> {
        Self::acquire_file(&mirror.join(".lock"))
    }

    /// The lock in the file at `path` (an export's DEST has its own).
    pub(crate) fn acquire_file(path: &Path) -> Result<MirrorLock, LockError> {
        let path = path.to_path_buf();
        let io = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(LockError::Held {
                    path: path.display().to_string(),
                    holder: if holder.is_empty() {
                        "unknown".into()
                    } else {
                        holder.into()
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        Ok(MirrorLock { _file: file })
    }
}

/// A lock whose file goes when it is released: an export's, in a DEST that is published as it
/// is (a bag, a tree served by a web server), where a lock file left behind would be published
/// too. An export stopped midway leaves it, with the export's INCOMPLETE flag.
#[derive(Debug)]
pub struct RemovableLock {
    lock: MirrorLock,
    path: std::path::PathBuf,
}

impl RemovableLock {
    /// The lock in the file at `path`. The file one holder removes may be the one another
    /// opened just before: a lock taken on a file no longer at `path` is taken again.
    pub(crate) fn acquire(path: &Path) -> Result<RemovableLock, LockError> {
        loop {
            let lock = MirrorLock::acquire_file(path)?;
            if same_file(&lock._file, path) {
                return Ok(RemovableLock {
                    lock,
                    path: path.to_path_buf(),
                });
            }
        }
    }

    /// Remove the file, then release the lock.
    pub(crate) fn remove(self) -> std::io::Result<()> {
        let removed = std::fs::remove_file(&self.path);
        drop(self.lock);
        removed
    }
}

/// Whether `file` is the file at `path` (on other systems than Unix: taken as so).
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removable_lock_goes_with_its_file_and_excludes_while_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("export.lock");
        let held = RemovableLock::acquire(&path).unwrap();
        assert!(matches!(
            RemovableLock::acquire(&path),
            Err(LockError::Held { .. })
        ));
        held.remove().unwrap();
        assert!(!path.exists());
        RemovableLock::acquire(&path).unwrap().remove().unwrap();
    }

    #[test]
    fn second_lock_names_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = MirrorLock::acquire(dir.path()).unwrap();
        let err = MirrorLock::acquire(dir.path()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        drop(first);
        MirrorLock::acquire(dir.path()).unwrap();
    }
}
