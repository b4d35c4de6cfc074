//! `baseline` of ResourceSync collections (its [`Lists`](crate::engine::format::Lists) side):
//! read every Resource List (or Resource Dump) and plan it against the catalog; the engine
//! (`engine::snapshot`) fetches and verifies what is new or changed, records versions,
//! reports (or tombstones, with `--delete`) what is gone, and records the sync point
//! (ResourceSync 1.1 §10.1).
//!
//! Every snapshot is read completely before anything is fetched, so a malformed or unreachable
//! list stops the run with nothing applied (exit 4). The list's entries go to a [`Listing`] on
//! disk as they are read, and the plan is a merge of it with the catalog in URI order
//! (`engine::listing`): memory does not grow with the list or the mirror. Resources that fail
//! are collected; the run finishes the rest and exits 3. The sync point is recorded only when
//! every listed resource is in the mirror.

use crate::engine::discover::Collection;
use crate::engine::documents::Documents;
use crate::engine::format::{Mirror, ToTake};
use crate::engine::listing::Listing;
use crate::engine::metadata;
use crate::engine::snapshot::{self, Planned};
use crate::error::{Error, SourceError};
use crate::formats::resourcesync::dump_source::{DumpLocation, DumpSnapshot, ALPHA_DUMP_REL};
use crate::formats::resourcesync::snapshot::{self as list_snapshot, Snapshot};
use crate::rs::document::Capability;
use crate::settings::Via;
use url::Url;

/// Read every collection's snapshot and plan it; any unreadable top-level list is fatal.
pub(crate) fn snapshots(
    docs: &Documents<'_>,
    via: Via,
    collections: Vec<Collection>,
    mirror: Mirror<'_>,
) -> Result<Vec<ToTake>, Error> {
    let catalog = mirror.catalog;
    let mut planned = Vec::new();
    // IFCC-0001: a Capability List without a Change List gives no changes; said once, and
    // the source's other collections are taken.
    let mut left_out = Vec::new();
    let mut followed = 0;
    for mut collection in collections {
        if collection.follows_nothing() {
            left_out.push((collection.id.clone(), collection.nothing_to_follow()));
            continue;
        }
        if collection.changes_only() {
            match changes_only(&collection, mirror, docs.filter)? {
                Some(mut p) => {
                    let described = collection.described();
                    p.metadata = metadata::fetch(docs, &described, &mut p.snapshot.warnings);
                    planned.push(ToTake::plain(p))
                }
                None => followed += 1,
            }
            continue;
        }
        let mut listing = Listing::create(mirror.staging, docs.filter)?;
        let (snapshot, dump) = match (via, dump_location(&mut collection)) {
            (Via::Dump, None) => {
                return Err(SourceError::Unusable {
                    url: collection.id.clone(),
                    message: "--via dump: the source offers no Resource Dump".into(),
                }
                .into())
            }
            (Via::Dump, Some(location)) => {
                let mut d = DumpSnapshot::read(
                    docs,
                    docs.http,
                    mirror.staging,
                    location,
                    docs.options,
                    &mut listing,
                )?;
                (std::mem::take(&mut d.snapshot), Some(d))
            }
            (Via::Auto, Some(location)) => {
                let dump_url = location.url().to_string();
                let read = DumpSnapshot::read(
                    docs,
                    docs.http,
                    mirror.staging,
                    location,
                    docs.options,
                    &mut listing,
                );
                // `auto` prefers the dump, but not a dump it cannot use in full (a package in
                // a format it does not read, a package that fails its checks): the Resource
                // List, when the source offers one, lists everything, a request per resource.
                // The mirror's own faults (a full disk under the listing) are not the dump's.
                // Nor a dump older than the mirror's state of the collection: the list is
                // asked for what the source holds now.
                let unusable = match &read {
                    Ok(d) if d.snapshot.complete() => {
                        let dump_at = d.snapshot.at;
                        snapshot::mirror_newer_than(catalog, &collection.id, dump_at)?.map(|m| {
                            format!(
                                "it is as of {}, older than the mirror's state of the \
                                 collection (sync point {m})",
                                dump_at.map(|t| t.to_string()).unwrap_or_default()
                            )
                        })
                    }
                    Ok(d) => Some(d.snapshot.failed_parts.join("; ")),
                    Err(Error::Source(e)) => Some(e.to_string()),
                    Err(_) => return Err(read.err().expect("an error")),
                };
                let has_list = collection.opened.is_some()
                    || collection.url_of(&Capability::ResourceList).is_some();
                match unusable {
                    Some(why) if has_list => {
                        // What the dump listed goes: the list is read afresh.
                        drop(read);
                        listing = Listing::create(mirror.staging, docs.filter)?;
                        let mut snapshot = resource_list(docs, &mut collection, &mut listing)?;
                        snapshot.warnings.push(format!(
                            "{dump_url}: the Resource Dump cannot be used ({why}); the resources \
                             are taken from the Resource List instead (--via auto)"
                        ));
                        (snapshot, None)
                    }
                    _ => {
                        let mut d = read?;
                        (std::mem::take(&mut d.snapshot), Some(d))
                    }
                }
            }
            (Via::List | Via::Auto, _) => {
                (resource_list(docs, &mut collection, &mut listing)?, None)
            }
        };
        // The source and the catalog agree on a resource kept, but its bytes must be there
        // too: a missing object is fetched again, and a truncated one in this run's slice of
        // the store (`store::presence`: no hashing; `audit` finds the rest).
        let mirror_at = snapshot::older_than_mirror(
            catalog,
            &collection.id,
            &snapshot,
            &mut listing,
            dump.is_some(),
        )?;
        let counts = listing.plan(catalog, &collection.id, mirror.objects)?;
        let changes = collection
            .url_of(&Capability::ChangeList)
            .map(Url::to_string);
        let mut snapshot = snapshot;
        let described = collection.described();
        let found = metadata::fetch(docs, &described, &mut snapshot.warnings);
        let mut p = Planned::new(collection.id, snapshot, listing, counts)
            .describes(collection.describes.clone());
        p.metadata = found;
        p.changes = changes;
        p.mirror_at = mirror_at;
        if let Some(dump) = dump {
            p.packages = Some(Box::new(dump));
            p.list_name = "Resource Dump";
        }
        planned.push(ToTake::plain(p));
    }
    if planned.is_empty() && followed == 0 {
        if let Some((id, _)) = left_out.first() {
            return Err(SourceError::Unusable {
                url: id.clone(),
                message: crate::engine::discover::NOTHING_TO_FOLLOW.into(),
            }
            .into());
        }
    }
    match planned.first_mut() {
        Some(t) => (t.planned.snapshot.warnings).extend(left_out.into_iter().map(|(_, w)| w)),
        None => left_out.iter().for_each(|(_, w)| say!("warning: {w}")),
    }
    Ok(planned)
}

/// A collection its Capability List gives only a Change List (IFCC-0001's sites): nothing to
/// list, so the first baseline plans an empty snapshot whose sync point is the beginning of
/// time, and the next `incremental` applies every change the Change List (or its index) gives.
/// Once the collection has a sync point, a baseline leaves it to `incremental` (`None`).
fn changes_only(
    collection: &Collection,
    mirror: Mirror<'_>,
    filter: &crate::model::Filter,
) -> Result<Option<Planned>, Error> {
    let sync_point = match mirror.catalog {
        Some(c) => c.sync_point(&collection.id)?.and_then(|p| p.at),
        None => None,
    };
    if let Some(at) = sync_point {
        note!(
            "rsmirror: {}: no Resource List; followed by its Change List since {at}: \
             rsmirror incremental applies its changes",
            collection.id
        );
        return Ok(None);
    }
    let mut listing = Listing::create(mirror.staging, filter)?;
    let counts = listing.plan(mirror.catalog, &collection.id, mirror.objects)?;
    let snapshot = Snapshot {
        at: Some(jiff::Timestamp::UNIX_EPOCH),
        anchored: true,
        basis: "the Capability List names no Resource List, only a Change List: followed by \
                its changes from the first (IFCC-0001); rsmirror incremental applies them"
            .into(),
        ..Snapshot::default()
    };
    let mut p = Planned::new(collection.id.clone(), snapshot, listing, counts)
        .describes(collection.describes.clone());
    p.changes = collection
        .url_of(&Capability::ChangeList)
        .map(Url::to_string);
    Ok(Some(p))
}

/// Read the collection's Resource List (the one discovery opened, else the one its
/// Capability List names).
fn resource_list(
    docs: &Documents<'_>,
    collection: &mut Collection,
    listing: &mut Listing,
) -> Result<Snapshot, Error> {
    let top = match collection.opened.take() {
        Some(doc) => doc,
        None => {
            let url = collection.resource_list_url()?;
            docs.fetch(url, &docs.scope_for(url))?
        }
    };
    list_snapshot::read(docs, top, listing)
}

/// Where a collection's Resource Dump is, if it offers one: the Capability List's
/// `resourcedump`, a dump given directly, or a 2012 Sitemap's dump link.
fn dump_location(c: &mut Collection) -> Option<DumpLocation> {
    if let Some(url) = c.url_of(&Capability::ResourceDump) {
        if c.opened
            .as_ref()
            .is_none_or(|d| d.header().capability() != Some(Capability::ResourceDump))
        {
            return Some(DumpLocation::Document(url.clone()));
        }
        return c.opened.take().map(|d| DumpLocation::Opened(Box::new(d)));
    }
    let doc = c.opened.as_ref()?;
    let link = doc
        .header()
        .links
        .iter()
        .find(|l| l.has_rel(ALPHA_DUMP_REL))?;
    Some(DumpLocation::AlphaPackage(link.href.clone()))
}
