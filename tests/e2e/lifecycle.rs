//! The feature's lifecycle: checks after the promise (backpressure), phases with their gates,
//! and hooks on the lifecycle's events.

use std::os::unix::process::CommandExt;
use std::path::Path;

use harness_core::spec::config::{Config, Event};
use harness_core::spec::init::{uncommented, CONFIG_TEMPLATE};
use harness_tests::{
    code, json_lines, pairs, processes_matching, text, wait_for, write_executable, Project,
};

const ONE_FEATURE: &str =
    "features:\n  - id: F-001\n    title: Hello\n    acceptance:\n      - fixed.txt exists\n";

/// The phase of each of the feature's attempts.
fn phases_of(project: &Project, feature: &str) -> Vec<String> {
    project.state(feature)["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["phase"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_failed_check_voids_the_promise_and_its_output_reaches_the_next_prompt() {
    let project = Project::new(
        ONE_FEATURE,
        r###"
scripts:
  - match: {role: validator}
    steps: [[print: "fixed.txt is there <verdict>PASS</verdict>"]]
  - steps:
      - [write: {path: work.txt, content: a}, promise: true]
      - - expect_prompt: "## Gate after attempt 1"
        - expect_prompt: "check `tests` failed: exit code 3"
        - expect_prompt: "assertion failed: fixed.txt is missing"
        - expect_prompt: "check `slow` failed: timed out"
        - write: {path: fixed.txt, content: x}
        - promise: true
"###,
    );
    // The slow check leaves a process of its own behind in the background: the whole tree
    // is stopped at its timeout. So is what the tests check leaves behind when it exits.
    project.config(
        "",
        "validate: true\nchecks:\n  - name: tests\n    command: \"(sleep 4516 >/dev/null &); echo $HARNESS_FEATURE_ID $HARNESS_CHECK; test -f fixed.txt || { echo 'assertion failed: fixed.txt is missing'; exit 3; }\"\n  - {name: slow, command: \"test -f fixed.txt || { sleep 4517 & sleep 4517; }\", timeout_secs: 1}\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // The checks come before the validator, which only saw the promise that counted.
    assert_eq!(
        project.attempts("F-001"),
        pairs(&[
            ("worker", "gate_failed"),
            ("worker", "completed"),
            ("validator", "verified")
        ])
    );
    let state = project.state("F-001");
    assert_eq!(state["status"], "done");
    let gate = &state["attempts"][0]["gate"];
    assert_eq!(gate["passed"], false);
    assert_eq!(gate["checks"][0]["name"], "tests");
    assert_eq!(gate["checks"][0]["outcome"], "failed");
    assert_eq!(gate["checks"][0]["exit_code"], 3);
    assert_eq!(gate["checks"][1]["outcome"], "timed_out");
    assert_eq!(state["attempts"][1]["gate"]["passed"], true);
    // Each check's output is in the run's directory; the result says so too.
    let first = &project.run_dirs("F-001")[0];
    let log = std::fs::read_to_string(first.join("checks/1-tests.log")).unwrap();
    assert_eq!(log, "F-001 tests\nassertion failed: fixed.txt is missing\n");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(first.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["gate"]["checks"][0]["log"], "checks/1-tests.log");
    assert_eq!(result["outcome"], "gate_failed");
    for left in ["sleep 4517", "sleep 4516"] {
        assert!(
            processes_matching(left).is_empty(),
            "a check's process was left running: {left}"
        );
    }
    let second = project.prompt("F-001", 2);
    assert!(
        second.contains("### Check `tests` (failed): `(sleep 4516"),
        "{second}"
    );
    assert!(
        second.contains("After your promise, the harness runs these checks"),
        "{second}"
    );
}

/// The commented Plan → Research → Build → Verify example of `init`'s config.yaml, uncommented
/// as it is, played by a scripted agent: a plan that changes a file outside its allow list is
/// refused, each phase sees its own prompt and `HARNESS_PHASE`, and a run killed in the middle
/// phase resumes it.
#[test]
fn the_four_phases_of_the_init_template_run_as_they_are() {
    let project = Project::new(
        ONE_FEATURE,
        r###"
scripts:
  - match: {phase: plan}
    steps:
      - - expect_prompt: "## Phase: plan (1 of 4)"
        - expect_prompt: "Write the plan of this feature to docs/plans/"
        - print: "HARNESS_PHASE={phase}"
        - write: {path: docs/plans/F-001.md, content: "1. research 2. build"}
        - write: {path: README.md, content: "rewritten by the plan"}
        - promise: true
      - - expect_prompt: "changed outside the phase's allow list: README.md"
        - print: "HARNESS_PHASE={phase}"
        - write: {path: README.md, content: "the project\n"}
        - promise: true
  - match: {phase: research}
    steps:
      - - expect_prompt: "## Phase: research (2 of 4)"
        - print: "HARNESS_PHASE={phase}"
        - write: {path: docs/research/F-001.md, content: notes}
        - hang: true
      - - expect_prompt: "## Phase: research (2 of 4)"
        - print: "HARNESS_PHASE={phase}"
        - promise: true
  - match: {phase: build}
    steps:
      - - expect_prompt: "## Phase: build (3 of 4)"
        - print: "HARNESS_PHASE={phase}"
        - write: {path: fixed.txt, content: x}
        - commit: build
        - promise: true
  - match: {phase: verify}
    steps:
      - - expect_prompt: "## Phase: verify (4 of 4)"
        - expect_prompt: "every acceptance criterion holds"
        - print: "HARNESS_PHASE={phase}"
        - promise: true
"###,
    );
    std::fs::write(project.workdir.join("README.md"), "the project\n").unwrap();
    project.git(&["add", "README.md"]);
    project.git(&["commit", "-q", "-m", "readme"]);
    project.config("", &uncommented(CONFIG_TEMPLATE, "phases:"));

    // The first run gets to the research phase and is killed there, agent and all.
    let mut run = project
        .command(&["F-001"])
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for(&project.workdir.join("docs/research/F-001.md"));
    wait_for_output(&project, "F-001", "HARNESS_PHASE=research\n");
    // SAFETY: kills the process group the test created.
    unsafe { libc::kill(-(run.id() as i32), libc::SIGKILL) };
    run.wait().unwrap();
    let state = project.state("F-001");
    assert_eq!(state["phase"]["name"], "research");
    assert_eq!(state["phase"]["number"], 2);
    let refused = &state["attempts"][0]["gate"];
    assert_eq!(refused["outside_allow"], serde_json::json!(["README.md"]));
    assert_eq!(refused["checks"][0]["outcome"], "passed");
    // Where it stands is on the board, in --json, and in the next prompt `explain` shows.
    let status = text(&project.run(&["status"]).stdout);
    assert!(status.contains("research 2/4"), "{status}");
    let json: serde_json::Value =
        serde_json::from_slice(&project.run(&["status", "--json"]).stdout).unwrap();
    assert_eq!(json["features"][0]["phase"]["name"], "research");
    let explain = project.run(&["explain", "F-001"]);
    assert!(text(&explain.stdout).contains("## Phase: research (2 of 4)"));

    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let outcomes = [
        "gate_failed",
        "phase_passed",
        "interrupted",
        "phase_passed",
        "phase_passed",
        "completed",
    ];
    let worker: Vec<(&str, &str)> = outcomes.iter().map(|o| ("worker", *o)).collect();
    assert_eq!(project.attempts("F-001"), pairs(&worker));
    let each = ["plan", "plan", "research", "research", "build", "verify"];
    assert_eq!(phases_of(&project, "F-001"), each);
    for (dir, phase) in project.run_dirs("F-001").iter().zip(each) {
        let output = std::fs::read_to_string(dir.join("output.log")).unwrap();
        assert!(
            output.contains(&format!("HARNESS_PHASE={phase}\n")),
            "{output}"
        );
    }
    assert_eq!(project.state("F-001")["status"], "done");
}

/// Waits until an `output.log` of `feature`'s runs holds `line`: what an agent printed reaches
/// its run's log a moment after the agent goes on (a kill before that loses it).
fn wait_for_output(project: &Project, feature: &str, line: &str) {
    let runs = project.state_dir().join("runs").join(feature);
    let printed = || {
        std::fs::read_dir(&runs)
            .into_iter()
            .flatten()
            .flatten()
            .any(|run| {
                std::fs::read_to_string(run.path().join("output.log"))
                    .is_ok_and(|o| o.contains(line))
            })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !printed() {
        assert!(
            std::time::Instant::now() < deadline,
            "{line:?} never reached output.log"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Every event's hooks, with the payload on stdin and its fields in the environment; a hook
/// that fails and one that hangs past its timeout are recorded and said, and the run goes on.
#[test]
fn hooks_hear_every_event_and_a_failing_or_hanging_one_stops_nothing() {
    let project = Project::new(
        "features:\n  - {id: F-001, title: Good}\n  - {id: F-002, title: Bad}\n  - {id: F-003, title: After bad, depends_on: [F-002]}\n",
        r###"
scripts:
  - match: {role: validator}
    steps: [["print": "<verdict>PASS</verdict>"]]
  - match: {feature: F-001, phase: build}
    steps:
      - [print: "Claude AI usage limit reached|1777000000", exit: 1]
      - [promise: true]
      - [write: {path: src/built, content: x}, promise: true]
  - match: {feature: F-001, phase: verify}
    steps:
      - [write: {path: fixed, content: x}, promise: true]
  - match: {feature: F-004}
    steps: [[sleep: 30]]
  - steps: [[print: "not yet"]]
"###,
    );
    let record = project.root().join("record.sh");
    let events = project.root().join("events.jsonl");
    write_executable(
        &record,
        &format!(
            "#!/bin/sh\ncat >> '{}'\nprintf '%s|%s|%s|%s\\n' \"$HARNESS_EVENT\" \"$HARNESS_FEATURE_ID\" \"$HARNESS_PHASE\" \"$HARNESS_MESSAGE\" >> '{}'\n",
            events.display(),
            project.root().join("env.txt").display()
        ),
    );
    let every = "iteration_start agent_stop phase_passed phase_failed checks_failed feature_done feature_failed feature_blocked budget_reached rate_limit_wait mission_done";
    let mut hooks = String::from("hooks:\n");
    for event in every.split(' ') {
        hooks.push_str(&format!(
            "  {event}:\n    - command: [{:?}]\n",
            record.display().to_string()
        ));
        if event == "feature_done" {
            hooks.push_str("    - command: \"echo broken >&2; exit 7\"\n");
            hooks.push_str("    - {command: \"sleep 4519\", timeout_secs: 1}\n");
        }
    }
    let lifecycle = format!(
        "validate: true\nmax_iterations: 4\nrate_limit: {{wait_secs: 0, max_waits: 2}}\nchecks: [{{name: tests, command: \"test -f fixed\"}}]\nphases:\n  - {{name: build, checks: [{{name: built, command: \"test -f src/built\"}}]}}\n  - {{name: verify}}\n{hooks}"
    );
    project.config("", &lifecycle);
    let out = project.run(&["all"]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "warning: the feature_done hook `echo broken >&2; exit 7` failed: exit code 7"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("the feature_done hook `sleep 4519` failed: still running after 1 s"),
        "{stderr}"
    );
    assert!(
        processes_matching("sleep 4519").is_empty(),
        "a hook was left running"
    );
    assert_eq!(project.state("F-001")["status"], "done");

    // A budget, for the last event: F-004's agent runs past the one second it is left.
    project.write_state(
        "features.yaml",
        "features:\n  - {id: F-001, title: Good}\n  - {id: F-002, title: Bad}\n  - {id: F-003, title: After bad, depends_on: [F-002]}\n  - {id: F-004, title: Slow}\n",
    );
    project.config(
        "",
        &format!("{lifecycle}budgets: {{feature: {{max_wall_secs: 1}}}}\n"),
    );
    let out = project.run(&["F-004"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    // Spent, it stops the next run before its agent starts: the hooks hear of it again.
    let out = project.run(&["F-004"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert_eq!(
        project.state("F-004")["attempts"].as_array().unwrap().len(),
        1
    );

    let payloads = json_lines(&std::fs::read_to_string(&events).unwrap());
    let first = |event: &str| {
        payloads
            .iter()
            .find(|p| p["event"] == event)
            .unwrap_or_else(|| panic!("no {event} in {payloads:#?}"))
            .clone()
    };
    for event in every.split(' ') {
        let payload = first(event);
        assert!(
            payload["time"].is_string() && payload["message"].is_string(),
            "{payload}"
        );
        assert_eq!(payload["workdir"], project.workdir.display().to_string());
    }
    check_payloads(&first);
    let budgets = payloads
        .iter()
        .filter(|p| p["event"] == "budget_reached")
        .count();
    assert_eq!(budgets, 2, "{payloads:#?}");
    check_records(&project);
    let env = std::fs::read_to_string(project.root().join("env.txt")).unwrap();
    assert!(env.contains("checks_failed|F-001|build|F-001: the promise does not count: check `built` failed: exit code 1\n"), "{env}");
    assert!(
        env.contains("mission_done|||mission: 1/3 features done"),
        "{env}"
    );
}

/// What each event's payload says of it.
fn check_payloads(first: &dyn Fn(&str) -> serde_json::Value) {
    let start = first("iteration_start");
    assert_eq!(
        (
            &start["feature_id"],
            &start["iteration"],
            &start["max_iterations"]
        ),
        (&"F-001".into(), &1.into(), &4.into())
    );
    assert_eq!(
        (
            &start["phase"],
            &start["phase_number"],
            &start["phase_count"]
        ),
        (&"build".into(), &1.into(), &2.into())
    );
    assert!(start["run_id"].as_str().unwrap().ends_with("-worker-F-001"));
    let limit = first("rate_limit_wait");
    assert_eq!(
        (
            &limit["wait_secs"],
            &limit["wait_number"],
            &limit["max_waits"]
        ),
        (&0.into(), &1.into(), &2.into())
    );
    // The agent named a reset time, already past: the wait is rate_limit.wait_secs.
    assert_eq!(
        (&limit["outcome"], &limit["resets_at"]),
        (&"rate_limited".into(), &"2026-04-24T03:06:40Z".into())
    );
    let stop = first("agent_stop");
    assert_eq!(
        (&stop["decision"], &stop["outcome"]),
        (&"wait".into(), &"rate_limited".into())
    );
    assert_eq!(
        (&stop["promise_found"], &stop["tokens"], &stop["cost_usd"]),
        (
            &false.into(),
            &serde_json::Value::Null,
            &serde_json::Value::Null
        )
    );
    let checks = first("checks_failed");
    assert_eq!(
        (
            &checks["checks"][0]["name"],
            &checks["checks"][0]["exit_code"]
        ),
        (&"built".into(), &1.into())
    );
    assert_eq!(checks["reasons"][0], "check `built` failed: exit code 1");
    let refused = first("phase_failed");
    assert_eq!(
        (&refused["phase"], &refused["passed"]),
        (&"build".into(), &false.into())
    );
    let passed = first("phase_passed");
    assert_eq!(
        (&passed["phase"], &passed["next_phase"]),
        (&"build".into(), &"verify".into())
    );
    let done = first("feature_done");
    assert_eq!(
        (&done["feature_id"], &done["status"], &done["iteration"]),
        (&"F-001".into(), &"done".into(), &3.into())
    );
    let failed = first("feature_failed");
    assert_eq!(
        (&failed["feature_id"], &failed["status"]),
        (&"F-002".into(), &"failed".into())
    );
    assert!(
        failed["reason"].as_str().unwrap().contains("stalled"),
        "{failed}"
    );
    let blocked = first("feature_blocked");
    assert_eq!(
        (&blocked["feature_id"], &blocked["reason"]),
        (&"F-003".into(), &"dependency F-002 failed".into())
    );
    let mission = first("mission_done");
    assert_eq!(
        (&mission["feature_id"], &mission["exit_code"]),
        (&serde_json::Value::Null, &3.into())
    );
    assert_eq!(
        mission["features"],
        serde_json::json!({"done": 1, "failed": 1, "blocked": 1})
    );
    let budget = first("budget_reached");
    assert_eq!(budget["feature_id"], "F-004");
    assert!(
        budget["budget"].as_str().unwrap().contains("time budget"),
        "{budget}"
    );
}

/// `hooks/runs.jsonl` records every run; only the failed ones keep their output.
fn check_records(project: &Project) {
    let records = json_lines(&project.read_state("hooks/runs.jsonl"));
    let failed: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["outcome"] != "passed")
        .collect();
    assert_eq!(failed.len(), 2, "{records:#?}");
    assert_eq!(
        (&failed[0]["outcome"], &failed[0]["exit_code"]),
        (&"failed".into(), &7.into())
    );
    assert_eq!(failed[1]["outcome"], "timed_out");
    let log = failed[0]["log"].as_str().unwrap();
    assert_eq!(project.read_state(log), "broken\n");
    let kept = std::fs::read_dir(project.state_dir().join("hooks"))
        .unwrap()
        .count();
    assert_eq!(kept, 3, "runs.jsonl and the two failed hooks' output");
}

#[test]
fn a_failing_hook_with_on_error_stop_is_a_gate() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [write: {path: fixed.txt, content: x}, promise: true]\n",
    );
    let gate = |command: &str| {
        format!("hooks:\n  iteration_start:\n    - {{command: {command:?}, on_error: stop}}\n")
    };
    project.config("", &gate("echo not now; exit 1"));
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("F-001 stopped: the iteration_start hook `echo not now; exit 1` failed: exit code 1 (on_error: stop)"),
        "{}",
        text(&out.stderr)
    );
    let state = project.state("F-001");
    assert_eq!(state["status"], "pending");
    assert_eq!(
        state["attempts"].as_array().unwrap().len(),
        0,
        "no agent ran"
    );
    project.config("", &gate("true"));
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}

/// The README's hooks example, under the marker that names this test.
fn readme_hooks() -> String {
    let readme = std::fs::read_to_string(harness_tests::repo_root().join("README.md")).unwrap();
    let marker = "<!-- hooks example: tests/e2e/lifecycle.rs runs these -->\n```yaml\n";
    let start = readme.find(marker).expect("the README's hooks example") + marker.len();
    let end = start + readme[start..].find("```").unwrap();
    readme[start..end].to_string()
}

/// Stand-ins for notify-send, curl and mail that write their arguments and stdin to `log`.
fn fake_notifiers(dir: &Path, log: &Path) -> String {
    for name in ["notify-send", "curl", "mail"] {
        write_executable(
            &dir.join(name),
            &format!(
                "#!/bin/sh\n{{ echo \"== {name}\"; for arg in \"$@\"; do printf 'arg: %s\\n' \"$arg\"; done; echo 'stdin:'; cat; echo; }} >> '{}'\n",
                log.display()
            ),
        );
    }
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap())
}

/// The README's ready-made notification hooks run as they are: each calls its command with the
/// event's words, and the Slack one's JSON survives quotes and backslashes in a message.
#[test]
fn the_readme_notification_hooks_work_as_written() {
    let project = Project::new(
        "features:\n  - {id: F-001, title: Good}\n  - {id: F-002, title: Bad}\n  - {id: F-003, title: After, depends_on: [F-002]}\n",
        "scripts:\n  - match: {feature: F-001}\n    steps: [[promise: true]]\n  - steps: [[print: not yet]]\n",
    );
    let hooks = readme_hooks();
    project.config("", &format!("max_iterations: 1\n{hooks}"));
    let log = project.root().join("calls.log");
    let path = fake_notifiers(&project.root().join("bin"), &log);
    let out = project
        .command(&["all"])
        .env("PATH", &path)
        .env("SLACK_WEBHOOK_URL", "https://hooks.slack.test/T0/B0")
        .env("NTFY_TOPIC", "my-topic")
        .env("HOOK_URL", "https://hooks.test/harness")
        .env("USER", "me")
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("hook"), "{}", text(&out.stderr));
    let calls = std::fs::read_to_string(&log).unwrap();
    for expected in [
        "== notify-send\narg: --app-name=harness\narg: F-001 done\narg: F-001 done on iteration 1/1\n",
        "arg: {\"text\": \"F-002 failed: iteration 1/1: ended without the promise, and max_iterations is reached\"}\narg: https://hooks.slack.test/T0/B0\n",
        "arg: Title: harness: F-003 blocked\narg: -d\narg: F-003 is blocked: dependency F-002 failed\narg: https://ntfy.sh/my-topic\n",
        "== mail\narg: -s\narg: harness: mission done\narg: me\nstdin:\nmission: 1/3 features done",
        "arg: --data-binary\narg: @-\narg: https://hooks.test/harness\nstdin:\n{\"event\":\"agent_stop\"",
    ] {
        assert!(calls.contains(expected), "{expected}\nnot in\n{calls}");
    }

    // The Slack message as JSON, whatever the message holds.
    std::fs::remove_file(&log).unwrap();
    let config = Config::parse(
        &format!("agent:\n  command: [a]\n{hooks}"),
        Path::new("README.md"),
    )
    .unwrap();
    let slack = config.hooks[&Event::FeatureFailed][0].command.argv();
    let message = r#"F-9 said "done" \ and C:\dir"#;
    let status = std::process::Command::new(&slack[0])
        .args(&slack[1..])
        .env("PATH", &path)
        .env("HARNESS_MESSAGE", message)
        .env("SLACK_WEBHOOK_URL", "https://hooks.slack.test/T0/B0")
        .stdin(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let calls = std::fs::read_to_string(&log).unwrap();
    let body = calls
        .lines()
        .find_map(|line| line.strip_prefix("arg: {"))
        .map(|rest| format!("{{{rest}"))
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["text"], message);
}

#[test]
fn a_phase_with_an_allow_list_outside_git_is_refused_naming_the_config() {
    let project = Project::bare();
    assert_eq!(code(&project.run(&["init"])), 0);
    project.write_state("features.yaml", ONE_FEATURE);
    project.scenario("steps:\n  - [promise: true]\n");
    project.config("", "phases:\n  - {name: plan, allow: [docs/**]}\n");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("config.yaml: phase plan has an allow: list, which needs the project to be a git repository"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: `git init` the project"), "{stderr}");
    assert!(
        !project.state_dir().join("runs/F-001").exists(),
        "nothing changed"
    );
}

/// A phase's own max_iterations fails the feature before the shared guardrail, saying how to go
/// on; raised in config.yaml, the feature goes on in that phase.
#[test]
fn a_phase_that_reaches_its_own_cap_fails_and_goes_on_once_it_is_raised() {
    let project = Project::new(
        ONE_FEATURE,
        r###"
scripts:
  - match: {phase: plan}
    steps:
      - [print: "no plan yet", promise: true]
      - [print: "still none", promise: true]
      - [write: {path: plan.md, content: "the plan"}, promise: true]
  - match: {phase: build}
    steps:
      - [write: {path: fixed.txt, content: x}, promise: true]
"###,
    );
    let phases = |cap: u32| {
        format!("phases:\n  - {{name: plan, max_iterations: {cap}, checks: [{{name: planned, command: \"test -f plan.md\"}}]}}\n  - {{name: build}}\n")
    };
    project.config("", &phases(2));
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains("phase plan's max_iterations is reached\nhint: raise that phase's max_iterations in config.yaml, then continue with `./run.sh F-001`"),
        "{stderr}"
    );
    let state = project.state("F-001");
    assert_eq!(state["status"], "failed");
    assert_eq!(
        state["reason"],
        "phase plan's max_iterations (2) reached without passing its gate"
    );
    // Well within the feature's own guardrail.
    assert_eq!(
        (&state["iteration_count"], &state["max_iterations"]),
        (&2.into(), &10.into())
    );
    // Run again as it is, it stops at once.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["iteration_count"], 2);

    project.config("", &phases(3));
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        phases_of(&project, "F-001"),
        ["plan", "plan", "plan", "build"]
    );
    assert_eq!(project.state("F-001")["status"], "done");
}

/// Ctrl-C while a check runs: the check's whole tree is stopped, the gate decides nothing (the
/// attempt is interrupted, the feature resumable), and no hook runs after the interrupt.
#[test]
fn ctrl_c_during_a_check_stops_it_and_leaves_the_feature_resumable() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [write: {path: fixed.txt, content: x}, promise: true]\n",
    );
    let heard = project.root().join("heard");
    let started = project.root().join("check-started");
    project.config(
        "",
        &format!(
            "checks: [{{name: slow, command: \"test -f '{0}' || {{ touch '{0}'; sleep 4521 & sleep 4521; }}\"}}]\nhooks: {{agent_stop: [{{command: \"touch '{1}'\"}}]}}\n",
            started.display(),
            heard.display()
        ),
    );
    let run = project
        .command(&["F-001"])
        .process_group(0)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&started);
    // SAFETY: a terminal's Ctrl-C, to the process group the test created.
    unsafe { libc::kill(-(run.id() as i32), libc::SIGINT) };
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    // A hook not started is no failure to warn of.
    assert!(!text(&out.stderr).contains("hook"), "{}", text(&out.stderr));
    assert!(
        processes_matching("sleep 4521").is_empty(),
        "a check's process outlived Ctrl-C"
    );
    let state = project.state("F-001");
    assert_eq!(state["status"], "pending");
    assert_eq!(state["attempts"][0]["outcome"], "interrupted");
    assert_eq!(
        state["attempts"][0]["gate"]["checks"][0]["outcome"],
        "interrupted"
    );
    assert!(!heard.exists(), "a hook ran after the interrupt");
    let records = project.read_state("hooks/runs.jsonl");
    assert!(records.contains("\"outcome\":\"interrupted\""), "{records}");

    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");
    assert!(heard.exists());
}

/// An `on_error: stop` hook that fails on the agent_stop of an attempt the service held up
/// stops the run there: no wait follows, nor its rate_limit_wait.
#[test]
fn a_gate_hook_that_fails_on_a_setback_stops_before_the_wait() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: \"rate limit reached\", exit: 1]\n  - [promise: true]\n",
    );
    let waited = project.root().join("waited");
    project.config(
        "",
        &format!(
            "rate_limit: {{wait_secs: 0, max_waits: 3}}\nhooks:\n  agent_stop: [{{command: \"exit 5\", on_error: stop}}]\n  rate_limit_wait: [{{command: \"touch '{}'\"}}]\n",
            waited.display()
        ),
    );
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains(
            "F-001 stopped: the agent_stop hook `exit 5` failed: exit code 5 (on_error: stop)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("waited"), "{stderr}");
    assert!(!waited.exists(), "a wait followed the stop");
    let state = project.state("F-001");
    assert_eq!(state["status"], "pending");
    assert_eq!(state["attempts"][0]["outcome"], "rate_limited");
}

/// After the last phase the feature goes to the validator; a rejection sends it back to the
/// worker in that last phase, not to the first.
#[test]
fn a_rejection_after_the_last_phase_goes_back_to_it() {
    let project = Project::new(
        ONE_FEATURE,
        r###"
scripts:
  - match: {role: validator}
    steps:
      - [print: "<verdict>FAIL</verdict> fixed.txt is empty"]
      - [print: "<verdict>PASS</verdict>"]
  - match: {phase: plan}
    steps: [[promise: true]]
  - match: {phase: build}
    steps:
      - [write: {path: fixed.txt, content: ""}, promise: true]
      - - expect_prompt: "## Phase: build (2 of 2)"
        - expect_prompt: "fixed.txt is empty"
        - write: {path: fixed.txt, content: x}
        - promise: true
"###,
    );
    project.config(
        "",
        "validate: true\nphases:\n  - {name: plan}\n  - {name: build}\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(
        project.attempts("F-001"),
        pairs(&[
            ("worker", "phase_passed"),
            ("worker", "completed"),
            ("validator", "rejected"),
            ("worker", "completed"),
            ("validator", "verified")
        ])
    );
    let state = project.state("F-001");
    let worker_phases: Vec<&str> = state["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["role"] == "worker")
        .map(|a| a["phase"].as_str().unwrap())
        .collect();
    assert_eq!(worker_phases, ["plan", "build", "build"]);
    assert_eq!(state["phase"]["name"], "build");
}
