//! Codex's `exec --json`: one event a line (`codex-rs/exec/src/exec_events.rs` in openai/codex).
//! `item.completed` items of type `agent_message` are the assistant's words; the last one of a
//! turn is its answer (what `--output-last-message` writes). `turn.completed.usage` holds the
//! thread's token totals so far (`input_tokens`, of which `cached_input_tokens` came from the
//! cache, and `output_tokens`). Codex reports no cost, no turn count and no context size.
//!
//! The answer is given once, at `turn.completed`, not at each `agent_message`: the first final
//! answer starts the supervisor's grace period, and Codex talks ("Creating files.") long before
//! it is done. A turn that fails or never completes has no answer, so it cannot complete.

use std::collections::HashSet;

use serde_json::Value;

use super::{action_line, count, json, lines_of, setback, string, Event, Parser, Usage};

/// Codex's `exec --json` events.
#[derive(Debug, Default)]
pub struct Codex {
    /// The text of the turn's last `agent_message` so far.
    answer: Option<String>,
    /// Items started and not yet completed, so that each action is announced once.
    started: HashSet<String>,
}

impl Parser for Codex {
    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        let Some(event) = json(line) else {
            if !line.trim().is_empty() {
                events.push(Event::Other(line.to_string()));
            }
            return;
        };
        let item = event.get("item").unwrap_or(&Value::Null);
        match string(&event, "type") {
            "turn.started" => self.answer = None,
            "item.started" => {
                self.started.insert(string(item, "id").to_string());
                if let Some(action) = action(item) {
                    events.push(Event::Action(action));
                }
            }
            "item.completed" => {
                if !self.started.remove(string(item, "id")) {
                    if let Some(action) = action(item) {
                        events.push(Event::Action(action));
                    }
                }
                self.completed(item, events);
            }
            "turn.completed" => {
                let usage = event.get("usage").unwrap_or(&Value::Null);
                events.push(Event::Final(self.answer.take().unwrap_or_default()));
                events.push(Event::Usage(usage_of(usage)));
            }
            "turn.failed" => {
                let message = string(event.get("error").unwrap_or(&Value::Null), "message");
                self.answer = None;
                failure(message, events);
            }
            "error" => failure(string(&event, "message"), events),
            _ => {}
        }
    }
}

impl Codex {
    /// What a completed item tells: the assistant's words, or one line of what it did.
    fn completed(&mut self, item: &Value, events: &mut Vec<Event>) {
        match string(item, "type") {
            "agent_message" => {
                let text = string(item, "text");
                lines_of(text, Event::Text, events);
                self.answer = Some(text.to_string());
            }
            "reasoning" => lines_of(string(item, "text"), Event::Other, events),
            // The command's output is the tool's, never the assistant's: only its outline is kept.
            "command_execution" => {
                let exit = item
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .map_or("?".to_string(), |code| code.to_string());
                events.push(Event::Other(format!(
                    "$ {} (exit {exit})",
                    string(item, "command")
                )));
            }
            "file_change" => events.extend(changes(item).into_iter().map(Event::Other)),
            "error" => events.push(Event::Error(string(item, "message").to_string())),
            _ => {}
        }
    }
}

/// The action an item stands for, for progress lines (`None` for words and reasoning).
fn action(item: &Value) -> Option<String> {
    match string(item, "type") {
        "command_execution" => Some(action_line("shell", string(item, "command"))),
        "file_change" => Some(action_line("file_change", &changes(item).join(", "))),
        "mcp_tool_call" => Some(format!(
            "{}.{}",
            string(item, "server"),
            string(item, "tool")
        )),
        "web_search" => Some("web_search".to_string()),
        "collab_tool_call" => Some(string(item, "tool").to_string()),
        _ => None,
    }
}

/// The changes of a `file_change` item: `add /path`, one each.
fn changes(item: &Value) -> Vec<String> {
    item.get("changes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|change| format!("{} {}", string(change, "kind"), string(change, "path")))
        .collect()
}

/// A fatal error or failed turn: kept for the notes, and a setback when it says so. `Reconnecting…
/// n/m (…)` is Codex retrying on its own: only the error it gives up with is one.
fn failure(message: &str, events: &mut Vec<Event>) {
    if !message.starts_with("Reconnecting") {
        events.extend(setback::classify(message, None).map(Event::Setback));
    }
    if !message.is_empty() {
        events.push(Event::Error(message.to_string()));
    }
}

/// `turn.completed.usage`: the thread's totals so far (the exec mapper reports the last total
/// token usage, not the turn's share), so the latest one is kept rather than summed. Cached input
/// (and, in newer versions, cache writes) are part of `input_tokens` in OpenAI's convention
/// (`TokenUsage::non_cached_input` subtracts them), so they are taken out of the input here.
fn usage_of(usage: &Value) -> Usage {
    let input = count(usage, "input_tokens");
    let cached = count(usage, "cached_input_tokens");
    let written = count(usage, "cache_write_input_tokens");
    Usage {
        turns: None,
        input_tokens: input.map(|input| {
            input
                .saturating_sub(cached.unwrap_or(0))
                .saturating_sub(written.unwrap_or(0))
        }),
        output_tokens: count(usage, "output_tokens"),
        cache_creation_tokens: written,
        cache_read_tokens: cached,
        cost_usd: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::agent::format::{finals, parse_all, Setback, SetbackKind};

    fn parse(lines: &[&str]) -> Vec<Event> {
        parse_all(&mut Codex::default(), lines)
    }

    // Lines as Codex 0.169.0 printed them (shared/fixtures/agent-output/codex_events.jsonl).
    const TURN: [&str; 9] = [
        r#"{"type":"thread.started","thread_id":"01a1fc55-b46e-74d2-bbc2-1b02b694be76"}"#,
        r#"{"type":"turn.started"}"#,
        r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Creating files."}}"#,
        r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'echo hi > hello.txt'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'echo hi > hello.txt'","aggregated_output":"<promise>TASK_COMPLETE</promise>\n","exit_code":0,"status":"completed"}}"#,
        r#"{"type":"item.started","item":{"id":"item_2","type":"file_change","changes":[{"path":"/p/patched.txt","kind":"add"}],"status":"in_progress"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"/p/patched.txt","kind":"add"}],"status":"completed"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"All done.\nTASK_COMPLETE"}}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":29291,"cached_input_tokens":1000,"cache_write_input_tokens":0,"output_tokens":193,"reasoning_output_tokens":0}}"#,
    ];

    #[test]
    fn the_last_agent_message_is_the_answer_given_once_at_the_end_of_the_turn() {
        let events = parse(&TURN);
        assert_eq!(finals(&events), ["All done.\nTASK_COMPLETE"]);
        assert!(matches!(events.last(), Some(Event::Usage(_))));
        assert!(events.contains(&Event::Text("Creating files.".into())));
        assert!(events.contains(&Event::Text("TASK_COMPLETE".into())));
    }

    #[test]
    fn tool_output_is_never_the_assistants_words() {
        let events = parse(&TURN);
        let words: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e, Event::Text(_) | Event::Final(_)))
            .collect();
        assert!(
            !format!("{words:?}").contains("<promise>"),
            "the command's output leaked into the answer: {words:?}"
        );
        assert!(events.contains(&Event::Other(
            "$ /bin/bash -lc 'echo hi > hello.txt' (exit 0)".into()
        )));
        assert!(events.contains(&Event::Other("add /p/patched.txt".into())));
    }

    #[test]
    fn each_action_is_announced_once() {
        let events = parse(&TURN);
        let actions: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e, Event::Action(_)))
            .collect();
        assert_eq!(
            actions,
            [
                &Event::Action("shell: /bin/bash -lc 'echo hi > hello.txt'".into()),
                &Event::Action("file_change: add /p/patched.txt".into())
            ]
        );
        // An item that only completes (file changes may) is announced when it completes.
        let events = parse(&[
            r#"{"type":"item.completed","item":{"id":"item_9","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{},"result":null,"error":null,"status":"completed"}}"#,
        ]);
        assert_eq!(events, [Event::Action("docs.search".into())]);
    }

    #[test]
    fn usage_takes_the_cache_out_of_the_input_and_reports_no_cost_or_turns() {
        let events = parse(&TURN);
        let Some(Event::Usage(usage)) = events.last() else {
            panic!("no usage: {events:?}");
        };
        assert_eq!(
            usage,
            &Usage {
                turns: None,
                input_tokens: Some(28291),
                output_tokens: Some(193),
                cache_creation_tokens: Some(0),
                cache_read_tokens: Some(1000),
                cost_usd: None,
            }
        );
        // Older versions print only the three documented fields.
        let events = parse(&[
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":7}}"#,
        ]);
        assert_eq!(
            events[1],
            Event::Usage(Usage {
                input_tokens: Some(100),
                output_tokens: Some(7),
                cache_read_tokens: Some(0),
                ..Usage::default()
            })
        );
    }

    #[test]
    fn a_failed_turn_has_no_answer_a_429_is_a_rate_limit_and_a_lost_stream_an_outage() {
        let message = "exceeded retry limit, last status: 429 Too Many Requests, request id: 9c84b52ce87fbe62-SJC";
        let failed = format!(r#"{{"type":"turn.failed","error":{{"message":"{message}"}}}}"#);
        let events = parse(&[
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"<promise>TASK_COMPLETE</promise>"}}"#,
            &format!(r#"{{"type":"error","message":"{message}"}}"#),
            &failed,
        ]);
        assert!(finals(&events).is_empty(), "{events:?}");
        assert!(events.contains(&Event::Setback(Setback {
            kind: SetbackKind::Limit,
            text: message.into()
        })));
        let events = parse(&[
            r#"{"type":"error","message":"You've hit your usage limit. Try again Aug 18."}"#,
        ]);
        assert!(
            matches!(&events[0], Event::Setback(s) if s.kind == SetbackKind::Limit),
            "{events:?}"
        );
        // Codex retrying by itself is no setback; the error it gives up with is.
        let lost = "stream disconnected before completion: stream closed before response.completed";
        let events = parse(&[
            &format!(r#"{{"type":"error","message":"Reconnecting... 1/5 ({lost})"}}"#),
            &format!(r#"{{"type":"turn.failed","error":{{"message":"{lost}"}}}}"#),
        ]);
        let setbacks: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e, Event::Setback(_)))
            .collect();
        assert_eq!(
            setbacks,
            [&Event::Setback(Setback {
                kind: SetbackKind::Outage,
                text: lost.into()
            })]
        );
        let events = parse(&[r#"{"type":"error","message":"sandbox denied the write"}"#]);
        assert_eq!(events, [Event::Error("sandbox denied the write".into())]);
    }

    #[test]
    fn a_new_turn_forgets_the_last_ones_words_and_stderr_is_kept() {
        let events = parse(&[
            "Reading prompt from stdin...",
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"first"}}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#,
        ]);
        assert_eq!(
            events[0],
            Event::Other("Reading prompt from stdin...".into())
        );
        assert_eq!(finals(&events), [""]);
    }
}
