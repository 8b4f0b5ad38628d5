//! Hooks: config.yaml's `hooks:` maps lifecycle events to commands, each run with the event's
//! payload as one JSON line on stdin and its scalar fields in `HARNESS_*` (see [`events`]), in
//! the project's directory, under supervision within its timeout. Observers by default: a hook
//! that fails, hangs past its timeout or cannot start is recorded in `hooks/runs.jsonl`, its
//! output kept in `hooks/`, and said on stderr — the run goes on, its state untouched. With
//! `on_error: stop` a failure stops the run there (resumable): the hook is a gate.
//!
//! [`events`]: crate::roles::lifecycle::events

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::agent::Enclosure;
use crate::base::atomic::append_lines;
use crate::base::{fs, signals, time};
use crate::roles::lifecycle::events::Payload;
use crate::roles::lifecycle::{run_command, Ran, Supervised};
use crate::spec::config::{Event, Hook, Hooks, OnError};
use crate::spec::layout::StateDir;
use crate::state::lifecycle::CommandOutcome;

/// Runs the hooks of the events one role meets.
#[derive(Debug, Clone, Copy)]
pub struct Emitter<'a> {
    pub hooks: &'a Hooks,
    /// The project's working directory (the feature's tree), where hooks run.
    pub workdir: &'a Path,
    pub state: &'a StateDir,
    pub path_var: Option<&'a OsStr>,
    pub kill_grace: Duration,
    /// Who runs them, for stderr (`worker`, `validator`, `planner`).
    pub who: &'a str,
}

/// One hook run, as `hooks/runs.jsonl` records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookRecord<'a> {
    pub time: String,
    pub event: Event,
    pub feature_id: Option<&'a str>,
    pub command: String,
    pub outcome: CommandOutcome,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub on_error: OnError,
    /// Its output, relative to the state directory, kept when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// Whether any of `hooks` waits for one of `events`.
pub fn wanted(hooks: &Hooks, events: impl IntoIterator<Item = Event>) -> bool {
    events
        .into_iter()
        .any(|event| hooks.get(&event).is_some_and(|list| !list.is_empty()))
}

impl Emitter<'_> {
    /// Runs the hooks of each payload, in order. Returns why the run must stop — the first
    /// failure of a hook with `on_error: stop` — or `None`.
    pub fn emit(&self, payloads: &[Payload]) -> Option<String> {
        let mut stop = None;
        for payload in payloads {
            let Some(hooks) = self.hooks.get(&payload.event) else {
                continue;
            };
            for (index, hook) in hooks.iter().enumerate() {
                let failure = self.run_hook(payload, index, hook);
                if let (Some(failure), OnError::Stop) = (failure, hook.on_error) {
                    stop.get_or_insert(failure);
                }
            }
        }
        stop
    }

    /// Runs one hook and records it; how it failed, in words, or `None` when it passed.
    fn run_hook(&self, payload: &Payload, index: usize, hook: &Hook) -> Option<String> {
        let started = time::now();
        let name = format!(
            "{}-{}-{}-{}.log",
            started.timestamp_millis(),
            std::process::id(),
            payload.event,
            index + 1
        );
        let log = self.state.hooks_dir().join(&name);
        // An interrupted run stops: it starts no more commands. A hook it did not start has
        // not failed: nothing is said, and an `on_error: stop` one leaves the interrupt as the
        // reason the run stopped.
        let skipped = signals::received().is_some();
        let ran = if skipped {
            Ran::without_running(CommandOutcome::Interrupted, String::new())
        } else {
            self.run_supervised(payload, hook, &log)
        };
        let passed = ran.outcome == CommandOutcome::Passed || skipped;
        let kept = match (passed, fs::is_file(&log)) {
            (true, true) => {
                let _ = fs::remove_file(&log);
                false
            }
            (_, kept) => kept,
        };
        self.record(&HookRecord {
            time: time::format(started),
            event: payload.event,
            feature_id: payload.feature_id.as_deref(),
            command: hook.command.to_string(),
            outcome: ran.outcome,
            exit_code: ran.exit_code,
            duration_ms: u64::try_from(ran.duration.as_millis()).unwrap_or(u64::MAX),
            on_error: hook.on_error,
            log: kept.then(|| format!("hooks/{name}")),
        });
        if passed {
            return None;
        }
        let failure = describe_failure(payload.event, hook, &ran);
        let output = if kept {
            format!(" (its output: {})", log.display())
        } else if ran.outcome == CommandOutcome::NotStarted {
            format!(": {}", ran.tail)
        } else {
            String::new()
        };
        eprintln!("{}: warning: {failure}{output}", self.who);
        Some(failure)
    }

    fn run_supervised(&self, payload: &Payload, hook: &Hook, log: &Path) -> Ran {
        if let Err(error) = fs::create_dir_all(&self.state.hooks_dir()) {
            let why = format!(
                "cannot create {}: {error}",
                self.state.hooks_dir().display()
            );
            return Ran::without_running(CommandOutcome::NotStarted, why);
        }
        let json = payload.to_json() + "\n";
        run_command(&Supervised {
            command: &hook.command,
            workdir: self.workdir,
            path_var: self.path_var,
            env: &payload.environment(),
            stdin: &json,
            timeout: Duration::from_secs(hook.timeout_secs),
            kill_grace: self.kill_grace,
            log,
            echo: false,
            enclosure: &Enclosure::unsandboxed(self.state.root()),
        })
    }

    /// Appends `record` to `hooks/runs.jsonl`; a record that cannot be written is said, never
    /// an error of the run.
    fn record(&self, record: &HookRecord) {
        let line = serde_json::to_string(record).unwrap_or_default() + "\n";
        let path = self.state.hooks_record();
        let written = fs::create_dir_all(&self.state.hooks_dir())
            .and_then(|()| append_lines(&path, &self.state.hooks_lock(), &line));
        if let Err(error) = written {
            eprintln!(
                "{}: warning: cannot record a hook run in {}: {error}",
                self.who,
                path.display()
            );
        }
    }
}

/// `the feature_done hook `notify-send done` failed: exit code 3`.
pub fn describe_failure(event: Event, hook: &Hook, ran: &Ran) -> String {
    let how = match (ran.outcome, ran.exit_code, ran.signal) {
        (CommandOutcome::Failed, Some(code), _) => format!("exit code {code}"),
        (CommandOutcome::Failed, None, Some(signal)) => {
            format!("killed by {}", signals::name(signal))
        }
        (CommandOutcome::TimedOut, ..) => format!(
            "still running after {} s, stopped (timeout_secs)",
            hook.timeout_secs
        ),
        (outcome, ..) => outcome.describe().to_string(),
    };
    format!("the {event} hook `{}` failed: {how}", hook.command)
}
