//! Cancellation of long pure work (the curator's pass over a large log): the work asks a cheap
//! `cancel` check as it goes and, when it says so, stops with [`Cancelled`] instead of a result.

/// Work given up because its `cancel` check said so: it decided nothing, and nothing of it is
/// to be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;
