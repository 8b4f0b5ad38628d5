//! How the agent is run: prompt delivery, environment, streaming, bounded memory, structured output.

use harness_tests::{code, text, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

fn prompt_delivery(via: &str) {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [expect_prompt: '## Runtime context', expect_prompt: 'Iteration 1 of 10', promise: true]\n",
    );
    project.config(&format!("prompt_via: {via}\n"), "");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "prompt via {via}: {}", text(&out.stderr));
}

#[test]
fn the_prompt_arrives_on_stdin() {
    prompt_delivery("stdin");
}

#[test]
fn the_prompt_arrives_as_the_last_argument() {
    prompt_delivery("arg");
}

#[test]
fn the_prompt_arrives_in_a_file() {
    prompt_delivery("file");
}

#[test]
fn the_agent_gets_the_contract_environment_in_the_working_directory() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: 'role={role} feature={feature} iteration={iteration} run={run_id}', write: {path: here.txt, content: x}]\n  - [promise: true]\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let run_id = project.state("F-001")["attempts"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let log = std::fs::read_to_string(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    assert_eq!(
        log.trim(),
        format!("role=worker feature=F-001 iteration=1 run={run_id}")
    );
    assert!(
        project.workdir.join("here.txt").exists(),
        "the agent runs in the project directory"
    );

    // Every variable of the contract, read by a shell agent.
    let script = project.root().join("env-agent.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat >/dev/null\nenv | grep '^HARNESS_' | sort > \"$HARNESS_STATE_DIR/../env.txt\"\necho '<promise>TASK_COMPLETE</promise>'\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    project.write_state(
        "features.yaml",
        "features:\n  - id: F-001\n    title: Hello\n  - id: F-002\n    title: Env\n",
    );
    project.write_state(
        "config.yaml",
        &format!(
            "agent:\n  command: [{:?}]\nvalidate: false\n",
            script.display().to_string()
        ),
    );
    let out = project.run(&["F-002"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let env = std::fs::read_to_string(project.workdir.join("env.txt")).unwrap();
    let workdir = project.workdir.display().to_string();
    for expected in [
        "HARNESS_FEATURE_ID=F-002".to_string(),
        format!("HARNESS_WORKDIR={workdir}"),
        format!("HARNESS_STATE_DIR={workdir}/.harness"),
        "HARNESS_ROLE=worker".to_string(),
        "HARNESS_ITERATION=1".to_string(),
    ] {
        assert!(
            env.lines().any(|l| l == expected),
            "{expected} missing from\n{env}"
        );
    }
    assert!(
        env.lines()
            .any(|l| l.starts_with("HARNESS_RUN_ID=") && l.ends_with("-worker-F-002")),
        "{env}"
    );
}

#[test]
fn a_200_mb_flood_keeps_the_worker_small_and_the_log_whole() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [flood: {bytes: 200000000}, print: '', print: 'TRICK: floods end', promise: true]\n",
    );
    let out = project.run(&["F-001", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let dir = &project.run_dirs("F-001")[0];
    let log_len = std::fs::metadata(dir.join("output.log")).unwrap().len();
    assert!(
        log_len > 200_000_000,
        "output.log holds all of it: {log_len}"
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    let peak_kb = result["worker_peak_rss_kb"]
        .as_u64()
        .expect("peak memory recorded");
    assert!(peak_kb < 16 * 1024, "the worker grew to {peak_kb} KiB");
    assert_eq!(result["promise_found"], true);
    assert!(project.read_state("raw.md").contains("TRICK: floods end"));
    // --quiet kept the flood off the terminal.
    assert!(
        out.stdout.len() < 10_000,
        "{} bytes reached stdout",
        out.stdout.len()
    );
}

#[test]
fn claude_stream_json_gives_turns_and_reads_the_promise_from_the_final_answer() {
    let fixture = harness_tests::repo_root().join("tests/fixtures/claude_stream.jsonl");
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "steps:\n  - [cat: {:?}]\n  - [promise: true]\n  - [print: '{}']\n",
            fixture.display().to_string(),
            r#"{"type":"result","num_turns":1,"result":"Done. <promise>TASK_COMPLETE</promise>"}"#
        ),
    );
    project.config("output_format: claude-stream-json\n", "");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    let first = &state["attempts"][0];
    // The recorded answer says TASK_COMPLETE without the tag: not a completion.
    assert_eq!(first["outcome"], "no_promise");
    assert_eq!(first["turns"], 2);
    assert_eq!(first["cost_usd"], 0.197035);
    // A plain `<promise>` line is not the final answer under this format: it never completes.
    assert_eq!(state["attempts"][1]["outcome"], "no_promise");
    assert_eq!(state["attempts"][2]["outcome"], "completed");
    let prompt = project.prompt("F-001", 2);
    assert!(prompt.contains("Turns: 2 | Commits: 0"), "{prompt}");
    assert!(
        prompt.contains("I'll create hello.txt."),
        "the notes show the assistant's text: {prompt}"
    );
}

/// Regression: entries past the 50 one invocation may leave were dropped without a word.
#[test]
fn memory_entries_past_the_cap_are_reported_on_stderr_and_in_the_record() {
    let prints = |tag: &str, n: usize| -> String {
        (1..=n)
            .map(|i| format!("print: '{tag}: entry number {i}', "))
            .collect()
    };
    let project = Project::new(
        ONE_FEATURE,
        &format!(
            "scripts:\n  - match: {{role: validator}}\n    steps: [[{}print: '<verdict>PASS</verdict>']]\n  - steps: [[{}promise: true]]\n",
            prints("LESSON", 55),
            prints("TRICK", 60)
        ),
    );
    project.config("", "validate: true\n");
    let out = project.run(&["F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    for (role, dropped) in [("worker", 10), ("validator", 5)] {
        let warning = format!(
            "{role}: warning: the agent printed {dropped} memory entries past the 50 one invocation may leave: they are not in raw.md (output.log has them)"
        );
        assert!(
            stderr.lines().any(|l| l == warning),
            "{warning:?} in\n{stderr}"
        );
    }
    let raw = project.read_state("raw.md");
    assert_eq!(
        raw.matches(" worker F-001 TRICK: entry number ").count(),
        50
    );
    assert_eq!(
        raw.matches(" validator F-001 LESSON: entry number ")
            .count(),
        50
    );
    assert!(raw.contains("TRICK: entry number 50\n") && !raw.contains("number 51\n"));
    let attempts = project.state("F-001")["attempts"].clone();
    for (n, dropped) in [(0, 10), (1, 5)] {
        assert_eq!(
            attempts[n]["memory_entries_dropped"], dropped,
            "{attempts:#}"
        );
        let result =
            std::fs::read_to_string(project.run_dirs("F-001")[n].join("result.json")).unwrap();
        let result: serde_json::Value = serde_json::from_str(&result).unwrap();
        assert_eq!(result["memory_entries_dropped"], dropped, "{result:#}");
        assert_eq!(result["memory_entries"], 50, "{result:#}");
    }
}

/// Regression: the status line was written after each piece of output, even one that ended
/// inside a line (a line longer than 64 KiB went out in pieces), so on a terminal (or with
/// `2>&1`) it landed inside the agent's line.
#[test]
fn the_status_line_never_lands_inside_a_line_of_the_agents_output() {
    let project = Project::new(ONE_FEATURE, "");
    project.shell_agent(
        "head -c 70000 /dev/zero | tr '\\0' a\nsleep 0.3\nprintf ' rest\\n'\necho '<promise>TASK_COMPLETE</promise>'",
    );
    let terminal = project.root().join("terminal.txt");
    let file = std::fs::File::create(&terminal).unwrap();
    let out = project
        .command(&["F-001"])
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .status()
        .unwrap();
    let shown = std::fs::read_to_string(&terminal).unwrap();
    let short = shown.replace(&"a".repeat(1000), "a…");
    assert!(out.success(), "{short}");
    assert!(
        shown.contains(&format!("\n{} rest\n", "a".repeat(70_000))),
        "the agent's line was cut:\n{short}"
    );
    assert!(
        shown.contains("F-001 worker 1/10"),
        "the status line is shown:\n{short}"
    );
}
