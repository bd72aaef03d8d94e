use super::*;
use crate::store::keys::{Keys, companion};

/// The check value of CRC16/XMODEM and slots Redis itself gives (`CLUSTER KEYSLOT`).
#[test]
fn known_vectors() {
    assert_eq!(crc16(b"123456789"), 0x31C3);
    assert_eq!(cluster_slot("123456789"), 12739);
    assert_eq!(cluster_slot("foo"), 12182);
    assert_eq!(cluster_slot(""), 0);
}

#[test]
fn a_hash_tag_is_the_first_braces_with_something_inside() {
    assert_eq!(cluster_slot("{u}.a"), cluster_slot("{u}.b"));
    assert_eq!(cluster_slot("{u}.a"), cluster_slot("u"));
    assert_eq!(
        cluster_slot("{user1000}.following"),
        cluster_slot("user1000")
    );
    // "{}" is no tag: the whole key is hashed, and a later pair does not count either.
    assert_eq!(hashed("{}x"), "{}x");
    assert_eq!(hashed("{}{x}"), "{}{x}");
    assert_ne!(cluster_slot("{}x"), cluster_slot(""));
    // Only the first '{' opens, and the first '}' after it closes.
    assert_eq!(hashed("a{b{c}d}"), "b{c");
    assert_eq!(hashed("a}b{c}"), "c");
    assert_eq!(hashed("{x"), "{x");
}

/// Every key of a lock, a semaphore's slots too, lands in the lock key's own slot: comparing the
/// lock keys is enough.
#[test]
fn companions_hash_with_their_lock() {
    for lock in ["dlock:backup", "dlock:{db}backup", "x:reports:{eu}:daily"] {
        let k = Keys::with_limit(lock, 3);
        let slot = cluster_slot(lock);
        for key in [&k.fence, &k.stats, &k.wake, &k.limit, &k.runs, &k.pause] {
            assert_eq!(cluster_slot(key), slot, "{key}");
        }
        for s in &k.slots {
            assert_eq!(cluster_slot(&s.lock), slot, "{}", s.lock);
            assert_eq!(cluster_slot(&s.holder), slot, "{}", s.holder);
        }
        assert_eq!(cluster_slot(&companion(lock, "cancel:ab12")), slot);
    }
}
