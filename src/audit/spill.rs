//! What a source lists, written to the mirror's `staging/` as the source is walked, and read back
//! in list order as often as needed: an audit of a mirror too large to hold in one pass walks the
//! source once and compares each slice of the mirror with this copy.
//!
//! A plain file of records, written through one buffer and read through another: no index, no
//! journal, no sync (it is thrown away with the audit; after a crash, the next run that writes
//! empties `staging/`). An entry keeps what the comparison reads: the URI, the declared
//! lastmod, length and digests, where it was listed (document, line, and the document's scope,
//! held once per document), not its media type or duplicates.

use crate::audit::mirror_states::{uri_key, Key};
use crate::engine::expected::{Item, Refused};
use crate::engine::plan::{Declared, Listed};
use crate::net::Scope;
use crate::rs::digest::{Algorithm, Digest};
use crate::store::StoreError;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the walk of a source hands on, in the order it walks.
// One at a time, moved from the walk to the comparison: boxing the item would only add an
// allocation per entry.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Entry {
    /// The entries that follow are of this collection.
    Collection(Arc<str>),
    Item(Item),
    /// A URI the format leaves out on purpose (neither missing nor extra), after the
    /// collection's entries.
    Skipped(String),
}

const COLLECTION: u8 = 1;
const LISTED: u8 = 2;
const REFUSED: u8 = 3;
const SKIPPED: u8 = 4;

/// A spill being written.
pub struct SpillWriter {
    out: BufWriter<File>,
    spill: Spill,
    doc_ids: HashMap<Arc<str>, u32>,
    /// A record's body, reused.
    body: Vec<u8>,
}

/// A finished spill: read it with [`Spill::replay`]. The file goes when this is dropped.
pub struct Spill {
    path: PathBuf,
    /// The listing documents and their scopes, by id (a list of millions has a few hundred).
    docs: Vec<(Arc<str>, Arc<Scope>)>,
    /// Entries written.
    pub entries: u64,
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn io_error(path: &Path) -> impl Fn(io::Error) -> StoreError + '_ {
    move |e| StoreError::io("the source's list, spilled", path, e)
}

/// A spill that does not read back as it was written.
fn invalid(path: &Path, what: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    io_error(path)(io::Error::new(io::ErrorKind::InvalidData, what))
}

impl SpillWriter {
    /// A new, empty spill in `dir` (the mirror's `staging/`).
    pub(crate) fn create(dir: &Path) -> Result<SpillWriter, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("creating", dir, e))?;
        static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("spill-{}-{n}.bin", std::process::id()));
        let file = File::create(&path).map_err(io_error(&path))?;
        Ok(SpillWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            spill: Spill {
                path,
                docs: Vec::new(),
                entries: 0,
            },
            doc_ids: HashMap::new(),
            body: Vec::new(),
        })
    }

    pub(crate) fn push(&mut self, entry: &Entry) -> Result<(), StoreError> {
        // A record: its kind, the key of its URI (zeros for a collection), the length of the
        // rest, and the rest; a reader skips another slice's record without parsing it.
        let mut body = std::mem::take(&mut self.body);
        body.clear();
        let (tag, key) = match entry {
            Entry::Collection(id) => {
                put_str(&mut body, id);
                (COLLECTION, [0; 16])
            }
            Entry::Skipped(uri) => {
                put_str(&mut body, uri);
                (SKIPPED, uri_key(uri))
            }
            Entry::Item(Item::Refused(r)) => {
                put_str(&mut body, &r.uri);
                put_str(&mut body, &r.reason);
                (REFUSED, uri_key(&r.uri))
            }
            Entry::Item(Item::Listed(l)) => {
                put_str(&mut body, l.uri.as_str());
                let doc = self.doc_id(l);
                body.extend_from_slice(&doc.to_le_bytes());
                body.extend_from_slice(&l.line.to_le_bytes());
                match l.declared.lastmod {
                    Some(t) => {
                        body.push(1);
                        body.extend_from_slice(&t.as_nanosecond().to_le_bytes());
                    }
                    None => body.push(0),
                }
                match l.declared.length {
                    Some(n) => {
                        body.push(1);
                        body.extend_from_slice(&n.to_le_bytes());
                    }
                    None => body.push(0),
                }
                // Each as written, algorithm and value apart (`declared_hash` normalises to
                // hex, and a value may hold a space: a finding quotes the source).
                body.extend_from_slice(&(l.declared.digests.len() as u32).to_le_bytes());
                for d in &l.declared.digests {
                    put_str(&mut body, d.algorithm.name());
                    put_str(&mut body, d.written());
                }
                (LISTED, uri_key(l.uri.as_str()))
            }
        };
        let mut head = [0u8; 21];
        head[0] = tag;
        head[1..17].copy_from_slice(&key);
        head[17..].copy_from_slice(&(body.len() as u32).to_le_bytes());
        let path = &self.spill.path;
        self.out.write_all(&head).map_err(io_error(path))?;
        self.out.write_all(&body).map_err(io_error(path))?;
        self.body = body;
        self.spill.entries += 1;
        Ok(())
    }

    fn doc_id(&mut self, l: &Listed) -> u32 {
        if let Some(&id) = self.doc_ids.get(&l.document) {
            return id;
        }
        let id = self.spill.docs.len() as u32;
        self.spill.docs.push((l.document.clone(), l.scope.clone()));
        self.doc_ids.insert(l.document.clone(), id);
        id
    }

    /// Everything written out; the spill, ready to be read.
    pub(crate) fn finish(mut self) -> Result<Spill, StoreError> {
        self.out.flush().map_err(io_error(&self.spill.path))?;
        Ok(self.spill)
    }
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

impl Spill {
    /// Every entry whose URI's key `keep` says yes to (and every collection), in the order it
    /// was written, with its place among all the entries written. The others are skipped over
    /// without being read.
    pub(crate) fn replay(
        &self,
        keep: impl Fn(&Key) -> bool,
        mut f: impl FnMut(u64, Entry),
    ) -> Result<(), StoreError> {
        let bad = |what: &str| invalid(&self.path, what);
        let file = File::open(&self.path).map_err(io_error(&self.path))?;
        let mut r = Reader {
            inner: BufReader::with_capacity(1 << 20, file),
            path: &self.path,
        };
        for ord in 0..self.entries {
            let tag = r.u8()?;
            let key: Key = r.array()?;
            let len = u32::from_le_bytes(r.array()?);
            if tag != COLLECTION && !keep(&key) {
                r.inner
                    .seek_relative(i64::from(len))
                    .map_err(io_error(&self.path))?;
                continue;
            }
            let entry = match tag {
                COLLECTION => Entry::Collection(r.string()?.into()),
                SKIPPED => Entry::Skipped(r.string()?),
                REFUSED => Entry::Item(Item::Refused(Refused {
                    uri: r.string()?,
                    reason: r.string()?,
                })),
                LISTED => {
                    let uri = r.string()?;
                    let uri = url::Url::parse(&uri).map_err(|e| bad(&format!("{uri}: {e}")))?;
                    let doc = u32::from_le_bytes(r.array()?) as usize;
                    let (document, scope) = self
                        .docs
                        .get(doc)
                        .cloned()
                        .ok_or_else(|| bad("a document id out of range"))?;
                    let line = u64::from_le_bytes(r.array()?);
                    let lastmod = match r.u8()? {
                        0 => None,
                        _ => Some(
                            jiff::Timestamp::from_nanosecond(i128::from_le_bytes(r.array()?))
                                .map_err(|e| bad(&e.to_string()))?,
                        ),
                    };
                    let length = match r.u8()? {
                        0 => None,
                        _ => Some(u64::from_le_bytes(r.array()?)),
                    };
                    let n = u32::from_le_bytes(r.array()?);
                    let mut digests = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        let algorithm = Algorithm::parse(&r.string()?);
                        digests.push(Digest::new(algorithm, &r.string()?));
                    }
                    Entry::Item(Item::Listed(Listed {
                        uri,
                        declared: Declared {
                            lastmod,
                            length,
                            digests,
                            encoding: None,
                            categories: Vec::new(),
                        },
                        media_type: None,
                        duplicates: Vec::new(),
                        document,
                        line,
                        scope,
                    }))
                }
                tag => return Err(bad(&format!("an entry of unknown kind {tag}"))),
            };
            f(ord, entry);
        }
        Ok(())
    }
}

struct Reader<'a> {
    inner: BufReader<File>,
    path: &'a Path,
}

impl Reader<'_> {
    fn array<const N: usize>(&mut self) -> Result<[u8; N], StoreError> {
        let mut b = [0u8; N];
        self.inner.read_exact(&mut b).map_err(io_error(self.path))?;
        Ok(b)
    }

    fn u8(&mut self) -> Result<u8, StoreError> {
        Ok(self.array::<1>()?[0])
    }

    fn string(&mut self) -> Result<String, StoreError> {
        let n = u32::from_le_bytes(self.array()?) as usize;
        let mut b = vec![0u8; n];
        self.inner.read_exact(&mut b).map_err(io_error(self.path))?;
        String::from_utf8(b).map_err(|e| invalid(self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(uri: &str, doc: &str, line: u64, declared: Declared) -> Listed {
        Listed {
            uri: url::Url::parse(uri).unwrap(),
            declared,
            media_type: None,
            duplicates: Vec::new(),
            document: doc.into(),
            line,
            scope: Arc::new(Scope::for_document(&url::Url::parse(doc).unwrap(), &[])),
        }
    }

    #[test]
    fn a_spill_reads_back_what_the_comparison_reads_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SpillWriter::create(dir.path()).unwrap();
        // A value with a space inside (an ARC checksum may hold one): unusable, and kept so.
        let spaced = Digest::new(Algorithm::Sha256, &format!("{} x", "ab".repeat(32)));
        assert!(!spaced.is_usable());
        let mut full = Declared {
            lastmod: Some("2024-02-29T23:59:59.123456789Z".parse().unwrap()),
            length: Some(u64::MAX),
            digests: crate::rs::digest::parse_hash_attr(
                "md5:0123456789ABCDEF0123456789abcdef sha-256:LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564= \
                 bare x-hash:a:b sha-1:short",
            ),
            encoding: None,
            categories: Vec::new(),
        };
        full.digests.push(spaced);
        let written = vec![
            Entry::Collection("http://e.org/capabilitylist.xml".into()),
            Entry::Item(Item::Listed(listed(
                "http://e.org/a%20b?q=1",
                "http://e.org/rl1.xml",
                7,
                full.clone(),
            ))),
            Entry::Item(Item::Refused(Refused {
                uri: "http://elsewhere.org/x".into(),
                reason: "outside the scope".into(),
            })),
            Entry::Item(Item::Listed(listed(
                "http://e.org/é",
                "http://e.org/rl2.xml",
                u64::MAX,
                Declared::default(),
            ))),
            Entry::Item(Item::Listed(listed(
                "http://e.org/c",
                "http://e.org/rl1.xml",
                9,
                Declared::default(),
            ))),
            Entry::Skipped("http://e.org/private".into()),
        ];
        for e in &written {
            w.push(e).unwrap();
        }
        let spill = w.finish().unwrap();
        assert_eq!(spill.docs.len(), 2, "a document's scope is held once");
        for _ in 0..2 {
            let mut read = Vec::new();
            spill.replay(|_| true, |_, e| read.push(e)).unwrap();
            assert_eq!(format!("{read:?}"), format!("{written:?}"));
        }
        // Entries of other URIs are skipped over; collections always come.
        let mut read = Vec::new();
        spill
            .replay(
                |k| *k == uri_key("http://e.org/c"),
                |ord, e| read.push((ord, e)),
            )
            .unwrap();
        let want = [(0, &written[0]), (4, &written[4])];
        assert_eq!(format!("{read:?}"), format!("{want:?}"));
        let path = spill.path.clone();
        assert!(path.is_file());
        drop(spill);
        assert!(!path.exists(), "the spill goes with the audit");
    }
}
