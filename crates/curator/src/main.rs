//! `curator`: one pass over the mission's memory — raw.md and archive/ grouped into items,
//! promoted into summary.md, demoted to MEMORY.md and archive/ within the bounds, graduated into
//! identity/<role>.md, raw.md truncated to its last entries. All the rules are in
//! `harness_core::roles::curator`.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use harness_cli::{Install, Place};
use harness_core::base::exit_codes;
use harness_core::roles::curator::{self, Interrupted, Params, Request};
use harness_core::spec::config::Config;
use harness_core::spec::layout::RunId;

/// Curates the memory layers of the project: one deterministic, idempotent pass (a second pass
/// with nothing new changes no byte). Prints what it promotes, demotes, graduates and archives,
/// one line each, on stdout; a summary and warnings on stderr.
///
/// Exit codes: 0 the pass is done (also when the agent's rewrite was rejected: the deterministic
/// result is kept); 1 usage or input error (the message names the file and line; nothing was
/// written); 74 the disk is full or a file-size limit was reached (the write was taken back);
/// 75 another curator is running on this project (see --wait); 130 interrupted by
/// Ctrl-C or SIGTERM during the pass or the agent's run (it stops at once; nothing written).
#[derive(Debug, Parser)]
#[command(name = "curator", version = harness_cli::VERSION)]
struct Cli {
    #[command(flatten)]
    place: Place,

    #[command(flatten)]
    install: Install,

    /// Print what the pass would do, and write nothing.
    #[arg(long)]
    dry_run: bool,

    /// Print the report (items, changes, sizes, warnings) as one JSON object instead.
    #[arg(long)]
    json: bool,

    /// Have the curator role's agent (roles.curator.agent, else agent) propose a rewrite of
    /// summary.md; the deterministic checks keep it or reject it with the reason.
    #[arg(long)]
    agent: bool,

    /// The similarity (0 to 1: the Dice coefficient of their normalised content words, each
    /// weighing by its rarity) at which two entries say the same thing [default: 0.3].
    #[arg(long, value_name = "X")]
    similarity: Option<f64>,

    /// If another curator is running on this project, wait for it instead of exiting 75.
    #[arg(long)]
    wait: bool,

    /// The run id of the agent's invocation with --agent [default: <unix-time>-curator-mission].
    #[arg(long, env = "HARNESS_RUN_ID")]
    run_id: Option<String>,

    /// Do not copy the agent's output to stdout (it still goes to output.log).
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    harness_cli::main("curator", || curate(cli))
}

fn curate(cli: Cli) -> anyhow::Result<u8> {
    let (workdir, state) = cli.place.resolve()?;
    // config.yaml's `curator:` section, when there is a config; the flags override it.
    let defaults = if harness_core::base::fs::exists(&state.config()) {
        Config::load(&state.config())?.curator
    } else {
        Params::default()
    };
    let params = Params {
        similarity: cli.similarity.unwrap_or(defaults.similarity),
        ..defaults
    };
    let outcome = match curator::run(&Request {
        workdir,
        state,
        home: cli.install.resolve()?,
        params: params.clone(),
        dry_run: cli.dry_run,
        agent: cli.agent,
        wait: cli.wait,
        run_id: cli.run_id.as_deref().map(RunId::parse).transpose()?,
        echo: !cli.quiet && !cli.json,
        path_var: std::env::var_os("PATH"),
    }) {
        Ok(outcome) => outcome,
        Err(error) => match error.downcast_ref::<Interrupted>() {
            Some(interrupted) => {
                eprintln!("curator: {interrupted}");
                return Ok(exit_codes::INTERRUPTED);
            }
            None => return Err(error),
        },
    };
    let report = &outcome.report;
    if cli.json {
        let text =
            serde_json::to_string_pretty(report).context("cannot write the report as JSON")?;
        println!("{text}");
    } else {
        for line in report.lines() {
            println!("{line}");
        }
    }
    for warning in &report.warnings {
        eprintln!("curator: warning: {warning}");
    }
    if let Some(agent) = &report.agent {
        let verdict = if agent.accepted { "kept" } else { "rejected" };
        eprintln!(
            "curator: the agent's rewrite was {verdict}: {}",
            agent.reason
        );
    }
    eprintln!("curator: {}", report.summary_line(&params));
    Ok(outcome.exit_code)
}
