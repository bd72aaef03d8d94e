//! Every script's KEYS by name, as `args` names ARGV. Each struct below lists the keys one
//! script reads at fixed positions, in KEYS order; the keys whose number varies with the call
//! (a semaphore's slots, the `--also` blocks) follow them from `key_rest` on, in the order the
//! script's header says. From each struct come the call's encoder (`push_onto`: the call fills
//! the fields by name) and the lines at the top of the script that name them (`local key_stats
//! = KEYS[2]`, `local key_rest = 6`, written with the ARGV block by `prelude`; a unit test holds
//! each script's block to its structs). No script reads `KEYS[n]` with a number outside that
//! block: swapping two fields swaps both sides.

/// One script's named keys.
pub trait KeyNames<'a> {
    /// The fields' names in KEYS order.
    const NAMES: &'static [&'static str];
    /// More keys follow the named ones (read from `key_rest` on).
    const REST: bool = false;
    /// The fields in KEYS order, pushed onto `keys`.
    fn push_onto(self, keys: &mut Vec<&'a str>);
    /// `NAMES` and `REST`, of a value (for a check that needs no lifetime named).
    fn names(&self) -> (&'static [&'static str], bool) {
        (Self::NAMES, Self::REST)
    }
}

macro_rules! key_names {
    ($(
        $(#[$meta:meta])*
        $name:ident { $($(#[$fmeta:meta])* $field:ident,)* } $(+ $rest:ident)?
    )*) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name<'a> {
            $($(#[$fmeta])* pub $field: &'a str,)*
        }
        impl<'a> KeyNames<'a> for $name<'a> {
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];
            $(const REST: bool = !stringify!($rest).is_empty();)?
            fn push_onto(self, keys: &mut Vec<&'a str>) {
                keys.extend([$(self.$field),*]);
            }
        }
    )*};
}

key_names! {
    /// acquire.lua; then slot 0's lock key and holder hash, slot 1's, … (its header).
    Acquire {
        /// The fencing counter.
        fence,
        stats,
        /// KEY's --limit record.
        limit,
        /// The --every done record.
        done,
        /// KEY's pause record.
        pause,
    } + rest
    /// renew.lua; then per --also key its slot's lock key, holder hash and limit.
    Renew {
        /// The slot's lock key and holder hash.
        lock,
        holder,
        stats,
        limit,
    } + rest
    /// release.lua; then the lock key of every slot, the timeline, the --also blocks and the
    /// run's word key.
    Release {
        lock,
        holder,
        stats,
        /// KEY's wake list.
        wake,
        limit,
        /// The run log.
        runs,
        done,
    } + rest
    /// record.lua (the run of a job whose lease was lost).
    Record {
        stats,
        runs,
        timeline,
        /// The run's word key for `dlock cancel` ({KEY}:ended:TOKEN).
        word,
    }
    /// busy.lua; then the reservations of each key of the run's set.
    Busy {
        stats,
    } + rest
    /// wake.lua; then (optional) the key's slots' lock keys.
    Wake {
        /// The wake list.
        list,
    } + rest
    /// break.lua; then the lock key of every slot.
    Break {
        lock,
        holder,
        wake,
        limit,
    } + rest
    /// cancel.lua.
    Cancel {
        lock,
        holder,
        /// The run's cancel list ({KEY}:cancel:TOKEN).
        list,
        word,
    }
    /// withdraw.lua.
    Withdraw {
        /// The run's cancel list.
        list,
    }
    /// period.lua.
    Period {
        done,
    }
    /// pause.lua.
    Pause {
        /// The pause record, and its span stream.
        pause,
        spans,
    }
    /// timeline.lua.
    Timeline {
        runs,
    }
    /// trigger.lua.
    Trigger {
        done,
    }
    /// drain.lua.
    Drain {
        /// The prefix-wide drain record.
        drain,
    }
}
