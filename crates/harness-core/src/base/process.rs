//! What `/proc/<pid>/stat` says of another process: whether it still runs (a zombie, killed
//! and not reaped yet, does not) and when it started.

/// The `/proc/<pid>/stat` line of `pid`, if there is one.
pub fn stat(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()
}

/// The fields of a stat line after the command name, which is in parentheses and may hold
/// spaces or parentheses itself: the state (field 3) first.
fn after_name(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    stat.rsplit_once(')')
        .map(|(_, after_name)| after_name.split_whitespace())
}

/// Whether the stat line is a zombie's (or a dead process's): it runs no more.
pub fn is_zombie(stat: &str) -> bool {
    matches!(
        after_name(stat).and_then(|mut fields| fields.next()),
        Some("Z" | "X" | "x")
    )
}

/// The start time in a stat line (field 22), in clock ticks since boot: with the pid, it names
/// one process for good.
pub fn start_time(stat: &str) -> Option<u64> {
    after_name(stat)?.nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let line =
            "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 50";
        assert_eq!(start_time(line), Some(98765));
        assert!(!is_zombie(line));
        assert!(is_zombie("1234 (a) b) Z 1 1234"));
        assert_eq!(start_time("garbage"), None);
        assert!(!is_zombie("garbage"));
        let own = stat(std::process::id() as i32).unwrap();
        assert!(start_time(&own).is_some() && !is_zombie(&own));
    }
}
