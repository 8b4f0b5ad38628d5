//! What the terminal shows of an agent whose output is a JSON stream: a readable transcript,
//! as the CLI shows interactively — the assistant's words, one line per tool use, errors, and
//! the final answer when it was not already shown — never the JSON itself (that goes to
//! output.log). Lines that are not JSON (a CLI's warnings on stderr) are shown as they are.

use crate::spec::config::OutputFormat;

use super::format::Event;

/// The most of the assistant's last words kept to tell whether the final answer repeats them.
const MAX_SHOWN_BYTES: usize = 64 << 10;

/// Whether the terminal shows a transcript of this format's output rather than the output.
pub fn is_rendered(format: OutputFormat) -> bool {
    !matches!(format, OutputFormat::Text | OutputFormat::Aider)
}

/// Renders a JSON stream line by line.
#[derive(Debug, Default)]
pub struct Transcript {
    /// The assistant's words shown since the last tool use (bounded).
    shown: String,
}

impl Transcript {
    /// Appends to `out` what the terminal shows for one line of output and the events it made.
    pub fn line(&mut self, line: &str, events: &[Event], out: &mut String) {
        if !line.trim_start().starts_with('{') {
            if !line.trim().is_empty() {
                out.push_str(line);
                out.push('\n');
            }
            return;
        }
        for event in events {
            match event {
                Event::Text(text) => {
                    out.push_str(text);
                    out.push('\n');
                    if self.shown.len() < MAX_SHOWN_BYTES {
                        self.shown.push_str(text);
                        self.shown.push('\n');
                    }
                }
                Event::Action(action) => {
                    out.push_str("→ ");
                    out.push_str(action);
                    out.push('\n');
                    self.shown.clear();
                }
                Event::Error(text) => {
                    out.push_str(text);
                    out.push('\n');
                }
                Event::Final(answer) => {
                    let answer = answer.trim();
                    if !answer.is_empty() && !self.shown.trim_end().ends_with(answer) {
                        out.push_str(answer);
                        out.push('\n');
                    }
                    self.shown.clear();
                }
                Event::Other(_) | Event::Usage(_) | Event::Context(_) | Event::Setback(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(lines: &[(&str, Vec<Event>)]) -> String {
        let mut transcript = Transcript::default();
        let mut out = String::new();
        for (line, events) in lines {
            transcript.line(line, events, &mut out);
        }
        out
    }

    #[test]
    fn words_tools_and_errors_are_shown_and_the_json_is_not() {
        let out = render(&[
            ("{\"type\":\"system\"}", vec![]),
            (
                "{\"type\":\"assistant\"}",
                vec![Event::Text("I'll write it.".into())],
            ),
            (
                "{\"type\":\"assistant\"}",
                vec![Event::Action("Write: /p/hello.txt".into())],
            ),
            (
                "{\"type\":\"user\"}",
                vec![Event::Other("File created".into())],
            ),
            (
                "{\"type\":\"error\"}",
                vec![Event::Error("stream disconnected".into())],
            ),
            (
                "warning: something on stderr",
                vec![Event::Other("x".into())],
            ),
            ("", vec![]),
        ]);
        assert_eq!(
            out,
            "I'll write it.\n→ Write: /p/hello.txt\nstream disconnected\nwarning: something on stderr\n"
        );
    }

    #[test]
    fn the_final_answer_is_shown_unless_it_was_just_said() {
        let said = render(&[
            (
                "{}",
                vec![
                    Event::Text("Done.".into()),
                    Event::Text("All of it.".into()),
                ],
            ),
            ("{}", vec![Event::Final("All of it.".into())]),
        ]);
        assert_eq!(said, "Done.\nAll of it.\n");
        let not_said = render(&[
            ("{}", vec![Event::Text("Working.".into())]),
            ("{}", vec![Event::Action("Bash: ls".into())]),
            ("{}", vec![Event::Final("API Error: overloaded".into())]),
        ]);
        assert_eq!(not_said, "Working.\n→ Bash: ls\nAPI Error: overloaded\n");
    }

    #[test]
    fn plain_formats_are_not_rendered() {
        assert!(!is_rendered(OutputFormat::Text));
        assert!(!is_rendered(OutputFormat::Aider));
        assert!(is_rendered(OutputFormat::ClaudeStreamJson));
        assert!(is_rendered(OutputFormat::CodexJson));
    }
}
