//! Containment: no process an agent started outlives its invocation — in its process group or
//! not (`setsid`), stopped by a timeout or exiting by itself — and none outlives a killed harness
//! past the next run's start. Three holds, each catching what the others may miss:
//!
//! - the agent's **process group**, which the supervisor signals (see `agent::Supervisor`);
//! - a **tag**: every agent is started with `HARNESS_OWNER=<pid>:<start time>:<n>:<state dir>`,
//!   naming the harness process that owns it; its descendants inherit it, whatever session or
//!   group they make, and `/proc/<pid>/environ` shows it;
//! - a **cgroup v2** of its own, where the harness may make one (see [`cgroup`]): it holds even a
//!   process that cleared its environment, and `cgroup.kill` ends all of it at once.
//!
//! At the end of an invocation every process of the three is ended: the group and the cgroup at
//! once; a process that moved itself out of the cgroup keeping the tag (only root can: say,
//! `systemd-run --scope`) is found by a scan of every process on the machine, which costs
//! about half a millisecond. Without a cgroup the tag is the only hold, and every invocation's
//! end scans. With one, a harness process scans at the end of an invocation at most once a
//! minute ([`STRAY_SCAN_EVERY`]), and when it ends ([`end_strays`]): an agent's attempt of a
//! minute or more is scanned at its end, as before; a quicker one's stray lives a minute at
//! most. A harness killed with
//! SIGKILL cannot do that: the agent itself dies with it (`PR_SET_PDEATHSIG`), and its
//! descendants are ended by the next harness process of the same project, before it starts
//! anything ([`sweep_stale`]): those whose tag names a harness process that no longer exists
//! (the pid and its start time, so a recycled pid is never taken for its owner). A process
//! without the tag, or in a cgroup the harness did not make, is never signalled.

pub mod cgroup;
pub mod procfs;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cgroup::Cgroup;
use procfs::Held;

/// The environment variable that tags an agent's processes with their owner.
pub const OWNER_VARIABLE: &str = "HARNESS_OWNER";

/// How many times a sweep looks again for processes forked while it was ending the others.
const MAX_ROUNDS: usize = 50;
/// How long an emptied cgroup is waited for before it is left for the next sweep.
const CGROUP_WAIT: Duration = Duration::from_secs(2);

/// How long a harness process with cgroups goes at most without looking for strays (see the
/// module's doc).
const STRAY_SCAN_EVERY: Duration = Duration::from_secs(60);

static INVOCATIONS: AtomicU64 = AtomicU64::new(0);

/// This process's look for strays: the invocations not ended yet (never strays: they end their
/// own), when it last looked, and whether an invocation ended since without a look.
struct Strays {
    live: Vec<u64>,
    looked: Option<std::time::Instant>,
    owed: bool,
}

static STRAYS: std::sync::Mutex<Strays> = std::sync::Mutex::new(Strays {
    live: Vec::new(),
    looked: None,
    owed: false,
});

fn strays() -> std::sync::MutexGuard<'static, Strays> {
    STRAYS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Ends what agents of this process's ended invocations left running outside their cgroups
/// (tagged, moved out), if an invocation ended since the last look; the role binaries call it
/// as they exit.
pub fn end_strays() {
    if std::mem::take(&mut strays().owed) {
        end_strays_now();
    }
}

fn end_strays_now() {
    let (pid, start) = (std::process::id() as i32, own_start_time());
    for _ in 0..MAX_ROUNDS {
        let live = strays().live.clone();
        let stray = |tag: &str| {
            Owner::parse(tag).is_some_and(|owner| {
                owner.pid == pid && owner.start == start && !live.contains(&owner.invocation)
            })
        };
        let mut any = false;
        for process in procfs::pids()
            .into_iter()
            .filter_map(|p| hold_tagged(p, stray))
        {
            any |= process.signal(libc::SIGKILL);
        }
        if !any {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut strays = strays();
    strays.looked = Some(std::time::Instant::now());
    strays.owed = false;
}

/// The harness process that started an agent, which invocation of it, and for which state
/// directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pid: i32,
    start: u64,
    invocation: u64,
    state_dir: PathBuf,
}

impl Owner {
    /// A new invocation of this process, for `state_dir`.
    fn next(state_dir: &Path) -> Self {
        Self {
            pid: std::process::id() as i32,
            start: own_start_time(),
            invocation: INVOCATIONS.fetch_add(1, Ordering::Relaxed) + 1,
            state_dir: canonical(state_dir),
        }
    }

    /// The tag's text (the state directory last: it may hold `:`).
    fn tag(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.pid,
            self.start,
            self.invocation,
            self.state_dir.display()
        )
    }

    fn parse(tag: &str) -> Option<Self> {
        let mut parts = tag.splitn(4, ':');
        Some(Self {
            pid: parts.next()?.parse().ok()?,
            start: parts.next()?.parse().ok()?,
            invocation: parts.next()?.parse().ok()?,
            state_dir: PathBuf::from(parts.next()?),
        })
    }

    /// The name of its cgroup: the project's, its own.
    fn cgroup_name(&self) -> String {
        format!(
            "{}{}-{}-{}-{}",
            cgroup::PREFIX,
            project_id(&self.state_dir),
            self.pid,
            self.start,
            self.invocation
        )
    }

    /// Whether the harness process it names still runs (not a zombie, not another process
    /// that got its pid since).
    fn alive(pid: i32, start: u64) -> bool {
        procfs::is_running(pid, start)
    }
}

/// The process `pid`, held, if its tag is one `wanted`: the tag is read again once the process is
/// held, so the process signalled is the one whose tag was read.
fn hold_tagged(pid: i32, wanted: impl Fn(&str) -> bool) -> Option<Held> {
    let tagged =
        |pid| procfs::environment_variable(pid, OWNER_VARIABLE).is_some_and(|t| wanted(&t));
    if !tagged(pid) {
        return None;
    }
    let held = Held::open(pid, None)?;
    tagged(pid).then_some(held)
}

/// The project (its state directory's id), the owner's pid and its start time in a cgroup name
/// the harness made.
fn owner_of_cgroup(name: &str) -> Option<(String, i32, u64)> {
    let mut parts = name.strip_prefix(cgroup::PREFIX)?.split('-');
    let project = parts.next()?.to_string();
    Some((
        project,
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
    ))
}

/// A short id of a (canonical) state directory, for cgroup names: a sweep ends only what agents
/// of its own project left, never another project's (whose next run will).
fn project_id(state_dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    crate::base::hash::hex_id(state_dir.as_os_str().as_bytes(), 12)
}

fn own_start_time() -> u64 {
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *START.get_or_init(procfs::own_start_time)
}

/// `path` with its links resolved, once per process for a path that resolves: every attempt
/// asks for its state directory's, and resolving costs a readlink per component.
fn canonical(path: &Path) -> PathBuf {
    static RESOLVED: std::sync::Mutex<Vec<(PathBuf, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut resolved = RESOLVED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, real)) = resolved.iter().find(|(given, _)| given == path) {
        return real.clone();
    }
    match path.canonicalize() {
        Ok(real) => {
            resolved.push((path.to_path_buf(), real.clone()));
            real
        }
        // A path that cannot be resolved (gone) is compared as given.
        Err(_) => path.to_path_buf(),
    }
}

/// The processes of one agent invocation: its tag and, where the system allows, its cgroup.
#[derive(Debug)]
pub struct Containment {
    tag: String,
    invocation: u64,
    cgroup: Option<Cgroup>,
    /// [`Containment::end`] ran: its cgroup is gone, and nothing tagged was left.
    ended: std::cell::Cell<bool>,
}

impl Containment {
    /// A new invocation's containment, for an agent working for `state_dir`; with a cgroup of its
    /// own unless `HARNESS_NO_CGROUP` is set or the system gives none.
    pub fn new(state_dir: &Path) -> Self {
        let owner = Owner::next(state_dir);
        let cgroup = if std::env::var_os("HARNESS_NO_CGROUP").is_some_and(|v| !v.is_empty()) {
            None
        } else {
            Cgroup::create(&owner.cgroup_name())
        };
        strays().live.push(owner.invocation);
        Self {
            tag: owner.tag(),
            invocation: owner.invocation,
            cgroup,
            ended: std::cell::Cell::new(false),
        }
    }

    /// The variable the agent is started with: [`OWNER_VARIABLE`] and its tag.
    pub fn variable(&self) -> (&'static str, &str) {
        (OWNER_VARIABLE, &self.tag)
    }

    /// The cgroup the agent joins before its program runs, if it has one.
    pub fn cgroup(&self) -> Option<&Cgroup> {
        self.cgroup.as_ref()
    }

    /// The processes that carry the tag, held.
    fn tagged(&self) -> Vec<Held> {
        procfs::pids()
            .into_iter()
            .filter_map(|pid| hold_tagged(pid, |tag| tag == self.tag))
            .collect()
    }

    /// Sends `signal` to the agent's processes — with `whole_cgroup` and a cgroup, every process
    /// of the cgroup (a sandbox's own processes too, untagged), else every tagged process;
    /// whether any process got it. The cgroup holds every process of the agent but one that
    /// moved itself out of it, which the look for strays finds by its tag (see the module's
    /// doc): the scan of every process on the machine is left to that.
    pub fn signal(&self, signal: i32, whole_cgroup: bool) -> bool {
        if let (true, Some(cgroup)) = (whole_cgroup, &self.cgroup) {
            let mut any = false;
            for pid in cgroup.members() {
                if let Some(process) = Held::open(pid, None) {
                    any |= process.signal(signal);
                }
            }
            return any;
        }
        let mut any = false;
        for process in self.tagged() {
            any |= process.signal(signal);
        }
        any
    }

    /// Whether any process of the invocation is left: in its cgroup, or without one, tagged.
    pub fn any_left(&self) -> bool {
        match &self.cgroup {
            Some(cgroup) => !cgroup.members().is_empty(),
            None => !self.tagged().is_empty(),
        }
    }

    /// Ends every process of the invocation (the cgroup at once, then the tagged ones until none
    /// is left, forks included) and removes its cgroup. With a cgroup, the tagged ones that left
    /// it are looked for now only if the last look is a minute old (see the module's doc).
    pub fn end(&self) {
        if self.ended.replace(true) {
            return;
        }
        strays().live.retain(|&live| live != self.invocation);
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_and_remove(CGROUP_WAIT);
            let due = {
                let mut strays = strays();
                strays.owed = true;
                strays
                    .looked
                    .is_none_or(|looked| looked.elapsed() >= STRAY_SCAN_EVERY)
            };
            if due {
                end_strays_now();
            }
            return;
        }
        for _ in 0..MAX_ROUNDS {
            let mut any = false;
            for process in self.tagged() {
                any |= process.signal(libc::SIGKILL);
            }
            if !any {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Containment {
    /// Whatever way the invocation ended (an error included), nothing of it stays running.
    fn drop(&mut self) {
        self.end();
    }
}

/// Ends what agents of harness processes that no longer exist (killed with SIGKILL) left running
/// for `state_dir`, and the cgroups such processes made; returns how many processes it ended.
/// Processes of a live harness are left alone, whichever it is.
pub fn sweep_stale(state_dir: &Path) -> usize {
    let state_dir = canonical(state_dir);
    // Once per process and project is enough: a harness killed later is some other run, whose
    // feature's next run (a new process) sweeps; the scan of every process costs each attempt.
    static SWEPT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    {
        let mut swept = SWEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if swept.contains(&state_dir) {
            return 0;
        }
        swept.push(state_dir.clone());
    }
    let mut ended = 0;
    for _ in 0..MAX_ROUNDS {
        let stale: Vec<(Held, i32)> = procfs::pids()
            .into_iter()
            .filter_map(|pid| {
                let held = hold_tagged(pid, |tag| {
                    Owner::parse(tag).is_some_and(|owner| {
                        owner.state_dir == state_dir && !Owner::alive(owner.pid, owner.start)
                    })
                })?;
                Some((held, pid))
            })
            .collect();
        if stale.is_empty() {
            break;
        }
        for (process, pid) in stale {
            if let Some(dir) = procfs::cgroup_of(pid).and_then(|path| cgroup::harness_dir_of(&path))
            {
                cgroup::kill_and_remove(&dir, Duration::ZERO);
            }
            ended += usize::from(process.signal(libc::SIGKILL));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let project = project_id(&state_dir);
    for (name, dir) in cgroup::siblings() {
        let Some((owner_project, pid, start)) = owner_of_cgroup(&name) else {
            continue;
        };
        if Owner::alive(pid, start) {
            continue;
        }
        if owner_project == project {
            ended += cgroup::members(&dir).len();
            cgroup::kill_and_remove(&dir, Duration::ZERO);
        } else {
            // Another project's: its next run ends what is in it; an empty one is only litter.
            cgroup::remove_if_empty(&dir);
        }
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_reads_back_with_a_state_dir_holding_colons() {
        let owner = Owner {
            pid: 12,
            start: 345,
            invocation: 6,
            state_dir: "/a:b/.harness".into(),
        };
        assert_eq!(Owner::parse(&owner.tag()), Some(owner.clone()));
        assert_eq!(
            owner_of_cgroup(&owner.cgroup_name()),
            Some((project_id(Path::new("/a:b/.harness")), 12, 345))
        );
        assert_eq!(Owner::parse("12:x:6:/p"), None);
        assert_eq!(owner_of_cgroup("user.slice"), None);
    }

    #[test]
    fn the_owner_is_alive_only_with_its_own_start_time() {
        let pid = std::process::id() as i32;
        assert!(Owner::alive(pid, own_start_time()));
        assert!(!Owner::alive(pid, own_start_time() + 1));
    }
}
