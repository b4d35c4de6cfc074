//! A mirror whose objects are in an S3 bucket (`baseline --objects s3://BUCKET/PREFIX`),
//! against a real S3 server (SeaweedFS, `tests/it/seaweed.rs`): made, followed, read back,
//! exported and audited as one on disk; damage and strays in the bucket found and repaired;
//! refusals; a run killed mid-way finished by the next.

use crate::seaweed::{s3_error, Meddler, Seaweed, BUCKET};
use crate::server::TestServer;
use crate::support::*;
use sha2::Digest as _;
use std::path::Path;

const T0: &str = "2026-03-01T00:00:00Z";

/// r1..r5 listed at T0, an (empty) open Change List.
fn state_a() -> Tree {
    let t = Tree::new();
    for i in 1..=5 {
        t.put(
            &format!("r{i}"),
            format!("resource {i}, first version\n").as_bytes(),
        );
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3", "r4", "r5"]);
    t.change_list("changelist.xml", T0, None, &[]);
    t
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// `rsmirror ARGS --mirror M` with the bucket's settings.
fn run(sw: &Seaweed, mirror: &Path, args: &[&str]) -> std::process::Output {
    let mut c = rsmirror();
    sw.env(&mut c);
    c.args(args).arg("--mirror").arg(mirror).output().unwrap()
}

/// 60 resources of 4 KiB, each answered 40 ms late: (source files, server, Resource List URL).
fn slow_source() -> (tempfile::TempDir, TestServer, String) {
    let src = tempfile::tempdir().unwrap();
    generate_source(src.path(), 60, 4096);
    let srv = TestServer::start(src.path());
    srv.set_delay(std::time::Duration::from_millis(40));
    let list = srv.url("/resourcelist.xml");
    (src, srv, list)
}

/// A baseline of `list` into `s3://BUCKET/PREFIX` with `args`, started in the background (its
/// stderr piped), handed back once `uploaded` objects are in the bucket.
fn baseline_under_way(
    sw: &Seaweed,
    list: &str,
    mirror: &Path,
    prefix: &str,
    args: &[&str],
    uploaded: usize,
) -> std::process::Child {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .env("AWS_ACCESS_KEY_ID", crate::seaweed::ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", crate::seaweed::SECRET_KEY)
        .env("AWS_ENDPOINT_URL", &sw.endpoint)
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_CA_BUNDLE")
        .args([
            "baseline",
            list,
            "--objects",
            &format!("s3://{BUCKET}/{prefix}"),
        ])
        .args(args)
        .arg("--mirror")
        .arg(mirror)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while sw.keys(&format!("{prefix}/objects/")).len() < uploaded {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "nothing uploaded"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child
}

/// `out` ended with exit `code`, its report saying `words`.
fn exits_saying(out: &std::process::Output, code: i32, words: &str) {
    let said = stderr_of(out);
    assert_eq!(out.status.code(), Some(code), "{said}");
    assert!(said.contains(words), "{words}: {said}");
}

fn ok(sw: &Seaweed, mirror: &Path, args: &[&str]) -> std::process::Output {
    let out = run(sw, mirror, args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
    out
}

/// The objects under `PREFIX/objects/sha256/`, each checked to hold the bytes its name says.
fn objects_in(sw: &Seaweed, prefix: &str) -> Vec<String> {
    let keys = sw.keys(&format!("{prefix}/objects/sha256/"));
    for key in &keys {
        let name = key.rsplit('/').next().unwrap();
        let bytes = sw.get(key).unwrap();
        assert_eq!(hex::encode(sha2::Sha256::digest(&bytes)), name, "{key}");
        assert_eq!(
            key,
            &format!("{prefix}/objects/sha256/{}/{name}", &name[..2])
        );
    }
    keys
}

/// [`assert_consistent`] for a mirror whose objects are in the bucket under `prefix`: the
/// catalog whole, every version's object there with the bytes its name and length say.
fn consistent_in_bucket(sw: &Seaweed, mirror: &Path, prefix: &str) {
    let conn = rusqlite::Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let ic: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ic, "ok");
    let rows: Vec<(String, i64)> = conn
        .prepare("SELECT sha256_hex, length_bytes FROM versions WHERE sha256_hex IS NOT NULL")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    for (sha, len) in rows {
        let key = format!("{prefix}/objects/sha256/{}/{sha}", &sha[..2]);
        let bytes = sw
            .get(&key)
            .unwrap_or_else(|| panic!("{key} is not in the bucket"));
        assert_eq!(bytes.len() as i64, len, "{key}");
        assert_eq!(hex::encode(sha2::Sha256::digest(&bytes)), sha, "{key}");
    }
}

/// No object file in the mirror folder.
fn no_local_objects(mirror: &Path) {
    let local = mirror.join("objects");
    assert!(
        !local.exists() || walk_files(&local).is_empty(),
        "objects on local disk: {:?}",
        walk_files(&local)
    );
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_mirror_in_a_bucket_is_made_followed_read_back_and_audited() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let cap = srv.url("/capabilitylist.xml");
    let out = ok(
        &sw,
        &m,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/archive/one"),
            "--json",
        ],
    );
    assert_eq!(json_of(&out)["created"], 5);
    no_local_objects(&m);
    assert_eq!(objects_in(&sw, "archive/one").len(), 5);
    let status = json_of(&ok(&sw, &m, &["status", "--json"]));
    assert_eq!(status["objects_in"], format!("s3://{BUCKET}/archive/one"));
    assert_eq!(status["objects"], 5);
    let (text, _) = {
        let out = ok(&sw, &m, &["status"]);
        (stdout_of(&out), ())
    };
    assert!(
        text.contains(&format!("in s3://{BUCKET}/archive/one")),
        "{text}"
    );

    // The source changes; the incremental follows it into the bucket, no flag needed.
    t.put("r1", b"resource 1, second version\n");
    t.put("r6", b"resource 6, new\n");
    t.remove("r2");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "updated", "2026-03-01T01:00:00Z"),
            ("r6", "created", "2026-03-01T02:00:00Z"),
            ("r2", "deleted", "2026-03-01T03:00:00Z"),
        ],
    );
    t.resource_list("2026-03-01T04:00:00Z", &["r1", "r3", "r4", "r5", "r6"]);
    let s = json_of(&ok(&sw, &m, &["incremental", "--json"]));
    assert_eq!(
        (
            s["created"].as_u64(),
            s["updated"].as_u64(),
            s["deleted"].as_u64()
        ),
        (Some(1), Some(1), Some(1)),
        "{s}"
    );
    no_local_objects(&m);
    // Every version's bytes stay: seven objects, the first r1 and r2 among them.
    assert_eq!(objects_in(&sw, "archive/one").len(), 7);
    let fresh = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), fresh.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(current(&m), current(fresh.path()));
    consistent_in_bucket(&sw, &m, "archive/one");

    // A baseline again finds every object in the bucket: nothing fetched, nothing stored.
    srv.clear_requests();
    let s = json_of(&ok(&sw, &m, &["baseline", &cap, "--json"]));
    assert_eq!(
        (s["created"].as_u64(), s["updated"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    assert!(
        !srv.requests().iter().any(|r| r.path.contains("/res/")),
        "a resource was fetched again"
    );

    // Read back and exported from the bucket, byte for byte.
    let out = ok(&sw, &m, &["cat", &format!("{}/res/r1", srv.base())]);
    assert_eq!(out.stdout, b"resource 1, second version\n");
    // r2 is deleted now: its first version is still there.
    let conn = rusqlite::Connection::open(m.join("catalog.sqlite")).unwrap();
    let first: i64 = conn
        .query_row(
            "SELECT v.id FROM versions v JOIN resources r ON r.id = v.resource_id
             WHERE r.uri = ?1 AND v.change = 'created'",
            [format!("{}/res/r2", srv.base())],
            |r| r.get(0),
        )
        .unwrap();
    let out = ok(
        &sw,
        &m,
        &[
            "cat",
            &format!("{}/res/r2", srv.base()),
            "--version",
            &first.to_string(),
        ],
    );
    assert_eq!(out.stdout, b"resource 2, first version\n");
    let tree = dir.path().join("tree");
    ok(&sw, &m, &["export", "tree", tree.to_str().unwrap()]);
    let host = srv.base().trim_start_matches("http://").replace(':', "%3A");
    let r6 = walk_files(&tree)
        .into_iter()
        .find(|p| p.ends_with("res/r6"))
        .unwrap_or_else(|| panic!("no r6 under {} ({host})", tree.display()));
    assert_eq!(std::fs::read(r6).unwrap(), b"resource 6, new\n");

    // Audited at every level: clean.
    for level in ["presence", "size", "fixity"] {
        let out = run(&sw, &m, &["audit", "--offline", "--level", level, "-q"]);
        assert_eq!(out.status.code(), Some(0), "{level}: {}", stderr_of(&out));
    }
    let out = run(&sw, &m, &["audit", "--offline", "--all-versions", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    for slice in ["1/2", "2/2"] {
        let out = run(&sw, &m, &["audit", "--offline", "--sample", slice, "-q"]);
        assert_eq!(out.status.code(), Some(0), "{slice}: {}", stderr_of(&out));
    }
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn damage_and_strays_in_the_bucket_are_found_and_repaired() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let cap = srv.url("/capabilitylist.xml");
    ok(
        &sw,
        &m,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/m"),
            "-q",
        ],
    );
    let r3 = current(&m)[&format!("{}/res/r3", srv.base())].clone();
    let r3_key = format!("m/objects/sha256/{}/{r3}", &r3[..2]);
    // Another client overwrites an object (same length), and leaves two files no version names.
    sw.put(&r3_key, b"resource 3, FIRST version\n");
    let stray = format!("m/objects/sha256/ab/ab{}", "0".repeat(62));
    sw.put(&stray, b"not named by any version\n");
    sw.put("m/objects/loose.txt", b"not where an object belongs\n");

    // Presence and size see nothing wrong with r3; the re-hash does.
    let out = run(
        &sw,
        &m,
        &["audit", "--offline", "--level", "size", "--json"],
    );
    let doc = json_of(&out);
    assert_eq!(out.status.code(), Some(1), "{doc}");
    let text = doc.to_string();
    assert!(text.contains("stray-object"), "{text}");
    assert!(!text.contains("\"corrupt\""), "{text}");
    let out = run(&sw, &m, &["audit", "--offline", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let text = json_of(&out).to_string();
    assert!(text.contains("corrupt") && text.contains(&r3), "{text}");
    assert!(
        text.contains(&format!("objects/sha256/ab/ab{}", "0".repeat(62))),
        "{text}"
    );
    assert!(text.contains("objects/loose.txt"), "{text}");

    // Repaired from the source: the damaged bytes and the strays go under quarantine/ in the
    // bucket, never deleted; the proven bytes in place.
    let out = run(&sw, &m, &["repair"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(sw.get(&r3_key).unwrap(), b"resource 3, first version\n");
    assert_eq!(sw.get(&stray), None);
    assert_eq!(sw.get("m/objects/loose.txt"), None);
    let quarantined = sw.keys("m/quarantine/");
    let held: Vec<Vec<u8>> = quarantined
        .iter()
        .filter(|k| !k.ends_with(".json"))
        .map(|k| sw.get(k).unwrap())
        .collect();
    for bytes in [
        &b"resource 3, FIRST version\n"[..],
        b"not named by any version\n",
        b"not where an object belongs\n",
    ] {
        assert!(held.iter().any(|h| h == bytes), "{quarantined:?}");
    }
    no_local_objects(&m);
    let out = run(&sw, &m, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn the_bucket_is_chosen_once_and_refusals_are_clear() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let cap = srv.url("/capabilitylist.xml");

    // A mirror with objects in its folder keeps them there.
    let local = dir.path().join("local");
    ok(&sw, &local, &["baseline", &cap, "-q"]);
    let out = run(
        &sw,
        &local,
        &["baseline", &cap, "--objects", &format!("s3://{BUCKET}/x")],
    );
    exits_saying(&out, 2, "cannot be moved");
    assert!(sw.keys("x/").is_empty());

    // A bucket mirror keeps its bucket: another is refused, the same one is fine.
    let m = dir.path().join("m");
    ok(
        &sw,
        &m,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/m"),
            "-q",
        ],
    );
    let out = run(
        &sw,
        &m,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/other"),
        ],
    );
    exits_saying(&out, 2, &format!("are in s3://{BUCKET}/m"));
    ok(
        &sw,
        &m,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/m/"),
            "-q",
        ],
    );

    // Not a bucket location; no such bucket; no credentials; wrong credentials.
    let bad = dir.path().join("bad");
    let out = run(&sw, &bad, &["baseline", &cap, "--objects", "s3://UPPER/x"]);
    exits_saying(&out, 2, "not an S3 bucket name");
    let out = run(
        &sw,
        &bad,
        &["baseline", &cap, "--objects", "s3://no-such-bucket/x"],
    );
    exits_saying(&out, 5, "no such bucket");
    let mut c = rsmirror();
    sw.env(&mut c)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY");
    let out = c
        .args([
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/y"),
            "--mirror",
        ])
        .arg(&bad)
        .output()
        .unwrap();
    exits_saying(&out, 5, "AWS_ACCESS_KEY_ID");
    let mut c = rsmirror();
    sw.env(&mut c).env("AWS_SECRET_ACCESS_KEY", "wrong");
    let out = c
        .args([
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/y"),
            "--mirror",
        ])
        .arg(&bad)
        .output()
        .unwrap();
    exits_saying(&out, 5, "SignatureDoesNotMatch");
    // The secret is never printed, nor kept in the catalog.
    assert!(!stderr_of(&out).contains("wrong"), "{}", stderr_of(&out));

    // A bucket that refuses this client's writes: the run fails, names the refusal, and
    // records no version whose object is not in the bucket.
    let ro = dir.path().join("ro");
    let mut c = rsmirror();
    sw.reader_env(&mut c);
    let out = c
        .args([
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/ro"),
            "--mirror",
        ])
        .arg(&ro)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("AccessDenied"),
        "{}",
        stderr_of(&out)
    );
    assert!(current(&ro).is_empty());
    assert!(sw.keys("ro/").is_empty());
    // With a writer's keys the same command completes.
    ok(&sw, &ro, &["baseline", &cap, "-q"]);
    assert_eq!(current(&ro).len(), 5);
    assert_eq!(objects_in(&sw, "ro").len(), 5);
    let catalog = std::fs::read(ro.join("catalog.sqlite")).unwrap();
    let catalog = String::from_utf8_lossy(&catalog);
    assert!(!catalog.contains(crate::seaweed::SECRET_KEY));
    assert!(!catalog.contains(crate::seaweed::ACCESS_KEY));
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_baseline_into_a_bucket_killed_mid_way_is_finished_by_the_next() {
    use std::os::unix::process::ExitStatusExt;
    let sw = Seaweed::start();
    let src = tempfile::tempdir().unwrap();
    // 8 KiB each: a body libcurl would have sent `Expect: 100-continue` with (see store::bucket).
    generate_source(src.path(), 40, 8192);
    let srv = TestServer::start(src.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let list = srv.url("/resourcelist.xml");
    let mut c = rsmirror();
    sw.env(&mut c).env("RSMIRROR_KILL_AT", "object.placed:17");
    let out = c
        .args([
            "baseline",
            &list,
            "--objects",
            &format!("s3://{BUCKET}/k"),
            "--mirror",
        ])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(6), "{}", stderr_of(&out));
    let uploaded = sw.keys("k/objects/").len();
    assert!(
        uploaded >= 17,
        "{uploaded} objects in the bucket before the kill"
    );
    assert!(current(&m).len() < 40);
    // The objects of versions not committed are there, named by none: the next run finds each
    // by a create-only upload (412), checks its bytes and keeps it.
    let s = json_of(&ok(&sw, &m, &["baseline", &list, "--json"]));
    assert_eq!(current(&m).len(), 40, "{s}");
    assert_eq!(objects_in(&sw, "k").len(), 40);
    no_local_objects(&m);
    let out = run(&sw, &m, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_large_object_goes_up_in_checksummed_parts_and_is_never_overwritten() {
    let sw = Seaweed::start();
    // Objects of 12 MiB: three parts of 5 MiB (the smallest S3 allows), the last one shorter.
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    generate_source(one.path(), 1, 12 << 20);
    generate_source(two.path(), 2, 12 << 20);
    let srv = TestServer::start(one.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let list = srv.url("/resourcelist.xml");
    let part = (5u64 << 20).to_string();
    let baseline = |extra: &[&str]| {
        let mut c = rsmirror();
        sw.env(&mut c).env("RSMIRROR_S3_PART_SIZE", &part);
        c.args(["baseline", &list])
            .args(extra)
            .arg("--mirror")
            .arg(&m)
            .output()
            .unwrap()
    };
    let out = baseline(&["--objects", &format!("s3://{BUCKET}/big")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let keys = objects_in(&sw, "big");
    assert_eq!(keys.len(), 1);
    // S3's ETag of a multipart object ends in its number of parts.
    let etag = sw.head_etag(&keys[0]);
    assert!(etag.ends_with("-3\""), "{etag}");
    no_local_objects(&m);
    let out = run(&sw, &m, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // Someone puts other bytes where the source's next resource will go: its upload finds them,
    // fails that resource, and never overwrites them.
    let next = hex::encode(sha2::Sha256::digest(
        std::fs::read(two.path().join("res/000001")).unwrap(),
    ));
    let planted = format!("big/objects/sha256/{}/{next}", &next[..2]);
    sw.put(&planted, b"other bytes under this name\n");
    srv.set_root(two.path());
    let out = baseline(&[]);
    exits_saying(&out, 3, "holds different bytes under this name");
    assert_eq!(sw.get(&planted).unwrap(), b"other bytes under this name\n");
    assert_eq!(current(&m).len(), 1);
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_new_mirror_wants_a_prefix_of_its_own() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let cap = srv.url("/capabilitylist.xml");
    ok(
        &sw,
        &dir.path().join("a"),
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/shared"),
            "-q",
        ],
    );
    // A second mirror there would take the first one's objects for strays (and quarantine them).
    let b = dir.path().join("b");
    let out = run(
        &sw,
        &b,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/shared"),
        ],
    );
    exits_saying(&out, 2, "already holds objects");
    assert!(current(&b).is_empty());
    ok(
        &sw,
        &b,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/shared-b"),
            "-q",
        ],
    );
    assert_eq!(objects_in(&sw, "shared").len(), 5);
}

/// `ls -l` of a mirror (no network; the objects' digests and lengths as the catalog says).
fn listing(sw: &Seaweed, mirror: &Path) -> String {
    stdout_of(&ok(sw, mirror, &["ls", "-l"]))
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_second_machine_attaches_and_one_writer_holds_the_lease() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let cap = srv.url("/capabilitylist.xml");
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    ok(
        &sw,
        &a,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/p"),
            "-q",
        ],
    );
    // The run sent its catalog copy (and released its lease).
    let copies = sw.keys("p/catalog/");
    assert_eq!(copies.len(), 2, "{copies:?}");
    assert!(copies.iter().any(|k| k.ends_with(".sqlite.zst.json")));
    assert_eq!(sw.get("p/lease"), None);

    // Another machine's folder, from the bucket alone: the same mirror.
    let mut cmd = rsmirror();
    sw.env(&mut cmd);
    let out = cmd
        .args(["attach", &format!("s3://{BUCKET}/p"), "--mirror"])
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("attached"), "{}", stdout_of(&out));
    assert!(!b.join("objects").exists());
    assert_eq!(listing(&sw, &a), listing(&sw, &b));
    let out = run(&sw, &b, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let status = json_of(&ok(&sw, &b, &["status", "--json"]));
    assert_eq!(status["objects_in"], format!("s3://{BUCKET}/p"));
    // Attach makes a new folder only.
    let mut cmd = rsmirror();
    sw.env(&mut cmd);
    let out = cmd
        .args(["attach", &format!("s3://{BUCKET}/p"), "--mirror"])
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));

    // While the first machine writes, the second is refused (exit 6), naming the holder.
    srv.set_delay(std::time::Duration::from_millis(1500));
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"));
    first
        .env("AWS_ACCESS_KEY_ID", crate::seaweed::ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", crate::seaweed::SECRET_KEY)
        .env("AWS_ENDPOINT_URL", &sw.endpoint)
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_CA_BUNDLE")
        .args(["baseline", &cap, "-q", "--mirror"])
        .arg(&a);
    let mut first = first.spawn().unwrap();
    let started = std::time::Instant::now();
    while sw.get("p/lease").is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "no lease taken"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = run(&sw, &b, &["baseline", &cap]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr_of(&out));
    let said = stderr_of(&out);
    assert!(said.contains("holds the mirror's lease"), "{said}");
    assert!(said.contains(&a.display().to_string()), "{said}");
    assert!(first.wait().unwrap().success());
    srv.set_delay(std::time::Duration::ZERO);
    assert_eq!(sw.get("p/lease"), None);

    // The first machine wrote since: the second's catalog is behind, and it may not write (nor
    // send its copy).
    let sent = sw.keys("p/catalog/");
    let out = run(&sw, &b, &["baseline", &cap]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("attach"), "{}", stderr_of(&out));
    assert_eq!(
        sw.get("p/lease"),
        None,
        "the refused run let go of the lease"
    );
    assert_eq!(sw.keys("p/catalog/"), sent);

    // A third folder attaches the newest copy and writes; then a lease left by a writer that
    // died long ago is taken over, and a live one is not.
    let mut cmd = rsmirror();
    sw.env(&mut cmd);
    let out = cmd
        .args(["attach", &format!("s3://{BUCKET}/p"), "--mirror"])
        .arg(&c)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(listing(&sw, &a), listing(&sw, &c));
    ok(&sw, &c, &["baseline", &cap, "-q"]);
    let lease = |renewed: &str| {
        serde_json::json!({
            "host": "elsewhere", "pid": 4242, "mirror": "/srv/mirror", "command": "incremental",
            "since": "2020-01-01T00:00:00Z", "renewed": renewed,
        })
        .to_string()
    };
    sw.put(
        "p/lease",
        lease(&jiff::Timestamp::now().to_string()).as_bytes(),
    );
    let out = run(&sw, &c, &["baseline", &cap]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("elsewhere"), "{}", stderr_of(&out));
    sw.put("p/lease", lease("2020-01-01T00:00:00Z").as_bytes());
    let out = run(&sw, &c, &["baseline", &cap]);
    exits_saying(&out, 0, "took over the stale lease");
    assert_eq!(sw.get("p/lease"), None);
    let out = run(&sw, &c, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_bucket_that_goes_away_mid_run_stops_it_and_the_next_run_completes() {
    let mut sw = Seaweed::start();
    let (_src, srv, list) = slow_source();
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let first = baseline_under_way(&sw, &list, &m, "n", &[], 5);
    // The bucket's server dies mid-run: the run stops (every other upload would fail too),
    // with the reason, and commits no version whose object is not in the bucket.
    sw.stop();
    let out = first.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(5), "{said}");
    assert!(said.contains("could not go to the bucket"), "{said}");
    let committed = current(&m).len();
    assert!(committed < 60, "{committed}");
    sw.start_again();
    sw.wait_readable("n/");
    consistent_in_bucket(&sw, &m, "n");
    // Once it is back, the same command completes.
    srv.set_delay(std::time::Duration::ZERO);
    ok(&sw, &m, &["baseline", &list, "-q"]);
    assert_eq!(current(&m).len(), 60);
    consistent_in_bucket(&sw, &m, "n");
    let out = run(&sw, &m, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_bucket_mirror_is_repaired_from_another_copy_offline() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let cap = srv.url("/capabilitylist.xml");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    ok(
        &sw,
        &a,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/one"),
            "-q",
        ],
    );
    ok(
        &sw,
        &b,
        &[
            "baseline",
            &cap,
            "--objects",
            &format!("s3://{BUCKET}/two"),
            "-q",
        ],
    );
    let r4 = current(&a)[&format!("{}/res/r4", srv.base())].clone();
    let key = format!("one/objects/sha256/{}/{r4}", &r4[..2]);
    let good = sw.get(&key).unwrap();
    sw.put(&key, b"not what was fetched\n");
    // Offline, from the other mirror (its objects in its own prefix): restored, proven.
    let b_arg = b.display().to_string();
    let out = run(
        &sw,
        &a,
        &["repair", "--from-mirror", &b_arg, "--offline", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(json_of(&out)["restored_from_mirror"], 1);
    assert_eq!(sw.get(&key).unwrap(), good);
    let out = run(&sw, &a, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // A folder mirror is repaired from a bucket mirror too.
    let local = dir.path().join("local");
    ok(&sw, &local, &["baseline", &cap, "-q"]);
    let path = local.join(format!("objects/sha256/{}/{r4}", &r4[..2]));
    std::fs::remove_file(&path).unwrap();
    let out = run(
        &sw,
        &local,
        &["repair", "--from-mirror", &b_arg, "--offline"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(std::fs::read(&path).unwrap(), good);
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn virtual_host_addressing_reaches_the_same_bucket() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let port = sw.endpoint.rsplit(':').next().unwrap().to_string();
    let mut c = rsmirror();
    sw.env(&mut c)
        .env("AWS_ENDPOINT_URL", format!("http://localhost:{port}"))
        .env("RSMIRROR_S3_ADDRESSING_STYLE", "virtual");
    let out = c
        .args(["baseline", &srv.url("/capabilitylist.xml"), "--objects"])
        .arg(format!("s3://{BUCKET}/vh"))
        .arg("--mirror")
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // Read back path-style: the same objects, where the layout says.
    assert_eq!(objects_in(&sw, "vh").len(), 5);
    consistent_in_bucket(&sw, &m, "vh");
    let mut c = rsmirror();
    sw.env(&mut c)
        .env("AWS_ENDPOINT_URL", format!("http://localhost:{port}"))
        .env("RSMIRROR_S3_ADDRESSING_STYLE", "nonsense");
    let out = c
        .args(["audit", "--offline", "--mirror"])
        .arg(&m)
        .output()
        .unwrap();
    exits_saying(&out, 5, "RSMIRROR_S3_ADDRESSING_STYLE");
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_baseline_into_a_bucket_sigkilled_mid_way_loses_nothing() {
    let sw = Seaweed::start();
    let (_src, srv, list) = slow_source();
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let mut first = baseline_under_way(&sw, &list, &m, "s", &["-q"], 10);
    // SIGKILL: no handler, no clean-up, the lease left in the bucket.
    first.kill().unwrap();
    first.wait().unwrap();
    consistent_in_bucket(&sw, &m, "s");
    srv.set_delay(std::time::Duration::ZERO);
    ok(&sw, &m, &["baseline", &list, "-q"]);
    assert_eq!(current(&m).len(), 60);
    consistent_in_bucket(&sw, &m, "s");
    no_local_objects(&m);
    let out = run(&sw, &m, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// Issue 66, 2: nightly audits in the writer's own folder (each makes a local catalog copy
/// the bucket never sees, and only the newest three stay) never lock that writer out; a
/// folder another machine wrote past is still refused.
#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn audits_in_the_writers_folder_never_lock_it_out() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let cap = srv.url("/capabilitylist.xml");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let objects = format!("s3://{BUCKET}/nightly");
    ok(&sw, &a, &["baseline", &cap, "--objects", &objects, "-q"]);
    for _ in 0..4 {
        ok(&sw, &a, &["audit", "--offline", "-q"]);
    }
    ok(&sw, &a, &["repair", "-n", "-q"]);
    ok(&sw, &a, &["incremental", "-q"]);

    // Another folder attaches, audits as often, and writes: the first is then behind.
    let mut cmd = rsmirror();
    sw.env(&mut cmd);
    let out = cmd
        .args(["attach", &objects, "--mirror"])
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    for _ in 0..4 {
        ok(&sw, &b, &["audit", "--offline", "-q"]);
    }
    ok(&sw, &b, &["incremental", "-q"]);
    exits_saying(
        &run(&sw, &a, &["incremental", "-q"]),
        5,
        "another machine wrote to the mirror since",
    );
}

/// Issue 66, 2: a run the bucket refuses (the wrong secret) is a run of the mirror's history:
/// recorded `failed` with the bucket's words, so `status` exits 1 naming it and `log --run`
/// says why; a dry run's refusal records nothing; the next run with the right credentials
/// settles it, and the refusals lock no one out.
#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_run_the_bucket_refuses_is_recorded_and_status_says_so() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let cap = srv.url("/capabilitylist.xml");
    let objects = format!("s3://{BUCKET}/refused");
    ok(&sw, &m, &["baseline", &cap, "--objects", &objects, "-q"]);
    let runs_before = runs(&m).len();
    let refused = |args: &[&str]| {
        let mut cmd = rsmirror();
        sw.env(&mut cmd)
            .env("AWS_SECRET_ACCESS_KEY", "not-the-secret");
        cmd.args(args).arg("--mirror").arg(&m).output().unwrap()
    };
    let out = refused(&["repair", "-n", "-q"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr_of(&out));
    assert_eq!(runs(&m).len(), runs_before, "a dry run records nothing");
    for _ in 0..4 {
        let out = refused(&["incremental", "-q"]);
        assert_eq!(out.status.code(), Some(5), "{}", stderr_of(&out));
    }
    let recorded = runs(&m);
    assert_eq!(recorded.len(), runs_before + 4);
    let (id, command, outcome, exit) = recorded.last().unwrap().clone();
    assert_eq!(
        (command.as_str(), outcome.as_deref(), exit),
        ("incremental", Some("failed"), Some(5))
    );
    let status = run(&sw, &m, &["status"]);
    assert_eq!(status.status.code(), Some(1), "{}", stdout_of(&status));
    let said = stdout_of(&status);
    assert!(
        said.contains(&format!(
            "the last incremental of the whole mirror ended failed (exit 5): rsmirror log --run {id}"
        )),
        "{said}"
    );
    let log = ok(&sw, &m, &["log", "--run", &id.to_string()]);
    let said = stdout_of(&log);
    assert!(
        said.contains("the bucket refused the run") && said.contains(&objects),
        "{said}"
    );

    // The right credentials: the writer is not locked out, and its run settles the refusals.
    ok(&sw, &m, &["incremental", "-q"]);
    let status = run(&sw, &m, &["status"]);
    assert_eq!(status.status.code(), Some(0), "{}", stdout_of(&status));
}

/// Every run of the mirror at `m`: (id, command, outcome, exit code), oldest first.
fn runs(m: &Path) -> Vec<(i64, String, Option<String>, Option<i64>)> {
    let conn = rusqlite::Connection::open(m.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, command, outcome, exit_code FROM runs ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// `rsmirror ARGS --mirror M` with the bucket's settings, through `meddler`.
fn run_through(
    sw: &Seaweed,
    meddler: &Meddler,
    mirror: &Path,
    args: &[&str],
) -> std::process::Output {
    let mut c = rsmirror();
    sw.env(&mut c).env("AWS_ENDPOINT_URL", &meddler.endpoint);
    c.args(args).arg("--mirror").arg(mirror).output().unwrap()
}

/// A request for an object (`PUT` or `GET` under `objects/sha256/`).
fn of_an_object(method: &str) -> impl Fn(&str) -> bool + '_ {
    move |line| line.starts_with(&format!("{method} /")) && line.contains("/objects/sha256/")
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_bucket_that_asks_for_time_gets_it_and_the_run_goes_on() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    // The first upload of an object, and the first read of one, are answered 503 with
    // `Retry-After: 1` (as S3 says SlowDown); every other request goes to the bucket.
    let mut refused = (false, false);
    let meddler = Meddler::start(
        &sw.endpoint,
        Box::new(move |line, before| {
            let first = match line.split(' ').next() {
                Some("PUT") => &mut refused.0,
                Some("GET") => &mut refused.1,
                _ => return None,
            };
            if *first || before > 0 || !line.contains("/objects/sha256/") {
                return None;
            }
            *first = true;
            Some(s3_error(503, &["Retry-After: 1"], "SlowDown"))
        }),
    );
    let cap = srv.url("/capabilitylist.xml");
    let objects = format!("s3://{BUCKET}/asks");
    let out = run_through(
        &sw,
        &meddler,
        &m,
        &["baseline", &cap, "--objects", &objects],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(objects_in(&sw, "asks").len(), 5);
    consistent_in_bucket(&sw, &m, "asks");
    // Five objects, six uploads: the first, refused, went again after the second it asked
    // for (the first backoff alone is 0.4 s; a sleep is never shorter than asked).
    let puts = meddler.asked_when(of_an_object("PUT"));
    assert_eq!(puts.len(), 6, "{puts:?}");
    let again: Vec<_> = puts.iter().filter(|(p, _)| *p == puts[0].0).collect();
    assert_eq!(again.len(), 2, "{puts:?}");
    assert!(again[1].1 - again[0].1 >= std::time::Duration::from_secs(1));

    let out = run_through(
        &sw,
        &meddler,
        &m,
        &["cat", &format!("{}/res/r1", srv.base())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(out.stdout, b"resource 1, first version\n");
    let gets = meddler.asked_when(of_an_object("GET"));
    assert_eq!(gets.len(), 2, "the read went again: {gets:?}");
    assert_eq!(gets[0].0, gets[1].0);
    assert!(gets[1].1 - gets[0].1 >= std::time::Duration::from_secs(1));
}

#[test]
#[cfg_attr(
    missing = "weed",
    ignore = "SeaweedFS (weed) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_bucket_that_asks_for_more_time_than_rsmirror_waits_stops_the_run_saying_so() {
    let sw = Seaweed::start();
    let t = state_a();
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    // Every upload of an object is answered 503 with a day's `Retry-After`.
    let meddler = Meddler::start(
        &sw.endpoint,
        Box::new(|line, _| {
            of_an_object("PUT")(line).then(|| s3_error(503, &["Retry-After: 86400"], "SlowDown"))
        }),
    );
    let cap = srv.url("/capabilitylist.xml");
    let objects = format!("s3://{BUCKET}/waits");
    let started = std::time::Instant::now();
    let out = run_through(
        &sw,
        &meddler,
        &m,
        &["baseline", &cap, "--objects", &objects],
    );
    exits_saying(
        &out,
        5,
        "; it asked to be tried again in 86400 s (Retry-After), longer than rsmirror waits (120 s)",
    );
    exits_saying(&out, 5, &format!("PUT s3://{BUCKET}/waits/objects/sha256/"));
    // Not one upload went again, nor was a day waited for (a bound far beyond any slowness).
    let puts = meddler.asked(of_an_object("PUT"));
    let mut distinct = puts.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(puts.len(), distinct.len(), "{puts:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(300));
    assert!(objects_in(&sw, "waits").is_empty());
}
