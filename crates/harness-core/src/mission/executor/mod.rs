//! Where `./run.sh all` runs each feature. An executor starts one feature's run — `run.sh
//! <FEATURE>`, exactly what a single feature is — somewhere, finds the runs it started, waits for
//! them and cancels them; the coordinator ([`crate::mission::coordinator`]) decides what runs
//! when, the same way for every executor. [`local`]: child processes on this machine;
//! [`slurm`]: one Slurm job per feature on a cluster whose shared filesystem holds the project.
//! A Kubernetes executor (a Job per feature on a ReadWriteMany volume, found by its labels) fits
//! the same four calls.

pub mod local;
pub mod slurm;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::atomic::write_json;
use crate::base::error::InputError;
use crate::base::time::Timestamp;
use crate::spec::config::ExecutorKind;
use crate::spec::features::{FeatureId, FeatureList};
use crate::spec::layout::StateDir;

/// The command that runs one feature: `run.sh -C <workdir> [--quiet] [--worktree]
/// [--max-iterations N] -- <FEATURE>`, with its own feature lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureCommand {
    /// run.sh, by an absolute path (on a cluster: the same on every node).
    pub run_sh: PathBuf,
    /// The project, by an absolute path.
    pub workdir: PathBuf,
    /// Keep the agent's output off the run's stdout (it is in output.log anyway).
    pub quiet: bool,
    /// Work in the feature's own git worktree, merged back when accepted.
    pub worktree: bool,
    /// The feature's iteration guardrail, when given on the command line.
    pub max_iterations: Option<u32>,
}

impl FeatureCommand {
    /// The argv that runs `feature`.
    pub fn argv(&self, feature: &FeatureId) -> Vec<String> {
        let mut argv = vec![
            self.run_sh.display().to_string(),
            "-C".to_string(),
            self.workdir.display().to_string(),
        ];
        if self.quiet {
            argv.push("--quiet".into());
        }
        if self.worktree {
            argv.push("--worktree".into());
        }
        if let Some(n) = self.max_iterations {
            argv.extend(["--max-iterations".to_string(), n.to_string()]);
        }
        argv.extend(["--".to_string(), feature.to_string()]);
        argv
    }
}

/// A feature's run, started by an executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The feature it runs.
    pub feature: FeatureId,
    /// The executor's own id for it: a process id, a Slurm job id.
    pub id: String,
}

/// A job that ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// The job.
    pub job: Job,
    /// How, in a few words: `exit 0`, `job 42 TIMEOUT`.
    pub how: String,
    /// Whether the mission stops with it: a local run that was interrupted, as Ctrl-C does.
    pub stops_mission: bool,
}

/// Starts, finds, waits for and cancels the runs of a mission's features.
pub trait Executor {
    /// Starts the run of `feature`.
    fn submit(&mut self, feature: &FeatureId) -> anyhow::Result<Job>;

    /// The mission's jobs that are queued or running, as the executor knows them (not as this
    /// process remembers them): a coordinator started again re-attaches to them.
    fn find(&mut self) -> anyhow::Result<Vec<Job>>;

    /// Waits until at least one of `jobs` ended and returns those that did; returns nothing
    /// when an interrupt came first and `interruptible` is set.
    fn wait(&mut self, jobs: &[Job], interruptible: bool) -> anyhow::Result<Vec<Ended>>;

    /// Stops `job`; its feature is left interrupted and resumable.
    fn cancel(&mut self, job: &Job) -> anyhow::Result<()>;

    /// Whether the jobs go on when the coordinator stops (a cluster's do; local children are
    /// stopped with it).
    fn jobs_outlive_coordinator(&self) -> bool;

    /// The job as a user finds it: `pid 123`, `Slurm job 42`.
    fn describe(&self, job: &Job) -> String;
}

/// `runs/<FEATURE>/job.json`: the cluster job last submitted for a feature, as the coordinator
/// last saw it. For `status` and the report; the coordinator itself finds its jobs in the
/// cluster, never here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Which executor runs it.
    pub executor: ExecutorKind,
    /// The executor's id (a Slurm job id).
    pub id: String,
    /// The job's name (`harness-<FEATURE>-<mission>`).
    pub name: String,
    /// Its state in the executor's words (`PENDING`, `RUNNING`, `COMPLETED`, `TIMEOUT`…).
    pub state: String,
    /// When that state was seen.
    pub seen_at: Timestamp,
    /// Where the job's own stdout and stderr go.
    pub output: PathBuf,
}

impl JobRecord {
    /// Reads the record at `path`, if there is one.
    pub fn load(path: &Path) -> Result<Option<Self>, InputError> {
        crate::spec::config::read_json(
            path,
            "job record",
            "delete it: the coordinator finds its jobs in the cluster, not here",
        )
    }

    /// Writes the record atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        write_json(path, self)
    }
}

/// The job record of every feature that has one, as the coordinator last saw it.
pub fn recorded_jobs(
    state_dir: &StateDir,
    features: &FeatureList,
) -> Result<BTreeMap<FeatureId, JobRecord>, InputError> {
    let mut jobs = BTreeMap::new();
    for feature in &features.features {
        if let Some(record) = JobRecord::load(&state_dir.job_record(&feature.id))? {
            jobs.insert(feature.id.clone(), record);
        }
    }
    Ok(jobs)
}

/// [`recorded_jobs`], with the state of those still queued or running brought up to date from
/// the cluster (for `status`; nothing is written). When the cluster cannot be asked, the states
/// are the ones last seen.
pub fn current_jobs(
    state_dir: &StateDir,
    features: &FeatureList,
) -> Result<BTreeMap<FeatureId, JobRecord>, InputError> {
    let mut jobs = recorded_jobs(state_dir, features)?;
    slurm::refresh(&mut jobs);
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::id;

    #[test]
    fn a_feature_command_is_run_sh_on_that_feature_with_its_flags() {
        let mut command = FeatureCommand {
            run_sh: PathBuf::from("/opt/harness/run.sh"),
            workdir: PathBuf::from("/shared/app"),
            quiet: false,
            worktree: false,
            max_iterations: None,
        };
        assert_eq!(
            command.argv(&id("F-001")),
            ["/opt/harness/run.sh", "-C", "/shared/app", "--", "F-001"]
        );
        command.quiet = true;
        command.worktree = true;
        command.max_iterations = Some(15);
        assert_eq!(
            command.argv(&id("F-001")).join(" "),
            "/opt/harness/run.sh -C /shared/app --quiet --worktree --max-iterations 15 -- F-001"
        );
    }
}
