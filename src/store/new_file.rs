//! Files being written for the object store, before they are verified and put in place.
//!
//! On Linux a new object is written to an anonymous file (`O_TMPFILE`) and, once verified,
//! given its one name in the store with `linkat`. Compared with a named `.part` file renamed
//! into the store, this makes one directory entry instead of three directory changes, takes
//! no file-system-wide lock (a rename between folders serialises on the kernel's rename
//! mutex, which eight fetch workers queued on), never waits on a `staging/` folder block
//! that a `syncfs` is writing out, and leaves nothing behind when the process dies: an
//! anonymous file that was never linked is freed by the kernel. Elsewhere, and on a file
//! system without `O_TMPFILE`, the file is a named `.part` file in the staging folder.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// A file being written, removed (or, anonymous, freed) unless it is kept or put in the store.
#[derive(Debug)]
pub struct NewFile {
    file: Option<File>,
    /// `None` for an anonymous file.
    name: Option<PathBuf>,
    /// The folder it was created in (also where a name is made for it when one is needed).
    folder: PathBuf,
}

static PART_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Whether anonymous files work here: not tried yet, yes, no.
static ANONYMOUS: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

impl NewFile {
    /// A new file for bytes headed for the object store: anonymous where possible, else a
    /// named `.part` file in `folder`.
    pub fn create(folder: &Path) -> io::Result<NewFile> {
        if ANONYMOUS.load(Ordering::Relaxed) != NO {
            match anonymous(folder) {
                Ok(file) => {
                    ANONYMOUS.store(YES, Ordering::Relaxed);
                    return Ok(NewFile {
                        file: Some(file),
                        name: None,
                        folder: folder.to_path_buf(),
                    });
                }
                Err(e) if unsupported(&e) => ANONYMOUS.store(NO, Ordering::Relaxed),
                // A real failure (a missing folder, a full disk): a named file would fail too.
                Err(e) => return Err(e),
            }
        }
        NewFile::create_named(folder)
    }

    /// A new named file `<pid>-<counter>.part` in `folder`; never opens an existing one (a
    /// leftover of a crashed run with the same pid is skipped, not overwritten).
    pub fn create_named(folder: &Path) -> io::Result<NewFile> {
        let (name, file) = unique_part(folder)?;
        Ok(NewFile {
            file: Some(file),
            name: Some(name),
            folder: folder.to_path_buf(),
        })
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file
            .as_mut()
            .expect("written after close")
            .write_all(bytes)
    }

    /// The name, or the folder of an anonymous file: for messages.
    pub fn describe(&self) -> PathBuf {
        match &self.name {
            Some(name) => name.clone(),
            None => self.folder.join("(anonymous file)"),
        }
    }

    /// Close and keep the file under a name: its own, or (anonymous) a new `.part` name in
    /// its folder.
    pub fn keep(mut self) -> io::Result<PathBuf> {
        let name = match self.name.take() {
            Some(name) => name,
            None => self.link_unique()?,
        };
        self.file = None;
        Ok(name)
    }

    /// Give the file the name `dest`, replacing whatever is there; the file is made
    /// read-only first. Consumes the file either way.
    pub fn put_at(mut self, dest: &Path) -> io::Result<()> {
        let file = self.file.as_ref().expect("put after close");
        set_read_only(file)?;
        if self.name.is_none() {
            match link_fd(file, dest) {
                Ok(()) => {
                    self.file = None;
                    return Ok(());
                }
                // Replaced, as a rename would: a copy torn by an earlier crash is healed.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    self.name = Some(self.link_unique()?);
                }
                Err(e) => return Err(e),
            }
        }
        let name = self.name.as_ref().expect("named by now");
        std::fs::rename(name, dest)?;
        self.name = None;
        self.file = None;
        Ok(())
    }

    /// Link the anonymous file under a new `.part` name in its folder.
    fn link_unique(&self) -> io::Result<PathBuf> {
        let file = self.file.as_ref().expect("linked after close");
        let mut last = None;
        for _ in 0..1000 {
            let path = next_part_name(&self.folder);
            match link_fd(file, &path) {
                Ok(()) => return Ok(path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free staging file name")))
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        self.file = None;
        if let Some(name) = self.name.take() {
            let _ = std::fs::remove_file(name);
        }
    }
}

fn next_part_name(folder: &Path) -> PathBuf {
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let pid = *PID.get_or_init(std::process::id);
    let n = PART_COUNTER.fetch_add(1, Ordering::Relaxed);
    folder.join(format!("{pid}-{n}.part"))
}

fn unique_part(folder: &Path) -> io::Result<(PathBuf, File)> {
    let mut last = None;
    for _ in 0..1000 {
        let path = next_part_name(folder);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free staging file name")))
}

#[cfg(unix)]
fn set_read_only(file: &File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // fchmod: no path lookup; exactly 0444 whatever the umask was.
    file.set_permissions(std::fs::Permissions::from_mode(0o444))
}

#[cfg(not(unix))]
fn set_read_only(file: &File) -> io::Result<()> {
    let mut perms = file.metadata()?.permissions();
    perms.set_readonly(true);
    file.set_permissions(perms)
}

/// The errors that mean "no anonymous files here" (the file system or kernel lacks
/// `O_TMPFILE`, or there is no /proc to link through).
fn unsupported(e: &io::Error) -> bool {
    #[cfg(unix)]
    if let Some(code) = e.raw_os_error() {
        return [libc::EOPNOTSUPP, libc::EISDIR, libc::EINVAL].contains(&code);
    }
    e.kind() == io::ErrorKind::Unsupported
}

#[cfg(target_os = "linux")]
fn anonymous(folder: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Linking needs /proc (see `link_fd`); without it, named files.
    if !Path::new("/proc/self/fd").is_dir() {
        return Err(io::Error::from(io::ErrorKind::Unsupported));
    }
    OpenOptions::new()
        .write(true)
        .mode(0o444)
        .custom_flags(libc::O_TMPFILE)
        .open(folder)
}

#[cfg(not(target_os = "linux"))]
fn anonymous(_folder: &Path) -> io::Result<File> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Give an open file the name `dest` (`linkat` of its `/proc/self/fd` entry: linking the
/// descriptor itself, `AT_EMPTY_PATH`, needs a capability a mirror should not need).
#[cfg(target_os = "linux")]
fn link_fd(file: &File, dest: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let from =
        CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL in a number");
    let to = CString::new(dest.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))?;
    // SAFETY: both arguments are valid NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn link_fd(_file: &File, _dest: &Path) -> io::Result<()> {
    unreachable!("no anonymous files here")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(folder: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_new_file_put_in_place_is_read_only_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let staging = dir.path().join("staging");
        std::fs::create_dir(&staging).unwrap();
        let mut f = NewFile::create(&staging).unwrap();
        f.write_all(b"alpha\n").unwrap();
        let dest = dir.path().join("object");
        f.put_at(&dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"alpha\n");
        assert!(std::fs::metadata(&dest).unwrap().permissions().readonly());
        assert!(names(&staging).is_empty());
        // On Linux (tmpfs and ext4 both have O_TMPFILE) the file was never named in staging.
        #[cfg(target_os = "linux")]
        assert_eq!(ANONYMOUS.load(Ordering::Relaxed), YES);
    }

    #[test]
    fn an_existing_object_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("object");
        std::fs::write(&dest, b"torn").unwrap();
        let mut f = NewFile::create(dir.path()).unwrap();
        f.write_all(b"whole\n").unwrap();
        f.put_at(&dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"whole\n");
        assert_eq!(names(dir.path()), vec!["object"]);
    }

    #[test]
    fn a_dropped_file_leaves_nothing_named_or_anonymous() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = NewFile::create(dir.path()).unwrap();
        a.write_all(b"x").unwrap();
        let mut b = NewFile::create_named(dir.path()).unwrap();
        b.write_all(b"y").unwrap();
        let c = NewFile::create_named(dir.path()).unwrap();
        assert_ne!(b.describe(), c.describe());
        assert_eq!(names(dir.path()).len(), 2, "the named ones are visible");
        drop((a, b, c));
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn a_kept_file_has_a_part_name_in_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        for mut f in [
            NewFile::create(dir.path()).unwrap(),
            NewFile::create_named(dir.path()).unwrap(),
        ] {
            f.write_all(b"kept").unwrap();
            let path = f.keep().unwrap();
            assert_eq!(path.parent(), Some(dir.path()));
            assert!(path.to_string_lossy().ends_with(".part"));
            assert_eq!(std::fs::read(&path).unwrap(), b"kept");
        }
        assert_eq!(names(dir.path()).len(), 2);
    }

    #[test]
    fn a_missing_folder_is_an_error_not_a_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let e = NewFile::create(&dir.path().join("gone")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
