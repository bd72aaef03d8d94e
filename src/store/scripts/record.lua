-- Count and log a run that ends without a release (its lease was lost).
-- KEYS: stats, runs, timeline, the run's word key (as release.lua's last).
-- ARGV (by name below): hold ms, histogram field, outcome counter, then the history: outcome,
--   exit code, host, pid, started and ended (Unix ms), then the run log as in release.lua:
--   entries to keep, and the entry's fields from arg_rest on (lib.lua's entry_from).
-- Returns '' or why the run log could not be written. The holder's word for `dlock cancel` as
-- release.lua writes it.
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_stats = KEYS[1]
local key_runs = KEYS[2]
local key_timeline = KEYS[3]
local key_word = KEYS[4]
local arg_hold_ms = ARGV[1]
local arg_bucket = ARGV[2]
local arg_counter = ARGV[3]
local arg_outcome = ARGV[4]
local arg_code = ARGV[5]
local arg_host = ARGV[6]
local arg_pid = ARGV[7]
local arg_started_ms = ARGV[8]
local arg_ended_ms = ARGV[9]
local arg_history = ARGV[10]
local arg_rest = 11
-- (end of KEYS and ARGV)
speak(key_word, entry_field(arg_rest, 'cancel_id'), arg_outcome, arg_code)
record(key_stats, arg_hold_ms, arg_bucket, arg_counter, false)
history(key_stats, arg_outcome, arg_code, arg_host, arg_pid, arg_started_ms, arg_ended_ms)
return log_run(key_stats, key_runs, key_timeline, arg_history, arg_outcome, arg_code, entry_from(arg_rest))
