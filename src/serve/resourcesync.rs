//! The mirror as a ResourceSync 1.1 source, so that another destination (resync, another
//! rsmirror) follows it: a Source Description at `/.well-known/resourcesync`, a Capability
//! List, a Resource List of the state the last finished run left, and a Change List per run
//! since the first, made from the catalog at each request (nothing is written).
//!
//! - `/resourcesync/resourcelist.xml`: the Resource List, `at` the end of the last run that
//!   ended; past `--list-size` entries a Resource List Index of pages
//!   `/resourcesync/resourcelist/RUN/N.xml`, each the state at that run (a page asked for
//!   later still shows that state: the mirror keeps it), paged by URI.
//! - `/resourcesync/changelist.xml`: a Change List Index naming, for every run after the
//!   first that recorded changes, `/resourcesync/changelist/RUN/N.xml` (`from` the end of the
//!   list before, `until` the run's end: closed, it never changes), each change dated when the
//!   mirror had it (the run's end) with the source's `lastmod`; and the open list
//!   `/resourcesync/changelist/open.xml` from the last run's end on. The lists leave no gap.
//!
//! A resource's `loc` is its state on this server (`/latest/URL`, [`Source::loc`]), so a follower fetches the
//! mirror's bytes, not the source's; the source's URI is its `rel="duplicate"` link (§11.2:
//! the same content elsewhere).

use crate::access::ls::{self, Query};
use crate::access::{self, Point, Reader, RunVersions, VersionRow};
use crate::error::Error;
use crate::export::resourcesync::{md_of, xml_escape, HEAD, NS};
use crate::serve::memento::escaped;
use crate::serve::reply::Reply;
use std::fmt::Write as _;
use std::sync::Mutex;

const XML: &str = "application/xml; charset=utf-8";

/// What the documents share between requests: the versions each finished run recorded
/// (they never change once it ended), and where the pages of the last Resource List begin.
#[derive(Default)]
pub(crate) struct Cache {
    runs: Mutex<Vec<RunVersions>>,
    /// The run a Resource List Index was made at, and the last URI of each of its pages.
    pages: Mutex<Option<(i64, Vec<String>)>>,
}

/// Where the documents are (the server's base URL) and how long a list may be.
pub(crate) struct Source<'a> {
    pub base: &'a str,
    pub per_list: usize,
    pub cache: &'a Cache,
}

fn xml(body: String) -> Reply {
    Reply::text(200, XML, body)
}

impl Source<'_> {
    fn capability_list(&self) -> String {
        format!("{}/resourcesync/capabilitylist.xml", self.base)
    }

    /// Where a resource's state is on this server: `/latest/URI`, the URI's `scheme://`
    /// written `scheme:/` (as a proxy that merges slashes leaves it; `/latest/` reads both), so
    /// that a client mapping URLs to files and back (resync) finds the same URL again.
    fn loc(&self, uri: &str) -> String {
        let uri = escaped(uri);
        let short = match uri.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}:/{rest}"),
            None => uri,
        };
        format!("{}/latest/{short}", self.base)
    }

    /// `/.well-known/resourcesync`: the Source Description.
    pub(crate) fn description(&self) -> Reply {
        xml(format!(
            "{HEAD}<urlset {NS}>\n<rs:md capability=\"description\"/>\n\
             <url><loc>{}</loc><rs:md capability=\"capabilitylist\"/></url>\n</urlset>\n",
            self.capability_list()
        ))
    }

    /// The Capability List: the Resource List and the Change List (Index).
    pub(crate) fn capabilities(&self) -> Reply {
        xml(format!(
            "{HEAD}<urlset {NS}>\n<rs:ln rel=\"up\" href=\"{b}/.well-known/resourcesync\"/>\n\
             <rs:md capability=\"capabilitylist\"/>\n\
             <url><loc>{b}/resourcesync/resourcelist.xml</loc><rs:md capability=\"resourcelist\"/></url>\n\
             <url><loc>{b}/resourcesync/changelist.xml</loc><rs:md capability=\"changelist\"/></url>\n\
             </urlset>\n",
            b = self.base
        ))
    }

    /// One `<url>`: the state's `lastmod` is the source's, or when the mirror had it (the end
    /// of its run) where the source gave none, so that every entry has one (resync 2.0.1
    /// compares a copy's files by their times).
    fn entry(
        &self,
        out: &mut String,
        reader: &Reader,
        uri: &str,
        v: &VersionRow,
        datetime: Option<&str>,
    ) {
        let lastmod = match &v.lastmod {
            Some(l) => xml_escape(l),
            None => ended_at(reader, v.run),
        };
        let lastmod = format!("<lastmod>{lastmod}</lastmod>");
        let change = match datetime {
            Some(at) => format!(" change=\"{}\" datetime=\"{at}\"", v.change),
            None => String::new(),
        };
        // A deletion has no bytes to describe.
        let md = if v.deleted() { String::new() } else { md_of(v) };
        let _ = writeln!(
            out,
            "<url><loc>{}</loc>{lastmod}<rs:md{change}{md}/><rs:ln rel=\"duplicate\" href=\"{}\"/></url>",
            xml_escape(&self.loc(uri)),
            xml_escape(uri)
        );
    }

    /// `/resourcesync/resourcelist.xml`: the list of the last finished run's state, or the
    /// index of its pages.
    pub(crate) fn resource_list(&self, reader: &Reader) -> Result<Reply, Error> {
        let Some(run) = finished(reader) else {
            return Ok(no_run_yet());
        };
        let at = ended_at(reader, run);
        let ends = self.page_ends(reader, run)?;
        let up = self.capability_list();
        if ends.len() <= 1 {
            return self.resource_page(reader, run, 1, false);
        }
        let mut out = format!(
            "{HEAD}<sitemapindex {NS}>\n<rs:ln rel=\"up\" href=\"{up}\"/>\n\
             <rs:md capability=\"resourcelist\" at=\"{at}\" completed=\"{at}\"/>\n"
        );
        for n in 1..=ends.len() {
            let _ = writeln!(
                out,
                "<sitemap><loc>{}/resourcesync/resourcelist/{run}/{n}.xml</loc><rs:md capability=\"resourcelist\" at=\"{at}\"/></sitemap>",
                self.base
            );
        }
        out.push_str("</sitemapindex>\n");
        Ok(xml(out))
    }

    /// The last URI of each page of the state at `run` (one walk of the URIs, kept for the
    /// pages that follow).
    fn page_ends(&self, reader: &Reader, run: i64) -> Result<Vec<String>, Error> {
        if let Some((r, ends)) = &*self.cache.pages.lock().expect("never poisoned") {
            if *r == run {
                return Ok(ends.clone());
            }
        }
        let mut ends = Vec::new();
        let mut in_page = 0usize;
        let mut last = String::new();
        let filter = access::Filter::default();
        access::each_state_uri(reader, Point { run: Some(run) }, &filter, |uri| {
            in_page += 1;
            if in_page == self.per_list {
                ends.push(uri.to_string());
                in_page = 0;
            } else {
                last.clear();
                last.push_str(uri);
            }
            Ok(true)
        })?;
        if in_page > 0 {
            ends.push(last);
        }
        *self.cache.pages.lock().expect("never poisoned") = Some((run, ends.clone()));
        Ok(ends)
    }

    /// `/resourcesync/resourcelist/RUN/N.xml` (and the whole list when it is one page).
    pub(crate) fn resource_page(
        &self,
        reader: &Reader,
        run: i64,
        n: usize,
        indexed: bool,
    ) -> Result<Reply, Error> {
        if !reader.runs.get(&run).is_some_and(|r| r.ended) {
            return Ok(Reply::error(
                404,
                &format!("run {run} is not a finished run of this mirror"),
            ));
        }
        let ends = self.page_ends(reader, run)?;
        if n > ends.len().max(1) {
            return Ok(Reply::error(
                404,
                &format!("the Resource List at run {run} has no page {n}"),
            ));
        }
        let after = n.checked_sub(2).map(|i| ends[i].clone());
        let at = ended_at(reader, run);
        let index = match indexed {
            true => format!(
                "<rs:ln rel=\"index\" href=\"{}/resourcesync/resourcelist.xml\"/>\n",
                self.base
            ),
            false => String::new(),
        };
        let mut out = format!(
            "{HEAD}<urlset {NS}>\n<rs:ln rel=\"up\" href=\"{}\"/>\n{index}\
             <rs:md capability=\"resourcelist\" at=\"{at}\" completed=\"{at}\"/>\n",
            self.capability_list()
        );
        let query = Query {
            after,
            ..Query::default()
        };
        let mut left = self.per_list;
        ls::list(reader, Point { run: Some(run) }, &query, |e| {
            self.entry(&mut out, reader, e.uri, e.version, None);
            left -= 1;
            Ok(left > 0)
        })?;
        out.push_str("</urlset>\n");
        Ok(xml(out))
    }

    /// What every finished run recorded, by run (read from where the cache ends).
    fn runs(&self, reader: &Reader) -> Result<Vec<RunVersions>, Error> {
        let mut cached = self.cache.runs.lock().expect("never poisoned");
        let seen = cached.last().map_or(0, |r| r.last);
        let mut later = Vec::new();
        for r in access::runs_versions_after(reader, seen)? {
            let ended = reader.runs.get(&r.run).is_some_and(|i| i.ended);
            // A finished run's versions never change: kept, unless a run before it is still
            // under way (its versions may yet come before them).
            match ended {
                true if later.is_empty() => cached.push(r),
                true => later.push(Some(r)),
                false => later.push(None),
            }
        }
        Ok(cached
            .iter()
            .copied()
            .chain(later.into_iter().flatten())
            .collect())
    }

    /// The closed Change Lists: every finished run after the first that changed something,
    /// each covering the time from the end of the list before (the end of the first run, for
    /// the first) to its own end, so that together they leave no gap.
    fn closed(&self, reader: &Reader) -> Result<Vec<Closed>, Error> {
        let runs = self.runs(reader)?;
        let mut from = match runs.first() {
            Some(first) => ended_at(reader, first.run),
            None => return Ok(Vec::new()),
        };
        let mut lists = Vec::new();
        for r in runs.into_iter().skip(1) {
            let until = ended_at(reader, r.run);
            lists.push(Closed {
                versions: r,
                from: std::mem::replace(&mut from, until.clone()),
                until,
            });
        }
        Ok(lists)
    }

    /// `/resourcesync/changelist.xml`: the Change List Index: the closed lists, and the open
    /// one (from the last run's end on, no `until`: no change since).
    pub(crate) fn change_lists(&self, reader: &Reader) -> Result<Reply, Error> {
        let Some(last) = finished(reader) else {
            return Ok(no_run_yet());
        };
        let closed = self.closed(reader)?;
        let from = closed
            .first()
            .map_or_else(|| ended_at(reader, last), |c| c.from.clone());
        let mut out = format!(
            "{HEAD}<sitemapindex {NS}>\n<rs:ln rel=\"up\" href=\"{}\"/>\n\
             <rs:md capability=\"changelist\" from=\"{from}\"/>\n",
            self.capability_list()
        );
        for c in &closed {
            for n in 1..=self.parts(&c.versions) {
                let _ = writeln!(
                    out,
                    "<sitemap><loc>{}/resourcesync/changelist/{}/{n}.xml</loc><rs:md capability=\"changelist\" from=\"{}\" until=\"{}\"/></sitemap>",
                    self.base, c.versions.run, c.from, c.until
                );
            }
        }
        let _ = writeln!(
            out,
            "<sitemap><loc>{}/resourcesync/changelist/open.xml</loc><rs:md capability=\"changelist\" from=\"{}\"/></sitemap>",
            self.base,
            ended_at(reader, last)
        );
        out.push_str("</sitemapindex>\n");
        Ok(xml(out))
    }

    /// `/resourcesync/changelist/open.xml`: the open Change List, from the end of the last
    /// finished run on: empty (a run's changes are listed once it has ended, in a closed list
    /// of their own).
    pub(crate) fn open_change_list(&self, reader: &Reader) -> Reply {
        let Some(last) = finished(reader) else {
            return no_run_yet();
        };
        xml(format!(
            "{HEAD}<urlset {NS}>\n<rs:ln rel=\"up\" href=\"{}\"/>\n\
             <rs:ln rel=\"index\" href=\"{}/resourcesync/changelist.xml\"/>\n\
             <rs:md capability=\"changelist\" from=\"{}\"/>\n</urlset>\n",
            self.capability_list(),
            self.base,
            ended_at(reader, last)
        ))
    }

    /// How many lists a run's changes take.
    fn parts(&self, r: &RunVersions) -> usize {
        let ids = usize::try_from(r.last - r.first + 1).unwrap_or(usize::MAX);
        ids.div_ceil(self.per_list).max(1)
    }

    /// `/resourcesync/changelist/RUN/N.xml`: part N of what run RUN changed, each change dated
    /// when the mirror had it (the end of the run: a follower that read the lists while the
    /// run was under way still finds its changes after the point it reached).
    pub(crate) fn change_list(&self, reader: &Reader, run: i64, n: usize) -> Result<Reply, Error> {
        let closed = self.closed(reader)?;
        let Some(c) = closed.iter().find(|c| c.versions.run == run) else {
            return Ok(Reply::error(
                404,
                &format!(
                    "run {run} has no Change List here: a finished run after the first that \
                     changed something has one"
                ),
            ));
        };
        if n == 0 || n > self.parts(&c.versions) {
            return Ok(Reply::error(
                404,
                &format!("the Change List of run {run} has no part {n}"),
            ));
        }
        let per = i64::try_from(self.per_list).unwrap_or(i64::MAX);
        let first = c.versions.first + (n as i64 - 1) * per;
        let last = (first + per - 1).min(c.versions.last);
        let mut out = format!(
            "{HEAD}<urlset {NS}>\n<rs:ln rel=\"up\" href=\"{}\"/>\n\
             <rs:ln rel=\"index\" href=\"{}/resourcesync/changelist.xml\"/>\n\
             <rs:md capability=\"changelist\" from=\"{}\" until=\"{}\"/>\n",
            self.capability_list(),
            self.base,
            c.from,
            c.until
        );
        access::each_version_of_run(reader, run, (first, last), |uri, v| {
            self.entry(&mut out, reader, uri, v, Some(&c.until));
            Ok(true)
        })?;
        out.push_str("</urlset>\n");
        Ok(xml(out))
    }
}

/// A closed Change List: a run's changes and the time it covers.
struct Closed {
    versions: RunVersions,
    from: String,
    until: String,
}

/// The last finished run, if there is one.
fn finished(reader: &Reader) -> Option<i64> {
    Some(reader.last_ended()).filter(|r| *r > 0)
}

/// When a run ended (its start, for a run whose process died before it recorded an end).
fn ended_at(reader: &Reader, run: i64) -> String {
    reader
        .runs
        .get(&run)
        .and_then(|r| r.ended_at.clone())
        .unwrap_or_else(|| reader.arrived(run).to_string())
}

fn no_run_yet() -> Reply {
    Reply::error(
        404,
        "the mirror has no finished run yet: its lists come with the first",
    )
}
