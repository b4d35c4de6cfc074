//! The decompressing reader under every SCP collection: it tells gzip, zstd and plain apart by
//! their first bytes (never by name or header), decodes, and enforces the file-level limits of
//! [`Limits`] *while* decoding, so a compression bomb is stopped after a bounded amount of
//! output rather than after it has filled a disk.
//!
//! It owns: magic-byte detection (SCP 0.1, IANA section: `1F 8B` gzip, `28 B5 2F FD` zstd,
//! anything else plain), multi-member gzip (read whole), multi-frame zstd, counting compressed
//! and decompressed bytes, the compressed / decompressed caps and the ratio rule. It leaves to
//! the line reader ([`crate::formats::scp::read::line`]) everything about lines, and knows nothing of JSON.
//!
//! The ratio rule. The spec's limit is on the whole file: `decompressed <= 100 x compressed`
//! (exactly 100:1 passes). When the caller knows the compressed length (a staged file, a
//! trusted Content-Length) the reader checks against it from the first byte on, which is exact.
//! When it does not, it checks against the compressed bytes read so far plus one input buffer
//! of read-ahead (a bomb is stopped after at most `100 x (read + 64 KiB)` bytes of output), and
//! exactly against the total at the end of the input. Without a known length, a file whose
//! beginning is far more compressible than its whole can be refused; pass the length.

use crate::formats::scp::read::error::ScpErrorKind;
use crate::formats::scp::read::limits::Limits;
use std::io::{self, BufReader, Read};

/// gzip (RFC 1952) member header.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// zstd (RFC 8878) frame header.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Size of the buffer between the raw input and a decoder, which is also how far a decoder
/// reads ahead of what it has decoded.
pub const INPUT_BUFFER_BYTES: usize = 64 * 1024;

/// zstd window cap (2^27 = 128 MiB, libzstd's default limit), stated so that it cannot change
/// under us: a frame asking for a larger window is refused instead of allocated.
const ZSTD_WINDOW_LOG_MAX: u32 = 27;

/// How a collection file is compressed, as told by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    Gzip,
    Zstd,
    None,
}

impl Compression {
    /// SCP 0.1 (IANA, "Magic number(s)"): `1F 8B` gzip, `28 B5 2F FD` zstd, else none.
    pub(crate) fn detect(head: &[u8]) -> Compression {
        if head.starts_with(&GZIP_MAGIC) {
            Compression::Gzip
        } else if head.starts_with(&ZSTD_MAGIC) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::None => "none",
        }
    }
}

/// The raw input with the sniffed head bytes put back in front.
type Rewound<R> = io::Chain<io::Take<io::Cursor<[u8; 4]>>, R>;

/// Counts the bytes read from the raw input and stops at the compressed-size cap or the
/// declared length. The reason is kept here, since a decoder may wrap or replace the
/// `io::Error` on its way up.
struct Counted<R> {
    inner: R,
    count: u64,
    max: u64,
    declared: Option<u64>,
    fault: Option<ScpErrorKind>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.fault.is_some() {
            return Err(io::Error::other("SCP input limit"));
        }
        let n = loop {
            match self.inner.read(out) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.count += n as u64;
        if let Some(declared) = self.declared.filter(|&d| self.count > d) {
            self.fault = Some(ScpErrorKind::LongerThanDeclared { declared });
        } else if self.count > self.max {
            self.fault = Some(ScpErrorKind::CompressedTooLarge { limit: self.max });
        }
        if self.fault.is_some() {
            return Err(io::Error::other("SCP input limit"));
        }
        Ok(n)
    }
}

enum Decoder<R: Read> {
    Plain(Counted<Rewound<R>>),
    Gzip(Box<flate2::bufread::MultiGzDecoder<BufReader<Counted<Rewound<R>>>>>),
    Zstd(Box<zstd::stream::read::Decoder<'static, BufReader<Counted<Rewound<R>>>>>),
}

impl<R: Read> Decoder<R> {
    fn counted(&self) -> &Counted<Rewound<R>> {
        match self {
            Decoder::Plain(c) => c,
            Decoder::Gzip(d) => d.get_ref().get_ref(),
            Decoder::Zstd(d) => d.get_ref().get_ref(),
        }
    }

    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoder::Plain(c) => c.read(out),
            Decoder::Gzip(d) => d.read(out),
            Decoder::Zstd(d) => d.read(out),
        }
    }
}

/// A bounded decompressing reader: decompressed bytes out, typed errors, every file-level
/// limit checked on every read. After an error it keeps returning that error.
pub struct Decompressor<R: Read> {
    decoder: Decoder<R>,
    compression: Compression,
    limits: Limits,
    declared_len: Option<u64>,
    decompressed: u64,
    failed: Option<ScpErrorKind>,
}

impl<R: Read> Decompressor<R> {
    /// Sniff the first bytes of `input` and set up the decoder. `declared_len` is the
    /// compressed length when the caller knows it (see the module notes on the ratio rule);
    /// more input than that is an error.
    pub(crate) fn new(
        mut input: R,
        limits: &Limits,
        declared_len: Option<u64>,
    ) -> Result<Decompressor<R>, ScpErrorKind> {
        if declared_len.is_some_and(|l| l > limits.max_compressed_bytes) {
            return Err(ScpErrorKind::CompressedTooLarge {
                limit: limits.max_compressed_bytes,
            });
        }
        let mut head = [0u8; 4];
        let mut n = 0;
        while n < head.len() {
            match input.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ScpErrorKind::Io(e.to_string())),
            }
        }
        let compression = Compression::detect(&head[..n]);
        let counted = Counted {
            inner: io::Cursor::new(head).take(n as u64).chain(input),
            count: 0,
            max: limits.max_compressed_bytes,
            declared: declared_len,
            fault: None,
        };
        let decoder = match compression {
            Compression::None => Decoder::Plain(counted),
            Compression::Gzip => {
                let buffered = BufReader::with_capacity(INPUT_BUFFER_BYTES, counted);
                Decoder::Gzip(Box::new(flate2::bufread::MultiGzDecoder::new(buffered)))
            }
            Compression::Zstd => {
                let buffered = BufReader::with_capacity(INPUT_BUFFER_BYTES, counted);
                let mut d = zstd::stream::read::Decoder::with_buffer(buffered)
                    .map_err(|e| decode_error(Compression::Zstd, &e))?;
                d.window_log_max(ZSTD_WINDOW_LOG_MAX)
                    .map_err(|e| decode_error(Compression::Zstd, &e))?;
                Decoder::Zstd(Box::new(d))
            }
        };
        Ok(Decompressor {
            decoder,
            compression,
            limits: *limits,
            declared_len,
            decompressed: 0,
            failed: None,
        })
    }

    pub(crate) fn compression(&self) -> Compression {
        self.compression
    }

    /// Bytes taken from the raw input so far (including a decoder's read-ahead); the whole
    /// file once [`Self::read`] has returned 0.
    pub(crate) fn compressed_bytes(&self) -> u64 {
        self.decoder.counted().count
    }

    /// Bytes returned by [`Self::read`] so far (never more than the limits allow).
    pub(crate) fn decompressed_bytes(&self) -> u64 {
        self.decompressed
    }

    /// Like [`Read::read`]: 0 means the end of a complete stream.
    pub(crate) fn read(&mut self, out: &mut [u8]) -> Result<usize, ScpErrorKind> {
        if let Some(kind) = &self.failed {
            return Err(kind.clone());
        }
        if out.is_empty() {
            return Ok(0);
        }
        // Never take more than the limits allow; at the limit, a one-byte probe tells whether
        // the stream goes on (an error) or ends (exactly at the limit: fine). So no more than
        // one byte past a limit is ever produced, and the error surfaces only when the line
        // reader actually needs the bytes beyond it.
        let compressed = self.compressed_bytes();
        let mut allowed = self.limits.max_decompressed_bytes - self.decompressed;
        if self.compression != Compression::None {
            let base = self
                .declared_len
                .unwrap_or(compressed + INPUT_BUFFER_BYTES as u64);
            let by_ratio = self
                .limits
                .max_ratio
                .saturating_mul(base)
                .saturating_sub(self.decompressed);
            allowed = allowed.min(by_ratio);
        }
        let want = usize::try_from(allowed.max(1))
            .unwrap_or(usize::MAX)
            .min(out.len());
        let n = loop {
            match self.decoder.read(&mut out[..want]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = match &self.decoder.counted().fault {
                        Some(fault) => fault.clone(),
                        None if self.compression == Compression::None => {
                            ScpErrorKind::Io(e.to_string())
                        }
                        None => decode_error(self.compression, &e),
                    };
                    return Err(self.fail(kind));
                }
            }
        };
        let total = self.decompressed + n as u64;
        if total > self.limits.max_decompressed_bytes {
            let limit = self.limits.max_decompressed_bytes;
            return Err(self.fail(ScpErrorKind::DecompressedTooLarge { limit }));
        }
        if self.compression != Compression::None {
            let compressed = self.compressed_bytes();
            // SCP 0.1: "Limit decompression ratio to 100:1 maximum ... Abort decompression if
            // ratio is exceeded." At the end of the input the count is the whole file: exact.
            let base = if n == 0 {
                compressed
            } else {
                self.declared_len
                    .unwrap_or(compressed + INPUT_BUFFER_BYTES as u64)
            };
            if total > self.limits.max_ratio.saturating_mul(base) {
                return Err(self.fail(ScpErrorKind::RatioExceeded {
                    compressed,
                    decompressed: total,
                    limit: self.limits.max_ratio,
                }));
            }
        }
        self.decompressed = total;
        Ok(n)
    }

    fn fail(&mut self, kind: ScpErrorKind) -> ScpErrorKind {
        self.failed = Some(kind.clone());
        kind
    }
}

fn decode_error(compression: Compression, e: &io::Error) -> ScpErrorKind {
    let message = if e.kind() == io::ErrorKind::UnexpectedEof {
        "truncated (the compressed stream ends early)".to_string()
    } else {
        e.to_string()
    };
    ScpErrorKind::Decompression {
        format: compression.name(),
        message,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// gzip with a header comment of `comment` bytes (plus its NUL): pads the compressed size
    /// without changing the decompressed bytes.
    pub(crate) fn gzip_padded(data: &[u8], comment: usize) -> Vec<u8> {
        let mut e = flate2::GzBuilder::new()
            .comment(vec![b'c'; comment])
            .write(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    pub(crate) fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::stream::encode_all(data, 3).unwrap()
    }

    fn read_all(
        input: &[u8],
        limits: &Limits,
        declared: Option<u64>,
    ) -> Result<Vec<u8>, ScpErrorKind> {
        let mut d = Decompressor::new(input, limits, declared)?;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = d.read(&mut buf)?;
            if n == 0 {
                assert_eq!(d.compressed_bytes(), input.len() as u64);
                assert_eq!(d.decompressed_bytes(), out.len() as u64);
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    #[test]
    fn detection_is_by_content() {
        assert_eq!(Compression::detect(&gzip(b"x")), Compression::Gzip);
        assert_eq!(Compression::detect(&zstd(b"x")), Compression::Zstd);
        assert_eq!(Compression::detect(b"{\"collection\""), Compression::None);
        assert_eq!(Compression::detect(b""), Compression::None);
        assert_eq!(Compression::detect(&[0x1f]), Compression::None);
        assert_eq!(Compression::detect(&[0x28, 0xb5, 0x2f]), Compression::None);
    }

    #[test]
    fn plain_gzip_zstd_round_trip() {
        let data = b"{\"collection\":{}}\nline two\n".repeat(100);
        let l = Limits::default();
        assert_eq!(read_all(&data, &l, None).unwrap(), data);
        assert_eq!(read_all(&gzip(&data), &l, None).unwrap(), data);
        assert_eq!(read_all(&zstd(&data), &l, None).unwrap(), data);
        assert_eq!(read_all(b"", &l, None).unwrap(), b"");
        assert_eq!(read_all(b"ab", &l, None).unwrap(), b"ab");
    }

    #[test]
    fn multi_member_gzip_and_multi_frame_zstd_are_read_whole() {
        let l = Limits::default();
        let mut gz = gzip(b"first member\n");
        gz.extend(gzip(b"second member\n"));
        assert_eq!(
            read_all(&gz, &l, None).unwrap(),
            b"first member\nsecond member\n"
        );
        let mut zs = zstd(b"frame one\n");
        zs.extend(zstd(b"frame two\n"));
        assert_eq!(read_all(&zs, &l, None).unwrap(), b"frame one\nframe two\n");
    }

    #[test]
    fn truncated_and_corrupt_streams_are_errors() {
        let l = Limits::default();
        let data = b"some text that compresses\n".repeat(50);
        let gz = gzip(&data);
        let e = read_all(&gz[..gz.len() - 5], &l, None).unwrap_err();
        assert!(
            matches!(&e, ScpErrorKind::Decompression { format: "gzip", message } if message.contains("truncated")),
            "{e}"
        );
        let zs = zstd(&data);
        let e = read_all(&zs[..zs.len() - 3], &l, None).unwrap_err();
        assert!(
            matches!(e, ScpErrorKind::Decompression { format: "zstd", .. }),
            "{e}"
        );
        let mut bad = gz.clone();
        bad.extend_from_slice(b"trailing garbage");
        let e = read_all(&bad, &l, None).unwrap_err();
        assert!(
            matches!(e, ScpErrorKind::Decompression { format: "gzip", .. }),
            "{e}"
        );
        let e = read_all(&GZIP_MAGIC, &l, None).unwrap_err();
        assert!(matches!(e, ScpErrorKind::Decompression { .. }), "{e}");
    }

    /// Decompressed bytes `d` and a gzip of them exactly `d / 100` bytes long.
    fn exactly_100_to_1() -> (Vec<u8>, Vec<u8>) {
        let data = b"0123456789".repeat(100_000); // 1,000,000 bytes
        let natural = gzip_padded(&data, 0).len();
        let target = data.len() / 100;
        assert!(natural < target, "{natural}");
        // An empty comment already costs its NUL terminator: each comment byte adds one.
        let gz = gzip_padded(&data, target - natural);
        assert_eq!(gz.len(), target);
        (data, gz)
    }

    #[test]
    fn ratio_exactly_100_to_1_passes_and_just_over_fails() {
        let l = Limits::default();
        let (data, gz) = exactly_100_to_1();
        // With and without a known length.
        assert_eq!(read_all(&gz, &l, None).unwrap(), data);
        assert_eq!(read_all(&gz, &l, Some(gz.len() as u64)).unwrap(), data);

        // One decompressed byte more, same compressed size.
        let mut more = data.clone();
        more.push(b'0');
        let natural = gzip_padded(&more, 0).len();
        let over = gzip_padded(&more, data.len() / 100 - natural);
        assert_eq!(over.len(), gz.len());
        for declared in [None, Some(over.len() as u64)] {
            let e = read_all(&over, &l, declared).unwrap_err();
            assert_eq!(
                e,
                ScpErrorKind::RatioExceeded {
                    compressed: over.len() as u64,
                    decompressed: 1_000_001,
                    limit: 100
                }
            );
            assert_eq!(
                e.to_string(),
                "decompression ratio over 100:1 (1000001 bytes out of 10000 compressed)"
            );
        }
    }

    #[test]
    fn a_bomb_stops_early_with_a_known_length() {
        let l = Limits::default();
        let data = vec![0u8; 10_000_000];
        let gz = gzip(&data);
        assert!(gz.len() < 100_000);
        let mut d = Decompressor::new(&gz[..], &l, Some(gz.len() as u64)).unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let e = loop {
            match d.read(&mut buf) {
                Ok(0) => panic!("bomb read to the end"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert!(matches!(e, ScpErrorKind::RatioExceeded { .. }), "{e}");
        // Stopped as soon as the output passed 100 x the file.
        assert!(d.decompressed_bytes() <= 100 * gz.len() as u64 + buf.len() as u64);
        // And stays failed.
        assert_eq!(d.read(&mut buf).unwrap_err(), e);
    }

    #[test]
    fn a_bomb_stops_early_without_a_known_length() {
        let l = Limits::default();
        let gz = gzip(&vec![0u8; 10_000_000]);
        let e = read_all(&gz, &l, None).unwrap_err();
        match e {
            ScpErrorKind::RatioExceeded {
                compressed,
                decompressed,
                ..
            } => assert!(decompressed <= 100 * (compressed + INPUT_BUFFER_BYTES as u64) + 4096),
            e => panic!("{e}"),
        }
    }

    #[test]
    fn size_caps_pass_at_the_boundary_and_fail_just_over() {
        let data = b"x".repeat(1000);
        let l = Limits {
            max_compressed_bytes: 1000,
            ..Limits::default()
        };
        assert_eq!(read_all(&data, &l, None).unwrap().len(), 1000);
        let e = read_all(&b"x".repeat(1001), &l, None).unwrap_err();
        assert_eq!(e, ScpErrorKind::CompressedTooLarge { limit: 1000 });
        let e = Decompressor::new(&data[..], &l, Some(1001)).err().unwrap();
        assert_eq!(e, ScpErrorKind::CompressedTooLarge { limit: 1000 });

        let l = Limits {
            max_decompressed_bytes: 1000,
            ..Limits::default()
        };
        let gz = gzip(&data);
        assert_eq!(read_all(&gz, &l, None).unwrap().len(), 1000);
        let e = read_all(&gzip(&b"x".repeat(1001)), &l, None).unwrap_err();
        assert_eq!(e, ScpErrorKind::DecompressedTooLarge { limit: 1000 });
        let e = read_all(&b"x".repeat(1001), &l, None).unwrap_err();
        assert_eq!(e, ScpErrorKind::DecompressedTooLarge { limit: 1000 });
    }

    #[test]
    fn input_longer_than_declared_is_an_error() {
        let l = Limits::default();
        let gz = gzip(b"hello\n");
        assert!(read_all(&gz, &l, Some(gz.len() as u64)).is_ok());
        let e = read_all(&gz, &l, Some(gz.len() as u64 - 1)).unwrap_err();
        assert!(matches!(e, ScpErrorKind::LongerThanDeclared { .. }), "{e}");
    }

    /// Small limits, so that arbitrary input reaches them.
    fn small() -> Limits {
        Limits {
            max_ratio: 100,
            max_compressed_bytes: 64 * 1024,
            max_decompressed_bytes: 256 * 1024,
            max_line_bytes: 512,
            max_blocks: 4,
        }
    }

    fn drain(input: &[u8], limits: &Limits) {
        let Ok(mut d) = Decompressor::new(input, limits, None) else {
            return;
        };
        let mut buf = [0u8; 8192];
        loop {
            match d.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            assert!(d.decompressed_bytes() <= limits.max_decompressed_bytes);
            assert!(d.compressed_bytes() <= limits.max_compressed_bytes);
        }
        assert!(d.decompressed_bytes() <= limits.max_decompressed_bytes);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Arbitrary bytes, raw or behind a valid gzip / zstd header, never panic and never
        /// produce more than the limits allow.
        #[test]
        fn arbitrary_input_never_panics_or_exceeds_limits(
            bytes in proptest::collection::vec(any::<u8>(), 0..4096),
            wrap in 0u8..5,
        ) {
            let input = match wrap {
                0 => bytes,
                1 => gzip(&bytes),
                2 => zstd(&bytes),
                3 => { let mut v = GZIP_MAGIC.to_vec(); v.extend(&bytes); v }
                _ => { let mut v = ZSTD_MAGIC.to_vec(); v.extend(&bytes); v }
            };
            drain(&input, &small());
        }

        /// Highly compressible data behind gzip / zstd hits the ratio or size cap, never more.
        #[test]
        fn compressible_input_is_capped(byte in any::<u8>(), len in 0usize..600_000, z in any::<bool>()) {
            let data = vec![byte; len];
            let input = if z { zstd(&data) } else { gzip(&data) };
            drain(&input, &small());
        }
    }
}
