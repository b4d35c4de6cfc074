//! Discovery (ResourceSync 1.1 §8): from whatever the user has at hand to the capability
//! documents of each collection. A site root leads to `/.well-known/resourcesync`, else to the
//! links its home page carries (an HTTP `Link: <…>; rel="resourcesync"` header, an HTML
//! `<link rel="resourcesync">`, a JSON-LD `Dataset`: `engine::links`), else to the site's
//! `/.well-known/host-meta` (the 2012 draft §7.3), else to the `Sitemap:` lines of
//! `robots.txt`; a page given that is no document leads on by its links likewise; a Source
//! Description leads to its Capability Lists; a
//! Capability List names the capability documents; a list given directly is its own
//! collection, identified by its `rs:ln rel="up"` when it has one. Types come from content,
//! never from URLs.

use crate::engine::documents::{Documents, OpenedDocument};
use crate::engine::links::is_absent;
use crate::error::SourceError;
use crate::net::{Body, Scope, Validators};
use crate::rs::document::Capability;
use std::collections::HashSet;
use std::io::Read;
use url::Url;

/// Why a collection is left out (IFCC-0001, "Processing the Capability List").
pub(crate) const NOTHING_TO_FOLLOW: &str =
    "the Capability List names no Change List (nor a Resource List): no changes can be determined";

/// How deep Source Description Indexes may nest.
const MAX_DEPTH: usize = 4;
/// robots.txt larger than this is not read further.
const MAX_ROBOTS_BYTES: u64 = 512 * 1024;

/// A set of resources with its capability documents (one Capability List, or a list given
/// directly).
pub struct Collection {
    /// ResourceSync (any generation), or another protocol found where a Sitemap was expected.
    pub kind: SourceKind,
    /// The collection's identity in the catalog: the Capability List URL, else the
    /// document's `up` link, else the document's own URL (for SCP and ARC: the sitemap URL).
    pub id: String,
    pub capability_list: Option<Url>,
    /// (capability, document URL) as the Capability List names them.
    pub capabilities: Vec<(Capability, Url)>,
    /// The document the user pointed at, already opened, when it is a capability document.
    pub opened: Option<OpenedDocument>,
    /// Another protocol's document as discovery received it (an SCP sitemap.xml), so that its
    /// module does not fetch it again.
    pub prefetched: Option<Prefetched>,
    /// An ARC sitemap as discovery received it, unread, likewise.
    pub received_json: Option<Box<Body>>,
    /// The Capability List's `rs:ln rel="describes"`: how the collection is known outside
    /// the mirror (the feed's id).
    pub describes: Option<String>,
    /// Metadata about the collection (its title, its author): the Capability List's
    /// `rs:ln rel="describedby"`, else that of its entry in the Source Description.
    pub describedby: Option<Url>,
    /// Metadata about the whole site: the Source Description's `rs:ln rel="describedby"`.
    pub site_describedby: Option<Url>,
}

pub use crate::model::SourceKind;

impl SourceKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            SourceKind::ResourceSync => "resourcesync",
            SourceKind::Scp => "scp",
            SourceKind::Arc => "arc",
            SourceKind::Oai => "oai-pmh",
            SourceKind::Iiif => "iiif",
        }
    }

    pub(crate) fn parse(s: &str) -> SourceKind {
        match s {
            "scp" => SourceKind::Scp,
            "arc" => SourceKind::Arc,
            "oai-pmh" => SourceKind::Oai,
            "iiif" => SourceKind::Iiif,
            _ => SourceKind::ResourceSync,
        }
    }
}

/// The SCP sitemap extension namespace (SCP 0.1).
pub const SCP_NS: &str = "https://scp-protocol.org/schemas/sitemap/1.0";

pub use crate::engine::documents::Prefetched;

impl Collection {
    /// The collection a format that only reads recognised (`documents::recognise`).
    pub(crate) fn recognised((kind, id, prefetched): (SourceKind, Url, Prefetched)) -> Collection {
        Collection {
            prefetched: Some(prefetched),
            ..Collection::other(kind, &id)
        }
    }

    /// The Resource List its Capability List names.
    pub(crate) fn resource_list_url(&self) -> Result<&Url, SourceError> {
        self.url_of(&Capability::ResourceList)
            .ok_or_else(|| SourceError::Unusable {
                url: self.id.clone(),
                message: "the Capability List names no resourcelist".into(),
            })
    }

    /// A collection of another protocol than ResourceSync, known by its URL.
    pub(crate) fn other(kind: SourceKind, url: &Url) -> Collection {
        Collection {
            kind,
            id: url.to_string(),
            capability_list: None,
            capabilities: Vec::new(),
            opened: None,
            prefetched: None,
            received_json: None,
            describes: None,
            describedby: None,
            site_describedby: None,
        }
    }

    /// An ARC sitemap's collection, with its body when discovery fetched it.
    pub(crate) fn arc(url: &Url, received: Option<Box<Body>>) -> Collection {
        Collection {
            received_json: received,
            ..Collection::other(SourceKind::Arc, url)
        }
    }

    /// A Capability List that names no Resource List or Resource Dump, but a Change List: a
    /// collection followed by its changes alone (IFCC-0001's sites).
    pub(crate) fn changes_only(&self) -> bool {
        self.named_by_capability_list()
            && self.url_of(&Capability::ChangeList).is_some()
            && self.url_of(&Capability::ResourceList).is_none()
            && self.url_of(&Capability::ResourceDump).is_none()
    }

    /// A Capability List that names neither a list of resources nor one of changes: "no
    /// changes can be determined" (IFCC-0001, "Processing the Capability List").
    pub(crate) fn follows_nothing(&self) -> bool {
        self.named_by_capability_list()
            && [
                Capability::ResourceList,
                Capability::ResourceDump,
                Capability::ChangeList,
                Capability::ChangeDump,
            ]
            .iter()
            .all(|c| self.url_of(c).is_none())
    }

    /// The message for a collection that [`follows_nothing`](Self::follows_nothing).
    pub(crate) fn nothing_to_follow(&self) -> String {
        format!(
            "{}{}: {NOTHING_TO_FOLLOW}; the collection is left out",
            self.id,
            self.describes
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )
    }

    fn named_by_capability_list(&self) -> bool {
        self.kind == SourceKind::ResourceSync
            && self.capability_list.is_some()
            && self.opened.is_none()
    }

    pub(crate) fn url_of(&self, cap: &Capability) -> Option<&Url> {
        self.capabilities
            .iter()
            .find(|(c, _)| c == cap)
            .map(|(_, u)| u)
    }
}

/// What discovery found, and how.
pub struct Discovery {
    pub collections: Vec<Collection>,
    /// One line per step, for `inspect` and `-v`.
    pub trail: Vec<String>,
    /// The first documents read: the Source Description, the robots.txt sitemaps, or the
    /// document given (where `inspect` starts its walk).
    pub entries: Vec<Url>,
    /// Which way the source was found (the well-known URI, a page's links, host-meta,
    /// robots.txt, the document given), for `inspect`.
    pub found_by: String,
}

/// Turn the SOURCE argument into a URL: http(s) URLs as given, anything else a local path.
pub(crate) fn source_url(source: &str) -> Result<Url, SourceError> {
    if let Ok(u) = Url::parse(source) {
        match u.scheme() {
            "http" | "https" | "file" => return Ok(u),
            _ if source.len() > 2 && source.as_bytes()[1] != b':' => {
                return Err(SourceError::Unusable {
                    url: source.into(),
                    message: format!(
                        "scheme {}: is not supported (http, https or a local path)",
                        u.scheme()
                    ),
                })
            }
            _ => {}
        }
    }
    let path = std::path::Path::new(source);
    let abs = std::fs::canonicalize(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound && looks_like_a_host(source) {
            return SourceError::Unusable {
                url: source.into(),
                message: format!(
                    "no such file or folder; for a web address give its scheme: http://{source}"
                ),
            };
        }
        SourceError::Local {
            path: source.to_string(),
            source: e,
        }
    })?;
    Url::from_file_path(&abs).map_err(|_| SourceError::Unusable {
        url: source.into(),
        message: "not a usable local path".into(),
    })
}

/// A document that is no Sitemap at all (an HTML page, JSON, text): what a catch-all server
/// sends for a path it does not have.
fn not_a_sitemap(e: &SourceError) -> bool {
    use crate::rs::sitemap::ReadErrorKind as K;
    match e {
        SourceError::Json { .. } => true,
        SourceError::Read(r) => matches!(
            r.kind,
            K::NotASitemap { .. } | K::Doctype | K::Html | K::Xml(_)
        ),
        _ => false,
    }
}

/// A SOURCE without a scheme whose first segment reads as a host (`127.0.0.1:8080/`,
/// `example.org/rs/`, `localhost`): a web address missing its `http://`, not a path.
fn looks_like_a_host(source: &str) -> bool {
    let first = source.split('/').next().unwrap_or("");
    let host = first.rsplit_once(':').map_or(first, |(h, port)| {
        if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
            h
        } else {
            first
        }
    });
    !host.is_empty()
        && (host == "localhost" || host.contains('.'))
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && !host.starts_with('.')
}

/// How much of a JSON document is looked at for an ARC sitemap's fields before it is handed to
/// the ARC reader as it streams.
const ARC_HEAD_BYTES: u64 = 1 << 20;

/// Whether `head` (a JSON document's first bytes) names a field of an ARC sitemap.
fn arc_fields(head: &[u8]) -> bool {
    let has = |name: &[u8]| head.windows(name.len()).any(|w| w == name);
    has(b"\"arc_sitemap_version\"")
        || has(b"\"pages\"")
        || has(b"\"site\"")
        || crate::engine::documents::arc_yaml(head)
}

/// Discover the collections behind `source`. `only` keeps just one Capability List.
pub(crate) fn discover(
    docs: &Documents<'_>,
    source: &str,
    only: Option<&str>,
) -> Result<Discovery, SourceError> {
    let url = source_url(source)?;
    let mut d = Discoverer {
        docs,
        only: only.map(|s| s.to_string()),
        seen: HashSet::new(),
        describedby: std::collections::HashMap::new(),
        site_describedby: None,
        out: Discovery {
            collections: Vec::new(),
            trail: Vec::new(),
            entries: Vec::new(),
            found_by: String::new(),
        },
    };
    let scope = docs.scope_for(&url);
    if url.scheme() != "file" && matches!(url.path(), "" | "/") && url.query().is_none() {
        d.site_root(&url, &scope)?;
    } else {
        d.out.entries.push(url.clone());
        d.document(&url, &scope, 0)?;
    }
    if d.out.found_by.is_empty() {
        d.out.found_by = format!("the document given ({url})");
    }
    if let Some(only) = &d.only {
        if !d
            .out
            .collections
            .iter()
            .any(|c| c.capability_list.as_ref().map(|u| u.as_str()) == Some(only.as_str()))
        {
            return Err(SourceError::Unusable {
                url: source.into(),
                message: format!(
                    "--capability-list {only} is not among the Capability Lists found"
                ),
            });
        }
    }
    if d.out.collections.is_empty() {
        return Err(SourceError::Unusable {
            url: url.to_string(),
            message: "no Capability List or Resource List found".into(),
        });
    }
    for c in &mut d.out.collections {
        c.site_describedby = d.site_describedby.clone();
    }
    Ok(d.out)
}

struct Discoverer<'a, 'b> {
    docs: &'a Documents<'b>,
    only: Option<String>,
    seen: HashSet<String>,
    /// The `rs:ln rel="describedby"` of each Capability List's entry in a Source Description.
    describedby: std::collections::HashMap<String, Url>,
    /// The first Source Description's own `rs:ln rel="describedby"`.
    site_describedby: Option<Url>,
    out: Discovery,
}

impl Discoverer<'_, '_> {
    fn site_root(&mut self, root: &Url, scope: &Scope) -> Result<(), SourceError> {
        let well_known = root.join("/.well-known/resourcesync").expect("valid path");
        match self.docs.fetch(&well_known, scope) {
            Ok(doc) => {
                self.out.trail.push(format!("{well_known}: found"));
                self.found(format!("the well-known URI {well_known}"));
                self.out.entries.push(doc.url.clone());
                return self.opened(doc, scope, 0);
            }
            Err(SourceError::Fetch(e)) if is_absent(&e) => {
                self.out
                    .trail
                    .push(format!("{well_known}: {e}; trying the site's links"));
            }
            // A catch-all web application answers every path with a 200 page: not a Source
            // Description, so the site publishes none there (ResourceSync 1.1 §5 lets
            // robots.txt point to it instead).
            Err(e @ (SourceError::Read(_) | SourceError::Json { .. })) if not_a_sitemap(&e) => {
                self.out.trail.push(format!(
                    "{well_known}: not a ResourceSync document ({e}); trying the site's links"
                ));
            }
            Err(e) => return Err(e),
        }
        if self.by_links(root, scope, 0)? {
            return Ok(());
        }
        match crate::engine::links::host_meta(self.docs, root, scope)? {
            Some((at, targets)) if !targets.is_empty() => {
                self.found(format!("the site's host-meta ({at}, rel=\"resourcesync\")"));
                let inner = self.docs.scope_for(&at);
                for t in targets {
                    self.out
                        .trail
                        .push(format!("{at}: Link rel=\"resourcesync\" {t}"));
                    self.out.entries.push(t.clone());
                    self.document(&t, &inner, 1)?;
                }
                return Ok(());
            }
            Some((at, _)) => self.out.trail.push(format!(
                "{at}: no rel=\"resourcesync\" link; trying robots.txt"
            )),
            None => self
                .out
                .trail
                .push("no /.well-known/host-meta; trying robots.txt".into()),
        }
        let robots = root.join("/robots.txt").expect("valid path");
        let sitemaps = match self.robots_sitemaps(&robots, scope) {
            Ok(s) => s,
            Err(SourceError::Fetch(e)) if is_absent(&e) => Vec::new(),
            Err(e) => return Err(e),
        };
        if sitemaps.is_empty() {
            // ARC sitemaps live at fixed paths.
            for path in ["/.well-known/arc-sitemap.json", "/arc-sitemap.json"] {
                let url = root.join(path).expect("valid path");
                match self.docs.fetch(&url, scope) {
                    Err(SourceError::Json { url, received }) => {
                        self.out.trail.push(format!("{url}: ARC sitemap"));
                        self.found(format!("the ARC sitemap at its well-known path {url}"));
                        self.out.collections.push(Collection::arc(&url, received));
                        return Ok(());
                    }
                    Err(SourceError::Fetch(e)) if is_absent(&e) => {}
                    Err(e) => return Err(e),
                    Ok(_) => {}
                }
            }
            return Err(SourceError::Unusable {
                url: root.to_string(),
                message: "no /.well-known/resourcesync, no rel=\"resourcesync\" link or JSON-LD Dataset on the home page, no host-meta link, no Sitemap: line in robots.txt and no ARC sitemap".into(),
            });
        }
        self.found(format!("the Sitemap: lines of {robots}"));
        for s in sitemaps {
            self.out.trail.push(format!("{robots}: Sitemap: {s}"));
            self.out.entries.push(s.clone());
            self.document(&s, scope, 0)?;
        }
        Ok(())
    }

    /// Record the first way that led to the source.
    fn found(&mut self, how: String) {
        if self.out.found_by.is_empty() {
            self.out.found_by = how;
        }
    }

    /// Follow the links `page` carries to a source's documents: its `Link` header's and its
    /// HTML's `rel="resourcesync"` (ResourceSync 1.1 §8), else the JSON-LD `Dataset`s it
    /// describes (ARC E.3.2; the first whose document rsmirror reads). False when it carries
    /// none (or is absent).
    fn by_links(&mut self, page: &Url, scope: &Scope, depth: usize) -> Result<bool, SourceError> {
        use crate::engine::links;
        let found = match links::of_page(self.docs, page, scope) {
            Ok(l) => l,
            Err(SourceError::Fetch(e)) if is_absent(&e) => return Ok(false),
            Err(e) => return Err(e),
        };
        if found.is_empty() {
            self.out.trail.push(format!(
                "{page}: no rel=\"resourcesync\" link, no JSON-LD Dataset"
            ));
            return Ok(false);
        }
        let at = found.url.clone().unwrap_or_else(|| page.clone());
        // The page is no document: the documents it points at are where walks start.
        self.out.entries.retain(|e| e != page && *e != at);
        let inner = if at.scheme() == "file" {
            scope.clone()
        } else {
            self.docs.scope_for(&at)
        };
        for (how, targets) in [
            ("HTTP Link header rel=\"resourcesync\"", &found.header),
            ("HTML <link rel=\"resourcesync\">", &found.html),
        ] {
            if targets.is_empty() {
                continue;
            }
            self.found(format!("the {how} of {at}"));
            for t in targets {
                self.out.trail.push(format!("{at}: {how} {t}"));
                self.out.entries.push(t.clone());
                self.document(t, &inner, depth + 1)?;
            }
            return Ok(true);
        }
        for t in &found.datasets {
            self.out.trail.push(format!("{at}: JSON-LD Dataset {t}"));
            let before = self.out.collections.len();
            match self.document(t, &inner, depth + 1) {
                Ok(()) if self.out.collections.len() > before => {
                    self.found(format!("the JSON-LD Dataset of {at}"));
                    self.out.entries.push(t.clone());
                    return Ok(true);
                }
                Ok(()) => {}
                Err(e) => self
                    .out
                    .trail
                    .push(format!("{t}: not a source document ({e})")),
            }
        }
        Ok(false)
    }

    fn robots_sitemaps(&self, robots: &Url, scope: &Scope) -> Result<Vec<Url>, SourceError> {
        let body = match self.docs.http.get(robots, scope, &Validators::default())? {
            crate::net::agent::DocumentResponse::Body(b) => b,
            crate::net::agent::DocumentResponse::NotModified => return Ok(Vec::new()),
        };
        let mut text = String::new();
        body.reader
            .take(MAX_ROBOTS_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| SourceError::Unusable {
                url: robots.to_string(),
                message: format!("unreadable robots.txt: {e}"),
            })?;
        let mut out = Vec::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            if key.trim().eq_ignore_ascii_case("sitemap") {
                if let Ok(u) = body.final_url.join(value.trim()) {
                    out.push(u);
                }
            }
        }
        Ok(out)
    }

    fn document(&mut self, url: &Url, scope: &Scope, depth: usize) -> Result<(), SourceError> {
        if !self.seen.insert(url.to_string()) {
            self.out
                .trail
                .push(format!("{url}: already visited (cycle), skipped"));
            return Ok(());
        }
        if depth > MAX_DEPTH {
            return Err(SourceError::Unusable {
                url: url.to_string(),
                message: format!("Source Descriptions nested deeper than {MAX_DEPTH} levels"),
            });
        }
        match self.docs.fetch(url, scope) {
            Ok(doc) => self.opened(doc, scope, depth),
            Err(SourceError::Json { url, received }) => self.json(&url, received, scope),
            // Not a Sitemap: a document another format reads (an OAI-PMH response), asked
            // by what it is, else the Sitemap reader's word stands.
            Err(e @ SourceError::Read(_)) if not_a_sitemap(&e) => {
                match crate::engine::documents::recognise(
                    self.docs,
                    url,
                    scope,
                    None,
                    &mut self.out.trail,
                )? {
                    Some(r) => {
                        self.out.collections.push(Collection::recognised(r));
                        Ok(())
                    }
                    // A page that is no document may point at one (ResourceSync 1.1 §8).
                    None if self.by_links(url, scope, depth)? => Ok(()),
                    None => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// A JSON document where a Sitemap was expected: an ARC sitemap (told by its own fields,
    /// read as it streams), else whatever format recognises it (a IIIF Change Discovery
    /// collection), else not a source rsmirror reads.
    fn json(
        &mut self,
        url: &Url,
        received: Option<Box<Body>>,
        scope: &Scope,
    ) -> Result<(), SourceError> {
        let Some(mut body) = received else {
            self.out.trail.push(format!("{url}: JSON (an ARC sitemap)"));
            self.out.collections.push(Collection::arc(url, None));
            return Ok(());
        };
        let mut head = Vec::new();
        (&mut body.reader)
            .take(ARC_HEAD_BYTES)
            .read_to_end(&mut head)
            .map_err(|e| self.docs.http.read_error(url, e))?;
        let whole = (head.len() as u64) < ARC_HEAD_BYTES;
        // A gzip'd JSON document is an ARC sitemap (`arc-sitemap.json.gz`): no other format
        // is published so, and its fields cannot be looked for without inflating it.
        let gzipped = head.starts_with(&[0x1f, 0x8b]);
        if !gzipped && (!arc_fields(&head) || whole) {
            // Small enough to be read whole: the readers are asked first.
            let mut bytes = head;
            (&mut body.reader)
                .take(self.docs.options.max_bytes)
                .read_to_end(&mut bytes)
                .map_err(|e| self.docs.http.read_error(url, e))?;
            let received = (bytes, body.media_type.clone(), body.validators.clone());
            if let Some(c) = crate::engine::documents::recognise(
                self.docs,
                &body.final_url,
                scope,
                Some(received.clone()),
                &mut self.out.trail,
            )? {
                self.out.collections.push(Collection::recognised(c));
                return Ok(());
            }
            if !arc_fields(&received.0) {
                return Err(SourceError::Unusable {
                    url: url.to_string(),
                    message: "a JSON document that is neither an ARC sitemap (no \
                              arc_sitemap_version, site or pages) nor one another format \
                              reads (a IIIF Change Discovery collection)"
                        .into(),
                });
            }
            head = received.0;
        }
        body.reader = Box::new(std::io::Cursor::new(head).chain(body.reader));
        self.out.trail.push(format!("{url}: JSON (an ARC sitemap)"));
        self.out.collections.push(Collection::arc(url, Some(body)));
        Ok(())
    }

    fn opened(
        &mut self,
        mut doc: OpenedDocument,
        scope: &Scope,
        depth: usize,
    ) -> Result<(), SourceError> {
        let header = doc.header().clone();
        let cap = header.capability();
        self.out.trail.push(format!(
            "{}: {}{}",
            doc.url,
            cap.as_ref().map(|c| c.name()).unwrap_or("plain sitemap"),
            if header.is_index() { " index" } else { "" }
        ));
        // Documents linked from this one must stay in its scope.
        let inner_scope = if doc.url.scheme() == "file" {
            scope.clone()
        } else {
            self.docs.scope_for(&doc.url)
        };
        match cap {
            Some(Capability::Description) => {
                if self.site_describedby.is_none() {
                    self.site_describedby = header.link("describedby").map(|l| l.href.clone());
                }
                let mut targets = Vec::new();
                while let Some(e) = doc.reader.next_entry()? {
                    if header.is_index() || e.md.capability == Some(Capability::Description) {
                        targets.push((e.loc, true));
                    } else if e.md.capability == Some(Capability::CapabilityList) {
                        if let Some(l) = e.links.iter().find(|l| l.has_rel("describedby")) {
                            self.describedby.insert(e.loc.to_string(), l.href.clone());
                        }
                        targets.push((e.loc, false));
                    }
                }
                for (loc, nested) in targets {
                    if nested || self.only.as_deref().is_none_or(|o| o == loc.as_str()) {
                        self.document(&loc, &inner_scope, depth + 1)?;
                    } else {
                        self.out
                            .trail
                            .push(format!("{loc}: skipped (--capability-list)"));
                    }
                }
                Ok(())
            }
            Some(Capability::CapabilityList) => {
                let mut capabilities = Vec::new();
                while let Some(e) = doc.reader.next_entry()? {
                    match e.md.capability {
                        Some(c) => capabilities.push((c, e.loc)),
                        None => self.out.trail.push(format!(
                            "{}: line {}: entry {} has no capability; ignored",
                            doc.url, e.line, e.loc
                        )),
                    }
                }
                self.out.collections.push(Collection {
                    kind: SourceKind::ResourceSync,
                    id: doc.url.to_string(),
                    capability_list: Some(doc.url.clone()),
                    capabilities,
                    opened: None,
                    prefetched: None,
                    received_json: None,
                    describes: header.link("describes").map(|l| l.href.to_string()),
                    describedby: (header.link("describedby").map(|l| l.href.clone()))
                        .or_else(|| self.describedby.get(doc.url.as_str()).cloned()),
                    site_describedby: None,
                });
                Ok(())
            }
            None if header.namespaces.iter().any(|n| n == SCP_NS) => {
                // SCP 0.1: a sitemap.xml with the scp: extension is an SCP source.
                self.out.trail.push(format!("{}: SCP sitemap", doc.url));
                let mut c = Collection::other(SourceKind::Scp, &doc.url);
                let (url, validators) = (doc.url.clone(), doc.validators.clone());
                c.prefetched = doc.into_bytes().map(|bytes| Prefetched {
                    url,
                    bytes,
                    validators,
                });
                self.out.collections.push(c);
                Ok(())
            }
            other => {
                // A capability document given directly (or via robots.txt): its own collection.
                let capability = other.unwrap_or(Capability::ResourceList);
                let up = header.link("up").or_else(|| header.link("resourcesync"));
                let id = up
                    .map(|l| l.href.to_string())
                    .unwrap_or_else(|| doc.url.to_string());
                self.out.collections.push(Collection {
                    kind: SourceKind::ResourceSync,
                    id,
                    capability_list: None,
                    capabilities: vec![(capability, doc.url.clone())],
                    opened: Some(doc),
                    prefetched: None,
                    received_json: None,
                    describes: None,
                    describedby: None,
                    site_describedby: None,
                });
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// Issue 23: `127.0.0.1:8080/` was read as a local path, "No such file or directory".
    #[test]
    fn a_scheme_less_web_address_is_told_apart_from_a_path() {
        use super::looks_like_a_host as host;
        for yes in [
            "127.0.0.1:8080/",
            "example.org/rs/",
            "localhost",
            "localhost:8000/x",
        ] {
            assert!(host(yes), "{yes}");
        }
        for no in [
            "./list.xml",
            "/tmp/a.xml",
            "..",
            "",
            "mirror/x",
            "resourcelist",
        ] {
            assert!(!host(no), "{no}");
        }
    }
}
