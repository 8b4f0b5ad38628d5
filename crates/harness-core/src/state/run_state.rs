//! The run state of one feature, `runs/<FEATURE>/state.json`: the one place its status lives
//! (the seed's `runs` table, a file per row), with the worktree the feature works in, and the
//! record of each attempt, most of them in the append-only `attempts.jsonl` beside it (see
//! `run_state/attempts.rs`). Written atomically and flushed: the commit point of an iteration. Also which
//! features have a run state ([`load_states`]) and which one a process is running now
//! ([`is_being_run`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::atomic::write_json;
use crate::base::error::InputError;
use crate::base::fs;
use crate::base::locks;
use crate::base::time::Timestamp;
use crate::spec::features::{FeatureId, FeatureList};
use crate::spec::layout::StateDir;
use crate::spec::role::Role;
use crate::state::lifecycle::{GateRecord, PhaseState};
use crate::state::usage::UsageRecord;

mod attempts;

use attempts::Attempts;
pub use attempts::{log_beside, Spent, LOG_NAME};

/// How many of its attempts a run state loaded for an invocation holds in memory
/// ([`RunState::load_recent`]): the guardrails that look across attempts (streaks) see this many
/// at most, and a worker running thousands of iterations in one process stays the same size.
pub const RECENT_ATTEMPTS: usize = 256;

/// Where a feature stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started, or interrupted and waiting to be resumed.
    Pending,
    /// An invocation is (or was, if it was killed) under way.
    Running,
    /// The worker delivered the promise; waiting for the validator.
    Provisional,
    /// Accepted.
    Done,
    /// Accepted, but its worktree's branch is not merged back yet: git refused the merge (the
    /// reason says why and what to do), or a kill interrupted it. The next run merges it, without
    /// running an agent again.
    Unmerged,
    /// Stopped by a guardrail or rejected for good.
    Failed,
    /// Cannot run (a dependency failed or is not merged).
    Blocked,
}

impl Status {
    /// The lowercase name shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Provisional => "provisional",
            Status::Done => "done",
            Status::Unmerged => "unmerged",
            Status::Failed => "failed",
            Status::Blocked => "blocked",
        }
    }
}

/// How one invocation of an agent ended, from the harness's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Started and not (yet) recorded as ended: still running, or killed with the harness.
    Started,
    /// The agent exited 0 with the completion promise in its answer.
    Completed,
    /// The agent exited 0 without the promise.
    NoPromise,
    /// The agent exited non-zero.
    AgentError,
    /// The agent was killed by a signal it did not get from the harness.
    Crashed,
    /// The per-invocation timeout ran out and the harness killed the agent.
    TimedOut,
    /// Ctrl-C or SIGTERM stopped the invocation, or the harness itself was killed during it.
    Interrupted,
    /// The context filled up; a fresh agent continues (an iteration, not a failure).
    Handoff,
    /// Stopped because a token, cost or time budget ran out.
    OverBudget,
    /// The agent hit a rate or usage limit; the harness waited (not counted as an iteration).
    RateLimited,
    /// The service failed the agent (overloaded, a server error, a lost connection); the harness
    /// waited (not counted as an iteration).
    ServiceError,
    /// The agent delivered the promise, but its gate refused it: a check failed, or the phase
    /// changed paths outside its allow list.
    GateFailed,
    /// The agent delivered the promise and the phase passed its gate; the next phase follows.
    PhasePassed,
    /// Accepted: the validator's pass.
    Verified,
    /// Turned down: the validator's fail (or no clear verdict), or a planner's invalid plan.
    Rejected,
}

impl Outcome {
    /// Whether the service, not the agent, ended the attempt: it was waited out and is no
    /// iteration (see `agent::format::setback`).
    pub fn is_setback(self) -> bool {
        matches!(self, Outcome::RateLimited | Outcome::ServiceError)
    }

    /// Words for notes and raw.md.
    pub fn describe(self) -> &'static str {
        match self {
            Outcome::Started => "started",
            Outcome::Completed => "completed with the promise",
            Outcome::NoPromise => "ended without the promise",
            Outcome::AgentError => "agent exited with an error",
            Outcome::Crashed => "agent crashed",
            Outcome::TimedOut => "agent timed out",
            Outcome::Interrupted => "interrupted",
            Outcome::Handoff => "handed off: the context was full",
            Outcome::OverBudget => "stopped: a budget ran out",
            Outcome::RateLimited => "hit a rate or usage limit",
            Outcome::ServiceError => "met a service error",
            Outcome::GateFailed => "delivered the promise, but the gate refused it",
            Outcome::PhasePassed => "passed the phase's gate",
            Outcome::Verified => "verified",
            Outcome::Rejected => "rejected",
        }
    }
}

/// One invocation of one role on the feature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The run id (also the run directory's name).
    pub run_id: String,
    pub role: Role,
    /// The worker iteration this attempt was (or followed, for other roles).
    pub iteration: u32,
    pub started_at: Timestamp,
    /// When it ended; `None` while started.
    #[serde(default)]
    pub ended_at: Option<Timestamp>,
    pub outcome: Outcome,
    /// The agent's exit code, when it exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that killed the agent, when one did.
    #[serde(default)]
    pub signal: Option<i32>,
    /// Whether the completion promise was in the agent's answer.
    #[serde(default)]
    pub promise_found: bool,
    /// Turns the agent reported; `None` when it reports none.
    #[serde(default)]
    pub turns: Option<u64>,
    /// New commits in the working directory during the attempt; `None` without git.
    #[serde(default)]
    pub commits: Option<u64>,
    /// All tokens the agent reported; `None` when unknown.
    #[serde(default)]
    pub tokens: Option<u64>,
    /// Cost in USD, reported or estimated (see `usage`); `None` when unknown (never a fake 0).
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Bytes of output.
    #[serde(default)]
    pub output_bytes: u64,
    /// Whether the attempt changed the working tree (new commits, files); `None` without git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_changed: Option<bool>,
    /// The normalised usage: tokens by kind, the cost and its source, the final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageRecord>,
    /// Memory entries the agent printed past the most one invocation may leave, not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub memory_entries_dropped: usize,
    /// The phase it worked in, when the feature has phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The gate its promise went through (checks, the phase's allowed paths), when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateRecord>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// Where a feature works when it has its own worktree (kept in its run state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The worktree's directory (the feature's working directory).
    pub path: PathBuf,
    /// Its branch, `harness/<FEATURE>`.
    pub branch: String,
    /// The project's main working directory, where the branch is merged back.
    pub main: PathBuf,
    /// The branch the mission started on, which receives the merge.
    pub base_branch: String,
    /// The commit that holds the accepted work, once landing has begun: what counts as merged
    /// even when the branch is gone (merged and deleted by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tip: Option<String>,
}

/// The run state of one feature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The feature it is the state of: [`RunState::load`] refuses a state naming another.
    pub feature_id: FeatureId,
    pub status: Status,
    /// Worker iterations started so far (an interrupted one counts: it never goes back).
    pub iteration_count: u32,
    /// The guardrail, fixed when the feature starts; `--max-iterations` raises it.
    pub max_iterations: u32,
    /// The promise word, fixed when the feature starts.
    pub completion_promise: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When it became done or failed.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
    /// Why it stopped, in words, when it is failed or blocked.
    #[serde(default)]
    pub reason: Option<String>,
    /// The git worktree the feature works in, when it runs in parallel with others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<Worktree>,
    /// Every invocation, oldest first (see [`RunState::attempts`]); state.json holds those not
    /// in attempts.jsonl yet.
    #[serde(default)]
    attempts: Attempts,
    /// The features the planner re-broke this one into (`replan`); set, the feature is superseded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded_by: Vec<FeatureId>,
    /// The phase it is in, when config.yaml has `phases:` (absent: one phase, as without them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PhaseState>,
}

impl RunState {
    /// A fresh state for a feature that has never run.
    pub fn new(
        feature_id: FeatureId,
        max_iterations: u32,
        completion_promise: &str,
        now: Timestamp,
    ) -> Self {
        Self {
            feature_id,
            status: Status::Pending,
            iteration_count: 0,
            max_iterations,
            completion_promise: completion_promise.to_string(),
            created_at: now,
            updated_at: now,
            finished_at: None,
            reason: None,
            worktree: None,
            attempts: Attempts::default(),
            superseded_by: Vec::new(),
            phase: None,
        }
    }

    /// Reads `path`, the run state of `feature`, with every attempt; `Ok(None)` when the feature
    /// has never run. A state naming another feature (a file copied or moved by hand) is an
    /// error, never trusted.
    pub fn load(path: &Path, feature: &FeatureId) -> Result<Option<Self>, InputError> {
        Self::load_holding(path, feature, usize::MAX)
    }

    /// [`RunState::load`], holding only the newest [`RECENT_ATTEMPTS`] attempts in memory (the
    /// older ones are counted, and what they spent added up): what an invocation needs.
    pub fn load_recent(path: &Path, feature: &FeatureId) -> Result<Option<Self>, InputError> {
        Self::load_holding(path, feature, RECENT_ATTEMPTS)
    }

    /// Reads the run state and its attempts log, holding at most `keep` of the log's attempts.
    /// This is how every reader gets a feature's attempts: the status board, the report, the
    /// budgets, the guardrails, a resumed run.
    fn load_holding(
        path: &Path,
        feature: &FeatureId,
        keep: usize,
    ) -> Result<Option<Self>, InputError> {
        let Some(mut state) = crate::spec::config::read_json::<Self>(
            path,
            "run state",
            "fix the JSON by hand, or move the feature's runs/ directory away to start it afresh",
        )?
        else {
            return Ok(None);
        };
        if &state.feature_id != feature {
            return Err(InputError::in_file(
                path,
                format!(
                    "the run state of {}, not of {feature}",
                    state.feature_id
                ),
            )
            .with_hint(format!(
                "put it back where it belongs (runs/{}/), or move it away to start {feature} afresh",
                state.feature_id
            )));
        }
        state.attempts.read_log(&log_beside(path), keep)?;
        Ok(Some(state))
    }

    /// From now on, holds only the newest [`RECENT_ATTEMPTS`] attempts in memory once they are
    /// written (a state made with [`RunState::new`] for an invocation).
    pub fn hold_recent(&mut self) {
        self.attempts.hold_at_most(RECENT_ATTEMPTS);
    }

    /// Writes the state: first the attempts that ended to the log, then state.json atomically
    /// and flushed (`run_state/attempts.rs` says which attempts it carries).
    pub fn save(&mut self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        self.attempts.write_log(&log_beside(path))?;
        write_json(path, self)?;
        self.attempts.trim();
        Ok(())
    }

    /// The attempts held in memory, oldest first: every attempt, or, when loaded with
    /// [`RunState::load_recent`], the newest ones.
    pub fn attempts(&self) -> &[Attempt] {
        self.attempts.held()
    }

    /// The attempts not written to the log yet, which may still change.
    pub fn attempts_mut(&mut self) -> &mut [Attempt] {
        self.attempts.unwritten_mut()
    }

    /// How many attempts the feature has had, held in memory or not.
    pub fn attempt_count(&self) -> u64 {
        self.attempts.count()
    }

    /// What all of the feature's attempts spent, held in memory or not.
    pub fn spent(&self) -> Spent {
        self.attempts.spent()
    }

    /// Marks attempts left `started` by a killed harness as interrupted; returns how many.
    /// Only call this while holding the feature's lock, so no live attempt is touched.
    pub fn recover_interrupted(&mut self, now: Timestamp) -> usize {
        let mut recovered = 0;
        for attempt in self.attempts.unwritten_mut() {
            if attempt.outcome == Outcome::Started {
                attempt.outcome = Outcome::Interrupted;
                attempt.ended_at = Some(now);
                recovered += 1;
            }
        }
        if recovered > 0 && self.status == Status::Running {
            self.status = Status::Pending;
            self.updated_at = now;
        }
        recovered
    }

    /// Whether it failed at its iteration guardrail: the reasons the worker and the validator
    /// give then start `max_iterations (N) reached`. Not a phase's own cap (config.yaml raises
    /// that), nor a stall (`replan` mends that).
    pub fn failed_at_guardrail(&self) -> bool {
        self.status == Status::Failed
            && self
                .reason
                .as_deref()
                .is_some_and(|reason| reason.starts_with("max_iterations ("))
    }

    /// Whether a guardrail of `max_iterations` makes this feature resumable: it failed at its
    /// guardrail, and that many iterations leave it some.
    pub fn reopened_by(&self, max_iterations: u32) -> bool {
        self.failed_at_guardrail() && self.iteration_count < max_iterations
    }

    /// Raises (or sets) the guardrail; a failed feature that now has iterations left is resumable.
    pub fn set_max_iterations(&mut self, max_iterations: u32, now: Timestamp) {
        self.max_iterations = max_iterations;
        if self.reopened_by(max_iterations) {
            self.status = Status::Pending;
            self.reason = None;
            self.finished_at = None;
        }
        self.updated_at = now;
    }

    /// Starts the next worker iteration: counts it and records a `started` attempt. Whatever
    /// stopped the feature before (a budget, a setback) no longer does: its reason goes.
    pub fn begin_iteration(&mut self, run_id: &str, now: Timestamp) -> u32 {
        self.iteration_count += 1;
        self.status = Status::Running;
        self.reason = None;
        self.begin_attempt(run_id, Role::Worker, now);
        self.iteration_count
    }

    /// Marks the feature failed for `reason`.
    pub fn fail(&mut self, reason: String, now: Timestamp) {
        self.status = Status::Failed;
        self.reason = Some(reason);
        self.finished_at = Some(now);
        self.updated_at = now;
    }

    /// Records a `started` attempt of `role` (not a worker iteration: the count stays).
    pub fn begin_attempt(&mut self, run_id: &str, role: Role, now: Timestamp) {
        self.updated_at = now;
        self.attempts.push(Attempt {
            run_id: run_id.to_string(),
            role,
            iteration: self.iteration_count,
            started_at: now,
            ended_at: None,
            outcome: Outcome::Started,
            exit_code: None,
            signal: None,
            promise_found: false,
            turns: None,
            commits: None,
            tokens: None,
            cost_usd: None,
            output_bytes: 0,
            tree_changed: None,
            usage: None,
            memory_entries_dropped: 0,
            phase: self.phase.as_ref().map(|phase| phase.name.clone()),
            gate: None,
        });
    }

    /// The attempt with `run_id` (ids are unique), if it is not written to the log yet: an
    /// attempt's record changes until it ends, never after.
    pub fn attempt_mut(&mut self, run_id: &str) -> Option<&mut Attempt> {
        self.attempts
            .unwritten_mut()
            .iter_mut()
            .rev()
            .find(|a| a.run_id == run_id)
    }
}

/// The features the run state of `feature` at `path` says it was re-broken into, read from
/// state.json alone (its attempts are not read); none when it is missing, unreadable or
/// another feature's.
pub fn superseded_by(path: &Path, feature: &FeatureId) -> Vec<FeatureId> {
    #[derive(Deserialize)]
    struct Head {
        feature_id: FeatureId,
        #[serde(default)]
        superseded_by: Vec<FeatureId>,
    }
    fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Head>(&bytes).ok())
        .filter(|head| &head.feature_id == feature)
        .map(|head| head.superseded_by)
        .unwrap_or_default()
}

/// The run state of each feature that has one.
pub type States = BTreeMap<FeatureId, RunState>;

/// Reads the run state of every feature of `features` that has one.
pub fn load_states(state_dir: &StateDir, features: &FeatureList) -> Result<States, InputError> {
    let mut states = States::new();
    for feature in &features.features {
        if let Some(state) = RunState::load(&state_dir.run_state(&feature.id), &feature.id)? {
            states.insert(feature.id.clone(), state);
        }
    }
    Ok(states)
}

/// The locks a run of the feature holds: run.sh's, and the running role's invocation lock.
fn run_locks(state_dir: &StateDir, id: &FeatureId) -> [PathBuf; 2] {
    [state_dir.feature_lock(id), state_dir.invocation_lock(id)]
}

/// Whether a process is running the feature now: one of its [`run_locks`] is held.
pub fn is_being_run(state_dir: &StateDir, id: &FeatureId) -> bool {
    run_locks(state_dir, id)
        .iter()
        .any(|lock| locks::is_held(lock))
}

/// Who runs the feature now, as the holder of a run lock wrote it; `None` when no one does.
pub fn run_holder(state_dir: &StateDir, id: &FeatureId) -> Option<String> {
    run_locks(state_dir, id)
        .iter()
        .find_map(|lock| locks::holder(lock))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::at;

    fn state() -> RunState {
        RunState::new(
            FeatureId::parse("F-001").unwrap(),
            3,
            "TASK_COMPLETE",
            at(0),
        )
    }

    #[test]
    fn round_trips_through_json_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs/F-001/state.json");
        let mut state = state();
        state.begin_iteration("1-worker-F-001", at(1));
        state.save(&path).unwrap();
        let loaded = RunState::load(&path, &state.feature_id).unwrap().unwrap();
        assert_eq!(loaded, state);
        assert!(
            RunState::load(&dir.path().join("none.json"), &state.feature_id)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn the_state_of_another_feature_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs/F-002/state.json");
        state().save(&path).unwrap();
        let error = RunState::load(&path, &FeatureId::parse("F-002").unwrap()).unwrap_err();
        assert!(
            error
                .message
                .contains("the run state of F-001, not of F-002"),
            "{error}"
        );
    }

    #[test]
    fn a_killed_attempt_becomes_interrupted_and_the_count_stays() {
        let mut state = state();
        state.begin_iteration("r1", at(1));
        assert_eq!(state.recover_interrupted(at(2)), 1);
        assert_eq!(state.attempts()[0].outcome, Outcome::Interrupted);
        assert_eq!(state.iteration_count, 1);
        assert_eq!(state.status, Status::Pending);
        assert_eq!(state.recover_interrupted(at(3)), 0);
    }

    #[test]
    fn raising_the_guardrail_reopens_a_feature_failed_at_it() {
        let mut state = state();
        state.iteration_count = 3;
        state.fail(
            "max_iterations (3) reached without completion".into(),
            at(1),
        );
        state.set_max_iterations(3, at(1));
        assert_eq!(state.status, Status::Failed);
        state.set_max_iterations(5, at(2));
        assert_eq!(state.status, Status::Pending);
        assert_eq!(state.max_iterations, 5);
    }

    /// Regression: `all --max-iterations N` reopened a feature failed at a phase's own cap,
    /// which then failed again at once.
    #[test]
    fn raising_the_guardrail_leaves_other_failures_failed() {
        for reason in [
            "phase plan's max_iterations (2) reached without passing its gate",
            "stalled: 3 iterations in a row changed nothing in the working tree",
        ] {
            let mut state = state();
            state.iteration_count = 3;
            state.fail(reason.into(), at(1));
            assert!(!state.reopened_by(10), "{reason}");
            state.set_max_iterations(10, at(2));
            assert_eq!(state.status, Status::Failed, "{reason}");
        }
    }

    #[test]
    fn unreadable_state_is_an_input_error_with_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, "{\n  \"status\": \n").unwrap();
        let error = RunState::load(&path, &state().feature_id).unwrap_err();
        assert!(error.line.is_some());
        assert!(error.message.contains("unreadable run state"));
    }

    /// A state of `ended` attempts that ended and one begun, saved at `path` iteration by
    /// iteration as a worker does (`once`: at the end only).
    fn saved_state(path: &Path, ended: u32) -> RunState {
        written_state(path, ended, false)
    }

    fn written_state(path: &Path, ended: u32, once: bool) -> RunState {
        let mut state = state();
        state.max_iterations = 10_000;
        for n in 1..=ended + 1 {
            state.begin_iteration(&format!("r{n}"), at(i64::from(n)));
            if n <= ended {
                let attempt = state.attempt_mut(&format!("r{n}")).unwrap();
                attempt.outcome = Outcome::NoPromise;
                attempt.ended_at = Some(at(i64::from(n) + 1));
                attempt.tokens = Some(10);
            }
            if !once || n == ended + 1 {
                state.save(path).unwrap();
            }
        }
        state
    }

    fn run_ids(state: &RunState) -> Vec<String> {
        state.attempts().iter().map(|a| a.run_id.clone()).collect()
    }

    fn json_attempts(path: &Path) -> usize {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        json["attempts"].as_array().unwrap().len()
    }

    #[test]
    fn ended_attempts_go_to_the_log_and_state_json_stays_small() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs/F-001/state.json");
        let state = saved_state(&path, 30);
        let loaded = RunState::load(&path, &state.feature_id).unwrap().unwrap();
        assert_eq!(loaded, state);
        assert_eq!(loaded.attempts().len(), 31);
        assert_eq!(loaded.attempts()[30].outcome, Outcome::Started);
        // state.json carries the attempt begun and at most a few the log has not flushed yet.
        assert!(json_attempts(&path) <= 1 + 8, "{}", json_attempts(&path));
        let log = std::fs::read_to_string(log_beside(&path)).unwrap();
        assert!(log.lines().count() >= 30 - 8);
        assert!(log.lines().all(|line| line.contains("\"no_promise\"")));
    }

    #[test]
    fn a_state_json_of_an_older_version_loads_whole_and_moves_to_the_log_on_its_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs/F-001/state.json");
        let mut older = saved_state(&path, 12);
        // What an older version wrote: every attempt in state.json, no log.
        std::fs::remove_file(log_beside(&path)).unwrap();
        let mut json = serde_json::to_value(&older).unwrap();
        json["attempts"] = serde_json::to_value(older.attempts()).unwrap();
        std::fs::write(&path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
        let mut loaded = RunState::load(&path, &older.feature_id).unwrap().unwrap();
        assert_eq!(run_ids(&loaded), run_ids(&older));
        loaded.save(&path).unwrap();
        assert_eq!(json_attempts(&path), 1);
        assert_eq!(
            std::fs::read_to_string(log_beside(&path))
                .unwrap()
                .lines()
                .count(),
            12
        );
        let again = RunState::load(&path, &older.feature_id).unwrap().unwrap();
        older.attempts.trim();
        assert_eq!(run_ids(&again), run_ids(&older));
        assert_eq!(again.spent().tokens, Some(120));
    }

    #[test]
    fn an_attempt_in_both_the_log_and_state_json_counts_once_as_the_log_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs/F-001/state.json");
        let mut state = saved_state(&path, 2);
        let begun = std::fs::read(&path).unwrap();
        // The third attempt ends and reaches the log; a kill comes before state.json is written.
        let attempt = state.attempt_mut("r3").unwrap();
        attempt.outcome = Outcome::Crashed;
        attempt.ended_at = Some(at(9));
        state.save(&path).unwrap();
        std::fs::write(&path, begun).unwrap();
        let mut loaded = RunState::load(&path, &state.feature_id).unwrap().unwrap();
        assert_eq!(run_ids(&loaded), ["r1", "r2", "r3"]);
        assert_eq!(loaded.attempts()[2].outcome, Outcome::Crashed);
        assert_eq!(loaded.recover_interrupted(at(10)), 0);
        // Written again, the log does not get it twice.
        loaded.begin_iteration("r4", at(11));
        loaded.save(&path).unwrap();
        let again = RunState::load(&path, &state.feature_id).unwrap().unwrap();
        assert_eq!(run_ids(&again), ["r1", "r2", "r3", "r4"]);
    }

    #[test]
    fn a_torn_last_line_of_the_log_is_dropped_and_the_next_record_starts_on_a_new_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs/F-001/state.json");
        let state = saved_state(&path, 20);
        let log = log_beside(&path);
        let whole = std::fs::read(&log).unwrap();
        let mut torn = whole.clone();
        torn.extend_from_slice(b"{\"run_id\":\"r99\",\"role\":\"wor");
        std::fs::write(&log, &torn).unwrap();
        let mut loaded = RunState::load(&path, &state.feature_id).unwrap().unwrap();
        assert_eq!(run_ids(&loaded), run_ids(&state));
        loaded.recover_interrupted(at(50));
        loaded.save(&path).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.starts_with(std::str::from_utf8(&whole).unwrap()));
        assert!(!text.contains("r99"));
        assert!(text.ends_with("\n"));
        let again = RunState::load(&path, &state.feature_id).unwrap().unwrap();
        assert_eq!(again.attempts().len(), 21);
        assert_eq!(again.attempts()[20].outcome, Outcome::Interrupted);
    }

    #[test]
    fn a_line_of_the_log_that_is_no_attempt_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs/F-001/state.json");
        let state = saved_state(&path, 20);
        let log = log_beside(&path);
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.insert_str(0, "my own note\n");
        std::fs::write(&log, text).unwrap();
        let error = RunState::load(&path, &state.feature_id).unwrap_err();
        assert_eq!(error.line, Some(1));
        assert!(
            error.message.contains("unreadable attempt record"),
            "{error}"
        );
        assert!(error.to_string().contains("attempts.jsonl"), "{error}");
    }

    #[test]
    fn a_recent_load_holds_the_newest_attempts_and_counts_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs/F-001/state.json");
        let all = RECENT_ATTEMPTS as u32 + 100;
        let state = written_state(&path, all, true);
        let recent = RunState::load_recent(&path, &state.feature_id)
            .unwrap()
            .unwrap();
        // The newest of the log, and those only state.json holds.
        let held = recent.attempts().len();
        assert!(
            (RECENT_ATTEMPTS..=RECENT_ATTEMPTS + 9).contains(&held),
            "{held}"
        );
        assert_eq!(recent.attempt_count(), u64::from(all) + 1);
        assert_eq!(recent.spent(), state.spent());
        assert_eq!(recent.spent().tokens, Some(u64::from(all) * 10));
        assert_eq!(recent.attempts().last(), state.attempts().last());
        // A worker that keeps its state holds no more as it goes on.
        let mut kept = recent;
        kept.recover_interrupted(at(0));
        for n in all + 2..all + 40 {
            kept.begin_iteration(&format!("r{n}"), at(i64::from(n)));
            let attempt = kept.attempt_mut(&format!("r{n}")).unwrap();
            attempt.outcome = Outcome::NoPromise;
            kept.save(&path).unwrap();
        }
        assert!(kept.attempts().len() <= RECENT_ATTEMPTS + RECENT_ATTEMPTS / 8 + 8 + 1);
        let whole = RunState::load(&path, &state.feature_id).unwrap().unwrap();
        assert_eq!(whole.attempts().len() as u64, kept.attempt_count());
    }
}
