-- What one server holds for a lock, in one atomic read:
-- {type, value (strings only, else nil), remaining ms (-2 missing, -1 none),
--  ms until the restart guard counts this server again (0: it counts)}.
-- ARGV[1] is the restart guard in ms; 0 turns it off.
local kind = redis.call("TYPE", KEYS[1])["ok"]
local value = false
if kind == "string" then
  value = redis.call("GET", KEYS[1])
end
local restarting = 0
local guard = tonumber(ARGV[1])
if guard > 0 then
  local info = redis.call("INFO", "server")
  local seconds = tonumber(string.match(info, "uptime_in_seconds:(%-?%d+)"))
  if not seconds then
    return redis.error_reply("ERR no uptime_in_seconds in INFO server, which the restart guard reads")
  end
  local uptime = math.max(seconds * 1000, 0)
  if uptime < guard then
    restarting = guard - uptime
  end
end
return {kind, value, redis.call("PTTL", KEYS[1]), restarting}
