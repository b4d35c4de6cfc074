//! `/feeds/`: the feeds of the changes the mirror applied (`access::feed`): every source's and
//! collection's, as Atom 1.0 and JSON Feed 1.1, their RFC 5005 archives, the index page and the
//! OPML file, made from the catalog at each request (no file is written). Each answer carries a
//! strong `ETag` (a hash of its bytes) and a `Last-Modified` (the end of the newest run it
//! reflects: for a subscription document, the index and the OPML, the last run that ended; for
//! an archive, the run of its newest entry), and a conditional request that matches gets 304
//! (`If-None-Match` first; `If-Modified-Since` only without it, RFC 9110 §13.2.2).

use super::memento::{http_date, parse_http_date};
use super::reply::Reply;
use super::Head;
use crate::access::feed::{self, Doc, FeedPath, Site};
use crate::access::Reader;
use crate::error::Error;
use sha2::Digest as _;

pub(crate) fn answer(
    reader: &Reader,
    site: &Site<'_>,
    path: &FeedPath,
    req: &Head,
) -> Result<Reply, Error> {
    // A run under way is left out until it ends, as every page of this server shows it.
    let upto = reader.in_progress().map(|_| reader.last_ended());
    let newest = ended_at(reader, reader.last_ended());
    let catalog = reader.catalog();
    let (body, content_type, modified, fixed) = match path {
        FeedPath::Index => {
            let all = feed::every(catalog, upto)?;
            let page = feed::index_html(&all, site);
            (page, "text/html; charset=utf-8", newest, false)
        }
        FeedPath::Opml => {
            let all = feed::every(catalog, upto)?;
            (
                feed::opml(&all, site),
                "text/x-opml; charset=utf-8",
                newest,
                false,
            )
        }
        FeedPath::Feed {
            kind,
            slug,
            doc,
            json,
        } => {
            let Some(listed) = feed::find(catalog, *kind, slug, upto)? else {
                return Ok(Reply::error(
                    404,
                    &format!(
                        "{}: no {} feed of this mirror is named {slug}; /feeds/ lists them",
                        req.path,
                        kind.dir()
                    ),
                ));
            };
            let Some(made) = listed.document(site, *doc, *json) else {
                let n = listed.archives(site);
                return Ok(Reply::error(
                    404,
                    &format!(
                        "{}: this feed has {n} complete archive{} of {} entries (archive 1 is the oldest)",
                        req.path,
                        if n == 1 { "" } else { "s" },
                        site.per_archive
                    ),
                ));
            };
            let (modified, fixed) = match doc {
                Doc::Current => (newest, false),
                Doc::Archive(_) => (made.last_run.and_then(|r| ended_at(reader, r)), true),
            };
            let content_type = match json {
                true => "application/feed+json; charset=utf-8",
                false => "application/atom+xml; charset=utf-8",
            };
            (made.text, content_type, modified, fixed)
        }
    };
    let digest = sha2::Sha256::digest(body.as_bytes());
    let etag = format!("\"{}\"", hex::encode(&digest[..16]));
    let mut reply = match not_modified(req, &etag, modified) {
        true => Reply::new(304),
        false => Reply::text(200, content_type, body),
    };
    reply = reply.header("etag", etag).header(
        "cache-control",
        match fixed {
            // An archive never changes once complete (RFC 5005 §4).
            true => "public, max-age=31536000, immutable",
            false => "no-cache",
        },
    );
    if let Some(m) = modified {
        reply = reply.header("last-modified", http_date(m));
    }
    Ok(reply)
}

/// When run `run` ended, in seconds (None: it has not, or no such run).
fn ended_at(reader: &Reader, run: i64) -> Option<i64> {
    let info = reader.runs.get(&run)?;
    let t: jiff::Timestamp = info.ended_at.as_deref()?.parse().ok()?;
    Some(t.as_second())
}

/// Whether the client's copy is current: an `If-None-Match` that names this ETag (or `*`),
/// weakly compared; without one, an `If-Modified-Since` at or after `modified`.
fn not_modified(req: &Head, etag: &str, modified: Option<i64>) -> bool {
    if let Some(tags) = &req.if_none_match {
        return tags
            .split(',')
            .map(str::trim)
            .any(|t| t == "*" || t.trim_start_matches("W/") == etag);
    }
    let since = req.if_modified_since.as_deref().and_then(parse_http_date);
    matches!((since, modified), (Some(since), Some(m)) if m <= since)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(inm: Option<&str>, ims: Option<&str>) -> Head {
        Head {
            path: "/feeds/x".into(),
            query: None,
            head: false,
            accept_datetime: None,
            accept: None,
            host: None,
            if_none_match: inm.map(str::to_string),
            if_modified_since: ims.map(str::to_string),
        }
    }

    #[test]
    fn conditional_requests() {
        let tag = "\"abc\"";
        let at = parse_http_date("Sun, 01 Mar 2026 12:00:00 GMT");
        assert!(not_modified(&head(Some("\"abc\""), None), tag, at));
        assert!(not_modified(&head(Some("\"x\", W/\"abc\""), None), tag, at));
        assert!(not_modified(&head(Some("*"), None), tag, at));
        assert!(!not_modified(&head(Some("\"x\""), None), tag, at));
        // If-None-Match decides when present, If-Modified-Since is then ignored.
        assert!(!not_modified(
            &head(Some("\"x\""), Some("Sun, 01 Mar 2026 13:00:00 GMT")),
            tag,
            at
        ));
        assert!(not_modified(
            &head(None, Some("Sun, 01 Mar 2026 12:00:00 GMT")),
            tag,
            at
        ));
        assert!(!not_modified(
            &head(None, Some("Sun, 01 Mar 2026 11:59:59 GMT")),
            tag,
            at
        ));
        assert!(!not_modified(&head(None, Some("yesterday")), tag, at));
        assert!(!not_modified(
            &head(None, Some("Sun, 01 Mar 2026 12:00:00 GMT")),
            tag,
            None
        ));
        assert!(!not_modified(&head(None, None), tag, at));
    }
}
