//! The engine, format-blind: it wires the readers, the network and the store together
//! (discover -> read -> plan -> transfer -> verify -> decide -> commit). Each source format
//! plugs in from the floor above (`formats`): a format reads what its source publishes and
//! says what becomes of each entry; the engine fetches, decides and writes.
//!
//! - [`context`]: a run's mirror, catalog, lock, HTTP agent and run record.
//! - [`discover`] and [`documents`]: what a source URL is, and its documents, read within the
//!   source's scope.
//! - [`snapshot`], [`listing`] and [`plan`]: the state a list declares, streamed through a
//!   scratch copy and merged with the catalog in URI order.
//! - [`changes`]: the changes since the sync point, applied.
//! - [`agreement`]: when resources that contradict their list are pending, and when failed.
//! - [`apply`]: the transfer of what is fetched into verified objects.
//! - [`decide`]: the one place a state that arrived becomes a version.
//! - [`whole`]: a collection whose bytes are inline and which is trusted only once read to its
//!   end (an SCP collection), applied at once or not at all, with its dry run.
//! - [`expected`] and [`sync_point`]: what a format's walk lists for audit; sync point rules.

pub(crate) mod agreement;
pub mod apply;
pub(crate) mod changes;
pub mod context;
pub mod decide;
pub mod discover;
pub mod documents;
pub mod expected;
pub mod format;
pub(crate) mod lacking;
pub(crate) mod links;
pub mod listing;
pub(crate) mod metadata;
pub(crate) mod paged;
pub mod plan;
pub mod reader;
pub mod snapshot;
pub mod sync_point;
pub(crate) mod whole;
