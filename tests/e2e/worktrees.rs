//! Worktrees under kills (issue 13, item 2): a feature of `all --parallel` killed at each git step
//! of its worktree's making, of the commit of its leftover work, of its merge and of its
//! worktree's removal is completed by the next run, without an iteration burnt, an agent or
//! validator run again, or an attempt recorded as interrupted.
//!
//! The kills are deterministic: a stand-in for git, first in PATH (and in GIT_EXEC_PATH, so that
//! the inner git commands of `git worktree add` go through it too), SIGKILLs the run's whole
//! process group at the chosen git command — before it, after it, or after leaving what git
//! leaves when killed inside it; and git hooks kill at the moments inside a commit or a merge
//! (index locked, tree updated, ref not yet moved).

use std::path::PathBuf;
use std::process::Output;

use harness_tests::{code, text, Project};

/// The worker writes `<FEATURE>.txt` (left uncommitted: the harness commits it when the feature
/// is accepted) or, finding it there already, says so in `found-work`, and delivers the promise;
/// the validator passes. Every call is logged in `agent-calls` beside the project. A feature with
/// a `slow-<FEATURE>` file beside the project waits for the kill ([`marker`]) instead, 10 s at most.
fn agent(project: &Project) -> String {
    let script = format!(
        r#"#!/bin/sh
cat >/dev/null
echo "$HARNESS_ROLE $HARNESS_FEATURE_ID" >> {calls:?}
if [ -e {root:?}/slow-$HARNESS_FEATURE_ID ]; then
  for _ in $(seq 100); do [ -e {killed:?} ] && exit 0; sleep 0.1; done; exit 1
fi
if [ "$HARNESS_ROLE" = validator ]; then echo '<verdict>PASS</verdict>'; exit 0; fi
if [ -e "$HARNESS_FEATURE_ID.txt" ]; then echo "$HARNESS_FEATURE_ID" >> {found:?}
else echo "work of $HARNESS_FEATURE_ID" > "$HARNESS_FEATURE_ID.txt"; fi
if [ -e {kill_agent:?} ] && [ ! -e {kill_agent:?}.done ]; then
  : > {kill_agent:?}.done
  kill -KILL -"$(ps -o pgid= -p "$PPID" | tr -d ' ')"
fi
echo '<promise>TASK_COMPLETE</promise>'
"#,
        calls = project.root().join("agent-calls").display().to_string(),
        found = project.root().join("found-work").display().to_string(),
        kill_agent = project.root().join("kill-in-agent").display().to_string(),
        root = project.root().display().to_string(),
        killed = marker(project).display().to_string(),
    );
    let path = project.root().join("agent.sh");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A project of one feature run by [`agent`], the validator on or off.
fn project(validate: bool) -> Project {
    project_of("features:\n  - id: F-001\n    title: one\n", validate)
}

/// A project of `features` run by [`agent`], the validator on or off.
fn project_of(features: &str, validate: bool) -> Project {
    let project = Project::new(features, "steps:\n  - [promise: true]\n");
    let agent = agent(&project);
    project.write_state(
        "config.yaml",
        &format!("agent:\n  command: [{agent:?}]\n  timeout_secs: 60\nvalidate: {validate}\n"),
    );
    project
}

fn real_git() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    text(&out.stdout).trim().to_string()
}

/// Where the kill comes from.
enum Kill<'a> {
    /// The git stand-in, at the first git command whose arguments contain ` {on}`: `action` is
    /// shell run first (`"$REAL_GIT" "$@"` runs the command itself; `""` kills before it).
    Git { on: &'a str, action: &'a str },
    /// A git hook of that name, with this shell condition for killing (on its first match);
    /// `$ROOT` is the directory beside the project.
    Hook { name: &'a str, when: &'a str },
    /// The agent of the first iteration, once it has written its work.
    Agent,
}

/// The marker left by the one kill, so that a case that never killed fails.
fn marker(project: &Project) -> PathBuf {
    project.root().join("killed")
}

/// Arms `kill` and returns the environment of the run to kill.
fn arm(project: &Project, kill: &Kill) -> Vec<(String, String)> {
    let marker = marker(project).display().to_string();
    match kill {
        Kill::Git { on, action } => {
            let bin = project.root().join("fake-git");
            std::fs::create_dir_all(&bin).unwrap();
            let script = format!(
                r#"#!/bin/sh
# The real git, except at the first call whose arguments contain `{on}`: the action, then SIGKILL
# to the whole process group (run.sh, its children, this git). DIR is the directory of `-C`.
REAL_GIT={real:?}
prev=; for arg in "$@"; do [ "$prev" = -C ] && DIR=$arg; prev=$arg; done
if [ ! -e {marker:?} ]; then
  case " $* " in
    *" {on}"*)
      : > {marker:?}
      {action}
      kill -KILL 0
      sleep 5;;
  esac
fi
exec "$REAL_GIT" "$@"
"#,
                real = real_git(),
            );
            let path = bin.join("git");
            std::fs::write(&path, script).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            let path_var = format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            );
            vec![
                ("PATH".into(), path_var),
                ("GIT_EXEC_PATH".into(), bin.display().to_string()),
            ]
        }
        Kill::Hook { name, when } => {
            let hooks = project.workdir.join(".git/hooks");
            std::fs::create_dir_all(&hooks).unwrap();
            let script = format!(
                "#!/bin/sh\nROOT={root:?}\nif [ ! -e {marker:?} ] && {{ {when}; }}; then : > {marker:?}; kill -KILL 0; sleep 5; fi\nexit 0\n",
                root = project.root().display().to_string(),
            );
            let path = hooks.join(name);
            std::fs::write(&path, script).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            Vec::new()
        }
        Kill::Agent => {
            std::fs::write(project.root().join("kill-in-agent"), "").unwrap();
            std::fs::write(&marker, "").unwrap();
            Vec::new()
        }
    }
}

/// `./run.sh all --parallel 2`, in its own process group, with `env` added.
fn run_all(project: &Project, env: &[(String, String)]) -> Output {
    let mut command = project.command(&["all", "--parallel", "2"]);
    for (key, value) in env {
        command.env(key, value);
    }
    std::os::unix::process::CommandExt::process_group(&mut command, 0)
        .output()
        .unwrap()
}

/// The base branch of the project (what `git init` made it).
fn base_branch(project: &Project) -> String {
    project
        .git(&["symbolic-ref", "--short", "HEAD"])
        .trim()
        .to_string()
}

/// Runs the mission with `kill` armed (it must die of it), lets `between` change the leftovers,
/// runs it again, and checks that it ended as an undisturbed mission would.
fn killed_then_resumed(validate: bool, kill: Kill, between: impl FnOnce(&Project)) {
    let project = project(validate);
    let env = arm(&project, &kill);
    let out = run_all(&project, &env);
    assert!(
        marker(&project).exists(),
        "the kill never happened (exit {:?})\n{}",
        out.status,
        text(&out.stderr)
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGKILL),
        "{}",
        text(&out.stderr)
    );
    // The hooks stay, fired: what a later commit or merge runs must not change the outcome.
    between(&project);
    let out = run_all(&project, &[]);
    let context = format!(
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(code(&out), 0, "{context}");
    check_landed(&project, validate, &context);
}

/// F-001 is done exactly once: one worker attempt (completed) and one validator attempt
/// (verified) when validating, one agent call each; its work merged into the base branch; no
/// worktree, registration or `harness/` branch left; the main tree clean.
fn check_landed(project: &Project, validate: bool, context: &str) {
    let state = project.state("F-001");
    assert_eq!(state["status"], "done", "{state}\n{context}");
    assert_eq!(
        state["iteration_count"], 1,
        "an iteration was burnt: {state}"
    );
    let attempts = project.attempts("F-001");
    let mut expected = vec![("worker".to_string(), "completed".to_string())];
    if validate {
        expected.push(("validator".into(), "verified".into()));
    }
    assert_eq!(attempts, expected, "{state}\n{context}");
    let calls = std::fs::read_to_string(project.root().join("agent-calls")).unwrap_or_default();
    let expected_calls = if validate {
        "worker F-001\nvalidator F-001\n"
    } else {
        "worker F-001\n"
    };
    assert_eq!(calls, expected_calls, "an agent ran again\n{context}");

    let base = base_branch(project);
    assert_eq!(
        project.git(&["show", &format!("{base}:F-001.txt")]),
        "work of F-001\n",
        "{context}"
    );
    let log = project.git(&["log", "--format=%s", "--first-parent", &base]);
    assert!(log.contains("Merge F-001"), "{log}");
    assert_eq!(
        project.git(&["branch", "--list", "harness/*"]).trim(),
        "",
        "{context}"
    );
    let worktrees = project.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        1,
        "{worktrees}\n{context}"
    );
    let left = project.worktree_dirs();
    assert!(left.is_empty(), "{left:?}\n{context}");
    assert_eq!(
        project
            .git(&["status", "--porcelain", "--untracked-files=no"])
            .trim(),
        "",
        "{context}"
    );
}

fn nothing(_: &Project) {}

/// The admin directory git keeps for the feature's worktree.
fn admin_dir(project: &Project) -> PathBuf {
    project.workdir.join(".git/worktrees/F-001")
}

fn worktree_dir(project: &Project) -> PathBuf {
    project.state_dir().join("worktrees/F-001")
}

/// Shell that leaves the worktree's index locked, as git killed while writing it does.
const LOCK_WORKTREE_INDEX: &str = r#"gd=$(sed -n 's/^gitdir: //p' "$GIT_DIR" 2>/dev/null || true); [ -n "$gd" ] && : > "$gd/index.lock""#;

/// Runs every case of `cases` (a name, the validator on or off, the kill) through
/// [`killed_then_resumed`] and fails naming every case that failed.
fn every_case(cases: Vec<(&str, bool, Kill)>) {
    let mut failures = Vec::new();
    for (name, validate, kill) in cases {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            killed_then_resumed(validate, kill, nothing)
        }));
        if let Err(panic) = result {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("== killed {name}:\n{message}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn git_kill<'a>(on: &'a str, action: &'a str) -> Kill<'a> {
    Kill::Git { on, action }
}

/// Runs the command itself before the kill.
const RUN_IT: &str = r#""$REAL_GIT" "$@""#;

#[test]
fn a_kill_at_each_step_of_making_the_worktree_is_repaired() {
    let checkout_done_index_locked = format!("{RUN_IT}; {LOCK_WORKTREE_INDEX}");
    every_case(vec![
        (
            "before `worktree add`",
            false,
            git_kill("worktree add ", ""),
        ),
        (
            "after its branch was made",
            false,
            git_kill("branch harness/F-001 ", RUN_IT),
        ),
        // The worktree registered and locked `initializing`, its files not there.
        ("before its checkout", false, git_kill("reset --hard ", "")),
        (
            "at the end of its checkout, the index locked",
            false,
            git_kill("reset --hard ", &checkout_done_index_locked),
        ),
        (
            "after `worktree add`",
            false,
            git_kill("worktree add ", RUN_IT),
        ),
    ]);
}

#[test]
fn a_kill_at_each_step_of_committing_the_leftover_work_is_repaired() {
    every_case(vec![
        ("before `add -A`", true, git_kill("add -A ", "")),
        ("after `add -A`", true, git_kill("add -A ", RUN_IT)),
        // The worktree's index is locked while the hook runs.
        (
            "inside the commit",
            true,
            Kill::Hook {
                name: "pre-commit",
                when: "true",
            },
        ),
        // The commit made, the feature's branch not yet moved to it (its ref locked): once the
        // validator ran, the one update of the branch is the harness's commit.
        (
            "inside the commit, before the branch moved",
            true,
            Kill::Hook {
                name: "reference-transaction",
                when: r#"[ "$1" = prepared ] && grep -q '^validator' "$ROOT/agent-calls" && grep -q ' refs/heads/harness/F-001$'"#,
            },
        ),
        ("after the commit", true, git_kill("commit ", RUN_IT)),
    ]);
}

#[test]
fn a_kill_at_each_step_of_the_merge_is_repaired() {
    every_case(vec![
        ("before the merge", false, git_kill("merge ", "")),
        // Merged into the index and the tree, not committed: what `git merge` leaves while its
        // pre-merge-commit hook runs.
        (
            "inside the merge, before its commit",
            false,
            Kill::Hook {
                name: "pre-merge-commit",
                when: "true",
            },
        ),
        // The merge commit made, the branch not yet moved to it (its ref locked).
        (
            "inside the merge, before the branch moved",
            false,
            Kill::Hook {
                name: "reference-transaction",
                when: r#"[ "$1" = prepared ] && grep -q ' refs/heads/master$\| refs/heads/main$'"#,
            },
        ),
        (
            "inside the merge, MERGE_HEAD written and the index locked",
            false,
            git_kill(
                "merge ",
                r#""$REAL_GIT" "$@" --no-commit; : > "$DIR/.git/index.lock""#,
            ),
        ),
        // git killed between creating the file the merge adds and writing it.
        (
            "inside the merge, a file it adds created empty",
            false,
            git_kill("merge ", r#": > "$DIR/F-001.txt""#),
        ),
        ("after the merge", false, git_kill("merge ", RUN_IT)),
    ]);
}

#[test]
fn a_kill_at_each_step_of_removing_the_worktree_is_repaired() {
    every_case(vec![
        (
            "before `worktree remove`",
            true,
            git_kill("worktree remove ", ""),
        ),
        // Half removed: the worktree's files and its .git file gone, git's record of it kept.
        (
            "inside `worktree remove`",
            true,
            git_kill(
                "worktree remove ",
                r#"rm -rf "$DIR/.harness/worktrees/F-001/.git" "$DIR/.harness/worktrees/F-001/F-001.txt""#,
            ),
        ),
        (
            "after `worktree remove`",
            true,
            git_kill("worktree remove ", RUN_IT),
        ),
        (
            "before the branch's deletion",
            true,
            git_kill("branch -", ""),
        ),
        // The branch's ref locked, not yet deleted.
        (
            "inside the branch's deletion",
            true,
            Kill::Hook {
                name: "reference-transaction",
                when: r#"[ "$1" = prepared ] && grep -q ' 0\{40\} refs/heads/harness/F-001$'"#,
            },
        ),
        (
            "after the branch's deletion",
            true,
            git_kill("branch -", RUN_IT),
        ),
    ]);
}

/// A killed run's worktree, made and registered, then `between`: the next run completes it.
fn made_then_broken(between: impl FnOnce(&Project)) {
    killed_then_resumed(false, git_kill("worktree add ", RUN_IT), between);
}

#[test]
fn a_registered_worktree_whose_directory_is_gone_is_made_again() {
    // "a missing but already registered worktree"
    made_then_broken(|project| std::fs::remove_dir_all(worktree_dir(project)).unwrap());
}

#[test]
fn a_stale_registration_holding_the_branch_is_removed() {
    // "already used by worktree": another registration, of a directory that is gone, locked
    // `initializing`, holds the branch.
    made_then_broken(|project| {
        std::fs::remove_dir_all(worktree_dir(project)).unwrap();
        let stale = project.workdir.join(".git/worktrees/F-0011");
        std::fs::create_dir_all(&stale).unwrap();
        let gone = project.root().join("gone/F-001/.git");
        std::fs::write(stale.join("gitdir"), format!("{}\n", gone.display())).unwrap();
        std::fs::write(stale.join("HEAD"), "ref: refs/heads/harness/F-001\n").unwrap();
        std::fs::write(stale.join("commondir"), "../..\n").unwrap();
        std::fs::write(stale.join("locked"), "initializing").unwrap();
    });
}

/// Regression (the parallel crash test, seed 1795941842093525071): F-001's landing merge killed
/// half-way, then F-002 resumed alone: F-002's merge was refused ("another merge is in
/// progress") until F-001 ran again, for ever if it never did. The harness's own merge, which
/// no live git is making, is aborted; F-001 lands when it runs.
#[test]
fn another_feature_s_merge_killed_half_way_does_not_hold_back_one_resumed_alone() {
    let project = project_of(
        "features:\n  - id: F-001\n    title: one\n  - id: F-002\n    title: two\n",
        false,
    );
    std::fs::write(project.root().join("slow-F-002"), "").unwrap();
    let kill = git_kill("Merge F-001", r#""$REAL_GIT" "$@" --no-commit"#);
    let out = run_all(&project, &arm(&project, &kill));
    assert!(marker(&project).exists(), "{}", text(&out.stderr));
    assert!(project.workdir.join(".git/MERGE_HEAD").exists());
    assert_ne!(project.state("F-002")["status"], "done");
    std::fs::remove_file(project.root().join("slow-F-002")).unwrap();

    let out = project.run(&["F-002"]);
    let context = format!("stderr:\n{}", text(&out.stderr));
    assert_eq!(code(&out), 0, "{context}");
    merged_and_done(&project, "F-002");
    assert!(!project.workdir.join(".git/MERGE_HEAD").exists());
    assert_ne!(project.state("F-001")["status"], "done", "{context}");

    let out = run_all(&project, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = merged_and_done(&project, "F-001");
    assert_eq!(
        state["iteration_count"], 1,
        "an iteration was burnt: {state}"
    );
}

/// Checks that `feature`'s work (`<feature>.txt`, as [`agent`] writes it) is in the base branch
/// and the feature done; its state.
fn merged_and_done(project: &Project, feature: &str) -> serde_json::Value {
    let base = base_branch(project);
    assert_eq!(
        project.git(&["show", &format!("{base}:{feature}.txt")]),
        format!("work of {feature}\n")
    );
    let state = project.state(feature);
    assert_eq!(state["status"], "done", "{state}");
    state
}

/// A project of [`project`] whose `all --parallel` was killed in F-001's agent, its work written
/// (uncommitted) in its worktree.
fn killed_in_its_agent(validate: bool) -> Project {
    let project = project(validate);
    arm(&project, &Kill::Agent);
    let out = run_all(&project, &[]);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGKILL),
        "{}",
        text(&out.stderr)
    );
    assert!(worktree_dir(&project).join("F-001.txt").exists());
    project
}

#[test]
fn a_worktree_whose_record_is_gone_is_made_again_with_its_uncommitted_work() {
    // git's record of the worktree gone ("not a git repository") while the agent's work,
    // uncommitted, is in it: the work is kept, and the next iteration's agent finds it.
    let project = killed_in_its_agent(false);
    std::fs::remove_dir_all(admin_dir(&project)).unwrap();
    let out = run_all(&project, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(project.root().join("found-work")).unwrap_or_default(),
        "F-001\n",
        "the next iteration's agent found the work"
    );
    let state = merged_and_done(&project, "F-001");
    assert_eq!(
        project.git(&["branch", "--list", "harness/*"]).trim(),
        "",
        "{state}"
    );
}

/// A feature killed in its worktree under `all --parallel`, then resumed one at a time (`./run.sh
/// F-001`, or `all` without `--parallel`), goes on in its worktree, where its work is, and lands
/// from it: never in the main tree beside its own work.
#[test]
fn a_feature_resumed_without_parallel_goes_on_in_its_worktree() {
    for resume in [&["F-001"][..], &["all"][..]] {
        let project = killed_in_its_agent(true);
        let out = project.run(resume);
        let context = format!("{resume:?}: {}", text(&out.stderr));
        assert_eq!(code(&out), 0, "{context}");
        assert_eq!(
            std::fs::read_to_string(project.root().join("found-work")).unwrap_or_default(),
            "F-001\n",
            "the resumed agent did not find the work in the worktree\n{context}"
        );
        let base = base_branch(&project);
        assert_eq!(
            project.git(&["show", &format!("{base}:F-001.txt")]),
            "work of F-001\n",
            "{context}"
        );
        assert_eq!(project.state("F-001")["status"], "done", "{context}");
        assert!(project.worktree_dirs().is_empty(), "{context}");
        assert_eq!(
            project.git(&["branch", "--list", "harness/*"]).trim(),
            "",
            "{context}"
        );
    }
}

/// F-001, and F-002 which depends on it, validated, run by [`agent`]; an untracked `F-001.txt`
/// in the main tree (which F-001's branch adds too) makes git refuse F-001's merge.
fn refused_merge() -> Project {
    let project = project(true);
    project.write_state(
        "features.yaml",
        "features:\n  - id: F-001\n    title: one\n  - id: F-002\n    title: two\n    depends_on: [F-001]\n",
    );
    std::fs::write(project.workdir.join("F-001.txt"), "in the way\n").unwrap();
    let out = run_all(&project, &[]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("1 accepted but not merged"),
        "{}",
        text(&out.stdout)
    );
    let state = project.state("F-001");
    assert_eq!(state["status"], "unmerged", "{state}");
    let reason = state["reason"].as_str().unwrap();
    for words in [
        "F-001.txt",
        "branch harness/F-001 is kept",
        "`./run.sh F-001`",
    ] {
        assert!(reason.contains(words), "{words}: {reason}");
    }
    let dependent = project.state("F-002");
    assert_eq!(dependent["status"], "blocked", "{dependent}");
    assert_eq!(dependent["reason"], "dependency F-001 is not merged yet");
    // The user's file is untouched.
    assert_eq!(
        std::fs::read_to_string(project.workdir.join("F-001.txt")).unwrap(),
        "in the way\n"
    );
    project
}

fn agent_calls(project: &Project) -> String {
    std::fs::read_to_string(project.root().join("agent-calls")).unwrap_or_default()
}

#[test]
fn a_refused_merge_is_shown_unmerged_and_the_next_run_merges_without_an_agent() {
    let project = refused_merge();
    // Visible: on the board, in --json and in the report.
    let board = project.run(&["status"]);
    let board = text(&board.stdout);
    assert!(
        board
            .lines()
            .any(|l| l.starts_with("F-001") && l.contains("unmerged")),
        "{board}"
    );
    assert!(board.contains("F-001: unmerged: "), "{board}");
    let json = project.run(&["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["features"][0]["status"], "unmerged", "{json}");
    assert!(json["features"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("F-001.txt"));
    assert!(project.read_state("report.html").contains("Not merged"));
    // A run that finds the cause still there changes nothing and says why again.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("not merged"),
        "{}",
        text(&out.stderr)
    );

    std::fs::remove_file(project.workdir.join("F-001.txt")).unwrap();
    let out = run_all(&project, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    for feature in ["F-001", "F-002"] {
        assert_eq!(project.state(feature)["status"], "done", "{feature}");
    }
    assert_eq!(
        agent_calls(&project),
        "worker F-001\nvalidator F-001\nworker F-002\nvalidator F-002\n",
        "F-001's agents never ran again"
    );
    assert_eq!(project.git(&["branch", "--list", "harness/*"]).trim(), "");
}

#[test]
fn a_branch_merged_by_hand_counts_as_merged() {
    let project = refused_merge();
    std::fs::remove_file(project.workdir.join("F-001.txt")).unwrap();
    project.git(&["merge", "-q", "--no-ff", "-m", "by hand", "harness/F-001"]);
    let worktree = worktree_dir(&project).display().to_string();
    project.git(&["worktree", "remove", &worktree]);
    project.git(&["branch", "-d", "harness/F-001"]);

    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["status"], "done", "{state}");
    let out = run_all(&project, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-002")["status"], "done");
    assert_eq!(
        agent_calls(&project),
        "worker F-001\nvalidator F-001\nworker F-002\nvalidator F-002\n"
    );
    let log = project.git(&["log", "--format=%s", "--first-parent"]);
    assert!(
        log.contains("by hand") && !log.contains("Merge F-001"),
        "{log}"
    );
}

/// Issue 14, item 4: F-003 fails in its worktree (a committed file and an uncommitted one), is
/// re-broken into F-003.1 and F-003.2 (which depends on F-003.1), and the pieces carry its work on.
#[test]
fn a_replanned_feature_s_pieces_start_from_its_work_and_no_worktree_outlives_the_mission() {
    let project = Project::new(
        "features:\n  - id: F-003\n    title: three\n",
        "steps:\n  - [promise: true]\n",
    );
    let found = project.root().join("found");
    let script = format!(
        r#"#!/bin/sh
cat >/dev/null
case "$HARNESS_ROLE $HARNESS_FEATURE_ID" in
  planner*)
    printf '%s\n' '```yaml' 'features:' '  - id: F-003.1' '    title: first piece' '    acceptance: [it works]' \
      '  - id: F-003.2' '    title: second piece' '    acceptance: [it works]' '    depends_on: [F-003.1]' '```';;
  "worker F-003")
    echo committed > F-003-committed.txt
    git add F-003-committed.txt && git -c user.name=a -c user.email=a@example.invalid commit -qm F-003
    echo uncommitted > F-003.txt
    echo 'not yet';;
  worker*)
    [ -e F-003.txt ] && [ -e F-003-committed.txt ] && echo "$HARNESS_FEATURE_ID" >> {found:?}
    echo "$HARNESS_FEATURE_ID" > "$HARNESS_FEATURE_ID.txt"
    echo '<promise>TASK_COMPLETE</promise>';;
esac
"#
    );
    let agent = project.root().join("agent.sh");
    std::fs::write(&agent, script).unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    project.write_state(
        "config.yaml",
        &format!(
            "agent:\n  command: [{:?}]\n  timeout_secs: 60\nvalidate: false\nmax_iterations: 1\n",
            agent.display().to_string()
        ),
    );
    let out = run_all(&project, &[]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    // The failed feature's worktree and branch are kept, and the end of the mission says so.
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("kept: harness/F-003 (")
            && stdout.contains("F-003 failed and its work stays here"),
        "{stdout}"
    );

    let out = project.run(&["replan", "F-003"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let board = text(&project.run(&["status"]).stdout);
    assert!(
        board.contains("kept: harness/F-003 (")
            && board.contains("F-003 was re-broken into F-003.1, F-003.2"),
        "{board}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&project.run(&["status", "--json"]).stdout).unwrap();
    assert_eq!(json["kept"][0]["branch"], "harness/F-003", "{json}");
    assert_eq!(json["kept"][0]["feature"], "F-003", "{json}");

    let out = run_all(&project, &[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&found).unwrap_or_default(),
        "F-003.1\nF-003.2\n",
        "each piece's agent found F-003's work, committed or not"
    );
    let base = base_branch(&project);
    for (file, content) in [
        ("F-003-committed.txt", "committed\n"),
        ("F-003.txt", "uncommitted\n"),
        ("F-003.1.txt", "F-003.1\n"),
        ("F-003.2.txt", "F-003.2\n"),
    ] {
        assert_eq!(project.git(&["show", &format!("{base}:{file}")]), content);
    }
    // Nothing outlives the mission: no branch, no worktree, no line about one.
    assert_eq!(project.git(&["branch", "--list", "harness/*"]).trim(), "");
    let worktrees = project.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    let board = text(&project.run(&["status"]).stdout);
    assert!(!board.contains("kept:"), "{board}");
    assert!(
        !text(&out.stdout).contains("kept:"),
        "{}",
        text(&out.stdout)
    );
}

/// The harness's own commits and merges start no `git maintenance run --auto` (nor, with an
/// older git, `gc --auto`): git detaches it, so it would run on after the run, outside
/// everything the harness ends.
#[test]
fn the_harness_commits_and_merges_without_background_maintenance() {
    let project = project(true);
    let bin = project.root().join("logging-git");
    std::fs::create_dir_all(&bin).unwrap();
    let log = project.root().join("git-calls");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> {log:?}\nexec {real:?} \"$@\"\n",
        log = log.display().to_string(),
        real = real_git(),
    );
    let path = bin.join("git");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = vec![
        (
            "PATH".to_string(),
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ),
        ("GIT_EXEC_PATH".to_string(), bin.display().to_string()),
    ];
    let out = run_all(&project, &env);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.lines().any(|call| call.contains(" commit "))
            && calls.lines().any(|call| call.contains(" merge ")),
        "the harness's commit and merge went through the logging git:\n{calls}"
    );
    let background: Vec<&str> = calls
        .lines()
        .filter(|call| call.contains("maintenance run") || call.contains("gc --auto"))
        .collect();
    assert!(background.is_empty(), "{background:#?}");
}
