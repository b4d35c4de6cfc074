//! The warnings a collection read collects: what the spec lets a reader tolerate (SCP 0.1,
//! "Non-Fatal Errors") and what we tolerate besides. A 1 GB collection can repeat the same
//! oddity a million times, so the log keeps the first [`LISTED_PER_KIND`] of each kind and
//! counts the rest; [`WarningLog::summarise`] adds one line per kind with the total.

pub use crate::rs::document::Warning;

/// Warnings listed per kind before the rest are only counted.
pub const LISTED_PER_KIND: u64 = 20;

/// What a warning is about (for counting; the message says the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarnKind {
    /// A content block of a type SCP 0.1 does not define (kept raw).
    UnknownBlock,
    /// A heading level outside 1..=6 (clamped).
    HeadingLevel,
    /// A page whose `url` is not an absolute http(s) URL (skipped).
    PageSkipped,
    /// A URL inside a page (`canonical`, block URLs) that is not absolute http(s) (kept).
    InnerUrl,
    /// A language tag that is not BCP 47-shaped (kept).
    Language,
    /// An optional field of the wrong type or format (ignored).
    OptionalField,
    /// A required array that is empty, or a cell that is not a string (converted).
    Content,
    /// A blank line (skipped).
    BlankLine,
    /// Collection metadata oddities (newer minor version, `since` on a snapshot, ...).
    Metadata,
}

const KINDS: usize = 9;

impl WarnKind {
    fn index(self) -> usize {
        self as usize
    }

    fn summary(self) -> &'static str {
        match self {
            WarnKind::UnknownBlock => "unknown content block types",
            WarnKind::HeadingLevel => "heading levels clamped",
            WarnKind::PageSkipped => "pages skipped for an invalid URL",
            WarnKind::InnerUrl => "URLs inside pages that are not absolute http(s)",
            WarnKind::Language => "language tags not in BCP 47 form",
            WarnKind::OptionalField => "optional fields ignored",
            WarnKind::Content => "content oddities",
            WarnKind::BlankLine => "blank lines skipped",
            WarnKind::Metadata => "metadata warnings",
        }
    }
}

/// Bounded warning collector.
#[derive(Debug, Default)]
pub struct WarningLog {
    listed: Vec<Warning>,
    counts: [u64; KINDS],
    last_line: [u64; KINDS],
}

impl WarningLog {
    pub(crate) fn warn(&mut self, kind: WarnKind, line: u64, message: impl FnOnce() -> String) {
        let i = kind.index();
        self.counts[i] += 1;
        self.last_line[i] = line;
        if self.counts[i] <= LISTED_PER_KIND {
            self.listed.push(Warning {
                line,
                message: message(),
            });
        }
    }

    /// Drain the listed warnings (the counts stay).
    pub(crate) fn take(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.listed)
    }

    /// One closing line per kind that went over the listing cap.
    pub(crate) fn summarise(&mut self) {
        for kind in [
            WarnKind::UnknownBlock,
            WarnKind::HeadingLevel,
            WarnKind::PageSkipped,
            WarnKind::InnerUrl,
            WarnKind::Language,
            WarnKind::OptionalField,
            WarnKind::Content,
            WarnKind::BlankLine,
            WarnKind::Metadata,
        ] {
            let n = self.counts[kind.index()];
            if n > LISTED_PER_KIND {
                self.listed.push(Warning {
                    line: self.last_line[kind.index()],
                    message: format!(
                        "{}: {n} in all, {} not listed",
                        kind.summary(),
                        n - LISTED_PER_KIND
                    ),
                });
            }
        }
    }
}

/// What the unit tests look at.
#[cfg(test)]
impl WarningLog {
    pub(crate) fn listed(&self) -> &[Warning] {
        &self.listed
    }

    /// Total warnings of `kind` so far, listed or not.
    pub(crate) fn count(&self, kind: WarnKind) -> u64 {
        self.counts[kind.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_first_and_counts_the_rest() {
        let mut log = WarningLog::default();
        for line in 1..=25 {
            log.warn(WarnKind::HeadingLevel, line, || format!("h{line}"));
        }
        log.warn(WarnKind::BlankLine, 30, || "blank".into());
        assert_eq!(log.listed().len(), 21);
        assert_eq!(log.count(WarnKind::HeadingLevel), 25);
        log.summarise();
        let last = log.listed().last().unwrap();
        assert_eq!(last.line, 25);
        assert_eq!(
            last.message,
            "heading levels clamped: 25 in all, 5 not listed"
        );
        assert_eq!(log.take().len(), 22);
        assert!(log.listed().is_empty());
    }
}
