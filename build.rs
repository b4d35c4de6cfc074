//! Which of the tools the integration tests run are on this machine.
//!
//! A test that needs a tool rsmirror does not ship (SeaweedFS, the export validators, nginx,
//! Python's h2, the openssl command, groff for the manual's pages, the corpus of third-party
//! documents, the PREMIS judges, Chromium for the HTML report) is marked
//! `#[cfg_attr(missing = "TOOL", ignore = "why")]`: where the tool is missing, `cargo test`
//! reports it as ignored with the reason instead of counting a test that did not run as a
//! pass. `bash .ci/run` installs every tool; under `CI=true` nothing is ignored for a missing
//! tool (it fails its tests). What the build links is no tool: the HTTP/2 misbehaviour tests
//! need a libcurl of 8.0 or later (`missing = "libcurl8"`), in CI too, where the bundled build
//! (`--features curl-sys/static-curl`) runs them.
//!
//! The build looks again when `CI`, `PATH`, `RSMIRROR_VALIDATORS` or `RSMIRROR_WEED` change,
//! or when something changes under `.ci/` (where `.ci/run` makes its virtualenv), `/usr/bin` or
//! `/usr/sbin`. A tool installed elsewhere is seen after `touch build.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every tool a test may be missing.
const TOOLS: &[&str] = &[
    "weed",
    "bagit",
    "warcio",
    "ocfl",
    "resync",
    "nginx",
    "openssl",
    "h2",
    "groff",
    "corpus",
    "libcurl8",
    "pyoai",
    "djiiif",
    "premis",
    "chromium",
    "memento_validator",
    "memento_client",
    "flask_websub",
    "pywb",
    "feedvalidator",
    "feedparser",
];

fn main() {
    let values: Vec<String> = TOOLS.iter().map(|t| format!("\"{t}\"")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(missing, values({}))",
        values.join(", ")
    );
    for var in [
        "CI",
        "PATH",
        "RSMIRROR_VALIDATORS",
        "RSMIRROR_WEED",
        "DEP_CURL_STATIC",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=build.rs");
    for dir in [".ci", "/usr/bin", "/usr/sbin"] {
        if Path::new(dir).exists() {
            println!("cargo::rerun-if-changed={dir}");
        }
    }
    // What the build links decides for CI too: no tool to install changes it.
    if !libcurl_8_or_later() {
        println!("cargo::rustc-cfg=missing=\"libcurl8\"");
    }
    // Under CI every test runs: a missing tool is a failure there, not a skip.
    if std::env::var("CI").as_deref() == Ok("true") {
        return;
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let dirs = search_dirs(&manifest);
    let found = |name: &str| dirs.iter().any(|d| d.join(name).is_file());
    let weed =
        std::env::var_os("RSMIRROR_WEED").is_some_and(|w| Path::new(&w).is_file()) || found("weed");
    let checks = [
        ("weed", weed),
        ("bagit", found("bagit.py")),
        ("warcio", found("warcio")),
        ("ocfl", found("ocfl-validate.py")),
        ("resync", found("resync-sync")),
        ("nginx", runs("nginx", &["-v"])),
        ("openssl", runs("openssl", &["version"])),
        ("groff", runs("groff", &["--version"])),
        ("chromium", runs("chromium", &["--version"])),
        ("h2", python_with(&manifest, "h2")),
        ("pyoai", python_with(&manifest, "oaipmh, sickle")),
        ("djiiif", python_with(&manifest, "djiiif, django")),
        (
            "premis",
            python_with(&manifest, "lxml, xmlschema, metsrw, django"),
        ),
        // LANL's memento-validator is vendored in tests/peers/; these are what it imports.
        (
            "memento_validator",
            python_with(&manifest, "dateutil, click, typing_extensions"),
        ),
        ("memento_client", python_with(&manifest, "memento_client")),
        // `follow`'s hub (tests/peers/websub_hub.py): flask-websub 0.4.1, celery eager.
        (
            "flask_websub",
            python_with(&manifest, "flask_websub, celery, requests"),
        ),
        // A Memento server (TimeGates, TimeMaps) over WARC files, for versions from the source.
        ("pywb", python_with(&manifest, "pywb, warcio")),
        // The W3C Feed Validator is vendored in tests/peers/feedvalidator/; these it imports.
        (
            "feedvalidator",
            python_with(&manifest, "lxml, html5lib, rdflib"),
        ),
        ("feedparser", python_with(&manifest, "feedparser")),
        ("corpus", manifest.join("../shared/corpus").is_dir()),
    ];
    for (tool, present) in checks {
        if !present {
            println!("cargo::rustc-cfg=missing=\"{tool}\"");
        }
    }
}

/// Where the tests look for a tool: `RSMIRROR_VALIDATORS`, `.ci/venv/bin`, then PATH.
fn search_dirs(manifest: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("RSMIRROR_VALIDATORS") {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(manifest.join(".ci/venv/bin"));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs
}

/// Whether the libcurl this build links is 8.0 or later: curl-sys's own (it says `static`
/// when it built one, a current release), else the system's as pkg-config names it.
fn libcurl_8_or_later() -> bool {
    if std::env::var_os("DEP_CURL_STATIC").is_some() {
        return true;
    }
    let version = Command::new("pkg-config")
        .args(["--modversion", "libcurl"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    version
        .and_then(|v| v.split('.').next()?.parse::<u32>().ok())
        .is_some_and(|major| major >= 8)
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// A Python that imports `modules`, where the tests look for one (`tests/it/hostile_h2.rs`,
/// `tests/it/support.rs`).
fn python_with(manifest: &Path, modules: &str) -> bool {
    let mut candidates = Vec::new();
    if let Some(d) = std::env::var_os("RSMIRROR_VALIDATORS") {
        candidates.push(PathBuf::from(d).join("python3"));
    }
    candidates.push(manifest.join(".ci/venv/bin/python3"));
    candidates.push("python3".into());
    candidates.iter().any(|python| {
        Command::new(python)
            .args(["-c", &format!("import {modules}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}
