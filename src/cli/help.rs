//! The help texts: `--help`'s examples for dlock and each subcommand, and the exit-code
//! summary (rendered from the exit table (`crate::exit::rows`)). They are part of the man page too.

pub const AFTER_HELP: &str = "\
Examples:
  # crontab on every host: each tick runs once, on one host; the others skip quietly
  * * * * * dlock -q run --key remind --ttl 2m --wait 0 --conflict-exit-code 0 --hold-at-least 50s -- ./remind.sh

  # Kubernetes CronJob container command (password from a mounted secret)
  command: [\"dlock\", \"--url\", \"redis://redis.infra:6379\", \"--password-file\", \"/secrets/redis\",
            \"run\", \"--key\", \"billing:daily\", \"--ttl\", \"10m\", \"--\", \"/app/billing\"]

  # one-off, serialised behind whoever holds the lock (wait up to 10 minutes)
  dlock run --key deploy:web --ttl 2m --wait 10m --shell -- 'make deploy && make smoke'

  # at most 3 report builders across the fleet, each told its slot (0, 1 or 2)
  dlock run --key reports --limit 3 --wait 1h -- sh -c './build.sh --shard \"$DLOCK_SLOT\"'

  # a job that starts daemons: nothing of it may outlive dlock, even kill -9 dlock
  dlock run --key reindex --ttl 5m --contain -- ./reindex.sh

  # the newest schedule wins: a still-running sync is stopped (as dlock cancel), then this one runs
  dlock run --key sync --ttl 1m --on-busy replace -- ./sync.sh";

pub const EXPORTER_HELP: &str = "\
Examples:
  dlock exporter --listen 0.0.0.0:9433                 # every lock under the prefix
  dlock exporter billing:daily reconcile --listen :9433
  dlock exporter --listen :9433 --max-age 26h          # the board marks day-old successes

GET /metrics reads Redis once per scrape, within --connect-timeout and --io-timeout; with Redis
down it still answers 200 with dlock_up 0. Its dlock_server_evicting and
dlock_server_evicted_keys_total come from INFO, read at most once a minute (absent for a user
without +info). GET / is the status board (one row per lock, trouble
on top), GET /locks/KEY one lock with its run log (404 for one that never ran: \"no lock named
KEY has run under PREFIX\", as `status KEY` notes it), GET /api/locks the same JSON as
`status --json`. Requests are served by a few threads, so a scrape never waits behind a page.
SIGTERM or SIGINT stops it.";

pub const CHECK_HELP: &str = "\
At least one rule; a KEY fails when any of its rules fails. Every limit is inclusive.

Examples:
  dlock check billing:daily --max-age 26h        # the daily job succeeded on some host today
  dlock check reconcile remind --max-age 10m     # several keys: one line each
  dlock check billing:daily --max-failures 3     # alert on the third failed run in a row
  dlock check export --min-duration 30s --max-duration 2h   # not suspiciously fast, not stuck

  # crontab: mail root when the nightly job did not succeed, failed twice, or is stuck
  30 6 * * * dlock -q check billing --max-age 26h --max-failures 2 --max-duration 3h || mail root

Prints one line per KEY with its numbers: every rule's when it passes; when it fails, the
failing rules' and what the last run did.";

pub const DOCTOR_HELP: &str = "\
Examples:
  dlock doctor                        # the server dlock's --url points at
  dlock doctor --json --strict        # a pre-deploy gate: fails on any failing or unread row
  dlock doctor billing:daily          # the keys row for one key, not every lock under --prefix

One row per check: ✓ fine, ! a warning, ✗ a failure, ? could not be read; each says what was
found (with the numbers), why it matters and the fix. Rows: server (version, scripting, TLS,
20 PINGs' p50/p99 against --io-timeout), eviction (INFO memory, else CONFIG GET maxmemory and
maxmemory-policy), persistence (INFO persistence; CONFIG GET appendonly, appendfsync, save),
replication (INFO replication; CONFIG GET min-replicas-to-write), clock (TIME against this
host's clock), rights (every command dlock sends, for the user it connects as: ACL WHOAMI and
ACL DRYRUN when allowed, else each tried on a scratch key {PREFIXdoctor:RANDOM} that one script
writes and deletes; the fix is the ACL SETUSER rule to add), keys (every lock under the prefix
found with SCAN, or each KEY, as status reads them, and each run log's newest 1000 runs with
XREVRANGE: ✗ when the runs' p99 is beyond the lease's reach, --max-renewals × --renew-every +
--ttl − --grace, judged on runs that recorded their lease; ! for a TTL over 10 × the p99, lost
leases, cap hits or compare failures, two or more commands under one key, keys of other
programs; ✗ for a lock with no expiry). A command the user may not run makes its row ?, never
an outage: run doctor once as an admin user and routinely as dlock's own. Read-only but for
that scratch key; no real lock is touched.";

pub const HISTORY_HELP: &str = "\
Examples:
  dlock history billing:daily                 # every run the log keeps, newest first
  dlock history billing:daily --failed -n 5   # the last 5 runs that did not end ok
  dlock history billing:daily --run 3f9a2c    # what that run wrote (run with --capture 64KiB)

Columns: ENDED in local time (TZ), TOOK = how long the run held the lock, EXIT = dlock's exit
status for that run, RUN = the start of the run id (its DLOCK_TOKEN). The log keeps the last
--history runs (default 100) of every `dlock run` whose job started.";

pub const DRAIN_HELP: &str = "\
Examples:
  dlock drain --reason 'kernel update' --wait --timeout 10m && reboot
  dlock drain --host web-2                 # from another terminal
  dlock undrain                            # after the reboot

A drained host's tries run nothing (one line, exit {PAUSED_DEFAULT} or --paused-exit-code, as a paused try);
the other hosts go on, so an --every period is taken by another host's next try. The host is
the name dlock records (DLOCK_HOST, else uname -n). --wait returns once no run of that host
holds a lock under the prefix; the drain stays until `dlock undrain`.";

pub const UNDRAIN_HELP: &str = "\
Examples:
  dlock undrain                            # this host
  dlock undrain --host web-2";

pub const TRIGGER_HELP: &str = "\
Examples:
  dlock trigger billing:daily --reason 'rerun after the fix'   # once more today
  dlock history billing:daily -n 1                             # the manual run, when it ran

KEY must have an --every record on the server (a success, or a try that recorded its period).
The trigger waits in KEY's done record until a try of KEY on any host is granted: that run
takes it, whether its window was done or not, and the window is done again after it. A paused
or busy key keeps it for a later try. An older dlock does not read it (its tries stay not due).";

pub const NEXT_HELP: &str = "\
Examples:
  dlock next billing:daily                          # the key's recorded period, from now
  dlock next --every '30 2 * * *' --tz Europe/Berlin --from 2027-03-27 -n 3   # a DST night
  dlock next --every 1d --every-offset 2h -n 7 --json

Columns: START on the UTC clock and, for a calendar, on the zone's clock (dlock's bundled zone
database), then what a clock change did: a fixed time the clock skips runs at the first time
after the jump, one it shows twice runs at the first only; other schedules skip the times a
jump leaves out and run on both passes of a repeated hour. KEY's period is read from the
server (what every host's tries must use); the windows are computed here, as a try does.";

pub const STATUS_HELP: &str = "\
Examples:
  dlock status                      # every lock under the prefix: holder, TTL, metrics
  dlock status reconcile --json     # one key, for scripts
  dlock -q status --format prometheus --output /var/lib/node_exporter/dlock.prom   # textfile collector

The table fits 100 columns (a key over 30 characters is shortened in the middle with …);
--wide adds every metric and shows keys whole. Columns: BUSY% = runs that found the
lock busy for their whole --wait (not failed jobs: RECENT and LAST show those); P50/P99 = hold time;
CMP-FAIL = releases or renewals that found someone else's value; REC-TTL = 3 × p99;
RECENT = the run log's last runs (up to 10, no more than --history keeps), oldest left:
✓ ok, ✗ any other end. A KEY named that never ran keeps its row (free, fence 0) and is noted
on stderr: \"dlock: no lock named KEY has run under PREFIX\", the board's 404 for it.";

const RELEASE_HELP: &str = "\
Examples:
  dlock release reconcile --force                  # break a stuck lock, print whose it was
  dlock release reconcile --token \"$DLOCK_TOKEN\"   # only if that acquisition still holds it
  dlock release reports --force --slot 2           # a semaphore: break slot 2 only
  dlock release report --every 1d                  # every host now runs report --every 1d

The holder of a broken lock notices at its next renewal and stops its job (exit {LOST}).
--every changes the period every host must use for the key (a try with another one exits {USAGE});
it keeps the last success, so the new period's window holding it stays done, and breaks no lock.";

pub const PAUSE_HELP: &str = "\
Examples:
  dlock pause reconcile --for 2h --reason 'db upgrade'   # no host starts reconcile for 2h
  dlock pause --all --reason 'db upgrade'                 # no key under the prefix starts
  dlock resume reconcile                                  # reconcile runs again

A try of a paused key runs nothing and exits at once with --paused-exit-code ({PAUSED_DEFAULT} by default), one
line naming who paused it, until when and why; counted (status, dlock_paused_total). Running jobs
go on: a pause stops starts, not runs (--cancel-running also stops the runs that hold those keys
now, as `dlock cancel` does). --for ends it on the Redis server's clock. A pause keeps
its span after it ends, so `check --missed-windows` and the board tell a paused --every window
from a missed one. Pausing a paused key replaces its pause.";

pub const RESUME_HELP: &str = "\
Examples:
  dlock resume reconcile        # reconcile's own pause ends
  dlock resume --all            # the prefix-wide pause ends; keys paused on their own stay paused

While a prefix-wide pause is in force, `dlock resume KEY` ends KEY's own pause but KEY stays
paused, and says so.";
const CANCEL_HELP: &str = "\
Examples:
  dlock cancel reconcile --reason 'db upgrade'      # stop the run, wait for its holder's answer
  dlock cancel reports --slot 2                      # a semaphore: only the run in slot 2
  dlock cancel nightly-backup --no-wait              # return once the request is placed

The holder (on any host) takes the request within a second, whatever its phase: its job gets
SIGTERM, SIGKILL after its --grace; it releases the lock, records the run with outcome
cancelled, who cancelled it (host and user) and the reason, and exits {CANCELLED}. Only the runs that
hold KEY when the cancel is sent are stopped, never a later one. A lock only kept by
--hold-at-least (its run already ended) is freed at once, with no second run log entry.
cancel judges each run by its holder's own answer, one line each: cancelled; ended otherwise
before it took the request; not taken within --timeout (the request is taken back); or ended
with no answer. KEY may be given with the prefix, as status prints it.";

/// A command's `--help` text after the options: `text` (each `{NAME}` made the exit code
/// `Exit::NAME`: the prose names codes, never types them), then the command's exits (from the
/// exit table (`exit::rows`)).
pub fn with_exits(text: &str, command: &str) -> String {
    format!(
        "{}\n{}",
        crate::exit::fill(text),
        crate::exit::command_summary(command)
    )
}

/// `dlock release --help`'s text after the options.
pub fn release_help() -> String {
    with_exits(RELEASE_HELP, "release")
}

/// `dlock cancel --help`'s text after the options.
pub fn cancel_help() -> String {
    with_exits(CANCEL_HELP, "cancel")
}

/// What `dlock --version` says: the version, the commit and the build (static or dynamic),
/// from the build script (tests/support/build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("DLOCK_COMMIT"),
    ", ",
    env!("DLOCK_BUILD"),
    " build)"
);

pub const INSTALL_SELF_HELP: &str = "\
Example: an initContainer from the dlock image (which has no cp) fills an emptyDir that the
job's container mounts and runs /dlock/dlock from:
  initContainers:
    - {name: dlock, image: registry.example.com/dlock:0.1.0, args: [\"install-self\", \"/dlock\"],
       volumeMounts: [{name: dlock, mountPath: /dlock}]}

The copy is written beside DIR/dlock and renamed over it, so a running DIR/dlock is never
half-written.";

/// Examples, then the exit-code summary (rendered from the exit table (`exit::rows`)).
pub fn after_help() -> String {
    format!("{AFTER_HELP}\n\n{}", crate::exit::summary())
}
