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
    let cmd = crate::cli::args::command();
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

/// Sections clap does not generate: exit status (from `exit::TABLE`), environment, examples.
fn man_extra() -> String {
    format!(".SH \"EXIT STATUS\"\n{}{MAN_EXTRA}", crate::exit::roff())
}

const MAN_EXTRA: &str = r#".PP
\fBdlock release\fR exits 0 when it released the lock, 1 when nothing was released (not held, or held by another token), 2 on usage errors and 69 when Redis is unavailable. \fBdlock status\fR exits 0, 2 or 69.
.SH ENVIRONMENT
The job sees DLOCK_KEY (full lock key), DLOCK_TOKEN (this acquisition's token), DLOCK_FENCE (fencing token, strictly increasing per key), DLOCK_TTL_MS and DLOCK_DEADLINE_MS (Unix ms by which dlock will have stopped the job if renewals run out).
.PP
dlock reads DLOCK_URL, DLOCK_PASSWORD_FILE, REDISCLI_AUTH, DLOCK_PREFIX, DLOCK_CONNECT_TIMEOUT, DLOCK_IO_TIMEOUT, DLOCK_LOG_FORMAT (text, json) and DLOCK_LOG (error, warn, info, debug).
.SH EXAMPLES
.nf
# crontab: each tick runs once, on one host; the others skip quietly
* * * * * dlock \-q run \-\-key remind \-\-ttl 2m \-\-wait 0 \-\-conflict\-exit\-code 0 \-\-hold\-at\-least 50s \-\- ./remind.sh

# who holds what, and how each lock behaves (failure rate, hold times, recommended TTL)
dlock status
dlock status \-\-json reconcile

# break a stuck lock (its holder stops its job at the next renewal)
dlock release reconcile \-\-force

# Kubernetes CronJob command, password from a mounted secret
dlock \-\-url redis://redis.infra:6379 \-\-password\-file /secrets/redis run \-\-key billing:daily \-\-ttl 10m \-\- /app/billing
.fi
"#;
