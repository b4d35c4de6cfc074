//! Run summaries: one line for people, one JSON document for machines (`--json`).

use crate::model::ProblemClass;
use serde::Serialize;

/// A resource a run could not mirror, or a notable event about one.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Problem {
    pub uri: String,
    pub class: ProblemClass,
    pub reason: String,
}

/// The line that reports a resource's problem on stderr: `CLASS: URI: REASON`, the URI once
/// (a fetch error's reason usually starts with the URL it was fetched from).
pub(crate) fn problem_line(class: impl std::fmt::Display, uri: &str, reason: &str) -> String {
    match reason.strip_prefix(uri).and_then(|r| r.strip_prefix(": ")) {
        Some(rest) => format!("{class}: {uri}: {rest}"),
        None => format!("{class}: {uri}: {reason}"),
    }
}

/// How many URLs of one kind (`gone`, `deleted`, `would go`) are named on stderr, one line each,
/// before the rest are counted (all of them are in the run's problems).
pub(crate) const NAMED: usize = 100;

/// What a `baseline` (or `incremental`) run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub command: &'static str,
    pub source: String,
    pub mirror: String,
    pub run_id: Option<i64>,
    pub dry_run: bool,
    pub listed: u64,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    /// Objects found missing or truncated in the store and fetched again (no new version).
    pub repaired: u64,
    pub failed: u64,
    /// Resources whose bytes contradicted the list (they changed after it was written): not
    /// stored as listed, left to `incremental` (baseline; see `sync::pending`).
    pub pending: u64,
    /// Parts of the source's list (index parts, dump packages) that could not be read: what
    /// they list was not mirrored, and is not among `failed`.
    pub failed_parts: u64,
    pub refused: u64,
    /// Listed resources and changes that `--include`/`--exclude` leave out: not fetched, not
    /// judged (`model::filter`).
    pub excluded: u64,
    /// Listed before, not listed now.
    pub gone: u64,
    /// Tombstoned in this run.
    pub deleted: u64,
    /// Deletes for resources the mirror never had (incremental): counted, not an error.
    pub unknown_deletes: u64,
    /// Resources a list older than the mirror's state named (or left out), kept as the
    /// mirror holds them (`engine::listing::Older`).
    pub held_back: u64,
    pub bytes: u64,
    /// Bytes not transferred because a patch the source offered made the new state from the
    /// mirror's (its length less the patch's).
    pub bytes_saved: u64,
    pub seconds: f64,
    pub sync_point: Option<String>,
    pub anchored: bool,
    pub exit_code: i32,
    pub problems: Vec<Problem>,
    pub warnings: Vec<String>,
}

impl Summary {
    /// The one summary line.
    pub(crate) fn line(&self) -> String {
        format!(
            "{}{}: {} created, {} updated, {} unchanged{}, {} failed{}{}, {} refused{}, {} gone, {} deleted; {} in {:.2} s",
            self.command,
            if self.dry_run { " (dry run)" } else { "" },
            self.created,
            self.updated,
            self.unchanged,
            if self.repaired > 0 { format!(", {} repaired", self.repaired) } else { String::new() },
            self.failed,
            if self.failed_parts > 0 {
                format!(" (and {} unread parts of the list)", self.failed_parts)
            } else {
                String::new()
            },
            if self.pending > 0 || self.held_back > 0 {
                let pending = format!(", {} pending", self.pending);
                let held = format!(", {} held back", self.held_back);
                match (self.pending > 0, self.held_back > 0) {
                    (true, true) => format!("{pending}{held}"),
                    (true, false) => pending,
                    _ => held,
                }
            } else {
                String::new()
            },
            self.refused,
            if self.excluded > 0 {
                format!(", {} excluded", self.excluded)
            } else {
                String::new()
            },
            self.gone,
            self.deleted,
            if self.bytes_saved > 0 {
                format!("{} ({} saved by patches)", human_bytes(self.bytes), human_bytes(self.bytes_saved))
            } else {
                human_bytes(self.bytes)
            },
            self.seconds
        )
    }

    pub(crate) fn counts_json(&self) -> String {
        serde_json::json!({
            "listed": self.listed, "created": self.created, "updated": self.updated,
            "unchanged": self.unchanged, "repaired": self.repaired, "failed": self.failed,
            "refused": self.refused, "excluded": self.excluded, "failed_parts": self.failed_parts, "pending": self.pending,
            "gone": self.gone, "deleted": self.deleted, "unknown_deletes": self.unknown_deletes,
            "bytes": self.bytes,
        })
        .to_string()
    }
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The error document `--json` gives (`schemas/error.schema.json`).
pub(crate) fn error_document(command: &str, error: &str, exit_code: i32) -> String {
    let doc = serde_json::json!({ "command": command, "error": error, "exit_code": exit_code });
    serde_json::to_string_pretty(&doc).expect("serialisable")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_line() {
        let s = Summary {
            command: "baseline",
            created: 8,
            bytes: 2048,
            seconds: 0.5,
            ..Default::default()
        };
        assert_eq!(
            s.line(),
            "baseline: 8 created, 0 updated, 0 unchanged, 0 failed, 0 refused, 0 gone, 0 deleted; 2.0 KiB in 0.50 s"
        );
    }
}

#[cfg(test)]
mod problem_line_tests {
    use super::problem_line;

    /// Issue 23: failure lines printed the URL twice (`failed: URL: URL: HTTP 404`).
    #[test]
    fn the_uri_is_named_once() {
        let u = "http://h/res/a";
        assert_eq!(
            problem_line("failed", u, "http://h/res/a: HTTP 404"),
            "failed: http://h/res/a: HTTP 404"
        );
        // A reason about another URL (a mirror, a redirect target) keeps both.
        assert_eq!(
            problem_line("failed", u, "http://m/res/a: HTTP 404"),
            "failed: http://h/res/a: http://m/res/a: HTTP 404"
        );
        assert_eq!(
            problem_line("refused", u, "out of scope"),
            "refused: http://h/res/a: out of scope"
        );
    }
}

/// One document as `inspect` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentReport {
    pub url: String,
    /// `resourcelist`, `resourcelist index`, `plain sitemap`, ...
    pub kind: String,
    pub syntax: &'static str,
    pub at: Option<String>,
    pub completed: Option<String>,
    pub from: Option<String>,
    pub until: Option<String>,
    pub entries: u64,
    pub digests: Vec<String>,
    pub up: Option<String>,
    pub warnings: Vec<String>,
    /// Push channels the document advertises (ResourceSync Change Notification: topic and
    /// hub); never fetched as documents.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<crate::model::Channel>,
}

/// A line on stderr, as [`say!`] writes it, for code outside a macro's reach.
pub(crate) fn say(line: &str) {
    say!("{line}");
}

/// Why stdout refused what a command printed (not a closed pipe: the reader went away, as
/// `| head` does), when it did.
static OUTPUT_LOST: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The command's `--json` document is (being) written to stdout: an error after that is said
/// inside it (audit's `summary.error`), not in a second document.
static DOCUMENT_ON_STDOUT: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Say that stdout carries the command's document ([`DOCUMENT_ON_STDOUT`]).
pub(crate) fn set_document_on_stdout() {
    DOCUMENT_ON_STDOUT.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether stdout carries the command's document already.
pub(crate) fn document_on_stdout() -> bool {
    DOCUMENT_ON_STDOUT.load(std::sync::atomic::Ordering::Relaxed)
}

/// `--json-progress`: stderr carries JSON Lines (restic's `message_type`): progress as
/// `status` objects, every line a person would read as a `message`, the run's `summary`.
static JSON_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Make stderr JSON Lines ([`JSON_STDERR`]).
pub(crate) fn set_json_stderr() {
    JSON_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether stderr carries JSON Lines (`--json-progress`).
pub(crate) fn json_stderr() -> bool {
    JSON_STDERR.load(std::sync::atomic::Ordering::Relaxed)
}

/// A line said on stderr at `level` (info, notice, warning, error), and in the log file: as it
/// is, or under `--json-progress` as a `message` object (`schemas/progress-line.schema.json`).
/// A closed or full stderr loses the line, never the run.
pub(crate) fn said(level: &str, line: &str) {
    if json_stderr() {
        json_on_stderr(serde_json::json!({
            "message_type": "message",
            "time": now_shown(),
            "level": level,
            "message": line,
        }));
    } else {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
    crate::logfile::line(level, line);
}

/// One JSON object as a line on stderr (`--json-progress`).
pub(crate) fn json_on_stderr(doc: serde_json::Value) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{doc}");
}

/// Now, to the millisecond, as the JSON lines show it.
pub(crate) fn now_shown() -> String {
    let now = jiff::Timestamp::now();
    now.round(jiff::Unit::Millisecond)
        .unwrap_or(now)
        .to_string()
}

/// How much a command says on stderr beside its output (`-q`: -1, none: 0, `-v`: 1 and up),
/// as [`note!`] and [`detail!`] read it. Errors are said whatever it is.
static LEVEL: std::sync::atomic::AtomicI8 = std::sync::atomic::AtomicI8::new(0);

/// Set what [`note!`] and [`detail!`] say: `quiet` (-q) silences notes, `verbose` (-v) adds
/// details.
pub(crate) fn set_level(quiet: bool, verbose: u8) {
    let level = if quiet { -1 } else { verbose.min(9) as i8 };
    LEVEL.store(level, std::sync::atomic::Ordering::Relaxed);
}

/// Whether notes are said (not `-q`).
pub(crate) fn notes() -> bool {
    LEVEL.load(std::sync::atomic::Ordering::Relaxed) >= 0
}

/// Whether details are said (`-v`).
pub(crate) fn details() -> bool {
    LEVEL.load(std::sync::atomic::Ordering::Relaxed) >= 1
}

/// A dry run asked for `--json`: its plan goes to stderr (`plan!`), stdout is the document.
static PLAN_ON_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Send a dry run's plan lines to stderr (its `--json` document is stdout's).
pub(crate) fn set_plan_on_stderr() {
    PLAN_ON_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether plan lines go to stderr ([`set_plan_on_stderr`]).
pub(crate) fn plan_on_stderr() -> bool {
    PLAN_ON_STDERR.load(std::sync::atomic::Ordering::Relaxed)
}

/// Stdout refused a write: remembered, unless the pipe was only closed by its reader.
pub(crate) fn output_failed(e: &std::io::Error) {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        let mut lost = OUTPUT_LOST.lock().unwrap_or_else(|p| p.into_inner());
        lost.get_or_insert_with(|| e.to_string());
    }
}

/// Why the output was lost, if it was.
pub(crate) fn output_lost() -> Option<String> {
    OUTPUT_LOST
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}
