//! Supervision and guardrails with real timers and the scripted agent: idle and total timers,
//! lingering after the final answer, grandchildren, the context handoff, budgets, stalls, rate
//! limits, secrets; and `explain`.

use std::path::Path;

use harness_tests::{code, processes_matching, text, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

/// A Claude stream-json assistant event whose context is `tokens` tokens.
fn claude_assistant(tokens: u64) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"working"}}],"usage":{{"input_tokens":{tokens},"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}}}}"#
    )
}

/// A Claude stream-json result event with `answer`.
fn claude_result(answer: &str) -> String {
    format!(
        r#"{{"type":"result","num_turns":1,"result":"{answer}","total_cost_usd":0.01,"usage":{{"input_tokens":10,"output_tokens":5}}}}"#
    )
}

fn outcomes(project: &Project) -> Vec<String> {
    project.state("F-001")["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_silent_agent_is_stopped_by_the_idle_timer() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: started, hang: true]\n  - [promise: true]\n",
    );
    project.config(
        "timeout_secs: 60\nidle_timeout_secs: 1\nkill_grace_secs: 1\n",
        "",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(outcomes(&project), ["timed_out", "completed"]);
    assert!(project
        .prompt("F-001", 2)
        .contains("agent printed nothing for 1 s and was stopped"));
}

#[test]
fn no_grandchild_outlives_the_recorded_end() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [spawn: 'sleep 6099; echo late > late.txt', print: 'left a child behind', promise: true]\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        processes_matching("sleep 6099").is_empty(),
        "the grandchild survived its agent"
    );
}

#[test]
fn an_agent_lingering_after_its_final_answer_is_stopped_and_its_answer_stands() {
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [print: '{}', hang: true]\n",
            claude_result("Done. <promise>TASK_COMPLETE</promise>")
        ),
    );
    project.config(
        "output_format: claude-stream-json\nresult_grace_secs: 1\nkill_grace_secs: 1\n",
        "",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(outcomes(&project), ["completed"]);
}

#[test]
fn a_full_context_hands_off_to_a_fresh_agent() {
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [print: '{}', hang: true]\n  - [expect_prompt: 'handoff: context', print: '{}']\n",
            claude_assistant(900),
            claude_result("<promise>TASK_COMPLETE</promise>")
        ),
    );
    project.config(
        "output_format: claude-stream-json\ncontext_window: 1000\nhandoff_threshold: 0.5\nkill_grace_secs: 1\n",
        "",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(outcomes(&project), ["handoff", "completed"]);
    assert_eq!(
        project.state("F-001")["iteration_count"],
        2,
        "a handoff is an iteration"
    );
}

#[test]
fn a_token_budget_stops_the_feature_live_with_exit_2() {
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [print: '{}', hang: true]\n",
            claude_assistant(5000)
        ),
    );
    project.config(
        "output_format: claude-stream-json\nkill_grace_secs: 1\n",
        "budgets:\n  feature:\n    max_tokens: 1000\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert_eq!(outcomes(&project), ["over_budget"]);
    // Before the next invocation: refused at once, naming the budget.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2);
    assert!(
        text(&out.stderr).contains("budgets.feature.max_tokens (1000 tokens) is used up"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(outcomes(&project), ["over_budget"], "nothing ran");
}

#[test]
fn a_cost_budget_is_checked_before_each_invocation() {
    let fixture = harness_tests::repo_root().join("tests/fixtures/claude_stream.jsonl");
    let project = Project::new(
        ONE_FEATURE,
        &format!("steps:\n  - [cat: {:?}]\n", fixture.display().to_string()),
    );
    project.config(
        "output_format: claude-stream-json\n",
        "budgets:\n  mission:\n    max_cost_usd: 0.1\n",
    );
    // The recorded answer costs $0.20: the budget runs out during or right after it.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let first = outcomes(&project);
    assert_eq!(first.len(), 1);
    let usage = &project.state("F-001")["attempts"][0]["usage"];
    assert_eq!(usage["cost_source"], "reported");
    // The next run is refused before any agent starts, naming the budget.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("budgets.mission.max_cost_usd ($0.10) is used up: $0.20 spent"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(outcomes(&project), first, "nothing ran");
}

#[test]
fn a_mission_budget_counts_every_attempt_of_the_running_loop() {
    let fixture = harness_tests::repo_root().join("tests/fixtures/claude_stream.jsonl");
    let step = format!("  - [cat: {:?}]\n", fixture.display().to_string());
    let project = Project::new(ONE_FEATURE, &format!("steps:\n{}", step.repeat(5)));
    project.config(
        "output_format: claude-stream-json\n",
        "stall_iterations: 0\nbudgets:\n  mission:\n    max_cost_usd: 0.5\n",
    );
    // ~$0.20 an attempt: the third starts with $0.10 left and no fourth starts. The worker loop
    // writes an attempt's end with the next one's start, so the check before an attempt must
    // count the one before it from memory, not from the disk (or a fourth would run).
    let out = project.run(&["F-001", "--max-iterations", "10"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let outcomes = outcomes(&project);
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert_eq!(outcomes[..2], ["no_promise"; 2]);
    // The third ends by itself or is stopped live, as the race of its exit and its cost goes.
    assert!(
        ["no_promise", "over_budget"].contains(&outcomes[2].as_str()),
        "{outcomes:?}"
    );
}

#[test]
fn a_time_budget_stops_a_running_agent() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [print: working, hang: true]\n");
    project.config(
        "kill_grace_secs: 1\n",
        "budgets:\n  feature:\n    max_wall_secs: 1\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert_eq!(outcomes(&project), ["over_budget"]);
    assert!(project
        .read_state("notes/F-001.md")
        .contains("the time budget ran out"));
}

#[test]
fn a_bad_budget_setting_is_refused_before_any_agent_runs() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.config("", "budgets:\n  feature: {}\n");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 1);
    assert!(
        text(&out.stderr).contains("budgets.feature sets no limit"),
        "{}",
        text(&out.stderr)
    );
    assert!(!project.state_dir().join("runs").exists());
}

#[test]
fn iterations_that_change_nothing_stop_as_stalled() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [print: 'thinking about it']\n");
    project.config("", "stall_iterations: 3\n");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["iteration_count"], 3);
    assert_eq!(state["status"], "failed");
    assert!(state["reason"]
        .as_str()
        .unwrap()
        .starts_with("stalled: 3 iterations in a row"));
    assert!(project
        .read_state("raw.md")
        .contains("worker F-001 FAIL: F-001 stalled"));
    assert!(project
        .read_state("notes/F-001.md")
        .contains("Stalled: F-001 stalled"));
}

/// A `git` on the PATH before the real one that logs each command line to `log`.
fn logging_git(project: &Project, log: &Path) -> std::ffi::OsString {
    let real = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real = text(&real.stdout).trim().to_string();
    let dir = project.root().join("logging-git");
    std::fs::create_dir_all(&dir).unwrap();
    harness_tests::write_executable(
        &dir.join("git"),
        &format!(
            "#!/bin/sh\necho \"$*\" >>{:?}\nexec {real:?} \"$@\"\n",
            log.display().to_string()
        ),
    );
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&path))).unwrap()
}

#[test]
fn iterations_that_change_nothing_ask_git_once_not_every_time() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [print: 'thinking about it']\n");
    project.config("", "stall_iterations: 8\nmax_iterations: 20\n");
    let log = project.root().join("git.log");
    let path = logging_git(&project, &log);
    // Files written in the last instant could change again unseen in the same tick of the
    // clock: the harness asks git again until they are older than that. Here they are.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = project
        .command(&["F-001"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["iteration_count"], 8);
    assert!(state["reason"]
        .as_str()
        .unwrap()
        .starts_with("stalled: 8 iterations in a row"));
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    let statuses = calls.lines().filter(|l| l.contains(" status ")).count();
    // Before the first iteration, and once more when the harness's own ignored files first
    // appear (notes/): never once per iteration.
    assert!(
        (1..=2).contains(&statuses),
        "{statuses} git status for 8 iterations:\n{calls}"
    );
}

#[test]
fn work_in_the_tree_is_not_a_stall() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [append: {path: log.txt, content: 'a'}]\n  - [append: {path: log.txt, content: 'b'}]\n  - [append: {path: log.txt, content: 'c'}]\n  - [promise: true]\n",
    );
    project.config("", "stall_iterations: 2\n");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}

#[test]
fn a_usage_limit_is_waited_out_without_burning_an_iteration() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: 'Claude AI usage limit reached|1777000000', exit: 1]\n  - [expect_prompt: 'Iteration 1 of', promise: true]\n",
    );
    project.config("", "rate_limit:\n  wait_secs: 0\n  max_waits: 3\n");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(outcomes(&project), ["rate_limited", "completed"]);
    assert_eq!(project.state("F-001")["iteration_count"], 1);
    assert!(
        text(&out.stderr).contains("the agent met a rate or usage limit (\"Claude AI usage limit reached|1777000000\"); waiting 0s before trying again (wait 1 of 3, not counted as an iteration)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn secrets_never_reach_the_log_the_notes_or_raw_md() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: 'key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123', print: 'TRICK: the token is hunter2hunter2hunter2', exit: 1]\n  - [promise: true]\n",
    );
    let out = project
        .command(&["F-001"])
        .env("MY_SERVICE_TOKEN", "hunter2hunter2hunter2")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let log = std::fs::read_to_string(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    let prompt = project.prompt("F-001", 2);
    let raw = project.read_state("raw.md");
    for (name, text) in [
        ("output.log", &log),
        ("notes in the prompt", &prompt),
        ("raw.md", &raw),
        ("terminal", &text(&out.stdout)),
    ] {
        assert!(!text.contains("sk-ant-api03"), "{name}: {text}");
        assert!(!text.contains("hunter2hunter2"), "{name}: {text}");
    }
    assert!(log.contains("key [REDACTED]"), "{log}");
    assert!(raw.contains("TRICK: the token is [REDACTED]"), "{raw}");
}

#[test]
fn explain_prints_the_next_prompt_and_its_layers_without_running_anything() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    project.write_state("summary.md", "## Lessons\n- read the tests first\n");
    let out = project.run(&["explain", "F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let prompt = text(&out.stdout);
    assert!(
        prompt.starts_with("## Runtime context\n- FEATURE_ID=F-001\n"),
        "{prompt}"
    );
    assert!(prompt.contains("Iteration 1 of 10") && prompt.contains("- read the tests first"));
    let table = text(&out.stderr);
    for layer in [
        "Runtime context",
        "Role: worker",
        "Feature F-001: Hello",
        "Continuation",
        "Memory (curated",
        "total",
    ] {
        assert!(table.contains(layer), "{layer} missing from\n{table}");
    }
    assert!(
        !project.state_dir().join("runs").exists(),
        "explain ran nothing"
    );

    let out = project.run(&["explain", "F-001", "--role", "validator"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("## Your task"));
}

#[test]
fn the_claude_preset_runs_claude_headless_with_the_prompt_on_stdin() {
    // A stand-in `claude` on PATH that checks how it was called and answers in stream-json.
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    let bin = project.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let result = claude_result("All done. <promise>TASK_COMPLETE</promise>");
    std::fs::write(
        bin.join("claude"),
        format!(
            "#!/bin/sh\nprompt=$(cat)\ncase \"$*\" in *'-p --output-format stream-json --verbose --dangerously-skip-permissions --model opus'*) ;; *) echo \"bad args: $*\"; exit 9;; esac\ncase \"$prompt\" in *'## Runtime context'*) ;; *) echo 'no prompt on stdin'; exit 8;; esac\n[ \"$IS_SANDBOX\" = 1 ] || exit 7\necho '{result}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        bin.join("claude"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    project.write_state(
        "config.yaml",
        "agent:\n  preset: claude\n  args: [--model, opus]\nvalidate: false\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = project
        .command(&["F-001"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(
        code(&out),
        0,
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let usage = &project.state("F-001")["attempts"][0]["usage"];
    assert_eq!(usage["turns"], 1);
    assert_eq!(usage["total_tokens"], 15);
    assert_eq!(usage["cost_source"], "reported");
}

#[test]
fn a_live_status_line_shows_progress_and_quiet_turns_it_off() {
    let fixture = harness_tests::repo_root().join("tests/fixtures/claude_stream.jsonl");
    let project = Project::new(
        ONE_FEATURE,
        &format!("steps:\n  - [cat: {:?}]\n", fixture.display().to_string()),
    );
    project.config("output_format: claude-stream-json\n", "max_iterations: 1\n");
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    // Not a terminal here: plain timestamped lines, one when the action changes.
    let status: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("] F-001 worker 1/1 · "))
        .collect();
    assert!(!status.is_empty(), "{stderr}");
    assert!(
        status
            .iter()
            .any(|l| l.ends_with(" · Write: /home/user/project/hello.txt")),
        "{stderr}"
    );
    assert!(
        status[0].starts_with("[20") && !stderr.contains('\x1b'),
        "{stderr}"
    );

    let project = Project::new(
        ONE_FEATURE,
        &format!("steps:\n  - [cat: {:?}]\n", fixture.display().to_string()),
    );
    project.config("output_format: claude-stream-json\n", "max_iterations: 1\n");
    let out = project.run(&["F-001", "--quiet"]);
    assert!(
        !text(&out.stderr).contains("] F-001 worker 1/1 · "),
        "{}",
        text(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "--quiet keeps the agent's output off the terminal"
    );
}

#[test]
fn on_a_terminal_the_status_line_is_redrawn_in_place() {
    let fixture = harness_tests::repo_root().join("tests/fixtures/claude_stream.jsonl");
    let project = Project::new(
        ONE_FEATURE,
        &format!("steps:\n  - [cat: {:?}]\n", fixture.display().to_string()),
    );
    project.config("output_format: claude-stream-json\n", "max_iterations: 1\n");
    // util-linux `script` gives run.sh a pseudo-terminal, as a user's shell would.
    let command = format!(
        "{} -C {} F-001",
        harness_tests::repo_root().join("run.sh").display(),
        project.workdir.display()
    );
    let out = project_command(&project, "script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("util-linux script runs");
    let shown = text(&out.stdout);
    assert!(shown.contains("\r\x1b[2KF-001 worker 1/1 · "), "{shown:?}");
    assert!(shown.contains(" · Write"), "{shown:?}");
}

/// A command with the test project's environment (binaries, identity dir).
fn project_command(project: &Project, program: &str) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command
        .env("HARNESS_BIN_DIR", harness_tests::bin_dir())
        .env("HARNESS_IDENTITY_DIR", project.identity_dir())
        .stdin(std::process::Stdio::null());
    command
}

#[test]
fn a_cost_budget_stops_an_agent_that_reports_its_cost_as_it_goes() {
    let step = r#"{"type":"step_finish","part":{"type":"step-finish","reason":"tool-calls","cost":0.5,"tokens":{"input":100,"output":10,"reasoning":0,"cache":{"read":0,"write":0}}}}"#;
    let project = Project::new(
        ONE_FEATURE,
        &format!("steps:\n  - [print: '{step}', hang: true]\n"),
    );
    project.config(
        "output_format: opencode-json\nkill_grace_secs: 1\n",
        "budgets:\n  mission:\n    max_cost_usd: 0.25\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert_eq!(outcomes(&project), ["over_budget"]);
    assert!(project
        .read_state("notes/F-001.md")
        .contains("stopped after $0.50: the cost budget ran out"));
}
