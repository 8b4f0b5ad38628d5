//! Parallel features work in git worktrees: each in `.harness/worktrees/<FEATURE>` on branch
//! `harness/<FEATURE>`, made from the mission's HEAD, while sharing the one `.harness/` state. When a
//! feature is accepted its branch is merged back into the branch the mission started on — all of
//! it, or nothing: a conflict leaves the feature blocked and its branch kept. Where a feature
//! works is recorded in its run state ([`Worktree`]).

use std::path::Path;

use anyhow::Context;

use crate::base::fs;
use crate::base::git;
use crate::base::locks::Lock;
use crate::base::time::Timestamp;
use crate::spec::features::FeatureId;
use crate::spec::layout::StateDir;
use crate::state::run_state::{RunState, Status};

pub use crate::state::run_state::Worktree;

/// The branch of a feature's worktree.
pub fn branch_of(feature: &FeatureId) -> String {
    format!("harness/{feature}")
}

/// Creates the feature's worktree (or finds the one it already has), from the main working
/// directory's HEAD.
pub fn prepare(main: &Path, state: &StateDir, feature: &FeatureId) -> anyhow::Result<Worktree> {
    let path = state.worktrees_dir().join(feature.as_str());
    let branch = branch_of(feature);
    let base_branch = git::run(main, &["symbolic-ref", "--short", "HEAD"]).with_context(|| {
        format!(
            "{} is not on a branch: parallel features merge back into the branch the mission runs on",
            main.display()
        )
    })?;
    if !path.join(".git").exists() {
        // Worktrees are created one at a time: git's own bookkeeping is not safe to race.
        let _lock = Lock::acquire(&state.git_lock())?;
        fs::create_dir_all(&state.worktrees_dir())?;
        let path_text = path.to_string_lossy().into_owned();
        let branch_exists = git::run(
            main,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{branch}"),
            ],
        )
        .is_ok();
        if branch_exists {
            git::run(main, &["worktree", "add", &path_text, &branch])?;
        } else {
            git::run(
                main,
                &["worktree", "add", "-b", &branch, &path_text, "HEAD"],
            )?;
        }
    }
    Ok(Worktree {
        path,
        branch,
        main: main.to_path_buf(),
        base_branch,
    })
}

/// How merging a feature back went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// Merged; the worktree is removed.
    Merged,
    /// Not merged, the main tree untouched, the branch kept; why.
    Conflict(String),
}

/// Merges the feature's branch into the base branch in the main working tree. Work the agent
/// left uncommitted in the worktree is committed first: the validator accepted the tree as it is.
pub fn merge_back(
    worktree: &Worktree,
    state: &StateDir,
    feature: &FeatureId,
) -> anyhow::Result<MergeOutcome> {
    let dirty = !git::run(&worktree.path, &["status", "--porcelain"])?.is_empty();
    if dirty {
        git::run(&worktree.path, &["add", "-A"])?;
        git::run(
            &worktree.path,
            &[
                "-c",
                "user.name=harness",
                "-c",
                "user.email=harness@localhost",
                "commit",
                "-q",
                "-m",
                &format!("{feature}: work left uncommitted when it was accepted"),
            ],
        )?;
    }
    let _lock = Lock::acquire(&state.git_lock())?;
    let current =
        git::run(&worktree.main, &["symbolic-ref", "--short", "HEAD"]).unwrap_or_default();
    if current != worktree.base_branch {
        return Ok(MergeOutcome::Conflict(format!(
            "the main working tree is on {current:?}, not on {:?} where the mission started; branch {} is kept",
            worktree.base_branch, worktree.branch
        )));
    }
    let merge = git::run(
        &worktree.main,
        &[
            "-c",
            "user.name=harness",
            "-c",
            "user.email=harness@localhost",
            "merge",
            "--no-ff",
            "--no-edit",
            "-m",
            &format!("Merge {feature} ({})", worktree.branch),
            &worktree.branch,
        ],
    );
    if let Err(error) = merge {
        let conflicted = git::run(&worktree.main, &["diff", "--name-only", "--diff-filter=U"])
            .unwrap_or_default();
        // Never leave a half-merged tree: back to exactly what it was.
        let _ = git::run(&worktree.main, &["merge", "--abort"]);
        let files = conflicted.lines().collect::<Vec<_>>().join(", ");
        let why = if files.is_empty() {
            format!("{error:#}")
        } else {
            format!("conflicts in {files}")
        };
        return Ok(MergeOutcome::Conflict(format!(
            "merging {} into {} failed: {why}; the branch is kept",
            worktree.branch, worktree.base_branch
        )));
    }
    let path_text = worktree.path.to_string_lossy().into_owned();
    git::run(
        &worktree.main,
        &["worktree", "remove", "--force", &path_text],
    )?;
    git::run(&worktree.main, &["branch", "-d", &worktree.branch])?;
    Ok(MergeOutcome::Merged)
}

/// Lands an accepted feature: merges its worktree back when it has one. On a conflict the
/// feature is blocked with the reason (and `false` is returned); otherwise it is done.
pub fn land(run_state: &mut RunState, state: &StateDir, now: Timestamp) -> anyhow::Result<bool> {
    if let Some(worktree) = run_state.worktree.clone() {
        match merge_back(&worktree, state, &run_state.feature_id)? {
            MergeOutcome::Merged => run_state.worktree = None,
            MergeOutcome::Conflict(reason) => {
                run_state.status = Status::Blocked;
                run_state.reason = Some(reason);
                run_state.finished_at = Some(now);
                run_state.updated_at = now;
                return Ok(false);
            }
        }
    }
    run_state.status = Status::Done;
    run_state.finished_at = Some(now);
    run_state.reason = None;
    run_state.updated_at = now;
    Ok(true)
}
