-- A run ends busy and its last busy answer came from a try not flagged as the last (which
-- acquire.lua would have done this for): count it as a busy run, and take it out of its keys'
-- reservations (an --also run's: acquire.lua).
-- KEYS: stats, then the reservations of each key of the run's set (none without --also).
-- ARGV (by name below): stats ('1'/'0'), the run's token. Returns 1.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_stats = KEYS[1]
local key_rest = 2
local arg_stats = ARGV[1]
local arg_token = ARGV[2]
-- (end of KEYS and ARGV)
if arg_stats == '1' then count_busy(key_stats) end
for i = key_rest, #KEYS do redis.call('HDEL', KEYS[i], arg_token) end
return 1
