//! HTTP/2 misbehaviour (issue 46), against a server that speaks HTTP/2 in cleartext with prior
//! knowledge (`tests/it/h2_server.py`, Python's `h2`, which `.ci/run` installs into
//! `.ci/venv`): a stream reset mid-body and a body longer than its content-length should fail
//! only their resource, with no wrong bytes stored; a GOAWAY mid-run should retry only the
//! requests it concerns; a flood of SETTINGS ends in bounded time with every stored byte right.

use crate::support::*;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Python with `h2`: `.ci/venv/bin/python3`, else one on PATH (or in `RSMIRROR_VALIDATORS`).
fn python_with_h2() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("RSMIRROR_VALIDATORS") {
        candidates.push(PathBuf::from(d).join("python3"));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python3"));
    candidates.push("python3".into());
    for python in candidates {
        let ok = Command::new(&python)
            .args(["-c", "import h2"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(python);
        }
    }
    panic!("Python's h2 is missing: .ci/run installs it into .ci/venv");
}

/// (connection, stream, start, end, path, what) of a request the server answered.
type Request = (u32, u32, f64, f64, String, String);

struct H2Server {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl H2Server {
    fn start(root: &Path, mode: &str) -> Option<H2Server> {
        let python = python_with_h2()?;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.log");
        let mut child = Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/h2_server.py"))
            .arg(root)
            .arg(mode)
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the h2 server's port");
        Some(H2Server {
            child,
            port,
            log,
            _dir: dir,
        })
    }

    /// Every request answered.
    fn requests(&self) -> Vec<Request> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].parse().unwrap(),
                    f[4].to_string(),
                    f[5].to_string(),
                )
            })
            .collect()
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A source of `n` resources of 2,000 bytes served by the h2 server in `mode`: (source files,
/// server, Resource List URL).
fn source(n: usize, mode: &str) -> Option<(tempfile::TempDir, H2Server, String)> {
    // rsmirror refuses --http2-prior-knowledge before libcurl 8.0 (https.rs tests the
    // refusal): these tests are ignored there (`build.rs`).
    assert!(
        libcurl_major() >= 8,
        "this build links a libcurl before 8.0"
    );
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), n, 2_000);
    let srv = H2Server::start(src.path(), mode)?;
    let base = format!("http://127.0.0.1:{}/", srv.port);
    let list = src.path().join("resourcelist.xml");
    let xml = std::fs::read_to_string(&list).unwrap();
    std::fs::write(&list, xml.replace("http://sample.example.org/", &base)).unwrap();
    Some((src, srv, format!("{base}resourcelist.xml")))
}

/// Every current state holds the bytes of its file in `src`.
fn no_wrong_bytes(mirror: &Path, src: &Path) {
    use sha2::Digest as _;
    for (url, sha) in current(mirror) {
        let name = url.rsplit('/').next().unwrap();
        let bytes = std::fs::read(src.join("res").join(name)).unwrap();
        assert_eq!(sha, hex::encode(sha2::Sha256::digest(&bytes)), "{url}");
    }
    assert_consistent(mirror);
}

fn run(source: &str, mirror: &Path, args: &[&str]) -> std::process::Output {
    baseline(source, mirror)
        .arg("--http2-prior-knowledge")
        .args(args)
        .output()
        .unwrap()
}

/// The long body makes nghttp2 end the whole connection (a PROTOCOL_ERROR): the streams beside
/// it, none of whose response had come, go again without spending a try (`--tries 2` would
/// otherwise fail them when the culprit's second try ends their connection again).
#[test]
#[cfg_attr(
    any(missing = "h2", missing = "libcurl8"),
    ignore = "no Python with h2 (bash .ci/run installs it), or a libcurl before 8.0, which does not speak h2c soundly (the bundled build, --features curl-sys/static-curl, runs these)"
)]
fn a_stream_reset_mid_body_or_a_body_past_its_length_fails_only_its_resource() {
    fails_only("hostile", &["/res/000003", "/res/000007"], &[]);
}

/// A run of 20 resources from a server in `mode`, `-j 2 --tries 2`: in bounded time, exit 3,
/// every resource but those `failed` held with its bytes, each of those named in the report
/// with the words `said`.
fn fails_only(mode: &str, failed: &[&str], said: &[&str]) {
    let Some((src, _srv, list)) = source(20, mode) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(&list, dir.path(), &["-j", "2", "--tries", "2"]);
    assert!(started.elapsed() < Duration::from_secs(60));
    let report = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{report}");
    let held = current(dir.path());
    assert_eq!(held.len(), 20 - failed.len(), "{held:?}\n{report}");
    for path in failed {
        assert!(!held.keys().any(|u| u.ends_with(path)), "{path}: {held:?}");
        assert!(report.contains(path), "{path}: {report}");
    }
    for words in said {
        assert!(report.contains(words), "{words}: {report}");
    }
    no_wrong_bytes(dir.path(), src.path());
}

/// A run of `n` resources from a server in `mode` with `args` that ends well (exit 0), every
/// resource held with its bytes: what the server logged of its requests.
fn all_arrive(n: usize, mode: &str, args: &[&str]) -> Option<Vec<Request>> {
    let (src, srv, list) = source(n, mode)?;
    let dir = tempfile::tempdir().unwrap();
    let out = run(&list, dir.path(), args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(dir.path()).len(), n);
    no_wrong_bytes(dir.path(), src.path());
    Some(srv.requests())
}

#[test]
#[cfg_attr(
    any(missing = "h2", missing = "libcurl8"),
    ignore = "no Python with h2 (bash .ci/run installs it), or a libcurl before 8.0, which does not speak h2c soundly (the bundled build, --features curl-sys/static-curl, runs these)"
)]
fn a_goaway_mid_run_retries_only_the_requests_it_concerns() {
    // 20 resources; every connection serves 10 requests, then GOAWAY: the rest go again, with
    // no try to spare (they were not processed: RFC 9113 §6.8).
    let Some(requests) = all_arrive(20, "goaway", &["-j", "2", "--tries", "1"]) else {
        return;
    };
    // Each resource answered once: what a GOAWAY cut off went again, nothing else did.
    let mut paths: Vec<&str> = requests
        .iter()
        .map(|r| r.4.as_str())
        .filter(|p| p.starts_with("/res/"))
        .collect();
    paths.sort();
    let n = paths.len();
    paths.dedup();
    assert_eq!((n, paths.len()), (20, 20), "{requests:?}");
    let connections: std::collections::HashSet<u32> = requests.iter().map(|r| r.0).collect();
    assert!(connections.len() >= 2, "{} connections", connections.len());
}

/// A server that allows one stream at a time: the GETs queue for it on the connections
/// `--jobs` allows (none opens another to get round the limit, RFC 9113 §9.1; none is refused
/// once the SETTINGS are read), with no retry to spare.
#[test]
#[cfg_attr(
    any(missing = "h2", missing = "libcurl8"),
    ignore = "no Python with h2 (bash .ci/run installs it), or a libcurl before 8.0, which does not speak h2c soundly (the bundled build, --features curl-sys/static-curl, runs these)"
)]
fn a_server_that_allows_one_stream_gets_one_stream_at_a_time() {
    let Some(requests) = all_arrive(20, "onestream", &["-j", "2", "--tries", "1"]) else {
        return;
    };
    let connections: std::collections::HashSet<u32> = requests.iter().map(|r| r.0).collect();
    // The Resource List's, and one for each of --jobs.
    assert!(connections.len() <= 3, "{requests:?}");
    let refused = requests.iter().filter(|r| r.5 == "refused").count();
    // Only what went out before a connection's SETTINGS were read (RFC 9113 §5.1.2).
    assert!(refused <= 2 * 20, "{refused} refused: {requests:?}");
    for c in &connections {
        let mut answered: Vec<(f64, f64)> = (requests.iter())
            .filter(|r| r.0 == *c && r.5 == "ok")
            .map(|r| (r.2, r.3))
            .collect();
        answered.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in answered.windows(2) {
            assert!(
                w[1].0 >= w[0].1 - 0.001,
                "two streams at once on {c}: {w:?}"
            );
        }
    }
}

/// PUSH_PROMISE frames a client that said `SETTINGS_ENABLE_PUSH 0` never asked for (RFC 9113
/// §8.4): a protocol error for the connection they came on. The resource they came with fails
/// with libcurl's words for it; the streams beside it go again and arrive.
#[test]
#[cfg_attr(
    any(missing = "h2", missing = "libcurl8"),
    ignore = "no Python with h2 (bash .ci/run installs it), or a libcurl before 8.0, which does not speak h2c soundly (the bundled build, --features curl-sys/static-curl, runs these)"
)]
fn a_flood_of_push_promises_fails_only_the_resource_it_came_with() {
    fails_only("push", &["/res/000005"], &["PUSH_PROMISE"]);
}

/// Politeness over HTTP/2: a 429 with `Retry-After` on one stream holds the whole host, every
/// stream, not only the one refused: after the streams already under way (`--streams 4`),
/// nothing goes out until the two seconds have passed.
#[test]
#[cfg_attr(
    any(missing = "h2", missing = "libcurl8"),
    ignore = "no Python with h2 (bash .ci/run installs it), or a libcurl before 8.0, which does not speak h2c soundly (the bundled build, --features curl-sys/static-curl, runs these)"
)]
fn a_429_on_one_stream_holds_every_stream_to_the_host() {
    let Some(requests) = all_arrive(40, "ratelimit", &["-j", "2", "--streams", "4"]) else {
        return;
    };
    let refused = requests
        .iter()
        .find(|r| r.5 == "429")
        .expect("the 429 was sent")
        .3;
    let after: Vec<f64> = (requests.iter())
        .filter(|r| r.4.starts_with("/res/") && r.2 > refused)
        .map(|r| r.2 - refused)
        .collect();
    let too_soon: Vec<&f64> = after.iter().filter(|d| **d > 0.5 && **d < 1.9).collect();
    assert!(too_soon.is_empty(), "asked {too_soon:?} s after the 429");
    assert!(
        after.iter().filter(|d| **d >= 1.9).count() >= 25,
        "{after:?}"
    );
}

#[test]
#[cfg_attr(
    any(missing = "h2", missing = "libcurl8"),
    ignore = "no Python with h2 (bash .ci/run installs it), or a libcurl before 8.0, which does not speak h2c soundly (the bundled build, --features curl-sys/static-curl, runs these)"
)]
fn a_flood_of_settings_ends_in_bounded_time_with_no_wrong_bytes() {
    let Some((src, _srv, list)) = source(10, "settings") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(&list, dir.path(), &["-j", "2", "--timeout", "5"]);
    assert!(started.elapsed() < Duration::from_secs(90));
    assert!(
        matches!(out.status.code(), Some(0 | 3 | 4)),
        "{}",
        stderr_of(&out)
    );
    no_wrong_bytes(dir.path(), src.path());
}
