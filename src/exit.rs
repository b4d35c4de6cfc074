//! THE exit-code table. Every outcome of every command maps to exactly one of these codes,
//! here and nowhere else; `--help`, the README and the manual (exit-codes) print the same table.

use std::fmt;

/// How a run ended, as the shell sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Exit {
    /// Everything asked for was done (and, for `audit`, everything is in sync).
    Ok,
    /// `audit` found differences or corruption.
    Differences,
    /// The command line was wrong.
    Usage,
    /// Some resources failed; the rest landed and a re-run is safe.
    Partial,
    /// The source was unreachable, malformed or unsafe: nothing was applied.
    Source,
    /// The local mirror (catalog or object store) could not be read or written.
    Store,
    /// Another run holds the mirror's lock.
    Locked,
    /// A safety limit (such as `--max-delete`) stopped the run before any damage.
    SafetyLimit,
    /// Interrupted by a signal.
    Interrupted,
}

/// (exit, code, meaning): the one table.
pub const TABLE: &[(Exit, i32, &str)] = &[
    (
        Exit::Ok,
        0,
        "success; for audit: everything in sync and verified",
    ),
    (
        Exit::Differences,
        1,
        "audit: differences or corruption; cat: damaged bytes; status: a hint needs a person",
    ),
    (
        Exit::Usage,
        2,
        "usage error (bad arguments; a bad WHEN, a URL or state not in the mirror)",
    ),
    (
        Exit::Partial,
        3,
        "partial failure: some resources failed, the rest landed; a re-run is safe",
    ),
    (
        Exit::Source,
        4,
        "source error: unreachable, malformed or unsafe; nothing applied",
    ),
    (
        Exit::Store,
        5,
        "store error: catalog (damaged: rsmirror catalog check), objects, disk full, under --min-free",
    ),
    (Exit::Locked, 6, "another run holds the mirror's lock"),
    (
        Exit::SafetyLimit,
        7,
        "a safety limit (the deletion guard, --max-delete ...) stopped the run; nothing deleted",
    ),
    (
        Exit::Interrupted,
        130,
        "interrupted (SIGINT, SIGTERM): recorded as such; a re-run is safe",
    ),
];

impl Exit {
    /// The exit a child process's code means (a code outside the table: a store error, the
    /// most cautious reading).
    pub fn from_code(code: i32) -> Exit {
        TABLE
            .iter()
            .find(|(_, c, _)| *c == code)
            .map(|(e, _, _)| *e)
            .unwrap_or(Exit::Store)
    }

    pub fn code(self) -> i32 {
        TABLE
            .iter()
            .find(|(e, _, _)| *e == self)
            .map(|(_, c, _)| *c)
            .expect("every Exit is in TABLE")
    }

    /// The table as the `--help` footer and the README print it.
    pub(crate) fn help_table() -> String {
        let mut s = String::from("Exit codes:\n");
        for (_, code, meaning) in TABLE {
            s.push_str(&format!("  {code:>3}  {meaning}\n"));
        }
        s
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_match_design() {
        let codes: Vec<i32> = TABLE.iter().map(|(_, c, _)| *c).collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4, 5, 6, 7, 130]);
        assert_eq!(Exit::Locked.code(), 6);
        assert!(Exit::help_table().contains("  6  another run holds"));
    }
}
