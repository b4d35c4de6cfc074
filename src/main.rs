//! Parse arguments, run the command, map the outcome to an exit code; nothing else.

fn main() {
    // Before any thread starts: SIGINT and SIGTERM end a run honestly (`interrupt`).
    rsmirror::watch();
    rsmirror::raise_open_files_limit();
    let cli = rsmirror::cli::Cli::parse_args();
    let arguments = rsmirror::recorded_arguments(std::env::args());
    std::process::exit(rsmirror::run(cli, &arguments).code());
}
