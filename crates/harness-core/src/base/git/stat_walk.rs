//! What `git status` depends on, read from the file system without starting git: the stat data
//! of every path of the working tree that git could see (those its last status listed as
//! ignored are skipped), of HEAD, the index, the refs and the configuration files. A snapshot
//! taken just before a `git status` and found again unchanged later proves that the status would
//! say the same: the worker then spares a git process per iteration (see `git::look_again`).
//!
//! Why "unchanged" can be trusted: any change to a file sets its ctime to the time of the change,
//! and a ctime cannot be set back (only the mtime can, by `touch -d` or `cp -p`); a file added,
//! removed or renamed shows in its directory's listing, which is compared name by name. The one
//! gap is a file changed within the same tick of the file system's clock as the snapshot read it
//! (racy git): a snapshot in which some file's ctime is that recent proves nothing, and the next
//! look asks git. Where this cannot be made sound, there is no snapshot and git is always asked:
//! a file system whose timestamps are not known to be fine-grained (NFS, FUSE, FAT…), a mount
//! point inside the tree, submodules, a repository found through `GIT_DIR` and the like, and a
//! configuration that includes other files or names other ignore or attribute files.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Environment variables with which git finds its repository, or reads its configuration, in
/// ways this module does not follow.
const GIT_ENVIRONMENT: [&str; 14] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
];

/// Words of a configuration file that make git read files this module does not watch, or see
/// the tree in a way it does not follow (`include`, `includeIf`, `core.excludesFile`,
/// `core.attributesFile`, `core.worktree`, `core.fsmonitor`, sparse checkouts).
const CONFIG_WORDS: [&str; 6] = [
    "include",
    "excludesfile",
    "attributesfile",
    "worktree",
    "fsmonitor",
    "sparse",
];

/// File systems (`statfs` magic numbers) whose timestamps have nanoseconds from the kernel's
/// clock: ext2/3/4, XFS, Btrfs, tmpfs, F2FS, overlayfs, ZFS, bcachefs.
const FINE_GRAINED: [i64; 8] = [
    0xEF53,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0xF2F5_2010,
    0x794C_7630,
    0x2FC1_2FC1,
    0xCA45_1A4E,
];

/// How recent a ctime makes a snapshot racy, on a file system with fine-grained timestamps (the
/// kernel's clock ticks every 1–10 ms and lags the real time by up to a tick) and on one whose
/// files show whole seconds only.
const RACY_FINE: Duration = Duration::from_millis(100);
const RACY_COARSE: Duration = Duration::from_secs(2);

/// Where a working tree's repository is, when it can be told without git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The top of the working tree (where `.git` is).
    pub top: PathBuf,
    /// Files outside the tree whose changes change what git says: HEAD, the index, packed refs,
    /// the repository's and the user's configuration, ignore and attribute files.
    files: Vec<PathBuf>,
    /// Directories of refs (loose or in reftables), walked whole.
    refs: Vec<PathBuf>,
}

impl Layout {
    /// The layout of the working tree around `workdir`, or `None` where a snapshot could not
    /// be sound (see the module's doc).
    pub fn find(workdir: &Path) -> Option<Layout> {
        if GIT_ENVIRONMENT
            .iter()
            .any(|name| std::env::var_os(name).is_some())
        {
            return None;
        }
        let workdir = std::path::absolute(workdir).ok()?;
        let (top, git_dir) = workdir.ancestors().find_map(|dir| {
            let dot_git = dir.join(".git");
            let kind = dot_git.symlink_metadata().ok()?.file_type();
            Some(if kind.is_dir() {
                Some((dir.to_path_buf(), dot_git))
            } else if kind.is_file() {
                linked_git_dir(&dot_git).map(|git_dir| (dir.to_path_buf(), git_dir))
            } else {
                None
            })
        })??;
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(text) => git_dir.join(text.trim()),
            Err(_) => git_dir.clone(),
        };
        if top.join(".gitmodules").symlink_metadata().is_ok()
            || common.join("modules").symlink_metadata().is_ok()
            || !fine_grained(&top)
        {
            return None;
        }
        let files = watched_files(&git_dir, &common);
        if files.iter().any(|file| mentions_config_words(file)) {
            return None;
        }
        // Loose refs, and the reftable backend's tables (git 2.45 on), where a ref moves
        // without touching refs/.
        let mut refs = vec![common.join("refs"), common.join("reftable")];
        if git_dir != common {
            refs.push(git_dir.join("refs"));
        }
        Some(Layout { top, files, refs })
    }
}

/// The git directory a `.git` file points to (`gitdir: <path>`, a linked worktree's).
fn linked_git_dir(dot_git: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.strip_prefix("gitdir:")?.trim();
    Some(dot_git.parent()?.join(target))
}

/// Whether the file system of `path` is one whose timestamps are known to be fine-grained.
fn fine_grained(path: &Path) -> bool {
    file_system_magic(path).is_some_and(|kind| FINE_GRAINED.contains(&kind))
}

/// The `statfs` magic number of the file system `path` is on (`TMPFS_MAGIC` is 0x01021994).
pub fn file_system_magic(path: &Path) -> Option<i64> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer statfs fills.
    if unsafe { libc::statfs(c_path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: filled by the successful call.
    // f_type is not i64 on every platform.
    #[allow(clippy::unnecessary_cast)]
    Some(unsafe { stat.assume_init() }.f_type as i64)
}

/// The files outside the tree whose changes change what `git status` says.
fn watched_files(git_dir: &Path, common: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        git_dir.join("HEAD"),
        git_dir.join("index"),
        git_dir.join("config.worktree"),
        git_dir.join("info/sparse-checkout"),
        common.join("packed-refs"),
        common.join("config"),
        common.join("info/exclude"),
        common.join("info/attributes"),
        PathBuf::from("/etc/gitconfig"),
    ];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|home| home.join(".config")));
    if let Some(home) = &home {
        files.push(home.join(".gitconfig"));
    }
    if let Some(xdg) = xdg {
        for name in ["config", "ignore", "attributes"] {
            files.push(xdg.join("git").join(name));
        }
    }
    files
}

/// Whether `file` is a configuration file that names one of [`CONFIG_WORDS`].
fn mentions_config_words(file: &Path) -> bool {
    let is_config = file.file_name().is_some_and(|name| {
        matches!(
            name.to_str(),
            Some("config" | "gitconfig" | ".gitconfig" | "config.worktree")
        )
    });
    if !is_config {
        return false;
    }
    match std::fs::read(file) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes).to_lowercase();
            CONFIG_WORDS.iter().any(|word| text.contains(word))
        }
        Err(_) => false,
    }
}

/// What a snapshot records of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    /// 0 missing, 1 file, 2 directory, 3 link, 4 anything else; plus 10, not looked into.
    kind: u8,
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stat {
    const MISSING: Stat = Stat {
        kind: 0,
        dev: 0,
        ino: 0,
        size: 0,
        mode: 0,
        mtime: (0, 0),
        ctime: (0, 0),
    };

    fn of(metadata: &std::fs::Metadata) -> Stat {
        let kind = metadata.file_type();
        Stat {
            kind: if kind.is_file() {
                1
            } else if kind.is_dir() {
                2
            } else if kind.is_symlink() {
                3
            } else {
                4
            },
            dev: metadata.dev(),
            ino: metadata.ino(),
            size: metadata.size(),
            mode: metadata.mode(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }

    /// A directory as compared: its listing tells what changed in it, not its own times (which
    /// change when an ignored file comes or goes).
    fn as_directory(self) -> Stat {
        Stat {
            kind: 2,
            dev: self.dev,
            ..Stat::MISSING
        }
    }

    /// A path not looked into (ignored, or a `.git`): only whether it is a directory counts.
    fn kind_only(kind: u8) -> Stat {
        Stat {
            kind: kind + 10,
            ..Stat::MISSING
        }
    }
}

/// The stat data of the files git's answer depends on, as found at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    layout: Layout,
    /// Paths of the tree (relative to its top, as git prints them, without a final `/`) that
    /// the walk skipped: what git listed as ignored.
    skipped: Arc<HashSet<Vec<u8>>>,
    /// Every path the walk saw, in order, with its stat data.
    entries: Vec<(Vec<u8>, Stat)>,
    /// When the walk began.
    started: SystemTime,
    /// Whether it can vouch for what git said just after it (see [`Snapshot::with_ignored`]).
    sound: bool,
}

impl Snapshot {
    /// Walks the tree of `layout` and the files around it now, skipping the paths `skipped`.
    pub fn take(layout: &Layout, skipped: Arc<HashSet<Vec<u8>>>) -> Snapshot {
        let started = SystemTime::now();
        let mut entries = Vec::new();
        for file in &layout.files {
            let stat = file
                .symlink_metadata()
                .map_or(Stat::MISSING, |m| Stat::of(&m));
            entries.push((file.as_os_str().as_bytes().to_vec(), stat));
        }
        for refs in &layout.refs {
            walk(
                refs,
                refs.as_os_str().as_bytes(),
                &HashSet::new(),
                &mut entries,
            );
        }
        walk(&layout.top, b"", &skipped, &mut entries);
        Snapshot {
            layout: layout.clone(),
            skipped,
            entries,
            started,
            sound: false,
        }
    }

    /// Walks again, as this snapshot was taken (the same layout, the same paths skipped).
    pub fn retake(&self) -> Snapshot {
        Snapshot::take(&self.layout, Arc::clone(&self.skipped))
    }

    /// Whether `later`, taken after this one, proves that nothing git sees changed in between.
    pub fn unchanged_in(&self, later: &Snapshot) -> bool {
        self.sound && self.entries == later.entries
    }

    /// The top of the working tree.
    pub fn top(&self) -> &Path {
        &self.layout.top
    }

    /// This snapshot, as the one of a `git status` run just after it which listed `ignored`:
    /// from now on those are skipped too. It vouches for that answer (it is sound) unless it
    /// skipped a path git no longer ignores (an ignore file changed: what it holds was not looked
    /// at), another file system is mounted in the tree, or a file it kept changed too recently
    /// for a later change to show in its ctime (racy).
    pub fn with_ignored(mut self, ignored: HashSet<Vec<u8>>) -> Snapshot {
        let below = |path: &[u8]| {
            path.iter()
                .enumerate()
                .any(|(at, &byte)| byte == b'/' && ignored.contains(&path[..at]))
        };
        let covered = self
            .skipped
            .iter()
            .all(|path| ignored.contains(path) || below(path));
        self.entries.retain(|(path, _)| !below(path));
        for (path, stat) in &mut self.entries {
            if stat.kind < 10 && ignored.contains(path) {
                *stat = Stat::kind_only(if stat.kind == 2 { 2 } else { 1 });
            }
        }
        // A mount inside the tree is what this rules out; the files around it (the user's
        // configuration, /etc/gitconfig, their absolute paths) may be on any file system.
        let top_dev = self.layout.top.symlink_metadata().map(|m| m.dev()).ok();
        let one_device = top_dev.is_some_and(|dev| {
            self.entries.iter().all(|(path, stat)| {
                path.starts_with(b"/") || stat.kind == 0 || stat.kind >= 10 || stat.dev == dev
            })
        });
        self.sound = covered && one_device && !racy(&self.entries, self.started);
        self.skipped = Arc::new(ignored);
        self
    }
}

/// Whether a file of `entries` changed so shortly before `started` (or after it) that a change
/// made in the same tick of the file system's clock would not show in its ctime.
fn racy(entries: &[(Vec<u8>, Stat)], started: SystemTime) -> bool {
    let files = || {
        entries
            .iter()
            .filter(|(_, stat)| matches!(stat.kind, 1 | 3))
    };
    let coarse = files().all(|(_, stat)| stat.ctime.1 == 0 && stat.mtime.1 == 0);
    let margin = if coarse { RACY_COARSE } else { RACY_FINE };
    let Ok(since_epoch) = started.duration_since(UNIX_EPOCH) else {
        return true;
    };
    let limit = since_epoch.saturating_sub(margin);
    let limit = (limit.as_secs() as i64, i64::from(limit.subsec_nanos()));
    files().any(|(_, stat)| stat.ctime >= limit)
}

/// Adds `dir`'s entries to `entries`, their paths after `prefix`, recursively, in name order.
/// A `.git`, and a path `skipped`, is noted with its kind only (git sees a file where it ignored
/// a directory of that name), and not looked into.
fn walk(dir: &Path, prefix: &[u8], skipped: &HashSet<Vec<u8>>, entries: &mut Vec<(Vec<u8>, Stat)>) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let mut listed: Vec<std::fs::DirEntry> = listing.flatten().collect();
    listed.sort_by_key(std::fs::DirEntry::file_name);
    for entry in listed {
        let name = entry.file_name();
        let mut path = prefix.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name.as_bytes());
        if name == OsStr::new(".git") || skipped.contains(&path) {
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            entries.push((path, Stat::kind_only(if is_dir { 2 } else { 1 })));
            continue;
        }
        let stat = entry.metadata().map_or(Stat::MISSING, |m| Stat::of(&m));
        if stat.kind == 2 {
            entries.push((path.clone(), stat.as_directory()));
            walk(&entry.path(), &path, skipped, entries);
        } else {
            entries.push((path, stat));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(ctime: (i64, i64)) -> (Vec<u8>, Stat) {
        (
            b"a.txt".to_vec(),
            Stat {
                kind: 1,
                ctime,
                mtime: ctime,
                ..Stat::MISSING
            },
        )
    }

    #[test]
    fn a_file_changed_in_the_last_tick_makes_a_snapshot_racy() {
        let now = UNIX_EPOCH + Duration::new(1_000, 500_000_000);
        // Long enough before: a later change would show.
        assert!(!racy(&[file((1_000, 300_000_000))], now));
        // Within the margin, or after the walk began: it might not.
        assert!(racy(&[file((1_000, 450_000_000))], now));
        assert!(racy(&[file((1_001, 0))], now));
        // Whole seconds only: the margin is two seconds.
        assert!(racy(&[file((999, 0))], now));
        assert!(!racy(&[file((997, 0))], now));
        // Directories and `.git` entries are compared by listing, not by time.
        let mut dir = file((1_000, 499_000_000));
        dir.1.kind = 2;
        assert!(!racy(&[dir, file((990, 1))], now));
    }

    #[test]
    fn files_around_the_tree_on_another_file_system_leave_a_snapshot_sound() {
        // A project on a tmpfs, the user's ~/.gitconfig on the disk: regression, such a snapshot
        // was never sound, and git was asked every iteration.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.rs"), "x").unwrap();
        let elsewhere = PathBuf::from("/dev/null");
        assert_ne!(
            elsewhere.metadata().unwrap().dev(),
            dir.path().metadata().unwrap().dev()
        );
        let layout = Layout {
            top: dir.path().to_path_buf(),
            files: vec![elsewhere],
            refs: Vec::new(),
        };
        let mut walked = Snapshot::take(&layout, Arc::default());
        walked.started += Duration::from_secs(1);
        assert!(walked.with_ignored(HashSet::new()).sound);
    }

    #[test]
    fn a_path_ignored_no_longer_makes_a_snapshot_unsound() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join("target/debug")).unwrap();
        std::fs::write(top.join("target/debug/a"), "x").unwrap();
        std::fs::write(top.join("main.rs"), "x").unwrap();
        let layout = Layout {
            top: top.to_path_buf(),
            files: Vec::new(),
            refs: Vec::new(),
        };
        let mut walked = Snapshot::take(&layout, Arc::default());
        // As if walked a while after the files were written: not racy.
        walked.started += Duration::from_secs(1);
        let paths = |s: &Snapshot| {
            s.entries
                .iter()
                .map(|(p, _)| String::from_utf8(p.clone()).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            paths(&walked),
            ["main.rs", "target", "target/debug", "target/debug/a"]
        );
        let ignored: HashSet<Vec<u8>> = [b"target".to_vec()].into();
        let narrowed = walked.with_ignored(ignored.clone());
        assert!(narrowed.sound);
        assert_eq!(paths(&narrowed), ["main.rs", "target"]);
        assert_eq!(narrowed.entries, narrowed.retake().entries);
        // Only target/debug is ignored now: what else target holds was not looked at.
        let mut unignored = Snapshot::take(&layout, Arc::new(ignored));
        unignored.started += Duration::from_secs(1);
        let unignored = unignored.with_ignored([b"target/debug".to_vec()].into());
        assert!(!unignored.sound);
    }
}
