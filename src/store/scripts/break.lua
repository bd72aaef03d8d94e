-- `dlock release`: delete one slot whoever holds it, or only when arg_token does; wake a waiter.
-- KEYS: the slot's lock key, its holder hash, wake, limit, then the lock key of every slot
--   0 … N-1 (the limit key goes with the last held slot). ARGV: token ('' = whoever holds
--   it), N (--limit of the key), by name below.
-- Returns {1, token, holder fields...} released; {0} not held; {-1, token} held by another.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_lock = KEYS[1]
local key_holder = KEYS[2]
local key_wake = KEYS[3]
local key_limit = KEYS[4]
local key_rest = 5
local arg_token = ARGV[1]
local arg_limit = ARGV[2]
-- (end of KEYS and ARGV)
local n = tonumber(arg_limit)
local v = redis.call('GET', key_lock)
if not v then return {0} end
if arg_token ~= '' and v ~= arg_token then return {-1, v} end
local h = redis.call('HGETALL', key_holder)
if h[1] and redis.call('HGET', key_holder, 'token') ~= v then h = {} end
redis.call('DEL', key_lock, key_holder)
wake(key_wake, n)
if n > 1 then drop_limit_if_free(key_limit, key_rest, n) end
local out = {1, v}
for i = 1, #h do out[#out + 1] = h[i] end
return out
