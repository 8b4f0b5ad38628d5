//! File locks: one holder per feature run, and a short exclusive lock around every append to
//! raw.md. A lock file holds a line naming its holder, for the error message.
//!
//! On Linux they are open file description locks (`F_OFD_*`), elsewhere `flock` (fs2). Both belong
//! to the open file, not the process, so a lock taken on the descriptor run.sh passes down stays
//! with run.sh. OFD locks can also be asked about without being taken: with flock, [`is_held`] had
//! to take a free lock for an instant, and a run.sh starting at that very instant was refused (75).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::base::error::LockHeld;
use crate::base::fs::{self, Mode};

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
        sys::lock(&file)?;
        Ok(Lock { file })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = sys::unlock(&self.file);
    }
}

/// Takes the lock on a descriptor inherited from the caller (run.sh's `exec 9>>lockfile`): the
/// lock belongs to the shared open file, so it stays held by the caller after this process exits,
/// until the caller closes it. Writes `holder` into `path`.
#[cfg(unix)]
pub fn acquire_for_parent(fd: i32, path: &Path, what: &str, holder: &str) -> anyhow::Result<()> {
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::MetadataExt;
    // SAFETY: the caller passes a descriptor it opened for us on purpose; we own it from here and
    // closing our copy does not release a lock held through the parent's copy.
    let file = unsafe { File::from_raw_fd(fd) };
    // The shell opened the path following links: it must be the very file found without.
    let (inherited, own) = (file.metadata()?, open_lock_file(path)?.metadata()?);
    if (inherited.dev(), inherited.ino()) != (own.dev(), own.ino()) {
        anyhow::bail!(
            "{}: the lock file changed while it was being opened; run again",
            path.display()
        );
    }
    try_lock(&file, path, what, holder)
}

/// Takes the lock on `file` (an open description of the lock file at `path`) without waiting and
/// writes `holder` into the file; or says who holds it.
fn try_lock(file: &File, path: &Path, what: &str, holder: &str) -> anyhow::Result<()> {
    match sys::try_lock(file) {
        Ok(()) => Ok(open_lock_file(path)
            .and_then(|mut file| write_holder(&mut file, holder))
            .map_err(|error| {
                anyhow::Error::new(error).context(format!("cannot write {}", path.display()))
            })?),
        Err(error) if sys::is_contended(&error) => Err(LockHeld {
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

/// Whether some process holds the lock at `path` right now. On Linux the lock is only asked
/// about, never taken, so a probe cannot make anyone else's attempt to take it fail. A lock that
/// cannot be asked about counts as held: a caller then leaves the feature alone.
pub fn is_held(path: &Path) -> bool {
    match fs::open(path, Mode::Read) {
        Ok(file) => sys::held_elsewhere(&file).unwrap_or(true),
        Err(_) => false,
    }
}

/// Who holds the lock at `path` right now, as the holder wrote it into the file (`another
/// process` when it wrote nothing); `None` when no one does (see [`is_held`]).
pub fn holder(path: &Path) -> Option<String> {
    is_held(path).then(|| match read_holder(path) {
        holder if holder.is_empty() => "another process".to_string(),
        holder => holder,
    })
}

fn open_lock_file(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::open(path, Mode::ReadWrite)
}

fn write_holder(file: &mut File, holder: &str) -> io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{holder}\n").as_bytes())
}

fn read_holder(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = fs::open(path, Mode::Read) {
        let _ = Read::by_ref(&mut file).take(4096).read_to_string(&mut text);
    }
    text.trim().to_string()
}

/// A description of this process for lock files: `pid 123 (worker F-001, since <time>)`.
pub fn describe_holder(pid: u32, program: &str, since: &str) -> String {
    format!("pid {pid} ({program}, since {since})")
}

/// Open file description locks on the whole file.
#[cfg(target_os = "linux")]
mod sys {
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;

    /// A request for the whole file (`l_start` and `l_len` 0); `l_pid` must be 0 for OFD locks.
    fn whole_file(kind: libc::c_int) -> libc::flock {
        // SAFETY: a plain C struct, for which all zeros is a valid value.
        let mut request: libc::flock = unsafe { std::mem::zeroed() };
        request.l_type = kind as libc::c_short;
        request.l_whence = libc::SEEK_SET as libc::c_short;
        request
    }

    fn fcntl(file: &File, command: libc::c_int, request: &mut libc::flock) -> io::Result<()> {
        loop {
            // SAFETY: a descriptor we own and a request that outlives the call.
            if unsafe { libc::fcntl(file.as_raw_fd(), command, request as *mut libc::flock) } != -1
            {
                return Ok(());
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }

    pub fn try_lock(file: &File) -> io::Result<()> {
        fcntl(file, libc::F_OFD_SETLK, &mut whole_file(libc::F_WRLCK))
    }

    pub fn lock(file: &File) -> io::Result<()> {
        fcntl(file, libc::F_OFD_SETLKW, &mut whole_file(libc::F_WRLCK))
    }

    pub fn unlock(file: &File) -> io::Result<()> {
        fcntl(file, libc::F_OFD_SETLK, &mut whole_file(libc::F_UNLCK))
    }

    /// Whether another open file holds the lock, asked with `F_OFD_GETLK` (nothing is taken).
    pub fn held_elsewhere(file: &File) -> io::Result<bool> {
        let mut request = whole_file(libc::F_WRLCK);
        fcntl(file, libc::F_OFD_GETLK, &mut request)?;
        Ok(request.l_type != libc::F_UNLCK as libc::c_short)
    }

    pub fn is_contended(error: &io::Error) -> bool {
        matches!(error.raw_os_error(), Some(libc::EAGAIN | libc::EACCES))
    }
}

/// flock, where there are no OFD locks: a probe has to take a free lock for an instant.
#[cfg(not(target_os = "linux"))]
mod sys {
    use std::fs::File;
    use std::io;

    use fs2::FileExt;

    pub fn try_lock(file: &File) -> io::Result<()> {
        file.try_lock_exclusive()
    }

    pub fn lock(file: &File) -> io::Result<()> {
        file.lock_exclusive()
    }

    pub fn unlock(file: &File) -> io::Result<()> {
        FileExt::unlock(file)
    }

    pub fn held_elsewhere(file: &File) -> io::Result<bool> {
        match file.try_lock_exclusive() {
            Ok(()) => FileExt::unlock(file).map(|()| false),
            Err(error) if is_contended(&error) => Ok(true),
            Err(error) => Err(error),
        }
    }

    pub fn is_contended(error: &io::Error) -> bool {
        error.kind() == io::ErrorKind::WouldBlock
            || error.raw_os_error() == fs2::lock_contended_error().raw_os_error()
    }
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

    #[test]
    fn a_probe_never_makes_taking_the_lock_fail() {
        // With flock, is_held took a free lock for an instant: this loop was refused within a few
        // attempts.
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::Arc;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locks/F-001.lock");
        drop(Lock::try_acquire(&path, "F-001", "setup").unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let probes = Arc::new(AtomicU64::new(0));
        let prober = {
            let (path, stop, probes) = (path.clone(), stop.clone(), probes.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    is_held(&path);
                    probes.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        while probes.load(Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        let refused = (0..2000)
            .filter(|_| Lock::try_acquire(&path, "F-001", "pid 2").is_err())
            .count();
        stop.store(true, Ordering::Relaxed);
        prober.join().unwrap();
        assert_eq!(refused, 0, "taking a free lock failed while it was probed");
        assert!(
            probes.load(Ordering::Relaxed) > 1,
            "the probes ran alongside"
        );
    }

    #[test]
    fn a_lock_taken_through_a_shared_descriptor_outlives_the_taker() {
        // run.sh opens the lock file and `worker --loop --lock-fd 9` takes the lock on that open
        // file, then exits: the lock must stay with the open file, not with the process that
        // took it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("F-001.lock");
        let shared = open_lock_file(&path).unwrap();
        {
            use std::os::fd::IntoRawFd;
            let taker = shared.try_clone().unwrap();
            acquire_for_parent(taker.into_raw_fd(), &path, "F-001", "pid 1 (run.sh F-001)")
                .unwrap();
        }
        assert!(is_held(&path));
        let error = Lock::try_acquire(&path, "F-001", "pid 2").unwrap_err();
        assert!(error.downcast_ref::<LockHeld>().is_some());
        drop(shared);
        // Another test thread's fork may hold a copy of the descriptor until its exec: the lock
        // goes with the last copy, within moments.
        let released = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(2));
            !is_held(&path)
        });
        assert!(
            released,
            "the lock outlived the last descriptor of its open file"
        );
    }
}
