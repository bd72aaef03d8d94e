//! The rights row: each command dlock's paths send, checked for the user dlock connects as —
//! by `ACL DRYRUN` where the user may run it, else by a harmless try on a scratch key that is
//! gone when doctor ends. The users are docs/connecting.md's least-privilege rule set (read from
//! the guide, as `connections.rs` does) and that set with commands taken out.

use super::{doctor, found, mark, row};
use crate::connections::readme_acl_rules;
use crate::support::*;

/// `ACL SETUSER dlock` with `rules` (its password `dlock-pw`): the URL that connects as it.
fn user(r: &RedisServer, rules: &[String]) -> String {
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("dlock").arg(rules);
    setuser.query::<()>(&mut r.conn()).unwrap();
    format!("redis://dlock:dlock-pw@127.0.0.1:{}", r.port.unwrap())
}

/// A real lock's keys as `dlock run` leaves them (its stats, its run log), taken as the admin.
fn real_lock(r: &RedisServer, prefix: &str) {
    Dlock::bare()
        .env("DLOCK_URL", &r.url())
        .args(["--prefix", prefix, "run", "--key", "job", "--", "true"])
        .run()
        .code(0);
}

/// Every key on the server with its `DUMP`: equal before and after means nothing was written,
/// created or left behind.
fn snapshot(r: &RedisServer) -> Vec<(String, Vec<u8>)> {
    let mut c = r.conn();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut c).unwrap();
            (k, dump)
        })
        .collect()
}

#[test]
fn a_user_without_evalsha_and_xadd_fails_the_rights_row_naming_both() {
    let r = RedisServer::start_tcp(&[]);
    real_lock(&r, "dlock:");
    let rules = readme_acl_rules();
    for taken in ["+evalsha", "+xadd"] {
        assert!(
            rules.iter().any(|w| w == taken),
            "docs/connecting.md grants {taken}"
        );
    }
    let url = user(
        &r,
        &rules
            .into_iter()
            .filter(|w| w != "+evalsha" && w != "+xadd")
            .collect::<Vec<_>>(),
    );
    let before = snapshot(&r);
    let (code, v) = doctor(&url, &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(mark(&v, "rights"), "failure", "{v}");
    let f = found(&v, "rights");
    assert!(f.contains("EVALSHA") && f.contains("XADD"), "{f}");
    assert!(f.contains("scratch key"), "ACL DRYRUN is refused: {f}");
    assert_eq!(
        row(&v, "rights")["fix"].as_str().unwrap(),
        "ACL SETUSER dlock +evalsha +xadd",
        "{v}"
    );
    assert_eq!(snapshot(&r), before, "doctor wrote or left a key");
}

/// `dlock cancel` reaches a running job through its holder's BLPOP, or LPOP where BLPOP is
/// refused (issue 63): the guide's rule grants both, and a user without them is told that
/// cancel cannot stop its runs, with the rule that fixes it.
#[test]
fn a_user_without_blpop_and_lpop_is_told_cancel_cannot_stop_its_runs() {
    let r = RedisServer::start_tcp(&[]);
    real_lock(&r, "dlock:");
    let rules = readme_acl_rules();
    for given in ["+blpop", "+lpop"] {
        assert!(
            rules.iter().any(|w| w == given),
            "docs/connecting.md grants {given}: {rules:?}"
        );
    }
    let url = user(
        &r,
        &rules
            .into_iter()
            .filter(|w| w != "+blpop" && w != "+lpop")
            .collect::<Vec<_>>(),
    );
    let (code, v) = doctor(&url, &[]);
    assert_eq!((code, mark(&v, "rights")), (1, "failure".into()), "{v}");
    let f = found(&v, "rights");
    assert!(
        f.contains("BLPOP (waiters, run --wait; and dlock cancel")
            && f.contains("LPOP (dlock cancel where BLPOP is refused")
            && f.contains("so dlock cancel cannot stop its runs"),
        "{f}"
    );
    assert_eq!(
        row(&v, "rights")["fix"],
        "ACL SETUSER dlock +blpop +lpop",
        "{v}"
    );
}

#[test]
fn the_readmes_least_privilege_user_has_every_right() {
    let r = RedisServer::start_tcp(&[]);
    real_lock(&r, "dlock:");
    let url = user(&r, &readme_acl_rules());
    let before = snapshot(&r);
    let (code, v) = doctor(&url, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(mark(&v, "rights"), "ok", "{v}");
    let f = found(&v, "rights");
    assert!(f.contains("user dlock") && f.contains("scratch key"), "{f}");
    assert_eq!(snapshot(&r), before, "doctor wrote or left a key");
}

#[test]
fn an_admin_user_is_checked_by_acl_dryrun_and_a_missing_command_still_shows() {
    let r = RedisServer::start_tcp(&[]);
    real_lock(&r, "dlock:");
    let before = snapshot(&r);
    // The default user, allowed everything (ACL DRYRUN too).
    let (code, v) = doctor(&r.tcp_url(), &[]);
    assert_eq!((code, mark(&v, "rights")), (0, "ok".into()), "{v}");
    let f = found(&v, "rights");
    assert!(
        f.contains("user default") && f.contains("ACL DRYRUN"),
        "{f}"
    );
    // An operator's user with everything but XADD: DRYRUN names it, nothing is tried.
    let words = ["on", ">dlock-pw", "~*", "&*", "+@all", "-xadd"];
    let url = user(&r, &words.map(String::from));
    let (code, v) = doctor(&url, &[]);
    assert_eq!((code, mark(&v, "rights")), (1, "failure".into()), "{v}");
    let f = found(&v, "rights");
    assert!(f.contains("XADD") && f.contains("ACL DRYRUN"), "{f}");
    assert!(!f.contains("EVALSHA"), "{f}");
    assert_eq!(row(&v, "rights")["fix"], "ACL SETUSER dlock +xadd", "{v}");
    assert_eq!(snapshot(&r), before, "doctor wrote or left a key");
}

/// What doctor sends as the guide's ACL user under `--prefix app:`: only the scratch key under
/// that prefix is named, never a real lock's key, and the scratch key is deleted.
#[test]
fn the_trial_touches_only_a_scratch_key_under_the_prefix_and_deletes_it() {
    let r = RedisServer::start_tcp(&[]);
    real_lock(&r, "app:");
    let rules: Vec<String> = readme_acl_rules()
        .into_iter()
        .map(|w| w.replace("dlock:", "app:"))
        .collect();
    let url = user(&r, &rules);
    let before = snapshot(&r);
    let mut v = serde_json::Value::Null;
    let seen = r.monitor_during(|| {
        let out = Dlock::bare()
            .env("DLOCK_URL", &url)
            // The keys row reads the locks it is given (every lock under the prefix by
            // default): given a key that does not exist, only the rights row's own traffic
            // could name the real lock.
            .args(["--prefix", "app:", "doctor", "--json", "no-such-key"])
            .run();
        v = serde_json::from_str(out.stdout.trim()).unwrap();
    });
    assert_eq!(mark(&v, "rights"), "ok", "{v}");
    let seen = seen.join("");
    assert!(
        !seen.contains("job"),
        "a real lock's key was named:\n{seen}"
    );
    assert!(
        seen.contains("\"{app:doctor:"),
        "no scratch key tried:\n{seen}"
    );
    assert!(seen.contains("\"DEL\" \"{app:doctor:"), "{seen}");
    assert_eq!(snapshot(&r), before, "doctor wrote or left a key");
}

/// A refused command in one row (the clock's TIME) leaves that row unread, not the rows after
/// it: the rights row still names TIME.
#[test]
fn a_user_without_time_gets_an_unread_clock_and_a_rights_row_naming_time() {
    let r = RedisServer::start_tcp(&[]);
    let rules: Vec<String> = readme_acl_rules()
        .into_iter()
        .filter(|w| w != "+time")
        .collect();
    let url = user(&r, &rules);
    let (code, v) = doctor(&url, &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(mark(&v, "clock"), "unknown", "{v}");
    assert!(found(&v, "clock").contains("'time'"), "{v}");
    assert_eq!(mark(&v, "rights"), "failure", "{v}");
    assert!(found(&v, "rights").contains("lacks TIME"), "{v}");
    assert_eq!(row(&v, "rights")["fix"], "ACL SETUSER dlock +time", "{v}");
}
