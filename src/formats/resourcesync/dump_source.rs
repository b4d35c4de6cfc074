//! A Resource Dump as the source of a baseline's bytes (ResourceSync 1.1 §6, §9; the 2012
//! draft's `xhtml:link rel="http://www.openarchives.org/rs/dump"`).
//!
//! Every package is downloaded to `staging/` (verified against the dump entry's length and
//! digests when given) and opened by the hostile-package reader (`rs::dump`); each manifest is
//! read as a stream into the run's [`Listing`] (on disk, with each entry's place in its
//! manifest), which the shared plan compares with the mirror exactly as a Resource List's. When
//! the bytes are needed they are staged from the packages, package by package, each manifest
//! read again as a stream beside its bitstreams: a package refused half-way (a header that lies,
//! say) contributes nothing, and each bitstream lands under its `<loc>` exactly as if it had
//! been fetched by HTTP. Memory is flat in the size of a dump: only a package's directory (the
//! ZIP reader's, about 250 bytes an entry, with 16 bytes an entry of our own) and the places
//! of its wanted entries (16 bytes each) grow with the size of one package.

use crate::engine::apply::{Fetched, JobResult};
use crate::engine::documents::{Documents, OpenedDocument};
use crate::engine::listing::Listing;
use crate::engine::plan::{Declared, Listed};
use crate::error::{Error, SourceError};
use crate::formats::resourcesync::snapshot::{Refused, Snapshot};
use crate::net::one::fetch_to_staging;
use crate::net::{Expected, Http, Scope};
use crate::rs::document::{media_type, Capability, Root};
use crate::rs::dump::{Bitstreams, DumpError, DumpLimits, EntryErrorKind, Package, StageError};
use crate::rs::sitemap::ReadOptions;
use crate::store::{ObjectStore, StoreError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use url::Url;

/// The 2012 draft's link from a Sitemap to its dump package.
pub const ALPHA_DUMP_REL: &str = "http://www.openarchives.org/rs/dump";
/// How deep Resource Dump Indexes may nest.
const MAX_DEPTH: usize = 3;

/// A snapshot read from dump manifests (its entries in the [`Listing`] it was read into), with
/// the packages that hold its bytes.
pub struct DumpSnapshot {
    pub snapshot: Snapshot,
    /// Every package, in the dump's order.
    packages: Vec<Opened>,
    /// A package's place in `packages`, by URL (the listing's document of its entries).
    by_url: HashMap<String, usize>,
    options: ReadOptions,
}

/// A downloaded package. Its manifest and ZIP directory are read to list its entries, then
/// let go, and read again when its bitstreams are staged: only one package's directory is in
/// memory at a time while staging.
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

fn failed(index: usize, reason: String) -> JobResult {
    JobResult::Failed {
        index,
        reason,
        refused: false,
        other_bytes: false,
        gone: false,
        unreachable: false,
    }
}

impl DumpSnapshot {
    /// Download every package and read every manifest into `listing`. A dump document that
    /// cannot be read is fatal; a package that cannot be fetched or opened is a failed part (no
    /// deletes); an error of the listing itself (a full disk) stops the reading.
    pub(crate) fn read(
        docs: &Documents<'_>,
        http: &Http,
        staging: &Path,
        location: DumpLocation,
        options: ReadOptions,
        listing: &mut Listing,
    ) -> Result<DumpSnapshot, Error> {
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
        // A package named twice is read once: its entries would all be listed twice.
        let mut named = std::collections::HashSet::new();
        refs.retain(|r| {
            let first = named.insert(r.url.to_string());
            if !first {
                snapshot.warnings.push(format!(
                    "{}: the dump names this package more than once; read once",
                    r.url
                ));
            }
            first
        });
        drop(named);
        let scope = Arc::new(docs.scope_for(&scope_doc));
        let mut dump = DumpSnapshot {
            snapshot,
            packages: Vec::new(),
            by_url: HashMap::new(),
            options,
        };
        let mut manifest_at = None;
        // Packages are downloaded and verified a few at a time, one per core (hashing is CPU
        // work); each is then opened and its manifest read into the listing here, one at a
        // time in the dump's order: the directory of a package of 200,000 entries (about 50 MB
        // in the ZIP reader) is held once.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut refs = refs.into_iter().peekable();
        while refs.peek().is_some() {
            let batch: Vec<PackageRef> = refs.by_ref().take(workers).collect();
            let fetched: Vec<Result<PathBuf, PackageFault>> = std::thread::scope(|s| {
                let readers: Vec<_> = batch
                    .iter()
                    .map(|r| s.spawn(|| fetch_package(http, r, &scope, staging)))
                    .collect();
                readers
                    .into_iter()
                    .map(|h| h.join().expect("a package download panicked"))
                    .collect()
            });
            // A full disk (or the --min-free margin reached): no package after it can land
            // either. One message for the run, not a failed part per package and a failed
            // resource per entry; nothing of the batch stays in staging.
            let full = fetched.iter().find_map(|f| match f {
                Err(PackageFault::NoSpace(message)) => Some(message.clone()),
                _ => None,
            });
            if let Some(message) = full {
                for file in fetched.into_iter().flatten() {
                    let _ = std::fs::remove_file(file);
                }
                let left: Vec<PackageRef> = batch.into_iter().chain(refs).collect();
                let declared: u64 = left.iter().filter_map(|r| r.expected.length).sum();
                let declared = match declared {
                    0 => String::new(),
                    n => format!(" ({} declared)", crate::report::human_bytes(n)),
                };
                let needed = format!(", with {} packages left to download{declared}", left.len());
                return Err(crate::engine::context::no_space(staging, message, needed));
            }
            for (r, fetched) in batch.into_iter().zip(fetched) {
                let opened = fetched
                    .map_err(|(PackageFault::NoSpace(why) | PackageFault::Other(why))| why)
                    .and_then(|file| open_package(file, &r.url, options));
                dump.add_package(r.url, opened, &scope, &mut manifest_at, listing)?;
            }
        }
        dump.snapshot.warnings.extend(listing.take_warnings());
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

    /// Read a package's manifest into `listing` (or record its failure in the failed parts:
    /// nothing from a package refused half-way through its manifest stays listed).
    fn add_package(
        &mut self,
        url: Url,
        opened: Result<(PathBuf, Package), String>,
        scope: &Arc<Scope>,
        manifest_at: &mut Option<jiff::Timestamp>,
        listing: &mut Listing,
    ) -> Result<(), StoreError> {
        let p = self.packages.len();
        self.by_url.insert(url.to_string(), p);
        let (file, mut pkg) = match opened {
            Ok(x) => x,
            Err(reason) => {
                self.unusable(url, reason);
                return Ok(());
            }
        };
        let document: Arc<str> = url.as_str().into();
        let refused_before = self.snapshot.refused.len();
        let refused = &mut self.snapshot.refused;
        let streamed = pkg.stream(|e, item, _| {
            if item.is_deleted() {
                return Ok(());
            }
            if let Err(reason) = scope.check(&item.loc) {
                refused.push(Refused {
                    uri: item.loc.to_string(),
                    reason: format!("{reason} (manifest of {url}, line {})", item.line),
                });
                return Ok(());
            }
            let listed = Listed {
                uri: item.loc,
                declared: Declared {
                    lastmod: item.lastmod,
                    length: item.length,
                    digests: item.hash,
                    encoding: item.encoding,
                    categories: Vec::new(),
                },
                media_type: item.media_type.as_deref().map(media_type),
                duplicates: Vec::new(),
                document: document.clone(),
                line: item.line,
                scope: scope.clone(),
            };
            listing.push_entry(listed, Some(e as u64))
        });
        match streamed {
            Ok(Ok(())) => {}
            Ok(Err(store)) => return Err(store),
            Err(refusal) => {
                listing.drop_document(url.as_str())?;
                self.snapshot.refused.truncate(refused_before);
                let _ = std::fs::remove_file(&file);
                self.unusable(url, refusal.to_string());
                return Ok(());
            }
        }
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
        self.packages.push(Opened { url, file });
        Ok(())
    }

    /// A package that cannot be used: a failed part.
    fn unusable(&mut self, url: Url, reason: String) {
        self.snapshot
            .failed_parts
            .push(format!("package {url}: {reason}"));
        self.packages.push(Opened {
            url,
            file: PathBuf::new(),
        });
    }

    /// Stage the listing's entries to fetch from the packages, package by package, move them
    /// into the object store and report each as a [`JobResult`], in the dump's order (so that
    /// the catalog records them in the same order on every run). Nothing from a package that is
    /// refused is reported as fetched (or put in the store): each package is read through
    /// before anything is staged from it.
    ///
    /// The packages are staged on a thread of their own (reading, inflating, hashing and
    /// writing), their results handed to `on_result` here a thousand at a time as they come.
    /// An error from `on_result` stops the staging.
    pub(crate) fn stage<E: From<StoreError>>(
        &self,
        listing: &Listing,
        staging: &Path,
        objects: &ObjectStore,
        mut on_result: impl FnMut(JobResult) -> Result<(), E>,
    ) -> Result<(), E> {
        type Work = (usize, Vec<(usize, u64)>);
        std::thread::scope(|s| {
            let (to_stager, work) = crossbeam_channel::bounded::<Work>(1);
            let (staged, results) = crossbeam_channel::bounded::<Vec<JobResult>>(4);
            s.spawn(move || {
                for (p, wanted) in work {
                    let mut send = |chunk| staged.send(chunk).is_ok();
                    if !self.stage_package(p, &wanted, staging, objects, &mut send) {
                        return;
                    }
                }
            });
            let mut hand_on = |chunk: Vec<JobResult>| -> Result<(), E> {
                for r in chunk {
                    on_result(r)?;
                }
                Ok(())
            };
            // A package's wanted entries go to the stager when they are all read; results
            // are taken back while waiting for it to take them.
            let mut give = |g: Work| -> Result<(), E> {
                let mut g = Some(g);
                while let Some(w) = g.take() {
                    crossbeam_channel::select! {
                        send(to_stager, w) -> sent => sent.expect("the stager takes work until it is dropped"),
                        recv(results) -> chunk => {
                            g = Some(w);
                            if let Ok(chunk) = chunk {
                                hand_on(chunk)?;
                            }
                        }
                    }
                }
                Ok(())
            };
            let mut group: Option<Work> = None;
            listing.each_packaged_todo(|ord, document, entry| {
                let p = self.by_url.get(document).copied().unwrap_or(usize::MAX);
                if group.as_ref().is_some_and(|(q, _)| *q != p) {
                    give(group.take().expect("a group"))?;
                }
                group
                    .get_or_insert_with(|| (p, Vec::new()))
                    .1
                    .push((ord, entry));
                Ok::<(), E>(())
            })?;
            if let Some(g) = group.take() {
                give(g)?;
            }
            drop(to_stager);
            for chunk in results {
                hand_on(chunk)?;
            }
            Ok(())
        })
    }

    /// Stage the `wanted` entries (position in the listing, place in the manifest, in manifest
    /// order) of package `p` into the store, each result to `send` in chunks (false: nobody
    /// takes them any more; then this says false too). The package is read through first
    /// ([`Bitstreams::verify`]): a package refused on the way contributes nothing, every
    /// entry fails with why.
    fn stage_package(
        &self,
        p: usize,
        wanted: &[(usize, u64)],
        staging: &Path,
        objects: &ObjectStore,
        send: &mut dyn FnMut(Vec<JobResult>) -> bool,
    ) -> bool {
        const CHUNK: usize = 1024;
        let mut fail_all = |reason: String| {
            wanted
                .chunks(CHUNK)
                .all(|c| send(c.iter().map(|&(i, _)| failed(i, reason.clone())).collect()))
        };
        let Some(opened) = self.packages.get(p) else {
            return fail_all("not in any package of the dump".into());
        };
        let reopened = if opened.file.as_os_str().is_empty() {
            Err("could not be used".to_string())
        } else {
            // The same file as read before (our own download in staging).
            Package::open_streamed(
                &opened.file,
                &opened.url,
                DumpLimits::default(),
                self.options,
            )
            .map_err(|e| e.to_string())
        };
        let mut package = match reopened {
            Ok(p) => p,
            Err(why) => return fail_all(format!("package {}: {why}", opened.url)),
        };
        let refused = |e: DumpError| format!("package refused, nothing from it is kept: {e}");
        // First through: the package as a whole.
        let mut next = wanted.iter().peekable();
        let verified = package.stream(|e, item, bits| {
            let Some(&&(_, want)) = next.peek() else {
                return Err(Stop::Done);
            };
            if want == e as u64 {
                next.next();
                bits.verify(&item).map_err(Stop::Refused)?;
            }
            Ok(())
        });
        match verified {
            Ok(Ok(()) | Err(Stop::Done | Stop::Gone)) => {}
            Ok(Err(Stop::Refused(e))) | Err(e) => return fail_all(refused(e)),
        }
        // Then staged, the results sent as they come.
        let mut chunk = Vec::with_capacity(CHUNK);
        let mut next = wanted.iter().peekable();
        let staged = package.stream(|e, item, bits| {
            let Some(&&(i, want)) = next.peek() else {
                return Err(Stop::Done);
            };
            if want != e as u64 {
                return Ok(());
            }
            next.next();
            chunk.push(self.stage_one(i, &item, bits, staging, objects, &opened.url));
            if chunk.len() == CHUNK
                && !send(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK)))
            {
                return Err(Stop::Gone);
            }
            Ok(())
        });
        let stopped = match staged {
            Ok(Ok(()) | Err(Stop::Done)) => None,
            Ok(Err(Stop::Gone)) => return false,
            // Read through above without fault: only a file changed under the run (our own
            // download) gets here. What was staged before stays, each entry verified.
            Ok(Err(Stop::Refused(e))) | Err(e) => Some(refused(e)),
        };
        // Entries the manifest no longer names (the file is our own download: never).
        for &(i, entry) in next {
            chunk.push(failed(
                i,
                stopped.clone().unwrap_or_else(|| {
                    format!("package {}: no entry {entry} in its manifest", opened.url)
                }),
            ));
        }
        chunk.is_empty() || send(chunk)
    }

    /// Stage one manifest entry of a package read through and store it.
    fn stage_one(
        &self,
        i: usize,
        item: &crate::rs::dump::ManifestItem,
        bits: &mut Bitstreams,
        staging: &Path,
        objects: &ObjectStore,
        url: &Url,
    ) -> JobResult {
        // The --min-free margin, kept here as on the list's path: the bitstream is about to
        // take its length in staging, then in the store.
        let length = item.length.unwrap_or(0);
        if let Err(message) =
            crate::store::space::room_left(staging, crate::store::space::min_free(), length)
        {
            return JobResult::NoSpace(message);
        }
        match bits.stage(item, staging) {
            Ok(Some(sb)) => match objects.ingest(&sb.path, &sb.computed.sha256_hex) {
                Ok(_) => JobResult::Fetched(
                    i,
                    Box::new(Fetched {
                        computed: sb.computed,
                        final_url: url.clone(),
                        etag: None,
                        last_modified: None,
                        media_type: None,
                        content_encoding: None,
                        via: crate::model::Via::Dump,
                    }),
                ),
                Err(e) => {
                    let _ = std::fs::remove_file(&sb.path);
                    if crate::net::is_no_space(&e) {
                        return JobResult::NoSpace(format!("cannot store object: {e}"));
                    }
                    failed(i, format!("cannot store object: {e}"))
                }
            },
            Ok(None) => failed(i, "a deletion has no bitstream".to_string()),
            // The disk, not the entry: the run stops with one message.
            Err(StageError::Entry(e))
                if matches!(&e.kind, EntryErrorKind::Staging { source, .. }
                    if crate::net::is_no_space(source)) =>
            {
                JobResult::NoSpace(e.to_string())
            }
            Err(StageError::Entry(e)) => JobResult::Failed {
                index: i,
                // A dump made while the source changed: the manifest written before the
                // bitstream was copied (a CRC error or corrupt data is damage instead).
                gone: false,
                other_bytes: matches!(
                    e.kind,
                    EntryErrorKind::LengthMismatch { .. } | EntryErrorKind::DigestMismatch { .. }
                ),
                reason: e.to_string(),
                refused: false,
                unreachable: false,
            },
            Err(StageError::Package(e)) => failed(
                i,
                format!("package refused, nothing more from it is kept: {e}"),
            ),
        }
    }
}

/// Why reading a package's manifest stopped before its end.
enum Stop {
    /// Every wanted entry is done.
    Done,
    /// The package is refused.
    Refused(DumpError),
    /// Nobody takes the results any more.
    Gone,
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

/// Why a package did not download.
enum PackageFault {
    /// The mirror's disk is full, or would be under the --min-free margin: the run stops.
    NoSpace(String),
    /// The package's own failure: a failed part of the dump.
    Other(String),
}

/// Download a package to `staging`, verified against the dump's length and digests; not
/// begun when its declared length would take the disk under the --min-free margin.
fn fetch_package(
    http: &Http,
    r: &PackageRef,
    scope: &Scope,
    staging: &Path,
) -> Result<PathBuf, PackageFault> {
    let length = r.expected.length.unwrap_or(0);
    crate::store::space::room_left(staging, crate::store::space::min_free(), length)
        .map_err(PackageFault::NoSpace)?;
    match fetch_to_staging(http, &r.url, scope, staging, &r.expected) {
        Ok(staged) => Ok(staged.file),
        Err(e) if e.is_no_space() => Err(PackageFault::NoSpace(e.to_string())),
        Err(e) => Err(PackageFault::Other(e.to_string())),
    }
}

/// Open a downloaded package with the hostile-package reader (its manifest is read later, as
/// a stream); a package that cannot be opened is removed.
fn open_package(
    file: PathBuf,
    url: &Url,
    options: ReadOptions,
) -> Result<(PathBuf, Package), String> {
    match Package::open_streamed(&file, url, DumpLimits::default(), options) {
        Ok(pkg) => Ok((file, pkg)),
        Err(e) => {
            let _ = std::fs::remove_file(&file);
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
        listing: &Listing,
        staging: &Path,
        objects: &ObjectStore,
        on_result: &mut dyn FnMut(JobResult) -> Result<(), Error>,
    ) -> Result<(), Error> {
        DumpSnapshot::stage(self, listing, staging, objects, on_result)
    }
}
