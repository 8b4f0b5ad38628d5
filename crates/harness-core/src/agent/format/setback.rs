//! Setbacks: what the service, not the agent's work, made of an attempt — a rate or usage limit,
//! or a transient service error (overloaded, a server error, a lost connection) — as the agent's
//! CLI reports it, and when a limit says it resets. The worker waits a setback out instead of
//! counting the attempt as an iteration.
//!
//! The texts come from the CLIs themselves: Claude Code's `Claude AI usage limit reached|<unix
//! time>`, `You've hit your session limit · resets 5:10pm (Europe/Paris)`, `Weekly limit reached
//! · resets 10am (Asia/Seoul)`, `API Error: 529 {"type":"error","error":{"type":
//! "overloaded_error",…}}`, `API Error: Repeated 529 Overloaded errors`, `API Error: Connection
//! error.`; Codex's `You've hit your usage limit. … try again at 3:05 PM.`, `exceeded retry
//! limit, last status: 429 Too Many Requests`, `stream disconnected before completion: …`;
//! Google's `RESOURCE_EXHAUSTED`.

use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate, TimeZone, Utc};

use crate::base::time::Timestamp;
use crate::state::run_state::Outcome;

/// What kind of setback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetbackKind {
    /// A rate or usage limit (HTTP 429, a subscription's usage window).
    Limit,
    /// A transient service error: overloaded (529), another 5xx, a refused, reset or lost
    /// connection.
    Outage,
}

impl SetbackKind {
    /// How an attempt it held up is recorded.
    pub fn outcome(self) -> Outcome {
        match self {
            SetbackKind::Limit => Outcome::RateLimited,
            SetbackKind::Outage => Outcome::ServiceError,
        }
    }

    /// In words: `a rate or usage limit`, `a service error`.
    pub fn describe(self) -> &'static str {
        match self {
            SetbackKind::Limit => "a rate or usage limit",
            SetbackKind::Outage => "a service error",
        }
    }
}

/// A setback, with what the agent's CLI said of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setback {
    pub kind: SetbackKind,
    pub text: String,
}

/// The texts that mean a rate or usage limit in an agent's words: Claude's usage windows (`usage
/// limit reached`, `Weekly limit reached`, `You've hit your session limit`), HTTP 429 as the CLIs
/// print it, Codex's plan limit (`You've hit your usage limit`), Google's `RESOURCE_EXHAUSTED` and
/// quota errors. `hit your … limit` is checked apart (see [`says_rate_limited`]).
const LIMIT_SIGNS: [&str; 12] = [
    "usage limit reached",
    "weekly limit reached",
    "session limit reached",
    "5-hour limit reached",
    "rate limit",
    "rate_limit",
    "429 too many requests",
    "status 429",
    "status: 429",
    "(429)",
    "resource_exhausted",
    "quota exceeded",
];

/// The texts that mean a transient service error, in a CLI's own error message (never in the
/// assistant's words, where a server being built may well refuse a connection).
const OUTAGE_SIGNS: [&str; 14] = [
    "overloaded",
    "internal server error",
    "bad gateway",
    "service unavailable",
    "gateway timeout",
    "connection refused",
    "connection reset",
    "econnrefused",
    "econnreset",
    "connection error",
    "stream disconnected",
    "socket hang up",
    "request timed out",
    "fetch failed",
];

/// Whether `text` says the agent hit a rate or usage limit.
pub fn says_rate_limited(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    LIMIT_SIGNS.iter().any(|sign| lower.contains(sign))
        || lower
            .find("hit your")
            .is_some_and(|at| lower[at..].contains("limit"))
}

/// What an error the agent's CLI reported means: a limit, a transient service error, or neither.
/// `status`: the HTTP status the CLI gives apart from the message, if it does.
pub fn classify(message: &str, status: Option<u64>) -> Option<Setback> {
    let lower = message.to_ascii_lowercase();
    let status = status.or_else(|| status_in(&lower));
    let kind = if status == Some(429) || says_rate_limited(message) {
        SetbackKind::Limit
    } else if status.is_some_and(|status| (500..600).contains(&status))
        || OUTAGE_SIGNS.iter().any(|sign| lower.contains(sign))
    {
        SetbackKind::Outage
    } else {
        return None;
    };
    Some(Setback {
        kind,
        text: message.trim().to_string(),
    })
}

/// An HTTP status a CLI wrote into its message: `API Error: 500 {…}`, `API Error (529 …)`,
/// `last status: 502 Bad Gateway`, `unexpected status 503`.
fn status_in(lower: &str) -> Option<u64> {
    ["api error", "status", "error code"]
        .iter()
        .flat_map(|label| lower.match_indices(label))
        .find_map(|(at, label)| {
            let rest = lower[at + label.len()..].trim_start_matches([' ', ':', '(']);
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (digits.len() == 3).then(|| digits.parse().ok()).flatten()
        })
}

/// When the limit `text` speaks of resets, if it says: a unix time after `|` (Claude's `usage
/// limit reached|1750000000`), or a time after `resets`, `reset at` or `try again at` (`3pm`,
/// `5:10pm`, `3:05 PM`, `Jun 7, 4pm`, `Sep 15 at 7pm`, `Sep 26th, 2026 3:05 PM`) — the next such
/// time after `now`. The CLIs write it in their local time zone, which is the harness's (they run
/// in its environment): a time is read in `now`'s zone, unless the text names UTC or a fixed
/// `Etc/GMT±N` offset.
pub fn reset_time<Tz: TimeZone>(text: &str, now: &DateTime<Tz>) -> Option<Timestamp> {
    if let Some((_, tail)) = text.rsplit_once('|') {
        if let Ok(seconds) = tail.trim().parse::<i64>() {
            return DateTime::from_timestamp(seconds, 0);
        }
    }
    let lower = text.to_ascii_lowercase();
    let start = ["resets at ", "reset at ", "resets ", "try again at "]
        .iter()
        .find_map(|key| lower.find(key).map(|at| at + key.len()))?;
    let when = When::parse(&text[start..])?;
    let now_utc = now.with_timezone(&Utc);
    match when.zone.as_deref().and_then(fixed_zone) {
        Some(zone) => when.next_after(&zone, now_utc),
        None => when.next_after(&now.timezone(), now_utc),
    }
}

/// A fixed zone a CLI may name: UTC, GMT, or `Etc/GMT±N` (whose sign is POSIX's: `Etc/GMT+5` is
/// five hours behind UTC).
fn fixed_zone(name: &str) -> Option<FixedOffset> {
    let name = name.trim();
    if ["utc", "gmt", "etc/utc", "etc/gmt", "z"].contains(&name.to_ascii_lowercase().as_str()) {
        return FixedOffset::east_opt(0);
    }
    let hours: i32 = name.strip_prefix("Etc/GMT")?.parse().ok()?;
    FixedOffset::west_opt(hours * 3600)
}

/// A reset time as a CLI writes it, not yet placed in time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct When {
    /// Month and day, when given.
    date: Option<(u32, u32)>,
    year: Option<i32>,
    hour: u32,
    minute: u32,
    /// The zone named in parentheses, if any.
    zone: Option<String>,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

impl When {
    /// `[Month Day[th][,] [Year][,] [at]] H[:MM][ ]am|pm [(Zone)]`, or a 24-hour `H:MM`.
    fn parse(text: &str) -> Option<When> {
        let end = text.find(['·', '\n', '|']).unwrap_or(text.len());
        let text = &text[..end];
        let zone = text
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(zone, _)| zone.trim().to_string());
        let words = text.split_once('(').map_or(text, |(before, _)| before);
        let mut tokens = words
            .split(|c: char| c.is_whitespace() || c == ',')
            .map(|token| token.trim_end_matches('.'))
            .filter(|token| !token.is_empty())
            .peekable();
        let month = tokens.peek().and_then(|token| {
            let lower = token.to_ascii_lowercase();
            MONTHS
                .iter()
                .position(|month| lower.starts_with(month))
                .map(|index| index as u32 + 1)
        });
        let mut date = None;
        let mut year = None;
        if let Some(month) = month {
            tokens.next();
            let day = tokens.next()?.trim_end_matches(char::is_alphabetic);
            date = Some((month, day.parse().ok()?));
            if let Some(given) = tokens.peek().and_then(|t| t.parse::<i32>().ok()) {
                year = (given > 1000).then_some(given);
                tokens.next();
            }
        }
        if tokens.peek().is_some_and(|t| t.eq_ignore_ascii_case("at")) {
            tokens.next();
        }
        let time = tokens.next()?.to_ascii_lowercase();
        let (clock, mut meridiem) = match time.find(['a', 'p']) {
            Some(at) => (&time[..at], Some(time[at..].to_string())),
            None => (time.as_str(), None),
        };
        if meridiem.is_none() {
            meridiem = tokens
                .peek()
                .map(|t| t.to_ascii_lowercase())
                .filter(|t| t == "am" || t == "pm");
        }
        let (hour, minute) = match clock.split_once(':') {
            Some((hour, minute)) => (hour.parse::<u32>().ok()?, minute.parse::<u32>().ok()?),
            None => (clock.parse::<u32>().ok()?, 0),
        };
        let hour = match meridiem.as_deref() {
            Some("am") if (1..=12).contains(&hour) => hour % 12,
            Some("pm") if (1..=12).contains(&hour) => hour % 12 + 12,
            None if hour < 24 => hour,
            _ => return None,
        };
        (minute < 60).then_some(When {
            date,
            year,
            hour,
            minute,
            zone,
        })
    }

    /// The first such time in `zone` after `now` (a date without a year: this year's, or next
    /// year's when this year's is more than a day gone).
    fn next_after<Tz: TimeZone>(&self, zone: &Tz, now: DateTime<Utc>) -> Option<Timestamp> {
        let local_now = now.with_timezone(zone).naive_local();
        let at = |date: NaiveDate| {
            let naive = date.and_hms_opt(self.hour, self.minute, 0)?;
            zone.from_local_datetime(&naive)
                .earliest()
                .map(|time| time.with_timezone(&Utc))
        };
        match self.date {
            Some((month, day)) => {
                let year = self.year.unwrap_or(local_now.year());
                let time = at(NaiveDate::from_ymd_opt(year, month, day)?)?;
                if self.year.is_none() && time < now - Duration::days(1) {
                    return at(NaiveDate::from_ymd_opt(year + 1, month, day)?);
                }
                Some(time)
            }
            None => {
                let today = at(local_now.date())?;
                if today > now {
                    Some(today)
                } else {
                    at(local_now.date().succ_opt()?)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(text: &str) -> Option<SetbackKind> {
        classify(text, None).map(|setback| setback.kind)
    }

    #[test]
    fn the_clis_limits_are_limits() {
        for text in [
            "Claude AI usage limit reached|1750000000",
            "Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).",
            "You've hit your limit · resets 11pm (America/Anchorage)",
            "You've hit your session limit · resets 5:10pm (Europe/Paris)",
            "You've hit your weekly limit · resets Jun 7, 4pm (Europe/Rome)",
            "Weekly limit reached · resets 10am (Asia/Seoul) · /upgrade to Max",
            "You've hit your usage limit. Upgrade to Pro or try again at 3:05 PM.",
            "exceeded retry limit, last status: 429 Too Many Requests, request id: x",
            r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}}"#,
            "API Error: Request rejected (429) · this request would exceed your rate limit",
            "RESOURCE_EXHAUSTED: Quota exceeded for quota metric",
        ] {
            assert_eq!(limit(text), Some(SetbackKind::Limit), "{text}");
        }
        assert_eq!(
            classify("Too many requests", Some(429)).unwrap().kind,
            SetbackKind::Limit
        );
    }

    #[test]
    fn overloads_server_errors_and_lost_connections_are_outages() {
        for text in [
            "API Error: Repeated 529 Overloaded errors",
            r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary",
            r#"API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
            "API Error: Connection error.",
            "API Error: ECONNRESET",
            "exceeded retry limit, last status: 502 Bad Gateway, request id: x",
            "unexpected status 503 Service Unavailable: upstream connect error",
            "stream disconnected before completion: stream closed before response.completed",
            "[API Error: got status: 503 Service Unavailable.]",
        ] {
            assert_eq!(limit(text), Some(SetbackKind::Outage), "{text}");
        }
        assert_eq!(
            classify("Bad things", Some(503)).unwrap().kind,
            SetbackKind::Outage
        );
    }

    #[test]
    fn other_errors_are_neither() {
        for text in [
            "API Error: 401 Invalid authentication credentials",
            "API Error: 400 prompt is too long",
            "Context limit reached · /compact or /clear to continue",
            "Approaching usage limit · resets at 12pm",
            "error: request id 5000 not found",
            "",
        ] {
            assert_eq!(limit(text), None, "{text}");
        }
    }

    /// 2026-11-23 10:00 in a zone `offset` hours east of UTC.
    fn at_ten(offset: i32) -> DateTime<FixedOffset> {
        FixedOffset::east_opt(offset * 3600)
            .unwrap()
            .with_ymd_and_hms(2026, 11, 23, 10, 0, 0)
            .unwrap()
    }

    fn utc(text: &str) -> Timestamp {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn a_reset_time_is_the_next_such_time_in_the_local_zone() {
        let paris = at_ten(1);
        let reset = |text: &str| reset_time(text, &paris);
        assert_eq!(
            reset("You've hit your session limit · resets 3pm (Europe/Paris)"),
            Some(utc("2026-11-23T14:00:00Z"))
        );
        assert_eq!(
            reset("You've hit your limit · resets 5:10pm"),
            Some(utc("2026-11-23T16:10:00Z"))
        );
        // Earlier than now: tomorrow.
        assert_eq!(
            reset("You've hit your limit · resets 9:30am (Europe/Paris)"),
            Some(utc("2026-11-24T08:30:00Z"))
        );
        assert_eq!(
            reset("You've hit your limit · resets 12am"),
            Some(utc("2026-11-23T23:00:00Z"))
        );
        assert_eq!(
            reset("You've hit your usage limit. Upgrade to Pro or try again at 3:05 PM."),
            Some(utc("2026-11-23T14:05:00Z"))
        );
        assert_eq!(
            reset("You've hit your usage limit. Try again at Dec 2nd, 2026 3:05 PM."),
            Some(utc("2026-12-02T14:05:00Z"))
        );
        assert_eq!(
            reset("You've hit your weekly limit · resets Sep 15 at 7pm"),
            Some(utc("2027-09-15T18:00:00Z"))
        );
        assert_eq!(
            reset("You've hit your weekly limit · resets Nov 25, 4pm (Europe/Rome)"),
            Some(utc("2026-11-25T15:00:00Z"))
        );
    }

    #[test]
    fn a_named_fixed_zone_or_a_unix_time_is_taken_as_it_says() {
        let paris = at_ten(1);
        assert_eq!(
            reset_time(
                "You've hit your weekly limit · resets Nov 30, 2am (UTC)",
                &paris
            ),
            Some(utc("2026-11-30T02:00:00Z"))
        );
        assert_eq!(
            reset_time(
                "Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).",
                &paris
            ),
            Some(utc("2026-11-23T18:00:00Z"))
        );
        assert_eq!(
            reset_time("Claude AI usage limit reached|1750000000", &paris),
            DateTime::from_timestamp(1_750_000_000, 0)
        );
    }

    #[test]
    fn no_time_or_a_garbled_one_is_none() {
        let now = at_ten(0);
        for text in [
            "API Error: Repeated 529 Overloaded errors",
            "You've hit your usage limit. Try again later.",
            "You've hit your limit · resets soon",
            "You've hit your limit · resets 13pm",
            "You've hit your limit · resets 25:00",
            "You've hit your limit · resets Feb 31, 4pm",
        ] {
            assert_eq!(reset_time(text, &now), None, "{text}");
        }
    }
}
