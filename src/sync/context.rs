//! What a command run hands to the code that mirrors one collection: the network, the
//! document opener, the store, the run's identity, and where to count and report.

use crate::net::Http;
use crate::progress::Progress;
use crate::report::Summary;
use crate::store::{Catalog, ObjectStore};
use crate::sync::documents::Documents;
use std::path::Path;

pub struct RunContext<'a, 'b> {
    pub http: &'a Http,
    pub docs: &'a Documents<'b>,
    pub catalog: &'a mut Catalog,
    pub objects: &'a ObjectStore,
    pub staging: &'a Path,
    pub source_id: i64,
    pub run_id: i64,
    pub summary: &'a mut Summary,
    pub progress: &'a Progress,
}
