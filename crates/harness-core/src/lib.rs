//! harness-core: every rule of the harness lives here, one module per concept of DESIGN.md.
//! The binaries (`worker`, …) only parse arguments, call into this crate and map the result to an
//! exit code, so every decision can be unit-tested and shared between roles.

pub mod agent;
pub mod atomic;
pub mod budget;
pub mod config;
pub mod curation;
pub mod error;
pub mod exit_codes;
pub mod explain;
pub mod features;
pub mod git;
pub mod init;
pub mod invoke;
pub mod layout;
pub mod locks;
pub mod memory;
pub mod notes;
pub mod plan;
pub mod presets;
pub mod progress;
pub mod prompt;
pub mod ralph;
pub mod report;
pub mod role;
pub mod run_state;
pub mod schedule;
pub mod session;
pub mod signals;
pub mod status;
#[cfg(test)]
mod testing;
pub mod time;
pub mod usage;
pub mod validator;
pub mod worktree;

pub use error::{InputError, LockHeld};
