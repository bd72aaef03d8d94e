//! `dlock run`'s everyday line, read without clap.
//!
//! clap builds all 35 options of `run` at every start, runs each default through its value
//! parser and collects the matches: about 0.2 ms and 250,000 instructions, over a third of all
//! dlock does in a `dlock run -- true` (callgrind). A cron line is almost always the same
//! plain shape, `run --key K --ttl 30s … -- job`, so that shape is read here, into the same
//! `Cli` clap would build, with the same value parsers and the same defaults (`values`).
//!
//! Anything else goes to clap, which stays the definition and gives every error and all help:
//! a word that is not a long option of `run` or `-q`/`-v`, an option given twice (but
//! `--also`, which adds a key each time), a value that clap might read otherwise (one starting
//! with `-`) or that does not parse, a line without `--` or without a job, a missing --key, -q
//! with -v, and the rarer options (--password-file, TLS client certificates, --tls-insecure)
//! from the line or the environment. A property test
//! (`fast/tests.rs`) checks that on every line this reads, clap reads the same.

use std::ffi::OsString;

use clap::ValueEnum;

use super::args::{
    AlsoArgs, Cli, Command, GlobalArgs, LogFormatArg, LogLevelArg, OnBusyArg, RunArgs,
};
use super::values::*;

/// The options of `run` that may come from the environment, as clap reads them there
/// (`env = …`): each counts as `--NAME VALUE` when the line does not have it, and one that
/// `set` does not read (`--ping`) hands the line to clap. A test (`fast/tests.rs`) keeps this
/// list equal to the clap definition's.
pub(super) const ENV: [(&str, &str); 12] = [
    ("DLOCK_URL", "url"),
    ("DLOCK_PASSWORD_FILE", "password-file"),
    ("DLOCK_TLS_CA", "tls-ca"),
    ("DLOCK_TLS_CERT", "tls-cert"),
    ("DLOCK_TLS_KEY", "tls-key"),
    ("DLOCK_TLS_INSECURE", "tls-insecure"),
    ("DLOCK_PREFIX", "prefix"),
    ("DLOCK_CONNECT_TIMEOUT", "connect-timeout"),
    ("DLOCK_IO_TIMEOUT", "io-timeout"),
    ("DLOCK_LOG_FORMAT", "log-format"),
    ("DLOCK_LOG", "log-level"),
    ("DLOCK_PING_URL", "ping"),
];

/// `args` (the program's name first, the options of every command already behind the
/// command's name) as clap would parse them, when they are a plain `run` line; None hands the
/// line to clap. `env` looks up an environment variable.
pub(super) fn run_line(args: &[OsString], env: impl Fn(&str) -> Option<OsString>) -> Option<Cli> {
    let mut words = args.iter().skip(1);
    if words.next()? != "run" {
        return None;
    }
    let mut r = defaults()?;
    let mut seen: Vec<&str> = Vec::new();
    loop {
        let word = words.next()?.to_str()?;
        if word == "--" {
            break;
        }
        if let Some(short) = word.strip_prefix('-').filter(|s| !s.starts_with('-')) {
            // -q, -qq, -v, …: clap counts each letter, repeats included.
            if short.is_empty() {
                return None;
            }
            for c in short.chars() {
                count(&mut r.global, c)?;
            }
            continue;
        }
        let long = word.strip_prefix("--")?;
        let (name, inline) = long
            .split_once('=')
            .map_or((long, None), |(n, v)| (n, Some(v)));
        match name {
            "quiet" | "verbose" if inline.is_none() => count(&mut r.global, name.chars().next()?)?,
            "shell" | "no-notify" | "contain" | "no-stats" if inline.is_none() => {
                if seen.contains(&name) {
                    return None;
                }
                seen.push(name);
                match name {
                    "shell" => r.shell = true,
                    "no-notify" => r.no_notify = true,
                    "contain" => r.contain = true,
                    _ => r.no_stats = true,
                }
            }
            _ => {
                let value = match inline {
                    Some(v) => v,
                    None => words.next()?.to_str()?,
                };
                if value.starts_with('-') {
                    return None;
                }
                // --also is the one option given again and again: each adds a key.
                if name == "also" {
                    r.also.keys.push(value.into());
                    continue;
                }
                if seen.contains(&name) {
                    return None;
                }
                seen.push(name);
                set(&mut r, name, value)?;
            }
        }
    }
    r.command = words.cloned().collect();
    if r.command.is_empty() || !seen.contains(&"key") {
        return None;
    }
    if r.global.verbose > 0 && r.global.quiet > 0 {
        return None;
    }
    for (var, name) in ENV {
        if let Some(v) = env(var).filter(|_| !seen.contains(&name)) {
            let v = v.to_str().filter(|v| !v.is_empty())?;
            set(&mut r, name, v)?;
        }
    }
    Some(Cli {
        command: Command::Run(r),
    })
}

/// `run --key '' -- ` with every default, the key and the job still to fill in.
fn defaults() -> Option<RunArgs> {
    let d = |s: &str| parse_duration(s).ok();
    Some(RunArgs {
        key: String::new(),
        ttl: d(DEFAULT_TTL)?,
        wait: None,
        retry_min: d(DEFAULT_RETRY_MIN)?,
        retry_max: d(DEFAULT_RETRY_MAX)?,
        renew_every: None,
        max_renewals: parse_renewals(DEFAULT_MAX_RENEWALS).ok()?,
        grace: None,
        on_busy: OnBusyArg::from_str(DEFAULT_ON_BUSY, false).ok()?,
        conflict_exit_code: DEFAULT_CONFLICT_EXIT_CODE.parse().ok()?,
        shell: false,
        hold_at_least: d(DEFAULT_HOLD_AT_LEAST)?,
        min_replicas: DEFAULT_MIN_REPLICAS.parse().ok()?,
        replica_timeout: d(DEFAULT_REPLICA_TIMEOUT)?,
        no_notify: false,
        limit: DEFAULT_LIMIT.parse().ok()?,
        also: AlsoArgs {
            keys: Vec::new(),
            limit: None,
        },
        contain: false,
        no_stats: false,
        history: None,
        capture: None,
        every: None,
        tz: None,
        every_offset: d(DEFAULT_EVERY_OFFSET)?,
        after: None,
        not_due_exit_code: DEFAULT_NOT_DUE_EXIT_CODE.parse().ok()?,
        paused_exit_code: DEFAULT_PAUSED_EXIT_CODE.parse().ok()?,
        splay: d(DEFAULT_SPLAY)?,
        ping: None,
        command: Vec::new(),
        global: GlobalArgs {
            url: DEFAULT_URL.into(),
            password_file: None,
            tls_ca: None,
            tls_cert: None,
            tls_key: None,
            tls_insecure: false,
            prefix: DEFAULT_PREFIX.into(),
            connect_timeout: d(DEFAULT_CONNECT_TIMEOUT)?,
            io_timeout: d(DEFAULT_IO_TIMEOUT)?,
            verbose: 0,
            quiet: 0,
            log_format: LogFormatArg::from_str(DEFAULT_LOG_FORMAT, false).ok()?,
            log_level: LogLevelArg::from_str(DEFAULT_LOG_LEVEL, false).ok()?,
        },
    })
}

/// One more -q or -v.
fn count(g: &mut GlobalArgs, letter: char) -> Option<()> {
    let n = match letter {
        'q' => &mut g.quiet,
        'v' => &mut g.verbose,
        _ => return None,
    };
    *n = n.checked_add(1)?;
    Some(())
}

/// `--NAME VALUE`, through the value parser clap uses for it. None: not read here.
fn set(r: &mut RunArgs, name: &str, v: &str) -> Option<()> {
    let d = || parse_duration(v).ok();
    match name {
        "key" => r.key = v.into(),
        "ttl" => r.ttl = d()?,
        "wait" => r.wait = Some(d()?),
        "retry-min" => r.retry_min = d()?,
        "retry-max" => r.retry_max = d()?,
        "renew-every" => r.renew_every = Some(d()?),
        "max-renewals" => r.max_renewals = parse_renewals(v).ok()?,
        "grace" => r.grace = Some(d()?),
        "conflict-exit-code" => r.conflict_exit_code = v.parse().ok()?,
        "hold-at-least" => r.hold_at_least = d()?,
        "min-replicas" => r.min_replicas = v.parse().ok()?,
        "replica-timeout" => r.replica_timeout = d()?,
        "limit" => r.limit = v.parse().ok()?,
        "also-limit" => r.also.limit = Some(v.parse().ok()?),
        "history" => r.history = Some(v.parse().ok().filter(|n| *n <= MAX_HISTORY)?),
        "capture" => r.capture = Some(parse_size(v).ok()?),
        "every" => r.every = Some(parse_every_value(v).ok()?),
        "tz" => r.tz = Some(v.into()),
        "every-offset" => r.every_offset = d()?,
        "not-due-exit-code" => r.not_due_exit_code = v.parse().ok()?,
        "paused-exit-code" => r.paused_exit_code = v.parse().ok()?,
        "splay" => r.splay = parse_splay(v).ok()?,
        "url" => r.global.url = v.into(),
        "prefix" => r.global.prefix = v.into(),
        "connect-timeout" => r.global.connect_timeout = d()?,
        "io-timeout" => r.global.io_timeout = d()?,
        "log-format" => r.global.log_format = LogFormatArg::from_str(v, false).ok()?,
        "log-level" => r.global.log_level = LogLevelArg::from_str(v, false).ok()?,
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests;
