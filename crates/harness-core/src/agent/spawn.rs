//! Starting a program the way [`super::enclosure`] must (own process group, dying with the harness,
//! in a cgroup, signals reset) without copying the harness's memory. `std::process::Command`
//! must `fork` as soon as it is given a `pre_exec` hook, and the page-table copy of a fork and its
//! teardown at exec cost a worker a sixth of its CPU (issue 20). Here the child is cloned with
//! `CLONE_VM | CLONE_VFORK`, as glibc's `posix_spawn` does: it borrows the parent's memory on a
//! stack of its own until it execs, while the calling thread waits. Everything it needs (paths,
//! argument and environment vectors, descriptors) is prepared by the parent, so the child only
//! makes system calls: no allocation, no lock, nothing that is not async-signal-safe.
//!
//! ```ignore
//! let mut command = Command::new(&argv, workdir);
//! command.env("KEY", "value").stdin(Stdin::Piped).output(pipe_writer);
//! let mut child = command.spawn()?;       // io::Error::raw_os_error() is the exec's errno
//! let status = child.wait()?;
//! ```

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// Where a child's standard input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// `/dev/null`.
    Null,
    /// A pipe whose write end is [`Child::stdin`].
    Piped,
}

/// A program to start: its command line, working directory, environment additions, standard
/// streams and cgroup.
#[derive(Debug)]
pub struct Command {
    argv: Vec<OsString>,
    workdir: PathBuf,
    env: Vec<(OsString, OsString)>,
    stdin: Stdin,
    output: Option<OwnedFd>,
    cgroup_procs: Option<RawFd>,
}

impl Command {
    /// `argv` (the program, then its arguments) run in `workdir` with the harness's environment,
    /// stdin on `/dev/null`, stdout and stderr the harness's own.
    pub fn new<S: AsRef<OsStr>>(argv: &[S], workdir: &Path) -> Self {
        Self {
            argv: argv.iter().map(|arg| arg.as_ref().to_os_string()).collect(),
            workdir: workdir.to_path_buf(),
            env: Vec::new(),
            stdin: Stdin::Null,
            output: None,
            cgroup_procs: None,
        }
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.argv.push(arg.as_ref().to_os_string());
        self
    }

    /// Sets a variable of the child's environment, over the harness's (the last set wins).
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.env
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Sets where the child's stdin comes from.
    pub fn stdin(&mut self, stdin: Stdin) -> &mut Self {
        self.stdin = stdin;
        self
    }

    /// Makes `writer` the child's stdout and stderr (held until the command is dropped).
    pub fn output(&mut self, writer: impl Into<OwnedFd>) -> &mut Self {
        self.output = Some(writer.into());
        self
    }

    /// Has the child join the cgroup whose `cgroup.procs` is open on `procs_fd` before its
    /// program runs; the descriptor must stay open until [`Command::spawn`] returns.
    pub fn cgroup(&mut self, procs_fd: RawFd) -> &mut Self {
        self.cgroup_procs = Some(procs_fd);
        self
    }

    /// Starts the program. An error is the errno of what failed (the program's lookup, a step
    /// before exec, or the exec), as [`io::Error::raw_os_error`].
    pub fn spawn(&self) -> io::Result<Child> {
        let (program_name, _) = self
            .argv
            .split_first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "an empty command line"))?;
        // The child's PATH, as execvp would read it after the environment is replaced.
        let path_var = self
            .env
            .iter()
            .rev()
            .find(|(key, _)| key == "PATH")
            .map(|(_, value)| value.clone())
            .or_else(|| std::env::var_os("PATH"));
        let program = resolve(program_name, path_var.as_deref(), &self.workdir)?;
        let prepared = Prepared::new(self, &program)?;
        let (stdin_reader, stdin_writer) = match self.stdin {
            Stdin::Null => (OwnedFd::from(std::fs::File::open("/dev/null")?), None),
            Stdin::Piped => {
                let (reader, writer) = io::pipe()?;
                (OwnedFd::from(reader), Some(writer))
            }
        };
        let pid = start(&prepared, &stdin_reader, self)?;
        Ok(Child {
            pid,
            stdin: stdin_writer,
            status: None,
        })
    }
}

/// A started child.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    /// The write end of its stdin, when it is [`Stdin::Piped`].
    pub stdin: Option<io::PipeWriter>,
    status: Option<ExitStatus>,
}

impl Child {
    /// Its process id, which is also its process group's.
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// Closes its stdin (as `std::process::Child::wait` does), waits for it to exit and reaps it.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = ExitStatus::from_raw(reap(self.pid)?);
        self.status = Some(status);
        Ok(status)
    }
}

/// Waits for `pid` to exit; its raw wait status.
fn reap(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes only the status into our local.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Ok(status);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// The path to exec `program` by, as execvp finds it: a name with a `/` as it is (relative to
/// the working directory the child will be in), else the first executable file of that name in
/// the directories of `path_var` (glibc's default without one). ENOENT when there is none,
/// EACCES when only files that cannot be run are there (execvp's errors).
fn resolve(program: &OsStr, path_var: Option<&OsStr>, workdir: &Path) -> io::Result<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(program));
    }
    if program.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let mut denied = false;
    for dir in std::env::split_paths(path_var.unwrap_or(OsStr::new("/bin:/usr/bin"))) {
        // An empty entry is the current directory, which will be `workdir` at exec.
        let candidate = dir.join(program);
        let seen_here = workdir.join(&candidate);
        match std::fs::metadata(&seen_here) {
            Ok(meta) if meta.is_file() && executable(&seen_here) => return Ok(candidate),
            Ok(_) => denied = true,
            Err(_) => {}
        }
    }
    let errno = if denied { libc::EACCES } else { libc::ENOENT };
    Err(io::Error::from_raw_os_error(errno))
}

/// Whether this process may execute the file at `path`.
fn executable(path: &Path) -> bool {
    let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads a valid NUL-terminated path.
    unsafe { libc::access(path.as_ptr(), libc::X_OK) == 0 }
}

/// An error for a string the child cannot be given (as `std::process::Command` reports it).
fn nul_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "nul byte found in provided data",
    )
}

fn c_string(bytes: Vec<u8>) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| nul_error())
}

/// The strings the child execs with, owned by the parent for as long as the child may read them.
/// (Elsewhere than Linux, only checked: std makes its own.)
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Prepared {
    program: CString,
    workdir: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    /// execvp's fallback for a file without `#!` (ENOEXEC): `/bin/sh` runs it.
    shell: CString,
}

impl Prepared {
    fn new(command: &Command, program: &Path) -> io::Result<Self> {
        let argv = command
            .argv
            .iter()
            .map(|arg| c_string(arg.as_bytes().to_vec()))
            .collect::<io::Result<Vec<_>>>()?;
        // The harness's environment, then the additions over it, the last of a key winning (as
        // `std::process::Command` builds it).
        let added = |key: &OsStr| command.env.iter().any(|(k, _)| k == key);
        let mut envp = Vec::new();
        for (key, value) in std::env::vars_os() {
            if !added(&key) {
                envp.push(c_string(pair(key, &value))?);
            }
        }
        for (index, (key, value)) in command.env.iter().enumerate() {
            if !command.env[index + 1..].iter().any(|(k, _)| k == key) {
                envp.push(c_string(pair(key.clone(), value))?);
            }
        }
        Ok(Self {
            program: c_string(program.as_os_str().as_bytes().to_vec())?,
            workdir: c_string(command.workdir.as_os_str().as_bytes().to_vec())?,
            argv,
            envp,
            shell: c"/bin/sh".to_owned(),
        })
    }
}

/// `KEY=VALUE`.
fn pair(key: OsString, value: &OsStr) -> Vec<u8> {
    let mut bytes = key.into_vec();
    bytes.push(b'=');
    bytes.extend_from_slice(value.as_bytes());
    bytes
}

#[cfg(target_os = "linux")]
use linux::start;

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::CString;
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd, RawFd};
    use std::sync::atomic::{AtomicI32, Ordering};

    use super::{reap, Command, Prepared};
    use crate::agent::contain::cgroup;
    use crate::base::signals;

    /// A NULL-terminated vector of pointers into `strings`, as execve takes.
    fn pointers<'a>(strings: impl Iterator<Item = &'a CString>) -> Vec<*const libc::c_char> {
        strings
            .map(|string| string.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    }

    /// The child's stack: its frames are a few hundred bytes, and only touched pages are backed.
    const STACK_SIZE: usize = 64 << 10;

    /// What the child reads, all of it made by the parent; the parent's memory, shared until exec.
    struct ChildArgs {
        program: *const libc::c_char,
        workdir: *const libc::c_char,
        argv: *const *const libc::c_char,
        envp: *const *const libc::c_char,
        shell_argv: *const *const libc::c_char,
        stdin: RawFd,
        output: Option<RawFd>,
        cgroup_procs: Option<RawFd>,
        parent: libc::pid_t,
        /// Where the child leaves the errno of what failed (0: the exec succeeded).
        errno: AtomicI32,
    }

    /// Clones the child, waits until it has exec'd or failed, and returns its pid or its errno.
    pub(super) fn start(
        prepared: &Prepared,
        stdin: &OwnedFd,
        command: &Command,
    ) -> io::Result<libc::pid_t> {
        let argv = pointers(prepared.argv.iter());
        let envp = pointers(prepared.envp.iter());
        // execvp's script fallback: /bin/sh PROGRAM ARGS…
        let shell_argv = pointers(
            [&prepared.shell, &prepared.program]
                .into_iter()
                .chain(prepared.argv.iter().skip(1)),
        );
        let args = ChildArgs {
            program: prepared.program.as_ptr(),
            workdir: prepared.workdir.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            shell_argv: shell_argv.as_ptr(),
            stdin: stdin.as_raw_fd(),
            output: command.output.as_ref().map(AsRawFd::as_raw_fd),
            cgroup_procs: command.cgroup_procs,
            parent: std::process::id() as libc::pid_t,
            errno: AtomicI32::new(0),
        };
        let stack = Stack::new()?;

        // Every signal blocked while the child borrows this memory: a handler of the harness's
        // run in the child would run on the harness's data. The child unblocks them itself once
        // it has reset every handler (glibc's posix_spawn does the same).
        // SAFETY: sigfillset/pthread_sigmask write only to sets we own; this thread's mask is
        // restored below whatever clone returned.
        let old_mask = unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            old
        };
        // SAFETY: `child` runs on its own stack (`stack`, alive until after this returns) and
        // only reads `args`, which outlives it: with CLONE_VFORK this thread resumes only once
        // the child has exec'd or exited, so no memory is used by both at once. SIGCHLD makes
        // it an ordinary child for waitpid.
        let pid = unsafe {
            libc::clone(
                child,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::from_ref(&args).cast_mut().cast(),
            )
        };
        let clone_error = io::Error::last_os_error();
        // SAFETY: restores this thread's own mask, saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old_mask, std::ptr::null_mut()) };
        drop(stack);
        if pid == -1 {
            return Err(clone_error);
        }
        match args.errno.load(Ordering::Relaxed) {
            0 => Ok(pid),
            errno => {
                reap(pid)?;
                Err(io::Error::from_raw_os_error(errno))
            }
        }
    }

    /// The child: sets itself up as `std::process::Command` did with the enclosure's `pre_exec`,
    /// and execs. On a failure it leaves the errno for the parent and exits 127.
    extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `ChildArgs` of `start`, alive until this process execs or exits.
        let args = unsafe { &*arg.cast::<ChildArgs>() };
        let errno = set_up_and_exec(args);
        args.errno.store(errno, Ordering::Relaxed);
        // SAFETY: _exit ends only this process, running no atexit handler of the parent's.
        unsafe { libc::_exit(127) }
    }

    /// Returns only on a failure, with its errno. Only system calls: see the module's doc.
    fn set_up_and_exec(args: &ChildArgs) -> libc::c_int {
        // SAFETY (every block below): system calls on values this child owns or the parent
        // prepared (descriptors, NUL-terminated strings and vectors); none allocates or locks.
        let errno = || unsafe { *libc::__errno_location() };
        // Handlers back to the default before any signal is unblocked: the disposition table is
        // the child's own (no CLONE_SIGHAND), but a handler would run on the parent's memory.
        for signal in 1..=libc::SIGRTMAX() {
            // SAFETY: see above; sigaction only reads and writes the structs on this stack.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                // The two signals glibc keeps for itself are refused (EINVAL): left as they are.
                if libc::sigaction(signal, std::ptr::null(), &mut action) == 0
                    && action.sa_sigaction != libc::SIG_DFL
                    && action.sa_sigaction != libc::SIG_IGN
                {
                    let default: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(signal, &default, std::ptr::null_mut());
                }
            }
        }
        signals::reset_in_child();
        // SAFETY: see above.
        if unsafe { libc::setpgid(0, 0) } != 0 {
            return errno();
        }
        // If the harness dies (kill -9), the agent is not left working unsupervised; if it died
        // before the prctl, the signal will never come, so the child gives up at once.
        // SAFETY: see above; _exit ends only this process.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != args.parent {
                libc::_exit(127);
            }
        }
        if let Some(fd) = args.cgroup_procs {
            // Without it the tag still holds what the agent starts.
            let _ = cgroup::join_in_child(fd);
        }
        let streams = [
            Some((args.stdin, libc::STDIN_FILENO)),
            args.output.map(|fd| (fd, libc::STDOUT_FILENO)),
            args.output.map(|fd| (fd, libc::STDERR_FILENO)),
        ];
        for (fd, target) in streams.into_iter().flatten() {
            // dup2 onto itself would leave the close-on-exec flag set: cleared instead.
            // SAFETY: see above.
            let done = unsafe {
                if fd == target {
                    libc::fcntl(fd, libc::F_SETFD, 0)
                } else {
                    libc::dup2(fd, target)
                }
            };
            if done == -1 {
                return errno();
            }
        }
        // SAFETY: see above.
        if unsafe { libc::chdir(args.workdir) } != 0 {
            return errno();
        }
        // SAFETY: see above; execve returns only on a failure.
        unsafe { libc::execve(args.program, args.argv, args.envp) };
        if errno() == libc::ENOEXEC {
            // SAFETY: see above.
            unsafe { libc::execve(*args.shell_argv, args.shell_argv, args.envp) };
        }
        errno()
    }

    /// An mmap'd stack with a guard page below it, so an overflow faults instead of writing over
    /// the harness's memory.
    struct Stack {
        base: *mut libc::c_void,
        size: usize,
    }

    impl Stack {
        fn new() -> io::Result<Self> {
            // SAFETY: sysconf has no preconditions.
            let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
                .unwrap_or(4096)
                .max(4096);
            let size = STACK_SIZE + page;
            // SAFETY: a fresh anonymous private mapping, owned by the returned `Stack`.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    size,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = Self { base, size };
            // SAFETY: the lowest page of the mapping just made; the stack grows down towards it.
            if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }

        /// Where the stack starts (it grows down); the mapping is page-aligned, so 16-aligned.
        fn top(&self) -> *mut libc::c_void {
            // SAFETY: one past the end of the mapping, which clone takes as the initial stack.
            unsafe { self.base.cast::<u8>().add(self.size).cast() }
        }
    }

    impl Drop for Stack {
        fn drop(&mut self) {
            // SAFETY: unmaps only our mapping, once the child no longer runs on it.
            unsafe { libc::munmap(self.base, self.size) };
        }
    }
}

/// Elsewhere than Linux: the same steps through `std::process::Command`, which forks.
#[cfg(not(target_os = "linux"))]
fn start(prepared: &Prepared, stdin: &OwnedFd, command: &Command) -> io::Result<libc::pid_t> {
    use std::os::unix::process::CommandExt;
    let _ = prepared;
    let mut std_command = std::process::Command::new(&command.argv[0]);
    std_command
        .args(&command.argv[1..])
        .current_dir(&command.workdir)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .stdin(stdin.try_clone()?);
    if let Some(output) = &command.output {
        std_command
            .stdout(output.try_clone()?)
            .stderr(output.try_clone()?);
    }
    // SAFETY: the closure makes only async-signal-safe calls (sigprocmask, signal).
    unsafe {
        std_command.pre_exec(|| {
            crate::base::signals::reset_in_child();
            Ok(())
        });
    }
    let child = std_command.spawn()?;
    Ok(child.id() as libc::pid_t)
}

#[cfg(test)]
mod tests;
