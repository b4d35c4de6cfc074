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
use std::io::{self, Read, Write};
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
    pub(crate) fn create(folder: &Path) -> io::Result<NewFile> {
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
    pub(crate) fn create_named(folder: &Path) -> io::Result<NewFile> {
        let (name, file) = unique_part(folder)?;
        Ok(NewFile {
            file: Some(file),
            name: Some(name),
            folder: folder.to_path_buf(),
        })
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file
            .as_mut()
            .expect("written after close")
            .write_all(bytes)
    }

    /// The file itself, to read back what was written (an upload).
    pub(crate) fn file_mut(&mut self) -> &mut File {
        self.file.as_mut().expect("read after close")
    }

    /// The name, or the folder of an anonymous file: for messages.
    pub(crate) fn describe(&self) -> PathBuf {
        match &self.name {
            Some(name) => name.clone(),
            None => self.folder.join("(anonymous file)"),
        }
    }

    /// Close and keep the file under a name: its own, or (anonymous) a new `.part` name in
    /// its folder.
    pub(crate) fn keep(mut self) -> io::Result<PathBuf> {
        let name = match self.name.take() {
            Some(name) => name,
            None => self.link_unique()?,
        };
        self.file = None;
        Ok(name)
    }

    /// Give the file the name `dest`, replacing whatever is there unless it is a read-only
    /// file of the same bytes (then it stays, and this file is dropped); the file is made
    /// read-only first. Consumes the file either way.
    /// `Ok(true)` when nothing was at `dest` before.
    pub fn put_at(self, dest: &Path) -> io::Result<bool> {
        self.put(dest, None).map(|placed| placed.fresh)
    }

    /// [`NewFile::put_at`] for a `dest` that is also `relative` to the open folder `within`:
    /// an anonymous file is linked there by that shorter name, resolved from the folder
    /// rather than from the root (the whole mirror path, once per object of a baseline).
    /// What was placed is handed back open ([`Placed`]).
    pub(crate) fn put_within(
        self,
        within: &File,
        relative: &Path,
        dest: &Path,
    ) -> io::Result<Placed> {
        self.put(dest, Some((within, relative)))
    }

    fn put(mut self, dest: &Path, within: Option<(&File, &Path)>) -> io::Result<Placed> {
        let file = self.file.as_ref().expect("put after close");
        // An anonymous file was created 0444; unless the umask took a read bit away, it has
        // that mode already (a system call per object saved).
        if self.name.is_some() || !created_read_only() {
            set_read_only(file)?;
        }
        // An anonymous file comes past this block only when its link was refused and the copy
        // in place was compared and found to differ.
        let anonymous = self.name.is_none();
        if anonymous {
            let linked = match within {
                Some((folder, relative)) => link_fd_within(file, folder, relative),
                None => link_fd(file, dest),
            };
            match linked {
                Ok(()) => {
                    return Ok(Placed {
                        fresh: true,
                        file: self.file.take(),
                    });
                }
                // The same bytes there already: kept (see `holds_the_same`).
                Err(e)
                    if e.kind() == io::ErrorKind::AlreadyExists && holds_the_same(file, dest) =>
                {
                    self.file = None;
                    return Ok(Placed::kept());
                }
                // Replaced, as a rename would: a copy torn by an earlier crash is healed.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    self.name = Some(self.link_unique()?);
                }
                Err(e) => return Err(e),
            }
        }
        let name = self.name.as_ref().expect("named by now");
        // Only a named file (no anonymous files here) or a replacement comes this way.
        let fresh = !dest.exists();
        if !fresh && !anonymous && holds_the_same(file, dest) {
            // Our named copy is removed on drop; the one in place stays.
            return Ok(Placed::kept());
        }
        std::fs::rename(name, dest)?;
        self.name = None;
        Ok(Placed {
            fresh,
            file: self.file.take(),
        })
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

/// What [`NewFile::put_within`] did.
#[derive(Debug)]
pub(crate) struct Placed {
    /// Nothing was at the place before; `false`: something was (kept when it held the same
    /// bytes, else replaced).
    pub(crate) fresh: bool,
    /// The file now at the place, still open; `None` when the one already there was kept.
    pub(crate) file: Option<File>,
}

impl Placed {
    /// The file already in place held the same bytes and stays.
    fn kept() -> Placed {
        Placed {
            fresh: false,
            file: None,
        }
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

/// The largest new file compared byte for byte with the file already at its place.
const COMPARED_UP_TO: u64 = 64 * 1024;

/// Whether `dest` already holds exactly the bytes of `file`, read-only: then the copy in place
/// is kept and the new one dropped, instead of a rename over it. Only for files of up to
/// [`COMPARED_UP_TO`] bytes (both are read), where the replacement would cost more than the
/// reading: the rename frees the old inode and discards its blocks, and with many resources
/// of the same bytes (one placeholder served for thousands of URLs) that was a third of a
/// baseline's time. A copy torn by a crash, or changed, differs and is replaced as before;
/// any error reading either says "not the same" and the replacement goes ahead.
fn holds_the_same(file: &File, dest: &Path) -> bool {
    let Ok(ours) = file.metadata() else {
        return false;
    };
    if ours.len() > COMPARED_UP_TO {
        return false;
    }
    let Ok(existing) = open_no_follow(dest) else {
        return false;
    };
    match existing.metadata() {
        Ok(m) if m.is_file() && m.len() == ours.len() && m.permissions().readonly() => {}
        _ => return false,
    }
    let len = ours.len() as usize;
    let mut mine = vec![0u8; len];
    if read_at_start(file, &mut mine).is_err() {
        return false;
    }
    // One byte more than expected: a file that grew since its length was read is not the same.
    let mut theirs = Vec::with_capacity(len + 1);
    match existing.take(len as u64 + 1).read_to_end(&mut theirs) {
        Ok(_) => theirs == mine,
        Err(_) => false,
    }
}

/// Opens `dest` for reading unless it is a symbolic link: a link at an object's place is
/// replaced by the object, whatever it points to.
#[cfg(unix)]
fn open_no_follow(dest: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dest)
}

#[cfg(not(unix))]
fn open_no_follow(dest: &Path) -> io::Result<File> {
    if std::fs::symlink_metadata(dest)?.file_type().is_symlink() {
        return Err(io::Error::other("a symbolic link"));
    }
    File::open(dest)
}

#[cfg(unix)]
fn read_at_start(file: &File, buf: &mut [u8]) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, 0)
}

#[cfg(not(unix))]
fn read_at_start(_file: &File, _buf: &mut [u8]) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
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
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
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

/// Whether a file created with mode 0444 gets exactly that mode: the process's umask (read
/// once from /proc/self/status, Linux 4.7 and later; rsmirror never changes it) takes no
/// read bit. Unknown: no.
fn created_read_only() -> bool {
    static KEEPS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KEEPS.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .is_some_and(|umask| umask & 0o444 == 0)
    })
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
    // Linking may need /proc (see `link_fd`); without it, named files. Checked until the
    // first anonymous file is made (a system call per object otherwise).
    if ANONYMOUS.load(Ordering::Relaxed) == UNKNOWN && !Path::new("/proc/self/fd").is_dir() {
        return Err(io::Error::from(io::ErrorKind::Unsupported));
    }
    // Readable too: compared with a copy already in place (`holds_the_same`).
    OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o444)
        .custom_flags(libc::O_TMPFILE)
        .open(folder)
}

#[cfg(not(target_os = "linux"))]
fn anonymous(_folder: &Path) -> io::Result<File> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Whether `linkat` of a descriptor itself (`AT_EMPTY_PATH`) works here: Linux 6.10 and later
/// allow it for a file the caller opened; before, it needs a capability a mirror should not
/// need, and the file is linked through its `/proc/self/fd` entry instead (a longer path
/// walk per object).
#[cfg(target_os = "linux")]
static LINK_DESCRIPTOR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Give an open file the name `dest`.
#[cfg(target_os = "linux")]
fn link_fd(file: &File, dest: &Path) -> io::Result<()> {
    link_fd_at(file, libc::AT_FDCWD, dest)
}

/// Give an open file the name `relative` in the open folder `within`.
#[cfg(target_os = "linux")]
fn link_fd_within(file: &File, within: &File, relative: &Path) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    link_fd_at(file, within.as_raw_fd(), relative)
}

/// Give an open file the name `dest`, resolved from the folder `to_dir` when relative.
#[cfg(target_os = "linux")]
fn link_fd_at(file: &File, to_dir: libc::c_int, dest: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let to = std::ffi::CString::new(dest.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))?;
    let to = (to_dir, to.as_c_str());
    if !LINK_DESCRIPTOR.load(Ordering::Relaxed) {
        return link_through_proc(file, to);
    }
    match link_descriptor(file, to) {
        // Refused as unprivileged on an older kernel (ENOENT), or a missing folder for
        // `dest`: /proc tells which. A kernel that refuses the descriptor is not asked again.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EPERM)) => {
            let linked = link_through_proc(file, to);
            if linked.is_ok() {
                LINK_DESCRIPTOR.store(false, Ordering::Relaxed);
            }
            linked
        }
        other => other,
    }
}

/// `linkat(fd, "", to_dir, to, AT_EMPTY_PATH)`.
#[cfg(target_os = "linux")]
fn link_descriptor(file: &File, to: (libc::c_int, &std::ffi::CStr)) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    linkat(file.as_raw_fd(), c"", to, libc::AT_EMPTY_PATH)
}

/// `linkat` of the file's `/proc/self/fd` entry, following that link.
#[cfg(target_os = "linux")]
fn link_through_proc(file: &File, to: (libc::c_int, &std::ffi::CStr)) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .expect("no NUL in a number");
    linkat(libc::AT_FDCWD, &from, to, libc::AT_SYMLINK_FOLLOW)
}

/// `linkat(from_dir, from, to_dir, to, flags)`.
#[cfg(target_os = "linux")]
fn linkat(
    from_dir: libc::c_int,
    from: &std::ffi::CStr,
    (to_dir, to): (libc::c_int, &std::ffi::CStr),
    flags: libc::c_int,
) -> io::Result<()> {
    // SAFETY: both paths are valid NUL-terminated strings that outlive the call; the
    // descriptors are open (or AT_FDCWD).
    let r = unsafe { libc::linkat(from_dir, from.as_ptr(), to_dir, to.as_ptr(), flags) };
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

#[cfg(not(target_os = "linux"))]
fn link_fd_within(_file: &File, _within: &File, _relative: &Path) -> io::Result<()> {
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

    /// Both ways of naming an anonymous file give the same result, by a whole path or by a
    /// name relative to an open folder; whichever `link_fd` uses here, the other one is
    /// exercised too.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_anonymous_file_is_linked_by_descriptor_or_through_proc() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::io::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("in")).unwrap();
        let within = File::open(dir.path().join("in")).unwrap();
        type Link = fn(&File, (libc::c_int, &std::ffi::CStr)) -> io::Result<()>;
        let ways: [(&str, Link); 2] =
            [("descriptor", link_descriptor), ("proc", link_through_proc)];
        for (name, link) in ways {
            let whole = dir.path().join(name);
            let relative = Path::new(name);
            for (to_dir, to, dest) in [
                (libc::AT_FDCWD, whole.as_path(), whole.clone()),
                (
                    within.as_raw_fd(),
                    relative,
                    dir.path().join("in").join(name),
                ),
            ] {
                let mut f = anonymous(dir.path()).unwrap();
                f.write_all(name.as_bytes()).unwrap();
                let to = std::ffi::CString::new(to.as_os_str().as_bytes()).unwrap();
                match link(&f, (to_dir, &to)) {
                    Ok(()) => assert_eq!(std::fs::read(&dest).unwrap(), name.as_bytes()),
                    // An unprivileged caller on a kernel before 6.10: link_fd falls back.
                    Err(e) if name == "descriptor" => {
                        assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
                        continue;
                    }
                    Err(e) => panic!("{name}: {e}"),
                }
                // An existing name is never replaced by a link.
                let e = link(&f, (to_dir, &to)).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{name}");
            }
        }
        // A missing folder for the name is an error either way, not a reason to stop
        // linking descriptors.
        let mut f = NewFile::create(dir.path()).unwrap();
        f.write_all(b"x").unwrap();
        let e = f
            .put_at(&dir.path().join("gone").join("object"))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[cfg(unix)]
    #[test]
    fn an_object_is_exactly_read_only_for_everyone_the_umask_lets_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for mut f in [
            NewFile::create(dir.path()).unwrap(),
            NewFile::create_named(dir.path()).unwrap(),
        ] {
            f.write_all(b"x").unwrap();
            let dest = dir
                .path()
                .join(format!("object-{}", names(dir.path()).len()));
            f.put_at(&dest).unwrap();
            let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
            if created_read_only() {
                assert_eq!(mode, 0o444, "{}", dest.display());
            } else {
                assert_eq!(mode & 0o222, 0, "{}", dest.display());
            }
        }
    }

    #[test]
    fn a_missing_folder_is_an_error_not_a_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let e = NewFile::create(&dir.path().join("gone")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
