//! What every role that works on one feature does around its agent: check the inputs before
//! anything changes, take the feature's locks, load its run state (recovering an attempt a killed
//! harness left `started`), and read the layers of its prompt.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::agent;
use crate::agent::AgentRun;
use crate::base::error::InputError;
use crate::base::exit_codes;
use crate::base::fs;
use crate::base::locks::{self, Lock};
use crate::base::time::{self, Timestamp};
use crate::roles::invoke::{self, RoleInvocation};
use crate::roles::prompt::RuntimeContext;
use crate::roles::worker::RoleReport;
use crate::spec::config::{self, Config};
use crate::spec::features::{Feature, FeatureId, FeatureList};
use crate::spec::layout::{HarnessHome, RunId, StateDir};
use crate::spec::role::Role;
use crate::state::budget::{self, Remaining, Spent};
use crate::state::memory;
use crate::state::notes;
use crate::state::run_state::{Outcome, RunState, Status};

/// A role invocation on one feature, as run.sh (or a user) asks for it.
#[derive(Debug, Clone)]
pub struct FeatureRequest {
    /// The project directory (the agent's working directory).
    pub workdir: PathBuf,
    /// The `.harness/` directory.
    pub state: StateDir,
    /// The harness install (roles, identity).
    pub home: HarnessHome,
    /// The feature.
    pub feature: FeatureId,
    /// The run id run.sh made; generated when absent.
    pub run_id: Option<RunId>,
    /// run.sh holds the feature lock for its whole run; a role run by hand takes it itself.
    pub caller_holds_feature_lock: bool,
    /// Copy the agent's output to stdout.
    pub echo: bool,
    /// `PATH`, to find the agent.
    pub path_var: Option<std::ffi::OsString>,
}

/// What an invocation needs from the user's files, checked before anything changes.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// config.yaml.
    pub config: Config,
    /// The feature's spec.
    pub feature: Feature,
    /// The role's agent program, found.
    pub program: PathBuf,
}

/// config.yaml and features.yaml as last parsed, for a worker that runs many iterations in one
/// process. Each file is still read every time, and parsed again whenever its bytes changed: the
/// memo saves only the parse (~8 ms for 1,000 features), never a re-read.
#[derive(Debug, Default)]
pub struct InputMemo {
    config: Option<(String, Config)>,
    features: Option<(String, FeatureList)>,
}

/// `slot`'s value if it was parsed from the bytes `path` holds now; else `path` parsed anew.
fn parsed<'m, T>(
    slot: &'m mut Option<(String, T)>,
    path: &Path,
    parse: fn(&str, &Path) -> Result<T, InputError>,
) -> Result<&'m T, InputError> {
    let text = config::read_input(path)?;
    let stale = slot.as_ref().is_none_or(|(parsed, _)| *parsed != text);
    if stale {
        let value = parse(&text, path)?;
        *slot = Some((text, value));
    }
    Ok(&slot.as_ref().expect("just filled").1)
}

/// Reads and checks config.yaml, features.yaml, the feature and the role's agent command: every
/// input error surfaces here, before any state is written.
pub fn check_inputs(
    workdir: &Path,
    state_dir: &StateDir,
    feature: &FeatureId,
    role: Role,
    path_var: Option<&std::ffi::OsStr>,
) -> Result<Inputs, InputError> {
    check_inputs_with(
        &mut InputMemo::default(),
        workdir,
        state_dir,
        feature,
        role,
        path_var,
    )
}

/// [`check_inputs`], parsing only the files whose bytes differ from those `memo` parsed last.
pub fn check_inputs_with(
    memo: &mut InputMemo,
    workdir: &Path,
    state_dir: &StateDir,
    feature: &FeatureId,
    role: Role,
    path_var: Option<&std::ffi::OsStr>,
) -> Result<Inputs, InputError> {
    state_dir.require_initialised()?;
    state_dir.refuse_links(Some(feature))?;
    let config = parsed(&mut memo.config, &state_dir.config(), Config::parse)?.clone();
    let features = parsed(
        &mut memo.features,
        &state_dir.features(),
        FeatureList::parse,
    )?;
    let feature = features.require(feature, &state_dir.features())?.clone();
    let program = agent::resolve_program(
        &config.agent_for(role).command[0],
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

/// An open invocation on a feature: inputs checked, locks held, state loaded.
#[derive(Debug)]
pub struct Session {
    /// Who runs.
    pub role: Role,
    /// The checked inputs.
    pub inputs: Inputs,
    /// The run state as it is now (recovered, possibly changed since loading).
    pub state: RunState,
    /// The run state as it was on disk when the session opened (`None` for a feature that never
    /// ran); a session a worker loop keeps open is not loaded again.
    pub loaded: Option<RunState>,
    /// Where the run state lives.
    pub state_path: PathBuf,
    /// When the invocation started.
    pub started_at: Timestamp,
    /// `roles/<role>.md`.
    pub role_prompt: String,
    /// The state holds an attempt's end not yet written: a worker loop writes it together with
    /// the next attempt's start (one write instead of two), or when the loop ends.
    pub pending: bool,
    _feature_lock: Option<Lock>,
    _invocation_lock: Lock,
}

/// Checks the inputs, takes the locks and loads the state of `request.feature` for `role`.
pub fn open(request: &FeatureRequest, role: Role) -> anyhow::Result<Session> {
    open_with(&mut InputMemo::default(), request, role)
}

/// [`open`], with the inputs parsed through `memo`.
pub fn open_with(
    memo: &mut InputMemo,
    request: &FeatureRequest,
    role: Role,
) -> anyhow::Result<Session> {
    let state_dir = &request.state;
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
    // Held even under run.sh: if run.sh is killed while this process goes on, a second run.sh
    // must not start a second agent on the same feature.
    let invocation_lock = Lock::try_acquire(&state_dir.invocation_lock(id), id.as_str(), &holder)?;

    let state_path = state_dir.run_state(id);
    let loaded = RunState::load(&state_path, id)?;
    let mut state = loaded.clone().unwrap_or_else(|| {
        RunState::new(
            id.clone(),
            inputs.config.max_iterations,
            &inputs.config.completion_promise,
            started_at,
        )
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

/// The checked inputs of `request` and the role's prompt: what a session reads anew each time
/// (and what `explain` reads).
pub fn read_inputs(
    memo: &mut InputMemo,
    request: &FeatureRequest,
    role: Role,
) -> anyhow::Result<(Inputs, String)> {
    let inputs = check_inputs_with(
        memo,
        &request.workdir,
        &request.state,
        &request.feature,
        role,
        request.path_var.as_deref(),
    )?;
    Ok((inputs, read_role_prompt(&request.home, role)?))
}

/// [`open_with`], or the session `kept` open by this process since its last attempt: its locks
/// were never released, so its state is still the truth (and may be ahead of the disk, see
/// [`Session::pending`]); only the inputs and the role prompt are read again. On an error the
/// kept session stays in `kept`, for its state to be written.
pub fn open_or_resume(
    kept: &mut Option<Session>,
    memo: &mut InputMemo,
    request: &FeatureRequest,
    role: Role,
) -> anyhow::Result<Session> {
    if kept.is_none() {
        return open_with(memo, request, role);
    }
    let (inputs, role_prompt) = read_inputs(memo, request, role)?;
    let mut session = kept.take().expect("checked above");
    session.inputs = inputs;
    session.role_prompt = role_prompt;
    session.started_at = time::now();
    Ok(session)
}

/// Removes the temporary files that writes killed mid-way (`kill -9`) left in the feature's run
/// directories, the notes and `.harness/` itself; returns how many. Safe while other features
/// run: only files of writers that no longer exist go.
pub fn sweep_stale_temps(state: &StateDir, feature: &FeatureId) -> usize {
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

/// The memory and notes that go into a role's prompt.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    /// `identity/<role>.md`, when it has content.
    pub identity: Option<String>,
    /// The feature's notes.
    pub notes: Option<String>,
    /// summary.md, when it has content.
    pub summary: Option<String>,
}

impl Session {
    /// Writes the run state atomically.
    pub fn save(&mut self) -> anyhow::Result<()> {
        self.state
            .save(&self.state_path)
            .with_context(|| format!("cannot write {}", self.state_path.display()))?;
        self.pending = false;
        Ok(())
    }

    /// Records the attempt `call.run_id` as begun (for the worker, as the next iteration), after
    /// writing its prompt.md: both are on disk before its agent starts, so a kill from here on
    /// is recovered from the state.
    pub fn begin(&mut self, call: &AgentCall<'_>) -> anyhow::Result<()> {
        invoke::save_prompt(call.run_dir, call.prompt)?;
        let run_id = call.run_id.as_str();
        match self.role {
            Role::Worker => {
                self.state.begin_iteration(run_id, self.started_at);
            }
            role => self.state.begin_attempt(run_id, role, self.started_at),
        }
        self.save()
    }

    /// Runs the role's agent for the attempt `call.run_id`, already begun and saved, with the
    /// role's agent settings, the feature's promise and iteration. An agent that cannot start
    /// leaves the attempt recorded as `agent_error` (not a dangling `started`) and the feature
    /// resumable.
    pub fn run_agent(
        &mut self,
        request: &FeatureRequest,
        call: AgentCall<'_>,
    ) -> anyhow::Result<AgentRun> {
        let agent = self.inputs.config.agent_for(self.role).clone();
        let invocation = RoleInvocation {
            role: self.role,
            workdir: &request.workdir,
            state: &request.state,
            runtime: call.runtime,
            run_dir: call.run_dir,
            iteration: self.state.iteration_count,
            max_iterations: self.state.max_iterations,
            promise: &self.state.completion_promise,
            markers: call.markers,
            agent: &agent,
            program: &self.inputs.program,
            prompt: call.prompt,
            echo: request.echo,
            budget: call.budget,
        };
        match invoke::run(&invocation) {
            Ok(run) => Ok(run),
            Err(error) => {
                if let Some(attempt) = self.state.attempt_mut(call.run_id.as_str()) {
                    attempt.outcome = Outcome::AgentError;
                    attempt.ended_at = Some(time::now());
                }
                if self.state.status == Status::Running {
                    self.state.status = Status::Pending;
                }
                self.save()?;
                Err(error)
            }
        }
    }

    /// What the budgets leave for this invocation; when one is used up, the report that stops
    /// the feature (exit 2, naming the budget), with the reason recorded in its state.
    /// `spent` keeps what each run state spent between the iterations of one process.
    pub fn budget_left(
        &mut self,
        state: &StateDir,
        spent: &mut budget::SpentMemo,
    ) -> anyhow::Result<Result<Remaining, RoleReport>> {
        let budgets = &self.inputs.config.budgets;
        if budgets.feature.is_none() && budgets.mission.is_none() {
            return Ok(Ok(Remaining::default()));
        }
        let feature = Spent::of(&self.state.attempts);
        // Reading every feature's run state is needed only for a mission budget.
        let mission = match budgets.mission {
            Some(_) => budget::mission_spent_with(spent, state, Some((&self.state_path, feature))),
            None => Spent::default(),
        };
        match budget::remaining(budgets, feature, mission) {
            Ok(remaining) => Ok(Ok(remaining)),
            Err(exceeded) => {
                self.state.reason = Some(exceeded.to_string());
                self.save_if_changed()?;
                let id = &self.inputs.feature.id;
                Ok(Err(RoleReport {
                    exit_code: exit_codes::GUARDRAIL,
                    message: format!(
                        "{id} stopped: {exceeded}\nhint: raise it under `budgets:` in {}",
                        state.config().display()
                    ),
                }))
            }
        }
    }

    /// Writes the run state only if it differs from what was loaded or holds an attempt's end not
    /// yet written (a no-op leaves every byte).
    pub fn save_if_changed(&mut self) -> anyhow::Result<()> {
        if self.pending || self.loaded.as_ref() != Some(&self.state) {
            self.save()?;
        }
        Ok(())
    }

    /// The id of this invocation: run.sh's, or a fresh `<unix-time>-<role>-<FEATURE>` (after
    /// `previous`, the id this process made last, if any).
    pub fn run_id(&self, request: &FeatureRequest, previous: Option<&RunId>) -> RunId {
        let id = &self.inputs.feature.id;
        request.run_id.clone().unwrap_or_else(|| {
            let unix_time = self.started_at.timestamp();
            RunId::generate_after(previous, unix_time, self.role, id, |candidate| {
                fs::exists(&request.state.feature_runs(id).join(candidate))
            })
        })
    }

    /// L0 for `run_id`.
    pub fn runtime(&self, request: &FeatureRequest, run_id: &RunId) -> RuntimeContext {
        RuntimeContext {
            feature_id: self.inputs.feature.id.to_string(),
            workdir: request.workdir.clone(),
            state_dir: request.state.root().to_path_buf(),
            run_id: run_id.clone(),
        }
    }

    /// Reads the role's identity, the feature's notes and summary.md.
    pub fn layers(&self, request: &FeatureRequest) -> anyhow::Result<Layers> {
        read_layers(
            &request.home,
            &request.state,
            &self.inputs.feature.id,
            self.role,
        )
    }
}

/// One agent run of a session: what differs between the roles.
#[derive(Debug, Clone, Copy)]
pub struct AgentCall<'a> {
    /// The attempt's run id.
    pub run_id: &'a RunId,
    /// L0.
    pub runtime: &'a RuntimeContext,
    /// `runs/<FEATURE>/<RUN_ID>/`, holding prompt.md already.
    pub run_dir: &'a Path,
    /// The prompt.
    pub prompt: &'a str,
    /// Exact texts to count in the answer (the completion tag, the verdict tags).
    pub markers: &'a [String],
    /// What the budgets leave.
    pub budget: Remaining,
}

/// Reads `role`'s identity, the feature's notes and summary.md (no lock needed: each is
/// written atomically).
pub fn read_layers(
    home: &HarnessHome,
    state: &StateDir,
    feature: &FeatureId,
    role: Role,
) -> anyhow::Result<Layers> {
    Ok(Layers {
        identity: memory::read_memory_layer(&home.identity(role))
            .with_context(|| format!("cannot read the {role}'s identity file"))?,
        notes: notes_with_parent(state, feature)?,
        summary: memory::read_memory_layer(&state.summary()).context("cannot read summary.md")?,
    })
}

/// The role's prompt file, which must exist.
pub fn read_role_prompt(home: &HarnessHome, role: Role) -> anyhow::Result<String> {
    let path = home.role_prompt(role);
    Ok(memory::read_layer(&path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .ok_or_else(|| {
            InputError::in_file(
                &path,
                format!("the {role}'s role prompt is missing or empty"),
            )
            .with_hint("set HARNESS_HOME to the harness install (the directory with run.sh)")
        })?)
}

/// The feature's notes, preceded by those of the failed feature it re-breaks (`F-007` for
/// `F-007.1`, when F-007 is superseded by it): they are why it exists.
fn notes_with_parent(state: &StateDir, feature: &FeatureId) -> anyhow::Result<Option<String>> {
    let own = notes::read(state, feature).context("cannot read the notes")?;
    let parent = feature
        .as_str()
        .rsplit_once('.')
        .and_then(|(parent, _)| FeatureId::parse(parent).ok())
        .filter(|parent| {
            RunState::load(&state.run_state(parent), parent)
                .ok()
                .flatten()
                .is_some_and(|run| run.superseded_by.contains(feature))
        });
    let inherited = match &parent {
        Some(parent) => notes::read(state, parent)
            .context("cannot read the notes")?
            .map(|notes| format!("### From {parent}, which this feature re-breaks\n\n{notes}")),
        None => None,
    };
    Ok(match (inherited, own) {
        (Some(inherited), Some(own)) => Some(format!("{inherited}\n\n### This feature\n\n{own}")),
        (inherited, own) => inherited.or(own),
    })
}
