//! Linux's inotify, thinly: a descriptor (non-blocking, closed on exec and when dropped) that
//! queues what happens in the directories it watches, for a caller that would otherwise look at
//! every file again to learn whether one changed.

use std::ffi::{CString, OsStr};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::base::fs::check;

/// An inotify instance and the buffer its events are read into.
pub struct Inotify {
    fd: OwnedFd,
    buffer: Vec<u8>,
}

impl fmt::Debug for Inotify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inotify").field("fd", &self.fd).finish()
    }
}

/// One event: its watch, what happened, and to which name (empty: the directory itself).
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// The watch's descriptor (-1 for an `IN_Q_OVERFLOW`).
    pub wd: i32,
    /// What happened (`libc::IN_*`).
    pub mask: u32,
    /// The entry it happened to.
    pub name: &'a OsStr,
}

/// The size of an event's fixed part.
const HEADER: usize = std::mem::size_of::<libc::inotify_event>();

impl Inotify {
    /// A new instance (`IN_NONBLOCK | IN_CLOEXEC`).
    pub fn new() -> io::Result<Inotify> {
        // SAFETY: no pointers; a fresh descriptor or -1.
        let fd = check(unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) })?;
        Ok(Inotify {
            // SAFETY: a fresh descriptor, owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            // Room for hundreds of events per read; one is at most HEADER + NAME_MAX + 1.
            buffer: vec![0; 16 * 1024],
        })
    }

    /// Watches `path` for `mask`; the watch's descriptor (the same again for the same inode).
    pub fn add_watch(&self, path: &Path, mask: u32) -> io::Result<i32> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))?;
        // SAFETY: a valid descriptor and a NUL-terminated path.
        check(unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), mask) })
    }

    /// Calls `each` on every event queued, oldest first, without waiting for more.
    pub fn drain(&mut self, mut each: impl FnMut(Event<'_>)) -> io::Result<()> {
        loop {
            // SAFETY: a valid descriptor and a buffer of that length.
            let read = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.buffer.as_mut_ptr().cast(),
                    self.buffer.len(),
                )
            };
            let length = match usize::try_from(read) {
                Ok(0) => return Ok(()),
                Ok(length) => length,
                Err(_) => {
                    let error = io::Error::last_os_error();
                    match error.kind() {
                        io::ErrorKind::WouldBlock => return Ok(()),
                        io::ErrorKind::Interrupted => continue,
                        _ => return Err(error),
                    }
                }
            };
            let mut at = 0;
            while at + HEADER <= length {
                // SAFETY: the kernel wrote a whole event here; the buffer is not aligned for
                // one, hence the unaligned read.
                let event: libc::inotify_event = unsafe {
                    std::ptr::read_unaligned(
                        self.buffer[at..].as_ptr().cast::<libc::inotify_event>(),
                    )
                };
                let start = at + HEADER;
                let end = (start + event.len as usize).min(length);
                // The name is padded with NULs to an aligned length.
                let name = &self.buffer[start..end];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                each(Event {
                    wd: event.wd,
                    mask: event.mask,
                    name: OsStr::from_bytes(name),
                });
                at = end;
            }
        }
    }
}
