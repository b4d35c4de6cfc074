//! The plan of the comparison: the mirror's states loaded whole and the source's list streamed
//! through them, or, for a mirror larger than [`PASS_RESOURCES`], the list spilled once and
//! compared slice by slice of the URIs' keys. After each pass, the resources of collections
//! this audit does not compare are marked, and `--refetch` fetches again what it asks for.

use crate::audit::compare::{Compared, Comparer, SourceComparison};
use crate::audit::finding::{Class, Finding, Totals};
use crate::audit::fixity::{self, Fixity};
use crate::audit::marks::{ByRank, Marks};
use crate::audit::mirror_states::{in_sample, mark, HexBuf, Key, MirrorStates};
use crate::audit::refetch;
use crate::audit::source::{own_audits, walk_source, Walk};
use crate::audit::spill::SpillWriter;
use crate::engine::format::{Formats, OwnAudit};
use crate::error::{Error, SourceError};
use crate::settings::{self, UsageError};
use crate::store::audit_records;
use crate::store::{Catalog, StoreError};
use std::time::Instant;

/// The mirror's side of the audit: the states loaded (in one pass or several) and compared
/// with the source's list.
pub(super) struct Comparing<'a> {
    pub(super) s: &'a settings::Audit,
    pub(super) formats: &'a Formats,
    pub(super) catalog: &'a Catalog,
    pub(super) source: Option<&'a str>,
    pub(super) also: &'a [String],
    pub(super) fixity_options: fixity::Options,
    /// Local fixity takes its claims from the loaded states (one pass only).
    pub(super) from_states: bool,
    pub(super) passes: u64,
    pub(super) resources: usize,
}

/// What [`Comparing`] gives: the marks the report reads, the phases' times, the comparison,
/// the formats' own audits, and local fixity when it ran from the states.
pub(super) struct Side {
    pub(super) marks: Marks,
    pub(super) phases: Phases,
    pub(super) compared: Compared,
    pub(super) own: Option<OwnAudit>,
    pub(super) fixity: Option<Result<Fixity, StoreError>>,
}

impl Comparing<'_> {
    /// Load the states within `slice`: one connection per core reads a share of them (the
    /// catalog check and the load are all that runs meanwhile).
    fn load(
        &self,
        slice: Option<(u64, u64)>,
        phases: &mut Phases,
    ) -> Result<MirrorStates, StoreError> {
        let t = Instant::now();
        let more = (1..cores())
            .map(|_| fixity::open_for_scan(&self.s.mirror))
            .collect::<Result<_, _>>()?;
        let states = MirrorStates::load(self.catalog, more, slice)?;
        phases.loading += since(t);
        Ok(states)
    }

    /// The whole mirror's states at once, the source's list streamed through them (and local
    /// fixity beside it, from the states, below `--level fixity`).
    pub(super) fn in_one_pass(&self) -> Result<Side, StoreError> {
        let s = self.s;
        let mut phases = Phases::default();
        let states = self.load(s.sample, &mut phases)?;
        let t = Instant::now();
        let (options, held) = (self.fixity_options, &states);
        let (compared, fixity) = std::thread::scope(|inner| {
            let local = self
                .from_states
                .then(|| inner.spawn(move || fixity::check_current(&s.mirror, options, held)));
            let compared = self.compare_streamed(&states);
            let fixity = local.map(|h| h.join().expect("local fixity does not panic"));
            (compared, fixity)
        });
        let (mut compared, own) = compared?;
        phases.comparing += since(t);
        if let Compared::Source(c) = &mut compared {
            settle(s, self.catalog, &states, c, &mut phases)?;
        }
        Ok(Side {
            marks: Marks::States(states),
            phases,
            compared,
            own,
            fixity,
        })
    }

    /// The source's list walked and compared with `states` as it is read.
    fn compare_streamed(
        &self,
        states: &MirrorStates,
    ) -> Result<(Compared, Option<OwnAudit>), StoreError> {
        let s = self.s;
        let (walked, own) = own_audits(self.formats, self.catalog, s, self.source, self.also)?;
        let compared = match (self.source, walked.split_first()) {
            (Some(_), Some((first, rest))) => {
                let mut comparer = Comparer::new(states, s.sample, SourceComparison::new(s));
                let walk = walk_source(s, self.formats, first, rest, &mut |ord, e| {
                    comparer.take(ord, e);
                    Ok(())
                });
                match walk {
                    Ok(walk) => Compared::Source(comparer.finish_pass().finish(walk)),
                    Err(e) => Compared::Failed(e),
                }
            }
            _ => Compared::Offline,
        };
        Ok((compared, own))
    }

    /// Several passes, each over one slice of the URIs' keys: the source's list is spilled
    /// once, and each pass loads its slice's states, compares the spilled entries of that
    /// slice with them, and leaves its marks by rank (`ByRank`).
    pub(super) fn in_passes(&self) -> Result<Side, StoreError> {
        let (s, catalog) = (self.s, self.catalog);
        let mut phases = Phases::default();
        let t = Instant::now();
        let (walked, own) = own_audits(self.formats, catalog, s, self.source, self.also)?;
        let (spilled, mut compared) = self.spill(&walked)?;
        phases.spilling += since(t);
        let mut by_rank = ByRank::new(self.resources);
        let Some((spill, walk)) = spilled else {
            // Nothing to compare: the marks are only which states are deletions.
            let t = Instant::now();
            by_rank.record_unmarked(catalog, s.sample)?;
            phases.recording += since(t);
            return Ok(Side {
                marks: Marks::ByRank(by_rank),
                phases,
                compared,
                own,
                fixity: None,
            });
        };
        let mut comparison = SourceComparison::new(s);
        for p in 1..=self.passes {
            let slice = pass_slice(s.sample, p, self.passes);
            let states = self.load(slice, &mut phases)?;
            let t = Instant::now();
            let mut comparer = Comparer::new(&states, slice, comparison);
            // Only this slice's entries are parsed and compared.
            let keep = |key: &Key| in_sample(key, slice);
            spill.replay(keep, |ord, e| comparer.take(ord, e))?;
            comparison = comparer.finish_pass();
            comparison.collections.clone_from(&walk.collections);
            phases.comparing += since(t);
            settle(s, catalog, &states, &mut comparison, &mut phases)?;
            let slice = slice.expect("a pass of several has a slice");
            let t = Instant::now();
            by_rank.record(catalog, &states, slice)?;
            phases.recording += since(t);
        }
        compared = Compared::Source(comparison.finish(walk));
        Ok(Side {
            marks: Marks::ByRank(by_rank),
            phases,
            compared,
            own,
            fixity: None,
        })
    }

    /// The source's list walked into a spill in `staging/` (none offline, or when the source
    /// could not be read: then the comparison says why).
    #[allow(clippy::type_complexity)]
    fn spill(
        &self,
        walked: &[String],
    ) -> Result<(Option<(crate::audit::spill::Spill, Walk)>, Compared), StoreError> {
        let s = self.s;
        let (Some(_), Some((first, rest))) = (self.source, walked.split_first()) else {
            return Ok((None, Compared::Offline));
        };
        let mut writer = SpillWriter::create(&s.mirror.join("staging"))?;
        let mut failed = None;
        let walk = walk_source(s, self.formats, first, rest, &mut |_, e| {
            writer.push(&e).map_err(|e| {
                let stop = SourceError::Unusable {
                    url: first.clone(),
                    message: e.to_string(),
                };
                failed = Some(e);
                stop
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(match walk {
            Ok(walk) => (Some((writer.finish()?, walk)), Compared::Offline),
            Err(e) => (None, Compared::Failed(e)),
        })
    }
}

/// The wall time of the phases that may run once per pass.
#[derive(Default)]
pub(super) struct Phases {
    /// Several passes: walking the source into the spill.
    spilling: f64,
    /// Several passes: what each pass leaves for the report.
    recording: f64,
    loading: f64,
    comparing: f64,
    refetching: f64,
}

impl Phases {
    /// The phases' times, in the order people read them.
    pub(super) fn record(&self, totals: &mut Totals, single: bool, compared: &Compared) {
        if !single {
            totals
                .phases
                .push(("reading the source's list into staging/", self.spilling));
            totals
                .phases
                .push(("recording each pass's marks", self.recording));
        }
        totals.phases.push(("loading current states", self.loading));
        totals.phases.push(("source comparison", self.comparing));
        if let Compared::Source(_) = compared {
            totals.phases.push(("refetch", self.refetching));
        }
    }
}

/// After a pass's comparison: mark the resources of collections this audit does not compare,
/// and fetch again what `--refetch` asks for.
fn settle(
    s: &settings::Audit,
    catalog: &Catalog,
    states: &MirrorStates,
    c: &mut SourceComparison,
    phases: &mut Phases,
) -> Result<(), StoreError> {
    mark_other_collections(catalog, states, &c.collections)?;
    let t = Instant::now();
    refetch_and_mark(s, catalog, states, c)?;
    phases.refetching += t.elapsed().as_secs_f64();
    Ok(())
}

/// `--refetch`: fetch the candidates again, then mark each: `=` when the bytes agree; a `*`
/// finding (field `sha-256`, expected the source's, actual the mirror's) when they do not; a
/// `?` finding saying why when only the server's 304 or nothing at all answered.
fn refetch_and_mark(
    s: &settings::Audit,
    catalog: &Catalog,
    states: &MirrorStates,
    c: &mut SourceComparison,
) -> Result<(), StoreError> {
    let Some(mode) = s.refetch else {
        return Ok(());
    };
    let Some(candidates) = c.verifying.candidates.take()? else {
        return Ok(());
    };
    // Each job made as it goes out: the candidates stay on disk until then.
    let mut buf = HexBuf::default();
    let jobs = candidates.map(|candidate| {
        let candidate = candidate?;
        let mirror_sha256 = states
            .view(candidate.slot, &mut buf)
            .sha256_hex
            .unwrap_or_default()
            .to_string();
        let validators = match mode.bytes {
            true => crate::model::Validators::default(),
            false => {
                let (etag, last_modified) = catalog.current_validators(candidate.uri.as_str())?;
                crate::model::Validators {
                    etag,
                    last_modified,
                }
            }
        };
        Ok::<_, StoreError>(refetch::Job {
            candidate,
            mirror_sha256,
            validators,
        })
    });
    let staging = s.mirror.join("staging");
    std::fs::create_dir_all(&staging).map_err(|e| StoreError::io("creating", &staging, e))?;
    let http = s.source.http();
    let uri_of = |job: &refetch::Job| job.candidate.uri.to_string();
    refetch::run(&http, &staging, jobs, |job, outcome| {
        let slot = job.candidate.slot;
        let counts = c
            .verifying
            .counts
            .entry(job.candidate.collection.to_string())
            .or_default();
        // The comparison's verdict is replaced by what the bytes (or the server) said.
        states.clear(slot, mark::SAME | mark::UNVERIFIABLE | mark::NO_EVIDENCE);
        let unverifiable = |why: String| {
            Finding::new(Class::Unverifiable)
                .uri(uri_of(&job))
                .field("digest")
                .actual(why)
        };
        match outcome {
            refetch::Outcome::Same => {
                counts.refetched_bytes += 1;
                // A lastmod that alone differed is a touch: the bytes are the mirror's.
                if states.marks(slot) & mark::DIFFERS != 0 {
                    states.clear(slot, mark::DIFFERS);
                    c.findings.remove(&uri_of(&job));
                }
                states.set(slot, mark::SAME);
            }
            refetch::Outcome::Differs(source_sha256) => {
                counts.refetched_differs += 1;
                states.set(slot, mark::DIFFERS);
                let f = Finding::new(Class::Changed)
                    .uri(uri_of(&job))
                    .field("sha-256")
                    .expected(source_sha256)
                    .actual(job.mirror_sha256.clone())
                    .hint("the source serves other bytes under the same metadata: run rsmirror baseline SOURCE to fetch them (the mirror's version stays)");
                c.findings.entry(uri_of(&job)).or_default().push(f);
            }
            refetch::Outcome::NotModified => {
                counts.claimed_unchanged += 1;
                states.set(slot, mark::CLAIMED);
            }
            refetch::Outcome::Failed(why) => {
                counts.unverified += 1;
                let f = unverifiable(format!("refetch failed: {why}"));
                c.findings.entry(uri_of(&job)).or_default().push(f);
            }
        }
    })
}

/// Several sources in one mirror: the resources of collections this audit did not compare
/// are marked, so that none is called extra (`-`) for being absent from another source's list.
/// Only a mirror whose sync points name other collections pays for the scan.
fn mark_other_collections(
    catalog: &Catalog,
    states: &MirrorStates,
    compared: &[String],
) -> Result<(), StoreError> {
    let others: Vec<String> = catalog
        .sync_points()?
        .into_iter()
        .map(|p| p.collection)
        .filter(|c| !compared.contains(c))
        .collect();
    for c in &others {
        audit_records::each_uri_of_collection(catalog, c, |uri| {
            states.set_by_uri(uri, mark::ELSEWHERE)
        })?;
    }
    Ok(())
}

/// Resources whose states one pass holds: about 80 bytes each, so that a pass stays near
/// 100 MB. `RSMIRROR_AUDIT_PASS_RESOURCES` sets another number (fewer: less memory and more
/// passes, each reading the catalog and the spilled list once more).
const PASS_RESOURCES: u64 = 1_250_000;

/// How many passes the audit takes, and how many resources the catalog has (with or without a
/// current version).
pub(super) fn passes(catalog: &Catalog, sample: Option<(u64, u64)>) -> Result<(u64, usize), Error> {
    let per = match std::env::var("RSMIRROR_AUDIT_PASS_RESOURCES") {
        Err(_) => PASS_RESOURCES,
        Ok(v) => v.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
            UsageError(format!(
                "RSMIRROR_AUDIT_PASS_RESOURCES={v}: not a number of resources (1 or more)"
            ))
        })?,
    };
    let total = audit_records::resource_count(catalog)?;
    let in_sample = total.div_ceil(sample.map_or(1, |(_, m)| m));
    Ok((in_sample.div_ceil(per).max(1), total as usize))
}

/// The slice of keys pass `p` of `passes` covers, within `sample`: slice `n + m·(p − 1)` of
/// `m·passes`, since a key in slice k of m·P is in slice k mod m of m (`slice_of` takes the
/// same number modulo both). The passes cover the sample once.
fn pass_slice(sample: Option<(u64, u64)>, p: u64, passes: u64) -> Option<(u64, u64)> {
    if passes == 1 {
        return sample;
    }
    let (n, m) = sample.unwrap_or((1, 1));
    Some((n + m * (p - 1), m * passes))
}

/// The cores to use (a few at most).
fn cores() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
}

/// Seconds since `t`.
pub(super) fn since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::compare::tests::{held, mirror, tombstone, MD5_A};
    use crate::audit::mirror_states::uri_key;
    use crate::audit::report::tests::{Written, EVERY};
    use crate::audit::report::{report, Checked};
    use crate::audit::source::tests::{resource_list, settings_for};

    #[test]
    fn the_passes_cover_the_sample_once() {
        let keys: Vec<Key> = (0..3000)
            .map(|i| uri_key(&format!("http://x/{i}")))
            .collect();
        for sample in [None, Some((1, 1)), Some((2, 3)), Some((5, 5))] {
            for passes in 1..=4 {
                let slices: Vec<_> = (1..=passes)
                    .map(|p| pass_slice(sample, p, passes))
                    .collect();
                for k in &keys {
                    let hits = slices.iter().filter(|&&s| in_sample(k, s)).count();
                    let want = usize::from(in_sample(k, sample));
                    assert_eq!(hits, want, "{sample:?} in {passes}");
                }
            }
        }
        assert_eq!(pass_slice(Some((2, 3)), 1, 1), Some((2, 3)));
        assert_eq!(pass_slice(None, 1, 1), None);
        assert_eq!(pass_slice(Some((2, 3)), 2, 4), Some((5, 12)));
        assert_eq!(pass_slice(None, 3, 4), Some((3, 4)));
    }

    /// A mirror of 50 resources and a source that lists them with every kind of difference.
    fn a_mirror_and_its_source() -> (tempfile::TempDir, Catalog, String) {
        let mut states = Vec::new();
        let mut urls = Vec::new();
        let uris: Vec<String> = (0..50).map(|i| format!("http://x/r{i:02}")).collect();
        for (i, uri) in uris.iter().enumerate() {
            let same = format!("<loc>{uri}</loc><rs:md hash=\"md5:{MD5_A}\" length=\"5\"/>");
            match i % 5 {
                // Only listed: `+`.
                0 => urls.push(same),
                // Another length: `*`.
                1 => {
                    states.push((uri.as_str(), held(Some(5), Some(MD5_A), None)));
                    urls.push(format!("<loc>{uri}</loc><rs:md length=\"6\"/>"));
                }
                // In sync: `=`.
                2 => {
                    states.push((uri.as_str(), held(Some(5), Some(MD5_A), None)));
                    urls.push(same);
                }
                // Deleted here: `+`.
                3 => {
                    states.push((uri.as_str(), tombstone()));
                    urls.push(same);
                }
                // Not listed: `-`.
                _ => states.push((uri.as_str(), held(Some(5), Some(MD5_A), None))),
            }
        }
        // Listed again, the later entry in sync.
        urls.push(format!(
            "<loc>{}</loc><rs:md hash=\"md5:{MD5_A}\" length=\"5\"/>",
            uris[1]
        ));
        let (dir, catalog) = mirror(&states);
        let list = resource_list(dir.path(), &urls);
        (dir, catalog, list)
    }

    /// What the audit reports of the comparison in `passes` passes (1: streamed), and the
    /// totals it gives.
    fn reported(
        s: &settings::Audit,
        catalog: &Catalog,
        source: &str,
        passes: u64,
    ) -> (Vec<String>, String) {
        let formats = crate::formats::all();
        let comparing = Comparing {
            s,
            formats: &formats,
            catalog,
            source: Some(source),
            also: &[],
            fixity_options: fixity::Options {
                level: s.level,
                all_versions: false,
                sample: s.sample,
                jobs: 1,
                quiet: true,
            },
            from_states: false,
            passes,
            resources: audit_records::resource_count(catalog).unwrap() as usize,
        };
        let side = match passes {
            1 => comparing.in_one_pass(),
            _ => comparing.in_passes(),
        }
        .unwrap();
        assert!(side.fixity.is_none());
        let checked = Checked {
            catalog_findings: vec![],
            marks: side.marks,
            compared: side.compared,
            own: side.own,
            fixity: Fixity::default(),
        };
        let written = Written::default();
        let mut totals = Totals::default();
        let filters = &s.source_filters;
        report(
            (catalog, filters),
            None,
            checked,
            &mut [written.sink(EVERY)],
            &mut totals,
        )
        .unwrap();
        let summary = format!(
            "{} resources, {} listed, {}; {}",
            totals.resources,
            totals.listed,
            totals.counts.line(),
            totals.warnings.join("; ")
        );
        (written.lines(), summary)
    }

    #[test]
    fn several_passes_find_what_one_pass_finds() {
        let (dir, catalog, list) = a_mirror_and_its_source();
        let s = settings_for(dir.path(), &list);
        let (lines, summary) = reported(&s, &catalog, &list, 1);
        assert_eq!(lines.len(), 50);
        assert_eq!(
            lines[..6],
            [
                "+ http://x/r00  missing",
                "= http://x/r01",
                "= http://x/r02",
                "+ http://x/r03  missing: deleted in the mirror",
                "- http://x/r04  extra",
                "+ http://x/r05  missing",
            ]
        );
        assert_eq!(
            lines[6],
            "* http://x/r06  changed length: expected 6, actual 5"
        );
        let url = crate::engine::discover::source_url(&list).unwrap();
        assert_eq!(
            summary,
            format!(
                "30 resources, 41 listed, 11 in-sync, 20 missing, 9 changed, 10 extra; \
                 {url}: line 44: http://x/r01 listed again; the later entry counts; \
                 {url}: a local document; resources accepted from x (its first entry), --allow-host widens"
            )
        );
        for passes in [2, 3, 7] {
            assert_eq!(
                reported(&s, &catalog, &list, passes),
                (lines.clone(), summary.clone()),
                "{passes} passes"
            );
        }
        // Within a sample, alike.
        let s = settings::Audit {
            sample: Some((2, 3)),
            ..s
        };
        let sampled = reported(&s, &catalog, &list, 1);
        let in_slice = |l: &&String| {
            let uri = l.split(' ').nth(1).unwrap();
            in_sample(&uri_key(uri), Some((2, 3)))
        };
        let want: Vec<String> = lines.iter().filter(in_slice).cloned().collect();
        assert_eq!(sampled.0, want);
        assert!(!want.is_empty() && want.len() < lines.len());
        for passes in [2, 5] {
            assert_eq!(
                reported(&s, &catalog, &list, passes),
                sampled,
                "{passes} passes"
            );
        }
    }
}
