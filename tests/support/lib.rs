//! Test support for the end-to-end tests: a temporary project with a `.harness/`, a scenario for
//! the scripted agent, and helpers that run `run.sh` and read back what it left on disk. Nothing is
//! ever written into the repository: projects and the identity directory are temporary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The repository root (where run.sh is).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// The directory of the built binaries (`target/debug`), checked against cargo's own record of
/// their sources (the `.d` files beside them), so a test never passes against a stale build.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf();
    for name in [
        "worker",
        "validator",
        "planner",
        "curator",
        "scripted-agent",
    ] {
        let binary = dir.join(name);
        let built = std::fs::metadata(&binary)
            .and_then(|m| m.modified())
            .unwrap_or_else(|_| {
                panic!(
                    "{} is not built: run `make test` (or `cargo build --workspace` first)",
                    binary.display()
                )
            });
        if let Some(source) = newer_source(&dir.join(format!("{name}.d")), built) {
            panic!(
                "{} is older than {}: run `make test` (or `cargo build --workspace` first)",
                binary.display(),
                source.display()
            );
        }
    }
    dir
}

/// A source listed in the dep-info file `deps` that changed after `built`, if any.
fn newer_source(deps: &Path, built: SystemTime) -> Option<PathBuf> {
    let text = std::fs::read_to_string(deps).ok()?;
    let (_, sources) = text.lines().next()?.split_once(": ")?;
    // Paths are separated by spaces; a space inside a path is escaped as `\ `.
    let escaped = sources.replace("\\ ", "\u{0}");
    escaped
        .split(' ')
        .filter(|path| !path.is_empty())
        .map(|path| PathBuf::from(path.replace('\u{0}', " ")))
        .find(|path| {
            std::fs::metadata(path)
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified > built)
        })
}

/// A temporary project, initialised with `./run.sh init`, inside a git repository with one commit.
pub struct Project {
    root: tempfile::TempDir,
    /// The project directory (the agent's working directory).
    pub workdir: PathBuf,
}

impl Project {
    /// A new project with the given features.yaml and scenario, and a config running the
    /// scripted agent with `agent_extra` added under `agent:` and `top_extra` at the top level.
    pub fn new(features: &str, scenario: &str) -> Self {
        Self::new_in(&std::env::temp_dir(), features, scenario)
    }

    /// [`Project::new`] in a temporary directory under `base` (a sandbox hides the real `/tmp`).
    pub fn new_in(base: &Path, features: &str, scenario: &str) -> Self {
        let project = Self::bare_in(base);
        project.git(&["init", "-q"]);
        project.git(&["commit", "-q", "--allow-empty", "-m", "start"]);
        let out = project.run(&["init"]);
        assert!(out.status.success(), "init failed: {}", text(&out.stderr));
        project.write_state("features.yaml", features);
        project.scenario(scenario);
        project.config("", "");
        project
    }

    /// A temporary directory with an empty project directory and nothing else.
    pub fn bare() -> Self {
        Self::bare_in(&std::env::temp_dir())
    }

    /// [`Project::bare`] under `base`.
    pub fn bare_in(base: &Path) -> Self {
        std::fs::create_dir_all(base).unwrap();
        let root = tempfile::tempdir_in(base).expect("tempdir");
        let workdir = root.path().join("project");
        std::fs::create_dir_all(&workdir).unwrap();
        std::fs::create_dir_all(root.path().join("identity")).unwrap();
        Self { root, workdir }
    }

    /// The temporary directory holding the project, the scenario and the identity directory.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `.harness/`.
    pub fn state_dir(&self) -> PathBuf {
        self.workdir.join(".harness")
    }

    /// The temporary identity directory (HARNESS_IDENTITY_DIR).
    pub fn identity_dir(&self) -> PathBuf {
        self.root().join("identity")
    }

    /// Replaces the scenario the scripted agent plays (its positions start again).
    pub fn scenario(&self, scenario: &str) {
        std::fs::write(self.root().join("scenario.yaml"), scenario).unwrap();
        let _ = std::fs::remove_dir_all(self.root().join("agent-state"));
    }

    /// Rewrites config.yaml: the scripted agent, plus extra lines under `agent:` and at the top.
    /// The validator is off unless `top_extra` sets `validate:` (the worker's tests are about
    /// the worker; the validator's tests turn it on).
    pub fn config(&self, agent_extra: &str, top_extra: &str) {
        let top_extra = if top_extra.contains("validate:") {
            top_extra.to_string()
        } else {
            format!("validate: false\n{top_extra}")
        };
        let agent = bin_dir().join("scripted-agent");
        let config = format!(
            "agent:\n  command: [{:?}, \"--scenario\", {:?}, \"--state-dir\", {:?}]\n{}{}",
            agent.display().to_string(),
            self.root().join("scenario.yaml").display().to_string(),
            self.root().join("agent-state").display().to_string(),
            indent(agent_extra),
            top_extra
        );
        self.write_state("config.yaml", &config);
    }

    /// Makes the agent a shell script: `body` after a line that reads the prompt; the validator
    /// and the stall guardrail off.
    pub fn shell_agent(&self, body: &str) {
        let script = self.root().join("agent.sh");
        std::fs::write(&script, format!("#!/bin/sh\ncat >/dev/null\n{body}\n")).unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        self.write_state(
            "config.yaml",
            &format!(
                "agent:\n  command: [{:?}]\nvalidate: false\nstall_iterations: 0\n",
                script.display().to_string()
            ),
        );
    }

    /// Writes a file under `.harness/`.
    pub fn write_state(&self, name: &str, text: &str) {
        let path = self.state_dir().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Reads a file under `.harness/` (empty if missing).
    pub fn read_state(&self, name: &str) -> String {
        std::fs::read_to_string(self.state_dir().join(name)).unwrap_or_default()
    }

    /// `program` with the test environment: the temporary identity directory, and none of the
    /// `HARNESS_*` variables of an enclosing run.
    fn harness_command(&self, program: PathBuf) -> Command {
        let mut command = Command::new(program);
        command
            .env("HARNESS_IDENTITY_DIR", self.identity_dir())
            .env_remove("HARNESS_FEATURE_ID")
            .env_remove("HARNESS_RUN_ID")
            .env_remove("HARNESS_WORKDIR")
            .env_remove("HARNESS_STATE_DIR")
            .env_remove("HARNESS_FEATURE_LOCK_PID")
            .stdin(Stdio::null());
        command
    }

    /// The command that runs `run.sh -C <project> <args>` with the test environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = self.harness_command(repo_root().join("run.sh"));
        command
            .arg("-C")
            .arg(&self.workdir)
            .args(args)
            .env("HARNESS_BIN_DIR", bin_dir())
            .env_remove("HARNESS_HOME");
        command
    }

    /// Runs `run.sh -C <project> <args>` to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run.sh starts")
    }

    /// Runs the role binary `name` with `args` (its subcommand and flags) then `-C <project>`,
    /// with the test environment, to its end. HARNESS_HOME is the repository (for roles/).
    pub fn role(&self, name: &str, args: &[&str]) -> Output {
        let mut command = self.harness_command(bin_dir().join(name));
        command
            .args(args)
            .arg("-C")
            .arg(&self.workdir)
            .env("HARNESS_HOME", repo_root());
        command
            .output()
            .unwrap_or_else(|e| panic!("{name} does not start: {e}"))
    }

    /// [`Project::role`] for the worker.
    pub fn worker(&self, args: &[&str]) -> Output {
        self.role("worker", args)
    }

    /// [`Project::role`] for the planner.
    pub fn planner(&self, args: &[&str]) -> Output {
        self.role("planner", args)
    }

    /// The command that runs the `curator` binary with `-C <project>` and `args`, in the test
    /// environment (HARNESS_HOME is the repository, for roles/).
    pub fn curator_command(&self, args: &[&str]) -> Command {
        let mut command = self.harness_command(bin_dir().join("curator"));
        command
            .arg("-C")
            .arg(&self.workdir)
            .args(args)
            .env("HARNESS_HOME", repo_root());
        command
    }

    /// Runs the `curator` binary on the project with `args`, to its end.
    pub fn curator(&self, args: &[&str]) -> Output {
        self.curator_command(args).output().expect("curator starts")
    }

    /// Runs git in the project.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.workdir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "test")
            .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
            .env("GIT_COMMITTER_NAME", "test")
            .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    }

    /// The feature's run state as the harness reads it, as JSON: state.json with every attempt
    /// (most of them are in attempts.jsonl beside it).
    pub fn state(&self, feature: &str) -> serde_json::Value {
        let text = self.read_state(&format!("runs/{feature}/state.json"));
        let mut json: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("state.json of {feature}: {e}\n{text}"));
        let id = harness_core::spec::features::FeatureId::parse(feature).unwrap();
        let path = self
            .state_dir()
            .join("runs")
            .join(feature)
            .join("state.json");
        let state = harness_core::state::run_state::RunState::load(&path, &id)
            .unwrap_or_else(|e| panic!("the run state of {feature}: {e}"))
            .unwrap_or_else(|| panic!("no run state of {feature}"));
        json["attempts"] = serde_json::to_value(state.attempts()).unwrap();
        json
    }

    /// The role and outcome of each of the feature's attempts, oldest first.
    pub fn attempts(&self, feature: &str) -> Vec<(String, String)> {
        self.state(feature)["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["role"].as_str().unwrap().to_string(),
                    a["outcome"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// What is left in `.harness/worktrees/` (nothing, once every feature run in a worktree is
    /// merged).
    pub fn worktree_dirs(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.state_dir().join("worktrees"))
            .map(|dir| dir.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    /// The feature's run directories, oldest first.
    pub fn run_dirs(&self, feature: &str) -> Vec<PathBuf> {
        let state = self.state(feature);
        state["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                self.state_dir()
                    .join("runs")
                    .join(feature)
                    .join(a["run_id"].as_str().unwrap())
            })
            .collect()
    }

    /// The prompt of the feature's `n`th attempt (1-based).
    pub fn prompt(&self, feature: &str, n: usize) -> String {
        std::fs::read_to_string(self.run_dirs(feature)[n - 1].join("prompt.md")).unwrap()
    }

    /// What interrupted or failed writes may leave under `.harness/`: temp files
    /// (`.<name>.tmp.…`, `.<name>.swap.…`) and versions kept beside a file (`<name>.edited.…`).
    /// None may be there once a run or a pass is over.
    pub fn leftovers(&self) -> Vec<PathBuf> {
        walkdir::WalkDir::new(self.state_dir())
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| {
                let name = e.file_name().to_string_lossy();
                [".tmp.", ".swap.", ".edited."]
                    .iter()
                    .any(|mark| name.contains(mark))
            })
            .map(|e| e.path().to_path_buf())
            .collect()
    }

    /// A snapshot of every file under `.harness/` except lock files and report.html: path and
    /// bytes. The report is a view that every run writes anew, with the time it was generated.
    pub fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let report = self.state_dir().join("report.html");
        let mut files: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(self.state_dir())
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .filter(|e| !e.path().starts_with(self.state_dir().join("locks")))
            .filter(|e| e.path() != report)
            .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
            .collect();
        files.sort();
        files
    }
}

/// Writes an executable script (a stand-in agent or command) at `path`.
pub fn write_executable(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// Waits (bounded) until `path` exists: a scripted agent writes it when its step has begun.
pub fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `(role, outcome)` pairs as [`Project::attempts`] gives them, from string slices.
pub fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(role, outcome)| (role.to_string(), outcome.to_string()))
        .collect()
}

/// Output bytes as text.
/// The JSON values of `text`, one a line (a hook's payloads, `hooks/runs.jsonl`).
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The exit code, or a panic naming the signal.
pub fn code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("killed by a signal: {:?}", out.status))
}

fn indent(lines: &str) -> String {
    lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("  {l}\n"))
        .collect()
}

/// Waits until `ready` holds, failing with `what` past a minute (a generous bound for a loaded
/// machine: a wait, never a timing that is asserted).
pub fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` at most `limit`; kills it and fails if it is still running then.
pub fn wait_at_most(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let left = process_tree(child.id());
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}; its processes then:\n{left}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `pid` and the processes descended from it, one a line (pid, state, command line): what a
/// test that waited in vain saw still running, to tell where it hung.
fn process_tree(pid: u32) -> String {
    let mut processes: Vec<(u32, u32, String)> = Vec::new();
    for (me, dir) in proc_entries() {
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid …": the command may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let Some(parent) = fields.get(1).and_then(|p| p.parse().ok()) else {
            continue;
        };
        let me = me as u32;
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let args = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let state = fields.first().copied().unwrap_or("?");
        processes.push((me, parent, format!("{me} {state} {}", args.trim())));
    }
    let mut shown = Vec::new();
    let mut next = vec![pid];
    while let Some(at) = next.pop() {
        for (me, parent, line) in &processes {
            if *me == at {
                shown.push(line.clone());
            }
            if *parent == at {
                next.push(*me);
            }
        }
    }
    shown.join("\n")
}

/// Whether process `pid` exists.
pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// The processes `/proc` shows: each one's pid and its directory there.
pub fn proc_entries() -> Vec<(i32, std::path::PathBuf)> {
    let entries = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    entries
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<i32>().ok()?;
            Some((pid, entry.path()))
        })
        .collect()
}

/// Pids of live processes whose command line (arguments joined by spaces) contains `needle`.
pub fn processes_matching(needle: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for (pid, dir) in proc_entries() {
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let cmdline = text(&cmdline).replace('\0', " ");
        // A zombie has an empty command line; it no longer runs anything.
        if cmdline.contains(needle) && pid as u32 != std::process::id() {
            pids.push(pid);
        }
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A wait in vain says what was still running, the child's own children included.
    #[test]
    fn a_wait_in_vain_names_the_processes_still_running() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 37 & exec sleep 38"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = child.id() as i32;
        std::thread::sleep(Duration::from_millis(200));
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wait_at_most(&mut child, Duration::from_millis(100))
        }));
        // SAFETY: ends the process group this test made (the background sleep).
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let panic = waited.expect_err("the child was still running");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("sleep 38"), "{message}");
        assert!(message.contains("sleep 37"), "{message}");
    }
}
