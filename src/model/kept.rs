//! What a source keeps of the options it was given (`sources.settings_json`): a mirror that
//! follows several sources runs each with its own politeness, timeout, credentials and scope,
//! and a cron line names none of them. One rule of precedence: the command line, then the
//! environment (`RSMIRROR_*`), then what the source keeps, then the default.
//!
//! `--map` is kept too, in a column of its own (`sources.maps_json`, older than this).

use crate::model::Rules;

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Kept {
    /// `--include`/`--exclude`.
    #[serde(flatten)]
    pub filter: Rules,
    /// `--delay` in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<f64>,
    /// `--timeout` in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// `--jobs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<usize>,
    /// `--allow-host`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_host: Vec<String>,
    /// `--header`, only as `NAME: @FILE` or `NAME: $VAR` (a value itself is a secret, never
    /// kept: the file or the variable is read again by each run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header: Vec<String>,
    /// `--metadata-only` (true) or `--no-metadata-only` (false): versions recorded without
    /// their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_only: Option<bool>,
}

impl Kept {
    pub(crate) fn is_empty(&self) -> bool {
        *self == Kept::default()
    }

    /// The options other than the filter, as a user would type them again.
    pub(crate) fn options(&self) -> String {
        self.option_pairs()
            .iter()
            .map(|(o, v)| match *o {
                "--header" => format!("{o} '{v}'"),
                _ if v.is_empty() => o.to_string(),
                _ => format!("{o} {v}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Everything kept, the filter included, as the arguments of a command that gives it again
    /// (`catalog rebuild` runs a baseline of each source with them).
    pub(crate) fn arguments(&self) -> Vec<String> {
        let filter = (self.filter.include.iter().map(|g| ("--include", g.clone())))
            .chain(self.filter.exclude.iter().map(|g| ("--exclude", g.clone())));
        filter
            .chain(self.option_pairs())
            .flat_map(|(o, v)| [o.to_string(), v])
            .filter(|a| !a.is_empty())
            .collect()
    }

    /// (option, value) for each option other than the filter.
    fn option_pairs(&self) -> Vec<(&'static str, String)> {
        let mut o = Vec::new();
        if let Some(d) = self.delay {
            o.push(("--delay", d.to_string()));
        }
        if let Some(t) = self.timeout {
            o.push(("--timeout", t.to_string()));
        }
        if let Some(j) = self.jobs {
            o.push(("--jobs", j.to_string()));
        }
        o.extend(self.allow_host.iter().map(|h| ("--allow-host", h.clone())));
        o.extend(self.header.iter().map(|h| ("--header", h.clone())));
        match self.metadata_only {
            Some(true) => o.push(("--metadata-only", String::new())),
            Some(false) => o.push(("--no-metadata-only", String::new())),
            None => {}
        }
        o
    }

    /// `self` with what `given` gives in place of what it keeps: each option given replaces
    /// the kept one (a repeatable one as a whole); the filter is left to the caller.
    pub(crate) fn updated_by(&self, given: &Kept) -> Kept {
        Kept {
            filter: self.filter.clone(),
            delay: given.delay.or(self.delay),
            timeout: given.timeout.or(self.timeout),
            jobs: given.jobs.or(self.jobs),
            allow_host: match given.allow_host.is_empty() {
                true => self.allow_host.clone(),
                false => given.allow_host.clone(),
            },
            header: match given.header.is_empty() {
                true => self.header.clone(),
                false => given.header.clone(),
            },
            metadata_only: given.metadata_only.or(self.metadata_only),
        }
    }
}

/// Whether a `--header` value may be kept: `NAME: @FILE` or `NAME: $VAR`, never a value itself.
pub(crate) fn keepable_header(h: &str) -> bool {
    h.split_once(':')
        .is_some_and(|(_, v)| v.trim().starts_with('@') || v.trim().starts_with('$'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_given_replaces_what_is_kept_option_by_option() {
        let kept = Kept {
            metadata_only: Some(true),
            delay: Some(1.0),
            timeout: Some(7.0),
            allow_host: vec!["a.example".into()],
            header: vec!["X-Token: $T".into()],
            ..Default::default()
        };
        let given = Kept {
            timeout: Some(9.0),
            jobs: Some(3),
            ..Default::default()
        };
        let now = kept.updated_by(&given);
        assert_eq!(
            (now.delay, now.timeout, now.jobs),
            (Some(1.0), Some(9.0), Some(3))
        );
        assert_eq!(now.allow_host, ["a.example"]);
        assert_eq!(
            now.options(),
            "--delay 1 --timeout 9 --jobs 3 --allow-host a.example --header 'X-Token: $T' \
             --metadata-only"
        );
        let off = now.updated_by(&Kept {
            metadata_only: Some(false),
            ..Default::default()
        });
        assert_eq!(off.metadata_only, Some(false));
        assert!(off
            .arguments()
            .ends_with(&["--no-metadata-only".to_string()]));
        let json = serde_json::to_string(&now).unwrap();
        assert_eq!(serde_json::from_str::<Kept>(&json).unwrap(), now);
        // Written before these options were kept: the filter alone.
        let old: Kept = serde_json::from_str(r#"{"exclude":["*.pdf"]}"#).unwrap();
        assert_eq!(old.filter.exclude, ["*.pdf"]);
        assert!(keepable_header("X-Token: @/etc/token") && keepable_header("A: $V"));
        assert!(!keepable_header("Authorization: Bearer abc"));
    }
}
