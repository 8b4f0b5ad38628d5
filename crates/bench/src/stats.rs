//! Medians, a deterministic random source, and the formatting of figures.

use std::time::Duration;

/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    }
}

/// The median of durations, in seconds.
pub fn median_secs(values: &[Duration]) -> f64 {
    median(&values.iter().map(Duration::as_secs_f64).collect::<Vec<_>>())
}

/// The smallest and largest of `values`, for the spread of repeated runs.
pub fn range(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// SplitMix64: a small, fast, seeded generator, so that generated data is the same every run.
#[derive(Debug, Clone)]
pub struct Random(u64);

impl Random {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    /// A number in `0..bound`, small ones far more often (like words in text).
    pub fn skewed(&mut self, bound: usize) -> usize {
        let x = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((x * x * x) * bound as f64) as usize
    }
}

/// Milliseconds with a sensible precision.
pub fn ms(value: f64) -> String {
    let ms = value * 1000.0;
    if ms.abs() >= 100.0 {
        format!("{ms:.0}")
    } else if ms.abs() >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// Seconds with a sensible precision.
pub fn secs(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A byte count in KiB/MiB.
pub fn bytes(count: u64) -> String {
    if count >= 10 << 20 {
        format!("{:.0} MiB", count as f64 / (1 << 20) as f64)
    } else if count >= 1 << 20 {
        format!("{:.1} MiB", count as f64 / (1 << 20) as f64)
    } else if count >= 1 << 10 {
        format!("{:.0} KiB", count as f64 / (1 << 10) as f64)
    } else {
        format!("{count} B")
    }
}

/// A count with thousands separators: `100,000`.
pub fn count(value: usize) -> String {
    harness_core::base::text::thousands(value as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn counts_have_separators() {
        assert_eq!(count(1_000_000), "1,000,000");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
    }

    #[test]
    fn the_generator_is_seeded() {
        let mut a = Random::new(7);
        let mut b = Random::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        assert!(a.below(10) < 10);
        assert!(a.skewed(10) < 10);
    }
}
