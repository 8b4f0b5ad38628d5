//! Ctrl-C, SIGTERM and SIGHUP for the role binaries. They are blocked in every thread and taken
//! by one thread with `sigwait`, which turns them into ordinary events: the running agent's whole
//! process tree is stopped, the attempt is recorded as interrupted, and the binary exits 130 with
//! its state resumable. Nothing polls.
//!
//! Why this is hand-written rather than with signal-hook, which installs handlers instead: a
//! handler can interrupt any thread's system calls (a blocked signal interrupts none), and it
//! replaces the disposition the binary started with. run.sh starts the role binaries in the
//! background, so SIGINT is ignored in them, and the git commands they run inherit that: a Ctrl-C
//! the terminal sends to run.sh's whole process group never kills a `git commit` or `git merge`
//! half-way (leaving an `index.lock`). A handler would be reset to the default action in git at
//! exec, and git would die. A blocked signal is queued for `sigwait` even while ignored, so the
//! binary sees that Ctrl-C all the same. Keeping this with signal-hook would take a libc query of
//! each signal's disposition at start: no simpler than the few calls below.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

type Listener = Box<dyn Fn(i32) + Send>;

static RECEIVED: AtomicI32 = AtomicI32::new(0);
static LISTENER: Mutex<Option<Listener>> = Mutex::new(None);

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset only write to the set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Blocks the interrupt signals and starts the thread that receives them. Call it first thing in
/// `main`, before any other thread exists, so that every thread inherits the mask.
pub fn install() -> std::io::Result<()> {
    let set = signal_set();
    // SAFETY: changes only this thread's mask, with a valid set.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let mut signal: libc::c_int = 0;
            // SAFETY: waits on a valid set; writes the signal number into our local.
            if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                continue;
            }
            // The first one says what stopped the run: a Ctrl-C reaches a role both from the
            // terminal and, passed on, from run.sh.
            let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
            if let Ok(listener) = LISTENER.lock() {
                if let Some(listener) = listener.as_ref() {
                    listener(signal);
                }
            }
        })?;
    Ok(())
}

/// The first interrupt received, if any; once one came, it never goes back to `None`.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// Calls `listener` on every later interrupt (replacing the previous listener). Check
/// [`received`] after subscribing, to catch one that came just before.
pub fn subscribe(listener: impl Fn(i32) + Send + 'static) {
    if let Ok(mut slot) = LISTENER.lock() {
        *slot = Some(Box::new(listener));
    }
}

/// Drops the listener: later interrupts are only recorded, for [`received`].
pub fn unsubscribe() {
    if let Ok(mut slot) = LISTENER.lock() {
        *slot = None;
    }
}

/// Sleeps for `duration` unless an interrupt comes first; returns the interrupt, if one came.
pub fn sleep(duration: std::time::Duration) -> Option<i32> {
    let (sender, receiver) = std::sync::mpsc::channel();
    subscribe(move |signal| {
        let _ = sender.send(signal);
    });
    let result = match received() {
        Some(signal) => Some(signal),
        None => receiver.recv_timeout(duration).ok(),
    };
    unsubscribe();
    result
}

/// In a child before exec: no signal blocked, so the agent can be stopped with SIGTERM, and
/// SIGXFSZ (see [`fail_writes_past_the_size_limit`]) and SIGPIPE (which Rust's runtime ignores)
/// back to their default actions, as programs expect to start. Only async-signal-safe calls.
pub fn reset_in_child() {
    // SAFETY: sigemptyset, sigprocmask and signal are async-signal-safe; the set is ours.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Makes a write past the file-size limit (`ulimit -f`) fail with EFBIG, an error that names the
/// file, instead of killing the process with SIGXFSZ before it can take a half-done write back.
/// Call it first thing in `main`.
pub fn fail_writes_past_the_size_limit() {
    // SAFETY: sets the disposition of one signal to "ignore"; no handler runs.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}

/// The conventional name of a signal number, for messages.
pub fn name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        other => format!("signal {other}"),
    }
}
