//! Parse arguments, run the command, map the outcome to an exit code; nothing else.

use clap::Parser;
use rsmirror::cli::{Cli, Command};
use rsmirror::exit::Exit;
use rsmirror::progress::Progress;
use rsmirror::{settings, sync};

fn main() {
    let cli = Cli::parse();
    let arguments = std::env::args().collect::<Vec<_>>().join(" ");
    let exit = match cli.command {
        Command::Baseline(a) => baseline(&a, &arguments),
        Command::Inspect(a) => inspect(&a),
    };
    std::process::exit(exit.code());
}

fn fail(e: &rsmirror::error::Error) -> Exit {
    eprintln!("rsmirror: {e}");
    e.exit()
}

fn baseline(a: &rsmirror::cli::BaselineArgs, arguments: &str) -> Exit {
    let s = match settings::Baseline::new(a) {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    let progress = Progress::new(s.output.quiet);
    match sync::baseline::run(&s, arguments, &progress) {
        Ok(o) => {
            if s.output.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&o.summary).expect("serialisable")
                );
            }
            // Quiet under cron: on success the summary is shown on a terminal or with -v.
            let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
            if !s.output.quiet && (o.exit != Exit::Ok || tty || s.output.verbose > 0) {
                eprintln!("{}", o.summary.line());
            }
            if s.output.verbose > 0 {
                for w in &o.summary.warnings {
                    eprintln!("warning: {w}");
                }
            }
            o.exit
        }
        Err(e) => fail(&e),
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
