//! dlock's descendants, read from /proc (`/proc/PID/task/TID/children`, the kernel's own list
//! of each thread's children). dlock is a child subreaper, so everything the job starts stays
//! a descendant — a daemon that called `setsid` or double-forked included: it comes back to
//! dlock when its parent exits. The job is alive exactly while one of them is alive (not a
//! zombie). Asking this way, rather than `kill(-pgid, 0)`, also lets dlock keep the job's
//! leader as an unreaped zombie until the job is gone: the zombie holds the group id, so no
//! unrelated process can take that number and be signalled in the job's place.

use std::fs::File;
use std::io::Read;

/// dlock's own children list: that of its main thread, which spawned the job and which the
/// kernel picks (the first live thread) as the new parent of the job's orphans.
fn own_children_path() -> String {
    let pid = std::process::id();
    format!("/proc/{pid}/task/{pid}/children")
}

/// Whether the kernel offers the children lists (CONFIG_PROC_CHILDREN; distribution kernels
/// have it, CRIU needs it), and /proc shows dlock's own PID namespace: under `unshare --pid`
/// without `--mount-proc`, /proc is the parent namespace's, whose numbers are not dlock's.
pub fn available() -> bool {
    let own_namespace = std::fs::read_link("/proc/self")
        .is_ok_and(|p| p.as_os_str() == std::process::id().to_string().as_str());
    own_namespace && std::path::Path::new(&own_children_path()).exists()
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

/// What /proc/PID/stat says about a process: state letter, parent, process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    state: char,
    ppid: i32,
    pgrp: i32,
}

impl Stat {
    fn live(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// `pid`'s stat line (None when it is gone).
fn stat(pid: i32) -> Option<Stat> {
    let mut buf = [0u8; 1024];
    let n = read_small(&format!("/proc/{pid}/stat"), &mut buf)?;
    parse_stat(std::str::from_utf8(&buf[..n]).ok()?)
}

fn parse_stat(stat: &str) -> Option<Stat> {
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses; it ends at the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// Is `pid` (still) a child of `parent`? Asked after a pidfd is open on `pid`: the pidfd
/// stays with the process it was opened on, so if this says yes, that process is the one
/// found in `parent`'s children list and not a stranger that took its number.
pub fn is_child_of(pid: i32, parent: i32) -> bool {
    stat(pid).is_some_and(|s| s.ppid == parent)
}

/// A live descendant of dlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descendant {
    pub pid: i32,
    /// Its parent when it was found: dlock, or another descendant.
    pub parent: i32,
    pub pgrp: i32,
}

/// A tree that keeps growing faster than it can be walked is cut off here (it is alive
/// enough; SIGKILL to what was found slows it down for the next walk).
const MAX_WALK: usize = 100_000;

/// dlock's live descendants, parents before their children. `skip` (the init of `--contain`)
/// is walked through but not listed. Zombies that are dlock's own children are handed to
/// `reap`, except `leader` (the job's, held until its group is gone).
pub fn descendants(leader: i32, skip: Option<i32>, mut reap: impl FnMut(i32)) -> Vec<Descendant> {
    let me = std::process::id() as i32;
    let mut todo: Vec<(i32, i32)> = own_children().into_iter().map(|p| (p, me)).collect();
    todo.reverse();
    let mut found = Vec::new();
    let mut seen = 0usize;
    while let Some((pid, parent)) = todo.pop() {
        seen += 1;
        if seen > MAX_WALK {
            break;
        }
        match stat(pid) {
            Some(s) if s.live() => {
                if Some(pid) != skip {
                    found.push(Descendant {
                        pid,
                        parent,
                        pgrp: s.pgrp,
                    });
                }
                todo.extend(children(pid).into_iter().rev().map(|c| (c, pid)));
            }
            Some(_) if parent == me && pid != leader => reap(pid),
            _ => {}
        }
    }
    found
}

/// What an operator recognises a process by: its command line, shortened (its name in
/// brackets when it has none, as `ps` shows kernel threads and zombies).
pub fn command(pid: i32) -> String {
    let mut buf = [0u8; 256];
    let n = read_small(&format!("/proc/{pid}/cmdline"), &mut buf).unwrap_or(0);
    let line: Vec<u8> = buf[..n]
        .strip_suffix(&[0])
        .unwrap_or(&buf[..n])
        .iter()
        .map(|&b| if b == 0 { b' ' } else { b })
        .collect();
    let mut text = String::from_utf8_lossy(&line).into_owned();
    if text.is_empty() {
        let mut comm = [0u8; 64];
        let n = read_small(&format!("/proc/{pid}/comm"), &mut comm).unwrap_or(0);
        text = format!("[{}]", String::from_utf8_lossy(&comm[..n]).trim_end());
    } else if n == buf.len() {
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests;
