//! A feature's attempts. Once an attempt has ended, its record is appended to
//! `runs/<FEATURE>/attempts.jsonl` (one JSON record a line) and never rewritten, so that writing
//! an iteration does not cost more as the feature's history grows; state.json holds only the
//! attempts the log does not hold durably yet: the one begun, and those appended since the log
//! was last flushed. A run state written by an older version holds every attempt in state.json:
//! it loads as such, and its first write moves them to the log.
//!
//! A kill mid-append leaves at most a torn last line, which reading drops (see `base::append`);
//! the attempt is still in state.json then. An attempt is in both after a kill between an append
//! and the write of state.json that follows it: the log's record (the later one) counts.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Attempt, Outcome};
use crate::base::append;
use crate::base::error::InputError;
use crate::spec::config::io_message;

/// The log's name, beside state.json.
pub const LOG_NAME: &str = "attempts.jsonl";

/// How many attempts appended since the log's last flush state.json may carry instead: the log
/// is flushed once every so many attempts, not at every one.
const UNSYNCED_MAX: usize = 8;

/// The fewest attempts a run state holds in memory: those state.json may have to carry.
const HELD_MIN: usize = 2 * UNSYNCED_MAX;

/// The log of the run state at `state_path`.
pub fn log_beside(state_path: &Path) -> PathBuf {
    state_path.with_file_name(LOG_NAME)
}

/// What has been spent: by a feature's attempts, or by runs on the whole mission.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// Tokens of the invocations that reported them; `None` when none did.
    pub tokens: Option<u64>,
    /// USD of the invocations whose cost is known; `None` when none is (never a made-up 0).
    pub cost_usd: Option<f64>,
    /// Seconds of agent time.
    pub wall_secs: u64,
}

impl Spent {
    /// What `attempts` spent (an attempt still started counts no time: its end is unknown).
    pub fn of<'a>(attempts: impl IntoIterator<Item = &'a Attempt>) -> Self {
        attempts
            .into_iter()
            .fold(Spent::default(), |spent, attempt| {
                spent.plus(Spent {
                    tokens: attempt.tokens,
                    cost_usd: attempt.cost_usd,
                    wall_secs: attempt
                        .ended_at
                        .map(|end| (end - attempt.started_at).num_seconds().max(0) as u64)
                        .unwrap_or(0),
                })
            })
    }

    /// Both together (a sum is known when either part is).
    pub fn plus(self, other: Spent) -> Spent {
        fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            }
        }
        Spent {
            tokens: sum(self.tokens, other.tokens),
            cost_usd: sum(self.cost_usd, other.cost_usd),
            wall_secs: self.wall_secs + other.wall_secs,
        }
    }
}

/// The attempts a run state holds: oldest first, the newest of the log (all of them, or at most
/// a bound) and then those only state.json holds.
#[derive(Debug, Clone)]
pub struct Attempts {
    all: Vec<Attempt>,
    /// `all[..logged]` are in the log.
    logged: usize,
    /// `all[..synced]` are in the log and flushed; state.json carries `all[synced..]`.
    synced: usize,
    /// The log's older attempts, not held: how many, and what they spent.
    earlier: (u64, Spent),
    /// The most attempts held once written.
    keep: usize,
}

impl Default for Attempts {
    fn default() -> Self {
        Self::pending(Vec::new())
    }
}

impl PartialEq for Attempts {
    fn eq(&self, other: &Self) -> bool {
        self.all == other.all && self.earlier.0 == other.earlier.0
    }
}

impl Serialize for Attempts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.all[self.synced..].serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Attempts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(Self::pending)
    }
}

impl Attempts {
    /// Attempts none of which is in the log yet (state.json's, or a new state's).
    fn pending(all: Vec<Attempt>) -> Self {
        Self {
            all,
            logged: 0,
            synced: 0,
            earlier: (0, Spent::default()),
            keep: usize::MAX,
        }
    }

    /// The attempts held, oldest first.
    pub fn held(&self) -> &[Attempt] {
        &self.all
    }

    /// The attempts not in the log yet, which may still change (the log's never do).
    pub fn unwritten_mut(&mut self) -> &mut [Attempt] {
        &mut self.all[self.logged..]
    }

    /// Records a new attempt, the newest.
    pub fn push(&mut self, attempt: Attempt) {
        self.all.push(attempt);
    }

    /// How many attempts the feature has had, held or not.
    pub fn count(&self) -> u64 {
        self.earlier.0 + self.all.len() as u64
    }

    /// What every attempt spent, held or not.
    pub fn spent(&self) -> Spent {
        self.earlier.1.plus(Spent::of(&self.all))
    }

    /// From now on, hold at most `keep` attempts once they are written, and an eighth more
    /// between two trims (never fewer than the few state.json may have to carry).
    pub fn hold_at_most(&mut self, keep: usize) {
        self.keep = keep.max(HELD_MIN);
    }

    /// Joins the log at `path` to the attempts state.json held (see the module's doc), holding
    /// at most `keep` of the log's. A line that is not an attempt (a hand edit) is an error that
    /// names it; a torn last line is no line.
    pub fn read_log(&mut self, path: &Path, keep: usize) -> Result<(), InputError> {
        self.hold_at_most(keep);
        let pending = std::mem::take(&mut self.all);
        let pending_ids: HashSet<String> = pending.iter().map(|a| a.run_id.clone()).collect();
        let mut held = VecDeque::new();
        let mut twins = HashSet::new();
        let mut first_twin = None;
        let mut count = 0;
        let io_error = |error: io::Error| InputError::in_file(path, io_message(&error));
        append::read_lines(path, io_error, |number, line| {
            if line.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            let attempt: Attempt = serde_json::from_slice(line).map_err(|error| {
                InputError::in_file(path, format!("unreadable attempt record: {error}"))
                    .at_line(Some(number))
                    .with_hint(
                        "fix the line by hand (each line is one attempt as JSON), or delete it",
                    )
            })?;
            if pending_ids.contains(&attempt.run_id) {
                first_twin.get_or_insert(count);
                twins.insert(attempt.run_id.clone());
            }
            count += 1;
            held.push_back(attempt);
            if held.len() > self.keep {
                let old = held.pop_front().expect("not empty");
                self.earlier = (self.earlier.0 + 1, self.earlier.1.plus(Spent::of([&old])));
            }
            Ok(())
        })?;
        let dropped = self.earlier.0 as usize;
        self.logged = held.len();
        // Attempts state.json carried that are in the log too may not be flushed there: it goes
        // on carrying them until the log is.
        self.synced = first_twin.map_or(self.logged, |twin: usize| twin.saturating_sub(dropped));
        self.all = held
            .into_iter()
            .chain(pending.into_iter().filter(|a| !twins.contains(&a.run_id)))
            .collect();
        Ok(())
    }

    /// Appends the attempts that ended since the last write to the log at `path`, flushing it
    /// once state.json would carry too many of its records otherwise (or when it is new). What
    /// state.json must carry then is `all[synced..]`, as it serialises.
    pub fn write_log(&mut self, path: &Path) -> io::Result<()> {
        let ended = self.all[self.logged..]
            .iter()
            .take_while(|a| a.outcome != Outcome::Started)
            .count();
        let mut appended = None;
        if ended > 0 {
            let mut lines = Vec::new();
            for attempt in &self.all[self.logged..self.logged + ended] {
                serde_json::to_writer(&mut lines, attempt).map_err(io::Error::other)?;
                lines.push(b'\n');
            }
            // A torn last line (a kill mid-append) is cut off: its attempt is still in state.json.
            appended = Some(append::append(path, &lines, b"\n", |_| false)?);
            self.logged += ended;
        }
        let new_log = appended.as_ref().is_some_and(append::Appended::was_empty);
        if self.logged > self.synced && (new_log || self.logged - self.synced > UNSYNCED_MAX) {
            match &appended {
                Some(appended) => appended.sync(path)?,
                None => append::sync(path)?,
            }
            self.synced = self.logged;
        }
        Ok(())
    }

    /// Lets go of the oldest attempts past the bound, once flushed to the log: once an eighth of
    /// the bound more is held, so that each save does not move every held attempt down by one.
    pub fn trim(&mut self) {
        if self.all.len() <= self.keep.saturating_add(self.keep / 8) {
            return;
        }
        let over = self.all.len().saturating_sub(self.keep).min(self.synced);
        if over == 0 {
            return;
        }
        let spent = Spent::of(&self.all[..over]);
        self.earlier = (self.earlier.0 + over as u64, self.earlier.1.plus(spent));
        self.all.drain(..over);
        self.logged -= over;
        self.synced -= over;
    }
}
