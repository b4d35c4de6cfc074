//! ResourceSync readers: pure functions from bytes to typed items. They know nothing of the
//! network or the catalog, which keeps them unit-testable and fuzzable.

pub mod digest;
pub mod document;
pub mod dump;
pub mod manifest_path;
pub mod metadata;
pub mod notification;
pub mod sitemap;
pub mod w3c_datetime;
