//! `--log-file FILE` and `--log-format text|json` (rclone's `--log-file` and
//! `--use-json-log`): every line the run says on stderr (problems, warnings, the summary, the
//! final error) also appended to FILE, a line each, with the time; the summary and the run's
//! command line even under `-q` or a quiet cron success, so the file is the record of every
//! run. JSON lines are `{"time": RFC 3339, "level": "info"|"notice"|"error", "msg": TEXT}`.
//!
//! The file is opened for appending (several runs, and `logrotate`'s copies, share it); a line
//! that cannot be written is lost, never the run.

use std::io::Write;
use std::sync::Mutex;

/// How the lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// `TIME LEVEL MESSAGE`.
    #[default]
    Text,
    /// One JSON object a line.
    Json,
}

static SINK: Mutex<Option<(std::fs::File, LogFormat)>> = Mutex::new(None);

/// Append every later line to `path` (created when missing).
pub(crate) fn open(path: &std::path::Path, format: LogFormat) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    *SINK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((file, format));
    Ok(())
}

/// A line of `level` (`info`: what stderr says; `notice`: the run's record; `error`: why it
/// failed) to the log file, when there is one.
pub(crate) fn line(level: &str, msg: &str) {
    let mut sink = SINK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some((file, format)) = sink.as_mut() else {
        return;
    };
    let time = jiff::Timestamp::now()
        .round(jiff::Unit::Millisecond)
        .unwrap_or_else(|_| jiff::Timestamp::now());
    let text = match format {
        LogFormat::Text => format!("{time} {level:<6} {msg}\n"),
        LogFormat::Json => {
            let doc = serde_json::json!({ "time": time.to_string(), "level": level, "msg": msg });
            format!("{doc}\n")
        }
    };
    let _ = file.write_all(text.as_bytes());
}
