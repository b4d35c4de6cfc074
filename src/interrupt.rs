//! Ctrl-C and `kill` (SIGINT, SIGTERM) end a run honestly: one line on stderr saying what was
//! stopped and that a re-run is safe, and the run recorded as `interrupted` (not, at the next
//! run, `abandoned`), then exit 130. Nothing else needs undoing: every catalog transaction is
//! atomic and a new object is linked in only once complete, so what committed before the signal
//! stays and what did not is gone with the process.
//!
//! The signals are blocked in every thread (set in `main` before any thread starts) and taken
//! by one thread with `sigwait`, which may then do ordinary work: open the catalog and record
//! the run. The store says which run is going ([`running`], [`finished`]).

use std::path::PathBuf;
use std::sync::Mutex;

/// The catalog and run id of the run under way, if any.
static CURRENT: Mutex<Option<(PathBuf, i64)>> = Mutex::new(None);

/// What a command that records no run leaves if stopped now (an export's DEST), if anything.
static LEAVES: Mutex<Option<String>> = Mutex::new(None);

/// From now on, a signal says this (what is left, and how to finish it) instead of "nothing
/// was written".
pub(crate) fn stopping_leaves(what: String) {
    *LEAVES.lock().unwrap_or_else(|e| e.into_inner()) = Some(what);
}

/// A run started, recorded in the catalog at `db`.
pub(crate) fn running(db: Option<&str>, run_id: i64) {
    if let Some(db) = db.filter(|d| !d.is_empty()) {
        *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some((PathBuf::from(db), run_id));
    }
}

/// The run `run_id` ended and is recorded as such.
pub(crate) fn finished(run_id: i64) {
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    if current.as_ref().is_some_and(|(_, id)| *id == run_id) {
        *current = None;
    }
}

/// Take SIGINT and SIGTERM on a thread of their own from now on. Call before any other thread
/// starts (they inherit the blocked mask).
#[cfg(unix)]
pub fn watch() {
    // A file-size limit (`ulimit -f`, a container's) would end the process with SIGXFSZ at the
    // write that passes it, nothing recorded; ignored, that write fails with EFBIG instead, and
    // fails only the resource it was for (`net::fetch::staging_error`).
    // SAFETY: setting a signal's disposition to "ignore"; no handler is involved.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // SAFETY: plain libc calls on a local, zeroed signal set.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        set
    };
    std::thread::spawn(move || {
        let mut signal: libc::c_int = 0;
        // SAFETY: `set` is a valid signal set; sigwait writes the signal number.
        if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
            return;
        }
        let name = if signal == libc::SIGTERM {
            "SIGTERM"
        } else {
            "SIGINT"
        };
        let current = CURRENT.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match current {
            Some((db, run_id)) => {
                let recorded = crate::store::run_records::mark_interrupted(&db, run_id);
                say!(
                    "rsmirror: interrupted ({name}): run {run_id} stopped{}; what it committed \
                     stays, the rest is gone with it: a re-run is safe",
                    if recorded {
                        " and recorded as interrupted"
                    } else {
                        ""
                    }
                );
            }
            None => match LEAVES.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                Some(what) => say!("rsmirror: interrupted ({name}): {what}"),
                None => say!("rsmirror: interrupted ({name}); nothing was written"),
            },
        }
        std::process::exit(130);
    });
}

#[cfg(not(unix))]
pub fn watch() {}
