//! The local executor: each feature's run is a child process of the coordinator on this machine
//! (what `./run.sh all --parallel N` always did). The children go when the coordinator is
//! interrupted: they get SIGTERM, stop their agents and leave their features resumable.

use std::collections::BTreeMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command};
use std::time::Duration;

use anyhow::Context;

use super::{Ended, Executor, FeatureCommand, Job};
use crate::base::exit_codes;
use crate::base::signals;
use crate::spec::features::FeatureId;

/// How often the children are looked at: an ended run is noticed within this (the coordinator
/// then starts the next feature).
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Child processes on this machine.
#[derive(Debug)]
pub struct Local {
    command: FeatureCommand,
    children: BTreeMap<u32, Child>,
}

impl Local {
    /// An executor that runs `command` for each feature.
    pub fn new(command: FeatureCommand) -> Self {
        Self {
            command,
            children: BTreeMap::new(),
        }
    }

    /// The ended ones of `jobs`, reaped.
    fn reap(&mut self, jobs: &[Job]) -> anyhow::Result<Vec<Ended>> {
        let mut ended = Vec::new();
        for job in jobs {
            let pid: u32 = job.id.parse().context("a local job's id is its pid")?;
            let Some(child) = self.children.get_mut(&pid) else {
                continue;
            };
            if let Some(status) = child
                .try_wait()
                .with_context(|| format!("cannot wait for the run of {}", job.feature))?
            {
                self.children.remove(&pid);
                let code = status.code();
                ended.push(Ended {
                    job: job.clone(),
                    how: match (code, status.signal()) {
                        (Some(code), _) => format!("exit {code}"),
                        (None, Some(signal)) => format!("killed by {}", signals::name(signal)),
                        (None, None) => "ended".to_string(),
                    },
                    stops_mission: code == Some(i32::from(exit_codes::INTERRUPTED)),
                });
            }
        }
        Ok(ended)
    }
}

impl Executor for Local {
    fn submit(&mut self, feature: &FeatureId) -> anyhow::Result<Job> {
        let argv = self.command.argv(feature);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        // SAFETY: the closure makes only async-signal-safe calls (sigprocmask).
        unsafe {
            command.pre_exec(|| {
                signals::reset_in_child();
                Ok(())
            });
        }
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {} for {feature}", argv[0]))?;
        let pid = child.id();
        self.children.insert(pid, child);
        Ok(Job {
            feature: feature.clone(),
            id: pid.to_string(),
        })
    }

    /// A local run lives and dies with its coordinator: there is nothing to re-attach to.
    fn find(&mut self) -> anyhow::Result<Vec<Job>> {
        Ok(Vec::new())
    }

    fn wait(&mut self, jobs: &[Job], interruptible: bool) -> anyhow::Result<Vec<Ended>> {
        loop {
            let ended = self.reap(jobs)?;
            if !ended.is_empty() || jobs.is_empty() {
                return Ok(ended);
            }
            if !interruptible {
                std::thread::sleep(LOOK_EVERY);
            } else if signals::sleep(LOOK_EVERY).is_some() {
                return Ok(Vec::new());
            }
        }
    }

    fn cancel(&mut self, job: &Job) -> anyhow::Result<()> {
        let pid: i32 = job.id.parse().context("a local job's id is its pid")?;
        if self.children.contains_key(&(pid as u32)) {
            // SAFETY: kill(2) on our own child, which has not been reaped (its pid is ours).
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        Ok(())
    }

    fn jobs_outlive_coordinator(&self) -> bool {
        false
    }

    fn describe(&self, job: &Job) -> String {
        format!("pid {}", job.id)
    }
}
