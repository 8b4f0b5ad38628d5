//! Budgets: per feature and per mission, at most so many tokens, dollars (where the cost is
//! known) and seconds of agent time. Checked before each invocation, and live during one (the
//! tokens the stream reports, the time): running out stops with exit 2, naming the budget.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::fs;
use crate::spec::config::Budgets;
use crate::spec::features::FeatureId;
use crate::spec::layout::{StateDir, RUN_STATE_FILE};
use crate::state::mission_runs;
use crate::state::run_state::RunState;
pub use crate::state::run_state::Spent;

/// What the whole mission spent: every feature's run state under `runs/`, and every run on the
/// whole mission (`plans/`, `curations/`; see [`crate::state::mission_runs`]).
pub fn mission_spent(state: &StateDir) -> Spent {
    mission_spent_with(&mut SpentMemo::once(), state, None)
}

/// What each record of spending spent (a run state, a mission run's result.json), by the file's
/// identity as last read, for a worker that checks the mission budget before every iteration: a
/// file whose inode, size and modification time are unchanged is not parsed again (every write
/// replaces the file, so its inode changes). On Linux it also watches the directories with
/// inotify, so that a call where nothing changed looks at no file at all.
#[derive(Debug, Default)]
pub struct SpentMemo {
    files: HashMap<PathBuf, (FileKey, Spent)>,
    /// The sum of `files`, until one changes.
    sum: Option<Spent>,
    /// Files stat-ed and directories listed by the last call.
    looked_at: usize,
    #[cfg(target_os = "linux")]
    watch: watch::Watcher,
}

impl SpentMemo {
    /// A memo for one call: nothing is watched (arming costs a system call per directory).
    fn once() -> SpentMemo {
        #[allow(unused_mut)]
        let mut memo = SpentMemo::default();
        #[cfg(target_os = "linux")]
        memo.watch.never();
        memo
    }

    /// How many files the last call stat-ed and directories it listed (what it cost).
    pub fn looked_at(&self) -> usize {
        self.looked_at
    }

    /// What the records other than the caller's own spent together.
    fn sum(&mut self) -> Spent {
        *self.sum.get_or_insert_with(|| {
            self.files
                .values()
                .fold(Spent::default(), |sum, (_, spent)| sum.plus(*spent))
        })
    }

    /// Reads the record at `path` again (`key`: its file's, `None` when it is not a regular
    /// file in a directory of its own).
    fn reread(&mut self, path: PathBuf, feature: Option<&FeatureId>, key: Option<FileKey>) {
        self.sum = None;
        match key.and_then(|key| Some((key, spent_in(&path, feature)?))) {
            Some(record) => self.files.insert(path, record),
            None => self.files.remove(&path),
        };
    }
}

#[cfg(target_os = "linux")]
mod watch;

/// What tells one version of a file from another without reading it.
type FileKey = (u64, u64, u64, i64, i64);

// st_mtime and st_mtime_nsec are not i64 on every platform.
#[allow(clippy::unnecessary_cast)]
fn file_key(stat: &libc::stat) -> FileKey {
    let (device, inode) = fs::identity_of(stat);
    (
        device,
        inode,
        stat.st_size as u64,
        stat.st_mtime as i64,
        stat.st_mtime_nsec as i64,
    )
}

/// The key of the file `name` in `dir`, when it is a regular file (never through a link).
fn key_in(dir: &fs::Dir, name: &str) -> Option<FileKey> {
    regular_file_key(dir.stat(name.as_ref()).ok()??)
}

/// The key of a status, when it is a regular file's.
fn regular_file_key(stat: libc::stat) -> Option<FileKey> {
    (fs::Kind::of_mode(stat.st_mode) == fs::Kind::File).then(|| file_key(&stat))
}

/// The key of the file at `path`, when it is a regular file (never through a link).
fn key_of(path: &Path) -> Option<FileKey> {
    let (dir, name) = fs::Dir::parent_of(path).ok()?;
    key_in(&dir, &name.to_string_lossy())
}

/// The key of `runs/<feature>/state.json`, in one system call: the key only decides whether to
/// read again, and what is read is read through the walk that refuses links.
fn run_state_key(runs: &fs::Dir, feature: &FeatureId) -> Option<FileKey> {
    let stat = runs.stat_in(feature.as_str().as_ref(), RUN_STATE_FILE.as_ref());
    regular_file_key(stat.ok()??)
}

/// [`mission_spent`], parsing only the files that changed since `memo` last read them, and
/// counting the run state at `own.0` as `own.1`: the caller's own, which it may hold ahead of
/// the disk (a worker loop writes an attempt's end together with the next attempt's start).
pub fn mission_spent_with(
    memo: &mut SpentMemo,
    state: &StateDir,
    own: Option<(&Path, Spent)>,
) -> Spent {
    let own_spent = own.map(|(_, spent)| spent).unwrap_or_default();
    let own = own.map(|(path, _)| path);
    memo.looked_at = 0;
    // Only what the events name is looked at again, while the watches can be trusted.
    #[cfg(target_os = "linux")]
    if watch::changes(memo, state, own) {
        return own_spent.plus(memo.sum());
    }
    scan(memo, state, own);
    own_spent.plus(memo.sum())
}

/// Looks at every record of spending (and, on Linux, watches their directories from now on).
fn scan(memo: &mut SpentMemo, state: &StateDir, own: Option<&Path>) {
    #[cfg(target_os = "linux")]
    let mut arming = memo.watch.arm(state, own);
    let mut seen = HashMap::with_capacity(memo.files.len());
    // One handle on runs/ for every feature's run state, and one system call to see whether
    // each changed (a mission of 1,000 features, every iteration when nothing watches).
    #[cfg(target_os = "linux")]
    if let Some(arming) = &mut arming {
        arming.top(watch::Tree::Runs, state);
    }
    let runs_dir = fs::Dir::open_dir(&state.runs_dir()).ok();
    memo.looked_at += 1;
    let run_states = runs_dir
        .iter()
        .flat_map(|runs| runs.entries().unwrap_or_default())
        .filter(|entry| entry.kind == fs::Kind::Dir)
        .filter_map(|entry| FeatureId::parse(&entry.name.to_string_lossy()).ok())
        .map(|feature| (state.run_state(&feature), feature))
        .filter(|(path, _)| own.is_none_or(|own| own != path))
        .map(|(path, feature)| {
            #[cfg(target_os = "linux")]
            if let Some(arming) = &mut arming {
                // Watched before it is looked at: a change after the look is an event.
                arming.child(watch::Tree::Runs, state, feature.as_str().as_ref());
            }
            let key = runs_dir
                .as_ref()
                .and_then(|runs| run_state_key(runs, &feature));
            (path, Some(feature), key)
        })
        .collect::<Vec<_>>();
    #[cfg(target_os = "linux")]
    if let Some(arming) = &mut arming {
        arming.top(watch::Tree::Plans, state);
        arming.top(watch::Tree::Curations, state);
    }
    memo.looked_at += 2;
    let runs = mission_runs::result_files(state)
        .into_iter()
        .map(|path| {
            #[cfg(target_os = "linux")]
            if let (Some(arming), Some(run)) = (&mut arming, path.parent()) {
                if let (Some(top), Some(name)) = (run.parent(), run.file_name()) {
                    let tree = if top == state.plans_dir() {
                        watch::Tree::Plans
                    } else {
                        watch::Tree::Curations
                    };
                    arming.child(tree, state, name);
                }
            }
            let key = key_of(&path);
            (path, None, key)
        })
        .collect::<Vec<_>>();
    for (path, feature, key) in run_states.into_iter().chain(runs) {
        memo.looked_at += 1;
        let Some(key) = key else {
            continue;
        };
        let spent = match memo.files.remove(&path) {
            Some((known, spent)) if known == key => spent,
            _ => match spent_in(&path, feature.as_ref()) {
                Some(spent) => spent,
                None => continue,
            },
        };
        seen.insert(path, (key, spent));
    }
    memo.files = seen;
    memo.sum = None;
    #[cfg(target_os = "linux")]
    memo.watch.armed(arming);
}

/// What the record at `path` says was spent: the run state of `feature`, or a mission run's
/// result.json; `None` when it does not read.
fn spent_in(path: &Path, feature: Option<&FeatureId>) -> Option<Spent> {
    match feature {
        // Every attempt is read, but none is held: what they spent is added up as they go.
        Some(feature) => RunState::load_recent(path, feature)
            .ok()
            .flatten()
            .map(|run| run.spent()),
        None => mission_runs::read(path).map(|run| run.spent()),
    }
}

/// What the mission budget leaves for an invocation on the whole mission (a plan, a replan, the
/// curator's agent), or the budget used up; a feature's own budget is its worker's business.
pub fn mission_left(budgets: &Budgets, state: &StateDir) -> Result<Remaining, Exceeded> {
    let Some(mission) = &budgets.mission else {
        return Ok(Remaining::default());
    };
    let only = Budgets {
        feature: None,
        mission: Some(mission.clone()),
    };
    remaining(&only, Spent::default(), mission_spent(state))
}

/// A budget that ran out.
#[derive(Debug, Clone, PartialEq)]
pub struct Exceeded {
    /// `feature` or `mission`.
    pub scope: &'static str,
    /// `max_tokens`, `max_cost_usd` or `max_wall_secs`.
    pub limit: &'static str,
    /// The limit, in words.
    pub allowed: String,
    /// What was spent, in words.
    pub spent: String,
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} budget budgets.{}.{} ({}) is used up: {} spent",
            self.scope, self.scope, self.limit, self.allowed, self.spent
        )
    }
}

/// What the budgets leave for the next invocation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Remaining {
    /// Tokens it may use.
    pub tokens: Option<u64>,
    /// Time it may run.
    pub wall: Option<Duration>,
    /// USD it may spend (checked live when the agent reports its cost as it goes).
    pub cost_usd: Option<f64>,
}

/// Checks what was spent against the budgets: the first one used up, or what is left.
pub fn remaining(budgets: &Budgets, feature: Spent, mission: Spent) -> Result<Remaining, Exceeded> {
    let mut left = Remaining::default();
    for (scope, budget, spent) in [
        ("feature", &budgets.feature, feature),
        ("mission", &budgets.mission, mission),
    ] {
        let Some(budget) = budget else { continue };
        // What is not known counts as nothing spent yet.
        let (tokens, cost_usd) = (spent.tokens.unwrap_or(0), spent.cost_usd.unwrap_or(0.0));
        if let Some(max) = budget.max_tokens {
            if tokens >= max {
                return Err(Exceeded {
                    scope,
                    limit: "max_tokens",
                    allowed: format!("{max} tokens"),
                    spent: format!("{tokens} tokens"),
                });
            }
            left.tokens = Some(left.tokens.map_or(max - tokens, |t| t.min(max - tokens)));
        }
        if let Some(max) = budget.max_cost_usd {
            if cost_usd >= max {
                return Err(Exceeded {
                    scope,
                    limit: "max_cost_usd",
                    allowed: format!("${max:.2}"),
                    spent: format!("${cost_usd:.2}"),
                });
            }
            let cost = max - cost_usd;
            left.cost_usd = Some(left.cost_usd.map_or(cost, |c| c.min(cost)));
        }
        if let Some(max) = budget.max_wall_secs {
            if spent.wall_secs >= max {
                return Err(Exceeded {
                    scope,
                    limit: "max_wall_secs",
                    allowed: format!("{max} s"),
                    spent: format!("{} s", spent.wall_secs),
                });
            }
            let wall = Duration::from_secs(max - spent.wall_secs);
            left.wall = Some(left.wall.map_or(wall, |w| w.min(wall)));
        }
    }
    Ok(left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::config::Budget;

    fn budgets(feature: Budget, mission: Budget) -> Budgets {
        Budgets {
            feature: Some(feature),
            mission: Some(mission),
        }
    }

    #[test]
    fn the_tightest_budget_is_what_is_left() {
        let b = budgets(
            Budget {
                max_tokens: Some(1000),
                max_wall_secs: Some(600),
                ..Budget::default()
            },
            Budget {
                max_tokens: Some(5000),
                max_wall_secs: Some(100),
                ..Budget::default()
            },
        );
        let feature = Spent {
            tokens: Some(400),
            cost_usd: None,
            wall_secs: 10,
        };
        let mission = Spent {
            tokens: Some(4800),
            cost_usd: None,
            wall_secs: 50,
        };
        let left = remaining(&b, feature, mission).unwrap();
        assert_eq!(left.tokens, Some(200));
        assert_eq!(left.wall, Some(Duration::from_secs(50)));
    }

    #[test]
    fn the_mission_spends_its_features_attempts_and_its_runs_on_the_whole_mission() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::in_workdir(dir.path());
        let feature = crate::base::testing::id("F-1");
        let mut run = RunState::new(feature.clone(), 10, "P", crate::base::testing::at(0));
        run.begin_iteration("r1", crate::base::testing::at(0));
        let attempt = run.attempt_mut("r1").unwrap();
        attempt.tokens = Some(1000);
        attempt.ended_at = Some(crate::base::testing::at(30));
        run.save(&state.run_state(&feature)).unwrap();
        let plan = state.plans_dir().join("1-planner-mission");
        std::fs::create_dir_all(&plan).unwrap();
        std::fs::write(
            plan.join("result.json"),
            r#"{"run_id": "1-planner-mission", "role": "planner",
                "started_at": "2026-04-24T10:00:00Z", "ended_at": "2026-04-24T10:00:20Z",
                "usage": {"total_tokens": 500, "cost_usd": 0.25, "cost_source": "reported"}}"#,
        )
        .unwrap();
        // A curation still running has no result.json yet: it counts once it ends.
        std::fs::create_dir_all(state.curations_dir().join("2-curator-mission")).unwrap();
        let spent = mission_spent(&state);
        assert_eq!(
            spent,
            Spent {
                tokens: Some(1500),
                cost_usd: Some(0.25),
                wall_secs: 50,
            }
        );
    }

    /// What the memo saves is only parsing: a run state replaced since is read again, and a
    /// feature's directory that is a link is never read through.
    #[test]
    fn the_memo_sees_every_change_and_never_reads_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::in_workdir(dir.path());
        let save = |name: &str, tokens: u64| {
            let feature = crate::base::testing::id(name);
            let mut run = RunState::new(feature.clone(), 10, "P", crate::base::testing::at(0));
            run.begin_iteration("r1", crate::base::testing::at(0));
            run.attempt_mut("r1").unwrap().tokens = Some(tokens);
            run.save(&state.run_state(&feature)).unwrap();
        };
        save("F-1", 100);
        save("F-2", 10);
        let mut memo = SpentMemo::default();
        let tokens = |memo: &mut SpentMemo| mission_spent_with(memo, &state, None).tokens;
        assert_eq!(tokens(&mut memo), Some(110));
        save("F-1", 300);
        assert_eq!(tokens(&mut memo), Some(310));
        // F-3 is a link to F-1's directory: its run state is not counted (nor read).
        std::os::unix::fs::symlink(state.runs_dir().join("F-1"), state.runs_dir().join("F-3"))
            .unwrap();
        assert_eq!(tokens(&mut memo), Some(310));
        assert_eq!(tokens(&mut SpentMemo::default()), Some(310));
    }

    /// Saves `name`'s run state (an atomic rename) with one attempt of `tokens`.
    fn save(state: &StateDir, name: &str, tokens: u64) {
        let feature = crate::base::testing::id(name);
        let mut run = RunState::new(feature.clone(), 10, "P", crate::base::testing::at(0));
        run.begin_iteration("r1", crate::base::testing::at(0));
        run.attempt_mut("r1").unwrap().tokens = Some(tokens);
        run.save(&state.run_state(&feature)).unwrap();
    }

    /// A state directory with `count` features of 10 tokens each, and the worker's own F-1.
    #[cfg(target_os = "linux")]
    fn mission(count: usize) -> (tempfile::TempDir, StateDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::in_workdir(dir.path());
        for n in 2..count + 2 {
            save(&state, &format!("F-{n}"), 10);
        }
        let own = state.run_state(&crate::base::testing::id("F-1"));
        (dir, state, own)
    }

    /// The tokens the mission spent besides the worker's own (none), and what the call looked at.
    #[cfg(target_os = "linux")]
    fn check(memo: &mut SpentMemo, state: &StateDir, own: &Path) -> (Option<u64>, usize) {
        let spent = mission_spent_with(memo, state, Some((own, Spent::default())));
        (spent.tokens, memo.looked_at())
    }

    /// A call where nothing changed looks at nothing, at 10 features as at 500.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_look_where_nothing_changed_does_not_grow_with_the_features() {
        for count in [10, 500] {
            let (_dir, state, own) = mission(count);
            let mut memo = SpentMemo::default();
            let (tokens, first) = check(&mut memo, &state, &own);
            assert_eq!(tokens, Some(10 * count as u64));
            assert!(first > count, "the first call scans: {first}");
            for _ in 0..3 {
                assert_eq!(
                    check(&mut memo, &state, &own),
                    (tokens, 0),
                    "{count} features"
                );
            }
        }
    }

    /// Another feature's run state replaced (the harness's atomic rename), written in place (a
    /// hand edit), removed, or a new feature's: seen at the next call, which looks at it alone.
    #[cfg(target_os = "linux")]
    #[test]
    fn every_change_is_seen_at_the_next_call_looking_at_it_alone() {
        let (_dir, state, own) = mission(20);
        let mut memo = SpentMemo::default();
        assert_eq!(check(&mut memo, &state, &own).0, Some(200));
        // The worker's own run state is never looked at.
        save(&state, "F-1", 5000);
        assert_eq!(check(&mut memo, &state, &own), (Some(200), 0));
        save(&state, "F-2", 110);
        assert_eq!(check(&mut memo, &state, &own), (Some(300), 1));
        // In place, the same size: the same inode, and maybe the same modification time.
        let f3 = state.run_state(&crate::base::testing::id("F-3"));
        let text = std::fs::read_to_string(&f3).unwrap();
        assert_eq!(text.matches("10").count(), 2, "{text}");
        let edited = text.replace("\"tokens\": 10", "\"tokens\": 70");
        assert_ne!(edited, text, "{text}");
        let mut file = std::fs::OpenOptions::new().write(true).open(&f3).unwrap();
        std::io::Write::write_all(&mut file, edited.as_bytes()).unwrap();
        drop(file);
        assert_eq!(check(&mut memo, &state, &own), (Some(360), 1));
        std::fs::remove_file(state.run_state(&crate::base::testing::id("F-4"))).unwrap();
        assert_eq!(check(&mut memo, &state, &own), (Some(350), 1));
        save(&state, "F-99", 1000);
        assert_eq!(check(&mut memo, &state, &own), (Some(1350), 1));
        // Changed again in its new directory, which is watched from the first event on.
        save(&state, "F-99", 2000);
        assert_eq!(check(&mut memo, &state, &own), (Some(2350), 1));
        // A mission run's result.json, in a new plans/ (a full scan) then in a new run.
        let plan = |name: &str, tokens: u64| {
            let dir = state.plans_dir().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            crate::base::atomic::write_atomic(
                &dir.join("result.json"),
                format!(
                    r#"{{"run_id": "{name}", "role": "planner",
                    "started_at": "2026-04-24T10:00:00Z", "ended_at": "2026-04-24T10:00:00Z",
                    "tokens": {tokens}}}"#
                )
                .as_bytes(),
            )
            .unwrap();
        };
        plan("1-planner-mission", 5);
        assert_eq!(check(&mut memo, &state, &own).0, Some(2355));
        plan("2-planner-mission", 7);
        assert_eq!(check(&mut memo, &state, &own), (Some(2362), 1));
        assert_eq!(check(&mut memo, &state, &own), (Some(2362), 0));
    }

    /// Events lost (the queue overflowed) or a watched directory replaced: a full scan, with the
    /// totals right, and watched again after it.
    #[cfg(target_os = "linux")]
    #[test]
    fn lost_events_or_a_replaced_directory_fall_back_to_a_full_scan() {
        let (dir, state, own) = mission(20);
        let mut memo = SpentMemo::default();
        assert_eq!(check(&mut memo, &state, &own).0, Some(200));
        let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Attribute changes that alternate between two names are not merged: the queue fills.
        let feature_dir = state.feature_runs(&crate::base::testing::id("F-5"));
        let files = ["a", "b"].map(|name| std::fs::File::create(feature_dir.join(name)).unwrap());
        for n in 0..=queue {
            let at = std::time::UNIX_EPOCH + Duration::from_secs(n as u64);
            files[n % 2].set_modified(at).unwrap();
        }
        save(&state, "F-6", 60);
        let (tokens, looked_at) = check(&mut memo, &state, &own);
        assert_eq!(tokens, Some(250));
        assert!(looked_at > 20, "a full scan: {looked_at}");
        assert_eq!(check(&mut memo, &state, &own), (Some(250), 0));
        // runs/ moved away and another put in its place: nothing tells the old one's watch.
        std::fs::rename(state.runs_dir(), dir.path().join("old-runs")).unwrap();
        std::fs::create_dir_all(state.runs_dir()).unwrap();
        save(&state, "F-7", 1);
        assert_eq!(check(&mut memo, &state, &own).0, Some(1));
        assert_eq!(check(&mut memo, &state, &own), (Some(1), 0));
        save(&state, "F-7", 2);
        assert_eq!(check(&mut memo, &state, &own), (Some(2), 1));
    }

    /// A link planted as a feature's directory or as its run state, while watched: not counted,
    /// nor read through.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_link_planted_while_watched_is_never_followed() {
        let (dir, state, own) = mission(3);
        let mut memo = SpentMemo::default();
        assert_eq!(check(&mut memo, &state, &own).0, Some(30));
        // runs/F-8 → F-2's directory.
        std::os::unix::fs::symlink(state.runs_dir().join("F-2"), state.runs_dir().join("F-8"))
            .unwrap();
        let (tokens, looked_at) = check(&mut memo, &state, &own);
        assert_eq!((tokens, looked_at), (Some(30), 1));
        // runs/F-9/state.json → a run state outside.
        save(&state, "F-10", 500);
        assert_eq!(check(&mut memo, &state, &own), (Some(530), 1));
        std::fs::rename(state.runs_dir().join("F-10"), dir.path().join("outside")).unwrap();
        std::fs::create_dir(state.runs_dir().join("F-9")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("outside/state.json"),
            state.run_state(&crate::base::testing::id("F-9")),
        )
        .unwrap();
        assert_eq!(check(&mut memo, &state, &own).0, Some(30));
        // A feature's directory swapped for a link after it was watched.
        let f3 = state.feature_runs(&crate::base::testing::id("F-3"));
        std::fs::rename(&f3, dir.path().join("f3")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("f3"), &f3).unwrap();
        assert_eq!(check(&mut memo, &state, &own).0, Some(20));
        save_outside(&dir.path().join("f3/state.json"));
        assert_eq!(check(&mut memo, &state, &own), (Some(20), 0));
        assert_eq!(check(&mut SpentMemo::default(), &state, &own).0, Some(20));
    }

    /// Rewrites the run state at `path`, outside the state directory.
    #[cfg(target_os = "linux")]
    fn save_outside(path: &Path) {
        let text = std::fs::read_to_string(path).unwrap();
        std::fs::write(path, text.replace("\"tokens\": 10", "\"tokens\": 90")).unwrap();
    }

    #[test]
    fn a_used_up_budget_is_named() {
        let b = Budgets {
            feature: None,
            mission: Some(Budget {
                max_cost_usd: Some(5.0),
                ..Budget::default()
            }),
        };
        let spent = Spent {
            tokens: None,
            cost_usd: Some(5.5),
            wall_secs: 0,
        };
        let error = remaining(&b, Spent::default(), spent).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the mission budget budgets.mission.max_cost_usd ($5.00) is used up: $5.50 spent"
        );
    }
}
