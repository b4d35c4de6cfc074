//! The engine: it wires readers, the network and the store together (discover -> read ->
//! plan -> transfer -> verify -> commit -> report), and the commands that run it. Each source
//! format plugs in through `formats::Format` (one folder per format under `formats/`).

pub mod apply;
pub mod audit;
pub mod baseline;
pub(crate) mod changes;
pub mod context;
pub mod decide;
pub mod discover;
pub mod documents;
pub mod expected;
pub mod feed;
pub mod fixity;
pub mod formats;
pub mod incremental;
pub mod inspect;
pub mod listing;
pub mod mirror_states;
pub mod plan;
pub mod refetch;
pub mod repair;
pub mod snapshot;
pub mod spill;
pub mod sync_point;
