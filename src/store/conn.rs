//! Where Redis is and how to talk to it: URL parsing (standalone, TLS, Unix socket, Sentinel,
//! Cluster) with the password kept out of every message; connecting with bounded timeouts;
//! following Cluster redirects; and sorting failures into "try again" and "tell the operator".

use std::fmt;
use std::time::Duration;

use redis::{
    ConnectionAddr, ConnectionInfo, ErrorKind, FromRedisValue, IntoConnectionInfo,
    RedisConnectionInfo, RedisError, RedisResult, ServerErrorKind, TlsCertificates,
};

/// TLS material from --tls-ca, --tls-cert/--tls-key and --tls-insecure.
#[derive(Clone, Default)]
pub struct TlsFiles {
    pub ca: Option<Vec<u8>>,
    /// (certificate, key), both PEM.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
    pub insecure: bool,
}

#[derive(Clone)]
enum Mode {
    /// One server (TCP, TLS or Unix socket).
    Direct(ConnectionAddr),
    /// Ask these sentinels for the master of `service` on every (re)connect.
    Sentinel {
        sentinels: Vec<(String, u16)>,
        service: String,
    },
    /// Start at a seed node; MOVED/ASK lead to the node that owns the lock's slot.
    Cluster { seeds: Vec<(String, u16)> },
}

/// A Redis endpoint plus credentials. `Debug` and `Display` never show the password.
#[derive(Clone)]
pub struct Target {
    mode: Mode,
    redis: RedisConnectionInfo,
    tls: Option<(bool, TlsCertificates)>,
    display: String,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

const URL_FORMS: &str = "redis[s]://[user:pass@]host[:port][/db], redis+unix:///path/to/sock[?db=N], \
redis[s]+sentinel://[user:pass@]host:port[,host:port...]/SERVICE[/db] or \
redis[s]+cluster://[user:pass@]host:port[,host:port...]";

impl Target {
    /// Parse `--url`. Password precedence: `--password-file`, then the URL, then REDISCLI_AUTH.
    pub fn parse(
        url: &str,
        file_password: Option<String>,
        env_password: Option<String>,
        tls: TlsFiles,
    ) -> Result<Target, String> {
        let url = url.trim();
        let redacted = redact(url);
        let bad = |why: &str| format!("--url {redacted}: {why}; expected {URL_FORMS}");
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(bad("missing scheme"));
        };
        let scheme = scheme.to_ascii_lowercase();
        let (mode, mut redis, is_tls, display) = match scheme.as_str() {
            "redis" | "valkey" | "rediss" | "valkeys" | "redis+unix" | "unix" | "valkey+unix" => {
                let Some(parsed) = redis::parse_redis_url(url) else {
                    return Err(bad("not a valid URL"));
                };
                let has_host = parsed.host_str().is_some_and(|h| !h.is_empty());
                if !parsed.scheme().ends_with("unix") && !has_host {
                    return Err(bad("missing host"));
                }
                let info = url
                    .into_connection_info()
                    .map_err(|e| bad(e.detail().unwrap_or(e.category())))?;
                let addr = info.addr().clone();
                let (is_tls, display) = match &addr {
                    ConnectionAddr::Unix(p) => (false, format!("unix:{}", p.display())),
                    ConnectionAddr::TcpTls { host, port, .. } => {
                        (true, format!("{host}:{port} (TLS)"))
                    }
                    other => (false, other.to_string()),
                };
                (
                    Mode::Direct(addr),
                    info.redis_settings().clone(),
                    is_tls,
                    display,
                )
            }
            "redis+sentinel" | "rediss+sentinel" | "redis+cluster" | "rediss+cluster" => {
                let (auth, hosts, path) = split_multi(rest);
                let sentinel = scheme.ends_with("sentinel");
                let default_port = if sentinel { 26379 } else { 6379 };
                let nodes = hosts
                    .split(',')
                    .map(|h| host_port(h, default_port))
                    .collect::<Option<Vec<_>>>()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| bad("bad host list"))?;
                let mut segs = path.split('/').filter(|s| !s.is_empty());
                let mut redis = RedisConnectionInfo::default();
                let mode = if sentinel {
                    let service = segs
                        .next()
                        .ok_or_else(|| bad("missing the sentinel SERVICE name after the hosts"))?;
                    Mode::Sentinel {
                        sentinels: nodes.clone(),
                        service: percent_decode(service),
                    }
                } else {
                    Mode::Cluster {
                        seeds: nodes.clone(),
                    }
                };
                if let Some(db) = segs.next() {
                    let db: i64 = db
                        .parse()
                        .map_err(|_| bad("the database must be a number"))?;
                    if !sentinel && db != 0 {
                        return Err(bad("Redis Cluster has only database 0"));
                    }
                    redis = redis.set_db(db);
                }
                if let Some(auth) = auth {
                    let (user, pass) = auth.split_once(':').unwrap_or((auth, ""));
                    if !user.is_empty() {
                        redis = redis.set_username(percent_decode(user));
                    }
                    if !pass.is_empty() {
                        redis = redis.set_password(percent_decode(pass));
                    }
                }
                let list = nodes
                    .iter()
                    .map(|(h, p)| format!("{h}:{p}"))
                    .collect::<Vec<_>>()
                    .join(",");
                let display = match &mode {
                    Mode::Sentinel { service, .. } => format!("sentinel {list} service {service}"),
                    _ => format!("cluster {list}"),
                };
                (mode, redis, scheme.starts_with("rediss"), display)
            }
            s => return Err(bad(&format!("unknown scheme {s}://"))),
        };
        if !is_tls && (tls.ca.is_some() || tls.client.is_some() || tls.insecure) {
            return Err(format!(
                "--tls-ca, --tls-cert, --tls-key and --tls-insecure need a TLS URL (rediss://…); --url is {redacted}"
            ));
        }
        redis = redis.set_skip_set_lib_name();
        if let Some(pw) = file_password
            .or_else(|| redis.password().map(str::to_string))
            .or(env_password)
        {
            redis = redis.set_password(pw);
        }
        let display = if redis.db() != 0 {
            format!("{display} db {}", redis.db())
        } else {
            display
        };
        let tls = is_tls.then(|| {
            let insecure = tls.insecure || url.ends_with("#insecure");
            let certs = TlsCertificates {
                client_tls: tls
                    .client
                    .map(|(client_cert, client_key)| redis::ClientTlsConfig {
                        client_cert,
                        client_key,
                    }),
                root_cert: tls.ca,
            };
            (insecure, certs)
        });
        Ok(Target {
            mode,
            redis,
            tls,
            display,
        })
    }

    /// TLS without certificate verification (--tls-insecure or `#insecure`).
    pub fn insecure(&self) -> bool {
        self.tls.as_ref().is_some_and(|(insecure, _)| *insecure)
    }

    fn is_sentinel_or_cluster(&self) -> bool {
        !matches!(self.mode, Mode::Direct(_))
    }

    /// One node, with this target's credentials and TLS settings.
    fn open(
        &self,
        addr: ConnectionAddr,
        ct: Duration,
        io: Duration,
    ) -> RedisResult<redis::Connection> {
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
        let conn = client.get_connection_with_timeout(nonzero(ct))?;
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
    pub fn connect(&self, ct: Duration, io: Duration) -> RedisResult<Conn> {
        let (c, node) = match &self.mode {
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
        };
        Ok(Conn {
            c,
            target: self.clone(),
            ct,
            io,
            node,
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

    /// The master the sentinels name now (None if none answers, or not in Sentinel mode).
    pub fn sentinel_master(&self, ct: Duration, io: Duration) -> Option<(String, u16)> {
        let Mode::Sentinel { sentinels, service } = &self.mode else {
            return None;
        };
        sentinels
            .iter()
            .find_map(|(h, p)| self.ask(h, *p, service, ct, io).ok().flatten())
    }

    /// One sentinel's answer. Sentinels often run without the data nodes' password: try
    /// without, then with.
    fn ask(
        &self,
        h: &str,
        p: u16,
        service: &str,
        ct: Duration,
        io: Duration,
    ) -> RedisResult<Option<(String, u16)>> {
        let bare = Target {
            redis: RedisConnectionInfo::default().set_skip_set_lib_name(),
            ..self.clone()
        };
        match bare
            .open(self.tcp(h, p), ct, io)
            .and_then(|mut s| ask_sentinel(&mut s, service))
        {
            Err(e)
                if matches!(e.code(), Some("NOAUTH" | "NOPERM"))
                    || e.kind() == ErrorKind::AuthenticationFailed =>
            {
                self.open(self.tcp(h, p), ct, io)
                    .and_then(|mut s| ask_sentinel(&mut s, service))
            }
            other => other,
        }
    }

    fn via_sentinel(
        &self,
        sentinels: &[(String, u16)],
        service: &str,
        ct: Duration,
        io: Duration,
    ) -> RedisResult<((String, u16), redis::Connection)> {
        let mut last = None;
        let mut unknown = 0;
        for (h, p) in sentinels {
            match self.ask(h, *p, service, ct, io) {
                Ok(Some((mh, mp))) => {
                    let c = self.open(self.tcp(&mh, mp), ct, io)?;
                    return Ok(((mh, mp), c));
                }
                Ok(None) => unknown += 1,
                Err(e) => last = Some(e),
            }
        }
        if unknown > 0 && last.is_none() {
            return Err(RedisError::from((
                ErrorKind::MasterNameNotFoundBySentinel,
                "unknown service",
                service.to_string(),
            )));
        }
        Err(last.unwrap_or_else(|| RedisError::from((ErrorKind::Io, "no sentinel reachable"))))
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
                    node: None,
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

/// `SENTINEL get-master-addr-by-name`: Some((host, port)), or None if the service is unknown.
fn ask_sentinel(s: &mut redis::Connection, service: &str) -> RedisResult<Option<(String, u16)>> {
    let reply: Option<(String, String)> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(service)
        .query(s)?;
    Ok(reply.and_then(|(h, p)| Some((h, p.parse().ok()?))))
}

/// `[auth@]hosts[/path]` of a multi-host URL.
fn split_multi(rest: &str) -> (Option<&str>, &str, &str) {
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    match authority.rsplit_once('@') {
        Some((auth, hosts)) => (Some(auth), hosts, path),
        None => (None, authority, path),
    }
}

fn host_port(s: &str, default_port: u16) -> Option<(String, u16)> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => Some((h.to_string(), p.parse().ok()?)),
        Some(_) => None,
        None => Some((s.to_string(), default_port)),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A connection to the node that serves the lock, following Redis Cluster redirects.
pub struct Conn {
    c: redis::Connection,
    target: Target,
    ct: Duration,
    io: Duration,
    /// The master this connection reached through Sentinel.
    node: Option<(String, u16)>,
}

/// Redirects followed for one command before giving up (a slot moving twice mid-command is
/// already exotic).
const MAX_REDIRECTS: u32 = 3;

impl Conn {
    /// Behind Sentinel: has the master moved since this connection was made? A demoted master
    /// keeps accepting writes until Sentinel reconfigures it (seen: 10 s after the switch), so
    /// the watchdog asks before each renewal instead of waiting for READONLY.
    pub fn master_moved(&self, ct: Duration, io: Duration) -> bool {
        match (&self.node, self.target.sentinel_master(ct, io)) {
            (Some(mine), Some(now)) => *mine != now,
            _ => false,
        }
    }

    /// Bound every following command by `io`.
    pub fn set_timeouts(&mut self, io: Duration) -> RedisResult<()> {
        self.io = io;
        set_raw_timeouts(&self.c, io)
    }

    pub fn query<T: FromRedisValue>(&mut self, cmd: &redis::Cmd) -> RedisResult<T> {
        self.follow(|c| cmd.query(c))
    }

    /// A pipeline about `key`'s slot. Pipeline errors do not say where a slot moved, so in a
    /// cluster one single-key command goes first to land on the right node.
    pub fn query_pipe<T: FromRedisValue>(
        &mut self,
        key: &str,
        p: &redis::Pipeline,
    ) -> RedisResult<T> {
        if matches!(self.target.mode, Mode::Cluster { .. }) {
            self.query::<i64>(redis::cmd("EXISTS").arg(key))?;
        }
        self.follow(|c| p.query(c))
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
            // MOVED: the slot lives there now; stay.
            self.c = node;
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

/// The URL as it may be printed: any password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return if url.contains('@') {
            "***".into()
        } else {
            url.to_string()
        };
    };
    // userinfo ends at the last '@' before the first '/', which starts the path.
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let shown = if user.is_empty() {
                "***".to_string()
            } else {
                format!("{user}:***")
            };
            format!("{scheme}://{shown}@{}", &rest[at + 1..])
        }
        None => url.to_string(),
    }
}

/// How a failed Redis call should be handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Network trouble or a server that is briefly unable (loading, busy script): retry.
    Transient(String),
    /// The server answered and refused: retrying will not help; tell the operator.
    Permanent(String),
}

impl Fault {
    pub fn reason(&self) -> &str {
        match self {
            Fault::Transient(s) | Fault::Permanent(s) => s,
        }
    }
}

pub fn classify(e: &RedisError) -> Fault {
    let code = e.code().unwrap_or("");
    let detail = e.detail().unwrap_or("").trim();
    let text = e.to_string();
    match (e.kind(), code) {
        (ErrorKind::AuthenticationFailed, _) | (_, "WRONGPASS" | "NOAUTH") => Fault::Permanent(
            "authentication failed: check the password (--password-file, the URL, or REDISCLI_AUTH) and the user name"
                .into(),
        ),
        (_, "READONLY") => Fault::Permanent(
            "the server is a read-only replica: point --url at the primary (master), or use a redis+sentinel:// URL that finds it"
                .into(),
        ),
        (_, "OOM") => Fault::Permanent(
            "the server is out of memory (maxmemory reached) and refuses writes: free memory or raise maxmemory"
                .into(),
        ),
        (_, "NOPERM") => Fault::Permanent(format!(
            "permission denied by the server's ACL ({}): grant the commands and key pattern listed in the README",
            one_line(detail)
        )),
        (ErrorKind::MasterNameNotFoundBySentinel, _) => Fault::Permanent(format!(
            "no sentinel knows a master named {detail:?}: check the SERVICE name in --url (SENTINEL MASTERS lists them)"
        )),
        (_, "LOADING") => Fault::Transient("the server is loading its dataset".into()),
        (_, "BUSY") => Fault::Transient("the server is busy running a script".into()),
        (_, "MASTERDOWN") => Fault::Transient("the replica's link to its master is down".into()),
        (_, "TRYAGAIN") => Fault::Transient("cluster slot migrating (TRYAGAIN)".into()),
        (_, "CLUSTERDOWN") => Fault::Transient("the cluster is down (CLUSTERDOWN)".into()),
        (_, "MOVED" | "ASK") => Fault::Transient(format!("cluster redirect ({code} {detail})")),
        _ if tls_failure(&text) => Fault::Permanent(format!(
            "TLS handshake failed ({}): check --tls-ca (the CA that signed the server's certificate), --tls-cert/--tls-key if the server wants a client certificate, and that the host name matches the certificate",
            tls_reason(&text)
        )),
        (ErrorKind::Io, _) => Fault::Transient(io_text(e)),
        (ErrorKind::Parse | ErrorKind::UnexpectedReturnType, _) => Fault::Permanent(
            "the reply is not the Redis protocol: is --url pointing at a Redis port (and TLS only if the port speaks TLS)?".into(),
        ),
        (ErrorKind::InvalidClientConfig, _) => Fault::Permanent(format!("bad connection settings: {}", one_line(&text))),
        (ErrorKind::Server(_), _) if !code.is_empty() => {
            Fault::Permanent(format!("the server refused the command: {code} {}", one_line(detail)))
        }
        _ if e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() => {
            Fault::Transient(io_text(e))
        }
        _ => Fault::Permanent(format!("unexpected reply: {}", one_line(&text))),
    }
}

fn tls_failure(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "certificate",
        "handshake",
        "tls",
        "unknownissuer",
        "peer sent no certificates",
        "decrypt",
    ]
    .iter()
    .any(|w| t.contains(w))
}

/// rustls names its certificate errors both as variants (`NotValidForName`) and in prose
/// ("certificate not valid for name ..."), depending on the version and the path: match both.
fn tls_reason(text: &str) -> String {
    let t = one_line(text);
    let has =
        |variant: &str, prose: &str| t.contains(variant) || t.to_ascii_lowercase().contains(prose);
    if has("UnknownIssuer", "unknown issuer") {
        "the server's certificate is not signed by a trusted CA".into()
    } else if has("NotValidForName", "not valid for name") {
        "the server's certificate does not name this host".into()
    } else if has("Expired", "expired") {
        "the server's certificate has expired".into()
    } else if has("CertificateRequired", "certificate required") {
        "the server requires a client certificate".into()
    } else {
        t
    }
}

/// Server and library messages can span lines; a log line must not.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn io_text(e: &RedisError) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connection_refusal() {
        "connection refused".into()
    } else if e.is_connection_dropped() {
        "connection lost".into()
    } else {
        without_os_error(&e.to_string())
    }
}

/// An OS error message without the "(os error N)" noise.
pub fn without_os_error(s: &str) -> String {
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<String, String> {
        Target::parse(url, None, None, TlsFiles::default()).map(|t| t.to_string())
    }

    #[test]
    fn redaction_hides_passwords() {
        assert_eq!(redact("redis://:hunter2@h:1/0"), "redis://***@h:1/0");
        assert_eq!(redact("redis://u:hunter2@h:1"), "redis://u:***@h:1");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        assert_eq!(redact("redis://u:p@ss@h"), "redis://u:***@h");
        assert_eq!(
            redact("redis+sentinel://:pw@a:1,b:2/mymaster"),
            "redis+sentinel://***@a:1,b:2/mymaster"
        );
        assert!(!redact("nonsense:hunter2@x").contains("hunter2"));
    }

    #[test]
    fn url_forms() {
        assert_eq!(
            parse("redis://127.0.0.1:7000/2"),
            Ok("127.0.0.1:7000 db 2".to_string())
        );
        assert_eq!(
            parse("redis+unix:///tmp/r.sock"),
            Ok("unix:/tmp/r.sock".to_string())
        );
        assert_eq!(parse("rediss://h:6380"), Ok("h:6380 (TLS)".to_string()));
        assert_eq!(
            parse("redis+sentinel://:pw@s1:26379,s2/mymaster/1"),
            Ok("sentinel s1:26379,s2:26379 service mymaster db 1".to_string())
        );
        assert_eq!(
            parse("redis+cluster://n1:7000,[::1]:7001"),
            Ok("cluster n1:7000,::1:7001".to_string())
        );
        for bad in [
            "127.0.0.1:6379",
            "http://x",
            "redis://",
            "redis://h:99999",
            "redis+sentinel://s1:26379",
            "redis+cluster://",
            "redis+cluster://n1:7000/3",
        ] {
            let e = parse(bad).err().unwrap_or_default();
            assert!(e.starts_with("--url"), "{bad}: {e}");
        }
        let e = parse("redis://:sekrit@h:notaport")
            .err()
            .unwrap_or_default();
        assert!(!e.contains("sekrit"), "{e}");
        let tls_only = Target::parse(
            "redis://h",
            None,
            None,
            TlsFiles {
                insecure: true,
                ..TlsFiles::default()
            },
        );
        assert!(
            tls_only
                .err()
                .unwrap_or_default()
                .contains("need a TLS URL")
        );
    }

    #[test]
    fn host_lists() {
        assert_eq!(host_port("a:1", 9), Some(("a".into(), 1)));
        assert_eq!(host_port("a", 9), Some(("a".into(), 9)));
        assert_eq!(host_port("[::1]:5", 9), Some(("::1".into(), 5)));
        assert_eq!(host_port(":5", 9), None);
        assert_eq!(percent_decode("p%40ss"), "p@ss");
    }
}
