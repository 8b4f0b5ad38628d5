//! The base layer: small helpers that know nothing of features, roles or agents — file access
//! that never follows a link under `.harness/`, atomic writes, locks, time, signals, git
//! plumbing, text cutting, stable hashes and ids, cancellation, the error types and the exit
//! codes. Every other layer may use them; they use none.

pub mod append;
pub mod atomic;
pub mod cancel;
pub mod console;
pub mod error;
pub mod exit_codes;
pub mod fs;
pub mod git;
pub mod glob;
pub mod hash;
#[cfg(target_os = "linux")]
pub mod inotify;
pub mod locks;
pub mod process;
pub mod signals;
#[cfg(test)]
pub(crate) mod testing;
pub mod text;
pub mod threads;
pub mod time;
