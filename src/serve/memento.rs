//! Memento (RFC 7089) for every URI the mirror holds: TimeGates, TimeMaps and mementos.
//!
//! A memento is a state with bytes, dated by the start of the run that brought it (the
//! mirror's one clock). HTTP dates have whole seconds, so the states recorded within one
//! second are one memento: the last of them (the mirror as the later run left it). A tombstone
//! is no memento: a TimeGate chooses among the states with bytes (the newest at or before the
//! datetime asked for, else the first; none asked for: the newest), a TimeMap lists them, and a
//! URL at the second of a deletion answers 404 with its `Memento-Datetime` and links, as RFC
//! 7089 §4.5 has a memento of a resource that no longer existed answer.

use crate::access::cat::Object;
use crate::access::Reader;
use crate::error::Error;
use crate::serve::reply::{Payload, Reply};
use crate::serve::route::{wayback, MapFormat};
use crate::store::history;
use crate::store::timeline::{each_moment, Moment};
use jiff::Timestamp;

/// A second of a resource's timeline: the last state recorded within it.
#[derive(Debug, Clone, PartialEq)]
struct Second {
    at: i64,
    version: i64,
    deleted: bool,
}

/// Where this server answers (`http://127.0.0.1:8080`, or `--base-url`), for the URLs it
/// gives out.
pub(crate) struct Urls<'a> {
    pub base: &'a str,
}

impl Urls<'_> {
    pub(crate) fn memento(&self, at: i64, uri: &str) -> String {
        format!("{}/web/{}/{}", self.base, wayback(ts(at)), escaped(uri))
    }

    fn timegate(&self, uri: &str) -> String {
        format!("{}/timegate/{}", self.base, escaped(uri))
    }

    pub(crate) fn timemap(&self, format: MapFormat, page: usize, uri: &str) -> String {
        let f = match format {
            MapFormat::Link => "link",
            MapFormat::Json => "json",
        };
        match page {
            1 => format!("{}/timemap/{f}/{}", self.base, escaped(uri)),
            n => format!("{}/timemap/{f}/{n}/{}", self.base, escaped(uri)),
        }
    }
}

/// A URI as it goes into a URL of this server and a `Link` header: a fragment (an SCP page's
/// `#scp-section=NAME`) would not come back from a client, nor may `<>` or a space stand in a
/// link.
pub(crate) fn escaped(uri: &str) -> String {
    uri.replace('#', "%23")
        .replace('<', "%3C")
        .replace('>', "%3E")
        .replace(' ', "%20")
}

fn ts(at: i64) -> Timestamp {
    Timestamp::from_second(at).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// An HTTP date (RFC 9110 §5.6.7, IMF-fixdate): `Sun, 01 Mar 2026 00:00:00 GMT`.
pub(crate) fn http_date(at: i64) -> String {
    ts(at).strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

/// An `Accept-Datetime` (RFC 7089 §2.1.1: an HTTP date). The day's name is not checked
/// against the date (clients send wrong ones); anything else malformed is None.
pub(crate) fn parse_http_date(s: &str) -> Option<i64> {
    let s = s.trim();
    let s = s.split_once(',').map_or(s, |(_, rest)| rest.trim());
    let dt = jiff::civil::DateTime::strptime("%d %b %Y %H:%M:%S GMT", s).ok()?;
    Some(
        dt.to_zoned(jiff::tz::TimeZone::UTC)
            .ok()?
            .timestamp()
            .as_second(),
    )
}

/// Every second of resource `id`'s timeline, oldest first, handed to `f` (`false` stops).
fn each_second(reader: &Reader, id: i64, mut f: impl FnMut(&Second) -> bool) -> Result<(), Error> {
    let mut pending: Option<Second> = None;
    let mut stopped = false;
    each_moment(reader.catalog(), id, |m: Moment| {
        let Ok(t) = m.started_at.parse::<Timestamp>() else {
            return Ok::<_, Error>(true);
        };
        let next = Second {
            at: t.as_second(),
            version: m.version,
            deleted: m.deleted,
        };
        let go = match &pending {
            Some(p) if p.at != next.at => f(p),
            _ => true,
        };
        pending = Some(next);
        stopped = !go;
        Ok(go)
    })?;
    if let (Some(p), false) = (&pending, stopped) {
        f(p);
    }
    Ok(())
}

/// The resource a URL names, or a 404 saying the mirror does not hold it.
fn resource(reader: &Reader, uri: &str) -> Result<Result<(i64, String), Reply>, Error> {
    if let Some(found) = reader.find(uri)? {
        return Ok(Ok(found));
    }
    // An SCP page's fragment comes back escaped.
    if uri.contains("%23") {
        if let Some(found) = reader.find(&uri.replace("%23", "#"))? {
            return Ok(Ok(found));
        }
    }
    Ok(Err(Reply::error(
        404,
        &format!("{uri} is not in the mirror (/status.json lists its sources)"),
    )))
}

/// First, last, and the one chosen for a datetime, among the states with bytes.
#[derive(Default)]
struct Choice {
    first: Option<Second>,
    last: Option<Second>,
    chosen: Option<Second>,
}

/// The memento for datetime `at`: the newest at or before it, else the first; `None`: the
/// newest.
fn choose(reader: &Reader, id: i64, at: Option<i64>) -> Result<Choice, Error> {
    let mut c = Choice::default();
    each_second(reader, id, |s| {
        if s.deleted {
            return true;
        }
        if c.first.is_none() {
            c.first = Some(s.clone());
        }
        c.last = Some(s.clone());
        if at.is_some_and(|at| s.at <= at) {
            c.chosen = Some(s.clone());
        }
        true
    })?;
    c.chosen = match at {
        None => c.last.clone(),
        Some(_) => c.chosen.or_else(|| c.first.clone()),
    };
    Ok(c)
}

/// The `Link` header of a TimeGate, a memento or a deletion: the original, the TimeGate, the
/// TimeMap, the first and last mementos, and (a memento) itself and its neighbours.
struct Links<'a> {
    urls: &'a Urls<'a>,
    uri: &'a str,
    first: Option<&'a Second>,
    last: Option<&'a Second>,
    this: Option<&'a Second>,
    prev: Option<&'a Second>,
    next: Option<&'a Second>,
    timegate: bool,
}

impl Links<'_> {
    fn header(&self) -> String {
        let mut links = vec![format!("<{}>; rel=\"original\"", escaped(self.uri))];
        if self.timegate {
            links.push(format!(
                "<{}>; rel=\"timegate\"",
                self.urls.timegate(self.uri)
            ));
        }
        links.push(format!(
            "<{}>; rel=\"timemap\"; type=\"application/link-format\"",
            self.urls.timemap(MapFormat::Link, 1, self.uri)
        ));
        // Each memento once, with every relation it has (RFC 7089 §2.2.1: "first memento",
        // "last memento", "prev memento", "next memento", "memento").
        let mut seen: Vec<(&Second, Vec<&str>)> = Vec::new();
        for (s, rel) in [
            (self.first, "first"),
            (self.prev, "prev"),
            (self.this, ""),
            (self.next, "next"),
            (self.last, "last"),
        ] {
            let Some(s) = s else { continue };
            match seen.iter_mut().find(|(x, _)| x.at == s.at) {
                Some((_, rels)) => rels.push(rel),
                None => seen.push((s, vec![rel])),
            }
        }
        for (s, rels) in seen {
            let mut words: Vec<&str> = rels.into_iter().filter(|r| !r.is_empty()).collect();
            words.push("memento");
            links.push(format!(
                "<{}>; rel=\"{}\"; datetime=\"{}\"",
                self.urls.memento(s.at, self.uri),
                words.join(" "),
                http_date(s.at)
            ));
        }
        links.join(", ")
    }
}

/// A TimeGate (RFC 7089 §4.1.1, pattern 2.2): 302 to the memento chosen by `Accept-Datetime`,
/// `Vary: accept-datetime`; a malformed datetime is 400.
pub(crate) fn timegate(
    reader: &Reader,
    urls: &Urls,
    uri: &str,
    accept_datetime: Option<&str>,
) -> Result<Reply, Error> {
    let (id, uri) = match resource(reader, uri)? {
        Ok(found) => found,
        Err(reply) => return Ok(reply),
    };
    let at = match accept_datetime.map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => match parse_http_date(s) {
            Some(at) => Some(at),
            None => {
                return Ok(Reply::error(
                    400,
                    &format!(
                        "Accept-Datetime {s:?} is not an HTTP date (RFC 7089 §2.1.1): write it \
                         as Sun, 01 Mar 2026 12:00:00 GMT"
                    ),
                )
                .header("vary", "accept-datetime"))
            }
        },
    };
    redirect(reader, urls, id, &uri, at, true)
}

/// 302 to the memento for `at`, with the links a client needs; 404 when the resource never had
/// bytes in the mirror.
fn redirect(
    reader: &Reader,
    urls: &Urls,
    id: i64,
    uri: &str,
    at: Option<i64>,
    negotiated: bool,
) -> Result<Reply, Error> {
    let c = choose(reader, id, at)?;
    let links = Links {
        urls,
        uri,
        first: c.first.as_ref(),
        last: c.last.as_ref(),
        this: None,
        prev: None,
        next: None,
        timegate: !negotiated,
    };
    let Some(chosen) = &c.chosen else {
        return Ok(Reply::error(
            404,
            &format!("{uri}: the mirror holds no state of it with bytes, only its deletion"),
        )
        .header("link", links.header()));
    };
    let mut reply = Reply::new(302)
        .header("location", urls.memento(chosen.at, uri))
        .header("link", links.header());
    if negotiated {
        reply = reply.header("vary", "accept-datetime");
    }
    Ok(reply)
}

/// A memento (`/web/TIMESTAMP/URL`): 200 with the bytes exactly as fetched when a state arrived
/// at that second; 404 with its `Memento-Datetime` when the resource was deleted then; else a
/// redirect to the memento for that time, as the wayback tools do.
pub(crate) fn memento(
    reader: &Reader,
    urls: &Urls,
    uri: &str,
    at: Timestamp,
    head: bool,
) -> Result<Reply, Error> {
    let (id, uri) = match resource(reader, uri)? {
        Ok(found) => found,
        Err(reply) => return Ok(reply),
    };
    let at = at.as_second();
    let (mut first, mut last, mut prev, mut this, mut next) = (None, None, None, None, None);
    each_second(reader, id, |s| {
        if s.at == at {
            this = Some(s.clone());
        } else if !s.deleted {
            match this {
                None => prev = Some(s.clone()),
                Some(_) if next.is_none() => next = Some(s.clone()),
                Some(_) => {}
            }
        }
        if !s.deleted {
            first.get_or_insert_with(|| s.clone());
            last = Some(s.clone());
        }
        true
    })?;
    let Some(this) = this else {
        return redirect(reader, urls, id, &uri, Some(at), false);
    };
    let links = Links {
        urls,
        uri: &uri,
        first: first.as_ref(),
        last: last.as_ref(),
        this: (!this.deleted).then_some(&this),
        prev: prev.as_ref(),
        next: next.as_ref(),
        timegate: true,
    };
    state(reader, &uri, &this, links, head)
}

/// `/latest/URL`: the state the mirror holds now, with its `Memento-Datetime` and the links to
/// its TimeGate and TimeMap (a deleted resource: 404 with the same, RFC 7089 §4.5).
pub(crate) fn latest(reader: &Reader, urls: &Urls, uri: &str, head: bool) -> Result<Reply, Error> {
    let (id, uri) = match resource(reader, uri)? {
        Ok(found) => found,
        Err(reply) => return Ok(reply),
    };
    let (mut first, mut last, mut now) = (None, None, None);
    each_second(reader, id, |s| {
        if !s.deleted {
            first.get_or_insert_with(|| s.clone());
            last = Some(s.clone());
        }
        now = Some(s.clone());
        true
    })?;
    let Some(now) = now else {
        return Ok(Reply::error(
            404,
            &format!("{uri}: no run that ended has brought it yet"),
        ));
    };
    let links = Links {
        urls,
        uri: &uri,
        first: first.as_ref(),
        last: last.as_ref(),
        this: None,
        prev: None,
        next: None,
        timegate: true,
    };
    state(reader, &uri, &now, links, head)
}

/// One state: its bytes (200) or its deletion (404), with `Memento-Datetime` and `links`.
fn state(reader: &Reader, uri: &str, s: &Second, links: Links, head: bool) -> Result<Reply, Error> {
    let dated = |r: Reply| {
        r.header("memento-datetime", http_date(s.at))
            .header("link", links.header())
    };
    if s.deleted {
        return Ok(dated(Reply::error(
            404,
            &format!(
                "{uri} was deleted from the mirror at {} (the run that found it gone)",
                ts(s.at)
            ),
        )));
    }
    let Some((v, _)) = history::version(reader.catalog(), s.version)? else {
        return Err(Error::Damaged(format!(
            "{uri}: version {} is gone from the catalog",
            s.version
        )));
    };
    let length = v.length.unwrap_or(0).max(0) as u64;
    let mut reply = dated(Reply::new(200))
        .header(
            "content-type",
            v.media_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".into()),
        )
        .header("content-length", length.to_string())
        // The bytes are the source's: never sniffed, never run as this server's pages.
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", "sandbox")
        .header("cache-control", "public, max-age=31536000, immutable");
    if let Some(sha) = &v.sha256 {
        reply = reply.header("etag", format!("\"{sha}\""));
    }
    // Kept as served: the bytes are still in the coding they were served with.
    if let Some(coding) = &v.content_encoding {
        reply = reply.header("content-encoding", coding.clone());
    }
    if !head {
        let object = Object::open(reader, uri, &v)?;
        reply.body = Payload::Object {
            object: Box::new(object),
            length,
        };
    }
    Ok(reply)
}

/// A TimeMap page (RFC 7089 §5): the mementos of `uri` in `application/link-format` or JSON,
/// `page_size` to a page, the other pages linked as `prev` and `next`.
pub(crate) fn timemap(
    reader: &Reader,
    urls: &Urls,
    uri: &str,
    format: MapFormat,
    page: usize,
    page_size: usize,
) -> Result<Reply, Error> {
    let (id, uri) = match resource(reader, uri)? {
        Ok(found) => found,
        Err(reply) => return Ok(reply),
    };
    let skip = (page - 1).saturating_mul(page_size);
    let (mut count, mut first, mut last, mut listed) = (0usize, None, None, Vec::new());
    each_second(reader, id, |s| {
        if s.deleted {
            return true;
        }
        if count >= skip && listed.len() < page_size {
            listed.push(s.clone());
        }
        count += 1;
        first.get_or_insert_with(|| s.clone());
        last = Some(s.clone());
        true
    })?;
    if listed.is_empty() {
        return Ok(Reply::error(
            404,
            &match count {
                0 => format!("{uri}: the mirror holds no state of it with bytes"),
                n => format!(
                    "{uri}: its TimeMap has {} page(s) of {page_size} mementos ({n} in all)",
                    n.div_ceil(page_size)
                ),
            },
        ));
    }
    let pages = count.div_ceil(page_size);
    let prev = (page > 1).then(|| urls.timemap(format, page - 1, &uri));
    let next = (page < pages).then(|| urls.timemap(format, page + 1, &uri));
    let is = |a: &Option<Second>, s: &Second| a.as_ref().is_some_and(|a| a.at == s.at);
    Ok(match format {
        MapFormat::Link => {
            let (from, until) = (listed[0].at, listed[listed.len() - 1].at);
            let mut l = vec![
                format!("<{}>; rel=\"original\"", escaped(&uri)),
                format!("<{}>; rel=\"timegate\"", urls.timegate(&uri)),
                format!(
                    "<{}>; rel=\"self\"; type=\"application/link-format\"; from=\"{}\"; until=\"{}\"",
                    urls.timemap(format, page, &uri),
                    http_date(from),
                    http_date(until)
                ),
            ];
            for (rel, url) in [("prev", &prev), ("next", &next)] {
                if let Some(url) = url {
                    l.push(format!(
                        "<{url}>; rel=\"{rel}\"; type=\"application/link-format\""
                    ));
                }
            }
            for s in &listed {
                let rel = match (is(&first, s), is(&last, s)) {
                    (true, true) => "first last memento",
                    (true, false) => "first memento",
                    (false, true) => "last memento",
                    _ => "memento",
                };
                l.push(format!(
                    "<{}>; rel=\"{rel}\"; datetime=\"{}\"",
                    urls.memento(s.at, &uri),
                    http_date(s.at)
                ));
            }
            Reply::text(200, "application/link-format", l.join(",\n") + "\n")
        }
        MapFormat::Json => {
            let m = |s: &Second| {
                serde_json::json!({
                    "datetime": ts(s.at).to_string(),
                    "uri": urls.memento(s.at, &uri),
                })
            };
            let doc = serde_json::json!({
                "original_uri": uri,
                "timegate_uri": urls.timegate(&uri),
                "timemap_uri": {
                    "link_format": urls.timemap(MapFormat::Link, page, &uri),
                    "json_format": urls.timemap(MapFormat::Json, page, &uri),
                },
                "mementos": {
                    "first": first.as_ref().map(m),
                    "last": last.as_ref().map(m),
                    "list": listed.iter().map(m).collect::<Vec<_>>(),
                },
                "pages": { "page": page, "of": pages, "prev": prev, "next": next },
            });
            Reply::text(
                200,
                "application/json",
                serde_json::to_string_pretty(&doc).expect("serialisable") + "\n",
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_read_and_write() {
        let at = "2026-03-01T12:34:56Z"
            .parse::<Timestamp>()
            .unwrap()
            .as_second();
        assert_eq!(http_date(at), "Sun, 01 Mar 2026 12:34:56 GMT");
        assert_eq!(parse_http_date("Sun, 01 Mar 2026 12:34:56 GMT"), Some(at));
        // A wrong day name (the validator's own default) is not held against the date.
        assert_eq!(
            parse_http_date("Thu, 10 Oct 2009 12:00:00 GMT"),
            parse_http_date("Sat, 10 Oct 2009 12:00:00 GMT")
        );
        for bad in [
            "BROKEN_DATETIME",
            "2026-03-01T12:00:00Z",
            "Sun, 01 Mar 2026",
            "",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn links_name_each_memento_once_with_all_its_relations() {
        let urls = Urls { base: "http://h" };
        let s = |at| Second {
            at,
            version: at,
            deleted: false,
        };
        let (a, b) = (s(0), s(60));
        let links = Links {
            urls: &urls,
            uri: "https://x/a#s",
            first: Some(&a),
            last: Some(&b),
            this: Some(&b),
            prev: Some(&a),
            next: None,
            timegate: true,
        };
        assert_eq!(
            links.header(),
            "<https://x/a%23s>; rel=\"original\", <http://h/timegate/https://x/a%23s>; \
             rel=\"timegate\", <http://h/timemap/link/https://x/a%23s>; rel=\"timemap\"; \
             type=\"application/link-format\", <http://h/web/19700101000000/https://x/a%23s>; \
             rel=\"first prev memento\"; datetime=\"Thu, 01 Jan 1970 00:00:00 GMT\", \
             <http://h/web/19700101000100/https://x/a%23s>; rel=\"last memento\"; \
             datetime=\"Thu, 01 Jan 1970 00:01:00 GMT\""
        );
    }
}
