//! Shared pieces of the black-box tests: running the real binary, and reading a mirror back.

#![allow(dead_code)]

use assert_cmd::Command;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::path::Path;

/// The real binary, with a short timeout and quick retries so failures are fast.
pub fn rsmirror() -> Command {
    let mut c = Command::cargo_bin("rsmirror").expect("binary built");
    // Every option may come from an RSMIRROR_* variable: none of the caller's reaches a test.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("RSMIRROR_") {
            c.env_remove(name);
        }
    }
    c.timeout(std::time::Duration::from_secs(120));
    c
}

/// `rsmirror baseline SOURCE --mirror DIR`.
pub fn baseline(source: &str, mirror: &Path) -> Command {
    let mut c = rsmirror();
    c.args(["baseline", source, "--mirror"]).arg(mirror);
    c
}

/// The current state of a mirror: URI -> sha256 of its current version (tombstones omitted).
pub fn current(mirror: &Path) -> BTreeMap<String, String> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT r.uri, v.sha256_hex FROM resources r JOIN versions v ON v.id = r.current_version_id
             WHERE v.change != 'deleted'",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// URIs whose current version is a tombstone.
pub fn tombstoned(mirror: &Path) -> Vec<String> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT r.uri FROM resources r JOIN versions v ON v.id = r.current_version_id
             WHERE v.change = 'deleted' ORDER BY r.uri",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// Number of version rows.
pub fn version_count(mirror: &Path) -> i64 {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    conn.query_row("SELECT count(*) FROM versions", [], |r| r.get(0))
        .unwrap()
}

/// The definition of the index of versions by object, as the catalog holds it; `None` when
/// the catalog has none (a first baseline drops it while loading and builds it at the end).
pub fn object_index(mirror: &Path) -> Option<String> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    conn.query_row(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'versions_by_object'",
        [],
        |r| r.get(0),
    )
    .ok()
}

/// The index of versions by object exactly as `schema.sql` defines it.
pub const OBJECT_INDEX_SQL: &str = "CREATE INDEX versions_by_object ON versions(sha256_hex)";

/// The sync point of the only collection: (at, anchored).
pub fn sync_point(mirror: &Path) -> Option<(Option<String>, bool)> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    conn.query_row("SELECT at, anchored FROM sync_points", [], |r| {
        Ok((r.get(0)?, r.get::<_, i64>(1)? != 0))
    })
    .ok()
}

/// Everything a healthy mirror promises: the catalog passes integrity_check, every version's
/// object exists and hashes to its name, nothing in staging is referenced.
pub fn assert_consistent(mirror: &Path) {
    use sha2::Digest as _;
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let ic: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ic, "ok");
    let mut stmt = conn
        .prepare("SELECT sha256_hex, length_bytes FROM versions WHERE sha256_hex IS NOT NULL")
        .unwrap();
    let rows: Vec<(String, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    for (sha, len) in rows {
        let path = mirror.join("objects/sha256").join(&sha[0..2]).join(&sha);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(bytes.len() as i64, len, "{}", path.display());
        assert_eq!(
            hex::encode(sha2::Sha256::digest(&bytes)),
            sha,
            "{}",
            path.display()
        );
        assert!(!path.starts_with(mirror.join("staging")));
    }
    let referenced_staging: i64 = conn
        .query_row(
            "SELECT count(*) FROM versions WHERE fetched_from LIKE '%/staging/%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(referenced_staging, 0);
}

/// Problems recorded for the last run: (uri, class, reason).
pub fn last_run_problems(mirror: &Path) -> Vec<(String, String, String)> {
    let conn = Connection::open(mirror.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT uri, class, reason FROM run_problems WHERE run_id = (SELECT max(id) FROM runs) ORDER BY uri",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

pub fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The client paced the requests the server saw at `starts` (seconds, any origin): each began
/// at least `gap` seconds after the one before. The server sees a request when its thread gets
/// to it, which on a busy machine can be late by a fraction of `gap`; a late sighting shortens
/// the gap after it and lengthens the one before, and can shorten the whole span by no more
/// than that. So each gap seen must be at least half of `gap`, and the span the whole of it
/// less half of one `gap`: an unpaced client, its requests milliseconds apart, fails both.
pub fn assert_paced(starts: &[f64], gap: f64) {
    let mut starts = starts.to_vec();
    starts.sort_by(f64::total_cmp);
    assert!(starts.len() >= 2, "too few requests to pace: {starts:?}");
    let late = gap / 2.0;
    for w in starts.windows(2) {
        assert!(
            w[1] - w[0] >= gap - late,
            "requests {:.3} s apart, paced at {gap} s: {starts:?}",
            w[1] - w[0]
        );
    }
    let span = starts[starts.len() - 1] - starts[0];
    let least = (starts.len() - 1) as f64 * gap - late;
    assert!(
        span >= least,
        "{} requests over {span:.3} s, paced at {gap} s: {starts:?}",
        starts.len()
    );
}

#[test]
fn paced_requests_pass_though_one_was_seen_late() {
    assert_paced(&[0.0, 0.25, 0.5, 0.75], 0.25);
    // The second seen 120 ms late: 370 ms after the first, 130 ms before the third.
    assert_paced(&[0.0, 0.37, 0.5, 0.75], 0.25);
}

#[test]
#[should_panic(expected = "apart, paced at 0.25 s")]
fn unpaced_requests_fail() {
    assert_paced(&[0.0, 0.002, 0.004, 0.006], 0.25);
}

#[test]
#[should_panic(expected = "4 requests over")]
fn requests_paced_at_half_the_delay_fail() {
    // Each gap just over half the pace, as from a client pacing at half the delay: the span
    // gives it away.
    assert_paced(&[0.0, 0.13, 0.26, 0.39], 0.25);
}

/// sha256 hex of a file.
pub fn sha256_file(path: &Path) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// The mirror holds exactly `paths` of the tree served at `base`, with the tree's bytes.
pub fn assert_mirror_is(mirror: &Path, base: &str, tree: &Path, paths: &[&str]) {
    let got = current(mirror);
    let want: BTreeMap<String, String> = paths
        .iter()
        .map(|p| {
            let file = tree.join(percent_decode(p.trim_start_matches('/')));
            (format!("{base}{p}"), sha256_file(&file))
        })
        .collect();
    assert_eq!(got, want);
    assert_consistent(mirror);
}

fn percent_decode(s: &str) -> String {
    s.replace("%20", " ")
}

/// Write a synthetic source of `n` resources of `size` bytes under `dir`: `resourcelist.xml`
/// (md5 + sha-256, lengths, at) and `res/NNNNNN`; URLs use the fixtures' placeholder origin.
pub fn generate_source(dir: &Path, n: usize, size: usize) {
    use md5::Digest as _;
    use sha2::Digest as _;
    use std::fmt::Write as _;
    std::fs::create_dir_all(dir.join("res")).unwrap();
    let mut xml = String::from(concat!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n",
        "<rs:md capability=\"resourcelist\" at=\"2026-01-01T00:00:00Z\"/>\n"
    ));
    for i in 0..n {
        let mut body = vec![0u8; size];
        let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for b in body.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = b'a' + (x % 26) as u8;
        }
        let name = format!("{i:06}");
        std::fs::write(dir.join("res").join(&name), &body).unwrap();
        let md5 = hex::encode(md5::Md5::digest(&body));
        let sha = hex::encode(sha2::Sha256::digest(&body));
        writeln!(
            xml,
            "<url><loc>http://sample.example.org/res/{name}</loc><lastmod>2025-12-31T00:00:00Z</lastmod>\
             <rs:md hash=\"md5:{md5} sha-256:{sha}\" length=\"{size}\" type=\"text/plain\"/></url>"
        )
        .unwrap();
    }
    xml.push_str("</urlset>\n");
    std::fs::write(dir.join("resourcelist.xml"), xml).unwrap();
}

/// A source tree built by a test, served as a site root: resources under `res/`, documents
/// at the root, URLs with the fixtures' placeholder origin (the TestServer rewrites it).
pub struct Tree {
    pub dir: tempfile::TempDir,
}

pub const ORIGIN: &str = "http://sample.example.org";

fn md_hash(bytes: &[u8]) -> String {
    use md5::Digest as _;
    use sha2::Digest as _;
    format!(
        "md5:{} sha-256:{}",
        hex::encode(md5::Md5::digest(bytes)),
        hex::encode(sha2::Sha256::digest(bytes))
    )
}

const HEAD: &str = concat!(
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
    "<{root} xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n"
);

impl Tree {
    pub fn new() -> Tree {
        let t = Tree {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(t.dir.path().join("res")).unwrap();
        t
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write resource `res/NAME`.
    pub fn put(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.dir.path().join("res").join(name), bytes).unwrap();
    }

    pub fn remove(&self, name: &str) {
        let _ = std::fs::remove_file(self.dir.path().join("res").join(name));
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.path().join("res").join(name)).unwrap()
    }

    fn write_doc(&self, file: &str, root: &str, head: &str, body: &str) {
        let mut s = HEAD.replace("{root}", root);
        s.push_str(head);
        s.push_str(body);
        s.push_str(&format!("</{root}>\n"));
        std::fs::write(self.dir.path().join(file), s).unwrap();
    }

    /// `/capabilitylist.xml` naming a resourcelist and a changelist document.
    pub fn capability_list(&self, changelist: &str) {
        self.write_doc(
            "capabilitylist.xml",
            "urlset",
            "<rs:md capability=\"capabilitylist\"/>\n",
            &format!(
                "<url><loc>{ORIGIN}/resourcelist.xml</loc><rs:md capability=\"resourcelist\"/></url>\n\
                 <url><loc>{ORIGIN}/{changelist}</loc><rs:md capability=\"changelist\"/></url>\n"
            ),
        );
    }

    /// `/resourcelist.xml` of the named resources, with their current hashes and lengths.
    pub fn resource_list(&self, at: &str, names: &[&str]) {
        let mut body = String::new();
        for n in names {
            let b = self.read(n);
            body.push_str(&format!(
                "<url><loc>{ORIGIN}/res/{n}</loc><rs:md hash=\"{}\" length=\"{}\"/></url>\n",
                md_hash(&b),
                b.len()
            ));
        }
        self.write_doc(
            "resourcelist.xml",
            "urlset",
            &format!("<rs:ln rel=\"up\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n<rs:md capability=\"resourcelist\" at=\"{at}\"/>\n"),
            &body,
        );
    }

    /// A Change List `file`: entries (name, change, datetime); created/updated entries carry
    /// the current file's hash and length.
    pub fn change_list(
        &self,
        file: &str,
        from: &str,
        until: Option<&str>,
        entries: &[(&str, &str, &str)],
    ) {
        let mut body = String::new();
        for (n, change, at) in entries {
            let md = if *change == "deleted" {
                String::new()
            } else {
                let b = self.read(n);
                format!(" hash=\"{}\" length=\"{}\"", md_hash(&b), b.len())
            };
            body.push_str(&format!(
                "<url><loc>{ORIGIN}/res/{n}</loc><rs:md change=\"{change}\" datetime=\"{at}\"{md}/></url>\n"
            ));
        }
        let until = until.map(|u| format!(" until=\"{u}\"")).unwrap_or_default();
        self.write_doc(
            file,
            "urlset",
            &format!(
                "<rs:ln rel=\"up\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n<rs:md capability=\"changelist\" from=\"{from}\"{until}/>\n"
            ),
            &body,
        );
    }

    /// A Change List Index `file` of (list file, from, until).
    pub fn change_list_index(&self, file: &str, from: &str, lists: &[(&str, &str, Option<&str>)]) {
        let mut body = String::new();
        for (f, lfrom, luntil) in lists {
            let until = luntil
                .map(|u| format!(" until=\"{u}\""))
                .unwrap_or_default();
            body.push_str(&format!(
                "<sitemap><loc>{ORIGIN}/{f}</loc><rs:md from=\"{lfrom}\"{until}/></sitemap>\n"
            ));
        }
        self.write_doc(
            file,
            "sitemapindex",
            &format!(
                "<rs:ln rel=\"up\" href=\"{ORIGIN}/capabilitylist.xml\"/>\n<rs:md capability=\"changelist\" from=\"{from}\"/>\n"
            ),
            &body,
        );
    }
}

/// `rsmirror incremental --mirror DIR` (the source is the one the mirror remembers).
pub fn incremental(mirror: &Path) -> Command {
    let mut c = rsmirror();
    c.args(["incremental", "--mirror"]).arg(mirror);
    c
}

/// A tmpfs of `size` mounted on a new folder, unmounted when dropped; None (with a message)
/// where mounting is refused (not root, a container without the capability).
pub struct Tmpfs(pub tempfile::TempDir);

impl Tmpfs {
    pub fn mount(size: &str) -> Option<Tmpfs> {
        Tmpfs::mount_with(&format!("size={size}"))
    }

    /// Mounted with tmpfs options (`size=20m,nr_inodes=64`).
    pub fn mount_with(options: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: mounting a tmpfs was refused (run as root to test a full disk)");
            return None;
        }
        Some(Tmpfs(dir))
    }

    pub fn resize(&self, size: &str) {
        self.remount(&format!("size={size}"));
    }

    /// Remounted with other tmpfs options.
    pub fn remount(&self, options: &str) {
        let ok = std::process::Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(self.0.path())
            .status()
            .unwrap();
        assert!(ok.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

/// `rsmirror ARGS --mirror MIRROR`, run to its end.
pub fn on_mirror(mirror: &Path, args: &[&str]) -> std::process::Output {
    rsmirror()
        .args(args)
        .arg("--mirror")
        .arg(mirror)
        .output()
        .unwrap()
}

/// [`on_mirror`] that must exit 0: its stdout and stderr.
pub fn ok_on_mirror(mirror: &Path, args: &[&str]) -> (String, String) {
    let out = on_mirror(mirror, args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
    (stdout_of(&out), stderr_of(&out))
}

/// A small deterministic generator (xorshift64*) for the fault matrices: a seed names a run
/// that can be repeated.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index below `n` (0 when `n` is 0).
    pub fn pick(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// 64 random hex digits.
    pub fn hex(&mut self) -> String {
        (0..4).map(|_| format!("{:016x}", self.next())).collect()
    }
}

/// Print a fault suite's tally and add it to the file `.ci/run` prints after the tests.
pub fn record_tally(line: &str) {
    eprintln!("{line}");
    let tallies = Path::new(env!("CARGO_TARGET_TMPDIR")).join("reliability-tallies.txt");
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(tallies)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
}

/// Every file under `dir`, at any depth (none when `dir` is missing).
pub fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// `cp -a from to`: a copy of a mirror (or any tree) no process has open.
pub fn copy_tree(from: &Path, to: &Path) {
    assert!(std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap()
        .success());
}

/// `schemas/` of the repository: the JSON Schema of every `--json` output.
pub fn schemas_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

/// The JSON Schema `schemas/NAME`, compiled (one that is not a valid schema fails the test).
pub fn schema(name: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(schemas_dir().join(name)).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `doc` has the shape `validator` gives, or the test fails naming every error and the
/// document.
pub fn valid(validator: &jsonschema::Validator, doc: &serde_json::Value) {
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
}

/// The major version of the libcurl the binary links (`rsmirror --version`).
pub fn libcurl_major() -> u32 {
    let out = rsmirror().arg("--version").output().unwrap();
    let text = stdout_of(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("libcurl "))
        .unwrap_or_else(|| panic!("no libcurl in --version: {text}"));
    line["libcurl ".len()..]
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .expect("a libcurl version")
}
