//! Where a bucket is and who may write it, read the way the AWS command-line tools and SDKs read
//! it: environment variables first, then the shared files `~/.aws/credentials` and
//! `~/.aws/config` (or `AWS_SHARED_CREDENTIALS_FILE` / `AWS_CONFIG_FILE`) for the profile
//! `AWS_PROFILE` (else `default`). Nothing read here is recorded in the catalog or printed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The keys that sign requests (AWS Signature Version 4).
#[derive(Clone)]
pub(crate) struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Temporary credentials' token, sent as `x-amz-security-token`.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    // Never the secret, not even in a debug print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// Everything the client needs besides the bucket's name.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub credentials: Credentials,
    pub region: String,
    /// `scheme://host[:port]` of an S3-compatible server; `None` for AWS itself.
    pub endpoint: Option<String>,
    /// Path-style addressing (`ENDPOINT/BUCKET/KEY`) rather than virtual-host
    /// (`BUCKET.ENDPOINT/KEY`).
    pub path_style: bool,
    /// `AWS_CA_BUNDLE`: the authorities trusted for the bucket's server instead of the usual.
    pub ca_bundle: Option<PathBuf>,
}

/// Read the settings from `env` (a lookup of environment variables) and the shared files.
pub(crate) fn settings(env: &dyn Fn(&str) -> Option<String>) -> Result<Settings, String> {
    let profile = env("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let home = env("HOME").map(PathBuf::from);
    let file = |var: &str, name: &str| {
        env(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    let credentials_file = match file("AWS_SHARED_CREDENTIALS_FILE", "credentials") {
        Some(path) => read_ini(&path)?,
        None => HashMap::new(),
    };
    let config_file = match file("AWS_CONFIG_FILE", "config") {
        Some(path) => read_ini(&path)?,
        None => HashMap::new(),
    };
    let in_credentials = credentials_file.get(&profile);
    // `~/.aws/config` names profiles `[profile NAME]`, except `[default]`.
    let in_config = config_file.get(&format!("profile {profile}")).or_else(|| {
        (profile == "default")
            .then(|| config_file.get("default"))
            .flatten()
    });
    let from_files = |key: &str| {
        in_credentials
            .and_then(|s| s.get(key))
            .or_else(|| in_config.and_then(|s| s.get(key)))
            .cloned()
    };
    let credentials = match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => Credentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: env("AWS_SESSION_TOKEN"),
        },
        _ => match (
            from_files("aws_access_key_id"),
            from_files("aws_secret_access_key"),
        ) {
            (Some(id), Some(secret)) => Credentials {
                access_key_id: id,
                secret_access_key: secret,
                session_token: from_files("aws_session_token"),
            },
            _ => {
                return Err(format!(
                    "no credentials for the bucket: set AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY, or give the profile {profile:?} \
                     aws_access_key_id and aws_secret_access_key in ~/.aws/credentials \
                     (AWS_PROFILE names another profile)"
                ))
            }
        },
    };
    let region = env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .or_else(|| from_files("region"))
        .unwrap_or_else(|| "us-east-1".into());
    let endpoint = env("AWS_ENDPOINT_URL_S3")
        .or_else(|| env("AWS_ENDPOINT_URL"))
        .or_else(|| from_files("endpoint_url"))
        .map(|e| check_endpoint(&e))
        .transpose()?;
    let path_style = match env("RSMIRROR_S3_ADDRESSING_STYLE").as_deref() {
        Some("path") => true,
        Some("virtual") => false,
        Some(other) => {
            return Err(format!(
                "RSMIRROR_S3_ADDRESSING_STYLE={other:?}: expected \"path\" or \"virtual\""
            ))
        }
        // S3-compatible servers (SeaweedFS, MinIO, Ceph) answer path-style out of the box;
        // AWS wants virtual-host names.
        None => endpoint.is_some(),
    };
    Ok(Settings {
        credentials,
        region,
        endpoint,
        path_style,
        ca_bundle: env("AWS_CA_BUNDLE").map(PathBuf::from),
    })
}

/// `http://host[:port]` or `https://...`, without a path: what an S3 endpoint is.
fn check_endpoint(endpoint: &str) -> Result<String, String> {
    let url = url::Url::parse(endpoint)
        .map_err(|e| format!("the S3 endpoint {endpoint:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "the S3 endpoint {endpoint:?} is not an http:// or https:// URL of a server"
        ));
    }
    if url.path() != "/" || url.query().is_some() {
        return Err(format!(
            "the S3 endpoint {endpoint:?} has a path or query: give only scheme, host and port"
        ));
    }
    Ok(endpoint.trim_end_matches('/').to_string())
}

/// The sections of an INI file as the AWS tools write it (`[name]`, `key = value`, `#`/`;`
/// comments); a file that is not there has none. Nested settings (indented lines under a
/// `key =`) are skipped.
fn read_ini(path: &Path) -> Result<HashMap<String, HashMap<String, String>>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut sections: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            sections.entry(name.clone()).or_default();
            current = Some(name);
        } else if let (Some(section), Some((key, value))) = (&current, line.split_once('=')) {
            sections
                .get_mut(section)
                .expect("made when named")
                .insert(key.trim().to_string(), value.trim().to_string());
        }
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    #[test]
    fn environment_variables_come_first_and_an_endpoint_means_path_style() {
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AK"),
            ("AWS_SECRET_ACCESS_KEY", "SK"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:8333/"),
            ("HOME", "/nonexistent"),
        ]);
        let s = settings(&env).unwrap();
        assert_eq!(s.credentials.access_key_id, "AK");
        assert_eq!(s.region, "eu-west-1");
        assert_eq!(s.endpoint.as_deref(), Some("http://127.0.0.1:8333"));
        assert!(s.path_style);
        assert!(!format!("{:?}", s.credentials).contains("SK"));
    }

    #[test]
    fn a_profile_is_read_from_the_shared_files() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(
            &creds,
            "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n\
             # archive\n[archive]\naws_access_key_id=A\naws_secret_access_key = AS\n",
        )
        .unwrap();
        std::fs::write(
            &config,
            "[profile archive]\nregion = eu-central-1\nendpoint_url = https://s3.example.org\n\
             s3 =\n  addressing_style = path\n",
        )
        .unwrap();
        let env = env_of(&[
            ("AWS_PROFILE", "archive"),
            ("AWS_SHARED_CREDENTIALS_FILE", creds.to_str().unwrap()),
            ("AWS_CONFIG_FILE", config.to_str().unwrap()),
        ]);
        let s = settings(&env).unwrap();
        assert_eq!(s.credentials.access_key_id, "A");
        assert_eq!(s.credentials.secret_access_key, "AS");
        assert_eq!(s.region, "eu-central-1");
        assert_eq!(s.endpoint.as_deref(), Some("https://s3.example.org"));
    }

    #[test]
    fn missing_credentials_and_a_bad_endpoint_are_named() {
        let err = settings(&env_of(&[("HOME", "/nonexistent")])).unwrap_err();
        assert!(err.contains("AWS_ACCESS_KEY_ID"), "{err}");
        let err = settings(&env_of(&[
            ("AWS_ACCESS_KEY_ID", "AK"),
            ("AWS_SECRET_ACCESS_KEY", "SK"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:8333/bucket"),
            ("HOME", "/nonexistent"),
        ]))
        .unwrap_err();
        assert!(err.contains("has a path"), "{err}");
    }
}
