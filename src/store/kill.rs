//! Fault injection for the crash matrix (`tests/it/crash.rs`): named points at the
//! moments a crash matters (an object placed but not yet named by the catalog, versions
//! committed but not the sync point, ...). A debug build run with
//! `RSMIRROR_KILL_AT=<name>[:<nth>]` aborts (SIGABRT, as abrupt as a SIGKILL: no destructor,
//! no flush) at the `nth` pass (1-based, default 1) of the point `name`. With
//! `RSMIRROR_KILL_TRACE=<file>` every pass of a point appends its name to the file, a line
//! each (the random-kill matrix tells from it which points a killed run had passed). Release
//! builds never read either variable and every point is a no-op.

/// Every named point, for the test that kills a run at each in turn: a point added here is
/// covered by it (the test fails for a point it has no run for, or one a run never reaches).
pub const KILL_POINTS: &[&str] = &[
    // An object renamed or linked into objects/, before the catalog names it.
    "object.placed",
    // The writer's transaction holds some of a batch's versions, not yet committed.
    "writer.mid-batch",
    // A batch of versions committed; later batches and the sync point not yet.
    "writer.committed",
    // A baseline's versions committed, before its last transaction (the sync point).
    "baseline.versions-committed",
    // An incremental's tombstone handed to the writer (not yet committed).
    "incremental.tombstone",
    // A collection applied whole (SCP): its objects written and durable, before its rows
    // commit.
    "whole.before-commit",
    // ARC: the pages' objects in place, before the last transaction (sitemap, sync point).
    "arc.before-commit",
    // Change Dump: a package's bitstreams staged, before any of them is stored or committed.
    "change-dump.package-staged",
    // Change Dump: a bitstream moved into objects/, before its version commits.
    "change-dump.object-stored",
    // Repair: the damaged file moved to quarantine, before the proven bytes land.
    "repair.quarantined",
    // Repair: the proven bytes in objects/, before the run's problem rows are written.
    "repair.object-restored",
    // Export: after a file is placed, before the next.
    "export.between-files",
    // Export: every file placed and the record complete, before INCOMPLETE is removed.
    "export.before-complete",
    // The schema upgrade (store/migrate.rs).
    "upgrade.after-1-to-2",
    "upgrade.after-an-object",
    "upgrade.after-sync",
    "upgrade.before-commit",
    "upgrade.after-commit",
    "upgrade.3-to-4-before-commit",
    "upgrade.4-to-5-before-commit",
    "upgrade.5-to-6-before-commit",
    "upgrade.6-to-7-before-commit",
    "upgrade.7-to-8-before-commit",
    "upgrade.8-to-9-before-commit",
    "upgrade.9-to-10-before-commit",
    "upgrade.10-to-11-before-commit",
    "upgrade.11-to-12-before-commit",
];

/// A named point: abort here when `RSMIRROR_KILL_AT` names it and this is its `nth` pass.
#[inline]
pub(crate) fn point(name: &'static str) {
    if cfg!(debug_assertions) {
        armed(name);
    }
}

#[cold]
fn armed(name: &'static str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    debug_assert!(
        KILL_POINTS.contains(&name),
        "kill point {name} is not listed"
    );
    static AT: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static TRACE: OnceLock<Option<std::fs::File>> = OnceLock::new();
    static PASSED: AtomicU64 = AtomicU64::new(0);
    if let Some(mut f) = TRACE
        .get_or_init(|| {
            let path = std::env::var_os("RSMIRROR_KILL_TRACE")?;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
        })
        .as_ref()
    {
        // One write per line, appended: lines from several threads never interleave.
        let _ = std::io::Write::write_all(&mut f, format!("{name}\n").as_bytes());
    }
    let at = AT.get_or_init(|| std::env::var("RSMIRROR_KILL_AT").ok().map(|v| parse(&v)));
    let Some((want, nth)) = at else {
        return;
    };
    if want == name && PASSED.fetch_add(1, Ordering::SeqCst) + 1 == *nth {
        say!("rsmirror: killed at {name} (pass {nth}) by RSMIRROR_KILL_AT");
        std::process::abort();
    }
}

/// `<name>[:<nth>]` as (name, nth); nth 1 when not given.
fn parse(v: &str) -> (String, u64) {
    match v.rsplit_once(':').map(|(n, nth)| (n, nth.parse::<u64>())) {
        Some((n, Ok(nth))) => (n.to_string(), nth),
        _ => (v.to_string(), 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_named_with_an_optional_pass() {
        assert_eq!(parse("object.placed"), ("object.placed".into(), 1));
        assert_eq!(parse("object.placed:3"), ("object.placed".into(), 3));
        assert_eq!(parse("a:b"), ("a:b".into(), 1));
        let mut names = KILL_POINTS.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KILL_POINTS.len(), "a point listed twice");
    }
}
