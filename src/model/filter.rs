//! `--include GLOB` and `--exclude GLOB`: which of a source's resources the mirror takes, as
//! rclone's filters and wget's `-A`/`-R` choose files. A resource is admitted when it matches an
//! `--include` pattern (or none is given) and no `--exclude` pattern.
//!
//! A pattern is matched against the URL as the source lists it (percent-encoding and all):
//! - with `://` in it, against the whole URL (`https://repo.example.org/items/**`);
//! - starting with `/`, against the URL's path from its start, on any host (`/items/**`);
//! - else against the end of the path, whole segments (`*.pdf`, `thumbs/*.jpg`), as rclone
//!   matches a pattern without a leading `/`.
//!
//! `*` and `?` never cross a `/`; `**` does; `[abc]`, `[!a-z]` and `{a,b}` as in shells.
//! Matching is case-sensitive, as URL paths are.
//!
//! What a filter leaves out is neither fetched nor judged: not planned, not counted as gone
//! (a resource the mirror already holds stays, `--delete` or not), not compared by `audit`.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::sync::Arc;

/// The patterns as given (and as remembered with a source).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rules {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// `--category VALUE`: only the resources with one of these categories (2012 draft
    /// §3.1.7; [`crate::model::Category::is`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub category: Vec<String>,
}

impl Rules {
    pub(crate) fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty() && self.category.is_empty()
    }

    /// As a user would type them again: `--include 'A' --exclude 'B'`.
    pub(crate) fn as_options(&self) -> String {
        let quoted = |name: &str, p: &String| format!("--{name} '{}'", p.replace('\'', "'\\''"));
        (self.include.iter().map(|p| quoted("include", p)))
            .chain(self.exclude.iter().map(|p| quoted("exclude", p)))
            .chain(self.category.iter().map(|p| quoted("category", p)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Compiled rules; cheap to clone. The default admits everything.
#[derive(Debug, Clone, Default)]
pub struct Filter(Option<Arc<Compiled>>);

#[derive(Debug)]
struct Compiled {
    rules: Rules,
    include: Option<Patterns>,
    exclude: Option<Patterns>,
}

/// One option's patterns: those matched against the whole URL, and those against its path.
#[derive(Debug)]
struct Patterns {
    urls: GlobSet,
    paths: GlobSet,
}

impl Patterns {
    fn new(option: &str, patterns: &[String]) -> Result<Option<Patterns>, String> {
        if patterns.is_empty() {
            return Ok(None);
        }
        let (mut urls, mut paths) = (GlobSetBuilder::new(), GlobSetBuilder::new());
        for p in patterns {
            if p.is_empty() {
                return Err(format!("--{option} '': an empty pattern matches nothing"));
            }
            let (set, glob) = if p.contains("://") {
                (&mut urls, p.clone())
            } else if p.starts_with('/') {
                (&mut paths, p.clone())
            } else {
                // The end of the path: any segments before it.
                (&mut paths, format!("/**/{p}"))
            };
            let glob = GlobBuilder::new(&glob)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| format!("--{option} {p:?}: {}", e.kind()))?;
            set.add(glob);
        }
        let build = |b: GlobSetBuilder| b.build().map_err(|e| format!("--{option}: {e}"));
        Ok(Some(Patterns {
            urls: build(urls)?,
            paths: build(paths)?,
        }))
    }

    fn matches(&self, url: &str) -> bool {
        if !url.contains("://") {
            // An opaque URI (`oai:host:12`, `urn:...`): the URI itself is its one path segment.
            return self.urls.is_match(url) || self.paths.is_match(format!("/{url}"));
        }
        self.urls.is_match(url) || self.paths.is_match(path_of(url))
    }
}

/// The path of a URL as it is spelt (`/` when it has none), without query or fragment.
fn path_of(url: &str) -> &str {
    let Some(after_scheme) = url.find("://").map(|i| &url[i + 3..]) else {
        return "/";
    };
    let Some(start) = after_scheme.find(['/', '?', '#']) else {
        return "/";
    };
    let rest = &after_scheme[start..];
    if !rest.starts_with('/') {
        return "/";
    }
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

impl Filter {
    /// The filter of `rules`; a pattern that is not a glob is an error naming it.
    pub(crate) fn new(rules: Rules) -> Result<Filter, String> {
        if rules.is_empty() {
            return Ok(Filter(None));
        }
        Ok(Filter(Some(Arc::new(Compiled {
            include: Patterns::new("include", &rules.include)?,
            exclude: Patterns::new("exclude", &rules.exclude)?,
            rules,
        }))))
    }

    /// Whether the mirror takes the resource at `url`.
    pub(crate) fn admits(&self, url: &str) -> bool {
        let Some(c) = &self.0 else {
            return true;
        };
        c.include.as_ref().is_none_or(|p| p.matches(url))
            && !c.exclude.as_ref().is_some_and(|p| p.matches(url))
    }

    /// Whether the mirror takes a resource with these categories (`--category`: one of them
    /// is named; no `--category`: any, none at all too). The URL is [`Filter::admits`]'.
    pub(crate) fn admits_categories(&self, categories: &[crate::model::Category]) -> bool {
        match &self.0 {
            Some(c) if !c.rules.category.is_empty() => categories
                .iter()
                .any(|cat| c.rules.category.iter().any(|w| cat.is(w))),
            _ => true,
        }
    }

    /// Whether the filter chooses by category (`--category`).
    pub(crate) fn by_category(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|c| !c.rules.category.is_empty())
    }

    /// Whether a Sitemap Index's part that aggregates `categories` (2012 draft §3.2) may hold
    /// a resource the filter takes: a part that aggregates none may; one that aggregates some
    /// must name one asked for.
    pub(crate) fn admits_part(&self, categories: &[crate::model::Category]) -> bool {
        categories.is_empty() || self.admits_categories(categories)
    }

    /// The rules it was made of (empty for the default).
    pub(crate) fn rules(&self) -> Rules {
        self.0.as_ref().map(|c| c.rules.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: &[&str], exclude: &[&str]) -> Filter {
        Filter::new(Rules {
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            ..Rules::default()
        })
        .unwrap()
    }

    #[test]
    fn categories_choose_resources_and_index_parts() {
        let cat = |v: &str, t: &str| crate::model::Category {
            name: "DCTERMS.subject".into(),
            value: v.into(),
            title: Some(t.into()),
        };
        let frogs = cat("http://en.wikipedia.org/wiki/Category:Frogs", "Frogs");
        let fish = cat("http://en.wikipedia.org/wiki/Category:Fish", "Fish");
        let f = Filter::new(Rules {
            category: vec!["Frogs".into()],
            ..Rules::default()
        })
        .unwrap();
        assert!(f.by_category());
        assert!(f.admits("http://example.com/res2"));
        assert!(f.admits_categories(std::slice::from_ref(&frogs)));
        assert!(!f.admits_categories(std::slice::from_ref(&fish)));
        assert!(!f.admits_categories(&[]));
        assert!(f.admits_part(&[]));
        assert!(!f.admits_part(std::slice::from_ref(&fish)));
        assert!(f.admits_part(&[fish.clone(), frogs]));
        assert!(Filter::default().admits_categories(&[fish]));
        assert_eq!(f.rules().as_options(), "--category 'Frogs'");
    }

    #[test]
    fn an_opaque_uri_is_matched_whole() {
        let f = filter(&[], &["*rec-0000*"]);
        assert!(!f.admits("oai:repo.example.org:rec-000001"));
        assert!(f.admits("oai:repo.example.org:rec-001000"));
        let f = filter(&["oai:repo.example.org:*"], &[]);
        assert!(f.admits("oai:repo.example.org:rec-1"));
        assert!(!f.admits("oai:other.example.org:rec-1"));
    }

    #[test]
    fn patterns_match_the_url_its_path_or_the_end_of_its_path() {
        let f = filter(&[], &["*.pdf"]);
        assert!(!f.admits("https://r.example.org/a/b/report.pdf"));
        assert!(!f.admits("https://r.example.org/report.pdf?download=1"));
        assert!(f.admits("https://r.example.org/a/report.pdf.html"));
        assert!(f.admits("https://r.example.org/a/b/"));
        // `*` stays within a segment; a leading `/` anchors at the path's start, any host.
        let f = filter(&["/items/*"], &[]);
        assert!(f.admits("https://r.example.org/items/1"));
        assert!(f.admits("http://other.example.org/items/2"));
        assert!(!f.admits("https://r.example.org/items/1/file.txt"));
        assert!(!f.admits("https://r.example.org/x/items/1"));
        let f = filter(&["/items/**"], &["thumbs/*.jpg"]);
        assert!(f.admits("https://r.example.org/items/1/file.txt"));
        assert!(!f.admits("https://r.example.org/items/1/thumbs/a.jpg"));
        assert!(f.admits("https://r.example.org/items/1/big/a.jpg"));
        // A whole URL, host included; `{a,b}` and classes.
        let f = filter(&["https://r.example.org/{a,b}/**"], &["**/[0-9]*"]);
        assert!(f.admits("https://r.example.org/a/x"));
        assert!(!f.admits("https://other.example.org/a/x"));
        assert!(!f.admits("https://r.example.org/b/7.txt"));
        assert!(!f.admits("https://r.example.org/c/x"));
        // Case matters, as in a URL's path.
        assert!(filter(&[], &["*.PDF"]).admits("https://r.example.org/a.pdf"));
        // No rules: everything.
        assert!(Filter::default().admits("https://r.example.org/a.pdf"));
        assert!(Filter::new(Rules::default()).unwrap().0.is_none());
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let e = Filter::new(Rules {
            include: vec!["/items/[a".into()],
            exclude: vec![],
            category: vec![],
        })
        .unwrap_err();
        assert!(e.contains("--include \"/items/[a\""), "{e}");
        let e = Filter::new(Rules {
            include: vec![],
            exclude: vec!["".into()],
            category: vec![],
        })
        .unwrap_err();
        assert!(e.contains("--exclude ''"), "{e}");
    }

    #[test]
    fn paths_are_found_in_urls() {
        assert_eq!(path_of("https://h/a/b?q=1#f"), "/a/b");
        assert_eq!(path_of("https://h"), "/");
        assert_eq!(path_of("https://h?x=/a"), "/");
        assert_eq!(path_of("https://user@h:8080/p"), "/p");
        assert_eq!(path_of("not a url"), "/");
    }

    #[test]
    fn rules_read_as_options() {
        let r = Rules {
            include: vec!["/a/**".into()],
            exclude: vec!["it's.pdf".into()],
            category: vec![],
        };
        assert_eq!(r.as_options(), "--include '/a/**' --exclude 'it'\\''s.pdf'");
    }
}
