//! The scope of a source: which URLs a document may send us to.
//!
//! Every URL a document lists, and every redirect hop on the way to it, is checked here before
//! a byte is requested: a source is untrusted. A document may point at its own scheme
//! and host or a subdomain of it (the port is ignored), plus hosts the user widened the scope
//! with (`--allow-host`, each with its subdomains). Only `http` and `https` ever pass; an `http`
//! document may list `https` URLs (an upgrade) but an `https` document never `http` ones.
//! Parsing and resolving URLs is the `url` crate's job; fetching is `net::agent`'s.

use std::fmt;
use url::{Host, Url};

/// Where a document's URLs may lead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// `http` or `https`; `None` when the document itself is not on the web (a local file),
    /// in which case only the `--allow-host` hosts pass, over either scheme.
    scheme: Option<String>,
    /// The document's host; `None` as for `scheme`.
    host: Option<ScopeHost>,
    /// `--allow-host` entries, normalised; an entry that does not parse as a host is dropped.
    allow_hosts: Vec<ScopeHost>,
}

/// A host in a scope: a domain (matching itself and its subdomains) or an IP (itself only).
#[derive(Debug, Clone, PartialEq, Eq)]
enum ScopeHost {
    /// Lower-case, punycode, without a trailing dot.
    Domain(String),
    /// Only ever matches itself.
    Ip(Host<String>),
}

impl ScopeHost {
    fn from_url(url: &Url) -> Option<ScopeHost> {
        Some(match url.host()? {
            Host::Domain(d) => ScopeHost::Domain(normalise_domain(d)),
            Host::Ipv4(a) => ScopeHost::Ip(Host::Ipv4(a)),
            Host::Ipv6(a) => ScopeHost::Ip(Host::Ipv6(a)),
        })
    }

    /// An `--allow-host` value as users type it: `example.org`, `Example.ORG.`, `*.example.org`,
    /// `example.org:8080`, `https://example.org/`, `127.0.0.1`, `[::1]`.
    fn from_user(entry: &str) -> Option<ScopeHost> {
        let entry = entry.trim();
        if entry.contains("://") {
            return Url::parse(entry)
                .ok()
                .as_ref()
                .and_then(ScopeHost::from_url);
        }
        let entry = entry.strip_prefix("*.").unwrap_or(entry);
        let entry = entry.split('/').next().unwrap_or("");
        // Strip a port, but not the colons of a bracketed IPv6 address.
        let entry = match entry.rsplit_once(':') {
            Some((h, port))
                if port.bytes().all(|b| b.is_ascii_digit())
                    && (!h.contains(':') || h.ends_with(']')) =>
            {
                h
            }
            _ => entry,
        };
        if entry.is_empty() {
            return None;
        }
        // A bare IPv6 address without brackets.
        if entry.contains(':') && !entry.starts_with('[') {
            return entry.parse().ok().map(|a| ScopeHost::Ip(Host::Ipv6(a)));
        }
        Some(match Host::parse(entry).ok()? {
            Host::Domain(d) => ScopeHost::Domain(normalise_domain(&d)),
            ip => ScopeHost::Ip(ip),
        })
    }

    /// True when `host` is this host, or a subdomain of this domain.
    fn covers(&self, host: &ScopeHost) -> bool {
        match (self, host) {
            (ScopeHost::Domain(base), ScopeHost::Domain(h)) => {
                h == base
                    || (h.len() > base.len()
                        && h.ends_with(base.as_str())
                        && h.as_bytes()[h.len() - base.len() - 1] == b'.')
            }
            (ScopeHost::Ip(a), ScopeHost::Ip(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for ScopeHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeHost::Domain(d) => f.write_str(d),
            ScopeHost::Ip(h) => write!(f, "{h}"),
        }
    }
}

fn normalise_domain(d: &str) -> String {
    d.trim_end_matches('.').to_ascii_lowercase()
}

impl Scope {
    /// The scope of a document: its scheme and host (and subdomains), plus `--allow-host`s.
    pub fn for_document(doc: &Url, allow_hosts: &[String]) -> Scope {
        let web = matches!(doc.scheme(), "http" | "https");
        Scope {
            scheme: web.then(|| doc.scheme().to_string()),
            host: if web { ScopeHost::from_url(doc) } else { None },
            allow_hosts: allow_hosts
                .iter()
                .filter_map(|h| ScopeHost::from_user(h))
                .collect(),
        }
    }

    /// This scope, and also `doc`'s host: for a document that a document of this scope names
    /// (an SCP collection on a CDN host). The scheme rule stays: no http under https.
    pub(crate) fn and_host_of(&self, doc: &Url) -> Scope {
        let mut scope = self.clone();
        if matches!(doc.scheme(), "http" | "https") {
            scope.allow_hosts.extend(ScopeHost::from_url(doc));
        }
        scope
    }

    /// Ok when `url` may be fetched for a document of this scope; Err(reason) otherwise.
    pub(crate) fn check(&self, url: &Url) -> Result<(), String> {
        let scheme = url.scheme();
        if !matches!(scheme, "http" | "https") {
            return Err(format!(
                "scheme {scheme}: is not allowed (only http and https)"
            ));
        }
        // An https source never sends us to plain http, not even on an allowed host: that
        // would let anyone on the path substitute the bytes.
        if scheme == "http" && self.scheme.as_deref() == Some("https") {
            return Err(
                "scheme http: is not allowed for an https source (no downgrade from https to http)"
                    .to_string(),
            );
        }
        let Some(host) = ScopeHost::from_url(url) else {
            return Err("the URL has no host".to_string());
        };
        let in_scope = self
            .host
            .iter()
            .chain(&self.allow_hosts)
            .any(|s| s.covers(&host));
        if in_scope {
            Ok(())
        } else {
            Err(format!(
                "host {host} is outside the source's scope ({}); use --allow-host to widen it",
                self.describe()
            ))
        }
    }

    /// The hosts of this scope, for messages: `example.org, cdn.example.net`.
    pub(crate) fn describe(&self) -> String {
        let hosts: Vec<String> = self
            .host
            .iter()
            .chain(&self.allow_hosts)
            .map(|h| h.to_string())
            .collect();
        if hosts.is_empty() {
            "no hosts".to_string()
        } else {
            hosts.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(doc: &str, allow: &[&str]) -> Scope {
        let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
        Scope::for_document(&Url::parse(doc).unwrap(), &allow)
    }

    fn ok(s: &Scope, url: &str) -> bool {
        s.check(&Url::parse(url).unwrap()).is_ok()
    }

    #[test]
    fn a_named_document_adds_its_host_and_keeps_the_scheme_rule() {
        let site = scope("https://example.org/sitemap.xml", &[]);
        let cdn = Url::parse("https://r2.example.com/blog.scp").unwrap();
        assert!(!ok(&site, cdn.as_str()));
        let s = site.and_host_of(&cdn);
        assert!(ok(&s, "https://r2.example.com/blog.scp"));
        assert!(ok(&s, "https://example.org/blog/1"));
        assert!(!ok(&s, "http://r2.example.com/blog.scp"), "no downgrade");
        assert!(!ok(&s, "https://elsewhere.example.net/x"));
        assert_eq!(
            site.and_host_of(&Url::parse("file:///tmp/x").unwrap()),
            site
        );
    }

    #[test]
    fn same_host_and_subdomains_pass() {
        let s = scope("https://example.org/rs/capabilitylist.xml", &[]);
        assert!(ok(&s, "https://example.org/res/1"));
        assert!(ok(&s, "https://EXAMPLE.org/res/1"));
        assert!(ok(&s, "https://data.example.org/res/1"));
        assert!(ok(&s, "https://a.b.data.example.org/res/1"));
        assert!(ok(&s, "https://example.org./res/1"));
    }

    #[test]
    fn lookalike_and_parent_hosts_are_refused() {
        let s = scope("https://data.example.org/rl.xml", &[]);
        assert!(!ok(&s, "https://badexample.org/x"));
        assert!(
            !ok(&s, "https://example.org/x"),
            "a parent domain is not a subdomain"
        );
        assert!(!ok(&s, "https://otherdata.example.org/x"));
        assert!(!ok(&s, "https://data.example.org.evil.com/x"));
        assert!(!ok(&s, "https://example.org@evil.com/x"));
        let s = scope("https://example.org/rl.xml", &[]);
        assert!(!ok(&s, "https://badexample.org/x"));
    }

    #[test]
    fn host_match_ignores_port() {
        let s = scope("http://example.org:8080/rl.xml", &[]);
        assert!(ok(&s, "http://example.org/x"));
        assert!(ok(&s, "http://example.org:9999/x"));
    }

    #[test]
    fn refusal_reason_names_host_and_scope() {
        let s = scope("https://example.org/rl.xml", &[]);
        let reason = s
            .check(&Url::parse("https://evil.example.com/x").unwrap())
            .unwrap_err();
        assert_eq!(
            reason,
            "host evil.example.com is outside the source's scope (example.org); \
             use --allow-host to widen it"
        );
    }

    #[test]
    fn only_http_and_https() {
        let s = scope("https://example.org/rl.xml", &[]);
        for url in [
            "file:///etc/passwd",
            "ftp://example.org/x",
            "data:text/plain,hello",
            "gopher://example.org/x",
            "javascript:alert(1)",
        ] {
            let reason = s.check(&Url::parse(url).unwrap()).unwrap_err();
            let scheme = url.split(':').next().unwrap();
            assert_eq!(
                reason,
                format!("scheme {scheme}: is not allowed (only http and https)")
            );
        }
    }

    #[test]
    fn upgrade_is_allowed_downgrade_is_not() {
        let http = scope("http://example.org/rl.xml", &[]);
        assert!(ok(&http, "https://example.org/x"));
        assert!(ok(&http, "https://sub.example.org/x"));
        assert!(ok(&http, "http://example.org/x"));
        let https = scope("https://example.org/rl.xml", &[]);
        let reason = https
            .check(&Url::parse("http://example.org/x").unwrap())
            .unwrap_err();
        assert!(reason.contains("downgrade"), "{reason}");
        // Not even for an explicitly allowed host.
        let https = scope("https://example.org/rl.xml", &["cdn.example.net"]);
        assert!(!ok(&https, "http://cdn.example.net/x"));
        assert!(ok(&https, "https://cdn.example.net/x"));
    }

    #[test]
    fn ip_hosts_allow_only_themselves() {
        let s = scope("http://127.0.0.1:8000/rl.xml", &[]);
        assert!(ok(&s, "http://127.0.0.1:9000/x"));
        assert!(!ok(&s, "http://127.0.0.2/x"));
        assert!(!ok(&s, "http://localhost/x"));
        assert!(!ok(&s, "http://1.127.0.0.1.nip.io/x"));
        let s = scope("http://[::1]:8000/rl.xml", &[]);
        assert!(ok(&s, "http://[::1]/x"));
        assert!(!ok(&s, "http://[::2]/x"));
        // A domain scope never covers an IP and vice versa.
        let s = scope("http://example.org/rl.xml", &[]);
        assert!(!ok(&s, "http://93.184.216.34/x"));
    }

    #[test]
    fn allow_host_widens_with_subdomains() {
        let s = scope(
            "https://example.org/rl.xml",
            &[
                "cdn.example.net",
                " Mirror.Example.COM. ",
                "*.files.example.io",
                "https://static.example.biz/path",
                "10.0.0.1",
                "[::1]",
                "store.example.info:8443",
            ],
        );
        assert!(ok(&s, "https://cdn.example.net/x"));
        assert!(ok(&s, "https://eu.cdn.example.net/x"));
        assert!(!ok(&s, "https://example.net/x"));
        assert!(!ok(&s, "https://badcdn.example.net/x"));
        assert!(ok(&s, "https://mirror.example.com/x"));
        assert!(ok(&s, "https://files.example.io/x"));
        assert!(ok(&s, "https://a.files.example.io/x"));
        assert!(ok(&s, "https://static.example.biz/x"));
        assert!(ok(&s, "https://10.0.0.1/x"));
        assert!(!ok(&s, "https://10.0.0.2/x"));
        assert!(ok(&s, "https://[::1]/x"));
        assert!(ok(&s, "https://store.example.info/x"));
        assert!(!ok(&s, "https://evil.com/x"));
        let reason = s
            .check(&Url::parse("https://evil.com/x").unwrap())
            .unwrap_err();
        assert!(
            reason.contains("(example.org, cdn.example.net, mirror.example.com"),
            "{reason}"
        );
    }

    #[test]
    fn garbage_allow_hosts_are_dropped_not_wildcards() {
        let s = scope("https://example.org/rl.xml", &["", "   ", "*.", "/"]);
        assert!(!ok(&s, "https://evil.com/x"));
        assert!(ok(&s, "https://example.org/x"));
    }

    #[test]
    fn local_documents_only_reach_allowed_hosts() {
        let s = scope("file:///data/resourcelist.xml", &[]);
        assert!(!ok(&s, "https://example.org/x"));
        assert!(!ok(&s, "file:///etc/passwd"));
        let s = scope("file:///data/resourcelist.xml", &["example.org"]);
        assert!(ok(&s, "https://example.org/x"));
        assert!(ok(&s, "http://example.org/x"));
        assert!(!ok(&s, "file:///etc/passwd"));
    }

    #[test]
    fn internationalised_hosts_compare_in_punycode() {
        let s = scope("https://bücher.example/rl.xml", &[]);
        assert!(ok(&s, "https://xn--bcher-kva.example/x"));
        assert!(ok(&s, "https://www.bücher.example/x"));
        let s = scope("https://example.org/rl.xml", &["bücher.example"]);
        assert!(ok(&s, "https://xn--bcher-kva.example/x"));
    }
}
