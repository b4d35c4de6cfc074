//! `rsmirror export`: trees and BagIt bags of a mirror with odd URLs (query strings, a trailing
//! slash, percent-encoding, non-ASCII, a file/folder clash, a long name), checked byte for byte
//! and by the validator BagIt users trust (bagit-python); re-exports after changes; refusals.

use crate::server::{Rule, TestServer};
use crate::support::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A validator's executable: from `RSMIRROR_VALIDATORS` (a folder), `.ci/venv/bin` (made by
/// `.ci/run`), or PATH. A test that runs one is ignored where the build found it missing
/// (`build.rs`), so here a missing one is a failure.
pub fn validator(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("RSMIRROR_VALIDATORS") {
        dirs.push(d.into());
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin"));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    if let Some(found) = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
        return found;
    }
    panic!("{name} is missing: .ci/run installs it into .ci/venv (then `touch build.rs` if the build did not notice)")
}

/// (URL path, bytes): the odd URLs, served by rules.
fn odd() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("/res/plain.txt", b"plain\n".to_vec()),
        ("/res/q?x=1", b"the same bytes for every query\n".to_vec()),
        ("/res/q?x=2", b"the same bytes for every query\n".to_vec()),
        ("/res/dir/", b"a folder's own page\n".to_vec()),
        (
            "/res/dir/index.html",
            b"an index.html of its own\n".to_vec(),
        ),
        ("/res/a", b"a file where a folder must be\n".to_vec()),
        ("/res/a/b", b"inside the folder a\n".to_vec()),
        ("/res/caf%C3%A9.txt", "café\n".as_bytes().to_vec()),
        ("/res/100%25.txt", b"a percent sign\n".to_vec()),
        ("/res/a%20b.txt", b"a space\n".to_vec()),
        (
            "/res/.rsmirror-export",
            b"named like the export's folder\n".to_vec(),
        ),
    ]
}

fn sha256(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

fn md5(b: &[u8]) -> String {
    use md5::Digest;
    hex::encode(md5::Md5::digest(b))
}

/// A source listing `resources` (URL path -> bytes) in one Resource List, served by rules.
struct Source {
    srv: TestServer,
    _dir: tempfile::TempDir,
    /// Entries carry a `lastmod`.
    dated: std::cell::Cell<bool>,
}

impl Source {
    fn new() -> Source {
        let dir = tempfile::tempdir().unwrap();
        let srv = TestServer::start(dir.path());
        Source {
            srv,
            _dir: dir,
            dated: std::cell::Cell::new(false),
        }
    }

    fn publish(&self, at: &str, resources: &[(&str, Vec<u8>)]) {
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n",
        );
        xml.push_str(&format!(
            "<rs:md capability=\"resourcelist\" at=\"{at}\"/>\n"
        ));
        for (path, bytes) in resources {
            // With `dated`, a lastmod that follows the bytes (the same bytes, the same date).
            let lastmod = match self.dated.get() {
                true => format!(
                    "<lastmod>2026-02-{:02}T00:00:00Z</lastmod>",
                    1 + md5(bytes).as_bytes()[0] % 28
                ),
                false => String::new(),
            };
            xml.push_str(&format!(
                "<url><loc>{}{path}</loc>{lastmod}<rs:md hash=\"md5:{} sha-256:{}\" length=\"{}\"/></url>\n",
                self.srv.base(),
                md5(bytes),
                sha256(bytes),
                bytes.len()
            ));
            let key = path.split('?').next().unwrap();
            let decoded = percent_encoding::percent_decode_str(key)
                .decode_utf8()
                .unwrap()
                .into_owned();
            self.srv.set_rule(&decoded, Rule::Body(bytes.clone()));
        }
        xml.push_str("</urlset>\n");
        self.srv
            .set_rule("/resourcelist.xml", Rule::Body(xml.into_bytes()));
    }

    fn list(&self) -> String {
        self.srv.url("/resourcelist.xml")
    }
}

impl Source {
    /// The odd resources published and mirrored by a baseline (run 1): the mirror and the
    /// resources.
    fn mirrored_once(&self) -> (tempfile::TempDir, Vec<(&'static str, Vec<u8>)>) {
        let resources = odd();
        self.publish("2026-03-01T00:00:00Z", &resources);
        let mirror = tempfile::tempdir().unwrap();
        let out = baseline(&self.list(), mirror.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        (mirror, resources)
    }

    /// The odd resources published and mirrored (run 1); then one updated (`plain.txt`) and
    /// one deleted (`a b.txt`), followed by a baseline with --delete (run 2). The mirror and
    /// what the source holds at the end.
    fn mirrored_twice(&self) -> (tempfile::TempDir, Vec<(&'static str, Vec<u8>)>) {
        let (mirror, mut resources) = self.mirrored_once();
        resources.retain(|(p, _)| *p != "/res/a%20b.txt");
        resources[0].1 = b"plain, changed\n".to_vec();
        self.publish("2026-03-02T00:00:00Z", &resources);
        let out = baseline(&self.list(), mirror.path())
            .args(["--delete", "--force-delete"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        (mirror, resources)
    }
}

/// stderr of a command on the mirror that must succeed.
fn run_ok(args: &[&str], mirror: &Path) -> String {
    ok_on_mirror(mirror, args).1
}

/// Every file under `root` (relative, `/`-separated) with its bytes, the export's own folder
/// left out.
pub fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_string();
            if rel == ".rsmirror-export" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The map: URL -> (path, notes).
fn map(dest: &Path) -> BTreeMap<String, (String, String)> {
    std::fs::read_to_string(dest.join(".rsmirror-export/map.tsv"))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[1].to_string(), (f[0].to_string(), f[4].to_string()))
        })
        .collect()
}

#[test]
fn a_tree_holds_every_url_once_and_the_map_reads_it_back() {
    let src = Source::new();
    let mut resources = odd();
    let long = format!("/res/{}", "n".repeat(300));
    resources.push((Box::leak(long.into_boxed_str()), b"a long name\n".to_vec()));
    src.publish("2026-03-01T00:00:00Z", &resources);
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&src.list(), mirror.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let dest = tempfile::tempdir().unwrap();
    let dest = dest.path().join("tree");
    let said = run_ok(&["export", "tree", dest.to_str().unwrap()], mirror.path());
    assert!(
        said.contains(&format!("{} files", resources.len())),
        "{said}"
    );
    assert!(said.contains("clash 2, index 1, long 1, query 2"), "{said}");

    let host = src.srv.base().trim_start_matches("http://").to_string();
    let tree = files(&dest);
    let map = map(&dest);
    assert_eq!(tree.len(), resources.len());
    assert_eq!(map.len(), resources.len());
    // Every URL's bytes are at the path the map gives, and nothing else is there.
    for (path, bytes) in &resources {
        let url = format!("{}{path}", src.srv.base());
        let (file, _) = &map[&url];
        assert_eq!(&tree[file], bytes, "{url} at {file}");
    }
    let at = |p: &str| map[&format!("{}{p}", src.srv.base())].clone();
    assert_eq!(at("/res/plain.txt").0, format!("{host}/res/plain.txt"));
    assert_eq!(at("/res/q?x=1").0, format!("{host}/res/q?x=1"));
    assert_eq!(at("/res/q?x=1").1, "query");
    assert_eq!(at("/res/caf%C3%A9.txt").0, format!("{host}/res/café.txt"));
    assert_eq!(at("/res/100%25.txt").0, format!("{host}/res/100%25.txt"));
    assert_eq!(at("/res/a%20b.txt").0, format!("{host}/res/a b.txt"));
    // The folder keeps its name; the file beside it is moved aside.
    assert_eq!(at("/res/a/b").0, format!("{host}/res/a/b"));
    assert!(
        at("/res/a").0.starts_with(&format!("{host}/res/a~")),
        "{:?}",
        at("/res/a")
    );
    assert_eq!(at("/res/a").1, "clash");
    // `/dir/` is dir/index.html; the real /dir/index.html comes after it in URI order.
    assert_eq!(at("/res/dir/").0, format!("{host}/res/dir/index.html"));
    assert!(at("/res/dir/index.html").0.contains("index.html~"));
    // A long name is cut, and no name is longer than 255 bytes.
    assert!(at(long_path(&resources)).1.contains("long"));
    for f in tree.keys() {
        assert!(f.split('/').all(|n| n.len() <= 255), "{f}");
    }

    // --link hard: the files are the objects themselves (the same inode); copy: their own.
    use std::os::unix::fs::MetadataExt;
    let object_inode = |bytes: &[u8]| {
        let sha = sha256(bytes);
        std::fs::metadata(
            mirror
                .path()
                .join("objects/sha256")
                .join(&sha[..2])
                .join(&sha),
        )
        .unwrap()
        .ino()
    };
    let hard = dest.with_file_name("hard");
    run_ok(
        &["export", "tree", hard.to_str().unwrap(), "--link", "hard"],
        mirror.path(),
    );
    let plain = |root: &Path| root.join(&host).join("res/plain.txt");
    assert_eq!(
        std::fs::metadata(plain(&hard)).unwrap().ino(),
        object_inode(b"plain\n")
    );
    assert_ne!(
        std::fs::metadata(plain(&dest)).unwrap().ino(),
        object_inode(b"plain\n")
    );
    // Issue 66, 9: never into the mirror folder itself.
    for inside in ["exported", "objects/tree"] {
        let out = rsmirror()
            .args(["export", "tree"])
            .arg(mirror.path().join(inside))
            .arg("--mirror")
            .arg(mirror.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("is inside the mirror folder"),
            "{}",
            stderr_of(&out)
        );
        assert!(!mirror.path().join(inside).exists());
    }
    // Issue 66, 13: across file systems --link hard cannot be, and says what can (where a
    // tmpfs may be mounted); auto copies there.
    if let Some(other) = Tmpfs::mount("16m") {
        let out = rsmirror()
            .args(["export", "tree"])
            .arg(other.0.path().join("hard"))
            .args(["--link", "hard", "--mirror"])
            .arg(mirror.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("--link auto copies there"),
            "{}",
            stderr_of(&out)
        );
        let auto = other.0.path().join("auto");
        run_ok(
            &["export", "tree", auto.to_str().unwrap(), "--link", "auto"],
            mirror.path(),
        );
        assert_eq!(std::fs::read(plain(&auto)).unwrap(), b"plain\n");
    }
    // auto: a reflink where the file system makes one (its own inode), else a hard link.
    let auto = dest.with_file_name("auto");
    run_ok(
        &["export", "tree", auto.to_str().unwrap(), "--link", "auto"],
        mirror.path(),
    );
    assert_eq!(std::fs::read(plain(&auto)).unwrap(), b"plain\n");

    // --strip: resync-sync's layout for a uri=path mapping.
    let stripped = dest.with_file_name("stripped");
    let prefix = format!("{}/res/", src.srv.base());
    run_ok(
        &[
            "export",
            "tree",
            stripped.to_str().unwrap(),
            "--strip",
            &prefix,
        ],
        mirror.path(),
    );
    let tree = files(&stripped);
    assert_eq!(tree["plain.txt"], b"plain\n");
    assert_eq!(tree["a/b"], b"inside the folder a\n");
    // A resource named like the export's own folder is moved aside, not mixed into it.
    let own = map_of(&stripped, &format!("{prefix}.rsmirror-export"));
    assert!(own.starts_with(".rsmirror-export~"), "{own}");
}

fn long_path(resources: &[(&'static str, Vec<u8>)]) -> &'static str {
    resources
        .iter()
        .map(|(p, _)| *p)
        .find(|p| p.len() > 300)
        .unwrap()
}

fn map_of(dest: &Path, url: &str) -> String {
    map(dest)[url].0.clone()
}

#[test]
#[cfg_attr(
    missing = "bagit",
    ignore = "bagit-python (bagit.py) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_bag_validates_and_a_re_export_follows_the_mirror() {
    let src = Source::new();
    let (mirror, mut resources) = src.mirrored_once();
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("bag");
    run_ok(&["export", "bagit", bag.to_str().unwrap()], mirror.path());
    let payload = files(&bag.join("data"));
    assert_eq!(payload.len(), resources.len());
    let info = std::fs::read_to_string(bag.join("bag-info.txt")).unwrap();
    assert!(
        info.contains(&format!(
            "Payload-Oxum: {}.{}",
            resources.iter().map(|(_, b)| b.len()).sum::<usize>(),
            resources.len()
        )),
        "{info}"
    );
    assert!(
        info.contains(&format!("External-Identifier: {}", src.list())),
        "{info}"
    );
    assert!(info.contains("Rsmirror-Sync-Point: "), "{info}");
    assert!(bag.join("manifest-md5.txt").exists());
    let manifest = std::fs::read_to_string(bag.join("manifest-sha256.txt")).unwrap();
    // No `%` in a bag's names (bagit-python does not read RFC 8493's `%25`).
    assert!(manifest.contains("/res/100\u{FF05}25.txt"), "{manifest}");
    assert!(!manifest.contains('%'), "{manifest}");
    assert!(!bag.join(".rsmirror-export/INCOMPLETE").exists());
    validate_bag(&bag);

    // The source changes: one resource updated, one removed, one added; the mirror follows
    // with a baseline --delete, and a re-export brings the bag to the new state.
    resources.retain(|(p, _)| *p != "/res/a%20b.txt");
    resources[0].1 = b"plain, changed\n".to_vec();
    resources.push(("/res/new.txt", b"new\n".to_vec()));
    src.publish("2026-03-02T00:00:00Z", &resources);
    let out = baseline(&src.list(), mirror.path())
        .arg("--delete")
        .arg("--force-delete")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let host = src.srv.base().trim_start_matches("http://").to_string();
    let untouched = bag.join(format!("data/{host}/res/caf\u{e9}.txt"));
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&untouched).unwrap());
    let said = run_ok(&["export", "bagit", bag.to_str().unwrap()], mirror.path());
    assert!(said.contains("(2 written, 9 kept, 1 removed)"), "{said}");
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&untouched).unwrap()),
        inode,
        "an unchanged file is not rewritten"
    );
    let payload = files(&bag.join("data"));
    assert_eq!(payload.len(), resources.len());
    assert_eq!(
        payload[&format!("{host}/res/plain.txt")],
        b"plain, changed\n"
    );
    assert!(!payload.contains_key(&format!("{host}/res/a b.txt")));
    validate_bag(&bag);

    // --at the first run: the bag goes back to the first state, with --link hard.
    run_ok(
        &[
            "export",
            "bagit",
            bag.to_str().unwrap(),
            "--at",
            "run:1",
            "--link",
            "hard",
        ],
        mirror.path(),
    );
    let payload = files(&bag.join("data"));
    assert_eq!(payload.len(), odd().len());
    assert_eq!(payload[&format!("{host}/res/plain.txt")], b"plain\n");
    validate_bag(&bag);
}

pub fn validate_bag(bag: &Path) {
    let bagit = validator("bagit.py");
    for fast in [true, false] {
        let mut cmd = std::process::Command::new(&bagit);
        cmd.arg("--validate");
        if fast {
            cmd.arg("--fast");
        }
        let out = cmd.arg(bag).output().unwrap();
        assert!(
            out.status.success(),
            "bagit.py --validate{}: {}",
            if fast { " --fast" } else { "" },
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
#[cfg_attr(
    any(missing = "bagit", missing = "warcio"),
    ignore = "bagit-python or warcio is not installed: bash .ci/run installs them into .ci/venv"
)]
fn a_damaged_object_stops_the_export_and_dest_says_it_is_incomplete() {
    let src = Source::new();
    let (mirror, resources) = src.mirrored_once();
    let sha = sha256(b"plain\n");
    let object = mirror
        .path()
        .join("objects/sha256")
        .join(&sha[..2])
        .join(&sha);
    let mut perms = std::fs::metadata(&object).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&object, perms).unwrap();
    std::fs::write(&object, b"plane\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    for format in ["tree", "bagit", "warc"] {
        let dest = dir.path().join(format);
        let out = rsmirror()
            .args(["export", format])
            .arg(&dest)
            .arg("--mirror")
            .arg(mirror.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{format}");
        let e = stderr_of(&out);
        assert!(e.contains("/res/plain.txt"), "{e}");
        assert!(e.contains("does not match the catalog"), "{e}");
        assert!(dest.join(".rsmirror-export/INCOMPLETE").exists());
        let record: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dest.join(".rsmirror-export/export.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(record["complete"], false);
        // No file of that resource, and no temporary file, is left in the tree.
        let left: Vec<String> = files(&dest).into_keys().collect();
        assert!(
            left.iter()
                .all(|f| !f.ends_with("plain.txt") && !f.contains(".rsmirror-tmp")),
            "{left:?}"
        );
        if format == "bagit" {
            assert!(!dest.join("tagmanifest-sha256.txt").exists());
        }
        // A WARC file is named only once complete.
        assert!(left.iter().all(|f| !f.ends_with(".warc.gz")), "{left:?}");
    }
    // A missing object stops a copy too, naming the URI and the object's file.
    std::fs::remove_file(&object).unwrap();
    for link in ["copy", "auto", "hard"] {
        let dest = dir.path().join(format!("missing-{link}"));
        let out = rsmirror()
            .args(["export", "tree"])
            .arg(&dest)
            .args(["--link", link, "--mirror"])
            .arg(mirror.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{link}");
        let e = stderr_of(&out);
        let relative = format!("objects/sha256/{}/{sha}", &sha[..2]);
        assert!(
            e.contains("/res/plain.txt")
                && e.contains(&format!("its object {relative} is missing")),
            "{link}: {e}"
        );
        assert!(dest.join(".rsmirror-export/INCOMPLETE").exists());
    }
    // Once the object is good again (restored from a copy), running the same exports again
    // finishes them.
    std::fs::write(&object, b"plain\n").unwrap();
    for format in ["tree", "bagit", "warc"] {
        let dest = dir.path().join(format);
        run_ok(&["export", format, dest.to_str().unwrap()], mirror.path());
        assert!(
            !dest.join(".rsmirror-export/INCOMPLETE").exists(),
            "{format}"
        );
        let left: Vec<String> = files(&dest).into_keys().collect();
        assert!(
            left.iter()
                .all(|f| !f.contains(".rsmirror-tmp") && !f.ends_with(".open")),
            "{left:?}"
        );
        match format {
            "bagit" => validate_bag(&dest),
            "warc" => warcio_check(&dest),
            _ => assert_eq!(left.len(), resources.len()),
        }
    }
}

/// Write `bytes` over an object; with `keep_time`, its modification time stays what it was
/// (bit rot, or an edit that put the time back).
fn overwrite_object(object: &Path, bytes: &[u8], keep_time: bool) {
    let before = std::fs::metadata(object).unwrap();
    let mut perms = before.permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(object, perms).unwrap();
    std::fs::write(object, bytes).unwrap();
    if keep_time {
        let f = std::fs::File::options().write(true).open(object).unwrap();
        f.set_modified(before.modified().unwrap()).unwrap();
    }
}

/// `export tree --json` into a new folder under `dir`: (exit code, summary, stderr).
fn export_json(
    mirror: &Path,
    dir: &Path,
    name: &str,
    more: &[&str],
) -> (Option<i32>, serde_json::Value, String) {
    let out = rsmirror()
        .args(["export", "tree"])
        .arg(dir.join(name))
        .args(["--json", "--mirror"])
        .arg(mirror)
        .args(more)
        .output()
        .unwrap();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), summary, stderr_of(&out))
}

#[test]
fn a_link_takes_a_clean_audits_word_only_for_objects_unchanged_since() {
    let src = Source::new();
    let (mirror, resources) = src.mirrored_once();
    let m = mirror.path();
    let n = resources.len() as u64;
    let dir = tempfile::tempdir().unwrap();
    let sha = sha256(b"plain\n");
    let object = m.join("objects/sha256").join(&sha[..2]).join(&sha);

    // No audit yet: every object is read.
    let (code, s, e) = export_json(m, dir.path(), "a", &["--link", "hard"]);
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(s["vouched"], 0, "{s}");

    // After a clean full audit (run 2), links are placed on its word.
    ok_on_mirror(m, &["audit", "--offline", "-q"]);
    let (code, s, e) = export_json(m, dir.path(), "b", &["--link", "hard"]);
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(s["vouched"], n, "{s}");
    assert_eq!(s["vouched_by"], 2, "{s}");
    // With --json the document is the summary: nothing on stderr (the text says "linked on
    // the word of the audit of run 2").
    assert!(e.is_empty(), "{e}");
    // Copies are read whatever an audit said, and --verify reads links too.
    let (code, s, _) = export_json(m, dir.path(), "c", &["--link", "copy"]);
    assert_eq!((code, s["vouched"].as_u64()), (Some(0), Some(0)), "{s}");
    let (code, s, _) = export_json(m, dir.path(), "d", &["--link", "hard", "--verify"]);
    assert_eq!((code, s["vouched"].as_u64()), (Some(0), Some(0)), "{s}");

    // An object changed since the audit (its time says so) is read, and found damaged.
    overwrite_object(&object, b"plane\n", false);
    let (code, _, e) = export_json(m, dir.path(), "e", &["--link", "hard"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(
        e.contains("/res/plain.txt") && e.contains("does not match the catalog"),
        "{e}"
    );

    // Damage that kept the object's length and time is the audit's to find: a link takes the
    // audit's word for it (what --verify is for)...
    overwrite_object(&object, b"plain\n", false);
    let (code, s, e) = export_json(m, dir.path(), "f", &["--link", "hard"]);
    assert_eq!(code, Some(0), "{e}");
    // (restored after the audit: read, not vouched for)
    assert_eq!(s["vouched"], n - 1, "{s}");
    let sha_b = sha256(&resources[9].1);
    let object_b = m.join("objects/sha256").join(&sha_b[..2]).join(&sha_b);
    let mut rotten = resources[9].1.clone();
    rotten[0] ^= 1;
    overwrite_object(&object_b, &rotten, true);
    let (code, _, e) = export_json(m, dir.path(), "g", &["--link", "hard", "--verify"]);
    assert_eq!(code, Some(1), "--verify reads every object: {e}");
    assert!(e.contains(resources[9].0), "{e}");
    // ... and once an audit has found damage, no object is taken on any audit's word.
    let out = on_mirror(m, &["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let (code, _, e) = export_json(m, dir.path(), "h", &["--link", "hard"]);
    assert_eq!(code, Some(1), "{e}");
    assert!(
        e.contains(resources[9].0) && e.contains("does not match the catalog"),
        "{e}"
    );
}

/// SIGTERM (or Ctrl-C) during an export: one line saying DEST is left marked incomplete and
/// how to finish it (it said "nothing was written"), exit 130; the same command finishes it.
#[cfg(unix)]
#[test]
#[cfg_attr(
    missing = "ocfl",
    ignore = "ocfl-py (ocfl-validate.py) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn an_interrupted_export_says_dest_is_incomplete_and_a_re_run_finishes_it() {
    use std::time::{Duration, Instant};
    let tree = tempfile::tempdir().unwrap();
    generate_source(tree.path(), 1500, 16);
    let srv = TestServer::start(tree.path());
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), mirror.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("ocfl");
    let trace = dir.path().join("trace");
    // OCFL: each object's files synced one by one, the slowest export to catch midway.
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args(["export", "ocfl"])
        .arg(&dest)
        .arg("--mirror")
        .arg(mirror.path())
        .env("RSMIRROR_KILL_TRACE", &trace)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&trace).map_or(0, |t| t.lines().count()) < 20 {
        assert!(Instant::now() < deadline, "the export never got going");
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("interrupted (SIGTERM)")
            && err.contains("stays marked incomplete")
            && err.contains("the same command finishes it")
            && !err.contains("nothing was written"),
        "{err}"
    );
    assert!(dest.join("rsmirror-export.INCOMPLETE").exists());
    run_ok(&["export", "ocfl", dest.to_str().unwrap()], mirror.path());
    assert!(!dest.join("rsmirror-export.INCOMPLETE").exists());
    ocfl_validate(&dest);
}

#[test]
fn dest_must_be_empty_or_an_earlier_export_of_the_format() {
    let src = Source::new();
    let (mirror, _) = src.mirrored_once();
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("thesis.pdf"), b"not ours").unwrap();
    let tree = dir.path().join("tree");
    run_ok(&["export", "tree", tree.to_str().unwrap()], mirror.path());
    for (format, dest, want) in [
        ("tree", &other, "holds other files"),
        ("bagit", &tree, "holds an rsmirror export of format tree"),
    ] {
        let out = rsmirror()
            .args(["export", format])
            .arg(dest)
            .arg("--mirror")
            .arg(mirror.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{format}");
        assert!(stderr_of(&out).contains(want), "{}", stderr_of(&out));
    }
    assert_eq!(
        std::fs::read(other.join("thesis.pdf")).unwrap(),
        b"not ours"
    );
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 1);

    // An export killed before its record was written left only its own folder: accepted.
    let started = dir.path().join("started");
    std::fs::create_dir_all(started.join(".rsmirror-export")).unwrap();
    std::fs::write(started.join(".rsmirror-export/export.json.tmp"), b"{\"form").unwrap();
    run_ok(
        &["export", "tree", started.to_str().unwrap()],
        mirror.path(),
    );
    // One killed while it placed files left a temporary file and INCOMPLETE: the next run
    // removes the temporary file and finishes.
    let host = src.srv.base().trim_start_matches("http://").to_string();
    let stale = tree.join(&host).join("res/.rsmirror-tmp-99999-1");
    std::fs::write(&stale, b"half a file").unwrap();
    std::fs::write(tree.join(".rsmirror-export/INCOMPLETE"), b"").unwrap();
    run_ok(&["export", "tree", tree.to_str().unwrap()], mirror.path());
    assert!(!stale.exists());
    assert!(!tree.join(".rsmirror-export/INCOMPLETE").exists());
}

/// Every record of the WARC files in `dest` (in file order), read back by warcio's
/// ArchiveIterator: (type, target URI, date, sha256 of the content, content type).
fn warc_records(dest: &Path) -> Vec<serde_json::Value> {
    // The Python that has warcio: beside its `warcio` command.
    let warcio = validator("warcio");
    let python = ["python", "python3"]
        .iter()
        .map(|p| warcio.with_file_name(p))
        .find(|p| p.is_file())
        .expect("a python beside warcio");
    let script = r#"
import hashlib, json, sys, glob
from warcio.archiveiterator import ArchiveIterator
for name in sorted(glob.glob(sys.argv[1] + "/*.warc.gz")):
    with open(name, "rb") as f:
        it = ArchiveIterator(f)
        for r in it:
            body = r.content_stream().read()
            it.read_to_end()
            print(json.dumps({"file": name.rsplit("/", 1)[1], "type": r.rec_type,
                "offset": it.get_record_offset(), "length": it.get_record_length(),
                "id": r.rec_headers.get_header("WARC-Record-ID"),
                "warcinfo": r.rec_headers.get_header("WARC-Warcinfo-ID"),
                "uri": r.rec_headers.get_header("WARC-Target-URI"),
                "date": r.rec_headers.get_header("WARC-Date"),
                "sha256": hashlib.sha256(body).hexdigest(),
                "content_type": r.rec_headers.get_header("Content-Type")}))
"#;
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .arg(dest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn warcio_check(dest: &Path) {
    let warcio = validator("warcio");
    let names: Vec<PathBuf> = std::fs::read_dir(dest)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(".warc.gz"))
        .collect();
    assert!(!names.is_empty());
    let out = std::process::Command::new(warcio)
        .args(["check", "-v"])
        .args(&names)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "warcio check: {text}");
    // Every record's digests were checked and passed (an unknown algorithm is "not checked").
    let records = text.matches("WARC-Record-ID").count();
    assert!(records > 0, "{text}");
    assert_eq!(text.matches("digest pass").count(), records, "{text}");
}

#[test]
#[cfg_attr(
    missing = "warcio",
    ignore = "warcio is not installed: bash .ci/run installs it into .ci/venv"
)]
fn warc_files_hold_every_state_and_warcio_reads_them_back() {
    let src = Source::new();
    let (mirror, resources) = src.mirrored_twice();
    let dir = tempfile::tempdir().unwrap();

    // The current state: one resource record per resource, in URI order, the bytes the
    // source's.
    let now = dir.path().join("now");
    let said = run_ok(&["export", "warc", now.to_str().unwrap()], mirror.path());
    assert!(
        said.contains(&format!("{} records", resources.len())),
        "{said}"
    );
    warcio_check(&now);
    {
        let records = warc_records(&now);
        assert_eq!(records[0]["type"], "warcinfo");
        let mut want: Vec<(String, String)> = resources
            .iter()
            .map(|(p, b)| (format!("{}{p}", src.srv.base()), sha256(b)))
            .collect();
        want.sort();
        let got: Vec<(String, String)> = records[1..]
            .iter()
            .map(|r| {
                assert_eq!(r["type"], "resource");
                (
                    r["uri"].as_str().unwrap().to_string(),
                    r["sha256"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got, want);
        // WARC-Date: when the state arrived (the start of its run), to the microsecond.
        let runs: Vec<serde_json::Value> = ok_on_mirror(mirror.path(), &["log", "--json"])
            .0
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let run2 = runs[0]["started_at"].as_str().unwrap();
        let plain = records
            .iter()
            .find(|r| {
                r["uri"]
                    .as_str()
                    .is_some_and(|u| u.ends_with("/res/plain.txt"))
            })
            .unwrap();
        assert_eq!(&plain["date"].as_str().unwrap()[..19], &run2[..19]);
    }

    // Every version, split into files of at most about 600 bytes, each opening with its
    // warcinfo; the deletion a metadata record.
    let all = dir.path().join("all");
    run_ok(
        &[
            "export",
            "warc",
            all.to_str().unwrap(),
            "--all-versions",
            "--warc-size",
            "600",
        ],
        mirror.path(),
    );
    warcio_check(&all);
    {
        let records = warc_records(&all);
        let files: std::collections::BTreeSet<&str> = records
            .iter()
            .map(|r| r["file"].as_str().unwrap())
            .collect();
        assert!(files.len() > 2, "{files:?}");
        for f in &files {
            let first = records.iter().find(|r| r["file"] == *f).unwrap();
            assert_eq!(first["type"], "warcinfo", "{f}");
        }
        let body: Vec<&serde_json::Value> =
            records.iter().filter(|r| r["type"] != "warcinfo").collect();
        // 11 first states, then plain.txt's second and a%20b.txt's deletion.
        assert_eq!(body.len(), odd().len() + 2);
        let dates: Vec<&str> = body.iter().map(|r| r["date"].as_str().unwrap()).collect();
        assert!(
            dates.windows(2).all(|w| w[0] <= w[1]),
            "in the order they arrived"
        );
        let deleted: Vec<&&serde_json::Value> =
            body.iter().filter(|r| r["type"] == "metadata").collect();
        assert_eq!(deleted.len(), 1);
        assert!(deleted[0]["uri"]
            .as_str()
            .unwrap()
            .ends_with("/res/a%20b.txt"));
        let plain: Vec<&str> = body
            .iter()
            .filter(|r| r["uri"].as_str().unwrap().ends_with("/res/plain.txt"))
            .map(|r| r["sha256"].as_str().unwrap())
            .collect();
        assert_eq!(plain, vec![sha256(b"plain\n"), sha256(b"plain, changed\n")]);
    }
    // Bad combinations are usage errors.
    for args in [
        vec!["export", "tree", "x", "--all-versions"],
        vec!["export", "warc", "x", "--strip", "http://a/"],
        vec!["export", "warc", "x", "--warc-size", "0"],
    ] {
        let out = rsmirror()
            .args(&args)
            .current_dir(dir.path())
            .arg("--mirror")
            .arg(mirror.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
#[cfg_attr(
    missing = "warcio",
    ignore = "warcio is not installed: bash .ci/run installs it into .ci/venv"
)]
fn warc_files_split_after_the_record_that_passes_the_size_and_big_records_stream() {
    // Small records around one of 5 MB (more than a compressing thread holds: the walk
    // streams it itself), in files of about 1,000 bytes.
    let src = Source::new();
    let mut big = Vec::with_capacity(5 << 20);
    let mut x: u32 = 1;
    while big.len() < 5 << 20 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        big.extend_from_slice(&x.to_le_bytes());
    }
    let mut resources: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("/r/{i:02}.txt"),
                format!("record {i}\n").repeat(i + 1).into_bytes(),
            )
        })
        .collect();
    resources.insert(20, ("/r/20-big.bin".into(), big));
    let listed: Vec<(&str, Vec<u8>)> = resources
        .iter()
        .map(|(p, b)| (p.as_str(), b.clone()))
        .collect();
    src.publish("2026-03-01T00:00:00Z", &listed);
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&src.list(), mirror.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("w");
    run_ok(
        &[
            "export",
            "warc",
            dest.to_str().unwrap(),
            "--warc-size",
            "1000",
        ],
        mirror.path(),
    );
    warcio_check(&dest);
    let records = warc_records(&dest);
    // Every state once, in URI order, with its own bytes.
    let body: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["type"] == "resource").collect();
    let mut want: Vec<&(String, Vec<u8>)> = resources.iter().collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(body.len(), want.len());
    for (r, (path, bytes)) in body.iter().zip(want) {
        assert!(r["uri"].as_str().unwrap().ends_with(path.as_str()), "{r}");
        assert_eq!(r["sha256"], sha256(bytes), "{path}");
    }
    // Each file: its warcinfo first and named by its records; it ends with the record that
    // takes it past 1,000 bytes (the last file may hold less).
    let files: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert!(files.len() > 10, "{files:?}");
    for (i, f) in files.iter().enumerate() {
        let of: Vec<&serde_json::Value> = records.iter().filter(|r| r["file"] == *f).collect();
        assert_eq!(of[0]["type"], "warcinfo", "{f}");
        for r in &of[1..] {
            assert_eq!(r["warcinfo"], of[0]["id"], "{f}: {r}");
        }
        let size = std::fs::metadata(dest.join(f)).unwrap().len();
        let last = of.last().unwrap();
        assert_eq!(
            last["offset"].as_u64().unwrap() + last["length"].as_u64().unwrap(),
            size,
            "{f}"
        );
        if i + 1 < files.len() {
            assert!(size >= 1000, "{f}: {size}");
        }
        assert!(last["offset"].as_u64().unwrap() < 1000, "{f}: {last}");
    }
}

/// ocfl-py's validator on the storage root and on every object in it (issue 42: validating a
/// root alone checks its layout, not its objects: it passes a root with a corrupt object).
fn ocfl_validate(root: &Path) {
    let (ok, text) = ocfl_validation(root);
    assert!(ok, "ocfl-validate.py: {text}");
    assert!(!text.contains("[E"), "{text}");
}

/// (every path valid, what the validator said).
fn ocfl_validation(root: &Path) -> (bool, String) {
    let validate = validator("ocfl-validate.py");
    fn objects(dir: &Path, out: &mut Vec<PathBuf>) {
        if dir.join("0=ocfl_object_1.1").is_file() {
            out.push(dir.to_path_buf());
            return;
        }
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                objects(&e.path(), out);
            }
        }
    }
    let mut paths = vec![root.to_path_buf()];
    objects(root, &mut paths);
    assert!(paths.len() > 1, "no object under {}", root.display());
    let out = std::process::Command::new(validate)
        .args(&paths)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && !text.contains("[E"), text)
}

/// The inventory of the OCFL object of `uri` (0004 layout: sha256 of the id, 3 tuples of 3).
fn inventory(root: &Path, uri: &str) -> (PathBuf, serde_json::Value) {
    let h = sha256(uri.as_bytes());
    let obj = root.join(&h[..3]).join(&h[3..6]).join(&h[6..9]).join(&h);
    let inv = serde_json::from_slice(&std::fs::read(obj.join("inventory.json")).unwrap()).unwrap();
    (obj, inv)
}

/// An export stopped between an object's inventory and its sidecar (the window a SIGTERM can
/// land in) leaves them out of step; the same export run again finds nothing to add to that
/// object and still puts its sidecars in step, so every object validates.
#[test]
#[cfg_attr(
    missing = "ocfl",
    ignore = "ocfl-py (ocfl-validate.py) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn an_ocfl_object_whose_sidecar_is_out_of_step_is_mended_by_the_re_run() {
    let src = Source::new();
    let (mirror, _) = src.mirrored_twice();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ocfl");
    run_ok(&["export", "ocfl", root.to_str().unwrap()], mirror.path());
    let plain = format!("{}/res/plain.txt", src.srv.base());
    let (obj, inv) = inventory(&root, &plain);
    let head = inv["head"].as_str().unwrap().to_string();
    std::fs::remove_file(obj.join("inventory.json.sha256")).unwrap();
    std::fs::write(
        obj.join(&head).join("inventory.json.sha256"),
        b"0 inventory.json\n",
    )
    .unwrap();
    run_ok(&["export", "ocfl", root.to_str().unwrap()], mirror.path());
    for d in [obj.clone(), obj.join(&head)] {
        let side = std::fs::read_to_string(d.join("inventory.json.sha256")).unwrap();
        let inv = std::fs::read(d.join("inventory.json")).unwrap();
        assert_eq!(
            side,
            format!("{} inventory.json\n", sha256(&inv)),
            "{}",
            d.display()
        );
    }
    ocfl_validate(&root);
}

#[test]
#[cfg_attr(
    missing = "ocfl",
    ignore = "ocfl-py (ocfl-validate.py) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn an_ocfl_root_holds_every_version_and_grows_by_appending() {
    let src = Source::new();
    let (mirror, _) = src.mirrored_twice();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ocfl");

    // The state after run 1: one object per resource, one version each.
    let said = run_ok(
        &["export", "ocfl", root.to_str().unwrap(), "--at", "run:1"],
        mirror.path(),
    );
    assert!(said.contains(&format!("{} objects", odd().len())), "{said}");
    ocfl_validate(&root);
    let plain = format!("{}/res/plain.txt", src.srv.base());
    let (obj, inv) = inventory(&root, &plain);
    assert_eq!(inv["id"], plain);
    assert_eq!(inv["digestAlgorithm"], "sha256");
    assert_eq!(inv["head"], "v1");
    assert_eq!(
        std::fs::read(obj.join("v1/content/plain.txt")).unwrap(),
        b"plain\n"
    );
    let v1 = std::fs::read(obj.join("v1/inventory.json")).unwrap();

    // Now: the changed and the deleted resources get a v2; nothing else is touched.
    let said = run_ok(&["export", "ocfl", root.to_str().unwrap()], mirror.path());
    assert!(said.contains("2 written, 9 kept"), "{said}");
    ocfl_validate(&root);
    let (obj, inv) = inventory(&root, &plain);
    assert_eq!(inv["head"], "v2");
    assert_eq!(
        inv["versions"]["v2"]["state"][sha256(b"plain, changed\n")],
        serde_json::json!(["plain.txt"])
    );
    assert_eq!(
        std::fs::read(obj.join("v2/content/plain.txt")).unwrap(),
        b"plain, changed\n"
    );
    assert_eq!(
        std::fs::read(obj.join("v1/inventory.json")).unwrap(),
        v1,
        "v1 untouched"
    );
    let (_, gone) = inventory(&root, &format!("{}/res/a%20b.txt", src.srv.base()));
    assert_eq!(gone["head"], "v2");
    assert_eq!(gone["versions"]["v2"]["state"], serde_json::json!({}));
    // Exporting the same point again changes nothing.
    let said = run_ok(&["export", "ocfl", root.to_str().unwrap()], mirror.path());
    assert!(said.contains("0 written, 11 kept"), "{said}");

    // An earlier point cannot go into a root that holds later versions.
    let out = rsmirror()
        .args(["export", "ocfl"])
        .arg(&root)
        .args(["--at", "run:1", "--mirror"])
        .arg(mirror.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("only appends"),
        "{}",
        stderr_of(&out)
    );
    ocfl_validate(&root);

    // The validation reaches every object: one altered content file fails it.
    {
        let copy = tempfile::tempdir().unwrap();
        copy_tree(&root, copy.path());
        let obj = std::iter::successors(Some(copy.path().to_path_buf()), |d| {
            std::fs::read_dir(d)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .min()
        })
        .find(|d| d.join("0=ocfl_object_1.1").is_file())
        .expect("an object");
        let inv: serde_json::Value =
            serde_json::from_slice(&std::fs::read(obj.join("inventory.json")).unwrap()).unwrap();
        let manifest = inv["manifest"].as_object().unwrap();
        let content = manifest.values().next().unwrap()[0].as_str().unwrap();
        let file = obj.join(content);
        let mut perms = std::fs::metadata(&file).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&file, perms).unwrap();
        std::fs::write(&file, b"altered\n").unwrap();
        let (ok, text) = ocfl_validation(copy.path());
        assert!(!ok, "an altered object must fail validation: {text}");
    }
}

/// `python3 -m http.server` serving `dir` on 127.0.0.1 (a real static server), stopped when
/// dropped.
struct StaticServer {
    child: std::process::Child,
    port: u16,
}

impl StaticServer {
    fn start(dir: &Path) -> StaticServer {
        use std::io::BufRead;
        let mut child = std::process::Command::new("python3")
            .args([
                "-u",
                "-m",
                "http.server",
                "0",
                "--bind",
                "127.0.0.1",
                "--directory",
            ])
            .arg(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
        let port = line
            .split(" port ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        StaticServer { child, port }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The second mirror's current states, each traced back through the export's map to the
/// first mirror's URI: original URI -> sha256.
fn traced(second: &Path, base: &str, dest: &Path) -> BTreeMap<String, String> {
    let map: BTreeMap<String, String> =
        std::fs::read_to_string(dest.join(".rsmirror-export/map.tsv"))
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[0].to_string(), f[1].to_string())
            })
            .collect();
    current(second)
        .into_iter()
        .map(|(uri, sha)| {
            let path = uri
                .strip_prefix(base)
                .unwrap_or_else(|| panic!("{uri} not under {base}"));
            let path = percent_encoding::percent_decode_str(path)
                .decode_utf8()
                .unwrap();
            let original = map
                .get(path.as_ref())
                .unwrap_or_else(|| panic!("{path} not in the map"));
            (original.clone(), sha)
        })
        .collect()
}

#[test]
#[cfg_attr(
    missing = "resync",
    ignore = "resync 2.0.1 (resync-sync) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn a_resourcesync_export_is_a_source_rsmirror_and_resync_mirror() {
    let src = Source::new();
    src.dated.set(true);
    let (first, mut resources) = src.mirrored_once();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("published");
    std::fs::create_dir(&dest).unwrap();
    let web = StaticServer::start(&dest);
    let base = web.base();
    run_ok(
        &[
            "export",
            "resourcesync",
            dest.to_str().unwrap(),
            "--base-url",
            &base,
        ],
        first.path(),
    );

    // rsmirror mirrors the mirror: every byte back, under the published URLs.
    let second = tempfile::tempdir().unwrap();
    let out = baseline(&base, second.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(traced(second.path(), &base, &dest), current(first.path()));

    // So does resync-sync 2.0.1, the reference client.
    {
        let resync = validator("resync-sync");
        let copy = dir.path().join("resync-copy");
        let work = dir.path().join("resync-work");
        std::fs::create_dir_all(&work).unwrap();
        let out = std::process::Command::new(resync)
            .args([
                "--baseline",
                "--hash",
                "md5",
                "--hash",
                "sha-256",
                "--sitemap",
            ])
            .arg(format!("{base}resourcesync/resourcelist.xml"))
            .arg(format!("{}={}", base.trim_end_matches('/'), copy.display()))
            .current_dir(&work)
            .output()
            .unwrap();
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "resync-sync: {log}");
        let got: std::collections::BTreeSet<String> =
            files(&copy).values().map(|b| sha256(b)).collect();
        let want: std::collections::BTreeSet<String> =
            current(first.path()).into_values().collect();
        assert_eq!(got, want, "{log}");
        assert_eq!(files(&copy).len(), resources.len(), "{log}");
    }

    // The first mirror moves on; a re-export publishes the change, and the second follows
    // its Change List.
    resources.retain(|(p, _)| *p != "/res/a%20b.txt");
    resources[0].1 = b"plain, changed\n".to_vec();
    resources.push(("/res/new.txt", b"new\n".to_vec()));
    src.publish("2026-03-02T00:00:00Z", &resources);
    let out = baseline(&src.list(), first.path())
        .args(["--delete", "--force-delete"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    run_ok(
        &[
            "export",
            "resourcesync",
            dest.to_str().unwrap(),
            "--base-url",
            &base,
        ],
        first.path(),
    );
    let changes = std::fs::read_to_string(dest.join("resourcesync/changelist.xml")).unwrap();
    assert_eq!(changes.matches("<url>").count(), 3, "{changes}");
    // Issue 42, 11: rewritten at the same URL, it is an open list (no `until`: a closed one
    // never changes), and its entries carry the source's lastmod besides the datetime.
    assert!(!changes.contains("until="), "{changes}");
    assert_eq!(changes.matches("<lastmod>").count(), 2, "{changes}");

    // resync-sync follows the Change List, and its own audit then finds the copy in sync.
    {
        let resync = validator("resync-sync");
        let copy = dir.path().join("resync-copy");
        let work = dir.path().join("resync-work");
        let mapping = format!("{}={}", base.trim_end_matches('/'), copy.display());
        let run = |args: &[&str]| {
            let out = std::process::Command::new(&resync)
                .args(args)
                .arg(&mapping)
                .current_dir(&work)
                .output()
                .unwrap();
            let log = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.success(), log)
        };
        let changelist = format!("{base}resourcesync/changelist.xml");
        // From the list's own `from` (resync keeps no timestamp for a baseline of a list
        // named by --sitemap).
        let from = changes
            .split("from=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .to_string();
        let (ok, inc_log) = run(&[
            "--incremental",
            "--delete",
            "--changelist-uri",
            &changelist,
            "--from",
            &from,
        ]);
        assert!(
            ok && !inc_log.contains("Error"),
            "resync-sync --incremental: {inc_log}"
        );
        let resourcelist = format!("{base}resourcesync/resourcelist.xml");
        // (resync 2.0.1's --incremental fails with --hash: its ChangeList has no hashes().)
        let (ok, log) = run(&[
            "--audit",
            "--sitemap",
            &resourcelist,
            "--hash",
            "md5",
            "--hash",
            "sha-256",
        ]);
        assert!(
            ok && log.contains("IN SYNC") && !log.contains("NOT IN SYNC"),
            "resync-sync --audit: {log}\nafter --incremental: {inc_log}"
        );
    }
    let out = incremental(second.path()).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            s["created"].as_u64(),
            s["updated"].as_u64(),
            s["deleted"].as_u64()
        ),
        (Some(1), Some(1), Some(1)),
        "{s}"
    );
    assert_eq!(traced(second.path(), &base, &dest), current(first.path()));
}

/// Issue 44, 4: one export into a DEST at a time (a second exits 6 and changes nothing); a
/// re-export leaves exactly the exported state, whatever an export stopped midway (or a hand)
/// left in DEST; a ResourceSync export publishes no path of this machine.
#[test]
#[cfg_attr(
    missing = "bagit",
    ignore = "bagit-python (bagit.py) is not installed: bash .ci/run installs it into .ci/venv"
)]
fn an_export_is_whole_locked_and_leaves_nothing_else_in_dest() {
    let src = Source::new();
    let (mirror, resources) = src.mirrored_twice();
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("bag");
    run_ok(&["export", "bagit", bag.to_str().unwrap()], mirror.path());
    validate_bag(&bag);
    let before = files(&bag);
    // Issue 66, 12: a bag is published as it is; a finished export leaves no lock in it.
    let lock_path = bag.join(".rsmirror-export/export.lock");
    assert!(!lock_path.exists(), "the lock was left in the bag");

    // A second export while one holds DEST's lock.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .unwrap();
    lock.try_lock().unwrap();
    let out = rsmirror()
        .args(["export", "bagit"])
        .arg(&bag)
        .arg("--mirror")
        .arg(mirror.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("holds the lock"),
        "{}",
        stderr_of(&out)
    );
    drop(lock);
    std::fs::remove_file(&lock_path).unwrap();
    assert_eq!(files(&bag), before, "the refused export changed nothing");

    // What an export of another point, stopped midway, placed (no map names it), and a file
    // put there by hand: the next export removes both, and the bag is valid.
    let plain = map(&bag)
        .into_iter()
        .find(|(url, _)| url.ends_with("/res/plain.txt"))
        .map(|(_, (path, _))| path)
        .unwrap();
    let placed_by_a_stopped_export = bag
        .join("data")
        .join(&plain)
        .with_file_name("deleted-since.txt");
    std::fs::write(&placed_by_a_stopped_export, b"as run 1 had it\n").unwrap();
    let by_hand = bag.join("data/notes/readme.txt");
    std::fs::create_dir_all(by_hand.parent().unwrap()).unwrap();
    std::fs::write(&by_hand, b"mine").unwrap();
    std::fs::write(bag.join(".rsmirror-export/INCOMPLETE"), b"").unwrap();
    let err = run_ok(&["export", "bagit", bag.to_str().unwrap()], mirror.path());
    assert!(
        !by_hand.exists() && !bag.join("data/notes").exists(),
        "{err}"
    );
    assert!(!placed_by_a_stopped_export.exists(), "{err}");
    assert_eq!(files(&bag), before, "{err}");
    validate_bag(&bag);
    let data_files = files(&bag.join("data")).len();
    assert_eq!(data_files, resources.len());

    // A ResourceSync export is published as it is: no path of this machine in it.
    let published = dir.path().join("published");
    run_ok(
        &[
            "export",
            "resourcesync",
            published.to_str().unwrap(),
            "--base-url",
            "https://mirror.example.org/",
        ],
        mirror.path(),
    );
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(published.join(".rsmirror-export/export.json")).unwrap(),
    )
    .unwrap();
    assert!(record.get("mirror").is_none(), "{record}");
    assert!(!published.join(".rsmirror-export/export.lock").exists());
    let machine_path = mirror.path().to_string_lossy().into_owned();
    for (name, bytes) in files(&published) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&machine_path),
            "{name} names {machine_path}"
        );
    }
    // Other formats keep the mirror's path in their record, for the people who made it.
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(bag.join(".rsmirror-export/export.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["mirror"], machine_path.as_str());
}

/// Issue 44, 4: while a run is under way, `export` (and `ls`) without `--at` show the mirror as
/// the last run that ended left it, and say that a run is in progress.
#[test]
fn an_export_beside_a_running_baseline_shows_the_last_run_that_ended() {
    use std::time::{Duration, Instant};
    let source = tempfile::tempdir().unwrap();
    generate_source(source.path(), 5, 64);
    let srv = TestServer::start(source.path());
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/resourcelist.xml"), mirror.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // The same first five and 55 more, slowly.
    generate_source(source.path(), 60, 64);
    srv.set_delay(Duration::from_millis(60));
    let running = std::process::Command::new(assert_cmd::cargo::cargo_bin("rsmirror"))
        .args([
            "baseline",
            &srv.url("/resourcelist.xml"),
            "-j",
            "1",
            "--mirror",
        ])
        .arg(mirror.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while current(mirror.path()).len() <= 5 {
        assert!(Instant::now() < deadline, "the baseline committed nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("tree");
    let out = rsmirror()
        .args(["export", "tree"])
        .arg(&dest)
        .args(["--json", "--mirror"])
        .arg(mirror.path())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("run 2 has not ended"), "{err}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (summary["run"].as_i64(), summary["files"].as_u64()),
        (Some(1), Some(5)),
        "{summary}"
    );
    assert_eq!((files(&dest).len(), map(&dest).len()), (5, 5));
    let out = on_mirror(mirror.path(), &["ls"]);
    assert_eq!(stdout_of(&out).lines().count(), 5);
    assert!(stderr_of(&out).contains("run 2 has not ended"));

    srv.set_delay(Duration::ZERO);
    let out = running.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = run_ok(&["export", "tree", dest.to_str().unwrap()], mirror.path());
    assert!(!err.contains("has not ended"), "{err}");
    assert!(err.contains("as run 2 left it"), "{err}");
    assert_eq!(map(&dest).len(), 60);
}

/// Issue 67, 5: bytes kept in a content coding. A resource served with `Content-Encoding:
/// gzip` (and declared `encoding="gzip"`), one only declared so, and a plain one: the catalog
/// records both codings, `ls -l`, `ls --json`, `log`, `log --json` and `cat -v` show them,
/// `cat` gives the bytes as kept; the WARC export writes the encoded one as a `response` whose
/// HTTP head says `Content-Encoding: gzip` (warcio decodes it back to the text and checks its
/// digests), the ResourceSync export declares `encoding="gzip"`, and the tree's and the bag's
/// map name the coding of each file.
#[test]
#[cfg_attr(
    any(missing = "bagit", missing = "warcio"),
    ignore = "bagit-python or warcio is not installed: bash .ci/run installs them into .ci/venv"
)]
fn content_encoded_bytes_are_recorded_shown_and_exported_as_kept() {
    let text = b"notes, read after gzip decoding\n".repeat(20);
    let gz = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&text).unwrap();
        e.finish().unwrap()
    };
    let src = Source::new();
    let base = src.srv.base();
    let entry = |path: &str, bytes: &[u8], more: &str| {
        format!(
            "<url><loc>{base}{path}</loc><rs:md hash=\"sha-256:{}\" length=\"{}\"{more}/></url>\n",
            sha256(bytes),
            bytes.len()
        )
    };
    let list = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n<rs:md capability=\"resourcelist\" at=\"2026-03-01T00:00:00Z\"/>\n{}{}{}</urlset>\n",
        entry("/res/notes.txt", &gz, " type=\"text/plain\" encoding=\"gzip\""),
        entry("/res/packed.txt", &gz, " encoding=\"gzip\""),
        entry("/res/plain.txt", b"plain\n", ""),
    );
    src.srv
        .set_rule("/resourcelist.xml", Rule::Body(list.into_bytes()));
    src.srv.set_rule(
        "/res/notes.txt",
        Rule::Encoded {
            body: gz.clone(),
            coding: "gzip".into(),
        },
    );
    src.srv.set_rule("/res/packed.txt", Rule::Body(gz.clone()));
    src.srv
        .set_rule("/res/plain.txt", Rule::Body(b"plain\n".to_vec()));
    let mirror = tempfile::tempdir().unwrap();
    let out = baseline(&src.list(), mirror.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let notes = format!("{base}/res/notes.txt");
    let packed = format!("{base}/res/packed.txt");

    // Recorded and shown.
    let (long, _) = ok_on_mirror(mirror.path(), &["ls", "-l"]);
    let line = |uri: &str| {
        long.lines()
            .find(|l| l.contains(uri))
            .unwrap_or_else(|| panic!("{uri} in {long}"))
            .to_string()
    };
    assert!(line(&notes).ends_with("(gzip-encoded)"), "{long}");
    assert!(line(&packed).ends_with("(gzip-encoded)"), "{long}");
    assert!(line("/res/plain.txt").ends_with("/res/plain.txt"), "{long}");
    let (json, _) = ok_on_mirror(mirror.path(), &["ls", "--json"]);
    let codings: Vec<(String, serde_json::Value, serde_json::Value)> = json
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let path = v["uri"].as_str().unwrap().replace(&base, "");
            (
                path,
                v["declared_encoding"].clone(),
                v["content_encoding"].clone(),
            )
        })
        .collect();
    use serde_json::json;
    assert_eq!(
        codings,
        vec![
            ("/res/notes.txt".into(), json!("gzip"), json!("gzip")),
            ("/res/packed.txt".into(), json!("gzip"), json!(null)),
            ("/res/plain.txt".into(), json!(null), json!(null)),
        ]
    );
    let (log, _) = ok_on_mirror(mirror.path(), &["log", &notes, "--json"]);
    let log: serde_json::Value = serde_json::from_str(&log).unwrap();
    assert_eq!(log["versions"][0]["content_encoding"], "gzip", "{log}");
    assert_eq!(log["versions"][0]["declared_encoding"], "gzip", "{log}");
    assert_eq!(log["versions"][0]["media_type"], "text/plain", "{log}");
    let (log, _) = ok_on_mirror(mirror.path(), &["log", &packed]);
    assert!(
        log.contains("encoding gzip (declared): the bytes are kept encoded"),
        "{log}"
    );
    let out = on_mirror(mirror.path(), &["cat", "-v", &notes]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(out.stdout, gz);
    assert!(
        stderr_of(&out).contains("encoding gzip (served as Content-Encoding, and declared)"),
        "{}",
        stderr_of(&out)
    );

    // WARC: a response whose HTTP head names the coding; warcio decodes it to the text.
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("warc");
    run_ok(&["export", "warc", warc.to_str().unwrap()], mirror.path());
    warcio_check(&warc);
    let records = warc_records(&warc);
    let record = |uri: &str| {
        records
            .iter()
            .find(|r| r["uri"] == uri)
            .unwrap_or_else(|| panic!("{uri} in {records:?}"))
            .clone()
    };
    for uri in [&notes, &packed] {
        let r = record(uri);
        assert_eq!(r["type"], "response", "{r}");
        assert_eq!(
            r["content_type"], "application/http;msgtype=response",
            "{r}"
        );
        assert_eq!(r["sha256"], sha256(&text), "{r}");
    }
    let plain = record(&format!("{base}/res/plain.txt"));
    assert_eq!(plain["type"], "resource", "{plain}");
    assert_eq!(plain["sha256"], sha256(b"plain\n"), "{plain}");

    // ResourceSync: the coding declared with the bytes' own digest.
    let rs = dir.path().join("rs");
    run_ok(
        &[
            "export",
            "resourcesync",
            rs.to_str().unwrap(),
            "--base-url",
            "http://example.org/",
        ],
        mirror.path(),
    );
    let xml = std::fs::read_to_string(rs.join("resourcesync/resourcelist.xml")).unwrap();
    let md = |path: &str| {
        let at = xml.find(path).unwrap_or_else(|| panic!("{path} in {xml}"));
        let md = &xml[at..];
        md[..md.find("/>").unwrap()].to_string()
    };
    assert!(md("res/notes.txt").contains(" encoding=\"gzip\""), "{xml}");
    assert!(md("res/notes.txt").contains(&sha256(&gz)), "{xml}");
    assert!(!md("res/plain.txt").contains("encoding="), "{xml}");

    // The bag: valid, and its map names each file's coding.
    let bag = dir.path().join("bag");
    run_ok(&["export", "bagit", bag.to_str().unwrap()], mirror.path());
    validate_bag(&bag);
    let found = walk_files(&bag)
        .into_iter()
        .find(|p| p.ends_with(".rsmirror-export/map.tsv"))
        .expect("a map in the bag");
    let map = std::fs::read_to_string(found).unwrap();
    let coding = |uri: &str| {
        let l = map.lines().find(|l| l.contains(uri)).unwrap();
        l.split('\t').nth(5).unwrap().to_string()
    };
    assert_eq!(coding(&notes), "gzip", "{map}");
    assert_eq!(coding(&packed), "gzip", "{map}");
    assert_eq!(coding("/res/plain.txt"), "", "{map}");
}

/// Every file under `root`, any depth.
fn walk_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
