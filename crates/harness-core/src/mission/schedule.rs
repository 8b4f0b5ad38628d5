//! The order of work over a whole mission (`./run.sh all`): which features are ready to run,
//! which are blocked by a failed dependency, and how the mission ended. The rules are pure
//! functions over the feature list and the run states; loading and writing states sit at the
//! edges (`run_state::load_states`, [`apply_dependency_updates`]).

use std::collections::BTreeSet;
use std::fmt;

use anyhow::Context;

use crate::base::error::{InputError, LockHeld};
use crate::base::exit_codes;
use crate::base::locks::{self, Lock};
use crate::base::time::{self, Timestamp};
use crate::mission::leftovers;
use crate::spec::config::Config;
use crate::spec::features::{Feature, FeatureId, FeatureList};
use crate::spec::layout::StateDir;
use crate::state::lifecycle::is_phase_cap_reason;
use crate::state::run_state::{RunState, Status};

pub use crate::state::run_state::{is_being_run, load_states, run_holder, States};

/// The words that start the reason of a feature blocked by a dependency. Such a block is derived
/// from the dependencies and recomputed every time; other blocks are left alone.
pub const DEPENDENCY_REASON_PREFIX: &str = "dependency ";

/// Whether a feature was re-broken into others by the planner.
pub fn is_superseded(state: Option<&RunState>) -> bool {
    state.is_some_and(|s| !s.superseded_by.is_empty())
}

/// Whether a dependency on `id` is satisfied: it is done, or it is superseded and every one of
/// its successors is satisfied (recursively). A successor missing from the list is not.
pub fn satisfied(id: &FeatureId, features: &FeatureList, states: &States) -> bool {
    fn walk(
        id: &FeatureId,
        features: &FeatureList,
        states: &States,
        seen: &mut BTreeSet<FeatureId>,
    ) -> bool {
        if features.get(id).is_none() || !seen.insert(id.clone()) {
            return false;
        }
        let state = states.get(id);
        match state {
            Some(state) if !state.superseded_by.is_empty() => state
                .superseded_by
                .iter()
                .all(|next| walk(next, features, states, seen)),
            Some(state) => state.status == Status::Done,
            None => false,
        }
    }
    walk(id, features, states, &mut BTreeSet::new())
}

/// What is wrong with a feature, seen as a dependency of others (the first is said first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Trouble {
    Failed,
    /// Accepted, its work not merged into the mission's branch yet: its dependents wait for it.
    Unmerged,
    Blocked,
}

/// Whether `reason` is a block derived from the dependencies.
fn is_dependency_block(state: &RunState) -> bool {
    state.status == Status::Blocked
        && state
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with(DEPENDENCY_REASON_PREFIX))
}

/// The trouble of `id`: failed or blocked for its own reasons, or blocked because a dependency
/// is (transitively); a superseded feature has the trouble of its successors.
fn trouble(
    id: &FeatureId,
    features: &FeatureList,
    states: &States,
    seen: &mut BTreeSet<FeatureId>,
) -> Option<Trouble> {
    // A cycle (features.yaml refuses one; a list built otherwise may hold one) gives no trouble
    // rather than no answer.
    if !seen.insert(id.clone()) {
        return None;
    }
    let state = states.get(id);
    let result = match state {
        Some(state) if !state.superseded_by.is_empty() => state
            .superseded_by
            .iter()
            .filter_map(|next| trouble(next, features, states, seen))
            .min(),
        Some(state) if state.status == Status::Failed => Some(Trouble::Failed),
        Some(state) if state.status == Status::Unmerged => Some(Trouble::Unmerged),
        Some(state) if state.status == Status::Blocked && !is_dependency_block(state) => {
            Some(Trouble::Blocked)
        }
        Some(state) if state.status == Status::Done => None,
        _ => features.get(id).and_then(|feature| {
            dependency_trouble(feature, features, states, seen).map(|_| Trouble::Blocked)
        }),
    };
    seen.remove(id);
    result
}

/// The first dependency of `feature` in trouble, and its trouble.
fn dependency_trouble(
    feature: &Feature,
    features: &FeatureList,
    states: &States,
    seen: &mut BTreeSet<FeatureId>,
) -> Option<(FeatureId, Trouble)> {
    feature
        .depends_on
        .iter()
        .find_map(|dep| trouble(dep, features, states, seen).map(|trouble| (dep.clone(), trouble)))
}

/// A change to a feature's status that its dependencies call for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DependencyUpdate {
    /// Mark it blocked, for this reason (`dependency F-002 failed`).
    Block(FeatureId, String),
    /// It was blocked by a dependency that has recovered (its guardrail raised, say): pending.
    Unblock(FeatureId),
}

impl DependencyUpdate {
    /// The feature it changes.
    pub fn feature(&self) -> &FeatureId {
        match self {
            DependencyUpdate::Block(id, _) | DependencyUpdate::Unblock(id) => id,
        }
    }
}

impl fmt::Display for DependencyUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DependencyUpdate::Block(id, reason) => write!(f, "{id} is blocked: {reason}"),
            DependencyUpdate::Unblock(id) => write!(f, "{id} is no longer blocked"),
        }
    }
}

/// Every not-done feature with a failed or blocked dependency (transitively) is to be blocked;
/// a feature that a dependency blocked, and whose dependencies are fine again, is to be pending.
/// Failed, done and superseded features are left as they are, and so are blocks of other kinds.
pub fn dependency_updates(features: &FeatureList, states: &States) -> Vec<DependencyUpdate> {
    let mut updates = Vec::new();
    for feature in &features.features {
        let state = states.get(&feature.id);
        if is_superseded(state) {
            continue;
        }
        match state.map(|s| s.status) {
            Some(Status::Done | Status::Unmerged | Status::Failed) => continue,
            Some(Status::Blocked) if !state.is_some_and(is_dependency_block) => continue,
            _ => {}
        }
        let wanted = dependency_trouble(feature, features, states, &mut BTreeSet::new()).map(
            |(dep, trouble)| match trouble {
                Trouble::Failed => format!("{DEPENDENCY_REASON_PREFIX}{dep} failed"),
                Trouble::Unmerged => format!("{DEPENDENCY_REASON_PREFIX}{dep} is not merged yet"),
                Trouble::Blocked => format!("{DEPENDENCY_REASON_PREFIX}{dep} is blocked"),
            },
        );
        let current = state
            .filter(|s| is_dependency_block(s))
            .and_then(|s| s.reason.clone());
        match (wanted, current) {
            (Some(wanted), current) if current.as_deref() != Some(&wanted) => {
                updates.push(DependencyUpdate::Block(feature.id.clone(), wanted))
            }
            (None, Some(_)) => updates.push(DependencyUpdate::Unblock(feature.id.clone())),
            _ => {}
        }
    }
    updates
}

/// The features that may run now, in the order of features.yaml: not done, failed, blocked or
/// superseded (a feature failed at its guardrail may, when `max_iterations` gives it iterations
/// again, as `--max-iterations` does); every dependency satisfied; not in `exclude`. Whether
/// another process runs it is the caller's to ask (it touches the file system).
pub fn runnable<'a>(
    features: &'a FeatureList,
    states: &'a States,
    exclude: &'a [FeatureId],
    max_iterations: Option<u32>,
) -> impl Iterator<Item = &'a FeatureId> + 'a {
    features
        .features
        .iter()
        .filter(move |feature| {
            let state = states.get(&feature.id);
            let reopened = state.is_some_and(|s| max_iterations.is_some_and(|n| s.reopened_by(n)));
            !is_superseded(state)
                && (reopened
                    || !matches!(
                        state.map(|s| s.status),
                        Some(Status::Done | Status::Failed | Status::Blocked)
                    ))
                && !exclude.contains(&feature.id)
                && feature
                    .depends_on
                    .iter()
                    .all(|dep| satisfied(dep, features, states))
        })
        .map(|feature| &feature.id)
}

/// Up to `limit` of the [`runnable`] features that no other run holds (`is_locked`). An unmerged
/// feature is ready: its run tries the merge again.
pub fn ready(
    features: &FeatureList,
    states: &States,
    (exclude, max_iterations): (&[FeatureId], Option<u32>),
    is_locked: impl Fn(&FeatureId) -> bool,
    limit: usize,
) -> Vec<FeatureId> {
    runnable(features, states, exclude, max_iterations)
        .filter(|id| !is_locked(id))
        .take(limit)
        .cloned()
        .collect()
}

/// How a mission stands at the end of `./run.sh all`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissionOutcome {
    /// 0 every feature done (or superseded by done ones); 2 only features a guardrail stopped
    /// are left (failed at max_iterations or a phase's, or stopped by a budget or a setback,
    /// resumable); 3
    /// anything else (failed, unmerged, blocked, never run).
    pub exit_code: u8,
    /// `mission: 5/6 features done, 1 blocked`.
    pub line: String,
    /// What to do about what is left, one line each (`./run.sh all --max-iterations 15`).
    pub hints: Vec<String>,
}

/// How many features stand in each way, for [`mission_outcome`].
#[derive(Debug, Default)]
struct Counts {
    done: usize,
    guardrail: usize,
    /// The highest guardrail of the features that reached theirs.
    guardrail_max: u32,
    /// Failed at a phase's own max_iterations.
    phase_cap: usize,
    stopped: usize,
    failed: usize,
    unmerged: usize,
    blocked: usize,
    in_progress: usize,
    pending: usize,
    superseded: usize,
    missing_pieces: usize,
}

impl Counts {
    /// A superseded feature counts through its successors (which are features of the list
    /// themselves), not on its own.
    fn of(features: &FeatureList, states: &States) -> Self {
        let mut counts = Counts::default();
        for feature in &features.features {
            let state = states.get(&feature.id);
            if let Some(state) = state.filter(|s| !s.superseded_by.is_empty()) {
                counts.superseded += 1;
                if state
                    .superseded_by
                    .iter()
                    .any(|id| features.get(id).is_none())
                {
                    counts.missing_pieces += 1;
                }
                continue;
            }
            let Some(state) = state else {
                counts.pending += 1;
                continue;
            };
            match state.status {
                Status::Done => counts.done += 1,
                Status::Failed if state.reason.as_deref().is_some_and(is_phase_cap_reason) => {
                    counts.phase_cap += 1;
                }
                Status::Failed if state.failed_at_guardrail() => {
                    counts.guardrail += 1;
                    counts.guardrail_max = counts.guardrail_max.max(state.max_iterations);
                }
                Status::Failed => counts.failed += 1,
                Status::Unmerged => counts.unmerged += 1,
                Status::Blocked => counts.blocked += 1,
                // Its last run stopped for this reason (a budget, a setback): resumable.
                Status::Pending | Status::Provisional if state.reason.is_some() => {
                    counts.stopped += 1;
                }
                Status::Pending if state.iteration_count == 0 => counts.pending += 1,
                Status::Pending | Status::Running | Status::Provisional => counts.in_progress += 1,
            }
        }
        counts
    }
}

/// The outcome of the mission: see [`MissionOutcome`].
pub fn mission_outcome(features: &FeatureList, states: &States) -> MissionOutcome {
    let counts = Counts::of(features, states);
    let total = features.features.len() - counts.superseded;
    let mut line = format!("mission: {}/{total} features done", counts.done);
    for (count, words) in [
        (counts.guardrail, "failed at max_iterations"),
        (counts.phase_cap, "failed at a phase's max_iterations"),
        (counts.stopped, "stopped (resumable)"),
        (counts.failed, "failed"),
        (counts.unmerged, "accepted but not merged"),
        (counts.blocked, "blocked"),
        (counts.in_progress, "unfinished"),
        (counts.pending, "not started"),
        (counts.superseded, "superseded"),
        (
            counts.missing_pieces,
            "superseded by features missing from features.yaml",
        ),
    ] {
        if count > 0 {
            line.push_str(&format!(", {count} {words}"));
        }
    }
    let mut hints = Vec::new();
    if counts.guardrail > 0 {
        hints.push(format!(
            "give the features that reached max_iterations more with `./run.sh all --max-iterations {}`",
            counts.guardrail_max + 5
        ));
    }
    if counts.phase_cap > 0 {
        hints.push(
            "raise the max_iterations of the phase each stopped in (`phases:` in config.yaml; `./run.sh status` says which), then `./run.sh <FEATURE>` goes on with it".to_string(),
        );
    }
    if counts.stopped > 0 {
        hints.push(
            "`./run.sh status` says why each stopped; once that is past (a limit reset, a budget raised), `./run.sh all` resumes them".to_string(),
        );
    }
    let others = counts.failed
        + counts.unmerged
        + counts.blocked
        + counts.in_progress
        + counts.pending
        + counts.missing_pieces;
    let exit_code = if others > 0 {
        exit_codes::FAILED
    } else if counts.guardrail + counts.phase_cap + counts.stopped > 0 {
        exit_codes::GUARDRAIL
    } else {
        exit_codes::DONE
    };
    MissionOutcome {
        exit_code,
        line,
        hints,
    }
}

/// Writes the [`dependency_updates`] of the mission into the run states, each under the
/// feature's lock (a feature being run is skipped: its own run decides). Returns what changed.
pub fn apply_dependency_updates(
    state_dir: &StateDir,
    config: &Config,
    features: &FeatureList,
    now: Timestamp,
) -> anyhow::Result<Vec<DependencyUpdate>> {
    let states = load_states(state_dir, features)?;
    let mut applied = Vec::new();
    for update in dependency_updates(features, &states) {
        let id = update.feature();
        let holder = locks::describe_holder(
            std::process::id(),
            &format!("planner next {id}"),
            &time::format(now),
        );
        let _lock = match Lock::try_acquire(&state_dir.feature_lock(id), id.as_str(), &holder) {
            Ok(lock) => lock,
            Err(error) if error.downcast_ref::<LockHeld>().is_some() => continue,
            Err(error) => return Err(error),
        };
        if locks::is_held(&state_dir.invocation_lock(id)) {
            continue;
        }
        let path = state_dir.run_state(id);
        // Re-read under the lock: the state may have changed since it was loaded.
        let loaded = RunState::load(&path, id)?;
        if loaded.as_ref() != states.get(id) {
            continue;
        }
        let mut state = loaded.unwrap_or_else(|| {
            RunState::new(
                id.clone(),
                config.max_iterations,
                &config.completion_promise,
                now,
            )
        });
        match &update {
            DependencyUpdate::Block(_, reason) => {
                state.status = Status::Blocked;
                state.reason = Some(reason.clone());
            }
            DependencyUpdate::Unblock(_) => {
                state.status = Status::Pending;
                state.reason = None;
            }
        }
        state.updated_at = now;
        state
            .save(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        applied.push(update);
    }
    Ok(applied)
}

/// What `planner next` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Next {
    /// The statuses it changed first (features blocked or unblocked by their dependencies).
    pub updates: Vec<DependencyUpdate>,
    /// The features whose worktree it removed, their work being merged (see
    /// [`crate::mission::leftovers::retire`]).
    pub retired: Vec<FeatureId>,
    /// The features ready to run, in the order of features.yaml.
    pub ready: Vec<FeatureId>,
    /// The features that would be ready but another process runs, with who holds them.
    pub held: Vec<(FeatureId, String)>,
}

impl Next {
    /// Tells the user, on stderr, what was changed before the features were picked.
    pub fn tell_changes(&self) {
        for update in &self.updates {
            eprintln!("planner: {update}");
        }
        for id in &self.retired {
            eprintln!("planner: removed the worktree and branch of {id}: its work is merged");
        }
    }
}

/// `planner next`: brings the dependency blocks up to date, then picks up to `limit` features
/// ready to run (see [`ready`]; `max_iterations`: `all --max-iterations N`), leaving out `exclude`
/// and features being run (which it names, with who runs them).
pub fn next(
    state_dir: &StateDir,
    (exclude, max_iterations): (&[FeatureId], Option<u32>),
    limit: usize,
    now: Timestamp,
) -> anyhow::Result<Next> {
    state_dir.require_initialised()?;
    let config = Config::load(&state_dir.config())?;
    let features = FeatureList::load(&state_dir.features())?;
    let updates = apply_dependency_updates(state_dir, &config, &features, now)?;
    let states = load_states(state_dir, &features)?;
    remove_notes_of_done(state_dir, &states)?;
    let retired = leftovers::retire(state_dir, &states, |id, run_state| {
        run_state.status == Status::Done
            || (is_superseded(Some(run_state)) && satisfied(id, &features, &states))
    })?;
    let (mut ready, mut held) = (Vec::new(), Vec::new());
    for id in runnable(&features, &states, exclude, max_iterations) {
        match run_holder(state_dir, id) {
            Some(holder) => held.push((id.clone(), holder)),
            None if ready.len() < limit => ready.push(id.clone()),
            None => {}
        }
    }
    Ok(Next {
        updates,
        retired,
        ready,
        held,
    })
}

/// Deletes the notes of the done features that have some left: a validator killed between saving
/// its verdict and deleting them leaves them behind, and a done feature never runs again to do it.
pub fn remove_notes_of_done(state_dir: &StateDir, states: &States) -> anyhow::Result<()> {
    for (id, state) in states {
        if state.status == Status::Done && !is_being_run(state_dir, id) {
            crate::state::notes::remove(state_dir, id)
                .with_context(|| format!("cannot remove the notes of {id}, which is done"))?;
        }
    }
    Ok(())
}

/// What `planner outcome` says at the end of `./run.sh all`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The exit code of the mission (see [`MissionOutcome`]).
    pub exit_code: u8,
    /// `mission: 5/6 features done, 1 blocked`.
    pub line: String,
    /// What to do about what is left (see [`MissionOutcome`]).
    pub hints: Vec<String>,
    /// The worktrees and branches the mission leaves, each with why and what to do.
    pub kept: Vec<leftovers::Kept>,
}

impl Outcome {
    /// Tells the user: the line and what the mission leaves on stdout, the hints on stderr.
    pub fn tell(&self) {
        println!("{}", self.line);
        for kept in &self.kept {
            println!("{}", kept.line());
        }
        for hint in &self.hints {
            eprintln!("hint: {hint}");
        }
    }
}

/// `planner outcome`: the mission's outcome from the files as they are, and the worktrees and
/// branches it leaves in the project at `workdir`.
pub fn outcome(workdir: &std::path::Path, state_dir: &StateDir) -> Result<Outcome, InputError> {
    state_dir.require_initialised()?;
    let features = FeatureList::load(&state_dir.features())?;
    let states = load_states(state_dir, &features)?;
    let MissionOutcome {
        exit_code,
        line,
        hints,
    } = mission_outcome(&features, &states);
    let kept = leftovers::kept(workdir, state_dir, &features, &states, |id| {
        is_being_run(state_dir, id)
    });
    Ok(Outcome {
        exit_code,
        line,
        hints,
        kept,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::testing::id;
    use std::path::Path;

    fn list(text: &str) -> FeatureList {
        FeatureList::parse(text, Path::new("features.yaml")).unwrap()
    }

    /// F-1 ← F-2 ← F-3, and F-4 alone.
    fn chain() -> FeatureList {
        list("features:\n  - id: F-1\n    title: a\n  - id: F-2\n    title: b\n    depends_on: [F-1]\n  - id: F-3\n    title: c\n    depends_on: [F-2]\n  - id: F-4\n    title: d\n")
    }

    fn state(feature: &str, status: Status, reason: Option<&str>) -> (FeatureId, RunState) {
        let mut state = RunState::new(id(feature), 10, "P", time::now());
        state.status = status;
        state.reason = reason.map(str::to_string);
        if status != Status::Pending {
            state.iteration_count = 1;
        }
        (id(feature), state)
    }

    fn states(entries: Vec<(FeatureId, RunState)>) -> States {
        entries.into_iter().collect()
    }

    fn ids(list: &[FeatureId]) -> Vec<&str> {
        list.iter().map(FeatureId::as_str).collect()
    }

    #[test]
    fn ready_follows_the_dependencies_in_file_order() {
        let features = chain();
        let none = States::new();
        assert_eq!(
            ids(&ready(&features, &none, (&[], None), |_| false, 1)),
            ["F-1"]
        );
        assert_eq!(
            ids(&ready(&features, &none, (&[], None), |_| false, 9)),
            ["F-1", "F-4"]
        );
        assert_eq!(
            ids(&ready(&features, &none, (&[id("F-1")], None), |_| false, 9)),
            ["F-4"]
        );
        assert_eq!(
            ids(&ready(
                &features,
                &none,
                (&[], None),
                |f| f.as_str() == "F-1",
                9
            )),
            ["F-4"]
        );
        let done = states(vec![state("F-1", Status::Done, None)]);
        assert_eq!(
            ids(&ready(&features, &done, (&[], None), |_| false, 9)),
            ["F-2", "F-4"]
        );
        // Interrupted and provisional features are resumed; failed ones are not.
        let mixed = states(vec![
            state("F-1", Status::Done, None),
            state("F-2", Status::Running, None),
            state("F-4", Status::Failed, Some("max_iterations (10) reached")),
        ]);
        assert_eq!(
            ids(&ready(&features, &mixed, (&[], None), |_| false, 9)),
            ["F-2"]
        );
    }

    #[test]
    fn a_superseded_dependency_is_satisfied_through_its_successors() {
        let features = list("features:\n  - id: F-7\n    title: a\n  - id: F-7.1\n    title: b\n  - id: F-7.2\n    title: c\n    depends_on: [F-7.1]\n  - id: F-8\n    title: d\n    depends_on: [F-7]\n");
        let mut parent = state("F-7", Status::Failed, Some("max_iterations (10) reached"));
        parent.1.superseded_by = vec![id("F-7.1"), id("F-7.2")];
        let mut all = states(vec![parent, state("F-7.1", Status::Done, None)]);
        assert!(!satisfied(&id("F-7"), &features, &all));
        assert_eq!(
            ids(&ready(&features, &all, (&[], None), |_| false, 9)),
            ["F-7.2"]
        );
        // A superseded feature is not failed: F-8 is not blocked by it.
        assert!(dependency_updates(&features, &all).is_empty());
        all.insert(id("F-7.2"), state("F-7.2", Status::Done, None).1);
        assert!(satisfied(&id("F-7"), &features, &all));
        assert_eq!(
            ids(&ready(&features, &all, (&[], None), |_| false, 9)),
            ["F-8"]
        );
        // A successor that failed blocks the dependents of the superseded feature.
        all.insert(id("F-7.2"), state("F-7.2", Status::Failed, Some("x")).1);
        assert_eq!(
            dependency_updates(&features, &all),
            [DependencyUpdate::Block(
                id("F-8"),
                "dependency F-7 failed".into()
            )]
        );
    }

    #[test]
    fn failures_block_their_dependents_transitively_and_recoveries_unblock() {
        let features = chain();
        let failed = states(vec![state(
            "F-1",
            Status::Failed,
            Some("max_iterations (10) reached"),
        )]);
        assert_eq!(
            dependency_updates(&features, &failed),
            [
                DependencyUpdate::Block(id("F-2"), "dependency F-1 failed".into()),
                DependencyUpdate::Block(id("F-3"), "dependency F-2 is blocked".into()),
            ]
        );
        // Once marked, nothing more to do; a block for another reason also blocks dependents.
        let marked = states(vec![
            state("F-1", Status::Failed, Some("x")),
            state("F-2", Status::Blocked, Some("dependency F-1 failed")),
            state("F-3", Status::Blocked, Some("dependency F-2 is blocked")),
        ]);
        assert!(dependency_updates(&features, &marked).is_empty());
        // F-1 is resumable again (its guardrail was raised): its dependents are unblocked.
        let mut recovered = marked.clone();
        recovered.insert(id("F-1"), state("F-1", Status::Pending, None).1);
        assert_eq!(
            dependency_updates(&features, &recovered),
            [
                DependencyUpdate::Unblock(id("F-2")),
                DependencyUpdate::Unblock(id("F-3")),
            ]
        );
        let conflict = states(vec![state("F-2", Status::Blocked, Some("merge conflict"))]);
        assert_eq!(
            dependency_updates(&features, &conflict),
            [DependencyUpdate::Block(
                id("F-3"),
                "dependency F-2 is blocked".into()
            )]
        );
    }

    #[test]
    fn an_unmerged_feature_is_ready_to_merge_again_and_its_dependents_wait() {
        let features = chain();
        let mut unmerged = states(vec![state("F-1", Status::Unmerged, Some("conflicts"))]);
        assert_eq!(
            ids(&ready(&features, &unmerged, (&[], None), |_| false, 9)),
            ["F-1", "F-4"]
        );
        assert_eq!(
            dependency_updates(&features, &unmerged),
            [
                DependencyUpdate::Block(id("F-2"), "dependency F-1 is not merged yet".into()),
                DependencyUpdate::Block(id("F-3"), "dependency F-2 is blocked".into()),
            ]
        );
        let outcome = mission_outcome(&features, &unmerged);
        assert_eq!(outcome.exit_code, 3);
        assert_eq!(
            outcome.line,
            "mission: 0/4 features done, 1 accepted but not merged, 3 not started"
        );
        // Merged at last: its dependents are unblocked.
        unmerged.insert(id("F-1"), state("F-1", Status::Done, None).1);
        unmerged.insert(
            id("F-2"),
            state(
                "F-2",
                Status::Blocked,
                Some("dependency F-1 is not merged yet"),
            )
            .1,
        );
        assert_eq!(
            dependency_updates(&features, &unmerged),
            [DependencyUpdate::Unblock(id("F-2"))]
        );
    }

    #[test]
    fn a_dependency_cycle_neither_loops_nor_panics() {
        // features.yaml refuses a cycle; these functions take any list all the same.
        let features = FeatureList::parse_allowing_cycles(
            "features:\n  - id: A\n    title: a\n    depends_on: [B]\n  - id: B\n    title: b\n    depends_on: [A]\n",
            Path::new("features.yaml"),
        )
        .unwrap();
        assert!(ready(&features, &States::new(), (&[], None), |_| false, 9).is_empty());
        assert!(dependency_updates(&features, &States::new()).is_empty());
    }

    #[test]
    fn the_mission_outcome_has_the_documented_codes() {
        let features = chain();
        let all_done = states(
            ["F-1", "F-2", "F-3", "F-4"]
                .iter()
                .map(|f| state(f, Status::Done, None))
                .collect(),
        );
        let outcome = mission_outcome(&features, &all_done);
        assert_eq!(outcome.exit_code, 0);
        assert_eq!(outcome.line, "mission: 4/4 features done");

        let mut guardrail = all_done.clone();
        guardrail.insert(
            id("F-4"),
            state(
                "F-4",
                Status::Failed,
                Some("max_iterations (10) reached without completion"),
            )
            .1,
        );
        let outcome = mission_outcome(&features, &guardrail);
        assert_eq!(outcome.exit_code, 2);
        assert_eq!(
            outcome.line,
            "mission: 3/4 features done, 1 failed at max_iterations"
        );

        let mut blocked = guardrail.clone();
        blocked.insert(
            id("F-3"),
            state("F-3", Status::Blocked, Some("dependency F-2 failed")).1,
        );
        let outcome = mission_outcome(&features, &blocked);
        assert_eq!(outcome.exit_code, 3);
        assert_eq!(
            outcome.line,
            "mission: 2/4 features done, 1 failed at max_iterations, 1 blocked"
        );

        let mut never_run = all_done.clone();
        never_run.remove(&id("F-4"));
        let outcome = mission_outcome(&features, &never_run);
        assert_eq!(outcome.exit_code, 3);
        assert_eq!(outcome.line, "mission: 3/4 features done, 1 not started");
    }

    #[test]
    fn the_outcome_names_the_flag_that_continues_and_counts_stopped_features_as_guardrails() {
        let features = chain();
        let mut states = states(
            ["F-1", "F-2"]
                .iter()
                .map(|f| state(f, Status::Done, None))
                .collect(),
        );
        let (f3, mut failed) = state(
            "F-3",
            Status::Failed,
            Some("max_iterations (12) reached without completion"),
        );
        failed.max_iterations = 12;
        states.insert(f3, failed);
        let (f4, mut stopped) = state("F-4", Status::Pending, Some("a rate or usage limit"));
        stopped.iteration_count = 0;
        states.insert(f4, stopped);
        let outcome = mission_outcome(&features, &states);
        assert_eq!(outcome.exit_code, 2);
        assert_eq!(
            outcome.line,
            "mission: 2/4 features done, 1 failed at max_iterations, 1 stopped (resumable)"
        );
        assert!(
            outcome.hints[0].ends_with("`./run.sh all --max-iterations 17`"),
            "{:?}",
            outcome.hints
        );
        assert!(outcome.hints[1].contains("`./run.sh all` resumes them"));
    }

    #[test]
    fn a_feature_failed_at_its_phases_cap_is_a_guardrail_config_yaml_raises() {
        let features = chain();
        let mut states = states(
            ["F-1", "F-2", "F-4"]
                .iter()
                .map(|f| state(f, Status::Done, None))
                .collect(),
        );
        let (f3, failed) = state(
            "F-3",
            Status::Failed,
            Some(&crate::state::lifecycle::phase_cap_reason("plan", 3)),
        );
        states.insert(f3, failed);
        let outcome = mission_outcome(&features, &states);
        assert_eq!(outcome.exit_code, 2);
        assert_eq!(
            outcome.line,
            "mission: 3/4 features done, 1 failed at a phase's max_iterations"
        );
        assert_eq!(outcome.hints.len(), 1, "{:?}", outcome.hints);
        assert!(
            outcome.hints[0].starts_with("raise the max_iterations of the phase"),
            "{:?}",
            outcome.hints
        );
    }

    #[test]
    fn max_iterations_makes_a_feature_failed_at_its_guardrail_ready_again() {
        let features = chain();
        let mut failed = state("F-1", Status::Failed, Some("max_iterations (10) reached"));
        failed.1.iteration_count = 10;
        let states = states(vec![failed]);
        let pick = |max| ids(&ready(&features, &states, (&[], max), |_| false, 9)).join(" ");
        assert_eq!(pick(None), "F-4");
        assert_eq!(pick(Some(10)), "F-4");
        assert_eq!(pick(Some(15)), "F-1 F-4");
    }

    #[test]
    fn a_superseded_feature_counts_through_its_pieces() {
        let features = list("features:\n  - id: F-7\n    title: a\n  - id: F-7.1\n    title: b\n");
        let mut parent = state("F-7", Status::Failed, Some("validator said no"));
        parent.1.superseded_by = vec![id("F-7.1")];
        let all = states(vec![parent.clone(), state("F-7.1", Status::Done, None)]);
        let outcome = mission_outcome(&features, &all);
        assert_eq!(
            (outcome.exit_code, outcome.line.as_str()),
            (0, "mission: 1/1 features done, 1 superseded")
        );
        let mut gone = parent;
        gone.1.superseded_by = vec![id("F-7.9")];
        let outcome = mission_outcome(
            &features,
            &states(vec![gone, state("F-7.1", Status::Done, None)]),
        );
        assert_eq!(outcome.exit_code, 3, "{}", outcome.line);
    }

    #[test]
    fn marking_writes_states_and_skips_locked_features() {
        let dir = tempfile::tempdir().unwrap();
        let state_dir = StateDir::new(dir.path());
        let config = Config::parse("agent:\n  command: [x]\n", Path::new("config.yaml")).unwrap();
        let features = chain();
        let (_, mut failed) = state("F-1", Status::Failed, Some("x"));
        failed.save(&state_dir.run_state(&id("F-1"))).unwrap();
        let held = Lock::try_acquire(&state_dir.feature_lock(&id("F-3")), "F-3", "test").unwrap();
        let applied =
            apply_dependency_updates(&state_dir, &config, &features, time::now()).unwrap();
        assert_eq!(
            applied,
            [DependencyUpdate::Block(
                id("F-2"),
                "dependency F-1 failed".into()
            )]
        );
        let written = RunState::load(&state_dir.run_state(&id("F-2")), &id("F-2"))
            .unwrap()
            .unwrap();
        assert_eq!(written.status, Status::Blocked);
        assert_eq!(written.iteration_count, 0);
        assert!(!state_dir.run_state(&id("F-3")).exists());
        drop(held);
        let applied =
            apply_dependency_updates(&state_dir, &config, &features, time::now()).unwrap();
        assert_eq!(
            applied,
            [DependencyUpdate::Block(
                id("F-3"),
                "dependency F-2 is blocked".into()
            )]
        );
    }
}
