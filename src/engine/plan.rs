//! The comparison baseline and audit share (ResourceSync 1.1 §10.3): what the source declares
//! about a resource against the mirror's current version of it.
//!
//! Same: no contradiction among the metadata both sides have — every digest algorithm present
//! on both sides equal, length equal, lastmod equal within a second (W3C datetimes are often
//! second-granular). Missing metadata on one side is no proof of inequality; when *nothing*
//! can be compared the verdict says so, and the caller decides (baseline re-fetches and keeps
//! a new version only if the bytes differ; audit reports `?`).

use crate::rs::digest::{Algorithm, Digest};
use crate::store::catalog::CurrentState;
use jiff::Timestamp;
use url::Url;

/// What a source declares about a representation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declared {
    pub lastmod: Option<Timestamp>,
    pub length: Option<u64>,
    pub digests: Vec<Digest>,
    /// The content coding the bytes are in (`rs:md encoding`, the 2012 draft's
    /// `rs:contentencoding`): recorded with the version, never decoded.
    pub encoding: Option<String>,
    /// Its categories (2012 draft §3.1.7), recorded with the version.
    pub categories: Vec<crate::model::Category>,
}

/// One resource as a list names it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub uri: Url,
    pub declared: Declared,
    pub media_type: Option<crate::rs::document::MediaType>,
    /// `rs:ln rel="duplicate"` mirrors in `pri` order.
    pub duplicates: Vec<Url>,
    /// Where it was listed: document URL (shared by every entry of the document) and line.
    pub document: std::sync::Arc<str>,
    pub line: u64,
    /// The scope of the listing document (fetches and redirects are checked against it).
    pub scope: std::sync::Arc<crate::net::Scope>,
}

/// One field on which the two sides disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `md5`, `sha-1`, `sha-256`, `length` or `lastmod`.
    pub field: String,
    /// The source's value.
    pub expected: String,
    /// The mirror's value.
    pub actual: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// At least one piece of evidence agrees and none disagrees; `by_digest` when a digest
    /// was among the evidence.
    Same {
        by_digest: bool,
    },
    Differs(Vec<Difference>),
    /// Nothing the two sides both have.
    NoEvidence,
}

/// What to do with a listed resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Not in the mirror (or tombstoned there): fetch.
    Create,
    /// In the mirror, and the source's metadata contradicts it: fetch.
    Update(Vec<Difference>),
    /// In the mirror and nothing says otherwise.
    Keep,
    /// In the mirror but nothing to compare: fetch, keep a new version only if the bytes differ.
    Check,
    /// In the mirror, and what agrees cannot tell a change: no digest, and a lastmod no finer
    /// than a day (`2026-03-01`, read as midnight), so a change later that day looks the same.
    /// Ask the server with the stored ETag / Last-Modified (a 304 keeps the version); else as
    /// [`Action::Check`].
    Revalidate,
}

/// What the comparison reads of the mirror's current version, borrowed: from a
/// [`CurrentState`] ([`CurrentState::view`]) or from the compact index an audit holds, without
/// building strings for every resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current<'a> {
    pub lastmod: Option<Timestamp>,
    pub length_bytes: Option<u64>,
    pub md5_hex: Option<&'a str>,
    pub sha1_hex: Option<&'a str>,
    pub sha256_hex: Option<&'a str>,
}

impl CurrentState {
    /// What [`compare`] reads of this state.
    pub(crate) fn view(&self) -> Current<'_> {
        Current {
            lastmod: self.lastmod,
            length_bytes: self.length_bytes,
            md5_hex: self.md5_hex.as_deref(),
            sha1_hex: self.sha1_hex.as_deref(),
            sha256_hex: self.sha256_hex.as_deref(),
        }
    }
}

/// Compare what the source declares with the mirror's current version.
pub(crate) fn compare(declared: &Declared, current: &CurrentState) -> Comparison {
    compare_view(declared, &current.view())
}

/// [`compare`] on a borrowed view of the current version: the one comparison, whoever holds
/// the state.
pub(crate) fn compare_view(declared: &Declared, current: &Current<'_>) -> Comparison {
    let mut differences = Vec::new();
    let mut agreed = false;
    let mut by_digest = false;
    for alg in [Algorithm::Md5, Algorithm::Sha1, Algorithm::Sha256] {
        let Some(expected) = crate::rs::digest::declared_hex(&declared.digests, &alg) else {
            continue;
        };
        let actual = match alg {
            Algorithm::Md5 => current.md5_hex,
            Algorithm::Sha1 => current.sha1_hex,
            _ => current.sha256_hex,
        };
        let Some(actual) = actual else { continue };
        if expected == actual {
            agreed = true;
            by_digest = true;
        } else {
            differences.push(Difference {
                field: alg.name().to_string(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
    }
    if let (Some(e), Some(a)) = (declared.length, current.length_bytes) {
        if e == a {
            agreed = true;
        } else {
            differences.push(Difference {
                field: "length".into(),
                expected: e.to_string(),
                actual: a.to_string(),
            });
        }
    }
    match lastmod_difference(declared, current) {
        Some(d) if !(by_digest && differences.is_empty()) => differences.push(d),
        // A digest agrees and only lastmod differs: the same bytes, touched (audit reports: `=`
        // means a digest agrees). Baseline still records the new lastmod (see `action`).
        Some(_) => {}
        None => agreed |= declared.lastmod.is_some() && current.lastmod.is_some(),
    }
    if !differences.is_empty() {
        Comparison::Differs(differences)
    } else if agreed {
        Comparison::Same { by_digest }
    } else {
        Comparison::NoEvidence
    }
}

/// A lastmod that says only the day: exactly midnight UTC, which is how a date-only
/// `<lastmod>YYYY-MM-DD` reads (xml-sitemap-writer and many CMSs write those). A real change at
/// midnight is taken as day-granular too; that costs one conditional GET.
fn day_granular(declared: &Declared) -> bool {
    declared
        .lastmod
        .is_some_and(|t| t.as_second().rem_euclid(86_400) == 0 && t.subsec_nanosecond() == 0)
}

/// The lastmods of both sides, when they differ by a second or more.
fn lastmod_difference(declared: &Declared, current: &Current<'_>) -> Option<Difference> {
    let (e, a) = (declared.lastmod?, current.lastmod?);
    (e.duration_since(a).abs() >= jiff::SignedDuration::from_secs(1)).then(|| Difference {
        field: "lastmod".into(),
        expected: e.to_string(),
        actual: a.to_string(),
    })
}

/// The baseline action for a listed resource.
pub(crate) fn action(declared: &Declared, current: Option<&CurrentState>) -> Action {
    match current {
        None => Action::Create,
        Some(c) if c.deleted => Action::Create,
        Some(c) => match compare(declared, c) {
            // Touched: the same bytes by digest, a new lastmod: fetched, and the new state
            // recorded (the fetch proves the bytes; the version carries the new lastmod).
            Comparison::Same { by_digest } => match lastmod_difference(declared, &c.view()) {
                Some(d) => Action::Update(vec![d]),
                None if !by_digest && day_granular(declared) => Action::Revalidate,
                None => Action::Keep,
            },
            Comparison::Differs(d) => Action::Update(d),
            Comparison::NoEvidence => Action::Check,
        },
    }
}

/// Print one line of a dry run's plan for `uri` (`+` create, `*` update with the fields that
/// differ, `?` fetch to compare, `=` keep, only when `verbose`) and count it, the same for
/// every format.
pub(crate) fn print_mark(
    uri: &str,
    action: &Action,
    verbose: bool,
    summary: &mut crate::report::Summary,
) {
    match action {
        Action::Create => {
            summary.created += 1;
            plan!("+ {uri}");
        }
        Action::Update(diffs) => {
            summary.updated += 1;
            let why: Vec<String> = diffs
                .iter()
                .map(|d| format!("{}: {} -> {}", d.field, d.actual, d.expected))
                .collect();
            plan!("* {uri} ({})", why.join(", "));
        }
        Action::Check => {
            summary.updated += 1;
            plan!("? {uri} (nothing to compare: will fetch and compare bytes)");
        }
        Action::Revalidate => {
            summary.updated += 1;
            plan!(
                "? {uri} (no digest and a date-only lastmod: will ask the server whether it changed)"
            );
        }
        Action::Keep => {
            summary.unchanged += 1;
            if verbose {
                plan!("= {uri}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rs::digest::parse_hash_attr;

    fn state() -> CurrentState {
        CurrentState {
            resource_id: 1,
            collection: "c".into(),
            version_id: 1,
            deleted: false,
            lastmod: Some("2024-05-01T03:00:00Z".parse().unwrap()),
            length_bytes: Some(6),
            md5_hex: Some("9f9f90dbe3e5ee1218c86b8839db1995".into()),
            sha1_hex: None,
            sha256_hex: Some(
                "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060".into(),
            ),
        }
    }

    #[test]
    fn digest_agreement_is_same_by_digest() {
        let d = Declared {
            digests: parse_hash_attr("md5:n5+Q2+Pl7hIYyGuIOdsZlQ=="),
            ..Default::default()
        };
        assert_eq!(compare(&d, &state()), Comparison::Same { by_digest: true });
    }

    #[test]
    fn any_contradiction_differs() {
        let d = Declared {
            digests: parse_hash_attr("md5:9f9f90dbe3e5ee1218c86b8839db1995"),
            length: Some(7),
            ..Default::default()
        };
        let Comparison::Differs(diffs) = compare(&d, &state()) else {
            panic!()
        };
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].field, "length");
        assert_eq!(
            (diffs[0].expected.as_str(), diffs[0].actual.as_str()),
            ("7", "6")
        );
    }

    /// Issue 28.5: a touch (same bytes by digest, a new lastmod) is `=` for audit, and a
    /// fetch for baseline, which then records the new lastmod.
    #[test]
    fn a_lastmod_only_difference_with_an_agreeing_digest_is_same_but_recorded() {
        let d = Declared {
            digests: parse_hash_attr("md5:9f9f90dbe3e5ee1218c86b8839db1995"),
            lastmod: Some("2024-06-01T00:00:00Z".parse().unwrap()),
            length: Some(6),
            encoding: None,
            categories: Vec::new(),
        };
        assert_eq!(compare(&d, &state()), Comparison::Same { by_digest: true });
        let Action::Update(diffs) = action(&d, Some(&state())) else {
            panic!("{:?}", action(&d, Some(&state())))
        };
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].field, "lastmod");
        // Without a digest, the lastmod is the evidence: it differs.
        let d = Declared {
            digests: Vec::new(),
            ..d
        };
        assert!(matches!(compare(&d, &state()), Comparison::Differs(_)));
    }

    /// Issue 28.6: a date-only lastmod and no digest cannot tell a same-day change: ask the
    /// server. With a digest, or a lastmod finer than a day, the agreement is enough.
    #[test]
    fn a_date_only_lastmod_without_a_digest_is_revalidated() {
        let mut st = state();
        st.lastmod = Some("2024-05-01T00:00:00Z".parse().unwrap());
        let date_only = Declared {
            lastmod: Some("2024-05-01T00:00:00Z".parse().unwrap()),
            length: Some(6),
            digests: Vec::new(),
            encoding: None,
            categories: Vec::new(),
        };
        assert_eq!(action(&date_only, Some(&st)), Action::Revalidate);
        let with_digest = Declared {
            digests: parse_hash_attr("md5:9f9f90dbe3e5ee1218c86b8839db1995"),
            ..date_only.clone()
        };
        assert_eq!(action(&with_digest, Some(&st)), Action::Keep);
        st.lastmod = Some("2024-05-01T10:30:00Z".parse().unwrap());
        let to_the_second = Declared {
            lastmod: st.lastmod,
            ..date_only
        };
        assert_eq!(action(&to_the_second, Some(&st)), Action::Keep);
    }

    #[test]
    fn lastmod_within_a_second_is_equal() {
        let d = Declared {
            lastmod: Some("2024-05-01T03:00:00.4Z".parse().unwrap()),
            ..Default::default()
        };
        assert_eq!(compare(&d, &state()), Comparison::Same { by_digest: false });
        let d = Declared {
            lastmod: Some("2024-05-01T03:00:02Z".parse().unwrap()),
            ..Default::default()
        };
        assert!(matches!(compare(&d, &state()), Comparison::Differs(_)));
    }

    #[test]
    fn nothing_comparable_is_no_evidence_and_a_check() {
        let d = Declared {
            digests: parse_hash_attr("sha-1:0123456789012345678901234567890123456789"),
            ..Default::default()
        };
        assert_eq!(compare(&d, &state()), Comparison::NoEvidence);
        assert_eq!(action(&d, Some(&state())), Action::Check);
        let mut gone = state();
        gone.deleted = true;
        assert_eq!(action(&d, Some(&gone)), Action::Create);
        assert_eq!(action(&d, None), Action::Create);
    }
}
