//! What an invocation used: the agent's counts as its stream reports them ([`Usage`], one type
//! for every CLI), and the record kept of each agent run ([`UsageRecord`]) — the same counts with
//! the cost and where it came from (reported by the agent, estimated from a price table in
//! config.yaml, or unknown: never a made-up 0).

use serde::{Deserialize, Serialize};

use crate::base::text::tail_chars;
use crate::spec::config::Prices;

/// How much of the final answer the record keeps, in characters.
pub const ANSWER_CHARS: usize = 2000;

/// Where a cost comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The agent reported it.
    Reported,
    /// Estimated from tokens and the config's price table.
    Estimated,
    /// Neither: the cost is not known.
    Unknown,
}

/// Usage of one invocation, as far as the agent reports it (`None`: not reported).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Turns (model round trips).
    #[serde(default)]
    pub turns: Option<u64>,
    /// Input tokens, not counting cache reads and writes.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// Input tokens written to the cache.
    #[serde(default)]
    pub cache_creation_tokens: Option<u64>,
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cache_read_tokens: Option<u64>,
    /// Cost in USD as the agent reports it.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Takes every field `newer` knows.
    pub fn update(&mut self, newer: &Usage) {
        fn take<T: Copy>(field: &mut Option<T>, newer: Option<T>) {
            if newer.is_some() {
                *field = newer;
            }
        }
        take(&mut self.turns, newer.turns);
        take(&mut self.input_tokens, newer.input_tokens);
        take(&mut self.output_tokens, newer.output_tokens);
        take(&mut self.cache_creation_tokens, newer.cache_creation_tokens);
        take(&mut self.cache_read_tokens, newer.cache_read_tokens);
        take(&mut self.cost_usd, newer.cost_usd);
    }

    /// All tokens (input, output and cache), or `None` when none are known.
    pub fn total_tokens(&self) -> Option<u64> {
        let known: Vec<u64> = [
            self.input_tokens,
            self.output_tokens,
            self.cache_creation_tokens,
            self.cache_read_tokens,
        ]
        .into_iter()
        .flatten()
        .collect();
        (!known.is_empty()).then(|| known.iter().sum())
    }
}

/// An invocation's usage as the harness records it (in state.json and result.json): the
/// agent's own counts, the cost with where it comes from, the context and the final answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// The agent's final answer (its end, at most [`ANSWER_CHARS`] characters).
    #[serde(default)]
    pub final_answer: Option<String>,
    /// Turns and tokens as reported; the cost reported, or estimated (see `cost_source`).
    #[serde(flatten)]
    pub usage: Usage,
    /// All tokens, when any is known.
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// The largest context seen in the stream.
    #[serde(default)]
    pub context_tokens: Option<u64>,
    /// Where the cost comes from.
    pub cost_source: CostSource,
}

impl UsageRecord {
    /// The record of what an agent `reported`, with `prices` to estimate a cost it did not report.
    pub fn new(
        reported: &Usage,
        final_answer: Option<&str>,
        context_tokens: Option<u64>,
        prices: Option<&Prices>,
    ) -> Self {
        let (cost_usd, cost_source) = match (
            reported.cost_usd,
            prices.and_then(|p| estimate(reported, p)),
        ) {
            (Some(cost), _) => (Some(cost), CostSource::Reported),
            (None, Some(cost)) => (Some(cost), CostSource::Estimated),
            (None, None) => (None, CostSource::Unknown),
        };
        Self {
            final_answer: final_answer
                .map(|answer| tail_chars(answer.trim(), ANSWER_CHARS).to_string()),
            usage: Usage {
                cost_usd,
                ..reported.clone()
            },
            total_tokens: reported.total_tokens(),
            context_tokens,
            cost_source,
        }
    }
}

impl UsageRecord {
    /// The tokens the invocation counts for: all it reported, or, stopped before it reported
    /// them, at least its context.
    pub fn tokens_spent(&self) -> Option<u64> {
        self.total_tokens.or(self.context_tokens)
    }
}

/// The cost of `usage` at `prices`, when its tokens are known.
pub fn estimate(usage: &Usage, prices: &Prices) -> Option<f64> {
    usage.total_tokens()?;
    let per = |tokens: Option<u64>, price: f64| tokens.unwrap_or(0) as f64 * price / 1_000_000.0;
    Some(
        per(usage.input_tokens, prices.input_per_mtok)
            + per(usage.output_tokens, prices.output_per_mtok)
            + per(
                usage.cache_creation_tokens,
                prices.cache_write_per_mtok.unwrap_or(prices.input_per_mtok),
            )
            + per(
                usage.cache_read_tokens,
                prices
                    .cache_read_per_mtok
                    .unwrap_or(prices.input_per_mtok / 10.0),
            ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_of(usage: Usage, prices: Option<&Prices>) -> UsageRecord {
        UsageRecord::new(&usage, Some("done"), None, prices)
    }

    const PRICES: Prices = Prices {
        input_per_mtok: 3.0,
        output_per_mtok: 15.0,
        cache_write_per_mtok: None,
        cache_read_per_mtok: None,
    };

    #[test]
    fn a_reported_cost_wins() {
        let record = record_of(
            Usage {
                input_tokens: Some(10),
                cost_usd: Some(0.5),
                ..Usage::default()
            },
            Some(&PRICES),
        );
        assert_eq!(
            (record.usage.cost_usd, record.cost_source),
            (Some(0.5), CostSource::Reported)
        );
        assert_eq!(record.final_answer.as_deref(), Some("done"));
    }

    #[test]
    fn tokens_without_a_cost_are_priced_from_the_table() {
        let usage = Usage {
            input_tokens: Some(1_000_000),
            output_tokens: Some(100_000),
            cache_read_tokens: Some(1_000_000),
            ..Usage::default()
        };
        let record = record_of(usage, Some(&PRICES));
        assert_eq!(record.cost_source, CostSource::Estimated);
        assert!((record.usage.cost_usd.unwrap() - (3.0 + 1.5 + 0.3)).abs() < 1e-9);
        assert_eq!(record.total_tokens, Some(2_100_000));
    }

    #[test]
    fn nothing_known_is_unknown_never_zero() {
        let record = record_of(Usage::default(), Some(&PRICES));
        assert_eq!(
            (record.usage.cost_usd, record.cost_source),
            (None, CostSource::Unknown)
        );
        let record = record_of(
            Usage {
                output_tokens: Some(5),
                ..Usage::default()
            },
            None,
        );
        assert_eq!(
            (record.usage.cost_usd, record.cost_source),
            (None, CostSource::Unknown)
        );
        assert_eq!(record.total_tokens, Some(5));
    }
}
