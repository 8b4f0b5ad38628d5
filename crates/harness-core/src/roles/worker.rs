//! The Ralph loop (seed 001), one step at a time: each worker invocation runs one fresh agent
//! process on one feature, decides with [`on_agent_stop`], and records everything on disk, so
//! run.sh can loop, be killed, and resume from the state alone.

use anyhow::Context;
use serde::Serialize;

use crate::agent::End;
use crate::base::error::InputError;
use crate::base::exit_codes;
use crate::base::git;
use crate::base::time::{self, Timestamp};
use crate::mission::worktree;
use crate::roles::invoke;
use crate::roles::prompt::{completion_tag, WorkerPrompt};
use crate::roles::session::{self, AgentCall, FeatureRequest};
use crate::spec::config::AgentConfig;
use crate::spec::layout::RunId;
use crate::spec::role::Role;
use crate::state::budget;
use crate::state::memory::{self, Tag};
use crate::state::notes::{self, AttemptNote};
use crate::state::run_state::{Outcome, RunState, Status};
use crate::state::usage::UsageRecord;

/// What happens after an agent stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The promise is in the answer of an agent that finished by itself: the feature is
    /// complete (provisional, when a validator checks it).
    Complete,
    /// Not complete and iterations remain: run a fresh agent.
    Restart,
    /// Not complete and the guardrail is reached: the feature failed (exit 2).
    GiveUp,
    /// A budget ran out: stop (exit 2), resumable once the budget is raised.
    OverBudget,
    /// Several iterations in a row changed nothing: stop as stalled (exit 2), for a replan.
    Stalled,
    /// The agent hit a rate or usage limit: wait and try again, not counting the iteration.
    WaitForLimit,
    /// Interrupted: stop here and leave the feature resumable.
    Halt,
}

/// The decision after every invocation. A non-zero exit, a crash or a timeout never completes,
/// even with the promise printed: only an agent that finished by itself (exit 0, or lingering
/// after its final answer) with the promise in its answer does. A context handoff is an
/// iteration like any other.
pub fn on_agent_stop(
    end: End,
    promise_found: bool,
    iteration_count: u32,
    max_iterations: u32,
) -> Decision {
    match end {
        End::Interrupted(_) => Decision::Halt,
        _ if end.is_clean() && promise_found => Decision::Complete,
        End::OverBudget(_) | End::OverCost(_) | End::OutOfTime => Decision::OverBudget,
        _ if iteration_count < max_iterations => Decision::Restart,
        _ => Decision::GiveUp,
    }
}

/// What the guardrails that look across attempts see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Streaks {
    /// This attempt hit a rate or usage limit.
    pub rate_limited: bool,
    /// Rate-limited attempts in a row, this one included.
    pub limited_in_a_row: u32,
    /// Worker attempts in a row (this one included) that changed nothing in the working tree
    /// and delivered no promise; 0 without git.
    pub unchanged_in_a_row: u32,
}

/// Refines [`on_agent_stop`] with the guardrails over several attempts: a rate limit is waited
/// out (up to `max_waits` times in a row) instead of burning an iteration, and `stall_after`
/// iterations in a row that changed nothing stop the feature as stalled (0: never).
pub fn apply_streaks(
    decision: Decision,
    streaks: Streaks,
    max_waits: u32,
    stall_after: u32,
) -> Decision {
    match decision {
        Decision::Complete | Decision::Halt | Decision::OverBudget => decision,
        _ if streaks.rate_limited && streaks.limited_in_a_row <= max_waits => {
            Decision::WaitForLimit
        }
        _ if stall_after > 0 && streaks.unchanged_in_a_row >= stall_after => Decision::Stalled,
        _ => decision,
    }
}

/// How the attempt is recorded, from how the agent ended.
pub fn outcome_of(end: End, promise_found: bool) -> Outcome {
    match end {
        _ if end.is_clean() && promise_found => Outcome::Completed,
        End::Exited(0) | End::Lingered => Outcome::NoPromise,
        End::Exited(_) => Outcome::AgentError,
        End::Signaled(_) => Outcome::Crashed,
        End::TimedOut | End::IdleTimedOut => Outcome::TimedOut,
        End::Handoff(_) => Outcome::Handoff,
        End::OverBudget(_) | End::OverCost(_) | End::OutOfTime => Outcome::OverBudget,
        End::Interrupted(_) => Outcome::Interrupted,
    }
}

/// One worker invocation, as run.sh (or a user) asks for it.
#[derive(Debug, Clone)]
pub struct WorkerRequest {
    /// The feature, the places, the run id.
    pub feature: FeatureRequest,
    /// `--max-iterations`: sets the feature's guardrail.
    pub max_iterations: Option<u32>,
}

/// What a role invocation ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleReport {
    /// The exit code (see [`crate::base::exit_codes`]).
    pub exit_code: u8,
    /// One line for the user.
    pub message: String,
}

/// The result.json of one worker invocation.
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
    /// Whether the attempt changed the working tree (commits, files); `None` without git.
    tree_changed: Option<bool>,
    /// The normalised usage record.
    usage: Option<&'a UsageRecord>,
    /// The worker's own peak memory, so a flood test can check it stayed bounded.
    worker_peak_rss_kb: Option<u64>,
}

/// What one iteration leaves to the next when one worker process runs them in turn
/// ([`run_worker_loop`]): what is still true of the disk, and the open session. The inputs are
/// re-read every iteration and parsed again when their bytes changed, the run states' spending
/// is re-read when a file changed, the working tree as the last attempt left it stands for the
/// tree before the next one (the harness itself changes nothing there in between), and the next
/// run id is looked for after the last one. After an attempt that ends with "continue" the
/// session stays open, its locks never released: its run state is then the truth, and the
/// attempt's end is written together with the next attempt's start.
#[derive(Debug, Default)]
pub struct Carry {
    inputs: session::InputMemo,
    spent: budget::SpentMemo,
    tree: Option<git::Tree>,
    run_id: Option<RunId>,
    session: Option<session::Session>,
}

/// Runs one iteration of the Ralph loop on the requested feature.
pub fn run_worker_iteration(request: &WorkerRequest) -> anyhow::Result<RoleReport> {
    let mut carry = Carry::default();
    let result = run_iteration(request, &mut carry);
    finish(&mut carry, result)
}

/// Runs iterations of the Ralph loop on the requested feature in this one process, each exactly
/// as [`run_worker_iteration`] would (inputs and layers re-read from disk, a fresh agent,
/// everything recorded), until one ends with anything but "continue": the feature is complete or
/// provisional, a guardrail stopped it, or an interrupt came. Spares a process start per
/// iteration, the parsing of inputs that did not change, and (the feature's locks being held
/// throughout, see [`Carry`]) a write and a read of the run state.
pub fn run_worker_loop(request: &WorkerRequest) -> anyhow::Result<RoleReport> {
    let mut carry = Carry::default();
    let mut request = request.clone();
    let parent = std::os::unix::process::parent_id();
    loop {
        // Every ending but "continue" has written the kept session's state (see run_iteration).
        let report = run_iteration(&request, &mut carry)?;
        if report.exit_code != exit_codes::CONTINUE {
            return Ok(report);
        }
        // Whoever started the loop (run.sh) is gone, killed: no one supervises it any more, so
        // it ends with this iteration, as a worker run once per iteration would.
        if std::os::unix::process::parent_id() != parent {
            let report = RoleReport {
                exit_code: exit_codes::INTERRUPTED,
                message: format!(
                    "{}; the process that started this worker is gone, so it stops here (run it again to resume)",
                    report.message
                ),
            };
            return finish(&mut carry, Ok(report));
        }
        if let Some(signal) = crate::base::signals::received() {
            let report = RoleReport {
                exit_code: exit_codes::INTERRUPTED,
                message: format!(
                    "{} interrupted by {}",
                    request.feature.feature,
                    crate::base::signals::name(signal)
                ),
            };
            return finish(&mut carry, Ok(report));
        }
        eprintln!("worker: {}", report.message);
        // The run id given is the first iteration's; each later one makes its own.
        request.feature.run_id = None;
    }
}

/// One iteration, on the session `carry` kept open (see [`Carry`]) or a new one. An attempt that
/// ends with "continue" leaves its end to be written with the next attempt's start, its session
/// kept in `carry`; any other ending writes it.
fn run_iteration(request: &WorkerRequest, carry: &mut Carry) -> anyhow::Result<RoleReport> {
    let opened = session::open_or_resume(
        &mut carry.session,
        &mut carry.inputs,
        &request.feature,
        Role::Worker,
    );
    let mut session = match opened {
        Ok(session) => session,
        Err(error) => return finish(carry, Err(error)),
    };
    let result = iterate(request, &mut session, carry);
    if session.pending {
        carry.session = Some(session);
    }
    match result {
        Ok(report) if report.exit_code == exit_codes::CONTINUE => Ok(report),
        other => finish(carry, other),
    }
}

/// `result`, once the state of the session `carry` kept (if any) is written; the iteration's
/// own error comes first.
fn finish(carry: &mut Carry, result: anyhow::Result<RoleReport>) -> anyhow::Result<RoleReport> {
    let written = carry.session.take().map_or(Ok(()), |mut kept| kept.save());
    match (result, written) {
        (Ok(report), Ok(())) => Ok(report),
        (Ok(_), Err(error)) => Err(error),
        (Err(error), written) => {
            if let Err(also) = written {
                eprintln!("worker: error: {also:#}");
            }
            Err(error)
        }
    }
}

/// The iteration itself, on the open `session`: prompt, agent, decision, records.
fn iterate(
    request: &WorkerRequest,
    session: &mut session::Session,
    carry: &mut Carry,
) -> anyhow::Result<RoleReport> {
    let feature_request = &request.feature;
    let state_dir = &feature_request.state;
    let started_at = session.started_at;
    if let Some(max_iterations) = request.max_iterations {
        if max_iterations == 0 {
            return Err(InputError::new("--max-iterations must be at least 1").into());
        }
        session.state.set_max_iterations(max_iterations, started_at);
    }
    if let Some(report) = refuse_to_start(&mut session.state, started_at) {
        session.save_if_changed()?;
        if session.state.status == Status::Done {
            // What a validator killed after its verdict left (see schedule::remove_notes_of_done).
            notes::remove(state_dir, &feature_request.feature)
                .context("cannot remove the notes")?;
        }
        return Ok(report);
    }
    let remaining = match session.budget_left(state_dir, &mut carry.spent)? {
        Ok(remaining) => remaining,
        Err(report) => return Ok(report),
    };

    let feature = session.inputs.feature.clone();
    let config = session.inputs.config.clone();
    let agent_config = config.agent_for(Role::Worker);
    let run_id = session.run_id(feature_request, carry.run_id.as_ref());
    carry.run_id = Some(run_id.clone());
    let iteration = session.state.iteration_count + 1;
    let layers = session.layers(feature_request)?;
    let runtime = session.runtime(feature_request, &run_id);
    let prompt = WorkerPrompt {
        runtime: &runtime,
        role: &session.role_prompt,
        identity: layers.identity.as_deref(),
        feature: &feature,
        iteration,
        max_iterations: session.state.max_iterations,
        promise: &session.state.completion_promise,
        notes: layers.notes.as_deref(),
        summary: layers.summary.as_deref(),
    }
    .render();

    let run_dir = state_dir.run_dir(&feature.id, &run_id);
    let markers = [completion_tag(&session.state.completion_promise)];
    let call = AgentCall {
        run_id: &run_id,
        runtime: &runtime,
        run_dir: &run_dir,
        prompt: &prompt,
        markers: &markers,
        budget: remaining,
    };
    session.begin(&call)?;
    eprintln!(
        "worker: {} iteration {iteration}/{} (run {run_id})",
        feature.id, session.state.max_iterations
    );
    let tree_before = carry
        .tree
        .take()
        .unwrap_or_else(|| git::observe(&feature_request.workdir));
    let run = session.run_agent(feature_request, call)?;
    let tree_after = git::observe(&feature_request.workdir);
    // Without a repository before, commits and changes are unknown whatever happened since.
    let commits = git::new_commits_between(
        &feature_request.workdir,
        &tree_before.head,
        &tree_after.head,
    );
    let tree_changed = tree_before
        .fingerprint
        .zip(tree_after.fingerprint)
        .map(|(before, after)| before != after);
    let ended_at = time::now();

    let output = &run.output;
    let promise_found = output.found(0);
    let outcome = outcome_of(run.end, promise_found);
    let state = &mut session.state;
    let streaks = Streaks {
        rate_limited: output.rate_limited.is_some(),
        limited_in_a_row: 1 + state
            .attempts
            .iter()
            .rev()
            .skip(1)
            .take_while(|a| a.role == Role::Worker && a.outcome == Outcome::RateLimited)
            .count() as u32,
        unchanged_in_a_row: if tree_changed == Some(false) && !promise_found {
            1 + state
                .attempts
                .iter()
                .rev()
                .skip(1)
                .filter(|a| a.role == Role::Worker)
                .take_while(|a| a.tree_changed == Some(false) && !a.promise_found)
                .count() as u32
        } else {
            0
        },
    };
    let decision = apply_streaks(
        on_agent_stop(
            run.end,
            promise_found,
            state.iteration_count,
            state.max_iterations,
        ),
        streaks,
        config.rate_limit.max_waits,
        config.stall_iterations,
    );
    let outcome = if decision == Decision::WaitForLimit {
        Outcome::RateLimited
    } else {
        outcome
    };
    let outcome_text = describe_end(run.end, outcome, agent_config);
    let max = state.max_iterations;
    let message = match decision {
        Decision::Complete if config.validate => format!(
            "{} iteration {iteration}/{max} delivered the promise; the validator checks it next",
            feature.id
        ),
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
        Decision::OverBudget => format!(
            "{} iteration {iteration}/{max} {outcome_text}; raise the budget in config.yaml to go on",
            feature.id
        ),
        Decision::Stalled => format!(
            "{} stalled: {} iterations in a row changed nothing in the working tree; re-break it with `./run.sh replan {}`",
            feature.id, streaks.unchanged_in_a_row, feature.id
        ),
        Decision::WaitForLimit => format!(
            "{} iteration {iteration}/{max} hit a rate or usage limit; waiting {} s before trying again (wait {} of {}; not counted as an iteration)",
            feature.id, config.rate_limit.wait_secs, streaks.limited_in_a_row, config.rate_limit.max_waits
        ),
    };
    let outcome_text = match decision {
        Decision::Stalled => format!("{outcome_text}\nStalled: {message}"),
        Decision::WaitForLimit => format!(
            "{outcome_text}: {}",
            output.rate_limited.as_deref().unwrap_or("")
        ),
        _ => outcome_text,
    };

    let mut entries = output.entries.clone();
    if decision == Decision::Stalled {
        // Said as a failure mode, so that the curator and the planner see it.
        entries.push((Tag::Fail, memory::one_line(&message)));
    }
    memory::append_raw(
        state_dir,
        &memory::entries_with_outcome(&entries, ended_at, Role::Worker, &feature.id, &message),
    )
    .context("cannot append to raw.md")?;

    let note = AttemptNote {
        attempt: iteration,
        role: Role::Worker,
        time: ended_at,
        turns: output.usage.turns,
        commits,
        outcome: &outcome_text,
        output: &output.tail,
    }
    .render();
    notes::append(state_dir, &feature.id, &note).context("cannot write the notes")?;

    if let Some(attempt) = state.attempt_mut(run_id.as_str()) {
        attempt.record_end(&run, outcome, ended_at, agent_config.prices.as_ref());
        attempt.promise_found = promise_found;
        attempt.commits = commits;
        attempt.tree_changed = tree_changed;
    }
    state.updated_at = ended_at;
    let exit_code = match decision {
        Decision::Complete if config.validate => {
            state.status = Status::Provisional;
            exit_codes::PROVISIONAL
        }
        Decision::Complete => {
            if worktree::land(state, state_dir, ended_at)? {
                exit_codes::DONE
            } else {
                exit_codes::FAILED
            }
        }
        // Ctrl-C that came after the agent ended still stops the loop (the state is whole).
        Decision::Restart if crate::base::signals::received().is_some() => {
            state.status = Status::Pending;
            exit_codes::INTERRUPTED
        }
        Decision::Restart => {
            state.status = Status::Running;
            exit_codes::CONTINUE
        }
        Decision::GiveUp => {
            state.fail(
                format!("max_iterations ({max}) reached without completion"),
                ended_at,
            );
            exit_codes::GUARDRAIL
        }
        Decision::Halt => {
            state.status = Status::Pending;
            exit_codes::INTERRUPTED
        }
        Decision::OverBudget => {
            state.status = Status::Pending;
            state.reason = Some(outcome_text.clone());
            exit_codes::GUARDRAIL
        }
        Decision::Stalled => {
            state.fail(
                format!(
                    "stalled: {} iterations in a row changed nothing in the working tree",
                    streaks.unchanged_in_a_row
                ),
                ended_at,
            );
            exit_codes::GUARDRAIL
        }
        Decision::WaitForLimit => {
            // Not an iteration: the next one gets this number again.
            state.iteration_count -= 1;
            state.status = Status::Pending;
            exit_codes::CONTINUE
        }
    };

    let last = state.attempts.last();
    invoke::write_result(
        &run_dir,
        &ResultRecord {
            run_id: run_id.as_str(),
            feature_id: feature.id.as_str(),
            role: Role::Worker,
            iteration,
            max_iterations: max,
            started_at,
            ended_at,
            duration_ms: run.duration.as_millis(),
            outcome,
            exit_code: last.and_then(|a| a.exit_code),
            signal: last.and_then(|a| a.signal),
            promise_found,
            decision,
            turns: output.usage.turns,
            commits,
            tokens: output.usage.total_tokens(),
            cost_usd: output.usage.cost_usd,
            output_bytes: output.bytes,
            memory_entries: output.entries.len(),
            memory_entries_dropped: output.entries_dropped,
            log_error: run.log_error.as_deref(),
            tree_changed,
            usage: last.and_then(|a| a.usage.as_ref()),
            worker_peak_rss_kb: invoke::peak_rss_kb(),
        },
    )?;
    if decision == Decision::Restart && exit_code == exit_codes::CONTINUE {
        // Written with the next attempt's start, or when the loop ends: one write, not two.
        session.pending = true;
    } else {
        session.save()?;
    }
    if session.state.status == Status::Done {
        notes::remove(state_dir, &feature.id).context("cannot remove the notes")?;
    }
    if let Some(error) = &run.log_error {
        eprintln!("worker: warning: {error}");
    }
    // After a wait for a rate limit, anyone may have changed the tree: it is looked at again.
    if decision != Decision::WaitForLimit {
        carry.tree = Some(tree_after);
    }
    if decision == Decision::WaitForLimit {
        eprintln!("worker: {message}");
        if let Some(signal) =
            crate::base::signals::sleep(std::time::Duration::from_secs(config.rate_limit.wait_secs))
        {
            return Ok(RoleReport {
                exit_code: exit_codes::INTERRUPTED,
                message: format!(
                    "{} interrupted by {} while waiting",
                    feature.id,
                    crate::base::signals::name(signal)
                ),
            });
        }
    }
    Ok(RoleReport { exit_code, message })
}

/// Before an iteration: a feature that is finished, failed or out of iterations does not start.
fn refuse_to_start(state: &mut RunState, now: Timestamp) -> Option<RoleReport> {
    let id = state.feature_id.clone();
    let report = |exit_code, message: String| Some(RoleReport { exit_code, message });
    match state.status {
        Status::Done => report(exit_codes::DONE, format!("{id} is already done")),
        Status::Provisional => report(
            exit_codes::PROVISIONAL,
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
                let reason = format!(
                    "max_iterations ({}) reached without completion",
                    state.max_iterations
                );
                state.fail(reason, now);
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

/// How the agent ended, in words for notes and raw.md.
pub fn describe_end(end: End, outcome: Outcome, agent: &AgentConfig) -> String {
    match end {
        End::Exited(0) => outcome.describe().to_string(),
        End::Exited(code) => format!("agent exited with code {code}"),
        End::Signaled(signal) => format!("agent crashed ({})", crate::base::signals::name(signal)),
        End::TimedOut => format!(
            "agent timed out after {} s and was stopped",
            agent.timeout_secs
        ),
        End::IdleTimedOut => format!(
            "agent printed nothing for {} s and was stopped",
            agent.idle_timeout_secs.unwrap_or(0)
        ),
        End::Lingered => format!(
            "{}; the agent did not exit within {} s of its final answer and was stopped",
            outcome.describe(),
            agent.result_grace_secs
        ),
        End::Handoff(tokens) => format!(
            "handoff: context — {tokens} tokens passed {:.0}% of the {}-token window; a fresh agent continues",
            agent.handoff_threshold * 100.0,
            agent.context_window.unwrap_or(0)
        ),
        End::OverBudget(tokens) => {
            format!("stopped after {tokens} tokens: the token budget ran out")
        }
        End::OutOfTime => "stopped: the time budget ran out".to_string(),
        End::OverCost(cents) => format!(
            "stopped after ${:.2}: the cost budget ran out",
            cents as f64 / 100.0
        ),
        End::Interrupted(signal) => {
            format!("interrupted by {}", crate::base::signals::name(signal))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::features::FeatureId;

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
