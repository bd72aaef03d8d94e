-- Count a run that ends without a release (its lease was lost).
-- KEYS: stats. ARGV: hold ms, histogram field, outcome counter. Returns 1.
record(KEYS[1], ARGV[1], ARGV[2], ARGV[3], false)
return 1
