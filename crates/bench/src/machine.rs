//! The machine the figures came from: CPUs, model, memory, kernel, compiler, date, load.

use std::process::Command;

/// What the report says about the machine.
#[derive(Debug, Clone)]
pub struct Machine {
    /// Logical CPUs.
    pub cpus: usize,
    /// `model name` of /proc/cpuinfo.
    pub model: String,
    /// MemTotal of /proc/meminfo.
    pub memory: String,
    /// The kernel release.
    pub kernel: String,
    /// `rustc --version`.
    pub rustc: String,
    /// `git --version`.
    pub git: String,
    /// When the benchmarks ran (UTC).
    pub date: String,
    /// The load average when the benchmarks started.
    pub load: String,
}

impl Machine {
    /// Reads it all; what cannot be read is `unknown`.
    pub fn describe() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| format!("{:.1} GiB", kb / (1024.0 * 1024.0)))
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let load = load_average();
        Self {
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            model,
            memory,
            kernel,
            rustc: command_line("rustc", &["--version"]),
            git: command_line("git", &["--version"]),
            date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
            load,
        }
    }

    /// The report's section.
    pub fn markdown(&self) -> String {
        format!(
            "| | |\n|---|---|\n| CPUs (nproc) | {} |\n| model | {} |\n| memory | {} |\n| kernel | {} |\n| rustc | {} |\n| git | {} |\n| date | {} |\n| load average at start | {} |\n",
            self.cpus, self.model, self.memory, self.kernel, self.rustc, self.git, self.date, self.load
        )
    }
}

/// The 1, 5 and 15-minute load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn command_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}
