//! The agent runs on the whole mission rather than on one feature — the planner's `plan` and the
//! curator's agent (`curate --agent`) — as the `result.json` each leaves under `plans/<RUN_ID>/`
//! and `curations/<RUN_ID>/` records them. What they spent counts in the mission's totals and
//! against its budget as a feature's attempts do (a `replan` is an attempt of the feature it
//! re-breaks, in that feature's run state). A run killed before it wrote its result.json is not
//! known.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::base::fs;
use crate::base::time::Timestamp;
use crate::spec::layout::StateDir;
use crate::spec::role::Role;
use crate::state::run_state::{Outcome, Spent};
use crate::state::usage::UsageRecord;

/// One run, as its result.json says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MissionRun {
    /// The run id (its directory's name).
    pub run_id: String,
    pub role: Role,
    pub started_at: Timestamp,
    pub ended_at: Timestamp,
    /// How it ended, for the roles that record it (the planner).
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// Its usage record (result.json holds one since every role writes it).
    #[serde(default)]
    pub usage: Option<UsageRecord>,
    /// The tokens a planner's result.json said before it held a usage record.
    #[serde(default)]
    tokens: Option<u64>,
    /// The cost it said then.
    #[serde(default)]
    cost_usd: Option<f64>,
}

impl MissionRun {
    /// Tokens it used, when known.
    pub fn tokens(&self) -> Option<u64> {
        match &self.usage {
            Some(usage) => usage.tokens_spent(),
            None => self.tokens,
        }
    }

    /// What it cost in USD (reported or estimated), when known.
    pub fn cost_usd(&self) -> Option<f64> {
        match &self.usage {
            Some(usage) => usage.usage.cost_usd,
            None => self.cost_usd,
        }
    }

    /// Seconds it ran.
    pub fn seconds(&self) -> u64 {
        u64::try_from((self.ended_at - self.started_at).num_seconds()).unwrap_or(0)
    }

    /// What it spent.
    pub fn spent(&self) -> Spent {
        Spent {
            tokens: self.tokens(),
            cost_usd: self.cost_usd(),
            wall_secs: self.seconds(),
        }
    }
}

/// The result.json of every run on the whole mission that left a run directory.
pub fn result_files(state: &StateDir) -> Vec<PathBuf> {
    [state.plans_dir(), state.curations_dir()]
        .iter()
        .flat_map(|dir| {
            fs::read_dir(dir)
                .into_iter()
                .flatten()
                .filter(|entry| entry.kind == fs::Kind::Dir)
                .map(move |entry| dir.join(entry.name).join("result.json"))
        })
        .collect()
}

/// The run `path` (a result.json) records; `None` when there is none or it does not read (a run
/// still going, or killed), which leaves it out rather than failing a status or a budget.
pub fn read(path: &Path) -> Option<MissionRun> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Every run on the whole mission that left a readable result.json, oldest first.
pub fn load(state: &StateDir) -> Vec<MissionRun> {
    let mut runs: Vec<MissionRun> = result_files(state).iter().filter_map(|p| read(p)).collect();
    runs.sort_by(|a, b| (a.started_at, &a.run_id).cmp(&(b.started_at, &b.run_id)));
    runs
}
