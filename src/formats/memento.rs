//! Memento (RFC 7089) as a source of earlier versions: a TimeMap in link format (RFC 7089
//! §5.1.1, RFC 6690), the `Link` header of a TimeGate (RFC 8288), and the raw form of a
//! memento URI. Reads bytes and text only; the engine fetches.
//!
//! A TimeMap is a list of links, `<URI>; rel="memento"; datetime="Wed, 08 Aug 2012 08:15:00
//! GMT", <URI>; ...`: one per memento, with the original, the TimeGate and the TimeMap itself.
//! (The `parse_link_header` crate keys what it reads by rel, and a TimeMap has one `memento`
//! per version, so this reads the list itself.)

use jiff::Timestamp;
use url::Url;

/// One link of a `Link` header or a link-format document.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkValue {
    pub target: Url,
    /// The rels, lower-cased, as the `rel` parameter lists them (space separated).
    pub rels: Vec<String>,
    /// `datetime` (a memento's, RFC 7089 §2.2.1), when given and readable.
    pub datetime: Option<Timestamp>,
}

impl LinkValue {
    pub fn has_rel(&self, rel: &str) -> bool {
        self.rels.iter().any(|r| r == rel)
    }
}

/// One memento of a TimeMap.
#[derive(Debug, Clone, PartialEq)]
pub struct Memento {
    pub url: Url,
    pub datetime: Timestamp,
}

/// A TimeMap's mementos, oldest first, and what it said that was unusable.
#[derive(Debug, Default)]
pub struct TimeMap {
    pub mementos: Vec<Memento>,
    /// Other TimeMaps it names (`rel="timemap"`: the pages of a paged TimeMap, RFC 7089
    /// §4.3): followed by the caller, a bounded number of them.
    pub more: Vec<Url>,
    pub warnings: Vec<String>,
}

/// The most links one header or TimeMap is read for (a TimeMap of a busy page on the Internet
/// Archive has hundreds of thousands; a mirror's run asks about one resource).
const MAX_LINKS: usize = 100_000;

/// Read the links of `text` (a `Link` header value, or a link-format document), relative
/// targets against `base`. A link whose target is not a URL is left out with a warning.
pub fn links(text: &str, base: &Url, warnings: &mut Vec<String>) -> Vec<LinkValue> {
    let mut out = Vec::new();
    let mut rest = text;
    while out.len() < MAX_LINKS {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if rest.is_empty() {
            break;
        }
        let Some(after_lt) = rest.strip_prefix('<') else {
            warnings.push(format!(
                "link list: expected '<' at {:?}; the rest is ignored",
                head(rest)
            ));
            break;
        };
        let Some(end) = after_lt.find('>') else {
            warnings.push("link list: a '<' without its '>'; the rest is ignored".into());
            break;
        };
        let target = &after_lt[..end];
        rest = &after_lt[end + 1..];
        let mut rels = Vec::new();
        let mut datetime = None;
        let mut bad_datetime = None;
        // Parameters: `; name=value` or `; name="quoted, with commas"`, up to the next ','.
        loop {
            rest = rest.trim_start();
            let Some(after) = rest.strip_prefix(';') else {
                break;
            };
            rest = after.trim_start();
            let name_end = rest.find(['=', ';', ',']).unwrap_or(rest.len());
            let name = rest[..name_end].trim().to_ascii_lowercase();
            rest = &rest[name_end..];
            let mut value = String::new();
            if let Some(after) = rest.strip_prefix('=') {
                rest = after.trim_start();
                if let Some(q) = rest.strip_prefix('"') {
                    let mut chars = q.char_indices();
                    let mut end = q.len();
                    while let Some((i, c)) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some((_, c)) = chars.next() {
                                    value.push(c);
                                }
                            }
                            '"' => {
                                end = i + 1;
                                break;
                            }
                            c => value.push(c),
                        }
                    }
                    rest = &q[end.min(q.len())..];
                } else {
                    let end = rest.find([';', ',']).unwrap_or(rest.len());
                    value = rest[..end].trim().to_string();
                    rest = &rest[end..];
                }
            }
            match name.as_str() {
                "rel" if rels.is_empty() => {
                    rels = value
                        .split_ascii_whitespace()
                        .map(str::to_ascii_lowercase)
                        .collect()
                }
                "datetime" => match http_date(&value) {
                    Some(t) => datetime = Some(t),
                    None => bad_datetime = Some(value),
                },
                _ => {}
            }
        }
        let url = match base.join(target.trim()) {
            Ok(u) => u,
            Err(e) => {
                warnings.push(format!("link <{target}>: not a URL ({e}); ignored"));
                continue;
            }
        };
        if let Some(v) = bad_datetime {
            warnings.push(format!(
                "link <{url}>: datetime {v:?} is not an HTTP date (RFC 7089 §2.1.1); its time is unknown"
            ));
        }
        out.push(LinkValue {
            target: url,
            rels,
            datetime,
        });
    }
    if out.len() == MAX_LINKS {
        warnings.push(format!(
            "link list: links past the first {MAX_LINKS} ignored"
        ));
    }
    out
}

/// A TimeMap in link format (RFC 7089 §5.1.1): its mementos, oldest first. Errors when the
/// bytes are not text or name no memento and no original (it is then no TimeMap).
pub fn read_timemap(bytes: &[u8], url: &Url) -> Result<TimeMap, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("{url}: a TimeMap must be UTF-8 text (RFC 6690): {e}"))?;
    let mut map = TimeMap::default();
    let all = links(text, url, &mut map.warnings);
    if !all.is_empty()
        && !all
            .iter()
            .any(|l| l.has_rel("original") || l.has_rel("memento"))
    {
        return Err(format!(
            "{url}: not a TimeMap: none of its {} links is rel=\"original\" or rel=\"memento\" (RFC 7089 §5.1.1)",
            all.len()
        ));
    }
    if all.is_empty() && !text.trim().is_empty() {
        return Err(format!(
            "{url}: not a TimeMap in link format (RFC 7089 §5.1.1): {:?}",
            head(text.trim_start())
        ));
    }
    for l in all {
        if l.has_rel("memento") {
            match l.datetime {
                Some(datetime) => map.mementos.push(Memento {
                    url: l.target,
                    datetime,
                }),
                None => map.warnings.push(format!(
                    "{url}: memento <{}> has no datetime (RFC 7089 §5.1.1 requires one); ignored",
                    l.target
                )),
            }
        } else if l.has_rel("timemap") && l.target != *url && !l.has_rel("self") {
            map.more.push(l.target);
        }
    }
    map.mementos.sort_by_key(|m| m.datetime);
    map.mementos.dedup_by(|a, b| a.url == b.url);
    Ok(map)
}

/// The TimeMap a TimeGate's (or a memento's) `Link` header names (RFC 7089 §2.2.1).
pub fn timemap_of(link_header: &str, base: &Url) -> Option<Url> {
    let mut ignored = Vec::new();
    links(link_header, base, &mut ignored)
        .into_iter()
        .find(|l| l.has_rel("timemap"))
        .map(|l| l.target)
}

/// The raw form of a memento URI of a Wayback-style archive (pywb, OpenWayback, the Internet
/// Archive): `.../20120808081500/URI` or `.../20120808081500mp_/URI` asks for the capture
/// rewritten for replay (a banner, rewritten links); `20120808081500id_` for its bytes as
/// captured. `None` when the URI has no such 14-digit timestamp segment followed by `original`.
pub fn raw(memento: &Url, original: &Url) -> Option<Url> {
    let s = memento.as_str();
    let plain = original.as_str();
    let without_scheme = plain.split_once("://").map(|(_, r)| r).unwrap_or(plain);
    let mut from = 0;
    while let Some(i) = s[from..].find('/') {
        let seg_start = from + i + 1;
        let seg_end = s[seg_start..]
            .find('/')
            .map(|j| seg_start + j)
            .unwrap_or(s.len());
        let seg = &s[seg_start..seg_end];
        let digits = seg.bytes().take_while(u8::is_ascii_digit).count();
        let modifier = &seg[digits..];
        let wayback = digits == 14
            && (modifier.is_empty()
                || (modifier.ends_with('_')
                    && modifier.len() <= 4
                    && modifier[..modifier.len() - 1]
                        .bytes()
                        .all(|b| b.is_ascii_lowercase())));
        if wayback && seg_end < s.len() {
            let rest = &s[seg_end + 1..];
            if rest == plain || rest == without_scheme || rest.starts_with(plain) {
                if modifier == "id_" {
                    return None;
                }
                let raw = format!("{}{}id_/{}", &s[..seg_start], &seg[..14], rest);
                return Url::parse(&raw).ok();
            }
        }
        from = seg_start;
        if seg_start >= s.len() {
            break;
        }
    }
    None
}

/// An HTTP date (RFC 7231 IMF-fixdate, `Wed, 08 Aug 2012 08:15:00 GMT`), as Memento gives
/// every datetime.
pub fn http_date(s: &str) -> Option<Timestamp> {
    jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(s.trim())
        .ok()
}

/// `t` as an HTTP date (for `Accept-Datetime`).
pub fn http_date_of(t: Timestamp) -> String {
    jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&t)
        .unwrap_or_else(|_| t.to_string())
}

fn head(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// RFC 7089 §5.1.1's example TimeMap, as published (line breaks, a `from`/`until`).
    const RFC_7089_TIMEMAP: &str = r#"<http://a.example.org>;rel="original",
<http://arxiv.example.net/timemap/http://a.example.org>
  ; rel="self";type="application/link-format"
  ; from="Tue, 20 Jun 2000 18:02:59 GMT"
  ; until="Wed, 09 Apr 2008 20:30:51 GMT",
<http://arxiv.example.net/timegate/http://a.example.org>
  ; rel="timegate",
<http://arxiv.example.net/web/20000620180259/http://a.example.org>
  ; rel="first memento";datetime="Tue, 20 Jun 2000 18:02:59 GMT"
  ; license="http://creativecommons.org/publicdomain/zero/1.0/",
<http://arxiv.example.net/web/20091027204954/http://a.example.org>
   ; rel="last memento";datetime="Tue, 27 Oct 2009 20:49:54 GMT"
   ; license="http://creativecommons.org/publicdomain/zero/1.0/",
<http://arxiv.example.net/web/20000621011731/http://a.example.org>
  ; rel="memento";datetime="Wed, 21 Jun 2000 01:17:31 GMT"
  ; license="http://creativecommons.org/publicdomain/zero/1.0/",
<http://arxiv.example.net/web/20000621044156/http://a.example.org>
  ; rel="memento";datetime="Wed, 21 Jun 2000 04:41:56 GMT"
  ; license="http://creativecommons.org/publicdomain/zero/1.0/"
"#;

    #[test]
    fn the_rfc_7089_timemap_reads_as_four_mementos_oldest_first() {
        let url = u("http://arxiv.example.net/timemap/http://a.example.org");
        let map = read_timemap(RFC_7089_TIMEMAP.as_bytes(), &url).unwrap();
        let got: Vec<String> = map
            .mementos
            .iter()
            .map(|m| m.datetime.to_string())
            .collect();
        assert_eq!(
            got,
            [
                "2000-06-20T18:02:59Z",
                "2000-06-21T01:17:31Z",
                "2000-06-21T04:41:56Z",
                "2009-10-27T20:49:54Z"
            ]
        );
        assert_eq!(
            map.mementos[0].url.as_str(),
            "http://arxiv.example.net/web/20000620180259/http://a.example.org"
        );
        assert!(map.warnings.is_empty(), "{:?}", map.warnings);
        assert!(map.more.is_empty());
    }

    #[test]
    fn a_quoted_comma_and_a_memento_without_datetime() {
        let base = u("http://x.example/tm");
        let text = r#"<http://x.example/o>; rel="original"; title="a, b", <m1>; rel="memento"; datetime="Wed, 08 Aug 2012 08:15:00 GMT", <m2>; rel=memento, <m3>; rel="memento"; datetime="yesterday""#;
        let map = read_timemap(text.as_bytes(), &base).unwrap();
        assert_eq!(map.mementos.len(), 1);
        assert_eq!(map.mementos[0].url.as_str(), "http://x.example/m1");
        assert_eq!(map.mementos[0].datetime.to_string(), "2012-08-08T08:15:00Z");
        assert_eq!(map.warnings.len(), 3, "{:?}", map.warnings);
    }

    #[test]
    fn html_or_an_unrelated_list_is_no_timemap() {
        let base = u("http://x.example/tm");
        let e = read_timemap(b"<!DOCTYPE html><html>", &base).unwrap_err();
        assert!(e.contains("not a TimeMap"), "{e}");
        let e = read_timemap(br#"<http://x.example/a>; rel="next""#, &base).unwrap_err();
        assert!(e.contains("rel=\"original\""), "{e}");
        assert!(read_timemap(b"", &base).unwrap().mementos.is_empty());
    }

    #[test]
    fn a_timegate_header_names_its_timemap() {
        let base = u("http://127.0.0.1:8080/c1/http://example.com/res1");
        let h = r#"<http://example.com/res1>; rel="original", <http://127.0.0.1:8080/c1/http://example.com/res1>; rel="timegate", <http://127.0.0.1:8080/c1/timemap/link/http://example.com/res1>; rel="timemap"; type="application/link-format""#;
        assert_eq!(
            timemap_of(h, &base).unwrap().as_str(),
            "http://127.0.0.1:8080/c1/timemap/link/http://example.com/res1"
        );
        assert_eq!(timemap_of(r#"<a>; rel="original""#, &base), None);
    }

    #[test]
    fn raw_forms_of_wayback_memento_uris() {
        let o = u("http://example.com/res1");
        let r = |m: &str| raw(&u(m), &o).map(|u| u.to_string());
        assert_eq!(
            r("http://127.0.0.1:1/c1/20120808081500mp_/http://example.com/res1").as_deref(),
            Some("http://127.0.0.1:1/c1/20120808081500id_/http://example.com/res1")
        );
        assert_eq!(
            r("https://web.archive.org/web/20120808081500/http://example.com/res1").as_deref(),
            Some("https://web.archive.org/web/20120808081500id_/http://example.com/res1")
        );
        // Already raw, another resource, no timestamp, a 2012 draft's own version URI.
        assert_eq!(
            r("http://a/c1/20120808081500id_/http://example.com/res1"),
            None
        );
        assert_eq!(
            r("http://a/c1/20120808081500/http://example.com/other"),
            None
        );
        assert_eq!(r("http://example.com/20120808081500/res1"), None);
    }

    #[test]
    fn http_dates_both_ways() {
        let t = http_date("Wed, 08 Aug 2012 08:15:00 GMT").unwrap();
        assert_eq!(t.to_string(), "2012-08-08T08:15:00Z");
        assert_eq!(http_date_of(t), "Wed, 08 Aug 2012 08:15:00 GMT");
        assert_eq!(http_date("2012-08-08"), None);
    }
}
