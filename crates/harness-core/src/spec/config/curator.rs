//! `curator:` in config.yaml: the thresholds and bounds of the curator's pass (how alike two
//! entries must be to say the same thing, when an item is promoted or graduates, the layers'
//! bounds). The pass itself is `roles::curator`.

use serde::{Deserialize, Serialize};

/// The curator's parameters. Every field has a default; `curator:` in config.yaml may set them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CuratorParams {
    /// Two entries say the same thing when the similarity of their words (Dice coefficient of
    /// normalised content words, each weighing by its rarity, 0 to 1) reaches this; also the
    /// similarity at which an item of this mission is one of another in the ledger.
    pub similarity: f64,
    /// A newer decision supersedes an older one when their similarity reaches this.
    pub supersede_similarity: f64,
    /// Times seen (distinct invocations) before a lesson or a thing to avoid goes to summary.md;
    /// a current decision goes there at once.
    pub promote_min_seen: usize,
    /// The entries raw.md keeps; older ones go to archive/.
    pub keep_raw: usize,
    /// summary.md's bound in lines.
    pub summary_max_lines: usize,
    /// summary.md's bound in estimated tokens (see `roles::curator::document::size`).
    pub summary_max_tokens: usize,
    /// MEMORY.md's bound in lines.
    pub memory_max_lines: usize,
    /// Distinct features on which knowledge with a TRICK among its entries must be reported to
    /// graduate.
    pub graduate_trick_workers: usize,
    /// Missions in which knowledge (a lesson or a failure mode) must be seen to graduate.
    pub graduate_failure_missions: usize,
    /// Distinct features on which a convention must be recorded (forgotten, relearnt) for it to
    /// graduate.
    pub graduate_convention_times: usize,
}

impl Default for CuratorParams {
    fn default() -> Self {
        Self {
            similarity: 0.3,
            supersede_similarity: 0.4,
            promote_min_seen: 2,
            keep_raw: 10,
            summary_max_lines: 40,
            summary_max_tokens: 800,
            memory_max_lines: 200,
            graduate_trick_workers: 2,
            graduate_failure_missions: 2,
            graduate_convention_times: 3,
        }
    }
}

impl CuratorParams {
    /// Checks the values; the message names the parameter.
    pub fn check(&self) -> Result<(), String> {
        for (name, value) in [
            ("similarity", self.similarity),
            ("supersede_similarity", self.supersede_similarity),
        ] {
            if !(value > 0.0 && value <= 1.0) {
                return Err(format!("{name} must be above 0 and at most 1, not {value}"));
            }
        }
        for (name, value) in [
            ("summary_max_lines", self.summary_max_lines),
            ("summary_max_tokens", self.summary_max_tokens),
            ("memory_max_lines", self.memory_max_lines),
            ("promote_min_seen", self.promote_min_seen),
            ("graduate_trick_workers", self.graduate_trick_workers),
            ("graduate_failure_missions", self.graduate_failure_missions),
            ("graduate_convention_times", self.graduate_convention_times),
        ] {
            if value == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        Ok(())
    }
}
