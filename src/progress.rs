//! Progress: a bar on a terminal, nothing otherwise (cron) or with `-q`, and `status` lines
//! under `--json-progress` (JSON Lines on stderr, restic's `message_type`). The commands only
//! call [`Progress`]; the drawing is decided here once.

use indicatif::{HumanDuration, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::cell::{Cell, RefCell};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

pub struct Progress {
    bar: Option<ProgressBar>,
    /// `--json-progress`: `status` lines instead of a bar.
    json: Option<Status>,
    bytes: Cell<u64>,
}

/// What the `status` lines say, and when the last one was said.
struct Status {
    phase: RefCell<String>,
    total: Cell<u64>,
    done: Cell<u64>,
    started: Instant,
    said: Cell<Instant>,
}

/// Whether a bar shows its estimate yet: not before a few items and a few seconds of a phase
/// (the first items' pace, a connection being opened, said "eta 58m" for a run of seconds).
fn eta_shown(done: u64, elapsed: Duration) -> bool {
    done >= 5 && elapsed >= Duration::from_secs(3)
}

/// The least time between two `status` lines within a phase.
const STATUS_EVERY: Duration = Duration::from_secs(1);

impl Progress {
    /// A bar when stderr is a terminal and not `quiet`; `status` lines under
    /// `--json-progress` ([`crate::report::json_stderr`]); otherwise nothing.
    pub(crate) fn new(quiet: bool) -> Progress {
        let json = !quiet && crate::report::json_stderr();
        let show = !quiet && !json && std::io::stderr().is_terminal();
        Progress {
            bytes: Cell::new(0),
            json: json.then(|| Status {
                phase: RefCell::new(String::new()),
                total: Cell::new(0),
                done: Cell::new(0),
                started: Instant::now(),
                said: Cell::new(Instant::now()),
            }),
            // Hidden until a phase with something to count starts: never a full bar at 0/0.
            bar: show.then(|| {
                let bar = ProgressBar::hidden();
                bar.set_style(
                    ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg}{eta_once}")
                        .expect("valid template")
                        .with_key(
                            "eta_once",
                            |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                                if eta_shown(s.pos(), s.elapsed()) {
                                    let _ = write!(w, " eta {}", HumanDuration(s.eta()));
                                }
                            },
                        )
                        .progress_chars("=> "),
                );
                bar
            }),
        }
    }

    pub(crate) fn start(&self, what: &str, total: u64) {
        if let Some(b) = &self.bar {
            b.set_prefix(what.to_string());
            b.set_length(total);
            b.set_position(0);
            b.reset_elapsed();
            b.reset_eta();
            if total > 0 && b.is_hidden() {
                b.set_draw_target(ProgressDrawTarget::stderr());
            }
        }
        if let Some(s) = &self.json {
            *s.phase.borrow_mut() = what.to_string();
            s.total.set(total);
            s.done.set(0);
            self.status(s);
        }
    }

    /// One item done, `bytes` transferred for it.
    pub(crate) fn item(&self, bytes: u64) {
        self.bytes.set(self.bytes.get() + bytes);
        if let Some(b) = &self.bar {
            b.set_message(crate::report::human_bytes(self.bytes.get()));
            b.inc(1);
        }
        if let Some(s) = &self.json {
            s.done.set(s.done.get() + 1);
            if s.said.get().elapsed() >= STATUS_EVERY {
                self.status(s);
            }
        }
    }

    /// Print a line above the bar (or on stderr when there is no bar).
    pub(crate) fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => {
                b.println(line);
                crate::logfile::line("info", line);
            }
            None => say!("{line}"),
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        if let Some(s) = self.json.as_ref().filter(|s| !s.phase.borrow().is_empty()) {
            self.status(s);
        }
    }

    /// A `status` line (`schemas/progress-line.schema.json`).
    fn status(&self, s: &Status) {
        let (done, total) = (s.done.get(), s.total.get());
        let percent = if total == 0 {
            0.0
        } else {
            (done.min(total) as f64 / total as f64 * 1000.0).round() / 1000.0
        };
        crate::report::json_on_stderr(serde_json::json!({
            "message_type": "status",
            "time": crate::report::now_shown(),
            "phase": *s.phase.borrow(),
            "done": done,
            "total": total,
            "percent_done": percent,
            "bytes": self.bytes.get(),
            "seconds_elapsed": (s.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        }));
        s.said.set(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 74: no estimate from the first items of a phase.
    #[test]
    fn the_estimate_waits_for_a_pace() {
        assert!(!eta_shown(0, Duration::from_secs(60)));
        assert!(!eta_shown(4, Duration::from_secs(60)));
        assert!(!eta_shown(100, Duration::from_secs(2)));
        assert!(eta_shown(5, Duration::from_secs(3)));
    }
}
