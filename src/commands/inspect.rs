//! `rsmirror inspect`: discovery and the readers only. Lists every document reachable from the
//! source (type, URL, times, entries, digest algorithms seen) and every problem met; fetches
//! no resources and writes nothing. A malformed document gives the same error `baseline` would.

use crate::engine::discover;
use crate::engine::documents::{syntax_name, Documents, OpenedDocument};
use crate::error::{Error, SourceError};
use crate::formats;
pub use crate::report::DocumentReport;
use crate::rs::document::{Capability, Root};
use crate::rs::notification;
use crate::settings::SourceSettings;
use serde::Serialize;
use std::collections::{BTreeSet, HashSet};
use url::Url;

/// How deep indexes are followed.
const MAX_DEPTH: usize = 4;

/// Everything `inspect` found.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Inspection {
    pub source: String,
    /// Which way discovery found the source (the well-known URI, a page's links, host-meta,
    /// robots.txt, the document given).
    pub found_by: String,
    pub trail: Vec<String>,
    pub documents: Vec<DocumentReport>,
    /// Documents that could not be fetched or read, with the error.
    pub errors: Vec<String>,
}

impl Inspection {
    pub(crate) fn text(&self) -> String {
        let mut out = format!("found by {}\n", self.found_by);
        for d in &self.documents {
            out.push_str(&format!("{}  {}\n", d.kind, d.url));
            let mut facts = vec![
                format!("syntax={}", d.syntax),
                format!("entries={}", d.entries),
            ];
            for (k, v) in [
                ("at", &d.at),
                ("completed", &d.completed),
                ("from", &d.from),
                ("until", &d.until),
            ] {
                if let Some(v) = v {
                    facts.push(format!("{k}={v}"));
                }
            }
            if !d.digests.is_empty() {
                facts.push(format!("digests={}", d.digests.join(",")));
            }
            if let Some(up) = &d.up {
                facts.push(format!("up={up}"));
            }
            out.push_str(&format!("    {}\n", facts.join(" ")));
            for c in &d.channels {
                out.push_str(&format!(
                    "    push channel ({}, ResourceSync Change Notification): topic={} hub={} \
                     (not a document: not fetched; rsmirror follow subscribes to it)\n",
                    c.capability,
                    c.topic,
                    c.hub.as_ref().map_or("none named", |h| h.as_str())
                ));
            }
            for w in &d.warnings {
                out.push_str(&format!("    warning: {w}\n"));
            }
        }
        for e in &self.errors {
            out.push_str(&format!("error: {e}\n"));
        }
        out
    }
}

pub(crate) fn run(s: &SourceSettings) -> Result<Inspection, Error> {
    let http = s.http();
    let docs = Documents {
        http: &http,
        options: s.read_options(),
        allow_hosts: &s.allow_hosts,
        filter: &s.filter,
        reader: &s.reader,
        readers: &crate::formats::readers(),
    };
    let discovery = discover::discover(&docs, &s.source, None)?;
    let mut inspection = Inspection {
        source: s.source.clone(),
        found_by: discovery.found_by,
        trail: discovery.trail,
        ..Default::default()
    };
    let mut seen = HashSet::new();
    // A format that reads its documents its own way (ARC's JSON) reports them itself.
    for c in discovery.collections {
        let id = c.id.clone();
        // The document discovery read it from is reported with it (an OAI-PMH base URL).
        if let Some(p) = &c.prefetched {
            seen.insert(p.url.to_string());
        }
        match formats::of(c.kind).inspect(&docs, c) {
            None => {}
            Some(Ok(reports)) => {
                seen.insert(id);
                inspection.documents.extend(reports);
            }
            Some(Err(e)) => {
                seen.insert(id);
                inspection.errors.push(e.to_string());
            }
        }
    }
    for entry in &discovery.entries {
        walk_url(&docs, entry, 0, &mut seen, &mut inspection);
    }
    Ok(inspection)
}

fn walk_url(
    docs: &Documents<'_>,
    url: &Url,
    depth: usize,
    seen: &mut HashSet<String>,
    out: &mut Inspection,
) {
    if !seen.insert(url.to_string()) {
        return;
    }
    match docs.fetch(url, &docs.scope_for(url)) {
        Ok(doc) => walk(docs, doc, depth, seen, out),
        Err(e) => out.errors.push(e.to_string()),
    }
}

fn walk(
    docs: &Documents<'_>,
    mut doc: OpenedDocument,
    depth: usize,
    seen: &mut HashSet<String>,
    out: &mut Inspection,
) {
    let header = doc.header().clone();
    let cap = header.capability();
    let kind = format!(
        "{}{}",
        cap.as_ref().map(|c| c.name()).unwrap_or("plain sitemap"),
        if header.root == Root::SitemapIndex {
            " index"
        } else {
            ""
        }
    );
    let mut entries = 0;
    let mut algorithms = BTreeSet::new();
    let mut children = Vec::new();
    let mut channels = Vec::new();
    let result: Result<(), SourceError> = (|| {
        while let Some(e) = doc.reader.next_entry()? {
            entries += 1;
            for d in &e.md.hash {
                algorithms.insert(d.algorithm.name().to_string());
            }
            // Down the tree: index parts, a Source Description's Capability Lists, a
            // Capability List's capability documents.
            // A push channel (ResourceSync Change Notification 1.0.1: capability
            // `changelist-notification`, its `loc` a WebSub topic) is no document to GET.
            if let Some(channel) = notification::of_entry(&e) {
                channels.push(channel);
                continue;
            }
            let follow = header.root == Root::SitemapIndex
                || (header.capability() == Some(Capability::Description)
                    && e.md.capability == Some(Capability::CapabilityList))
                || header.capability() == Some(Capability::CapabilityList);
            if follow {
                children.push(e.loc);
            }
        }
        Ok(())
    })();
    channels.extend(notification::of_header(&header, &doc.url));
    let report = DocumentReport {
        url: doc.url.to_string(),
        kind,
        syntax: syntax_name(header.syntax),
        at: header.md.at.map(|t| t.to_string()),
        completed: header.md.completed.map(|t| t.to_string()),
        from: header.md.from.map(|t| t.to_string()),
        until: header.md.until.map(|t| t.to_string()),
        entries,
        digests: algorithms.into_iter().collect(),
        up: header.link("up").map(|l| l.href.to_string()),
        warnings: doc
            .reader
            .take_warnings()
            .iter()
            .map(|w| w.to_string())
            .collect(),
        channels,
    };
    out.documents.push(report);
    if let Err(e) = result {
        out.errors.push(e.to_string());
        return;
    }
    if depth < MAX_DEPTH {
        for c in children {
            walk_url(docs, &c, depth + 1, seen, out);
        }
    }
}
