//! Every `--json` output has a documented shape in `schemas/`: a mirror with several runs is
//! read with every command that prints JSON, and every document, and every line of the JSON
//! Lines ones, is checked against its schema. The outputs must not be empty, so a command that
//! stopped printing fails here too; and every schema is valid, and named in the README or the
//! manual (`doc/manual/*.md`).

use crate::support::*;
use serde_json::Value;
use std::path::Path;

/// `rsmirror ARGS` exiting with one of `codes`: its stdout.
fn run(args: &[&str], codes: &[i32]) -> String {
    let out = rsmirror().args(args).output().unwrap();
    assert!(
        codes.contains(&out.status.code().unwrap_or(-1)),
        "{args:?} exited {:?}: {}{}",
        out.status.code(),
        stderr_of(&out),
        stdout_of(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One JSON document (the whole of stdout).
fn document(args: &[&str], codes: &[i32]) -> Value {
    let text = run(args, codes);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"))
}

/// JSON Lines: one document per line, each on a line of its own.
fn lines(args: &[&str]) -> Vec<Value> {
    run(args, &[0])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{args:?}: {e}: {l}")))
        .collect()
}

/// Every schema in `schemas/` is a valid draft 2020-12 schema with the `$id` of its file name,
/// and the README or a topic of the manual (`doc/manual/*.md`, `rsmirror help json`) names it.
#[test]
fn every_schema_is_valid_and_named_in_the_documentation() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for entry in std::fs::read_dir(root.join("doc/manual")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "md") {
            readme.push_str(&std::fs::read_to_string(path).unwrap());
        }
    }
    let mut names: Vec<String> = std::fs::read_dir(schemas_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 12, "{names:?}");
    let mut unnamed = Vec::new();
    for name in &names {
        assert!(name.ends_with(".schema.json"), "{name}");
        let text = std::fs::read_to_string(schemas_dir().join(name)).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            doc["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        assert_eq!(
            doc["$id"],
            format!("https://github.com/rsmirror/rsmirror/schemas/{name}"),
            "{name}"
        );
        jsonschema::meta::validate(&doc).unwrap_or_else(|e| panic!("{name}: {e}"));
        schema(name);
        if !readme.contains(&format!("schemas/{name}")) {
            unnamed.push(name.clone());
        }
    }
    assert!(
        unnamed.is_empty(),
        "neither README.md nor doc/manual/ names {unnamed:?}"
    );
}

/// The forms of `log.schema.json`, each on its own (`$defs/NAME`, its other `$defs` reachable).
fn log_form(name: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(schemas_dir().join("log.schema.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let obj = doc.as_object_mut().unwrap();
    obj.remove("oneOf");
    obj.insert("$ref".into(), Value::from(format!("#/$defs/{name}")));
    jsonschema::validator_for(&doc).unwrap()
}

/// A mirror with five runs (a baseline; an incremental that creates, updates, deletes and fails
/// something; an offline audit; a repair; an audit that finds differences), read by every
/// command that prints JSON.
#[test]
fn every_json_output_matches_its_schema() {
    let summary = schema("run-summary.schema.json");
    let audit = schema("audit-report.schema.json");
    let repair = schema("repair-summary.schema.json");
    let ls_line = schema("ls-line.schema.json");
    let diff_line = schema("diff-line.schema.json");
    let log = schema("log.schema.json");
    let (log_versions, log_run, log_one_run) =
        (log_form("versions"), log_form("run"), log_form("one_run"));
    let status = schema("status.schema.json");
    let source_list = schema("source-list.schema.json");
    let export = schema("export-summary.schema.json");
    let inspect = schema("inspect.schema.json");
    let feed = schema("feed-json.schema.json");

    // A source of three resources, read from a folder (`--map`), with an empty Change List.
    let tree = Tree::new();
    for (name, bytes) in [
        ("a.txt", "alpha\n"),
        ("b.txt", "bravo\n"),
        ("c.txt", "charlie\n"),
    ] {
        tree.put(name, bytes.as_bytes());
    }
    tree.capability_list("changelist.xml");
    tree.resource_list("2026-01-01T00:00:00Z", &["a.txt", "b.txt", "c.txt"]);
    tree.change_list("changelist.xml", "2026-01-01T00:00:00Z", None, &[]);
    let source = format!("{ORIGIN}/capabilitylist.xml");
    let map = format!("{ORIGIN}/={}", tree.path().display());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    let m = mirror.to_str().unwrap();

    // Run 1: a baseline that keeps a filter and a setting with the source.
    let s = document(
        &[
            "baseline",
            &source,
            "--map",
            &map,
            "--exclude",
            "*.skip",
            "--timeout",
            "30",
            "--json",
            "--mirror",
            m,
        ],
        &[0],
    );
    valid(&summary, &s);
    assert_eq!(s["created"], 3, "{s}");

    // Run 2: an incremental, b updated, d created, c deleted, and e listed but not there (a
    // failed change: a problem, exit 3). The Resource List stays as it was.
    tree.put("b.txt", b"bravo, again\n");
    tree.put("d.txt", b"delta\n");
    tree.put("e.txt", b"echo\n");
    tree.remove("c.txt");
    tree.change_list(
        "changelist.xml",
        "2026-01-01T00:00:00Z",
        None,
        &[
            ("b.txt", "updated", "2026-01-02T00:00:00Z"),
            ("d.txt", "created", "2026-01-02T00:00:01Z"),
            ("c.txt", "deleted", "2026-01-02T00:00:02Z"),
            ("e.txt", "created", "2026-01-02T00:00:03Z"),
        ],
    );
    tree.remove("e.txt");
    let s = document(&["incremental", "--json", "--mirror", m], &[3]);
    valid(&summary, &s);
    let counts = ["created", "updated", "deleted", "failed"].map(|k| s[k].as_u64());
    assert_eq!(counts, [Some(1); 4], "{s}");

    // Run 3: an offline audit, clean.
    let a = document(&["audit", "--offline", "--json", "--mirror", m], &[0]);
    valid(&audit, &a);

    // Run 4: a repair of a's object, lost. (Not `repair --dry-run --json`: its plan lines come
    // before the document on stdout.)
    let now = lines(&["ls", "--json", "--mirror", m]);
    let sha = now[0]["sha256"].as_str().unwrap();
    std::fs::remove_file(mirror.join("objects/sha256").join(&sha[..2]).join(sha)).unwrap();
    let r = document(&["repair", "--json", "--mirror", m], &[0]);
    valid(&repair, &r);
    assert_eq!(
        (r["damaged"].as_u64(), r["restored_from_source"].as_u64()),
        (Some(1), Some(1)),
        "{r}"
    );

    // Run 5: an audit against the source, whose Resource List is behind: differences (exit 1),
    // recorded as findings.
    let a = document(&["audit", "--json", "--mirror", m], &[1]);
    valid(&audit, &a);

    // ls: the resources now, with tombstones, and as run 1 left them.
    for (args, want) in [
        (&["ls", "--json", "--mirror", m][..], 3),
        (&["ls", "--json", "--deleted", "--mirror", m], 4),
        (&["ls", "--json", "--at", "run:1", "--mirror", m], 3),
    ] {
        let got = lines(args);
        assert_eq!(got.len(), want, "{args:?}: {got:#?}");
        for line in &got {
            valid(&ls_line, line);
        }
    }
    let deleted = lines(&["ls", "--json", "--deleted", "--mirror", m]);
    assert_eq!(deleted[2]["deleted"], true, "{deleted:#?}");

    // diff: the incremental's changes, the baseline's, and the incremental's backwards.
    for (args, marks) in [
        (&["diff", "run:1", "--json", "--mirror", m][..], "*-+"),
        (&["diff", "run:0", "run:1", "--json", "--mirror", m], "+++"),
        (&["diff", "run:2", "run:1", "--json", "--mirror", m], "*+-"),
    ] {
        let got = lines(args);
        for line in &got {
            valid(&diff_line, line);
        }
        let seen: String = got.iter().map(|l| l["mark"].as_str().unwrap()).collect();
        assert_eq!(seen, marks, "{args:?}: {got:#?}");
    }

    // log: the runs; each run with its problems and findings; resources' versions.
    let runs = lines(&["log", "--json", "--mirror", m]);
    assert_eq!(runs.len(), 5, "{runs:#?}");
    let (mut problems, mut findings) = (0, 0);
    for r in &runs {
        valid(&log, r);
        valid(&log_run, r);
        let id = r["run"].to_string();
        let one = document(&["log", "--run", &id, "--json", "--mirror", m], &[0]);
        valid(&log, &one);
        valid(&log_one_run, &one);
        problems += one["problems"].as_array().unwrap().len();
        findings += one["findings"].as_array().unwrap().len();
    }
    assert!(
        problems >= 2,
        "the failed change and the repaired object are problems"
    );
    assert!(findings >= 1, "the last audit's differences are findings");
    for (name, want) in [("a.txt", 1), ("b.txt", 2), ("c.txt", 2), ("d.txt", 1)] {
        let uri = format!("{ORIGIN}/res/{name}");
        let doc = document(&["log", &uri, "--json", "--mirror", m], &[0]);
        valid(&log, &doc);
        valid(&log_versions, &doc);
        assert_eq!(doc["versions"].as_array().unwrap().len(), want, "{doc:#}");
    }

    // status: the partial incremental and the audit's differences need a person (exit 1).
    let st = document(&["status", "--json", "--mirror", m], &[1]);
    valid(&status, &st);
    assert_eq!(st["sources"].as_array().unwrap().len(), 1, "{st:#}");
    assert_eq!(st["last_audit"]["run"], 5, "{st:#}");
    let mut codes: Vec<&str> = st["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["code"].as_str().unwrap())
        .collect();
    codes.sort();
    assert_eq!(codes, ["audit-differences", "run-partial"], "{st:#}");

    // source list: the source, with the filter and the setting it keeps.
    let sl = document(&["source", "list", "--json", "--mirror", m], &[0]);
    valid(&source_list, &sl);
    let sources = sl["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "{sl:#}");
    assert_eq!(sources[0]["filter"]["exclude"][0], "*.skip", "{sl:#}");
    assert_eq!(sources[0]["settings"]["timeout"], 30.0, "{sl:#}");
    // The same source, but for the sync point's age (the two commands may straddle a second).
    let without_age = |v: &serde_json::Value| {
        let mut v = v.clone();
        for c in v["collections"].as_array_mut().into_iter().flatten() {
            c["sync_point"]
                .as_object_mut()
                .map(|o| o.remove("age_seconds"));
        }
        v
    };
    assert_eq!(without_age(&sources[0]), without_age(&st["sources"][0]));

    // export: every format's summary; hard links on the word of the last audit.
    for (format, extra) in [
        ("tree", &["--link", "hard"][..]),
        ("bagit", &[]),
        ("warc", &["--all-versions"]),
        ("ocfl", &[]),
        ("resourcesync", &["--base-url", "http://copy.example.org/"]),
    ] {
        let dest = dir.path().join(format!("export-{format}"));
        let mut args = vec![
            "export",
            format,
            dest.to_str().unwrap(),
            "--json",
            "--mirror",
            m,
        ];
        args.extend(extra);
        let doc = document(&args, &[0]);
        valid(&export, &doc);
        assert_eq!(doc["format"], format);
        assert!(doc["files"].as_u64().unwrap() >= 3, "{doc:#}");
        if format == "tree" {
            assert_eq!(doc["vouched_by"], 5, "{doc:#}");
        }
    }

    // inspect: the source's documents, read from the folder.
    let doc = document(&["inspect", &source, "--map", &map, "--json"], &[0]);
    valid(&inspect, &doc);
    assert_eq!(doc["documents"].as_array().unwrap().len(), 3, "{doc:#}");

    // feed --format json: the incremental's changes, one item.
    let doc = document(&["feed", "--format", "json", "--mirror", m], &[0]);
    valid(&feed, &doc);
    assert_eq!(doc["items"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!(
        doc["items"][0]["_rsmirror"]["deleted"][0]["url"],
        format!("{ORIGIN}/res/c.txt")
    );
}
