-- The run log over a time range, for the board's timeline: read only. The entries that ended
-- at or after `since` (their stream ids are the server's time of the release), newest first,
-- at most `count`, each as one line "id\ttook\toutcome\texit_code\tslot\twindow_ms\trun\thost"
-- (took = ended_ms - started_ms; host last, so a tab in it cannot shift the others): the
-- command and the captured output (up to a mebibyte a run) never leave the server. Then
-- whether the log keeps an entry older than the oldest returned, and its length.
-- KEYS: runs. ARGV: since (Unix ms), count. Returns {lines, older (0/1), xlen}.
local since, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local entries = redis.call('XREVRANGE', KEYS[1], '+', since, 'COUNT', count)
local lines = {}
for i, e in ipairs(entries) do
  local f = {}
  local fields = e[2]
  for j = 1, #fields, 2 do f[fields[j]] = fields[j + 1] end
  local ended = tonumber(f['ended_ms'] or '') or 0
  local took = ended - (tonumber(f['started_ms'] or '') or ended)
  lines[i] = table.concat({e[1], took, f['outcome'] or '', f['exit_code'] or '', f['slot'] or '0',
    f['window_ms'] or '', f['run'] or '', f['host'] or ''}, '\t')
end
local older = 0
if #entries == count then
  older = 1
elseif since > 0 and #redis.call('XREVRANGE', KEYS[1], since - 1, '-', 'COUNT', 1) > 0 then
  older = 1
end
return {lines, older, redis.call('XLEN', KEYS[1])}
