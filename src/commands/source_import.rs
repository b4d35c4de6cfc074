//! `rsmirror source import FILE`: many small sites followed at once. FILE is an OPML file (each
//! `<outline>`'s `xmlUrl`, else its `htmlUrl`) or a plain list of URLs, one a line (`#` starts
//! a comment). Every line is checked first: a bad one is named by its line number, and nothing
//! is recorded from a FILE with one unless `--skip-bad`. Then each site is baselined in turn,
//! as `rsmirror baseline URL` would (its first run recorded, its options kept with it, so that
//! one `rsmirror incremental` follows them all); a site that fails does not stop the others,
//! and the exit code is the worst.

use crate::engine::context::Outcome;
use crate::error::{Error, UsageError};
use crate::progress::Progress;
use crate::settings;
use std::path::Path;

pub(crate) struct Import<'a> {
    pub file: &'a Path,
    pub skip_bad: bool,
    pub jobs: Option<usize>,
    pub mirror: &'a Path,
    pub source_args: &'a crate::cli::SourceArgs,
    pub output: settings::Output,
}

/// One site a FILE names, or why a line is not one: (line number, URL or reason).
pub(crate) type Line = (usize, Result<String, String>);

/// The sites of `text`: OPML when it starts (after any XML declaration, comments or
/// whitespace) with `<opml`, else a plain list.
pub(crate) fn sites(text: &str) -> Vec<Line> {
    let start = text.trim_start_matches('\u{feff}').trim_start();
    if start.starts_with("<?xml") || start.starts_with("<opml") || start.starts_with("<!--") {
        opml(text)
    } else {
        plain(text)
    }
}

/// An http(s) URL, or why `s` is not one.
fn site_url(s: &str) -> Result<String, String> {
    match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
            Ok(u.to_string())
        }
        Ok(u) => Err(format!("{s:?}: a {} URL, not http(s)", u.scheme())),
        Err(e) => Err(format!("{s:?} is not a URL ({e})")),
    }
}

fn plain(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = match line.find('#') {
            Some(k) => &line[..k],
            None => line,
        }
        .trim();
        if line.is_empty() {
            continue;
        }
        out.push((i + 1, site_url(line)));
    }
    out
}

fn opml(text: &str) -> Vec<Line> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    let line_at = |pos: u64| text[..(pos as usize).min(text.len())].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut root = None;
    loop {
        let at = reader.buffer_position();
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => {
                let name = e.local_name();
                if root.is_none() {
                    root = Some(name.as_ref().to_string());
                    if name.as_ref() != "opml" {
                        out.push((line_at(at), Err("the root element is not <opml>".into())));
                        return out;
                    }
                }
                if name.as_ref() != "outline" {
                    continue;
                }
                let (mut xml, mut html) = (None, None);
                for a in e.attributes() {
                    let a = match a {
                        Ok(a) => a,
                        Err(err) => {
                            out.push((line_at(at), Err(format!("a bad attribute: {err}"))));
                            continue;
                        }
                    };
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map(|v| v.trim().to_string())
                        .unwrap_or_default();
                    match a.key.local_name().as_ref() {
                        "xmlUrl" => xml = Some(value),
                        "htmlUrl" => html = Some(value),
                        _ => {}
                    }
                }
                // An outline that only groups others names no site.
                if let Some(u) = xml
                    .filter(|u| !u.is_empty())
                    .or(html.filter(|u| !u.is_empty()))
                {
                    out.push((line_at(at), site_url(&u)));
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => {
                let pos = reader.error_position();
                out.push((line_at(pos), Err(format!("not well-formed XML: {e}"))));
                break;
            }
        }
    }
    if root.is_none() {
        out.push((1, Err("no <opml> element".into())));
    }
    out
}

pub(crate) fn run(i: &Import<'_>, arguments: &str, progress: &Progress) -> Result<Outcome, Error> {
    let name = i.file.display();
    let text = match i.file.as_os_str() == "-" {
        true => std::io::read_to_string(std::io::stdin()),
        false => std::fs::read_to_string(i.file),
    }
    .map_err(|e| UsageError(format!("{name}: {e}")))?;
    let lines = sites(&text);
    let bad: Vec<String> = (lines.iter())
        .filter_map(|(n, r)| r.as_ref().err().map(|why| format!("{name}:{n}: {why}")))
        .collect();
    if !bad.is_empty() && !i.skip_bad {
        return Err(UsageError(format!(
            "{} bad line(s), nothing imported (--skip-bad imports the others):\n{}",
            bad.len(),
            bad.join("\n")
        ))
        .into());
    }
    for b in &bad {
        progress.println(&format!("rsmirror: left out: {b}"));
    }
    let mut urls: Vec<String> = lines.into_iter().filter_map(|(_, r)| r.ok()).collect();
    let mut seen = std::collections::HashSet::new();
    urls.retain(|u| seen.insert(u.clone()));
    if urls.is_empty() {
        return Err(UsageError(format!("{name}: no site to import")).into());
    }
    let mut combined: Option<Outcome> = None;
    for url in urls {
        let source = i.source_args.settings(&url)?.with_jobs(i.jobs);
        let b = settings::Baseline {
            mirror: i.mirror.to_path_buf(),
            source,
            capability_list: None,
            section: None,
            via: settings::Via::Auto,
            delete: false,
            max_delete: None,
            force_delete: false,
            init_here: false,
            objects: None,
            dry_run: false,
            jobs: i.jobs.unwrap_or(settings::DEFAULT_JOBS),
            output: i.output,
            crossing_gap: None,
        };
        let one = crate::commands::baseline::run(&b, &format!("{arguments} [{url}]"), progress)
            .unwrap_or_else(|e| {
                crate::commands::incremental::failed(("baseline", &url), i.mirror, e, progress)
            });
        combined = Some(match combined {
            None => one,
            Some(all) => crate::commands::incremental::combine(all, one),
        });
    }
    Ok(combined.expect("at least one site"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_list_and_an_opml_file_give_their_sites_and_name_bad_lines() {
        let list = "# my sites\nhttps://a.example/\n\n  http://b.example/x  # b\nftp://c.example/\nnot a url\n";
        let got = sites(list);
        assert_eq!(got[0], (2, Ok("https://a.example/".into())));
        assert_eq!(got[1], (4, Ok("http://b.example/x".into())));
        assert_eq!(got[2].0, 5);
        assert!(got[2].1.as_ref().unwrap_err().contains("ftp"));
        assert_eq!(got[3].0, 6);
        let opml =
            "<?xml version=\"1.0\"?>\n<opml version=\"2.0\"><body>\n<outline text=\"group\">\n\
                    <outline xmlUrl=\"https://a.example/feed\" htmlUrl=\"https://a.example/\"/>\n\
                    <outline htmlUrl=\"https://b.example/\"/>\n<outline xmlUrl=\"mailto:x@y\"/>\n\
                    </outline></body></opml>\n";
        let got = sites(opml);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], (4, Ok("https://a.example/feed".into())));
        assert_eq!(got[1], (5, Ok("https://b.example/".into())));
        assert_eq!(got[2].0, 6);
        assert!(got[2].1.is_err());
        let broken = sites("<opml><body>\n<outline xmlUrl=\"https://a.example/\">\n</opml>");
        assert!(broken.last().unwrap().1.is_err(), "{broken:?}");
    }
}
