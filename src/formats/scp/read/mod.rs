//! Site Content Protocol (SCP 0.1) readers: pure functions from bytes to typed items, like the
//! ResourceSync readers in [`crate::rs`]. They know nothing of the network or the catalog.
//!
//! # The two documents
//!
//! - [`sitemap`]: a `sitemap.xml` carrying the SCP extension (namespace [`SCP_NS`]).
//!   [`sitemap::read_sitemap`] says whether a sitemap is an SCP source and lists its sections,
//!   snapshots and deltas ([`sitemap::ScpSitemap`]).
//! - [`collection`]: one collection file (`.scp`, `.scp.gz`, `.scp.zst`, recognised by content).
//!   [`CollectionReader`] streams it line by line in bounded memory.
//!
//! # Reading a collection: stage, then commit
//!
//! The checksum covers the whole decompressed stream and sits on line 1, so no page can be
//! trusted before the last byte has been read. The reader therefore yields pages one at a time
//! and gives its verdict only at the end:
//!
//! ```no_run
//! # use rsmirror::formats::scp::read::{CollectionReader, Limits};
//! # fn stage(_: &rsmirror::formats::scp::read::Page) {}
//! # fn commit(_: &rsmirror::formats::scp::read::CollectionSummary) {}
//! # fn discard() {}
//! # let file = std::fs::File::open("staging/x").unwrap();
//! # let len = file.metadata().unwrap().len();
//! let mut reader = CollectionReader::open_with_len(file, len, &Limits::default())?;
//! println!("{} {}", reader.meta().section, reader.meta().kind);
//! let outcome = loop {
//!     match reader.next_page() {
//!         Ok(Some(page)) => stage(&page), // staging table / file, NOT the mirror yet
//!         Ok(None) => break reader.finish(),
//!         Err(e) => break Err(e),
//!     }
//! };
//! match outcome {
//!     Ok(summary) => commit(&summary), // checksum verified (or recorded as unverified)
//!     Err(_) => discard(),             // nothing from this collection is used
//! }
//! # Ok::<(), rsmirror::formats::scp::read::ScpError>(())
//! ```
//!
//! - [`CollectionReader::open`]`(input, &limits)` / [`CollectionReader::open_with_len`]`(input,
//!   len, &limits)`: detect gzip / zstd / plain by magic bytes, read and check line 1
//!   ([`CollectionMeta`]). Passing the compressed length makes the 100:1 ratio rule exact from
//!   the first byte (see [`decompress`]).
//! - [`CollectionReader::next_page`]` -> Result<Option<Page>, ScpError>`: the next valid page.
//!   Invalid JSON, a missing required field or a limit is an [`ScpError`] (with its 1-based
//!   line) that rejects the whole collection; an invalid page URL skips the page; unknown block
//!   types and out-of-range heading levels are kept / clamped; all with [`Warning`]s.
//! - [`CollectionReader::finish`]` -> Result<CollectionSummary, ScpError>`: reads what is left,
//!   verifies the checksum (spec-literal rule, then the reference implementation's variant,
//!   [`ChecksumStatus`]), and returns sizes, counts, the content SHA-256 and the warnings.
//!
//! Memory: one line (at most [`Limits::max_line_bytes`] + 1 bytes), a 64 KiB read buffer, a
//! 64 KiB input buffer, the decoder's state (zstd window capped at 128 MiB), and at most
//! [`warning::LISTED_PER_KIND`] warnings per kind. A 1 GB collection is read in a few MB.
//!
//! # Files
//!
//! `limits` (the spec's limits, lowerable for tests), `error` ([`ScpError`]), `decompress`
//! (magic bytes, decoders, file-level limits), `line` (bounded line splitting), `checksum`
//! (both rules, placeholders), `page` ([`Page`], [`Block`]), `collection` (line 1, the reader),
//! `warning` (bounded warning log), `sitemap` (the `scp:` sitemap extension).

pub mod checksum;
pub mod collection;
pub mod decompress;
pub mod error;
pub mod limits;
pub mod line;
pub mod page;
pub mod sitemap;
pub mod warning;

pub use checksum::ChecksumStatus;
pub use collection::{
    CollectionMeta, CollectionReader, CollectionSummary, CollectionType, Version, SUPPORTED_VERSION,
};
pub use decompress::Compression;
pub use error::{Mismatch, ScpError, ScpErrorKind};
pub use limits::Limits;
pub use page::{Block, Media, MediaUrl, Page};
pub use warning::Warning;

/// The SCP sitemap extension namespace (SCP 0.1, "Discovery via Sitemap", Appendix A).
pub const SCP_NS: &str = "https://scp-protocol.org/schemas/sitemap/1.0";
