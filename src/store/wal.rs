//! The write-ahead log (`catalog.sqlite-wal`) as the writer left it, proven before it is
//! trusted. SQLite reads a frame's page from the log without checking it again, and a
//! checkpoint copies whatever the log holds into the catalog: a log cut, punched with a hole or
//! overwritten while a run writes would put zeros or garbage into the catalog, and the run
//! would end as if nothing happened. So the writer checkpoints itself (SQLite's automatic
//! checkpoint is off for it, `wal_autocheckpoint=0`): after each commit the new frames are checked against the chain of
//! checksums SQLite writes (<https://www.sqlite.org/fileformat2.html#walformat>), with the last
//! frame checked before (a log cut below it is seen even when later frames fill the file out
//! again); before every checkpoint, every frame.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

const HEADER: u64 = 32;
const FRAME_HEADER: u64 = 24;

/// Checkpoint once the log is past this (SQLite's automatic one is at 1,000 pages).
pub(crate) const CHECKPOINT_AT: u64 = 4 << 20;

/// What the writer knows of its log: how far it has been proven, and the checksums there.
#[derive(Debug, Default, Clone)]
pub(crate) struct Proven {
    /// The log's header (salts, byte order, page size), once read.
    header: Option<Header>,
    /// Bytes proven from the start (the header and whole frames).
    upto: u64,
    /// The checksums after the last proven frame.
    sum: (u32, u32),
    /// The last proven frame as read (to see it again).
    last: Option<(u64, Vec<u8>)>,
}

#[derive(Debug, Clone, PartialEq)]
struct Header {
    bytes: [u8; 32],
    big_endian: bool,
    page: u64,
    salts: [u8; 8],
}

/// SQLite's checksum over `data` (a multiple of 8 bytes), continuing from `sum`.
fn checksum(big_endian: bool, data: &[u8], sum: (u32, u32)) -> (u32, u32) {
    let (mut s1, mut s2) = sum;
    for pair in data.chunks_exact(8) {
        let word = |b: &[u8]| {
            let w = [b[0], b[1], b[2], b[3]];
            match big_endian {
                true => u32::from_be_bytes(w),
                false => u32::from_le_bytes(w),
            }
        };
        s1 = s1.wrapping_add(word(&pair[..4])).wrapping_add(s2);
        s2 = s2.wrapping_add(word(&pair[4..])).wrapping_add(s1);
    }
    (s1, s2)
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn header(bytes: &[u8]) -> Result<(Header, (u32, u32)), String> {
    let magic = be32(&bytes[0..4]);
    if magic & !1 != 0x377f_0682 {
        return Err(format!("its header's magic number is {magic:#010x}"));
    }
    let big_endian = magic & 1 == 1;
    let page = be32(&bytes[8..12]) as u64;
    if !(512..=65536).contains(&page) || !page.is_power_of_two() {
        return Err(format!("its header's page size is {page}"));
    }
    let sum = checksum(big_endian, &bytes[..24], (0, 0));
    if sum != (be32(&bytes[24..28]), be32(&bytes[28..32])) {
        return Err("its header's checksum does not hold".into());
    }
    let mut h = [0u8; 32];
    h.copy_from_slice(&bytes[..32]);
    let mut salts = [0u8; 8];
    salts.copy_from_slice(&bytes[16..24]);
    Ok((
        Header {
            bytes: h,
            big_endian,
            page,
            salts,
        },
        sum,
    ))
}

/// Frame `bytes` (header and page) against the chain: the checksums after it.
fn frame(h: &Header, bytes: &[u8], sum: (u32, u32)) -> Option<(u32, u32)> {
    if bytes[8..16] != h.salts {
        return None;
    }
    let sum = checksum(h.big_endian, &bytes[..8], sum);
    let sum = checksum(h.big_endian, &bytes[FRAME_HEADER as usize..], sum);
    (sum == (be32(&bytes[16..20]), be32(&bytes[20..24]))).then_some(sum)
}

pub(crate) fn path_of(mirror_catalog: &Path) -> PathBuf {
    let mut p = mirror_catalog.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

impl Proven {
    /// After a checkpoint that emptied the log: nothing to prove yet.
    pub(crate) fn reset(&mut self) {
        *self = Proven::default();
    }

    /// Prove what a commit added (`all`: every frame from the start). `Err` names what does not
    /// hold: the log shorter than what was proven, the header or the last proven frame no longer
    /// as read, a frame whose checksum does not follow.
    /// Bytes of the log proven so far.
    pub(crate) fn proven_upto(&self) -> u64 {
        self.upto
    }

    /// `Ok(true)` when the proof came further than before (or the log began again).
    pub(crate) fn prove(&mut self, wal: &Path, all: bool) -> Result<bool, String> {
        let proven_before = self.upto;
        if all {
            self.reset();
        }
        let mut f = match std::fs::File::open(wal) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && proven_before == 0 => {
                return Ok(false)
            }
            Err(e) => return Err(format!("cannot be read: {e}")),
        };
        let len = f.metadata().map_err(|e| e.to_string())?.len();
        if len < proven_before {
            return Err(format!(
                "it is {len} bytes long, shorter than the {proven_before} bytes of committed \
                 frames it held"
            ));
        }
        if len < HEADER {
            return match len {
                0 => Ok(false),
                _ => Err(format!("it is {len} bytes long, shorter than its header")),
            };
        }
        let mut head = [0u8; 32];
        f.read_exact(&mut head).map_err(|e| e.to_string())?;
        let mut proven_before = proven_before;
        let mut began_again = false;
        if self.header.as_ref().is_some_and(|h| h.bytes != head) {
            // A new header: SQLite began the log again after a checkpoint (its salts change);
            // one that does not hold is damage.
            header(&head).map_err(|e| format!("its header changed and {e}"))?;
            self.reset();
            proven_before = 0;
            began_again = true;
        }
        if self.header.is_none() {
            let (h, sum) = header(&head)?;
            self.header = Some(h);
            self.sum = sum;
            self.upto = HEADER;
        }
        let h = self.header.clone().expect("read above");
        let size = FRAME_HEADER + h.page;
        if let Some((at, seen)) = &self.last {
            let mut again = vec![0u8; seen.len()];
            f.seek(SeekFrom::Start(*at)).map_err(|e| e.to_string())?;
            f.read_exact(&mut again).map_err(|e| e.to_string())?;
            if &again != seen {
                return Err(format!(
                    "the frame at byte {at}, proven after an earlier commit, is no longer as written"
                ));
            }
        }
        f.seek(SeekFrom::Start(self.upto))
            .map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; size as usize];
        // The frames past the last commit frame are a transaction in progress (none here: this
        // runs after a commit) or left from before a restart (other salts).
        let mut at = self.upto;
        let (mut upto, mut sum, mut last) = (self.upto, self.sum, self.last.clone());
        let mut committed = sum;
        // As SQLite reads a log: up to the first frame that does not follow (frames past the
        // last commit are older ones, or a rolled-back transaction's).
        while at + size <= len {
            f.read_exact(&mut buf).map_err(|e| e.to_string())?;
            let Some(next) = frame(&h, &buf, sum) else {
                break;
            };
            sum = next;
            if be32(&buf[4..8]) != 0 {
                // A commit frame: proven up to its end.
                upto = at + size;
                committed = sum;
                last = Some((at, buf.clone()));
            }
            at += size;
        }
        if upto < proven_before {
            return Err(format!(
                "its frames that hold are {upto} bytes, fewer than the {proven_before} bytes of \
                 committed frames it held (cut or overwritten)"
            ));
        }
        let advanced = began_again || upto > proven_before;
        self.upto = upto;
        self.sum = committed;
        self.last = last;
        Ok(advanced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn log_of(dir: &Path) -> (Connection, PathBuf) {
        let db = dir.join("c.sqlite");
        let c = Connection::open(&db).unwrap();
        c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t(a);")
            .unwrap();
        for i in 0..20 {
            c.execute("INSERT INTO t VALUES (?1)", [i.to_string().repeat(500)])
                .unwrap();
        }
        (c, path_of(&db))
    }

    #[test]
    fn a_log_as_sqlite_wrote_it_is_proven_commit_by_commit_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (c, wal) = log_of(dir.path());
        let mut p = Proven::default();
        p.prove(&wal, false).unwrap();
        let upto = p.upto;
        assert!(upto > HEADER);
        c.execute("INSERT INTO t VALUES ('more')", []).unwrap();
        p.prove(&wal, false).unwrap();
        assert!(p.upto > upto);
        p.prove(&wal, true).unwrap();
    }

    #[test]
    fn a_cut_a_hole_or_garbage_in_the_log_is_found() {
        for damage in ["cut", "hole", "garbage"] {
            let dir = tempfile::tempdir().unwrap();
            let (c, wal) = log_of(dir.path());
            let mut p = Proven::default();
            p.prove(&wal, false).unwrap();
            let len = std::fs::metadata(&wal).unwrap().len();
            match damage {
                "cut" => {
                    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
                    f.set_len(len / 2).unwrap();
                }
                "hole" => {
                    // Cut, then the writer goes on past the old end: zeros in between.
                    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
                    f.set_len(len / 2).unwrap();
                    drop(f);
                    c.execute("INSERT INTO t VALUES ('after')", []).unwrap();
                }
                _ => {
                    let mut bytes = std::fs::read(&wal).unwrap();
                    let at = bytes.len() / 3;
                    for b in &mut bytes[at..at + 64] {
                        *b ^= 0x5a;
                    }
                    std::fs::write(&wal, bytes).unwrap();
                }
            }
            let incremental = p.clone().prove(&wal, false);
            let whole = p.prove(&wal, true);
            assert!(whole.is_err(), "{damage}: whole");
            if damage != "garbage" {
                assert!(incremental.is_err(), "{damage}: after the commit");
            }
        }
    }
}
