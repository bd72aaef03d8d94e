-- Change a key's recorded --every period on purpose (`dlock release KEY --every D`): from now
-- on tries with D run and tries with the old period are refused (acquire.lua). The last
-- success stays recorded, so the window of D that holds its grant stays done: a change never
-- runs a window twice. Before a key's first success there is nothing to change: that success
-- records the period it ran with (release.lua). Strict, like the fence: a done key of another
-- type stops the script.
-- KEYS: the done key. ARGV (by name below): the period and the offset, in ms ('0' for a calendar), then a
-- calendar's schedule and zone ('' for a duration): a record holds one kind or the other.
-- Returns {0} when KEY has no --every record, {1} when it has no success yet (nothing changed
-- either way), else {2, the old period ms, the old offset ms, the last success's grant (server
-- ms), its run id, its host, the old schedule, the old zone} ('' where the record had none).
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_done = KEYS[1]
local arg_every_ms = ARGV[1]
local arg_offset_ms = ARGV[2]
local arg_schedule = ARGV[3]
local arg_tz = ARGV[4]
-- (end of KEYS and ARGV)
if redis.call('EXISTS', key_done) == 0 then return {0} end
local d = redis.call('HMGET', key_done, 'every_ms', 'offset_ms', 'granted_ms', 'window_ms', 'run',
  'host', 'schedule', 'tz')
local last = last_success(d[3], d[4])
if last < 0 then return {1} end
if (arg_schedule or '') == '' then
  if d[7] or d[8] then redis.call('HDEL', key_done, 'schedule', 'tz', 'window_end_ms') end
  redis.call('HSET', key_done, 'every_ms', arg_every_ms)
  redis.call('HSET', key_done, 'offset_ms', arg_offset_ms)
else
  if d[1] or d[2] then redis.call('HDEL', key_done, 'every_ms', 'offset_ms') end
  redis.call('HSET', key_done, 'schedule', arg_schedule)
  redis.call('HSET', key_done, 'tz', arg_tz)
end
return {2, d[1] or '', d[2] or '', ms_string(last), d[5] or '', d[6] or '', d[7] or '', d[8] or ''}
