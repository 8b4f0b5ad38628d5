//! `budgets:` in config.yaml: what one feature, and the whole mission, may spend in tokens,
//! dollars and seconds of agent time. What was spent, and what is left, is the run states'
//! business (`state::budget`).

use serde::{Deserialize, Serialize};

/// `budgets:` in config.yaml.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// What one feature may spend, over all its attempts.
    #[serde(default)]
    pub feature: Option<Budget>,
    /// What the whole mission may spend, over every feature.
    #[serde(default)]
    pub mission: Option<Budget>,
}

/// One budget; at least one limit must be given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Tokens of every kind, as the agents report them.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// USD, reported or estimated (attempts of unknown cost do not count).
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// Seconds the agents ran.
    #[serde(default)]
    pub max_wall_secs: Option<u64>,
}

impl Budgets {
    /// Checks the settings: each budget given has a limit, every limit is positive.
    pub fn check(&self) -> Result<(), String> {
        for (scope, budget) in [("feature", &self.feature), ("mission", &self.mission)] {
            let Some(budget) = budget else { continue };
            if budget.max_tokens.is_none()
                && budget.max_cost_usd.is_none()
                && budget.max_wall_secs.is_none()
            {
                return Err(format!(
                    "budgets.{scope} sets no limit: give max_tokens, max_cost_usd or max_wall_secs"
                ));
            }
            if budget.max_tokens == Some(0) || budget.max_wall_secs == Some(0) {
                return Err(format!("budgets.{scope}: a limit must be more than 0"));
            }
            if let Some(cost) = budget.max_cost_usd {
                if !(cost > 0.0 && cost.is_finite()) {
                    return Err(format!(
                        "budgets.{scope}.max_cost_usd must be a positive number of USD"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_or_silly_settings_are_refused() {
        assert!(Budgets {
            feature: Some(Budget::default()),
            mission: None
        }
        .check()
        .is_err());
        let zero = Budget {
            max_tokens: Some(0),
            ..Budget::default()
        };
        assert!(Budgets {
            feature: Some(zero),
            mission: None
        }
        .check()
        .is_err());
        let negative = Budget {
            max_cost_usd: Some(-1.0),
            ..Budget::default()
        };
        assert!(Budgets {
            feature: None,
            mission: Some(negative)
        }
        .check()
        .is_err());
        assert!(Budgets::default().check().is_ok());
    }
}
