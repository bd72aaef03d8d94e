-- `dlock doctor`'s rights trial, not a lock path: runs each command it is given on the scratch
-- key, so ACL checks it as it would inside dlock's own scripts, then deletes the key. Atomic:
-- no client ever sees the scratch key.
-- KEYS: the scratch key. ARGV: for each command, its number of words, then the words.
-- Returns each command's error ('' when it ran), then '' when the scratch key is gone, else
-- why it could not be removed.
local out, i = {}, 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local r = redis.pcall(unpack(ARGV, i + 1, i + n))
  if type(r) == 'table' and r.err then out[#out + 1] = r.err else out[#out + 1] = '' end
  i = i + n + 1
end
local gone = ''
local d = redis.pcall('DEL', KEYS[1])
if type(d) == 'table' and d.err and redis.pcall('EXISTS', KEYS[1]) ~= 0 then
  local e = redis.pcall('PEXPIRE', KEYS[1], 1)
  if type(e) == 'table' and e.err then gone = d.err end
end
out[#out + 1] = gone
return out
