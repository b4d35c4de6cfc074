//! OAI-PMH 2.0 sources, against pyoai 2.5.0's `oaipmh.server` (`tests/peers/oai_server.py`)
//! on 127.0.0.1, and judged by what Sickle 0.7.0 harvests from the same server: the records
//! the mirror holds (identifiers, datestamps, deleted flags) are Sickle's, an incremental
//! brings what Sickle's `from=` harvest brings, a killed harvest resumes without fetching a
//! page twice, and a 503's Retry-After is waited out.

use crate::peers::{python_with, script, Server};
use crate::support::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const MODULES: &str = "oaipmh, sickle";

/// (identifier, datestamp, deleted), as both sides give them.
type Record = (String, String, bool);

struct Repository {
    server: Server,
    python: PathBuf,
    records: PathBuf,
    log: PathBuf,
    dir: tempfile::TempDir,
}

impl Repository {
    /// 250 records of which 25 deleted, served in pages of 100 (`extra`: more server options).
    fn start(extra: &[&str]) -> Repository {
        let python = python_with(MODULES);
        let dir = tempfile::tempdir().unwrap();
        let records = dir.path().join("records.json");
        let log = dir.path().join("requests.log");
        let r = records.to_str().unwrap();
        let st = std::process::Command::new(&python)
            .arg(script("oai_server.py"))
            .args(["--gen", "250", "--deleted", "25", "--out", r])
            .status()
            .unwrap();
        assert!(st.success());
        let mut args = vec!["--records", r, "--batch", "100", "--log"];
        args.push(log.to_str().unwrap());
        args.extend_from_slice(extra);
        let server = Server::start(&python, "oai_server.py", &args);
        Repository {
            server,
            python,
            records,
            log,
            dir,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/oai", self.server.port)
    }

    /// What Sickle harvests (`from`: a selective harvest).
    fn sickle(&self, from: Option<&str>) -> BTreeSet<Record> {
        let mut c = std::process::Command::new(&self.python);
        c.arg(script("sickle_harvest.py")).arg(self.url());
        if let Some(f) = from {
            c.args(["--from", f]);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["identifier"].as_str().unwrap().to_string(),
                    v["datestamp"].as_str().unwrap().to_string(),
                    v["deleted"].as_bool().unwrap(),
                )
            })
            .collect()
    }

    /// The ListRecords requests the server answered, in order.
    fn list_records(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            // Sickle's requests name the verb last; rsmirror's first.
            .filter(|l| l.starts_with("verb=ListRecords"))
            .map(str::to_string)
            .collect()
    }

    /// Rewrite the records: `change` edits the list.
    fn change(&self, change: impl FnOnce(&mut Vec<serde_json::Value>)) {
        let mut v: Vec<serde_json::Value> =
            serde_json::from_slice(&std::fs::read(&self.records).unwrap()).unwrap();
        change(&mut v);
        let tmp = self.dir.path().join("records.tmp");
        std::fs::write(&tmp, serde_json::to_vec(&v).unwrap()).unwrap();
        std::fs::rename(tmp, &self.records).unwrap();
    }
}

/// The records the mirror holds: (URI, lastmod, deleted) of every resource, tombstones too.
fn held(m: &Path) -> BTreeSet<Record> {
    let (ls, _) = ok_on_mirror(m, &["ls", "--deleted", "--json"]);
    ls.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["uri"].as_str().unwrap().to_string(),
                v["lastmod"].as_str().unwrap_or("").to_string(),
                v["deleted"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A datestamp as rsmirror shows a lastmod (RFC 3339 as jiff writes it).
fn as_shown(records: BTreeSet<Record>) -> BTreeSet<Record> {
    records
        .into_iter()
        .map(|(i, d, del)| {
            let t: jiff::Timestamp = d.parse().unwrap();
            (i, t.to_string(), del)
        })
        .collect()
}

#[test]
#[cfg_attr(
    missing = "pyoai",
    ignore = "pyoai and Sickle missing: .ci/run installs them"
)]
fn a_harvest_holds_what_sickle_harvests_and_an_incremental_what_its_from_harvest_brings() {
    let repo = Repository::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let out = baseline(&repo.url(), &m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // The 25 deleted records were never held: recorded as tombstones (below), but nothing
    // went, so none is named or counted as deleted.
    assert!(
        !stderr_of(&out).contains("deleted: "),
        "{}",
        stderr_of(&out)
    );
    let sickle = repo.sickle(None);
    assert_eq!(sickle.len(), 250);
    assert_eq!(sickle.iter().filter(|r| r.2).count(), 25);
    assert_eq!(held(&m), as_shown(sickle));
    // Three pages, each asked for once.
    let pages = repo.list_records();
    assert_eq!(pages.len(), 3, "{pages:?}");
    assert_eq!(pages.iter().collect::<BTreeSet<_>>().len(), 3);
    // A record's bytes are its metadata as published: standalone Dublin Core.
    let (dc, _) = ok_on_mirror(&m, &["cat", "oai:rsmirror.test:rec-000001"]);
    assert!(dc.contains("<dc:title>Record 1</dc:title>"), "{dc}");
    assert!(dc.contains("xmlns:dc="), "{dc}");
    assert_consistent(&m);
    // The mirror agrees with the source.
    let out = on_mirror(&m, &["audit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));

    // 30 changes after the baseline: 20 records updated, 5 deleted, 5 new.
    let (sp, _) = sync_point(&m).unwrap();
    let sp = sp.unwrap();
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    repo.change(|v| {
        for (n, r) in v
            .iter_mut()
            .filter(|r| r["deleted"] == false)
            .take(25)
            .enumerate()
        {
            r["datestamp"] = now.clone().into();
            match n < 20 {
                true => r["title"] = format!("Record retitled {n}").into(),
                false => r["deleted"] = true.into(),
            }
        }
        for i in 0..5 {
            v.push(serde_json::json!({
                "identifier": format!("oai:rsmirror.test:new-{i}"),
                "datestamp": now, "deleted": false, "sets": ["odd"],
                "title": format!("New {i}"), "creator": "C",
            }));
        }
    });
    let out = incremental(&m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // The 5 held records the source deleted are named, each once.
    assert_eq!(
        stderr_of(&out).matches("deleted: ").count(),
        5,
        "{}",
        stderr_of(&out)
    );
    // The harvest asked from the sync point less one step of the repository's granularity.
    let from: jiff::Timestamp =
        sp.parse::<jiff::Timestamp>().unwrap() - jiff::SignedDuration::from_secs(1);
    let from = from.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let last = repo.list_records().pop().unwrap();
    assert!(
        last.contains(&format!("from={}", from.replace(':', "%3A")))
            || last.contains(&format!("from={from}")),
        "{last}"
    );
    let changed = repo.sickle(Some(&from));
    assert_eq!(changed.len(), 30);
    let applied: BTreeSet<String> = last_run_versions(&m);
    let expected: BTreeSet<String> = changed.iter().map(|r| r.0.clone()).collect();
    assert_eq!(applied, expected);
    assert_eq!(held(&m), as_shown(repo.sickle(None)));
    assert_consistent(&m);
}

/// The URIs the last run made a version of.
fn last_run_versions(m: &Path) -> BTreeSet<String> {
    let conn = rusqlite::Connection::open(m.join("catalog.sqlite")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT r.uri FROM versions v JOIN resources r ON r.id = v.resource_id
             WHERE v.run_id = (SELECT max(id) FROM runs)",
        )
        .unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
#[cfg_attr(
    missing = "pyoai",
    ignore = "pyoai and Sickle missing: .ci/run installs them"
)]
fn a_harvest_killed_between_pages_resumes_and_fetches_no_page_twice() {
    let repo = Repository::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    // Killed once the second page's records are committed.
    let out = baseline(&repo.url(), &m)
        .env("RSMIRROR_KILL_AT", "writer.committed:2")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(repo.list_records().len(), 2);
    let out = baseline(&repo.url(), &m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let pages = repo.list_records();
    assert_eq!(pages.len(), 3, "{pages:?}");
    assert_eq!(
        pages.iter().collect::<BTreeSet<_>>().len(),
        3,
        "a page fetched twice: {pages:?}"
    );
    assert_eq!(held(&m), as_shown(repo.sickle(None)));
    assert_consistent(&m);
}

#[test]
#[cfg_attr(
    missing = "pyoai",
    ignore = "pyoai and Sickle missing: .ci/run installs them"
)]
fn a_503_with_retry_after_is_waited_out() {
    let repo = Repository::start(&["--fail-once-with-503", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let out = baseline(&repo.url(), &m).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(held(&m).len(), 250);
    // The second page asked twice: once refused, once answered.
    assert_eq!(repo.list_records().len(), 4);
}

#[test]
#[cfg_attr(
    missing = "pyoai",
    ignore = "pyoai and Sickle missing: .ci/run installs them"
)]
fn a_format_the_repository_does_not_offer_is_a_clear_error_and_a_dry_run_writes_nothing() {
    let repo = Repository::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m");
    let out = baseline(&repo.url(), &m)
        .args(["--oai-prefix", "marc21"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("marc21") && err.contains("--oai-prefix"),
        "{err}"
    );

    // A dry run: every live record to create, nothing written.
    let out = baseline(&repo.url(), &m).arg("--dry-run").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let plus = stdout_of(&out)
        .lines()
        .filter(|l| l.starts_with("+ oai:"))
        .count();
    assert_eq!(plus, 225);
    assert!(current(&m).is_empty());

    // --exclude leaves records out, by their identifier.
    let out = baseline(&repo.url(), &m)
        .args(["--exclude", "*rec-0000*"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let held = held(&m);
    assert!(held
        .iter()
        .all(|r| !r.0.starts_with("oai:rsmirror.test:rec-0000")));
    assert_eq!(held.len(), 250 - 99);
    // inspect names the documents of the harvest.
    let out = rsmirror().args(["inspect", &repo.url()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("OAI-PMH"), "{}", stdout_of(&out));
}
