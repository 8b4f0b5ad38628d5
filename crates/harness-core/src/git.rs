//! What the harness asks of git: how many commits an attempt made in the working directory, and
//! the plumbing of worktrees (see `worktree`).

use std::path::Path;
use std::process::{Command, Stdio};

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
    let output = Command::new("git")
        .arg("-C")
        .arg(workdir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    Some((output.status.success(), text))
}

/// Runs git in `workdir` and returns its trimmed stdout, or an error holding what git said.
pub fn run(workdir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(workdir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| anyhow::anyhow!("cannot run git: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
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

/// A fingerprint of the working tree — HEAD, `git status` and the diff — so that two equal
/// fingerprints mean nothing changed; `None` without a repository.
pub fn fingerprint(workdir: &Path) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    if head(workdir) == Head::NotARepo {
        return None;
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for args in [
        &["rev-parse", "--verify", "-q", "HEAD"][..],
        &["status", "--porcelain", "--untracked-files=all"][..],
        &["diff", "HEAD"][..],
    ] {
        git(workdir, args).map(|(_, out)| out).hash(&mut hasher);
    }
    // The diff does not see inside untracked files: their size and time stand for their content.
    if let Some((_, untracked)) = git(workdir, &["ls-files", "--others", "--exclude-standard"]) {
        for path in untracked.lines() {
            path.hash(&mut hasher);
            if let Ok(meta) = std::fs::metadata(workdir.join(path)) {
                meta.len().hash(&mut hasher);
                meta.modified().ok().hash(&mut hasher);
            }
        }
    }
    Some(hasher.finish())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) {
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
}
