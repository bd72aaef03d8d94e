//! Every script's ARGV by name, defined once. Each struct below lists one script's arguments
//! in the order it reads them; from it come both the call's encoder (`into_argv`: the call
//! fills the fields by name) and the block at the top of the script that names them
//! (`local arg_ttl_ms = ARGV[2]`, written by `prelude`; a unit test holds each script's block
//! to its struct, and `DLOCK_UPDATE_DOCS=1 cargo test` writes it). No script reads `ARGV[n]`
//! outside that block, so no position is typed twice: swapping two fields swaps both sides, and
//! a block left behind fails the test. The simulation reads a call's arguments back the same
//! way (`read`).
//!
//! Each field is a string as the script receives it; what each holds is said on the field.

/// One script's named arguments.
pub trait Args {
    /// The fields' names in ARGV order.
    const NAMES: &'static [&'static str];
    /// More ARGV follow the named ones (read by position from `arg_rest` on: a run-log
    /// entry, a list of words).
    const REST: bool = false;
    /// The fields in ARGV order.
    fn into_argv(self) -> Vec<String>;
}

macro_rules! args {
    ($(
        $(#[$meta:meta])*
        $name:ident { $($(#[$fmeta:meta])* $field:ident,)* } $(+ $rest:ident)?
    )*) => {$(
        $(#[$meta])*
        #[derive(Debug, Default, Clone, PartialEq, Eq)]
        pub struct $name<S = String> {
            $($(#[$fmeta])* pub $field: S,)*
        }
        impl Args for $name {
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];
            $(const REST: bool = !stringify!($rest).is_empty();)?
            fn into_argv(self) -> Vec<String> {
                vec![$(self.$field),*]
            }
        }
        #[cfg(any(test, feature = "test-support"))]
        impl<'a> $name<&'a str> {
            /// A call's ARGV as the script reads it: '' past the end.
            pub fn read(argv: &'a [String]) -> Self {
                let mut a = argv.iter().map(String::as_str);
                $name { $($field: a.next().unwrap_or(""),)* }
            }
        }
    )*};
}

args! {
    /// acquire.lua.
    Acquire {
        /// The run's token: what its lock keys hold.
        token,
        /// The lease, ms.
        ttl_ms,
        /// Count the try ('1') or not ('0': --no-stats).
        stats,
        /// Who asks, recorded in the holder hash: host, pid, the job's command line.
        host,
        pid,
        command,
        /// When the try was sent (Unix ms, the host's clock).
        since_ms,
        /// '1': a busy answer ends the run, so it is counted here as a busy run (the common
        /// `--wait 0` skip costs one command, not two).
        last_try,
        /// N: the key's slots (--limit; 1 is the plain lock).
        limit,
        /// A fixed --every's period and offset, ms ('0': none).
        every_ms,
        offset_ms,
        /// Under Redis Cluster, the prefix-wide pause the client read first (it lives in
        /// another hash slot): from ms, until ms, by, reason ('' for none).
        fleet_from_ms,
        fleet_until_ms,
        fleet_by,
        fleet_reason,
        /// A calendar --every ('' for none): its schedule and zone in their one spelling (or
        /// a record's own: Rust's core::calendar), and its window starts as Unix ms joined by
        /// ',' (ascending; the windows are the spans between them).
        schedule,
        tz,
        starts,
        /// --also: A keys ('0': the plain run), their --also-limit M.
        also_count,
        also_limit,
        /// The wake list this try was woken by: '' none, '0' KEY's, 'j' X_j's.
        woken,
        /// The run's --renew-every, ms, recorded in each holder hash (`renew_ms`) for `dlock
        /// cancel`'s bound on how long a holder may take to answer ('' from a caller without).
        renew_ms,
        /// How long after the send the run tries again at the latest, ms: a busy answer (but
        /// on the last try) keeps the run in KEY's waiter registry until then ('': none kept).
        retry_ms,
        /// The calendar's schedule and zone as typed, when another spelling ('' for none, or
        /// the same as sent): a record an older dlock wrote holds it, and is this period too.
        typed_schedule,
        typed_tz,
        /// The run's first try (Unix ms, the host's clock; '': this try's, `since_ms`).
        first_ms,
        /// Who wrote the holder hashes: dlock's version and the key format (`keys::WRITER`,
        /// `keys::KEY_FORMAT`), for `status`, the board and `doctor` (issue 65).
        version,
        format,
        /// Under Redis Cluster, this host's entry in the prefix-wide drain record, which the
        /// client read first ('' for none; elsewhere the script reads it: KEYS' last).
        drain,
        /// --after KEY: KEY's lock ('' without --after); its done record is the KEYS entry
        /// just before the pause and drain.
        after,
    }

    /// drain.lua (`dlock drain`, `dlock undrain`).
    Drain {
        /// 'drain' or 'undrain'.
        action,
        /// The host drained (`hostname`'s name, or --host).
        host,
        /// 'host (user)'.
        by,
        reason,
    }

    /// renew.lua.
    Renew {
        token,
        ttl_ms,
        /// Count a compare failure ('1') or not.
        stats,
        /// N (--limit).
        limit,
        /// --also: A keys ('0' or absent: none) and their M (--also-limit).
        also_count,
        also_limit,
    }

    /// busy.lua.
    Busy {
        /// Count the busy run ('1') or not.
        stats,
        /// The run's token, taken out of its keys' reservations.
        token,
    }

    /// wake.lua.
    Wake {
        /// How many items the list may hold (the key's slots; 1 for a waiter's own key).
        room,
    }

    /// break.lua (`dlock release`).
    Break {
        /// Delete only if this token holds the slot ('': whoever holds it).
        token,
        /// N (--limit of the key).
        limit,
    }

    /// release.lua; the run log's entry (`Entry`) follows.
    Release {
        token,
        /// Count and log the run ('1') or not.
        stats,
        /// --hold-at-least: > 0 keeps the slot that much longer (ms) instead of deleting it.
        keep_ms,
        /// How long the lock was held (ms), its histogram field ('' for none) and the outcome
        /// counter ('' for none).
        hold_ms,
        bucket,
        counter,
        /// N (--limit).
        limit,
        /// --also: A keys, their M.
        also_count,
        also_limit,
        /// '1': the run's lease was lost, so it stays 'lost' and no compare failure is counted.
        known_lost,
        /// The history: outcome (ok, failed, signal, cap), exit code, host, pid, started and
        /// ended (Unix ms).
        outcome,
        code,
        host,
        pid,
        started_ms,
        ended_ms,
        /// Run-log entries to keep (--history; 0 = none).
        history,
    } + rest

    /// record.lua (a run that ends without a release); the run log's entry follows.
    Record {
        /// As `Release`'s.
        hold_ms,
        bucket,
        counter,
        outcome,
        code,
        host,
        pid,
        started_ms,
        ended_ms,
        history,
    } + rest

    /// The run log's entry, after `Release`'s or `Record`'s arguments (lib.lua's
    /// `ENTRY_NAMES`, generated from this, and `entry_from`); with --capture, the kept output
    /// follows as one more argument. '' leaves an optional field out of the entry.
    Entry {
        /// The run's token.
        run,
        host,
        pid,
        slot,
        fence,
        command,
        started_ms,
        ended_ms,
        renewals,
        waited_ms,
        /// The lease the run held the lock under ('' when unknown).
        ttl_ms,
        /// --max-renewals as a count or 'unlimited'.
        max_renewals,
        renew_every_ms,
        grace_ms,
        /// The --every window's start ('' without --every).
        window_ms,
        /// Who cancelled the run and why ('' unless `dlock cancel` stopped it).
        cancel_by,
        cancel_reason,
        /// The id of the cancel request the run took ('' none).
        cancel_id,
        /// DLOCK_ALSO's text: one 'FENCE\tSLOT\tKEY' line per key ('' without --also).
        also,
        /// The dlock version and key format that wrote the entry (and, for an --every
        /// success, the done record).
        version,
        format,
        /// The output's total byte count ('' without --capture).
        output_bytes,
    }

    /// timeline.lua.
    Timeline {
        /// Unix ms: the range's start.
        since_ms,
        count,
        /// An entry id at or after since, the newest the reader knows ('' to read from since).
        start,
    }

    /// period.lua.
    Period {
        /// The period and the offset, ms ('0' for a calendar).
        every_ms,
        offset_ms,
        /// A calendar's schedule and zone ('' for a duration).
        schedule,
        tz,
    }

    /// trigger.lua (`dlock trigger`).
    Trigger {
        /// 'host (user)'.
        by,
        reason,
    }

    /// pause.lua.
    Pause {
        /// 'pause' or 'resume'.
        action,
        /// 'host (user)'.
        by,
        reason,
        /// --for, ms ('0': until resumed).
        for_ms,
        /// Spans to keep in the span stream.
        spans,
    }

    /// cancel.lua.
    Cancel {
        token,
        /// The request, as `core::cancel::Request::text` writes it.
        request,
        /// How long past the lock's TTL an unanswered request may stay, ms.
        margin_ms,
    }

    /// withdraw.lua.
    Withdraw {
        /// This `cancel`'s own request, exactly as cancel.lua put it on the list.
        request,
    }
}
