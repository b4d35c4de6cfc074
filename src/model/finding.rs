//! A finding: one thing an audit found, typed (rustic's check: a class, a severity mark, a
//! hint on how to repair), as the audit reports it and the catalog keeps it. The vocabulary
//! (classes, marks, hints) and one finding's line, JSON and CSV forms; the report that carries
//! many is the audit's.

use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// What kind of finding this is. The mark follows from the class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// `=` the source declares what the mirror holds, a digest agreeing.
    InSync,
    /// `=` (offline) the stored bytes are what was recorded at ingest.
    Verified,
    /// `+` listed at the source, not in the mirror (or tombstoned there).
    Missing,
    /// `*` the source declares a different digest, length or lastmod.
    Changed,
    /// `-` in the mirror, no longer listed at the source.
    Extra,
    /// `?` no digest on both sides to compare (lastmod / length may agree).
    Unverifiable,
    /// `!` listed at the source outside its scope: never mirrored.
    Refused,
    /// `!` the object's bytes differ from what was recorded (length or a digest).
    Corrupt,
    /// `!` the catalog names an object that is not in `objects/`.
    MissingObject,
    /// `!` the object is there but cannot be read.
    Unreadable,
    /// `!` a file in `objects/` that no version references.
    StrayObject,
    /// `!` the catalog itself is damaged or inconsistent.
    Catalog,
    /// `!` a source document (part of an index) could not be read.
    Source,
}

impl Class {
    pub const ALL: [Class; 13] = [
        Class::InSync,
        Class::Verified,
        Class::Missing,
        Class::Changed,
        Class::Extra,
        Class::Unverifiable,
        Class::Refused,
        Class::Corrupt,
        Class::MissingObject,
        Class::Unreadable,
        Class::StrayObject,
        Class::Catalog,
        Class::Source,
    ];

    /// The name used in reports and in `audit_findings.class`.
    pub fn name(self) -> &'static str {
        match self {
            Class::InSync => "in-sync",
            Class::Verified => "verified",
            Class::Missing => "missing",
            Class::Changed => "changed",
            Class::Extra => "extra",
            Class::Unverifiable => "unverifiable",
            Class::Refused => "refused",
            Class::Corrupt => "corrupt",
            Class::MissingObject => "missing-object",
            Class::Unreadable => "unreadable",
            Class::StrayObject => "stray-object",
            Class::Catalog => "catalog",
            Class::Source => "source",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }

    /// rclone's one-character mark.
    pub(crate) fn mark(self) -> char {
        match self {
            Class::InSync | Class::Verified => '=',
            Class::Missing => '+',
            Class::Extra => '-',
            Class::Changed => '*',
            Class::Unverifiable => '?',
            _ => '!',
        }
    }

    /// True for the `=` classes: nothing wrong found.
    pub fn is_ok(self) -> bool {
        self.mark() == '='
    }

    /// Does this finding make the audit fail (exit 1)? `?` only with `--require-fixity`.
    pub(crate) fn is_difference(self, require_fixity: bool) -> bool {
        match self.mark() {
            '=' => false,
            '?' => require_fixity,
            _ => true,
        }
    }

    /// How to repair, in one line.
    pub(crate) fn hint(self) -> &'static str {
        match self {
            Class::InSync | Class::Verified => "",
            Class::Missing => "run rsmirror incremental or rsmirror baseline to fetch it",
            Class::Changed => {
                "run rsmirror incremental or rsmirror baseline to fetch the new version"
            }
            Class::Extra => {
                "run rsmirror baseline SOURCE --delete to record the deletion (rsmirror incremental records it when a Change List reports it)"
            }
            Class::Unverifiable => {
                "the source declares no digest to prove the copy; --require-fixity counts this as a difference"
            }
            Class::Refused => {
                "listed outside the source's scope, so never mirrored; --allow-host widens the scope"
            }
            Class::MissingObject => {
                "rsmirror repair gets it back from the source (or --from-mirror a backup), proven by its SHA-256"
            }
            Class::Corrupt | Class::Unreadable => {
                "rsmirror repair quarantines it and gets the bytes back from the source (or --from-mirror a backup), proven by its SHA-256"
            }
            Class::StrayObject => {
                "no version references it: a baseline re-attaches it by digest while its source lists it; rsmirror repair moves it to quarantine/"
            }
            Class::Catalog => "the catalog is damaged or inconsistent: rsmirror catalog restore puts back the newest good copy (see rsmirror catalog check)",
            Class::Source => {
                "part of the source's list could not be read: nothing under it was compared; re-run the audit"
            }
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One thing an audit found about a resource, an object, the catalog or the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub class: Class,
    /// The resource concerned (as the source lists it), if any.
    pub uri: Option<String>,
    /// The object concerned: its sha256 hex, or for a stray its path under the mirror.
    pub object: Option<String>,
    /// The field that differs: `md5`, `sha-1`, `sha-256`, `length`, `lastmod`, `digest`, ...
    pub field: Option<String>,
    /// What it should be: the source's value (against the source) or the value recorded at
    /// ingest (local fixity).
    pub expected: Option<String>,
    /// What it is: the mirror's value, or what the bytes on disk give.
    pub actual: Option<String>,
    pub hint: Cow<'static, str>,
}

impl Finding {
    /// A finding of `class` with its default hint and nothing else filled in.
    pub(crate) fn new(class: Class) -> Finding {
        Finding {
            class,
            uri: None,
            object: None,
            field: None,
            expected: None,
            actual: None,
            hint: Cow::Borrowed(class.hint()),
        }
    }

    pub(crate) fn uri(mut self, uri: impl Into<String>) -> Finding {
        self.uri = Some(uri.into());
        self
    }

    pub(crate) fn object(mut self, object: impl Into<String>) -> Finding {
        self.object = Some(object.into());
        self
    }

    pub(crate) fn field(mut self, field: impl Into<String>) -> Finding {
        self.field = Some(field.into());
        self
    }

    pub(crate) fn expected(mut self, v: impl Into<String>) -> Finding {
        self.expected = Some(v.into());
        self
    }

    pub(crate) fn actual(mut self, v: impl Into<String>) -> Finding {
        self.actual = Some(v.into());
        self
    }

    pub(crate) fn hint(mut self, hint: impl Into<Cow<'static, str>>) -> Finding {
        self.hint = hint.into();
        self
    }

    pub fn mark(&self) -> char {
        self.class.mark()
    }

    /// What the line is about: the URI, else the object, else the catalog.
    pub fn subject(&self) -> &str {
        self.uri
            .as_deref()
            .or(self.object.as_deref())
            .unwrap_or("catalog.sqlite")
    }

    /// The report line: `MARK SUBJECT`, and unless in sync `  class [object O] [field]:
    /// [expected E, actual A | A]  (hint)`. Values are never shortened: the line is filed.
    pub fn line(&self) -> String {
        let mut s = format!("{} {}", self.mark(), self.subject());
        if self.class.is_ok() {
            return s;
        }
        s.push_str("  ");
        s.push_str(self.class.name());
        if let (Some(_), Some(o)) = (&self.uri, &self.object) {
            s.push_str(" object ");
            s.push_str(o);
        }
        if let Some(f) = &self.field {
            s.push(' ');
            s.push_str(f);
        }
        match (&self.expected, &self.actual) {
            (Some(e), Some(a)) => s.push_str(&format!(": expected {e}, actual {a}")),
            (Some(e), None) => s.push_str(&format!(": expected {e}")),
            (None, Some(a)) => s.push_str(&format!(": {a}")),
            (None, None) => {}
        }
        if !self.hint.is_empty() {
            s.push_str("  (");
            s.push_str(&self.hint);
            s.push(')');
        }
        s
    }

    /// The JSON form with its keys in column order (a derived `Serialize` keeps field order).
    pub(crate) fn view(&self) -> FindingView<'_> {
        FindingView {
            mark: self.mark(),
            class: self.class.name(),
            uri: self.uri.as_deref(),
            object: self.object.as_deref(),
            field: self.field.as_deref(),
            expected: self.expected.as_deref(),
            actual: self.actual.as_deref(),
            hint: (!self.hint.is_empty()).then_some(self.hint.as_ref()),
        }
    }

    /// Back from the JSON form (for tools and tests reading a report).
    pub fn from_json(v: &Value) -> Option<Finding> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let class = Class::parse(v.get("class")?.as_str()?)?;
        Some(Finding {
            class,
            uri: text("uri"),
            object: text("object"),
            field: text("field"),
            expected: text("expected"),
            actual: text("actual"),
            hint: Cow::Owned(text("hint").unwrap_or_default()),
        })
    }

    /// One CSV record (RFC 4180), columns as [`CSV_HEADER`].
    pub(crate) fn csv(&self) -> String {
        let hint = (!self.hint.is_empty()).then_some(self.hint.as_ref());
        [
            Some(self.mark().to_string().as_str()),
            Some(self.class.name()),
            self.uri.as_deref(),
            self.object.as_deref(),
            self.field.as_deref(),
            self.expected.as_deref(),
            self.actual.as_deref(),
            hint,
        ]
        .iter()
        .map(|v| csv_field(v.unwrap_or("")))
        .collect::<Vec<_>>()
        .join(",")
    }
}

#[derive(Serialize)]
pub(crate) struct FindingView<'a> {
    mark: char,
    class: &'static str,
    uri: Option<&'a str>,
    object: Option<&'a str>,
    field: Option<&'a str>,
    expected: Option<&'a str>,
    actual: Option<&'a str>,
    hint: Option<&'a str>,
}

/// The CSV columns, the same as the catalog's `audit_findings`.
pub const CSV_HEADER: &str = "mark,class,uri,object,field,expected,actual,hint";

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}
