//! Key names for one lock and the token that marks a holder (SPEC §3).

mod slot;
pub use slot::cluster_slot;

/// Key names for one lock. Companion keys share the lock key's cluster slot (SPEC §3).
#[derive(Debug, Clone)]
pub struct Keys {
    pub lock: String,
    /// Fencing counter: INCR on every acquisition, no TTL.
    pub fence: String,
    /// Per-key metrics hash (counters and the hold-time histogram); no TTL.
    pub stats: String,
    /// Wake-up list: a release pushes one item, which wakes the longest-blocked waiter.
    pub wake: String,
    /// `--limit N` > 1: holds N while any slot is held, and outlives every slot.
    pub limit: String,
    /// The run log: a stream of the last `--history` runs (SPEC 7b); no TTL.
    pub runs: String,
    /// The run log's bars: each run's entry id with one short field (times, outcome, slot,
    /// window, host), written with it and trimmed with it, so that the board reads a day of
    /// runs without their commands and outputs (SPEC 7b); no TTL.
    pub timeline: String,
    /// `--every`: the period, its offset and the last window with a success (SPEC 7d); no TTL.
    pub done: String,
    /// `dlock pause`: the pause in force or the last one whose `--for` ran out (from_ms,
    /// until_ms (0: until resumed), by, reason); deleted by `resume`; no TTL.
    pub pause: String,
    /// The pauses that ended (the spans `check` and the board tell a paused window by): a
    /// stream of the last `PAUSE_SPANS`; no TTL.
    pub pauses: String,
    /// The waiter registry: token → until when (Unix ms) a run that found the key busy counts
    /// as waiting for it (acquire.lua); expires when nobody waits.
    pub waiting: String,
    /// A run that needs several keys and waits for them keeps a slot of each (acquire.lua):
    /// "first try ms \t token \t who", expiring when the waiter stops refreshing it.
    pub reserve: String,
    /// The lock key and holder hash of each slot 0 … N-1 of `--limit N`. Slot 0 is `lock` itself
    /// and `{lock}:holder`, so `--limit 1` is the plain lock with its layout unchanged.
    pub slots: Vec<Slot>,
}

/// One slot of a semaphore: its lock key (value: the holder's token) and holder hash (token,
/// host, pid, command, since_ms, renewals, fence; same TTL as the slot and deleted with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub lock: String,
    pub holder: String,
}

/// Most slots `--limit` accepts: every acquire and release script touches each slot's key.
pub const MAX_LIMIT: u32 = 1000;

pub use crate::core::versions::{KEY_FORMAT, WRITER};

/// Most `--also` keys one run takes (issue 52): acquire.lua reads every slot of each.
pub const MAX_ALSO: usize = 16;

/// Largest `--also-limit`: where one acquire of `MAX_ALSO` keys stays ≲ 0.3 ms of Redis CPU
/// (16 keys × 8 slots: 0.27 ms to grant, 0.16 ms busy with every slot held; × 16: 0.33 and
/// 0.27 ms; `bench/also_cost.py`, bench/results/also-cost.txt).
pub const MAX_ALSO_LIMIT: u32 = 8;

/// Companion suffixes; `status` recognises companions by them (`slot` and `holder` also with
/// a slot number: `{lock}:slot:2`; `cancel` and `ended` with the token of the run asked to
/// stop: `{lock}:cancel:TOKEN`, `{lock}:ended:TOKEN`, see `cancel_list` and `word_key`).
pub const SUFFIXES: [&str; 17] = [
    "fence", "holder", "stats", "wake", "limit", "slot", "runs", "timeline", "done", "pause",
    "pauses", "cancel", "ended", "waiting", "reserve", "turn", "drain",
];

/// Ended pauses a key's span stream keeps.
pub const PAUSE_SPANS: u32 = 100;

/// `dlock cancel`'s request list for the run holding `token`: only that run reads it (a later
/// run has another token), and it expires by itself when nobody answers.
pub fn cancel_list(lock: &str, token: &str) -> String {
    companion(lock, &format!("cancel:{token}"))
}

/// The cancel request lists a run holding `token` listens on: its `--key`'s (`lock`), then
/// each of its `--also` keys' (`also`, their locks in command-line order): a cancel aimed at
/// any key of the run stops it.
pub fn cancel_lists<'a>(
    lock: &'a str,
    also: impl IntoIterator<Item = &'a str>,
    token: &str,
) -> Vec<String> {
    std::iter::once(lock)
        .chain(also)
        .map(|l| cancel_list(l, token))
        .collect()
}

/// One run's own keys, by its token, under its `--key`: the cancel requests for it and its
/// holder's word on how it ended (release.lua and record.lua write the word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunKeys {
    pub cancel: String,
    pub word: String,
}

impl RunKeys {
    pub fn new(lock: &str, token: &str) -> RunKeys {
        RunKeys {
            cancel: cancel_list(lock, token),
            word: word_key(lock, token),
        }
    }
}

/// A waiting run's own wake key on `lock` (its waker listens there too): an item on it ends the
/// waker's BLPOP at once, when the run stops its waker.
pub fn own_wake(lock: &str, token: &str) -> String {
    companion(lock, &format!("wake:{token}"))
}

/// A reserving run's turn list on `lock`: a try held back by the run's reservation (acquire.lua)
/// pushes there, where only that run's waker listens (the wake-up such a try took was its).
pub fn turn_list(lock: &str, token: &str) -> String {
    companion(lock, &format!("turn:{token}"))
}

/// The holder's word on how the run holding `token` ended, for `dlock cancel` (written by the
/// release when the run took a request or one waits on its list; expires by itself).
pub fn word_key(lock: &str, token: &str) -> String {
    companion(lock, &format!("ended:{token}"))
}

impl Keys {
    /// The plain lock (`--limit 1`).
    pub fn new(lock: &str) -> Keys {
        Keys::with_limit(lock, 1)
    }

    /// A semaphore of `limit` slots (at least one).
    pub fn with_limit(lock: &str, limit: u32) -> Keys {
        Keys {
            lock: lock.to_string(),
            fence: companion(lock, "fence"),
            stats: companion(lock, "stats"),
            wake: companion(lock, "wake"),
            limit: companion(lock, "limit"),
            runs: companion(lock, "runs"),
            timeline: companion(lock, "timeline"),
            done: companion(lock, "done"),
            pause: companion(lock, "pause"),
            pauses: companion(lock, "pauses"),
            waiting: companion(lock, "waiting"),
            reserve: companion(lock, "reserve"),
            slots: (0..limit.max(1)).map(|i| slot(lock, i)).collect(),
        }
    }

    /// N of `--limit N`.
    pub fn limit_n(&self) -> usize {
        self.slots.len()
    }

    /// The prefix-wide records (`dlock pause --all`): the companions of the lock named by the
    /// prefix alone, which no `--key` can name (an empty KEY is refused). `lock_of` never reads
    /// them as a lock.
    pub fn fleet(prefix: &str) -> Keys {
        Keys::new(prefix)
    }

    /// The prefix-wide drain record (`dlock drain`): a hash of host → "from ms \n by \n reason",
    /// beside the prefix-wide pause (one hash slot: `{PREFIX}:drain`).
    pub fn drain(prefix: &str) -> String {
        companion(prefix, "drain")
    }

    /// `--after KEY`: KEY's lock (prefixed) and its done record, where its successes are
    /// kept, as acquire.lua reads them (whatever KEY's --limit: the record is the key's).
    pub fn after(lock: &str) -> (String, String) {
        (lock.to_string(), companion(lock, "done"))
    }
}

/// Slot `i`'s keys: the lock key and holder hash for slot 0, `{lock}:slot:i` and
/// `{lock}:holder:i` for the others.
pub fn slot(lock: &str, i: u32) -> Slot {
    if i == 0 {
        Slot {
            lock: lock.to_string(),
            holder: companion(lock, "holder"),
        }
    } else {
        Slot {
            lock: companion(lock, &format!("slot:{i}")),
            holder: companion(lock, &format!("holder:{i}")),
        }
    }
}

/// `{lock}:suffix`, or `lock:suffix` when the lock key already carries a hash tag, so both hash
/// to the same Redis Cluster slot.
pub fn companion(lock: &str, suffix: &str) -> String {
    // Pieces pushed, not format!: `status` names eight companions for each of its locks.
    let wrap = !has_hash_tag(lock);
    let mut key = String::with_capacity(lock.len() + suffix.len() + 3);
    if wrap {
        key.push('{');
    }
    key.push_str(lock);
    if wrap {
        key.push('}');
    }
    key.push(':');
    key.push_str(suffix);
    key
}

/// A lock key without a hash tag is wrapped as `{lock}`; that only hashes like the lock key
/// when the key has no '}' of its own. Such keys are refused up front.
pub fn layout_problem(lock: &str) -> Option<&'static str> {
    (!has_hash_tag(lock) && lock.contains('}')).then_some(
        "contains '}' outside a Redis Cluster hash tag; use braces only as a tag like {name}",
    )
}

/// Redis Cluster's rule: the first '{' followed, later, by a '}' with at least one byte between.
fn has_hash_tag(key: &str) -> bool {
    key.find('{')
        .and_then(|open| key[open + 1..].find('}'))
        .is_some_and(|len| len > 0)
}

/// The lock a key found under the prefix belongs to: the lock key itself, or a companion's
/// lock (None: not dlock's).
pub fn lock_of<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    // A semaphore's other slots: `{lock}:slot:2`, `{lock}:holder:2`; a cancel request for
    // the run holding a token: `{lock}:cancel:TOKEN`, and its holder's word
    // `{lock}:ended:TOKEN` (dlock's tokens are hex).
    let key = match key.rsplit_once(':') {
        Some((base, n))
            if !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (base.ends_with(":slot") || base.ends_with(":holder")) =>
        {
            base
        }
        Some((base, t))
            if !t.is_empty()
                && t.bytes().all(|b| b.is_ascii_alphanumeric())
                && (base.ends_with(":cancel") || base.ends_with(":ended")) =>
        {
            base
        }
        _ => key,
    };
    // Compared in place, without building the companion's name (`status` asks this of every
    // key a SCAN finds: hundreds of thousands).
    for suffix in SUFFIXES {
        let Some(base) = key.strip_suffix(suffix).and_then(|b| b.strip_suffix(':')) else {
            continue;
        };
        // `{lock}:suffix`, the companion of a lock without a hash tag of its own
        if let Some(inner) = base.strip_prefix('{').and_then(|b| b.strip_suffix('}'))
            && inner.starts_with(prefix)
            && !has_hash_tag(inner)
        {
            // The prefix-wide pause (`Keys::fleet`) is no lock's.
            return (inner != prefix).then_some(inner);
        }
        // `lock:suffix` for a lock with its own hash tag
        if base.starts_with(prefix) && has_hash_tag(base) {
            return (base != prefix).then_some(base);
        }
    }
    (key.starts_with(prefix) && !key.starts_with('{')).then_some(key)
}

/// The SCAN MATCH pattern that finds every key of the locks under `prefix` in one pass over the
/// key space: the lock keys (and the companions of hash-tagged ones) start with the prefix, the
/// `{lock}:suffix` companions with `{` and the prefix. Two anchored patterns would walk the
/// whole key space twice; keys with the prefix further in come back too and `lock_of` drops
/// them.
pub fn scan_pattern(prefix: &str) -> String {
    format!("*{}*", glob_escape(prefix))
}

/// The SCAN MATCH pattern of `dlock cancel`'s request lists under `prefix`.
pub fn cancel_pattern(prefix: &str) -> String {
    format!("*{}*:cancel:*", glob_escape(prefix))
}

/// Escape glob metacharacters so a prefix matches only itself in SCAN MATCH.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A fresh, unguessable token: UUID v4, 122 random bits from the OS RNG.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests;
