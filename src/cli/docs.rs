//! Man page and shell completions, generated from the clap definition. The committed copies in
//! `man/` and `completions/` are checked against these by a test, so they never go stale.

use clap_complete::Shell;

/// The shells whose completions are committed under `completions/`.
pub const SHELLS: [(Shell, &str); 3] = [
    (Shell::Bash, "dlock.bash"),
    (Shell::Zsh, "_dlock"),
    (Shell::Fish, "dlock.fish"),
];

pub fn completions(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::args::command(), "dlock", &mut out);
    out
}

pub fn man_page() -> std::io::Result<Vec<u8>> {
    // The version alone: the commit and build `--version` adds would make the committed page
    // stale at every commit.
    let cmd = crate::cli::args::command().version(env!("CARGO_PKG_VERSION"));
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    // The options of every command are in the OPTIONS section once, not in every command's.
    let every: Vec<clap::Id> = cmd.get_arguments().map(|a| a.get_id().clone()).collect();
    for sub in cmd.get_subcommands() {
        let name = format!("dlock {}", sub.get_name());
        out.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        // Built alone: its own arguments added (they are deferred).
        let mut sub = sub.clone().bin_name(name);
        sub.build();
        let sub = sub.mut_args(|a| {
            let every = every.contains(a.get_id());
            a.hide(every)
        });
        let sub_man = clap_mangen::Man::new(sub);
        sub_man.render_synopsis_section(&mut out)?;
        sub_man.render_options_section(&mut out)?;
    }
    out.extend_from_slice(man_extra().as_bytes());
    man.render_version_section(&mut out)?;
    Ok(out)
}

/// Sections clap does not generate: exit status (from the exit table (`exit::rows`)),
/// environment, examples; a code the prose names is `{NAME}` (`exit::fill`).
fn man_extra() -> String {
    format!(
        ".SH \"EXIT STATUS\"\n{}{}",
        crate::exit::roff(),
        crate::exit::fill(MAN_EXTRA)
    )
}

const MAN_EXTRA: &str = r#".SH ENVIRONMENT
Each option of every command may come from a variable; the command line wins.
.TP
\fBDLOCK_URL\fR
\-\-url (default redis://127.0.0.1:6379)
.TP
\fBDLOCK_PASSWORD_FILE\fR
\-\-password\-file
.TP
\fBREDISCLI_AUTH\fR
the Redis password when neither \-\-password\-file nor the URL gives one (as redis\-cli reads it)
.TP
\fBDLOCK_TLS_CA\fR, \fBDLOCK_TLS_CERT\fR, \fBDLOCK_TLS_KEY\fR
\-\-tls\-ca, \-\-tls\-cert, \-\-tls\-key
.TP
\fBDLOCK_TLS_INSECURE\fR
\-\-tls\-insecure: true or false
.TP
\fBDLOCK_PREFIX\fR
\-\-prefix (default dlock:)
.TP
\fBDLOCK_CONNECT_TIMEOUT\fR, \fBDLOCK_IO_TIMEOUT\fR
\-\-connect\-timeout, \-\-io\-timeout (default 2s each)
.TP
\fBDLOCK_LOG_FORMAT\fR
\-\-log\-format: text or json
.TP
\fBDLOCK_LOG\fR
the log level when neither \-v nor \-q is given: error, warn, info (default) or debug
.TP
\fBDLOCK_PING_URL\fR
\fBdlock run\fR \-\-ping: the Healthchecks\-compatible URL the start and end pings go to (a credential: logs show its scheme and host only); set and empty (a crontab's DLOCK_PING_URL= above lines that must not ping), no ping
.TP
\fBHTTPS_PROXY\fR, \fBALL_PROXY\fR, \fBHTTP_PROXY\fR, \fBNO_PROXY\fR
the proxy \-\-ping's requests go through (the first of the three that is set, lower case too, for http and https URLs alike) and the hosts that bypass it
.TP
\fBSSL_CERT_FILE\fR, \fBSSL_CERT_DIR\fR
where \-\-ping reads the CA roots for an https URL instead of the system's store
.TP
\fBPATH\fR
where \fBdlock run\fR looks for a COMMAND without a slash
.TP
\fBTZ\fR
the time zone of \fBdlock history\fR's ENDED column (else the system's)
.TP
\fBDLOCK_TZ\fR
\-\-tz: the time zone of a calendar \-\-every (an IANA name in any case, recorded as the zone database spells it; default UTC); a duration \-\-every ignores it
.TP
\fBUSER\fR, \fBLOGNAME\fR
who runs \fBdlock pause\fR or \fBdlock cancel\fR, for the "by" they record (HOST NAMES below): $USER, else $LOGNAME, else uid N
.TP
\fBDLOCK_HOST\fR
the host name dlock records and \fBdlock drain\fR matches, instead of \fBuname \-n\fR (HOST NAMES below): 1 to 255 characters without spaces or control characters, else exit {USAGE}
.PP
\fBdlock run\fR gives the job its own environment (DLOCK_URL and REDISCLI_AUTH included) and sets:
.TP
\fBDLOCK_KEY\fR
the full lock key (prefix + KEY)
.TP
\fBDLOCK_TOKEN\fR
this acquisition's token, the lock's value (what \fBdlock release \-\-token\fR takes)
.TP
\fBDLOCK_FENCE\fR
fencing token: an integer that strictly increases with every acquisition of the key
.TP
\fBDLOCK_SLOT\fR
the slot this run holds, 0 … N\-1 with \-\-limit N (0 for a plain lock)
.TP
\fBDLOCK_LIMIT\fR
N of \-\-limit (1 for a plain lock)
.TP
\fBDLOCK_TTL_MS\fR
the lease length in ms
.TP
\fBDLOCK_DEADLINE_MS\fR
Unix time (ms) by which dlock will have stopped the job if no renewal is confirmed
.TP
\fBDLOCK_ALSO\fR
the \-\-also keys the run holds, one line per key in command\-line order: its fence, a tab, its slot, a tab, the full lock key (last: the rest of the line); lines joined by a newline, none after the last; empty without \-\-also
.TP
\fBDLOCK_ALSO_LIMIT\fR
N of \-\-also\-limit (1 without it)
.SH PINGS
With \-\-ping URL (or DLOCK_PING_URL) only the host that holds the lock pings: POST URL/start?rid=RUN when the job starts, and POST URL/CODE?rid=RUN once the run has ended and the lock is released, CODE being dlock's exit status (0 a success) and RUN the run id (the token as a hyphenated UUID, which \fBdlock history \-\-run\fR takes). The end ping's body is one line:
.PP
.nf
dlock: KEY on HOST pid PID slot S fence F took DURATION outcome OUTCOME
.fi
.PP
HOST as HOST NAMES says, PID dlock's own, S its slot, F its fencing token, DURATION how long it held the lock, OUTCOME the run log's (ok, failed, signal, lost, cap, compare_failure, cancelled). A cancelled run (CODE {CANCELLED}) adds the line "cancelled by HOST (USER): REASON". With \-\-capture the kept output follows: whole when it fits in what the server keeps (its Ping\-Body\-Limit header; 10,000 bytes when it does not say), else its last whole lines after a line that counts the bytes of output before them:
.PP
.nf
[… 97,312 bytes before this …]
.fi
.PP
The output is made UTF\-8 (invalid bytes become U+FFFD); where \-\-capture itself left the middle out, its own line "[dlock: N bytes left out]" stands there. A job that could not be started ({NOT_EXECUTABLE}, {NOT_FOUND}) sends no start ping, and its end ping's body is the error line. A try that finds the key paused sends one POST URL/log (recorded in the check's log, its state unchanged) whose body is the paused line, "dlock:KEY: paused by HOST (USER) until 16:30:00 UTC: REASON; \(gadlock resume KEY\(ga ends it". Busy and not\-due tries send nothing. Each request is bounded by \-\-connect\-timeout and \-\-io\-timeout and tried twice more after a connection error, 408, 429 or 5xx; a failed ping is one warning line and never changes the exit status.
.SH "HOST NAMES"
Wherever dlock records which machine did something it writes DLOCK_HOST when set, else this machine's node name as \fBuname \-n\fR prints it (uname(2)'s nodename, what gethostname(2) returns): the name the kernel holds, neither looked up in DNS nor made fully qualified; in a container, the container's own (a Kubernetes pod's name, unless the pod sets its hostname). A name that is not UTF\-8 has its invalid bytes replaced by U+FFFD; an empty one is written empty. That name is the holder's host (\fBdlock status\fR, \fB\-\-json\fR's holder.host, the board), each run's host in the run log (\fBdlock history\fR, status's LAST), the HOST of the end ping, and, with the user (ENVIRONMENT: USER), the "by" of \fBdlock pause\fR and \fBdlock cancel\fR: HOST (USER); and the host \fBdlock drain\fR drains by default and a drained try matches.
.SH EXAMPLES
.nf
# crontab: each tick runs once, on one host; the others skip quietly
* * * * * dlock \-q run \-\-key remind \-\-ttl 2m \-\-wait 0 \-\-conflict\-exit\-code 0 \-\-hold\-at\-least 50s \-\- ./remind.sh

# who holds what: state, holder, TTL, fence, the last runs and the last success of each lock
dlock status
# and how each lock behaves: failure rate (BUSY%), hold times, compare failures, recommended TTL
dlock status \-\-wide
dlock status \-\-json reconcile

# break a stuck lock (its holder stops its job at the next renewal)
dlock release reconcile \-\-force

# Kubernetes CronJob command, password from a mounted secret
dlock \-\-url redis://redis.infra:6379 \-\-password\-file /secrets/redis run \-\-key billing:daily \-\-ttl 10m \-\- /app/billing
.fi
"#;
