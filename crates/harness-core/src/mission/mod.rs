//! The mission layer: many features together — what is ready to run, the worktrees of parallel
//! features, the status board and the report.

pub mod report;
pub mod schedule;
pub mod status;
pub mod worktree;
