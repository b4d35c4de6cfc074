//! The peers of the OAI-PMH and IIIF Change Discovery tests (`tests/peers/`): a Python that
//! imports them, and their servers on 127.0.0.1, port 0.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A Python that imports `modules`: `RSMIRROR_VALIDATORS`, `.ci/venv/bin`, then PATH.
pub fn python_with(modules: &str) -> PathBuf {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("RSMIRROR_VALIDATORS") {
        candidates.push(PathBuf::from(d).join("python3"));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python3"));
    candidates.push("python3".into());
    for python in candidates {
        let ok = Command::new(&python)
            .args(["-c", &format!("import {modules}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return python;
        }
    }
    panic!("{modules}: missing; .ci/run installs them into .ci/venv");
}

/// A script of `tests/peers/`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name)
}

/// A peer server, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// `python script args...`, which prints `PORT <n>` first.
    pub fn start(python: &Path, name: &str, args: &[&str]) -> Server {
        let mut child = Command::new(python)
            .arg(script(name))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .unwrap_or_else(|| panic!("{name} said {line:?}, not PORT <n>"))
            .parse()
            .unwrap();
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
