//! Time as the harness writes it: UTC, RFC 3339 to the second (`2026-04-24T10:05:12Z`).

use chrono::{DateTime, SecondsFormat, Utc};

/// A point in time; every function that stamps something takes one, so tests can fix the clock.
pub type Timestamp = DateTime<Utc>;

/// Now, truncated to the second so that what is written and what is read back are equal.
pub fn now() -> Timestamp {
    let now = Utc::now();
    DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now)
}

/// `2026-04-24T10:05:12Z`.
pub fn format(time: Timestamp) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}
