//! Fetch-to-staging: one resource from the source into a new file under `staging/`, hashed in
//! the same pass that writes it.
//!
//! The body streams through a fixed buffer into a new file ([`NewFile`]: anonymous where the
//! file system allows, for a resource headed for the store; a uniquely named `.part` file for
//! a package or collection that is read from its path); the declared length bounds it (we
//! stop as soon as more arrives) and every usable declared digest is checked at the end.
//! Bytes are hashed exactly as received: a `Content-Encoding` the source sent despite
//! `Accept-Encoding: identity` is recorded in [`Staged`], not decoded. Any failure removes
//! the file. Durability (syncfs, putting the file into `objects/`) is the store's business,
//! done per batch; the catalog is not touched here.

use crate::net::{FetchError, Http};
use crate::rs::digest::{mismatches, Algorithm, Computed, Digest, Hasher};
use crate::store::new_file::NewFile;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use url::Url;

/// Read buffer size; writes go through a larger `BufWriter`.
const READ_BUFFER: usize = 64 * 1024;

thread_local! {
    /// Each worker's read buffer, kept between fetches: a fresh zeroed 64 KiB per resource
    /// (and a 256 KiB write buffer, mapped and unmapped by malloc each time) cost more than
    /// the copy of an 8 KiB resource itself.
    static READ_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The thread's read buffer, given back when dropped.
struct ReadBuffer(Vec<u8>);

impl ReadBuffer {
    fn take() -> ReadBuffer {
        let mut buf = READ_BUF.take();
        if buf.len() < READ_BUFFER {
            buf = vec![0u8; READ_BUFFER];
        }
        ReadBuffer(buf)
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        READ_BUF.set(std::mem::take(&mut self.0));
    }
}

/// What the source declared about a representation.
#[derive(Debug, Clone, Default)]
pub struct Expected {
    pub length: Option<u64>,
    pub digests: Vec<Digest>,
    /// The media type the list declares (`rs:md/@type`).
    pub media_type: Option<String>,
}

/// The essence of a media type (`type/subtype`, lower case, no parameters).
fn essence(media_type: &str) -> String {
    let t = media_type.split(';').next().unwrap_or("");
    t.trim().to_ascii_lowercase()
}

/// A page served as HTML where the list declares a media type that is not HTML: what a login
/// page, an error page served with 200, or a catch-all of another site gives. It is never
/// the resource, and never a change of it (a listed type that differs otherwise, such as
/// `application/octet-stream` served for a PDF, is a server's labelling and is kept).
pub(crate) fn check_media_type(
    url: &str,
    expected: &Expected,
    served: Option<&str>,
) -> Result<(), FetchError> {
    const HTML: [&str; 2] = ["text/html", "application/xhtml+xml"];
    // Types that say only "bytes" (RFC 2046 §4.5.1) contradict nothing.
    const ANY: [&str; 4] = ["", "application/octet-stream", "binary/octet-stream", "*/*"];
    let (Some(declared), Some(served)) = (expected.media_type.as_deref(), served) else {
        return Ok(());
    };
    let (declared, served) = (essence(declared), essence(served));
    if HTML.contains(&served.as_str())
        && !HTML.contains(&declared.as_str())
        && !ANY.contains(&declared.as_str())
    {
        return Err(FetchError::NotAsListed {
            url: url.to_string(),
            served,
            declared,
        });
    }
    Ok(())
}

/// A verified file in `staging/`, not yet in the object store: its path
/// ([`fetch_to_staging`]) or the open new file ([`fetch_new_object`]).
#[derive(Debug)]
pub struct Staged<F = PathBuf> {
    pub file: F,
    pub computed: Computed,
    pub final_url: url::Url,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The `Content-Type` header as served.
    pub media_type: Option<String>,
    /// `Content-Encoding` as served (never `identity`); the staged bytes are still encoded.
    pub content_encoding: Option<String>,
}

/// Read `url` from its `--map` folder into a new file in `folder`, as a GET would have
/// fetched it: the declared length and digests are checked the same way.
pub(crate) fn fetch_mapped(
    http: &Http,
    url: &Url,
    folder: &Path,
    expected: &Expected,
    create: fn(&Path) -> io::Result<NewFile>,
) -> Result<Staged<NewFile>, FetchError> {
    let Some(body) = http.mapped(url)? else {
        return Err(FetchError::MapNotFound {
            url: url.to_string(),
            path: String::new(),
        });
    };
    let url_text = url.to_string();
    check_announced(&url_text, expected, body.content_length)?;
    let mut part = create(folder).map_err(|e| staging_error(folder, e))?;
    let mut reader = body.reader;
    let mut hasher = hasher_for(expected);
    let mut buf = ReadBuffer::take();
    let buf = &mut buf.0;
    let mut received: u64 = 0;
    loop {
        let n = match reader.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(http.read_error(url, e)),
        };
        received += n as u64;
        check_received(&url_text, expected, received)?;
        hasher.update(&buf[..n]);
        part.write_all(&buf[..n])
            .map_err(|e| staging_error(&part.describe(), e))?;
    }
    // A mapped file that shrank while it was read.
    if let Some(announced) = body.content_length {
        if received < announced {
            return Err(truncated(url_text, received, announced));
        }
    }
    let computed = verify(url_text, expected, received, hasher)?;
    Ok(Staged {
        file: part,
        computed,
        final_url: url.clone(),
        etag: None,
        last_modified: None,
        media_type: None,
        content_encoding: None,
    })
}

/// The hasher for a body: md5 and sha-256 always, sha-1 when a usable one was declared.
pub(crate) fn hasher_for(expected: &Expected) -> Hasher {
    let with_sha1 = expected
        .digests
        .iter()
        .any(|d| d.algorithm == Algorithm::Sha1 && d.is_usable());
    Hasher::new(with_sha1)
}

/// The server announced a length other than the source declared: no need to download.
pub(crate) fn check_announced(
    url: &str,
    expected: &Expected,
    announced: Option<u64>,
) -> Result<(), FetchError> {
    match (expected.length, announced) {
        (Some(declared), Some(announced)) if declared != announced => {
            Err(FetchError::LengthMismatch {
                url: url.to_string(),
                expected: declared,
                actual: announced,
            })
        }
        _ => Ok(()),
    }
}

/// More has arrived than the source declared: stop now.
pub(crate) fn check_received(
    url: &str,
    expected: &Expected,
    received: u64,
) -> Result<(), FetchError> {
    match expected.length {
        Some(declared) if received > declared => Err(FetchError::LengthMismatch {
            url: url.to_string(),
            expected: declared,
            actual: received,
        }),
        _ => Ok(()),
    }
}

/// A body still arriving when `--max-time` ran out: final, never retried.
pub(crate) fn past_max_time(url: String, max_time: Duration, received: u64) -> FetchError {
    FetchError::Transport {
        url,
        message: format!(
            "transfer not complete within --max-time {} s ({received} bytes received)",
            max_time.as_secs_f64()
        ),
    }
}

pub(crate) fn truncated(url: String, received: u64, announced: u64) -> FetchError {
    FetchError::Transport {
        url,
        message: format!("truncated transfer: {received} of {announced} bytes"),
    }
}

/// The whole body is in: its length and every usable declared digest must match.
pub(crate) fn verify(
    url: String,
    expected: &Expected,
    received: u64,
    hasher: Hasher,
) -> Result<Computed, FetchError> {
    if let Some(declared) = expected.length {
        if received != declared {
            return Err(FetchError::LengthMismatch {
                url,
                expected: declared,
                actual: received,
            });
        }
    }
    let computed = hasher.finish();
    if let Some(m) = mismatches(&expected.digests, &computed).into_iter().next() {
        return Err(FetchError::DigestMismatch {
            url,
            algorithm: m.algorithm.to_string(),
            expected: m.expected,
            actual: m.actual,
        });
    }
    Ok(computed)
}

/// Staging folders, one per thread (16 at most, shared beyond that): every file created in a
/// folder takes that folder's lock, and eight workers creating files in one `staging/` spent
/// their time waiting on it. Emptied folders are removed when a run ends
/// ([`remove_empty_worker_folders`]) or with `staging/` when the next run starts.
pub(crate) fn worker_folder(staging: &Path) -> Result<PathBuf, FetchError> {
    thread_local! {
        static MADE: std::cell::RefCell<Option<(PathBuf, PathBuf)>> =
            const { std::cell::RefCell::new(None) };
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    MADE.with_borrow_mut(|made| {
        if let Some((base, folder)) = made.as_ref() {
            if base == staging {
                return Ok(folder.clone());
            }
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % 16;
        let folder = staging.join(format!("w{n:02}"));
        match std::fs::create_dir(&folder) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(staging_error(&folder, e)),
        }
        *made = Some((staging.to_path_buf(), folder.clone()));
        Ok(folder)
    })
}

/// Remove the per-thread folders of `staging` that are empty (a run's end).
pub(crate) fn remove_empty_worker_folders(staging: &Path) {
    if let Ok(entries) = std::fs::read_dir(staging) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.len() == 3 && name.starts_with('w') {
                // Fails, harmlessly, when not empty.
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }
}

pub(crate) fn staging_error(path: &Path, e: io::Error) -> FetchError {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::EFBIG) {
        return FetchError::Staging(io::Error::new(
            e.kind(),
            format!(
                "{}: larger than this process may write a file (its file-size limit, ulimit \
                 -f): this resource fails, the others go on",
                path.display()
            ),
        ));
    }
    FetchError::Staging(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::agent::test_server::{reply, TestServer};
    use crate::net::one::{fetch_new_object, fetch_to_staging};
    use crate::net::HttpConfig;
    use crate::net::Scope;
    use crate::rs::digest::parse_hash_attr;
    use std::io::Write;
    use std::time::{Duration, Instant};

    #[test]
    fn only_an_html_page_for_a_declared_other_type_contradicts_the_list() {
        let declared = |t: &str| Expected {
            media_type: Some(t.to_string()),
            ..Expected::default()
        };
        let contradicts =
            |d: &str, served: &str| check_media_type("u", &declared(d), Some(served)).is_err();
        assert!(contradicts("application/pdf", "text/html; charset=utf-8"));
        assert!(contradicts("image/png", "Application/XHTML+xml"));
        // An HTML resource, a type that says only "bytes", a server's other labelling.
        assert!(!contradicts("text/html; charset=utf-8", "text/html"));
        assert!(!contradicts("application/octet-stream", "text/html"));
        assert!(!contradicts("application/pdf", "application/octet-stream"));
        assert!(check_media_type("u", &Expected::default(), Some("text/html")).is_ok());
        assert!(check_media_type("u", &declared("application/pdf"), None).is_ok());
        let message = check_media_type(
            "http://a/p.pdf",
            &declared("application/pdf"),
            Some("text/html"),
        )
        .unwrap_err()
        .to_string();
        assert!(message.starts_with("http://a/p.pdf: served an HTML page (text/html) where the list declares application/pdf"), "{message}");
    }

    // md5 / sha-256 of "alpha\n" (ResourceSync §14's example).
    const MD5: &str = "9f9f90dbe3e5ee1218c86b8839db1995";
    const SHA256: &str = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";

    fn http() -> Http {
        Http::new(crate::net::agent::test_server::config())
    }

    /// The files in `dir` and its worker folders.
    fn staging_files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(staging_files(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    fn fetch(
        server_body: &'static str,
        expected: Expected,
    ) -> (Result<Staged, FetchError>, tempfile::TempDir) {
        let server = TestServer::start(move |_, _| {
            reply(
                200,
                server_body,
                &[("ETag", "\"e1\""), ("Content-Type", "text/plain")],
            )
        });
        let url = server.url("/res/a.txt");
        let staging = tempfile::tempdir().unwrap();
        let scope = Scope::for_document(&url, &[]);
        let r = fetch_to_staging(&http(), &url, &scope, staging.path(), &expected);
        (r, staging)
    }

    #[test]
    fn success_computes_digests_and_keeps_the_file() {
        let expected = Expected {
            length: Some(6),
            digests: parse_hash_attr(&format!("md5:{MD5} sha-256:{SHA256}")),
            media_type: None,
        };
        let (r, staging) = fetch("alpha\n", expected);
        let staged = r.unwrap();
        assert_eq!(staged.computed.length, 6);
        assert_eq!(staged.computed.sha256_hex, SHA256);
        assert_eq!(staged.computed.md5_hex, MD5);
        assert_eq!(
            staged.computed.sha1_hex, None,
            "no sha-1 declared, none computed"
        );
        assert_eq!(staged.etag.as_deref(), Some("\"e1\""));
        assert_eq!(staged.media_type.as_deref(), Some("text/plain"));
        assert_eq!(staged.content_encoding, None);
        assert!(staged.file.starts_with(staging.path()));
        assert_eq!(std::fs::read(&staged.file).unwrap(), b"alpha\n");
        assert_eq!(staging_files(staging.path()), vec![staged.file.clone()]);
    }

    #[test]
    fn sha1_is_computed_only_when_declared() {
        let expected = Expected {
            length: None,
            digests: parse_hash_attr("sha-1:d046cd9b7ffb7661e449683313d41f6fc33e3130"),
            media_type: None,
        };
        let (r, _staging) = fetch("alpha\n", expected);
        let staged = r.unwrap();
        assert_eq!(
            staged.computed.sha1_hex.as_deref(),
            Some("d046cd9b7ffb7661e449683313d41f6fc33e3130")
        );
    }

    #[test]
    fn digest_mismatch_leaves_no_file() {
        let expected = Expected {
            length: None,
            digests: parse_hash_attr(
                "sha-256:0000000000000000000000000000000000000000000000000000000000000000",
            ),
            media_type: None,
        };
        let (r, staging) = fetch("alpha\n", expected);
        match r {
            Err(FetchError::DigestMismatch {
                algorithm, actual, ..
            }) => {
                assert_eq!(algorithm, "sha-256");
                assert_eq!(actual, SHA256);
            }
            other => panic!("{other:?}"),
        }
        assert!(staging_files(staging.path()).is_empty());
    }

    #[test]
    fn a_new_object_is_named_only_in_the_store() {
        let server = TestServer::start(|_, _| reply(200, "alpha\n", &[]));
        let url = server.url("/res/a.txt");
        let mirror = tempfile::tempdir().unwrap();
        let staging = mirror.path().join("staging");
        std::fs::create_dir(&staging).unwrap();
        let store = crate::store::ObjectStore::open(mirror.path()).unwrap();
        let scope = Scope::for_document(&url, &[]);
        let good = Expected {
            length: Some(6),
            digests: parse_hash_attr(&format!("md5:{MD5}")),
            media_type: None,
        };
        let staged = fetch_new_object(&http(), &url, &scope, &staging, &good).unwrap();
        assert_eq!(staged.computed.sha256_hex, SHA256);
        assert!(staging_files(&staging).is_empty(), "no name while staged");
        let path = store.ingest_new(staged.file, SHA256).unwrap();
        assert_eq!(path, store.path_for(SHA256));
        assert_eq!(std::fs::read(&path).unwrap(), b"alpha\n");
        assert!(std::fs::metadata(&path).unwrap().permissions().readonly());
        assert!(staging_files(&staging).is_empty());

        // A body that fails verification leaves nothing anywhere.
        let bad = Expected {
            length: Some(6),
            digests: parse_hash_attr(&format!("md5:{}", "0".repeat(32))),
            media_type: None,
        };
        let r = fetch_new_object(&http(), &url, &scope, &staging, &bad);
        assert!(matches!(r, Err(FetchError::DigestMismatch { .. })), "{r:?}");
        assert!(staging_files(&staging).is_empty());
        assert_eq!(staging_files(&mirror.path().join("objects")), vec![path]);
    }

    #[test]
    fn length_mismatch_leaves_no_file() {
        for declared in [3, 100] {
            let (r, staging) = fetch(
                "alpha\n",
                Expected {
                    length: Some(declared),
                    digests: vec![],
                    media_type: None,
                },
            );
            match r {
                Err(FetchError::LengthMismatch {
                    expected, actual, ..
                }) => {
                    assert_eq!(expected, declared);
                    assert_eq!(actual, 6);
                }
                other => panic!("{other:?}"),
            }
            assert!(staging_files(staging.path()).is_empty());
        }
    }

    /// A raw server that answers with `head` then `body` and then holds the connection open
    /// (or closes it when `close`).
    fn raw_server(head: &'static str, body: &'static [u8], close: bool) -> Url {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let mut req = [0u8; 4096];
                let _ = stream.read(&mut req);
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body);
                let _ = stream.flush();
                if !close {
                    held.push(stream);
                }
            }
        });
        Url::parse(&format!("http://127.0.0.1:{port}/big.bin")).unwrap()
    }

    #[test]
    fn more_bytes_than_declared_stop_early() {
        // Without Content-Length: close-delimited; we must stop at declared + 1 bytes, not read
        // until the server is done.
        let url = raw_server(
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
            &[b'x'; 200_000],
            true,
        );
        let staging = tempfile::tempdir().unwrap();
        let scope = Scope::for_document(&url, &[]);
        let expected = Expected {
            length: Some(10),
            digests: vec![],
            media_type: None,
        };
        let r = fetch_to_staging(&http(), &url, &scope, staging.path(), &expected);
        match r {
            Err(FetchError::LengthMismatch {
                expected: 10,
                actual,
                ..
            }) => {
                assert!(actual > 10 && actual <= 10 + READ_BUFFER as u64, "{actual}")
            }
            other => panic!("{other:?}"),
        }
        assert!(staging_files(staging.path()).is_empty());
    }

    #[test]
    fn truncated_transfer_fails_and_leaves_no_file() {
        let url = raw_server(
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n",
            b"only forty bytes of a hundred.........\n",
            true,
        );
        let staging = tempfile::tempdir().unwrap();
        let scope = Scope::for_document(&url, &[]);
        let r = fetch_to_staging(&http(), &url, &scope, staging.path(), &Expected::default());
        assert!(matches!(r, Err(FetchError::Transport { .. })), "{r:?}");
        assert!(staging_files(staging.path()).is_empty());
    }

    #[test]
    fn stalled_body_times_out() {
        let url = raw_server(
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
            b"ten bytes.",
            false,
        );
        let staging = tempfile::tempdir().unwrap();
        let scope = Scope::for_document(&url, &[]);
        let http = Http::new(HttpConfig {
            tries: 1,
            ..http().config().clone()
        });
        let t = Instant::now();
        let r = fetch_to_staging(&http, &url, &scope, staging.path(), &Expected::default());
        let e = r.unwrap_err().to_string();
        assert!(e.contains("under --min-rate 1024 bytes/s for 1 s"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert!(staging_files(staging.path()).is_empty());
    }

    #[test]
    fn broken_body_is_retried_with_a_new_get() {
        let server = TestServer::start(|_, i| {
            if i == 0 {
                // Announce more than we send: the client sees a truncated body.
                let data = std::io::Cursor::new(b"alp".to_vec());
                tiny_http::Response::new(200.into(), vec![], data, Some(6), None).boxed()
            } else {
                reply(200, "alpha\n", &[])
            }
        });
        let url = server.url("/a.txt");
        let staging = tempfile::tempdir().unwrap();
        let scope = Scope::for_document(&url, &[]);
        let expected = Expected {
            length: Some(6),
            digests: parse_hash_attr(&format!("sha-256:{SHA256}")),
            media_type: None,
        };
        let staged = fetch_to_staging(&http(), &url, &scope, staging.path(), &expected).unwrap();
        assert_eq!(staged.computed.sha256_hex, SHA256);
        assert_eq!(server.requests(), 2);
        assert_eq!(staging_files(staging.path()), vec![staged.file]);
    }

    #[test]
    fn content_encoding_is_recorded_and_bytes_hashed_as_received() {
        let server =
            TestServer::start(|_, _| reply(200, "alpha\n", &[("Content-Encoding", "gzip")]));
        let url = server.url("/a.txt.gz");
        let staging = tempfile::tempdir().unwrap();
        let scope = Scope::for_document(&url, &[]);
        let staged =
            fetch_to_staging(&http(), &url, &scope, staging.path(), &Expected::default()).unwrap();
        assert_eq!(staged.content_encoding.as_deref(), Some("gzip"));
        assert_eq!(staged.computed.sha256_hex, SHA256);
    }

    #[test]
    fn not_found_and_refusals_create_no_file() {
        let server = TestServer::start(|_, _| reply(404, "", &[]));
        let url = server.url("/missing");
        let staging = tempfile::tempdir().unwrap();
        let scope = Scope::for_document(&url, &[]);
        let r = fetch_to_staging(&http(), &url, &scope, staging.path(), &Expected::default());
        assert!(matches!(r, Err(FetchError::Status { status: 404, .. })));
        let evil = Url::parse("http://evil.example.com/x").unwrap();
        let r = fetch_to_staging(&http(), &evil, &scope, staging.path(), &Expected::default());
        assert!(matches!(r, Err(FetchError::OutOfScope { .. })));
        assert_eq!(server.requests(), 1);
        assert!(staging_files(staging.path()).is_empty());
    }
}
