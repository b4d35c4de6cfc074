//! Why a collection is rejected: one error type with the 1-based line it concerns, and the
//! kinds a caller may want to tell apart (a limit, the checksum, a broken file). Every error is
//! fatal for the whole collection (SCP 0.1, "Fatal Errors (reject entire file)"); what the
//! spec lets a reader skip becomes a [`crate::formats::scp::read::Warning`] instead.
//!
//! The errors carry no URL: the reader is pure. Callers that know where the bytes came from
//! prefix it (`{url}: {error}`).

use std::fmt;

/// A collection that cannot be used, and the line where that became clear.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ScpError {
    /// 1-based line of the decompressed stream; for a checksum error, line 1 (where the
    /// checksum is declared); for a decompression or limit error, the line being read.
    pub line: u64,
    pub kind: ScpErrorKind,
}

impl ScpError {
    pub(crate) fn new(line: u64, kind: ScpErrorKind) -> ScpError {
        ScpError { line, kind }
    }

    /// True when the checksum failed or cannot be used.
    pub fn is_checksum(&self) -> bool {
        matches!(
            self.kind,
            ScpErrorKind::MalformedChecksum { .. }
                | ScpErrorKind::PlaceholderChecksum { .. }
                | ScpErrorKind::ChecksumMismatch { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScpErrorKind {
    #[error("empty file: an SCP collection starts with a metadata line")]
    Empty,
    #[error("not an SCP collection: {0}")]
    NotACollection(String),
    #[error("not UTF-8 (byte {valid_up_to} of the line)")]
    NotUtf8 { valid_up_to: usize },
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    #[error("not a page object: {0}")]
    NotAPage(String),
    #[error("required field {0:?} is missing")]
    MissingField(&'static str),
    #[error("field {field:?} appears twice")]
    DuplicateField { field: String },
    #[error("field {field:?}: {reason}")]
    InvalidField { field: String, reason: String },
    #[error("version {version:?} is not supported (this reader supports {supported}.x)")]
    UnsupportedVersion { version: String, supported: u32 },
    #[error("{count} content blocks, more than the limit of {limit} per page")]
    TooManyBlocks { count: usize, limit: usize },
    #[error("line longer than the limit of {limit} bytes")]
    LineTooLong { limit: u64 },
    #[error(
        "decompression ratio over {limit}:1 ({decompressed} bytes out of {compressed} compressed)"
    )]
    RatioExceeded {
        compressed: u64,
        decompressed: u64,
        limit: u64,
    },
    #[error("compressed file larger than the limit of {limit} bytes")]
    CompressedTooLarge { limit: u64 },
    #[error("decompressed content larger than the limit of {limit} bytes")]
    DecompressedTooLarge { limit: u64 },
    #[error("input longer than its declared length of {declared} bytes")]
    LongerThanDeclared { declared: u64 },
    #[error("{format} decompression failed: {message}")]
    Decompression {
        format: &'static str,
        message: String,
    },
    #[error("read failed: {0}")]
    Io(String),
    #[error("checksum {value:?} is malformed (expected \"sha256:\" and 64 hex digits)")]
    MalformedChecksum { value: String },
    #[error("checksum {value} is a placeholder from the SCP specification ({what}), not a checksum of this file")]
    PlaceholderChecksum { value: String, what: &'static str },
    #[error("{0}")]
    ChecksumMismatch(Mismatch),
}

/// A declared checksum that neither rule reproduces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The declared value, lower-cased, with its `sha256:` prefix.
    pub declared: String,
    /// SHA-256 of the decompressed bytes as received (the spec's rule), hex.
    pub spec_literal: String,
    /// SHA-256 under the reference implementation's rule (SCP 0.1 reference implementation), hex.
    pub reference_variant: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "checksum mismatch: declared {}, content hashes to sha256:{} (spec rule) and sha256:{} (reference-implementation rule)",
            self.declared, self.spec_literal, self.reference_variant
        )
    }
}

/// What the unit tests (here and in `collection`) look at.
#[cfg(test)]
impl ScpError {
    /// True when a resource limit stopped the read (as opposed to a malformed file).
    pub(crate) fn is_limit(&self) -> bool {
        matches!(
            self.kind,
            ScpErrorKind::RatioExceeded { .. }
                | ScpErrorKind::CompressedTooLarge { .. }
                | ScpErrorKind::DecompressedTooLarge { .. }
                | ScpErrorKind::LineTooLong { .. }
                | ScpErrorKind::TooManyBlocks { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_line_and_the_limit() {
        let e = ScpError::new(
            7,
            ScpErrorKind::TooManyBlocks {
                count: 1001,
                limit: 1000,
            },
        );
        assert_eq!(
            e.to_string(),
            "line 7: 1001 content blocks, more than the limit of 1000 per page"
        );
        assert!(e.is_limit());
        assert!(!e.is_checksum());
        let e = ScpError::new(3, ScpErrorKind::MissingField("title"));
        assert_eq!(e.to_string(), "line 3: required field \"title\" is missing");
    }
}
