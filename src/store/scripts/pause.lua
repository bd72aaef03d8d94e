-- `dlock pause` and `dlock resume`: set or end a key's pause (or, on the prefix-wide record,
-- every key's), on the server's clock. A pause that ends, by `resume`, by a new pause in its
-- place, or found run out (its --for), goes to the span stream, so that `check` and the board
-- can tell a paused window from a missed one after it ended.
-- KEYS: the pause record (from_ms, until_ms, by, reason while a pause is on record; ended_ms
--   once one ended), its span stream. ARGV (by name below): 'pause' or 'resume', by ('host (user)'),
--   reason, --for in ms ('0': until resumed), spans to keep.
-- Returns {1, from ms, until ms, by, reason}: the pause now in force (pause) or the one ended
-- (resume), with a second part for pause, {was one in force ('1'/'0')}; {0} for a resume with
-- no pause in force.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_pause = KEYS[1]
local key_spans = KEYS[2]
local arg_action = ARGV[1]
local arg_by = ARGV[2]
local arg_reason = ARGV[3]
local arg_for_ms = ARGV[4]
local arg_spans = ARGV[5]
-- (end of KEYS and ARGV)
local now = server_ms()
local cur = redis.call('HMGET', key_pause, 'from_ms', 'until_ms', 'by', 'reason')
local live = in_force(cur)
local ended = nil
if cur[1] then
  -- Ended now, or when its --for ran out.
  local at, by = ms_string(now), arg_by
  if not live then at, by = cur[2], 'expired' end
  redis.pcall('XADD', key_spans, 'MAXLEN', arg_spans, '*', 'from_ms', cur[1], 'until_ms',
    cur[2] or '0', 'by', cur[3] or '', 'reason', cur[4] or '', 'ended_ms', at, 'ended_by', by)
  -- The record keeps only when its last pause ended (the exporter's dlock_pause_ended_seconds:
  -- an --every window alert must not fire for the windows a pause just covered).
  redis.call('DEL', key_pause)
  redis.call('HSET', key_pause, 'ended_ms', at)
  if live then ended = cur end
end
if arg_action == 'resume' then
  if not ended then return {0} end
  return {1, ended[1], ended[2] or '0', ended[3] or '', ended[4] or ''}
end
local until_ms = '0'
if tonumber(arg_for_ms) > 0 then until_ms = ms_string(now + tonumber(arg_for_ms)) end
for _, kv in ipairs({{'from_ms', ms_string(now)}, {'until_ms', until_ms}, {'by', arg_by},
    {'reason', arg_reason}}) do
  redis.call('HSET', key_pause, kv[1], kv[2])
end
local was = '0'
if ended then was = '1' end
return {1, ms_string(now), until_ms, arg_by, arg_reason, was}
