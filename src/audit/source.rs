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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::finding::{Class, Finding};
    use std::path::Path;

    /// The settings of `rsmirror audit --mirror MIRROR SOURCE`, as the command line gives them
    /// (`--tries 1 --quiet`, level presence).
    pub(in crate::audit) fn settings_for(mirror: &Path, source: &str) -> settings::Audit {
        let options = settings::SourceOptions {
            tries: 1,
            max_retry_after: 1.0,
            max_document_size: 1 << 20,
            streams: 1,
            ..Default::default()
        };
        settings::Audit {
            mirror: mirror.to_path_buf(),
            source: settings::SourceSettings::new(source, &options).unwrap(),
            source_given: true,
            level: settings::AuditLevel::Presence,
            sample: None,
            offline: false,
            all_versions: false,
            require_fixity: false,
            refetch: None,
            report: None,
            premis: None,
            jobs: 1,
            output: settings::Output {
                quiet: true,
                verbose: 0,
                json: false,
            },
            source_filters: Vec::new(),
        }
    }

    /// A Resource List in `dir` listing `urls` (each `<url>` element's inside): its path.
    pub(in crate::audit) fn resource_list(dir: &Path, urls: &[String]) -> String {
        let mut xml = String::from(concat!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
            "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" ",
            "xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n",
            "<rs:md capability=\"resourcelist\" at=\"2026-01-01T00:00:00Z\"/>\n",
        ));
        for u in urls {
            xml.push_str(&format!("<url>{u}</url>\n"));
        }
        xml.push_str("</urlset>\n");
        let path = dir.join("resourcelist.xml");
        std::fs::write(&path, xml).unwrap();
        path.to_str().unwrap().to_string()
    }

    #[test]
    fn a_walk_hands_on_each_collection_then_its_entries_in_list_order() {
        let dir = tempfile::tempdir().unwrap();
        let urls: Vec<String> = ["a", "skip/b", "c", "skip/d"]
            .iter()
            .map(|p| format!("<loc>http://x/{p}</loc><rs:md length=\"5\"/>"))
            .collect();
        let list = resource_list(dir.path(), &urls);
        let mut s = settings_for(dir.path(), &list);
        let rules = crate::model::Rules {
            include: vec![],
            exclude: vec!["/skip/*".into()],
            category: vec![],
        };
        s.source_filters = vec![(list.clone(), crate::model::Filter::new(rules).unwrap())];
        let mut seen = Vec::new();
        let walk = walk_source(&s, &crate::formats::all(), &list, &[], &mut |ord, e| {
            seen.push(match e {
                Entry::Collection(id) => format!("{ord} collection {id}"),
                Entry::Item(Item::Listed(l)) => format!("{ord} listed {} line {}", l.uri, l.line),
                Entry::Item(Item::Refused(r)) => format!("{ord} refused {}", r.uri),
                Entry::Skipped(uri) => format!("{ord} skipped {uri}"),
            });
            Ok(())
        })
        .unwrap();
        let url = discover::source_url(&list).unwrap();
        // What the filter leaves out is handed on as skipped, in its place.
        assert_eq!(
            seen,
            [
                format!("0 collection {url}"),
                "1 listed http://x/a line 4".into(),
                "2 skipped http://x/skip/b".into(),
                "3 listed http://x/c line 6".into(),
                "4 skipped http://x/skip/d".into(),
            ]
        );
        assert_eq!(walk.collections, [url.to_string()]);
        assert!(walk.failed_parts.is_empty());
        // The walk's own warnings, each after the entries handed on before it.
        let scope =
            "a local document; resources accepted from x (its first entry), --allow-host widens";
        assert_eq!(walk.warnings, [(5, format!("{url}: {scope}"))]);
    }

    #[test]
    fn two_own_audits_are_one() {
        let own = |uri: &str, listed: u64, error: Option<&str>| OwnAudit {
            findings: vec![Finding::new(Class::Missing).uri(uri)],
            failed_parts: vec![(format!("{uri}/part"), "404".into())],
            warnings: vec![format!("{uri}: a warning")],
            source_error: error.map(|e| SourceError::Unusable {
                url: uri.into(),
                message: e.into(),
            }),
            listed,
            pages: listed + 1,
        };
        let first = merge_own(None, own("http://a", 2, None));
        assert_eq!(first.listed, 2);
        let both = merge_own(Some(first), own("http://b", 3, Some("down")));
        let uris: Vec<_> = both.findings.iter().map(|f| f.subject()).collect();
        assert_eq!(uris, ["http://a", "http://b"]);
        assert_eq!(
            both.failed_parts,
            [
                ("http://a/part".to_string(), "404".to_string()),
                ("http://b/part".to_string(), "404".to_string())
            ]
        );
        assert_eq!(
            both.warnings,
            ["http://a: a warning", "http://b: a warning"]
        );
        assert_eq!((both.listed, both.pages), (5, 7));
        // The first source error stands.
        let e = both.source_error.as_ref().map(ToString::to_string);
        let all = merge_own(Some(both), own("http://c", 0, Some("gone")));
        assert_eq!(all.source_error.map(|e| e.to_string()), e);
        assert!(e.is_some_and(|e| e.contains("down")));
    }
}
