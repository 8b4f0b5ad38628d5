//! Plain text: every line is the assistant's words, and all of it is the answer.

use super::{says_rate_limited, Event, Parser, Setback, SetbackKind};

/// A plain-text agent (the `command` preset, aider's text aside from its usage line).
#[derive(Debug, Default)]
pub struct Text;

impl Parser for Text {
    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        // Only limits: a transient error in free text cannot be told from the agent's own work
        // (a server it builds may well refuse a connection).
        if says_rate_limited(line) {
            events.push(Event::Setback(Setback {
                kind: SetbackKind::Limit,
                text: line.trim().to_string(),
            }));
        }
        events.push(Event::Text(line.to_string()));
    }

    fn text_is_answer(&self) -> bool {
        true
    }
}
