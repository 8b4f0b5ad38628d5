//! The `planner` binary on temporary projects: plans merged into features.yaml without clobbering
//! anything, plans rejected with nothing written, re-breakdowns of failed features, the status
//! board, and the scheduling rules `./run.sh all` relies on.

use std::time::{Duration, Instant};

use harness_tests::{code, text, Project};

/// A features.yaml with the user's own comments and one hand-written feature.
const HAND_WRITTEN: &str = "\
# Our features. This comment must survive every plan.
features:
  # written by hand
  - id: F-001
    title: Greeting   # keep this note
    description: Print hello.
    acceptance:
      - greet prints hello
";

/// An answer holding `yaml` in a fenced block, after some prose and a memory entry.
fn answer(yaml: &str) -> String {
    format!("I read the mission.\nTRICK: plan small features\n\n```yaml\n{yaml}```\n\nDone.\n")
}

/// A project whose planner's agent prints `answer` (through a file, verbatim).
fn project_answering(features: &str, answer: &str) -> Project {
    let project = Project::new(features, "steps: [[cat: answer.md]]\n");
    std::fs::write(project.root().join("answer.md"), answer).unwrap();
    project.write_state("mission.md", "# Mission\n\nA greeting CLI.\n");
    project
}

/// Replaces what the planner's agent answers (its scenario starts again).
fn answer_next(project: &Project, answer: &str) {
    std::fs::write(project.root().join("answer.md"), answer).unwrap();
    project.scenario("steps: [[cat: answer.md]]\n");
}

/// The ids of features.yaml as the planner reads them back (via `status --json`).
fn ids(project: &Project) -> Vec<String> {
    let out = project.planner(&["status", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    board["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// Writes a feature's state.json by hand.
fn write_state(project: &Project, id: &str, status: &str, iterations: u32, extra: &str) {
    project.write_state(
        &format!("runs/{id}/state.json"),
        &format!(
            r#"{{"feature_id": "{id}", "status": "{status}", "iteration_count": {iterations},
               "max_iterations": 10, "completion_promise": "TASK_COMPLETE",
               "created_at": "2026-04-24T10:00:00Z", "updated_at": "2026-04-24T10:00:00Z"{extra}}}"#
        ),
    );
}

const TWO_NEW: &str = "features:\n  - id: F-001\n    title: Greeting, better\n    acceptance: [greet prints hello]\n  - id: F-002\n    title: Name\n    description: Greet by name.\n    acceptance: [greet Ann prints hello Ann]\n    depends_on: [F-001]\n  - id: F-003\n    title: Farewell\n    acceptance: [greet --bye prints bye]\n";

#[test]
fn a_valid_plan_is_merged_keeping_the_users_text() {
    let project = project_answering(HAND_WRITTEN, &answer(TWO_NEW));
    std::fs::write(
        project.identity_dir().join("planner.md"),
        "# Identity: planner\n- keep features small\n",
    )
    .unwrap();
    let out = project.planner(&["plan", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "kept      F-001: written by hand\nadded     F-002: Name\nadded     F-003: Farewell\n"
    );
    assert!(text(&out.stderr).contains("planner: planned 3 features (2 new, 0 updated, 1 kept)"));

    // The user's bytes come first, untouched; the new items follow in the same style.
    let features = project.read_state("features.yaml");
    assert!(features.starts_with(HAND_WRITTEN), "{features}");
    assert!(features.ends_with(
        "  - id: F-002\n    title: Name\n    description: Greet by name.\n    acceptance:\n      - greet Ann prints hello Ann\n    depends_on: [F-001]\n  - id: F-003\n    title: Farewell\n    acceptance:\n      - greet --bye prints bye\n    depends_on: []\n"
    ), "{features}");
    assert_eq!(ids(&project), ["F-001", "F-002", "F-003"]);

    // The record knows what the planner wrote (not F-001, which the user wrote).
    let record: serde_json::Value = serde_json::from_str(&project.read_state("plan.json")).unwrap();
    let recorded: Vec<&String> = record["features"].as_object().unwrap().keys().collect();
    assert_eq!(recorded, ["F-002", "F-003"]);

    // raw.md: the agent's entry and the outcome line, feature `-`.
    let raw = project.read_state("raw.md");
    let lines: Vec<&str> = raw.lines().collect();
    assert!(
        lines[0].ends_with("] planner - TRICK: plan small features"),
        "{raw}"
    );
    assert!(
        lines[1].ends_with("] planner - -: planned 3 features (2 new, 0 updated, 1 kept)"),
        "{raw}"
    );

    // The run directory holds the prompt exactly as sent, the output and the result.
    let plans: Vec<_> = std::fs::read_dir(project.state_dir().join("plans"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(plans.len(), 1);
    let name = plans[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with("-planner-mission"), "{name}");
    let prompt = std::fs::read_to_string(plans[0].join("prompt.md")).unwrap();
    let order = [
        "## Runtime context\n- FEATURE_ID=-\n",
        "# Role: planner",
        "## Your identity (cross-mission memory for the planner role)",
        "- keep features small",
        "## Mission",
        "A greeting CLI.",
        "## Current features (.harness/features.yaml)",
        "      - id: F-001  # status: not started",
        "## Your answer",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|needle| {
            prompt
                .find(needle)
                .unwrap_or_else(|| panic!("{needle:?} missing:\n{prompt}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{prompt}");
    assert!(
        !prompt.contains("```"),
        "an echoed prompt must never hold a plan"
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(plans[0].join("result.json")).unwrap())
            .unwrap();
    assert_eq!(result["accepted"], true);
    assert_eq!(result["features"][0]["decision"], "kept");
    assert_eq!(result["features"][0]["reason"], "written by hand");
}

#[test]
fn invalid_plans_are_rejected_and_nothing_is_written() {
    let project = project_answering(HAND_WRITTEN, "");
    let cases = [
        (
            answer("features:\n  - id: F-002\n    title: a\n    acceptance: [x]\n    depends_on: [F-003]\n  - id: F-003\n    title: b\n    acceptance: [y]\n    depends_on: [F-002]\n"),
            "plan rejected: dependency cycle F-002 -> F-003 -> F-002",
        ),
        (
            answer("features:\n  - id: F-002\n    title: a\n    acceptance: [x]\n  - id: F-002\n    title: b\n    acceptance: [y]\n"),
            "plan rejected: duplicate feature id F-002",
        ),
        (
            answer("features:\n  - id: F-002\n    title: a\n    acceptance: [x]\n    depends_on: [F-404]\n"),
            "plan rejected: feature F-002 depends on unknown feature F-404",
        ),
        (
            answer("features:\n  - id: F-002\n    title: a\n    description: no criteria\n"),
            "plan rejected: feature F-002 has no acceptance criterion",
        ),
        (
            "Here are the features: F-002, F-003.\n".to_string(),
            "plan rejected: the answer has no ```yaml block",
        ),
    ];
    let before = project.read_state("features.yaml");
    for (answer, reason) in cases {
        answer_next(&project, &answer);
        let out = project.planner(&["plan", "--quiet"]);
        let stderr = text(&out.stderr);
        assert_eq!(code(&out), 1, "{reason}: {stderr}");
        assert!(stderr.contains(&format!("planner: {reason}")), "{stderr}");
        assert!(
            stderr.contains("hint: features.yaml was not changed"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
        assert_eq!(project.read_state("features.yaml"), before, "{reason}");
        assert!(!project.state_dir().join("plan.json").exists());
        let raw = project.read_state("raw.md");
        assert!(
            raw.lines()
                .last()
                .unwrap()
                .ends_with(&format!("planner - -: {reason}")),
            "{raw}"
        );
    }
}

#[test]
fn hand_edits_and_started_features_survive_a_second_plan() {
    let project = project_answering(
        "# mine\nfeatures: []\n",
        &answer("features:\n  - id: F-001\n    title: One\n    acceptance: [a]\n  - id: F-002\n    title: Two\n    acceptance: [b]\n  - id: F-003\n    title: Three\n    acceptance: [c]\n  - id: F-004\n    title: Four\n    acceptance: [d]\n"),
    );
    let out = project.planner(&["plan", "-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // F-001 is done, F-004 has started, the user rewords F-002; F-003 is left alone, so the
    // planner may replace it.
    write_state(&project, "F-001", "done", 2, "");
    write_state(&project, "F-004", "running", 1, "");
    let edited = project
        .read_state("features.yaml")
        .replace("title: Two", "title: Two, as I want it");
    project.write_state("features.yaml", &edited);

    answer_next(
        &project,
        &answer("features:\n  - id: F-001\n    title: One v2\n    acceptance: [a]\n  - id: F-002\n    title: Two v2\n    acceptance: [b]\n  - id: F-003\n    title: Three v2\n    acceptance: [c]\n  - id: F-004\n    title: Four v2\n    acceptance: [d]\n  - id: F-005\n    title: Five\n    acceptance: [e]\n    depends_on: [F-003]\n"),
    );
    let out = project.planner(&["plan", "-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "kept      F-001: done\nkept      F-002: edited by hand\nupdated   F-003: Three v2\nkept      F-004: in progress\nadded     F-005: Five\n"
    );
    let features = project.read_state("features.yaml");
    assert!(
        features.starts_with("# mine\nfeatures:\n  - id: F-001\n    title: One\n"),
        "{features}"
    );
    assert!(features.contains("title: Two, as I want it"));
    assert!(features.contains("title: Three v2"));
    assert!(features.contains("title: Four\n"));
    assert!(!features.contains("v2\n    acceptance:\n      - a"));
    assert_eq!(ids(&project), ["F-001", "F-002", "F-003", "F-004", "F-005"]);

    // The same plan again changes nothing at all.
    let before = project.snapshot();
    answer_next(
        &project,
        &answer("features:\n  - id: F-003\n    title: Three v2\n    acceptance: [c]\n"),
    );
    let out = project.planner(&["plan", "-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "unchanged F-003: Three v2\n");
    assert_eq!(project.read_state("features.yaml"), features);
    assert_eq!(
        before
            .iter()
            .find(|(p, _)| p.ends_with("plan.json"))
            .map(|(_, b)| b.clone()),
        Some(project.read_state("plan.json").into_bytes())
    );
}

#[test]
fn a_flow_style_list_is_refused_before_the_agent_runs() {
    let project = project_answering(
        "features: [{id: F-001, title: a}]\n",
        &answer("features:\n  - id: F-002\n    title: b\n    acceptance: [x]\n"),
    );
    let out = project.planner(&["plan", "-q"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    assert!(
        stderr.contains("features.yaml:1: the planner cannot edit a feature list in flow style"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: write the list in block style"),
        "{stderr}"
    );
    assert!(!project.state_dir().join("plans").exists());
}

const SEVEN: &str = "\
features:
  - id: F-006
    title: Storage
    acceptance: [data is saved]
  - id: F-007
    title: Sync everything
    acceptance: [everything syncs]
    depends_on: [F-006]
  # the last one
  - id: F-008
    title: Reports
    acceptance: [reports show synced data]
    depends_on: [F-007]
";

#[test]
fn replan_breaks_a_failed_feature_into_pieces_right_after_it() {
    let project = Project::new(
        SEVEN,
        r###"
scripts:
  - match: {role: planner}
    steps:
      - - expect_prompt: "FEATURE_ID=F-007"
        - expect_prompt: "## The feature to re-break"
        - expect_prompt: "max_iterations (10) reached without completion"
        - expect_prompt: "the websocket kept dropping"
        - expect_prompt: "Name them F-007.1, F-007.2"
        - cat: answer.md
"###,
    );
    std::fs::write(
        project.root().join("answer.md"),
        answer("features:\n  - id: F-007.1\n    title: Sync one record\n    acceptance: [one record syncs]\n    depends_on: [F-006]\n  - id: F-007.2\n    title: Sync in batches\n    acceptance: [a batch syncs]\n    depends_on: [F-007.1]\n"),
    )
    .unwrap();
    write_state(
        &project,
        "F-007",
        "failed",
        10,
        r#", "reason": "max_iterations (10) reached without completion""#,
    );
    let notes = "## Attempt 10 — worker (2026-04-24T10:00:00Z)\nTurns: ? | Commits: 0\nOutcome: ended without the promise\n\nthe websocket kept dropping\n\n";
    project.write_state("notes/F-007.md", notes);

    // Only a failed or blocked feature is re-broken.
    let out = project.planner(&["replan", "F-008", "-q"]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("F-008 has never run"),
        "{}",
        text(&out.stderr)
    );

    let out = project.planner(&["replan", "F-007", "-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "added     F-007.1: Sync one record\nadded     F-007.2: Sync in batches\n"
    );
    assert!(text(&out.stderr).contains("planner: re-broke F-007 into F-007.1, F-007.2"));
    assert_eq!(
        ids(&project),
        ["F-006", "F-007", "F-007.1", "F-007.2", "F-008"]
    );
    let features = project.read_state("features.yaml");
    assert!(
        features.contains("    depends_on: [F-006]\n  - id: F-007.1\n"),
        "{features}"
    );
    assert!(
        features.contains("  # the last one\n  - id: F-008\n"),
        "{features}"
    );

    let state = project.state("F-007");
    assert_eq!(state["status"], "failed");
    assert_eq!(
        state["superseded_by"],
        serde_json::json!(["F-007.1", "F-007.2"])
    );
    let attempt = state["attempts"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(attempt["role"], "planner");
    assert_eq!(attempt["outcome"], "completed");
    let run_id = attempt["run_id"].as_str().unwrap();
    assert!(run_id.ends_with("-planner-F-007"), "{run_id}");
    assert!(project
        .state_dir()
        .join("runs/F-007")
        .join(run_id)
        .join("result.json")
        .is_file());
    // The notes survive the re-breakdown.
    assert_eq!(project.read_state("notes/F-007.md"), notes);
    assert!(project
        .read_state("raw.md")
        .contains("planner F-007 -: re-broke F-007 into F-007.1, F-007.2"));

    // Once re-broken it is superseded, and not re-broken twice.
    let out = project.planner(&["replan", "F-007", "-q"]);
    assert_eq!(code(&out), 1);
    assert!(text(&out.stderr).contains("F-007 was already re-broken into F-007.1, F-007.2"));

    // The pieces are scheduled in its place: F-008 waits for both.
    write_state(&project, "F-006", "done", 1, "");
    let next = |limit: &str| text(&project.planner(&["next", "--limit", limit]).stdout);
    assert_eq!(next("9"), "F-007.1\n");
    write_state(&project, "F-007.1", "done", 1, "");
    assert_eq!(next("9"), "F-007.2\n");
    write_state(&project, "F-007.2", "done", 1, "");
    assert_eq!(next("9"), "F-008\n");
    let out = project.planner(&["status"]);
    assert!(
        text(&out.stdout).contains("F-007: superseded by F-007.1, F-007.2"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn the_status_board_in_text_and_json() {
    let project = Project::new(
        "features:\n  - id: F-001\n    title: Sign-up form\n  - id: F-002\n    title: Login\n    depends_on: [F-001]\n  - id: F-003\n    title: Logout\n",
        "steps: [[exit: 0]]\n",
    );
    write_state(
        &project,
        "F-001",
        "done",
        2,
        r#", "attempts": [
            {"run_id": "1-worker-F-001", "role": "worker", "iteration": 1, "started_at": "2026-04-24T10:00:00Z", "ended_at": "2026-04-24T10:05:00Z", "outcome": "no_promise", "tokens": 1200, "cost_usd": 0.5},
            {"run_id": "2-worker-F-001", "role": "worker", "iteration": 2, "started_at": "2026-04-24T10:05:00Z", "ended_at": "2026-04-24T10:09:30Z", "outcome": "completed", "tokens": 800}]"#,
    );
    write_state(
        &project,
        "F-002",
        "running",
        1,
        r#", "attempts": [{"run_id": "3-worker-F-002", "role": "worker", "iteration": 1, "started_at": "2026-04-24T10:10:00Z", "outcome": "started"}]"#,
    );
    let out = project.planner(&["status"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let identity = project.identity_dir().display().to_string();
    assert_eq!(
        text(&out.stdout).replace(&identity, "<identity>"),
        "\
ID     TITLE         STATUS       ITER  LAST              TIME
F-001  Sign-up form  done         2/10  worker completed  9m 30s
F-002  Login         interrupted  1/10  worker started    -
F-003  Logout        pending      0/10  -                 -

features:   1/3 done (1 pending, 1 interrupted)
iterations: 3
time:       9m 30s
tokens:     2000
cost:       $0.50
identity:   <identity> (set by HARNESS_IDENTITY_DIR)
"
    );

    let out = project.planner(&["status", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(board["features"][0]["id"], "F-001");
    assert_eq!(board["features"][0]["status"], "done");
    assert_eq!(board["features"][0]["time_spent_secs"], 570);
    assert_eq!(board["features"][0]["last"]["outcome"], "completed");
    assert_eq!(board["features"][1]["status"], "interrupted");
    assert_eq!(board["features"][2]["max_iterations"], 10);
    assert_eq!(board["totals"]["done"], 1);
    assert_eq!(board["totals"]["features"], 3);
    assert_eq!(board["totals"]["tokens"], 2000);
    assert_eq!(board["totals"]["cost_usd"], 0.5);
    assert_eq!(board["identity"]["dir"], identity.as_str());
    assert_eq!(board["identity"]["source"], "override");
}

#[test]
fn next_blocks_the_dependents_of_a_failure_and_outcome_tells_the_end() {
    let project = Project::new(
        "features:\n  - id: F-001\n    title: a\n  - id: F-002\n    title: b\n    depends_on: [F-001]\n  - id: F-003\n    title: c\n  - id: F-004\n    title: d\n    depends_on: [F-002]\n",
        "steps: [[exit: 0]]\n",
    );
    write_state(
        &project,
        "F-001",
        "failed",
        10,
        r#", "reason": "max_iterations (10) reached without completion""#,
    );
    let out = project.planner(&["next", "--limit", "5"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "F-003\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("planner: F-002 is blocked: dependency F-001 failed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("planner: F-004 is blocked: dependency F-002 is blocked"),
        "{stderr}"
    );
    assert_eq!(project.state("F-002")["status"], "blocked");
    assert_eq!(
        project.state("F-004")["reason"],
        "dependency F-002 is blocked"
    );
    assert_eq!(
        text(&project.planner(&["next", "--exclude", "F-003"]).stdout),
        ""
    );

    let out = project.planner(&["outcome"]);
    assert_eq!(code(&out), 3);
    assert_eq!(
        text(&out.stdout),
        "mission: 0/4 features done, 1 failed at max_iterations, 2 blocked, 1 not started\n"
    );

    // Its guardrail raised, F-001 is pending again: its dependents are unblocked.
    write_state(&project, "F-001", "pending", 10, "");
    let out = project.planner(&["next"]);
    assert_eq!(text(&out.stdout), "F-001\n");
    assert!(text(&out.stderr).contains("F-002 is no longer blocked"));
    assert_eq!(project.state("F-004")["status"], "pending");

    // Only a guardrail failure left: exit 2; everything done: exit 0.
    for id in ["F-002", "F-003", "F-004"] {
        write_state(&project, id, "done", 1, "");
    }
    write_state(
        &project,
        "F-001",
        "failed",
        10,
        r#", "reason": "max_iterations (10) reached without completion""#,
    );
    let out = project.planner(&["outcome"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stdout));
    write_state(&project, "F-001", "done", 10, "");
    let out = project.planner(&["outcome"]);
    assert_eq!(code(&out), 0);
    assert_eq!(text(&out.stdout), "mission: 4/4 features done\n");
}

#[test]
fn a_second_planner_stops_at_once_with_75() {
    let project = project_answering(
        HAND_WRITTEN,
        &answer("features:\n  - id: F-002\n    title: b\n    acceptance: [x]\n"),
    );
    project.scenario("steps: [[sleep: 3, cat: answer.md]]\n");
    let mut first = std::process::Command::new(harness_tests::bin_dir().join("planner"))
        .args(["plan", "-q", "-C"])
        .arg(&project.workdir)
        .env("HARNESS_HOME", harness_tests::repo_root())
        .env("HARNESS_IDENTITY_DIR", project.identity_dir())
        .env_remove("HARNESS_RUN_ID")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !project.state_dir().join("plans").is_dir() {
        assert!(Instant::now() < deadline, "the first planner never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = project.planner(&["plan", "-q"]);
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("the planner is already being run by pid"),
        "{}",
        text(&out.stderr)
    );
    assert!(first.wait().unwrap().success());
    assert_eq!(ids(&project), ["F-001", "F-002"]);
}

#[test]
fn a_structured_agent_is_planned_from_its_final_answer_only() {
    let draft = answer("features:\n  - id: X-1\n    title: draft\n    acceptance: [x]\n");
    let last = answer("features:\n  - id: F-002\n    title: Final\n    acceptance: [x]\n");
    let events = [
        serde_json::json!({"type": "assistant", "message": {"content": [{"type": "text", "text": draft}]}}),
        serde_json::json!({"type": "result", "result": last, "num_turns": 3, "total_cost_usd": 0.02}),
    ];
    let stream: String = events.iter().map(|e| format!("{e}\n")).collect();
    let project = project_answering(HAND_WRITTEN, &stream);
    project.config("output_format: claude-stream-json", "");
    let out = project.planner(&["plan", "-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "added     F-002: Final\n");
    assert_eq!(ids(&project), ["F-001", "F-002"]);
}

#[test]
fn the_pieces_of_a_re_broken_feature_see_its_notes() {
    let project = Project::new(
        "features:\n  - id: F-007\n    title: Sync\n    acceptance: [it syncs]\n  - id: F-007.1\n    title: Sync one\n    acceptance: [one syncs]\n",
        "steps:\n  - - expect_prompt: 'From F-007, which this feature re-breaks'\n    - expect_prompt: 'the websocket kept dropping'\n    - promise: true\n",
    );
    write_state(
        &project,
        "F-007",
        "failed",
        10,
        r#", "superseded_by": ["F-007.1"]"#,
    );
    project.write_state(
        "notes/F-007.md",
        "## Attempt 10 — worker (2026-04-24T10:00:00Z)\nTurns: ? | Commits: 0\nOutcome: x\n\nthe websocket kept dropping\n\n",
    );
    let out = project.run(&["F-007.1"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        project.state_dir().join("notes/F-007.md").exists(),
        "the parent's notes survive"
    );
}
