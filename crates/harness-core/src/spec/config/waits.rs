//! `rate_limit:` and `service_errors:` in config.yaml: how long the worker waits out what the
//! service, not the agent's work, ended an attempt with — a rate or usage limit, a transient
//! service error — and how many times in a row, before the run stops (resumable). The waits
//! themselves are the worker's business (`roles::worker`).

use serde::{Deserialize, Serialize};

/// `rate_limit:`: a rate or usage limit is waited out until the time the agent says it resets
/// (at most `max_wait_secs`), else `wait_secs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Seconds to wait when the agent does not say when the limit resets.
    #[serde(default = "default_rate_limit_wait")]
    pub wait_secs: u64,
    /// Waits in a row in one run before it stops (resumable by running it again).
    #[serde(default = "default_rate_limit_waits")]
    pub max_waits: u32,
    /// The longest one wait, even until a reset time the agent named.
    #[serde(default = "default_rate_limit_max_wait")]
    pub max_wait_secs: u64,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self {
            wait_secs: default_rate_limit_wait(),
            max_waits: default_rate_limit_waits(),
            max_wait_secs: default_rate_limit_max_wait(),
        }
    }
}

impl RateLimit {
    /// A wait may not be longer than the longest wait.
    pub fn check(&self) -> Result<(), String> {
        check_waits("rate_limit", self.wait_secs, self.max_wait_secs)
    }
}

fn default_rate_limit_wait() -> u64 {
    300
}

fn default_rate_limit_waits() -> u32 {
    12
}

/// Six hours: a subscription's five-hour window resets within one wait.
fn default_rate_limit_max_wait() -> u64 {
    6 * 3600
}

/// `service_errors:`: a transient service error (overloaded, a 5xx, a refused or reset
/// connection) is waited out with back-off: `wait_secs`, doubled with every wait in a row, at
/// most `max_wait_secs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceErrors {
    /// The first wait, in seconds.
    #[serde(default = "default_service_wait")]
    pub wait_secs: u64,
    /// Waits in a row in one run before it stops (resumable by running it again).
    #[serde(default = "default_service_waits")]
    pub max_waits: u32,
    /// The longest one wait.
    #[serde(default = "default_service_max_wait")]
    pub max_wait_secs: u64,
}

impl Default for ServiceErrors {
    fn default() -> Self {
        Self {
            wait_secs: default_service_wait(),
            max_waits: default_service_waits(),
            max_wait_secs: default_service_max_wait(),
        }
    }
}

impl ServiceErrors {
    /// A wait may not be longer than the longest wait.
    pub fn check(&self) -> Result<(), String> {
        check_waits("service_errors", self.wait_secs, self.max_wait_secs)
    }
}

fn default_service_wait() -> u64 {
    30
}

fn default_service_waits() -> u32 {
    8
}

fn default_service_max_wait() -> u64 {
    900
}

fn check_waits(section: &str, wait_secs: u64, max_wait_secs: u64) -> Result<(), String> {
    if wait_secs > max_wait_secs {
        return Err(format!(
            "{section}.wait_secs ({wait_secs}) is longer than {section}.max_wait_secs ({max_wait_secs})"
        ));
    }
    Ok(())
}
