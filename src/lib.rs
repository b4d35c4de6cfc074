//! rsmirror: a ResourceSync Destination.
//!
//! The model in a paragraph: a *source* publishes documents (Source Description, Capability
//! List, Resource List, Change List, dumps, SCP collections, ARC sitemaps). Readers (`rs`, and
//! each format's `read` under `formats`) turn those bytes into typed items without touching
//! the network; the network layer (`net`) fetches documents and resources within a scope,
//! streaming bodies to `staging/` while hashing them; the store (`store`) keeps a SQLite
//! catalog and a content-addressed object store. The engine (`engine`) takes what a format
//! read into the mirror: plan, transfer, verify, decide, commit; `commands` wire a command to
//! it and report. `audit` proves the mirror against the source and its own bytes, and repairs
//! it; `access` reads the mirror back (ls, cat, log, diff, status) from the catalog and objects
//! alone; `export` writes it out for preservation systems; `follow` subscribes to pushed changes
//! (WebSub) and applies them through `incremental`. `cli` is what the user typed,
//! `settings` the checked form, `exit` the one exit-code table.

/// A line on stderr that never stops the process: a closed or full stderr (a logger that
/// died, `2>&1 | true`) loses the line, not the run (`eprintln!` would panic).
macro_rules! say {
    ($($t:tt)*) => {{
        let line = format!($($t)*);
        $crate::report::said("info", &line);
    }};
}

/// [`say!`] for stdout: `println!` that a closed stdout does not turn into a panic. A stdout
/// that refuses the output otherwise (a full disk, an I/O error) is remembered and the command
/// ends with exit 5 (`report::output_failed`): what it was asked to print was not printed.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($t)*) {
            $crate::report::output_failed(&e);
        }
    }};
}

/// A note beside a command's output (how a WHEN was read, a run still under way): on stderr
/// unless `-q` ([`report::notes`]).
macro_rules! note {
    ($($t:tt)*) => {{
        if $crate::report::notes() {
            say!($($t)*)
        }
    }};
}

/// A detail said only under `-v` ([`report::details`]): what WHEN resolved to, how many lines
/// a reading command wrote.
macro_rules! detail {
    ($($t:tt)*) => {{
        if $crate::report::details() {
            say!($($t)*)
        }
    }};
}

/// A line of a dry run's plan: on stdout, unless stdout carries the run's JSON document
/// (`--dry-run --json`, [`report::plan_on_stderr`]): then on stderr, so stdout stays one
/// document.
macro_rules! plan {
    ($($t:tt)*) => {{
        if $crate::report::plan_on_stderr() {
            say!($($t)*)
        } else {
            out!($($t)*)
        }
    }};
}

pub(crate) mod access;
pub(crate) mod audit;
pub mod cli;
pub(crate) mod commands;
pub(crate) mod engine;
pub mod error;
pub mod exit;
pub(crate) mod export;
pub(crate) mod follow;
pub mod formats;
pub(crate) mod interrupt;
pub mod logfile;
pub mod manual;
pub mod model;
pub mod net;
pub(crate) mod progress;
pub(crate) mod report;
pub(crate) mod retry;
pub mod rs;
pub(crate) mod serve;
pub mod settings;
pub mod store;

// The public modules above are the library's surfaces: what the user types and its checked
// form, errors and exit codes, the readers and formats, the network, the store (the mirror on
// disk is a contract). The rest is the crate's own; what the binary, the integration tests and
// the benches need of it is named here.
pub use audit::finding;
pub use commands::{recorded_arguments, run};
pub use engine::documents::Documents;
pub use interrupt::watch;
pub use net::in_step::raise_open_files_limit;
pub use report::human_bytes;
