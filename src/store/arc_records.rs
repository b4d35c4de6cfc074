//! What the catalog keeps of ARC sources besides versions (schema.sql: `arc_sitemaps`,
//! `arc_versions`), and the single writer that commits ARC versions together with what the
//! sitemap said of each page.
//!
//! The writer is `store::writer::Writer` (one `syncfs` of the object store before each
//! transaction, so a version row never names bytes a crash could lose) with the ARC row that
//! is keyed by each version's id written in the same transaction.

use crate::store::writer::{Then, Tx};
use crate::store::{Catalog, StoreError};
use jiff::Timestamp;
use rusqlite::{params, OptionalExtension};
use std::time::Duration;

/// An ARC sitemap as last read.
#[derive(Debug, Clone, PartialEq)]
pub struct SitemapRecord {
    /// The sitemap URL: the collection's id in the catalog.
    pub url: String,
    pub site: String,
    pub version: String,
    pub generated_at: Timestamp,
    pub page_count: u64,
    /// The least time between requests its `crawl_rate` asks for.
    pub crawl_delay: Option<Duration>,
    pub delta_feeds: Vec<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// What a sitemap or delta feed said of the page a version was fetched for (ARC Sitemap specification §E.4).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageRecord {
    pub sitemap_url: String,
    /// The sitemap or delta feed that listed the page.
    pub document_url: String,
    pub ai_indexable: bool,
    pub ai_summary: Option<String>,
    pub ai_tags_json: Option<String>,
    pub ai_checksum: Option<String>,
    pub ai_snapshot_json: Option<String>,
    pub crawl_priority: Option<f64>,
    pub robots_directive: Option<String>,
}

/// What a sitemap or delta feed said of the page a version was fetched for, as the readers
/// (`ls --json`, `log`) and the exports (WARC, BagIt) show it. `ai_snapshot` is the text the
/// source published, keys in their order.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ArcPage {
    /// Recorded, not enforced.
    pub ai_indexable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_tags: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_checksum: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai_snapshot: Option<Box<serde_json::value::RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crawl_priority: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub robots_directive: Option<String>,
    /// The sitemap or delta feed that listed the page.
    pub document: String,
}

/// What the ARC pages said of each version, for the readers and exports that show it: one
/// lookup per version, made only when the mirror holds ARC versions at all.
#[derive(Debug, Clone, Copy)]
pub struct ArcPages {
    any: bool,
}

impl ArcPages {
    pub(crate) fn new(catalog: &crate::store::Catalog) -> Result<ArcPages, StoreError> {
        let any: bool =
            catalog
                .conn()
                .query_row("SELECT EXISTS (SELECT 1 FROM arc_versions)", [], |r| {
                    r.get(0)
                })?;
        Ok(ArcPages { any })
    }

    /// What the page said of version `version_id`; None for a version no ARC page made. A
    /// tag list or snapshot that no longer reads as JSON (a damaged row) is left out.
    pub(crate) fn of(
        &self,
        catalog: &crate::store::Catalog,
        version_id: i64,
    ) -> Result<Option<ArcPage>, StoreError> {
        if !self.any {
            return Ok(None);
        }
        Ok(catalog
            .conn()
            .prepare_cached(
                "SELECT ai_indexable, ai_summary, ai_tags_json, ai_checksum, ai_snapshot_json,
                        crawl_priority, robots_directive, document_url
                 FROM arc_versions WHERE version_id = ?1",
            )?
            .query_row([version_id], |r| {
                Ok(ArcPage {
                    ai_indexable: r.get(0)?,
                    ai_summary: r.get(1)?,
                    ai_tags: r
                        .get::<_, Option<String>>(2)?
                        .and_then(|j| serde_json::from_str(&j).ok()),
                    ai_checksum: r.get(3)?,
                    ai_snapshot: r
                        .get::<_, Option<String>>(4)?
                        .and_then(|j| serde_json::value::RawValue::from_string(j).ok()),
                    crawl_priority: r.get(5)?,
                    robots_directive: r.get(6)?,
                    document: r.get(7)?,
                })
            })
            .optional()?)
    }
}

/// The sitemap an ARC source was baselined from: the one recorded for `source_id`, else the
/// one whose URL is `url` (the source may have been given differently at baseline).
pub(crate) fn sitemap_of(
    catalog: &Catalog,
    source_id: i64,
    url: &str,
) -> Result<Option<SitemapRecord>, StoreError> {
    let mut stmt = catalog.conn().prepare(
        "SELECT url, site, arc_sitemap_version, generated_at, page_count, crawl_delay_seconds,
                delta_feeds_json, etag, last_modified
         FROM arc_sitemaps WHERE source_id = ?1 OR url = ?2
         ORDER BY (url = ?2) DESC, (source_id = ?1) DESC, fetched_at DESC",
    )?;
    Ok(stmt
        .query_row(params![source_id, url], |r| {
            Ok(SitemapRecord {
                url: r.get(0)?,
                site: r.get(1)?,
                version: r.get(2)?,
                generated_at: r
                    .get::<_, String>(3)?
                    .parse()
                    .unwrap_or(Timestamp::UNIX_EPOCH),
                page_count: r.get::<_, i64>(4)? as u64,
                crawl_delay: r
                    .get::<_, Option<f64>>(5)?
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(Duration::from_secs_f64),
                delta_feeds: r
                    .get::<_, Option<String>>(6)?
                    .and_then(|j| serde_json::from_str(&j).ok())
                    .unwrap_or_default(),
                etag: r.get(7)?,
                last_modified: r.get(8)?,
            })
        })
        .optional()?)
}

/// Writes inside a transaction.
pub mod write_arc {
    use super::*;

    pub(crate) fn sitemap(
        tx: &Tx<'_>,
        source_id: i64,
        run_id: i64,
        s: &SitemapRecord,
    ) -> Result<(), StoreError> {
        tx.conn().execute(
            "INSERT INTO arc_sitemaps (url, source_id, site, arc_sitemap_version, generated_at,
                page_count, crawl_delay_seconds, delta_feeds_json, etag, last_modified, fetched_at, run_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT(url) DO UPDATE SET source_id = excluded.source_id, site = excluded.site,
                arc_sitemap_version = excluded.arc_sitemap_version,
                generated_at = excluded.generated_at, page_count = excluded.page_count,
                crawl_delay_seconds = excluded.crawl_delay_seconds,
                delta_feeds_json = excluded.delta_feeds_json, etag = excluded.etag,
                last_modified = excluded.last_modified, fetched_at = excluded.fetched_at,
                run_id = excluded.run_id",
            params![
                s.url,
                source_id,
                s.site,
                s.version,
                s.generated_at.to_string(),
                s.page_count as i64,
                s.crawl_delay.map(|d| d.as_secs_f64()),
                (!s.delta_feeds.is_empty())
                    .then(|| serde_json::to_string(&s.delta_feeds).expect("serialisable")),
                s.etag,
                s.last_modified,
                Timestamp::now().to_string(),
                run_id
            ],
        )?;
        Ok(())
    }

    /// The page's row, to be written with its version once that has an id.
    pub(crate) fn page_rows(page: PageRecord) -> Then {
        Box::new(move |tx: &Tx<'_>, id| self::page(tx, id, &page))
    }

    pub(crate) fn page(tx: &Tx<'_>, version_id: i64, p: &PageRecord) -> Result<(), StoreError> {
        tx.conn().execute(
            "INSERT INTO arc_versions (version_id, sitemap_url, document_url, ai_indexable,
                ai_summary, ai_tags_json, ai_checksum, ai_snapshot_json, crawl_priority, robots_directive)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                version_id,
                p.sitemap_url,
                p.document_url,
                p.ai_indexable as i64,
                p.ai_summary,
                p.ai_tags_json,
                p.ai_checksum,
                p.ai_snapshot_json,
                p.crawl_priority,
                p.robots_directive
            ],
        )?;
        Ok(())
    }
}
