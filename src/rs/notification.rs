//! ResourceSync Change Notification 1.0.1 (push over W3C WebSub): where a source advertises a
//! notification channel. A channel is a WebSub topic and the hub that distributes it; it is
//! read from a Capability List entry of capability `changelist-notification` (its `loc` the
//! topic, its `rs:ln rel="hub"` the hub), from a document's own `rs:ln rel="hub"` (the topic is
//! its `rs:ln rel="self"`, else the document's URL), or, in `follow::discovery`, from HTTP `Link` headers (WebSub 1.0 §4). Pure: no network.

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
