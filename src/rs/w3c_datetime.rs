//! W3C Datetime (the ISO 8601 profile ResourceSync uses for `lastmod`, `at`, `from`, ...).
//!
//! Allowed forms (ResourceSync 1.1 §3): `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, `YYYY-MM-DDThh:mmTZD`,
//! `YYYY-MM-DDThh:mm:ssTZD`, `YYYY-MM-DDThh:mm:ss.sTZD`. A time part REQUIRES a zone; a value
//! without one is an error naming the value, unless the caller opted into [`Zone::AssumeUtc`]
//! (real CORE documents write `2020-03-18 01:20:10`), in which case it is read as UTC and
//! flagged. UTC = local − offset (resync has this sign inverted; we do not copy it).

use jiff::Timestamp;
use std::fmt;

/// What to do with a time that has no zone designator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Zone {
    /// The spec's rule: an error.
    #[default]
    Required,
    /// Read as UTC and report it (`--assume-utc`).
    AssumeUtc,
}

/// A parse failure, carrying the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatetimeError {
    #[error("time without a zone in {0:?} (W3C Datetime requires Z or ±hh:mm; --assume-utc reads it as UTC)")]
    NoZone(String),
    #[error("not a W3C datetime: {0:?}")]
    Malformed(String),
}

/// A parsed value and whether it was read leniently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    pub timestamp: Timestamp,
    /// True when a zone-less or space-separated value was read as UTC.
    pub assumed_utc: bool,
}

impl fmt::Display for Parsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.timestamp)
    }
}

/// Parse a W3C datetime exactly.
pub fn parse(value: &str, zone: Zone) -> Result<Parsed, DatetimeError> {
    match utc_second(value) {
        Some(timestamp) => Ok(Parsed {
            timestamp,
            assumed_utc: false,
        }),
        None => parse_any(value, zone),
    }
}

/// `YYYY-MM-DDThh:mm:ssZ` with a valid date and time (no leap second), else None: the form
/// nearly every `lastmod` of a list and of the catalog is written in, read without the
/// general path (and to the same instant).
pub(crate) fn utc_second(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if d < 1 || d > month_days || hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    let days = days_from_civil(y, m, d);
    // Past jiff's range: None, as `str::parse::<Timestamp>` gives for a catalog value;
    // [`parse`] then reads it on the general path (see [`saturating`]).
    Timestamp::from_second(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

/// The instant `seconds` after the epoch, where the last hours of year 9999, which lie past
/// jiff's range (it ends at 9999-12-30T22:00:00.999999999Z, to leave room for any offset),
/// read as its last instant: `9999-12-31T23:59:59Z` is a common way to write "never", and
/// valid W3C. A W3C datetime (four-digit year) cannot lie before jiff's range.
fn saturating(seconds: i64, nanos: i32) -> Timestamp {
    Timestamp::new(seconds, nanos).unwrap_or(if seconds > 0 {
        Timestamp::MAX
    } else {
        Timestamp::MIN
    })
}

/// [`parse`] of any form.
fn parse_any(value: &str, zone: Zone) -> Result<Parsed, DatetimeError> {
    let f = Fields {
        value,
        s: value.trim(),
    };
    let b = f.s.as_bytes();
    let (date, pos) = f.date()?;
    if pos == b.len() {
        // Date only (or year / year-month): midnight UTC.
        let ts = instant(date, jiff::civil::Time::midnight(), 0).ok_or_else(|| f.malformed())?;
        return Ok(Parsed {
            timestamp: ts,
            assumed_utc: false,
        });
    }
    if pos != 10 {
        return Err(f.malformed());
    }
    let mut lenient = false;
    match b[pos] {
        b'T' => {}
        b' ' if zone == Zone::AssumeUtc => lenient = true,
        b' ' => return Err(DatetimeError::NoZone(value.to_string())),
        _ => return Err(f.malformed()),
    }
    let ([hour, minute, second], nanos, pos) = f.clock(pos + 1)?;
    let offset_seconds = match f.offset(pos)? {
        Some(seconds) => seconds,
        None if zone == Zone::AssumeUtc || lenient => {
            lenient = true;
            0
        }
        None => return Err(DatetimeError::NoZone(value.to_string())),
    };
    if lenient && !matches!(zone, Zone::AssumeUtc) {
        return Err(DatetimeError::NoZone(value.to_string()));
    }
    let time = jiff::civil::Time::new(hour as i8, minute as i8, second as i8, nanos)
        .map_err(|_| f.malformed())?;
    jiff::tz::Offset::from_seconds(offset_seconds).map_err(|_| f.malformed())?;
    let ts = instant(date, time, offset_seconds).ok_or_else(|| f.malformed())?;
    Ok(Parsed {
        timestamp: ts,
        assumed_utc: lenient,
    })
}

/// A value being read by [`parse_any`]: `s` is `value` trimmed; every part that is not what
/// the grammar wants is [`DatetimeError::Malformed`], naming `value`.
struct Fields<'a> {
    value: &'a str,
    s: &'a str,
}

impl Fields<'_> {
    fn malformed(&self) -> DatetimeError {
        DatetimeError::Malformed(self.value.to_string())
    }

    /// The decimal digits at `r`.
    fn num(&self, r: std::ops::Range<usize>) -> Result<i32, DatetimeError> {
        let part = self.s.get(r).ok_or_else(|| self.malformed())?;
        if part.is_empty() || !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(self.malformed());
        }
        part.parse::<i32>().map_err(|_| self.malformed())
    }

    /// `YYYY`, `YYYY-MM` or `YYYY-MM-DD` at the start (month and day default to 1), and where
    /// it ends.
    fn date(&self) -> Result<(jiff::civil::Date, usize), DatetimeError> {
        let b = self.s.as_bytes();
        if b.len() < 4 {
            return Err(self.malformed());
        }
        let year = self.num(0..4)?;
        let (mut month, mut day) = (1, 1);
        let mut pos = 4;
        if b.len() > pos {
            if b[pos] != b'-' {
                return Err(self.malformed());
            }
            month = self.num(pos + 1..pos + 3)?;
            pos += 3;
            if b.len() > pos {
                if b[pos] != b'-' {
                    return Err(self.malformed());
                }
                day = self.num(pos + 1..pos + 3)?;
                pos += 3;
            }
        }
        let date = jiff::civil::Date::new(year as i16, month as i8, day as i8)
            .map_err(|_| self.malformed())?;
        Ok((date, pos))
    }

    /// `hh:mm`, `hh:mm:ss` or `hh:mm:ss.s…` from `pos`: hour, minute and second (not checked
    /// against their ranges yet), nanoseconds, and where it ends.
    fn clock(&self, mut pos: usize) -> Result<([i32; 3], i32, usize), DatetimeError> {
        let b = self.s.as_bytes();
        let hour = self.num(pos..pos + 2)?;
        if b.get(pos + 2) != Some(&b':') {
            return Err(self.malformed());
        }
        let minute = self.num(pos + 3..pos + 5)?;
        pos += 5;
        let (mut second, mut nanos) = (0, 0i32);
        if b.get(pos) == Some(&b':') {
            second = self.num(pos + 1..pos + 3)?;
            pos += 3;
            if b.get(pos) == Some(&b'.') {
                let start = pos + 1;
                let mut end = start;
                while end < b.len() && b[end].is_ascii_digit() {
                    end += 1;
                }
                if end == start {
                    return Err(self.malformed());
                }
                // Keep sub-second precision up to nanoseconds; digits beyond are truncated.
                let digits = &self.s[start..end.min(start + 9)];
                nanos = format!("{digits:0<9}")
                    .parse()
                    .map_err(|_| self.malformed())?;
                pos = end;
            }
        }
        Ok(([hour, minute, second], nanos, pos))
    }

    /// The zone designator from `pos` to the end, in seconds east of UTC: `Z` or `±hh:mm`;
    /// `None` when there is none.
    fn offset(&self, pos: usize) -> Result<Option<i32>, DatetimeError> {
        let tz = &self.s[pos..];
        if tz.is_empty() {
            return Ok(None);
        }
        if tz == "Z" {
            return Ok(Some(0));
        }
        let tb = tz.as_bytes();
        if tb.len() != 6 || (tb[0] != b'+' && tb[0] != b'-') || tb[3] != b':' {
            return Err(self.malformed());
        }
        let h = self.num(pos + 1..pos + 3)?;
        let m = self.num(pos + 4..pos + 6)?;
        if h > 23 || m > 59 {
            return Err(self.malformed());
        }
        let sign = if tb[0] == b'-' { -1 } else { 1 };
        Ok(Some(sign * (h * 3600 + m * 60)))
    }
}

/// The instant of a civil date and time at `offset_seconds` east of UTC: what converting it to
/// a zoned time in that fixed zone gives (past jiff's range, its last instant: see
/// [`saturating`]), by
/// arithmetic instead of through the zone machinery (every `<lastmod>` of every list).
fn instant(
    date: jiff::civil::Date,
    time: jiff::civil::Time,
    offset_seconds: i32,
) -> Option<Timestamp> {
    let seconds = days_from_civil(date.year().into(), date.month().into(), date.day().into())
        * 86_400
        + i64::from(time.hour()) * 3600
        + i64::from(time.minute()) * 60
        + i64::from(time.second())
        - i64::from(offset_seconds);
    Some(saturating(seconds, time.subsec_nanosecond()))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Deterministic values for the differential tests (dates, digest tokens).
#[cfg(test)]
pub(crate) mod test_values {
    /// A xorshift64 sequence from `seed`.
    pub(crate) fn xorshift(mut n: u64) -> impl FnMut() -> u64 {
        move || {
            n ^= n << 13;
            n ^= n >> 7;
            n ^= n << 17;
            n
        }
    }

    /// `count` strings of the `YYYY-MM-DDThh:mm:ssZ` form, each field now and then out of
    /// range (month 13, day 32, hour 24, minute or second 60).
    pub(crate) fn utc_second_strings(seed: u64, count: usize) -> impl Iterator<Item = String> {
        let mut next = xorshift(seed);
        (0..count).map(move |_| {
            let v = next();
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                v % 10_000,
                (v >> 14) % 14,
                (v >> 18) % 33,
                (v >> 24) % 25,
                (v >> 30) % 61,
                (v >> 36) % 61
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> String {
        parse(s, Zone::Required).unwrap().timestamp.to_string()
    }

    #[test]
    fn the_utc_second_path_gives_what_the_general_one_gives() {
        let mut fast = 0;
        for s in test_values::utc_second_strings(0x2545_f491_4f6c_dd1d, 200_000) {
            if let Some(t) = utc_second(&s) {
                fast += 1;
                assert_eq!(
                    Ok(t),
                    parse_any(&s, Zone::Required).map(|p| p.timestamp),
                    "{s}"
                );
            }
            assert_eq!(
                parse(&s, Zone::Required),
                parse_any(&s, Zone::Required),
                "{s}"
            );
        }
        assert!(fast > 50_000, "{fast}");
        for s in [
            "2026-01-01T00:00:00Z",
            "2000-02-29T12:00:00Z",
            "1900-02-29T12:00:00Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "2016-12-31T23:59:60Z",
            "2024-05-01T06:00:07+00:00",
            "2024-05-01T06:00:07z",
            " 2024-05-01T06:00:07Z",
            "2024-05-01T06:00:07Z ",
            "2024-05-01 06:00:07Z",
            "2024-05-01T06:00:0xZ",
        ] {
            for zone in [Zone::Required, Zone::AssumeUtc] {
                assert_eq!(parse(s, zone), parse_any(s, zone), "{s}");
            }
        }
    }

    #[test]
    fn all_allowed_forms() {
        assert_eq!(utc("2024"), "2024-01-01T00:00:00Z");
        assert_eq!(utc("2024-05"), "2024-05-01T00:00:00Z");
        assert_eq!(utc("2024-05-01"), "2024-05-01T00:00:00Z");
        assert_eq!(utc("2024-05-01T06:00Z"), "2024-05-01T06:00:00Z");
        assert_eq!(utc("2024-05-01T06:00:07Z"), "2024-05-01T06:00:07Z");
        assert_eq!(
            utc("2015-06-04T08:12:45.297844Z"),
            "2015-06-04T08:12:45.297844Z"
        );
    }

    #[test]
    fn instants_are_what_the_fixed_zone_gives() {
        let mut next = test_values::xorshift(0x2545_f491_4f6c_dd1d);
        let check = |y: i16, m: i8, d: i8, h: i8, mi: i8, s: i8, ns: i32, off: i32| {
            let Ok(date) = jiff::civil::Date::new(y, m, d) else {
                return;
            };
            let time = jiff::civil::Time::new(h, mi, s, ns).unwrap();
            let offset = jiff::tz::Offset::from_seconds(off).unwrap();
            let want = date
                .to_datetime(time)
                .to_zoned(jiff::tz::TimeZone::fixed(offset))
                .map(|z| z.timestamp())
                .unwrap_or(Timestamp::MAX);
            assert_eq!(instant(date, time, off), Some(want), "{date} {time} {off}");
        };
        for _ in 0..100_000 {
            let v = next();
            check(
                (v % 10_000) as i16,
                (1 + (v >> 14) % 12) as i8,
                (1 + (v >> 18) % 31) as i8,
                ((v >> 24) % 24) as i8,
                ((v >> 30) % 60) as i8,
                ((v >> 36) % 60) as i8,
                ((v >> 42) % 1_000_000_000) as i32,
                ((v >> 20) % (2 * 86_399)) as i32 - 86_399,
            );
        }
        for (y, m, d, off) in [
            (9999, 12, 31, 0),
            (9999, 12, 30, -7200),
            (9999, 12, 30, 7200),
            (0, 1, 1, 0),
            (1970, 1, 1, 0),
            (1969, 12, 31, -1),
        ] {
            for h in [0, 1, 2, 22, 23] {
                check(y, m, d, h, 0, 0, 0, off);
                check(y, m, d, h, 59, 59, 999_999_999, off);
            }
        }
    }

    /// Regression: "never" written as the last second of 9999 was refused as not a W3C
    /// datetime, while `9999-06-01` passed (W3C Datetime allows any four-digit year).
    #[test]
    fn the_last_second_of_9999_reads_as_the_latest_instant() {
        for s in [
            "9999-12-31T23:59:59Z",
            "9999-12-31T23:59:59.999+00:00",
            "9999-12-31",
            "9999-12-31T12:00:00-05:00",
        ] {
            let p = parse(s, Zone::Required).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(p.timestamp, Timestamp::MAX, "{s}");
        }
        assert_eq!(utc("9999-12-30T21:59:59Z"), "9999-12-30T21:59:59Z");
        assert!(parse("9999-12-32T00:00:00Z", Zone::Required).is_err());
    }

    #[test]
    fn offset_sign_is_utc_equals_local_minus_offset() {
        // ResourceSync §3: 10:00+02:00 = 08:00Z (resync gets this backwards).
        assert_eq!(utc("2024-04-29T10:00:00+02:00"), "2024-04-29T08:00:00Z");
        assert_eq!(utc("2012-01-01T02:00:00-02:00"), "2012-01-01T04:00:00Z");
    }

    #[test]
    fn a_time_without_zone_is_an_error_naming_the_value() {
        let e = parse("2020-06-02T00:00:00", Zone::Required).unwrap_err();
        assert_eq!(e, DatetimeError::NoZone("2020-06-02T00:00:00".into()));
        assert!(e.to_string().contains("\"2020-06-02T00:00:00\""));
        let e = parse("2020-03-18 01:20:10", Zone::Required).unwrap_err();
        assert!(matches!(e, DatetimeError::NoZone(_)));
    }

    #[test]
    fn assume_utc_reads_and_flags() {
        let p = parse("2020-03-18 01:20:10", Zone::AssumeUtc).unwrap();
        assert!(p.assumed_utc);
        assert_eq!(p.timestamp.to_string(), "2020-03-18T01:20:10Z");
        let p = parse("2020-06-02T00:00:00", Zone::AssumeUtc).unwrap();
        assert!(p.assumed_utc);
    }

    #[test]
    fn malformed_values() {
        for bad in [
            "",
            "20",
            "2024-13-01",
            "2024-02-30",
            "2024-05-01T25:00Z",
            "yesterday",
            "2024-05-01T06:00:00+0200",
            "2024-05-01T06:00:00.Z",
        ] {
            assert!(
                matches!(
                    parse(bad, Zone::AssumeUtc),
                    Err(DatetimeError::Malformed(_))
                ),
                "{bad}"
            );
        }
    }
}
