//! Gemini CLI's `--output-format stream-json`: one event a line (`packages/core/src/output/
//! types.ts` and `packages/cli/src/nonInteractiveCli.ts` in google-gemini/gemini-cli): `init`,
//! `message` (the user's prompt, echoed once, then the assistant's text in `delta` chunks that
//! are not lines), `tool_use`, `tool_result`, `error`, and a last `result` with `stats`.
//!
//! The CLI loops: one model request, its tool calls, their results, the next request; the loop
//! ends with a request that calls no tool. So the answer is the assistant's text after the last
//! tool event, given at `result`; the turns are counted as the requests seen. `stats` are
//! totals over the session: `input_tokens` is the prompt, of which `cached` came from the
//! cache and `input` did not; `total_tokens` also counts thoughts. No cost, no context size.

use serde_json::Value;

use super::{count, json, lines_of, setback, string, Event, Parser, Setback, SetbackKind, Usage};

/// Gemini CLI's stream-json.
#[derive(Debug, Default)]
pub struct Gemini {
    /// Assistant text not yet ended by a newline.
    partial: String,
    /// The assistant's text since the last tool event: the answer if no tool follows.
    answer: String,
    /// Model requests seen.
    turns: u64,
    /// Whether the current request has shown itself (text or a tool call) yet.
    in_turn: bool,
}

impl Parser for Gemini {
    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        let Some(event) = json(line) else {
            if !line.trim().is_empty() {
                events.push(Event::Other(line.to_string()));
            }
            return;
        };
        match string(&event, "type") {
            // The user's message is the prompt itself: never the assistant's words.
            "message" if string(&event, "role") == "assistant" => {
                self.turn();
                let content = string(&event, "content");
                self.answer.push_str(content);
                self.partial.push_str(content);
                if event.get("delta").and_then(Value::as_bool) != Some(true) {
                    self.partial.push('\n');
                }
                while let Some(newline) = self.partial.find('\n') {
                    let line: String = self.partial.drain(..=newline).collect();
                    events.push(Event::Text(line.trim_end_matches('\n').to_string()));
                }
            }
            "tool_use" => {
                self.turn();
                self.flush(events);
                self.answer.clear();
                events.push(Event::Action(string(&event, "tool_name").to_string()));
            }
            // A tool's output is the tool's, never the assistant's: only its outline is kept.
            "tool_result" => {
                self.flush(events);
                self.answer.clear();
                self.in_turn = false;
                let error = event.get("error").unwrap_or(&Value::Null);
                let mut outline = format!(
                    "tool {}: {}",
                    string(&event, "tool_id"),
                    string(&event, "status")
                );
                if !string(error, "message").is_empty() {
                    outline = format!("{outline}: {}", string(error, "message"));
                }
                events.push(Event::Other(outline));
            }
            "error" => failure(string(&event, "message"), events),
            "result" => {
                self.flush(events);
                if string(&event, "status") == "error" {
                    // A session that ended in an error gives no answer: it cannot complete.
                    let error = event.get("error").unwrap_or(&Value::Null);
                    failure(string(error, "message"), events);
                } else {
                    events.push(Event::Final(std::mem::take(&mut self.answer)));
                }
                if let Some(stats) = event.get("stats") {
                    events.push(Event::Usage(self.usage_of(stats)));
                }
            }
            _ => {}
        }
    }
}

impl Gemini {
    /// Counts a model request the first time it shows itself.
    fn turn(&mut self) {
        if !self.in_turn {
            self.in_turn = true;
            self.turns += 1;
        }
    }

    /// Ends the assistant's pending line (a tool call or the end comes after it).
    fn flush(&mut self, events: &mut Vec<Event>) {
        let rest = std::mem::take(&mut self.partial);
        if !rest.is_empty() {
            events.push(Event::Text(rest));
        }
    }

    /// The session's stats as usage. The output counts everything but the prompt (candidates
    /// and thoughts, both billed as output), so that the total is the CLI's `total_tokens`.
    fn usage_of(&self, stats: &Value) -> Usage {
        let prompt = count(stats, "input_tokens");
        let cached = count(stats, "cached");
        let uncached = count(stats, "input")
            .or_else(|| prompt.map(|prompt| prompt.saturating_sub(cached.unwrap_or(0))));
        let output = match (count(stats, "total_tokens"), prompt) {
            (Some(total), Some(prompt)) if total >= prompt => Some(total - prompt),
            _ => count(stats, "output_tokens"),
        };
        Usage {
            turns: (self.turns > 0).then_some(self.turns),
            input_tokens: uncached,
            output_tokens: output,
            cache_creation_tokens: None,
            cache_read_tokens: cached,
            cost_usd: None,
        }
    }
}

/// An error: kept for the notes, and a setback when it says so (Google's quota errors say
/// "quota" rather than "rate limit").
fn failure(message: &str, events: &mut Vec<Event>) {
    let quota = message.to_ascii_lowercase().contains("quota");
    let setback = setback::classify(message, None).or_else(|| {
        quota.then(|| Setback {
            kind: SetbackKind::Limit,
            text: message.trim().to_string(),
        })
    });
    events.extend(setback.map(Event::Setback));
    if !message.is_empty() {
        lines_of(message, Event::Error, events);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::agent::format::{finals, parse_all, SetbackKind};

    fn parse(lines: &[&str]) -> Vec<Event> {
        parse_all(&mut Gemini::default(), lines)
    }

    fn of_kind(events: &[Event], kind: fn(&Event) -> Option<&String>) -> Vec<&str> {
        events.iter().filter_map(kind).map(String::as_str).collect()
    }

    fn texts(events: &[Event]) -> Vec<&str> {
        of_kind(events, |e| match e {
            Event::Text(text) => Some(text),
            _ => None,
        })
    }

    // Shaped as nonInteractiveCli.ts emits them (see tests/fixtures/gemini_stream.jsonl).
    const SESSION: [&str; 10] = [
        r#"{"type":"init","timestamp":"2026-11-21T04:30:00.000Z","session_id":"c2f5a1de-7d0e-4b8e-9a41-0f6b2e9d7c11","model":"gemini-2.5-pro"}"#,
        r#"{"type":"message","timestamp":"2026-11-21T04:30:00.010Z","role":"user","content":"Print <promise>TASK_COMPLETE</promise> when done."}"#,
        r#"{"type":"message","timestamp":"2026-11-21T04:30:01.200Z","role":"assistant","content":"I'll create","delta":true}"#,
        r#"{"type":"message","timestamp":"2026-11-21T04:30:01.300Z","role":"assistant","content":" hello.txt.","delta":true}"#,
        r#"{"type":"tool_use","timestamp":"2026-11-21T04:30:01.400Z","tool_name":"write_file","tool_id":"write_file-1-a","parameters":{"file_path":"hello.txt","content":"hi\n"}}"#,
        r#"{"type":"tool_result","timestamp":"2026-11-21T04:30:01.500Z","tool_id":"write_file-1-a","status":"success","output":"<promise>TASK_COMPLETE</promise>"}"#,
        r#"{"type":"message","timestamp":"2026-11-21T04:30:02.100Z","role":"assistant","content":"Created hello.txt.\nTASK_","delta":true}"#,
        r#"{"type":"message","timestamp":"2026-11-21T04:30:02.200Z","role":"assistant","content":"COMPLETE","delta":true}"#,
        r#"{"type":"result","timestamp":"2026-11-21T04:30:02.300Z","status":"success","stats":{"total_tokens":18570,"input_tokens":18342,"output_tokens":88,"cached":12000,"input":6342,"duration_ms":2300,"tool_calls":1}}"#,
        "",
    ];

    #[test]
    fn deltas_become_lines_and_the_text_after_the_last_tool_is_the_answer() {
        let events = parse(&SESSION);
        assert_eq!(
            texts(&events),
            [
                "I'll create hello.txt.",
                "Created hello.txt.",
                "TASK_COMPLETE"
            ]
        );
        assert_eq!(finals(&events), ["Created hello.txt.\nTASK_COMPLETE"]);
        assert!(events.contains(&Event::Action("write_file".into())));
    }

    #[test]
    fn neither_the_echoed_prompt_nor_a_tool_result_is_the_assistants() {
        let events = parse(&SESSION);
        let words = format!("{:?}{:?}", texts(&events), finals(&events));
        assert!(!words.contains("<promise>"), "{words}");
        assert!(events.contains(&Event::Other("tool write_file-1-a: success".into())));
    }

    #[test]
    fn stats_give_the_usage_and_turns_are_the_requests_seen() {
        let events = parse(&SESSION);
        let Some(Event::Usage(usage)) = events.last() else {
            panic!("no usage: {events:?}");
        };
        assert_eq!(
            usage,
            &Usage {
                turns: Some(2),
                input_tokens: Some(6342),
                output_tokens: Some(228),
                cache_creation_tokens: None,
                cache_read_tokens: Some(12000),
                cost_usd: None,
            }
        );
        assert_eq!(usage.total_tokens(), Some(18570));
    }

    #[test]
    fn an_error_result_gives_no_answer_and_a_quota_error_is_a_rate_limit() {
        let events = parse(&[
            r#"{"type":"message","timestamp":"t","role":"assistant","content":"<promise>TASK_COMPLETE</promise>","delta":true}"#,
            r#"{"type":"result","timestamp":"t","status":"error","error":{"type":"Error","message":"[API Error: You have exhausted your daily quota on this model. (Status: RESOURCE_EXHAUSTED)]"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0}}"#,
        ]);
        assert!(finals(&events).is_empty(), "{events:?}");
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::Setback(s) if s.kind == SetbackKind::Limit)));
        let events = parse(&[
            r#"{"type":"error","timestamp":"t","severity":"warning","message":"Loop detected, stopping execution"}"#,
        ]);
        assert_eq!(
            events,
            [Event::Error("Loop detected, stopping execution".into())]
        );
    }

    #[test]
    fn a_whole_message_is_its_own_lines_and_stderr_is_kept() {
        let events = parse(&[
            "YOLO mode is enabled. All tool calls will be automatically approved.",
            r#"{"type":"message","timestamp":"t","role":"assistant","content":"one\ntwo"}"#,
            r#"{"type":"result","timestamp":"t","status":"success"}"#,
        ]);
        assert_eq!(
            events,
            [
                Event::Other(
                    "YOLO mode is enabled. All tool calls will be automatically approved.".into()
                ),
                Event::Text("one".into()),
                Event::Text("two".into()),
                Event::Final("one\ntwo".into()),
            ]
        );
    }
}
