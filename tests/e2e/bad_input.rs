//! Bad input: a one-line error naming the file (and line), exit 1, and no state changed.

use harness_tests::{code, text, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

/// Runs `args`, expects exit 1 with `expected` in the error, and no change under .harness/.
fn refused(project: &Project, args: &[&str], expected: &str) {
    let before = project.snapshot();
    let out = project.run(args);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{args:?}: {stderr}");
    assert!(
        stderr.contains(expected),
        "{args:?}: expected {expected:?} in\n{stderr}"
    );
    let first = stderr.lines().find(|l| l.contains("error")).unwrap_or("");
    assert!(!first.is_empty(), "an error line: {stderr}");
    assert_eq!(project.snapshot(), before, "{args:?} changed the state");
    assert!(
        !project.state_dir().join("runs").exists(),
        "{args:?} created a run"
    );
}

#[test]
fn malformed_config_names_the_file_and_line() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.config("prompt_via: pigeon\n", "");
    refused(
        &project,
        &["F-001"],
        "config.yaml:3: agent.prompt_via: unknown variant `pigeon`",
    );
    project.write_state("config.yaml", "agent:\n  command: [a\n");
    refused(&project, &["F-001"], "config.yaml:");
    project.write_state("config.yaml", "");
    refused(&project, &["F-001"], "config.yaml: the file is empty");
    project.write_state(
        "config.yaml",
        "agent:\n  command: [x]\nmax_iterations: many\n",
    );
    refused(&project, &["F-001"], "config.yaml:3:");
}

#[test]
fn malformed_features_name_the_file_and_line() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.write_state(
        "features.yaml",
        "features:\n  - id: F-001\n    title: a\n  - id: F-001\n    title: b\n",
    );
    refused(
        &project,
        &["F-001"],
        "features.yaml:4: duplicate feature id F-001",
    );
    project.write_state("features.yaml", "features:\n  - id: F-001\n    tilte: a\n");
    refused(&project, &["F-001"], "features.yaml:3:");
    project.write_state(
        "features.yaml",
        "features:\n  - id: F-001\n    title: a\n    depends_on: [F-009]\n",
    );
    refused(&project, &["F-001"], "depends on unknown feature F-009");
}

#[test]
fn unknown_and_invalid_feature_ids_are_refused() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    refused(&project, &["F-404"], "no feature with id F-404");
    for bad in ["../etc", "a/b", "..", "F 1", ".hidden"] {
        refused(&project, &[bad], "invalid feature id");
    }
    assert!(!project.workdir.parent().unwrap().join("etc.lock").exists());
}

#[test]
fn a_missing_agent_command_is_refused_before_anything_runs() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.write_state(
        "config.yaml",
        "agent:\n  command: [\"no-such-agent-cli\", \"-p\"]\n",
    );
    refused(
        &project,
        &["F-001"],
        "config.yaml: agent command \"no-such-agent-cli\" was not found",
    );
}

#[test]
fn a_project_without_harness_state_is_told_to_init() {
    let project = Project::bare();
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 1);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(".harness: the state directory does not exist"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: create it with `./run.sh init"),
        "{stderr}"
    );
    assert!(!project.state_dir().exists());
}

#[test]
fn bad_options_are_usage_errors() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    refused(
        &project,
        &["F-001", "--max-iterations", "0"],
        "--max-iterations needs a whole number",
    );
    refused(&project, &["F-001", "--bogus"], "unknown option --bogus");
    refused(&project, &["F-001", "F-002"], "one feature at a time");
    refused(
        &project,
        &["all", "--parallel", "zero"],
        "--parallel needs a whole number",
    );
    refused(&project, &["replan"], "replan needs one feature");
    refused(&project, &["explain"], "explain needs one feature");
    refused(&project, &["curate", "F-001"], "curate takes no argument");
    let out = project.run(&["-C", "/no/such/dir", "F-001"]);
    assert_eq!(code(&out), 1);
}

#[test]
fn a_corrupt_state_file_is_reported_not_overwritten() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.write_state("runs/F-001/state.json", "{ not json\n");
    let before = project.snapshot();
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("runs/F-001/state.json:1: unreadable run state"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(project.snapshot(), before);
}

#[test]
fn an_agent_that_cannot_be_started_is_recorded_and_reported() {
    // Linux refuses a single argument over 128 KiB: a big memory layer with `prompt_via: arg`.
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.config("prompt_via: arg\n", "");
    project.write_state(
        "summary.md",
        &format!("## Lessons\n{}\n", "- a lesson\n".repeat(20_000)),
    );
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    assert!(stderr.contains("cannot start the agent"), "{stderr}");
    assert!(stderr.contains("hint: the prompt"), "{stderr}");
    let state = project.state("F-001");
    assert_eq!(state["status"], "pending");
    assert_eq!(state["attempts"][0]["outcome"], "agent_error");
}
