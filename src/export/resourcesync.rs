//! `export resourcesync --base-url URL`: the tree plus the documents that make DEST a
//! ResourceSync 1.1 source when any static web server serves it at URL, so that a mirror can be
//! mirrored. Each file's URL is URL + its tree path, percent-encoded. The documents:
//!
//! - `.well-known/resourcesync`: the Source Description, naming the Capability List;
//! - `resourcesync/capabilitylist.xml`: the Resource List and the Change List;
//! - `resourcesync/resourcelist.xml`: every resource with `lastmod` (the source's), `md5` and
//!   `sha-256`, `length` and `type`, `at` the exported point (the start of its run); past
//!   50,000 entries an index of `resourcelist-NNNN.xml` parts;
//! - `resourcesync/changelist.xml`: an open Change List (no `until`: the next export rewrites
//!   it) of the changes the mirror applied after `--changes-since WHEN` (default: after its
//!   first run) up to the exported point, each dated when it arrived, with the source's
//!   `lastmod`.
//!
//! Re-exporting after more syncs brings the files to the new state and writes the documents
//! anew: a destination that took the earlier Resource List follows the new Change List.

use crate::access::{each_version, Point, VersionRow};
use crate::error::{Error, UsageError};
use crate::export::tree::{self, Placed, Walk};
use crate::export::{paths, Link, Summary};
use crate::store::StoreError;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// DEST's top-level names the documents take.
pub const RESERVED: &[&str] = &[".well-known", "resourcesync"];

/// Most entries in one Sitemap document (the Sitemap protocol's limit).
pub(crate) const PER_LIST: usize = 50_000;

/// Encoded in a URL path segment: what is not `pchar` (RFC 3986), and `%` itself.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']');

/// A tree path as a URL under the base.
fn url_of(base: &str, path: &str) -> String {
    let mut u = String::from(base);
    for (i, part) in path.split('/').enumerate() {
        if i > 0 {
            u.push('/');
        }
        u.extend(utf8_percent_encode(part, SEGMENT));
    }
    u
}

pub(crate) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
pub(crate) const NS: &str = "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\"";

/// The `<rs:md>` attributes of a state: its digests, length, type and content coding (the
/// bytes are kept as served: a gzip-encoded resource is `encoding="gzip"`, ResourceSync 1.1
/// §7.4).
pub(crate) fn md_of(v: &VersionRow) -> String {
    let mut hash = Vec::new();
    if let Some(m) = &v.md5 {
        hash.push(format!("md5:{m}"));
    }
    if let Some(s) = &v.sha256 {
        hash.push(format!("sha-256:{s}"));
    }
    let mut md = String::new();
    if !hash.is_empty() {
        md.push_str(&format!(" hash=\"{}\"", hash.join(" ")));
    }
    if let Some(n) = v.length {
        md.push_str(&format!(" length=\"{n}\""));
    }
    if let Some(t) = &v.media_type {
        md.push_str(&format!(" type=\"{}\"", xml_escape(t)));
    }
    if let Some(e) = v.encoding() {
        md.push_str(&format!(" encoding=\"{}\"", xml_escape(e)));
    }
    md
}

/// The parts of the Resource List, written as the tree is placed.
struct Lists {
    folder: PathBuf,
    base: String,
    at: String,
    capability_list: String,
    part: Option<(BufWriter<File>, PathBuf)>,
    in_part: usize,
    parts: Vec<PathBuf>,
    /// Entries per document ([`PER_LIST`]).
    per_list: usize,
}

impl Lists {
    fn entry(&mut self, url: &str, v: &VersionRow) -> Result<(), StoreError> {
        if self.part.is_none() || self.in_part == self.per_list {
            self.close()?;
            let path = self
                .folder
                .join(format!("resourcelist-{:04}.xml.new", self.parts.len() + 1));
            let mut w = BufWriter::new(
                File::create(&path).map_err(|e| StoreError::io("creating", &path, e))?,
            );
            // The index link is added to parts when there are several: written at the end
            // by renaming, so every part names the index it will have.
            write!(
                w,
                "{HEAD}<urlset {NS}>\n<rs:ln rel=\"up\" href=\"{}\"/>\n<rs:ln rel=\"index\" href=\"{}resourcesync/resourcelist.xml\"/>\n<rs:md capability=\"resourcelist\" at=\"{}\" completed=\"{}\"/>\n",
                self.capability_list, self.base, self.at, self.at
            )
            .map_err(|e| StoreError::io("writing", &path, e))?;
            self.part = Some((w, path));
            self.in_part = 0;
        }
        let (w, path) = self.part.as_mut().expect("open");
        let lastmod = v
            .lastmod
            .as_deref()
            .map(|l| format!("<lastmod>{}</lastmod>", xml_escape(l)))
            .unwrap_or_default();
        writeln!(
            w,
            "<url><loc>{}</loc>{lastmod}<rs:md{}/></url>",
            xml_escape(url),
            md_of(v)
        )
        .map_err(|e| StoreError::io("writing", path, e))?;
        self.in_part += 1;
        Ok(())
    }

    fn close(&mut self) -> Result<(), StoreError> {
        if let Some((mut w, path)) = self.part.take() {
            w.write_all(b"</urlset>\n")
                .and_then(|()| w.flush())
                .map_err(|e| StoreError::io("writing", &path, e))?;
            self.parts.push(path);
        }
        Ok(())
    }

    /// One list (`resourcelist.xml`, without the index link), or the parts and their index.
    fn finish(mut self) -> Result<(), StoreError> {
        if self.part.is_none() && self.parts.is_empty() {
            // An empty state: an empty list says so.
            self.entry_less_part()?;
        }
        self.close()?;
        let list = self.folder.join("resourcelist.xml");
        // Parts of an earlier, longer export go.
        for e in std::fs::read_dir(&self.folder)
            .map_err(|e| StoreError::io("reading", &self.folder, e))?
        {
            let e = e.map_err(|e| StoreError::io("reading", &self.folder, e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("resourcelist-") && name.ends_with(".xml") {
                let _ = std::fs::remove_file(e.path());
            }
        }
        if self.parts.len() == 1 {
            let text = std::fs::read_to_string(&self.parts[0])
                .map_err(|e| StoreError::io("reading", &self.parts[0], e))?;
            let index_link = format!(
                "<rs:ln rel=\"index\" href=\"{}resourcesync/resourcelist.xml\"/>\n",
                self.base
            );
            write_doc(&list, &text.replacen(&index_link, "", 1))?;
            let _ = std::fs::remove_file(&self.parts[0]);
            return Ok(());
        }
        let mut index = format!(
            "{HEAD}<sitemapindex {NS}>\n<rs:ln rel=\"up\" href=\"{}\"/>\n<rs:md capability=\"resourcelist\" at=\"{}\" completed=\"{}\"/>\n",
            self.capability_list, self.at, self.at
        );
        for (i, part) in self.parts.iter().enumerate() {
            let name = format!("resourcelist-{:04}.xml", i + 1);
            let done = self.folder.join(&name);
            std::fs::rename(part, &done).map_err(|e| StoreError::io("writing", &done, e))?;
            index.push_str(&format!(
                "<sitemap><loc>{}resourcesync/{name}</loc><rs:md capability=\"resourcelist\" at=\"{}\"/></sitemap>\n",
                self.base, self.at
            ));
        }
        index.push_str("</sitemapindex>\n");
        write_doc(&list, &index)
    }

    fn entry_less_part(&mut self) -> Result<(), StoreError> {
        let path = self.folder.join("resourcelist-0001.xml.new");
        let w =
            BufWriter::new(File::create(&path).map_err(|e| StoreError::io("creating", &path, e))?);
        let mut w = w;
        write!(
            w,
            "{HEAD}<urlset {NS}>\n<rs:ln rel=\"up\" href=\"{}\"/>\n<rs:ln rel=\"index\" href=\"{}resourcesync/resourcelist.xml\"/>\n<rs:md capability=\"resourcelist\" at=\"{}\" completed=\"{}\"/>\n",
            self.capability_list, self.base, self.at, self.at
        )
        .map_err(|e| StoreError::io("writing", &path, e))?;
        self.part = Some((w, path));
        Ok(())
    }
}

fn write_doc(path: &Path, text: &str) -> Result<(), StoreError> {
    let tmp = path.with_extension("rsmirror-tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| StoreError::io("writing", path, e))
}

/// The base URL as files are named under it: http(s), ending in `/`.
pub(crate) fn base_url(given: &str) -> Result<String, UsageError> {
    let url = url::Url::parse(given)
        .map_err(|e| UsageError(format!("--base-url {given}: not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https")
        || url.query().is_some()
        || url.fragment().is_some()
    {
        return Err(UsageError(format!(
            "--base-url {given}: give the http(s) URL DEST will be served at, without a query"
        )));
    }
    let mut s = url.to_string();
    if !s.ends_with('/') {
        s.push('/');
    }
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn export(
    walk: &Walk<'_>,
    dest: &Path,
    own: &Path,
    link: Link,
    earlier: bool,
    base: &str,
    since: Point,
    summary: &mut Summary,
) -> Result<(), Error> {
    let folder = dest.join("resourcesync");
    std::fs::create_dir_all(&folder).map_err(|e| StoreError::io("creating", &folder, e))?;
    let run = walk.point.run.unwrap_or(0);
    let at = crate::export::micros(walk.reader.arrived(run));
    let at = if at.is_empty() {
        jiff::Timestamp::UNIX_EPOCH.to_string()
    } else {
        at
    };
    let capability_list = format!("{base}resourcesync/capabilitylist.xml");
    let mut lists = Lists {
        folder: folder.clone(),
        base: base.to_string(),
        at: at.clone(),
        capability_list: capability_list.clone(),
        part: None,
        in_part: 0,
        parts: Vec::new(),
        per_list: PER_LIST,
    };
    let mut each = |p: Placed<'_>| -> Result<(), Error> {
        lists.entry(&url_of(base, p.path), p.version)?;
        Ok(())
    };
    let clashes = tree::export(walk, dest, own, link, earlier, summary, Some(&mut each))?;
    lists.finish()?;

    // The Change List: what the runs after `since` brought, up to the exported point.
    let from_run = since.run.unwrap_or(0);
    let from = match walk.reader.arrived(from_run) {
        "" => walk
            .reader
            .runs
            .values()
            .next()
            .map(|r| r.started_at.clone())
            .unwrap_or_else(|| at.clone()),
        t => t.to_string(),
    };
    let from = crate::export::micros(&from);
    // An open list (no `until`): the next export rewrites it at the same URL with what came
    // since, which only an open list may do (ResourceSync 1.1 §12.1: a closed list never
    // changes).
    let mut changes = format!(
        "{HEAD}<urlset {NS}>\n<rs:ln rel=\"up\" href=\"{capability_list}\"/>\n<rs:md capability=\"changelist\" from=\"{from}\"/>\n"
    );
    let mut namer = paths::Namer::default();
    each_version(walk.reader, walk.point, &walk.filter, |uri, v| {
        if v.run <= from_run {
            return Ok(true);
        }
        let Some(n) = namer.natural(uri, walk.strip, false) else {
            return Ok(true);
        };
        let url = url_of(base, &clashes.place(uri, n).0);
        let md = if v.deleted() { String::new() } else { md_of(v) };
        // The source's lastmod besides the datetime of the change (optional in 1.1; a
        // Destination such as resync dates its copies by it and audits against it).
        let lastmod = match (&v.lastmod, v.deleted()) {
            (Some(l), false) => format!("<lastmod>{}</lastmod>", xml_escape(l)),
            _ => String::new(),
        };
        changes.push_str(&format!(
            "<url><loc>{}</loc>{lastmod}<rs:md change=\"{}\" datetime=\"{}\"{md}/></url>\n",
            xml_escape(&url),
            v.change,
            crate::export::micros(walk.reader.arrived(v.run))
        ));
        Ok(true)
    })?;
    changes.push_str("</urlset>\n");
    write_doc(&folder.join("changelist.xml"), &changes)?;
    write_doc(
        &folder.join("capabilitylist.xml"),
        &format!(
            "{HEAD}<urlset {NS}>\n<rs:ln rel=\"up\" href=\"{base}.well-known/resourcesync\"/>\n<rs:md capability=\"capabilitylist\"/>\n\
             <url><loc>{base}resourcesync/resourcelist.xml</loc><rs:md capability=\"resourcelist\"/></url>\n\
             <url><loc>{base}resourcesync/changelist.xml</loc><rs:md capability=\"changelist\"/></url>\n</urlset>\n"
        ),
    )?;
    let well_known = dest.join(".well-known");
    std::fs::create_dir_all(&well_known).map_err(|e| StoreError::io("creating", &well_known, e))?;
    write_doc(
        &well_known.join("resourcesync"),
        &format!(
            "{HEAD}<urlset {NS}>\n<rs:md capability=\"description\"/>\n\
             <url><loc>{capability_list}</loc><rs:md capability=\"capabilitylist\"/></url>\n</urlset>\n"
        ),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(dir: &Path, per_list: usize) -> Lists {
        Lists {
            folder: dir.to_path_buf(),
            base: "http://h/".into(),
            at: "2026-01-01T00:00:00.000000Z".into(),
            capability_list: "http://h/resourcesync/capabilitylist.xml".into(),
            part: None,
            in_part: 0,
            parts: Vec::new(),
            per_list,
        }
    }

    fn v(n: i64) -> VersionRow {
        VersionRow {
            version: n,
            run: 1,
            change: crate::model::Change::Created,
            lastmod: None,
            length: Some(n),
            sha256: Some(format!("{n:064x}")),
            md5: None,
            media_type: None,
            declared_encoding: None,
            content_encoding: None,
            declared_length: None,
            metadata_only: false,
        }
    }

    #[test]
    fn a_long_list_becomes_an_index_of_parts_and_a_short_one_a_list() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = lists(dir.path(), 2);
        for n in 1..=5 {
            l.entry(&format!("http://h/{n}"), &v(n)).unwrap();
        }
        l.finish().unwrap();
        let index = std::fs::read_to_string(dir.path().join("resourcelist.xml")).unwrap();
        assert!(index.contains("<sitemapindex"), "{index}");
        assert_eq!(index.matches("<sitemap>").count(), 3);
        let part = std::fs::read_to_string(dir.path().join("resourcelist-0003.xml")).unwrap();
        assert!(part.contains("rel=\"index\""), "{part}");
        assert!(part.contains("<loc>http://h/5</loc>"), "{part}");
        // A shorter export into the same folder: one list, the old parts gone.
        let mut l = lists(dir.path(), 2);
        l.entry("http://h/1", &v(1)).unwrap();
        l.finish().unwrap();
        let list = std::fs::read_to_string(dir.path().join("resourcelist.xml")).unwrap();
        assert!(
            list.contains("<urlset") && !list.contains("rel=\"index\""),
            "{list}"
        );
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["resourcelist.xml".to_string()]);
        // An empty state: an empty list.
        let l = lists(dir.path(), 2);
        l.finish().unwrap();
        let list = std::fs::read_to_string(dir.path().join("resourcelist.xml")).unwrap();
        assert!(
            list.contains("<urlset") && !list.contains("<url>"),
            "{list}"
        );
    }

    #[test]
    fn tree_paths_become_urls_under_the_base() {
        let b = "http://127.0.0.1:8000/m/";
        assert_eq!(
            url_of(b, "ex.org/a b/café"),
            "http://127.0.0.1:8000/m/ex.org/a%20b/caf%C3%A9"
        );
        assert_eq!(
            url_of(b, "ex.org/q?x=1"),
            "http://127.0.0.1:8000/m/ex.org/q%3Fx=1"
        );
        assert_eq!(
            url_of(b, "ex.org/100%25"),
            "http://127.0.0.1:8000/m/ex.org/100%2525"
        );
        assert_eq!(
            url_of(b, "ex.org:8080/p#f"),
            "http://127.0.0.1:8000/m/ex.org:8080/p%23f"
        );
        assert_eq!(base_url("http://h/m").unwrap(), "http://h/m/");
        assert!(base_url("ftp://h/").is_err());
        assert!(base_url("http://h/?q").is_err());
    }
}
