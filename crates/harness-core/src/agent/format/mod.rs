//! The shapes of agents' output. Each format turns one line of output into [`Event`]s: the
//! assistant's words, the final answer, usage, the context size, setbacks. The reader in
//! `agent` does the rest (bounded tail, memory entries, markers), whatever the format.

mod aider;
mod claude;
mod codex;
mod gemini;
mod opencode;
pub mod setback;
mod text;

use crate::spec::config::OutputFormat;
pub use crate::state::usage::Usage;
pub use setback::{says_rate_limited, Setback, SetbackKind};

/// What one line of an agent's output means to the harness.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A line of the assistant's own words: kept in the tail for the notes and searched for
    /// memory entries (and, for plain-text agents, for markers).
    Text(String),
    /// Output that is not the assistant's words (stderr, tool output): kept in the tail only.
    Other(String),
    /// An error the agent's CLI reports in its stream (a failed turn, an API error): kept in the
    /// tail like [`Event::Other`], and shown on the terminal.
    Error(String),
    /// The final answer: markers (the promise, verdicts) are counted in it alone.
    Final(String),
    /// Usage of the whole invocation so far; a field left `None` keeps its earlier value.
    Usage(Usage),
    /// The size of the model's context now, in tokens (for the context handoff).
    Context(u64),
    /// The tool or action the agent just started, for progress lines.
    Action(String),
    /// The agent's CLI says the service held it up: a rate or usage limit, or a transient
    /// service error (see [`setback`]).
    Setback(Setback),
}

/// Turns lines of one agent's output into events. Stateful: a format may sum over lines.
pub trait Parser: Send {
    /// One line, without its newline.
    fn line(&mut self, line: &str, events: &mut Vec<Event>);

    /// Whether the whole readable output is the answer (plain text) rather than one final event.
    fn text_is_answer(&self) -> bool {
        false
    }
}

/// The tests' way through a parser: every line of `lines` in turn, and the events they made.
#[cfg(test)]
pub(crate) fn parse_all<P: Parser>(parser: &mut P, lines: &[&str]) -> Vec<Event> {
    let mut events = Vec::new();
    for line in lines {
        parser.line(line, &mut events);
    }
    events
}

/// The final answers among `events`, for the tests.
#[cfg(test)]
pub(crate) fn finals(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Final(answer) => Some(answer.as_str()),
            _ => None,
        })
        .collect()
}

/// The parser of `format`.
pub fn parser_for(format: OutputFormat) -> Box<dyn Parser> {
    match format {
        OutputFormat::Text => Box::new(text::Text),
        OutputFormat::ClaudeStreamJson => Box::<claude::Claude>::default(),
        OutputFormat::CodexJson => Box::<codex::Codex>::default(),
        OutputFormat::GeminiStreamJson => Box::<gemini::Gemini>::default(),
        OutputFormat::OpencodeJson => Box::<opencode::Opencode>::default(),
        OutputFormat::Aider => Box::<aider::Aider>::default(),
    }
}

/// A JSON line, or `None` for anything else (stderr, a banner).
pub(crate) fn json(line: &str) -> Option<serde_json::Value> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    serde_json::from_str(line).ok()
}

/// A count in a JSON object, or `None`.
pub(crate) fn count(value: &serde_json::Value, key: &str) -> Option<u64> {
    value.get(key).and_then(serde_json::Value::as_u64)
}

/// A string in a JSON object, or `""`.
pub(crate) fn string<'a>(value: &'a serde_json::Value, key: &str) -> &'a str {
    value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}

/// The longest action kept: enough for a command or a path, one line on a terminal.
const MAX_ACTION_CHARS: usize = 160;

/// An action as one line: what it does, its whitespace (line breaks too) collapsed, cut with an
/// ellipsis past [`MAX_ACTION_CHARS`].
pub(crate) fn action_line(name: &str, subject: &str) -> String {
    let subject = subject.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = if subject.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {subject}")
    };
    match line.char_indices().nth(MAX_ACTION_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The lines of `text` as events of kind `kind`.
pub(crate) fn lines_of(text: &str, kind: fn(String) -> Event, events: &mut Vec<Event>) {
    events.extend(text.lines().map(|line| kind(line.to_string())));
}
