//! `agent:` in config.yaml (and under `roles:`): the command, how it takes its prompt and what it
//! prints, its time limits, its context window and prices — a preset and the user's overrides,
//! resolved into one [`AgentConfig`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::spec::presets::{OutputFormat, Preset, PromptVia};

/// How to run the agent, resolved from config.yaml's `agent:` (a preset and its overrides).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AgentSpec", into = "AgentSpec")]
pub struct AgentConfig {
    /// The preset it came from, if any.
    pub preset: Option<Preset>,
    /// The whole argv; the first element is looked up in PATH (or relative to the working
    /// directory when it holds a `/`). `{prompt_file}` stands for the prompt file's path.
    pub command: Vec<String>,
    /// How the prompt reaches the agent.
    pub prompt_via: PromptVia,
    /// What the agent prints, so its final answer, usage and context can be read.
    pub output_format: OutputFormat,
    /// Extra environment of the agent.
    pub env: Vec<(String, String)>,
    /// Per-invocation time limit, in seconds.
    pub timeout_secs: u64,
    /// After SIGTERM, seconds to wait before SIGKILL.
    pub kill_grace_secs: u64,
    /// Stop an agent that prints nothing for this long (seconds); `None`: no idle limit.
    pub idle_timeout_secs: Option<u64>,
    /// After its final answer, seconds an agent may take to exit before it is stopped.
    pub result_grace_secs: u64,
    /// The model's context window in tokens, for the live handoff; `None`: no handoff.
    pub context_window: Option<u64>,
    /// The fraction of the window at which the agent is handed off to a fresh one.
    pub handoff_threshold: f64,
    /// Prices to estimate a cost the agent does not report.
    pub prices: Option<Prices>,
}

/// `agent:` as written in config.yaml.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// A known CLI's headless form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<Preset>,
    /// The argv (required without a preset; with one, it replaces the preset's argv).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Extra arguments for a preset (e.g. `["--model", "opus"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdin | arg | file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_via: Option<PromptVia>,
    /// text | claude-stream-json | codex-json | gemini-stream-json | opencode-json | aider
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<OutputFormat>,
    /// Extra environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Seconds (default 1800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Seconds (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_grace_secs: Option<u64>,
    /// Seconds (default 900; 0 turns the idle limit off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_secs: Option<u64>,
    /// Seconds (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_grace_secs: Option<u64>,
    /// Tokens (default: the preset's; none without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// A fraction in (0, 1] (default 0.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_threshold: Option<f64>,
    /// USD per million tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
}

impl TryFrom<AgentSpec> for AgentConfig {
    type Error = String;

    fn try_from(spec: AgentSpec) -> Result<Self, String> {
        let preset = spec.preset;
        let preset_spec = preset.map(Preset::spec);
        let command = match (&spec.command, &preset_spec) {
            (Some(command), _) => {
                let mut command = command.clone();
                command.extend(spec.args.iter().cloned());
                command
            }
            (None, Some(p)) if preset != Some(Preset::Command) => p
                .head
                .iter()
                .map(|s| s.to_string())
                .chain(spec.args.iter().cloned())
                .chain(p.tail.iter().map(|s| s.to_string()))
                .collect(),
            _ => return Err("command is missing: give the agent's argv, or a preset".into()),
        };
        if command.is_empty() {
            return Err("command is empty: give the agent's argv".into());
        }
        if command[0].trim().is_empty() {
            return Err("command starts with an empty program name".into());
        }
        let threshold = spec.handoff_threshold.unwrap_or(0.8);
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(format!("handoff_threshold {threshold} must be in (0, 1]"));
        }
        if spec.timeout_secs == Some(0) {
            return Err("timeout_secs must be at least 1".into());
        }
        if let Some(prices) = &spec.prices {
            let all = [
                Some(prices.input_per_mtok),
                Some(prices.output_per_mtok),
                prices.cache_write_per_mtok,
                prices.cache_read_per_mtok,
            ];
            if all
                .into_iter()
                .flatten()
                .any(|p| !(p >= 0.0 && p.is_finite()))
            {
                return Err("prices must be numbers of USD per million tokens, 0 or more".into());
            }
        }
        let mut env: Vec<(String, String)> = preset_spec
            .as_ref()
            .map(|p| {
                p.env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .unwrap_or_default();
        env.retain(|(key, _)| !spec.env.contains_key(key));
        env.extend(spec.env.clone());
        Ok(AgentConfig {
            preset,
            command,
            prompt_via: spec
                .prompt_via
                .or(preset_spec.as_ref().map(|p| p.prompt_via))
                .unwrap_or_default(),
            output_format: spec
                .output_format
                .or(preset_spec.as_ref().map(|p| p.output_format))
                .unwrap_or_default(),
            env,
            timeout_secs: spec.timeout_secs.unwrap_or(1800),
            kill_grace_secs: spec.kill_grace_secs.unwrap_or(5),
            idle_timeout_secs: match spec.idle_timeout_secs.unwrap_or(900) {
                0 => None,
                secs => Some(secs),
            },
            result_grace_secs: spec.result_grace_secs.unwrap_or(30),
            context_window: spec
                .context_window
                .or(preset_spec.as_ref().and_then(|p| p.context_window)),
            handoff_threshold: threshold,
            prices: spec.prices,
        })
    }
}

impl From<AgentConfig> for AgentSpec {
    fn from(agent: AgentConfig) -> Self {
        AgentSpec {
            preset: agent.preset,
            command: Some(agent.command),
            args: Vec::new(),
            prompt_via: Some(agent.prompt_via),
            output_format: Some(agent.output_format),
            env: agent.env.into_iter().collect(),
            timeout_secs: Some(agent.timeout_secs),
            kill_grace_secs: Some(agent.kill_grace_secs),
            idle_timeout_secs: Some(agent.idle_timeout_secs.unwrap_or(0)),
            result_grace_secs: Some(agent.result_grace_secs),
            context_window: agent.context_window,
            handoff_threshold: Some(agent.handoff_threshold),
            prices: agent.prices,
        }
    }
}

impl AgentConfig {
    /// The per-invocation time limit.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }

    /// The wait between SIGTERM and SIGKILL.
    pub fn kill_grace(&self) -> Duration {
        Duration::from_secs(self.kill_grace_secs)
    }
}

/// Prices in USD per million tokens, for agents that report tokens but no cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Tokens written to the cache (default: the input price).
    #[serde(default)]
    pub cache_write_per_mtok: Option<f64>,
    /// Tokens read from the cache (default: a tenth of the input price).
    #[serde(default)]
    pub cache_read_per_mtok: Option<f64>,
}
