//! When `pending` stops being believable. ResourceSync 1.1 §10.1: a source changes while a
//! Destination reads it, so a resource whose bytes contradict its list (another length or
//! digest, or a 404 for a resource deleted since) may have changed after the list was written;
//! such a resource is *pending*, left for the change that explains it, and does not hold the
//! sync point back. That holds on a source that otherwise agrees with its list. A source whose
//! resources mostly contradict it (every URL a login page, an error page, a list of another
//! site) is not changing: it is broken, and a run that called it pending would exit 0 with an
//! empty mirror and a sync point.
//!
//! The rule: in one collection, when more resources were pending than agreed with the list
//! (fetched as listed, a 304, or known unchanged), every pending one is a failure: the run
//! exits 3, the sync point is not recorded, and the reason of each says why. An HTTP error
//! other than 404/410, a refusal and a page served as HTML where the list declares another
//! media type are never pending (`net::FetchError`).
//!
//! A pending line is said only once it is believable: while more resources are pending than
//! agree, its line is held (the catalog and the summary have it at once). If the source
//! comes to agree, the held lines are said; if not, the run says once that the source does
//! not serve what it lists, with the first few resources as examples, not a `pending:` line
//! per resource taken back by a `failed:` one.
//!
//! Failures of one cause (every resource a login page served as HTML where the list declares
//! another type, every one an HTTP 403) are said for the first few resources, then once, with
//! how many more failed the same way; the catalog has each.

use crate::error::Error;
use crate::model::ProblemClass;
use crate::progress::Progress;
use crate::report::{problem_line, Summary};
use crate::store::writer::{Mark, Writer};
use crate::store::StoreError;

/// What one collection's resources said of its list, counted as they arrive.
#[derive(Debug, Default)]
pub(crate) struct Agreement {
    agreed: u64,
    pending: u64,
    /// Where the run's records stood before the first pending one, and the summary's
    /// problems.
    since: Option<(Mark, usize)>,
    /// Pending resources not yet said, while they are not believable: (URI, why it is
    /// pending, the reason of the failure it may become).
    held: Vec<(String, String, String)>,
    /// Failures said so far, by cause (the reason without the resource's own URL).
    causes: std::collections::HashMap<String, u64>,
}

/// The resources named as examples when pending ones become failures.
const EXAMPLES: usize = 3;

impl Agreement {
    /// `n` resources agree with the list.
    pub(crate) fn agreed(&mut self, n: u64) {
        self.agreed += n;
    }

    /// One resource is about to be recorded pending: `why` is its line's reason, `reason`
    /// what it fails with if the source turns out not to agree. Its line is said now if the
    /// source agrees with its list so far, else held.
    pub(crate) fn pending(
        &mut self,
        (writer, summary, progress): (&mut Writer<'_>, &Summary, &Progress),
        uri: &str,
        why: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        if self.since.is_none() {
            self.since = Some((writer.mark()?, summary.problems.len()));
        }
        self.pending += 1;
        self.held
            .push((uri.to_string(), why.to_string(), reason.to_string()));
        if self.pending <= self.agreed {
            self.say_held(progress);
        }
        Ok(())
    }

    /// A resource failed with `reason`: whether its line is said (the first [`EXAMPLES`] of
    /// a cause are; [`Agreement::settle`] says how many more there were).
    pub(crate) fn say_failure(&mut self, uri: &str, reason: &str) -> bool {
        let cause = reason
            .strip_prefix(uri)
            .and_then(|r| r.strip_prefix(": "))
            .unwrap_or(reason);
        let n = self.causes.entry(cause.to_string()).or_default();
        *n += 1;
        *n <= EXAMPLES as u64
    }

    /// The held pending lines, said.
    fn say_held(&mut self, progress: &Progress) {
        for (uri, why, _) in self.held.drain(..) {
            progress.println(&problem_line(ProblemClass::Pending, &uri, &why));
        }
    }

    /// At the end of `collection`: when more resources were pending than agreed, make them
    /// failures (the catalog's records, the summary's counts and problems) and say so once.
    /// Returns how many became failures.
    pub(crate) fn settle(
        mut self,
        writer: &mut Writer<'_>,
        summary: &mut Summary,
        progress: &Progress,
        collection: &str,
    ) -> Result<u64, Error> {
        let mut repeated: Vec<(String, u64)> = std::mem::take(&mut self.causes)
            .into_iter()
            .filter(|(_, n)| *n > EXAMPLES as u64)
            .collect();
        repeated.sort();
        for (cause, n) in repeated {
            progress.println(&format!(
                "failed: ... and {} more resources the same way: {cause} (rsmirror log --run {} \
                 lists each)",
                n - EXAMPLES as u64,
                writer.run_id()
            ));
        }
        let Some((mark, from)) = self.since else {
            return Ok(0);
        };
        if self.pending <= self.agreed {
            self.say_held(progress);
            return Ok(0);
        }
        let note = format!(
            "; not pending: {} of {} resources contradict the list, more than agree with it",
            self.pending,
            self.pending + self.agreed
        );
        writer.pending_failed(mark, &note)?;
        summary.pending -= self.pending;
        summary.failed += self.pending;
        for p in summary.problems[from..]
            .iter_mut()
            .filter(|p| p.class == ProblemClass::Pending)
        {
            p.class = ProblemClass::Failed;
            p.reason.push_str(&note);
        }
        progress.println(&problem_line(
            ProblemClass::Failed,
            collection,
            &format!(
                "{} of {} resources contradict the list (other bytes, or gone) and only {} agree \
                 with it: that is not a source changing while it is read (ResourceSync 1.1 \
                 §10.1) but one that does not serve what it lists (an error or login page, \
                 another site?); they count as failed, not pending, and the sync point is not \
                 recorded",
                self.pending,
                self.pending + self.agreed,
                self.agreed
            ),
        ));
        // A few of them as examples (those said already, while they were believable, first).
        for (uri, _, reason) in self.held.iter().take(EXAMPLES) {
            progress.println(&problem_line(ProblemClass::Failed, uri, reason));
        }
        if self.held.len() > EXAMPLES {
            progress.println(&format!(
                "  ... and {} more resources the same way (rsmirror log --run {} lists each)",
                self.held.len() - EXAMPLES,
                writer.run_id()
            ));
        }
        Ok(self.pending)
    }
}
