//! The roles of the harness. Each has a prompt in `roles/<role>.md` and an identity file.

use std::fmt;

/// A role: who is speaking in raw.md, whose prompt and identity are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Does the work on one feature.
    Worker,
    /// Verifies a feature the worker says is done.
    Validator,
    /// Breaks a mission into features.
    Planner,
    /// Curates memory between layers.
    Curator,
}

impl Role {
    /// Every role, in the order they act.
    pub const ALL: [Role; 4] = [Role::Worker, Role::Validator, Role::Planner, Role::Curator];

    /// The lowercase name used in file names, raw.md lines and run ids.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Validator => "validator",
            Role::Planner => "planner",
            Role::Curator => "curator",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
