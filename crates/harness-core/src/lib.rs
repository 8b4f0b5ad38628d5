//! harness-core: every rule of the harness lives here, one module per concept of DESIGN.md.
//! The binaries (`worker`, …) only parse arguments, call into this crate and map the result to an
//! exit code, so every decision can be unit-tested and shared between roles.
//!
//! The modules stand in layers, each importing only from those below it (checked by
//! `tests/layers.rs`): [`base`] ← [`spec`] ← [`state`] ← [`agent`] ← [`roles`] ← [`mission`].

pub mod agent;
pub mod base;
pub mod mission;
pub mod roles;
pub mod spec;
pub mod state;

pub use base::error::{InputError, LockHeld};
