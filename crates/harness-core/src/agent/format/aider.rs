//! aider's plain text (`--no-stream --no-pretty`): everything it prints is the answer, as for
//! any plain-text agent, except its usage report, which `Coder.calculate_and_show_tokens_and_cost`
//! (`aider/coders/base_coder.py` in Aider-AI/aider) prints after each model request:
//!
//! ```text
//! Tokens: 2.4k sent, 1.9k cache write, 12k cache hit, 57 received.
//! Cost: $0.0132 message, $0.0132 session.
//! ```
//!
//! The cache parts appear only when non-zero; `Cost:` follows on the same line after a space,
//! or on the next line when both cache parts are there, and is missing for models without
//! prices. Counts are rounded by `aider.utils.format_tokens` (`950`, `2.4k`, `12k`). "sent"
//! includes the tokens written to the cache; cache hits are apart. Each report is one request
//! (a reply, or a reflection on lint or test errors): they are summed, and the session cost is
//! the last one printed.

use super::text::Text;
use super::{setback, Event, Parser, SetbackKind, Usage};

/// aider's text output.
#[derive(Debug, Default)]
pub struct Aider {
    requests: u64,
    input: u64,
    output: u64,
    cache_write: u64,
    cache_read: u64,
    cost: Option<f64>,
}

impl Parser for Aider {
    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        let trimmed = line.trim();
        if let Some(report) = trimmed.strip_prefix("Tokens: ") {
            let (tokens, cost) = match report.split_once("Cost: ") {
                Some((tokens, cost)) => (tokens, Some(cost)),
                None => (report, None),
            };
            if let Some(tokens) = Tokens::parse(tokens) {
                self.requests += 1;
                self.input += tokens.sent.saturating_sub(tokens.cache_write);
                self.output += tokens.received;
                self.cache_write += tokens.cache_write;
                self.cache_read += tokens.cache_hit;
                if let Some(session) = cost.and_then(session_cost) {
                    self.cost = Some(session);
                }
                events.push(Event::Other(line.to_string()));
                // The prompt of this request: what was sent and what was read from the cache.
                events.push(Event::Context(tokens.sent + tokens.cache_hit));
                events.push(Event::Usage(self.usage()));
                return;
            }
        } else if let Some(cost) = trimmed.strip_prefix("Cost: ") {
            if let Some(session) = session_cost(cost) {
                self.cost = Some(session);
                events.push(Event::Other(line.to_string()));
                events.push(Event::Usage(self.usage()));
                return;
            }
        }
        // The model API's errors, as litellm raises them (`litellm.InternalServerError: …`):
        // aider's own words, never the assistant's.
        if trimmed.starts_with("litellm.") {
            let outage = setback::classify(trimmed, None).filter(|s| s.kind == SetbackKind::Outage);
            events.extend(outage.map(Event::Setback));
        }
        Text.line(line, events);
    }

    fn text_is_answer(&self) -> bool {
        true
    }
}

impl Aider {
    fn usage(&self) -> Usage {
        Usage {
            turns: Some(self.requests),
            input_tokens: Some(self.input),
            output_tokens: Some(self.output),
            cache_creation_tokens: Some(self.cache_write),
            cache_read_tokens: Some(self.cache_read),
            cost_usd: self.cost,
        }
    }
}

/// One `Tokens:` report.
#[derive(Debug, Default, PartialEq)]
struct Tokens {
    sent: u64,
    cache_write: u64,
    cache_hit: u64,
    received: u64,
}

impl Tokens {
    /// `2.4k sent, 1.9k cache write, 12k cache hit, 57 received.`; `None` if it is not that.
    fn parse(report: &str) -> Option<Self> {
        let mut tokens = Tokens::default();
        let mut received = false;
        for part in report.trim().trim_end_matches('.').split(", ") {
            let (number, what) = part.trim().split_once(' ')?;
            let number = token_count(number)?;
            match what {
                "sent" => tokens.sent = number,
                "cache write" => tokens.cache_write = number,
                "cache hit" => tokens.cache_hit = number,
                "received" => {
                    tokens.received = number;
                    received = true;
                }
                _ => return None,
            }
        }
        received.then_some(tokens)
    }
}

/// A count as aider rounds it: `950`, `2.4k`, `12k`, `1.5M`.
fn token_count(text: &str) -> Option<u64> {
    let (number, scale) = match text.chars().last()? {
        'k' | 'K' => (&text[..text.len() - 1], 1e3),
        'M' | 'm' => (&text[..text.len() - 1], 1e6),
        _ => (text, 1.0),
    };
    let value: f64 = number.parse().ok()?;
    (value.is_finite() && value >= 0.0).then(|| (value * scale).round() as u64)
}

/// The session cost of `$0.0132 message, $0.0132 session.`.
fn session_cost(cost: &str) -> Option<f64> {
    let (_, session) = cost.split_once("message, $")?;
    let session = session.trim().strip_suffix("session.")?.trim();
    session.parse().ok().filter(|cost: &f64| cost.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> (Aider, Vec<Event>) {
        let mut parser = Aider::default();
        let events = crate::agent::format::parse_all(&mut parser, lines);
        (parser, events)
    }

    #[test]
    fn counts_are_read_as_aider_rounds_them() {
        assert_eq!(token_count("345"), Some(345));
        assert_eq!(token_count("1.2k"), Some(1200));
        assert_eq!(token_count("12k"), Some(12_000));
        assert_eq!(token_count("1.5M"), Some(1_500_000));
        assert_eq!(token_count("k"), None);
        assert_eq!(token_count("lots"), None);
    }

    #[test]
    fn a_report_on_one_line_gives_tokens_and_the_session_cost() {
        let (parser, events) =
            parse(&["Tokens: 1.2k sent, 345 received. Cost: $0.01 message, $0.05 session."]);
        assert_eq!(
            events[0],
            Event::Other(
                "Tokens: 1.2k sent, 345 received. Cost: $0.01 message, $0.05 session.".into()
            )
        );
        assert_eq!(events[1], Event::Context(1200));
        assert_eq!(
            parser.usage(),
            Usage {
                turns: Some(1),
                input_tokens: Some(1200),
                output_tokens: Some(345),
                cache_creation_tokens: Some(0),
                cache_read_tokens: Some(0),
                cost_usd: Some(0.05),
            }
        );
    }

    #[test]
    fn reports_are_summed_and_the_cost_may_follow_on_its_own_line() {
        let (parser, _) = parse(&[
            "Tokens: 2.4k sent, 1.9k cache write, 12k cache hit, 57 received.",
            "Cost: $0.0132 message, $0.0132 session.",
            "Tokens: 950 sent, 12 received. Cost: $0.0031 message, $0.0163 session.",
        ]);
        assert_eq!(
            parser.usage(),
            Usage {
                turns: Some(2),
                input_tokens: Some(500 + 950),
                output_tokens: Some(69),
                cache_creation_tokens: Some(1900),
                cache_read_tokens: Some(12_000),
                cost_usd: Some(0.0163),
            }
        );
        // A model without prices: tokens only, the cost stays unknown.
        let (parser, _) = parse(&["Tokens: 116 sent, 30 received."]);
        assert_eq!(parser.usage().cost_usd, None);
        assert_eq!(parser.usage().output_tokens, Some(30));
    }

    #[test]
    fn everything_else_is_the_answer_as_plain_text() {
        let (parser, events) = parse(&[
            "Applied edit to hello.txt",
            "Tokens: a lot",
            "The API provider has rate limited you. Try again later or check your quotas.",
        ]);
        assert!(parser.text_is_answer());
        assert_eq!(events[0], Event::Text("Applied edit to hello.txt".into()));
        assert_eq!(events[1], Event::Text("Tokens: a lot".into()));
        assert!(
            matches!(&events[2], Event::Setback(s) if s.kind == SetbackKind::Limit),
            "{events:?}"
        );
        assert_eq!(parser.usage().turns, Some(0));
        let (_, events) = parse(&[
            r#"litellm.InternalServerError: AnthropicException - {"type":"overloaded_error","message":"Overloaded"}"#,
        ]);
        assert!(
            matches!(&events[0], Event::Setback(s) if s.kind == SetbackKind::Outage),
            "{events:?}"
        );
    }
}
