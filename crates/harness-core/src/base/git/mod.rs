//! What the harness asks of git: how many commits an attempt made in the working directory, and
//! the plumbing of worktrees and merges (see `mission::worktree`), sound after a kill at any
//! step: lock files git left ([`stale`]), worktrees ([`worktrees`]), merges ([`merge`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

pub mod merge;
pub mod snapshot;
pub mod stale;
pub mod stat_walk;
pub mod worktrees;

use stat_walk::{Layout, Snapshot};

/// The working directory's HEAD before an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// Not a git repository (or git is not installed): commits are unknown.
    NotARepo,
    /// A repository without commits yet.
    Unborn,
    /// A commit.
    At(String),
}

fn git(workdir: &Path, args: &[&str]) -> Option<(bool, String)> {
    let (ok, stdout) = git_bytes(workdir, args)?;
    Some((ok, String::from_utf8_lossy(&stdout).trim().to_string()))
}

/// `git -C workdir`, as the harness runs it: without the maintenance git starts after a commit
/// or a merge (`git maintenance run --auto --detach`, or `gc --auto` before git 2.29), which it
/// detaches, so that it would go on running after the harness, outside all it ends; the
/// user's own git commands still maintain the repository.
pub fn command(workdir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .args(["-c", "maintenance.auto=false", "-c", "gc.auto=0", "-C"])
        .arg(workdir);
    command
}

fn git_bytes(workdir: &Path, args: &[&str]) -> Option<(bool, Vec<u8>)> {
    let output = command(workdir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    Some((output.status.success(), output.stdout))
}

/// Runs git in `workdir` and returns its trimmed stdout, or an error holding what git said.
pub fn run(workdir: &Path, args: &[&str]) -> anyhow::Result<String> {
    run_untrimmed(workdir, args).map(|stdout| stdout.trim().to_string())
}

/// [`run`], its stdout as it is (where leading spaces mean something).
pub fn run_untrimmed(workdir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = command(workdir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| anyhow::anyhow!("cannot run git: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        let said = String::from_utf8_lossy(&output.stderr);
        let said = said.trim();
        let said = if said.is_empty() {
            String::from_utf8_lossy(&output.stdout).trim().to_string()
        } else {
            said.to_string()
        };
        Err(anyhow::anyhow!("git {}: {}", args.join(" "), said))
    }
}

/// The repository's common directory (`.git` of the main working tree, shared by its worktrees).
pub fn common_dir(workdir: &Path) -> anyhow::Result<PathBuf> {
    let dir = PathBuf::from(run(workdir, &["rev-parse", "--git-common-dir"])?);
    Ok(stale::canonical(&workdir.join(dir)))
}

/// The git directory of the working tree `workdir` (`.git`, or a linked worktree's admin
/// directory).
pub fn git_dir(workdir: &Path) -> anyhow::Result<PathBuf> {
    let dir = PathBuf::from(run(workdir, &["rev-parse", "--git-dir"])?);
    Ok(stale::canonical(&workdir.join(dir)))
}

/// Whether the branch `branch` exists.
pub fn branch_exists(workdir: &Path, branch: &str) -> bool {
    commit_of(workdir, &format!("refs/heads/{branch}")).is_some()
}

/// The commit `rev` names, if it names one.
pub fn commit_of(workdir: &Path, rev: &str) -> Option<String> {
    match git(
        workdir,
        &["rev-parse", "--verify", "-q", &format!("{rev}^{{commit}}")],
    ) {
        Some((true, sha)) if !sha.is_empty() => Some(sha),
        _ => None,
    }
}

/// Whether `commit` is `of` or one of its ancestors (false when either is unknown).
pub fn is_ancestor(workdir: &Path, commit: &str, of: &str) -> bool {
    matches!(
        git(workdir, &["merge-base", "--is-ancestor", commit, of]),
        Some((true, _))
    )
}

/// Whether `workdir` is inside a git working tree.
pub fn is_repo(workdir: &Path) -> bool {
    head(workdir) != Head::NotARepo
}

/// Reads HEAD of the repository at `workdir`.
pub fn head(workdir: &Path) -> Head {
    match git(workdir, &["rev-parse", "--is-inside-work-tree"]) {
        Some((true, inside)) if inside == "true" => {}
        _ => return Head::NotARepo,
    }
    match git(workdir, &["rev-parse", "--verify", "-q", "HEAD"]) {
        Some((true, sha)) if !sha.is_empty() => Head::At(sha),
        _ => Head::Unborn,
    }
}

/// What an attempt's bookkeeping needs to know of the working tree: HEAD, and a fingerprint
/// such that two equal fingerprints mean nothing changed (`None` without a repository).
#[derive(Debug, Clone)]
pub struct Tree {
    /// HEAD.
    pub head: Head,
    /// HEAD, the status of every changed path, the content of changed tracked files, and the
    /// size and time of untracked ones, hashed; `None` without a repository.
    pub fingerprint: Option<u64>,
    /// What git's answer depended on, as it was just before git was asked: found unchanged
    /// later, it proves the answer would be the same (see [`look_again`]).
    snapshot: Option<Arc<Snapshot>>,
}

impl PartialEq for Tree {
    fn eq(&self, other: &Self) -> bool {
        self.head == other.head && self.fingerprint == other.fingerprint
    }
}

impl Eq for Tree {}

impl Tree {
    /// Not a repository (or git is not installed).
    pub const NOT_A_REPO: Tree = Tree {
        head: Head::NotARepo,
        fingerprint: None,
        snapshot: None,
    };
}

/// Whether git could see a repository at `workdir`: a `.git` in it or above it, or `GIT_DIR`
/// set. When not, asking git (a process, ~1 ms) is spared.
fn may_be_a_repo(workdir: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() {
        return true;
    }
    // Lexically absolute: the ancestors of `a/../b` then include every real ancestor of `b`.
    let Ok(workdir) = std::path::absolute(workdir) else {
        return true;
    };
    workdir
        .ancestors()
        .any(|dir| dir.join(".git").symlink_metadata().is_ok())
}

/// Looks at the working tree with a single `git status`: HEAD from its branch header, the
/// changed paths from its entries.
pub fn observe(workdir: &Path) -> Tree {
    observe_after(workdir, None)
}

/// Looks at the working tree again, `previous` being how it was last seen: when a walk of what
/// git's answer depends on finds nothing changed since (see [`stat_walk`]), `previous` itself,
/// without starting git; else [`observe`].
pub fn look_again(workdir: &Path, previous: &Tree) -> Tree {
    match &previous.snapshot {
        Some(snapshot) => {
            let now = snapshot.retake();
            if snapshot.unchanged_in(&now) {
                return previous.clone();
            }
            observe_after(workdir, Some(now))
        }
        None => observe(workdir),
    }
}

/// [`observe`], `walked` (if given) being a snapshot taken just before: the snapshot of the
/// answer (otherwise one is taken, where one can be).
fn observe_after(workdir: &Path, walked: Option<Snapshot>) -> Tree {
    if !may_be_a_repo(workdir) {
        return Tree::NOT_A_REPO;
    }
    let walked = walked
        .or_else(|| Layout::find(workdir).map(|layout| Snapshot::take(&layout, Arc::default())));
    let Some((true, status)) = git_bytes(
        workdir,
        &[
            // Without refreshing the index (which takes its lock): the agent's own git commands
            // must never find the index locked by the harness.
            "--no-optional-locks",
            "status",
            "--porcelain=v2",
            "--branch",
            "--untracked-files=all",
            // The ignored paths too (a directory as a whole): what a snapshot may skip.
            "--ignored=matching",
            "-z",
        ],
    ) else {
        return Tree::NOT_A_REPO;
    };
    // Paths in the output are relative to the top of the repository.
    let top = match &walked {
        Some(walked) => walked.top().to_path_buf(),
        None => top_of(workdir),
    };
    let (head, fingerprint, ignored) = read_status(&status, &top);
    Tree {
        head,
        fingerprint: Some(fingerprint),
        snapshot: walked.map(|walked| Arc::new(walked.with_ignored(ignored))),
    }
}

/// The top of the working tree `workdir` is in.
fn top_of(workdir: &Path) -> PathBuf {
    if workdir.join(".git").exists() {
        return workdir.to_path_buf();
    }
    match git(workdir, &["rev-parse", "--show-toplevel"]) {
        Some((true, top)) if !top.is_empty() => top.into(),
        _ => workdir.to_path_buf(),
    }
}

/// HEAD, the fingerprint and the ignored paths (without a final `/`) of `git status
/// --porcelain=v2 --branch -z` output, paths relative to `top`.
fn read_status(status: &[u8], top: &Path) -> (Head, u64, HashSet<Vec<u8>>) {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut head = Head::Unborn;
    let mut ignored = HashSet::new();
    let mut records = status.split(|&b| b == 0);
    while let Some(record) = records.next() {
        if let Some(path) = record.strip_prefix(b"! ") {
            ignored.insert(path.strip_suffix(b"/").unwrap_or(path).to_vec());
            continue;
        }
        record.hash(&mut hasher);
        let text = String::from_utf8_lossy(record);
        if let Some(oid) = text.strip_prefix("# branch.oid ") {
            if oid != "(initial)" {
                head = Head::At(oid.to_string());
            }
        } else if let Some(path) = text.strip_prefix("? ") {
            // Untracked: its size and time stand for its content.
            if let Ok(meta) = std::fs::metadata(top.join(path)) {
                meta.len().hash(&mut hasher);
                meta.modified().ok().hash(&mut hasher);
            }
        } else {
            // A changed tracked file (`1`), a rename or copy (`2`, followed by its old path),
            // an unmerged one (`u`): its content is what `git diff HEAD` would show.
            let path = match record.first() {
                Some(b'1') => text.splitn(9, ' ').nth(8),
                Some(b'2') => {
                    if let Some(old) = records.next() {
                        old.hash(&mut hasher);
                    }
                    text.splitn(10, ' ').nth(9)
                }
                Some(b'u') => text.splitn(11, ' ').nth(10),
                _ => None,
            };
            if let Some(path) = path {
                hash_content(&top.join(path), &mut hasher);
            }
        }
    }
    (head, hasher.finish(), ignored)
}

/// Feeds a file's bytes (or why it cannot be read) to `hasher`, in bounded memory.
fn hash_content(path: &Path, hasher: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) => return error.kind().hash(hasher),
    };
    let mut buffer = [0u8; 64 << 10];
    loop {
        match file.read(&mut buffer) {
            Ok(0) => return,
            Ok(count) => hasher.write(&buffer[..count]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return error.kind().hash(hasher),
        }
    }
}

/// A fingerprint of the working tree (see [`observe`]); `None` without a repository.
pub fn fingerprint(workdir: &Path) -> Option<u64> {
    observe(workdir).fingerprint
}

/// Commits on HEAD now that were not reachable from `before`; `None` without a repository.
pub fn new_commits(workdir: &Path, before: &Head) -> Option<u64> {
    let range = match before {
        Head::NotARepo => return None,
        Head::Unborn => "HEAD".to_string(),
        Head::At(sha) => format!("{sha}..HEAD"),
    };
    match git(workdir, &["rev-list", "--count", &range]) {
        Some((true, count)) => count.parse().ok(),
        // HEAD still unborn: nothing was committed.
        _ => Some(0),
    }
}

/// [`new_commits`] from HEAD before and after an attempt: no git process when HEAD did not move.
pub fn new_commits_between(workdir: &Path, before: &Head, after: &Head) -> Option<u64> {
    match before {
        Head::NotARepo => None,
        _ if before == after => Some(0),
        _ => new_commits(workdir, before),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs git in `dir` as a test's author; panics if it fails.
    pub(in crate::base::git) fn run(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn counts_new_commits_from_an_unborn_or_existing_head() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(head(dir.path()), Head::NotARepo);
        assert_eq!(new_commits(dir.path(), &Head::NotARepo), None);
        run(dir.path(), &["init", "-q"]);
        let before = head(dir.path());
        assert_eq!(before, Head::Unborn);
        assert_eq!(new_commits(dir.path(), &before), Some(0));
        run(dir.path(), &["commit", "-q", "--allow-empty", "-m", "one"]);
        run(dir.path(), &["commit", "-q", "--allow-empty", "-m", "two"]);
        assert_eq!(new_commits(dir.path(), &before), Some(2));
        let middle = head(dir.path());
        run(
            dir.path(),
            &["commit", "-q", "--allow-empty", "-m", "three"],
        );
        assert_eq!(new_commits(dir.path(), &middle), Some(1));
    }

    #[test]
    fn observe_sees_head_and_every_kind_of_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(observe(root), Tree::NOT_A_REPO);
        run(root, &["init", "-q"]);
        let unborn = observe(root);
        assert_eq!(unborn.head, Head::Unborn);
        assert!(unborn.fingerprint.is_some());
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "one\n").unwrap();
        std::fs::write(root.join("b name.txt"), "two\n").unwrap();
        run(root, &["add", "-A"]);
        run(root, &["commit", "-q", "-m", "one"]);
        let clean = observe(root);
        assert_eq!(clean.head, head(root));
        assert_eq!(observe(root), clean, "nothing changed, nothing differs");

        // A tracked file modified, then modified again: its status line stays the same, its
        // content does not (what `git diff HEAD` saw).
        std::fs::write(root.join("sub/a.txt"), "one\nmore\n").unwrap();
        let modified = observe(root);
        assert_ne!(modified.fingerprint, clean.fingerprint);
        std::fs::write(root.join("sub/a.txt"), "one\nother\n").unwrap();
        let modified_again = observe(root);
        assert_ne!(modified_again.fingerprint, modified.fingerprint);
        // Seen the same from a subdirectory (paths are relative to the top).
        assert_eq!(observe(&root.join("sub")), modified_again);

        // A staged rename of a file whose name has a space, then an edit of the renamed file.
        run(root, &["mv", "b name.txt", "c name.txt"]);
        let renamed = observe(root);
        assert_ne!(renamed.fingerprint, modified_again.fingerprint);
        std::fs::write(root.join("c name.txt"), "two, edited\n").unwrap();
        assert_ne!(observe(root).fingerprint, renamed.fingerprint);

        // An untracked file: new, then grown.
        let before_untracked = observe(root);
        std::fs::write(root.join("sub/new.txt"), "x").unwrap();
        let untracked = observe(root);
        assert_ne!(untracked.fingerprint, before_untracked.fingerprint);
        std::fs::write(root.join("sub/new.txt"), "xy").unwrap();
        assert_ne!(observe(root).fingerprint, untracked.fingerprint);

        // Back to the commit: the same fingerprint as the clean tree.
        run(root, &["reset", "-q", "--hard"]);
        std::fs::remove_file(root.join("sub/new.txt")).unwrap();
        assert_eq!(observe(root), clean);
    }

    #[test]
    fn new_commits_between_asks_git_only_when_head_moved() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(
            new_commits_between(root, &Head::NotARepo, &Head::NotARepo),
            None
        );
        run(root, &["init", "-q"]);
        assert_eq!(
            new_commits_between(root, &Head::Unborn, &Head::Unborn),
            Some(0)
        );
        run(root, &["commit", "-q", "--allow-empty", "-m", "one"]);
        let one = observe(root).head;
        assert_eq!(new_commits_between(root, &Head::Unborn, &one), Some(1));
        run(root, &["commit", "-q", "--allow-empty", "-m", "two"]);
        run(root, &["commit", "-q", "--allow-empty", "-m", "three"]);
        let three = observe(root).head;
        assert_eq!(new_commits_between(root, &one, &three), Some(2));
        assert_eq!(new_commits_between(root, &three, &three), Some(0));
    }

    /// The tree seen once every file is old enough for a snapshot to vouch for it.
    fn settled(root: &Path) -> Tree {
        std::thread::sleep(std::time::Duration::from_millis(150));
        let tree = observe(root);
        assert!(
            tree.snapshot.is_some(),
            "no snapshot of {}: a file system or configuration this module does not trust",
            root.display()
        );
        tree
    }

    /// Whether `now` came from git rather than from `before`'s snapshot.
    fn asked_git(before: &Tree, now: &Tree) -> bool {
        match (&before.snapshot, &now.snapshot) {
            (Some(before), Some(now)) => !Arc::ptr_eq(before, now),
            _ => true,
        }
    }

    /// A repository with two tracked files, an ignored directory and an ignored kind of file.
    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        run(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.o\n").unwrap();
        std::fs::write(root.join("sub/a.txt"), "one\n").unwrap();
        std::fs::write(root.join("b.txt"), "two\n").unwrap();
        std::fs::write(root.join("target/build.log"), "x").unwrap();
        run(root, &["add", "-A"]);
        run(root, &["commit", "-q", "-m", "one"]);
        dir
    }

    #[test]
    fn looking_again_asks_git_only_when_a_file_it_sees_changed() {
        let dir = project();
        let root = dir.path();
        let clean = settled(root);
        let again = look_again(root, &clean);
        assert!(!asked_git(&clean, &again));
        assert_eq!(again, clean);
        // What git ignores changes: no need to ask it.
        std::fs::write(root.join("target/build.log"), "more").unwrap();
        std::fs::write(root.join("target/new.log"), "x").unwrap();
        let again = look_again(root, &clean);
        assert!(!asked_git(&clean, &again));
        // A new file git will turn out to ignore: asked, and nothing changed for git.
        std::fs::write(root.join("sub/main.o"), "x").unwrap();
        let asked = look_again(root, &clean);
        assert!(asked_git(&clean, &asked));
        assert_eq!(asked, clean);
        // From then on it is skipped like the rest.
        let settled_again = settled(root);
        std::fs::write(root.join("sub/main.o"), "xy").unwrap();
        assert!(!asked_git(
            &settled_again,
            &look_again(root, &settled_again)
        ));
    }

    #[test]
    fn looking_again_sees_every_kind_of_change() {
        let dir = project();
        let root = dir.path();
        let changes: [(&str, &dyn Fn()); 10] = [
            ("a tracked file rewritten at once, same size", &|| {
                std::fs::write(root.join("sub/a.txt"), "two\n").unwrap()
            }),
            ("a tracked file rewritten, its mtime put back", &|| {
                let before = std::fs::metadata(root.join("b.txt"))
                    .unwrap()
                    .modified()
                    .unwrap();
                std::fs::write(root.join("b.txt"), "owt\n").unwrap();
                std::fs::File::options()
                    .write(true)
                    .open(root.join("b.txt"))
                    .unwrap()
                    .set_modified(before)
                    .unwrap();
            }),
            ("an untracked file added", &|| {
                std::fs::write(root.join("sub/new.txt"), "x").unwrap()
            }),
            ("a file added to an empty directory", &|| {
                std::fs::write(root.join("empty/new.txt"), "x").unwrap()
            }),
            ("a file deleted", &|| {
                std::fs::remove_file(root.join("b.txt")).unwrap()
            }),
            ("a change staged", &|| run(root, &["add", "-A"])),
            ("a commit made", &|| {
                run(root, &["commit", "-q", "-m", "two"])
            }),
            ("a branch switched to", &|| {
                run(root, &["checkout", "-q", "-b", "other"])
            }),
            (
                "an ignored directory replaced by a file, which git does not ignore",
                &|| {
                    std::fs::remove_dir_all(root.join("target")).unwrap();
                    std::fs::write(root.join("target"), "x").unwrap();
                },
            ),
            ("the ignore rules changed", &|| {
                std::fs::write(root.join(".gitignore"), "*.o\n").unwrap()
            }),
        ];
        std::fs::create_dir_all(root.join("empty")).unwrap();
        for (what, change) in changes {
            let before = settled(root);
            change();
            let after = look_again(root, &before);
            assert!(asked_git(&before, &after), "{what}: git was not asked");
            assert_ne!(after, before, "{what}: not seen");
            assert_eq!(after, observe(root), "{what}");
        }
    }

    #[test]
    fn a_ref_moved_in_a_reftable_repository_is_seen() {
        // With the reftable backend (git 2.45 on), refs live in .git/reftable/, not in refs/:
        // moving the branch back leaves HEAD, the index and the tree as they were.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        run(root, &["init", "-q", "--ref-format=reftable"]);
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        run(root, &["add", "-A"]);
        run(root, &["commit", "-q", "-m", "one"]);
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        run(root, &["commit", "-q", "-am", "two"]);
        let before = settled(root);
        run(root, &["update-ref", "HEAD", "HEAD~1"]);
        let after = look_again(root, &before);
        assert!(asked_git(&before, &after), "git was not asked");
        assert_ne!(after, before);
        assert_eq!(after, observe(root));
    }

    #[test]
    fn a_file_changed_just_before_the_snapshot_makes_the_next_look_ask_git() {
        let dir = project();
        let root = dir.path();
        std::fs::write(root.join("sub/a.txt"), "two\n").unwrap();
        // Taken at once: a.txt changed in the same instant, so a change made now, in the same
        // tick of the clock, might not show.
        let racy = observe(root);
        let again = look_again(root, &racy);
        assert!(asked_git(&racy, &again));
        assert_eq!(again, racy);
    }
}
