-- A run ends busy and its last busy answer came from a try not flagged as the last (which
-- acquire.lua would have done this for): count it as a busy run, and take it out of its keys'
-- reservations (an --also run's: acquire.lua).
-- KEYS: stats, then the reservations of each key of the run's set (none without --also).
-- ARGV: stats ('1'/'0'), the run's token. Returns 1.
if ARGV[1] == '1' then count_busy(KEYS[1]) end
for i = 2, #KEYS do redis.call('HDEL', KEYS[i], ARGV[2]) end
return 1
