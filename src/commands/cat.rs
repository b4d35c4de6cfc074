//! `rsmirror cat`: the bytes `access::cat` chooses, exactly as fetched, re-hashed as they
//! stream. To a file (`-o`) they go under a temporary name that is renamed into place only
//! once the bytes match the catalog; to stdout a mismatch is reported on stderr and by the
//! exit code (1), the bytes having gone out already.

use crate::access::cat::{self, Object, Query};
use crate::access::Reader;
use crate::error::Error;
use crate::store::StoreError;
use std::io;
use std::path::{Path, PathBuf};

pub struct Options {
    pub query: Query,
    pub output: Option<PathBuf>,
}

pub(crate) fn run(mirror: &Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    let chosen = cat::choose(&reader, &o.query)?;
    if let Some(note) = &chosen.note {
        note!("rsmirror: {note}");
    }
    let (uri, v) = (&chosen.uri, &chosen.version);
    if v.metadata_only {
        return Err(Error::Usage(crate::error::UsageError(format!(
            "{uri}: version {} is {} (its source is followed by --metadata-only): the mirror \
             holds what the source declares of it, not its bytes; `rsmirror log {uri}` shows \
             that, and a run with --no-metadata-only fetches the bytes",
            v.version,
            crate::access::VersionRow::NO_BYTES
        ))));
    }
    detail!(
        "rsmirror: {uri}: version {} from {}, {} bytes, SHA-256 {} (checked as it is written)",
        v.version,
        reader.describe_run(v.run),
        v.length.map_or_else(|| "?".into(), |n| n.to_string()),
        v.sha256.as_deref().unwrap_or("unknown")
    );
    if let Some(coding) = crate::access::encoding_text(&v.declared_encoding, &v.content_encoding) {
        detail!("rsmirror: {uri}: {coding}, written as they are");
    }
    let mut object = Object::open(&reader, uri, v)?;
    let mut buf = vec![0u8; crate::access::COPY_BUFFER];
    match &o.output {
        Some(path) if path.as_os_str() != "-" => {
            let tmp = temporary_name(path);
            let result = (|| {
                let mut dest = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(|e| StoreError::io("creating", &tmp, e))?;
                object.copy_to(&mut dest, &tmp, &mut buf)?;
                dest.sync_all()
                    .map_err(|e| StoreError::io("writing", &tmp, e))?;
                std::fs::rename(&tmp, path)
                    .map_err(|e| StoreError::io("renaming into", path, e))?;
                Ok(())
            })();
            if result.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            result
        }
        _ => {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            object.copy_to(&mut out, Path::new("stdout"), &mut buf)
        }
    }
}

/// `.NAME.rsmirror-PID.tmp` beside the destination: the same file system, so the rename is
/// atomic.
fn temporary_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    path.with_file_name(format!(".{name}.rsmirror-{}.tmp", std::process::id()))
}
