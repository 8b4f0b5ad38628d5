//! Claude Code's `-p --output-format stream-json --verbose`: one JSON event a line. `assistant`
//! events carry the assistant's text, tool uses and `message.usage`; the final `result` event
//! holds the answer, `num_turns`, `total_cost_usd` and the total `usage`.

use serde_json::Value;

use super::{action_line, count, json, lines_of, setback, Event, Parser, Usage};

/// Claude Code's stream-json.
#[derive(Debug, Default)]
pub struct Claude;

impl Parser for Claude {
    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        let Some(event) = json(line) else {
            if !line.trim().is_empty() {
                events.push(Event::Other(line.to_string()));
            }
            return;
        };
        match event.get("type").and_then(Value::as_str) {
            Some("assistant") => {
                let message = event.get("message").cloned().unwrap_or(Value::Null);
                for item in message
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match item.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            let text = item.get("text").and_then(Value::as_str).unwrap_or("");
                            lines_of(text, Event::Text, events);
                        }
                        Some("tool_use") => events.push(Event::Action(tool_use(item))),
                        _ => {}
                    }
                }
                // The context the model saw for this message: new input plus the cached prefix.
                if let Some(usage) = message.get("usage") {
                    let context = [
                        "input_tokens",
                        "cache_creation_input_tokens",
                        "cache_read_input_tokens",
                    ]
                    .iter()
                    .filter_map(|key| count(usage, key))
                    .sum::<u64>();
                    if context > 0 {
                        events.push(Event::Context(context));
                    }
                }
            }
            Some("result") => {
                let answer = event.get("result").and_then(Value::as_str).unwrap_or("");
                // A failed request ends the run with `is_error` and the API's status apart.
                if event.get("is_error").and_then(Value::as_bool) == Some(true) {
                    let status = count(&event, "api_error_status");
                    events.extend(setback::classify(answer, status).map(Event::Setback));
                }
                events.push(Event::Final(answer.to_string()));
                let usage = event.get("usage").cloned().unwrap_or(Value::Null);
                events.push(Event::Usage(Usage {
                    turns: count(&event, "num_turns"),
                    input_tokens: count(&usage, "input_tokens"),
                    output_tokens: count(&usage, "output_tokens"),
                    cache_creation_tokens: count(&usage, "cache_creation_input_tokens"),
                    cache_read_tokens: count(&usage, "cache_read_input_tokens"),
                    cost_usd: event.get("total_cost_usd").and_then(Value::as_f64),
                }));
            }
            _ => {}
        }
    }
}

/// The input fields that say what a tool works on, for Claude Code's built-in tools (`Bash`,
/// `Read`, `Write`, `Edit`, `NotebookEdit`, `Glob`, `Grep`, `WebFetch`, `WebSearch`, `Task`).
const TOOL_SUBJECTS: [&str; 8] = [
    "command",
    "file_path",
    "notebook_path",
    "path",
    "pattern",
    "url",
    "query",
    "description",
];

/// A tool use as one line: its name and what it works on (`Write: /path`, `Bash: ls`).
fn tool_use(item: &Value) -> String {
    let name = item.get("name").and_then(Value::as_str).unwrap_or("tool");
    let input = item.get("input").unwrap_or(&Value::Null);
    let subject = TOOL_SUBJECTS
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))
        .unwrap_or("");
    action_line(name, subject)
}
