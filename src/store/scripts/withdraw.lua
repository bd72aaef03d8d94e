-- `dlock cancel` takes back its own request when its holder did not take it in time
-- (core::cancel), so that nothing stops the run on it after `cancel` said it was not taken.
-- Another operator's request on the same list stays: it is theirs to take back or to see taken.
-- KEYS: the run's cancel list ({KEY}:cancel:TOKEN).
-- ARGV (by name below): this cancel's request, exactly as cancel.lua put it there.
-- Returns 1 when the request was there and is gone now; 0 when it was not there (the holder
-- took it meanwhile: `cancel` waits for its word).
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_list = KEYS[1]
local arg_request = ARGV[1]
-- (end of KEYS and ARGV)
if redis.call('LREM', key_list, 1, arg_request) == 0 then return 0 end
return 1
