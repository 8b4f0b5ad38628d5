//! The mission layer: many features together — what is ready to run, the coordinator of
//! `./run.sh all` and the executors it hands features to, the status board and the report.

pub mod coordinator;
pub mod executor;
pub mod leftovers;
pub mod report;
pub mod schedule;
pub mod status;
