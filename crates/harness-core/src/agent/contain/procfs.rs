//! What `/proc` tells of other processes: which exist, when each started, one variable of the
//! environment it was started with, its cgroup; and a signal that reaches only the process that
//! was looked at, never one that got its pid after it ended (a pidfd where the kernel has them).

use std::os::fd::{FromRawFd, OwnedFd};

use crate::base::process;
use std::path::Path;

/// Every pid in `/proc` (none where there is no `/proc`).
pub fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// When `pid` started, in clock ticks since boot: with the pid, it names one process for good.
pub fn start_time(pid: i32) -> Option<u64> {
    process::start_time(&process::stat(pid)?)
}

/// Whether the process that started at `start` as `pid` still runs: a zombie (killed, not yet
/// reaped by a parent that may never reap it) does not.
pub fn is_running(pid: i32, start: u64) -> bool {
    let Some(stat) = process::stat(pid) else {
        return false;
    };
    process::start_time(&stat) == Some(start) && !process::is_zombie(&stat)
}

/// This process's own start time.
pub fn own_start_time() -> u64 {
    start_time(std::process::id() as i32).unwrap_or(0)
}

/// The value of `name` in the environment `pid` was started with; `None` when it has none, is a
/// zombie, or is not ours to read.
pub fn environment_variable(pid: i32, name: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    find_variable(&environ, name)
}

fn find_variable(environ: &[u8], name: &str) -> Option<String> {
    environ.split(|&byte| byte == 0).find_map(|entry| {
        let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        Some(String::from_utf8_lossy(value).into_owned())
    })
}

/// The cgroup v2 path of `pid` (the `0::` line of `/proc/<pid>/cgroup`), relative to the
/// hierarchy's root.
pub fn cgroup_of(pid: i32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::to_string)
}

/// A process held so that a signal reaches it and no other: by a pidfd (Linux 5.3), else by
/// its pid and start time, checked just before the signal.
pub struct Held {
    pid: i32,
    start: Option<u64>,
    pidfd: Option<OwnedFd>,
}

impl Held {
    /// Holds `pid` if it is the process that started at `start` (any, when `None`).
    pub fn open(pid: i32, start: Option<u64>) -> Option<Self> {
        let pidfd = pidfd_open(pid);
        // Checked after the pidfd is open: the pidfd then names the process that was checked.
        let now = start_time(pid)?;
        if start.is_some_and(|start| start != now) {
            return None;
        }
        Some(Self {
            pid,
            start: Some(now),
            pidfd,
        })
    }

    /// Sends `signal`; whether it was delivered.
    pub fn signal(&self, signal: i32) -> bool {
        match &self.pidfd {
            Some(fd) => pidfd_send_signal(fd, signal),
            None => {
                if start_time(self.pid) != self.start {
                    return false;
                }
                // SAFETY: kill(2) on a pid whose start time was just checked.
                unsafe { libc::kill(self.pid, signal) == 0 }
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a fresh descriptor, owned by nobody else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(not(target_os = "linux"))]
fn pidfd_open(_pid: i32) -> Option<OwnedFd> {
    None
}

#[cfg(target_os = "linux")]
fn pidfd_send_signal(fd: &OwnedFd, signal: i32) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid pidfd, no siginfo, no flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    rc == 0
}

#[cfg(not(target_os = "linux"))]
fn pidfd_send_signal(_fd: &OwnedFd, _signal: i32) -> bool {
    false
}

/// Whether `path` can be read and written by us: a cgroup we may create children in.
pub fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_runs_only_with_its_own_start_time() {
        assert!(own_start_time() > 0);
        let pid = std::process::id() as i32;
        assert!(is_running(pid, own_start_time()));
        assert!(!is_running(pid, own_start_time() + 1));
    }

    #[test]
    fn a_variable_is_found_by_its_whole_name() {
        let environ = b"HARNESS_OWNERX=no\0PATH=/bin\0HARNESS_OWNER=v1:2:3\0";
        assert_eq!(
            find_variable(environ, "HARNESS_OWNER").as_deref(),
            Some("v1:2:3")
        );
        assert_eq!(find_variable(environ, "HOME"), None);
    }

    #[test]
    fn a_held_process_is_signalled_and_a_recycled_start_time_is_refused() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let start = start_time(pid).unwrap();
        assert!(Held::open(pid, Some(start + 1)).is_none());
        let held = Held::open(pid, Some(start)).unwrap();
        assert!(held.signal(libc::SIGKILL));
        while is_running(pid, start) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            start_time(pid).is_some(),
            "a zombie until reaped, but not running"
        );
        child.wait().unwrap();
        assert!(!held.signal(libc::SIGKILL), "a reaped process is gone");
    }
}
