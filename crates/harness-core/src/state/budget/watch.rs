//! The mission budget's look on Linux: inotify watches on `runs/`, each `runs/<FEATURE>/`,
//! `plans/`, `curations/` and their run directories tell which records of spending changed, so
//! a worker's check before each iteration costs the same at 1,000 features as at 10. The events
//! only decide what to look at; what is read is read as the full scan reads it. Whenever the
//! watches cannot be trusted (the queue overflowed, a watched directory went or was replaced,
//! a watch could not be added) the caller falls back to the full scan, which arms them again.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::base::fs;
use crate::base::inotify::Inotify;
use crate::spec::features::FeatureId;
use crate::spec::layout::{StateDir, RUN_STATE_FILE};

use super::{key_of, run_state_key, SpentMemo};

/// A directory of records, one subdirectory each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Tree {
    /// `runs/<FEATURE>/state.json`.
    Runs,
    /// `plans/<RUN_ID>/result.json`.
    Plans,
    /// `curations/<RUN_ID>/result.json`.
    Curations,
}

impl Tree {
    const ALL: [Tree; 3] = [Tree::Runs, Tree::Plans, Tree::Curations];

    fn dir(self, state: &StateDir) -> PathBuf {
        match self {
            Tree::Runs => state.runs_dir(),
            Tree::Plans => state.plans_dir(),
            Tree::Curations => state.curations_dir(),
        }
    }

    /// The record's file name in each subdirectory.
    fn file(self) -> &'static str {
        match self {
            Tree::Runs => RUN_STATE_FILE,
            Tree::Plans | Tree::Curations => "result.json",
        }
    }
}

/// What a top directory reports: an entry that came, went or was renamed.
const TOP_EVENTS: u32 = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_DELETE | libc::IN_MOVED_FROM;

/// What a record's directory reports about the record: made, renamed in (an atomic write),
/// written in place (a hand edit), removed, renamed away, its attributes changed.
const CHILD_EVENTS: u32 = TOP_EVENTS | libc::IN_CLOSE_WRITE | libc::IN_MODIFY | libc::IN_ATTRIB;

/// A watch on a directory that must not be a link, told when it goes away itself.
const WATCH: u32 =
    libc::IN_ONLYDIR | libc::IN_DONT_FOLLOW | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF;

/// What makes the watches untrustworthy: events were lost, or a watched directory went (its
/// parent's watch names it too, but a full scan is simpler than repairing the map).
const BROKEN: u32 = libc::IN_Q_OVERFLOW
    | libc::IN_IGNORED
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_UNMOUNT;

/// How many calls go by with plain scans after arming failed (no inotify instance or watch
/// left): re-arming at every call would cost more than the scan it saves.
const PAUSE_AFTER_FAILURE: u32 = 100;

/// The pause of a memo that never arms.
const NEVER: u32 = u32::MAX;

/// The watches, when armed.
#[derive(Debug, Default)]
pub(super) struct Watcher {
    armed: Option<Armed>,
    /// Calls left before arming is tried again.
    pause: u32,
}

/// An inotify instance watching one state directory's records.
#[derive(Debug)]
pub(super) struct Armed {
    inotify: Inotify,
    root: PathBuf,
    /// The caller's own run state, never looked at (the caller says what it spent).
    own: Option<PathBuf>,
    /// Each top directory's device and inode when it was armed (`None`: none was there).
    tops: Vec<(Tree, Option<(u64, u64)>)>,
    /// What each watch is on: a top directory, or a record's directory in one.
    watches: HashMap<i32, (Tree, Option<OsString>)>,
    /// Whether a watch could not be added: then the watches are not trusted.
    failed: bool,
}

/// The device and inode of the directory `name` in `dir` (not a link), if there is one.
fn dir_identity(dir: &fs::Dir, name: &OsStr) -> Option<(u64, u64)> {
    let stat = dir.stat(name).ok()??;
    (fs::Kind::of_mode(stat.st_mode) == fs::Kind::Dir).then(|| fs::identity_of(&stat))
}

/// The identity of the top directory `tree` now, looked up from the state directory's path.
fn top_identity(state: &StateDir, tree: Tree) -> Option<Option<(u64, u64)>> {
    let root = fs::Dir::open_dir(state.root()).ok()?;
    let dir = tree.dir(state);
    Some(dir_identity(&root, dir.file_name()?))
}

impl Watcher {
    /// Never arms: for a memo used once.
    pub(super) fn never(&mut self) {
        self.pause = NEVER;
    }

    /// A fresh inotify instance to arm during a full scan (the old one, if any, is closed);
    /// `None` when there is none to be had, or arming failed lately.
    pub(super) fn arm(&mut self, state: &StateDir, own: Option<&Path>) -> Option<Armed> {
        self.armed = None;
        if self.pause == NEVER {
            return None;
        }
        if self.pause > 0 {
            self.pause -= 1;
            return None;
        }
        match Inotify::new() {
            Ok(inotify) => Some(Armed {
                inotify,
                root: state.root().to_path_buf(),
                own: own.map(Path::to_path_buf),
                tops: Vec::new(),
                watches: HashMap::new(),
                failed: false,
            }),
            Err(_) => {
                // Out of instances (fs.inotify.max_user_instances), say: the plain scan.
                self.pause = PAUSE_AFTER_FAILURE;
                None
            }
        }
    }

    /// Keeps the watches the full scan armed, if every one could be added.
    pub(super) fn armed(&mut self, armed: Option<Armed>) {
        match armed {
            Some(armed) if !armed.failed && armed.tops.len() == Tree::ALL.len() => {
                self.armed = Some(armed);
            }
            Some(_) => self.pause = PAUSE_AFTER_FAILURE,
            None => {}
        }
    }
}

impl Armed {
    /// Watches the top directory `tree`, before it is listed. The watch is added by path: the
    /// directory's identity just before and just after tells that the path named it all along
    /// (one swapped in and out meanwhile has to leave, which its watch reports).
    pub(super) fn top(&mut self, tree: Tree, state: &StateDir) {
        let Some(before) = top_identity(state, tree) else {
            self.failed = true;
            return;
        };
        if before.is_some() {
            match self.inotify.add_watch(&tree.dir(state), TOP_EVENTS | WATCH) {
                Ok(wd) => {
                    self.watches.insert(wd, (tree, None));
                }
                Err(_) => self.failed = true,
            }
        }
        if top_identity(state, tree) != Some(before) {
            self.failed = true;
        }
        self.tops.push((tree, before));
    }

    /// Watches the record's directory `name` in `tree`, before its record is looked at.
    pub(super) fn child(&mut self, tree: Tree, state: &StateDir, name: &OsStr) {
        if self.failed {
            return;
        }
        match self
            .inotify
            .add_watch(&tree.dir(state).join(name), CHILD_EVENTS | WATCH)
        {
            Ok(wd) => {
                self.watches.insert(wd, (tree, Some(name.to_os_string())));
            }
            // Gone, or no longer a directory, since the listing: its top directory's watch has
            // the event, and the look that follows sees what is there.
            Err(error) if matches!(error.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {}
            // Out of watches (ENOSPC), say: not to be trusted.
            Err(_) => self.failed = true,
        }
    }
}

/// Brings `memo` up to date from the events queued since the last call, looking again only at
/// the records they name; `false` when the watches cannot be trusted and a full scan is due.
pub(super) fn changes(memo: &mut SpentMemo, state: &StateDir, own: Option<&Path>) -> bool {
    let Some(armed) = &mut memo.watch.armed else {
        return false;
    };
    let same_place = armed.root == state.root() && armed.own.as_deref() == own;
    // A top directory replaced (or the state directory's path now naming another) reports
    // nothing to the watch on the old one: its identity is looked up again at every call.
    if !same_place {
        return false;
    }
    let Ok(root) = fs::Dir::open_dir(state.root()) else {
        return false;
    };
    let replaced = armed.tops.iter().any(|(tree, identity)| {
        let dir = tree.dir(state);
        dir.file_name().map(|name| dir_identity(&root, name)) != Some(*identity)
    });
    if replaced {
        return false;
    }
    let mut named: Vec<(Tree, OsString, bool)> = Vec::new();
    let mut broken = false;
    let drained = armed.inotify.drain(|event| {
        if event.mask & BROKEN != 0 {
            broken = true;
            return;
        }
        match armed.watches.get(&event.wd) {
            Some((tree, None)) if !event.name.is_empty() && event.mask & TOP_EVENTS != 0 => {
                let came = event.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0;
                named.push((*tree, event.name.to_os_string(), came));
            }
            Some((tree, Some(dir))) if event.name == tree.file() => {
                named.push((*tree, dir.clone(), false));
            }
            Some(_) => {}
            // A watch this map does not know of cannot have been added by it.
            None => broken = true,
        }
    });
    if drained.is_err() || broken {
        return false;
    }
    let mut looked = HashSet::new();
    let mut tops: HashMap<Tree, Option<fs::Dir>> = HashMap::new();
    for (tree, name, came) in named {
        let feature = match tree {
            Tree::Runs => match FeatureId::parse(&name.to_string_lossy()) {
                Ok(feature) => Some(feature),
                Err(_) => continue,
            },
            _ => None,
        };
        let path = tree.dir(state).join(&name).join(tree.file());
        if own == Some(path.as_path()) {
            continue;
        }
        let top = tops
            .entry(tree)
            .or_insert_with(|| fs::Dir::open_dir(&tree.dir(state)).ok());
        let is_dir = top
            .as_ref()
            .is_some_and(|top| dir_identity(top, &name).is_some());
        if came && is_dir {
            // A new directory: watched at once, then looked at.
            let armed = memo.watch.armed.as_mut().expect("armed above");
            armed.child(tree, state, &name);
            if armed.failed {
                return false;
            }
        }
        if !looked.insert((tree, name)) {
            continue;
        }
        memo.looked_at += 1;
        // As the full scan: a record counts in a directory (not a link) of its own; it is read
        // again even when its key is the same (a file written in place within one tick of the
        // clock keeps its size and modification time).
        let key = match (is_dir, &feature, &top) {
            (false, _, _) => None,
            (true, Some(feature), Some(runs)) => run_state_key(runs, feature),
            (true, _, _) => key_of(&path),
        };
        memo.reread(path, feature.as_ref(), key);
    }
    true
}
