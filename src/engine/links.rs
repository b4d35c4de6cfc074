//! Links that lead discovery to a source's documents from pages that are not themselves
//! documents: the HTTP `Link: <…>; rel="resourcesync"` header on any representation and the
//! HTML `<link rel="resourcesync" href="…">` (ResourceSync 1.1 §8; the 2012 draft
//! §7.2.2–7.2.3), a schema.org `Dataset` in a page's JSON-LD (ARC E.3.2), and the site's
//! `/.well-known/host-meta` (RFC 6415; the 2012 draft §7.3).
//!
//! These only point: what the pointed-at document is, discovery tells by its content, as for
//! any document (each format recognises its own).

use crate::engine::documents::Documents;
use crate::error::SourceError;
use crate::net::agent::DocumentResponse;
use crate::net::{link, FetchError, Scope, Validators};
use std::cell::RefCell;
use std::io::Read;
use url::Url;

/// How much of a page is read for its links: `<head>` and the JSON-LD scripts come early.
const MAX_PAGE_BYTES: u64 = 1 << 20;
/// A host-meta document larger than this is refused.
const MAX_HOST_META_BYTES: u64 = 256 * 1024;
/// The relation type that names a Capability List (ResourceSync 1.1 §8).
const REL: &str = "resourcesync";

/// What a page says about where documents are, each list in the page's order.
#[derive(Debug, Default)]
pub(crate) struct PageLinks {
    /// The page after redirects.
    pub(crate) url: Option<Url>,
    /// `rel="resourcesync"` in the response's `Link` header.
    pub(crate) header: Vec<Url>,
    /// `<link rel="resourcesync" href>` in the HTML.
    pub(crate) html: Vec<Url>,
    /// The distributions' `contentUrl`, then the `url`, of each schema.org `Dataset` in the
    /// page's `<script type="application/ld+json">`.
    pub(crate) datasets: Vec<Url>,
}

impl PageLinks {
    pub(crate) fn is_empty(&self) -> bool {
        self.header.is_empty() && self.html.is_empty() && self.datasets.is_empty()
    }
}

/// GET `url` (a local file for `file:`) and read the links it carries: its `Link` header, and
/// when it is HTML, its first [`MAX_PAGE_BYTES`].
pub(crate) fn of_page(
    docs: &Documents<'_>,
    url: &Url,
    scope: &Scope,
) -> Result<PageLinks, SourceError> {
    let (final_url, media_type, header_values, mut reader): (_, _, _, Box<dyn Read>) =
        if url.scheme() == "file" {
            let path = url.to_file_path().map_err(|_| SourceError::Unusable {
                url: url.to_string(),
                message: "not a local file path".into(),
            })?;
            let file = std::fs::File::open(&path).map_err(|source| SourceError::Local {
                path: path.display().to_string(),
                source,
            })?;
            (url.clone(), None, Vec::new(), Box::new(file))
        } else {
            match docs.http.get(url, scope, &Validators::default())? {
                DocumentResponse::Body(b) => (b.final_url, b.media_type, b.links, b.reader),
                DocumentResponse::NotModified => return Ok(PageLinks::default()),
            }
        };
    let mut out = PageLinks {
        header: link::targets(&header_values, &final_url, REL),
        ..PageLinks::default()
    };
    let mut head = Vec::new();
    (&mut reader)
        .take(MAX_PAGE_BYTES)
        .read_to_end(&mut head)
        .map_err(|e| match url.scheme() {
            "file" => SourceError::Local {
                path: url.path().to_string(),
                source: e,
            },
            _ => SourceError::Fetch(docs.http.read_error(&final_url, e)),
        })?;
    if is_html(media_type.as_deref(), &head) {
        let (html, datasets) = html_links(&head, &final_url);
        out.html = html;
        out.datasets = datasets;
    }
    out.url = Some(final_url);
    Ok(out)
}

/// Whether a page is HTML: by its type when served with one, else by its first tag.
fn is_html(media_type: Option<&str>, head: &[u8]) -> bool {
    if let Some(t) = media_type {
        let t = t.to_ascii_lowercase();
        if t.contains("html") {
            return true;
        }
    }
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    let first: Vec<u8> = text[start..]
        .iter()
        .take(15)
        .map(|b| b.to_ascii_lowercase())
        .collect();
    first.starts_with(b"<!doctype html") || first.starts_with(b"<html")
}

/// The `<link rel="resourcesync">` targets and the JSON-LD Dataset pointers of an HTML page,
/// resolved against its `<base href>` when it has one, else `page`.
pub(crate) fn html_links(html: &[u8], page: &Url) -> (Vec<Url>, Vec<Url>) {
    use lol_html::{element, text, HtmlRewriter, Settings};
    let base = RefCell::new(page.clone());
    let hrefs = RefCell::new(Vec::<String>::new());
    let scripts = RefCell::new(Vec::<String>::new());
    let current = RefCell::new(String::new());
    {
        let settings = Settings::new()
            .append_element_content_handler(element!("base[href]", |el| {
                if let Some(h) = el.get_attribute("href") {
                    if let Ok(u) = page.join(h.trim()) {
                        *base.borrow_mut() = u;
                    }
                }
                Ok(())
            }))
            .append_element_content_handler(element!("link[rel][href]", |el| {
                let rel = el.get_attribute("rel").unwrap_or_default();
                if rel
                    .split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case(REL))
                {
                    if let Some(h) = el.get_attribute("href") {
                        hrefs.borrow_mut().push(h);
                    }
                }
                Ok(())
            }))
            .append_element_content_handler(text!("script[type='application/ld+json']", |t| {
                current.borrow_mut().push_str(t.as_str());
                if t.last_in_text_node() {
                    let s = std::mem::take(&mut *current.borrow_mut());
                    scripts.borrow_mut().push(s);
                }
                Ok(())
            }));
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        // A page cut at MAX_PAGE_BYTES, or broken HTML, still gives what was read before.
        let _ = rewriter.write(html);
        let _ = rewriter.end();
    }
    let base = base.into_inner();
    let links = hrefs
        .into_inner()
        .iter()
        .filter_map(|h| base.join(h.trim()).ok())
        .collect();
    let mut datasets = Vec::new();
    for s in scripts.into_inner() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&s) {
            dataset_urls(&v, &base, &mut datasets, 0);
        }
    }
    (links, datasets)
}

/// The URLs a JSON-LD value's `Dataset`s point at (in arrays and `@graph` too): each
/// distribution's `contentUrl`, then the dataset's `url`.
fn dataset_urls(v: &serde_json::Value, base: &Url, out: &mut Vec<Url>, depth: usize) {
    use serde_json::Value;
    if depth > 8 {
        return;
    }
    match v {
        Value::Array(items) => {
            for i in items {
                dataset_urls(i, base, out, depth + 1);
            }
        }
        Value::Object(o) => {
            if let Some(g) = o.get("@graph") {
                dataset_urls(g, base, out, depth + 1);
            }
            let is_dataset = match o.get("@type") {
                Some(Value::String(t)) => is_dataset_type(t),
                Some(Value::Array(ts)) => {
                    ts.iter().any(|t| t.as_str().is_some_and(is_dataset_type))
                }
                _ => false,
            };
            if !is_dataset {
                return;
            }
            let mut push = |s: Option<&str>| {
                if let Some(u) = s.and_then(|s| base.join(s.trim()).ok()) {
                    if !out.contains(&u) {
                        out.push(u);
                    }
                }
            };
            let distributions = match o.get("distribution") {
                Some(Value::Array(d)) => d.iter().collect(),
                Some(d @ Value::Object(_)) => vec![d],
                _ => Vec::new(),
            };
            for d in distributions {
                push(d.get("contentUrl").and_then(Value::as_str));
            }
            push(o.get("url").and_then(Value::as_str));
        }
        _ => {}
    }
}

fn is_dataset_type(t: &str) -> bool {
    matches!(
        t,
        "Dataset" | "schema:Dataset" | "https://schema.org/Dataset" | "http://schema.org/Dataset"
    )
}

/// The `rel="resourcesync"` links of the site's `/.well-known/host-meta` (RFC 6415: XRD, or
/// JRD when it is JSON). `Ok(None)` when the site has none.
pub(crate) fn host_meta(
    docs: &Documents<'_>,
    root: &Url,
    scope: &Scope,
) -> Result<Option<(Url, Vec<Url>)>, SourceError> {
    let url = root.join("/.well-known/host-meta").expect("valid path");
    let body = match docs.http.get(&url, scope, &Validators::default()) {
        Ok(DocumentResponse::Body(b)) => b,
        Ok(DocumentResponse::NotModified) => return Ok(None),
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let final_url = body.final_url.clone();
    let mut bytes = Vec::new();
    body.reader
        .take(MAX_HOST_META_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| docs.http.read_error(&final_url, e))?;
    if bytes.len() as u64 > MAX_HOST_META_BYTES {
        return Err(SourceError::Unusable {
            url: final_url.to_string(),
            message: format!("host-meta larger than {MAX_HOST_META_BYTES} bytes"),
        });
    }
    let links = host_meta_links(&bytes, &final_url).map_err(|message| SourceError::Unusable {
        url: final_url.to_string(),
        message,
    })?;
    Ok(Some((final_url, links)))
}

/// The `rel="resourcesync"` hrefs of a host-meta document, XRD (XML) or JRD (JSON).
pub(crate) fn host_meta_links(bytes: &[u8], base: &Url) -> Result<Vec<Url>, String> {
    let text = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    let mut out = Vec::new();
    let rel_matches = |rel: &str| {
        rel.split_ascii_whitespace()
            .any(|r| r.eq_ignore_ascii_case(REL))
    };
    if first == Some(&b'{') {
        let v: serde_json::Value = serde_json::from_slice(text)
            .map_err(|e| format!("host-meta (JRD) is not JSON: {e}"))?;
        for l in v
            .get("links")
            .and_then(|l| l.as_array())
            .into_iter()
            .flatten()
        {
            let rel = l.get("rel").and_then(|r| r.as_str()).unwrap_or("");
            if let (true, Some(href)) = (rel_matches(rel), l.get("href").and_then(|h| h.as_str())) {
                out.extend(base.join(href.trim()).ok());
            }
        }
        return Ok(out);
    }
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(text);
    let mut buf = Vec::new();
    let mut root_seen = false;
    loop {
        let event = reader.read_event_into(&mut buf).map_err(|e| {
            format!(
                "host-meta (XRD) is not well-formed XML at byte {}: {e}",
                reader.buffer_position()
            )
        })?;
        match event {
            Event::Start(e) | Event::Empty(e) => {
                let name = e.local_name();
                if !root_seen {
                    root_seen = true;
                    if name.as_ref() != "XRD" {
                        return Err(format!(
                            "host-meta's root element is <{}>, not <XRD> (RFC 6415)",
                            name.as_ref()
                        ));
                    }
                    continue;
                }
                if name.as_ref() != "Link" {
                    continue;
                }
                let (mut rel, mut href) = (String::new(), None);
                for a in e.attributes().flatten() {
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map(|v| v.into_owned())
                        .unwrap_or_default();
                    match a.key.local_name().as_ref() {
                        "rel" => rel = value,
                        "href" => href = Some(value),
                        _ => {}
                    }
                }
                if let (true, Some(h)) = (rel_matches(&rel), href) {
                    out.extend(base.join(h.trim()).ok());
                }
            }
            Event::Eof => break,
            Event::DocType(_) => {
                return Err("host-meta has a DOCTYPE (refused: entity expansion)".into())
            }
            _ => {}
        }
        buf.clear();
    }
    if !root_seen {
        return Err("host-meta is empty (an XRD document was expected)".into());
    }
    Ok(out)
}

/// Not there (so the next discovery step is worth trying), as opposed to failing.
pub(crate) fn is_absent(e: &FetchError) -> bool {
    matches!(
        e,
        FetchError::Status {
            status: 404 | 410 | 403,
            ..
        } | FetchError::MapNotFound { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Url {
        Url::parse("http://example.com/dataset1/").unwrap()
    }

    /// ResourceSync 1.1 §8's HTML example, with a `<base>` and other links around it.
    #[test]
    fn html_link_elements_and_base() {
        let html = br#"<!DOCTYPE html><html><head>
            <link rel="stylesheet" href="/s.css">
            <link rel="resourcesync" href="http://example.com/dataset1/capabilitylist.xml">
            <base href="http://example.com/other/">
            <LINK REL="ResourceSync alternate" HREF="cl2.xml">
            </head><body><link rel="resourcesync"></body></html>"#;
        let (links, datasets) = html_links(html, &page());
        let links: Vec<&str> = links.iter().map(|u| u.as_str()).collect();
        assert_eq!(
            links,
            [
                "http://example.com/dataset1/capabilitylist.xml",
                "http://example.com/other/cl2.xml"
            ]
        );
        assert!(datasets.is_empty());
    }

    /// ARC E.3.2's example, in a page; and a `@graph` with a distribution's `contentUrl`.
    #[test]
    fn json_ld_datasets() {
        let html = br#"<html><head><script type="application/ld+json">
{
  "@context": "https://schema.org",
  "@type": "Dataset",
  "name": "ARC Sitemap",
  "url": "https://example.com/arc-sitemap.json",
  "distribution": [
    {
      "@type": "DataDownload",
      "encodingFormat": "application/json"
    }
  ]
}
</script><script type="application/ld+json">{"@graph":[{"@type":"WebPage","url":"/x"},
 {"@type":["Thing","Dataset"],"distribution":{"contentUrl":"data/arc.json"}}]}</script>
<script type="application/ld+json">not json</script></head></html>"#;
        let (links, datasets) = html_links(html, &page());
        assert!(links.is_empty());
        let got: Vec<&str> = datasets.iter().map(|u| u.as_str()).collect();
        assert_eq!(
            got,
            [
                "https://example.com/arc-sitemap.json",
                "http://example.com/dataset1/data/arc.json"
            ]
        );
    }

    #[test]
    fn host_meta_xrd_and_jrd() {
        let xrd = br#"<?xml version="1.0" encoding="UTF-8"?>
<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0">
  <Link rel="lrdd" template="http://example.com/lrdd?uri={uri}"/>
  <Link rel="resourcesync" href="/dataset1/capabilitylist.xml"/>
</XRD>"#;
        let got = host_meta_links(xrd, &page()).unwrap();
        assert_eq!(
            got[0].as_str(),
            "http://example.com/dataset1/capabilitylist.xml"
        );
        assert_eq!(got.len(), 1);
        let jrd = br#"{"links":[{"rel":"resourcesync","href":"http://example.com/cl.xml"}]}"#;
        assert_eq!(
            host_meta_links(jrd, &page()).unwrap()[0].as_str(),
            "http://example.com/cl.xml"
        );
        let err = host_meta_links(b"<html><body>hi</body></html>", &page()).unwrap_err();
        assert!(err.contains("not <XRD>"), "{err}");
        let err = host_meta_links(b"<!DOCTYPE x [<!ENTITY a 'b'>]><XRD/>", &page()).unwrap_err();
        assert!(err.contains("DOCTYPE"), "{err}");
    }
}
