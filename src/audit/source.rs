//! The source's side of an audit: which sources are compared (the one given, else the one the
//! mirror remembers, and the others it follows), with what filters, and their lists walked
//! through the formats' table ([`Formats`]) in the order they list them.

use crate::audit::spill::Entry;
use crate::engine::discover::{self, SourceKind};
use crate::engine::documents::Documents;
use crate::engine::expected::Item;
use crate::engine::format::{Formats, OwnAudit};
use crate::error::{Error, SourceError};
use crate::net::Http;
use crate::settings::{self, UsageError};
use crate::store::{Catalog, StoreError};

/// What walking the source gave besides its entries.
pub(super) struct Walk {
    /// The collections walked: resources of others are not this audit's to call extra.
    pub(super) collections: Vec<String>,
    pub(super) failed_parts: Vec<(String, String)>,
    /// The walk's own warnings, each with the number of entries handed on before it.
    pub(super) warnings: Vec<(u64, String)>,
}

/// Each source compared, with the resources the mirror takes of it: the first's as its
/// settings have it (given, `--no-filter`, or kept), the others' as they keep them.
pub(super) fn source_filters(
    s: &settings::Audit,
    catalog: &Catalog,
    source: Option<&str>,
    also: &[String],
) -> Result<Vec<(String, crate::model::Filter)>, Error> {
    let mut out = Vec::new();
    for (i, src) in source
        .into_iter()
        .chain(also.iter().map(String::as_str))
        .enumerate()
    {
        let url = discover::source_url(src)?.to_string();
        let filter = match i {
            0 => s.source.filter.clone(),
            _ => {
                let rules = catalog.source_kept(&url)?.unwrap_or_default().filter;
                crate::model::Filter::new(rules).map_err(UsageError)?
            }
        };
        out.push((src.to_string(), filter));
    }
    Ok(out)
}

/// Discover the source (and the `also` ones) and walk every collection's expected state,
/// handing each entry to `visit` in the order the source lists it.
pub(super) fn walk_source(
    s: &settings::Audit,
    formats: &Formats,
    source: &str,
    also: &[String],
    visit: &mut dyn FnMut(u64, Entry) -> Result<(), SourceError>,
) -> Result<Walk, SourceError> {
    let http = Http::new(s.source.http.clone());
    let docs = Documents {
        http: &http,
        options: s.source.read_options(),
        allow_hosts: &s.source.allow_hosts,
        // Each source's own filter is applied to its entries below.
        filter: &crate::model::Filter::default(),
        reader: &s.source.reader,
        readers: &formats.readers,
    };
    let mut collections = Vec::new();
    for src in std::iter::once(source).chain(also.iter().map(String::as_str)) {
        let filter = s.source_filters.iter().find(|(u, _)| u == src);
        let filter = filter.map(|(_, f)| f.clone()).unwrap_or_default();
        let found = discover::discover(&docs, src, None)?.collections;
        collections.extend(found.into_iter().map(|c| (c, filter.clone())));
    }
    let mut walk = Walk {
        collections: Vec::new(),
        failed_parts: Vec::new(),
        warnings: Vec::new(),
    };
    // Every entry's place in the walk (a spill's records are the same, one for one).
    let ord = std::cell::Cell::new(0u64);
    let mut visit = |e: Entry| {
        let at = ord.get();
        ord.set(at + 1);
        visit(at, e)
    };
    for (collection, filter) in collections {
        walk.collections.push(collection.id.clone());
        visit(Entry::Collection(collection.id.as_str().into()))?;
        // Each format walks its own documents; the comparison is the same.
        // What the filter leaves out is neither compared nor missing.
        let mut item = |item: Item| match &item {
            Item::Listed(l) if !filter.admits(l.uri.as_str()) => {
                visit(Entry::Skipped(l.uri.to_string()))
            }
            Item::Refused(r) if !filter.admits(&r.uri) => visit(Entry::Skipped(r.uri.clone())),
            _ => visit(Entry::Item(item)),
        };
        let expected =
            (formats.of)(collection.kind).expected_state(&docs, collection, &mut item)?;
        // What the format leaves out on purpose is neither missing nor extra.
        for uri in expected.skipped {
            visit(Entry::Skipped(uri))?;
        }
        let after = ord.get();
        let warnings = expected.walked.warnings.into_iter();
        walk.warnings.extend(warnings.map(|w| (after, w)));
        walk.failed_parts.extend(expected.walked.failed_parts);
    }
    Ok(walk)
}

/// The sources whose lists are walked and compared here, and what the formats that compare by
/// a rule of their own (SCP: `modified`, the newest snapshots) found, source by source.
pub(super) fn own_audits(
    formats: &Formats,
    catalog: &Catalog,
    s: &settings::Audit,
    source: Option<&str>,
    also: &[String],
) -> Result<(Vec<String>, Option<OwnAudit>), StoreError> {
    let sources: Vec<String> = match source {
        Some(src) => std::iter::once(src.to_string())
            .chain(also.iter().cloned())
            .collect(),
        None => catalog.remembered_source()?.into_iter().collect(),
    };
    let mut own: Option<OwnAudit> = None;
    let mut walked: Vec<String> = Vec::new();
    for src in sources {
        // Read only: the catalog may be on read-only media.
        let found = match (catalog.source_kind(&src)?, catalog.known_source_id(&src)?) {
            (Some(kind), Some(id)) => {
                (formats.of)(SourceKind::parse(&kind)).audit(s, catalog, id)?
            }
            _ => None,
        };
        match found {
            Some(a) => own = Some(merge_own(own, a)),
            None => walked.push(src),
        }
    }
    Ok((walked, own))
}

/// The SOURCE given, else the one the mirror remembers.
pub(super) fn source_of(s: &settings::Audit, catalog: &Catalog) -> Result<String, Error> {
    if s.source_given {
        return Ok(s.source.source.clone());
    }
    catalog.remembered_source()?.ok_or_else(|| {
        Error::Usage(UsageError(format!(
            "the mirror at {} remembers no source: give SOURCE, or use --offline",
            s.mirror.display()
        )))
    })
}

/// Two formats' own audits (several sources of such formats) as one.
fn merge_own(into: Option<OwnAudit>, mut more: OwnAudit) -> OwnAudit {
    let Some(mut a) = into else {
        return more;
    };
    a.findings.append(&mut more.findings);
    a.failed_parts.append(&mut more.failed_parts);
    a.warnings.append(&mut more.warnings);
    a.source_error = a.source_error.or(more.source_error);
    a.listed += more.listed;
    a.pages += more.pages;
    a
}

/// The id of a source the mirror already knows; an audit adds none (it must not change the
/// source the mirror remembers).
pub(super) fn known_source_id(catalog: &Catalog, source: &str) -> Result<Option<i64>, StoreError> {
    match discover::source_url(source) {
        Ok(url) => catalog.known_source_id(url.as_str()),
        Err(_) => Ok(None),
    }
}
