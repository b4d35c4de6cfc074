//! The one place a state the source gave becomes a version of the mirror, or does not: for
//! every format and every command (a baseline's fetch, a Change List's or Change Dump's
//! change, an ARC delta feed's page, an SCP collection's page), [`decide`] compares what
//! arrived with the mirror's live current version and says what it is. The callers record what
//! it says; none of them compares digests or dates on its own.
//!
//! The rules, by what the state is evidence of ([`Basis`]):
//! - nothing live in the mirror: *created*; other bytes than the mirror's: *updated*;
//! - the same bytes, fetched because a list's entry differs from the version in what it
//!   declares (a new lastmod, another declared digest or length): *touched*, a new version
//!   with the same object (ResourceSync 1.1 §10.1: the version carries what the source
//!   declares now, and an audit would otherwise find the old lastmod every night);
//! - the same bytes, fetched only to compare (no digest to compare with, or a date-only
//!   lastmod the server was asked about): *unchanged*; fetched because the stored object was
//!   damaged: *repaired* (the version already describes it);
//! - the same bytes for a change since the sync point (a Change List, a Change Dump, an ARC
//!   delta feed): *touched* when it declares a lastmod a second or more away from the
//!   version's, else *unchanged*;
//! - an SCP page carries its own `modified`, which decides alone (SCP 0.1, "Delta
//!   Application"): newer replaces, older is kept, the same is unchanged whatever its bytes.

use crate::engine::plan::Action;
use jiff::{SignedDuration, Timestamp};

/// What the mirror holds of a resource now: its live current version. Its digest is the
/// SHA-256 in hex, or (`S` = a byte array) the start of it, as SCP keeps it in memory.
#[derive(Debug)]
pub struct Held<'a, S: ?Sized = str> {
    pub sha256: Option<&'a S>,
    pub lastmod: Option<Timestamp>,
}

impl<S: ?Sized> Clone for Held<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: ?Sized> Copy for Held<'_, S> {}

/// What the state that arrived is evidence of.
#[derive(Debug, Clone, Copy)]
pub enum Basis<'a> {
    /// A list's entry (a Resource List, a Resource Dump, an ARC sitemap), fetched for the
    /// plan's `action`.
    Listed(&'a Action),
    /// A change since the sync point that declares `lastmod`.
    Change { lastmod: Option<Timestamp> },
    /// An SCP page with its `modified` (the bytes are the page's JSON).
    Stamped { modified: Timestamp },
}

/// What a state that arrived is to the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing live in the mirror: a first version.
    Created,
    /// Other bytes: a new version.
    Updated,
    /// The same bytes under what the source now declares of them: a new version of the same
    /// object (recorded as an update).
    Touched,
    /// Nothing to record (`differs`: an SCP page with the mirror's `modified` but other
    /// bytes, kept as SCP 0.1 says and counted apart).
    Unchanged { differs: bool },
    /// The damaged object is whole again; the version already describes it.
    Repaired,
    /// An SCP page older than the mirror's: the mirror's is kept.
    OlderKept,
}

impl Decision {
    /// The change a new version records (`versions.change`), when the decision makes one.
    pub(crate) fn change(self) -> Option<crate::model::Change> {
        use crate::model::Change;
        match self {
            Decision::Created => Some(Change::Created),
            Decision::Updated | Decision::Touched => Some(Change::Updated),
            Decision::Unchanged { .. } | Decision::Repaired | Decision::OlderKept => None,
        }
    }

    /// Count the decision in a run's summary.
    pub(crate) fn count(self, summary: &mut crate::report::Summary) {
        match self {
            Decision::Created => summary.created += 1,
            Decision::Updated | Decision::Touched => summary.updated += 1,
            Decision::Unchanged { .. } | Decision::OlderKept => summary.unchanged += 1,
            Decision::Repaired => summary.repaired += 1,
        }
    }
}

/// Decide what the state that arrived (`sha256`, on `basis`) is to the mirror, which holds
/// `held` (None: nothing live).
pub(crate) fn decide<S: PartialEq + ?Sized>(
    held: Option<Held<'_, S>>,
    sha256: &S,
    basis: Basis<'_>,
) -> Decision {
    if let Basis::Stamped { modified } = basis {
        return stamped(held, sha256, modified);
    }
    let Some(held) = held else {
        return Decision::Created;
    };
    if held.sha256 != Some(sha256) {
        return Decision::Updated;
    }
    match basis {
        Basis::Listed(Action::Check | Action::Revalidate) => Decision::Unchanged { differs: false },
        Basis::Listed(a) if is_repair(a) => Decision::Repaired,
        Basis::Listed(_) => Decision::Touched,
        Basis::Change { lastmod } if touched(held.lastmod, lastmod) => Decision::Touched,
        Basis::Change { .. } | Basis::Stamped { .. } => Decision::Unchanged { differs: false },
    }
}

/// An update planned only because the stored object was damaged.
pub(crate) fn is_repair(a: &Action) -> bool {
    matches!(a, Action::Update(d) if d.iter().all(|d| d.field == "object"))
}

/// A change that declares a lastmod a second or more away from the version's (or one where
/// the version has none) touches it.
fn touched(held: Option<Timestamp>, declared: Option<Timestamp>) -> bool {
    declared.is_some_and(|new| {
        held.is_none_or(|old| new.duration_since(old).abs() >= SignedDuration::from_secs(1))
    })
}

/// SCP 0.1, "Delta Application": a page's `modified` against the mirror's decides; a
/// tombstoned page (no `modified`) is created again.
fn stamped<S: PartialEq + ?Sized>(
    held: Option<Held<'_, S>>,
    sha256: &S,
    modified: Timestamp,
) -> Decision {
    match held {
        None | Some(Held { lastmod: None, .. }) => Decision::Created,
        Some(Held {
            lastmod: Some(m), ..
        }) if modified > m => Decision::Updated,
        Some(Held {
            lastmod: Some(m), ..
        }) if modified < m => Decision::OlderKept,
        Some(h) => Decision::Unchanged {
            differs: h.sha256 != Some(sha256),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::plan::Difference;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn held(sha: &str, lastmod: &str) -> Option<Held<'static, str>> {
        let sha: &'static str = Box::leak(sha.to_string().into_boxed_str());
        Some(Held {
            sha256: Some(sha),
            lastmod: Some(t(lastmod)),
        })
    }

    #[test]
    fn nothing_held_is_created_other_bytes_updated() {
        let basis = Basis::Change { lastmod: None };
        assert_eq!(decide(None, "a", basis), Decision::Created);
        let h = held("a", "2026-01-01T00:00:00Z");
        assert_eq!(decide(h, "b", basis), Decision::Updated);
        assert_eq!(
            decide(h, "b", Basis::Listed(&Action::Check)),
            Decision::Updated
        );
    }

    #[test]
    fn a_change_with_the_same_bytes_is_a_touch_only_with_another_lastmod() {
        let h = held("a", "2026-01-01T00:00:00Z");
        let same = Basis::Change {
            lastmod: Some(t("2026-01-01T00:00:00.4Z")),
        };
        assert_eq!(decide(h, "a", same), Decision::Unchanged { differs: false });
        let newer = Basis::Change {
            lastmod: Some(t("2026-01-02T00:00:00Z")),
        };
        assert_eq!(decide(h, "a", newer), Decision::Touched);
        assert_eq!(
            Decision::Touched.change(),
            Some(crate::model::Change::Updated)
        );
        let none = Basis::Change { lastmod: None };
        assert_eq!(decide(h, "a", none), Decision::Unchanged { differs: false });
    }

    #[test]
    fn a_listed_entry_with_the_same_bytes_depends_on_why_it_was_fetched() {
        let h = held("a", "2026-01-01T00:00:00Z");
        let lastmod = Difference {
            field: "lastmod".into(),
            expected: "2026-01-02".into(),
            actual: "2026-01-01".into(),
        };
        let object = Difference {
            field: "object".into(),
            expected: "present".into(),
            actual: "missing".into(),
        };
        let touch = Action::Update(vec![lastmod]);
        let repair = Action::Update(vec![object]);
        assert_eq!(decide(h, "a", Basis::Listed(&touch)), Decision::Touched);
        assert_eq!(decide(h, "a", Basis::Listed(&repair)), Decision::Repaired);
        for a in [Action::Check, Action::Revalidate] {
            assert_eq!(
                decide(h, "a", Basis::Listed(&a)),
                Decision::Unchanged { differs: false }
            );
        }
    }

    #[test]
    fn an_scp_page_is_decided_by_its_modified() {
        let h = held("a", "2026-01-02T00:00:00Z");
        let at = |s| Basis::Stamped { modified: t(s) };
        assert_eq!(
            decide(h, "b", at("2026-01-03T00:00:00Z")),
            Decision::Updated
        );
        assert_eq!(
            decide(h, "b", at("2026-01-01T00:00:00Z")),
            Decision::OlderKept
        );
        assert_eq!(
            decide(h, "b", at("2026-01-02T00:00:00Z")),
            Decision::Unchanged { differs: true }
        );
        assert_eq!(
            decide(h, "a", at("2026-01-02T00:00:00Z")),
            Decision::Unchanged { differs: false }
        );
        let tombstoned: Option<Held<'_, str>> = Some(Held {
            sha256: None,
            lastmod: None,
        });
        assert_eq!(
            decide(tombstoned, "a", at("2026-01-01T00:00:00Z")),
            Decision::Created
        );
    }
}
