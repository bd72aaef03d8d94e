//! Sentinel: asking the sentinels which server is SERVICE's master, and connecting to it.

use std::time::Duration;

use redis::{ErrorKind, RedisConnectionInfo, RedisError, RedisResult};

use super::super::target::{Mode, Target};

impl Target {
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

    pub(super) fn via_sentinel(
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
}

/// `SENTINEL get-master-addr-by-name`: Some((host, port)), or None if the service is unknown.
fn ask_sentinel(s: &mut redis::Connection, service: &str) -> RedisResult<Option<(String, u16)>> {
    let reply: Option<(String, String)> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(service)
        .query(s)?;
    Ok(reply.and_then(|(h, p)| Some((h, p.parse().ok()?))))
}
