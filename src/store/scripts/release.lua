-- Compare-and-delete our slot, wake one waiter, count the run and log it; with --every, a
-- success records its grant and, for a calendar, its window's end (and, the key's first, its
-- period: every_ms and offset_ms, or schedule and tz) in the done key.
-- KEYS: the slot's lock key, its holder hash, stats, wake, limit, runs, done, then the lock key
--   of every slot 0 … N-1 (the limit key goes with the last held slot), then the timeline.
-- ARGV: token, stats ('1'/'0'), keep ms (--hold-at-least: > 0 keeps the slot that much longer
--   instead of deleting it), hold ms, histogram field, outcome counter ('' for none), N, then
--   the history: outcome (ok, failed, signal, cap), exit code, host, pid, started and ended
--   (Unix ms). A compare failure is recorded as outcome compare_failure (exit 0 becomes 125).
--   Then the run log: entries to keep (--history; 0 = none), and the entry's fields from
--   the 15th ARGV on: run id, host, pid, slot, fence, command, started, ended, renewals, waited ms,
--   the lease (TTL ms, max renewals or 'unlimited', renew-every ms, grace ms; '' unknown),
--   --every window start ('' without --every), cancelled by and why ('' unless cancelled),
--   output bytes ('' without --capture), and the kept output (only with --capture).
--   A kept holder hash is marked `kept` '1': no process holds the lock any more, so `dlock
--   cancel` frees it itself instead of asking a holder that is gone.
-- Returns {1 released, 2 kept for ARGV[3] ms, 0 not ours (or gone); '' or why the run log
--   could not be written}.
local n = tonumber(ARGV[7])
local ours = redis.call('GET', KEYS[1]) == ARGV[1]
-- --every: a success while the lock was still ours records the server time of its grant
-- (the holder's granted_ms: a run belongs to the window its lock was granted in, however long
-- it ran), unless a later success is already recorded; the key's first success also records
-- its period, which binds every later try (acquire.lua). Strict, like the fence, and first: a
-- done key of another type stops the script before the lock is touched.
local window = entry_field(15, 'window_ms')
if ours and window ~= '' and ARGV[8] == 'ok' then
  local g = redis.pcall('HMGET', KEYS[2], 'granted_ms', 'every_ms', 'offset_ms', 'schedule', 'tz',
    'window_end_ms')
  if type(g) ~= 'table' or g.err then g = {} end
  local granted = tonumber(g[1]) or tonumber(window)
  local prev = redis.call('HMGET', KEYS[7], 'granted_ms', 'window_ms')
  local last = last_success(prev[1], prev[2])
  if granted > last then
    local fields = {{'window_ms', window}, {'granted_ms', ms_string(granted)},
      {'done_ms', ms_string(server_ms())}, {'run', entry_field(15, 'run')}, {'host', ARGV[10]}}
    -- The first success's period is the key's: the other kind's fields go (a try of the other
    -- kind before any success wrote its own, for status and check; left beside this one, it
    -- would pass acquire.lua's check as the key's period too).
    if last < 0 and g[2] and g[3] then
      fields[#fields + 1] = {'every_ms', g[2]}
      fields[#fields + 1] = {'offset_ms', g[3]}
      redis.call('HDEL', KEYS[7], 'schedule', 'tz')
    end
    -- A calendar's window has its own end (windows of unequal length), and its schedule.
    if g[6] then fields[#fields + 1] = {'window_end_ms', g[6]} end
    if last < 0 and g[4] and g[5] then
      fields[#fields + 1] = {'schedule', g[4]}
      fields[#fields + 1] = {'tz', g[5]}
      redis.call('HDEL', KEYS[7], 'every_ms', 'offset_ms')
    end
    for _, kv in ipairs(fields) do
      redis.call('HSET', KEYS[7], kv[1], kv[2])
    end
  end
end
local r = 0
if ours then
  if tonumber(ARGV[3]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
    redis.pcall('HSET', KEYS[2], 'kept', '1')
    if n > 1 then hold_limit(KEYS[5], n, ARGV[3]) end
    r = 2
  else
    redis.call('DEL', KEYS[1], KEYS[2])
    wake(KEYS[4], n)
    r = 1
  end
end
if n > 1 and r ~= 2 then drop_limit_if_free(KEYS[5], 8, n) end
local logged = ''
if ARGV[2] == '1' then
  record(KEYS[3], ARGV[4], ARGV[5], ARGV[6], r == 0)
  local outcome, code = ARGV[8], ARGV[9]
  if r == 0 then
    outcome = 'compare_failure'
    if code == '0' then code = '125' end
  end
  history(KEYS[3], outcome, code, ARGV[10], ARGV[11], ARGV[12], ARGV[13])
  -- The key's N, for status and metrics once no slot is held.
  redis.pcall('HSET', KEYS[3], 'limit', n)
  logged = log_run(KEYS[3], KEYS[6], KEYS[8 + n], ARGV[14], outcome, code, entry_from(15))
end
return {r, logged}
