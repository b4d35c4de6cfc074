//! Reading the mirror (`ls`, `cat`, `log`, `diff`, `status`): a source mirrored, two rounds of
//! changes applied, then every reading command checked against the source's states, in text
//! and JSON; a damaged object, bad WHENs and unknown URLs.

use crate::server::TestServer;
use crate::support::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const T0: &str = "2026-03-01T00:00:00Z";

/// The mirror after a baseline (run 1) and two incremental runs (2 and 3), with the source's
/// bytes of every state, by resource name and run.
struct History {
    _tree: Tree,
    srv: TestServer,
    dir: tempfile::TempDir,
    /// (name, run) -> the bytes current after that run.
    states: BTreeMap<(String, i64), Vec<u8>>,
}

impl History {
    fn url(&self, name: &str) -> String {
        format!("{}/res/{name}", self.srv.base())
    }

    fn mirror(&self) -> &Path {
        self.dir.path()
    }

    fn bytes(&self, name: &str, run: i64) -> &[u8] {
        &self.states[&(name.to_string(), run)]
    }

    fn read(&self, args: &[&str]) -> std::process::Output {
        rsmirror()
            .args(args)
            .arg("--mirror")
            .arg(self.mirror())
            .output()
            .unwrap()
    }

    /// stdout of a command that must succeed.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.read(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: stderr: {}",
            stderr_of(&out)
        );
        stdout_of(&out)
    }

    fn json_lines(&self, args: &[&str]) -> Vec<Value> {
        self.ok(args)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    }
}

fn history() -> History {
    let t = Tree::new();
    let mut states = BTreeMap::new();
    let mut put = |t: &Tree, name: &str, run: i64, text: &str| {
        t.put(name, text.as_bytes());
        states.insert((name.to_string(), run), text.as_bytes().to_vec());
    };
    for i in 1..=5 {
        put(
            &t,
            &format!("r{i}"),
            1,
            &format!("r{i}, as first mirrored\n"),
        );
    }
    t.capability_list("changelist.xml");
    t.resource_list(T0, &["r1", "r2", "r3", "r4", "r5"]);
    t.change_list("changelist.xml", T0, None, &[]);
    let srv = TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let out = baseline(&srv.url("/capabilitylist.xml"), dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // Round 1 (run 2): r1 updated, r6 created, r2 deleted.
    put(&t, "r1", 2, "r1, second state\n");
    put(&t, "r6", 2, "r6, new in round one\n");
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
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // Round 2 (run 3): r1 and r3 updated, r4 deleted, r7 created.
    put(&t, "r1", 3, "r1, third state, longer than the others\n");
    put(&t, "r3", 3, "r3, second state\n");
    // The same bytes as r5: one object for two resources.
    put(&t, "r7", 3, "r5, as first mirrored\n");
    t.remove("r4");
    t.change_list(
        "changelist.xml",
        T0,
        None,
        &[
            ("r1", "updated", "2026-03-02T01:00:00Z"),
            ("r3", "updated", "2026-03-02T02:00:00Z"),
            ("r4", "deleted", "2026-03-02T03:00:00Z"),
            ("r7", "created", "2026-03-02T04:00:00Z"),
        ],
    );
    let out = incremental(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // Carry unchanged states forward: (name, run) for every run the resource was present.
    for run in 2..=3 {
        for i in 1..=7 {
            let name = format!("r{i}");
            let gone = (name == "r2" && run >= 2) || (name == "r4" && run >= 3);
            if gone || states.contains_key(&(name.clone(), run)) {
                continue;
            }
            if let Some(prev) = states.get(&(name.clone(), run - 1)).cloned() {
                states.insert((name, run), prev);
            }
        }
    }
    History {
        _tree: t,
        srv,
        dir,
        states,
    }
}

/// The names present after a run, sorted as URIs sort.
fn present(h: &History, run: i64) -> Vec<String> {
    let mut names: Vec<String> = h
        .states
        .keys()
        .filter(|(_, r)| *r == run)
        .map(|(n, _)| h.url(n))
        .collect();
    names.sort();
    names
}

fn sha256(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

#[test]
fn ls_lists_the_resources_present_at_each_point() {
    let h = history();
    let lines = |args: &[&str]| -> Vec<String> {
        h.ok(args).lines().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(lines(&["ls"]), present(&h, 3));
    for run in 1..=3 {
        assert_eq!(
            lines(&["ls", "--at", &format!("run:{run}")]),
            present(&h, run),
            "run {run}"
        );
    }
    assert!(lines(&["ls", "--at", "run:0"]).is_empty());
    // Counted from the newest run; and times ago, as git writes them.
    assert_eq!(lines(&["ls", "--at", "run:-1"]), present(&h, 3));
    assert_eq!(lines(&["ls", "--at", "run:-3"]), present(&h, 1));
    assert_eq!(lines(&["ls", "--at", "now"]), present(&h, 3));
    assert!(lines(&["ls", "--at", "1 week ago"]).is_empty());
    let out = rsmirror()
        .args(["ls", "--at", "run:-4", "--mirror"])
        .arg(h.dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(lines(&["ls", "--at", "2001-01-01"]).is_empty());
    // A prefix: only r1 (not r10..., there are none), and the collection filter.
    assert_eq!(lines(&["ls", &h.url("r1")]), vec![h.url("r1")]);
    assert_eq!(
        lines(&["ls", "--collection", &h.srv.url("/capabilitylist.xml")]),
        present(&h, 3)
    );
    // --deleted: r2 and r4 too, saying so.
    let all = lines(&["ls", "--deleted"]);
    assert_eq!(all.len(), 7);
    assert!(
        all.iter()
            .any(|l| l.starts_with(&format!("{}  (deleted ", h.url("r2")))),
        "{all:?}"
    );

    // -l: length, lastmod, sha256 (12), arrived, URI in columns.
    let long = lines(&["ls", "-l"]);
    let r1 = long.iter().find(|l| l.ends_with(&h.url("r1"))).unwrap();
    let cols: Vec<&str> = r1.split_whitespace().collect();
    assert_eq!(cols[0], h.bytes("r1", 3).len().to_string());
    assert_eq!(cols[2], &sha256(h.bytes("r1", 3))[..12]);
    assert!(cols[3].ends_with('Z'), "{r1}");
    let widths: Vec<usize> = long.iter().map(|l| l.find("http").unwrap()).collect();
    assert!(widths.windows(2).all(|w| w[0] == w[1]), "aligned: {long:?}");

    // JSON Lines, with the state of each resource at the point.
    let json = h.json_lines(&["ls", "--json", "--deleted", "--at", "run:2"]);
    assert_eq!(json.len(), 6);
    for v in &json {
        let uri = v["uri"].as_str().unwrap();
        let name = uri.rsplit('/').next().unwrap();
        match h.states.get(&(name.to_string(), 2)) {
            Some(bytes) => {
                assert_eq!(v["deleted"], false);
                assert_eq!(v["sha256"], sha256(bytes));
                assert_eq!(v["length"], bytes.len());
            }
            None => {
                assert_eq!(name, "r2");
                assert_eq!(v["deleted"], true);
                assert_eq!(v["run"], 2);
            }
        }
        assert!(v["arrived"].as_str().unwrap().ends_with('Z'));
        assert_eq!(v["collection"], h.srv.url("/capabilitylist.xml"));
    }
}

#[test]
fn cat_gives_the_bytes_of_every_state_and_says_why_when_there_are_none() {
    let h = history();
    let r1 = h.url("r1");
    let cat = |extra: &[&str]| -> Vec<u8> {
        let mut args = vec!["cat", r1.as_str()];
        args.extend_from_slice(extra);
        let out = h.read(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        out.stdout
    };
    assert_eq!(cat(&[]), h.bytes("r1", 3));
    for run in 1..=3 {
        assert_eq!(cat(&["--at", &format!("run:{run}")]), h.bytes("r1", run));
    }
    // A time: the arrival of run 2's state, as `ls --json` gives it, and the same time as
    // `ls -l` shows it (rounded up to the second).
    let arrived = h.json_lines(&["ls", "--json", "--at", "run:2"])[0]["arrived"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(cat(&["--at", &arrived]), h.bytes("r1", 2));
    let shown = h.ok(&["ls", "-l", "--at", "run:2"]);
    let shown = shown.split_whitespace().nth(3).unwrap();
    assert_eq!(cat(&["--at", shown]), h.bytes("r1", 2));
    // --version, from log --json.
    let log: Value = serde_json::from_str(&h.ok(&["log", &r1, "--json"])).unwrap();
    let first = log["versions"][2]["version"].as_i64().unwrap();
    assert_eq!(cat(&["--version", &first.to_string()]), h.bytes("r1", 1));

    // -o: the file, byte-exact.
    let out_dir = tempfile::tempdir().unwrap();
    let file = out_dir.path().join("r1.txt");
    h.ok(&["cat", &r1, "--at", "run:1", "-o", file.to_str().unwrap()]);
    assert_eq!(std::fs::read(&file).unwrap(), h.bytes("r1", 1));

    // Deleted: says by which run, and the state before.
    let out = h.read(&["cat", &h.url("r2")]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr_of(&out);
    assert!(e.contains("was deleted by run 2 (incremental"), "{e}");
    assert!(e.contains("--version"), "{e}");
    // ... but its bytes at run 1 are there.
    let out = h.read(&["cat", &h.url("r2"), "--at", "run:1"]);
    assert_eq!(out.stdout, h.bytes("r2", 1));
    // Not there yet.
    let out = h.read(&["cat", &h.url("r7"), "--at", "run:2"]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr_of(&out);
    assert!(e.contains("was not in the mirror yet"), "{e}");
    assert!(e.contains("arrived with run 3"), "{e}");
    // Unknown URL: the closest ones named.
    let out = h.read(&["cat", &format!("{}/res/r11", h.srv.base())]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr_of(&out);
    assert!(e.contains("is not in the mirror"), "{e}");
    assert!(e.contains(&r1), "{e}");
    // A bad WHEN.
    for bad in ["last tuesday", "run:x", "run:99", "2026-02-30"] {
        let out = h.read(&["cat", &r1, "--at", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(stderr_of(&out).contains(bad), "{bad}: {}", stderr_of(&out));
    }
    // A version of another resource.
    let out = h.read(&["cat", &h.url("r5"), "--version", &first.to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("is a version of"));
}

/// The object of r3's current state, made writable and overwritten with other bytes.
fn damage(h: &History, name: &str) -> std::path::PathBuf {
    let sha = sha256(h.bytes(name, 3));
    let path = h.mirror().join("objects/sha256").join(&sha[..2]).join(&sha);
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&path, perms).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 0x20;
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn cat_of_a_missing_object_names_it() {
    let h = history();
    let object = damage(&h, "r3");
    std::fs::remove_file(&object).unwrap();
    let relative = object.strip_prefix(h.mirror()).unwrap().to_str().unwrap();
    let r3 = h.url("r3");
    let out = h.read(&["cat", &r3]);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr_of(&out);
    assert!(
        e.contains(&format!("{r3} (version "))
            && e.contains(&format!("its object {relative} is missing")),
        "{e}"
    );
}

#[test]
fn cat_of_a_damaged_object_fails_and_leaves_no_file() {
    let h = history();
    let object = damage(&h, "r3");
    let relative = object.strip_prefix(h.mirror()).unwrap().to_str().unwrap();
    let r3 = h.url("r3");
    let out = h.read(&["cat", &r3]);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr_of(&out);
    assert!(e.contains("does not match the catalog"), "{e}");
    assert!(e.contains(&r3), "{e}");
    assert!(e.contains(&format!("stored object {relative} ")), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r3.txt");
    let out = h.read(&["cat", &r3, "-o", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!file.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no temporary file left"
    );
    // The earlier state is intact and still comes out.
    let out = h.read(&["cat", &r3, "--at", "run:1"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, h.bytes("r3", 1));
    // A missing object: exit 1 too, naming it.
    let sha = sha256(h.bytes("r5", 3));
    std::fs::remove_file(h.mirror().join("objects/sha256").join(&sha[..2]).join(&sha)).unwrap();
    let out = h.read(&["cat", &h.url("r5")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("is missing"),
        "{}",
        stderr_of(&out)
    );

    // The audit that finds it, and `log --run` that shows its findings.
    let out = h.read(&["audit", "--offline", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let runs = h.json_lines(&["log", "--json"]);
    let audit = runs[0]["run"].as_i64().unwrap();
    assert_eq!(runs[0]["command"], "audit");
    let text = h.ok(&["log", "--run", &audit.to_string()]);
    assert!(text.contains("findings:"), "{text}");
    assert!(text.contains(&r3), "{text}");
    let doc: Value =
        serde_json::from_str(&h.ok(&["log", "--run", &audit.to_string(), "--json"])).unwrap();
    let classes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["class"].as_str().unwrap())
        .collect();
    assert!(classes.contains(&"corrupt"), "{classes:?}");
    assert!(classes.contains(&"missing-object"), "{classes:?}");
    // A check for monitoring (issue 44): exit 1, the hint's code in --json.
    let out = h.read(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    let status = stdout_of(&out);
    assert!(
        status.contains(&format!(
            "hint: the last audit (run {audit}) found differences"
        )),
        "{status}"
    );
    let st: Value = serde_json::from_slice(&h.read(&["status", "--json"]).stdout).unwrap();
    assert!(
        st["hints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["code"] == "audit-differences" && h["needs_person"] == true),
        "{st}"
    );
}

#[test]
fn log_shows_every_version_and_the_runs() {
    let h = history();
    let r1 = h.url("r1");
    let doc: Value = serde_json::from_str(&h.ok(&["log", &r1, "--json"])).unwrap();
    assert_eq!(doc["uri"], r1);
    let versions = doc["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 3);
    for (v, run) in versions.iter().zip([3, 2, 1]) {
        assert_eq!(v["run"], run);
        assert_eq!(v["sha256"], sha256(h.bytes("r1", run)));
        assert_eq!(v["length"], h.bytes("r1", run).len());
        assert_eq!(v["arrived_via"], "http");
        assert!(v["arrived"].as_str().unwrap().ends_with('Z'));
        assert!(v["md5"].as_str().is_some());
    }
    assert_eq!(versions[0]["change"], "updated");
    assert_eq!(versions[0]["event_time"], "2026-03-02T01:00:00Z");
    assert_eq!(versions[0]["run_command"], "incremental");
    assert_eq!(versions[0]["document"], h.srv.url("/changelist.xml"));
    assert_eq!(versions[2]["change"], "created");
    assert_eq!(versions[2]["run_command"], "baseline");
    let text = h.ok(&["log", &r1]);
    assert_eq!(text.matches("version ").count(), 3, "{text}");
    assert!(text.starts_with("version "), "newest first: {text}");
    assert!(text.contains(&format!("sha256 {}", sha256(h.bytes("r1", 3)))));
    assert!(text.contains(&format!("(listed in {})", h.srv.url("/changelist.xml"))));
    // A deleted resource: its tombstone first.
    let doc: Value = serde_json::from_str(&h.ok(&["log", &h.url("r2"), "--json"])).unwrap();
    assert_eq!(doc["versions"][0]["change"], "deleted");
    assert_eq!(doc["versions"][0]["event_time"], "2026-03-01T03:00:00Z");

    // The runs, newest first.
    let runs = h.json_lines(&["log", "--json"]);
    let ids: Vec<i64> = runs.iter().map(|r| r["run"].as_i64().unwrap()).collect();
    assert_eq!(ids, vec![3, 2, 1]);
    assert_eq!(runs[0]["command"], "incremental");
    assert_eq!(runs[0]["outcome"], "ok");
    assert_eq!(runs[0]["exit_code"], 0);
    assert_eq!(runs[0]["counts"]["created"], 1);
    assert_eq!(runs[0]["counts"]["updated"], 2);
    assert_eq!(runs[0]["counts"]["deleted"], 1);
    assert_eq!(runs[2]["command"], "baseline");
    assert!(runs[2]["duration_seconds"].as_f64().unwrap() >= 0.0);
    let text = h.ok(&["log"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("RUN") && lines[0].contains("OUTCOME"),
        "{text}"
    );
    assert!(
        lines[1].trim_start().starts_with("3  incremental"),
        "{text}"
    );
    assert!(lines[1].contains("created 1"), "{text}");
    let run2 = h.ok(&["log", "--run", "2"]);
    assert!(run2.contains("rsmirror diff run:1 run:2"), "{run2}");
    // Its deletion is in the record, as a baseline's --delete records its own (issue 66, 7).
    assert!(
        run2.contains("deleted  ") && run2.contains("/res/r2: deleted at the source"),
        "{run2}"
    );
    let out = h.read(&["log", "--run", "42"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("no run 42"));
}

#[test]
fn diff_marks_what_changed_between_two_points() {
    let h = history();
    let marks = |args: &[&str]| -> Vec<String> { h.ok(args).lines().map(str::to_string).collect() };
    let u = |n: &str| h.url(n);
    assert_eq!(
        marks(&["diff", "run:1", "run:2"]),
        vec![
            format!("* {}", u("r1")),
            format!("- {}", u("r2")),
            format!("+ {}", u("r6"))
        ]
    );
    // To now (run 3) from run 1: both rounds, r1 updated twice shown once.
    assert_eq!(
        marks(&["diff", "run:1"]),
        vec![
            format!("* {}", u("r1")),
            format!("- {}", u("r2")),
            format!("* {}", u("r3")),
            format!("- {}", u("r4")),
            format!("+ {}", u("r6")),
            format!("+ {}", u("r7")),
        ]
    );
    // From before the first run: everything present is created.
    assert_eq!(
        marks(&["diff", "run:0", "run:3"]),
        present(&h, 3)
            .iter()
            .map(|u| format!("+ {u}"))
            .collect::<Vec<_>>()
    );
    // Backwards: the marks turn round.
    assert_eq!(
        marks(&["diff", "run:3", "run:2"]),
        vec![
            format!("* {}", u("r1")),
            format!("* {}", u("r3")),
            format!("+ {}", u("r4")),
            format!("- {}", u("r7")),
        ]
    );
    let json = h.json_lines(&["diff", "run:2", "run:3", "--json"]);
    assert_eq!(json.len(), 4);
    assert_eq!(json[0]["mark"], "*");
    assert_eq!(json[0]["change"], "updated");
    assert_eq!(json[0]["before"]["sha256"], sha256(h.bytes("r1", 2)));
    assert_eq!(json[0]["after"]["sha256"], sha256(h.bytes("r1", 3)));
    assert_eq!(json[2]["change"], "deleted");
    assert!(json[2]["after"].is_null());
    assert_eq!(json[3]["change"], "created");
    assert!(json[3]["before"].is_null());
    let out = h.read(&["diff", "next week"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("is not a time"));
}

#[test]
fn status_says_what_the_mirror_holds_and_what_needs_a_person() {
    let h = history();
    let st: Value = serde_json::from_str(&h.ok(&["status", "--json"])).unwrap();
    assert_eq!(
        st["schema_version"],
        rsmirror::store::catalog::SCHEMA_VERSION
    );
    assert_eq!(st["resources_present"], 5);
    assert_eq!(st["resources_deleted"], 2);
    // r1: 3, r2: 2, r3: 2, r4: 2, r5: 1, r6: 1, r7: 1.
    assert_eq!(st["versions"], 12);
    // 10 states with bytes (r1 x3, r2, r3 x2, r4, r5, r6, r7); r7's bytes are r5's, stored
    // once.
    assert_eq!(st["objects"], 9);
    let bytes: usize = h
        .states
        .values()
        .map(|b| (sha256(b), b.len()))
        .collect::<BTreeMap<_, _>>()
        .values()
        .sum();
    assert_eq!(st["object_bytes"], bytes);
    let source = &st["sources"][0];
    assert_eq!(source["kind"], "resourcesync");
    let c = &source["collections"][0];
    assert_eq!(c["name"], h.srv.url("/capabilitylist.xml"));
    assert_eq!(c["resources_present"], 5);
    assert_eq!(c["sync_point"]["at"], "2026-03-02T04:00:00Z");
    assert_eq!(c["sync_point"]["run"], 3);
    assert_eq!(source["last_runs"]["incremental"]["run"], 3);
    assert_eq!(source["last_runs"]["baseline"]["run"], 1);
    assert!(st["fixity"]["current_objects_rehashed_since"].is_null());
    let hints = st["hints"].as_array().unwrap();
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(hints[0]["hint"]
        .as_str()
        .unwrap()
        .contains("never all been re-hashed"));
    // Advice on a young mirror, not a check that fails (issue 44: status exits 0).
    assert_eq!(hints[0]["code"], "fixity-never");
    assert_eq!(hints[0]["needs_person"], false);

    // Two nightly slices of an offline audit cover every current object; all versions are
    // not covered until an --all-versions audit.
    for slice in ["1/2", "2/2"] {
        let out = h.read(&["audit", "--offline", "--sample", slice, "-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    }
    let st: Value = serde_json::from_str(&h.ok(&["status", "--json"])).unwrap();
    let runs = h.json_lines(&["log", "--json"]);
    assert_eq!(
        st["fixity"]["current_objects_rehashed_since"], runs[1]["started_at"],
        "since the first slice of the two"
    );
    assert!(st["fixity"]["all_objects_rehashed_since"].is_null());
    assert_eq!(st["last_audit"]["sample"], "2/2");
    assert!(st["hints"].as_array().unwrap().is_empty(), "{st}");
    let text = h.ok(&["status"]);
    for want in [
        "resources   5 present, 2 deleted; 12 versions",
        "sync point  2026-03-02T04:00:00Z",
        "last incremental",
        "last audit   run 5",
        "slice 2/2",
        "every object re-hashed     never",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }

    // A failed run is a hint: an incremental whose Change List is gone.
    h.srv
        .set_rule("/changelist.xml", crate::server::Rule::Status(404));
    let out = incremental(h.dir.path()).arg("--tries=1").output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    // Issue 44: status is a check a monitoring system can use: exit 1, a stable code.
    let out = h.read(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hints: Vec<(&str, &str, bool)> = st["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let text = h["hint"].as_str().unwrap();
            (
                h["code"].as_str().unwrap(),
                text,
                h["needs_person"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        hints
            .iter()
            .any(|(code, text, person)| *code == "run-failed"
                && text.contains("the last incremental of")
                && *person),
        "{hints:?}"
    );
    let out = h.read(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_of(&out).contains("hint: the last incremental of"));
}

#[test]
fn readers_do_not_wait_for_a_run_that_holds_the_lock() {
    let h = history();
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(h.mirror().join(".lock"))
        .unwrap();
    lock.try_lock().unwrap();
    // A writer is refused ...
    let out = incremental(h.mirror()).output().unwrap();
    assert_eq!(out.status.code(), Some(6));
    // ... every reader works.
    assert_eq!(h.ok(&["ls"]).lines().count(), 5);
    assert_eq!(h.read(&["cat", &h.url("r1")]).stdout, h.bytes("r1", 3));
    h.ok(&["log"]);
    h.ok(&["log", &h.url("r1")]);
    h.ok(&["diff", "run:1"]);
    h.ok(&["status"]);
}

#[test]
fn readers_work_on_read_only_media() {
    let Some(disk) = Tmpfs::mount("20m") else {
        return;
    };
    let h = history();
    let mirror = disk.0.path().join("m");
    let copy = std::process::Command::new("cp")
        .arg("-a")
        .arg(h.mirror())
        .arg(&mirror)
        .status()
        .unwrap();
    assert!(copy.success());
    disk.remount("ro");
    let read = |args: &[&str]| {
        let out = rsmirror()
            .args(args)
            .arg("--mirror")
            .arg(&mirror)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
        out.stdout
    };
    assert_eq!(read(&["ls"]).iter().filter(|b| **b == b'\n').count(), 5);
    assert_eq!(
        read(&["cat", &h.url("r1"), "--at", "run:1"]),
        h.bytes("r1", 1)
    );
    read(&["status"]);
    read(&["diff", "run:1"]);
    // Issue 66, 11: `catalog check` only reads, so it checks on read-only media (no lock can
    // be taken there, and no run can write meanwhile).
    let said = String::from_utf8(read(&["catalog", "check"])).unwrap();
    assert!(
        said.contains("ok      PRAGMA integrity_check") && said.ends_with("the catalog is sound\n"),
        "{said}"
    );
    // A log beside the catalog cannot be read there: named, not passed over as sound.
    disk.remount("rw");
    std::fs::write(mirror.join("catalog.sqlite-wal"), vec![7u8; 4096]).unwrap();
    disk.remount("ro");
    let out = rsmirror()
        .args(["catalog", "check", "--mirror"])
        .arg(&mirror)
        .output()
        .unwrap();
    let said = stdout_of(&out);
    assert_eq!(out.status.code(), Some(5), "{said}");
    assert!(
        said.contains("the log: catalog.sqlite-wal (4096 bytes) cannot be read on read-only media"),
        "{said}"
    );
    disk.remount("rw");
}

#[test]
fn completions_and_the_man_page_come_from_the_same_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let out = rsmirror().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let s = String::from_utf8(out.stdout).unwrap();
        for cmd in ["baseline", "ls", "cat", "diff", "status"] {
            assert!(s.contains(cmd), "{shell}: {cmd}");
        }
    }
    let out = rsmirror().arg("man").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.starts_with(".ie") || s.contains(".TH rsmirror"),
        "{}",
        &s[..200]
    );
    let out = rsmirror().args(["man", "cat"]).output().unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains(".TH rsmirror-cat"), "{}", &s[..200.min(s.len())]);
    assert!(s.contains("WHEN"));
    // The command's synopsis as it is typed; the sections a manual page has and --help not.
    assert!(s.contains("\\fBrsmirror cat\\fR"), "{s}");
    for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH FILES"] {
        assert!(s.contains(section), "{section}: {s}");
    }
    assert!(
        s.contains("RSMIRROR_DIR") && s.contains("catalog.sqlite"),
        "{s}"
    );
    for code in [0, 1, 2, 3, 4, 5, 6, 7, 130] {
        assert!(s.contains(&format!("\\fB{code}\\fR")), "exit {code}: {s}");
    }
    // Every command has its page (an option of its own named like clap's may not break it).
    let help = String::from_utf8(rsmirror().arg("--help").output().unwrap().stdout).unwrap();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 10, "{help}");
    for c in commands {
        let out = rsmirror().args(["man", c]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "man {c}: {}", stderr_of(&out));
        assert!(
            String::from_utf8(out.stdout).unwrap().contains(".SH FILES"),
            "man {c}"
        );
    }
    let out = rsmirror().args(["man", "nosuch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("cron"), "{}", stderr_of(&out));
}

/// `man --install DIR` writes every page where `man` finds them: rsmirror(1), one page per
/// command in man1, one per topic in man7, each as `man COMMAND` prints it; a DIR that cannot
/// be written is an error naming it.
#[test]
fn man_install_writes_every_page_where_man_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = rsmirror()
        .args(["man", "--install"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let listed: Vec<String> = stdout_of(&out).lines().map(String::from).collect();
    let mut expected = vec![("man1/rsmirror.1".to_string(), vec!["man".to_string()])];
    for c in [
        "baseline",
        "incremental",
        "audit",
        "ls",
        "cat",
        "export",
        "source",
        "man",
    ] {
        expected.push((format!("man1/rsmirror-{c}.1"), vec!["man".into(), c.into()]));
    }
    for (name, _) in manual_topics() {
        expected.push((format!("man7/rsmirror-{name}.7"), vec!["man".into(), name]));
    }
    for (relative, args) in expected {
        let path = dir.path().join(&relative);
        assert!(
            listed.contains(&path.display().to_string()),
            "{relative}: {listed:?}"
        );
        let page = rsmirror().args(&args).output().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), page.stdout, "{relative}");
    }
    assert!(!listed
        .iter()
        .any(|l| l.ends_with(".part") || l.contains("rsmirror-help")));
    // A file where the folder should be: an error that names it, nothing half-written.
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let out = rsmirror()
        .args(["man", "--install"])
        .arg(&file)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr_of(&out).contains("not-a-folder"),
        "{}",
        stderr_of(&out)
    );
}

/// The topics of the manual, by name: every `doc/manual/NAME.md`.
fn manual_topics() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("doc/manual");
    let mut topics: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    topics.sort();
    assert!(topics.len() >= 15, "{topics:?}");
    topics
}

/// Issue 66, 14: the manual has one source. Every file of `doc/manual/` is what `rsmirror help
/// TOPIC` prints, is the page `rsmirror man TOPIC` writes (`rsmirror-TOPIC(7)`), is listed by
/// `rsmirror help topics` and `--help`, and is linked from the README; a topic opens with its
/// title and a summary, and no line is over 200 characters. `help COMMAND` stays clap's; an
/// unknown name exits 2 naming the topics.
#[test]
fn every_manual_topic_is_its_help_its_man_page_and_linked_from_the_readme() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let listing = rsmirror().args(["help", "topics"]).output().unwrap();
    assert_eq!(listing.status.code(), Some(0), "{}", stderr_of(&listing));
    let listing = stdout_of(&listing);
    let help = stdout_of(&rsmirror().arg("--help").output().unwrap());
    for (name, text) in manual_topics() {
        let mut lines = text.lines();
        assert!(
            lines.next().unwrap().starts_with("# "),
            "{name}: a # Title first"
        );
        assert_eq!(lines.next(), Some(""), "{name}");
        assert!(
            lines.next().is_some_and(|l| !l.is_empty()),
            "{name}: a summary"
        );
        for (n, line) in text.lines().enumerate() {
            assert!(line.chars().count() <= 200, "{name}.md:{}: over 200", n + 1);
        }
        let out = rsmirror().args(["help", &name]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "help {name}: {}",
            stderr_of(&out)
        );
        assert_eq!(stdout_of(&out), text, "help {name}");
        // rsmirror's own options may stand before `help`, as before any command.
        let out = (rsmirror().args(["--mirror", "/nonexistent", "-q", "help", &name]))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "-- help {name}: {}",
            stderr_of(&out)
        );
        assert_eq!(stdout_of(&out), text, "--mirror M -q help {name}");
        let out = rsmirror().args(["man", &name]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "man {name}: {}",
            stderr_of(&out)
        );
        let page = stdout_of(&out);
        assert!(
            page.starts_with(&format!(".TH rsmirror-{name} 7 ")),
            "{page}"
        );
        assert!(page.contains(".SH DESCRIPTION"), "man {name}");
        assert!(
            listing
                .lines()
                .any(|l| l.split_whitespace().next() == Some(&*name)),
            "help topics lacks {name}: {listing}"
        );
        assert!(help.contains(&name), "--help lacks {name}");
        assert!(
            readme.contains(&format!("(doc/manual/{name}.md)")),
            "README links no doc/manual/{name}.md"
        );
    }
    assert!(readme.contains("rsmirror help TOPIC") && readme.contains("man rsmirror-TOPIC"));
    // A command's help is still clap's; an unknown name is a usage error naming the topics.
    let out = rsmirror().args(["help", "ls"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout_of(&out).contains("--at"), "{}", stdout_of(&out));
    let out = rsmirror().args(["help", "nosuch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains("nosuch") && err.contains("cron") && err.contains("baseline"),
        "{err}"
    );
}

/// The manual's pages are roff groff reads without a warning (`-ww`): headings, bullets,
/// tables, code, backslashes, hyphens and characters beyond ASCII escaped.
#[test]
#[cfg_attr(
    missing = "groff",
    ignore = "groff is not installed (apt-get install groff-base)"
)]
fn the_manual_pages_pass_groff_without_warnings() {
    let mut pages = vec![vec!["man".to_string()], vec!["man".into(), "cat".into()]];
    pages.extend(
        manual_topics()
            .into_iter()
            .map(|(name, _)| vec!["man".into(), name]),
    );
    for args in pages {
        let page = rsmirror().args(&args).output().unwrap();
        assert_eq!(page.status.code(), Some(0), "{args:?}");
        let mut groff = std::process::Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        groff.stdin.take().unwrap().write_all(&page.stdout).unwrap();
        let out = groff.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
        assert_eq!(stderr_of(&out), "", "{args:?}: groff warns");
    }
}
