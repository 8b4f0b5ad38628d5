//! `executor:`: where `./run.sh all` runs each feature — here, or as Slurm jobs.

use serde::{Deserialize, Serialize};

/// `executor:`: where `./run.sh all` runs each feature (`--executor` overrides the kind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorConfig {
    /// `local` or `slurm`.
    #[serde(default)]
    pub kind: ExecutorKind,
    /// Arguments added to every `sbatch` (partition, time limit, account…).
    #[serde(default)]
    pub sbatch_args: Vec<String>,
    /// The longest wait, in seconds, between two looks at the jobs' states (the coordinator
    /// looks more often just after a change).
    #[serde(default = "default_poll_secs")]
    pub poll_secs: u64,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            kind: ExecutorKind::default(),
            sbatch_args: Vec::new(),
            poll_secs: default_poll_secs(),
        }
    }
}

fn default_poll_secs() -> u64 {
    30
}

/// The sbatch options the harness sets itself: a job is found again by its name, and its
/// output belongs under the feature's runs directory.
const SBATCH_OPTIONS_OF_THE_HARNESS: [&str; 9] = [
    "-J",
    "--job-name",
    "-o",
    "--output",
    "-e",
    "--error",
    "--parsable",
    "--wrap",
    "--chdir",
];

impl ExecutorConfig {
    pub(super) fn check(&self) -> Result<(), String> {
        if self.poll_secs == 0 {
            return Err("executor.poll_secs must be at least 1".into());
        }
        for arg in &self.sbatch_args {
            let option = arg.split('=').next().unwrap_or(arg);
            let short = |o: &str| o.len() == 2 && arg.starts_with(o);
            if SBATCH_OPTIONS_OF_THE_HARNESS
                .iter()
                .any(|o| *o == option || short(o))
            {
                return Err(format!(
                    "executor.sbatch_args holds {arg}, an option the harness sets itself (each feature's job is found by its name and writes under .harness/runs/<FEATURE>/jobs/): leave it out"
                ));
            }
        }
        Ok(())
    }
}

/// Where the features of `./run.sh all` run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// Processes on this machine, each feature its own `run.sh` (today's `--parallel N`).
    #[default]
    Local,
    /// One Slurm job per feature, submitted with `sbatch`.
    Slurm,
}

impl std::str::FromStr for ExecutorKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "local" => Ok(ExecutorKind::Local),
            "slurm" => Ok(ExecutorKind::Slurm),
            other => Err(format!("unknown executor {other:?}: use local or slurm")),
        }
    }
}
