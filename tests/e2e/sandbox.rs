//! `sandbox: bwrap`: an agent may change its feature's tree and nothing else. The same attacking
//! agent runs unsandboxed first (each attack works: the probes are real), then sandboxed: every
//! attack fails, its work is committed and the feature completes. A machine without bubblewrap,
//! or where it cannot make namespaces, refuses the run with one line and the install hint.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use harness_tests::{code, processes_matching, text, wait_until, write_executable, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

/// Where the sandbox tests make their (temporary) projects: not under `/tmp`, which the sandbox
/// replaces by a private one (an agent script under it would be hidden), nor in the repository:
/// `~/.cache/harness-tests/projects`.
pub fn base() -> PathBuf {
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache/harness-tests/projects")
}

/// Whether bubblewrap runs here. `make test` installs it where it is missing; a machine where it
/// still cannot run says so, and fails under `CI=true` (never a silent skip).
pub fn bwrap_works() -> bool {
    let works = std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--unshare-pid", "--unshare-net"])
        .args(["--die-with-parent", "--", "true"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !works {
        let why = "bubblewrap (bwrap) is missing or cannot make namespaces here";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{why}: under CI=true this fails"
        );
        eprintln!("SKIPPED: {why} (make test installs it: apt-get install bubblewrap)");
    }
    works
}

/// What the agents' scripts begin with: a git identity, and `try NAME COMMAND`, which records in
/// results.txt `NAME: done` or `NAME: refused`.
const PRELUDE: &str = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid\n\
     try() { if sh -c \"$2\" 2>/dev/null; then echo \"$1: done\"; else echo \"$1: refused\"; fi >>results.txt; }\n";

/// A project for a sandbox test, where bubblewrap runs (see [`bwrap_works`]).
fn sandbox_project() -> Option<Project> {
    bwrap_works().then(|| Project::new_in(&base(), ONE_FEATURE, "steps: []\n"))
}

/// The attacks, each recorded in results.txt as `<name>: done` or `<name>: refused`.
const ATTACKS: &[(&str, &str)] = &[
    ("outside", "echo x > ../outside.txt"),
    ("state", "echo x >> .harness/runs/F-001/state.json"),
    ("raw", "echo x >> .harness/raw.md"),
    (
        "notes",
        "mkdir -p .harness/notes && echo x >> .harness/notes/F-001.md",
    ),
    ("locks", "touch .harness/locks/planted"),
    ("link", "ln -s /etc/passwd .harness/summary.md"),
    ("hook", "echo 'touch pwned' > .git/hooks/post-commit"),
    ("git-config", "git config core.fsmonitor 'touch pwned'"),
];

/// An agent that tries every attack, leaves a `setsid sleep <n>` behind, tries the network on
/// `port`; writes into `../allowed/` (a `sandbox.writable` path) and `/tmp/<probe>`, and records
/// its confinement (its `NoNewPrivs`, its PID namespace); then does its work (work.txt,
/// committed) and delivers the promise.
fn attacking_agent(project: &Project, n: u32, port: u16, sandbox: &str) {
    let mut body = String::from(PRELUDE);
    for (name, attack) in ATTACKS {
        body.push_str(&format!("try {name} {attack:?}\n"));
    }
    body.push_str(&format!(
        "try network 'bash -c \"echo hi >/dev/tcp/127.0.0.1/{port}\"'\n\
         setsid sleep {n} </dev/null >/dev/null 2>&1 &\n\
         echo y > ../allowed/y.txt; echo x > /tmp/{probe}\n\
         grep NoNewPrivs /proc/self/status > confinement.txt; readlink /proc/self/ns/pid >> confinement.txt\n\
         echo work > work.txt\n\
         git add work.txt results.txt confinement.txt && git commit -qm 'the work'\n\
         echo '<promise>TASK_COMPLETE</promise>'\n",
        probe = tmp_probe(n).file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(project.root().join("allowed")).unwrap();
    sandboxed_shell_agent(project, &body, sandbox);
}

/// The file agent `n` writes under `/tmp` (the host's, or the sandbox's private one).
fn tmp_probe(n: u32) -> PathBuf {
    PathBuf::from(format!(
        "/tmp/harness-sandbox-probe-{}-{n}",
        std::process::id()
    ))
}

/// The agent's `NoNewPrivs` line, and whether it ran in the test's own PID namespace.
fn confinement(project: &Project) -> (String, bool) {
    let text = std::fs::read_to_string(project.workdir.join("confinement.txt")).unwrap();
    let mut lines = text.lines();
    let no_new_privs = lines
        .next()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let own = std::fs::read_link("/proc/self/ns/pid").unwrap();
    (no_new_privs, lines.next() == Some(own.to_str().unwrap()))
}

/// Makes the agent the shell script `body` (see `Project::shell_agent`), run in `sandbox`.
fn sandboxed_shell_agent(project: &Project, body: &str, sandbox: &str) {
    project.shell_agent(body);
    let config = project.read_state("config.yaml");
    project.write_state("config.yaml", &format!("{config}sandbox: {sandbox}\n"));
}

fn results(project: &Project) -> String {
    std::fs::read_to_string(project.workdir.join("results.txt")).unwrap_or_default()
}

/// Whether anything connected to `listener` (which does not block).
fn connected(listener: &TcpListener) -> bool {
    listener.accept().is_ok()
}

fn listener() -> TcpListener {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    listener
}

#[test]
fn under_bwrap_every_attack_fails_and_the_work_is_committed() {
    // Unsandboxed, each attack works: what the sandboxed run shows refused is really refused.
    let Some(open) = sandbox_project() else {
        return;
    };
    let net = listener();
    attacking_agent(&open, 6401, net.local_addr().unwrap().port(), "none");
    open.run(&["F-001"]);
    let expected_done: String = ATTACKS
        .iter()
        .map(|(name, _)| format!("{name}: done\n"))
        .chain(["network: done\n".to_string()])
        .collect();
    assert_eq!(results(&open), expected_done);
    assert!(connected(&net));
    assert!(std::fs::remove_file(tmp_probe(6401)).is_ok());
    assert!(
        confinement(&open).1,
        "the probe of the PID namespace is real"
    );

    let project = Project::new_in(&base(), ONE_FEATURE, "steps: []\n");
    let net = listener();
    let port = net.local_addr().unwrap().port();
    let allowed = project.root().join("allowed");
    let sandbox = format!(
        "{{kind: bwrap, network: false, writable: [{:?}]}}",
        allowed.display().to_string()
    );
    attacking_agent(&project, 6402, port, &sandbox);
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");

    assert_eq!(
        results(&project),
        expected_done.replace(": done", ": refused")
    );
    assert!(!project.root().join("outside.txt").exists());
    assert_eq!(
        std::fs::read_to_string(allowed.join("y.txt")).unwrap(),
        "y\n"
    );
    assert!(!tmp_probe(6402).exists(), "the agent's /tmp was the host's");
    assert_eq!(confinement(&project), ("NoNewPrivs: 1".to_string(), false));
    assert!(!project.read_state("raw.md").lines().any(|line| line == "x"));
    assert!(!project.state_dir().join("locks/planted").exists());
    assert!(!project.state_dir().join("summary.md").is_symlink());
    assert!(!project.workdir.join(".git/hooks/post-commit").exists());
    assert!(!project.workdir.join("pwned").exists());
    assert!(
        !connected(&net),
        "the agent reached the network with network: false"
    );
    assert!(
        processes_matching("sleep 6402").is_empty(),
        "the setsid process survived"
    );
    let committed = project.git(&["show", "--stat", "--format=%s", "HEAD"]);
    assert!(
        committed.starts_with("the work") && committed.contains("work.txt"),
        "{committed}"
    );
}

/// A directory holding a link to every program of the system's `PATH` but bwrap (and `extra`).
fn path_without_bwrap(project: &Project, extra: &[(&str, &str)]) -> PathBuf {
    let bin = project.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let link = bin.join(&name);
            if name != "bwrap" && !link.exists() {
                let _ = std::os::unix::fs::symlink(entry.path(), link);
            }
        }
    }
    for (name, script) in extra {
        write_executable(&bin.join(name), script);
    }
    bin
}

/// Runs F-001 with `sandbox: bwrap` and `PATH` set to `bin`: refused, one line and a hint, no
/// attempt made.
fn refused(project: &Project, bin: &Path, expected: &str) {
    let out = project
        .command(&["F-001"])
        .env("PATH", bin)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    let error = stderr
        .lines()
        .find(|line| line.contains("sandbox"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains("config.yaml") && error.contains(expected),
        "{stderr}"
    );
    assert!(stderr.contains("hint:"), "{stderr}");
    assert!(
        !project.state_dir().join("runs/F-001/state.json").exists(),
        "an attempt was made: {stderr}"
    );
}

#[test]
fn without_bubblewrap_or_namespaces_the_run_refuses_to_start() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.config("", "sandbox: bwrap\n");
    let bin = path_without_bwrap(&project, &[]);
    refused(&project, &bin, "not installed");
    let out = project
        .command(&["F-001"])
        .env("PATH", &bin)
        .output()
        .unwrap();
    assert!(text(&out.stderr).contains("apt-get install bubblewrap"));

    let broken = "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n";
    let bin = path_without_bwrap(&project, &[("bwrap", broken)]);
    refused(&project, &bin, "No permissions to create a new namespace");
}

#[test]
fn explain_shows_the_sandbox_command_line() {
    let Some(project) = sandbox_project() else {
        return;
    };
    project.config("", "sandbox: {kind: bwrap, network: false}\n");
    let out = project.run(&["explain", "F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    let line = stderr
        .lines()
        .find(|line| line.starts_with("sandbox: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    let state_dir = project.state_dir().display().to_string();
    for part in [
        "bwrap --ro-bind / /",
        &format!("--ro-bind {state_dir} {state_dir}"),
        "--unshare-pid",
        "--die-with-parent",
        "--unshare-net",
        "scripted-agent",
    ] {
        assert!(line.contains(part), "{part}: {line}");
    }
    project.config("", "");
    let out = project.run(&["explain", "F-001"]);
    assert!(text(&out.stderr).contains("sandbox: none"));
}

/// Under `all --parallel`, the agent works in its feature's worktree inside `.harness/`: it may
/// commit there (git's metadata for it is writable), but not touch the main tree, the state
/// around its worktree, or git's links between the two; its work is merged.
#[test]
fn in_a_worktree_the_agent_commits_its_work_and_nothing_else() {
    let Some(project) = sandbox_project() else {
        return;
    };
    sandboxed_shell_agent(
        &project,
        &format!(
            "{PRELUDE}try main-tree 'echo x > \"$HARNESS_STATE_DIR/../main.txt\"'\n\
         try raw 'echo x >> \"$HARNESS_STATE_DIR/raw.md\"'\n\
         try gitdir-link 'echo /elsewhere > \"$(git rev-parse --git-dir)/commondir\"'\n\
         try dot-git 'echo gitdir: /elsewhere > .git'\n\
         echo work > work.txt\n\
         git add work.txt results.txt && git commit -qm 'the work'\n\
         echo '<promise>TASK_COMPLETE</promise>'\n"
        ),
        "bwrap",
    );
    let out = project.run(&["all", "--parallel", "2"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");
    let results = std::fs::read_to_string(project.workdir.join("results.txt")).unwrap();
    assert_eq!(
        results,
        "main-tree: refused\nraw: refused\ngitdir-link: refused\ndot-git: refused\n"
    );
    assert!(!project.workdir.join("main.txt").exists());
    assert_eq!(
        std::fs::read_to_string(project.workdir.join("work.txt")).unwrap(),
        "work\n"
    );
}

/// Under a sandbox, a worker killed with SIGKILL takes its agent and everything the agent
/// started with it at once (the sandbox's PID namespace dies with it), before any next run.
#[test]
fn a_killed_worker_takes_its_sandbox_with_it() {
    let Some(project) = sandbox_project() else {
        return;
    };
    sandboxed_shell_agent(
        &project,
        "setsid sleep 6403 </dev/null >/dev/null 2>&1 &\nexec sleep 6404\n",
        "bwrap",
    );
    // Without the cgroup, whose removal is the next run's: only the sandbox is at work here.
    let mut run = project
        .command(&["F-001"])
        .env("HARNESS_NO_CGROUP", "1")
        .spawn()
        .unwrap();
    let gone = |what: &str| processes_matching(what).is_empty();
    wait_until("the agent and its child", || {
        !gone("sleep 6403") && !gone("sleep 6404")
    });
    let state_dir = project.state_dir().display().to_string();
    let worker = processes_matching(&format!("--state-dir {state_dir}"));
    assert_eq!(worker.len(), 1, "one worker: {worker:?}");
    // SAFETY: the worker of the run.sh this test started.
    unsafe { libc::kill(worker[0], libc::SIGKILL) };
    run.wait().unwrap();
    wait_until("the end of the sandbox with the worker", || {
        gone("sleep 6403") && gone("sleep 6404")
    });
}

/// A role's own `sandbox:` under `roles:` is the one its agent runs in: here the worker runs
/// unsandboxed and the validator under bwrap, each trying to write into `.harness/`.
#[test]
fn a_role_runs_in_its_own_sandbox() {
    let Some(project) = sandbox_project() else {
        return;
    };
    project.shell_agent(
        "touch \"$HARNESS_STATE_DIR/by-$HARNESS_ROLE\" 2>/dev/null\n\
         if [ \"$HARNESS_ROLE\" = validator ]; then echo '<verdict>PASS</verdict>'; else echo '<promise>TASK_COMPLETE</promise>'; fi",
    );
    let config = project
        .read_state("config.yaml")
        .replace("validate: false\n", "");
    project.write_state(
        "config.yaml",
        &format!("{config}validate: true\nroles:\n  validator:\n    sandbox: bwrap\n"),
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");
    let roles: Vec<String> = project
        .attempts("F-001")
        .into_iter()
        .map(|(role, _)| role)
        .collect();
    assert_eq!(roles, ["worker", "validator"]);
    assert!(project.state_dir().join("by-worker").exists());
    assert!(!project.state_dir().join("by-validator").exists());
}

/// A check runs in the worker's sandbox, as its agent does (it cannot write outside the tree
/// either); a hook is the user's, not the agent's: it runs outside it.
#[test]
fn a_check_runs_in_the_workers_sandbox_and_a_hook_outside_it() {
    let Some(project) = sandbox_project() else {
        return;
    };
    sandboxed_shell_agent(&project, "echo '<promise>TASK_COMPLETE</promise>'", "bwrap");
    let config = project.read_state("config.yaml");
    project.write_state(
        "config.yaml",
        &format!(
            "{config}checks: [{{name: escape, command: \"touch \\\"$HARNESS_STATE_DIR/by-check\\\" ../by-check 2>/dev/null; echo checked > checked.txt\"}}]\n\
             hooks: {{feature_done: [{{command: \"touch \\\"$HARNESS_STATE_DIR/by-hook\\\"\"}}]}}\n"
        ),
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");
    assert!(
        project.workdir.join("checked.txt").exists(),
        "the check ran"
    );
    assert!(!project.state_dir().join("by-check").exists());
    assert!(!project.workdir.join("../by-check").exists());
    assert!(project.state_dir().join("by-hook").exists());
}
