//! Interruptions: kill -9, Ctrl-C, and two run.sh on the same feature.

use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use harness_tests::{alive, code, processes_matching, text, wait_for, write_executable, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

/// Starts `./run.sh F-001` in its own process group (as a terminal would) and returns once the
/// agent's step has begun (it writes started.txt).
fn start(project: &Project) -> std::process::Child {
    let child = project
        .command(&["F-001"])
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for(&project.workdir.join("started.txt"));
    child
}

fn kill_group(pgid: u32, signal: i32) {
    // SAFETY: sends a signal to the process group the test created.
    unsafe {
        libc::kill(-(pgid as i32), signal);
    }
}

#[test]
fn resumes_after_kill_9_from_the_recorded_iteration() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: first]\n  - [write: {path: started.txt, content: x}, hang: true]\n  - [expect_prompt: 'Iteration 3 of 10', promise: true]\n",
    );
    // run.sh, the worker and the agent are all killed at once, as by a power cut of the session.
    let mut child = start(&project);
    kill_group(child.id(), libc::SIGKILL);
    child.wait().unwrap();

    let state = project.state("F-001");
    assert_eq!(state["status"], "running");
    assert_eq!(state["iteration_count"], 2);
    assert_eq!(state["attempts"][1]["outcome"], "started");

    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["status"], "done");
    assert_eq!(
        state["iteration_count"], 3,
        "the killed iteration still counts"
    );
    let outcomes: Vec<&str> = state["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["no_promise", "interrupted", "completed"]);
}

#[test]
fn a_second_run_of_the_same_feature_exits_75_naming_the_holder() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [write: {path: started.txt, content: x}, sleep: 30]\n",
    );
    let mut first = start(&project);
    let started = Instant::now();
    let out = project.run(&["F-001"]);
    let waited = started.elapsed();
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("F-001 is already being run by pid"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("pid {}", first.id())),
        "names run.sh's pid: {stderr}"
    );
    assert!(stderr.contains("run.sh F-001"), "{stderr}");
    assert!(
        waited < Duration::from_secs(20),
        "the second run must not wait for the first"
    );
    kill_group(first.id(), libc::SIGKILL);
    first.wait().unwrap();
}

#[test]
fn a_worker_left_running_by_a_killed_run_sh_still_blocks_a_new_run() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [write: {path: started.txt, content: x}, sleep: 30]\n",
    );
    let mut first = start(&project);
    // Only run.sh dies; its worker and agent go on.
    // SAFETY: kills the run.sh process the test started.
    unsafe {
        libc::kill(first.id() as i32, libc::SIGKILL);
    }
    first.wait().unwrap();
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(worker F-001"),
        "{}",
        text(&out.stderr)
    );
    kill_group(first.id(), libc::SIGKILL);
}

#[test]
fn ctrl_c_stops_the_agent_and_leaves_the_feature_resumable() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [write: {path: started.txt, content: x}, spawn: 'sleep 6137', hang: true]\n  - [promise: true]\n",
    );
    let mut child = start(&project);
    // A terminal's Ctrl-C goes to the foreground process group: run.sh and the worker.
    kill_group(child.id(), libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    let state = project.state("F-001");
    assert_eq!(state["status"], "pending");
    assert_eq!(state["attempts"][0]["outcome"], "interrupted");
    assert!(project.read_state("raw.md").contains("interrupted by SIG"));

    // The agent's background child went with it.
    assert!(
        processes_matching("sleep 6137").is_empty(),
        "a grandchild survived Ctrl-C"
    );

    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["iteration_count"], 2);
}

/// A batch scheduler's cancel or time limit (Slurm's `scancel`) signals every process of the job
/// at once: the agent may die of its SIGTERM a moment before the worker gets its own. The attempt
/// is then interrupted, as with Ctrl-C, not a crash that uses up an iteration.
#[test]
fn an_agent_killed_by_the_sigterm_that_reaches_its_worker_a_moment_later_is_an_interruption() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    // The agent's parent is the worker: a helper outside the agent's group (so the worker cannot
    // stop it first) signals the worker a moment after the agent died of the same signal.
    let agent = project.root().join("agent.sh");
    write_executable(
        &agent,
        "#!/bin/sh\ncat >/dev/null\nif [ -e done ]; then echo '<promise>TASK_COMPLETE</promise>'; exit 0; fi\ntouch done\nsetsid sh -c \"sleep 0.3; kill -TERM $PPID\" </dev/null >/dev/null 2>&1 &\nkill -TERM $$\n",
    );
    project.write_state(
        "config.yaml",
        &format!(
            "agent:\n  command: [{:?}]\nvalidate: false\n",
            agent.display().to_string()
        ),
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 130, "{}", text(&out.stderr));
    let state = project.state("F-001");
    assert_eq!(state["attempts"][0]["outcome"], "interrupted", "{state}");
    assert_eq!(state["status"], "pending");

    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-001")["status"], "done");
}

#[test]
fn the_agent_dies_with_a_killed_worker() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [write: {path: started.txt, content: x}, hang: true]\n",
    );
    let mut child = start(&project);
    let agents = processes_matching(&project.root().join("scenario.yaml").display().to_string());
    assert!(!agents.is_empty(), "the scripted agent is running");
    kill_group(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while agents.iter().any(|&pid| alive(pid)) {
        assert!(Instant::now() < deadline, "the agent outlived its worker");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_run_sweeps_the_temporary_files_that_killed_writes_left() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    // A writer that is gone (its child was reaped) and one that is alive (this test).
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let live = std::process::id();
    let old_run = project.state_dir().join("runs/F-001/1-worker-F-001");
    std::fs::create_dir_all(&old_run).unwrap();
    let stale = [
        project
            .state_dir()
            .join(format!("runs/F-001/.state.json.tmp.{dead}.2")),
        old_run.join(format!(".result.json.tmp.{dead}.4")),
        project
            .state_dir()
            .join(format!("notes/.F-001.md.tmp.{dead}.3")),
        project
            .state_dir()
            .join(format!(".summary.md.tmp.{dead}.0")),
    ];
    let in_flight = project
        .state_dir()
        .join(format!("notes/.F-002.md.tmp.{live}.0"));
    for path in stale.iter().chain([&in_flight]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "half").unwrap();
    }
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    for path in &stale {
        assert!(!path.exists(), "{} is still there", path.display());
    }
    assert!(
        in_flight.exists(),
        "a live writer's temporary file was removed"
    );
}

#[test]
fn notes_left_for_a_done_feature_by_a_killed_validator_are_removed() {
    let project = Project::new(ONE_FEATURE, "steps:\n  - [promise: true]\n");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let left = "## Attempt 1 — worker (2026-11-21T00:00:00Z)\nTurns: ? | Commits: 0\n\nleft\n";
    let notes = project.state_dir().join("notes/F-001.md");
    // As a validator killed between saving its verdict and deleting the notes leaves them.
    for args in [&["F-001"][..], &["all"][..]] {
        project.write_state("notes/F-001.md", left);
        let out = project.run(args);
        assert_eq!(code(&out), 0, "{args:?}: {}", text(&out.stderr));
        assert!(!notes.exists(), "{args:?} left the notes of a done feature");
        assert_eq!(project.state("F-001")["status"], "done");
    }
}

#[test]
fn a_worker_loop_whose_run_sh_was_killed_stops_after_its_iteration() {
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [write: {path: started.txt, content: x}, sleep: 2]\n  - [print: 'a second iteration']\n",
    );
    let mut first = start(&project);
    let workers = || {
        processes_matching("--loop")
            .into_iter()
            .filter(|&pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                    String::from_utf8_lossy(&cmdline).contains(&*project.workdir.to_string_lossy())
                })
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(workers().len(), 1, "the worker loop is running");
    // Only run.sh dies (kill -9): the worker finishes the iteration it is in, and no other.
    // SAFETY: kills the run.sh process the test started.
    unsafe {
        libc::kill(first.id() as i32, libc::SIGKILL);
    }
    first.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !workers().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the worker loop went on without run.sh"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let state = project.state("F-001");
    let attempts = state["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{state}");
    assert_eq!(attempts[0]["outcome"], "no_promise");
    assert!(!project.read_state("raw.md").contains("a second iteration"));
}

#[test]
fn a_torn_attempt_record_and_a_torn_notes_section_are_dropped_and_the_feature_goes_on() {
    // What a kill in the middle of an append leaves: a part of a line at the end of
    // attempts.jsonl, a part of a section at the end of the notes.
    let project = Project::new(
        ONE_FEATURE,
        "steps:\n  - [print: first]\n  - [print: second]\n  - [expect_prompt: 'Iteration 3 of 3', print: third]\n",
    );
    project.config("", "max_iterations: 2\n");
    assert_eq!(code(&project.run(&["F-001"])), 2);
    let state_dir = project.state_dir();
    let log = state_dir.join("runs/F-001/attempts.jsonl");
    let notes = state_dir.join("notes/F-001.md");
    for (path, torn) in [
        (&log, "{\"run_id\":\"TORN-RECORD\",\"role\":\"wor"),
        (
            &notes,
            "## Attempt 3 — worker (2026-11-23T10:00:00Z)\nTurns: 1 | TORN-SECTION",
        ),
    ] {
        let mut text = std::fs::read_to_string(path).unwrap();
        text.push_str(torn);
        std::fs::write(path, text).unwrap();
    }
    // Read: the status board and the prompt see neither.
    let status = project.run(&["status", "--json"]);
    assert_eq!(code(&status), 0, "{}", text(&status.stderr));
    assert_eq!(project.attempts("F-001").len(), 2);

    let out = project.run(&["F-001", "--max-iterations", "3"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    let run_ids: Vec<String> = project.state("F-001")["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["run_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(run_ids.len(), 3, "{run_ids:?}");
    let prompt = project.prompt("F-001", 3);
    assert!(prompt.contains("second"), "{prompt}");
    assert!(!prompt.contains("TORN-SECTION"), "{prompt}");
    // The next appends cut the torn tails off: each file holds whole records only.
    for path in [&log, &notes] {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains("TORN-"), "{}:\n{text}", path.display());
    }
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(log_text.ends_with('\n'));
    assert!(log_text
        .lines()
        .all(|line| serde_json::from_str::<serde_json::Value>(line).is_ok()));
}
