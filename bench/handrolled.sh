#!/bin/sh
# The pattern most people hand-roll (the article's): SET key uuid NX PX, run, Lua compare-and-delete.
# Usage: handrolled.sh PORT KEY COMMAND [ARG...]
port=$1 key=$2
shift 2
token=$(cat /proc/sys/kernel/random/uuid)
[ "$(redis-cli -p "$port" SET "$key" "$token" NX PX 30000)" = OK ] || exit 75
"$@"
status=$?
redis-cli -p "$port" EVAL "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end" 1 "$key" "$token" >/dev/null
exit $status
