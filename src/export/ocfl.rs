//! `export ocfl`: an OCFL 1.1 storage root (or additions to one this export made). One OCFL
//! object per resource URI (its `id`), laid out by the storage layout extension
//! `0004-hashed-n-tuple-storage-layout` (sha256 of the id, three tuples of three). Its OCFL
//! versions are the resource's versions in the mirror, in the order they arrived: `vN`'s state
//! is the one file of that state, or nothing for a deletion. `sha256` is the digest algorithm,
//! so the catalog's digests serve as they are (each object is still read and checked as it is
//! copied); content is stored once per object (a state that comes back to earlier bytes names
//! the earlier content path). The file's logical path is the last name of the URL's path in the
//! tree rule (`paths`).
//!
//! The storage root has the extension's `config.json` but no `ocfl_layout.json` (optional in
//! OCFL 1.1): ocfl-py 2.1 refuses a root whose `ocfl_layout.json` names 0004 (E071, a layout
//! it does not implement). The export's own record is `rsmirror-export.json` beside
//! `0=ocfl_1.1` (a folder that is not an object is not allowed in a storage root).
//!
//! Re-exporting after more syncs appends the new versions and rewrites only the object's root
//! inventory: an existing version directory (with its inventory copy) is never touched. A
//! history that does not extend what an object holds (an export `--at` an earlier point into a
//! later root) is refused for that object.

use crate::access::{each_history, VersionRow};
use crate::error::{Error, UsageError};
use crate::export::tree::{Placer, Walk};
use crate::export::{paths, Link, Summary};
use crate::store::StoreError;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

const LAYOUT: &str = "0004-hashed-n-tuple-storage-layout";

/// The object root of an id, relative to the storage root.
fn object_path(id: &str) -> String {
    let h = hex::encode(Sha256::digest(id.as_bytes()));
    format!("{}/{}/{}/{h}", &h[..3], &h[3..6], &h[6..9])
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("rsmirror-tmp");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| StoreError::io("writing", path, e))
}

/// The storage root's own files, made once.
fn root(dest: &Path) -> Result<(), StoreError> {
    let namaste = dest.join("0=ocfl_1.1");
    if namaste.exists() {
        return Ok(());
    }
    let ext = dest.join("extensions").join(LAYOUT);
    std::fs::create_dir_all(&ext).map_err(|e| StoreError::io("creating", &ext, e))?;
    write(
        &ext.join("config.json"),
        serde_json::to_string_pretty(&json!({
            "extensionName": LAYOUT,
            "digestAlgorithm": "sha256",
            "tupleSize": 3,
            "numberOfTuples": 3,
            "shortObjectRoot": false
        }))
        .expect("json")
        .as_bytes(),
    )?;
    // No `ocfl_layout.json` (it is optional): ocfl-py 2.1, the validator OCFL users run, knows
    // no layout 0004 and refuses a root that names it there (E071). The extension's
    // `config.json` above says how objects are laid out.
    write(&namaste, b"ocfl_1.1\n")
}

/// What a version holds: the digest of its one file, or nothing (a deletion).
fn digest_of(v: &VersionRow) -> Option<&str> {
    if v.deleted() {
        None
    } else {
        v.sha256.as_deref()
    }
}

pub(crate) fn export(
    walk: &Walk<'_>,
    dest: &Path,
    link: Link,
    summary: &mut Summary,
) -> Result<(), Error> {
    root(dest)?;
    each_history(walk.reader, walk.point, &walk.filter, |uri, history| {
        object(walk, dest, link, uri, history, summary)?;
        Ok(true)
    })
}

fn object(
    walk: &Walk<'_>,
    dest: &Path,
    link: Link,
    uri: &str,
    history: &[VersionRow],
    summary: &mut Summary,
) -> Result<(), Error> {
    let rel = object_path(uri);
    let obj = dest.join(&rel);
    let logical = paths::natural(uri, None, false)
        .and_then(|n| n.parts.last().cloned())
        .unwrap_or_else(|| "content".into());
    let inventory_path = obj.join("inventory.json");
    let mut inventory: Value = match std::fs::read(&inventory_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            UsageError(format!(
                "export ocfl: {} is not an inventory this export can extend: {e}",
                inventory_path.display()
            ))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({
            "id": uri,
            "type": "https://ocfl.io/1.1/spec/#inventory",
            "digestAlgorithm": "sha256",
            "head": "v0",
            "contentDirectory": "content",
            "manifest": {},
            "versions": {}
        }),
        Err(e) => return Err(StoreError::io("reading", &inventory_path, e).into()),
    };
    let held = inventory["versions"].as_object().map_or(0, Map::len);
    // What the object holds must be the start of the mirror's history.
    for (i, v) in history.iter().enumerate().take(held) {
        let state = &inventory["versions"][format!("v{}", i + 1)]["state"];
        let same = match digest_of(v) {
            None => state.as_object().is_some_and(Map::is_empty),
            Some(d) => state.get(d).is_some(),
        };
        if !same {
            return Err(UsageError(format!(
                "export ocfl: the OCFL object of {uri} ({rel}) holds a version v{} that the \
                 mirror's history {} does not have there: an OCFL export only appends; export \
                 into a new storage root",
                i + 1,
                walk.reader.describe_point(walk.point)
            ))
            .into());
        }
    }
    if history.len() < held {
        return Err(UsageError(format!(
            "export ocfl: the OCFL object of {uri} ({rel}) holds {held} versions, the mirror's \
             history {} only {}: an OCFL export only appends; export into a new storage root",
            walk.reader.describe_point(walk.point),
            history.len()
        ))
        .into());
    }
    if history.len() == held {
        // Nothing to add; an export stopped between an inventory and its sidecar left them out
        // of step: the sidecars follow their inventories.
        let head = inventory["head"].as_str().unwrap_or("v1").to_string();
        for dir in [obj.clone(), obj.join(&head)] {
            sidecar_in_step(&dir)?;
        }
        summary.kept += 1;
        summary.files += 1;
        return Ok(());
    }
    if held == 0 {
        std::fs::create_dir_all(&obj).map_err(|e| StoreError::io("creating", &obj, e))?;
        write(&obj.join("0=ocfl_object_1.1"), b"ocfl_object_1.1\n")?;
    }
    // New version folders: direct (a file already there is replaced the careful way).
    // Every version goes in: an audit vouches for them only if it re-hashed every version.
    let vouch = walk.vouch.filter(|v| v.all_versions);
    let mut placer = Placer::new(
        (walk.mirror, walk.reader.objects()?),
        &obj,
        link,
        true,
        vouch,
    );
    for (i, v) in history.iter().enumerate().skip(held) {
        let name = format!("v{}", i + 1);
        let mut state = Map::new();
        if let Some(d) = digest_of(v) {
            if inventory["manifest"].get(d).is_none() {
                let content = format!("{name}/content/{logical}");
                placer.place(uri, v, &content)?;
                summary.bytes += v.length.unwrap_or(0).max(0) as u64;
                inventory["manifest"][d] = json!([content]);
            }
            state.insert(d.to_string(), json!([logical]));
        }
        let run = walk.reader.runs.get(&v.run);
        inventory["versions"][&name] = json!({
            "created": walk.reader.arrived(v.run),
            "state": state,
            "user": {"name": "rsmirror"},
            "message": format!(
                "{} by rsmirror {} (run {}, version {}){}",
                v.change,
                run.map(|r| r.command.as_str()).unwrap_or("?"),
                v.run,
                v.version,
                match v.encoding() {
                    Some(coding) if !v.deleted() => format!("; the bytes are {coding}-encoded"),
                    _ => String::new(),
                }
            ),
        });
        inventory["head"] = json!(name);
        // The version's directory with its inventory copy: written once, never again.
        let vdir = obj.join(&name);
        std::fs::create_dir_all(&vdir).map_err(|e| StoreError::io("creating", &vdir, e))?;
        let bytes = serde_json::to_vec_pretty(&inventory).expect("json");
        let sidecar = format!("{} inventory.json\n", hex::encode(Sha256::digest(&bytes)));
        // The last version's inventory is also the object's.
        let last = i + 1 == history.len();
        for dir in [&vdir, &obj].into_iter().take(if last { 2 } else { 1 }) {
            write(&dir.join("inventory.json"), &bytes)?;
            write(&dir.join("inventory.json.sha256"), sidecar.as_bytes())?;
        }
    }
    summary.vouched += placer.vouched;
    summary.written += 1;
    summary.files += 1;
    Ok(())
}

/// `inventory.json.sha256` in `dir` names the SHA-256 of the `inventory.json` beside it.
fn sidecar_in_step(dir: &Path) -> Result<(), StoreError> {
    let inventory = dir.join("inventory.json");
    let Ok(bytes) = std::fs::read(&inventory) else {
        return Ok(());
    };
    let sidecar = format!("{} inventory.json\n", hex::encode(Sha256::digest(&bytes)));
    let path = dir.join("inventory.json.sha256");
    if std::fs::read(&path).ok().as_deref() != Some(sidecar.as_bytes()) {
        write(&path, sidecar.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_laid_out_by_hashed_n_tuples() {
        // The extension's own example: the id "object-01".
        assert_eq!(
            object_path("object-01"),
            "3c0/ff4/240/3c0ff4240c1e116dba14c7627f2319b58aa3d77606d0d90dfc6161608ac987d4"
        );
    }
}
