//! The retry policy every request rsmirror makes follows, to a source (`net`) and to a bucket
//! (`store::bucket`) alike: which answers are worth another attempt, how long to wait before
//! it (a doubling backoff, or the server's `Retry-After`, RFC 9110 §10.2.3, whichever is
//! longer), and when to stop (the attempts spent, or a `Retry-After` longer than the ceiling:
//! a server that asks for more time than that is not waited for).
//!
//! The pure part only: no I/O, no clock but the one a caller hands in. It imports nothing of
//! the crate, so every layer may use it.

use std::time::Duration;

/// The longest `Retry-After` honoured by default (`--max-retry-after`).
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// How a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Attempts in all (1 = no retry; 0 is taken as 1).
    pub tries: u32,
    /// The first backoff; it doubles per retry, up to 64 times itself.
    pub backoff: Duration,
    /// The longest `Retry-After` honoured; a longer one ends the retries.
    pub max_retry_after: Duration,
}

impl Policy {
    /// After a failed attempt, `used` retries made before it (`retry_after`: the server's
    /// `Retry-After`, parsed): wait (counted in `used`), or stop. The attempts are checked
    /// first, then the ceiling; a stop spends nothing.
    pub fn next(&self, used: &mut u32, retry_after: Option<Duration>) -> Next {
        if *used + 1 >= self.tries.max(1) {
            return Next::Spent;
        }
        if let Some(ra) = retry_after.filter(|ra| *ra > self.max_retry_after) {
            return Next::TooLong(ra);
        }
        // Doubling, capped at 64 × the first backoff.
        let backoff = self.backoff.saturating_mul(1 << (*used).min(6));
        *used += 1;
        Next::Wait(retry_after.map_or(backoff, |ra| ra.max(backoff)))
    }
}

/// What to do after an attempt that is worth another ([`Retries::next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Wait this long, then try again.
    Wait(Duration),
    /// The attempts are spent.
    Spent,
    /// The server asked for this long a pause, more than [`Policy::max_retry_after`].
    TooLong(Duration),
}

/// The attempts one logical request has made, against its [`Policy`].
#[derive(Debug, Clone)]
pub struct Retries {
    policy: Policy,
    used: u32,
}

impl Retries {
    pub fn new(policy: Policy) -> Retries {
        Retries { policy, used: 0 }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// After a failed attempt (`retry_after`: the server's `Retry-After`, parsed): wait, or
    /// stop ([`Policy::next`]).
    pub fn next(&mut self, retry_after: Option<Duration>) -> Next {
        self.policy.next(&mut self.used, retry_after)
    }
}

/// An answer worth another attempt: 429 (Too Many Requests) and every 5xx.
pub fn is_retryable_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}

/// `Retry-After` (RFC 9110 §10.2.3): delta-seconds or an HTTP-date, as a wait from `now`.
/// A date in the past means "now"; an unparseable value means no advice.
pub fn parse_retry_after(value: &str, now: jiff::Timestamp) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // A huge number saturates; it is then larger than any max_retry_after.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = parse_http_date(value)?;
    let wait = now.duration_until(at);
    Some(if wait.is_negative() {
        Duration::ZERO
    } else {
        Duration::try_from(wait).unwrap_or(Duration::MAX)
    })
}

/// An HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms
/// that recipients must still accept.
pub fn parse_http_date(value: &str) -> Option<jiff::Timestamp> {
    static RFC2822: jiff::fmt::rfc2822::DateTimeParser = jiff::fmt::rfc2822::DateTimeParser::new();
    if let Ok(ts) = RFC2822.parse_timestamp(value) {
        return Some(ts);
    }
    let utc = |dt: jiff::civil::DateTime| {
        dt.to_zoned(jiff::tz::TimeZone::UTC)
            .ok()
            .map(|z| z.timestamp())
    };
    // RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`.
    if let Some(dt) = jiff::fmt::strtime::parse("%A, %d-%b-%y %H:%M:%S GMT", value)
        .ok()
        .and_then(|t| t.to_datetime().ok())
    {
        return utc(dt);
    }
    // asctime: `Sun Nov  6 08:49:37 1994` (the day is space-padded).
    let squeezed = value.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
    jiff::fmt::strtime::parse("%a %b %d %H:%M:%S %Y", &squeezed)
        .ok()
        .and_then(|t| t.to_datetime().ok())
        .and_then(utc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(tries: u32) -> Policy {
        Policy {
            tries,
            backoff: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(2),
        }
    }

    #[test]
    fn the_backoff_doubles_until_the_attempts_are_spent() {
        let mut r = Retries::new(policy(4));
        assert_eq!(r.next(None), Next::Wait(Duration::from_millis(10)));
        assert_eq!(r.next(None), Next::Wait(Duration::from_millis(20)));
        assert_eq!(r.next(None), Next::Wait(Duration::from_millis(40)));
        assert_eq!(r.next(None), Next::Spent, "4 tries = 3 retries");
        assert_eq!(r.next(None), Next::Spent, "and stays spent");
        // 1 try is no retry; 0 is taken as 1.
        assert_eq!(Retries::new(policy(1)).next(None), Next::Spent);
        assert_eq!(Retries::new(policy(0)).next(None), Next::Spent);
    }

    #[test]
    fn the_backoff_stops_doubling_at_64_times_the_first() {
        let mut r = Retries::new(policy(20));
        let waits: Vec<_> = (0..10).map(|_| r.next(None)).collect();
        assert_eq!(waits[5], Next::Wait(Duration::from_millis(320)));
        assert_eq!(waits[6], Next::Wait(Duration::from_millis(640)));
        assert_eq!(waits[9], Next::Wait(Duration::from_millis(640)));
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_ceiling() {
        let mut r = Retries::new(policy(4));
        // A longer wait than the backoff is the server's; a shorter one is the backoff's.
        assert_eq!(
            r.next(Some(Duration::from_secs(1))),
            Next::Wait(Duration::from_secs(1))
        );
        assert_eq!(
            r.next(Some(Duration::ZERO)),
            Next::Wait(Duration::from_millis(20))
        );
        // Exactly the ceiling is waited for; beyond it, the retries end, saying what was asked.
        assert_eq!(
            r.next(Some(Duration::from_secs(2))),
            Next::Wait(Duration::from_secs(2))
        );
        let mut r = Retries::new(policy(4));
        assert_eq!(
            r.next(Some(Duration::from_secs(3))),
            Next::TooLong(Duration::from_secs(3))
        );
        assert_eq!(
            r.next(Some(Duration::from_secs(4))),
            Next::TooLong(Duration::from_secs(4))
        );
        // A refusal to wait spends no attempt: the budget is the same afterwards.
        assert_eq!(r.next(None), Next::Wait(Duration::from_millis(10)));
        // Spent is said before too long.
        assert_eq!(
            Retries::new(policy(1)).next(Some(Duration::from_secs(3))),
            Next::Spent
        );
    }

    #[test]
    fn retryable_statuses_are_429_and_5xx() {
        for s in [429, 500, 502, 503, 504, 599] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [200, 204, 301, 304, 400, 403, 404, 412, 428, 600] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn retry_after_delta_seconds() {
        let now = jiff::Timestamp::now();
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("1.5", now), None);
        assert_eq!(parse_retry_after("", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_http_dates() {
        // RFC 9110 §5.6.7's example instant in its three forms.
        let now: jiff::Timestamp = "1994-11-06T08:48:37Z".parse().unwrap();
        for v in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                parse_retry_after(v, now),
                Some(Duration::from_secs(60)),
                "{v}"
            );
        }
        // A date in the past: retry now.
        let later: jiff::Timestamp = "2000-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", later),
            Some(Duration::ZERO)
        );
    }
}
