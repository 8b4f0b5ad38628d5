//! File access under a state directory (`.harness/`): nothing there is ever read or written
//! through a symbolic link, so a link an agent planted (`raw.md` → a file of yours, `notes/F-001.md`
//! → /etc/passwd, `runs` → elsewhere) is refused with an error naming it, never followed.
//!
//! A directory becomes a state directory with [`confine`] (every `StateDir` does it). A path below
//! one is then opened one component at a time from the state directory, each with `O_NOFOLLOW`
//! (`openat` on the directory opened before), so a link swapped in between two steps cannot
//! redirect the walk either; the state directory itself may be a link (it is yours to place).
//! Any other path (the identity files, the harness install) is opened as usual. Every access
//! to `.harness/` goes through this module: a test reads the sources for `std::fs` calls outside
//! it.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use crate::base::error::InputError;

/// The state directories declared so far.
static ROOTS: RwLock<Vec<PathBuf>> = RwLock::new(Vec::new());

/// Declares `root` a state directory: from now on, every path below it is opened without
/// following a symbolic link.
pub fn confine(root: &Path) {
    let mut roots = ROOTS
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !roots.iter().any(|known| known == root) {
        roots.push(root.to_path_buf());
    }
}

/// The state directories opened last, each with the device and inode it had: an attempt
/// walks from its state directory two dozen times, and one stat of its path tells whether the
/// directory open here is still the one there (open, its inode cannot be reused by another).
static OPENED_ROOTS: Mutex<Vec<OpenedRoot>> = Mutex::new(Vec::new());

/// A state directory held open: its path, its descriptor, its device and inode.
struct OpenedRoot {
    path: PathBuf,
    fd: Arc<OwnedFd>,
    identity: (u64, u64),
}

/// How many of [`OPENED_ROOTS`] are kept open.
const KEPT_ROOTS: usize = 8;

fn lock_opened_roots() -> std::sync::MutexGuard<'static, Vec<OpenedRoot>> {
    OPENED_ROOTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The state directory `path` lies strictly below, if any (the deepest, should two nest).
fn root_of(path: &Path) -> Option<PathBuf> {
    let roots = ROOTS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    roots
        .iter()
        .filter(|root| path.starts_with(root) && path != root.as_path())
        .max_by_key(|root| root.components().count())
        .cloned()
}

/// A symbolic link (or a special file) where the harness keeps its state: refused, never followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The link, or the special file.
    pub path: PathBuf,
    /// Whether it is a link (else a FIFO, a socket or a device).
    pub link: bool,
}

impl Refused {
    fn what(&self) -> &'static str {
        if self.link {
            "a symbolic link, which the harness never reads or writes its state through"
        } else {
            "neither a regular file nor a directory, which the harness never uses for its state"
        }
    }

    /// As an input error: the path, what it is, and a hint.
    pub fn to_input_error(&self) -> InputError {
        InputError::in_file(&self.path, self.what())
            .with_hint("remove it, or put the file or directory itself there")
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (remove it)", self.path.display(), self.what())
    }
}

impl std::error::Error for Refused {}

fn refused(path: PathBuf, link: bool) -> io::Error {
    io::Error::other(Refused { path, link })
}

/// The [`Refused`] an error carries, if it is one.
pub fn as_refused(error: &io::Error) -> Option<&Refused> {
    error.get_ref().and_then(|inner| inner.downcast_ref())
}

/// What a directory entry is, without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Link,
    /// A FIFO, a socket or a device.
    Other,
}

impl Kind {
    /// The kind a status's mode says.
    pub(crate) fn of_mode(mode: libc::mode_t) -> Kind {
        match mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        }
    }
}

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name.
    pub name: OsString,
    /// What it is.
    pub kind: Kind,
}

/// How [`Dir::open`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Read only.
    Read,
    /// Append, creating the file if need be.
    Append,
    /// Read, and append (creating the file if need be): an append-only file whose torn tail is
    /// cut off before appending (see `base::append`).
    ReadAppend,
    /// Write from empty, creating or truncating the file.
    Create,
    /// Write a file that must not exist yet.
    CreateNew,
    /// Read and write, creating the file if need be (a lock file).
    ReadWrite,
}

impl Mode {
    fn flags(self) -> libc::c_int {
        match self {
            Mode::Read => libc::O_RDONLY,
            Mode::Append => libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT,
            Mode::ReadAppend => libc::O_RDWR | libc::O_APPEND | libc::O_CREAT,
            Mode::Create => libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            Mode::CreateNew => libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            Mode::ReadWrite => libc::O_RDWR | libc::O_CREAT,
        }
    }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a file name holds a NUL byte"))
}

/// `result` of a libc call, or the error it set.
pub(crate) fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

/// An open directory, and whether what lies in it is state (no link is followed).
#[derive(Debug)]
pub struct Dir {
    fd: Arc<OwnedFd>,
    path: PathBuf,
    confined: bool,
}

impl Dir {
    /// The directory `path` names, and whether it is below a state directory.
    pub fn open_dir(path: &Path) -> io::Result<Dir> {
        Dir::walk(path, false)
    }

    /// The directory holding `path`, and the name of `path` in it.
    pub fn parent_of(path: &Path) -> io::Result<(Dir, OsString)> {
        let name = match path.components().next_back() {
            Some(Component::Normal(name)) => name.to_os_string(),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} does not name a file", path.display()),
                ))
            }
        };
        let parent = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let mut dir = Dir::walk(parent, false)?;
        dir.confined |= root_of(path).is_some();
        Ok((dir, name))
    }

    /// Opens the directory `path` (creating what is missing when `create`), one component at a
    /// time below its state directory.
    fn walk(path: &Path, create: bool) -> io::Result<Dir> {
        let Some(root) = root_of(path) else {
            let name = c_name(path.as_os_str())?;
            let fd = match open_at(libc::AT_FDCWD, &name, directory(false)) {
                // Made only when missing: the common case costs one open, not a mkdir and a stat.
                Err(error) if create && error.kind() == io::ErrorKind::NotFound => {
                    std::fs::create_dir_all(path)?;
                    open_at(libc::AT_FDCWD, &name, directory(false))?
                }
                other => other?,
            };
            let path = path.to_path_buf();
            return Ok(Dir {
                fd: Arc::new(fd),
                path,
                confined: false,
            });
        };
        let mut dir = Dir::root(&root, create)?;
        dir.confined = true;
        for component in path
            .strip_prefix(&root)
            .expect("below its root")
            .components()
        {
            let Component::Normal(name) = component else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain path", path.display()),
                ));
            };
            dir = dir.child(name, create)?;
        }
        Ok(dir)
    }

    /// The state directory `root`: the one opened before while its path still names it, else
    /// opened (made first when missing and `create`) and kept; one inside another state
    /// directory is walked to from that one, every time.
    fn root(root: &Path, create: bool) -> io::Result<Dir> {
        if root_of(root).is_some() {
            // Inside another state directory, no link on the way may be followed: walked to.
            return Dir::walk(root, create);
        }
        let now = stat_following(root);
        let held = lock_opened_roots()
            .iter()
            .find(|held| held.path == root && Some(held.identity) == now)
            .map(|held| Arc::clone(&held.fd));
        if let Some(fd) = held {
            return Ok(Dir {
                fd,
                path: root.to_path_buf(),
                confined: false,
            });
        }
        let dir = Dir::walk(root, create)?;
        let identity = identity_of(&fstat(&dir.fd)?);
        let mut opened = lock_opened_roots();
        opened.retain(|held| held.path != root);
        if opened.len() >= KEPT_ROOTS {
            // A process works in one or two; a test process makes hundreds, and its descriptors
            // would run out.
            opened.remove(0);
        }
        opened.push(OpenedRoot {
            path: root.to_path_buf(),
            fd: Arc::clone(&dir.fd),
            identity,
        });
        Ok(dir)
    }

    /// The subdirectory `name`, never through a link.
    pub fn subdir(&self, name: &OsStr) -> io::Result<Dir> {
        self.child(name, false)
    }

    /// The subdirectory `name`, never through a link; made first if missing and `create`.
    fn child(&self, name: &OsStr, create: bool) -> io::Result<Dir> {
        let c = c_name(name)?;
        let path = self.path.join(name);
        let opened = match open_at(self.fd.as_raw_fd(), &c, directory(self.confined)) {
            Err(error) if create && error.kind() == io::ErrorKind::NotFound => {
                // SAFETY: a valid descriptor and a NUL-terminated name.
                let made = unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) };
                match check(made) {
                    Err(error) if error.kind() != io::ErrorKind::AlreadyExists => Err(error),
                    _ => open_at(self.fd.as_raw_fd(), &c, directory(self.confined)),
                }
            }
            other => other,
        };
        let fd = opened.map_err(|error| self.explain(error, name))?;
        Ok(Dir {
            fd: Arc::new(fd),
            path,
            confined: true,
        })
    }

    /// `error` from opening `name` here, as [`Refused`] when `name` is a link or a special file.
    fn explain(&self, error: io::Error, name: &OsStr) -> io::Error {
        let suspicious = matches!(
            error.raw_os_error(),
            Some(libc::ELOOP | libc::ENOTDIR | libc::ENXIO)
        );
        if self.confined && suspicious {
            match self.kind(name) {
                Ok(Some(Kind::Link)) => return refused(self.path.join(name), true),
                Ok(Some(Kind::Other)) => return refused(self.path.join(name), false),
                _ => {}
            }
        }
        error
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the file `name` in `mode`; below a state directory, never a link and only a regular
    /// file (a FIFO planted there would otherwise hang the open).
    pub fn open(&self, name: &OsStr, mode: Mode) -> io::Result<File> {
        let c = c_name(name)?;
        let guard = if self.confined {
            libc::O_NOFOLLOW | libc::O_NONBLOCK
        } else {
            0
        };
        let fd = open_at(self.fd.as_raw_fd(), &c, mode.flags() | guard)
            .map_err(|error| self.explain(error, name))?;
        let file = File::from(fd);
        if self.confined {
            let kind = file.metadata()?.file_type();
            if kind.is_dir() {
                return Err(io::Error::from_raw_os_error(libc::EISDIR));
            }
            if !kind.is_file() {
                return Err(refused(self.path.join(name), false));
            }
            // O_NONBLOCK stays: it "has no effect for regular files" (open(2)), and clearing
            // it would cost two more system calls at each of the dozens of opens an attempt.
        }
        Ok(file)
    }

    /// What `name` is here, without following a link; `None` when there is nothing.
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<Kind>> {
        Ok(self.stat(name)?.map(|stat| Kind::of_mode(stat.st_mode)))
    }

    /// The device and inode of `name` here (not following a link): which file it is.
    pub fn identity(&self, name: &OsStr) -> io::Result<Option<(u64, u64)>> {
        Ok(self.stat(name)?.as_ref().map(identity_of))
    }

    /// The status of `name` here, not following a link; `None` when there is nothing.
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<libc::stat>> {
        self.stat_c(c_name(name)?)
    }

    /// The status of `name` in the subdirectory `dir` here, in one system call, for a check of
    /// whether a file changed: `dir` is the one the caller listed as a directory, and were it
    /// replaced by a link since, the call would follow it. Never the way to decide what to read.
    pub fn stat_in(&self, dir: &OsStr, name: &OsStr) -> io::Result<Option<libc::stat>> {
        let mut path = dir.as_bytes().to_vec();
        path.push(b'/');
        path.extend_from_slice(name.as_bytes());
        self.stat_c(c_name(OsStr::from_bytes(&path))?)
    }

    fn stat_c(&self, c: CString) -> io::Result<Option<libc::stat>> {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a valid descriptor, a NUL-terminated name and a buffer fstatat fills.
        let result = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        match check(result) {
            // SAFETY: filled by the successful call.
            Ok(_) => Ok(Some(unsafe { stat.assume_init() })),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Fails with [`Refused`] when `name` here is a link or a special file (below a state
    /// directory); before a rename replaces it, say.
    pub fn refuse_link(&self, name: &OsStr) -> io::Result<()> {
        match self.kind(name)? {
            Some(Kind::Link) if self.confined => Err(refused(self.path.join(name), true)),
            Some(Kind::Other) if self.confined => Err(refused(self.path.join(name), false)),
            _ => Ok(()),
        }
    }

    /// The entries of the directory (without `.` and `..`), in no particular order.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        // SAFETY: dup of a descriptor we own; fdopendir then owns the copy (closedir closes it).
        let copy = check(unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
        // SAFETY: a valid directory descriptor; on failure it is still ours to close.
        let stream = unsafe { libc::fdopendir(copy) };
        if stream.is_null() {
            let error = io::Error::last_os_error();
            // SAFETY: the copy was not taken over.
            unsafe { libc::close(copy) };
            return Err(error);
        }
        let mut entries = Vec::new();
        loop {
            // SAFETY: a valid stream; readdir returns null at the end.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                break;
            }
            // SAFETY: readdir's entry is valid until the next call; d_name is NUL-terminated.
            let (name, d_type) = unsafe {
                let name = CStr::from_ptr((*entry).d_name.as_ptr());
                (
                    OsStr::from_bytes(name.to_bytes()).to_os_string(),
                    (*entry).d_type,
                )
            };
            if name == "." || name == ".." {
                continue;
            }
            let kind = match d_type {
                libc::DT_REG => Kind::File,
                libc::DT_DIR => Kind::Dir,
                libc::DT_LNK => Kind::Link,
                _ => match self.kind(&name)? {
                    Some(kind) => kind,
                    None => continue,
                },
            };
            entries.push(Entry { name, kind });
        }
        // SAFETY: the stream from fdopendir above, closed once.
        unsafe { libc::closedir(stream) };
        Ok(entries)
    }

    /// Removes the file `name` (a link itself, never its target).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        self.unlink(name, 0)
    }

    /// Removes the empty directory `name`.
    pub fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        self.unlink(name, libc::AT_REMOVEDIR)
    }

    fn unlink(&self, name: &OsStr, flags: libc::c_int) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a valid descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), flags) }).map(drop)
    }

    /// Renames `from` to `to` in this directory, replacing `to` (a link itself, never its target).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (c_name(from)?, c_name(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid descriptors and NUL-terminated names.
        check(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) }).map(drop)
    }

    /// Makes `to` a second name of `from`; fails with `AlreadyExists` if `to` exists.
    pub fn link(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (c_name(from)?, c_name(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid descriptors and NUL-terminated names; flags 0 never follows `from`.
        check(unsafe { libc::linkat(fd, from.as_ptr(), fd, to.as_ptr(), 0) }).map(drop)
    }

    /// Swaps the files named `a` and `b` in one step (Linux `renameat2(RENAME_EXCHANGE)`).
    /// `Ok(false)` when the system or the filesystem cannot.
    pub fn exchange(&self, a: &OsStr, b: &OsStr) -> io::Result<bool> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let (a, b) = (c_name(a)?, c_name(b)?);
            let fd = self.fd.as_raw_fd();
            // SAFETY: valid descriptors and NUL-terminated names.
            let result = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    fd,
                    a.as_ptr(),
                    fd,
                    b.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            match check(result as libc::c_int) {
                Ok(_) => Ok(true),
                Err(error)
                    if matches!(
                        error.raw_os_error(),
                        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
                    ) =>
                {
                    Ok(false)
                }
                Err(error) => Err(error),
            }
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let _ = (a, b);
            Ok(false)
        }
    }

    /// Flushes the directory itself: the names it holds reach the disk.
    pub fn sync(&self) -> io::Result<()> {
        // SAFETY: a valid descriptor.
        check(unsafe { libc::fsync(self.fd.as_raw_fd()) }).map(drop)
    }
}

/// Flags to open a directory, without following a link when `confined`.
fn directory(confined: bool) -> libc::c_int {
    let nofollow = if confined { libc::O_NOFOLLOW } else { 0 };
    libc::O_RDONLY | libc::O_DIRECTORY | nofollow
}

/// The device and inode of `path` (following links: the state directory may be one); `None`
/// when it cannot be looked at (the walk to it then says why).
fn stat_following(path: &Path) -> Option<(u64, u64)> {
    let c = c_name(path.as_os_str()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a NUL-terminated path and a buffer stat fills.
    check(unsafe { libc::stat(c.as_ptr(), stat.as_mut_ptr()) }).ok()?;
    // SAFETY: filled by the successful call.
    Some(identity_of(&unsafe { stat.assume_init() }))
}

/// The status of the open file `fd`.
fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a descriptor we own and a buffer fstat fills.
    check(unsafe { libc::fstat(fd.as_raw_fd(), stat.as_mut_ptr()) })?;
    // SAFETY: filled by the successful call.
    Ok(unsafe { stat.assume_init() })
}

/// Which file `stat` is: its device and inode.
// st_dev and st_ino are not u64 on every platform.
#[allow(clippy::unnecessary_cast)]
pub(crate) fn identity_of(stat: &libc::stat) -> (u64, u64) {
    (stat.st_dev as u64, stat.st_ino as u64)
}

fn open_at(dir: libc::c_int, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: a valid descriptor (or AT_FDCWD), a NUL-terminated name; mode used on O_CREAT.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, 0o666) };
        match check(fd) {
            // SAFETY: a fresh descriptor, owned by nobody else.
            Ok(fd) => return Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
}

/// Opens the file `path` in `mode` (see [`Dir::open`]).
pub fn open(path: &Path, mode: Mode) -> io::Result<File> {
    let (dir, name) = Dir::parent_of(path)?;
    dir.open(&name, mode)
}

/// The bytes of the file `path`.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path, Mode::Read)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The bytes of the file `path`, `None` when it does not exist.
pub fn read_optional(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// The last `max` bytes of the file `path` (all of it when shorter), and whether they begin at
/// its start; `None` when it does not exist.
pub fn read_tail(path: &Path, max: u64) -> io::Result<Option<(Vec<u8>, bool)>> {
    use std::io::{Seek, SeekFrom};
    let mut file = match open(path, Mode::Read) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start))?;
    // Read into spare capacity, not a zeroed buffer: a prompt reads this every attempt. A file
    // that shrank meanwhile gives what there is; one that grew, no more than asked.
    let mut bytes = Vec::with_capacity((len - start) as usize);
    file.take(len - start).read_to_end(&mut bytes)?;
    Ok(Some((bytes, start == 0)))
}

/// Creates the directory `path` and its missing parents.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    Dir::walk(path, true).map(drop)
}

/// The entries of the directory `path`.
pub fn read_dir(path: &Path) -> io::Result<Vec<Entry>> {
    Dir::open_dir(path)?.entries()
}

/// What `path` is, without following a link at its end; `None` when there is nothing (or a
/// parent is missing).
pub fn kind(path: &Path) -> io::Result<Option<Kind>> {
    match Dir::parent_of(path) {
        Ok((dir, name)) => dir.kind(&name),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Whether something (a file, a directory, even a link) is at `path`. An error counts as no:
/// whoever asks goes on to the access, which reports it.
pub fn exists(path: &Path) -> bool {
    matches!(kind(path), Ok(Some(_)))
}

/// Whether `path` is a directory (not a link to one).
pub fn is_dir(path: &Path) -> bool {
    matches!(kind(path), Ok(Some(Kind::Dir)))
}

/// Whether `path` is a regular file (not a link to one).
pub fn is_file(path: &Path) -> bool {
    matches!(kind(path), Ok(Some(Kind::File)))
}

/// Removes the file `path`.
pub fn remove_file(path: &Path) -> io::Result<()> {
    let (dir, name) = Dir::parent_of(path)?;
    dir.remove_file(&name)
}

/// Removes the empty directory `path`.
pub fn remove_dir(path: &Path) -> io::Result<()> {
    let (dir, name) = Dir::parent_of(path)?;
    dir.remove_dir(&name)
}

/// Fails with [`Refused`] at the first of `paths` that is a link or a special file, or lies
/// below one: the check a role makes before it changes anything.
pub fn refuse_links<'a>(paths: impl IntoIterator<Item = &'a Path>) -> io::Result<()> {
    // A role checks two dozen paths in a handful of directories at each attempt: each directory
    // is opened once, from the one above it, not walked to from the state directory's path.
    let mut names: Vec<(&Path, Vec<&OsStr>)> = Vec::new();
    for path in paths {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        match names.iter_mut().find(|(known, _)| *known == parent) {
            Some((_, in_parent)) => in_parent.push(name),
            None => names.push((parent, vec![name])),
        }
    }
    let mut dirs: std::collections::HashMap<PathBuf, Option<Dir>> = Default::default();
    for (parent, in_parent) in names {
        let Some(dir) = opened(parent, &mut dirs)? else {
            continue;
        };
        if in_parent.len() < LISTED_FROM {
            for name in in_parent {
                dir.refuse_link(name)?;
            }
            continue;
        }
        // The state directory's own files: one listing instead of a stat each. (Not a
        // directory of one file per feature: its listing would grow with the features.)
        let listed = dir.entries()?;
        for name in in_parent {
            let found = listed.iter().find(|entry| entry.name == name);
            if found.is_some_and(|entry| entry.kind != Kind::File && entry.kind != Kind::Dir) {
                dir.refuse_link(name)?;
            }
        }
    }
    Ok(())
}

/// From how many names checked in one directory [`refuse_links`] lists it instead.
const LISTED_FROM: usize = 8;

/// The directory `path` from `dirs`, opened and added when missing there (`None`: it does not
/// exist); below a state directory, from its parent's, never through a link.
fn opened<'d>(
    path: &Path,
    dirs: &'d mut std::collections::HashMap<PathBuf, Option<Dir>>,
) -> io::Result<Option<&'d Dir>> {
    if !dirs.contains_key(path) {
        let dir = match (root_of(path), path.parent(), path.file_name()) {
            (Some(_), Some(parent), Some(name)) => match opened(parent, dirs)? {
                Some(parent) => found(parent.subdir(name))?,
                None => None,
            },
            // The state directory: the one held open (see `Dir::root`), its contents confined.
            _ if is_root(path) => found(Dir::root(path, false))?.map(|mut dir| {
                dir.confined = true;
                dir
            }),
            _ => found(Dir::open_dir(path))?,
        };
        dirs.insert(path.to_path_buf(), dir);
    }
    Ok(dirs[path].as_ref())
}

/// `opened`, or `None` when it does not exist.
fn found(opened: io::Result<Dir>) -> io::Result<Option<Dir>> {
    match opened {
        Ok(dir) => Ok(Some(dir)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Whether `path` is a state directory.
fn is_root(path: &Path) -> bool {
    ROOTS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .any(|root| root == path)
}

#[cfg(test)]
mod tests;
