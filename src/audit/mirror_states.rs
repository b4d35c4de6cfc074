//! A compact, read-only index of the mirror's current states, for audits of lists of a million
//! entries in bounded memory: 78 bytes per resource instead of a `HashMap<String,
//! CurrentState>` (several hundred bytes each), plus about a byte of directory.
//!
//! A resource is keyed by the first 16 bytes of the sha256 of its URI ([`uri_key`]): an
//! accidental collision among a billion URIs has odds below 10^-20, and a source cannot aim at
//! one (that is a second preimage on 128 bits of sha256). Digests are kept as fixed-size byte
//! arrays, the length and lastmod as integers; the rare state that does not fit (a sha-1 was
//! recorded, a digest that is not lower-case hex, a lastmod outside 1677..2262, a length of
//! 4 GiB or more) keeps its full [`CurrentState`] on the side. [`MirrorStates::state`] gives back exactly what the catalog
//! holds, so the comparison is `plan::compare` itself, as in baseline.
//!
//! Slots are sorted by key, with a directory on the key's top bits: a lookup touches one or two
//! cache lines. Each slot has marks the audit sets as it goes (seen at the source, its
//! verdict, local trouble), kept apart so that the states can be read from another thread
//! meanwhile (local fixity merges their objects with the store's). It also owns the
//! deterministic `--sample` slicing ([`slice_of`]).

use crate::engine::plan::Current;
use crate::rs::w3c_datetime::utc_second;
use crate::store::catalog::CurrentState;
use crate::store::state_shares::{self, ColumnText};
use crate::store::{Catalog, StoreError};
use jiff::Timestamp;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};

/// The key of a URI: the first 16 bytes of its sha256.
pub type Key = [u8; 16];

pub(crate) fn uri_key(uri: &str) -> Key {
    use sha2::Digest as _;
    let d = sha2::Sha256::digest(uri.as_bytes());
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    k
}

/// The 1-based slice (of `m`) a key falls in. Keys are uniform, so slices are even; every key
/// falls in exactly one slice, so `--sample 1/M` .. `M/M` cover everything once.
pub(crate) fn slice_of(key: &Key, m: u64) -> u64 {
    let mut head = [0u8; 8];
    head.copy_from_slice(&key[..8]);
    u64::from_be_bytes(head) % m + 1
}

/// Is `key` in `sample` (`None`: everything)?
pub(crate) fn in_sample(key: &Key, sample: Option<(u64, u64)>) -> bool {
    sample.is_none_or(|(n, m)| slice_of(key, m) == n)
}

/// Is the resource with this URI in `sample`? Without a sample the URI is not hashed.
pub(crate) fn uri_in_sample(uri: &str, sample: Option<(u64, u64)>) -> bool {
    sample.is_none() || in_sample(&uri_key(uri), sample)
}

/// Marks the audit sets on a slot.
pub mod mark {
    /// The source lists it.
    pub const SEEN: u8 = 1;
    /// `plan::compare` said Same with a digest among the evidence.
    pub const SAME: u8 = 2;
    /// Same, but without a digest among the evidence.
    pub const UNVERIFIABLE: u8 = 4;
    /// `plan::compare` found a contradiction.
    pub const DIFFERS: u8 = 8;
    /// Local fixity found something wrong with one of its objects (added by the report, which
    /// meets local fixity's findings in URI order).
    pub const LOCAL_BAD: u8 = 16;
    /// Nothing on both sides to compare.
    pub const NO_EVIDENCE: u8 = 32;
    /// In a collection this audit does not compare (another source of the mirror): never
    /// called extra by it.
    pub const ELSEWHERE: u8 = 64;
    /// `--refetch`: the server answered 304 to the stored validators, claimed unchanged (two
    /// verdict bits the comparison never sets together: a mark, not a finding held in memory,
    /// for what `--refetch=all` says of nearly every resource of a server that honours them).
    pub const CLAIMED: u8 = UNVERIFIABLE | NO_EVIDENCE;
    /// The verdict bits, cleared when a URI is listed again (the later entry counts).
    pub const VERDICT: u8 = SAME | UNVERIFIABLE | DIFFERS | NO_EVIDENCE;
}

mod has {
    pub const SHA256: u8 = 1;
    pub const MD5: u8 = 2;
    pub const LENGTH: u8 = 4;
    pub const LASTMOD: u8 = 8;
    pub const DELETED: u8 = 16;
    /// The full state is in `MirrorStates::side`.
    pub const SIDE: u8 = 32;
    /// Recorded without bytes (`--metadata-only`): the digests and length are those the
    /// source declared, and no object stands behind them.
    pub const DECLARED: u8 = 64;
}

/// One resource, 77 bytes, alignment 1 (so a `Vec<Slot>` has no padding). A length of 4 GiB
/// or more sends the state to the side table.
#[derive(Clone, Copy)]
struct Slot {
    key: Key,
    sha256: [u8; 32],
    md5: [u8; 16],
    length: [u8; 4],
    lastmod_ns: [u8; 8],
    has: u8,
}

/// The digest naming a current version's object, as [`MirrorStates::object`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectName<'a> {
    /// 64 lower-case hex digits, as bytes.
    Sha256([u8; 32]),
    /// What the catalog holds when it is not that.
    Other(&'a str),
}

/// The mirror's current states (tombstones included), within a sample.
pub struct MirrorStates {
    slots: Vec<Slot>,
    /// The marks of each slot, set as the audit goes (from any thread).
    marks: Vec<AtomicU8>,
    /// `declared_length_bytes` where it says more than the recorded length (see
    /// [`Self::declared_length`]).
    declared: HashMap<Key, u64>,
    /// `dir[b]..dir[b + 1]` are the slots whose key's top `bits` bits are `b`.
    dir: Vec<u32>,
    bits: u32,
    side: HashMap<Key, CurrentState>,
    /// Two URIs with one key (never seen in practice; kept honest rather than assumed away).
    pub collisions: u64,
}

impl MirrorStates {
    /// Read the current state of every resource in `sample` (streamed from the catalog). The
    /// resources are split by id between `catalog` and the `more` connections to it, each
    /// read on its own thread: the load is an audit's one serial phase (the comparison and
    /// local fixity need the states), and SQLite's decoding of a million rows is most of it.
    pub(crate) fn load(
        catalog: &Catalog,
        more: Vec<Catalog>,
        sample: Option<(u64, u64)>,
    ) -> Result<MirrorStates, StoreError> {
        // Every resource has a current version but for a moment inside a run's transaction:
        // the count of resources is a bound that needs no scan of the table.
        let (total, first, last) = state_shares::resource_ids(catalog)?;
        let expect = match sample {
            None => total as usize,
            // Slices are even; a little slack avoids a reallocation (and its doubled peak).
            Some((_, m)) => (total as usize / m as usize) * 21 / 20 + 64,
        };
        let mut slots = Vec::with_capacity(expect);
        huge_pages(&slots);
        let shares = share_ids(first.unwrap_or(0), last.unwrap_or(-1), 1 + more.len());
        let (tx, rx) = crossbeam_channel::bounded::<Vec<Slot>>(SHARE_BATCHES);
        let (mine, theirs) = std::thread::scope(|sc| {
            let theirs: Vec<_> = more
                .into_iter()
                .zip(shares[1..].iter().cloned())
                .map(|(c, ids)| {
                    let tx = tx.clone();
                    // A closed channel: the loading thread failed (and says why); stop.
                    sc.spawn(move || {
                        read_share(&c, ids, sample, |batch| {
                            tx.send(std::mem::take(batch)).is_ok()
                        })
                    })
                })
                .collect();
            drop(tx);
            let mine = read_share(catalog, shares[0].clone(), sample, |batch| {
                slots.append(batch);
                slots.extend(rx.try_iter().flatten());
                true
            });
            // Dropped on an error, so that the other readers stop at their next batch.
            let rx = rx;
            if mine.is_ok() {
                slots.extend(rx.iter().flatten());
            }
            drop(rx);
            let theirs: Vec<_> = theirs
                .into_iter()
                .map(|h| h.join().expect("reading a share does not panic"))
                .collect();
            (mine, theirs)
        });
        let Share {
            mut side,
            mut declared,
        } = mine?;
        for share in theirs {
            let share = share?;
            side.extend(share.side);
            declared.extend(share.declared);
        }
        sort_by_key(&mut slots);
        let collisions = slots.windows(2).filter(|w| w[0].key == w[1].key).count() as u64;
        // Two to four slots per bucket: the directory costs about a byte per resource.
        let bits = (usize::BITS - slots.len().max(1).leading_zeros()).clamp(2, 25) - 2;
        let mut dir = vec![0u32; (1usize << bits) + 1];
        let mut i = 0usize;
        for (b, d) in dir.iter_mut().enumerate() {
            while i < slots.len() && (top(&slots[i].key, bits) as usize) < b {
                i += 1;
            }
            *d = i as u32;
        }
        let marks = (0..slots.len()).map(|_| AtomicU8::new(0)).collect();
        Ok(MirrorStates {
            slots,
            marks,
            declared,
            dir,
            bits,
            side,
            collisions,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Start bringing into the cache the directory entry [`Self::find`] of `key` reads first:
    /// a lookup lands anywhere in a hundred megabytes, and a comparison that waits for each
    /// one in turn spends most of its time waiting. Only a hint, as is [`Self::prefetch`],
    /// which takes the slots the entry points to (so it is best called a little later).
    pub(crate) fn prefetch_bucket(&self, key: &Key) {
        prefetch(std::ptr::from_ref(&self.dir[top(key, self.bits) as usize]).cast());
    }

    /// Start bringing into the cache the slots [`Self::find`] of `key` compares, and their
    /// marks.
    pub(crate) fn prefetch(&self, key: &Key) {
        let b = top(key, self.bits) as usize;
        let (lo, hi) = (self.dir[b] as usize, self.dir[b + 1] as usize);
        for slot in &self.slots[lo..hi] {
            // A slot spans two cache lines at most.
            prefetch(std::ptr::from_ref(slot).cast());
            prefetch(std::ptr::from_ref(slot).cast::<u8>().wrapping_add(76));
        }
        if let Some(m) = self.marks.get(lo) {
            prefetch(std::ptr::from_ref(m).cast());
        }
    }

    /// The slot of a key.
    pub(crate) fn find(&self, key: &Key) -> Option<usize> {
        let b = top(key, self.bits) as usize;
        let (lo, hi) = (self.dir[b] as usize, self.dir[b + 1] as usize);
        (lo..hi).find(|&i| &self.slots[i].key == key)
    }

    pub(crate) fn deleted(&self, i: usize) -> bool {
        self.slots[i].has & has::DELETED != 0
    }

    #[cfg(test)]
    /// The state as the catalog holds it. `resource_id`, `version_id` and `collection` are not
    /// kept (the comparison does not read them): 0 and empty.
    pub(crate) fn state(&self, i: usize) -> CurrentState {
        let s = &self.slots[i];
        if s.has & has::SIDE != 0 {
            return self.side[&s.key].clone();
        }
        let on = |bit: u8| s.has & bit != 0;
        CurrentState {
            resource_id: 0,
            collection: String::new(),
            version_id: 0,
            deleted: on(has::DELETED),
            lastmod: on(has::LASTMOD)
                .then(|| Timestamp::from_nanosecond(i64::from_le_bytes(s.lastmod_ns) as i128).ok())
                .flatten(),
            length_bytes: on(has::LENGTH).then(|| u32::from_le_bytes(s.length).into()),
            md5_hex: on(has::MD5).then(|| to_hex(&s.md5)),
            sha1_hex: None,
            sha256_hex: on(has::SHA256).then(|| to_hex(&s.sha256)),
        }
    }

    /// What `plan::compare_view` reads of the state, without allocating: the digests are
    /// written as hex into `buf`. The same values as [`Self::state`].
    pub(crate) fn view<'a>(&'a self, i: usize, buf: &'a mut HexBuf) -> Current<'a> {
        let s = &self.slots[i];
        if s.has & has::SIDE != 0 {
            return self.side[&s.key].view();
        }
        let on = |bit: u8| s.has & bit != 0;
        let HexBuf { md5, sha256 } = buf;
        Current {
            lastmod: on(has::LASTMOD)
                .then(|| Timestamp::from_nanosecond(i64::from_le_bytes(s.lastmod_ns) as i128).ok())
                .flatten(),
            length_bytes: on(has::LENGTH).then(|| u32::from_le_bytes(s.length).into()),
            md5_hex: on(has::MD5).then(|| hex_into(&s.md5, md5)),
            sha1_hex: None,
            sha256_hex: on(has::SHA256).then(|| hex_into(&s.sha256, sha256)),
        }
    }

    /// The digest naming the object of the state, if it names one.
    pub(crate) fn object(&self, i: usize) -> Option<ObjectName<'_>> {
        let s = &self.slots[i];
        if s.has & has::DECLARED != 0 {
            return None;
        }
        if s.has & has::SIDE != 0 {
            let sha = self.side[&s.key].sha256_hex.as_deref()?;
            return Some(match hex_bytes::<32>(sha) {
                Some(b) => ObjectName::Sha256(b),
                None => ObjectName::Other(sha),
            });
        }
        (s.has & has::SHA256 != 0).then_some(ObjectName::Sha256(s.sha256))
    }

    /// Whether the state was recorded without bytes (`--metadata-only`): its digests and
    /// length are the source's declarations, and it names no object.
    pub(crate) fn declared_only(&self, i: usize) -> bool {
        self.slots[i].has & has::DECLARED != 0
    }

    /// The key of the slot.
    pub(crate) fn key(&self, i: usize) -> Key {
        self.slots[i].key
    }

    /// The recorded length of the state.
    pub(crate) fn length(&self, i: usize) -> Option<u64> {
        let s = &self.slots[i];
        if s.has & has::SIDE != 0 {
            return self.side[&s.key].length_bytes;
        }
        (s.has & has::LENGTH != 0).then(|| u32::from_le_bytes(s.length).into())
    }

    /// The length the source declared for the state when it differs from the recorded one
    /// (or none was recorded): a declared length equal to the recorded one says nothing more.
    pub(crate) fn declared_length(&self, i: usize) -> Option<u64> {
        self.declared.get(&self.slots[i].key).copied()
    }

    pub(crate) fn marks(&self, i: usize) -> u8 {
        self.marks[i].load(Ordering::Relaxed)
    }

    pub(crate) fn set(&self, i: usize, marks: u8) {
        self.marks[i].fetch_or(marks, Ordering::Relaxed);
    }

    pub(crate) fn clear(&self, i: usize, marks: u8) {
        self.marks[i].fetch_and(!marks, Ordering::Relaxed);
    }

    /// Mark the resource with this URI, if it is here.
    pub(crate) fn set_by_uri(&self, uri: &str, marks: u8) {
        if let Some(i) = self.find(&uri_key(uri)) {
            self.set(i, marks);
        }
    }
}

/// Ask for transparent huge pages under the slots, before they are written: lookups land
/// anywhere in a hundred megabytes, and with 4 KiB pages nearly every one of them also misses
/// the TLB. Only a hint; nothing changes where the kernel does not take it.
fn huge_pages(slots: &Vec<Slot>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = slots.as_ptr() as usize;
        let end = start + slots.capacity() * std::mem::size_of::<Slot>();
        let (from, to) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if to > from {
            // SAFETY: advice on whole pages inside the vector's own allocation; it changes no
            // contents.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = slots;
}

/// Slots a share's reader hands over at a time, and batches in flight: what the readers hold
/// besides the states is a few hundred kilobytes.
const SHARE_BATCH: usize = 1024;
const SHARE_BATCHES: usize = 8;

/// What a share's reader keeps besides its slots.
#[derive(Default)]
struct Share {
    side: HashMap<Key, CurrentState>,
    declared: HashMap<Key, u64>,
}

/// `first..=last` cut into `n` ranges of ids, in order (empty ones when there are fewer ids).
fn share_ids(first: i64, last: i64, n: usize) -> Vec<std::ops::RangeInclusive<i64>> {
    let span = (i128::from(last) - i128::from(first) + 1).max(0);
    let at = |k: usize| i128::from(first) + span * k as i128 / n as i128;
    (0..n)
        .map(|k| at(k) as i64..=(at(k + 1) - 1) as i64)
        .collect()
}

/// The states of the resources with ids in `ids`, within the sample, handed to `take` a batch
/// at a time (`take` empties the batch, and says whether to go on).
fn read_share(
    catalog: &Catalog,
    ids: std::ops::RangeInclusive<i64>,
    sample: Option<(u64, u64)>,
    mut take: impl FnMut(&mut Vec<Slot>) -> bool,
) -> Result<Share, StoreError> {
    let mut share = Share::default();
    // Borrowed columns: no string is allocated for a state that fits a slot.
    let mut batch = Vec::with_capacity(SHARE_BATCH);
    state_shares::each_current_state(catalog, ids, |r| {
        let key = uri_key(r.uri()?);
        if !in_sample(&key, sample) {
            return Ok(true);
        }
        let declared_only = r.metadata_only()?;
        let row = if declared_only {
            // What the source declared stands for what was measured: the audit compares it
            // with what the source declares now.
            let declared = r.declared_hash()?.unwrap_or("");
            let digest = |name: &str| {
                let hex = declared
                    .split_whitespace()
                    .find_map(|d| d.strip_prefix(name)?.strip_prefix(':'));
                match hex {
                    Some(h) => ColumnText::Text(h.as_bytes()),
                    None => ColumnText::Null,
                }
            };
            Row {
                deleted: r.deleted()?,
                lastmod: r.lastmod()?,
                length_bytes: r.declared_length_bytes()?,
                md5_hex: Hexed::read(digest("md5"))?,
                sha1_hex: None,
                sha256_hex: Hexed::read(digest("sha-256"))?,
            }
        } else {
            Row {
                deleted: r.deleted()?,
                lastmod: r.lastmod()?,
                length_bytes: r.length_bytes()?,
                md5_hex: Hexed::read(r.md5_hex()?)?,
                sha1_hex: r.sha1_hex()?,
                sha256_hex: Hexed::read(r.sha256_hex()?)?,
            }
        };
        if let Some(d) = r
            .declared_length_bytes()?
            .filter(|&d| Some(d) != row.length_bytes)
        {
            share.declared.insert(key, d);
        }
        let mut slot = pack(key, &row, &mut share.side);
        if declared_only {
            slot.has |= has::DECLARED;
        }
        batch.push(slot);
        if batch.len() == SHARE_BATCH {
            if !take(&mut batch) {
                return Ok(false);
            }
            batch.reserve(SHARE_BATCH);
        }
        Ok(true)
    })?;
    if !batch.is_empty() {
        take(&mut batch);
    }
    Ok(share)
}

/// Sort the slots by key, the two halves of the key space on two threads: the keys are
/// uniform, so one pass that moves the keys with the top bit clear to the front splits the
/// work about evenly.
fn sort_by_key(slots: &mut [Slot]) {
    let low = |s: &Slot| s.key[0] < 0x80;
    let (mut i, mut j) = (0, slots.len());
    loop {
        while i < j && low(&slots[i]) {
            i += 1;
        }
        while i < j && !low(&slots[j - 1]) {
            j -= 1;
        }
        if i == j {
            break;
        }
        slots.swap(i, j - 1);
    }
    let (front, back) = slots.split_at_mut(i);
    std::thread::scope(|sc| {
        sc.spawn(|| front.sort_unstable_by_key(|s| s.key));
        back.sort_unstable_by_key(|s| s.key);
    });
}

/// Ask the processor to bring the cache line at `p` closer (nothing where there is no such
/// instruction); it never faults, wherever `p` points.
fn prefetch(p: *const u8) {
    // SAFETY: SSE is part of every x86_64 processor, and a prefetch reads nothing the program
    // sees and never faults.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

fn top(key: &Key, bits: u32) -> u32 {
    let head = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    if bits == 0 {
        0
    } else {
        head >> (32 - bits)
    }
}

/// Lower-case hex of exactly N bytes, or None (then the state goes to the side table, so
/// what `state()` gives back is exactly what the catalog holds). By hand, through a table and
/// without an early exit: two digests for every resource of a million (the `hex` crate's
/// decoder, then a digit-by-digit match, each took a tenth of an audit's reading of the
/// catalog).
fn hex_bytes<const N: usize>(s: &str) -> Option<[u8; N]> {
    hex_digits(s.as_bytes())
}

/// [`hex_bytes`] of bytes (no need for them to be checked as UTF-8 first).
fn hex_digits<const N: usize>(s: &[u8]) -> Option<[u8; N]> {
    /// The value of a lower-case hex digit; 16 for anything else.
    const NIBBLE: [u8; 256] = {
        let mut t = [16u8; 256];
        let mut i = 0;
        while i < 10 {
            t[b'0' as usize + i] = i as u8;
            i += 1;
        }
        let mut i = 0;
        while i < 6 {
            t[b'a' as usize + i] = 10 + i as u8;
            i += 1;
        }
        t
    };
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    let mut bad = 0u8;
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        let (hi, lo) = (NIBBLE[pair[0] as usize], NIBBLE[pair[1] as usize]);
        bad |= hi | lo;
        *o = (hi << 4) | (lo & 15);
    }
    (bad < 16).then_some(out)
}

/// The bytes of 64 lower-case hex digits (an object's name), or None.
pub(crate) fn sha256_bytes(name: &str) -> Option<[u8; 32]> {
    hex_bytes(name)
}

/// Lower-case hex, by hand (as `hex_bytes`).
fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize]);
        out.push(DIGITS[(b & 15) as usize]);
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// Room for the hex of a slot's digests ([`MirrorStates::view`]).
pub struct HexBuf {
    md5: [u8; 32],
    sha256: [u8; 64],
}

impl Default for HexBuf {
    fn default() -> Self {
        HexBuf {
            md5: [0; 32],
            sha256: [0; 64],
        }
    }
}

/// Lower-case hex of `bytes` into `out` (twice as long).
pub(crate) fn hex_into<'a>(bytes: &[u8], out: &'a mut [u8]) -> &'a str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (b, o) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        o[0] = DIGITS[(b >> 4) as usize];
        o[1] = DIGITS[(b & 15) as usize];
    }
    let out = &out[..2 * bytes.len()];
    // SAFETY: every byte of `out` was just written from DIGITS (ASCII); the rest is not read.
    unsafe { std::str::from_utf8_unchecked(out) }
}

/// One catalog row, borrowed.
#[derive(Default)]
struct Row<'a> {
    deleted: bool,
    lastmod: Option<&'a str>,
    length_bytes: Option<u64>,
    md5_hex: Hexed<'a, 16>,
    sha1_hex: Option<&'a str>,
    sha256_hex: Hexed<'a, 32>,
}

/// A digest column as read: N bytes when it is 2N lower-case hex digits (nearly every row),
/// taken from the column's bytes without checking them as UTF-8 first; anything else as the
/// text it is (checked as UTF-8, as every text column is).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Hexed<'a, const N: usize> {
    #[default]
    Null,
    Bytes([u8; N]),
    Text(&'a str),
}

impl<'a, const N: usize> Hexed<'a, N> {
    fn read(value: ColumnText<'a>) -> Result<Self, StoreError> {
        if let ColumnText::Text(b) = value {
            if let Some(d) = hex_digits::<N>(b) {
                return Ok(Hexed::Bytes(d));
            }
        }
        Ok(match value.as_str()? {
            Some(s) => Hexed::Text(s),
            None => Hexed::Null,
        })
    }

    /// None without a value; Some(None) for a value that is not 2N lower-case hex digits
    /// (`read` made it `Text` because it is not).
    fn bytes(&self) -> Option<Option<[u8; N]>> {
        match self {
            Hexed::Null => None,
            Hexed::Bytes(b) => Some(Some(*b)),
            Hexed::Text(_) => Some(None),
        }
    }

    /// The text the column holds.
    fn text(&self) -> Option<String> {
        match self {
            Hexed::Null => None,
            Hexed::Bytes(b) => Some(to_hex(b)),
            Hexed::Text(s) => Some(s.to_string()),
        }
    }
}

/// A catalog lastmod as the catalog's reader takes it (`str::parse::<Timestamp>`, unparseable
/// as none), with a fast path for the form the catalog writes (`YYYY-MM-DDThh:mm:ssZ`) that
/// gives the same instant.
fn parse_lastmod(s: &str) -> Option<Timestamp> {
    utc_second(s).or_else(|| s.parse::<Timestamp>().ok())
}

fn pack(key: Key, st: &Row<'_>, side: &mut HashMap<Key, CurrentState>) -> Slot {
    let mut slot = Slot {
        key,
        sha256: [0; 32],
        md5: [0; 16],
        length: [0; 4],
        lastmod_ns: [0; 8],
        has: 0,
    };
    let lastmod = st.lastmod.and_then(parse_lastmod);
    let mut fits = st.sha1_hex.is_none();
    if st.deleted {
        slot.has |= has::DELETED;
    }
    if let Some(h) = st.sha256_hex.bytes() {
        match h {
            Some(b) => {
                slot.sha256 = b;
                slot.has |= has::SHA256;
            }
            None => fits = false,
        }
    }
    if let Some(h) = st.md5_hex.bytes() {
        match h {
            Some(b) => {
                slot.md5 = b;
                slot.has |= has::MD5;
            }
            None => fits = false,
        }
    }
    if let Some(n) = st.length_bytes {
        match u32::try_from(n) {
            Ok(n) => {
                slot.length = n.to_le_bytes();
                slot.has |= has::LENGTH;
            }
            Err(_) => fits = false,
        }
    }
    if let Some(t) = lastmod {
        match i64::try_from(t.as_nanosecond()) {
            Ok(ns) => {
                slot.lastmod_ns = ns.to_le_bytes();
                slot.has |= has::LASTMOD;
            }
            Err(_) => fits = false,
        }
    }
    if !fits {
        slot.has |= has::SIDE;
        side.insert(
            key,
            CurrentState {
                resource_id: 0,
                collection: String::new(),
                version_id: 0,
                deleted: st.deleted,
                lastmod,
                length_bytes: st.length_bytes,
                md5_hex: st.md5_hex.text(),
                sha1_hex: st.sha1_hex.map(str::to_string),
                sha256_hex: st.sha256_hex.text(),
            },
        );
    }
    slot
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::{Change, Via};
    use crate::store::catalog::{write, NewVersion};

    #[test]
    fn hex_by_hand_round_trips_and_refuses_what_it_cannot_give_back() {
        let bytes: Vec<u8> = (0..=255).collect();
        let text = to_hex(&bytes);
        assert_eq!(text, hex::encode(&bytes));
        let back: [u8; 16] = hex_bytes(&text[..32]).unwrap();
        assert_eq!(&back[..], &bytes[..16]);
        assert_eq!(hex_bytes::<2>("ABcd"), None);
        assert_eq!(hex_bytes::<2>("abc"), None);
        assert_eq!(hex_bytes::<2>("abcg"), None);
        assert_eq!(hex_bytes::<2>("00ff"), Some([0, 255]));
    }

    #[test]
    fn a_digest_column_is_read_as_bytes_only_when_its_text_gives_them_back() {
        let md5 = "d8314ff333963f20f75f7718b9a190dd";
        for (value, want) in [
            (
                Some(md5.to_string()),
                Hexed::Bytes(hex_bytes::<16>(md5).unwrap()),
            ),
            (Some(md5.to_uppercase()), Hexed::Text("")),
            (Some(md5[..30].to_string()), Hexed::Text("")),
            (Some(format!("{md5}0")), Hexed::Text("")),
            (Some(String::new()), Hexed::Text("")),
            (None, Hexed::Null),
        ] {
            let column = match &value {
                Some(v) => ColumnText::Text(v.as_bytes()),
                None => ColumnText::Null,
            };
            let got = Hexed::<16>::read(column).unwrap();
            match (got, want) {
                (Hexed::Text(s), Hexed::Text(_)) => {
                    assert_eq!(Some(s), value.as_deref());
                    assert_eq!(got.bytes(), Some(None));
                }
                _ => assert_eq!(got, want, "{value:?}"),
            }
            assert_eq!(got.text(), value, "{value:?}");
        }
        // Text that is not UTF-8 is refused, as the text columns refuse it.
        assert!(Hexed::<16>::read(ColumnText::Text(b"\xff")).is_err());
    }

    #[test]
    fn the_fast_lastmod_path_gives_what_jiff_gives() {
        for s in
            crate::rs::w3c_datetime::test_values::utc_second_strings(0x9e37_79b9_7f4a_7c15, 200_000)
        {
            let fast = utc_second(&s);
            let jiff = s.parse::<Timestamp>().ok();
            if fast.is_some() {
                assert_eq!(fast, jiff, "{s}");
            }
            assert_eq!(parse_lastmod(&s), jiff, "{s}");
        }
        for s in [
            "2026-01-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "2000-02-29T12:00:00Z",
            "1900-02-29T12:00:00Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "2025-12-01T10:00:00.25Z",
            "2025-12-01T10:00:00+01:00",
            "2025-12-01 10:00:00Z",
            "2016-12-31T23:59:60Z",
            "not a time",
        ] {
            assert_eq!(parse_lastmod(s), s.parse::<Timestamp>().ok(), "{s}");
        }
        assert!(utc_second("2026-01-01T00:00:00Z").is_some());
    }

    #[test]
    fn the_view_is_the_state() {
        let plain = NewVersion {
            change: Change::Created,
            arrived_via: Via::Http,
            lastmod: Some("2025-12-01T10:00:00Z".parse().unwrap()),
            length_bytes: Some(57),
            md5_hex: Some("d8314ff333963f20f75f7718b9a190dd".into()),
            sha256_hex: Some(
                "8e3c1d2f916b54dd6d564089eaf55ac377cd231041b7aa9000196588772ac875".into(),
            ),
            ..Default::default()
        };
        let mut odd = plain.clone();
        odd.sha1_hex = Some("0123456789abcdef0123456789abcdef01234567".into());
        let (_dir, c) = catalog_with(&[("http://x/plain", plain), ("http://x/odd", odd)]);
        let m = MirrorStates::load(&c, vec![], None).unwrap();
        for uri in ["http://x/plain", "http://x/odd"] {
            let i = m.find(&uri_key(uri)).unwrap();
            let state = m.state(i);
            let mut buf = HexBuf::default();
            assert_eq!(m.view(i, &mut buf), state.view(), "{uri}");
        }
    }

    #[test]
    fn a_slot_is_77_bytes_without_padding() {
        assert_eq!(std::mem::size_of::<Slot>(), 77);
        assert_eq!(std::mem::align_of::<Slot>(), 1);
    }

    #[test]
    fn shares_cover_every_id_once() {
        for (first, last) in [(1, 1_000_000), (1, 1), (5, 7), (1, 0), (i64::MIN, i64::MAX)] {
            for n in 1..=4 {
                let shares = share_ids(first, last, n);
                assert_eq!(shares.len(), n);
                let mut next = i128::from(first);
                for r in &shares {
                    assert_eq!(i128::from(*r.start()), next, "{first} {last} {n}");
                    next = i128::from(*r.end()) + 1;
                }
                assert_eq!(next, i128::from(last) + 1, "{first} {last} {n}");
            }
        }
    }

    #[test]
    fn sorting_on_two_threads_sorts() {
        for n in [0usize, 1, 2, 3, 1000] {
            let mut slots: Vec<Slot> = (0..n)
                .map(|i| {
                    pack(
                        uri_key(&i.to_string()),
                        &Row::default(),
                        &mut HashMap::new(),
                    )
                })
                .collect();
            let mut want: Vec<Key> = slots.iter().map(|s| s.key).collect();
            want.sort_unstable();
            sort_by_key(&mut slots);
            assert_eq!(slots.iter().map(|s| s.key).collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn every_key_is_in_exactly_one_slice() {
        for i in 0..2000 {
            let k = uri_key(&format!("http://x/{i}"));
            for m in [1, 2, 7] {
                let hits = (1..=m).filter(|&n| in_sample(&k, Some((n, m)))).count();
                assert_eq!(hits, 1);
            }
        }
    }

    /// A mirror whose catalog holds these current states, all of collection `c` (the audit's
    /// tests share it).
    pub(in crate::audit) fn catalog_with(
        states: &[(&str, NewVersion)],
    ) -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(dir.path()).unwrap();
        let run = c.begin_run("baseline", None, "test").unwrap();
        c.in_transaction(|tx| {
            for (uri, v) in states {
                let mut v = v.clone();
                v.uri = uri.to_string();
                v.collection = "c".into();
                write::version(tx, run, &v)?;
            }
            Ok(())
        })
        .unwrap();
        (dir, c)
    }

    #[test]
    fn states_come_back_exactly_as_the_catalog_holds_them() {
        let plain = NewVersion {
            change: Change::Created,
            arrived_via: Via::Http,
            lastmod: Some("2025-12-01T10:00:00.25Z".parse().unwrap()),
            length_bytes: Some(57),
            md5_hex: Some("d8314ff333963f20f75f7718b9a190dd".into()),
            sha256_hex: Some(
                "8e3c1d2f916b54dd6d564089eaf55ac377cd231041b7aa9000196588772ac875".into(),
            ),
            ..Default::default()
        };
        let mut odd = plain.clone();
        odd.sha1_hex = Some("0123456789abcdef0123456789abcdef01234567".into());
        odd.lastmod = Some("2999-01-01T00:00:00Z".parse().unwrap());
        let mut upper = plain.clone();
        upper.md5_hex = Some("D8314FF333963F20F75F7718B9A190DD".into());
        let tomb = NewVersion {
            change: Change::Deleted,
            arrived_via: Via::Tombstone,
            ..Default::default()
        };
        let rows = [
            ("http://x/plain", plain),
            ("http://x/odd", odd),
            ("http://x/upper", upper),
            ("http://x/tomb", tomb),
        ];
        let (_dir, c) = catalog_with(&rows);
        let want = c.current_states().unwrap();
        let m = MirrorStates::load(&c, vec![], None).unwrap();
        assert_eq!(m.len(), 4);
        for (uri, _) in &rows {
            let i = m.find(&uri_key(uri)).unwrap();
            let mut expected = want[*uri].clone();
            expected.resource_id = 0;
            expected.version_id = 0;
            expected.collection = String::new();
            assert_eq!(m.state(i), expected, "{uri}");
        }
        assert!(m.find(&uri_key("http://x/none")).is_none());
        assert_eq!(m.collisions, 0);
    }

    #[test]
    fn lookups_work_at_every_size() {
        for n in [0usize, 1, 2, 3, 100, 5000] {
            let rows: Vec<(String, NewVersion)> = (0..n)
                .map(|i| {
                    (
                        format!("http://x/{i}"),
                        NewVersion {
                            change: Change::Created,
                            arrived_via: Via::Http,
                            length_bytes: Some(i as u64),
                            ..Default::default()
                        },
                    )
                })
                .collect();
            let refs: Vec<(&str, NewVersion)> =
                rows.iter().map(|(u, v)| (u.as_str(), v.clone())).collect();
            let (_dir, c) = catalog_with(&refs);
            let m = MirrorStates::load(&c, vec![], None).unwrap();
            for (u, v) in &rows {
                let i = m.find(&uri_key(u)).unwrap();
                assert_eq!(m.state(i).length_bytes, v.length_bytes);
                m.set(i, mark::SEEN | mark::SAME);
                m.clear(i, mark::SAME);
                assert_eq!(m.marks(i), mark::SEEN);
            }
            let (n1, n2) = (
                MirrorStates::load(&c, vec![], Some((1, 2))).unwrap().len(),
                MirrorStates::load(&c, vec![], Some((2, 2))).unwrap().len(),
            );
            assert_eq!(n1 + n2, n);
            // Read in shares by other connections: the same states.
            let more = (0..2)
                .map(|_| Catalog::open_read_only(_dir.path()).unwrap().unwrap())
                .collect();
            let shared = MirrorStates::load(&c, more, None).unwrap();
            assert_eq!(shared.len(), n);
            for (u, v) in &rows {
                let i = shared.find(&uri_key(u)).unwrap();
                assert_eq!(shared.state(i).length_bytes, v.length_bytes);
            }
        }
    }
}
