//! The feature's lifecycle around the worker's agent: the checks a promise must pass
//! ([`checks`]), the phases and their gates ([`phases`]), and the hooks run on its events
//! ([`events`] builds each event's payload, [`hooks`] runs the commands). Checks and hooks are
//! commands run exactly as agents are ([`run_command`]): through the agent supervisor, in their
//! own process group, stopped with their whole tree at their timeout or on Ctrl-C, their output
//! redacted into a log — so whatever wraps an agent's process (a sandbox) wraps them too.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use crate::agent::{self, Enclosure, End, Limits, Redactor};
use crate::spec::config::{CommandLine, OutputFormat, PromptVia};
use crate::state::lifecycle::CommandOutcome;

pub mod checks;
pub mod events;
pub mod hooks;
pub mod phases;

/// One command of the lifecycle to run under supervision.
#[derive(Debug, Clone)]
pub struct Supervised<'a> {
    pub command: &'a CommandLine,
    /// Its working directory (the feature's working tree).
    pub workdir: &'a Path,
    /// `PATH`, to find its program.
    pub path_var: Option<&'a OsStr>,
    /// Its `HARNESS_*` environment, on top of the harness's own.
    pub env: &'a [(String, String)],
    /// What it reads on stdin (then end of file).
    pub stdin: &'a str,
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Where its output goes.
    pub log: &'a Path,
    /// Copy its output to the terminal too.
    pub echo: bool,
    /// How it is started and held: a check in the worker's agent's (its sandbox too), a hook
    /// unsandboxed.
    pub enclosure: &'a Enclosure,
}

/// How a supervised command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub outcome: CommandOutcome,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration: Duration,
    /// The end of its output (redacted).
    pub tail: String,
}

impl Ran {
    /// A command that did not run (`NotStarted`, or `Interrupted` before it started); `why`
    /// stands for its output.
    pub fn without_running(outcome: CommandOutcome, why: String) -> Self {
        Ran {
            outcome,
            exit_code: None,
            signal: None,
            duration: Duration::ZERO,
            tail: why,
        }
    }

    fn not_started(why: String) -> Self {
        Self::without_running(CommandOutcome::NotStarted, why)
    }
}

/// Runs `supervised` to its end: never an error, since a command that cannot start is an
/// outcome of its own (its tail says why).
pub fn run_command(supervised: &Supervised) -> Ran {
    let mut argv = supervised.command.argv();
    let program = agent::resolve_program(
        &argv[0],
        supervised.workdir,
        supervised.path_var,
        Path::new("config.yaml"),
    );
    match program {
        Ok(program) => argv[0] = program.to_string_lossy().into_owned(),
        Err(_) => {
            return Ran::not_started(format!("{:?} was not found or is not executable", argv[0]))
        }
    }
    let env = supervised.env;
    let invocation = agent::Invocation {
        argv: &argv,
        prompt: supervised.stdin,
        prompt_via: PromptVia::Stdin,
        // Read only with `prompt_via: file`.
        prompt_file: supervised.log,
        workdir: supervised.workdir,
        env,
        timeout: supervised.timeout,
        kill_grace: supervised.kill_grace,
        output_format: OutputFormat::Text,
        markers: &[],
        log: supervised.log,
        echo: supervised.echo,
        limits: Limits::default(),
        redactor: Redactor::of_process_and(env.iter().cloned()),
        progress: None,
        enclosure: supervised.enclosure,
    };
    match agent::run(&invocation) {
        Ok(run) => {
            let (exit_code, signal) = run.exit_status();
            Ran {
                outcome: outcome_of(run.end),
                exit_code,
                signal,
                duration: run.duration,
                tail: run.output.tail,
            }
        }
        Err(error) => Ran::not_started(format!("cannot start {:?}: {error}", argv[0])),
    }
}

/// What the supervisor's `end` means for a command that must exit 0.
pub fn outcome_of(end: End) -> CommandOutcome {
    match end {
        End::Exited(0) => CommandOutcome::Passed,
        End::TimedOut | End::IdleTimedOut => CommandOutcome::TimedOut,
        End::Interrupted(_) => CommandOutcome::Interrupted,
        _ => CommandOutcome::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exit_0_passes() {
        assert_eq!(outcome_of(End::Exited(0)), CommandOutcome::Passed);
        assert_eq!(outcome_of(End::Exited(1)), CommandOutcome::Failed);
        assert_eq!(outcome_of(End::Signaled(9)), CommandOutcome::Failed);
        assert_eq!(outcome_of(End::TimedOut), CommandOutcome::TimedOut);
        assert_eq!(outcome_of(End::Interrupted(2)), CommandOutcome::Interrupted);
    }

    #[test]
    fn a_command_runs_supervised_and_a_missing_one_does_not_start() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        let path = std::env::var_os("PATH");
        let enclosure = Enclosure::unsandboxed(dir.path());
        let run = |command: CommandLine, timeout: u64| {
            run_command(&Supervised {
                command: &command,
                workdir: dir.path(),
                path_var: path.as_deref(),
                env: &[("HARNESS_CHECK".into(), "unit".into())],
                stdin: "on stdin\n",
                timeout: Duration::from_secs(timeout),
                kill_grace: Duration::from_secs(1),
                log: &log,
                echo: false,
                enclosure: &enclosure,
            })
        };
        let ran = run(
            CommandLine::Shell("cat; echo \"$HARNESS_CHECK\"; exit 3".into()),
            30,
        );
        assert_eq!(ran.outcome, CommandOutcome::Failed);
        assert_eq!(ran.exit_code, Some(3));
        assert_eq!(ran.tail, "on stdin\nunit\n");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "on stdin\nunit\n");
        let ran = run(CommandLine::Argv(vec!["no-such-program-xyz".into()]), 30);
        assert_eq!(ran.outcome, CommandOutcome::NotStarted);
        assert!(ran.tail.contains("not found"), "{}", ran.tail);
        // A whole tree past its time: stopped, and nothing of it is left.
        let ran = run(
            CommandLine::Shell("sleep 60 & sleep 60; echo never".into()),
            1,
        );
        assert_eq!(ran.outcome, CommandOutcome::TimedOut);
        assert!(!ran.tail.contains("never"));
    }
}
