//! Progress: a bar on a terminal, nothing otherwise (cron) or with `-q`, and `status` lines
//! under `--json-progress` (JSON Lines on stderr, restic's `message_type`). The commands only
//! call [`Progress`]; the drawing is decided here once.

use indicatif::{HumanDuration, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::cell::{Cell, RefCell};
use std::io::IsTerminal;
use std::sync::OnceLock;
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

/// `--progress` (`Some(true)`: a bar even where stderr is no terminal, as under ssh without
/// a tty or `script`) and `--no-progress` (`Some(false)`: none even on a terminal); `None`:
/// a bar when stderr is a terminal.
static FORCED: OnceLock<bool> = OnceLock::new();

/// Say whether a bar is drawn whatever stderr is (`--progress`, `--no-progress`); once, at
/// the start.
pub(crate) fn force(bar: bool) {
    let _ = FORCED.set(bar);
}

/// Where the bar is drawn: stderr, as a terminal even when it is not one under `--progress`
/// (indicatif draws on a terminal only; `console`'s stderr handle writes the same escapes
/// to a pipe or a file).
fn target() -> ProgressDrawTarget {
    if FORCED.get() == Some(&true) && !std::io::stderr().is_terminal() {
        ProgressDrawTarget::term_like_with_hz(Box::new(console::Term::stderr()), 20)
    } else {
        ProgressDrawTarget::stderr()
    }
}

/// The least time between two `status` lines within a phase.
const STATUS_EVERY: Duration = Duration::from_secs(1);

impl Progress {
    /// A bar when stderr is a terminal (or `--progress`) and not `quiet` or `--no-progress`;
    /// `status` lines under `--json-progress` ([`crate::report::json_stderr`]); otherwise
    /// nothing.
    pub(crate) fn new(quiet: bool) -> Progress {
        let json = !quiet && crate::report::json_stderr();
        let bar = FORCED
            .get()
            .copied()
            .unwrap_or_else(|| std::io::stderr().is_terminal());
        let show = !quiet && !json && bar;
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
                b.set_draw_target(target());
            }
        }
        if let Some(s) = &self.json {
            *s.phase.borrow_mut() = what.to_string();
            s.total.set(total);
            s.done.set(0);
            self.status(s);
        }
    }

    /// `n` more items of the phase `what`: the phase under way goes on with a larger total
    /// (a source read a document at a time, each bringing its own items), another one starts.
    pub(crate) fn more(&self, what: &str, n: u64) {
        let going = match (&self.bar, &self.json) {
            (Some(b), _) => b.prefix() == what,
            (None, Some(s)) => *s.phase.borrow() == what,
            (None, None) => false,
        };
        if !going {
            return self.start(what, n);
        }
        if let Some(b) = &self.bar {
            b.inc_length(n);
            if n > 0 && b.is_hidden() {
                b.set_draw_target(target());
            }
        }
        if let Some(s) = &self.json {
            s.total.set(s.total.get() + n);
        }
    }

    /// Name on stderr (under cron too) the first [`crate::report::NAMED`] of `total` URLs that `what` (`gone`,
    /// `deleted`...), then how many more and where they all are (`all_in`).
    pub(crate) fn name_first<'a>(
        &self,
        what: &str,
        first: impl IntoIterator<Item = &'a str>,
        total: u64,
        all_in: &str,
    ) {
        for uri in first.into_iter().take(crate::report::NAMED) {
            self.println(&format!("{what}: {uri}"));
        }
        if total > crate::report::NAMED as u64 {
            self.println(&format!(
                "{what}: ... and {} more (all of them in the run's problems: {all_in})",
                total - crate::report::NAMED as u64
            ));
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

    /// A source read a document at a time (OAI-PMH pages, IIIF pages) brings its items in
    /// batches: the phase goes on, its total grows and what is done is kept; another phase
    /// starts afresh.
    #[test]
    fn more_of_a_phase_goes_on_and_another_starts_afresh() {
        let now = Instant::now();
        let p = Progress {
            bar: None,
            json: Some(Status {
                phase: RefCell::new(String::new()),
                total: Cell::new(0),
                done: Cell::new(0),
                started: now,
                said: Cell::new(now),
            }),
            bytes: Cell::new(0),
        };
        let s = p.json.as_ref().unwrap();
        p.more("incremental", 3);
        (0..3).for_each(|_| p.item(1));
        p.more("incremental", 2);
        p.item(1);
        assert_eq!((s.total.get(), s.done.get()), (5, 4));
        p.more("audit", 7);
        assert_eq!(
            (s.phase.borrow().as_str(), s.total.get(), s.done.get()),
            ("audit", 7, 0)
        );
        let bar = Progress {
            bar: Some(ProgressBar::hidden()),
            json: None,
            bytes: Cell::new(0),
        };
        bar.more("incremental", 3);
        bar.item(0);
        bar.more("incremental", 2);
        let b = bar.bar.as_ref().unwrap();
        assert_eq!((b.length(), b.position()), (Some(5), 1));
    }
}
