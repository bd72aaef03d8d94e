//! dlock's descendants, read from /proc (`/proc/PID/task/TID/children`, the kernel's own list
//! of each thread's children). dlock is a child subreaper, so everything the job leaves behind
//! is a descendant: the job's process group is alive exactly while one of them is a live
//! (not zombie) member of it. Asking this way, rather than `kill(-pgid, 0)`, lets dlock keep
//! the job's leader as an unreaped zombie until its group is gone: the zombie holds the group
//! id, so no unrelated process can take that number and be signalled in the job's place.

use std::fs::File;
use std::io::Read;

/// dlock's own children list: that of its main thread, which spawned the job and which the
/// kernel picks (the first live thread) as the new parent of the job's orphans.
fn own_children_path() -> String {
    let pid = std::process::id();
    format!("/proc/{pid}/task/{pid}/children")
}

/// Whether the kernel offers the children lists (CONFIG_PROC_CHILDREN; distribution kernels
/// have it, CRIU needs it).
pub fn available() -> bool {
    std::path::Path::new(&own_children_path()).exists()
}

/// A small /proc file in one read (their size reads as 0, so a growing buffer would take
/// several).
fn read_small(path: &str, buf: &mut [u8]) -> Option<usize> {
    File::open(path).ok()?.read(buf).ok()
}

fn parse_pids(text: &[u8]) -> impl Iterator<Item = i32> + '_ {
    text.split(|b| b.is_ascii_whitespace())
        .filter_map(|p| std::str::from_utf8(p).ok()?.parse().ok())
}

/// dlock's children.
pub fn own_children() -> Vec<i32> {
    children_at(&own_children_path())
}

fn children_at(path: &str) -> Vec<i32> {
    let mut buf = [0u8; 4096];
    let n = read_small(path, &mut buf).unwrap_or(0);
    parse_pids(&buf[..n]).collect()
}

/// The children of another process, over all its threads.
fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .flat_map(|task| children_at(&task.path().join("children").to_string_lossy()))
        .collect()
}

/// State letter and process group of `pid`, from /proc/PID/stat (None when it is gone).
fn state_and_group(pid: i32) -> Option<(char, i32)> {
    let mut buf = [0u8; 1024];
    let n = read_small(&format!("/proc/{pid}/stat"), &mut buf)?;
    parse_stat(std::str::from_utf8(&buf[..n]).ok()?)
}

fn parse_stat(stat: &str) -> Option<(char, i32)> {
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses; it ends at the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let pgrp = fields.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Is a live process of group `pgid` (whose leader, a zombie now, is dlock's child `pgid`)
/// among dlock's descendants? Zombies found on the way that are dlock's own children (orphans
/// of the job that have exited) are reaped by `reap`.
pub fn group_alive(pgid: i32, mut reap: impl FnMut(i32)) -> bool {
    // The leader is a zombie, held on purpose: it has no children left to look at.
    let own: Vec<i32> = own_children().into_iter().filter(|&p| p != pgid).collect();
    let mut todo = own.clone();
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
                todo.extend(children(pid));
            }
            Some(_) if own.contains(&pid) => reap(pid),
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
