//! IIIF Change Discovery API 1.0 (https://iiif.io/api/discovery/1.0/): an Activity Streams
//! collection of the changes to IIIF Manifests and Collections.
//!
//! The collection (`OrderedCollection`) names its `last` page; each page
//! (`OrderedCollectionPage`) lists its activities oldest first in `orderedItems` and names the
//! page before it in `prev`. A consumer walks backwards from the newest activity and stops at
//! the first one older than its previous crawl (§3.5): [`read::IiifReader`].
//!
//! Here: how a document is recognised as one of this format ([`recognise`]) and which
//! collection it belongs to ([`collection`]).

mod read;
#[cfg(test)]
mod tests;

use crate::engine::discover::SourceKind;
use crate::engine::reader::{Doc, Options, ReadError, Reader, Registration};
use serde_json::{Map, Value};
use url::Url;

pub(crate) use read::IiifReader;

/// The IIIF Discovery context (§3.4.1), as the specification writes it.
const DISCOVERY_CONTEXT: &str = "http://iiif.io/api/discovery/1/context.json";
/// The same over https, which some publishers write.
const DISCOVERY_CONTEXT_HTTPS: &str = "https://iiif.io/api/discovery/1/context.json";
/// The Activity Streams 2.0 context.
const AS_CONTEXTS: [&str; 2] = [
    "https://www.w3.org/ns/activitystreams",
    "http://www.w3.org/ns/activitystreams",
];
/// What a `profile` media type parameter carries for this API (§4.1), scheme left out.
const DISCOVERY_PROFILE: &str = "iiif.io/api/discovery/1/context.json";

/// How IIIF Change Discovery plugs in.
pub(crate) fn registration() -> Registration {
    Registration {
        kind: SourceKind::Iiif,
        name: "IIIF Change Discovery",
        recognise,
        collection,
        reader,
    }
}

fn reader() -> Box<dyn Reader> {
    Box::new(IiifReader::new())
}

/// What a document is, for this format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Collection,
    Page,
}

/// The JSON object of a document (`None`: not JSON, or JSON that is not an object). A UTF-8
/// byte order mark is read past.
fn object(bytes: &[u8]) -> Option<Map<String, Value>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The strings of a value that is one string or an array of them (`type`, `@context`).
fn strings(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether the document is a collection or a page, by its `type`.
fn kind(o: &Map<String, Value>) -> Option<Kind> {
    let types = strings(o.get("type"));
    if types.contains(&"OrderedCollection") {
        Some(Kind::Collection)
    } else if types.contains(&"OrderedCollectionPage") {
        Some(Kind::Page)
    } else {
        None
    }
}

/// The identifier of a reference: a JSON object's `id` (or JSON-LD `@id`), a bare string, or the
/// first of an array of either (a collection's `partOf` is an array, §3.1).
fn id_of(v: Option<&Value>) -> Option<&str> {
    match v? {
        Value::String(s) => Some(s.as_str()),
        Value::Object(o) => o.get("id").or_else(|| o.get("@id")).and_then(Value::as_str),
        Value::Array(a) => a.iter().find_map(|x| id_of(Some(x))),
        _ => None,
    }
}

/// Whether `v` reads as an activity: an object with a `type` and an `object` (a `Refresh` has
/// none, §3.3).
fn is_activity(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    let types = strings(o.get("type"));
    !types.is_empty() && (o.contains_key("object") || types.contains(&"Refresh"))
}

/// The activities a document lists inline (`orderedItems`, or the `items` some publishers
/// write), if any.
fn inline_items(o: &Map<String, Value>) -> Option<&Vec<Value>> {
    o.get("orderedItems")
        .or_else(|| o.get("items"))
        .and_then(Value::as_array)
}

/// Whether `doc` is a IIIF Change Discovery collection or page: `Some` with what was read past.
///
/// The document must be a JSON `OrderedCollection` or `OrderedCollectionPage`. Its `@context`
/// must include the Discovery context (§3.4.1: it, or an array ending with it); one that is not
/// last is read with a warning. A document with the Activity Streams context alone is read with
/// a warning when it lists activities inline, or (a collection) names a `last` page. The
/// `Content-Type` should be `application/ld+json` with the Discovery `profile` (§4.1); anything
/// else is a warning, never a refusal.
pub(crate) fn recognise(doc: Doc<'_>) -> Option<Vec<String>> {
    let o = object(doc.bytes)?;
    let kind = kind(&o)?;
    let at = doc.url;
    let mut warnings = Vec::new();
    let contexts = strings(o.get("@context"));
    let discovery = contexts
        .iter()
        .position(|c| *c == DISCOVERY_CONTEXT || *c == DISCOVERY_CONTEXT_HTTPS);
    match discovery {
        Some(i) => {
            if contexts[i] == DISCOVERY_CONTEXT_HTTPS {
                warnings.push(format!(
                    "{at}: the IIIF Discovery context is written {DISCOVERY_CONTEXT_HTTPS} \
                     (the specification writes {DISCOVERY_CONTEXT}, §3.4.1)"
                ));
            }
            if i + 1 != contexts.len() {
                warnings.push(format!(
                    "{at}: the IIIF Discovery context is not the last in @context \
                     (IIIF Change Discovery 1.0 §3.4.1); read all the same"
                ));
            }
        }
        None => {
            if !contexts.iter().any(|c| AS_CONTEXTS.contains(c)) {
                return None;
            }
            let listed = match inline_items(&o) {
                Some(items) => !items.is_empty() && items.iter().all(is_activity),
                None => kind == Kind::Collection && id_of(o.get("last")).is_some(),
            };
            if !listed {
                return None;
            }
            warnings.push(format!(
                "{at}: an Activity Streams {} without the IIIF Discovery context \
                 ({DISCOVERY_CONTEXT}); read as IIIF Change Discovery 1.0",
                match kind {
                    Kind::Collection => "OrderedCollection",
                    Kind::Page => "OrderedCollectionPage",
                }
            ));
        }
    }
    if let Some(w) = doc.media_type.and_then(media_type_warning) {
        warnings.push(format!("{at}: {w}"));
    }
    Some(warnings)
}

/// What is odd about a `Content-Type` for this API (§4.1), if anything.
fn media_type_warning(media_type: &str) -> Option<String> {
    let mut parts = media_type.split(';');
    let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let profile = parts.any(|p| {
        let p = p.trim();
        p.len() > 8 && p[..8].eq_ignore_ascii_case("profile=") && p[8..].contains(DISCOVERY_PROFILE)
    });
    match essence.as_str() {
        "application/ld+json" if profile => None,
        "application/ld+json" => Some(format!(
            "served as {media_type:?} without the profile \"{DISCOVERY_CONTEXT}\" \
             (IIIF Change Discovery 1.0 §4.1)"
        )),
        "application/json" => Some(format!(
            "served as {media_type:?}, not application/ld+json with the IIIF Discovery \
             profile (IIIF Change Discovery 1.0 §4.1 allows it only when that cannot be sent)"
        )),
        _ => Some(format!(
            "served as {media_type:?}, not application/ld+json;profile=\"{DISCOVERY_CONTEXT}\" \
             (IIIF Change Discovery 1.0 §4.1); read as JSON all the same"
        )),
    }
}

/// The URL of the collection `doc` belongs to: a collection's own `id`; a page's `partOf`.
pub(crate) fn collection(doc: Doc<'_>, _: &Options) -> Result<Url, ReadError> {
    let o = object(doc.bytes)
        .ok_or_else(|| ReadError::new(doc.url, "not a JSON object (IIIF Change Discovery)"))?;
    let (id, what) = match kind(&o) {
        Some(Kind::Collection) => (o.get("id").and_then(Value::as_str), "an OrderedCollection without an id (IIIF Change Discovery 1.0 §3.1)"),
        Some(Kind::Page) => (id_of(o.get("partOf")), "an OrderedCollectionPage without partOf: the collection it belongs to is unknown (IIIF Change Discovery 1.0 §3.2)"),
        None => (None, "neither an OrderedCollection nor an OrderedCollectionPage"),
    };
    let id = id.ok_or_else(|| ReadError::new(doc.url, what))?;
    doc.url
        .join(id)
        .map_err(|e| ReadError::new(doc.url, format!("the collection's id {id:?}: {e}")))
}
