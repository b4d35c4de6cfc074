//! Local fixity: are the stored bytes still the bytes received? Every object a checked version
//! references (the current versions, or every version with `--all-versions`) is opened and,
//! by level, found present, measured, or re-hashed and compared with what was recorded at
//! ingest (length, md5, sha256 — the object's name — and sha-1 when one was recorded) and with
//! what the source declared then (`versions.declared_hash`, `declared_length_bytes`). Files in
//! `objects/` that no version references are strays.
//!
//! Bounded memory at any size: a reader thread streams the versions from the catalog ordered
//! by object (so the versions sharing an object arrive together and the object is hashed once),
//! a pool of `--jobs` workers hashes through one fixed buffer each, and the calling thread
//! judges the results. Strays are found by merging the store's sorted walk with the sorted
//! list of referenced digests. Only the bytes are looked at: a changed mtime is no finding.
//!
//! An audit of the current versions below `--level fixity` ([`check_current`]) takes the
//! claims from its index of current states instead, and measures each object where the
//! store's sorted walk meets it: the same findings with one pass over the store, no second
//! scan of the catalog and no stat by the whole path.
//!
//! It leaves to the audit the source comparison, the order of the report and what a finding
//! means for the exit code.

use crate::audit::finding::{Class, Finding};
use crate::audit::mirror_states::{
    hex_into, in_sample, uri_in_sample, uri_key, MirrorStates, ObjectName,
};
use crate::progress::Progress;
use crate::rs::digest::{parse_hash_attr, Algorithm, Computed, Hasher};
use crate::settings::AuditLevel;
use crate::store::fixity_claims::{self, ClaimRow, ClaimScope};
use crate::store::mirror_settings;
use crate::store::objects::{is_sha256_hex, ObjectMeta, ObjectStat, ObjectStore, Visited};
use crate::store::{Catalog, StoreError};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;
use std::time::Instant;

/// Each worker's read buffer: the most of any object held in memory at once.
const BUFFER_BYTES: usize = 256 * 1024;

/// What to check.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub level: AuditLevel,
    pub all_versions: bool,
    pub sample: Option<(u64, u64)>,
    pub jobs: usize,
    /// No progress bar.
    pub quiet: bool,
}

/// What local fixity found and did.
#[derive(Debug, Default)]
pub struct Fixity {
    /// Findings about resources' objects, sorted by URI (then object, class, field).
    pub by_uri: Vec<Finding>,
    /// Stray objects (by path) and catalog findings.
    pub other: Vec<Finding>,
    /// Distinct objects checked.
    pub objects_checked: u64,
    pub bytes_hashed: u64,
    /// Wall time checking the objects versions reference (the hashing, at `fixity` level).
    pub seconds: f64,
    /// Wall time looking for strays.
    pub strays_seconds: f64,
}

/// One version's claim on an object: what it recorded at ingest.
#[derive(Debug, Clone)]
struct Claim {
    uri: String,
    length: Option<u64>,
    md5: Option<String>,
    sha1: Option<String>,
    declared_hash: Option<String>,
    declared_length: Option<u64>,
}

/// One object to check and every claim on it; or, for an object several versions share, one
/// claim to check it by (`shared`), every claim being judged afterwards in a second scan of
/// the catalog ([`judge_shared`]): ten million resources of the same bytes cost one [`Seen`]
/// in memory, not ten million claims.
#[derive(Debug)]
struct Job {
    sha256: String,
    claims: Vec<Claim>,
    shared: bool,
}

/// What a worker saw.
#[derive(Debug)]
enum Seen {
    /// The catalog's sha256 is not one: there is no object to look for.
    NotAnObject,
    Missing,
    Unreadable(String),
    Present {
        length: u64,
    },
    Hashed(Computed),
}

/// Check every object in scope. Runs on its own read-only catalog connections, so the audit
/// can compare with the source meanwhile; the resources with a finding are the `uri`s of
/// [`Fixity::by_uri`].
pub(crate) fn check(mirror: &Path, opts: Options) -> Result<Fixity, StoreError> {
    let started = Instant::now();
    let catalog = open_for_scan(mirror)?;
    let objects = mirror_settings::object_store(mirror, &catalog, false)?;
    let mut out = Fixity::default();
    let total = fixity_claims::count(&catalog, opts.all_versions)?;
    let progress = Progress::new(opts.quiet);
    progress.start("fixity", total / opts.sample.map(|(_, m)| m).unwrap_or(1));
    let workers = opts.jobs.max(1);
    let (job_tx, job_rx) = crossbeam_channel::bounded::<Vec<Job>>(workers * 2);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<Vec<(Job, Seen)>>(workers * 2);
    let stat = objects.stat();
    let mut shared_seen: HashMap<String, Seen> = HashMap::new();
    let (read, strays) = std::thread::scope(|s| {
        let reader = s.spawn(move || read_claims(mirror, opts, job_tx));
        // The walk is metadata work of its own: it runs beside the object checks.
        let walker = s.spawn(|| {
            let walk = Instant::now();
            strays(mirror, &objects, opts.sample).map(|f| (f, walk.elapsed().as_secs_f64()))
        });
        for _ in 0..workers {
            let job_rx = job_rx.clone();
            let done_tx = done_tx.clone();
            let (objects, stat) = (&objects, &stat);
            s.spawn(move || {
                let mut buf = vec![0u8; BUFFER_BYTES];
                for jobs in job_rx {
                    let done = jobs
                        .into_iter()
                        .map(|job| {
                            let seen = look(objects, stat, &job, opts.level, &mut buf);
                            (job, seen)
                        })
                        .collect();
                    if done_tx.send(done).is_err() {
                        break;
                    }
                }
            });
        }
        drop(job_rx);
        drop(done_tx);
        for (job, seen) in done_rx.into_iter().flatten() {
            out.objects_checked += 1;
            if let Seen::Hashed(c) = &seen {
                out.bytes_hashed += c.length;
            }
            if job.shared {
                if let Seen::Hashed(c) = &seen {
                    progress.item(c.length);
                }
                shared_seen.insert(job.sha256, seen);
                continue;
            }
            out.by_uri.extend(judge(&job, &seen, opts.level));
            for (i, _) in job.claims.iter().enumerate() {
                progress.item(match (&seen, i) {
                    (Seen::Hashed(c), 0) => c.length,
                    _ => 0,
                });
            }
        }
        out.seconds = started.elapsed().as_secs_f64();
        (
            reader.join().expect("the catalog reader does not panic"),
            walker.join().expect("the store walk does not panic"),
        )
    });
    let without_object = read?;
    judge_shared(&catalog, opts, &shared_seen, &progress, &mut out)?;
    progress.finish();
    let (other, strays_seconds) = strays?;
    out.other = other;
    out.strays_seconds = strays_seconds;

    for uri in without_object {
        out.by_uri.push(
            Finding::new(Class::Catalog)
                .uri(uri)
                .field("sha-256")
                .expected("an object")
                .actual("none recorded for a version that is not a deletion"),
        );
    }
    sort_by_uri(&mut out.by_uri);
    Ok(out)
}

/// Findings about resources in the order [`Fixity::by_uri`] promises, without repeats.
fn sort_by_uri(findings: &mut Vec<Finding>) {
    findings.sort_by(|a, b| {
        (&a.uri, &a.object, a.class, &a.field, &a.expected, &a.actual).cmp(&(
            &b.uri,
            &b.object,
            b.class,
            &b.field,
            &b.expected,
            &b.actual,
        ))
    });
    findings.dedup();
}

/// [`check`] of the current versions below `--level fixity`, taking the claims from the
/// audit's index of current states instead of a second scan of the catalog, and merging them
/// in digest order with the store's sorted walk (the one that finds the strays): each object
/// is measured by one stat next to the previous one, and no claim crosses a thread. The same
/// findings and counts as [`check`], which it is with `--all-versions`, at `--level fixity`,
/// or `sha256`, or when two URIs share a key (their claims could not be told apart).
pub(crate) fn check_current(
    mirror: &Path,
    opts: Options,
    states: &MirrorStates,
) -> Result<Fixity, StoreError> {
    if opts.level.hashes() || opts.all_versions || states.collisions > 0 {
        return check(mirror, opts);
    }
    let started = Instant::now();
    let objects = mirror_settings::object_store(mirror, &open_for_scan(mirror)?, false)?;
    let stat = objects.stat();
    let progress = Progress::new(opts.quiet);
    progress.start("fixity", states.len() as u64);
    let mut out = Fixity::default();
    // Findings by slot, their URIs filled in at the end.
    let mut found: Vec<(usize, Finding)> = Vec::new();
    let claim = |i: usize| Claim {
        uri: String::new(),
        length: states.length(i),
        md5: None,
        sha1: None,
        declared_hash: None,
        declared_length: states.declared_length(i),
    };
    // The states naming an object, by digest: counted into buckets on the digest's first two
    // bytes (the store's two fan-out levels), each bucket sorted when the merge reaches it.
    let mut starts = vec![0u32; (1 << 16) + 1];
    let mut odd: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for i in 0..states.len() {
        match states.object(i) {
            Some(ObjectName::Sha256(b)) => starts[ByDigest::bucket(&b) + 1] += 1,
            Some(ObjectName::Other(name)) => odd.entry(name).or_default().push(i),
            None if !states.deleted(i) && !states.declared_only(i) => found.push((
                i,
                Finding::new(Class::Catalog)
                    .field("sha-256")
                    .expected("an object")
                    .actual("none recorded for a version that is not a deletion"),
            )),
            None => {}
        }
    }
    let mut judge = |name: &str, claims: &[([u8; 32], u32)], seen: &Seen, out: &mut Fixity| {
        out.objects_checked += 1;
        for &(_, i) in claims {
            let i = i as usize;
            found.extend(judge_claim(name, &claim(i), seen, opts.level).map(|f| (i, f)));
            progress.item(0);
        }
    };
    for (name, claims) in &odd {
        let claims: Vec<_> = claims.iter().map(|&i| ([0; 32], i as u32)).collect();
        judge(name, &claims, &Seen::NotAnObject, &mut out);
    }
    let mut merge = ByDigest::new(states, starts);
    let mut hex = [0u8; 64];
    let walk = Instant::now();
    let strays = strays_merged(mirror, &objects, opts.sample, true, |v| {
        let Some(name) = crate::audit::mirror_states::sha256_bytes(v.name) else {
            return false;
        };
        // Objects before this one that the walk did not meet: the stat says what is there
        // (normally nothing).
        while let Some((claims, sha)) = merge.next_before(states, Some(&name)) {
            let sha = hex_into(&sha, &mut hex);
            judge(sha, &merge.current[claims], &measure(&stat, sha), &mut out);
        }
        match merge.take(states, &name) {
            Some(claims) => {
                judge(
                    v.name,
                    &merge.current[claims],
                    &seen_by(v.metadata()),
                    &mut out,
                );
                true
            }
            None => false,
        }
    });
    while let Some((claims, sha)) = merge.next_before(states, None) {
        let sha = hex_into(&sha, &mut hex);
        judge(sha, &merge.current[claims], &measure(&stat, sha), &mut out);
    }
    progress.finish();
    out.other = strays?;
    out.strays_seconds = walk.elapsed().as_secs_f64();
    out.seconds = started.elapsed().as_secs_f64();
    out.by_uri = with_uris(mirror, states, found)?;
    sort_by_uri(&mut out.by_uri);
    Ok(out)
}

/// The states naming an object, in digest order, taken a group (one object) at a time.
struct ByDigest {
    /// Slots, by bucket (`starts[b]..starts[b + 1]`).
    order: Vec<u32>,
    starts: Vec<u32>,
    /// The next bucket to take.
    bucket: usize,
    /// The bucket being taken, sorted: (digest, slot), and the first not taken yet.
    current: Vec<([u8; 32], u32)>,
    at: usize,
}

impl ByDigest {
    fn bucket(sha: &[u8; 32]) -> usize {
        usize::from(u16::from_be_bytes([sha[0], sha[1]]))
    }

    /// `counts[b + 1]`: how many states name an object of bucket `b`.
    fn new(states: &MirrorStates, mut counts: Vec<u32>) -> ByDigest {
        for b in 1..counts.len() {
            counts[b] += counts[b - 1];
        }
        let starts = counts;
        let mut order = vec![0u32; *starts.last().expect("buckets") as usize];
        let mut fill = starts.clone();
        for i in 0..states.len() {
            if let Some(ObjectName::Sha256(sha)) = states.object(i) {
                let at = &mut fill[Self::bucket(&sha)];
                order[*at as usize] = i as u32;
                *at += 1;
            }
        }
        ByDigest {
            order,
            starts,
            bucket: 0,
            current: Vec::new(),
            at: 0,
        }
    }

    /// The digest at the merge position (reading the next bucket when this one is done).
    fn peek(&mut self, states: &MirrorStates) -> Option<[u8; 32]> {
        while self.at >= self.current.len() {
            if self.bucket + 1 >= self.starts.len() {
                return None;
            }
            let (from, to) = (self.starts[self.bucket], self.starts[self.bucket + 1]);
            self.bucket += 1;
            self.current.clear();
            self.current
                .extend(self.order[from as usize..to as usize].iter().map(|&i| {
                    match states.object(i as usize) {
                        Some(ObjectName::Sha256(sha)) => (sha, i),
                        _ => unreachable!("only states naming an object are ordered"),
                    }
                }));
            self.current.sort_unstable();
            self.at = 0;
        }
        Some(self.current[self.at].0)
    }

    /// The group at the merge position (a range of `current`), taken.
    fn group(&mut self, sha: &[u8; 32]) -> std::ops::Range<usize> {
        let start = self.at;
        while self.at < self.current.len() && self.current[self.at].0 == *sha {
            self.at += 1;
        }
        start..self.at
    }

    /// The next group whose digest sorts before `upto` (any, without), and that digest.
    fn next_before(
        &mut self,
        states: &MirrorStates,
        upto: Option<&[u8; 32]>,
    ) -> Option<(std::ops::Range<usize>, [u8; 32])> {
        let sha = self.peek(states)?;
        if upto.is_some_and(|u| sha >= *u) {
            return None;
        }
        Some((self.group(&sha), sha))
    }

    /// The group naming `sha`, if it is at the merge position.
    fn take(&mut self, states: &MirrorStates, sha: &[u8; 32]) -> Option<std::ops::Range<usize>> {
        (self.peek(states)? == *sha).then(|| self.group(sha))
    }
}

/// Give each finding the URI of its state's resource: one scan of the current versions, only
/// when something was found.
fn with_uris(
    mirror: &Path,
    states: &MirrorStates,
    found: Vec<(usize, Finding)>,
) -> Result<Vec<Finding>, StoreError> {
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let mut by_key: HashMap<crate::audit::mirror_states::Key, Vec<Finding>> = HashMap::new();
    for (i, f) in found {
        by_key.entry(states.key(i)).or_default().push(f);
    }
    let catalog = open_for_scan(mirror)?;
    let mut out = Vec::new();
    fixity_claims::each_current_uri(&catalog, |uri| {
        if let Some(findings) = by_key.remove(&uri_key(uri)) {
            out.extend(findings.into_iter().map(|f| f.uri(uri)));
        }
    })?;
    Ok(out)
}

/// A read-only connection for one streaming scan: a small page cache (reads are sequential;
/// a million-resource audit runs several of these side by side in bounded memory).
pub(crate) fn open_for_scan(mirror: &Path) -> Result<Catalog, StoreError> {
    fixity_claims::open_for_scan(mirror)
}

/// The reader thread: the versions to check, in catalog order (sequential reads, whatever the
/// catalog's size), within the sample, one job per object. An object that several versions
/// reference (known beforehand from the index `versions_by_object`: few, as a rule) has its
/// claims gathered and is sent once, at the end, so that it is hashed once. Returns the URIs
/// of the versions in scope that are not deletions but name no object (the same scan finds
/// them).
fn read_claims(
    mirror: &Path,
    opts: Options,
    jobs: crossbeam_channel::Sender<Vec<Job>>,
) -> Result<Vec<String>, StoreError> {
    let mut batch = Batch {
        jobs: Vec::new(),
        bytes: 0,
        to: jobs,
    };
    let catalog = open_for_scan(mirror)?;
    let mut shared: HashMap<String, Vec<Claim>> = fixity_claims::shared_objects(&catalog)?
        .into_iter()
        .map(|sha256| (sha256, Vec::new()))
        .collect();
    let mut without_object = Vec::new();
    // False once the workers are gone (they only go when the check is ending).
    let mut sending = true;
    fixity_claims::each_claim(&catalog, claim_scope(opts), |r| {
        let uri = r.uri()?;
        if !uri_in_sample(uri, opts.sample) {
            return Ok(true);
        }
        let Some(sha256) = r.sha256()? else {
            if !r.deleted()? && !r.metadata_only()? {
                without_object.push(uri.to_string());
            }
            return Ok(true);
        };
        if !sending {
            return Ok(true);
        }
        let claim = claim_of(r, uri)?;
        if let Some(claims) = shared.get_mut(sha256) {
            // One claim to check the object by; all of them are judged by `judge_shared`.
            if claims.is_empty() {
                claims.push(claim);
            }
            return Ok(true);
        }
        sending = batch.push(Job {
            sha256: sha256.to_string(),
            shared: false,
            claims: vec![claim],
        });
        Ok(true)
    })?;
    if sending {
        for (sha256, claims) in shared {
            let job = Job {
                sha256,
                claims,
                shared: true,
            };
            if !job.claims.is_empty() && !batch.push(job) {
                return Ok(without_object);
            }
        }
        batch.flush();
    }
    Ok(without_object)
}

/// The claims `read_claims` and `judge_shared` scan: current versions (or all of them), with
/// the recorded digests only where the bytes are hashed.
fn claim_scope(opts: Options) -> ClaimScope {
    ClaimScope {
        all_versions: opts.all_versions,
        digests: matches!(opts.level, AuditLevel::Fixity | AuditLevel::Sha256),
    }
}

/// A claim as the catalog records it.
fn claim_of(r: &ClaimRow<'_, '_>, uri: &str) -> Result<Claim, StoreError> {
    Ok(Claim {
        uri: uri.to_string(),
        length: r.length()?,
        md5: r.md5()?,
        sha1: r.sha1()?,
        declared_hash: r.declared_hash()?,
        declared_length: r.declared_length()?,
    })
}

/// Judge every claim on the objects several versions share, each against what was seen of
/// its object (`seen`), in a second scan of the catalog: one claim in memory at a time.
fn judge_shared(
    catalog: &Catalog,
    opts: Options,
    seen: &HashMap<String, Seen>,
    progress: &Progress,
    out: &mut Fixity,
) -> Result<(), StoreError> {
    if seen.is_empty() {
        return Ok(());
    }
    fixity_claims::each_claim(catalog, claim_scope(opts), |r| {
        let Some(sha256) = r.sha256()? else {
            return Ok(true);
        };
        let Some(seen) = seen.get(sha256) else {
            return Ok(true);
        };
        let uri = r.uri()?;
        if !uri_in_sample(uri, opts.sample) {
            return Ok(true);
        }
        let claim = claim_of(r, uri)?;
        out.by_uri
            .extend(judge_claim(sha256, &claim, seen, opts.level));
        progress.item(0);
        Ok(true)
    })?;
    Ok(())
}

/// Jobs go to the workers in batches: a stat costs little more than a channel hop.
struct Batch {
    jobs: Vec<Job>,
    bytes: u64,
    to: crossbeam_channel::Sender<Vec<Job>>,
}

impl Batch {
    const JOBS: usize = 64;
    const BYTES: u64 = 16 << 20;

    /// False when the workers are gone.
    fn push(&mut self, job: Job) -> bool {
        self.bytes += job.claims[0].length.unwrap_or(0);
        self.jobs.push(job);
        if self.jobs.len() >= Self::JOBS || self.bytes >= Self::BYTES {
            return self.flush();
        }
        true
    }

    fn flush(&mut self) -> bool {
        self.bytes = 0;
        self.jobs.is_empty() || self.to.send(std::mem::take(&mut self.jobs)).is_ok()
    }
}

/// One stat: presence and length need no open.
fn measure(stat: &ObjectStat, sha256: &str) -> Seen {
    seen_by(stat.metadata(sha256))
}

/// What a stat of an object says of it.
fn seen_by(stat: io::Result<ObjectMeta>) -> Seen {
    match stat {
        Ok(m) if m.is_file => Seen::Present { length: m.len },
        Ok(m) if m.is_dir => Seen::Unreadable("a folder, not a file".into()),
        Ok(_) => Seen::Unreadable("not a regular file".into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Seen::Missing,
        Err(e) => Seen::Unreadable(e.to_string()),
    }
}

/// Open the object and, by level, measure or hash it.
fn look(
    objects: &ObjectStore,
    stat: &ObjectStat,
    job: &Job,
    level: AuditLevel,
    buf: &mut [u8],
) -> Seen {
    if !is_sha256_hex(&job.sha256) {
        return Seen::NotAnObject;
    }
    if !level.hashes() {
        return measure(stat, &job.sha256);
    }
    let mut hasher = hasher_for(job, level);
    let hashed = objects.read_object_through(&job.sha256, buf, &mut |data| {
        hasher.update(data);
        Ok(())
    });
    match hashed {
        Ok(true) => Seen::Hashed(hasher.finish()),
        Ok(false) => Seen::Missing,
        Err(e) => Seen::Unreadable(e.to_string()),
    }
}

/// The hasher an object is checked with: at level sha256 the recorded md5 is not compared
/// (`fixity_mismatch`), so not computed; SHA-1 only when a claim has one.
fn hasher_for(job: &Job, level: AuditLevel) -> Hasher {
    match level {
        AuditLevel::Sha256 => Hasher::sha256_only(),
        _ => Hasher::new(job.claims.iter().any(|c| {
            c.sha1.is_some()
                || c.declared_hash.as_deref().is_some_and(|h| {
                    parse_hash_attr(h)
                        .iter()
                        .any(|d| d.algorithm == Algorithm::Sha1)
                })
        })),
    }
}

/// The findings for every claim on one object (none when all is well): the first
/// contradiction per claim, in the order length, sha-256, md5, sha-1, then the source's
/// declared digests and length.
fn judge(job: &Job, seen: &Seen, level: AuditLevel) -> Vec<Finding> {
    job.claims
        .iter()
        .filter_map(|c| judge_claim(&job.sha256, c, seen, level))
        .collect()
}

/// The finding for one claim on the object named `sha`, if any.
fn judge_claim(sha: &str, c: &Claim, seen: &Seen, level: AuditLevel) -> Option<Finding> {
    let base = |class| Finding::new(class).uri(c.uri.clone()).object(sha);
    match seen {
        Seen::NotAnObject => Some(
            Finding::new(Class::Catalog)
                .uri(c.uri.clone())
                .field("sha-256")
                .expected("64 lower-case hex digits naming an object")
                .actual(sha),
        ),
        Seen::Missing => Some(base(Class::MissingObject).actual("no such file")),
        Seen::Unreadable(why) => Some(base(Class::Unreadable).actual(why.clone())),
        Seen::Present { length } => (level == AuditLevel::Size)
            .then(|| {
                length_mismatch(c, *length).map(|(field, e)| {
                    base(Class::Corrupt)
                        .field(field)
                        .expected(e)
                        .actual(length.to_string())
                })
            })
            .flatten(),
        Seen::Hashed(computed) => fixity_mismatch(sha, c, computed, level)
            .map(|(field, e, a)| base(Class::Corrupt).field(field).expected(e).actual(a)),
    }
}

/// (field, expected) of a length that disagrees with `actual`.
fn length_mismatch(c: &Claim, actual: u64) -> Option<(&'static str, String)> {
    match (c.length, c.declared_length) {
        (Some(n), _) if n != actual => Some(("length", n.to_string())),
        (_, Some(n)) if n != actual => Some(("declared length", n.to_string())),
        _ => None,
    }
}

/// (field, expected, actual) of the first recorded or declared value the bytes contradict.
/// At level `sha256` only the length and sha-256 (recorded and declared) are compared.
fn fixity_mismatch(
    sha: &str,
    c: &Claim,
    computed: &Computed,
    level: AuditLevel,
) -> Option<(String, String, String)> {
    if let Some((field, e)) = length_mismatch(c, computed.length) {
        return Some((field.into(), e, computed.length.to_string()));
    }
    if computed.sha256_hex != sha {
        return Some((
            "sha-256".into(),
            sha.to_string(),
            computed.sha256_hex.clone(),
        ));
    }
    let all = level == AuditLevel::Fixity;
    if let Some(md5) = c.md5.as_deref().filter(|m| all && *m != computed.md5_hex) {
        return Some(("md5".into(), md5.to_string(), computed.md5_hex.clone()));
    }
    if let (Some(rec), Some(got)) = (c.sha1.as_deref(), computed.sha1_hex.as_deref()) {
        if rec != got {
            return Some(("sha-1".into(), rec.to_string(), got.to_string()));
        }
    }
    let mut declared = parse_hash_attr(c.declared_hash.as_deref().unwrap_or(""));
    declared.retain(|d| all || d.algorithm == Algorithm::Sha256);
    crate::rs::digest::mismatches(&declared, computed)
        .into_iter()
        .next()
        .map(|m| (format!("declared {}", m.algorithm), m.expected, m.actual))
}

/// Files in `objects/` that no version (current or not) references, within the sample (a
/// stray's slice is that of its file name). A sorted merge: memory does not grow with the store.
fn strays(
    mirror: &Path,
    objects: &ObjectStore,
    sample: Option<(u64, u64)>,
) -> Result<Vec<Finding>, StoreError> {
    strays_merged(mirror, objects, sample, false, |_| false)
}

/// [`strays`], handing every placed object met to `current` first: true when a current
/// version names it (so it is no stray). With `measured`, the walk takes every placed
/// object's metadata ahead, on another thread ([`ObjectStore::visit_sorted_measured`]).
fn strays_merged(
    mirror: &Path,
    objects: &ObjectStore,
    sample: Option<(u64, u64)>,
    measured: bool,
    mut current: impl FnMut(&mut Visited<'_>) -> bool,
) -> Result<Vec<Finding>, StoreError> {
    let catalog = open_for_scan(mirror)?;
    let stopped = crate::store::run_records::last_stopped_fetch(&catalog)?;
    fixity_claims::with_referenced_objects(&catalog, |refs| {
        let mut sql_error: Option<StoreError> = None;
        // The next referenced digest, in one reused buffer.
        let mut next_ref = Some(String::new());
        let mut advance = |next: &mut Option<String>| {
            let value = refs.next_object().unwrap_or_else(|e| {
                sql_error.get_or_insert(e);
                None
            });
            match (value, next.as_mut()) {
                (Some(v), Some(buf)) => {
                    buf.clear();
                    buf.push_str(v);
                }
                (Some(v), None) => *next = Some(v.to_string()),
                (None, _) => *next = None,
            }
        };
        advance(&mut next_ref);
        let mut out = Vec::new();
        let visit = |mut v: Visited| {
            if v.placed {
                if current(&mut v) {
                    return Ok(());
                }
                while next_ref.as_deref().is_some_and(|r| r < v.name) {
                    advance(&mut next_ref);
                }
                if next_ref.as_deref() == Some(v.name) {
                    return Ok(());
                }
            }
            if in_sample(&uri_key(v.name), sample) {
                out.push(stray(mirror, &v, stopped));
            }
            Ok(())
        };
        match measured {
            true => objects.visit_sorted_measured(visit),
            false => objects.visit_sorted(visit),
        }
        .map_err(|e| StoreError::io("reading", objects.root(), e))?;
        match sql_error {
            Some(e) => Err(e),
            None => Ok(out),
        }
    })?
}

/// The finding of a stray file met in `objects/`; `stopped`: the last run that fetched, when
/// it stopped before its end (an object it placed after its start is said to be its).
fn stray(mirror: &Path, v: &Visited<'_>, stopped: Option<(i64, jiff::Timestamp)>) -> Finding {
    let path = v.path();
    let rel = path.strip_prefix(mirror).unwrap_or(&path);
    let rel = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let f = Finding::new(Class::StrayObject).object(rel);
    if v.placed {
        let placed = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| jiff::Timestamp::try_from(t).ok());
        match (stopped, placed) {
            (Some((run, started)), Some(placed)) if placed >= started => f.actual(format!(
                "placed by run {run}, which stopped before it named it: the next baseline or \
                 incremental re-attaches it by its digest while the source lists it"
            )),
            _ => f,
        }
    } else {
        f.actual("not where an object belongs (objects/sha256/ab/<sha256>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Change, Via};

    fn claim() -> Claim {
        Claim {
            uri: "http://x/a".into(),
            length: Some(6),
            md5: Some("9f9f90dbe3e5ee1218c86b8839db1995".into()),
            sha1: None,
            declared_hash: Some("md5:9f9f90dbe3e5ee1218c86b8839db1995".into()),
            declared_length: Some(6),
        }
    }

    fn alpha() -> Computed {
        let mut h = Hasher::new(false);
        h.update(b"alpha\n");
        h.finish()
    }

    const ALPHA: &str = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";

    #[test]
    fn intact_bytes_give_nothing() {
        assert_eq!(
            fixity_mismatch(ALPHA, &claim(), &alpha(), AuditLevel::Fixity),
            None
        );
    }

    #[test]
    fn the_first_contradiction_is_reported() {
        let mut c = claim();
        c.length = Some(7);
        assert_eq!(
            fixity_mismatch(ALPHA, &c, &alpha(), AuditLevel::Fixity)
                .unwrap()
                .0,
            "length"
        );
        let mut other = alpha();
        other.sha256_hex = "0".repeat(64);
        assert_eq!(
            fixity_mismatch(ALPHA, &claim(), &other, AuditLevel::Fixity)
                .unwrap()
                .0,
            "sha-256"
        );
        let mut c = claim();
        c.md5 = Some("0".repeat(32));
        assert_eq!(
            fixity_mismatch(ALPHA, &c, &alpha(), AuditLevel::Fixity)
                .unwrap()
                .0,
            "md5"
        );
        let mut c = claim();
        c.declared_hash = Some(format!("md5:{}", "1".repeat(32)));
        let (field, e, a) = fixity_mismatch(ALPHA, &c, &alpha(), AuditLevel::Fixity).unwrap();
        assert_eq!(field, "declared md5");
        assert_eq!(e, "1".repeat(32));
        assert_eq!(a, "9f9f90dbe3e5ee1218c86b8839db1995");
    }

    #[test]
    fn level_sha256_compares_length_and_sha256_only() {
        let sha_only = Computed {
            md5_hex: String::new(),
            ..alpha()
        };
        let level = AuditLevel::Sha256;
        assert_eq!(fixity_mismatch(ALPHA, &claim(), &sha_only, level), None);
        let mut c = claim();
        c.md5 = Some("0".repeat(32));
        c.declared_hash = Some(format!("md5:{}", "1".repeat(32)));
        assert_eq!(fixity_mismatch(ALPHA, &c, &sha_only, level), None);
        c.declared_hash = Some(format!("sha-256:{}", "2".repeat(64)));
        assert_eq!(
            fixity_mismatch(ALPHA, &c, &sha_only, level).unwrap().0,
            "declared sha-256"
        );
        let mut other = sha_only.clone();
        other.sha256_hex = "0".repeat(64);
        assert_eq!(
            fixity_mismatch(ALPHA, &claim(), &other, level).unwrap().0,
            "sha-256"
        );
        c = claim();
        c.length = Some(7);
        assert_eq!(
            fixity_mismatch(ALPHA, &c, &sha_only, level).unwrap().0,
            "length"
        );
    }

    #[test]
    fn levels_look_as_deep_as_asked() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let staged = dir.path().join("x");
        std::fs::write(&staged, b"alpha\n").unwrap();
        store.ingest(&staged, ALPHA).unwrap();
        let job = Job {
            shared: false,
            sha256: ALPHA.into(),
            claims: vec![claim()],
        };
        let mut buf = vec![0u8; 4];
        let stat = store.stat();
        assert!(matches!(
            look(&store, &stat, &job, AuditLevel::Presence, &mut buf),
            Seen::Present { length: 6 }
        ));
        match look(&store, &stat, &job, AuditLevel::Fixity, &mut buf) {
            Seen::Hashed(c) => assert_eq!(c, alpha()),
            other => panic!("{other:?}"),
        }
        match look(&store, &stat, &job, AuditLevel::Sha256, &mut buf) {
            Seen::Hashed(c) => {
                assert_eq!((c.length, c.sha256_hex.as_str()), (6, ALPHA));
                assert_eq!(c.md5_hex, "", "md5 is not computed at level sha256");
            }
            other => panic!("{other:?}"),
        }
        let missing = Job {
            shared: false,
            sha256: "a".repeat(64),
            claims: vec![claim()],
        };
        assert!(matches!(
            look(&store, &stat, &missing, AuditLevel::Fixity, &mut buf),
            Seen::Missing
        ));
        assert!(matches!(
            look(&store, &stat, &missing, AuditLevel::Size, &mut buf),
            Seen::Missing
        ));
        let folder = Job {
            shared: false,
            sha256: "b".repeat(64),
            claims: vec![claim()],
        };
        std::fs::create_dir_all(store.path_for(&folder.sha256)).unwrap();
        match look(&store, &stat, &folder, AuditLevel::Size, &mut buf) {
            Seen::Unreadable(why) => assert_eq!(why, "a folder, not a file"),
            other => panic!("{other:?}"),
        }
        let f = judge(&missing, &Seen::Missing, AuditLevel::Fixity);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].class, Class::MissingObject);

        let short = Seen::Present { length: 5 };
        assert_eq!(judge(&job, &short, AuditLevel::Presence), vec![]);
        assert_eq!(
            judge(&job, &short, AuditLevel::Size)[0].class,
            Class::Corrupt
        );
        let bad = Job {
            shared: false,
            sha256: "../../etc/passwd".into(),
            claims: vec![claim()],
        };
        assert!(matches!(
            look(&store, &stat, &bad, AuditLevel::Fixity, &mut buf),
            Seen::NotAnObject
        ));
    }

    /// A store in `dir` holding the object `alpha\n`, and its path.
    #[cfg(target_os = "linux")]
    fn store_of_alpha(dir: &Path) -> (ObjectStore, std::path::PathBuf) {
        let store = ObjectStore::open(dir).unwrap();
        let staged = dir.join("x");
        std::fs::write(&staged, b"alpha\n").unwrap();
        let path = store.ingest(&staged, ALPHA).unwrap();
        (store, path)
    }

    /// `alpha\n` read and hashed as `audit` does at level fixity.
    #[cfg(target_os = "linux")]
    fn fixity_of_alpha(store: &ObjectStore) {
        let job = Job {
            shared: false,
            sha256: ALPHA.into(),
            claims: vec![claim()],
        };
        let mut buf = vec![0u8; 4];
        match look(store, &store.stat(), &job, AuditLevel::Fixity, &mut buf) {
            Seen::Hashed(c) => assert_eq!(c, alpha()),
            other => panic!("{other:?}"),
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_object_read_for_its_fixity_leaves_the_page_cache() {
        use crate::store::objects::cached_pages;
        let dir = tempfile::tempdir().unwrap();
        let (store, path) = store_of_alpha(dir.path());
        store.sync().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"alpha\n");
        let Some(before) = cached_pages(&path) else {
            eprintln!(
                "SKIPPED: {} is on a file system whose cached pages cannot be told or let go of",
                dir.path().display()
            );
            return;
        };
        assert_eq!(before, 1, "read, the object is in the page cache");
        fixity_of_alpha(&store);
        assert_eq!(cached_pages(&path), Some(0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reading_an_object_for_its_fixity_leaves_its_access_time() {
        use std::time::{Duration, SystemTime};
        let dir = tempfile::tempdir().unwrap();
        let (store, path) = store_of_alpha(dir.path());
        // Read two days ago, before it was last changed: any read would set a new access
        // time, under `relatime` (the usual mount option) as under `strictatime`.
        let long_ago = SystemTime::now() - Duration::from_secs(2 * 86_400);
        std::fs::File::open(&path)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_accessed(long_ago))
            .unwrap();
        let accessed = || std::fs::metadata(&path).unwrap().accessed().unwrap();
        assert_eq!(accessed(), long_ago);
        let probe = dir.path().join("probe");
        std::fs::write(&probe, b"p").unwrap();
        std::fs::File::open(&probe)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_accessed(long_ago))
            .unwrap();
        std::fs::read(&probe).unwrap();
        if std::fs::metadata(&probe).unwrap().accessed().unwrap() == long_ago {
            eprintln!(
                "SKIPPED: {} is mounted so that reads never change access times (noatime)",
                dir.path().display()
            );
            return;
        }
        fixity_of_alpha(&store);
        assert_eq!(accessed(), long_ago, "the audit changed the access time");
    }

    /// A mirror with every kind of trouble local fixity reports below `--level fixity`.
    fn troubled_mirror() -> tempfile::TempDir {
        use crate::store::catalog::{write, NewVersion};
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let mut objects = Vec::new();
        for (i, body) in ["alpha\n", "beta\n", "gamma\n", "delta\n"]
            .iter()
            .enumerate()
        {
            let staged = dir.path().join(format!("s{i}"));
            std::fs::write(&staged, body).unwrap();
            let mut h = Hasher::new(false);
            h.update(body.as_bytes());
            let c = h.finish();
            store.ingest(&staged, &c.sha256_hex).unwrap();
            objects.push(c);
        }
        // A stray, a file out of place, a folder in an object's place.
        let stray = "c".repeat(64);
        let stray_dir = dir.path().join("objects/sha256/cc/cc");
        std::fs::create_dir_all(&stray_dir).unwrap();
        std::fs::write(stray_dir.join(&stray), b"x").unwrap();
        std::fs::write(dir.path().join("objects/sha256/loose"), b"x").unwrap();
        let folder = format!("dd{}", "d".repeat(62));
        std::fs::create_dir_all(store.path_for(&folder)).unwrap();
        let mut c = Catalog::open(dir.path()).unwrap();
        let run = c.begin_run("baseline", None, "test").unwrap();
        let version = |uri: &str, o: &Computed| NewVersion {
            uri: uri.into(),
            collection: "c".into(),
            change: Change::Created,
            arrived_via: Via::Http,
            length_bytes: Some(o.length),
            declared_length_bytes: Some(o.length),
            md5_hex: Some(o.md5_hex.clone()),
            sha256_hex: Some(o.sha256_hex.clone()),
            ..Default::default()
        };
        let mut rows = Vec::new();
        for i in 0..40 {
            rows.push(version(&format!("http://x/ok/{i}"), &objects[i % 2]));
        }
        let mut v = version("http://x/short", &objects[2]);
        v.length_bytes = Some(99);
        rows.push(v);
        let mut v = version("http://x/declared", &objects[2]);
        v.declared_length_bytes = Some(98);
        rows.push(v);
        let mut v = version("http://x/declared-only", &objects[3]);
        v.length_bytes = None;
        v.declared_length_bytes = Some(97);
        rows.push(v);
        let mut v = version("http://x/missing", &objects[0]);
        v.sha256_hex = Some("e".repeat(64));
        rows.push(v);
        let mut v = version("http://x/missing-too", &objects[0]);
        v.sha256_hex = Some("e".repeat(64));
        rows.push(v);
        let mut v = version("http://x/upper", &objects[1]);
        v.sha256_hex = Some(objects[1].sha256_hex.to_uppercase());
        rows.push(v);
        let mut v = version("http://x/path", &objects[1]);
        v.sha256_hex = Some("../../etc/passwd".into());
        rows.push(v);
        let mut v = version("http://x/none", &objects[1]);
        v.sha256_hex = None;
        rows.push(v);
        let mut v = version("http://x/folder", &objects[1]);
        v.sha256_hex = Some(folder.clone());
        rows.push(v);
        let mut v = version("http://x/big", &objects[3]);
        v.length_bytes = Some(5 << 30);
        rows.push(v);
        let mut v = version("http://x/sha1", &objects[3]);
        v.sha1_hex = Some("0123456789abcdef0123456789abcdef01234567".into());
        rows.push(v);
        rows.push(NewVersion {
            uri: "http://x/gone".into(),
            collection: "c".into(),
            change: Change::Deleted,
            arrived_via: Via::Tombstone,
            ..Default::default()
        });
        c.in_transaction(|tx| {
            for v in &rows {
                write::version(tx, run, v)?;
            }
            Ok(())
        })
        .unwrap();
        dir
    }

    /// An object forty versions share ("alpha\n" for the even `ok/` URIs) hashed once and
    /// found damaged for each of them: every claim judged (the claims are scanned
    /// again rather than held, so a million resources of the same bytes cost no memory).
    #[test]
    fn a_damaged_shared_object_is_a_finding_for_every_uri_that_names_it() {
        let dir = troubled_mirror();
        let store = ObjectStore::at(dir.path());
        let mut h = Hasher::new(false);
        h.update(b"alpha\n");
        let alpha = store.path_for(&h.finish().sha256_hex);
        let mut perms = std::fs::metadata(&alpha).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&alpha, perms).unwrap();
        std::fs::write(&alpha, b"alphA\n").unwrap();
        let opts = Options {
            level: AuditLevel::Fixity,
            all_versions: false,
            sample: None,
            jobs: 2,
            quiet: true,
        };
        let found = check(dir.path(), opts).unwrap();
        let damaged: Vec<&str> = found
            .by_uri
            .iter()
            .filter(|f| f.field.as_deref() == Some("sha-256"))
            .filter_map(|f| f.uri.as_deref())
            .filter(|u| u.starts_with("http://x/ok/"))
            .collect();
        let mut want: Vec<String> = (0..40)
            .step_by(2)
            .map(|i| format!("http://x/ok/{i}"))
            .collect();
        want.sort();
        assert_eq!(damaged, want);
        // The other shared object ("beta\n", the odd ones) is intact.
        assert!(!found.by_uri.iter().any(|f| f
            .uri
            .as_deref()
            .is_some_and(|u| u.starts_with("http://x/ok/")
                && u.trim_start_matches("http://x/ok/").parse::<u32>().unwrap() % 2 == 1)));
    }

    #[test]
    fn from_the_states_local_fixity_finds_what_it_finds_from_the_catalog() {
        let dir = troubled_mirror();
        let catalog = Catalog::open(dir.path()).unwrap();
        for level in [AuditLevel::Presence, AuditLevel::Size] {
            for sample in [None, Some((1, 2)), Some((2, 2)), Some((3, 5))] {
                let opts = Options {
                    level,
                    all_versions: false,
                    sample,
                    jobs: 2,
                    quiet: true,
                };
                let states = MirrorStates::load(&catalog, vec![], sample).unwrap();
                let want = check(dir.path(), opts).unwrap();
                let got = check_current(dir.path(), opts, &states).unwrap();
                assert_eq!(got.by_uri, want.by_uri, "{level:?} {sample:?}");
                assert_eq!(got.other, want.other, "{level:?} {sample:?}");
                assert_eq!(got.objects_checked, want.objects_checked);
                if sample.is_none() {
                    let kinds = if level == AuditLevel::Size { 10 } else { 6 };
                    assert_eq!(want.by_uri.len(), kinds, "{:#?}", want.by_uri);
                    assert!(!want.other.is_empty());
                }
            }
        }
    }
}
