//! harness-core: every rule of the harness lives here, one module per concept of DESIGN.md.
//! The binaries (`worker`, …) only parse arguments, call into this crate and map the result to an
//! exit code, so every decision can be unit-tested and shared between roles.

pub mod agent;
pub mod base;
pub mod mission;
pub mod roles;
pub mod spec;
pub mod state;

pub use base::error::{InputError, LockHeld};
