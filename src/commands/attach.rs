//! `rsmirror attach s3://BUCKET/PREFIX --mirror DIR`: a working mirror folder on this machine
//! for a mirror whose objects are in a bucket, from the bucket alone. The newest catalog copy
//! in `PREFIX/catalog/` that proves good (the compressed file's SHA-256 and the catalog's,
//! against its record; the catalog's objects in this bucket) becomes the folder's catalog, and
//! is kept in `catalog-copies/` beside it. Reading commands, audit and export work at once;
//! `baseline` and `incremental` take the bucket's lease as on the first machine.

use crate::error::{Error, UsageError};
use crate::store::bucket::shared;
use crate::store::bucket::BucketUrl;
use crate::store::copies::{self, Copy};
use crate::store::{mirror_settings, Catalog, MirrorLock, StoreError};
use std::path::Path;

/// Attach the mirror at `location` in the folder `mirror`; what to tell the user.
pub(crate) fn run(location: &str, mirror: &Path) -> Result<String, Error> {
    let url: BucketUrl = location.parse().map_err(UsageError)?;
    if Catalog::present(mirror)? {
        return Err(UsageError(format!(
            "{} holds a mirror's catalog already: attach makes a new folder (name another one)",
            mirror.display()
        ))
        .into());
    }
    let other_files = std::fs::read_dir(mirror)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    if other_files {
        return Err(UsageError(format!(
            "{} holds other files: attach makes a new folder (name an empty or new one)",
            mirror.display()
        ))
        .into());
    }
    std::fs::create_dir_all(mirror).map_err(|e| StoreError::io("creating", mirror, e))?;
    let _lock = MirrorLock::acquire(mirror)?;
    let bucket = &mirror_settings::connect_bucket(&url)?;
    let fault = |message: String| -> Error {
        StoreError::Bucket {
            url: url.to_string(),
            message,
        }
        .into()
    };
    let found = shared::copies_in(bucket).map_err(|e| fault(e.to_string()))?;
    if found.is_empty() {
        return Err(fault(format!(
            "no catalog copy in {}: a mirror made with --objects sends one after every run \
             that wrote (run incremental where the mirror is)",
            bucket.describe(&url.key("catalog/"))
        )));
    }
    let folder = mirror.join(copies::FOLDER);
    std::fs::create_dir_all(&folder).map_err(|e| StoreError::io("creating", &folder, e))?;
    let mut refused = Vec::new();
    for (key, record) in found {
        let path = folder.join(&record.file);
        let copy = Copy {
            path: path.clone(),
            record,
        };
        match take(bucket, &key, &copy, mirror, &url) {
            Ok(()) => {
                return Ok(format!(
                    "attached {}: the catalog copy of run {} made {} by {} ({}); objects in {url}",
                    mirror.display(),
                    copy.record.run.unwrap_or(0),
                    copy.record.made,
                    copy.record.by,
                    bucket.describe(&key),
                ))
            }
            Err(why) => {
                let _ = std::fs::remove_file(&path);
                refused.push(format!("{}: {why}", bucket.describe(&key)));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&folder);
    Err(fault(format!(
        "no catalog copy proved good: {}",
        refused.join("; ")
    )))
}

/// Fetch the copy at `key` into the folder, prove it, unpack it as the folder's catalog.
fn take(
    bucket: &crate::store::bucket::Bucket,
    key: &str,
    copy: &Copy,
    mirror: &Path,
    url: &BucketUrl,
) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::fs::File::create(&copy.path).map_err(|e| e.to_string())?;
    let found = bucket
        .get(key, &mut |data| out.write_all(data))
        .map_err(|e| e.to_string())?;
    if !found {
        return Err("gone from the bucket".into());
    }
    out.sync_all().map_err(|e| e.to_string())?;
    let json = serde_json::to_vec_pretty(&copy.record).expect("json");
    let mut record = copy.path.clone().into_os_string();
    record.push(".json");
    std::fs::write(&record, json).map_err(|e| e.to_string())?;
    let unpacked = mirror.join(".catalog.sqlite.attach");
    let proven =
        copies::unpack(copy, &unpacked).and_then(|()| match mirror_settings::objects_location_in(
            &unpacked,
        )? {
            Some(u) if u == *url => Ok(()),
            Some(u) => Err(format!("its objects are in {u}, not in {url}")),
            None => Err("its objects are in a mirror folder, not in a bucket".into()),
        });
    if let Err(why) = proven {
        let _ = std::fs::remove_file(&unpacked);
        let _ = std::fs::remove_file(&record);
        return Err(why);
    }
    std::fs::rename(&unpacked, mirror.join("catalog.sqlite")).map_err(|e| e.to_string())?;
    shared::remember_in_bucket(mirror, &copy.record);
    Ok(())
}
