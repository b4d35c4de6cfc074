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
}

impl Agreement {
    /// `n` resources agree with the list.
    pub(crate) fn agreed(&mut self, n: u64) {
        self.agreed += n;
    }

    /// One resource is about to be recorded pending.
    pub(crate) fn pending(
        &mut self,
        writer: &mut Writer<'_>,
        summary: &Summary,
    ) -> Result<(), StoreError> {
        if self.since.is_none() {
            self.since = Some((writer.mark()?, summary.problems.len()));
        }
        self.pending += 1;
        Ok(())
    }

    /// At the end of `collection`: when more resources were pending than agreed, make them
    /// failures (the catalog's records, the summary's counts and problems) and say so once.
    /// Returns how many became failures.
    pub(crate) fn settle(
        self,
        writer: &mut Writer<'_>,
        summary: &mut Summary,
        progress: &Progress,
        collection: &str,
    ) -> Result<u64, Error> {
        let Some((mark, from)) = self.since else {
            return Ok(0);
        };
        if self.pending <= self.agreed {
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
        Ok(self.pending)
    }
}
