//! Snapshots of a working tree, for a phase's gate: what the tree holds at a moment —
//! committed, staged, changed and untracked files alike (ignored ones left out) — written as a
//! git tree object, and the paths that differ between two snapshots. Neither the repository's
//! index nor its HEAD nor its branches change: the snapshot is made in a private copy of the
//! index. Whatever the agent commits, resets or leaves uncommitted in between, two snapshots
//! tell what changed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;

/// Writes the working tree at `workdir` as a tree object and returns its id. `exclude` are
/// paths relative to the top of the repository left out (the harness's own state directory).
pub fn snapshot(workdir: &Path, exclude: &[&str]) -> anyhow::Result<String> {
    let index = PrivateIndex::new(workdir)?;
    let mut add = vec!["add", "-A", "--", ":(top)"];
    let excluded: Vec<String> = exclude
        .iter()
        .map(|path| format!(":(top,exclude){path}"))
        .collect();
    add.extend(excluded.iter().map(String::as_str));
    index.git(workdir, &add)?;
    index.git(workdir, &["write-tree"])
}

/// The paths that differ between the trees `from` and `to` (relative to the top of the
/// repository): a moved file counts at both ends.
pub fn changed_paths(workdir: &Path, from: &str, to: &str) -> anyhow::Result<Vec<String>> {
    let listing = super::run_untrimmed(
        workdir,
        &[
            "diff-tree",
            "-r",
            "--name-only",
            "--no-renames",
            "-z",
            from,
            to,
        ],
    )?;
    Ok(listing
        .split('\0')
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect())
}

/// A copy of the repository's index in the temporary directory (the copy spares hashing again
/// every file git already knows unchanged), removed when dropped.
struct PrivateIndex {
    path: PathBuf,
}

impl PrivateIndex {
    fn new(workdir: &Path) -> anyhow::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let real = super::run(workdir, &["rev-parse", "--git-path", "index"])?;
        let real = workdir.join(real);
        let path = std::env::temp_dir().join(format!(
            "harness-index-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        // The project's own index, outside any state directory; a repository without one yet
        // (nothing ever added) starts from an empty index.
        if let Err(error) = std::fs::copy(&real, &path) {
            if error.kind() != std::io::ErrorKind::NotFound {
                return Err(error).with_context(|| format!("cannot copy {}", real.display()));
            }
        }
        Ok(Self { path })
    }

    /// Runs git in `workdir` on this index; its trimmed stdout.
    fn git(&self, workdir: &Path, args: &[&str]) -> anyhow::Result<String> {
        let output = super::command(workdir)
            .arg("--no-optional-locks")
            .args(args)
            .env("GIT_INDEX_FILE", &self.path)
            .stdin(Stdio::null())
            .output()
            .context("cannot run git")?;
        if !output.status.success() {
            anyhow::bail!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    }
}

impl Drop for PrivateIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::git::tests::run as git;

    #[test]
    fn every_change_counts_whether_committed_or_not_and_the_index_stays() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("kept.txt"), "k").unwrap();
        std::fs::write(root.join("moved.txt"), "m").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        // An untracked file at the start is part of the snapshot, not a change after it.
        std::fs::write(root.join("loose.txt"), "l").unwrap();
        git(root, &["add", "kept.txt", "moved.txt", ".gitignore"]);
        git(root, &["commit", "-q", "-m", "one"]);
        std::fs::create_dir_all(root.join(".harness")).unwrap();
        let before = snapshot(root, &[".harness"]).unwrap();

        std::fs::write(root.join("committed.txt"), "c").unwrap();
        git(root, &["add", "committed.txt"]);
        git(root, &["commit", "-q", "-m", "two"]);
        git(root, &["mv", "moved.txt", "there.txt"]);
        std::fs::write(root.join("kept.txt"), "changed, not staged").unwrap();
        std::fs::create_dir_all(root.join("new/deep")).unwrap();
        std::fs::write(root.join("new/deep/untracked.txt"), "u").unwrap();
        std::fs::create_dir_all(root.join("ignored")).unwrap();
        std::fs::write(root.join("ignored/x"), "i").unwrap();
        std::fs::write(root.join(".harness/state.json"), "{}").unwrap();
        let after = snapshot(root, &[".harness"]).unwrap();

        let mut changed = changed_paths(root, &before, &after).unwrap();
        changed.sort();
        assert_eq!(
            changed,
            [
                "committed.txt",
                "kept.txt",
                "moved.txt",
                "new/deep/untracked.txt",
                "there.txt"
            ]
        );
        assert!(changed_paths(root, &after, &after).unwrap().is_empty());
        // The project's index is as the user left it: only the staged move is in it.
        let status = super::super::run(root, &["status", "--porcelain"]).unwrap();
        assert!(status.contains("R  moved.txt -> there.txt"), "{status}");
        assert!(status.contains("?? new/"), "{status}");
    }

    #[test]
    fn a_repository_without_commits_can_be_snapshotted() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        let empty = snapshot(dir.path(), &[]).unwrap();
        std::fs::write(dir.path().join("a"), "a").unwrap();
        let one = snapshot(dir.path(), &[]).unwrap();
        assert_eq!(changed_paths(dir.path(), &empty, &one).unwrap(), ["a"]);
        assert!(snapshot(&dir.path().join("missing"), &[]).is_err());
    }
}
