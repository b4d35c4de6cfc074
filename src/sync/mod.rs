//! The commands: they wire readers, the network and the store together
//! (discover -> read -> plan -> transfer -> verify -> commit -> report).

pub mod apply;
pub mod arc_mirror;
pub mod arc_records;
pub mod audit;
pub mod baseline;
pub mod change_dump;
pub mod changes;
pub mod context;
pub mod discover;
pub mod documents;
pub mod dump_source;
pub mod feed;
pub mod fixity;
pub mod incremental;
pub mod inspect;
pub mod mirror_states;
pub mod plan;
pub mod refetch;
pub mod resource_list;
pub mod scp_apply;
pub mod scp_audit;
pub mod scp_fetch;
pub mod scp_mirror;
pub mod snapshot;
pub mod sync_point;
