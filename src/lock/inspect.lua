-- What one server holds for a lock, in one atomic read:
-- {type, value (strings only, else nil), remaining ms (-2 missing, -1 none),
--  ms until the restart guard counts this server again (0: it counts)}.
-- ARGV[1] is the restart guard in ms; 0 turns it off (restarting_ms comes
-- from guard.lua).
local kind = redis.call("TYPE", KEYS[1])["ok"]
local value = false
if kind == "string" then
  value = redis.call("GET", KEYS[1])
end
local restarting = restarting_ms(tonumber(ARGV[1]))
if type(restarting) == "table" then
  return restarting
end
return {kind, value, redis.call("PTTL", KEYS[1]), restarting}
