//! `rsmirror serve` (issue 68): a mirror whose resources have three and more versions, one
//! deleted and created again, served on 127.0.0.1 port 0 and read over real HTTP: Memento
//! (RFC 7089) TimeGates, TimeMaps and mementos checked here and by LANL's memento-validator
//! and memento-client (tests/peers/), /status.json against `status --json`, /healthz,
//! /metrics, the status page in headless Chromium, bad requests, a damaged object, SIGTERM.
//!
//! The runs' start times are set to fixed datetimes once the mirror is made (a state's time is
//! the start of the run that brought it), so every memento's datetime is known and no test
//! depends on today's date.

use crate::server::TestServer;
use crate::support::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// The start of run N: 2026-03-0N at 12:00:00 UTC (runs 1 to 4).
fn run_start(run: i64) -> i64 {
    1_772_366_400 + (run - 1) * 86_400 // 2026-03-01T12:00:00Z
}

/// A wayback timestamp (UTC).
fn stamp(unix: i64) -> String {
    jiff::Timestamp::from_second(unix)
        .unwrap()
        .strftime("%Y%m%d%H%M%S")
        .to_string()
}

fn http_date(unix: i64) -> String {
    jiff::Timestamp::from_second(unix)
        .unwrap()
        .strftime("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// The mirror: `a` changed by every run (4 states), `b` deleted by run 2 and created again by
/// run 3, `c` changed by run 4, `big` (5 MiB) by none; (name, run) -> bytes of every state
/// with bytes.
struct Fixture {
    _tree: Tree,
    srv: TestServer,
    dir: tempfile::TempDir,
    states: BTreeMap<(String, i64), Vec<u8>>,
}

impl Fixture {
    fn url(&self, name: &str) -> String {
        format!("{}/res/{name}", self.srv.base())
    }

    fn mirror(&self) -> &Path {
        self.dir.path()
    }

    /// The runs at which `name` got a state with bytes (its mementos), oldest first.
    fn memento_runs(&self, name: &str) -> Vec<i64> {
        self.states
            .keys()
            .filter(|(n, _)| n == name)
            .map(|(_, r)| *r)
            .collect()
    }
}

fn fixture() -> Fixture {
    let t = Tree::new();
    let mut states = BTreeMap::new();
    let mut put = |t: &Tree, name: &str, run: i64, text: String| {
        t.put(name, text.as_bytes());
        states.insert((name.to_string(), run), text.into_bytes());
    };
    for n in ["a", "b", "c"] {
        put(&t, n, 1, format!("{n}: first state\n"));
    }
    // Larger than what serve checks whole before answering: it streams.
    put(&t, "big", 1, "0123456789abcdef".repeat(5 * 65_536 + 1));
    t.capability_list("changelist.xml");
    t.resource_list("2026-03-01T00:00:00Z", &["a", "b", "c", "big"]);
    t.change_list("changelist.xml", "2026-03-01T00:00:00Z", None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let rounds: [&[(&str, &str)]; 3] = [
        &[("a", "updated"), ("b", "deleted")],
        &[("a", "updated"), ("b", "created")],
        &[("a", "updated"), ("c", "updated")],
    ];
    for (i, round) in rounds.iter().enumerate() {
        let run = i as i64 + 2;
        let mut entries = Vec::new();
        for (k, (name, change)) in round.iter().enumerate() {
            if *change == "deleted" {
                t.remove(name);
            } else {
                put(&t, name, run, format!("{name}: state of run {run}\n"));
            }
            entries.push((*name, *change, format!("2026-03-0{run}T0{k}:00:00Z")));
        }
        let entries: Vec<(&str, &str, &str)> = entries
            .iter()
            .map(|(n, c, d)| (*n, *c, d.as_str()))
            .collect();
        t.change_list("changelist.xml", "2026-03-01T00:00:00Z", None, &entries);
        let out = incremental(dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    }
    // Fixed run times: each memento's datetime is known.
    let conn = rusqlite::Connection::open(dir.path().join("catalog.sqlite")).unwrap();
    for run in 1..=4 {
        let at = |s| jiff::Timestamp::from_second(s).unwrap().to_string();
        conn.execute(
            "UPDATE runs SET started_at = ?1, ended_at = ?2 WHERE id = ?3",
            rusqlite::params![at(run_start(run)), at(run_start(run) + 30), run],
        )
        .unwrap();
    }
    drop(conn);
    Fixture {
        _tree: t,
        srv,
        dir,
        states,
    }
}

/// `rsmirror serve` on 127.0.0.1, port 0; SIGTERM when dropped.
pub(crate) struct Served {
    child: Child,
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Served {
    pub(crate) fn start(mirror: &Path, extra: &[&str]) -> Served {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("rsmirror"));
        // Every option may come from an RSMIRROR_* variable: none of the caller's reaches it.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("RSMIRROR_") {
                child.env_remove(name);
            }
        }
        let mut child = child
            .args(["serve", "--listen", "127.0.0.1:0", "--mirror"])
            .arg(mirror)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = Vec::new();
        let port = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("serve ended before listening: {said:?}"))
                .unwrap();
            if let Some(rest) = line.split("on http://127.0.0.1:").nth(1) {
                break rest.split('/').next().unwrap().parse().unwrap();
            }
            said.push(line);
        };
        let log = Arc::new(Mutex::new(said));
        let keep = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                keep.lock().unwrap().push(line);
            }
        });
        Served { child, port, log }
    }

    /// Whether a line of the request log matches, once stderr has been read that far (the
    /// line is written before the response goes out, but read here on another thread).
    fn wait_for_log(&self, matches: impl Fn(&str) -> bool) -> bool {
        for _ in 0..600 {
            if self.log.lock().unwrap().iter().any(|l| matches(l)) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }

    pub(crate) fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn get(&self, path: &str) -> Got {
        self.request("GET", path, &[])
    }

    pub(crate) fn request(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Got {
        let mut raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
            self.port
        );
        for (k, v) in headers {
            raw.push_str(&format!("{k}: {v}\r\n"));
        }
        raw.push_str("\r\n");
        exchange(self.port, raw.as_bytes(), method == "HEAD")
    }

    /// SIGTERM, and how it ended.
    fn stop(mut self) -> Option<i32> {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        self.child.wait().unwrap().code()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

/// A response read whole.
#[derive(Debug)]
pub(crate) struct Got {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// The body stopped short of its Content-Length (the connection was cut).
    cut: bool,
}

impl Got {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Send `raw`, read the response to the end of the connection.
fn exchange(port: u16, raw: &[u8], head: bool) -> Got {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let _ = s.write_all(raw);
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(&all)));
    let head_text = String::from_utf8_lossy(&all[..end]).into_owned();
    let mut lines = head_text.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = all[end + 4..].to_vec();
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok());
    let cut = !head && length.is_some_and(|n| body.len() < n);
    if head {
        body.clear();
    }
    Got {
        status,
        headers,
        body,
        cut,
    }
}

/// The `<URL>; rel="..."` pairs of a Link header or a link-format body.
fn links(text: &str) -> Vec<(String, String, Option<String>)> {
    text.split(",\n")
        .flat_map(|l| l.split(", <"))
        .filter_map(|l| {
            let l = l.trim().trim_start_matches('<');
            let (url, params) = l.split_once('>')?;
            let param = |name: &str| {
                params
                    .split(';')
                    .filter_map(|p| p.trim().strip_prefix(&format!("{name}=\"")))
                    .map(|v| v.trim_end_matches('"').to_string())
                    .next()
            };
            Some((url.to_string(), param("rel")?, param("datetime")))
        })
        .collect()
}

#[test]
fn timegates_timemaps_and_mementos_follow_rfc_7089() {
    let f = fixture();
    let s = Served::start(f.mirror(), &[]);
    let base = s.base();
    let a = f.url("a");
    let m = |run: i64, uri: &str| format!("{base}/web/{}/{uri}", stamp(run_start(run)));

    // The TimeGate: none -> the last, before the first -> the first, between -> the newest at
    // or before, after the last -> the last; Vary; links to the original, TimeMap, first, last.
    let tg = format!("/timegate/{a}");
    let cases: [(Option<String>, i64); 5] = [
        (None, 4),
        (Some(http_date(run_start(1) - 86_400 * 400)), 1),
        (Some(http_date(run_start(2) + 3600)), 2),
        (Some(http_date(run_start(3))), 3),
        (Some(http_date(run_start(4) + 86_400 * 4000)), 4),
    ];
    for (when, run) in &cases {
        let headers: Vec<(&str, &str)> = when
            .as_deref()
            .map(|w| vec![("Accept-Datetime", w)])
            .unwrap_or_default();
        for method in ["GET", "HEAD"] {
            let g = s.request(method, &tg, &headers);
            assert_eq!(g.status, 302, "{when:?}: {}", g.text());
            assert_eq!(g.header("location"), Some(m(*run, &a).as_str()), "{when:?}");
            assert_eq!(g.header("vary"), Some("accept-datetime"));
            let l = links(g.header("link").unwrap());
            assert!(
                l.iter().any(|(u, r, _)| u == &a && r == "original"),
                "{l:?}"
            );
            assert!(l
                .iter()
                .any(|(u, r, _)| u == &format!("{base}/timemap/link/{a}") && r == "timemap"));
            assert!(l.iter().any(|(u, r, d)| u == &m(1, &a)
                && r.starts_with("first")
                && d.as_deref() == Some(http_date(run_start(1)).as_str())));
            assert!(l
                .iter()
                .any(|(u, r, _)| u == &m(4, &a) && r == "last memento"));
        }
    }
    let bad = s.request("GET", &tg, &[("Accept-Datetime", "2026-03-01")]);
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert!(bad.text().contains("Accept-Datetime"), "{}", bad.text());

    // Every memento: the bytes exactly as fetched, Memento-Datetime, links.
    for name in ["a", "b", "c"] {
        let uri = f.url(name);
        for run in f.memento_runs(name) {
            let g = s.get(&format!("/web/{}/{uri}", stamp(run_start(run))));
            assert_eq!(g.status, 200, "{name} run {run}: {}", g.text());
            assert_eq!(
                g.body,
                f.states[&(name.to_string(), run)],
                "{name} run {run}"
            );
            assert_eq!(
                g.header("memento-datetime"),
                Some(http_date(run_start(run)).as_str())
            );
            let l = links(g.header("link").unwrap());
            assert!(
                l.iter()
                    .any(|(u, r, _)| u == &m(run, &uri) && r.ends_with("memento")),
                "{l:?}"
            );
            assert!(l
                .iter()
                .any(|(u, r, _)| u == &format!("{base}/timegate/{uri}") && r == "timegate"));
            assert!(g.header("content-type").is_some());
            assert_eq!(g.header("vary"), None);
        }
    }

    // b: deleted by run 2, created again by run 3. Its TimeMap lists its two mementos, not the
    // deletion; at the deletion's second it answers 404 with its Memento-Datetime; a time in
    // between goes to the state before the deletion.
    let b = f.url("b");
    let tm = s.get(&format!("/timemap/link/{b}"));
    assert_eq!(tm.status, 200);
    assert_eq!(tm.header("content-type"), Some("application/link-format"));
    assert_eq!(tm.header("vary"), None);
    let listed: Vec<String> = links(&tm.text())
        .into_iter()
        .filter(|(_, r, _)| r.ends_with("memento"))
        .map(|(u, _, _)| u)
        .collect();
    assert_eq!(listed, vec![m(1, &b), m(3, &b)], "{}", tm.text());
    let gone = s.get(&format!("/web/{}/{b}", stamp(run_start(2))));
    assert_eq!(gone.status, 404, "{}", gone.text());
    assert_eq!(
        gone.header("memento-datetime"),
        Some(http_date(run_start(2)).as_str())
    );
    let g = s.request(
        "HEAD",
        &format!("/timegate/{b}"),
        &[("Accept-Datetime", &http_date(run_start(2) + 60))],
    );
    assert_eq!(g.header("location"), Some(m(1, &b).as_str()));
    // A time that is no memento's goes to the memento for that time, as the wayback tools do.
    let near = s.get(&format!("/web/20260303/{b}"));
    assert_eq!(
        (near.status, near.header("location")),
        (302, Some(m(1, &b).as_str()))
    );

    // The TimeMap of a: four mementos, oldest first; the JSON form says the same; paged.
    let tm = s.get(&format!("/timemap/json/{a}"));
    let doc: Value = serde_json::from_slice(&tm.body).unwrap();
    let list: Vec<&str> = doc["mementos"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["uri"].as_str().unwrap())
        .collect();
    assert_eq!(list, (1..=4).map(|r| m(r, &a)).collect::<Vec<_>>());
    assert_eq!(doc["mementos"]["first"]["datetime"], "2026-03-01T12:00:00Z");
    drop(s);
    let s = Served::start(f.mirror(), &["--timemap-page", "3"]);
    let base = s.base();
    let page1 = s.get(&format!("/timemap/link/{a}"));
    let l = links(&page1.text());
    assert_eq!(
        l.iter().filter(|(_, r, _)| r.ends_with("memento")).count(),
        3
    );
    let next = format!("{base}/timemap/link/2/{a}");
    assert!(l.iter().any(|(u, r, _)| u == &next && r == "next"), "{l:?}");
    let page2 = s.get(&format!("/timemap/link/2/{a}"));
    let l = links(&page2.text());
    let on2: Vec<&(String, String, Option<String>)> = l
        .iter()
        .filter(|(_, r, _)| r.ends_with("memento"))
        .collect();
    assert_eq!(on2.len(), 1);
    assert_eq!(on2[0].1, "last memento");
    assert_eq!(s.get(&format!("/timemap/link/3/{a}")).status, 404);

    // /latest/URL: the state now, standing in for the original; the log has a line each.
    let latest = s.get(&format!("/latest/{}", f.url("c")));
    assert_eq!(latest.body, f.states[&("c".to_string(), 4)]);
    assert!(links(latest.header("link").unwrap())
        .iter()
        .any(|(_, r, _)| r == "timegate"));
    let logged = s.wait_for_log(|l| l.contains("\"GET /latest/") && l.contains(" 200 "));
    assert!(logged, "{:?}", s.log.lock().unwrap());
}

#[test]
fn what_serve_refuses_and_what_it_never_serves() {
    let f = fixture();
    let s = Served::start(f.mirror(), &[]);
    // No path from a URL to a file; nothing but GET and HEAD; unknown URIs named.
    for path in [
        "/web/20260301000000/../../../etc/passwd",
        "/timegate/file:///etc/passwd",
        "/timegate/..%2f..%2fcatalog.sqlite",
        "/objects/sha256/",
        "/catalog.sqlite",
        "/web/20260301000000/http%3A%2F%2F127.0.0.1%2F..%2F..%2Fetc%2Fpasswd",
    ] {
        let g = s.get(path);
        assert_eq!(g.status, 404, "{path}: {}", g.text());
        assert!(!g.text().contains("root:"), "{path}");
    }
    let g = s.request("POST", "/", &[("Content-Length", "0")]);
    assert_eq!((g.status, g.header("allow")), (405, Some("GET, HEAD")));
    let g = s.get(&format!("/timegate/{}", f.url("nothing")));
    assert_eq!(g.status, 404);
    assert!(g.text().contains("is not in the mirror"), "{}", g.text());
    // A request head of 64 KiB is refused; the server goes on.
    let big = "x".repeat(64 * 1024);
    let g = s.request("GET", "/healthz", &[("X-Big", &big)]);
    assert_eq!(g.status, 431, "{}", g.text());
    assert_eq!(s.get("/metrics").status, 200);

    // A damaged object is an error, never served: a small one is checked before it is
    // answered (500), a large one streams with its last chunk held back until the bytes proved
    // whole, so the response is cut short of its length.
    let big = format!("/web/{}/{}", stamp(run_start(1)), f.url("big"));
    let whole = s.get(&big);
    assert_eq!(whole.body, f.states[&("big".to_string(), 1)]);
    assert!(!whole.cut);
    let damage = |bytes: &[u8], at: usize| {
        let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes));
        let path = f.mirror().join("objects/sha256").join(&sha[..2]).join(&sha);
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&path, perms).unwrap();
        let mut damaged = bytes.to_vec();
        damaged[at] ^= 0x20;
        std::fs::write(&path, &damaged).unwrap();
        damaged
    };
    let c = &f.states[&("c".to_string(), 4)];
    let damaged = damage(c, 0);
    let g = s.get(&format!("/web/{}/{}", stamp(run_start(4)), f.url("c")));
    assert_eq!(g.status, 500, "{}", g.text());
    assert!(g.text().contains("damaged"), "{}", g.text());
    assert!(g
        .body
        .windows(damaged.len())
        .all(|w| w != damaged.as_slice()));
    let big_bytes = &f.states[&("big".to_string(), 1)];
    damage(big_bytes, big_bytes.len() / 2);
    let g = s.get(&big);
    assert!(g.cut, "{} of {} bytes", g.body.len(), big_bytes.len());
    assert!(s.wait_for_log(|l| l.contains("does not match the catalog")));
    // SIGTERM: it stops, exit 0.
    assert_eq!(s.stop(), Some(0));
}

#[test]
fn status_json_healthz_and_metrics_say_what_status_says() {
    let f = fixture();
    let s = Served::start(f.mirror(), &[]);
    let out = rsmirror()
        .args(["status", "--json", "--mirror"])
        .arg(f.mirror())
        .output()
        .unwrap();
    let cli_exit = out.status.code();
    // Ages move with the clock, free space with the machine; everything else is equal.
    let strip = |v: &mut Value| {
        fn walk(v: &mut Value) {
            match v {
                Value::Object(m) => {
                    m.remove("age_seconds");
                    m.remove("free_bytes");
                    m.values_mut().for_each(walk);
                }
                Value::Array(a) => a.iter_mut().for_each(walk),
                _ => {}
            }
        }
        walk(v);
    };
    let mut want: Value = serde_json::from_slice(&out.stdout).unwrap();
    let got = s.get("/status.json");
    assert_eq!(got.header("content-type"), Some("application/json"));
    let mut got: Value = serde_json::from_slice(&got.body).unwrap();
    strip(&mut want);
    strip(&mut got);
    assert_eq!(got, want);
    // /healthz is 200 when status exits 0, else 503 with the hints that need a person.
    assert_eq!(cli_exit, Some(0), "{}", stderr_of(&out));
    assert_eq!(s.get("/healthz").status, 200);
    let conn = rusqlite::Connection::open(f.mirror().join("catalog.sqlite")).unwrap();
    conn.execute(
        "UPDATE runs SET outcome = 'failed', exit_code = 4 WHERE id = 4",
        [],
    )
    .unwrap();
    drop(conn);
    let out = rsmirror()
        .args(["status", "--mirror"])
        .arg(f.mirror())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let health = s.get("/healthz");
    assert_eq!(health.status, 503, "{}", health.text());
    assert!(health.text().contains("run-failed"), "{}", health.text());
    let metrics = s.get("/metrics").text();
    for family in [
        "rsmirror_runs_total{command=\"baseline\",outcome=\"ok\"} 1",
        "rsmirror_runs_total{command=\"incremental\",outcome=\"ok\"} 2",
        "rsmirror_runs_total{command=\"incremental\",outcome=\"failed\"} 1",
        "rsmirror_resources{state=\"present\"} 4",
        "rsmirror_versions 10",
        "# TYPE rsmirror_last_good_run_age_seconds gauge",
        "rsmirror_oldest_fixity_check_age_seconds +Inf",
    ] {
        assert!(metrics.contains(family), "{family}: {metrics}");
    }
}

/// A Python with LANL's memento-validator's needs; where tests/peers/memento-validator is.
fn validator() -> (PathBuf, PathBuf) {
    (
        crate::peers::python_with("dateutil, click, typing_extensions"),
        crate::peers::script("memento-validator"),
    )
}

/// How many tests of the validator's report failed, and the report.
fn validate(python: &Path, dir: &Path, kind: &str, uri: &str) -> (usize, String) {
    let out = Command::new(python)
        .args([
            "-m",
            "mementoweb.apps.cli_validator.main",
            "--uri",
            uri,
            "--type",
            kind,
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{kind} {uri}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("| Pass"),
        "{kind} {uri}: no test passed:\n{text}"
    );
    let fails = text
        .lines()
        .filter(|l| l.split('|').nth(1).is_some_and(|r| r.trim() == "Fail"))
        .count();
    (fails, text)
}

#[test]
#[cfg_attr(
    missing = "memento_validator",
    ignore = "LANL's memento-validator needs python-dateutil, click and typing-extensions (.ci/run installs them)"
)]
fn lanl_memento_validator_finds_no_fail() {
    let f = fixture();
    let s = Served::start(f.mirror(), &[]);
    let (python, dir) = validator();
    let base = s.base();
    for name in ["a", "b", "c"] {
        let uri = f.url(name);
        let mut checks = vec![
            ("timegate", format!("{base}/timegate/{uri}")),
            ("timemap", format!("{base}/timemap/link/{uri}")),
            ("original", format!("{base}/latest/{uri}")),
        ];
        for run in f.memento_runs(name) {
            checks.push((
                "memento",
                format!("{base}/web/{}/{uri}", stamp(run_start(run))),
            ));
        }
        for (kind, url) in checks {
            let (fails, report) = validate(&python, &dir, kind, &url);
            assert_eq!(fails, 0, "--type {kind} {url}:\n{report}");
        }
    }
}

#[test]
#[cfg_attr(
    missing = "memento_client",
    ignore = "memento-client 0.6.1 (PyPI) is missing (.ci/run installs it)"
)]
fn memento_client_finds_the_closest_first_and_last_memento() {
    let f = fixture();
    let s = Served::start(f.mirror(), &["--quiet"]);
    let python = crate::peers::python_with("memento_client");
    let names = ["a", "b", "c"];
    let uris: Vec<String> = names.iter().map(|n| f.url(n)).collect();
    // 100 datetimes (seeded) from four days before the first run to four days after the last.
    let (from, until) = (run_start(1) - 4 * 86_400, run_start(4) + 4 * 86_400);
    let out = Command::new(&python)
        .arg(crate::peers::script("memento_client_check.py"))
        .arg(format!("{}/timegate/", s.base()))
        .args(["68", "100", &from.to_string(), &until.to_string()])
        .args(&uris)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = |run: i64, uri: &str| format!("{}/web/{}/{uri}", s.base(), stamp(run_start(run)));
    let mut seen = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let uri = v["uri"].as_str().unwrap();
        let name = names[uris.iter().position(|u| u == uri).unwrap()];
        let runs = f.memento_runs(name);
        let at = v["at"].as_i64().unwrap();
        let closest = runs
            .iter()
            .rev()
            .find(|r| run_start(**r) <= at)
            .unwrap_or(&runs[0]);
        assert_eq!(v["closest"], m(*closest, uri), "{line}");
        assert_eq!(v["first"], m(runs[0], uri), "{line}");
        assert_eq!(v["last"], m(*runs.last().unwrap(), uri), "{line}");
        seen += 1;
    }
    assert_eq!(seen, 100);
}

/// `chromium ARGS... URL` with a profile of its own; its stdout and stderr. Chromium that has
/// not finished in two minutes is killed (the test then fails on what it printed).
fn chromium(args: &[&str], url: &str) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--enable-logging=stderr", "--v=0"])
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reading = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut dom = String::new();
    let _ = out.read_to_string(&mut dom);
    for _ in 0..1200 {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    (dom, reading.join().unwrap())
}

#[test]
#[cfg_attr(
    missing = "chromium",
    ignore = "Debian's chromium is missing (.ci/run installs it)"
)]
fn the_status_page_shows_every_source_and_run_in_chromium() {
    let f = fixture();
    let s = Served::start(f.mirror(), &["--quiet"]);
    let url = format!("{}/", s.base());
    let (dom, console) = chromium(&["--dump-dom"], &url);
    let source = format!("{}/capabilitylist.xml", f.srv.base());
    for want in [
        source.as_str(),
        "class=\"sync-point\">2026-03-04T01:00:00Z",
        "<svg id=\"changes\"",
        "class=\"last-run\"",
        "id=\"health\" class=\"ok\"",
        "<td>baseline</td>",
        "<td>incremental</td>",
        "class=\"fixity-age\"",
    ] {
        assert!(dom.contains(want), "{want}: {dom}");
    }
    // Every run in the table, its outcome said.
    for run in 1..=4 {
        assert!(
            dom.contains(&format!("<tr><td>{run}</td>")),
            "run {run}: {dom}"
        );
    }
    // No console errors, nothing the page's policy refused, nothing fetched from elsewhere.
    for bad in ["Uncaught", "Refused to", "ERR_", "CONSOLE"] {
        let hit = console
            .lines()
            .find(|l| l.contains(bad) && !l.contains("dbus") && !l.contains("gpu"));
        assert!(hit.is_none(), "{bad}: {hit:?}");
    }
    assert!(!dom.contains("http-equiv") && !dom.contains("<script"));
    // A screenshot for the record (target/serve-status-page.png).
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-status-page.png");
    let _ = chromium(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1100,1500",
        ],
        &url,
    );
}

#[test]
fn idle_clients_are_let_go_and_the_cap_holds_the_rest_in_the_queue() {
    let f = fixture();
    let s = Served::start(
        f.mirror(),
        &["--max-connections", "2", "--header-timeout", "1s", "-q"],
    );
    // Two clients that send nothing hold both places; a third waits in the kernel's queue and
    // is answered once the header timeout has let the idle ones go.
    let idle: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(("127.0.0.1", s.port)).unwrap())
        .collect();
    let g = s.get("/healthz");
    assert_eq!(g.status, 200, "{}", g.text());
    for mut c in idle {
        c.set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        let mut rest = Vec::new();
        // Closed by the server (EOF, perhaps after a 408), not by this test.
        let _ = c.read_to_end(&mut rest);
        assert!(
            rest.is_empty() || rest.starts_with(b"HTTP/1.1 408"),
            "{rest:?}"
        );
    }
}

#[test]
fn a_run_beside_the_server_neither_waits_nor_is_waited_for() {
    let f = fixture();
    let s = Served::start(f.mirror(), &["-q"]);
    f._tree.put("a", b"a: state of run 5\n");
    f._tree.change_list(
        "changelist.xml",
        "2026-03-01T00:00:00Z",
        None,
        &[("a", "updated", "2026-03-05T00:00:00Z")],
    );
    let mut run = Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["incremental", "--mirror"])
        .arg(f.mirror())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let a = f.url("a");
    let mut asked = 0;
    loop {
        for path in [
            format!("/timegate/{a}"),
            format!("/timemap/link/{a}"),
            "/status.json".into(),
        ] {
            let g = s.get(&path);
            assert!(g.status < 500, "{path}: {} {}", g.status, g.text());
            asked += 1;
        }
        if run.try_wait().unwrap().is_some() {
            break;
        }
    }
    assert_eq!(run.wait().unwrap().code(), Some(0));
    assert!(asked >= 3);
    // Once the run has ended, the TimeGate names its state.
    let g = s.get(&format!("/timegate/{a}"));
    let location = g.header("location").unwrap().to_string();
    let m = s.get(location.strip_prefix(&s.base()).unwrap());
    assert_eq!(m.body, b"a: state of run 5\n");
}

#[test]
fn a_reader_that_stops_is_let_go_and_the_token_guards_every_url() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    let token = "0123456789abcdef0123456789abcdef";
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    std::fs::set_permissions(
        &token_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let s = Served::start(
        f.mirror(),
        &[
            "--max-connections",
            "1",
            "--send-timeout",
            "1s",
            "--auth-token-file",
            token_file.to_str().unwrap(),
        ],
    );
    let bearer = format!("Bearer {token}");
    // No token, another scheme, a wrong token: 401 with the challenge of RFC 6750 §3.
    for (headers, challenge) in [
        (vec![], "Bearer realm=\"rsmirror\""),
        (
            vec![("Authorization", "Basic dXNlcjpwYXNz")],
            "Bearer realm=\"rsmirror\"",
        ),
        (
            vec![("Authorization", "Bearer 0123456789abcdef0123456789abcdeF")],
            "Bearer realm=\"rsmirror\", error=\"invalid_token\"",
        ),
    ] {
        for path in ["/healthz", "/", &format!("/timemap/link/{}", f.url("a"))] {
            let g = s.request("GET", path, &headers);
            assert_eq!(g.status, 401, "{path} {headers:?}: {}", g.text());
            assert_eq!(g.header("www-authenticate"), Some(challenge));
        }
    }
    let g = s.request("GET", "/healthz", &[("Authorization", &bearer)]);
    assert_eq!(g.status, 200, "{}", g.text());

    // A client asks for the large memento and reads nothing, holding the only place: within
    // --send-timeout it is disconnected and the next client is served.
    let big = format!("/web/{}/{}", stamp(run_start(1)), f.url("big"));
    let mut stalled = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    let small: libc::c_int = 4096;
    unsafe {
        use std::os::fd::AsRawFd as _;
        libc::setsockopt(
            stalled.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &small as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    write!(
        stalled,
        "GET {big} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {bearer}\r\n\r\n"
    )
    .unwrap();
    assert!(
        s.wait_for_log(|l| l.contains("took none of its response for 1s: disconnected")),
        "{:?}",
        s.log.lock().unwrap()
    );
    let g = s.request("GET", "/healthz", &[("Authorization", &bearer)]);
    assert_eq!(g.status, 200, "{}", g.text());
    stalled
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut got = Vec::new();
    let _ = stalled.read_to_end(&mut got);
    let length = f.states[&("big".to_string(), 1)].len();
    assert!(got.len() < length, "{} of {length} bytes", got.len());
    // A token is never in the request log.
    assert!(s.log.lock().unwrap().iter().all(|l| !l.contains(token)));
    assert_eq!(s.stop(), Some(0));

    // A token file that cannot serve is refused before listening: exit 2, the file named.
    std::fs::write(&token_file, "short\n").unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .env_remove("RSMIRROR_AUTH_TOKEN_FILE")
        .args(["serve", "--listen", "127.0.0.1:0", "--auth-token-file"])
        .arg(&token_file)
        .arg("--mirror")
        .arg(f.mirror())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let said = stderr_of(&out);
    assert!(
        said.contains("--auth-token-file") && said.contains("5 characters long"),
        "{said}"
    );
}

/// The `rel="duplicate"` URIs (the source's) of a ResourceSync document.
fn duplicates(doc: &str) -> Vec<String> {
    doc.split("<rs:ln rel=\"duplicate\" href=\"")
        .skip(1)
        .map(|r| r.split('"').next().unwrap().replace("&amp;", "&"))
        .collect()
}

/// Issue 68: the mirror served as a ResourceSync source (Source Description, Capability List,
/// a paged Resource List, a Change List per run) is followed by another rsmirror and by
/// resync 2.0.1, through a baseline and an incremental.
#[test]
#[cfg_attr(
    missing = "resync",
    ignore = "resync 2.0.1 (resync-sync) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn the_mirror_is_a_resourcesync_source_rsmirror_and_resync_follow() {
    let f = fixture();
    let s = Served::start(f.mirror(), &["-q", "--list-size", "2"]);
    let base = s.base();
    let g = s.get("/.well-known/resourcesync");
    assert_eq!(g.status, 200);
    assert!(g
        .header("content-type")
        .unwrap()
        .starts_with("application/xml"));
    assert!(
        g.text().contains(&format!(
            "<loc>{base}/resourcesync/capabilitylist.xml</loc>"
        )),
        "{}",
        g.text()
    );
    let caps = s.get("/resourcesync/capabilitylist.xml").text();
    assert!(
        caps.contains("capability=\"resourcelist\"") && caps.contains("capability=\"changelist\"")
    );

    // Four resources at run 4, two a page: an index of two pages, each the state at run 4.
    let index = s.get("/resourcesync/resourcelist.xml").text();
    assert!(index.contains("<sitemapindex"), "{index}");
    // Each list is the state when its run ended, each change dated then.
    let at = jiff::Timestamp::from_second(run_start(4) + 30)
        .unwrap()
        .to_string();
    assert!(index.contains(&format!("at=\"{at}\"")), "{index}");
    let mut listed = Vec::new();
    for n in 1..=2 {
        assert!(index.contains(&format!(
            "<loc>{base}/resourcesync/resourcelist/4/{n}.xml</loc>"
        )));
        let page = s.get(&format!("/resourcesync/resourcelist/4/{n}.xml"));
        assert_eq!(page.status, 200);
        listed.extend(duplicates(&page.text()));
    }
    let mut want: Vec<String> = ["a", "b", "big", "c"].iter().map(|n| f.url(n)).collect();
    want.sort();
    assert_eq!(listed, want);
    assert_eq!(s.get("/resourcesync/resourcelist/4/3.xml").status, 404);
    // At run 2 (b deleted) the pages still answer as that state.
    let page = s.get("/resourcesync/resourcelist/2/1.xml").text();
    assert!(!duplicates(&page).contains(&f.url("b")), "{page}");

    // A Change List per run after the first: run 2 updated a and deleted b.
    let changes = s.get("/resourcesync/changelist.xml").text();
    // Runs 2, 3, 4 and the open list.
    assert_eq!(changes.matches("<sitemap>").count(), 4, "{changes}");
    assert!(changes.contains(&format!("{base}/resourcesync/changelist/open.xml")));
    let run2 = s.get("/resourcesync/changelist/2/1.xml").text();
    let day2 = jiff::Timestamp::from_second(run_start(2) + 30)
        .unwrap()
        .to_string();
    assert!(
        run2.contains(&format!("change=\"updated\" datetime=\"{day2}\""))
            && run2.contains(&format!("change=\"deleted\" datetime=\"{day2}\"")),
        "{run2}"
    );
    assert_eq!(s.get("/resourcesync/changelist/1/1.xml").status, 404);
    assert_eq!(s.get("/resourcesync/changelist/2/2.xml").status, 404);

    // Another rsmirror takes it from its Source Description: every byte as the mirror holds it.
    let second = tempfile::tempdir().unwrap();
    let out = baseline(&format!("{base}/.well-known/resourcesync"), second.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let held = |mirror: &Path, name: &str| -> Option<Vec<u8>> {
        let out = rsmirror()
            .args([
                "cat",
                &format!("{base}/latest/{}", f.url(name).replacen("://", ":/", 1)),
                "--mirror",
            ])
            .arg(mirror)
            .output()
            .unwrap();
        out.status.success().then_some(out.stdout)
    };
    let newest = |name: &str| {
        f.states
            .iter()
            .rfind(|((n, _), _)| n == name)
            .map(|(_, b)| b.clone())
    };
    for name in ["a", "b", "big", "c"] {
        assert_eq!(held(second.path(), name), newest(name), "{name}");
    }

    // resync-sync 2.0.1 takes the Resource List (the index and its pages).
    let resync = crate::export::validator("resync-sync");
    let copy = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mapping = format!("{base}={}", copy.path().display());
    let run_resync = |args: &[&str]| {
        let out = Command::new(&resync)
            .args(args)
            .arg(&mapping)
            .current_dir(work.path())
            .output()
            .unwrap();
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), log)
    };
    let resourcelist = format!("{base}/resourcesync/resourcelist.xml");
    let (ok, log) = run_resync(&[
        "--baseline",
        "--hash",
        "sha-256",
        "--sitemap",
        &resourcelist,
    ]);
    assert!(ok, "resync-sync --baseline: {log}");
    let mut got: Vec<Vec<u8>> = crate::export::files(copy.path()).into_values().collect();
    got.sort();
    let mut expected: Vec<Vec<u8>> = ["a", "b", "big", "c"]
        .iter()
        .map(|n| newest(n).unwrap())
        .collect();
    expected.sort();
    assert_eq!(got, expected, "{log}");

    // The mirror moves on (run 5: a updated, c deleted); both followers take the change.
    f._tree.put("a", b"a: state of run 5\n");
    f._tree.remove("c");
    f._tree.change_list(
        "changelist.xml",
        "2026-03-01T00:00:00Z",
        None,
        &[
            ("a", "updated", "2026-03-05T00:00:00Z"),
            ("c", "deleted", "2026-03-05T00:01:00Z"),
        ],
    );
    let out = incremental(f.mirror()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = incremental(second.path()).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (summary["updated"].as_u64(), summary["deleted"].as_u64()),
        (Some(1), Some(1)),
        "{summary}"
    );
    assert_eq!(held(second.path(), "a").unwrap(), b"a: state of run 5\n");
    assert_eq!(held(second.path(), "c"), None);

    // resync 2.0.1 reads no Change List Index (its ChangeList adds the index's <sitemap>
    // entries as changes and fails with ChangeTypeError): it is given run 5's list, which the
    // index names.
    let index = s.get("/resourcesync/changelist.xml").text();
    let changelist = format!("{base}/resourcesync/changelist/5/1.xml");
    assert!(
        index.contains(&format!("<loc>{changelist}</loc>")),
        "{index}"
    );
    let (ok, inc_log) = run_resync(&[
        "--incremental",
        "--delete",
        "--changelist-uri",
        &changelist,
        "--from",
        &at,
    ]);
    assert!(
        ok && !inc_log.contains("Error"),
        "resync-sync --incremental: {inc_log}"
    );
    let (ok, log) = run_resync(&["--audit", "--hash", "sha-256", "--sitemap", &resourcelist]);
    assert!(
        ok && log.contains("IN SYNC") && !log.contains("NOT IN SYNC"),
        "resync-sync --audit: {log}\nafter --incremental: {inc_log}"
    );
}

/// Issue 68: browsing, for a person (HTML, read in Chromium) and a program (JSON): the
/// resources under a prefix at a WHEN, one URI's versions linked to their mementos, and a diff
/// between two runs.
#[test]
#[cfg_attr(
    missing = "chromium",
    ignore = "Debian's chromium is missing (.ci/run installs it)"
)]
fn browsing_lists_by_prefix_and_time_shows_versions_and_diffs() {
    let f = fixture();
    let s = Served::start(f.mirror(), &["-q"]);
    let prefix = f.url("");
    let json = |path: &str| -> Value {
        let g = s.request("GET", path, &[("Accept", "application/json")]);
        assert_eq!(g.status, 200, "{path}: {}", g.text());
        serde_json::from_slice(&g.body).unwrap()
    };
    let enc = |v: &str| url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>();
    // At run 2, b had been deleted: a, big, c; now (run 4) b is back.
    let uris = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_string())
            .collect()
    };
    let at2 = json(&format!("/browse?prefix={}&at=run:2", enc(&prefix)));
    assert_eq!(uris(&at2), vec![f.url("a"), f.url("big"), f.url("c")]);
    let now = json(&format!("/browse?prefix={}", enc(&prefix)));
    assert_eq!(uris(&now).len(), 4);
    let g = s.get("/browse?at=next+tuesday");
    assert_eq!(g.status, 400);
    assert!(g.text().contains("WHEN \"next tuesday\""), "{}", g.text());

    // a's versions, newest first, each present state linked to its memento.
    let v = json(&format!("/versions/{}", f.url("a")));
    assert_eq!(v["versions"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(
        s.get(&format!("/versions/{}", f.url("nothing"))).status,
        404
    );

    // Run 1 to run 2: a updated, b deleted.
    let d = json("/diff?from=run:1&to=run:2");
    assert_eq!(
        (
            d["marks"]["updated"].as_u64(),
            d["marks"]["deleted"].as_u64()
        ),
        (Some(1), Some(1)),
        "{d}"
    );
    assert_eq!(s.get("/diff").status, 400);

    // The same pages in a browser.
    let (dom, _) = chromium(
        &["--dump-dom"],
        &format!("{}/browse?prefix={}&at=run:2", s.base(), enc(&prefix)),
    );
    assert!(dom.contains("id=\"listing\""), "{dom}");
    assert!(
        dom.contains(&format!("/versions/{}", f.url("big"))),
        "{dom}"
    );
    assert!(!dom.contains(&format!(">{}<", f.url("b"))), "{dom}");
    let (dom, _) = chromium(
        &["--dump-dom"],
        &format!("{}/versions/{}", s.base(), f.url("a")),
    );
    for run in 1..=4 {
        let memento = format!("/web/{}/{}", stamp(run_start(run)), f.url("a"));
        assert!(dom.contains(&memento), "run {run}: {memento}: {dom}");
    }
    let (dom, _) = chromium(
        &["--dump-dom"],
        &format!("{}/diff?from=run:1&to=run:2", s.base()),
    );
    assert!(
        dom.contains("1 created") || dom.contains("0 created, 1 updated, 1 deleted"),
        "{dom}"
    );
}
