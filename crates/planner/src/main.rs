//! `planner`: breaks the mission into features (`plan`), re-breaks a failed feature into smaller
//! ones (`replan`), shows the status board (`status`), writes the mission report (`report`), and
//! runs the mission for `./run.sh all` (`mission`), tells what to run next (`next`) and how the
//! mission ended (`outcome`). All the rules are in `harness_core::roles::planner`,
//! `harness_core::mission::{coordinator, schedule, status, report}`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use harness_cli::{Install, Place};
use harness_core::base::exit_codes;
use harness_core::base::time;
use harness_core::mission::{coordinator, report, schedule, status};
use harness_core::roles::attempt::FeatureRequest;
use harness_core::roles::planner::{run_plan, run_replan, PlanReport, PlanRequest};
use harness_core::spec::features::FeatureId;
use harness_core::spec::layout::RunId;
use harness_core::InputError;

/// The planner role and the mission's bookkeeping.
///
/// Exit codes: 0 success; 1 usage or input error, or the agent's plan was rejected (features.yaml
/// is then unchanged); 74 the disk is full or a file-size limit was reached (the write was taken
/// back); 75 another planner is running, or the feature is being run; 130
/// interrupted. `outcome` exits 0, 2 or 3 (see its help).
#[derive(Debug, Parser)]
#[command(name = "planner", version = harness_cli::VERSION)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Run the planner's agent on mission.md and merge its features into features.yaml: new ones
    /// are added; done, started and hand-edited ones are kept; the file's comments and layout
    /// are kept. Prints what happened to each planned feature.
    Plan {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Re-break a failed (or blocked) feature into smaller ones, <FEATURE>.1, <FEATURE>.2…,
    /// inserted right after it in features.yaml; the feature is then superseded by them.
    Replan {
        /// The failed feature.
        feature: String,
        #[command(flatten)]
        run: RunArgs,
    },
    /// The status board: each feature's status, iterations, last outcome and time, then the
    /// mission's totals.
    Status {
        #[command(flatten)]
        place: Place,
        #[command(flatten)]
        install: Install,
        /// One JSON object (`features`, `totals`, `identity`) instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Write the mission report: one self-contained HTML page with the mission's totals, a
    /// timeline of every feature's attempts (linking to their prompt.md and output.log) and the
    /// memory. Prints the page's path.
    Report {
        #[command(flatten)]
        place: Place,
        /// Where to write the page [default: <state dir>/report.html].
        #[arg(long, short, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Print the features ready to run, one a line, in the order of features.yaml (an unmerged
    /// one is ready: its run merges it). First marks blocked every feature whose dependency
    /// failed, is blocked or is not merged, and removes the worktrees of superseded features
    /// whose pieces are all done.
    Next {
        #[command(flatten)]
        place: Place,
        /// Leave out this feature (repeatable).
        #[arg(long, value_name = "ID")]
        exclude: Vec<String>,
        /// Print at most N features.
        #[arg(long, value_name = "N", default_value_t = 1)]
        limit: usize,
    },
    /// Run the mission (what `./run.sh all` does): hand every ready feature to the executor, in
    /// dependency order, and the features that become ready as runs end, each at most once;
    /// then print the outcome and exit as `outcome` does (130 when interrupted). A cluster's
    /// jobs go on when this stops, and a new `mission` re-attaches to them.
    Mission {
        #[command(flatten)]
        place: Place,
        /// run.sh, which runs each feature (on a cluster: its path on the shared filesystem).
        #[arg(long, value_name = "PATH")]
        run_sh: PathBuf,
        /// Where the features run: local or slurm [default: config.yaml's executor.kind].
        #[arg(long, value_name = "KIND")]
        executor: Option<String>,
        /// At most N runs at once [default: 1 locally, every ready feature on a cluster].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        parallel: Option<u64>,
        /// Passed on to every feature's run.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        max_iterations: Option<u32>,
        /// Keep the agents' output off the terminal.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Print how the mission stands in one line, then a line for each git worktree or
    /// `harness/` branch it leaves (why, and what to do); exit 0 if every feature is done (or
    /// superseded by done ones), 2 if only features stopped by max_iterations are left, 3 if a
    /// feature failed otherwise, is unmerged or blocked, or never ran.
    Outcome {
        #[command(flatten)]
        place: Place,
    },
}

/// The flags of an invocation that runs the planner's agent.
#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    place: Place,

    /// The run id of this invocation [default: <unix-time>-planner-mission, or
    /// <unix-time>-planner-<FEATURE> for replan].
    #[arg(long, env = "HARNESS_RUN_ID")]
    run_id: Option<String>,

    #[command(flatten)]
    install: Install,

    /// Do not copy the agent's output to stdout (it still goes to output.log).
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    harness_cli::main("planner", || match cli.command {
        Command::Plan { run } => plan(run),
        Command::Replan { feature, run } => replan(&feature, run),
        Command::Status {
            place,
            install,
            json,
        } => board(place, &install, json),
        Command::Report { place, output } => write_report(place, output),
        Command::Next {
            place,
            exclude,
            limit,
        } => next(place, &exclude, limit),
        Command::Mission {
            place,
            run_sh,
            executor,
            parallel,
            max_iterations,
            quiet,
        } => mission(place, run_sh, executor, parallel, max_iterations, quiet),
        Command::Outcome { place } => outcome(place),
    })
}

fn plan(args: RunArgs) -> anyhow::Result<u8> {
    let report = run_plan(&PlanRequest {
        place: harness_cli::role_place(&args.place, &args.install, args.quiet)?,
        run_id: args.run_id.as_deref().map(RunId::parse).transpose()?,
    })?;
    Ok(print_report(&report))
}

fn replan(feature: &str, args: RunArgs) -> anyhow::Result<u8> {
    let feature = FeatureId::parse(feature)?;
    let report = run_replan(&FeatureRequest {
        place: harness_cli::role_place(&args.place, &args.install, args.quiet)?,
        feature,
        run_id: args.run_id.as_deref().map(RunId::parse).transpose()?,
        caller_holds_feature_lock: harness_cli::caller_holds_feature_lock(),
    })?;
    Ok(print_report(&report))
}

/// What happened to each feature goes to stdout (it is the command's data); the one-line
/// summary to stderr, like every role's.
fn print_report(report: &PlanReport) -> u8 {
    let stream_is_data = report.exit_code == exit_codes::DONE;
    for line in &report.details {
        if stream_is_data {
            println!("{line}");
        } else {
            eprintln!("hint: {line}");
        }
    }
    eprintln!("planner: {}", report.message);
    report.exit_code
}

fn board(place: Place, install: &Install, json: bool) -> anyhow::Result<u8> {
    let (workdir, state) = place.resolve()?;
    let home = install.locate()?;
    let board = status::load(&workdir, &state, home.identity_location(), time::now())?;
    if json {
        let text =
            serde_json::to_string_pretty(&board).context("cannot write the board as JSON")?;
        println!("{text}");
    } else {
        print!("{}", board.render_text());
    }
    Ok(exit_codes::DONE)
}

fn write_report(place: Place, output: Option<PathBuf>) -> anyhow::Result<u8> {
    let (_, state) = place.resolve()?;
    let output = output.unwrap_or_else(|| state.report());
    report::write_report(&state, &output, time::now())?;
    println!("{}", output.display());
    Ok(exit_codes::DONE)
}

fn next(place: Place, exclude: &[String], limit: usize) -> anyhow::Result<u8> {
    let exclude = exclude
        .iter()
        .map(|id| FeatureId::parse(id))
        .collect::<Result<Vec<_>, _>>()?;
    let (_, state) = place.resolve()?;
    let next = schedule::next(&state, (&exclude, None), limit, time::now())?;
    next.tell_changes();
    for id in &next.ready {
        println!("{id}");
    }
    Ok(exit_codes::DONE)
}

fn mission(
    place: Place,
    run_sh: PathBuf,
    executor: Option<String>,
    parallel: Option<u64>,
    max_iterations: Option<u32>,
    quiet: bool,
) -> anyhow::Result<u8> {
    let (workdir, state) = place.resolve()?;
    let executor = executor
        .map(|kind| kind.parse().map_err(InputError::new))
        .transpose()?;
    coordinator::run(&coordinator::Request {
        workdir,
        state,
        run_sh: std::path::absolute(run_sh)?,
        executor,
        parallel: parallel.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        max_iterations,
        quiet,
    })
}

fn outcome(place: Place) -> anyhow::Result<u8> {
    let (workdir, state) = place.resolve()?;
    let outcome = schedule::outcome(&workdir, &state)?;
    outcome.tell();
    Ok(outcome.exit_code)
}
