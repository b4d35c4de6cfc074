//! `audit --report FILE.html` (issue 71): one self-contained page, opened in headless Chromium
//! as a person's browser would: the verdict, the fixity coverage figures, the failures with
//! their history and every chart are there, nothing is fetched, and it prints to PDF.

use crate::premis::{expect, mirror_with_history, object, text};
use crate::support::*;
use std::path::Path;
use std::process::Command;

/// Chromium, headless, on `page` with `args`; its stderr.
fn chromium(page: &Path, profile: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium: {}", stderr_of(&out));
    (stdout_of(&out), stderr_of(&out))
}

fn corrupt(path: &Path) {
    let mut perms = std::fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms).unwrap();
    std::fs::write(path, b"rot\n").unwrap();
}

#[test]
#[cfg_attr(
    missing = "chromium",
    ignore = "needs Debian's chromium (.ci/run installs it)"
)]
fn the_html_report_opens_in_chromium_with_its_verdict_figures_and_charts() {
    let (_t, _srv, dir, mirror) = mirror_with_history();
    // r3 again (it was repaired once already: its history says so), and r5 for the first time.
    corrupt(&object(&mirror, &text(3)));
    corrupt(&object(&mirror, &text(5)));
    let page = dir.path().join("audit.html");
    let out = on_mirror(&mirror, &["audit", "--report", page.to_str().unwrap()]);
    expect(&out, 1, "audit --report FILE.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    // Self-contained: no script, nothing from elsewhere.
    for outside in ["<script", "src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(outside), "{outside} in {html}");
    }

    let profile = tempfile::tempdir().unwrap();
    let (dom, log) = chromium(&page, profile.path(), &["--dump-dom"]);
    assert!(!log.contains("CONSOLE"), "console messages: {log}");
    assert!(
        dom.contains("id=\"verdict\" class=\"verdict fail\">2 differences found"),
        "{dom}"
    );
    // The verdict comes first.
    assert!(dom.find("id=\"verdict\"") < dom.find("id=\"coverage\""));
    for window in ["last 30 days", "last 90 days", "last 365 days"] {
        // Every audit re-hashed the whole mirror.
        assert!(
            dom.contains(&format!("data-window=\"{window}\">100%")),
            "{window}: {dom}"
        );
    }
    for chart in ["chart-coverage", "chart-changes", "chart-agreement"] {
        assert!(
            dom.contains(&format!("<svg id=\"{chart}\"")),
            "{chart}: {dom}"
        );
    }
    // r3's history: the audit that found it corrupt before, and the repair.
    assert!(dom.contains("repair run"), "{dom}");
    assert!(dom.contains("first failure"), "{dom}");

    let shot = dir.path().join("audit.png");
    chromium(
        &page,
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1000,1400",
        ],
    );
    assert!(std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"));
    let pdf = dir.path().join("audit.pdf");
    chromium(
        &page,
        profile.path(),
        &[
            "--no-pdf-header-footer",
            &format!("--print-to-pdf={}", pdf.display()),
        ],
    );
    assert!(std::fs::read(&pdf).unwrap().starts_with(b"%PDF-"));
}

#[test]
fn a_sampled_audit_covers_its_slice_and_html_is_the_default_for_an_html_file() {
    let t = Tree::new();
    for i in 1..=8 {
        t.put(&format!("r{i}"), &text(i));
    }
    let names: Vec<String> = (1..=8).map(|i| format!("r{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    t.resource_list("2026-03-01T00:00:00Z", &names);
    let srv = crate::server::TestServer::start(t.path());
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("m");
    expect(
        &baseline(&srv.url("/resourcelist.xml"), &mirror)
            .output()
            .unwrap(),
        0,
        "baseline",
    );
    let page = dir.path().join("a.HTML");
    let out = on_mirror(
        &mirror,
        &[
            "audit",
            "--offline",
            "--sample",
            "1/4",
            "--report",
            page.to_str().unwrap(),
        ],
    );
    expect(&out, 0, "a sampled audit");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("class=\"verdict pass\""), "{html}");
    for window in ["last 30 days", "last 90 days", "last 365 days"] {
        assert!(
            html.contains(&format!("data-window=\"{window}\">25%")),
            "{window}: {html}"
        );
    }
    // --format says otherwise: text.
    let out = on_mirror(
        &mirror,
        &[
            "audit",
            "--offline",
            "--report",
            page.to_str().unwrap(),
            "--format",
            "text",
        ],
    );
    expect(&out, 0, "--format text");
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .starts_with("# rsmirror audit report"));
}
