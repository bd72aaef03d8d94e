-- Count and log a run that ends without a release (its lease was lost).
-- KEYS: stats, runs, timeline, the run's word key (as release.lua's last).
-- ARGV: hold ms, histogram field, outcome counter, then the history:
--   outcome, exit code, host, pid, started and ended (Unix ms), then the run log as in
--   release.lua: entries to keep (the 10th ARGV) and the entry's fields from the 11th on (run id …
--   the lease … output bytes, kept output).
-- Returns '' or why the run log could not be written. The holder's word for `dlock cancel` as
-- release.lua writes it.
speak(KEYS[4], entry_field(11, 'cancel_id'), ARGV[4], ARGV[5])
record(KEYS[1], ARGV[1], ARGV[2], ARGV[3], false)
history(KEYS[1], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])
return log_run(KEYS[1], KEYS[2], KEYS[3], ARGV[10], ARGV[4], ARGV[5], entry_from(11))
