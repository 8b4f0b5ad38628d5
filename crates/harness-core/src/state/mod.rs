//! The state layer: the records the harness keeps on disk — a feature's run state, the usage of
//! each invocation, the notes, the memory log (raw.md), what the budgets have spent, and the
//! identity directory of an install.

pub mod budget;
pub mod identity;
pub mod memory;
pub mod notes;
pub mod run_state;
pub mod usage;
