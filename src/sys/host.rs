//! This process and this machine: the stdio and SIGPIPE set-up dlock needs before anything
//! else, the host name and the wall clock.

/// Before anything else: make sure descriptors 0–2 exist and a closed pipe is an error to
/// report, not a reason to die.
pub fn prepare_process() {
    for fd in 0..3 {
        // SAFETY: fcntl(F_GETFD) only queries the descriptor.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            // Closed: fill the slot with /dev/null (open takes the lowest free descriptor), or
            // the Redis socket could become stderr and receive dlock's log lines.
            // SAFETY: the path is a NUL-terminated literal; the descriptor stays open for good.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
    // SAFETY: changes one signal disposition of this process.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// One malloc arena for the whole process, for a long-running server (the exporter). glibc gives
/// each thread that allocates its own arena, and each arena keeps what its largest request
/// freed: the exporter's workers take requests in turn, so over 100,000 locks its RSS grew with
/// every worker that answered `/metrics` (120 MB after 18 requests, still rising); with one
/// arena it levels off after the first few (49 MB). The workers wait on the network and
/// on Redis, not on each other's allocations. Other C libraries: nothing to do.
pub fn one_malloc_arena() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes a tunable of the allocator; called before the exporter
    // starts its threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Are dlock's stdout and stderr the same file (a terminal, `>log 2>&1`, one pipe)? Then one
/// pipe carries both of the job's streams under `--capture`, and their order is kept exactly.
pub fn stdout_is_stderr() -> bool {
    let id = |s: rustix::fs::Stat| (s.st_dev, s.st_ino);
    match (
        rustix::fs::fstat(std::io::stdout()),
        rustix::fs::fstat(std::io::stderr()),
    ) {
        (Ok(a), Ok(b)) => id(a) == id(b),
        _ => false,
    }
}

/// Ask for a pipe of `bytes` (Linux: F_SETPIPE_SZ; an unprivileged process may go up to
/// /proc/sys/fs/pipe-max-size, 1 MiB by default). False when refused: the pipe keeps its size.
pub fn widen_pipe(fd: std::os::fd::BorrowedFd<'_>, bytes: usize) -> bool {
    rustix::pipe::fcntl_setpipe_size(fd, bytes).is_ok()
}

/// This machine's name, for the holder metadata and `dlock drain`: DLOCK_HOST when it is set
/// to a valid name (`valid_host`; the CLI refuses an invalid one before anything runs), else
/// uname's node name, as gethostname gives it.
/// 64 random bits from the OS (getrandom, through uuid's v4): a backoff's seed, a --splay.
pub fn random() -> u64 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut seed = [0u8; 8];
    seed.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(seed)
}

pub fn hostname() -> String {
    if let Some(h) = std::env::var("DLOCK_HOST").ok().filter(|h| valid_host(h)) {
        return h;
    }
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// A host name dlock can record and match: 1 to 255 characters, none of them whitespace or a
/// control character.
pub fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.chars().count() <= 255
        && !h.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Who runs this dlock, for what it records of an operator's act (`dlock pause`, `dlock
/// cancel`): $USER, else $LOGNAME, else the user id (a cron job or container may set neither).
pub fn user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| format!("uid {}", rustix::process::getuid().as_raw()))
}

/// Unix time in µs, for a clock compared with the server's TIME to the millisecond.
pub fn unix_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0)
}

pub fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// A moment as the local calendar and clock show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// Unix second `secs` in this process's time zone (`TZ`, else the system's /etc/localtime), as
/// the C library's localtime_r computes it; None when it cannot represent the moment.
pub fn local_time(secs: i64) -> Option<LocalTime> {
    calendar(secs, false)
}

/// Unix second `secs` on the UTC calendar and clock (gmtime_r).
pub fn utc_time(secs: i64) -> Option<LocalTime> {
    calendar(secs, true)
}

fn calendar(secs: i64, utc: bool) -> Option<LocalTime> {
    let t = libc::time_t::try_from(secs).ok()?;
    // SAFETY: `tm` is plain data (integers and a nullable pointer): all zeroes is a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r and gmtime_r read `t` and write only `tm`, both live locals; unlike
    // localtime and gmtime they use no shared static buffer.
    let r = unsafe {
        if utc {
            libc::gmtime_r(&t, &mut tm)
        } else {
            libc::localtime_r(&t, &mut tm)
        }
    };
    if r.is_null() {
        return None;
    }
    let part = |v: libc::c_int| u32::try_from(v).ok();
    Some(LocalTime {
        year: tm.tm_year.checked_add(1900)?,
        month: part(tm.tm_mon)? + 1,
        day: part(tm.tm_mday)?,
        hour: part(tm.tm_hour)?,
        minute: part(tm.tm_min)?,
        second: part(tm.tm_sec)?,
    })
}

/// Unix ms as the local calendar and clock show it, to the second: `2026-12-01 03:00:12`
/// (`-` when it cannot be shown).
pub fn local_stamp(ms: i64) -> String {
    match local_time(ms.div_euclid(1000)) {
        Some(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            t.year, t.month, t.day, t.hour, t.minute, t.second
        ),
        None => "-".into(),
    }
}

/// Unix ms in UTC, to the second: `10:00:03 UTC`, or with the date first (`2026-12-02 10:00:03
/// UTC`) when `date`; `-` when it cannot be shown.
pub fn utc_stamp(ms: u64, date: bool) -> String {
    let t = i64::try_from(ms / 1000).ok().and_then(utc_time);
    match t {
        Some(t) if date => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            t.year, t.month, t.day, t.hour, t.minute, t.second
        ),
        Some(t) => format!("{:02}:{:02}:{:02} UTC", t.hour, t.minute, t.second),
        None => "-".into(),
    }
}

/// Unix ms in UTC as read at `now_ms`: with its date when it is not today or more than 20 h
/// away (`units::dated`), the time of day alone otherwise.
pub fn utc_at(ms: u64, now_ms: u64) -> String {
    utc_stamp(ms, crate::units::dated(ms, now_ms))
}

/// A span in UTC as read at `now_ms`: both dates when either end needs its own.
pub fn utc_span_at(start: u64, end: u64, now_ms: u64) -> String {
    let date = crate::units::dated(start, now_ms) || crate::units::dated(end, now_ms);
    utc_span(start, end, date)
}

/// A span of Unix ms in UTC, as an operator reads a window: `09:00–10:00 UTC`, the seconds
/// shown when either end has some (`09:00:30–09:01:00 UTC`), with both dates when `date`
/// (`2026-12-02 00:00–2026-12-03 00:00 UTC`); `-` when it cannot be shown.
pub fn utc_span(start: u64, end: u64, date: bool) -> String {
    let at = |ms: u64| i64::try_from(ms / 1000).ok().and_then(utc_time);
    let (Some(a), Some(b)) = (at(start), at(end)) else {
        return "-".into();
    };
    let seconds = a.second != 0 || b.second != 0;
    let show = |t: &LocalTime| {
        let mut s = String::new();
        if date {
            s.push_str(&format!("{:04}-{:02}-{:02} ", t.year, t.month, t.day));
        }
        s.push_str(&format!("{:02}:{:02}", t.hour, t.minute));
        if seconds {
            s.push_str(&format!(":{:02}", t.second));
        }
        s
    };
    format!("{}–{} UTC", show(&a), show(&b))
}

/// The local time of day of `ms` (Unix ms): `HH:MM:SS`, for a log line about the next minutes.
pub fn clock_time(ms: i64) -> String {
    match local_time(ms.div_euclid(1000)) {
        Some(t) => format!("{:02}:{:02}:{:02}", t.hour, t.minute, t.second),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests;
