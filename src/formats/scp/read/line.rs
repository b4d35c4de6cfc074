//! The line reader: splits the decompressed stream of a collection into JSON Lines, one at a
//! time, with its 1-based number, and refuses a line longer than [`Limits::max_line_bytes`]
//! as soon as it has read one byte more than that, so a hostile line never costs more memory
//! than the limit.
//!
//! It owns: the line buffer (its capacity never exceeds `max_line_bytes + 1`, and it is shrunk
//! back after an unusually long line), a fixed read buffer, line numbers, and turning the
//! decompressor's errors into [`ScpError`]s with the line being read. It leaves the bytes'
//! meaning (UTF-8, JSON, checksums) to [`crate::formats::scp::read::collection`].
//!
//! [`Limits::max_line_bytes`]: crate::formats::scp::read::Limits::max_line_bytes

use crate::formats::scp::read::decompress::Decompressor;
use crate::formats::scp::read::error::{ScpError, ScpErrorKind};
use std::io::{BufRead, Read};

/// Bytes read from the decompressor at a time.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

/// After a line longer than this, the line buffer gives its memory back.
const RETAINED_LINE_CAPACITY: usize = 1024 * 1024;

/// One line as read: its number and its bytes, terminator included when there was one.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// 1-based.
    pub number: u64,
    /// The bytes exactly as in the stream (what the checksum covers).
    pub raw: &'a [u8],
}

impl<'a> Line<'a> {
    /// The line without its `\n` (and a `\r` before it).
    pub(crate) fn content(&self) -> &'a [u8] {
        let mut c = self.raw;
        if let Some(rest) = c.strip_suffix(b"\n") {
            c = rest;
            if let Some(rest) = c.strip_suffix(b"\r") {
                c = rest;
            }
        }
        c
    }
}

/// Bounded line splitter over a [`Decompressor`].
pub struct LineReader<R: Read> {
    source: Decompressor<R>,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
    line: Vec<u8>,
    /// `max_line_bytes + 1`: the most a line may take with its `\n`.
    max_with_newline: usize,
    /// Number of the last line returned.
    number: u64,
    eof: bool,
}

impl<R: Read> LineReader<R> {
    pub(crate) fn new(source: Decompressor<R>, max_line_bytes: u64) -> LineReader<R> {
        LineReader {
            source,
            buf: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
            pos: 0,
            filled: 0,
            line: Vec::new(),
            max_with_newline: usize::try_from(max_line_bytes.saturating_add(1))
                .unwrap_or(usize::MAX),
            number: 0,
            eof: false,
        }
    }

    /// The next line, or `None` at the end of the stream. An empty stream has no lines; a
    /// final line without `\n` is a line.
    pub(crate) fn next_line(&mut self) -> Result<Option<Line<'_>>, ScpError> {
        self.line.clear();
        if self.line.capacity() > RETAINED_LINE_CAPACITY {
            self.line.shrink_to(RETAINED_LINE_CAPACITY);
        }
        let number = self.number + 1;
        loop {
            if self.pos == self.filled {
                if self.eof {
                    break;
                }
                self.pos = 0;
                self.filled = self
                    .source
                    .read(&mut self.buf)
                    .map_err(|kind| ScpError::new(number, kind))?;
                if self.filled == 0 {
                    self.eof = true;
                    break;
                }
            }
            let available = &self.buf[self.pos..self.filled];
            let room = self.max_with_newline - self.line.len();
            let take = available.len().min(room);
            // Room first, so that `read_until` (std's fast newline search) never grows the
            // buffer itself: the capacity stays within `max_with_newline`.
            grow(&mut self.line, take, self.max_with_newline);
            let n = (&available[..take])
                .read_until(b'\n', &mut self.line)
                .expect("reading from a slice cannot fail");
            self.pos += n;
            if self.line.last() == Some(&b'\n') {
                break;
            }
            if self.line.len() == self.max_with_newline {
                // `max_line_bytes + 1` bytes and no newline among them.
                let limit = self.max_with_newline as u64 - 1;
                return Err(ScpError::new(number, ScpErrorKind::LineTooLong { limit }));
            }
        }
        if self.line.is_empty() {
            return Ok(None);
        }
        self.number = number;
        Ok(Some(Line {
            number,
            raw: &self.line,
        }))
    }

    /// Number of the last line returned (0 before the first).
    pub(crate) fn line_number(&self) -> u64 {
        self.number
    }

    pub(crate) fn decompressor(&self) -> &Decompressor<R> {
        &self.source
    }
}

/// Make room for `extra` more bytes, doubling but never past `max` (which the caller never
/// exceeds), so a long line costs O(n) copying and at most `max` bytes of memory.
fn grow(line: &mut Vec<u8>, extra: usize, max: usize) {
    let need = line.len() + extra;
    if need <= line.capacity() {
        return;
    }
    let target = need.max(line.capacity() * 2).max(8 * 1024).min(max);
    line.reserve_exact(target - line.len());
}

/// What the unit tests look at.
#[cfg(test)]
impl Line<'_> {
    pub(crate) fn is_terminated(&self) -> bool {
        self.raw.last() == Some(&b'\n')
    }
}

/// What the unit tests (here and in `collection`) look at.
#[cfg(test)]
impl<R: Read> LineReader<R> {
    /// Memory held for the current line; never more than `max_line_bytes + 1`.
    pub(crate) fn line_capacity(&self) -> usize {
        self.line.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::scp::read::decompress::tests::{gzip, zstd};
    use crate::formats::scp::read::Limits;
    use proptest::prelude::*;

    fn reader(input: &[u8], max_line: u64) -> LineReader<&[u8]> {
        let limits = Limits {
            max_line_bytes: max_line,
            ..Limits::default()
        };
        LineReader::new(Decompressor::new(input, &limits, None).unwrap(), max_line)
    }

    fn lines(input: &[u8], max_line: u64) -> Result<Vec<(u64, Vec<u8>)>, ScpError> {
        let mut r = reader(input, max_line);
        let mut out = Vec::new();
        while let Some(l) = r.next_line()? {
            out.push((l.number, l.raw.to_vec()));
            assert!(r.line_capacity() <= max_line as usize + 1);
        }
        Ok(out)
    }

    #[test]
    fn splits_keeping_terminators() {
        let got = lines(b"a\nbb\r\n\nlast", 100).unwrap();
        let want: Vec<(u64, Vec<u8>)> = vec![
            (1, b"a\n".to_vec()),
            (2, b"bb\r\n".to_vec()),
            (3, b"\n".to_vec()),
            (4, b"last".to_vec()),
        ];
        assert_eq!(got, want);
        assert!(lines(b"", 100).unwrap().is_empty());
        assert_eq!(lines(b"x\n", 100).unwrap().len(), 1);
        let line = Line {
            number: 1,
            raw: b"bb\r\n",
        };
        assert_eq!(line.content(), b"bb");
        assert!(line.is_terminated());
    }

    #[test]
    fn line_of_exactly_the_limit_passes_and_one_more_fails() {
        for body in [&b"12345"[..], b"12345\n"] {
            let mut input = b"ok\n".to_vec();
            input.extend_from_slice(body);
            let got = lines(&input, 5).unwrap();
            assert_eq!(got[1].1, body);
        }
        for input in [&b"ok\n123456"[..], b"ok\n123456\n", b"ok\n1234567890\n"] {
            let e = lines(input, 5).unwrap_err();
            assert_eq!(e, ScpError::new(2, ScpErrorKind::LineTooLong { limit: 5 }));
            assert_eq!(
                e.to_string(),
                "line 2: line longer than the limit of 5 bytes"
            );
        }
    }

    #[test]
    fn long_lines_across_read_buffers() {
        // Letters from a small LCG: long, and not so compressible that gzip passes 100:1.
        let mut seed = 12345u32;
        let long: Vec<u8> = (0..READ_BUFFER_BYTES * 3 + 17)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                b'a' + (seed >> 16) as u8 % 26
            })
            .collect();
        let mut input = long.clone();
        input.push(b'\n');
        input.extend_from_slice(b"tail");
        let got = lines(&gzip(&input), long.len() as u64).unwrap();
        assert_eq!(got[0].1.len(), long.len() + 1);
        assert_eq!(got[1], (2, b"tail".to_vec()));
        let e = lines(&input, long.len() as u64 - 1).unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn buffer_shrinks_after_a_long_line() {
        let mut input = vec![b'x'; 3 * RETAINED_LINE_CAPACITY];
        input.extend_from_slice(b"\nshort\n");
        let mut r = reader(&input, u64::MAX / 2);
        r.next_line().unwrap().unwrap();
        assert!(r.line_capacity() >= 3 * RETAINED_LINE_CAPACITY);
        r.next_line().unwrap().unwrap();
        assert!(r.line_capacity() <= RETAINED_LINE_CAPACITY);
    }

    #[test]
    fn decompression_errors_carry_the_line_being_read() {
        let mut data = Vec::new();
        for i in 0..2000 {
            data.extend_from_slice(format!("line {i} with some words in it\n").as_bytes());
        }
        let gz = gzip(&data);
        let e = lines(&gz[..gz.len() / 2], 1000).unwrap_err();
        assert!(matches!(e.kind, ScpErrorKind::Decompression { .. }), "{e}");
        assert!(e.line > 1, "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Arbitrary bytes (raw, gzip, zstd): never a panic; every line within the limit;
        /// the line buffer never larger than the limit + 1; the lines put together are the
        /// input.
        #[test]
        fn arbitrary_input_is_split_within_bounds(
            bytes in proptest::collection::vec(
                prop_oneof![3 => any::<u8>(), 1 => Just(b'\n')], 0..3000),
            max_line in 1u64..300,
            wrap in 0u8..3,
        ) {
            let input = match wrap { 0 => bytes.clone(), 1 => gzip(&bytes), _ => zstd(&bytes) };
            let mut r = reader(&input, max_line);
            let mut joined = Vec::new();
            let mut expected_number = 1;
            let outcome = loop {
                match r.next_line() {
                    Ok(Some(l)) => {
                        prop_assert_eq!(l.number, expected_number);
                        prop_assert!(l.content().len() as u64 <= max_line + 1);
                        prop_assert!(l.raw.len() as u64 <= max_line + 1);
                        joined.extend_from_slice(l.raw);
                        expected_number += 1;
                    }
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
                prop_assert!(r.line_capacity() as u64 <= max_line + 1);
            };
            prop_assert!(r.line_capacity() as u64 <= max_line + 1);
            match outcome {
                Ok(()) => prop_assert_eq!(joined, bytes),
                Err(e) => {
                    prop_assert_eq!(e.kind, ScpErrorKind::LineTooLong { limit: max_line });
                    prop_assert!(bytes.split(|&b| b == b'\n').any(|l| l.len() as u64 > max_line));
                }
            }
        }
    }
}
