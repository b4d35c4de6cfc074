//! A push channel a source advertises (ResourceSync Change Notification 1.0.1): a WebSub topic
//! and the hub that distributes it. Read by `rs::notification`, reported by `inspect`,
//! subscribed to by `follow`.

use serde::Serialize;
use url::Url;

/// A push channel a source advertises.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Channel {
    /// The WebSub topic (what a subscription names).
    pub topic: Url,
    /// The hub that distributes it; `None` when the source named none (nothing to subscribe
    /// to until its topic's `Link` headers name one).
    pub hub: Option<Url>,
    /// `changelist-notification` or `framework-notification`.
    pub capability: String,
}
