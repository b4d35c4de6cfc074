//! `export warc`: WARC 1.1 files, each record its own gzip member (`rsmirror-NNNNN.warc.gz`,
//! a new file once one passes `--warc-size`). Each file opens with a `warcinfo` record; then
//! one `resource` record per state exported — the state at WHEN in URI order, or with
//! `--all-versions` every version in the order it arrived, a deletion as a `metadata` record
//! (`deleted: TIME`). `WARC-Date` is when the state arrived in the mirror (the start of its
//! run); the block is the bytes exactly as fetched, so `WARC-Block-Digest` and
//! `WARC-Payload-Digest` are both its SHA-256 from the catalog, and no HTTP headers are made up
//! (none were kept). Each object is read once, checked as it is compressed. A file is written
//! as `*.warc.gz.open` and renamed only once complete.

use crate::access::{each_state, each_version, open_object, Reader, VersionRow};
use crate::error::Error;
use crate::export::gzip::Member;
use crate::export::tree::Walk;
use crate::export::Summary;
use crate::store::ObjectStore;
use crate::store::StoreError;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The default size past which a new WARC file is started (1 GB, as the WARC world does).
pub const DEFAULT_SIZE: u64 = 1_000_000_000;

/// A deterministic `urn:uuid:` for a record (the same export gives the same ids).
fn record_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let mut b: [u8; 16] = h.finalize()[..16].try_into().expect("16 bytes");
    b[6] = (b[6] & 0x0f) | 0x80; // version 8: a custom, name-based UUID
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    let x = hex::encode(b);
    format!(
        "<urn:uuid:{}-{}-{}-{}-{}>",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..]
    )
}

/// Checks a block's SHA-256 and length once it has gone into the file.
type Check<'a> = &'a mut dyn FnMut(&crate::access::Got) -> Result<(), Error>;

struct Out<'a> {
    dest: &'a Path,
    max: u64,
    reader: &'a Reader,
    run: i64,
    index: u32,
    file: Option<(BufWriter<File>, PathBuf, u64)>,
    warcinfo: String,
    buf: Vec<u8>,
    gz: Member,
    files: Vec<String>,
    /// What ARC pages said of their versions: `ai_indexable` in their records, the rest in a
    /// `metadata` record concurrent to each.
    ai: crate::store::arc_records::ArcPages,
}

/// One record as one gzip member into `w` (the file at `path`, or a worker's buffer): `head`,
/// the block from `body` (`size` bytes, as far as known; read from `object`, hashed on the way
/// by [`crate::access::copy_hashing`]), and the record's end. `check`: the block must hash to
/// this (an object's bytes). The bytes written.
#[allow(clippy::too_many_arguments)]
fn member(
    gz: &mut Member,
    buf: &mut [u8],
    head: &[u8],
    (body, size): (&mut dyn Read, u64),
    object: &Path,
    check: Option<Check<'_>>,
    w: &mut impl Write,
    path: &Path,
) -> Result<u64, Error> {
    let io_err = |e: io::Error| Error::from(StoreError::io("writing", path, e));
    gz.begin(head.len() as u64 + size).map_err(io_err)?;
    gz.write(head, w).map_err(io_err)?;
    let mut body = body;
    let mut into = IntoMember { gz, w };
    let got = crate::access::copy_hashing(&mut body, &mut into, buf, object, path)?;
    let IntoMember { gz, w } = into;
    if got.reader_gone() {
        // A broken pipe: a file has none, but say so rather than write a short record.
        return Err(io_err(io::ErrorKind::BrokenPipe.into()));
    }
    if let Some(check) = check {
        check(&got)?;
    }
    gz.write(b"\r\n\r\n", w).map_err(io_err)?;
    gz.finish(w).map_err(io_err)
}

/// Bytes written into a member under way (flushing is the file's business, not a record's).
struct IntoMember<'a, W: Write> {
    gz: &'a mut Member,
    w: &'a mut W,
}

impl<W: Write> Write for IntoMember<'_, W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.gz.write(b, self.w)?;
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A state's record as one member: its object read, checked against the catalog as it is
/// compressed (a damaged object stops the export, naming the URI).
fn object_member(
    gz: &mut Member,
    buf: &mut [u8],
    head: &[u8],
    (objects, uri, v): (&ObjectStore, &str, &VersionRow),
    w: &mut impl Write,
    path: &Path,
) -> Result<u64, Error> {
    let (mut object, object_path) = open_object(objects, uri, v)?;
    let mut check = |got: &crate::access::Got| crate::access::check(uri, v, got);
    let size = v.length.unwrap_or(0).max(0) as u64;
    member(
        gz,
        buf,
        head,
        (&mut object, size),
        &object_path,
        Some(&mut check),
        w,
        path,
    )
}

/// The SHA-256 (hex) of a `response` record's block: the HTTP head `http`, then the state's
/// object (read once more: only bytes kept in a content coding have such a record).
fn block_digest(
    objects: &ObjectStore,
    uri: &str,
    v: &VersionRow,
    http: &str,
) -> Result<String, Error> {
    let (mut object, path) = open_object(objects, uri, v)?;
    let mut hasher = Sha256::new();
    hasher.update(http.as_bytes());
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match object.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::io("reading", &path, e).into()),
        }
    }
    Ok(hex::encode(hasher.finalize()))
}

/// A record for a worker to compress whole.
struct Task {
    head: String,
    body: Body,
}

enum Body {
    /// A state's object, checked against the catalog as it is read.
    Object { uri: String, version: VersionRow },
    /// A block made here (a deletion's fields).
    Bytes(Vec<u8>),
}

/// Records of more bytes than this are compressed by the walk itself, straight into the file
/// (a worker holds a record's compressed bytes until its turn to be written).
const HELD: u64 = 4 << 20;
/// At most this many records, and about this many bytes, are with the workers at once.
const IN_FLIGHT: usize = 256;
const IN_FLIGHT_BYTES: u64 = 32 << 20;

/// Compresses records on worker threads (deflate is most of a WARC export's time; a member
/// per record cannot share one stream), while the walk reads the catalog and writes the
/// members in order.
struct Pool {
    to: Vec<crossbeam_channel::Sender<Task>>,
    from: Vec<crossbeam_channel::Receiver<Result<Vec<u8>, Error>>>,
    /// Records handed out and written, counted from 0: record k goes to worker k % n.
    sent: u64,
    written: u64,
    /// The most bytes each record in flight can take in the file, oldest first, and their sum.
    bounds: std::collections::VecDeque<u64>,
    bound: u64,
}

impl Pool {
    fn start<'scope, 'env>(
        sc: &'scope std::thread::Scope<'scope, 'env>,
        objects: &'env ObjectStore,
    ) -> Pool {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
        let (mut to, mut from) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let (task_tx, task_rx) = crossbeam_channel::unbounded::<Task>();
            let (done_tx, done_rx) = crossbeam_channel::unbounded();
            to.push(task_tx);
            from.push(done_rx);
            sc.spawn(move || {
                let mut gz = Member::new(6);
                let mut buf = vec![0u8; 256 * 1024];
                let held = Path::new("(a record held in memory)");
                for task in task_rx {
                    let mut out = Vec::new();
                    let r = match &task.body {
                        Body::Bytes(b) => {
                            let mut body: &[u8] = b;
                            let from = Path::new("(the record's fields)");
                            member(
                                &mut gz,
                                &mut buf,
                                task.head.as_bytes(),
                                (&mut body, b.len() as u64),
                                from,
                                None,
                                &mut out,
                                held,
                            )
                        }
                        Body::Object { uri, version } => object_member(
                            &mut gz,
                            &mut buf,
                            task.head.as_bytes(),
                            (objects, uri, version),
                            &mut out,
                            held,
                        ),
                    };
                    // The walk has stopped when nobody takes it.
                    if done_tx.send(r.map(|_| out)).is_err() {
                        break;
                    }
                }
            });
        }
        Pool {
            to,
            from,
            sent: 0,
            written: 0,
            bounds: Default::default(),
            bound: 0,
        }
    }

    fn in_flight(&self) -> bool {
        self.written < self.sent
    }
}

impl Out<'_> {
    /// Hand a record to the workers; `bound`: the most bytes its member can take.
    fn send(&mut self, pool: &mut Pool, task: Task, bound: u64) -> Result<(), Error> {
        while pool.sent - pool.written >= IN_FLIGHT as u64
            || (pool.in_flight() && pool.bound + bound > IN_FLIGHT_BYTES)
        {
            self.write_next(pool)?;
        }
        let n = pool.to.len() as u64;
        if pool.to[(pool.sent % n) as usize].send(task).is_err() {
            // A worker stopped: only a panic does that.
            return Err(Error::Damaged(
                "export warc: a compressing thread stopped".into(),
            ));
        }
        pool.sent += 1;
        pool.bounds.push_back(bound);
        pool.bound += bound;
        Ok(())
    }

    /// Write the oldest record in flight, once compressed.
    fn write_next(&mut self, pool: &mut Pool) -> Result<(), Error> {
        let n = pool.from.len() as u64;
        let got = pool.from[(pool.written % n) as usize]
            .recv()
            .map_err(|_| Error::Damaged("export warc: a compressing thread stopped".into()))??;
        pool.written += 1;
        pool.bound -= pool.bounds.pop_front().unwrap_or(0);
        let (w, path, size) = self.file.as_mut().expect("an open file");
        w.write_all(&got)
            .map_err(|e| StoreError::io("writing", path, e))?;
        *size += got.len() as u64;
        Ok(())
    }

    fn drain(&mut self, pool: &mut Pool) -> Result<(), Error> {
        while pool.in_flight() {
            self.write_next(pool)?;
        }
        Ok(())
    }

    /// The file the next record goes into: the open one, unless it is (or may be, with the
    /// records in flight) past the size; then, once they are written, a new one if it is. A
    /// new file starts after the record that takes one past the size, as if written one by
    /// one.
    fn next_file(&mut self, pool: &mut Pool) -> Result<(), Error> {
        let size = self.file.as_ref().map_or(0, |(_, _, n)| *n);
        if self.file.is_some() && size + pool.bound >= self.max {
            self.drain(pool)?;
            self.close_if(false)?;
        }
        self.file()
    }

    fn name(&self) -> String {
        format!("rsmirror-{:05}.warc.gz", self.index)
    }

    /// The open file, a new one (with its warcinfo record) when none is open.
    fn file(&mut self) -> Result<(), Error> {
        if self.file.is_some() {
            return Ok(());
        }
        let name = self.name();
        let path = self.dest.join(format!("{name}.open"));
        let f = File::create(&path).map_err(|e| StoreError::io("creating", &path, e))?;
        self.file = Some((BufWriter::with_capacity(1 << 20, f), path, 0));
        self.warcinfo = record_id(&["warcinfo", &name, &self.run.to_string()]);
        let mut fields = format!(
            "software: rsmirror {}\r\nformat: WARC File Format 1.1\r\n\
             conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n\
             description: a mirror kept by rsmirror, as {} left it; each record's WARC-Date is when its state arrived in the mirror\r\n",
            env!("CARGO_PKG_VERSION"),
            self.reader.describe_run(self.run)
        );
        let sources = crate::store::history::source_urls(self.reader.catalog())?;
        for s in sources {
            fields.push_str(&format!("isPartOf: {s}\r\n"));
        }
        let date = crate::export::micros(&jiff::Timestamp::now().to_string());
        let headers = format!(
            "WARC-Record-ID: {}\r\nWARC-Date: {date}\r\nWARC-Filename: {name}\r\n",
            self.warcinfo
        );
        self.fields_record("warcinfo", &headers, &fields)?;
        Ok(())
    }

    /// A record whose block is `application/warc-fields` (warcinfo, metadata): `headers` are
    /// its own, each ending in CRLF.
    fn fields_record(&mut self, kind: &str, headers: &str, fields: &str) -> Result<(), Error> {
        let head = format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\n{headers}Content-Type: application/warc-fields\r\n\
             WARC-Block-Digest: sha256:{}\r\nContent-Length: {}\r\n\r\n",
            hex::encode(Sha256::digest(fields.as_bytes())),
            fields.len()
        );
        self.member(
            head.as_bytes(),
            (&mut fields.as_bytes(), fields.len() as u64),
            Path::new("(the record's fields)"),
            None,
        )
    }

    /// One record as one gzip member straight into the file (the warcinfo record, and records
    /// too big to be held whole by a worker).
    fn member(
        &mut self,
        head: &[u8],
        body: (&mut dyn Read, u64),
        object: &Path,
        check: Option<Check<'_>>,
    ) -> Result<(), Error> {
        let (w, path, size) = self.file.as_mut().expect("an open file");
        *size += member(
            &mut self.gz,
            &mut self.buf,
            head,
            body,
            object,
            check,
            w,
            path,
        )?;
        Ok(())
    }

    /// Close the file once it is past the size (or at the end): flushed, synced, renamed.
    fn close_if(&mut self, at_end: bool) -> Result<(), Error> {
        let full = self.file.as_ref().is_some_and(|(_, _, n)| *n >= self.max);
        if !(full || at_end) {
            return Ok(());
        }
        if let Some((w, path, _)) = self.file.take() {
            let f = w
                .into_inner()
                .map_err(|e| StoreError::io("writing", &path, e.into_error()))?;
            f.sync_all()
                .map_err(|e| StoreError::io("writing", &path, e))?;
            let name = self.name();
            let done = self.dest.join(&name);
            std::fs::rename(&path, &done).map_err(|e| StoreError::io("writing", &done, e))?;
            self.files.push(name);
            self.index += 1;
        }
        Ok(())
    }

    /// One state's record (a deletion's, with `--all-versions`): the bytes of its block.
    fn resource(
        &mut self,
        pool: &mut Pool,
        uri: &str,
        v: &VersionRow,
        objects: &ObjectStore,
    ) -> Result<u64, Error> {
        self.next_file(pool)?;
        let arrived = self.reader.arrived(v.run).to_string();
        let date = crate::export::micros(&arrived);
        let id = record_id(&[uri, &v.version.to_string()]);
        if v.deleted() {
            let fields = format!("deleted: {date}\r\nrun: {}\r\n", v.run);
            let record = (id.as_str(), date.as_str(), uri);
            self.metadata(pool, record, "", "application/warc-fields", fields)?;
            return Ok(0);
        }
        let sha = v.sha256.clone().unwrap_or_default();
        let length = v.length.unwrap_or(0).max(0) as u64;
        // An ARC page's `ai_indexable` (recorded, not enforced), in a field of our own; the
        // rest of what the page said in a metadata record after it.
        let page = self.ai.of(self.reader.catalog(), v.version)?;
        let ai = match &page {
            Some(p) => format!("rsmirror-ARC-ai-indexable: {}\r\n", p.ai_indexable),
            None => String::new(),
        };
        let media_type = v
            .media_type
            .as_deref()
            .unwrap_or("application/octet-stream");
        // Bytes kept in a content coding (gzip as served): a `response` record whose HTTP head
        // says so, so that a replay decodes them (the head rebuilt from the catalog, as a field
        // of our own says); other bytes: a `resource` record.
        let (kind, content_type, fields, http, block) = match v.encoding() {
            None => ("resource", media_type, "", String::new(), sha.clone()),
            Some(coding) => {
                let http = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {media_type}\r\n\
                     Content-Encoding: {coding}\r\nContent-Length: {length}\r\n\r\n"
                );
                let block = block_digest(objects, uri, v, &http)?;
                (
                    "response",
                    "application/http;msgtype=response",
                    "rsmirror-HTTP-Head: rebuilt from the catalog\r\n",
                    http,
                    block,
                )
            }
        };
        let head = format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: {id}\r\nWARC-Date: {date}\r\n\
             WARC-Target-URI: {uri}\r\nWARC-Warcinfo-ID: {}\r\nContent-Type: {content_type}\r\n\
             {ai}{fields}WARC-Block-Digest: sha256:{block}\r\nWARC-Payload-Digest: sha256:{sha}\r\n\
             Content-Length: {}\r\n\r\n{http}",
            self.warcinfo,
            http.len() as u64 + length,
        );
        if length <= HELD {
            let body = Body::Object {
                uri: uri.to_string(),
                version: v.clone(),
            };
            let bound = bound(head.len() as u64 + length);
            self.send(pool, Task { head, body }, bound)?;
        } else {
            // A big record: everything before it written first, then it, streamed.
            self.drain(pool)?;
            let (w, path, size) = self.file.as_mut().expect("an open file");
            *size += object_member(
                &mut self.gz,
                &mut self.buf,
                head.as_bytes(),
                (objects, uri, v),
                w,
                path,
            )?;
        }
        if let Some(page) = page {
            self.arc_page(pool, (uri, &id, &date), &page)?;
        }
        Ok(length)
    }

    /// What an ARC page said of the version in record `id`, as a `metadata` record concurrent
    /// to it (WARC 1.1 §5.7): a JSON object, `ai_snapshot` as published.
    fn arc_page(
        &mut self,
        pool: &mut Pool,
        (uri, id, date): (&str, &str, &str),
        page: &crate::store::arc_records::ArcPage,
    ) -> Result<(), Error> {
        let json = serde_json::to_string(page).expect("serialisable");
        let meta_id = record_id(&[uri, id, "arc-page"]);
        let concurrent = format!("WARC-Concurrent-To: {id}\r\n");
        let record = (meta_id.as_str(), date, uri);
        self.metadata(pool, record, &concurrent, "application/json", json)
    }

    /// A `metadata` record about `uri` (`headers`: more of its own, each ending in CRLF).
    fn metadata(
        &mut self,
        pool: &mut Pool,
        (id, date, uri): (&str, &str, &str),
        headers: &str,
        content_type: &str,
        block: String,
    ) -> Result<(), Error> {
        let head = format!(
            "WARC/1.1\r\nWARC-Type: metadata\r\nWARC-Record-ID: {id}\r\nWARC-Date: {date}\r\n\
             WARC-Target-URI: {uri}\r\n{headers}WARC-Warcinfo-ID: {}\r\n\
             Content-Type: {content_type}\r\nWARC-Block-Digest: sha256:{}\r\n\
             Content-Length: {}\r\n\r\n",
            self.warcinfo,
            hex::encode(Sha256::digest(block.as_bytes())),
            block.len()
        );
        let bound = bound(head.len() as u64 + block.len() as u64);
        let body = Body::Bytes(block.into_bytes());
        self.send(pool, Task { head, body }, bound)
    }
}

/// The most bytes a member of a record of `n` bytes can take: deflate's stored blocks add 5
/// bytes per 16 KB at worst, gzip 18, and the record's end 4.
fn bound(n: u64) -> u64 {
    n + n / 3000 + 64
}

pub(crate) fn export(
    walk: &Walk<'_>,
    dest: &Path,
    all_versions: bool,
    max: u64,
    summary: &mut Summary,
) -> Result<(), Error> {
    // An earlier export's files go (a WARC is rewritten, never patched).
    for e in std::fs::read_dir(dest).map_err(|e| StoreError::io("reading", dest, e))? {
        let e = e.map_err(|e| StoreError::io("reading", dest, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("rsmirror-")
            && (name.ends_with(".warc.gz") || name.ends_with(".warc.gz.open"))
        {
            std::fs::remove_file(e.path())
                .map_err(|e2| StoreError::io("removing", &e.path(), e2))?;
            summary.removed += 1;
        }
    }
    let mut out = Out {
        dest,
        max,
        reader: walk.reader,
        run: walk.point.run.unwrap_or(0),
        index: 0,
        file: None,
        warcinfo: String::new(),
        buf: vec![0; 256 * 1024],
        gz: Member::new(6),
        files: Vec::new(),
        ai: crate::store::arc_records::ArcPages::new(walk.reader.catalog())?,
    };
    let objects = walk.reader.objects()?;
    std::thread::scope(|sc| -> Result<(), Error> {
        let mut pool = Pool::start(sc, objects);
        let mut record = |uri: &str, v: &VersionRow| -> Result<bool, Error> {
            let bytes = out.resource(&mut pool, uri, v, objects)?;
            summary.files += 1;
            summary.written += 1;
            summary.bytes += bytes;
            Ok(true)
        };
        if all_versions {
            each_version(walk.reader, walk.point, &walk.filter, |uri, v| {
                record(uri, v)
            })?;
        } else {
            each_state(walk.reader, walk.states(), &walk.filter, |uri, _, v| {
                record(uri, v)
            })?;
        }
        out.drain(&mut pool)
        // The workers stop as the pool's channels go.
    })?;
    if out.index == 0 && out.file.is_none() {
        // Nothing to export: one file with its warcinfo record says so.
        out.file()?;
    }
    out.close_if(true)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_are_uuids_and_stable() {
        let a = record_id(&["http://ex.org/a", "1"]);
        assert_eq!(a, record_id(&["http://ex.org/a", "1"]));
        assert_ne!(a, record_id(&["http://ex.org/a", "2"]));
        assert_eq!(a.len(), "<urn:uuid:>".len() + 36);
        assert_eq!(&a[24..25], "8", "{a}");
    }
}
