//! `./run.sh explain F-001 [--role worker]`: the exact prompt the next invocation of a role would
//! get, with the estimated tokens of each layer, built from the state as it is — without running
//! anything, writing anything or taking a lock (so it works while a run goes on).

use crate::agent::Redactor;
use crate::base::time;
use crate::roles::attempt::{self, FeatureRequest};
use crate::roles::inputs::{self, InputMemo};
use crate::roles::prompt::{estimate_tokens, Prompt, WorkerPrompt};
use crate::roles::validator::validator_prompt;
use crate::spec::layout::RunId;
use crate::spec::role::Role;
use crate::state::run_state::RunState;
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
}

/// The prompt `role` would get next on the requested feature.
pub fn explain(request: &FeatureRequest, role: Role) -> anyhow::Result<Explanation> {
    let place = &request.place;
    let (checked, role_prompt) = attempt::read_inputs(&mut InputMemo::default(), request, role)?;
    let feature = &checked.feature;
    let config = &checked.config;
    let state =
        RunState::load(&place.state.run_state(&feature.id), &feature.id)?.unwrap_or_else(|| {
            RunState::new(
                feature.id.clone(),
                config.max_iterations,
                &config.completion_promise,
                time::now(),
            )
        });
    let layers = inputs::read_layers(&place.home, &place.state, Some(&feature.id), role)?;
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
    // As it would be sent: secrets redacted (see `invoke::save_prompt`).
    let text = Redactor::from_process_env()
        .redact(&prompt.render())
        .into_owned();
    Ok(Explanation {
        total_tokens: estimate_tokens(&text),
        layers: prompt.layer_sizes(),
        prompt: text,
    })
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
        let mut text = format!("{:<width$}  tokens (estimated: characters / 4)\n", "layer");
        for (name, tokens) in &self.layers {
            text.push_str(&format!("{name:<width$}  {tokens:>6}\n"));
        }
        text.push_str(&format!("{:<width$}  {:>6}\n", "total", self.total_tokens));
        text
    }
}
