-- `dlock cancel` takes back the requests its holder did not take in time (core::cancel), so that
-- nothing stops the run after `cancel` said the request was not taken.
-- KEYS: the run's cancel list ({KEY}:cancel:TOKEN). ARGV: none.
-- Returns 1 when requests were there and are gone now; 0 when the list was empty (the holder
-- took the request meanwhile: `cancel` waits for its word).
-- ARGV by name (written from src/store/script/args.rs by a unit test of script.rs)
-- (end of ARGV)
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1])
return 1
