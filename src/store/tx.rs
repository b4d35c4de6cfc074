//! The handle of an open transaction, the one thing the store lends outside itself to write
//! rows in a batch.

use rusqlite::Connection;

/// The transaction a writer has open, handed to what writes rows in it (a format's own, a
/// run's documents and sync points): what is written through it commits with the writer's
/// batch, or not at all. Only the store's functions write through it; nothing outside the
/// store sees the connection.
#[derive(Clone, Copy)]
pub struct Tx<'c>(&'c Connection);

impl<'c> Tx<'c> {
    /// The transaction open on `conn`.
    pub(in crate::store) fn new(conn: &'c Connection) -> Tx<'c> {
        Tx(conn)
    }

    /// The connection, to run the store's SQL on.
    pub(in crate::store) fn conn(&self) -> &'c Connection {
        self.0
    }
}
