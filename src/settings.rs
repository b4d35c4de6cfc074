//! Checked, resolved options: what the rest of the program uses. `cli` fills them from what
//! the user typed and has them checked here; every problem found here is a usage error (exit 2)
//! naming the option. Nothing here knows the command line's types.

use crate::model::ReaderOptions;
use crate::net::HttpConfig;
use crate::rs::w3c_datetime::Zone;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::error::UsageError;

/// How much to say.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub quiet: bool,
    pub verbose: u8,
    pub json: bool,
}

/// Where documents come from and how.
#[derive(Debug, Clone)]
pub struct SourceSettings {
    pub source: String,
    /// `--oai-prefix`, `--oai-set`: what a reader is asked beyond the URL.
    pub reader: ReaderOptions,
    /// `--delay`: the least time between two requests to one host; None when not set (an
    /// ARC sitemap's crawl_rate may then set it).
    pub delay: Option<Duration>,
    pub allow_hosts: Vec<String>,
    pub zone: Zone,
    /// `--max-document-size`.
    pub max_document_bytes: u64,
    pub http: HttpConfig,
    /// What to do with the `--map` rules remembered with the mirror's sources.
    pub maps: MapChoice,
    /// `--include`/`--exclude`: the resources the mirror takes of this source (the rules given,
    /// or once [`SourceSettings::with_kept`], those the source keeps).
    pub filter: crate::model::Filter,
    /// Whether those were given, forgotten (`--no-filter`), or left to the remembered ones.
    pub filters: MapChoice,
    /// The options given (command line or environment) that a source keeps (`model::Kept`):
    /// what a writing run records ([`SourceSettings::record_kept`]); the filter aside.
    pub given: crate::model::Kept,
    /// Whether any `--header` was given (a value itself is never kept, but it still wins).
    pub headers_given: bool,
    /// `--jobs`, given or kept (`None`: the command's default).
    pub jobs: Option<usize>,
    /// What [`SourceSettings::with_kept`] took from the source's kept options (as options,
    /// for `-v`); empty when nothing.
    pub from_kept: String,
}

/// Rules given, forgotten (`--no-map`, `--no-filter`), or neither (the remembered rules
/// apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapChoice {
    Given,
    Forget,
    Remembered,
}

/// `--timeout` when neither given nor kept, in seconds.
pub const DEFAULT_TIMEOUT: f64 = 30.0;

/// `--jobs` of baseline and incremental when neither given nor kept.
pub const DEFAULT_JOBS: usize = 8;

/// The source options as given, before they are checked.
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    /// What the readers of OAI-PMH and IIIF sources are asked (`--oai-prefix`, `--oai-set`).
    pub reader: ReaderOptions,
    pub allow_host: Vec<String>,
    pub map: Vec<String>,
    pub no_map: bool,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    /// `--category VALUE`, as given.
    pub category: Vec<String>,
    pub no_filter: bool,
    pub assume_utc: bool,
    /// None: not given (kept, else 30 s).
    pub timeout: Option<f64>,
    /// `--jobs` of the commands that fetch (baseline, incremental); None: not given.
    pub jobs: Option<usize>,
    pub tries: u32,
    pub max_retry_after: f64,
    pub delay: Option<f64>,
    pub user_agent: Option<String>,
    pub headers: Vec<String>,
    pub max_document_size: u64,
    pub max_size: u64,
    pub min_rate: u64,
    pub max_time: Option<f64>,
    pub min_free: Option<u64>,
    pub ca_file: Option<PathBuf>,
    pub max_duration: Option<Duration>,
    /// `--bwlimit` in bytes a second (0: none).
    pub bwlimit: Option<u64>,
    /// `--streams`: requests in flight to an HTTP/2 source.
    pub streams: usize,
    /// `--http2-prior-knowledge`.
    pub http2_prior_knowledge: bool,
    /// `--metadata-only` (Some(true)), `--no-metadata-only` (Some(false)), or neither (kept,
    /// else off).
    pub metadata_only: Option<bool>,
}

/// `--category VALUE`s, trimmed; an empty one is an error.
fn categories(given: &[String]) -> Result<Vec<String>, UsageError> {
    given
        .iter()
        .map(|c| match c.trim() {
            "" => Err(UsageError(
                "--category '': a category is a value or a title (Frogs, http://…/Category:Frogs)"
                    .into(),
            )),
            c => Ok(c.to_string()),
        })
        .collect()
}

/// `--oai-prefix` and `--oai-set`, checked.
fn reader_options(o: &ReaderOptions) -> Result<ReaderOptions, UsageError> {
    if o.oai_prefix.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(UsageError(
            "--oai-prefix: a metadataPrefix is not empty".into(),
        ));
    }
    Ok(o.clone())
}

/// The most `--streams`: each in flight holds a staging file and a receive buffer.
const MAX_STREAMS: usize = 1000;

/// `--http2-prior-knowledge`, checked: refused where the linked libcurl does not speak it
/// soundly ([`crate::net::easy::h2c_works`]).
fn http2_prior_knowledge(given: bool) -> Result<bool, UsageError> {
    if given && !crate::net::easy::h2c_works() {
        return Err(UsageError(format!(
            "--http2-prior-knowledge: this build links libcurl {}, which fails every request \
             after the first on such a connection (fixed in libcurl 8.0): build with \
             --features curl-sys/static-curl, or leave the option out",
            curl::Version::get().version()
        )));
    }
    Ok(given)
}

/// `--streams N`, checked: 1 to [`MAX_STREAMS`].
fn streams(n: usize) -> Result<usize, UsageError> {
    match n {
        1..=MAX_STREAMS => Ok(n),
        _ => Err(UsageError(format!(
            "--streams {n}: give 1 to {MAX_STREAMS} (each stream in flight holds a file in \
             staging/ and a buffer of up to 128 KiB)"
        ))),
    }
}

impl SourceSettings {
    pub(crate) fn new(source: &str, a: &SourceOptions) -> Result<SourceSettings, UsageError> {
        let secs = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(UsageError(format!(
                    "--{name} must be a positive number of seconds, not {v}"
                )))
            }
        };
        if a.tries == 0 {
            return Err(UsageError("--tries must be at least 1".into()));
        }
        if a.max_document_size == 0 {
            return Err(UsageError(
                "--max-document-size must be at least 1 byte".into(),
            ));
        }
        let mut maps = Vec::new();
        for m in &a.map {
            let (prefix, dir) = m
                .split_once('=')
                .ok_or_else(|| UsageError(format!("--map {m:?}: expected URL_PREFIX=DIR")))?;
            let parsed = url::Url::parse(prefix)
                .map_err(|e| UsageError(format!("--map {m:?}: {prefix:?} is not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(UsageError(format!(
                    "--map {m:?}: only http and https prefixes can be mapped"
                )));
            }
            let dir = PathBuf::from(dir);
            if !dir.is_dir() {
                return Err(UsageError(format!(
                    "--map {m:?}: {} is not a folder",
                    dir.display()
                )));
            }
            // Absolute, as it is remembered with the source for runs from other folders.
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            maps.push((prefix.to_string(), dir));
        }
        for h in &a.allow_host {
            if h.is_empty() || h.contains('/') || h.contains(':') {
                return Err(UsageError(format!(
                    "--allow-host {h:?}: expected a host name such as data.example.org"
                )));
            }
        }
        let delay = match a.delay {
            None => None,
            Some(d) if d.is_finite() && d >= 0.0 => Some(Duration::from_secs_f64(d)),
            Some(d) => {
                return Err(UsageError(format!(
                    "--delay must be a non-negative number of seconds, not {d}"
                )))
            }
        };
        Ok(SourceSettings {
            source: source.to_string(),
            reader: reader_options(&a.reader)?,
            delay,
            allow_hosts: a
                .allow_host
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            zone: if a.assume_utc {
                Zone::AssumeUtc
            } else {
                Zone::Required
            },
            max_document_bytes: a.max_document_size,
            http: HttpConfig {
                timeout: secs("timeout", a.timeout.unwrap_or(DEFAULT_TIMEOUT))?,
                tries: a.tries,
                max_retry_after: secs("max-retry-after", a.max_retry_after)?,
                backoff: Duration::from_millis(500),
                user_agent: a.user_agent.clone().unwrap_or_else(|| {
                    format!(
                        "rsmirror/{} (ResourceSync Destination; +https://www.openarchives.org/rs/)",
                        env!("CARGO_PKG_VERSION")
                    )
                }),
                maps,
                max_redirects: 10,
                credentials: credentials(source, &a.headers)?,
                max_size: a.max_size,
                min_rate: a.min_rate,
                max_time: match a.max_time {
                    None => None,
                    Some(t) => Some(secs("max-time", t)?),
                },
                min_free: a.min_free,
                ca_file: match &a.ca_file {
                    None => None,
                    Some(f) => {
                        crate::net::agent::read_ca_file(f)
                            .map_err(|e| UsageError(format!("--ca-file {e}")))?;
                        Some(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
                    }
                },
                max_duration: a.max_duration,
                bwlimit: a.bwlimit.filter(|r| *r > 0),
                streams: streams(a.streams)?,
                http2_prior_knowledge: http2_prior_knowledge(a.http2_prior_knowledge)?,
                metadata_only: a.metadata_only.unwrap_or(false),
            },
            maps: if !a.map.is_empty() {
                MapChoice::Given
            } else if a.no_map {
                MapChoice::Forget
            } else {
                MapChoice::Remembered
            },
            filter: crate::model::Filter::new(crate::model::Rules {
                include: a.include.clone(),
                exclude: a.exclude.clone(),
                category: categories(&a.category)?,
            })
            .map_err(UsageError)?,
            filters: if !(a.include.is_empty() && a.exclude.is_empty() && a.category.is_empty()) {
                MapChoice::Given
            } else if a.no_filter {
                MapChoice::Forget
            } else {
                MapChoice::Remembered
            },
            given: crate::model::Kept {
                filter: Default::default(),
                delay: a.delay,
                timeout: a.timeout,
                jobs: a.jobs,
                allow_host: a
                    .allow_host
                    .iter()
                    .map(|h| h.to_ascii_lowercase())
                    .collect(),
                header: (a.headers.iter())
                    .filter(|h| crate::model::kept::keepable_header(h))
                    .cloned()
                    .collect(),
                metadata_only: a.metadata_only,
            },
            headers_given: !a.headers.is_empty(),
            jobs: a.jobs,
            from_kept: String::new(),
        })
    }
}

/// `--header` values (literal, `@FILE`, `$VAR`), else a `.netrc` entry for the source's host,
/// for the source's host only.
fn credentials(source: &str, headers: &[String]) -> Result<crate::net::Credentials, UsageError> {
    let host = url::Url::parse(source)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
    let Some(host) = host else {
        if !headers.is_empty() {
            return Err(UsageError(
                "--header needs SOURCE given as an http(s) URL: its host is the only one that \
                 receives the headers"
                    .into(),
            ));
        }
        return Ok(Default::default());
    };
    let mut out = crate::net::Credentials {
        hosts: vec![host.clone()],
        headers: Vec::new(),
    };
    for (k, h) in headers.iter().enumerate() {
        // The value is never shown (it may be a secret): which --header it is, instead.
        let which = match headers.len() {
            1 => String::new(),
            n => format!(" (--header {} of {n})", k + 1),
        };
        let bad = |why: &str| UsageError(format!("--header {:?}{which}: {why}", redact_header(h)));
        let (name, value) = h.split_once(':').ok_or_else(|| {
            bad(&format!(
                "expected NAME: VALUE, such as \"Authorization: Bearer TOKEN\"; these {} \
                 characters have no colon",
                h.chars().count()
            ))
        })?;
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(bad("the name is not a header name"));
        }
        let value = if let Some(file) = value.strip_prefix('@') {
            std::fs::read_to_string(file)
                .map_err(|e| bad(&format!("cannot read {file}: {e}")))?
                .trim()
                .to_string()
        } else if let Some(var) = value.strip_prefix('$') {
            std::env::var(var).map_err(|_| bad(&format!("${var} is not set")))?
        } else {
            value.to_string()
        };
        if value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(bad("the value holds a line break"));
        }
        out.headers.push((name.to_string(), value));
    }
    if out.headers.is_empty() {
        if let Some((login, password)) = netrc_entry(&host) {
            use base64::Engine as _;
            let basic =
                base64::engine::general_purpose::STANDARD.encode(format!("{login}:{password}"));
            out.headers
                .push(("Authorization".into(), format!("Basic {basic}")));
        }
    }
    Ok(out)
}

/// `NAME: ***` for messages and the run record: a header's value is never shown.
pub(crate) fn redact_header(h: &str) -> String {
    match h.split_once(':') {
        Some((name, _)) => format!("{}: ***", name.trim()),
        None => "***".into(),
    }
}

/// The `machine HOST login L password P` entry of `$NETRC` or `~/.netrc` (or `default`).
fn netrc_entry(host: &str) -> Option<(String, String)> {
    let path = std::env::var_os("NETRC")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".netrc")))?;
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace();
    let (mut matched, mut login, mut password) = (false, None, None);
    while let Some(w) = words.next() {
        match w {
            "machine" => {
                if matched && login.is_some() {
                    break;
                }
                matched = words.next().is_some_and(|m| m.eq_ignore_ascii_case(host));
                (login, password) = (None, None);
            }
            "default" => {
                if matched && login.is_some() {
                    break;
                }
                matched = true;
                (login, password) = (None, None);
            }
            "login" => login = words.next().map(str::to_string),
            "password" => password = words.next().map(str::to_string),
            _ => {}
        }
    }
    match (matched, login, password) {
        (true, Some(l), Some(p)) => Some((l, p)),
        _ => None,
    }
}

impl SourceSettings {
    /// These settings with the `--map` rules remembered with the mirror's sources, when the
    /// command line gave neither `--map` nor `--no-map`. A remembered folder that is gone is a
    /// usage error naming it (give `--map` again, or `--no-map`). Reads the catalog: a command
    /// that reads it itself gives the rules to [`SourceSettings::with_maps`].
    pub(crate) fn with_remembered_maps(
        &self,
        mirror: &Path,
    ) -> Result<SourceSettings, crate::error::Error> {
        if !self.takes_remembered_maps() {
            return Ok(self.clone());
        }
        self.with_maps(crate::store::history::remembered_maps(mirror)?)
    }

    /// Whether the command line left the `--map` rules to those the mirror remembers
    /// ([`SourceSettings::with_maps`]).
    pub(crate) fn takes_remembered_maps(&self) -> bool {
        self.maps == MapChoice::Remembered
    }

    /// These settings with `remembered`, the `--map` rules the mirror remembers, when the
    /// command line gave neither `--map` nor `--no-map`. A remembered folder that is gone is a
    /// usage error naming it (give `--map` again, or `--no-map`).
    pub(crate) fn with_maps(
        &self,
        remembered: Vec<(String, std::path::PathBuf)>,
    ) -> Result<SourceSettings, crate::error::Error> {
        let mut s = self.clone();
        if !self.takes_remembered_maps() {
            return Ok(s);
        }
        for (prefix, dir) in &remembered {
            if !dir.is_dir() {
                return Err(UsageError(format!(
                    "the mirror remembers --map {prefix}={} from its baseline, and that folder is \
                     gone: give --map again, or --no-map to read {prefix} from the network",
                    dir.display()
                ))
                .into());
            }
        }
        s.http.maps = remembered;
        Ok(s)
    }

    /// Remember (`--map`) or forget (`--no-map`) the rules with the source of a writing run.
    pub(crate) fn record_maps(
        &self,
        catalog: &crate::store::Catalog,
        source_id: i64,
    ) -> Result<(), crate::store::StoreError> {
        match self.maps {
            MapChoice::Given => catalog.remember_maps(source_id, Some(&self.http.maps)),
            MapChoice::Forget => catalog.remember_maps(source_id, None),
            MapChoice::Remembered => Ok(()),
        }
    }

    /// These settings with what the source at `source_url` keeps in the mirror's catalog
    /// (`model::Kept`) for each option neither the command line nor the environment gave:
    /// its filter (unless `--no-filter`), `--delay`, `--timeout`, `--jobs`, `--allow-host`
    /// and `--header` (its files and variables read now, for this source's host).
    pub(crate) fn with_kept(
        &self,
        mirror: &Path,
        source_url: &str,
    ) -> Result<SourceSettings, crate::error::Error> {
        let Some(kept) = crate::store::history::remembered_kept(mirror, source_url) else {
            return Ok(self.clone());
        };
        self.with(&kept, source_url)
    }

    /// These settings with `--jobs` given (`None`: not given) to a command that fetches.
    pub(crate) fn with_jobs(mut self, jobs: Option<usize>) -> SourceSettings {
        self.given.jobs = jobs;
        self.jobs = jobs;
        self
    }

    /// [`SourceSettings::with_kept`] of what the catalog says `source_url` keeps.
    pub(crate) fn with(
        &self,
        kept: &crate::model::Kept,
        source_url: &str,
    ) -> Result<SourceSettings, crate::error::Error> {
        let mut s = self.clone();
        let bad = |what: String| {
            UsageError(format!(
                "the mirror keeps {what} with {source_url}: give the option again to replace it"
            ))
        };
        if self.filters == MapChoice::Remembered {
            s.filter = crate::model::Filter::new(kept.filter.clone())
                .map_err(|e| bad(format!("a filter that is not one ({e})")))?;
        }
        let g = &self.given;
        let used = crate::model::Kept {
            filter: Default::default(),
            delay: kept.delay.filter(|_| g.delay.is_none()),
            timeout: kept.timeout.filter(|_| g.timeout.is_none()),
            jobs: kept.jobs.filter(|_| g.jobs.is_none()),
            allow_host: match g.allow_host.is_empty() {
                true => kept.allow_host.clone(),
                false => Vec::new(),
            },
            header: match self.headers_given {
                false => kept.header.clone(),
                true => Vec::new(),
            },
            metadata_only: kept.metadata_only.filter(|_| g.metadata_only.is_none()),
        };
        if let Some(d) = used.delay {
            s.delay =
                Some(Duration::try_from_secs_f64(d).map_err(|_| bad(format!("--delay {d}")))?);
        }
        if let Some(t) = used.timeout {
            s.http.timeout =
                Duration::try_from_secs_f64(t).map_err(|_| bad(format!("--timeout {t}")))?;
        }
        s.jobs = s.jobs.or(used.jobs);
        if let Some(m) = used.metadata_only {
            s.http.metadata_only = m;
        }
        if !used.allow_host.is_empty() {
            s.allow_hosts = used.allow_host.clone();
        }
        if !used.header.is_empty() {
            s.http.credentials = credentials(source_url, &used.header)
                .map_err(|e| bad(format!("--header ({})", e.0)))?;
        }
        s.from_kept = used.options();
        Ok(s)
    }

    /// Keep with the source of a writing run what it was given (each option given replaces
    /// the one kept), its filter given or forgotten (`--no-filter`).
    pub(crate) fn record_kept(
        &self,
        catalog: &crate::store::Catalog,
        (source_id, source_url): (i64, &str),
    ) -> Result<(), crate::store::StoreError> {
        let before = catalog.source_kept(source_url)?.unwrap_or_default();
        let mut now = before.updated_by(&self.given);
        now.filter = match self.filters {
            MapChoice::Given => self.filter.rules(),
            MapChoice::Forget => Default::default(),
            MapChoice::Remembered => before.filter,
        };
        catalog.remember_kept(source_id, &now)
    }

    /// How the readers read this source's documents.
    pub(crate) fn read_options(&self) -> crate::rs::sitemap::ReadOptions {
        crate::rs::sitemap::ReadOptions {
            zone: self.zone,
            max_bytes: self.max_document_bytes,
        }
    }

    /// The HTTP agent for a run, with the `--delay` per host when one was given.
    pub(crate) fn http(&self) -> crate::net::Http {
        self.http_with_delay(self.delay)
    }

    /// The HTTP agent with a given per-host delay (an ARC sitemap's crawl_rate applies when the
    /// user set no `--delay`).
    pub(crate) fn http_with_delay(&self, delay: Option<Duration>) -> crate::net::Http {
        let http = crate::net::Http::new(self.http.clone());
        match delay {
            Some(d) if !d.is_zero() => http.with_host_delay(d),
            _ => http,
        }
    }
}

/// `baseline`, checked.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub mirror: PathBuf,
    pub source: SourceSettings,
    pub capability_list: Option<String>,
    pub section: Option<String>,
    pub via: Via,
    pub delete: bool,
    pub max_delete: Option<u64>,
    /// `--force-delete`: no deletion guard.
    pub force_delete: bool,
    /// `--init-here`: a folder of other files may become a mirror.
    pub init_here: bool,
    /// `--objects s3://BUCKET/PREFIX`: a new mirror's objects go to a bucket.
    pub objects: Option<crate::store::bucket::BucketUrl>,
    pub dry_run: bool,
    pub jobs: usize,
    pub output: Output,
    /// Set by `incremental --on-gap rebaseline`: the gap this baseline crosses, recorded with
    /// its run.
    pub crossing_gap: Option<String>,
}

impl Baseline {
    /// The options as filled, checked together.
    pub(crate) fn checked(self) -> Result<Baseline, UsageError> {
        if self.max_delete.is_some() && !self.delete {
            return Err(UsageError(
                "--max-delete only makes sense with --delete".into(),
            ));
        }
        if self.force_delete && !self.delete {
            return Err(UsageError(
                "--force-delete only makes sense with --delete".into(),
            ));
        }
        jobs(self.jobs)?;
        Ok(self)
    }
}

/// `incremental`, checked. `source` is None when the mirror's remembered source is to be used.
#[derive(Debug, Clone)]
pub struct Incremental {
    pub mirror: PathBuf,
    pub source: SourceSettings,
    pub source_given: bool,
    pub from: Option<jiff::Timestamp>,
    pub dry_run: bool,
    pub jobs: usize,
    pub on_gap: OnGap,
    pub output: Output,
}

impl Incremental {
    /// The options as filled, checked together.
    pub(crate) fn checked(self) -> Result<Incremental, UsageError> {
        jobs(self.jobs)?;
        Ok(self)
    }
}

/// A time option (`--from`, `--since`): a W3C datetime with its zone.
pub(crate) fn time_option(
    name: &str,
    value: Option<&str>,
) -> Result<Option<jiff::Timestamp>, UsageError> {
    value
        .map(|v| {
            crate::rs::w3c_datetime::parse(v, Zone::Required)
                .map(|t| t.timestamp)
                .map_err(|e| UsageError(format!("--{name}: {e}")))
        })
        .transpose()
}

/// `audit`, checked.
#[derive(Debug, Clone)]
pub struct Audit {
    pub mirror: PathBuf,
    pub source: SourceSettings,
    pub source_given: bool,
    pub level: AuditLevel,
    /// (n, m): slice n of m, 1-based.
    pub sample: Option<(u64, u64)>,
    pub offline: bool,
    pub all_versions: bool,
    pub require_fixity: bool,
    /// `--refetch`: None when not asked.
    pub refetch: Option<Refetch>,
    pub report: Option<(PathBuf, ReportFormat)>,
    /// `--premis FILE`: this audit's fixity checks as PREMIS 3.0, one event per object.
    pub premis: Option<PathBuf>,
    pub jobs: usize,
    pub output: Output,
    /// Each source compared (its URL, as the mirror names it) with the resources the mirror
    /// takes of it (`--include`/`--exclude` given for the first, else those it remembers):
    /// resolved by the audit once it has the catalog; empty before.
    pub source_filters: Vec<(String, crate::model::Filter)>,
}

/// `audit --refetch[=all,bytes]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refetch {
    /// Every resource listed, not only those without a declared digest.
    pub all: bool,
    /// Full GETs, never a conditional one.
    pub bytes: bool,
}

impl Refetch {
    /// `--refetch[=MODES]`: `all`, `bytes`, or both.
    pub(crate) fn parse(v: &str) -> Result<Refetch, UsageError> {
        let mut r = Refetch::default();
        for word in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "all" => r.all = true,
                "bytes" => r.bytes = true,
                other => {
                    return Err(UsageError(format!(
                        "--refetch={v}: {other:?} is not a mode (all, bytes, or both: all,bytes)"
                    )))
                }
            }
        }
        Ok(r)
    }
}

/// `--sample N/M`: slice N of M, 1-based.
pub(crate) fn sample(value: Option<&str>) -> Result<Option<(u64, u64)>, UsageError> {
    let Some(v) = value else {
        return Ok(None);
    };
    let bad = || {
        UsageError(format!(
            "--sample {v:?}: expected N/M with 1 <= N <= M, such as 3/7"
        ))
    };
    let (n, m) = v.split_once('/').ok_or_else(bad)?;
    let (n, m): (u64, u64) = (
        n.trim().parse().map_err(|_| bad())?,
        m.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || m == 0 || n > m {
        return Err(bad());
    }
    Ok(Some((n, m)))
}

impl Audit {
    /// The options as filled, checked together.
    pub(crate) fn checked(self) -> Result<Audit, UsageError> {
        if self.refetch.is_some() && self.offline {
            return Err(UsageError(
                "--refetch asks the source, --offline forbids it: give one of them".into(),
            ));
        }
        if self.premis.is_some() && !self.level.hashes() {
            return Err(UsageError(format!(
                "--premis writes fixity checks: give --level sha256 or fixity (--level {} does not hash the objects)",
                self.level.name()
            )));
        }
        jobs(self.jobs)?;
        Ok(self)
    }

    /// `--jobs` of audit and repair when not given: four threads a core. They read the objects
    /// from disk, most of them small, so a thread mostly waits on the device: with more reads
    /// in flight, a local check of 1,000,000 objects of 256 bytes from a cold cache took 29 s
    /// instead of 51 s on two cores (benches/RESULTS.md), and hashing from a warm cache is no
    /// slower.
    pub(crate) fn default_jobs() -> usize {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        (cores * 4).clamp(4, 64)
    }
}

/// `feed`, checked.
#[derive(Debug, Clone)]
pub struct Feed {
    pub mirror: PathBuf,
    pub collection: Option<String>,
    /// `--since WHEN`: the runs after that point.
    pub since: Option<crate::access::When>,
    pub output: Option<PathBuf>,
    pub format: FeedFormat,
    /// `--output-dir DIR`: every feed, its archives, the index page and the OPML file.
    pub output_dir: Option<PathBuf>,
    /// Where DIR is published (required with it).
    pub base_url: Option<String>,
    pub hub: Option<String>,
    /// Entries in one archive document.
    pub per_archive: usize,
}

fn jobs(n: usize) -> Result<usize, UsageError> {
    if n == 0 || n > 256 {
        return Err(UsageError(format!(
            "--jobs must be between 1 and 256, not {n}"
        )));
    }
    Ok(n)
}

// The choices a user makes, in the library's own terms: `cli` derives its flags from them.

/// What `incremental` does at a gap in the change history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnGap {
    Stop,
    Rebaseline,
}

/// How deep an audit looks at each object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditLevel {
    /// The object file exists.
    Presence,
    /// ... and has the recorded length.
    Size,
    /// ... and every byte re-hashed with SHA-256 matches the object's name (which the catalog
    /// records): the bytes are the ones stored. The recorded md5 / sha-1 are not recomputed
    /// (md5 has no CPU instructions: this level needs about a quarter of fixity's CPU).
    Sha256,
    /// ... and hashes to every recorded digest (sha-256, md5, sha-1) and the source's declared
    /// ones.
    Fixity,
}

impl AuditLevel {
    /// True when the level reads and hashes the objects' bytes.
    pub(crate) fn hashes(self) -> bool {
        matches!(self, AuditLevel::Sha256 | AuditLevel::Fixity)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            AuditLevel::Presence => "presence",
            AuditLevel::Size => "size",
            AuditLevel::Sha256 => "sha256",
            AuditLevel::Fixity => "fixity",
        }
    }
}

/// Report file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Csv,
    /// One self-contained page to read or print (the default for a FILE ending `.html`).
    Html,
}

impl ReportFormat {
    /// `--format` as given, else html for a FILE ending `.html` or `.htm`, else text.
    pub(crate) fn for_file(given: Option<ReportFormat>, file: &std::path::Path) -> ReportFormat {
        let html = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
        match (given, html) {
            (Some(f), _) => f,
            (None, true) => ReportFormat::Html,
            (None, false) => ReportFormat::Text,
        }
    }
}

/// Where a baseline takes the bytes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    List,
    Dump,
    Auto,
}

/// Feed formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FeedFormat {
    /// Atom 1.0 (RFC 4287).
    Atom,
    /// JSON Feed 1.1.
    Json,
}

#[cfg(test)]
mod tests {
    /// Audit and repair read the objects with more threads than cores (reads of small objects
    /// wait on the disk): four a core, never fewer than four.
    #[test]
    fn audit_reads_with_four_threads_a_core() {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        assert_eq!(super::Audit::default_jobs(), (cores * 4).clamp(4, 64));
    }
}
