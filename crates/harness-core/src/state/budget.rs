//! Budgets: per feature and per mission, at most so many tokens, dollars (where the cost is
//! known) and seconds of agent time. Checked before each invocation, and live during one (the
//! tokens the stream reports, the time): running out stops with exit 2, naming the budget.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::fs;
use crate::spec::config::Budgets;
use crate::spec::features::FeatureId;
use crate::spec::layout::StateDir;
use crate::state::run_state::{Attempt, RunState};

/// What has been spent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub tokens: u64,
    /// USD of the attempts whose cost is known.
    pub cost_usd: f64,
    /// Seconds of agent time.
    pub wall_secs: u64,
}

impl Spent {
    /// What `attempts` spent.
    pub fn of(attempts: &[Attempt]) -> Self {
        attempts
            .iter()
            .fold(Spent::default(), |spent, attempt| Spent {
                tokens: spent.tokens + attempt.tokens.unwrap_or(0),
                cost_usd: spent.cost_usd + attempt.cost_usd.unwrap_or(0.0),
                wall_secs: spent.wall_secs
                    + attempt
                        .ended_at
                        .map(|end| (end - attempt.started_at).num_seconds().max(0) as u64)
                        .unwrap_or(0),
            })
    }

    fn add(self, other: Spent) -> Spent {
        Spent {
            tokens: self.tokens + other.tokens,
            cost_usd: self.cost_usd + other.cost_usd,
            wall_secs: self.wall_secs + other.wall_secs,
        }
    }
}

/// What the whole mission spent: every feature's run state under `runs/`.
pub fn mission_spent(state: &StateDir) -> Spent {
    mission_spent_with(&mut SpentMemo::default(), state, None)
}

/// What each run state spent, by the file's identity as last read, for a worker that checks the
/// mission budget before every iteration: a run state whose inode, size and modification time are
/// unchanged is not parsed again (every write replaces the file, so its inode changes).
#[derive(Debug, Default)]
pub struct SpentMemo {
    files: HashMap<PathBuf, (FileKey, Spent)>,
}

/// What tells one version of a file from another without reading it.
type FileKey = (u64, u64, u64, i64, i64);

fn file_key(metadata: &std::fs::Metadata) -> FileKey {
    use std::os::unix::fs::MetadataExt;
    (
        metadata.dev(),
        metadata.ino(),
        metadata.size(),
        metadata.mtime(),
        metadata.mtime_nsec(),
    )
}

/// [`mission_spent`], parsing only the run states that changed since `memo` last read them, and
/// counting the run state at `own.0` as `own.1`: the caller's own, which it may hold ahead of
/// the disk (a worker loop writes an attempt's end together with the next attempt's start).
pub fn mission_spent_with(
    memo: &mut SpentMemo,
    state: &StateDir,
    own: Option<(&Path, Spent)>,
) -> Spent {
    let mut total = own.map(|(_, spent)| spent).unwrap_or_default();
    let Ok(entries) = fs::read_dir(&state.runs_dir()) else {
        return total;
    };
    let mut seen = HashMap::with_capacity(memo.files.len());
    for entry in entries {
        let Ok(feature) = FeatureId::parse(&entry.name.to_string_lossy()) else {
            continue;
        };
        let path = state.run_state(&feature);
        if own.is_some_and(|(own, _)| own == path) {
            continue;
        }
        let Ok(metadata) = fs::open(&path, fs::Mode::Read).and_then(|file| file.metadata()) else {
            continue;
        };
        let key = file_key(&metadata);
        let spent = match memo.files.remove(&path) {
            Some((known, spent)) if known == key => spent,
            _ => match RunState::load(&path, &feature) {
                Ok(Some(run)) => Spent::of(&run.attempts),
                _ => continue,
            },
        };
        total = total.add(spent);
        seen.insert(path, (key, spent));
    }
    memo.files = seen;
    total
}

/// A budget that ran out.
#[derive(Debug, Clone, PartialEq)]
pub struct Exceeded {
    /// `feature` or `mission`.
    pub scope: &'static str,
    /// `max_tokens`, `max_cost_usd` or `max_wall_secs`.
    pub limit: &'static str,
    /// The limit, in words.
    pub allowed: String,
    /// What was spent, in words.
    pub spent: String,
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} budget budgets.{}.{} ({}) is used up: {} spent",
            self.scope, self.scope, self.limit, self.allowed, self.spent
        )
    }
}

/// What the budgets leave for the next invocation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Remaining {
    /// Tokens it may use.
    pub tokens: Option<u64>,
    /// Time it may run.
    pub wall: Option<Duration>,
    /// USD it may spend (checked live when the agent reports its cost as it goes).
    pub cost_usd: Option<f64>,
}

/// Checks what was spent against the budgets: the first one used up, or what is left.
pub fn remaining(budgets: &Budgets, feature: Spent, mission: Spent) -> Result<Remaining, Exceeded> {
    let mut left = Remaining::default();
    for (scope, budget, spent) in [
        ("feature", &budgets.feature, feature),
        ("mission", &budgets.mission, mission),
    ] {
        let Some(budget) = budget else { continue };
        if let Some(max) = budget.max_tokens {
            if spent.tokens >= max {
                return Err(Exceeded {
                    scope,
                    limit: "max_tokens",
                    allowed: format!("{max} tokens"),
                    spent: format!("{} tokens", spent.tokens),
                });
            }
            left.tokens = Some(
                left.tokens
                    .map_or(max - spent.tokens, |t| t.min(max - spent.tokens)),
            );
        }
        if let Some(max) = budget.max_cost_usd {
            if spent.cost_usd >= max {
                return Err(Exceeded {
                    scope,
                    limit: "max_cost_usd",
                    allowed: format!("${max:.2}"),
                    spent: format!("${:.2}", spent.cost_usd),
                });
            }
            let cost = max - spent.cost_usd;
            left.cost_usd = Some(left.cost_usd.map_or(cost, |c| c.min(cost)));
        }
        if let Some(max) = budget.max_wall_secs {
            if spent.wall_secs >= max {
                return Err(Exceeded {
                    scope,
                    limit: "max_wall_secs",
                    allowed: format!("{max} s"),
                    spent: format!("{} s", spent.wall_secs),
                });
            }
            let wall = Duration::from_secs(max - spent.wall_secs);
            left.wall = Some(left.wall.map_or(wall, |w| w.min(wall)));
        }
    }
    Ok(left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::config::Budget;

    fn budgets(feature: Budget, mission: Budget) -> Budgets {
        Budgets {
            feature: Some(feature),
            mission: Some(mission),
        }
    }

    #[test]
    fn the_tightest_budget_is_what_is_left() {
        let b = budgets(
            Budget {
                max_tokens: Some(1000),
                max_wall_secs: Some(600),
                ..Budget::default()
            },
            Budget {
                max_tokens: Some(5000),
                max_wall_secs: Some(100),
                ..Budget::default()
            },
        );
        let feature = Spent {
            tokens: 400,
            cost_usd: 0.0,
            wall_secs: 10,
        };
        let mission = Spent {
            tokens: 4800,
            cost_usd: 0.0,
            wall_secs: 50,
        };
        let left = remaining(&b, feature, mission).unwrap();
        assert_eq!(left.tokens, Some(200));
        assert_eq!(left.wall, Some(Duration::from_secs(50)));
    }

    #[test]
    fn a_used_up_budget_is_named() {
        let b = Budgets {
            feature: None,
            mission: Some(Budget {
                max_cost_usd: Some(5.0),
                ..Budget::default()
            }),
        };
        let spent = Spent {
            tokens: 0,
            cost_usd: 5.5,
            wall_secs: 0,
        };
        let error = remaining(&b, Spent::default(), spent).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the mission budget budgets.mission.max_cost_usd ($5.00) is used up: $5.50 spent"
        );
    }
}
