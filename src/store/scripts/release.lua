-- Compare-and-delete our slot, wake one waiter, count the run and log it; with --every, a
-- success records its grant and, for a calendar, its window's end (and, the key's first, its
-- period: every_ms and offset_ms, or schedule and tz) in the done key.
-- KEYS: the slot's lock key, its holder hash, stats, wake, limit, runs, done, then the lock key
--   of every slot 0 … N-1 (the limit key goes with the last held slot), then the timeline,
--   then per --also key X_j: its wake list, its limit, its M slot lock keys and M holder hashes,
--   then the run's word key for `dlock cancel` ({KEY}:ended:TOKEN).
-- ARGV (by name below; src/store/script/args.rs, Release, says what each holds): the token, the
--   stats, --hold-at-least's keep ms, N, --also's A and M, whether the lease is known lost, the
--   history (outcome ok, failed, signal or cap, exit code, host, pid, started and ended), the
--   run-log entries to keep, then the entry's fields from arg_rest on (lib.lua's entry_from).
--   A compare failure is recorded as outcome compare_failure (exit 0 becomes 125).
--   With --also every X_j slot holding our token is freed (and its list woken) whether KEY's
--   slot is ours or not: the lost-reply cleanup needs no slot numbers. The run's set was ours
--   only if every key was: otherwise the answer is 0 (the job may have run without an X).
--   A kept holder hash is marked `kept` '1': no process holds the lock any more, so `dlock
--   cancel` frees it itself instead of asking a holder that is gone.
-- Returns {1 released, 2 kept for arg_keep_ms, 0 not ours (or gone); '' or why the run log
--   could not be written}, and with --also a third item: the first X_j not ours (-1: none).
--   When the run took a cancel request or was asked to stop (cancel.lua's mark), the holder's
--   word for `dlock cancel` goes in the word key (lib.lua's speak) in this same script.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_lock = KEYS[1]
local key_holder = KEYS[2]
local key_stats = KEYS[3]
local key_wake = KEYS[4]
local key_limit = KEYS[5]
local key_runs = KEYS[6]
local key_done = KEYS[7]
local key_rest = 8
local arg_token = ARGV[1]
local arg_stats = ARGV[2]
local arg_keep_ms = ARGV[3]
local arg_hold_ms = ARGV[4]
local arg_bucket = ARGV[5]
local arg_counter = ARGV[6]
local arg_limit = ARGV[7]
local arg_also_count = ARGV[8]
local arg_also_limit = ARGV[9]
local arg_known_lost = ARGV[10]
local arg_outcome = ARGV[11]
local arg_code = ARGV[12]
local arg_host = ARGV[13]
local arg_pid = ARGV[14]
local arg_started_ms = ARGV[15]
local arg_ended_ms = ARGV[16]
local arg_history = ARGV[17]
local arg_rest = 18
-- (end of KEYS and ARGV)
local n = tonumber(arg_limit)
local A, M, known_lost = tonumber(arg_also_count) or 0, tonumber(arg_also_limit) or 1, arg_known_lost == '1'
local ours = redis.call('GET', key_lock) == arg_token
-- --also: each X_j's slot holding our token (mine[j]; its keys from KEYS[xb(j)]), and the
-- first X_j without one.
local function xb(j) return key_rest + 1 + n + (j - 1) * (2 + 2 * M) end
local mine, lost = {}, -1
for j = 1, A do
  for i = 0, M - 1 do
    if redis.call('GET', KEYS[xb(j) + 2 + i]) == arg_token then mine[j] = i end
  end
  if not mine[j] and lost < 0 then lost = j end
end
local all = ours and lost < 0
-- --every: a success while the lock was still ours records the server time of its grant
-- (the holder's granted_ms: a run belongs to the window its lock was granted in, however long
-- it ran), unless a later success is already recorded; the key's first success also records
-- its period, which binds every later try (acquire.lua). Strict, like the fence, and first: a
-- done key of another type stops the script before the lock is touched.
local window = entry_field(arg_rest, 'window_ms')
if all and window ~= '' and arg_outcome == 'ok' then
  local g = redis.pcall('HMGET', key_holder, 'granted_ms', 'every_ms', 'offset_ms', 'schedule', 'tz',
    'window_end_ms')
  if type(g) ~= 'table' or g.err then g = {} end
  local granted = tonumber(g[1]) or tonumber(window)
  local prev = redis.call('HMGET', key_done, 'granted_ms', 'window_ms')
  local last = last_success(prev[1], prev[2])
  if granted > last then
    local fields = {{'window_ms', window}, {'granted_ms', ms_string(granted)},
      {'done_ms', ms_string(server_ms())}, {'run', entry_field(arg_rest, 'run')}, {'host', arg_host}}
    -- The first success's period is the key's: the other kind's fields go (a try of the other
    -- kind before any success wrote its own, for status and check; left beside this one, it
    -- would pass acquire.lua's check as the key's period too).
    if last < 0 and g[2] and g[3] then
      fields[#fields + 1] = {'every_ms', g[2]}
      fields[#fields + 1] = {'offset_ms', g[3]}
      redis.call('HDEL', key_done, 'schedule', 'tz')
    end
    -- A calendar's window has its own end (windows of unequal length), and its schedule.
    if g[6] then fields[#fields + 1] = {'window_end_ms', g[6]} end
    if last < 0 and g[4] and g[5] then
      fields[#fields + 1] = {'schedule', g[4]}
      fields[#fields + 1] = {'tz', g[5]}
      redis.call('HDEL', key_done, 'every_ms', 'offset_ms')
    end
    local hf = {'HSET', key_done, 'version', entry_field(arg_rest, 'version'), 'format',
      entry_field(arg_rest, 'format')}
    for _, kv in ipairs(fields) do
      hf[#hf + 1] = kv[1]
      hf[#hf + 1] = kv[2]
    end
    redis.call(unpack(hf))
  end
end
-- A run `dlock trigger` let through (acquire.lua kept the trigger in the holder hash): its
-- run-log entry says so. Read before the hash goes.
local trigger = window ~= '' and ours and redis.pcall('HGET', key_holder, 'trigger')
local r = 0
if ours then
  if tonumber(arg_keep_ms) > 0 and all then
    redis.call('PEXPIRE', key_lock, arg_keep_ms)
    redis.call('PEXPIRE', key_holder, arg_keep_ms)
    redis.pcall('HSET', key_holder, 'kept', '1')
    if n > 1 then hold_limit(key_limit, n, arg_keep_ms) end
    -- --hold-at-least keeps the whole set, and only a whole one.
    for j = 1, A do
      local b, s = xb(j), mine[j]
      redis.call('PEXPIRE', KEYS[b + 2 + s], arg_keep_ms)
      redis.call('PEXPIRE', KEYS[b + 2 + M + s], arg_keep_ms)
      redis.pcall('HSET', KEYS[b + 2 + M + s], 'kept', '1')
      if M > 1 then hold_limit(KEYS[b + 1], M, arg_keep_ms) end
    end
    r = 2
  else
    redis.call('DEL', key_lock, key_holder)
    wake(key_wake, n)
    r = 1
  end
end
if n > 1 and r ~= 2 then drop_limit_if_free(key_limit, key_rest, n) end
-- --also: every X_j slot of ours goes (unless kept above), each freed X_j wakes its waiter —
-- but not from a slot that is not ours while another --key slot holds our token (a lost
-- reply's cleanup trying each slot of a --limit N key, or a retried release after a late
-- grant): that slot's own release frees the set, so it is freed whole or not at all.
local elsewhere = false
if A > 0 and not ours then
  for i = 0, n - 1 do
    if redis.call('GET', KEYS[key_rest + i]) == arg_token then elsewhere = true end
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
local outcome, code = arg_outcome, arg_code
if failed then
  outcome = 'compare_failure'
  if code == '0' then code = '125' end
end
speak(KEYS[#KEYS], entry_field(arg_rest, 'cancel_id'), outcome, code)
local logged = ''
if arg_stats == '1' then
  record(key_stats, arg_hold_ms, arg_bucket, arg_counter, failed)
  history(key_stats, outcome, code, arg_host, arg_pid, arg_started_ms, arg_ended_ms)
  -- The key's N, for status and metrics once no slot is held.
  redis.pcall('HSET', key_stats, 'limit', n)
  local e = entry_from(arg_rest)
  if type(trigger) == 'string' then
    e[#e + 1] = 'trigger'
    e[#e + 1] = trigger
  end
  logged = log_run(key_stats, key_runs, KEYS[key_rest + n], arg_history, outcome, code, e)
end
if A > 0 then return {r, logged, lost} end
return {r, logged}
