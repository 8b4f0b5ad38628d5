//! `./run.sh explain F-001 [--role worker]`: the exact prompt the next invocation of a role would
//! get, with the estimated tokens of each layer, built from the state as it is — without running
//! anything, writing anything or taking a lock (so it works while a run goes on).

use crate::agent::Redactor;
use crate::base::time;
use crate::roles::attempt::FeatureRequest;
use crate::roles::inputs::{self, InputMemo};
use crate::roles::lifecycle::phases;
use crate::roles::prompt::{estimate_tokens, Lifecycle, Prompt, WorkerPrompt};
use crate::roles::validator::validator_prompt;
use crate::spec::config::Config;
use crate::spec::features::list_ids;
use crate::spec::layout::RunId;
use crate::spec::role::Role;
use crate::state::run_state::{RunState, Status};
use crate::state::worktree;
use crate::InputError;

/// The next prompt of a role, and what it is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The prompt, byte for byte (but for the run id, which is made when it runs).
    pub prompt: String,
    /// Each layer's name and estimated tokens, top to bottom.
    pub layers: Vec<(String, usize)>,
    /// The whole prompt's estimated tokens.
    pub total_tokens: usize,
    /// Why no invocation is next (the feature is done, failed, blocked, re-broken), if so.
    pub note: Option<String>,
    /// The sandbox the agent would run in: `none`, its command line, or why it cannot be made.
    pub sandbox: String,
}

/// The prompt `role` would get next on the requested feature (its agent need not be installed:
/// nothing runs).
pub fn explain(request: &FeatureRequest, role: Role) -> anyhow::Result<Explanation> {
    let place = &request.place;
    let (config, feature) =
        inputs::check_spec(&mut InputMemo::default(), &place.state, &request.feature)?;
    let (config, feature) = (&config, &feature);
    let role_prompt = inputs::read_role_prompt(&place.home, role)?;
    let state = RunState::load_recent(&place.state.run_state(&feature.id), &feature.id)?
        .unwrap_or_else(|| {
            RunState::new(
                feature.id.clone(),
                config.max_iterations,
                &config.completion_promise,
                time::now(),
            )
        });
    let phase = phases::current(config, &state, &place.state.config())?;
    let layers = inputs::read_layers(&place.home, &place.state, Some(&feature.id), role)?;
    let sandbox = sandbox_line(request, config, role);
    let run_id = RunId::generate(time::now().timestamp(), role, &feature.id, |candidate| {
        crate::base::fs::exists(&place.state.feature_runs(&feature.id).join(candidate))
    });
    let runtime = crate::roles::prompt::RuntimeContext {
        feature_id: feature.id.to_string(),
        workdir: place.workdir.clone(),
        state_dir: place.state.root().to_path_buf(),
        run_id,
    };
    let prompt: Prompt = match role {
        Role::Worker => WorkerPrompt {
            runtime: &runtime,
            role: &role_prompt,
            identity: layers.identity.as_deref(),
            feature,
            iteration: state.iteration_count + 1,
            max_iterations: state.max_iterations,
            promise: &state.completion_promise,
            notes: layers.notes.as_deref(),
            summary: layers.summary.as_deref(),
            lifecycle: Lifecycle::of(config, phase.as_ref().map(|(index, state)| (*index, state))),
        }
        .build(),
        Role::Validator => validator_prompt(
            &runtime,
            &role_prompt,
            &layers,
            feature,
            state.iteration_count,
            state.max_iterations,
        ),
        other => {
            return Err(InputError::new(format!(
                "explain shows the prompts of the worker and the validator, not of the {other}"
            ))
            .into())
        }
    };
    // As it would be sent: the secrets of the harness's environment and of the agent's
    // redacted (see `Attempt::save_prompt`).
    let agent_env = config.agent_for(role).env.iter().cloned();
    let text = Redactor::of_process_and(agent_env)
        .redact(&prompt.render())
        .into_owned();
    Ok(Explanation {
        total_tokens: estimate_tokens(&text),
        layers: prompt.layer_sizes(),
        prompt: text,
        note: standing(&state),
        sandbox,
    })
}

/// The command line the agent would run in (`<HARNESS_OWNER>` standing for its tag), `none`, or
/// why the sandbox cannot be made here (the run would refuse to start).
fn sandbox_line(request: &FeatureRequest, config: &Config, role: Role) -> String {
    let place = &request.place;
    let workdir = worktree::workdir_of(&place.state, &request.feature, &place.workdir)
        .unwrap_or_else(|_| place.workdir.clone());
    let enclosure = inputs::enclosure(
        config,
        role,
        &workdir,
        &place.state,
        place.path_var.as_deref(),
    );
    match enclosure {
        Ok(enclosure) => enclosure
            .command_line(&config.agent_for(role).command, &workdir)
            .map_or_else(|| "none".to_string(), |line| line.join(" ")),
        Err(error) => format!("cannot be made here, a run would refuse to start: {error}"),
    }
}

/// What stands in the way of a next invocation, if anything: the prompt is then what it would be
/// were the feature run again.
fn standing(state: &RunState) -> Option<String> {
    let id = &state.feature_id;
    let why = state
        .reason
        .as_deref()
        .map_or(String::new(), |reason| format!(" ({reason})"));
    let what = if !state.superseded_by.is_empty() {
        format!(
            "{id} was re-broken into {}: it does not run again",
            list_ids(&state.superseded_by)
        )
    } else {
        match state.status {
            Status::Done => format!("{id} is done: no invocation is next"),
            Status::Failed => {
                format!("{id} failed{why}: it runs again only with --max-iterations or a replan")
            }
            Status::Blocked => format!("{id} is blocked{why}"),
            _ => return None,
        }
    };
    Some(format!(
        "{what}; the prompt is what it would get were it run again"
    ))
}

impl Explanation {
    /// The table of layers for the terminal.
    pub fn table(&self) -> String {
        let width = self
            .layers
            .iter()
            .map(|(name, _)| name.chars().count())
            .max()
            .unwrap_or(0)
            .max(5);
        let mut text = self
            .note
            .as_ref()
            .map_or(String::new(), |note| format!("note: {note}\n"));
        text.push_str(&format!("sandbox: {}\n", self.sandbox));
        text.push_str(&format!(
            "{:<width$}  tokens (estimated: characters / 4)\n",
            "layer"
        ));
        for (name, tokens) in &self.layers {
            text.push_str(&format!("{name:<width$}  {tokens:>6}\n"));
        }
        text.push_str(&format!("{:<width$}  {:>6}\n", "total", self.total_tokens));
        text
    }
}
