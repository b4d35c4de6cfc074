//! The free space the mirror's file system keeps (`--min-free`): what a transfer, the writer's
//! commits and the catalog's copy check before they add to the disk, and how a full file
//! system is told (bytes, or inodes).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// `--min-free` as the command gave it; `u64::MAX`: not given (the default margin).
static MIN_FREE: AtomicU64 = AtomicU64::new(u64::MAX);

/// The command's `--min-free` (None: the default, 1% of the file system, at most 1 GiB).
pub(crate) fn set_min_free(bytes: Option<u64>) {
    MIN_FREE.store(bytes.unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// The command's `--min-free`, as [`set_min_free`] left it.
pub(crate) fn min_free() -> Option<u64> {
    match MIN_FREE.load(Ordering::Relaxed) {
        u64::MAX => None,
        n => Some(n),
    }
}

/// What `statvfs` says of the file system under `path`.
struct Fs {
    free: u64,
    size: u64,
    inodes: u64,
    free_inodes: u64,
}

fn statvfs(path: &Path) -> Option<Fs> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: a zeroed statvfs is a valid buffer; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let unit = st.f_frsize as u64;
    Some(Fs {
        free: (st.f_bavail as u64).saturating_mul(unit),
        size: (st.f_blocks as u64).saturating_mul(unit),
        inodes: st.f_files as u64,
        free_inodes: st.f_favail as u64,
    })
}

/// The free bytes on the file system under `path` and the margin `min_free` keeps there.
pub(crate) fn free_and_margin(path: &Path, min_free: Option<u64>) -> Option<(u64, u64)> {
    let fs = statvfs(path)?;
    Some((fs.free, min_free.unwrap_or((fs.size / 100).min(1 << 30))))
}

/// `Err` with the message for the run's end when the file system under `path` has less than
/// `min_free` (by default 1% of it, at most 1 GiB) free once `reserved` more bytes are written
/// (transfers in flight, a copy about to be made), or no inode left for another file.
pub(crate) fn room_left(path: &Path, min_free: Option<u64>, reserved: u64) -> Result<(), String> {
    let Some(fs) = statvfs(path) else {
        return Ok(());
    };
    if fs.inodes > 0 && fs.free_inodes == 0 {
        return Err(inodes_said(&fs));
    }
    let margin = min_free.unwrap_or((fs.size / 100).min(1 << 30));
    if margin > 0 && fs.free < margin.saturating_add(reserved) {
        let human = crate::report::human_bytes;
        return Err(match reserved {
            0 => format!(
                "{} free, under the --min-free margin of {}",
                human(fs.free),
                human(margin)
            ),
            r => format!(
                "{} free, {} of it promised to what is being written, under the --min-free \
                 margin of {}",
                human(fs.free),
                human(r),
                human(margin)
            ),
        });
    }
    Ok(())
}

fn inodes_said(fs: &Fs) -> String {
    format!(
        "no inode left: {} of the file system's {} inodes are free (each object is a file; \
         free bytes alone do not help: {} free)",
        fs.free_inodes,
        fs.inodes,
        crate::report::human_bytes(fs.free)
    )
}

/// A full disk's message, with the inodes named when they, not the bytes, ran out (none or
/// almost none left: the run's own clean-up may have freed a few since).
pub(crate) fn full_said(path: &Path, message: String) -> String {
    match statvfs(path) {
        Some(fs) if fs.inodes > 0 && (fs.free_inodes < 64 || fs.free_inodes * 1000 < fs.inodes) => {
            format!("{message}; {}", inodes_said(&fs))
        }
        _ => message,
    }
}
