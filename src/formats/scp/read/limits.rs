//! The resource limits an SCP reader enforces while it decompresses and reads (SCP 0.1,
//! "Resource Exhaustion Attacks": crawlers MUST enforce them). One struct, so that tests can
//! lower the big ones; [`Limits::default`] is the spec's.
//!
//! The spec writes "100 MB", "50 GB", "500 GB" without saying decimal or binary; the reference
//! implementation uses binary units (`100 * 1024 * 1024`), and so do we: the more permissive
//! reading, which never rejects a file the only other implementation accepts.

/// Limits on one collection file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Decompressed bytes per compressed byte, over the whole file: exactly `max_ratio`:1
    /// passes, more fails. Not applied to uncompressed files (their ratio is 1).
    pub max_ratio: u64,
    /// Bytes of the file as received (compressed, or plain when uncompressed).
    pub max_compressed_bytes: u64,
    /// Bytes after decompression.
    pub max_decompressed_bytes: u64,
    /// Bytes of one line, without its `\n` terminator (one page object, or the metadata).
    pub max_line_bytes: u64,
    /// Content blocks in one page's `content` array.
    pub max_blocks: usize,
}

/// 1 MiB.
const MIB: u64 = 1024 * 1024;
/// 1 GiB.
const GIB: u64 = 1024 * MIB;

impl Limits {
    /// SCP 0.1: "Limit decompression ratio to 100:1 maximum."
    pub const SPEC_MAX_RATIO: u64 = 100;
    /// SCP 0.1: "Total file (compressed): 50 GB maximum".
    pub const SPEC_MAX_COMPRESSED_BYTES: u64 = 50 * GIB;
    /// SCP 0.1: "Total file (decompressed): 500 GB maximum".
    pub const SPEC_MAX_DECOMPRESSED_BYTES: u64 = 500 * GIB;
    /// SCP 0.1: "Single page object: 100 MB maximum".
    pub const SPEC_MAX_LINE_BYTES: u64 = 100 * MIB;
    /// SCP 0.1: "Content array: 1000 blocks per page maximum".
    pub const SPEC_MAX_BLOCKS: usize = 1000;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_ratio: Limits::SPEC_MAX_RATIO,
            max_compressed_bytes: Limits::SPEC_MAX_COMPRESSED_BYTES,
            max_decompressed_bytes: Limits::SPEC_MAX_DECOMPRESSED_BYTES,
            max_line_bytes: Limits::SPEC_MAX_LINE_BYTES,
            max_blocks: Limits::SPEC_MAX_BLOCKS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_spec_values_in_binary_units() {
        let l = Limits::default();
        assert_eq!(l.max_ratio, 100);
        assert_eq!(l.max_compressed_bytes, 53_687_091_200);
        assert_eq!(l.max_decompressed_bytes, 536_870_912_000);
        assert_eq!(l.max_line_bytes, 104_857_600);
        assert_eq!(l.max_blocks, 1000);
    }
}
