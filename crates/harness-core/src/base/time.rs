//! Time as the harness writes it: UTC, RFC 3339 to the second (`2026-04-24T10:05:12Z`).

use chrono::{DateTime, SecondsFormat, Utc};

/// A point in time; every function that stamps something takes one, so tests can fix the clock.
pub type Timestamp = DateTime<Utc>;

/// Now, truncated to the second so that what is written and what is read back are equal.
pub fn now() -> Timestamp {
    let now = Utc::now();
    DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
}

/// `45s`, `12m 05s`, `3h 07m`, `2d 04h`; `-` for nothing.
pub fn human_duration(seconds: u64) -> String {
    match seconds {
        0 => "-".to_string(),
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m {:02}s", s / 60, s % 60),
        s if s < 86_400 => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
        s => format!("{}d {:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// `2026-04-24T10:05:12Z`.
pub fn format(time: Timestamp) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}
