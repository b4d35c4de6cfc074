//! ResourceSync Change Notification 1.0.1 (push over W3C WebSub): where a source advertises a
//! notification channel. A channel is a WebSub topic and the hub that distributes it; it is
//! read from a Capability List entry of capability `changelist-notification` (its `loc` the
//! topic, its `rs:ln rel="hub"` the hub), from a document's own `rs:ln rel="hub"` (the topic is
//! its `rs:ln rel="self"`, else the document's URL), or from HTTP `Link` headers (WebSub 1.0
//! §4: `rel="hub"` and `rel="self"`, which come before the body). Pure: no network.

use crate::rs::document::{Capability, Entry, Header, Link};
use url::Url;

pub use crate::model::Channel;

/// Is `c` a notification channel's capability (`*-notification`)?
pub fn is_channel(c: &Capability) -> bool {
    matches!(c, Capability::Other(name) if name.ends_with("-notification"))
}

/// The channel a Capability List (or Source Description) entry advertises, if it is one.
pub fn of_entry(e: &Entry) -> Option<Channel> {
    let capability = e.md.capability.as_ref().filter(|c| is_channel(c))?;
    Some(Channel {
        topic: e.loc.clone(),
        hub: hub_of(&e.links),
        capability: capability.name().to_string(),
    })
}

/// The channel a document names for itself (`rs:ln rel="hub"` at document level): its topic is
/// its `rs:ln rel="self"`, else the URL it was read from.
pub fn of_header(h: &Header, url: &Url) -> Option<Channel> {
    let hub = hub_of(&h.links)?;
    let topic = h
        .links
        .iter()
        .find(|l| l.has_rel("self"))
        .map(|l| l.href.clone())
        .unwrap_or_else(|| url.clone());
    Some(Channel {
        topic,
        hub: Some(hub),
        capability: h
            .capability()
            .map(|c| c.name().to_string())
            .unwrap_or_default(),
    })
}

fn hub_of(links: &[Link]) -> Option<Url> {
    links
        .iter()
        .find(|l| l.has_rel("hub"))
        .map(|l| l.href.clone())
}

/// The `rel="hub"` and `rel="self"` targets of HTTP `Link` header values (RFC 8288), resolved
/// against `base`. WebSub 1.0 §4: a subscriber uses the headers before the body. Values that do
/// not parse are skipped; the first hub and the first self win.
pub fn from_link_headers<'a>(
    values: impl IntoIterator<Item = &'a str>,
    base: &Url,
) -> (Option<Url>, Option<Url>) {
    let (mut hub, mut me) = (None, None);
    for value in values {
        for (target, rels) in parse_links(value) {
            let Ok(url) = base.join(&target) else {
                continue;
            };
            for rel in rels.split_ascii_whitespace() {
                if rel.eq_ignore_ascii_case("hub") && hub.is_none() {
                    hub = Some(url.clone());
                } else if rel.eq_ignore_ascii_case("self") && me.is_none() {
                    me = Some(url.clone());
                }
            }
        }
    }
    (hub, me)
}

/// `<target>; rel="a b"; x=y, <target2>; rel=c` as (target, rel) pairs.
fn parse_links(value: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let target = rest[open + 1..open + close].trim().to_string();
        rest = &rest[open + close + 1..];
        // The parameters run to the next ',' outside quotes.
        let mut end = rest.len();
        let mut quoted = false;
        for (i, ch) in rest.char_indices() {
            match ch {
                '"' => quoted = !quoted,
                ',' if !quoted => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let params = &rest[..end];
        rest = &rest[end..];
        let rel = params.split(';').find_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("rel")
                .then(|| v.trim().trim_matches('"').to_string())
        });
        if let Some(rel) = rel {
            out.push((target, rel));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_headers_give_hub_and_self_resolved() {
        let base = Url::parse("http://s.example/topic").unwrap();
        let (hub, me) = from_link_headers(
            [
                "</hub>; rel=\"hub\", <http://s.example/t>; rel=\"self\"",
                "<http://other/hub>; rel=hub",
            ],
            &base,
        );
        assert_eq!(hub.unwrap().as_str(), "http://s.example/hub");
        assert_eq!(me.unwrap().as_str(), "http://s.example/t");
    }

    #[test]
    fn several_rels_and_commas_in_quotes() {
        let base = Url::parse("http://s.example/").unwrap();
        let (hub, me) =
            from_link_headers(["<http://h/x>; title=\"a, b\"; rel=\"self hub\""], &base);
        assert_eq!(hub.unwrap().as_str(), "http://h/x");
        assert_eq!(me.unwrap().as_str(), "http://h/x");
    }

    #[test]
    fn no_link_no_hub() {
        let base = Url::parse("http://s.example/").unwrap();
        assert_eq!(from_link_headers(["garbage"], &base), (None, None));
    }
}
