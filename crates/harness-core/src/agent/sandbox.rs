//! The sandbox around an agent (and anything else started through [`super::Enclosure`]): the
//! command line that runs a program inside it. Under `bwrap` the program sees the whole file
//! system read-only; it may write only its working directory, a private `/tmp` and `/var/tmp`,
//! the CLI's own state (its preset's [`Preset::sandbox_writable`]) and `sandbox.writable`;
//! `.harness/` stays read-only (it reads its prompt there, and can touch no state, memory, notes
//! or lock); it has its own PID namespace and session, dies with the harness, gains no privilege,
//! and without `network` has no network but its own loopback.
//!
//! Git: a commit must write the repository's metadata. For the project's own repository (the
//! working directory holds `.git/`), `.git/` is writable with the tree, but for `config` and
//! `hooks/`, which stay read-only: an agent could otherwise plant a hook or a command
//! (`core.fsmonitor`…) that the harness's own git would run outside the sandbox. For a worktree
//! (`--parallel`), writable are its own metadata (`.git/worktrees/<F>`), the object store and the
//! directory of its branch's ref; the links between the two (`commondir`, `gitdir`, the tree's
//! `.git` file) stay read-only.
//!
//! Another kind (a container runtime) is another arm of [`Sandbox::wrap`]: `podman run --rm
//! -v <workdir>:<workdir> -v <state>:<state>:ro -w <workdir> [--network none] IMAGE argv…`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use crate::base::error::InputError;
use crate::base::git;
use crate::spec::config::{SandboxConfig, SandboxKind};
use crate::spec::presets::Preset;

/// The hint for a machine without bubblewrap.
pub const INSTALL_HINT: &str =
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), or set sandbox: none";

/// One mount of the sandbox's file system, in the order made (a deeper path after its parent).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mount {
    /// The whole file system, read-only.
    Root,
    Dev,
    Proc,
    /// A private, empty, writable directory.
    Tmpfs(PathBuf),
    ReadOnly(PathBuf),
    Writable(PathBuf),
}

impl Mount {
    fn path(&self) -> &Path {
        match self {
            Mount::Root => Path::new("/"),
            Mount::Dev => Path::new("/dev"),
            Mount::Proc => Path::new("/proc"),
            Mount::Tmpfs(path) | Mount::ReadOnly(path) | Mount::Writable(path) => path,
        }
    }

    fn args(&self) -> Vec<String> {
        let path = self.path().display().to_string();
        match self {
            Mount::Root => vec!["--ro-bind".into(), "/".into(), "/".into()],
            Mount::Dev => vec!["--dev".into(), path],
            Mount::Proc => vec!["--proc".into(), path],
            Mount::Tmpfs(_) => vec!["--tmpfs".into(), path],
            Mount::ReadOnly(_) => vec!["--ro-bind".into(), path.clone(), path],
            Mount::Writable(_) => vec!["--bind".into(), path.clone(), path],
        }
    }
}

/// A resolved sandbox: the program that makes it and what it mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    kind: SandboxKind,
    program: PathBuf,
    network: bool,
    mounts: Vec<Mount>,
}

/// Where the sandbox is made around.
#[derive(Debug, Clone, Copy)]
pub struct Places<'a> {
    /// The working directory (the project, or the feature's worktree).
    pub workdir: &'a Path,
    /// `.harness/`.
    pub state_dir: &'a Path,
    /// config.yaml, named in errors.
    pub config: &'a Path,
    /// `PATH`, to find the sandbox's program.
    pub path_var: Option<&'a std::ffi::OsStr>,
}

impl Sandbox {
    /// The sandbox `config` asks for around an agent of `preset` working in `places`; `None` for
    /// `sandbox: none`. A sandbox that cannot be made here (bubblewrap missing, no namespaces)
    /// is an input error naming config.yaml: the run never goes on unsandboxed.
    pub fn new(
        config: &SandboxConfig,
        preset: Option<Preset>,
        places: Places,
    ) -> Result<Option<Self>, InputError> {
        if config.kind == SandboxKind::None {
            return Ok(None);
        }
        let program = find_bwrap(places)?;
        probe(&program, config.network).map_err(|problem| {
            InputError::in_file(places.config, format!("sandbox: bwrap: {problem}")).with_hint(
                "bubblewrap needs user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu, an AppArmor profile for bwrap), or run as root; else set sandbox: none",
            )
        })?;
        let writable = writable_paths(config, preset, places.config)?;
        let git = GitLayout::of(places.workdir);
        Ok(Some(Self {
            kind: config.kind,
            program,
            network: config.network,
            mounts: mounts(places.workdir, places.state_dir, &writable, &git),
        }))
    }

    /// The argv that runs `argv` in the sandbox, in `workdir`, with `variables` set inside only.
    pub fn wrap(&self, argv: &[String], workdir: &Path, variables: &[(&str, &str)]) -> Vec<String> {
        match self.kind {
            SandboxKind::None => argv.to_vec(),
            SandboxKind::Bwrap => {
                let mut line = vec![self.program.display().to_string()];
                line.extend(self.mounts.iter().flat_map(Mount::args));
                line.extend(
                    [
                        "--unshare-pid",
                        "--unshare-ipc",
                        "--die-with-parent",
                        "--new-session",
                    ]
                    .map(String::from),
                );
                if !self.network {
                    line.push("--unshare-net".into());
                }
                line.extend(["--chdir".into(), workdir.display().to_string()]);
                // The private /tmp is the only temporary directory there is.
                let tmpdir = [("TMPDIR", "/tmp")];
                for (name, value) in tmpdir.iter().chain(variables) {
                    line.extend(["--setenv".into(), name.to_string(), value.to_string()]);
                }
                line.push("--".into());
                line.extend(argv.iter().cloned());
                line
            }
        }
    }

    /// How the program's end shows through the sandbox: bwrap exits 128 + N for a program killed
    /// by signal N, which is taken back for the signal.
    pub fn signal_of_exit(&self, code: i32) -> Option<i32> {
        (self.kind == SandboxKind::Bwrap && code > 128 && code < 128 + 65).then_some(code - 128)
    }
}

fn find_bwrap(places: Places) -> Result<PathBuf, InputError> {
    super::resolve_program("bwrap", places.workdir, places.path_var, places.config).map_err(|_| {
        InputError::in_file(
            places.config,
            "sandbox: bwrap: bubblewrap (bwrap) is not installed, and the agent never runs unsandboxed when a sandbox is asked for",
        )
        .with_hint(INSTALL_HINT)
    })
}

/// Tries bwrap once per program and network setting in this process: `Err` with what it said
/// when it cannot make the namespaces.
fn probe(program: &Path, network: bool) -> Result<(), String> {
    /// A program, a network setting, and what trying it gave.
    type Probe = (PathBuf, bool, Result<(), String>);
    static PROBED: Mutex<Vec<Probe>> = Mutex::new(Vec::new());
    let mut probed = PROBED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, _, result)) = probed
        .iter()
        .find(|(known, net, _)| known == program && *net == network)
    {
        return result.clone();
    }
    let mut command = Command::new(program);
    command.args(["--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent"]);
    if !network {
        command.arg("--unshare-net");
    }
    let result = match command
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(String::from_utf8_lossy(&output.stderr)
            .lines()
            .next()
            .unwrap_or("it failed")
            .trim_start_matches("bwrap: ")
            .to_string()),
        Err(error) => Err(error.to_string()),
    };
    probed.push((program.to_path_buf(), network, result.clone()));
    result
}

/// The paths the agent may write besides its working directory and `/tmp`: its preset's (the
/// missing directories made, the missing files left out) and `sandbox.writable` (each must
/// exist).
fn writable_paths(
    config: &SandboxConfig,
    preset: Option<Preset>,
    config_path: &Path,
) -> Result<Vec<PathBuf>, InputError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let expand = |path: &str| -> Result<PathBuf, InputError> {
        match path.strip_prefix('~') {
            Some(rest) => home
                .as_ref()
                .map(|home| home.join(rest.trim_start_matches('/')))
                .ok_or_else(|| {
                    InputError::in_file(
                        config_path,
                        format!("sandbox: {path} names the home directory, but HOME is not set"),
                    )
                }),
            None => Ok(PathBuf::from(path)),
        }
    };
    let mut paths = Vec::new();
    for entry in preset.map(Preset::sandbox_writable).unwrap_or_default() {
        let path = expand(entry)?;
        if entry.ends_with('/') {
            // The CLI would make it on its first run; inside the sandbox it no longer can.
            let _ = std::fs::create_dir_all(&path);
        }
        if path.exists() {
            paths.push(path);
        }
    }
    for entry in &config.writable {
        let path = expand(entry)?;
        if !path.exists() {
            return Err(InputError::in_file(
                config_path,
                format!("sandbox: writable path {} does not exist", path.display()),
            )
            .with_hint("create it first (mkdir -p, or touch for a file), or remove it from sandbox.writable"));
        }
        paths.push(path);
    }
    Ok(paths)
}

/// Where the working directory's git metadata is, as far as a commit from inside needs it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct GitLayout {
    /// Made writable (besides the working directory): what a commit writes.
    writable: Vec<PathBuf>,
    /// Kept read-only on top: what would let an agent run code outside, or redirect git.
    read_only: Vec<PathBuf>,
}

impl GitLayout {
    /// Reads where the metadata of the repository or worktree holding `workdir` is.
    fn of(workdir: &Path) -> Self {
        let Ok(found) = git::run(
            workdir,
            &[
                "rev-parse",
                "--git-dir",
                "--git-common-dir",
                "--show-toplevel",
            ],
        ) else {
            return Self::default();
        };
        let mut lines = found.lines().map(|line| workdir.join(line));
        let (Some(git_dir), Some(common), Some(top)) = (lines.next(), lines.next(), lines.next())
        else {
            return Self::default();
        };
        let existing = |paths: Vec<PathBuf>| paths.into_iter().filter(|p| p.exists()).collect();
        if git::stale::canonical(&git_dir) == git::stale::canonical(&common) {
            return Self {
                writable: vec![git_dir.clone()],
                read_only: existing(vec![git_dir.join("config"), git_dir.join("hooks")]),
            };
        }
        let mut writable = vec![git_dir.clone(), common.join("objects")];
        // The directory of the branch's ref and of its log: a ref is written through a lock file
        // beside it.
        let head = std::fs::read_to_string(git_dir.join("HEAD")).unwrap_or_default();
        if let Some(branch) = head.trim().strip_prefix("ref: ") {
            if let Some(parent) = Path::new(branch).parent() {
                for dir in [common.join(parent), common.join("logs").join(parent)] {
                    let _ = std::fs::create_dir_all(&dir);
                    writable.push(dir);
                }
            }
        }
        Self {
            writable: existing(writable),
            read_only: existing(vec![
                git_dir.join("commondir"),
                git_dir.join("gitdir"),
                top.join(".git"),
            ]),
        }
    }
}

/// The sandbox's mounts, parents before children: the whole file system read-only, fresh `/dev`,
/// `/proc`, `/tmp` and `/var/tmp`; writable the working directory, `writable` and git's part;
/// read-only again the state directory (the worktree inside it writable again) and git's control
/// files.
fn mounts(workdir: &Path, state_dir: &Path, writable: &[PathBuf], git: &GitLayout) -> Vec<Mount> {
    let mut mounts = vec![
        Mount::Root,
        Mount::Dev,
        Mount::Proc,
        Mount::Tmpfs("/tmp".into()),
        Mount::Tmpfs("/var/tmp".into()),
    ];
    mounts.extend(writable.iter().cloned().map(Mount::Writable));
    mounts.extend(git.writable.iter().cloned().map(Mount::Writable));
    mounts.push(Mount::Writable(workdir.to_path_buf()));
    mounts.push(Mount::ReadOnly(state_dir.to_path_buf()));
    mounts.extend(git.read_only.iter().cloned().map(Mount::ReadOnly));
    // The same path twice is mounted once, as the later says; a deeper mount goes on top of the
    // shallower one it lies in.
    let mut unique: Vec<Mount> = Vec::new();
    for mount in mounts {
        unique.retain(|earlier| earlier.path() != mount.path());
        unique.push(mount);
    }
    unique.sort_by_key(|mount| mount.path().components().count());
    unique
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(mounts: &[Mount]) -> String {
        mounts
            .iter()
            .flat_map(Mount::args)
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_state_is_read_only_over_the_project_and_a_worktree_in_it_writable_again() {
        let state = Path::new("/p/.harness");
        let project = mounts(Path::new("/p"), state, &[], &GitLayout::default());
        assert_eq!(
            line(&project),
            "--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind /p /p --tmpfs /var/tmp --ro-bind /p/.harness /p/.harness"
        );
        let worktree = Path::new("/p/.harness/worktrees/F-001");
        let git = GitLayout {
            writable: vec!["/p/.git/worktrees/F-001".into(), "/p/.git/objects".into()],
            read_only: vec![
                "/p/.git/worktrees/F-001/commondir".into(),
                "/p/.harness/worktrees/F-001/.git".into(),
            ],
        };
        let text = line(&mounts(worktree, state, &["/home/u/.claude".into()], &git));
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle}: {text}"))
        };
        assert!(at("--ro-bind /p/.harness ") < at("--bind /p/.harness/worktrees/F-001 "));
        assert!(
            at("--bind /p/.harness/worktrees/F-001 ")
                < at("--ro-bind /p/.harness/worktrees/F-001/.git")
        );
        assert!(
            at("--bind /p/.git/worktrees/F-001 ")
                < at("--ro-bind /p/.git/worktrees/F-001/commondir")
        );
        assert!(at("--tmpfs /tmp") < at("--bind /home/u/.claude"));
        assert!(
            !text.contains("--bind /p "),
            "the main tree stays read-only: {text}"
        );
    }

    #[test]
    fn the_same_path_twice_is_mounted_once_as_the_later_says() {
        let text = line(&mounts(
            Path::new("/p"),
            Path::new("/p"),
            &[],
            &GitLayout::default(),
        ));
        assert!(text.contains("--ro-bind /p /p"), "{text}");
        assert_eq!(text.matches(" /p /p").count(), 1, "{text}");
    }

    #[test]
    fn the_command_line_has_its_namespaces_and_cuts_the_network_only_when_asked() {
        let sandbox = |network| Sandbox {
            kind: SandboxKind::Bwrap,
            program: "/usr/bin/bwrap".into(),
            network,
            mounts: vec![Mount::Root],
        };
        let argv = ["agent".to_string(), "-p".to_string()];
        let wrapped = sandbox(true).wrap(&argv, Path::new("/p"), &[("HARNESS_OWNER", "1:2:3:/p")]);
        let text = wrapped.join(" ");
        assert!(
            text.starts_with("/usr/bin/bwrap --ro-bind / / --unshare-pid"),
            "{text}"
        );
        for flag in [
            "--die-with-parent",
            "--new-session",
            "--chdir /p",
            "--setenv HARNESS_OWNER 1:2:3:/p",
        ] {
            assert!(text.contains(flag), "{flag}: {text}");
        }
        assert!(text.ends_with("-- agent -p"), "{text}");
        assert!(!text.contains("--unshare-net"));
        assert!(sandbox(false)
            .wrap(&argv, Path::new("/p"), &[])
            .contains(&"--unshare-net".to_string()));
        assert_eq!(sandbox(true).signal_of_exit(143), Some(15));
        assert_eq!(sandbox(true).signal_of_exit(3), None);
    }
}
