//! Checks (backpressure): after an agent delivers the promise, commands that must pass before the
//! promise counts — tests, lints — run in the feature's working tree, each under supervision
//! within its timeout, its output in the attempt's run directory (`checks/<n>-<name>.log`).
//! They cost no tokens and cannot be talked round: only their exit codes count.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::agent::Enclosure;
use crate::base::fs;
use crate::roles::lifecycle::{run_command, Supervised};
use crate::spec::config::{Check, Config};
use crate::state::lifecycle::{CheckRecord, CommandOutcome};

/// Where and how the checks of one attempt run.
#[derive(Debug, Clone)]
pub struct CheckPlace<'a> {
    /// The feature's working tree.
    pub workdir: &'a Path,
    pub path_var: Option<&'a OsStr>,
    /// The attempt's `HARNESS_*` environment (each check adds `HARNESS_CHECK`).
    pub env: &'a [(String, String)],
    pub kill_grace: Duration,
    /// The attempt's run directory.
    pub run_dir: &'a Path,
    /// Copy their output to the terminal.
    pub echo: bool,
    /// The worker's agent's enclosure: checks run in its sandbox, if any, as it does.
    pub enclosure: &'a Enclosure,
}

/// One check's run: its record, and the end of its output for the notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub record: CheckRecord,
    /// Its command, as config.yaml gives it.
    pub command: String,
    pub tail: String,
}

/// The checks the gate of phase `phase` (its index; `None` without phases) runs: the phase's
/// own, then, for the last phase (or without phases), the top-level `checks:`.
pub fn gate_checks(config: &Config, phase: Option<usize>) -> Vec<&Check> {
    let own = phase.map_or(&[][..], |index| &config.phases[index].checks[..]);
    let last = phase.is_none_or(|index| index + 1 == config.phases.len());
    let top: &[Check] = if last { &config.checks } else { &[] };
    own.iter().chain(top).collect()
}

/// Runs `checks` in order (all of them, so the next attempt sees every failure at once; an
/// interrupt stops the rest). An error only when the log directory cannot be made.
pub fn run_checks(checks: &[&Check], place: &CheckPlace) -> anyhow::Result<Vec<CheckRun>> {
    let dir = place.run_dir.join("checks");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut runs = Vec::new();
    for (index, check) in checks.iter().enumerate() {
        if crate::base::signals::received().is_some() {
            break;
        }
        let file = format!("{}-{}.log", index + 1, check.name);
        if place.echo {
            eprintln!("worker: check `{}`: {}", check.name, check.command);
        }
        let run = run_check(check, place, &dir.join(&file));
        runs.push(CheckRun {
            record: CheckRecord {
                log: format!("checks/{file}"),
                ..run.record
            },
            ..run
        });
    }
    Ok(runs)
}

fn run_check(check: &Check, place: &CheckPlace, log: &PathBuf) -> CheckRun {
    let mut env = place.env.to_vec();
    env.push(("HARNESS_CHECK".into(), check.name.clone()));
    let ran = run_command(&Supervised {
        command: &check.command,
        workdir: place.workdir,
        path_var: place.path_var,
        env: &env,
        stdin: "",
        timeout: Duration::from_secs(check.timeout_secs),
        kill_grace: place.kill_grace,
        log,
        echo: place.echo,
        enclosure: place.enclosure,
    });
    let tail = match ran.outcome {
        CommandOutcome::TimedOut => format!(
            "{}\n(stopped after {} s: its time ran out)",
            ran.tail.trim_end(),
            check.timeout_secs
        ),
        _ => ran.tail,
    };
    CheckRun {
        record: CheckRecord {
            name: check.name.clone(),
            outcome: ran.outcome,
            exit_code: ran.exit_code,
            signal: ran.signal,
            duration_ms: u64::try_from(ran.duration.as_millis()).unwrap_or(u64::MAX),
            log: String::new(),
        },
        command: check.command.to_string(),
        tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(
            &format!("agent:\n  command: [a]\n{text}"),
            Path::new("config.yaml"),
        )
        .unwrap()
    }

    fn names(checks: Vec<&Check>) -> Vec<&str> {
        checks.iter().map(|check| check.name.as_str()).collect()
    }

    #[test]
    fn the_top_level_checks_guard_the_last_phase_only() {
        let plain = config("checks: [{name: tests, command: t}]\n");
        assert_eq!(names(gate_checks(&plain, None)), ["tests"]);
        let phased = config(
            "checks: [{name: tests, command: t}]\nphases:\n  - {name: plan, checks: [{name: plan-exists, command: p}]}\n  - {name: build, checks: [{name: lint, command: l}]}\n",
        );
        assert_eq!(names(gate_checks(&phased, Some(0))), ["plan-exists"]);
        assert_eq!(names(gate_checks(&phased, Some(1))), ["lint", "tests"]);
        assert!(gate_checks(&config(""), None).is_empty());
    }

    #[test]
    fn every_check_runs_in_order_with_its_log_in_the_run_directory() {
        let dir = tempfile::tempdir().unwrap();
        let config = config(
            "checks:\n  - {name: fails, command: \"echo broken; exit 4\"}\n  - {name: passes, command: [sh, -c, \"echo $HARNESS_CHECK in $PWD\"]}\n",
        );
        let path = std::env::var_os("PATH");
        let runs = run_checks(
            &gate_checks(&config, None),
            &CheckPlace {
                workdir: dir.path(),
                path_var: path.as_deref(),
                env: &[],
                kill_grace: Duration::from_secs(1),
                run_dir: &dir.path().join("run"),
                echo: false,
                enclosure: &Enclosure::unsandboxed(dir.path()),
            },
        )
        .unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].record.outcome, CommandOutcome::Failed);
        assert_eq!(runs[0].record.exit_code, Some(4));
        assert_eq!(runs[0].record.log, "checks/1-fails.log");
        assert_eq!(runs[0].tail, "broken\n");
        assert_eq!(runs[1].record.outcome, CommandOutcome::Passed);
        let log = std::fs::read_to_string(dir.path().join("run/checks/2-passes.log")).unwrap();
        assert_eq!(log, format!("passes in {}\n", dir.path().display()));
    }
}
