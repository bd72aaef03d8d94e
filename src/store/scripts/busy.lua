-- Count a busy run whose last busy answer came from a try not flagged as the last.
-- KEYS: stats. Returns 1.
count_busy(KEYS[1])
return 1
