//! Large objects go up in parts (S3's multipart upload), several at once, each part read from
//! the file where it lies (`pread`: no part is held in memory) and carrying its own
//! `x-amz-checksum-sha256`, so the server refuses a part that changed on the way. The upload is
//! completed with `If-None-Match: *` (create-only, as a single PUT is), and aborted when any
//! part fails: no half object is ever visible under the object's name.

use super::{encode, error_of, header_value, keep_start, Bucket, Put, Response, RetryAfter};
use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The size of a part (the last one smaller), 64 MiB unless `RSMIRROR_S3_PART_SIZE` (bytes, at
/// least S3's minimum of 5 MiB) says otherwise; objects larger than one part go up in parts. S3
/// allows 10,000 parts, so objects up to 640 GiB: larger ones get larger parts.
pub(crate) fn part_size() -> u64 {
    static SIZE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        std::env::var("RSMIRROR_S3_PART_SIZE")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(64 << 20, |n| n.max(5 << 20))
    })
}
/// Parts in flight at once.
const PARTS_AT_ONCE: usize = 4;
/// SHA-256 of no bytes: the payload hash of a request without a body.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// One part as uploaded: its number, the ETag the server gave it, its checksum.
struct Part {
    number: u64,
    etag: String,
    checksum: String,
}

impl Bucket {
    /// Upload `file` (`length` bytes, SHA-256 `sha256_hex`, verified) to `key` in parts,
    /// unless an object is there (then, as for a single PUT: read back, `Present` or an error).
    pub(crate) fn put_parts(
        &self,
        key: &str,
        file: &File,
        length: u64,
        sha256_hex: &str,
    ) -> io::Result<Put> {
        if self.head(key)?.is_some() {
            return self.check_present(key, sha256_hex);
        }
        let part_size = part_size().max(length.div_ceil(10_000));
        let parts = length.div_ceil(part_size);
        let id = self.start_upload(key)?;
        let uploaded = self.upload_parts(key, &id, file, (length, part_size, parts));
        let done = uploaded.and_then(|parts| self.complete(key, &id, &parts));
        match done {
            Ok(Some(())) => {}
            // Another upload completed first (If-None-Match).
            Ok(None) => {
                let _ = self.abort(key, &id);
                return self.check_present(key, sha256_hex);
            }
            Err(e) => {
                let _ = self.abort(key, &id);
                return Err(e);
            }
        }
        match self.head(key)? {
            Some(n) if n == length => Ok(Put::Stored),
            other => Err(io::Error::other(format!(
                "{}: the completed upload holds {other:?} bytes, not {length}",
                self.describe(key)
            ))),
        }
    }

    /// `POST KEY?uploads`: the new upload's id.
    fn start_upload(&self, key: &str) -> io::Result<String> {
        let r = self.post(key, "uploads=", &["x-amz-checksum-algorithm: SHA256"], b"")?;
        if r.status != 200 {
            return Err(self.refused("POST (start an upload)", key, &r));
        }
        super::elements(&r.body)
            .ok()
            .and_then(|els| {
                els.into_iter()
                    .find(|(name, _, closing)| *closing && name == "UploadId")
                    .map(|(_, value, _)| value)
            })
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                io::Error::other(format!(
                    "{}: the answer to starting an upload has no UploadId",
                    self.describe(key)
                ))
            })
    }

    /// Every part, [`PARTS_AT_ONCE`] at a time; the first failure stops the others.
    fn upload_parts(
        &self,
        key: &str,
        id: &str,
        file: &File,
        (length, part_size, parts): (u64, u64, u64),
    ) -> io::Result<Vec<Part>> {
        let next = AtomicU64::new(1);
        let failed = AtomicBool::new(false);
        let done: Mutex<Vec<Part>> = Mutex::new(Vec::new());
        let first_error: Mutex<Option<io::Error>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..PARTS_AT_ONCE.min(parts as usize) {
                s.spawn(|| loop {
                    let number = next.fetch_add(1, Ordering::Relaxed);
                    if number > parts || failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let start = (number - 1) * part_size;
                    let len = part_size.min(length - start);
                    match self.upload_part(key, id, file, number, (start, len)) {
                        Ok(part) => done.lock().expect("parts").push(part),
                        Err(e) => {
                            failed.store(true, Ordering::Relaxed);
                            first_error.lock().expect("error").get_or_insert(e);
                            return;
                        }
                    }
                });
            }
        });
        if let Some(e) = first_error.into_inner().expect("error") {
            return Err(e);
        }
        let mut parts = done.into_inner().expect("parts");
        parts.sort_by_key(|p| p.number);
        Ok(parts)
    }

    /// `PUT KEY?partNumber=N&uploadId=ID` of `len` bytes of `file` from `start`, hashed first
    /// (a read of the range), then sent (a second read), checksummed.
    fn upload_part(
        &self,
        key: &str,
        id: &str,
        file: &File,
        number: u64,
        (start, len): (u64, u64),
    ) -> io::Result<Part> {
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut at = start;
        while at < start + len {
            let want = buf.len().min((start + len - at) as usize);
            let n = file.read_at(&mut buf[..want], at)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file is shorter than its length",
                ));
            }
            hasher.update(&buf[..n]);
            at += n as u64;
        }
        let digest = hasher.finalize();
        let checksum = base64::engine::general_purpose::STANDARD.encode(digest);
        let headers = [
            format!("x-amz-content-sha256: {}", hex::encode(digest)),
            format!("x-amz-checksum-sha256: {checksum}"),
        ];
        let query = format!("partNumber={number}&uploadId={}", encode(id));
        let mut etag = None;
        let r = self.attempts("PUT (a part)", key, |easy| {
            easy.url(&self.request_url(key, &query))?;
            easy.http_headers(self.headers(&headers)?)?;
            easy.upload(true)?;
            easy.in_filesize(len)?;
            let mut offset = start;
            let mut body = Vec::new();
            etag = None;
            let mut heard = RetryAfter::default();
            let done = {
                let mut t = easy.transfer();
                t.read_function(|out| {
                    let want = out.len().min((start + len - offset) as usize);
                    match file.read_at(&mut out[..want], offset) {
                        Ok(n) => {
                            offset += n as u64;
                            Ok(n)
                        }
                        Err(_) => Err(curl::easy::ReadError::Abort),
                    }
                })?;
                t.header_function(|line| {
                    if let Some(value) = header_value(line, "etag") {
                        etag = Some(value);
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
        if r.status != 200 {
            return Err(self.refused(&format!("PUT (part {number})"), key, &r));
        }
        let etag = etag.ok_or_else(|| {
            io::Error::other(format!(
                "{}: part {number} was answered without an ETag",
                self.describe(key)
            ))
        })?;
        Ok(Part {
            number,
            etag,
            checksum,
        })
    }

    /// `POST KEY?uploadId=ID` with the parts, create-only: `Ok(None)` when an object came to
    /// be there meanwhile (412).
    fn complete(&self, key: &str, id: &str, parts: &[Part]) -> io::Result<Option<()>> {
        let mut xml = String::from("<CompleteMultipartUpload>");
        for p in parts {
            xml.push_str(&format!(
                "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag><ChecksumSHA256>{}</ChecksumSHA256></Part>",
                p.number,
                xml_escape(&p.etag),
                p.checksum
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let query = format!("uploadId={}", encode(id));
        let r = self.post(
            key,
            &query,
            &["If-None-Match: *", "Content-Type: application/xml"],
            xml.as_bytes(),
        )?;
        // A completion that failed part way may come as a 200 with an error body.
        match (r.status, error_of(&r.body)) {
            (200, (None, _)) => Ok(Some(())),
            (412, _) => Ok(None),
            _ => Err(self.refused("POST (complete an upload)", key, &r)),
        }
    }

    /// `DELETE KEY?uploadId=ID`: the parts uploaded so far are dropped.
    fn abort(&self, key: &str, id: &str) -> io::Result<()> {
        let query = format!("uploadId={}", encode(id));
        let r = self.request("DELETE", key, &query, |_| Ok(()), &[])?;
        match r.status {
            200 | 204 | 404 => Ok(()),
            _ => Err(self.refused("DELETE (abort an upload)", key, &r)),
        }
    }

    /// A `POST` of `body` (held in memory: a few KiB at most) with `query`.
    fn post(&self, key: &str, query: &str, headers: &[&str], body: &[u8]) -> io::Result<Response> {
        let mut all: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
        all.push(format!(
            "x-amz-content-sha256: {}",
            match body.is_empty() {
                true => EMPTY_SHA256.to_string(),
                false => hex::encode(Sha256::digest(body)),
            }
        ));
        self.attempts("POST", key, |easy| {
            easy.url(&self.request_url(key, query))?;
            easy.http_headers(self.headers(&all)?)?;
            easy.post(true)?;
            easy.post_field_size(body.len() as u64)?;
            let mut input = body;
            let mut out = Vec::new();
            let mut heard = RetryAfter::default();
            let done = {
                let mut t = easy.transfer();
                t.read_function(|buf| {
                    let n = buf.len().min(input.len());
                    buf[..n].copy_from_slice(&input[..n]);
                    input = &input[n..];
                    Ok(n)
                })?;
                t.header_function(|line| heard.hear(line))?;
                t.write_function(|data| {
                    keep_start(&mut out, data);
                    Ok(data.len())
                })?;
                t.perform()
            };
            done?;
            Ok(Response {
                status: easy.response_code()?,
                body: out,
                retry_after: heard.0,
            })
        })
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
