#!/usr/bin/env bash
# End-to-end demo on a fresh machine: builds dlock, starts a throwaway redis-server on a Unix
# socket, and shows what dlock does for jobs scheduled on several "hosts" at once.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "demo: installing redis-server"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  else
    echo "demo: redis-server is missing: sudo apt-get install redis-server" >&2
    exit 1
  fi
fi

cargo build --quiet --locked
dlock=$PWD/target/debug/dlock

tmp=$(mktemp -d)
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no \
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
redis-cli -s "$tmp/redis.sock" SET dlock:stolen intruder PX 10000 >/dev/null
wait $!
echo "exit status: $?"
set -e

step "5. what the server remembers: holders, failure rate, hold times, recommended TTL"
"$dlock" status
