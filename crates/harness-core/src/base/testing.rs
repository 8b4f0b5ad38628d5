//! Helpers shared by the unit tests of several modules.

use crate::base::time::Timestamp;
use crate::spec::features::FeatureId;

/// The instant `seconds` after a fixed origin, so a test reads as a timeline.
pub fn at(seconds: i64) -> Timestamp {
    chrono::DateTime::from_timestamp(1_777_000_000 + seconds, 0).expect("a time in range")
}

/// A feature id the test knows to be valid.
pub fn id(text: &str) -> FeatureId {
    FeatureId::parse(text).expect("a valid feature id")
}
