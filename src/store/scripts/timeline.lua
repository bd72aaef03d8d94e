-- The run log over a time range, for the board's timeline: read only. The entries that ended
-- at or after `start` (an entry id; the stream ids are the server's time of each release),
-- newest first, at most `count`, each as one line: its id, a tab, its bar (lib.lua's bar_of,
-- as the timeline keeps it): the command and the captured output (up to a mebibyte a
-- run) never leave the server. The fields are picked in one pass without a table per entry:
-- this loop is most of what reading a log costs Redis (the board reads this way only the logs
-- its timeline does not mirror).
-- KEYS: runs. ARGV (by name below): since (Unix ms: the range's start), count, start (an entry id at or after
--   since, the newest the reader knows: read from it on, it included, so that the reader sees
--   whether the log still has it; '' to read from since).
-- Returns {lines, older (1: an entry older than since is kept), xlen, the newest entry's id
--   ('' for an empty log)}.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_runs = KEYS[1]
local arg_since_ms = ARGV[1]
local arg_count = ARGV[2]
local arg_start = ARGV[3]
-- (end of KEYS and ARGV)
local since, count = tonumber(arg_since_ms), tonumber(arg_count)
local start = arg_start
if start == '' then start = since end
local entries = redis.call('XREVRANGE', key_runs, '+', start, 'COUNT', count)
local lines = {}
for i = 1, #entries do
  local f = entries[i][2]
  local s, e, o, c, sl, w, h
  for j = 1, #f, 2 do
    local k, v = f[j], f[j + 1]
    if k == 'started_ms' then s = v
    elseif k == 'ended_ms' then e = v
    elseif k == 'outcome' then o = v
    elseif k == 'exit_code' then c = v
    elseif k == 'slot' then sl = v
    elseif k == 'window_ms' then w = v
    elseif k == 'host' then h = v
    end
  end
  lines[i] = entries[i][1] .. '\t' .. bar_of(s, e, o, c, sl, w, h)
end
local older = 0
if since > 0 and #redis.call('XREVRANGE', key_runs, since - 1, '-', 'COUNT', 1) > 0 then
  older = 1
end
local newest = redis.call('XREVRANGE', key_runs, '+', '-', 'COUNT', 1)
return {lines, older, redis.call('XLEN', key_runs), newest[1] and newest[1][1] or ''}
