//! Where everything lives: the `.harness/` state directory of a project, and the harness install
//! (`HARNESS_HOME`: `roles/`, `identity/`). Every path the harness touches is built here.

use std::path::{Path, PathBuf};

use crate::base::error::InputError;
use crate::spec::features::FeatureId;
use crate::spec::role::Role;

/// The name of the state directory inside a working directory.
pub const STATE_DIR_NAME: &str = ".harness";

/// The `.harness/` directory of one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// The state directory at `root` (usually `<workdir>/.harness`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `<workdir>/.harness`.
    pub fn in_workdir(workdir: &Path) -> Self {
        Self::new(workdir.join(STATE_DIR_NAME))
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Fails with a hint to run `init` when the directory or its config is missing.
    pub fn require_initialised(&self) -> Result<(), InputError> {
        if self.config().is_file() {
            return Ok(());
        }
        let what = if self.root.is_dir() {
            "has no config.yaml"
        } else {
            "does not exist"
        };
        Err(
            InputError::in_file(&self.root, format!("the state directory {what}"))
                .with_hint("create it with `./run.sh init -C <project dir>`"),
        )
    }

    /// `config.yaml`: agent command, guardrails.
    pub fn config(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// `mission.md`: the objective, input of the planner.
    pub fn mission(&self) -> PathBuf {
        self.root.join("mission.md")
    }

    /// `features.yaml`: the feature list (the spec).
    pub fn features(&self) -> PathBuf {
        self.root.join("features.yaml")
    }

    /// `raw.md`: L1, the append-only log.
    pub fn raw(&self) -> PathBuf {
        self.root.join("raw.md")
    }

    /// `summary.md`: L2, injected into every prompt.
    pub fn summary(&self) -> PathBuf {
        self.root.join("summary.md")
    }

    /// `MEMORY.md`: L3, long-form memory.
    pub fn memory(&self) -> PathBuf {
        self.root.join("MEMORY.md")
    }

    /// `notes/`: per-feature agent notes.
    pub fn notes_dir(&self) -> PathBuf {
        self.root.join("notes")
    }

    /// `notes/<FEATURE>.md`.
    pub fn notes(&self, feature: &FeatureId) -> PathBuf {
        self.notes_dir().join(format!("{feature}.md"))
    }

    /// `runs/`: one directory per feature.
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// `runs/<FEATURE>/`.
    pub fn feature_runs(&self, feature: &FeatureId) -> PathBuf {
        self.runs_dir().join(feature.as_str())
    }

    /// `runs/<FEATURE>/state.json`: the feature's run state.
    pub fn run_state(&self, feature: &FeatureId) -> PathBuf {
        self.feature_runs(feature).join("state.json")
    }

    /// `runs/<FEATURE>/<RUN_ID>/`: prompt.md, output.log, result.json of one invocation.
    pub fn run_dir(&self, feature: &FeatureId, run_id: &RunId) -> PathBuf {
        self.feature_runs(feature).join(run_id.as_str())
    }

    /// `plans/`: one run directory per mission planning (`planner plan`).
    pub fn plans_dir(&self) -> PathBuf {
        self.root.join("plans")
    }

    /// `plans/<RUN_ID>/`: prompt.md, output.log, result.json of one mission planning.
    pub fn plan_run_dir(&self, run_id: &RunId) -> PathBuf {
        self.plans_dir().join(run_id.as_str())
    }

    /// `plan.json`: each feature as the planner last wrote it into features.yaml, so that a
    /// later plan can tell the planner's text from a hand edit.
    pub fn plan_record(&self) -> PathBuf {
        self.root.join("plan.json")
    }

    /// `report.html`: the mission report (`./run.sh report`), one self-contained page.
    pub fn report(&self) -> PathBuf {
        self.root.join("report.html")
    }

    /// `archive/`: raw entries the curator took out of raw.md.
    pub fn archive_dir(&self) -> PathBuf {
        self.root.join("archive")
    }

    /// `locks/`.
    pub fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    /// The lock run.sh holds for the whole run of a feature.
    pub fn feature_lock(&self, feature: &FeatureId) -> PathBuf {
        self.locks_dir().join(format!("{feature}.lock"))
    }

    /// The lock a role binary holds while it works on a feature (one invocation).
    pub fn invocation_lock(&self, feature: &FeatureId) -> PathBuf {
        self.locks_dir().join(format!("{feature}.invocation.lock"))
    }

    /// The lock a planner holds while it plans and edits features.yaml: one planner at a time.
    pub fn plan_lock(&self) -> PathBuf {
        self.locks_dir().join("plan.lock")
    }

    /// `worktrees/`: the git worktrees of features that run in parallel.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.root.join("worktrees")
    }

    /// The lock around git operations on the main repository (worktrees, merges).
    pub fn git_lock(&self) -> PathBuf {
        self.locks_dir().join("git.lock")
    }

    /// The lock that guards appends to raw.md.
    pub fn raw_lock(&self) -> PathBuf {
        self.locks_dir().join("raw.md.lock")
    }

    /// The lock the curator holds for a whole pass over summary.md and MEMORY.md; always taken
    /// after raw.md's.
    pub fn summary_lock(&self) -> PathBuf {
        self.locks_dir().join("summary.md.lock")
    }

    /// `mission-id`: this mission's id, which keys its entry in the cross-mission ledger.
    pub fn mission_id(&self) -> PathBuf {
        self.root.join("mission-id")
    }

    /// `curator.json`: what the curator remembers between passes (where it put each item, the
    /// bullets the user deleted, its agent's accepted wordings).
    pub fn curator_record(&self) -> PathBuf {
        self.root.join("curator.json")
    }

    /// `curations/`: one run directory per curator agent run (`curator --agent`).
    pub fn curations_dir(&self) -> PathBuf {
        self.root.join("curations")
    }

    /// `curations/<RUN_ID>/`: prompt.md, output.log, result.json of one curator agent run.
    pub fn curation_run_dir(&self, run_id: &RunId) -> PathBuf {
        self.curations_dir().join(run_id.as_str())
    }
}

/// The id of one invocation: `<unix-time>-<role>-<FEATURE>`, with `-2`, `-3`… when that second
/// already has a run, so that no run directory is ever reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunId(String);

impl RunId {
    /// Validates an id given by run.sh or a user: the characters of a feature id, nothing else.
    pub fn parse(text: &str) -> Result<Self, InputError> {
        let valid = !text.is_empty()
            && text.len() <= 200
            && !text.starts_with('.')
            && !text.contains("..")
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if valid {
            Ok(Self(text.to_string()))
        } else {
            Err(InputError::new(format!(
                "invalid run id {text:?}: use letters, digits, '-', '_' and '.' only"
            )))
        }
    }

    /// A fresh id for `role` on `feature` at `unix_time`; `taken` says whether an id is in use.
    pub fn generate(
        unix_time: i64,
        role: Role,
        feature: &FeatureId,
        taken: impl Fn(&str) -> bool,
    ) -> Self {
        Self::generate_after(None, unix_time, role, feature, taken)
    }

    /// [`RunId::generate`], given the id this process made last: the ids of its second up to
    /// that one are taken, so the search starts after it (a loop that runs many iterations a
    /// second would otherwise try them all each time).
    pub fn generate_after(
        previous: Option<&RunId>,
        unix_time: i64,
        role: Role,
        feature: &FeatureId,
        taken: impl Fn(&str) -> bool,
    ) -> Self {
        let base = format!("{unix_time}-{role}-{feature}");
        let next = |suffix: u64| match suffix {
            1 => base.clone(),
            n => format!("{base}-{n}"),
        };
        let mut suffix = previous
            .and_then(|previous| previous.0.strip_prefix(&base))
            .and_then(|rest| match rest {
                "" => Some(2),
                _ => rest.strip_prefix('-')?.parse::<u64>().ok().map(|n| n + 1),
            })
            .unwrap_or(1);
        while taken(&next(suffix)) {
            suffix += 1;
        }
        Self(next(suffix))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The harness install: `roles/` (the prompt of each role) and, by default, `identity/` (L4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessHome {
    root: PathBuf,
    identity: PathBuf,
}

impl HarnessHome {
    /// The install at `root`; identity files in `identity_override` (`HARNESS_IDENTITY_DIR`) when
    /// given, else in `root/identity`.
    pub fn new(root: impl Into<PathBuf>, identity_override: Option<PathBuf>) -> Self {
        let root = root.into();
        let identity = identity_override.unwrap_or_else(|| root.join("identity"));
        Self { root, identity }
    }

    /// Finds the install from the running binary: the nearest ancestor directory of the executable
    /// holding `roles/worker.md` (a `target/<profile>/` build inside the repository).
    pub fn discover_from(executable: &Path) -> Option<PathBuf> {
        executable
            .ancestors()
            .skip(1)
            .find(|dir| dir.join("roles").join("worker.md").is_file())
            .map(Path::to_path_buf)
    }

    /// The install directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `roles/<role>.md`: the role's prompt.
    pub fn role_prompt(&self, role: Role) -> PathBuf {
        self.root.join("roles").join(format!("{role}.md"))
    }

    /// The identity directory (L4).
    pub fn identity_dir(&self) -> &Path {
        &self.identity
    }

    /// `identity/<role>.md`: the role's cross-mission memory.
    pub fn identity(&self, role: Role) -> PathBuf {
        self.identity.join(format!("{role}.md"))
    }

    /// `identity/ledger.json`: the curator's cross-mission ledger of failure modes, by mission.
    pub fn ledger(&self) -> PathBuf {
        self.identity.join("ledger.json")
    }

    /// The lock curators of every project hold while they read and append to the identity files.
    pub fn identity_lock(&self) -> PathBuf {
        self.identity.join(".curator.lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(id: &str) -> FeatureId {
        FeatureId::parse(id).unwrap()
    }

    #[test]
    fn run_id_has_the_documented_shape_and_never_repeats() {
        let id = RunId::generate(1777076234, Role::Worker, &feature("F-023"), |_| false);
        assert_eq!(id.as_str(), "1777076234-worker-F-023");
        let taken = ["1777076234-worker-F-023", "1777076234-worker-F-023-2"];
        let id = RunId::generate(1777076234, Role::Worker, &feature("F-023"), |c| {
            taken.contains(&c)
        });
        assert_eq!(id.as_str(), "1777076234-worker-F-023-3");
        // After -3, the search starts at -4, without asking about the earlier ones.
        let asked = std::cell::RefCell::new(Vec::new());
        let next = RunId::generate_after(
            Some(&id),
            1777076234,
            Role::Worker,
            &feature("F-023"),
            |c| {
                asked.borrow_mut().push(c.to_string());
                false
            },
        );
        assert_eq!(next.as_str(), "1777076234-worker-F-023-4");
        assert_eq!(*asked.borrow(), ["1777076234-worker-F-023-4"]);
        // Another second, or another feature's id: from the start.
        let later = RunId::generate_after(
            Some(&id),
            1777076235,
            Role::Worker,
            &feature("F-023"),
            |_| false,
        );
        assert_eq!(later.as_str(), "1777076235-worker-F-023");
        let first = RunId::generate(1777076234, Role::Worker, &feature("F-023"), |_| false);
        let after_first = RunId::generate_after(
            Some(&first),
            1777076234,
            Role::Worker,
            &feature("F-023"),
            |_| false,
        );
        assert_eq!(after_first.as_str(), "1777076234-worker-F-023-2");
    }

    #[test]
    fn run_id_cannot_leave_the_runs_directory() {
        for bad in ["", "../x", "a/b", "..", ".hidden", "a b"] {
            assert!(RunId::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(RunId::parse("1777076234-worker-F-001.2").is_ok());
    }

    #[test]
    fn identity_dir_can_be_overridden() {
        let home = HarnessHome::new("/opt/harness", Some(PathBuf::from("/tmp/id")));
        assert_eq!(
            home.identity(Role::Worker),
            PathBuf::from("/tmp/id/worker.md")
        );
        let home = HarnessHome::new("/opt/harness", None);
        assert_eq!(
            home.identity(Role::Curator),
            PathBuf::from("/opt/harness/identity/curator.md")
        );
        assert_eq!(
            home.role_prompt(Role::Worker),
            PathBuf::from("/opt/harness/roles/worker.md")
        );
    }
}
