//! Checked, resolved options: what the rest of the program uses. Built from `cli` types; every
//! problem found here is a usage error (exit 2) naming the option.

use crate::cli;
use crate::net::HttpConfig;
use crate::rs::w3c_datetime::Zone;
use std::path::PathBuf;
use std::time::Duration;

/// A usage error: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// How much to say.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub quiet: bool,
    pub verbose: u8,
    pub json: bool,
}

impl From<&cli::OutputArgs> for Output {
    fn from(o: &cli::OutputArgs) -> Output {
        Output {
            quiet: o.quiet,
            verbose: o.verbose,
            json: o.json,
        }
    }
}

/// Where documents come from and how.
#[derive(Debug, Clone)]
pub struct SourceSettings {
    pub source: String,
    pub allow_hosts: Vec<String>,
    pub zone: Zone,
    pub http: HttpConfig,
}

impl SourceSettings {
    pub fn new(source: &str, a: &cli::SourceArgs) -> Result<SourceSettings, UsageError> {
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
            maps.push((prefix.to_string(), dir));
        }
        for h in &a.allow_host {
            if h.is_empty() || h.contains('/') || h.contains(':') {
                return Err(UsageError(format!(
                    "--allow-host {h:?}: expected a host name such as data.example.org"
                )));
            }
        }
        Ok(SourceSettings {
            source: source.to_string(),
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
            http: HttpConfig {
                timeout: secs("timeout", a.timeout)?,
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
            },
        })
    }
}

/// `baseline`, checked.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub mirror: PathBuf,
    pub source: SourceSettings,
    pub capability_list: Option<String>,
    pub delete: bool,
    pub max_delete: Option<u64>,
    pub dry_run: bool,
    pub jobs: usize,
    pub output: Output,
}

impl Baseline {
    pub fn new(a: &cli::BaselineArgs) -> Result<Baseline, UsageError> {
        if a.jobs == 0 || a.jobs > 256 {
            return Err(UsageError(format!(
                "--jobs must be between 1 and 256, not {}",
                a.jobs
            )));
        }
        if a.max_delete.is_some() && !a.delete {
            return Err(UsageError(
                "--max-delete only makes sense with --delete".into(),
            ));
        }
        Ok(Baseline {
            mirror: a.mirror.mirror.clone(),
            source: SourceSettings::new(&a.source, &a.source_args)?,
            capability_list: a.capability_list.clone(),
            delete: a.delete,
            max_delete: a.max_delete,
            dry_run: a.dry_run,
            jobs: a.jobs,
            output: Output::from(&a.output),
        })
    }
}
