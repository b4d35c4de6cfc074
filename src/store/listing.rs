//! The list's scratch copy: one collection's listed entries and the plan made of them, in a
//! SQLite database of its own in the mirror's `staging/` (no journal, no sync: it is thrown
//! away with the run, and `staging/` is emptied when a mirror is opened). The engine's
//! `engine::listing` decides what goes in it; this module only keeps and reads the rows, in the
//! orders the plan and the transfer need (URI order for the merge with the catalog, list order
//! for the jobs), so that neither the list nor the plan is ever held in memory.

use crate::store::StoreError;
use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};

const SCHEMA: &str = "
    PRAGMA journal_mode = OFF;
    PRAGMA synchronous = OFF;
    PRAGMA cache_size = -16000;
    CREATE TABLE listed (
        ord        INTEGER PRIMARY KEY,
        uri        TEXT NOT NULL UNIQUE,
        lastmod    TEXT,
        length     INTEGER,
        digests    TEXT,
        media_type TEXT,
        encoding   TEXT,
        duplicates TEXT,
        doc        INTEGER NOT NULL,
        line       INTEGER NOT NULL,
        entry      INTEGER,
        categories TEXT
    );
    CREATE TABLE todo (
        ord           INTEGER PRIMARY KEY,
        action        INTEGER NOT NULL,
        diffs         TEXT,
        cur_version   INTEGER,
        cur_sha256    TEXT,
        etag          TEXT,
        last_modified TEXT
    );
    CREATE TABLE gone (uri TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TABLE doubts (sha256 TEXT PRIMARY KEY, actual TEXT NOT NULL) WITHOUT ROWID;
    BEGIN;
";

#[cfg(test)]
/// An entry's columns, as [`RawListed`] reads them.
const LISTED: &str =
    "l.uri, l.lastmod, l.length, l.digests, l.media_type, l.encoding, l.duplicates, l.doc, l.line,
     l.categories";

const TODO_SELECT: &str =
    "SELECT t.ord, l.uri, l.lastmod, l.length, l.digests, l.media_type, l.encoding, l.duplicates,
        l.doc, l.line, l.categories, t.action, t.diffs, t.cur_version, t.cur_sha256, t.etag, t.last_modified
     FROM todo t JOIN listed l ON l.ord = t.ord";

static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// An error of the scratch database, named as what it is (not the catalog): a disk too full
/// for the list's copy reads "the list's scratch copy MIRROR/staging/listing-….sqlite:
/// database or disk is full".
fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::io("the list's scratch copy", path, std::io::Error::other(e))
}

/// A listed entry as written.
pub struct NewListed<'a> {
    pub uri: &'a str,
    pub lastmod: Option<String>,
    pub length: Option<i64>,
    pub digests: Option<String>,
    pub media_type: Option<&'a str>,
    pub encoding: Option<&'a str>,
    /// `duplicate` mirrors, one per line.
    pub duplicates: Option<String>,
    /// The listing document's number (the engine keeps their names).
    pub doc: i64,
    pub line: i64,
    /// A package's entry: its place in the package's manifest (a Resource Dump).
    pub entry: Option<i64>,
    /// Its categories as JSON, when it has any.
    pub categories: Option<String>,
}

/// A listed entry as read back, borrowed from its row.
pub struct RawListed<'r> {
    pub uri: &'r str,
    pub lastmod: Option<&'r str>,
    pub length: Option<i64>,
    pub digests: Option<&'r str>,
    pub media_type: Option<&'r str>,
    pub encoding: Option<&'r str>,
    pub duplicates: Option<&'r str>,
    pub doc: i64,
    pub line: i64,
    /// Its categories as JSON (`[{"name":…,"value":…}]`), when it has any.
    pub categories: Option<&'r str>,
}

impl<'r> RawListed<'r> {
    fn at(r: &'r rusqlite::Row<'_>, at: usize) -> rusqlite::Result<RawListed<'r>> {
        let text = |i: usize| r.get_ref(at + i).and_then(|v| Ok(v.as_str_or_null()?));
        Ok(RawListed {
            uri: text(0)?.unwrap_or_default(),
            lastmod: text(1)?,
            length: r.get(at + 2)?,
            digests: text(3)?,
            media_type: text(4)?,
            encoding: text(5)?,
            duplicates: text(6)?,
            doc: r.get(at + 7)?,
            line: r.get(at + 8)?,
            categories: text(9)?,
        })
    }
}

/// An entry to fetch, as read back: its place, the entry, its planned action (as the engine
/// encoded it) and what the mirror holds of it.
pub struct RawTodo<'r> {
    pub ord: i64,
    pub listed: RawListed<'r>,
    pub action: i64,
    pub diffs: Option<String>,
    /// The live current version's id and SHA-256.
    pub current: Option<(i64, Option<String>)>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl<'r> RawTodo<'r> {
    fn at(r: &'r rusqlite::Row<'_>) -> rusqlite::Result<RawTodo<'r>> {
        let sha = r.get::<_, Option<String>>(14)?;
        Ok(RawTodo {
            ord: r.get(0)?,
            listed: RawListed::at(r, 1)?,
            action: r.get(11)?,
            diffs: r.get(12)?,
            current: r.get::<_, Option<i64>>(13)?.map(|v| (v, sha)),
            etag: r.get(15)?,
            last_modified: r.get(16)?,
        })
    }
}

/// A row to plan: the entry's place and what the plan compares (its metadata is parsed only
/// when the mirror has the resource to compare it with).
pub struct Entry {
    pub ord: i64,
    pub uri: String,
    pub lastmod: Option<String>,
    pub length: Option<i64>,
    pub digests: Option<String>,
}

impl Entry {
    fn read(row: Option<&rusqlite::Row<'_>>) -> rusqlite::Result<Option<Entry>> {
        let Some(r) = row else { return Ok(None) };
        Ok(Some(Entry {
            ord: r.get(0)?,
            uri: r.get(1)?,
            lastmod: r.get(2)?,
            length: r.get(3)?,
            digests: r.get(4)?,
        }))
    }
}

/// An entry's planned fetch, as written.
pub struct NewTodo<'a> {
    pub ord: i64,
    pub action: i64,
    pub diffs: Option<String>,
    pub current_version: Option<i64>,
    pub current_sha256: Option<&'a str>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// The list's scratch copy.
pub struct Scratch {
    conn: Connection,
    path: PathBuf,
    next_ord: i64,
    in_transaction: bool,
}

impl Scratch {
    /// A new, empty copy in `dir` (the mirror's `staging/`, or a dry run's folder).
    pub(crate) fn create(dir: &Path) -> Result<Scratch, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("creating", dir, e))?;
        let n = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("listing-{}-{n}.sqlite", std::process::id()));
        let _ = std::fs::remove_file(&path);
        crate::interrupt::scratch_made(&path);
        let conn = Connection::open(&path).map_err(sql(&path))?;
        conn.execute_batch(SCHEMA).map_err(sql(&path))?;
        Ok(Scratch {
            conn,
            path,
            next_ord: 0,
            in_transaction: true,
        })
    }

    #[cfg(test)]
    /// Where the copy is, for messages.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Add an entry: a new URI at the next place (`Ok(true)`), a URI listed before keeps its
    /// place and takes this entry's metadata (`Ok(false)`). (Not one `ON CONFLICT …
    /// RETURNING`: SQLite makes an ephemeral table for every `RETURNING`, half the cost of a
    /// push.)
    pub(crate) fn push(&mut self, l: NewListed<'_>) -> Result<bool, StoreError> {
        let values = params![
            l.uri,
            l.lastmod,
            l.length,
            l.digests,
            l.media_type,
            l.encoding,
            l.duplicates,
            l.doc,
            l.line,
            l.entry,
            l.categories
        ];
        let path = &self.path;
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO listed (uri, lastmod, length, digests, media_type, encoding, duplicates, doc,
                     line, entry, categories, ord)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT (uri) DO NOTHING",
            )
            .and_then(|mut st| {
                let ord: &dyn rusqlite::ToSql = &self.next_ord;
                st.execute(rusqlite::params_from_iter(values.iter().chain([&ord])))
            })
            .map_err(sql(path))?;
        if inserted == 1 {
            self.next_ord += 1;
            return Ok(true);
        }
        self.conn
            .prepare_cached(
                "UPDATE listed SET lastmod = ?2, length = ?3, digests = ?4, media_type = ?5,
                     encoding = ?6, duplicates = ?7, doc = ?8, line = ?9, entry = ?10,
                     categories = ?11
                 WHERE uri = ?1",
            )
            .and_then(|mut st| st.execute(values))
            .map_err(sql(path))?;
        Ok(false)
    }

    /// Forget every entry of document `doc`.
    pub(crate) fn drop_document(&mut self, doc: i64) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM listed WHERE doc = ?1", [doc])
            .map_err(sql(&self.path))?;
        Ok(())
    }

    fn end_loading(&mut self) -> Result<(), StoreError> {
        if self.in_transaction {
            self.conn.execute_batch("COMMIT").map_err(sql(&self.path))?;
            self.in_transaction = false;
        }
        Ok(())
    }

    #[cfg(test)]
    /// Entries in the list (each URI once).
    pub(crate) fn count(&mut self) -> Result<u64, StoreError> {
        self.end_loading()?;
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM listed", [], |r| r.get(0))
            .map_err(sql(&self.path))?;
        Ok(n as u64)
    }

    /// Every entry planned `action`, in list order, with nothing to merge (a first
    /// baseline); each entry's declared length to `length`.
    pub(crate) fn plan_all(
        &mut self,
        action: i64,
        mut length: impl FnMut(Option<i64>),
    ) -> Result<(), StoreError> {
        self.end_loading()?;
        let path = &self.path;
        self.conn
            .execute(
                "INSERT INTO todo (ord, action) SELECT ord, ?1 FROM listed ORDER BY ord",
                [action],
            )
            .map_err(sql(path))?;
        let mut lengths = self
            .conn
            .prepare("SELECT length FROM listed")
            .map_err(sql(path))?;
        let mut rows = lengths.query([]).map_err(sql(path))?;
        while let Some(r) = rows.next().map_err(sql(path))? {
            length(r.get::<_, Option<i64>>(0).map_err(sql(path))?);
        }
        Ok(())
    }

    /// The objects in doubt (`store::presence`): `f` hands each one's name and what is there
    /// instead to the function it is given. Before [`Scratch::merge`], which asks about them.
    pub(crate) fn record_doubts<T>(
        &mut self,
        f: impl FnOnce(&mut dyn FnMut(&str, &str) -> Result<(), StoreError>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.end_loading()?;
        let path = self.path.clone();
        self.conn.execute_batch("BEGIN").map_err(sql(&path))?;
        let out = {
            let mut insert = self
                .conn
                .prepare("INSERT OR REPLACE INTO doubts (sha256, actual) VALUES (?1, ?2)")
                .map_err(sql(&path))?;
            f(&mut |sha, actual| {
                insert.execute([sha, actual]).map_err(sql(&path))?;
                Ok(())
            })?
        };
        self.conn.execute_batch("COMMIT").map_err(sql(&path))?;
        Ok(out)
    }

    /// The plan by a merge: `f` draws the entries in URI order from the [`Merge`] and writes
    /// what to fetch and what is gone through it, in one transaction.
    pub(crate) fn merge<E: From<StoreError>>(
        &mut self,
        f: impl FnOnce(&mut Merge<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.end_loading()?;
        let path = self.path.clone();
        self.conn.execute_batch("BEGIN").map_err(sql(&path))?;
        {
            let mut listed = self
                .conn
                .prepare("SELECT ord, uri, lastmod, length, digests FROM listed ORDER BY uri")
                .map_err(sql(&path))?;
            // Prepared once for the whole merge (`prepare_cached` hashes the text each time).
            let todo = self
                .conn
                .prepare(
                    "INSERT INTO todo (ord, action, diffs, cur_version, cur_sha256, etag, last_modified)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(sql(&path))?;
            let gone = self
                .conn
                .prepare("INSERT INTO gone (uri) VALUES (?1)")
                .map_err(sql(&path))?;
            let doubt = self
                .conn
                .prepare("SELECT actual FROM doubts WHERE sha256 = ?1")
                .map_err(sql(&path))?;
            let rows = listed.query([]).map_err(sql(&path))?;
            let mut m = Merge {
                rows,
                todo,
                gone,
                doubt,
                path: &path,
            };
            f(&mut m)?;
        }
        self.conn.execute_batch("COMMIT").map_err(sql(&path))?;
        Ok(())
    }

    /// Every entry in list order with its planned action, if it has one.
    pub(crate) fn each_planned(
        &self,
        mut f: impl FnMut(&str, Option<(i64, Option<String>)>),
    ) -> Result<(), StoreError> {
        let path = &self.path;
        let mut st = self
            .conn
            .prepare(
                "SELECT l.uri, t.action, t.diffs FROM listed l LEFT JOIN todo t ON t.ord = l.ord
                 ORDER BY l.ord",
            )
            .map_err(sql(path))?;
        let mut rows = st.query([]).map_err(sql(path))?;
        while let Some(r) = rows.next().map_err(sql(path))? {
            let action = match r.get::<_, Option<i64>>(1).map_err(sql(path))? {
                None => None,
                Some(code) => Some((code, r.get(2).map_err(sql(path))?)),
            };
            let uri = r
                .get_ref(0)
                .and_then(|v| Ok(v.as_str()?))
                .map_err(sql(path))?;
            f(uri, action);
        }
        Ok(())
    }

    #[cfg(test)]
    /// Every entry in list order.
    pub(crate) fn each_listed<E: From<StoreError>>(
        &self,
        mut f: impl FnMut(&RawListed<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let path = &self.path;
        let mut st = self
            .conn
            .prepare(&format!("SELECT {LISTED} FROM listed l ORDER BY l.ord"))
            .map_err(sql(path))?;
        let mut rows = st.query([]).map_err(sql(path))?;
        while let Some(r) = rows.next().map_err(sql(path))? {
            f(&RawListed::at(r, 0).map_err(sql(path))?)?;
        }
        Ok(())
    }

    /// The live resources of the collection the list does not name, in URI order.
    pub(crate) fn each_gone<E: From<StoreError>>(
        &self,
        mut f: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        let path = &self.path;
        let mut st = self
            .conn
            .prepare("SELECT uri FROM gone ORDER BY uri")
            .map_err(sql(path))?;
        let mut rows = st.query([]).map_err(sql(path))?;
        while let Some(r) = rows.next().map_err(sql(path))? {
            f(r.get_ref(0)
                .and_then(|v| Ok(v.as_str()?))
                .map_err(sql(path))?)?;
        }
        Ok(())
    }

    /// The first `n` gone URIs.
    pub(crate) fn first_gone(&self, n: usize) -> Result<Vec<String>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT uri FROM gone ORDER BY uri LIMIT ?1")
            .map_err(sql(&self.path))?;
        let rows = st
            .query_map([n as i64], |r| r.get(0))
            .map_err(sql(&self.path))?;
        rows.collect::<Result<_, _>>().map_err(sql(&self.path))
    }

    /// Every entry to fetch that a package holds, as (position, document, place in the
    /// package's manifest): by document, in the order the documents were first met, and in
    /// manifest order within each. Read as a stream.
    pub(crate) fn each_packaged_todo<E: From<StoreError>>(
        &self,
        mut f: impl FnMut(i64, i64, i64) -> Result<(), E>,
    ) -> Result<(), E> {
        let path = &self.path;
        let mut st = self
            .conn
            .prepare(
                "SELECT t.ord, l.doc, l.entry FROM todo t JOIN listed l ON l.ord = t.ord
                 WHERE l.entry IS NOT NULL ORDER BY l.doc, l.entry",
            )
            .map_err(sql(path))?;
        let mut rows = st.query([]).map_err(sql(path))?;
        while let Some(r) = rows.next().map_err(sql(path))? {
            let (ord, doc, entry) = (r.get(0), r.get(1), r.get(2));
            f(
                ord.map_err(sql(path))?,
                doc.map_err(sql(path))?,
                entry.map_err(sql(path))?,
            )?;
        }
        Ok(())
    }

    /// One entry to fetch, by position, made into `T` by `make`.
    pub(crate) fn todo_at<T>(
        &self,
        ord: usize,
        make: impl FnOnce(&RawTodo<'_>) -> Result<T, String>,
    ) -> Result<T, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!("{TODO_SELECT} WHERE t.ord = ?1"))
            .map_err(sql(&self.path))?;
        st.query_row([ord as i64], |r| made(r, make))
            .map_err(sql(&self.path))
    }

    /// The entries to fetch in list order, each made into `T` by `make`, read a page at a time
    /// on a connection of their own (the iterator may be drawn from other threads).
    pub(crate) fn todo<T, F>(&self, make: F) -> Result<TodoRows<T, F>, StoreError>
    where
        F: Fn(&RawTodo<'_>) -> Result<T, String>,
    {
        let conn = Connection::open_with_flags(
            &self.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql(&self.path))?;
        Ok(TodoRows {
            conn,
            path: self.path.clone(),
            make,
            after: -1,
            page: std::collections::VecDeque::new(),
            done: false,
        })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        crate::interrupt::scratch_gone(&self.path);
    }
}

/// A row made by the caller; its complaint becomes a conversion error of the row.
fn made<T>(
    r: &rusqlite::Row<'_>,
    make: impl FnOnce(&RawTodo<'_>) -> Result<T, String>,
) -> rusqlite::Result<T> {
    make(&RawTodo::at(r)?).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, e.into())
    })
}

/// The merge's side of [`Scratch::merge`]: the entries in URI order, and where the plan goes.
pub struct Merge<'s> {
    rows: rusqlite::Rows<'s>,
    todo: rusqlite::Statement<'s>,
    gone: rusqlite::Statement<'s>,
    doubt: rusqlite::Statement<'s>,
    path: &'s Path,
}

impl Merge<'_> {
    /// The next entry in URI order.
    pub(crate) fn next_entry(&mut self) -> Result<Option<Entry>, StoreError> {
        let row = self.rows.next().map_err(sql(self.path))?;
        Entry::read(row).map_err(sql(self.path))
    }

    pub(crate) fn todo(&mut self, t: NewTodo<'_>) -> Result<(), StoreError> {
        self.todo
            .execute(params![
                t.ord,
                t.action,
                t.diffs,
                t.current_version,
                t.current_sha256,
                t.etag,
                t.last_modified
            ])
            .map_err(sql(self.path))?;
        Ok(())
    }

    pub(crate) fn gone(&mut self, uri: &str) -> Result<(), StoreError> {
        self.gone.execute([uri]).map_err(sql(self.path))?;
        Ok(())
    }

    /// What is wrong with object `sha256`, when [`Scratch::record_doubts`] recorded it.
    pub(crate) fn doubt(&mut self, sha256: &str) -> Result<Option<String>, StoreError> {
        use rusqlite::OptionalExtension;
        self.doubt
            .query_row([sha256], |r| r.get(0))
            .optional()
            .map_err(sql(self.path))
    }
}

/// [`Scratch::todo`]'s iterator.
pub struct TodoRows<T, F> {
    conn: Connection,
    path: PathBuf,
    make: F,
    after: i64,
    page: std::collections::VecDeque<(i64, T)>,
    done: bool,
}

impl<T, F: Fn(&RawTodo<'_>) -> Result<T, String>> TodoRows<T, F> {
    const PAGE: i64 = 256;

    fn fill(&mut self) -> Result<(), StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "{TODO_SELECT} WHERE t.ord > ?1 ORDER BY t.ord LIMIT {}",
                Self::PAGE
            ))
            .map_err(sql(&self.path))?;
        let make = &self.make;
        let rows = st
            .query_map([self.after], |r| {
                let ord: i64 = r.get(0)?;
                made(r, make).map(|t| (ord, t))
            })
            .map_err(sql(&self.path))?;
        for r in rows {
            self.page.push_back(r.map_err(sql(&self.path))?);
        }
        match self.page.back() {
            Some((ord, _)) => self.after = *ord,
            None => self.done = true,
        }
        Ok(())
    }
}

impl<T, F: Fn(&RawTodo<'_>) -> Result<T, String>> Iterator for TodoRows<T, F> {
    type Item = Result<T, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.page.is_empty() && !self.done {
            if let Err(e) = self.fill() {
                self.done = true;
                return Some(Err(e));
            }
        }
        self.page.pop_front().map(|(_, t)| Ok(t))
    }
}
