//! A corpus of broken inputs, each with the one-line error it must give (or the graceful
//! handling it must get), the documented exit code, and no state changed or lost: malformed and
//! wrongly-typed YAML, empty files, a BOM and CRLF (accepted), invalid UTF-8 and NUL bytes in the
//! agent's output and in the memory files, 100 MB of output on one line, 10,000 features,
//! hand-mangled summary.md and MEMORY.md, ids with `..`, `/`, spaces or Unicode lookalikes, a
//! dependency cycle and a read-only `.harness/` (a full disk is in disk_full.rs). (bad_input.rs
//! has the first cases of each kind; this file is the systematic table.)

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use harness_core::state::memory::RawEntry;
use harness_tests::{code, text, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";
const DONE_AT_ONCE: &str = "steps:\n  - [print: 'TRICK: it works', promise: true]\n";

/// One broken input: what to break, the command to run, and the error it must give.
struct Case {
    name: &'static str,
    /// The file under `.harness/` to write, and its bytes.
    file: &'static str,
    bytes: Vec<u8>,
    args: &'static [&'static str],
    /// A part of the one error line (`…: error: <file>:<line>: <what>`).
    error: &'static str,
}

fn case(
    name: &'static str,
    file: &'static str,
    bytes: impl Into<Vec<u8>>,
    args: &'static [&'static str],
    error: &'static str,
) -> Case {
    Case {
        name,
        file,
        bytes: bytes.into(),
        args,
        error,
    }
}

fn config_with(line: &str) -> String {
    format!("agent:\n  command: [sh]\n{line}\n")
}

fn feature_with(lines: &str) -> String {
    format!("features:\n  - id: F-001\n{lines}")
}

/// Every broken input that must be refused with exit 1 before anything changes.
fn refused_cases() -> Vec<Case> {
    let f001: &[&str] = &["F-001"];
    vec![
        // config.yaml: malformed, wrongly typed, empty, not UTF-8, not text.
        case("config: unclosed list", "config.yaml", "agent:\n  command: [a, b\n  timeout_secs: 3\n", f001, "config.yaml:"),
        case("config: bad indentation", "config.yaml", "agent:\n  command: [a]\n timeout_secs: 3\n", f001, "config.yaml:3:"),
        case("config: agent is a string", "config.yaml", "agent: claude\n", f001, "config.yaml:1: agent: invalid type: string \"claude\""),
        case("config: command is a string", "config.yaml", "agent:\n  command: claude -p\n", f001, "config.yaml:2: agent.command: invalid type: string \"claude -p\", expected a sequence"),
        case("config: max_iterations is a list", "config.yaml", config_with("max_iterations: [1]"), f001, "config.yaml:3: max_iterations: invalid type: sequence, expected u32"),
        case("config: max_iterations is negative", "config.yaml", config_with("max_iterations: -3"), f001, "config.yaml:3: max_iterations: invalid type: integer `-3`, expected u32"),
        case("config: max_iterations is too big", "config.yaml", config_with("max_iterations: 99999999999999999999"), f001, "config.yaml:3: max_iterations: invalid"),
        case("config: validate is a word", "config.yaml", config_with("validate: yes"), f001, "config.yaml:3: validate: invalid type: string \"yes\", expected a boolean"),
        case("config: a duplicate key", "config.yaml", config_with("agent: {command: [sh]}"), f001, "duplicate field `agent`"),
        case("config: a top-level list", "config.yaml", "- agent\n- command\n", f001, "config.yaml:1: invalid type: sequence"),
        case("config: two documents", "config.yaml", format!("{}---\n{}", config_with(""), config_with("")), f001, "more than one document"),
        case("config: an unknown anchor", "config.yaml", "agent:\n  command: *nothing\n", f001, "config.yaml:2:"),
        case("config: empty", "config.yaml", "", f001, "config.yaml: the file is empty"),
        case("config: blanks only", "config.yaml", "\n  \n\t\n", f001, "config.yaml: the file is empty"),
        case("config: a comment only", "config.yaml", "# nothing here yet\n", f001, "missing field `agent`"),
        case("config: invalid UTF-8", "config.yaml", b"agent:\n  command: [\xff\xfe]\n".to_vec(), f001, "config.yaml:2: the file is not valid UTF-8"),
        case("config: a NUL byte", "config.yaml", "agent:\n  command: [sh\0]\n", f001, "config.yaml:2: the file holds the control character U+0000"),
        case("config: brackets 100,000 deep", "config.yaml", format!("agent:\n  command: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)), f001, "config.yaml:2: lists or maps are nested more than 128 deep"),
        case("config: a BOM in the middle", "config.yaml", "agent:\n  command: [sh]\n\u{feff}max_iterations: 3\n", f001, "config.yaml:"),
        // config.yaml's lifecycle: checks, phases, hooks.
        case("config: a check without a command", "config.yaml", config_with("checks: [{name: tests}]"), f001, "config.yaml:3: checks[0]: missing field `command`"),
        case("config: a check named twice", "config.yaml", config_with("checks: [{name: t, command: a}, {name: t, command: b}]"), f001, "config.yaml:3:"),
        case("config: a phase allowing an absolute path", "config.yaml", config_with("phases: [{name: plan, allow: [/etc/**]}]"), f001, "relative to the top"),
        case("config: a hook for an unknown event", "config.yaml", config_with("hooks: {on_done: [{command: x}]}"), f001, "unknown variant `on_done`"),
        case("config: a hook with on_error: explode", "config.yaml", config_with("hooks: {feature_done: [{command: x, on_error: explode}]}"), f001, "config.yaml:3:"),
        // features.yaml: the same, and ids no file may be named after.
        case("features: bad indentation", "features.yaml", "features:\n  - id: F-001\n   title: a\n", f001, "features.yaml:2: features[0]: missing field `title`"),
        case("features: a map, not a list", "features.yaml", "features: {id: F-001, title: a}\n", f001, "features.yaml:1: features: invalid type: map, expected a sequence"),
        case("features: no title", "features.yaml", feature_with(""), f001, "features.yaml:2: features[0]: missing field `title`"),
        case("features: title is a list", "features.yaml", feature_with("    title: [a]\n"), f001, "features.yaml:3: features[0].title: invalid type: sequence, expected a string"),
        case("features: acceptance is a string", "features.yaml", feature_with("    title: a\n    acceptance: it works\n"), f001, "features.yaml:4: features[0].acceptance: invalid type: string \"it works\", expected a sequence"),
        case("features: depends_on is a number", "features.yaml", feature_with("    title: a\n    depends_on: 7\n"), f001, "features.yaml:4: features[0].depends_on: invalid type: integer `7`, expected a sequence"),
        case("features: empty", "features.yaml", "", f001, "features.yaml: the file is empty"),
        case("features: invalid UTF-8", "features.yaml", b"features:\n  - id: F-001\n    title: a\n    description: \"\xc3\x28\"\n".to_vec(), f001, "features.yaml:4: the file is not valid UTF-8"),
        case("features: a NUL byte", "features.yaml", "features:\n  - id: F-001\n    title: a\0b\n", f001, "features.yaml:3: the file holds the control character U+0000"),
        case("features: an escape sequence", "features.yaml", "features:\n  - id: F-001\n    title: \u{1b}[31mred\n", f001, "features.yaml:3: the file holds the control character U+001B"),
        case("features: id with ..", "features.yaml", "features:\n  - id: ../F-001\n    title: a\n", f001, "features.yaml:2: features[0]: invalid feature id \"../F-001\": it contains '..'"),
        case("features: id with /", "features.yaml", "features:\n  - id: F/001\n    title: a\n", f001, "features.yaml:2: features[0]: invalid feature id \"F/001\": it may hold only ASCII letters"),
        case("features: id with a space", "features.yaml", "features:\n  - id: F 001\n    title: a\n", f001, "invalid feature id \"F 001\""),
        case("features: fullwidth lookalike id", "features.yaml", "features:\n  - id: Ｆ-001\n    title: a\n", f001, "invalid feature id \"Ｆ-001\""),
        case("features: U+2010 hyphen lookalike id", "features.yaml", "features:\n  - id: F\u{2010}001\n    title: a\n", f001, "invalid feature id \"F\u{2010}001\""),
        case("features: id with a trailing NBSP", "features.yaml", "features:\n  - id: \"F-001\u{a0}\"\n    title: a\n", f001, "invalid feature id"),
        case("features: a dependency cycle", "features.yaml", "features:\n  - id: F-001\n    title: a\n    depends_on: [F-002]\n  - id: F-002\n    title: b\n    depends_on: [F-001]\n  - id: F-003\n    title: c\n", &["all"], "features.yaml: dependency cycle F-001 -> F-002 -> F-001"),
        case("features: a feature depending on itself", "features.yaml", "features:\n  - id: F-001\n    title: a\n    depends_on: [F-001]\n", &["all"], "features.yaml: dependency cycle F-001 -> F-001"),
        // Ids on the command line.
        case("argument: fullwidth lookalike id", "features.yaml", ONE_FEATURE, &["Ｆ-001"], "invalid feature id \"Ｆ-001\""),
        case("argument: U+2010 hyphen lookalike id", "features.yaml", ONE_FEATURE, &["F\u{2010}001"], "invalid feature id \"F\u{2010}001\""),
        case("argument: a trailing space", "features.yaml", ONE_FEATURE, &["F-001 "], "invalid feature id \"F-001 \""),
        case("argument: a path back into the id", "features.yaml", ONE_FEATURE, &["F-001/../F-001"], "invalid feature id \"F-001/../F-001\""),
        case("argument: explain with a path", "features.yaml", ONE_FEATURE, &["explain", "../F-001"], "invalid feature id"),
        case("argument: replan with a path", "features.yaml", ONE_FEATURE, &["replan", "a/b"], "invalid feature id"),
        // The run state, valid JSON of the wrong shape.
        case("state.json: a status that does not exist", "runs/F-001/state.json", "{\"feature_id\": \"F-001\", \"status\": \"flying\"}\n", f001, "runs/F-001/state.json:1: unreadable run state"),
        case("state.json: empty", "runs/F-001/state.json", "", f001, "runs/F-001/state.json:1: unreadable run state"),
        case("state.json: a list", "runs/F-001/state.json", "[]\n", f001, "runs/F-001/state.json:1: unreadable run state"),
    ]
}

/// A project whose one feature the scripted agent completes at once.
fn fresh_project() -> Project {
    Project::new(ONE_FEATURE, DONE_AT_ONCE)
}

/// The line of `stderr` holding `expected`, which must be an error line.
fn error_line<'a>(stderr: &'a str, expected: &str) -> Option<&'a str> {
    stderr
        .lines()
        .find(|line| line.contains(expected) && line.contains("error"))
}

/// Runs `command`, expects exit 1 with `expected` in one error line, and nothing under .harness/
/// changed (lock files aside).
fn assert_refused(
    project: &Project,
    what: &str,
    out: Output,
    before: &[(PathBuf, Vec<u8>)],
    expected: &str,
) {
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{what}: exit code\n{stderr}");
    assert!(
        error_line(&stderr, expected).is_some(),
        "{what}: expected an error line with {expected:?} in\n{stderr}"
    );
    assert_eq!(project.snapshot(), before, "{what}: the state changed");
}

#[test]
fn every_broken_input_is_refused_with_its_error_and_changes_nothing() {
    assert_every_case_refused(&fresh_project(), refused_cases());
}

const CYCLE: &str = "features:\n  - id: F-001\n    title: a\n    depends_on: [F-002]\n  - id: F-002\n    title: b\n    depends_on: [F-001]\n  - id: F-003\n    title: c\n";
const SELF_CYCLE: &str = "features:\n  - id: F-001\n    title: a\n    depends_on: [F-001]\n";
const DASH_ID: &str = "features:\n  - id: F-001\n    title: a\n  - id: -rf\n    title: b\n";
const DOT_ID: &str = "features:\n  - id: F-001\n    title: a\n  - id: .x\n    title: b\n";
const STATE_OF_F002: &str = "{\"feature_id\": \"F-002\", \"status\": \"done\", \"iteration_count\": 1, \"max_iterations\": 10, \"completion_promise\": \"TASK_COMPLETE\", \"created_at\": \"2026-04-24T10:00:00Z\", \"updated_at\": \"2026-04-24T10:00:00Z\"}\n";

/// Regression: a dependency cycle was refused only by `all` (`./run.sh F-001` ran a feature
/// depending on itself), an id starting with `-` passed features.yaml's check and broke `all`
/// (`unknown option -rf`), and a state.json naming another feature was trusted (`F-002 is already
/// done`, exit 0, when running F-001). One check of features.yaml and of the run state now
/// serves every command.
#[test]
fn a_cycle_a_dash_id_or_another_features_state_is_refused_by_every_command() {
    let cycle = "features.yaml: dependency cycle F-001 -> F-002 -> F-001";
    let dash = "features.yaml:4: features[1]: invalid feature id \"-rf\": it starts with '-'";
    let foreign = "runs/F-001/state.json: the run state of F-002, not of F-001";
    let mut cases = Vec::new();
    let every: [&'static [&'static str]; 8] = [
        &["F-001"],
        &["F-003"],
        &["all"],
        &["status"],
        &["report"],
        &["explain", "F-001"],
        &["replan", "F-001"],
        &["plan"],
    ];
    for args in every {
        cases.push(case("a cycle", "features.yaml", CYCLE, args, cycle));
        cases.push(case(
            "an id starting with '-'",
            "features.yaml",
            DASH_ID,
            args,
            dash,
        ));
        cases.push(case(
            "an id starting with '.'",
            "features.yaml",
            DOT_ID,
            args,
            "invalid feature id \".x\": it starts with '.'",
        ));
    }
    let run_by_one: [&'static [&'static str]; 5] = [
        &["F-001"],
        &["all"],
        &["status"],
        &["report"],
        &["explain", "F-001"],
    ];
    for args in run_by_one {
        cases.push(case(
            "state.json of another feature",
            "runs/F-001/state.json",
            STATE_OF_F002,
            args,
            foreign,
        ));
    }
    cases.push(case(
        "a feature depending on itself",
        "features.yaml",
        SELF_CYCLE,
        &["F-001"],
        "features.yaml: dependency cycle F-001 -> F-001",
    ));
    cases.push(case(
        "argument: an id starting with '-'",
        "features.yaml",
        ONE_FEATURE,
        &["--", "-rf"],
        "invalid feature id \"-rf\": it starts with '-'",
    ));
    // With a mission, so that `plan` gets as far as reading features.yaml.
    let project = fresh_project();
    project.write_state("mission.md", "Say hello.\n");
    assert_every_case_refused(&project, cases);
}

/// Each case breaks one file of one project, runs, checks the refusal, and puts the file back;
/// the failures are reported together.
fn assert_every_case_refused(project: &Project, cases: Vec<Case>) {
    let total = cases.len();
    let mut failures = Vec::new();
    for case in cases {
        let path = project.state_dir().join(case.file);
        let original = std::fs::read(&path).ok();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &case.bytes).unwrap();
        let before = project.snapshot();
        let out = project.run(case.args);
        let what = format!("{} ({})", case.name, case.args.join(" "));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            assert_refused(project, &what, out, &before, case.error)
        }));
        if let Err(panic) = result {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "panic".into());
            failures.push(message);
        }
        match original {
            Some(bytes) => std::fs::write(&path, bytes).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // And the project still works once its files are whole again.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}

#[test]
fn a_bom_and_crlf_line_ends_are_accepted() {
    let project = fresh_project();
    let crlf = |text: &str| format!("\u{feff}{}", text.replace('\n', "\r\n"));
    let config = project.read_state("config.yaml");
    project.write_state("config.yaml", &crlf(&config));
    project.write_state(
        "features.yaml",
        &crlf(
            "features:\n  - id: F-001\n    title: Hello\n    acceptance:\n      - it says hello\n",
        ),
    );
    project.write_state("summary.md", &crlf("## Lessons\n- keep it short\n"));
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let prompt = project.prompt("F-001", 1);
    assert!(prompt.contains("- it says hello"), "{prompt}");
    assert!(prompt.contains("- keep it short"), "{prompt}");
    assert!(!prompt.contains('\u{feff}'), "the BOM reached the prompt");
}

#[test]
fn ten_thousand_features_still_run_one() {
    let mut features = String::from("features:\n");
    for n in 1..=10_000 {
        let depends = if n > 1 {
            format!("[F-{:05}]", n - 1)
        } else {
            "[]".into()
        };
        features.push_str(&format!(
            "  - id: F-{n:05}\n    title: Feature {n}\n    description: Part {n} of the whole.\n    acceptance:\n      - part {n} works\n    depends_on: {depends}\n"
        ));
    }
    let project = Project::new(&features, DONE_AT_ONCE);
    let out = project.run(&["F-05000", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(project.state("F-05000")["status"], "done");
    assert!(project.prompt("F-05000", 1).contains("part 5000 works"));
    let out = project.run(&["status", "--json"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(board["features"].as_array().unwrap().len(), 10_000);
}

/// Every line of raw.md is an entry the harness wrote, read back exactly.
fn assert_raw_lines_whole(project: &Project) {
    let raw = std::fs::read(project.state_dir().join("raw.md")).unwrap_or_default();
    let raw = String::from_utf8(raw).expect("raw.md is UTF-8");
    for line in raw.lines() {
        let entry = RawEntry::parse(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert_eq!(entry.to_string(), line);
    }
}

#[test]
fn invalid_utf8_and_nul_in_the_agents_output_are_kept_in_the_log_and_kept_out_of_memory() {
    let project = fresh_project();
    let printed: &[u8] =
        b"hello \xff\xfe world\x00 nul\r\nTRICK: bad \xff bytes \x00 and \x1b[31mcolour\nLESSON: \xc3\n";
    let escaped: String = printed.iter().map(|b| format!("\\{b:03o}")).collect();
    // The first attempt prints the bytes and stops; the second completes.
    project.shell_agent(&format!(
            "printf '{escaped}'\nif [ \"$HARNESS_ITERATION\" = 2 ]; then echo '<promise>TASK_COMPLETE</promise>'; fi"
        ),
    );
    let out = project.run(&["F-001", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let dirs = project.run_dirs("F-001");
    assert_eq!(
        std::fs::read(dirs[0].join("output.log")).unwrap(),
        printed,
        "output.log keeps the bytes as they came"
    );
    assert_raw_lines_whole(&project);
    let raw = project.read_state("raw.md");
    assert!(
        raw.contains("TRICK: bad \u{fffd} bytes and [31mcolour"),
        "{raw}"
    );
    assert!(!raw.contains('\0') && !raw.contains('\u{1b}'), "{raw:?}");
    // The second prompt carried the first attempt's notes: valid UTF-8, and no NUL.
    let prompt = project.prompt("F-001", 2);
    assert!(prompt.contains("hello \u{fffd}\u{fffd} world"), "{prompt}");
    assert!(!prompt.contains('\0'), "a NUL reached the prompt");
}

#[test]
fn a_100_mb_line_of_nul_bytes_keeps_the_worker_small_and_the_promise_found() {
    let project = fresh_project();
    project.shell_agent("head -c 100000000 /dev/zero\nprintf '\\nTRICK: after the flood\\n<promise>TASK_COMPLETE</promise>\\n'",
    );
    let out = project.run(&["F-001", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let dir = &project.run_dirs("F-001")[0];
    assert_eq!(
        std::fs::metadata(dir.join("output.log")).unwrap().len(),
        100_000_000 + "\nTRICK: after the flood\n<promise>TASK_COMPLETE</promise>\n".len() as u64
    );
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    let peak_kb = result["worker_peak_rss_kb"].as_u64().unwrap();
    assert!(peak_kb < 32 * 1024, "the worker grew to {peak_kb} KiB");
    assert_eq!(result["promise_found"], true);
    assert!(project
        .read_state("raw.md")
        .contains("TRICK: after the flood"));
    assert_raw_lines_whole(&project);
}

/// Regression: a line longer than the 64 KiB held back for redaction went out in pieces cut
/// anywhere, so a key across a cut left its end in output.log.
#[test]
fn a_key_across_the_long_line_bound_is_still_redacted() {
    let project = fresh_project();
    let key = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345";
    // One line per padding, so that some line puts the key across the 64 KiB bound whatever
    // the pipe's reads; each line written at once.
    project.shell_agent(&format!(
            "pad=$(head -c 65480 /dev/zero | tr '\\0' x)\nfor n in $(seq 0 4 100); do printf '%s%s %s tail\\n' \"$pad\" \"$(head -c $n /dev/zero | tr '\\0' y)\" '{key}'; done\necho '<promise>TASK_COMPLETE</promise>'"
        ),
    );
    let out = project.run(&["F-001", "--quiet"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let log = std::fs::read(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    let log = String::from_utf8_lossy(&log);
    assert_eq!(
        log.matches("[REDACTED] tail").count(),
        26,
        "every line redacted"
    );
    for piece in ["AbCdEf", "UvWxYz012345", "z012345"] {
        assert!(!log.contains(piece), "{piece} of the key survived");
    }
}

#[test]
fn mangled_memory_files_are_still_injected_and_nothing_crashes() {
    let project = fresh_project();
    let summary: &[u8] = b"# Summary\n<!-- never closed\n## Lessons\n## Lessons\n##\n- \xff\xfe broken \x00 byte\n- <promise>TASK_COMPLETE</promise> in memory\n```\nunclosed fence\n";
    let mut summary = summary.to_vec();
    summary.extend_from_slice(format!("- {}\n", "very long line ".repeat(2000)).as_bytes());
    std::fs::write(project.state_dir().join("summary.md"), &summary).unwrap();
    std::fs::write(
        project.identity_dir().join("worker.md"),
        b"# Identity\n- \xc3\x28 half a character\n",
    )
    .unwrap();
    std::fs::write(
        project.state_dir().join("MEMORY.md"),
        "## History\n### ### ###\n- [link](<>)\n| a | b |\n|---|\n  - * + nested\n<!-- c:0123456789:bad -->\n",
    )
    .unwrap();
    // raw.md with lines of the user's, one not UTF-8, and no final newline.
    std::fs::write(
        project.state_dir().join("raw.md"),
        b"my own note\n[not a time] worker F-001 TRICK: x\n\xff\xfe\nlast line without newline",
    )
    .unwrap();
    std::fs::create_dir_all(project.state_dir().join("notes")).unwrap();
    std::fs::write(
        project.state_dir().join("notes/F-001.md"),
        b"## Attempt 1 \xe2\x80 torn by hand\n\x00",
    )
    .unwrap();
    project.scenario(
        "steps:\n  - [expect_prompt: 'broken', expect_prompt: 'half a character', expect_prompt: 'torn by hand', print: 'TRICK: still fine']\n  - [promise: true]\n",
    );
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let prompt = project.prompt("F-001", 1);
    assert!(prompt.contains("- \u{fffd}\u{fffd} broken"), "{prompt}");
    assert!(!prompt.contains('\0'));
    assert!(
        prompt.contains("&lt;promise&gt;TASK_COMPLETE&lt;/promise&gt; in memory"),
        "the promise in memory is disarmed"
    );
    // The user's raw.md lines are still there, and the harness's lines are whole after them.
    let raw = std::fs::read(project.state_dir().join("raw.md")).unwrap();
    assert!(raw.starts_with(
        b"my own note\n[not a time] worker F-001 TRICK: x\n\xff\xfe\nlast line without newline\n["
    ));
    let raw = String::from_utf8_lossy(&raw);
    for line in raw.lines().skip(4) {
        assert_eq!(RawEntry::parse(line).unwrap().to_string(), line);
    }
    // The curator refuses a summary.md that is not UTF-8 (it keeps the user's lines byte for
    // byte, and could not), naming the line, and writes nothing.
    let before = project.snapshot();
    let out = project.curator(&[]);
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    assert!(
        error_line(&text(&out.stderr), "summary.md:6: not valid UTF-8").is_some(),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(project.snapshot(), before);
    // Made UTF-8 again but still garbage, it is curated: every line of the user's kept.
    let summary = String::from_utf8_lossy(&summary).replace('\0', "");
    project.write_state("summary.md", &summary);
    std::fs::write(
        project.identity_dir().join("worker.md"),
        "# Identity\n- ( half\n",
    )
    .unwrap();
    let out = project.curator(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let curated = project.read_state("summary.md");
    for line in summary.lines().filter(|l| !l.trim().is_empty()) {
        assert!(curated.contains(line), "{line:?} lost by the curator");
    }
    let memory = project.read_state("MEMORY.md");
    assert!(
        memory.contains("| a | b |") && memory.contains("  - * + nested"),
        "{memory}"
    );
}

/// Runs `args` as user `nobody` when the tests run as root (root ignores file permissions), so
/// that a read-only directory is read-only for the harness too.
fn run_unprivileged(project: &Project, args: &[&str]) -> Output {
    let mut command = project.command(args);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // nobody must reach the project through the temporary directory.
        std::fs::set_permissions(
            project.root(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        command.uid(65534).gid(65534);
    }
    command.output().unwrap()
}

fn chmod_tree(dir: &Path, writable: bool) {
    for entry in walkdir::WalkDir::new(dir).contents_first(!writable) {
        let entry = entry.unwrap();
        let mode = match (entry.file_type().is_dir(), writable) {
            (true, true) => 0o755,
            (true, false) => 0o555,
            (false, true) => 0o644,
            (false, false) => 0o444,
        };
        std::fs::set_permissions(
            entry.path(),
            std::os::unix::fs::PermissionsExt::from_mode(mode),
        )
        .unwrap();
    }
}

#[test]
fn a_read_only_state_directory_is_a_clear_error_and_changes_nothing() {
    let project = fresh_project();
    let state = project.state_dir();
    // All of it read-only: run.sh cannot even take the feature's lock.
    chmod_tree(&state, false);
    let before = project.snapshot();
    let out = run_unprivileged(&project, &["F-001"]);
    chmod_tree(&state, true);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    assert!(
        error_line(&stderr, "run.sh: error: cannot create directory")
            .is_some_and(|line| line.ends_with("Permission denied")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&state.display().to_string()),
        "names the directory: {stderr}"
    );
    assert_eq!(project.snapshot(), before);

    // Locks writable, the rest read-only: the worker says which directory it cannot create.
    std::fs::create_dir_all(state.join("locks")).unwrap();
    std::fs::create_dir_all(state.join("runs")).unwrap();
    chmod_tree(&state, false);
    std::fs::set_permissions(
        state.join("locks"),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let before = project.snapshot();
    let out = run_unprivileged(&project, &["F-001"]);
    chmod_tree(&state, true);
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 1, "{stderr}");
    assert!(
        error_line(&stderr, "runs/F-001").is_some_and(|line| line.contains("Permission denied")),
        "{stderr}"
    );
    assert_eq!(project.snapshot(), before);
    // Writable again, it runs.
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}
