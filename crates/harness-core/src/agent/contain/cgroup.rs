//! A cgroup v2 per agent invocation, where the harness may make one: a child of the harness's own
//! cgroup that the agent joins before it runs its program. Everything it starts is in it —
//! whatever session, group or environment it gives itself — and `cgroup.kill` ends it all at once.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::procfs;

/// The prefix of the cgroups the harness makes; the rest of the name is the owner's tag.
pub const PREFIX: &str = "harness-";

/// One invocation's cgroup.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    /// `cgroup.procs`, open for the child to write itself into before its program runs.
    procs: File,
}

impl Cgroup {
    /// Makes the cgroup `name` under the harness's own, if cgroup v2 is mounted and writable here.
    pub fn create(name: &str) -> Option<Self> {
        let dir = own_dir()?.join(name);
        std::fs::create_dir(&dir).ok()?;
        match std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(procs) => Some(Self { dir, procs }),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// Where it is.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The raw descriptor of `cgroup.procs`, for the child to join with (see [`join_in_child`]).
    pub fn procs_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.procs.as_raw_fd()
    }

    /// The processes in it.
    pub fn members(&self) -> Vec<i32> {
        members(&self.dir)
    }

    /// Ends every process in it, and removes it once it is empty.
    pub fn kill_and_remove(&self, wait: Duration) {
        kill_and_remove(&self.dir, wait);
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is open on `fd`. Called
/// between fork and exec: only a write(2).
pub fn join_in_child(fd: i32) -> io::Result<()> {
    // "0" is the writing process itself.
    // SAFETY: write(2) of a 1-byte buffer we own on a descriptor the parent opened.
    let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
    if written == 1 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The processes in the cgroup at `dir`.
pub fn members(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|text| text.lines().filter_map(|line| line.parse().ok()).collect())
        .unwrap_or_default()
}

/// Ends every process of the cgroup at `dir` (`cgroup.kill`, Linux 5.14; else SIGKILL to each
/// member until none is left), then removes it, waiting up to `wait` for the last to exit.
pub fn kill_and_remove(dir: &Path, wait: Duration) {
    // Most agents leave nothing: the kernel removes only an empty cgroup, so one rmdir is the
    // whole job then (instead of a kill and two reads of the members at every attempt).
    if std::fs::remove_dir(dir).is_ok() {
        return;
    }
    let killed = File::options()
        .write(true)
        .open(dir.join("cgroup.kill"))
        .and_then(|mut file| file.write_all(b"1"))
        .is_ok();
    let deadline = Instant::now() + wait;
    loop {
        let members = members(dir);
        if members.is_empty() && std::fs::remove_dir(dir).is_ok() {
            return;
        }
        if !killed {
            for pid in members {
                if let Some(process) = procfs::Held::open(pid, None) {
                    process.signal(libc::SIGKILL);
                }
            }
        }
        if Instant::now() >= deadline || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Removes the cgroup at `dir` if no process is left in it (the kernel refuses otherwise).
pub fn remove_if_empty(dir: &Path) {
    let _ = std::fs::remove_dir(dir);
}

/// The harness's own cgroup v2 directory, when cgroup v2 is mounted and it may make children
/// there. Looked up once: a process's cgroup is where it was started, and reading mountinfo
/// every attempt cost more than making the cgroup.
fn own_dir() -> Option<PathBuf> {
    static OWN: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    OWN.get_or_init(look_up_own_dir).clone()
}

fn look_up_own_dir() -> Option<PathBuf> {
    let own = procfs::cgroup_of(std::process::id() as i32)?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (mount_root, mount_point) = cgroup2_mount(&mountinfo)?;
    let relative = Path::new(&own).strip_prefix(&mount_root).ok()?;
    let dir = mount_point.join(relative);
    procfs::writable(&dir).then_some(dir)
}

/// The cgroup2 mount in a mountinfo text: its root in the hierarchy and where it is mounted
/// (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid system).
fn cgroup2_mount(mountinfo: &str) -> Option<(PathBuf, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (fields, after) = line.split_once(" - ")?;
        if after.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let fields: Vec<&str> = fields.split_whitespace().collect();
        Some((PathBuf::from(fields.get(3)?), PathBuf::from(fields.get(4)?)))
    })
}

/// The cgroups named [`PREFIX`]… beside the ones this process makes (children of its own).
pub fn siblings() -> Vec<(String, PathBuf)> {
    let Some(dir) = own_dir() else {
        return Vec::new();
    };
    std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| {
                    let name = entry.file_name().to_str()?.to_string();
                    name.starts_with(PREFIX).then(|| (name, entry.path()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The directory of the cgroup `path` (as `/proc/<pid>/cgroup` names it), if it is one the
/// harness made.
pub fn harness_dir_of(path: &str) -> Option<PathBuf> {
    let name = Path::new(path).file_name()?.to_str()?;
    if !name.starts_with(PREFIX) {
        return None;
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (mount_root, mount_point) = cgroup2_mount(&mountinfo)?;
    Some(mount_point.join(Path::new(path).strip_prefix(&mount_root).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_is_found_on_unified_and_hybrid_systems() {
        let unified =
            "25 1 0:22 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            cgroup2_mount(unified),
            Some(("/".into(), "/sys/fs/cgroup".into()))
        );
        let hybrid = "30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n31 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(hybrid),
            Some(("/".into(), "/sys/fs/cgroup/unified".into()))
        );
        assert_eq!(
            cgroup2_mount("30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw\n"),
            None
        );
    }
}
