-- Push one wake-up the way a release does: a waiter handing back one it will not use, or
-- ending its own BLPOP on its own key.
-- KEYS: a wake-up list. Returns 1.
wake(KEYS[1])
return 1
