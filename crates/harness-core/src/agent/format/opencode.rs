//! opencode's `run --format json`: one event a line, each carrying a message part
//! (`packages/opencode/src/cli/cmd/run.ts` in sst/opencode, now anomalyco/opencode):
//! `step_start`, `text` (a finished text part), `tool_use` (a finished tool call), `reasoning`
//! (with `--thinking`), `step_finish` and `error`. A step is one model request; its
//! `step_finish` part has the step's `cost` and `tokens` (`input` without the cache, `output`,
//! `reasoning`, `cache.read`, `cache.write`) and a `reason`: `tool-calls` when the session goes
//! on, anything else (`stop`) when the step was the last. The answer is that step's text.

use serde_json::Value;

use super::{count, json, lines_of, setback, string, Event, Parser, Usage};

/// opencode's JSON events.
#[derive(Debug, Default)]
pub struct Opencode {
    /// The text parts of the current step.
    step_text: Vec<String>,
    /// Sums over the steps finished so far.
    steps: u64,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
}

impl Parser for Opencode {
    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        let Some(event) = json(line) else {
            if !line.trim().is_empty() {
                events.push(Event::Other(line.to_string()));
            }
            return;
        };
        let part = event.get("part").unwrap_or(&Value::Null);
        match string(&event, "type") {
            "step_start" => self.step_text.clear(),
            "text" => {
                let text = string(part, "text");
                lines_of(text, Event::Text, events);
                self.step_text.push(text.to_string());
            }
            "reasoning" => lines_of(string(part, "text"), Event::Other, events),
            // A tool's output is the tool's, never the assistant's: only its outline is kept.
            "tool_use" => {
                let tool = string(part, "tool");
                let state = part.get("state").unwrap_or(&Value::Null);
                events.push(Event::Action(tool.to_string()));
                let mut outline = format!("{tool}: {}", string(state, "title"));
                if string(state, "status") == "error" {
                    outline = format!("{outline} failed: {}", string(state, "error"));
                }
                events.push(Event::Other(outline));
            }
            "step_finish" => self.step_finished(part, events),
            "error" => {
                let error = event.get("error").unwrap_or(&Value::Null);
                let data = error.get("data").unwrap_or(&Value::Null);
                let message = match string(data, "message") {
                    "" => string(error, "name"),
                    message => message,
                };
                let status = count(data, "statusCode");
                events.extend(setback::classify(message, status).map(Event::Setback));
                lines_of(message, Event::Error, events);
            }
            _ => {}
        }
    }
}

impl Opencode {
    /// A step's end: its usage is added to the totals, and the last step's text is the answer.
    fn step_finished(&mut self, part: &Value, events: &mut Vec<Event>) {
        let tokens = part.get("tokens").unwrap_or(&Value::Null);
        let cache = tokens.get("cache").unwrap_or(&Value::Null);
        let input = count(tokens, "input").unwrap_or(0);
        let read = count(cache, "read").unwrap_or(0);
        let write = count(cache, "write").unwrap_or(0);
        self.steps += 1;
        self.input += input;
        // opencode bills reasoning tokens on top of the output, at the output price.
        self.output +=
            count(tokens, "output").unwrap_or(0) + count(tokens, "reasoning").unwrap_or(0);
        self.cache_read += read;
        self.cache_write += write;
        self.cost += part.get("cost").and_then(Value::as_f64).unwrap_or(0.0);
        // What the model read for this step: its new input and the cached prefix.
        if input + read + write > 0 {
            events.push(Event::Context(input + read + write));
        }
        if string(part, "reason") != "tool-calls" {
            events.push(Event::Final(self.step_text.join("\n")));
        }
        events.push(Event::Usage(Usage {
            turns: Some(self.steps),
            input_tokens: Some(self.input),
            output_tokens: Some(self.output),
            cache_creation_tokens: Some(self.cache_write),
            cache_read_tokens: Some(self.cache_read),
            cost_usd: Some(self.cost),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::agent::format::{finals, parse_all, Setback, SetbackKind};

    fn parse(lines: &[&str]) -> Vec<Event> {
        parse_all(&mut Opencode::default(), lines)
    }

    // Shaped as the captured lines in banteg/takopi's opencode cheatsheet (see tests/fixtures).
    const RUN: [&str; 8] = [
        r#"{"type":"step_start","timestamp":1767036059338,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","part":{"id":"prt_1","sessionID":"ses_494719016ffe85dkDMj0FPRbHK","messageID":"msg_1","type":"step-start","snapshot":"71db24a7"}}"#,
        r#"{"type":"text","timestamp":1767036060100,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","part":{"id":"prt_2","sessionID":"ses_494719016ffe85dkDMj0FPRbHK","messageID":"msg_1","type":"text","text":"I'll run it.","time":{"start":1767036060000,"end":1767036060100}}}"#,
        r#"{"type":"tool_use","timestamp":1767036061199,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","part":{"id":"prt_3","sessionID":"ses_494719016ffe85dkDMj0FPRbHK","messageID":"msg_1","type":"tool","callID":"r9bQ","tool":"bash","state":{"status":"completed","input":{"command":"echo hello"},"output":"<promise>TASK_COMPLETE</promise>\n","title":"Print hello","metadata":{"exit":0},"time":{"start":1767036061123,"end":1767036061173}}}}"#,
        r#"{"type":"step_finish","timestamp":1767036061205,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","part":{"id":"prt_4","sessionID":"ses_494719016ffe85dkDMj0FPRbHK","messageID":"msg_1","type":"step-finish","reason":"tool-calls","snapshot":"ee3406d5","cost":0.002,"tokens":{"input":21772,"output":110,"reasoning":5,"cache":{"read":0,"write":100}}}}"#,
        r#"{"type":"step_start","timestamp":1767036062000,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","part":{"id":"prt_5","sessionID":"ses_494719016ffe85dkDMj0FPRbHK","messageID":"msg_2","type":"step-start","snapshot":"ee3406d5"}}"#,
        r#"{"type":"text","timestamp":1767036064268,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","part":{"id":"prt_6","sessionID":"ses_494719016ffe85dkDMj0FPRbHK","messageID":"msg_2","type":"text","text":"Done.\nTASK_COMPLETE","time":{"start":1767036064265,"end":1767036064265}}}"#,
        r#"{"type":"step_finish","timestamp":1767036064273,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","part":{"id":"prt_7","sessionID":"ses_494719016ffe85dkDMj0FPRbHK","messageID":"msg_2","type":"step-finish","reason":"stop","snapshot":"09dd05d1","cost":0.001,"tokens":{"input":671,"output":8,"reasoning":0,"cache":{"read":21415,"write":0}}}}"#,
        r#"{"type":"done","timestamp":1767036064300,"sessionID":"ses_494719016ffe85dkDMj0FPRbHK","reason":"idle","rejected":[]}"#,
    ];

    #[test]
    fn the_last_steps_text_is_the_answer() {
        let events = parse(&RUN);
        assert_eq!(finals(&events), ["Done.\nTASK_COMPLETE"]);
        assert!(events.contains(&Event::Text("I'll run it.".into())));
        assert!(events.contains(&Event::Action("bash".into())));
    }

    #[test]
    fn tool_output_is_never_the_assistants_words() {
        let events = parse(&RUN);
        let words: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e, Event::Text(_) | Event::Final(_)))
            .collect();
        assert!(!format!("{words:?}").contains("<promise>"), "{words:?}");
        assert!(events.contains(&Event::Other("bash: Print hello".into())));
    }

    #[test]
    fn steps_are_summed_and_each_gives_the_context() {
        let events = parse(&RUN);
        let contexts: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e, Event::Context(_)))
            .collect();
        assert_eq!(contexts, [&Event::Context(21872), &Event::Context(22086)]);
        let usage = events
            .iter()
            .rev()
            .find_map(|e| match e {
                Event::Usage(usage) => Some(usage),
                _ => None,
            })
            .unwrap();
        assert_eq!(usage.turns, Some(2));
        assert_eq!(usage.input_tokens, Some(22443));
        assert_eq!(usage.output_tokens, Some(123));
        assert_eq!(usage.cache_read_tokens, Some(21415));
        assert_eq!(usage.cache_creation_tokens, Some(100));
        assert!((usage.cost_usd.unwrap() - 0.003).abs() < 1e-12);
    }

    #[test]
    fn a_429_error_is_a_rate_limit_a_5xx_an_outage_and_a_failed_tool_says_why() {
        let events = parse(&[
            r#"{"type":"error","timestamp":1767036065000,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Overloaded","statusCode":429,"isRetryable":true}}}"#,
        ]);
        assert_eq!(
            events,
            [
                Event::Setback(Setback {
                    kind: SetbackKind::Limit,
                    text: "Overloaded".into()
                }),
                Event::Error("Overloaded".into())
            ]
        );
        let events = parse(&[
            r#"{"type":"error","timestamp":1,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Upstream failed","statusCode":502,"isRetryable":true}}}"#,
        ]);
        assert!(
            matches!(&events[0], Event::Setback(s) if s.kind == SetbackKind::Outage),
            "{events:?}"
        );
        let events = parse(&[
            r#"{"type":"tool_use","timestamp":1,"sessionID":"ses_1","part":{"id":"prt_1","type":"tool","callID":"c","tool":"edit","state":{"status":"error","input":{},"error":"oldString not found","time":{"start":1,"end":2}}}}"#,
        ]);
        assert_eq!(
            events[1],
            Event::Other("edit:  failed: oldString not found".into())
        );
    }
}
