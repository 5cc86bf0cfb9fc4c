-- requires: holder
-- `exec --cancel-in-progress` (lock/cancel.rs): a newer waiter asks the
-- holder of the lock KEYS[1] whose token is ARGV[1] to stop, by writing
-- "TOKEN WHO" (ARGV[2], supersede.lua's WHO) to KEYS[2] for ARGV[3] ms,
-- only while KEYS[1] still holds that token: a request that arrives after
-- the holder left never reaches the next one. The holder reads it
-- (cancelled.lua) and stops; asking never lets anyone take the lock.
-- Returns 1 asked, 0 the lock does not hold that token here.
local value = redis.pcall("GET", KEYS[1])
if type(value) ~= "string" or value ~= ARGV[1] then
  return 0
end
redis.call("SET", KEYS[2], ARGV[1] .. " " .. ARGV[2], "PX", ARGV[3])
return 1
