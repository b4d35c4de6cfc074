//! Progress: a bar on a terminal, nothing otherwise (cron) or with `-q`. The commands only
//! call [`Progress`]; the drawing is decided here once.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

pub struct Progress {
    bar: Option<ProgressBar>,
    bytes: std::cell::Cell<u64>,
}

impl Progress {
    /// A bar when stderr is a terminal and not `quiet`; otherwise nothing.
    pub(crate) fn new(quiet: bool) -> Progress {
        let show = !quiet && std::io::stderr().is_terminal();
        Progress {
            bytes: std::cell::Cell::new(0),
            bar: show.then(|| {
                let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} eta {eta}")
                        .expect("valid template")
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
        }
    }

    /// One item done, `bytes` transferred for it.
    pub(crate) fn item(&self, bytes: u64) {
        if let Some(b) = &self.bar {
            self.bytes.set(self.bytes.get() + bytes);
            b.set_message(crate::report::human_bytes(self.bytes.get()));
            b.inc(1);
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
    }
}
