//! What a user meets after a long night, and the way on the harness offers: `all
//! --max-iterations`, a feature another process runs, the spend of every agent invocation in the
//! totals and the budgets, and the smaller things (a repository without a commit, `explain` on a
//! done feature, Ctrl-C named as such, the harness's own files out of `git status`).

use std::time::{Duration, Instant};

use harness_tests::{code, text, wait_at_most, Project};

const TWO: &str = "features:\n  - id: F-001\n    title: One\n  - id: F-002\n    title: Two\n    depends_on: [F-001]\n";

#[test]
fn all_max_iterations_raises_every_features_guardrail_and_the_give_up_names_the_flag() {
    // Regression: `all --max-iterations N` left the features stopped at max_iterations failed,
    // exited 2 and said nothing; only `./run.sh F-001 --max-iterations N` continued one.
    let project = Project::new(
        TWO,
        "scripts:\n  - match: {feature: F-001}\n    steps:\n      - [append: {path: a.txt, content: '1'}]\n      - [append: {path: a.txt, content: '2'}]\n      - [promise: true]\n  - steps:\n      - [promise: true]\n",
    );
    project.config("", "max_iterations: 2\n");
    let out = project.run(&["all"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 3, "{stderr}");
    assert!(
        stderr.contains(
            "max_iterations is reached\nhint: continue with `./run.sh F-001 --max-iterations 7`"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "hint: give the features that reached max_iterations more with `./run.sh all --max-iterations 7`"
        ),
        "{stderr}"
    );
    assert_eq!(project.state("F-002")["status"], "blocked");

    let out = project.run(&["all", "--max-iterations", "3"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let one = project.state("F-001");
    assert_eq!(
        (
            &one["status"],
            &one["iteration_count"],
            &one["max_iterations"]
        ),
        (&"done".into(), &3.into(), &3.into())
    );
    assert_eq!(project.state("F-002")["status"], "done");
}

#[test]
fn all_says_which_feature_another_process_runs() {
    // Regression: `all` skipped a feature held by another run without a word.
    let project = Project::new(
        TWO,
        "scripts:\n  - match: {feature: F-001}\n    steps:\n      - [hang: true]\n  - steps:\n      - [promise: true]\n",
    );
    let mut other = project
        .command(&["F-001", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !project
        .read_state("runs/F-001/state.json")
        .contains("started")
    {
        assert!(Instant::now() < deadline, "F-001 never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = project.run(&["all"]);
    let stderr = text(&out.stderr);
    // SAFETY: signals the run.sh this test started.
    unsafe { libc::kill(other.id() as i32, libc::SIGINT) };
    assert_eq!(
        wait_at_most(&mut other, Duration::from_secs(30)).code(),
        Some(130)
    );
    assert_eq!(code(&out), 3, "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("== F-001 is already being run by pid "))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("(run.sh F-001, since "), "{stderr}");
    assert!(said[0].ends_with(": left to it"), "{stderr}");
}

/// aider's usage line: 1,100 tokens and $0.10 for each invocation that prints it.
const SPENT: &str = "Tokens: 1.0k sent, 100 received. Cost: $0.10 message, $0.10 session.";

/// The status board's totals.
fn totals(project: &Project) -> serde_json::Value {
    let out = project.run(&["status", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["totals"].clone()
}

#[test]
fn every_agent_invocation_counts_in_the_totals_the_report_and_the_mission_budget() {
    // Regression: after `plan`, status said tokens and cost `unknown` though the planner's
    // result.json had them; the board, the report and budgets.mission summed feature attempts
    // only, leaving out the planner's `plan` and the curator's agent.
    let plan = "```yaml\nfeatures:\n  - id: F-001\n    title: One\n    acceptance: [it works]\n```";
    let piece =
        "```yaml\nfeatures:\n  - id: F-001.1\n    title: Half\n    acceptance: [half works]\n```";
    let lines = |text: &str| {
        text.lines()
            .chain([SPENT])
            .map(|line| format!("print: '{line}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let project = Project::new(
        "features: []\n",
        &format!(
            "scripts:\n  - match: {{role: planner, feature: F-001}}\n    steps: [[{}]]\n  - match: {{role: planner}}\n    steps: [[{}]]\n  - match: {{role: curator}}\n    steps: [[{}]]\n  - steps: [[{}]]\n",
            lines(piece),
            lines(plan),
            lines("no rewrite"),
            lines("not yet")
        ),
    );
    project.config("output_format: aider\n", "max_iterations: 1\n");
    project.write_state("mission.md", "# Mission\n\nOne thing.\n");

    let out = project.run(&["plan", "-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let after_plan = totals(&project);
    assert_eq!(after_plan["tokens"], 1100, "{after_plan:#}");
    assert_eq!(after_plan["cost_usd"], 0.1);
    assert_eq!(after_plan["mission_runs"], 1);
    let result = project.state_dir().join("plans");
    let run = std::fs::read_dir(&result).unwrap().next().unwrap().unwrap();
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.path().join("result.json")).unwrap()).unwrap();
    assert_eq!(result["usage"]["total_tokens"], 1100, "{result:#}");

    assert_eq!(code(&project.run(&["F-001", "-q"])), 2);
    assert_eq!(code(&project.run(&["replan", "F-001", "-q"])), 0);
    assert_eq!(code(&project.run(&["curate", "--agent", "-q"])), 0);
    let all = totals(&project);
    assert_eq!(all["tokens"], 4400, "{all:#}");
    assert!(
        (all["cost_usd"].as_f64().unwrap() - 0.4).abs() < 1e-9,
        "{all:#}"
    );
    assert_eq!(all["mission_runs"], 2);
    let report = project.read_state("report.html");
    assert!(report.contains("title=\"4,400\""), "the report's headline");

    // Past the mission budget, neither a feature nor the planner starts.
    project.config(
        "output_format: aider\n",
        "max_iterations: 1\nbudgets:\n  mission: {max_tokens: 4000}\n",
    );
    let out = project.run(&["F-001.1"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("budgets.mission.max_tokens (4000 tokens) is used up: 4400 tokens spent"),
        "{}",
        text(&out.stderr)
    );
    let out = project.run(&["plan", "-q"]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("planning stopped before its agent ran"));
    assert_eq!(totals(&project)["tokens"], 4400);
}

#[test]
fn explain_says_a_feature_is_done_and_needs_no_agent_installed() {
    // Regression: `explain` on a done feature did not say so, and refused to run without the
    // agent CLI installed although it runs nothing.
    let project = Project::new(TWO, "steps: [[promise: true]]\n");
    assert_eq!(code(&project.run(&["F-001", "-q"])), 0);
    project.write_state(
        "config.yaml",
        "agent:\n  command: [no-such-agent-cli]\nvalidate: false\n",
    );
    let out = project.run(&["explain", "F-001"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    assert!(text(&out.stdout).contains("## Runtime context"));
    assert!(
        stderr.contains("note: F-001 is done: no invocation is next; the prompt is what it would get were it run again"),
        "{stderr}"
    );
    let out = project.run(&["explain", "F-002"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("note:"));
}

#[test]
fn all_parallel_in_a_repository_without_a_commit_is_refused_up_front() {
    // Regression: it failed later with git's `invalid reference: HEAD`.
    let project = Project::new(TWO, "steps: [[promise: true]]\n");
    std::fs::remove_dir_all(project.workdir.join(".git")).unwrap();
    project.git(&["init", "-q"]);
    let out = project.run(&["all", "--parallel", "2"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    assert!(
        stderr.contains("--parallel 2 needs the project to be a git repository with a commit")
            && stderr.contains("and it has none yet")
            && stderr.contains(
                "hint: run the features one at a time (no --parallel), or commit the project first"
            ),
        "{stderr}"
    );
    assert!(!project.state_dir().join("runs").exists());
    assert!(!project.state_dir().join("worktrees").exists());
}

#[test]
fn ctrl_c_is_reported_as_sigint() {
    // Regression: run.sh passed Ctrl-C on to the worker as SIGTERM, and the worker reported the
    // last signal it got: "interrupted by SIGTERM".
    let project = Project::new(TWO, "steps: [[print: working, hang: true]]\n");
    let mut run = project
        .command(&["F-001", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !project
        .read_state("runs/F-001/state.json")
        .contains("started")
    {
        assert!(Instant::now() < deadline, "F-001 never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signals the run.sh this test started.
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let status = wait_at_most(&mut run, Duration::from_secs(30));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    assert!(!stderr.contains("SIGTERM"), "{stderr}");
    assert!(project
        .read_state("raw.md")
        .contains("interrupted by SIGINT"));
}

#[test]
fn the_planners_status_line_shows_no_iteration_count() {
    // Regression: `plan` showed `- planner 0/4` (the guardrail of no feature).
    let plan = "```yaml\nfeatures:\n  - id: F-001\n    title: One\n    acceptance: [it works]\n```";
    let steps: Vec<String> = plan
        .lines()
        .map(|line| format!("print: '{line}'"))
        .collect();
    let project = Project::new(
        "features: []\n",
        &format!("steps: [[sleep: 0.3, {}]]\n", steps.join(", ")),
    );
    project.config("", "max_iterations: 4\n");
    project.write_state("mission.md", "# Mission\n\nOne thing.\n");
    let out = project.run(&["plan"]);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    let status: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("] - planner"))
        .collect();
    assert!(!status.is_empty(), "{stderr}");
    assert!(
        status.iter().all(|l| l.contains("] - planner · ")),
        "{stderr}"
    );
}

#[test]
fn an_empty_section_of_summary_md_never_reaches_a_prompt() {
    // Regression: the curator keeps its sections, empty or not, and an empty `## Avoid` heading
    // went into every prompt.
    let project = Project::new(TWO, "steps: [[promise: true]]\n");
    project.write_state(
        "summary.md",
        "# Summary\n\n## Lessons\n- run the tests first\n\n## Decisions (current)\n\n## Avoid\n<!-- c:none -->\n",
    );
    let out = project.run(&["F-001", "-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let prompt = project.prompt("F-001", 1);
    assert!(
        prompt.contains("## Lessons\n- run the tests first"),
        "{prompt}"
    );
    assert!(!prompt.contains("## Avoid"), "{prompt}");
    assert!(!prompt.contains("## Decisions (current)"), "{prompt}");
}

#[test]
fn the_harnesss_own_records_never_show_as_untracked_and_an_older_gitignore_is_completed() {
    // Regression: plan.json, curator.json and mission-id showed up in `git status` of the
    // user's repository. A project that `init` made before keeps its .gitignore, completed.
    let project = Project::new("features: []\n", "steps: [[cat: answer.md]]\n");
    let answer =
        "```yaml\nfeatures:\n  - id: F-001\n    title: One\n    acceptance: [it works]\n```\n";
    std::fs::write(project.root().join("answer.md"), answer).unwrap();
    project.write_state("mission.md", "# Mission\n\nOne thing.\n");
    let older = "/runs/\n/locks/\n/notes/\n/archive/\n/raw.md\n/plans/\n/curations/\n/worktrees/\n/scripted-agent/\n/report.html\n# mine\n/my-notes.txt\n";
    project.write_state(".gitignore", older);
    project.git(&["add", "-A"]);
    project.git(&["commit", "-q", "-m", "the spec"]);

    assert_eq!(code(&project.run(&["plan", "-q"])), 0);
    project.write_state(
        "raw.md",
        "[2026-04-24T10:00:00Z] worker F-001 TRICK: run the tests first\n",
    );
    assert_eq!(code(&project.run(&["curate", "-q"])), 0);
    for name in ["plan.json", "curator.json", "mission-id"] {
        assert!(project.state_dir().join(name).exists(), "{name}");
    }
    let untracked = project.git(&["status", "--porcelain", "--untracked-files=all"]);
    for name in ["plan.json", "curator.json", "mission-id"] {
        assert!(!untracked.contains(name), "{untracked}");
    }
    let gitignore = project.read_state(".gitignore");
    assert!(gitignore.starts_with(older), "{gitignore}");
    assert!(
        gitignore
            .ends_with("/plan.json\n/curator.json\n/mission-id\n/hooks/\n/.*.tmp.*\n/.*.swap.*\n"),
        "{gitignore}"
    );
}

#[test]
fn what_a_killed_write_left_in_the_state_directory_never_shows_and_goes_at_the_next_run() {
    // Regression: a run killed while writing report.html left `.report.html.tmp.<pid>.0` in
    // .harness/: untracked in `git status` (an agent's `git add -A` would commit it), and still
    // there after a later run that found every feature done (no feature lock, so no sweep); so
    // did a validator killed after the landing, in its feature's directory.
    let project = Project::new(TWO, "steps: [[promise: true]]\n");
    assert_eq!(code(&project.run(&["all", "-q"])), 0);
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    // And a validator killed after the landing, while it wrote its state or its result.
    let newest = project.run_dirs("F-002").pop().unwrap();
    let newest = newest.strip_prefix(project.state_dir()).unwrap().display();
    let leftovers = [
        format!(".report.html.tmp.{dead}.0"),
        format!(".summary.md.tmp.{dead}.3"),
        format!("runs/F-002/.state.json.tmp.{dead}.4"),
        format!("{newest}/.result.json.tmp.{dead}.1"),
    ];
    for name in &leftovers {
        project.write_state(name, "half");
    }
    let untracked = project.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(!untracked.contains(".tmp."), "{untracked}");
    assert_eq!(code(&project.run(&["all", "-q"])), 0);
    for name in &leftovers {
        assert!(
            !project.state_dir().join(name).exists(),
            "{name} is still there"
        );
    }
}

#[test]
fn the_validators_and_the_planners_result_json_carry_their_usage() {
    // Regression: only the worker's result.json had the `usage` record.
    let project = Project::new(
        TWO,
        &format!(
            "scripts:\n  - match: {{role: validator}}\n    steps: [[print: '<verdict>PASS</verdict>', print: '{SPENT}']]\n  - steps: [[promise: true, print: '{SPENT}']]\n"
        ),
    );
    project.config("output_format: aider\n", "validate: true\n");
    assert_eq!(code(&project.run(&["F-001", "-q"])), 0);
    for dir in project.run_dirs("F-001") {
        let result: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
        assert_eq!(result["usage"]["total_tokens"], 1100, "{result:#}");
        assert_eq!(result["usage"]["cost_source"], "reported", "{result:#}");
    }
    assert_eq!(project.attempts("F-001")[1].0, "validator");
}
