//! A source turned from `--metadata-only` to full mirroring (`--no-metadata-only`): the run
//! first fetches the bytes of every present resource whose current version has none, as the
//! source declared them (length and digests checked as for any fetch), each recorded as a new
//! version (`updated`, by `http`). One that cannot be had is a failure of the run, named in its
//! problems, and is asked for again by the next run.

use crate::engine::apply::{self, Job, JobResult, Writer};
use crate::engine::context::{stop_early, stop_for_fault, stop_for_space, RunContext};
use crate::engine::plan::Declared;
use crate::error::Error;
use crate::model::{Change, ProblemClass};
use crate::net::Expected;
use std::sync::Arc;
use url::Url;

/// Fetch what the source's versions recorded without bytes lack, with `jobs` requests in
/// flight; nothing under `--metadata-only`. The number of resources it fetched.
pub(crate) fn fetch(ctx: &mut RunContext<'_, '_>, jobs: usize) -> Result<u64, Error> {
    if ctx.http.config().metadata_only {
        return Ok(0);
    }
    let lacking = crate::store::lacking::of_source(ctx.catalog, ctx.source_id)?;
    if lacking.is_empty() {
        return Ok(0);
    }
    ctx.progress.println(&format!(
        "incremental: {} resource(s) recorded by metadata alone: fetching their bytes",
        lacking.len()
    ));
    let declared: Vec<Declared> = (lacking.iter())
        .map(|l| Declared {
            lastmod: l.lastmod,
            length: l.declared_length,
            digests: crate::rs::digest::parse_hash_attr(l.declared_hash.as_deref().unwrap_or("")),
            encoding: l.declared_encoding.clone(),
            // Not carried over from the metadata-only state (a known gap: the next list or
            // Change List that names the resource records them again).
            categories: Vec::new(),
        })
        .collect();
    let mut work = Vec::new();
    for (i, (l, d)) in lacking.iter().zip(&declared).enumerate() {
        match Url::parse(&l.uri) {
            Ok(url) => work.push(Job {
                index: i,
                scope: Arc::new(ctx.docs.scope_for(&url)),
                urls: vec![url],
                expected: Expected {
                    length: d.length,
                    digests: d.digests.clone(),
                    media_type: l.media_type.clone(),
                },
                validators: None,
            }),
            // Recorded from a list, so a URL; a catalog that says otherwise is named.
            Err(e) => ctx.problems([(
                l.uri.as_str(),
                ProblemClass::Failed,
                format!("not a URL ({e}): its bytes cannot be fetched").as_str(),
            )])?,
        }
    }
    let (http, objects, staging) = (ctx.http, ctx.objects, ctx.staging);
    let summary = &mut *ctx.summary;
    let progress = ctx.progress;
    let mut writer = Writer::new(ctx.catalog, objects, ctx.run_id);
    let mut fetched = 0u64;
    progress.more("incremental", work.len() as u64);
    apply::transfer(http, staging, objects, work, jobs, |r| match r {
        JobResult::Fetched(i, f) => {
            let (l, d) = (&lacking[i], &declared[i]);
            progress.item(f.computed.length);
            summary.bytes += f.computed.length;
            summary.updated += 1;
            fetched += 1;
            let uri = Url::parse(&l.uri).expect("parsed above");
            let v = f.version(
                &uri,
                &l.collection,
                Change::Updated,
                d,
                l.media_type.as_deref(),
            );
            writer.version(v)?;
            Ok(())
        }
        JobResult::NotModified(_) => Ok(()),
        JobResult::Failed {
            index,
            reason,
            refused,
            ..
        } => {
            progress.item(0);
            let class = match refused {
                true => ProblemClass::Refused,
                false => ProblemClass::Failed,
            };
            match refused {
                true => summary.refused += 1,
                false => summary.failed += 1,
            }
            let why = format!("{reason} (recorded by metadata alone; its bytes are asked for again by the next run)");
            writer.problem(&lacking[index].uri, class, &why)?;
            Ok(())
        }
        JobResult::NoSpace(message) => {
            Err(stop_for_space(&mut writer, staging, message, String::new()))
        }
        JobResult::Unwritable(e) => Err(stop_for_fault(&mut writer, e)),
        JobResult::Stop(message) => Err(stop_early(&mut writer, message)),
    })?;
    writer.flush(|_| Ok(()))?;
    Ok(fetched)
}
