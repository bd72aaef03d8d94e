#!/bin/sh
# The fencing token as the real backstop: a write guarded by WHERE fence < $DLOCK_FENCE.
#
#   dlock run --key ledger -- examples/fenced-write.sh ledger.db 10
#
# DLOCK_FENCE strictly increases with every acquisition of the key. A holder that lost its lock
# without knowing it (a GC pause, a frozen VM, a Redis failover) carries an older fence than
# whoever holds the lock now, so its write matches no row and is refused instead of landing.
set -eu
db=$1
amount=$2
: "${DLOCK_FENCE:?run me under dlock run, which sets DLOCK_FENCE}"

sqlite3 "$db" "CREATE TABLE IF NOT EXISTS ledger (
                 id INTEGER PRIMARY KEY CHECK (id = 1),
                 balance INTEGER NOT NULL,
                 fence INTEGER NOT NULL);
               INSERT OR IGNORE INTO ledger VALUES (1, 0, 0);"

# One statement: the compare (fence) and the write happen atomically in the database.
changed=$(sqlite3 "$db" "UPDATE ledger SET balance = balance + $amount, fence = $DLOCK_FENCE
                           WHERE id = 1 AND fence < $DLOCK_FENCE;
                         SELECT changes();")
if [ "$changed" = 0 ]; then
  echo "fenced-write: fence $DLOCK_FENCE is stale (a later lock holder already wrote); refusing" >&2
  exit 3
fi
echo "fenced-write: balance += $amount under fence $DLOCK_FENCE"
