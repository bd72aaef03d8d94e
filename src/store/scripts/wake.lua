-- Push one wake-up the way a release does: a waiter handing back one it will not use, or
-- ending its own BLPOP on its own key.
-- KEYS: a wake-up list, then (optional) the key's slots' lock keys: with them, the wake-up is
--   pushed only if one of them is free (a semaphore's waiter that took a slot handing on a
--   wake-up that may be another slot's; with none free it announced our own).
-- ARGV (by name below): how many items it may hold (the key's slots; 1 for a waiter's own key).
-- Returns 1 pushed, 0 not (every slot held).
-- KEYS and ARGV by name (written from src/store/script/key_names.rs and args.rs by a unit test of script.rs)
local key_list = KEYS[1]
local key_rest = 2
local arg_room = ARGV[1]
-- (end of KEYS and ARGV)
if #KEYS > 1 then
  local free = false
  for i = key_rest, #KEYS do
    if not redis.call('GET', KEYS[i]) then free = true end
  end
  if not free then return 0 end
end
wake(key_list, arg_room)
return 1
