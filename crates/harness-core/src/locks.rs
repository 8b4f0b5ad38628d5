//! File locks (fs2, i.e. `flock`): one holder per feature run, and a short exclusive lock around
//! every append to raw.md. A lock file holds a line naming its holder, for the error message.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use fs2::FileExt;

use crate::error::LockHeld;

/// A held lock; released when dropped (or when the process dies, however it dies).
#[derive(Debug)]
pub struct Lock {
    file: File,
}

impl Lock {
    /// Takes the lock at `path` without waiting, writing `holder` into the file; fails with
    /// [`LockHeld`] (naming the current holder) when another process has it.
    pub fn try_acquire(path: &Path, what: &str, holder: &str) -> anyhow::Result<Lock> {
        let file = open_lock_file(path)?;
        try_lock(&file, path, what, holder)?;
        Ok(Lock { file })
    }

    /// Takes the lock at `path`, waiting for it (for short critical sections such as an append).
    pub fn acquire(path: &Path) -> io::Result<Lock> {
        let file = open_lock_file(path)?;
        file.lock_exclusive()?;
        Ok(Lock { file })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
    }
}

/// Takes the lock on a descriptor inherited from the caller (run.sh's `exec 9>>lockfile`): the
/// lock belongs to the shared open file, so it stays held by the caller after this process exits,
/// until the caller closes it. Writes `holder` into `path`.
#[cfg(unix)]
pub fn acquire_for_parent(fd: i32, path: &Path, what: &str, holder: &str) -> anyhow::Result<()> {
    use std::os::fd::FromRawFd;
    // SAFETY: the caller passes a descriptor it opened for us on purpose; we own it from here and
    // closing our copy does not release a flock held through the parent's copy.
    let file = unsafe { File::from_raw_fd(fd) };
    try_lock(&file, path, what, holder)
}

/// Takes the flock on `file` (an open description of the lock file at `path`) without waiting and
/// writes `holder` into the file; or says who holds it.
fn try_lock(file: &File, path: &Path, what: &str, holder: &str) -> anyhow::Result<()> {
    match file.try_lock_exclusive() {
        Ok(()) => Ok(write_holder(&mut open_lock_file(path)?, holder)?),
        Err(error) if is_contended(&error) => Err(LockHeld {
            what: what.to_string(),
            path: path.to_path_buf(),
            holder: read_holder(path),
        }
        .into()),
        Err(error) => {
            Err(anyhow::Error::new(error).context(format!("cannot lock {}", path.display())))
        }
    }
}

/// Whether some process holds the lock at `path` right now (without taking it for long).
pub fn is_held(path: &Path) -> bool {
    match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => match file.try_lock_exclusive() {
            Ok(()) => {
                let _ = FileExt::unlock(&file);
                false
            }
            Err(_) => true,
        },
        Err(_) => false,
    }
}

fn open_lock_file(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

fn is_contended(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::WouldBlock
        || error.raw_os_error() == fs2::lock_contended_error().raw_os_error()
}

fn write_holder(file: &mut File, holder: &str) -> io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{holder}\n").as_bytes())
}

fn read_holder(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let _ = Read::by_ref(&mut file).take(4096).read_to_string(&mut text);
    }
    text.trim().to_string()
}

/// A description of this process for lock files: `pid 123 (worker F-001, since <time>)`.
pub fn describe_holder(pid: u32, program: &str, since: &str) -> String {
    format!("pid {pid} ({program}, since {since})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_and_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks/F-001.lock");
        let first = Lock::try_acquire(&path, "F-001", "pid 1 (run.sh F-001)").unwrap();
        assert!(is_held(&path));
        let error = Lock::try_acquire(&path, "F-001", "pid 2").unwrap_err();
        let held = error.downcast_ref::<LockHeld>().expect("LockHeld");
        assert_eq!(held.holder, "pid 1 (run.sh F-001)");
        assert!(error
            .to_string()
            .contains("F-001 is already being run by pid 1"));
        drop(first);
        assert!(!is_held(&path));
        Lock::try_acquire(&path, "F-001", "pid 2").unwrap();
    }
}
