//! Objects in an S3-compatible bucket (`--objects s3://BUCKET/PREFIX`): the same
//! content-addressed layout as on disk, `PREFIX/objects/sha256/ab/<sha256>`, so any S3 tool finds
//! an object by its digest.
//!
//! The client is libcurl's, as for every other request rsmirror makes (one HTTP stack, one
//! proxy convention): requests are signed by libcurl's AWS Signature Version 4
//! (`CURLOPT_AWS_SIGV4`). Uploads are create-only (`If-None-Match: *`: a 412 means the object
//! is there, and it is read back and hashed, never overwritten) and carry
//! `x-amz-checksum-sha256`, so the server refuses bytes that changed on the way; the payload's
//! SHA-256 is the object's name, so `x-amz-content-sha256` signs the bytes too. Bodies stream
//! from and to files: an object is never whole in memory.

mod credentials;
mod multipart;
pub(crate) mod shared;

use crate::retry::{is_retryable_status, parse_retry_after, Next, Policy, Retries};
use base64::Engine as _;
use curl::easy::{Easy, List};
use sha2::{Digest as _, Sha256};
use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Mutex;
use std::time::Duration;

pub(crate) use credentials::Settings;

/// The largest object sent in one PUT (S3's limit for a single PUT).
const MAX_SINGLE_PUT: u64 = 5 << 30;
/// How a request that failed on the network or with a 5xx (or 429) is retried: 4 attempts, 0.4,
/// 0.8 and 1.6 s apart, or as long as the bucket's `Retry-After` asks up to the ceiling every
/// request has (`--max-retry-after`'s default).
pub(crate) const RETRY: Policy = Policy {
    tries: 4,
    backoff: Duration::from_millis(400),
    max_retry_after: crate::retry::DEFAULT_MAX_RETRY_AFTER,
};
/// The most bytes of an error response kept for its message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// `s3://BUCKET/PREFIX` as given to `--objects`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketUrl {
    pub bucket: String,
    /// Without a leading or trailing `/`; empty for the bucket's root.
    pub prefix: String,
}

impl std::str::FromStr for BucketUrl {
    type Err = String;

    fn from_str(s: &str) -> Result<BucketUrl, String> {
        let rest = s.strip_prefix("s3://").ok_or_else(|| {
            format!("{s:?} is not a bucket location: expected s3://BUCKET/PREFIX")
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        // The rules of S3 bucket names (3 to 63 lower-case letters, digits, dots and hyphens,
        // beginning and ending with a letter or digit).
        let ok_bucket = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
            && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
            && bucket.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !ok_bucket {
            return Err(format!(
                "{s:?}: {bucket:?} is not an S3 bucket name (3 to 63 lower-case letters, digits, \
                 dots and hyphens)"
            ));
        }
        let prefix = prefix.trim_end_matches('/');
        // Keys are made of the prefix and hex digits: characters that need no escaping keep
        // every tool's idea of the key (and of its signature) the same.
        let ok_prefix = prefix.split('/').all(|part| {
            prefix.is_empty()
                || (!part.is_empty()
                    && part != "."
                    && part != ".."
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)))
        });
        if !ok_prefix {
            return Err(format!(
                "{s:?}: the prefix {prefix:?} may hold only letters, digits, '.', '_', '-' and \
                 single '/' between names"
            ));
        }
        Ok(BucketUrl {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }
}

impl fmt::Display for BucketUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.prefix.as_str() {
            "" => write!(f, "s3://{}", self.bucket),
            p => write!(f, "s3://{}/{p}", self.bucket),
        }
    }
}

impl BucketUrl {
    /// `PREFIX/name` (or `name` at the bucket's root).
    pub(crate) fn key(&self, name: &str) -> String {
        match self.prefix.as_str() {
            "" => name.to_string(),
            p => format!("{p}/{name}"),
        }
    }
}

/// What a create-only upload came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Put {
    /// The bucket did not have the object; it has it now.
    Stored,
    /// The bucket had it already, with exactly these bytes (read back and hashed).
    Present,
}

/// One object seen in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub key: String,
    pub size: u64,
}

/// A connection to one bucket, shared by threads; its handles (and their connections) are
/// kept for the next request.
pub struct Bucket {
    url: BucketUrl,
    settings: Settings,
    idle: Mutex<Vec<Easy>>,
}

impl fmt::Debug for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bucket").field("url", &self.url).finish()
    }
}

/// A response: its status, (for errors) the start of its body, and its `Retry-After`.
struct Response {
    status: u32,
    body: Vec<u8>,
    retry_after: Option<String>,
}

/// The `Retry-After` field of an answer, heard among its header lines (of the last response
/// head, when a transfer saw several).
#[derive(Default)]
struct RetryAfter(Option<String>);

impl RetryAfter {
    /// A header line of the answer (libcurl's header callback: true goes on).
    fn hear(&mut self, line: &[u8]) -> bool {
        if status_of(line).is_some() {
            self.0 = None;
        } else if let Some(v) = header_value(line, "retry-after") {
            self.0 = Some(v);
        }
        true
    }
}

impl Bucket {
    /// The bucket at `url`, with credentials and endpoint from the environment and the AWS
    /// shared files; the bucket must exist and answer.
    pub(crate) fn connect(url: &BucketUrl) -> io::Result<Bucket> {
        let settings = credentials::settings(&|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let bucket = Bucket {
            url: url.clone(),
            settings,
            idle: Mutex::new(Vec::new()),
        };
        // A listing of one key under the prefix: the bucket is there, the keys are taken, and
        // a refusal comes with S3's reason (a HEAD's answer has no body to give one).
        let query = format!("list-type=2&max-keys=1&prefix={}", encode(&url.key("")));
        let r = bucket.request("GET", "", &query, |_| Ok(()), &[])?;
        match r.status {
            200 => Ok(bucket),
            404 => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{url}: no such bucket at {}", bucket.endpoint_name()),
            )),
            _ => Err(bucket.refused("LIST", &url.key(""), &r)),
        }
    }

    pub fn url(&self) -> &BucketUrl {
        &self.url
    }

    /// The key of the object with this SHA-256: `PREFIX/objects/sha256/ab/<sha256>`.
    pub(crate) fn object_key(&self, sha256_hex: &str) -> String {
        self.url
            .key(&format!("objects/sha256/{}/{sha256_hex}", &sha256_hex[..2]))
    }

    /// `s3://BUCKET/KEY`, for messages.
    pub(crate) fn describe(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.url.bucket)
    }

    fn endpoint_name(&self) -> String {
        match &self.settings.endpoint {
            Some(e) => e.clone(),
            None => format!("s3.{}.amazonaws.com", self.settings.region),
        }
    }

    /// The URL of `key` (empty: the bucket itself) with a query already encoded.
    fn request_url(&self, key: &str, query: &str) -> String {
        let bucket = &self.url.bucket;
        let (scheme, host) = match &self.settings.endpoint {
            Some(e) => e.split_once("://").expect("checked endpoint"),
            None => ("https", ""),
        };
        let host = match host {
            "" => format!("s3.{}.amazonaws.com", self.settings.region),
            h => h.to_string(),
        };
        let mut url = match self.settings.path_style {
            true => format!("{scheme}://{host}/{bucket}"),
            false => format!("{scheme}://{bucket}.{host}"),
        };
        if !key.is_empty() || !self.settings.path_style {
            url.push('/');
        }
        url.push_str(key);
        if !query.is_empty() {
            url.push('?');
            url.push_str(query);
        }
        url
    }

    /// Upload `body` (`length` bytes whose SHA-256 is `sha256_hex`, already verified) to `key`
    /// unless an object is there. A 412 (the object exists) is answered by reading the object
    /// back: `Present` when it holds these bytes, an error when it does not (never
    /// overwritten: `rsmirror audit` finds it and `repair` replaces it).
    pub(crate) fn put_new<R: Read + Seek>(
        &self,
        key: &str,
        body: &mut R,
        length: u64,
        sha256_hex: &str,
    ) -> io::Result<Put> {
        if length > MAX_SINGLE_PUT {
            return Err(io::Error::other(format!(
                "{}: {length} bytes is more than one PUT may send ({MAX_SINGLE_PUT})",
                self.describe(key)
            )));
        }
        let digest = hex::decode(sha256_hex)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not a sha256"))?;
        let checksum = base64::engine::general_purpose::STANDARD.encode(digest);
        let headers = [
            format!("x-amz-content-sha256: {sha256_hex}"),
            format!("x-amz-checksum-sha256: {checksum}"),
            "If-None-Match: *".to_string(),
            "Content-Type: application/octet-stream".to_string(),
        ];
        let r = self.attempts("PUT", key, |easy| {
            body.seek(SeekFrom::Start(0))?;
            easy.http_headers(self.headers(&headers)?)?;
            easy.upload(true)?;
            easy.in_filesize(length)?;
            let mut error = Vec::new();
            let mut heard = RetryAfter::default();
            let status = {
                let mut t = easy.transfer();
                t.read_function(|buf| body.read(buf).map_err(|_| curl::easy::ReadError::Abort))?;
                t.header_function(|line| heard.hear(line))?;
                t.write_function(|data| {
                    keep_start(&mut error, data);
                    Ok(data.len())
                })?;
                t.perform()
            };
            status?;
            Ok(Response {
                status: easy.response_code()?,
                body: error,
                retry_after: heard.0,
            })
        })?;
        match r.status {
            200 | 201 | 204 => Ok(Put::Stored),
            412 => self.check_present(key, sha256_hex),
            _ => Err(self.refused("PUT", key, &r)),
        }
    }

    /// [`Bucket::put_new`] of a file: in parts when it is large
    /// (over one part, [`multipart::part_size`]), else in one PUT.
    pub(crate) fn put_file_new(
        &self,
        key: &str,
        file: &mut std::fs::File,
        sha256_hex: &str,
    ) -> io::Result<Put> {
        let length = file.metadata()?.len();
        match length > multipart::part_size() {
            true => self.put_parts(key, file, length, sha256_hex),
            false => self.put_new(key, file, length, sha256_hex),
        }
    }

    /// The object at `key` is there already: `Present` when it holds the bytes whose SHA-256
    /// is `sha256_hex` (read back and hashed), an error when it holds others (never
    /// overwritten: `rsmirror audit` finds it and `repair` replaces it).
    fn check_present(&self, key: &str, sha256_hex: &str) -> io::Result<Put> {
        let mut hasher = Sha256::new();
        let found = self.get(key, &mut |data| {
            hasher.update(data);
            Ok(())
        })?;
        let actual = hex::encode(hasher.finalize());
        match found {
            true if actual == sha256_hex => Ok(Put::Present),
            // This object's own trouble (`InvalidData`), not the bucket's: the run goes on.
            true => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: the bucket holds different bytes under this name (their SHA-256 is \
                 {actual}); not overwritten: rsmirror audit reports it",
                    self.describe(key)
                ),
            )),
            false => Err(io::Error::other(format!(
                "{}: the bucket refused a new object (412) but has none there",
                self.describe(key)
            ))),
        }
    }

    /// A request's header fields: `extra`, and the session token when there is one.
    fn headers<S: AsRef<str>>(&self, extra: &[S]) -> Result<List, curl::Error> {
        let mut list = List::new();
        for h in extra {
            list.append(h.as_ref())?;
        }
        if let Some(token) = &self.settings.credentials.session_token {
            list.append(&format!("x-amz-security-token: {token}"))?;
        }
        Ok(list)
    }

    /// [`Bucket::put_new`] of a few bytes held in memory (a record beside an object).
    pub(crate) fn put_bytes(&self, key: &str, bytes: &[u8]) -> io::Result<Put> {
        let sha256 = hex::encode(Sha256::digest(bytes));
        self.put_new(
            key,
            &mut io::Cursor::new(bytes),
            bytes.len() as u64,
            &sha256,
        )
    }

    /// Copy the object at `from` to `to` within the bucket (S3's CopyObject: no bytes pass
    /// through this machine).
    pub(crate) fn copy(&self, from: &str, to: &str) -> io::Result<()> {
        let source = format!("x-amz-copy-source: /{}/{from}", self.url.bucket);
        let r = self.attempts("COPY", to, |easy| {
            easy.http_headers(self.headers(&[source.as_str()])?)?;
            easy.upload(true)?;
            easy.in_filesize(0)?;
            let mut body = Vec::new();
            let mut heard = RetryAfter::default();
            let status = {
                let mut t = easy.transfer();
                t.read_function(|_| Ok(0))?;
                t.header_function(|line| heard.hear(line))?;
                t.write_function(|data| {
                    keep_start(&mut body, data);
                    Ok(data.len())
                })?;
                t.perform()
            };
            status?;
            Ok(Response {
                status: easy.response_code()?,
                body,
                retry_after: heard.0,
            })
        })?;
        // S3 may answer a copy that failed part way with 200 and an error body.
        match (r.status, error_of(&r.body)) {
            (200, (None, _)) => Ok(()),
            _ => Err(self.refused("COPY", to, &r)),
        }
    }

    /// Stream the object at `key` into `sink`: `Ok(false)` when there is none.
    pub(crate) fn get(
        &self,
        key: &str,
        sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<bool> {
        let mut delivered = false;
        let r = self.attempts("GET", key, |easy| {
            if delivered {
                // Bytes already went to the sink: a retry would hand them over twice.
                return Err(io::Error::other(
                    "the transfer broke off after its first bytes",
                ));
            }
            easy.get(true)?;
            easy.http_headers(self.headers::<&str>(&[])?)?;
            let status = std::cell::Cell::new(0);
            let mut error = Vec::new();
            let mut sink_error = None;
            let mut heard = RetryAfter::default();
            let done = {
                let mut t = easy.transfer();
                t.header_function(|line| {
                    if let Some(s) = status_of(line) {
                        status.set(s);
                    }
                    heard.hear(line)
                })?;
                t.write_function(|data| {
                    if status.get() != 200 {
                        keep_start(&mut error, data);
                        return Ok(data.len());
                    }
                    delivered = true;
                    match sink(data) {
                        Ok(()) => Ok(data.len()),
                        Err(e) => {
                            sink_error = Some(e);
                            Ok(0)
                        }
                    }
                })?;
                t.perform()
            };
            if let Some(e) = sink_error {
                return Err(e);
            }
            done?;
            Ok(Response {
                status: easy.response_code()?,
                body: error,
                retry_after: heard.0,
            })
        })?;
        match r.status {
            200 => Ok(true),
            404 => Ok(false),
            _ => Err(self.refused("GET", key, &r)),
        }
    }

    /// The size of the object at `key`, `None` when there is none.
    pub(crate) fn head(&self, key: &str) -> io::Result<Option<u64>> {
        let mut length = None;
        let r = self.request(
            "HEAD",
            key,
            "",
            |easy| {
                length = Some(easy.content_length_download()?);
                Ok(())
            },
            &[],
        )?;
        match r.status {
            // libcurl says -1 when the answer has no Content-Length.
            200 => match length {
                Some(n) if n >= 0.0 => Ok(Some(n as u64)),
                _ => Err(io::Error::other(format!(
                    "HEAD {}: the answer has no Content-Length",
                    self.describe(key)
                ))),
            },
            404 => Ok(None),
            _ => Err(self.refused("HEAD", key, &r)),
        }
    }

    /// Every object whose key begins with `prefix`, in key order, handed to `each` page by page.
    pub(crate) fn list(
        &self,
        prefix: &str,
        each: &mut dyn FnMut(Listed) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut token: Option<String> = None;
        loop {
            // Query parameters in the order SigV4's canonical request sorts them.
            let mut query = String::new();
            if let Some(t) = &token {
                query.push_str(&format!("continuation-token={}&", encode(t)));
            }
            query.push_str(&format!("list-type=2&prefix={}", encode(prefix)));
            let mut body = Vec::new();
            let r = self.attempts("GET", "", |easy| {
                body.clear();
                easy.get(true)?;
                easy.url(&self.request_url("", &query))?;
                let mut heard = RetryAfter::default();
                let status = {
                    let mut t = easy.transfer();
                    t.header_function(|line| heard.hear(line))?;
                    t.write_function(|data| {
                        body.extend_from_slice(data);
                        Ok(data.len())
                    })?;
                    t.perform()
                };
                status?;
                Ok(Response {
                    status: easy.response_code()?,
                    body: Vec::new(),
                    retry_after: heard.0,
                })
            })?;
            if r.status != 200 {
                let r = Response { body, ..r };
                return Err(self.refused("LIST", prefix, &r));
            }
            let page = parse_listing(&body).map_err(|e| {
                io::Error::other(format!(
                    "{}: the listing is not what S3 answers: {e}",
                    self.describe(prefix)
                ))
            })?;
            for item in page.items {
                each(item)?;
            }
            match page.next {
                Some(t) => token = Some(t),
                None => return Ok(()),
            }
        }
    }

    /// A PUT of a few bytes held in memory under the condition `condition` (an `If-Match` or
    /// `If-None-Match` field): the status (a 412 when the condition did not hold) and the new
    /// ETag.
    pub(crate) fn put_conditional(
        &self,
        key: &str,
        bytes: &[u8],
        condition: &str,
    ) -> io::Result<(u32, Option<String>)> {
        let digest = Sha256::digest(bytes);
        let headers = [
            format!("x-amz-content-sha256: {}", hex::encode(digest)),
            format!(
                "x-amz-checksum-sha256: {}",
                base64::engine::general_purpose::STANDARD.encode(digest)
            ),
            condition.to_string(),
            "Content-Type: application/json".to_string(),
        ];
        let mut etag = None;
        let r = self.attempts("PUT", key, |easy| {
            easy.http_headers(self.headers(&headers)?)?;
            easy.upload(true)?;
            easy.in_filesize(bytes.len() as u64)?;
            let mut input = bytes;
            let mut body = Vec::new();
            etag = None;
            let mut heard = RetryAfter::default();
            let done = {
                let mut t = easy.transfer();
                t.read_function(|buf| {
                    let n = buf.len().min(input.len());
                    buf[..n].copy_from_slice(&input[..n]);
                    input = &input[n..];
                    Ok(n)
                })?;
                t.header_function(|line| {
                    if let Some(v) = header_value(line, "etag") {
                        etag = Some(v);
                    }
                    heard.hear(line)
                })?;
                t.write_function(|data| {
                    keep_start(&mut body, data);
                    Ok(data.len())
                })?;
                t.perform()
            };
            done?;
            Ok(Response {
                status: easy.response_code()?,
                body,
                retry_after: heard.0,
            })
        })?;
        match r.status {
            200 | 412 => Ok((r.status, etag)),
            _ => Err(self.refused("PUT", key, &r)),
        }
    }

    /// A small object (a record, the lease: at most 1 MiB) and its ETag; `None` when there is
    /// none.
    pub(crate) fn get_small(&self, key: &str) -> io::Result<Option<(Vec<u8>, Option<String>)>> {
        const MAX: usize = 1 << 20;
        let mut etag = None;
        let mut body = Vec::new();
        let r = self.attempts("GET", key, |easy| {
            easy.get(true)?;
            body.clear();
            etag = None;
            let mut heard = RetryAfter::default();
            let done = {
                let mut t = easy.transfer();
                t.header_function(|line| {
                    if let Some(v) = header_value(line, "etag") {
                        etag = Some(v);
                    }
                    heard.hear(line)
                })?;
                t.write_function(|data| {
                    if body.len() + data.len() > MAX {
                        return Ok(0);
                    }
                    body.extend_from_slice(data);
                    Ok(data.len())
                })?;
                t.perform()
            };
            done?;
            Ok(Response {
                status: easy.response_code()?,
                body: Vec::new(),
                retry_after: heard.0,
            })
        })?;
        match r.status {
            200 => Ok(Some((body, etag))),
            404 => Ok(None),
            _ => Err(self.refused("GET", key, &Response { body, ..r })),
        }
    }

    /// Remove the object at `key` if its ETag is still `etag`: the status (412: it is not).
    pub(crate) fn delete_if(&self, key: &str, etag: &str) -> io::Result<u32> {
        let condition = format!("If-Match: {etag}");
        let r = self.request("DELETE", key, "", |_| Ok(()), &[condition.as_str()])?;
        match r.status {
            200 | 204 | 404 | 412 => Ok(r.status),
            _ => Err(self.refused("DELETE", key, &r)),
        }
    }

    /// Whether any object's key begins with `prefix` (one listing of one key).
    pub(crate) fn holds_any(&self, prefix: &str) -> io::Result<bool> {
        let query = format!("list-type=2&max-keys=1&prefix={}", encode(prefix));
        let mut body = Vec::new();
        let r = self.attempts("LIST", prefix, |easy| {
            body.clear();
            easy.get(true)?;
            easy.url(&self.request_url("", &query))?;
            let mut heard = RetryAfter::default();
            let done = {
                let mut t = easy.transfer();
                t.header_function(|line| heard.hear(line))?;
                t.write_function(|data| {
                    keep_start(&mut body, data);
                    Ok(data.len())
                })?;
                t.perform()
            };
            done?;
            Ok(Response {
                status: easy.response_code()?,
                body: Vec::new(),
                retry_after: heard.0,
            })
        })?;
        if r.status != 200 {
            return Err(self.refused("LIST", prefix, &Response { body, ..r }));
        }
        let page = parse_listing(&body).map_err(io::Error::other)?;
        Ok(!page.items.is_empty())
    }

    /// Remove the object at `key` (nothing when there is none).
    pub(crate) fn delete(&self, key: &str) -> io::Result<()> {
        let r = self.request("DELETE", key, "", |_| Ok(()), &[])?;
        match r.status {
            200 | 204 | 404 => Ok(()),
            _ => Err(self.refused("DELETE", key, &r)),
        }
    }

    /// A request without a body (`HEAD`, `DELETE`), retried.
    fn request(
        &self,
        method: &str,
        key: &str,
        query: &str,
        mut after: impl FnMut(&mut Easy) -> io::Result<()>,
        headers: &[&str],
    ) -> io::Result<Response> {
        self.attempts(method, key, |easy| {
            easy.http_headers(self.headers(headers)?)?;
            match method {
                "HEAD" => easy.nobody(true)?,
                m => easy.custom_request(m)?,
            }
            if !query.is_empty() {
                easy.url(&self.request_url(key, query))?;
            }
            let mut error = Vec::new();
            let mut heard = RetryAfter::default();
            let status = {
                let mut t = easy.transfer();
                t.header_function(|line| heard.hear(line))?;
                t.write_function(|data| {
                    keep_start(&mut error, data);
                    Ok(data.len())
                })?;
                t.perform()
            };
            status?;
            after(easy)?;
            Ok(Response {
                status: easy.response_code()?,
                body: error,
                retry_after: heard.0,
            })
        })
    }

    /// Run `one` on a prepared handle until it answers with neither a network error nor a
    /// 5xx/429, retried as every request is ([`crate::retry`], with [`RETRY`]): a
    /// `Retry-After` is waited for (when it is longer than the backoff), and one longer than
    /// the policy's ceiling ends the retries with an error that says so. When the attempts are
    /// spent, the last answer (or network error) is the caller's to report.
    fn attempts(
        &self,
        method: &str,
        key: &str,
        mut one: impl FnMut(&mut Easy) -> io::Result<Response>,
    ) -> io::Result<Response> {
        let mut easy = self.idle.lock().expect("bucket handles").pop();
        let mut retries = Retries::new(RETRY);
        loop {
            let handle = easy.get_or_insert_with(Easy::new);
            handle.reset();
            let answered = self
                .prepare(handle, key)
                .map_err(io::Error::from)
                .and_then(|()| one(handle));
            let last = match answered {
                Ok(r) if !u16::try_from(r.status).is_ok_and(is_retryable_status) => {
                    self.idle
                        .lock()
                        .expect("bucket handles")
                        .push(easy.take().expect("used"));
                    return Ok(r);
                }
                Ok(r) => Ok(r),
                Err(e) => {
                    easy = None;
                    Err(io::Error::new(
                        e.kind(),
                        format!("{method} {}: {e}", self.describe(key)),
                    ))
                }
            };
            let retry_after = match &last {
                Ok(r) => (r.retry_after.as_deref())
                    .and_then(|v| parse_retry_after(v, jiff::Timestamp::now())),
                Err(_) => None,
            };
            match retries.next(retry_after) {
                Next::Wait(wait) => std::thread::sleep(wait),
                Next::Spent => return last,
                Next::TooLong(asked) => {
                    let r = last.expect("a Retry-After came with an answer");
                    return Err(io::Error::other(format!(
                        "{}; it asked to be tried again in {} s (Retry-After), longer than \
                         rsmirror waits ({} s)",
                        self.refused(method, key, &r),
                        asked.as_secs(),
                        retries.policy().max_retry_after.as_secs()
                    )));
                }
            }
        }
    }

    /// The options every request shares: its URL, its signature and whom it trusts.
    fn prepare(&self, easy: &mut Easy, key: &str) -> Result<(), curl::Error> {
        easy.url(&self.request_url(key, ""))?;
        let s = &self.settings;
        easy.username(&s.credentials.access_key_id)?;
        easy.password(&s.credentials.secret_access_key)?;
        easy.aws_sigv4(&format!("aws:amz:{}:s3", s.region))?;
        easy.http_headers(self.headers::<&str>(&[])?)?;
        if let Some(ca) = &s.ca_bundle {
            easy.cainfo(ca)?;
        }
        easy.useragent(concat!("rsmirror/", env!("CARGO_PKG_VERSION")))?;
        // No `100 Continue` round trip before a body. (Not by removing the `Expect:` field: a
        // libcurl before 8.3 signs the removed field all the same, curl/curl#11664, and every
        // upload it would have sent one with was refused, SignatureDoesNotMatch.)
        // SAFETY: a valid easy handle; CURLOPT_EXPECT_100_TIMEOUT_MS takes a long (the curl
        // crate has the option on `Easy2` only).
        let rc = unsafe {
            curl_sys::curl_easy_setopt(
                easy.raw(),
                curl_sys::CURLOPT_EXPECT_100_TIMEOUT_MS,
                0 as libc::c_long,
            )
        };
        if rc != curl_sys::CURLE_OK {
            return Err(curl::Error::new(rc));
        }
        easy.connect_timeout(Duration::from_secs(30))?;
        // A server that stops sending for a minute has stopped.
        easy.low_speed_limit(1)?;
        easy.low_speed_time(Duration::from_secs(60))?;
        Ok(())
    }

    /// What a refusal says: the method, the object, the status and S3's error code and message.
    fn refused(&self, method: &str, key: &str, r: &Response) -> io::Error {
        let (code, message) = error_of(&r.body);
        let what = match (code, message) {
            (Some(c), Some(m)) => format!(": {c}: {m}"),
            (Some(c), None) => format!(": {c}"),
            _ => String::new(),
        };
        let kind = match r.status {
            403 => io::ErrorKind::PermissionDenied,
            404 => io::ErrorKind::NotFound,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(
            kind,
            format!(
                "{method} {}: the bucket answered {}{what}",
                self.describe(key),
                r.status
            ),
        )
    }
}

fn keep_start(kept: &mut Vec<u8>, data: &[u8]) {
    let room = MAX_ERROR_BODY.saturating_sub(kept.len());
    kept.extend_from_slice(&data[..data.len().min(room)]);
}

/// The value of the header `name` if `line` is that header (not a status line).
fn header_value(line: &[u8], name: &str) -> Option<String> {
    if status_of(line).is_some() {
        return None;
    }
    let line = std::str::from_utf8(line).ok()?;
    let (n, v) = line.split_once(':')?;
    n.trim()
        .eq_ignore_ascii_case(name)
        .then(|| v.trim().to_string())
}

/// The status of a status line (`HTTP/1.1 200 OK`), `None` for any other header line.
fn status_of(line: &[u8]) -> Option<u32> {
    let line = std::str::from_utf8(line).ok()?;
    let rest = line.strip_prefix("HTTP/")?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// SigV4's URI encoding of a query value: everything but the unreserved characters escaped.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One page of a ListObjectsV2 answer.
#[derive(Debug, Default)]
struct Page {
    items: Vec<Listed>,
    /// `NextContinuationToken` when the listing is truncated.
    next: Option<String>,
}

fn parse_listing(body: &[u8]) -> Result<Page, String> {
    let mut page = Page::default();
    let mut truncated = false;
    let mut path: Vec<String> = Vec::new();
    let mut key: Option<String> = None;
    let mut size: Option<u64> = None;
    for (name, value, closing) in elements(body)? {
        if !closing {
            path.push(name);
            continue;
        }
        match (path.len(), name.as_str()) {
            (2, "IsTruncated") => truncated = value == "true",
            (2, "NextContinuationToken") => page.next = Some(value),
            (3, "Key") => key = Some(value),
            (3, "Size") => size = Some(value.parse().map_err(|_| format!("a Size of {value:?}"))?),
            (2, "Contents") => page.items.push(Listed {
                key: key.take().ok_or("an object without a Key")?,
                size: size.take().ok_or("an object without a Size")?,
            }),
            _ => {}
        }
        path.pop();
    }
    if !truncated {
        page.next = None;
    } else if page.next.is_none() {
        return Err("truncated without a NextContinuationToken".into());
    }
    Ok(page)
}

/// The start tags and end tags of an XML answer: `(name, "", false)` at a start and
/// `(name, text, true)` at an end (the text directly inside the element).
fn elements(body: &[u8]) -> Result<Vec<(String, String, bool)>, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut out = Vec::new();
    let mut text = String::new();
    let mut buf = Vec::new();
    loop {
        match reader
            .read_event_into(&mut buf)
            .map_err(|e| e.to_string())?
        {
            Event::Start(e) => {
                text.clear();
                out.push((e.local_name().as_ref().to_string(), String::new(), false));
            }
            Event::End(e) => {
                out.push((
                    e.local_name().as_ref().to_string(),
                    std::mem::take(&mut text),
                    true,
                ));
            }
            Event::Empty(e) => {
                let name = e.local_name().as_ref().to_string();
                out.push((name.clone(), String::new(), false));
                out.push((name, String::new(), true));
            }
            Event::Text(t) => text.push_str(&t),
            Event::GeneralRef(r) => match r.resolve_char_ref().map_err(|e| e.to_string())? {
                Some(c) => text.push(c),
                None => text.push_str(
                    quick_xml::escape::resolve_xml_entity(&r).ok_or("an undefined entity")?,
                ),
            },
            Event::Eof => return Ok(out),
            _ => {}
        }
        buf.clear();
    }
}

/// S3's `<Error><Code>` and `<Message>`, when the body is one.
fn error_of(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(elements) = elements(body) else {
        return (None, None);
    };
    let mut code = None;
    let mut message = None;
    for (name, value, closing) in elements {
        match (closing, name.as_str()) {
            (true, "Code") => code = Some(value),
            (true, "Message") => message = Some(value),
            _ => {}
        }
    }
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;
    use std::time::Instant;

    /// `alpha\n`, its SHA-256.
    const ALPHA: &str = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";
    const SLOW_DOWN: &[u8] = b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>\
        <Message>Please reduce your request rate.</Message></Error>";

    /// A stand-in for an S3 server on 127.0.0.1 (a port of its own): each request, as
    /// `METHOD /path`, and how many times the same was asked before, go to `answer`, whose
    /// bytes are the whole response; the connection is closed after it.
    struct FakeS3 {
        endpoint: String,
        asked: Arc<Mutex<Vec<String>>>,
    }

    impl FakeS3 {
        fn start(mut answer: impl FnMut(&str, usize) -> Vec<u8> + Send + 'static) -> FakeS3 {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let endpoint = format!("http://{}", listener.local_addr().unwrap());
            let asked = Arc::new(Mutex::new(Vec::new()));
            let log = asked.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(mut stream) = stream else { continue };
                    let Some(line) = read_request(&mut stream) else {
                        continue;
                    };
                    let before = {
                        let mut log = log.lock().unwrap();
                        let n = log.iter().filter(|l| **l == line).count();
                        log.push(line.clone());
                        n
                    };
                    let _ = stream.write_all(&answer(&line, before));
                }
            });
            FakeS3 { endpoint, asked }
        }

        /// How many times `line` (`METHOD /path`) was asked.
        fn asked(&self, line: &str) -> usize {
            self.asked
                .lock()
                .unwrap()
                .iter()
                .filter(|l| *l == line)
                .count()
        }

        /// The bucket `s3://bkt/p` on this server.
        fn client(&self) -> Bucket {
            Bucket {
                url: "s3://bkt/p".parse().unwrap(),
                settings: Settings {
                    credentials: credentials::Credentials {
                        access_key_id: "id".into(),
                        secret_access_key: "secret".into(),
                        session_token: None,
                    },
                    region: "us-east-1".into(),
                    endpoint: Some(self.endpoint.clone()),
                    path_style: true,
                    ca_bundle: None,
                },
                idle: Mutex::new(Vec::new()),
            }
        }
    }

    /// Read one request through its body; `METHOD /path`.
    fn read_request(stream: &mut TcpStream) -> Option<String> {
        let mut reader = BufReader::new(stream.try_clone().ok()?);
        let mut first = String::new();
        reader.read_line(&mut first).ok()?;
        let mut length = 0;
        loop {
            let mut field = String::new();
            reader.read_line(&mut field).ok()?;
            let field = field.trim_end();
            if field.is_empty() {
                break;
            }
            if let Some((name, value)) = field.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().ok()?;
                }
            }
        }
        io::Read::read_exact(&mut reader, &mut vec![0; length]).ok()?;
        let mut words = first.split_whitespace();
        let method = words.next()?;
        let target = words.next()?;
        Some(format!("{method} {}", target.split('?').next()?))
    }

    /// A whole response.
    fn answer(status: u32, fields: &[&str], body: &[u8]) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {status} Status\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for f in fields {
            out.push_str(f);
            out.push_str("\r\n");
        }
        out.push_str("\r\n");
        let mut out = out.into_bytes();
        out.extend_from_slice(body);
        out
    }

    fn put_alpha(bucket: &Bucket) -> io::Result<Put> {
        let key = bucket.object_key(ALPHA);
        bucket.put_new(&key, &mut io::Cursor::new(b"alpha\n"), 6, ALPHA)
    }

    #[test]
    fn a_503_with_retry_after_is_waited_for_then_the_put_and_the_get_go_through() {
        let s3 = FakeS3::start(|line, before| match (line.split(' ').next(), before) {
            (_, 0) => answer(503, &["Retry-After: 1"], SLOW_DOWN),
            (Some("PUT"), _) => answer(200, &[], b""),
            (Some("GET"), _) => answer(200, &[], b"alpha\n"),
            _ => answer(400, &[], b""),
        });
        let bucket = s3.client();
        let key = bucket.object_key(ALPHA);
        let started = Instant::now();
        assert_eq!(put_alpha(&bucket).unwrap(), Put::Stored);
        assert_eq!(
            s3.asked(&format!("PUT /bkt/{key}")),
            2,
            "the PUT went again"
        );
        // After the second the bucket asked for, not the first backoff's 0.4 s (sleeping
        // never takes less than asked: no bound on how much more).
        assert!(started.elapsed() >= Duration::from_secs(1));
        let started = Instant::now();
        let mut got = Vec::new();
        let found = bucket.get(&key, &mut |data| {
            got.extend_from_slice(data);
            Ok(())
        });
        assert!(found.unwrap());
        assert_eq!(got, b"alpha\n", "the 503's body is not the object's");
        assert_eq!(
            s3.asked(&format!("GET /bkt/{key}")),
            2,
            "the GET went again"
        );
        assert!(started.elapsed() >= Duration::from_secs(1));
    }

    #[test]
    fn a_retry_after_beyond_the_ceiling_ends_the_retries_naming_the_key_and_the_wait() {
        let s3 = FakeS3::start(|line, _| match line.split(' ').next() {
            Some("PUT") => answer(503, &["Retry-After: 100000"], SLOW_DOWN),
            // An HTTP-date as far ahead.
            _ => answer(429, &["Retry-After: Sun, 06 Nov 2095 08:49:37 GMT"], b""),
        });
        let bucket = s3.client();
        let key = bucket.object_key(ALPHA);
        let started = Instant::now();
        let e = put_alpha(&bucket).unwrap_err().to_string();
        assert_eq!(
            s3.asked(&format!("PUT /bkt/{key}")),
            1,
            "not tried again: {e}"
        );
        for words in [
            &format!("PUT s3://bkt/{key}: the bucket answered 503: SlowDown"),
            "asked to be tried again in 100000 s (Retry-After)",
            "longer than rsmirror waits (120 s)",
        ] {
            assert!(e.contains(words), "{words:?} not in {e:?}");
        }
        let e = bucket.get(&key, &mut |_| Ok(())).unwrap_err().to_string();
        assert_eq!(
            s3.asked(&format!("GET /bkt/{key}")),
            1,
            "not tried again: {e}"
        );
        assert!(
            e.contains(&format!("GET s3://bkt/{key}: the bucket answered 429")),
            "{e}"
        );
        // Neither waited for what was asked (a bound far beyond any slowness).
        assert!(started.elapsed() < Duration::from_secs(60));
    }

    #[test]
    fn a_bucket_that_keeps_failing_is_asked_four_times_then_its_answer_is_the_error() {
        let s3 = FakeS3::start(|_, _| answer(503, &[], SLOW_DOWN));
        let bucket = s3.client();
        let key = bucket.object_key(ALPHA);
        let e = put_alpha(&bucket).unwrap_err().to_string();
        assert_eq!(s3.asked(&format!("PUT /bkt/{key}")), 4, "{e}");
        assert!(
            e.contains(&format!(
                "PUT s3://bkt/{key}: the bucket answered 503: SlowDown"
            )),
            "{e}"
        );
        assert!(!e.contains("Retry-After"), "{e}");
    }

    #[test]
    fn bucket_locations_are_checked() {
        let u: BucketUrl = "s3://my-bucket/a/b/".parse().unwrap();
        assert_eq!((u.bucket.as_str(), u.prefix.as_str()), ("my-bucket", "a/b"));
        assert_eq!(u.to_string(), "s3://my-bucket/a/b");
        assert_eq!(u.key("objects/x"), "a/b/objects/x");
        let root: BucketUrl = "s3://bkt".parse().unwrap();
        assert_eq!(root.key("objects/x"), "objects/x");
        for bad in [
            "http://b/x",
            "s3://B/x",
            "s3://ab",
            "s3://b-/x",
            "s3://bkt/a//b",
            "s3://bkt/a/../b",
            "s3://bkt/a b",
        ] {
            assert!(bad.parse::<BucketUrl>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_listing_gives_keys_sizes_and_the_next_token() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>
<IsTruncated>true</IsTruncated><NextContinuationToken>a+b/c&#61;</NextContinuationToken>
<Contents><Key>p/objects/x</Key><ETag>&#34;5e&#34;</ETag><Size>11</Size></Contents>
<Contents><Key>p/y</Key><Size>0</Size></Contents></ListBucketResult>"#;
        let page = parse_listing(body).unwrap();
        assert_eq!(page.next.as_deref(), Some("a+b/c="));
        assert_eq!(
            page.items,
            vec![
                Listed {
                    key: "p/objects/x".into(),
                    size: 11
                },
                Listed {
                    key: "p/y".into(),
                    size: 0
                }
            ]
        );
        assert_eq!(encode("a+b/c="), "a%2Bb%2Fc%3D");
    }

    #[test]
    fn an_error_body_gives_its_code_and_message() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>BadDigest</Code><Message>The digest did not match.</Message></Error>";
        assert_eq!(
            error_of(body),
            (
                Some("BadDigest".into()),
                Some("The digest did not match.".into())
            )
        );
    }
}
