//! The comparison itself: the source's entries, in list order, against the mirror's current
//! states ([`Comparer`], `plan::compare` on each). It leaves marks on the states (seen, in sync,
//! differs, ...) and holds the findings that need the source's side to say (`+`, `*`, refused);
//! what the marks make of each resource (`=`, `-`, `?`) the report says (`report::verdict`).

use crate::audit::finding::{Class, Finding, Verification};
use crate::audit::mirror_states::{in_sample, mark, uri_key, HexBuf, Key, MirrorStates};
use crate::audit::refetch;
use crate::audit::source::Walk;
use crate::audit::spill::Entry;
use crate::engine::expected::{Item, Warnings};
use crate::engine::plan::{self, Comparison, Listed};
use crate::error::SourceError;
use crate::settings;
use std::collections::{BTreeMap, VecDeque};

/// What the source comparison gave.
// One value per audit: boxing the comparison would only move it.
#[allow(clippy::large_enum_variant)]
pub(super) enum Compared {
    Offline,
    Source(SourceComparison),
    /// The source could not be read: nothing about it is reported.
    Failed(SourceError),
}

#[derive(Default)]
pub(super) struct SourceComparison {
    /// Findings per URI that need the source's side to say (`*`, `+`, refused), held until
    /// the whole list has been read.
    pub(super) findings: BTreeMap<String, Vec<Finding>>,
    pub(super) failed_parts: Vec<(String, String)>,
    pub(super) warnings: Vec<String>,
    pub(super) listed: u64,
    /// How the resources were shown to match, and what `--refetch` is to fetch again.
    pub(super) verifying: Verifying,
    /// The collections compared: resources of others are not this audit's to call extra.
    pub(super) collections: Vec<String>,
    /// URIs listed again (the later entry counts), in list order whichever pass met them.
    twice: InListOrder,
}

impl SourceComparison {
    pub(super) fn new(s: &settings::Audit) -> SourceComparison {
        let mut c = SourceComparison::default();
        c.verifying.refetch = s.refetch;
        c.verifying.candidates = refetch::Candidates::new(s.mirror.join("staging"));
        c
    }

    /// With what the walk said: the comparison's warnings, then the walk's.
    pub(super) fn finish(mut self, walk: Walk) -> SourceComparison {
        let mut warnings = std::mem::take(&mut self.twice);
        for (i, (after, w)) in walk.warnings.into_iter().enumerate() {
            warnings.push((after, 0, i as u32), w);
        }
        self.warnings = warnings.into_vec();
        self.failed_parts = walk.failed_parts;
        self.collections = walk.collections;
        self
    }
}

/// What the comparison learns of how each resource can be proved: the per-collection counts,
/// and the resources `--refetch` fetches again (those no digest proved, or all of them).
#[derive(Default)]
pub(super) struct Verifying {
    refetch: Option<settings::Refetch>,
    collection: std::sync::Arc<str>,
    /// On disk in `staging/` until the comparison is done.
    pub(super) candidates: refetch::Candidates,
    pub(super) counts: BTreeMap<String, Verification>,
}

impl Verifying {
    fn count(&mut self) -> &mut Verification {
        self.counts.entry(self.collection.to_string()).or_default()
    }

    /// A listed resource whose lastmod alone differs (no digest to compare): fetched again
    /// by `--refetch`, which calls it `=` when the bytes are the mirror's.
    fn touched(&mut self, slot: usize, l: &Listed) {
        if self.refetch.is_some() {
            self.refetch_later(slot, l);
        }
    }

    fn refetch_later(&mut self, slot: usize, l: &Listed) {
        self.candidates.push(refetch::Candidate {
            slot,
            uri: l.uri.clone(),
            scope: l.scope.clone(),
            collection: self.collection.clone(),
        });
    }

    /// A listed resource present in the mirror, compared.
    fn compared(&mut self, slot: usize, l: &Listed, by_digest: Option<bool>) {
        let Some(by_digest) = by_digest else { return };
        let wanted = match self.refetch {
            Some(r) => r.all || !by_digest,
            None => false,
        };
        if wanted {
            self.refetch_later(slot, l);
        } else if by_digest {
            self.count().declared_digest += 1;
        } else {
            self.count().unverified += 1;
        }
    }
}

/// Warnings about the entries of a list, kept in list order whichever pass met them: the
/// first `Warnings::MAX` in the list, and a count of the others (as one pass would keep them).
/// A warning's place: the entry's place in the walk (or, for the walk's own warnings, the
/// number of entries walked before them), then 0 for the walk's, 1 for an entry's, then the
/// order among the walk's.
#[derive(Default)]
struct InListOrder {
    kept: BTreeMap<(u64, u8, u32), String>,
    dropped: u64,
}

impl InListOrder {
    fn push(&mut self, at: (u64, u8, u32), w: String) {
        self.kept.insert(at, w);
        if self.kept.len() > Warnings::MAX {
            self.kept.pop_last();
            self.dropped += 1;
        }
    }

    fn into_vec(self) -> Vec<String> {
        let mut out: Vec<String> = self.kept.into_values().collect();
        if self.dropped > 0 {
            out.push(format!("... and {} more warnings", self.dropped));
        }
        out
    }
}

/// Compares the source's entries with the mirror's states in the order they are listed, a few
/// entries behind: each entry's directory entry is prefetched when it arrives, and its slots
/// half-way to its turn ([`MirrorStates::prefetch_bucket`], [`MirrorStates::prefetch`]), so
/// that they are in the cache by the time it comes. Only the entries within `sample` (a pass's
/// slice) are compared.
pub(super) struct Comparer<'s> {
    states: &'s MirrorStates,
    sample: Option<(u64, u64)>,
    /// Entries (with their places in the list and the keys of their URIs) not compared yet,
    /// in order.
    pending: VecDeque<(u64, Key, Item)>,
    out: SourceComparison,
}

impl<'s> Comparer<'s> {
    /// Entries held: about as many lookups as the memory system keeps in flight.
    const AHEAD: usize = 16;

    /// A comparer adding to `out` (what earlier passes found).
    pub(super) fn new(
        states: &'s MirrorStates,
        sample: Option<(u64, u64)>,
        out: SourceComparison,
    ) -> Comparer<'s> {
        Comparer {
            states,
            sample,
            pending: VecDeque::with_capacity(Self::AHEAD),
            out,
        }
    }

    /// The entry at place `ord` of the walk.
    pub(super) fn take(&mut self, ord: u64, e: Entry) {
        match e {
            Entry::Collection(id) => {
                self.flush();
                self.out.verifying.collection = id;
            }
            Entry::Item(item) => self.push(ord, item),
            Entry::Skipped(uri) => {
                self.flush();
                self.states.set_by_uri(&uri, mark::SEEN);
            }
        }
    }

    /// Everything compared: what this pass and the earlier ones found.
    pub(super) fn finish_pass(mut self) -> SourceComparison {
        self.flush();
        self.out
    }

    fn push(&mut self, ord: u64, item: Item) {
        let key = match &item {
            Item::Listed(l) => uri_key(l.uri.as_str()),
            Item::Refused(r) => uri_key(&r.uri),
        };
        self.states.prefetch_bucket(&key);
        if let Some((_, half_way, _)) = self.pending.get(Self::AHEAD / 2) {
            self.states.prefetch(half_way);
        }
        if self.pending.len() == Self::AHEAD {
            self.compare_next();
        }
        self.pending.push_back((ord, key, item));
    }

    /// Compare every entry held.
    fn flush(&mut self) {
        while !self.pending.is_empty() {
            self.compare_next();
        }
    }

    fn compare_next(&mut self) {
        if let Some((ord, key, item)) = self.pending.pop_front() {
            compare_item(
                item,
                ord,
                key,
                self.states,
                self.sample,
                &mut self.out.findings,
                &mut self.out.twice,
                &mut self.out.listed,
                &mut self.out.verifying,
            );
        }
    }
}

/// Compare one entry of the source's list (`key`: its URI's) with the mirror's current state.
#[allow(clippy::too_many_arguments)]
fn compare_item(
    item: Item,
    ord: u64,
    key: Key,
    states: &MirrorStates,
    sample: Option<(u64, u64)>,
    findings: &mut BTreeMap<String, Vec<Finding>>,
    warnings: &mut InListOrder,
    listed: &mut u64,
    verifying: &mut Verifying,
) {
    let (uri, found) = match item {
        Item::Refused(r) => {
            if in_sample(&key, sample) {
                let f = Finding::new(Class::Refused)
                    .uri(r.uri.clone())
                    .actual(r.reason);
                findings.insert(r.uri, vec![f]);
            }
            return;
        }
        Item::Listed(l) => {
            if !in_sample(&key, sample) {
                return;
            }
            *listed += 1;
            let slot = states.find(&key);
            let again = match slot {
                Some(i) => states.marks(i) & mark::SEEN != 0,
                None => findings.contains_key(l.uri.as_str()),
            };
            if again {
                // As in a snapshot: the later entry counts.
                warnings.push(
                    (ord, 1, 0),
                    format!(
                        "{}: line {}: {} listed again; the later entry counts",
                        l.document, l.line, l.uri
                    ),
                );
                findings.remove(l.uri.as_str());
                if let Some(i) = slot {
                    states.clear(i, mark::VERDICT);
                }
            }
            match slot {
                Some(i) if !states.deleted(i) => {
                    states.set(i, mark::SEEN);
                    let mut buf = HexBuf::default();
                    let verdict = plan::compare_view(&l.declared, &states.view(i, &mut buf));
                    let by_digest = match verdict {
                        Comparison::Same { by_digest } => Some(by_digest),
                        Comparison::NoEvidence => Some(false),
                        Comparison::Differs(_) => None,
                    };
                    verifying.compared(i, &l, by_digest);
                    match verdict {
                        Comparison::Same { by_digest: true } => states.set(i, mark::SAME),
                        Comparison::Same { by_digest: false } => states.set(i, mark::UNVERIFIABLE),
                        Comparison::NoEvidence => states.set(i, mark::NO_EVIDENCE),
                        Comparison::Differs(diffs) => {
                            states.set(i, mark::DIFFERS);
                            // Only the lastmod differs, and no digest says anything: a touch
                            // (same bytes, new date) or a change. `--refetch` tells them
                            // apart by the bytes.
                            if diffs.iter().all(|d| d.field == "lastmod") {
                                verifying.touched(i, &l);
                            }
                            let uri = l.uri.to_string();
                            let f = diffs
                                .into_iter()
                                .map(|d| {
                                    Finding::new(Class::Changed)
                                        .uri(uri.clone())
                                        .field(d.field)
                                        .expected(d.expected)
                                        .actual(d.actual)
                                })
                                .collect();
                            findings.insert(uri, f);
                        }
                    }
                    return;
                }
                Some(i) => {
                    states.set(i, mark::SEEN);
                    (l.uri.to_string(), true)
                }
                None => (l.uri.to_string(), false),
            }
        }
    };
    let f = Finding::new(Class::Missing).uri(uri.clone());
    let f = if found {
        f.actual("deleted in the mirror")
    } else {
        f
    };
    findings.insert(uri, vec![f]);
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::engine::expected::Refused;
    use crate::engine::plan::Declared;
    use crate::model::{Change, Via};
    use crate::net::Scope;
    use crate::rs::digest::{Algorithm, Digest};
    use crate::store::catalog::NewVersion;
    use std::sync::Arc;

    pub(in crate::audit) const MD5_A: &str = "d8314ff333963f20f75f7718b9a190dd";
    pub(in crate::audit) const MD5_B: &str = "0123456789abcdef0123456789abcdef";
    pub(in crate::audit) const T1: &str = "2025-12-01T10:00:00Z";
    pub(in crate::audit) const T2: &str = "2025-12-02T10:00:00Z";

    /// A mirror whose catalog holds these current states, all of collection `c`.
    pub(in crate::audit) use crate::audit::mirror_states::tests::catalog_with as mirror;

    /// A current version with this length, md5 and lastmod.
    pub(in crate::audit) fn held(
        length: Option<u64>,
        md5: Option<&str>,
        lastmod: Option<&str>,
    ) -> NewVersion {
        NewVersion {
            change: Change::Created,
            arrived_via: Via::Http,
            length_bytes: length,
            md5_hex: md5.map(str::to_string),
            lastmod: lastmod.map(|t| t.parse().unwrap()),
            ..Default::default()
        }
    }

    /// A deletion recorded as the current version.
    pub(in crate::audit) fn tombstone() -> NewVersion {
        NewVersion {
            change: Change::Deleted,
            arrived_via: Via::Tombstone,
            ..Default::default()
        }
    }

    /// What the source declares: this length, md5 and lastmod.
    pub(in crate::audit) fn declared(
        length: Option<u64>,
        md5: Option<&str>,
        lastmod: Option<&str>,
    ) -> Declared {
        Declared {
            lastmod: lastmod.map(|t| t.parse().unwrap()),
            length,
            digests: md5
                .map(|h| Digest::new(Algorithm::Md5, h))
                .into_iter()
                .collect(),
            encoding: None,
            categories: Vec::new(),
        }
    }

    /// `uri` listed at `line` of `http://x/rl.xml`.
    pub(in crate::audit) fn listed(uri: &str, line: u64, declared: Declared) -> Entry {
        let doc = url::Url::parse("http://x/rl.xml").unwrap();
        Entry::Item(Item::Listed(Listed {
            uri: url::Url::parse(uri).unwrap(),
            declared,
            media_type: None,
            duplicates: Vec::new(),
            document: doc.as_str().into(),
            line,
            scope: Arc::new(Scope::for_document(&doc, &[])),
        }))
    }

    fn refused(uri: &str, reason: &str) -> Entry {
        Entry::Item(Item::Refused(Refused {
            uri: uri.into(),
            reason: reason.into(),
        }))
    }

    /// The comparison of `entries`, in list order, with `states` within `sample`.
    pub(in crate::audit) fn compare(
        states: &MirrorStates,
        sample: Option<(u64, u64)>,
        entries: Vec<Entry>,
    ) -> SourceComparison {
        let mut comparer = Comparer::new(states, sample, SourceComparison::default());
        for (ord, e) in entries.into_iter().enumerate() {
            comparer.take(ord as u64, e);
        }
        comparer.finish_pass()
    }

    /// A finding's report line, without its hint.
    pub(in crate::audit) fn line(f: &Finding) -> String {
        let mut f = f.clone();
        f.hint = "".into();
        f.line()
    }

    /// The findings held, in URI order, as lines.
    fn lines(c: &SourceComparison) -> Vec<String> {
        c.findings.values().flatten().map(line).collect()
    }

    fn marks_of(states: &MirrorStates, uri: &str) -> u8 {
        states.marks(states.find(&uri_key(uri)).unwrap())
    }

    /// Every way a listed entry can stand against the mirror, in one list.
    pub(in crate::audit) fn the_source() -> (Vec<(&'static str, NewVersion)>, Vec<Entry>) {
        let states = vec![
            ("http://x/a-same", held(Some(5), Some(MD5_A), Some(T1))),
            ("http://x/b-digest", held(Some(5), Some(MD5_A), None)),
            ("http://x/c-length", held(Some(5), None, Some(T1))),
            ("http://x/d-lastmod", held(Some(5), None, Some(T1))),
            ("http://x/e-touched", held(Some(5), Some(MD5_A), Some(T1))),
            ("http://x/f-length-agrees", held(Some(5), None, None)),
            ("http://x/g-nothing", held(Some(5), None, None)),
            ("http://x/h-deleted", tombstone()),
            ("http://x/i-extra", held(Some(5), None, None)),
            ("http://x/j-skipped", held(Some(5), None, None)),
            ("http://x/k-gone", tombstone()),
        ];
        let entries = vec![
            Entry::Collection("c".into()),
            listed(
                "http://x/a-same",
                2,
                declared(Some(5), Some(MD5_A), Some(T1)),
            ),
            listed("http://x/b-digest", 3, declared(Some(6), Some(MD5_B), None)),
            listed("http://x/c-length", 4, declared(Some(6), None, Some(T1))),
            listed("http://x/d-lastmod", 5, declared(None, None, Some(T2))),
            listed(
                "http://x/e-touched",
                6,
                declared(Some(5), Some(MD5_A), Some(T2)),
            ),
            listed("http://x/f-length-agrees", 7, declared(Some(5), None, None)),
            listed("http://x/g-nothing", 8, declared(None, None, None)),
            listed("http://x/h-deleted", 9, declared(Some(5), None, None)),
            listed("http://x/new", 10, declared(Some(5), None, None)),
            refused("http://y/out", "outside the scope"),
            Entry::Skipped("http://x/j-skipped".into()),
        ];
        (states, entries)
    }

    #[test]
    fn each_entry_is_judged_against_the_mirrors_state() {
        let (states, entries) = the_source();
        let (_dir, catalog) = mirror(&states);
        let states = MirrorStates::load(&catalog, vec![], None).unwrap();
        let c = compare(&states, None, entries);
        // `+` missing (or deleted here), `*` changed (by digest, length, lastmod), refused: held
        // by URI until the report; the rest is in the marks.
        assert_eq!(
            lines(&c),
            [
                format!("* http://x/b-digest  changed md5: expected {MD5_B}, actual {MD5_A}"),
                "* http://x/b-digest  changed length: expected 6, actual 5".into(),
                "* http://x/c-length  changed length: expected 6, actual 5".into(),
                format!("* http://x/d-lastmod  changed lastmod: expected {T2}, actual {T1}"),
                "+ http://x/h-deleted  missing: deleted in the mirror".into(),
                "+ http://x/new  missing".into(),
                "! http://y/out  refused: outside the scope".into(),
            ]
        );
        use mark::*;
        for (uri, want) in [
            ("http://x/a-same", SEEN | SAME),
            ("http://x/b-digest", SEEN | DIFFERS),
            ("http://x/c-length", SEEN | DIFFERS),
            ("http://x/d-lastmod", SEEN | DIFFERS),
            // A digest agrees and only the lastmod differs: the same bytes, touched.
            ("http://x/e-touched", SEEN | SAME),
            ("http://x/f-length-agrees", SEEN | UNVERIFIABLE),
            ("http://x/g-nothing", SEEN | NO_EVIDENCE),
            ("http://x/h-deleted", SEEN),
            // Not listed: the report calls it extra (`-`) once the whole list was read.
            ("http://x/i-extra", 0),
            // Left out by the format or the filter: neither missing nor extra.
            ("http://x/j-skipped", SEEN),
            ("http://x/k-gone", 0),
        ] {
            assert_eq!(marks_of(&states, uri), want, "{uri}");
        }
        // Listed and in the sample: the refused one is not, nor the skipped one.
        assert_eq!(c.listed, 9);
        let counts: Vec<_> = c.verifying.counts.into_iter().collect();
        assert_eq!(
            counts,
            [(
                "c".to_string(),
                Verification {
                    declared_digest: 2,
                    unverified: 2,
                    ..Default::default()
                }
            )]
        );
        assert!(c.warnings.is_empty() && c.twice.into_vec().is_empty());
    }

    #[test]
    fn refetch_takes_what_no_digest_proved_or_with_all_everything() {
        let (states, _) = the_source();
        let (dir, catalog) = mirror(&states);
        let by_digest = Some(Verification {
            declared_digest: 2,
            ..Default::default()
        });
        for (all, want, counted) in [
            // The lastmod alone differs: a touch or a change, which the bytes tell.
            (
                false,
                &["d-lastmod", "f-length-agrees", "g-nothing"][..],
                by_digest,
            ),
            (
                true,
                &[
                    "a-same",
                    "d-lastmod",
                    "e-touched",
                    "f-length-agrees",
                    "g-nothing",
                ][..],
                None,
            ),
        ] {
            let states = MirrorStates::load(&catalog, vec![], None).unwrap();
            let mut out = SourceComparison::default();
            out.verifying.refetch = Some(settings::Refetch { all, bytes: false });
            out.verifying.candidates = refetch::Candidates::new(dir.path().join("staging"));
            let mut comparer = Comparer::new(&states, None, out);
            for (ord, e) in the_source().1.into_iter().enumerate() {
                comparer.take(ord as u64, e);
            }
            let mut c = comparer.finish_pass();
            let taken: Vec<String> = c
                .verifying
                .candidates
                .take()
                .unwrap()
                .unwrap()
                .map(|candidate| {
                    let candidate = candidate.unwrap();
                    let slot = states.find(&uri_key(candidate.uri.as_str()));
                    assert_eq!(slot, Some(candidate.slot));
                    format!("{} {}", candidate.collection, candidate.uri)
                })
                .collect();
            let want: Vec<String> = want.iter().map(|u| format!("c http://x/{u}")).collect();
            assert_eq!(taken, want, "all: {all}");
            // Counted once fetched again, not before.
            assert_eq!(c.verifying.counts.get("c").copied(), counted, "all: {all}");
        }
    }

    #[test]
    fn a_uri_listed_again_is_judged_by_its_later_entry() {
        let (_dir, catalog) = mirror(&[
            ("http://x/fixed", held(Some(5), None, None)),
            ("http://x/broken", held(Some(5), None, None)),
        ]);
        let states = MirrorStates::load(&catalog, vec![], None).unwrap();
        let c = compare(
            &states,
            None,
            vec![
                Entry::Collection("c".into()),
                listed("http://x/fixed", 2, declared(Some(6), None, None)),
                listed("http://x/broken", 3, declared(Some(5), None, None)),
                listed("http://x/new", 4, declared(None, None, None)),
                listed("http://x/fixed", 5, declared(Some(5), None, None)),
                listed("http://x/broken", 6, declared(Some(7), None, None)),
                listed("http://x/new", 7, declared(None, None, None)),
            ],
        );
        assert_eq!(
            lines(&c),
            [
                "* http://x/broken  changed length: expected 7, actual 5",
                "+ http://x/new  missing",
            ]
        );
        assert_eq!(
            marks_of(&states, "http://x/fixed"),
            mark::SEEN | mark::UNVERIFIABLE
        );
        assert_eq!(
            marks_of(&states, "http://x/broken"),
            mark::SEEN | mark::DIFFERS
        );
        // Each entry is counted; the warnings come in list order.
        assert_eq!(c.listed, 6);
        assert_eq!(
            c.twice.into_vec(),
            [
                "http://x/rl.xml: line 5: http://x/fixed listed again; the later entry counts",
                "http://x/rl.xml: line 6: http://x/broken listed again; the later entry counts",
                "http://x/rl.xml: line 7: http://x/new listed again; the later entry counts",
            ]
        );
    }

    #[test]
    fn a_sample_compares_only_the_entries_of_its_slice() {
        let uris: Vec<String> = (0..40).map(|i| format!("http://x/{i:02}")).collect();
        // The even ones are in the mirror and listed; the odd ones only listed.
        let states: Vec<(&str, NewVersion)> = uris
            .iter()
            .step_by(2)
            .map(|u| (u.as_str(), held(Some(5), None, None)))
            .collect();
        let (_dir, catalog) = mirror(&states);
        let list = || {
            let mut entries = vec![Entry::Collection("c".into())];
            for (i, u) in uris.iter().enumerate() {
                entries.push(listed(u, i as u64, declared(Some(5), None, None)));
            }
            entries
        };
        let (mut listed_in_all, mut missing) = (0, Vec::new());
        for n in 1..=3 {
            let slice = Some((n, 3));
            let states = MirrorStates::load(&catalog, vec![], slice).unwrap();
            let c = compare(&states, slice, list());
            let in_slice = |u: &&String| in_sample(&uri_key(u), slice);
            assert_eq!(
                c.listed,
                uris.iter().filter(in_slice).count() as u64,
                "slice {n}"
            );
            let odd_in_slice: Vec<String> = uris
                .iter()
                .skip(1)
                .step_by(2)
                .filter(in_slice)
                .map(|u| format!("+ {u}  missing"))
                .collect();
            assert_eq!(lines(&c), odd_in_slice, "slice {n}");
            listed_in_all += c.listed;
            missing.extend(c.findings.into_keys());
        }
        // The slices cover the list once.
        assert_eq!(listed_in_all, 40);
        missing.sort();
        let odd: Vec<String> = uris.iter().skip(1).step_by(2).cloned().collect();
        assert_eq!(missing, odd);
    }

    #[test]
    fn the_walks_warnings_and_the_entries_come_in_list_order() {
        let mut c = SourceComparison::default();
        c.twice.push((3, 1, 0), "entry 3".into());
        c.twice.push((1, 1, 0), "entry 1".into());
        let c = c.finish(Walk {
            collections: vec!["c".into()],
            failed_parts: vec![("http://x/part2.xml".into(), "404".into())],
            warnings: vec![
                (3, "after 3, first".into()),
                (0, "before any".into()),
                (3, "after 3, second".into()),
            ],
        });
        assert_eq!(
            c.warnings,
            [
                "before any",
                "entry 1",
                "after 3, first",
                "after 3, second",
                "entry 3"
            ]
        );
        assert_eq!(c.collections, ["c"]);
        assert_eq!(
            c.failed_parts,
            [("http://x/part2.xml".to_string(), "404".to_string())]
        );
    }

    #[test]
    fn warnings_beyond_the_bound_are_counted_the_first_in_the_list_kept() {
        let mut w = InListOrder::default();
        let n = Warnings::MAX as u64 + 2;
        // Met out of order (a later pass meets earlier entries): the first of the list stay.
        for at in (0..n).rev() {
            w.push((at, 1, 0), format!("w{at}"));
        }
        let kept = w.into_vec();
        assert_eq!(kept.len(), Warnings::MAX + 1);
        assert_eq!(kept[0], "w0");
        assert_eq!(kept[Warnings::MAX - 1], format!("w{}", Warnings::MAX - 1));
        assert_eq!(kept[Warnings::MAX], "... and 2 more warnings");
    }
}
