//! Ctrl-C and `kill` (SIGINT, SIGTERM) end a run honestly: one line on stderr saying what was
//! stopped and that a re-run is safe, and the run recorded as `interrupted` (not, at the next
//! run, `abandoned`), then exit 130. Nothing else needs undoing: every catalog transaction is
//! atomic and a new object is linked in only once complete, so what committed before the signal
//! stays and what did not is gone with the process.
//!
//! The signals are blocked in every thread (set in `main` before any thread starts) and taken
//! by one thread with `sigwait`, which may then do ordinary work: open the catalog and record
//! the run. The store says which run is going ([`beginning`], [`ending`]).
//!
//! A signal that comes once the run's end is recorded (its outcome and exit code in the
//! catalog: what is left is sealing the catalog and its copy) does not contradict that record
//! with a 130: the command finishes as recorded, and says so; a second signal stops it at once
//! (the seal left open, which the next writer's full read of the catalog settles).

use std::path::PathBuf;
use std::sync::Mutex;

/// The catalog and run id of the run under way, if any, and how to mark it interrupted (the
/// catalog's own function, handed in by the store: this module sits below it).
static CURRENT: Mutex<Option<(PathBuf, i64, MarkInterrupted)>> = Mutex::new(None);

/// Marks run `run_id` of the catalog at the path interrupted; whether it was recorded.
pub(crate) type MarkInterrupted = fn(&std::path::Path, i64) -> bool;

/// The run whose end is recorded while the process finishes (sealing the catalog).
static ENDED: Mutex<Option<i64>> = Mutex::new(None);

/// What a command that records no run leaves if stopped now (an export's DEST), if anything.
static LEAVES: Mutex<Option<String>> = Mutex::new(None);

/// Scratch files of this process (a list's scratch copy in `staging/`), removed on a signal:
/// a list of millions of entries is a large file, and the next run may be days away.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A command that stops on its own when told (`serve`, which finishes the requests under
/// way): the first signal is handed to it (`true`: SIGTERM, `false`: SIGINT) instead of
/// ending the process; a second one ends it at once.
type Handover = Box<dyn Fn(bool) + Send>;
static HANDOVER: Mutex<Option<Handover>> = Mutex::new(None);

/// Hand the next SIGTERM or SIGINT to `f` (see [`HANDOVER`]).
pub(crate) fn hand_signals_to(f: impl Fn(bool) + Send + 'static) {
    *HANDOVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(f));
}

/// `path` is a scratch file until [`scratch_gone`]: a signal removes it (and SQLite's journal
/// beside it) before the process exits.
pub(crate) fn scratch_made(path: &std::path::Path) {
    SCRATCH
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(path.to_path_buf());
}

/// `path` was removed by its owner.
pub(crate) fn scratch_gone(path: &std::path::Path) {
    SCRATCH
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|p| p != path);
}

/// Remove the scratch files left (on a signal: the process exits next; an open connection
/// to one reads on from the unlinked file until then).
#[cfg(unix)]
fn remove_scratch() {
    for path in SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
        for end in ["", "-journal", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(end);
            let _ = std::fs::remove_file(PathBuf::from(p));
        }
    }
}

/// From now on, a signal says this (what is left, and how to finish it) instead of "nothing
/// was written".
pub(crate) fn stopping_leaves(what: String) {
    *LEAVES.lock().unwrap_or_else(|e| e.into_inner()) = Some(what);
}

/// Record the start of a run with `record` (the catalog's insert, giving the run's id), in the
/// catalog at `db`: a signal meanwhile waits, then finds the run going (and marks it
/// interrupted with `mark`), never a recorded run it does not know of.
pub(crate) fn beginning<E>(
    db: Option<&str>,
    mark: MarkInterrupted,
    record: impl FnOnce() -> Result<i64, E>,
) -> Result<i64, E> {
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    let run_id = record()?;
    if let Some(db) = db.filter(|d| !d.is_empty()) {
        *current = Some((PathBuf::from(db), run_id, mark));
    }
    Ok(run_id)
}

/// Record the end of run `run_id` with `record` (the catalog's update): a signal meanwhile
/// waits, then finds the run either going (and marks it interrupted) or ended, never between.
pub(crate) fn ending<T, E>(run_id: i64, record: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    let recorded = record()?;
    if current.as_ref().is_some_and(|(_, id, _)| *id == run_id) {
        *current = None;
        *ENDED.lock().unwrap_or_else(|e| e.into_inner()) = Some(run_id);
    }
    Ok(recorded)
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
        let mut finishing = false;
        let name = loop {
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
            let handover = HANDOVER.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(stop) = handover {
                stop(signal == libc::SIGTERM);
                continue;
            }
            // The current run's lock is held while this decides: a run ends, or is marked
            // interrupted, not both.
            let current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
            let ended = *ENDED.lock().unwrap_or_else(|e| e.into_inner());
            match on_signal(current.is_some(), ended, finishing) {
                OnSignal::Finish(run_id) => {
                    finishing = true;
                    say!(
                        "rsmirror: {name} after run {run_id} had ended and was recorded: \
                         finishing as recorded (sealing the catalog); a second signal stops at \
                         once"
                    );
                }
                OnSignal::Stop => break name,
            }
        };
        remove_scratch();
        let current = CURRENT.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match current {
            Some((db, run_id, mark)) => {
                let recorded = mark(&db, run_id);
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

/// What a signal does.
#[derive(Debug, PartialEq, Eq)]
enum OnSignal {
    /// Stop now (exit 130), the run going (if any) recorded as interrupted.
    Stop,
    /// Let the process finish as run N's record says: its end is recorded.
    Finish(i64),
}

/// A signal's effect: with a run going, or none ended, stop; with the run's end recorded (and
/// no signal before this one since), finish as recorded.
fn on_signal(going: bool, ended: Option<i64>, finishing: bool) -> OnSignal {
    match ended {
        Some(run_id) if !going && !finishing => OnSignal::Finish(run_id),
        _ => OnSignal::Stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 66, 10: a signal once the run's end is recorded does not turn an `ok` run into
    /// an exit 130; a second one stops at once; a run going is stopped and marked.
    #[test]
    fn a_signal_after_the_run_ended_lets_it_finish_as_recorded() {
        assert_eq!(on_signal(true, None, false), OnSignal::Stop);
        assert_eq!(on_signal(false, None, false), OnSignal::Stop);
        assert_eq!(on_signal(false, Some(7), false), OnSignal::Finish(7));
        assert_eq!(on_signal(false, Some(7), true), OnSignal::Stop);
        // A later run of the same process going: it is the one stopped.
        assert_eq!(on_signal(true, Some(7), false), OnSignal::Stop);
    }

    /// The end of a run and a signal do not interleave: `ending` holds the run while the
    /// record is written, and the run is then ended, not going.
    #[test]
    fn a_run_is_going_from_its_record_until_its_end_is_recorded() {
        let begun: Result<i64, ()> = beginning(
            Some("/nonexistent/catalog.sqlite"),
            |_, _| false,
            || {
                // The signal thread would wait here: it cannot see no run while one is recorded.
                assert!(CURRENT.try_lock().is_err());
                Ok(41)
            },
        );
        assert_eq!(begun, Ok(41));
        assert_eq!(CURRENT.lock().unwrap().as_ref().map(|c| c.1), Some(41));
        let got: Result<u8, ()> = ending(41, || {
            // The signal thread would wait here: the run is still the current one.
            assert!(CURRENT.try_lock().is_err());
            Ok(1)
        });
        assert_eq!(got, Ok(1));
        assert!(CURRENT.lock().unwrap().is_none());
        assert_eq!(*ENDED.lock().unwrap(), Some(41));
    }
}
