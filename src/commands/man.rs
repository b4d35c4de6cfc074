//! `rsmirror man [COMMAND]`: the manual page of rsmirror, or of one of its commands, from the
//! same clap definitions as `--help`, with the sections a manual page has and `--help` does
//! not: EXIT STATUS, ENVIRONMENT and FILES. A command's page is named `rsmirror-ls(1)` (the
//! convention of git's pages, `git-log(1)`), and its synopsis reads `rsmirror ls ...`, the way
//! it is typed.

use crate::exit::TABLE;
use std::io::{self, Write};

/// The environment variables rsmirror reads: (name, what it does).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "RSMIRROR_DIR",
        "The mirror folder, where --mirror is not given (default ./mirror).",
    ),
    (
        "RSMIRROR_<OPTION>",
        "Any other option of a command: its long name in capitals, hyphens as underscores \
         (RSMIRROR_MAX_SIZE=10G for --max-size 10G, RSMIRROR_JOBS=4, RSMIRROR_VERBOSE=2 for \
         -vv; a switch takes true/false, yes/no, on/off or 1/0). The command line wins over \
         the environment, the environment over what the source keeps (--delay, --timeout, \
         --jobs, --allow-host, --header, --include, --exclude, --map: rsmirror source list \
         shows them), that over the default; a repeatable option takes one value from it. Not read from it: --help, --version, cat --version and log --run.",
    ),
    (
        "http_proxy, https_proxy, HTTPS_PROXY, all_proxy, ALL_PROXY, no_proxy, NO_PROXY",
        "The proxy for documents and resources alike, as curl reads them: http_proxy for \
         http URLs, https_proxy or HTTPS_PROXY for https ones, all_proxy or ALL_PROXY for \
         either when the scheme's own is not set, no_proxy or NO_PROXY the hosts reached \
         directly. HTTP_PROXY is ignored, as curl ignores it.",
    ),
    (
        "SSL_CERT_FILE, SSL_CERT_DIR",
        "The certificate authorities trusted for https, instead of the system's bundle and \
         folder; --ca-file replaces both for a run.",
    ),
    (
        "NETRC, HOME",
        "Credentials for a restricted source, where no --header is given: the entry for its \
         host in the file NETRC names, else in $HOME/.netrc.",
    ),
];

/// The files of a mirror: (path, what it holds).
const FILES: &[(&str, &str)] = &[
    (
        "MIRROR/catalog.sqlite",
        "The catalog: sources, resources, versions, runs, problems, audit findings (SQLite, \
         with its -wal log while a run writes).",
    ),
    (
        "MIRROR/objects/sha256/ab/<sha256>",
        "Every version's bytes, exactly as fetched, named by their SHA-256 (the first two hex \
         digits name the folder).",
    ),
    (
        "MIRROR/staging/",
        "Bytes being fetched, before they are verified; emptied when a run starts and ends.",
    ),
    (
        "MIRROR/quarantine/",
        "Damaged objects and stray files that repair moved aside; never deleted.",
    ),
    (
        "MIRROR/.lock",
        "Held by the run that writes the mirror (another one waits with --retry-lock, or \
         exits 6).",
    ),
];

/// Write the page of `cmd` (rsmirror itself, or one command with `name`) to stdout.
pub(crate) fn render(cmd: clap::Command, name: Option<&str>) -> io::Result<()> {
    let cmd = match name {
        // A one-shot process: the names live as long as it anyway.
        Some(name) => cmd
            .name(leak(format!("rsmirror-{name}")))
            .bin_name(leak(format!("rsmirror {name}")))
            .version(env!("CARGO_PKG_VERSION"))
            .disable_version_flag(true),
        None => cmd,
    };
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = io::stdout().lock();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out)?;
    }
    out.write_all(sections().as_bytes())?;
    man.render_version_section(&mut out)?;
    out.flush()
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// EXIT STATUS, ENVIRONMENT and FILES, in roff.
fn sections() -> String {
    let mut s = String::from(".SH \"EXIT STATUS\"\n");
    for (_, code, meaning) in TABLE {
        s.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", escape(meaning)));
    }
    for (section, font, items) in [("ENVIRONMENT", 'B', ENVIRONMENT), ("FILES", 'I', FILES)] {
        s.push_str(&format!(".SH {section}\n"));
        for (term, what) in items {
            let (term, what) = (escape(term), escape(what));
            s.push_str(&format!(".TP\n\\f{font}{term}\\fR\n{what}\n"));
        }
    }
    s
}

/// Text as roff shows it: backslashes and hyphens escaped, no line starting with a control
/// character.
fn escape(text: &str) -> String {
    let s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_code_is_in_the_exit_status_section() {
        let s = sections();
        for (_, code, _) in TABLE {
            assert!(s.contains(&format!("\\fB{code}\\fR")), "{code}");
        }
        assert!(s.contains(".SH ENVIRONMENT") && s.contains("RSMIRROR_DIR"));
        assert!(s.contains("RSMIRROR_<OPTION>"));
        assert!(s.contains(".SH FILES") && s.contains("catalog.sqlite"));
        assert_eq!(escape("--mirror"), "\\-\\-mirror");
        assert_eq!(escape(".x"), "\\&.x");
    }
}
