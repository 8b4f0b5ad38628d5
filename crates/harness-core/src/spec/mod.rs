//! The spec layer: what the user wrote and where it lives — config.yaml, the presets, features.yaml,
//! the `.harness/` layout, the roles, and `init`'s templates.

pub mod config;
pub mod features;
pub mod init;
pub mod layout;
pub mod presets;
pub mod role;
