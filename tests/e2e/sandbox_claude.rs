//! The genuine Claude Code CLI (the claude preset) runs a feature to done inside `sandbox: bwrap`,
//! against a stand-in for the model's API on 127.0.0.1 (`ANTHROPIC_BASE_URL`). `make test`
//! installs the CLI with npm into `~/.cache/harness-tests/claude-code` (outside the repository);
//! where it is not installed the test says so and passes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use harness_tests::{code, text, Project};
use serde_json::{json, Value};

/// The CLI: `HARNESS_TEST_CLAUDE`, else where `make test` installs it, else `claude` in `PATH`.
fn claude() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HARNESS_TEST_CLAUDE") {
        return Some(PathBuf::from(path));
    }
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let cached = home.join(".cache/harness-tests/claude-code/node_modules/.bin/claude");
    if cached.exists() {
        return Some(cached);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("claude"))
        .find(|path| path.exists())
}

/// The model's turn for a request: a Bash tool call the first time (`command`), the final answer
/// with the promise once the tool's result is in the conversation (and for any side request).
fn reply(request: &Value, command: &str) -> (Vec<Value>, &'static str) {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let has_result = messages.iter().any(|message| {
        message["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
    });
    let has_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    if has_tools && !has_result {
        let input = json!({"command": command, "description": "do the work"});
        (
            vec![json!({"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": input})],
            "tool_use",
        )
    } else {
        let answer = "Done. <promise>TASK_COMPLETE</promise>";
        (vec![json!({"type": "text", "text": answer})], "end_turn")
    }
}

/// The server-sent events of a streamed message.
fn events(model: &Value, content: &[Value], stop: &str) -> String {
    let usage = json!({"input_tokens": 10, "output_tokens": 1});
    let mut events = vec![json!({"type": "message_start", "message": {"id": "msg_1",
        "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": usage}})];
    for (index, block) in content.iter().enumerate() {
        let (start, delta) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        } else {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop,
        "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    );
    events.push(json!({"type": "message_stop"}));
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}

/// Serves one connection's requests (keep-alive) until it closes.
fn serve(stream: TcpStream, command: &str, messages: &AtomicUsize) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut stream = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let (kind, payload) = if request_line.starts_with("POST /v1/messages") {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if request_line.contains("count_tokens") {
                ("application/json", json!({"input_tokens": 10}).to_string())
            } else {
                messages.fetch_add(1, Ordering::SeqCst);
                let (content, stop) = reply(&request, command);
                assert_eq!(request["stream"], true, "the CLI streams");
                (
                    "text/event-stream",
                    events(&request["model"], &content, stop),
                )
            }
        } else {
            ("application/json", "{}".to_string())
        };
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n{payload}",
            payload.len()
        )?;
        stream.flush()?;
    }
}

/// A stand-in for the model's API on 127.0.0.1; its port, and how many messages it answered.
fn model_server(command: String) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let messages = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&messages);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (command, counted) = (command.clone(), Arc::clone(&counted));
            std::thread::spawn(move || serve(stream, &command, &counted));
        }
    });
    (port, messages)
}

#[test]
fn the_genuine_claude_code_cli_runs_a_feature_to_done_in_the_sandbox() {
    let Some(claude) = claude() else {
        eprintln!(
            "SKIPPED: Claude Code is not installed (make test installs it: npm install @anthropic-ai/claude-code into ~/.cache/harness-tests/claude-code)"
        );
        return;
    };
    if !super::sandbox::bwrap_works() {
        return;
    }
    let project = Project::new_in(
        &super::sandbox::base(),
        "features:\n  - id: F-001\n    title: Hello\n",
        "steps: []\n",
    );
    // Its work, and an attack on the state: the first lands, the second must not.
    let (port, messages) =
        model_server("echo hello > hello.txt; touch .harness/planted; true".to_string());
    project.write_state(
        "config.yaml",
        "agent:\n  preset: claude\n  timeout_secs: 120\nvalidate: false\nstall_iterations: 0\nsandbox: bwrap\n",
    );
    let home = project.root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let path = std::env::join_paths(
        std::iter::once(claude.parent().unwrap().to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = project
        .command(&["F-001"])
        .env("PATH", path)
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-ant-api03-stand-in-key-for-a-test")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}\n{}", text(&out.stdout));
    assert_eq!(project.state("F-001")["status"], "done", "{stderr}");
    assert!(messages.load(Ordering::SeqCst) >= 2, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(project.workdir.join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert!(!project.state_dir().join("planted").exists());
}
