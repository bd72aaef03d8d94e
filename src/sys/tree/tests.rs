use super::*;

#[test]
fn a_stat_line_with_a_tricky_command_name_reads_right() {
    let line = "4242 (a) b (c) Z 1 4200 4200 0 -1 4194560 0 0";
    let zombie = Stat {
        state: 'Z',
        ppid: 1,
        pgrp: 4200,
    };
    assert_eq!(parse_stat(line), Some(zombie));
    assert!(!zombie.live());
    assert_eq!(parse_stat("4242 (sleep"), None);
    // Our own process (its main thread may be running or waiting for the test threads):
    // alive, in a process group.
    let me = stat(std::process::id() as i32).expect("our own stat");
    assert!(me.live() && "RSD".contains(me.state), "{me:?}");
    assert!(me.pgrp > 0 && me.ppid > 0);
}

/// The check made after a pidfd is opened: yes only for the parent that /proc names, no for
/// any other (a number taken by a stranger has another parent) or for a process that is gone.
#[test]
fn is_child_of_names_only_the_real_parent() {
    let me = std::process::id() as i32;
    let parent = stat(me).expect("our own stat").ppid;
    assert!(is_child_of(me, parent));
    assert!(!is_child_of(me, me));
    assert!(!is_child_of(-1, parent));
}
