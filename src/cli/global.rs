//! The options of every command (--url, -q, …): each subcommand flattens them in; written
//! before the command's name they are moved behind it (`argv::hoist`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::values::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_IO_TIMEOUT, DEFAULT_LOG_FORMAT, DEFAULT_LOG_LEVEL,
    DEFAULT_PREFIX, DEFAULT_URL, parse_duration,
};

// The options of every command. Each subcommand declares them (flattened, under
// EVERY_COMMAND); written before the command's name they are moved behind it (`argv::hoist`).
// (Not a doc comment: clap would make it the about text of every command it is flattened into.)
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS),
    /// redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db]
    /// or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for
    /// secrets: command lines are visible in `ps`
    #[arg(
        long,
        env = "DLOCK_URL",
        default_value = DEFAULT_URL,
        value_name = "URL",
        hide_env_values = true
    )]
    pub url: String,

    /// Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password
    /// in the URL. REDISCLI_AUTH is used when neither is given
    #[arg(
        long,
        env = "DLOCK_PASSWORD_FILE",
        value_name = "PATH",
        hide_env_values = true
    )]
    pub password_file: Option<PathBuf>,

    /// CA certificate (PEM) that signed the server's certificate, for a private CA; the system's
    /// trust store is used otherwise. Needs a rediss:// URL
    #[arg(
        long,
        env = "DLOCK_TLS_CA",
        value_name = "FILE",
        hide_env_values = true
    )]
    pub tls_ca: Option<PathBuf>,

    /// Client certificate (PEM) for mutual TLS; needs --tls-key
    #[arg(
        long,
        env = "DLOCK_TLS_CERT",
        value_name = "FILE",
        hide_env_values = true,
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,

    /// Client private key (PEM) for mutual TLS; needs --tls-cert
    #[arg(
        long,
        env = "DLOCK_TLS_KEY",
        value_name = "FILE",
        hide_env_values = true,
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,

    /// Do not verify the server's certificate (testing only: anyone on the path can impersonate
    /// the server; dlock warns on every run)
    #[arg(long, env = "DLOCK_TLS_INSECURE", hide_env_values = true)]
    pub tls_insecure: bool,

    /// Namespace prepended to every KEY: lock key = PREFIX + KEY
    #[arg(long, env = "DLOCK_PREFIX", hide_env_values = true, default_value = DEFAULT_PREFIX, value_name = "P")]
    pub prefix: String,

    /// Bound on establishing a connection to Redis
    #[arg(long, env = "DLOCK_CONNECT_TIMEOUT", hide_env_values = true, default_value = DEFAULT_CONNECT_TIMEOUT, value_name = "D", value_parser = parse_duration)]
    pub connect_timeout: Duration,

    /// Bound on each Redis command; in `run` never more than a third of the TTL
    #[arg(long, env = "DLOCK_IO_TIMEOUT", hide_env_values = true, default_value = DEFAULT_IO_TIMEOUT, value_name = "D", value_parser = parse_duration)]
    pub io_timeout: Duration,

    /// More log lines on stderr (debug)
    #[arg(short, long, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,

    /// Fewer log lines on stderr: -q warnings and errors only, -qq errors only
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub quiet: u8,

    /// Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level,
    /// event, key, msg and the event's numbers) for Kubernetes log pipelines
    #[arg(
        long,
        env = "DLOCK_LOG_FORMAT",
        hide_env_values = true,
        value_enum,
        default_value = DEFAULT_LOG_FORMAT,
        value_name = "FORMAT"
    )]
    pub log_format: LogFormatArg,

    /// Log level when neither -v nor -q is given
    #[arg(
        long = "log-level",
        env = "DLOCK_LOG",
        hide_env_values = true,
        value_enum,
        default_value = DEFAULT_LOG_LEVEL,
        value_name = "LEVEL",
        hide = true
    )]
    pub log_level: LogLevelArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormatArg {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevelArg {
    Error,
    Warn,
    Info,
    Debug,
}
