//! ARC sitemaps (ARC sitemap 2.1, "ARC Sitemap & AI Indexing Specification"): a JSON
//! page list with `lastmod` and `ai_checksum`, and delta feeds of the pages changed since.
//!
//! Pure readers, as `rs` and `scp`: they take bytes and yield typed, validated items; they know
//! nothing of the network or the catalog (`formats::arc::mirror` wires them in).
//! `sitemap` reads and validates a sitemap or a delta feed against the format's JSON schema,
//! `crawl_rate` reads the politeness hint, `delta` names the delta feeds.

pub mod crawl_rate;
pub mod delta;
pub mod sitemap;

pub use crawl_rate::CrawlRate;
pub use sitemap::{read, read_all, ArcError, Header, Page, ReadOptions, Sitemap};
