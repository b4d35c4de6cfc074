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
