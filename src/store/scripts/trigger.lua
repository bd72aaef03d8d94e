-- `dlock trigger KEY`: the next try of KEY's --every on any host runs although its window is
-- done, once: acquire.lua consumes the trigger with the grant it lets through, and busy and
-- pause apply to that try as to any. Kept in the done record (trigger_ms, trigger_by,
-- trigger_reason) on the server's clock: no new key, so no new ACL pattern, and an older dlock
-- that does not read it only runs less (the window stays done for it).
-- KEYS: the done key. ARGV (by name below): by ('host (user)'), reason.
-- Returns {0} when KEY has no --every record (nothing to trigger); else {1, server ms, the last
-- success's grant (server ms; -1: none yet), 1 when a trigger was pending already (replaced)}.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_done = KEYS[1]
local arg_by = ARGV[1]
local arg_reason = ARGV[2]
-- (end of KEYS and ARGV)
if redis.call('EXISTS', key_done) == 0 then return {0} end
local d = redis.call('HMGET', key_done, 'every_ms', 'schedule', 'granted_ms', 'window_ms',
  'trigger_ms')
if not d[1] and not d[2] then return {0} end
local now = server_ms()
redis.call('HSET', key_done, 'trigger_ms', ms_string(now), 'trigger_by', arg_by, 'trigger_reason',
  arg_reason)
return {1, now, last_success(d[3], d[4]), d[5] and 1 or 0}
