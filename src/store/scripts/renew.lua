-- Extend our lease on our slot (compare-and-expire).
-- KEYS: the slot's lock key, its holder hash, stats, limit. ARGV: token, ttl ms, stats
--   ('1'/'0'), N (--limit).
-- Returns 1 renewed, 0 someone else's (a compare failure, counted), -1 gone.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.call('PEXPIRE', KEYS[2], ARGV[2]) == 1 then bump(KEYS[2], 'renewals') end
  if tonumber(ARGV[4]) > 1 then hold_limit(KEYS[4], ARGV[4], ARGV[2]) end
  return 1
end
if v then
  if ARGV[3] == '1' then bump(KEYS[3], 'compare_failures') end
  return 0
end
return -1
