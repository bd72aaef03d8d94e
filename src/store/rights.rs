//! The rights row's reads: who the user is, `ACL DRYRUN`, and the harmless trial on a scratch
//! key. A refused command is an answer here (the row lists it), not an outage; only a failure
//! of the connection itself is an error.

use redis::{RedisError, RedisResult, Value};

use super::conn::Conn;
use super::info::refused;

/// The trial script: each command run on the scratch key, then the key deleted, atomically.
const TRIAL: &str = include_str!("scripts/trial.lua");

/// An error reply as the server worded it: "NOPERM this user has no permissions to run …".
fn text(e: &RedisError) -> String {
    format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""))
        .trim()
        .to_string()
}

/// A reply that is a server error: Ok(its text); a connection failure: Err.
fn reply<T>(r: RedisResult<T>) -> RedisResult<Result<T, String>> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) if refused(&e) => Ok(Err(text(&e))),
        Err(e) => Err(e),
    }
}

/// `ACL WHOAMI`, or None when refused (the dlock user usually is; servers before 6.0).
pub fn whoami(conn: &mut Conn) -> RedisResult<Option<String>> {
    Ok(reply(conn.query::<String>(redis::cmd("ACL").arg("WHOAMI")))?.ok())
}

/// `ACL DRYRUN user words…`: "OK", or the sentence saying what is refused; Err(text) when
/// the server refused DRYRUN itself (or does not know the command).
pub fn dryrun(
    conn: &mut Conn,
    user: &str,
    words: &[String],
) -> RedisResult<Result<String, String>> {
    let v = reply(conn.query::<Value>(redis::cmd("ACL").arg("DRYRUN").arg(user).arg(words)))?;
    Ok(v.map(|v| match v {
        Value::Okay => "OK".to_string(),
        v => redis::from_redis_value::<String>(v).unwrap_or_else(|e| e.to_string()),
    }))
}

/// One command sent as it is: Err(text) when the server refused it.
pub fn attempt(conn: &mut Conn, words: &[String]) -> RedisResult<Result<(), String>> {
    let Some((name, args)) = words.split_first() else {
        return Ok(Ok(()));
    };
    Ok(reply(conn.query::<Value>(redis::cmd(name).arg(args)))?.map(|_| ()))
}

/// What the trial script says: each command's error ('' when it ran) in order, and why the
/// scratch key could not be removed (None: it is gone).
pub struct Trial {
    pub errors: Vec<String>,
    pub left: Option<String>,
}

/// The commands tried inside one script on `key`; Err(text) when the script could not run
/// (EVAL refused, scripting off).
pub fn attempt_in_script(
    conn: &mut Conn,
    key: &str,
    cmds: &[Vec<String>],
) -> RedisResult<Result<Trial, String>> {
    let mut eval = redis::cmd("EVAL");
    eval.arg(TRIAL).arg(1).arg(key);
    for words in cmds {
        eval.arg(words.len()).arg(words);
    }
    Ok(reply(conn.query::<Vec<String>>(&eval))?.map(|mut errors| {
        let left = errors.pop().filter(|why| !why.is_empty());
        Trial { errors, left }
    }))
}
