//! The bug table: each bug put back alone — into the real machines through their test-support
//! knob (`dlock::api::sim::set_bugs`), or into the real scripts as they are loaded — must be
//! found by the simulation within 60 s, from seed 0 up. Each test prints the seed that found
//! it, the time it took and the violation; the README's table repeats them.

use std::time::{Duration, Instant};

use dlock::api::sim::{Bug, set_bugs};

use crate::seeds::{report, run_world, simulate_patched};
use crate::world::Scenario;

/// How long a bug may take to be found.
const BUDGET: Duration = Duration::from_secs(60);

/// Search seeds from 0 with `bug` on (or `patch` in the scripts) until a violation; the seed.
fn hunt(
    name: &str,
    bug: Option<Bug>,
    patch: Option<(&'static str, &'static str)>,
    unsafe_ok: bool,
) -> u64 {
    hunt_in(name, bug, patch, unsafe_ok, |_| true)
}

/// The same, over the seeds whose world `family` accepts (drawing a world costs nothing).
fn hunt_in(
    name: &str,
    bug: Option<Bug>,
    patch: Option<(&'static str, &'static str)>,
    unsafe_ok: bool,
    family: impl Fn(&Scenario) -> bool,
) -> u64 {
    let draw = |seed| Some(Scenario::draw(seed, unsafe_ok)).filter(|sc| family(sc));
    hunt_worlds(name, bug, patch, draw)
}

/// The same over the worlds `draw` gives by seed (None: a seed skipped).
fn hunt_worlds(
    name: &str,
    bug: Option<Bug>,
    patch: Option<(&'static str, &'static str)>,
    draw: impl Fn(u64) -> Option<Scenario>,
) -> u64 {
    set_bugs(&bug.into_iter().collect::<Vec<_>>());
    let start = Instant::now();
    let (mut seed, mut worlds, mut bounded, mut patched) = (0, 0, 0, 0);
    let found = loop {
        let Some(sc) = draw(seed) else {
            seed += 1;
            continue;
        };
        let (o, w) = run_world(sc, 40, patch);
        worlds += 1;
        bounded += o.counts.restart_bounded;
        // A world may run none of the patched script (a paused world may never release).
        patched += w.server.patched;
        if patch.is_some() && worlds >= 20 {
            assert!(
                patched > 0,
                "{name}: the patch matched no script in {worlds} worlds"
            );
        }
        if let Some(v) = o.violation {
            break Some((v, w));
        }
        if start.elapsed() > BUDGET {
            break None;
        }
        seed += 1;
    };
    set_bugs(&[]);
    let took = start.elapsed();
    let Some((v, w)) = found else {
        panic!(
            "{name}: not found in {} seeds, {worlds} worlds simulated ({bounded} jobs held to a restart's bound), {:.1} s",
            seed + 1,
            took.as_secs_f64()
        );
    };
    // The same world without the bug: no violation, so the bug is what was found.
    let (clean, _) = run_world(w.sc.clone(), 0, None);
    assert!(
        clean.violation.is_none(),
        "{name}: seed {seed} fails without the bug too: {:?}",
        clean.violation
    );
    let first = report(seed, &w, &v);
    println!(
        "bug table: {name}: seed {seed}, {:.2} s: {}",
        took.as_secs_f64(),
        first.lines().next().unwrap_or("")
    );
    seed
}

#[test]
fn drift_allowance_at_zero() {
    hunt("drift allowance 0", Some(Bug::NoDrift), None, false);
}

#[test]
fn kill_lead_at_zero() {
    hunt("kill lead 0", Some(Bug::NoKillLead), None, false);
}

#[test]
fn lease_measured_from_the_reply() {
    // Over the worlds with slow networks (up to 20 ms each way): the reply comes later than
    // the drift allowance can absorb.
    let family = |s: &Scenario| s.delay_max >= 20_000;
    let bug = Some(Bug::LeaseFromReply);
    hunt_in("lease from the renewal's reply", bug, None, false, family);
}

#[test]
fn connection_watch_off() {
    // Only a restart that loses the data makes the watch matter: an unsafe world, where the
    // bound on how long an old job outlives the server's return is checked (on a fair network).
    let family = |s: &Scenario| s.restarts.iter().any(|r| !r.2) && s.loss == 0.0;
    let bug = Some(Bug::NoConnectionWatch);
    hunt_in("connection watch off", bug, None, true, family);
}

#[test]
fn one_renewal_past_the_cap() {
    hunt("renewal past the cap", Some(Bug::CapPlusOne), None, false);
}

/// The worlds the wake-up bound is checked in: a plain lock, wake-ups, no --every, a fair
/// network, no restart or failover.
fn wake_up_bound_checked(s: &Scenario) -> bool {
    s.limit == 1
        && s.notify
        && s.every.is_none()
        && s.loss == 0.0
        && s.reset == 0.0
        && s.partitions.is_empty()
        && s.restarts.is_empty()
        && s.failovers.is_empty()
        && !s.slow
}

#[test]
fn a_wake_up_left_with_a_waiter() {
    // Liveness: the next blocked waiter of the free lock sleeps until its poll, past the
    // wake-up bound. Over the worlds that bound is checked in: a plain lock, wake-ups, no
    // --every, a fair network.
    let bug = Some(Bug::WakeUpLeavesWithTheWaiter);
    hunt_in(
        "a wake-up left with a waiter (liveness)",
        bug,
        None,
        false,
        wake_up_bound_checked,
    );
}

#[test]
fn release_without_the_token_check() {
    let patch = (
        "local ours = redis.call('GET', key_lock) == arg_token",
        "local ours = redis.call('GET', key_lock) ~= false",
    );
    hunt("release without token check", None, Some(patch), false);
}

#[test]
fn renewal_without_the_token_check() {
    hunt(
        "renew without token check",
        None,
        Some(("if v == arg_token then", "if v then")),
        false,
    );
}

#[test]
fn wake_up_past_the_queue_bound() {
    let patch = ("  redis.call('LTRIM', list, 0, tonumber(keep) - 1)\n", "");
    hunt("wake-up past the queue's bound", None, Some(patch), false);
}

#[test]
fn semaphore_slot_freed_twice() {
    // A semaphore's release frees its slot even when the slot is no longer its own: freed once
    // by its expiry, again by the late release, under the next holder.
    let patch = (
        "local ours = redis.call('GET', key_lock) == arg_token",
        "local ours = redis.call('GET', key_lock) == arg_token or (n > 1 and redis.call('EXISTS', key_lock) == 1)",
    );
    hunt("semaphore slot freed twice", None, Some(patch), false);
}

#[test]
fn first_lease_from_the_waited_send() {
    hunt(
        "first lease measured from the waited send",
        Some(Bug::FirstLeaseFromWaitedSend),
        None,
        false,
    );
}

#[test]
fn every_window_not_checked() {
    let patch = (
        "  if last >= window and not trigger",
        "  if false and not trigger",
    );
    hunt("--every's not-due check skipped", None, Some(patch), false);
}

#[test]
fn every_window_not_rounded() {
    // lib.lua's window left at the try's own time: each try finds a window of its own, never
    // done. Caught only because the checker places each grant in its window by the server's
    // clock itself, not by the window the script reports.
    let patch = (
        "  return now - ((now - offset) % every)\n",
        "  return now\n",
    );
    hunt(
        "--every's window not rounded to its start",
        None,
        Some(patch),
        false,
    );
}

#[test]
fn every_other_period_not_refused() {
    // Hosts that disagree about the key's period each run once per window of their own: found
    // in the worlds where they do.
    let patch = (
        "  if last >= 0 and (done[3] or done[8]) and other then",
        "  if false then",
    );
    hunt_in(
        "--every's other period not refused",
        None,
        Some(patch),
        false,
        |sc| sc.host_every.iter().any(|e| *e != sc.every),
    );
}

#[test]
fn every_done_by_equal_window_starts() {
    // The old rule: done only when the recorded window start equals the current one. After a
    // change of period the new window holding the last success runs again: found in the
    // worlds where the period changes.
    let patch = (
        "  if last >= window and not trigger",
        "  if tonumber(done[2]) == window and not trigger",
    );
    hunt_in(
        "--every done by equal window starts",
        None,
        Some(patch),
        false,
        |sc| sc.change.is_some(),
    );
}

#[test]
fn every_success_placed_at_its_release() {
    // A success recorded at its release's time, not its grant's: a run that crosses a
    // boundary makes the next window look done, and its tries are answered "not due".
    let patch = (
        "  local granted = tonumber(g[1]) or tonumber(window)",
        "  local granted = server_ms()",
    );
    hunt(
        "--every's success placed at its release, not its grant",
        None,
        Some(patch),
        false,
    );
}

#[test]
fn calendar_starts_one_window_late() {
    // The host sends a calendar's window starts from the window after its own, the one before
    // left out: a host whose clock is ahead of the server's by less than a window is told, near
    // a boundary, that its clock is off (exit 69, the window missed). Found in the calendar
    // worlds, by the checker's own windows around the host's clock.
    hunt_in(
        "calendar window starts one window late",
        Some(Bug::CalendarStartsLate),
        None,
        false,
        Scenario::calendar_world,
    );
}

#[test]
fn a_free_slot_never_found() {
    // Liveness: acquire.lua answers busy for a free lock; a waiter gives up on it (fair worlds).
    let patch = ("    if not free then free = i end", "");
    hunt(
        "a free slot never found (liveness)",
        None,
        Some(patch),
        false,
    );
}

/// A failing world shrinks to a smaller one that still fails, whose trace is shorter.
#[test]
fn a_failing_world_shrinks() {
    set_bugs(&[Bug::NoKillLead]);
    // Among the worlds without cancels (a cancel's kill early in a world can fail it before
    // anything there is to shrink: seed 2).
    let seed = (0..)
        .filter(|s| Scenario::draw(*s, false).cancels.is_empty())
        .find(|s| simulate_patched(*s, false, 0, None).0.violation.is_some())
        .unwrap_or(0);
    let sc = Scenario::draw(seed, false);
    let (o, big) = crate::seeds::run_world(sc.clone(), 100_000, None);
    assert!(
        o.violation.is_some(),
        "seed {seed} must fail with the kill lead at 0"
    );
    let (small, w) = crate::seeds::shrink(&sc, None);
    set_bugs(&[]);
    println!(
        "shrunk (seed {seed}): {} hosts × {} runs, {} events → {} hosts × {} runs, {} events: {}",
        sc.hosts,
        sc.runs,
        big.check.recent.len(),
        small.hosts,
        small.runs,
        w.check.recent.len(),
        w.check.violation.clone().unwrap_or_default()
    );
    assert!(w.check.violation.is_some());
    assert!(small.hosts * small.runs as usize <= sc.hosts * sc.runs as usize);
    assert!(w.check.recent.len() < big.check.recent.len());
}

#[test]
fn pause_not_read() {
    // An acquire that does not look at the key's pause starts runs while the operator paused
    // it: found in the worlds that pause.
    let patch = ("  if until_ms then\n", "  if false then\n");
    hunt_in(
        "a pause not read by the acquire",
        None,
        Some(patch),
        false,
        |sc| sc.pause.is_some(),
    );
}

#[test]
fn cancelled_run_recorded_as_a_success() {
    // release.lua takes a cancelled run (not a failure, lib.lua's history says) for a success:
    // --every's window is marked done though its job was stopped. Found in the worlds with
    // --every that cancel, by the done key naming a cancelled run.
    let patch = (
        "if all and window ~= '' and arg_outcome == 'ok' then",
        "if all and window ~= '' and (arg_outcome == 'ok' or arg_outcome == 'cancelled') then",
    );
    hunt_in(
        "a cancelled run recorded as --every's success",
        None,
        Some(patch),
        false,
        |sc| !sc.cancels.is_empty() && sc.every.is_some(),
    );
}

#[test]
fn cancel_without_the_token_check() {
    // cancel.lua pushes its request whoever holds the slot: a run that ended between the
    // operator's read of its token and the script is reported asked (and `dlock cancel` waits
    // for a run that is gone). Found in the worlds that cancel.
    let patch = ("if v ~= arg_token then return {0} end\n", "");
    hunt_in(
        "cancel without token check",
        None,
        Some(patch),
        false,
        |sc| !sc.cancels.is_empty(),
    );
}

#[test]
fn an_also_key_not_checked() {
    // acquire.lua's --also scan takes an --also key's first slot whether or not it is free:
    // that key of the set is not checked. The grant's SET NX of it fails silently and its
    // holder hash is overwritten: the run holds its --key without it (a partial set), and its
    // job runs beside the key's holder. Found in the --also worlds.
    let patch = (
        "    if not v then\n      xfree = xfree + 1",
        "    if true then\n      xfree = xfree + 1",
    );
    hunt_worlds("an --also key not checked", None, Some(patch), |seed| {
        Some(Scenario::draw_also(seed, false))
    });
}

#[test]
fn a_free_also_key_answered_busy() {
    // Liveness: acquire.lua's --also scan counts every --also key as blocking, free or not:
    // no --also run is ever granted, and every one gives up busy with its whole set free.
    // Every host still finishes (each run's --wait ends it); found by the free-set bound on
    // the --also worlds' fair networks.
    let patch = (
        "  if not afree[j] then blocked[#blocked + 1] = j end",
        "  blocked[#blocked + 1] = j",
    );
    hunt_worlds(
        "a free --also key answered busy (liveness)",
        None,
        Some(patch),
        |seed| Some(Scenario::draw_also(seed, false)),
    );
}

#[test]
fn an_absence_read_as_a_cancel() {
    // `dlock cancel` (core::cancel::Confirm) reads a run that ended without its holder's word
    // as cancelled (issue 59's false success): a run whose release never came (its network
    // cut, its lease run out) is reported cancelled. Found in the worlds that cancel.
    let bug = Some(Bug::AbsentIsCancelled);
    hunt_in("an absence read as a cancel", bug, None, false, |sc| {
        !sc.cancels.is_empty() || sc.cancel_at_end > 0
    });
}

#[test]
fn another_operators_request_taken_back() {
    // withdraw.lua takes back every request on the run's list, not only its own cancel's (as
    // before the soak's seed 1008240): with two operators cancelling one run, the one whose
    // request the holder took finds the other's still waiting, takes the list back and says
    // its request was not taken (exit 4) while the holder stops the run on it. Found in the
    // worlds where two operators cancel at once.
    let patch = (
        "if redis.call('LREM', key_list, 1, arg_request) == 0 then return 0 end",
        "if redis.call('DEL', key_list) == 0 then return 0 end",
    );
    hunt_in(
        "another operator's request taken back",
        None,
        Some(patch),
        false,
        |sc| sc.cancels.len() >= 2 && sc.cancel_timeout.is_some(),
    );
}

#[test]
fn a_replace_request_left_behind() {
    // `run --on-busy replace` (core::acquire's replace.rs) gives up without taking its request
    // back: the old run takes it later and is stopped with nothing replacing it. Found in the
    // worlds with replacing hosts, by the checker's abandoned requests (check/cancel.rs).
    let bug = Some(Bug::ReplaceLeftBehind);
    hunt_in("a replace request left behind", bug, None, false, |sc| {
        sc.replace.contains(&true)
    });
}

#[test]
fn a_live_run_taken_for_a_kept_slot() {
    // cancel.lua reads every holder as one only --hold-at-least keeps: a replacing run breaks
    // a live run's lock instead of asking it to stop, and starts its job beside the old one.
    // Found in the worlds with replacing hosts, by the overlap rule.
    let patch = (
        "  if h[i] == 'kept' and h[i + 1] == '1' then kept = true end",
        "  kept = true",
    );
    hunt_in(
        "a live run taken for a kept slot",
        None,
        Some(patch),
        false,
        |sc| sc.replace.contains(&true),
    );
}

#[test]
fn after_never_checked() {
    // acquire.lua ignores --after: a run starts before the job it follows has succeeded in
    // its window. Found in the --after worlds, by the upstream rule (upstream.rs).
    let patch = (
        "  if after_done and not ours_already() then",
        "  if false then",
    );
    hunt_in("--after never checked", None, Some(patch), false, |sc| {
        !sc.after.is_empty()
    });
}

#[test]
fn after_counts_an_earlier_windows_success() {
    // acquire.lua takes any success of KEY for this window's: yesterday's ETL lets today's
    // report run. Found in the --after worlds, by the upstream rule.
    let patch = (
        "    if not theirs or theirs < window then",
        "    if not theirs then",
    );
    hunt_in(
        "--after counts an earlier window's success",
        None,
        Some(patch),
        false,
        |sc| !sc.after.is_empty(),
    );
}

#[test]
fn a_garbage_reply_taken_for_a_cancel() {
    // The listener (core::cancel::Listener) takes any reply for a request (issue 59): a server
    // that answers garbage cancels the run, which ends 122 on no request. Found in the worlds
    // whose server answers garbage a while.
    let bug = Some(Bug::AnyReplyIsRequest);
    hunt_in(
        "a garbage reply taken for a cancel",
        bug,
        None,
        false,
        |sc| sc.garbage.is_some(),
    );
}

#[test]
fn a_retry_told_the_counters_fence() {
    // Issue 60: acquire.lua's retry after a lost reply answers the fence counter's value, not
    // its own slot's fence: with --limit N another run may have taken a slot in between, and
    // both jobs run with its fence. Found in the --limit worlds that lose replies, by the
    // checker's fences (fences.rs: two live jobs with one fence, or a fence not its grant's).
    let patch = (
        "    local r = {1, tonumber(redis.call('HGET', holder(i), 'fence') or '0'), '', i, window}",
        "    local r = {1, tonumber(redis.call('GET', key_fence) or '0'), '', i, window}",
    );
    hunt(
        "a lost reply's retry told the counter's fence",
        None,
        Some(patch),
        false,
    );
}

#[test]
fn a_no_stats_fence_that_stands_still() {
    // Issue 60's audit: with --no-stats acquire.lua read the fence counter instead of
    // incrementing it, and two grants in a row were told one fence. Found in the worlds with
    // --no-stats hosts, by the checker's fences (fences.rs).
    let patch = (
        "local f = redis.call('INCR', key_fence)",
        "local f = arg_stats == '1' and redis.call('INCR', key_fence) or tonumber(redis.call('GET', key_fence) or '0')",
    );
    hunt_in(
        "--no-stats fence not advanced",
        None,
        Some(patch),
        false,
        |sc| sc.no_stats.contains(&true),
    );
}

#[test]
fn the_connection_unwatched_in_the_jobs_first_moments() {
    // Issue 62: the supervising loop watches the connection only from FIRST_LOOK (100 ms) into
    // the job, not from the acquire's reply on: a restart that loses the data in the job's
    // first moments is seen late, and the old job outlives the server's return past the bound
    // (on a fair network, as `connection_watch_off`). The window is 100 ms after a grant: the
    // worlds get four restarts that lose the data, one in each quarter of their first two
    // thirds (the soak's rate, a third of the worlds one restart, took 25,794 seeds: 8 s in
    // the sim profile, past the 60 s budget on CI's loaded cores).
    let bug = Some(Bug::LateWatch);
    hunt_worlds("connection watched late", bug, None, four_restarts);
}

/// The fair worlds (no losses, no failovers, no garbage) of the unsafe draw, given four
/// restarts that lose the data, one in each quarter of their first two thirds (down for up to
/// 0.3 × the TTL, as the draw's). A garbage server hides the loss (the draw never gives it a
/// restart).
fn four_restarts(seed: u64) -> Option<Scenario> {
    restarts(seed, 4)
}

/// The same with `n` restarts, one in each n-th of the first two thirds (8 TTLs), in its first
/// half, down for up to 0.3 × the TTL or a third of its share, whichever is shorter.
fn restarts(seed: u64, n: u64) -> Option<Scenario> {
    let mut sc = Scenario::draw(seed, true);
    if sc.loss > 0.0 || !sc.failovers.is_empty() || sc.garbage.is_some() {
        return None;
    }
    let mut r = crate::rng::Rng::new(seed ^ 0x1a7e_1a7e);
    let share = sc.ttl.as_micros() as u64 * 8 / n;
    let down = (sc.ttl.as_micros() as u64 * 3 / 10).min(share / 3);
    sc.restarts = (0..n)
        .map(|i| (i * share + r.range(0, share / 2), r.range(0, down), false))
        .collect();
    Some(sc)
}

#[test]
fn a_connection_gone_before_the_job_starts() {
    // A restart that loses the data while the grant's answer is on its way: the waker's stop
    // (the run's own-key push) fails on the closed connection, and the session drops it. The
    // job starts with no connection to watch; unless the machine is told so at the start
    // (`Hold::start`), its lease is first renewed at its schedule, a third of the TTL later,
    // and the job outlives the server's return past the bound. Found in the worlds with
    // wake-ups of `four_restarts`, by the restart's bound (which holds a run between its
    // grant and its job's start to it since this row).
    let bug = Some(Bug::GoneAtStartUnwatched);
    hunt_worlds(
        "a connection gone before the job starts",
        bug,
        None,
        |seed| {
            let mut sc = restarts(seed, 16).filter(|sc| sc.notify)?;
            // The window is an answer's way back: the draw's slowest network (20 ms each way).
            sc.delay_max = 20_000;
            Some(sc)
        },
    );
}

#[test]
fn a_multi_key_waiter_without_reservations() {
    // Issue 62: without its reservations (acquire.lua's `reserve` does nothing) a run that
    // needs several keys is overtaken on them by runs that first tried after it, without
    // bound: the starvation the issue measured. Found in the --also worlds by the fairness
    // checker (fairness.rs: a younger run took the last free slot of a key an older waiter's
    // reservation keeps).
    let patch = ("    redis.call('HSET', reserve_key(j), arg_token, v)\n", "");
    hunt_worlds(
        "a multi-key waiter without reservations",
        None,
        Some(patch),
        |seed| Some(Scenario::draw_also(seed, false)),
    );
}

#[test]
fn a_woken_try_that_failed_keeps_its_wake_up() {
    // Issue 62: a woken try that fails with no answer (lost on the way), the wait ending after
    // it, leaves with its wake-up: the next waiter waits for its poll. Found in the worlds that
    // lose messages, by the wake-up ledger (wakeups.rs: a wake-up no try of the run used and
    // it never handed back).
    let bug = Some(Bug::WokenFailureLosesTheWakeUp);
    hunt_in(
        "a woken failed try keeps its wake-up",
        bug,
        None,
        false,
        |sc| sc.loss > 0.0 && sc.notify,
    );
}

#[test]
fn a_semaphore_waiter_keeps_another_slots_wake_up() {
    // Issue 62: a --limit waiter that takes a slot by its timer keeps a wake-up that came for
    // another slot meanwhile: that slot's next waiter waits for its poll. Found in the --limit
    // worlds by the wake-up ledger (wakeups.rs: a grant with a slot left free uses no wake-up).
    let bug = Some(Bug::SlotWakeUpKept);
    hunt_in(
        "a semaphore's waiter keeps another slot's wake-up",
        bug,
        None,
        false,
        |sc| sc.limit > 1 && sc.notify,
    );
}

#[test]
fn a_waiter_leaving_with_earlier_unused_wake_ups() {
    // A waiter whose woken tries all got no answer hands back only its last wake-up when its
    // wait ends, not the ones before it (the soak's seed 1012293, a --limit 3 world): the
    // next waiters sleep on free slots until their poll. Found in the worlds that lose
    // messages, by the wake-up ledger.
    let bug = Some(Bug::SupersededWakeUpKept);
    hunt_in(
        "a waiter leaves with its earlier unused wake-ups",
        bug,
        None,
        false,
        |sc| sc.loss > 0.0 && sc.notify && sc.limit > 1,
    );
}

#[test]
fn a_wake_up_kept_for_want_of_a_connection() {
    // Issue 61: the shell's waker sent nothing when the tries' connection was down, unless a
    // woken try had failed: a waiter whose last try got no answer while a wake-up came left
    // with that wake-up. The simulation's copy of the waker lacked the branch; running the
    // shell's own machine, its wake-up ledger found it (seed 65). Found in the worlds that
    // lose messages.
    let bug = Some(Bug::DisconnectedWakeUpKept);
    hunt_in(
        "a wake-up kept for want of a connection",
        bug,
        None,
        false,
        |sc| sc.loss > 0.0 && sc.notify,
    );
}

#[test]
fn a_listener_that_never_polls() {
    // Issue 61: the listener's fallback broken in core (a refused BLPOP ends it instead of
    // polling with LPOP): a holder whose user may run LPOP is never cancelled. Found in the
    // worlds whose users lack BLPOP, by the take bound (a request a listener could take is
    // taken before the job ends, a poll's pause after it was placed).
    let bug = Some(Bug::ListenerNeverPolls);
    hunt_in("a listener that never polls", bug, None, false, |sc| {
        sc.rights.contains(&crate::scenario::Rights::NoBlpop)
    });
}

#[test]
fn a_waker_started_after_a_signal() {
    // Issue 61: a signal read after a busy answer (or after the replace's) ended the wait, or
    // sent it to take its replace request back, with the waker that answer asked for still
    // to start: the binary started a BLPOP no waiter was behind. Found first by Take's and
    // Wait's unit tests; here in the worlds that send SIGTERMs, by the rule that nothing
    // starts a waker after one.
    let bug = Some(Bug::StrayWaker);
    hunt_in("a waker started after a signal", bug, None, false, |sc| {
        !sc.signals.is_empty() && sc.notify
    });
}

#[test]
fn a_replace_request_sent_after_a_signal() {
    // Issue 61: a SIGTERM read after the busy answer that asked for the replace (or during
    // its GET) ended the wait only after the request went out (the soak's seed 1026261, the
    // first soak with signals): the holder's run is stopped and nothing replaces it. Found in
    // the replace worlds, their replacing hosts sent eight SIGTERMs each over the first half
    // of the world (at the soak's rate it takes minutes), by the rule that no request goes
    // out after a signal.
    let bug = Some(Bug::ReplaceAfterSignal);
    hunt_worlds("a replace request sent after a signal", bug, None, |seed| {
        let mut sc = Scenario::draw(seed, false);
        if !sc.replace.contains(&true) {
            return None;
        }
        let mut r = crate::rng::Rng::new(seed ^ 0x5167_5167);
        let half = sc.ttl.as_micros() as u64 * 6;
        sc.signals = (0..sc.hosts)
            .filter(|&h| sc.replace[h])
            .flat_map(|h| (0..8).map(move |_| h))
            .map(|h| (r.range(0, half), h))
            .collect();
        Some(sc)
    });
}

#[test]
fn a_signal_whose_sigkill_waits_for_the_hard_stop() {
    // Issue 61: a SIGTERM to a run whose job ignores it brings SIGKILL only at the lease's hard
    // stop, not --grace after it (the stop machine's signal rule, broken in core). Found in the
    // worlds that send SIGTERMs, by the rule that a signalled run's job is dead within --grace
    // of the signal and SIGKILL's latency (the simulation's first signals to running hosts).
    let bug = Some(Bug::SignalKillsAtHardStop);
    hunt_in(
        "a signal's SIGKILL at the hard stop",
        bug,
        None,
        false,
        |sc| !sc.signals.is_empty(),
    );
}

#[test]
fn a_signal_read_after_the_grant() {
    // Issue 61: a SIGTERM that came while the winning try was out, given to the acquire
    // machine after the grant (the binary's shell read its events after each call's answer):
    // the wait, over, ignores it and the job starts. Found in the worlds with signals, by a
    // job started after a SIGTERM reached its waiting run.
    hunt_in(
        "a signal read after the grant",
        Some(Bug::SignalAfterTheGrant),
        None,
        false,
        |sc| !sc.signals.is_empty(),
    );
}

#[test]
fn a_signal_during_the_wakers_stop() {
    // Issue 61: a SIGTERM read after the grant's answer, during the waker's stop (the own-key
    // push the binary makes before the job starts), dropped by the wait: the job starts after
    // the signal. The binary's shell read no events between that stop and the job; found once
    // the simulation ran the stop as the binary's blocking step. Found in the worlds with
    // signals, by a job started after a SIGTERM reached its waiting run. The window is one
    // round trip: the worlds with wake-ups get eight SIGTERMs a host over their first half
    // (the soak's rate, one to four a world, took 10,913 seeds once the simulation's session
    // dropped its connection on a failure: past the 60 s budget in a debug build).
    let bug = Some(Bug::SignalDuringTheWakersStop);
    hunt_worlds("a signal during the waker's stop", bug, None, |seed| {
        let mut sc = Scenario::draw(seed, false);
        if !sc.notify {
            return None;
        }
        let mut r = crate::rng::Rng::new(seed ^ 0x5167_5167);
        let half = sc.ttl.as_micros() as u64 * 6;
        sc.signals = (0..sc.hosts)
            .flat_map(|h| (0..8).map(move |_| h))
            .map(|h| (r.range(0, half), h))
            .collect();
        Some(sc)
    });
}

#[test]
fn an_exit_that_cuts_the_hand_on_short() {
    // Issue 61: a run that gave up exits right after its waker's own-key push, without waiting
    // for the waker's thread (`Stopping::linger`, the binary's rule): a wake-up its BLPOP took
    // just before the push dies with the process, and the next waiter sleeps until its poll
    // on a free lock. Found by the wake-up ledger in the worlds where liveness is checked.
    let bug = Some(Bug::ExitCutsTheHandOn);
    hunt_in(
        "an exit that cuts the hand-on short",
        bug,
        None,
        false,
        wake_up_bound_checked,
    );
}

#[test]
fn a_splay_not_slept() {
    // Issue 61: --splay's sleep said but not slept (the sleep was the shell's; it is the
    // acquire machine's now). Found in the --splay worlds, by a try sent before its run's
    // drawn sleep ended (the host's own clock).
    hunt_in(
        "a splay not slept",
        Some(Bug::SplayNotSlept),
        None,
        false,
        |sc| !sc.splay.is_zero(),
    );
}

#[test]
fn a_trigger_never_taken() {
    // Issue 66: a grant that lets a trigger through leaves it on the done record: every later
    // try runs the window again. Found in the worlds with `dlock trigger`, by a window made
    // done twice with no trigger to let it.
    let patch = (
        "  if kv[1] == 'trigger' then redis.call('HDEL', key_done, 'trigger_ms', 'trigger_by', 'trigger_reason') end\n",
        "",
    );
    hunt_in("a trigger never taken", None, Some(patch), false, |sc| {
        !sc.triggers.is_empty()
    });
}

#[test]
fn a_trigger_not_read() {
    // Issue 66: an acquire that does not read the trigger answers a done window not due
    // while the operator's trigger waits: found by the not-due answer's check.
    let patch = (
        "  if last >= window and not trigger",
        "  if last >= window and (trigger or true)",
    );
    hunt_in("a trigger not read", None, Some(patch), false, |sc| {
        !sc.triggers.is_empty()
    });
}

#[test]
fn a_drain_not_read() {
    // Issue 66: an acquire that does not read the host's drain starts runs on a host the
    // operator drained: found in the worlds that drain a host.
    let patch = ("if drained and drained ~= '' then", "if false then");
    hunt_in(
        "a drain not read by the acquire",
        None,
        Some(patch),
        false,
        |sc| sc.drain.is_some(),
    );
}

#[test]
fn a_wait_on_a_new_connection() {
    // Issue 61 (the soak's seed 1301470): a failover closes the session's connection while a
    // grant's reply is on its way; the waker's stop fails on it, and a WAIT that reconnected
    // would confirm none of the lock's writes: the job starts on a lock the promoted replica
    // never had. Over the --min-replicas failover worlds with wake-ups, each given a failover
    // every 50 ms (after a grant, while its reply is out, is a narrow window).
    let bug = Some(Bug::WaitOnANewConnection);
    hunt_worlds("a WAIT on a new connection", bug, None, |seed| {
        let mut sc = Scenario::draw(seed, true);
        if sc.failovers.is_empty() || sc.min_replicas.is_none() || !sc.notify {
            return None;
        }
        let lag = sc.failovers[0].1;
        sc.failovers = (1..=100).map(|i| (i * 50_000, lag)).collect();
        Some(sc)
    });
}
