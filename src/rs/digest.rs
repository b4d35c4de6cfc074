//! Digests as sources declare them and as we compute them.
//!
//! ResourceSync 1.1 §4 (`hash` attribute): whitespace-separated `alg:digest` tokens, digest in
//! lower-case hex. In the wild we also meet base64 md5 (resync < 1.0.6, the simulator, the
//! 2012 draft's `rs:fixity`), upper-case hex, `sha256`/`SHA-256` spellings and undecodable
//! placeholders (the spec's own patch examples). Everything is normalised to lower-case hex;
//! an unknown algorithm or an undecodable value is kept but is *unusable*: it can never make a
//! resource verified.

use base64::Engine;
use std::fmt;

/// A digest algorithm, by its ResourceSync name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    Md5,
    Sha1,
    Sha256,
    /// Any other name, lower-cased; kept, never verified.
    Other(String),
}

impl Algorithm {
    pub(crate) fn parse(name: &str) -> Algorithm {
        // A hot path (every entry of every list): no allocation for the known names.
        let n = name.trim();
        let is = |a: &str| n.eq_ignore_ascii_case(a);
        if is("md5") || is("md-5") {
            Algorithm::Md5
        } else if is("sha-256") || is("sha256") {
            Algorithm::Sha256
        } else if is("sha-1") || is("sha1") {
            Algorithm::Sha1
        } else {
            Algorithm::Other(n.to_ascii_lowercase())
        }
    }

    /// The spec's spelling.
    pub(crate) fn name(&self) -> &str {
        match self {
            Algorithm::Md5 => "md5",
            Algorithm::Sha1 => "sha-1",
            Algorithm::Sha256 => "sha-256",
            Algorithm::Other(s) => s,
        }
    }

    /// Digest length in bytes, for the algorithms we can compute.
    pub(crate) fn byte_len(&self) -> Option<usize> {
        match self {
            Algorithm::Md5 => Some(16),
            Algorithm::Sha1 => Some(20),
            Algorithm::Sha256 => Some(32),
            Algorithm::Other(_) => None,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the declared value was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Hex,
    Base64,
    /// Neither hex nor base64 of the right length, or an unknown algorithm.
    Unusable,
}

/// A digest value in lower-case hex, held inline (as long as a sha-256's at most): a list of a
/// million entries declares two digests on every entry, and a `String` each was two of the
/// handful of allocations that reading an entry cost. Reads as a `&str`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Hex {
    len: u8,
    digits: [u8; Hex::MAX],
}

impl Hex {
    /// The most hex digits held: a sha-256's.
    pub const MAX: usize = 64;

    /// `s` in lower case, when it is hex digits (of either case) that fit.
    pub(crate) fn parse(s: &str) -> Option<Hex> {
        let s = s.as_bytes();
        if s.len() > Self::MAX {
            return None;
        }
        let mut hex = Hex {
            len: s.len() as u8,
            digits: [0; Self::MAX],
        };
        // Every digit looked at without an early exit (the compiler vectorises it): a hot
        // path, two digests on every entry of every list. A digit is already lower case with
        // the 0x20 bit set; a letter becomes lower case.
        let mut bad = false;
        for (d, &b) in hex.digits.iter_mut().zip(s) {
            let digit = b.wrapping_sub(b'0') < 10;
            let letter = (b | 0x20).wrapping_sub(b'a') < 6;
            bad |= !(digit | letter);
            *d = b | 0x20;
        }
        (!bad).then_some(hex)
    }

    /// The lower-case hex of `bytes`, when it fits.
    pub(crate) fn encode(bytes: &[u8]) -> Option<Hex> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        if 2 * bytes.len() > Self::MAX {
            return None;
        }
        let mut hex = Hex {
            len: 2 * bytes.len() as u8,
            digits: [0; Self::MAX],
        };
        for (pair, b) in hex.digits.chunks_exact_mut(2).zip(bytes) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 15)];
        }
        Some(hex)
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.digits[..usize::from(self.len)]
    }

    pub(crate) fn as_str(&self) -> &str {
        let bytes = self.as_bytes();
        debug_assert!(bytes.iter().all(u8::is_ascii_hexdigit));
        // SAFETY: `parse` and `encode`, the only ways to make a `Hex`, keep only hex digits
        // (ASCII): no need to check them again on every read (two digests of every entry of
        // every list are compared as `&str`).
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

impl std::ops::Deref for Hex {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One digest a source declared for a representation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    pub algorithm: Algorithm,
    /// The value exactly as written, when that differs from `hex` (kept empty for the common
    /// lower-case hex value: a list of a million entries holds a million of these); see
    /// [`Digest::written`].
    pub raw: String,
    /// Lower-case hex, when the value could be decoded for a known algorithm.
    pub hex: Option<Hex>,
    pub encoding: Encoding,
}

impl Digest {
    /// Decode one value for one algorithm (hex in either case, or base64 / url-safe base64).
    pub(crate) fn new(algorithm: Algorithm, raw: &str) -> Digest {
        let raw = raw.trim();
        let (hex, encoding) = match algorithm.byte_len() {
            None => (None, Encoding::Unusable),
            Some(n) => decode(raw, n),
        };
        Digest {
            raw: if hex.is_some_and(|h| h.as_bytes() == raw.as_bytes()) {
                String::new()
            } else {
                raw.to_string()
            },
            algorithm,
            hex,
            encoding,
        }
    }

    /// The value exactly as the source wrote it.
    pub(crate) fn written(&self) -> &str {
        match (&self.hex, self.raw.is_empty()) {
            (Some(h), true) => h,
            _ => &self.raw,
        }
    }

    pub fn is_usable(&self) -> bool {
        self.hex.is_some()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.hex {
            Some(h) => write!(f, "{}:{}", self.algorithm, h),
            None => write!(f, "{}:{}", self.algorithm, self.written()),
        }
    }
}

fn decode(raw: &str, n: usize) -> (Option<Hex>, Encoding) {
    if raw.len() == 2 * n {
        if let Some(hex) = Hex::parse(raw) {
            return (Some(hex), Encoding::Hex);
        }
    }
    if raw.len() < 4 * n.div_ceil(3) - 2 || raw.len() > 4 * n.div_ceil(3) {
        // Not the length of a base64 encoding of n bytes (with or without padding).
        return (None, Encoding::Unusable);
    }
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE,
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    for e in engines {
        if let Ok(bytes) = e.decode(raw) {
            if bytes.len() == n {
                return (Hex::encode(&bytes), Encoding::Base64);
            }
        }
    }
    (None, Encoding::Unusable)
}

/// The source's digests as one normalised string (`md5:… sha-256:…`), or None.
pub(crate) fn declared_hash(digests: &[Digest]) -> Option<String> {
    use std::fmt::Write;
    (!digests.is_empty()).then(|| {
        let mut s = String::with_capacity(digests.len() * 72);
        for (i, d) in digests.iter().enumerate() {
            let space = if i == 0 { "" } else { " " };
            let _ = write!(s, "{space}{d}");
        }
        s
    })
}

/// Parse a `hash` attribute: `md5:… sha-256:…`, tokens split on any XML whitespace.
/// A token without `:` is kept as an unusable digest of an unknown algorithm.
pub fn parse_hash_attr(value: &str) -> Vec<Digest> {
    // Exactly as many as there are: `collect` of an iterator of unknown length starts at four,
    // and a Change List's events keep their digests until they are applied (two of four used:
    // 240 bytes wasted an event, 29 MB of an incremental's 120,000 at 10,000,000 resources).
    let mut digests = Vec::with_capacity(ascii_tokens(value).count());
    digests.extend(
        ascii_tokens(value).map(|token| match token.split_once(':') {
            Some((alg, v)) => Digest::new(Algorithm::parse(alg), v),
            None => Digest::new(Algorithm::Other(String::new()), token),
        }),
    );
    digests
}

/// `s.split_ascii_whitespace()`, faster on long tokens (digests are 32 or 64 digits, on every
/// entry of every list): a token's bytes are skipped 16 at a time while none of them can be
/// whitespace (every ASCII whitespace byte is at most `b' '`), without an early exit in each
/// chunk, which the compiler vectorises.
fn ascii_tokens(s: &str) -> impl Iterator<Item = &str> {
    const CHUNK: usize = 16;
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == b.len() {
            return None;
        }
        let start = i;
        while let Some(chunk) = b.get(i..i + CHUNK) {
            if !chunk.iter().fold(true, |far, &c| far & (c > b' ')) {
                break;
            }
            i += CHUNK;
        }
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        // Both ends are next to ASCII bytes (or the ends of `s`): char boundaries.
        Some(&s[start..i])
    })
}

/// The usable declared value for an algorithm, if any.
pub(crate) fn declared_hex<'a>(digests: &'a [Digest], alg: &Algorithm) -> Option<&'a str> {
    digests
        .iter()
        .find(|d| &d.algorithm == alg && d.hex.is_some())
        .and_then(|d| d.hex.as_ref())
        .map(Hex::as_str)
}

/// Digests computed by us over a byte stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Computed {
    pub length: u64,
    pub md5_hex: String,
    pub sha256_hex: String,
    /// Only computed when some source declared sha-1.
    pub sha1_hex: Option<String>,
}

impl Computed {
    /// Length, MD5 and SHA-256 of `bytes` held in memory (a record read inline).
    pub(crate) fn of(bytes: &[u8]) -> Computed {
        let mut h = Hasher::new(false);
        h.update(bytes);
        h.finish()
    }

    pub(crate) fn hex_for(&self, alg: &Algorithm) -> Option<&str> {
        match alg {
            Algorithm::Md5 => Some(&self.md5_hex),
            Algorithm::Sha256 => Some(&self.sha256_hex),
            Algorithm::Sha1 => self.sha1_hex.as_deref(),
            Algorithm::Other(_) => None,
        }
    }
}

/// One declared digest that the computed bytes contradict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub algorithm: Algorithm,
    pub expected: String,
    pub actual: String,
}

/// Check every usable declared digest against what was computed.
pub(crate) fn mismatches(declared: &[Digest], computed: &Computed) -> Vec<Mismatch> {
    declared
        .iter()
        .filter_map(|d| {
            let expected = d.hex.as_ref()?.as_str();
            let actual = computed.hex_for(&d.algorithm)?;
            (expected != actual).then(|| Mismatch {
                algorithm: d.algorithm.clone(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            })
        })
        .collect()
}

/// A streaming hasher computing md5 + sha256 (+ sha1) in one pass.
pub struct Hasher {
    /// None for [`Hasher::sha256_only`].
    md5: Option<md5::Md5>,
    sha256: sha2::Sha256,
    sha1: Option<sha1::Sha1>,
    length: u64,
}

impl Hasher {
    pub fn new(with_sha1: bool) -> Hasher {
        use sha2::Digest as _;
        Hasher {
            md5: Some(<md5::Md5 as md5::Digest>::new()),
            sha256: sha2::Sha256::new(),
            sha1: with_sha1.then(sha1::Sha1::new),
            length: 0,
        }
    }

    /// Length and sha-256 only; the result's `md5_hex` is empty (`audit --level sha256`).
    pub(crate) fn sha256_only() -> Hasher {
        Hasher {
            md5: None,
            ..Hasher::new(false)
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        use sha2::Digest as _;
        if let Some(m) = &mut self.md5 {
            md5::Digest::update(m, bytes);
        }
        self.sha256.update(bytes);
        if let Some(s) = &mut self.sha1 {
            s.update(bytes);
        }
        self.length += bytes.len() as u64;
    }

    /// The bytes hashed so far.
    pub fn length(&self) -> u64 {
        self.length
    }

    pub fn finish(self) -> Computed {
        use sha2::Digest as _;
        Computed {
            length: self.length,
            md5_hex: self
                .md5
                .map(|m| hex::encode(md5::Digest::finalize(m)))
                .unwrap_or_default(),
            sha256_hex: hex::encode(self.sha256.finalize()),
            sha1_hex: self.sha1.map(|s| hex::encode(s.finalize())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_attribute_holds_room_for_its_digests_only() {
        // Events keep these until applied: a Vec of four for two is 240 bytes an event.
        for (value, n) in [
            ("md5:1a84d530c1c6b4d659149d7ba39935fb", 1),
            (
                "md5:1a84d530c1c6b4d659149d7ba39935fb \n\t sha-256:3d6adb3ee2a4a00ac0e96a17862acd337dc694dd58acc1dca5da8088163502b2",
                2,
            ),
            ("md5:x sha-1:y sha-256:z crc32:w odd", 5),
            ("  ", 0),
        ] {
            let d = parse_hash_attr(value);
            assert_eq!((d.len(), d.capacity()), (n, n), "{value:?}");
        }
    }

    #[test]
    fn tokens_are_split_as_split_ascii_whitespace_splits_them() {
        let pieces = [
            "",
            " ",
            "\t",
            "\n",
            "\r",
            "\x0c",
            "\x0b",
            "\x01",
            "\u{a0}",
            "é",
            ":",
            "a",
            "md5",
            "0123456789abcdef0123456789abcdef",
            "sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784",
        ];
        // Every string of up to three pieces, and longer mixes.
        let mut inputs = vec![String::new()];
        for _ in 0..3 {
            let mut next = Vec::new();
            for s in &inputs {
                for p in pieces {
                    next.push(format!("{s}{p}"));
                }
            }
            inputs.extend(next);
            inputs.sort();
            inputs.dedup();
        }
        let mut next = crate::rs::w3c_datetime::test_values::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let mut s = String::new();
            for _ in 0..12 {
                s.push_str(pieces[(next() % pieces.len() as u64) as usize]);
            }
            inputs.push(s);
        }
        for s in &inputs {
            let want: Vec<&str> = s.split_ascii_whitespace().collect();
            let got: Vec<&str> = ascii_tokens(s).collect();
            assert_eq!(got, want, "{s:?}");
        }
    }

    #[test]
    fn multi_hash_split_over_lines() {
        let d = parse_hash_attr(
            "md5:1584abdf8ebdc9802ac0c6a7402c03b6 \n   sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784",
        );
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].algorithm, Algorithm::Md5);
        assert_eq!(d[0].encoding, Encoding::Hex);
        assert_eq!(d[1].algorithm, Algorithm::Sha256);
        assert!(d[1].is_usable());
    }

    #[test]
    fn hex_is_recognised_exactly() {
        for b in 0..=255u8 {
            let raw: String = std::iter::repeat_n('0', 31)
                .map(|c| c as u8)
                .chain([b])
                .map(char::from)
                .collect();
            if raw.len() != 32 {
                continue;
            }
            let (hex, encoding) = decode(&raw, 16);
            if b.is_ascii_hexdigit() {
                assert_eq!(encoding, Encoding::Hex, "{b:#x}");
                assert_eq!(hex.as_deref(), Some(raw.to_ascii_lowercase().as_str()));
            } else {
                assert_ne!(encoding, Encoding::Hex, "{b:#x}");
            }
        }
    }

    #[test]
    fn hex_is_held_inline_in_lower_case() {
        let sha = "B6A98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060";
        let hex = Hex::parse(sha).unwrap();
        assert_eq!(hex.as_str(), sha.to_ascii_lowercase());
        assert_eq!(&*hex, sha.to_ascii_lowercase());
        assert_eq!(
            format!("{hex} {hex:?}"),
            format!("{0} {0:?}", sha.to_ascii_lowercase())
        );
        assert_eq!(Hex::parse("").unwrap().as_str(), "");
        assert_eq!(Hex::parse("0aF").unwrap().as_str(), "0af");
        // Longer than a sha-256, or not hex.
        assert_eq!(Hex::parse(&format!("{sha}0")), None);
        for bad in ["0g", "0 ", "-1", "0x", "é"] {
            assert_eq!(Hex::parse(bad), None, "{bad}");
        }
        let bytes: Vec<u8> = (0..32).map(|i| i * 8).collect();
        assert_eq!(Hex::encode(&bytes).unwrap().as_str(), hex::encode(&bytes));
        assert_eq!(Hex::encode(&[0; 33]), None);
        assert_eq!(Hex::encode(&[]).unwrap().as_str(), "");
    }

    #[test]
    fn base64_md5_is_decoded_to_hex() {
        // ResourceSync §14: md5("alpha\n") in base64 and hex.
        let d = parse_hash_attr("md5:n5+Q2+Pl7hIYyGuIOdsZlQ==");
        assert_eq!(
            d[0].hex.as_deref(),
            Some("9f9f90dbe3e5ee1218c86b8839db1995")
        );
        assert_eq!(d[0].encoding, Encoding::Base64);
    }

    #[test]
    fn uppercase_hex_and_spellings_normalise() {
        let d = parse_hash_attr(
            "SHA256:B6A98D9CE9A2D9149288FA3DF42D377C3E42737AFDCDAF714E33C0A100B51060",
        );
        assert_eq!(d[0].algorithm, Algorithm::Sha256);
        assert_eq!(
            d[0].hex.as_deref(),
            Some("b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060")
        );
    }

    #[test]
    fn placeholders_and_unknown_algorithms_are_unusable() {
        let d = parse_hash_attr("sha-256:f4OxZX_x_DFGFDgghgdfb6rtSx-iosjf6735432nklj crc32:abcd");
        assert!(!d[0].is_usable());
        assert_eq!(d[0].encoding, Encoding::Unusable);
        assert_eq!(d[1].algorithm, Algorithm::Other("crc32".into()));
        assert!(d.iter().all(|d| !d.is_usable()));
    }

    #[test]
    fn hasher_and_mismatch() {
        let mut h = Hasher::new(false);
        h.update(b"alp");
        h.update(b"ha\n");
        let c = h.finish();
        assert_eq!(c.length, 6);
        assert_eq!(c.md5_hex, "9f9f90dbe3e5ee1218c86b8839db1995");
        assert_eq!(
            c.sha256_hex,
            "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060"
        );
        let ok = parse_hash_attr("md5:9f9f90dbe3e5ee1218c86b8839db1995");
        assert!(mismatches(&ok, &c).is_empty());
        let bad = parse_hash_attr("md5:57a9abf56648bed40162ba3a384710ea");
        assert_eq!(mismatches(&bad, &c).len(), 1);
    }
}
