//! The HTTP `Link` header field (RFC 8288 §3): `<target>; rel="a b"; anchor=...`, several
//! links to a field value separated by commas, several field values to a response.
//!
//! Written here rather than taken from `parse_link_header` (0.4): that crate keys its answer by
//! relation type, so a second link of the same `rel` (two Capability Lists, ResourceSync 1.1
//! §8) is lost, and it does not split a `rel` holding several types.

use url::Url;

/// One link of a `Link` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    /// The target, resolved against the URL the response came from.
    pub(crate) target: Url,
    /// Relation types, lower-cased (RFC 8288 §2.1.1: compared case-insensitively).
    pub(crate) rels: Vec<String>,
    /// The `anchor` parameter: the link is about another resource than the response's.
    pub(crate) anchored: bool,
}

/// Every well-formed link in `values` (the field values as served), targets resolved against
/// `base`. A link that cannot be parsed (no `<...>`, an unresolvable target) is skipped; the
/// others in the field still count.
pub(crate) fn parse(values: &[String], base: &Url) -> Vec<Link> {
    let mut out = Vec::new();
    for value in values {
        let mut rest = value.as_str();
        loop {
            rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
            let Some(after) = rest.strip_prefix('<') else {
                // Not a link-value: skip to the next comma outside quotes.
                match next_comma(rest) {
                    Some(i) => {
                        rest = &rest[i..];
                        continue;
                    }
                    None => break,
                }
            };
            let Some(end) = after.find('>') else { break };
            let target = &after[..end];
            rest = &after[end + 1..];
            let mut rels = Vec::new();
            let mut anchored = false;
            // Parameters: `; name=value` or `; name="quoted"` up to the next comma.
            loop {
                rest = rest.trim_start();
                let Some(p) = rest.strip_prefix(';') else {
                    break;
                };
                let (param, after) = parameter(p);
                rest = after;
                if let Some((name, v)) = param {
                    match name.as_str() {
                        // RFC 8288 §3.3: only the first `rel` counts.
                        "rel" if rels.is_empty() => {
                            rels = v
                                .split_ascii_whitespace()
                                .map(|r| r.to_ascii_lowercase())
                                .collect();
                        }
                        "anchor" => anchored = true,
                        _ => {}
                    }
                }
            }
            if let Ok(target) = base.join(target.trim()) {
                out.push(Link {
                    target,
                    rels,
                    anchored,
                });
            }
            match next_comma(rest) {
                Some(i) => rest = &rest[i..],
                None => break,
            }
        }
    }
    out
}

/// The targets of links of relation type `rel` about the response itself (no `anchor`).
pub(crate) fn targets(values: &[String], base: &Url, rel: &str) -> Vec<Url> {
    parse(values, base)
        .into_iter()
        .filter(|l| !l.anchored && l.rels.iter().any(|r| r == rel))
        .map(|l| l.target)
        .collect()
}

/// One `name=value` parameter (after its `;`): the lower-cased name and the value with
/// quotes and escapes removed, and what follows it.
fn parameter(s: &str) -> (Option<(String, String)>, &str) {
    let s = s.trim_start();
    let name_end = s
        .find(|c: char| c == '=' || c == ';' || c == ',' || c.is_ascii_whitespace())
        .unwrap_or(s.len());
    let name = s[..name_end].to_ascii_lowercase();
    let mut rest = s[name_end..].trim_start();
    let Some(after_eq) = rest.strip_prefix('=') else {
        return ((!name.is_empty()).then(|| (name, String::new())), rest);
    };
    rest = after_eq.trim_start();
    let mut value = String::new();
    if let Some(quoted) = rest.strip_prefix('"') {
        let mut chars = quoted.char_indices();
        let mut end = quoted.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        value.push(e);
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        rest = &quoted[end..];
    } else {
        let end = rest.find([';', ',']).unwrap_or(rest.len());
        value = rest[..end].trim().to_string();
        rest = &rest[end..];
    }
    (Some((name, value)), rest)
}

/// The index of the next comma in `s` outside a quoted string, or None.
fn next_comma(s: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("http://example.com/dataset1/page.html").unwrap()
    }

    /// ResourceSync 1.1 §8's example, and the forms RFC 8288 allows around it.
    #[test]
    fn the_specification_example_and_its_variants() {
        let v = vec![
            r#"<http://example.com/dataset1/capabilitylist.xml>; rel="resourcesync""#.to_string(),
        ];
        assert_eq!(
            targets(&v, &base(), "resourcesync"),
            vec![Url::parse("http://example.com/dataset1/capabilitylist.xml").unwrap()]
        );
        let v = vec![
            r#"</a.xml>;rel=resourcesync, <b.xml>; title="x, y; z"; REL="Describedby ResourceSync""#
                .to_string(),
            r#"<c.xml>; rel="resourcesync"; anchor="http://other/", <d.xml>; rel="next""#.to_string(),
        ];
        let got: Vec<String> = targets(&v, &base(), "resourcesync")
            .iter()
            .map(|u| u.to_string())
            .collect();
        assert_eq!(
            got,
            vec![
                "http://example.com/a.xml",
                "http://example.com/dataset1/b.xml"
            ]
        );
        assert_eq!(
            targets(&v, &base(), "next")[0].as_str(),
            "http://example.com/dataset1/d.xml"
        );
    }

    #[test]
    fn malformed_links_are_skipped_and_the_rest_kept() {
        let v = vec![
            r#"junk; rel="resourcesync", <ok.xml>; rel="resourcesync", <unterminated; rel=x"#
                .to_string(),
        ];
        let got = targets(&v, &base(), "resourcesync");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_str(), "http://example.com/dataset1/ok.xml");
        assert!(parse(&[String::new()], &base()).is_empty());
        // The first rel counts, a second is ignored.
        let v = vec![r#"<x>; rel="next"; rel="resourcesync""#.to_string()];
        assert!(targets(&v, &base(), "resourcesync").is_empty());
    }
}
