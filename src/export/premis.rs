//! PREMIS 3.0 (Library of Congress, namespace `http://www.loc.gov/premis/v3`) of the mirror:
//! what preservation systems (Archivematica, RODA, E-ARK packages) read of its history.
//!
//! A `premis:file` object per stored object (or, in an Archivematica transfer, per file of the
//! transfer): its identifiers (SHA-256, the URIs it was fetched as), its fixity (every digest
//! rsmirror computed and every one the source declared, each with who computed it), size,
//! format (the recorded media type) and `originalName`. The events come from the catalog:
//! `capture` and `ingestion` of every version, `deletion` (a tombstone, linked to the object
//! it deleted), one `fixity check` per object per audit that hashed it (`fail` where that audit
//! found it corrupt, missing or unreadable), `repair`, and, in a transfer, the `replication`
//! into it. Agents: rsmirror with its version, each run, each source. Every event links one
//! object and at least one agent; every object links its events (PREMIS 3.0 §1.5: links may go
//! both ways; Archivematica's "Load PREMIS events" imports an event only so).
//!
//! Streamed: the schema puts every object before every event, so the catalog is walked twice
//! in object order (objects, then their events); an event's identifier is a UUID (version 5)
//! named by what it records, so the object pass can link events the second pass writes. What
//! is held in memory is the runs, the damage audits recorded and the repairs: as many as the
//! runs and the damage, never as many as the objects.
//!
//! Which audits count: those that ended having hashed objects (`--level sha256` or `fixity`;
//! a presence or size check is no fixity check). The objects an earlier audit checked are
//! those current at it (every version with `--all-versions`), within its `--sample` slice.

use crate::error::{Error, UsageError};
use crate::store::provenance::{self, Damage, HeldVersion, RepairRecord, RunRecord};
use crate::store::{Catalog, StoreError};
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event as Xml};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

/// The PREMIS 3 namespace.
pub const NS: &str = "http://www.loc.gov/premis/v3";

/// Is this URI in slice (n, m) of a sample? The audit's slicing, handed down by the command.
pub type InSample = fn(&str, Option<(u64, u64)>) -> bool;

/// An audit whose local fixity checks are events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    pub run: i64,
    /// sha256 | fixity
    pub level: String,
    pub sample: Option<(u64, u64)>,
    pub all_versions: bool,
}

impl AuditRecord {
    /// The audit a run recorded, if it hashed objects (its `counts_json`: see
    /// `audit::outcome::counts_json`).
    fn of(run: &RunRecord) -> Option<AuditRecord> {
        if run.command != "audit" || run.ended_at.is_none() {
            return None;
        }
        let counts: serde_json::Value = serde_json::from_str(run.counts_json.as_deref()?).ok()?;
        let level = counts["level"].as_str()?;
        let hashed = counts["objects_checked"].as_u64().unwrap_or(0) > 0;
        if !matches!(level, "sha256" | "fixity") || !hashed {
            return None;
        }
        let sample = match counts["sample"].as_str() {
            Some(s) => {
                let (n, m) = s.split_once('/')?;
                Some((n.parse().ok()?, m.parse().ok()?))
            }
            None => None,
        };
        Some(AuditRecord {
            run: run.id,
            level: level.to_string(),
            sample,
            all_versions: counts["all_versions"].as_bool().unwrap_or(false),
        })
    }
}

/// What a report holds: the whole history, or one audit's fixity checks.
pub enum Scope {
    History,
    /// This audit's checks only (`audit --premis`): the objects it checked, one event each.
    Audit(AuditRecord),
}

/// The files of an Archivematica transfer are copies made now: a `replication` event each.
pub struct Replication {
    pub at: String,
    pub dest: String,
}

/// What a unit is handed to, once per unit.
pub type EachUnit<'f> = &'f mut dyn FnMut(&Unit) -> Result<(), Error>;

/// A walk of the units a report covers, handing each to the function given.
pub type Units<'w> = &'w dyn Fn(EachUnit<'_>) -> Result<(), Error>;

/// What one report counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub objects: u64,
    pub events: u64,
    pub agents: u64,
}

/// Who took part in an event.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Agent {
    Rsmirror,
    Run(i64),
    Source(String),
}

/// One event, as written (and as linked from its object).
struct Event {
    id: String,
    kind: &'static str,
    at: String,
    detail: String,
    outcome: &'static str,
    note: String,
    agents: Vec<(Agent, &'static str)>,
}

/// A `premis:file`: a stored object with every version that names it, or a file of a
/// transfer (its path under the transfer's root) with its version.
pub struct Unit {
    pub versions: Vec<HeldVersion>,
    pub file: Option<String>,
}

/// The report's context: the catalog and what is read of it whole (runs, audits, damage,
/// repairs).
pub struct Report<'a> {
    catalog: &'a Catalog,
    namespace: [u8; 16],
    runs: BTreeMap<i64, RunRecord>,
    audits: Vec<AuditRecord>,
    damage: BTreeMap<(String, i64), Damage>,
    repairs: BTreeMap<String, Vec<RepairRecord>>,
    only_fixity: bool,
    in_sample: InSample,
    until: i64,
    replication: Option<Replication>,
}

impl<'a> Report<'a> {
    /// The report of the mirror up to run `until`.
    pub fn new(
        catalog: &'a Catalog,
        until: i64,
        scope: Scope,
        in_sample: InSample,
        replication: Option<Replication>,
    ) -> Result<Report<'a>, StoreError> {
        let runs: BTreeMap<i64, RunRecord> = provenance::runs(catalog, until)?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
        let (audits, only_fixity) = match scope {
            Scope::History => (runs.values().filter_map(AuditRecord::of).collect(), false),
            Scope::Audit(a) => (vec![a], true),
        };
        let mut damage = BTreeMap::new();
        for d in provenance::damage(catalog, until)? {
            damage.entry((d.object.clone(), d.run)).or_insert(d);
        }
        let mut repairs: BTreeMap<String, Vec<RepairRecord>> = BTreeMap::new();
        if !only_fixity {
            for r in provenance::repairs(catalog, until)? {
                repairs.entry(r.object.clone()).or_default().push(r);
            }
        }
        let identity = provenance::mirror_identity(catalog)?;
        Ok(Report {
            catalog,
            namespace: uuid5(&[0; 16], &format!("rsmirror mirror {identity}")),
            runs,
            audits,
            damage,
            repairs,
            only_fixity,
            in_sample,
            until,
            replication,
        })
    }

    /// Every stored object up to the report's run, with the versions that name it.
    pub fn each_object(&self, f: EachUnit<'_>) -> Result<(), Error> {
        let mut unit = Unit {
            versions: Vec::new(),
            file: None,
        };
        provenance::each_held_version(self.catalog, self.until, |v| {
            if unit.versions.first().is_some_and(|u| u.sha256 != v.sha256) {
                f(&unit)?;
                unit.versions.clear();
            }
            unit.versions.push(v);
            Ok::<(), Error>(())
        })?;
        if !unit.versions.is_empty() {
            f(&unit)?;
        }
        Ok(())
    }

    /// The transfer's file `path` (under the transfer's root), holding version `version`.
    pub fn file(&self, path: &str, version: i64) -> Result<Unit, StoreError> {
        let v = provenance::held_version(self.catalog, version, self.until)?.ok_or_else(|| {
            StoreError::Damaged {
                path: "catalog.sqlite".into(),
                what: format!("version {version} of {path} names no object"),
            }
        })?;
        Ok(Unit {
            versions: vec![v],
            file: Some(path.to_string()),
        })
    }

    /// Write the report to `path` (through a temporary file beside it, renamed once whole),
    /// walking the units once with `units`. No unit with an event: nothing written, an error.
    pub fn write(&self, path: &Path, units: Units<'_>) -> Result<Counts, Error> {
        let tmp = tmp_path(path, "rsmirror-tmp");
        let events = tmp_path(path, "events.rsmirror-tmp");
        let written = self.write_to(&tmp, &events, units);
        let _ = std::fs::remove_file(&events);
        match written {
            Ok(c) if c.objects > 0 => {
                std::fs::rename(&tmp, path).map_err(|e| StoreError::io("writing", path, e))?;
                Ok(c)
            }
            Ok(_) => {
                let _ = std::fs::remove_file(&tmp);
                Err(UsageError(format!(
                    "{}: nothing to write: no object has an event to report (PREMIS needs at least one object)",
                    path.display()
                ))
                .into())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// One walk of the units: the objects into `path`, their events into `events_path` (the
    /// schema puts every object first), then the events appended, then the agents.
    fn write_to(&self, path: &Path, events_path: &Path, units: Units<'_>) -> Result<Counts, Error> {
        let io = |p: &Path, e: io::Error| -> Error { StoreError::io("writing", p, e).into() };
        let create = |p: &Path| {
            std::fs::File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(p)
                .map_err(|e| StoreError::io("creating", p, e))
        };
        // No indentation (a third of the bytes at a million objects): a line per top-level
        // element instead.
        let mut w = quick_xml::Writer::new(BufWriter::with_capacity(1 << 20, create(path)?));
        let mut e = quick_xml::Writer::new(BufWriter::with_capacity(1 << 20, create(events_path)?));
        w.write_event(Xml::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
            .map_err(|e| io(path, e))?;
        newline(&mut w).map_err(|e| io(path, e))?;
        // PREMIS as the default namespace (a fifth of the bytes less than a prefix on every
        // element); `premis:` stays bound for `xsi:type="premis:file"`.
        let root = BytesStart::new("premis").with_attributes([
            ("xmlns", NS),
            ("xmlns:premis", NS),
            ("xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance"),
            (
                "xsi:schemaLocation",
                "http://www.loc.gov/premis/v3 http://www.loc.gov/standards/premis/v3/premis.xsd",
            ),
            ("version", "3.0"),
        ]);
        w.write_event(Xml::Start(root)).map_err(|e| io(path, e))?;
        newline(&mut w).map_err(|e| io(path, e))?;
        let mut counts = Counts::default();
        let mut agents = BTreeSet::new();
        units(&mut |u| {
            let events = self.events_of(u);
            if events.is_empty() {
                return Ok(());
            }
            let ids = self.identifiers(u);
            self.object(&mut w, u, &ids, &events)
                .map_err(|e| io(path, e))?;
            counts.objects += 1;
            for ev in events {
                self.event(&mut e, &ids[0], &ev)
                    .map_err(|e| io(events_path, e))?;
                counts.events += 1;
                agents.extend(ev.agents.into_iter().map(|(a, _)| a));
            }
            Ok(())
        })?;
        let mut events_file = e
            .into_inner()
            .into_inner()
            .map_err(|e| io(events_path, e.into_error()))?;
        events_file
            .seek(io::SeekFrom::Start(0))
            .map_err(|e| io(events_path, e))?;
        let main = w.get_mut();
        main.flush().map_err(|e| io(path, e))?;
        // File to file: the kernel copies (copy_file_range), no pass through this process.
        std::io::copy(&mut events_file, main.get_mut()).map_err(|e| io(path, e))?;
        for a in &agents {
            self.agent(&mut w, a).map_err(|e| io(path, e))?;
            counts.agents += 1;
        }
        w.write_event(Xml::End(BytesEnd::new("premis")))
            .map_err(|e| io(path, e))?;
        let mut out = w.into_inner();
        out.write_all(b"\n")
            .and_then(|()| out.flush())
            .map_err(|e| io(path, e))?;
        Ok(counts)
    }

    /// A v5 UUID in the mirror's namespace.
    fn uuid(&self, name: &str) -> String {
        uuid_text(&uuid5(&self.namespace, name))
    }

    /// The unit's identifiers, the first one the one events link.
    fn identifiers(&self, u: &Unit) -> Vec<(&'static str, String)> {
        let first = &u.versions[0];
        let mut ids = Vec::new();
        if let Some(path) = &u.file {
            ids.push(("UUID", self.uuid(&format!("file {path}"))));
        }
        ids.push(("SHA-256", first.sha256.clone()));
        let mut seen = BTreeSet::new();
        for v in &u.versions {
            if seen.insert(v.uri.as_str()) {
                ids.push(("URI", v.uri.clone()));
            }
        }
        ids
    }

    /// What names an event of this unit apart from the same event of another.
    fn key(u: &Unit) -> String {
        match &u.file {
            Some(_) => format!("v{}", u.versions[0].version),
            None => u.versions[0].sha256.clone(),
        }
    }

    fn time(&self, run: i64, ended: bool) -> String {
        let r = self.runs.get(&run);
        let t = match (r, ended) {
            (Some(r), true) => r.ended_at.as_deref().unwrap_or(&r.started_at),
            (Some(r), false) => r.started_at.as_str(),
            (None, _) => "",
        };
        super::micros(t)
    }

    fn source_of(&self, run: i64) -> Option<String> {
        self.runs.get(&run).and_then(|r| r.source.clone())
    }

    /// The unit's events, in a fixed order (the object pass and the event pass agree).
    fn events_of(&self, u: &Unit) -> Vec<Event> {
        let mut out = Vec::new();
        let key = Self::key(u);
        let sha = &u.versions[0].sha256;
        if !self.only_fixity {
            for v in &u.versions {
                self.history_of(v, u.file.is_some(), &mut out);
            }
        }
        // One check per object per audit, however many current versions name the object.
        let mut checked = BTreeSet::new();
        for v in &u.versions {
            for a in &self.audits {
                let current = v.next.is_none_or(|n| n.run > a.run);
                if a.run > v.run
                    && (a.all_versions || current)
                    && (self.in_sample)(&v.uri, a.sample)
                {
                    checked.insert(a.run);
                }
            }
        }
        for a in self.audits.iter().filter(|a| checked.contains(&a.run)) {
            out.push(self.fixity_check(a, sha, &key));
        }
        for r in self.repairs.get(sha).into_iter().flatten() {
            out.push(Event {
                id: self.uuid(&format!("repair r{} {key}", r.run)),
                kind: "repair",
                at: self.time(r.run, false),
                detail: format!("rsmirror repair, run {}", r.run),
                outcome: if r.repaired { "success" } else { "fail" },
                note: r.reason.clone(),
                agents: vec![
                    (Agent::Rsmirror, "executing program"),
                    (Agent::Run(r.run), "implementer"),
                ],
            });
        }
        if let (Some(rep), Some(path)) = (&self.replication, &u.file) {
            out.push(Event {
                id: self.uuid(&format!("replication {} {key}", rep.at)),
                kind: "replication",
                at: super::micros(&rep.at),
                detail: format!(
                    "copied from the mirror into the Archivematica transfer {}",
                    rep.dest
                ),
                outcome: "success",
                note: format!(
                    "{path}: its bytes checked against the SHA-256 the catalog records as it was placed"
                ),
                agents: vec![(Agent::Rsmirror, "executing program")],
            });
        }
        out
    }

    /// Capture, ingestion and (for a stored object) deletion of one version.
    fn history_of(&self, v: &HeldVersion, in_transfer: bool, out: &mut Vec<Event>) {
        let mut agents = vec![
            (Agent::Rsmirror, "executing program"),
            (Agent::Run(v.run), "implementer"),
        ];
        if let Some(s) = self.source_of(v.run) {
            agents.push((Agent::Source(s), "source"));
        }
        if !matches!(v.arrived_via.as_str(), "held" | "record" | "tombstone") {
            let from = v.fetched_from.as_deref().unwrap_or(&v.uri);
            let mut said = Vec::new();
            for (name, value) in [
                ("Last-Modified", &v.last_modified),
                ("ETag", &v.etag),
                ("lastmod", &v.lastmod),
            ] {
                if let Some(value) = value {
                    said.push(format!("{name} {value}"));
                }
            }
            out.push(Event {
                id: self.uuid(&format!("capture v{}", v.version)),
                kind: "capture",
                at: self.time(v.run, false),
                detail: format!("fetched {from} ({}) for {}", v.arrived_via, v.uri),
                outcome: "success",
                note: match said.is_empty() {
                    true => "the source said no Last-Modified, ETag or lastmod".into(),
                    false => format!("the source said: {}", said.join(", ")),
                },
                agents: agents.clone(),
            });
        }
        out.push(Event {
            id: self.uuid(&format!("ingestion v{}", v.version)),
            kind: "ingestion",
            at: self.time(v.run, true),
            detail: format!(
                "version {} of {} stored as objects/sha256/{}/{}",
                v.version,
                v.uri,
                &v.sha256[..2],
                v.sha256
            ),
            outcome: "success",
            note: "stored only once its length and every digest were verified".into(),
            agents: agents[..2].to_vec(),
        });
        if in_transfer {
            return;
        }
        if let Some(n) = v.next.filter(|n| n.deleted) {
            let mut agents = vec![
                (Agent::Rsmirror, "executing program"),
                (Agent::Run(n.run), "implementer"),
            ];
            if let Some(s) = self.source_of(n.run) {
                agents.push((Agent::Source(s), "source"));
            }
            out.push(Event {
                id: self.uuid(&format!("deletion v{}", n.version)),
                kind: "deletion",
                at: self.time(n.run, false),
                detail: format!(
                    "{} deleted at the source (tombstone, version {})",
                    v.uri, n.version
                ),
                outcome: "success",
                note: "the resource is gone from the mirror's current state; its bytes stay in the mirror".into(),
                agents,
            });
        }
    }

    fn fixity_check(&self, a: &AuditRecord, sha: &str, key: &str) -> Event {
        let (outcome, note) = match self.damage.get(&(sha.to_string(), a.run)) {
            Some(d) => (
                "fail",
                format!(
                    "{}: {} expected {}, found {}",
                    d.class,
                    d.field.as_deref().unwrap_or("bytes"),
                    d.expected.as_deref().unwrap_or("-"),
                    d.actual.as_deref().unwrap_or("-")
                ),
            ),
            None if a.level == "fixity" => (
                "pass",
                "the bytes hash to every digest recorded (SHA-256, MD5, the source's)".into(),
            ),
            None => (
                "pass",
                "the bytes hash to the SHA-256 recorded at ingestion".into(),
            ),
        };
        let mut detail = format!("rsmirror audit, run {}, --level {}", a.run, a.level);
        if let Some((n, m)) = a.sample {
            detail.push_str(&format!(", --sample {n}/{m}"));
        }
        if a.all_versions {
            detail.push_str(", --all-versions");
        }
        Event {
            id: self.uuid(&format!("fixity r{} {key}", a.run)),
            kind: "fixity check",
            at: self.time(a.run, false),
            detail,
            outcome,
            note,
            agents: vec![
                (Agent::Rsmirror, "executing program"),
                (Agent::Run(a.run), "implementer"),
            ],
        }
    }

    fn object<W: Write>(
        &self,
        w: &mut quick_xml::Writer<W>,
        u: &Unit,
        ids: &[(&'static str, String)],
        events: &[Event],
    ) -> io::Result<()> {
        w.write_event(Xml::Start(
            BytesStart::new("object").with_attributes([("xsi:type", "premis:file")]),
        ))?;
        for (kind, value) in ids {
            open(w, "objectIdentifier")?;
            leaf(w, "objectIdentifierType", kind)?;
            leaf(w, "objectIdentifierValue", value)?;
            close(w, "objectIdentifier")?;
        }
        let first = &u.versions[0];
        open(w, "objectCharacteristics")?;
        leaf(w, "compositionLevel", "0")?;
        for (algorithm, digest, by) in self.fixity(u) {
            open(w, "fixity")?;
            leaf(w, "messageDigestAlgorithm", &algorithm)?;
            leaf(w, "messageDigest", &digest)?;
            leaf(w, "messageDigestOriginator", &by)?;
            close(w, "fixity")?;
        }
        if let Some(n) = u.versions.iter().find_map(|v| v.length) {
            leaf(w, "size", &n.to_string())?;
        }
        open(w, "format")?;
        open(w, "formatDesignation")?;
        match u.versions.iter().find_map(|v| v.media_type.as_deref()) {
            Some(t) => leaf(w, "formatName", t)?,
            None => leaf(w, "formatName", "application/octet-stream")?,
        }
        close(w, "formatDesignation")?;
        if u.versions.iter().all(|v| v.media_type.is_none()) {
            leaf(w, "formatNote", "no media type was recorded")?;
        }
        close(w, "format")?;
        close(w, "objectCharacteristics")?;
        let name = match &u.file {
            Some(path) => path.clone(),
            None => first.uri.clone(),
        };
        leaf(w, "originalName", &name)?;
        for e in events {
            open(w, "linkingEventIdentifier")?;
            leaf(w, "linkingEventIdentifierType", "UUID")?;
            leaf(w, "linkingEventIdentifierValue", &e.id)?;
            close(w, "linkingEventIdentifier")?;
        }
        close(w, "object")?;
        newline(w)
    }

    /// (algorithm, digest, who computed it): rsmirror's digests, then the source's declared
    /// ones, each once.
    fn fixity(&self, u: &Unit) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, String)> = Vec::new();
        let mut add = |algorithm: &str, digest: &str, by: String| {
            let algorithm = algorithm.to_ascii_uppercase();
            if !out
                .iter()
                .any(|(a, d, b)| *a == algorithm && d == digest && *b == by)
            {
                out.push((algorithm, digest.to_string(), by));
            }
        };
        for v in &u.versions {
            add("SHA-256", &v.sha256, "rsmirror".into());
            if let Some(m) = &v.md5 {
                add("MD5", m, "rsmirror".into());
            }
            if let Some(s) = &v.sha1 {
                add("SHA-1", s, "rsmirror".into());
            }
        }
        for v in &u.versions {
            let by = match self.source_of(v.run) {
                Some(s) => format!("the source {s}"),
                None => "the source".into(),
            };
            for d in v.declared_hash.as_deref().unwrap_or("").split_whitespace() {
                if let Some((algorithm, digest)) = d.split_once(':') {
                    add(algorithm, digest, by.clone());
                }
            }
        }
        out
    }

    fn event<W: Write>(
        &self,
        w: &mut quick_xml::Writer<W>,
        (kind, value): &(&'static str, String),
        e: &Event,
    ) -> io::Result<()> {
        open(w, "event")?;
        open(w, "eventIdentifier")?;
        leaf(w, "eventIdentifierType", "UUID")?;
        leaf(w, "eventIdentifierValue", &e.id)?;
        close(w, "eventIdentifier")?;
        leaf(w, "eventType", e.kind)?;
        leaf(w, "eventDateTime", &e.at)?;
        open(w, "eventDetailInformation")?;
        leaf(w, "eventDetail", &e.detail)?;
        close(w, "eventDetailInformation")?;
        open(w, "eventOutcomeInformation")?;
        leaf(w, "eventOutcome", e.outcome)?;
        open(w, "eventOutcomeDetail")?;
        leaf(w, "eventOutcomeDetailNote", &e.note)?;
        close(w, "eventOutcomeDetail")?;
        close(w, "eventOutcomeInformation")?;
        for (agent, role) in &e.agents {
            let (kind, value) = self.agent_identifier(agent);
            open(w, "linkingAgentIdentifier")?;
            leaf(w, "linkingAgentIdentifierType", kind)?;
            leaf(w, "linkingAgentIdentifierValue", &value)?;
            leaf(w, "linkingAgentRole", role)?;
            close(w, "linkingAgentIdentifier")?;
        }
        open(w, "linkingObjectIdentifier")?;
        leaf(w, "linkingObjectIdentifierType", kind)?;
        leaf(w, "linkingObjectIdentifierValue", value)?;
        close(w, "linkingObjectIdentifier")?;
        close(w, "event")?;
        newline(w)
    }

    fn agent_identifier(&self, a: &Agent) -> (&'static str, String) {
        match a {
            Agent::Rsmirror => (
                "software",
                format!("rsmirror {}", env!("CARGO_PKG_VERSION")),
            ),
            Agent::Run(id) => ("UUID", self.uuid(&format!("run {id}"))),
            Agent::Source(url) => ("URI", url.clone()),
        }
    }

    fn agent<W: Write>(&self, w: &mut quick_xml::Writer<W>, a: &Agent) -> io::Result<()> {
        let (kind, value) = self.agent_identifier(a);
        open(w, "agent")?;
        open(w, "agentIdentifier")?;
        leaf(w, "agentIdentifierType", kind)?;
        leaf(w, "agentIdentifierValue", &value)?;
        close(w, "agentIdentifier")?;
        match a {
            Agent::Rsmirror => {
                leaf(w, "agentName", "rsmirror")?;
                leaf(w, "agentType", "software")?;
                leaf(w, "agentVersion", env!("CARGO_PKG_VERSION"))?;
                leaf(
                    w,
                    "agentNote",
                    "a ResourceSync Destination: a verified, versioned mirror of a web source",
                )?;
            }
            Agent::Run(id) => {
                let r = self.runs.get(id);
                let command = r.map(|r| r.command.as_str()).unwrap_or("run");
                leaf(w, "agentName", &format!("rsmirror {command}, run {id}"))?;
                leaf(w, "agentType", "software")?;
                leaf(w, "agentVersion", env!("CARGO_PKG_VERSION"))?;
                if let Some(r) = r {
                    leaf(
                        w,
                        "agentNote",
                        &format!(
                            "{}; started {}, ended {}, outcome {}",
                            r.arguments,
                            r.started_at,
                            r.ended_at.as_deref().unwrap_or("(not yet)"),
                            r.outcome.as_deref().unwrap_or("(not yet)")
                        ),
                    )?;
                }
            }
            Agent::Source(url) => {
                leaf(w, "agentName", url)?;
                leaf(w, "agentType", "organization")?;
                leaf(
                    w,
                    "agentNote",
                    "the source the mirror follows (its publisher's web site)",
                )?;
            }
        }
        close(w, "agent")?;
        newline(w)
    }
}

fn newline<W: Write>(w: &mut quick_xml::Writer<W>) -> io::Result<()> {
    w.get_mut().write_all(b"\n")
}

fn open<W: Write>(w: &mut quick_xml::Writer<W>, name: &str) -> io::Result<()> {
    w.write_event(Xml::Start(BytesStart::new(name)))
}

fn close<W: Write>(w: &mut quick_xml::Writer<W>, name: &str) -> io::Result<()> {
    w.write_event(Xml::End(BytesEnd::new(name)))
}

/// `<name>text</name>`, the text escaped and stripped of what XML 1.0 cannot carry.
fn leaf<W: Write>(w: &mut quick_xml::Writer<W>, name: &str, text: &str) -> io::Result<()> {
    let clean: std::borrow::Cow<'_, str> = match text.chars().any(not_xml) {
        true => text
            .chars()
            .map(|c| if not_xml(c) { '\u{fffd}' } else { c })
            .collect::<String>()
            .into(),
        false => text.into(),
    };
    open(w, name)?;
    w.write_event(Xml::Text(BytesText::new(&clean)))?;
    close(w, name)
}

/// XML 1.0 §2.2: no control characters but tab, line feed and carriage return.
fn not_xml(c: char) -> bool {
    (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}')
}

/// RFC 9562 §5.5: a name-based UUID (SHA-1).
fn uuid5(namespace: &[u8; 16], name: &str) -> [u8; 16] {
    use sha1::Digest;
    let hash = sha1::Sha1::new()
        .chain_update(namespace)
        .chain_update(name.as_bytes())
        .finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&hash[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
}

fn uuid_text(b: &[u8; 16]) -> String {
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// `path` with `.suffix` appended to its name.
fn tmp_path(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(suffix);
    path.with_file_name(name)
}

/// `export premis`: the mirror's whole history (up to the exported run) as `DEST/premis.xml`.
pub(crate) fn export(
    catalog: &Catalog,
    dest: &Path,
    run: i64,
    in_sample: InSample,
    summary: &mut super::Summary,
) -> Result<(), Error> {
    let report = Report::new(catalog, run, Scope::History, in_sample, None)?;
    let path = dest.join(FILE);
    let counts = report.write(&path, &|f| report.each_object(f))?;
    summary.files = counts.objects;
    summary.written = 1;
    summary.bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    summary.events = Some(counts.events);
    Ok(())
}

/// The name of the report in DEST.
pub const FILE: &str = "premis.xml";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_based_uuid_is_version_5_and_stable() {
        let ns = uuid5(&[0; 16], "mirror");
        let a = uuid_text(&uuid5(&ns, "capture v1"));
        assert_eq!(a, uuid_text(&uuid5(&ns, "capture v1")));
        assert_ne!(a, uuid_text(&uuid5(&ns, "capture v2")));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "5");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    }

    #[test]
    fn text_xml_cannot_carry_is_replaced() {
        let mut w = quick_xml::Writer::new(Vec::new());
        leaf(&mut w, "n", "a\u{1}b<&\tc").unwrap();
        assert_eq!(
            String::from_utf8(w.into_inner()).unwrap(),
            "<n>a\u{fffd}b&lt;&amp;\tc</n>"
        );
    }

    #[test]
    fn only_audits_that_hashed_are_fixity_checks() {
        let run = |command: &str, counts: &str| RunRecord {
            id: 7,
            command: command.into(),
            source: None,
            arguments: String::new(),
            started_at: "2026-01-01T00:00:00Z".into(),
            ended_at: Some("2026-01-01T00:01:00Z".into()),
            outcome: Some("ok".into()),
            counts_json: Some(counts.into()),
        };
        let a = AuditRecord::of(&run(
            "audit",
            r#"{"level":"sha256","sample":"2/7","all_versions":true,"objects_checked":3}"#,
        ))
        .unwrap();
        assert_eq!(
            (a.level.as_str(), a.sample, a.all_versions),
            ("sha256", Some((2, 7)), true)
        );
        for (command, counts) in [
            ("audit", r#"{"level":"size","objects_checked":3}"#),
            ("audit", r#"{"level":"fixity","objects_checked":0}"#),
            ("baseline", r#"{"level":"fixity","objects_checked":3}"#),
        ] {
            assert_eq!(AuditRecord::of(&run(command, counts)), None, "{counts}");
        }
    }
}
