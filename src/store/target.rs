//! Where Redis is: `--url` parsing (standalone, TLS, Unix socket, Sentinel, Cluster) with the
//! password kept out of every message.

use std::fmt;

use redis::{ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, TlsCertificates};

/// TLS material from --tls-ca, --tls-cert/--tls-key and --tls-insecure.
#[derive(Clone, Default)]
pub struct TlsFiles {
    pub ca: Option<Vec<u8>>,
    /// (certificate, key), both PEM.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
    pub insecure: bool,
}

#[derive(Clone)]
pub(super) enum Mode {
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
    pub(super) mode: Mode,
    pub(super) redis: RedisConnectionInfo,
    pub(super) tls: Option<(bool, TlsCertificates)>,
    pub(super) display: String,
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
    /// Behind Sentinel: the master can move.
    pub fn is_sentinel(&self) -> bool {
        matches!(self.mode, Mode::Sentinel { .. })
    }

    /// Over TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// A Redis Cluster: keys live on several nodes.
    pub fn is_cluster(&self) -> bool {
        matches!(self.mode, Mode::Cluster { .. })
    }

    /// The ACL user the URL names, if any (else the server's `default`).
    pub fn user(&self) -> Option<&str> {
        self.redis.username()
    }

    /// The database the URL selects (0 unless it names one).
    pub fn db(&self) -> i64 {
        self.redis.db()
    }

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
                let unix = parsed.scheme().ends_with("unix");
                let has_host = parsed.host_str().is_some_and(|h| !h.is_empty());
                if !unix && !has_host {
                    return Err(bad("missing host"));
                }
                // The redis crate says only "invalid client config" about it.
                let db = if unix {
                    parsed
                        .query_pairs()
                        .find(|(k, _)| k == "db")
                        .map(|(_, v)| v.into_owned())
                } else {
                    Some(parsed.path().trim_matches('/').to_string()).filter(|p| !p.is_empty())
                };
                if db.is_some_and(|db| db.parse::<i64>().is_err()) {
                    return Err(not_a_db(&redacted));
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
                    let db: i64 = db.parse().map_err(|_| not_a_db(&redacted))?;
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

    pub(super) fn is_sentinel_or_cluster(&self) -> bool {
        !matches!(self.mode, Mode::Direct(_))
    }
}

/// The database part of the URL (`/db`, `?db=N`) is not a number.
fn not_a_db(redacted: &str) -> String {
    format!(
        "--url {redacted}: the database in the URL must be a number, as in redis://host:6379/2 (redis+unix:///path/to/sock?db=2)"
    )
}

/// `[auth@]hosts[/path]` of a multi-host URL.
fn split_multi(rest: &str) -> (Option<&str>, &str, &str) {
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    match authority.rsplit_once('@') {
        Some((auth, hosts)) => (Some(auth), hosts, path),
        None => (None, authority, path),
    }
}

pub(super) fn host_port(s: &str, default_port: u16) -> Option<(String, u16)> {
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

/// `%XX` escapes decoded (user names, passwords and service names may need them); what is
/// not valid UTF-8 afterwards is replaced, not refused.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
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

#[cfg(test)]
mod tests;
