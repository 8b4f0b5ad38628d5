//! The state layer: the records the harness keeps on disk — a feature's run state (and the git
//! worktree it works in), the usage of each invocation, the notes, the memory log (raw.md), the
//! feature's phase and its gates, the agent runs on the whole mission, what the budgets have
//! spent, and the identity directory of an install. A record depends on the spec and the base
//! only, never on what runs agents or orchestrates roles.

pub mod budget;
pub mod identity;
pub mod lifecycle;
pub mod memory;
pub mod mission_runs;
pub mod notes;
pub mod run_state;
pub mod usage;
pub mod worktree;
