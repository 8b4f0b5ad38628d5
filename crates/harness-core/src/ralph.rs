//! The Ralph loop (seed 001), one step at a time: each worker invocation runs one fresh agent
//! process on one feature, decides with [`on_agent_stop`], and records everything on disk, so
//! run.sh can loop, be killed, and resume from the state alone.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::agent::{self, End, Invocation};
use crate::config::Config;
use crate::error::InputError;
use crate::exit_codes;
use crate::features::{Feature, FeatureId, FeatureList};
use crate::git;
use crate::layout::{HarnessHome, RunId, StateDir};
use crate::locks::{self, Lock};
use crate::memory::{self, RawEntry, Tag};
use crate::notes::{self, AttemptNote};
use crate::prompt::{completion_tag, RuntimeContext, WorkerPrompt};
use crate::role::Role;
use crate::run_state::{Outcome, RunState, Status};
use crate::time::{self, Timestamp};

/// What happens after an agent stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The promise is in the answer of an agent that exited cleanly: the feature is complete
    /// (provisional, once a validator checks it).
    Complete,
    /// Not complete and iterations remain: run a fresh agent.
    Restart,
    /// Not complete and the guardrail is reached: the feature failed (exit 2).
    GiveUp,
    /// Interrupted: stop here and leave the feature resumable.
    Halt,
}

/// The decision after every invocation. A non-zero exit, a crash or a timeout never completes,
/// even with the promise printed: only a clean exit with the promise in the answer does.
pub fn on_agent_stop(
    end: End,
    promise_found: bool,
    iteration_count: u32,
    max_iterations: u32,
) -> Decision {
    match end {
        End::Interrupted(_) => Decision::Halt,
        End::Exited(0) if promise_found => Decision::Complete,
        _ if iteration_count < max_iterations => Decision::Restart,
        _ => Decision::GiveUp,
    }
}

/// How the attempt is recorded, from how the agent ended.
pub fn outcome_of(end: End, promise_found: bool) -> Outcome {
    match end {
        End::Exited(0) if promise_found => Outcome::Completed,
        End::Exited(0) => Outcome::NoPromise,
        End::Exited(_) => Outcome::AgentError,
        End::Signaled(_) => Outcome::Crashed,
        End::TimedOut => Outcome::TimedOut,
        End::Interrupted(_) => Outcome::Interrupted,
    }
}

/// One worker invocation, as run.sh (or a user) asks for it.
#[derive(Debug, Clone)]
pub struct WorkerRequest {
    /// The project directory.
    pub workdir: PathBuf,
    /// Its `.harness/`.
    pub state: StateDir,
    /// The harness install (roles, identity).
    pub home: HarnessHome,
    /// The feature.
    pub feature: FeatureId,
    /// The run id run.sh made; generated when absent.
    pub run_id: Option<RunId>,
    /// `--max-iterations`: sets the feature's guardrail.
    pub max_iterations: Option<u32>,
    /// run.sh holds the feature lock for its whole run; a worker run by hand takes it itself.
    pub caller_holds_feature_lock: bool,
    /// Copy the agent's output to stdout.
    pub echo: bool,
    /// `PATH`, to find the agent.
    pub path_var: Option<std::ffi::OsString>,
}

/// What a worker invocation ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    /// The exit code (see [`crate::exit_codes`]).
    pub exit_code: u8,
    /// One line for the user.
    pub message: String,
}

/// The result.json of one invocation.
#[derive(Debug, Serialize)]
struct ResultRecord<'a> {
    run_id: &'a str,
    feature_id: &'a str,
    role: Role,
    iteration: u32,
    max_iterations: u32,
    started_at: Timestamp,
    ended_at: Timestamp,
    duration_ms: u128,
    outcome: Outcome,
    exit_code: Option<i32>,
    signal: Option<i32>,
    promise_found: bool,
    decision: Decision,
    turns: Option<u64>,
    commits: Option<u64>,
    tokens: Option<u64>,
    cost_usd: Option<f64>,
    output_bytes: u64,
    memory_entries: usize,
    memory_entries_dropped: usize,
    log_error: Option<&'a str>,
    /// The worker's own peak memory, so a flood test can check it stayed bounded.
    worker_peak_rss_kb: Option<u64>,
}

/// What an iteration needs from the user's files, checked before anything changes.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// config.yaml.
    pub config: Config,
    /// The feature's spec.
    pub feature: Feature,
    /// The agent program, found.
    pub program: PathBuf,
}

/// Reads and checks config.yaml, features.yaml, the feature and the agent command: every input
/// error surfaces here, before any state is written.
pub fn check_inputs(
    workdir: &Path,
    state_dir: &StateDir,
    feature: &FeatureId,
    path_var: Option<&std::ffi::OsStr>,
) -> Result<Inputs, InputError> {
    state_dir.require_initialised()?;
    let config = Config::load(&state_dir.config())?;
    let features = FeatureList::load(&state_dir.features())?;
    let feature = features.require(feature, &state_dir.features())?.clone();
    let program = agent::resolve_program(
        &config.agent.command[0],
        workdir,
        path_var,
        &state_dir.config(),
    )?;
    Ok(Inputs {
        config,
        feature,
        program,
    })
}

/// Runs one iteration of the Ralph loop on `request.feature`.
pub fn run_worker_iteration(request: &WorkerRequest) -> anyhow::Result<WorkerReport> {
    let state_dir = &request.state;
    let Inputs {
        config,
        feature,
        program,
    } = check_inputs(
        &request.workdir,
        state_dir,
        &request.feature,
        request.path_var.as_deref(),
    )?;
    let role_prompt_path = request.home.role_prompt(Role::Worker);
    let role_prompt = memory::read_layer(&role_prompt_path)
        .with_context(|| format!("cannot read {}", role_prompt_path.display()))?
        .ok_or_else(|| {
            InputError::in_file(
                &role_prompt_path,
                "the worker's role prompt is missing or empty",
            )
            .with_hint("set HARNESS_HOME to the harness install (the directory with run.sh)")
        })?;

    let started_at = time::now();
    let holder = locks::describe_holder(
        std::process::id(),
        &format!("worker {}", feature.id),
        &time::format(started_at),
    );
    let _feature_lock = if request.caller_holds_feature_lock {
        None
    } else {
        Some(Lock::try_acquire(
            &state_dir.feature_lock(&feature.id),
            feature.id.as_str(),
            &holder,
        )?)
    };
    // Held even under run.sh: if run.sh is killed while this worker goes on, a second run.sh
    // must not start a second agent on the same feature.
    let _invocation_lock = Lock::try_acquire(
        &state_dir.invocation_lock(&feature.id),
        feature.id.as_str(),
        &holder,
    )?;

    let state_path = state_dir.run_state(&feature.id);
    let loaded = RunState::load(&state_path)?;
    let mut state = loaded.clone().unwrap_or_else(|| {
        RunState::new(
            feature.id.clone(),
            config.max_iterations,
            &config.completion_promise,
            started_at,
        )
    });
    state.recover_interrupted(started_at);
    if let Some(max_iterations) = request.max_iterations {
        if max_iterations == 0 {
            return Err(InputError::new("--max-iterations must be at least 1").into());
        }
        state.set_max_iterations(max_iterations, started_at);
    }
    if let Some(report) = refuse_to_start(&mut state, started_at) {
        // A feature that is simply done is left byte for byte as it was.
        if loaded.as_ref() != Some(&state) {
            state
                .save(&state_path)
                .context("cannot write the run state")?;
        }
        return Ok(report);
    }

    let run_id = match &request.run_id {
        Some(run_id) => {
            if state_dir.run_dir(&feature.id, run_id).exists() {
                return Err(InputError::new(format!(
                    "run {run_id} of {} already exists; a run directory is never reused",
                    feature.id
                ))
                .into());
            }
            run_id.clone()
        }
        None => RunId::generate(started_at.timestamp(), Role::Worker, &feature.id, |id| {
            state_dir
                .run_dir(
                    &feature.id,
                    &RunId::parse(id).expect("generated ids are valid"),
                )
                .exists()
        }),
    };
    let iteration = state.iteration_count + 1;
    let notes_text = notes::read(state_dir, &feature.id).context("cannot read the notes")?;
    let summary =
        memory::read_memory_layer(&state_dir.summary()).context("cannot read summary.md")?;
    let identity = memory::read_memory_layer(&request.home.identity(Role::Worker))
        .context("cannot read the worker's identity file")?;
    let runtime = RuntimeContext {
        feature_id: feature.id.to_string(),
        workdir: request.workdir.clone(),
        state_dir: state_dir.root().to_path_buf(),
        run_id: run_id.clone(),
    };
    let prompt = WorkerPrompt {
        runtime: &runtime,
        role: &role_prompt,
        identity: identity.as_deref(),
        feature: &feature,
        iteration,
        max_iterations: state.max_iterations,
        promise: &state.completion_promise,
        notes: notes_text.as_deref(),
        summary: summary.as_deref(),
    }
    .render();

    let run_dir = state_dir.run_dir(&feature.id, &run_id);
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create {}", run_dir.display()))?;
    let prompt_path = run_dir.join("prompt.md");
    crate::atomic::write_atomic(&prompt_path, prompt.as_bytes())
        .with_context(|| format!("cannot write {}", prompt_path.display()))?;
    state.begin_iteration(run_id.as_str(), started_at);
    state
        .save(&state_path)
        .context("cannot write the run state")?;
    eprintln!(
        "worker: {} iteration {iteration}/{} (run {run_id})",
        feature.id, state.max_iterations
    );

    let head_before = git::head(&request.workdir);
    let mut argv = config.agent.command.clone();
    argv[0] = program.to_string_lossy().into_owned();
    let env = agent_env(
        request,
        &runtime,
        Role::Worker,
        iteration,
        &state.completion_promise,
    );
    let tag = completion_tag(&state.completion_promise);
    let run = agent::run(&Invocation {
        argv: &argv,
        prompt: &prompt,
        prompt_via: config.agent.prompt_via,
        prompt_file: &prompt_path,
        workdir: &request.workdir,
        env: &env,
        timeout: config.agent.timeout(),
        kill_grace: config.agent.kill_grace(),
        output_format: config.agent.output_format,
        promise_tag: &tag,
        log: &run_dir.join("output.log"),
        echo: request.echo,
    });
    let run = match run {
        Ok(run) => run,
        Err(error) => {
            // The iteration was counted; record why it did not happen rather than leave it
            // looking like a killed harness.
            if let Some(attempt) = state.attempt_mut(run_id.as_str()) {
                attempt.outcome = Outcome::AgentError;
                attempt.ended_at = Some(time::now());
            }
            state.status = Status::Pending;
            state
                .save(&state_path)
                .context("cannot write the run state")?;
            let hint = if error.raw_os_error() == Some(libc::E2BIG) {
                format!(
                    "\nhint: the prompt ({} bytes) is too long for one argument; set prompt_via: stdin or file in {}",
                    prompt.len(),
                    state_dir.config().display()
                )
            } else {
                String::new()
            };
            return Err(anyhow::Error::new(error).context(format!(
                "cannot start the agent {:?}{hint}",
                config.agent.command[0]
            )));
        }
    };
    let commits = git::new_commits(&request.workdir, &head_before);
    let ended_at = time::now();

    let output = &run.output;
    let outcome = outcome_of(run.end, output.promise_found);
    let decision = on_agent_stop(
        run.end,
        output.promise_found,
        state.iteration_count,
        state.max_iterations,
    );
    let outcome_text = describe_end(run.end, outcome, config.agent.timeout_secs);
    let max = state.max_iterations;
    let message = match decision {
        Decision::Complete => format!("{} done on iteration {iteration}/{max}", feature.id),
        Decision::Restart => format!(
            "{} iteration {iteration}/{max}: {outcome_text}; {} left",
            feature.id,
            max - iteration
        ),
        Decision::GiveUp => format!(
            "{} failed: iteration {iteration}/{max}: {outcome_text}, and max_iterations is reached",
            feature.id
        ),
        Decision::Halt => format!(
            "{} iteration {iteration}/{max} {outcome_text}; run it again to resume",
            feature.id
        ),
    };

    let mut entries: Vec<RawEntry> = output
        .entries
        .iter()
        .map(|(tag, text)| RawEntry {
            time: ended_at,
            role: Role::Worker,
            feature: Some(feature.id.clone()),
            tag: *tag,
            text: text.clone(),
        })
        .collect();
    entries.push(RawEntry {
        time: ended_at,
        role: Role::Worker,
        feature: Some(feature.id.clone()),
        tag: Tag::Outcome,
        text: memory::one_line(&message),
    });
    memory::append_raw(state_dir, &entries).context("cannot append to raw.md")?;

    let note = AttemptNote {
        attempt: iteration,
        role: Role::Worker,
        time: ended_at,
        turns: output.turns,
        commits,
        outcome: &outcome_text,
        output: &output.tail,
    }
    .render();
    notes::append(state_dir, &feature.id, &note).context("cannot write the notes")?;

    if let Some(attempt) = state.attempt_mut(run_id.as_str()) {
        attempt.ended_at = Some(ended_at);
        attempt.outcome = outcome;
        (attempt.exit_code, attempt.signal) = match run.end {
            End::Exited(code) => (Some(code), None),
            End::Signaled(signal) => (None, Some(signal)),
            _ => (None, None),
        };
        attempt.promise_found = output.promise_found;
        attempt.turns = output.turns;
        attempt.commits = commits;
        attempt.tokens = output.tokens;
        attempt.cost_usd = output.cost_usd;
        attempt.output_bytes = output.bytes;
    }
    state.updated_at = ended_at;
    let exit_code = match decision {
        Decision::Complete => {
            state.status = Status::Done;
            state.finished_at = Some(ended_at);
            state.reason = None;
            exit_codes::DONE
        }
        // Ctrl-C that came after the agent ended still stops the loop (the state is whole).
        Decision::Restart if crate::signals::received().is_some() => {
            state.status = Status::Pending;
            exit_codes::INTERRUPTED
        }
        Decision::Restart => {
            state.status = Status::Running;
            exit_codes::CONTINUE
        }
        Decision::GiveUp => {
            state.status = Status::Failed;
            state.finished_at = Some(ended_at);
            state.reason = Some(format!("max_iterations ({max}) reached without completion"));
            exit_codes::GUARDRAIL
        }
        Decision::Halt => {
            state.status = Status::Pending;
            exit_codes::INTERRUPTED
        }
    };

    let record = ResultRecord {
        run_id: run_id.as_str(),
        feature_id: feature.id.as_str(),
        role: Role::Worker,
        iteration,
        max_iterations: max,
        started_at,
        ended_at,
        duration_ms: run.duration.as_millis(),
        outcome,
        exit_code: state.attempts.last().and_then(|a| a.exit_code),
        signal: state.attempts.last().and_then(|a| a.signal),
        promise_found: output.promise_found,
        decision,
        turns: output.turns,
        commits,
        tokens: output.tokens,
        cost_usd: output.cost_usd,
        output_bytes: output.bytes,
        memory_entries: output.entries.len(),
        memory_entries_dropped: output.entries_dropped,
        log_error: run.log_error.as_deref(),
        worker_peak_rss_kb: peak_rss_kb(),
    };
    let mut json = serde_json::to_vec_pretty(&record)?;
    json.push(b'\n');
    crate::atomic::write_atomic(&run_dir.join("result.json"), &json)
        .context("cannot write result.json")?;
    state
        .save(&state_path)
        .context("cannot write the run state")?;
    if decision == Decision::Complete {
        notes::remove(state_dir, &feature.id).context("cannot remove the notes")?;
    }
    if let Some(error) = &run.log_error {
        eprintln!("worker: warning: {error}");
    }
    Ok(WorkerReport { exit_code, message })
}

/// Before an iteration: a feature that is finished, failed or out of iterations does not start.
fn refuse_to_start(state: &mut RunState, now: Timestamp) -> Option<WorkerReport> {
    let id = state.feature_id.clone();
    let report = |exit_code, message: String| Some(WorkerReport { exit_code, message });
    match state.status {
        Status::Done => report(exit_codes::DONE, format!("{id} is already done")),
        Status::Provisional => report(
            exit_codes::DONE,
            format!("{id} is provisional: it waits for the validator"),
        ),
        Status::Blocked => report(
            exit_codes::FAILED,
            format!(
                "{id} is blocked: {}",
                state
                    .reason
                    .clone()
                    .unwrap_or_else(|| "no reason recorded".into())
            ),
        ),
        _ if state.iteration_count >= state.max_iterations => {
            if state.status != Status::Failed {
                state.status = Status::Failed;
                state.finished_at = Some(now);
                state.reason = Some(format!(
                    "max_iterations ({}) reached without completion",
                    state.max_iterations
                ));
                state.updated_at = now;
            }
            report(
                exit_codes::GUARDRAIL,
                format!(
                    "{id} has used all {} of its iterations\nhint: continue with `./run.sh {id} --max-iterations {}`",
                    state.max_iterations,
                    state.max_iterations + 5
                ),
            )
        }
        _ => None,
    }
}

/// The environment of the contract, plus the promise word for agents that want it.
fn agent_env(
    request: &WorkerRequest,
    runtime: &RuntimeContext,
    role: Role,
    iteration: u32,
    promise: &str,
) -> Vec<(String, String)> {
    vec![
        ("HARNESS_FEATURE_ID".into(), runtime.feature_id.clone()),
        (
            "HARNESS_WORKDIR".into(),
            request.workdir.display().to_string(),
        ),
        (
            "HARNESS_STATE_DIR".into(),
            request.state.root().display().to_string(),
        ),
        ("HARNESS_RUN_ID".into(), runtime.run_id.to_string()),
        ("HARNESS_ROLE".into(), role.to_string()),
        ("HARNESS_ITERATION".into(), iteration.to_string()),
        ("HARNESS_COMPLETION_PROMISE".into(), promise.to_string()),
    ]
}

/// How the agent ended, in words for notes and raw.md.
pub fn describe_end(end: End, outcome: Outcome, timeout_secs: u64) -> String {
    match end {
        End::Exited(0) => outcome.describe().to_string(),
        End::Exited(code) => format!("agent exited with code {code}"),
        End::Signaled(signal) => format!("agent crashed ({})", crate::signals::name(signal)),
        End::TimedOut => format!("agent timed out after {timeout_secs} s and was stopped"),
        End::Interrupted(signal) => {
            format!("interrupted by {}", crate::signals::name(signal))
        }
    }
}

/// This process's peak resident memory (Linux), in KiB.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promise_from_a_clean_exit_completes() {
        assert_eq!(
            on_agent_stop(End::Exited(0), true, 3, 10),
            Decision::Complete
        );
        // Even on the last iteration.
        assert_eq!(
            on_agent_stop(End::Exited(0), true, 10, 10),
            Decision::Complete
        );
    }

    #[test]
    fn no_promise_restarts_under_the_guardrail_and_gives_up_at_it() {
        assert_eq!(
            on_agent_stop(End::Exited(0), false, 1, 10),
            Decision::Restart
        );
        assert_eq!(
            on_agent_stop(End::Exited(0), false, 9, 10),
            Decision::Restart
        );
        assert_eq!(
            on_agent_stop(End::Exited(0), false, 10, 10),
            Decision::GiveUp
        );
        assert_eq!(on_agent_stop(End::Exited(0), false, 1, 1), Decision::GiveUp);
    }

    #[test]
    fn failures_never_complete_even_with_the_promise() {
        for end in [End::Exited(1), End::Signaled(6), End::TimedOut] {
            assert_eq!(
                on_agent_stop(end, true, 2, 10),
                Decision::Restart,
                "{end:?}"
            );
            assert_eq!(
                on_agent_stop(end, true, 10, 10),
                Decision::GiveUp,
                "{end:?}"
            );
        }
    }

    #[test]
    fn an_interrupt_halts_whatever_else_is_true() {
        assert_eq!(
            on_agent_stop(End::Interrupted(2), true, 10, 10),
            Decision::Halt
        );
        assert_eq!(
            on_agent_stop(End::Interrupted(15), false, 1, 10),
            Decision::Halt
        );
    }

    #[test]
    fn outcomes_follow_the_end() {
        assert_eq!(outcome_of(End::Exited(0), true), Outcome::Completed);
        assert_eq!(outcome_of(End::Exited(0), false), Outcome::NoPromise);
        assert_eq!(outcome_of(End::Exited(3), true), Outcome::AgentError);
        assert_eq!(outcome_of(End::Signaled(9), false), Outcome::Crashed);
        assert_eq!(outcome_of(End::TimedOut, false), Outcome::TimedOut);
        assert_eq!(outcome_of(End::Interrupted(2), false), Outcome::Interrupted);
    }

    #[test]
    fn a_used_up_feature_does_not_start() {
        let now = time::now();
        let mut state = RunState::new(FeatureId::parse("F-1").unwrap(), 2, "P", now);
        assert_eq!(refuse_to_start(&mut state, now), None);
        state.iteration_count = 2;
        let report = refuse_to_start(&mut state, now).unwrap();
        assert_eq!(report.exit_code, exit_codes::GUARDRAIL);
        assert_eq!(state.status, Status::Failed);
        assert!(report.message.contains("--max-iterations 7"));
        state.status = Status::Done;
        assert_eq!(
            refuse_to_start(&mut state, now).unwrap().exit_code,
            exit_codes::DONE
        );
    }
}
