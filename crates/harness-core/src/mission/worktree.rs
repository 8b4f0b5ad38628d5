//! `./run.sh all --parallel N`: each feature that runs in parallel with others is given its own
//! git worktree (see `state::worktree`), recorded in its run state before its first iteration.

use std::path::PathBuf;

use crate::base::git;
use crate::roles::attempt::{FeatureRequest, Session};
use crate::roles::inputs::InputMemo;
use crate::spec::role::Role;
use crate::state::worktree;

/// Gives the requested feature its worktree (`request.place.workdir` is the main working directory)
/// and records it in the feature's run state; returns the worktree's path.
pub fn assign(request: &FeatureRequest) -> anyhow::Result<PathBuf> {
    if !git::is_repo(&request.place.workdir) {
        return Err(crate::InputError::in_file(
            &request.place.workdir,
            "not a git repository: features can only run in parallel in git worktrees",
        )
        .with_hint("run one feature at a time (no --parallel), or `git init` the project")
        .into());
    }
    let mut session = Session::open(&mut InputMemo::default(), request, Role::Worker)?;
    if let Some(existing) = &session.state.worktree {
        if existing.path.join(".git").exists() {
            return Ok(existing.path.clone());
        }
    }
    let worktree = worktree::prepare(
        &request.place.workdir,
        &request.place.state,
        &session.inputs.feature.id,
    )?;
    let path = worktree.path.clone();
    session.state.worktree = Some(worktree);
    session.save()?;
    Ok(path)
}
