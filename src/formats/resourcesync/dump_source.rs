//! A Resource Dump as the source of a baseline's bytes (ResourceSync 1.1 §6, §9; the 2012
//! draft's `xhtml:link rel="http://www.openarchives.org/rs/dump"`).
//!
//! Every package is downloaded to `staging/` (verified against the dump entry's length and
//! digests when given) and opened by the hostile-package reader (`rs::dump`); the manifests
//! become the snapshot the shared plan compares with the mirror, exactly as a Resource List
//! would. When the bytes are needed they are staged from the packages, package by package: a
//! package refused half-way (a header that lies, say) contributes nothing, and each bitstream
//! lands under its `<loc>` exactly as if it had been fetched by HTTP.

use crate::engine::apply::{Fetched, JobResult};
use crate::engine::documents::{Documents, OpenedDocument};
use crate::engine::plan::{Declared, Listed};
use crate::error::SourceError;
use crate::formats::resourcesync::snapshot::{self, Refused, Snapshot};
use crate::net::one::fetch_to_staging;
use crate::net::{Expected, Http, Scope};
use crate::rs::document::{media_type, Capability, Root};
use crate::rs::dump::{DumpLimits, EntryErrorKind, Package, StageError};
use crate::rs::sitemap::ReadOptions;
use crate::store::ObjectStore;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use url::Url;

/// The 2012 draft's link from a Sitemap to its dump package.
pub const ALPHA_DUMP_REL: &str = "http://www.openarchives.org/rs/dump";
/// How deep Resource Dump Indexes may nest.
const MAX_DEPTH: usize = 3;

/// A snapshot read from dump manifests, with the packages that hold its bytes.
pub struct DumpSnapshot {
    pub snapshot: Snapshot,
    packages: Vec<Opened>,
    /// For each listed resource: (package, manifest entry).
    origin: Vec<(usize, usize)>,
    options: ReadOptions,
}

/// A downloaded package. Its manifest and ZIP directory are read once to build the snapshot,
/// then let go, and read again when its bitstreams are staged: only one package's entries are
/// in memory at a time (100 packages of 1,000 entries held open cost 70 MB).
struct Opened {
    url: Url,
    /// Empty when the package could not be used (recorded in `failed_parts`).
    file: PathBuf,
}

/// A package a dump names.
struct PackageRef {
    url: Url,
    expected: Expected,
}

/// Where a collection's dump is: its Capability List's `resourcedump`, the document given,
/// or a 2012 Sitemap's dump link (straight to one package).
pub enum DumpLocation {
    Document(Url),
    Opened(Box<OpenedDocument>),
    AlphaPackage(Url),
}

impl DumpLocation {
    /// The dump's URL, for messages.
    pub(crate) fn url(&self) -> &Url {
        match self {
            DumpLocation::Document(u) | DumpLocation::AlphaPackage(u) => u,
            DumpLocation::Opened(d) => &d.url,
        }
    }
}

impl DumpSnapshot {
    /// Download every package and read every manifest. A dump document that cannot be read is
    /// fatal; a package that cannot be fetched or opened is a failed part (no deletes).
    pub(crate) fn read(
        docs: &Documents<'_>,
        http: &Http,
        staging: &Path,
        location: DumpLocation,
        options: ReadOptions,
    ) -> Result<DumpSnapshot, SourceError> {
        let mut snapshot = Snapshot::default();
        let mut refs = Vec::new();
        let (scope_doc, header_at) = match location {
            DumpLocation::AlphaPackage(url) => {
                refs.push(PackageRef {
                    url: url.clone(),
                    expected: Expected::default(),
                });
                (url, None)
            }
            DumpLocation::Document(url) => {
                let doc = docs.fetch(&url, &docs.scope_for(&url))?;
                let at = doc.header().md.at;
                let u = doc.url.clone();
                collect_packages(docs, doc, 0, &mut refs, &mut snapshot)?;
                (u, at)
            }
            DumpLocation::Opened(doc) => {
                let doc = *doc;
                let at = doc.header().md.at;
                let u = doc.url.clone();
                collect_packages(docs, doc, 0, &mut refs, &mut snapshot)?;
                (u, at)
            }
        };
        let scope = Arc::new(docs.scope_for(&scope_doc));
        let mut dump = DumpSnapshot {
            snapshot,
            packages: Vec::new(),
            origin: Vec::new(),
            options,
        };
        let mut manifest_at = None;
        // Packages are downloaded, verified and opened a few at a time, one per core (hashing
        // and reading a manifest are CPU work), and read in the dump's order: at most that
        // many packages' manifests are in memory at once.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut refs = refs.into_iter().peekable();
        while refs.peek().is_some() {
            let batch: Vec<PackageRef> = refs.by_ref().take(workers).collect();
            let opened: Vec<Result<(PathBuf, Package), String>> = std::thread::scope(|s| {
                let readers: Vec<_> = batch
                    .iter()
                    .map(|r| s.spawn(|| open_package(http, r, &scope, staging, options)))
                    .collect();
                readers
                    .into_iter()
                    .map(|h| h.join().expect("a package reader panicked"))
                    .collect()
            });
            for (r, opened) in batch.into_iter().zip(opened) {
                dump.add_package(r.url, opened, &scope, &mut manifest_at);
            }
        }
        // A URI in several manifests counts once, with its later entry (and that entry's
        // bitstream), at the place of its first.
        let (swaps, gone) = snapshot::twice_listed(&dump.snapshot.listed);
        snapshot::keep_the_later(&mut dump.snapshot.listed, &swaps, &gone);
        snapshot::keep_the_later(&mut dump.origin, &swaps, &gone);
        dump.snapshot.at = header_at.or(manifest_at);
        dump.snapshot.anchored = dump.snapshot.at.is_some();
        dump.snapshot.basis = if header_at.is_some() {
            "at of the Resource Dump".into()
        } else if manifest_at.is_some() {
            "at of the dump manifest".into()
        } else {
            "2012-draft dump without a time (unanchored)".into()
        };
        Ok(dump)
    }

    /// Add a package's manifest entries to the snapshot (or its failure to the failed parts).
    fn add_package(
        &mut self,
        url: Url,
        opened: Result<(PathBuf, Package), String>,
        scope: &Arc<Scope>,
        manifest_at: &mut Option<jiff::Timestamp>,
    ) {
        let p = self.packages.len();
        let (file, pkg) = match opened {
            Ok(x) => x,
            Err(reason) => {
                self.snapshot
                    .failed_parts
                    .push(format!("package {url}: {reason}"));
                self.packages.push(Opened {
                    url,
                    file: PathBuf::new(),
                });
                return;
            }
        };
        *manifest_at = manifest_at.or(pkg.manifest_header().md.at);
        for w in pkg.warnings() {
            self.snapshot
                .warnings
                .push(format!("{url}#manifest.xml: {w}"));
        }
        for extra in pkg.extras() {
            self.snapshot.warnings.push(format!(
                "{url}: entry {extra:?} is not in the manifest; ignored"
            ));
        }
        let document: Arc<str> = url.as_str().into();
        self.snapshot.listed.reserve_exact(pkg.entries().len());
        self.origin.reserve_exact(pkg.entries().len());
        for (e, item) in pkg.entries().iter().enumerate() {
            if item.is_deleted() {
                continue;
            }
            if let Err(reason) = scope.check(&item.loc) {
                self.snapshot.refused.push(Refused {
                    uri: item.loc.to_string(),
                    reason: format!("{reason} (manifest of {url}, line {})", item.line),
                });
                continue;
            }
            self.snapshot.listed.push(Listed {
                uri: item.loc.clone(),
                declared: Declared {
                    lastmod: item.lastmod,
                    length: item.length,
                    digests: item.hash.clone(),
                },
                media_type: item.media_type.as_deref().map(media_type),
                duplicates: Vec::new(),
                document: document.clone(),
                line: item.line,
                scope: scope.clone(),
            });
            self.origin.push((p, e));
        }
        self.packages.push(Opened { url, file });
    }

    /// Stage the bitstreams of the listed resources `wanted`, package by package, move them
    /// into the object store and report each as a [`JobResult`]. Nothing from a package that is
    /// refused while staging is reported as fetched.
    ///
    /// Packages are staged a core's worth at a time, in parallel (inflating, hashing and
    /// writing are CPU work), and their results handed to `on_result` (on the calling thread)
    /// in the dump's order, so the catalog records them in the same order on every run. An
    /// error from `on_result` stops the staging.
    pub(crate) fn stage<E>(
        &self,
        wanted: &[usize],
        staging: &Path,
        objects: &ObjectStore,
        mut on_result: impl FnMut(JobResult) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut by_package: Vec<Vec<usize>> = vec![Vec::new(); self.packages.len()];
        for &i in wanted {
            by_package[self.origin[i].0].push(i);
        }
        let work: Vec<(usize, Vec<usize>)> = by_package
            .into_iter()
            .enumerate()
            .filter(|(_, listed)| !listed.is_empty())
            .collect();
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        for round in work.chunks(workers) {
            let results: Vec<Vec<JobResult>> = std::thread::scope(|s| {
                let stagers: Vec<_> = round
                    .iter()
                    .map(|(p, listed)| s.spawn(|| self.stage_package(*p, listed, staging, objects)))
                    .collect();
                stagers
                    .into_iter()
                    .map(|h| h.join().expect("a package stager panicked"))
                    .collect()
            });
            for r in results.into_iter().flatten() {
                on_result(r)?;
            }
        }
        Ok(())
    }

    /// Stage the resources `listed` from package `p` and store them; one result each.
    fn stage_package(
        &self,
        p: usize,
        listed: &[usize],
        staging: &Path,
        objects: &ObjectStore,
    ) -> Vec<JobResult> {
        let failed_all = |reason: String| {
            listed
                .iter()
                .map(|&i| JobResult::Failed {
                    index: i,
                    reason: reason.clone(),
                    refused: false,
                    other_bytes: false,
                    gone: false,
                    unreachable: false,
                })
                .collect()
        };
        let opened = &self.packages[p];
        let reopened = if opened.file.as_os_str().is_empty() {
            Err("could not be used".to_string())
        } else {
            // The same file as read before (our own download in staging).
            Package::open(
                &opened.file,
                &opened.url,
                DumpLimits::default(),
                self.options,
            )
            .map_err(|e| e.to_string())
        };
        let mut package = match reopened {
            Ok(p) => p,
            Err(why) => return failed_all(format!("package {}: {why}", opened.url)),
        };
        let mut staged = Vec::new();
        let mut results = Vec::with_capacity(listed.len());
        for &i in listed {
            match package.stage(self.origin[i].1, staging) {
                Ok(Some(sb)) => staged.push((i, sb)),
                Ok(None) => results.push(JobResult::Failed {
                    index: i,
                    reason: "a deletion has no bitstream".to_string(),
                    refused: false,
                    other_bytes: false,
                    gone: false,
                    unreachable: false,
                }),
                Err(StageError::Entry(e)) => results.push(JobResult::Failed {
                    index: i,
                    // A dump made while the source changed: the manifest written before the
                    // bitstream was copied (a CRC error or corrupt data is damage instead).
                    gone: false,
                    other_bytes: matches!(
                        e.kind,
                        EntryErrorKind::LengthMismatch { .. }
                            | EntryErrorKind::DigestMismatch { .. }
                    ),
                    reason: e.to_string(),
                    refused: false,
                    unreachable: false,
                }),
                Err(StageError::Package(e)) => {
                    for (_, sb) in staged {
                        let _ = std::fs::remove_file(&sb.path);
                    }
                    return failed_all(format!("package refused, nothing from it is kept: {e}"));
                }
            }
        }
        for (i, sb) in staged {
            results.push(match objects.ingest(&sb.path, &sb.computed.sha256_hex) {
                Ok(_) => JobResult::Fetched(
                    i,
                    Box::new(Fetched {
                        computed: sb.computed,
                        final_url: opened.url.clone(),
                        etag: None,
                        last_modified: None,
                        media_type: None,
                        via: crate::model::Via::Dump,
                    }),
                ),
                Err(e) => {
                    let _ = std::fs::remove_file(&sb.path);
                    JobResult::Failed {
                        index: i,
                        reason: format!("cannot store object: {e}"),
                        refused: false,
                        other_bytes: false,
                        gone: false,
                        unreachable: false,
                    }
                }
            });
        }
        results
    }
}

impl Drop for DumpSnapshot {
    fn drop(&mut self) {
        // The package files are downloads in flight: gone when the run is done with them.
        for p in &self.packages {
            if !p.file.as_os_str().is_empty() {
                let _ = std::fs::remove_file(&p.file);
            }
        }
    }
}

/// Download a package to `staging` (verified against the dump's length and digests) and open
/// it with the hostile-package reader; a failed download or package is removed.
fn open_package(
    http: &Http,
    r: &PackageRef,
    scope: &Scope,
    staging: &Path,
    options: ReadOptions,
) -> Result<(PathBuf, Package), String> {
    let staged =
        fetch_to_staging(http, &r.url, scope, staging, &r.expected).map_err(|e| e.to_string())?;
    match Package::open(&staged.file, &r.url, DumpLimits::default(), options) {
        Ok(pkg) => Ok((staged.file, pkg)),
        Err(e) => {
            let _ = std::fs::remove_file(&staged.file);
            Err(e.to_string())
        }
    }
}

/// Read a Resource Dump (or Dump Index) document into package references.
fn collect_packages(
    docs: &Documents<'_>,
    mut doc: OpenedDocument,
    depth: usize,
    refs: &mut Vec<PackageRef>,
    snapshot: &mut Snapshot,
) -> Result<(), SourceError> {
    match doc.header().capability() {
        Some(Capability::ResourceDump) => {}
        other => {
            return Err(SourceError::Unusable {
                url: doc.url.to_string(),
                message: format!(
                    "expected a Resource Dump, found a {} document",
                    other
                        .map(|c| c.name().to_string())
                        .unwrap_or_else(|| "plain sitemap".into())
                ),
            })
        }
    }
    let index = doc.header().root == Root::SitemapIndex;
    let scope = docs.scope_for(&doc.url);
    let mut count = 0;
    let mut children = Vec::new();
    while let Some(e) = doc.reader.next_entry()? {
        count += 1;
        if let Err(reason) = scope.check(&e.loc) {
            snapshot
                .failed_parts
                .push(format!("{}: refused: {reason}", e.loc));
            continue;
        }
        if index {
            children.push(e.loc);
        } else {
            refs.push(PackageRef {
                url: e.loc,
                expected: Expected {
                    length: e.md.length,
                    digests: e.md.hash,
                    media_type: None,
                },
            });
        }
    }
    for w in doc.reader.take_warnings() {
        snapshot.warnings.push(format!("{}: {w}", doc.url));
    }
    snapshot.documents.push(doc.record(count));
    for child in children {
        if depth + 1 > MAX_DEPTH {
            snapshot
                .failed_parts
                .push(format!("{child}: Resource Dump Indexes nested too deep"));
            continue;
        }
        match docs.fetch(&child, &scope) {
            Ok(d) => collect_packages(docs, d, depth + 1, refs, snapshot)?,
            Err(e) => snapshot.failed_parts.push(e.to_string()),
        }
    }
    Ok(())
}

impl crate::engine::snapshot::Packages for DumpSnapshot {
    fn stage(
        &self,
        wanted: &[usize],
        staging: &Path,
        objects: &ObjectStore,
        on_result: &mut dyn FnMut(JobResult) -> Result<(), crate::error::Error>,
    ) -> Result<(), crate::error::Error> {
        DumpSnapshot::stage(self, wanted, staging, objects, on_result)
    }
}
