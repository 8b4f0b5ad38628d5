//! Atomic file writes: a `kill -9` at any instant leaves the file either old or new, never torn.
//! [`replace_if_unchanged`] also never overwrites bytes its caller did not read: a file people
//! edit by hand (summary.md, MEMORY.md) is swapped with the new one in a single step, and what
//! came out is checked to be what was read, or put back.
//!
//! Every write goes through a temp file beside its target (`.<name>.tmp.<pid>.<n>`, or
//! `.<name>.swap.<pid>.<new>.<old>` for a checked replacement, named after the hashes of its
//! bytes and of the bytes it expects to replace); [`sweep_stale_temps`] clears what a killed
//! writer left, putting back a hand edit a killed replacement had swapped out.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::base::fs::{Dir, Kind, Mode};
use crate::base::hash::stable_hash;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Whether a write waits for the disk. Against a kill, writing a temp file and renaming it is
/// enough: the file is old or new. Flushing (fsync) protects against a power cut or a kernel
/// crash too, and costs a wait for the disk: the durability policy in DESIGN.md says which files
/// are flushed (the run state, raw.md) and which are not (an attempt's logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// The new content and its name reach the disk before the write returns.
    Yes,
    /// Written and renamed, left for the system to write out: after a power cut the file may be
    /// its old version, or missing if it was new.
    No,
}

/// Replaces `path` with `bytes`: temp file in the same directory, fsync, rename, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, Flush::Yes)
}

/// Replaces `path` with `bytes` as [`write_atomic`] does, flushed or not.
pub fn replace(path: &Path, bytes: &[u8], flush: Flush) -> io::Result<()> {
    let (dir, name) = Dir::parent_of(path)?;
    let temp = temp_name(&name);
    let result = write_temp(&dir, &temp, bytes, flush).and_then(|()| {
        dir.refuse_link(&name)?;
        dir.rename(&temp, &name)?;
        match flush {
            // The new name itself must reach the disk, or a power cut could bring the old file back.
            Flush::Yes => dir.sync(),
            Flush::No => Ok(()),
        }
    });
    if result.is_err() {
        let _ = dir.remove_file(&temp);
    }
    result
}

/// Replaces `path` with `value` as pretty JSON and a final newline, atomically ([`write_atomic`]),
/// Appends `text` (whole lines) to the file at `path` under the lock at `lock`, in one write, so
/// that lines from processes appending at once never interleave or tear; a file a hand edit
/// left without its final newline gets one first. A write that does not all fit (a full disk, a
/// file-size limit) is taken back: the file never keeps a torn line.
pub fn append_lines(path: &Path, lock: &Path, text: &str) -> io::Result<()> {
    let _lock = crate::base::locks::Lock::acquire(lock)?;
    let mut file = crate::base::fs::open(path, Mode::Append)?;
    let length_before = file.metadata()?.len();
    let mut text = text.to_string();
    if length_before > 0 && !ends_with_newline(path, length_before)? {
        text.insert(0, '\n');
    }
    if let Err(error) = file.write_all(text.as_bytes()) {
        // Under the lock, nobody appended since.
        let _ = file.set_len(length_before);
        return Err(error);
    }
    file.sync_data()
}

fn ends_with_newline(path: &Path, len: u64) -> io::Result<bool> {
    let mut last = [0u8; 1];
    // The appending descriptor is write-only.
    crate::base::fs::open(path, Mode::Read)?.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

/// creating its directory first.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> io::Result<()> {
    replace_json(path, value, Flush::Yes)
}

/// [`write_json`], flushed or not.
pub fn replace_json(path: &Path, value: &impl serde::Serialize, flush: Flush) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        crate::base::fs::create_dir_all(dir)?;
    }
    let mut json = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    json.push(b'\n');
    replace(path, &json, flush)
}

/// Creates `path` with `bytes` only if it does not exist, atomically (never a half-written file);
/// returns whether it was written.
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    let (dir, name) = Dir::parent_of(path)?;
    let temp = temp_name(&name);
    let result = write_temp(&dir, &temp, bytes, Flush::Yes)
        .and_then(|()| place_if_absent(&dir, &temp, &name));
    let _ = dir.remove_file(&temp);
    result.map(|placed| placed && dir.sync().is_ok())
}

/// Links `temp` as `name` unless `name` exists; returns whether it did. A hard link fails if the
/// target exists, so the check and the creation are one step.
fn place_if_absent(dir: &Dir, temp: &OsStr, name: &OsStr) -> io::Result<bool> {
    match dir.link(temp, name) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            dir.refuse_link(name).map(|()| false)
        }
        Err(error) => Err(error),
    }
}

// Writing several files side by side (their fsyncs in parallel threads) was tried and measured:
// on ext4 here, fsyncs from two threads take longer than the same fsyncs one after the other (each
// waits for its own journal commit), and the threads cost CPU. So files are written in turn.

/// Writes `bytes` to the new file `temp` in `dir`, synced unless told not to.
fn write_temp(dir: &Dir, temp: &OsStr, bytes: &[u8], flush: Flush) -> io::Result<()> {
    let mut file = dir.open(temp, Mode::CreateNew)?;
    file.write_all(bytes)?;
    match flush {
        Flush::Yes => file.sync_all(),
        Flush::No => Ok(()),
    }
}

fn temp_name(name: &OsStr) -> OsString {
    let counter = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        ".{}.tmp.{}.{counter}",
        name.to_string_lossy(),
        std::process::id()
    )
    .into()
}

fn swap_name(name: &OsStr, new: &[u8], expected: &[u8]) -> OsString {
    format!(
        ".{}.swap.{}.{:016x}.{:016x}",
        name.to_string_lossy(),
        std::process::id(),
        stable_hash(new),
        stable_hash(expected)
    )
    .into()
}

/// What [`replace_if_unchanged`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replaced {
    /// The file holds the new bytes, and held exactly the expected ones until then.
    Done,
    /// Someone changed the file since its bytes were read: it was left as they made it.
    Changed,
    /// Someone changed the file during the replacement, then again: it holds their latest
    /// version, and the one before was kept at this path.
    Kept(PathBuf),
}

/// Replaces `path` with `bytes` only if it holds exactly `expected` (`None`: only if it does not
/// exist), and never loses what another process writes meanwhile, even with no lock (an editor).
///
/// The new file is swapped in (Linux `renameat2(RENAME_EXCHANGE)`), and what came out is let go
/// only if it is the very file that was read, still holding `expected` and not opened for writing
/// since (a read lease on it says so); otherwise it goes back in place ([`Replaced::Changed`]).
/// Where the system cannot swap, the check is followed by a plain rename: an editor's own rename
/// in the instant between the two is then lost (the README says so).
pub fn replace_if_unchanged(
    path: &Path,
    expected: Option<&[u8]>,
    bytes: &[u8],
) -> io::Result<Replaced> {
    let (dir, name) = Dir::parent_of(path)?;
    dir.refuse_link(&name)?;
    let temp = swap_name(&name, bytes, expected.unwrap_or_default());
    let result = write_swap(&dir, &temp, &name, bytes).and_then(|()| match expected {
        None => place_if_absent(&dir, &temp, &name).map(|placed| match placed {
            true => Replaced::Done,
            false => Replaced::Changed,
        }),
        Some(expected) => swap_in(&dir, &temp, &name, expected),
    });
    // Left with the new bytes, `temp` goes; left with others (an error after the swap), it stays
    // for the sweep to put back.
    if let Ok(Some(held)) = read_if_present(&dir, &temp) {
        if held == bytes {
            let _ = dir.remove_file(&temp);
        }
    }
    result.and_then(|replaced| dir.sync().map(|()| replaced))
}

/// Writes the new bytes under a plain temp name, then renames them to the swap name `swap`: a
/// swap file always holds whole bytes, so the sweep can tell a hand edit swapped out from a
/// writer killed mid-write (which leaves only a temp file, swept as such).
fn write_swap(dir: &Dir, swap: &OsStr, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
    let temp = temp_name(name);
    let result = write_temp(dir, &temp, bytes, Flush::Yes).and_then(|()| dir.rename(&temp, swap));
    if result.is_err() {
        let _ = dir.remove_file(&temp);
    }
    result
}

fn read_if_present(dir: &Dir, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
    match dir.open(name, Mode::Read) {
        Ok(mut file) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut bytes)?;
            Ok(Some(bytes))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Checks `name` against `expected`, then swaps `temp` in (see [`replace_if_unchanged`]). An
/// error before the swap leaves `temp` holding the new bytes; after it, [`settle`] decides.
fn swap_in(dir: &Dir, temp: &OsStr, name: &OsStr, expected: &[u8]) -> io::Result<Replaced> {
    // Watched from the start, so that a writer that opens it once it is in place is seen.
    let new = Watch::open(dir, temp)?;
    let old = match Watch::open(dir, name) {
        Ok(old) => old,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Replaced::Changed),
        // Someone keeps it open for writing: an edit under way.
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(Replaced::Changed),
        Err(error) => return Err(error),
    };
    if old.bytes()? != expected || old.broken() {
        return Ok(Replaced::Changed);
    }
    if !dir.exchange(temp, name)? {
        // No exchange on this system or filesystem: checked, then renamed over.
        if old.broken() {
            return Ok(Replaced::Changed);
        }
        dir.rename(temp, name)?;
        return Ok(Replaced::Done);
    }
    settle(dir, temp, name, expected, &old, &new)
}

/// After the swap, `temp` holds what `name` held an instant before. It is let go only if it is
/// the file that was checked, unchanged and not opened for writing since; otherwise it goes back
/// in place, or, if the new file was opened for writing too, is kept beside it.
fn settle(
    dir: &Dir,
    temp: &OsStr,
    name: &OsStr,
    expected: &[u8],
    old: &Watch,
    new: &Watch,
) -> io::Result<Replaced> {
    if old.is(dir, temp)? && old.bytes()? == expected && !old.broken() {
        // Removed under the lease, which is looked at once more: a writer that opened the old
        // file in the instant between is waiting for it.
        dir.remove_file(temp)?;
        if old.broken() {
            return rescue(dir, name, old, expected);
        }
        return Ok(Replaced::Done);
    }
    if !new.broken() {
        dir.exchange(temp, name)?;
        return Ok(Replaced::Changed);
    }
    keep(dir, temp, name).map(Replaced::Kept)
}

/// A writer opened the old file in the instant between the last check and its removal: once the
/// lease goes, it writes there. Let it finish, and keep what it wrote beside the file.
fn rescue(dir: &Dir, name: &OsStr, old: &Watch, expected: &[u8]) -> io::Result<Replaced> {
    old.release();
    std::thread::sleep(BUSY_WAIT);
    // Granted again once the writer has closed the file (or not at all after a while).
    let _ = lease(&old.file);
    let bytes = old.bytes()?;
    if bytes == expected {
        return Ok(Replaced::Done);
    }
    let temp = temp_name(name);
    write_temp(dir, &temp, &bytes, Flush::Yes)?;
    keep(dir, &temp, name).map(Replaced::Kept)
}

/// Moves the leftover `temp` to a visible name beside `name` (`<name>.edited.<pid>`, a number
/// added if that is taken); returns its path.
fn keep(dir: &Dir, temp: &OsStr, name: &OsStr) -> io::Result<PathBuf> {
    let base = format!("{}.edited.{}", name.to_string_lossy(), std::process::id());
    for n in 1.. {
        let kept: OsString = match n {
            1 => base.clone().into(),
            n => format!("{base}.{n}").into(),
        };
        match dir.link(temp, &kept) {
            Ok(()) => {
                dir.remove_file(temp)?;
                return Ok(dir.path().join(kept));
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
    unreachable!("some name is free")
}

/// How often, and how long apart, a file another process holds open for writing is asked about
/// again before it counts as being edited.
const BUSY_TRIES: u32 = 40;
const BUSY_WAIT: Duration = Duration::from_millis(25);

/// A file open for reading under a read lease, where the system grants one (Linux): a process
/// that opens it for writing from then on breaks the lease, which is how an in-place edit made
/// during a replacement is seen. Without a lease, only its bytes and identity are checked.
struct Watch {
    file: File,
    leased: bool,
}

impl Watch {
    /// `name` in `dir`, watched; `WouldBlock` while another process holds it open for writing.
    fn open(dir: &Dir, name: &OsStr) -> io::Result<Watch> {
        let file = dir.open(name, Mode::Read)?;
        let leased = lease(&file)?;
        Ok(Watch { file, leased })
    }

    /// Its bytes now.
    fn bytes(&self) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        let mut chunk = vec![0; 64 * 1024];
        loop {
            match self.file.read_at(&mut chunk, bytes.len() as u64)? {
                0 => return Ok(bytes),
                read => bytes.extend_from_slice(&chunk[..read]),
            }
        }
    }

    /// Whether a process opened it for writing since it was watched.
    fn broken(&self) -> bool {
        self.leased && !lease_held(&self.file)
    }

    /// Gives the lease up (a writer waiting for it goes on).
    fn release(&self) {
        if self.leased {
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                // SAFETY: fcntl on a descriptor we own, with integer arguments.
                unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
            }
        }
    }

    /// Whether `name` in `dir` is this very file.
    fn is(&self, dir: &Dir, name: &OsStr) -> io::Result<bool> {
        let metadata = self.file.metadata()?;
        Ok(dir.identity(name)? == Some((metadata.dev(), metadata.ino())))
    }
}

/// Takes a read lease on `file`: `Ok(false)` where the system grants none, `WouldBlock` while
/// another process keeps the file open for writing.
#[cfg(target_os = "linux")]
fn lease(file: &File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // F_SETSIG of <fcntl.h> (the same on every Linux architecture), which the libc crate does
    // not export for every target.
    const F_SETSIG: libc::c_int = 10;
    let fd = file.as_raw_fd();
    // A broken lease signals its holder, with SIGIO by default, which would end the process.
    // SIGURG is ignored unless handled; the break is read with F_GETLEASE instead.
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    unsafe { libc::fcntl(fd, F_SETSIG, libc::SIGURG) };
    for _ in 0..BUSY_TRIES {
        // SAFETY: as above.
        match crate::base::fs::check(unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) }) {
            Ok(_) => return Ok(true),
            Err(error) if error.raw_os_error() == Some(libc::EAGAIN) => {
                std::thread::sleep(BUSY_WAIT)
            }
            // Not on this filesystem, or not the owner's file: the other checks still hold.
            Err(_) => return Ok(false),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::WouldBlock,
        "the file is held open for writing",
    ))
}

#[cfg(not(target_os = "linux"))]
fn lease(_: &File) -> io::Result<bool> {
    Ok(false)
}

/// Whether the read lease on `file` is still whole (no writer is waiting for it to go).
#[cfg(target_os = "linux")]
fn lease_held(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLEASE) == libc::F_RDLCK }
}

#[cfg(not(target_os = "linux"))]
fn lease_held(_: &File) -> bool {
    true
}

/// Removes the temporary files that writers killed mid-write left in `dir` (those of a process
/// that no longer exists), putting back first a hand edit that a killed
/// [`replace_if_unchanged`] had swapped out; returns how many it cleared. A live process's
/// files are left alone, so this is safe while others write.
pub fn sweep_stale_temps(dir: &Path) -> usize {
    let Ok(dir) = Dir::open_dir(dir) else {
        return 0;
    };
    let Ok(entries) = dir.entries() else {
        return 0;
    };
    entries
        .into_iter()
        .filter(|entry| entry.kind == Kind::File)
        .filter_map(|entry| Some((Leftover::parse(entry.name.to_str()?)?, entry.name)))
        .filter(|(leftover, _)| !process_exists(leftover.pid))
        .filter(|(leftover, name)| leftover.clear(&dir, name).is_ok())
        .count()
}

/// A temp file's name, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Leftover {
    /// The file it was to replace.
    target: String,
    /// The writer.
    pid: i32,
    /// For a swap file: the hashes of the new bytes and of those expected.
    swap: Option<(u64, u64)>,
}

impl Leftover {
    /// `.<name>.tmp.<pid>.<n>` or `.<name>.swap.<pid>.<new>.<old>`.
    fn parse(name: &str) -> Option<Leftover> {
        let rest = name.strip_prefix('.')?;
        let hex = |text: &str| (text.len() == 16).then(|| u64::from_str_radix(text, 16).ok())?;
        let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        let (rest, last) = rest.rsplit_once('.')?;
        let (rest, before) = rest.rsplit_once('.')?;
        if let Some(target) = rest.strip_suffix(".tmp").filter(|_| digits(last)) {
            let pid = before.parse().ok()?;
            let target = target.to_string();
            return (!target.is_empty()).then_some(Leftover {
                target,
                pid,
                swap: None,
            });
        }
        let (rest, pid) = rest.rsplit_once('.')?;
        let target = rest.strip_suffix(".swap").filter(|t| !t.is_empty())?;
        Some(Leftover {
            target: target.to_string(),
            pid: pid.parse().ok()?,
            swap: Some((hex(before)?, hex(last)?)),
        })
    }

    /// Removes the leftover `name` in `dir`; a swap file holding bytes that are neither the
    /// new ones nor those expected held a hand edit: it goes back in place (or, if the file
    /// changed since, beside it).
    fn clear(&self, dir: &Dir, name: &OsStr) -> io::Result<()> {
        let Some((new, expected)) = self.swap else {
            return dir.remove_file(name);
        };
        let held = stable_hash(&Watch::open(dir, name)?.bytes()?);
        if held == new || held == expected {
            return dir.remove_file(name);
        }
        let target = OsStr::new(&self.target);
        let current = match Watch::open(dir, target) {
            Ok(watch) => Some(stable_hash(&watch.bytes()?)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) => return Err(error),
        };
        if current == Some(new) {
            if !dir.exchange(name, target)? {
                return dir.rename(name, target);
            }
            return dir.remove_file(name);
        }
        keep(dir, name, target).map(drop)
    }
}

/// Whether the writer `pid` may still write: it exists and is not a zombie (killed, its parent
/// not having reaped it yet, which on a loaded machine can take a while).
fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let exists = pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH));
    exists
        && !crate::base::process::stat(pid)
            .is_some_and(|stat| crate::base::process::is_zombie(&stat))
}

#[cfg(test)]
mod tests;
