//! How SCP pages are named in the catalog: each section of a source is a collection
//! (`URL#scp-section=NAME`), each page a resource named by its URL, or by its URL qualified
//! with the section when another collection holds that URL already. Below the catalog, so the
//! upgrades of older mirrors use the same names.

use crate::store::rows as write;
use crate::store::StoreError;
use rusqlite::Connection;

/// The `basis` of a section's sync point: where the section is applied through.
pub const SYNC_POINT_BASIS: &str =
    "SCP: the listed generated of the newest collection applied to the section";

/// The collection id of an SCP section (`resources.collection`, `sync_points.collection`):
/// the source as the mirror knows it, and the section.
pub(crate) fn section_collection(source_url: &str, section: &str) -> String {
    format!("{source_url}#scp-section={section}")
}

/// The URI of a page whose URL another collection of the mirror holds already.
pub(crate) fn qualified_uri(url: &str, section: &str) -> String {
    let sep = if url.contains('#') { '&' } else { '#' };
    format!("{url}{sep}scp-section={section}")
}

/// The page URL of a page resource's URI (see [`page_resource`]).
pub(crate) fn page_url<'a>(uri: &'a str, section: &str) -> &'a str {
    uri.strip_suffix(section)
        .and_then(|u| u.strip_suffix("scp-section="))
        .and_then(|u| u.strip_suffix('#').or_else(|| u.strip_suffix('&')))
        .unwrap_or(uri)
}

/// The resource of the page `url` of `section` (the collection with id `collection_id`), added
/// when new. Its URI is the page URL, unless another collection (another section, another
/// source) holds that URI already: then the URL qualified by the section
/// (`URL#scp-section=NAME`). Returns the resource id and whether the URI is qualified.
pub(crate) fn page_resource(
    conn: &Connection,
    url: &str,
    section: &str,
    collection_id: i64,
    run_id: i64,
) -> Result<(i64, bool), StoreError> {
    // The common case first: a URL no collection holds yet (one statement).
    if let Some(id) = write::new_resource(conn, url, collection_id, run_id)? {
        return Ok((id, false));
    }
    let (id, holder): (i64, i64) = conn
        .prepare_cached("SELECT id, collection_id FROM resources WHERE uri = ?1")?
        .query_row([url], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if holder == collection_id {
        return Ok((id, false));
    }
    let uri = qualified_uri(url, section);
    let id = match write::new_resource(conn, &uri, collection_id, run_id)? {
        Some(id) => id,
        None => conn
            .prepare_cached("SELECT id FROM resources WHERE uri = ?1")?
            .query_row([&uri], |r| r.get(0))?,
    };
    Ok((id, true))
}
