//! The mission layer: many features together — what is ready to run, the status board and the
//! report.

pub mod report;
pub mod schedule;
pub mod status;
