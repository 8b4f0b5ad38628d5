//! Each preset's output format, end to end: the scripted agent replays a recorded sample of the
//! CLI's output (`tests/fixtures/`, see its README), whose answer does not complete, then prints
//! a completion in the same format. What the harness read is checked in state.json and in the
//! next prompt's notes.

use std::process::Output;

use harness_tests::{code, text, Project};
use serde_json::Value;

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

/// A scenario step that prints `lines`, one `print` each (YAML single-quoted).
fn prints(lines: &[&str]) -> String {
    let actions: Vec<String> = lines
        .iter()
        .map(|line| format!("print: '{}'", line.replace('\'', "''")))
        .collect();
    format!("[{}]", actions.join(", "))
}

/// Runs F-001 with `output_format: format`: step 1 is `first`, step 2 prints `second`. Returns
/// the project and what run.sh printed, once it has succeeded.
fn run_two_steps_shown(format: &str, first: &str, second: &[&str]) -> (Project, Output) {
    let project = Project::new(
        ONE_FEATURE,
        &format!("steps:\n  - {first}\n  - {}\n", prints(second)),
    );
    project.config(&format!("output_format: {format}\n"), "");
    let out = project.run(&["F-001"]);
    assert_eq!(code(&out), 0, "{format}: {}", text(&out.stderr));
    (project, out)
}

/// [`run_two_steps_shown`], for the project alone.
fn run_two_steps(format: &str, first: &str, second: &[&str]) -> Project {
    run_two_steps_shown(format, first, second).0
}

/// The recorded sample `fixture`.
fn fixture(name: &str) -> std::path::PathBuf {
    harness_tests::repo_root().join("tests/fixtures").join(name)
}

/// Step 1 replays `fixture` verbatim; the project and what run.sh printed.
fn replay_shown(format: &str, fixture_name: &str, second: &[&str]) -> (Project, Output) {
    let path = fixture(fixture_name);
    run_two_steps_shown(
        format,
        &format!("[cat: {:?}]", path.display().to_string()),
        second,
    )
}

/// [`replay_shown`], for the project alone.
fn replay(format: &str, fixture_name: &str, second: &[&str]) -> Project {
    replay_shown(format, fixture_name, second).0
}

/// The attempts of F-001, asserting the first did not complete and the second did.
fn attempts(project: &Project) -> Vec<Value> {
    let state = project.state("F-001");
    let attempts = state["attempts"].as_array().unwrap().clone();
    let outcomes: Vec<&Value> = attempts.iter().map(|a| &a["outcome"]).collect();
    assert_eq!(outcomes, ["no_promise", "completed"], "{state:#}");
    attempts
}

#[test]
fn codex_json_reads_the_last_agent_message_and_the_turn_usage() {
    let project = replay(
        "codex-json",
        "codex_events.jsonl",
        &[
            r#"{"type":"thread.started","thread_id":"01a1fc55-0000-0000-0000-000000000002"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Checked. <promise>TASK_COMPLETE</promise>"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":1000,"output_tokens":20}}"#,
        ],
    );
    let attempts = attempts(&project);
    let usage = &attempts[0]["usage"];
    assert_eq!(usage["final_answer"], "All done. TASK_COMPLETE");
    assert_eq!(usage["input_tokens"], 29291);
    assert_eq!(usage["cache_read_tokens"], 0);
    assert_eq!(usage["output_tokens"], 193);
    assert_eq!(usage["total_tokens"], 29484);
    // Codex reports neither turns nor cost: unknown, never a made-up 0.
    assert_eq!(usage["turns"], Value::Null);
    assert_eq!(usage["cost_usd"], Value::Null);
    assert_eq!(usage["cost_source"], "unknown");
    assert_eq!(attempts[0]["tokens"], 29484);
    let second = &attempts[1]["usage"];
    assert_eq!(second["input_tokens"], 200);
    assert_eq!(second["cache_read_tokens"], 1000);
    let prompt = project.prompt("F-001", 2);
    assert!(prompt.contains("Turns: ? | Commits: 0"), "{prompt}");
    assert!(
        prompt.contains("Creating files."),
        "the notes show the assistant's text: {prompt}"
    );
}

#[test]
fn gemini_stream_json_joins_the_deltas_and_reads_the_result_stats() {
    let project = replay(
        "gemini-stream-json",
        "gemini_stream.jsonl",
        &[
            r#"{"type":"init","timestamp":"2026-11-21T05:00:00.000Z","session_id":"5d1c0b7e-0000-0000-0000-000000000002","model":"gemini-2.5-pro"}"#,
            r#"{"type":"message","timestamp":"2026-11-21T05:00:01.000Z","role":"assistant","content":"Checked. <promise>TASK_","delta":true}"#,
            r#"{"type":"message","timestamp":"2026-11-21T05:00:01.050Z","role":"assistant","content":"COMPLETE</promise>","delta":true}"#,
            r#"{"type":"result","timestamp":"2026-11-21T05:00:01.100Z","status":"success","stats":{"total_tokens":1100,"input_tokens":1000,"output_tokens":100,"cached":0,"input":1000,"duration_ms":1000,"tool_calls":0}}"#,
        ],
    );
    let attempts = attempts(&project);
    let usage = &attempts[0]["usage"];
    assert_eq!(
        usage["final_answer"],
        "Created hello.txt and checked its content. TASK_COMPLETE"
    );
    assert_eq!(usage["turns"], 3);
    assert_eq!(usage["input_tokens"], 8820);
    assert_eq!(usage["cache_read_tokens"], 16000);
    assert_eq!(usage["output_tokens"], 408);
    assert_eq!(usage["total_tokens"], 25228);
    assert_eq!(usage["cost_source"], "unknown");
    assert_eq!(attempts[0]["turns"], 3);
    let prompt = project.prompt("F-001", 2);
    assert!(prompt.contains("Turns: 3 | Commits: 0"), "{prompt}");
    assert!(
        prompt.contains("I'll create hello.txt first."),
        "the notes show the assistant's text, its chunks joined: {prompt}"
    );
    assert!(
        !prompt.contains("hello from gemini"),
        "a tool's output is not the assistant's words: {prompt}"
    );
}

#[test]
fn opencode_json_reads_the_last_step_and_sums_the_steps() {
    let project = replay(
        "opencode-json",
        "opencode_events.jsonl",
        &[
            r#"{"type":"step_start","timestamp":1767036070000,"sessionID":"ses_5a1","part":{"id":"prt_1","sessionID":"ses_5a1","messageID":"msg_1","type":"step-start","snapshot":"09dd05d1"}}"#,
            r#"{"type":"text","timestamp":1767036071000,"sessionID":"ses_5a1","part":{"id":"prt_2","sessionID":"ses_5a1","messageID":"msg_1","type":"text","text":"Checked. <promise>TASK_COMPLETE</promise>","time":{"start":1767036070900,"end":1767036071000}}}"#,
            r#"{"type":"step_finish","timestamp":1767036071010,"sessionID":"ses_5a1","part":{"id":"prt_3","sessionID":"ses_5a1","messageID":"msg_1","type":"step-finish","reason":"stop","snapshot":"09dd05d1","cost":0.001,"tokens":{"input":300,"output":12,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
        ],
    );
    let attempts = attempts(&project);
    let usage = &attempts[0]["usage"];
    assert_eq!(usage["final_answer"], "Created hello.txt. TASK_COMPLETE");
    assert_eq!(usage["turns"], 2);
    assert_eq!(usage["input_tokens"], 11421);
    assert_eq!(usage["output_tokens"], 109);
    assert_eq!(usage["cache_read_tokens"], 11020);
    assert_eq!(usage["cache_creation_tokens"], 11020);
    assert_eq!(usage["context_tokens"], 22254);
    assert_eq!(usage["cost_source"], "reported");
    let cost = usage["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0192).abs() < 1e-9, "{cost}");
    let prompt = project.prompt("F-001", 2);
    assert!(prompt.contains("Turns: 2 | Commits: 0"), "{prompt}");
    assert!(
        prompt.contains("I'll create hello.txt."),
        "the notes show the assistant's text: {prompt}"
    );
}

#[test]
fn aider_text_is_the_answer_and_its_usage_report_gives_tokens_and_cost() {
    let project = replay(
        "aider",
        "aider_output.txt",
        &[
            "Checked hello.txt.",
            "<promise>TASK_COMPLETE</promise>",
            "Tokens: 950 sent, 20 received. Cost: $0.0030 message, $0.0030 session.",
        ],
    );
    let attempts = attempts(&project);
    let usage = &attempts[0]["usage"];
    assert_eq!(usage["turns"], 1);
    assert_eq!(usage["input_tokens"], 500);
    assert_eq!(usage["output_tokens"], 57);
    assert_eq!(usage["cache_creation_tokens"], 1900);
    assert_eq!(usage["cache_read_tokens"], 12000);
    assert_eq!(usage["total_tokens"], 14457);
    assert_eq!(usage["cost_usd"], 0.0132);
    assert_eq!(usage["cost_source"], "reported");
    assert_eq!(attempts[1]["usage"]["cost_usd"], 0.003);
    let prompt = project.prompt("F-001", 2);
    assert!(prompt.contains("Turns: 1 | Commits: 0"), "{prompt}");
    assert!(
        prompt.contains("I'll create hello.txt with a greeting."),
        "the notes show the assistant's text: {prompt}"
    );
}

/// A promise in what a tool printed (or in the prompt the CLI echoes) is not the agent's: the
/// attempt does not complete; the next, which says it in the answer, does.
fn promise_in_tool_output_only(format: &str, first: &[&str], second: &[&str]) {
    let project = run_two_steps(format, &prints(first), second);
    attempts(&project);
}

#[test]
fn codex_a_promise_in_a_commands_output_does_not_complete() {
    promise_in_tool_output_only(
        "codex-json",
        &[
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'cat notes.md'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'cat notes.md'","aggregated_output":"<promise>TASK_COMPLETE</promise>\n","exit_code":0,"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Not done yet."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":5}}"#,
        ],
        &[
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"<promise>TASK_COMPLETE</promise>"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":5}}"#,
        ],
    );
}

#[test]
fn gemini_a_promise_in_a_tool_result_or_the_echoed_prompt_does_not_complete() {
    promise_in_tool_output_only(
        "gemini-stream-json",
        &[
            r#"{"type":"message","timestamp":"2026-11-21T05:00:00.000Z","role":"user","content":"Print <promise>TASK_COMPLETE</promise> when done."}"#,
            r#"{"type":"tool_use","timestamp":"2026-11-21T05:00:01.000Z","tool_name":"read_file","tool_id":"read_file-1","parameters":{"absolute_path":"/p/notes.md"}}"#,
            r#"{"type":"tool_result","timestamp":"2026-11-21T05:00:01.100Z","tool_id":"read_file-1","status":"success","output":"<promise>TASK_COMPLETE</promise>"}"#,
            r#"{"type":"message","timestamp":"2026-11-21T05:00:02.000Z","role":"assistant","content":"Not done yet.","delta":true}"#,
            r#"{"type":"result","timestamp":"2026-11-21T05:00:02.100Z","status":"success","stats":{"total_tokens":110,"input_tokens":100,"output_tokens":10,"cached":0,"input":100,"duration_ms":2100,"tool_calls":1}}"#,
        ],
        &[
            r#"{"type":"message","timestamp":"2026-11-21T05:01:00.000Z","role":"assistant","content":"<promise>TASK_COMPLETE</promise>","delta":true}"#,
            r#"{"type":"result","timestamp":"2026-11-21T05:01:00.100Z","status":"success","stats":{"total_tokens":110,"input_tokens":100,"output_tokens":10,"cached":0,"input":100,"duration_ms":100,"tool_calls":0}}"#,
        ],
    );
}

#[test]
fn opencode_a_promise_in_a_tool_output_does_not_complete() {
    promise_in_tool_output_only(
        "opencode-json",
        &[
            r#"{"type":"step_start","timestamp":1,"sessionID":"ses_1","part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"step-start"}}"#,
            r#"{"type":"tool_use","timestamp":2,"sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c1","tool":"bash","state":{"status":"completed","input":{"command":"cat notes.md"},"output":"<promise>TASK_COMPLETE</promise>\n","title":"Show notes","metadata":{"exit":0},"time":{"start":1,"end":2}}}}"#,
            r#"{"type":"step_finish","timestamp":3,"sessionID":"ses_1","part":{"id":"prt_3","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"tool-calls","cost":0.001,"tokens":{"input":100,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
            r#"{"type":"step_start","timestamp":4,"sessionID":"ses_1","part":{"id":"prt_4","sessionID":"ses_1","messageID":"msg_2","type":"step-start"}}"#,
            r#"{"type":"text","timestamp":5,"sessionID":"ses_1","part":{"id":"prt_5","sessionID":"ses_1","messageID":"msg_2","type":"text","text":"Not done yet.","time":{"start":4,"end":5}}}"#,
            r#"{"type":"step_finish","timestamp":6,"sessionID":"ses_1","part":{"id":"prt_6","sessionID":"ses_1","messageID":"msg_2","type":"step-finish","reason":"stop","cost":0.001,"tokens":{"input":100,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
        ],
        &[
            r#"{"type":"step_start","timestamp":1,"sessionID":"ses_2","part":{"id":"prt_1","sessionID":"ses_2","messageID":"msg_1","type":"step-start"}}"#,
            r#"{"type":"text","timestamp":2,"sessionID":"ses_2","part":{"id":"prt_2","sessionID":"ses_2","messageID":"msg_1","type":"text","text":"<promise>TASK_COMPLETE</promise>","time":{"start":1,"end":2}}}"#,
            r#"{"type":"step_finish","timestamp":3,"sessionID":"ses_2","part":{"id":"prt_3","sessionID":"ses_2","messageID":"msg_1","type":"step-finish","reason":"stop","cost":0.001,"tokens":{"input":100,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
        ],
    );
}

/// The terminal of a JSON-stream preset shows a transcript, as the CLI does interactively: the
/// assistant's words, one line per tool use, the final answer once; never the JSON, which goes
/// to output.log unchanged.
fn assert_transcript(format: &str, fixture_name: &str, second: &[&str], expected: &[&str]) {
    let (project, out) = replay_shown(format, fixture_name, second);
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("{\""), "JSON on the terminal:\n{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let shown = &lines[..expected.len().min(lines.len())];
    assert_eq!(shown, expected, "the terminal showed:\n{stdout}");
    let log = std::fs::read(project.run_dirs("F-001")[0].join("output.log")).unwrap();
    assert_eq!(
        log,
        std::fs::read(fixture(fixture_name)).unwrap(),
        "output.log holds the stream as it came"
    );
}

#[test]
fn claude_on_the_terminal_is_a_transcript_not_json() {
    assert_transcript(
        "claude-stream-json",
        "claude_stream.jsonl",
        &[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"cat hello.txt\necho done","description":"Check"}}]}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Checked. <promise>TASK_COMPLETE</promise>"}"#,
        ],
        &[
            "I'll create hello.txt.",
            "→ Write: /home/user/project/hello.txt",
            "Created hello.txt. TASK_COMPLETE",
            "→ Bash: cat hello.txt echo done",
            "Checked. <promise>TASK_COMPLETE</promise>",
        ],
    );
}

#[test]
fn codex_on_the_terminal_is_a_transcript_not_json() {
    assert_transcript(
        "codex-json",
        "codex_events.jsonl",
        &[
            r#"{"type":"turn.started"}"#,
            r#"{"type":"error","message":"stream disconnected before completion"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Checked. <promise>TASK_COMPLETE</promise>"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":1000,"output_tokens":20}}"#,
        ],
        &[
            "Creating files.",
            "→ shell: /bin/bash -lc 'echo hello-from-codex-mock > hello.txt'",
            "→ file_change: add /home/user/project/patched.txt",
            "All done. TASK_COMPLETE",
            "stream disconnected before completion",
            "Checked. <promise>TASK_COMPLETE</promise>",
        ],
    );
}
