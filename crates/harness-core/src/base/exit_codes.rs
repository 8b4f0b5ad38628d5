//! The exit codes of run.sh and the role binaries, in one place (README "Exit codes").

use crate::base::error::LockHeld;

/// The feature is done (or, for the worker alone, the iteration delivered the promise).
pub const DONE: u8 = 0;
/// Usage, configuration or input error; the message names the file and what is wrong.
pub const USAGE: u8 = 1;
/// Stopped by a guardrail (max_iterations, a budget) without completion.
pub const GUARDRAIL: u8 = 2;
/// The feature is blocked or failed for good.
pub const FAILED: u8 = 3;
/// Worker only: the iteration ended without completion and iterations remain; run it again.
/// run.sh loops on it and never returns it.
pub const CONTINUE: u8 = 10;
/// Worker only: the iteration delivered the promise and the feature is provisional; run the
/// validator. run.sh acts on it and never returns it.
pub const PROVISIONAL: u8 = 11;
/// The disk is full, or a file-size limit (`ulimit -f`) or a quota was reached: the write that
/// failed was taken back (every file is old or new) and the run can go on once there is room
/// (EX_IOERR).
pub const DISK_FULL: u8 = 74;
/// The feature is already being run by another process (EX_TEMPFAIL).
pub const LOCKED: u8 = 75;
/// Interrupted by Ctrl-C or SIGTERM; the state is left resumable.
pub const INTERRUPTED: u8 = 130;

/// The exit code for an error that ended a binary: a held lock is 75; a full disk (or a file-size
/// limit, or a quota) 74; an input error, or anything else, 1.
pub fn for_error(error: &anyhow::Error) -> u8 {
    if error.downcast_ref::<LockHeld>().is_some() {
        LOCKED
    } else if error.chain().any(is_disk_full) {
        DISK_FULL
    } else {
        USAGE
    }
}

/// Whether `error` is an I/O error of a full disk, a file-size limit or a quota.
fn is_disk_full(error: &(dyn std::error::Error + 'static)) -> bool {
    error
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::raw_os_error)
        .is_some_and(|code| matches!(code, libc::ENOSPC | libc::EFBIG | libc::EDQUOT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_has_its_own_code_wherever_it_is_in_the_chain() {
        let full = |code| anyhow::Error::new(std::io::Error::from_raw_os_error(code));
        for code in [libc::ENOSPC, libc::EFBIG, libc::EDQUOT] {
            assert_eq!(for_error(&full(code).context("cannot write x")), DISK_FULL);
        }
        assert_eq!(
            for_error(&full(libc::EACCES).context("cannot write x")),
            USAGE
        );
        assert_eq!(for_error(&anyhow::anyhow!("bad input")), USAGE);
    }
}
