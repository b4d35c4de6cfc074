//! Which kept objects a plan may trust without fetching them again: the look a re-run takes at
//! the object store before it keeps a resource as it is.
//!
//! A resource the source and the catalog agree on is kept only when its bytes are there too: a
//! missing or truncated object is fetched again. Taking each kept object's `stat` in the plan's
//! (URI) order read a million inodes in random order for a re-run of a million resources, most
//! of its time once they no longer fit in the kernel's caches. Instead:
//!
//! - **Presence, every object, every run**: the fan-out folders are listed in name order (what
//!   `readdir` gives, type included, reads folders, not inodes) and merged with the objects the
//!   catalog names, in name order (`versions_by_object`). An object that is not there, or is
//!   not a regular file, is a doubt.
//! - **Length, a slice per run**: the objects of some fan-out folders have their length taken,
//!   in the folder's order (a `stat` each, on the walk's thread ahead), and compared with their
//!   versions' length. A mirror of up to [`LENGTHS_PER_RUN`] versions has every folder in every
//!   slice; a larger one has `256 × LENGTHS_PER_RUN / versions` folders (rounded down, at
//!   least one) per slice, and each baseline run takes the next slice, so every object's
//!   length is looked at within about `versions / LENGTHS_PER_RUN` baselines (eleven at a
//!   million, 128 at ten million). `audit --level size`
//!   looks at every one in one run; `audit` at the default level re-hashes them.
//!
//! The doubts go to the plan's scratch copy; the merge asks about a kept object only when there
//! are any (none, on a healthy mirror: the common re-run looks nothing up).

use crate::store::fixity_claims::with_referenced_objects;
use crate::store::objects::ObjectMeta;
use crate::store::{Catalog, ObjectStore, StoreError};

/// Objects whose length a baseline takes, at most (about: a slice is whole fan-out folders).
/// A `stat` each, in folder order; 100,000 cost about a second on the benchmark machine with
/// cold caches.
pub const LENGTHS_PER_RUN: u64 = 100_000;

/// The fan-out folders whose objects' lengths this run takes: `count` folders from `first`,
/// wrapping after `ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthSlice {
    first: u16,
    count: u16,
}

impl LengthSlice {
    /// Every folder.
    pub const ALL: LengthSlice = LengthSlice {
        first: 0,
        count: 256,
    };

    /// The slice of a mirror of `versions` versions, at the `runs`-th baseline: slices of
    /// whole folders, about [`LENGTHS_PER_RUN`] objects each, taken in turn.
    pub fn nth(versions: u64, runs: u64) -> LengthSlice {
        let count = (256 * LENGTHS_PER_RUN / versions.max(1)).clamp(1, 256) as u16;
        if count == 256 {
            return LengthSlice::ALL;
        }
        let first = (runs.wrapping_mul(u64::from(count)) % 256) as u16;
        LengthSlice { first, count }
    }

    /// This run's slice, from the catalog: its versions and the baselines recorded.
    pub(crate) fn for_run(catalog: &Catalog) -> Result<LengthSlice, StoreError> {
        let (versions, runs): (i64, i64) = catalog.conn().query_row(
            "SELECT (SELECT coalesce(max(id), 0) FROM versions),
                    (SELECT count(*) FROM runs WHERE command = 'baseline')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(LengthSlice::nth(versions.max(0) as u64, runs.max(0) as u64))
    }

    /// Whether the fan-out folder `fan` (two hex digits) is in the slice.
    pub fn holds_fan(&self, fan: &str) -> bool {
        let Ok(n) = u16::from_str_radix(fan, 16) else {
            return false;
        };
        (n + 256 - self.first) % 256 < self.count
    }
}

/// What the look found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Looked {
    /// Objects the catalog names.
    pub named: u64,
    /// Of those, the ones whose length was taken.
    pub measured: u64,
    /// Objects that are missing, not files, or of another length than their versions'.
    pub doubts: u64,
}

/// Look at every object the catalog names: each one missing or not a regular file, and each
/// one in `slice` whose length differs from its versions', to `doubt` (its name, and what is
/// there instead: "no such file", "not a file", "12 bytes").
pub(crate) fn look(
    catalog: &Catalog,
    objects: &ObjectStore,
    slice: LengthSlice,
    mut doubt: impl FnMut(&str, &str) -> Result<(), StoreError>,
) -> Result<Looked, StoreError> {
    let mut looked = Looked::default();
    let mut length = catalog
        .conn()
        .prepare("SELECT length_bytes FROM versions WHERE sha256_hex = ?1 AND length_bytes IS NOT NULL LIMIT 1")?;
    let root = objects.root().to_path_buf();
    let reading = |e: std::io::Error| StoreError::io("reading", &root, e);
    // The walk's callback returns io errors; a store error met inside it waits here.
    let mut failed: Option<StoreError> = None;
    with_referenced_objects(catalog, |named| {
        let mut next = named.next_object()?.map(str::to_string);
        let measure = |fan: &str| slice.holds_fan(fan);
        let walked = objects.visit_sorted_measuring(&measure, |mut v| {
            if !v.placed {
                return Ok(());
            }
            let mut step = || -> Result<(), StoreError> {
                // Named objects before this entry are not in the store.
                while let Some(sha) = next.take_if(|s| s.as_str() < v.name) {
                    looked.named += 1;
                    looked.doubts += 1;
                    doubt(&sha, "no such file")?;
                    next = named.next_object()?.map(str::to_string);
                }
                if next.as_deref() != Some(v.name) {
                    return Ok(()); // an object the catalog does not name: audit's to report
                }
                looked.named += 1;
                let sha = next.take().unwrap_or_default();
                next = named.next_object()?.map(str::to_string);
                let fan = &sha[..2];
                if !v.is_file || slice.holds_fan(fan) {
                    let meta = v.metadata();
                    if let Some(what) = mismatch(meta, slice.holds_fan(fan), &mut looked, || {
                        Ok(length
                            .query_row([&sha], |r| r.get::<_, i64>(0))
                            .map(|n| n.max(0) as u64)
                            .ok())
                    })? {
                        looked.doubts += 1;
                        doubt(&sha, &what)?;
                    }
                }
                Ok(())
            };
            step().map_err(|e| {
                failed = Some(e);
                std::io::Error::other("stopped")
            })
        });
        if let Some(e) = failed.take() {
            return Err(e);
        }
        walked.map_err(reading)?;
        // Named objects after the last entry are not in the store either.
        while let Some(sha) = next.take() {
            looked.named += 1;
            looked.doubts += 1;
            doubt(&sha, "no such file")?;
            next = named.next_object()?.map(str::to_string);
        }
        Ok::<_, StoreError>(())
    })??;
    Ok(looked)
}

/// What is wrong with an object whose metadata is `meta`, if anything: not a regular file
/// (after following a link), or, when `measure`, of another length than `expected` says.
fn mismatch(
    meta: std::io::Result<ObjectMeta>,
    measure: bool,
    looked: &mut Looked,
    expected: impl FnOnce() -> Result<Option<u64>, StoreError>,
) -> Result<Option<String>, StoreError> {
    let meta = match meta {
        Ok(m) if m.is_file => m,
        Ok(_) => return Ok(Some("not a file".into())),
        Err(e) => return Ok(Some(e.to_string())),
    };
    if !measure {
        return Ok(None);
    }
    looked.measured += 1;
    Ok(match expected()? {
        Some(n) if n != meta.len => Some(format!("{} bytes", meta.len)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::catalog::{write, NewVersion};
    use sha2::{Digest, Sha256};

    /// A mirror of one version per body, its objects in the store; the objects' names.
    fn mirror(dir: &std::path::Path, bodies: &[&[u8]]) -> (Catalog, ObjectStore, Vec<String>) {
        let mut c = Catalog::open(dir).unwrap();
        let objects = ObjectStore::open(dir).unwrap();
        let run = c.begin_run("baseline", None, "").unwrap();
        let mut names = Vec::new();
        c.in_transaction(|tx| {
            for (i, body) in bodies.iter().enumerate() {
                let sha = hex::encode(Sha256::digest(body));
                let path = objects.path_for(&sha);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, body).unwrap();
                write::version(
                    tx,
                    run,
                    &NewVersion {
                        uri: format!("http://example.org/{i}"),
                        collection: "http://example.org/resourcelist.xml".into(),
                        change: crate::model::Change::Created,
                        sha256_hex: Some(sha.clone()),
                        length_bytes: Some(body.len() as u64),
                        arrived_via: crate::model::Via::Http,
                        ..Default::default()
                    },
                )?;
                names.push(sha);
            }
            Ok(())
        })
        .unwrap();
        (c, objects, names)
    }

    fn doubts(c: &Catalog, objects: &ObjectStore, slice: LengthSlice) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let looked = look(c, objects, slice, |sha, what| {
            out.push((sha.to_string(), what.to_string()));
            Ok(())
        })
        .unwrap();
        assert_eq!(looked.doubts as usize, out.len());
        out
    }

    /// Issue 48: presence from the folders' listings, lengths only in the slice.
    #[test]
    fn missing_objects_are_found_every_run_and_cut_ones_in_their_slice() {
        let dir = tempfile::tempdir().unwrap();
        let bodies: Vec<Vec<u8>> = (0..40).map(|i| format!("body {i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
        let (c, objects, names) = mirror(dir.path(), &refs);
        assert!(doubts(&c, &objects, LengthSlice::ALL).is_empty());

        let (gone, cut, foldered, linked) = (&names[0], &names[1], &names[2], &names[3]);
        std::fs::remove_file(objects.path_for(gone)).unwrap();
        let cut_path = objects.path_for(cut);
        let mut perms = std::fs::metadata(&cut_path).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&cut_path, perms).unwrap();
        std::fs::write(&cut_path, b"cut").unwrap();
        std::fs::remove_file(objects.path_for(foldered)).unwrap();
        std::fs::create_dir(objects.path_for(foldered)).unwrap();
        // A link to a file of the right length is the object (as a stat follows it).
        let target = dir.path().join("elsewhere");
        std::fs::copy(objects.path_for(linked), &target).unwrap();
        std::fs::remove_file(objects.path_for(linked)).unwrap();
        std::os::unix::fs::symlink(&target, objects.path_for(linked)).unwrap();

        let mut all = doubts(&c, &objects, LengthSlice::ALL);
        all.sort();
        let mut want = vec![
            (gone.clone(), "no such file".to_string()),
            (cut.clone(), "3 bytes".to_string()),
            (foldered.clone(), "not a file".to_string()),
        ];
        want.sort();
        assert_eq!(all, want);

        // A slice without the cut object's folder: the missing ones only.
        let cut_fan = u16::from_str_radix(&cut[..2], 16).unwrap();
        let elsewhere = LengthSlice {
            first: (cut_fan + 1) % 256,
            count: 255,
        };
        assert!(!elsewhere.holds_fan(&cut[..2]));
        let some = doubts(&c, &objects, elsewhere);
        assert!(some.iter().all(|(sha, _)| sha != cut), "{some:?}");
        assert_eq!(some.len(), 2, "{some:?}");
        // The slice with it finds it.
        let only = LengthSlice {
            first: cut_fan,
            count: 1,
        };
        assert!(doubts(&c, &objects, only).contains(&(cut.clone(), "3 bytes".into())));

        // No store at all: every object is missing.
        std::fs::remove_dir_all(dir.path().join("objects")).unwrap();
        assert_eq!(doubts(&c, &objects, LengthSlice::ALL).len(), names.len());
    }

    #[test]
    fn a_small_mirror_measures_every_folder_every_run() {
        for runs in 0..5 {
            assert_eq!(LengthSlice::nth(0, runs), LengthSlice::ALL);
            assert_eq!(LengthSlice::nth(LENGTHS_PER_RUN, runs), LengthSlice::ALL);
        }
        assert!((0..256).all(|f| LengthSlice::ALL.holds_fan(&format!("{f:02x}"))));
    }

    #[test]
    fn a_large_mirror_measures_every_folder_within_its_turns() {
        for versions in [
            LENGTHS_PER_RUN + 1,
            1_000_000,
            3_333_333,
            10_000_000,
            u64::MAX / 512,
        ] {
            let slice = LengthSlice::nth(versions, 0);
            let turns = 256usize.div_ceil(usize::from(slice.count));
            let mut seen = [false; 256];
            for run in 0..turns as u64 {
                let s = LengthSlice::nth(versions, run);
                let held: Vec<usize> = (0..256)
                    .filter(|f| s.holds_fan(&format!("{f:02x}")))
                    .collect();
                assert_eq!(held.len(), usize::from(s.count), "{versions} {run}");
                for f in held {
                    seen[f] = true;
                }
            }
            assert!(
                seen.iter().all(|s| *s),
                "{versions}: a folder never measured"
            );
            // About LENGTHS_PER_RUN objects a run (whole folders, at least one).
            let per_run = versions as f64 * f64::from(slice.count) / 256.0;
            assert!(
                per_run <= LENGTHS_PER_RUN as f64 || slice.count == 1,
                "{versions}: {per_run}"
            );
        }
        assert!(!LengthSlice::nth(1_000_000, 0).holds_fan("zz"));
    }
}
