//! Containment: no process an agent started outlives its attempt — in its process group or in a
//! session of its own (`setsid`) — and none outlives a SIGKILL of run.sh or the worker past the
//! start of the feature's next run. Each case runs with the per-attempt cgroup (this machine has
//! a writable cgroup v2) and without it (`HARNESS_NO_CGROUP=1`: the tag alone, as on a machine
//! that gives none).

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use harness_tests::{alive, code, processes_matching, text, wait_until, Project};

const ONE_FEATURE: &str = "features:\n  - id: F-001\n    title: Hello\n";

/// The processes running `sleep <seconds>`.
fn sleeping(seconds: u32) -> Vec<i32> {
    processes_matching(&format!("sleep {seconds}"))
}

/// Ends, when dropped (a failed assertion included), the `sleep <n>…` processes a test's agents
/// started, by pid: a test that fails must not leave them running for hours.
struct Sleepers(u32);

impl Drop for Sleepers {
    fn drop(&mut self) {
        for pid in processes_matching(&format!("sleep {}", self.0)) {
            // SAFETY: a process running this test's own `sleep <n>…`.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// With or without the per-attempt cgroup.
fn containment(command: &mut Command, cgroup: bool) -> &mut Command {
    if cgroup {
        command.env_remove("HARNESS_NO_CGROUP")
    } else {
        command.env("HARNESS_NO_CGROUP", "1")
    }
}

/// An agent that, the first time, leaves a child in its group (`sleep <n>1`) and one in a
/// session of its own (`setsid sleep <n>2`), then hangs; the next time, writes into running.txt
/// the pids of the `sleep <n>1` and `sleep <n>2` it can see running, and delivers the promise.
fn leaving_agent(project: &Project, n: u32) {
    project.shell_agent(&format!(
        "if [ -e started.txt ]; then\n\
         \x20 for d in /proc/[0-9]*; do\n\
         \x20   case \"$(tr '\\0' ' ' <$d/cmdline 2>/dev/null)\" in 'sleep {n}1 '|'sleep {n}2 ') echo ${{d#/proc/}};; esac\n\
         \x20 done >running.txt\n\
         \x20 echo '<promise>TASK_COMPLETE</promise>'; exit 0\n\
         fi\n\
         sleep {n}1 &\n\
         setsid sleep {n}2 </dev/null >/dev/null 2>&1 &\n\
         touch started.txt\n\
         exec sleep {n}0\n"
    ));
}

/// Kills, with SIGKILL, run.sh's whole process group or the worker alone, while the agent and
/// what it left run; then runs the feature again. Nothing of the first agent may be running when
/// the second starts, nor after; a process the harness did not start, running the very same
/// command, is left alone (and shows that the second agent could see such a process).
fn killed_then_run_again(n: u32, kill_whole_group: bool, cgroup: bool) {
    let _sleepers = Sleepers(n);
    let project = Project::new(ONE_FEATURE, "steps: []\n");
    leaving_agent(&project, n);
    let mut run = project.command(&["F-001"]);
    let mut child = containment(&mut run, cgroup)
        .process_group(0)
        .spawn()
        .unwrap();
    wait_until("the agent's children", || {
        project.workdir.join("started.txt").exists()
            && !sleeping(n * 10 + 1).is_empty()
            && !sleeping(n * 10 + 2).is_empty()
    });
    let left = [sleeping(n * 10 + 1), sleeping(n * 10 + 2)].concat();
    if kill_whole_group {
        // SAFETY: the process group of the run.sh this test started.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    } else {
        let state_dir = project.state_dir().display().to_string();
        let worker = processes_matching(&format!("--state-dir {state_dir}"));
        assert_eq!(worker.len(), 1, "one worker: {worker:?}");
        // SAFETY: the worker of the run.sh this test started.
        unsafe { libc::kill(worker[0], libc::SIGKILL) };
    }
    child.wait().unwrap();
    let mut bystander = Command::new("sleep")
        .arg(format!("{n}2"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let bystander_pid = bystander.id() as i32;

    let mut again = project.command(&["F-001"]);
    let out = containment(&mut again, cgroup).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let running = std::fs::read_to_string(project.workdir.join("running.txt")).unwrap();
    let running: Vec<i32> = running.lines().map(|pid| pid.parse().unwrap()).collect();
    assert_eq!(
        running,
        [bystander_pid],
        "the next agent started beside the old one's children {left:?}"
    );
    assert!(sleeping(n * 10 + 1).is_empty());
    assert_eq!(sleeping(n * 10 + 2), [bystander_pid]);
    assert!(
        text(&out.stderr).contains("left running"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        alive(bystander_pid),
        "a process the harness did not start was ended"
    );
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}

#[test]
fn nothing_an_agent_started_survives_a_sigkill_of_run_sh_past_the_next_run() {
    killed_then_run_again(630, true, true);
}

#[test]
fn nothing_an_agent_started_survives_a_sigkill_of_the_worker_past_the_next_run() {
    killed_then_run_again(631, false, false);
}

/// A hung agent stopped by timeout_secs, then one that exits with its promise: neither leaves
/// its `setsid` grandchild running.
#[test]
fn a_setsid_grandchild_does_not_outlive_its_attempt() {
    for (n, cgroup) in [(6321, true), (6322, false)] {
        let _sleepers = Sleepers(n);
        let project = Project::new(
            ONE_FEATURE,
            &format!(
                "steps:\n  - [spawn: 'setsid sleep {n}1', print: started, hang: true]\n  - [spawn: 'setsid sleep {n}2', promise: true]\n"
            ),
        );
        project.config("timeout_secs: 1\nkill_grace_secs: 1\n", "");
        let mut run = project.command(&["F-001"]);
        let out = containment(&mut run, cgroup).output().unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        assert_eq!(
            project.state("F-001")["attempts"][0]["outcome"],
            "timed_out"
        );
        assert!(
            sleeping(n * 10 + 1).is_empty(),
            "the timed-out agent's setsid grandchild survived (cgroup: {cgroup})"
        );
        assert!(
            sleeping(n * 10 + 2).is_empty(),
            "the finished agent's setsid grandchild survived (cgroup: {cgroup})"
        );
    }
}

/// Where cgroup v2 is mounted, if its root is the hierarchy's (as on this machine and CI's).
fn cgroup2_mount_point() -> Option<String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (fields, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = fields.split_whitespace().collect();
        (after.starts_with("cgroup2 ") && fields.get(3) == Some(&"/"))
            .then(|| fields.get(4).map(|point| point.to_string()))?
    })
}

/// An agent (as root) that moves a child out of its cgroup and its process group, keeping only
/// the tag: with a cgroup, the
/// whole machine is looked at for such strays at most once a minute, so the one of a quick
/// attempt may outlive it, but never the run.
#[test]
fn a_process_moved_out_of_its_cgroup_does_not_outlive_the_run() {
    let n = 6331;
    let _sleepers = Sleepers(n);
    let mount = cgroup2_mount_point().expect("a cgroup v2 mount (the containment tests need one)");
    let project = Project::new(ONE_FEATURE, "steps: []\n");
    // The first attempt leaves nothing (the scan at its end is the minute's); the second moves
    // its child to the harness's own cgroup, the parent of its own; the third completes.
    project.shell_agent(&format!(
        "if [ ! -e one ]; then touch one; exit 0; fi\n\
         if [ ! -e two ]; then\n\
         \x20 touch two\n\
         \x20 setsid sleep {n} </dev/null >/dev/null 2>&1 &\n\
         \x20 cg=$(sed -n 's/^0:://p' /proc/self/cgroup)\n\
         \x20 echo $! > \"{mount}$(dirname \"$cg\")/cgroup.procs\" || exit 9\n\
         \x20 echo $! > moved.txt\n\
         \x20 exit 0\n\
         fi\n\
         echo '<promise>TASK_COMPLETE</promise>'\n"
    ));
    let mut run = project.command(&["F-001"]);
    let out = containment(&mut run, true).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        project.workdir.join("moved.txt").exists(),
        "the agent moved its child"
    );
    // Ended, perhaps not yet reaped by whoever inherited it: a zombie runs nothing.
    assert!(
        sleeping(n).is_empty(),
        "the process moved out of the cgroup survived the run"
    );
}
