//! The callbacks hubs reach (`/websub/<random>`, one per subscription), answered by `serve`'s
//! HTTP server (`serve::http::Site`): a GET is a hub's verification of intent (WebSub §5.3,
//! answered only for a (topic, mode) we asked for, else 404); a POST is a content distribution
//! (§7): refused beyond `--max-body` (413), logged and ignored without a valid
//! `X-Hub-Signature` (still 202, as §7 allows, so a forger learns nothing), else read as the
//! Change List it carries and handed to the follower. A path no subscription has is 404; one
//! whose subscription ended is 410 (Gone: a hub stops delivering).

use crate::follow::{websub, Follower};
use crate::rs::sitemap::{self, ReadOptions};
use crate::serve::http::{body_of, Body, Site};
use crate::serve::reply::Reply;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) struct Callbacks {
    pub follower: Arc<Follower>,
}

impl Site for Callbacks {
    fn respond(
        self: Arc<Self>,
        peer: SocketAddr,
        req: Request<Incoming>,
    ) -> Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>> {
        Box::pin(async move {
            let method = req.method().clone();
            let target = req.uri().path().to_string();
            let reply = self.answer(req).await;
            if !self.follower.options.quiet {
                say!(
                    "rsmirror: follow: {peer} \"{method} {}\" {}",
                    // The path is the secret of a subscription: never logged whole.
                    target.get(..16).unwrap_or(&target).escape_debug(),
                    reply.status
                );
            }
            body_of(reply, false)
        })
    }
}

impl Callbacks {
    async fn answer(&self, req: Request<Incoming>) -> Reply {
        let f = &self.follower;
        let path = req.uri().path().to_string();
        let state = f
            .subscriptions
            .lock()
            .expect("never poisoned")
            .get(&path)
            .map(|h| h.row.state.clone());
        let Some(state) = state else {
            return Reply::error(404, "no subscription here");
        };
        match *req.method() {
            Method::GET => match websub::verification(req.uri().query()) {
                Ok(v) => {
                    let f = f.clone();
                    let answer = tokio::task::spawn_blocking(move || f.verified(&path, v)).await;
                    match answer {
                        Ok(Some(challenge)) => Reply {
                            status: 200,
                            headers: vec![("content-type", "text/plain".into())],
                            body: crate::serve::reply::Payload::Bytes(challenge.into_bytes()),
                        },
                        _ => Reply::error(404, "no such intent was asked for"),
                    }
                }
                Err(e) => Reply::error(404, &format!("not a verification: {e}")),
            },
            Method::POST if state == "ended" => Reply::error(410, "this subscription has ended"),
            Method::POST => {
                if f.stopping() {
                    return Reply::error(503, "stopping; the hub retries or a catch-up follows");
                }
                let signature = req
                    .headers()
                    .get("x-hub-signature")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let declared = req
                    .headers()
                    .get(hyper::header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok());
                let max = f.options.max_body;
                if declared.is_some_and(|l| l > max) {
                    say!(
                        "rsmirror: follow: a notification of {} bytes refused (--max-body {max})",
                        declared.unwrap_or(0)
                    );
                    return Reply::error(413, "larger than this subscriber takes")
                        .header("connection", "close");
                }
                let body = match read_body(req.into_body(), max).await {
                    Ok(b) => b,
                    Err(e) => {
                        say!("rsmirror: follow: a notification refused: {e}");
                        return Reply::error(413, &e).header("connection", "close");
                    }
                };
                let f = f.clone();
                tokio::task::spawn_blocking(move || f.delivered(&path, signature.as_deref(), &body))
                    .await
                    .unwrap_or_else(|e| Reply::error(500, &format!("rsmirror: {e}")))
            }
            _ => Reply::error(405, "GET (verification) and POST (distribution) only")
                .header("allow", "GET, POST"),
        }
    }
}

/// The body, at most `max` bytes (more: an error).
async fn read_body(mut body: Incoming, max: u64) -> Result<Bytes, String> {
    use hyper::body::Body as _;
    let mut got = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => break,
            Some(Err(e)) => return Err(format!("reading the body: {e}")),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if (got.len() + data.len()) as u64 > max {
                        return Err(format!("a body larger than --max-body {max} bytes"));
                    }
                    got.extend_from_slice(&data);
                }
            }
        }
    }
    Ok(Bytes::from(got))
}

impl Follower {
    /// A distribution's body at `path`: its signature checked, its changes compared with the
    /// mirror's sync point; a catch-up queued when it names anything newer.
    pub(crate) fn delivered(&self, path: &str, signature: Option<&str>, body: &[u8]) -> Reply {
        let (source, secret, topic) = {
            let held = self.subscriptions.lock().expect("never poisoned");
            let Some(h) = held.get(path) else {
                return Reply::error(404, "no subscription here");
            };
            (
                h.row.source.clone(),
                h.row.secret.clone(),
                h.row.topic.clone(),
            )
        };
        if let Err(e) = websub::check_signature(signature, secret.as_bytes(), body) {
            say!(
                "rsmirror: follow: {source}: a notification for {topic} ignored, never applied: {e}"
            );
            return Reply::error(202, "ignored");
        }
        {
            let mut held = self.subscriptions.lock().expect("never poisoned");
            if let Some(h) = held.get_mut(path) {
                h.row.last_notification_at = Some(super::now_text());
            }
        }
        self.mark_dirty(path);
        let topic_url = url::Url::parse(&topic).ok();
        match topic_url.map(|u| newest_change(body, &u)) {
            Some(Ok(Some(newest))) => match self.sync_point_of(&source) {
                Some(at) if newest <= at => {
                    say!(
                        "rsmirror: follow: {source}: a notification whose newest change \
                         ({newest}) is not after the mirror's sync point ({at}): nothing \
                         applied"
                    );
                }
                _ => self.queue_catch_up(&source, &format!("a notification, changes to {newest}")),
            },
            Some(Ok(None)) => self.queue_catch_up(&source, "a notification without dated changes"),
            Some(Err(e)) => {
                // Signed by the hub, so something changed; the Change Lists say what.
                say!("rsmirror: follow: {source}: a notification that does not read: {e}");
                self.queue_catch_up(&source, "a notification that does not read");
            }
            None => self.queue_catch_up(&source, "a notification"),
        }
        Reply {
            status: 202,
            headers: Vec::new(),
            body: crate::serve::reply::Payload::Empty,
        }
    }

    /// The oldest sync point of `source`'s collections (a change after it is new to at least
    /// one of them).
    fn sync_point_of(&self, source: &str) -> Option<jiff::Timestamp> {
        let catalog = crate::store::Catalog::open_read_only(&self.options.mirror).ok()??;
        let id = catalog.known_source_id(source).ok()??;
        let mine = crate::store::harvests::collections_of(&catalog, id).ok()?;
        catalog
            .sync_points()
            .ok()?
            .into_iter()
            .filter(|p| mine.contains(&p.collection))
            .map(|p| p.at)
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .min()
    }
}

/// The newest event time among a notification's changes (ResourceSync Change Notification:
/// a Change-List-shaped `urlset`), `None` when none is dated.
fn newest_change(body: &[u8], topic: &url::Url) -> Result<Option<jiff::Timestamp>, String> {
    let mut reader =
        sitemap::open(body, topic, ReadOptions::default()).map_err(|e| e.to_string())?;
    let mut newest = None;
    while let Some(e) = reader.next_entry().map_err(|e| e.to_string())? {
        if let Some(t) = e.event_time() {
            newest = newest.max(Some(t));
        }
    }
    Ok(newest)
}
