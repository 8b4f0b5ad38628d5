//! `make install`: the `harness` command runs whole missions from any directory (and through a
//! symlink to it), keeps the identity in the user's data directory, writes nothing into the
//! checkout, survives an upgrade with the identity kept, and `make uninstall` takes it all away but
//! the identity. The install copies the debug build of `make test` (BIN_DIR), so nothing is built.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use harness_tests::{bin_dir, code, repo_root, text};

/// A temporary PREFIX, HOME and XDG_DATA_HOME, and room for projects.
struct Sandbox {
    root: tempfile::TempDir,
}

impl Sandbox {
    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn prefix(&self) -> PathBuf {
        self.path("prefix")
    }

    /// Where the installed harness must keep the identity: `$XDG_DATA_HOME/harness/identity`.
    fn identity_dir(&self) -> PathBuf {
        self.path("data/harness/identity")
    }

    /// `make <target> PREFIX=… BIN_DIR=…` in the checkout, in the sandbox's environment.
    fn make(&self, target: &str) -> Output {
        let mut command = Command::new("make");
        command
            .arg("-s")
            .arg("-C")
            .arg(repo_root())
            .arg(target)
            .arg(format!("PREFIX={}", self.prefix().display()))
            .arg(format!("BIN_DIR={}", bin_dir().display()))
            // Not the jobserver of an enclosing `make test`.
            .env_remove("MAKEFLAGS")
            .env_remove("MAKELEVEL")
            .env_remove("MFLAGS");
        self.environment(&mut command).output().expect("make runs")
    }

    /// `program args…` run in `dir`, as a user whose HOME and data directory are the sandbox's,
    /// with the installed `harness` on the PATH and no HARNESS_* variable of ours.
    fn run(&self, program: &Path, dir: &Path, args: &[&str]) -> Output {
        let mut command = Command::new(program);
        command.args(args).current_dir(dir).stdin(Stdio::null());
        self.environment(&mut command)
            .output()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", program.display()))
    }

    fn environment<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("HARNESS_") {
                command.env_remove(name);
            }
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.prefix().join("bin")];
        paths.extend(std::env::split_paths(&path));
        command
            .env("PATH", std::env::join_paths(paths).unwrap())
            .env("HOME", self.path("home"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "test")
            .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
            .env("GIT_COMMITTER_NAME", "test")
            .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
    }

    /// `harness args…` in `dir`, found on the PATH as a user would.
    fn harness(&self, dir: &Path, args: &[&str]) -> Output {
        self.run(Path::new("harness"), dir, args)
    }

    /// A new git project `name` whose agent is the installed scripted agent playing `scenario`;
    /// `init` ran in it through `harness` (from the project directory, without -C).
    fn project(&self, name: &str, features: &str, scenario: &str) -> PathBuf {
        let project = self.path(name);
        std::fs::create_dir_all(&project).unwrap();
        assert_success(
            &self.run(Path::new("git"), &project, &["init", "-q"]),
            "git init",
        );
        assert_success(&self.harness(&project, &["init"]), "harness init");
        let agent = self.prefix().join("lib/harness/bin/scripted-agent");
        let scenario_file = self.path(&format!("{name}.scenario.yaml"));
        std::fs::write(&scenario_file, scenario).unwrap();
        let config = format!(
            "agent:\n  command: [{:?}, \"--scenario\", {:?}, \"--state-dir\", {:?}]\nvalidate: false\n",
            agent.display().to_string(),
            scenario_file.display().to_string(),
            self.path(&format!("{name}.agent-state")).display().to_string(),
        );
        std::fs::write(project.join(".harness/config.yaml"), config).unwrap();
        std::fs::write(project.join(".harness/features.yaml"), features).unwrap();
        project
    }
}

fn assert_success(out: &Output, what: &str) {
    assert_eq!(
        code(out),
        0,
        "{what}\nstdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Every file under `dir` (hidden ones too) and its bytes; empty if `dir` is missing.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_type().is_dir())
        .map(|entry| {
            let bytes = std::fs::read(entry.path()).unwrap_or_default();
            (entry.path().to_path_buf(), bytes)
        })
        .collect()
}

/// `git status` of the checkout, ignored files included except the build directory.
fn checkout_status() -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo_root())
        .args(["status", "--porcelain", "--ignored", "--", ".", ":!target"])
        .output()
        .expect("git runs");
    text(&out.stdout)
}

const TWO_FEATURES: &str = "features:\n  - id: F-001\n    title: One\n  - id: F-002\n    title: Two\n    depends_on: [F-001]\n";

#[test]
fn an_installed_harness_runs_missions_from_anywhere_and_uninstalls_cleanly() {
    let sandbox = Sandbox {
        root: tempfile::tempdir().unwrap(),
    };
    let elsewhere = sandbox.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let checkout_before = checkout_status();
    let checkout_identity = files(&repo_root().join("identity"));

    assert_success(&sandbox.make("install"), "make install");
    let home = sandbox.prefix().join("lib/harness");
    for file in [
        "run.sh",
        "bin/worker",
        "bin/curator",
        "roles/planner.md",
        "identity/worker.md",
    ] {
        assert!(home.join(file).is_file(), "{file} not installed");
    }
    let project = a_mission_from_the_project_and_from_elsewhere(&sandbox, &elsewhere);
    the_identity_is_in_the_data_directory(&sandbox, &project, &elsewhere);
    version_names_a_commit_of_the_checkout(&sandbox, &elsewhere);
    no_data_directory_is_a_clear_error(&sandbox, &project);
    an_upgrade_keeps_the_identity(&sandbox);

    // A mission through a symlink to the command, from yet another directory, with the identity
    // kept by the upgrade.
    let link = sandbox.path("links/h");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(sandbox.prefix().join("bin/harness"), &link).unwrap();
    let second = sandbox.project(
        "second",
        "features:\n  - id: F-001\n    title: One\n",
        "steps:\n  - [expect_prompt: 'INSTALLED-LESSON', promise: true]\n",
    );
    let out = sandbox.run(&link, &elsewhere, &["-C", second.to_str().unwrap(), "all"]);
    assert_success(&out, "the symlink's all");

    // Nothing went into the checkout.
    assert_eq!(checkout_status(), checkout_before, "the checkout changed");
    assert_eq!(files(&repo_root().join("identity")), checkout_identity);

    let kept = files(&sandbox.identity_dir());
    assert_success(&sandbox.make("uninstall"), "make uninstall");
    let mut left: Vec<PathBuf> = walkdir::WalkDir::new(sandbox.prefix())
        .into_iter()
        .map(|entry| entry.unwrap().into_path())
        .collect();
    left.sort();
    let prefix = sandbox.prefix();
    // PREFIX/bin and PREFIX/lib are shared with other programs: left, empty.
    assert_eq!(
        left,
        [prefix.clone(), prefix.join("bin"), prefix.join("lib")]
    );
    assert_eq!(files(&sandbox.identity_dir()), kept, "the identity is kept");
}

/// `harness init` and `harness F-001` in the project, then `all`, `curate`, `explain` and
/// `report` with `-C` from `elsewhere`; returns the project.
fn a_mission_from_the_project_and_from_elsewhere(sandbox: &Sandbox, elsewhere: &Path) -> PathBuf {
    let project = sandbox.project(
        "app",
        TWO_FEATURES,
        "steps:\n  - [expect_prompt: 'Iteration 1 of', promise: true]\n",
    );
    assert_success(&sandbox.harness(&project, &["F-001"]), "harness F-001");
    let project_arg = project.to_str().unwrap();
    for command in ["all", "curate", "report"] {
        let out = sandbox.harness(elsewhere, &["-C", project_arg, command]);
        assert_success(&out, command);
    }
    // The role prompts come from the install.
    let out = sandbox.harness(elsewhere, &["-C", project_arg, "explain", "F-002"]);
    assert_success(&out, "harness explain");
    assert!(text(&out.stdout).contains("You are the worker of a long-running coding harness"));
    project
}

/// The identity: the data directory, seeded from the shipped files, used by the curator, and
/// named by `status --json` and `help`.
fn the_identity_is_in_the_data_directory(sandbox: &Sandbox, project: &Path, elsewhere: &Path) {
    let identity = sandbox.identity_dir();
    let project_arg = project.to_str().unwrap();
    let out = sandbox.harness(elsewhere, &["-C", project_arg, "status", "--json"]);
    assert_success(&out, "harness status --json");
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(board["totals"]["done"], 2, "{board}");
    assert_eq!(board["identity"]["dir"], identity.to_str().unwrap());
    assert_eq!(board["identity"]["source"], "data_dir");
    assert_eq!(
        std::fs::read(identity.join("worker.md")).unwrap(),
        std::fs::read(repo_root().join("identity/worker.md")).unwrap()
    );
    assert!(
        identity.join(".curator.lock").is_file(),
        "the curator used the data directory"
    );
    let help = text(&sandbox.harness(elsewhere, &["help"]).stdout);
    let line = format!(
        "identity: {} (the user's data directory)",
        identity.display()
    );
    assert!(help.contains(&line), "{help}");
    let home = sandbox.prefix().join("lib/harness");
    assert!(
        help.contains(&format!("install:  {}", home.display())),
        "{help}"
    );
}

/// Neither HOME nor XDG_DATA_HOME: a clear error, before anything runs.
fn no_data_directory_is_a_clear_error(sandbox: &Sandbox, project: &Path) {
    let mut command = Command::new("harness");
    sandbox.environment(&mut command);
    let out = command
        .env_remove("HOME")
        .env_remove("XDG_DATA_HOME")
        .arg("-C")
        .arg(project)
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("neither XDG_DATA_HOME nor HOME is set"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: set HOME, or HARNESS_IDENTITY_DIR"),
        "{stderr}"
    );
}

/// `make install` again keeps the user's identity (here with a lesson added by hand), and puts
/// new files in place by renames: a run still reading the old ones keeps them whole.
fn an_upgrade_keeps_the_identity(sandbox: &Sandbox) {
    let worker = sandbox.identity_dir().join("worker.md");
    let mut mine = std::fs::read_to_string(&worker).unwrap();
    mine.push_str("\n- INSTALLED-LESSON: the identity of an install lives in the data directory\n");
    std::fs::write(&worker, &mine).unwrap();
    let home = sandbox.prefix().join("lib/harness");
    let inodes = || ["run.sh", "bin/worker"].map(|file| home.join(file).metadata().unwrap().ino());
    let before = inodes();
    assert_success(&sandbox.make("install"), "make install (upgrade)");
    assert_eq!(std::fs::read_to_string(&worker).unwrap(), mine);
    let after = inodes();
    assert!(
        before.iter().zip(&after).all(|(old, new)| old != new),
        "rewritten in place"
    );
}

/// `harness --version`: the version, and the commit of the checkout it was built from.
fn version_names_a_commit_of_the_checkout(sandbox: &Sandbox, dir: &Path) {
    let out = sandbox.harness(dir, &["--version"]);
    assert_success(&out, "harness --version");
    let version = text(&out.stdout);
    let expected = format!("harness {} (commit ", env!("CARGO_PKG_VERSION"));
    let hash = version
        .strip_prefix(&expected)
        .and_then(|rest| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{version:?}"));
    let object = Command::new("git")
        .arg("-C")
        .arg(repo_root())
        .args(["cat-file", "-e", &format!("{hash}^{{commit}}")])
        .status()
        .unwrap();
    assert!(object.success(), "{hash} is not a commit of the checkout");
}

#[test]
fn a_symlink_to_the_checkouts_run_sh_finds_the_checkout_and_its_identity() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("harness");
    std::os::unix::fs::symlink(repo_root().join("run.sh"), &link).unwrap();
    let out = Command::new(&link)
        .arg("help")
        .current_dir(dir.path())
        .env("HARNESS_BIN_DIR", bin_dir())
        .env_remove("HARNESS_HOME")
        .env_remove("HARNESS_IDENTITY_DIR")
        .output()
        .unwrap();
    assert_success(&out, "help through a link to run.sh");
    let help = text(&out.stdout);
    let home = repo_root().canonicalize().unwrap();
    assert!(
        help.contains(&format!("install:  {}\n", home.display())),
        "{help}"
    );
    let identity = format!(
        "identity: {} (the checkout's own identity/)",
        home.join("identity").display()
    );
    assert!(help.contains(&identity), "{help}");
}
