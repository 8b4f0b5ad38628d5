//! Phases: config.yaml's optional `phases:` (e.g. plan → research → build → verify). The run
//! state records the phase a feature is in ([`PhaseState`]), so a resumed feature resumes it;
//! the promise ends the phase, and its gate — its checks, and its `allow:` list against what the
//! phase changed in the working tree — passes it on to the next phase (a fresh agent) or sends
//! the same phase round again with the reasons in the notes. After the last phase the feature is
//! complete, as without phases.

use std::path::Path;

use crate::base::error::InputError;
use crate::base::git::snapshot;
use crate::base::glob;
use crate::roles::lifecycle::checks::{self, CheckPlace, CheckRun};
use crate::spec::config::{Config, Phase};
use crate::spec::layout::StateDir;
use crate::state::lifecycle::{
    CheckRecord, CommandOutcome, GateRecord, PhaseState, MAX_PATHS_KEPT,
};
use crate::state::run_state::RunState;

/// Which of `phases` a run state that recorded `recorded` is in: none without phases, the
/// first when none is recorded, else the one of the recorded name (`Err` with that name when
/// config.yaml no longer has it).
pub fn locate(phases: &[Phase], recorded: Option<&PhaseState>) -> Result<Option<usize>, String> {
    if phases.is_empty() {
        return Ok(None);
    }
    match recorded {
        None => Ok(Some(0)),
        Some(recorded) => phases
            .iter()
            .position(|phase| phase.name == recorded.name)
            .map(Some)
            .ok_or_else(|| recorded.name.clone()),
    }
}

/// The state of phase `index` of `phases` starting after iteration `iteration_count`, from the
/// working tree `base_tree`.
pub fn start(
    phases: &[Phase],
    index: usize,
    iteration_count: u32,
    base_tree: Option<String>,
) -> PhaseState {
    PhaseState {
        name: phases[index].name.clone(),
        number: count(index + 1),
        count: count(phases.len()),
        started_after_iteration: iteration_count,
        base_tree,
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The phase a feature whose run state is `state` is in under `config` (its index, and its
/// state renumbered to the list as it is now): none without phases; the first, starting now,
/// for a feature that has none recorded. A recorded phase that `phases:` no longer has is an
/// input error naming config.yaml.
pub fn current(
    config: &Config,
    state: &RunState,
    config_path: &Path,
) -> Result<Option<(usize, PhaseState)>, InputError> {
    let recorded = state.phase.as_ref();
    let index = locate(&config.phases, recorded).map_err(|name| {
        InputError::in_file(
            config_path,
            format!(
                "{} is in phase {name:?}, which `phases:` no longer has",
                state.feature_id
            ),
        )
        .with_hint(format!(
            "put the phase back, or remove \"phase\" from runs/{}/state.json to start again at the first phase",
            state.feature_id
        ))
    })?;
    Ok(index.map(|index| {
        let since = recorded.map_or(state.iteration_count, |p| p.started_after_iteration);
        let base = recorded.and_then(|p| p.base_tree.clone());
        (index, start(&config.phases, index, since, base))
    }))
}

/// Before an iteration: the run state's phase brought in line with config.yaml ([`current`]),
/// with a snapshot of the working tree for a phase with `allow:` that has none yet. Returns the
/// phase's index.
pub fn enter(
    state: &mut RunState,
    config: &Config,
    workdir: &Path,
    state_dir: &StateDir,
) -> anyhow::Result<Option<usize>> {
    let Some((index, mut phase)) = current(config, state, &state_dir.config())? else {
        state.phase = None;
        return Ok(None);
    };
    if config.phases[index].allow.is_some() && phase.base_tree.is_none() {
        let snapshot = snapshot_tree(workdir, state_dir).map_err(|error| {
            InputError::in_file(
                &state_dir.config(),
                format!(
                    "phase {} has an allow: list, which needs the project to be a git repository ({error:#})",
                    phase.name
                ),
            )
            .with_hint("`git init` the project, or remove allow: from the phase")
        })?;
        phase.base_tree = Some(snapshot);
    }
    state.phase = Some(phase);
    Ok(Some(index))
}

/// A snapshot of the working tree at `workdir`, the state directory left out.
pub fn snapshot_tree(workdir: &Path, state_dir: &StateDir) -> anyhow::Result<String> {
    let inside = state_dir
        .root()
        .strip_prefix(workdir)
        .ok()
        .map(|path| path.to_string_lossy().into_owned())
        .filter(|path| !path.is_empty());
    let mut exclude = vec![".harness"];
    exclude.extend(inside.as_deref());
    snapshot::snapshot(workdir, &exclude)
}

/// The paths of `changed` that `allow` does not cover (none when there is no allow list).
pub fn outside_allow(allow: Option<&[String]>, changed: &[String]) -> Vec<String> {
    let Some(allow) = allow else {
        return Vec::new();
    };
    changed
        .iter()
        .filter(|path| !glob::matches_any(allow, path))
        .cloned()
        .collect()
}

/// The gate's verdict: the promise counts when every check passed, nothing changed outside the
/// allow list, and the tree could be looked at.
pub fn judge_gate(
    checks: Vec<CheckRecord>,
    outside: Vec<String>,
    error: Option<String>,
) -> GateRecord {
    let passed = checks
        .iter()
        .all(|check| check.outcome == CommandOutcome::Passed)
        && outside.is_empty()
        && error.is_none();
    GateRecord {
        passed,
        checks,
        outside_allow_count: outside.len(),
        outside_allow: outside.into_iter().take(MAX_PATHS_KEPT).collect(),
        error,
    }
}

/// What the gate after a promise found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRun {
    pub record: GateRecord,
    /// Each check's run, for the notes.
    pub checks: Vec<CheckRun>,
}

impl GateRun {
    /// Whether an interrupt stopped a check: the gate decided nothing.
    pub fn interrupted(&self) -> bool {
        self.record
            .checks
            .iter()
            .any(|check| check.outcome == CommandOutcome::Interrupted)
    }
}

/// Runs the gate of phase `phase` (its index; `None` without phases) after a promise: the allow
/// list against what the phase changed since its snapshot (before the checks, whose own files
/// are not the agent's doing), then the checks ([`checks::gate_checks`]). `None` when there is
/// nothing to go through (no phases, no checks).
pub fn run_gate(
    config: &Config,
    phase: Option<(usize, &PhaseState)>,
    place: &CheckPlace,
    state_dir: &StateDir,
) -> anyhow::Result<Option<GateRun>> {
    let checks = checks::gate_checks(config, phase.map(|(index, _)| index));
    if phase.is_none() && checks.is_empty() {
        return Ok(None);
    }
    let allow = phase.and_then(|(index, _)| config.phases[index].allow.as_deref());
    let (outside, error) = match (allow, phase) {
        (Some(allow), Some((_, state))) => match changed_since(state, place.workdir, state_dir) {
            Ok(changed) => (outside_allow(Some(allow), &changed), None),
            Err(error) => (Vec::new(), Some(format!("{error:#}"))),
        },
        _ => (Vec::new(), None),
    };
    let runs = checks::run_checks(&checks, place)?;
    let record = judge_gate(
        runs.iter().map(|run| run.record.clone()).collect(),
        outside,
        error,
    );
    Ok(Some(GateRun {
        record,
        checks: runs,
    }))
}

/// The paths changed since the phase's snapshot.
fn changed_since(
    phase: &PhaseState,
    workdir: &Path,
    state_dir: &StateDir,
) -> anyhow::Result<Vec<String>> {
    let base = phase
        .base_tree
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!("the phase has no snapshot of where it started"))?;
    let now = snapshot_tree(workdir, state_dir)?;
    snapshot::changed_paths(workdir, base, &now)
}

/// The phase after phase `index` passed its gate on iteration `iteration_count`, if any, with a
/// snapshot of the tree as it starts when it has `allow:`.
pub fn next_phase(
    config: &Config,
    index: usize,
    iteration_count: u32,
    workdir: &Path,
    state_dir: &StateDir,
) -> anyhow::Result<Option<PhaseState>> {
    let next = index + 1;
    let Some(phase) = config.phases.get(next) else {
        return Ok(None);
    };
    let base = match &phase.allow {
        Some(_) => Some(snapshot_tree(workdir, state_dir)?),
        None => None,
    };
    Ok(Some(start(&config.phases, next, iteration_count, base)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phases(names: &[&str]) -> Vec<Phase> {
        names
            .iter()
            .map(|name| Phase {
                name: name.to_string(),
                instructions: String::new(),
                checks: Vec::new(),
                allow: None,
                max_iterations: None,
            })
            .collect()
    }

    #[test]
    fn a_feature_starts_at_the_first_phase_and_resumes_its_own() {
        let list = phases(&["plan", "build"]);
        assert_eq!(locate(&[], None), Ok(None));
        assert_eq!(locate(&list, None), Ok(Some(0)));
        let build = start(&list, 1, 4, None);
        assert_eq!(
            (build.number, build.count, build.started_after_iteration),
            (2, 2, 4)
        );
        assert_eq!(locate(&list, Some(&build)), Ok(Some(1)));
        // Found by name when the list changed around it; refused when it is gone.
        let reordered = phases(&["research", "plan", "build", "verify"]);
        assert_eq!(locate(&reordered, Some(&build)), Ok(Some(2)));
        assert_eq!(
            locate(&phases(&["plan"]), Some(&build)),
            Err("build".to_string())
        );
    }

    fn check(name: &str, outcome: CommandOutcome) -> CheckRecord {
        CheckRecord {
            name: name.into(),
            outcome,
            exit_code: None,
            signal: None,
            duration_ms: 0,
            log: String::new(),
        }
    }

    #[test]
    fn the_gate_passes_only_with_every_check_passed_and_nothing_outside() {
        let allow = ["docs/plans/**".to_string(), "PROGRESS.md".to_string()];
        let changed = [
            "docs/plans/a.md".to_string(),
            "PROGRESS.md".to_string(),
            "src/main.rs".to_string(),
        ];
        assert_eq!(outside_allow(Some(&allow), &changed), ["src/main.rs"]);
        assert!(outside_allow(None, &changed).is_empty());
        assert!(outside_allow(Some(&[]), &changed).len() == 3);

        let passed = vec![check("a", CommandOutcome::Passed)];
        assert!(judge_gate(passed.clone(), Vec::new(), None).passed);
        assert!(judge_gate(Vec::new(), Vec::new(), None).passed);
        assert!(!judge_gate(passed.clone(), vec!["src/main.rs".into()], None).passed);
        assert!(!judge_gate(passed, Vec::new(), Some("git failed".into())).passed);
        for outcome in [
            CommandOutcome::Failed,
            CommandOutcome::TimedOut,
            CommandOutcome::NotStarted,
            CommandOutcome::Interrupted,
        ] {
            let gate = judge_gate(vec![check("a", outcome)], Vec::new(), None);
            assert!(!gate.passed, "{outcome:?}");
        }
        let many: Vec<String> = (0..80).map(|n| format!("f{n}")).collect();
        let gate = judge_gate(Vec::new(), many, None);
        assert_eq!(
            (gate.outside_allow.len(), gate.outside_allow_count),
            (MAX_PATHS_KEPT, 80)
        );
    }
}
