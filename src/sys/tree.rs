//! dlock's descendants, read from /proc (`/proc/PID/task/TID/children`, the kernel's own list
//! of each thread's children). dlock is a child subreaper, so everything the job leaves behind
//! is a descendant: the job's process group is alive exactly while one of them is a live
//! (not zombie) member of it. Asking this way, rather than `kill(-pgid, 0)`, lets dlock keep
//! the job's leader as an unreaped zombie until its group is gone: the zombie holds the group
//! id, so no unrelated process can take that number and be signalled in the job's place.

use std::fs;

/// Whether the kernel offers the children lists (CONFIG_PROC_CHILDREN; distribution kernels
/// have it, CRIU needs it).
pub fn available() -> bool {
    fs::read_dir("/proc/self/task")
        .ok()
        .and_then(|mut tasks| tasks.next())
        .and_then(|t| t.ok())
        .is_some_and(|t| t.path().join("children").exists())
}

/// The children of `pid` ("self" for dlock), over all its threads.
pub fn children(pid: &str) -> Vec<i32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = fs::read_to_string(task.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// State letter and process group of `pid`, from /proc/PID/stat (None when it is gone).
fn state_and_group(pid: i32) -> Option<(char, i32)> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn parse_stat(stat: &str) -> Option<(char, i32)> {
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses; it ends at the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let pgrp = fields.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Is a live process of group `pgid` among dlock's descendants?
pub fn group_alive(pgid: i32) -> bool {
    let mut todo = children("self");
    let mut seen = 0usize;
    while let Some(pid) = todo.pop() {
        // A tree that keeps growing faster than it can be walked is alive enough.
        seen += 1;
        if seen > 100_000 {
            return true;
        }
        match state_and_group(pid) {
            Some((state, group)) if state != 'Z' && state != 'X' => {
                if group == pgid {
                    return true;
                }
                todo.extend(children(&pid.to_string()));
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_a_tricky_command_name_reads_right() {
        let line = "4242 (a) b (c) Z 1 4200 4200 0 -1 4194560 0 0";
        assert_eq!(parse_stat(line), Some(('Z', 4200)));
        assert_eq!(parse_stat("4242 (sleep"), None);
        // Our own process (its main thread may be running or waiting for the test threads):
        // alive, in a process group.
        let (state, group) = state_and_group(std::process::id() as i32).unwrap_or(('?', -1));
        assert!("RSD".contains(state), "{state}");
        assert!(group > 0);
    }
}
