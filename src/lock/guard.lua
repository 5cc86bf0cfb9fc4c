-- Shared by acquire.lua and inspect.lua, put in front of each.
-- The restart guard: a server that started less than `guard` ms ago may
-- have lost the locks it held. Returns the ms until it counts again (0: it
-- counts, or the guard is off), or an error reply to return. The uptime is
-- the server's own, in whole seconds; a negative one (its clock stepped
-- back) counts as none.
local function restarting_ms(guard)
  if guard <= 0 then
    return 0
  end
  local info = redis.call("INFO", "server")
  local seconds = tonumber(string.match(info, "uptime_in_seconds:(%-?%d+)"))
  if not seconds then
    return redis.error_reply("ERR no uptime_in_seconds in INFO server, which the restart guard reads")
  end
  local uptime = math.max(seconds * 1000, 0)
  if uptime < guard then
    return guard - uptime
  end
  return 0
end

