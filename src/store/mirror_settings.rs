//! Settings of the whole mirror, chosen when it was made and remembered in the catalog
//! (`mirror_settings`): where its objects are.

use crate::store::bucket::{Bucket, BucketUrl};
use crate::store::{Catalog, ObjectStore, StoreError};
use rusqlite::OptionalExtension;
use std::path::Path;

/// Where the mirror's objects are: `None` for the mirror folder's `objects/`.
pub(crate) fn objects_location(catalog: &Catalog) -> Result<Option<BucketUrl>, StoreError> {
    let value: Option<String> = catalog
        .conn()
        .query_row(
            "SELECT value FROM mirror_settings WHERE name = 'objects'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    value
        .map(|v| {
            v.parse().map_err(|e: String| StoreError::Damaged {
                path: "catalog.sqlite".into(),
                what: format!("the objects' location it records is not one: {e}"),
            })
        })
        .transpose()
}

/// [`objects_location`] of the catalog file at `path` (a copy being proven), opened read-only.
pub(crate) fn objects_location_in(path: &Path) -> Result<Option<BucketUrl>, String> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| e.to_string())?;
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM mirror_settings WHERE name = 'objects'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| e.to_string())?;
    value.map(|v| v.parse()).transpose()
}

/// Remember that the objects are in `url` (a new mirror, before its first object).
pub(crate) fn set_objects_location(catalog: &Catalog, url: &BucketUrl) -> Result<(), StoreError> {
    catalog.conn().execute(
        "INSERT INTO mirror_settings (name, value) VALUES ('objects', ?1)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        [url.to_string()],
    )?;
    Ok(())
}

/// The object store of `mirror` as its catalog says: in a bucket (connected, with credentials
/// from the environment), or in the folder (made when `write`). The one place that chooses
/// where a mirror's objects are (besides a new mirror's `--objects`, which is [`connect`]).
pub(crate) fn object_store(
    mirror: &Path,
    catalog: &Catalog,
    write: bool,
) -> Result<ObjectStore, StoreError> {
    match objects_location(catalog)? {
        Some(url) => connect(mirror, &url),
        None if write => ObjectStore::open(mirror)
            .map_err(|e| StoreError::io("opening", &mirror.join("objects"), e)),
        None => Ok(ObjectStore::at(mirror)),
    }
}

/// The store of `mirror` in the bucket at `url`.
pub(crate) fn connect(mirror: &Path, url: &BucketUrl) -> Result<ObjectStore, StoreError> {
    connect_bucket(url).map(|b| ObjectStore::in_bucket(mirror, b))
}

/// The bucket at `url`, connected (with credentials from the environment).
pub(crate) fn connect_bucket(url: &BucketUrl) -> Result<Bucket, StoreError> {
    Bucket::connect(url).map_err(|e| StoreError::Bucket {
        url: url.to_string(),
        message: e.to_string(),
    })
}
