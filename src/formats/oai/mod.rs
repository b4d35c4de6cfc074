//! OAI-PMH 2.0 (http://www.openarchives.org/OAI/openarchivesprotocol.html): a repository's
//! records harvested with `ListRecords`, each record a resource named by its identifier.
//!
//! `xml.rs` reads one response; `read.rs` holds the harvest (`Identify`, then `ListRecords`
//! page by page). A record's bytes are its metadata element, made a standalone document.

mod read;
#[cfg(test)]
mod tests;
mod xml;

use crate::engine::discover::SourceKind;
use crate::engine::reader::{Doc, Options, ReadError, Reader, Registration};
use url::Url;

/// How OAI-PMH plugs in.
pub(crate) fn registration() -> Registration {
    Registration {
        kind: SourceKind::Oai,
        name: "OAI-PMH",
        recognise,
        collection,
        reader,
    }
}

/// An OAI-PMH response, whatever its verb: an error response (`badVerb`, what a bare base
/// URL answers) is one too.
fn recognise(doc: Doc<'_>) -> Option<Vec<String>> {
    match xml::root(doc.bytes) {
        Ok((Some(ns), local)) if ns == xml::OAI_NS && local == "OAI-PMH" => {}
        _ => return None,
    }
    let mut warnings = Vec::new();
    if let Some(mt) = doc.media_type {
        if !mt.to_ascii_lowercase().contains("xml") {
            warnings.push(format!(
                "{}: an OAI-PMH response served as {mt}, not text/xml (OAI-PMH 2.0 §3.1.2.1)",
                doc.url
            ));
        }
    }
    Some(warnings)
}

/// The base URL with `metadataPrefix` (and `set`): the base URL is the response's
/// `<request>` when it names the host the response came from (a repository behind a proxy
/// may name its inner host there), else the document's URL without its query.
fn collection(doc: Doc<'_>, options: &Options) -> Result<Url, ReadError> {
    let prefix = options
        .oai_prefix
        .as_deref()
        .unwrap_or(read::DEFAULT_PREFIX);
    if prefix.trim().is_empty() {
        return Err(ReadError::new(
            doc.url,
            "an empty metadataPrefix (--oai-prefix)",
        ));
    }
    let request = xml::parse(doc.bytes)
        .ok()
        .and_then(|r| r.request)
        .and_then(|r| Url::parse(&r).ok())
        .filter(|r| {
            r.scheme() == doc.url.scheme()
                && r.host_str() == doc.url.host_str()
                && r.port_or_known_default() == doc.url.port_or_known_default()
        });
    let mut base = request.unwrap_or_else(|| doc.url.clone());
    base.set_query(None);
    base.set_fragment(None);
    {
        let mut q = base.query_pairs_mut();
        q.append_pair("metadataPrefix", prefix);
        if let Some(set) = options.oai_set.as_deref().filter(|s| !s.is_empty()) {
            q.append_pair("set", set);
        }
    }
    Ok(base)
}

fn reader() -> Box<dyn Reader> {
    Box::new(read::OaiReader::new())
}
