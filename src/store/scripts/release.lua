-- Compare-and-delete, wake one waiter, count the run.
-- KEYS: lock, holder, stats, wake.
-- ARGV: token, stats ('1'/'0'), keep ms (--hold-at-least: > 0 keeps the lock that much longer
--   instead of deleting it), hold ms, histogram field, outcome counter ('' for none).
-- Returns 1 released, 2 kept for ARGV[3] ms, 0 not ours (or gone).
local r = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if tonumber(ARGV[3]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
    r = 2
  else
    redis.call('DEL', KEYS[1], KEYS[2])
    wake(KEYS[4])
    r = 1
  end
end
if ARGV[2] == '1' then record(KEYS[3], ARGV[4], ARGV[5], ARGV[6], r == 0) end
return r
