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
/// The feature is already being run by another process (EX_TEMPFAIL).
pub const LOCKED: u8 = 75;
/// Interrupted by Ctrl-C or SIGTERM; the state is left resumable.
pub const INTERRUPTED: u8 = 130;

/// The exit code for an error that ended a binary: a held lock is 75; an input error, or anything
/// else (I/O, a full disk), is 1.
pub fn for_error(error: &anyhow::Error) -> u8 {
    if error.downcast_ref::<LockHeld>().is_some() {
        LOCKED
    } else {
        USAGE
    }
}
