//! `rsmirror follow` (issue 69) against a real WebSub hub nobody here wrote: flask-websub 0.4.1
//! (celery in eager mode) on 127.0.0.1, beside a ResourceSync source it distributes the Change
//! List of (`tests/peers/websub_hub.py`). No timed assertions: every wait is for an event (a
//! line on the follower's stderr, a state of the mirror), with a generous ceiling.

use crate::peers::{python_with, Server};
use crate::support::*;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(120);

/// The source and the hub, on one port.
struct Hub {
    tree: Tree,
    server: Server,
    _db: tempfile::TempDir,
}

impl Hub {
    fn start() -> Hub {
        Hub::start_with(&format!("{ORIGIN}/hub"), &[])
    }

    /// The channel's entry names `hub_href`; `args` go to the harness (`deny`).
    fn start_with(hub_href: &str, args: &[&str]) -> Hub {
        let tree = Tree::new();
        tree.put("a", b"a1\n");
        tree.put("b", b"b1\n");
        tree.resource_list("2026-04-01T00:00:00Z", &["a", "b"]);
        tree.change_list("changelist.xml", "2026-04-01T00:00:00Z", None, &[]);
        tree.capability_list("changelist.xml");
        // ResourceSync Change Notification 1.0.1: the channel in the Capability List.
        let caps = std::fs::read_to_string(tree.path().join("capabilitylist.xml")).unwrap();
        let caps = caps.replace(
            "</urlset>",
            &format!(
                "<url><loc>{ORIGIN}/notification/changelist</loc>\
                 <rs:ln rel=\"hub\" href=\"{hub_href}\"/>\
                 <rs:md capability=\"changelist-notification\"/></url>\n</urlset>"
            ),
        );
        std::fs::write(tree.path().join("capabilitylist.xml"), caps).unwrap();
        let db = tempfile::tempdir().unwrap();
        let python = python_with("flask_websub, celery");
        let hub_db = db.path().join("hub.sqlite");
        let mut argv = vec![tree.path().to_str().unwrap(), hub_db.to_str().unwrap()];
        argv.extend_from_slice(args);
        let server = Server::start(&python, "websub_hub.py", &argv);
        Hub {
            tree,
            server,
            _db: db,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.server.port)
    }

    fn post(&self, path: &str) -> String {
        http("POST", &self.url(path))
    }

    /// The source changes: `changes` (name, change, datetime, bytes) after those before.
    fn change(&self, all: &[(&str, &str, &str)], put: &[(&str, &[u8])]) {
        for (n, b) in put {
            self.tree.put(n, b);
        }
        self.tree
            .change_list("changelist.xml", "2026-04-01T00:00:00Z", None, all);
    }
}

/// A request with curl; the body.
fn http(method: &str, url: &str) -> String {
    let out = Command::new("curl")
        .args(["-sS", "-X", method, url])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A free port on 127.0.0.1 (bound and released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `rsmirror follow`, its stderr in a file.
struct Follower {
    child: Child,
    log: PathBuf,
}

impl Follower {
    fn start(mirror: &Path, port: u16, extra: &[&str]) -> Follower {
        let log = mirror.with_extension(format!("follow-{}.log", rand_suffix()));
        let child = Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
            .args(["follow", "--mirror"])
            .arg(mirror)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--callback-base", &format!("http://127.0.0.1:{port}")])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Follower { child, log }
    }

    fn said(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait until stderr holds `n` lines containing `what`.
    fn wait_for(&self, what: &str, n: usize) -> String {
        let started = Instant::now();
        loop {
            let said = self.said();
            if said.matches(what).count() >= n {
                return said;
            }
            assert!(
                started.elapsed() < WAIT,
                "never said {what:?} {n} times:\n{said}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn signal(&mut self, sig: libc::c_int) -> Option<i32> {
        unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        self.child.wait().unwrap().code()
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed) + u64::from(std::process::id()) * 1000
}

/// Wait until the mirror holds `uri` with `bytes`.
fn wait_for_state(mirror: &Path, uri: &str, bytes: &[u8], f: &Follower) {
    let started = Instant::now();
    let sha = sha256_hex(bytes);
    while current(mirror).get(uri) != Some(&sha) {
        assert!(
            started.elapsed() < WAIT,
            "{uri} never reached the mirror:\n{}",
            f.said()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(b))
}

/// The subscription rows: (callback, secret, state).
fn subscriptions(mirror: &Path) -> Vec<(String, String, String)> {
    let conn = rusqlite::Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare("SELECT callback, secret, state FROM subscriptions ORDER BY id")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// The worker writes a verified subscription within a second or so.
fn wait_until_active(m: &Path, f: &Follower) {
    let started = Instant::now();
    while subscriptions(m).first().map(|s| s.2.as_str()) != Some("active") {
        assert!(started.elapsed() < WAIT, "{}", f.said());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A raw request to the follower: the status line.
fn raw(port: u16, request: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

fn audit_clean(mirror: &Path, source: &str) {
    let out = rsmirror()
        .args(["audit", source, "--mirror"])
        .arg(mirror)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// Subscribe (a 10 s lease asked, 60 s granted by the hub's minimum, renewal at 30 s), the
/// hub's verification before its answer (celery eager), a change pushed and applied with each
/// of the four signature methods, a forged and an unsigned delivery ignored and never applied,
/// WebSub's verification refused for what was not asked (404), a notification for no
/// subscription (404), a 100 MB body refused (413), a replayed old notification applying
/// nothing, `status` showing the subscription, `follow --stop` unsubscribing (the hub forgets
/// the callback), SIGTERM (exit 0), and an audit that finds the mirror equal to the source.
#[test]
#[cfg_attr(
    missing = "flask_websub",
    ignore = "flask-websub 0.4.1 and celery (PyPI) are missing (.ci/run installs them)"
)]
fn a_flask_websub_hub_pushes_changes_that_follow_applies() {
    let hub = Hub::start();
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let source = hub.url("/capabilitylist.xml");
    let out = baseline(&source, &m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    let port = free_port();
    let mut f = Follower::start(&m, port, &["--lease", "10s"]);
    // flask-websub's minimum lease is 60 s: granted, and renewal scheduled from it.
    let said = f.wait_for("lease 60s granted, renewal in 30s", 1);
    assert!(!said.contains("lease 10s granted"), "{said}");
    wait_until_active(&m, &f);
    let subs = subscriptions(&m);
    assert_eq!(subs.len(), 1, "{subs:?}");
    let (callback, secret, state) = subs[0].clone();
    assert_eq!(state, "active");
    assert!(callback.starts_with(&format!("http://127.0.0.1:{port}/websub/")));
    // The path is unguessable: 24 random bytes.
    assert_eq!(callback.rsplit('/').next().unwrap().len(), 48);
    assert!(hub.http_subscribers().contains(&callback));
    f.wait_for("caught up", 1);

    // Each signature method in turn: the change reaches the mirror.
    let mut entries: Vec<(String, String, String)> = Vec::new();
    for (i, alg) in ["sha1", "sha256", "sha384", "sha512"].iter().enumerate() {
        let name = format!("n{i}");
        let bytes = format!("pushed with {alg}\n");
        entries.push((
            name.clone(),
            "created".into(),
            format!("2026-04-02T00:00:0{i}Z"),
        ));
        let e: Vec<(&str, &str, &str)> = entries
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
            .collect();
        hub.change(&e, &[(&name, bytes.as_bytes())]);
        hub.post(&format!("/publish?alg={alg}"));
        wait_for_state(&m, &hub.url(&format!("/res/{name}")), bytes.as_bytes(), &f);
    }

    // A forged and an unsigned delivery: logged, never applied (no catch-up follows).
    entries.push(("x".into(), "created".into(), "2026-04-03T00:00:00Z".into()));
    let e: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    hub.change(&e, &[("x", b"x\n")]);
    // Each delivery that counts queues a catch-up (said before the hub has its answer).
    let queued = f.said().matches("catch-up queued").count();
    assert_eq!(hub.post("/forge?kind=forged").trim(), "1");
    assert_eq!(hub.post("/forge?kind=unsigned").trim(), "1");
    let said = f.wait_for("ignored, never applied", 2);
    assert!(said.contains("does not match the body"), "{said}");
    assert!(said.contains("unsigned"), "{said}");
    assert_eq!(said.matches("catch-up queued").count(), queued, "{said}");
    assert!(!current(&m).contains_key(&hub.url("/res/x")));

    // Verification only for what was asked: 404 otherwise.
    let path = callback.trim_start_matches(&format!("http://127.0.0.1:{port}"));
    let topic = hub.url("/notification/changelist");
    let q = |mode: &str, topic: &str| {
        format!(
            "GET {path}?hub.mode={mode}&hub.topic={}&hub.challenge=c1 HTTP/1.1\r\nHost: x\r\n\
             Connection: close\r\n\r\n",
            url::form_urlencoded::byte_serialize(topic.as_bytes()).collect::<String>()
        )
    };
    assert!(raw(port, &q("unsubscribe", &topic)).contains(" 404 "));
    assert!(raw(port, &q("subscribe", "http://127.0.0.1:1/other")).contains(" 404 "));
    assert!(raw(port, &q("subscribe", &topic)).contains(" 404 ")); // verified already
                                                                   // A notification at a path no subscription has.
    let post = |path: &str, headers: &str, body: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}Content-Length: \
             {}\r\n\r\n{body}",
            body.len()
        )
    };
    assert!(raw(port, &post("/websub/nobody", "", "<urlset/>")).contains(" 404 "));
    // A 100 MB body: refused before it is read.
    let big = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 104857600\r\n\r\n"
    );
    assert!(raw(port, &big).contains(" 413 "));
    // A replayed old notification, validly signed: nothing older than the mirror's state.
    let old = format!(
        "<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
         xmlns:rs=\"http://www.openarchives.org/rs/terms/\"><rs:md capability=\"changelist\" \
         from=\"2026-03-01T00:00:00Z\"/><url><loc>{}</loc><rs:md change=\"deleted\" \
         datetime=\"2026-03-01T00:00:00Z\"/></url></urlset>",
        hub.url("/res/a")
    );
    let sig = {
        use hmac::{KeyInit, Mac};
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(old.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    };
    let replay = post(path, &format!("X-Hub-Signature: sha256={sig}\r\n"), &old);
    assert!(raw(port, &replay).contains(" 202 "));
    let said = f.wait_for("is not after the mirror's sync point", 1);
    assert_eq!(said.matches("catch-up queued").count(), queued, "{said}");
    assert!(current(&m).contains_key(&hub.url("/res/a")));

    // A proper push brings x.
    hub.post("/publish?alg=sha256");
    wait_for_state(&m, &hub.url("/res/x"), b"x\n", &f);

    // status shows the subscription.
    let f_said = f.wait_for("catch-up queued", queued + 1);
    let (status, _) = ok_on_mirror(&m, &["status"]);
    assert!(
        status.contains(&format!(
            "push        {topic} via hub {} (active)",
            hub.url("/hub")
        )),
        "{status}\n{f_said}"
    );
    let line = status.lines().find(|l| l.contains("push  ")).unwrap();
    assert!(line.contains("lease until 20"), "{line}");
    assert!(!line.contains("never"), "{line}");
    assert!(!status.contains(&secret), "{status}");

    // follow --stop: the hub verifies the unsubscription with the running follower.
    let out = rsmirror()
        .args(["follow", "--stop", "--mirror"])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("unsubscribe from"),
        "{}",
        stderr_of(&out)
    );
    f.wait_for("unsubscribed from", 1);
    assert!(!hub.http_subscribers().contains(&callback));
    // A delivery to the ended subscription: 410 Gone (a hub stops delivering).
    assert!(raw(port, &post(path, "", "<urlset/>")).contains(" 410 "));

    assert_eq!(f.signal(libc::SIGTERM), Some(0), "{}", f.said());
    assert_eq!(subscriptions(&m)[0].2, "ended");
    audit_clean(&m, &source);
}

/// SIGKILL while following; the source changes and the hub gives up on the dead callback; a
/// restart catches up from the Change Lists (the mirror equals the source, audit clean) and
/// renews the same subscription (same callback, same secret) instead of making another.
#[test]
#[cfg_attr(
    missing = "flask_websub",
    ignore = "flask-websub 0.4.1 and celery (PyPI) are missing (.ci/run installs them)"
)]
fn a_restart_after_sigkill_catches_up_what_the_hub_gave_up_on() {
    let hub = Hub::start();
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let source = hub.url("/capabilitylist.xml");
    let out = baseline(&source, &m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let port = free_port();
    let mut f = Follower::start(&m, port, &[]);
    f.wait_for("granted, renewal in", 1);
    f.wait_for("caught up", 1);
    wait_until_active(&m, &f);
    let before = subscriptions(&m);
    assert_eq!(f.signal(libc::SIGKILL), None);

    hub.change(
        &[
            ("a", "updated", "2026-04-02T00:00:00Z"),
            ("b", "deleted", "2026-04-02T00:00:01Z"),
            ("c", "created", "2026-04-02T00:00:02Z"),
        ],
        &[("a", b"a2\n"), ("c", b"c1\n")],
    );
    hub.tree.remove("b");
    // Nobody listens: flask-websub tries MAX_ATTEMPTS times and gives up.
    hub.post("/publish?alg=sha512");
    assert!(hub.http_subscribers().contains(&before[0].0));

    let f = Follower::start(&m, port, &[]);
    wait_for_state(&m, &hub.url("/res/c"), b"c1\n", &f);
    wait_for_state(&m, &hub.url("/res/a"), b"a2\n", &f);
    assert!(!current(&m).contains_key(&hub.url("/res/b")));
    f.wait_for("granted, renewal in", 1);
    let after = subscriptions(&m);
    assert_eq!(after.len(), 1);
    assert_eq!((&after[0].0, &after[0].1), (&before[0].0, &before[0].1));
    drop(f);
    audit_clean(&m, &source);
}

impl Hub {
    fn http_subscribers(&self) -> String {
        http("GET", &self.url("/subscribers"))
    }
}

/// websub.rocks' discovery and subscription cases for a subscriber, rebuilt with the same hub:
/// 100 (the hub and the topic from HTTP `Link` headers), 104 (the headers win over the
/// document, whose channel names a hub that does not exist), 200/203 (the topic is the
/// `rel="self"` the headers name, not the URL fetched), 201 and 202 (the source URL
/// redirects, temporarily or permanently; the headers of where it ends count).
#[test]
#[cfg_attr(
    missing = "flask_websub",
    ignore = "flask-websub 0.4.1 and celery (PyPI) are missing (.ci/run installs them)"
)]
fn discovery_by_link_headers_after_redirects_wins_over_the_document() {
    for start in [
        "/linked/capabilitylist.xml",
        "/redirect302/capabilitylist.xml",
        "/redirect301/capabilitylist.xml",
    ] {
        let hub = Hub::start_with("http://127.0.0.1:1/no-hub-here", &[]);
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m");
        let out = baseline(&hub.url(start), &m).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{start}: {}", stderr_of(&out));
        let f = Follower::start(&m, free_port(), &[]);
        let said = f.wait_for("granted, renewal in", 1);
        let topic = hub.url("/notification/changelist");
        assert!(
            said.contains(&format!("subscribed to {topic} at {}", hub.url("/hub"))),
            "{start}: {said}"
        );
        assert!(!said.contains("no-hub-here"), "{start}: {said}");
        // And what it pushes is applied.
        hub.change(
            &[("c", "created", "2026-04-02T00:00:00Z")],
            &[("c", b"c\n")],
        );
        hub.post("/publish?alg=sha384");
        wait_for_state(&m, &hub.url("/res/c"), b"c\n", &f);
    }
}

/// websub.rocks 204: a hub that denies the subscription (hub.mode=denied to the callback): it
/// is logged, answered 200, recorded as denied (status shows it), and the mirror is kept
/// current by a catch-up instead.
#[test]
#[cfg_attr(
    missing = "flask_websub",
    ignore = "flask-websub 0.4.1 and celery (PyPI) are missing (.ci/run installs them)"
)]
fn a_hub_that_denies_the_subscription_leaves_catch_ups() {
    let hub = Hub::start_with(&format!("{ORIGIN}/hub"), &["deny"]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let source = hub.url("/capabilitylist.xml");
    let out = baseline(&source, &m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    hub.change(
        &[("c", "created", "2026-04-02T00:00:00Z")],
        &[("c", b"c\n")],
    );
    let f = Follower::start(&m, free_port(), &[]);
    let said = f.wait_for("denied the subscription", 1);
    assert!(
        said.contains("this hub takes no subscriptions today"),
        "{said}"
    );
    assert!(!said.contains("granted"), "{said}");
    wait_for_state(&m, &hub.url("/res/c"), b"c\n", &f);
    let started = Instant::now();
    loop {
        let (status, _) = ok_on_mirror(&m, &["status"]);
        if status.contains("(denied)") {
            break;
        }
        assert!(started.elapsed() < WAIT, "{status}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
