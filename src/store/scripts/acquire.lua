-- Acquire one of the key's N slots (N = --limit; 1 is the plain lock, whose one slot is the
-- lock key itself), or re-confirm ours after a lost reply (the same token is retried).
-- KEYS: fence, stats, limit, done, pause, then slot 0's lock key and holder hash, slot 1's, …
--   slot N-1's, then (after the --also blocks, below) the waiter registry, then the prefix-wide
--   pause record (absent under Redis Cluster, where it lives
--   in another hash slot: the client reads it first and sends its fields as arg_fleet_*).
-- ARGV: by name, below the header (src/store/script/args.rs, Acquire, says what each holds).
-- Returns {1, fence, '', slot, window} when a slot is ours (window: the start of the --every
-- window the run belongs to, -1 without --every); {0, pttl, 'host pid N', -1, -1} when every
-- slot is held (pttl: the soonest one frees; who: its holder, '' if not a dlock, with
-- ' (run of K)' when it holds the key as another run's --also key); {-1, M, '',
-- -1, -1} when KEY is in use with another --limit M (nothing changed); {2, window, 'done ms
-- \n run \n host', -1, -1} when the current --every window already has a success (nothing
-- changed but the not-due counter); {3, every ms, 'offset ms \n last grant ms \n run \n host',
-- -1, -1} when KEY's recorded --every period or offset is another (nothing changed); {4, until
-- ms (0: until resumed), 'key|all \n by \n reason \n from ms', -1, -1} when KEY or every key
-- under the prefix is paused (nothing changed but the paused counter); {5, server ms, the sent
-- starts, -1, -1} when the server's clock is in none of a calendar's sent windows (nothing
-- changed); {7, window, 'KEY's last success granted ms' ('' for none), -1, -1} when --after KEY
-- has no success granted inside the current window yet (nothing changed but the not-due
-- counter and the done record's period and `after`). Answer 3's text goes on with the recorded schedule
-- and zone ('' for a duration).
-- arg_renew_ms, recorded in each holder hash (`renew_ms`), bounds how long `dlock cancel`
-- gives a holder to answer. arg_retry_ms: how long after this try's send the run tries again
-- at the latest: a busy answer (but on the last try) keeps the run in KEY's waiter registry, the hash
-- `{KEY}:waiting` (KEYS: after the slots and the --also blocks, before the prefix-wide pause),
-- token → the Unix ms (the waiter's clock) until which it counts as waiting; a grant or a last
-- try takes it out, and an entry past its time is dropped by the next busy answer. `dlock
-- cancel` of a key nothing holds counts them ('' : none kept).
-- --also (arg_also_count A, arg_also_limit M, and arg_woken, the wake list the try was woken by;
-- A = 0 is the plain run, its KEYS, ARGV and answers as above). All
-- or nothing: KEY and every X_j are taken in this one script or none is. KEYS then go on after
-- the slots with KEY's wake list and, per X_j, its fence, limit, pause, wake list, its M slot
-- lock keys and its M holder hashes (the prefix-wide pause last). Every answer gains item 6:
-- which key it is about (0: KEY, j: X_j; -1 for a grant). A grant goes on with each X_j's
-- fence and slot; a busy answer with whether the wake-up this try was woken by was handed on
-- (0/1), then every blocking key's index (pttl: the longest of the blockers' soonest frees;
-- who: the first blocker's holder, with ' (run of K)' when it holds it for another run).
-- Reservations (issue 62: a run that needs several keys must not starve beside runs that
-- need one). KEYS after the waiter registry: each set key's reservations `{K}:reserve`, KEY's
-- first, then the prefix-wide pause. arg_first_ms: the run's first try. A busy --also try
-- (not the last) enters the run in each key's reservations, a hash of token -> 'first ms \t
-- until ms \t who' (until: the server's time + arg_retry_ms + 1 s, so a waiter that dies leaves by
-- itself). The oldest live entry keeps one slot of the key from every try of a run that first
-- tried later, plain or not; older runs pass. A grant, a last try and a refusal drop the run's
-- entries. A try held back only by a reservation pushes the reserving run's own turn list on
-- that key (`{K}:turn:TOKEN`, named after `{K}:reserve`, in its hash slot), which its waker
-- listens on (the release's wake-up it took was
-- that run's). The bound: once its busy answer is in, no run that first tried later takes the
-- last free slot of a key of its set.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_fence = KEYS[1]
local key_stats = KEYS[2]
local key_limit = KEYS[3]
local key_done = KEYS[4]
local key_pause = KEYS[5]
local key_rest = 6
local arg_token = ARGV[1]
local arg_ttl_ms = ARGV[2]
local arg_stats = ARGV[3]
local arg_host = ARGV[4]
local arg_pid = ARGV[5]
local arg_command = ARGV[6]
local arg_since_ms = ARGV[7]
local arg_last_try = ARGV[8]
local arg_limit = ARGV[9]
local arg_every_ms = ARGV[10]
local arg_offset_ms = ARGV[11]
local arg_fleet_from_ms = ARGV[12]
local arg_fleet_until_ms = ARGV[13]
local arg_fleet_by = ARGV[14]
local arg_fleet_reason = ARGV[15]
local arg_schedule = ARGV[16]
local arg_tz = ARGV[17]
local arg_starts = ARGV[18]
local arg_also_count = ARGV[19]
local arg_also_limit = ARGV[20]
local arg_woken = ARGV[21]
local arg_renew_ms = ARGV[22]
local arg_retry_ms = ARGV[23]
local arg_typed_schedule = ARGV[24]
local arg_typed_tz = ARGV[25]
local arg_first_ms = ARGV[26]
local arg_version = ARGV[27]
local arg_format = ARGV[28]
local arg_drain = ARGV[29]
local arg_after = ARGV[30]
-- (end of KEYS and ARGV)
local n = tonumber(arg_limit)
local function lock(i) return KEYS[key_rest + 2 * i] end
local function holder(i) return KEYS[key_rest + 1 + 2 * i] end
local A, M, woken = tonumber(arg_also_count) or 0, tonumber(arg_also_limit) or 1, tonumber(arg_woken or '')
-- The set: one record per key, KEY first, then each X_j, each with its keys and slots.
local set = {{lock = lock, holder = holder, n = n, wake = A > 0 and KEYS[key_rest + 2 * n]}}
for j = 1, A do
  local b = key_rest + 1 + 2 * n + (j - 1) * (4 + 2 * M)
  set[j + 1] = {lock = function(i) return KEYS[b + 4 + i] end,
    holder = function(i) return KEYS[b + 4 + M + i] end, n = M, fence = KEYS[b],
    limit = KEYS[b + 1], pause = KEYS[b + 2], wake = KEYS[b + 3]}
end

-- Delete an X's slot of ours and wake its list: what a partial set leaves is dropped.
local function drop_slot(x, i)
  redis.call('DEL', x.lock(i), x.holder(i))
  wake(x.wake, x.n)
  return false
end

-- A retry after a lost reply holds KEY's slot: it holds the set only if every X_j has a slot
-- with our token (`held[j]`). A partial set (an X freed by `release --force` since) is never
-- confirmed: what is ours is dropped and the try goes on as a new one.
local held = {}
local function also_held()
  for j = 1, A do
    local x = set[j + 1]
    for i = 0, M - 1 do
      if redis.call('GET', x.lock(i)) == arg_token then held[j] = i end
    end
    if not held[j] then return false end
  end
  return true
end
if A > 0 then
  for i = 0, n - 1 do
    if redis.call('GET', lock(i)) == arg_token and not also_held() then
      drop_slot(set[1], i)
      for j = 1, A do
        for s = 0, M - 1 do
          if redis.call('GET', set[j + 1].lock(s)) == arg_token then drop_slot(set[j + 1], s) end
        end
      end
    end
  end
end

-- The waiter registry (arg_retry_ms), and what a busy answer does to it.
local wi = key_rest + 2 * n + (A > 0 and 1 + A * (4 + 2 * M) or 0)
local waiting = KEYS[wi]
-- Reservations: set key j's reservations and turn list (j = 0: KEY).
local function reserve_key(j) return KEYS[wi + 1 + j] end
-- `{K}:turn:TOKEN` of `{K}:reserve` ('reserve' is its last 7 characters).
local function turn_key(j, token) return string.sub(reserve_key(j), 1, -8) .. 'turn:' .. token end
local first_try = tonumber(arg_first_ms or '') or tonumber(arg_since_ms)
-- The server's time for the reservations' `until` (a user without +time: this try's send, by
-- its host's clock).
local now_ms = nil
local function clock()
  if not now_ms then
    local ok, t = pcall(server_ms)
    now_ms = ok and t or tonumber(arg_since_ms)
  end
  return now_ms
end
-- Set key j's oldest live reservation: {first ms, token, who, until ms}, or nil.
local function oldest(j)
  local all = redis.call('HGETALL', reserve_key(j))
  if #all == 0 then return nil end
  local best = nil
  for i = 1, #all, 2 do
    local f, u, who = string.match(all[i + 1], '^(%d+)\t(%d+)\t(.*)$')
    f, u = tonumber(f), tonumber(u)
    if f and u and u >= clock() and
        (not best or f < best[1] or (f == best[1] and all[i] < best[2])) then
      best = {f, all[i], who, u}
    end
  end
  return best
end
-- The reservation that holds this try back on set key j: the oldest, when it is another
-- run's and that run first tried before this one.
local function reserved(j)
  local r = oldest(j)
  if not r or r[2] == arg_token then return nil end
  if r[1] < first_try or (r[1] == first_try and r[2] < arg_token) then return r end
  return nil
end
-- This run's own reservations go (a grant, a last try, a refusal).
local function unreserve()
  for j = 0, A do redis.call('HDEL', reserve_key(j), arg_token) end
end
local function still_waiting()
  if arg_last_try == '1' or (arg_retry_ms or '') == '' then
    redis.call('HDEL', waiting, arg_token)
    return
  end
  local now = tonumber(arg_since_ms)
  local w = redis.call('HGETALL', waiting)
  for i = 1, #w, 2 do
    if (tonumber(w[i + 1]) or 0) < now then redis.call('HDEL', waiting, w[i]) end
  end
  redis.call('HSET', waiting, arg_token, now + tonumber(arg_retry_ms))
  redis.call('PEXPIRE', waiting, tonumber(arg_retry_ms) + 1000)
end

-- A try woken by a key's wake-up that takes nothing hands the wake-up on when that key has a
-- free slot: a waiter that needs only it must not lose it to one that also needs a busy key.
-- A slot a reservation keeps (this run's own too) is free for nobody it would wake.
local function has_free(k, j)
  local free = 0
  for i = 0, k.n - 1 do
    if not redis.call('GET', k.lock(i)) then free = free + 1 end
  end
  return free > (oldest(j) and 1 or 0)
end
local function hand_on()
  local k = woken and set[woken + 1]
  if k and has_free(k, woken) then
    wake(k.wake, k.n)
    return 1
  end
  return 0
end
-- A no-grant answer; with --also it hands the wake-up on and names the key (j) it is about.
local function no(r, j)
  if A == 0 then return r end
  unreserve()
  hand_on()
  r[6] = j
  return r
end

-- Paused (`dlock pause`): before anything else, whatever the lock's state, no new run starts.
-- A retry after a lost reply whose first try took a slot keeps it (it is not a new run).
-- `--after KEY` (arg_after): KEY's done record comes first, then the prefix-wide keys.
local fk = wi + A + 2
local after_done = nil
if (arg_after or '') ~= '' then
  after_done = KEYS[fk]
  fk = fk + 1
end
local fleet = KEYS[fk]
local drain = KEYS[fk + 1]
local pauses = {{'key', redis.call('HMGET', key_pause, 'from_ms', 'until_ms', 'by', 'reason')}}
if fleet then
  pauses[2] = {'all', redis.call('HMGET', fleet, 'from_ms', 'until_ms', 'by', 'reason')}
elseif arg_fleet_from_ms and arg_fleet_from_ms ~= '' then
  pauses[2] = {'all', {arg_fleet_from_ms, arg_fleet_until_ms, arg_fleet_by, arg_fleet_reason}}
end
-- Drained (`dlock drain`, drain.lua): this host starts no new run under the prefix; the others
-- go on. Read here beside the prefix-wide pause (under Cluster the client read it: arg_drain).
local drained = arg_drain
if drain then drained = redis.call('HGET', drain, arg_host) end
if drained and drained ~= '' then
  local from, by, reason = string.match(drained, '^([^\n]*)\n([^\n]*)\n(.*)$')
  pauses[#pauses + 1] = {'host', {from or '0', '0', by or '', reason or ''}}
end
-- A paused --also key stops the runs that need it too.
for j = 1, A do
  local x = set[j + 1]
  pauses[#pauses + 1] = {'key', redis.call('HMGET', x.pause, 'from_ms', 'until_ms', 'by',
    'reason'), j}
end
for _, p in ipairs(pauses) do
  local until_ms = in_force(p[2])
  if until_ms then
    local ours = false
    for i = 0, n - 1 do
      if redis.call('GET', lock(i)) == arg_token then ours = true end
    end
    if not ours then
      if arg_stats == '1' then bump(key_stats, 'paused') end
      return no({4, until_ms, p[1] .. '\n' .. (p[2][3] or '') .. '\n' .. (p[2][4] or '') ..
        '\n' .. (p[2][1] or ''), -1, -1}, p[3] or 0)
    end
  end
end

-- Every run with KEY must use the same N while any slot is held. The limit key records N
-- (never for a plain lock) and lives at least as long as every slot.
local recorded = redis.call('GET', key_limit)
if recorded then
  if tonumber(recorded) ~= n then return no({-1, tonumber(recorded) or 0, '', -1, -1}, 0) end
elseif n > 1 and redis.call('EXISTS', lock(0)) == 1 then
  return no({-1, 1, '', -1, -1}, 0)
end
-- The same for each --also key and M: an X held with another --limit is refused as KEY is.
for j = 1, A do
  local x = set[j + 1]
  local xr = redis.call('GET', x.limit)
  if xr and tonumber(xr) ~= M then return no({-1, tonumber(xr) or 0, '', -1, -1}, j) end
  if not xr and M > 1 and redis.call('EXISTS', x.lock(0)) == 1 then
    return no({-1, 1, '', -1, -1}, j)
  end
end

-- --every. A key's period is the one its first success recorded (or `dlock release K --every`
-- set since): a try with another period or offset, or another calendar, is refused, like
-- another --limit (hosts that disagree would otherwise each run once per window of their own).
-- Then done is decided by time: the current window is done when the last success was granted
-- inside it (or later), whatever period that run used. The done key is strict, like the
-- fence: one of another type stops the script here, before anything is written.
-- A calendar (arg_schedule, arg_tz, and arg_starts: the window starts the client computed around
-- its own clock) has windows of unequal length: the current one is the span of the sent
-- starts that holds the server's TIME; a TIME outside them all is a host clock off by more
-- than a window, answered and never guessed.
local every, window, granted, period_fields = tonumber(arg_every_ms), -1, -1, {}
local schedule = arg_schedule or ''
if every > 0 or schedule ~= '' then
  local done = redis.call('HMGET', key_done, 'granted_ms', 'window_ms', 'every_ms', 'offset_ms',
    'done_ms', 'run', 'host', 'schedule', 'tz', 'trigger_ms', 'trigger_by', 'trigger_reason',
    'after')
  local last = last_success(done[1], done[2])
  local other
  if schedule == '' then
    other = done[3] ~= arg_every_ms or done[4] ~= arg_offset_ms
  else
    -- Text compared, in either spelling: a spelling of the same meaning that is neither (an
    -- older dlock's on another host) is answered 3, and the client tries once more in it.
    local function spelled(v, one, typed) return v == one or (typed ~= '' and v == typed) end
    other = not spelled(done[8], schedule, arg_typed_schedule or '') or
      not spelled(done[9], arg_tz, arg_typed_tz or '')
  end
  if last >= 0 and (done[3] or done[8]) and other then
    return no({3, tonumber(done[3]) or 0, (done[4] or '') .. '\n' .. ms_string(last) .. '\n' ..
      (done[6] or '') .. '\n' .. (done[7] or '') .. '\n' .. (done[8] or '') .. '\n' ..
      (done[9] or ''), -1, -1}, 0)
  end
  granted = server_ms()
  local window_end = nil
  if schedule == '' then
    window = window_of(granted, every, tonumber(arg_offset_ms))
  else
    local starts = {}
    for s in string.gmatch(arg_starts, '[^,]+') do starts[#starts + 1] = tonumber(s) end
    for i = 1, #starts - 1 do
      if starts[i] <= granted and granted < starts[i + 1] then
        window, window_end = starts[i], starts[i + 1]
      end
    end
    if not window_end then
      return no({5, granted, arg_starts, -1, -1}, 0)
    end
  end
  -- `dlock trigger` (trigger.lua): the done window runs once more; the grant consumes it. A
  -- retry after a lost reply of the grant that consumed it holds the slot already: it is that
  -- run, not a second one, so it is not answered not due.
  local trigger = done[10] and ((done[11] or '') .. '\n' .. (done[12] or ''))
  local function ours_already()
    for i = 0, n - 1 do
      if redis.call('GET', lock(i)) == arg_token then return true end
    end
    return false
  end
  if last >= window and not trigger and not ours_already() then
    if arg_stats == '1' then bump(key_stats, 'not_due') end
    return no({2, window, (done[5] or '') .. '\n' .. (done[6] or '') .. '\n' .. (done[7] or ''),
      -1, -1}, 0)
  end
  -- The period, for status and check before the first success.
  if other then
    -- A record of the other kind (a calendar for a duration, or back) loses its fields: a
    -- record holds one kind.
    if schedule == '' then
      if done[8] or done[9] then redis.call('HDEL', key_done, 'schedule', 'tz') end
      redis.call('HSET', key_done, 'every_ms', arg_every_ms)
      redis.call('HSET', key_done, 'offset_ms', arg_offset_ms)
    else
      if done[3] or done[4] then redis.call('HDEL', key_done, 'every_ms', 'offset_ms') end
      redis.call('HSET', key_done, 'schedule', schedule)
      redis.call('HSET', key_done, 'tz', arg_tz)
    end
  end
  -- `--after KEY`: one job after another. The window is not due until KEY has a success granted
  -- inside it (on the server's clock, any host); the period is recorded above all the same. A
  -- pending trigger stays for the try that finds KEY's success. The relation is kept in the
  -- done record, for `dlock check --missed-windows` to tell a window KEY held back from a
  -- plain miss.
  if (arg_after or '') ~= (done[13] or '') then
    if (arg_after or '') == '' then
      redis.call('HDEL', key_done, 'after')
    else
      redis.call('HSET', key_done, 'after', arg_after)
    end
  end
  if after_done and not ours_already() then
    local theirs = tonumber(redis.call('HGET', after_done, 'granted_ms') or '')
    if not theirs or theirs < window then
      if arg_stats == '1' then bump(key_stats, 'not_due') end
      return no({7, window, theirs and ms_string(theirs) or '', -1, -1}, 0)
    end
  end
  -- The holder's record of its window, for the release that records its success.
  period_fields = {{'window_ms', window}, {'granted_ms', ms_string(granted)}}
  if schedule == '' then
    period_fields[3] = {'every_ms', arg_every_ms}
    period_fields[4] = {'offset_ms', arg_offset_ms}
  else
    period_fields[3] = {'schedule', schedule}
    period_fields[4] = {'tz', arg_tz}
    period_fields[5] = {'window_end_ms', ms_string(window_end)}
  end
  -- A trigger goes with the grant it lets through: taken off the done record, kept in the
  -- holder hash ('by \n reason') for the release's run-log entry (written at the grant below).
  if trigger then period_fields[#period_fields + 1] = {'trigger', trigger} end
end

local free, nfree = nil, 0
for i = 0, n - 1 do
  local v = redis.call('GET', lock(i))
  if v == arg_token then
    redis.call('PEXPIRE', lock(i), arg_ttl_ms)
    redis.call('PEXPIRE', holder(i), arg_ttl_ms)
    if n > 1 then hold_limit(key_limit, n, arg_ttl_ms) end
    -- A retry after a lost reply: the run's window is the one its first acquire recorded, and
    -- its fence the one that acquire took, kept in the slot's holder (as each --also key's
    -- below). Never the counter: with --limit N another run may have taken a slot since, and
    -- its fence would be told to two running jobs.
    if window >= 0 then window = tonumber(redis.call('HGET', holder(i), 'window_ms') or window) end
    local r = {1, tonumber(redis.call('HGET', holder(i), 'fence') or '0'), '', i, window}
    -- --also: the whole set is ours (checked above): each X_j's slot is extended and named.
    for j = 1, A do
      local x, s = set[j + 1], held[j]
      if s then
        redis.call('PEXPIRE', x.lock(s), arg_ttl_ms)
        redis.call('PEXPIRE', x.holder(s), arg_ttl_ms)
        if M > 1 then hold_limit(x.limit, M, arg_ttl_ms) end
        r[6] = -1
        r[#r + 1] = tonumber(redis.call('HGET', x.holder(s), 'fence') or '0')
        r[#r + 1] = s
      end
    end
    if A > 0 then unreserve() end
    return r
  end
  if not v then
    nfree = nfree + 1
    if not free then free = i end
  end
end
-- An older run's reservation keeps one free slot of KEY (`kept[j]`: set key j's reservation
-- that holds this try back although a slot is free).
local kept = {}
local function keep_for_older(j, count)
  local r = count > 0 and reserved(j)
  if r and count <= 1 then
    kept[j] = r
    return true
  end
  return false
end
if free and keep_for_older(0, nfree) then free = nil end
-- A kept key frees for this try when a held slot frees or the reservation runs out.
local function kept_pttl(j, best)
  local p = kept[j][4] - clock()
  if best >= 0 and best < p then return best end
  return p
end

-- --also: each X_j's first free slot (afree[j]); an X_j without one blocks the try, as KEY
-- without one does. A slot of ours with KEY not ours is what a partial set left: dropped.
local afree, blocked = {}, {}
if not free and A > 0 then blocked[1] = 0 end
for j = 1, A do
  local x, xfree = set[j + 1], 0
  for i = 0, M - 1 do
    local v = redis.call('GET', x.lock(i))
    if v == arg_token then v = drop_slot(x, i) end
    if not v then
      xfree = xfree + 1
      if not afree[j] then afree[j] = i end
    end
  end
  if afree[j] and keep_for_older(j, xfree) then afree[j] = nil end
  if not afree[j] then blocked[#blocked + 1] = j end
end
-- A try held back only by a reservation tells the reserving run the key is free, on that
-- run's own turn list (`{K}:turn:TOKEN`, in K's hash slot: only its waker listens there, so
-- no held-back try is woken by it): the wake-up that sent this try, if any, was its.
for j, r in pairs(kept) do wake(turn_key(j, r[2]), 1) end
-- A busy --also try (not the last) joins (or stays in) each key's reservations, by its first
-- try; a busy answer that ends the run leaves them. Entries past their time are dropped. (Only
-- an --also try is answered below with blockers.)
local function reserve()
  if arg_last_try == '1' or (arg_retry_ms or '') == '' then
    unreserve()
    return
  end
  local keep = tonumber(arg_retry_ms) + 1000
  local v = ms_string(first_try) .. '\t' .. ms_string(clock() + keep) .. '\tkept for ' ..
    arg_host .. ' pid ' .. arg_pid .. "'s run of " .. lock(0)
  for j = 0, A do
    local all = redis.call('HGETALL', reserve_key(j))
    for i = 1, #all, 2 do
      local u = tonumber(string.match(all[i + 1], '^%d+\t(%d+)\t'))
      if not u or u < clock() then redis.call('HDEL', reserve_key(j), all[i]) end
    end
    redis.call('HSET', reserve_key(j), arg_token, v)
    if redis.call('PTTL', reserve_key(j)) < keep then redis.call('PEXPIRE', reserve_key(j), keep) end
  end
end
if #blocked > 0 then
  -- No try can succeed before the last blocker frees: the longest of their soonest frees.
  local pttl, first, at = nil, set[blocked[1] + 1], 0
  for b, j in ipairs(blocked) do
    local k, best, bat = set[j + 1], nil, 0
    for i = 0, k.n - 1 do
      local p = redis.call('PTTL', k.lock(i))
      if not best or (p >= 0 and (best < 0 or p < best)) then best, bat = p, i end
    end
    -- Kept for an older run: until that run takes it, or its reservation runs out.
    if kept[j] then best = kept_pttl(j, best) end
    if b == 1 then at = bat end
    if not pttl or (pttl >= 0 and (best < 0 or best > pttl)) then pttl = best end
  end
  local who = kept[blocked[1]] and kept[blocked[1]][3] or ''
  local h = redis.pcall('HMGET', first.holder(at), 'token', 'host', 'pid', 'also_of', 'format')
  if who == '' and type(h) == 'table' and h[1] == redis.call('GET', first.lock(at)) then
    who = (h[2] or '?') .. ' pid ' .. (h[3] or '?')
    if h[4] then who = who .. ' (run of ' .. h[4] .. ')' end
    -- A holder from before key formats (issue 65): its dlock's tries do not read reservations.
    if not h[5] then who = who .. ' (an older dlock, which does not keep reservations)' end
  end
  if arg_stats == '1' then bump(key_stats, 'busy_on:' .. first.lock(0)) end
  if arg_stats == '1' and arg_last_try == '1' then count_busy(key_stats) end
  still_waiting()
  reserve()
  local r = {0, pttl, who, -1, -1, blocked[1], hand_on()}
  for _, j in ipairs(blocked) do r[#r + 1] = j end
  return r
end

if not free then
  -- The slot that frees first, and who holds it.
  local best, at = nil, 0
  for i = 0, n - 1 do
    local p = redis.call('PTTL', lock(i))
    if not best or (p >= 0 and (best < 0 or p < best)) then best, at = p, i end
  end
  local who = kept[0] and kept[0][3] or ''
  if kept[0] then best = kept_pttl(0, best) end
  local h = redis.pcall('HMGET', holder(at), 'token', 'host', 'pid', 'also_of')
  if who == '' and type(h) == 'table' and h[1] == redis.call('GET', lock(at)) then
    who = (h[2] or '?') .. ' pid ' .. (h[3] or '?')
    -- Held through another run's --also: whose run it is, as the --also path says it.
    if h[4] then who = who .. ' (run of ' .. h[4] .. ')' end
  end
  if arg_stats == '1' and arg_last_try == '1' then count_busy(key_stats) end
  still_waiting()
  return {0, best, who, -1, -1}
end

-- A new holder hash's fields (after HSET and its key) for a lock of fence `fence`: who holds
-- it, since when, on what lease, renewed 0 times, and which dlock wrote it.
local function holder_fields(fence)
  local hf = {'token', arg_token, 'host', arg_host, 'pid', arg_pid, 'command', arg_command,
    'since_ms', arg_since_ms, 'ttl_ms', arg_ttl_ms, 'fence', fence, 'renewals', 0,
    'version', arg_version, 'format', arg_format}
  if (arg_renew_ms or '') ~= '' then
    hf[#hf + 1] = 'renew_ms'
    hf[#hf + 1] = arg_renew_ms
  end
  return hf
end

-- The fence first: should it fail (not an integer), the script stops with the lock untouched.
-- Every --also key's fence too, before any lock is set.
local f = redis.call('INCR', key_fence)
redis.call('HDEL', waiting, arg_token)
if A > 0 then unreserve() end
local fences = {}
for j = 1, A do fences[j] = redis.call('INCR', set[j + 1].fence) end
redis.call('SET', lock(free), arg_token, 'NX', 'PX', arg_ttl_ms)
local h = holder(free)
redis.call('DEL', h)
-- The holder hash in one HSET of all its fields (Redis 4.0 on; the run log's streams need 5.0):
-- who holds the lock, and who wrote it (issue 65).
local hf = holder_fields(f)
-- --every: the run's window, its grant on the server's clock and its period, for the release
-- that records its success.
for _, kv in ipairs(period_fields) do
  if kv[1] == 'trigger' then redis.call('HDEL', key_done, 'trigger_ms', 'trigger_by', 'trigger_reason') end
  hf[#hf + 1] = kv[1]
  hf[#hf + 1] = kv[2]
end
-- --also: the lock keys of the set's other keys, one a line.
if A > 0 then
  local also = {}
  for j = 1, A do also[j] = set[j + 1].lock(0) end
  hf[#hf + 1] = 'also'
  hf[#hf + 1] = table.concat(also, '\n')
end
redis.call('HSET', h, unpack(hf))
redis.call('PEXPIRE', h, arg_ttl_ms)
if n > 1 then hold_limit(key_limit, n, arg_ttl_ms) end
if arg_stats == '1' and bump(key_stats, 'runs') then bump(key_stats, 'acquired') end
local r = {1, f, '', free, window}
-- Each X_j's free slot, held by the same token, its holder a plain one (`status`, `release
-- --force`, `cancel` and a plain run's busy answer read it as they read any) naming KEY.
for j = 1, A do
  local x, s = set[j + 1], afree[j]
  redis.call('SET', x.lock(s), arg_token, 'NX', 'PX', arg_ttl_ms)
  local xh = x.holder(s)
  redis.call('DEL', xh)
  local xf = holder_fields(fences[j])
  xf[#xf + 1] = 'also_of'
  xf[#xf + 1] = lock(0)
  redis.call('HSET', xh, unpack(xf))
  redis.call('PEXPIRE', xh, arg_ttl_ms)
  if M > 1 then hold_limit(x.limit, M, arg_ttl_ms) end
  r[6] = -1
  r[#r + 1] = fences[j]
  r[#r + 1] = s
end
return r
