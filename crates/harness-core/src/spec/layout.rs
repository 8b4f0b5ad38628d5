//! Where everything lives: the `.harness/` state directory of a project, the harness install
//! (`HARNESS_HOME`: `roles/`, `identity/`) and the identity directory it uses. Every path the
//! harness touches is built here.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::base::error::InputError;
use crate::base::fs;
use crate::spec::features::FeatureId;
use crate::spec::role::Role;

/// The name of the state directory inside a working directory.
pub const STATE_DIR_NAME: &str = ".harness";

/// The name of a feature's run state file in its `runs/<FEATURE>/` directory.
pub const RUN_STATE_FILE: &str = "state.json";

/// The `.harness/` directory of one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// The state directory at `root` (usually `<workdir>/.harness`). Nothing below it is ever
    /// read or written through a symbolic link (see [`fs`]).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        fs::confine(&root);
        Self { root }
    }

    /// `<workdir>/.harness`.
    pub fn in_workdir(workdir: &Path) -> Self {
        Self::new(workdir.join(STATE_DIR_NAME))
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Fails with a hint to run `init` when the directory or its config is missing, and when
    /// one of its files or directories is a symbolic link (see [`StateDir::refuse_links`]).
    pub fn require_initialised(&self) -> Result<(), InputError> {
        self.refuse_links(None)?;
        self.require_config()
    }

    /// [`StateDir::require_initialised`], the links of `feature`'s files refused too: one look
    /// at each path.
    pub fn require_initialised_for(&self, feature: &FeatureId) -> Result<(), InputError> {
        self.refuse_links(Some(feature))?;
        self.require_config()
    }

    /// Fails unless the state directory has its config.yaml.
    fn require_config(&self) -> Result<(), InputError> {
        if fs::is_file(&self.config()) {
            return Ok(());
        }
        let what = if fs::is_dir(&self.root) {
            "has no config.yaml"
        } else {
            "does not exist"
        };
        Err(
            InputError::in_file(&self.root, format!("the state directory {what}"))
                .with_hint("create it with `./run.sh init -C <project dir>`"),
        )
    }

    /// Fails at the first of the state's files and directories (and `feature`'s) that is a
    /// symbolic link or a special file: planted by an agent, say. Checked before a role changes
    /// anything; every later access refuses one too (see [`fs`]).
    pub fn refuse_links(&self, feature: Option<&FeatureId>) -> Result<(), InputError> {
        let mut paths = vec![
            self.config(),
            self.mission(),
            self.features(),
            self.raw(),
            self.summary(),
            self.memory(),
            self.notes_dir(),
            self.runs_dir(),
            self.plans_dir(),
            self.plan_record(),
            self.report(),
            self.archive_dir(),
            self.archive_dir().join("demoted.md"),
            self.locks_dir(),
            self.raw_lock(),
            self.summary_lock(),
            self.plan_lock(),
            self.git_lock(),
            self.worktrees_dir(),
            self.mission_id(),
            self.curator_record(),
            self.curations_dir(),
        ];
        if let Some(feature) = feature {
            paths.extend([
                self.notes(feature),
                self.feature_runs(feature),
                self.run_state(feature),
                self.feature_lock(feature),
                self.invocation_lock(feature),
                self.worktrees_dir().join(feature.as_str()),
            ]);
        }
        fs::refuse_links(paths.iter().map(PathBuf::as_path)).map_err(|error| {
            match fs::as_refused(&error) {
                Some(refused) => refused.to_input_error(),
                None => InputError::in_file(&self.root, format!("cannot look into it: {error}")),
            }
        })
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
        self.feature_runs(feature).join(RUN_STATE_FILE)
    }

    /// `runs/<FEATURE>/<RUN_ID>/`: prompt.md, output.log, result.json of one invocation.
    pub fn run_dir(&self, feature: &FeatureId, run_id: &RunId) -> PathBuf {
        self.feature_runs(feature).join(run_id.as_str())
    }

    /// `runs/<FEATURE>/job.json`: the cluster job last submitted for the feature (its id, name
    /// and state as last seen).
    pub fn job_record(&self, feature: &FeatureId) -> PathBuf {
        self.feature_runs(feature).join("job.json")
    }

    /// `runs/<FEATURE>/jobs/`: the output of the feature's cluster jobs, one file per job.
    pub fn job_output_dir(&self, feature: &FeatureId) -> PathBuf {
        self.feature_runs(feature).join("jobs")
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

    /// The lock a coordinator whose jobs outlive it (`all --executor slurm`) holds: one at a time,
    /// or two could both submit a feature whose job is still queued.
    pub fn coordinator_lock(&self) -> PathBuf {
        self.locks_dir().join("coordinator.lock")
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

    /// `hooks/`: the record of every hook run, and the output of those that failed.
    pub fn hooks_dir(&self) -> PathBuf {
        self.root.join("hooks")
    }

    /// `hooks/runs.jsonl`: one line per hook run (event, command, outcome, its log if kept).
    pub fn hooks_record(&self) -> PathBuf {
        self.hooks_dir().join("runs.jsonl")
    }

    /// The lock that guards appends to `hooks/runs.jsonl`.
    pub fn hooks_lock(&self) -> PathBuf {
        self.locks_dir().join("hooks.lock")
    }
}

/// The id of one invocation: `<unix-time>-<role>-<FEATURE>`, with `-2`, `-3`… when that second
/// already has a run, so that no run directory is ever reused. Each role binary makes its own;
/// run.sh never does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunId(String);

impl RunId {
    /// Validates an id given by a user (`--run-id`, `HARNESS_RUN_ID`): the rule of a feature id.
    pub fn parse(text: &str) -> Result<Self, InputError> {
        match crate::spec::features::name_problem(text, 200) {
            None => Ok(Self(text.to_string())),
            Some(problem) => Err(InputError::new(format!(
                "invalid run id {text:?}: it {problem}"
            ))),
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

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why the identity directory (L4) is where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentitySource {
    /// `HARNESS_IDENTITY_DIR` (or `--identity-dir`) names it.
    Override,
    /// A source checkout keeps it beside its roles, in `identity/`.
    Checkout,
    /// An installed harness keeps it in the user's data directory, seeded from its `identity/`.
    DataDir,
}

/// The identity directory (L4) in use, and why there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdentityDir {
    /// The directory.
    pub dir: PathBuf,
    /// Why it is this one.
    pub source: IdentitySource,
}

impl std::fmt::Display for IdentityDir {
    /// `<dir> (<why>)`, as `help` and `status` show it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = match self.source {
            IdentitySource::Override => "set by HARNESS_IDENTITY_DIR",
            IdentitySource::Checkout => "the checkout's own identity/",
            IdentitySource::DataDir => "the user's data directory",
        };
        write!(f, "{} ({why})", self.dir.display())
    }
}

/// The user's directories an installed harness keeps its identity in: `$XDG_DATA_HOME` and `$HOME`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserDirs {
    /// `$XDG_DATA_HOME`, if set.
    pub data_home: Option<PathBuf>,
    /// `$HOME`, if set.
    pub home: Option<PathBuf>,
}

impl UserDirs {
    /// The directories of this process's environment (an empty value counts as unset).
    pub fn from_env() -> Self {
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Self {
            data_home: var("XDG_DATA_HOME"),
            home: var("HOME"),
        }
    }

    /// `$XDG_DATA_HOME/harness/identity`, else `$HOME/.local/share/harness/identity`. The XDG
    /// spec says a relative `XDG_DATA_HOME` is invalid and to be ignored, and so it is.
    fn identity_dir(&self) -> Option<PathBuf> {
        let data_home = match &self.data_home {
            Some(dir) if dir.is_absolute() => dir.clone(),
            _ => self.home.as_ref()?.join(".local").join("share"),
        };
        Some(data_home.join("harness").join("identity"))
    }
}

/// The harness install: `roles/` (the prompt of each role), `identity/` (the identity files it
/// ships), and the identity directory (L4) in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessHome {
    root: PathBuf,
    identity: IdentityDir,
}

impl HarnessHome {
    /// The install at `root`, its identity directory chosen by [`HarnessHome::choose_identity`]
    /// (a home with a `Cargo.toml` is a source checkout).
    pub fn locate(
        root: impl Into<PathBuf>,
        identity_override: Option<PathBuf>,
        user: &UserDirs,
    ) -> Result<Self, InputError> {
        let root = root.into();
        let is_checkout = root.join("Cargo.toml").is_file();
        let identity = Self::choose_identity(&root, identity_override, is_checkout, user)?;
        Ok(Self { root, identity })
    }

    /// The one rule for where the identity lives: `HARNESS_IDENTITY_DIR` when given; else a
    /// checkout's own `identity/` (as it always was); else, for an install, the user's data
    /// directory, so that curating a project never writes into the install.
    pub fn choose_identity(
        root: &Path,
        identity_override: Option<PathBuf>,
        is_checkout: bool,
        user: &UserDirs,
    ) -> Result<IdentityDir, InputError> {
        let (dir, source) = match identity_override {
            Some(dir) => (dir, IdentitySource::Override),
            None if is_checkout => (root.join("identity"), IdentitySource::Checkout),
            None => match user.identity_dir() {
                Some(dir) => (dir, IdentitySource::DataDir),
                None => {
                    let error = InputError::new(
                        "cannot tell where to keep the identity files: neither XDG_DATA_HOME nor HOME is set",
                    );
                    return Err(error.with_hint(
                        "set HOME, or HARNESS_IDENTITY_DIR to the directory of your identity files",
                    ));
                }
            },
        };
        Ok(IdentityDir { dir, source })
    }

    /// Finds the install from the running binary: the nearest ancestor directory of the executable
    /// holding `roles/worker.md` (the checkout of a `target/<profile>/` build, or the
    /// `lib/harness/` of `make install`, whose binaries are in `bin/`).
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
        &self.identity.dir
    }

    /// The identity directory and why it is where it is.
    pub fn identity_location(&self) -> &IdentityDir {
        &self.identity
    }

    /// `identity/`: the identity files the harness ships; the seed of an install's identity.
    pub fn shipped_identity(&self) -> PathBuf {
        self.root.join("identity")
    }

    /// `identity/<role>.md`: the role's cross-mission memory.
    pub fn identity(&self, role: Role) -> PathBuf {
        self.identity.dir.join(format!("{role}.md"))
    }

    /// `identity/ledger.json`: the curator's cross-mission ledger of failure modes, by mission.
    pub fn ledger(&self) -> PathBuf {
        self.identity.dir.join("ledger.json")
    }

    /// The lock curators of every project hold while they read and append to the identity files.
    pub fn identity_lock(&self) -> PathBuf {
        self.identity.dir.join(".curator.lock")
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
    fn identity_dir_is_the_override_then_the_checkout_then_the_data_dir() {
        let root = Path::new("/opt/harness");
        let user = UserDirs {
            data_home: Some(PathBuf::from("/home/u/data")),
            home: Some(PathBuf::from("/home/u")),
        };
        let choose = |over: Option<&str>, checkout, user: &UserDirs| {
            HarnessHome::choose_identity(root, over.map(PathBuf::from), checkout, user)
        };
        for checkout in [true, false] {
            assert_eq!(
                choose(Some("/tmp/id"), checkout, &user)
                    .unwrap()
                    .to_string(),
                "/tmp/id (set by HARNESS_IDENTITY_DIR)"
            );
        }
        assert_eq!(
            choose(None, true, &user).unwrap().to_string(),
            "/opt/harness/identity (the checkout's own identity/)"
        );
        assert_eq!(
            choose(None, false, &user).unwrap().to_string(),
            "/home/u/data/harness/identity (the user's data directory)"
        );
        // No XDG_DATA_HOME, or a relative one (invalid by the XDG spec): ~/.local/share.
        for data_home in [None, Some(PathBuf::from("relative/data"))] {
            let user = UserDirs {
                data_home,
                ..user.clone()
            };
            assert_eq!(
                choose(None, false, &user).unwrap().dir,
                PathBuf::from("/home/u/.local/share/harness/identity")
            );
        }
        let error = choose(None, false, &UserDirs::default()).unwrap_err();
        assert!(
            error.message.contains("neither XDG_DATA_HOME nor HOME"),
            "{error}"
        );
        assert!(error.hint.unwrap().contains("HARNESS_IDENTITY_DIR"));
    }

    #[test]
    fn a_home_with_a_cargo_toml_is_a_checkout() {
        let checkout = tempfile::tempdir().unwrap();
        std::fs::write(checkout.path().join("Cargo.toml"), "").unwrap();
        let install = tempfile::tempdir().unwrap();
        let user = UserDirs {
            data_home: None,
            home: Some(PathBuf::from("/home/u")),
        };
        let home = HarnessHome::locate(checkout.path(), None, &user).unwrap();
        assert_eq!(home.identity_location().source, IdentitySource::Checkout);
        assert_eq!(
            home.identity(Role::Worker),
            home.shipped_identity().join("worker.md")
        );
        let home = HarnessHome::locate(install.path(), None, &user).unwrap();
        assert_eq!(home.identity_location().source, IdentitySource::DataDir);
        assert_eq!(
            home.identity(Role::Curator),
            PathBuf::from("/home/u/.local/share/harness/identity/curator.md")
        );
        assert_eq!(
            home.role_prompt(Role::Worker),
            install.path().join("roles/worker.md")
        );
    }
}
