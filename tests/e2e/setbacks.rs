//! Setbacks, end to end: what the service (not the agent's work) ends an attempt with — a rate or
//! usage limit, a transient service error — is waited out, never counted as an iteration nor
//! toward the stall; running out of waits stops the run with its own reason (exit 2), resumable
//! by running it again. The CLIs' own error output is replayed from `tests/fixtures/`, through
//! the scripted agent and through stand-ins for `claude` and `codex` run by their presets.

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use harness_tests::{code, json_lines, repo_root, text, wait_at_most, write_executable, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

/// A Claude stream-json result that completes.
const CLAUDE_DONE: &str = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Done. <promise>TASK_COMPLETE</promise>","total_cost_usd":0.01,"usage":{"input_tokens":10,"output_tokens":5}}"#;

fn fixture(name: &str) -> String {
    repo_root()
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn outcomes(project: &Project) -> Vec<String> {
    project.state("F-001")["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap().to_string())
        .collect()
}

/// The lines of `stderr` that say the worker waits.
fn waiting_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("; waiting "))
        .collect()
}

#[test]
fn waits_never_count_toward_the_stall_and_running_out_of_them_stops_resumably() {
    // Regression: when rate_limit.max_waits ran out, the feature failed as "stalled: 3
    // iterations in a row changed nothing … re-break it with ./run.sh replan": the waits counted
    // toward the stall, the note lost the limit's text, and every "waiting" line came twice.
    let limit = "You''ve hit your session limit · resets 3pm (UTC)";
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [print: '{limit}', exit: 1]\n  - [print: '{limit}', exit: 1]\n  - [print: '{limit}', exit: 1]\n  - [expect_prompt: 'Iteration 1 of', promise: true]\n"
        ),
    );
    project.config(
        "",
        "stall_iterations: 2\nrate_limit: {wait_secs: 0, max_waits: 2, max_wait_secs: 1}\n",
    );
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert_eq!(outcomes(&project), ["rate_limited"; 3]);
    let state = project.state("F-001");
    assert_eq!(state["status"], "pending", "{state:#}");
    assert_eq!(state["iteration_count"], 0);
    let reason = state["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("a rate or usage limit (\"You've hit your session limit")
            && reason.contains("after 2 waits in a row (it resets at "),
        "{reason}"
    );
    assert!(
        stderr.contains("F-001 stopped: the agent met a rate or usage limit")
            && stderr.contains("hint: run it again to resume: `./run.sh F-001`"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("stalled") && !stderr.contains("replan"),
        "{stderr}"
    );
    // Each wait said once, capped by max_wait_secs though the agent named a later reset.
    let waits = waiting_lines(&stderr);
    assert_eq!(waits.len(), 2, "{stderr}");
    assert!(
        waits[0]
            .contains("waiting 1s, the most rate_limit.max_wait_secs allows, though it resets at ")
            && waits[0].ends_with("(wait 1 of 2, not counted as an iteration)"),
        "{stderr}"
    );
    // The notes keep what the agent said.
    let notes = project.read_state("notes/F-001.md");
    let said = "Outcome: hit a rate or usage limit (agent exited with code 1): You've hit your session limit · resets 3pm (UTC)";
    assert_eq!(notes.matches(said).count(), 3, "{notes}");
    let board = text(&project.run(&["status"]).stdout);
    assert!(
        board.contains("F-001: pending: a rate or usage limit"),
        "{board}"
    );

    // A plain re-run resumes, with iteration 1.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["status"], "done");
    assert_eq!(state["iteration_count"], 1);
    assert!(state["reason"].is_null(), "{state:#}");
}

#[test]
fn a_usage_limit_from_claude_code_is_waited_out_until_its_reset_capped() {
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [cat: {:?}, exit: 1]\n  - [print: '{CLAUDE_DONE}']\n",
            fixture("claude_session_limit.jsonl")
        ),
    );
    project.config(
        "output_format: claude-stream-json\n",
        "rate_limit: {wait_secs: 0, max_waits: 3, max_wait_secs: 1}\n",
    );
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    assert_eq!(outcomes(&project), ["rate_limited", "completed"]);
    assert_eq!(project.state("F-001")["iteration_count"], 1);
    let waits = waiting_lines(&stderr);
    assert_eq!(waits.len(), 1, "{stderr}");
    assert!(
        waits[0].contains("(\"You've hit your session limit · resets 3pm (UTC)\")")
            && waits[0].contains("though it resets at ")
            && waits[0].contains("T15:00:00Z"),
        "{stderr}"
    );
}

#[test]
fn a_service_error_is_waited_out_with_back_off_and_not_counted() {
    // Regression: each 529 ended the iteration as "agent exited with code 1", and the feature
    // failed at max_iterations within seconds.
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [cat: {0:?}, exit: 1]\n  - [cat: {0:?}, exit: 1]\n  - [print: '{CLAUDE_DONE}']\n",
            fixture("claude_overloaded.jsonl")
        ),
    );
    // The hooks hear of each wait, as of a rate limit's.
    let heard = project.root().join("waits.jsonl");
    project.config(
        "output_format: claude-stream-json\n",
        &format!(
            "max_iterations: 1\nservice_errors: {{wait_secs: 0, max_waits: 5}}\nhooks: {{rate_limit_wait: [{{command: \"cat >> '{}'\"}}]}}\n",
            heard.display()
        ),
    );
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    assert_eq!(
        outcomes(&project),
        ["service_error", "service_error", "completed"]
    );
    let waits = json_lines(&std::fs::read_to_string(&heard).unwrap());
    let said: Vec<_> = waits
        .iter()
        .map(|w| {
            (
                w["outcome"].clone(),
                w["wait_number"].clone(),
                w["resets_at"].clone(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("service_error".into(), 1.into(), serde_json::Value::Null),
            ("service_error".into(), 2.into(), serde_json::Value::Null)
        ]
    );
    assert_eq!(project.state("F-001")["iteration_count"], 1);
    let waits = waiting_lines(&stderr);
    assert_eq!(waits.len(), 2, "{stderr}");
    assert!(
        waits[1].starts_with(
            "worker: F-001: the agent met a service error (\"API Error: 529 Overloaded."
        ) && waits[1].contains("(wait 2 of 5, not counted as an iteration)"),
        "{stderr}"
    );
    // The next prompt's notes keep what the agent's CLI said.
    assert!(project.prompt("F-001", 3).contains(
        "Outcome: met a service error (agent exited with code 1): API Error: 529 Overloaded."
    ));
}

#[test]
fn an_agent_that_goes_silent_after_a_service_error_is_stopped_by_the_idle_timer() {
    // A CLI still retrying when it falls silent is no setback it gave up on: the timers stop it,
    // and the attempt is an iteration, as for any silent agent.
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [cat: {:?}, hang: true]\n  - [print: '{CLAUDE_DONE}']\n",
            fixture("claude_overloaded.jsonl")
        ),
    );
    project.config(
        "output_format: claude-stream-json\ntimeout_secs: 60\nidle_timeout_secs: 1\nkill_grace_secs: 1\n",
        "service_errors: {wait_secs: 0}\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(outcomes(&project), ["timed_out", "completed"]);
    assert_eq!(project.state("F-001")["iteration_count"], 2);
    assert!(project
        .prompt("F-001", 2)
        .contains("agent printed nothing for 1 s and was stopped"));
}

#[test]
fn a_wait_is_interrupted_at_once_and_the_feature_resumes() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: 'Claude AI usage limit reached', exit: 1]\n  - [promise: true]\n",
    );
    project.config(
        "",
        "rate_limit: {wait_secs: 3600, max_waits: 3, max_wait_secs: 3600}\n",
    );
    let mut child = project
        .command(&["F-001"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // The attempt's record, once it ended, is in attempts.jsonl or still in state.json.
    let recorded = || {
        ["state.json", "attempts.jsonl"].iter().any(|name| {
            project
                .read_state(&format!("runs/F-001/{name}"))
                .contains("rate_limited")
        })
    };
    while !recorded() {
        assert!(Instant::now() < deadline, "the limit was never recorded");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signals the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_at_most(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130));
    let state = project.state("F-001");
    assert_eq!(state["status"], "pending");
    assert_eq!(state["iteration_count"], 0);
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["iteration_count"], 1);
}

/// A stand-in for a CLI on PATH: `script` (a shell script body, after the prompt is read).
fn stand_in(project: &Project, name: &str, script: &str) -> String {
    let bin = project.root().join("bin");
    write_executable(
        &bin.join(name),
        &format!("#!/bin/sh\ncat >/dev/null\n{script}\n"),
    );
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs F-001 with the `preset` agent, PATH being `path`, and checks that the first attempt
/// was a service error waited out and the second completed.
fn runs_through_a_service_error(project: &Project, preset: &str, path: &str) {
    project.write_state(
        "config.yaml",
        &format!("agent:\n  preset: {preset}\nvalidate: false\nservice_errors: {{wait_secs: 0}}\n"),
    );
    let out = project
        .command(&["F-001"])
        .env("PATH", path)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{}\n{stderr}", text(&out.stdout));
    assert_eq!(outcomes(project), ["service_error", "completed"]);
    assert_eq!(project.state("F-001")["iteration_count"], 1);
    assert_eq!(waiting_lines(&stderr).len(), 1, "{stderr}");
}

/// A file that does not exist the first time a stand-in runs, and does after.
fn first_time_mark(project: &Project) -> PathBuf {
    project.root().join("ran-once")
}

#[test]
fn the_claude_preset_leaves_the_long_retries_to_the_harness() {
    // Claude Code retries a failed request itself, with back-off, 10 times by default: with its
    // own retries, each 529 held the iteration in the CLI until timeout_secs. The preset cuts
    // them to a couple of quick ones; the harness waits out the error the CLI then reports.
    let project = Project::new(ONE_FEATURE, "steps: [[promise: true]]\n");
    let mark = first_time_mark(&project);
    let path = stand_in(
        &project,
        "claude",
        &format!(
            "[ \"$CLAUDE_CODE_MAX_RETRIES\" = 2 ] || {{ echo \"CLAUDE_CODE_MAX_RETRIES=$CLAUDE_CODE_MAX_RETRIES\"; exit 7; }}\nif [ ! -e {mark:?} ]; then touch {mark:?}; cat {:?}; exit 1; fi\necho '{CLAUDE_DONE}'",
            fixture("claude_overloaded.jsonl")
        ),
    );
    runs_through_a_service_error(&project, "claude", &path);
}

#[test]
fn the_codex_preset_waits_out_a_lost_stream_once_codex_gives_up() {
    let project = Project::new(ONE_FEATURE, "steps: [[promise: true]]\n");
    let mark = first_time_mark(&project);
    let done = [
        r#"{"type":"turn.started"}"#,
        r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Done. <promise>TASK_COMPLETE</promise>"}}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":7}}"#,
    ]
    .map(|line| format!("echo '{line}'"))
    .join("\n");
    let path = stand_in(
        &project,
        "codex",
        &format!(
            "if [ ! -e {mark:?} ]; then touch {mark:?}; cat {:?}; exit 1; fi\n{done}",
            fixture("codex_stream_error.jsonl")
        ),
    );
    runs_through_a_service_error(&project, "codex", &path);
    assert!(project
        .prompt("F-001", 2)
        .contains("met a service error (agent exited with code 1): stream disconnected before"));
}

/// A project whose validator (the claude preset's output, two waits allowed) meets the CLI's
/// overload error `held` times, then passes; the worker completes once. Then `./run.sh F-001`.
fn validator_held_up(held: usize) -> (Project, Output) {
    validator_held_up_with(held, "")
}

/// [`validator_held_up`], with `more` config (YAML lines).
fn validator_held_up_with(held: usize, more: &str) -> (Project, Output) {
    let overloaded = format!(
        "      - [cat: {:?}, exit: 1]\n",
        fixture("claude_overloaded.jsonl")
    );
    let scenario = format!(
        "scripts:\n  - match: {{role: validator}}\n    steps:\n{}      - [print: '{}']\n  - steps:\n      - [print: '{}']\n",
        overloaded.repeat(held),
        r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"<verdict>PASS</verdict>","usage":{"input_tokens":1,"output_tokens":1}}"#,
        CLAUDE_DONE
    );
    let project = Project::new(ONE_FEATURE, &scenario);
    project.config(
        "output_format: claude-stream-json\n",
        &format!("validate: true\nservice_errors: {{wait_secs: 0, max_waits: 2}}\n{more}"),
    );
    let out = project.run(&["F-001"]);
    (project, out)
}

#[test]
fn a_validator_held_up_by_the_service_waits_and_validates_again_never_rejecting() {
    // Regression: a validator that met a 529 rejected the feature ("the validator did not
    // finish: agent exited with code 1"), costing the worker an iteration and its agent a run.
    let (project, out) = validator_held_up(2);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    assert_eq!(
        project.attempts("F-001"),
        [
            ("worker", "completed"),
            ("validator", "service_error"),
            ("validator", "service_error"),
            ("validator", "verified"),
        ]
        .map(|(r, o)| (r.to_string(), o.to_string()))
    );
    let state = project.state("F-001");
    assert_eq!(state["status"], "done", "{state:#}");
    assert_eq!(state["iteration_count"], 1, "{state:#}");
    let waits = waiting_lines(&stderr);
    assert_eq!(waits.len(), 2, "{stderr}");
    assert!(
        waits[1].contains("the validator met a service error")
            && waits[1].ends_with("(wait 2 of 2, not counted as an iteration)"),
        "{stderr}"
    );
    assert!(!stderr.contains("rejected"), "{stderr}");
}

/// A file that a hook on `event` appends each payload to, and the config's `hooks:` line.
fn heard_by(event: &str) -> (tempfile::NamedTempFile, String) {
    let heard = tempfile::NamedTempFile::new().unwrap();
    let hook = format!(
        "hooks: {{{event}: [{{command: \"cat >> '{}'\"}}]}}\n",
        heard.path().display()
    );
    (heard, hook)
}

#[test]
fn the_hooks_hear_of_the_validators_waits() {
    // Regression: only the worker's waits reached the rate_limit_wait hook.
    let (heard, hook) = heard_by("rate_limit_wait");
    let (_project, out) = validator_held_up_with(2, &hook);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let waits = json_lines(&std::fs::read_to_string(heard.path()).unwrap());
    let said: Vec<_> = waits
        .iter()
        .map(|w| (w["outcome"].clone(), w["wait_number"].clone()))
        .collect();
    assert_eq!(
        said,
        [("service_error", 1), ("service_error", 2)].map(|(o, n)| (o.into(), n.into())),
        "{waits:#?}"
    );
}

#[test]
fn a_failing_wait_hook_stops_the_validator_with_the_feature_still_provisional() {
    let hook = "hooks: {rate_limit_wait: [{command: \"exit 3\", on_error: stop}]}\n";
    let (project, out) = validator_held_up_with(1, hook);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("(on_error: stop)"), "{stderr}");
    let state = project.state("F-001");
    assert_eq!(state["status"], "provisional", "{state:#}");
    // Without the hook, a re-run validates it; the worker does not run again.
    project.config(
        "output_format: claude-stream-json\n",
        "validate: true\nservice_errors: {wait_secs: 0, max_waits: 2}\n",
    );
    let again = project.run(&["F-001"]);
    assert_eq!(code(&again), 0, "{}", text(&again.stderr));
    let state = project.state("F-001");
    assert_eq!(
        (&state["status"], &state["iteration_count"]),
        (&"done".into(), &1.into()),
        "{state:#}"
    );
}

#[test]
fn a_validator_out_of_waits_stops_provisional_and_a_re_run_validates_it() {
    let (project, out) = validator_held_up(3);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    let state = project.state("F-001");
    assert_eq!(state["status"], "provisional", "{state:#}");
    assert!(
        state["reason"]
            .as_str()
            .is_some_and(|r| r.contains("after 2 waits in a row")),
        "{state:#}"
    );
    assert!(
        stderr.contains("F-001 stopped: the validator met a service error")
            && stderr.contains("hint: run it again to resume: `./run.sh F-001`"),
        "{stderr}"
    );
    let all = project.run(&["all"]);
    assert_eq!(code(&all), 0, "{}", text(&all.stderr));
    let state = project.state("F-001");
    assert_eq!(state["status"], "done", "{state:#}");
    assert_eq!(
        state["iteration_count"], 1,
        "the worker never ran again: {state:#}"
    );
}

#[test]
fn running_out_of_waits_is_an_event_of_its_own_for_the_worker_and_the_validator() {
    // Regression: a run stopped by a setback with no wait left told no hook (only agent_stop,
    // whose decision said so), so a night's run that stopped on a usage limit went unnoticed.
    let (heard, hook) = heard_by("waits_exhausted");
    let limit = "You''ve hit your session limit · resets 3pm (UTC)";
    let worker = Project::new(
        ONE_FEATURE,
        &format!("steps:\n  - [print: '{limit}', exit: 1]\n  - [print: '{limit}', exit: 1]\n"),
    );
    worker.config(
        "",
        &format!("rate_limit: {{wait_secs: 0, max_waits: 1, max_wait_secs: 1}}\n{hook}"),
    );
    let out = worker.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let (_validator, out) = validator_held_up_with(3, &hook);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let heard = json_lines(&std::fs::read_to_string(heard.path()).unwrap());
    let said: Vec<_> = heard
        .iter()
        .map(|h| {
            let role = h["run_id"].as_str().unwrap().split('-').nth(1).unwrap();
            (
                role.to_string(),
                h["outcome"].clone(),
                h["wait_number"].clone(),
                h["wait_secs"].clone(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("worker", "rate_limited", 2),
            ("validator", "service_error", 3)
        ]
        .map(|(r, o, n)| (r.to_string(), o.into(), n.into(), 0.into())),
        "{heard:#?}"
    );
    assert!(heard.iter().all(|h| h["event"] == "waits_exhausted"
        && h["message"]
            .as_str()
            .is_some_and(|m| m.contains("F-001 stopped:"))));
}

#[test]
fn a_budget_run_out_during_validation_leaves_the_feature_provisional() {
    // Regression: the validator stopped by a budget rejected the feature, as if it had failed.
    // The worker has 3 s, under load too; the validator, which sleeps 8, runs past them.
    let project = Project::new(
        ONE_FEATURE,
        "scripts:\n  - match: {role: validator}\n    steps:\n      - [sleep: 8, print: '<verdict>PASS</verdict>']\n  - steps:\n      - [promise: true]\n",
    );
    project.config(
        "",
        "validate: true\nbudgets:\n  feature: {max_wall_secs: 3}\n",
    );
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    let state = project.state("F-001");
    assert_eq!(state["status"], "provisional", "{state:#}");
    assert!(
        stderr.contains("it stays provisional: raise the budget in config.yaml to go on"),
        "{stderr}"
    );
    assert!(!stderr.contains("rejected"), "{stderr}");
    let last = project.attempts("F-001").last().cloned().unwrap();
    assert_eq!(last, ("validator".to_string(), "over_budget".to_string()));
}
