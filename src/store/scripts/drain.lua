-- `dlock drain` and `dlock undrain`: start or end a host's drain, on the server's clock. A
-- drained host starts no new run of any key under the prefix: acquire.lua reads its entry and
-- answers as for a pause, scope 'host'; the other hosts go on (and take its --every periods).
-- KEYS: the prefix-wide drain record ({PREFIX}:drain, a hash: host -> 'from ms \n by \n
--   reason'). ARGV (by name below): 'drain' or 'undrain', the host, by ('host (user)'), reason.
-- Returns {1, from ms, by, reason, 1 when it was drained already (its entry replaced)} for a
-- drain; {1, from ms, by, reason} for an undrain that ended one, {0} when the host was not
-- drained.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_drain = KEYS[1]
local arg_action = ARGV[1]
local arg_host = ARGV[2]
local arg_by = ARGV[3]
local arg_reason = ARGV[4]
-- (end of KEYS and ARGV)
local cur = redis.call('HGET', key_drain, arg_host)
local from, by, reason = '', '', ''
if cur then
  from, by, reason = string.match(cur, '^([^\n]*)\n([^\n]*)\n(.*)$')
end
if arg_action == 'undrain' then
  if not cur then return {0} end
  redis.call('HDEL', key_drain, arg_host)
  return {1, from or '', by or '', reason or ''}
end
local at = ms_string(server_ms())
redis.call('HSET', key_drain, arg_host, at .. '\n' .. arg_by .. '\n' .. arg_reason)
return {1, at, arg_by, arg_reason, cur and 1 or 0}
