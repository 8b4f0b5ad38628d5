//! `worker`: one iteration of the Ralph loop on one feature — assemble the prompt, run a fresh
//! agent, record what happened in `.harness/`. run.sh calls it once per iteration; it also runs by
//! hand with flags alone. All the rules are in `harness_core::ralph`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use harness_core::exit_codes;
use harness_core::features::FeatureId;
use harness_core::layout::{HarnessHome, RunId, StateDir};
use harness_core::ralph::{run_worker_iteration, WorkerRequest};
use harness_core::InputError;

/// Run one iteration of the worker on a feature: a fresh agent process gets the assembled prompt;
/// its output, notes, memory entries and the feature's run state are written under .harness/.
///
/// Exit codes: 0 the feature is done; 10 the iteration ended without completion and iterations
/// remain (run again); 1 usage, configuration or input error; 2 max_iterations reached;
/// 3 the feature is blocked; 75 the feature is being run by another process; 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "worker", version, args_conflicts_with_subcommands = true)]
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
    /// For run.sh: take the feature's lock on an inherited file descriptor, on behalf of the
    /// calling process (which keeps it until it closes the descriptor); exit 75 if it is held.
    #[command(hide = true)]
    Lock {
        #[command(flatten)]
        place: Place,
        /// The feature to lock.
        #[arg(long, env = "HARNESS_FEATURE_ID")]
        feature: String,
        /// The descriptor run.sh opened on the lock file.
        #[arg(long)]
        fd: i32,
    },
}

/// Where the project and its state are.
#[derive(Debug, clap::Args)]
struct Place {
    /// The project directory (the agent's working directory).
    #[arg(
        short = 'C',
        long = "workdir",
        env = "HARNESS_WORKDIR",
        default_value = "."
    )]
    workdir: PathBuf,

    /// The state directory [default: <workdir>/.harness].
    #[arg(long, env = "HARNESS_STATE_DIR")]
    state_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct IterationArgs {
    /// The feature to work on (an id from features.yaml).
    #[arg(long, env = "HARNESS_FEATURE_ID")]
    feature: Option<String>,

    #[command(flatten)]
    place: Place,

    /// The run id of this invocation [default: <unix-time>-worker-<FEATURE>].
    #[arg(long, env = "HARNESS_RUN_ID")]
    run_id: Option<String>,

    /// Set the feature's guardrail (persisted); continues a feature that reached it.
    #[arg(long)]
    max_iterations: Option<u32>,

    /// The harness install holding roles/ and identity/ [default: found from this binary].
    #[arg(long, env = "HARNESS_HOME")]
    harness_home: Option<PathBuf>,

    /// Where the identity files (L4) are [default: <harness home>/identity].
    #[arg(long, env = "HARNESS_IDENTITY_DIR")]
    identity_dir: Option<PathBuf>,

    /// Do not copy the agent's output to stdout (it still goes to output.log).
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> ExitCode {
    if let Err(error) = harness_core::signals::install() {
        eprintln!("worker: cannot set up signal handling: {error}");
        return ExitCode::from(exit_codes::USAGE);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Init { place }) => init(place),
        Some(Command::Check { place, feature }) => check(place, &feature),
        Some(Command::Lock { place, feature, fd }) => lock(place, &feature, fd),
        None => iterate(cli.iteration),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("worker: error: {error:#}");
            ExitCode::from(exit_codes::for_error(&error))
        }
    }
}

impl Place {
    /// The absolute working directory, which must exist, and its state directory.
    fn resolve(&self) -> anyhow::Result<(PathBuf, StateDir)> {
        let workdir = std::path::absolute(&self.workdir)
            .with_context(|| format!("bad working directory {}", self.workdir.display()))?;
        if !workdir.is_dir() {
            return Err(InputError::in_file(&workdir, "no such directory").into());
        }
        let state = match &self.state_dir {
            Some(dir) => StateDir::new(std::path::absolute(dir)?),
            None => StateDir::in_workdir(&workdir),
        };
        Ok((workdir, state))
    }
}

fn init(place: Place) -> anyhow::Result<u8> {
    let (_, state) = place.resolve()?;
    let report = harness_core::init::init(&state)
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
    harness_core::ralph::check_inputs(
        &workdir,
        &state,
        &feature,
        std::env::var_os("PATH").as_deref(),
    )?;
    Ok(exit_codes::DONE)
}

fn lock(place: Place, feature: &str, fd: i32) -> anyhow::Result<u8> {
    let feature = FeatureId::parse(feature)?;
    let (_, state) = place.resolve()?;
    let holder = harness_core::locks::describe_holder(
        std::os::unix::process::parent_id(),
        &format!("run.sh {feature}"),
        &harness_core::time::format(harness_core::time::now()),
    );
    harness_core::locks::acquire_for_parent(
        fd,
        &state.feature_lock(&feature),
        feature.as_str(),
        &holder,
    )?;
    Ok(exit_codes::DONE)
}

fn iterate(args: IterationArgs) -> anyhow::Result<u8> {
    let Some(feature) = args.feature else {
        return Err(
            InputError::new("which feature? give --feature <ID> (or HARNESS_FEATURE_ID)").into(),
        );
    };
    let feature = FeatureId::parse(&feature)?;
    let (workdir, state) = args.place.resolve()?;
    let home_root = match args.harness_home {
        Some(home) => home,
        None => std::env::current_exe()
            .ok()
            .and_then(|exe| HarnessHome::discover_from(&exe))
            .context("cannot find the harness install (roles/worker.md); set HARNESS_HOME")?,
    };
    let run_id = args.run_id.as_deref().map(RunId::parse).transpose()?;
    // run.sh takes the feature lock for its whole loop and says so; trust it only from our parent.
    let caller_holds_feature_lock = std::env::var("HARNESS_FEATURE_LOCK_PID")
        .ok()
        .and_then(|pid| pid.parse::<u32>().ok())
        == Some(std::os::unix::process::parent_id());
    let report = run_worker_iteration(&WorkerRequest {
        workdir,
        state,
        home: HarnessHome::new(home_root, args.identity_dir),
        feature,
        run_id,
        max_iterations: args.max_iterations,
        caller_holds_feature_lock,
        echo: !args.quiet,
        path_var: std::env::var_os("PATH"),
    })?;
    eprintln!("worker: {}", report.message);
    Ok(report.exit_code)
}
