//! The keyspace's lists: the wake-up list and the cancel requests, in the forms the scripts use.

use std::collections::VecDeque;

use redis::Value;

use super::{Answer, Data, Entry, Keyspace, WRONGTYPE};

impl Keyspace {
    pub(super) fn list_or_new(&mut self, key: &str) -> Result<&mut VecDeque<String>, String> {
        if self.live(key).is_none() {
            let data = Data::List(VecDeque::new());
            self.keys.insert(
                key.into(),
                Entry {
                    data,
                    expires: None,
                },
            );
        }
        match self.keys.get_mut(key).map(|e| &mut e.data) {
            Some(Data::List(l)) => Ok(l),
            _ => Err(WRONGTYPE.into()),
        }
    }

    pub(super) fn ltrim(&mut self, key: &str, start: i64, stop: i64) -> Answer {
        let l = match self.live(key) {
            None => return Ok(Value::Okay),
            Some(Entry {
                data: Data::List(l),
                ..
            }) => l,
            Some(_) => return Err(WRONGTYPE.into()),
        };
        let len = l.len() as i64;
        let s = if start < 0 {
            (len + start).max(0)
        } else {
            start
        };
        let e = if stop < 0 {
            len + stop
        } else {
            stop.min(len - 1)
        };
        if s > e || s >= len {
            l.clear();
        } else {
            l.truncate(e as usize + 1);
            l.drain(..s as usize);
        }
        if l.is_empty() {
            self.keys.remove(key);
        }
        Ok(Value::Okay)
    }

    /// LREM key count element: the first `count` occurrences from the head (`count` > 0), from
    /// the tail (< 0), or all (0); the number removed. An emptied list is deleted.
    pub(super) fn lrem(&mut self, key: &str, count: i64, element: &str) -> Answer {
        let l = match self.live(key) {
            None => return Ok(Value::Int(0)),
            Some(Entry {
                data: Data::List(l),
                ..
            }) => l,
            Some(_) => return Err(WRONGTYPE.into()),
        };
        let limit = if count == 0 {
            usize::MAX
        } else {
            count.unsigned_abs() as usize
        };
        let mut at: Vec<usize> = l
            .iter()
            .enumerate()
            .filter(|(_, v)| *v == element)
            .map(|(i, _)| i)
            .collect();
        if count < 0 {
            at.reverse();
        }
        at.truncate(limit);
        at.sort_unstable();
        for i in at.iter().rev() {
            l.remove(*i);
        }
        if l.is_empty() {
            self.keys.remove(key);
        }
        Ok(Value::Int(at.len() as i64))
    }
}
