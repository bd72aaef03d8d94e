//! Key names for one lock and the token that marks a holder (SPEC §3).

/// Key names for one lock. Companion keys share the lock key's cluster slot (SPEC §3).
#[derive(Debug, Clone)]
pub struct Keys {
    pub lock: String,
    /// Fencing counter: INCR on every acquisition, no TTL.
    pub fence: String,
    /// Holder metadata hash (token, host, pid, command, since_ms, renewals, fence); same TTL as
    /// the lock and deleted with it.
    pub holder: String,
    /// Per-key metrics hash (counters and the hold-time histogram); no TTL.
    pub stats: String,
    /// Wake-up list: a release pushes one item, which wakes the longest-blocked waiter.
    pub wake: String,
}

/// Companion suffixes; `status` recognises companions by them.
pub const SUFFIXES: [&str; 4] = ["fence", "holder", "stats", "wake"];

impl Keys {
    pub fn new(lock: &str) -> Keys {
        Keys {
            lock: lock.to_string(),
            fence: companion(lock, "fence"),
            holder: companion(lock, "holder"),
            stats: companion(lock, "stats"),
            wake: companion(lock, "wake"),
        }
    }
}

/// `{lock}:suffix`, or `lock:suffix` when the lock key already carries a hash tag, so both hash
/// to the same Redis Cluster slot.
pub fn companion(lock: &str, suffix: &str) -> String {
    if has_hash_tag(lock) {
        format!("{lock}:{suffix}")
    } else {
        format!("{{{lock}}}:{suffix}")
    }
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

/// A fresh, unguessable token: UUID v4, 122 random bits from the OS RNG.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companions_share_the_slot() {
        assert_eq!(companion("dlock:job", "fence"), "{dlock:job}:fence");
        assert_eq!(companion("dlock:{job}", "fence"), "dlock:{job}:fence");
        assert_eq!(companion("dlock:a{b", "fence"), "{dlock:a{b}:fence");
        // "{}" is not a hash tag, and wrapping would hash "dlock:{" instead: refused.
        assert!(layout_problem("dlock:{}x").is_some());
        assert!(layout_problem("dlock:{x}").is_none());
    }

    #[test]
    fn tokens_are_unique_and_long() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
    }
}
