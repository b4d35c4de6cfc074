//! What `audit` asks of ResourceSync: the expected state of a collection, streamed.

use crate::engine::discover::Collection;
use crate::engine::documents::Documents;
use crate::engine::plan::Listed;
use crate::error::SourceError;
use crate::formats::resourcesync::changes::{self, Collector, Event};
use crate::formats::resourcesync::resource_list::{self, Item, Walked};
use crate::rs::document::{Capability, Change};
use std::collections::HashMap;

/// The expected state of one collection, streamed to `visit` (ResourceSync 1.1 §10.3): the
/// Resource List (or index) as the source publishes it now, with every change after its `at`
/// applied from the Change Lists. The changes are few (a change list, not a snapshot): they
/// are collected first into URI -> last change; a listed entry that changed later is handed
/// over with the change's declared state (or not at all when deleted), and the created URIs
/// the list does not name are handed over after the walk.
pub(crate) fn expected_state(
    docs: &Documents<'_>,
    collection: Collection,
    visit: &mut dyn FnMut(Item) -> Result<(), SourceError>,
) -> Result<Walked, SourceError> {
    let changes_at = changes::location(docs, &collection);
    let top = match collection.opened {
        Some(doc)
            if doc.header().capability() != Some(Capability::ChangeList)
                && !doc.header().alpha_changeset =>
        {
            doc
        }
        _ => {
            let url = collection.resource_list_url()?;
            docs.fetch(url, &docs.scope_for(url))?
        }
    };
    let mut overlay: HashMap<String, Event> = HashMap::new();
    let mut overlay_problem = None;
    if let Some(at) = top.header().md.at {
        match changes_at.and_then(|loc| {
            loc.map(|(url, archive)| {
                Collector::new(docs, None, &collection.id, at).collect(&url, None, archive.as_ref())
            })
            .transpose()
        }) {
            Ok(Some(ch)) => {
                for e in ch.events {
                    overlay.insert(e.uri.to_string(), e);
                }
            }
            Ok(None) => {}
            Err(e) => overlay_problem = Some(e.to_string()),
        }
    }
    let mut walked = resource_list::walk(docs, top, &mut |item| match item {
        // Most lists have no changes after their `at`: no hashing of every URI then.
        Item::Listed(l) if overlay.is_empty() => visit(Item::Listed(l)),
        Item::Listed(l) => match overlay.remove(l.uri.as_str()) {
            None => visit(Item::Listed(l)),
            Some(e) if e.change == Change::Deleted => Ok(()),
            Some(e) => visit(Item::Listed(Listed {
                declared: e.declared,
                media_type: e.media_type.or(l.media_type),
                ..l
            })),
        },
        refused => visit(refused),
    })?;
    // Created (or updated) after `at` and not in the list: expected all the same.
    let mut created: Vec<Event> = overlay
        .into_values()
        .filter(|e| e.change != Change::Deleted)
        .collect();
    created.sort_by(|a, b| a.uri.as_str().cmp(b.uri.as_str()));
    for e in created {
        visit(Item::Listed(Listed {
            uri: e.uri,
            declared: e.declared,
            media_type: e.media_type,
            duplicates: e.duplicates,
            document: e.document.into(),
            line: e.line,
            scope: e.scope,
        }))?;
    }
    if let Some(p) = overlay_problem {
        // Without the changes after `at` the expected state is unknown for what they touch:
        // report it, and derive no extras from an incomplete picture.
        walked
            .failed_parts
            .push(("change lists after the list's at".into(), p));
    }
    Ok(walked)
}
