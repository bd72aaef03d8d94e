-- Push one wake-up the way a release does: a waiter handing back one it will not use, or
-- ending its own BLPOP on its own key.
-- KEYS: a wake-up list. ARGV: how many items it may hold (the key's slots; 1 for a waiter's
--   own key). Returns 1.
wake(KEYS[1], ARGV[1])
return 1
