//! Proxies: documents and resources follow the same convention, curl's environment variables
//! (`http_proxy`, `https_proxy`, `all_proxy`, `no_proxy`; see curl's manual, "ENVIRONMENT").
//! A small forward proxy on 127.0.0.1:0 logs every request it relays; a baseline run with
//! `http_proxy` pointing at it must send every request (discovery, the Capability List, the
//! Resource Lists and every resource) through it, and with `NO_PROXY` naming the origin none.

use crate::server::{testdata, TestServer};
use crate::support::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A forward proxy for plain http: reads an absolute-form request (RFC 9112 §3.2.2), logs its
/// request line, sends it on to the origin in origin form with `Connection: close`, and
/// relays the answer until the origin closes. One request per client connection.
struct Proxy {
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = Arc::clone(&log);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let l = Arc::clone(&l);
                std::thread::spawn(move || relay(client, &l));
            }
        });
        Proxy { port, log }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The request lines relayed so far: `GET http://127.0.0.1:PORT/path HTTP/1.1`.
    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

fn relay(client: TcpStream, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let request_line = line.trim_end().to_string();
    log.lock().unwrap().push(request_line.clone());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        let name = h.split(':').next().unwrap_or("").to_ascii_lowercase();
        if !matches!(
            name.as_str(),
            "connection" | "proxy-connection" | "keep-alive"
        ) {
            headers.push(h);
        }
    }
    let mut client = client;
    let parts: Vec<&str> = request_line.split(' ').collect();
    let Some(target) = parts
        .get(1)
        .and_then(|t| url::Url::parse(t).ok())
        .filter(|u| u.scheme() == "http")
    else {
        let _ = client.write_all(
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    };
    let origin = format!(
        "{}:{}",
        target.host_str().unwrap(),
        target.port_or_known_default().unwrap()
    );
    let Ok(mut upstream) = TcpStream::connect(origin) else {
        let _ = client.write_all(
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    };
    let mut path = target.path().to_string();
    if let Some(q) = target.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut out = format!("{} {path} HTTP/1.1\r\n", parts[0]);
    for h in headers {
        out.push_str(&h);
    }
    out.push_str("Connection: close\r\n\r\n");
    if upstream.write_all(out.as_bytes()).is_err() {
        return;
    }
    let mut answer = Vec::new();
    let _ = upstream.read_to_end(&mut answer);
    let _ = client.write_all(&answer);
}

/// `rsmirror baseline` with no proxy variable from the test's own environment, and `vars`.
fn baseline_with(source: &str, mirror: &std::path::Path, vars: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = baseline(source, mirror);
    for var in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), stderr_of(&out))
}

#[test]
fn http_proxy_carries_documents_and_resources_alike() {
    let srv = TestServer::start(testdata("sample"));
    let proxy = Proxy::start();
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = baseline_with(
        &srv.url("/"),
        dir.path(),
        &[("http_proxy", proxy.url().as_str())],
    );
    assert_eq!(code, 0, "{err}");
    let held = current(dir.path());
    assert!(held.len() >= 5, "{held:?}");
    let relayed = proxy.requests();
    let relayed_url = |url: &str| relayed.iter().any(|r| r == &format!("GET {url} HTTP/1.1"));
    // The Source Description, the Capability List, the Resource List index and its lists.
    for doc in [
        "/.well-known/resourcesync",
        "/rs/capabilitylist.xml",
        "/rs/resourcelist-index.xml",
        "/rs/resourcelist-1.xml",
        "/rs/resourcelist-2.xml",
    ] {
        assert!(
            relayed_url(&srv.url(doc)),
            "{doc} not through the proxy: {relayed:#?}"
        );
    }
    // Every resource.
    for url in held.keys() {
        assert!(
            relayed_url(url),
            "{url} not through the proxy: {relayed:#?}"
        );
    }
    // And nothing reached the origin but through the proxy.
    assert_eq!(srv.requests().len(), relayed.len(), "{relayed:#?}");
}

#[test]
fn no_proxy_keeps_documents_and_resources_alike_off_the_proxy() {
    let srv = TestServer::start(testdata("sample"));
    let proxy = Proxy::start();
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = baseline_with(
        &srv.url("/"),
        dir.path(),
        &[
            ("http_proxy", proxy.url().as_str()),
            ("NO_PROXY", "127.0.0.1"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(current(dir.path()).len() >= 5);
    assert_eq!(proxy.requests(), Vec::<String>::new());
    assert!(!srv.requests().is_empty());
}
