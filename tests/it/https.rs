//! Sources over https (issue 27): documents (ureq) and resources (libcurl) both through TLS,
//! against a real TLS server (Python's http.server in an `ssl` context, with the self-signed
//! certificate in testdata/tls/) trusted with `--ca-file`. A build whose libcurl cannot speak
//! https (curl-sys's own build without "ssl") failed every resource here with "unknown option".

use crate::support::*;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn tls_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/tls")
}

/// The https server of `root`, stopped when dropped.
struct TlsServer {
    child: Child,
    port: u16,
}

impl TlsServer {
    fn start(root: &Path) -> TlsServer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/tls_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(root)
            .arg(tls_dir().join("cert.pem"))
            .arg(tls_dir().join("key.pem"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 (the https test server) must be installed");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("the https test server did not start: {line:?}")
        });
        TlsServer { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_https_source_is_mirrored_through_tls_with_its_ca_file() {
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), 60, 3000);
    let srv = TlsServer::start(src.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let ca = tls_dir().join("cert.pem");
    let list = srv.url("/resourcelist.xml");
    let args = [
        "baseline",
        &list,
        "--ca-file",
        ca.to_str().unwrap(),
        "-j",
        "2",
        "--json",
    ];
    let (out, err) = ok_on_mirror(&mirror, &args);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["created"], 60, "{out}{err}");
    let held = current(&mirror);
    assert_eq!(held.len(), 60);
    for (url, sha) in &held {
        assert!(url.starts_with(&srv.url("/res/")), "{url}");
        let name = url.rsplit('/').next().unwrap();
        let bytes = std::fs::read(src.path().join("res").join(name)).unwrap();
        use sha2::Digest as _;
        assert_eq!(sha, &hex::encode(sha2::Sha256::digest(&bytes)), "{url}");
    }
    ok_on_mirror(&mirror, &["audit", "--offline", "-q"]);
    // Again: conditional GETs through TLS, nothing new.
    let (out, err) = ok_on_mirror(&mirror, &args);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["unchanged"], 60, "{out}{err}");
    // A resource changed at the source comes over TLS too.
    std::fs::write(src.path().join("res/000007"), b"changed over tls").unwrap();
    let rl = std::fs::read_to_string(src.path().join("resourcelist.xml")).unwrap();
    let line = rl.lines().find(|l| l.contains("/res/000007<")).unwrap();
    let fresh = "<url><loc>http://sample.example.org/res/000007</loc></url>";
    std::fs::write(src.path().join("resourcelist.xml"), rl.replace(line, fresh)).unwrap();
    let (out, err) = ok_on_mirror(&mirror, &args);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&summary["updated"], &summary["unchanged"]),
        (&1.into(), &59.into()),
        "{out}{err}"
    );
    assert_consistent(&mirror);
}

#[test]
fn an_https_source_signed_by_an_unknown_ca_is_refused_by_name() {
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), 3, 100);
    let srv = TlsServer::start(src.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), &dir.path().join("m"))
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains(&srv.url("/resourcelist.xml")), "{err}");
    assert!(err.to_lowercase().contains("certificate"), "{err}");
}
