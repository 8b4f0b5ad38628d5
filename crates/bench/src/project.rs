//! Temporary projects for the benchmarks, and the commands that drive the harness on them the way
//! a user does (run.sh, the curator binary), with nothing written outside the temporary directory.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use harness_core::spec::features::FeatureId;
use harness_core::state::run_state::RunState;

/// Where the harness is: run.sh and roles/ (`home`), and the built binaries (`bin_dir`).
#[derive(Debug, Clone)]
pub struct Harness {
    /// The harness install (the repository: run.sh, roles/).
    pub home: PathBuf,
    /// The release binaries (worker, validator, planner, curator).
    pub bin_dir: PathBuf,
    /// Where temporary projects go.
    pub scratch: PathBuf,
}

impl Harness {
    /// The binary `name` of the harness.
    pub fn binary(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// Checks that run.sh and the binaries the benchmarks need are there.
    pub fn check(&self, binaries: &[&str]) -> anyhow::Result<()> {
        let run_sh = self.home.join("run.sh");
        if !run_sh.is_file() {
            bail!("no run.sh in {} (set --harness-home)", self.home.display());
        }
        for name in binaries {
            let path = self.binary(name);
            if !path.is_file() {
                bail!(
                    "{} is not built\nhint: run `cargo build --release --workspace --bins` (what `make bench` does)",
                    path.display()
                );
            }
        }
        Ok(())
    }
}

/// A temporary directory holding a project (`workdir`), its identity directory and the agent
/// scripts; removed when dropped.
pub struct Project {
    root: tempfile::TempDir,
    /// The project (the agent's working directory); `.harness/` is inside it.
    pub workdir: PathBuf,
    harness: Harness,
}

impl Project {
    /// An empty project directory, with `./run.sh init` run in it; a git repository with one
    /// commit when `git` is true.
    pub fn new(harness: &Harness, git: bool) -> anyhow::Result<Self> {
        let root = tempfile::Builder::new()
            .prefix("harness-bench-")
            .tempdir_in(&harness.scratch)
            .context("cannot create a temporary directory")?;
        let workdir = root.path().join("project");
        std::fs::create_dir_all(&workdir)?;
        std::fs::create_dir_all(root.path().join("identity"))?;
        let project = Self {
            root,
            workdir,
            harness: harness.clone(),
        };
        if git {
            project.git(&["init", "-q"])?;
            project.git(&["commit", "-q", "--allow-empty", "-m", "start"])?;
        }
        let out = project.run_sh(&["init"]).output()?;
        if !out.status.success() {
            bail!(
                "./run.sh init failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(project)
    }

    /// The temporary directory (beside the project).
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

    /// Writes `name` under `.harness/`.
    pub fn write_state(&self, name: &str, text: &str) -> anyhow::Result<()> {
        let path = self.state_dir().join(name);
        std::fs::create_dir_all(path.parent().expect("a file under .harness"))?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Writes an executable shell script beside the project; returns its path.
    pub fn script(&self, name: &str, text: &str) -> anyhow::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.root().join(name);
        std::fs::write(&path, text)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(path)
    }

    /// config.yaml running `agent` (prompt on stdin, plain text), with `extra` top-level lines.
    pub fn config(&self, agent: &Path, extra: &str) -> anyhow::Result<()> {
        self.write_state(
            "config.yaml",
            &format!(
                "agent:\n  command: [{:?}]\n  prompt_via: stdin\n  output_format: text\n{extra}",
                agent.display().to_string()
            ),
        )
    }

    /// `run.sh -C <project> <args>` with a clean harness environment and a temporary identity
    /// directory; stdin closed, stdout discarded, stderr captured by `.output()` callers.
    pub fn run_sh(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.harness.home.join("run.sh"));
        command.arg("-C").arg(&self.workdir).args(args);
        self.environment(&mut command);
        command
    }

    /// The `curator` binary on the project with `args`.
    pub fn curator(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.harness.binary("curator"));
        command.arg("-C").arg(&self.workdir).args(args);
        self.environment(&mut command);
        command
    }

    fn environment(&self, command: &mut Command) {
        command
            .env("HARNESS_HOME", &self.harness.home)
            .env("HARNESS_BIN_DIR", &self.harness.bin_dir)
            .env("HARNESS_IDENTITY_DIR", self.identity_dir())
            .env("NO_COLOR", "1")
            .env_remove("HARNESS_FEATURE_ID")
            .env_remove("HARNESS_RUN_ID")
            .env_remove("HARNESS_WORKDIR")
            .env_remove("HARNESS_STATE_DIR")
            .env_remove("HARNESS_FEATURE_LOCK_PID")
            .env_remove("HARNESS_PROMPT_FILE")
            .stdin(Stdio::null());
    }

    /// Runs git in the project (with an author, so commits work anywhere).
    pub fn git(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.workdir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
            .stdin(Stdio::null())
            .output()
            .context("cannot run git")?;
        if !out.status.success() {
            bail!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The feature's run state as the harness reads it: state.json and every attempt (most of
    /// them in attempts.jsonl beside it).
    pub fn run_state(&self, feature: &str) -> anyhow::Result<RunState> {
        let id = FeatureId::parse(feature)?;
        let path = self
            .state_dir()
            .join("runs")
            .join(feature)
            .join("state.json");
        RunState::load(&path, &id)?.with_context(|| format!("no run state at {}", path.display()))
    }
}

/// Copies the directory tree `from` to `to` (files and directories only), for fresh copies of a
/// prepared state.
pub fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The CPU time (user + system) of every child process waited for so far, their own children
/// included: the difference around a command is the CPU it took, however busy the machine.
pub fn children_cpu() -> Duration {
    // SAFETY: rusage is plain data, and getrusage fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Runs `command` to its end with stdout and stderr discarded; returns the wall time and status.
pub fn time_quietly(command: &mut Command) -> anyhow::Result<(Duration, ExitStatus)> {
    let started = Instant::now();
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("cannot start the command")?;
    Ok((started.elapsed(), status))
}

/// Runs `command` to its end; an error with its stderr unless it exits with one of `expected`.
pub fn run_expecting(command: &mut Command, expected: &[i32]) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let out = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("cannot start the command")?;
    let elapsed = started.elapsed();
    match out.status.code() {
        Some(code) if expected.contains(&code) => Ok(elapsed),
        _ => bail!(
            "{:?} ended with {} (expected exit {:?}):\n{}",
            command.get_program(),
            out.status,
            expected,
            tail(&String::from_utf8_lossy(&out.stderr), 2000)
        ),
    }
}

/// The last `count` bytes of `text` (on a character boundary).
pub fn tail(text: &str, count: usize) -> &str {
    let mut start = text.len().saturating_sub(count);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
