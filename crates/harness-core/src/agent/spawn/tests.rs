use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::agent::contain::cgroup::{self, Cgroup};

/// Runs `command` with its stdout and stderr on a pipe; what it wrote, how it ended, its pid.
fn run(mut command: Command) -> (String, ExitStatus, u32) {
    let (mut reader, writer) = io::pipe().unwrap();
    command.output(writer);
    let mut child = command.spawn().unwrap();
    // The command holds a copy of the write end: the pipe ends only once it is gone.
    drop(command);
    let mut text = String::new();
    reader.read_to_string(&mut text).unwrap();
    (text, child.wait().unwrap(), child.id())
}

fn shell(script: &str, workdir: &Path) -> Command {
    Command::new(&["sh", "-c", script], workdir)
}

fn error_of(command: &Command) -> Option<i32> {
    command.spawn().err().and_then(|error| error.raw_os_error())
}

#[test]
fn the_child_runs_in_the_workdir_with_the_environment_added() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = dir.path().canonicalize().unwrap();
    let mut command = shell(
        r#"pwd -P; echo "$SPAWN_ADDED"; echo "$HOME"; echo "$PATH""#,
        &workdir,
    );
    command
        .env("SPAWN_ADDED", "a b")
        .env("HOME", "/first")
        .env("HOME", "/second");
    let (text, status, _) = run(command);
    assert!(status.success());
    let path = std::env::var("PATH").unwrap();
    assert_eq!(
        text,
        format!("{}\na b\n/second\n{path}\n", workdir.display())
    );
}

#[test]
fn stdin_is_the_pipe_or_dev_null() {
    let dir = tempfile::tempdir().unwrap();
    let (mut reader, writer) = io::pipe().unwrap();
    let mut command = Command::new(&["cat"], dir.path());
    command.stdin(Stdin::Piped).output(writer);
    let mut child = command.spawn().unwrap();
    drop(command);
    child.stdin.take().unwrap().write_all(b"prompt").unwrap();
    let mut text = String::new();
    reader.read_to_string(&mut text).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(text, "prompt");

    let (text, status, _) = run(Command::new(&["cat"], dir.path()));
    assert!(status.success());
    assert_eq!(text, "");
}

#[test]
fn the_child_leads_its_own_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let (text, status, pid) = run(shell(r#"cut -d" " -f5 /proc/$$/stat"#, dir.path()));
    assert!(status.success());
    assert_eq!(text.trim().parse::<u32>().unwrap(), pid);
    assert_ne!(pid, std::process::id());
}

/// A `SigBlk:` or `SigIgn:` mask of a /proc status text.
fn mask(status: &str, field: &str) -> u64 {
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in {status}"));
    u64::from_str_radix(line.trim(), 16).unwrap()
}

fn bit(signal: i32) -> u64 {
    1 << (signal - 1)
}

#[test]
fn the_child_starts_with_no_signal_blocked_and_sigxfsz_and_sigpipe_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    // As in the harness: interrupts blocked in every thread, SIGXFSZ ignored (and SIGPIPE, by
    // Rust's runtime).
    // SAFETY: changes this thread's mask (restored below) and one disposition, no handler.
    let old = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1] {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        old
    };
    let own = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    // `exec`: a waiting dash blocks every signal, so only the program itself tells.
    let script = r#"exec grep -E "^Sig(Blk|Ign)" /proc/$$/status"#;
    let spawned = run(shell(script, dir.path()));
    // SAFETY: restores this thread's mask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    let (text, status, _) = spawned;
    assert!(status.success());
    assert_ne!(mask(&own, "SigBlk:") & bit(libc::SIGTERM), 0, "the premise");
    assert_ne!(mask(&own, "SigIgn:") & bit(libc::SIGXFSZ), 0, "the premise");
    assert_ne!(mask(&own, "SigIgn:") & bit(libc::SIGPIPE), 0, "the premise");
    assert_eq!(mask(&text, "SigBlk:"), 0, "{text}");
    let ignored = mask(&text, "SigIgn:");
    assert_eq!(
        ignored & (bit(libc::SIGXFSZ) | bit(libc::SIGPIPE)),
        0,
        "{text}"
    );
}

#[test]
fn the_child_is_killed_when_the_thread_that_started_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = dir.path().to_path_buf();
    // The parent a PDEATHSIG watches is the thread that cloned; its end stands for the
    // harness's death.
    let mut child = std::thread::spawn(move || {
        let mut command = Command::new(&["sleep", "5"], &workdir);
        command.stdin(Stdin::Null);
        command.spawn().unwrap()
    })
    .join()
    .unwrap();
    let started = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
}

#[test]
fn the_child_joins_the_cgroup_given() {
    let name = format!(
        "spawn-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let Some(group) = Cgroup::create(&name) else {
        let why = "no writable cgroup v2 here";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{why}: under CI=true this fails"
        );
        eprintln!("SKIPPED: {why}");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(&["cat", "/proc/self/cgroup"], dir.path());
    command.cgroup(group.procs_fd());
    let (text, status, _) = run(command);
    cgroup::remove_if_empty(group.dir());
    assert!(status.success());
    let unified = text.lines().find_map(|line| line.strip_prefix("0::"));
    assert!(
        unified.is_some_and(|path| path.ends_with(&format!("/{name}"))),
        "{text}"
    );
}

#[test]
fn exec_failures_come_back_as_their_errno() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Command::new(&["/nonexistent/program"], dir.path());
    assert_eq!(error_of(&missing), Some(libc::ENOENT));
    let not_in_path = Command::new(&["no-such-program-anywhere"], dir.path());
    assert_eq!(error_of(&not_in_path), Some(libc::ENOENT));
    let too_long = Command::new(&["true".to_string(), "x".repeat(200_000)], dir.path());
    assert_eq!(error_of(&too_long), Some(libc::E2BIG));
    std::fs::write(dir.path().join("data"), "").unwrap();
    let not_executable = Command::new(&["./data"], dir.path());
    assert_eq!(error_of(&not_executable), Some(libc::EACCES));
    let gone = Command::new(&["true"], &dir.path().join("gone"));
    assert_eq!(error_of(&gone), Some(libc::ENOENT));
    // The messages are the ones std gave.
    let message = missing.spawn().unwrap_err().to_string();
    assert_eq!(message, "No such file or directory (os error 2)");
}

#[test]
fn no_descriptor_but_the_standard_three_reaches_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let group = Cgroup::create(&format!("spawn-fd-test-{}", std::process::id()));
    let mut command = Command::new(&["ls", "-l", "/proc/self/fd/"], dir.path());
    command.stdin(Stdin::Piped);
    if let Some(group) = &group {
        command.cgroup(group.procs_fd());
    }
    let (text, status, _) = run(command);
    if let Some(group) = &group {
        cgroup::remove_if_empty(group.dir());
    }
    assert!(status.success(), "{text}");
    // `N -> target` lines; not ls's own listing of the directory, nor what this test process
    // was itself given to pass on (no close-on-exec: a job runner's descriptors).
    let passed_on = passed_on_by_this_process();
    let fds: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_once(" -> "))
        .filter(|(_, target)| !(target.starts_with("/proc/") && target.ends_with("/fd")))
        .filter_map(|(before, _)| before.rsplit(' ').next())
        .filter(|fd| !passed_on.contains(&fd.to_string()))
        .collect();
    assert_eq!(fds, ["0", "1", "2"], "{text}");
}

/// The descriptors above 2 of this process that any child inherits.
fn passed_on_by_this_process() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        // SAFETY: F_GETFD only reads the flags of a descriptor (-1 if it is gone by now).
        .filter(|&fd| fd > 2 && unsafe { libc::fcntl(fd, libc::F_GETFD) } == 0)
        .map(|fd| fd.to_string())
        .collect()
}

#[test]
fn a_name_is_found_in_the_childs_path_and_a_script_without_interpreter_runs_in_sh() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("spawn-test-tool");
    std::fs::write(&tool, "echo from the tool \"$1\"\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = Command::new(&["spawn-test-tool", "arg"], dir.path());
    command.env("PATH", format!("/nonexistent:{}", bin.display()));
    let (text, status, _) = run(command);
    assert!(status.success());
    assert_eq!(text, "from the tool arg\n");
}
