//! Sources over https: documents and resources both through TLS on libcurl, against a real TLS
//! server (Python's http.server in an `ssl` context, with the self-signed certificate in
//! testdata/tls/, or certificates made by the `openssl` command for the test) trusted with
//! `--ca-file`, which documents and resources share. A build whose libcurl cannot speak https
//! (curl-sys's own build without "ssl") failed every resource here with "unknown option".

use crate::support::*;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

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
        TlsServer::start_with(
            root,
            &tls_dir().join("cert.pem"),
            &tls_dir().join("key.pem"),
        )
    }

    /// Serve `root` with this certificate (chain) and key.
    fn start_with(root: &Path, cert: &Path, key: &Path) -> TlsServer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/tls_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(root)
            .arg(cert)
            .arg(key)
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

/// Run `openssl ARGS` in `dir`; false when there is no `openssl` command (a test then skips,
/// loudly; under CI it must be there).
fn openssl(dir: &Path, args: &[&str]) -> bool {
    match Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) => {
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            true
        }
        // Its tests are ignored where the build found no openssl command (`build.rs`).
        Err(e) => panic!("the openssl command is missing: {e}"),
    }
}

/// A private certificate authority `NAME-ca.pem` (key `NAME-ca.key`) and a server
/// certificate it signed for 127.0.0.1, `NAME-server.pem` (key `NAME-server.key`), in `dir`.
fn private_ca(dir: &Path, name: &str) -> bool {
    let ca = format!("{name}-ca");
    let server = format!("{name}-server");
    let ext = dir.join(format!("{name}.ext"));
    std::fs::write(
        &ext,
        "basicConstraints = critical, CA:FALSE\n\
         keyUsage = critical, digitalSignature\n\
         extendedKeyUsage = serverAuth\n\
         subjectAltName = IP:127.0.0.1\n",
    )
    .unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let subject = format!("/CN=rsmirror test CA {name}");
    let (ca_key, ca_pem) = (format!("{ca}.key"), format!("{ca}.pem"));
    let mut args = vec!["req", "-x509"];
    args.extend(ec);
    args.extend([
        "-keyout", &ca_key, "-out", &ca_pem, "-days", "2", "-subj", &subject,
    ]);
    args.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
    args.extend(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
    if !openssl(dir, &args) {
        return false;
    }
    let (key, csr, pem) = (
        format!("{server}.key"),
        format!("{server}.csr"),
        format!("{server}.pem"),
    );
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend(["-keyout", &key, "-out", &csr, "-subj", "/CN=127.0.0.1"]);
    openssl(dir, &args);
    let ext = ext.to_str().unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_pem,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            ext,
        ],
    )
}

/// `rsmirror baseline` with no trust settings from the test's environment, and `vars`.
fn baseline_tls(source: &str, mirror: &Path, args: &[&str], vars: &[(&str, &Path)]) -> Output {
    let mut cmd = baseline(source, mirror);
    for var in ["SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE"] {
        cmd.env_remove(var);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.args(args).output().unwrap()
}

/// Whether the mirror holds every resource of `src` (a `generate_source` tree) byte for byte.
fn holds_all(mirror: &Path, src: &Path, srv: &TlsServer, n: usize) {
    let held = current(mirror);
    assert_eq!(held.len(), n, "{held:?}");
    for (url, sha) in &held {
        assert!(url.starts_with(&srv.url("/res/")), "{url}");
        let name = url.rsplit('/').next().unwrap();
        let bytes = std::fs::read(src.join("res").join(name)).unwrap();
        use sha2::Digest as _;
        assert_eq!(sha, &hex::encode(sha2::Sha256::digest(&bytes)), "{url}");
    }
}

#[test]
#[cfg_attr(
    missing = "openssl",
    ignore = "the openssl command is not installed: apt-get install openssl"
)]
fn a_private_ca_given_as_ca_file_is_trusted_for_documents_and_resources() {
    let certs = tempfile::tempdir().unwrap();
    if !private_ca(certs.path(), "a") {
        return;
    }
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), 12, 500);
    let srv = TlsServer::start_with(
        src.path(),
        &certs.path().join("a-server.pem"),
        &certs.path().join("a-server.key"),
    );
    let list = srv.url("/resourcelist.xml");
    let ca = certs.path().join("a-ca.pem");
    let dir = tempfile::tempdir().unwrap();

    // Without --ca-file: the usual authorities do not know this one.
    let out = baseline_tls(&list, &dir.path().join("m0"), &[], &[]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains(&list), "{err}");
    assert!(err.contains("certificate"), "{err}");

    // With it: the Resource List and every resource.
    let mirror = dir.path().join("m1");
    let out = baseline_tls(&list, &mirror, &["--ca-file", ca.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    holds_all(&mirror, src.path(), &srv, 12);
}

#[test]
#[cfg_attr(
    missing = "openssl",
    ignore = "the openssl command is not installed: apt-get install openssl"
)]
fn ca_file_replaces_the_usual_authorities_for_documents_and_resources() {
    let certs = tempfile::tempdir().unwrap();
    if !(private_ca(certs.path(), "usual") && private_ca(certs.path(), "other")) {
        return;
    }
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), 4, 100);
    let srv = TlsServer::start_with(
        src.path(),
        &certs.path().join("usual-server.pem"),
        &certs.path().join("usual-server.key"),
    );
    let list = srv.url("/resourcelist.xml");
    // The "usual" authorities: a folder of hashed certificates, as /etc/ssl/certs is, named
    // by SSL_CERT_DIR (which libcurl's OpenSSL set-up honours).
    let usual = certs.path().join("usual-dir");
    std::fs::create_dir(&usual).unwrap();
    std::fs::copy(
        certs.path().join("usual-ca.pem"),
        usual.join("usual-ca.pem"),
    )
    .unwrap();
    if !openssl(certs.path(), &["rehash", usual.to_str().unwrap()]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trusted_as_usual = baseline_tls(
        &list,
        &dir.path().join("m0"),
        &[],
        &[("SSL_CERT_DIR", &usual)],
    );
    assert_eq!(
        trusted_as_usual.status.code(),
        Some(0),
        "{}",
        stderr_of(&trusted_as_usual)
    );
    holds_all(&dir.path().join("m0"), src.path(), &srv, 4);
    // With --ca-file naming another authority, the usual ones are not trusted beside it.
    let other = certs.path().join("other-ca.pem");
    let out = baseline_tls(
        &list,
        &dir.path().join("m1"),
        &["--ca-file", other.to_str().unwrap()],
        &[("SSL_CERT_DIR", &usual)],
    );
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains(&list) && err.contains("certificate"), "{err}");
}

/// A self-signed CA certificate that the server uses as its own, given as `--ca-file`: both
/// documents and resources accept it. OpenSSL (under libcurl, for both) takes a certificate in
/// the trust store as a trust anchor whatever its CA flag (RFC 5280 §6.1: trust anchors are
/// input to path validation, not checked by it), and the certificate names 127.0.0.1. Before
/// documents moved to libcurl, rustls refused it for them ("CaUsedAsEndEntity") while libcurl
/// took it for the resources.
#[test]
#[cfg_attr(
    missing = "openssl",
    ignore = "the openssl command is not installed: apt-get install openssl"
)]
fn a_self_signed_ca_certificate_as_the_servers_own_is_trusted_alike() {
    let certs = tempfile::tempdir().unwrap();
    let mut args = vec!["req", "-x509"];
    args.extend([
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ]);
    args.extend(["-keyout", "self.key", "-out", "self.pem", "-days", "2"]);
    args.extend(["-subj", "/CN=127.0.0.1"]);
    args.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
    args.extend(["-addext", "subjectAltName=IP:127.0.0.1"]);
    if !openssl(certs.path(), &args) {
        return;
    }
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), 6, 300);
    let cert = certs.path().join("self.pem");
    let srv = TlsServer::start_with(src.path(), &cert, &certs.path().join("self.key"));
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let list = srv.url("/resourcelist.xml");
    let out = baseline_tls(&list, &mirror, &["--ca-file", cert.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    holds_all(&mirror, src.path(), &srv, 6);
}

/// nginx over TLS with HTTP/2 offered by ALPN, in front of a server of `root` that answers
/// each resource after a pause (`/res/` is proxied to it; nginx's `limit_rate` does not slow
/// HTTP/2 responses), logging each request's connection, protocol, end time and duration, so
/// that requests under way at once on a connection show. Stopped when dropped. None (said)
/// when nginx is not installed, outside CI.
struct Nginx {
    /// nginx, and the slow server behind it.
    _children: Children,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

/// The slow server behind nginx: `root` over plain HTTP/1.1, each GET answered after
/// `PAUSE` seconds, one thread a request; prints its port.
const SLOW_SERVER: &str = "
import functools, http.server, sys, time
class Slow(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        time.sleep(float(sys.argv[2]))
        super().do_GET()
    def log_message(self, *a):
        pass
class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 256
s = Server(('127.0.0.1', 0), functools.partial(Slow, directory=sys.argv[1]))
print(s.server_address[1], flush=True)
s.serve_forever()
";

impl Nginx {
    /// nginx over TLS with HTTP/2 offered by ALPN (`tls`: certificate and key), or, without,
    /// HTTP/2 in cleartext only (h2c: a client must know beforehand).
    /// `far`: documents too are answered after the pause (a source that shows a round trip),
    /// not only the resources.
    fn start(root: &Path, tls: Option<(&Path, &Path)>, pause: &str, far: bool) -> Option<Nginx> {
        // Its tests are ignored where the build found no nginx (`build.rs`).
        if let Err(e) = Command::new("nginx").arg("-v").output() {
            panic!("nginx is missing ({e}): apt-get install nginx");
        }
        let mut children = Children(Vec::new());
        children.0.push(
            Command::new("python3")
                .args(["-c", SLOW_SERVER])
                .arg(root)
                .arg(pause)
                .stdout(Stdio::piped())
                .spawn()
                .expect("python3"),
        );
        let mut line = String::new();
        std::io::BufReader::new(children.0[0].stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let slow_port: u16 = line.trim().parse().expect("the slow server's port");
        let dir = tempfile::tempdir().unwrap();
        // nginx's workers read the files as another user.
        use std::os::unix::fs::PermissionsExt as _;
        for d in [dir.path(), root] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = dir.path().display();
        let log = dir.path().join("access.log");
        let conf = format!(
            "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n\
               log_format streams '$connection $server_protocol $msec $request_time $uri';\n\
               access_log {log};\n\
               client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;\n\
               uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;\n\
               server {{\n\
                 {listen}\n\
                 root {root};\n\
                 location {slowed} {{ proxy_pass http://127.0.0.1:{slow_port}; }}\n\
               }}\n\
             }}\n",
            log = format_args!("{} streams", log.display()),
            listen = match tls {
                Some((cert, key)) => format!(
                    "listen 127.0.0.1:{port} ssl http2; ssl_certificate {}; ssl_certificate_key {};",
                    cert.display(),
                    key.display()
                ),
                None => format!("listen 127.0.0.1:{port} http2;"),
            },
            root = root.display(),
            slowed = if far { "/" } else { "/res/" },
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        children.0.push(
            Command::new("nginx")
                .arg("-c")
                .arg(&path)
                .arg("-p")
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(Nginx {
                    _children: children,
                    port,
                    log,
                    _dir: dir,
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!(
            "nginx did not start: {}",
            std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
        );
    }

    /// Every request logged: (connection, path).
    fn all_requests(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[0].to_string(), f[4].to_string())
            })
            .collect()
    }

    /// The requests for resources logged: (connection, protocol, start, end) in seconds.
    fn resource_requests(&self) -> Vec<(String, String, f64, f64)> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .filter(|l| l.contains(" /res/"))
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                let end: f64 = f[2].parse().unwrap();
                let took: f64 = f[3].parse().unwrap();
                (f[0].to_string(), f[1].to_string(), end - took, end)
            })
            .collect()
    }
}

/// Processes stopped (and waited for) when dropped: asked with SIGTERM first, so that nginx's
/// master stops its workers (killed outright, it leaves them running, orphaned, one more with
/// every test), killed if still there after two seconds.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        }
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        for child in &mut self.0 {
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An HTTP/2 source over TLS: `n` resources of 2 KB served by nginx (each answered after
/// `pause` seconds), its certificate signed by a private CA. (certs, source files, server,
/// Resource List URL, the CA's file); None (said) where openssl or nginx is missing.
fn h2_source(
    name: &str,
    n: usize,
    pause: &str,
) -> Option<(tempfile::TempDir, tempfile::TempDir, Nginx, String, PathBuf)> {
    h2_source_at(name, n, pause, false)
}

/// [`h2_source`], its documents answered after the pause too when `far`.
fn h2_source_at(
    name: &str,
    n: usize,
    pause: &str,
    far: bool,
) -> Option<(tempfile::TempDir, tempfile::TempDir, Nginx, String, PathBuf)> {
    let certs = tempfile::tempdir().unwrap();
    if !private_ca(certs.path(), name) {
        return None;
    }
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), n, 2_000);
    let (cert, key) = (
        certs.path().join(format!("{name}-server.pem")),
        certs.path().join(format!("{name}-server.key")),
    );
    let srv = Nginx::start(src.path(), Some((&cert, &key)), pause, far)?;
    let base = format!("https://127.0.0.1:{}/", srv.port);
    let list = src.path().join("resourcelist.xml");
    let xml = std::fs::read_to_string(&list).unwrap();
    std::fs::write(&list, xml.replace("http://sample.example.org/", &base)).unwrap();
    let ca = certs.path().join(format!("{name}-ca.pem"));
    Some((certs, src, srv, format!("{base}resourcelist.xml"), ca))
}

/// The most requests of `requests` under way at one time on one connection.
fn most_at_once(requests: &[(String, String, f64, f64)]) -> usize {
    let mut most = 0;
    for (conn, _, start, _) in requests {
        let at = *start + 0.001;
        let n = requests
            .iter()
            .filter(|(c, _, s, e)| c == conn && *s <= at && at < *e)
            .count();
        most = most.max(n);
    }
    most
}

/// A source that speaks HTTP/2 (over TLS, offered by ALPN; a private CA given with
/// `--ca-file`) is fetched as streams: its resources come over HTTP/2 on at most `--jobs`
/// connections, many at once on one (more than `--jobs`), every one verified; `--streams 1`
/// holds the requests in flight to one per connection.
#[test]
#[cfg_attr(
    any(missing = "openssl", missing = "nginx"),
    ignore = "nginx or the openssl command is not installed: apt-get install nginx openssl (bash .ci/run does)"
)]
fn an_http2_source_is_fetched_as_streams_of_few_connections() {
    // 60 resources of 2 KB, each answered after a fifth of a second.
    let Some((_certs, src, srv, source, ca)) = h2_source("h2", 60, "0.2") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let ca_arg = ["--ca-file", ca.to_str().unwrap(), "-j", "2"];
    // (With `-j 2`, one request per thread until the protocol is known.)
    let out = baseline_tls(&source, &mirror, &ca_arg, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let held = current(&mirror);
    assert_eq!(held.len(), 60);
    for (url, sha) in &held {
        let name = url.rsplit('/').next().unwrap();
        let bytes = std::fs::read(src.path().join("res").join(name)).unwrap();
        use sha2::Digest as _;
        assert_eq!(sha, &hex::encode(sha2::Sha256::digest(&bytes)), "{url}");
    }
    let requests = srv.resource_requests();
    assert_eq!(requests.len(), 60);
    assert!(requests.iter().all(|r| r.1 == "HTTP/2.0"), "{requests:?}");
    let connections: std::collections::HashSet<&str> =
        requests.iter().map(|r| r.0.as_str()).collect();
    assert!(connections.len() <= 2, "{} connections", connections.len());
    let most = most_at_once(&requests);
    assert!(
        most > 2,
        "at most {most} requests at once on a connection (--jobs 2)"
    );

    // --streams 1: one request in flight per thread, whatever HTTP/2 allows, and fewer than
    // --jobs (4 a thread, had the source spoken HTTP/1.1).
    let mirror = dir.path().join("m1");
    let args = [
        "--ca-file",
        ca.to_str().unwrap(),
        "-j",
        "8",
        "--streams",
        "1",
        "--include",
        "/res/0000[0-2]*",
    ];
    let before = srv.resource_requests().len();
    let out = baseline_tls(&source, &mirror, &args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(&mirror).len(), 30);
    let requests = srv.resource_requests()[before..].to_vec();
    assert_eq!(requests.len(), 30);
    // The first requests, before the protocol is known, may be under way together.
    let later: Vec<_> = requests[requests.len() / 2..].to_vec();
    assert!(most_at_once(&later) <= 1, "{requests:?}");
}

/// Politeness over HTTP/2: `--delay` spaces the requests to the host whatever the streams
/// allow (100 here, with `-j 4`): every resource request starts at least the delay after the
/// one before (as the server saw them: `assert_paced`).
#[test]
#[cfg_attr(
    any(missing = "openssl", missing = "nginx"),
    ignore = "nginx or the openssl command is not installed: apt-get install nginx openssl (bash .ci/run does)"
)]
fn delay_spaces_the_requests_over_http2_too() {
    let Some((_certs, _src, srv, source, ca)) = h2_source("delay", 8, "0") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--ca-file",
        ca.to_str().unwrap(),
        "-j",
        "4",
        "--delay",
        "0.3",
    ];
    let out = baseline_tls(&source, dir.path(), &args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(dir.path()).len(), 8);
    let requests = srv.resource_requests();
    assert!(requests.iter().all(|r| r.1 == "HTTP/2.0"), "{requests:?}");
    let starts: Vec<f64> = requests.iter().map(|r| r.2).collect();
    assert_eq!(starts.len(), 8, "{requests:?}");
    assert_paced(&starts, 0.3);
}

/// Documents and resources on the same connections: a source that is not near (its list
/// answered after 50 ms, as across a link), its Resource List's connection, kept, carries every
/// resource after it as a stream (`net::pool`), on one transfer thread whatever `--jobs` says
/// (a second thread would open a second connection), so it sees one connection in all; and a
/// second run's list and resources go out on one connection too.
#[test]
#[cfg_attr(
    any(missing = "openssl", missing = "nginx"),
    ignore = "nginx or the openssl command is not installed: apt-get install nginx openssl (bash .ci/run does)"
)]
fn documents_and_resources_share_one_http2_connection() {
    // More resources than one thread of two takes at once (`--streams` 100 shared by them).
    let Some((_certs, _src, srv, source, ca)) = h2_source_at("one", 150, "0.05", true) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (mirror, jobs) in [("m1", "1"), ("m2", "8")] {
        let args = ["--ca-file", ca.to_str().unwrap(), "-j", jobs];
        let before = srv.all_requests().len();
        let out = baseline_tls(&source, &dir.path().join(mirror), &args, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        assert_eq!(current(&dir.path().join(mirror)).len(), 150);
        let requests = srv.all_requests()[before..].to_vec();
        assert_eq!(requests.len(), 151, "{requests:?}");
        assert_eq!(requests[0].1, "/resourcelist.xml", "{requests:?}");
        let connections: std::collections::HashSet<&str> =
            requests.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(connections.len(), 1, "{requests:?}");
    }
}

/// A cleartext source that speaks only HTTP/2 (nginx `listen ... http2` without TLS: h2c with
/// prior knowledge) is refused as not HTTP/1.1 without `--http2-prior-knowledge`, and with it
/// fetched over HTTP/2 as streams of few connections, documents and resources alike.
#[test]
#[cfg_attr(
    missing = "nginx",
    ignore = "nginx is not installed: apt-get install nginx (bash .ci/run does)"
)]
fn a_cleartext_http2_source_is_fetched_with_prior_knowledge() {
    let src = tempfile::tempdir().unwrap();
    // Enough streams at once that a request often goes out while other streams' frames wait
    // on the connection (which an HTTP/1.1 connection must never have: see net::sockets).
    generate_source(src.path(), 300, 2_000);
    let Some(srv) = Nginx::start(src.path(), None, "0.02", false) else {
        return;
    };
    let base = format!("http://127.0.0.1:{}/", srv.port);
    let list = src.path().join("resourcelist.xml");
    let xml = std::fs::read_to_string(&list).unwrap();
    std::fs::write(&list, xml.replace("http://sample.example.org/", &base)).unwrap();
    let source = format!("{base}resourcelist.xml");
    let dir = tempfile::tempdir().unwrap();

    let out = baseline(&source, &dir.path().join("h1")).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains(&source), "{}", stderr_of(&out));

    let mirror = dir.path().join("h2");
    let out = baseline(&source, &mirror)
        .args(["--http2-prior-knowledge", "-j", "2"])
        .output()
        .unwrap();
    if libcurl_major() < 8 {
        // libcurl 7.88 fails every request after the first on such a connection: refused.
        assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("fixed in libcurl 8.0"),
            "{}",
            stderr_of(&out)
        );
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(&mirror).len(), 300);
    let requests = srv.resource_requests();
    assert_eq!(requests.len(), 300);
    assert!(requests.iter().all(|r| r.1 == "HTTP/2.0"), "{requests:?}");
    let connections: std::collections::HashSet<&str> =
        requests.iter().map(|r| r.0.as_str()).collect();
    assert!(connections.len() <= 2, "{} connections", connections.len());
    assert!(most_at_once(&requests) > 2, "{requests:?}");
}
