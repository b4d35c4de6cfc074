//! The command line: the exit-code table is the same in the code, `--help`, the README and the
//! manual (`doc/manual/exit-codes.md`);
//! usage errors exit 2.

use crate::support::*;
use rsmirror::exit::TABLE;

#[test]
fn exit_codes_agree_in_code_help_readme_and_manual() {
    let help = rsmirror().arg("--help").output().unwrap();
    let help = stdout_of(&help);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let manual = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/doc/manual/exit-codes.md"
    ))
    .unwrap();
    for (_, code, meaning) in TABLE {
        assert!(
            help.contains(&format!("{code:>3}  {meaning}")),
            "--help lacks {code}"
        );
        assert!(
            readme.contains(&format!("| {code} | {meaning} |")),
            "README lacks {code}: {meaning}"
        );
        assert!(
            manual.contains(&format!("| {code} | {meaning} |")),
            "doc/manual/exit-codes.md lacks {code}: {meaning}"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["baseline"],
        vec!["baseline", "http://x.invalid/", "--jobs", "0"],
        vec!["baseline", "http://x.invalid/", "--streams", "0"],
        vec!["incremental", "--streams", "1001"],
        vec!["baseline", "http://x.invalid/", "--max-delete", "3"],
        vec!["baseline", "http://x.invalid/", "--map", "nodelimiter"],
        vec!["frobnicate"],
    ] {
        let out = rsmirror().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
    }
}

/// Issue 66, 13: a usage error says what was wrong in words a user reads, the same for every
/// option of its kind; what is given and cannot take effect is refused, not ignored.
#[test]
fn usage_errors_say_what_was_wrong() {
    let refused = |args: &[&str], words: &[&str]| {
        let out = rsmirror().args(args).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for w in words {
            assert!(err.contains(w), "{args:?}: {w:?} not in {err}");
        }
        assert!(!err.contains("float literal"), "{err}");
    };
    refused(
        &["baseline", "http://x.invalid/", "--timeout", "abc"],
        &["\"abc\" is not a duration", "30 (seconds)"],
    );
    refused(
        &["baseline", "http://x.invalid/", "--delay", "soon"],
        &["\"soon\" is not a duration"],
    );
    refused(
        &["baseline", "http://x.invalid/", "--header", "NoColonHere"],
        &[
            "--header \"***\"",
            "11",
            "characters have no colon",
            "Authorization: Bearer",
        ],
    );
    refused(
        &[
            "baseline",
            "http://x.invalid/",
            "--header",
            "A: 1",
            "--header",
            "B",
        ],
        &["(--header 2 of 2)"],
    );
    refused(&["audit", "--format", "json"], &["--report"]);
    // Issue 66, 9: a URL is no mirror folder (it made ./s3:/b/p).
    refused(
        &["ls", "--mirror", "s3://b/p"],
        &["is a URL", "--objects s3://"],
    );
    // Every option that takes a duration takes the same forms: a bare number is seconds.
    for (flag, value) in [
        ("--max-duration", "30"),
        ("--timeout", "30s"),
        ("--delay", "0.5"),
        ("--max-duration", "1h30m"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = rsmirror()
            .args([
                "baseline",
                "http://x.invalid/",
                flag,
                value,
                "--dry-run",
                "--mirror",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            !stderr_of(&out).contains("is not a duration") && out.status.code() != Some(2),
            "{flag} {value}: {}",
            stderr_of(&out)
        );
    }
    // status takes no WHEN, and its help does not explain one.
    let help = stdout_of(&rsmirror().args(["status", "--help"]).output().unwrap());
    assert!(!help.contains("WHEN is a point"), "{help}");
    assert!(help.contains("--stale-sync-point"), "{help}");
}

/// `--version` names what a bug report needs (libcurl and its TLS library, SQLite, the
/// platform); `-V` is the version alone, one line.
#[test]
fn version_names_the_libraries_the_build_runs_on() {
    let long = rsmirror().arg("--version").output().unwrap();
    assert!(long.status.success());
    let text = String::from_utf8(long.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("rsmirror {}", env!("CARGO_PKG_VERSION")));
    let curl = lines
        .iter()
        .find(|l| l.starts_with("libcurl "))
        .expect(&text);
    assert!(curl.contains("HTTP/2:"), "{text}");
    assert!(
        !curl.contains("no TLS library") && curl.contains('/'),
        "the TLS library is named with its version: {text}"
    );
    assert!(lines.iter().any(|l| l.starts_with("SQLite 3.")), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("platform ")), "{text}");
    let short = rsmirror().arg("-V").output().unwrap();
    assert_eq!(
        String::from_utf8(short.stdout).unwrap(),
        format!("rsmirror {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// `-q` and `-v` say opposite things: together they are a usage error naming both.
#[test]
fn quiet_and_verbose_together_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = rsmirror()
        .args(["audit", "--offline", "-q", "-v", "--mirror"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--quiet") && err.contains("--verbose"),
        "{err}"
    );
}

/// `--mirror`, `-q` and `-v` may come before the command, as restic's `-r` and git's `-C` do.
#[test]
fn options_before_the_command_are_read_as_after_it() {
    use rsmirror::cli::options_after_the_command as hoist;
    let v = |s: &str| -> Vec<std::ffi::OsString> { s.split(' ').map(Into::into).collect() };
    assert_eq!(
        hoist(v("rsmirror --mirror M ls")),
        v("rsmirror ls --mirror M")
    );
    assert_eq!(
        hoist(v("rsmirror -vv --mirror=M baseline URL -j 2")),
        v("rsmirror baseline -vv --mirror=M URL -j 2")
    );
    assert_eq!(
        hoist(v("rsmirror -q source list")),
        v("rsmirror source list -q")
    );
    assert_eq!(hoist(v("rsmirror ls -l")), v("rsmirror ls -l"));
    assert_eq!(hoist(v("rsmirror --version")), v("rsmirror --version"));

    // End to end: the same listing either way, and an option a command lacks named as such.
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
    let made = rsmirror()
        .args(["-q", "--mirror"])
        .arg(&m)
        .args(["baseline", "http://sample.example.org/", "--map"])
        .arg(format!("http://sample.example.org/={}", sample.display()))
        .output()
        .unwrap();
    assert_eq!(
        made.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let before = rsmirror()
        .arg("--mirror")
        .arg(&m)
        .arg("ls")
        .output()
        .unwrap();
    let after = rsmirror()
        .arg("ls")
        .arg("--mirror")
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(before.status.code(), Some(0));
    assert!(!before.stdout.is_empty());
    assert_eq!(before.stdout, after.stdout);
    let lacks = rsmirror()
        .args(["-q", "inspect", "http://sample.example.org/"])
        .output()
        .unwrap();
    assert_eq!(lacks.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&lacks.stderr).contains("'-q'"));
}

/// Every option of every command may come from `RSMIRROR_<OPTION>` (rclone's `RCLONE_*`), and
/// `--help` says which; the command line wins over the environment, the environment over the
/// default; a value refused is named with its variable.
#[test]
fn options_come_from_the_environment_and_the_command_line_wins() {
    // Every option with a name has its variable, but those that pick one item for one run.
    fn walk(cmd: &clap::Command, path: &str, seen: &mut usize) {
        for arg in cmd.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            match long {
                "help" | "version" | "run" => assert_eq!(env, None, "{path} --{long}"),
                "mirror" => assert_eq!(env.as_deref(), Some("RSMIRROR_DIR")),
                _ => {
                    let want = format!("RSMIRROR_{}", long.to_uppercase().replace('-', "_"));
                    assert_eq!(env, Some(want), "{path} --{long}");
                    *seen += 1;
                }
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), seen);
        }
    }
    let mut seen = 0;
    walk(&rsmirror::cli::Cli::definitions(), "rsmirror", &mut seen);
    assert!(seen > 50, "{seen}");
    let help = rsmirror().args(["baseline", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for name in [
        "RSMIRROR_MAX_SIZE",
        "RSMIRROR_DRY_RUN",
        "RSMIRROR_JOBS",
        "RSMIRROR_DIR",
    ] {
        assert!(help.contains(name), "{name} not in --help");
    }

    // A mirror made from the environment alone: the folder, the --map rule, quiet.
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
    let map = format!("http://sample.example.org/={}", sample.display());
    let env = |c: &mut assert_cmd::Command| {
        c.env("RSMIRROR_DIR", &m);
    };
    let mut c = rsmirror();
    env(&mut c);
    let made = c
        .args(["baseline", "http://sample.example.org/"])
        .env("RSMIRROR_MAP", &map)
        .env("RSMIRROR_QUIET", "yes")
        .env("RSMIRROR_DRY_RUN", "off")
        .output()
        .unwrap();
    assert_eq!(
        made.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    assert!(
        made.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let ls = |at_env: Option<&str>, at_flag: Option<&str>| {
        let mut c = rsmirror();
        env(&mut c);
        c.arg("ls");
        if let Some(at) = at_env {
            c.env("RSMIRROR_AT", at);
        }
        if let Some(at) = at_flag {
            c.args(["--at", at]);
        }
        let out = c.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().lines().count()
    };
    let now = ls(None, None);
    assert_eq!(now, 8);
    // The environment over the default (now), the command line over the environment.
    assert_eq!(ls(Some("run:0"), None), 0);
    assert_eq!(ls(Some("run:0"), Some("run:1")), now);
    // Issue 66, 8: an option typed wins over one it conflicts with from the environment
    // (`-v` over RSMIRROR_QUIET, `-q` over RSMIRROR_VERBOSE); both typed are still refused.
    for (var, value, flag) in [
        ("RSMIRROR_QUIET", "1", "-v"),
        ("RSMIRROR_VERBOSE", "2", "-q"),
    ] {
        let mut c = rsmirror();
        env(&mut c);
        let out = c.args(["ls", flag]).env(var, value).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{var} {flag}: {}",
            stderr_of(&out)
        );
        assert_eq!(stdout_of(&out).lines().count(), now);
    }
    let mut c = rsmirror();
    env(&mut c);
    let out = c.args(["ls", "-q", "-v"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    // A switch from the environment: JSON.
    let mut c = rsmirror();
    env(&mut c);
    let status = c.arg("status").env("RSMIRROR_JSON", "1").output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status as JSON");
    assert!(doc.is_object());

    // A value refused names its variable; a switch is yes or no, never a guess.
    for (name, value) in [("RSMIRROR_JOBS", "many"), ("RSMIRROR_DRY_RUN", "maybe")] {
        let mut c = rsmirror();
        env(&mut c);
        let out = c
            .args(["baseline", "http://sample.example.org/"])
            .env(name, value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{name}=\"{value}\"")), "{err}");
    }
}

/// The sample source (`testdata/sample`, eight resources) mirrored into `m`.
fn sample_mirror(m: &std::path::Path) {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
    let made = rsmirror()
        .args(["baseline", "http://sample.example.org/", "-q", "--mirror"])
        .arg(m)
        .arg("--map")
        .arg(format!("http://sample.example.org/={}", sample.display()))
        .output()
        .unwrap();
    assert_eq!(
        made.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
}

/// The reading commands take `-q` and `-v` as the writing ones do (before or after the
/// command): their stdout is the same either way; `-q` leaves stderr empty on success (no note
/// of how a local WHEN was read), `-v` says what WHEN resolved to and how much was written,
/// and both together are refused.
#[test]
fn reading_commands_take_quiet_and_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    sample_mirror(&m);
    let uri = "http://sample.example.org/res/a.txt";
    let tree = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let local = "2099-01-01 12:00";
    let commands: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["ls".into(), "--at".into(), local.into()],
            "8 resource(s) listed",
        ),
        (vec!["cat".into(), uri.into()], "from run 1 (baseline"),
        (vec!["log".into()], "1 run(s)"),
        (vec!["log".into(), uri.into()], "1 version(s) of"),
        (
            vec!["diff".into(), "run:0".into(), local.into()],
            "8 created (+)",
        ),
        (vec!["status".into()], "1 source(s)"),
        (vec!["feed".into()], "0 entries"),
        (
            vec![
                "export".into(),
                "tree".into(),
                tree("e"),
                "--at".into(),
                local.into(),
            ],
            "exporting the mirror as run 1",
        ),
    ];
    let run = |args: &[String], extra: &[&str], before: bool| {
        let mut c = rsmirror();
        if before {
            c.args(extra).args(args);
        } else {
            c.args(args).args(extra);
        }
        let out = c.arg("--mirror").arg(&m).env("TZ", "UTC").output().unwrap();
        (
            out.status.code(),
            out.stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (args, detail) in &commands {
        let is_export = args[0] == "export";
        let plain = run(args, &[], false);
        assert_eq!(plain.0, Some(0), "{args:?}: {}", plain.2);
        assert!(!plain.2.contains(detail), "{args:?}: {}", plain.2);
        if args.iter().any(|a| a == local) {
            assert!(
                plain.2.contains("read as local time"),
                "{args:?}: {}",
                plain.2
            );
        }

        let mut quiet_args = args.clone();
        let mut verbose_args = args.clone();
        if is_export {
            quiet_args[2] = tree("q");
            verbose_args[2] = tree("v");
        }
        let quiet = run(&quiet_args, &["-q"], false);
        assert_eq!(quiet.0, Some(0), "{args:?}: {}", quiet.2);
        assert_eq!(quiet.2, "", "{args:?} -q");
        let verbose = run(&verbose_args, &["-v"], true);
        assert_eq!(verbose.0, Some(0), "{args:?}: {}", verbose.2);
        assert!(verbose.2.contains(detail), "{args:?} -v: {}", verbose.2);
        // status says ages in seconds: its stdout is compared by its first line.
        let status = args[0] == "status";
        let first = |o: &[u8]| {
            String::from_utf8_lossy(o)
                .lines()
                .next()
                .map(str::to_string)
        };
        if status {
            assert_eq!(first(&plain.1), first(&quiet.1));
            assert_eq!(first(&plain.1), first(&verbose.1));
        } else if !is_export {
            assert!(!plain.1.is_empty(), "{args:?}");
            assert_eq!(plain.1, quiet.1, "{args:?}: -q changed stdout");
            assert_eq!(plain.1, verbose.1, "{args:?}: -v changed stdout");
        }

        let both = run(args, &["-q", "-v"], false);
        assert_eq!(both.0, Some(2), "{args:?} -q -v: {}", both.2);
        assert!(
            both.2.contains("--quiet") && both.2.contains("--verbose"),
            "{}",
            both.2
        );
    }
}

/// A WHEN without a zone is this machine's local time (`TZ`), as git reads one, and stderr
/// says which instant it read; a local time a clock change skips is refused, not guessed.
#[test]
fn a_time_without_a_zone_is_local_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    sample_mirror(&m);
    let ls = |tz: &str, at: &str| {
        let out = rsmirror()
            .env("TZ", tz)
            .args(["ls", "--at", at, "--mirror"])
            .arg(&m)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap().lines().count(),
            err,
        )
    };
    // 09:00 in Tokyo is midnight UTC: before the mirror's run.
    let (code, n, err) = ls("Asia/Tokyo", "2000-01-01 09:00");
    assert_eq!((code, n), (Some(0), 0), "{err}");
    assert!(
        err.contains("read as local time (Asia/Tokyo): 2000-01-01T00:00:00Z"),
        "{err}"
    );
    // A minute from now, as Tokyo's clock reads it: after the run, every resource.
    let later = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(60))
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::get("Asia/Tokyo").unwrap())
        .datetime()
        .strftime("%Y-%m-%dT%H:%M:%S")
        .to_string();
    let (code, n, err) = ls("Asia/Tokyo", &later);
    assert_eq!((code, n), (Some(0), 8), "{later}: {err}");
    // Berlin's clocks skip 02:00-03:00 on 2026-03-29.
    let (code, _, err) = ls("Europe/Berlin", "2026-03-29T02:30");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("skipped or repeated"), "{err}");
}

/// Every `--json` output has a documented shape, checked here: a run's summary
/// (`schemas/run-summary.schema.json`) and, for every command, an error
/// (`schemas/error.schema.json`), an argument refused by the parser included; `export --json`
/// prints its document and nothing on stderr.
#[test]
fn json_documents_and_json_errors_have_their_schemas() {
    let (summary, error) = (
        schema("run-summary.schema.json"),
        schema("error.schema.json"),
    );
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
    let map = format!("http://sample.example.org/={}", sample.display());
    let run = |args: &[&str]| {
        let out = rsmirror()
            .args(args)
            .arg("--mirror")
            .arg(&m)
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        (
            out.status.code().unwrap(),
            doc,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let source = "http://sample.example.org/";
    for args in [
        &["baseline", source, "--map", &map, "--dry-run", "--json"][..],
        &[
            "baseline",
            source,
            "--map",
            &map,
            "--exclude",
            "*.png",
            "--json",
        ],
        &["incremental", "--json"],
    ] {
        let (code, doc, _) = run(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
        valid(&summary, &doc);
        assert_eq!(doc["exit_code"], 0);
    }
    let (code, doc, err) = run(&[
        "export",
        "tree",
        dir.path().join("t").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc.is_object() && err.is_empty(), "{doc} / {err}");

    let none = dir.path().join("none");
    let none = none.to_str().unwrap();
    for (args, command, exit) in [
        (&["ls", "--json", "--at", "nonsense"][..], "ls", 2),
        (&["ls", "--json", "--bogus"], "ls", 2),
        (&["baseline", "--json"], "baseline", 2),
        (&["status", "--json", "--mirror", none], "status", 5),
        (&["log", "--json", "--mirror", none], "log", 5),
        (&["diff", "run:0", "--json", "--mirror", none], "diff", 5),
        (
            &["audit", "--json", "--offline", "--mirror", none],
            "audit",
            5,
        ),
        (
            &["incremental", "--json", "--mirror", none],
            "incremental",
            5,
        ),
        (
            &[
                "export",
                "tree",
                "/nonexistent/x",
                "--json",
                "--mirror",
                none,
            ],
            "export",
            5,
        ),
        (
            &["source", "list", "--json", "--mirror", none],
            "source list",
            5,
        ),
    ] {
        let out = rsmirror().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(exit), "{args:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        valid(&error, &doc);
        assert_eq!(
            (doc["command"].as_str(), doc["exit_code"].as_i64()),
            (Some(command), Some(i64::from(exit)))
        );
        // The same message on stderr, for a person.
        let said = String::from_utf8_lossy(&out.stderr);
        let first_words: String = doc["error"].as_str().unwrap().chars().take(20).collect();
        assert!(said.contains(&first_words), "{said} / {doc}");
    }
}

/// `--json-progress` makes stderr JSON Lines a program can follow (restic's `message_type`):
/// `status` lines for each phase (its start and its end at least), a `message` for every line
/// a person would read there (a resource that failed, the error that ended a run), and the
/// run's `summary` last; every line has the shape `schemas/progress-line.schema.json` gives,
/// and stdout is unchanged (the `--json` document).
#[test]
fn json_progress_lines_have_their_schema() {
    let (lines, summary) = (
        schema("progress-line.schema.json"),
        schema("run-summary.schema.json"),
    );
    let dir = tempfile::tempdir().unwrap();
    // The sample without one of its resources: that one fails, the rest land.
    let sample = dir.path().join("sample");
    copy_tree(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample"),
        &sample,
    );
    std::fs::remove_file(sample.join("res/b.txt")).unwrap();
    let m = dir.path().join("m");
    let run = |args: &[&str]| {
        let out = rsmirror()
            .args(args)
            .arg("--mirror")
            .arg(&m)
            .arg("--json-progress")
            .output()
            .unwrap();
        let said: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{args:?}: {e}: {l}")))
            .collect();
        for l in &said {
            valid(&lines, l);
        }
        (out.status.code(), out.stdout, said)
    };
    let kind = |said: &[serde_json::Value], t: &str| -> Vec<serde_json::Value> {
        said.iter()
            .filter(|l| l["message_type"] == t)
            .cloned()
            .collect()
    };
    let map = format!("http://sample.example.org/={}", sample.display());
    let (code, stdout, said) = run(&[
        "baseline",
        "http://sample.example.org/",
        "--map",
        &map,
        "--json",
    ]);
    assert_ne!(code, Some(0), "{said:#?}");
    let doc: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    valid(&summary, &doc);
    let statuses = kind(&said, "status");
    assert!(statuses.len() >= 2, "{said:#?}");
    let (first, last) = (&statuses[0], statuses.last().unwrap());
    assert_eq!(
        (first["phase"].as_str(), first["done"].as_u64()),
        (Some("baseline"), Some(0))
    );
    assert_eq!(last["done"], last["total"], "{said:#?}");
    assert_eq!(last["percent_done"], 1.0);
    assert!(last["bytes"].as_u64().unwrap() > 0);
    let messages = kind(&said, "message");
    assert!(
        messages
            .iter()
            .any(|m| m["message"].as_str().unwrap().contains("res/b.txt")),
        "{said:#?}"
    );
    // The summary is the last line, and the same as stdout's document.
    assert_eq!(said.last().unwrap()["message_type"], "summary");
    let s = &said.last().unwrap()["summary"];
    valid(&summary, s);
    assert_eq!(
        (s["created"].as_u64(), s["failed"].as_u64()),
        (Some(7), Some(1))
    );
    assert_eq!(s["run_id"], doc["run_id"]);

    // An audit: its phases and its report's summary.
    let (code, _, said) = run(&["audit", "--offline"]);
    assert_eq!(code, Some(0), "{said:#?}");
    assert!(kind(&said, "status").iter().any(|s| s["phase"] == "fixity"));
    assert_eq!(said.last().unwrap()["summary"]["counts"]["verified"], 7);

    // The error that ends a run, as a message of level error.
    let gone = dir.path().join("gone");
    let out = rsmirror()
        .args(["incremental", "--json-progress", "--mirror"])
        .arg(&gone)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let said: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    valid(&lines, &said);
    assert_eq!(
        (said["message_type"].as_str(), said["level"].as_str()),
        (Some("message"), Some("error"))
    );
}

/// `repair --json` prints its summary with the shape `schemas/repair-summary.schema.json` gives,
/// a dry run and a repair that cannot get the bytes back alike, and `--json-progress` ends
/// with the same summary.
#[test]
fn repair_json_has_its_schema() {
    let (shape, lines) = (
        schema("repair-summary.schema.json"),
        schema("progress-line.schema.json"),
    );
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    sample_mirror(&m);
    let sha = current(&m)["http://sample.example.org/res/a.txt"].clone();
    let object = m.join("objects/sha256").join(&sha[..2]).join(&sha);
    std::fs::remove_file(&object).unwrap();
    let repair = |extra: &[&str]| {
        let out = rsmirror()
            .args(["repair", "--offline", "--json", "--mirror"])
            .arg(&m)
            .args(extra)
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        valid(&shape, &doc);
        (out.status.code(), doc, out.stderr)
    };
    let (_, doc, _) = repair(&["--dry-run"]);
    assert_eq!(
        (doc["damaged"].as_u64(), doc["dry_run"].as_bool()),
        (Some(1), Some(true))
    );
    let (code, doc, stderr) = repair(&["--json-progress"]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["unrepaired"].as_array().unwrap().len(), 1, "{doc}");
    let last: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&stderr).lines().last().unwrap()).unwrap();
    valid(&lines, &last);
    assert_eq!(last["summary"], doc);
}

/// `--progress` draws the bar where stderr is no terminal (ssh without a tty, `script`): the
/// phase and its count are on stderr, as a terminal would show them; without it (cron) and
/// with `--no-progress` after it, stderr has no bar. The run's outcome is the same each time.
#[test]
fn progress_is_drawn_on_request_where_stderr_is_no_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sample");
    let map = format!("http://sample.example.org/={}", sample.display());
    let run = |mirror: &str, extra: &[&str]| {
        let out = rsmirror()
            .args(["baseline", "http://sample.example.org/", "--map", &map])
            .arg("--mirror")
            .arg(dir.path().join(mirror))
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // The sample lists 8 resources: the bar counts to them.
    let bar = |stderr: &str| stderr.contains("baseline [") && stderr.contains("] 8/8 ");
    let drawn = run("forced", &["--progress"]);
    assert!(bar(&drawn), "--progress draws the bar on a pipe: {drawn:?}");
    let plain = run("plain", &[]);
    assert!(!bar(&plain), "no bar on a pipe by default: {plain:?}");
    let off = run("off", &["--progress", "--no-progress"]);
    assert!(
        !bar(&off),
        "the last of --progress/--no-progress wins: {off:?}"
    );
    let refused = rsmirror()
        .args(["baseline", "http://sample.example.org/", "--progress", "-q"])
        .arg("--mirror")
        .arg(dir.path().join("q"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
}
