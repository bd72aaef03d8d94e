# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_dlock_global_optspecs
    string join \n url= password-file= tls-ca= tls-cert= tls-key= tls-insecure prefix= connect-timeout= io-timeout= v/verbose q/quiet log-format= log-level= h/help V/version
end

function __fish_dlock_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_dlock_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_dlock_using_subcommand
    set -l cmd (__fish_dlock_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c dlock -n "__fish_dlock_needs_command" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_needs_command" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_needs_command" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_needs_command" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_needs_command" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_needs_command" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_needs_command" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_needs_command" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_needs_command" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_needs_command" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_needs_command" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_needs_command" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_needs_command" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlock -n "__fish_dlock_needs_command" -s V -l version -d 'Print version'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "run" -d 'Acquire the lock, run COMMAND under it, keep it renewed, release it'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "status" -d 'Show who holds which lock and how each lock behaves over time'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "exporter" -d 'Serve the status board (GET /) and the Prometheus metrics (GET /metrics) over HTTP'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "check" -d 'Did each KEY\'s job run, and well? Dead-man\'s switch (--max-age) and run rules'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "doctor" -d 'Is the server fit for locks? Eviction, persistence, replicas, clock, latency, and the keys\' recorded runs against their lease (read-only)'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "release" -d 'Break a lock: --force whoever holds it, or --token only if that token holds it; or change a key\'s --every period (--every D)'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "pause" -d 'Start no new run of KEY (or of every key: --all) on any host, until `resume` or --for D'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "resume" -d 'End a pause: KEY\'s own, or the prefix-wide one (--all)'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "cancel" -d 'Stop the run that holds KEY, on whichever host it runs: its job gets SIGTERM within a second, then --grace, SIGKILL; it releases and records the run as cancelled (exit 122)'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "trigger" -d 'Run an --every job\'s done window once more: the next try of KEY on any host runs although its window is done (busy and pause apply); recorded as manual in its run log'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "drain" -d 'Start no new run of any key on this host (or --host NAME), while the others go on: for a reboot; --wait returns once none of its runs holds a lock'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "undrain" -d 'End a host\'s drain (this one, or --host NAME)'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "history" -d 'What happened, run by run: KEY\'s run log, newest first, or one run\'s kept output'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "next" -d 'The next windows of an --every period as dlock computes them, each clock change marked with the rule applied: a key\'s recorded period, or one given'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "install-self" -d 'Copy this dlock executable to DIR/dlock (an initContainer filling an emptyDir)'
complete -c dlock -n "__fish_dlock_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c dlock -n "__fish_dlock_using_subcommand run" -l key -d 'Business key with its dimension, e.g. reconcile:2026-11-30: no whitespace, at most 512 bytes counting the --prefix, braces only as a Redis Cluster hash tag ({name})' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l ttl -d 'Lease length. Rule of thumb: 3 × the job\'s p99 run time. At least 100ms' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l wait -d 'How long to keep trying while the lock is busy; 0 = one try [default: same as --ttl]' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l retry-min -d 'Shortest pause between tries (exponential backoff with full jitter)' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l retry-max -d 'Longest pause between tries' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l renew-every -d 'Watchdog period: renew the lease this often, and at once when the server closes the connection (a restart may have lost the lease); must be < --ttl [default: TTL/3]' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l max-renewals -d 'Renewal cap: after N renewals the job is stopped before the lease runs out (exit 124). 0 = never renew (hard limit of one TTL); `unlimited` is allowed but a hung job then holds the lock forever' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l grace -d 'Time between SIGTERM and SIGKILL when dlock stops the job; must be < --ttl [default: min(5s, TTL/3)]' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l on-busy -d 'What a try that finds KEY held does: `wait` for it (up to --wait), or `replace` its run: ask the holder to stop, as `dlock cancel` does (recorded "replaced by" on the old run), and take the lock after its release — never both running. With `replace` the wait lasts at least until the old run must have ended (its TTL past the request); a request still untaken when the wait ends is taken back, and a signal that ends the wait before the request goes out sends none. Plain locks only (not --limit N, nor --also)' -r -f -a "wait\t''
replace\t''"
complete -c dlock -n "__fish_dlock_using_subcommand run" -l conflict-exit-code -d 'Exit status when the lock stayed busy for the whole --wait (cron users often want 0)' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l hold-at-least -d 'Keep the lock until D after acquisition even if the job ends sooner, so the same cron tick on another host (with a slightly different clock) is skipped. 0 = release at once' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l min-replicas -d 'After acquiring, wait until N replicas have the lock (Redis WAIT) before starting the job; if fewer acknowledge within --replica-timeout, release and exit 69. Each renewal is confirmed the same way (one unconfirmed does not extend the lease), and with --every the release that records the window\'s success (unconfirmed: a warning). Closes the failover window for a lock, a renewal or a window\'s success that had not reached a replica yet' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l replica-timeout -d 'How long --min-replicas waits for the replicas\' acknowledgement' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l limit -d 'Semaphore: at most N jobs hold KEY at once, each in its own slot 0…N-1 (DLOCK_SLOT). Every run with KEY must use the same N' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l also -d 'Also hold KEY\'s lock for the whole run: the very lock `run --key KEY` takes, so plain runs of KEY and every run naming it with --also exclude each other (the backup and the vacuum of one database: --also db:main on both). Repeatable, up to 16 keys; all are taken in one step or none, so no order of them can deadlock. The job\'s run log, --every window and stats stay under --key; the job gets each key\'s fence and slot in DLOCK_ALSO. Under Redis Cluster every key must share --key\'s hash slot: give them a common hash tag, e.g. --key \'{db}backup\' --also \'{db}main\' [default: none]' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l also-limit -d 'Make each --also key a semaphore of N slots, the same one `run --key KEY --limit N` makes, and every run holding the key must use the same N: --also warehouse:heavy --also-limit 2 on each heavy job = at most 2 of them at once. 1 … 8, with --also [default: 1]' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l history -d 'Keep the last N runs of KEY in its run log (`dlock history`): 0 … 10000, 0 = no run log [default: 100]' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l capture -d 'Keep the first quarter and the last three quarters of SIZE bytes of the job\'s stdout+stderr with its run-log entry (16KiB, 1MiB or bytes; 1KiB … 1MiB). The output still goes where it went, but the job sees pipes, not a terminal' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l every -d 'Once per period: at most one successful run of KEY per window, on the Redis server\'s clock. D is a duration (1s … 366d; windows from the Unix epoch in UTC) or a calendar: a five-field cron schedule (\'0 9 * * 1-5\', names, ranges, steps, lists; day-of-month and day-of-week both restricted mean either, as in Vixie cron) or @hourly, @daily, @weekly, @monthly, @yearly, in --tz; its window runs from one scheduled time to the next. A window with a success is done: later tries in it run nothing (--not-due-exit-code); a failed run records nothing, so the next try runs the job again. Every host must give KEY the same period, compared by meaning (MON-FRI is 1-5, @daily is \'0 0 * * *\'): once a success is recorded, a try with another is refused (exit 2); change it on purpose with `dlock release KEY --every D`' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l tz -d 'The time zone of a calendar --every (an IANA name in any case, recorded as the zone database spells it: Europe/Berlin, America/New_York; the zone database travels inside dlock). A local time skipped by a DST change runs at the first time after the gap; one that happens twice runs once, the first time [env: DLOCK_TZ, for calendars only] [default: UTC]' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l every-offset -d 'Shift the --every windows: --every 1d --every-offset 2h = daily from 02:00 UTC (epoch weeks start on Thursday: Monday weeks are --every 7d --every-offset 4d)' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l after -d 'With --every: one job after another. This job\'s window is not due until KEY (another --every job, e.g. the ETL before a report) has a success granted inside it, on any host; until then a try runs nothing, naming KEY (--not-due-exit-code). Under Redis Cluster KEY must share --key\'s hash slot' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l not-due-exit-code -d 'Exit status of a try whose --every window is already done ("nothing to do")' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l paused-exit-code -d 'Exit status of a try of a paused key (`dlock pause`): nothing runs, at once, whatever --wait says' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l splay -d 'Sleep a random time in [0, D) before the first try (D ≤ 1h), outside --wait: spreads a fleet\'s cron minute, and which host wins an --every window' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l ping -d 'Ping a Healthchecks-compatible URL from the host that runs the job: URL/start when it starts, URL/CODE (dlock\'s exit status) with the output\'s tail after the release. A failed ping is one warning; it never changes the exit status. The URL is a credential: logs show its scheme and host only. DLOCK_PING_URL set and empty means no ping' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand run" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand run" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand run" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand run" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand run" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand run" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand run" -l shell -d 'Run the command through `sh -c "<args joined by spaces>"`'
complete -c dlock -n "__fish_dlock_using_subcommand run" -l no-notify -d 'Do not listen for release wake-ups while waiting; retry on the backoff schedule only (for comparison, or where BLPOP is not allowed)'
complete -c dlock -n "__fish_dlock_using_subcommand run" -l contain -d 'Run the job in its own PID namespace under a small init, so nothing it started can outlive dlock, even `kill -9 dlock`; exit 71 before acquiring where the system refuses'
complete -c dlock -n "__fish_dlock_using_subcommand run" -l no-stats -d 'Do not record per-key metrics (runs, busy, hold times, ...) for `dlock status`, nor the run history and run log'
complete -c dlock -n "__fish_dlock_using_subcommand run" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand run" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand run" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand run" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand status" -l format -d 'Output: a table, one JSON array (stable field names, see docs/operating.md), or the Prometheus text format' -r -f -a "text\t''
json\t''
prometheus\t''"
complete -c dlock -n "__fish_dlock_using_subcommand status" -l output -d 'Write to FILE instead of stdout, atomically (a temporary file in the same directory, then rename): for node_exporter\'s textfile collector' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand status" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand status" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand status" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand status" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand status" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand status" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand status" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand status" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand status" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand status" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand status" -l json -d 'Same as --format json'
complete -c dlock -n "__fish_dlock_using_subcommand status" -l wide -d 'The table with every metric column (runs, BUSY%, hold-time quantiles, compare failures, lost, cap, recommended TTL, the last run), wider than a terminal'
complete -c dlock -n "__fish_dlock_using_subcommand status" -l no-histogram -d 'Prometheus: leave out the hold-time histogram (34 of a key\'s 51 series), for a fleet whose series count matters; the recommended TTL gauge stays'
complete -c dlock -n "__fish_dlock_using_subcommand status" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand status" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand status" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand status" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l listen -d 'Address to serve on (0.0.0.0:9433 in a container, for the Service to reach it)' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l max-age -d 'Board rule, as `dlock check --max-age`: a lock whose last success ended longer ago than D, or that never succeeded, is marked failing, with the reason' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l max-failures -d 'Board rule, as `dlock check --max-failures`: K runs in a row that did not end ok' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l min-duration -d 'Board rule, as `dlock check --min-duration`: the last success took less than D' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l max-duration -d 'Board rule, as `dlock check --max-duration`: the last run or the current holder took longer than D' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l missed-windows -d 'Board rule, as `dlock check --missed-windows`: the last N `--every` windows had no success. Judges only the locks that ran with --every: a plain lock is not marked by it (`check KEY` fails a KEY it names that never ran with --every)' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l show-output -d 'Show the captured output (`run --capture`) on the board\'s lock pages. It may hold secrets: put the board behind an authenticating proxy first'
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l no-histogram -d '/metrics: leave out the hold-time histogram (34 of a key\'s 51 series), for a fleet whose series count matters; the recommended TTL gauge stays'
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand exporter" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand check" -l max-age -d 'Fail when KEY\'s last successful run (job exited 0 under the lock) ended longer ago than D, or it never succeeded' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l max-failures -d 'Fail when KEY\'s last K runs all did not end ok (failed, signal, lost, cap, compare_failure); fewer than K runs pass. K ≥ 1; works with `run --history 0`' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l min-duration -d 'Fail when KEY\'s last successful run took less than D (a job that "succeeded" suspiciously fast); no success yet passes' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l max-duration -d 'Fail when KEY\'s last run held the lock longer than D, or its current holder has held it longer than D (a stuck job)' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l missed-windows -d 'Fail when KEY\'s last N complete `run --every` windows all went without a success (a success in the current window passes), or KEY never ran with --every (it was named, so it is expected to; the exporter\'s board, over every lock, leaves plain locks alone). N ≥ 1' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand check" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand check" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand check" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand check" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand check" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand check" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand check" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand check" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand check" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand check" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l json -d 'One JSON object with every row, for a pre-deploy pipeline'
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l strict -d 'A row that could not be read (?) fails too: exit 1, for a pipeline that must know'
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand release" -l token -d 'Delete the lock only if this token (the holder\'s DLOCK_TOKEN) holds it; for a semaphore, the slot this token holds' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l slot -d 'With --force on a semaphore (--limit N): break only slot I (0…N-1) instead of every slot' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l every -d 'Change KEY\'s recorded `run --every` period to D on purpose (after changing it on every host); breaks no lock. Its last success stays, so the window of D holding it stays done' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l tz -d 'With a calendar --every: its time zone [env: DLOCK_TZ, for calendars only] [default: UTC]' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l every-offset -d 'With --every: the new --every-offset' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand release" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand release" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand release" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand release" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand release" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand release" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand release" -l force -d 'Delete the lock whoever holds it, and print whose it was (this or --token is required)'
complete -c dlock -n "__fish_dlock_using_subcommand release" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand release" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand release" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand release" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l for -d 'End the pause by itself after D, on the Redis server\'s clock (1s … 366d) [default: until `dlock resume`]' -r
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l reason -d 'Why, for whoever finds the key paused (status, the board, each paused try\'s log line); one line, at most 200 characters' -r
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l all -d 'Pause every key under the prefix, including keys that have never run (needs --reason)'
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l cancel-running -d 'Also stop the runs that hold the paused keys now, as `dlock cancel` does (with the pause\'s reason), and wait until each is recorded as cancelled'
complete -c dlock -n "__fish_dlock_using_subcommand pause" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand pause" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand pause" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand pause" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l all -d 'End the prefix-wide pause (`dlock pause --all`); the keys\' own pauses stay'
complete -c dlock -n "__fish_dlock_using_subcommand resume" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand resume" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand resume" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand resume" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l slot -d 'For a semaphore (--limit N): cancel only the run holding slot I (0…N-1) [default: every slot\'s run]' -r
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l reason -d 'Why, at most 200 characters: in the holder\'s log line, its run log entry (cancel_reason) and its end ping [default: none]' -r
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l timeout -d 'How long each holder has to take the request before it is taken back (exit 4) [default: 2 × the holder\'s renewal interval, at least 1s]' -r
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l no-wait -d 'Return once the request is on the server, without waiting for the holder\'s answer'
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand cancel" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l reason -d 'Why, at most 200 characters: in the run log of the run it starts (`dlock history`) [default: none]' -r
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand trigger" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l host -d 'The host to drain, as dlock records it (DLOCK_HOST, else `uname -n`) [default: this one]' -r
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l timeout -d 'With --wait: give up after D (exit 1, naming the runs still going) [default: wait as long as they run]' -r
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l reason -d 'Why, at most 200 characters: in status, the board and each refused try\'s line' -r
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l wait -d 'Then wait until no run of that host holds a lock under the prefix'
complete -c dlock -n "__fish_dlock_using_subcommand drain" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand drain" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand drain" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand drain" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l host -d 'The host whose drain ends [default: this one]' -r
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand undrain" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand history" -s n -d 'Only the last N runs (counted after --failed) [default: every run the log keeps]' -r
complete -c dlock -n "__fish_dlock_using_subcommand history" -l run -d 'Print the output kept for run RUN (its id, or a unique prefix of at least 6 characters as listed in the RUN column; or as a hyphenated UUID, as --ping\'s rid), raw, on stdout. Only runs started with --capture keep any' -r
complete -c dlock -n "__fish_dlock_using_subcommand history" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand history" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand history" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand history" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand history" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand history" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand history" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand history" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand history" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand history" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand history" -l failed -d 'Only runs that did not end ok (failed, signal, lost, cap, compare_failure)'
complete -c dlock -n "__fish_dlock_using_subcommand history" -l json -d 'One JSON array, newest first: each run\'s log entry plus duration_ms; captured output as UTF-8 with output_lossy: true when bytes had to be replaced'
complete -c dlock -n "__fish_dlock_using_subcommand history" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand history" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand history" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand history" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand next" -l every -d 'A period to preview, as `run --every` takes it: a duration (1h) or a calendar (\'30 2 * * *\', in --tz)' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -l tz -d 'With a calendar --every: its time zone [env: DLOCK_TZ, for calendars only] [default: UTC]' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -l every-offset -d 'With a duration --every: its --every-offset [default: 0]' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -s n -d 'How many windows' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -l from -d 'Start from this time instead of now: a date (2027-03-27, midnight on the period\'s zone\'s clock) or an RFC 3339 time (2027-03-27T01:00:00Z)' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand next" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand next" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand next" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand next" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand next" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand next" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand next" -l json -d 'One JSON object: the period and each window\'s start and end (Unix ms and RFC 3339 in the period\'s zone), with what a clock change did to it'
complete -c dlock -n "__fish_dlock_using_subcommand next" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand next" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand next" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand next" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand completions" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand completions" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand completions" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand completions" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l url -d 'Redis server: redis://[user:pass@]host[:port][/db], rediss://… (TLS), redis+unix:///path/to/sock[?db=N], redis[s]+sentinel://host:port[,host:port…]/SERVICE[/db] or redis[s]+cluster://host:port[,host:port…]. Prefer DLOCK_URL or --password-file for secrets: command lines are visible in `ps`' -r
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l password-file -d 'Read the Redis password from this file (e.g. a Kubernetes secret mount); beats a password in the URL. REDISCLI_AUTH is used when neither is given' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l tls-ca -d 'CA certificate (PEM) that signed the server\'s certificate, for a private CA; the system\'s trust store is used otherwise. Needs a rediss:// URL' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l tls-cert -d 'Client certificate (PEM) for mutual TLS; needs --tls-key' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l tls-key -d 'Client private key (PEM) for mutual TLS; needs --tls-cert' -r -F
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l prefix -d 'Namespace prepended to every KEY: lock key = PREFIX + KEY' -r
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l connect-timeout -d 'Bound on establishing a connection to Redis' -r
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l io-timeout -d 'Bound on each Redis command; in `run` never more than a third of the TTL' -r
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l log-format -d 'Log line format on stderr: text (`dlock: ...`) or json (one object per line: ts, level, event, key, msg and the event\'s numbers) for Kubernetes log pipelines' -r -f -a "text\t''
json\t''"
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l log-level -d 'Log level when neither -v nor -q is given' -r -f -a "error\t''
warn\t''
info\t''
debug\t''"
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -l tls-insecure -d 'Do not verify the server\'s certificate (testing only: anyone on the path can impersonate the server; dlock warns on every run)'
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -s v -l verbose -d 'More log lines on stderr (debug)'
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -s q -l quiet -d 'Fewer log lines on stderr: -q warnings and errors only, -qq errors only'
complete -c dlock -n "__fish_dlock_using_subcommand install-self" -s h -l help -d 'Print help'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "run" -d 'Acquire the lock, run COMMAND under it, keep it renewed, release it'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "status" -d 'Show who holds which lock and how each lock behaves over time'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "exporter" -d 'Serve the status board (GET /) and the Prometheus metrics (GET /metrics) over HTTP'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "check" -d 'Did each KEY\'s job run, and well? Dead-man\'s switch (--max-age) and run rules'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "doctor" -d 'Is the server fit for locks? Eviction, persistence, replicas, clock, latency, and the keys\' recorded runs against their lease (read-only)'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "release" -d 'Break a lock: --force whoever holds it, or --token only if that token holds it; or change a key\'s --every period (--every D)'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "pause" -d 'Start no new run of KEY (or of every key: --all) on any host, until `resume` or --for D'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "resume" -d 'End a pause: KEY\'s own, or the prefix-wide one (--all)'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "cancel" -d 'Stop the run that holds KEY, on whichever host it runs: its job gets SIGTERM within a second, then --grace, SIGKILL; it releases and records the run as cancelled (exit 122)'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "trigger" -d 'Run an --every job\'s done window once more: the next try of KEY on any host runs although its window is done (busy and pause apply); recorded as manual in its run log'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "drain" -d 'Start no new run of any key on this host (or --host NAME), while the others go on: for a reboot; --wait returns once none of its runs holds a lock'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "undrain" -d 'End a host\'s drain (this one, or --host NAME)'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "history" -d 'What happened, run by run: KEY\'s run log, newest first, or one run\'s kept output'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "next" -d 'The next windows of an --every period as dlock computes them, each clock change marked with the rule applied: a key\'s recorded period, or one given'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "install-self" -d 'Copy this dlock executable to DIR/dlock (an initContainer filling an emptyDir)'
complete -c dlock -n "__fish_dlock_using_subcommand help; and not __fish_seen_subcommand_from run status exporter check doctor release pause resume cancel trigger drain undrain history next completions install-self help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
