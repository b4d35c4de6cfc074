//! `rsmirror feed`: an Atom 1.0 feed (RFC 4287), or a JSON Feed 1.1, of the changes the mirror
//! applied to one collection or source, on stdout or in a file; or, with `--output-dir`, every
//! feed of the mirror with its archives (RFC 5005), an index page and an OPML file, as a tree a
//! static site publishes. The feeds themselves are made by `access::feed`, which `rsmirror
//! serve` uses too.

use crate::access::feed::{
    self, atom, build_chosen, choose, collections, json_feed, path_of, Doc, Site,
};
use crate::error::Error;
use crate::settings::{self, FeedFormat};
use crate::store::{Catalog, StoreError};
use std::path::Path;

/// Write the feed `s` asks for.
pub(crate) fn run(s: &settings::Feed) -> Result<(), Error> {
    if !Catalog::present(&s.mirror)? {
        return Err(StoreError::Missing {
            path: s.mirror.display().to_string(),
        }
        .into());
    }
    let reader = crate::access::Reader::open(&s.mirror)?;
    // The runs after WHEN's point (the mirror's clock, as every WHEN reads it).
    let after = match &s.since {
        None => None,
        Some(when) => {
            let point = reader.point(Some(when))?;
            detail!(
                "rsmirror: --since: the runs after the mirror {}",
                reader.describe_point(point)
            );
            Some(point.run.unwrap_or(i64::MAX))
        }
    };
    let catalog = reader.catalog();
    // A run under way is left out until it ends, as every reader shows the mirror.
    let upto = reader.in_progress().map(|_| reader.last_ended());
    if let Some(dir) = &s.output_dir {
        return write_tree(&reader, dir, s, upto);
    }
    let all = collections(catalog)?;
    let chosen = choose(&all, s.collection.as_deref())?;
    let feed = build_chosen(catalog, &chosen, after, upto)?;
    detail!(
        "rsmirror: {} entr{} (one a run that changed {})",
        feed.entries.len(),
        if feed.entries.len() == 1 { "y" } else { "ies" },
        feed.collection.identity
    );
    let text = match s.format {
        FeedFormat::Atom => atom(&feed),
        FeedFormat::Json => json_feed(&feed),
    };
    match &s.output {
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| StoreError::io("writing the feed to", Path::new("stdout"), e))?;
        }
        Some(path) => write_atomically(path, text.as_bytes())
            .map_err(|e| StoreError::io("writing the feed to", path, e))?,
    }
    Ok(())
}

/// Write `bytes` to a temporary file beside `path`, then rename it over `path`: a reader of the
/// published feed never sees half of it.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "feed".into());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Every feed of the mirror, its archives, `index.html` and `index.opml` under `dir`, each file
/// written only when its content changed (its mtime stays otherwise: a tree `rsync` and `git`
/// see unchanged). Files of feeds the mirror no longer has are left as they are.
fn write_tree(
    reader: &crate::access::Reader,
    dir: &Path,
    s: &settings::Feed,
    upto: Option<i64>,
) -> Result<(), Error> {
    let base = s
        .base_url
        .as_deref()
        .expect("cli: --output-dir requires --base-url");
    let site = Site {
        base: base.trim_end_matches('/'),
        hub: s.hub.as_deref(),
        per_archive: s.per_archive,
    };
    let feeds = feed::every(reader.catalog(), upto)?;
    let mut files: Vec<(String, String)> = Vec::new();
    for l in &feeds {
        for json in [false, true] {
            let docs =
                std::iter::once(Doc::Current).chain((1..=l.archives(&site)).map(Doc::Archive));
            for doc in docs {
                if let Some(made) = l.document(&site, doc, json) {
                    files.push((path_of(l.kind, &l.slug, doc, json), made.text));
                }
            }
        }
    }
    files.push(("index.html".into(), feed::index_html(&feeds, &site)));
    files.push(("index.opml".into(), feed::opml(&feeds, &site)));
    let (mut written, mut same) = (0usize, 0usize);
    for (rel, text) in &files {
        let path = dir.join(rel);
        if std::fs::read(&path).is_ok_and(|old| old == text.as_bytes()) {
            same += 1;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| StoreError::io("creating the folder", parent, e))?;
        }
        write_atomically(&path, text.as_bytes())
            .map_err(|e| StoreError::io("writing the feed to", &path, e))?;
        detail!("rsmirror: wrote {}", path.display());
        written += 1;
    }
    note!(
        "rsmirror: {} feed{} in {}: {written} file{} written, {same} unchanged",
        feeds.len(),
        if feeds.len() == 1 { "" } else { "s" },
        dir.display(),
        if written == 1 { "" } else { "s" },
    );
    Ok(())
}
