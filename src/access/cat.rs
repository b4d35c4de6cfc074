//! `cat`: which state of a resource to give ([`choose`]), and its bytes exactly as fetched,
//! re-hashed as they stream ([`Object`]): the bytes that went out are checked against the
//! catalog at their end, and a damaged object is an error naming it. Where the bytes go is the
//! caller's: `commands::cat` writes them to stdout or a file, `serve` to a response.

use crate::access::{check, copy_hashing, open_object, state_at, Point, Reader, VersionRow, When};
use crate::error::{Error, UsageError};
use crate::store::{history, StoreError};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Which state: `version` (a version id), else the state at `at`, else the current one.
pub struct Query {
    pub url: String,
    pub at: Option<When>,
    pub version: Option<i64>,
}

/// The state chosen, with the note a person shown it needs (a run still under way).
pub struct Chosen {
    pub uri: String,
    pub version: VersionRow,
    pub note: Option<String>,
}

/// The state `cat` shows: `--version`, the state at `--at`, or the current one; a state
/// without bytes (deleted, or not yet there) is a usage error that says when.
pub(crate) fn choose(reader: &Reader, q: &Query) -> Result<Chosen, Error> {
    let (resource_id, uri) = reader.resource(&q.url)?;
    let note = match q.version {
        Some(_) => None,
        None => reader.in_progress_note(q.at.as_ref()),
    };
    let version = choose_version(reader, resource_id, &uri, q)?;
    Ok(Chosen { uri, version, note })
}

/// The bytes of one state, open: read them through [`Object::copy_to`] (hashed, then checked)
/// or as a [`Verified`] reader.
pub struct Object {
    file: std::fs::File,
    path: PathBuf,
    uri: String,
    version: VersionRow,
}

impl Object {
    /// The object of a state with bytes; a missing object is damage (exit 1), naming the URI.
    pub(crate) fn open(reader: &Reader, uri: &str, v: &VersionRow) -> Result<Object, Error> {
        let (file, path) = open_object(reader.objects()?, uri, v)?;
        Ok(Object {
            file,
            path,
            uri: uri.to_string(),
            version: v.clone(),
        })
    }

    /// Copy the bytes to `to` (named `dest` in errors) through `buf`, hashing them on the way;
    /// bytes that do not match the catalog are an error once they have gone (a reader that went
    /// away before the end, `cat | head`, is not).
    pub(crate) fn copy_to(
        &mut self,
        to: &mut impl Write,
        dest: &Path,
        buf: &mut [u8],
    ) -> Result<(), Error> {
        let got = copy_hashing(&mut self.file, to, buf, &self.path, dest)?;
        check(&self.uri, &self.version, &got)
    }

    /// The bytes as a reader that hashes them and, at their end, fails with the damage instead
    /// of saying "end" when they do not match the catalog ([`Verified`]).
    pub(crate) fn verified(self) -> Verified {
        Verified {
            object: self,
            hasher: Sha256::new(),
            length: 0,
            failed: None,
        }
    }
}

/// An object's bytes, hashed as they are read; the end of the bytes is only reported once they
/// matched the catalog. A damaged object ends in an error (its message names the object and
/// what the catalog records): a caller that holds back the last bytes until the end never hands
/// out a whole damaged copy.
pub struct Verified {
    object: Object,
    hasher: Sha256,
    length: u64,
    failed: Option<String>,
}

impl Verified {
    /// The damage found at the end, if any (the error a read returned, as [`Error::Damaged`]).
    pub(crate) fn damage(&self) -> Option<Error> {
        self.failed.clone().map(Error::Damaged)
    }
}

impl Read for Verified {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(f) = &self.failed {
            return Err(io::Error::new(io::ErrorKind::InvalidData, f.clone()));
        }
        let n = self.object.file.read(buf)?;
        if n > 0 {
            self.hasher.update(&buf[..n]);
            self.length += n as u64;
            return Ok(n);
        }
        let got = crate::access::Got {
            sha256: hex::encode(self.hasher.clone().finalize()),
            length: self.length,
        };
        match check(&self.object.uri, &self.object.version, &got) {
            Ok(()) => Ok(0),
            Err(e) => {
                let text = e.to_string();
                self.failed = Some(text.clone());
                Err(io::Error::new(io::ErrorKind::InvalidData, text))
            }
        }
    }
}

fn choose_version(
    reader: &Reader,
    resource_id: i64,
    uri: &str,
    o: &Query,
) -> Result<VersionRow, Error> {
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
