//! The state layer: the records the harness keeps on disk — a feature's run state, the usage of
//! each invocation, the notes, the memory log (raw.md) and what the budgets have spent.

pub mod budget;
pub mod memory;
pub mod notes;
pub mod run_state;
pub mod usage;
