//! The report: every finding, in order, to every sink and (with a run) to the catalog. The
//! resources' findings come in URI order (the verdict their marks give, then the source's
//! findings, then local fixity's), then the other local ones, the formats' own, the parts of
//! the source that could not be read and the catalog's.

use crate::audit::compare::Compared;
use crate::audit::finding::{Class, Counts, Finding, Sink, Totals};
use crate::audit::fixity::Fixity;
use crate::audit::marks::Marks;
use crate::audit::mirror_states::mark;
use crate::engine::format::OwnAudit;
use crate::store::audit_records::{self, FindingLog};
use crate::store::{Catalog, StoreError};
use std::collections::BTreeMap;
use std::iter::Peekable;

/// What the checks found, for the report.
pub(super) struct Checked {
    pub(super) catalog_findings: Vec<Finding>,
    pub(super) marks: Marks,
    pub(super) compared: Compared,
    /// What the formats that compare by a rule of their own found.
    pub(super) own: Option<OwnAudit>,
    pub(super) fixity: Fixity,
}

/// Report every finding, in order, to every sink and (with a run) to the catalog: the
/// resources' findings in URI order, then the other local ones, the formats' own, the parts of
/// the source that could not be read and the catalog's. Returns the comparison (a failed one
/// says why) and how many parts of the source could not be read.
pub(super) fn report(
    (catalog, filters): (&Catalog, &[(String, crate::model::Filter)]),
    run_id: Option<i64>,
    checked: Checked,
    sinks: &mut [Sink],
    totals: &mut Totals,
) -> Result<(Compared, usize), StoreError> {
    let Checked {
        catalog_findings,
        marks,
        mut compared,
        own,
        fixity,
    } = checked;
    // Findings are recorded with the run; a read-only mirror records none.
    let log = match run_id {
        Some(run_id) => Some(FindingLog::begin(catalog, run_id)?),
        None => None,
    };
    let mut emitter = Emitter {
        sinks,
        counts: Counts::default(),
        by_resource: Counts::default(),
        last: None,
        log: log.as_ref(),
    };
    let mut source_findings = BTreeMap::new();
    let mut failed_parts = Vec::new();
    let mut complete = false;
    if let Compared::Source(c) = &mut compared {
        totals.verification = std::mem::take(&mut c.verifying.counts);
        totals.listed = c.listed;
        totals.warnings.append(&mut c.warnings);
        std::mem::swap(&mut source_findings, &mut c.findings);
        std::mem::swap(&mut failed_parts, &mut c.failed_parts);
        complete = failed_parts.is_empty();
    }
    let mode = match &compared {
        Compared::Offline => Mode::Offline,
        Compared::Source(_) => Mode::Source { complete },
        Compared::Failed(_) => Mode::Failed,
    };
    let Fixity { by_uri, other, .. } = fixity;
    totals.resources = report_by_uri(
        (catalog, filters),
        &marks,
        mode,
        source_findings,
        by_uri,
        &mut emitter,
    )?;
    for f in other {
        emitter.emit(f)?;
    }
    if let Some(own) = own {
        // What a format compared by its own rule (SCP pages and collections).
        totals.listed += own.listed;
        totals.warnings.extend(own.warnings);
        for f in own.findings {
            emitter.emit(f)?;
        }
        failed_parts.extend(own.failed_parts);
        if let Some(e) = own.source_error {
            compared = Compared::Failed(e);
        }
    }
    for (url, why) in failed_parts.iter() {
        emitter.emit(
            Finding::new(Class::Source)
                .uri(url.clone())
                .actual(why.clone()),
        )?;
    }
    for f in catalog_findings {
        emitter.emit(f)?;
    }
    totals.counts = std::mem::take(&mut emitter.counts);
    totals.by_resource = std::mem::take(&mut emitter.by_resource);
    drop(emitter);
    if let Some(log) = log {
        log.commit()?;
    }
    Ok((compared, failed_parts.len()))
}

#[derive(Clone, Copy)]
enum Mode {
    Offline,
    Source { complete: bool },
    Failed,
}

/// Report every finding about a resource, in URI order: the catalog's resources merged with
/// the URIs only the source or local fixity has findings for. Returns the number of resources
/// in the mirror (not deleted) within the sample.
fn report_by_uri(
    (catalog, filters): (&Catalog, &[(String, crate::model::Filter)]),
    marks: &Marks,
    mode: Mode,
    source: BTreeMap<String, Vec<Finding>>,
    local: Vec<Finding>,
    emitter: &mut Emitter<'_, '_>,
) -> Result<u64, StoreError> {
    let (mut source, mut local) = (source, local);
    if let Some(resources) = report_without_uris(marks, mode, &mut source, &mut local, emitter)? {
        return Ok(resources);
    }
    let mut resources = 0u64;
    let mut source = source.into_iter().peekable();
    let mut local = local.into_iter().peekable();
    // The URIs in order, as `str` compares them. Resources without a current version, and
    // those outside the sample, have no marks: they get only what the source or fixity says of
    // them (nothing, outside the sample: both sides are sampled alike).
    audit_records::with_uris_in_order(catalog, |uris| {
        let mut rank = 0usize;
        loop {
            let next = uris.next_uri()?;
            // Everything sorting before this resource that only the source or fixity knows.
            loop {
                let first = [
                    source.peek().map(|(u, _)| u.as_str()),
                    local.peek().and_then(|f| f.uri.as_deref()),
                ]
                .into_iter()
                .flatten()
                .min()
                .map(str::to_string);
                match (first, next) {
                    (Some(u), Some(n)) if u.as_str() < n => {
                        report_uri(&u, None, mode, &mut source, &mut local, emitter)?
                    }
                    (Some(u), None) => {
                        report_uri(&u, None, mode, &mut source, &mut local, emitter)?
                    }
                    _ => break,
                }
            }
            let Some(uri) = next else { break };
            let slot = match mode {
                // What the filter leaves out is not judged against the source (its bytes are,
                // by local fixity): seen, and nothing more.
                Mode::Source { .. } if filters.iter().any(|(_, f)| !f.admits(uri)) => marks
                    .of(rank, uri)
                    .map(|(_, deleted)| (mark::SEEN, deleted)),
                _ => marks.of(rank, uri),
            };
            rank += 1;
            if slot.is_some_and(|(_, deleted)| !deleted) {
                resources += 1;
            }
            report_uri(uri, slot, mode, &mut source, &mut local, emitter)?;
        }
        Ok::<_, StoreError>(())
    })?;
    Ok(resources)
}

/// The verdict a resource's marks give, if any: its class and, for `?`, why (of the field
/// `digest`).
fn verdict(marks: u8, deleted: bool, mode: Mode) -> Option<(Class, Option<&'static str>)> {
    let local_bad = marks & mark::LOCAL_BAD != 0;
    match mode {
        _ if deleted => None,
        Mode::Offline => (!local_bad).then_some((Class::Verified, None)),
        Mode::Failed => None,
        Mode::Source { complete } => {
            if marks & mark::SAME != 0 {
                (!local_bad).then_some((Class::InSync, None))
            } else if marks & mark::CLAIMED == mark::CLAIMED {
                Some((
                    Class::Unverifiable,
                    Some("the server answered 304 to the stored validators: claimed unchanged, not compared (--refetch=bytes compares)"),
                ))
            } else if marks & mark::UNVERIFIABLE != 0 {
                Some((
                    Class::Unverifiable,
                    Some("none on both sides to compare (lastmod or length agree)"),
                ))
            } else if marks & mark::NO_EVIDENCE != 0 {
                Some((
                    Class::Unverifiable,
                    Some("nothing on both sides to compare (no digest, length or lastmod)"),
                ))
            } else if marks & (mark::SEEN | mark::ELSEWHERE) == 0 && complete {
                Some((Class::Extra, None))
            } else {
                None
            }
        }
    }
}

/// [`report_by_uri`] without reading the catalog's URIs, when they are not needed: no sink
/// writes `=` findings, and the marks give every resource `=` or nothing (an audit that finds
/// the mirror in sync). The `=` verdicts are then only counted, and what is written is the
/// source's and local fixity's findings merged in URI order, exactly as the full merge would
/// write them. `None` (nothing done) when the URIs are needed.
fn report_without_uris(
    marks: &Marks,
    mode: Mode,
    source: &mut BTreeMap<String, Vec<Finding>>,
    local: &mut Vec<Finding>,
    emitter: &mut Emitter<'_, '_>,
) -> Result<Option<u64>, StoreError> {
    let verdicts = || marks.each().map(|(m, deleted)| verdict(m, deleted, mode));
    // A resource local fixity found wrong is not `=`: which one it is takes its URI.
    if emitter.writes_ok()
        || marks.collisions() > 0
        || !local.is_empty()
        || verdicts().any(|v| v.is_some_and(|(class, _)| !class.is_ok()))
    {
        return Ok(None);
    }
    let resources = marks.each().filter(|&(_, deleted)| !deleted).count() as u64;
    for (class, _) in verdicts().flatten() {
        emitter.count_unwritten(class);
    }
    let mut source = std::mem::take(source).into_iter().peekable();
    let mut local = std::mem::take(local).into_iter().peekable();
    loop {
        let first = [
            source.peek().map(|(u, _)| u.as_str()),
            local.peek().and_then(|f| f.uri.as_deref()),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(str::to_string);
        match first {
            Some(u) => report_uri(&u, None, mode, &mut source, &mut local, emitter)?,
            None => break,
        }
    }
    Ok(Some(resources))
}

/// Every finding about one URI: the verdict its marks give, then the source's findings, then
/// local fixity's.
fn report_uri<S, L>(
    uri: &str,
    slot: Option<(u8, bool)>,
    mode: Mode,
    source: &mut Peekable<S>,
    local: &mut Peekable<L>,
    emitter: &mut Emitter<'_, '_>,
) -> Result<(), StoreError>
where
    S: Iterator<Item = (String, Vec<Finding>)>,
    L: Iterator<Item = Finding>,
{
    if let Some((marks, deleted)) = slot {
        let marks = match local.peek().is_some_and(|f| f.uri.as_deref() == Some(uri)) {
            true => marks | mark::LOCAL_BAD,
            false => marks,
        };
        if let Some((class, why)) = verdict(marks, deleted, mode) {
            let f = Finding::new(class);
            let f = match why {
                Some(why) => f.field("digest").actual(why),
                None => f,
            };
            emitter.emit_about(f, uri)?;
        }
    }
    if source.peek().is_some_and(|(u, _)| u == uri) {
        let (_, findings) = source.next().expect("peeked");
        for f in findings {
            emitter.emit(f)?;
        }
    }
    while local.peek().is_some_and(|f| f.uri.as_deref() == Some(uri)) {
        emitter.emit(local.next().expect("peeked"))?;
    }
    Ok(())
}

/// Hands each finding to every sink, counts it, and records it in the catalog (`=` findings
/// are counted, not recorded: a nightly audit of a million resources would add a million rows).
struct Emitter<'a, 'c> {
    sinks: &'a mut [Sink],
    counts: Counts,
    /// Resources per class, each counted once however many of its fields differ (the summary
    /// line's figures), and the last (URI, class) counted: a resource's findings come together.
    by_resource: Counts,
    last: Option<(String, Class)>,
    /// Where findings are recorded, with the run they belong to (none: not recorded).
    log: Option<&'a FindingLog<'c>>,
}

impl Emitter<'_, '_> {
    /// [`Self::emit`] of `f` about `uri`; an `=` finding no sink writes is only counted (a
    /// million of them need no million strings).
    fn emit_about(&mut self, f: Finding, uri: &str) -> Result<(), StoreError> {
        if f.class.is_ok() && !self.writes_ok() {
            self.count_unwritten(f.class);
            return Ok(());
        }
        self.emit(f.uri(uri))
    }

    /// Does some sink write `=` findings?
    fn writes_ok(&self) -> bool {
        self.sinks.iter().any(|s| s.wants(Class::InSync))
    }

    /// An `=` finding no sink writes ([`Self::writes_ok`]): counted, and never recorded.
    fn count_unwritten(&mut self, class: Class) {
        debug_assert!(class.is_ok() && !self.writes_ok());
        self.counts.add(class);
        self.by_resource.add(class);
        self.last = None;
        for sink in self.sinks.iter_mut() {
            sink.skipped();
        }
    }

    fn emit(&mut self, f: Finding) -> Result<(), StoreError> {
        self.counts.add(f.class);
        match &f.uri {
            Some(uri) => {
                let again = self
                    .last
                    .as_ref()
                    .is_some_and(|(u, c)| u == uri && *c == f.class);
                if !again {
                    self.by_resource.add(f.class);
                    self.last = Some((uri.clone(), f.class));
                }
            }
            None => self.by_resource.add(f.class),
        }
        for sink in self.sinks.iter_mut() {
            sink.finding(&f);
        }
        if let Some(log) = self.log.filter(|_| !f.class.is_ok()) {
            log.record(&f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::audit::compare::tests::{
        compare, declared, held, listed, mirror, the_source, tombstone, MD5_A, MD5_B, T1, T2,
    };
    use crate::audit::compare::SourceComparison;
    use crate::audit::finding::Form;
    use crate::audit::mirror_states::MirrorStates;
    use crate::audit::spill::Entry;
    use std::io::{self, Write};
    use std::sync::{Arc, Mutex};

    /// What a sink wrote, read back by the test.
    #[derive(Clone, Default)]
    pub(in crate::audit) struct Written(Arc<Mutex<Vec<u8>>>);

    impl Write for Written {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Written {
        pub(in crate::audit) fn sink(&self, form: Form) -> Sink {
            Sink::new(Box::new(self.clone()), form)
        }

        /// The lines written, each without its hint (`  (...)` at the end).
        pub(in crate::audit) fn lines(&self) -> Vec<String> {
            let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
            text.lines()
                .map(|l| match l.rfind("  (") {
                    Some(i) if l.ends_with(')') => l[..i].to_string(),
                    _ => l.to_string(),
                })
                .collect()
        }
    }

    pub(in crate::audit) const EVERY: Form = Form::Lines {
        verbose: true,
        require_fixity: false,
    };
    const DIFFERENCES: Form = Form::Lines {
        verbose: false,
        require_fixity: false,
    };

    /// What the report of the resources writes to a sink of `form`: its lines, the resources
    /// counted, and the findings counted (each, and by resource).
    fn by_uri(
        (catalog, filters): (&Catalog, &[(String, crate::model::Filter)]),
        marks: &Marks,
        mode: Mode,
        source: BTreeMap<String, Vec<Finding>>,
        local: Vec<Finding>,
        form: Form,
    ) -> (Vec<String>, u64, String, String) {
        let written = Written::default();
        let mut sinks = [written.sink(form)];
        let mut emitter = Emitter {
            sinks: &mut sinks,
            counts: Counts::default(),
            by_resource: Counts::default(),
            last: None,
            log: None,
        };
        let resources =
            report_by_uri((catalog, filters), marks, mode, source, local, &mut emitter).unwrap();
        let counts = (emitter.counts.line(), emitter.by_resource.line());
        (written.lines(), resources, counts.0, counts.1)
    }

    /// A local fixity finding about `uri`'s object.
    fn corrupt(uri: &str) -> Finding {
        Finding::new(Class::Corrupt)
            .uri(uri)
            .field("sha-256")
            .expected("aa")
            .actual("bb")
    }

    #[test]
    fn the_marks_give_each_resource_its_verdict() {
        use mark::*;
        let complete = Mode::Source { complete: true };
        let partial = Mode::Source { complete: false };
        let none = "none on both sides to compare (lastmod or length agree)";
        let nothing = "nothing on both sides to compare (no digest, length or lastmod)";
        let claimed = "the server answered 304 to the stored validators: claimed unchanged, not compared (--refetch=bytes compares)";
        let cases = [
            (SEEN | SAME, false, complete, Some((Class::InSync, None))),
            (SEEN | SAME | LOCAL_BAD, false, complete, None),
            (SEEN | SAME, true, complete, None),
            (SEEN | DIFFERS, false, complete, None),
            (
                SEEN | UNVERIFIABLE,
                false,
                complete,
                Some((Class::Unverifiable, Some(none))),
            ),
            (
                SEEN | NO_EVIDENCE,
                false,
                complete,
                Some((Class::Unverifiable, Some(nothing))),
            ),
            (
                SEEN | CLAIMED,
                false,
                complete,
                Some((Class::Unverifiable, Some(claimed))),
            ),
            (SEEN, false, complete, None),
            (0, false, complete, Some((Class::Extra, None))),
            // Only a list read whole can call a resource extra.
            (0, false, partial, None),
            (ELSEWHERE, false, complete, None),
            (0, true, complete, None),
            (0, false, Mode::Offline, Some((Class::Verified, None))),
            (LOCAL_BAD, false, Mode::Offline, None),
            (0, true, Mode::Offline, None),
            (SEEN | SAME, false, Mode::Failed, None),
            (0, false, Mode::Failed, None),
        ];
        for (i, (marks, deleted, mode, want)) in cases.into_iter().enumerate() {
            assert_eq!(verdict(marks, deleted, mode), want, "case {i}");
        }
    }

    #[test]
    fn every_finding_about_a_resource_comes_together_in_uri_order() {
        let (states, entries) = the_source();
        let (_dir, catalog) = mirror(&states);
        let states = MirrorStates::load(&catalog, vec![], None).unwrap();
        let c = compare(&states, None, entries);
        let local = vec![corrupt("http://x/b-digest"), corrupt("http://x/e-touched")];
        let (lines, resources, counts, by_resource) = by_uri(
            (&catalog, &[]),
            &Marks::States(states),
            Mode::Source { complete: true },
            c.findings,
            local,
            EVERY,
        );
        assert_eq!(
            lines,
            [
                "= http://x/a-same".to_string(),
                format!("* http://x/b-digest  changed md5: expected {MD5_B}, actual {MD5_A}"),
                "* http://x/b-digest  changed length: expected 6, actual 5".into(),
                "! http://x/b-digest  corrupt sha-256: expected aa, actual bb".into(),
                "* http://x/c-length  changed length: expected 6, actual 5".into(),
                format!("* http://x/d-lastmod  changed lastmod: expected {T2}, actual {T1}"),
                // In sync by its digest, but its object is not what was stored: no `=`.
                "! http://x/e-touched  corrupt sha-256: expected aa, actual bb".into(),
                "? http://x/f-length-agrees  unverifiable digest: none on both sides to compare (lastmod or length agree)".into(),
                "? http://x/g-nothing  unverifiable digest: nothing on both sides to compare (no digest, length or lastmod)".into(),
                "+ http://x/h-deleted  missing: deleted in the mirror".into(),
                "- http://x/i-extra  extra".into(),
                "+ http://x/new  missing".into(),
                "! http://y/out  refused: outside the scope".into(),
            ]
        );
        // Not deleted, within the sample: every state but the two tombstones.
        assert_eq!(resources, 9);
        assert_eq!(
            counts,
            "1 in-sync, 2 missing, 4 changed, 1 extra, 2 unverifiable, 1 refused, 2 corrupt"
        );
        // A resource with two fields changed is one changed resource.
        assert_eq!(
            by_resource,
            "1 in-sync, 2 missing, 3 changed, 1 extra, 2 unverifiable, 1 refused, 2 corrupt"
        );
    }

    #[test]
    fn how_the_source_was_read_decides_what_is_said_of_the_others() {
        let (states, _) = the_source();
        let (_dir, catalog) = mirror(&states);
        let each = |mode: Mode| {
            let states = MirrorStates::load(&catalog, vec![], None).unwrap();
            let found = match mode {
                Mode::Source { .. } => compare(&states, None, the_source().1).findings,
                _ => BTreeMap::new(),
            };
            let local = vec![corrupt("http://x/b-digest")];
            by_uri(
                (&catalog, &[]),
                &Marks::States(states),
                mode,
                found,
                local,
                EVERY,
            )
            .0
        };
        // Part of the list could not be read: nothing is called extra.
        let partial = each(Mode::Source { complete: false });
        assert!(!partial.iter().any(|l| l.starts_with('-')), "{partial:?}");
        assert_eq!(partial.len(), 12);
        // Not read at all: only what the mirror says of itself.
        assert_eq!(
            each(Mode::Failed),
            ["! http://x/b-digest  corrupt sha-256: expected aa, actual bb"]
        );
        // Offline: every resource whose bytes are what was stored, but the deleted ones.
        assert_eq!(
            each(Mode::Offline),
            [
                "= http://x/a-same",
                "! http://x/b-digest  corrupt sha-256: expected aa, actual bb",
                "= http://x/c-length",
                "= http://x/d-lastmod",
                "= http://x/e-touched",
                "= http://x/f-length-agrees",
                "= http://x/g-nothing",
                "= http://x/i-extra",
                "= http://x/j-skipped",
            ]
        );
    }

    #[test]
    fn what_the_filter_leaves_out_is_not_called_extra() {
        let (states, entries) = the_source();
        let (_dir, catalog) = mirror(&states);
        let states = MirrorStates::load(&catalog, vec![], None).unwrap();
        let c = compare(&states, None, entries);
        let rules = crate::model::filter::Rules {
            include: vec![],
            exclude: vec!["i-*".into(), "a-*".into()],
            category: vec![],
        };
        let filters = [("src".to_string(), crate::model::Filter::new(rules).unwrap())];
        let (lines, resources, ..) = by_uri(
            (&catalog, &filters),
            &Marks::States(states),
            Mode::Source { complete: true },
            c.findings,
            vec![],
            EVERY,
        );
        // Neither `-` for the one not listed, nor `=` for the one listed: seen, nothing more.
        assert!(
            !lines.iter().any(|l| l.contains("/i-") || l.contains("/a-")),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 10);
        assert_eq!(resources, 9);
    }

    #[test]
    fn a_mirror_in_sync_is_reported_alike_with_or_without_its_uris() {
        let uris: Vec<String> = (0..30).map(|i| format!("http://x/{i:02}")).collect();
        let mut states: Vec<(&str, _)> = uris
            .iter()
            .map(|u| (u.as_str(), held(Some(5), Some(MD5_A), None)))
            .collect();
        states.push(("http://x/15-gone", tombstone()));
        let (_dir, catalog) = mirror(&states);
        let report = |form: Form| {
            let states = MirrorStates::load(&catalog, vec![], None).unwrap();
            let mut list = vec![Entry::Collection("c".into())];
            for (i, u) in uris.iter().enumerate() {
                let d = declared(Some(5), Some(MD5_A), None);
                list.push(listed(u, i as u64, d));
            }
            let d = declared(None, None, None);
            list.push(listed("http://x/15a", 99, d));
            let c = compare(&states, None, list);
            by_uri(
                (&catalog, &[]),
                &Marks::States(states),
                Mode::Source { complete: true },
                c.findings,
                vec![],
                form,
            )
        };
        // No sink writes `=`: the catalog's URIs are not read, the `=` only counted.
        let (differences, resources, counts, by_resource) = report(DIFFERENCES);
        assert_eq!(differences, ["+ http://x/15a  missing"]);
        assert_eq!((resources, counts.as_str()), (30, "30 in-sync, 1 missing"));
        assert_eq!(by_resource, counts);
        // Every line: the same findings, the `=` ones written in their places.
        let (every, resources_too, counts_too, _) = report(EVERY);
        assert_eq!((resources_too, counts_too), (resources, counts));
        assert_eq!(every.len(), 31);
        assert_eq!(every[15], "= http://x/15");
        assert_eq!(every[16], "+ http://x/15a  missing");
        assert_eq!(every[17], "= http://x/16");
        let without_ok: Vec<&String> = every.iter().filter(|l| !l.starts_with('=')).collect();
        assert_eq!(without_ok, differences.iter().collect::<Vec<_>>());
    }

    #[test]
    fn the_report_gives_the_resources_then_local_own_source_and_catalog_findings() {
        let (_dir, catalog) = mirror(&[
            ("http://x/a", held(Some(5), Some(MD5_A), None)),
            ("http://x/b", held(Some(5), None, None)),
        ]);
        let states = MirrorStates::load(&catalog, vec![], None).unwrap();
        let mut c: SourceComparison = compare(
            &states,
            None,
            vec![
                Entry::Collection("c".into()),
                listed("http://x/a", 2, declared(Some(5), Some(MD5_A), None)),
            ],
        );
        c.failed_parts = vec![("http://x/rl2.xml".into(), "404 Not Found".into())];
        c.warnings = vec!["a warning".into()];
        let own = OwnAudit {
            findings: vec![Finding::new(Class::Missing).uri("http://x/page")],
            failed_parts: vec![("http://x/page2".into(), "timed out".into())],
            warnings: vec!["its warning".into()],
            source_error: None,
            listed: 3,
            pages: 1,
        };
        let checked = Checked {
            catalog_findings: vec![Finding::new(Class::Catalog)
                .field("quick_check")
                .expected("ok")
                .actual("row 1 missing")],
            marks: Marks::States(states),
            compared: Compared::Source(c),
            own: Some(own),
            fixity: Fixity {
                by_uri: vec![corrupt("http://x/b")],
                other: vec![Finding::new(Class::StrayObject).object("objects/sha256/ab/x")],
                ..Default::default()
            },
        };
        let written = Written::default();
        let mut sinks = [written.sink(EVERY)];
        let mut totals = Totals::default();
        let (compared, failed) =
            report((&catalog, &[]), None, checked, &mut sinks, &mut totals).unwrap();
        assert_eq!(
            written.lines(),
            [
                "= http://x/a",
                // Part of the list unread: `b` is not called extra.
                "! http://x/b  corrupt sha-256: expected aa, actual bb",
                "! objects/sha256/ab/x  stray-object",
                "+ http://x/page  missing",
                "! http://x/rl2.xml  source: 404 Not Found",
                "! http://x/page2  source: timed out",
                "! catalog.sqlite  catalog quick_check: expected ok, actual row 1 missing",
            ]
        );
        assert_eq!(failed, 2);
        assert!(matches!(compared, Compared::Source(_)));
        assert_eq!((totals.resources, totals.listed), (2, 4));
        assert_eq!(totals.warnings, ["a warning", "its warning"]);
        assert_eq!(
            totals.counts.line(),
            "1 in-sync, 1 missing, 1 corrupt, 1 stray-object, 1 catalog, 2 source"
        );
    }
}
