//! The mirror on disk: the SQLite catalog, the content-addressed object store, the staging
//! folder and the lock. Nothing here knows about HTTP or ResourceSync syntax.

/// The SQLite library the catalog is written with (`sqlite3_libversion`).
pub fn sqlite_version() -> &'static str {
    rusqlite::version()
}

pub mod arc_records;
pub(crate) mod audit_records;
pub mod bucket;
pub mod catalog;
pub(crate) mod change_history;
mod columns;
pub mod copies;
pub(crate) mod fixity_claims;
pub(crate) mod harvests;
pub(crate) mod health;
pub(crate) mod history;
pub mod kill;
pub(crate) mod lacking;
pub mod listing;
pub mod lock;
pub mod migrate;
pub(crate) mod mirror_settings;
pub(crate) mod mirror_summary;
pub mod new_file;
pub mod objects;
pub(crate) mod presence;
pub(crate) mod provenance;
pub mod rows;
pub(crate) mod run_records;
pub mod schema;
pub mod scp_catalog;
pub(crate) mod scp_pages;
pub(crate) mod seal;
pub(crate) mod source_metadata;
pub(crate) mod space;
pub(crate) mod state_shares;
pub(crate) mod subscriptions;
pub(crate) mod timeline;
pub mod tx;
pub(crate) mod wal;
pub mod writer;

pub use catalog::Catalog;
pub use history::remembered_maps;
pub use lock::MirrorLock;
pub use objects::ObjectStore;

use std::path::Path;

/// The catalog or the object store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("catalog: {0}{hint}", hint = damage_hint(.0))]
    Sqlite(#[from] rusqlite::Error),
    #[error("catalog {path}: {source}{hint}", hint = damage_hint(source))]
    SqliteAt {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "catalog {path} has schema version {found}; this rsmirror reads version {expected}{hint}"
    )]
    Schema {
        path: String,
        found: i64,
        expected: i64,
        hint: &'static str,
    },
    /// Upgrading an older mirror stopped (nothing was changed by the step that stopped).
    #[error("upgrading the mirror's catalog to schema version {version}: {0}", version = crate::store::catalog::SCHEMA_VERSION)]
    Migration(String),
    #[error("no mirror at {path}: run rsmirror baseline first")]
    Missing { path: String },
    /// The catalog failed the check made before it is trusted (`store::seal`): nothing was
    /// written.
    #[error("the catalog {path} is damaged: {what}; nothing was written.{RECOVERY}")]
    Damaged { path: String, what: String },
    /// A reader found the catalog of a mirror whose first run has not yet made its tables.
    #[error("the mirror's catalog {path} is being made by its first run: try again when that run has ended")]
    Creating { path: String },
    #[error(
        "the file system of the mirror {path} is full ({message}); the run stopped at the first \
         resource that did not fit{needed}: free space there and run it again (a re-run is safe: \
         what landed stays)"
    )]
    NoSpace {
        path: String,
        message: String,
        /// ", about N bytes more for what this run had left to fetch", when known.
        needed: String,
    },
    /// The object store (or another folder of the mirror) refuses writes: a read-only mount,
    /// permissions. Every other resource would fail the same way, so the run stops at once.
    #[error(
        "cannot write to {path} ({message}); the run stopped at the first resource that could not \
         be stored: make it writable (a read-only mount? permissions?) and run it again (a re-run \
         is safe: what landed stays)"
    )]
    Unwritable { path: String, message: String },
    /// The file system an export writes to is full.
    #[error(
        "the file system of the export destination {dest} is full ({message}); {state}: free \
         space there and run the same export again (it finishes what is missing)"
    )]
    DestFull {
        dest: String,
        message: String,
        /// Whether DEST is marked incomplete, or nothing of the export is there yet.
        state: String,
    },
    /// The bucket the objects are in cannot be used (no credentials, no such bucket, refused).
    #[error("the mirror's objects in {url}: {message}")]
    Bucket { url: String, message: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What to do about a damaged catalog, said after every error that finds one.
pub(crate) const RECOVERY: &str = " `rsmirror catalog check` names the damage; `rsmirror \
     catalog restore` puts back the newest good copy (catalog-copies/, made after every run that \
     wrote) and finds again what happened after it (rsmirror help catalog-health: \"When the \
     catalog is damaged\")";

/// [`RECOVERY`] after an SQLite error that says the file is damaged (SQLITE_CORRUPT,
/// SQLITE_NOTADB).
fn damage_hint(e: &rusqlite::Error) -> &'static str {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => RECOVERY,
        _ => "",
    }
}

/// What a catalog error says of the disk under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskSign {
    /// SQLITE_FULL: the file system is full.
    Full,
    /// SQLITE_IOERR: what SQLite also says when its journal cannot grow; full only if the
    /// file system has no room left.
    IoError,
}

impl StoreError {
    /// An error that says the catalog may be damaged (SQLite's "malformed" or "not a
    /// database", or the check before a write).
    pub(crate) fn is_damage(&self) -> bool {
        match self {
            StoreError::Damaged { .. } => true,
            StoreError::Sqlite(e) | StoreError::SqliteAt { source: e, .. } => {
                !damage_hint(e).is_empty()
            }
            _ => false,
        }
    }

    /// For an error of the catalog: what it says of the disk, and SQLite's words.
    pub(crate) fn disk_sign(&self) -> Option<(DiskSign, String)> {
        let sqlite = match self {
            StoreError::Sqlite(s) | StoreError::SqliteAt { source: s, .. } => s,
            _ => return None,
        };
        let sign = match sqlite.sqlite_error_code()? {
            rusqlite::ErrorCode::DiskFull => DiskSign::Full,
            rusqlite::ErrorCode::SystemIoFailure => DiskSign::IoError,
            _ => return None,
        };
        Some((sign, sqlite.to_string()))
    }

    pub(crate) fn sqlite(path: &Path, source: rusqlite::Error) -> StoreError {
        StoreError::SqliteAt {
            path: path.display().to_string(),
            source,
        }
    }

    /// A catalog of another schema version than this build's.
    pub(crate) fn schema(path: &Path, found: i64) -> StoreError {
        let expected = crate::store::catalog::SCHEMA_VERSION;
        StoreError::Schema {
            path: path.display().to_string(),
            found,
            expected,
            hint: if (1..expected).contains(&found) {
                " (an older mirror: one run of baseline, incremental or audit upgrades it)"
            } else {
                ""
            },
        }
    }

    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io {
            what,
            path: path.display().to_string(),
            source,
        }
    }
}
