//! The push subscriptions of `rsmirror follow` (`subscriptions`): for each source, the hub and
//! topic it subscribed to, the callback URL it gave the hub (the path unguessable), the secret
//! deliveries are signed with, its state and the lease the hub granted, and when a notification
//! last came and the last catch-up ended. Written by the follower outside runs, under the
//! mirror's lock; read by `status`.

use crate::store::{Catalog, StoreError};
use rusqlite::{params, OptionalExtension};

/// One subscription as the catalog holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub source: String,
    pub hub: String,
    pub topic: String,
    pub callback: String,
    pub secret: String,
    /// `subscribing`, `active`, `unsubscribing`, `ended` or `denied`.
    pub state: String,
    pub lease_requested_seconds: Option<i64>,
    pub lease_granted_seconds: Option<i64>,
    pub lease_until: Option<String>,
    pub last_notification_at: Option<String>,
    pub last_catch_up_at: Option<String>,
}

const COLUMNS: &str = "s.url, b.hub, b.topic, b.callback, b.secret, b.state,
    b.lease_requested_seconds, b.lease_granted_seconds, b.lease_until, b.last_notification_at,
    b.last_catch_up_at";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Subscription> {
    Ok(Subscription {
        source: r.get(0)?,
        hub: r.get(1)?,
        topic: r.get(2)?,
        callback: r.get(3)?,
        secret: r.get(4)?,
        state: r.get(5)?,
        lease_requested_seconds: r.get(6)?,
        lease_granted_seconds: r.get(7)?,
        lease_until: r.get(8)?,
        last_notification_at: r.get(9)?,
        last_catch_up_at: r.get(10)?,
    })
}

/// Every subscription the mirror records (ended ones too), by source then hub.
pub(crate) fn all(catalog: &Catalog) -> Result<Vec<Subscription>, StoreError> {
    if !has_table(catalog)? {
        // A mirror of schema version 9 or older, read before its first writer upgraded it.
        return Ok(Vec::new());
    }
    let mut stmt = catalog.conn().prepare(&format!(
        "SELECT {COLUMNS} FROM subscriptions b JOIN sources s ON s.id = b.source_id
         ORDER BY s.url, b.hub, b.topic"
    ))?;
    let rows = stmt.query_map([], row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn has_table(catalog: &Catalog) -> Result<bool, StoreError> {
    Ok(catalog
        .conn()
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'subscriptions'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Record `s` (keyed by source, hub and topic): a new subscription, or the new callback,
/// secret, state and lease of one the source had.
pub(crate) fn save(catalog: &Catalog, s: &Subscription) -> Result<(), StoreError> {
    let source_id = catalog.source_id(&s.source)?;
    catalog.conn().execute(
        "INSERT INTO subscriptions (source_id, hub, topic, callback, secret, state,
             lease_requested_seconds, lease_granted_seconds, lease_until, last_notification_at,
             last_catch_up_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT (source_id, hub, topic) DO UPDATE SET
             callback = excluded.callback, secret = excluded.secret, state = excluded.state,
             lease_requested_seconds = excluded.lease_requested_seconds,
             lease_granted_seconds = excluded.lease_granted_seconds,
             lease_until = excluded.lease_until,
             last_notification_at = coalesce(excluded.last_notification_at, last_notification_at),
             last_catch_up_at = coalesce(excluded.last_catch_up_at, last_catch_up_at)",
        params![
            source_id,
            s.hub,
            s.topic,
            s.callback,
            s.secret,
            s.state,
            s.lease_requested_seconds,
            s.lease_granted_seconds,
            s.lease_until,
            s.last_notification_at,
            s.last_catch_up_at
        ],
    )?;
    Ok(())
}
