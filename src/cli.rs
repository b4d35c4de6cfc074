//! What the user typed: clap types only. `settings.rs` turns these into checked options.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::settings::{self, UsageError};
pub use crate::settings::{AuditLevel, FeedFormat, OnGap, ReportFormat, Via};

#[derive(Debug, Parser)]
#[command(
    name = "rsmirror",
    version,
    about = "A ResourceSync Destination: keep a verified, versioned local mirror of a web source",
    long_about = "rsmirror keeps a local, verified, versioned mirror of a ResourceSync source in \
                  an SQLite catalog plus a content-addressed object store \
                  (MIRROR/objects/sha256/ab/<sha256>).",
    after_help = format!(
        "--mirror DIR, -q and -v may also come before the command (rsmirror --mirror M ls).\n\n{}\n\n{}",
        crate::manual::help_footer(),
        crate::exit::Exit::help_table()
    )
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parse the command line. `--version` also names what a bug report needs: the libcurl
    /// the build runs on (and its TLS library), the SQLite, the platform; `-V` the version
    /// alone.
    pub fn parse_args() -> Cli {
        use clap::FromArgMatches;
        let (options, mut args) = leading_options(std::env::args_os().collect());
        // `rsmirror help TOPIC`: a topic of the manual, where TOPIC is no command (whatever
        // options of rsmirror's stand before it: `rsmirror --mirror M help cron`).
        if let Some(code) = crate::manual::help(&args, &Cli::definitions()) {
            std::process::exit(code);
        }
        after_the_command(&mut args, options);
        let parse = || {
            Cli::definitions()
                .long_version(build_details())
                .try_get_matches_from(args.clone())
        };
        let mut matches = parse();
        // The command line wins over the environment: an option that conflicts with one typed
        // (`RSMIRROR_QUIET=1 rsmirror ls -v`) is dropped when it came from its variable alone.
        for _ in 0..4 {
            let Err(e) = &matches else { break };
            match conflicting_variable(e) {
                Some(name) => {
                    std::env::remove_var(name);
                    matches = parse();
                }
                None => break,
            }
        }
        let matches = matches.unwrap_or_else(|e| exit_naming_the_variable(e));
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    /// The command line's definitions, with the environment variable of every option
    /// ([`with_environment`]): what parsing, `--help`, the man pages and the completions use.
    pub fn definitions() -> clap::Command {
        use clap::CommandFactory;
        with_environment(Cli::command())
    }
}

/// Every option of every command may also come from the environment, as rclone's
/// `RCLONE_MAX_SIZE` and restic's `RESTIC_*` do: `--max-size` from `RSMIRROR_MAX_SIZE`,
/// `--dry-run` from `RSMIRROR_DRY_RUN` (a switch: `true`/`1`/`yes`/`on` set it, `false`/`0`/
/// `no`/`off` leave it unset), `-v` from `RSMIRROR_VERBOSE=N` (as many `-v`), `--mirror` from
/// `RSMIRROR_DIR`. The command line wins
/// over the environment, the environment over the default. A repeatable option takes one
/// value from the environment. Not mapped: the arguments without a name (a source, a URL),
/// `--help`, `--version`, and what picks one item for one invocation (`cat --version ID`,
/// `log --run ID`), which a variable left set would silently apply to every later command.
fn with_environment(cmd: clap::Command) -> clap::Command {
    let cmd = cmd.mut_args(|arg| {
        let Some(long) = arg.get_long() else {
            return arg;
        };
        let picks_one = matches!(long, "help" | "version" | "run");
        if picks_one || arg.get_env().is_some() {
            return arg;
        }
        let name = environment_name(long);
        let arg = match arg.get_action() {
            // As people write a switch in a variable; anything else is refused, not taken as no.
            clap::ArgAction::SetTrue => arg.value_parser(switch(name.clone())),
            _ => arg,
        };
        arg.env(name)
    });
    cmd.mut_subcommands(with_environment)
}

/// Of two options in conflict (`e`), the environment variable that set one the command line
/// did not name, if any.
fn conflicting_variable(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ArgumentConflict {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    for kind in [ContextKind::InvalidArg, ContextKind::PriorArg] {
        match e.get(kind) {
            Some(ContextValue::String(s)) => names.push(s.clone()),
            Some(ContextValue::Strings(v)) => names.extend(v.iter().cloned()),
            _ => {}
        }
    }
    let typed: Vec<String> = std::env::args().skip(1).collect();
    names.iter().find_map(|arg| {
        // "--quiet", "--verbose...", "-q": the option's long name.
        let long = arg
            .strip_prefix("--")?
            .split([' ', '=', '.'])
            .next()?
            .to_string();
        let name = environment_name(&long);
        std::env::var_os(&name)?;
        let on_line = typed
            .iter()
            .any(|a| *a == format!("--{long}") || a.starts_with(&format!("--{long}=")));
        (!on_line).then_some(name)
    })
}

/// Exit with clap's message for `e`; a value clap refused that came from the environment, not
/// the command line, is named with its variable (clap names only the option).
fn exit_naming_the_variable(e: clap::Error) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    // A wrapper that asked for --json gets its error as the document every --json error is
    // (schemas/error.schema.json); --help and --version are no errors.
    let help = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json")
        || std::env::var("RSMIRROR_JSON").is_ok_and(|v| switch(String::new())(&v) == Ok(true));
    if json && !help {
        let definitions = Cli::definitions();
        let command = args
            .iter()
            .find(|a| definitions.find_subcommand(a.as_str()).is_some())
            .map_or("rsmirror", String::as_str);
        // clap's first paragraph, on one line ("... not provided: <SOURCE>").
        let rendered = e.to_string();
        let first = rendered.split("\n\n").next().unwrap_or_default();
        let first = first.strip_prefix("error: ").unwrap_or(first);
        let message = first.split_whitespace().collect::<Vec<_>>().join(" ");
        let doc = crate::report::error_document(command, &message, e.exit_code());
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), "{doc}");
    }
    let value = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let from_environment = value(ContextKind::InvalidArg).and_then(|arg| {
        // "--jobs <N>": the option's long name.
        let long = arg
            .strip_prefix("--")?
            .split([' ', '='])
            .next()?
            .to_string();
        let name = environment_name(&long);
        let set = std::env::var(&name).ok()?;
        let typed = std::env::args()
            .any(|a| a == format!("--{long}") || a.starts_with(&format!("--{long}=")));
        (!typed && value(ContextKind::InvalidValue).is_none_or(|v| v == set)).then_some((name, set))
    });
    match from_environment {
        Some((name, set)) => {
            let _ = e.print();
            eprintln!("(the value came from the environment: {name}={set:?})");
            std::process::exit(e.exit_code())
        }
        None => e.exit(),
    }
}

/// A switch's value from the environment variable `name`: what people write for yes and no,
/// empty as no (`RSMIRROR_DRY_RUN= rsmirror ...` unsets it); anything else is refused, not
/// taken as no.
fn switch(name: String) -> impl Fn(&str) -> Result<bool, String> + Clone + Send + Sync {
    move |v| match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" | "t" => Ok(true),
        "" | "0" | "false" | "no" | "off" | "n" | "f" => Ok(false),
        _ => Err(format!(
            "{name}={v:?}: a switch is true/false, yes/no, on/off or 1/0"
        )),
    }
}

/// The environment variable of the option `--LONG`: `RSMIRROR_` and its name in capitals,
/// hyphens as underscores.
fn environment_name(long: &str) -> String {
    format!("RSMIRROR_{}", long.to_ascii_uppercase().replace('-', "_"))
}

/// The options every command that takes them reads the same way (`--mirror DIR`, `-q`, `-v`),
/// given before the command as restic's `-r` and git's `-C` are (`rsmirror --mirror M ls`,
/// `rsmirror -v baseline URL`): moved to just after it, where clap reads them. A command that
/// does not take one says so as it would after it.
pub fn options_after_the_command(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let (moved, mut args) = leading_options(args);
    after_the_command(&mut args, moved);
    args
}

/// The options of rsmirror itself before the command (`--mirror M`, `-q`, `-v`...), taken
/// out of `args`: (those options, the rest).
fn leading_options(
    mut args: Vec<std::ffi::OsString>,
) -> (Vec<std::ffi::OsString>, Vec<std::ffi::OsString>) {
    let mut moved = Vec::new();
    let i = 1;
    while let Some(arg) = args.get(i).and_then(|a| a.to_str()) {
        let takes_value = arg == "--mirror";
        let flag = arg.starts_with("--mirror=")
            || ["-q", "--quiet", "--verbose"].contains(&arg)
            || (arg.len() > 1 && arg.starts_with('-') && arg[1..].bytes().all(|b| b == b'v'));
        if !(takes_value || flag) {
            break;
        }
        let n = if takes_value { 2 } else { 1 }.min(args.len() - i);
        moved.extend(args.drain(i..i + n));
    }
    (moved, args)
}

/// Put `moved` (options taken from before the command) just past the command's name;
/// `source` and `catalog` read their own command first, so the options go last for those.
fn after_the_command(args: &mut Vec<std::ffi::OsString>, moved: Vec<std::ffi::OsString>) {
    let at = match args.get(1).and_then(|a| a.to_str()) {
        None | Some("source" | "catalog") => args.len(),
        Some(_) => 2,
    };
    args.splice(at..at, moved);
}

/// The long version: this rsmirror, then one line each for libcurl, SQLite and the platform.
pub fn build_details() -> &'static str {
    static DETAILS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DETAILS.get_or_init(|| {
        let curl = curl::Version::get();
        let tls = curl.ssl_version().unwrap_or("no TLS library");
        let http2 = if curl.feature_http2() { "yes" } else { "no" };
        format!(
            "{}\nlibcurl {} ({tls}; HTTP/2: {http2})\nSQLite {}\nplatform {}-{}",
            env!("CARGO_PKG_VERSION"),
            curl.version(),
            crate::store::sqlite_version(),
            std::env::consts::ARCH,
            std::env::consts::OS,
        )
    })
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// First full copy: discover the source, read its Resource List, fetch and verify every
    /// resource, record the sync point. Re-running fetches only what changed, and what the
    /// mirror lost: an object missing from objects/ (every re-run), one cut short (a slice of the
    /// object folders per re-run, all of them within about versions / 100,000 re-runs).
    #[command(after_help = crate::exit::Exit::help_table())]
    Baseline(BaselineArgs),
    /// Follow the source's Change Lists from the sync point: apply created / updated /
    /// deleted in event-time order and advance the sync point. A source that publishes no
    /// changes (a plain Sitemap, a Resource List alone) is followed by reading its list again.
    #[command(after_help = crate::exit::Exit::help_table())]
    Incremental(IncrementalArgs),
    /// Prove the mirror matches the source (lastmod, length, digests) and its own bytes
    /// (re-hash every stored object); write a report; exit 1 on any difference.
    #[command(after_help = crate::exit::Exit::help_table())]
    Audit(AuditArgs),
    /// Run discovery and the readers only: list the documents a source publishes and every
    /// problem met. Fetches no resources, writes nothing.
    #[command(after_help = crate::exit::Exit::help_table())]
    Inspect(InspectArgs),
    /// Write an Atom feed (or a JSON Feed) of the changes the mirror applied to one
    /// collection, or to every collection of a source: one entry per run that changed
    /// something. Reads the catalog only; the same mirror gives byte-identical output.
    #[command(after_help = crate::exit::Exit::help_table())]
    Feed(FeedArgs),
    /// List the resources present now or at WHEN, sorted by URI (no network; no lock).
    #[command(after_help = reading_help())]
    Ls(LsArgs),
    /// Write the bytes of a resource's state exactly as fetched, re-hashed as they stream:
    /// bytes that do not match the catalog fail the command (exit 1).
    #[command(after_help = reading_help())]
    Cat(CatArgs),
    /// A resource's versions (newest first), or the mirror's runs (newest first), or one run's
    /// problems and findings.
    #[command(after_help = reading_help())]
    Log(LogArgs),
    /// What changed between two points of the mirror's history: `+` created, `-` deleted, `*`
    /// updated, one line per resource.
    #[command(after_help = reading_help())]
    Diff(DiffArgs),
    /// Per source and collection: sync point and age, the last run of each command, what the
    /// mirror holds, the last audit and how long since every object was re-hashed, and hints.
    /// A check for monitoring: exit 1 when a hint needs a person (the last run of a command
    /// did not succeed, the last audit found differences, a sync point not set for 7 days,
    /// objects not all re-hashed for 90 days); `--json` gives each hint a stable `code`
    /// (run-partial, run-failed, sync-point-stale, audit-differences, fixity-never,
    /// fixity-stale) and says whether it `needs_person`.
    #[command(after_help = status_help())]
    Status(StatusArgs),
    /// Write the mirror (now or at WHEN) for a preservation system or a web server: tree
    /// (plain files, HOST/PATH), bagit (a BagIt 1.0 bag), warc (WARC 1.1 resource records),
    /// ocfl (an OCFL 1.1 storage root, every version), or resourcesync (the tree and the
    /// ResourceSync documents that make DEST a source, served at --base-url).
    /// Reads the catalog and objects only and checks every object's bytes as it writes them
    /// (links of objects the last clean audit vouches for: by length and time; see --verify).
    #[command(after_help = reading_help())]
    Export(ExportArgs),
    /// Get back the bytes of every object found corrupt, missing or unreadable (from
    /// --from-mirror DIR, else the source), proven by the SHA-256 the catalog records; the
    /// damaged files and stray files go to quarantine/, never deleted.
    #[command(after_help = crate::exit::Exit::help_table())]
    Repair(RepairArgs),
    /// The sources the mirror follows (`source list`), and stopping to follow one (`source
    /// remove URL`: its versions stay, readable and exported as before; `incremental` no longer
    /// runs it, `status` no longer hints about it; `baseline URL` follows it again).
    #[command(after_help = crate::exit::Exit::help_table())]
    Source(SourceCommandArgs),
    /// The catalog's own health and the way back from damage: `catalog check` (SQLite's
    /// header, the seal the last run left, `PRAGMA integrity_check`, every copy proven by its
    /// SHA-256; exit 5 when damaged), `catalog restore [COPY]` (the newest good copy from
    /// catalog-copies/ in place of a damaged catalog, kept aside, then a baseline of each
    /// source finds again what happened after the copy) and `catalog rebuild [SOURCE...]` (when
    /// no copy is good: a new catalog from the sources' lists and the objects present).
    #[command(after_help = crate::exit::Exit::help_table())]
    Catalog(CatalogCommandArgs),
    /// Make a working mirror folder on this machine for a mirror whose objects are in a
    /// bucket (baseline --objects), from the bucket alone: the newest catalog copy in
    /// PREFIX/catalog/ that proves good (its SHA-256) becomes the folder's catalog. Reading
    /// commands, audit and export work there at once; baseline and incremental take the
    /// bucket's lease (one writer across machines).
    #[command(after_help = crate::exit::Exit::help_table())]
    Attach(AttachArgs),
    /// Serve the mirror over HTTP, read-only: Memento (RFC 7089) for every URI it holds
    /// (/web/YYYYMMDDhhmmss/URL, /timegate/URL, /timemap/link/URL, /timemap/json/URL,
    /// /latest/URL), a status page (/), /status.json (what status --json prints), /healthz
    /// (200 when status would exit 0, else 503), /metrics (Prometheus), and the feeds of
    /// every source and collection under /feeds/ (Atom, JSON Feed, archives, OPML). Never takes the
    /// writer's lock; while a run is under way it serves the mirror as the last run that ended
    /// left it. One log line per request on stderr; SIGTERM finishes the requests under way.
    #[command(after_help = serve_help())]
    Serve(ServeArgs),
    /// Changes pushed to the mirror: subscribe (WebSub, ResourceSync Change Notification) to
    /// every followed source that advertises a hub, and apply each verified notification
    /// through the same engine as incremental (a catch-up from the Change Lists, batched under
    /// load). Catches up on start, after a lapsed lease, a denied subscription, and every
    /// --catch-up-every. Deliveries without a valid X-Hub-Signature are logged, never applied.
    /// SIGTERM finishes the catch-up in hand. --stop asks the hubs to end the subscriptions.
    #[command(after_help = crate::exit::Exit::help_table())]
    Follow(FollowArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the man page (roff) for rsmirror, for one of its commands, or for a topic of the
    /// manual (`rsmirror-TOPIC(7)`, the text `rsmirror help TOPIC` prints).
    Man(ManArgs),
}

/// The footer of `status`, which takes no WHEN: what it reads, then the exit codes.
fn status_help() -> String {
    format!(
        "status reads the catalog only: no network, nothing written, no lock taken (it runs \
         beside a baseline or incremental, and on read-only media). DURATION: 7d, 36h, 90m.\n\n{}",
        crate::exit::Exit::help_table()
    )
}

fn serve_help() -> String {
    format!(
        "serve binds to loopback unless told (--listen 0.0.0.0:8080 is warned about): put a \
         reverse proxy with TLS and access control in front of anything else. A memento is a \
         state with bytes, dated by the start of the run that brought it (whole seconds: the \
         states of one second are one memento, the last). The bytes go out exactly as fetched \
         and are re-hashed as they go: a damaged object is an error, never served. It exits 0 \
         on SIGTERM, 130 on SIGINT, 2 when it cannot listen, 5 when the mirror cannot be read.\n\n{}",
        crate::exit::Exit::help_table()
    )
}

/// The footer of the reading commands: the one clock, then the exit codes.
pub(crate) fn reading_help() -> String {
    format!(
        "WHEN is a point in the mirror's history: run:N (the mirror as run N left it; run:0 is \
         before the first run, run:-1 the last run), an RFC 3339 time (2026-03-01T12:00:00Z), a \
         local time (2026-03-01T12:00 or 2026-03-01 12:00: this machine's zone, said on \
         stderr), a date (2026-03-01: its midnight, UTC) or a time ago as git reads it (now, yesterday, 2 days \
         ago, 2.weeks.ago, last month, 3 years ago: months and years on the UTC calendar) or \
         Unix time (@1700000000). One clock everywhere: a state's time is the start of the run that \
         brought it into the mirror (its arrival, not the source's lastmod); a time T means the \
         mirror as the runs started by T left it. Times shown are rounded up to the millisecond, \
         so --at a time shown for a state includes that state.\n\n\
         The reading commands read the catalog and objects only: no network, nothing written, \
         no lock taken (they run beside a baseline or incremental, and on read-only media).\n\n{}",
        crate::exit::Exit::help_table()
    )
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Only URIs that begin with this.
    #[arg(value_name = "URL_PREFIX")]
    pub prefix: Option<String>,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// The mirror at WHEN instead of now (run:N, run:-1, an RFC 3339 time, a date, 2 days ago).
    #[arg(long, value_name = "WHEN")]
    pub at: Option<String>,
    /// Long: length, lastmod, SHA-256 (12 hex), the time the state arrived, URI; then
    /// "(gzip-encoded)" for bytes kept in a content coding, and "[Frogs, Crocodiles]" for the
    /// categories the source gave it.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// Also the resources deleted (tombstoned) by WHEN.
    #[arg(long)]
    pub deleted: bool,
    /// Only the resources of this collection (as `rsmirror status` names it; an SCP source's
    /// URL means all its sections).
    #[arg(long, value_name = "URL")]
    pub collection: Option<String>,
    /// JSON Lines: one object per resource (uri, collection, deleted, arrived, version, run,
    /// change, lastmod, length, sha256, md5, media_type).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub say: ReadingOutput,
}

#[derive(Debug, Args)]
pub struct CatArgs {
    /// The resource's URI, exactly as `rsmirror ls` shows it.
    pub url: String,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// The state at WHEN instead of the current one.
    #[arg(long, value_name = "WHEN", conflicts_with = "version")]
    pub at: Option<String>,
    /// This version (an id from `rsmirror log URL`).
    #[arg(long, value_name = "ID")]
    pub version: Option<i64>,
    /// Write to FILE (under a temporary name, renamed into place only once verified) instead
    /// of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub say: ReadingOutput,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// A resource: its versions. Without: the runs.
    pub url: Option<String>,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// One run: what it was, its problems and (an audit) its findings.
    #[arg(long, value_name = "ID", conflicts_with = "url")]
    pub run: Option<i64>,
    /// JSON: `log URL` and `log --run ID` one document; the runs JSON Lines, one per run.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub say: ReadingOutput,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// From this point (run:N, run:-1, an RFC 3339 time, a date, 2 days ago).
    #[arg(value_name = "WHEN1")]
    pub from: String,
    /// To this point; default: now.
    #[arg(value_name = "WHEN2")]
    pub to: Option<String>,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// JSON Lines: one object per resource (mark, change, uri, before, after).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub say: ReadingOutput,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// One JSON document.
    #[arg(long)]
    pub json: bool,
    /// A sync point not confirmed for longer than DURATION needs a person (hint
    /// `sync-point-stale`, exit 1): for a source followed weekly, say 9d.
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_age, env = "RSMIRROR_STALE_SYNC_POINT")]
    pub stale_sync_point: std::time::Duration,
    /// Objects not all re-hashed for longer than DURATION need a person (hint `fixity-stale`,
    /// exit 1).
    #[arg(long, value_name = "DURATION", default_value = "90d", value_parser = parse_age, env = "RSMIRROR_STALE_FIXITY")]
    pub stale_fixity: std::time::Duration,
    #[command(flatten)]
    pub say: ReadingOutput,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// tree, bagit, warc, ocfl, resourcesync, premis or archivematica.
    #[arg(value_enum)]
    pub format: crate::export::Format,
    /// The folder to write: new, empty, or an earlier export of the same format (brought to
    /// the new state, touching only what changed). Anything else is refused.
    pub dest: PathBuf,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// The mirror at WHEN instead of now (run:N, run:-1, an RFC 3339 time, a date, 2 days ago).
    #[arg(long, value_name = "WHEN")]
    pub at: Option<String>,
    /// Only the resources of this collection (as `rsmirror status` names it).
    #[arg(long, value_name = "URL")]
    pub collection: Option<String>,
    /// Write the URLs under URL_PREFIX straight into DEST (the rest of their path), as
    /// resync-sync lays out a `uri=path` mapping; other URLs go under their host.
    #[arg(long, value_name = "URL_PREFIX")]
    pub strip: Option<String>,
    /// hard: hard links to the objects (no bytes copied; the files are the mirror's objects,
    /// read-only: never edit them); copy; auto: a reflink where the file system makes one,
    /// else a hard link on the same file system, else a copy.
    #[arg(long, value_enum, default_value_t = crate::export::Link::Copy)]
    pub link: crate::export::Link,
    /// With --link hard or auto: read every object through before linking it. Without it, an
    /// object that the last clean full audit (`rsmirror audit`, level sha256 or fixity, no
    /// --sample) re-hashed and that has its recorded length and has not been modified since is
    /// linked on that audit's word; copies are always checked as they are written.
    #[arg(long)]
    pub verify: bool,
    /// warc: every version ever recorded up to WHEN, in the order they arrived (a deletion as
    /// a metadata record), not only the state at WHEN.
    #[arg(long)]
    pub all_versions: bool,
    /// warc: start a new file once one holds this many (compressed) bytes.
    #[arg(long, default_value_t = crate::export::warc::DEFAULT_SIZE, value_name = "BYTES")]
    pub warc_size: u64,
    /// resourcesync: the URL DEST will be served at (files are published at URL + their path).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// resourcesync: the Change List holds what the runs after WHEN brought (default: after
    /// the mirror's first run).
    #[arg(long, value_name = "WHEN")]
    pub changes_since: Option<String>,
    /// The summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub say: ReadingOutput,
}

#[derive(Debug, Args)]
pub struct RepairArgs {
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// Take the bytes from another rsmirror mirror (a second copy, a restored backup) first,
    /// by digest.
    #[arg(long, value_name = "DIR")]
    pub from_mirror: Option<PathBuf>,
    /// Repair what the last audit found (each object checked again first) instead of checking
    /// every object now.
    #[arg(long)]
    pub from_audit: bool,
    /// Do not fetch from the source (only --from-mirror).
    #[arg(long)]
    pub offline: bool,
    /// Print what is damaged and change nothing.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Threads reading and hashing the objects for the check (default: four a core).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub source_args: SourceArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, Args)]
pub struct SourceCommandArgs {
    #[command(subcommand)]
    pub action: SourceAction,
}

#[derive(Debug, Subcommand)]
pub enum SourceAction {
    /// Every source the mirror knows: followed or not, its kind, collections, sync points,
    /// resources and last runs (no lock; reads the catalog only).
    List {
        #[command(flatten)]
        mirror: MirrorArgs,
        /// One JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Follow every site a FILE names: an OPML file (each outline's xmlUrl, else its htmlUrl)
    /// or a plain list (one URL a line; `#` starts a comment). Each is baselined in turn, as
    /// `rsmirror baseline URL` would, with the source options given here (`--metadata-only`
    /// to follow them all by metadata alone); one that fails does not stop the others, and
    /// the exit code is the worst. A FILE with a bad line (named by its number) records
    /// nothing, unless --skip-bad.
    Import(Box<ImportArgs>),
    /// Stop following the source at URL (as `source list` names it). Nothing is deleted: its
    /// versions and objects stay, `ls`, `cat`, `export` and `audit --offline` see them.
    Remove {
        /// The source's URL, as `source list` shows it.
        url: String,
        #[command(flatten)]
        mirror: MirrorArgs,
        #[command(flatten)]
        lock: LockArgs,
    },
}

/// `rsmirror source import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The OPML file or list of URLs (`-`: standard input).
    pub file: std::path::PathBuf,
    /// Leave out the bad lines (each named on stderr) and import the others.
    #[arg(long)]
    pub skip_bad: bool,
    /// Requests in flight per site (default 8). Kept with each source.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    #[command(flatten)]
    pub source_args: SourceArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// The address and port to listen on (port 0: any free one, said on stderr).
    #[arg(
        long,
        value_name = "ADDR:PORT",
        default_value = "127.0.0.1:8080",
        env = "RSMIRROR_LISTEN"
    )]
    pub listen: std::net::SocketAddr,
    /// The URL clients reach this server at, when a reverse proxy stands in front
    /// (https://archive.example.org/mirror); the URLs it gives out (Location, Link, TimeMaps)
    /// start with it. Default: http:// and the request's Host.
    #[arg(long, value_name = "URL", env = "RSMIRROR_BASE_URL", value_parser = parse_base_url)]
    pub base_url: Option<String>,
    /// Connections served at once; more wait in the kernel's queue until one ends.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_connections: u32,
    /// A client that has not sent a whole request head within DURATION (a new connection, or
    /// one kept alive between requests) is disconnected.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_wait)]
    pub header_timeout: std::time::Duration,
    /// A client that takes none of a response's bytes for DURATION (a reader that stopped
    /// reading) is disconnected, and what was serving it is freed.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_wait)]
    pub send_timeout: std::time::Duration,
    /// Answer only requests that carry `Authorization: Bearer TOKEN`, the token being the
    /// first line of FILE (others get 401); every URL, /healthz included.
    #[arg(long, value_name = "FILE", env = "RSMIRROR_AUTH_TOKEN_FILE")]
    pub auth_token_file: Option<std::path::PathBuf>,
    /// How long SIGTERM waits for the requests under way before it stops.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_wait)]
    pub drain: std::time::Duration,
    /// Mementos on one TimeMap page; a longer history is paged (rel="next", rel="prev").
    #[arg(long, value_name = "N", default_value_t = 5000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub timemap_page: u32,
    /// Entries in one ResourceSync list the mirror serves as a source (/.well-known/resourcesync);
    /// a longer one is an index of pages. At most 50,000, the Sitemap protocol's limit.
    #[arg(long, value_name = "N", default_value_t = 50_000, value_parser = clap::value_parser!(u32).range(1..=50_000))]
    pub list_size: u32,
    /// A WebSub hub the feeds under /feeds/ link (rel="hub" in Atom, "hubs" in JSON Feed).
    #[arg(long, value_name = "URL", env = "RSMIRROR_FEED_HUB", value_parser = parse_hub_url)]
    pub feed_hub: Option<String>,
    /// Entries in one archive document of the feeds under /feeds/ (RFC 5005).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub feed_archive_size: u32,
    /// The request log on stderr: text (one line each) or json (one object a line).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: crate::logfile::LogFormat,
    /// No request log; errors only.
    #[arg(short, long)]
    pub quiet: bool,
    /// As status --stale-sync-point, for /healthz and the status page.
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_age, env = "RSMIRROR_STALE_SYNC_POINT")]
    pub stale_sync_point: std::time::Duration,
    /// As status --stale-fixity, for /healthz and the status page.
    #[arg(long, value_name = "DURATION", default_value = "90d", value_parser = parse_age, env = "RSMIRROR_STALE_FIXITY")]
    pub stale_fixity: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct FollowArgs {
    /// The sources to follow (as `source list` names them); default: every one the mirror
    /// follows.
    pub sources: Vec<String>,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// The address and port the callbacks listen on (port 0: any free one, said on stderr).
    #[arg(
        long,
        value_name = "ADDR:PORT",
        default_value = "127.0.0.1:8081",
        env = "RSMIRROR_LISTEN"
    )]
    pub listen: std::net::SocketAddr,
    /// The URL hubs reach the listener at (https://mirror.example.org/push behind a reverse
    /// proxy); each subscription's callback is this and an unguessable path.
    #[arg(long, value_name = "URL", env = "RSMIRROR_CALLBACK_BASE", value_parser = parse_base_url, required_unless_present = "stop")]
    pub callback_base: Option<String>,
    /// The lease asked of each hub (the hub may grant another; renewal comes at half the
    /// granted one).
    #[arg(long, value_name = "DURATION", default_value = "1d", value_parser = parse_age)]
    pub lease: std::time::Duration,
    /// A notification body larger than this is refused (413).
    #[arg(long, value_name = "SIZE", default_value = "16M", value_parser = parse_bytes)]
    pub max_body: u64,
    /// A catch-up from the Change Lists of every source this often, pushes or not (a hub that
    /// gave up on this callback says nothing).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_age)]
    pub catch_up_every: std::time::Duration,
    /// Ask each hub to end the subscriptions the mirror records (of SOURCE..., or all), and
    /// end; a running follower answers the hubs' verification.
    #[arg(long)]
    pub stop: bool,
    #[command(flatten)]
    pub source_args: SourceArgs,
    /// No line per callback request and per catch-up; errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `--base-url`: an http or https URL without a query or fragment.
/// A WebSub hub's URL: http or https.
fn parse_hub_url(v: &str) -> Result<String, String> {
    match url::Url::parse(v) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(v.to_string()),
        _ => Err(format!(
            "{v:?} is not a hub's URL: write http(s)://HOST[:PORT]/PATH"
        )),
    }
}

fn parse_base_url(v: &str) -> Result<String, String> {
    match url::Url::parse(v) {
        Ok(u)
            if matches!(u.scheme(), "http" | "https")
                && u.query().is_none()
                && u.fragment().is_none() =>
        {
            Ok(v.trim_end_matches('/').to_string())
        }
        _ => Err(format!(
            "{v:?} is not the URL of this server: write http(s)://HOST[:PORT][/PATH]"
        )),
    }
}

#[derive(Debug, Args)]
pub struct CatalogCommandArgs {
    #[command(subcommand)]
    pub action: CatalogAction,
}

#[derive(Debug, Subcommand)]
pub enum CatalogAction {
    /// Check the catalog alone (what audit's catalog part does): SQLite's file header, the
    /// seal the last run left (the same file, no commits lost), `PRAGMA integrity_check` in
    /// full, and each copy in catalog-copies/ against its SHA-256. Exit 0 when sound, 5 when
    /// damaged. Takes the lock; writes nothing.
    Check {
        #[command(flatten)]
        mirror: MirrorArgs,
        #[command(flatten)]
        lock: LockArgs,
    },
    /// Put back the newest copy of the catalog that proves good (its SHA-256, then `PRAGMA
    /// integrity_check`), or COPY (a copy from catalog-copies/, or a catalog.sqlite from a
    /// backup of one's own); the damaged catalog is moved into damaged-catalog-TIME/, never
    /// deleted. Then a baseline of each source the copy follows finds again what happened
    /// after it: objects newer than the copy are kept and re-attached by digest.
    Restore {
        /// A copy (catalog-copies/*.sqlite.zst) or an SQLite catalog file.
        copy: Option<PathBuf>,
        #[command(flatten)]
        mirror: MirrorArgs,
        /// Put the copy back only: no baseline (say which to run).
        #[arg(long)]
        offline: bool,
        /// Replace a catalog that `catalog check` finds sound too (refused otherwise, exit 7:
        /// every run since the copy would have to be found again).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        lock: LockArgs,
    },
    /// The last resort when no copy is good: a new catalog from the current lists of the
    /// sources (named, else those the damaged catalog still names, with the --map rules it
    /// remembers) and the objects already present: a resource whose listed SHA-256 names an
    /// object in objects/ is taken from it, re-hashed, not fetched. The history before the
    /// rebuild is lost (and said); the damaged catalog is moved into damaged-catalog-TIME/.
    Rebuild {
        /// The sources to read (default: those the damaged catalog names).
        sources: Vec<String>,
        #[command(flatten)]
        mirror: MirrorArgs,
        /// Rebuild a catalog that `catalog check` finds sound too (refused otherwise, exit 7:
        /// its history would be lost).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        lock: LockArgs,
    },
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A command (ls, cat, baseline...) or a topic of the manual (sources, cron...: rsmirror
    /// help topics); default: rsmirror itself.
    #[arg(value_name = "COMMAND|TOPIC", conflicts_with = "install")]
    pub command: Option<String>,
    /// Write every page instead, under DIR as man finds them: DIR/man1/rsmirror.1,
    /// DIR/man1/rsmirror-COMMAND.1 and DIR/man7/rsmirror-TOPIC.7 (e.g. /usr/local/share/man;
    /// then `man rsmirror-ls`). Prints each path written.
    #[arg(long, value_name = "DIR")]
    pub install: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct MirrorArgs {
    /// The mirror folder (catalog.sqlite, objects/, staging/).
    #[arg(
        long,
        env = "RSMIRROR_DIR",
        default_value = "./mirror",
        value_name = "DIR",
        value_parser = parse_mirror_dir
    )]
    pub mirror: PathBuf,
}

/// `--mirror`: a folder on this machine, never a URL (`s3://b/p` would make `./s3:/b/p`).
fn parse_mirror_dir(v: &str) -> Result<PathBuf, String> {
    if v.contains("://") {
        return Err(format!(
            "{v:?} is a URL: --mirror is the mirror's folder on this machine (its objects go to \
             a bucket with baseline --objects s3://BUCKET/PREFIX; another machine's mirror in a \
             bucket is made a folder here with rsmirror attach s3://BUCKET/PREFIX --mirror DIR)"
        ));
    }
    Ok(PathBuf::from(v))
}

/// `-q` and `-v` of the reading commands (ls, cat, log, diff, status, feed, export): their
/// output on stdout is the same either way; these say how much is said beside it on stderr.
#[derive(Debug, Args)]
pub struct ReadingOutput {
    /// Nothing on stderr but errors: no notes (how a local WHEN was read, a run still under
    /// way) and, for export, no summary.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more on stderr: which point of the mirror's history WHEN resolved to, and how much
    /// was written (resources, lines, bytes).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl ReadingOutput {
    /// Make [`note!`] and [`detail!`] say what these ask for.
    pub(crate) fn apply(&self) {
        crate::report::set_level(self.quiet, self.verbose);
    }
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// No progress bar and no summary; errors still go to stderr.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more: the summary even on success under cron, warnings, unchanged resources.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// A machine-readable summary on stdout.
    #[arg(long)]
    pub json: bool,
    /// stderr as JSON Lines for a program to follow the run (restic's `message_type` lines):
    /// a `status` object (phase, done, total, bytes, percent_done, seconds_elapsed) at each
    /// phase's start and end and at most once a second between, a `message` object (level,
    /// message) for every line a person would read there, and the run's `summary` last.
    /// stdout is unchanged (`--json` still puts the summary there).
    #[arg(long, conflicts_with = "quiet")]
    pub json_progress: bool,
    /// Draw the progress bar on stderr even when it is not a terminal (ssh without a tty,
    /// `script`, a terminal multiplexer's log); the last of --progress and --no-progress wins.
    #[arg(long, overrides_with = "no_progress", conflicts_with_all = ["quiet", "json_progress"])]
    pub progress: bool,
    /// No progress bar, even on a terminal (the summary and messages stay).
    #[arg(long, overrides_with = "progress")]
    pub no_progress: bool,
    /// Also append what the run says on stderr to FILE, a line each with its time, and the
    /// run's command line and summary even under -q or a quiet success (rclone's --log-file).
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// The lines of --log-file: text (TIME LEVEL MESSAGE) or json (one object a line: time,
    /// level, msg; rclone's --use-json-log).
    #[arg(long, value_enum, default_value_t = crate::logfile::LogFormat::Text, value_name = "FORMAT")]
    pub log_format: crate::logfile::LogFormat,
}

/// What every command that writes the mirror takes.
#[derive(Debug, Args)]
pub struct LockArgs {
    /// When another run holds the mirror's lock, wait for it up to DURATION (30s, 5m, 1h)
    /// instead of exiting 6 at once: for cron lines that may overlap (restic's option).
    #[arg(long, value_name = "DURATION", value_parser = parse_wait)]
    pub retry_lock: Option<std::time::Duration>,
    /// Copies of the catalog kept in catalog-copies/ (a zstd-compressed snapshot made after
    /// every command that wrote, with its SHA-256; `rsmirror catalog restore` takes the newest
    /// good one); 0 makes none.
    #[arg(long, value_name = "N", default_value_t = crate::store::copies::DEFAULT_KEPT)]
    pub catalog_copies: usize,
}

/// A duration as people write it (`30s`, `5m`, `1h30m`, ISO 8601 `PT5M`).
/// An age: a number of days (`7d`), or a duration as [`parse_wait`] reads it (`36h`).
fn parse_age(v: &str) -> Result<std::time::Duration, String> {
    if let Some(days) = v.trim().strip_suffix('d') {
        let days: u64 = days
            .trim()
            .parse()
            .map_err(|_| format!("{v:?} is not an age: write it as 7d, 36h or 90m"))?;
        return Ok(std::time::Duration::from_secs(days.saturating_mul(86_400)));
    }
    parse_wait(v).map_err(|_| format!("{v:?} is not an age: write it as 7d, 36h or 90m"))
}

/// A duration, as every option that takes one reads it: a number of seconds (`30`, `0.5`) or
/// a number with its unit (`30s`, `5m`, `1h`, `1h30m`).
fn parse_wait(v: &str) -> Result<std::time::Duration, String> {
    let not = || format!("{v:?} is not a duration: write it as 30 (seconds), 30s, 5m or 1h");
    if let Ok(secs) = v.trim().parse::<f64>() {
        return std::time::Duration::try_from_secs_f64(secs).map_err(|_| match secs < 0.0 {
            true => format!("{v:?}: a duration is not negative"),
            false => not(),
        });
    }
    let d: jiff::SignedDuration = v.parse().map_err(|_| not())?;
    std::time::Duration::try_from(d).map_err(|_| format!("{v:?}: a duration is not negative"))
}

/// A duration in seconds for the options that take SECS: [`parse_wait`]'s forms.
fn parse_secs(v: &str) -> Result<f64, String> {
    parse_wait(v).map(|d| d.as_secs_f64())
}

#[derive(Debug, Args)]
pub struct SourceArgs {
    /// OAI-PMH sources: harvest records in this metadata format (`metadataPrefix`; default
    /// oai_dc). A different prefix is another collection of the same repository.
    #[arg(long = "oai-prefix", value_name = "PREFIX")]
    pub oai_prefix: Option<String>,
    /// OAI-PMH sources: harvest only this set (`set`; its setSpec).
    #[arg(long = "oai-set", value_name = "SETSPEC")]
    pub oai_set: Option<String>,
    /// Also accept resources on HOST (and its subdomains); repeatable. Kept with the source.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// Read URLs under URL_PREFIX from the local folder DIR instead of the network; repeatable.
    /// Remembered with the source: later runs on the mirror use the same rules unless given
    /// --map again (which replaces them) or --no-map.
    #[arg(long, value_name = "URL_PREFIX=DIR")]
    pub map: Vec<String>,
    /// Mirror only the resources whose URL matches GLOB; repeatable (any one admits). GLOB
    /// with `://` is matched against the whole URL, one starting with `/` against the path
    /// (any host), any other against the end of the path (`*.pdf`, `thumbs/*.jpg`); `*` stays
    /// within a path segment, `**` crosses them. Remembered with the source, as --map is;
    /// what it leaves out is neither fetched, deleted nor audited.
    #[arg(long = "include", value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out the resources whose URL matches GLOB (as for --include); repeatable. Wins
    /// over --include.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Mirror only the resources the source gives one of these categories (the 2012 draft's
    /// xhtml:link rel="DCTERMS.subject" / xhtml:meta name="DC.subject" on an entry): VALUE is
    /// the category's URI or term, or its title (case aside); repeatable (any one admits).
    /// The parts of a Sitemap Index whose aggregated categories name none of them are not
    /// fetched. Remembered with the source, as --include is.
    #[arg(long = "category", value_name = "VALUE")]
    pub category: Vec<String>,
    /// Use no --include/--exclude/--category rules remembered with the source (baseline and incremental
    /// also forget them).
    #[arg(long, conflicts_with_all = ["include", "exclude", "category"])]
    pub no_filter: bool,
    /// Use no --map rules remembered with the mirror's sources (baseline and incremental also
    /// forget them).
    #[arg(long, conflicts_with = "map")]
    pub no_map: bool,
    /// Read datetimes without a zone (not W3C, but published by some sources) as UTC.
    #[arg(long)]
    pub assume_utc: bool,
    /// Connect and read timeout, in seconds (default 30). Kept with the source.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub timeout: Option<f64>,
    /// Attempts per request on connection errors, 429, 503 and other 5xx. Over HTTP/2, a
    /// request lost with its connection before any of its response came goes again without
    /// spending one (up to 3 times).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub tries: u32,
    /// Longest Retry-After honoured, in seconds.
    #[arg(long, default_value_t = 120.0, value_name = "SECS", value_parser = parse_secs)]
    pub max_retry_after: f64,
    /// Wait at least this long between requests to one host, in seconds (politeness). Kept
    /// with the source.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub delay: Option<f64>,
    /// The User-Agent header.
    #[arg(long, value_name = "STRING")]
    pub user_agent: Option<String>,
    /// A request header for a restricted source, `NAME: VALUE`; repeatable. Sent only to the
    /// source's own host (no redirect elsewhere gets it), never recorded. Keep secrets out of
    /// `ps` and the run record: `NAME: @FILE` reads the value from a file, `NAME: $VAR` from
    /// the environment. Without it, a `~/.netrc` (or `$NETRC`) entry for the host is used.
    /// Kept with the source in its `@FILE` and `$VAR` forms only (read again by each run).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Largest document (list, index, Capability List...) read, in bytes once decompressed;
    /// the Sitemap protocol's 50 MB by default. A gzip'd document may also inflate at most
    /// 200:1.
    #[arg(long, default_value_t = crate::rs::sitemap::MAX_DOCUMENT_BYTES, value_name = "BYTES")]
    pub max_document_size: u64,
    /// Largest resource fetched when the source declares no length (a declared length bounds
    /// a resource exactly); a body that grows past it is cut off and that resource fails.
    /// Dump packages and SCP collection files are bounded the same way.
    /// BYTES may end in K, M, G or T (powers of 1024); 0 for no bound.
    #[arg(long, default_value = "64G", value_name = "BYTES", value_parser = parse_bytes)]
    pub max_size: u64,
    /// Cut off (and retry) a transfer that moves fewer than this many bytes a second over a
    /// --timeout window: a server that trickles cannot hold a run. K, M, G suffixes as above.
    #[arg(long, default_value = "1K", value_name = "BYTES", value_parser = parse_bytes)]
    pub min_rate: u64,
    /// Longest one resource transfer (a dump package, an SCP collection file) may take, in
    /// seconds, however fast it goes (no bound by default: --min-rate and --max-size bound it).
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub max_time: Option<f64>,
    /// Stop fetching resources once the run has taken DURATION (30m, 2h): what landed is
    /// committed, the sync point is not moved past what is left, exit 3; the next run goes on.
    #[arg(long, value_name = "DURATION", value_parser = parse_wait)]
    pub max_duration: Option<std::time::Duration>,
    /// Free space to leave on the mirror's file system: a run refuses to start, or stops
    /// cleanly (exit 5, what landed kept), when less is free. Default: 1% of the file
    /// system, at most 1G. K, M, G suffixes as above; 0 to fill the disk.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub min_free: Option<u64>,
    /// Receive at most RATE bytes a second in all, documents and resources (rclone's
    /// --bwlimit), so that a run does not saturate a link: one budget every transfer draws
    /// from, a burst of a tenth of a second at most. --min-rate is held under half of RATE /
    /// --jobs. K, M, G suffixes as above (10M: 10 MiB a second); 0 for no limit.
    #[arg(long, value_name = "RATE", value_parser = parse_bytes)]
    pub bwlimit: Option<u64>,
    /// Requests in flight to a source that speaks HTTP/2 (over TLS, as ALPN offers it): once a
    /// response has come over HTTP/2 they share the connections open as streams (RFC 9113):
    /// one, the documents', when they came over HTTP/2 from a source not within 5 ms (a nearer
    /// one gets one a core); at most --jobs, which counts HTTP/1.1 connections, otherwise. The
    /// server's own limit
    /// (SETTINGS_MAX_CONCURRENT_STREAMS) holds beyond it: requests wait for a stream, never
    /// opening more connections. 100, as curl and most servers default to; --delay bounds the
    /// request rate whatever the streams.
    #[arg(long, value_name = "N", default_value_t = crate::net::DEFAULT_STREAMS)]
    pub streams: usize,
    /// Speak HTTP/2 from the first byte to http:// URLs (prior knowledge, RFC 9113 §3.3), for a
    /// cleartext source that speaks only HTTP/2; its resources then come as --streams of few
    /// connections. https:// sources get HTTP/2 when ALPN offers it, without this.
    #[arg(long)]
    pub http2_prior_knowledge: bool,
    /// Follow the source by metadata alone: record each change and listed state (URI,
    /// datetime, change, lastmod, length, digests) as a version without fetching its bytes.
    /// Kept with the source; --no-metadata-only turns it off, and the next run fetches the
    /// bytes of every present resource that has none.
    #[arg(long, overrides_with = "no_metadata_only")]
    pub metadata_only: bool,
    /// Mirror the source's bytes again (forgets a kept --metadata-only).
    #[arg(long, overrides_with = "metadata_only")]
    pub no_metadata_only: bool,
    /// Trust the certificate authorities in this PEM file instead of the usual ones, for a
    /// source whose certificate a private CA signed (documents and resources alike). Proxies:
    /// curl's http_proxy, https_proxy, all_proxy and no_proxy variables, for both.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<std::path::PathBuf>,
}

/// A byte count: digits, optionally followed by K, M, G or T (powers of 1024, a trailing `B`
/// or `iB` allowed).
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let upper = t.to_ascii_uppercase();
    let body = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (digits, shift) = match body.chars().last() {
        Some('K') => (&body[..body.len() - 1], 10),
        Some('M') => (&body[..body.len() - 1], 20),
        Some('G') => (&body[..body.len() - 1], 30),
        Some('T') => (&body[..body.len() - 1], 40),
        _ => (body, 0),
    };
    let n: u64 = digits.trim().parse().map_err(|_| {
        format!("{s:?} is not a byte count (digits, optionally followed by K, M, G or T)")
    })?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Where the mirror's objects are, as given to baseline --objects.
    #[arg(value_name = "s3://BUCKET/PREFIX")]
    pub objects: String,
    /// The new mirror folder (made; it must not hold a catalog or other files).
    #[arg(long, env = "RSMIRROR_DIR", value_name = "DIR", value_parser = parse_mirror_dir)]
    pub mirror: PathBuf,
}

#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// Site root, Source Description, Capability List, Resource List (or index), plain
    /// Sitemap, .xml.gz of any of these, or a local file path.
    pub source: String,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// Of several Capability Lists in the Source Description, mirror only this one.
    #[arg(long, value_name = "URL")]
    pub capability_list: Option<String>,
    /// Where the bytes come from: the Resource List (one request per resource), the Resource
    /// Dump (ZIP packages), or auto: the dump when the source offers one.
    #[arg(long, value_enum, default_value_t = Via::Auto)]
    pub via: Via,
    /// SCP sources: mirror only this section (`all` when the site publishes one).
    #[arg(long, value_name = "NAME")]
    pub section: Option<String>,
    /// Tombstone resources that are gone from the source (only after a complete list).
    #[arg(long)]
    pub delete: bool,
    /// With --delete: stop before the first delete when more than N would be deleted (the
    /// default guard: a tenth of the collection, at least 10 and at most 1,000; an empty list
    /// or one part of an index deletes nothing).
    #[arg(long, value_name = "N")]
    pub max_delete: Option<u64>,
    /// With --delete: no guard at all (an empty list, one part of an index, any number).
    #[arg(long)]
    pub force_delete: bool,
    /// Make the mirror in the --mirror folder even though it holds other files.
    #[arg(long)]
    pub init_here: bool,
    /// A new mirror keeps its objects in an S3-compatible bucket, under
    /// PREFIX/objects/sha256/ab/<sha256>, instead of its folder (which keeps the catalog).
    /// Remembered: later commands need no flag. Credentials and endpoint as S3 tools read
    /// them: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION,
    /// AWS_ENDPOINT_URL(_S3), AWS_PROFILE with ~/.aws/credentials and ~/.aws/config.
    #[arg(long, value_name = "s3://BUCKET/PREFIX")]
    pub objects: Option<String>,
    /// Print the plan and write nothing.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Transfers in flight at once over HTTP/1.1 (default 8), each on a connection of its own,
    /// on a thread per core; a source that speaks HTTP/2 gets --streams instead. Kept with the
    /// source.
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub source_args: SourceArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// What to inspect (as for baseline).
    pub source: String,
    #[command(flatten)]
    pub source_args: SourceArgs,
    /// A machine-readable listing on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct IncrementalArgs {
    /// Change List, Change List Index, Capability List or site root; default: the source
    /// the mirror remembers.
    pub source: Option<String>,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// Start from this W3C datetime instead of the stored sync point (this run only).
    #[arg(long, value_name = "DATETIME")]
    pub from: Option<String>,
    /// Print the changes that would be applied and write nothing.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Transfers in flight at once over HTTP/1.1 (default 8), each on a connection of its own,
    /// on a thread per core; a source that speaks HTTP/2 gets --streams instead. Kept with the
    /// source.
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// When the change history has a gap (the Change Lists no longer reach back to the sync
    /// point) or a collection has no sync point (its first baseline did not finish): stop
    /// (exit 4, or 2 without a sync point; nothing applied), or rebaseline: re-read the
    /// current Resource List, fetch what differs and take its sync point; the incremental run
    /// is recorded as a success with a warning, the baseline as one that crossed a gap. (A
    /// source that publishes no Change Lists is always followed by its list.)
    #[arg(long, value_enum, default_value_t = OnGap::Stop, value_name = "WHAT")]
    pub on_gap: OnGap,
    #[command(flatten)]
    pub source_args: SourceArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Resource List (or anything baseline takes); default: the source the mirror remembers.
    pub source: Option<String>,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// presence, size, sha256 or fixity (default): how deep each object is checked.
    #[arg(long, value_enum, default_value_t = AuditLevel::Fixity)]
    pub level: AuditLevel,
    /// Check only slice N of M (1-based), deterministically; M nights cover everything once.
    #[arg(long, value_name = "N/M")]
    pub sample: Option<String>,
    /// Local fixity only: do not contact the source.
    #[arg(long)]
    pub offline: bool,
    /// Check every stored version, not just the current ones.
    #[arg(long)]
    pub all_versions: bool,
    /// Count `?` (nothing to compare) as a difference.
    #[arg(long)]
    pub require_fixity: bool,
    /// Fetch again the resources the source declares no digest for and compare their SHA-256
    /// with the mirror's (a conditional GET first: a 304 is only the server's claim). MODE, a
    /// comma list: `all` refetches every resource listed, `bytes` always sends full GETs.
    /// Combines with --sample (a slice each night) and --delay.
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub refetch: Option<String>,
    /// Also write the report to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<std::path::PathBuf>,
    /// Also write this audit's fixity checks to FILE as PREMIS 3.0 XML: every object it
    /// hashed, one `fixity check` event each (pass or fail), rsmirror and the run as agents
    /// (needs --level sha256 or fixity; `export premis` writes the whole history).
    #[arg(long, value_name = "FILE")]
    pub premis: Option<std::path::PathBuf>,
    /// Format of --report (needs --report: what audit says on stdout is always text); html is
    /// one page to read or print: the verdict, fixity coverage, failures with their history,
    /// charts. Default: html for a FILE ending .html, else text.
    #[arg(long, value_enum, requires = "report")]
    pub format: Option<ReportFormat>,
    /// Threads reading and hashing the objects (default: four a core: reads of small objects
    /// wait on the disk).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub source_args: SourceArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, Args)]
pub struct FeedArgs {
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// The collection: its Capability List URL or the site it describes, an ARC sitemap URL or
    /// its site; or a source URL, for its source-wide feed (every collection of it). Without
    /// it: the only collection, else the only source's source-wide feed; a mirror of several
    /// sources lists them.
    #[arg(long, value_name = "URL")]
    pub collection: Option<String>,
    /// Only the entries of the runs after WHEN, by the mirror's clock as every WHEN (run:N,
    /// run:-1, an RFC 3339 time, a local time, a date, 2 days ago): `--since run:41` gives
    /// what runs 42 and later applied.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Write the feed to FILE (replaced whole) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// atom or json.
    #[arg(long, value_enum, default_value_t = FeedFormat::Atom)]
    pub format: FeedFormat,
    /// Write every feed of the mirror (each source's and each collection's, Atom and JSON
    /// Feed), their archives, index.html and index.opml into DIR, rewriting only the files
    /// whose content changed: a tree to publish on a static site. Needs --base-url.
    #[arg(long, value_name = "DIR", requires = "base_url", conflicts_with_all = ["collection", "since", "output", "format"])]
    pub output_dir: Option<PathBuf>,
    /// The URL DIR is published at (https://me.example.org/feeds): the feeds' rel="self",
    /// archive and OPML links start with it.
    #[arg(long, value_name = "URL", requires = "output_dir", value_parser = parse_base_url)]
    pub base_url: Option<String>,
    /// A WebSub hub to link from every feed (rel="hub"); publishing to it is left to the site.
    #[arg(long, value_name = "URL", requires = "output_dir", value_parser = parse_hub_url)]
    pub hub: Option<String>,
    /// Entries in one archive document (RFC 5005): the subscription document holds the newest
    /// N, archive 1 the oldest N, and an archive, once complete, never changes.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub archive_size: u32,
    #[command(flatten)]
    pub say: ReadingOutput,
}

// What the user typed, filled into the library's options and checked there (`settings`).

impl OutputArgs {
    pub(crate) fn settings(&self) -> settings::Output {
        settings::Output {
            quiet: self.quiet,
            verbose: self.verbose,
            json: self.json,
        }
    }
}

impl SourceArgs {
    /// The checked settings of `source` (may be empty: the mirror's remembered source).
    pub(crate) fn settings(&self, source: &str) -> Result<settings::SourceSettings, UsageError> {
        let options = settings::SourceOptions {
            reader: crate::model::ReaderOptions {
                oai_prefix: self.oai_prefix.clone(),
                oai_set: self.oai_set.clone(),
            },
            allow_host: self.allow_host.clone(),
            map: self.map.clone(),
            no_map: self.no_map,
            include: self.include.clone(),
            exclude: self.exclude.clone(),
            category: self.category.clone(),
            no_filter: self.no_filter,
            assume_utc: self.assume_utc,
            timeout: self.timeout,
            jobs: None,
            tries: self.tries,
            max_retry_after: self.max_retry_after,
            delay: self.delay,
            user_agent: self.user_agent.clone(),
            headers: self.headers.clone(),
            max_document_size: self.max_document_size,
            max_size: self.max_size,
            min_rate: self.min_rate,
            max_time: self.max_time,
            max_duration: self.max_duration,
            bwlimit: self.bwlimit,
            streams: self.streams,
            http2_prior_knowledge: self.http2_prior_knowledge,
            metadata_only: match (self.metadata_only, self.no_metadata_only) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            min_free: self.min_free,
            ca_file: self.ca_file.clone(),
        };
        settings::SourceSettings::new(source, &options)
    }
}

impl BaselineArgs {
    pub(crate) fn settings(&self) -> Result<settings::Baseline, UsageError> {
        settings::Baseline {
            mirror: self.mirror.mirror.clone(),
            source: self
                .source_args
                .settings(&self.source)?
                .with_jobs(self.jobs),
            capability_list: self.capability_list.clone(),
            section: self.section.clone(),
            via: self.via,
            delete: self.delete,
            max_delete: self.max_delete,
            force_delete: self.force_delete,
            init_here: self.init_here,
            objects: self
                .objects
                .as_deref()
                .map(|o| o.parse().map_err(|e| UsageError(format!("--objects: {e}"))))
                .transpose()?,
            dry_run: self.dry_run,
            jobs: self.jobs.unwrap_or(settings::DEFAULT_JOBS),
            output: self.output.settings(),
            crossing_gap: None,
        }
        .checked()
    }
}

impl IncrementalArgs {
    pub(crate) fn settings(&self) -> Result<settings::Incremental, UsageError> {
        settings::Incremental {
            mirror: self.mirror.mirror.clone(),
            from: settings::time_option("from", self.from.as_deref())?,
            source: self
                .source_args
                .settings(self.source.as_deref().unwrap_or(""))?
                .with_jobs(self.jobs),
            source_given: self.source.is_some(),
            dry_run: self.dry_run,
            jobs: self.jobs.unwrap_or(settings::DEFAULT_JOBS),
            on_gap: self.on_gap,
            output: self.output.settings(),
        }
        .checked()
    }
}

impl AuditArgs {
    pub fn settings(&self) -> Result<settings::Audit, UsageError> {
        settings::Audit {
            mirror: self.mirror.mirror.clone(),
            sample: settings::sample(self.sample.as_deref())?,
            source: self
                .source_args
                .settings(self.source.as_deref().unwrap_or(""))?,
            source_given: self.source.is_some(),
            level: self.level,
            offline: self.offline,
            all_versions: self.all_versions,
            require_fixity: self.require_fixity,
            refetch: self
                .refetch
                .as_deref()
                .map(settings::Refetch::parse)
                .transpose()?,
            report: self
                .report
                .clone()
                .map(|p| (ReportFormat::for_file(self.format, &p), p))
                .map(|(f, p)| (p, f)),
            premis: self.premis.clone(),
            jobs: self.jobs.unwrap_or_else(settings::Audit::default_jobs),
            output: self.output.settings(),
            source_filters: Vec::new(),
        }
        .checked()
    }
}

impl FeedArgs {
    pub(crate) fn settings(&self) -> Result<settings::Feed, UsageError> {
        Ok(settings::Feed {
            mirror: self.mirror.mirror.clone(),
            collection: self.collection.clone(),
            since: self
                .since
                .as_deref()
                .map(crate::access::When::parse)
                .transpose()
                .map_err(|e| UsageError(format!("--since: {}", e.0)))?,
            output: self.output.clone(),
            format: self.format,
            output_dir: self.output_dir.clone(),
            base_url: self.base_url.clone(),
            hub: self.hub.clone(),
            per_archive: self.archive_size as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_topic_has_a_title_and_a_summary_and_no_command_name() {
        let commands = Cli::definitions();
        for t in crate::manual::TOPICS {
            assert!(t.text.starts_with("# "), "{}", t.name);
            assert!(!t.title().is_empty(), "{}", t.name);
            let summary = t.summary();
            assert!(summary.ends_with('.'), "{}: {summary}", t.name);
            assert!(commands.find_subcommand(t.name).is_none(), "{}", t.name);
            assert!(t.name != "topics" && t.name != "help", "{}", t.name);
        }
        assert!(crate::manual::listing().lines().count() == crate::manual::TOPICS.len());
    }
}
