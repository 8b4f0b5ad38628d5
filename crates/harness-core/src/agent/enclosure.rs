//! The one way the harness starts an agent's processes, and anything else that must be held as an
//! agent is (a check command): in a process group of its own, dying with the harness, tagged and
//! in a cgroup of its own ([`contain`]), inside the role's sandbox ([`sandbox`]).
//!
//! ```ignore
//! let enclosure = Enclosure::new(config.sandbox_for(role), agent.preset, places)?; // once a role
//! let (mut command, containment) = enclosure.command(&argv, workdir, &env);
//! command.output(…);                       // stdin/stdout/stderr are the caller's to set
//! let status = command.spawn()?.wait()?;
//! drop(containment);                       // ends whatever it left running
//! ```
//! [`super::run`] does this for an agent, with its supervisor.

use std::path::{Path, PathBuf};

use super::contain::{cgroup, Containment};
use super::sandbox::{Places, Sandbox};
use super::spawn::Command;
use crate::base::error::InputError;
use crate::spec::config::SandboxConfig;
use crate::spec::presets::Preset;

/// How a role's processes are started and held: its sandbox, if any, and the state directory
/// their tag names.
#[derive(Debug, Clone)]
pub struct Enclosure {
    sandbox: Option<Sandbox>,
    state_dir: PathBuf,
}

impl Enclosure {
    /// The enclosure `config` asks for around an agent of `preset` working in `places`; an input
    /// error when its sandbox cannot be made here.
    pub fn new(
        config: &SandboxConfig,
        preset: Option<Preset>,
        places: Places,
    ) -> Result<Self, InputError> {
        Ok(Self {
            sandbox: Sandbox::new(config, preset, places)?,
            state_dir: places.state_dir.to_path_buf(),
        })
    }

    /// No sandbox, only containment: for the harness's own commands (hooks), which are the
    /// user's and not the agent's to confine.
    pub fn unsandboxed(state_dir: &Path) -> Self {
        Self {
            sandbox: None,
            state_dir: state_dir.to_path_buf(),
        }
    }

    /// Whether there is a sandbox.
    pub fn is_sandboxed(&self) -> bool {
        self.sandbox.is_some()
    }

    /// The sandbox's command line around `argv` run in `workdir` (for `explain`); `None` without
    /// a sandbox.
    pub fn command_line(&self, argv: &[String], workdir: &Path) -> Option<Vec<String>> {
        let tag = "<HARNESS_OWNER>";
        self.sandbox
            .as_ref()
            .map(|sandbox| sandbox.wrap(argv, workdir, &[(super::contain::OWNER_VARIABLE, tag)]))
    }

    /// A command that runs `argv` in `workdir` with `env` added, enclosed; and the containment
    /// of what it will start, which ends all of it when dropped (or at [`Containment::end`]).
    pub fn command(
        &self,
        argv: &[String],
        workdir: &Path,
        env: &[(String, String)],
    ) -> (Command, Containment) {
        let containment = Containment::new(&self.state_dir);
        let (name, tag) = containment.variable();
        let argv = match &self.sandbox {
            // Inside only: the sandbox's own processes stay untagged, so a SIGTERM to the tagged
            // reaches the agent and not bwrap (whose death would be a SIGKILL to all inside).
            Some(sandbox) => sandbox.wrap(argv, workdir, &[(name, tag)]),
            None => argv.to_vec(),
        };
        // Its own process group, SIGKILL when the harness dies, signals reset, the cgroup
        // joined: all done by the spawner in the child (see `super::spawn`).
        let mut command = Command::new(&argv, workdir);
        for (key, value) in env {
            command.env(key, value);
        }
        if self.sandbox.is_none() {
            command.env(name, tag);
        }
        if let Some(cgroup) = containment.cgroup() {
            command.cgroup(cgroup::Cgroup::procs_fd(cgroup));
        }
        (command, containment)
    }

    /// Ends what agents of harness processes that were killed left running for this state
    /// directory (see [`super::contain::sweep_stale`]); how many processes.
    pub fn sweep_stale(&self) -> usize {
        super::contain::sweep_stale(&self.state_dir)
    }

    /// The signal a program exit `code` stands for, when the sandbox turns a death by a signal
    /// into an exit code.
    pub fn signal_of_exit(&self, code: i32) -> Option<i32> {
        self.sandbox.as_ref()?.signal_of_exit(code)
    }
}
