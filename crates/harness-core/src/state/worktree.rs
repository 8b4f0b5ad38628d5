//! Parallel features work in git worktrees: each in `.harness/worktrees/<FEATURE>` on branch
//! `harness/<FEATURE>`, made from the mission's HEAD, while sharing the one `.harness/` state. When a
//! feature is accepted its branch is merged back into the branch the mission started on — all of
//! it, or nothing: a merge git refuses leaves the feature `unmerged`, its branch kept, and the
//! next run tries again. Every step survives a kill: making a worktree repairs what a kill left
//! (`base::git::worktrees`), and landing is recorded before it starts, so that a killed landing
//! is finished by the next run without an agent running again.

use std::path::{Path, PathBuf};

use crate::base::fs;
use crate::base::git::{self, merge::Merge, worktrees};
use crate::base::locks::Lock;
use crate::base::time::Timestamp;
use crate::spec::features::FeatureId;
use crate::spec::layout::StateDir;
use crate::state::run_state::{RunState, Status};
use anyhow::Context;

pub use crate::state::run_state::Worktree;

/// The branch of a feature's worktree.
pub fn branch_of(feature: &FeatureId) -> String {
    format!("harness/{feature}")
}

/// The message of the merge that lands `feature`'s branch `branch`.
fn landing_message(feature: &FeatureId, branch: &str) -> String {
    format!("Merge {feature} ({branch})")
}

/// Whether `message` is the [`landing_message`] of some feature: a landing merge a kill left
/// half-way is the harness's, whichever feature's it is.
fn is_landing_message(message: &str) -> bool {
    let parts = message
        .strip_prefix("Merge ")
        .and_then(|rest| rest.split_once(" ("));
    parts.is_some_and(|(id, branch)| {
        FeatureId::parse(id).is_ok_and(|id| branch.strip_suffix(')') == Some(&branch_of(&id)))
    })
}

/// The worktree recorded in `id`'s run state and still on disk: where its work is, so a feature
/// begun under `all --parallel` goes on there however it is resumed (`./run.sh F-001`, `all`).
pub fn recorded(state: &StateDir, id: &FeatureId) -> anyhow::Result<Option<Worktree>> {
    let run_state = RunState::load(&state.run_state(id), id)?;
    Ok(run_state
        .and_then(|run_state| run_state.worktree)
        .filter(|worktree| fs::is_dir(&worktree.path)))
}

/// Where `id` works: its [`recorded`] worktree, else `main` (the project).
pub fn workdir_of(state: &StateDir, id: &FeatureId, main: &Path) -> anyhow::Result<PathBuf> {
    Ok(recorded(state, id)?.map_or_else(|| main.to_path_buf(), |worktree| worktree.path))
}

/// Makes the feature's worktree sound — creating it from `start` (its branch too, if it has none
/// yet), or repairing what a kill left of it — and says where it is. The branch the mission runs
/// on is `base_branch` if given (a worktree made before), else the main working tree's.
pub fn prepare(
    main: &Path,
    state: &StateDir,
    feature: &FeatureId,
    start: &str,
    base_branch: Option<String>,
) -> anyhow::Result<Worktree> {
    let path = state.worktrees_dir().join(feature.as_str());
    let branch = branch_of(feature);
    let base_branch = match base_branch {
        Some(base) => base,
        None => git::run(main, &["symbolic-ref", "--short", "HEAD"]).with_context(|| {
            format!(
                "{} is not on a branch: parallel features merge back into the branch the mission runs on",
                main.display()
            )
        })?,
    };
    // One process at a time changes git's bookkeeping of worktrees: it is not safe to race.
    let _lock = Lock::acquire(&state.git_lock())?;
    fs::create_dir_all(&state.worktrees_dir())?;
    let found = worktrees::ensure(main, &path, &branch, start)?;
    if found == worktrees::Found::Repaired {
        eprintln!(
            "worker: {feature}: repaired its worktree {} (left broken by a kill); its work is kept",
            path.display()
        );
    }
    Ok(Worktree {
        path,
        branch,
        main: main.to_path_buf(),
        base_branch,
        tip: None,
    })
}

/// Lands an accepted feature: merges its worktree's branch back when it has one (then the
/// worktree and the branch go), and marks it done. Before anything is done to git the feature is
/// recorded `unmerged` (so a kill from then on leaves it for the next run to merge, with its
/// attempts as they ended), and the commit holding its work is recorded before the merge; when
/// git refuses the merge the feature stays unmerged, with the reason and what to do, and `false`
/// is returned.
pub fn land(run_state: &mut RunState, state: &StateDir, now: Timestamp) -> anyhow::Result<bool> {
    let Some(mut worktree) = run_state.worktree.clone() else {
        mark_done(run_state, now);
        return Ok(true);
    };
    let id = run_state.feature_id.clone();
    let path = state.run_state(&id);
    let interrupted = format!(
        "accepted; its merge into {} was interrupted: the next run finishes it",
        worktree.base_branch
    );
    mark_unmerged(run_state, interrupted, now);
    run_state
        .save(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // Once the recorded work is in the base branch (merged, by hand or by a run killed after its
    // merge), the worktree is only left to remove: whatever a kill left of it is not work.
    let merged = worktree
        .tip
        .as_deref()
        .is_some_and(|tip| git::is_ancestor(&worktree.main, tip, &worktree.base_branch));
    let outcome = if merged {
        Merge::Merged
    } else {
        match gather_work(&mut worktree, state, &id)? {
            Err(why) => Merge::Refused(why),
            Ok(tip) => {
                run_state.worktree = Some(worktree.clone());
                run_state
                    .save(&path)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                merge(&worktree, state, &id, &tip)?
            }
        }
    };
    match outcome {
        Merge::Merged => {
            remove(&worktree, state)?;
            run_state.worktree = None;
            mark_done(run_state, now);
            Ok(true)
        }
        Merge::Refused(why) => {
            let reason = format!(
                "{why}; branch {branch} is kept: fix that (or merge {branch} into {base} yourself), then `./run.sh {id}` or `./run.sh all` merges it",
                branch = worktree.branch,
                base = worktree.base_branch
            );
            run_state.worktree = Some(worktree);
            mark_unmerged(run_state, reason, now);
            Ok(false)
        }
    }
}

/// A run of a feature that is `unmerged`: tries the merge again (nothing else runs). Returns the
/// exit code (done, or failed with the reason) and the message.
pub fn land_again(
    run_state: &mut RunState,
    state: &StateDir,
    now: Timestamp,
) -> anyhow::Result<(u8, String)> {
    use crate::base::exit_codes;
    let id = run_state.feature_id.clone();
    if land(run_state, state, now)? {
        return Ok((exit_codes::DONE, format!("{id} is merged: done")));
    }
    let reason = run_state.reason.clone().unwrap_or_default();
    Ok((
        exit_codes::FAILED,
        format!("{id} is accepted but not merged: {reason}"),
    ))
}

fn mark_done(run_state: &mut RunState, now: Timestamp) {
    run_state.status = Status::Done;
    run_state.finished_at = Some(now);
    run_state.reason = None;
    run_state.updated_at = now;
}

fn mark_unmerged(run_state: &mut RunState, reason: String, now: Timestamp) {
    run_state.status = Status::Unmerged;
    run_state.reason = Some(reason);
    run_state.finished_at = Some(now);
    run_state.updated_at = now;
}

/// Puts all of the feature's work on its branch — the worktree repaired if a kill broke it, and
/// what the agent left uncommitted committed (the validator accepted the tree as it is) — and
/// records the commit holding it in `worktree.tip`, which it returns; `Err` says why not.
fn gather_work(
    worktree: &mut Worktree,
    state: &StateDir,
    feature: &FeatureId,
) -> anyhow::Result<Result<String, String>> {
    let main = worktree.main.clone();
    let branch_ref = format!("refs/heads/{}", worktree.branch);
    if git::commit_of(&main, &branch_ref).is_some() {
        {
            let _lock = Lock::acquire(&state.git_lock())?;
            worktrees::ensure(&main, &worktree.path, &worktree.branch, "HEAD")?;
        }
        if let Err(why) = commit_leftovers(&worktree.path, feature, "accepted") {
            return Ok(Err(why));
        }
        worktree.tip = git::commit_of(&main, &branch_ref);
    }
    Ok(match &worktree.tip {
        Some(tip) => Ok(tip.clone()),
        None => Err(format!(
            "branch {} is gone and no commit of its work is recorded",
            worktree.branch
        )),
    })
}

/// Merges the feature's work (commit `tip`, on its branch) into the base branch in the main
/// working tree.
fn merge(
    worktree: &Worktree,
    state: &StateDir,
    feature: &FeatureId,
    tip: &str,
) -> anyhow::Result<Merge> {
    let main = &worktree.main;
    let base = &worktree.base_branch;
    let _lock = Lock::acquire(&state.git_lock())?;
    let branch_ref = format!("refs/heads/{}", worktree.branch);
    if git::commit_of(main, &branch_ref).is_none() && !git::is_ancestor(main, tip, base) {
        return Ok(Merge::Refused(format!(
            "branch {branch} is gone and its work (commit {tip}) is not in {base}; `git branch {branch} {tip}` brings it back",
            branch = worktree.branch
        )));
    }
    git::merge::merge_no_ff(
        main,
        base,
        &worktree.branch,
        tip,
        &landing_message(feature, &worktree.branch),
        &is_landing_message,
    )
}

/// Removes the worktree of a feature whose work is merged, and its branch unless something was
/// added to it since; a merge of it that a kill left looking unfinished is finished too.
pub fn remove(worktree: &Worktree, state: &StateDir) -> anyhow::Result<()> {
    let main = &worktree.main;
    let _lock = Lock::acquire(&state.git_lock())?;
    git::merge::clear_finished_merge(main)?;
    worktrees::remove(main, &worktree.path)?;
    if let Some(now) = git::commit_of(main, &format!("refs/heads/{}", worktree.branch)) {
        if git::is_ancestor(main, &now, &worktree.base_branch) {
            // A git killed while deleting it leaves the ref locked.
            git::merge::clear_stale_locks(main, &[&worktree.branch])?;
            git::run(main, &["branch", "-D", &worktree.branch])?;
        }
    }
    Ok(())
}

/// Commits what is left uncommitted in the worktree at `path`, if anything, saying it was left
/// `when`; `Err` holds why git refused (a pre-commit hook, say).
fn commit_leftovers(path: &Path, feature: &FeatureId, when: &str) -> Result<(), String> {
    let refused = |error: anyhow::Error| {
        format!(
            "committing the work left uncommitted in {} failed: {}",
            path.display(),
            format!("{error:#}")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        )
    };
    let dirty = !git::run(path, &["status", "--porcelain"])
        .map_err(refused)?
        .is_empty();
    if !dirty {
        return Ok(());
    }
    git::run(path, &["add", "-A"]).map_err(refused)?;
    // Changes `add` cannot stage (in a submodule, say): nothing to commit.
    if git::run(path, &["diff", "--cached", "--quiet"]).is_ok() {
        return Ok(());
    }
    git::run(
        path,
        &[
            "-c",
            "user.name=harness",
            "-c",
            "user.email=harness@localhost",
            "commit",
            "-q",
            "-m",
            &format!("{feature}: work left uncommitted when it was {when}"),
        ],
    )
    .map_err(refused)?;
    Ok(())
}

/// The feature whose work `feature` carries on: the nearest feature it was re-broken from
/// (`replan`, through `superseded_by`, up as many levels as it takes) that worked in a worktree
/// whose branch is still there, with that worktree.
pub fn carried_from(
    state: &StateDir,
    feature: &FeatureId,
) -> anyhow::Result<Option<(FeatureId, Worktree)>> {
    let features = crate::spec::features::FeatureList::load(&state.features())?;
    let states = crate::state::run_state::load_states(state, &features)?;
    let mut current = feature.clone();
    // Each step goes up one level; a hand-made loop of `superseded_by` ends when it comes round.
    for _ in 0..states.len() {
        let Some((parent, parent_state)) = states
            .iter()
            .find(|(_, s)| s.superseded_by.contains(&current))
        else {
            return Ok(None);
        };
        if let Some(worktree) = &parent_state.worktree {
            if git::branch_exists(&worktree.main, &worktree.branch) {
                return Ok(Some((parent.clone(), worktree.clone())));
            }
        }
        current = parent.clone();
    }
    Ok(None)
}

/// Starts the (new) worktree of `feature` from the work of the feature `from` it was re-broken
/// from: that feature's branch (its uncommitted work committed first) merged into the worktree,
/// or — when it does not merge cleanly with the mission's HEAD — the worktree reset to that
/// branch. Done once: when the branch is in the worktree's history already, nothing happens.
pub fn carry_over(
    worktree: &Worktree,
    feature: &FeatureId,
    from: &FeatureId,
    carried: &Worktree,
    state: &StateDir,
) -> anyhow::Result<()> {
    if carried.path.join(".git").exists() {
        if let Err(why) = commit_leftovers(&carried.path, from, "re-broken") {
            eprintln!("worker: warning: {why}");
        }
    }
    let Some(tip) = git::commit_of(&carried.main, &format!("refs/heads/{}", carried.branch)) else {
        return Ok(());
    };
    if git::is_ancestor(&worktree.path, &tip, "HEAD") {
        return Ok(());
    }
    let _lock = Lock::acquire(&state.git_lock())?;
    let message = format!(
        "{feature}: starts from the work of {from} ({})",
        carried.branch
    );
    match git::merge::merge_no_ff(
        &worktree.path,
        &worktree.branch,
        &carried.branch,
        &tip,
        &message,
        // The feature's own worktree: a merge refused there is reset below.
        &|_| false,
    )? {
        Merge::Merged => eprintln!(
            "worker: {feature} starts from the work of {from}: {} merged into its worktree",
            carried.branch
        ),
        Merge::Refused(why) => {
            git::run(&worktree.path, &["reset", "-q", "--hard", &tip])?;
            eprintln!(
                "worker: {feature} starts from {} itself (the work of {from}): it does not merge cleanly with {}: {why}",
                carried.branch, worktree.base_branch
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_landing_merge_is_known_by_its_message_and_no_other_is() {
        let id = FeatureId::parse("F-007").unwrap();
        assert!(is_landing_message(&landing_message(&id, &branch_of(&id))));
        for other in [
            "Merge branch 'harness/F-007'",
            "Merge F-007 (harness/F-008)",
            "Merge F-007 (harness/F-007",
            "Merge F 007 (harness/F 007)",
            "Merge F-007 (harness/F-007) and more",
        ] {
            assert!(!is_landing_message(other), "{other}");
        }
    }
}
