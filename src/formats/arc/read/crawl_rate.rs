//! `crawl_rate`: the request rate an ARC sitemap suggests (ARC sitemap 2.1, crawl rate:
//! `"crawl_rate": "1/s"`). The specification gives one example and no grammar; we read `N/UNIT` with a unit of seconds,
//! minutes or hours (`1/s`, `30/min`, `0.5/s`, `100/h`), or a bare number of requests per
//! second. Anything else is not understood, and the caller warns and goes on without it.

use std::fmt;
use std::time::Duration;

/// At most `requests` requests per `per`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrawlRate {
    pub requests: f64,
    pub per: Duration,
}

impl CrawlRate {
    /// Read `1/s`, `30/min`, `100/h`, `2` (per second). None when not understood.
    pub(crate) fn parse(value: &str) -> Option<CrawlRate> {
        let v = value.trim();
        let (n, unit) = match v.split_once('/') {
            Some((n, unit)) => (n.trim(), unit.trim()),
            None => (v, "s"),
        };
        let requests: f64 = n.parse().ok()?;
        if !requests.is_finite() || requests <= 0.0 {
            return None;
        }
        let secs = match unit.to_ascii_lowercase().as_str() {
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hr" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            _ => return None,
        };
        Some(CrawlRate {
            requests,
            per: Duration::from_secs(secs),
        })
    }

    /// From a JSON number: requests per second.
    pub(crate) fn per_second(requests: f64) -> Option<CrawlRate> {
        (requests.is_finite() && requests > 0.0).then_some(CrawlRate {
            requests,
            per: Duration::from_secs(1),
        })
    }

    /// The least time between two requests that keeps to this rate.
    pub(crate) fn delay(&self) -> Duration {
        // `1e-300/d` is a valid rate whose pause does not fit a Duration (which would panic).
        Duration::try_from_secs_f64(self.per.as_secs_f64() / self.requests).unwrap_or(Duration::MAX)
    }
}

impl fmt::Display for CrawlRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "min",
            3600 => "h",
            _ => "d",
        };
        write!(f, "{}/{unit}", self.requests)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vanishing_rate_gives_a_long_pause_not_a_panic() {
        let d = CrawlRate::parse("0.000001/d").unwrap().delay();
        assert_eq!(d, Duration::from_secs(86_400_000_000));
        assert_eq!(CrawlRate::parse("1e-300/d").unwrap().delay(), Duration::MAX);
    }

    #[test]
    fn the_specifications_form_and_its_neighbours() {
        assert_eq!(
            CrawlRate::parse("1/s").unwrap().delay(),
            Duration::from_secs(1)
        );
        assert_eq!(
            CrawlRate::parse(" 2 / s ").unwrap().delay(),
            Duration::from_millis(500)
        );
        assert_eq!(
            CrawlRate::parse("30/min").unwrap().delay(),
            Duration::from_secs(2)
        );
        assert_eq!(
            CrawlRate::parse("0.5/s").unwrap().delay(),
            Duration::from_secs(2)
        );
        assert_eq!(
            CrawlRate::parse("60/h").unwrap().delay(),
            Duration::from_secs(60)
        );
        assert_eq!(
            CrawlRate::parse("4").unwrap().delay(),
            Duration::from_millis(250)
        );
    }

    #[test]
    fn nonsense_is_not_understood() {
        for v in ["", "fast", "0/s", "-1/s", "1/fortnight", "NaN/s", "inf/s"] {
            assert_eq!(CrawlRate::parse(v), None, "{v:?}");
        }
        assert_eq!(CrawlRate::per_second(0.0), None);
    }
}
