//! The commands that run the engine: wiring only. [`run`] takes what the user typed
//! ([`crate::cli`]), has it checked ([`crate::settings`]), runs the command and maps its
//! outcome to an exit code ([`crate::exit`]); each module here opens a run, hands each
//! collection to its format and reports.

mod attach;
pub mod baseline;
mod cat;
pub(crate) mod catalog;
mod diff;
pub mod feed;
pub mod incremental;
pub mod inspect;
mod log;
mod ls;
mod man;
mod output;
pub mod source_import;
pub mod source_remove;
mod status;

use crate::audit;
use crate::cli::{Cli, Command};
use crate::engine;
use crate::exit::Exit;
use crate::progress::Progress;
use crate::{access, settings};

/// Run the command `cli` names; `arguments`: the command line as the run record keeps it
/// ([`recorded_arguments`]).
pub fn run(cli: Cli, arguments: &str) -> Exit {
    if only_reads(&cli.command) {
        end_quietly_on_a_closed_pipe();
    }
    if let Some(name) = json_of(&cli.command) {
        let _ = JSON_ERRORS.set(name);
    }
    if let Some(say) = reading_output_of(&cli.command) {
        say.apply();
    }
    let logging = output_of(&cli.command).is_some_and(|o| o.log_file.is_some());
    if let Some(output) = output_of(&cli.command) {
        crate::report::set_level(output.quiet, output.verbose);
        if output.json_progress {
            crate::report::set_json_stderr();
        }
        if output.progress || output.no_progress {
            crate::progress::force(output.progress);
        }
        if let Some(path) = &output.log_file {
            if let Err(e) = crate::logfile::open(path, output.log_format) {
                let e = settings::UsageError(format!("--log-file {}: {e}", path.display()));
                return fail(&e.into());
            }
            crate::logfile::line("notice", arguments);
        }
    }
    let exit = match cli.command {
        Command::Baseline(a) => baseline(&a, arguments),
        Command::Incremental(a) => incremental(&a, arguments),
        Command::Audit(a) => audit(&a, arguments),
        Command::Inspect(a) => inspect(&a),
        Command::Feed(a) => feed(&a),
        Command::Ls(a) => reading(|| ls(&a)),
        Command::Cat(a) => reading(|| cat(&a)),
        Command::Log(a) => reading(|| log(&a)),
        Command::Diff(a) => reading(|| diff(&a)),
        Command::Status(a) => status(&a).unwrap_or_else(|e| fail(&e)),
        Command::Export(a) => export(&a),
        Command::Repair(a) => repair(&a, arguments),
        Command::Source(a) => source(&a, arguments),
        Command::Catalog(a) => catalog_command(&a),
        Command::Attach(a) => attach(&a),
        Command::Serve(a) => serve(&a),
        Command::Follow(a) => follow(&a),
        Command::Completions(a) => completions(&a),
        Command::Man(a) => man(&a),
    };
    // What the command was asked to print did not reach stdout (a full disk under a
    // redirection): not a success, whatever else it did.
    let exit = match crate::report::output_lost() {
        Some(why) if exit.code() < Exit::Store.code() => {
            say!("rsmirror: its output could not be written to stdout ({why})");
            Exit::Store
        }
        _ => exit,
    };
    if logging {
        crate::logfile::line("notice", &format!("exit {}", exit.code()));
    }
    exit
}

/// The command's name when it was asked for `--json`: its errors are JSON documents too.
static JSON_ERRORS: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// The name of a command asked for `--json`.
fn json_of(command: &Command) -> Option<&'static str> {
    use crate::cli::SourceAction;
    let (name, json) = match command {
        Command::Baseline(a) => ("baseline", a.output.json),
        Command::Incremental(a) => ("incremental", a.output.json),
        Command::Audit(a) => ("audit", a.output.json),
        Command::Repair(a) => ("repair", a.output.json),
        Command::Inspect(a) => ("inspect", a.json),
        Command::Ls(a) => ("ls", a.json),
        Command::Log(a) => ("log", a.json),
        Command::Diff(a) => ("diff", a.json),
        Command::Status(a) => ("status", a.json),
        Command::Export(a) => ("export", a.json),
        Command::Source(a) => match &a.action {
            SourceAction::List { json, .. } => ("source list", *json),
            _ => ("source remove", false),
        },
        _ => ("", false),
    };
    json.then_some(name)
}

/// The output options of a command that takes them (`-q`, `-v`, `--json`, `--log-file`).
fn output_of(command: &Command) -> Option<&crate::cli::OutputArgs> {
    match command {
        Command::Baseline(a) => Some(&a.output),
        Command::Incremental(a) => Some(&a.output),
        Command::Audit(a) => Some(&a.output),
        Command::Repair(a) => Some(&a.output),
        _ => None,
    }
}

/// The `-q`/`-v` of a reading command.
fn reading_output_of(command: &Command) -> Option<&crate::cli::ReadingOutput> {
    match command {
        Command::Ls(a) => Some(&a.say),
        Command::Cat(a) => Some(&a.say),
        Command::Log(a) => Some(&a.say),
        Command::Diff(a) => Some(&a.say),
        Command::Status(a) => Some(&a.say),
        Command::Feed(a) => Some(&a.say),
        Command::Export(a) => Some(&a.say),
        _ => None,
    }
}

/// A command that writes nothing but its output: the reading commands, and the dry runs.
fn only_reads(command: &Command) -> bool {
    use crate::cli::SourceAction;
    match command {
        Command::Baseline(a) => a.dry_run,
        Command::Incremental(a) => a.dry_run,
        Command::Repair(a) => a.dry_run,
        Command::Audit(_) | Command::Export(_) | Command::Attach(_) | Command::Follow(_) => false,
        Command::Source(a) => matches!(a.action, SourceAction::List { .. }),
        Command::Catalog(a) => matches!(a.action, crate::cli::CatalogAction::Check { .. }),
        Command::Inspect(_)
        | Command::Feed(_)
        | Command::Ls(_)
        | Command::Cat(_)
        | Command::Log(_)
        | Command::Diff(_)
        | Command::Status(_)
        | Command::Serve(_)
        | Command::Completions(_)
        | Command::Man(_) => true,
    }
}

/// A reader whose output goes to a pipe that closed (`rsmirror inspect URL | head`) ends there,
/// quietly, as `cat` and `grep` do: SIGPIPE's default action, which Rust programs start without
/// (they would fail, or panic, at the next write instead). Only for commands that write
/// nothing else: a run that records must never die half-way for its output's sake.
fn end_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action; no handler is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The command line as the run record keeps it: `--header` values replaced by `***`.
pub fn recorded_arguments(args: impl Iterator<Item = String>) -> String {
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

/// A command that ended in an error: said on stderr (and in the log file); with `--json` the
/// caller also gets one JSON document on stdout (`schemas/error.schema.json`: `command`,
/// `error`, `exit_code`), as audit's report carries `error`.
fn fail(e: &crate::error::Error) -> Exit {
    if let Some(command) = JSON_ERRORS
        .get()
        .filter(|_| !crate::report::document_on_stdout())
    {
        out!(
            "{}",
            crate::report::error_document(command, &e.to_string(), e.exit().code())
        );
    }
    crate::report::said("error", &format!("rsmirror: {e}"));
    e.exit()
}

fn baseline(a: &crate::cli::BaselineArgs, arguments: &str) -> Exit {
    let s = match a.settings() {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    let progress = Progress::new(s.output.quiet);
    if s.dry_run && s.output.json {
        crate::report::set_plan_on_stderr();
    }
    let result = waiting_for_the_lock(&a.lock, || baseline::run(&s, arguments, &progress))
        .map_err(|e| engine::context::full_disk_said(e, &s.mirror));
    summarise(result, &s.output)
}

fn incremental(a: &crate::cli::IncrementalArgs, arguments: &str) -> Exit {
    let s = match a.settings() {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    let progress = Progress::new(s.output.quiet);
    if s.dry_run && s.output.json {
        crate::report::set_plan_on_stderr();
    }
    let result = waiting_for_the_lock(&a.lock, || incremental::run(&s, arguments, &progress))
        .map_err(|e| engine::context::full_disk_said(e, &s.mirror));
    summarise(result, &s.output)
}

fn audit(a: &crate::cli::AuditArgs, arguments: &str) -> Exit {
    let s = match a.settings() {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    match waiting_for_the_lock(&a.lock, || {
        audit::run(&s, &crate::formats::all(), arguments)
    }) {
        Ok(exit) => exit,
        Err(e) => fail(&e),
    }
}

/// `--retry-lock DURATION`: a run that finds the mirror's lock held tries again (after 1 s,
/// then twice as long each time, at most 30 s apart) until DURATION has passed; the lock is the
/// first thing a writing run takes, so nothing was done before it was refused.
fn waiting_for_the_lock<T>(
    lock: &crate::cli::LockArgs,
    mut run: impl FnMut() -> Result<T, crate::error::Error>,
) -> Result<T, crate::error::Error> {
    use crate::store::lock::LockError;
    use std::time::{Duration, Instant};
    crate::store::copies::keep(lock.catalog_copies);
    let Some(wait) = lock.retry_lock else {
        return run();
    };
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_secs(1);
    loop {
        match run() {
            Err(crate::error::Error::Lock(LockError::Held { .. } | LockError::Leased { .. }))
                if Instant::now() < deadline =>
            {
                std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
                pause = (pause * 2).min(Duration::from_secs(30));
            }
            result => return result,
        }
    }
}

/// Print a baseline / incremental outcome for people and for cron: JSON on stdout with
/// --json; quiet under cron on success; the summary line otherwise.
fn summarise(
    result: Result<engine::context::Outcome, crate::error::Error>,
    output: &settings::Output,
) -> Exit {
    match result {
        Ok(o) => {
            if output.json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&o.summary).expect("serialisable")
                );
            }
            // Quiet under cron: on success the summary is shown on a terminal or with -v. The
            // log file has it whatever.
            let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
            if crate::report::json_stderr() {
                // The wrapper reading stderr gets the summary as its last line (restic's).
                crate::report::json_on_stderr(serde_json::json!({
                    "message_type": "summary",
                    "time": crate::report::now_shown(),
                    "summary": &o.summary,
                }));
                crate::logfile::line("notice", &o.summary.line());
            } else if !output.quiet && (o.exit != Exit::Ok || tty || output.verbose > 0) {
                crate::report::said("notice", &o.summary.line());
            } else {
                crate::logfile::line("notice", &o.summary.line());
            }
            if output.verbose > 0 {
                for w in &o.summary.warnings {
                    crate::report::said("warning", &format!("warning: {w}"));
                }
            }
            o.exit
        }
        Err(e) => fail(&e),
    }
}

fn inspect(a: &crate::cli::InspectArgs) -> Exit {
    let s = match a.source_args.settings(&a.source) {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    match inspect::run(&s) {
        Ok(i) => {
            if a.json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&i).expect("serialisable")
                );
            } else {
                {
                    use std::io::Write as _;
                    let _ = write!(std::io::stdout().lock(), "{}", i.text());
                }
            }
            if i.errors.is_empty() {
                Exit::Ok
            } else {
                for e in &i.errors {
                    say!("rsmirror: source error: {e}");
                }
                Exit::Source
            }
        }
        Err(e) => fail(&e),
    }
}

fn feed(a: &crate::cli::FeedArgs) -> Exit {
    if let Some(note) = a.since.as_deref().and_then(access::When::local_note) {
        note!("rsmirror: {note}");
    }
    let s = match a.settings() {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    match feed::run(&s) {
        Ok(()) => Exit::Ok,
        Err(e) => fail(&e),
    }
}

/// A reading command: nothing to summarise, the error (if any) on stderr.
fn attach(a: &crate::cli::AttachArgs) -> Exit {
    match attach::run(&a.objects, &a.mirror) {
        Ok(said) => {
            out!("{said}");
            Exit::Ok
        }
        Err(e) => fail(&e),
    }
}

fn reading(f: impl FnOnce() -> Result<(), crate::error::Error>) -> Exit {
    match f() {
        Ok(()) => Exit::Ok,
        Err(e) => fail(&e),
    }
}

/// A WHEN the user wrote, read; a local time (no zone) is said on stderr with the instant it
/// was read as, as git does.
fn when(arg: Option<&str>) -> Result<Option<access::When>, crate::error::Error> {
    let Some(arg) = arg else { return Ok(None) };
    let when = access::When::parse(arg)?;
    if let Some(note) = access::When::local_note(arg) {
        note!("rsmirror: {note}");
    }
    Ok(Some(when))
}

fn ls(a: &crate::cli::LsArgs) -> Result<(), crate::error::Error> {
    let o = ls::Options {
        query: access::ls::Query {
            prefix: a.prefix.clone(),
            after: None,
            deleted: a.deleted,
            collection: a.collection.clone(),
            arc: a.json,
            categories: a.json || a.long,
        },
        at: when(a.at.as_deref())?,
        long: a.long,
        json: a.json,
    };
    ls::run(&a.mirror.mirror, &o)
}

fn cat(a: &crate::cli::CatArgs) -> Result<(), crate::error::Error> {
    let o = cat::Options {
        query: access::cat::Query {
            url: a.url.clone(),
            at: when(a.at.as_deref())?,
            version: a.version,
        },
        output: a.output.clone(),
    };
    cat::run(&a.mirror.mirror, &o)
}

fn log(a: &crate::cli::LogArgs) -> Result<(), crate::error::Error> {
    let o = log::Options {
        url: a.url.clone(),
        run: a.run,
        json: a.json,
    };
    log::run(&a.mirror.mirror, &o)
}

fn diff(a: &crate::cli::DiffArgs) -> Result<(), crate::error::Error> {
    let o = diff::Options {
        from: when(Some(&a.from))?.expect("given"),
        to: when(a.to.as_deref())?,
        json: a.json,
    };
    diff::run(&a.mirror.mirror, &o)
}

fn status(a: &crate::cli::StatusArgs) -> Result<Exit, crate::error::Error> {
    status::run(&a.mirror.mirror, &status_limits(a), a.json)
}

/// When a sync point or the fixity checks have gone stale (`--stale-sync-point`,
/// `--stale-fixity`).
fn status_limits(a: &crate::cli::StatusArgs) -> access::status::Options {
    let seconds = |d: std::time::Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    access::status::Options {
        stale_sync_point: seconds(a.stale_sync_point),
        stale_fixity: seconds(a.stale_fixity),
    }
}

fn serve(a: &crate::cli::ServeArgs) -> Exit {
    let seconds = |d: std::time::Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    let o = crate::serve::Options {
        mirror: a.mirror.mirror.clone(),
        listen: a.listen,
        base_url: a.base_url.clone(),
        max_connections: a.max_connections as usize,
        header_timeout: a.header_timeout,
        send_timeout: a.send_timeout,
        auth_token_file: a.auth_token_file.clone(),
        drain: a.drain,
        timemap_page: a.timemap_page as usize,
        list_size: a.list_size as usize,
        feed_hub: a.feed_hub.clone(),
        feed_archive_size: a.feed_archive_size as usize,
        log_format: a.log_format,
        quiet: a.quiet,
        limits: access::status::Options {
            stale_sync_point: seconds(a.stale_sync_point),
            stale_fixity: seconds(a.stale_fixity),
        },
    };
    crate::serve::run(o).unwrap_or_else(|e| fail(&e))
}

fn follow(a: &crate::cli::FollowArgs) -> Exit {
    let incremental = a.source_args.settings("").and_then(|source| {
        settings::Incremental {
            mirror: a.mirror.mirror.clone(),
            source,
            source_given: true,
            from: None,
            dry_run: false,
            jobs: settings::DEFAULT_JOBS,
            on_gap: settings::OnGap::Stop,
            output: settings::Output {
                quiet: true,
                verbose: 0,
                json: false,
            },
        }
        .checked()
    });
    let incremental = match incremental {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    if a.stop {
        return follow_stop(a).unwrap_or_else(|e| fail(&e));
    }
    let Some(base) = a
        .callback_base
        .as_deref()
        .and_then(|b| url::Url::parse(b).ok())
    else {
        return fail(&settings::UsageError("--callback-base URL is needed".into()).into());
    };
    let o = crate::follow::Options {
        mirror: a.mirror.mirror.clone(),
        sources: a.sources.clone(),
        listen: a.listen,
        callback_base: base,
        lease: a.lease,
        max_body: a.max_body,
        catch_up_every: a.catch_up_every,
        incremental,
        catch_up: incremental::run,
        quiet: a.quiet,
    };
    crate::follow::run(o).unwrap_or_else(|e| fail(&e))
}

/// `follow --stop`: ask the hubs to end the subscriptions (of the SOURCEs given, or all).
fn follow_stop(a: &crate::cli::FollowArgs) -> Result<Exit, crate::error::Error> {
    // A running follower takes the lock for moments (a catch-up, its rows): wait for it.
    let started = std::time::Instant::now();
    let m = loop {
        match engine::context::OpenMirror::open(&a.mirror.mirror, ("follow --stop", None)) {
            Err(crate::error::Error::Lock(crate::store::lock::LockError::Held { .. }))
                if started.elapsed() < std::time::Duration::from_secs(300) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            other => break other?,
        }
    };
    let sources: Vec<Option<String>> = match a.sources.is_empty() {
        true => vec![None],
        false => a
            .sources
            .iter()
            .map(|s| engine::discover::source_url(s).map(|u| Some(u.to_string())))
            .collect::<Result<_, _>>()?,
    };
    let mut said = 0;
    for s in &sources {
        for line in crate::follow::unsubscribe(&m.catalog, s.as_deref())? {
            say!("rsmirror: follow --stop: {line}");
            said += 1;
        }
    }
    if said == 0 {
        say!("rsmirror: follow --stop: no subscription to end");
    }
    Ok(Exit::Ok)
}

fn export(a: &crate::cli::ExportArgs) -> Exit {
    let at = match when(a.at.as_deref()) {
        Ok(at) => at,
        Err(e) => return fail(&e),
    };
    let changes_since = match when(a.changes_since.as_deref()) {
        Ok(w) => w,
        Err(e) => return fail(&e),
    };
    let o = crate::export::Options {
        format: a.format,
        dest: a.dest.clone(),
        at,
        collection: a.collection.clone(),
        strip: a.strip.clone(),
        link: a.link,
        all_versions: a.all_versions,
        warc_size: a.warc_size,
        base_url: a.base_url.clone(),
        changes_since,
        verify: a.verify,
        in_sample: crate::audit::mirror_states::uri_in_sample,
    };
    match crate::export::run(&a.mirror.mirror, &o) {
        Ok(s) => {
            if a.json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&s).expect("serialisable")
                );
            }
            // With --json the document is the summary.
            if !a.say.quiet && !a.json {
                say!("{}", s.line());
            }
            Exit::Ok
        }
        Err(e) => fail(&e),
    }
}

fn source(a: &crate::cli::SourceCommandArgs, arguments: &str) -> Exit {
    use crate::cli::SourceAction;
    match &a.action {
        SourceAction::List { mirror, json } => {
            reading(|| status::list_sources(&mirror.mirror, *json))
        }
        SourceAction::Import(a) => {
            let crate::cli::ImportArgs {
                file,
                skip_bad,
                jobs,
                mirror,
                source_args,
                output,
                lock,
            } = &**a;
            let output = output.settings();
            let progress = Progress::new(output.quiet);
            let result = waiting_for_the_lock(lock, || {
                let i = source_import::Import {
                    file,
                    skip_bad: *skip_bad,
                    jobs: *jobs,
                    mirror: &mirror.mirror,
                    source_args,
                    output,
                };
                source_import::run(&i, arguments, &progress)
            });
            summarise(result, &output)
        }
        SourceAction::Remove { url, mirror, lock } => {
            match waiting_for_the_lock(lock, || source_remove::run(&mirror.mirror, url, arguments))
            {
                Ok(message) => {
                    out!("{message}");
                    Exit::Ok
                }
                Err(e) => fail(&e),
            }
        }
    }
}

fn catalog_command(a: &crate::cli::CatalogCommandArgs) -> Exit {
    use crate::cli::CatalogAction;
    let result = match &a.action {
        CatalogAction::Check { mirror, lock } => waiting_for_the_lock(lock, || {
            catalog::check(&mirror.mirror, &mut |line| out!("{line}"))
        }),
        CatalogAction::Restore {
            copy,
            mirror,
            offline,
            force,
            lock,
        } => {
            let r = catalog::Restore {
                copy: copy.clone(),
                offline: *offline,
                force: *force,
            };
            waiting_for_the_lock(lock, || {
                catalog::restore(&mirror.mirror, &r, &mut |line| say!("{line}"))
            })
        }
        CatalogAction::Rebuild {
            sources,
            mirror,
            force,
            lock,
        } => waiting_for_the_lock(lock, || {
            catalog::rebuild(&mirror.mirror, sources, *force, &mut |line| say!("{line}"))
        }),
    };
    result.unwrap_or_else(|e| fail(&e))
}

fn repair(a: &crate::cli::RepairArgs, arguments: &str) -> Exit {
    let mirror = &a.mirror.mirror;
    // Requests go out as the mirror's own runs send them: its source's headers and --map rules.
    let source = crate::store::Catalog::open_read_only(mirror)
        .ok()
        .flatten()
        .and_then(|c| c.remembered_source().ok().flatten())
        .unwrap_or_default();
    let settings = match a
        .source_args
        .settings(&source)
        .map_err(crate::error::Error::from)
        .and_then(|s| {
            let remembered = match s.takes_remembered_maps() {
                true => crate::store::remembered_maps(mirror)?,
                false => Vec::new(),
            };
            // The source's own options (headers, timeout, delay, hosts) where none is given.
            s.with_maps(remembered)?.with_kept(mirror, &source)
        }) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let jobs = a.jobs.unwrap_or_else(crate::settings::Audit::default_jobs);
    if a.dry_run && a.output.json {
        crate::report::set_plan_on_stderr();
    }
    let o = audit::repair::Options {
        mirror: mirror.clone(),
        from_mirror: a.from_mirror.clone(),
        from_audit: a.from_audit,
        offline: a.offline,
        dry_run: a.dry_run,
        jobs,
        quiet: a.output.quiet,
        source: settings,
    };
    match waiting_for_the_lock(&a.lock, || audit::repair::run(&o, arguments))
        .map_err(|e| engine::context::full_disk_said(e, mirror))
    {
        Ok((summary, exit)) => {
            if a.output.json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&summary).expect("serialisable")
                );
            }
            for u in &summary.unrepaired {
                say!("not repaired: {u}");
            }
            if crate::report::json_stderr() {
                crate::report::json_on_stderr(serde_json::json!({
                    "message_type": "summary",
                    "time": crate::report::now_shown(),
                    "summary": &summary,
                }));
            } else if !a.output.quiet {
                crate::report::said("notice", &summary.line());
            }
            exit
        }
        Err(e) => fail(&e),
    }
}

fn completions(a: &crate::cli::CompletionsArgs) -> Exit {
    let mut cmd = Cli::definitions();
    clap_complete::generate(a.shell, &mut cmd, "rsmirror", &mut std::io::stdout());
    Exit::Ok
}

/// The man page of rsmirror, or of one command (`rsmirror-ls(1)`), from the clap definitions;
/// or of a topic of the manual (`rsmirror-cron(7)`), from its Markdown.
fn man(a: &crate::cli::ManArgs) -> Exit {
    let root = Cli::definitions();
    if let Some(dir) = &a.install {
        return match man::install(&root, dir) {
            Ok(paths) => {
                for p in paths {
                    println!("{}", p.display());
                }
                Exit::Ok
            }
            Err(e) => {
                fail(&crate::store::StoreError::io("installing the pages under", dir, e).into())
            }
        };
    }
    let written = match &a.command {
        None => man::render(root, None),
        Some(name) => match root.find_subcommand(name) {
            Some(sub) => man::render(sub.clone(), Some(name)),
            None => match crate::manual::find(name) {
                Some(topic) => man::render_topic(topic),
                None => {
                    let names: Vec<String> = root
                        .get_subcommands()
                        .map(|c| c.get_name().to_string())
                        .collect();
                    return fail(
                        &crate::error::UsageError(format!(
                            "man {name}: no such command or topic; the commands are {}; the \
                             topics are {}",
                            names.join(", "),
                            crate::manual::names()
                        ))
                        .into(),
                    );
                }
            },
        },
    };
    match written {
        Ok(()) => Exit::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Ok,
        Err(e) => fail(
            &crate::store::StoreError::io("writing to", std::path::Path::new("stdout"), e).into(),
        ),
    }
}
