-- `dlock release`: delete the lock whoever holds it, or only when ARGV[1] does; wake a waiter.
-- KEYS: lock, holder, wake. ARGV: token ('' = whoever holds it).
-- Returns {1, token, holder fields...} released; {0} not held; {-1, token} held by another.
local v = redis.call('GET', KEYS[1])
if not v then return {0} end
if ARGV[1] ~= '' and v ~= ARGV[1] then return {-1, v} end
local h = redis.call('HGETALL', KEYS[2])
if h[1] and redis.call('HGET', KEYS[2], 'token') ~= v then h = {} end
redis.call('DEL', KEYS[1], KEYS[2])
wake(KEYS[3])
local out = {1, v}
for i = 1, #h do out[#out + 1] = h[i] end
return out
