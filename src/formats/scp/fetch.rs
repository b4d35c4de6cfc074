//! Fetching SCP documents: the sitemap (into memory, through the SCP sitemap reader) and
//! collection files (streamed to a file under `staging/`), both with conditional GETs from the
//! stored ETag / Last-Modified (SCP 0.1, "HTTP Caching": crawlers MUST store the validators of
//! every 200, SHOULD send both on re-fetch, and MUST treat 304 as "use the cached copy").
//!
//! The bytes are staged exactly as served (gzip / zstd / plain; our agent asks for
//! `Accept-Encoding: identity` and never decodes), so the collection reader can enforce the
//! ratio and size limits itself and the staged length is the compressed size. A staged file
//! removes itself when dropped: staging never outlives the run that wrote it. What a
//! collection contains, and whether it may be used, is the reader's and `scp_apply`'s business.

use crate::engine::discover::Prefetched;
use crate::error::SourceError;
use crate::formats::scp::read::sitemap::{read_sitemap, ScpSitemap, DEFAULT_MAX_BYTES};
use crate::formats::scp::read::{CollectionReader, Limits};
use crate::net::agent::DocumentResponse;
use crate::net::{FetchError, Http, Scope, Validators};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use url::Url;

const READ_BUFFER: usize = 256 * 1024;

/// A sitemap as read, with where it came from.
#[derive(Debug)]
pub struct FetchedSitemap {
    /// After redirects: collection URLs are resolved and scoped against it.
    pub url: Url,
    pub sitemap: ScpSitemap,
    pub validators: Validators,
}

/// Fetch and read an SCP sitemap; `Ok(None)` is a 304 (only possible with validators). A
/// `file:` URL (the user's own SOURCE) is read from disk.
pub(crate) fn sitemap(
    http: &Http,
    url: &Url,
    scope: &Scope,
    validators: &Validators,
) -> Result<Option<FetchedSitemap>, SourceError> {
    let (final_url, validators, read) = if url.scheme() == "file" {
        let path = url.to_file_path().map_err(|_| SourceError::Unusable {
            url: url.to_string(),
            message: "not a local file path".into(),
        })?;
        let file = File::open(&path).map_err(|source| SourceError::Local {
            path: path.display().to_string(),
            source,
        })?;
        (
            url.clone(),
            Validators::default(),
            read_sitemap(file, url, DEFAULT_MAX_BYTES),
        )
    } else {
        match http.get(url, scope, validators)? {
            DocumentResponse::NotModified => return Ok(None),
            DocumentResponse::Body(body) => {
                let read = read_sitemap(body.reader, &body.final_url, DEFAULT_MAX_BYTES);
                (body.final_url, body.validators, read)
            }
        }
    };
    read_as_scp(read, final_url, validators).map(Some)
}

/// The sitemap a baseline takes: as discovery received it, else fetched.
pub(crate) fn sitemap_to_take(
    docs: &crate::engine::documents::Documents<'_>,
    url: &Url,
    received: Option<Prefetched>,
) -> Result<FetchedSitemap, SourceError> {
    match received {
        Some(p) => sitemap_received(p),
        None => Ok(
            sitemap(docs.http, url, &docs.scope_for(url), &Validators::default())?
                .expect("an unconditional GET is never answered 304"),
        ),
    }
}

/// A collection read straight from the source through the collection reader, nothing staged
/// (audit and dry runs: what they read is never stored). `Err`: why it could not be had.
/// As for [`collection`], the collection's own host is admitted besides `scope`.
pub(crate) fn stream(
    http: &Http,
    url: &Url,
    scope: &Scope,
    limits: &Limits,
) -> Result<CollectionReader<Box<dyn Read + Send>>, String> {
    let limits = Limits {
        max_compressed_bytes: collection_bound(http, limits.max_compressed_bytes),
        ..*limits
    };
    match http.get(url, &scope.and_host_of(url), &Validators::default()) {
        Ok(DocumentResponse::Body(body)) => {
            CollectionReader::open(body.reader, &limits).map_err(|e| format!("rejected: {e}"))
        }
        Ok(DocumentResponse::NotModified) => unreachable!("an unconditional GET"),
        Err(e) => Err(e.to_string()),
    }
}

/// An SCP sitemap discovery already received (`engine::discover`): read, not fetched again.
pub(crate) fn sitemap_received(p: Prefetched) -> Result<FetchedSitemap, SourceError> {
    let read = read_sitemap(&p.bytes[..], &p.url, DEFAULT_MAX_BYTES);
    read_as_scp(read, p.url, p.validators)
}

fn read_as_scp<E: std::fmt::Display>(
    read: Result<Option<ScpSitemap>, E>,
    final_url: Url,
    validators: Validators,
) -> Result<FetchedSitemap, SourceError> {
    match read {
        Ok(Some(sitemap)) => Ok(FetchedSitemap {
            url: final_url,
            sitemap,
            validators,
        }),
        Ok(None) => Err(SourceError::Unusable {
            url: final_url.to_string(),
            message: "not an SCP sitemap: no element in the SCP namespace".into(),
        }),
        Err(e) => Err(SourceError::Unusable {
            url: final_url.to_string(),
            message: format!("unreadable SCP sitemap: {e}"),
        }),
    }
}

/// A collection file in `staging/`, exactly as served. Removed when dropped.
#[derive(Debug)]
pub struct StagedCollection {
    pub path: PathBuf,
    /// After redirects.
    pub final_url: Url,
    pub validators: Validators,
    /// Bytes received (the compressed size).
    pub bytes: u64,
    pub content_encoding: Option<String>,
}

impl Drop for StagedCollection {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What a conditional GET of a collection gave.
#[derive(Debug)]
pub enum CollectionResponse {
    NotModified,
    Staged(StagedCollection),
}

/// GET a collection into a new staging file (conditional when `validators` are given); more
/// than `max_bytes`, or than `--max-size` when that is smaller, is refused without reading
/// further, as is a body still arriving after `--max-time` (`--min-rate` is the agent's).
/// A body that breaks off is fetched again within the agent's retry budget. The site's
/// sitemap names the collection: its host (a CDN's, as SCP 0.1's own examples have it) is
/// admitted besides `scope`, the sitemap's; the pages inside it are held to `scope`.
pub(crate) fn collection(
    http: &Http,
    url: &Url,
    scope: &Scope,
    staging: &Path,
    validators: &Validators,
    max_bytes: u64,
) -> Result<CollectionResponse, FetchError> {
    let cfg = http.config();
    let max_bytes = collection_bound(http, max_bytes);
    let mut retries = http.retries();
    let scope = scope.and_host_of(url);
    loop {
        let body = match http.get_with(url, &scope, validators, &mut retries)? {
            DocumentResponse::NotModified => return Ok(CollectionResponse::NotModified),
            DocumentResponse::Body(body) => body,
        };
        let started = Instant::now();
        if body.content_length.is_some_and(|n| n > max_bytes) {
            return Err(FetchError::TooLarge {
                url: body.final_url.to_string(),
                max: max_bytes,
            });
        }
        let mut part = Part::create(staging)?;
        let final_url = body.final_url.clone();
        let mut reader = body.reader;
        let mut buf = vec![0u8; READ_BUFFER];
        let mut received = 0u64;
        let outcome = loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(http.read_error(&final_url, e)),
            };
            received += n as u64;
            if received > max_bytes {
                return Err(FetchError::TooLarge {
                    url: final_url.to_string(),
                    max: max_bytes,
                });
            }
            if let Some(max_time) = cfg.max_time.filter(|t| started.elapsed() > *t) {
                // As for a resource: final, not retried.
                return Err(crate::net::fetch::past_max_time(
                    final_url.to_string(),
                    max_time,
                    received,
                ));
            }
            part.write(&buf[..n])?;
        };
        let outcome = outcome.and_then(|()| match body.content_length {
            Some(announced) if received < announced => Err(FetchError::Transport {
                url: final_url.to_string(),
                message: format!("truncated transfer: {received} of {announced} bytes"),
            }),
            _ => Ok(()),
        });
        match outcome {
            Ok(()) => {
                let path = part.keep()?;
                return Ok(CollectionResponse::Staged(StagedCollection {
                    path,
                    final_url,
                    validators: body.validators,
                    bytes: received,
                    content_encoding: body.content_encoding,
                }));
            }
            // The body broke off: worth another GET while the budget lasts.
            Err(e) => match retries.next_wait(None) {
                Some(wait) => std::thread::sleep(wait),
                None => return Err(e),
            },
        }
    }
}

/// The most bytes of a collection as received: `limit` (SCP's, 50 GiB), or `--max-size` when
/// that is smaller. A collection is fetched like a resource, and the same bound holds: SCP's
/// limit alone would let an endless body fill the disk (or hold a dry run) first.
fn collection_bound(http: &Http, limit: u64) -> u64 {
    match http.config().max_size {
        0 => limit,
        max_size => limit.min(max_size),
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A `.scp.part` file being written; removed unless kept.
struct Part {
    path: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl Part {
    fn create(staging: &Path) -> Result<Part, FetchError> {
        let mut last_error = None;
        // A leftover with the same name (a crashed run with our pid) is skipped, never reused.
        for _ in 0..1000 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = staging.join(format!("{}-scp-{n}.part", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    return Ok(Part {
                        path,
                        writer: Some(BufWriter::with_capacity(READ_BUFFER, file)),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
                Err(e) => return Err(staging_error(&path, e)),
            }
        }
        Err(FetchError::Staging(last_error.unwrap_or_else(|| {
            io::Error::other("no free staging file name")
        })))
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), FetchError> {
        let w = self.writer.as_mut().expect("not kept yet");
        w.write_all(bytes).map_err(|e| staging_error(&self.path, e))
    }

    fn keep(mut self) -> Result<PathBuf, FetchError> {
        let w = self.writer.take().expect("kept once");
        w.into_inner()
            .map_err(|e| staging_error(&self.path, e.into_error()))?;
        Ok(std::mem::take(&mut self.path))
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn staging_error(path: &Path, e: io::Error) -> FetchError {
    FetchError::Staging(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}
