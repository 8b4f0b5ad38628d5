//! What outlives a feature's run in git: the worktrees and `harness/` branches that are kept
//! (each with why, and what to do), and their removal once the work they hold is in the mission's
//! branch (a superseded feature's, once all its pieces are done).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::base::fs;
use crate::base::git;
use crate::base::locks::Lock;
use crate::spec::features::FeatureId;
use crate::spec::layout::StateDir;
use crate::state::run_state::{RunState, States, Status};
use crate::state::worktree::remove;

/// Removes the worktrees and branches of the features that are `finished` with them (done ones
/// a killed run left one to, superseded ones whose pieces are all done: the pieces carried their
/// work into the mission's branch) — each only when its work is in the mission's branch, under
/// the feature's lock (one being run is skipped). Returns the features whose worktree went.
pub fn retire(
    state: &StateDir,
    states: &States,
    finished: impl Fn(&FeatureId, &RunState) -> bool,
) -> anyhow::Result<Vec<FeatureId>> {
    let mut retired = Vec::new();
    for (id, run_state) in states {
        if run_state.worktree.is_none() || !finished(id, run_state) {
            continue;
        }
        let holder = crate::base::locks::describe_holder(
            std::process::id(),
            &format!("planner next {id}"),
            &crate::base::time::format(crate::base::time::now()),
        );
        let Ok(_lock) = Lock::try_acquire(&state.feature_lock(id), id.as_str(), &holder) else {
            continue;
        };
        let path = state.run_state(id);
        let Some(mut fresh) = RunState::load(&path, id)? else {
            continue;
        };
        let Some(worktree) = fresh.worktree.clone() else {
            continue;
        };
        let tip = git::commit_of(&worktree.main, &format!("refs/heads/{}", worktree.branch))
            .or(worktree.tip.clone());
        if !tip.is_some_and(|tip| git::is_ancestor(&worktree.main, &tip, &worktree.base_branch)) {
            continue;
        }
        remove(&worktree, state)?;
        fresh.worktree = None;
        fresh
            .save(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        retired.push(id.clone());
    }
    Ok(retired)
}

/// A git worktree or `harness/` branch that outlives its feature's run, with why and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kept {
    /// The feature it belongs to, if features.yaml has it.
    pub feature: Option<String>,
    /// The branch, if it exists.
    pub branch: Option<String>,
    /// The worktree's directory, if it exists.
    pub worktree: Option<PathBuf>,
    /// Why it is kept, and what to do.
    pub why: String,
}

impl Kept {
    /// `harness/F-002 (.harness/worktrees/F-002): why`.
    pub fn line(&self) -> String {
        let what = match (&self.branch, &self.worktree) {
            (Some(branch), Some(dir)) => format!("{branch} ({})", dir.display()),
            (Some(branch), None) => branch.clone(),
            (None, Some(dir)) => dir.display().to_string(),
            (None, None) => String::new(),
        };
        format!("kept: {what}: {}", self.why)
    }
}

/// Every `harness/<FEATURE>` branch of the repository at `main` and every directory in
/// `.harness/worktrees/`, but those of features being run (`is_running`), each with why it is
/// kept and what to do (see [`why_kept`]).
pub fn kept(
    main: &Path,
    state: &StateDir,
    features: &crate::spec::features::FeatureList,
    states: &States,
    is_running: impl Fn(&FeatureId) -> bool,
) -> Vec<Kept> {
    let branches = git::run(
        main,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/harness/",
        ],
    )
    .unwrap_or_default();
    let mut names: std::collections::BTreeMap<String, (bool, bool)> = Default::default();
    for branch in branches.lines() {
        if let Some(name) = branch.strip_prefix("harness/") {
            names.entry(name.to_string()).or_default().0 = true;
        }
    }
    for entry in fs::read_dir(&state.worktrees_dir()).unwrap_or_default() {
        let name = entry.name.to_string_lossy().into_owned();
        // A salvage (`.F-001.salvage`) is a repair under way, not a worktree.
        if entry.kind == fs::Kind::Dir && !name.starts_with('.') {
            names.entry(name).or_default().1 = true;
        }
    }
    names
        .into_iter()
        .filter_map(|(name, (has_branch, has_dir))| {
            let id = FeatureId::parse(&name).ok();
            if id.as_ref().is_some_and(&is_running) {
                return None;
            }
            let branch = format!("harness/{name}");
            let dir = state.worktrees_dir().join(&name);
            let known = id.as_ref().filter(|id| features.get(id).is_some());
            Some(Kept {
                feature: known.map(|id| id.to_string()),
                why: why_kept(
                    &name,
                    known.and_then(|id| states.get(id)),
                    &branch,
                    &dir,
                    has_dir,
                ),
                branch: has_branch.then_some(branch),
                worktree: has_dir.then_some(dir),
            })
        })
        .collect()
}

/// Why the branch (and worktree, `has_dir`) of the feature `name` in state `state` is kept, and
/// what to do about it.
pub fn why_kept(
    name: &str,
    state: Option<&RunState>,
    branch: &str,
    dir: &Path,
    has_dir: bool,
) -> String {
    let drop = if has_dir {
        format!(
            "`git worktree remove --force {}` and `git branch -D {branch}`",
            dir.display()
        )
    } else {
        format!("`git branch -D {branch}`")
    };
    let Some(state) = state else {
        return format!(
            "no feature {name} in features.yaml has run there; if you do not need its work, {drop}"
        );
    };
    if !state.superseded_by.is_empty() {
        let pieces: Vec<&str> = state.superseded_by.iter().map(FeatureId::as_str).collect();
        return format!(
            "{name} was re-broken into {}: they start from its work, and this goes once they are all done",
            pieces.join(", ")
        );
    }
    match state.status {
        Status::Failed => format!(
            "{name} failed and its work stays here: `./run.sh {name} --max-iterations N` goes on with it, `./run.sh replan {name}` re-breaks it (the pieces start from it); or, to drop it, {drop}"
        ),
        Status::Unmerged => format!(
            "{name} is accepted but not merged (see its reason): `./run.sh {name}` merges it once the cause is gone"
        ),
        Status::Blocked => format!(
            "{name} is blocked (see its reason): it goes on here once it is unblocked"
        ),
        Status::Pending | Status::Running | Status::Provisional => format!(
            "{name} is unfinished: `./run.sh all --parallel N` (or `./run.sh {name} --worktree`) goes on with it here"
        ),
        Status::Done => format!(
            "{name} is done: the harness needs this no more; if its work is merged or unwanted, {drop}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::{at, id};

    fn state(status: Status) -> RunState {
        let mut state = RunState::new(id("F-2"), 5, "P", at(0));
        state.status = status;
        state
    }

    #[test]
    fn every_kept_worktree_says_why_and_what_to_do() {
        let dir = Path::new("/p/.harness/worktrees/F-2");
        let why =
            |state: Option<&RunState>, has_dir| why_kept("F-2", state, "harness/F-2", dir, has_dir);
        let failed = why(Some(&state(Status::Failed)), true);
        assert!(
            failed.contains("`./run.sh F-2 --max-iterations N`"),
            "{failed}"
        );
        assert!(failed.contains("`./run.sh replan F-2`"), "{failed}");
        assert!(failed.contains(
            "`git worktree remove --force /p/.harness/worktrees/F-2` and `git branch -D harness/F-2`"
        ));
        assert!(why(Some(&state(Status::Unmerged)), true).contains("`./run.sh F-2` merges it"));
        let mut superseded = state(Status::Failed);
        superseded.superseded_by = vec![id("F-2.1"), id("F-2.2")];
        assert!(why(Some(&superseded), true)
            .starts_with("F-2 was re-broken into F-2.1, F-2.2: they start from its work"));
        let orphan = why(None, false);
        assert!(
            orphan.starts_with("no feature F-2 in features.yaml"),
            "{orphan}"
        );
        assert!(orphan.ends_with("`git branch -D harness/F-2`"), "{orphan}");
        for status in [Status::Pending, Status::Running, Status::Provisional] {
            assert!(why(Some(&state(status)), true).contains("goes on with it here"));
        }
    }

    #[test]
    fn a_kept_line_names_the_branch_and_the_worktree() {
        let kept = Kept {
            feature: Some("F-2".into()),
            branch: Some("harness/F-2".into()),
            worktree: Some(PathBuf::from("/p/.harness/worktrees/F-2")),
            why: "because".into(),
        };
        assert_eq!(
            kept.line(),
            "kept: harness/F-2 (/p/.harness/worktrees/F-2): because"
        );
    }
}
