//! What a sync point may be. ResourceSync 1.1 §10.1 / §10.2 anchor a Destination at the `at` of
//! a Resource List or at the time of the last change it applied; both come from the source, and
//! a typo or a hostile entry (`at="2099-01-01T00:00:00Z"`) would push the mirror into the future,
//! where every real change that follows looks already applied. So a sync point never passes the
//! time the document it comes from was read, give or take [`CLOCK_SKEW`] for a source whose
//! clock runs ahead of ours. What goes past it is clamped here, and the caller says so as a
//! warning that names the document and the entry.

use jiff::{SignedDuration, Timestamp};

/// How far ahead of this machine's clock a source's times may be and still count as real: a
/// server clock that runs a few minutes fast is common, one a day fast is not.
pub const CLOCK_SKEW: SignedDuration = SignedDuration::from_secs(10 * 60);

/// The latest time a document read at `read_at` can vouch for.
pub(crate) fn latest_allowed(read_at: Timestamp) -> Timestamp {
    read_at.saturating_add(CLOCK_SKEW).unwrap_or(Timestamp::MAX)
}

/// Whether `t`, taken from a document read at `read_at`, lies in the future.
pub(crate) fn is_future(t: Timestamp, read_at: Timestamp) -> bool {
    t > latest_allowed(read_at)
}

/// `at` as a sync point from a document read at `read_at`: unchanged when it is not in the
/// future, else the time the document was read (a later one is never safe: the changes between
/// it and the real `at` would be skipped), with the warning to print.
pub(crate) fn bounded(
    at: Timestamp,
    read_at: Timestamp,
    what: &str,
) -> (Timestamp, Option<String>) {
    if is_future(at, read_at) {
        // To the whole second below: a sync point is written and compared in seconds.
        let read_at = Timestamp::from_second(read_at.as_second()).unwrap_or(read_at);
        (
            read_at,
            Some(format!(
                "{what} is {at}, later than the time it was read ({}): the sync point is kept at \
                 {read_at}, not moved into the future",
                read_at.strftime("%Y-%m-%dT%H:%M:%SZ")
            )),
        )
    } else {
        (at, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_future_time_is_clamped_to_the_reading_and_a_near_one_is_kept() {
        let read: Timestamp = "2026-03-01T00:00:00Z".parse().unwrap();
        let (at, warning) = bounded("2099-01-01T00:00:00Z".parse().unwrap(), read, "at of X");
        assert_eq!(at, read);
        let warning = warning.unwrap();
        assert!(
            warning.contains("at of X is 2099-01-01T00:00:00Z"),
            "{warning}"
        );
        // A server clock five minutes fast is still believed.
        let near: Timestamp = "2026-03-01T00:05:00Z".parse().unwrap();
        assert_eq!(bounded(near, read, "x"), (near, None));
        let past: Timestamp = "2025-03-01T00:00:00Z".parse().unwrap();
        assert_eq!(bounded(past, read, "x"), (past, None));
        assert!(!is_future(Timestamp::MAX, Timestamp::MAX));
    }
}
