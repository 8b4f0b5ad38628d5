//! Atomic file writes: a `kill -9` at any instant leaves the file either old or new, never torn.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes`: temp file in the same directory, fsync, rename, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    commit(vec![stage(path, bytes)?])
}

/// Replaces each file of `files` with its bytes, as [`write_atomic`] would, all at once: their
/// contents are synced in parallel, then they are renamed into place in the order given (whoever
/// sees the last one sees the others), then their directories are synced in parallel. An error
/// names the file it happened to.
pub fn write_all(files: &[(&Path, &[u8])]) -> io::Result<()> {
    place(stage_all(files)?)?.sync()
}

/// [`stage`] for each file of `files`, in parallel (their disk flushes overlap). An error names
/// the file it happened to, and leaves nothing staged.
pub fn stage_all(files: &[(&Path, &[u8])]) -> io::Result<Vec<Staged>> {
    let named = |path: &Path, bytes| {
        stage(path, bytes)
            .map_err(|error| io::Error::new(error.kind(), format!("{}: {error}", path.display())))
    };
    let staged: Vec<io::Result<Staged>> = std::thread::scope(|scope| {
        let others: Vec<_> = files
            .iter()
            .skip(1)
            .map(|&(path, bytes)| scope.spawn(move || named(path, bytes)))
            .collect();
        let first = files.first().map(|&(path, bytes)| named(path, bytes));
        first
            .into_iter()
            .chain(
                others
                    .into_iter()
                    .map(|other| other.join().expect("staging a file panicked")),
            )
            .collect()
    });
    staged.into_iter().collect()
}

/// Creates `path` with `bytes` only if it does not exist, atomically (never a half-written file);
/// returns whether it was written.
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    let staged = stage(path, bytes)?;
    // A hard link fails if the target exists, so the check and the creation are one step; the
    // temporary name goes when `staged` is dropped.
    match fs::hard_link(&staged.temp, path) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(error) => return Err(error),
    }
    // The new name itself must reach the disk, or a power cut could take it away again.
    sync_dirs(&[parent(path).to_path_buf()])?;
    Ok(true)
}

/// A file's new content, written and synced beside it under a temporary name, waiting to be
/// put in its place by [`commit`]. Staging is the slow part (a disk flush), so independent files
/// are staged at the same time: the flushes then overlap. Dropped uncommitted, it leaves nothing.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    path: PathBuf,
}

/// Writes `bytes` to a synced temporary file beside `path`.
pub fn stage(path: &Path, bytes: &[u8]) -> io::Result<Staged> {
    let temp = temp_beside(path)?;
    let staged = Staged {
        temp,
        path: path.to_path_buf(),
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&staged.temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(staged)
}

/// Puts `staged` files in their places, renamed in the order given (whoever sees the last sees
/// the others), then syncs their directories, all at once: the same guarantee as
/// [`write_atomic`] for each file.
pub fn commit(staged: Vec<Staged>) -> io::Result<()> {
    place(staged)?.sync()
}

/// Files renamed into place whose new names are not on the disk until [`Placed::sync`]: every
/// process sees them already, but a power cut could still bring the old files back. Syncing
/// later lets that wait overlap with other work (the agent's run).
#[derive(Debug, Default)]
#[must_use = "the directories must be synced for the new names to survive a power cut"]
pub struct Placed {
    dirs: Vec<PathBuf>,
}

impl Placed {
    /// These and `other`'s, to sync together.
    pub fn and(mut self, other: Placed) -> Placed {
        for dir in other.dirs {
            if !self.dirs.contains(&dir) {
                self.dirs.push(dir);
            }
        }
        self
    }

    /// Syncs the directories, in parallel.
    pub fn sync(self) -> io::Result<()> {
        sync_dirs(&self.dirs)
    }
}

/// Renames `staged` files into their places in the order given (whoever sees the last sees the
/// others); their directories are left to [`Placed::sync`].
pub fn place(staged: Vec<Staged>) -> io::Result<Placed> {
    let mut placed = Placed::default();
    for mut file in staged {
        fs::rename(&file.temp, &file.path)?;
        placed = placed.and(Placed {
            dirs: vec![parent(&file.path).to_path_buf()],
        });
        file.temp = PathBuf::new();
    }
    Ok(placed)
}

/// Syncs `dirs`, so that the names renamed into them reach the disk (a power cut could bring the
/// old files back otherwise); several at once, in parallel.
fn sync_dirs(dirs: &[PathBuf]) -> io::Result<()> {
    match dirs {
        [] => return Ok(()),
        [dir] => return File::open(dir)?.sync_all(),
        _ => {}
    }
    std::thread::scope(|scope| {
        let syncs: Vec<_> = dirs
            .iter()
            .map(|dir| scope.spawn(move || File::open(dir)?.sync_all()))
            .collect();
        syncs
            .into_iter()
            .try_for_each(|sync| sync.join().expect("a directory sync panicked"))
    })
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// A name no other write uses: `.<name>.tmp.<pid>.<n>` beside `path`.
fn temp_beside(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    Ok(parent(path).join(format!(
        ".{}.tmp.{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )))
}

/// Removes the temporary files that writers killed mid-write left in `dir` (`.<name>.tmp.<pid>.<n>`
/// of a process that no longer exists); returns how many. A live process's are left alone, so
/// this is safe while others write.
pub fn sweep_stale_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            writer_pid(&name.to_string_lossy()).is_some_and(|pid| !process_exists(pid))
        })
        .filter(|entry| fs::remove_file(entry.path()).is_ok())
        .count()
}

/// The pid in a temporary file's name `.<name>.tmp.<pid>.<n>`.
fn writer_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix('.')?;
    let (rest, counter) = rest.rsplit_once('.')?;
    let (rest, pid) = rest.rsplit_once('.')?;
    let ok = !counter.is_empty() && counter.bytes().all(|b| b.is_ascii_digit());
    (ok && rest.ends_with(".tmp") && rest.len() > 4)
        .then(|| pid.parse().ok())
        .flatten()
}

fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
    }

    #[test]
    fn create_new_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        assert!(create_new(&path, b"first").unwrap());
        assert!(!create_new(&path, b"second").unwrap());
        assert_eq!(fs::read(&path).unwrap(), b"first");
    }

    #[test]
    fn stale_temps_of_dead_writers_are_swept_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let live = std::process::id();
        let names = [
            format!(".state.json.tmp.{dead}.3"),
            format!(".F-001.md.tmp.{live}.0"),
            "state.json".to_string(),
            format!(".tmp.{dead}.1"),
            ".notes.tmp.x.1".to_string(),
        ];
        for name in &names {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        assert_eq!(sweep_stale_temps(dir.path()), 1);
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut expected = names[1..].to_vec();
        expected.sort();
        assert_eq!(left, expected);
        assert_eq!(sweep_stale_temps(&dir.path().join("missing")), 0);
    }
}
