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
