//! One way to talk to Redis for `run`: a `Session` owns the target, the connect and I/O
//! timeouts and the connection. A call connects when there is no connection, bounds itself by
//! the timeouts (and by a deadline when one is given), and on failure drops the connection, so
//! the next call reconnects; the failure comes back classified (`Failure`): whether retrying
//! can help, and whether the command may have run before its reply was lost. The lock
//! protocol's calls (acquire, renew, release, record, wake) go through `call` (a retry is the
//! caller's machine's to decide: `core::finish`); waiting for replicas and listening for
//! wake-ups have their own methods.

use std::time::{Duration, Instant};

use redis::{RedisError, Value};

use crate::core::cancel::Listened;
use crate::core::pause::{Pause, Scope};
use crate::core::{Broke, Failure};

use super::conn::Server;
use super::conn::{Conn, Watched};
use super::fault::Fault;
use super::keys::Keys;
use super::script::{self, Call};
use super::state::KeyStatus;

pub struct Session {
    server: Server,
    conn: Option<Conn>,
}

impl Session {
    /// Not connected yet: the first call connects.
    pub fn new(server: &Server) -> Session {
        Session {
            server: server.clone(),
            conn: None,
        }
    }

    /// Connected (as far as we know)?
    pub fn is_connected(&self) -> bool {
        self.conn.is_some()
    }

    /// Run one script call within the session's timeouts.
    pub fn call<C: Call>(&mut self, c: &C) -> Result<C::Reply, Failure> {
        self.call_within(c, None)
    }

    /// Run one script call that must be answered by `deadline` (None: the I/O timeout alone).
    pub fn call_within<C: Call>(
        &mut self,
        c: &C,
        deadline: Option<Instant>,
    ) -> Result<C::Reply, Failure> {
        let io = self.bound(self.server.io_timeout, deadline);
        self.with(io, deadline, |conn| script::call(conn, c))
    }

    /// `WAIT n timeout`: how many replicas acknowledged our writes (--min-replicas), on the
    /// connection that made them (`wait_on_the_writers_connection`).
    pub fn wait_replicas(&mut self, replicas: u32, timeout: Duration) -> Result<i64, Failure> {
        // The server answers after `timeout` at the latest; the read waits that plus the bound.
        // The next call sets its own bound again.
        self.wait(replicas, timeout, None)
    }

    /// `wait_replicas` for a renewal: its reply by `deadline` (the renewal machine bounds the
    /// `timeout` by the lease).
    pub fn wait_replicas_within(
        &mut self,
        replicas: u32,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<i64, Failure> {
        self.wait(replicas, timeout, Some(deadline))
    }

    /// WAIT counts the replicas that have the writes made on its own connection. One the
    /// session would open for it has made none, and its WAIT answers at once with every
    /// replica: a confirmation of nothing. So a WAIT never connects; when the connection that
    /// wrote is gone (a call since failed on it), it fails unsent. (The soak's seed 1301470: a
    /// failover closed the connection after the grant, the waker's stop failed on it, and the
    /// WAIT on a new connection confirmed a lock the promoted replica never had.)
    fn wait(
        &mut self,
        replicas: u32,
        timeout: Duration,
        deadline: Option<Instant>,
    ) -> Result<i64, Failure> {
        if self.conn.is_none() && !wait_may_connect() {
            return Err(wait_unsent());
        }
        let mut wait = redis::cmd("WAIT");
        wait.arg(replicas).arg(timeout.as_millis().to_string());
        let io = timeout + self.server.io_timeout;
        self.with(io, deadline, |conn| conn.query::<i64>(&wait))
    }

    /// `BLPOP lists… ` blocking until `until` (whole seconds, rounded up: Redis before 6.0 takes
    /// no fractions): the list an item came from, or None when nothing came.
    pub fn listen(&mut self, lists: &[&str], until: Instant) -> Result<Option<String>, Failure> {
        let block = until.saturating_duration_since(Instant::now()).as_secs() + 1;
        let mut blpop = redis::cmd("BLPOP");
        blpop.arg(lists).arg(block);
        let io = Duration::from_secs(block) + self.server.io_timeout;
        let got = self.with(io, None, |conn| {
            conn.query::<Option<(String, String)>>(&blpop)
        })?;
        Ok(got.map(|(list, _)| list))
    }

    /// Under Redis Cluster, what an acquire reads before its script: the prefix-wide pause
    /// (`fleet`'s record) and `host`'s entry in the drain record (None: not drained).
    pub fn fleet_read(
        &mut self,
        fleet: &Keys,
        drain: &str,
        host: &str,
    ) -> Result<(Option<Pause>, Option<String>), Failure> {
        let pause = self.with(self.server.io_timeout, None, |conn| {
            super::pause::read_record(conn, fleet, Scope::All)
        })?;
        let mut hget = redis::cmd("HGET");
        hget.arg(drain).arg(host);
        let entry = self.with(self.server.io_timeout, None, |conn| {
            conn.query::<Option<String>>(&hget)
        })?;
        Ok((pause, entry))
    }

    /// `GET key`: a lock's token (None: not held), for `run --on-busy replace`.
    pub fn get(&mut self, key: &str) -> Result<Option<String>, Failure> {
        let mut get = redis::cmd("GET");
        get.arg(key);
        self.with(self.server.io_timeout, None, |conn| {
            conn.query::<Option<String>>(&get)
        })
    }

    /// `BLPOP lists… block`: the item taken from the first of `lists` that has one, or nothing
    /// within `block` (whole seconds, at least one: Redis before 6.0 takes no fractions).
    /// Under Redis Cluster every list must be in one hash slot. A reply of a shape BLPOP never
    /// has is `Listened::NotProtocol`, never an item.
    pub fn take(&mut self, lists: &[&str], block: Duration) -> Result<Listened, Failure> {
        let secs = block.as_secs().max(1);
        let mut blpop = redis::cmd("BLPOP");
        blpop.arg(lists).arg(secs);
        let io = Duration::from_secs(secs) + self.server.io_timeout;
        let got = self.with(io, None, |conn| conn.query::<Value>(&blpop))?;
        Ok(listened(got, true))
    }

    /// `CLIENT SETNAME name`, connecting first if needed: what `CLIENT LIST` shows for this
    /// connection. Best effort: a server or ACL that refuses it leaves it unnamed.
    pub fn name(&mut self, name: &str) {
        let mut setname = redis::cmd("CLIENT");
        setname.arg("SETNAME").arg(name);
        let io = self.server.io_timeout;
        let _ = self.with(io, None, |conn| conn.query::<()>(&setname));
    }

    /// `LPOP list` on each of `lists` in turn: the first item taken, if any (where BLPOP is
    /// refused). A round trip per list until one answers an item, or a reply LPOP never gives.
    pub fn pop(&mut self, lists: &[&str]) -> Result<Listened, Failure> {
        for list in lists {
            let mut lpop = redis::cmd("LPOP");
            lpop.arg(*list);
            let got = self.with(self.server.io_timeout, None, |conn| {
                conn.query::<Value>(&lpop)
            })?;
            match listened(got, false) {
                Listened::Nothing => {}
                other => return Ok(other),
            }
        }
        Ok(Listened::Nothing)
    }

    /// The lock's state (token, TTL, holder, fence, stats) in one round trip.
    /// Err also when the key is not a lock (its reason).
    pub fn state(&mut self, keys: &Keys) -> Result<KeyStatus, Failure> {
        let found = self.with(self.server.io_timeout, None, |conn| {
            super::state::read(conn, keys)
        })?;
        match found {
            super::state::Found::Lock(s) => Ok(*s),
            super::state::Found::NotALock { why, .. } => Err(Failure {
                permanent: true,
                reason: why,
                sent: true,
                maybe_executed: false,
                refused: false,
            }),
        }
    }

    /// Behind Sentinel: has the master moved since we connected? Then the connection is
    /// dropped and the next call goes to the new master. A demoted master keeps accepting
    /// writes until Sentinel reconfigures it, so renewals ask before each try.
    pub fn follow_master(&mut self, deadline: Instant) -> bool {
        if !self.server.target.is_sentinel() {
            return false;
        }
        let (ct, io) = (
            self.bound(self.server.connect_timeout, Some(deadline)),
            self.bound(self.server.io_timeout, Some(deadline)),
        );
        let moved = self.conn.as_ref().is_some_and(|c| c.master_moved(ct, io));
        if moved {
            self.conn = None;
        }
        moved
    }

    /// The connection's socket, for the watchdog to poll for a hang-up (`Conn::socket`); a
    /// socket not known from its connect is looked up only when `look` (a lookup reads
    /// /proc/self/fd: not in a short job's first moments).
    pub fn socket(&mut self, look: bool) -> Watched {
        self.conn
            .as_mut()
            .map_or(Watched::Never, |c| c.socket(look))
    }

    /// Behind Sentinel (whose master can move between renewals).
    pub fn behind_sentinel(&self) -> bool {
        self.server.target.is_sentinel()
    }

    /// Connect if needed and run `f` with every command bounded by `io`; a failure drops the
    /// connection.
    fn with<T>(
        &mut self,
        io: Duration,
        deadline: Option<Instant>,
        f: impl FnOnce(&mut Conn) -> redis::RedisResult<T>,
    ) -> Result<T, Failure> {
        if self.conn.is_none() {
            let ct = self.bound(self.server.connect_timeout, deadline);
            match self.server.target.connect(ct, io) {
                Ok(c) => self.conn = Some(c),
                Err(e) => return Err(self.failure(&e, false)),
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            return Err(Failure {
                permanent: false,
                reason: "no connection".into(),
                sent: false,
                maybe_executed: false,
                refused: false,
            });
        };
        match conn.set_timeouts(io).and_then(|()| f(conn)) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.conn = None;
                Err(self.failure(&e, true))
            }
        }
    }

    fn bound(&self, d: Duration, deadline: Option<Instant>) -> Duration {
        match deadline {
            Some(t) => d.min(t.saturating_duration_since(Instant::now())),
            None => d,
        }
    }

    /// Classify `e`. A command that went out may have run unless the server refused it with an
    /// error code: one whose reply was lost to the network (an I/O error, a timeout, a dropped
    /// connection: none carries a server code) may have run, and so may one whose reply could
    /// not be read (a malformed reply, or one of the wrong type), since the server answered
    /// *something* after running it. A connection that never was means it did not run.
    fn failure(&self, e: &RedisError, sent: bool) -> Failure {
        classified(self.server.target.classify(e), e, sent)
    }
}

/// A call that failed with `e`, as the machines are told it: how it broke, and whether
/// retrying can help (`fault`, the target's classification).
fn classified(fault: Fault, e: &RedisError, sent: bool) -> Failure {
    let (permanent, reason) = match fault {
        Fault::Permanent(r) => (true, r),
        Fault::Transient(r) => (false, r),
    };
    Failure::new(broke(e, sent), permanent, reason)
}

/// Whether a WAIT may open a connection of its own (`Session::wait`): never, but with the bug
/// table's `WaitOnANewConnection` put back. The simulation's session follows the same rule.
pub fn wait_may_connect() -> bool {
    crate::core::bugs::on(crate::core::bugs::Bug::WaitOnANewConnection)
}

/// A WAIT with no connection that wrote (`Session::wait`): not sent, nothing ran.
pub fn wait_unsent() -> Failure {
    Failure {
        permanent: false,
        reason: "the connection that wrote it is gone, and a WAIT on a new one confirms none of \
                 its writes"
            .into(),
        sent: false,
        maybe_executed: false,
        refused: false,
    }
}

/// A call that failed with `e` on a single server (no Sentinel nor Cluster), as a session
/// tells the machines: the simulation's network and server faults go through it.
#[cfg(feature = "test-support")]
pub fn standalone_failure(e: &RedisError, sent: bool) -> Failure {
    classified(super::fault::classify(e), e, sent)
}

/// A listener's reply read strictly: BLPOP (`blocking`) answers a two-item array (the list, then
/// the item) or nil; LPOP a bulk string or nil. Anything else (a simple string such as +OK, an
/// integer, another shape) is not the protocol: its type is named, never its bytes.
pub fn listened(v: Value, blocking: bool) -> Listened {
    let item = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    };
    match v {
        Value::Nil => Listened::Nothing,
        Value::Array(a) if blocking && a.len() == 2 && item(&a[0]).is_some() => match item(&a[1]) {
            Some(i) => Listened::Item(i),
            None => Listened::NotProtocol("BLPOP answered an item of another type".into()),
        },
        Value::BulkString(_) if !blocking => item(&v).map_or(Listened::Nothing, Listened::Item),
        other => Listened::NotProtocol(format!(
            "{} answered {}, a reply it never gives",
            if blocking { "BLPOP" } else { "LPOP" },
            super::reply::kind(&other)
        )),
    }
}

/// Whether `e` says the server is down and says so at once: a connect refused (or a Unix
/// socket gone), or a connection the peer reset or closed (a proxy whose server is gone does
/// that to every new one). Not a timeout: a silent network.
/// How a call that failed with `e` broke (`sent`: the command went out).
fn broke(e: &RedisError, sent: bool) -> Broke {
    let gone = !e.is_timeout() && (e.is_connection_refusal() || e.is_connection_dropped());
    if !sent {
        Broke::Unsent { refused: gone }
    } else if e.code().is_some() {
        Broke::ErrorReply
    } else if gone {
        Broke::Dropped
    } else if e.is_timeout() || e.kind() == redis::ErrorKind::Io {
        Broke::TimedOut
    } else {
        Broke::Unreadable
    }
}

#[cfg(test)]
mod tests;
