use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// --ttl 30s with the defaults: renew every 10 s, 3 renewals, grace 5 s: reach 55 s.
fn defaults() -> Limits {
    Limits {
        ttl: ms(30_000),
        grace: ms(5_000),
        renew_every: ms(10_000),
        max_renewals: Some(3),
    }
}

fn run(command: &str, took_ms: u64, outcome: &str, lease: Option<Limits>) -> Run {
    Run {
        command: command.into(),
        took: ms(took_ms),
        outcome: outcome.into(),
        lease,
    }
}

fn lock(key: &str, runs: Vec<Run>) -> Key {
    Key::Lock(Lock {
        key: key.into(),
        runs,
        ..Lock::default()
    })
}

fn row(found: &[Key]) -> Row {
    keys("under dlock:", found)
}

#[test]
fn the_p99_is_the_nearest_rank_and_the_reach_the_readmes_sum() {
    assert_eq!(p99(&mut []), None);
    assert_eq!(p99(&mut [ms(7)]), Some(ms(7)));
    let mut hundred: Vec<Duration> = (1..=100).rev().map(ms).collect();
    assert_eq!(p99(&mut hundred), Some(ms(99)));
    let mut two_hundred: Vec<Duration> = (1..=200).map(ms).collect();
    assert_eq!(p99(&mut two_hundred), Some(ms(198)));
    // Nearest rank rounds up: of 2 to 99 runs the p99 is the longest (issue 60).
    for n in 2..=99 {
        let mut runs: Vec<Duration> = (1..=n).map(ms).collect();
        assert_eq!(p99(&mut runs), Some(ms(n)), "{n} runs");
    }
    assert_eq!(reach(&defaults()), Some(ms(55_000)));
    let hard = Limits {
        max_renewals: Some(0),
        ..defaults()
    };
    assert_eq!(reach(&hard), Some(ms(25_000)));
    let unlimited = Limits {
        max_renewals: None,
        ..defaults()
    };
    assert_eq!(reach(&unlimited), None);
}

#[test]
fn a_well_set_key_and_no_key_at_all_pass() {
    let r = row(&[]);
    assert_eq!(r.mark, Mark::Ok, "{r:?}");
    assert!(r.found.contains("no locks under dlock:"), "{r:?}");
    // p99 12 s under a 30 s TTL: 2.5× — within the rule of thumb.
    let runs = (0..20)
        .map(|i| run("./a", 10_000 + i * 100, "ok", Some(defaults())))
        .collect();
    let r = row(&[lock("dlock:a", runs)]);
    assert_eq!(r.mark, Mark::Ok, "{r:?}");
    assert!(
        r.found
            .starts_with("1 lock under dlock:, 20 runs recorded (20 with their lease)"),
        "{r:?}"
    );
    assert!(r.why.is_empty() && r.fix.is_empty());
}

#[test]
fn runs_beyond_the_leases_reach_fail_naming_the_key_and_the_numbers() {
    // Runs of 70 s, then the lease was cut to a reach of 55 s.
    let mut runs = vec![run("./long", 1_000, "ok", Some(defaults()))];
    let before = Limits {
        max_renewals: Some(10),
        ..defaults()
    };
    runs.extend((0..9).map(|_| run("./long", 70_000, "ok", Some(before))));
    let r = row(&[lock("dlock:long", runs)]);
    assert_eq!(r.mark, Mark::Failure, "{r:?}");
    assert!(
        r.found.contains(
            "dlock:long: p99 1m10s of 10 runs is beyond its lease's reach 55.0s (--ttl 30.0s, --max-renewals 3 × --renew-every 10.0s, --grace 5.0s)"
        ),
        "{r:?}"
    );
    assert!(
        r.why.contains("renewal cap") && r.fix.contains("--max-renewals"),
        "{r:?}"
    );
    // Runs stopped at the cap held the lock for just under the reach, but wanted longer.
    let mut runs: Vec<Run> = (0..95)
        .map(|_| run("./long", 20_000, "ok", Some(defaults())))
        .collect();
    runs.extend((0..2).map(|_| run("./long", 54_900, "cap", Some(defaults()))));
    let r = row(&[lock("dlock:long", runs.clone())]);
    assert_eq!(r.mark, Mark::Failure, "{r:?}");
    assert!(
        r.found.contains("dlock:long: 2 of 97 runs stopped at the renewal cap put the p99 beyond its lease's reach 55.0s"),
        "{r:?}"
    );
    // The cap hits are named among the incidents too.
    assert!(
        r.found
            .contains("0 lost, 2 cap hits, 0 compare failures in its last 97 runs")
    );
    // One cap hit in 151 runs is past the p99 (nearest rank 150): the incident alone warns.
    runs.truncate(96);
    runs.extend((0..55).map(|_| run("./long", 20_000, "ok", Some(defaults()))));
    let r = row(&[lock("dlock:long", runs)]);
    assert_eq!(r.mark, Mark::Warning, "{r:?}");
    // Unlimited renewals: no reach to exceed.
    let runs = (0..10)
        .map(|_| {
            let lease = Limits {
                max_renewals: None,
                ..defaults()
            };
            run("./long", 70_000, "ok", Some(lease))
        })
        .collect();
    assert_eq!(row(&[lock("dlock:long", runs)]).mark, Mark::Ok);
}

#[test]
fn only_runs_whose_lease_is_known_are_judged() {
    // Old entries without a lease: however long, no verdict on the TTL.
    let runs = (0..10).map(|_| run("./old", 900_000, "ok", None)).collect();
    let r = row(&[lock("dlock:old", runs)]);
    assert_eq!(r.mark, Mark::Ok, "{r:?}");
    assert!(
        r.found.contains("10 runs recorded (0 with their lease)"),
        "{r:?}"
    );
    // One new run among old ones: judged on the new run alone.
    let mut runs = vec![run("./old", 1_000, "ok", Some(defaults()))];
    runs.extend((0..10).map(|_| run("./old", 900_000, "ok", None)));
    let r = row(&[lock("dlock:old", runs)]);
    assert_eq!(r.mark, Mark::Warning, "{r:?}");
    assert!(
        r.found.contains("--ttl 30.0s is 30× the p99 1.0s of 1 run"),
        "{r:?}"
    );
}

#[test]
fn a_ttl_far_above_the_p99_warns_but_a_short_ttl_never_does() {
    let runs = (0..5)
        .map(|_| run("./quick", 2_000, "ok", Some(defaults())))
        .collect();
    let r = row(&[lock("dlock:quick", runs)]);
    assert_eq!(r.mark, Mark::Warning, "{r:?}");
    assert!(
        r.found
            .contains("dlock:quick: --ttl 30.0s is 15× the p99 2.0s of 5 runs (3 × p99: 6.0s)"),
        "{r:?}"
    );
    assert!(r.why.contains("crash"), "{r:?}");
    // 10× exactly is not "far above"; a 1 s TTL over 5 ms jobs takes over fast enough.
    let ten = (0..5)
        .map(|_| run("./x", 3_000, "ok", Some(defaults())))
        .collect();
    assert_eq!(row(&[lock("dlock:x", ten)]).mark, Mark::Ok);
    let short = Limits {
        ttl: ms(1_000),
        grace: ms(300),
        renew_every: ms(300),
        max_renewals: Some(3),
    };
    let tiny = (0..5).map(|_| run("./x", 5, "ok", Some(short))).collect();
    assert_eq!(row(&[lock("dlock:x", tiny)]).mark, Mark::Ok);
}

#[test]
fn different_commands_and_incidents_warn_naming_the_worst_keys() {
    let l = defaults();
    let three = vec![
        run("./a", 12_000, "ok", Some(l)),
        run("./b", 12_000, "lost", Some(l)),
        run("./c", 12_000, "ok", Some(l)),
        run("./a", 12_000, "compare_failure", Some(l)),
    ];
    let two = vec![
        run("./a", 12_000, "ok", Some(l)),
        run("./b", 12_000, "ok", Some(l)),
    ];
    let r = row(&[lock("dlock:two", two), lock("dlock:three", three)]);
    assert_eq!(r.mark, Mark::Warning, "{r:?}");
    // The key with more commands first.
    let three_at = r
        .found
        .find("dlock:three: 3 different programs in its last 4 runs (\"./a\", \"./b\", \"./c\")");
    let two_at = r.found.find("dlock:two: 2 different programs");
    assert!(three_at.is_some() && three_at < two_at, "{r:?}");
    assert!(
        r.found
            .contains("dlock:three: 1 lost, 0 cap hits, 1 compare failures in its last 4 runs"),
        "{r:?}"
    );
    assert!(
        r.why.contains("never one global key") && r.fix.contains("--key"),
        "{r:?}"
    );
}

#[test]
fn a_key_without_a_log_is_judged_on_its_stats_counters() {
    let k = Key::Lock(Lock {
        key: "dlock:nolog".into(),
        counters: [2, 0, 1],
        ..Lock::default()
    });
    let r = row(&[k]);
    assert_eq!(r.mark, Mark::Warning);
    assert!(
        r.found
            .contains("dlock:nolog: 2 lost, 0 cap hits, 1 compare failures counted in its stats"),
        "{r:?}"
    );
}

#[test]
fn foreign_keys_are_named_and_a_lock_with_no_expiry_fails() {
    let fixed = Key::Lock(Lock {
        key: "dlock:other".into(),
        no_expiry: Some("1".into()),
        ..Lock::default()
    });
    let hash = Key::Foreign {
        key: "dlock:session".into(),
        why: "not a dlock lock (a hash; a lock is a string holding a token)".into(),
    };
    let r = row(&[hash, fixed]);
    assert_eq!(r.mark, Mark::Failure, "{r:?}");
    assert!(
        r.found
            .contains("dlock:other held with value \"1\" and no expiry"),
        "{r:?}"
    );
    assert!(
        r.found.contains("dlock:session: not a dlock lock (a hash"),
        "{r:?}"
    );
    // The failure comes first.
    assert!(r.found.find("dlock:other") < r.found.find("dlock:session"));
}

#[test]
fn past_three_keys_of_a_kind_the_rest_are_counted() {
    let keys: Vec<Key> = (0..5)
        .map(|i| Key::Foreign {
            key: format!("dlock:f{i}"),
            why: "not a dlock lock".into(),
        })
        .collect();
    let r = row(&keys);
    assert!(
        r.found.contains("dlock:f2") && !r.found.contains("dlock:f3"),
        "{r:?}"
    );
    assert!(r.found.ends_with("and 2 more"), "{r:?}");
}

/// A cancelled run's duration is an operator's cut, not the job's: it neither hides a TTL far
/// above the runs' p99 nor counts toward it (issue 63).
#[test]
fn a_cancelled_runs_duration_is_left_out_of_the_p99() {
    let l = Some(defaults());
    let mut runs: Vec<Run> = (0..20).map(|_| run("./r", 200, "ok", l)).collect();
    runs.insert(0, run("./r", 29_000, "cancelled", l));
    let r = row(&[lock("dlock:r", runs)]);
    assert_eq!(r.mark, Mark::Warning, "{r:?}");
    assert!(
        r.found
            .contains("dlock:r: --ttl 30.0s is 150× the p99 200ms of 20 runs"),
        "{}",
        r.found
    );
}

/// One script with other arguments, or run through a shell or an interpreter, is one job; the
/// row counts programs (issue 63: `--shard 0` and `--shard 1` were "2 different commands").
#[test]
fn a_program_is_its_first_word_through_env_shells_and_interpreters() {
    for (command, job) in [
        ("./build.sh --shard 1", "./build.sh"),
        ("sh -c ./build.sh --shard 2", "./build.sh"),
        ("/bin/bash -euc ./build.sh --day mon", "./build.sh"),
        ("env TZ=UTC LANG=C ./build.sh", "./build.sh"),
        ("python3 export.py --day mon", "export.py"),
        ("python3 -m exporter --day mon", "exporter"),
        ("sh -c exit 0", "exit"),
        ("sleep 0", "sleep"),
        ("true", "true"),
        ("bash", "bash"),
    ] {
        assert_eq!(program(command), job, "{command}");
    }
    let l = Some(defaults());
    let shards: Vec<Run> = (0..3)
        .map(|i| run(&format!("./build.sh --shard {i}"), 12_000, "ok", l))
        .chain([run("sh -c ./build.sh --shard 3", 12_000, "ok", l)])
        .collect();
    let r = row(&[lock("dlock:reports", shards)]);
    assert!(!r.found.contains("different"), "{r:?}");
}
