//! Linked worktrees as git keeps them — a directory whose `.git` file names an admin directory
//! `<common dir>/worktrees/<id>` (holding `gitdir`, `HEAD`, the index, and `locked` while
//! `git worktree add` is under way) — and their repair after a kill. A kill can leave: a
//! registration whose directory is gone ("a missing but already registered worktree"), a stale one
//! holding the branch ("already used by worktree"), one still locked `initializing` over a
//! half-made checkout, a directory whose admin directory is gone ("not a git repository"), and
//! lock files no process holds. [`ensure`] turns any of these into a sound worktree of the branch
//! without losing work; [`remove`] removes one whatever its state. The caller holds the lock that
//! serialises git's bookkeeping of worktrees.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::stale::{self, canonical};
use super::{branch_exists, common_dir, run};

/// One registration in `<common dir>/worktrees/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// Its admin directory.
    pub admin: PathBuf,
    /// The worktree's directory, as the registration names it (canonical).
    pub checkout: Option<PathBuf>,
    /// The contents of its HEAD (`ref: refs/heads/…` or a commit).
    pub head: String,
    /// `git worktree add` never finished: the registration is still locked `initializing`.
    pub initializing: bool,
}

impl Registration {
    /// Whether this registration's worktree is checked out on `branch`.
    fn holds(&self, branch: &str) -> bool {
        self.head.trim() == format!("ref: refs/heads/{branch}")
    }

    /// Whether its worktree's directory is gone.
    fn is_missing(&self) -> bool {
        self.checkout.as_ref().is_none_or(|dir| !dir.exists())
    }
}

/// Every registration of the repository whose common directory is `common`.
pub fn registrations(common: &Path) -> Vec<Registration> {
    let read = |path: PathBuf| std::fs::read_to_string(path).unwrap_or_default();
    let mut found: Vec<Registration> = std::fs::read_dir(common.join("worktrees"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| {
            let admin = entry.path();
            let gitdir = read(admin.join("gitdir"));
            let checkout = Path::new(gitdir.trim()).parent().map(canonical);
            Registration {
                checkout,
                head: read(admin.join("HEAD")),
                initializing: read(admin.join("locked")).trim() == "initializing",
                admin,
            }
        })
        .collect();
    found.sort_by(|a, b| a.admin.cmp(&b.admin));
    found
}

/// The admin directory the `.git` file of the worktree at `dir` names, if it names one.
fn admin_named_by(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join(".git")).ok()?;
    let named = text.trim().strip_prefix("gitdir:")?.trim();
    Some(canonical(&dir.join(named)))
}

/// What [`ensure`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A sound worktree of the branch (stale lock files, if any, removed).
    Sound,
    /// No worktree: it was made.
    Made,
    /// A worktree a kill had broken: it was made again, the work in it kept.
    Repaired,
}

/// The directory beside `path` where the work of a broken worktree waits while the worktree is
/// made again (a name no feature id can take: ids never start with a dot).
pub fn salvage_dir(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.salvage"))
}

/// Makes `path` a sound worktree of `branch` for the repository whose main working tree is
/// `main`, creating the branch from `start` if it does not exist, and repairing whatever a kill
/// left (see the module's documentation). Commits are never at risk (they are in the branch);
/// files an agent left uncommitted in a broken worktree are moved into the new one as they were.
/// A half-made checkout (the registration still `initializing`) holds no work and is discarded.
pub fn ensure(main: &Path, path: &Path, branch: &str, start: &str) -> anyhow::Result<Found> {
    let common = common_dir(main)?;
    let target = canonical(path);
    let all = registrations(&common);
    let ours: Vec<&Registration> = all
        .iter()
        .filter(|r| r.checkout.as_deref() == Some(target.as_path()))
        .collect();
    let sound = match ours.as_slice() {
        [only] => {
            !only.initializing
                && only.admin.join("HEAD").is_file()
                && admin_named_by(path).is_some_and(|admin| admin == canonical(&only.admin))
        }
        _ => false,
    };
    // Registrations of missing directories that hold the branch keep git from checking it out
    // anywhere, and from deleting it.
    let stale_holders = all
        .iter()
        .filter(|r| r.checkout.as_deref() != Some(target.as_path()))
        .filter(|r| r.is_missing() && r.holds(branch));
    for registration in stale_holders {
        remove_admin(&registration.admin)?;
    }
    let salvage = salvage_dir(path);
    // It sits among the state, where an agent could plant a link: one is never followed.
    if salvage.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
        std::fs::remove_file(&salvage)
            .with_context(|| format!("cannot remove {}", salvage.display()))?;
    }
    // A git killed while moving the branch (a commit in the worktree, its making) left its ref
    // locked; git working in the main tree or in this worktree may hold it.
    stale::remove_stale(
        &[ref_lock(&common, branch)],
        main,
        &checkouts_but(&all, &target),
    );
    let found = if sound {
        Found::Sound
    } else {
        let half_made = ours.iter().any(|r| r.initializing);
        let had_work = set_aside(path, &salvage, half_made)?;
        for registration in &ours {
            remove_admin(&registration.admin)?;
        }
        add(main, path, branch, start, salvage.exists())?;
        if ours.is_empty() && !had_work && !salvage.exists() {
            Found::Made
        } else {
            Found::Repaired
        }
    };
    if salvage.exists() {
        restore(&salvage, path)?;
    }
    clear_stale_locks(path);
    Ok(found)
}

/// `git worktree add` of `branch` (made from `start` when it does not exist) at `path`; without
/// its checkout when work set aside is to be moved in instead.
fn add(
    main: &Path,
    path: &Path,
    branch: &str,
    start: &str,
    no_checkout: bool,
) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let path_text = path.to_string_lossy().into_owned();
    let mut args = vec!["worktree", "add"];
    if no_checkout {
        args.push("--no-checkout");
    }
    if branch_exists(main, branch) {
        args.extend([path_text.as_str(), branch]);
    } else {
        args.extend(["-b", branch, path_text.as_str(), start]);
    }
    run(main, &args)?;
    Ok(())
}

/// Moves the directory of a broken worktree out of the way: to `salvage` if it holds work (files
/// other than `.git`, in a worktree that was finished), else deleted. Returns whether work was
/// set aside. A salvage already there (from a repair killed before it ended) is kept, and what it
/// lacks is added to it.
fn set_aside(path: &Path, salvage: &Path, half_made: bool) -> anyhow::Result<bool> {
    let entries: Vec<PathBuf> = std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|entry| entry.file_name().is_some_and(|name| name != ".git"))
        .collect();
    let keep = !half_made && !entries.is_empty();
    if keep {
        if salvage.exists() {
            for entry in &entries {
                let into = salvage.join(entry.file_name().unwrap_or_default());
                if !into.exists() {
                    rename(entry, &into)?;
                }
            }
        } else {
            rename(path, salvage)?;
        }
    }
    if path.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(path)
            .with_context(|| format!("cannot remove the broken worktree {}", path.display()))?;
    }
    Ok(keep)
}

/// Moves what `salvage` holds into the worktree at `path` (replacing what the checkout put
/// there), lets the index match HEAD again without touching a file, and deletes `salvage`.
fn restore(salvage: &Path, path: &Path) -> anyhow::Result<()> {
    let entries =
        std::fs::read_dir(salvage).with_context(|| format!("cannot read {}", salvage.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", salvage.display()))?;
        let into = path.join(entry.file_name());
        if entry.file_name() == ".git" {
            continue;
        }
        if let Ok(meta) = into.symlink_metadata() {
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(&into)
            } else {
                std::fs::remove_file(&into)
            };
            removed.with_context(|| format!("cannot replace {}", into.display()))?;
        }
        rename(&entry.path(), &into)?;
    }
    run(path, &["reset", "-q"])?;
    std::fs::remove_dir_all(salvage)
        .with_context(|| format!("cannot remove {}", salvage.display()))?;
    Ok(())
}

fn rename(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::rename(from, to)
        .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))
}

/// Deletes a registration's admin directory (what `git worktree prune` does for a stale one).
fn remove_admin(admin: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(admin) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => {
            Err(error).with_context(|| format!("cannot remove git's record {}", admin.display()))
        }
    }
}

/// The directories of the linked worktrees of `registrations` but `tree` (canonical): where git
/// processes work on other trees than the one whose locks are cleared.
pub fn checkouts_but(registrations: &[Registration], tree: &Path) -> Vec<PathBuf> {
    registrations
        .iter()
        .filter_map(|r| r.checkout.clone())
        .filter(|checkout| checkout != tree)
        .collect()
}

/// The lock file of the ref of `branch`.
pub fn ref_lock(common: &Path, branch: &str) -> PathBuf {
    common.join("refs/heads").join(format!("{branch}.lock"))
}

/// Removes the lock files a killed git left in the worktree at `path` (its admin directory's
/// `index.lock`, `HEAD.lock`…) when no live git process may hold them.
fn clear_stale_locks(path: &Path) {
    if let Some(admin) = admin_named_by(path) {
        // A worktree has no worktree nested in it.
        stale::remove_stale(&stale::locks_in(&admin), path, &[]);
    }
}

/// Removes the worktree at `path` and git's record of it, whatever a kill left of them: git's
/// own removal first, and where git refuses (a half-removed or broken worktree), the directory
/// and its registration directly. Its uncommitted work goes too: call it once the work is merged.
pub fn remove(main: &Path, path: &Path) -> anyhow::Result<()> {
    let path_text = path.to_string_lossy().into_owned();
    if path.exists()
        && run(
            main,
            &["worktree", "remove", "--force", "--force", &path_text],
        )
        .is_ok()
    {
        return Ok(());
    }
    if path.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(path)
            .with_context(|| format!("cannot remove the worktree {}", path.display()))?;
    }
    let target = canonical(path);
    let common = common_dir(main)?;
    for registration in registrations(&common) {
        if registration.checkout.as_deref() == Some(target.as_path()) {
            remove_admin(&registration.admin)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::git::tests::run as git;

    fn repository() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q"]);
        std::fs::write(main.join("a.txt"), "a\n").unwrap();
        git(&main, &["add", "-A"]);
        git(&main, &["commit", "-q", "-m", "one"]);
        (dir, main)
    }

    #[test]
    fn a_worktree_is_made_once_then_found_sound() {
        let (_dir, main) = repository();
        let path = main.join(".harness/worktrees/F-1");
        assert_eq!(
            ensure(&main, &path, "harness/F-1", "HEAD").unwrap(),
            Found::Made
        );
        assert!(path.join("a.txt").is_file());
        assert_eq!(
            ensure(&main, &path, "harness/F-1", "HEAD").unwrap(),
            Found::Sound
        );
        remove(&main, &path).unwrap();
        assert!(!path.exists());
        assert!(registrations(&common_dir(&main).unwrap()).is_empty());
    }

    #[test]
    fn a_worktree_whose_record_is_gone_is_made_again_with_its_work() {
        let (_dir, main) = repository();
        let path = main.join(".harness/worktrees/F-1");
        ensure(&main, &path, "harness/F-1", "HEAD").unwrap();
        std::fs::write(path.join("new.txt"), "work\n").unwrap();
        std::fs::remove_file(path.join("a.txt")).unwrap();
        std::fs::remove_dir_all(main.join(".git/worktrees/F-1")).unwrap();
        assert_eq!(
            ensure(&main, &path, "harness/F-1", "HEAD").unwrap(),
            Found::Repaired
        );
        assert_eq!(
            std::fs::read_to_string(path.join("new.txt")).unwrap(),
            "work\n"
        );
        assert!(!path.join("a.txt").exists(), "a deletion is work too");
        let status = run(&path, &["status", "--porcelain"]).unwrap();
        // (The output is trimmed: ` D a.txt` loses its first space.)
        assert_eq!(status, "D a.txt\n?? new.txt");
        assert!(!salvage_dir(&path).exists());
    }

    #[test]
    fn a_half_made_worktree_and_a_stale_holder_of_the_branch_are_replaced() {
        let (_dir, main) = repository();
        let path = main.join(".harness/worktrees/F-1");
        ensure(&main, &path, "harness/F-1", "HEAD").unwrap();
        let admin = main.join(".git/worktrees/F-1");
        std::fs::write(admin.join("locked"), "initializing").unwrap();
        std::fs::remove_file(path.join("a.txt")).unwrap();
        // A second, stale registration holding the branch.
        let stale = main.join(".git/worktrees/F-11");
        std::fs::create_dir_all(&stale).unwrap();
        std::fs::write(stale.join("gitdir"), "/nonexistent/F-1/.git\n").unwrap();
        std::fs::write(stale.join("HEAD"), "ref: refs/heads/harness/F-1\n").unwrap();
        assert_eq!(
            ensure(&main, &path, "harness/F-1", "HEAD").unwrap(),
            Found::Repaired
        );
        assert!(path.join("a.txt").is_file(), "checked out afresh");
        assert!(!stale.exists());
        assert_eq!(run(&path, &["status", "--porcelain"]).unwrap(), "");
    }
}
