//! One dump package, opened and read as hostile input (ResourceSync 1.1 §9; our spec notes §6,
//! §9, §13): a ZIP file with `manifest.xml` at its root, whose manifest names one bitstream per
//! `<url>` by `path`.
//!
//! It owns: telling the package format from its first bytes (ZIP is read; xz, gzip, tar and
//! the rest are reported as unsupported, never guessed at), the archive-wide safety checks
//! done before anything is read (entry names, symbolic links, duplicate names, expansion caps
//! derived from the package size), reading the manifest with the Sitemap reader, selecting the
//! entry each manifest path names ([`crate::rs::manifest_path`]), and streaming one bitstream
//! into a new file under a caller-given staging folder while hashing it, with the entry's
//! declared size and CRC enforced while reading and the manifest's length and digests checked
//! at the end.
//!
//! Two kinds of failure are kept apart. A [`DumpError`] refuses the whole package: nothing
//! staged from it may be committed (the commands discard what they staged; [`Package::stage_all`]
//! does it for them). An [`EntryError`] fails one resource, the others still land. Entries of
//! the archive that the manifest does not name are listed by [`Package::extras`] and never read.
//!
//! It leaves to others: downloading the package and checking it against the dump's length and
//! hash (the network layer), where a staged file goes and what it is called (the object store,
//! keyed by sha-256), the catalog, and what the manifest's order and times mean (the commands).
//! No name from the package ever becomes a file-system path: an entry is selected by name, its
//! bytes land in `<staging>/<pid>-<n>.part` ([`NewFile`]).

use crate::rs::digest::{mismatches, Algorithm, Computed, Digest, Hasher};
use crate::rs::document::{Capability, Change, Header, Root, Warning};
use crate::rs::manifest_path::{
    check_entry_name, check_entry_name_bytes, resolve_manifest_path, PathError,
};
use crate::rs::sitemap::{self, ReadError, ReadOptions};
use crate::store::new_file::NewFile;
use jiff::Timestamp;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use url::Url;
use zip::read::ZipFile;
use zip::{CompressionMethod, ZipArchive, ZipReadOptions};

/// The manifest's name: exactly this, at the top level of the package (ResourceSync 1.1 §6).
pub const MANIFEST_NAME: &str = "manifest.xml";

/// Bytes [`PackageFormat::sniff`] looks at (tar's `ustar` magic sits at offset 257).
pub const SNIFF_LEN: usize = 512;

const READ_BUFFER: usize = 64 * 1024;
/// Buffer under the archive: the central directory is read in small pieces.
const ARCHIVE_BUFFER: usize = 16 * 1024;

/// A package format, told by magic bytes, never by URL or media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageFormat {
    /// `50 4B 03 04`: a local file header.
    Zip,
    /// `50 4B 05 06`: an end-of-central-directory record alone, a ZIP without entries.
    EmptyZip,
    /// `FD 37 7A 58 5A 00` (CORE publishes `.tar.xz` packages).
    Xz,
    /// `1F 8B`.
    Gzip,
    /// `42 5A 68` (`BZh`).
    Bzip2,
    /// `28 B5 2F FD`.
    Zstd,
    /// `37 7A BC AF 27 1C`.
    SevenZip,
    /// `ustar` at offset 257.
    Tar,
    /// `WARC/` (the 2012 draft's alternative dump format).
    Warc,
    /// A file of zero bytes.
    Empty,
    Unknown,
}

impl PackageFormat {
    /// The format of a file starting with `head` (pass at least [`SNIFF_LEN`] bytes when the
    /// file has them).
    pub fn sniff(head: &[u8]) -> PackageFormat {
        const MAGIC: &[(&[u8], PackageFormat)] = &[
            (b"PK\x03\x04", PackageFormat::Zip),
            (b"PK\x05\x06", PackageFormat::EmptyZip),
            (b"\xFD7zXZ\x00", PackageFormat::Xz),
            (b"\x1F\x8B", PackageFormat::Gzip),
            (b"BZh", PackageFormat::Bzip2),
            (b"\x28\xB5\x2F\xFD", PackageFormat::Zstd),
            (b"7z\xBC\xAF\x27\x1C", PackageFormat::SevenZip),
            (b"WARC/", PackageFormat::Warc),
        ];
        if head.is_empty() {
            return PackageFormat::Empty;
        }
        if let Some((_, f)) = MAGIC.iter().find(|(m, _)| head.starts_with(m)) {
            return *f;
        }
        if head.len() >= 262 && &head[257..262] == b"ustar" {
            return PackageFormat::Tar;
        }
        PackageFormat::Unknown
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            PackageFormat::Zip => "ZIP",
            PackageFormat::EmptyZip => "ZIP (no entries)",
            PackageFormat::Xz => "xz",
            PackageFormat::Gzip => "gzip",
            PackageFormat::Bzip2 => "bzip2",
            PackageFormat::Zstd => "zstd",
            PackageFormat::SevenZip => "7z",
            PackageFormat::Tar => "tar",
            PackageFormat::Warc => "WARC",
            PackageFormat::Empty => "empty file",
            PackageFormat::Unknown => "unknown format",
        }
    }

    /// Only ZIP is read (ResourceSync 1.1 §9: the default and recommended format).
    pub(crate) fn is_supported(self) -> bool {
        matches!(self, PackageFormat::Zip | PackageFormat::EmptyZip)
    }

    /// The name and the first bytes, for an error message.
    fn describe(self, head: &[u8]) -> String {
        let shown: Vec<String> = head.iter().take(8).map(|b| format!("{b:02X}")).collect();
        if shown.is_empty() {
            self.name().to_string()
        } else {
            format!("{} (starts {})", self.name(), shown.join(" "))
        }
    }
}

/// Caps on how far a package may expand (zip bombs), derived from its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DumpLimits {
    /// Largest accepted ratio of expanded to compressed bytes, per entry (against its
    /// compressed size) and in total (against the package size).
    pub max_ratio: u64,
    /// Every entry may expand to this many bytes whatever its ratio, and so may the package:
    /// small files compress unpredictably.
    pub min_cap_bytes: u64,
}

impl Default for DumpLimits {
    fn default() -> Self {
        DumpLimits {
            max_ratio: 100,
            min_cap_bytes: 1 << 20,
        }
    }
}

impl DumpLimits {
    /// The most one entry of `compressed_bytes` may expand to.
    pub(crate) fn entry_cap(&self, compressed_bytes: u64) -> u64 {
        self.max_ratio
            .saturating_mul(compressed_bytes)
            .max(self.min_cap_bytes)
    }

    /// The most all entries of a package of `package_bytes` may expand to together.
    pub(crate) fn total_cap(&self, package_bytes: u64) -> u64 {
        self.max_ratio
            .saturating_mul(package_bytes)
            .max(self.min_cap_bytes)
    }
}

/// One `<url>` of the manifest: one bitstream (or, in a Change Dump, one deletion).
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestItem {
    /// Line of the `<url>` in `manifest.xml`.
    pub line: u64,
    /// The URI the source associates with the bitstream: where it is stored in the mirror.
    pub loc: Url,
    pub lastmod: Option<Timestamp>,
    pub change: Option<Change>,
    pub datetime: Option<Timestamp>,
    /// Declared length in bytes.
    pub length: Option<u64>,
    pub hash: Vec<Digest>,
    pub media_type: Option<String>,
    /// `encoding=`: the bitstream is stored encoded, as the source would serve it.
    pub encoding: Option<String>,
    /// `path` as written (the 2012 `<rs:path>` arrives with a `/` prepended).
    pub path: Option<String>,
    /// The ZIP entry `path` selects; `None` without a path.
    pub entry_name: Option<String>,
    /// Index of that entry in the archive; `None` when the package lacks it.
    zip_index: Option<usize>,
}

impl ManifestItem {
    /// `change="deleted"` (Change Dump Manifest): no bitstream.
    pub fn is_deleted(&self) -> bool {
        self.change == Some(Change::Deleted)
    }

    /// Event time: `datetime`, else `lastmod`.
    pub fn event_time(&self) -> Option<Timestamp> {
        self.datetime.or(self.lastmod)
    }

    /// True when the manifest names an entry that the package does not hold.
    pub fn is_missing(&self) -> bool {
        !self.is_deleted() && self.entry_name.is_some() && self.zip_index.is_none()
    }
}

/// A bitstream written to staging, hashed and verified against the manifest; not yet in the
/// object store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedBitstream {
    /// A new file under the staging folder, named by us.
    pub path: PathBuf,
    pub computed: Computed,
    /// The ZIP entry it was read from.
    pub entry_name: String,
}

/// How the data of an entry disagreed with the size its header declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeFound {
    /// More bytes than declared; reading stopped one byte past the declared size.
    Longer,
    /// The data ended after this many bytes.
    Shorter(u64),
}

impl fmt::Display for SizeFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeFound::Longer => f.write_str("the data is longer (reading stopped there)"),
            SizeFound::Shorter(n) => write!(f, "the data ends after {n} bytes"),
        }
    }
}

/// The package is refused: nothing from it may be committed.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("{package}: cannot read the package file {}: {source}", path.display())]
    Io {
        package: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{package}: unsupported package format: {detected}; only ZIP packages are read")]
    UnsupportedFormat { package: String, detected: String },
    #[error("{package}: not a readable ZIP archive: {message}")]
    NotZip { package: String, message: String },
    #[error("{package}: no {MANIFEST_NAME} at the package root")]
    MissingManifest { package: String },
    #[error("{package}: {MANIFEST_NAME} cannot be read: {reason}")]
    UnreadableManifest { package: String, reason: String },
    #[error("{source}")]
    Manifest {
        package: String,
        #[source]
        source: Box<ReadError>,
    },
    #[error("{package}: {MANIFEST_NAME} is a <sitemapindex>, not a <urlset>")]
    ManifestIsIndex { package: String },
    #[error(
        "{package}: {MANIFEST_NAME} has capability {found:?}, not resourcedump-manifest or changedump-manifest"
    )]
    WrongCapability { package: String, found: String },
    #[error("{package}: {MANIFEST_NAME} line {line} ({loc}): path {path:?} refused: {reason}")]
    UnsafeManifestPath {
        package: String,
        line: u64,
        loc: String,
        path: String,
        reason: PathError,
    },
    #[error("{package}: entry {entry:?} refused: {reason}")]
    UnsafeEntryName {
        package: String,
        entry: String,
        reason: PathError,
    },
    #[error("{package}: entry {entry:?} refused: symbolic link")]
    SymlinkEntry { package: String, entry: String },
    #[error("{package}: entry {entry:?} refused: the name occurs more than once")]
    DuplicateEntry { package: String, entry: String },
    #[error(
        "{package}: entry {entry:?} refused: declares {declared} bytes from {compressed} compressed, over the {cap}-byte cap (zip bomb?)"
    )]
    EntryTooLarge {
        package: String,
        entry: String,
        declared: u64,
        compressed: u64,
        cap: u64,
    },
    #[error(
        "{package}: refused: entries expand to {total} bytes, over the {cap}-byte cap for a {package_bytes}-byte package (zip bomb?)"
    )]
    PackageTooLarge {
        package: String,
        total: u64,
        cap: u64,
        package_bytes: u64,
    },
    #[error(
        "{package}: entry {entry:?} refused: its header declares {declared} bytes but {found}"
    )]
    SizeMismatch {
        package: String,
        entry: String,
        declared: u64,
        found: SizeFound,
    },
    #[error("{package}: entry {entry:?} refused: {message}")]
    BrokenEntry {
        package: String,
        entry: String,
        message: String,
    },
    #[error("{package}: refused by an earlier error; nothing from it may be committed")]
    Refused { package: String },
}

impl DumpError {
    /// The package, as given to [`Package::open`].
    pub fn package(&self) -> &str {
        match self {
            DumpError::Io { package, .. }
            | DumpError::UnsupportedFormat { package, .. }
            | DumpError::NotZip { package, .. }
            | DumpError::MissingManifest { package }
            | DumpError::UnreadableManifest { package, .. }
            | DumpError::Manifest { package, .. }
            | DumpError::ManifestIsIndex { package }
            | DumpError::WrongCapability { package, .. }
            | DumpError::UnsafeManifestPath { package, .. }
            | DumpError::UnsafeEntryName { package, .. }
            | DumpError::SymlinkEntry { package, .. }
            | DumpError::DuplicateEntry { package, .. }
            | DumpError::EntryTooLarge { package, .. }
            | DumpError::PackageTooLarge { package, .. }
            | DumpError::SizeMismatch { package, .. }
            | DumpError::BrokenEntry { package, .. }
            | DumpError::Refused { package } => package,
        }
    }
}

/// One resource of the package failed; the others may still land.
#[derive(Debug, thiserror::Error)]
#[error("{package}: {MANIFEST_NAME} line {line} ({loc}): {kind}")]
pub struct EntryError {
    pub package: String,
    /// Line of the `<url>` in the manifest.
    pub line: u64,
    pub loc: String,
    pub kind: EntryErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum EntryErrorKind {
    #[error("no path (only deletions may lack one)")]
    NoPath,
    #[error("bitstream {entry:?} is not in the package")]
    Missing { entry: String },
    #[error("entry {entry:?}: {what} is not supported")]
    Unsupported { entry: String, what: String },
    #[error("entry {entry:?}: CRC-32 mismatch: header {expected:08x}, data {actual:08x}")]
    Crc {
        entry: String,
        expected: u32,
        actual: u32,
    },
    #[error("entry {entry:?}: corrupt data: {message}")]
    Corrupt { entry: String, message: String },
    #[error(
        "length mismatch: the manifest declares {expected} bytes, entry {entry:?} holds {actual}"
    )]
    LengthMismatch {
        entry: String,
        expected: u64,
        actual: u64,
    },
    #[error("{algorithm} mismatch: the manifest declares {expected}, entry {entry:?} hashes to {actual}")]
    DigestMismatch {
        entry: String,
        algorithm: String,
        expected: String,
        actual: String,
    },
    #[error("staging {}: {source}", path.display())]
    Staging {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// One manifest entry after staging: the bitstream, nothing (a deletion), or why that
/// resource failed.
pub type EntryResult = Result<Option<StagedBitstream>, EntryError>;

/// Why [`Package::stage`] did not stage a bitstream.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// This resource fails.
    #[error(transparent)]
    Entry(Box<EntryError>),
    /// The package is refused: discard everything staged from it.
    #[error(transparent)]
    Package(Box<DumpError>),
}

/// What the central directory says about one entry (its name aside), read from the ZIP
/// reader's directory when needed ([`entry_of`]): a copy of every entry beside the reader's
/// own was 16 MB for a package of 200,000.
#[derive(Debug, Clone, Copy)]
struct ZipEntry {
    size: u64,
    crc32: u32,
    method: CompressionMethod,
    encrypted: bool,
    is_dir: bool,
}

type Archive = ZipArchive<PackageFile>;

/// The package file, read by position through a buffer of its own. A clone shares the open
/// file and has its own place and buffer; a clone of the archive over it shares the parsed
/// central directory too: the manifest is read as a stream on one while bitstreams are staged
/// from the other, and the directory of a package of 200,000 entries is held once.
struct PackageFile {
    file: std::sync::Arc<File>,
    len: u64,
    pos: u64,
    buf: Box<[u8]>,
    /// Where `buf[..filled]` is in the file.
    buf_at: u64,
    filled: usize,
}

impl PackageFile {
    fn new(file: File, len: u64) -> PackageFile {
        PackageFile {
            file: std::sync::Arc::new(file),
            len,
            pos: 0,
            buf: vec![0u8; ARCHIVE_BUFFER].into_boxed_slice(),
            buf_at: 0,
            filled: 0,
        }
    }

    fn read_at(&self, out: &mut [u8], at: u64) -> io::Result<usize> {
        #[cfg(unix)]
        return std::os::unix::fs::FileExt::read_at(&*self.file, out, at);
        #[cfg(windows)]
        return std::os::windows::fs::FileExt::seek_read(&*self.file, out, at);
    }
}

impl Clone for PackageFile {
    fn clone(&self) -> PackageFile {
        PackageFile {
            file: self.file.clone(),
            len: self.len,
            pos: self.pos,
            buf: vec![0u8; self.buf.len()].into_boxed_slice(),
            buf_at: 0,
            filled: 0,
        }
    }
}

impl Read for PackageFile {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let end = self.buf_at + self.filled as u64;
        if !(self.buf_at..end).contains(&self.pos) {
            if out.len() >= self.buf.len() {
                // A large read goes straight to the file.
                let n = self.read_at(out, self.pos)?;
                self.pos += n as u64;
                return Ok(n);
            }
            let mut buf = std::mem::take(&mut self.buf);
            let filled = self.read_at(&mut buf, self.pos);
            self.buf = buf;
            self.filled = filled?;
            self.buf_at = self.pos;
        }
        let from = (self.pos - self.buf_at) as usize;
        let n = out.len().min(self.filled - from);
        out[..n].copy_from_slice(&self.buf[from..from + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for PackageFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        };
        self.pos = pos
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

/// An opened, checked package: the archive and, unless opened to be streamed
/// ([`Package::open_streamed`]), its parsed manifest.
pub struct Package {
    bits: Bitstreams,
    /// The manifest's entry in the archive.
    manifest_index: usize,
    doc_url: Url,
    read: ReadOptions,
    /// Once the manifest was read.
    header: Option<Header>,
    items: Vec<ManifestItem>,
    extras: Vec<String>,
    warnings: Vec<Warning>,
}

/// The side of a package that stages bitstreams: the archive, its entries, and what staging
/// has expanded so far. [`Package::stream`] hands it to each manifest entry.
pub struct Bitstreams {
    label: String,
    package_bytes: u64,
    archive: Archive,
    names: NameIndex,
    total_cap: u64,
    /// Bytes actually expanded so far, each entry counted once.
    expanded: u64,
    counted: Vec<bool>,
    /// A package error was found while staging: every later call fails too.
    refused: bool,
    /// The copy buffer, reused for every entry.
    buf: Vec<u8>,
}

impl fmt::Debug for Package {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Package")
            .field("package", &self.bits.label)
            .field("package_bytes", &self.bits.package_bytes)
            .field("entries", &self.items.len())
            .field("extras", &self.extras.len())
            .field("refused", &self.bits.refused)
            .finish()
    }
}

impl Package {
    /// Open the package file at `path`, downloaded from `package_url` (which names it in
    /// every error, and against which relative `<loc>`s resolve), check the archive as a
    /// whole and read its manifest. Nothing is decompressed but `manifest.xml`.
    pub fn open(
        path: &Path,
        package_url: &Url,
        limits: DumpLimits,
        read: ReadOptions,
    ) -> Result<Package, DumpError> {
        let mut package = Package::open_streamed(path, package_url, limits, read)?;
        let mut items = Vec::new();
        let handed = package.stream(|_, item, _| {
            items.push(item);
            Ok::<(), std::convert::Infallible>(())
        })?;
        let Ok(()) = handed;
        items.shrink_to_fit();
        package.items = items;
        Ok(package)
    }

    /// [`Package::open`] without reading the manifest: the archive is checked as a whole, and
    /// the manifest is read entry by entry by [`Package::stream`] (as often as needed), never
    /// held. `entries()` is empty.
    pub fn open_streamed(
        path: &Path,
        package_url: &Url,
        limits: DumpLimits,
        read: ReadOptions,
    ) -> Result<Package, DumpError> {
        let label = package_url.as_str().to_string();
        let (archive, package_bytes) = open_archive(path, &label)?;
        let (names, declared) = check_entries(&archive, &label, limits)?;
        let total_cap = check_total(declared, limits, package_bytes, &label)?;
        let Some(manifest_index) = names.find(&archive, MANIFEST_NAME) else {
            return Err(DumpError::MissingManifest { package: label });
        };
        let mut doc_url = package_url.clone();
        doc_url.set_fragment(Some(MANIFEST_NAME));
        let counted = vec![false; archive.len()];
        Ok(Package {
            bits: Bitstreams {
                label,
                package_bytes,
                archive,
                names,
                total_cap,
                expanded: 0,
                counted,
                refused: false,
                buf: vec![0u8; READ_BUFFER],
            },
            manifest_index,
            doc_url,
            read,
            header: None,
            items: Vec::new(),
            extras: Vec::new(),
            warnings: Vec::new(),
        })
    }

    /// Read `manifest.xml` through the same bounded entry reader as any bitstream, checking
    /// its capability and every path, and hand each `<url>` in order to `each`, with its place
    /// in the manifest and the package's bitstreams (to stage from while the manifest is
    /// read). Afterwards the header, the warnings and the extras are the manifest's. A package
    /// the manifest refuses is the outer error (entries handed on before it must be dropped);
    /// `each`'s error stops the reading and is the inner one.
    pub fn stream<E>(
        &mut self,
        mut each: impl FnMut(usize, ManifestItem, &mut Bitstreams) -> Result<(), E>,
    ) -> Result<Result<(), E>, DumpError> {
        let bits = &mut self.bits;
        let label = bits.label.clone();
        let unreadable = |reason: String| DumpError::UnreadableManifest {
            package: label.clone(),
            reason,
        };
        let meta = entry_of(&bits.archive, self.manifest_index);
        if let Some(what) = unsupported(&meta) {
            return Err(unreadable(format!("{what} is not supported")));
        }
        // A second handle on the archive (its directory shared): the manifest streams from
        // it while `each` stages from the first.
        let mut manifest_archive = bits.archive.clone();
        let mut reader = EntryReader::open(&mut manifest_archive, self.manifest_index, &meta)
            .map_err(|message| DumpError::BrokenEntry {
                package: label.clone(),
                entry: MANIFEST_NAME.into(),
                message,
            })?;
        let mut referenced = vec![false; bits.archive.len()];
        referenced[self.manifest_index] = true;
        let parsed = parse_manifest(
            &mut reader,
            &self.doc_url,
            self.read,
            bits,
            &mut referenced,
            &mut each,
        );
        // Read to the end so that the size and CRC are checked even past `</urlset>`.
        if matches!(parsed, Ok((_, _, Ok(())))) {
            let _ = io::copy(&mut reader, &mut io::sink());
        }
        match reader.fault.take() {
            None => {}
            Some(Fault::Size(found)) => {
                return Err(DumpError::SizeMismatch {
                    package: label.clone(),
                    entry: MANIFEST_NAME.into(),
                    declared: meta.size,
                    found,
                })
            }
            Some(Fault::Crc { expected, actual }) => {
                return Err(unreadable(format!(
                    "CRC-32 mismatch: header {expected:08x}, data {actual:08x}"
                )))
            }
            Some(Fault::Corrupt(message)) => {
                return Err(unreadable(format!("corrupt data: {message}")))
            }
        }
        let (header, warnings, handed) = parsed?;
        self.header = Some(header);
        self.warnings = warnings;
        self.extras = unlisted_entries(&self.bits.archive, &referenced);
        Ok(handed)
    }

    /// The manifest's header: capability, `at`/`completed` or `from`/`until`, links.
    ///
    /// Panics when the manifest has not been read: a package opened by
    /// [`Package::open_streamed`] has a header once [`Package::stream`] read it.
    pub fn manifest_header(&self) -> &Header {
        self.header
            .as_ref()
            .expect("the manifest is read before its header is asked for")
    }

    /// The manifest's `<url>`s, in manifest order (a Change Dump's order of application;
    /// several bitstreams for one URI stay in that order).
    pub fn entries(&self) -> &[ManifestItem] {
        &self.items
    }

    /// Entries of the archive that the manifest does not name (directories and
    /// `manifest.xml` aside), in archive order: ignored, to be reported.
    pub fn extras(&self) -> &[String] {
        &self.extras
    }

    /// What the Sitemap reader tolerated in `manifest.xml`.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// True once a package error was found while staging.
    pub fn is_refused(&self) -> bool {
        self.bits.refused
    }

    /// Stream the bitstream of manifest entry `index` into a new file under `staging`,
    /// hashing while writing, and verify it: the entry's declared size and CRC-32 while
    /// reading (more bytes than declared stops the read), then the manifest's `length` and
    /// every usable digest. `Ok(None)` for a deletion (no bitstream).
    ///
    /// On any error the staged file is removed. A [`StageError::Package`] means the package
    /// is refused: the caller must discard everything staged from it, and every later call
    /// fails the same way. So stage every entry before committing any.
    ///
    /// Panics when `index` is not below `entries().len()`.
    pub fn stage(
        &mut self,
        index: usize,
        staging: &Path,
    ) -> Result<Option<StagedBitstream>, StageError> {
        self.bits.stage(&self.items[index], staging)
    }

    /// Stage every manifest entry in order: one result per entry (`Ok(None)` for
    /// deletions). On a package error every file staged so far is removed and the error
    /// returned: nothing from a refused package survives in staging.
    pub fn stage_all(&mut self, staging: &Path) -> Result<Vec<EntryResult>, DumpError> {
        let mut out = Vec::with_capacity(self.items.len());
        for i in 0..self.items.len() {
            match self.stage(i, staging) {
                Ok(s) => out.push(Ok(s)),
                Err(StageError::Entry(e)) => out.push(Err(*e)),
                Err(StageError::Package(e)) => {
                    for staged in out.iter().flatten().flatten() {
                        let _ = std::fs::remove_file(&staged.path);
                    }
                    return Err(*e);
                }
            }
        }
        Ok(out)
    }
}

impl Bitstreams {
    /// True once a package error was found while staging.
    pub fn is_refused(&self) -> bool {
        self.refused
    }

    /// [`Package::stage`] of a manifest entry handed on by [`Package::stream`].
    pub fn stage(
        &mut self,
        item: &ManifestItem,
        staging: &Path,
    ) -> Result<Option<StagedBitstream>, StageError> {
        if self.refused {
            return Err(StageError::Package(Box::new(DumpError::Refused {
                package: self.label.clone(),
            })));
        }
        if item.is_deleted() {
            return Ok(None);
        }
        let (name, zip_index) = self.locate(item)?;
        let (part, computed) = self.copy_out(item, zip_index, &name, staging)?;
        self.check_manifest(item, &name, &computed)?;
        let path = part.describe();
        let path = part
            .keep()
            .map_err(|source| self.entry_error(item, EntryErrorKind::Staging { path, source }))?;
        Ok(Some(StagedBitstream {
            path,
            computed,
            entry_name: name,
        }))
    }

    /// Read the bitstream of a manifest entry through without keeping it, for what
    /// [`Bitstreams::stage`] would find wrong with the package itself (an entry that cannot be
    /// opened, a header that lies about its size, more expanded than the package may hold):
    /// a package can then be refused before anything from it lands. What concerns the entry
    /// alone (no path, missing, a CRC or digest mismatch) is left for staging to report. An
    /// entry read through once is not read again.
    pub fn verify(&mut self, item: &ManifestItem) -> Result<(), DumpError> {
        if self.refused {
            return Err(DumpError::Refused {
                package: self.label.clone(),
            });
        }
        if item.is_deleted() {
            return Ok(());
        }
        let Ok((name, zip_index)) = self.locate(item) else {
            return Ok(());
        };
        if self.counted[zip_index] {
            return Ok(());
        }
        let meta = entry_of(&self.archive, zip_index);
        let buf = &mut self.buf;
        let mut reader = match EntryReader::open(&mut self.archive, zip_index, &meta) {
            Ok(r) => r,
            Err(message) => {
                self.refused = true;
                return Err(DumpError::BrokenEntry {
                    package: self.label.clone(),
                    entry: name,
                    message,
                });
            }
        };
        loop {
            match reader.read(buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let (fault, produced) = (reader.fault.take(), reader.produced);
        drop(reader);
        if let Some(Fault::Size(found)) = fault {
            self.refused = true;
            return Err(DumpError::SizeMismatch {
                package: self.label.clone(),
                entry: name,
                declared: meta.size,
                found,
            });
        }
        match self.count_expanded(zip_index, produced) {
            Err(StageError::Package(e)) => Err(*e),
            _ => Ok(()),
        }
    }

    /// The bitstream of a manifest entry: its path in the package and the index of its zip
    /// entry, when it has a path, the package holds it and it can be read.
    fn locate(&self, item: &ManifestItem) -> Result<(String, usize), StageError> {
        let Some(name) = item.entry_name.clone() else {
            return Err(self.entry_error(item, EntryErrorKind::NoPath));
        };
        let Some(zip_index) = item.zip_index else {
            return Err(self.entry_error(item, EntryErrorKind::Missing { entry: name }));
        };
        if let Some(what) = unsupported(&entry_of(&self.archive, zip_index)) {
            return Err(self.entry_error(item, EntryErrorKind::Unsupported { entry: name, what }));
        }
        Ok((name, zip_index))
    }

    /// Copy zip entry `zip_index` (the bitstream of manifest entry `item`, named `name`) into
    /// a new file under `staging`, hashing while writing. The zip entry's own checks (its
    /// declared size, its CRC-32) and the package's cap on expanded bytes apply on the way; on
    /// an error the new file is dropped, which removes it.
    fn copy_out(
        &mut self,
        item: &ManifestItem,
        zip_index: usize,
        name: &str,
        staging: &Path,
    ) -> Result<(NewFile, Computed), StageError> {
        let with_sha1 = item
            .hash
            .iter()
            .any(|d| d.algorithm == Algorithm::Sha1 && d.is_usable());
        let mut part = NewFile::create_named(staging).map_err(|source| {
            let path = staging.to_path_buf();
            self.entry_error(item, EntryErrorKind::Staging { path, source })
        })?;
        let meta = &entry_of(&self.archive, zip_index);
        let mut reader = match EntryReader::open(&mut self.archive, zip_index, meta) {
            Ok(r) => r,
            Err(message) => {
                self.refused = true;
                return Err(StageError::Package(Box::new(DumpError::BrokenEntry {
                    package: self.label.clone(),
                    entry: name.to_string(),
                    message,
                })));
            }
        };
        let mut hasher = Hasher::new(with_sha1);
        let end = copy_hashing(&mut reader, &mut part, &mut self.buf, &mut hasher);
        // Every read error records its fault; the fallback is for safety only.
        let fault = reader.fault.take().or_else(|| match &end {
            CopyEnd::ReadFailed(e) => Some(Fault::Corrupt(e.to_string())),
            _ => None,
        });
        let produced = reader.produced;
        drop(reader);
        if let Some(fault) = fault {
            return Err(self.fault_error(item, zip_index, name, fault));
        }
        if let CopyEnd::WriteFailed(source) = end {
            let path = part.describe();
            return Err(self.entry_error(item, EntryErrorKind::Staging { path, source }));
        }
        self.count_expanded(zip_index, produced)?;
        Ok((part, hasher.finish()))
    }

    /// What a fault found while reading zip entry `zip_index` means: more or fewer bytes than
    /// its header declares refuse the package (the header lies); a bad CRC-32 or corrupt data
    /// fails the entry.
    fn fault_error(
        &mut self,
        item: &ManifestItem,
        zip_index: usize,
        name: &str,
        fault: Fault,
    ) -> StageError {
        let entry = name.to_string();
        match fault {
            Fault::Size(found) => {
                self.refused = true;
                StageError::Package(Box::new(DumpError::SizeMismatch {
                    package: self.label.clone(),
                    entry,
                    declared: entry_of(&self.archive, zip_index).size,
                    found,
                }))
            }
            Fault::Crc { expected, actual } => self.entry_error(
                item,
                EntryErrorKind::Crc {
                    entry,
                    expected,
                    actual,
                },
            ),
            Fault::Corrupt(message) => {
                self.entry_error(item, EntryErrorKind::Corrupt { entry, message })
            }
        }
    }

    /// Add the bytes zip entry `zip_index` expanded to (once per zip entry) to the package's
    /// total, and refuse the package past its cap. Defence in depth: the per-entry checks
    /// already bound the total.
    fn count_expanded(&mut self, zip_index: usize, produced: u64) -> Result<(), StageError> {
        if self.counted[zip_index] {
            return Ok(());
        }
        self.counted[zip_index] = true;
        self.expanded = self.expanded.saturating_add(produced);
        if self.expanded > self.total_cap {
            self.refused = true;
            return Err(StageError::Package(Box::new(DumpError::PackageTooLarge {
                package: self.label.clone(),
                total: self.expanded,
                cap: self.total_cap,
                package_bytes: self.package_bytes,
            })));
        }
        Ok(())
    }

    /// What was staged for manifest entry `item` against what the manifest says of it: its
    /// `length` and every usable digest.
    fn check_manifest(
        &self,
        item: &ManifestItem,
        name: &str,
        computed: &Computed,
    ) -> Result<(), StageError> {
        if let Some(expected) = item.length {
            if expected != computed.length {
                return Err(self.entry_error(
                    item,
                    EntryErrorKind::LengthMismatch {
                        entry: name.to_string(),
                        expected,
                        actual: computed.length,
                    },
                ));
            }
        }
        if let Some(m) = mismatches(&item.hash, computed).into_iter().next() {
            return Err(self.entry_error(
                item,
                EntryErrorKind::DigestMismatch {
                    entry: name.to_string(),
                    algorithm: m.algorithm.to_string(),
                    expected: m.expected,
                    actual: m.actual,
                },
            ));
        }
        Ok(())
    }

    /// An error of manifest entry `item` alone: the rest of the package stays usable.
    fn entry_error(&self, item: &ManifestItem, kind: EntryErrorKind) -> StageError {
        StageError::Entry(Box::new(EntryError {
            package: self.label.clone(),
            line: item.line,
            loc: item.loc.to_string(),
            kind,
        }))
    }
}

/// Compression or encryption this reader does not handle, if any.
fn unsupported(meta: &ZipEntry) -> Option<String> {
    if meta.encrypted {
        return Some("encryption".into());
    }
    match meta.method {
        CompressionMethod::Stored | CompressionMethod::Deflated => None,
        other => Some(format!("compression method {other:?}")),
    }
}

/// Open the package file at `path` as a ZIP archive (`label` names it in errors), with its
/// size in bytes: refused when its first bytes say it is another format, when it is no ZIP
/// archive, or when two entries have the same name.
fn open_archive(path: &Path, label: &str) -> Result<(Archive, u64), DumpError> {
    let io_err = |source: io::Error| DumpError::Io {
        package: label.to_string(),
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_err)?;
    let package_bytes = file.metadata().map_err(io_err)?.len();
    let mut head = Vec::with_capacity(SNIFF_LEN);
    (&mut file)
        .take(SNIFF_LEN as u64)
        .read_to_end(&mut head)
        .map_err(io_err)?;
    let format = PackageFormat::sniff(&head);
    if !format.is_supported() {
        return Err(DumpError::UnsupportedFormat {
            package: label.to_string(),
            detected: format.describe(&head),
        });
    }
    let archive =
        ZipArchive::new(PackageFile::new(file, package_bytes)).map_err(|e| DumpError::NotZip {
            package: label.to_string(),
            message: e.to_string(),
        })?;
    if archive.has_duplicate_names() {
        // The reader keeps one entry per name; find which name came twice.
        let entry = duplicated_name(path, archive.central_directory_start())
            .ok()
            .flatten()
            .map(|raw| String::from_utf8_lossy(&raw).into_owned())
            .unwrap_or_else(|| "(not recoverable)".into());
        return Err(DumpError::DuplicateEntry {
            package: label.to_string(),
            entry,
        });
    }
    Ok((archive, package_bytes))
}

/// The cap on the bytes a package of `package_bytes` may expand to, when the sizes its entries
/// declare stay under it; else the package is refused before anything is decompressed.
fn check_total(
    total: u64,
    limits: DumpLimits,
    package_bytes: u64,
    label: &str,
) -> Result<u64, DumpError> {
    let total_cap = limits.total_cap(package_bytes);
    if total > total_cap {
        return Err(DumpError::PackageTooLarge {
            package: label.to_string(),
            total,
            cap: total_cap,
            package_bytes,
        });
    }
    Ok(total_cap)
}

/// The files in the package that are not `referenced` (the manifest, and the bitstreams it
/// lists).
fn unlisted_entries(archive: &Archive, referenced: &[bool]) -> Vec<String> {
    referenced
        .iter()
        .enumerate()
        .filter(|&(i, used)| !*used && !entry_of(archive, i).is_dir)
        .map(|(i, _)| name_of(archive, i))
        .collect()
}

/// What the directory says about entry `i` (checked by [`check_entries`] when the package
/// was opened).
fn entry_of(archive: &Archive, i: usize) -> ZipEntry {
    let e = archive
        .by_index_data(i)
        .expect("an entry the package was opened with");
    ZipEntry {
        size: e.size(),
        crc32: e.crc32(),
        method: e.compression(),
        encrypted: e.encrypted(),
        is_dir: e.is_dir(),
    }
}

/// Entry `i`'s name, decoded as [`check_entries`] decoded it.
fn name_of(archive: &Archive, i: usize) -> String {
    archive
        .by_index_data(i)
        .ok()
        .and_then(|e| e.name().ok().map(|n| n.into_owned()))
        .unwrap_or_default()
}

/// The archive-wide checks on every entry of the central directory: names, symbolic links,
/// names that decode alike, and the per-entry expansion cap.
fn check_entries(
    archive: &Archive,
    label: &str,
    limits: DumpLimits,
) -> Result<(NameIndex, u64), DumpError> {
    let mut names = NameIndex::with_capacity(archive.len());
    let mut declared = 0u64;
    for i in 0..archive.len() {
        let e = archive.by_index_data(i).map_err(|e| DumpError::NotZip {
            package: label.to_string(),
            message: e.to_string(),
        })?;
        let raw = e.name_raw();
        let shown = || String::from_utf8_lossy(raw).into_owned();
        let unsafe_name = |reason| DumpError::UnsafeEntryName {
            package: label.to_string(),
            entry: shown(),
            reason,
        };
        check_entry_name_bytes(raw).map_err(unsafe_name)?;
        let name = match e.name() {
            Ok(n) => n.into_owned(),
            Err(err) => {
                return Err(DumpError::NotZip {
                    package: label.to_string(),
                    message: format!("entry {:?}: {err}", shown()),
                })
            }
        };
        let is_dir = e.is_dir();
        check_entry_name(&name, is_dir).map_err(unsafe_name)?;
        // Unix mode S_IFLNK in the high half of the external attributes, whatever system
        // the archive claims to come from.
        const S_IFMT: u32 = 0o170000;
        const S_IFLNK: u32 = 0o120000;
        if e.is_symlink() || (e.external_attributes() >> 16) & S_IFMT == S_IFLNK {
            return Err(DumpError::SymlinkEntry {
                package: label.to_string(),
                entry: name,
            });
        }
        let (size, compressed) = (e.size(), e.compressed_size());
        let cap = limits.entry_cap(compressed);
        if size > cap {
            return Err(DumpError::EntryTooLarge {
                package: label.to_string(),
                entry: name,
                declared: size,
                compressed,
                cap,
            });
        }
        names.push(&name, i);
        declared = declared.saturating_add(size);
    }
    // Distinct raw names that decode to one name (CP437 vs UTF-8) are duplicates too.
    names.sort();
    if let Some(name) = names.duplicate(archive) {
        return Err(DumpError::DuplicateEntry {
            package: label.to_string(),
            entry: name,
        });
    }
    Ok((names, declared))
}

/// The entries of a package by decoded name, in 16 bytes an entry (a map of the names would
/// hold a second copy of each; the ZIP reader's own lookup by name scans every entry when the
/// raw name differs, which a manifest naming entries that are not there would pay each time).
struct NameIndex {
    hasher: std::hash::RandomState,
    /// (the name's hash, the entry's index), sorted.
    by_hash: Vec<(u64, u32)>,
}

impl NameIndex {
    fn with_capacity(n: usize) -> NameIndex {
        NameIndex {
            hasher: std::hash::RandomState::new(),
            by_hash: Vec::with_capacity(n),
        }
    }

    /// Entry `i` is named `name` (decoded); [`NameIndex::sort`] when all are in.
    fn push(&mut self, name: &str, i: usize) {
        use std::hash::BuildHasher;
        let index = u32::try_from(i).expect("a ZIP archive has fewer than 2^32 entries");
        self.by_hash.push((self.hasher.hash_one(name), index));
    }

    fn sort(&mut self) {
        self.by_hash.sort_unstable();
    }

    /// The index of the entry named `name`.
    fn find(&self, archive: &Archive, name: &str) -> Option<usize> {
        use std::hash::BuildHasher;
        let h = self.hasher.hash_one(name);
        let from = self.by_hash.partition_point(|&(k, _)| k < h);
        self.by_hash[from..]
            .iter()
            .take_while(|&&(k, _)| k == h)
            .map(|&(_, i)| i as usize)
            .find(|&i| {
                archive
                    .by_index_data(i)
                    .is_ok_and(|e| e.name().is_ok_and(|n| n == name))
            })
    }

    /// A name two entries share, if any.
    fn duplicate(&self, archive: &Archive) -> Option<String> {
        for run in self.by_hash.chunk_by(|a, b| a.0 == b.0) {
            for (k, &(_, a)) in run.iter().enumerate() {
                for &(_, b) in &run[k + 1..] {
                    let name = name_of(archive, a as usize);
                    if name == name_of(archive, b as usize) {
                        return Some(name);
                    }
                }
            }
        }
        None
    }
}

/// The manifest's header, its warnings, and what `each` said (its first error stops the
/// reading): each `<url>` parsed, checked and handed on, with the bitstreams, as it is read.
/// `referenced` marks the zip entries the manifest names.
#[allow(clippy::type_complexity)]
fn parse_manifest<E>(
    input: impl Read,
    doc_url: &Url,
    read: ReadOptions,
    bits: &mut Bitstreams,
    referenced: &mut [bool],
    each: &mut impl FnMut(usize, ManifestItem, &mut Bitstreams) -> Result<(), E>,
) -> Result<(Header, Vec<Warning>, Result<(), E>), DumpError> {
    let label = bits.label.clone();
    let label = label.as_str();
    let read_error = |source: ReadError| DumpError::Manifest {
        package: label.to_string(),
        source: Box::new(source),
    };
    let mut reader = sitemap::open(input, doc_url, read).map_err(read_error)?;
    let header = reader.header().clone();
    if header.root != Root::Urlset {
        return Err(DumpError::ManifestIsIndex {
            package: label.to_string(),
        });
    }
    // ResourceSync 1.1 §6: a 1.1 manifest says what it is; the 2012 draft's did not.
    match header.capability() {
        None | Some(Capability::ResourceDumpManifest) | Some(Capability::ChangeDumpManifest) => {}
        Some(other) => {
            return Err(DumpError::WrongCapability {
                package: label.to_string(),
                found: other.name().to_string(),
            })
        }
    }
    let mut index = 0;
    while let Some(entry) = reader.next_entry().map_err(read_error)? {
        let md = entry.md;
        let entry_name = match &md.path {
            None => None,
            // A deletion's path, if any, must still be safe: a hostile name refuses the
            // package wherever it appears.
            Some(path) => Some(resolve_manifest_path(path).map_err(|reason| {
                DumpError::UnsafeManifestPath {
                    package: label.to_string(),
                    line: entry.line,
                    loc: entry.loc.to_string(),
                    path: path.clone(),
                    reason,
                }
            })?),
        };
        let deleted = md.change == Some(Change::Deleted);
        let zip_index = match &entry_name {
            Some(n) if !deleted => bits.names.find(&bits.archive, n),
            _ => None,
        };
        if let Some(i) = zip_index {
            referenced[i] = true;
        }
        let mut hash = md.hash;
        // Room for four digests otherwise: a package of 100,000 entries keeps them all.
        hash.shrink_to_fit();
        let item = ManifestItem {
            line: entry.line,
            loc: entry.loc,
            lastmod: entry.lastmod,
            change: md.change,
            datetime: md.datetime,
            length: md.length,
            hash,
            media_type: md.media_type.map(|t| t.into_owned()),
            encoding: md.encoding,
            path: md.path,
            entry_name,
            zip_index,
        };
        if let Err(e) = each(index, item, bits) {
            return Ok((header, reader.take_warnings(), Err(e)));
        }
        index += 1;
    }
    let warnings = reader.take_warnings();
    Ok((header, warnings, Ok(())))
}

/// The name that occurs twice in the central directory starting at `dir_start`, read with
/// our own small parser: the ZIP reader keeps only one entry per name.
fn duplicated_name(path: &Path, dir_start: u64) -> io::Result<Option<Vec<u8>>> {
    const CENTRAL_HEADER: [u8; 4] = *b"PK\x01\x02";
    let mut r = BufReader::new(File::open(path)?);
    r.seek(SeekFrom::Start(dir_start))?;
    let mut seen = std::collections::HashSet::new();
    loop {
        let mut sig = [0u8; 4];
        if r.read_exact(&mut sig).is_err() || sig != CENTRAL_HEADER {
            return Ok(None);
        }
        // APPNOTE 4.3.12: 42 fixed bytes after the signature; name, extra and comment
        // lengths at offsets 24, 26 and 28.
        let mut fixed = [0u8; 42];
        r.read_exact(&mut fixed)?;
        let len = |at: usize| u16::from_le_bytes([fixed[at], fixed[at + 1]]);
        let mut name = vec![0u8; usize::from(len(24))];
        r.read_exact(&mut name)?;
        r.seek_relative(i64::from(len(26)) + i64::from(len(28)))?;
        if let Some(dup) = seen.replace(name) {
            return Ok(Some(dup));
        }
    }
}

/// What went wrong while reading one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fault {
    /// The data disagrees with the header's uncompressed size: the header lies.
    Size(SizeFound),
    Crc {
        expected: u32,
        actual: u32,
    },
    Corrupt(String),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Size(found) => write!(f, "size differs from the header: {found}"),
            Fault::Crc { expected, actual } => {
                write!(
                    f,
                    "CRC-32 mismatch: header {expected:08x}, data {actual:08x}"
                )
            }
            Fault::Corrupt(m) => write!(f, "corrupt data: {m}"),
        }
    }
}

enum Decoder<'a> {
    Stored(ZipFile<'a, PackageFile>),
    Deflated(Box<flate2::read::DeflateDecoder<ZipFile<'a, PackageFile>>>),
}

/// How [`copy_hashing`] ended.
enum CopyEnd {
    /// The entry was read to its end.
    Done,
    ReadFailed(io::Error),
    WriteFailed(io::Error),
}

/// Stream `reader` into `part` through `buf`, hashing every byte read, until the end of the
/// entry or the first error.
fn copy_hashing(
    reader: &mut EntryReader<'_>,
    part: &mut NewFile,
    buf: &mut [u8],
    hasher: &mut Hasher,
) -> CopyEnd {
    loop {
        match reader.read(buf) {
            Ok(0) => return CopyEnd::Done,
            Ok(n) => {
                hasher.update(&buf[..n]);
                if let Err(e) = part.write_all(&buf[..n]) {
                    return CopyEnd::WriteFailed(e);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return CopyEnd::ReadFailed(e),
        }
    }
}

/// The expanded bytes of one entry, never more than its declared size plus one byte: the
/// declared size was checked against the cap before, so the cap holds while reading, in
/// bounded memory, whatever the compressed stream says. We decompress ourselves (from the
/// ZIP reader's raw stream) to tell "longer than declared" (the header lies) from corrupt
/// data; the first fault sticks and every later read fails with it.
struct EntryReader<'a> {
    decoder: Decoder<'a>,
    declared: u64,
    produced: u64,
    crc: flate2::Crc,
    expected_crc: u32,
    fault: Option<Fault>,
}

impl<'a> EntryReader<'a> {
    /// Check the local header against the central directory, then open the raw data.
    fn open(
        archive: &'a mut Archive,
        index: usize,
        meta: &ZipEntry,
    ) -> Result<EntryReader<'a>, String> {
        archive
            .by_index_with_options(
                index,
                ZipReadOptions::new().enforce_header_consistency(true),
            )
            .map(drop)
            .map_err(|e| e.to_string())?;
        let raw = archive.by_index_raw(index).map_err(|e| e.to_string())?;
        let decoder = match meta.method {
            CompressionMethod::Stored => Decoder::Stored(raw),
            _ => Decoder::Deflated(Box::new(flate2::read::DeflateDecoder::new(raw))),
        };
        Ok(EntryReader {
            decoder,
            declared: meta.size,
            produced: 0,
            crc: flate2::Crc::new(),
            expected_crc: meta.crc32,
            fault: None,
        })
    }

    fn fail(&mut self, fault: Fault) -> io::Error {
        let e = io::Error::new(io::ErrorKind::InvalidData, fault.to_string());
        self.fault = Some(fault);
        e
    }
}

impl Read for EntryReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(f) = &self.fault {
            return Err(io::Error::new(io::ErrorKind::InvalidData, f.to_string()));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        // One byte of room past the declared size, to notice a longer stream.
        let room = (self.declared - self.produced).saturating_add(1);
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let result = match &mut self.decoder {
            Decoder::Stored(r) => r.read(&mut buf[..want]),
            Decoder::Deflated(r) => r.read(&mut buf[..want]),
        };
        let n = match result {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(e),
            Err(e) => return Err(self.fail(Fault::Corrupt(e.to_string()))),
        };
        if n == 0 {
            if self.produced < self.declared {
                return Err(self.fail(Fault::Size(SizeFound::Shorter(self.produced))));
            }
            let actual = self.crc.sum();
            if actual != self.expected_crc {
                return Err(self.fail(Fault::Crc {
                    expected: self.expected_crc,
                    actual,
                }));
            }
            return Ok(0);
        }
        self.produced += n as u64;
        if self.produced > self.declared {
            return Err(self.fail(Fault::Size(SizeFound::Longer)));
        }
        self.crc.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};
    use zip::write::SimpleFileOptions;

    fn url() -> Url {
        Url::parse("https://data.example.org/rs/texts/texts-0001.zip").unwrap()
    }

    const MANIFEST: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="https://data.example.org/rs/texts/capabilitylist.xml"/>
  <rs:md capability="resourcedump-manifest" at="2024-05-01T06:00:00Z" completed="2024-05-01T06:02:00Z"/>
  <url>
    <loc>https://data.example.org/r/alpha</loc>
    <lastmod>2024-05-01T03:00:00Z</lastmod>
    <rs:md path="/r/alpha.txt" type="text/plain" length="6"
           hash="md5:9f9f90dbe3e5ee1218c86b8839db1995"/>
  </url>
  <url>
    <loc>https://data.example.org/r/beta</loc>
    <rs:md path="/r/beta.txt" type="text/plain" length="10"
           hash="md5:57a9abf56648bed40162ba3a384710ea"/>
  </url>
</urlset>
"#;

    fn zip_bytes(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data) in files {
            w.start_file(*name, SimpleFileOptions::default()).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn write_package(dir: &Path, bytes: &[u8]) -> PathBuf {
        let path = dir.join("package.zip");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn sniffing() {
        assert_eq!(PackageFormat::sniff(b"PK\x03\x04rest"), PackageFormat::Zip);
        assert_eq!(
            PackageFormat::sniff(b"PK\x05\x06\0\0"),
            PackageFormat::EmptyZip
        );
        assert_eq!(
            PackageFormat::sniff(b"\xFD7zXZ\x00\x00\x04"),
            PackageFormat::Xz
        );
        assert_eq!(PackageFormat::sniff(b"\x1F\x8B\x08"), PackageFormat::Gzip);
        assert_eq!(PackageFormat::sniff(b""), PackageFormat::Empty);
        assert_eq!(PackageFormat::sniff(b"<?xml"), PackageFormat::Unknown);
        let mut tar = vec![0u8; 512];
        tar[..8].copy_from_slice(b"file.txt");
        tar[257..263].copy_from_slice(b"ustar\0");
        assert_eq!(PackageFormat::sniff(&tar), PackageFormat::Tar);
        assert!(!PackageFormat::Tar.is_supported());
        assert_eq!(
            PackageFormat::Xz.describe(b"\xFD7zXZ\x00\x00\x04\xE6\xD6"),
            "xz (starts FD 37 7A 58 5A 00 00 04)"
        );
    }

    #[test]
    fn caps() {
        let l = DumpLimits::default();
        assert_eq!(l.entry_cap(10), 1 << 20);
        assert_eq!(l.entry_cap(1 << 20), 100 << 20);
        assert_eq!(l.entry_cap(u64::MAX), u64::MAX);
        assert_eq!(l.total_cap(3 << 20), 300 << 20);
    }

    #[test]
    fn spec_example_e_reads_and_stages() {
        let dir = tempfile::tempdir().unwrap();
        let staging = dir.path().join("staging");
        std::fs::create_dir(&staging).unwrap();
        let bytes = zip_bytes(&[
            ("manifest.xml", MANIFEST.as_bytes()),
            ("r/alpha.txt", b"alpha\n"),
            ("r/beta.txt", b"beta beta\n"),
        ]);
        let path = write_package(dir.path(), &bytes);
        let mut p =
            Package::open(&path, &url(), DumpLimits::default(), ReadOptions::default()).unwrap();
        assert_eq!(
            p.manifest_header().capability(),
            Some(Capability::ResourceDumpManifest)
        );
        assert_eq!(p.entries().len(), 2);
        assert_eq!(p.entries()[0].entry_name.as_deref(), Some("r/alpha.txt"));
        assert_eq!(p.entries()[0].line, 6);
        assert!(p.extras().is_empty());
        let s = p.stage(0, &staging).unwrap().unwrap();
        assert_eq!(std::fs::read(&s.path).unwrap(), b"alpha\n");
        assert_eq!(s.computed.length, 6);
        assert!(s.path.starts_with(&staging));
        let s = p.stage(1, &staging).unwrap().unwrap();
        assert_eq!(s.computed.md5_hex, "57a9abf56648bed40162ba3a384710ea");
    }

    #[test]
    fn entry_reader_stops_one_byte_past_the_declared_size() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = zip_bytes(&[("a", &[7u8; 5000])]);
        let path = write_package(dir.path(), &bytes);
        let file = File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        let mut archive = ZipArchive::new(PackageFile::new(file, len)).unwrap();
        let meta = ZipEntry {
            size: 100,
            crc32: 0,
            method: CompressionMethod::Deflated,
            encrypted: false,
            is_dir: false,
        };
        let mut r = EntryReader::open(&mut archive, 0, &meta).unwrap();
        let mut out = Vec::new();
        assert!(r.read_to_end(&mut out).is_err());
        assert_eq!(r.fault, Some(Fault::Size(SizeFound::Longer)));
        assert_eq!(r.produced, 101);
        assert!(out.len() <= 101);
        drop(r);

        let meta = ZipEntry { size: 6000, ..meta };
        let mut r = EntryReader::open(&mut archive, 0, &meta).unwrap();
        assert!(io::copy(&mut r, &mut io::sink()).is_err());
        assert_eq!(r.fault, Some(Fault::Size(SizeFound::Shorter(5000))));
    }

    /// The positional reader reads what a plain file reads, whatever the sizes of the reads
    /// and the seeks between them, and a clone keeps its own place.
    #[test]
    fn a_package_file_reads_as_the_file_does() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let path = dir.path().join("f");
        std::fs::write(&path, &bytes).unwrap();
        let mut f = PackageFile::new(File::open(&path).unwrap(), bytes.len() as u64);
        let mut at = 0usize;
        for (step, size) in [1usize, 3, 16_384, 40_000, 7, 100, 65_536]
            .iter()
            .enumerate()
        {
            if step % 2 == 1 {
                at = (at * 31 + 977) % bytes.len();
                assert_eq!(f.seek(SeekFrom::Start(at as u64)).unwrap(), at as u64);
            }
            let mut out = vec![0u8; *size];
            let mut got = 0;
            while got < out.len() {
                let n = f.read(&mut out[got..]).unwrap();
                if n == 0 {
                    break;
                }
                got += n;
            }
            let want = &bytes[at..(at + size).min(bytes.len())];
            assert_eq!(&out[..got], want, "read of {size} at {at}");
            at += got;
        }
        let mut g = f.clone();
        assert_eq!(g.stream_position().unwrap(), at as u64);
        g.seek(SeekFrom::End(-10)).unwrap();
        let mut tail = Vec::new();
        g.read_to_end(&mut tail).unwrap();
        assert_eq!(tail, &bytes[bytes.len() - 10..]);
        assert!(f.seek(SeekFrom::Current(-(at as i64) - 1)).is_err());
        assert_eq!(
            f.stream_position().unwrap(),
            at as u64,
            "a refused seek moves nothing"
        );
    }

    #[test]
    fn duplicated_name_is_found_in_the_central_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = zip_bytes(&[("aa", b"1"), ("ab", b"2")]);
        // Rename "ab" to "aa" in the local and the central header.
        let positions: Vec<usize> = bytes
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w == b"ab")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(positions.len(), 2);
        for i in positions {
            bytes[i + 1] = b'a';
        }
        let path = write_package(dir.path(), &bytes);
        let archive = ZipArchive::new(BufReader::new(File::open(&path).unwrap())).unwrap();
        assert!(archive.has_duplicate_names());
        assert_eq!(
            duplicated_name(&path, archive.central_directory_start()).unwrap(),
            Some(b"aa".to_vec())
        );
    }
}
