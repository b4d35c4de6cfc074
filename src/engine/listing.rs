//! What one collection's list names, spilled to disk, and the plan made from it by a merge with
//! the catalog in URI order: the baseline's plan in flat memory, whatever the size of the list
//! or of the mirror.
//!
//! A walk hands each [`Listed`] entry to [`Listing::push`], which writes it to the list's
//! scratch copy (`store::listing`: a SQLite database of its own in the mirror's `staging/`,
//! thrown away with the run). A URI listed twice counts once, with its
//! later entry, at the place of its first ([`Listing::push`] says so in a warning). Entries of
//! an index part that failed half-way are dropped ([`Listing::drop_document`]).
//!
//! [`Listing::plan`] then reads the entries in URI order next to the catalog's current states
//! in URI order ([`Catalog::each_current_state_by_uri`]), one of each in memory at a time:
//! each entry gets its [`Action`] (the same `plan::action` as ever; a resource kept as it is
//! whose object `store::presence` found missing, not a file or cut short is fetched again), and
//! what is not kept goes to a `todo` table; each live resource of
//! the collection the list does not name goes to a `gone` table. A mirror with no current state
//! at all (before its first baseline) skips the merge: every entry is created. The transfer then
//! draws its jobs from `todo` a page at a time ([`Listing::todo`]), in list order; only the jobs
//! in flight are in memory.

use crate::engine::expected::Warnings;
use crate::engine::plan::{self, Action, Declared, Difference, Listed};
use crate::net::{Scope, Validators};
use crate::rs::digest::{declared_hash, parse_hash_attr};
use crate::store::catalog::CurrentState;
use crate::store::listing::{Entry, NewListed, NewTodo, RawListed, RawTodo, Scratch, TodoRows};
use crate::store::presence::{self, LengthSlice, Looked};
use crate::store::{Catalog, ObjectStore, StoreError};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use url::Url;

/// The entries of one collection's list, on disk, and once planned, what to do with them.
pub struct Listing {
    scratch: Scratch,
    /// The listing documents (and their scopes), by id: a list of a million entries has a few
    /// dozen.
    docs: Vec<(Arc<str>, Arc<Scope>)>,
    doc_ids: HashMap<Arc<str>, i64>,
    twice: Warnings,
    counts: Counts,
    /// What the mirror takes (`--include`/`--exclude`): an entry it leaves out is not pushed,
    /// and a resource of the mirror it leaves out is not gone.
    filter: crate::model::Filter,
    /// Entries left out by the filter.
    excluded: u64,
    /// The URIs of entries left out for their categories (`--category`): a resource the
    /// mirror holds that the source now files under another category is not gone.
    other_category: std::collections::HashSet<String>,
    /// The list is older than the mirror's state of its collection ([`Listing::older_than_mirror`]).
    older: Option<Older>,
    /// What the plan held back because the list is older.
    held_back: HeldBack,
}

/// A list older than the mirror's state of its collection: its `at` is before the sync
/// point the mirror has (a stale Resource Dump, a sitemap generated before the delta feeds
/// applied since). Nothing it says replaces a newer state (ResourceSync 1.1 §10.1: a list is
/// the source's state as of its `at`).
#[derive(Debug, Clone, Copy)]
pub struct Older {
    /// The bytes come from the list's own packages (a Resource Dump), not from the resources'
    /// URLs: bytes as old as the list, so not even a resource the mirror lacks is taken.
    pub from_packages: bool,
}

/// What a plan held back from a list older than the mirror ([`Older`]).
#[derive(Debug, Default, Clone)]
pub struct HeldBack {
    /// Resources whose newer state in the mirror the list contradicts: kept as they are.
    pub newer_kept: u64,
    /// Resources deleted in the mirror that the list still names: not brought back.
    pub deletions_kept: u64,
    /// Resources the mirror does not hold, named only in a package as old as the list.
    pub unknown_left: u64,
    /// Live resources the list does not name: not gone (they may have come after it).
    pub not_gone: u64,
    /// A few of the URIs held back, for the message.
    pub examples: Vec<String>,
}

impl HeldBack {
    /// How many resources were held back.
    pub(crate) fn total(&self) -> u64 {
        self.listed() + self.not_gone
    }

    /// How many of the list's entries were held back.
    pub(crate) fn listed(&self) -> u64 {
        self.newer_kept + self.deletions_kept + self.unknown_left
    }

    fn note(&mut self, uri: &str) {
        if self.examples.len() < 5 {
            self.examples.push(uri.to_string());
        }
    }
}

/// What the plan found.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Entries in the list (each URI once).
    pub listed: u64,
    /// Entries to fetch (not [`Action::Keep`]).
    pub wanted: u64,
    /// The declared lengths of those, summed.
    pub wanted_bytes: u64,
    /// Live resources of the collection the list does not name.
    pub gone: u64,
    /// Live resources of the collection in the mirror (that the filter admits).
    pub live: u64,
    /// Entries the filter left out (`--include`/`--exclude`).
    pub excluded: u64,
}

/// A listed resource to fetch, with its action and what the mirror holds of it.
#[derive(Debug, Clone)]
pub struct Todo {
    pub ord: usize,
    pub listed: Listed,
    pub action: Action,
    /// The mirror's live current version: its id and SHA-256.
    pub current: Option<(i64, Option<String>)>,
    /// The validators stored with that version, for an [`Action::Revalidate`].
    pub validators: Option<Validators>,
}

impl Listing {
    /// A new, empty listing in `dir` (the mirror's `staging/`, or a dry run's folder), of
    /// what `filter` admits.
    pub(crate) fn create(dir: &Path, filter: &crate::model::Filter) -> Result<Listing, StoreError> {
        Ok(Listing {
            scratch: Scratch::create(dir)?,
            docs: Vec::new(),
            doc_ids: HashMap::new(),
            twice: Warnings::default(),
            counts: Counts::default(),
            filter: filter.clone(),
            excluded: 0,
            other_category: std::collections::HashSet::new(),
            older: None,
            held_back: HeldBack::default(),
        })
    }

    /// The list is older than the mirror's state of its collection: [`Listing::plan`] then
    /// takes nothing from it that would replace a newer state, bring back a deletion or call
    /// a resource gone ([`Listing::held_back`] says what it held back).
    pub(crate) fn older_than_mirror(&mut self, older: Older) {
        self.older = Some(older);
    }

    /// What the plan held back from a list older than the mirror (empty otherwise).
    pub(crate) fn held_back(&self) -> &HeldBack {
        &self.held_back
    }

    fn doc_id(&mut self, l: &Listed) -> i64 {
        if let Some(&id) = self.doc_ids.get(&l.document) {
            return id;
        }
        let id = self.docs.len() as i64;
        self.docs.push((l.document.clone(), l.scope.clone()));
        self.doc_ids.insert(l.document.clone(), id);
        id
    }

    /// Add an entry. A URI listed before keeps its place and takes this entry's metadata (a
    /// warning says so).
    pub(crate) fn push(&mut self, l: Listed) -> Result<(), StoreError> {
        self.push_entry(l, None)
    }

    /// [`Listing::push`] of a package's entry (a Resource Dump): `entry`, its place in the
    /// package's manifest, goes with it ([`Listing::each_packaged_todo`]); the package is the
    /// entry's document.
    pub(crate) fn push_entry(&mut self, l: Listed, entry: Option<u64>) -> Result<(), StoreError> {
        if !self.filter.admits(l.uri.as_str()) {
            self.excluded += 1;
            return Ok(());
        }
        if !self.filter.admits_categories(&l.declared.categories) {
            self.excluded += 1;
            self.other_category.insert(l.uri.to_string());
            return Ok(());
        }
        let doc = self.doc_id(&l);
        let duplicates = (!l.duplicates.is_empty()).then(|| {
            l.duplicates
                .iter()
                .map(Url::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        });
        let new = self.scratch.push(NewListed {
            uri: l.uri.as_str(),
            lastmod: l.declared.lastmod.map(|t| t.to_string()),
            length: l.declared.length.map(|n| n as i64),
            digests: declared_hash(&l.declared.digests),
            media_type: l.media_type.as_deref(),
            encoding: l.declared.encoding.as_deref(),
            duplicates,
            doc,
            line: l.line as i64,
            entry: entry.map(|e| e as i64),
            categories: (!l.declared.categories.is_empty())
                .then(|| serde_json::to_string(&l.declared.categories).unwrap_or_default()),
        })?;
        if !new {
            self.twice.push(format!(
                "{}: line {}: {} listed twice; the later entry counts",
                l.document, l.line, l.uri
            ));
        }
        Ok(())
    }

    /// Forget every entry that came from `document` (an index part that failed half-way:
    /// nothing from it is kept).
    pub(crate) fn drop_document(&mut self, document: &str) -> Result<(), StoreError> {
        match self.doc_ids.get(document) {
            Some(&id) => self.scratch.drop_document(id),
            None => Ok(()),
        }
    }

    /// The warnings [`Listing::push`] made (URIs listed twice), in list order.
    pub(crate) fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.twice).into_vec()
    }

    #[cfg(test)]
    /// Entries in the list (each URI once).
    pub(crate) fn len(&mut self) -> Result<u64, StoreError> {
        self.scratch.count()
    }

    /// The plan: every entry merged with the catalog's current states in URI order (see the
    /// module's documentation). `objects`: the store, to see that a resource kept as it is
    /// still has its bytes; `catalog` may be `None` (a dry run before the first baseline).
    pub(crate) fn plan(
        &mut self,
        catalog: Option<&Catalog>,
        collection: &str,
        objects: &ObjectStore,
    ) -> Result<Counts, StoreError> {
        if !catalog.map_or(Ok(false), Catalog::has_current_states)? {
            // A mirror without a current state (a first baseline): every entry is created, in
            // list order, and the merge has nothing to merge with. Counted as the merge
            // counts: each length as the u64 it was, summed saturating.
            let (mut listed, mut bytes) = (0u64, 0u64);
            self.scratch.plan_all(encode(&Action::Create).0, |length| {
                listed += 1;
                bytes = bytes.saturating_add(length.map_or(0, |n| n as u64));
            })?;
            self.counts = Counts {
                listed,
                wanted: listed,
                wanted_bytes: bytes,
                gone: 0,
                live: 0,
                excluded: self.excluded,
            };
            return Ok(self.counts);
        }
        // Which kept objects are missing, not files, or (in this run's slice) cut short:
        // known before the merge, which then looks nothing up on a healthy mirror.
        let looked = match catalog {
            Some(catalog) => {
                let slice = LengthSlice::for_run(catalog)?;
                self.scratch
                    .record_doubts(|doubt| presence::look(catalog, objects, slice, doubt))?
            }
            None => Looked::default(),
        };
        let mut counts = Counts::default();
        self.scratch.merge(|m| {
            let mut next = m.next_entry()?;
            let mut planner = Planner {
                counts: &mut counts,
                catalog,
                doubts: looked.doubts > 0,
                older: self.older,
                held_back: &mut self.held_back,
            };
            if let Some(catalog) = catalog {
                catalog.each_current_state_by_uri(|uri, state| {
                    // Entries before this URI are not in the mirror.
                    while let Some(e) = next.take_if(|e| e.uri.as_str() < uri) {
                        planner.decide(m, e, None)?;
                        next = m.next_entry()?;
                    }
                    // A resource the filter leaves out is neither judged nor gone: it stays.
                    // Under `--category`, a resource is the filter's when the categories
                    // recorded with its current version are (one in an Index part skipped for
                    // its categories is not listed here), unless this list files it under
                    // another category.
                    let mine = !state.deleted
                        && state.collection == collection
                        && self.filter.admits(uri)
                        && (!self.filter.by_category()
                            || !self.other_category.contains(uri)
                                && self.filter.admits_categories(
                                    &catalog.version_categories(state.version_id)?,
                                ));
                    planner.counts.live += mine as u64;
                    match next.take_if(|e| e.uri.as_str() == uri) {
                        Some(e) => {
                            planner.decide(m, e, Some(state))?;
                            next = m.next_entry()?;
                        }
                        None if mine && planner.older.is_some() => {
                            planner.held_back.not_gone += 1;
                            planner.held_back.note(uri);
                        }
                        None if mine => {
                            planner.counts.gone += 1;
                            m.gone(uri)?;
                        }
                        None => {}
                    }
                    Ok::<(), StoreError>(())
                })?;
            }
            while let Some(e) = next.take() {
                planner.decide(m, e, None)?;
                next = m.next_entry()?;
            }
            Ok::<(), StoreError>(())
        })?;
        counts.excluded = self.excluded;
        self.counts = counts;
        Ok(counts)
    }

    /// Every entry in list order with its action (`Keep` included): a dry run's plan.
    pub(crate) fn each_planned(&self, mut f: impl FnMut(&str, &Action)) -> Result<(), StoreError> {
        self.scratch.each_planned(|uri, planned| {
            let action = match planned {
                None => Action::Keep,
                Some((code, diffs)) => decode(code, diffs),
            };
            f(uri, &action)
        })
    }

    #[cfg(test)]
    /// Every entry in list order.
    pub(crate) fn each_listed(&self, mut f: impl FnMut(Listed)) -> Result<(), StoreError> {
        self.scratch.each_listed(|r| {
            let l = listed_of(r, &self.docs).map_err(|e| bad_row(self.scratch.path(), &e))?;
            f(l);
            Ok::<(), StoreError>(())
        })
    }

    /// The live resources of the collection the list does not name, in URI order.
    pub(crate) fn each_gone<E: From<StoreError>>(
        &self,
        f: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        self.scratch.each_gone(f)
    }

    /// The first `n` gone URIs.
    pub(crate) fn first_gone(&self, n: usize) -> Result<Vec<String>, StoreError> {
        self.scratch.first_gone(n)
    }

    /// Every entry to fetch that a package holds ([`Listing::push_entry`]), as (position,
    /// package, place in its manifest), package by package in the order they were read, in
    /// manifest order within each: a Resource Dump's staging, read as a stream.
    pub(crate) fn each_packaged_todo<E: From<StoreError>>(
        &self,
        mut f: impl FnMut(usize, &str, u64) -> Result<(), E>,
    ) -> Result<(), E> {
        self.scratch.each_packaged_todo(|ord, doc, entry| {
            f(ord as usize, &self.docs[doc as usize].0, entry as u64)
        })
    }

    /// One entry to fetch, by position (one [`Listing::each_packaged_todo`] gave).
    pub(crate) fn todo_at(&self, ord: usize) -> Result<Todo, StoreError> {
        self.scratch.todo_at(ord, |r| todo_of(r, &self.docs))
    }

    /// The entries to fetch in list order, read a page at a time on a connection of their own
    /// (the iterator may be drawn from other threads). Each one drawn is kept in `in_flight`
    /// until the caller takes it back by position.
    pub(crate) fn todo(&self, in_flight: InFlight) -> Result<TodoPages, StoreError> {
        let docs = self.docs.clone();
        let make: MakeTodo = Box::new(move |r| todo_of(r, &docs));
        Ok(TodoPages {
            rows: self.scratch.todo(make)?,
            in_flight,
        })
    }
}

/// What the merge decides of one entry against the mirror's state of it.
struct Planner<'p> {
    counts: &'p mut Counts,
    catalog: Option<&'p Catalog>,
    /// Some object is in doubt (`store::presence`): each kept one is looked up.
    doubts: bool,
    older: Option<Older>,
    held_back: &'p mut HeldBack,
}

impl Planner<'_> {
    fn decide(
        &mut self,
        m: &mut crate::store::listing::Merge<'_>,
        e: Entry,
        current: Option<CurrentState>,
    ) -> Result<(), StoreError> {
        self.counts.listed += 1;
        let length = e.length.map(|n| n as u64);
        let (known, tombstoned) = (
            current.is_some(),
            current.as_ref().is_some_and(|c| c.deleted),
        );
        let live = current.filter(|c| !c.deleted);
        let action = match &live {
            // What `plan::action` says of a resource the mirror does not hold, without parsing
            // the entry's lastmod and digests (most of a first baseline's plan).
            None => Action::Create,
            Some(c) => match plan::action(
                &declared(e.lastmod.as_deref(), length, e.digests.as_deref()),
                Some(c),
            ) {
                Action::Keep => match (self.doubts, c.sha256_hex.as_deref()) {
                    (true, Some(sha)) => match m.doubt(sha)? {
                        Some(actual) => Action::Update(vec![Difference {
                            field: "object".into(),
                            expected: ObjectStore::relative_path(sha),
                            actual,
                        }]),
                        None => Action::Keep,
                    },
                    _ => Action::Keep,
                },
                a => a,
            },
        };
        if action == Action::Keep {
            return Ok(());
        }
        if let Some(older) = self.older {
            // A list older than the mirror: only a resource the mirror has never held, fetched
            // from its URL (its bytes as they are now), is taken.
            let held = match (known, tombstoned) {
                (true, true) => Some(&mut self.held_back.deletions_kept),
                (true, false) => Some(&mut self.held_back.newer_kept),
                (false, _) if older.from_packages => Some(&mut self.held_back.unknown_left),
                (false, _) => None,
            };
            if let Some(count) = held {
                *count += 1;
                self.held_back.note(&e.uri);
                return Ok(());
            }
        }
        self.counts.wanted += 1;
        self.counts.wanted_bytes = self.counts.wanted_bytes.saturating_add(length.unwrap_or(0));
        let (etag, last_modified) = match (&action, &live, self.catalog) {
            (Action::Revalidate, Some(c), Some(catalog)) => {
                catalog.version_validators(c.version_id)?
            }
            _ => (None, None),
        };
        let (code, diffs) = encode(&action);
        m.todo(NewTodo {
            ord: e.ord,
            action: code,
            diffs,
            current_version: live.as_ref().map(|c| c.version_id),
            current_sha256: live.as_ref().and_then(|c| c.sha256_hex.as_deref()),
            etag,
            last_modified,
        })
    }
}

/// The entries drawn for transfer and not yet taken back, by position.
pub type InFlight = Arc<Mutex<HashMap<usize, Todo>>>;

type MakeTodo = Box<dyn Fn(&RawTodo<'_>) -> Result<Todo, String> + Send>;

/// [`Listing::todo`]'s iterator.
pub struct TodoPages {
    rows: TodoRows<Todo, MakeTodo>,
    in_flight: InFlight,
}

impl Iterator for TodoPages {
    type Item = Result<Todo, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let t = match self.rows.next()? {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(t.ord, t.clone());
        Some(Ok(t))
    }
}

#[cfg(test)]
/// A row of the scratch copy that does not read back as an entry (a URL that does not parse).
fn bad_row(path: &Path, e: &str) -> StoreError {
    StoreError::io(
        "the list's scratch copy",
        path,
        std::io::Error::other(e.to_string()),
    )
}

/// The entry a row of the scratch copy holds.
fn listed_of(r: &RawListed<'_>, docs: &[(Arc<str>, Arc<Scope>)]) -> Result<Listed, String> {
    let bad = |what: &str, e: url::ParseError| format!("{what}: {e}");
    let uri = Url::parse(r.uri).map_err(|e| bad(r.uri, e))?;
    let duplicates = match r.duplicates {
        Some(d) => d
            .lines()
            .map(|u| Url::parse(u).map_err(|e| bad(u, e)))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let (document, scope) = docs[r.doc as usize].clone();
    Ok(Listed {
        uri,
        declared: Declared {
            encoding: r.encoding.map(str::to_string),
            categories: match r.categories {
                Some(j) => {
                    serde_json::from_str(j).map_err(|e| format!("{}: categories: {e}", r.uri))?
                }
                None => Vec::new(),
            },
            ..declared(r.lastmod, r.length.map(|n| n as u64), r.digests)
        },
        media_type: r.media_type.map(|t| std::borrow::Cow::Owned(t.to_string())),
        duplicates,
        document,
        line: r.line as u64,
        scope,
    })
}

fn todo_of(r: &RawTodo<'_>, docs: &[(Arc<str>, Arc<Scope>)]) -> Result<Todo, String> {
    let validators = Validators {
        etag: r.etag.clone(),
        last_modified: r.last_modified.clone(),
    };
    Ok(Todo {
        ord: r.ord as usize,
        listed: listed_of(&r.listed, docs)?,
        action: decode(r.action, r.diffs.clone()),
        current: r.current.clone(),
        validators: (!validators.is_empty()).then_some(validators),
    })
}

fn declared(lastmod: Option<&str>, length: Option<u64>, digests: Option<&str>) -> Declared {
    Declared {
        lastmod: lastmod.and_then(|t| t.parse().ok()),
        length,
        digests: digests.map(parse_hash_attr).unwrap_or_default(),
        encoding: None,
        categories: Vec::new(),
    }
}

const FIELD: char = '\u{1f}';
const RECORD: char = '\u{1e}';

fn encode(a: &Action) -> (i64, Option<String>) {
    match a {
        Action::Create => (0, None),
        Action::Update(diffs) => (
            1,
            Some(
                diffs
                    .iter()
                    .map(|d| format!("{}{FIELD}{}{FIELD}{}", d.field, d.expected, d.actual))
                    .collect::<Vec<_>>()
                    .join(&RECORD.to_string()),
            ),
        ),
        Action::Check => (2, None),
        Action::Revalidate => (3, None),
        Action::Keep => (4, None),
    }
}

fn decode(code: i64, diffs: Option<String>) -> Action {
    match code {
        0 => Action::Create,
        1 => Action::Update(
            diffs
                .unwrap_or_default()
                .split(RECORD)
                .filter(|d| !d.is_empty())
                .map(|d| {
                    let mut p = d.splitn(3, FIELD);
                    let mut next = || p.next().unwrap_or_default().to_string();
                    Difference {
                        field: next(),
                        expected: next(),
                        actual: next(),
                    }
                })
                .collect(),
        ),
        2 => Action::Check,
        3 => Action::Revalidate,
        _ => Action::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(uri: &str, line: u64) -> Listed {
        Listed {
            uri: Url::parse(uri).unwrap(),
            declared: Declared {
                length: Some(line),
                ..Default::default()
            },
            media_type: None,
            duplicates: Vec::new(),
            document: "http://x.org/rl.xml".into(),
            line,
            scope: Arc::new(Scope::for_document(&Url::parse(uri).unwrap(), &[])),
        }
    }

    /// Issue 48: a Resource Dump's entries carry their package and place in its manifest; a
    /// URI in two packages counts once, at its first place, with the later package's entry.
    #[test]
    fn packaged_entries_come_back_by_package_in_manifest_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut listing = Listing::create(dir.path(), &Default::default()).unwrap();
        let in_package = |uri: &str, package: &str| Listed {
            document: package.into(),
            ..entry(uri, 1)
        };
        let (one, two) = ("http://x.org/p1.zip", "http://x.org/p2.zip");
        for (e, uri) in ["http://x/a", "http://x/b", "http://x/c"]
            .iter()
            .enumerate()
        {
            listing
                .push_entry(in_package(uri, one), Some(e as u64))
                .unwrap();
        }
        for (e, uri) in ["http://x/d", "http://x/b"].iter().enumerate() {
            listing
                .push_entry(in_package(uri, two), Some(e as u64))
                .unwrap();
        }
        assert_eq!(listing.take_warnings().len(), 1, "b listed twice");
        let objects = ObjectStore::at(dir.path());
        let counts = listing.plan(None, "c", &objects).unwrap();
        assert_eq!(counts.wanted, 4);
        let mut got = Vec::new();
        listing
            .each_packaged_todo(|ord, package, e| {
                got.push((ord, package.to_string(), e));
                Ok::<(), StoreError>(())
            })
            .unwrap();
        let want: Vec<(usize, String, u64)> = vec![
            (0, one.into(), 0),
            (2, one.into(), 2),
            (3, two.into(), 0),
            (1, two.into(), 1),
        ];
        assert_eq!(got, want);
    }

    /// A URI listed more than once counts once, with its later entry, at the place of its
    /// first; a warning names each later entry, in list order.
    #[test]
    fn the_later_entry_counts_at_the_first_place() {
        let dir = tempfile::tempdir().unwrap();
        let mut listing = Listing::create(dir.path(), &Default::default()).unwrap();
        for (uri, line) in [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)] {
            listing
                .push(entry(&format!("http://x.org/{uri}"), line))
                .unwrap();
        }
        assert_eq!(listing.len().unwrap(), 3);
        let mut kept = Vec::new();
        listing
            .each_listed(|l| kept.push((l.uri.to_string(), l.line, l.declared.length)))
            .unwrap();
        assert_eq!(
            kept,
            vec![
                ("http://x.org/a".to_string(), 6, Some(6)),
                ("http://x.org/b".to_string(), 5, Some(5)),
                ("http://x.org/c".to_string(), 4, Some(4)),
            ]
        );
        assert_eq!(
            listing.take_warnings(),
            vec![
                "http://x.org/rl.xml: line 3: http://x.org/a listed twice; the later entry counts",
                "http://x.org/rl.xml: line 5: http://x.org/b listed twice; the later entry counts",
                "http://x.org/rl.xml: line 6: http://x.org/a listed twice; the later entry counts",
            ]
        );
        // The scratch file goes with the listing.
        drop(listing);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// A mirror without states plans without the merge, to the same counts and jobs as the
    /// merge gives for entries the mirror does not hold: every one created, in list order, its
    /// declared lengths summed as the merge sums them (saturating, however large a hostile list
    /// makes them; an entry listed twice counted once, with its later length).
    #[test]
    fn a_first_plan_without_the_merge_counts_as_the_merge_does() {
        use crate::store::catalog::{write, NewVersion};
        let entries = [
            ("http://x.org/b", Some(u64::MAX)),
            ("http://x.org/a", Some(1 << 20)),
            ("http://x.org/c", None),
            ("http://x.org/a", Some(10)),
        ];
        let plan_with = |catalog: Option<&Catalog>, dir: &Path| {
            let mut listing = Listing::create(&dir.join("staging"), &Default::default()).unwrap();
            for (i, (uri, length)) in entries.iter().enumerate() {
                let mut l = entry(uri, i as u64 + 1);
                l.declared.length = *length;
                listing.push(l).unwrap();
            }
            let c = listing.plan(catalog, "c", &ObjectStore::at(dir)).unwrap();
            let mut jobs = Vec::new();
            for t in listing.todo(InFlight::default()).unwrap() {
                let t = t.unwrap();
                jobs.push((t.ord, t.listed.uri.to_string(), t.action, t.current));
            }
            ((c.listed, c.wanted, c.wanted_bytes, c.gone, c.live), jobs)
        };
        let dir = tempfile::tempdir().unwrap();
        let fast = plan_with(None, dir.path());
        assert_eq!(fast.0, (3, 3, u64::MAX, 0, 0));
        let order: Vec<_> = fast.1.iter().map(|j| (j.0, j.1.as_str())).collect();
        assert_eq!(
            order,
            [
                (0, "http://x.org/b"),
                (1, "http://x.org/a"),
                (2, "http://x.org/c")
            ]
        );
        // The merge, made to run by a state of another collection's resource.
        let mut c = Catalog::open(dir.path()).unwrap();
        let run = c.begin_run("baseline", None, "test").unwrap();
        let other = NewVersion {
            uri: "http://y.org/other".into(),
            collection: "o".into(),
            change: crate::model::Change::Created,
            arrived_via: crate::model::Via::Http,
            ..Default::default()
        };
        c.in_transaction(|tx| write::version(tx, run, &other))
            .unwrap();
        assert!(c.has_current_states().unwrap());
        assert_eq!(plan_with(Some(&c), dir.path()), fast);
        // Without the hostile length, the sum is exact.
        let mut listing =
            Listing::create(&dir.path().join("staging"), &Default::default()).unwrap();
        for (i, (uri, length)) in entries.iter().skip(1).enumerate() {
            let mut l = entry(uri, i as u64 + 1);
            l.declared.length = *length;
            listing.push(l).unwrap();
        }
        let counts = listing
            .plan(None, "c", &ObjectStore::at(dir.path()))
            .unwrap();
        assert_eq!(counts.wanted_bytes, 10);
    }

    /// The merge in URI order: every kind of entry and of catalog row, at both ends and in
    /// between, and URIs whose byte order differs from their case-blind order.
    #[test]
    fn the_plan_merges_the_list_with_the_catalog() {
        use crate::store::catalog::{write, NewVersion};
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(dir.path()).unwrap();
        let objects = ObjectStore::at(dir.path());
        let sha = |n: u8| format!("{n:02x}").repeat(32);
        let run = c.begin_run("baseline", None, "test").unwrap();
        let at = |s: &str| -> Option<jiff::Timestamp> { Some(s.parse().unwrap()) };
        let version = |uri: &str, collection: &str, n: u8| NewVersion {
            uri: format!("http://x/{uri}"),
            collection: collection.into(),
            change: crate::model::Change::Created,
            arrived_via: crate::model::Via::Http,
            lastmod: at("2026-01-01T10:00:00Z"),
            length_bytes: Some(4),
            sha256_hex: Some(sha(n)),
            ..Default::default()
        };
        c.in_transaction(|tx| {
            for v in [
                version("a", "c", 1),
                version("B", "c", 2),
                version("c", "c", 3),
                version("d", "o", 4),
                version("g", "c", 7),
                version("z", "c", 9),
                NewVersion {
                    change: crate::model::Change::Deleted,
                    arrived_via: crate::model::Via::Tombstone,
                    ..version("e", "c", 5)
                },
            ] {
                write::version(tx, run, &v)?;
            }
            Ok(())
        })
        .unwrap();
        // Only a's object is in the store; g's is missing.
        let a = objects.path_for(&sha(1));
        std::fs::create_dir_all(a.parent().unwrap()).unwrap();
        std::fs::write(&a, b"abcd").unwrap();

        let mut listing =
            Listing::create(&dir.path().join("staging"), &Default::default()).unwrap();
        for (uri, lastmod) in [
            ("0", "2026-01-01T10:00:00Z"),
            ("a", "2026-01-01T10:00:00Z"),
            ("f", "2026-01-01T10:00:00Z"),
            ("B", "2026-02-01T10:00:00Z"),
            ("e", "2026-01-01T10:00:00Z"),
            ("g", "2026-01-01T10:00:00Z"),
        ] {
            let mut l = entry(&format!("http://x/{uri}"), 1);
            l.declared = Declared {
                lastmod: at(lastmod),
                length: Some(4),
                digests: Vec::new(),
                encoding: None,
                categories: Vec::new(),
            };
            listing.push(l).unwrap();
        }
        let counts = listing.plan(Some(&c), "c", &objects).unwrap();
        assert_eq!(
            (counts.listed, counts.wanted, counts.gone, counts.live),
            (6, 5, 2, 5)
        );
        let mut planned = Vec::new();
        listing
            .each_planned(|uri, a| {
                let a = match a {
                    Action::Update(d) => format!("update {}", d[0].field),
                    a => format!("{a:?}"),
                };
                planned.push(format!("{uri} {a}"));
            })
            .unwrap();
        assert_eq!(
            planned,
            [
                "http://x/0 Create",
                "http://x/a Keep",
                "http://x/f Create",
                "http://x/B update lastmod",
                "http://x/e Create",
                "http://x/g update object",
            ]
        );
        let mut gone = Vec::new();
        listing
            .each_gone(|u| {
                gone.push(u.to_string());
                Ok::<(), StoreError>(())
            })
            .unwrap();
        assert_eq!(gone, ["http://x/c", "http://x/z"]);
        assert_eq!(listing.first_gone(1).unwrap(), ["http://x/c"]);

        // The transfer's view: list order, what the mirror holds of each, and each entry kept
        // in flight until its result is taken.
        let in_flight = InFlight::default();
        let todo: Vec<Todo> = listing
            .todo(in_flight.clone())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let seen: Vec<(usize, &str, Option<&str>)> = todo
            .iter()
            .map(|t| {
                let sha = t.current.as_ref().and_then(|(_, s)| s.as_deref());
                (t.ord, t.listed.uri.as_str(), sha)
            })
            .collect();
        let (b, g) = (sha(2), sha(7));
        assert_eq!(
            seen,
            [
                (0, "http://x/0", None),
                (2, "http://x/f", None),
                (3, "http://x/B", Some(b.as_str())),
                (4, "http://x/e", None),
                (5, "http://x/g", Some(g.as_str())),
            ]
        );
        assert_eq!(in_flight.lock().unwrap().len(), 5);
        assert_eq!(
            listing.todo_at(3).unwrap().listed.uri.as_str(),
            "http://x/B"
        );
    }

    #[test]
    fn actions_survive_the_round_trip() {
        let update = Action::Update(vec![
            Difference {
                field: "lastmod".into(),
                expected: "2026-01-01T10:00:00Z".into(),
                actual: "2025-01-01T00:00:00Z".into(),
            },
            Difference {
                field: "object".into(),
                expected: "objects/sha256/ab/ab".into(),
                actual: "No such file or directory (os error 2)".into(),
            },
        ]);
        for a in [Action::Create, update, Action::Check, Action::Revalidate] {
            let (code, diffs) = encode(&a);
            assert_eq!(decode(code, diffs), a);
        }
    }
}
