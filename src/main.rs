//! Parse arguments, run the command, map the outcome to an exit code; nothing else.

use clap::Parser;
use rsmirror::cli::{Cli, Command};
use rsmirror::exit::Exit;
use rsmirror::progress::Progress;
use rsmirror::{settings, sync};

fn main() {
    // Before any thread starts: SIGINT and SIGTERM end a run honestly (`interrupt`).
    rsmirror::interrupt::watch();
    let cli = Cli::parse();
    let arguments = recorded_arguments(std::env::args());
    let exit = match cli.command {
        Command::Baseline(a) => baseline(&a, &arguments),
        Command::Incremental(a) => incremental(&a, &arguments),
        Command::Audit(a) => audit(&a, &arguments),
        Command::Inspect(a) => inspect(&a),
        Command::Feed(a) => feed(&a),
    };
    std::process::exit(exit.code());
}

/// The command line as the run record keeps it: `--header` values replaced by `***`.
fn recorded_arguments(args: impl Iterator<Item = String>) -> String {
    let mut out = Vec::new();
    let mut header_next = false;
    for a in args {
        if header_next {
            out.push(settings::redact_header(&a));
            header_next = false;
        } else if a == "--header" {
            out.push(a);
            header_next = true;
        } else if let Some(h) = a.strip_prefix("--header=") {
            out.push(format!("--header={}", settings::redact_header(h)));
        } else {
            out.push(a);
        }
    }
    out.join(" ")
}

fn fail(e: &rsmirror::error::Error) -> Exit {
    eprintln!("rsmirror: {e}");
    e.exit()
}

/// A run that ended in an error: with `--json` the wrapper still gets one JSON document on
/// stdout (`command`, `error`, `exit_code`), as audit's report carries `error`.
fn fail_as(command: &str, json: bool, e: &rsmirror::error::Error) -> Exit {
    if json {
        let doc = serde_json::json!({
            "command": command,
            "error": e.to_string(),
            "exit_code": e.exit().code(),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialisable")
        );
    }
    fail(e)
}

fn baseline(a: &rsmirror::cli::BaselineArgs, arguments: &str) -> Exit {
    let s = match settings::Baseline::new(a) {
        Ok(s) => s,
        Err(e) => return fail_as("baseline", a.output.json, &e.into()),
    };
    let progress = Progress::new(s.output.quiet);
    let result = sync::baseline::run(&s, arguments, &progress)
        .map_err(|e| sync::context::full_disk_said(e, &s.mirror));
    summarise("baseline", result, &s.output)
}

fn incremental(a: &rsmirror::cli::IncrementalArgs, arguments: &str) -> Exit {
    let s = match settings::Incremental::new(a) {
        Ok(s) => s,
        Err(e) => return fail_as("incremental", a.output.json, &e.into()),
    };
    let progress = Progress::new(s.output.quiet);
    let result = sync::incremental::run(&s, arguments, &progress)
        .map_err(|e| sync::context::full_disk_said(e, &s.mirror));
    summarise("incremental", result, &s.output)
}

fn audit(a: &rsmirror::cli::AuditArgs, arguments: &str) -> Exit {
    let s = match settings::Audit::new(a) {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    match sync::audit::run(&s, arguments) {
        Ok(exit) => exit,
        Err(e) => fail(&e),
    }
}

/// Print a baseline / incremental outcome the way DESIGN.md §5 asks: JSON on stdout with
/// --json; quiet under cron on success; the summary line otherwise.
fn summarise(
    command: &str,
    result: Result<sync::context::Outcome, rsmirror::error::Error>,
    output: &settings::Output,
) -> Exit {
    match result {
        Ok(o) => {
            if output.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&o.summary).expect("serialisable")
                );
            }
            // Quiet under cron: on success the summary is shown on a terminal or with -v.
            let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
            if !output.quiet && (o.exit != Exit::Ok || tty || output.verbose > 0) {
                eprintln!("{}", o.summary.line());
            }
            if output.verbose > 0 {
                for w in &o.summary.warnings {
                    eprintln!("warning: {w}");
                }
            }
            o.exit
        }
        Err(e) => fail_as(command, output.json, &e),
    }
}

fn inspect(a: &rsmirror::cli::InspectArgs) -> Exit {
    let s = match settings::SourceSettings::new(&a.source, &a.source_args) {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    match sync::inspect::run(&s) {
        Ok(i) => {
            if a.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&i).expect("serialisable")
                );
            } else {
                print!("{}", i.text());
            }
            if i.errors.is_empty() {
                Exit::Ok
            } else {
                for e in &i.errors {
                    eprintln!("rsmirror: source error: {e}");
                }
                Exit::Source
            }
        }
        Err(e) => fail(&e),
    }
}

fn feed(a: &rsmirror::cli::FeedArgs) -> Exit {
    let s = match settings::Feed::new(a) {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    match sync::feed::run(&s) {
        Ok(()) => Exit::Ok,
        Err(e) => fail(&e),
    }
}
