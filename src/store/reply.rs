//! What a read's reply is about (SPEC 5, STYLE 18): one key, or the server. Sorted here, once,
//! for every reader (`state`, `runs`): only WRONGTYPE, or a reply of the type Redis sends for
//! that command whose content is not a lock's, makes a key foreign or damaged. Every other error
//! reply (NOAUTH, NOPERM, LOADING, any `-ERR`, …) and every reply of a type Redis never sends
//! for the command (`+OK` or an integer to GET, a bulk string to HGETALL) is a server failure:
//! monitoring that cannot read must never report a healthy fleet.

use redis::{ErrorKind, RedisError, RedisResult, Value};

/// A reply about one key: its value (of the type the command always answers with), or why the
/// key is not what dlock keeps there (its words, for a warning line).
pub type AboutKey<T> = Result<T, String>;

/// The types of reply Redis sends for the read commands dlock uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// GET: a bulk string, or nil.
    Bulk,
    /// PTTL, XLEN: an integer.
    Int,
    /// HGETALL: field and value pairs (a flat array of bulk strings; a map in RESP3).
    Hash,
}

fn shape_of(command: &str) -> Shape {
    match command {
        "PTTL" | "XLEN" => Shape::Int,
        "HGETALL" => Shape::Hash,
        _ => Shape::Bulk,
    }
}

/// `command`'s reply, of the type Redis sends for it: Ok(Ok(value)); a key of another type
/// (WRONGTYPE): Ok(Err(why)); anything else: Err, the server failure.
pub fn checked(command: &str, reply: Option<RedisResult<Value>>) -> RedisResult<AboutKey<Value>> {
    let value = match reply {
        None => return Err(never_sent(command, "no reply")),
        Some(Err(e)) if e.code() == Some("WRONGTYPE") => {
            return Ok(Err("a key of another type".to_string()));
        }
        Some(Err(e)) => return Err(e),
        Some(Ok(v)) => v,
    };
    let fits = match (shape_of(command), &value) {
        (Shape::Bulk, Value::BulkString(_) | Value::Nil) => true,
        (Shape::Int, Value::Int(_)) => true,
        (Shape::Hash, Value::Array(items)) => {
            items.len() % 2 == 0 && items.iter().all(|v| matches!(v, Value::BulkString(_)))
        }
        (Shape::Hash, Value::Map(pairs)) => pairs
            .iter()
            .all(|(k, v)| matches!((k, v), (Value::BulkString(_), Value::BulkString(_)))),
        _ => false,
    };
    if fits {
        Ok(Ok(value))
    } else {
        Err(never_sent(command, kind(&value)))
    }
}

/// GET's value as text (None: no key); a value that is not UTF-8 is the key's problem.
pub fn text(v: Value) -> AboutKey<Option<String>> {
    match v {
        Value::BulkString(b) => String::from_utf8(b)
            .map(Some)
            .map_err(|_| "a value that is not text".to_string()),
        _ => Ok(None),
    }
}

/// An integer reply's value.
pub fn int(v: Value) -> i64 {
    match v {
        Value::Int(n) => n,
        _ => 0,
    }
}

/// HGETALL's pairs as text; a field or value that is not UTF-8 is the key's problem.
pub fn fields(v: Value) -> AboutKey<Vec<(String, String)>> {
    let not_text = || "a hash field that is not text".to_string();
    let string = |v: Value| match v {
        Value::BulkString(b) => String::from_utf8(b).map_err(|_| not_text()),
        _ => Err(not_text()),
    };
    let pairs: Vec<(Value, Value)> = match v {
        Value::Map(pairs) => pairs,
        Value::Array(items) => {
            let mut it = items.into_iter();
            std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect()
        }
        _ => Vec::new(),
    };
    pairs
        .into_iter()
        .map(|(k, v)| Ok((string(k)?, string(v)?)))
        .collect()
}

/// How a `never_sent` error begins, for `fault::classify` to show its (safe) detail.
pub const NEVER_SENT: &str = "a reply Redis never sends";

/// The server failure of a reply whose type Redis never sends for `command`. The reply itself
/// is not shown: it may be anything, of any length.
pub fn never_sent(command: &str, what: &str) -> RedisError {
    RedisError::from((
        ErrorKind::UnexpectedReturnType,
        NEVER_SENT,
        format!("{command} was answered with {what}"),
    ))
}

/// A reply's type, in words.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Int(_) => "an integer",
        Value::BulkString(_) => "a bulk string",
        Value::Array(_) => "an array",
        Value::SimpleString(_) | Value::Okay => "a status reply",
        Value::Map(_) => "a map",
        Value::Double(_) => "a double",
        Value::Boolean(_) => "a boolean",
        Value::ServerError(_) => "an error",
        _ => "a reply of another type",
    }
}

#[cfg(test)]
mod tests;
