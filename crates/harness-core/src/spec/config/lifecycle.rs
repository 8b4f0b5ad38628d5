//! The feature's lifecycle as config.yaml gives it: `checks:` (commands a promise must pass),
//! `phases:` (an ordered list, each with its instructions, its gate and its allowed paths) and
//! `hooks:` (commands run on lifecycle events). Only the data and its checks live here; running
//! them is `roles::lifecycle`'s business.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A command as config.yaml gives it: a string is run by `sh -c` (pipes, `&&`, globs); a list is
/// the argv, run as is (its first element looked up in PATH, or relative to the working
/// directory when it holds a `/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, try_from = "serde_yaml::Value")]
pub enum CommandLine {
    /// Run by `sh -c`.
    Shell(String),
    /// The argv.
    Argv(Vec<String>),
}

impl TryFrom<serde_yaml::Value> for CommandLine {
    type Error = String;

    fn try_from(value: serde_yaml::Value) -> Result<Self, String> {
        use serde_yaml::Value;
        let command = match value {
            Value::String(text) => CommandLine::Shell(text),
            Value::Sequence(items) => CommandLine::Argv(
                items
                    .into_iter()
                    .map(|item| match item {
                        Value::String(text) => Ok(text),
                        Value::Number(number) => Ok(number.to_string()),
                        _ => Err(NOT_A_COMMAND.to_string()),
                    })
                    .collect::<Result<_, _>>()?,
            ),
            _ => return Err(NOT_A_COMMAND.into()),
        };
        if command
            .argv()
            .first()
            .is_none_or(|first| first.trim().is_empty())
        {
            return Err("a command is empty: give a shell command or an argv".into());
        }
        Ok(command)
    }
}

const NOT_A_COMMAND: &str =
    "a command is a string (run by `sh -c`) or a list of strings (the argv)";

impl CommandLine {
    /// The argv to run: `["sh", "-c", TEXT]` for a shell command.
    pub fn argv(&self) -> Vec<String> {
        match self {
            CommandLine::Shell(text) => vec!["sh".into(), "-c".into(), text.clone()],
            CommandLine::Argv(argv) => argv.clone(),
        }
    }
}

impl fmt::Display for CommandLine {
    /// As the user wrote it: the shell text, or the argv joined by spaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandLine::Shell(text) => f.write_str(text),
            CommandLine::Argv(argv) => f.write_str(&argv.join(" ")),
        }
    }
}

/// One check: a command that must exit 0, in the feature's working directory, within its time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Its name in the notes, the records and its log's file name.
    pub name: String,
    pub command: CommandLine,
    /// Seconds it may run; then its whole process tree is stopped and it fails.
    #[serde(default = "default_check_timeout")]
    pub timeout_secs: u64,
}

fn default_check_timeout() -> u64 {
    600
}

/// One phase of a feature: its instructions, its gate (checks and allowed paths) and its cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Shown in the prompt, `HARNESS_PHASE`, the board and the records.
    pub name: String,
    /// What the agent is to do in this phase (added to its prompt).
    #[serde(default)]
    pub instructions: String,
    /// Its gate's checks.
    #[serde(default)]
    pub checks: Vec<Check>,
    /// Globs of the paths the phase may change (relative to the top of the repository; `**`
    /// crosses directories, `*` and `?` do not); absent: any path.
    #[serde(default)]
    pub allow: Option<Vec<String>>,
    /// Iterations this phase may take (they count towards `max_iterations` too).
    #[serde(default)]
    pub max_iterations: Option<u32>,
}

/// A lifecycle event that hooks may be run on (the keys of `hooks:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// A worker iteration is about to run its agent.
    IterationStart,
    /// A worker's agent stopped and the harness decided what follows (the seed's on_agent_stop).
    AgentStop,
    /// A phase passed its gate; the next one starts.
    PhasePassed,
    /// A phase's gate refused the promise (failed checks or paths outside `allow:`).
    PhaseFailed,
    /// A check failed after a promise, which therefore did not count.
    ChecksFailed,
    /// The feature is done.
    FeatureDone,
    /// The feature failed (a guardrail or a rejection at the last iteration).
    FeatureFailed,
    /// The feature is blocked (a dependency failed, its merge conflicted).
    FeatureBlocked,
    /// A budget ran out.
    BudgetReached,
    /// The agent hit a rate or usage limit; the worker waits before it tries again.
    RateLimitWait,
    /// The service held the agent up once more with no wait left: the run stopped, resumable.
    WaitsExhausted,
    /// `./run.sh all` has run every feature it could.
    MissionDone,
}

impl Event {
    /// Every event, in the order of the lifecycle.
    pub const ALL: [Event; 12] = [
        Event::IterationStart,
        Event::AgentStop,
        Event::PhasePassed,
        Event::PhaseFailed,
        Event::ChecksFailed,
        Event::FeatureDone,
        Event::FeatureFailed,
        Event::FeatureBlocked,
        Event::BudgetReached,
        Event::RateLimitWait,
        Event::WaitsExhausted,
        Event::MissionDone,
    ];

    /// Its name in config.yaml and `HARNESS_EVENT` (`agent_stop`).
    pub fn as_str(self) -> &'static str {
        match self {
            Event::IterationStart => "iteration_start",
            Event::AgentStop => "agent_stop",
            Event::PhasePassed => "phase_passed",
            Event::PhaseFailed => "phase_failed",
            Event::ChecksFailed => "checks_failed",
            Event::FeatureDone => "feature_done",
            Event::FeatureFailed => "feature_failed",
            Event::FeatureBlocked => "feature_blocked",
            Event::BudgetReached => "budget_reached",
            Event::RateLimitWait => "rate_limit_wait",
            Event::WaitsExhausted => "waits_exhausted",
            Event::MissionDone => "mission_done",
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `hooks:`: the commands run on each event, in order.
pub type Hooks = BTreeMap<Event, Vec<Hook>>;

/// One hook: a command that gets the event as JSON on stdin and its main fields in `HARNESS_*`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    pub command: CommandLine,
    /// Seconds it may run; then its whole process tree is stopped and it counts as failed.
    #[serde(default = "default_hook_timeout")]
    pub timeout_secs: u64,
    /// What a failure (non-zero exit, timeout, no such program) does.
    #[serde(default)]
    pub on_error: OnError,
}

fn default_hook_timeout() -> u64 {
    30
}

/// What a failing hook does to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Recorded and said on stderr; the run goes on (an observer).
    #[default]
    Warn,
    /// Recorded, said, and the run stops there, resumable (a gate).
    Stop,
}

/// Checks the lifecycle sections: names that can be file names and are unique where they run
/// together, timeouts of at least a second, caps of at least one iteration.
pub(super) fn check(checks: &[Check], phases: &[Phase], hooks: &Hooks) -> Result<(), String> {
    check_list("checks", checks)?;
    let mut names: Vec<&str> = Vec::new();
    for (index, phase) in phases.iter().enumerate() {
        let at = format!("phases: phase {}", index + 1);
        if !is_name(&phase.name) {
            return Err(format!(
                "{at}: name {:?} must be a word of letters, digits, '_', '-' or '.'",
                phase.name
            ));
        }
        if names.contains(&phase.name.as_str()) {
            return Err(format!("{at}: the name {:?} is used twice", phase.name));
        }
        names.push(&phase.name);
        check_list(&format!("{at} ({})", phase.name), &phase.checks)?;
        if phase.max_iterations == Some(0) {
            return Err(format!("{at}: max_iterations must be at least 1"));
        }
        for glob in phase.allow.iter().flatten() {
            if glob.trim().is_empty() || glob.starts_with('/') {
                return Err(format!(
                    "{at}: allow: {glob:?} must be a glob relative to the top of the repository"
                ));
            }
        }
    }
    // The last phase's gate runs its own checks and the top-level ones together.
    if let Some(last) = phases.last() {
        let together: Vec<Check> = last.checks.iter().chain(checks).cloned().collect();
        check_list(&format!("phases: {} and checks", last.name), &together)?;
    }
    for (event, list) in hooks {
        if list.iter().any(|hook| hook.timeout_secs == 0) {
            return Err(format!("hooks: {event}: timeout_secs must be at least 1"));
        }
    }
    Ok(())
}

fn check_list(at: &str, checks: &[Check]) -> Result<(), String> {
    for (index, check) in checks.iter().enumerate() {
        if !is_name(&check.name) {
            return Err(format!(
                "{at}: check name {:?} must be a word of letters, digits, '_', '-' or '.'",
                check.name
            ));
        }
        if checks[..index].iter().any(|c| c.name == check.name) {
            return Err(format!(
                "{at}: the check name {:?} is used twice",
                check.name
            ));
        }
        if check.timeout_secs == 0 {
            return Err(format!(
                "{at}: check {:?}: timeout_secs must be at least 1",
                check.name
            ));
        }
    }
    Ok(())
}

/// A name that is a file name and a word: letters, digits, `_`, `-`, `.`, not starting with `.`.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::config::Config;
    use std::path::Path;

    fn parse(extra: &str) -> Result<Config, crate::InputError> {
        Config::parse(
            &format!("agent:\n  command: [a]\n{extra}"),
            Path::new("config.yaml"),
        )
    }

    #[test]
    fn checks_take_a_shell_string_or_an_argv() {
        let config = parse(
            "checks:\n  - {name: tests, command: \"cargo test && echo ok\"}\n  - name: lint\n    command: [cargo, clippy, --, -D, warnings]\n    timeout_secs: 60\n",
        )
        .unwrap();
        assert_eq!(
            config.checks[0].command.argv(),
            ["sh", "-c", "cargo test && echo ok"]
        );
        assert_eq!(config.checks[0].timeout_secs, 600);
        assert_eq!(config.checks[1].command.argv()[0], "cargo");
        assert_eq!(
            config.checks[1].command.to_string(),
            "cargo clippy -- -D warnings"
        );
        assert_eq!(config.checks[1].timeout_secs, 60);
        assert!(config.phases.is_empty() && config.hooks.is_empty());
    }

    #[test]
    fn bad_lifecycle_settings_are_refused_with_their_line() {
        for (bad, words) in [
            ("checks:\n  - {name: a, command: []}\n", "command is empty"),
            (
                "checks:\n  - {name: a, command: {x: 1}}\n",
                "a command is a string",
            ),
            (
                "checks:\n  - {name: a b, command: x}\n",
                "check name \"a b\"",
            ),
            (
                "checks:\n  - {name: a, command: x}\n  - {name: a, command: y}\n",
                "used twice",
            ),
            (
                "checks:\n  - {name: a, command: x, timeout_secs: 0}\n",
                "at least 1",
            ),
            (
                "phases:\n  - {name: plan}\n  - {name: plan}\n",
                "used twice",
            ),
            (
                "phases:\n  - {name: plan, max_iterations: 0}\n",
                "at least 1",
            ),
            (
                "phases:\n  - {name: plan, allow: [/etc/**]}\n",
                "relative to the top",
            ),
            ("phases:\n  - {name: plan, colour: red}\n", "colour"),
            (
                "hooks:\n  on_done: [{command: x}]\n",
                "unknown variant `on_done`",
            ),
            (
                "hooks:\n  feature_done: [{command: x, timeout_secs: 0}]\n",
                "at least 1",
            ),
            (
                "hooks:\n  feature_done: [{command: x, on_error: explode}]\n",
                "explode",
            ),
        ] {
            let error = parse(bad).unwrap_err();
            assert!(error.message.contains(words), "{bad}: {error}");
            assert!(error.line.is_some(), "{bad}: {error}");
        }
        // The last phase's checks run with the top-level ones: one name for both is refused.
        let error = parse(
            "checks:\n  - {name: tests, command: x}\nphases:\n  - name: build\n    checks: [{name: tests, command: y}]\n",
        )
        .unwrap_err();
        assert!(error.message.contains("used twice"), "{error}");
    }

    #[test]
    fn hooks_map_events_to_commands() {
        let config = parse(
            "hooks:\n  feature_done:\n    - command: [notify-send, done]\n  agent_stop:\n    - {command: \"curl -d @- x\", timeout_secs: 5, on_error: stop}\n",
        )
        .unwrap();
        assert_eq!(config.hooks[&Event::FeatureDone][0].timeout_secs, 30);
        assert_eq!(config.hooks[&Event::FeatureDone][0].on_error, OnError::Warn);
        let stop = &config.hooks[&Event::AgentStop][0];
        assert_eq!((stop.timeout_secs, stop.on_error), (5, OnError::Stop));
        for event in Event::ALL {
            let text: Event = serde_yaml::from_str(event.as_str()).unwrap();
            assert_eq!(text, event);
        }
    }
}
