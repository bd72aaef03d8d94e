//! The network between each host and the server: a request's way there (delayed, lost,
//! refused, reset, cut by a partition, held long in the slow-network experiment), the server
//! running it on arrival, and its answer's way back before the host's timeout, or not.

use redis::Value;

use super::{EPOCH_US, Event, World};
use crate::calls::Scripted;
use crate::check::Us;
use crate::host::Link;

/// What a host asks the server.
pub enum Request {
    /// One of dlock's scripts.
    Script(Scripted),
    /// `WAIT 1 timeout` (--min-replicas 1): how many replicas have the writes so far, once
    /// they do or after `timeout` µs.
    Wait { timeout: Us },
    /// `GET key` (`Session::get`: the token `run --on-busy replace` asks to stop).
    Get(String),
}

/// A request in flight.
pub struct Flight {
    pub host: usize,
    /// The request, until it reaches the server (or dies with its connection).
    pub call: Option<Request>,
    pub answer: Option<Result<Value, Fail>>,
    /// When the host stops waiting for the answer (true time): a reply later than this is
    /// lost to the timeout, as the session drops it.
    pub deadline: Us,
    /// When the server sent (or will send: a WAIT) its reply; until then a connection the
    /// server closes fails the request.
    pub replied_at: Us,
    /// On the session of the host's run this is (its failure drops the session's connection).
    pub session: Option<u64>,
    /// Its answer reached the host: nothing more comes of it.
    pub done: bool,
}

/// How a request failed, as the host's session sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fail {
    /// No answer within the timeout: the request may or may not have run, and the host
    /// cannot tell (the session says "maybe executed" for any timeout after sending).
    Timeout,
    /// Refused or reset at once (server down, connection reset) before the request reached
    /// the server.
    Refused,
    /// The connection closed after the request reached the server (a restart, a failover): it
    /// ran and its reply is lost; the session says "maybe executed", as for any error after
    /// sending (the soak's seed 1022396: a replace request placed, then taken for never sent).
    Reset,
    /// The call went out on a connection the server had closed since the host's last call
    /// (a restart, a failover): the read meets the end of the stream at once and the server
    /// never saw it, but the session cannot tell that from a reply lost after running ("maybe
    /// executed"); it reconnects for the next call.
    Closed,
    /// A reply that is not the protocol (the garbage server's: the command ran).
    Garbage,
    /// The server refused the command with an error reply (an ACL's NOPERM): it did not run.
    Denied,
    /// A WAIT on a session with no connection: never sent (`Session::wait`).
    Unconnected,
}

impl World {
    /// Whether `host`'s network is cut now.
    pub fn cut(&self, host: usize) -> bool {
        self.sc
            .partitions
            .iter()
            .any(|p| p.0 == host && p.1 <= self.now && self.now < p.2)
    }

    /// One message's way across the network. Bounded by the scenario's `delay_max`; in the
    /// slow-network experiment (`Scenario::slow`), one message in 20 is held anywhere up to
    /// three TTLs: past every timeout, and past the lease.
    pub fn delay(&mut self) -> Us {
        if self.sc.slow && self.rng.chance(0.05) {
            return self
                .rng
                .range(self.sc.delay_max, self.sc.ttl.as_micros() as Us * 3);
        }
        self.rng.range(50, self.sc.delay_max)
    }

    /// Send `call` from `host`; its answer (or failure) comes back as `Event::Answer` with the
    /// returned id, at the latest `timeout` µs from now.
    pub fn send(&mut self, host: usize, call: Scripted, timeout: Us) -> u64 {
        self.send_request(host, Request::Script(call), timeout)
    }

    /// Send `call` on host `host`'s session, the connection its tries, renewals, release and
    /// WAITs share (its waker's thread and its cancel listener have their own), as the
    /// binary's `Session` does (`Host::link`): with no connection, a call connects, but a WAIT
    /// fails unsent (`Session::wait`); on one the server has closed since its last call, it
    /// fails at once, `Fail::Closed`, and the next call reconnects.
    pub fn send_on_session(&mut self, host: usize, call: Request, timeout: Us) -> u64 {
        let run = Some(self.hosts[host].run);
        let link = self.hosts[host].link;
        if matches!(call, Request::Wait { .. })
            && link == Link::None
            && !dlock::api::sim::wait_may_connect()
        {
            let id = self.flight(host, None, timeout, run);
            self.check.counts.unsent_waits += 1;
            self.fail_now(id, Fail::Unconnected);
            return id;
        }
        self.hosts[host].link = Link::Open;
        let id = self.send_request(host, call, timeout);
        if let Some(Some(f)) = self.flights.get_mut(id as usize) {
            f.session = run;
        }
        if link == Link::Closed {
            self.hosts[host].hang_up_news = false;
            self.check.counts.closed_calls += 1;
            self.fail_now(id, Fail::Closed);
        }
        id
    }

    /// A script call on host `host`'s session (`send_on_session`).
    pub fn script_on_session(&mut self, host: usize, call: Scripted, timeout: Us) -> u64 {
        self.send_on_session(host, Request::Script(call), timeout)
    }

    /// A request's flight, not sent yet (`session`: the run whose session it is on).
    fn flight(
        &mut self,
        host: usize,
        call: Option<Request>,
        timeout: Us,
        session: Option<u64>,
    ) -> u64 {
        let id = self.flights.len() as u64;
        self.flights.push(Some(Flight {
            host,
            call,
            answer: None,
            deadline: self.now + timeout,
            replied_at: Us::MAX,
            session,
            done: false,
        }));
        id
    }

    pub fn send_request(&mut self, host: usize, call: Request, timeout: Us) -> u64 {
        let id = self.flight(host, Some(call), timeout, None);
        let d = self.delay();
        if self.cut(host) {
            // Nothing gets through, not even a refusal.
            self.finish(host, id, Err(Fail::Timeout), timeout);
        } else if !self.up || self.rng.chance(self.sc.reset) {
            // The refusal's round trip, unless it comes after the read's timeout (a slow
            // network's): the session times out first.
            match 2 * d {
                back if back < timeout => self.finish(host, id, Err(Fail::Refused), back),
                _ => self.finish(host, id, Err(Fail::Timeout), timeout),
            }
        } else if self.rng.chance(self.sc.loss) {
            self.finish(host, id, Err(Fail::Timeout), timeout);
        } else {
            // It arrives, even after the host has given up on it (a slow network delivers
            // late, it does not drop): a reply in time comes before the timeout's answer.
            self.at(
                self.now + d,
                Event::Arrive {
                    host,
                    id,
                    call_at: self.now as usize,
                },
            );
            self.finish(host, id, Err(Fail::Timeout), timeout);
        }
        id
    }

    fn finish(&mut self, host: usize, id: u64, answer: Result<Value, Fail>, after: Us) {
        if let Some(Some(f)) = self.flights.get_mut(id as usize)
            && f.answer.is_none()
        {
            f.answer = Some(answer);
        }
        self.at(self.now + after, Event::Answer { host, id });
    }

    pub(super) fn arrive(&mut self, host: usize, id: u64, call_at: usize) {
        if !self.up {
            return;
        }
        // Gone with a connection the server closed, or already answered and forgotten.
        let Some(flight) = self.flights.get_mut(id as usize).and_then(Option::as_mut) else {
            return;
        };
        let Some(call) = flight.call.take() else {
            return;
        };
        if self.now >= flight.deadline {
            self.check.counts.late_arrivals += 1;
        }
        let call = match call {
            Request::Script(call) => call,
            Request::Wait { timeout } => return self.wait_arrived(host, id, timeout),
            Request::Get(key) => return self.get_arrived(host, id, &key),
        };
        let before = crate::liveness::key_state(self);
        let holder = self.server.ks.borrow().holder(&self.keys.lock);
        let answer = call.run(&mut self.server);
        self.check.counts.script_calls += 1;
        if let Some(r) = &mut self.recorded {
            r.push(call.clone());
        }
        let released = call.name.starts_with("ReleaseCall");
        // A waiter that left handing its wake-up back (sent at `call_at`).
        let handed_back = (call.name.starts_with("WakeCall")
            && call.keys.first() == Some(&self.keys.wake))
        .then_some(call_at as Us);
        crate::liveness::after_script(self, before, EPOCH_US / 1000, released, handed_back);
        crate::host::served(self, host, &call, &answer, holder);
        if call.name.starts_with("AcquireCall") {
            let granted =
                matches!(&answer, Ok(Value::Array(v)) if v.first() == Some(&Value::Int(1)));
            crate::wakeups::tried(self, &call.argv[0], granted);
        }
        crate::also::after_script(self, host, &call, &answer);
        crate::fences::after_script(self, host, &call, &answer);
        self.after_write();
        let d = self.delay();
        let lost = self.cut(host) || self.rng.chance(self.sc.loss);
        let garbage = self.garbage();
        if let Some(Some(f)) = self.flights.get_mut(id as usize) {
            f.replied_at = self.now;
            // A reply later than the host's timeout is dropped by its session.
            let late = self.now + d >= f.deadline;
            match answer {
                Ok(_) if !lost && !late && garbage => {
                    f.answer = Some(Err(Fail::Garbage));
                    self.at(self.now + d, Event::Answer { host, id });
                }
                Ok(v) if !lost && !late => {
                    f.answer = Some(Ok(v));
                    self.at(self.now + d, Event::Answer { host, id });
                }
                Ok(_) => {}
                Err(e) => panic!("seed {}: a script failed: {e}\n{call:?}", self.sc.seed),
            }
        }
    }

    /// GET reached the server: the key's string value (nil: none), on its way back.
    fn get_arrived(&mut self, host: usize, id: u64, key: &str) {
        let value = self.server.ks.borrow().holder(key);
        let d = self.delay();
        let lost = self.cut(host) || self.rng.chance(self.sc.loss);
        let garbage = self.garbage();
        if let Some(Some(f)) = self.flights.get_mut(id as usize) {
            f.replied_at = self.now;
            if !lost && self.now + d < f.deadline {
                f.answer = Some(if garbage {
                    Err(Fail::Garbage)
                } else {
                    Ok(value.map_or(Value::Nil, |v| Value::BulkString(v.into_bytes())))
                });
                self.at(self.now + d, Event::Answer { host, id });
            }
        }
    }

    /// WAIT reached the server: the replica, `lag` behind, has every write so far `lag` from
    /// now; WAIT answers 1 then, or 0 at its timeout if that comes first (no replica: 0).
    fn wait_arrived(&mut self, host: usize, id: u64, timeout: Us) {
        let (acked, after) = match self.replica_lag() {
            Some(lag) if lag <= timeout => (1, lag),
            _ => (0, timeout),
        };
        let d = self.delay();
        let lost = self.cut(host) || self.rng.chance(self.sc.loss);
        let garbage = self.garbage();
        let (now, replied) = (self.now, self.now + after);
        if let Some(Some(f)) = self.flights.get_mut(id as usize) {
            f.replied_at = replied;
            if !lost && replied + d < f.deadline {
                f.answer = Some(if garbage {
                    Err(Fail::Garbage)
                } else {
                    Ok(Value::Int(acked))
                });
                self.at(replied + d, Event::Answer { host, id });
            }
        }
        self.check.ev(now, usize::MAX, "wait", acked);
    }

    /// Every request out on a connection the server closes fails now, and one still on its
    /// way never reaches a server (its connection is gone).
    pub(super) fn reset_all(&mut self) {
        for id in 0..self.flights.len() {
            // A request the server already took ran: its failure is a reset, not a refusal.
            let mut ran = false;
            if let Some(f) = &mut self.flights[id] {
                ran = f.call.take().is_none();
            }
            let host = match &self.flights[id] {
                Some(f) if !matches!(f.answer, Some(Ok(_))) || f.replied_at > self.now => f.host,
                _ => continue,
            };
            let d = self.delay();
            let Some(Some(f)) = self.flights.get_mut(id) else {
                continue;
            };
            // One whose answer the host has: nothing more reaches it (and a failure now would
            // drop a connection its session no longer uses: `take_answer`).
            if f.done {
                continue;
            }
            f.answer = Some(Err(if ran { Fail::Reset } else { Fail::Refused }));
            self.at(
                self.now + d,
                Event::Answer {
                    host,
                    id: id as u64,
                },
            );
        }
    }

    /// Request `id` fails at once (its connection is gone): it never reaches the server.
    pub fn fail_now(&mut self, id: u64, f: Fail) {
        let Some(Some(flight)) = self.flights.get_mut(id as usize) else {
            return;
        };
        flight.call = None;
        flight.answer = Some(Err(f));
        let host = flight.host;
        self.at(self.now, Event::Answer { host, id });
    }

    /// The answer of request `id`, once (None: already taken, or still out).
    pub fn take_answer(&mut self, id: u64) -> Option<Result<Value, Fail>> {
        let f = self.flights.get_mut(id as usize)?.as_mut()?;
        let answer = f.answer.take();
        f.done |= answer.is_some();
        // A failure on the session drops its connection, as the binary's does, and with it
        // any hang-up of it not yet told (the binary's watch polls the connection it has).
        if matches!(answer, Some(Err(_))) && f.session == Some(self.hosts[f.host].run) {
            let host = &mut self.hosts[f.host];
            (host.link, host.hang_up_news) = (Link::None, false);
        }
        answer
    }
}
