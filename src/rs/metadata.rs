//! What a `rs:ln rel="describedby"` document says about a site or a collection: its title and
//! its author, for the feeds (IFCC-0001: "metadata for the described resource (for example,
//! site title and authorship information)"; the proposal leaves the format open). Read:
//!
//! - **Atom** (RFC 4287): a `<feed>` or `<entry>` root's own `<title>` and first
//!   `<author><name>`;
//! - **HTML**: the `<title>` and `<meta name="author" content="...">`;
//! - **Dublin Core**: the first `dc:title` and `dc:creator` (elements 1.1 or terms) anywhere in
//!   an XML document (RDF/XML, `oai_dc`, a Capability List's own metadata file), or in HTML as
//!   `<meta name="DC.title">` / `<meta name="DC.creator">` (also `dcterms.`).
//!
//! Atom and HTML come first where both are given; Dublin Core fills what they leave out. The
//! reading is lenient (HTML is not XML: unclosed elements, unknown entities): what it cannot
//! read is left out, never an error; a document that gives neither is "unrecognised".

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

const ATOM_NS: &str = "http://www.w3.org/2005/Atom";
const DC_NS: [&str; 2] = [
    "http://purl.org/dc/elements/1.1/",
    "http://purl.org/dc/terms/",
];
/// Longer titles and names are cut (a feed title is a line).
const MAX_CHARS: usize = 300;

/// What a metadata document says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Described {
    /// `Atom`, `HTML`, `Dublin Core`, or `unrecognised`.
    pub format: &'static str,
    pub title: Option<String>,
    pub author: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Title,
    Author,
    DcTitle,
    DcCreator,
}

#[derive(Default)]
struct Found {
    title: Option<String>,
    author: Option<String>,
    dc_title: Option<String>,
    dc_creator: Option<String>,
}

impl Found {
    fn slot(&mut self, t: Target) -> &mut Option<String> {
        match t {
            Target::Title => &mut self.title,
            Target::Author => &mut self.author,
            Target::DcTitle => &mut self.dc_title,
            Target::DcCreator => &mut self.dc_creator,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Root {
    Atom,
    Html,
    Xml,
}

/// Read the title and author of a metadata document.
pub fn read(bytes: &[u8]) -> Described {
    let mut xml = NsReader::from_reader(bytes);
    let config = xml.config_mut();
    config.check_end_names = false;
    config.allow_unmatched_ends = true;
    config.allow_dangling_amp = true;
    config.check_comments = false;
    let mut buf = Vec::new();
    let mut root: Option<Root> = None;
    // Local names of the open elements (HTML's void elements are never pushed).
    let mut open: Vec<String> = Vec::new();
    let mut found = Found::default();
    let mut capturing: Option<(Target, usize, String)> = None;
    // A document that stops being readable ends the reading: what was found stays.
    while let Ok((ns, event)) = xml.read_resolved_event_into(&mut buf) {
        let in_ns = |want: &str| matches!(&ns, ResolveResult::Bound(n) if n.as_ref() == want);
        let in_dc = DC_NS.iter().any(|n| in_ns(n));
        let in_atom = in_ns(ATOM_NS);
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                let local = e.local_name().as_ref().to_ascii_lowercase();
                let kind = *root.get_or_insert(match (in_atom, local.as_str()) {
                    (true, "feed" | "entry") => Root::Atom,
                    (_, "html") => Root::Html,
                    _ => Root::Xml,
                });
                if kind == Root::Html && local == "meta" {
                    html_meta(e, &mut found);
                }
                let void = kind == Root::Html && is_void(&local);
                if !empty && !void {
                    open.push(local.clone());
                }
                if capturing.is_some() || empty || void {
                    continue;
                }
                let depth = open.len();
                let parent = |n: usize| open.len().checked_sub(n + 1).map(|i| open[i].as_str());
                let target = match (kind, local.as_str()) {
                    (Root::Atom, "title") if in_atom && depth == 2 => Some(Target::Title),
                    (Root::Atom, "name")
                        if in_atom && depth == 3 && parent(1) == Some("author") =>
                    {
                        Some(Target::Author)
                    }
                    (Root::Html, "title") => Some(Target::Title),
                    (_, "title") if in_dc => Some(Target::DcTitle),
                    (_, "creator") if in_dc => Some(Target::DcCreator),
                    _ => None,
                };
                if let Some(t) = target.filter(|t| found.slot(*t).is_none()) {
                    capturing = Some((t, depth, String::new()));
                }
            }
            Event::End(ref e) => {
                let local = e.local_name().as_ref().to_ascii_lowercase();
                // Close up to the matching element (HTML leaves some open).
                if let Some(i) = open.iter().rposition(|n| *n == local) {
                    open.truncate(i);
                }
                if let Some((t, depth, text)) = capturing.take() {
                    if open.len() < depth {
                        let text = tidy(&text);
                        if !text.is_empty() {
                            *found.slot(t) = Some(text);
                        }
                    } else {
                        capturing = Some((t, depth, text));
                    }
                }
            }
            Event::Text(t) => {
                if let Some((_, _, text)) = &mut capturing {
                    text.push_str(&t);
                }
            }
            Event::CData(t) => {
                if let Some((_, _, text)) = &mut capturing {
                    text.push_str(&t);
                }
            }
            Event::GeneralRef(r) => {
                if let Some((_, _, text)) = &mut capturing {
                    match r.resolve_char_ref() {
                        Ok(Some(c)) => text.push(c),
                        _ => match quick_xml::escape::resolve_xml_entity(&r) {
                            Some(s) => text.push_str(s),
                            None => text.push_str(&format!("&{};", &*r)),
                        },
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    let format = match root {
        Some(Root::Atom) if found.title.is_some() || found.author.is_some() => "Atom",
        Some(Root::Html) if found.title.is_some() || found.author.is_some() => "HTML",
        _ if found.dc_title.is_some() || found.dc_creator.is_some() => "Dublin Core",
        _ => "unrecognised",
    };
    Described {
        format,
        title: found.title.or(found.dc_title),
        author: found.author.or(found.dc_creator),
    }
}

/// `<meta name="author">`, `<meta name="DC.title">`, `<meta name="DC.creator">`.
fn html_meta(e: &BytesStart<'_>, found: &mut Found) {
    let mut name = None;
    let mut content = None;
    for a in e.attributes().with_checks(false).flatten() {
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map(|v| v.into_owned())
            .unwrap_or_else(|_| a.value.to_string());
        match a.key.local_name().as_ref().to_ascii_lowercase().as_str() {
            "name" => name = Some(value.to_ascii_lowercase()),
            "content" => content = Some(tidy(&value)),
            _ => {}
        }
    }
    let (Some(name), Some(content)) = (name, content.filter(|c| !c.is_empty())) else {
        return;
    };
    let slot = match name.as_str() {
        "author" => &mut found.author,
        "dc.title" | "dcterms.title" => &mut found.dc_title,
        "dc.creator" | "dcterms.creator" => &mut found.dc_creator,
        _ => return,
    };
    if slot.is_none() {
        *slot = Some(content);
    }
}

fn is_void(local: &str) -> bool {
    matches!(
        local,
        "meta" | "link" | "br" | "img" | "hr" | "input" | "base" | "col" | "source"
    )
}

/// Whitespace collapsed, control characters out, at most [`MAX_CHARS`].
fn tidy(s: &str) -> String {
    let words: Vec<&str> = s.split_whitespace().collect();
    words
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atom_title_and_author_of_the_feed_not_of_its_entries() {
        let d = read(
            br#"<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">
            <entry><title>not this</title><author><name>nor this</name></author></entry>
            <title type="text">My  Shrine &amp; co</title>
            <author><name>Kibi</name><email>k@example.org</email></author></feed>"#,
        );
        assert_eq!(d.format, "Atom");
        assert_eq!(d.title.as_deref(), Some("My Shrine & co"));
        assert_eq!(d.author.as_deref(), Some("Kibi"));
    }

    #[test]
    fn html_title_and_meta_author_with_unclosed_elements() {
        let d = read(
            b"<!DOCTYPE html><html><head><meta charset=utf-8><title>Kibi&#8217;s\n site</title>\
              <meta name=\"Author\" content=\"Kibi &amp; friends\"><link rel=stylesheet href=a.css>\
              </head><body><p>hi<br></body></html>",
        );
        assert_eq!(d.format, "HTML");
        assert_eq!(d.title.as_deref(), Some("Kibi\u{2019}s site"));
        assert_eq!(d.author.as_deref(), Some("Kibi & friends"));
        let dc = read(b"<html><head><meta name=\"DC.title\" content=\"T\"><meta name=\"DC.creator\" content=\"C\"></head></html>");
        assert_eq!(
            (dc.title.as_deref(), dc.author.as_deref()),
            (Some("T"), Some("C"))
        );
    }

    #[test]
    fn dublin_core_anywhere_in_xml() {
        let d = read(
            br#"<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
                 xmlns:dc="http://purl.org/dc/elements/1.1/">
               <rdf:Description rdf:about="https://example.com/my-shrine/">
                 <dc:title>A shrine</dc:title><dc:creator>Someone</dc:creator>
               </rdf:Description></rdf:RDF>"#,
        );
        assert_eq!(d.format, "Dublin Core");
        assert_eq!(d.title.as_deref(), Some("A shrine"));
        assert_eq!(d.author.as_deref(), Some("Someone"));
        let terms = read(br#"<m xmlns:t="http://purl.org/dc/terms/"><t:title>X</t:title></m>"#);
        assert_eq!(
            (terms.format, terms.title.as_deref()),
            ("Dublin Core", Some("X"))
        );
    }

    #[test]
    fn nothing_readable_is_unrecognised_never_an_error() {
        for bytes in [
            &b""[..],
            b"plain text",
            b"{\"title\": 1}",
            b"<a><b>",
            b"\xff\xfe<",
        ] {
            let d = read(bytes);
            assert_eq!(d.format, "unrecognised", "{bytes:?}");
            assert_eq!((d.title, d.author), (None, None));
        }
        // A title cut to a line.
        let long = format!("<html><title>{}</title></html>", "x".repeat(1000));
        assert_eq!(read(long.as_bytes()).title.unwrap().len(), MAX_CHARS);
    }
}
