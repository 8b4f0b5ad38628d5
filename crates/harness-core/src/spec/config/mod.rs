//! `.harness/config.yaml`: the agent command, how it gets its prompt, and the guardrails. Config
//! owns the data of every section (`agent:`, `budgets:`, `curator:`…) and imports no module that
//! acts on them, so every layer above may read it. Also the YAML reading every input file shares
//! (errors name the file and line).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::base::error::InputError;
use crate::base::fs;
use crate::spec::role::Role;

mod agent;
mod budgets;
mod curator;
mod executor;
mod lifecycle;
mod sandbox;
mod waits;

pub use crate::spec::presets::{OutputFormat, PromptVia};
pub use agent::{AgentConfig, AgentSpec, Prices};
pub use budgets::{Budget, Budgets};
pub use curator::CuratorParams;
pub use executor::{ExecutorConfig, ExecutorKind};
pub use lifecycle::{Check, CommandLine, Event, Hook, Hooks, OnError, Phase};
pub use sandbox::{SandboxConfig, SandboxKind};
pub use waits::{RateLimit, ServiceErrors};

/// The default guardrail on iterations per feature.
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;
/// The default completion promise.
pub const DEFAULT_COMPLETION_PROMISE: &str = "TASK_COMPLETE";

/// The whole config.yaml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The agent every role runs.
    pub agent: AgentConfig,
    /// Iterations a feature may take before it fails (exit 2).
    #[serde(default = "default_max_iterations")]
    pub max_iterations: u32,
    /// The word the agent prints inside `<promise>…</promise>` to finish.
    #[serde(default = "default_completion_promise")]
    pub completion_promise: String,
    /// Whether a feature the worker calls complete goes to the validator (else it is done at once).
    #[serde(default = "default_true")]
    pub validate: bool,
    /// Per-role settings, e.g. a different (cheaper, stricter) agent for the validator.
    #[serde(default)]
    pub roles: RoleConfigs,
    /// Token, cost and time budgets per feature and per mission.
    #[serde(default)]
    pub budgets: Budgets,
    /// Stop a feature after this many iterations in a row that changed nothing in the working
    /// tree and delivered no promise (0: never).
    #[serde(default = "default_stall_iterations")]
    pub stall_iterations: u32,
    /// What to do when an agent hits a rate or usage limit.
    #[serde(default)]
    pub rate_limit: RateLimit,
    /// What to do when the service fails an agent (overloaded, a server error, a lost
    /// connection).
    #[serde(default)]
    pub service_errors: ServiceErrors,
    /// Run a curator pass after every validator verdict.
    #[serde(default)]
    pub auto_curate: bool,
    /// The curator's thresholds and bounds.
    #[serde(default)]
    pub curator: CuratorParams,
    /// Where `./run.sh all` runs each feature: here, or as a job of a cluster.
    #[serde(default)]
    pub executor: ExecutorConfig,
    /// What the agents may touch: `none`, or a sandbox (see `SandboxConfig`).
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// Commands that must pass before a promise counts (tests, lints): backpressure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// The feature's phases, in order; none: one phase, as without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// Commands run on lifecycle events (notifications, gates).
    #[serde(default, skip_serializing_if = "Hooks::is_empty")]
    pub hooks: Hooks,
}

fn default_stall_iterations() -> u32 {
    3
}

/// Settings of the roles other than the worker.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleConfigs {
    /// The validator.
    #[serde(default)]
    pub validator: Option<RoleConfig>,
    /// The planner.
    #[serde(default)]
    pub planner: Option<RoleConfig>,
    /// The curator.
    #[serde(default)]
    pub curator: Option<RoleConfig>,
}

/// One role's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleConfig {
    /// The agent this role runs instead of the top-level `agent`.
    #[serde(default)]
    pub agent: Option<AgentConfig>,
    /// The sandbox this role's agent runs in instead of the top-level `sandbox`.
    #[serde(default)]
    pub sandbox: Option<SandboxConfig>,
}

fn default_max_iterations() -> u32 {
    DEFAULT_MAX_ITERATIONS
}

fn default_completion_promise() -> String {
    DEFAULT_COMPLETION_PROMISE.to_string()
}

fn default_true() -> bool {
    true
}

impl Config {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let text = read_input(path)?;
        Self::parse(&text, path)
    }

    /// Parses and checks config.yaml text (`path` only names the file in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Self, InputError> {
        if text.trim().is_empty() {
            return Err(InputError::in_file(path, "the file is empty")
                .with_hint("it needs at least `agent: {command: [...]}`; see `./run.sh init`"));
        }
        let config: Config = parse_yaml(text, path)?;
        config.check().map_err(|message| {
            InputError::in_file(path, message.clone()).at_line(line_of_key(text, &message))
        })?;
        Ok(config)
    }

    /// The agent `role` runs: its own under `roles:`, else the top-level one.
    pub fn agent_for(&self, role: Role) -> &AgentConfig {
        self.role(role)
            .and_then(|own| own.agent.as_ref())
            .unwrap_or(&self.agent)
    }

    /// The sandbox `role`'s agent runs in: its own under `roles:`, else the top-level one.
    pub fn sandbox_for(&self, role: Role) -> &SandboxConfig {
        self.role(role)
            .and_then(|own| own.sandbox.as_ref())
            .unwrap_or(&self.sandbox)
    }

    /// `role`'s own settings under `roles:` (the worker's are the top-level ones).
    fn role(&self, role: Role) -> Option<&RoleConfig> {
        match role {
            Role::Worker => None,
            Role::Validator => self.roles.validator.as_ref(),
            Role::Planner => self.roles.planner.as_ref(),
            Role::Curator => self.roles.curator.as_ref(),
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.max_iterations == 0 {
            return Err("max_iterations must be at least 1".into());
        }
        self.budgets.check()?;
        self.executor.check()?;
        self.rate_limit.check()?;
        self.service_errors.check()?;
        self.sandbox.check()?;
        for (role, own) in [
            ("validator", &self.roles.validator),
            ("planner", &self.roles.planner),
            ("curator", &self.roles.curator),
        ] {
            if let Some(sandbox) = own.as_ref().and_then(|own| own.sandbox.as_ref()) {
                sandbox
                    .check()
                    .map_err(|message| format!("roles.{role}.{message}"))?;
            }
        }
        lifecycle::check(&self.checks, &self.phases, &self.hooks)?;
        self.curator
            .check()
            .map_err(|message| format!("curator: {message}"))?;
        let promise = &self.completion_promise;
        if promise.is_empty()
            || !promise
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(format!(
                "completion_promise {promise:?} must be a non-empty word of letters, digits, '_', '-' or '.'"
            ));
        }
        Ok(())
    }
}

/// The line of the first config key a check message names, so the error can point at it.
fn line_of_key(text: &str, message: &str) -> Option<usize> {
    let key = message
        .split_whitespace()
        .next()?
        .trim_end_matches(':')
        .rsplit('.')
        .next()?;
    text.lines()
        .position(|line| line.trim_start().starts_with(&format!("{key}:")))
        .map(|index| index + 1)
}

/// Reads a JSON file the harness keeps (a run state, a record): `None` when there is none; JSON
/// that does not parse is an input error naming the file, its line, `what` it is, and `hint`.
pub fn read_json<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    hint: &str,
) -> Result<Option<T>, InputError> {
    if !fs::exists(path) {
        return Ok(None);
    }
    let text = read_input(path)?;
    serde_json::from_str(&text).map(Some).map_err(|error| {
        InputError::in_file(path, format!("unreadable {what}: {error}"))
            .at_line(Some(error.line()))
            .with_hint(hint)
    })
}

/// Reads an input file as UTF-8 text (a leading BOM is dropped), with errors that name the file.
pub fn read_input(path: &Path) -> Result<String, InputError> {
    let bytes = fs::read(path).map_err(|error| {
        let error = InputError::in_file(path, io_message(&error));
        if path
            .file_name()
            .is_some_and(|n| n == "config.yaml" || n == "features.yaml")
        {
            error.with_hint("create the state directory with `./run.sh init -C <project dir>`")
        } else {
            error
        }
    })?;
    let text = String::from_utf8(bytes).map_err(|error| {
        let line = error.as_bytes()[..error.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        InputError::in_file(path, "the file is not valid UTF-8").at_line(Some(line))
    })?;
    Ok(text
        .strip_prefix('\u{feff}')
        .map(str::to_string)
        .unwrap_or(text))
}

/// Deserialises YAML, turning serde's error into one line with the file and line.
pub fn parse_yaml<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, InputError> {
    if let Some((line, problem)) = unparsable(text) {
        return Err(InputError::in_file(path, problem).at_line(Some(line)));
    }
    serde_yaml::from_str(text).map_err(|error| {
        let line = error.location().map(|location| location.line());
        let mut message = error.to_string();
        // serde_yaml appends " at line L column C"; the line is already in the prefix.
        if let Some(index) = message.find(" at line ") {
            message.truncate(index);
        }
        InputError::in_file(path, message).at_line(line)
    })
}

/// The deepest nesting of `[…]` and `{…}` a YAML input may have. serde_yaml refuses anything
/// past 128 levels anyway, but only after its parser went through all of it, in time that grows
/// with the square of the depth (a 200 KB file of brackets took minutes).
pub const MAX_YAML_NESTING: usize = 128;

/// What makes `text` unreadable as YAML before a parser sees it, with its 1-based line: a control
/// character (YAML allows tab, newline and carriage return only; serde_yaml names no line for
/// one), or flow collections nested past [`MAX_YAML_NESTING`]. Brackets inside quotes and
/// comments are not counted; a block scalar's may be, which takes a text far stranger than any
/// spec to matter.
fn unparsable(text: &str) -> Option<(usize, String)> {
    let mut line = 1;
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut escaped = false;
    let mut previous = '\n';
    for c in text.chars() {
        if c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{85}') {
            return Some((
                line,
                format!(
                    "the file holds the control character U+{:04X}, which YAML does not allow",
                    c as u32
                ),
            ));
        }
        match (quote, c) {
            (_, '\n') => {
                line += 1;
                comment = false;
            }
            _ if comment => {}
            (Some('"'), '\\') => escaped = !escaped,
            (Some(open), c) if c == open && !escaped => quote = None,
            (Some(_), _) => {}
            (None, '#') if previous.is_whitespace() => comment = true,
            (None, '"' | '\'') if depth > 0 || previous.is_whitespace() || previous == ':' => {
                quote = Some(c)
            }
            (None, '[' | '{') => {
                depth += 1;
                if depth > MAX_YAML_NESTING {
                    return Some((
                        line,
                        format!("lists or maps are nested more than {MAX_YAML_NESTING} deep"),
                    ));
                }
            }
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c != '\\' {
            escaped = false;
        }
        previous = c;
    }
    None
}

/// A short description of an I/O error ("no such file", "permission denied").
pub fn io_message(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, InputError> {
        Config::parse(text, Path::new("config.yaml"))
    }

    #[test]
    fn minimum_config_gets_the_documented_defaults() {
        let config = parse("agent:\n  command: [\"claude\", \"-p\"]\n").unwrap();
        assert_eq!(config.max_iterations, 10);
        assert_eq!(config.completion_promise, "TASK_COMPLETE");
        assert_eq!(config.agent.prompt_via, PromptVia::Stdin);
        assert_eq!(config.agent.timeout_secs, 1800);
        assert_eq!(config.agent.output_format, OutputFormat::Text);
    }

    #[test]
    fn contract_example_parses() {
        let config = parse(
            "agent:\n  command: [\"claude\", \"-p\", \"--dangerously-skip-permissions\"]\n  prompt_via: stdin\n  timeout_secs: 1800\nmax_iterations: 10\ncompletion_promise: TASK_COMPLETE\n",
        )
        .unwrap();
        assert_eq!(config.agent.command.len(), 3);
    }

    #[test]
    fn errors_name_the_line() {
        let error = parse("agent:\n  command: [a]\n  prompt_via: pigeon\n").unwrap_err();
        assert_eq!(error.line, Some(3), "{error}");
        assert!(error.message.contains("pigeon"), "{error}");
        let error = parse("agent:\n  command: [a]\nmax_iterations: ten\n").unwrap_err();
        assert_eq!(error.line, Some(3), "{error}");
        let error = parse("agent:\n  command: []\n").unwrap_err();
        assert!(error.message.contains("command is empty"), "{error}");
        assert!(error.line.is_some());
        let error = parse("agent:\n  command: [a]\nmax_iterations: 0\n").unwrap_err();
        assert_eq!(error.line, Some(3), "{error}");
        let error = parse("agent: [\n").unwrap_err();
        assert!(error.line.is_some(), "{error}");
    }

    #[test]
    fn a_role_can_have_its_own_agent() {
        let config = parse(
            "agent:\n  command: [claude, -p]\nvalidate: false\nroles:\n  validator:\n    agent:\n      command: [strict-agent]\n      timeout_secs: 60\n",
        )
        .unwrap();
        assert!(!config.validate);
        assert_eq!(config.agent_for(Role::Validator).command, ["strict-agent"]);
        assert_eq!(config.agent_for(Role::Validator).timeout_secs, 60);
        assert_eq!(config.agent_for(Role::Planner).command, ["claude", "-p"]);
        assert_eq!(config.agent_for(Role::Worker).command, ["claude", "-p"]);
        let error =
            parse("agent:\n  command: [a]\nroles:\n  validator:\n    agent:\n      command: []\n")
                .unwrap_err();
        assert!(
            error.message.contains("roles.validator: command is empty"),
            "{error}"
        );
        assert!(parse("agent:\n  command: [a]\nroles:\n  tester: {}\n").is_err());
    }

    #[test]
    fn the_sandbox_is_none_by_default_and_a_role_may_have_its_own() {
        let config = parse("agent:\n  command: [a]\n").unwrap();
        assert_eq!(config.sandbox_for(Role::Worker).kind, SandboxKind::None);
        let config = parse(
            "agent:\n  command: [a]\nsandbox: bwrap\nroles:\n  validator:\n    sandbox: {kind: bwrap, network: false}\n  planner:\n    sandbox: none\n",
        )
        .unwrap();
        assert_eq!(config.sandbox_for(Role::Worker).kind, SandboxKind::Bwrap);
        assert!(!config.sandbox_for(Role::Validator).network);
        assert_eq!(config.sandbox_for(Role::Planner).kind, SandboxKind::None);
        assert_eq!(config.sandbox_for(Role::Curator).kind, SandboxKind::Bwrap);
        assert_eq!(config.agent_for(Role::Validator).command, ["a"]);
        let error =
            parse("agent:\n  command: [a]\nsandbox: {kind: bwrap, writable: [x]}\n").unwrap_err();
        assert!(error.message.contains("writable path"), "{error}");
        assert_eq!(error.line, Some(3), "{error}");
        let error = parse("agent:\n  command: [a]\nsandbox:\n  kind: bwrap\n  netwrok: false\n")
            .unwrap_err();
        assert!(error.message.contains("netwrok"), "{error}");
        assert!(error.line.is_some(), "{error}");
    }

    #[test]
    fn the_executor_defaults_to_local_and_keeps_its_own_sbatch_options() {
        let config = parse("agent:\n  command: [a]\n").unwrap();
        assert_eq!(config.executor, ExecutorConfig::default());
        assert_eq!(config.executor.kind, ExecutorKind::Local);
        let config = parse(
            "agent:\n  command: [a]\nexecutor:\n  kind: slurm\n  sbatch_args: [--partition=short, --time=2:00:00, -A, lab]\n  poll_secs: 5\n",
        )
        .unwrap();
        assert_eq!(config.executor.kind, ExecutorKind::Slurm);
        assert_eq!(config.executor.sbatch_args.len(), 4);
        assert_eq!(config.executor.poll_secs, 5);
        for bad in [
            "--job-name=x",
            "-J",
            "-Jx",
            "--output=/tmp/o",
            "--wrap=true",
            "--parsable",
        ] {
            let text = format!(
                "agent:\n  command: [a]\nexecutor:\n  kind: slurm\n  sbatch_args: [\"{bad}\"]\n"
            );
            let error = parse(&text).unwrap_err();
            assert!(
                error.message.contains("the harness sets itself"),
                "{bad}: {error}"
            );
            assert_eq!(error.line, Some(5), "{bad}: {error}");
        }
        let error = parse("agent:\n  command: [a]\nexecutor:\n  poll_secs: 0\n").unwrap_err();
        assert_eq!(error.line, Some(4), "{error}");
        assert!(parse("agent:\n  command: [a]\nexecutor:\n  kind: kubernetes\n").is_err());
        assert_eq!("slurm".parse(), Ok(ExecutorKind::Slurm));
        assert!("pbs".parse::<ExecutorKind>().is_err());
    }

    #[test]
    fn a_promise_must_be_one_plain_word() {
        for bad in ["", "TWO WORDS", "<x>", "a/b"] {
            let text = format!("agent:\n  command: [a]\ncompletion_promise: \"{bad}\"\n");
            assert!(parse(&text).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn empty_and_unknown_keys_are_errors() {
        assert!(parse("\n").unwrap_err().message.contains("empty"));
        let error = parse("agent:\n  command: [a]\nmax_iteration: 3\n").unwrap_err();
        assert!(error.message.contains("max_iteration"), "{error}");
        assert_eq!(error.line, Some(3));
    }

    /// Regression: 100,000 nested brackets kept the parser busy for minutes (time grows with
    /// the square of the depth) before serde_yaml's own depth limit refused them.
    #[test]
    fn a_bracket_bomb_is_refused_at_once_with_its_line() {
        let deep = |depth: usize| {
            format!(
                "agent:\n  command: {}{}\n",
                "[".repeat(depth),
                "]".repeat(depth)
            )
        };
        let started = std::time::Instant::now();
        let error = parse(&deep(100_000)).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(error.line, Some(2));
        assert!(
            error.message.contains("nested more than 128 deep"),
            "{error}"
        );
        // Within the bound, the parser's own error is kept.
        let error = parse(&deep(100)).unwrap_err();
        assert!(error.message.contains("agent.command"), "{error}");
        // Brackets in quotes and comments do not count.
        let quoted = format!(
            "agent:\n  command: [\"{0}\", '{0}'] # {0}\n",
            "[".repeat(200)
        );
        assert!(parse(&quoted).is_ok());
    }

    #[test]
    fn a_control_character_is_named_with_its_line() {
        let error = parse("agent:\n  command: [sh]\nmax_iterations: 3\0\n").unwrap_err();
        assert_eq!(error.line, Some(3));
        assert!(error.message.contains("U+0000"), "{error}");
        assert!(parse("agent:\r\n\tcommand: [sh]\r\n").is_err()); // a tab indent: YAML's error
        assert!(parse("agent:\r\n  command: [\"a\tb\"]\r\n").is_ok());
    }

    #[test]
    fn read_input_names_the_file_and_drops_a_bom() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("config.yaml");
        let error = read_input(&missing).unwrap_err();
        assert!(
            error.to_string().contains("config.yaml: no such file"),
            "{error}"
        );
        std::fs::write(&missing, "\u{feff}agent: {command: [a]}\r\n").unwrap();
        assert!(Config::load(&missing).is_ok());
        std::fs::write(&missing, b"agent:\n  command: [\xff]\n").unwrap();
        let error = read_input(&missing).unwrap_err();
        assert_eq!(error.line, Some(2));
    }
}
