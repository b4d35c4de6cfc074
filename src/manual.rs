//! The manual: the topics of `doc/manual/`, compiled into the binary. The same files are what
//! the README links to, what `rsmirror help TOPIC` prints and what `rsmirror man TOPIC` turns
//! into the page `rsmirror-TOPIC(7)`: one source for all three. A topic is named by its file
//! (`doc/manual/cron.md` is `cron`); no topic is named like a command, so `rsmirror help
//! COMMAND` stays clap's.

use std::io::Write;

/// One topic of the manual: its name and its Markdown, as in `doc/manual/NAME.md`.
#[derive(Debug)]
pub struct Topic {
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! topics {
    ($($name:literal),* $(,)?) => {
        &[$(Topic {
            name: $name,
            text: include_str!(concat!("../doc/manual/", $name, ".md")),
        }),*]
    };
}

/// Every topic, in the order `rsmirror help topics` and the README list them.
pub const TOPICS: &[Topic] = topics![
    "sources",
    "full-copy",
    "changes",
    "reading",
    "web",
    "push",
    "audit-and-repair",
    "exports",
    "buckets",
    "catalog-health",
    "safety",
    "http",
    "cron",
    "scale",
    "exit-codes",
    "json",
    "formats",
    "layout",
    "development",
];

impl Topic {
    /// The text of its first line, `# Title`.
    pub fn title(&self) -> &'static str {
        let first = self.text.lines().next().unwrap_or_default();
        first.strip_prefix("# ").unwrap_or(first).trim()
    }

    /// The one-sentence summary under the title, on one line.
    pub fn summary(&self) -> String {
        self.text
            .lines()
            .skip(1)
            .skip_while(|l| l.trim().is_empty())
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// What follows the title line.
    pub fn body(&self) -> &'static str {
        match self.text.split_once('\n') {
            Some((_, rest)) => rest,
            None => "",
        }
    }
}

/// The topic called `name`.
pub fn find(name: &str) -> Option<&'static Topic> {
    TOPICS.iter().find(|t| t.name == name)
}

/// The topics' names, comma-separated.
pub fn names() -> String {
    TOPICS.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
}

/// `rsmirror help topics`: a line per topic, its name then its title.
pub fn listing() -> String {
    TOPICS
        .iter()
        .map(|t| format!("{:<18}{}\n", t.name, t.title()))
        .collect()
}

/// The line `rsmirror --help` ends its description of the commands with.
pub fn help_footer() -> String {
    format!(
        "Manual topics (rsmirror help TOPIC, man rsmirror-TOPIC; rsmirror help topics lists \
         them): {}.",
        names()
    )
}

/// `rsmirror help NAME` where NAME is no command: the topic's Markdown on stdout (exit 0),
/// `topics` the list of them; any other NAME is a usage error naming the commands and topics
/// (exit 2). `None` when clap is to read the command line (`rsmirror help`, `rsmirror help
/// COMMAND`, anything longer). `args`: the command line, the program first.
pub fn help(args: &[std::ffi::OsString], commands: &clap::Command) -> Option<i32> {
    let [_, help, name] = args else {
        return None;
    };
    if help != "help" {
        return None;
    }
    let name = name.to_str()?;
    if name == "help" || name.starts_with('-') || commands.find_subcommand(name).is_some() {
        return None;
    }
    let text = if name == "topics" {
        listing()
    } else if let Some(topic) = find(name) {
        topic.text.to_string()
    } else {
        let commands: Vec<&str> = commands.get_subcommands().map(|c| c.get_name()).collect();
        let _ = writeln!(
            std::io::stderr(),
            "error: rsmirror help {name}: no such command or topic\n\nThe commands: {}.\nThe \
             topics: {}.",
            commands.join(", "),
            names()
        );
        return Some(crate::exit::Exit::Usage.code());
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(std::io::stderr(), "rsmirror: writing to stdout: {e}");
            Some(crate::exit::Exit::Store.code())
        }
        _ => Some(crate::exit::Exit::Ok.code()),
    }
}
