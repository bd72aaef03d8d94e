-- Acquire, or re-confirm after a lost reply (the same token is retried).
-- KEYS: lock, fence, holder, stats.
-- ARGV: token, ttl ms, stats ('1'/'0'), host, pid, command, since (Unix ms), last try ('1': a
--   busy answer ends the run, so it is counted here as a busy run: the common `--wait 0` skip
--   costs one command, not two).
-- Returns {1, fence, ''} when the lock is ours, or {0, pttl, 'host pid N'} when someone else
-- holds it ('' if not a dlock).
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0'), ''}
end
if v then
  local who = ''
  local h = redis.pcall('HMGET', KEYS[3], 'token', 'host', 'pid')
  if h[1] == v then
    who = (h[2] or '?') .. ' pid ' .. (h[3] or '?')
  end
  if ARGV[3] == '1' and ARGV[8] == '1' then count_busy(KEYS[4]) end
  return {0, redis.call('PTTL', KEYS[1]), who}
end
-- The fence first: should it fail (not an integer), the script stops with the lock untouched.
local f = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[3], 'token', ARGV[1])
redis.call('HSET', KEYS[3], 'host', ARGV[4])
redis.call('HSET', KEYS[3], 'pid', ARGV[5])
redis.call('HSET', KEYS[3], 'command', ARGV[6])
redis.call('HSET', KEYS[3], 'since_ms', ARGV[7])
redis.call('HSET', KEYS[3], 'fence', f)
redis.call('HSET', KEYS[3], 'renewals', 0)
redis.call('PEXPIRE', KEYS[3], ARGV[2])
if ARGV[3] == '1' and bump(KEYS[4], 'runs') then bump(KEYS[4], 'acquired') end
return {1, f, ''}
