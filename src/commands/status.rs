//! `rsmirror status` and `rsmirror source list`: the value `access::status` returns, as text
//! or JSON; `status` exits 1 when a hint needs a person.

use crate::access::status::{self, RunBrief, Source, Status};
use crate::access::{age_of, human_age, shown_time};
use crate::commands::output::Out;
use crate::error::Error;
use crate::exit::Exit;
use crate::report::human_bytes;
use std::path::Path;

pub(crate) fn run(mirror: &Path, o: &status::Options, json: bool) -> Result<Exit, Error> {
    let st = status::summary(mirror, o)?;
    let mut out = Out::stdout();
    if json {
        out.line(&serde_json::to_string_pretty(&st).expect("serialisable"))?;
    } else {
        out.line(&text(&st))?;
    }
    out.flush()?;
    let person = st.needs_person();
    detail!(
        "rsmirror: {} source(s), {} hint(s), {person} needing a person (exit {})",
        st.sources.len(),
        st.hints.len(),
        if person > 0 { 1 } else { 0 }
    );
    Ok(st.exit())
}

/// One source as `status` and `source list` show it.
fn source_text(s: &Source, l: &mut Vec<String>) {
    if s.kind.is_empty() {
        l.push(format!("source {}", s.url));
    } else {
        l.push(format!(
            "source {} ({}, added {})",
            s.url,
            s.kind,
            shown_time(&s.added_at)
        ));
    }
    if let Some(removed) = &s.removed_at {
        l.push(format!(
            "  not followed since {} (rsmirror source remove, or a first baseline that found \
             nothing); its versions stay; rsmirror baseline {} follows it again",
            shown_time(removed),
            s.url
        ));
    }
    if s.settings.metadata_only == Some(true) {
        l.push(
            "  metadata only: each change and listed state is recorded without its bytes \
             (--metadata-only; a run with --no-metadata-only fetches them)"
                .into(),
        );
    }
    for b in &s.subscriptions {
        let or_never = |t: &Option<String>| t.as_deref().map_or("never".into(), shown_time);
        l.push(format!(
            "  push        {} via hub {} ({}), lease until {}, last notification {}, last \
             catch-up {}",
            b.topic,
            b.hub,
            b.state,
            or_never(&b.lease_until),
            or_never(&b.last_notification_at),
            or_never(&b.last_catch_up_at)
        ));
    }
    if !s.filter.is_empty() {
        l.push(format!("  filter {}", s.filter.as_options()));
    }
    if !s.settings.is_empty() {
        l.push(format!("  settings {}", s.settings.options()));
    }
    for c in &s.collections {
        l.push(format!("  collection {}", c.name));
        match &c.sync_point {
            Some(p) => l.push(format!(
                "    sync point  {} ({}), set by run {}, confirmed {} ago",
                p.at.as_deref().unwrap_or("none"),
                p.basis,
                p.run,
                human_age(p.age_seconds.unwrap_or(0))
            )),
            None => l.push("    sync point  none yet".into()),
        }
        l.push(format!(
            "    resources   {} present, {} deleted; {} versions",
            count(c.resources_present),
            count(c.resources_deleted),
            count(c.versions)
        ));
    }
    for (command, r) in &s.last_runs {
        l.push(format!("  last {command:<12} {}", run_text(r)));
    }
}

/// `rsmirror source list`: every source the mirror knows, followed or not.
pub(crate) fn list_sources(mirror: &Path, json: bool) -> Result<(), Error> {
    let sources = status::sources_of(mirror)?;
    let mut out = Out::stdout();
    if json {
        let doc = serde_json::json!({ "sources": sources });
        out.line(&serde_json::to_string_pretty(&doc).expect("serialisable"))?;
    } else if sources.is_empty() {
        out.line("no sources: rsmirror baseline SOURCE adds one")?;
    } else {
        let mut l = Vec::new();
        for (i, s) in sources.iter().enumerate() {
            if i > 0 {
                l.push(String::new());
            }
            source_text(s, &mut l);
        }
        out.line(&l.join("\n"))?;
    }
    Ok(out.flush()?)
}

fn run_text(r: &RunBrief) -> String {
    format!(
        "run {:<5} {}  {}{}",
        r.run,
        shown_time(&r.started_at),
        r.outcome.as_deref().unwrap_or("running"),
        r.exit_code
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default()
    )
}

fn since_text(t: &Option<String>, what: &str) -> String {
    match t {
        None => format!("never ({what})"),
        Some(t) => format!(
            "since {} ({} ago)",
            shown_time(t),
            human_age(age_of(t).unwrap_or(0))
        ),
    }
}

fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn text(st: &Status) -> String {
    let mut l = Vec::new();
    l.push(format!(
        "mirror      {} (schema {})",
        st.mirror, st.schema_version
    ));
    l.push(format!("catalog     {}", human_bytes(st.catalog_bytes)));
    l.push(format!(
        "objects     {} ({}){}",
        count(st.objects),
        human_bytes(st.object_bytes),
        match (&st.objects_in, st.free_bytes) {
            (Some(bucket), _) => format!(" in {bucket}"),
            (None, Some(f)) => format!("; {} free on its file system", human_bytes(f)),
            (None, None) => String::new(),
        }
    ));
    l.push(format!(
        "resources   {} present, {} deleted; {} versions",
        count(st.resources_present),
        count(st.resources_deleted),
        count(st.versions)
    ));
    if let Some(r) = &st.running {
        l.push(format!(
            "running     {} {} (or its process died: the next run marks it abandoned)",
            r.command,
            run_text(r)
        ));
    }
    for s in &st.sources {
        l.push(String::new());
        source_text(s, &mut l);
    }
    if !st.whole_mirror_runs.is_empty() {
        l.push(String::new());
        l.push("the whole mirror (every source)".into());
        for (command, r) in &st.whole_mirror_runs {
            l.push(format!("  last {command:<12} {}", run_text(r)));
        }
    }
    l.push(String::new());
    l.push("fixity".into());
    match &st.last_audit {
        None => l.push("  last audit   none".into()),
        Some(a) => {
            let mut what = a.level.clone();
            if let Some(s) = &a.sample {
                what.push_str(&format!(", slice {s}"));
            }
            if a.all_versions {
                what.push_str(", all versions");
            }
            if a.offline {
                what.push_str(", offline");
            }
            l.push(format!("  last audit   {}  {what}", run_text(&a.run)));
        }
    }
    l.push(format!(
        "  current objects re-hashed  {}",
        since_text(
            &st.fixity.current_objects_rehashed_since,
            "audit --level sha256 or fixity"
        )
    ));
    l.push(format!(
        "  every object re-hashed     {}",
        since_text(
            &st.fixity.all_objects_rehashed_since,
            "audit --all-versions"
        )
    ));
    if !st.hints.is_empty() {
        l.push(String::new());
        for h in &st.hints {
            l.push(format!("hint: {}", h.hint));
        }
    }
    l.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_with_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
    }
}
