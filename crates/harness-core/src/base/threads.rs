//! Background threads kept for the next job: an agent's invocation needs three (its prompt's
//! writer, its output's pump, its waiter), and starting and ending three threads costs more
//! system calls at every attempt than the rest of the attempt's bookkeeping.

use std::sync::mpsc::{self, Sender};
use std::sync::Mutex;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Threads that wait for their next job once done with one.
pub struct Pool {
    idle: Mutex<Vec<Sender<Job>>>,
}

/// The process's pool.
static POOL: Pool = Pool::new();

/// Runs `job` on a background thread of the process's pool (see [`Pool::run`]).
pub fn run(job: impl FnOnce() + Send + 'static) {
    POOL.run(job);
}

impl Pool {
    /// A pool with no thread yet.
    pub const fn new() -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Runs `job` on a background thread, detached, as `std::thread::spawn` would: on a thread
    /// that finished an earlier job where one waits, else on a new one. A job that blocks for
    /// ever holds only its own thread; one that panics ends its thread, as a spawned one would.
    pub fn run(&'static self, job: impl FnOnce() + Send + 'static) {
        let mut job: Job = Box::new(job);
        while let Some(idle) = self.lock().pop() {
            match idle.send(job) {
                Ok(()) => return,
                // Its thread is gone (a panic between two jobs): try another.
                Err(returned) => job = returned.0,
            }
        }
        let (sender, jobs) = mpsc::channel::<Job>();
        sender.send(job).expect("the receiver is alive");
        std::thread::spawn(move || {
            while let Ok(job) = jobs.recv() {
                job();
                self.lock().push(sender.clone());
            }
        });
    }

    /// How many threads wait for a job.
    pub fn idle(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Sender<Job>>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for Pool {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::time::{Duration, Instant};

    fn until(done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_finished_thread_takes_the_next_job() {
        static POOL: Pool = Pool::new();
        let (done, finished) = channel();
        let first = done.clone();
        POOL.run(move || first.send(std::thread::current().id()).unwrap());
        let one = finished.recv_timeout(Duration::from_secs(10)).unwrap();
        until(|| POOL.idle() == 1);
        POOL.run(move || done.send(std::thread::current().id()).unwrap());
        let two = finished.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(one, two);
    }

    #[test]
    fn a_blocked_job_does_not_hold_up_the_next() {
        static POOL: Pool = Pool::new();
        let (release, blocked) = channel::<()>();
        POOL.run(move || {
            let _ = blocked.recv();
        });
        let (done, finished) = channel();
        POOL.run(move || done.send(()).unwrap());
        finished.recv_timeout(Duration::from_secs(10)).unwrap();
        release.send(()).unwrap();
        until(|| POOL.idle() == 2);
        assert_eq!(POOL.idle(), 2);
    }

    #[test]
    fn a_job_that_panics_ends_only_its_thread() {
        static POOL: Pool = Pool::new();
        POOL.run(|| panic!("the job's own failure"));
        let (done, finished) = channel();
        POOL.run(move || done.send(()).unwrap());
        finished.recv_timeout(Duration::from_secs(10)).unwrap();
    }
}
