//! What the comparison leaves the report of each resource: its marks, held by the states of a
//! single pass or, one byte per resource in URI order, by what each of several passes recorded
//! ([`ByRank`]).

use crate::audit::mirror_states::{in_sample, slice_of, uri_key, MirrorStates};
use crate::store::audit_records;
use crate::store::{Catalog, StoreError};

/// What the report reads of each resource's marks: the states of a single pass, or what each
/// of several passes left, one byte per resource in URI order.
pub(super) enum Marks {
    States(MirrorStates),
    ByRank(ByRank),
}

impl Marks {
    pub(super) fn collisions(&self) -> u64 {
        match self {
            Marks::States(states) => states.collisions,
            Marks::ByRank(b) => b.collisions,
        }
    }

    /// The marks of the resource `uri`, the `rank`-th in URI order, and whether it is deleted:
    /// `None` when it has no current state within the sample.
    pub(super) fn of(&self, rank: usize, uri: &str) -> Option<(u8, bool)> {
        match self {
            Marks::States(states) => states
                .find(&uri_key(uri))
                .map(|i| (states.marks(i), states.deleted(i))),
            Marks::ByRank(b) => b.get(rank),
        }
    }

    /// The marks of every current state within the sample, and whether it is deleted.
    pub(super) fn each(&self) -> Box<dyn Iterator<Item = (u8, bool)> + '_> {
        match self {
            Marks::States(states) => {
                Box::new((0..states.len()).map(|i| (states.marks(i), states.deleted(i))))
            }
            Marks::ByRank(b) => Box::new((0..b.marks.len()).filter_map(|r| b.get(r))),
        }
    }
}

/// The marks each pass left, by the resource's rank in URI order (`SELECT uri FROM resources
/// ORDER BY uri`: no writer runs while the audit holds the lock, so the order is the same at
/// every pass and at the report).
pub(super) struct ByRank {
    marks: Vec<u8>,
    /// The slice of each resource's key, modulo 256, found by the first pass: later passes
    /// hash only the URIs of their own slice (and a 256th of the others, beyond 256 slices).
    slices: Vec<u8>,
    collisions: u64,
}

impl ByRank {
    /// No current state (or not in the sample). The marks fill seven bits, and SAME and
    /// DIFFERS are never both set, so a recorded byte is never this.
    const ABSENT: u8 = 0xFF;
    const DELETED: u8 = 0x80;

    pub(super) fn new(resources: usize) -> ByRank {
        ByRank {
            marks: vec![Self::ABSENT; resources],
            slices: Vec::new(),
            collisions: 0,
        }
    }

    fn set(&mut self, at: usize, marks: u8, deleted: bool) {
        debug_assert!(marks & Self::DELETED == 0);
        let b = marks | if deleted { Self::DELETED } else { 0 };
        debug_assert_ne!(b, Self::ABSENT);
        if at >= self.marks.len() {
            self.marks.resize(at + 1, Self::ABSENT);
        }
        self.marks[at] = b;
    }

    fn get(&self, rank: usize) -> Option<(u8, bool)> {
        match self.marks.get(rank).copied() {
            None | Some(Self::ABSENT) => None,
            Some(b) => Some((b & !Self::DELETED, b & Self::DELETED != 0)),
        }
    }

    /// Without a comparison (offline, or the source could not be read), what the report needs
    /// of the states: which resources have one within `sample`, and which are deletions. One
    /// scan of the catalog in URI order, no states held.
    pub(super) fn record_unmarked(
        &mut self,
        catalog: &Catalog,
        sample: Option<(u64, u64)>,
    ) -> Result<(), StoreError> {
        let mut rank = 0usize;
        audit_records::each_resource_deletion_in_order(catalog, |uri, deleted| {
            let at = rank;
            rank += 1;
            let Some(deleted) = deleted else {
                return Ok(());
            };
            if sample.is_some() && !in_sample(&uri_key(uri), sample) {
                return Ok(());
            }
            self.set(at, 0, deleted);
            Ok(())
        })
    }

    /// Keep what the pass over slice `k` of `m` marked.
    pub(super) fn record(
        &mut self,
        catalog: &Catalog,
        states: &MirrorStates,
        (k, m): (u64, u64),
    ) -> Result<(), StoreError> {
        self.collisions += states.collisions;
        let first = self.slices.is_empty();
        if first {
            self.slices.reserve_exact(self.marks.len());
        }
        audit_records::with_uris_in_order(catalog, |uris| {
            let mut at = 0usize;
            loop {
                // A resource of another pass's slice: its URI need not be read.
                if !first && self.slices.get(at) != Some(&(k as u8)) {
                    if !uris.skip()? {
                        return Ok(());
                    }
                    at += 1;
                    continue;
                }
                let Some(uri) = uris.next_uri()? else {
                    return Ok(());
                };
                let key = uri_key(uri);
                let slice = slice_of(&key, m);
                if first {
                    self.slices.push(slice as u8);
                }
                if slice == k {
                    if let Some(i) = states.find(&key) {
                        self.set(at, states.marks(i), states.deleted(i));
                    }
                }
                at += 1;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::compare::tests::{held, mirror, tombstone};
    use crate::audit::mirror_states::mark;

    #[test]
    fn a_rank_holds_its_marks_and_whether_it_is_deleted() {
        let mut b = ByRank::new(3);
        assert_eq!((b.get(0), b.get(2), b.get(3)), (None, None, None));
        b.set(0, mark::SEEN | mark::SAME, false);
        b.set(1, 0, true);
        b.set(2, mark::ELSEWHERE | mark::CLAIMED | mark::SEEN, true);
        // A resource the first count did not know of: the marks grow to it.
        b.set(5, mark::DIFFERS, false);
        assert_eq!(b.get(0), Some((mark::SEEN | mark::SAME, false)));
        assert_eq!(b.get(1), Some((0, true)));
        assert_eq!(
            b.get(2),
            Some((mark::ELSEWHERE | mark::CLAIMED | mark::SEEN, true))
        );
        assert_eq!((b.get(3), b.get(4)), (None, None));
        assert_eq!(b.get(5), Some((mark::DIFFERS, false)));
    }

    #[test]
    fn what_each_pass_records_is_what_one_pass_holds() {
        let uris: Vec<String> = (0..60).map(|i| format!("http://x/{i:02}")).collect();
        let states: Vec<(&str, _)> = uris
            .iter()
            .enumerate()
            .map(|(i, u)| match i % 4 {
                3 => (u.as_str(), tombstone()),
                _ => (u.as_str(), held(Some(i as u64), None, None)),
            })
            .collect();
        let (_dir, catalog) = mirror(&states);
        // Some marks, by URI, as a comparison would leave them.
        let marks_of = |i: usize| match i % 3 {
            0 => mark::SEEN | mark::SAME,
            1 => mark::SEEN | mark::DIFFERS,
            _ => 0,
        };
        let mark_all = |states: &MirrorStates| {
            for (i, u) in uris.iter().enumerate() {
                if let Some(slot) = states.find(&uri_key(u)) {
                    states.set(slot, marks_of(i));
                }
            }
        };
        let whole = MirrorStates::load(&catalog, vec![], None).unwrap();
        mark_all(&whole);
        let whole = Marks::States(whole);
        let mut by_rank = ByRank::new(uris.len());
        for k in 1..=4 {
            let states = MirrorStates::load(&catalog, vec![], Some((k, 4))).unwrap();
            mark_all(&states);
            by_rank.record(&catalog, &states, (k, 4)).unwrap();
        }
        let by_rank = Marks::ByRank(by_rank);
        // The catalog's URIs are in this order: the ranks are the indexes.
        for (rank, u) in uris.iter().enumerate() {
            let want = Some((marks_of(rank), rank % 4 == 3));
            assert_eq!(whole.of(rank, u), want, "{u}");
            assert_eq!(by_rank.of(rank, u), want, "{u}");
        }
        let mut each: Vec<_> = by_rank.each().collect();
        let mut want: Vec<_> = whole.each().collect();
        each.sort_unstable();
        want.sort_unstable();
        assert_eq!(each, want);
        assert_eq!(by_rank.collisions(), 0);
    }

    #[test]
    fn without_a_comparison_the_ranks_say_only_which_are_deleted() {
        let (_dir, catalog) = mirror(&[
            ("http://x/a", held(Some(1), None, None)),
            ("http://x/b", tombstone()),
            ("http://x/c", held(Some(1), None, None)),
        ]);
        let mut b = ByRank::new(3);
        b.record_unmarked(&catalog, None).unwrap();
        let all: Vec<_> = (0..3).map(|r| b.get(r)).collect();
        assert_eq!(all, [Some((0, false)), Some((0, true)), Some((0, false))]);
        // Within a sample, the others have no state.
        let sample = Some((1, 2));
        let mut b = ByRank::new(3);
        b.record_unmarked(&catalog, sample).unwrap();
        for (rank, (u, deleted)) in [
            ("http://x/a", false),
            ("http://x/b", true),
            ("http://x/c", false),
        ]
        .into_iter()
        .enumerate()
        {
            let want = in_sample(&uri_key(u), sample).then_some((0, deleted));
            assert_eq!(b.get(rank), want, "{u}");
        }
    }
}
