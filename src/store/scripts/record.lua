-- Count a run that ends without a release (its lease was lost).
-- KEYS: stats. ARGV: hold ms, histogram field, outcome counter, then the history: outcome,
--   exit code, host, pid, started and ended (Unix ms). Returns 1.
record(KEYS[1], ARGV[1], ARGV[2], ARGV[3], false)
history(KEYS[1], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])
return 1
