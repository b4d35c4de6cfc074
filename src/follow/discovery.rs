//! Where a source's push channels are (WebSub 1.0 §4, ResourceSync Change Notification 1.0.1):
//! the source URL is fetched; its HTTP `Link` headers (`rel="hub"`, `rel="self"`) come first,
//! then what the document says (a document-level `rs:ln rel="hub"`, a Capability List entry of
//! capability `changelist-notification`). A Source Description's Capability Lists and a
//! Capability List's Change Lists are read too (one level each), and a channel whose entry
//! names no hub is looked for in its topic's `Link` headers.

use crate::net::small_request::{get_document, Discovered};
use crate::rs::document::{Capability, Root};
use crate::rs::notification::{self, Channel};
use crate::rs::sitemap::{self, ReadOptions};
use std::time::Duration;
use url::Url;

/// Discovery reads documents of at most this size.
const MAX_DOCUMENT: usize = 64 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(60);

/// The channels of the source at `source` (none: it offers no push), and what could not be
/// read on the way.
pub(crate) fn channels(source: &Url, agent: &str) -> Result<Vec<Channel>, String> {
    let mut found = Vec::new();
    let mut seen = std::collections::HashSet::new();
    walk(source, agent, 0, &mut seen, &mut found)?;
    // A channel without a hub: WebSub discovery on its topic (headers first).
    for c in found.iter_mut().filter(|c| c.hub.is_none()) {
        if let Ok(d) = get(&c.topic, agent) {
            let (hub, me) = from_link_headers(&d.links, &d.url);
            c.hub = hub;
            if let Some(me) = me {
                c.topic = me;
            }
        }
    }
    found.dedup_by(|a, b| a.topic == b.topic && a.hub == b.hub);
    Ok(found)
}

fn get(url: &Url, agent: &str) -> Result<Discovered, String> {
    let d = get_document(url, agent, TIMEOUT, MAX_DOCUMENT)?;
    if !(200..300).contains(&d.status) {
        return Err(format!("{url}: HTTP {}", d.status));
    }
    if !matches!(d.url.scheme(), "http" | "https") {
        return Err(format!("{url}: redirected to {}, not http(s)", d.url));
    }
    Ok(d)
}

fn walk(
    url: &Url,
    agent: &str,
    depth: usize,
    seen: &mut std::collections::HashSet<Url>,
    found: &mut Vec<Channel>,
) -> Result<(), String> {
    if depth > 2 || !seen.insert(url.clone()) {
        return Ok(());
    }
    let d = get(url, agent)?;
    // WebSub §4: the Link headers first; the body only when they name no hub.
    let (hub, me) = from_link_headers(&d.links, &d.url);
    if let Some(hub) = hub {
        found.push(Channel {
            topic: me.unwrap_or_else(|| d.url.clone()),
            hub: Some(hub),
            capability: "changelist-notification".into(),
        });
        return Ok(());
    }
    let opts = ReadOptions {
        max_bytes: MAX_DOCUMENT as u64,
        ..ReadOptions::default()
    };
    let mut reader =
        sitemap::open(d.body.as_slice(), &d.url, opts).map_err(|e| format!("{}: {e}", d.url))?;
    let header = reader.header().clone();
    if let Some(c) = notification::of_header(&header, &d.url) {
        found.push(c);
    }
    let mut next = Vec::new();
    while let Some(e) = reader.next_entry().map_err(|e| format!("{}: {e}", d.url))? {
        if let Some(c) = notification::of_entry(&e) {
            found.push(c);
            continue;
        }
        let down = header.root == Root::SitemapIndex
            || matches!(
                (header.capability(), &e.md.capability),
                (
                    Some(Capability::Description),
                    Some(Capability::CapabilityList)
                ) | (
                    Some(Capability::CapabilityList),
                    Some(Capability::ChangeList)
                )
            );
        if down {
            next.push(e.loc);
        }
    }
    for u in next {
        // A part that cannot be read is no channel; the source's Change Lists are still
        // followed by the catch-ups.
        if let Err(e) = walk(&u, agent, depth + 1, seen, found) {
            say!("rsmirror: follow: discovery: {e}");
        }
    }
    Ok(())
}

/// The `rel="hub"` and `rel="self"` targets of HTTP `Link` header values (RFC 8288, read by
/// [`crate::net::link`]), resolved against `base`. WebSub 1.0 §4: a subscriber uses the
/// headers before the body. The first hub and the first self win; a link with an `anchor` is
/// about another resource and does not count.
fn from_link_headers(values: &[String], base: &Url) -> (Option<Url>, Option<Url>) {
    let (mut hub, mut me) = (None, None);
    for link in crate::net::link::parse(values, base) {
        if link.anchored {
            continue;
        }
        for rel in &link.rels {
            if rel == "hub" && hub.is_none() {
                hub = Some(link.target.clone());
            } else if rel == "self" && me.is_none() {
                me = Some(link.target.clone());
            }
        }
    }
    (hub, me)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn link_headers_give_hub_and_self_resolved() {
        let base = Url::parse("http://s.example/topic").unwrap();
        let (hub, me) = from_link_headers(
            &headers(&[
                "</hub>; rel=\"hub\", <http://s.example/t>; rel=\"self\"",
                "<http://other/hub>; rel=hub",
            ]),
            &base,
        );
        assert_eq!(hub.unwrap().as_str(), "http://s.example/hub");
        assert_eq!(me.unwrap().as_str(), "http://s.example/t");
    }

    #[test]
    fn several_rels_and_commas_in_quotes() {
        let base = Url::parse("http://s.example/").unwrap();
        let (hub, me) = from_link_headers(
            &headers(&["<http://h/x>; title=\"a, b\"; rel=\"self hub\""]),
            &base,
        );
        assert_eq!(hub.unwrap().as_str(), "http://h/x");
        assert_eq!(me.unwrap().as_str(), "http://h/x");
    }

    #[test]
    fn no_link_no_hub() {
        let base = Url::parse("http://s.example/").unwrap();
        assert_eq!(
            from_link_headers(&headers(&["garbage"]), &base),
            (None, None)
        );
    }
}
