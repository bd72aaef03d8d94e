//! Talking to Redis: connecting with bounded timeouts (through Sentinel or a Cluster seed when
//! the target says so) and following Cluster redirects.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use redis::{
    ConnectionAddr, ConnectionInfo, ErrorKind, FromRedisValue, IntoConnectionInfo, RedisError,
    RedisResult, ServerErrorKind, Value,
};

use super::fault::{Fault, classify, not_tls};
use super::target::{Mode, Target, host_port};
use crate::error::Error;
use crate::sys::sock::{self, Peer, Socket};

mod sentinel;

/// A connection's socket as far as the watchdog can poll it (`Conn::socket`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
    Socket(Socket),
    /// Not told apart from another connection to the same server yet: look again soon.
    NotYet,
    /// Not watched.
    Never,
}

/// A server and the bounds on reaching it: what every command connects with.
#[derive(Debug, Clone)]
pub struct Server {
    pub target: Target,
    /// Bounds connecting and the handshake.
    pub connect_timeout: Duration,
    /// Bounds every command.
    pub io_timeout: Duration,
}

impl Server {
    /// One connection to the primary.
    pub fn connect(&self) -> RedisResult<Conn> {
        self.target.connect(self.connect_timeout, self.io_timeout)
    }

    /// Every master of a cluster, or the one server otherwise.
    pub fn masters(&self) -> RedisResult<Vec<Conn>> {
        self.target.masters(self.connect_timeout, self.io_timeout)
    }

    /// Why the server could not be used, as the one line (with the fix) that says it.
    pub fn unavailable(&self, e: &RedisError) -> Error {
        Error::Unavailable {
            target: self.target.to_string(),
            reason: self.target.classify(e).reason().to_string(),
        }
    }
}

impl Target {
    /// One node, with this target's credentials and TLS settings.
    fn open(
        &self,
        addr: ConnectionAddr,
        ct: Duration,
        io: Duration,
    ) -> RedisResult<redis::Connection> {
        let tls_addr = match &addr {
            ConnectionAddr::TcpTls { host, port, .. } => Some(format!("{host}:{port}")),
            _ => None,
        };
        let info: ConnectionInfo = addr
            .into_connection_info()?
            .set_redis_settings(self.redis.clone());
        let client = match &self.tls {
            Some((_, certs)) => {
                // rustls needs one process-wide crypto provider; a second install is a no-op.
                let _ = rustls::crypto::ring::default_provider().install_default();
                redis::Client::build_with_tls(info, certs.clone())?
            }
            None => redis::Client::open(info)?,
        };
        let mut conn = client.get_connection_with_timeout(nonzero(ct))?;
        if let Some(addr) = tls_addr {
            // redis-rs leaves the TLS handshake to the first command, where a port that does not
            // speak TLS held it for the whole I/O timeout, and a server that refused the session
            // (no client certificate) looked as if the command might have run. A PING here
            // settles the session within the connect timeout: any reply proves it, an error
            // reply too (a user without +ping, no password yet: the next command says so).
            set_raw_timeouts(&conn, ct)?;
            match redis::cmd("PING").query::<Value>(&mut conn) {
                Err(e) if e.code().is_none() => return Err(not_tls(e, &addr)),
                _ => {}
            }
        }
        set_raw_timeouts(&conn, io)?;
        Ok(conn)
    }

    fn tcp(&self, host: &str, port: u16) -> ConnectionAddr {
        match &self.tls {
            Some((insecure, _)) => ConnectionAddr::TcpTls {
                host: host.to_string(),
                port,
                insecure: *insecure,
                tls_params: None,
            },
            None => ConnectionAddr::Tcp(host.to_string(), port),
        }
    }

    /// Open a connection to the primary; `ct` bounds connect and handshake, `io` every command.
    /// A direct connection's socket is known from here on (`Conn::socket`): its descriptor is
    /// the one free when the connect began, which the holder watches for a hang-up from the
    /// acquire's reply on (issue 62: a restart in the job's first moments).
    pub fn connect(&self, ct: Duration, io: Duration) -> RedisResult<Conn> {
        // Another connect of this process at the same time (the waker's, the listener's, the
        // watchdog's reconnect) could take that descriptor: the prediction holds only for a
        // connect that overlapped no other (never blocked on: a renewal's connect must not wait
        // behind another's timeout). Else the lookups find the socket later.
        let alone = CONNECTING.fetch_add(1, Ordering::SeqCst) == 0;
        let next = match self.mode {
            Mode::Direct(_) if alone => sock::next_fd(),
            _ => None,
        };
        let opened = self.open_primary(ct, io);
        let alone = CONNECTING.fetch_sub(1, Ordering::SeqCst) == 1 && alone;
        let (c, node) = opened?;
        let next = next.filter(|_| alone);
        let peer = match (&self.mode, &node) {
            (Mode::Direct(ConnectionAddr::Tcp(_, port)), _)
            | (Mode::Direct(ConnectionAddr::TcpTls { port, .. }), _) => Some(Peer::Tcp(*port)),
            (Mode::Direct(ConnectionAddr::Unix(path)), _) => Some(Peer::Unix(path.clone())),
            (Mode::Sentinel { .. }, Some((_, port))) => Some(Peer::Tcp(*port)),
            // A cluster's connection moves between nodes with the slots: not watched.
            _ => None,
        };
        // Checked, not assumed: a descriptor another thread opened (a ping's socket, a file)
        // is not connected to this peer, and the lookups take over.
        let socket = next
            .zip(peer.as_ref())
            .and_then(|(fd, p)| sock::is_connected_to(fd, p));
        Ok(Conn {
            c,
            target: self.clone(),
            ct,
            io,
            node,
            watch: Watch {
                peer,
                socket,
                looks: 0,
            },
        })
    }

    /// The connection to the primary, and the master's address when found through Sentinel.
    fn open_primary(
        &self,
        ct: Duration,
        io: Duration,
    ) -> RedisResult<(redis::Connection, Option<(String, u16)>)> {
        Ok(match &self.mode {
            // --tls-insecure applies to the URL's own address too.
            Mode::Direct(ConnectionAddr::TcpTls { host, port, .. }) => {
                (self.open(self.tcp(host, *port), ct, io)?, None)
            }
            Mode::Direct(addr) => (self.open(addr.clone(), ct, io)?, None),
            Mode::Sentinel { sentinels, service } => {
                let (master, c) = self.via_sentinel(sentinels, service, ct, io)?;
                (c, Some(master))
            }
            Mode::Cluster { seeds } => (self.first_reachable(seeds, ct, io)?, None),
        })
    }

    fn first_reachable(
        &self,
        nodes: &[(String, u16)],
        ct: Duration,
        io: Duration,
    ) -> RedisResult<redis::Connection> {
        let mut last = None;
        for (h, p) in nodes {
            match self.open(self.tcp(h, *p), ct, io) {
                Ok(c) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| RedisError::from((ErrorKind::Io, "no nodes to connect to"))))
    }

    /// Every master of a cluster (for `status`' SCAN), or the one server otherwise.
    pub fn masters(&self, ct: Duration, io: Duration) -> RedisResult<Vec<Conn>> {
        let Mode::Cluster { seeds } = &self.mode else {
            return Ok(vec![self.connect(ct, io)?]);
        };
        let mut seed = self.first_reachable(seeds, ct, io)?;
        let slots: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER").arg("SLOTS").query(&mut seed)?;
        let mut nodes: Vec<(String, u16)> = Vec::new();
        for range in &slots {
            let Some(redis::Value::Array(master)) = range.get(2) else {
                continue;
            };
            let host: String = master
                .first()
                .and_then(|v| String::from_redis_value_ref(v).ok())
                .unwrap_or_default();
            let port: u16 = master
                .get(1)
                .and_then(|v| u16::from_redis_value_ref(v).ok())
                .unwrap_or(0);
            let host = if host.is_empty() || host == "?" {
                seeds[0].0.clone()
            } else {
                host
            };
            if port != 0 && !nodes.contains(&(host.clone(), port)) {
                nodes.push((host, port));
            }
        }
        nodes
            .iter()
            .map(|(h, p)| {
                Ok(Conn {
                    c: self.open(self.tcp(h, *p), ct, io)?,
                    target: self.clone(),
                    ct,
                    io,
                    node: Some((h.clone(), *p)),
                    watch: Watch::none(),
                })
            })
            .collect()
    }

    pub fn classify(&self, e: &RedisError) -> Fault {
        let fault = classify(e);
        // Behind Sentinel or Cluster a read-only node or a redirect means a failover is under way:
        // reconnecting asks for the new primary.
        if self.is_sentinel_or_cluster() && matches!(e.code(), Some("READONLY" | "MOVED" | "ASK")) {
            return Fault::Transient(fault.reason().to_string());
        }
        fault
    }
}

/// A connection to the node that serves the lock, following Redis Cluster redirects.
pub struct Conn {
    c: redis::Connection,
    target: Target,
    ct: Duration,
    io: Duration,
    /// The master this connection reached through Sentinel, or the cluster master `masters`
    /// opened it to.
    node: Option<(String, u16)>,
    watch: Watch,
}

/// Finding this connection's socket, for the watchdog to notice a hang-up (`Conn::socket`).
struct Watch {
    /// Where the socket goes (None: not watched).
    peer: Option<Peer>,
    socket: Option<Socket>,
    /// Lookups so far; the socket is not told apart while another connection of this process
    /// goes to the same server (the waker's, which ends right after the acquire).
    looks: u32,
}

/// Lookups of one connection's socket before giving up on watching it.
const MAX_LOOKS: u32 = 20;

impl Watch {
    fn none() -> Watch {
        Watch {
            peer: None,
            socket: None,
            looks: 0,
        }
    }
}

/// Connects under way in this process (`Target::connect`): one alone can predict its socket's
/// descriptor.
static CONNECTING: AtomicU32 = AtomicU32::new(0);

/// Redirects followed for one command before giving up (a slot moving twice mid-command is
/// already exotic).
const MAX_REDIRECTS: u32 = 3;

impl Conn {
    /// The node this connection reached, as `host:port`: a master found through Sentinel, or
    /// one of a cluster's masters (`masters`); None for a server reached directly.
    pub fn node(&self) -> Option<String> {
        self.node.as_ref().map(|(h, p)| format!("{h}:{p}"))
    }

    /// Behind Sentinel: has the master moved since this connection was made? A demoted master
    /// keeps accepting writes until Sentinel reconfigures it (seen: 10 s after the switch), so
    /// the watchdog asks before each renewal instead of waiting for READONLY.
    pub fn master_moved(&self, ct: Duration, io: Duration) -> bool {
        match (&self.node, self.target.sentinel_master(ct, io)) {
            (Some(mine), Some(now)) => *mine != now,
            _ => false,
        }
    }

    /// This connection's socket, to poll for a hang-up; None while it cannot be told apart
    /// from another connection to the same server (`pending` then says whether to look again
    /// later), or never (a cluster's connection, or MAX_LOOKS lookups in vain).
    pub fn socket(&mut self, look: bool) -> Watched {
        let w = &mut self.watch;
        if let Some(s) = w.socket {
            return Watched::Socket(s);
        }
        let Some(peer) = &w.peer else {
            return Watched::Never;
        };
        if w.looks >= MAX_LOOKS {
            return Watched::Never;
        }
        if !look {
            return Watched::NotYet;
        }
        w.looks += 1;
        w.socket = sock::connected_to(peer);
        match w.socket {
            Some(s) => Watched::Socket(s),
            None => Watched::NotYet,
        }
    }

    /// Connected to a Redis Cluster (keys live on several nodes).
    pub fn is_cluster(&self) -> bool {
        self.target.is_cluster()
    }

    /// Bound every following command by `io` (two system calls, saved when the bound is the
    /// one already set: the common case, each call of a run bounded by --io-timeout alone).
    pub fn set_timeouts(&mut self, io: Duration) -> RedisResult<()> {
        if io == self.io {
            return Ok(());
        }
        self.io = io;
        set_raw_timeouts(&self.c, io)
    }

    pub fn query<T: FromRedisValue>(&mut self, cmd: &redis::Cmd) -> RedisResult<T> {
        self.follow(|c| cmd.query(c))
    }

    /// A pipeline about `key`'s slot: each command's reply, a server error among them kept as
    /// that command's error. Pipeline errors do not say where a slot moved, so in a cluster one
    /// single-key command goes first to land on the right node.
    ///
    /// The first reply that does not come in time, or cannot be read, ends the pipeline with
    /// its error. (redis-rs's own pipeline reads on after such a failure, waiting the I/O
    /// timeout once per command still due: a server gone silent held `status` for the timeout
    /// times the number of commands, minutes for a few hundred locks.)
    pub fn query_pipe(
        &mut self,
        key: &str,
        p: &redis::Pipeline,
    ) -> RedisResult<Vec<RedisResult<Value>>> {
        if matches!(self.target.mode, Mode::Cluster { .. }) {
            self.query::<i64>(redis::cmd("EXISTS").arg(key))?;
        }
        let packed = p.get_packed_pipeline();
        self.follow(|c| {
            c.send_packed_command(&packed)?;
            (0..p.len())
                .map(|_| c.recv_response().map(Value::extract_error))
                .collect()
        })
    }

    /// Send commands already packed (`redis::Cmd::write_packed_command`, one after another)
    /// without reading their replies: `recv_pipe` reads them, in order, after those of anything
    /// sent before. For one server, not a cluster (no redirects followed).
    pub fn send_packed(&mut self, packed: &[u8]) -> RedisResult<()> {
        self.c.send_packed_command(packed)
    }

    /// The next `n` replies (of commands sent with `send_packed`), as `query_pipe` returns them.
    pub fn recv_pipe(&mut self, n: usize) -> RedisResult<Vec<RedisResult<Value>>> {
        (0..n)
            .map(|_| self.c.recv_response().map(Value::extract_error))
            .collect()
    }

    fn follow<T>(
        &mut self,
        f: impl Fn(&mut redis::Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let mut hops = 0;
        loop {
            let err = match f(&mut self.c) {
                Err(e) if hops < MAX_REDIRECTS && e.redirect_node().is_some() => e,
                other => return other,
            };
            hops += 1;
            let Some((addr, _slot)) = err.redirect_node() else {
                return Err(err);
            };
            let Some((host, port)) = host_port(addr, 6379) else {
                return Err(err);
            };
            let node = self
                .target
                .open(self.target.tcp(&host, port), self.ct, self.io)?;
            if err.kind() == ErrorKind::Server(ServerErrorKind::Ask) {
                // The slot is migrating: ask the target node once, keep our connection.
                let mut node = node;
                redis::cmd("ASKING").query::<()>(&mut node)?;
                return f(&mut node);
            }
            // MOVED: the slot lives there now; stay (and stop watching the old socket).
            self.c = node;
            self.watch = Watch::none();
        }
    }
}

/// Zero is "block forever" to the socket layer; never hand it a zero.
pub fn nonzero(d: Duration) -> Duration {
    d.max(Duration::from_millis(1))
}

fn set_raw_timeouts(conn: &redis::Connection, d: Duration) -> RedisResult<()> {
    conn.set_read_timeout(Some(nonzero(d)))?;
    conn.set_write_timeout(Some(nonzero(d)))
}
