//! Where a URL goes in an exported tree: `HOST[:PORT]/PATH`, as `wget -x` lays out a site, by a
//! rule that never leaves DEST and loses nothing. The map file (`.rsmirror-export/map.tsv`)
//! lists every file with its URL, so the tree can always be read back to URLs; the rule:
//!
//! - Each path segment is percent-decoded when the result is a safe UTF-8 name with no `%` in
//!   it (`caf%C3%A9` -> `café`, `a%20b` -> `a b`); otherwise it is kept as published
//!   (`100%25`, `a%2Fb`). A name is safe when it is not empty, `.` or `..`, and holds no `/`,
//!   `\`, NUL or other control character. An empty segment (`a//b`) is written `%` (a name no
//!   URL segment can have).
//! - A URL ending in `/` is the folder's `index.html` (note `index`).
//! - A query or fragment is kept in the last name after `?` or `#` (notes `query`, `fragment`).
//! - A name longer than 255 bytes is cut to 200 and given `~` and 16 hex digits of the URL's
//!   SHA-256 (note `long`).
//! - A URL whose path is taken — a folder other URLs need (`/a` beside `/a/b`), a path an earlier
//!   URL in URI order already has (`/d/` beside `/d/index.html`), or the export's own
//!   `.rsmirror-export` — gets `~` and 12 hex digits of its URL's SHA-256 after its last name
//!   (note `clash`); folders keep their names.
//!
//! With `--strip URL_PREFIX`, a URL under the prefix is written at the rest of its path,
//! straight into DEST (`resync-sync`'s `uri=path` layout); others under their host.

use percent_encoding::percent_decode_str;
use sha2::{Digest, Sha256};
use url::Url;

/// The export's own folder in DEST: never a resource's name.
pub const OWN: &str = ".rsmirror-export";

/// Longest name most file systems take, in bytes.
const NAME_MAX: usize = 255;

/// A URL's place in the tree before clashes are settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Natural {
    /// Path components, each a safe name.
    pub parts: Vec<String>,
    /// Why the path is not just host and path: `index`, `query`, `fragment`, `long`, `escaped`.
    pub notes: Vec<&'static str>,
}

impl Natural {
    pub(crate) fn joined(&self) -> String {
        self.parts.join("/")
    }
}

fn safe(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control())
}

fn url_hash(url: &str, hex_digits: usize) -> String {
    let h = hex::encode(Sha256::digest(url.as_bytes()));
    h[..hex_digits].to_string()
}

/// The name of one segment, and whether it had to be escaped.
fn segment_name(seg: &str) -> (String, bool) {
    if seg.is_empty() {
        return ("%".into(), true);
    }
    if !seg.contains('%') && safe(seg) {
        // Nothing to decode (most segments).
        return (seg.to_string(), false);
    }
    if let Ok(decoded) = percent_decode_str(seg).decode_utf8() {
        if safe(&decoded) && !decoded.contains('%') {
            return (decoded.into_owned(), false);
        }
    }
    if safe(seg) {
        (seg.to_string(), false)
    } else {
        // Unreachable for a parsed URL (its segments are never `.`/`..` and hold no controls);
        // kept so no input can make an unsafe name.
        let escaped: String = seg
            .bytes()
            .map(|b| match b {
                b'/' | b'\\' | b'.' | 0..=0x1f | 0x7f => format!("%{b:02X}"),
                _ => (b as char).to_string(),
            })
            .collect();
        (escaped, true)
    }
}

/// A name cut to fit the file system, told apart by the URL's hash.
fn fit(name: String, url: &str, notes: &mut Vec<&'static str>) -> String {
    if name.len() <= NAME_MAX {
        return name;
    }
    let mut cut = 200;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    if !notes.contains(&"long") {
        notes.push("long");
    }
    format!("{}~{}", &name[..cut], url_hash(url, 16))
}

/// Where `uri` goes, before clashes: `None` when it is not a URL at all (the catalog holds
/// none such).
pub(crate) fn natural(uri: &str, strip: Option<&str>, no_percent: bool) -> Option<Natural> {
    Namer::default().natural(uri, strip, no_percent)
}

/// What [`natural`] takes from a parsed URL.
struct Pieces<'a> {
    /// `host[:port]`; None for a URL without a host.
    host: Option<std::borrow::Cow<'a, str>>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

/// [`natural`] for a walk of many URIs: most share their scheme and authority with the one
/// before (URI order), and most are already in the form the URL parser gives. Such a URI is
/// split by hand after the authority the last full parse saw; any other goes through the
/// parser (its host handling was most of an export's time in paths). Same results, always
/// (tested against the parser on odd URLs).
#[derive(Default)]
pub struct Namer {
    /// `scheme://authority` exactly as the last fully parsed URI spelt it and the parser
    /// serialises it, and its `host[:port]`.
    authority: String,
    host: String,
}

impl Namer {
    pub(crate) fn natural(
        &mut self,
        uri: &str,
        strip: Option<&str>,
        no_percent: bool,
    ) -> Option<Natural> {
        if !self.authority.is_empty() {
            if let Some(rest) = uri.strip_prefix(self.authority.as_str()) {
                if rest.starts_with('/') && is_parsed_form(rest) {
                    let (before_hash, fragment) = match rest.split_once('#') {
                        Some((b, f)) => (b, Some(f)),
                        None => (rest, None),
                    };
                    let (path, query) = match before_hash.split_once('?') {
                        Some((p, q)) => (p, Some(q)),
                        None => (before_hash, None),
                    };
                    let pieces = Pieces {
                        host: Some(self.host.as_str().into()),
                        path,
                        query,
                        fragment,
                    };
                    return build(uri, pieces, strip, no_percent);
                }
            }
        }
        let url = Url::parse(uri).ok()?;
        let host = url.host_str().map(|host| match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        });
        let before_path = &url[..url::Position::BeforePath];
        if let (Some(host), true) = (
            &host,
            matches!(url.scheme(), "http" | "https") && uri.starts_with(before_path),
        ) {
            self.authority = before_path.to_string();
            self.host = host.clone();
        }
        let pieces = Pieces {
            host: host.map(Into::into),
            path: url.path(),
            query: url.query(),
            fragment: url.fragment(),
        };
        build(uri, pieces, strip, no_percent)
    }
}

/// The part of an http(s) URL after its authority is already as the URL parser writes it:
/// only characters it leaves alone (no space, quote, `<`, `>`, backtick, braces, `|`, `\`,
/// `^`, brackets, control or non-ASCII character, all of which it escapes or rejects), every
/// `%` starting an escape, at most one `#`, and no `.` or `..` segment in the path (which it
/// removes), however spelt.
fn is_parsed_form(rest: &str) -> bool {
    let b = rest.as_bytes();
    let mut hashes = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => {}
            b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'(' | b')' | b'*' | b'+' | b','
            | b';' | b'=' | b':' | b'@' | b'/' | b'?' => {}
            b'#' => hashes += 1,
            b'%' => {
                let hex = |j: usize| b.get(j).is_some_and(|c| c.is_ascii_hexdigit());
                if !(hex(i + 1) && hex(i + 2)) {
                    return false;
                }
                i += 2;
            }
            _ => return false,
        }
        i += 1;
    }
    let path = rest.split(['?', '#']).next().unwrap_or("");
    hashes <= 1
        && path.split('/').all(|seg| {
            // Only short segments can be dot segments: no lower-cased copy of every one.
            seg.len() > 6
                || ![".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"]
                    .iter()
                    .any(|dot| seg.eq_ignore_ascii_case(dot))
        })
}

fn build(uri: &str, url: Pieces<'_>, strip: Option<&str>, no_percent: bool) -> Option<Natural> {
    let mut notes = Vec::new();
    let mut parts = Vec::new();
    let path = match strip.and_then(|p| uri.strip_prefix(p).map(|rest| (p, rest))) {
        Some((prefix, rest)) => {
            // The rest of the path after the prefix (its query and fragment come from the URL).
            let rest = rest.split(['?', '#']).next().unwrap_or("");
            let rest = if prefix.ends_with('/') {
                rest.to_string()
            } else {
                rest.trim_start_matches('/').to_string()
            };
            std::borrow::Cow::Owned(format!("/{rest}"))
        }
        None => {
            let (name, escaped) = segment_name(url.host.as_deref()?);
            if escaped {
                notes.push("escaped");
            }
            parts.push(fit(name, uri, &mut notes));
            std::borrow::Cow::Borrowed(url.path)
        }
    };
    let path = path.strip_prefix('/').unwrap_or(&path);
    let last_index = path.bytes().filter(|&b| b == b'/').count();
    parts.reserve_exact(last_index + 1);
    for (i, seg) in path.split('/').enumerate() {
        let mut name = if i == last_index && seg.is_empty() {
            notes.push("index");
            "index.html".to_string()
        } else {
            let (name, escaped) = segment_name(seg);
            if escaped && !notes.contains(&"escaped") {
                notes.push("escaped");
            }
            name
        };
        if i == last_index {
            if let Some(q) = url.query {
                notes.push("query");
                name = format!("{name}?{q}");
            }
            if let Some(f) = url.fragment {
                notes.push("fragment");
                name = format!("{name}#{f}");
            }
            // `?q` and `#f` are kept as published: never a control, `/` or `\` in a parsed
            // URL, but make sure.
            if !safe(&name) {
                name = name.replace(['/', '\\'], "%2F");
                name.retain(|c| !c.is_control());
            }
        }
        parts.push(fit(name, uri, &mut notes));
    }
    if no_percent && parts.iter().any(|p| p.contains('%')) {
        for p in &mut parts {
            *p = p.replace('%', "\u{FF05}");
        }
        notes.push("percent");
    }
    Some(Natural { parts, notes })
}

/// The path of a URL whose natural path is taken: its last name with `~` and 12 hex digits of
/// the URL's SHA-256.
pub(crate) fn moved_aside(n: &Natural, uri: &str) -> Natural {
    let mut parts = n.parts.clone();
    let mut notes = n.notes.clone();
    let last = parts.pop().unwrap_or_default();
    let mut cut = last.len().min(NAME_MAX - 13);
    while !last.is_char_boundary(cut) {
        cut -= 1;
    }
    parts.push(format!("{}~{}", &last[..cut], url_hash(uri, 12)));
    notes.push("clash");
    Natural { parts, notes }
}

/// A 64-bit key of a path, for the sets that find clashes in bounded memory. Keys live only in
/// memory for one export, so any 64-bit hash does: SipHash with fixed keys, a tenth of
/// SHA-256's cost. Two paths sharing a key (odds of 3 in 10^8 for 10^6 paths, as for any 64
/// bits) only move one aside as a clash: nothing is lost, and the map says so.
pub(crate) fn key(path: &str) -> u64 {
    use std::hash::BuildHasher;
    std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(uri: &str) -> (String, Vec<&'static str>) {
        let n = natural(uri, None, false).unwrap();
        (n.joined(), n.notes)
    }

    #[test]
    fn a_namer_names_every_url_as_the_parser_does() {
        // Random paths of odd pieces under three authorities, each named by a Namer that has
        // just seen a URL of the same authority (its quick split) and by the parser alone.
        let pieces = [
            "a",
            "b",
            "/",
            "/",
            ".",
            "..",
            "%2e",
            "%2E",
            "%",
            "%4",
            "%41",
            "%zz",
            "?",
            "#",
            "&",
            "=",
            "'",
            "\"",
            "<",
            ">",
            "`",
            "{",
            "}",
            "|",
            "\\",
            "^",
            "[",
            "]",
            " ",
            "é",
            "~",
            "!",
            "$",
            "(",
            ")",
            "*",
            "+",
            ",",
            ";",
            ":",
            "@",
            "\t",
            "%2F",
            "index.html",
            "",
            ".rsmirror-export",
            "%C3%A9",
            "%00",
        ];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: usize| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
        };
        let mut quick = 0;
        for base in ["http://127.0.0.1:9", "https://ex.org", "http://[::1]:8080"] {
            for _ in 0..20_000 {
                let mut uri = format!("{base}/");
                for _ in 0..1 + next(8) {
                    uri.push_str(pieces[next(pieces.len())]);
                }
                let strip = format!("{base}/a");
                for (strip, no_percent) in [(None, false), (Some(strip.as_str()), true)] {
                    let mut namer = Namer::default();
                    namer.natural(&format!("{base}/x"), None, false);
                    if uri.starts_with(&namer.authority)
                        && is_parsed_form(&uri[namer.authority.len()..])
                    {
                        quick += 1;
                    }
                    assert_eq!(
                        namer.natural(&uri, strip, no_percent),
                        natural(&uri, strip, no_percent),
                        "{uri}"
                    );
                }
            }
        }
        // The quick split was taken often enough to be tested.
        assert!(quick > 10_000, "{quick}");
    }

    #[test]
    fn urls_become_host_and_path() {
        assert_eq!(
            p("https://ex.org/a/b.txt"),
            ("ex.org/a/b.txt".into(), vec![])
        );
        assert_eq!(
            p("http://ex.org:8080/a/"),
            ("ex.org:8080/a/index.html".into(), vec!["index"])
        );
        assert_eq!(
            p("http://ex.org/"),
            ("ex.org/index.html".into(), vec!["index"])
        );
        assert_eq!(
            p("http://ex.org/caf%C3%A9%20au%20lait"),
            ("ex.org/café au lait".into(), vec![])
        );
        assert_eq!(p("http://ex.org/100%25"), ("ex.org/100%25".into(), vec![]));
        assert_eq!(p("http://ex.org/a%2Fb"), ("ex.org/a%2Fb".into(), vec![]));
        assert_eq!(p("http://ex.org/a%00b"), ("ex.org/a%00b".into(), vec![]));
        assert_eq!(
            p("http://ex.org/q?x=1&y=%2F"),
            ("ex.org/q?x=1&y=%2F".into(), vec!["query"])
        );
        assert_eq!(
            p("http://ex.org/p#scp-section=blog"),
            ("ex.org/p#scp-section=blog".into(), vec!["fragment"])
        );
        assert_eq!(
            p("http://ex.org/a//b"),
            ("ex.org/a/%/b".into(), vec!["escaped"])
        );
    }

    #[test]
    fn no_url_leaves_the_tree() {
        for uri in [
            "http://ex.org/../../etc/passwd",
            "http://ex.org/%2e%2e/%2e%2e/etc",
            "http://ex.org/a/%2E%2E%2F..%2Fx",
            "http://ex.org/..%5C..%5Cwin",
            "http://ex.org/%00",
            "http://ex.org/a\\..\\b",
        ] {
            let n = natural(uri, None, false).unwrap();
            for part in &n.parts {
                assert!(safe(part), "{uri}: {part:?}");
            }
            assert_eq!(n.parts[0], "ex.org", "{uri}");
        }
    }

    #[test]
    fn long_names_are_cut_and_told_apart() {
        let a = format!("http://ex.org/{}a", "n".repeat(300));
        let b = format!("http://ex.org/{}b", "n".repeat(300));
        let (pa, notes) = p(&a);
        let (pb, _) = p(&b);
        assert_ne!(pa, pb);
        assert_eq!(notes, vec!["long"]);
        assert!(pa.split('/').all(|s| s.len() <= NAME_MAX));
    }

    #[test]
    fn a_bag_has_no_percent_in_its_names() {
        let n = natural("http://ex.org/100%25/a//b", None, true).unwrap();
        assert_eq!(n.joined(), "ex.org/100\u{FF05}25/a/\u{FF05}/b");
        assert_eq!(n.notes, vec!["escaped", "percent"]);
    }

    #[test]
    fn strip_writes_the_rest_into_dest() {
        let n = natural("http://ex.org/r/a/b?x", Some("http://ex.org/r/"), false).unwrap();
        assert_eq!(n.joined(), "a/b?x");
        let n = natural("http://ex.org/r/a", Some("http://ex.org/r"), false).unwrap();
        assert_eq!(n.joined(), "a");
        let n = natural("http://ex.org/r/", Some("http://ex.org/r/"), false).unwrap();
        assert_eq!(n.joined(), "index.html");
        let n = natural("http://other.org/a", Some("http://ex.org/r/"), false).unwrap();
        assert_eq!(n.joined(), "other.org/a");
        let moved = moved_aside(&n, "http://other.org/a");
        assert!(moved.joined().starts_with("other.org/a~"));
        assert_eq!(moved.notes, vec!["clash"]);
    }
}
