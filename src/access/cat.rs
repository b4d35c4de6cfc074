//! `rsmirror cat`: the bytes of one state of a resource, exactly as fetched, re-hashed as they
//! stream. To a file (`-o`) they go under a temporary name that is renamed into place only
//! once the bytes match the catalog; to stdout a mismatch is reported on stderr and by the
//! exit code (1), the bytes having gone out already.

use crate::access::{check, copy_hashing, open_object, state_at, Point, Reader, VersionRow, When};
use crate::error::{Error, UsageError};
use crate::store::{history, StoreError};
use std::io;
use std::path::{Path, PathBuf};

pub struct Options {
    pub url: String,
    pub at: Option<When>,
    pub version: Option<i64>,
    pub output: Option<PathBuf>,
}

pub(crate) fn run(mirror: &Path, o: &Options) -> Result<(), Error> {
    let reader = Reader::open(mirror)?;
    let (resource_id, uri) = reader.resource(&o.url)?;
    let v = choose(&reader, resource_id, &uri, o)?;
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
    let (mut file, object) = open_object(reader.objects()?, &uri, &v)?;
    let mut buf = vec![0u8; crate::access::COPY_BUFFER];
    match &o.output {
        None => {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let got = copy_hashing(&mut file, &mut out, &mut buf, &object, Path::new("stdout"))?;
            check(&uri, &v, &got)
        }
        Some(path) if path.as_os_str() == "-" => {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let got = copy_hashing(&mut file, &mut out, &mut buf, &object, Path::new("stdout"))?;
            check(&uri, &v, &got)
        }
        Some(path) => {
            let tmp = temporary_name(path);
            let result = (|| {
                let mut dest = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(|e| StoreError::io("creating", &tmp, e))?;
                let got = copy_hashing(&mut file, &mut dest, &mut buf, &object, &tmp)?;
                check(&uri, &v, &got)?;
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
    }
}

/// The state `cat` shows: `--version`, the state at `--at`, or the current one; a state
/// without bytes (deleted, or not yet there) is a usage error that says when.
fn choose(reader: &Reader, resource_id: i64, uri: &str, o: &Options) -> Result<VersionRow, Error> {
    if let Some(id) = o.version {
        let found = history::version(reader.catalog(), id)?;
        return match found {
            None => Err(UsageError(format!(
                "--version {id}: the mirror has no version {id} (rsmirror log {uri} lists its versions)"
            ))
            .into()),
            Some((_, other)) if other != uri => Err(UsageError(format!(
                "--version {id} is a version of {other}, not of {uri} (rsmirror log {uri} lists its versions)"
            ))
            .into()),
            Some((v, _)) if v.deleted() => Err(UsageError(format!(
                "--version {id} is the deletion of {uri} by {}: it has no bytes",
                reader.describe_run(v.run)
            ))
            .into()),
            Some((v, _)) => Ok(v),
        };
    }
    let point = reader.point(o.at.as_ref())?;
    if let Some(note) = reader.in_progress_note(o.at.as_ref()) {
        note!("rsmirror: {note}");
    }
    match state_at(reader, resource_id, point)? {
        None => Err(UsageError(format!(
            "{uri} was not in the mirror yet {}; {}",
            reader.describe_point(point),
            first_arrival(reader, resource_id)?
        ))
        .into()),
        Some(v) if v.deleted() => {
            let before = state_before(reader, resource_id, v.version)?;
            let hint = match before {
                Some(b) => format!(
                    "; its last state before: rsmirror cat {uri} --version {}",
                    b.version
                ),
                None => String::new(),
            };
            let when = if point == Point::NOW {
                String::new()
            } else {
                format!(" (looking at the mirror {})", reader.describe_point(point))
            };
            Err(UsageError(format!(
                "{uri} was deleted by {} (version {}){when}{hint}",
                reader.describe_run(v.run),
                v.version
            ))
            .into())
        }
        Some(v) => Ok(v),
    }
}

fn first_arrival(reader: &Reader, resource_id: i64) -> Result<String, StoreError> {
    let first = history::first_version(reader.catalog(), resource_id)?;
    Ok(match first {
        Some((id, run)) => format!(
            "its first state (version {id}) arrived with {}",
            reader.describe_run(run)
        ),
        None => "it has no versions".into(),
    })
}

/// The newest state before a version that has bytes.
fn state_before(
    reader: &Reader,
    resource_id: i64,
    version: i64,
) -> Result<Option<VersionRow>, StoreError> {
    history::state_before(reader.catalog(), resource_id, version)
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
