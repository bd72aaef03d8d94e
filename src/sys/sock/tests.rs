use super::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

#[test]
fn the_only_socket_to_a_port_is_found_and_a_second_makes_it_ambiguous() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let a = TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert_eq!(connected_to(&Peer::Tcp(port)), Some(Socket(a.as_raw_fd())));
    let b = TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert_eq!(connected_to(&Peer::Tcp(port)), None);
    drop(b);
    assert_eq!(connected_to(&Peer::Tcp(port)), Some(Socket(a.as_raw_fd())));
    // The listener itself is not connected anywhere; nothing goes to port 1.
    assert_eq!(connected_to(&Peer::Tcp(1)), None);
}

#[test]
fn a_unix_socket_is_found_by_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let _l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let c = std::os::unix::net::UnixStream::connect(&path).unwrap();
    assert_eq!(
        connected_to(&Peer::Unix(path.clone())),
        Some(Socket(c.as_raw_fd()))
    );
}

#[test]
fn wait_wakes_on_the_peer_closing_not_on_data_and_on_the_bell() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut server, _) = l.accept().unwrap();
    let sock = Some(Socket(c.as_raw_fd()));
    let bell = Bell::new().unwrap();
    // Unread data is no reason to wake: it times out.
    server.write_all(b"+OK\r\n").unwrap();
    let t = Instant::now();
    assert_eq!(bell.wait(sock, Duration::from_millis(50)), Woke::TimedOut);
    assert!(t.elapsed() >= Duration::from_millis(50));
    drop(server);
    assert_eq!(bell.wait(sock, Duration::from_secs(10)), Woke::HungUp);
    bell.ring();
    assert_eq!(bell.wait(None, Duration::from_secs(10)), Woke::Rang);
    // It stays rung.
    assert_eq!(bell.wait(sock, Duration::from_secs(10)), Woke::Rang);
}
