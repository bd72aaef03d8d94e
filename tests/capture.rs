//! `--capture SIZE` and the run log's write side (SPEC 7b): every byte passes through unchanged
//! per stream, the entry keeps the exact head and tail, and nothing about the capture may slow
//! a renewal, a stop or the release. Anchored on the files the test itself reads and on the
//! server's own stream, not on what dlock says.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use redis::Value;

use crate::support::needs::Need;
use crate::support::*;

/// The newest entry of KEY's run log, field by field, as the server has it.
fn last_entry(r: &RedisServer, key: &str) -> HashMap<String, Vec<u8>> {
    let runs = format!("{{dlock:{key}}}:runs");
    let Value::Array(entries) = r.cmd(&["XREVRANGE", &runs, "+", "-", "COUNT", "1"]) else {
        panic!("XREVRANGE {runs}: not an array");
    };
    let Some(Value::Array(entry)) = entries.into_iter().next() else {
        panic!("{runs} is empty");
    };
    let Some(Value::Array(fields)) = entry.into_iter().nth(1) else {
        panic!("{runs}: an entry without fields");
    };
    let bytes = |v: &Value| match v {
        Value::BulkString(b) => b.clone(),
        other => panic!("not a bulk string: {other:?}"),
    };
    fields
        .chunks(2)
        .map(|kv| (String::from_utf8(bytes(&kv[0])).unwrap(), bytes(&kv[1])))
        .collect()
}

fn text(e: &HashMap<String, Vec<u8>>, field: &str) -> String {
    String::from_utf8_lossy(
        e.get(field)
            .unwrap_or_else(|| panic!("no {field} in {e:?}")),
    )
    .into_owned()
}

/// The job: 100 rounds of 1,000 bytes to stdout, then 1,000 to stderr (each one write, so one
/// pipe keeps them in this order): 200 KB in all.
const ALTERNATING: &str = r#"i=0; while [ $i -lt 100 ]; do printf "%01000d" $i; printf "%01000d" $i >&2; i=$((i+1)); done"#;

fn chunk(i: usize) -> String {
    format!("{i:0>1000}")
}

/// What `ALTERNATING` writes to stdout (and the same to stderr).
fn one_stream() -> String {
    (0..100).map(chunk).collect()
}

/// What `--capture SIZE` must keep of `stream` (SPEC 7b): the first quarter of SIZE, a line
/// naming how many bytes were left out, the last three quarters.
fn kept(stream: &[u8], size: usize) -> Vec<u8> {
    let total = stream.len();
    let mut want = stream[..size / 4].to_vec();
    want.extend_from_slice(format!("\n[dlock: {} bytes left out]\n", total - size).as_bytes());
    want.extend_from_slice(&stream[total - size * 3 / 4..]);
    want
}

/// Run dlock to completion with its stdout and stderr in files (one file for both when
/// `same_file`); returns the exit code and the files' bytes.
fn run_into_files(r: &RedisServer, args: &[&str], same_file: bool) -> (i32, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let out = File::create(&out_path).unwrap();
    let err = if same_file {
        out.try_clone().unwrap()
    } else {
        File::create(&err_path).unwrap()
    };
    let mut d = dlock(r).args(args);
    let status = d
        .cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .unwrap();
    let read = |p: &std::path::Path| std::fs::read(p).unwrap_or_default();
    (
        status.code().unwrap_or(-1),
        read(&out_path),
        read(&err_path),
    )
}

#[test]
fn both_streams_pass_through_byte_exact_and_the_total_is_counted() {
    let r = RedisServer::start();
    // -q: dlock's own info lines stay out of the stderr file, which then holds the job's alone.
    let args = [
        "-q",
        "run",
        "--key",
        "cap",
        "--capture",
        "16KiB",
        "--",
        "sh",
        "-c",
    ];
    let (code, out, err) = run_into_files(&r, &[&args[..], &[ALTERNATING]].concat(), false);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    assert!(out == one_stream().as_bytes(), "stdout differs");
    assert!(err == one_stream().as_bytes(), "stderr differs");
    let e = last_entry(&r, "cap");
    assert_eq!(text(&e, "output_bytes"), "200000");
    // 16 KiB kept of 200,000, with the marker line naming the rest.
    let left_out = 200_000 - 16 * 1024;
    let marker = format!("\n[dlock: {left_out} bytes left out]\n");
    assert_eq!(e["output"].len(), 16 * 1024 + marker.len());
    assert_eq!(text(&e, "outcome"), "ok");
}

/// Stdout the digits of `ALTERNATING`, stderr the same rounds in letters (`tr 0-9 a-j`): the
/// two streams' bytes can be told apart wherever they end up.
const TWO_ALPHABETS: &str = r#"i=0; while [ $i -lt 100 ]; do printf "%01000d" $i; printf "%01000d" $i | tr 0-9 a-j >&2; i=$((i+1)); done"#;

/// `one_stream` as TWO_ALPHABETS writes it to stderr.
fn in_letters(stream: &str) -> String {
    stream.bytes().map(|b| (b - b'0' + b'a') as char).collect()
}

/// With stdout and stderr in two files, dlock reads two pipes, and which pipe's bytes it reads
/// first is up to the scheduler: the kept output is the first SIZE/4 bytes of some interleaving
/// of the two streams, the marker line, and the last 3·SIZE/4. So each stream's share of the
/// kept head must be that stream's own first bytes, and its share of the tail its last ones,
/// byte for byte; and `history --run` gives back exactly what the server keeps.
#[test]
fn two_files_keep_each_streams_own_first_and_last_bytes() {
    let r = RedisServer::start();
    let args = [
        "-q",
        "run",
        "--key",
        "cap2f",
        "--capture",
        "16KiB",
        "--",
        "sh",
        "-c",
        TWO_ALPHABETS,
    ];
    let (code, out, err) = run_into_files(&r, &args, false);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
    let (stdout, stderr) = (one_stream(), in_letters(&one_stream()));
    assert!(out == stdout.as_bytes(), "stdout differs");
    assert!(err == stderr.as_bytes(), "stderr differs");
    let e = last_entry(&r, "cap2f");
    assert_eq!(text(&e, "output_bytes"), "200000");
    let kept = &e["output"];
    let (size, total) = (16 * 1024, 200_000);
    let marker = format!("\n[dlock: {} bytes left out]\n", total - size);
    assert_eq!(kept.len(), size + marker.len());
    let (head, rest) = kept.split_at(size / 4);
    let (mark, tail) = rest.split_at(marker.len());
    assert_eq!(String::from_utf8_lossy(mark), marker);
    let only = |bytes: &[u8], digits: bool| -> String {
        bytes
            .iter()
            .filter(|b| b.is_ascii_digit() == digits)
            .map(|&b| b as char)
            .collect()
    };
    for (name, stream, digits) in [("stdout", &stdout, true), ("stderr", &stderr, false)] {
        let (h, t) = (only(head, digits), only(tail, digits));
        assert!(
            stream.starts_with(&h),
            "the head's {} bytes of {name} are not its first ones: {h:?}",
            h.len()
        );
        assert!(
            stream.ends_with(&t),
            "the tail's {} bytes of {name} are not its last ones: {t:?}",
            t.len()
        );
    }
    // Nothing else in head or tail: every byte is one stream's.
    assert!(
        head.iter()
            .chain(tail)
            .all(|b| b.is_ascii_digit() || (b'a'..=b'j').contains(b)),
        "bytes of neither stream kept"
    );
    let run = text(&e, "run");
    let mut h = dlock(&r).args(["history", "cap2f", "--run", &run]);
    let back = h.cmd.output().unwrap();
    assert!(
        back.status.success(),
        "{}",
        String::from_utf8_lossy(&back.stderr)
    );
    assert!(
        back.stdout == *kept,
        "history --run differs from the server's entry"
    );
}

#[test]
fn one_file_for_both_streams_is_one_pipe_with_the_exact_order_head_and_tail() {
    let r = RedisServer::start();
    let args = [
        "-q",
        "run",
        "--key",
        "cap1",
        "--capture",
        "16KiB",
        "--",
        "sh",
        "-c",
    ];
    let (code, both, _) = run_into_files(&r, &[&args[..], &[ALTERNATING]].concat(), true);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&both));
    let merged: String = (0..100).map(|i| chunk(i).repeat(2)).collect();
    assert!(both == merged.as_bytes(), "the file's order differs");
    let e = last_entry(&r, "cap1");
    assert!(
        e["output"] == kept(merged.as_bytes(), 16 * 1024),
        "kept head and tail differ"
    );
    assert_eq!(text(&e, "output_bytes"), merged.len().to_string());
}

#[test]
fn into_a_pipe_the_bytes_pass_in_the_kernel_and_the_kept_head_and_tail_are_the_same() {
    // dlock's stdout and stderr are one pipe (`2>&1 | cat`): the bytes go on by `tee`, and only
    // the kept ones are read.
    let r = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out");
    let script = format!(
        "\"$0\" -q run --key cap2 --capture 16KiB -- sh -c '{ALTERNATING}' 2>&1 | cat > {}",
        file.display()
    );
    let mut sh = test_command("sh");
    sh.args(["-c", &script, dlock_bin()])
        .env("DLOCK_URL", r.url());
    let status = sh.status().unwrap();
    assert!(status.success());
    let merged: String = (0..100).map(|i| chunk(i).repeat(2)).collect();
    assert!(
        std::fs::read(&file).unwrap() == merged.as_bytes(),
        "the pipe's bytes differ"
    );
    let e = last_entry(&r, "cap2");
    assert!(
        e["output"] == kept(merged.as_bytes(), 16 * 1024),
        "kept head and tail differ"
    );
}

#[test]
fn binary_output_is_kept_byte_exact() {
    let r = RedisServer::start();
    let job = r"printf '\000\377\376binary\n\001'";
    dlock(&r)
        .args(["-q", "run", "--key", "bin", "--capture", "1KiB", "--"])
        .args(["sh", "-c", job])
        .run()
        .code(0);
    let e = last_entry(&r, "bin");
    assert_eq!(e["output"], b"\x00\xff\xfebinary\n\x01");
    assert_eq!(text(&e, "output_bytes"), "11");
}

#[test]
fn output_after_sigterm_is_kept_and_a_job_killed_mid_write_is_logged_as_signalled() {
    let r = RedisServer::start();
    // The job says goodbye on SIGTERM (forwarded by dlock) and exits 0.
    let job = "trap 'echo bye after TERM; exit 0' TERM; echo ready; while :; do sleep 0.01; done";
    let mut d = dlock(&r)
        .args(["-q", "run", "--key", "term", "--capture", "1KiB", "--"])
        .args(["sh", "-c", job])
        .spawn();
    d.expect_line("ready");
    d.signal(libc::SIGTERM);
    d.expect_line("bye after TERM");
    d.finish(Duration::from_secs(10)).code(0);
    let e = last_entry(&r, "term");
    // (The shell may also report its killed `sleep` on stderr, another pipe: before or after.)
    let kept = text(&e, "output");
    assert!(
        kept.starts_with("ready\n") && kept.contains("bye after TERM\n"),
        "{kept}"
    );

    // A job that writes without pause and ignores SIGTERM: dlock's second SIGTERM escalates
    // to SIGKILL mid-write.
    let job = "trap '' TERM; echo ready; yes";
    let mut d = dlock(&r)
        .args(["-q", "run", "--key", "kill", "--capture", "1KiB", "--"])
        .args(["sh", "-c", job])
        .spawn();
    d.expect_line("ready");
    // Mid-write for sure: 1,000 lines (2 KB) have passed through before the signals.
    for _ in 0..1000 {
        d.expect_line("y");
    }
    // The rest of `yes` is not the test's to keep (the run log's copy is what is checked).
    d.discard_stdout();
    d.signal(libc::SIGTERM);
    d.signal(libc::SIGTERM);
    let out = d.finish(Duration::from_secs(10));
    let e = last_entry(&r, "kill");
    assert_eq!(text(&e, "outcome"), "signal", "{}", out.stderr);
    assert!(text(&e, "output").ends_with("y\n"), "{e:?}");
    assert!(text(&e, "output_bytes").parse::<u64>().unwrap() >= 2000);
    assert_eq!(r.get("dlock:kill"), None, "released");
}

#[test]
fn a_reader_that_goes_away_gives_the_job_sigpipe_as_without_dlock() {
    let r = RedisServer::start();
    let mut d = dlock(&r).args([
        "-q",
        "run",
        "--key",
        "pipe",
        "--capture",
        "1KiB",
        "--",
        "yes",
    ]);
    let mut child = d
        .cmd
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 4];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"y\ny\n");
    drop(stdout);
    // `yes | head` ends at once when head goes; 10 s only guards against a hang.
    let until = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < until,
            "dlock did not end after its reader went away"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    // The job died of SIGPIPE (13): dlock exits 128 + 13, as a shell reports `yes`.
    assert_eq!(status.code(), Some(141));
    assert_eq!(r.get("dlock:pipe"), None, "released");
    let e = last_entry(&r, "pipe");
    assert_eq!(text(&e, "outcome"), "signal");
}

#[test]
fn a_stdout_nobody_reads_delays_no_renewal_stop_or_release() {
    let r = RedisServer::start();
    // dlock's stdout is a pipe the test never reads: once it is full, the copy blocks, and so
    // does the job's next write. TTL 1.5 s, one renewal: the job must be stopped at the cap
    // (exit 124) and the lock released, with the copy still blocked.
    let mut d = dlock(&r).args([
        "-q",
        "run",
        "--key",
        "stuck",
        "--ttl",
        "1500ms",
        "--max-renewals",
        "1",
        "--capture",
        "1KiB",
        "--",
        "yes",
    ]);
    let mut child = d
        .cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let held_stdout = child.stdout.take();
    let start = Instant::now();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut log = String::new();
        let _ = stderr.read_to_string(&mut log);
        log
    });
    // A release that waited for the blocked copy would never come: give up after 20 s.
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("dlock hung behind a stdout nobody reads");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = start.elapsed();
    drop(held_stdout);
    let log = reader.join().unwrap();
    assert_eq!(status.code(), Some(124), "{log}");
    // The cap's hard limit is renewals × period + TTL = 0.5 s + 1.5 s; the grace before the
    // dropped output (--grace = TTL/3 = 0.5 s) comes on top. 6 s leaves room for a loaded CI
    // machine while still failing a release that waits for the blocked copy.
    assert!(took < Duration::from_secs(6), "took {took:?}: {log}");
    assert!(log.contains("dropped"), "{log}");
    assert_eq!(r.get("dlock:stuck"), None, "released");
    let e = last_entry(&r, "stuck");
    assert_eq!(text(&e, "outcome"), "cap");
    assert_eq!(text(&e, "renewals"), "1");
}

#[test]
#[cfg_attr(
    not(dlock_test_has = "namespaces"),
    ignore = "needs root or unprivileged user namespaces (--contain)"
)]
fn capture_works_under_contain() {
    require!(Need::Namespaces);
    let r = RedisServer::start();
    dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "cont",
            "--contain",
            "--capture",
            "1KiB",
            "--",
        ])
        .args(["sh", "-c", "echo out; echo err >&2; sleep 1 & exit 4"])
        .run()
        .code(4);
    let e = last_entry(&r, "cont");
    let kept = text(&e, "output");
    assert!(kept.contains("out\n") && kept.contains("err\n"), "{kept}");
    assert_eq!(text(&e, "outcome"), "failed");
}

#[test]
fn capture_and_history_flags_are_checked_up_front() {
    let r = RedisServer::start();
    for (args, says) in [
        (&["--history", "5", "--no-stats"][..], "--no-stats"),
        (&["--capture", "1KiB", "--no-stats"], "--no-stats"),
        (&["--capture", "1KiB", "--history", "0"], "--history 0"),
        (&["--capture", "1000"], "1KiB"),
        (&["--capture", "2MiB"], "1MiB"),
        (&["--capture", "lots"], "16KiB"),
        (&["--history", "10001"], "--history"),
    ] {
        let out = dlock(&r)
            .args(["run", "--key", "flags"])
            .args(args)
            .args(["--", "true"])
            .run();
        out.code(2).one_line_error().stderr_has(says);
    }
    // --history 0 --no-stats and --no-stats alone are fine: no log asked for.
    dlock(&r)
        .args([
            "run",
            "--key",
            "flags",
            "--no-stats",
            "--history",
            "0",
            "--",
            "true",
        ])
        .run()
        .code(0);
    assert_eq!(r.cmd_string(&["EXISTS", "{dlock:flags}:runs"]), "0");
}

#[test]
fn history_n_keeps_exactly_n_entries_and_zero_keeps_none() {
    let r = RedisServer::start();
    for _ in 0..5 {
        dlock(&r)
            .args(["-q", "run", "--key", "n3", "--history", "3", "--", "true"])
            .run()
            .code(0);
    }
    assert_eq!(r.cmd_string(&["XLEN", "{dlock:n3}:runs"]), "3");
    dlock(&r)
        .args(["-q", "run", "--key", "n0", "--history", "0", "--", "true"])
        .run()
        .code(0);
    assert_eq!(r.cmd_string(&["EXISTS", "{dlock:n0}:runs"]), "0");
    // The stats still count the run, and its history record is there.
    assert_eq!(
        r.cmd_string(&["HGET", "{dlock:n0}:stats", "last_outcome"]),
        "ok"
    );
}

#[test]
fn a_damaged_run_log_never_fails_a_run() {
    let r = RedisServer::start();
    r.cmd(&["SET", "{dlock:dmg}:runs", "not a stream"]);
    let out = dlock(&r).args(["run", "--key", "dmg", "--", "true"]).run();
    out.code(0).stderr_has("not a stream");
    let warnings = out.stderr.lines().filter(|l| l.contains("run log")).count();
    assert_eq!(warnings, 1, "{}", out.stderr);
    assert_eq!(r.get("dlock:dmg"), None, "released");
    assert_eq!(
        r.cmd_string(&["HGET", "{dlock:dmg}:stats", "last_outcome"]),
        "ok"
    );
}

#[test]
fn a_capped_run_is_logged_with_its_outcome_and_renewals() {
    let r = RedisServer::start();
    dlock(&r)
        .args([
            "-q",
            "run",
            "--key",
            "capd",
            "--ttl",
            "600ms",
            "--max-renewals",
            "0",
        ])
        .args(["--", "sleep", "5"])
        .run()
        .code(124);
    let e = last_entry(&r, "capd");
    assert_eq!(text(&e, "outcome"), "cap");
    assert_eq!(text(&e, "exit_code"), "124");
    assert_eq!(text(&e, "renewals"), "0");
    // The fence is the server's counter.
    assert_eq!(
        text(&e, "fence"),
        r.cmd_string(&["GET", "{dlock:capd}:fence"])
    );
}

/// Every command a client other than the monitor sends while one uncontended run happens,
/// from the server's MONITOR feed (script-internal calls, shown as `[0 lua]`, left out).
pub(crate) fn client_commands_during(r: &RedisServer, run: impl FnOnce()) -> Vec<String> {
    r.monitor_during(run)
        .iter()
        .filter(|line| !line.contains(" lua]"))
        .map(|line| line.split('"').nth(1).unwrap_or_default().to_lowercase())
        .collect()
}

#[test]
fn an_uncontended_run_with_its_log_and_capture_is_two_client_commands() {
    let r = RedisServer::start();
    let run = || {
        dlock(&r)
            .args(["-q", "run", "--key", "two", "--capture", "1KiB", "--"])
            .args(["echo", "hi"])
            .run()
            .code(0);
    };
    // The first run loads the scripts (EVALSHA → NOSCRIPT → EVAL); count a warm one.
    run();
    let seen = client_commands_during(&r, run);
    assert_eq!(seen, ["evalsha", "evalsha"], "{seen:?}");
    assert_eq!(r.cmd_string(&["XLEN", "{dlock:two}:runs"]), "2");
}
