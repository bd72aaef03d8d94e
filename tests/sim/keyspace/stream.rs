//! The keyspace's streams: the run log and its timeline, in the forms the scripts use them.

use std::collections::VecDeque;

use redis::Value;

use super::{Answer, Data, Entry, Keyspace, NOT_INT, WRONGTYPE, bulk};

impl Keyspace {
    /// XADD key MAXLEN n <* | ms-seq> field value … (the forms the scripts send: the run log
    /// with `*`, its timeline with the log entry's id).
    pub(super) fn xadd(&mut self, a: &[&str]) -> Answer {
        if a.len() < 6 || !a[1].eq_ignore_ascii_case("MAXLEN") || !a.len().is_multiple_of(2) {
            return Err("ERR syntax error".into());
        }
        let given = match a[3] {
            "*" => None,
            id => {
                let parsed = id.split_once('-').and_then(|(ms, seq)| {
                    Some((ms.parse::<u64>().ok()?, seq.parse::<u64>().ok()?))
                });
                match parsed {
                    Some(id) => Some(id),
                    None => {
                        return Err(
                            "ERR Invalid stream ID specified as stream command argument".into()
                        );
                    }
                }
            }
        };
        let keep = a[2].parse::<i64>().map_err(|_| NOT_INT.to_string())?;
        if keep < 0 {
            return Err("ERR The MAXLEN argument must be >= 0.".into());
        }
        let now = self.now_ms();
        if self.live(a[0]).is_none() {
            let data = Data::Stream(VecDeque::new(), (0, 0));
            self.keys.insert(
                a[0].to_string(),
                Entry {
                    data,
                    expires: None,
                },
            );
        }
        let Some(Entry {
            data: Data::Stream(entries, last),
            ..
        }) = self.keys.get_mut(a[0])
        else {
            return Err(WRONGTYPE.into());
        };
        let id = match given {
            Some(id) if id <= *last => {
                return Err(
                    "ERR The ID specified in XADD is equal or smaller than the target stream top item"
                        .into(),
                );
            }
            Some(id) => id,
            None if now > last.0 => (now, 0),
            None => (last.0, last.1 + 1),
        };
        *last = id;
        entries.push_back((id, a[4..].iter().map(|f| f.to_string()).collect()));
        while entries.len() as i64 > keep {
            entries.pop_front();
        }
        Ok(bulk(&format!("{}-{}", id.0, id.1)))
    }

    /// XLEN key.
    pub(super) fn xlen(&mut self, key: &str) -> Answer {
        match self.live(key) {
            None => Ok(Value::Int(0)),
            Some(Entry {
                data: Data::Stream(entries, _),
                ..
            }) => Ok(Value::Int(entries.len() as i64)),
            Some(_) => Err(WRONGTYPE.into()),
        }
    }
}
