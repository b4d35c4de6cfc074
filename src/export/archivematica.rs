//! `export archivematica`: an Archivematica standard transfer. `objects/` is the tree
//! (`export::tree`); `metadata/checksum.sha256` (and `metadata/checksum.md5` when every file's
//! MD5 is known) come from the catalog's digests, one line per file under `objects/`, paths
//! relative to it (Archivematica checks them with `sha256sum -c --strict` run there, and wants
//! as many lines as files); `metadata/premis.xml` holds a `premis:file` per file, its
//! `originalName` the file's path in the transfer (`objects/...`, what Archivematica's "Load
//! PREMIS events from metadata/premis.xml" matches), with each file's history as events
//! (`export::premis`) and its copy into the transfer as a `replication` event.

use crate::error::Error;
use crate::export::premis::{self, InSample, Replication, Report, Scope};
use crate::export::tree::{self, Placed, Walk};
use crate::export::{Link, Summary};
use crate::store::StoreError;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

pub(crate) fn export(
    walk: &Walk<'_>,
    dest: &Path,
    own: &Path,
    link: Link,
    earlier: bool,
    in_sample: InSample,
    summary: &mut Summary,
) -> Result<(), Error> {
    let create = |p: &Path| -> Result<BufWriter<File>, StoreError> {
        Ok(BufWriter::new(
            File::create(p).map_err(|e| StoreError::io("creating", p, e))?,
        ))
    };
    let sha_tmp = own.join("checksum.sha256.new");
    let md5_tmp = own.join("checksum.md5.new");
    let placed_tmp = own.join("placed.new");
    let mut sha = create(&sha_tmp)?;
    let mut md5 = create(&md5_tmp)?;
    let mut placed = create(&placed_tmp)?;
    let mut every_md5 = true;
    let mut each = |p: Placed<'_>| -> Result<(), Error> {
        let digest = p.version.sha256.as_deref().unwrap_or("");
        checksum_line(&mut sha, digest, p.path)
            .map_err(|e| StoreError::io("writing", &sha_tmp, e))?;
        match &p.version.md5 {
            Some(m) if every_md5 => checksum_line(&mut md5, m, p.path)
                .map_err(|e| StoreError::io("writing", &md5_tmp, e))?,
            _ => every_md5 = false,
        }
        // The version, then the path as a JSON string: a path may hold any character.
        let path = serde_json::to_string(p.path).expect("a string serialises");
        writeln!(placed, "{}\t{path}", p.version.version)
            .map_err(|e| StoreError::io("writing", &placed_tmp, e))?;
        Ok(())
    };
    tree::export(
        walk,
        &dest.join("objects"),
        own,
        link,
        earlier,
        summary,
        Some(&mut each),
    )?;
    super::finish_file(sha, &sha_tmp)?;
    super::finish_file(md5, &md5_tmp)?;
    super::finish_file(placed, &placed_tmp)?;
    let metadata = dest.join("metadata");
    std::fs::create_dir_all(&metadata).map_err(|e| StoreError::io("creating", &metadata, e))?;
    // The PREMIS first: checksums in place without it would look like a finished transfer.
    let report = Report::new(
        walk.reader.catalog(),
        walk.point.run.unwrap_or(0),
        Scope::History,
        in_sample,
        Some(Replication {
            at: jiff::Timestamp::now().to_string(),
            dest: dest.display().to_string(),
        }),
    )?;
    let premis_path = metadata.join(premis::FILE);
    let counts = report.write(&premis_path, &|f| {
        let file =
            File::open(&placed_tmp).map_err(|e| StoreError::io("reading", &placed_tmp, e))?;
        for line in BufReader::new(file).lines() {
            let line = line.map_err(|e| StoreError::io("reading", &placed_tmp, e))?;
            let (version, path) = line
                .split_once('\t')
                .and_then(|(v, p)| {
                    Some((
                        v.parse::<i64>().ok()?,
                        serde_json::from_str::<String>(p).ok()?,
                    ))
                })
                .ok_or_else(|| StoreError::Damaged {
                    path: placed_tmp.display().to_string(),
                    what: format!("a line that is not VERSION<TAB>\"PATH\": {line:?}"),
                })?;
            f(&report.file(&format!("objects/{path}"), version)?)?;
        }
        Ok(())
    })?;
    summary.events = Some(counts.events);
    let _ = std::fs::remove_file(&placed_tmp);
    move_into(&sha_tmp, &metadata.join("checksum.sha256"))?;
    let md5_file = metadata.join("checksum.md5");
    if every_md5 {
        move_into(&md5_tmp, &md5_file)?;
    } else {
        let _ = std::fs::remove_file(&md5_tmp);
        match std::fs::remove_file(&md5_file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("removing", &md5_file, e).into()),
        }
    }
    Ok(())
}

/// A line as `sha256sum`/`md5sum` write it (GNU coreutils: a name with a backslash, line feed
/// or carriage return is escaped, and the line starts with a backslash).
fn checksum_line(to: &mut impl Write, digest: &str, path: &str) -> std::io::Result<()> {
    if path.contains(['\\', '\n', '\r']) {
        let escaped = path
            .replace('\\', "\\\\")
            .replace('\n', "\\n")
            .replace('\r', "\\r");
        writeln!(to, "\\{digest}  {escaped}")
    } else {
        writeln!(to, "{digest}  {path}")
    }
}

fn move_into(tmp: &Path, dest: &Path) -> Result<(), StoreError> {
    std::fs::rename(tmp, dest).map_err(|e| StoreError::io("writing", dest, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_lines_escape_as_coreutils_does() {
        let mut out = Vec::new();
        checksum_line(&mut out, "ab", "a/b c").unwrap();
        checksum_line(&mut out, "cd", "x\\y\nz").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ab  a/b c\n\\cd  x\\\\y\\nz\n"
        );
    }
}
