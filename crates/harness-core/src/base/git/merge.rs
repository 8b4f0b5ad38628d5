//! Merging a branch into the branch checked out in a working tree (the main one, or a linked
//! worktree) with `--no-ff`: all of it or nothing, and sound after a kill at any moment of an
//! earlier try. A kill can leave lock files (removed when
//! no live git holds them), a merge stopped with MERGE_HEAD (aborted when it is this branch's,
//! or another of the caller's, or one with no message — git killed between writing MERGE_HEAD
//! and MERGE_MSG — that no live git is still making),
//! or — killed after git updated the index and files but before it moved the branch — the merge's
//! result in the index and the tree with nothing saying so, or killed while writing a file, that
//! file gone or torn; that one is recognised (every change in the tree is one the merge makes,
//! with the merge's content or a start of it) and undone before merging again.
//! Any other change in the tree is the user's, and is never touched: the merge is refused.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use super::worktrees::{checkouts_but, ref_lock, registrations};
use super::{common_dir, git, git_bytes, git_dir, is_ancestor, run, run_untrimmed, stale};

/// How a merge went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    /// The branch's work is in the base branch (merged now, or found merged already).
    Merged,
    /// Not merged, the main tree as it was; why.
    Refused(String),
}

/// Merges `branch` (at `tip`) into `base`, which must be checked out in the working tree `main`,
/// with a merge commit of `message`. `kin` says whether a merge message is of the kind the
/// caller writes: such a merge a kill left half-way is aborted, whatever branch it merges. The
/// caller serialises git operations on that tree.
pub fn merge_no_ff(
    main: &Path,
    base: &str,
    branch: &str,
    tip: &str,
    message: &str,
    kin: &dyn Fn(&str) -> bool,
) -> anyhow::Result<Merge> {
    clear_stale_locks(main, &[base, branch])?;
    clear_finished_merge(main)?;
    if is_ancestor(main, tip, base) {
        return Ok(Merge::Merged);
    }
    let current = run(main, &["symbolic-ref", "--short", "HEAD"]).unwrap_or_default();
    if current != base {
        return Ok(Merge::Refused(format!(
            "the main working tree is on {current:?}, not on {base:?} where the mission started"
        )));
    }
    if let Some(refused) = settle_merge_in_progress(main, tip, kin)? {
        return Ok(refused);
    }
    let first = try_merge(main, branch, message)?;
    if first == Merge::Merged || !undo_interrupted_merge(main, branch)? {
        return Ok(first);
    }
    try_merge(main, branch, message)
}

/// Removes the lock files a killed git left for the working tree `main`: those of its git
/// directory (its index, HEAD…; for the main tree also packed-refs…) and of the refs of
/// `branches`. The caller serialises git operations on `main`.
pub fn clear_stale_locks(main: &Path, branches: &[&str]) -> anyhow::Result<()> {
    let common = common_dir(main)?;
    let mut locks = stale::locks_in(&git_dir(main)?);
    locks.extend(branches.iter().map(|branch| ref_lock(&common, branch)));
    stale::remove_stale(&locks, main, &nested_trees(main, &common));
    Ok(())
}

/// The linked worktrees nested in the working tree `main` (its repository's common directory
/// `common`): git processes working there (agents) work in other trees than `main`.
fn nested_trees(main: &Path, common: &Path) -> Vec<std::path::PathBuf> {
    checkouts_but(&registrations(common), &stale::canonical(main))
}

/// Git's own last step of a merge, done for a merge killed after its commit: MERGE_HEAD names
/// commits that HEAD holds already, so the merge is over, and its state files go (left, they
/// would make every later merge refuse, and the user's tree look mid-merge). No merge in
/// progress can name such commits: git merges nothing that is in HEAD already. The caller
/// serialises git operations on `main`.
pub fn clear_finished_merge(main: &Path) -> anyhow::Result<()> {
    let dir = git_dir(main)?;
    let Ok(text) = std::fs::read_to_string(dir.join("MERGE_HEAD")) else {
        return Ok(());
    };
    let heads: Vec<&str> = text.split_whitespace().collect();
    if heads.is_empty() || !heads.iter().all(|head| is_ancestor(main, head, "HEAD")) {
        return Ok(());
    }
    for name in ["MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"] {
        match std::fs::remove_file(dir.join(name)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(error)
                    .with_context(|| format!("cannot remove {}", dir.join(name).display()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// A merge stopped half-way in the main tree (MERGE_HEAD there): aborted if it is the merge of
/// `tip` or of an earlier commit of its work (an earlier try killed, the branch moved on since),
/// or a merge of the caller's kind (`kin`, on its message) that no live git is making (the
/// killed try of another branch, which may never be tried again); else the reason to refuse
/// (someone else's merge).
fn settle_merge_in_progress(
    main: &Path,
    tip: &str,
    kin: &dyn Fn(&str) -> bool,
) -> anyhow::Result<Option<Merge>> {
    let dir = git_dir(main)?;
    let Ok(text) = std::fs::read_to_string(dir.join("MERGE_HEAD")) else {
        return Ok(None);
    };
    let head = text.trim();
    let ours = head == tip || (!head.contains(char::is_whitespace) && is_ancestor(main, head, tip));
    if !ours {
        if let Some(why) = not_killed_of_kin(main, &dir, kin)? {
            return Ok(Some(Merge::Refused(format!(
                "another merge is in progress in {} (MERGE_HEAD; {why}): finish it or `git merge --abort` it",
                main.display()
            ))));
        }
    }
    if let Err(error) = run(main, &["merge", "--abort"]) {
        return Ok(Some(Merge::Refused(format!(
            "an interrupted merge of the branch could not be aborted: {error:#}"
        ))));
    }
    Ok(None)
}

/// Why the merge in progress in `main` (git directory `dir`) is not a killed try, if it is not:
/// a killed try is of the caller's kind, by the first line of its MERGE_MSG, or has no message
/// at all, and no live git is at work in that tree. git writes MERGE_HEAD, then MERGE_MSG: a
/// merge without a message is one whose git was killed between the two, whoever started it.
fn not_killed_of_kin(
    main: &Path,
    dir: &Path,
    kin: &dyn Fn(&str) -> bool,
) -> anyhow::Result<Option<String>> {
    let message = std::fs::read_to_string(dir.join("MERGE_MSG")).unwrap_or_default();
    let first = message.lines().next().unwrap_or_default();
    let started_only = message.trim().is_empty();
    if !started_only && !kin(first) {
        return Ok(Some(format!("its message: {first:?}")));
    }
    let nested = nested_trees(main, &common_dir(main)?);
    let processes = stale::Processes::scan();
    let at_work = processes.may_work_in(main, &nested, &dir.join("MERGE_HEAD"));
    Ok(at_work.then(|| "a git process is at work in that tree".to_string()))
}

/// One `git merge --no-ff`; on a conflict the merge is aborted, never left half-done.
fn try_merge(main: &Path, branch: &str, message: &str) -> anyhow::Result<Merge> {
    let args = [
        "-c",
        "user.name=harness",
        "-c",
        "user.email=harness@localhost",
        "merge",
        "--no-ff",
        "--no-edit",
        "-m",
        message,
        branch,
    ];
    let Err(error) = run(main, &args) else {
        return Ok(Merge::Merged);
    };
    let conflicted = run(main, &["diff", "--name-only", "--diff-filter=U"]).unwrap_or_default();
    if git_dir(main)?.join("MERGE_HEAD").exists() {
        // Never leave a half-merged tree: back to exactly what it was.
        let _ = run(main, &["merge", "--abort"]);
    }
    let files = conflicted.lines().collect::<Vec<_>>().join(", ");
    Ok(Merge::Refused(if files.is_empty() {
        let said = format!("{error:#}");
        let said = said
            .strip_prefix(&format!("git {}: ", args.join(" ")))
            .unwrap_or(&said);
        format!("git merge refused: {}", one_line(said))
    } else {
        format!("conflicts in {files}")
    }))
}

/// git's message on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// If every change in the main tree (index, files, untracked files) is one that merging `branch`
/// into HEAD makes, with that merge's content or a torn write of it — what a merge killed after
/// or while updating the tree, before committing, leaves — undoes it and returns true. Changes
/// of any other kind are the user's: nothing is touched and false is returned. Needs `git
/// merge-tree --write-tree` (git 2.38); without it, nothing is recognised.
fn undo_interrupted_merge(main: &Path, branch: &str) -> anyhow::Result<bool> {
    let Some((true, tree)) = git(main, &["merge-tree", "--write-tree", "HEAD", branch]) else {
        return Ok(false);
    };
    let Some(result) = tree.lines().next().map(str::to_string) else {
        return Ok(false);
    };
    let merged = run_untrimmed(
        main,
        &["diff-tree", "-r", "-z", "--name-only", "HEAD", &result],
    )?;
    let merged: Vec<&str> = merged.split('\0').filter(|p| !p.is_empty()).collect();
    // Untracked files the merge does not write are neither its doing nor in its way.
    let changes: BTreeMap<String, bool> = changed_paths(main)?
        .into_iter()
        .filter(|(path, untracked)| !untracked || merged.contains(&path.as_str()))
        .collect();
    if changes.is_empty() {
        return Ok(false);
    }
    let paths: Vec<&str> = changes.keys().map(String::as_str).collect();
    if paths.iter().any(|path| !merged.contains(path)) {
        return Ok(false);
    }
    let before = blobs(main, &["ls-tree", "-r", "-z", "HEAD"], &paths)?;
    let after = blobs(main, &["ls-tree", "-r", "-z", &result], &paths)?;
    let staged = blobs(main, &["ls-files", "-s", "-z"], &paths)?;
    let on_disk = file_blobs(main, &paths)?;
    let either =
        |found: Option<&String>, path: &str| found == before.get(path) || found == after.get(path);
    let written = |path: &str| {
        either(on_disk.get(path), path)
            || after
                .get(path)
                .is_some_and(|blob| torn_write_of(main, path, blob))
    };
    let ours = paths
        .iter()
        .all(|path| either(staged.get(*path), path) && written(path));
    if !ours {
        return Ok(false);
    }
    run(main, &["reset", "-q", "--hard"])?;
    // Files the merge adds that were written but not staged are untracked: `reset` left them.
    for (path, untracked) in &changes {
        if *untracked && !before.contains_key(path.as_str()) {
            let _ = std::fs::remove_file(main.join(path));
        }
    }
    Ok(true)
}

/// Whether the file at `path` is what git leaves when killed while writing the blob `blob`
/// there: no file (git removes the old one first), or a strict start of the blob's content.
fn torn_write_of(main: &Path, path: &str, blob: &str) -> bool {
    let file = main.join(path);
    let Ok(meta) = file.symlink_metadata() else {
        return true;
    };
    if !meta.is_file() {
        return false;
    }
    let (Ok(start), Some((true, content))) = (
        std::fs::read(&file),
        git_bytes(main, &["cat-file", "blob", blob]),
    ) else {
        return false;
    };
    start.len() < content.len() && content.starts_with(&start)
}

/// Every path `git status` reports changed in the main tree (renames as both paths), and
/// whether it is untracked.
fn changed_paths(main: &Path) -> anyhow::Result<BTreeMap<String, bool>> {
    let status = run_untrimmed(
        main,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    let mut paths = BTreeMap::new();
    let mut records = status.split('\0').filter(|r| !r.is_empty());
    while let Some(record) = records.next() {
        let (code, path) = record.split_at(record.len().min(3));
        paths.insert(path.to_string(), code.starts_with("??"));
        if code.contains('R') || code.contains('C') {
            if let Some(old) = records.next() {
                paths.insert(old.to_string(), false);
            }
        }
    }
    Ok(paths)
}

/// The blob of each of `paths` in the NUL-terminated listing of `command` (`ls-tree` or
/// `ls-files -s`: the object id is the field before the tab's last word), absent ones left out.
fn blobs(
    main: &Path,
    command: &[&str],
    paths: &[&str],
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut args = vec!["--literal-pathspecs"];
    args.extend_from_slice(command);
    args.push("--");
    args.extend_from_slice(paths);
    let listing = run(main, &args)?;
    Ok(listing
        .split('\0')
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            let fields: Vec<&str> = meta.split_whitespace().collect();
            // ls-tree: mode type oid; ls-files -s: mode oid stage.
            let oid = if fields.len() == 3 && fields[1] == "blob" {
                fields[2]
            } else {
                fields.get(1)?
            };
            Some((path.to_string(), oid.to_string()))
        })
        .collect())
}

/// The blob each of `paths` that exists as a file would be, as git would store it.
fn file_blobs(main: &Path, paths: &[&str]) -> anyhow::Result<BTreeMap<String, String>> {
    let present: Vec<&str> = paths
        .iter()
        .copied()
        .filter(|path| main.join(path).is_file())
        .collect();
    if present.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut args = vec!["hash-object", "--"];
    args.extend_from_slice(&present);
    let hashes = run(main, &args)?;
    Ok(present
        .iter()
        .map(|path| path.to_string())
        .zip(hashes.lines().map(str::to_string))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::git::commit_of;
    use crate::base::git::tests::run as git_ok;

    /// A repository on `main` with a.txt, and a branch `b` that changes it and adds b.txt.
    fn repository() -> (tempfile::TempDir, std::path::PathBuf, String) {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().to_path_buf();
        git_ok(&main, &["init", "-q", "-b", "main"]);
        std::fs::write(main.join("a.txt"), "a\n").unwrap();
        git_ok(&main, &["add", "-A"]);
        git_ok(&main, &["commit", "-q", "-m", "one"]);
        git_ok(&main, &["checkout", "-q", "-b", "b"]);
        std::fs::write(main.join("a.txt"), "a, changed\n").unwrap();
        std::fs::write(main.join("b.txt"), "b\n").unwrap();
        git_ok(&main, &["add", "-A"]);
        git_ok(&main, &["commit", "-q", "-m", "two"]);
        git_ok(&main, &["checkout", "-q", "main"]);
        let tip = commit_of(&main, "b").unwrap();
        (dir, main, tip)
    }

    /// The kind of merge message these tests write: `Merge <one-letter branch>`.
    fn kin(message: &str) -> bool {
        message
            .strip_prefix("Merge ")
            .is_some_and(|branch| branch.len() == 1)
    }

    /// A branch `c` from `main` that adds c.txt, `main` checked out again; its commit.
    fn branch_c(main: &Path) -> String {
        git_ok(main, &["checkout", "-q", "-b", "c"]);
        std::fs::write(main.join("c.txt"), "c\n").unwrap();
        git_ok(main, &["add", "-A"]);
        git_ok(main, &["commit", "-q", "-m", "c"]);
        git_ok(main, &["checkout", "-q", "main"]);
        commit_of(main, "c").unwrap()
    }

    #[test]
    fn merges_once_and_then_finds_it_merged() {
        let (_dir, main, tip) = repository();
        assert_eq!(
            merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
            Merge::Merged
        );
        assert_eq!(std::fs::read_to_string(main.join("b.txt")).unwrap(), "b\n");
        let head = commit_of(&main, "HEAD").unwrap();
        assert_eq!(
            merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
            Merge::Merged
        );
        assert_eq!(
            commit_of(&main, "HEAD").unwrap(),
            head,
            "nothing merged twice"
        );
    }

    #[test]
    fn a_merge_killed_before_its_commit_is_undone_and_made_again() {
        let (_dir, main, tip) = repository();
        // What the kill left: the merge's result staged and in the files, a stale index.lock.
        git_ok(&main, &["merge", "--no-ff", "--no-commit", "b"]);
        std::fs::remove_file(main.join(".git/MERGE_HEAD")).unwrap();
        std::fs::write(main.join(".git/index.lock"), "").unwrap();
        assert_eq!(
            merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
            Merge::Merged
        );
        assert!(is_ancestor(&main, &tip, "main"));
        assert_eq!(run(&main, &["status", "--porcelain"]).unwrap(), "");
    }

    /// Regression (the parallel crash test, seed 1795839674784437851): git killed while it wrote
    /// a file the merge adds leaves it untracked and torn — empty, or the start of its content —
    /// and the merge was refused for ever ("untracked working tree files would be overwritten").
    #[test]
    fn a_merge_killed_inside_writing_a_file_is_undone_and_made_again() {
        for (torn_b, torn_a) in [("", None), ("", Some("a, ch")), ("b", None)] {
            let (_dir, main, tip) = repository();
            std::fs::write(main.join("b.txt"), torn_b).unwrap();
            match torn_a {
                // git unlinks a file it changes before it writes it again.
                Some(start) => std::fs::write(main.join("a.txt"), start).unwrap(),
                None => std::fs::remove_file(main.join("a.txt")).unwrap(),
            }
            assert_eq!(
                merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
                Merge::Merged,
                "b.txt {torn_b:?}, a.txt {torn_a:?}"
            );
            assert_eq!(std::fs::read_to_string(main.join("b.txt")).unwrap(), "b\n");
            assert_eq!(run(&main, &["status", "--porcelain"]).unwrap(), "");
        }
    }

    /// What a torn write cannot have made is the user's: a file longer than the merge's, or not
    /// its start.
    #[test]
    fn an_untracked_file_that_is_not_the_start_of_the_merges_is_the_users() {
        for mine in ["c\n", "b\nmore\n"] {
            let (_dir, main, tip) = repository();
            std::fs::write(main.join("b.txt"), mine).unwrap();
            let refused = merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap();
            assert!(matches!(refused, Merge::Refused(_)), "{refused:?}");
            assert_eq!(std::fs::read_to_string(main.join("b.txt")).unwrap(), mine);
        }
    }

    #[test]
    fn a_change_of_the_users_is_never_taken_for_an_interrupted_merge() {
        let (_dir, main, tip) = repository();
        std::fs::write(main.join("b.txt"), "mine\n").unwrap();
        let refused = merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap();
        assert!(
            matches!(&refused, Merge::Refused(why) if why.contains("b.txt")),
            "{refused:?}"
        );
        assert_eq!(
            std::fs::read_to_string(main.join("b.txt")).unwrap(),
            "mine\n"
        );
        assert!(!is_ancestor(&main, &tip, "main"));
    }

    /// Regression: a merge killed after its commit and before git removed MERGE_HEAD left the
    /// main tree "merging" for ever: every other feature's merge was refused as "another merge
    /// is in progress", and the mission never ended.
    #[test]
    fn a_merge_killed_after_its_commit_leaves_no_merge_in_progress() {
        let (_dir, main, tip) = repository();
        let c = branch_c(&main);
        assert_eq!(
            merge_no_ff(&main, "main", "c", &c, "Merge c", &kin).unwrap(),
            Merge::Merged
        );
        // What the kill left: the merge committed, its MERGE_HEAD and MERGE_MSG still there.
        std::fs::write(main.join(".git/MERGE_HEAD"), format!("{c}\n")).unwrap();
        std::fs::write(main.join(".git/MERGE_MSG"), "Merge c\n").unwrap();
        assert_eq!(
            merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
            Merge::Merged
        );
        assert!(is_ancestor(&main, &tip, "main"));
        assert!(!main.join(".git/MERGE_HEAD").exists());
        // Found merged already, the stale files go too, so that the user's tree is not "merging".
        std::fs::write(main.join(".git/MERGE_HEAD"), format!("{tip}\n")).unwrap();
        assert_eq!(
            merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
            Merge::Merged
        );
        assert!(!main.join(".git/MERGE_HEAD").exists());
        assert!(!main.join(".git/MERGE_MSG").exists());
        assert_eq!(run(&main, &["status", "--porcelain"]).unwrap(), "");
    }

    /// A merge killed half-way, then the branch moved on: its MERGE_HEAD names a commit that is
    /// no longer the tip, and it was taken for someone else's merge, refused at every try.
    #[test]
    fn a_killed_merge_of_an_earlier_commit_of_the_branch_is_aborted() {
        let (_dir, main, first) = repository();
        git_ok(&main, &["checkout", "-q", "b"]);
        std::fs::write(main.join("b.txt"), "b, later\n").unwrap();
        git_ok(&main, &["commit", "-q", "-am", "three"]);
        git_ok(&main, &["checkout", "-q", "main"]);
        let tip = commit_of(&main, "b").unwrap();
        // What the kill left: the merge of the branch's first tip, half-way.
        git_ok(&main, &["merge", "--no-ff", "--no-commit", &first]);
        assert_eq!(
            merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
            Merge::Merged
        );
        assert!(is_ancestor(&main, &tip, "main"));
        assert!(!main.join(".git/MERGE_HEAD").exists());
        assert_eq!(run(&main, &["status", "--porcelain"]).unwrap(), "");
    }

    #[test]
    fn someone_elses_merge_in_progress_is_left_alone() {
        let (_dir, main, tip) = repository();
        branch_c(&main);
        git_ok(&main, &["merge", "--no-ff", "--no-commit", "c"]);
        let refused = merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap();
        assert!(
            matches!(&refused, Merge::Refused(why) if why.contains("MERGE_HEAD; its message: \"Merge branch 'c'\"")),
            "{refused:?}"
        );
        assert!(main.join(".git/MERGE_HEAD").exists());
    }

    /// Regression (the parallel crash test, seed 1795941842093525071): a merge of another
    /// feature's killed half-way was taken for the user's, and every other feature's merge was
    /// refused until that feature tried again — for ever, if it never did.
    #[test]
    fn a_killed_merge_of_the_callers_kind_of_another_branch_is_aborted() {
        let (_dir, main, tip) = repository();
        let c = branch_c(&main);
        git_ok(
            &main,
            &["merge", "--no-ff", "--no-commit", "-m", "Merge c", "c"],
        );
        assert_eq!(
            merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
            Merge::Merged
        );
        assert!(is_ancestor(&main, &tip, "main"));
        assert!(!is_ancestor(&main, &c, "main"), "c was never merged");
        assert!(!main.join(".git/MERGE_HEAD").exists());
        assert_eq!(run(&main, &["status", "--porcelain"]).unwrap(), "");
    }

    /// Regression (the parallel crash test under load, seed 1795959012223542471): git killed
    /// after it wrote MERGE_HEAD and before MERGE_MSG left a merge with no message, taken for the
    /// user's: every merge was refused for ever.
    #[test]
    fn a_killed_merge_without_its_message_is_aborted() {
        for message in [None, Some("")] {
            let (_dir, main, tip) = repository();
            branch_c(&main);
            git_ok(
                &main,
                &["merge", "--no-ff", "--no-commit", "-m", "Merge c", "c"],
            );
            match message {
                None => std::fs::remove_file(main.join(".git/MERGE_MSG")).unwrap(),
                Some(text) => std::fs::write(main.join(".git/MERGE_MSG"), text).unwrap(),
            }
            assert_eq!(
                merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
                Merge::Merged,
                "MERGE_MSG {message:?}"
            );
            assert!(is_ancestor(&main, &tip, "main"));
            assert!(!main.join(".git/MERGE_HEAD").exists());
            assert_eq!(run(&main, &["status", "--porcelain"]).unwrap(), "");
        }
    }

    /// A merge of the caller's kind that a live git may still be making is left to it.
    #[test]
    fn a_merge_of_the_callers_kind_with_a_git_at_work_in_the_tree_is_left_alone() {
        let (_dir, main, tip) = repository();
        branch_c(&main);
        git_ok(
            &main,
            &["merge", "--no-ff", "--no-commit", "-m", "Merge c", "c"],
        );
        let mut at_work = std::process::Command::new("git")
            .args(["cat-file", "--batch"])
            .current_dir(&main)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let refused = merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap();
        at_work.kill().unwrap();
        at_work.wait().unwrap();
        assert!(
            matches!(&refused, Merge::Refused(why) if why.contains("a git process is at work")),
            "{refused:?}"
        );
        assert!(main.join(".git/MERGE_HEAD").exists());
        assert_eq!(
            merge_no_ff(&main, "main", "b", &tip, "Merge b", &kin).unwrap(),
            Merge::Merged
        );
    }
}
