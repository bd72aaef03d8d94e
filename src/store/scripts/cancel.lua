-- `dlock cancel`: ask the run holding one slot to stop, if `token` still holds it.
-- KEYS: the slot's lock key, its holder hash, the run's cancel list ({KEY}:cancel:TOKEN) and its
--   word key ({KEY}:ended:TOKEN; KEY: the run's --key, also for a slot held through --also).
-- ARGV (by name below): token, the request ("HOST (user)\nreason"), how long past the lock's TTL an unanswered
--   request may stay (ms).
-- Returns {1, pttl, holder fields...} asked (the holder answers by releasing, and writes its word
--   over the mark this leaves in the word key, whether or not it took the request); {2, holder
--   fields...} the slot is only kept by --hold-at-least (no holder process is left to ask: the
--   caller frees it with break.lua); {0} the token no longer holds the slot (that run ended).
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_lock = KEYS[1]
local key_holder = KEYS[2]
local key_list = KEYS[3]
local key_word = KEYS[4]
local arg_token = ARGV[1]
local arg_request = ARGV[2]
local arg_margin_ms = ARGV[3]
-- (end of KEYS and ARGV)
local v = redis.call('GET', key_lock)
if v ~= arg_token then return {0} end
local h = redis.call('HGETALL', key_holder)
local kept = false
local out = {}
for i = 1, #h, 2 do
  if h[i] == 'kept' and h[i + 1] == '1' then kept = true end
  out[#out + 1] = h[i]
  out[#out + 1] = h[i + 1]
end
if kept then
  table.insert(out, 1, 2)
  return out
end
local ttl = redis.call('PTTL', key_lock)
redis.call('LPUSH', key_list, arg_request)
-- A lock without a TTL (set by hand) still gets a request that goes away.
local keep = math.max(ttl, 0) + tonumber(arg_margin_ms)
redis.call('PEXPIRE', key_list, keep)
-- The mark: the release writes its word over it (never over a word already there).
redis.call('SET', key_word, 'dlock-asked/1', 'NX', 'PX', keep)
table.insert(out, 1, ttl)
table.insert(out, 1, 1)
return out
