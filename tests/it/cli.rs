//! The command line: the exit-code table is the same in the code, `--help` and the README;
//! usage errors exit 2.

use crate::support::*;
use rsmirror::exit::TABLE;

#[test]
fn exit_codes_agree_in_code_help_and_readme() {
    let help = rsmirror().arg("--help").output().unwrap();
    let help = stdout_of(&help);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for (_, code, meaning) in TABLE {
        assert!(
            help.contains(&format!("{code:>3}  {meaning}")),
            "--help lacks {code}"
        );
        assert!(
            readme.contains(&format!("| {code} | {meaning} |")),
            "README lacks {code}: {meaning}"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["baseline"],
        vec!["baseline", "http://x.invalid/", "--jobs", "0"],
        vec!["baseline", "http://x.invalid/", "--max-delete", "3"],
        vec!["baseline", "http://x.invalid/", "--map", "nodelimiter"],
        vec!["frobnicate"],
    ] {
        let out = rsmirror().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
    }
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
        .args(["-q", "ls", "--mirror"])
        .arg(&m)
        .output()
        .unwrap();
    assert_eq!(lacks.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&lacks.stderr).contains("'-q'"));
}
