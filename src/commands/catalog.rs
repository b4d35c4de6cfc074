//! `rsmirror catalog check` and `rsmirror catalog restore`: the catalog's own health, alone, and
//! the way back from damage. Both hold the mirror's lock (no run writes meanwhile); neither
//! deletes anything: a damaged catalog is moved aside into `damaged-catalog-<time>/`.
//!
//! - `check`: SQLite's header, the seal (`store::seal`: is this the file the last run left, did
//!   it lose commits), `PRAGMA integrity_check` in full, and every copy in `catalog-copies/`
//!   proven by its SHA-256. Exit 0 when the catalog is sound, 5 when it is not.
//! - `restore [COPY]`: the newest copy that proves good (or COPY: a copy, or an SQLite catalog
//!   from a backup of one's own), unpacked and checked before it takes the damaged one's place;
//!   then what happened after the copy is found again: a baseline of each source the copy
//!   follows (`--offline`: not), which re-attaches the objects already present by digest and
//!   fetches what they do not hold. Objects newer than the copy are kept, never deleted.
//! - `rebuild [SOURCE...]`: the last resort when no copy is good: a new catalog made by a
//!   baseline of each source (named, or read from what is left of the damaged catalog), which
//!   takes every resource whose listed SHA-256 names an object already present from the store
//!   (re-hashed), not from the source. The history before the rebuild is lost (said); the
//!   objects of older versions stay in `objects/` (audit names them as strays).

use crate::error::{Error, UsageError};
use crate::exit::Exit;
use crate::store::copies::{self, Copy};
use crate::store::lock::MirrorLock;
use crate::store::{seal, StoreError};
use std::path::{Path, PathBuf};

use crate::store::health::Line;

/// `rsmirror catalog check`: what it finds, a line each (`ok`/`DAMAGED`), and the exit code.
pub(crate) fn check(mirror: &Path, out: &mut dyn FnMut(&str)) -> Result<Exit, Error> {
    present(mirror)?;
    // It only reads: on read-only media (a mirror on a read-only mount, an archive copy) no
    // run can write meanwhile, and no lock can be taken; it checks all the same.
    let _lock = match MirrorLock::acquire(mirror) {
        Err(crate::store::lock::LockError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::ReadOnlyFilesystem =>
        {
            None
        }
        lock => Some(lock?),
    };
    let lines = findings(mirror);
    let sound = lines
        .iter()
        .filter(|l| !l.what.starts_with("copy "))
        .all(|l| l.ok);
    for l in &lines {
        out(&format!(
            "{} {}",
            if l.ok { "ok     " } else { "DAMAGED" },
            l.what
        ));
    }
    if sound {
        out("the catalog is sound");
        Ok(Exit::Ok)
    } else {
        out(&format!(
            "the catalog is damaged.{}",
            crate::store::RECOVERY
        ));
        Ok(Exit::Store)
    }
}

/// Whether the catalog is there and `catalog check` finds it sound (its copies aside).
fn sound(mirror: &Path) -> bool {
    let path = mirror.join("catalog.sqlite");
    path.exists() && crate::store::health::findings(mirror).iter().all(|l| l.ok)
}

/// `restore` and `rebuild` replace a damaged catalog; a sound one only with `--force`.
fn refuse_a_sound_catalog(mirror: &Path, what: &str, force: bool) -> Result<(), Error> {
    if force || !sound(mirror) {
        return Ok(());
    }
    Err(Error::SafetyLimit(format!(
        "the catalog in {} is sound (rsmirror catalog check finds nothing wrong): {what}; \
         nothing was changed (--force to do it anyway)",
        mirror.display()
    )))
}

fn present(mirror: &Path) -> Result<(), Error> {
    if !crate::store::Catalog::present(mirror)? {
        return Err(StoreError::Missing {
            path: mirror.display().to_string(),
        }
        .into());
    }
    Ok(())
}

fn findings(mirror: &Path) -> Vec<Line> {
    let mut lines = crate::store::health::findings(mirror);
    for c in copies::list(mirror) {
        let name = c.record.file.clone();
        let proof = copies::sha256_of(&c.path)
            .map_err(|e| format!("cannot be read: {e}"))
            .and_then(|sha| match sha == c.record.zst_sha256 {
                true => Ok(()),
                false => Err(format!(
                    "SHA-256 {sha}, its record says {}",
                    c.record.zst_sha256
                )),
            });
        lines.push(Line {
            ok: proof.is_ok(),
            what: match proof {
                Ok(()) => format!(
                    "copy {name}: after run {}, made {}, {} bytes",
                    c.record.run.unwrap_or(0),
                    c.record.made,
                    c.record.bytes
                ),
                Err(e) => format!("copy {name}: {e}"),
            },
        });
    }
    if copies::list(mirror).is_empty() {
        lines.push(Line {
            ok: true,
            what: "copy: none in catalog-copies/".into(),
        });
    }
    lines
}

/// What `restore` puts back.
pub(crate) struct Restore {
    pub copy: Option<PathBuf>,
    pub offline: bool,
    /// Replace a sound catalog too.
    pub force: bool,
}

/// `rsmirror catalog restore`: the newest good copy (or the one given) in place of the
/// catalog, then a baseline of each source (unless offline). What to say comes through `say`.
pub(crate) fn restore(
    mirror: &Path,
    r: &Restore,
    say: &mut dyn FnMut(&str),
) -> Result<Exit, Error> {
    // A catalog that is gone altogether is restored too, from a copy.
    if r.copy.is_none() && copies::list(mirror).is_empty() {
        present(mirror)?;
    }
    let lock = MirrorLock::acquire(mirror)?;
    refuse_a_sound_catalog(
        mirror,
        "restoring a copy would put an older catalog in its place",
        r.force,
    )?;
    let was_sound = sound(mirror);
    let unpacked = mirror.join("catalog.sqlite.restoring");
    let _ = std::fs::remove_file(&unpacked);
    let (from, sha) = match &r.copy {
        Some(given) => (given.clone(), take_given(given, &unpacked)?),
        None => newest_good(mirror, &unpacked, say)?,
    };
    let aside = move_aside(mirror)?;
    let path = mirror.join("catalog.sqlite");
    std::fs::rename(&unpacked, &path).map_err(|e| StoreError::io("restoring", &path, e))?;
    std::fs::File::open(mirror)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io("syncing", mirror, e))?;
    seal::accept(mirror, Some(sha))?;
    say(&format!(
        "restored the catalog from {}; the {} one is kept in {}",
        from.display(),
        if was_sound { "replaced" } else { "damaged" },
        aside.display()
    ));
    let (newer, sources) = after_the_copy(mirror)?;
    drop(lock);
    if newer > 0 {
        say(&format!(
            "{newer} object(s) in objects/ are newer than the copy: kept; a baseline of each \
             source re-attaches those it still lists (audit then names the rest as strays)"
        ));
    }
    if r.offline {
        if !sources.is_empty() {
            say(&format!(
                "--offline: run rsmirror baseline of each source to find again what happened \
                 after the copy: {}",
                sources.join(", ")
            ));
        }
        return Ok(Exit::Ok);
    }
    let mut worst = Exit::Ok;
    for source in &sources {
        say(&format!("rsmirror baseline {source}"));
        let exit = baseline_of(mirror, source)?;
        if exit.code() > worst.code() {
            worst = exit;
        }
    }
    Ok(worst)
}

/// A copy or catalog named on the command line, unpacked (a copy) or copied, and checked.
fn take_given(given: &Path, unpacked: &Path) -> Result<String, Error> {
    let usage = |why: String| -> Error { UsageError(format!("{}: {why}", given.display())).into() };
    let json = {
        let mut j = given.as_os_str().to_owned();
        j.push(".json");
        PathBuf::from(j)
    };
    if json.is_file() {
        let record = std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| usage(format!("its record {} cannot be read", json.display())))?;
        let copy = Copy {
            path: given.to_path_buf(),
            record,
        };
        copies::unpack(&copy, unpacked).map_err(|e| {
            let _ = std::fs::remove_file(unpacked);
            usage(format!("not a good copy: {e}"))
        })?;
    } else {
        std::fs::copy(given, unpacked)
            .and_then(|_| std::fs::File::open(unpacked)?.sync_all())
            .map_err(|e| {
                let _ = std::fs::remove_file(unpacked);
                usage(format!("cannot be read: {e}"))
            })?;
    }
    crate::store::health::sound(unpacked).map_err(|e| {
        let _ = std::fs::remove_file(unpacked);
        usage(format!("not a sound catalog: {e}"))
    })?;
    copies::sha256_of(unpacked).map_err(|e| StoreError::io("reading", unpacked, e).into())
}

/// The newest copy that unpacks to what its record says and passes `integrity_check`.
fn newest_good(
    mirror: &Path,
    unpacked: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<(PathBuf, String), Error> {
    let all = copies::list(mirror);
    for c in &all {
        let proof =
            copies::unpack(c, unpacked).and_then(|()| crate::store::health::sound(unpacked));
        match proof {
            Ok(()) => return Ok((c.path.clone(), c.record.sha256.clone())),
            Err(e) => {
                let _ = std::fs::remove_file(unpacked);
                say(&format!("copy {} is not good: {e}", c.record.file));
            }
        }
    }
    Err(StoreError::Damaged {
        path: mirror.join("catalog.sqlite").display().to_string(),
        what: match all.len() {
            0 => "there is no copy in catalog-copies/ to restore".into(),
            n => format!("none of the {n} copies in catalog-copies/ is good"),
        },
    }
    .into())
}

/// Move the catalog, its log, its shared memory and its seal into `damaged-catalog-<time>/`.
fn move_aside(mirror: &Path) -> Result<PathBuf, Error> {
    let stamp = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string();
    let mut aside = mirror.join(format!("damaged-catalog-{stamp}"));
    let mut n = 1;
    while aside.exists() {
        n += 1;
        aside = mirror.join(format!("damaged-catalog-{stamp}-{n}"));
    }
    std::fs::create_dir(&aside).map_err(|e| StoreError::io("creating", &aside, e))?;
    for name in [
        "catalog.sqlite",
        "catalog.sqlite-wal",
        "catalog.sqlite-shm",
        seal::FILE,
    ] {
        let from = mirror.join(name);
        if from.exists() {
            std::fs::rename(&from, aside.join(name))
                .map_err(|e| StoreError::io("moving aside", &from, e))?;
        }
    }
    Ok(aside)
}

/// After a restore: how many objects the restored catalog does not name, and the sources it
/// follows.
fn after_the_copy(mirror: &Path) -> Result<(u64, Vec<String>), Error> {
    let catalog =
        crate::store::Catalog::open_read_only(mirror)?.ok_or_else(|| StoreError::Missing {
            path: mirror.display().to_string(),
        })?;
    let sources: Vec<String> = match catalog.followed_sources() {
        Ok(s) => s.into_iter().map(|(url, _, _)| url).collect(),
        // A copy of an older schema (the baseline upgrades it): the source it remembers.
        Err(_) => catalog
            .remembered_source()
            .ok()
            .flatten()
            .into_iter()
            .collect(),
    };
    let newer = crate::store::health::objects_not_named(mirror, &catalog)?;
    Ok((newer, sources))
}

/// `rsmirror catalog rebuild`: a new catalog from the sources' current lists and the objects
/// present. `sources` empty: those the damaged catalog still names.
pub(crate) fn rebuild(
    mirror: &Path,
    sources: &[String],
    force: bool,
    say: &mut dyn FnMut(&str),
) -> Result<Exit, Error> {
    let lock = MirrorLock::acquire(mirror)?;
    refuse_a_sound_catalog(
        mirror,
        "a rebuild would throw its history away (runs, earlier versions, sync points)",
        force,
    )?;
    let was_sound = sound(mirror);
    let path = mirror.join("catalog.sqlite");
    let salvaged = match path.exists() {
        true => seal::salvage(&path),
        false => Vec::new(),
    };
    // Each source with the rules and options the damaged catalog remembers for it (none for
    // a source named here that it does not know): the baselines keep them again.
    let sources: Vec<seal::Salvaged> = match sources.is_empty() {
        true => salvaged,
        false => sources
            .iter()
            .map(|url| {
                salvaged
                    .iter()
                    .find(|s| &s.url == url)
                    .cloned()
                    .unwrap_or_else(|| seal::Salvaged {
                        url: url.clone(),
                        ..Default::default()
                    })
            })
            .collect(),
    };
    if sources.is_empty() {
        return Err(UsageError(
            "no source can be read from the damaged catalog: name them, rsmirror catalog \
             rebuild SOURCE..."
                .into(),
        )
        .into());
    }
    let aside = match path.exists() {
        true => Some(move_aside(mirror)?),
        false => None,
    };
    drop(lock);
    say(&format!(
        "rebuilding the catalog from the current lists of {}: the history before this rebuild is \
         lost (runs, earlier versions, sync points){}",
        sources
            .iter()
            .map(|s| s.url.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        match &aside {
            Some(a) => format!(
                "; the {} catalog is kept in {}",
                if was_sound { "replaced" } else { "damaged" },
                a.display()
            ),
            None => String::new(),
        }
    ));
    let mut worst = Exit::Ok;
    for s in &sources {
        let mut args: Vec<String> = s
            .maps
            .iter()
            .flat_map(|(prefix, dir)| ["--map".into(), format!("{prefix}={}", dir.display())])
            .collect();
        let kept = s.kept.arguments();
        say(&format!(
            "rsmirror baseline {}{}",
            s.url,
            match kept.is_empty() {
                true => String::new(),
                false => format!(" (with what it kept: {})", kept.join(" ")),
            }
        ));
        args.extend(kept);
        let exit = run_baseline(mirror, &s.url, &args)?;
        if exit.code() > worst.code() {
            worst = exit;
        }
    }
    if let Some(catalog) = crate::store::Catalog::open_read_only(mirror)? {
        let (held, fetched) = crate::store::mirror_summary::arrivals(&catalog)?;
        say(&format!(
            "rebuilt: {held} resource(s) taken from the objects already present, {fetched} \
             fetched; objects of earlier versions stay in objects/ (audit names them as strays)"
        ));
    }
    Ok(worst)
}

/// `rsmirror baseline SOURCE --mirror MIRROR`, this same program, its output passed through
/// (the rules `--map` the catalog remembers apply as to any baseline).
fn baseline_of(mirror: &Path, source: &str) -> Result<Exit, Error> {
    run_baseline(mirror, source, &[])
}

/// [`baseline_of`] with more arguments (`--map PREFIX=DIR`, the options a source keeps).
fn run_baseline(mirror: &Path, source: &str, args: &[String]) -> Result<Exit, Error> {
    let exe =
        std::env::current_exe().map_err(|e| StoreError::io("finding", Path::new("rsmirror"), e))?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("baseline")
        .arg(source)
        .arg("--mirror")
        .arg(mirror);
    if !args.is_empty() || !crate::store::Catalog::present(mirror)? {
        // A rebuild: the mirror's folder holds its objects and copies, and no catalog yet.
        command.arg("--init-here");
    }
    command.args(args);
    let status = command
        .status()
        .map_err(|e| StoreError::io("running a baseline of", Path::new(source), e))?;
    Ok(match status.code() {
        Some(code) => Exit::from_code(code),
        // Killed by a signal: SIGINT and SIGTERM are an interruption, anything else (the OOM
        // killer's SIGKILL) a run that did not end.
        None => {
            use std::os::unix::process::ExitStatusExt;
            match status.signal() {
                Some(libc::SIGINT | libc::SIGTERM) => Exit::Interrupted,
                _ => Exit::Store,
            }
        }
    })
}
