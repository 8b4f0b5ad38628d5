//! `./run.sh all`: every feature in dependency order, blocked dependents, and `--parallel N` in
//! git worktrees merged back on acceptance.

use std::path::Path;

use harness_tests::{code, text, Project};

const CHAIN: &str = "features:\n  - id: F-001\n    title: One\n  - id: F-002\n    title: Two\n    depends_on: [F-001]\n  - id: F-003\n    title: Three\n    depends_on: [F-002]\n";

fn outcome_lines(project: &Project) -> Vec<String> {
    project
        .read_state("raw.md")
        .lines()
        .filter(|l| l.contains(" -: ") && l.contains(" done on iteration"))
        .map(|l| {
            l.split("] worker ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn all_runs_every_feature_in_dependency_order() {
    // Listed out of order on purpose: the dependencies decide.
    let features = "features:\n  - id: F-003\n    title: Three\n    depends_on: [F-002]\n  - id: F-001\n    title: One\n  - id: F-002\n    title: Two\n    depends_on: [F-001]\n";
    let project = Project::new(
        features,
        "steps:\n  - [expect_prompt: 'Iteration 1 of', promise: true]\n",
    );
    let out = project.run(&["all"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    for feature in ["F-001", "F-002", "F-003"] {
        assert_eq!(project.state(feature)["status"], "done", "{feature}");
    }
    assert_eq!(outcome_lines(&project), ["F-001", "F-002", "F-003"]);
    assert!(text(&out.stdout).contains("3/3"), "{}", text(&out.stdout));

    // Nothing left to do: a second run changes nothing and still says the mission is done.
    let before = project.snapshot();
    let out = project.run(&["all"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.snapshot(), before);
}

#[test]
fn a_failed_dependency_blocks_its_dependents_which_never_run() {
    let features = format!("{CHAIN}  - id: F-004\n    title: Four\n");
    let project = Project::new(
        &features,
        "scripts:\n  - match: {feature: F-002}\n    steps:\n      - [print: 'not yet']\n  - steps:\n      - [promise: true]\n",
    );
    project.config("", "max_iterations: 2\n");
    let out = project.run(&["all"]);
    assert_eq!(
        code(&out),
        3,
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(project.state("F-001")["status"], "done");
    assert_eq!(project.state("F-002")["status"], "failed");
    assert_eq!(
        project.state("F-004")["status"],
        "done",
        "an independent feature still runs"
    );
    let blocked = project.state("F-003");
    assert_eq!(blocked["status"], "blocked");
    assert!(
        blocked["reason"].as_str().unwrap().contains("F-002"),
        "{blocked}"
    );
    assert!(
        blocked["attempts"].as_array().unwrap().is_empty(),
        "F-003 never ran"
    );
}

/// A shell agent for the parallel tests: the first three features wait (bounded) until all three
/// have started, which proves they ran at once; every feature writes and commits its own file.
fn parallel_agent(project: &Project, shared_file: bool) -> String {
    let barrier = project.root().join("barrier");
    std::fs::create_dir_all(&barrier).unwrap();
    let write = if shared_file {
        "echo \"$HARNESS_FEATURE_ID\" > shared.txt\n"
    } else {
        "echo \"$HARNESS_FEATURE_ID\" > \"$HARNESS_FEATURE_ID.txt\"\n"
    };
    let script = format!(
        r#"#!/bin/sh
cat >/dev/null
if [ "$HARNESS_ROLE" = validator ]; then echo 'all good'; echo '<verdict>PASS</verdict>'; exit 0; fi
B={barrier}
touch "$B/$HARNESS_FEATURE_ID.started"
case $HARNESS_FEATURE_ID in F-001|F-002|F-003)
  i=0
  while [ $i -lt 400 ]; do
    if [ -e "$B/F-001.started" ] && [ -e "$B/F-002.started" ] && [ -e "$B/F-003.started" ]; then
      touch "$B/$HARNESS_FEATURE_ID.together"; break
    fi
    sleep 0.05; i=$((i+1))
  done;;
esac
{write}git add -A && git -c user.name=agent -c user.email=agent@example.invalid commit -qm "$HARNESS_FEATURE_ID"
echo '<promise>TASK_COMPLETE</promise>'
"#,
        barrier = barrier.display(),
    );
    let path = project.root().join("parallel-agent.sh");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn branches(workdir: &Path) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(workdir)
        .args(["branch", "--list"])
        .output()
        .unwrap();
    text(&out.stdout)
}

/// `./run.sh all --parallel 3` on `features`, each run by [`parallel_agent`], which must exit
/// with `expected`.
fn run_three_at_a_time(features: &str, shared_file: bool, expected: i32) -> Project {
    let project = Project::new(features, "steps:\n  - [promise: true]\n");
    let agent = parallel_agent(&project, shared_file);
    project.write_state(
        "config.yaml",
        &format!("agent:\n  command: [{agent:?}]\n  timeout_secs: 60\n"),
    );
    let out = project.run(&["all", "--parallel", "3"]);
    assert_eq!(
        code(&out),
        expected,
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    project
}

#[test]
fn six_features_with_dependencies_run_three_at_a_time_in_worktrees() {
    let features = "features:\n  - id: F-001\n    title: a\n  - id: F-002\n    title: b\n  - id: F-003\n    title: c\n  - id: F-004\n    title: d\n    depends_on: [F-001]\n  - id: F-005\n    title: e\n    depends_on: [F-002, F-003]\n  - id: F-006\n    title: f\n    depends_on: [F-004, F-005]\n";
    let project = run_three_at_a_time(features, false, 0);
    for n in 1..=6 {
        let feature = format!("F-00{n}");
        let state = project.state(&feature);
        assert_eq!(state["status"], "done", "{feature}: {state}");
        // Worker then validator, each once.
        let roles: Vec<&str> = state["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["worker", "validator"], "{feature}");
        // Its work reached the mission's branch.
        assert!(
            project.workdir.join(format!("{feature}.txt")).is_file(),
            "{feature}.txt not merged"
        );
    }
    for feature in ["F-001", "F-002", "F-003"] {
        assert!(
            project
                .root()
                .join(format!("barrier/{feature}.together"))
                .exists(),
            "{feature} did not run alongside the others"
        );
    }
    // A dependent started from a HEAD that held its dependency's work.
    let log = project.git(&["log", "--format=%s", "--first-parent"]);
    assert!(log.contains("Merge F-006 (harness/F-006)"), "{log}");
    assert!(
        !branches(&project.workdir).contains("harness/"),
        "merged branches are deleted"
    );
    let left = project.worktree_dirs();
    assert!(
        left.is_empty(),
        "worktrees of done features are removed: {left:?}"
    );
    assert_eq!(
        project
            .git(&["status", "--porcelain", "--untracked-files=no"])
            .trim(),
        "",
        "the main tree is clean"
    );
}

#[test]
fn a_merge_conflict_leaves_the_feature_unmerged_and_keeps_its_branch() {
    let features = "features:\n  - id: F-001\n    title: a\n  - id: F-002\n    title: b\n  - id: F-003\n    title: c\n";
    let project = run_three_at_a_time(features, true, 3);
    let mut done = 0;
    let mut unmerged = Vec::new();
    for feature in ["F-001", "F-002", "F-003"] {
        let state = project.state(feature);
        match state["status"].as_str().unwrap() {
            "done" => done += 1,
            "unmerged" => {
                assert!(
                    state["reason"]
                        .as_str()
                        .unwrap()
                        .contains("conflicts in shared.txt"),
                    "{state}"
                );
                unmerged.push(feature);
            }
            other => panic!("{feature} is {other}"),
        }
    }
    assert_eq!((done, unmerged.len()), (1, 2));
    // Never a half-merged tree; the unmerged features' branches are kept.
    assert_eq!(
        project
            .git(&["status", "--porcelain", "--untracked-files=no"])
            .trim(),
        ""
    );
    let shared = std::fs::read_to_string(project.workdir.join("shared.txt")).unwrap();
    assert!(!shared.contains("<<<<<<<"), "{shared}");
    for feature in unmerged {
        assert!(branches(&project.workdir).contains(&format!("harness/{feature}")));
    }
}

#[test]
fn parallel_without_git_is_refused() {
    let project = Project::bare();
    assert_eq!(code(&project.run(&["init"])), 0);
    project.write_state("features.yaml", "features:\n  - id: F-001\n    title: a\n");
    let out = project.run(&["all", "--parallel", "2"]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("needs the project to be a git repository"),
        "{}",
        text(&out.stderr)
    );
    assert!(!project.state_dir().join("runs").exists());
}

#[test]
fn run_sh_serves_plan_status_and_replan() {
    let project = Project::new(
        "features: []\n",
        "steps:\n  - [print: '```yaml', print: 'features:', print: '  - id: F-001', print: '    title: Planned', print: '    acceptance: [it works]', print: '```']\n",
    );
    project.write_state("mission.md", "# Mission\n\nA planned feature.\n");
    let out = project.run(&["plan"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(project
        .read_state("features.yaml")
        .contains("title: Planned"));

    let out = project.run(&["status"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("F-001"), "{}", text(&out.stdout));
    let out = project.run(&["status", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["features"][0]["id"], "F-001");

    // replan of a feature that has not failed is refused with the reason.
    let out = project.run(&["replan", "F-001"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
}

#[test]
fn auto_curate_runs_a_pass_after_each_verdict_and_curate_by_hand() {
    // Two workers (features) report the same trick; a pass after each verdict promotes it.
    let project = Project::new(
        "features:\n  - id: F-001\n    title: One\n  - id: F-002\n    title: Two\n",
        "scripts:\n  - match: {role: validator}\n    steps:\n      - [print: '<verdict>PASS</verdict>']\n  - steps:\n      - [print: 'TRICK: run the tests with -q to keep the log short', promise: true]\n",
    );
    project.config("", "validate: true\nauto_curate: true\n");
    let out = project.run(&["all"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let summary = project.read_state("summary.md");
    assert!(
        summary.contains("run the tests with -q"),
        "the pass promoted the trick seen twice:\n{summary}"
    );

    // By hand: a second pass with nothing new changes nothing.
    let before = project.snapshot();
    let out = project.run(&["curate", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = project.run(&["curate"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let changed: Vec<_> = project
        .snapshot()
        .into_iter()
        .filter(|file| !before.contains(file))
        .map(|(path, _)| path)
        .collect();
    assert!(
        changed
            .iter()
            // The report is written anew at the end of every run (it says when).
            .all(|p| p.ends_with("curator.json") || p.ends_with("report.html")),
        "a second pass changed {changed:?}"
    );
    let out = project.run(&["curate", "--json"]);
    assert_eq!(code(&out), 0);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("curate --json prints JSON");
}

#[test]
fn every_run_leaves_a_fresh_report_and_input_errors_leave_none() {
    let project = Project::new(
        "features:\n  - id: F-001\n    title: One\n",
        "steps:\n  - [promise: true]\n",
    );
    let out = project.run(&["F-404"]);
    assert_eq!(code(&out), 1);
    assert!(!project.state_dir().join("report.html").exists());
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let html = project.read_state("report.html");
    assert!(html.contains("F-001") && html.contains("</html>"), "{html}");
}
