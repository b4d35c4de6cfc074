//! Naming delta feeds (ARC sitemap 2.1: "provide delta feeds (`/arc-sitemap-deltas/
//! YYYY-MM-DD.json`) containing only changed pages since a given timestamp"): the conventional
//! URL of a day's feed at a site root, and the day a feed URL is for.

use jiff::civil::Date;
use url::Url;

/// The folder ARC sitemap 2.1 names, at the site root.
pub const DELTA_PATH: &str = "/arc-sitemap-deltas/";

/// `ROOT/arc-sitemap-deltas/YYYY-MM-DD.json` (an absolute path: the site root whatever the
/// path of `base`).
pub(crate) fn conventional_url(base: &Url, day: Date) -> Url {
    base.join(&format!("{DELTA_PATH}{day}.json"))
        .expect("an absolute path joins onto an http(s) or file URL")
}

/// The day a feed URL is for: its last path segment `YYYY-MM-DD.json` (or `.json.gz`).
pub(crate) fn day_of(url: &Url) -> Option<Date> {
    let name = url.path_segments()?.next_back()?;
    let stem = name
        .strip_suffix(".json.gz")
        .or_else(|| name.strip_suffix(".json"))?;
    if stem.len() != 10 {
        return None;
    }
    stem.parse().ok()
}

/// Every day from `first` to `last`, both included (none when `first > last`).
pub(crate) fn days(first: Date, last: Date) -> impl Iterator<Item = Date> {
    std::iter::successors(Some(first), |d| d.tomorrow().ok()).take_while(move |d| *d <= last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn conventional_urls_are_at_the_site_root() {
        let base = Url::parse("https://example.com/maps/arc-sitemap.json").unwrap();
        assert_eq!(
            conventional_url(&base, date(2025, 11, 9)).as_str(),
            "https://example.com/arc-sitemap-deltas/2025-11-09.json"
        );
    }

    #[test]
    fn the_day_of_a_feed_comes_from_its_name() {
        let day = |u: &str| day_of(&Url::parse(u).unwrap());
        assert_eq!(
            day("https://e.com/arc-sitemap-deltas/2025-11-09.json"),
            Some(date(2025, 11, 9))
        );
        assert_eq!(
            day("https://e.com/d/2025-11-09.json.gz"),
            Some(date(2025, 11, 9))
        );
        assert_eq!(day("https://e.com/d/2025-13-09.json"), None);
        assert_eq!(day("https://e.com/d/latest.json"), None);
        assert_eq!(day("https://e.com/d/20251109.json"), None);
    }

    #[test]
    fn days_are_inclusive() {
        let all: Vec<Date> = days(date(2025, 12, 30), date(2026, 1, 2)).collect();
        assert_eq!(all.len(), 4);
        assert_eq!(all[3], date(2026, 1, 2));
        assert_eq!(days(date(2026, 1, 2), date(2026, 1, 1)).count(), 0);
    }
}
