//! The waker's lists (`WakeList`): where a waiter listens, and where a wake-up it did not use
//! goes back.

use super::*;

#[test]
fn a_waiter_listens_on_the_wake_list_and_with_also_keys_on_its_own_turn_list_too() {
    let key = Keys::with_limit("dlock:pool", 3);
    let plain = WakeList::of(2, &key, "tok", false);
    assert_eq!(plain.len(), 1);
    assert_eq!(plain[0].listen, key.wake);
    assert_eq!((plain[0].index, plain[0].room), (2, 3));
    let also = WakeList::of(2, &key, "tok", true);
    let listened: Vec<&str> = also.iter().map(|l| l.listen.as_str()).collect();
    assert_eq!(listened, [key.wake.as_str(), "{dlock:pool}:turn:tok"]);
    // A wake-up from either goes back to the key's wake list.
    assert!(also.iter().all(|l| l.wake == key.wake));
}

#[test]
fn a_wake_up_goes_back_naming_the_slots_only_when_it_may_go_only_to_a_free_one() {
    let key = Keys::with_limit("dlock:pool", 2);
    let list = &WakeList::of(0, &key, "tok", false)[0];
    let slots: Vec<String> = key.slots.iter().map(|s| s.lock.clone()).collect();
    let back = list.back(true);
    assert_eq!((back.list, back.room), (key.wake.as_str(), 2));
    assert_eq!(back.free_of, slots.as_slice());
    assert!(list.back(false).free_of.is_empty());
}
