//! `worker`: one iteration of the Ralph loop on one feature — assemble the prompt, run a fresh
//! agent, record what happened in `.harness/`. run.sh calls it with `--loop`, which runs iterations
//! in turn while they end in "continue"; it also runs by hand with flags alone. All the rules are in `harness_core::roles::worker`.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use harness_cli::{FeatureArgs, Install, Place};
use harness_core::base::exit_codes;
use harness_core::roles::inputs::InputMemo;
use harness_core::roles::worker::{
    assign_worktree, check_run_inputs, run_worker_iteration, run_worker_loop, RunStart,
    WorkerRequest,
};
use harness_core::spec::features::FeatureId;
use harness_core::spec::role::Role;

/// Run one iteration of the worker on a feature (with --loop, one after another): a fresh agent
/// process gets the assembled prompt; its output, notes, memory entries and the feature's run
/// state are written under .harness/.
///
/// Exit codes: 0 the feature is done; 10 the iteration ended without completion and iterations
/// remain (run again; never with --loop); 11 the promise was delivered and the validator checks
/// it next; 1 usage, configuration or input error; 2 max_iterations reached;
/// 3 the feature is blocked, or accepted but not merged; 74 the disk is full or a file-size limit
/// was reached (the write was taken back); 75 the feature is being run by another process; 130
/// interrupted.
#[derive(Debug, Parser)]
#[command(name = "worker", version = harness_cli::VERSION, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    #[command(flatten)]
    iteration: IterationArgs,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Create <workdir>/.harness/ with a commented config.yaml, mission.md and features.yaml;
    /// never overwrites a file (what `./run.sh init` runs).
    Init {
        #[command(flatten)]
        place: Place,
    },
    /// Check config.yaml, features.yaml, the feature id and the agent command without changing
    /// anything; exit 1 with the reason when one is wrong.
    Check {
        #[command(flatten)]
        place: Place,
        /// The feature to check.
        #[arg(long, env = "HARNESS_FEATURE_ID")]
        feature: String,
    },
    /// Give the feature its own git worktree (`.harness/worktrees/<FEATURE>` on branch
    /// `harness/<FEATURE>`, from HEAD, or from the work of the feature it was re-broken from),
    /// repairing what a kill left of it; record it in the run state and print where its agents
    /// work (the main directory for a feature done, unmerged or blocked, which runs no agent).
    /// Used by `./run.sh all --parallel N`; the branch is merged back when the feature is accepted.
    Worktree {
        #[command(flatten)]
        feature: FeatureArgs,
    },
    /// Print the exact prompt the next invocation of a role would get on the feature (stdout),
    /// and the estimated tokens of each layer (stderr), without running or writing anything.
    Explain {
        #[command(flatten)]
        feature: FeatureArgs,
        /// The role whose prompt to show.
        #[arg(long, value_enum, default_value = "worker")]
        role: ExplainRole,
    },
    /// For run.sh (`help`, `--version`): print this harness's version and commit, then where its
    /// install and its identity directory are. Writes nothing.
    #[command(hide = true)]
    About {
        #[command(flatten)]
        install: Install,
        /// Print the first line only: `harness <version> (commit <hash>)`.
        #[arg(long)]
        version: bool,
    },
    /// For run.sh: print the path of the feature's lock file, which run.sh opens and hands to
    /// `--loop --lock-fd` (the id is checked first: it becomes part of that path).
    #[command(hide = true)]
    LockFile {
        #[command(flatten)]
        place: Place,
        /// The feature.
        #[arg(long, env = "HARNESS_FEATURE_ID")]
        feature: String,
    },
}

#[derive(Debug, clap::Args)]
struct IterationArgs {
    #[command(flatten)]
    feature: FeatureArgs,

    /// Set the feature's guardrail (persisted); continues a feature that reached it.
    #[arg(long)]
    max_iterations: Option<u32>,

    /// Run iteration after iteration in this process while they end in "continue" (what run.sh
    /// does): each re-reads the state from disk and runs a fresh agent, exactly as one
    /// invocation per iteration would. Never exits 10. --run-id names the first iteration only.
    #[arg(long = "loop")]
    run_loop: bool,

    /// With --loop, for run.sh: once the inputs are checked, take the feature's lock on this
    /// inherited descriptor on behalf of the calling process (exit 75 if it is held).
    #[arg(long, requires = "run_loop", hide = true)]
    lock_fd: Option<i32>,

    /// With --loop: run the feature in its own git worktree (`.harness/worktrees/<FEATURE>` on
    /// branch `harness/<FEATURE>`, made from HEAD), merged back when it is accepted.
    #[arg(long, requires = "run_loop")]
    worktree: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    harness_cli::main("worker", || match cli.command {
        Some(Command::Init { place }) => init(place),
        Some(Command::Check { place, feature }) => check(place, &feature),
        Some(Command::LockFile { place, feature }) => lock_file(place, &feature),
        Some(Command::Worktree { feature }) => worktree(&feature),
        Some(Command::Explain { feature, role }) => explain(&feature, role),
        Some(Command::About { install, version }) => about(&install, version),
        None => iterate(cli.iteration),
    })
}

fn init(place: Place) -> anyhow::Result<u8> {
    let (_, state) = place.resolve()?;
    let report = harness_core::spec::init::init(&state)
        .with_context(|| format!("cannot create {}", state.root().display()))?;
    for path in &report.created {
        println!("created {}", path.display());
    }
    for path in &report.kept {
        println!("kept    {} (exists)", path.display());
    }
    Ok(exit_codes::DONE)
}

fn check(place: Place, feature: &str) -> anyhow::Result<u8> {
    let feature = FeatureId::parse(feature)?;
    let (workdir, state) = place.resolve()?;
    let path = std::env::var_os("PATH");
    let mut memo = InputMemo::default();
    check_run_inputs(&mut memo, &workdir, &state, &feature, path.as_deref())?;
    Ok(exit_codes::DONE)
}

fn lock_file(place: Place, feature: &str) -> anyhow::Result<u8> {
    let feature = FeatureId::parse(feature)?;
    let (_, state) = place.resolve()?;
    println!("{}", state.feature_lock(&feature).display());
    Ok(exit_codes::DONE)
}

fn about(install: &Install, version_only: bool) -> anyhow::Result<u8> {
    println!("harness {}", harness_cli::VERSION);
    if !version_only {
        let home = install.locate()?;
        println!("install:  {}", home.root().display());
        println!("identity: {}", home.identity_location());
    }
    Ok(exit_codes::DONE)
}

/// The roles `explain` knows.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ExplainRole {
    Worker,
    Validator,
}

fn explain(args: &FeatureArgs, role: ExplainRole) -> anyhow::Result<u8> {
    let role = match role {
        ExplainRole::Worker => Role::Worker,
        ExplainRole::Validator => Role::Validator,
    };
    let explanation = harness_core::roles::explain::explain(&args.request()?, role)?;
    print!("{}", explanation.prompt);
    eprint!("\n{}", explanation.table());
    Ok(exit_codes::DONE)
}

fn worktree(args: &FeatureArgs) -> anyhow::Result<u8> {
    let path = assign_worktree(&mut InputMemo::default(), &args.request()?)?;
    println!("{}", path.display());
    Ok(exit_codes::DONE)
}

fn iterate(args: IterationArgs) -> anyhow::Result<u8> {
    let request = WorkerRequest {
        feature: args.feature.request()?,
        max_iterations: args.max_iterations,
    };
    let report = if args.run_loop {
        let start = RunStart {
            lock_fd: args.lock_fd,
            worktree: args.worktree,
        };
        run_worker_loop(&request, start)?
    } else {
        run_worker_iteration(&request)?
    };
    eprintln!("worker: {}", report.message);
    Ok(report.exit_code)
}
