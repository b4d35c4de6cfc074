//! A category of a resource (the 2012 draft §3.1.7): an `xhtml:link rel="DCTERMS.subject"
//! href=…` or an `xhtml:meta name="DC.subject" content=…` on an entry, "information useful to
//! filter or select resources of interest". On a Sitemap Index's `<sitemap>` the same elements
//! aggregate the categories of the part's resources (§3.2), so that a Destination can skip the
//! parts it does not want.

/// One category as the source gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Category {
    /// The `rel` of an `xhtml:link` or the `name` of an `xhtml:meta`, as written
    /// (`DCTERMS.subject`).
    pub name: String,
    /// The `href` of an `xhtml:link` (resolved) or the `content` of an `xhtml:meta`.
    pub value: String,
    /// The `title` of an `xhtml:link`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Category {
    /// Whether `--category wanted` names this category: its value exactly (a URI, a term), or
    /// its title, case aside (`Frogs`).
    pub fn is(&self, wanted: &str) -> bool {
        self.value == wanted
            || self
                .title
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(wanted))
    }

    /// As `ls --long` and `log` show it: the title, then the value (`Frogs
    /// <http://…/Category:Frogs>`), or the value alone.
    pub fn display(&self) -> String {
        match &self.title {
            Some(t) => format!("{t} <{}>", self.value),
            None => self.value.clone(),
        }
    }

    /// Whether an `xhtml:link` with `rel` is a category, not a link the mirror follows
    /// (`alternate`, a mirror, a dump, a memento): a Dublin Core term (`DC.subject`,
    /// `DCTERMS.subject`, `dcterms.type`…), as the 2012 draft's examples write them.
    pub fn is_category_rel(rel: &str) -> bool {
        let r = rel.trim().to_ascii_lowercase();
        (r.starts_with("dc.") || r.starts_with("dcterms.")) && r != "dcterms.modified"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_category_is_named_by_its_value_or_its_title() {
        let c = Category {
            name: "DCTERMS.subject".into(),
            value: "http://en.wikipedia.org/wiki/Category:Frogs".into(),
            title: Some("Frogs".into()),
        };
        assert!(c.is("http://en.wikipedia.org/wiki/Category:Frogs"));
        assert!(c.is("frogs"));
        assert!(!c.is("Fish"));
        assert!(!c.is("http://en.wikipedia.org/wiki/Category:frogs"));
        assert_eq!(
            c.display(),
            "Frogs <http://en.wikipedia.org/wiki/Category:Frogs>"
        );
        assert!(Category::is_category_rel("DCTERMS.subject"));
        assert!(!Category::is_category_rel("alternate"));
        assert!(!Category::is_category_rel("DCTERMS.modified"));
    }
}
