//! `rsmirror baseline`: open the mirror (or make one), discover the source, and hand the
//! collections discovery found to their formats (`formats`, ResourceSync first), each of
//! which takes the current state its source lists into the mirror; `--dry-run` prints the
//! formats' plans instead, writing nothing. The run is recorded (`runs`), its exit code derived
//! from what happened (`engine::context`).

use crate::engine::context::{partial, OpenMirror, Outcome};
use crate::engine::discover;
use crate::engine::documents::Documents;
use crate::error::Error;
use crate::exit::Exit;
use crate::formats;
use crate::progress::Progress;
use crate::report::Summary;
use crate::settings;
use crate::store::catalog::write;
use crate::store::{Catalog, StoreError};
use std::time::Instant;

pub(crate) fn run(
    s: &settings::Baseline,
    arguments: &str,
    progress: &Progress,
) -> Result<Outcome, Error> {
    let started = Instant::now();
    let source_url = discover::source_url(&s.source.source)?.to_string();
    let source = s
        .source
        .with_remembered_maps(&s.mirror)?
        .with_kept(&s.mirror, &source_url)?;
    if s.output.verbose > 0 && !source.from_kept.is_empty() {
        progress.println(&format!("kept with {source_url}: {}", source.from_kept));
    }
    let s = &settings::Baseline {
        jobs: source.jobs.unwrap_or(s.jobs),
        source,
        ..s.clone()
    };
    let http = s.source.http();
    let docs = Documents {
        http: &http,
        options: s.source.read_options(),
        allow_hosts: &s.source.allow_hosts,
        filter: &s.source.filter,
        reader: &s.source.reader,
        readers: &crate::formats::readers(),
    };
    let mut summary = Summary {
        command: "baseline",
        source: source_url.clone(),
        mirror: s.mirror.display().to_string(),
        dry_run: s.dry_run,
        ..Default::default()
    };

    // The collection given directly (a Capability List's URL) may be one a source this
    // mirror follows holds already: refused before anything is recorded. (A catalog that
    // cannot be read as it is, an older one, is checked by the run once it is opened.)
    if let Ok(Some(catalog)) = Catalog::open_read_only(&s.mirror) {
        if let Err(e @ Error::Usage(_)) = followed_once(&catalog, &source_url, &source_url) {
            return Err(e);
        }
    }

    if s.dry_run {
        let catalog = Catalog::open_read_only(&s.mirror)?;
        let discovery = discover::discover(&docs, &s.source.source, s.capability_list.as_deref())?;
        let mut complete = true;
        for (format, collections) in formats::by_format(discovery.collections) {
            complete &= format.plan(
                &docs,
                s,
                &source_url,
                collections,
                catalog.as_ref(),
                &mut summary,
            )?;
        }
        summary.seconds = started.elapsed().as_secs_f64();
        let exit = if partial(&summary) || summary.failed > 0 || !complete {
            Exit::Partial
        } else {
            Exit::Ok
        };
        summary.exit_code = exit.code();
        return Ok(Outcome { summary, exit });
    }

    refuse_a_folder_of_other_files(s)?;
    std::fs::create_dir_all(&s.mirror).map_err(|e| StoreError::io("creating", &s.mirror, e))?;
    let mut m =
        OpenMirror::open_with(&s.mirror, s.objects.as_ref(), ("baseline", Some(arguments)))?;
    // A source baselined again is followed again, even after `rsmirror source remove`.
    let source_id = m.catalog.source_id(&source_url)?;
    m.catalog.follow_again(source_id)?;
    s.source.record_maps(&m.catalog, source_id)?;
    s.source.record_kept(&m.catalog, (source_id, &source_url))?;
    let run_id = m
        .catalog
        .begin_run("baseline", Some(source_id), arguments)?;
    summary.run_id = Some(run_id);
    if let Some(gap) = &s.crossing_gap {
        // `incremental --on-gap rebaseline`: the record says which gap this run crosses.
        m.catalog.in_transaction(|tx| {
            write::problem(
                tx,
                run_id,
                &source_url,
                crate::model::ProblemClass::Gap,
                gap,
            )
        })?;
        summary
            .warnings
            .push(format!("this baseline crosses a gap: {gap}"));
    }

    let result = (|| {
        let discovery = discover::discover(&docs, &s.source.source, s.capability_list.as_deref())?;
        if s.output.verbose > 0 {
            for step in &discovery.trail {
                progress.println(&format!("discovery: {step}"));
            }
        }
        for c in &discovery.collections {
            followed_once(&m.catalog, &c.id, &source_url)?;
        }
        // Built again by `m.finish`, whatever the outcome.
        m.catalog.defer_object_index()?;
        for (format, collections) in formats::by_format(discovery.collections) {
            let mut ctx = m.context(&http, &docs, (source_id, run_id), &mut summary, progress);
            format.baseline(&mut ctx, s, collections)?;
            m.catalog.set_source_kind(source_id, format.kind().name())?;
        }
        Ok::<(), Error>(())
    })();
    progress.finish();
    summary.seconds = started.elapsed().as_secs_f64();
    let not_taken = matches!(result, Err(Error::Source(_) | Error::Usage(_)));
    let outcome = m.finish(run_id, summary, result);
    // A source that this baseline could not read (a mistyped URL, a host that is not there:
    // exit 4; or one whose collection another source holds: exit 2) and that never found
    // anything (no sync point, no run of it created or updated a resource) is not followed: it would fail every night beside the others. Its runs stay
    // recorded; `baseline` of it again follows it. (A first baseline that read the source and
    // then failed in part stays followed: `incremental --on-gap rebaseline` finishes it.)
    if not_taken && m.catalog.found_nothing(source_id)? {
        m.catalog.remove_source(&source_url)?;
    }
    outcome
}

/// One collection, one source: `collection`, found under `source_url`, must not be a collection
/// another followed source holds (a second source would follow it twice, each run taking it
/// from the other).
fn followed_once(catalog: &Catalog, collection: &str, source_url: &str) -> Result<(), Error> {
    let Some(other) = catalog.followed_by_another(collection, source_url)? else {
        return Ok(());
    };
    let alone = if other == collection {
        String::new()
    } else {
        format!(
            "; where it lists several collections, --capability-list {collection} takes this \
             one alone"
        )
    };
    Err(settings::UsageError(format!(
        "{source_url}: its collection {collection} is followed already, as part of the source \
         {other}; a second source would follow it twice. Baseline it as that source \
         (rsmirror baseline {other}{alone}), or stop following that source first (rsmirror \
         source remove {other}: its versions stay) to follow the collection as part of \
         {source_url}"
    ))
    .into())
}

/// A mirror folder is new (absent or empty) or a mirror (it has `catalog.sqlite`): a folder of
/// other files given by mistake (`--mirror ~/Documents`) is not turned into one unless the user
/// says so with `--init-here`.
fn refuse_a_folder_of_other_files(s: &settings::Baseline) -> Result<(), Error> {
    if s.init_here || Catalog::present(&s.mirror)? {
        return Ok(());
    }
    // A mirror whose catalog is gone: a new one would start its history over.
    if !crate::store::copies::list(&s.mirror).is_empty() {
        return Err(settings::UsageError(format!(
            "--mirror {}: a mirror without its catalog (catalog.sqlite is missing, \
             catalog-copies/ holds copies of it): rsmirror catalog restore puts back the newest \
             good copy; --init-here starts a new catalog (and a new history) there",
            s.mirror.display()
        ))
        .into());
    }
    // What a first run that died before its catalog existed leaves is the mirror's own.
    const OWN: [&str; 3] = [".lock", "staging", "objects"];
    let other = std::fs::read_dir(&s.mirror).ok().and_then(|entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|name| !OWN.contains(&name.as_str()))
    });
    match other {
        Some(name) => Err(settings::UsageError(format!(
            "--mirror {}: the folder holds other files ({name} among them) and no mirror; give \
             an empty or new folder, or --init-here to make a mirror there all the same",
            s.mirror.display()
        ))
        .into()),
        None => Ok(()),
    }
}
