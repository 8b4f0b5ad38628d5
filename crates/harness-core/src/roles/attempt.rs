//! One attempt of a role's agent, written once for every role that runs one (the worker, the
//! validator, the planner's `plan` and `replan`, the curator's `--agent`):
//!
//! 1. **open**: a [`Session`] on the feature checks the inputs before anything changes, takes the
//!    feature's locks and loads its run state, recovering an attempt a killed harness left
//!    `started` (a role on the whole mission has no session);
//! 2. **run**: an [`Attempt`] names the run (its id, its directory, L0); [`Session::begin`]
//!    writes `prompt.md` and records the attempt as started before [`Session::run`] starts the
//!    agent with the contract's environment;
//! 3. **harvest**: the agent's answer, its memory entries and its usage ([`AgentRun`]);
//! 4. **record**: the attempt's end in the run state ([`Session::record_end`]), raw.md's lines
//!    ([`Attempt::raw_entries`]), `result.json` ([`Attempt::write_result`]);
//! 5. **finish**: the role's [`Transition`] applied to the run state, which is written once;
//!    then the hooks hear what happened ([`Session::conclude`], `roles::lifecycle`).
//!
//! Each role supplies only its prompt, its markers, its decision and its pure transition from
//! that decision to the feature's status, the message and the exit code.

use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::agent::{self, progress, AgentRun, Enclosure, Limits, Redactor};
use crate::base::atomic::{replace, replace_json, Flush};
use crate::base::error::InputError;
use crate::base::exit_codes;
use crate::base::fs;
use crate::base::locks::{self, Lock};
use crate::base::time::{self, Timestamp};
use crate::roles::inputs::{self, InputMemo, Inputs, Launcher, Layers};
use crate::roles::lifecycle::events::{self, Payload, Scene};
use crate::roles::lifecycle::hooks::{self, Emitter};
use crate::roles::prompt::RuntimeContext;
use crate::spec::config::{AgentConfig, Config, OutputFormat};
use crate::spec::features::FeatureId;
use crate::spec::layout::{HarnessHome, RunId, StateDir};
use crate::spec::presets::PROMPT_FILE_PLACEHOLDER;
use crate::spec::role::Role;
use crate::state::budget::{self, Exceeded, Remaining, Spent};
use crate::state::memory::{self, RawEntry, Tag};
use crate::state::notes;
use crate::state::run_state::{Outcome, RunState, Status};
use crate::state::usage::UsageRecord;
use crate::state::worktree;

/// The name standing for the whole mission where a feature id goes (run ids of the roles that
/// work on the whole mission).
pub const MISSION: &str = "mission";

/// Where a role runs, and how: the same for every role binary.
#[derive(Debug, Clone)]
pub struct Place {
    /// The project directory (the agent's working directory).
    pub workdir: PathBuf,
    /// The `.harness/` directory.
    pub state: StateDir,
    /// The harness install (roles, identity).
    pub home: HarnessHome,
    /// Copy the agent's output to stdout and show the live status line on stderr.
    pub echo: bool,
    /// `PATH`, to find the agent.
    pub path_var: Option<OsString>,
}

/// A role invocation on one feature, as run.sh (or a user) asks for it.
#[derive(Debug, Clone)]
pub struct FeatureRequest {
    pub place: Place,
    pub feature: FeatureId,
    /// The run id run.sh made; generated when absent.
    pub run_id: Option<RunId>,
    /// run.sh holds the feature lock for its whole run; a role run by hand takes it itself.
    pub caller_holds_feature_lock: bool,
}

/// What a role invocation ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleReport {
    /// The exit code (see [`crate::base::exit_codes`]).
    pub exit_code: u8,
    /// One line for the user.
    pub message: String,
}

/// What a role's decision does to the feature's run state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Nothing: the status stays.
    Keep,
    /// The status stays; the reason is recorded (a budget that stops the feature before it runs).
    Note(String),
    /// The feature goes to this status.
    To(Status),
    /// Back to pending, with the reason it stopped (a budget ran out during the attempt).
    Pause(String),
    /// Back to pending, the attempt not counted as an iteration: the next one gets its number.
    Retry,
    /// Back to pending with the reason it stopped, the attempt not counted as an iteration (the
    /// service held it up once more than the waits allow).
    Postpone(String),
    /// The feature failed, for this reason.
    Fail(String),
    /// The feature is accepted: merged back from its worktree if it has one, then done; blocked
    /// when the merge conflicts.
    Land,
}

/// A role's transition: what its decision does to the feature, the message and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub change: Change,
    /// One line for the user (also raw.md's outcome line).
    pub message: String,
    /// The exit code, if the change goes as planned (a landing can block the feature).
    pub exit_code: u8,
}

impl Transition {
    /// A transition with this change, exit code and message.
    pub fn new(change: Change, exit_code: u8, message: impl Into<String>) -> Self {
        Self {
            change,
            message: message.into(),
            exit_code,
        }
    }

    /// The budget `exceeded` stops the feature before its agent runs (exit 2, naming the budget).
    pub fn over_budget(feature: &FeatureId, exceeded: &Exceeded, config: &Path) -> Self {
        Self::new(
            Change::Note(exceeded.to_string()),
            exit_codes::GUARDRAIL,
            format!(
                "{feature} stopped: {exceeded}\nhint: raise it under `budgets:` in {}",
                config.display()
            ),
        )
    }

    /// The budget that stops the feature, when this is [`Transition::over_budget`].
    pub fn budget(&self) -> Option<&str> {
        match &self.change {
            Change::Note(budget) => Some(budget),
            _ => None,
        }
    }

    /// A hook with `on_error: stop` failed (`failure` says how): the feature in `state` stops
    /// there, resumable (exit 2). A provisional feature stays provisional, for the validator.
    pub fn stopped_by_hook(state: &RunState, failure: &str) -> Self {
        let change = match state.status {
            Status::Provisional => Change::Note(failure.to_string()),
            _ => Change::Pause(failure.to_string()),
        };
        Self::new(
            change,
            exit_codes::GUARDRAIL,
            format!("{} stopped: {failure} (on_error: stop)\nhint: fix the hook or its on_error in config.yaml, then run it again to resume", state.feature_id),
        )
    }
}

/// One run of a role's agent: its id, its directory (`prompt.md` exactly as sent, `output.log`,
/// `result.json`), L0, and how the agent runs.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub role: Role,
    /// The run id (the run directory's name).
    pub run_id: RunId,
    /// `runs/<FEATURE>/<RUN_ID>/`, `plans/<RUN_ID>/` or `curations/<RUN_ID>/`.
    pub run_dir: PathBuf,
    /// L0.
    pub runtime: RuntimeContext,
    pub started_at: Timestamp,
    /// The worker iteration it is (or follows), for `HARNESS_ITERATION` and the status line.
    pub iteration: u32,
    /// The feature's guardrail, for the status line.
    pub max_iterations: u32,
    /// The completion promise word, for `HARNESS_COMPLETION_PROMISE`.
    pub promise: String,
    /// The feature's phase, for `HARNESS_PHASE` (none without phases).
    pub phase: Option<String>,
    workdir: PathBuf,
    state: StateDir,
    echo: bool,
    agent: AgentConfig,
    launcher: Launcher,
    /// The prompt [`Attempt::save_prompt`] saved, and as it was redacted: [`Attempt::run`] sends
    /// that without scanning it again.
    saved: std::cell::OnceCell<(String, String)>,
}

impl Attempt {
    /// An attempt of `role` on the whole mission, run `run_id` (else a fresh one) in
    /// `runs_dir/<RUN_ID>/`, counted as `iteration` of `max_iterations` on the status line.
    pub fn on_mission(
        place: &Place,
        role: Role,
        (config, launcher): (&Config, Launcher),
        run_id: Option<RunId>,
        runs_dir: &Path,
        (iteration, max_iterations): (u32, u32),
    ) -> Self {
        let started_at = time::now();
        let mission = FeatureId::parse(MISSION).expect("a valid id");
        let run_id = run_id.unwrap_or_else(|| {
            RunId::generate(started_at.timestamp(), role, &mission, |id| {
                fs::exists(&runs_dir.join(id))
            })
        });
        Attempt {
            role,
            run_dir: runs_dir.join(run_id.as_str()),
            runtime: RuntimeContext {
                feature_id: "-".into(),
                workdir: place.workdir.clone(),
                state_dir: place.state.root().to_path_buf(),
                run_id: run_id.clone(),
            },
            run_id,
            started_at,
            iteration,
            max_iterations,
            promise: config.completion_promise.clone(),
            phase: None,
            workdir: place.workdir.clone(),
            state: place.state.clone(),
            echo: place.echo,
            agent: config.agent_for(role).clone(),
            launcher,
            saved: Default::default(),
        }
    }

    pub fn agent(&self) -> &AgentConfig {
        &self.agent
    }

    /// Creates the run directory and writes `prompt.md`, secrets redacted (see [`Attempt::run`]).
    /// A run directory is never reused: an existing one is an error.
    pub fn save_prompt(&self, prompt: &str) -> anyhow::Result<()> {
        let run_dir = &self.run_dir;
        if fs::exists(run_dir) {
            return Err(InputError::in_file(
                run_dir,
                "this run directory exists already; a run id is never reused",
            )
            .into());
        }
        fs::create_dir_all(run_dir)
            .with_context(|| format!("cannot create {}", run_dir.display()))?;
        let path = run_dir.join("prompt.md");
        let redacted = self.redactor().redact(prompt).into_owned();
        // An attempt's logs are not flushed (the durability policy): a power cut may lose them.
        if let Err(error) = replace(&path, redacted.as_bytes(), Flush::No) {
            // A full disk: leave no empty run directory behind, as if nothing had started.
            let _ = fs::remove_dir(run_dir);
            return Err(
                anyhow::Error::new(error).context(format!("cannot write {}", path.display()))
            );
        }
        let _ = self.saved.set((prompt.to_string(), redacted));
        Ok(())
    }

    /// What redacts this attempt's prompt and output: the secrets of the harness's environment
    /// and of the agent's.
    fn redactor(&self) -> Redactor {
        Redactor::of_process_and(self.agent_env())
    }

    /// The agent's environment beside the harness's: config.yaml's `env`, then L0's variables.
    fn agent_env(&self) -> Vec<(String, String)> {
        let mut env = self.agent.env.clone();
        env.extend(self.environment());
        env
    }

    /// Runs the agent on `prompt` (already in `prompt.md`), counting `markers` in its answer,
    /// within what the budgets leave; its output goes to `output.log`. An agent that cannot be
    /// started is an error that names it (with a hint when the reason is known).
    pub fn run(
        &self,
        prompt: &str,
        markers: &[String],
        budget: &Remaining,
    ) -> anyhow::Result<AgentRun> {
        let prompt_file = self.run_dir.join("prompt.md");
        let mut argv: Vec<String> = self
            .agent
            .command
            .iter()
            .map(|arg| arg.replace(PROMPT_FILE_PLACEHOLDER, &prompt_file.to_string_lossy()))
            .collect();
        argv[0] = self.launcher.program.to_string_lossy().into_owned();
        let env = self.agent_env();
        // The agent's own secrets are as secret as ours.
        let redactor = self.redactor();
        // A secret a user or an agent put into a file the prompt quotes is not sent either, and
        // prompt.md stays what was sent (as saved, unless this is another prompt).
        let sent = match self.saved.get() {
            Some((saved, redacted)) if saved == prompt => {
                std::borrow::Cow::Borrowed(redacted.as_str())
            }
            _ => {
                let sent = redactor.redact(prompt);
                if sent != prompt {
                    replace(&prompt_file, sent.as_bytes(), Flush::No)
                        .with_context(|| format!("cannot write {}", prompt_file.display()))?;
                }
                sent
            }
        };
        sweep_stale(&self.launcher.enclosure, self.role.as_str());
        agent::run(&agent::Invocation {
            argv: &argv,
            enclosure: &self.launcher.enclosure,
            prompt: &sent,
            prompt_via: self.agent.prompt_via,
            prompt_file: &prompt_file,
            workdir: &self.workdir,
            env: &env,
            timeout: self.agent.timeout(),
            kill_grace: self.agent.kill_grace(),
            output_format: self.agent.output_format,
            markers,
            log: &self.run_dir.join("output.log"),
            echo: self.echo,
            limits: Limits::new(&self.agent, budget),
            redactor,
            progress: self.echo.then(|| progress::Label {
                feature: self.runtime.feature_id.clone(),
                role: self.role,
                iteration: matches!(self.role, Role::Worker | Role::Validator)
                    .then_some((self.iteration, self.max_iterations)),
            }),
        })
        .inspect(|run| {
            if run.output.entries_dropped > 0 {
                let warning = memory::dropped_entries_warning(run.output.entries_dropped);
                eprintln!("{}: warning: {warning}", self.role);
            }
        })
        .map_err(|error| {
            let hint = start_failure_hint(&error, prompt, &self.state.config());
            anyhow::Error::new(error).context(format!(
                "cannot start the agent {:?} ({}){hint}",
                self.agent.command[0], self.role
            ))
        })
    }

    /// The environment of the contract (the agent's, and its checks'), plus the promise word
    /// for agents that want it and the phase (empty without phases, so that no enclosing
    /// run's leaks in).
    pub fn environment(&self) -> Vec<(String, String)> {
        vec![
            ("HARNESS_FEATURE_ID".into(), self.runtime.feature_id.clone()),
            ("HARNESS_WORKDIR".into(), self.workdir.display().to_string()),
            (
                "HARNESS_STATE_DIR".into(),
                self.state.root().display().to_string(),
            ),
            ("HARNESS_RUN_ID".into(), self.run_id.to_string()),
            ("HARNESS_ROLE".into(), self.role.to_string()),
            ("HARNESS_ITERATION".into(), self.iteration.to_string()),
            ("HARNESS_COMPLETION_PROMISE".into(), self.promise.clone()),
            (
                "HARNESS_PHASE".into(),
                self.phase.clone().unwrap_or_default(),
            ),
        ]
    }

    /// The working directory the agent (and its checks) runs in.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// How the agent (and its checks) is started and held: its sandbox, its containment.
    pub fn enclosure(&self) -> &Enclosure {
        &self.launcher.enclosure
    }

    /// Whether the agent's output is copied to the terminal.
    pub fn echo(&self) -> bool {
        self.echo
    }

    /// The agent's answer: a structured agent's final answer; for a text agent, its whole output
    /// as logged (its last [`MAX_ANSWER_BYTES`]).
    pub fn answer(&self, run: &AgentRun) -> anyhow::Result<String> {
        if self.agent.output_format != OutputFormat::Text {
            return Ok(run.output.answer().to_string());
        }
        let path = self.run_dir.join("output.log");
        let mut file = fs::open(&path, fs::Mode::Read)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(MAX_ANSWER_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// raw.md's lines of this attempt: the memory entries its agent printed (and `extra`), then
    /// the role's outcome line, all stamped `time`.
    pub fn raw_entries(
        &self,
        run: &AgentRun,
        extra: Option<(Tag, String)>,
        feature: Option<&FeatureId>,
        (time, outcome): (Timestamp, &str),
    ) -> Vec<RawEntry> {
        run.output
            .entries
            .iter()
            .cloned()
            .chain(extra)
            .chain(std::iter::once((Tag::Outcome, memory::one_line(outcome))))
            .map(|(tag, text)| RawEntry {
                time,
                role: self.role,
                feature: feature.cloned(),
                tag,
                text,
            })
            .collect()
    }

    /// Appends this attempt's lines to raw.md (see [`Attempt::raw_entries`]).
    pub fn append_raw(
        &self,
        run: &AgentRun,
        extra: Option<(Tag, String)>,
        feature: Option<&FeatureId>,
        outcome: (Timestamp, &str),
    ) -> anyhow::Result<()> {
        let entries = self.raw_entries(run, extra, feature, outcome);
        memory::append_raw(&self.state, &entries).context("cannot append to raw.md")
    }

    /// Writes `result.json` of the run directory: the run, who ran and when, its usage record
    /// (what the mission's totals and budget count for a run on the whole mission), then the
    /// role's own `fields` (its outcome, its verdict…).
    pub fn write_result(
        &self,
        run: &AgentRun,
        ended_at: Timestamp,
        fields: &impl Serialize,
    ) -> anyhow::Result<()> {
        let record = ResultRecord {
            run_id: self.run_id.as_str(),
            role: self.role,
            started_at: self.started_at,
            ended_at,
            duration_ms: run.duration.as_millis(),
            usage: run.usage_record(self.agent.prices.as_ref()),
            fields,
        };
        replace_json(&self.run_dir.join("result.json"), &record, Flush::No)
            .context("cannot write result.json")
    }
}

/// What result.json says of the agent's output, for the roles that report it: turns, tokens and
/// cost as the agent reported them, bytes, memory entries (kept and past the bound).
#[derive(Debug, Serialize)]
pub struct OutputFigures {
    turns: Option<u64>,
    tokens: Option<u64>,
    cost_usd: Option<f64>,
    output_bytes: u64,
    memory_entries: usize,
    memory_entries_dropped: usize,
}

impl OutputFigures {
    /// The figures of `run`.
    pub fn of(run: &AgentRun) -> Self {
        let output = &run.output;
        Self {
            turns: output.usage.turns,
            tokens: output.usage.total_tokens(),
            cost_usd: output.usage.cost_usd,
            output_bytes: output.bytes,
            memory_entries: output.entries.len(),
            memory_entries_dropped: output.entries_dropped,
        }
    }
}

/// `result.json` of a run directory.
#[derive(Debug, Serialize)]
struct ResultRecord<'a, F> {
    run_id: &'a str,
    role: Role,
    started_at: Timestamp,
    ended_at: Timestamp,
    duration_ms: u128,
    usage: UsageRecord,
    #[serde(flatten)]
    fields: &'a F,
}

/// The most of a text agent's output read back for its answer (the end of `output.log`).
pub const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// Ends what agents of a killed run left running for this project (see `agent::contain`), and
/// says so: before anything of `who` starts.
fn sweep_stale(enclosure: &Enclosure, who: &str) {
    let ended = enclosure.sweep_stale();
    if ended > 0 {
        eprintln!("{who}: ended {ended} process(es) that the agents of a killed run left running");
    }
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

/// An open invocation of a role on a feature: its inputs checked, its locks held, its run state
/// loaded.
#[derive(Debug)]
pub struct Session {
    pub role: Role,
    pub inputs: Inputs,
    /// The run state as it is now (recovered, possibly changed since loading).
    pub state: RunState,
    /// The run state as it was on disk when the session opened (`None` for a feature that never
    /// ran); a session a worker loop keeps open is not loaded again.
    pub loaded: Option<RunState>,
    /// Where the run state lives.
    pub state_path: PathBuf,
    pub started_at: Timestamp,
    /// `roles/<role>.md`.
    pub role_prompt: String,
    /// The state holds an attempt's end not yet written: a worker loop writes it together with
    /// the next attempt's start (one write instead of two), or when the loop ends.
    pub pending: bool,
    _feature_lock: Option<Lock>,
    _invocation_lock: Lock,
}

/// The checked inputs of `request` and `role`'s prompt: what a session reads anew each time.
pub fn read_inputs(
    memo: &mut InputMemo,
    request: &FeatureRequest,
    role: Role,
) -> anyhow::Result<(Inputs, String)> {
    let place = &request.place;
    let inputs = inputs::check_inputs(
        memo,
        &place.workdir,
        &place.state,
        &request.feature,
        role,
        place.path_var.as_deref(),
    )?;
    Ok((inputs, inputs::read_role_prompt(&place.home, role)?))
}

impl Session {
    /// Checks the inputs (parsed through `memo`), takes the locks and loads the state of
    /// `request.feature` for `role`.
    pub fn open(
        memo: &mut InputMemo,
        request: &FeatureRequest,
        role: Role,
    ) -> anyhow::Result<Self> {
        let state_dir = &request.place.state;
        let (inputs, role_prompt) = read_inputs(memo, request, role)?;
        let started_at = time::now();
        let id = &inputs.feature.id;
        let holder = locks::describe_holder(
            std::process::id(),
            &format!("{role} {id}"),
            &time::format(started_at),
        );
        let feature_lock = if request.caller_holds_feature_lock {
            None
        } else {
            Some(Lock::try_acquire(
                &state_dir.feature_lock(id),
                id.as_str(),
                &holder,
            )?)
        };
        // Held even under run.sh: if run.sh is killed while this process goes on, a second
        // run.sh must not start a second agent on the same feature.
        let invocation_lock =
            Lock::try_acquire(&state_dir.invocation_lock(id), id.as_str(), &holder)?;
        // Before anything else of this run: an old agent must not work on beside the new one.
        sweep_stale(&inputs.launcher.enclosure, &format!("{role} {id}"));
        let state_path = state_dir.run_state(id);
        // The newest attempts only: a worker may run thousands of iterations in one session.
        let loaded = RunState::load_recent(&state_path, id)?;
        let mut state = loaded.clone().unwrap_or_else(|| {
            let mut fresh = RunState::new(
                id.clone(),
                inputs.config.max_iterations,
                &inputs.config.completion_promise,
                started_at,
            );
            fresh.hold_recent();
            fresh
        });
        state.recover_interrupted(started_at);
        Ok(Session {
            role,
            inputs,
            state,
            loaded,
            state_path,
            started_at,
            role_prompt,
            pending: false,
            _feature_lock: feature_lock,
            _invocation_lock: invocation_lock,
        })
    }

    /// [`Session::open`], or the session `kept` open by this process since its last attempt:
    /// its locks were never released, so its state is still the truth (and may be ahead of the
    /// disk, see [`Session::pending`]); only the inputs and the role prompt are read again. On an
    /// error the kept session stays in `kept`, for its state to be written.
    pub fn open_or_resume(
        kept: &mut Option<Session>,
        memo: &mut InputMemo,
        request: &FeatureRequest,
        role: Role,
    ) -> anyhow::Result<Self> {
        if kept.is_none() {
            return Self::open(memo, request, role);
        }
        let (inputs, role_prompt) = read_inputs(memo, request, role)?;
        let mut session = kept.take().expect("checked above");
        session.inputs = inputs;
        session.role_prompt = role_prompt;
        session.started_at = time::now();
        Ok(session)
    }

    pub fn config(&self) -> &Config {
        &self.inputs.config
    }

    /// Writes the run state atomically.
    pub fn save(&mut self) -> anyhow::Result<()> {
        self.state
            .save(&self.state_path)
            .with_context(|| format!("cannot write {}", self.state_path.display()))?;
        self.pending = false;
        Ok(())
    }

    /// Writes the run state only if it differs from what was loaded or holds an attempt's end
    /// not yet written (a no-op leaves every byte).
    pub fn save_if_changed(&mut self) -> anyhow::Result<()> {
        if self.pending || self.loaded.as_ref() != Some(&self.state) {
            self.save()?;
        }
        Ok(())
    }

    /// Whether the attempt may start: not when the role's own check stops it (`before`), nor
    /// when a budget is used up (exit 2, naming it); else what the budgets leave for it.
    /// `spent` keeps what each run state spent between the iterations of one process.
    pub fn gate(
        &self,
        before: Option<Transition>,
        state: &StateDir,
        spent: &mut budget::SpentMemo,
    ) -> Result<Remaining, Transition> {
        if let Some(stop) = before {
            return Err(stop);
        }
        let budgets = &self.inputs.config.budgets;
        if budgets.feature.is_none() && budgets.mission.is_none() {
            return Ok(Remaining::default());
        }
        let feature = self.state.spent();
        // Reading every feature's run state is needed only for a mission budget.
        let mission = match budgets.mission {
            Some(_) => budget::mission_spent_with(spent, state, Some((&self.state_path, feature))),
            None => Spent::default(),
        };
        budget::remaining(budgets, feature, mission).map_err(|exceeded| {
            Transition::over_budget(&self.state.feature_id, &exceeded, &state.config())
        })
    }

    /// Names the next attempt of this session: run.sh's run id, or a fresh
    /// `<unix-time>-<role>-<FEATURE>` (after `previous`, the id this process made last, if any).
    pub fn attempt(&self, request: &FeatureRequest, previous: Option<&RunId>) -> Attempt {
        let place = &request.place;
        let id = &self.inputs.feature.id;
        let run_id = request.run_id.clone().unwrap_or_else(|| {
            let unix_time = self.started_at.timestamp();
            RunId::generate_after(previous, unix_time, self.role, id, |candidate| {
                fs::exists(&place.state.feature_runs(id).join(candidate))
            })
        });
        let config = &self.inputs.config;
        // A worker's attempt is the next iteration; another role's follows the current one.
        let iteration = match self.role {
            Role::Worker => self.state.iteration_count + 1,
            _ => self.state.iteration_count,
        };
        Attempt {
            role: self.role,
            run_dir: place.state.run_dir(id, &run_id),
            runtime: RuntimeContext {
                feature_id: id.to_string(),
                workdir: place.workdir.clone(),
                state_dir: place.state.root().to_path_buf(),
                run_id: run_id.clone(),
            },
            run_id,
            started_at: self.started_at,
            iteration,
            max_iterations: self.state.max_iterations,
            promise: self.state.completion_promise.clone(),
            phase: self.state.phase.as_ref().map(|phase| phase.name.clone()),
            workdir: place.workdir.clone(),
            state: place.state.clone(),
            echo: place.echo,
            agent: config.agent_for(self.role).clone(),
            launcher: self.inputs.launcher.clone(),
            saved: Default::default(),
        }
    }

    /// Reads the role's identity, the feature's notes and summary.md.
    pub fn layers(&self, place: &Place) -> anyhow::Result<Layers> {
        inputs::read_layers(
            &place.home,
            &place.state,
            Some(&self.inputs.feature.id),
            self.role,
        )
    }

    /// Writes the attempt's `prompt.md` and records the attempt as begun (for the worker, as the
    /// next iteration): both are on disk before its agent starts, so a kill from here on is
    /// recovered from the state.
    pub fn begin(&mut self, attempt: &Attempt, prompt: &str) -> anyhow::Result<()> {
        attempt.save_prompt(prompt)?;
        let run_id = attempt.run_id.as_str();
        match self.role {
            Role::Worker => {
                self.state.begin_iteration(run_id, attempt.started_at);
            }
            role => self.state.begin_attempt(run_id, role, attempt.started_at),
        }
        self.save()
    }

    /// Runs the attempt's agent, already begun. An agent that cannot start leaves the attempt
    /// recorded as `agent_error` (not a dangling `started`) and the feature resumable.
    pub fn run(
        &mut self,
        attempt: &Attempt,
        prompt: &str,
        markers: &[String],
        budget: &Remaining,
    ) -> anyhow::Result<AgentRun> {
        attempt.run(prompt, markers, budget).or_else(|error| {
            if let Some(record) = self.state.attempt_mut(attempt.run_id.as_str()) {
                record.outcome = Outcome::AgentError;
                record.ended_at = Some(time::now());
            }
            if self.state.status == Status::Running {
                self.state.status = Status::Pending;
            }
            self.save()?;
            Err(error)
        })
    }

    /// Records how the attempt's agent run ended and what it used (the config's prices estimate
    /// a cost it did not report); what its answer means is the role's to record.
    pub fn record_end(
        &mut self,
        attempt: &Attempt,
        run: &AgentRun,
        outcome: Outcome,
        ended_at: Timestamp,
    ) {
        if let Some(record) = self.state.attempt_mut(attempt.run_id.as_str()) {
            record.ended_at = Some(ended_at);
            record.outcome = outcome;
            (record.exit_code, record.signal) = run.exit_status();
            let usage = run.usage_record(attempt.agent.prices.as_ref());
            record.turns = usage.usage.turns;
            record.tokens = usage.tokens_spent();
            record.cost_usd = usage.usage.cost_usd;
            record.usage = Some(usage);
            record.output_bytes = run.output.bytes;
            record.memory_entries_dropped = run.output.entries_dropped;
        }
        self.state.updated_at = ended_at;
    }

    /// Applies `transition` to the run state (a landing merges the feature's worktree back) and
    /// says how it ended: the exit code and message, or those of a landing git refused.
    pub fn apply(
        &mut self,
        transition: Transition,
        state_dir: &StateDir,
        now: Timestamp,
    ) -> anyhow::Result<RoleReport> {
        let Transition {
            change,
            message,
            exit_code,
        } = transition;
        if change_state(&mut self.state, change, state_dir, now)? {
            return Ok(RoleReport { exit_code, message });
        }
        let reason = self.state.reason.clone().unwrap_or_default();
        Ok(RoleReport {
            exit_code: exit_codes::FAILED,
            message: format!("{message}, but it is not merged: {reason}"),
        })
    }

    /// Ends the session before any agent ran, on `transition` (a feature that must not start):
    /// the run state is written only if it changed.
    pub fn stop(
        &mut self,
        transition: Transition,
        state_dir: &StateDir,
    ) -> anyhow::Result<RoleReport> {
        let report = self.apply(transition, state_dir, self.started_at)?;
        self.save_if_changed()?;
        self.remove_notes_if_done(state_dir)?;
        Ok(report)
    }

    /// Where this session's events happen, now.
    pub fn scene<'a>(&'a self, place: &'a Place) -> Scene<'a> {
        Scene {
            feature_id: Some(self.state.feature_id.as_str()),
            workdir: &place.workdir,
            state_dir: place.state.root(),
            time: time::now(),
        }
    }

    /// Runs the hooks of `payloads`, once what they report is on disk (an attempt's end the
    /// session holds back is written first; without a hook for them, nothing is). Returns how
    /// a hook with `on_error: stop` failed, if one did.
    pub fn tell(&mut self, place: &Place, payloads: &[Payload]) -> anyhow::Result<Option<String>> {
        let events = payloads.iter().map(|payload| payload.event);
        if !hooks::wanted(&self.config().hooks, events) {
            return Ok(None);
        }
        if self.pending {
            self.save()?;
        }
        let config = self.config();
        let emitter = Emitter {
            hooks: &config.hooks,
            workdir: &place.workdir,
            state: &place.state,
            path_var: place.path_var.as_deref(),
            kill_grace: config.agent_for(self.role).kill_grace(),
            who: self.role.as_str(),
        };
        Ok(emitter.emit(payloads))
    }

    /// [`Session::stop`], then the hooks hear what it did: a budget that ran out, the
    /// feature's new status.
    pub fn stop_and_tell(
        &mut self,
        transition: Transition,
        place: &Place,
    ) -> anyhow::Result<RoleReport> {
        let before = self.state.status;
        let budget = transition.budget().map(str::to_string);
        let report = self.stop(transition, &place.state)?;
        let message = report.message.lines().next().unwrap_or_default();
        let mut payloads: Vec<Payload> = budget
            .map(|budget| self.scene(place).budget_reached(&budget, message))
            .into_iter()
            .collect();
        payloads.extend(self.status_payload(place, before, message));
        // The run stops anyway: a failing hook has nothing more to stop.
        self.tell(place, &payloads)?;
        Ok(report)
    }

    /// The event of the feature's status, when it became done, failed or blocked since
    /// `before`.
    pub fn status_payload(&self, place: &Place, before: Status, message: &str) -> Option<Payload> {
        let event = events::status_event(before, self.state.status)?;
        Some(self.scene(place).feature(event, &self.state, message))
    }

    /// The hooks of what an attempt did (`payloads`), once it is written; a failing
    /// `on_error: stop` hook stops a run that would go on to another attempt (exit 10): the
    /// feature is left pending, resumable (exit 2).
    pub fn conclude(
        &mut self,
        place: &Place,
        payloads: &[Payload],
        report: RoleReport,
    ) -> anyhow::Result<RoleReport> {
        let Some(failure) = self.tell(place, payloads)? else {
            return Ok(report);
        };
        if report.exit_code != exit_codes::CONTINUE {
            return Ok(report);
        }
        let stop = Transition::stopped_by_hook(&self.state, &failure);
        let report = self.apply(stop, &place.state, time::now())?;
        self.save()?;
        Ok(report)
    }

    /// Removes the notes of a feature that is done: they are kept until it is accepted.
    pub fn remove_notes_if_done(&self, state_dir: &StateDir) -> anyhow::Result<()> {
        if self.state.status == Status::Done {
            notes::remove(state_dir, &self.state.feature_id).context("cannot remove the notes")?;
        }
        Ok(())
    }
}

/// Makes `change` to the run state `state`; `false` when a landing left the feature unmerged
/// instead (git refused to merge its branch back).
fn change_state(
    state: &mut RunState,
    change: Change,
    state_dir: &StateDir,
    now: Timestamp,
) -> anyhow::Result<bool> {
    match change {
        Change::Keep => {}
        Change::Note(reason) => state.reason = Some(reason),
        Change::To(status) => state.status = status,
        Change::Pause(reason) => {
            state.status = Status::Pending;
            state.reason = Some(reason);
        }
        Change::Retry => {
            state.iteration_count -= 1;
            state.status = Status::Pending;
        }
        Change::Postpone(reason) => {
            state.iteration_count -= 1;
            state.status = Status::Pending;
            state.reason = Some(reason);
        }
        Change::Fail(reason) => state.fail(reason, now),
        Change::Land => return worktree::land(state, state_dir, now),
    }
    Ok(true)
}

/// Takes the feature's lock for the caller (run.sh) on `fd`, the descriptor it opened on the lock
/// file: the lock then belongs to the caller's open file and is held until it closes it, across
/// every role it runs (exit 75 if another run holds it). Once the feature is ours, what killed
/// writes left half-written goes.
pub fn lock_for_caller(state: &StateDir, feature: &FeatureId, fd: i32) -> anyhow::Result<()> {
    let holder = locks::describe_holder(
        std::os::unix::process::parent_id(),
        &format!("run.sh {feature}"),
        &time::format(time::now()),
    );
    locks::acquire_for_parent(fd, &state.feature_lock(feature), feature.as_str(), &holder)?;
    sweep_stale_temps(state, feature);
    Ok(())
}

/// How many of a feature's newest run directories [`sweep_after_kills`] looks into: a kill can
/// leave a temp file only in those written since the feature's lock was last taken (its last
/// attempts: the worker's and the validator's).
const NEWEST_RUNS_SWEPT: usize = 3;

/// What [`sweep_stale_temps`] does for one feature, for every feature at the end of a run: a
/// feature a kill left done (its validator killed after the landing, writing its result) is
/// never locked again, so its lock's sweep would never clear it. Each feature's directory and
/// its newest run directories, the notes and `.harness/` itself; returns how many files went.
pub fn sweep_after_kills(state: &StateDir) -> usize {
    let runs = state.runs_dir();
    let features = fs::read_dir(&runs).unwrap_or_default();
    let feature_dirs = features
        .into_iter()
        .filter(|entry| entry.kind == fs::Kind::Dir)
        .map(|entry| runs.join(entry.name));
    let mut dirs = vec![state.root().to_path_buf(), state.notes_dir()];
    for feature_dir in feature_dirs {
        let mut run_dirs: Vec<_> = fs::read_dir(&feature_dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|entry| entry.kind == fs::Kind::Dir)
            .map(|entry| entry.name)
            .collect();
        // Run ids begin with their time: the newest sort last.
        run_dirs.sort();
        let newest = run_dirs.iter().rev().take(NEWEST_RUNS_SWEPT);
        dirs.extend(newest.map(|name| feature_dir.join(name)));
        dirs.push(feature_dir);
    }
    dirs.iter()
        .map(|dir| crate::base::atomic::sweep_stale_temps(dir))
        .sum()
}

/// Removes the temporary files that writes killed mid-way (`kill -9`) left in the feature's run
/// directories, the notes and `.harness/` itself; returns how many. Safe while other features
/// run: only files of writers that no longer exist go.
fn sweep_stale_temps(state: &StateDir, feature: &FeatureId) -> usize {
    let runs = state.feature_runs(feature);
    let run_dirs = fs::read_dir(&runs)
        .into_iter()
        .flatten()
        .filter(|entry| entry.kind == fs::Kind::Dir)
        .map(|entry| runs.join(entry.name));
    [state.root().to_path_buf(), state.notes_dir(), runs.clone()]
        .into_iter()
        .chain(run_dirs)
        .map(|dir| crate::base::atomic::sweep_stale_temps(&dir))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{at, id};

    fn change(mut state: RunState, change: Change) -> RunState {
        let dir = StateDir::new("/nonexistent/.harness");
        assert!(change_state(&mut state, change, &dir, at(9)).unwrap());
        state
    }

    #[test]
    fn a_failed_hook_pauses_a_feature_but_leaves_a_provisional_one_for_the_validator() {
        let mut running = RunState::new(id("F-1"), 10, "P", at(0));
        running.begin_iteration("r1", at(1));
        let stop = |state: &RunState| {
            let transition = Transition::stopped_by_hook(state, "the hook failed");
            assert_eq!(transition.exit_code, exit_codes::GUARDRAIL);
            change(state.clone(), transition.change)
        };
        let paused = stop(&running);
        assert_eq!(paused.status, Status::Pending);
        running.status = Status::Provisional;
        let kept = stop(&running);
        assert_eq!(
            (kept.status, kept.reason.as_deref()),
            (Status::Provisional, Some("the hook failed"))
        );
    }

    #[test]
    fn each_change_does_what_it_says_to_the_run_state() {
        let mut running = RunState::new(id("F-1"), 10, "P", at(0));
        running.begin_iteration("r1", at(1));
        assert_eq!(change(running.clone(), Change::Keep), running);
        let noted = change(running.clone(), Change::Note("budget".into()));
        assert_eq!(
            (noted.status, noted.reason.as_deref()),
            (Status::Running, Some("budget"))
        );
        let paused = change(running.clone(), Change::Pause("budget".into()));
        assert_eq!(
            (paused.status, paused.reason.as_deref()),
            (Status::Pending, Some("budget"))
        );
        let retried = change(running.clone(), Change::Retry);
        assert_eq!(
            (retried.status, retried.iteration_count),
            (Status::Pending, 0)
        );
        let postponed = change(running.clone(), Change::Postpone("limit".into()));
        assert_eq!(
            (
                postponed.status,
                postponed.iteration_count,
                postponed.reason.as_deref()
            ),
            (Status::Pending, 0, Some("limit"))
        );
        let failed = change(running.clone(), Change::Fail("why".into()));
        assert_eq!(
            (failed.status, failed.reason.as_deref(), failed.finished_at),
            (Status::Failed, Some("why"), Some(at(9)))
        );
        let provisional = change(running.clone(), Change::To(Status::Provisional));
        assert_eq!(provisional.status, Status::Provisional);
        // Without a worktree, landing is being done.
        let done = change(running, Change::Land);
        assert_eq!((done.status, done.finished_at), (Status::Done, Some(at(9))));
    }
}
