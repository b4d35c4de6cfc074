//! ResourceSync (1.1, 1.0, the 2013 beta and 2012 alpha drafts; plain Sitemaps) as a
//! [`Format`]: `baseline` reads Resource Lists and Resource Dumps (`resource_list`, `snapshot`,
//! `dump_source`) and plans them, for the engine to take ([`Lists`]); `changes` collects Change Lists (indexes, archives, 1.0
//! and 2012 forms) for `commands::incremental`, `change_dump` applies Change Dumps. The reader is
//! `crate::rs`.

pub mod audit;
pub mod baseline;
pub mod change_dump;
pub mod changes;
pub mod dump_source;
pub mod incremental;
pub mod patch;
pub mod resource_list;
pub mod snapshot;
pub mod versions;

use super::{Expected, Format};
use crate::engine::context::RunContext;
use crate::engine::discover::{Collection, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::format::{Lists, Mirror, ToTake};
use crate::error::{Error, SourceError};
use crate::report::Summary;
use crate::settings;
use crate::store::Catalog;
use resource_list::Item;

pub struct ResourceSync;

/// A Resource List (or Resource Dump) lists a collection's current state: the engine takes it
/// as a snapshot.
impl Lists for ResourceSync {
    fn snapshots(
        &self,
        docs: &Documents<'_>,
        s: &settings::Baseline,
        collections: Vec<Collection>,
        mirror: Mirror<'_>,
    ) -> Result<Vec<ToTake>, Error> {
        baseline::snapshots(docs, s.via, collections, mirror)
    }
}

impl Format for ResourceSync {
    fn kind(&self) -> SourceKind {
        SourceKind::ResourceSync
    }

    fn lists(&self) -> Option<&dyn Lists> {
        Some(self)
    }

    fn incremental(
        &self,
        ctx: &mut RunContext<'_, '_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
    ) -> Result<(), Error> {
        incremental::incremental(ctx, s, collections)
    }

    fn plan_changes(
        &self,
        docs: &Documents<'_>,
        s: &settings::Incremental,
        collections: Vec<Collection>,
        catalog: &Catalog,
        summary: &mut Summary,
    ) -> Result<bool, Error> {
        incremental::plan(docs, s, collections, catalog, summary)
    }

    fn expected_state(
        &self,
        docs: &Documents<'_>,
        collection: Collection,
        visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
    ) -> Result<Expected, SourceError> {
        Ok(Expected {
            walked: audit::expected_state(docs, collection, visit)?,
            skipped: Vec::new(),
        })
    }
}
