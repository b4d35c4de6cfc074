//! The commands: they wire readers, the network and the store together
//! (discover -> read -> plan -> transfer -> verify -> commit -> report).

pub mod apply;
pub mod audit;
pub mod baseline;
pub mod changes;
pub mod discover;
pub mod documents;
pub mod incremental;
pub mod inspect;
pub mod plan;
pub mod snapshot;
