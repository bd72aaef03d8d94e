-- A run ends busy and its last busy answer came from a try not flagged as the last (which
-- acquire.lua would have done this for): count it as a busy run, and take it out of its keys'
-- reservations (an --also run's: acquire.lua).
-- KEYS: stats, then the reservations of each key of the run's set (none without --also).
-- ARGV (by name below): stats ('1'/'0'), the run's token. Returns 1.
-- ARGV by name (written from src/store/script/args.rs by a unit test of script.rs)
local arg_stats = ARGV[1]
local arg_token = ARGV[2]
-- (end of ARGV)
if arg_stats == '1' then count_busy(KEYS[1]) end
for i = 2, #KEYS do redis.call('HDEL', KEYS[i], arg_token) end
return 1
