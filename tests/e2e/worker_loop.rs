//! The worker's loop (the Ralph loop) through run.sh: iterations, the promise, the guardrail, notes and raw.md.

use harness_tests::{code, processes_matching, text, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello file\n    description: Create hello.txt.\n    acceptance:\n      - hello.txt says hi\n";

#[test]
fn completes_on_iteration_3_with_notes_injected_and_cleaned() {
    let project = Project::new(
        ONE_FEATURE,
        r###"
steps:
  - [print: "looked around", print: "TRICK: read PROGRESS.md first"]
  - - expect_prompt: "## Previous Agent Notes"
    - expect_prompt: "looked around"
    - expect_prompt: "Iteration 2 of 10"
    - write: {path: hello.txt, content: "hi\n"}
    - commit: "add hello"
    - print: "LESSON: commit after each step"
  - - expect_prompt: "Iteration 3 of 10"
    - expect_prompt: "Turns: ? | Commits: 1"
    - print: "all good"
    - promise: true
"###,
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["status"], "done");
    assert_eq!(state["iteration_count"], 3);
    let attempts = state["attempts"].as_array().unwrap();
    let outcomes: Vec<&str> = attempts
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["no_promise", "no_promise", "completed"]);
    assert_eq!(attempts[1]["commits"], 1);
    // Every invocation left its prompt, output and result.
    for dir in project.run_dirs("F-001") {
        for file in ["prompt.md", "output.log", "result.json"] {
            assert!(
                dir.join(file).is_file(),
                "{} missing in {}",
                file,
                dir.display()
            );
        }
    }
    // The first prompt has no notes; the notes are gone once the feature is done.
    assert!(!project
        .prompt("F-001", 1)
        .contains("## Previous Agent Notes"));
    assert!(!project.state_dir().join("notes/F-001.md").exists());
    // Memory entries and outcome lines went to raw.md in the documented format.
    let raw = project.read_state("raw.md");
    let lines: Vec<&str> = raw.lines().collect();
    assert!(
        lines[0].ends_with("] worker F-001 TRICK: read PROGRESS.md first"),
        "{raw}"
    );
    assert!(
        raw.contains("] worker F-001 LESSON: commit after each step"),
        "{raw}"
    );
    assert!(
        raw.lines()
            .last()
            .unwrap()
            .ends_with("worker F-001 -: F-001 done on iteration 3/10"),
        "{raw}"
    );
    for line in lines {
        assert!(
            line.starts_with("[20") && line.contains("Z] worker F-001 "),
            "{line}"
        );
    }
    // Run ids have the documented shape and are all distinct.
    let ids: Vec<String> = attempts
        .iter()
        .map(|a| a["run_id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        ids[0].ends_with("-worker-F-001")
            && ids[0].split('-').next().unwrap().parse::<u64>().is_ok()
    );
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique.len(), 3);
}

#[test]
fn the_prompt_has_every_layer_in_order() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: nothing yet]\n  - [promise: true]\n",
    );
    project.write_state("summary.md", "## Lessons\n- the summary lesson\n");
    std::fs::write(
        project.identity_dir().join("worker.md"),
        "- the identity lesson\n",
    )
    .unwrap();
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let prompt = project.prompt("F-001", 2);
    let run_id = project.state("F-001")["attempts"][1]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let expected_top = format!(
        "## Runtime context\n- FEATURE_ID=F-001\n- Working directory: {0}\n- State directory: {0}/.harness\n- Run ID: {1}\n",
        project.workdir.canonicalize().unwrap().display(),
        run_id
    );
    assert!(prompt.starts_with(&expected_top), "{prompt}");
    let order = [
        "# Role: worker",
        "## Your identity (cross-mission memory for the worker role)",
        "- the identity lesson",
        "## Feature F-001: Hello file",
        "- hello.txt says hi",
        "Iteration 2 of 10",
        "review your workspace files",
        "## Previous Agent Notes",
        "## Attempt 1 — worker",
        "## Memory (curated from prior iterations of this run)",
        "- the summary lesson",
    ];
    let mut last = 0;
    for needle in order {
        let at = prompt[last..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing or out of order:\n{prompt}"));
        last += at;
    }
    assert!(prompt.trim_end().ends_with("- the summary lesson"));
}

#[test]
fn max_iterations_reached_exits_2_and_can_be_continued() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: still working]\n  - [print: still working]\n  - [promise: true]\n",
    );
    project.config("", "max_iterations: 2\n");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["status"], "failed");
    assert_eq!(state["iteration_count"], 2);
    assert!(
        text(&out.stderr).contains("max_iterations is reached"),
        "{}",
        text(&out.stderr)
    );
    // The notes survive a failure, for whoever picks it up.
    assert!(project
        .read_state("notes/F-001.md")
        .contains("## Attempt 2 — worker"));

    // Again without raising it: refused at once, nothing runs.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2);
    assert!(
        text(&out.stderr).contains("--max-iterations"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        project.state("F-001")["attempts"].as_array().unwrap().len(),
        2
    );

    // Raised: it resumes from iteration 3 and completes.
    let out = project.run(&["F-001", "--max-iterations", "4"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["status"], "done");
    assert_eq!(state["iteration_count"], 3);
    assert_eq!(state["max_iterations"], 4);
    assert!(project.prompt("F-001", 3).contains("Iteration 3 of 4"));
}

#[test]
fn an_agent_echoing_its_prompt_never_completes() {
    // The notes of the first attempt hold a real promise; the echo of the next prompts must not.
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [promise: true, exit: 1]\n  - [echo_prompt: true]\n",
    );
    project.config("", "max_iterations: 3\n");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let state = project.state("F-001");
    for attempt in state["attempts"].as_array().unwrap() {
        assert_eq!(
            attempt["outcome"],
            if attempt["iteration"] == 1 {
                "agent_error"
            } else {
                "no_promise"
            }
        );
    }
    let prompt = project.prompt("F-001", 3);
    assert!(
        prompt.contains("&lt;promise&gt;TASK_COMPLETE&lt;/promise&gt;"),
        "{prompt}"
    );
    assert!(!prompt.contains("<promise>TASK_COMPLETE</promise>"));
    let echoed = std::fs::read_to_string(project.run_dirs("F-001")[2].join("output.log")).unwrap();
    assert!(
        echoed.contains("## Continuation"),
        "the agent did echo its prompt"
    );
}

#[test]
fn a_crash_or_an_error_exit_is_an_iteration_that_did_not_complete() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: boom, crash: true]\n  - [promise: true, exit: 3]\n  - [promise: true]\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    let attempts = state["attempts"].as_array().unwrap();
    assert_eq!(attempts[0]["outcome"], "crashed");
    assert_eq!(attempts[0]["signal"], 6);
    assert_eq!(attempts[1]["outcome"], "agent_error");
    assert_eq!(attempts[1]["exit_code"], 3);
    assert_eq!(attempts[1]["promise_found"], true);
    assert_eq!(attempts[2]["outcome"], "completed");
    let prompt = project.prompt("F-001", 3);
    assert!(
        prompt.contains("Outcome: agent crashed (SIGABRT)"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Outcome: agent exited with code 3"),
        "{prompt}"
    );
}

#[test]
fn a_timeout_kills_the_whole_process_group_and_the_loop_goes_on() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [spawn: 'sleep 6071; echo late > late.txt', print: started, hang: true]\n  - [promise: true]\n",
    );
    project.config("timeout_secs: 1\nkill_grace_secs: 1\n", "");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["attempts"][0]["outcome"], "timed_out");
    assert!(project
        .prompt("F-001", 2)
        .contains("agent timed out after 1 s"));
    // The grandchild died with its group: nothing of the attempt is still running.
    assert!(
        processes_matching("sleep 6071").is_empty(),
        "a grandchild survived the timeout"
    );
    assert!(!project.workdir.join("late.txt").exists());
}

#[test]
fn agent_crash_output_is_kept_in_output_log() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: 'line one', stderr: 'to stderr', exit: 1]\n  - [promise: true]\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let log = std::fs::read_to_string(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    assert!(
        log.contains("line one") && log.contains("to stderr"),
        "{log}"
    );
    // And it was streamed to the terminal (run.sh's stdout) as it came.
    assert!(text(&out.stdout).contains("line one"));
}

#[test]
fn a_done_feature_is_not_run_again() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    assert_eq!(code(&project.run(&["F-001"])), 0);
    let before = project.snapshot();
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0);
    assert!(
        text(&out.stderr).contains("F-001 is already done"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(project.snapshot(), before);
}

#[test]
fn an_agent_committing_everything_leaves_the_harness_state_out_of_git() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [write: {path: hello.txt, content: hi}, commit: 'add -A of everything', promise: true]\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let committed = project.git(&["show", "--name-only", "--format=", "HEAD"]);
    assert!(committed.lines().any(|f| f == "hello.txt"), "{committed}");
    for line in committed.lines() {
        let runtime = ["runs/", "locks/", "notes/", "raw.md", "scripted-agent/"];
        assert!(
            !runtime
                .iter()
                .any(|r| line.starts_with(&format!(".harness/{r}"))),
            "harness run-time file committed: {line}"
        );
    }
    assert_eq!(project.state("F-001")["attempts"][0]["commits"], 1);
}

#[test]
fn worker_loop_runs_the_iterations_in_one_process_each_from_the_disk() {
    let project = Project::new(
        ONE_FEATURE,
        r###"
steps:
  - - write: {path: notes.txt, content: "first\n"}
  - - expect_prompt: "Create hello.txt."
    - write:
        path: .harness/features.yaml
        content: "features:\n  - id: F-001\n    title: Hello file\n    description: Create HELLO.txt, in capitals.\n    acceptance:\n      - HELLO.txt says hi\n"
  - - expect_prompt: "Create HELLO.txt, in capitals."
    - print: "nothing to do"
"###,
    );
    let out = project.worker(&[
        "--loop",
        "--feature",
        "F-001",
        "--run-id",
        "100-worker-F-001",
        "--max-iterations",
        "3",
    ]);
    // Never "continue" (10): the loop goes on by itself until the guardrail.
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("F-001 iteration 1/3: ended without the promise; 2 left"),
        "{stderr}"
    );
    assert!(stderr.contains("F-001 failed: iteration 3/3"), "{stderr}");
    let state = project.state("F-001");
    let attempts = state["attempts"].as_array().unwrap();
    // --run-id names the first iteration; the others make their own, all distinct.
    let ids: Vec<&str> = attempts
        .iter()
        .map(|a| a["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[0], "100-worker-F-001");
    assert!(
        ids[1] != ids[2] && ids[1].contains("-worker-F-001"),
        "{ids:?}"
    );
    for dir in project.run_dirs("F-001") {
        for file in ["prompt.md", "output.log", "result.json"] {
            assert!(
                dir.join(file).is_file(),
                "{file} missing in {}",
                dir.display()
            );
        }
    }
    // Each iteration re-read features.yaml (the third prompt has the new spec), and each saw
    // exactly what its own attempt changed in the tree, though the loop asks git once between two.
    let outcomes: Vec<&str> = attempts
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["no_promise", "no_promise", "no_promise"]);
    let changed: Vec<bool> = attempts
        .iter()
        .map(|a| a["tree_changed"].as_bool().unwrap())
        .collect();
    assert_eq!(changed, [true, true, false]);
    assert!(project
        .prompt("F-001", 3)
        .contains("Create HELLO.txt, in capitals."));
}

#[test]
fn worker_loop_stops_at_a_broken_input_between_iterations() {
    let project = Project::new(
        ONE_FEATURE,
        r###"
steps:
  - - write: {path: .harness/features.yaml, content: "features: [oops\n"}
  - - print: "never run"
"###,
    );
    let out = project.worker(&["--loop", "--feature", "F-001"]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("features.yaml"),
        "{}",
        text(&out.stderr)
    );
    // The first iteration is recorded whole; the second never started.
    let state = project.state("F-001");
    assert_eq!(state["iteration_count"], 1);
    assert_eq!(state["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(state["attempts"][0]["outcome"], "no_promise");
}
