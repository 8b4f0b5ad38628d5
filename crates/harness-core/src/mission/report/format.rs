//! The report's small formatting: HTML escaping, URL encoding, numbers, money, durations and
//! clock times, each as the page shows it.

use std::fmt::Write as _;

use crate::base::time::Timestamp;
use crate::mission::status;
use crate::state::usage::CostSource;

/// `text` with everything but unreserved URL characters percent-encoded.
pub(super) fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(byte as char);
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// `text` safe inside HTML text and quoted attributes: `& < > " '` become entities and control
/// characters (but newlines and tabs) become U+FFFD, so nothing from a file or an agent can
/// open a tag.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            '\n' | '\t' => escaped.push(c),
            c if c.is_control() => escaped.push('\u{fffd}'),
            c => escaped.push(c),
        }
    }
    escaped
}

/// [`escape`] for an attribute, newlines written `&#10;` so that an attribute stays on one line.
pub(super) fn attribute(text: &str) -> String {
    escape(text).replace('\n', "&#10;")
}

/// Seconds from `start` to `end`; an attempt still running counts up to `now`; one without an
/// end that is not running has no known duration.
pub(super) fn duration(
    start: Timestamp,
    end: Option<Timestamp>,
    running: bool,
    now: Timestamp,
) -> Option<u64> {
    let end = match end {
        Some(end) => end,
        None if running => now,
        None => return None,
    };
    Some(u64::try_from((end - start).num_seconds()).unwrap_or(0))
}

pub(super) use crate::base::text::thousands;

/// `9,876`, `392.4k`, `1.74M`: short enough for a card; the exact number goes in a tooltip.
pub(super) fn compact(number: u64) -> String {
    match number {
        n if n < 10_000 => thousands(n),
        n if n < 1_000_000 => format!("{:.1}k", n as f64 / 1e3).replace(".0k", "k"),
        n => format!("{:.2}M", n as f64 / 1e6),
    }
}

/// `$0.25`, `<$0.01`, or `unknown`.
pub(super) fn money(cost: Option<f64>) -> String {
    match cost {
        None => "unknown".to_string(),
        Some(cost) if cost > 0.0 && cost < 0.005 => "<$0.01".to_string(),
        Some(cost) => format!("${cost:.2}"),
    }
}

/// A cost and where it comes from: `$0.25 (estimated)`.
pub(super) fn cost_text(cost: Option<f64>, source: Option<CostSource>) -> String {
    match (cost, source) {
        (Some(_), Some(CostSource::Estimated)) => format!("{} (estimated)", money(cost)),
        (Some(_), Some(CostSource::Reported)) => format!("{} (reported)", money(cost)),
        _ => money(cost),
    }
}

/// `12m 05s`, `under 1s`, or `unknown`.
pub(super) fn seconds_text(seconds: Option<u64>) -> String {
    match seconds {
        None => "duration unknown".to_string(),
        Some(0) => "under 1s".to_string(),
        Some(seconds) => status::human_duration(seconds),
    }
}

/// `2026-04-24 10:05:12 UTC`.
pub(super) fn clock(time: Timestamp) -> String {
    time.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// `10:05:12` on the day of `now`, else `2026-04-23 10:05`.
pub(super) fn short_clock(time: Timestamp, now: Timestamp) -> String {
    if time.date_naive() == now.date_naive() {
        time.format("%H:%M:%S").to_string()
    } else {
        time.format("%Y-%m-%d %H:%M").to_string()
    }
}

/// A percentage with one decimal, as CSS wants it.
pub(super) fn percent(part: f64, whole: f64) -> String {
    if whole <= 0.0 {
        return "0%".to_string();
    }
    format!("{:.1}%", (part / whole * 100.0).clamp(0.0, 100.0))
}

/// `3 of 7 agent runs have a known cost`.
pub(super) fn known_of(known: usize, all: usize, what: &str) -> String {
    match (known, all) {
        (_, 0) => "no attempt yet".to_string(),
        (known, all) if known == all => format!("all {all} agent runs {what}"),
        (known, all) => format!("{known} of {all} agent runs {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markup_and_control_characters() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("a\u{1b}[31mb\nc"), "a\u{fffd}[31mb\nc");
        assert_eq!(attribute("one\ntwo \"q\""), "one&#10;two &quot;q&quot;");
    }

    #[test]
    fn numbers_read_at_a_glance() {
        assert_eq!(compact(9_999), "9,999");
        assert_eq!(compact(633_000), "633k");
        assert_eq!(compact(392_400), "392.4k");
        assert_eq!(compact(1_735_100), "1.74M");
        assert_eq!(money(None), "unknown");
        assert_eq!(money(Some(0.001)), "<$0.01");
        assert_eq!(money(Some(0.0)), "$0.00");
        assert_eq!(money(Some(6.7349)), "$6.73");
    }
}
