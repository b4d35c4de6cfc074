//! `rsmirror source remove URL`: the mirror stops following a source. Nothing is deleted: the
//! versions and objects its runs brought stay (readable, exported, audited offline as before);
//! `incremental` without SOURCE no longer runs it, `status` no longer hints about it, and
//! `rsmirror baseline URL` follows it again. The removal is a run of its own in the record.

use crate::engine::context::OpenMirror;
use crate::engine::discover;
use crate::error::{Error, UsageError};
use crate::store::mirror_summary;
use crate::store::StoreError;
use std::path::Path;

/// Remove the source at `url` from what the mirror follows; what to tell the user.
pub(crate) fn run(mirror: &Path, url: &str, arguments: &str) -> Result<String, Error> {
    if !crate::store::Catalog::present(mirror)? {
        return Err(StoreError::Missing {
            path: mirror.display().to_string(),
        }
        .into());
    }
    let m = OpenMirror::open(mirror, ("source remove", Some(arguments)))?;
    let url = discover::source_url(url)?.to_string();
    let known = mirror_summary::sources(&m.catalog)?;
    let Some(source) = known.iter().find(|s| s.url == url) else {
        let names: Vec<&str> = known.iter().map(|s| s.url.as_str()).collect();
        return Err(UsageError(format!(
            "the mirror knows no source {url}{}",
            match names.is_empty() {
                true => String::new(),
                false => format!(" (its sources: {})", names.join(", ")),
            }
        ))
        .into());
    };
    if let Some(removed) = &source.removed_at {
        return Ok(format!("{url} is not followed already (since {removed})"));
    }
    let run_id = m
        .catalog
        .begin_run("source remove", Some(source.id), arguments)?;
    m.catalog.remove_source(&url)?;
    // Its push subscriptions (`follow`) end too: the hubs are asked to stop delivering.
    let unsubscribed = crate::follow::unsubscribe(&m.catalog, Some(&url))?;
    for line in &unsubscribed {
        say!("rsmirror: source remove: {line}");
    }
    m.catalog.end_run(run_id, "ok", 0, "{}")?;
    Ok(format!(
        "no longer following {url}: its versions stay in the mirror; rsmirror baseline {url} \
         follows it again"
    ))
}
