//! The worker: the Ralph loop (seed 001) on one feature. Each iteration runs one fresh agent
//! process on the assembled prompt and records everything on disk, so run.sh can loop, be killed,
//! and resume from the state alone. One iteration reads top to bottom in `iterate`: build the
//! prompt → run the agent → decide ([`on_agent_stop`], [`apply_streaks`]) → transition
//! ([`transition`], pure) → write. [`run_worker_loop`] runs iterations in turn in one process.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

use crate::agent::format::setback;
use crate::agent::{AgentRun, End, Setback, SetbackKind};
use crate::base::console;
use crate::base::error::InputError;
use crate::base::exit_codes;
use crate::base::git;
use crate::base::signals;
use crate::base::time::{self, Timestamp};
use crate::roles::attempt::{
    self, Attempt, Change, FeatureRequest, OutputFigures, Place, RoleReport, Session, Transition,
};
use crate::roles::inputs::{self, InputMemo};
use crate::roles::lifecycle::checks::CheckPlace;
use crate::roles::lifecycle::events::{AttemptFields, Details, Payload};
use crate::roles::lifecycle::phases::{self, GateRun};
use crate::roles::prompt::{completion_tag, Lifecycle, WorkerPrompt};
use crate::spec::config::{Config, Event};
use crate::spec::features::FeatureId;
use crate::spec::init;
use crate::spec::layout::{RunId, StateDir};
use crate::spec::role::Role;
use crate::state::budget::{self, Remaining};
use crate::state::lifecycle::{phase_cap_reason, GateRecord, PhaseState};
use crate::state::memory::{self, Tag};
use crate::state::notes::{self, AttemptNote, CheckOutput, GateNote};
use crate::state::run_state::Worktree;
use crate::state::run_state::{Outcome, RunState, Status};
use crate::state::worktree;

/// What happens after an agent stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The promise is in the answer of an agent that finished by itself: the feature is
    /// complete (provisional, when a validator checks it).
    Complete,
    /// Not complete and iterations remain: run a fresh agent.
    Restart,
    /// The promise passed its phase's gate and another phase follows: a fresh agent starts it.
    NextPhase,
    /// Not complete and the guardrail is reached: the feature failed (exit 2).
    GiveUp,
    /// A budget ran out: stop (exit 2), resumable once the budget is raised.
    OverBudget,
    /// Several iterations in a row changed nothing: stop as stalled (exit 2), for a replan.
    Stalled,
    /// The service held the agent up (a rate or usage limit, a transient service error): wait
    /// and try again, not counting the iteration.
    Wait,
    /// The service held the agent up again after as many waits in a row as allowed: stop
    /// (exit 2), not counting the iteration, resumable by running the feature again.
    OutOfWaits,
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

/// The setback that ended an agent's run, if it is one to wait out: one its CLI reported, of an
/// agent that did not finish by itself; a transient service error only when the CLI gave up on
/// it (a non-zero exit: an agent silent or hung for a timer's length is stopped as any other).
pub fn held_up(end: End, setback: Option<&Setback>) -> Option<&Setback> {
    setback.filter(|setback| match setback.kind {
        SetbackKind::Limit => !end.is_clean(),
        SetbackKind::Outage => matches!(end, End::Exited(code) if code != 0),
    })
}

/// What the guardrails that look across attempts see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Streaks {
    /// What the service held this attempt up with, if it did (see [`held_up`]).
    pub setback: Option<SetbackKind>,
    /// Attempts in a row in this run that the service held up, this one included; 0 when it
    /// did not hold this one up.
    pub held_in_a_row: u32,
    /// Worker attempts in a row (this one included) that changed nothing in the working tree
    /// and delivered no promise, those the service held up left out; 0 without git.
    pub unchanged_in_a_row: u32,
}

impl Streaks {
    /// The streaks this attempt ends, given the attempts before it in `state` and the attempts
    /// held up in a row just before it in this run.
    fn of(state: &RunState, seen: &Seen, setback: Option<SetbackKind>, held_before: u32) -> Self {
        let unchanged_before = state
            .attempts()
            .iter()
            .rev()
            .skip(1)
            .filter(|a| a.role == Role::Worker && !a.outcome.is_setback())
            .take_while(|a| a.tree_changed == Some(false) && !a.promise_found)
            .count() as u32;
        let unchanged =
            setback.is_none() && seen.tree_changed == Some(false) && !seen.promise_found;
        Streaks {
            setback,
            held_in_a_row: if setback.is_some() {
                held_before + 1
            } else {
                0
            },
            unchanged_in_a_row: if unchanged { 1 + unchanged_before } else { 0 },
        }
    }
}

/// Refines [`on_agent_stop`] with the guardrails over several attempts: a setback is waited
/// out (up to `max_waits` times in a row, then the run stops) instead of counting as an
/// iteration, and `stall_after` iterations in a row that changed nothing stop the feature as
/// stalled (0: never).
pub fn apply_streaks(
    decision: Decision,
    streaks: Streaks,
    max_waits: u32,
    stall_after: u32,
) -> Decision {
    match decision {
        Decision::Complete | Decision::NextPhase | Decision::Halt | Decision::OverBudget => {
            decision
        }
        _ if streaks.setback.is_some() && streaks.held_in_a_row <= max_waits => Decision::Wait,
        _ if streaks.setback.is_some() => Decision::OutOfWaits,
        _ if stall_after > 0 && streaks.unchanged_in_a_row >= stall_after => Decision::Stalled,
        _ => decision,
    }
}

/// A setback being waited out, or that stopped the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// What the agent's CLI said.
    pub setback: Setback,
    /// When the agent said the limit resets, if it did.
    pub resets_at: Option<Timestamp>,
    /// How long to wait before the next attempt.
    pub wait: Duration,
    /// The wait is the longest allowed, shorter than the time until the reset.
    pub capped: bool,
    /// The most waits in a row.
    pub max_waits: u32,
}

/// The margin after a reset time: the CLIs name it to the minute or the hour.
const RESET_MARGIN_SECS: u64 = 60;

impl Hold {
    /// The hold of the `in_a_row`th setback in a row, at `now`: a limit is waited out until the
    /// time the agent says it resets (and a minute), at most `rate_limit.max_wait_secs`, else
    /// `rate_limit.wait_secs`; a service error `service_errors.wait_secs`, doubled with every
    /// wait in a row, at most `service_errors.max_wait_secs`.
    pub fn new(setback: &Setback, in_a_row: u32, config: &Config, now: Timestamp) -> Self {
        let local = now.with_timezone(&chrono::Local);
        let (resets_at, seconds, capped, max_waits) = match setback.kind {
            SetbackKind::Limit => {
                let limit = &config.rate_limit;
                let resets_at = setback::reset_time(&setback.text, &local);
                let until = resets_at
                    .filter(|at| *at > now)
                    .map(|at| (at - now).num_seconds().unsigned_abs() + RESET_MARGIN_SECS);
                let seconds = until.unwrap_or(limit.wait_secs);
                let capped = seconds > limit.max_wait_secs;
                (
                    resets_at,
                    seconds.min(limit.max_wait_secs),
                    capped,
                    limit.max_waits,
                )
            }
            SetbackKind::Outage => {
                let errors = &config.service_errors;
                let doubled = errors
                    .wait_secs
                    .saturating_mul(1u64 << in_a_row.saturating_sub(1).min(32));
                (
                    None,
                    doubled.min(errors.max_wait_secs),
                    false,
                    errors.max_waits,
                )
            }
        };
        Hold {
            setback: setback.clone(),
            resets_at,
            wait: Duration::from_secs(seconds),
            capped,
            max_waits,
        }
    }

    /// `a rate or usage limit ("You've hit your limit · resets 3pm")`, the agent's words cut.
    fn what(&self) -> String {
        format!(
            "{} (\"{}\")",
            self.setback.kind.describe(),
            crate::base::text::cut(&memory::one_line(&self.setback.text), 200)
        )
    }

    /// Why the run stops once out of waits (the run state's reason).
    pub fn stop_reason(&self) -> String {
        format!(
            "{} after {} waits in a row{}",
            self.what(),
            self.max_waits,
            self.reset()
        )
    }

    /// `<who> met <what> again after N waits in a row (it resets at …)`.
    pub fn stop_words(&self, who: &str) -> String {
        format!(
            "{who} met {} again after {} waits in a row{}",
            self.what(),
            self.max_waits,
            self.reset()
        )
    }

    /// `<who> met <what>; waiting 5m 00s before trying again (wait 2 of 12, not counted as an
    /// iteration)`, for the `count`th wait in a row.
    pub fn wait_words(&self, who: &str, count: u32) -> String {
        let wait = seconds_in_words(self.wait);
        let how_long = match self.resets_at {
            Some(at) if self.capped => format!(
                "waiting {wait}, the most rate_limit.max_wait_secs allows, though it resets at {}",
                time::format(at)
            ),
            Some(at) if self.wait.as_secs() > RESET_MARGIN_SECS => {
                format!("waiting {wait}, until it resets at {}", time::format(at))
            }
            _ => format!("waiting {wait} before trying again"),
        };
        format!(
            "{who} met {}; {how_long} (wait {count} of {}, not counted as an iteration)",
            self.what(),
            self.max_waits
        )
    }

    /// `when it resets at 2026-11-23T15:00:00Z`, if the agent said.
    fn reset(&self) -> String {
        self.resets_at.map_or(String::new(), |at| {
            format!(" (it resets at {})", time::format(at))
        })
    }
}

/// The guardrail on iterations an attempt runs under: `max_iterations`, or its phase's own
/// `max_iterations` when that comes first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guardrail {
    /// The last iteration it allows.
    pub last_iteration: u32,
    /// The phase whose cap it is, and the cap, when that comes first.
    pub phase_cap: Option<(String, u32)>,
}

impl Guardrail {
    /// The guardrail of `state`, in phase `phase` (its index) of `config` if any.
    pub fn of(state: &RunState, config: &Config, phase: Option<usize>) -> Self {
        let cap = phase
            .zip(state.phase.as_ref())
            .and_then(|(index, current)| {
                let cap = config.phases[index].max_iterations?;
                let last = current.started_after_iteration.saturating_add(cap);
                (last < state.max_iterations).then(|| (current.name.clone(), cap, last))
            });
        match cap {
            Some((name, cap, last)) => Guardrail {
                last_iteration: last,
                phase_cap: Some((name, cap)),
            },
            None => Guardrail {
                last_iteration: state.max_iterations,
                phase_cap: None,
            },
        }
    }

    /// What the worker says of a feature that failed at it on `iteration` of `max`, having
    /// `ended` so, and how to go on.
    fn failed_line(&self, id: &FeatureId, (iteration, max): (u32, u32), ended: &str) -> String {
        match &self.phase_cap {
            Some((phase, _)) => format!(
                "{id} failed: iteration {iteration}/{max}: {ended}, and phase {phase}'s max_iterations is reached\nhint: raise that phase's max_iterations in config.yaml, then continue with `./run.sh {id}`"
            ),
            None => format!(
                "{id} failed: iteration {iteration}/{max}: {ended}, and max_iterations is reached\nhint: continue with `./run.sh {id} --max-iterations {}`",
                max + 5
            ),
        }
    }

    /// Why a feature that reached it fails.
    fn reached(&self, max_iterations: u32) -> String {
        match &self.phase_cap {
            Some((phase, cap)) => phase_cap_reason(phase, *cap),
            None => format!("max_iterations ({max_iterations}) reached without completion"),
        }
    }
}

/// Refines a decision with the gate the promise went through (`None`: there was none — no
/// checks, no phases; `last_phase`: no phase follows this one). A refused promise does not
/// count: another iteration within `last_iteration`, else the guardrail. A passed gate ends the
/// phase: the next phase follows, or after the last one the feature is complete. A gate an
/// interrupt stopped decides nothing: halt.
pub fn after_gate(
    decision: Decision,
    gate: Option<&GateRun>,
    last_phase: bool,
    iteration_count: u32,
    last_iteration: u32,
) -> Decision {
    if decision != Decision::Complete {
        return decision;
    }
    match gate {
        Some(gate) if gate.interrupted() => Decision::Halt,
        Some(gate) if !gate.record.passed && iteration_count < last_iteration => Decision::Restart,
        Some(gate) if !gate.record.passed => Decision::GiveUp,
        _ if !last_phase => Decision::NextPhase,
        _ => Decision::Complete,
    }
}

/// What the harness saw of an attempt besides the agent's own report: the promise in its
/// answer, what it changed in the working tree (`None` without git), when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    promise_found: bool,
    commits: Option<u64>,
    tree_changed: Option<bool>,
    ended_at: Timestamp,
}

impl Seen {
    /// What `run` did to the tree in `workdir`, from `before` to `after`.
    fn of(run: &AgentRun, workdir: &Path, before: &git::Tree, after: &git::Tree) -> Self {
        Seen {
            promise_found: run.output.found(0),
            // Without a repository before, commits and changes are unknown whatever happened.
            commits: git::new_commits_between(workdir, &before.head, &after.head),
            tree_changed: before
                .fingerprint
                .zip(after.fingerprint)
                .map(|(before, after)| before != after),
            ended_at: time::now(),
        }
    }
}

/// The worker's decision on one attempt, with what it rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub decision: Decision,
    pub outcome: Outcome,
    /// How the agent ended, in words.
    pub ended: String,
    /// The guardrails across attempts.
    pub streaks: Streaks,
    /// The setback waited out, or that stopped the run (with [`Decision::Wait`] and
    /// [`Decision::OutOfWaits`]).
    pub hold: Option<Hold>,
    /// The guardrail on iterations.
    pub guardrail: Guardrail,
    /// The gate the promise went through, when it had one.
    pub gate: Option<GateRun>,
    /// The phase that follows, when the decision is [`Decision::NextPhase`].
    pub next_phase: Option<PhaseState>,
}

/// Decides on the attempt that just ended, as `run` and `seen` tell it, over the attempts in
/// `state` (this one begun, not yet ended), under `guardrail`, `held_before` attempts in a row
/// of this run having been held up by the service just before it, at `now`; the gate comes
/// after ([`Judgement::after_gate`]).
fn judge(
    state: &RunState,
    (run, seen): (&AgentRun, &Seen),
    config: &Config,
    (guardrail, held_before): (Guardrail, u32),
    now: Timestamp,
) -> Judgement {
    let setback = held_up(run.end, run.output.setback.as_ref());
    let streaks = Streaks::of(state, seen, setback.map(|s| s.kind), held_before);
    let hold = setback.map(|setback| Hold::new(setback, streaks.held_in_a_row, config, now));
    let decision = apply_streaks(
        on_agent_stop(
            run.end,
            seen.promise_found,
            state.iteration_count,
            guardrail.last_iteration,
        ),
        streaks,
        hold.as_ref().map_or(0, |hold| hold.max_waits),
        config.stall_iterations,
    );
    let hold = hold.filter(|_| matches!(decision, Decision::Wait | Decision::OutOfWaits));
    let outcome = match &hold {
        Some(hold) => hold.setback.kind.outcome(),
        None => run.end.outcome(seen.promise_found),
    };
    let mut ended = run.end.describe(outcome, config.agent_for(Role::Worker));
    if hold.is_some() {
        ended = format!("{} ({ended})", outcome.describe());
    }
    Judgement {
        decision,
        outcome,
        ended,
        streaks,
        hold,
        guardrail,
        gate: None,
        next_phase: None,
    }
}

impl Judgement {
    /// The judgement once the promise went through `gate` ([`after_gate`]); `next_phase` is
    /// the phase that follows, if any.
    fn after_gate(
        self,
        gate: Option<GateRun>,
        next_phase: Option<PhaseState>,
        last_phase: bool,
        iteration_count: u32,
    ) -> Self {
        let last = self.guardrail.last_iteration;
        let decision = after_gate(
            self.decision,
            gate.as_ref(),
            last_phase,
            iteration_count,
            last,
        );
        let refused = gate
            .as_ref()
            .map(|gate| &gate.record)
            .filter(|gate| !gate.passed);
        let (outcome, ended) = match (decision, refused) {
            (Decision::NextPhase, _) => (Outcome::PhasePassed, self.ended),
            (Decision::Halt, Some(_)) => (
                Outcome::Interrupted,
                "delivered the promise, but its checks were interrupted".to_string(),
            ),
            (Decision::Restart | Decision::GiveUp, Some(refused)) => (
                Outcome::GateFailed,
                format!(
                    "{}: {}",
                    Outcome::GateFailed.describe(),
                    refused.reasons().join("; ")
                ),
            ),
            _ => (self.outcome, self.ended),
        };
        Judgement {
            decision,
            outcome,
            ended,
            gate,
            next_phase: next_phase.filter(|_| decision == Decision::NextPhase),
            ..self
        }
    }
}

/// What `judgement` does to the feature on iteration `state.iteration_count`: its status, the
/// message and the exit code. `interrupted`: an interrupt came after the agent ended, which
/// stops the loop all the same.
pub fn transition(
    state: &RunState,
    judgement: &Judgement,
    config: &Config,
    interrupted: bool,
) -> Transition {
    let id = &state.feature_id;
    let (iteration, max) = (state.iteration_count, state.max_iterations);
    let ended = &judgement.ended;
    let unchanged = judgement.streaks.unchanged_in_a_row;
    let left = judgement.guardrail.last_iteration.saturating_sub(iteration);
    match judgement.decision {
        Decision::Complete if config.validate => Transition::new(
            Change::To(Status::Provisional),
            exit_codes::PROVISIONAL,
            format!("{id} iteration {iteration}/{max} delivered the promise; the validator checks it next"),
        ),
        Decision::Complete => Transition::new(
            Change::Land,
            exit_codes::DONE,
            format!("{id} done on iteration {iteration}/{max}"),
        ),
        Decision::Restart => {
            let message = format!("{id} iteration {iteration}/{max}: {ended}; {left} left");
            go_on(message, interrupted)
        }
        Decision::NextPhase => next_phase(state, judgement, interrupted),
        Decision::GiveUp => Transition::new(
            Change::Fail(judgement.guardrail.reached(max)),
            exit_codes::GUARDRAIL,
            judgement.guardrail.failed_line(id, (iteration, max), ended),
        ),
        Decision::Halt => Transition::new(
            Change::To(Status::Pending),
            exit_codes::INTERRUPTED,
            format!("{id} iteration {iteration}/{max} {ended}; run it again to resume"),
        ),
        Decision::OverBudget => Transition::new(
            Change::Pause(ended.clone()),
            exit_codes::GUARDRAIL,
            format!("{id} iteration {iteration}/{max} {ended}; raise the budget in config.yaml to go on"),
        ),
        Decision::Stalled => Transition::new(
            Change::Fail(format!(
                "stalled: {unchanged} iterations in a row changed nothing in the working tree"
            )),
            exit_codes::GUARDRAIL,
            format!("{id} stalled: {unchanged} iterations in a row changed nothing in the working tree; re-break it with `./run.sh replan {id}`"),
        ),
        Decision::Wait | Decision::OutOfWaits => held_transition(id, judgement),
    }
}

/// What a setback does to the feature (see [`Hold::new`]): a wait, the attempt not counted, or,
/// out of waits, a stop with the setback's own reason (exit 2), resumable by running it again.
fn held_transition(id: &FeatureId, judgement: &Judgement) -> Transition {
    let Some(hold) = &judgement.hold else {
        return Transition::new(
            Change::Retry,
            exit_codes::CONTINUE,
            format!("{id}: waiting"),
        );
    };
    let count = judgement.streaks.held_in_a_row;
    if judgement.decision == Decision::OutOfWaits {
        return Transition::new(
            Change::Postpone(hold.stop_reason()),
            exit_codes::GUARDRAIL,
            format!(
                "{id} stopped: {}; the attempt is not counted as an iteration\nhint: run it again to resume: `./run.sh {id}`",
                hold.stop_words("the agent")
            ),
        );
    }
    Transition::new(
        Change::Retry,
        exit_codes::CONTINUE,
        format!("{id}: {}", hold.wait_words("the agent", count)),
    )
}

/// Another iteration follows (exit 10), unless an interrupt came (exit 130, pending).
fn go_on(message: String, interrupted: bool) -> Transition {
    if interrupted {
        Transition::new(
            Change::To(Status::Pending),
            exit_codes::INTERRUPTED,
            message,
        )
    } else {
        Transition::new(Change::To(Status::Running), exit_codes::CONTINUE, message)
    }
}

/// A phase passed its gate: the next one follows with a fresh agent, within `max_iterations`.
fn next_phase(state: &RunState, judgement: &Judgement, interrupted: bool) -> Transition {
    let id = &state.feature_id;
    let (iteration, max) = (state.iteration_count, state.max_iterations);
    let passed = state
        .phase
        .as_ref()
        .map_or(String::new(), PhaseState::label);
    let next = judgement
        .next_phase
        .as_ref()
        .map_or(String::new(), PhaseState::label);
    let message =
        format!("{id} passed phase {passed} on iteration {iteration}/{max}; phase {next} is next");
    if iteration >= max {
        return Transition::new(
            Change::Fail(format!(
                "max_iterations ({max}) reached; phase {next} is next"
            )),
            exit_codes::GUARDRAIL,
            format!(
                "{message}, but max_iterations is reached\nhint: continue with `./run.sh {id} --max-iterations {}`",
                max + 5
            ),
        );
    }
    go_on(message, interrupted)
}

/// Before an iteration: a feature that is finished, failed or out of iterations (under
/// `guardrail`) does not start.
fn before_iteration(state: &RunState, guardrail: &Guardrail) -> Option<Transition> {
    let id = &state.feature_id;
    match state.status {
        Status::Done => Some(Transition::new(
            Change::Keep,
            exit_codes::DONE,
            format!("{id} is already done"),
        )),
        Status::Provisional => Some(Transition::new(
            Change::Keep,
            exit_codes::PROVISIONAL,
            format!("{id} is provisional: it waits for the validator"),
        )),
        // Accepted already: only its merge is left to do, and no agent runs.
        Status::Unmerged => Some(Transition::new(
            Change::Land,
            exit_codes::DONE,
            format!("{id} was accepted; merging its work"),
        )),
        Status::Blocked => Some(Transition::new(
            Change::Keep,
            exit_codes::FAILED,
            format!(
                "{id} is blocked: {}",
                state.reason.as_deref().unwrap_or("no reason recorded")
            ),
        )),
        _ if state.iteration_count >= guardrail.last_iteration => {
            let max = state.max_iterations;
            let change = if state.status == Status::Failed {
                Change::Keep
            } else {
                Change::Fail(guardrail.reached(max))
            };
            let message = match &guardrail.phase_cap {
                Some((phase, cap)) => format!(
                    "{id} has used all {cap} iterations of phase {phase}\nhint: raise that phase's max_iterations in config.yaml, then continue with `./run.sh {id}`"
                ),
                None => format!(
                    "{id} has used all {max} of its iterations\nhint: continue with `./run.sh {id} --max-iterations {}`",
                    max + 5
                ),
            };
            Some(Transition::new(change, exit_codes::GUARDRAIL, message))
        }
        _ => None,
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

/// What one iteration leaves to the next when one worker process runs them in turn
/// ([`run_worker_loop`]): what is still true of the disk, and the open session. The inputs are
/// re-read every iteration and parsed again when their bytes changed, the run states' spending
/// is re-read when a file changed, the working tree as the last attempt left it stands for the
/// tree before the next one (the harness itself changes nothing there in between), and the next
/// run id is looked for after the last one. After an attempt that ends with "continue" the
/// session stays open, its locks never released: its run state is then the truth, and the
/// attempt's end is written together with the next attempt's start. The attempts the service
/// held up in a row are counted per run: running a feature again after its waits ran out gives
/// it as many waits again.
#[derive(Debug, Default)]
pub struct Carry {
    inputs: InputMemo,
    spent: budget::SpentMemo,
    tree: Option<git::Tree>,
    run_id: Option<RunId>,
    session: Option<Session>,
    held_in_a_row: u32,
}

/// Runs one iteration of the Ralph loop on the requested feature.
pub fn run_worker_iteration(request: &WorkerRequest) -> anyhow::Result<RoleReport> {
    let mut carry = Carry::default();
    let result = run_iteration(request, &mut carry);
    finish(&mut carry, result)
}

/// What run.sh asks of the worker's loop once per run, before its first iteration.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunStart {
    /// The descriptor run.sh opened on the feature's lock file: once the inputs are checked, the
    /// lock is taken on it for run.sh (see [`attempt::lock_for_caller`]).
    pub lock_fd: Option<i32>,
    /// Run the feature in its own git worktree (`./run.sh all --parallel`); one that has a
    /// worktree already goes on in it without being asked.
    pub worktree: bool,
}

/// Runs iterations of the Ralph loop on the requested feature in this one process, each exactly
/// as [`run_worker_iteration`] would (inputs and layers re-read from disk, a fresh agent,
/// everything recorded), until one ends with anything but "continue": the feature is complete or
/// provisional, a guardrail stopped it, or an interrupt came. Spares a process start per
/// iteration, the parsing of inputs that did not change, and (the feature's locks being held
/// throughout, see [`Carry`]) a write and a read of the run state. Before the first iteration,
/// what `start` asks: every input is checked (the validator's agent too) before anything changes,
/// with the parse the iterations then use, and the lock is taken and the worktree made.
pub fn run_worker_loop(request: &WorkerRequest, start: RunStart) -> anyhow::Result<RoleReport> {
    let mut carry = Carry::default();
    let mut request = request.clone();
    let feature = &request.feature;
    let place = &feature.place;
    check_run_inputs(
        &mut carry.inputs,
        &place.workdir,
        &place.state,
        &feature.feature,
        place.path_var.as_deref(),
    )?;
    if let Some(fd) = start.lock_fd {
        attempt::lock_for_caller(&feature.place.state, &feature.feature, fd)?;
    }
    init::keep_gitignore_complete(&feature.place.state, "worker");
    if start.worktree || worktree::recorded(&place.state, &feature.feature)?.is_some() {
        request.feature.place.workdir = assign_worktree(&mut carry.inputs, &request.feature)?;
    }
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
        if let Some(signal) = signals::received() {
            let report = RoleReport {
                exit_code: exit_codes::INTERRUPTED,
                message: format!(
                    "{} interrupted by {}",
                    request.feature.feature,
                    signals::name(signal)
                ),
            };
            return finish(&mut carry, Ok(report));
        }
        console::say(&format!("worker: {}", report.message));
        // The run id given is the first iteration's; each later one makes its own.
        request.feature.run_id = None;
    }
}

/// Checks every input a run of `feature` needs, through `memo`: the worker's, and the
/// validator's agent when one validates (a run must not fail on it hours later).
pub fn check_run_inputs(
    memo: &mut InputMemo,
    workdir: &Path,
    state: &StateDir,
    feature: &FeatureId,
    path_var: Option<&OsStr>,
) -> Result<(), InputError> {
    let inputs = inputs::check_inputs(memo, workdir, state, feature, Role::Worker, path_var)?;
    if inputs.config.validate {
        inputs::check_inputs(memo, workdir, state, feature, Role::Validator, path_var)?;
    }
    Ok(())
}

/// Gives the requested feature its own git worktree (`.harness/worktrees/<FEATURE>` on branch
/// `harness/<FEATURE>`, from the main working directory's HEAD) unless it has one, recorded in its
/// run state; returns the worktree's path, the feature's working directory from then on.
pub fn assign_worktree(memo: &mut InputMemo, request: &FeatureRequest) -> anyhow::Result<PathBuf> {
    let main = &request.place.workdir;
    if !git::is_repo(main) {
        return Err(InputError::in_file(
            main,
            "not a git repository: features can only run in parallel in git worktrees",
        )
        .with_hint("run one feature at a time (no --parallel), or `git init` the project")
        .into());
    }
    let mut session = Session::open(memo, request, Role::Worker)?;
    // A feature that will run no agent gets no worktree: it works (lands) from the main tree.
    if matches!(
        session.state.status,
        Status::Done | Status::Unmerged | Status::Blocked
    ) {
        return Ok(main.clone());
    }
    // Made, or repaired after a kill, keeping the branch it merges back into and its landing.
    let recorded = session.state.worktree.take();
    let worktree = worktree::prepare(
        main,
        &request.place.state,
        &session.state.feature_id,
        "HEAD",
        recorded.as_ref().map(|w| w.base_branch.clone()),
    )?;
    let id = &session.state.feature_id;
    if let Some((from, carried)) = worktree::carried_from(&request.place.state, id)? {
        // A piece of a replanned feature builds on the work of the feature it replaces.
        worktree::carry_over(&worktree, id, &from, &carried, &request.place.state)?;
    }
    let path = worktree.path.clone();
    session.state.worktree = Some(Worktree {
        tip: recorded.and_then(|w| w.tip),
        ..worktree
    });
    session.save_if_changed()?;
    Ok(path)
}

/// One iteration, on the session `carry` kept open (see [`Carry`]) or a new one. An attempt that
/// ends with "continue" leaves its end to be written with the next attempt's start, its session
/// kept in `carry`; any other ending writes it.
fn run_iteration(request: &WorkerRequest, carry: &mut Carry) -> anyhow::Result<RoleReport> {
    let opened = Session::open_or_resume(
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
    // Kept open while the loop goes on, even when a hook had its end written already.
    let goes_on = matches!(&result, Ok(report) if report.exit_code == exit_codes::CONTINUE);
    if session.pending || goes_on {
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

/// What an iteration runs under, once its feature may start.
struct Ready {
    /// config.yaml as this iteration read it.
    config: Config,
    /// The phase it works in (its index), when the feature has phases.
    phase: Option<usize>,
    guardrail: Guardrail,
    /// What the budgets leave.
    budget: Remaining,
}

impl Ready {
    /// Whether no phase follows this one.
    fn last_phase(&self) -> bool {
        self.phase
            .is_none_or(|index| index + 1 == self.config.phases.len())
    }
}

/// Before an iteration: `--max-iterations`, the feature's phase, its guardrail and what the
/// budgets leave; a feature that must not start stops here (`Err`, its report).
fn prepare(
    request: &WorkerRequest,
    session: &mut Session,
    carry: &mut Carry,
) -> anyhow::Result<Result<Ready, RoleReport>> {
    let place = &request.feature.place;
    if let Some(max_iterations) = request.max_iterations {
        if max_iterations == 0 {
            return Err(InputError::new("--max-iterations must be at least 1").into());
        }
        session
            .state
            .set_max_iterations(max_iterations, session.started_at);
    }
    let config = session.config().clone();
    let phase = phases::enter(&mut session.state, &config, &place.workdir, &place.state)?;
    let guardrail = Guardrail::of(&session.state, &config, phase);
    let before = before_iteration(&session.state, &guardrail);
    match session.gate(before, &place.state, &mut carry.spent) {
        Ok(budget) => Ok(Ok(Ready {
            config,
            phase,
            guardrail,
            budget,
        })),
        Err(stop) => session.stop_and_tell(stop, place).map(Err),
    }
}

/// One iteration on the open `session`: build the prompt → run the agent → decide (the agent's
/// stop, then the gate its promise goes through) → transition → write → the hooks.
fn iterate(
    request: &WorkerRequest,
    session: &mut Session,
    carry: &mut Carry,
) -> anyhow::Result<RoleReport> {
    let place = &request.feature.place;
    let ready = match prepare(request, session, carry)? {
        Ok(ready) => ready,
        Err(report) => return Ok(report),
    };
    let config = &ready.config;

    // Build the prompt.
    let attempt = session.attempt(&request.feature, carry.run_id.as_ref());
    carry.run_id = Some(attempt.run_id.clone());
    let layers = session.layers(place)?;
    let phase = session.state.phase.clone();
    let prompt = WorkerPrompt {
        runtime: &attempt.runtime,
        role: &session.role_prompt,
        identity: layers.identity.as_deref(),
        feature: &session.inputs.feature,
        iteration: attempt.iteration,
        max_iterations: attempt.max_iterations,
        promise: &attempt.promise,
        notes: layers.notes.as_deref(),
        summary: layers.summary.as_deref(),
        lifecycle: Lifecycle::of(config, ready.phase.zip(phase.as_ref())),
    }
    .render();

    // The hooks hear that it starts; a failing gate hook stops it before anything begins.
    let fields = AttemptFields::new(
        attempt.run_id.as_str(),
        (attempt.iteration, attempt.max_iterations),
        phase.as_ref(),
    );
    let start = session.scene(place).iteration_start(fields.clone());
    if let Some(stop) = session.tell(place, &[start])? {
        return session.stop(
            Transition::stopped_by_hook(&session.state, &stop),
            &place.state,
        );
    }

    // Run the agent.
    session.begin(&attempt, &prompt)?;
    console::say(&format!(
        "worker: {} iteration {}/{}{} (run {})",
        session.state.feature_id,
        attempt.iteration,
        attempt.max_iterations,
        phase
            .as_ref()
            .map_or(String::new(), |p| format!(", phase {}", p.label())),
        attempt.run_id
    ));
    let before = carry
        .tree
        .take()
        .unwrap_or_else(|| git::observe(&place.workdir));
    let markers = [completion_tag(&attempt.promise)];
    let run = session.run(&attempt, &prompt, &markers, &ready.budget)?;
    // Without starting git when nothing it sees changed since it was last asked.
    let after = git::look_again(&place.workdir, &before);
    let seen = Seen::of(&run, &place.workdir, &before, &after);

    // Decide, then transition.
    let judgement = judge(
        &session.state,
        (&run, &seen),
        config,
        (ready.guardrail.clone(), carry.held_in_a_row),
        seen.ended_at,
    );
    carry.held_in_a_row = judgement.streaks.held_in_a_row;
    let judgement = pass_gate(judgement, session, &attempt, &ready, place)?;
    let transition = transition(
        &session.state,
        &judgement,
        config,
        signals::received().is_some(),
    );

    // Write, then the hooks hear of it.
    let status_before = session.state.status;
    let report = write(
        session, place, &attempt, &run, &seen, &judgement, transition,
    )?;
    let payloads = worker_events(
        session,
        place,
        fields.clone(),
        &judgement,
        &report,
        status_before,
    );
    let report = session.conclude(place, &payloads, report)?;
    match (judgement.decision, &judgement.hold) {
        // During the wait anyone may change the tree: it is looked at again after it. A gate
        // hook that stopped the run leaves nothing to wait for.
        (Decision::Wait, Some(hold)) if report.exit_code == exit_codes::CONTINUE => {
            let wait_number = judgement.streaks.held_in_a_row;
            wait_out(
                report,
                session,
                place,
                (fields, hold, wait_number),
                "trying again",
            )
        }
        _ => {
            carry.tree = Some(after);
            Ok(report)
        }
    }
}

/// A promise goes through its gate — the checks, and the phase's allow list — and, when it
/// passes a phase that is not the last, the next phase is made ready; the judgement refined by
/// them ([`Judgement::after_gate`]).
fn pass_gate(
    judgement: Judgement,
    session: &Session,
    attempt: &Attempt,
    ready: &Ready,
    place: &Place,
) -> anyhow::Result<Judgement> {
    if judgement.decision != Decision::Complete {
        return Ok(judgement);
    }
    let config = &ready.config;
    let env = attempt.environment();
    let checks = CheckPlace {
        workdir: attempt.workdir(),
        path_var: place.path_var.as_deref(),
        env: &env,
        kill_grace: attempt.agent().kill_grace(),
        run_dir: &attempt.run_dir,
        echo: attempt.echo(),
        enclosure: attempt.enclosure(),
    };
    let state = &session.state;
    let gate = phases::run_gate(
        config,
        ready.phase.zip(state.phase.as_ref()),
        &checks,
        &place.state,
    )?;
    let passed = gate
        .as_ref()
        .is_none_or(|gate| gate.record.passed && !gate.interrupted());
    let next = match ready.phase {
        Some(index) if passed && !ready.last_phase() => phases::next_phase(
            config,
            index,
            state.iteration_count,
            &place.workdir,
            &place.state,
        )?,
        _ => None,
    };
    Ok(judgement.after_gate(gate, next, ready.last_phase(), state.iteration_count))
}

/// The events of an attempt that was written: `agent_stop`, its gate's (`checks_failed`,
/// `phase_passed` or `phase_failed`), a budget that ran out or no wait left, and the feature's
/// new status (from `status_before`).
fn worker_events(
    session: &Session,
    place: &Place,
    fields: AttemptFields,
    judgement: &Judgement,
    report: &RoleReport,
    status_before: Status,
) -> Vec<Payload> {
    let scene = session.scene(place);
    let state = &session.state;
    let message = report.message.lines().next().unwrap_or_default();
    let record = state
        .attempts()
        .iter()
        .rev()
        .find(|a| a.run_id == fields.run_id);
    let details = Details::AgentStop {
        decision: serde_json::to_value(judgement.decision)
            .ok()
            .and_then(|value| value.as_str().map(str::to_string))
            .unwrap_or_default(),
        outcome: judgement.outcome,
        promise_found: record.is_some_and(|r| r.promise_found),
        turns: record.and_then(|r| r.turns),
        tokens: record.and_then(|r| r.tokens),
        cost_usd: record.and_then(|r| r.cost_usd),
        duration_secs: record
            .and_then(|r| {
                r.ended_at
                    .map(|end| (end - r.started_at).num_milliseconds())
            })
            .map_or(0.0, |ms| ms as f64 / 1000.0),
    };
    let mut payloads = vec![scene.agent_stop(fields.clone(), details, message)];
    if let Some(hold) = judgement
        .hold
        .as_ref()
        .filter(|_| judgement.decision == Decision::OutOfWaits)
    {
        let details = setback_details(hold, judgement.streaks.held_in_a_row, false);
        payloads.push(scene.waits_exhausted(fields.clone(), details, message));
    }
    let gate = judgement.gate.as_ref().map(|gate| &gate.record);
    if let Some(gate) = gate.filter(|_| judgement.decision != Decision::Halt) {
        if gate.failed_checks().next().is_some() {
            payloads.push(scene.gate(Event::ChecksFailed, fields.clone(), gate, None));
        }
        if fields.phase.is_some() {
            let event = if gate.passed {
                Event::PhasePassed
            } else {
                Event::PhaseFailed
            };
            let next = judgement.next_phase.as_ref();
            payloads.push(scene.gate(event, fields, gate, next));
        }
    }
    if judgement.decision == Decision::OverBudget {
        payloads.push(scene.budget_reached(&judgement.ended, message));
    }
    payloads.extend(session.status_payload(place, status_before, message));
    payloads
}

/// Writes what the attempt and its `transition` leave: raw.md's lines, the notes' sections (the
/// attempt's, and its gate's when it refused the promise), the attempt's end, its gate and the
/// transition in the run state (the next phase when one follows), result.json, then the run
/// state itself (or, when the loop goes on, with the next attempt's start).
fn write(
    session: &mut Session,
    place: &Place,
    attempt: &Attempt,
    run: &AgentRun,
    seen: &Seen,
    judgement: &Judgement,
    transition: Transition,
) -> anyhow::Result<RoleReport> {
    let ended_at = seen.ended_at;
    let state_dir = &place.state;
    let feature = session.state.feature_id.clone();
    let message = &transition.message;
    // Said as a failure mode, so that the curator and the planner see it.
    let stalled =
        (judgement.decision == Decision::Stalled).then(|| (Tag::Fail, memory::one_line(message)));
    attempt.append_raw(run, stalled, Some(&feature), (ended_at, message))?;
    let notes = attempt_notes(&session.state, attempt, run, seen, judgement, message);
    notes::append(state_dir, &feature, &notes).context("cannot write the notes")?;

    session.record_end(attempt, run, judgement.outcome, ended_at);
    if let Some(ended) = session.state.attempt_mut(attempt.run_id.as_str()) {
        ended.promise_found = seen.promise_found;
        ended.commits = seen.commits;
        ended.tree_changed = seen.tree_changed;
        ended.gate = judgement.gate.as_ref().map(|gate| gate.record.clone());
    }
    let goes_on = transition.change == Change::To(Status::Running);
    let report = session.apply(transition, state_dir, ended_at)?;
    if let Some(next) = &judgement.next_phase {
        session.state.phase = Some(next.clone());
    }
    let result = worker_result(&session.state, attempt, run, seen, judgement);
    attempt.write_result(run, ended_at, &result)?;
    if goes_on {
        // Written with the next attempt's start, or when the loop ends: one write, not two.
        session.pending = true;
    } else {
        session.save()?;
    }
    session.remove_notes_if_done(state_dir)?;
    if let Some(error) = &run.log_error {
        eprintln!("worker: warning: {error}");
    }
    Ok(report)
}

/// The notes' sections of an attempt: its own, then its gate's when the gate refused the
/// promise (one write for both).
fn attempt_notes(
    state: &RunState,
    attempt: &Attempt,
    run: &AgentRun,
    seen: &Seen,
    judgement: &Judgement,
    message: &str,
) -> String {
    let phase = state.phase.as_ref().map(PhaseState::label);
    let mut outcome = note_outcome(judgement, message);
    if let Some(phase) = &phase {
        outcome = format!("{outcome} (phase {phase})");
    }
    let mut text = AttemptNote {
        attempt: attempt.iteration,
        role: Role::Worker,
        time: seen.ended_at,
        turns: run.output.usage.turns,
        commits: seen.commits,
        outcome: &outcome,
        output: &run.output.tail,
    }
    .render();
    let refused = judgement
        .gate
        .as_ref()
        .filter(|gate| !gate.record.passed && judgement.decision != Decision::Halt);
    if let Some(gate) = refused {
        let outputs: Vec<CheckOutput> = gate
            .checks
            .iter()
            .map(|run| CheckOutput {
                name: &run.record.name,
                command: &run.command,
                output: &run.tail,
            })
            .collect();
        text.push_str(
            &GateNote {
                attempt: attempt.iteration,
                time: seen.ended_at,
                phase,
                gate: &gate.record,
                outputs: &outputs,
            }
            .render(),
        );
    }
    text
}

/// How the attempt ended, as the notes say it: in words, with why it stalled, or what the
/// agent said of the setback that held it up.
fn note_outcome(judgement: &Judgement, message: &str) -> String {
    let ended = &judgement.ended;
    match (&judgement.decision, &judgement.hold) {
        (Decision::Stalled, _) => format!("{ended}\nStalled: {message}"),
        (_, Some(hold)) => format!("{ended}: {}", hold.setback.text),
        _ => ended.clone(),
    }
}

/// What the hooks hear of setback `hold` (`rate_limit_wait`, `waits_exhausted`): the
/// `wait_number`th in a row, waited out or, with no wait left, not (`wait_secs` 0).
pub fn setback_details(hold: &Hold, wait_number: u32, waiting: bool) -> Details {
    Details::RateLimit {
        outcome: hold.setback.kind.outcome(),
        wait_secs: if waiting { hold.wait.as_secs() } else { 0 },
        wait_number,
        max_waits: hold.max_waits,
        resets_at: hold.resets_at.map(time::format),
    }
}

/// A setback: `report`'s line ("waiting …") is printed now, once, and the hooks hear of the
/// wait; after it the role runs again (`again` says how: "trying again"), or stops on the
/// interrupt that came during the wait, resumable. The worker's and the validator's waits.
pub fn wait_out(
    report: RoleReport,
    session: &mut Session,
    place: &Place,
    (fields, hold, wait_number): (AttemptFields, &Hold, u32),
    again: &str,
) -> anyhow::Result<RoleReport> {
    console::say(&format!("{}: {}", session.role, report.message));
    let details = setback_details(hold, wait_number, true);
    let payload = session
        .scene(place)
        .rate_limit_wait(fields, details, &report.message);
    if let Some(failure) = session.tell(place, &[payload])? {
        return session.stop(
            Transition::stopped_by_hook(&session.state, &failure),
            &place.state,
        );
    }
    let feature = &session.state.feature_id;
    let wait = hold.wait;
    match signals::sleep(wait) {
        Some(signal) => Ok(RoleReport {
            exit_code: exit_codes::INTERRUPTED,
            message: format!(
                "{feature} interrupted by {} while waiting; run it again to resume",
                signals::name(signal)
            ),
        }),
        None => Ok(RoleReport {
            exit_code: report.exit_code,
            message: format!("{feature}: waited {}; {again}", seconds_in_words(wait)),
        }),
    }
}

/// `1m 05s`, `0s`.
fn seconds_in_words(wait: Duration) -> String {
    match wait.as_secs() {
        0 => "0s".to_string(),
        seconds => time::human_duration(seconds),
    }
}

/// What a worker's result.json says besides the run, who ran and when.
#[derive(Debug, Serialize)]
struct WorkerResult<'a> {
    feature_id: &'a str,
    iteration: u32,
    max_iterations: u32,
    outcome: Outcome,
    exit_code: Option<i32>,
    signal: Option<i32>,
    promise_found: bool,
    decision: Decision,
    commits: Option<u64>,
    #[serde(flatten)]
    figures: OutputFigures,
    log_error: Option<&'a str>,
    /// Whether the attempt changed the working tree (commits, files); `None` without git.
    tree_changed: Option<bool>,
    /// The phase the attempt worked in, when the feature has phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<&'a str>,
    /// The gate its promise went through, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    gate: Option<&'a GateRecord>,
    /// The worker's own peak memory, so a flood test can check it stayed bounded.
    worker_peak_rss_kb: Option<u64>,
}

/// result.json of `attempt`, its end recorded in `state`.
fn worker_result<'a>(
    state: &'a RunState,
    attempt: &Attempt,
    run: &'a AgentRun,
    seen: &Seen,
    judgement: &'a Judgement,
) -> WorkerResult<'a> {
    let last = state.attempts().last();
    WorkerResult {
        feature_id: state.feature_id.as_str(),
        iteration: attempt.iteration,
        max_iterations: attempt.max_iterations,
        outcome: judgement.outcome,
        exit_code: last.and_then(|a| a.exit_code),
        signal: last.and_then(|a| a.signal),
        promise_found: seen.promise_found,
        decision: judgement.decision,
        commits: seen.commits,
        figures: OutputFigures::of(run),
        log_error: run.log_error.as_deref(),
        tree_changed: seen.tree_changed,
        phase: last.and_then(|a| a.phase.as_deref()),
        gate: judgement.gate.as_ref().map(|gate| &gate.record),
        worker_peak_rss_kb: peak_rss_kb(),
    }
}

/// This process's peak resident memory, in KiB.
fn peak_rss_kb() -> Option<u64> {
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

    /// Iteration 3 of 10 of F-1, begun.
    fn third_iteration() -> RunState {
        let mut state = RunState::new(FeatureId::parse("F-1").unwrap(), 10, "P", time::now());
        for run in ["r1", "r2", "r3"] {
            state.begin_iteration(run, time::now());
        }
        state
    }

    fn config(extra: &str) -> Config {
        Config::parse(
            &format!("agent:\n  command: [a]\n{extra}"),
            std::path::Path::new("config.yaml"),
        )
        .unwrap()
    }

    fn judged(decision: Decision) -> Judgement {
        Judgement {
            decision,
            outcome: Outcome::NoPromise,
            ended: "ended without the promise".into(),
            streaks: Streaks {
                setback: None,
                held_in_a_row: 0,
                unchanged_in_a_row: 3,
            },
            hold: None,
            guardrail: Guardrail {
                last_iteration: 10,
                phase_cap: None,
            },
            gate: None,
            next_phase: None,
        }
    }

    fn transition_of(decision: Decision, config: &Config, interrupted: bool) -> Transition {
        transition(&third_iteration(), &judged(decision), config, interrupted)
    }

    #[test]
    fn a_complete_feature_goes_to_the_validator_or_lands() {
        let validated = transition_of(Decision::Complete, &config(""), false);
        assert_eq!(validated.change, Change::To(Status::Provisional));
        assert_eq!(validated.exit_code, exit_codes::PROVISIONAL);
        assert_eq!(
            validated.message,
            "F-1 iteration 3/10 delivered the promise; the validator checks it next"
        );
        let unvalidated = transition_of(Decision::Complete, &config("validate: false\n"), false);
        assert_eq!(unvalidated.change, Change::Land);
        assert_eq!(unvalidated.exit_code, exit_codes::DONE);
        assert_eq!(unvalidated.message, "F-1 done on iteration 3/10");
    }

    #[test]
    fn a_restart_goes_on_unless_an_interrupt_came() {
        let restart = transition_of(Decision::Restart, &config(""), false);
        assert_eq!(restart.change, Change::To(Status::Running));
        assert_eq!(restart.exit_code, exit_codes::CONTINUE);
        assert_eq!(
            restart.message,
            "F-1 iteration 3/10: ended without the promise; 7 left"
        );
        let interrupted = transition_of(Decision::Restart, &config(""), true);
        assert_eq!(interrupted.change, Change::To(Status::Pending));
        assert_eq!(interrupted.exit_code, exit_codes::INTERRUPTED);
        assert_eq!(interrupted.message, restart.message);
    }

    #[test]
    fn the_guardrails_stop_with_exit_2() {
        let give_up = transition_of(Decision::GiveUp, &config(""), false);
        assert_eq!(
            give_up.change,
            Change::Fail("max_iterations (10) reached without completion".into())
        );
        assert_eq!(give_up.exit_code, exit_codes::GUARDRAIL);
        assert!(give_up.message.starts_with("F-1 failed: iteration 3/10:"));
        let over = transition_of(Decision::OverBudget, &config(""), false);
        assert_eq!(
            over.change,
            Change::Pause("ended without the promise".into())
        );
        assert_eq!(over.exit_code, exit_codes::GUARDRAIL);
        assert!(over
            .message
            .ends_with("raise the budget in config.yaml to go on"));
        let stalled = transition_of(Decision::Stalled, &config(""), false);
        assert_eq!(
            stalled.change,
            Change::Fail(
                "stalled: 3 iterations in a row changed nothing in the working tree".into()
            )
        );
        assert_eq!(stalled.exit_code, exit_codes::GUARDRAIL);
        assert!(stalled
            .message
            .ends_with("re-break it with `./run.sh replan F-1`"));
    }

    #[test]
    fn a_halt_leaves_the_feature_pending_and_resumable() {
        let halt = transition_of(Decision::Halt, &config(""), false);
        assert_eq!(halt.change, Change::To(Status::Pending));
        assert_eq!(halt.exit_code, exit_codes::INTERRUPTED);
        assert!(halt.message.ends_with("run it again to resume"));
    }

    fn limit(text: &str) -> Setback {
        Setback {
            kind: SetbackKind::Limit,
            text: text.into(),
        }
    }

    fn outage() -> Setback {
        Setback {
            kind: SetbackKind::Outage,
            text: "API Error: Repeated 529 Overloaded errors".into(),
        }
    }

    #[test]
    fn a_limit_holds_up_an_unfinished_agent_and_an_outage_one_whose_cli_gave_up() {
        let (limit, outage) = (limit("usage limit reached"), outage());
        assert_eq!(held_up(End::Exited(1), Some(&limit)), Some(&limit));
        assert_eq!(held_up(End::TimedOut, Some(&limit)), Some(&limit));
        assert_eq!(held_up(End::Exited(0), Some(&limit)), None);
        assert_eq!(held_up(End::Exited(1), Some(&outage)), Some(&outage));
        // A CLI that went on and exited 0 worked its iteration; a silent one met the timers.
        for end in [
            End::Exited(0),
            End::IdleTimedOut,
            End::TimedOut,
            End::Lingered,
        ] {
            assert_eq!(held_up(end, Some(&outage)), None, "{end:?}");
        }
        assert_eq!(held_up(End::Exited(1), None), None);
    }

    /// A worker attempt ending as `outcome`, having changed the tree or not.
    fn ended(state: &mut RunState, outcome: Outcome, changed: bool) {
        let run = format!("r{}", state.attempt_count() + 1);
        state.begin_iteration(&run, time::now());
        let attempt = state.attempt_mut(&run).unwrap();
        attempt.outcome = outcome;
        attempt.tree_changed = Some(changed);
    }

    #[test]
    fn held_attempts_count_in_a_row_in_the_run_and_never_toward_the_stall() {
        let mut state = RunState::new(FeatureId::parse("F-1").unwrap(), 10, "P", time::now());
        ended(&mut state, Outcome::NoPromise, false);
        ended(&mut state, Outcome::RateLimited, false);
        ended(&mut state, Outcome::ServiceError, false);
        ended(&mut state, Outcome::Started, false);
        let unchanged = Seen {
            promise_found: false,
            commits: Some(0),
            tree_changed: Some(false),
            ended_at: time::now(),
        };
        let plain = Streaks::of(&state, &unchanged, None, 2);
        assert_eq!((plain.held_in_a_row, plain.unchanged_in_a_row), (0, 2));
        let held = Streaks::of(&state, &unchanged, Some(SetbackKind::Limit), 2);
        assert_eq!((held.held_in_a_row, held.unchanged_in_a_row), (3, 0));
    }

    #[test]
    fn a_setback_is_waited_out_until_the_waits_run_out_whatever_the_iteration() {
        let held = |in_a_row| Streaks {
            setback: Some(SetbackKind::Outage),
            held_in_a_row: in_a_row,
            unchanged_in_a_row: 5,
        };
        for decision in [Decision::Restart, Decision::GiveUp] {
            assert_eq!(apply_streaks(decision, held(3), 3, 2), Decision::Wait);
            assert_eq!(apply_streaks(decision, held(4), 3, 2), Decision::OutOfWaits);
        }
        for decision in [Decision::Complete, Decision::Halt, Decision::OverBudget] {
            assert_eq!(apply_streaks(decision, held(9), 3, 2), decision);
        }
        let unheld = Streaks {
            setback: None,
            ..held(0)
        };
        assert_eq!(
            apply_streaks(Decision::Restart, unheld, 3, 2),
            Decision::Stalled
        );
        assert_eq!(
            apply_streaks(Decision::Restart, unheld, 3, 0),
            Decision::Restart
        );
    }

    fn at(text: &str) -> Timestamp {
        chrono::DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&chrono::Utc)
    }

    #[test]
    fn a_limit_waits_until_its_reset_time_capped_else_its_wait() {
        let config = config("rate_limit: {wait_secs: 300, max_waits: 5, max_wait_secs: 7200}\n");
        let now = at("2026-11-23T10:00:00Z");
        let soon = Hold::new(&limit("usage limit reached|1795432800"), 1, &config, now);
        // 2026-11-23T11:20:00Z, and the margin.
        assert_eq!(soon.resets_at, Some(at("2026-11-23T11:20:00Z")));
        assert_eq!((soon.wait.as_secs(), soon.capped), (4860, false));
        let late = Hold::new(&limit("usage limit reached|1795514400"), 1, &config, now);
        assert_eq!((late.wait.as_secs(), late.capped), (7200, true));
        let past = Hold::new(&limit("usage limit reached|1700000000"), 1, &config, now);
        assert_eq!((past.wait.as_secs(), past.capped), (300, false));
        let unsaid = Hold::new(&limit("rate limit"), 4, &config, now);
        assert_eq!(
            (unsaid.resets_at, unsaid.wait.as_secs(), unsaid.max_waits),
            (None, 300, 5)
        );
    }

    #[test]
    fn a_service_error_waits_with_back_off_up_to_its_cap() {
        let config = config("service_errors: {wait_secs: 30, max_waits: 9, max_wait_secs: 200}\n");
        let now = time::now();
        let waits: Vec<u64> = (1..=5)
            .map(|n| Hold::new(&outage(), n, &config, now).wait.as_secs())
            .collect();
        assert_eq!(waits, [30, 60, 120, 200, 200]);
        assert_eq!(Hold::new(&outage(), 1, &config, now).max_waits, 9);
    }

    /// The transition of a `decision` held up by `setback`, the `in_a_row`th in a row.
    fn held(decision: Decision, setback: Setback, in_a_row: u32, config: &Config) -> Transition {
        let hold = Hold::new(&setback, in_a_row, config, at("2026-11-23T10:00:00Z"));
        let judgement = Judgement {
            decision,
            outcome: setback.kind.outcome(),
            ended: "agent exited with code 1".into(),
            streaks: Streaks {
                setback: Some(setback.kind),
                held_in_a_row: in_a_row,
                unchanged_in_a_row: 0,
            },
            hold: Some(hold),
            ..judged(decision)
        };
        transition(&third_iteration(), &judgement, config, false)
    }

    #[test]
    fn a_wait_says_why_how_long_and_that_it_is_not_counted() {
        let config = config("rate_limit: {wait_secs: 60, max_waits: 5, max_wait_secs: 3600}\n");
        let wait = held(Decision::Wait, limit("rate limit"), 2, &config);
        assert_eq!(wait.change, Change::Retry);
        assert_eq!(wait.exit_code, exit_codes::CONTINUE);
        assert_eq!(
            wait.message,
            "F-1: the agent met a rate or usage limit (\"rate limit\"); waiting 1m 00s before trying again (wait 2 of 5, not counted as an iteration)"
        );
        let until = held(
            Decision::Wait,
            limit("limit reached|1795432800"),
            1,
            &config,
        );
        assert!(until.message.contains("waiting 1h 00m, the most rate_limit.max_wait_secs allows, though it resets at 2026-11-23T11:20:00Z"), "{}", until.message);
        let soon = held(
            Decision::Wait,
            limit("limit reached|1795429200"),
            1,
            &config,
        );
        assert!(
            soon.message
                .contains("waiting 21m 00s, until it resets at 2026-11-23T10:20:00Z"),
            "{}",
            soon.message
        );
        let outage = held(Decision::Wait, outage(), 3, &config);
        assert!(outage.message.starts_with("F-1: the agent met a service error (\"API Error: Repeated 529 Overloaded errors\"); waiting 2m 00s before trying again (wait 3 of 8,"), "{}", outage.message);
    }

    #[test]
    fn out_of_waits_the_run_stops_with_the_setbacks_reason_resumable() {
        let config = config("rate_limit: {wait_secs: 60, max_waits: 5}\n");
        let stop = held(
            Decision::OutOfWaits,
            limit("limit reached|1795432800"),
            6,
            &config,
        );
        let reason = "a rate or usage limit (\"limit reached|1795432800\") after 5 waits in a row (it resets at 2026-11-23T11:20:00Z)";
        assert_eq!(stop.change, Change::Postpone(reason.into()));
        assert_eq!(stop.exit_code, exit_codes::GUARDRAIL);
        assert!(
            stop.message
                .starts_with("F-1 stopped: the agent met a rate or usage limit"),
            "{}",
            stop.message
        );
        assert!(
            stop.message
                .ends_with("hint: run it again to resume: `./run.sh F-1`"),
            "{}",
            stop.message
        );
        assert!(!stop.message.contains("replan"));
    }

    #[test]
    fn a_used_up_feature_does_not_start() {
        let now = time::now();
        let mut state = RunState::new(FeatureId::parse("F-1").unwrap(), 2, "P", now);
        let guardrail = Guardrail::of(&state, &config(""), None);
        let before_iteration = |state: &RunState| super::before_iteration(state, &guardrail);
        assert_eq!(before_iteration(&state), None);
        state.iteration_count = 2;
        let stop = before_iteration(&state).unwrap();
        assert_eq!(stop.exit_code, exit_codes::GUARDRAIL);
        assert_eq!(
            stop.change,
            Change::Fail("max_iterations (2) reached without completion".into())
        );
        assert!(stop.message.contains("--max-iterations 7"));
        state.status = Status::Failed;
        assert_eq!(before_iteration(&state).unwrap().change, Change::Keep);
        state.status = Status::Done;
        let stop = before_iteration(&state).unwrap();
        assert_eq!(
            (stop.exit_code, stop.change),
            (exit_codes::DONE, Change::Keep)
        );
    }

    #[test]
    fn an_unmerged_feature_only_lands_whatever_its_iterations() {
        let now = time::now();
        let mut state = RunState::new(FeatureId::parse("F-1").unwrap(), 2, "P", now);
        state.status = Status::Unmerged;
        state.iteration_count = 2;
        let guardrail = Guardrail::of(&state, &config(""), None);
        let stop = before_iteration(&state, &guardrail).unwrap();
        assert_eq!(
            (stop.exit_code, stop.change),
            (exit_codes::DONE, Change::Land)
        );
    }

    /// A gate that passed, refused the promise, or was interrupted by a check.
    fn gate(passed: bool, interrupted: bool) -> GateRun {
        use crate::state::lifecycle::{CheckRecord, CommandOutcome};
        let outcome = match (passed, interrupted) {
            (_, true) => CommandOutcome::Interrupted,
            (true, false) => CommandOutcome::Passed,
            (false, false) => CommandOutcome::Failed,
        };
        let check = CheckRecord {
            name: "tests".into(),
            outcome,
            exit_code: (!interrupted).then_some(if passed { 0 } else { 1 }),
            signal: None,
            duration_ms: 1,
            log: "checks/1-tests.log".into(),
        };
        GateRun {
            record: phases::judge_gate(vec![check], Vec::new(), None),
            checks: Vec::new(),
        }
    }

    #[test]
    fn the_gate_voids_a_refused_promise_and_ends_a_passed_phase() {
        let complete = Decision::Complete;
        let (passed, refused, stopped) = (gate(true, false), gate(false, false), gate(false, true));
        // Without phases or checks, as before.
        assert_eq!(after_gate(complete, None, true, 3, 10), Decision::Complete);
        assert_eq!(
            after_gate(complete, Some(&passed), true, 3, 10),
            Decision::Complete
        );
        assert_eq!(
            after_gate(complete, Some(&passed), false, 3, 10),
            Decision::NextPhase
        );
        assert_eq!(
            after_gate(complete, None, false, 3, 10),
            Decision::NextPhase
        );
        assert_eq!(
            after_gate(complete, Some(&refused), true, 3, 10),
            Decision::Restart
        );
        assert_eq!(
            after_gate(complete, Some(&refused), false, 10, 10),
            Decision::GiveUp
        );
        assert_eq!(
            after_gate(complete, Some(&stopped), true, 3, 10),
            Decision::Halt
        );
        // Only a promise goes through a gate.
        for decision in [
            Decision::Restart,
            Decision::GiveUp,
            Decision::Halt,
            Decision::OverBudget,
        ] {
            assert_eq!(after_gate(decision, Some(&refused), true, 3, 10), decision);
        }
    }

    #[test]
    fn a_refused_promise_is_another_iteration_with_the_reasons() {
        let mut judgement = judged(Decision::Complete);
        judgement.outcome = Outcome::Completed;
        judgement.ended = "completed with the promise".into();
        let refused = judgement
            .clone()
            .after_gate(Some(gate(false, false)), None, true, 3);
        assert_eq!(refused.decision, Decision::Restart);
        assert_eq!(refused.outcome, Outcome::GateFailed);
        assert_eq!(
            refused.ended,
            "delivered the promise, but the gate refused it: check `tests` failed: exit code 1"
        );
        let restart = transition(&third_iteration(), &refused, &config(""), false);
        assert_eq!(restart.exit_code, exit_codes::CONTINUE);
        assert!(
            restart.message.ends_with("exit code 1; 7 left"),
            "{}",
            restart.message
        );
        let passed = judgement
            .clone()
            .after_gate(Some(gate(true, false)), None, true, 3);
        assert_eq!(
            (passed.decision, passed.outcome),
            (Decision::Complete, Outcome::Completed)
        );
        let stopped = judgement.after_gate(Some(gate(false, true)), None, true, 3);
        assert_eq!(
            (stopped.decision, stopped.outcome),
            (Decision::Halt, Outcome::Interrupted)
        );
        let halt = transition(&third_iteration(), &stopped, &config(""), true);
        assert_eq!(halt.exit_code, exit_codes::INTERRUPTED);
        assert!(
            halt.message.contains("its checks were interrupted"),
            "{}",
            halt.message
        );
    }

    /// Iteration 3 of 10, in phase `plan` (1 of 2), begun after iteration 1.
    fn in_plan() -> (RunState, Config) {
        let config = config("phases:\n  - {name: plan, max_iterations: 2}\n  - {name: build}\n");
        let mut state = third_iteration();
        state.phase = Some(phases::start(&config.phases, 0, 1, None));
        (state, config)
    }

    #[test]
    fn a_passed_phase_hands_over_to_the_next_within_max_iterations() {
        let (mut state, config) = in_plan();
        let mut judgement = judged(Decision::NextPhase);
        judgement.next_phase = Some(phases::start(&config.phases, 1, 3, None));
        let next = transition(&state, &judgement, &config, false);
        assert_eq!(next.change, Change::To(Status::Running));
        assert_eq!(next.exit_code, exit_codes::CONTINUE);
        assert_eq!(
            next.message,
            "F-1 passed phase plan (1 of 2) on iteration 3/10; phase build (2 of 2) is next"
        );
        assert_eq!(
            transition(&state, &judgement, &config, true).exit_code,
            exit_codes::INTERRUPTED
        );
        state.max_iterations = 3;
        let last = transition(&state, &judgement, &config, false);
        assert_eq!(last.exit_code, exit_codes::GUARDRAIL);
        assert_eq!(
            last.change,
            Change::Fail("max_iterations (3) reached; phase build (2 of 2) is next".into())
        );
        assert!(
            last.message
                .ends_with("hint: continue with `./run.sh F-1 --max-iterations 8`"),
            "{}",
            last.message
        );
    }

    #[test]
    fn a_phase_cap_comes_before_max_iterations() {
        let (state, config) = in_plan();
        let guardrail = Guardrail::of(&state, &config, Some(0));
        assert_eq!(guardrail.last_iteration, 3);
        assert_eq!(guardrail.phase_cap, Some(("plan".to_string(), 2)));
        assert_eq!(
            on_agent_stop(End::Exited(0), false, 3, guardrail.last_iteration),
            Decision::GiveUp
        );
        let mut judgement = judged(Decision::GiveUp);
        judgement.guardrail = guardrail.clone();
        let give_up = transition(&state, &judgement, &config, false);
        assert_eq!(
            give_up.change,
            Change::Fail("phase plan's max_iterations (2) reached without passing its gate".into())
        );
        assert!(
            give_up.message.contains(
                "and phase plan's max_iterations is reached\nhint: raise that phase's max_iterations"
            ),
            "{}",
            give_up.message
        );
        let stop = before_iteration(&state, &guardrail).unwrap();
        assert!(
            stop.message.contains("used all 2 iterations of phase plan"),
            "{}",
            stop.message
        );
        // A cap past max_iterations changes nothing; the next phase has none.
        let mut late = state.clone();
        late.max_iterations = 2;
        assert_eq!(Guardrail::of(&late, &config, Some(0)).phase_cap, None);
        assert_eq!(Guardrail::of(&state, &config, Some(1)).last_iteration, 10);
    }
}
