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
fn slot_zero_is_the_plain_lock_and_every_slot_shares_its_cluster_slot() {
    let k = Keys::with_limit("dlock:job", 3);
    assert_eq!(k.limit_n(), 3);
    assert_eq!(k.slots[0].lock, "dlock:job");
    assert_eq!(k.slots[0].holder, "{dlock:job}:holder");
    assert_eq!(k.slots[2].lock, "{dlock:job}:slot:2");
    assert_eq!(k.slots[2].holder, "{dlock:job}:holder:2");
    assert_eq!(k.limit, "{dlock:job}:limit");
    assert_eq!(Keys::new("dlock:job").limit_n(), 1);
    assert_eq!(
        Keys::with_limit("dlock:{a}", 2).slots[1].lock,
        "dlock:{a}:slot:1"
    );
}

#[test]
fn companions_map_back_to_their_lock() {
    assert_eq!(lock_of("dlock:job", "dlock:"), Some("dlock:job"));
    assert_eq!(lock_of("{dlock:job}:fence", "dlock:"), Some("dlock:job"));
    assert_eq!(lock_of("{dlock:job}:stats", "dlock:"), Some("dlock:job"));
    assert_eq!(lock_of("dlock:{b}:holder", "dlock:"), Some("dlock:{b}"));
    assert_eq!(lock_of("{dlock:job}:slot:2", "dlock:"), Some("dlock:job"));
    assert_eq!(lock_of("dlock:{b}:holder:12", "dlock:"), Some("dlock:{b}"));
    assert_eq!(lock_of("{dlock:job}:limit", "dlock:"), Some("dlock:job"));
    assert_eq!(lock_of("{dlock:job}:runs", "dlock:"), Some("dlock:job"));
    assert_eq!(lock_of("dlock:{b}:runs", "dlock:"), Some("dlock:{b}"));
    assert_eq!(lock_of("{other:job}:fence", "dlock:"), None);
    assert_eq!(lock_of("other:job", "dlock:"), None);
    // Only a slot's or a slot holder's number is taken off.
    assert_eq!(lock_of("{dlock:job}:fence:5", "dlock:"), None);
    // A lock with a hash tag has `lock:suffix` companions, never `{lock}:suffix` ones.
    assert_eq!(lock_of("{dlock:{b}}:fence", "dlock:"), None);
    assert_eq!(
        lock_of("dlock:job:fence", "dlock:"),
        Some("dlock:job:fence")
    );
    assert_eq!(lock_of("{dlock:x}:released", "dlock:"), None);
    // A pause record and its spans are a lock's companions.
    assert_eq!(lock_of("{dlock:job}:pause", "dlock:"), Some("dlock:job"));
    assert_eq!(lock_of("{dlock:job}:pauses", "dlock:"), Some("dlock:job"));
    assert_eq!(lock_of("dlock:{b}:pause", "dlock:"), Some("dlock:{b}"));
}

#[test]
fn the_prefix_wide_pause_is_no_lock() {
    let fleet = Keys::fleet("dlock:");
    assert_eq!(fleet.pause, "{dlock:}:pause");
    assert_eq!(lock_of(&fleet.pause, "dlock:"), None);
    assert_eq!(lock_of(&fleet.pauses, "dlock:"), None);
    // A prefix with a hash tag of its own: `{app}:pause`.
    let tagged = Keys::fleet("{app}:");
    assert_eq!(lock_of(&tagged.pause, "{app}:"), None);
    assert_eq!(lock_of("{app}:job:pause", "{app}:"), Some("{app}:job"));
}

/// A cancel request is a companion of its lock, never a lock of its own (`status` would show
/// it as a key that is not a lock).
#[test]
fn cancel_requests_map_back_to_their_lock() {
    let tok = "0123456789abcdef0123456789abcdef";
    let list = cancel_list("dlock:job", tok);
    assert_eq!(list, format!("{{dlock:job}}:cancel:{tok}"));
    assert_eq!(lock_of(&list, "dlock:"), Some("dlock:job"));
    let tagged = cancel_list("dlock:{b}", tok);
    assert_eq!(tagged, format!("dlock:{{b}}:cancel:{tok}"));
    assert_eq!(lock_of(&tagged, "dlock:"), Some("dlock:{b}"));
    assert_eq!(lock_of("{dlock:job}:cancel", "dlock:"), Some("dlock:job"));
    // The holder's word likewise.
    let word = word_key("dlock:job", tok);
    assert_eq!(word, format!("{{dlock:job}}:ended:{tok}"));
    assert_eq!(lock_of(&word, "dlock:"), Some("dlock:job"));
    // Only a token is taken off, and only after `:cancel`.
    assert_eq!(lock_of("{dlock:job}:cancel:a b", "dlock:"), None);
    assert_eq!(lock_of("{dlock:job}:fence:abc", "dlock:"), None);
}

/// A run listens for cancels on each of its keys' lists, `--key`'s first.
#[test]
fn a_run_listens_on_each_of_its_keys_cancel_lists() {
    let tok = "t";
    assert_eq!(
        cancel_lists("dlock:a", [], tok),
        [cancel_list("dlock:a", tok)]
    );
    assert_eq!(
        cancel_lists("dlock:{x}:a", ["dlock:{x}:b", "dlock:{x}:c"], tok),
        [
            cancel_list("dlock:{x}:a", tok),
            cancel_list("dlock:{x}:b", tok),
            cancel_list("dlock:{x}:c", tok),
        ]
    );
}

#[test]
fn glob_metacharacters_are_escaped() {
    assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    assert_eq!(scan_pattern("a*"), "*a\\**");
}

#[test]
fn tokens_are_unique_and_long() {
    let (a, b) = (new_token(), new_token());
    assert_ne!(a, b);
    assert_eq!(a.len(), 32);
}

/// `--after KEY` reads KEY's done record wherever KEY's own runs write it, whatever its --limit.
#[test]
fn after_names_the_keys_own_done_record() {
    for limit in [1, 3] {
        let k = Keys::with_limit("dlock:up", limit);
        assert_eq!(Keys::after("dlock:up"), (k.lock.clone(), k.done.clone()));
    }
}
