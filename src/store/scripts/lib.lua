-- Helpers every dlock script starts with (dlock prepends this file to each one, so no script
-- can miss a helper it calls). Each script names every key it touches in KEYS, so Redis Cluster
-- and cloud proxies route it, and uses only commands that exist since Redis 4.0 (HSET of several
-- fields at once; the run log's XADD needs 5.0).

-- Metrics and holder details are best effort: a write that fails (a stats key someone else
-- made a string) is dropped instead of failing the lock operation it rides with. True when the
-- count landed.
local function bump(hash, field, by)
  return type(redis.pcall('HINCRBY', hash, field, by or 1)) == 'number'
end

-- Count a run that gave up on a busy lock.
local function count_busy(stats)
  if bump(stats, 'runs') then bump(stats, 'busy') end
end

-- Count one finished run in the stats hash: its hold time (ms), histogram field ('' for a run
-- whose hold time is left out of the durations: a cancelled run was cut short), outcome
-- counter ('' for none), and whether its release compare failed.
local function record(stats, hold, field, outcome, compare_failed)
  if field ~= '' then
    if not bump(stats, field) then return end
    bump(stats, 'hold_count')
    bump(stats, 'hold_sum_ms', hold)
    if tonumber(redis.pcall('HGET', stats, 'hold_max_ms') or '0') < tonumber(hold) then
      redis.pcall('HSET', stats, 'hold_max_ms', hold)
    end
  end
  if outcome ~= '' then bump(stats, outcome) end
  if compare_failed then bump(stats, 'compare_failures') end
end

-- Record how a run that held the lock ended (`last` in `status`), when the last successful
-- one did and how long it took, and how many runs in a row did not end ok (`check
-- --max-failures` reads it, with or without a run log). Best effort, like the counters; one
-- HSET of all the fields (Redis 4.0 on). A cancelled run (`dlock cancel`) is neither a success
-- nor a failure: it leaves the streak as it was.
local function history(stats, outcome, code, host, pid, started, ended)
  local fields = {'HSET', stats, 'last_outcome', outcome, 'last_exit_code', code,
    'last_host', host, 'last_pid', pid, 'last_started_ms', started, 'last_ended_ms', ended}
  if outcome == 'ok' then
    fields[15], fields[16] = 'last_success_ms', ended
    fields[17], fields[18] = 'last_success_duration_ms', tonumber(ended) - tonumber(started)
    fields[19], fields[20] = 'consecutive_failures', 0
  end
  redis.pcall(unpack(fields))
  if outcome ~= 'ok' and outcome ~= 'cancelled' then
    bump(stats, 'consecutive_failures')
  end
end

-- A run as the board draws it, the run log entry's fields it needs in one line:
-- "started_ms\tended_ms\toutcome\texit_code\tslot\twindow_ms\thost" (host last, so a tab in
-- it cannot shift the others; an absent field empty, the slot 0). log_run writes it to the
-- timeline; timeline.lua builds it from a log entry that has none.
local function bar_of(started, ended, outcome, code, slot, window, host)
  return (started or '') .. '\t' .. (ended or '') .. '\t' .. (outcome or '') .. '\t' ..
    (code or '') .. '\t' .. (slot or '0') .. '\t' .. (window or '') .. '\t' .. (host or '')
end

-- Append one entry to the run log `runs`, a stream kept at exactly `keep` entries (0: no log),
-- the run's bar to `timeline` (the same id, one short field: what the board draws, so that
-- it reads a day of runs without the commands and outputs: SPEC 7b), and its short form to
-- `stats`' recent runs.
-- `entry` holds the fields after the outcome and exit code (SPEC 7b). Best effort like the
-- stats: returns '' or the server's error (a key of another type, an ACL without XADD), which
-- dlock turns into one warning; the lock operation it rides with is not affected.
local function log_run(stats, runs, timeline, keep, outcome, code, entry)
  if tonumber(keep) <= 0 then return '' end
  local args = {'XADD', runs, 'MAXLEN', keep, '*', 'outcome', outcome, 'exit_code', code}
  local f = {}
  for i, v in ipairs(entry) do
    args[#args + 1] = v
    if i % 2 == 0 then f[entry[i - 1]] = v end
  end
  local r = redis.pcall(unpack(args))
  if type(r) == 'table' and r.err then return r.err end
  -- A timeline that cannot take the log's new id (its newest entry is as new: it mirrors a log
  -- deleted since, on a server whose clock went back) is started again; one of another type is
  -- left alone (the board then reads the log itself: slower, not wrong), and says nothing here.
  local bar = bar_of(f['started_ms'], f['ended_ms'], outcome, code, f['slot'], f['window_ms'],
    f['host'])
  local t = redis.pcall('XADD', timeline, 'MAXLEN', keep, r, 'bar', bar)
  if type(t) == 'table' and t.err and type(redis.pcall('XLEN', timeline)) == 'number' then
    redis.pcall('DEL', timeline)
    redis.pcall('XADD', timeline, 'MAXLEN', keep, r, 'bar', bar)
  end
  -- The log's newest 10 in short, newest first, in the stats hash: `status` and the board show
  -- them without reading the stream ("outcome,code,ended,took,host;…").
  local ended = tonumber(f['ended_ms']) or 0
  local took = ended - (tonumber(f['started_ms']) or ended)
  local host = string.gsub(f['host'] or '', '[;,]', '_')
  local list, n = outcome .. ',' .. code .. ',' .. ended .. ',' .. took .. ',' .. host, 1
  local prev = redis.pcall('HGET', stats, 'recent')
  if type(prev) == 'string' then
    for item in string.gmatch(prev, '[^;]+') do
      if n >= 10 then break end
      list = list .. ';' .. item
      n = n + 1
    end
  end
  redis.pcall('HSET', stats, 'recent', list)
  return ''
end

-- The run log's entry fields from ARGV[first] on (release.lua's and record.lua's `arg_rest`), in
-- the order of ENTRY_NAMES: their names in the entry (src/store/script/args.rs, Entry, says what
-- each holds); then, with --capture, the kept output (`output`). A field in ENTRY_OPTIONAL is
-- left out when '' (the lease when unknown, the window without --every, the cancel's fields
-- unless cancelled, the --also keys without --also, the output's size without --capture), and
-- the output with it.
-- ARGV by name (written from src/store/script/args.rs by a unit test of script.rs)
local ENTRY_NAMES = {
  'run',
  'host',
  'pid',
  'slot',
  'fence',
  'command',
  'started_ms',
  'ended_ms',
  'renewals',
  'waited_ms',
  'ttl_ms',
  'max_renewals',
  'renew_every_ms',
  'grace_ms',
  'window_ms',
  'cancel_by',
  'cancel_reason',
  'cancel_id',
  'also',
  'version',
  'format',
  'output_bytes',
}
-- (end of ARGV)
local ENTRY_OPTIONAL = {ttl_ms = true, max_renewals = true, renew_every_ms = true, grace_ms = true,
  window_ms = true, cancel_by = true, cancel_reason = true, cancel_id = true, also = true,
  output_bytes = true}
local function entry_from(first)
  local e, size = {}, ''
  for i, name in ipairs(ENTRY_NAMES) do
    local v = ARGV[first + i - 1]
    if v ~= nil and not (v == '' and ENTRY_OPTIONAL[name]) then
      e[#e + 1] = name
      e[#e + 1] = v
    end
    if name == 'output_bytes' then size = v end
  end
  local output = ARGV[first + #ENTRY_NAMES]
  if output ~= nil and size ~= '' then
    e[#e + 1] = 'output'
    e[#e + 1] = output
  end
  return e
end

-- The server's time in Unix ms (TIME). Where a server still replicates scripts verbatim
-- (Redis 3.2–6.2 with lua-replicate-commands no), a script that writes after TIME must first
-- switch to replicating its effects; later servers always do, and keep the call as a no-op.
-- Only the --every path calls this, before its first write.
local function server_ms()
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The start of the --every window [k·every + offset, (k+1)·every + offset) holding `now`.
local function window_of(now, every, offset)
  return now - ((now - offset) % every)
end

-- A key's last --every success (the done record's HMGET of granted_ms, window_ms): the server
-- time its lock was granted. A record written before grants were kept has only its window's
-- start, which lies in the same window as its grant; -1: none.
local function last_success(granted, window)
  return math.max(tonumber(granted) or -1, tonumber(window) or -1)
end

-- A pause record's HMGET of from_ms, until_ms (…): its end (0: until resumed) while it is in
-- force, else nil (no record, or its --for has run out on the server's clock).
local function in_force(p)
  if not p[1] then return nil end
  local until_ms = tonumber(p[2]) or 0
  if until_ms > 0 and server_ms() >= until_ms then return nil end
  return until_ms
end

-- A server time in ms as Redis keeps it: an integer, never Lua's 1.7e+12.
local function ms_string(t)
  return string.format('%.0f', t)
end

-- One field of the run-log entry whose fields start at ARGV[first] (see entry_from).
local function entry_field(first, name)
  for i, n in ipairs(ENTRY_NAMES) do
    if n == name then return ARGV[first + i - 1] end
  end
end

-- Wake the longest-waiting waiter. At most `keep` items (the key's slots, 1 for a plain lock: a
-- release with nobody waiting must not pile up wake-ups, but N slots freed at once must wake N
-- waiters), kept 2 s for a waiter that is between its busy answer and its BLPOP.
local function wake(list, keep)
  redis.call('LPUSH', list, 1)
  redis.call('LTRIM', list, 0, tonumber(keep) - 1)
  redis.call('PEXPIRE', list, 2000)
end

-- --limit N > 1: once no slot is held (their lock keys are KEYS[first … first + n - 1]), the
-- limit record goes too.
local function drop_limit_if_free(limit, first, n)
  for i = first, first + n - 1 do
    if redis.call('EXISTS', KEYS[i]) == 1 then return end
  end
  redis.call('DEL', limit)
end

-- --limit N > 1: record N in the limit key and keep it alive at least `ttl` ms, so it outlives
-- every slot (a run with another N is refused while it exists).
local function hold_limit(limit, n, ttl)
  if redis.call('PTTL', limit) < tonumber(ttl) then
    redis.call('SET', limit, n, 'PX', ttl)
  end
end

-- `dlock cancel`'s answer from the holder (core::cancel): when the run took a request
-- (`taken`, its id) or was asked (cancel.lua leaves its mark in the word key, which a request
-- taken by a listener too late for the run leaves too), the run's end in the word key,
-- "dlock-ended/1\nTAKEN\nOUTCOME\nEXIT", kept WORD_KEEP_MS. Written in the script that gives the
-- slot up, so `cancel` never finds the slot free without it. Best effort (pcall): it never
-- stops the release it rides with.
-- As long as an unanswered request stays on its list past the lock's TTL
-- (`store::cancel::REQUEST_MARGIN`, 60 s): `cancel` reads the word within its own bounds.
local WORD_KEEP_MS = 60000
local function speak(word, taken, outcome, code)
  if taken == '' and redis.call('EXISTS', word) == 0 then return end
  redis.pcall('SET', word, 'dlock-ended/1\n' .. taken .. '\n' .. outcome .. '\n' .. code,
    'PX', WORD_KEEP_MS)
end
