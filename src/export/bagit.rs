//! `export bagit`: a BagIt 1.0 bag (RFC 8493). `data/` is the tree (`export::tree`); the
//! payload manifests come from the catalog's digests (`manifest-sha256.txt`, and
//! `manifest-md5.txt` when every file's MD5 is known), so nothing is hashed twice: each object
//! is read once, to check it as it is placed. The tag manifest is written last; an export that
//! stops before it leaves a bag that does not validate (and `INCOMPLETE` beside it). What
//! ARC pages said of the files is a tag file of its own, `arc-pages.jsonl`.

use crate::error::Error;
use crate::export::tree::{self, Placed, Walk};
use crate::export::{Link, Summary};
use crate::store::arc_records::ArcPages;
use crate::store::{history, StoreError};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// A path as a manifest line names it (RFC 8493 §2.1.3: CR, LF and `%` percent-encoded), into
/// `out` (cleared first: one buffer for every line).
fn manifest_path(path: &str, out: &mut String) {
    out.clear();
    out.push_str("data/");
    for c in path.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            c => out.push(c),
        }
    }
}

/// The tag file that says what ARC pages said of the files (`ai_indexable`, `ai_summary`,
/// `ai_tags`, `ai_snapshot` as published, ...): JSON Lines, `{"path": "data/...", "arc": {...}}`.
const ARC_PAGES: &str = "arc-pages.jsonl";

pub(crate) fn export(
    walk: &Walk<'_>,
    dest: &Path,
    own: &Path,
    link: Link,
    earlier: bool,
    summary: &mut Summary,
) -> Result<(), Error> {
    // An earlier bag stops validating at once: its tag manifest goes first.
    let tagmanifest = dest.join("tagmanifest-sha256.txt");
    match std::fs::remove_file(&tagmanifest) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(StoreError::io("removing", &tagmanifest, e).into()),
    }
    let sha_tmp = own.join("manifest-sha256.txt.new");
    let md5_tmp = own.join("manifest-md5.txt.new");
    let create = |p: &Path| -> Result<BufWriter<File>, StoreError> {
        Ok(BufWriter::new(
            File::create(p).map_err(|e| StoreError::io("creating", p, e))?,
        ))
    };
    let mut sha = create(&sha_tmp)?;
    let mut md5 = create(&md5_tmp)?;
    let mut every_md5 = true;
    let mut line = String::new();
    // What ARC pages said of the files, one JSON line each (a tag file of our own).
    let pages_tmp = own.join("arc-pages.jsonl.new");
    let arc = ArcPages::new(walk.reader.catalog())?;
    let mut pages: Option<BufWriter<File>> = None;
    let mut each = |p: Placed<'_>| -> Result<(), Error> {
        if let Some(page) = arc.of(walk.reader.catalog(), p.version.version)? {
            let w = match &mut pages {
                Some(w) => w,
                None => pages.insert(create(&pages_tmp)?),
            };
            // From the types, not through a `Value`: `ai_snapshot` as published.
            #[derive(serde::Serialize)]
            struct Line<'a> {
                path: String,
                arc: &'a crate::store::arc_records::ArcPage,
            }
            let path = format!("data/{}", p.path);
            let line = serde_json::to_string(&Line { path, arc: &page }).expect("serialisable");
            writeln!(w, "{line}").map_err(|e| StoreError::io("writing", &pages_tmp, e))?;
        }
        manifest_path(p.path, &mut line);
        let digest = p.version.sha256.as_deref().unwrap_or("");
        manifest_line(&mut sha, digest, &line)
            .map_err(|e| StoreError::io("writing", &sha_tmp, e))?;
        match &p.version.md5 {
            Some(m) if every_md5 => manifest_line(&mut md5, m, &line)
                .map_err(|e| StoreError::io("writing", &md5_tmp, e))?,
            _ => every_md5 = false,
        }
        Ok(())
    };
    tree::export(
        walk,
        &dest.join("data"),
        own,
        link,
        earlier,
        summary,
        Some(&mut each),
    )?;
    super::finish_file(sha, &sha_tmp)?;
    super::finish_file(md5, &md5_tmp)?;
    let mut tags = vec!["bagit.txt", "bag-info.txt", "manifest-sha256.txt"];
    let pages_file = dest.join(ARC_PAGES);
    match pages {
        Some(w) => {
            super::finish_file(w, &pages_tmp)?;
            move_into(&pages_tmp, &pages_file)?;
            tags.push(ARC_PAGES);
        }
        None => match std::fs::remove_file(&pages_file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("removing", &pages_file, e).into()),
        },
    }
    move_into(&sha_tmp, &dest.join("manifest-sha256.txt"))?;
    let md5_manifest = dest.join("manifest-md5.txt");
    if every_md5 {
        move_into(&md5_tmp, &md5_manifest)?;
        tags.push("manifest-md5.txt");
    } else {
        let _ = std::fs::remove_file(&md5_tmp);
        let _ = std::fs::remove_file(&md5_manifest);
    }
    write_file(
        &dest.join("bagit.txt"),
        "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
    )?;
    write_file(&dest.join("bag-info.txt"), &bag_info(walk, summary)?)?;
    let mut lines = String::new();
    let mut buf = vec![0u8; crate::access::COPY_BUFFER];
    for tag in tags {
        let path = dest.join(tag);
        // Streamed: a manifest of a million files is over 100 MB.
        let mut f = File::open(&path).map_err(|e| StoreError::io("reading", &path, e))?;
        let got = crate::access::copy_hashing(
            &mut f,
            &mut std::io::sink(),
            &mut buf,
            &path,
            Path::new("(nowhere: only hashed)"),
        )?;
        lines.push_str(&format!("{}  {tag}\n", got.sha256));
    }
    write_file(&tagmanifest, &lines)?;
    Ok(())
}

/// `DIGEST  PATH` and a line feed.
fn manifest_line(to: &mut impl Write, digest: &str, path: &str) -> std::io::Result<()> {
    to.write_all(digest.as_bytes())?;
    to.write_all(b"  ")?;
    to.write_all(path.as_bytes())?;
    to.write_all(b"\n")
}

fn move_into(tmp: &Path, dest: &Path) -> Result<(), StoreError> {
    std::fs::rename(tmp, dest).map_err(|e| StoreError::io("writing", dest, e))
}

fn write_file(path: &Path, text: &str) -> Result<(), StoreError> {
    let mut f = File::create(path).map_err(|e| StoreError::io("creating", path, e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| StoreError::io("writing", path, e))
}

/// `bag-info.txt`: what the bag holds and where it came from.
fn bag_info(walk: &Walk<'_>, summary: &Summary) -> Result<String, StoreError> {
    let catalog = walk.reader.catalog();
    let mut s = String::new();
    s.push_str(&format!(
        "Bag-Software-Agent: rsmirror {}\n",
        env!("CARGO_PKG_VERSION")
    ));
    s.push_str(&format!(
        "Bagging-Date: {}\n",
        jiff::Timestamp::now().strftime("%Y-%m-%d")
    ));
    s.push_str(&format!(
        "Payload-Oxum: {}.{}\n",
        summary.bytes, summary.files
    ));
    let wanted = |collection: &str| -> Result<bool, StoreError> {
        Ok(match &walk.filter.collections {
            None => true,
            Some(ids) => history::known_collection_id(catalog, collection)?
                .is_some_and(|id| ids.contains(&id)),
        })
    };
    let rows = history::sync_points_by_source(catalog)?;
    let mut sources: Vec<&str> = Vec::new();
    for (collection, at, source) in &rows {
        if !wanted(collection)? {
            continue;
        }
        if !sources.contains(&source.as_str()) {
            sources.push(source);
            s.push_str(&format!("External-Identifier: {source}\n"));
        }
        s.push_str(&format!(
            "Rsmirror-Sync-Point: {collection} {}\n",
            at.as_deref().unwrap_or("(none: an unanchored list)")
        ));
    }
    let run = walk.point.run.unwrap_or(0);
    s.push_str(&format!(
        "External-Description: A mirror kept by rsmirror, as {} left it. Each file's URL is \
         in .rsmirror-export/map.tsv.\n",
        walk.reader.describe_run(run)
    ));
    s.push_str(&format!("Rsmirror-Run: {run}\n"));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_paths_encode_percent_and_line_breaks() {
        let mut out = String::from("left over");
        manifest_path("a/b c", &mut out);
        assert_eq!(out, "data/a/b c");
        manifest_path("100%25\n\r", &mut out);
        assert_eq!(out, "data/100%2525%0A%0D");
    }
}
