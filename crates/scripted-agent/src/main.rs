//! `scripted-agent`: a deterministic stand-in for an LLM coding agent such as `claude -p`.
//!
//! The harness starts an agent once per iteration with a prompt. This one does not think: it plays
//! the next step of a YAML scenario, so that end-to-end tests and `make demo` get a real process
//! that prints, writes files, commits, hangs, crashes or floods exactly when told to. Its position
//! in the scenario is kept in a small file, since each step is played by a new process.
//!
//! # Invocation
//!
//! `scripted-agent --scenario FILE [--state-dir DIR] [PROMPT]`
//!
//! - The prompt is read from the file named by `HARNESS_PROMPT_FILE` if set, else it is `PROMPT`,
//!   else all of stdin (stdin is read only in that last case).
//! - `--scenario` may come from `SCRIPTED_AGENT_SCENARIO`.
//! - Positions are kept in `--state-dir`, else `SCRIPTED_AGENT_STATE_DIR`, else
//!   `$HARNESS_STATE_DIR/scripted-agent`, else `FILE.state/`; it is created if missing.
//! - From the harness it reads `HARNESS_ROLE`, `HARNESS_FEATURE_ID`, `HARNESS_ITERATION`,
//!   `HARNESS_RUN_ID`, `HARNESS_PHASE` and `HARNESS_COMPLETION_PROMISE` (default
//!   `TASK_COMPLETE`); missing ones are empty.
//! - It works in its current directory: relative paths in actions are relative to it, except for
//!   `cat`, whose recordings live beside the scenario.
//!
//! # Scenario format
//!
//! ```yaml
//! # Either one list of steps for every role and feature:
//! steps:
//!   - print: "Working on {feature}, iteration {iteration}"   # a step that is one action
//!   - [print: "done", promise: true]                         # a step that is a list of actions
//!   - actions: [exit: 1]                                     # the same, as a mapping
//! # or scripts, of which the first whose `match` fits (keys role, feature, phase; absent = any)
//! # is used:
//! scripts:
//!   - match: {role: validator}
//!     steps: [...]
//!   - steps: [...]                  # no match: the fallback
//! after_last: repeat   # once the steps are used up: `repeat` (default) replays the last one;
//!                      # `fail` prints an error and exits 97
//! ```
//!
//! Each invocation plays one step: its actions, in order, each a one-key mapping.
//!
//! | action | effect |
//! | --- | --- |
//! | `print: TEXT` | TEXT and a newline on stdout |
//! | `stderr: TEXT` | TEXT and a newline on stderr |
//! | `promise: true` | `<promise>P</promise>`, P being the completion promise |
//! | `echo_prompt: true` | the prompt, on stdout (with a final newline if it had none) |
//! | `expect_prompt: TEXT` | exit 98 unless the prompt contains TEXT (the error spells TEXT as `T·E·X·T`, so that, quoted in the next prompt's notes, it cannot satisfy a replay) |
//! | `reject_prompt: TEXT` | exit 98 if the prompt contains TEXT |
//! | `write: {path: P, content: C}` | replace file P with C, creating directories |
//! | `append: {path: P, content: C}` | append C to file P, creating it and directories |
//! | `commit: MESSAGE` | `git add -A` and `git commit -q -m MESSAGE` as `scripted-agent`; exit 96 if git fails |
//! | `cat: PATH` | copy the file (relative to the scenario's directory) to stdout verbatim |
//! | `sleep: SECONDS` | sleep; fractions allowed |
//! | `hang: true` | sleep forever, for timeouts to kill |
//! | `flood: {bytes: N, line: TEXT}` | exactly N bytes of TEXT lines (default 100 `x`) on stdout, fast; stops quietly on EPIPE |
//! | `spawn: COMMAND` | start `sh -c COMMAND` in the background, in the same process group, and not wait |
//! | `exit: CODE` | exit with CODE now |
//! | `crash: true` | abort, dying of SIGABRT |
//!
//! Without `exit`, the agent exits 0 after the last action. In `print`, `stderr`, `write` and
//! `append` content, `commit`, `expect_prompt`, `reject_prompt` and `spawn`, the placeholders
//! `{feature}`, `{role}`, `{iteration}`, `{run_id}`, `{phase}`, `{promise}` and `{step}` (1-based
//! number of the step played) are replaced; other braces are left as they are.
//!
//! # Positions
//!
//! Steps played are counted per script, role and feature in `STATE_DIR/INDEX-ROLE-FEATURE.pos`
//! (names sanitized, `_` when empty). The new count is written atomically before the step is
//! played, so a step is never played twice, even by a process killed in the middle of it.
//!
//! # Exit codes
//!
//! 0 or the scenario's `exit`; 1 an action failed (file I/O, spawn); 2 bad usage or scenario,
//! unknown action, or no steps for this invocation; 96 git failed; 97 steps used up under
//! `after_last: fail`; 98 the prompt was not as expected; SIGABRT for `crash`.

mod actions;
mod position;
mod scenario;

use std::env;
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use actions::Context;
use scenario::{step_index, Scenario};

/// Command-line options; see the crate documentation for the scenario format.
#[derive(Parser, Debug)]
#[command(
    name = "scripted-agent",
    version,
    about = "A deterministic stand-in for an LLM coding agent, playing one step of a YAML scenario per run.",
    after_help = "Each run plays the next step of the script that fits HARNESS_ROLE and \
                  HARNESS_FEATURE_ID, keeping its position in the state directory. A scenario \
                  has `steps:` (or `scripts:` with `match: {role, feature, phase}` and `steps:`) and \
                  optionally `after_last: repeat|fail`; a step is a list of one-key actions: \
                  print, stderr, promise, echo_prompt, expect_prompt, reject_prompt, write, \
                  append, commit, cat, sleep, hang, flood, spawn, exit, crash. The full format is \
                  documented in crates/scripted-agent/src/main.rs."
)]
struct Cli {
    /// The YAML scenario to play.
    #[arg(long, env = "SCRIPTED_AGENT_SCENARIO", value_name = "FILE")]
    scenario: PathBuf,

    /// Where positions are kept [default: $HARNESS_STATE_DIR/scripted-agent, else FILE.state].
    #[arg(long, env = "SCRIPTED_AGENT_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,

    /// The prompt, unless HARNESS_PROMPT_FILE names a file holding it [default: all of stdin].
    // Prompts may well start with a dash, as in a Markdown list.
    #[arg(allow_hyphen_values = true)]
    prompt: Option<String>,
}

/// Why the agent stops early: an exit code and what to say on stderr.
#[derive(Debug)]
pub struct Stop {
    code: u8,
    message: String,
}

impl Stop {
    /// A stop with this exit code and message (printed after `scripted-agent: `).
    pub fn new(code: u8, message: impl Into<String>) -> Stop {
        Stop {
            code,
            message: message.into(),
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(stop) => {
            eprintln!("scripted-agent: {}", stop.message);
            ExitCode::from(stop.code)
        }
    }
}

fn run(cli: Cli) -> Result<(), Stop> {
    let scenario_path = &cli.scenario;
    let in_file = |e: String| Stop::new(2, format!("{}: {e}", scenario_path.display()));
    let text = fs::read_to_string(scenario_path).map_err(|e| in_file(e.to_string()))?;
    let scenario = Scenario::parse(&text).map_err(in_file)?;

    // Read before the checks below, so a harness writing the prompt to stdin does not hit EPIPE
    // merely because no script fits.
    let prompt = read_prompt(cli.prompt)?;
    let role = env_or("HARNESS_ROLE", "");
    let feature = env_or("HARNESS_FEATURE_ID", "");
    let phase = env_or("HARNESS_PHASE", "");
    let (index, script) = scenario
        .script_for(&role, &feature, &phase)
        .ok_or_else(|| {
            in_file(format!(
                "no script matches role {role:?}, feature {feature:?}, phase {phase:?}"
            ))
        })?;
    if script.steps.is_empty() {
        return Err(in_file(format!("script {} has no steps", index + 1)));
    }

    let state_dir = cli
        .state_dir
        .unwrap_or_else(|| default_state_dir(scenario_path));
    let state_error = |e: io::Error| Stop::new(1, format!("state {}: {e}", state_dir.display()));
    fs::create_dir_all(&state_dir).map_err(state_error)?;
    let pos_file = position::file(&state_dir, index, &role, &feature);
    let played = position::read(&pos_file).map_err(state_error)?;
    let Some(step) = step_index(played, script.steps.len(), scenario.after_last) else {
        return Err(Stop::new(
            97,
            format!(
                "{}: all {} steps played for role {role:?}, feature {feature:?} (after_last: fail)",
                scenario_path.display(),
                script.steps.len()
            ),
        ));
    };
    position::write(&pos_file, played.saturating_add(1)).map_err(state_error)?;

    let ctx = Context {
        role,
        feature,
        iteration: env_or("HARNESS_ITERATION", ""),
        run_id: env_or("HARNESS_RUN_ID", ""),
        phase,
        promise: env_or("HARNESS_COMPLETION_PROMISE", "TASK_COMPLETE"),
        step: (step + 1).to_string(),
        prompt,
        scenario_dir: scenario_path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf(),
    };
    actions::play(&script.steps[step].0, &ctx)
}

/// An environment variable's value, or `default` if it is unset (or not Unicode).
fn env_or(name: &str, default: &str) -> String {
    env::var(name).unwrap_or_else(|_| default.to_string())
}

fn read_prompt(arg: Option<String>) -> Result<String, Stop> {
    if let Some(file) = env::var_os("HARNESS_PROMPT_FILE").filter(|f| !f.is_empty()) {
        let bytes = fs::read(&file).map_err(|e| {
            Stop::new(
                2,
                format!("HARNESS_PROMPT_FILE {}: {e}", file.to_string_lossy()),
            )
        })?;
        return Ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    if let Some(prompt) = arg {
        return Ok(prompt);
    }
    let mut bytes = Vec::new();
    io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| Stop::new(2, format!("reading the prompt from stdin: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn default_state_dir(scenario: &Path) -> PathBuf {
    match env::var_os("HARNESS_STATE_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("scripted-agent"),
        None => {
            let mut dir = OsString::from(scenario.as_os_str());
            dir.push(".state");
            PathBuf::from(dir)
        }
    }
}
