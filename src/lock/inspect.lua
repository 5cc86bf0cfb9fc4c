-- What one server holds for a lock, in one atomic read:
-- {type, value (strings only, else nil), remaining ms (-2 missing, -1 none)}.
local kind = redis.call("TYPE", KEYS[1])["ok"]
local value = false
if kind == "string" then
  value = redis.call("GET", KEYS[1])
end
return {kind, value, redis.call("PTTL", KEYS[1])}
