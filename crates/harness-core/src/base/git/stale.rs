//! Lock files git left behind. git takes `index.lock`, `HEAD.lock`, `refs/heads/<b>.lock`… with
//! an exclusive create, keeps the file open while it writes, and renames or deletes it when done;
//! a git process killed meanwhile leaves the file, and every later git command that needs the
//! lock fails with `File exists` until someone deletes it. The harness deletes such a file only
//! when it is sure no live git process holds it.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the lock files are not visible as open files of processes (no `/proc`), a lock older
/// than this is taken for stale: no git command of the harness holds one for so long.
pub const STALE_WITHOUT_PROC: Duration = Duration::from_secs(600);

/// The live processes as far as git locks are concerned: which files they hold open and where
/// git processes work.
#[derive(Debug, Default)]
pub struct Processes {
    /// Every file some process holds open (their canonical paths).
    open_files: Vec<PathBuf>,
    /// The working directories of processes that run git.
    git_cwds: Vec<PathBuf>,
    /// `/proc` could be read: the answers are known, not guessed.
    seen: bool,
}

impl Processes {
    /// Looks at every process this user may look at (`/proc`).
    pub fn scan() -> Self {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Self::default();
        };
        let mut processes = Self {
            seen: true,
            ..Self::default()
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let dir = entry.path();
            if let Ok(fds) = std::fs::read_dir(dir.join("fd")) {
                processes.open_files.extend(
                    fds.flatten()
                        .filter_map(|fd| std::fs::read_link(fd.path()).ok()),
                );
            }
            let runs_git = std::fs::read(dir.join("cmdline")).is_ok_and(|cmdline| {
                let program = cmdline.split(|&b| b == 0).next().unwrap_or_default();
                let base = program.rsplit(|&b| b == b'/').next().unwrap_or_default();
                base.starts_with(b"git")
            });
            if runs_git {
                if let Ok(cwd) = std::fs::read_link(dir.join("cwd")) {
                    processes.git_cwds.push(cwd);
                }
            }
        }
        processes
    }

    /// Whether the lock file `lock`, guarding the working tree `tree` (leaving out the other
    /// working trees nested in it, `nested`), may be held by a live git process: a process holds
    /// it open, or a git process works in that tree (git keeps `index.lock` closed while hooks
    /// run). Without `/proc`, a lock younger than [`STALE_WITHOUT_PROC`] may be held.
    pub fn may_hold(&self, lock: &Path, tree: &Path, nested: &[PathBuf]) -> bool {
        (self.seen && self.open_files.contains(&canonical(lock)))
            || self.may_work_in(tree, nested, lock)
    }

    /// Whether a live git process may be at work in the working tree `tree` (leaving out the
    /// working trees nested in it, `nested`). Without `/proc`, it may be while `mark`, a file
    /// git wrote there, is younger than [`STALE_WITHOUT_PROC`].
    pub fn may_work_in(&self, tree: &Path, nested: &[PathBuf], mark: &Path) -> bool {
        if !self.seen {
            let age = std::fs::metadata(mark)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok());
            return age.is_none_or(|age| age < STALE_WITHOUT_PROC);
        }
        let tree = canonical(tree);
        let nested: Vec<PathBuf> = nested.iter().map(|dir| canonical(dir)).collect();
        self.git_cwds
            .iter()
            .any(|cwd| cwd.starts_with(&tree) && !nested.iter().any(|dir| cwd.starts_with(dir)))
    }
}

/// `path` with its symbolic links resolved as far as it exists (the rest kept as it is).
pub fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => canonical(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// Deletes those of the lock files `locks` that exist and that no live git process may hold
/// (see [`Processes::may_hold`]); returns the ones deleted.
pub fn remove_stale(locks: &[PathBuf], tree: &Path, nested: &[PathBuf]) -> Vec<PathBuf> {
    let present: Vec<&PathBuf> = locks.iter().filter(|lock| lock.is_file()).collect();
    if present.is_empty() {
        return Vec::new();
    }
    let processes = Processes::scan();
    present
        .into_iter()
        .filter(|lock| !processes.may_hold(lock, tree, nested))
        .filter(|lock| std::fs::remove_file(lock).is_ok())
        .cloned()
        .collect()
}

/// The lock files directly in `dir` (`index.lock`, `HEAD.lock`, `packed-refs.lock`…).
pub fn locks_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "lock") && path.is_file())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_nobody_holds_is_stale_and_one_held_open_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        let nested = [tree.join(".harness/worktrees/F-001")];
        std::fs::create_dir_all(&nested[0]).unwrap();
        let left = tree.join("index.lock");
        std::fs::write(&left, "").unwrap();
        let held = tree.join("HEAD.lock");
        let open = std::fs::File::create(&held).unwrap();
        // Another test's child between fork and exec holds a copy of every descriptor open at
        // its fork for an instant (the file being written, say): once it has exec'd (the copy is
        // close-on-exec), nobody holds the lock.
        let removed_at_last = |locks: &[PathBuf]| {
            (0..100).find_map(|_| {
                let removed = remove_stale(locks, &tree, &nested);
                std::thread::sleep(std::time::Duration::from_millis(10));
                (!removed.is_empty()).then_some(removed)
            })
        };
        let removed = removed_at_last(&[left.clone(), held.clone()]);
        assert_eq!(removed.as_deref(), Some(std::slice::from_ref(&left)));
        assert!(!left.exists() && held.exists());
        drop(open);
        let removed = removed_at_last(std::slice::from_ref(&held));
        assert_eq!(removed.as_deref(), Some(std::slice::from_ref(&held)));
    }

    #[test]
    fn a_git_process_working_in_the_tree_may_hold_its_index_lock() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        let nested = [tree.join(".harness/worktrees/F-001")];
        let lock = tree.join("index.lock");
        let processes = Processes {
            open_files: Vec::new(),
            git_cwds: vec![nested[0].join("src"), dir.path().join("elsewhere")],
            seen: true,
        };
        assert!(!processes.may_hold(&lock, &tree, &nested));
        let processes = Processes {
            git_cwds: vec![tree.join("src")],
            ..processes
        };
        assert!(processes.may_hold(&lock, &tree, &nested));
        // Without /proc, only an old lock is taken for stale.
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(&lock, "").unwrap();
        assert!(Processes::default().may_hold(&lock, &tree, &nested));
    }
}
