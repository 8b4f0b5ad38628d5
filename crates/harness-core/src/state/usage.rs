//! What an invocation cost: one normalised record per agent run, whatever the CLI — turns,
//! tokens by kind, and the cost with where it came from (reported by the agent, estimated from
//! a price table in config.yaml, or unknown: never a made-up 0).

use serde::{Deserialize, Serialize};

use crate::agent::{OutputSummary, Usage};
use crate::state::notes;

/// How much of the final answer the record keeps, in characters.
pub const ANSWER_CHARS: usize = 2000;

/// Prices in USD per million tokens, for agents that report tokens but no cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Input tokens.
    pub input_per_mtok: f64,
    /// Output tokens.
    pub output_per_mtok: f64,
    /// Tokens written to the cache (default: the input price).
    #[serde(default)]
    pub cache_write_per_mtok: Option<f64>,
    /// Tokens read from the cache (default: a tenth of the input price).
    #[serde(default)]
    pub cache_read_per_mtok: Option<f64>,
}

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

/// The usage of one invocation, normalised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// The agent's final answer (its end, at most [`ANSWER_CHARS`] characters).
    #[serde(default)]
    pub final_answer: Option<String>,
    /// Turns, when reported.
    #[serde(default)]
    pub turns: Option<u64>,
    /// Input tokens (not counting the cache).
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// Tokens written to the cache.
    #[serde(default)]
    pub cache_creation_tokens: Option<u64>,
    /// Tokens read from the cache.
    #[serde(default)]
    pub cache_read_tokens: Option<u64>,
    /// All of them, when any is known.
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// The largest context seen in the stream.
    #[serde(default)]
    pub context_tokens: Option<u64>,
    /// Cost in USD; `None` when unknown.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Where the cost comes from.
    pub cost_source: CostSource,
}

impl UsageRecord {
    /// The record of an invocation's output, with `prices` to estimate a cost it did not report.
    pub fn of(output: &OutputSummary, prices: Option<&Prices>) -> Self {
        let usage = &output.usage;
        let (cost_usd, cost_source) =
            match (usage.cost_usd, prices.and_then(|p| estimate(usage, p))) {
                (Some(cost), _) => (Some(cost), CostSource::Reported),
                (None, Some(cost)) => (Some(cost), CostSource::Estimated),
                (None, None) => (None, CostSource::Unknown),
            };
        Self {
            final_answer: output
                .final_answer
                .as_deref()
                .map(|answer| notes::tail_chars(answer.trim(), ANSWER_CHARS).to_string()),
            turns: usage.turns,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_creation_tokens: usage.cache_creation_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            total_tokens: usage.total_tokens(),
            context_tokens: output.context_tokens,
            cost_usd,
            cost_source,
        }
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

    fn output(usage: Usage) -> OutputSummary {
        OutputSummary {
            usage,
            final_answer: Some("done".into()),
            ..OutputSummary::default()
        }
    }

    const PRICES: Prices = Prices {
        input_per_mtok: 3.0,
        output_per_mtok: 15.0,
        cache_write_per_mtok: None,
        cache_read_per_mtok: None,
    };

    #[test]
    fn a_reported_cost_wins() {
        let record = UsageRecord::of(
            &output(Usage {
                input_tokens: Some(10),
                cost_usd: Some(0.5),
                ..Usage::default()
            }),
            Some(&PRICES),
        );
        assert_eq!(
            (record.cost_usd, record.cost_source),
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
        let record = UsageRecord::of(&output(usage), Some(&PRICES));
        assert_eq!(record.cost_source, CostSource::Estimated);
        assert!((record.cost_usd.unwrap() - (3.0 + 1.5 + 0.3)).abs() < 1e-9);
        assert_eq!(record.total_tokens, Some(2_100_000));
    }

    #[test]
    fn nothing_known_is_unknown_never_zero() {
        let record = UsageRecord::of(&output(Usage::default()), Some(&PRICES));
        assert_eq!(
            (record.cost_usd, record.cost_source),
            (None, CostSource::Unknown)
        );
        let record = UsageRecord::of(
            &output(Usage {
                output_tokens: Some(5),
                ..Usage::default()
            }),
            None,
        );
        assert_eq!(
            (record.cost_usd, record.cost_source),
            (None, CostSource::Unknown)
        );
        assert_eq!(record.total_tokens, Some(5));
    }
}
