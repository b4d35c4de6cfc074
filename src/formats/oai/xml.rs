//! One OAI-PMH 2.0 response, read in one pass: the parts the reader acts on (§3.2: the
//! `responseDate`, the `request`, errors, `Identify`, `ListRecords` with its records and
//! `resumptionToken`), everything else skipped.

use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::name::{PrefixDeclaration, ResolveResult};
use quick_xml::NsReader;

/// The OAI-PMH 2.0 namespace (§3.2).
pub(super) const OAI_NS: &str = "http://www.openarchives.org/OAI/2.0/";

/// What a response says.
#[derive(Debug, Default)]
pub(super) struct Response {
    pub response_date: Option<String>,
    /// The `<request>` element's text: the repository's base URL as it names it.
    pub request: Option<String>,
    /// `<error code="...">message</error>`, in document order.
    pub errors: Vec<(String, String)>,
    pub identify: Option<Identify>,
    /// Whether a `<ListRecords>` element was there.
    pub list_records: bool,
    pub records: Vec<Record>,
    /// The `<resumptionToken>`'s text (`Some("")`: the empty token of the last page).
    pub token: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct Identify {
    pub granularity: Option<String>,
    pub deleted_record: Option<String>,
    pub earliest: Option<String>,
}

#[derive(Debug, Default)]
pub(super) struct Record {
    pub identifier: Option<String>,
    pub datestamp: Option<String>,
    pub deleted: bool,
    /// The single child element of `<metadata>`, standalone (see [`standalone`]).
    pub metadata: Option<Vec<u8>>,
    /// More than one element in `<metadata>` (the first is kept).
    pub extra_metadata: bool,
}

/// The metadata element being captured.
struct Capture {
    /// Its offset in the document.
    start: usize,
    /// Its depth in the path of open elements.
    depth: usize,
    /// The namespace declarations it inherits: `(prefix, namespace)`.
    inherited: Vec<(Option<String>, String)>,
}

/// The elements acted on; `Other` covers everything else (and everything inside `<metadata>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Root,
    ResponseDate,
    Request,
    Error,
    Identify,
    Granularity,
    DeletedRecord,
    Earliest,
    ListRecords,
    Record,
    Header,
    Identifier,
    Datestamp,
    Metadata,
    Token,
    Other,
}

/// The root element of `bytes`: `(namespace, local name)`, or why there is none.
pub(super) fn root(bytes: &[u8]) -> Result<(Option<String>, String), String> {
    let text = text_of(bytes)?;
    let mut r = NsReader::from_str(text);
    loop {
        match r.read_resolved_event() {
            Ok((ns, Event::Start(e) | Event::Empty(e))) => {
                return Ok((namespace(&ns), e.local_name().as_ref().to_string()));
            }
            Ok((_, Event::Eof)) => return Err("an empty document (no XML element)".into()),
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "not well-formed XML at byte {}: {e}",
                    r.error_position()
                ))
            }
        }
    }
}

fn namespace(ns: &ResolveResult<'_>) -> Option<String> {
    match ns {
        ResolveResult::Bound(n) => Some(n.as_ref().to_string()),
        _ => None,
    }
}

/// The document as text: OAI-PMH responses are UTF-8 (§3.1.2.1); a byte order mark is read past.
fn text_of(bytes: &[u8]) -> Result<&str, String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 (OAI-PMH 2.0 §3.1.2.1), invalid byte at {}",
            e.valid_up_to()
        )
    })
}

/// Read a response whose root was checked to be `OAI-PMH` in [`OAI_NS`].
pub(super) fn parse(bytes: &[u8]) -> Result<Response, String> {
    let text = text_of(bytes)?;
    let offset = text.as_ptr() as usize - bytes.as_ptr() as usize;
    let src = &bytes[offset..];
    let mut r = NsReader::from_str(text);
    let mut out = Response::default();
    let mut path: Vec<Node> = Vec::new();
    let mut buf = String::new();
    let mut capture: Option<Capture> = None;
    loop {
        let before = r.buffer_position() as usize;
        let (ns, event) = match r.read_resolved_event() {
            Ok(x) => x,
            Err(e) => {
                return Err(format!(
                    "not well-formed XML at byte {}: {e}",
                    r.error_position()
                ))
            }
        };
        let oai = matches!(&ns, ResolveResult::Bound(n) if n.as_ref() == OAI_NS);
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                let parent = path.last().copied();
                let local = e.local_name();
                let node = if oai {
                    node_of(parent, local.as_ref())
                } else {
                    Node::Other
                };
                if parent == Some(Node::Metadata) {
                    let Some(rec) = out.records.last_mut() else {
                        return Err("metadata outside a record".into());
                    };
                    if rec.metadata.is_some() || capture.is_some() {
                        rec.extra_metadata = true;
                    } else {
                        let inherited = inherited(&r, e);
                        if empty {
                            let end = r.buffer_position() as usize;
                            rec.metadata = Some(standalone(
                                &src[before..end],
                                e.name().as_ref().len(),
                                &inherited,
                            ));
                        } else {
                            capture = Some(Capture {
                                start: before,
                                depth: path.len() + 1,
                                inherited,
                            });
                        }
                    }
                }
                opened(&mut out, node, e)?;
                buf.clear();
                if empty {
                    closed(&mut out, node, "");
                } else {
                    path.push(node);
                }
            }
            Event::End(_) => {
                let node = path.pop().unwrap_or(Node::Other);
                if let Some(c) = &capture {
                    if path.len() + 1 == c.depth {
                        let end = r.buffer_position() as usize;
                        let name_len = name_len(&src[c.start..]);
                        let bytes = standalone(&src[c.start..end], name_len, &c.inherited);
                        if let Some(rec) = out.records.last_mut() {
                            rec.metadata = Some(bytes);
                        }
                        capture = None;
                    }
                }
                closed(&mut out, node, buf.trim());
                buf.clear();
            }
            Event::Text(t) => buf.push_str(&t),
            Event::CData(c) => buf.push_str(&c),
            Event::GeneralRef(g) => buf.push_str(&resolve(&g)?),
            Event::Eof if path.is_empty() => break,
            Event::Eof => {
                return Err(format!(
                    "truncated: the document ends inside {} open elements",
                    path.len()
                ))
            }
            _ => {}
        }
    }
    Ok(out)
}

fn resolve(g: &BytesRef<'_>) -> Result<String, String> {
    match g.resolve_char_ref() {
        Ok(Some(c)) => return Ok(c.to_string()),
        Ok(None) => {}
        Err(e) => return Err(e.to_string()),
    }
    quick_xml::escape::resolve_xml_entity(g)
        .map(str::to_string)
        .ok_or_else(|| format!("undefined entity &{};", &**g))
}

fn node_of(parent: Option<Node>, local: &str) -> Node {
    use Node::*;
    match (parent, local) {
        (None, "OAI-PMH") => Root,
        (Some(Root), "responseDate") => ResponseDate,
        (Some(Root), "request") => Request,
        (Some(Root), "error") => Error,
        (Some(Root), "Identify") => Identify,
        (Some(Identify), "granularity") => Granularity,
        (Some(Identify), "deletedRecord") => DeletedRecord,
        (Some(Identify), "earliestDatestamp") => Earliest,
        (Some(Root), "ListRecords") => ListRecords,
        (Some(ListRecords), "record") => Record,
        (Some(ListRecords), "resumptionToken") => Token,
        (Some(Record), "header") => Header,
        (Some(Record), "metadata") => Metadata,
        (Some(Header), "identifier") => Identifier,
        (Some(Header), "datestamp") => Datestamp,
        _ => Other,
    }
}

fn attr(e: &BytesStart<'_>, name: &str) -> Result<Option<String>, String> {
    for a in e.attributes() {
        let a = a.map_err(|e| e.to_string())?;
        if a.key.as_ref() == name {
            let v = a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map_err(|e| e.to_string())?;
            return Ok(Some(v.into_owned()));
        }
    }
    Ok(None)
}

fn opened(out: &mut Response, node: Node, e: &BytesStart<'_>) -> Result<(), String> {
    match node {
        Node::Identify => out.identify = Some(Identify::default()),
        Node::ListRecords => out.list_records = true,
        Node::Record => out.records.push(Record::default()),
        Node::Header => {
            if let Some(rec) = out.records.last_mut() {
                rec.deleted = attr(e, "status")?.is_some_and(|s| s.trim() == "deleted");
            }
        }
        Node::Error => {
            let code = attr(e, "code")?.unwrap_or_default();
            out.errors.push((code, String::new()));
        }
        _ => {}
    }
    Ok(())
}

fn closed(out: &mut Response, node: Node, text: &str) {
    if node == Node::Error {
        if let Some(e) = out.errors.last_mut() {
            e.1 = text.to_string();
        }
        return;
    }
    let text = Some(text.to_string());
    match node {
        Node::ResponseDate => out.response_date = text,
        Node::Request => out.request = text,
        Node::Granularity => identify(out).granularity = text,
        Node::DeletedRecord => identify(out).deleted_record = text,
        Node::Earliest => identify(out).earliest = text,
        Node::Identifier => {
            if let Some(r) = out.records.last_mut() {
                r.identifier = text;
            }
        }
        Node::Datestamp => {
            if let Some(r) = out.records.last_mut() {
                r.datestamp = text;
            }
        }
        Node::Token => out.token = text,
        _ => {}
    }
}

fn identify(out: &mut Response) -> &mut Identify {
    out.identify.get_or_insert_with(Identify::default)
}

/// The namespace declarations in scope at `e` that `e` does not make itself (from its
/// ancestors: the `OAI-PMH` root, `metadata`), as `(prefix, namespace)`.
fn inherited(r: &NsReader<&[u8]>, e: &BytesStart<'_>) -> Vec<(Option<String>, String)> {
    let own: Vec<Option<String>> = e
        .attributes()
        .with_checks(false)
        .flatten()
        .filter_map(|a| {
            a.key.as_namespace_binding().map(|p| match p {
                PrefixDeclaration::Default => None,
                PrefixDeclaration::Named(p) => Some(p.to_string()),
            })
        })
        .collect();
    r.resolver()
        .bindings()
        .map(|(p, ns)| {
            let p = match p {
                PrefixDeclaration::Default => None,
                PrefixDeclaration::Named(p) => Some(p.to_string()),
            };
            (p, ns.as_ref().to_string())
        })
        .filter(|(p, _)| !own.contains(p))
        .collect()
}

/// The length of the element name at the start of `tag` (which begins with `<`).
fn name_len(tag: &[u8]) -> usize {
    tag[1..]
        .iter()
        .position(|&b| matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'/' | b'>'))
        .unwrap_or(tag.len() - 1)
}

/// `element` (its exact source bytes, its name `name_len` bytes long) with the declarations
/// it inherits added to its start tag, so that it is a well-formed document on its own.
pub(super) fn standalone(
    element: &[u8],
    name_len: usize,
    inherited: &[(Option<String>, String)],
) -> Vec<u8> {
    let at = 1 + name_len;
    let mut out = Vec::with_capacity(element.len() + 64 * inherited.len());
    out.extend_from_slice(&element[..at]);
    for (prefix, ns) in inherited {
        out.extend_from_slice(b" xmlns");
        if let Some(p) = prefix {
            out.push(b':');
            out.extend_from_slice(p.as_bytes());
        }
        out.extend_from_slice(b"=\"");
        out.extend_from_slice(ns.replace('"', "&quot;").as_bytes());
        out.push(b'"');
    }
    out.extend_from_slice(&element[at..]);
    out
}
