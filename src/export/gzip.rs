//! gzip members (RFC 1952), one per WARC record, on zlib (`libz-sys`, the system's zlib, which
//! curl already links). A member is a deflate stream of its own, so the stream is reset for
//! each; a reset zeroes the hash table, whose size zlib takes from `memLevel`. With the
//! default table (and with flate2's Rust backends, whose table is fixed at 128 KB) zeroing it
//! was most of an export of small records: here each record gets a table about its own size
//! (one stream per size class, reset between its members), which finds the same matches in
//! it. Compression level as given; window 32 KB.

use libz_sys as z;
use std::io::{self, Write};
use std::os::raw::c_int;

/// A raw deflate stream (no zlib header: gzip frames it).
struct Stream(Box<z::z_stream>);

unsafe extern "C" fn zalloc(_: z::voidpf, items: z::uInt, size: z::uInt) -> z::voidpf {
    // SAFETY: calloc of what zlib asks for; zlib checks for NULL.
    unsafe { libc::calloc(items as usize, size as usize) }
}

unsafe extern "C" fn zfree(_: z::voidpf, p: z::voidpf) {
    // SAFETY: a pointer `zalloc` returned (or NULL).
    unsafe { libc::free(p) }
}

impl Stream {
    fn new(level: c_int, mem_level: c_int) -> io::Result<Stream> {
        let mut s = Box::new(z::z_stream {
            next_in: std::ptr::null_mut(),
            avail_in: 0,
            total_in: 0,
            next_out: std::ptr::null_mut(),
            avail_out: 0,
            total_out: 0,
            msg: std::ptr::null_mut(),
            state: std::ptr::null_mut(),
            zalloc,
            zfree,
            opaque: std::ptr::null_mut(),
            data_type: 0,
            adler: 0,
            reserved: 0,
        });
        // SAFETY: a z_stream with its allocators set, zlib's own version string and size; the
        // Box keeps its address fixed while zlib holds it (state points back to it).
        let rc = unsafe {
            z::deflateInit2_(
                &mut *s,
                level,
                z::Z_DEFLATED,
                -15,
                mem_level,
                z::Z_DEFAULT_STRATEGY,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as c_int,
            )
        };
        if rc != z::Z_OK {
            return Err(io::Error::other(format!(
                "zlib: deflateInit2 failed ({rc})"
            )));
        }
        Ok(Stream(s))
    }

    fn reset(&mut self) {
        // SAFETY: an initialised stream.
        unsafe { z::deflateReset(&mut *self.0) };
    }

    /// Compress `input` (all of it) into the spare capacity of `out`; `finish`: end the stream.
    /// How much of `input` was taken and whether the stream ended.
    fn deflate(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        finish: bool,
    ) -> io::Result<(usize, bool)> {
        let s = &mut *self.0;
        let spare = out.capacity() - out.len();
        s.next_in = input.as_ptr() as *mut u8;
        s.avail_in = input.len().min(u32::MAX as usize) as z::uInt;
        // SAFETY: the pointer is to `spare` writable bytes past `out`'s length.
        s.next_out = unsafe { out.as_mut_ptr().add(out.len()) };
        s.avail_out = spare.min(u32::MAX as usize) as z::uInt;
        let before_in = s.avail_in;
        let before_out = s.avail_out;
        let flush = if finish { z::Z_FINISH } else { z::Z_NO_FLUSH };
        // SAFETY: the stream's buffers point into `input` and `out` as set just above.
        let rc = unsafe { z::deflate(s, flush) };
        let taken = (before_in - s.avail_in) as usize;
        let made = (before_out - s.avail_out) as usize;
        // SAFETY: zlib wrote `made` bytes into the spare capacity.
        unsafe { out.set_len(out.len() + made) };
        s.next_in = std::ptr::null_mut();
        s.next_out = std::ptr::null_mut();
        match rc {
            z::Z_OK | z::Z_BUF_ERROR => Ok((taken, false)),
            z::Z_STREAM_END => Ok((taken, true)),
            rc => Err(io::Error::other(format!("zlib: deflate failed ({rc})"))),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: an initialised stream, ended once.
        unsafe { z::deflateEnd(&mut *self.0) };
    }
}

// SAFETY: the stream's state is owned by it alone and zlib keeps no thread-local state.
unsafe impl Send for Stream {}

/// Writes gzip members: `begin`, `write`..., `finish`.
pub struct Member {
    level: c_int,
    /// A stream per memLevel 1..=8 (hash tables of 2^(level+7) entries), made when first used.
    streams: Vec<Option<Stream>>,
    current: usize,
    crc: flate2::Crc,
    /// Compressed bytes not yet written.
    out: Vec<u8>,
    /// Compressed bytes written of this member.
    written: u64,
}

impl Member {
    /// A member's header: deflate, no name, no time, OS unknown.
    const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    const OUT: usize = 64 * 1024;

    pub(crate) fn new(level: u32) -> Member {
        Member {
            level: level.min(9) as c_int,
            streams: (0..=8).map(|_| None).collect(),
            current: 8,
            crc: flate2::Crc::new(),
            out: Vec::with_capacity(2 * Self::OUT),
            written: 0,
        }
    }

    /// Start a member of about `size` bytes (a guess is fine: it only sizes the hash table).
    pub(crate) fn begin(&mut self, size: u64) -> io::Result<()> {
        // A table of at least `size` entries, from 256 to zlib's default 32,768.
        let bits = 64 - size.max(1).saturating_sub(1).leading_zeros() as i32;
        let mem_level = (bits - 7).clamp(1, 8) as usize;
        if self.streams[mem_level].is_none() {
            self.streams[mem_level] = Some(Stream::new(self.level, mem_level as c_int)?);
        } else if let Some(s) = self.streams[mem_level].as_mut() {
            s.reset();
        }
        self.current = mem_level;
        self.crc.reset();
        self.out.clear();
        self.out.extend_from_slice(&Self::HEADER);
        self.written = 0;
        Ok(())
    }

    fn spill(&mut self, w: &mut impl Write) -> io::Result<()> {
        if self.out.capacity() - self.out.len() < Self::OUT {
            w.write_all(&self.out)?;
            self.written += self.out.len() as u64;
            self.out.clear();
        }
        Ok(())
    }

    fn stream(&mut self) -> &mut Stream {
        self.streams[self.current]
            .as_mut()
            .expect("begin made the stream")
    }

    pub(crate) fn write(&mut self, data: &[u8], w: &mut impl Write) -> io::Result<()> {
        self.crc.update(data);
        let mut input = data;
        while !input.is_empty() {
            self.spill(w)?;
            let mut out = std::mem::take(&mut self.out);
            let r = self.stream().deflate(input, &mut out, false);
            self.out = out;
            input = &input[r?.0..];
        }
        Ok(())
    }

    /// End the member: the bytes it took.
    pub(crate) fn finish(&mut self, w: &mut impl Write) -> io::Result<u64> {
        loop {
            self.spill(w)?;
            let mut out = std::mem::take(&mut self.out);
            let r = self.stream().deflate(&[], &mut out, true);
            self.out = out;
            if r?.1 {
                break;
            }
        }
        self.out.extend_from_slice(&self.crc.sum().to_le_bytes());
        self.out.extend_from_slice(&self.crc.amount().to_le_bytes());
        w.write_all(&self.out)?;
        self.written += self.out.len() as u64;
        self.out.clear();
        Ok(self.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn members_of_every_size_class_read_back() {
        // Members of many sizes, one after another in one file, each read back alone and all
        // together (as gzip reads concatenated members).
        let mut gz = Member::new(6);
        let mut file = Vec::new();
        let mut bodies = Vec::new();
        let mut x: u32 = 7;
        for n in [
            0usize, 1, 100, 255, 256, 257, 1000, 5000, 40_000, 200_000, 3, 70_000,
        ] {
            let body: Vec<u8> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // Half text-like (compressible), half noise.
                    if i % 2 == 0 {
                        b"abcab"[i % 5]
                    } else {
                        x as u8
                    }
                })
                .collect();
            let start = file.len();
            gz.begin(n as u64).unwrap();
            // In pieces, as objects are read.
            for piece in body.chunks(7_777) {
                gz.write(piece, &mut file).unwrap();
            }
            let took = gz.finish(&mut file).unwrap();
            assert_eq!(took as usize, file.len() - start);
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&file[start..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, body, "{n}");
            bodies.extend_from_slice(&body);
        }
        let mut all = Vec::new();
        flate2::read::MultiGzDecoder::new(&file[..])
            .read_to_end(&mut all)
            .unwrap();
        assert_eq!(all, bodies);
    }
}
