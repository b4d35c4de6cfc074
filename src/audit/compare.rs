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
