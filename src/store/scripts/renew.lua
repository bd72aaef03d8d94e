-- Extend our lease on our slot (compare-and-expire).
-- KEYS: the slot's lock key, its holder hash, stats, limit, then per --also key X_j its slot's
--   lock key, holder hash and limit. ARGV (by name below): token, ttl ms, stats ('1'/'0'), N (--limit), then A
--   (--also keys; '0' or absent: none) and M (--also-limit).
-- Returns 1 renewed, 0 someone else's (a compare failure, counted), -1 gone. With --also every
-- key is checked before any is extended (a lost set is never partly extended): {1, -1}
-- renewed, {0 or -1, j} for the first key not ours (0: KEY, j: X_j; a compare failure is
-- counted for KEY only).
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_lock = KEYS[1]
local key_holder = KEYS[2]
local key_stats = KEYS[3]
local key_limit = KEYS[4]
local key_rest = 5
local arg_token = ARGV[1]
local arg_ttl_ms = ARGV[2]
local arg_stats = ARGV[3]
local arg_limit = ARGV[4]
local arg_also_count = ARGV[5]
local arg_also_limit = ARGV[6]
-- (end of KEYS and ARGV)
local A, M = tonumber(arg_also_count) or 0, tonumber(arg_also_limit) or 1
local v = redis.call('GET', key_lock)
if v == arg_token then
  for j = 1, A do
    local x = redis.call('GET', KEYS[key_rest + 3 * (j - 1)])
    if x ~= arg_token then return {x and 0 or -1, j} end
  end
  redis.call('PEXPIRE', key_lock, arg_ttl_ms)
  if redis.call('PEXPIRE', key_holder, arg_ttl_ms) == 1 then bump(key_holder, 'renewals') end
  if tonumber(arg_limit) > 1 then hold_limit(key_limit, arg_limit, arg_ttl_ms) end
  for j = 1, A do
    local b = key_rest + 3 * (j - 1)
    redis.call('PEXPIRE', KEYS[b], arg_ttl_ms)
    if redis.call('PEXPIRE', KEYS[b + 1], arg_ttl_ms) == 1 then bump(KEYS[b + 1], 'renewals') end
    if M > 1 then hold_limit(KEYS[b + 2], M, arg_ttl_ms) end
  end
  if A > 0 then return {1, -1} end
  return 1
end
if v then
  if arg_stats == '1' then bump(key_stats, 'compare_failures') end
  if A > 0 then return {0, 0} end
  return 0
end
if A > 0 then return {-1, 0} end
return -1
