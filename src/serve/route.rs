//! Which resource a request names: the path (and query) of a request read into a [`Route`].
//! The URL forms are those of the wayback tools people know (`/web/TIMESTAMP/URL`,
//! `/timemap/link/URL`, `/timegate/URL`). A URL in a path is a key into the catalog, never a
//! path to a file: no request reaches an object except through the catalog.

/// What a request asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Route {
    /// `/`: the status page.
    Page,
    /// `/status.json`: what `status --json` prints.
    StatusJson,
    /// `/healthz`: 200 when `status` would exit 0, else 503.
    Healthz,
    /// `/metrics`: Prometheus' text format.
    Metrics,
    /// `/timegate/URL` (and `/web/URL`): the TimeGate of URL (RFC 7089 §4).
    TimeGate(String),
    /// `/timemap/link/URL`, `/timemap/json/URL`, a later page as `/timemap/link/N/URL`.
    TimeMap {
        format: MapFormat,
        page: usize,
        uri: String,
    },
    /// `/web/YYYYMMDDhhmmss/URL`: the memento of URL at that second (a shorter timestamp is
    /// padded as the wayback tools pad it: `2026` is 2026-01-01T00:00:00Z).
    Memento { at: jiff::Timestamp, uri: String },
    /// `/latest/URL`: the state the mirror holds now, standing in for the original resource
    /// (the source itself is out of the mirror's reach): it links its TimeGate and TimeMap.
    Latest(String),
    /// `/browse`: the resources under a prefix at a point (query: prefix, at, after).
    Browse,
    /// `/versions/URL`: every version of one URI.
    Versions(String),
    /// `/diff`: what changed between two points (query: from, to).
    Diff,
    /// `/.well-known/resourcesync`: the Source Description of the mirror as a source.
    SourceDescription,
    /// `/resourcesync/capabilitylist.xml`.
    CapabilityList,
    /// `/resourcesync/resourcelist.xml`: the list, or the index of its pages.
    ResourceList,
    /// `/resourcesync/resourcelist/RUN/N.xml`: page N of the state at run RUN.
    ResourcePage { run: i64, page: usize },
    /// `/resourcesync/changelist.xml`: the Change List Index.
    ChangeLists,
    /// `/resourcesync/changelist/open.xml`: the open Change List (since the last run).
    OpenChangeList,
    /// `/resourcesync/changelist/RUN/N.xml`: part N of what run RUN changed.
    ChangeList { run: i64, part: usize },
    /// `/feeds`: redirected to `/feeds/` (the index's links are relative).
    FeedsFolder,
    /// `/feeds/...`: the feeds of the changes the mirror applied (`access::feed`'s layout).
    Feeds(crate::access::feed::FeedPath),
}

/// A TimeMap's serialisation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum MapFormat {
    /// `application/link-format` (RFC 6690), as RFC 7089 §5 gives it.
    Link,
    /// JSON, as the Memento aggregators give it.
    Json,
}

/// Why a request names nothing this server serves (404), or names it badly (400).
#[derive(Debug, PartialEq)]
pub(crate) enum Refused {
    NotFound(String),
    BadRequest(String),
}

/// The route of a request: its path as received (not decoded) and its query.
pub(crate) fn route(path: &str, query: Option<&str>) -> Result<Route, Refused> {
    match path {
        "/" => return Ok(Route::Page),
        "/status.json" => return Ok(Route::StatusJson),
        "/healthz" => return Ok(Route::Healthz),
        "/metrics" => return Ok(Route::Metrics),
        "/browse" => return Ok(Route::Browse),
        "/diff" => return Ok(Route::Diff),
        "/.well-known/resourcesync" => return Ok(Route::SourceDescription),
        "/resourcesync/capabilitylist.xml" => return Ok(Route::CapabilityList),
        "/resourcesync/resourcelist.xml" => return Ok(Route::ResourceList),
        "/resourcesync/changelist.xml" => return Ok(Route::ChangeLists),
        "/resourcesync/changelist/open.xml" => return Ok(Route::OpenChangeList),
        "/feeds" => return Ok(Route::FeedsFolder),
        _ => {}
    }
    if let Some(rest) = path.strip_prefix("/feeds/") {
        return crate::access::feed::parse_path(rest)
            .map(Route::Feeds)
            .ok_or_else(|| {
                Refused::NotFound(format!(
                    "{path}: the feeds are /feeds/ (their index), /feeds/index.opml, \
                     /feeds/source/SLUG.atom, /feeds/collection/SLUG.json and their archives \
                     /feeds/KIND/SLUG/archive/N.atom"
                ))
            });
    }
    for (prefix, list) in [
        ("/resourcesync/resourcelist/", true),
        ("/resourcesync/changelist/", false),
    ] {
        if let Some(rest) = path.strip_prefix(prefix) {
            let numbers = rest
                .strip_suffix(".xml")
                .and_then(|r| r.split_once('/'))
                .and_then(|(run, n)| Some((run.parse::<i64>().ok()?, n.parse::<usize>().ok()?)))
                .filter(|(run, n)| *run >= 1 && *n >= 1);
            let Some((run, n)) = numbers else {
                return Err(Refused::NotFound(format!(
                    "{path}: a list of this source is {prefix}RUN/N.xml (both from 1)"
                )));
            };
            return Ok(match list {
                true => Route::ResourcePage { run, page: n },
                false => Route::ChangeList { run, part: n },
            });
        }
    }
    // The URL a path carries keeps its own query: `/timegate/https://h/p?q=1`. An empty one
    // (`...p?`, as some clients send) is none.
    let with_query = |rest: &str| match query {
        Some(q) if !q.is_empty() => format!("{rest}?{q}"),
        _ => rest.to_string(),
    };
    if let Some(rest) = path.strip_prefix("/timegate/") {
        return Ok(Route::TimeGate(target(&with_query(rest))?));
    }
    if let Some(rest) = path.strip_prefix("/versions/") {
        return Ok(Route::Versions(target(&with_query(rest))?));
    }
    if let Some(rest) = path.strip_prefix("/latest/") {
        return Ok(Route::Latest(target(&with_query(rest))?));
    }
    if let Some(rest) = path.strip_prefix("/timemap/") {
        let (format, rest) = match rest.split_once('/') {
            Some(("link", rest)) => (MapFormat::Link, rest),
            Some(("json", rest)) => (MapFormat::Json, rest),
            _ => {
                return Err(Refused::NotFound(
                    "a TimeMap is /timemap/link/URL or /timemap/json/URL".into(),
                ))
            }
        };
        let (page, rest) = match rest.split_once('/') {
            Some((n, after)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                let page = n.parse::<usize>().ok().filter(|p| *p >= 1).ok_or_else(|| {
                    Refused::BadRequest(format!("TimeMap page {n:?}: pages count from 1"))
                })?;
                (page, after)
            }
            _ => (1, rest),
        };
        return Ok(Route::TimeMap {
            format,
            page,
            uri: target(&with_query(rest))?,
        });
    }
    if let Some(rest) = path.strip_prefix("/web/") {
        let (first, after) = rest.split_once('/').unwrap_or((rest, ""));
        // A modifier after the timestamp (`id_`, `mp_`) asks for the bytes as they are: they
        // always are.
        let digits = first.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
        if !digits.is_empty() && digits.len() <= 14 && digits.bytes().all(|b| b.is_ascii_digit()) {
            let at = timestamp14(digits).ok_or_else(|| {
                Refused::BadRequest(format!(
                    "{first:?} is not a timestamp: write YYYYMMDDhhmmss (UTC), or a prefix of it"
                ))
            })?;
            return Ok(Route::Memento {
                at,
                uri: target(&with_query(after))?,
            });
        }
        return Ok(Route::TimeGate(target(&with_query(rest))?));
    }
    Err(Refused::NotFound(format!(
        "{path}: nothing here; the mirror's URLs are /web/TIMESTAMP/URL, /timegate/URL, \
         /timemap/link/URL, /timemap/json/URL, /latest/URL, /versions/URL, /browse, /diff, \
         /status.json, /healthz, /metrics, /.well-known/resourcesync, /feeds/"
    )))
}

/// The URL a path carries after its prefix. A proxy or client that collapsed `//` to `/`
/// (`https:/host/p`) and a URL sent percent-encoded whole (`https%3A%2F%2Fhost%2Fp`) are read
/// back; anything but an http or https URL is refused.
fn target(rest: &str) -> Result<String, Refused> {
    let lower = rest.get(..8).unwrap_or(rest).to_ascii_lowercase();
    let decoded = if lower.starts_with("http%3a") || lower.starts_with("https%3a") {
        percent_encoding::percent_decode_str(rest)
            .decode_utf8()
            .map(|s| s.into_owned())
            .map_err(|_| Refused::BadRequest(format!("{rest:?}: not UTF-8 once decoded")))?
    } else {
        rest.to_string()
    };
    for scheme in ["http:", "https:"] {
        let Some(after) = strip_prefix_ignore_case(&decoded, scheme) else {
            continue;
        };
        if after.starts_with("//") {
            return Ok(decoded);
        }
        if let Some(one) = after.strip_prefix('/') {
            return Ok(format!("{}//{one}", &decoded[..scheme.len()]));
        }
    }
    Err(Refused::NotFound(format!(
        "{rest:?}: after the prefix comes the URL of a resource the mirror holds (http:// or \
         https://)"
    )))
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// A wayback timestamp (1 to 14 digits, UTC) padded to a whole second: the missing month and
/// day are 01, the missing time 00:00:00.
pub(crate) fn timestamp14(digits: &str) -> Option<jiff::Timestamp> {
    const PAD: &str = "19700101000000";
    let full = format!("{digits}{}", &PAD[digits.len()..]);
    let dt = jiff::civil::DateTime::strptime("%Y%m%d%H%M%S", &full).ok()?;
    dt.to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp())
}

/// A second as a wayback timestamp: `20260301000000`.
pub(crate) fn wayback(t: jiff::Timestamp) -> String {
    t.strftime("%Y%m%d%H%M%S").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn wayback_forms_name_their_url() {
        let u = "https://example.org/a/b";
        assert_eq!(
            route("/timegate/https://example.org/a/b", None),
            Ok(Route::TimeGate(u.into()))
        );
        // An empty query is none; a query belongs to the URL.
        assert_eq!(
            route("/timegate/https://example.org/a/b", Some("")),
            Ok(Route::TimeGate(u.into()))
        );
        assert_eq!(
            route("/web/https://example.org/a/b", Some("x=1")),
            Ok(Route::TimeGate(format!("{u}?x=1")))
        );
        assert_eq!(
            route("/web/20260301000000/https://example.org/a/b", None),
            Ok(Route::Memento {
                at: at("2026-03-01T00:00:00Z"),
                uri: u.into()
            })
        );
        assert_eq!(
            route("/web/2026id_/https:/example.org/a/b", None),
            Ok(Route::Memento {
                at: at("2026-01-01T00:00:00Z"),
                uri: u.into()
            })
        );
        assert_eq!(
            route("/timemap/link/https%3A%2F%2Fexample.org%2Fa%2Fb", None),
            Ok(Route::TimeMap {
                format: MapFormat::Link,
                page: 1,
                uri: u.into()
            })
        );
        assert_eq!(
            route("/timemap/json/3/https://example.org/a/b", None),
            Ok(Route::TimeMap {
                format: MapFormat::Json,
                page: 3,
                uri: u.into()
            })
        );
        assert_eq!(
            route("/latest/http://example.org/", None),
            Ok(Route::Latest("http://example.org/".into()))
        );
    }

    #[test]
    fn anything_else_is_refused_with_the_forms_named() {
        for (path, bad_request) in [
            ("/etc/passwd", false),
            ("/web/../../etc/passwd", false),
            ("/timegate/file:///etc/passwd", false),
            ("/timegate/%2e%2e/%2e%2e/etc/passwd", false),
            ("/timemap/xml/https://example.org/", false),
            ("/timemap/link/0/https://example.org/", true),
            ("/web/20261399000000/https://example.org/", true),
        ] {
            match route(path, None) {
                Err(Refused::BadRequest(_)) if bad_request => {}
                Err(Refused::NotFound(m)) if !bad_request => assert!(!m.is_empty()),
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[test]
    fn timestamps_pad_as_the_wayback_tools_pad() {
        assert_eq!(timestamp14("2026"), Some(at("2026-01-01T00:00:00Z")));
        assert_eq!(timestamp14("20260302"), Some(at("2026-03-02T00:00:00Z")));
        assert_eq!(
            timestamp14("20260302123456"),
            Some(at("2026-03-02T12:34:56Z"))
        );
        assert_eq!(wayback(at("2026-03-02T12:34:56.9Z")), "20260302123456");
    }
}
