//! `rsmirror man [COMMAND|TOPIC]`: the manual page of rsmirror, or of one of its commands, from the
//! same clap definitions as `--help`, with the sections a manual page has and `--help` does
//! not: EXIT STATUS, ENVIRONMENT and FILES. A command's page is named `rsmirror-ls(1)` (the
//! convention of git's pages, `git-log(1)`), and its synopsis reads `rsmirror ls ...`, the way
//! it is typed.
//!
//! `rsmirror man TOPIC` writes the page `rsmirror-TOPIC(7)` of a topic of the manual
//! (`doc/manual/TOPIC.md`, [`crate::manual`]) from its Markdown: headings become `.SH` / `.SS`,
//! paragraphs `.PP`, bullets `.IP \(bu`, table rows `.TP`, code blocks no-fill text; code spans
//! are bold, emphasis italic, and every backslash, hyphen, character beyond ASCII and line that
//! would start with a control character is escaped.
//!
//! `rsmirror man --install DIR` writes every page at once, where `man` looks for them
//! (`DIR/man1`, `DIR/man7`): what a package or `make install` puts under `/usr/share/man`.

use crate::exit::TABLE;
use crate::manual::{Topic, TOPICS};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
    let mut out = io::stdout().lock();
    page(cmd, name, &mut out)?;
    out.flush()
}

/// Every page, written under `dir` as `man` finds them in a folder of its `MANPATH`:
/// `man1/rsmirror.1`, `man1/rsmirror-COMMAND.1` for each command and `man7/rsmirror-TOPIC.7`
/// for each topic of the manual. Each page is written beside its place and renamed onto it, so
/// a reader never sees half of one. The paths written, in order.
pub(crate) fn install(root: &clap::Command, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut pages: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut roff = Vec::new();
    page(root.clone(), None, &mut roff)?;
    pages.push((PathBuf::from("man1/rsmirror.1"), roff));
    for sub in root.get_subcommands().filter(|c| c.get_name() != "help") {
        let name = sub.get_name();
        let mut roff = Vec::new();
        page(sub.clone(), Some(name), &mut roff)?;
        pages.push((PathBuf::from(format!("man1/rsmirror-{name}.1")), roff));
    }
    for topic in TOPICS {
        let path = PathBuf::from(format!("man7/rsmirror-{}.7", topic.name));
        pages.push((path, topic_page(topic).into_bytes()));
    }
    let mut written = Vec::new();
    for (relative, roff) in pages {
        let path = dir.join(relative);
        let folder = path.parent().expect("a page is in a section's folder");
        std::fs::create_dir_all(folder)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", folder.display())))?;
        let mut part = path.clone().into_os_string();
        part.push(".part");
        let part = PathBuf::from(part);
        std::fs::write(&part, &roff)
            .and_then(|()| std::fs::rename(&part, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&part);
                io::Error::new(e.kind(), format!("{}: {e}", path.display()))
            })?;
        written.push(path);
    }
    Ok(written)
}

/// The page of `cmd` (rsmirror itself, or one command with `name`), in roff, to `out`.
fn page(cmd: clap::Command, name: Option<&str>, out: &mut dyn Write) -> io::Result<()> {
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
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    out.write_all(sections().as_bytes())?;
    out.write_all(see_also(None).as_bytes())?;
    man.render_version_section(out)
}

/// Write the page `rsmirror-TOPIC(7)` of `topic` to stdout.
pub(crate) fn render_topic(topic: &Topic) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(topic_page(topic).as_bytes())?;
    out.flush()
}

/// The page `rsmirror-TOPIC(7)`, in roff: its title as the NAME line, then the Markdown.
pub(crate) fn topic_page(topic: &Topic) -> String {
    let mut s = format!(
        ".TH rsmirror-{} 7 \"\" \"rsmirror {}\" \"rsmirror manual\"\n",
        topic.name,
        env!("CARGO_PKG_VERSION")
    );
    s.push_str(&format!(
        // Left-aligned, unhyphenated: paths and digests do not stretch or split a line.
        ".ad l\n.nh\n.SH NAME\nrsmirror\\-{} \\- {}\n.SH DESCRIPTION\n",
        escape(topic.name),
        inline(&plain(topic.title()))
    ));
    s.push_str(&markdown(topic.body()));
    s.push_str(&see_also(Some(topic.name)));
    s
}

/// SEE ALSO: rsmirror(1) and the manual's topics (but `this` one).
fn see_also(this: Option<&str>) -> String {
    let mut refs = vec!["\\fBrsmirror\\fR(1)".to_string()];
    for t in TOPICS.iter().filter(|t| Some(t.name) != this) {
        refs.push(format!("\\fBrsmirror\\-{}\\fR(7)", escape(t.name)));
    }
    format!(".SH \"SEE ALSO\"\n{}\n", refs.join(",\n"))
}

/// Markdown as roff: the block structure the manual's files use (headings, paragraphs,
/// bullets with indented continuation lines, fenced code, pipe tables).
fn markdown(text: &str) -> String {
    #[derive(PartialEq)]
    enum Block {
        None,
        Paragraph,
        Item,
    }
    let mut out = String::new();
    let mut block = Block::None;
    let mut words = String::new();
    let flush = |out: &mut String, words: &mut String| {
        if !words.is_empty() {
            out.push_str(&filled(words));
            words.clear();
        }
    };
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            flush(&mut out, &mut words);
            block = Block::None;
            out.push_str(".PP\n.RS 4\n.nf\n");
            // A fence indented under a bullet: its lines lose that indent.
            let indent = line.len() - trimmed.len();
            for code in lines.by_ref() {
                if code.trim_start().starts_with("```") {
                    break;
                }
                let code = match code.get(..indent) {
                    Some(margin) if margin.trim().is_empty() => &code[indent..],
                    _ => code.trim_start(),
                };
                out.push_str(&escape(code));
                out.push('\n');
            }
            out.push_str(".fi\n.RE\n");
        } else if trimmed.is_empty() {
            flush(&mut out, &mut words);
            block = Block::None;
        } else if let Some(heading) = trimmed.strip_prefix("## ") {
            flush(&mut out, &mut words);
            block = Block::None;
            out.push_str(&format!(
                ".SH \"{}\"\n",
                quoted(&plain(heading).to_uppercase())
            ));
        } else if let Some(heading) = trimmed.strip_prefix("### ") {
            flush(&mut out, &mut words);
            block = Block::None;
            out.push_str(&format!(".SS \"{}\"\n", quoted(&plain(heading))));
        } else if trimmed.starts_with('|') {
            flush(&mut out, &mut words);
            block = Block::None;
            // The header row (the separator row under it says so) is not shown, nor that row.
            if lines.peek().is_some_and(|next| is_separator(next)) {
                lines.next();
            } else {
                out.push_str(&table_row(trimmed));
            }
        } else if let Some(item) = trimmed.strip_prefix("- ").filter(|_| line == trimmed) {
            flush(&mut out, &mut words);
            block = Block::Item;
            out.push_str(".IP \\(bu 2\n");
            words.push_str(item);
        } else {
            if block == Block::None {
                out.push_str(".PP\n");
                block = Block::Paragraph;
            }
            if !words.is_empty() {
                words.push('\n');
            }
            words.push_str(trimmed);
        }
    }
    flush(&mut out, &mut words);
    out
}

/// A paragraph's lines (a code span or emphasis may run over a line's end) as filled roff text.
fn filled(words: &str) -> String {
    inline(words).lines().map(|l| protect(l) + "\n").collect()
}

/// A row of a pipe table as a tagged paragraph: the first cell bold, the others after it.
fn table_row(row: &str) -> String {
    let cells = cells(row);
    let Some((first, rest)) = cells.split_first() else {
        return String::new();
    };
    format!(
        ".TP\n{}\n{}\n",
        protect(&inline(first)),
        protect(&inline(&rest.join("; ")))
    )
}

/// The cells of a pipe table's row (`\|` is a `|` inside a cell).
fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|');
    let row = row
        .strip_suffix('|')
        .filter(|r| !r.ends_with('\\'))
        .unwrap_or(row);
    let mut cells = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_string()).collect()
}

/// The row under a table's header: `| --- | --- |`.
fn is_separator(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('|') && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// Text with its Markdown marks taken out (for a heading, which roff sets in one font).
fn plain(text: &str) -> String {
    text.replace(['`', '*'], "")
}

/// A heading's text inside roff's double quotes.
fn quoted(text: &str) -> String {
    escape(text).replace('"', "\\(dq")
}

/// Markdown's inline marks as roff fonts: `code` bold, **strong** bold, *emphasis* italic;
/// `[text](target)` as its text. Everything else escaped.
fn inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut bold = false;
    let mut italic = false;
    let font = |bold: bool, italic: bool| match (bold, italic) {
        (true, _) => "\\fB",
        (false, true) => "\\fI",
        (false, false) => "\\fR",
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev = i.checked_sub(1).map(|p| chars[p]);
        match c {
            '`' => {
                let end = chars[i + 1..].iter().position(|&c| c == '`');
                match end {
                    Some(n) => {
                        let code: String = chars[i + 1..i + 1 + n].iter().collect();
                        // A long path or URL may break after a slash (`\:`), not overflow.
                        out.push_str("\\fB");
                        out.push_str(&escape_chars(&code).replace('/', "/\\:"));
                        out.push_str(font(bold, italic));
                        i += n + 2;
                        continue;
                    }
                    None => out.push('`'),
                }
            }
            '*' if next == Some('*') => {
                bold = !bold;
                out.push_str(font(bold, italic));
                i += 2;
                continue;
            }
            '*' if !italic
                && next.is_some_and(|n| !n.is_whitespace())
                && chars[i + 1..].contains(&'*') =>
            {
                italic = true;
                out.push_str(font(bold, italic));
            }
            '*' if italic && prev.is_some_and(|p| !p.is_whitespace()) => {
                italic = false;
                out.push_str(font(bold, italic));
            }
            '[' => {
                // [text](target): the text alone.
                let close = chars[i..].iter().position(|&c| c == ']').map(|n| i + n);
                match close.filter(|&j| chars.get(j + 1) == Some(&'(')) {
                    Some(j) => {
                        let end = chars[j..].iter().position(|&c| c == ')').map(|n| j + n);
                        if let Some(end) = end {
                            let label: String = chars[i + 1..j].iter().collect();
                            out.push_str(&inline(&label));
                            i = end + 1;
                            continue;
                        }
                        out.push('[');
                    }
                    None => out.push('['),
                }
            }
            _ => out.push_str(&escape_chars(&c.to_string())),
        }
        i += 1;
    }
    if bold || italic {
        out.push_str("\\fR");
    }
    out
}

/// A line that would start with a control character (`.` or `'`) starts with `\&` instead.
fn protect(line: &str) -> String {
    if line.starts_with('.') || line.starts_with('\'') {
        format!("\\&{line}")
    } else {
        line.to_string()
    }
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

/// Text as roff shows it: [`escape_chars`], and no line starting with a control character.
fn escape(text: &str) -> String {
    protect(&escape_chars(text))
}

/// Backslashes and hyphens escaped, a character beyond ASCII named by its code point
/// (`\[u00E9]`).
fn escape_chars(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => s.push_str("\\e"),
            '-' => s.push_str("\\-"),
            c if c.is_ascii() => s.push(c),
            c => s.push_str(&format!("\\[u{:04X}]", c as u32)),
        }
    }
    s
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
