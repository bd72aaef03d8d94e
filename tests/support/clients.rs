//! The server's clients other than the test's own, read on one connection the test keeps.
//!
//! Counting with INFO (or CLIENT LIST) on a new connection per read also counts the previous
//! read's connection while the server has not yet taken its close: CI saw a holder "with three
//! connections" that way (Valkey 9.1, 2026-12-07). One kept connection, left out by its id,
//! counts only the others; a connection the test closed before may still show for a moment, so
//! callers wait for the count they expect rather than read it once.

use super::RedisServer;

pub struct Clients {
    conn: redis::Connection,
    own: String,
}

impl Clients {
    pub fn of(r: &RedisServer) -> Clients {
        let mut conn = r.conn();
        let id: i64 = redis::cmd("CLIENT")
            .arg("ID")
            .query(&mut conn)
            .expect("CLIENT ID");
        Clients {
            conn,
            own: format!("id={id} "),
        }
    }

    /// CLIENT LIST's lines for every client but this one.
    pub fn others(&mut self) -> Vec<String> {
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query(&mut self.conn)
            .expect("CLIENT LIST");
        list.lines()
            .filter(|l| !l.starts_with(&self.own))
            .map(str::to_string)
            .collect()
    }
}
