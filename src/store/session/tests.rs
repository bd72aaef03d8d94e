use super::*;
use crate::store::target::{Target, TlsFiles};

/// A session connects on its first call, and a failed connect leaves it unconnected (the
/// waker's stop and the busy count send nothing then, rather than reconnect).
/// A server nothing listens on (port 1: refused at once).
fn nowhere() -> Server {
    let target = Target::parse("redis://127.0.0.1:1", None, None, TlsFiles::default());
    Server {
        target: target.expect("a valid URL"),
        connect_timeout: Duration::from_millis(200),
        io_timeout: Duration::from_millis(200),
    }
}

#[test]
fn a_session_is_connected_only_after_a_call_got_through() {
    let mut s = Session::new(&nowhere());
    assert!(!s.is_connected());
    let wait = s.wait_replicas(1, Duration::from_millis(1));
    assert!(wait.is_err());
    assert!(!s.is_connected());
    assert_eq!(s.socket(true), Watched::Never);
}

/// What a failure says about whether the command ran: only a server's refusal (an error
/// code) or a command never sent rules it out.
#[test]
fn a_failure_may_have_run_unless_refused_or_never_sent() {
    let s = Session::new(&nowhere());
    let io = |kind| RedisError::from(std::io::Error::from(kind));
    let refused = RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError),
        "WRONGTYPE",
    ));
    let unreadable = RedisError::from((redis::ErrorKind::UnexpectedReturnType, "a map"));
    for e in [
        io(std::io::ErrorKind::TimedOut),
        io(std::io::ErrorKind::ConnectionReset),
        io(std::io::ErrorKind::UnexpectedEof),
        unreadable,
    ] {
        assert!(s.failure(&e, true).maybe_executed, "{e}");
        assert!(!s.failure(&e, false).maybe_executed, "{e}");
    }
    assert!(!s.failure(&refused, true).maybe_executed);
}

/// Which failures say the server is down and says so at once (the renewal's fast pace): a
/// refused connect (or a Unix socket gone), a connection reset or closed by the peer; never a
/// timeout or a server's error reply.
#[test]
fn a_refused_or_reset_connection_is_told_apart_from_a_silent_one() {
    let s = Session::new(&nowhere());
    let io = |kind| RedisError::from(std::io::Error::from(kind));
    use std::io::ErrorKind::*;
    for kind in [
        ConnectionRefused,
        ConnectionReset,
        ConnectionAborted,
        NotFound,
        UnexpectedEof,
        BrokenPipe,
    ] {
        assert!(s.failure(&io(kind), false).refused, "{kind:?}");
    }
    for kind in [TimedOut, WouldBlock] {
        assert!(!s.failure(&io(kind), true).refused, "{kind:?}");
    }
    let loading = RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading),
        "LOADING",
    ));
    assert!(!s.failure(&loading, true).refused);
    // A real connect to a port nobody listens on.
    let mut real = Session::new(&nowhere());
    match real.pop(&["a-list"]) {
        Err(f) => assert!(f.refused && !f.sent, "{f:?}"),
        Ok(n) => panic!("port 1 answered LPOP with {n:?}"),
    }
}

/// A WAIT never opens a connection: on a new one it would count replicas for writes that
/// connection never made (all of them, at once). Without the connection that wrote, it fails
/// unsent, and not as a refused connect (it tried none: port 1 would have refused it).
#[test]
fn a_wait_without_the_writers_connection_fails_unsent_without_connecting() {
    let mut s = Session::new(&nowhere());
    for wait in [
        s.wait_replicas(1, Duration::from_millis(1)),
        s.wait_replicas_within(
            1,
            Duration::from_millis(1),
            Instant::now() + Duration::from_secs(1),
        ),
    ] {
        match wait {
            Err(f) => {
                assert!(!f.sent && !f.maybe_executed && !f.refused, "{f:?}");
                assert!(
                    f.reason.contains("connection that wrote it is gone"),
                    "{f:?}"
                );
            }
            Ok(n) => panic!("a WAIT with no connection answered {n}"),
        }
    }
    assert!(!s.is_connected());
}
