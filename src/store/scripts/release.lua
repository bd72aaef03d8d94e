-- Compare-and-delete our slot, wake one waiter, count the run and log it; with --every, a
-- success records its grant and, for a calendar, its window's end (and, the key's first, its
-- period: every_ms and offset_ms, or schedule and tz) in the done key.
-- KEYS: the slot's lock key, its holder hash, stats, wake, limit, runs, done, then the lock key
--   of every slot 0 … N-1 (the limit key goes with the last held slot), then the timeline,
--   then per --also key X_j: its wake list, its limit, its M slot lock keys and M holder hashes,
--   then the run's word key for `dlock cancel` ({KEY}:ended:TOKEN).
-- ARGV: token, stats ('1'/'0'), keep ms (--hold-at-least: > 0 keeps the slot that much longer
--   instead of deleting it), hold ms, histogram field, outcome counter ('' for none), N, then
--   A (--also keys), M (--also-limit) and known lost ('1': the run's lease was lost, so it stays
--   'lost' and no compare failure is counted), then
--   the history: outcome (ok, failed, signal, cap), exit code, host, pid, started and ended
--   (Unix ms). A compare failure is recorded as outcome compare_failure (exit 0 becomes 125).
--   Then the run log: entries to keep (--history; 0 = none), and the entry's fields from
--   the 18th ARGV on: run id, host, pid, slot, fence, command, started, ended, renewals, waited ms,
--   the lease (TTL ms, max renewals or 'unlimited', renew-every ms, grace ms; '' unknown),
--   --every window start ('' without --every), cancelled by and why ('' unless cancelled),
--   the id of the cancel request the run took ('' none), the --also keys (DLOCK_ALSO's text; '' without --also), output bytes ('' without
--   --capture), and the kept output (only with --capture).
--   With --also every X_j slot holding our token is freed (and its list woken) whether KEY's
--   slot is ours or not: the lost-reply cleanup needs no slot numbers. The run's set was ours
--   only if every key was: otherwise the answer is 0 (the job may have run without an X).
--   A kept holder hash is marked `kept` '1': no process holds the lock any more, so `dlock
--   cancel` frees it itself instead of asking a holder that is gone.
-- Returns {1 released, 2 kept for ARGV[3] ms, 0 not ours (or gone); '' or why the run log
--   could not be written}, and with --also a third item: the first X_j not ours (-1: none).
--   When the run took a cancel request or was asked to stop (cancel.lua's mark), the holder's
--   word for `dlock cancel` goes in the word key (lib.lua's speak) in this same script.
local n = tonumber(ARGV[7])
local A, M, known_lost = tonumber(ARGV[8]) or 0, tonumber(ARGV[9]) or 1, ARGV[10] == '1'
local ours = redis.call('GET', KEYS[1]) == ARGV[1]
-- --also: each X_j's slot holding our token (mine[j]; its keys from KEYS[xb(j)]), and the
-- first X_j without one.
local function xb(j) return 9 + n + (j - 1) * (2 + 2 * M) end
local mine, lost = {}, -1
for j = 1, A do
  for i = 0, M - 1 do
    if redis.call('GET', KEYS[xb(j) + 2 + i]) == ARGV[1] then mine[j] = i end
  end
  if not mine[j] and lost < 0 then lost = j end
end
local all = ours and lost < 0
-- --every: a success while the lock was still ours records the server time of its grant
-- (the holder's granted_ms: a run belongs to the window its lock was granted in, however long
-- it ran), unless a later success is already recorded; the key's first success also records
-- its period, which binds every later try (acquire.lua). Strict, like the fence, and first: a
-- done key of another type stops the script before the lock is touched.
local window = entry_field(18, 'window_ms')
if all and window ~= '' and ARGV[11] == 'ok' then
  local g = redis.pcall('HMGET', KEYS[2], 'granted_ms', 'every_ms', 'offset_ms', 'schedule', 'tz',
    'window_end_ms')
  if type(g) ~= 'table' or g.err then g = {} end
  local granted = tonumber(g[1]) or tonumber(window)
  local prev = redis.call('HMGET', KEYS[7], 'granted_ms', 'window_ms')
  local last = last_success(prev[1], prev[2])
  if granted > last then
    local fields = {{'window_ms', window}, {'granted_ms', ms_string(granted)},
      {'done_ms', ms_string(server_ms())}, {'run', entry_field(18, 'run')}, {'host', ARGV[13]}}
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
  if tonumber(ARGV[3]) > 0 and all then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
    redis.pcall('HSET', KEYS[2], 'kept', '1')
    if n > 1 then hold_limit(KEYS[5], n, ARGV[3]) end
    -- --hold-at-least keeps the whole set, and only a whole one.
    for j = 1, A do
      local b, s = xb(j), mine[j]
      redis.call('PEXPIRE', KEYS[b + 2 + s], ARGV[3])
      redis.call('PEXPIRE', KEYS[b + 2 + M + s], ARGV[3])
      redis.pcall('HSET', KEYS[b + 2 + M + s], 'kept', '1')
      if M > 1 then hold_limit(KEYS[b + 1], M, ARGV[3]) end
    end
    r = 2
  else
    redis.call('DEL', KEYS[1], KEYS[2])
    wake(KEYS[4], n)
    r = 1
  end
end
if n > 1 and r ~= 2 then drop_limit_if_free(KEYS[5], 8, n) end
-- --also: every X_j slot of ours goes (unless kept above), each freed X_j wakes its waiter —
-- but not from a slot that is not ours while another --key slot holds our token (a lost
-- reply's cleanup trying each slot of a --limit N key, or a retried release after a late
-- grant): that slot's own release frees the set, so it is freed whole or not at all.
local elsewhere = false
if A > 0 and not ours then
  for i = 0, n - 1 do
    if redis.call('GET', KEYS[8 + i]) == ARGV[1] then elsewhere = true end
  end
end
if r ~= 2 and not elsewhere then
  for j = 1, A do
    local b, s = xb(j), mine[j]
    if s then
      redis.call('DEL', KEYS[b + 2 + s], KEYS[b + 2 + M + s])
      wake(KEYS[b], M)
    end
    if M > 1 then drop_limit_if_free(KEYS[b + 1], b + 2, M) end
  end
end
if not all then r = 0 end
local failed = r == 0 and not known_lost
local outcome, code = ARGV[11], ARGV[12]
if failed then
  outcome = 'compare_failure'
  if code == '0' then code = '125' end
end
speak(KEYS[#KEYS], entry_field(18, 'cancel_id'), outcome, code)
local logged = ''
if ARGV[2] == '1' then
  record(KEYS[3], ARGV[4], ARGV[5], ARGV[6], failed)
  history(KEYS[3], outcome, code, ARGV[13], ARGV[14], ARGV[15], ARGV[16])
  -- The key's N, for status and metrics once no slot is held.
  redis.pcall('HSET', KEYS[3], 'limit', n)
  logged = log_run(KEYS[3], KEYS[6], KEYS[8 + n], ARGV[17], outcome, code, entry_from(18))
end
if A > 0 then return {r, logged, lost} end
return {r, logged}
