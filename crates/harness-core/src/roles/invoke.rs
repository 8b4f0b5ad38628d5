//! One invocation of a role's agent, the same for every role: the run directory (`prompt.md`
//! exactly as sent, `output.log`, `result.json`), the contract's environment, and the run itself.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::agent::progress;
use crate::agent::{self, AgentRun, Invocation, Redactor};
use crate::base::atomic::write_atomic;
use crate::base::error::InputError;
use crate::base::fs;
use crate::roles::prompt::RuntimeContext;
use crate::spec::config::AgentConfig;
use crate::spec::layout::StateDir;
use crate::spec::presets::PROMPT_FILE_PLACEHOLDER;
use crate::spec::role::Role;
use crate::state::budget::Remaining;
use crate::state::memory;

/// What a role needs to run its agent once.
#[derive(Debug, Clone)]
pub struct RoleInvocation<'a> {
    /// Who runs.
    pub role: Role,
    /// The agent's working directory.
    pub workdir: &'a Path,
    /// The state directory.
    pub state: &'a StateDir,
    /// L0 (feature, run id).
    pub runtime: &'a RuntimeContext,
    /// `runs/<FEATURE>/<RUN_ID>/` (or the planner's run directory).
    pub run_dir: &'a Path,
    /// The worker iteration this invocation belongs to.
    pub iteration: u32,
    /// The feature's guardrail, for the status line.
    pub max_iterations: u32,
    /// The completion promise word (in the agent's environment).
    pub promise: &'a str,
    /// Exact texts to count in the answer (the completion tag, the verdict tags).
    pub markers: &'a [String],
    /// The role's agent settings.
    pub agent: &'a AgentConfig,
    /// The agent program, resolved (see [`agent::resolve_program`]).
    pub program: &'a Path,
    /// The prompt (already written to `prompt.md` by [`save_prompt`]).
    pub prompt: &'a str,
    /// Copy the output to stdout and show the live status line on stderr (off with `--quiet`).
    pub echo: bool,
    /// What the budgets leave for this invocation (tokens, time, cost).
    pub budget: Remaining,
}

/// Creates the run directory and writes `prompt.md`, secrets redacted (see [`run`]); returns its
/// path. A run directory is never reused: an existing one is an error.
pub fn save_prompt(run_dir: &Path, prompt: &str) -> anyhow::Result<PathBuf> {
    if fs::exists(run_dir) {
        return Err(InputError::in_file(
            run_dir,
            "this run directory exists already; a run id is never reused",
        )
        .into());
    }
    fs::create_dir_all(run_dir).with_context(|| format!("cannot create {}", run_dir.display()))?;
    let path = run_dir.join("prompt.md");
    let prompt = Redactor::from_process_env().redact(prompt);
    if let Err(error) = write_atomic(&path, prompt.as_bytes()) {
        // A full disk: leave no empty run directory behind, as if nothing had started.
        let _ = fs::remove_dir(run_dir);
        return Err(anyhow::Error::new(error).context(format!("cannot write {}", path.display())));
    }
    Ok(path)
}

/// Runs the agent with the contract's environment; its output goes to `output.log`. An agent that
/// cannot be started is an error that names it (with a hint when the reason is known).
pub fn run(invocation: &RoleInvocation) -> anyhow::Result<AgentRun> {
    let prompt_file = invocation.run_dir.join("prompt.md");
    let mut argv: Vec<String> = invocation
        .agent
        .command
        .iter()
        .map(|arg| arg.replace(PROMPT_FILE_PLACEHOLDER, &prompt_file.to_string_lossy()))
        .collect();
    argv[0] = invocation.program.to_string_lossy().into_owned();
    let mut env = invocation.agent.env.clone();
    env.extend(environment(invocation));
    // The agent's own secrets are as secret as ours.
    let redactor = Redactor::from_env(std::env::vars().chain(env.iter().cloned()));
    // A secret a user or an agent put into a file the prompt quotes is not sent either, and
    // prompt.md stays what was sent.
    let prompt = redactor.redact(invocation.prompt);
    if prompt != invocation.prompt {
        write_atomic(&prompt_file, prompt.as_bytes())
            .with_context(|| format!("cannot write {}", prompt_file.display()))?;
    }
    agent::run(&Invocation {
        argv: &argv,
        prompt: &prompt,
        prompt_via: invocation.agent.prompt_via,
        prompt_file: &prompt_file,
        workdir: invocation.workdir,
        env: &env,
        timeout: invocation.agent.timeout(),
        kill_grace: invocation.agent.kill_grace(),
        output_format: invocation.agent.output_format,
        markers: invocation.markers,
        log: &invocation.run_dir.join("output.log"),
        echo: invocation.echo,
        limits: invocation.agent.limits(&invocation.budget),
        redactor,
        progress: invocation.echo.then(|| progress::Label {
            feature: invocation.runtime.feature_id.clone(),
            role: invocation.role,
            iteration: invocation.iteration,
            max_iterations: invocation.max_iterations,
        }),
    })
    .inspect(|run| {
        if run.output.entries_dropped > 0 {
            let warning = memory::dropped_entries_warning(run.output.entries_dropped);
            eprintln!("{}: warning: {warning}", invocation.role);
        }
    })
    .map_err(|error| {
        let hint = start_failure_hint(&error, invocation.prompt, &invocation.state.config());
        anyhow::Error::new(error).context(format!(
            "cannot start the agent {:?} ({}){hint}",
            invocation.agent.command[0], invocation.role
        ))
    })
}

/// The environment of the contract, plus the promise word for agents that want it.
fn environment(invocation: &RoleInvocation) -> Vec<(String, String)> {
    vec![
        (
            "HARNESS_FEATURE_ID".into(),
            invocation.runtime.feature_id.clone(),
        ),
        (
            "HARNESS_WORKDIR".into(),
            invocation.workdir.display().to_string(),
        ),
        (
            "HARNESS_STATE_DIR".into(),
            invocation.state.root().display().to_string(),
        ),
        (
            "HARNESS_RUN_ID".into(),
            invocation.runtime.run_id.to_string(),
        ),
        ("HARNESS_ROLE".into(), invocation.role.to_string()),
        ("HARNESS_ITERATION".into(), invocation.iteration.to_string()),
        (
            "HARNESS_COMPLETION_PROMISE".into(),
            invocation.promise.to_string(),
        ),
    ]
}

/// Writes `result.json` of a run directory.
pub fn write_result(run_dir: &Path, record: &impl Serialize) -> anyhow::Result<()> {
    let mut json = serde_json::to_vec_pretty(record)?;
    json.push(b'\n');
    write_atomic(&run_dir.join("result.json"), &json).context("cannot write result.json")
}

/// The most of a text agent's output read back for its answer (the end of `output.log`).
pub const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// The agent's answer: a structured agent's final answer; for a text agent, its whole output as
/// logged in `run_dir` (its last [`MAX_ANSWER_BYTES`]).
pub fn answer_text(
    run: &AgentRun,
    run_dir: &Path,
    format: crate::spec::config::OutputFormat,
) -> anyhow::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    if format != crate::spec::config::OutputFormat::Text {
        return Ok(run.output.answer().to_string());
    }
    let path = run_dir.join("output.log");
    let mut file = fs::open(&path, fs::Mode::Read)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(MAX_ANSWER_BYTES)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A hint for an agent that could not start, when the reason is known.
fn start_failure_hint(error: &std::io::Error, prompt: &str, config: &Path) -> String {
    if error.raw_os_error() == Some(libc::E2BIG) {
        format!(
            "\nhint: the prompt ({} bytes) is too long for one argument; set prompt_via: stdin or file in {}",
            prompt.len(),
            config.display()
        )
    } else {
        String::new()
    }
}

/// This process's peak resident memory, in KiB.
pub fn peak_rss_kb() -> Option<u64> {
    // One system call, where /proc/self/status costs an open, reads and a parse per iteration.
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given, and RUSAGE_SELF is always valid.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialised by the successful call above.
    let max_rss = u64::try_from(unsafe { usage.assume_init() }.ru_maxrss).ok()?;
    // Kilobytes on Linux, bytes on macOS.
    Some(if cfg!(target_os = "macos") {
        max_rss / 1024
    } else {
        max_rss
    })
}
