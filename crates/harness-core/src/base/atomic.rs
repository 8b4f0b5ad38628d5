//! Atomic file writes: a `kill -9` at any instant leaves the file either old or new, never torn.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes`: temp file in the same directory, fsync, rename, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    publish(path, bytes, |temp, path| fs::rename(temp, path)).map(|_| ())
}

/// Creates `path` with `bytes` only if it does not exist, atomically (never a half-written file);
/// returns whether it was written.
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    // A hard link fails if the target exists, so the check and the creation are one step.
    publish(path, bytes, |temp, path| fs::hard_link(temp, path)).or_else(|error| {
        match error.kind() {
            io::ErrorKind::AlreadyExists => Ok(false),
            _ => Err(error),
        }
    })
}

// Writing several files side by side (their fsyncs in parallel threads) was tried and measured:
// on ext4 here, fsyncs from two threads take longer than the same fsyncs one after the other (each
// waits for its own journal commit), and the threads cost CPU. So files are written in turn.

/// Writes `bytes` to a synced temp file beside `path`, moves it into place with `place`, syncs the
/// directory, and never leaves the temp file behind.
fn publish(
    path: &Path,
    bytes: &[u8],
    place: impl FnOnce(&Path, &Path) -> io::Result<()>,
) -> io::Result<bool> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let temp = dir.join(format!(
        ".{}.tmp.{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        place(&temp, path)?;
        // The new name itself must reach the disk, or a power cut could bring the old file back.
        File::open(dir)?.sync_all()
    })();
    // After a rename the temp name is gone already; after a hard link (or a failure) it is not.
    let _ = fs::remove_file(&temp);
    result.map(|()| true)
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
