//! `audit` of an SCP mirror (SCP 0.1): the mirror against the newest
//! snapshot of each section followed, the collections it was built from, and its own bytes.
//!
//! - Source comparison (unless `--offline`): the newest snapshot is streamed through the
//!   collection reader (nothing is written) and every page compared with the mirror's current
//!   state: `+` missing (absent or tombstoned here), `*` changed (`modified` older here, or
//!   equal with different JSON), `=` in sync (equal, or newer here because a delta listed
//!   after the snapshot brought it), `-` extra (live here, absent from the snapshot, and not
//!   brought by a later delta). Findings about a snapshot are kept only when the whole file
//!   verified; a snapshot that cannot be read or is rejected becomes a `source` failed part
//!   and nothing is said about its pages.
//! - Stored collections, re-verified: every collection the mirror applied that the sitemap
//!   still lists is fetched again with its stored validators; a 304 means the source still
//!   serves what was verified, a 200 is read and verified again and its content compared
//!   with the SHA-256 recorded (`*` on the collection URL when the source changed it under
//!   the same URL and `generated`). Collections recorded without a checksum are `?`
//!   unverifiable (their pages were never proven).
//! - Local fixity is not done here: a page's JSON is an object like any other resource's, and
//!   `--level fixity` hashes it with the rest (`audit::fixity`).
//!
//! It returns findings for the audit command to order, report and store (`audit`);
//! it writes nothing.

use crate::audit::finding::{Class, Finding};
use crate::engine::whole::Seen;
use crate::error::SourceError;
use crate::formats::scp::fetch as scp_fetch;
use crate::formats::scp::read::sitemap::CollectionEntry;
use crate::formats::scp::read::{CollectionReader, CollectionSummary, Limits, ScpError};
use crate::net::agent::DocumentResponse;
use crate::net::{Http, Scope, Validators};
use crate::settings;
use crate::store::scp_catalog::{self, CollectionRecord};
use crate::store::{Catalog, StoreError};
use sha2::{Digest as _, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use url::Url;

/// What the SCP audit found (`pages`: live pages in the mirror; `listed`: pages the newest
/// snapshots list).
pub use crate::formats::OwnAudit as ScpAudit;

/// Audit the SCP mirror of source `source_id`.
pub fn audit(
    s: &settings::Audit,
    catalog: &Catalog,
    source_id: i64,
) -> Result<ScpAudit, StoreError> {
    let mut out = ScpAudit::default();
    let collections = scp_catalog::collections(catalog, source_id)?;
    for c in &collections {
        if c.checksum_status == crate::formats::scp::read::ChecksumStatus::Unverified.name() {
            out.findings.push(
                Finding::new(Class::Unverifiable)
                    .uri(c.url.clone())
                    .field("checksum")
                    .actual(format!("{} {} declares no checksum", c.kind, c.collection_id))
                    .hint("the collection declared no checksum, so its pages were never proven; --require-fixity counts this as a difference"),
            );
        }
    }
    if !s.offline {
        if let Err(e) = compare_with_source(s, catalog, source_id, &collections, &mut out) {
            match e {
                Failure::Store(e) => return Err(e),
                Failure::Source(e) => out.source_error = Some(e),
            }
        }
    }
    for section in scp_catalog::sections(catalog, source_id)? {
        let collection = scp_catalog::section_collection_of(catalog, source_id, &section.name)?;
        scp_catalog::section_pages(catalog, &collection, &section.name, |p| {
            if !p.deleted() {
                out.pages += 1;
            }
        })?;
    }
    out.findings.sort_by(|a, b| {
        (a.subject(), a.class)
            .cmp(&(b.subject(), b.class))
            .then_with(|| a.field.cmp(&b.field))
    });
    Ok(out)
}

enum Failure {
    Store(StoreError),
    Source(SourceError),
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Store(e)
    }
}

impl From<SourceError> for Failure {
    fn from(e: SourceError) -> Failure {
        Failure::Source(e)
    }
}

fn compare_with_source(
    s: &settings::Audit,
    catalog: &Catalog,
    source_id: i64,
    collections: &[CollectionRecord],
    out: &mut ScpAudit,
) -> Result<(), Failure> {
    let recorded =
        scp_catalog::sitemap(catalog, source_id)?.ok_or_else(|| SourceError::Unusable {
            url: format!("source {source_id}"),
            message: "the mirror has no SCP sitemap recorded: run rsmirror baseline first".into(),
        })?;
    let url = Url::parse(&recorded.url).map_err(|e| SourceError::Unusable {
        url: recorded.url.clone(),
        message: format!("the recorded sitemap URL does not parse: {e}"),
    })?;
    let http = Http::new(s.source.http.clone());
    let scope = Scope::for_document(&url, &s.source.allow_hosts);
    let fetched = scp_fetch::sitemap(&http, &url, &scope, &Validators::default())?
        .expect("an unconditional GET is never answered 304");
    for w in &fetched.sitemap.warnings {
        out.warnings.push(format!("{}: {w}", fetched.url));
    }
    let scope = Scope::for_document(&fetched.url, &s.source.allow_hosts);
    let limits = Limits::default();
    let mut read = HashSet::new();
    for section in scp_catalog::sections(catalog, source_id)? {
        let Some(snapshot) = fetched.sitemap.latest_snapshot(&section.name) else {
            out.warnings.push(format!(
                "{}: no snapshot of section {:?} is listed: its pages were not compared",
                fetched.url, section.name
            ));
            continue;
        };
        read.insert((snapshot.url.to_string(), snapshot.generated));
        let collection = scp_catalog::section_collection_of(catalog, source_id, &section.name)?;
        let mirror = Section {
            catalog,
            collection_id: catalog.collection_id_of(&collection)?.unwrap_or(0),
            name: &section.name,
        };
        match compare_snapshot(&http, &scope, snapshot, &limits, &mirror)? {
            Ok((mut findings, summary)) => {
                out.listed += summary.pages;
                cross_check(snapshot, &summary, &mut out.warnings);
                if let Some(rec) = same_collection(collections, snapshot) {
                    changed_collection(rec, &summary, &mut findings);
                }
                out.findings.append(&mut findings);
            }
            Err(why) => out.failed_parts.push((snapshot.url.to_string(), why)),
        }
    }
    // Re-verify every applied collection the sitemap still lists (the newest snapshots were
    // just read in full).
    for rec in collections {
        let Some(entry) = fetched
            .sitemap
            .collections
            .iter()
            .find(|e| e.url.as_str() == rec.url && Some(e.generated) == rec.listed_generated)
        else {
            continue;
        };
        if read.contains(&(entry.url.to_string(), entry.generated)) {
            continue;
        }
        match http.get(&entry.url, &scope, &rec.validators) {
            Ok(DocumentResponse::NotModified) => {}
            Ok(DocumentResponse::Body(body)) => match read_whole(body.reader, &limits) {
                Ok(summary) => {
                    let mut findings = Vec::new();
                    changed_collection(rec, &summary, &mut findings);
                    out.findings.append(&mut findings);
                }
                Err(e) => out
                    .failed_parts
                    .push((rec.url.clone(), format!("rejected: {e}"))),
            },
            Err(e) => out.failed_parts.push((rec.url.clone(), e.to_string())),
        }
    }
    Ok(())
}

/// The recorded collection the sitemap entry names (same URL and listed `generated`).
fn same_collection<'a>(
    collections: &'a [CollectionRecord],
    entry: &CollectionEntry,
) -> Option<&'a CollectionRecord> {
    collections
        .iter()
        .rev()
        .find(|c| c.url == entry.url.as_str() && c.listed_generated == Some(entry.generated))
}

/// A `*` on the collection when the source now serves other content than was verified.
fn changed_collection(rec: &CollectionRecord, now: &CollectionSummary, out: &mut Vec<Finding>) {
    if rec.sha256_hex != now.sha256_hex {
        out.push(
            Finding::new(Class::Changed)
                .uri(rec.url.clone())
                .field("sha-256")
                .expected(now.sha256_hex.clone())
                .actual(rec.sha256_hex.clone())
                .hint("the source now serves other content under this collection URL and `generated` than the mirror applied; a newer snapshot (rsmirror incremental) brings the mirror back in line"),
        );
    }
}

fn cross_check(entry: &CollectionEntry, sum: &CollectionSummary, warnings: &mut Vec<String>) {
    if let Some(size) = entry.size_bytes.filter(|n| *n != sum.compressed_bytes) {
        warnings.push(format!(
            "{}: the sitemap (line {}) gives size {size} bytes, {} bytes arrived",
            entry.url, entry.line, sum.compressed_bytes
        ));
    }
    let read = sum.pages + sum.pages_skipped;
    if let Some(pages) = entry.pages.filter(|n| *n != read) {
        warnings.push(format!(
            "{}: the sitemap (line {}) gives {pages} pages, the collection holds {read}",
            entry.url, entry.line
        ));
    }
}

/// Read a collection to its verdict, discarding the pages.
fn read_whole(input: impl Read, limits: &Limits) -> Result<CollectionSummary, ScpError> {
    let mut reader = CollectionReader::open(input, limits)?;
    while reader.next_page()?.is_some() {}
    reader.finish()
}

/// The mirror's side of a section, as the audit asks it page by page (nothing of it held in
/// memory).
struct Section<'a> {
    catalog: &'a Catalog,
    /// `collections.id` of the section's collection (0: the mirror has none).
    collection_id: i64,
    name: &'a str,
}

/// Stream the newest snapshot and compare it page by page with the mirror, each page looked
/// up in the catalog; the findings count only when the whole file verified (`Ok(Err)`: why it
/// could not be read).
fn compare_snapshot(
    http: &Http,
    scope: &Scope,
    snapshot: &CollectionEntry,
    limits: &Limits,
    mirror: &Section<'_>,
) -> Result<Result<(Vec<Finding>, CollectionSummary), String>, StoreError> {
    let reject = |e: ScpError| format!("rejected: {e}");
    let mut reader = match scp_fetch::stream(http, &snapshot.url, scope, limits) {
        Ok(reader) => reader,
        Err(why) => return Ok(Err(why)),
    };
    let mut seen = Seen::default();
    let mut findings: HashMap<String, Finding> = HashMap::new();
    loop {
        let page = match reader.next_page() {
            Ok(Some(page)) => page,
            Ok(None) => break,
            Err(e) => return Ok(Err(reject(e))),
        };
        let url = page.url.as_str();
        // As baseline does: a page outside the sitemap's scope is never mirrored.
        if let Err(reason) = scope.check(&page.url) {
            let f = Finding::new(Class::Refused)
                .uri(url)
                .actual(format!("outside the site: {reason}"));
            findings.insert(url.to_string(), f);
            continue;
        }
        let json_sha = hex::encode(Sha256::digest(page.json.as_bytes()));
        let held =
            scp_catalog::page_lookup(mirror.catalog, url, mirror.name, mirror.collection_id)?.held;
        if let Some(h) = &held {
            seen.insert(h.resource_id);
        }
        let f = match held {
            Some(state) if state.modified.is_some() => {
                let here = state.modified.expect("live pages have a modified");
                if here == page.modified {
                    if state.sha256_hex.as_deref() == Some(json_sha.as_str()) {
                        Finding::new(Class::InSync).uri(url)
                    } else {
                        Finding::new(Class::Changed)
                            .uri(url)
                            .field("sha-256")
                            .expected(json_sha)
                            .actual(state.sha256_hex.clone().unwrap_or_default())
                            .hint("same `modified`, different page JSON: the source changed the page without advancing `modified` (SCP 0.1 keeps the local page); rsmirror baseline cannot repair it either")
                    }
                } else if here > page.modified
                    && state.brought_by.is_some_and(|g| g > snapshot.generated)
                {
                    // A delta listed after this snapshot brought a newer page.
                    Finding::new(Class::InSync).uri(url)
                } else {
                    Finding::new(Class::Changed)
                        .uri(url)
                        .field("modified")
                        .expected(page.modified.to_string())
                        .actual(here.to_string())
                }
            }
            Some(_) => Finding::new(Class::Missing)
                .uri(url)
                .actual("deleted in the mirror"),
            None => Finding::new(Class::Missing).uri(url),
        };
        // As in a snapshot read by baseline: a page listed twice, the later entry counts.
        findings.insert(url.to_string(), f);
    }
    let summary = match reader.finish() {
        Ok(summary) => summary,
        Err(e) => return Ok(Err(reject(e))),
    };
    let mut out: Vec<Finding> = findings.into_values().collect();
    scp_catalog::live_pages(
        mirror.catalog,
        mirror.collection_id,
        i64::MAX,
        |id, uri, brought_by| {
            if !seen.contains(id) && brought_by.is_none_or(|g| g <= snapshot.generated) {
                out.push(
                    Finding::new(Class::Extra)
                        .uri(scp_catalog::page_url(&uri, mirror.name).to_string())
                        .actual(format!("not in the snapshot {}", snapshot.url)),
                );
            }
        },
    )?;
    Ok(Ok((out, summary)))
}
