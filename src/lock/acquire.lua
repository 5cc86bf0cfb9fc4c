-- Take the lock: SET key token NX PX ttl, unless this server started less
-- than ARGV[3] ms ago (the restart guard; 0 turns it off). A server that
-- restarted without persistence forgot the locks it held, so it must not
-- count toward a quorum until every lock it may have held has expired
-- (antirez, "Distributed locks with Redis": delayed restarts). Deciding it
-- here costs no extra round trip.
-- Returns 1 taken (or already ours: a request retried after a dropped
-- connection may find its own SET done), 0 held by another value, -N
-- restarting: counted again in N ms.
if redis.replicate_commands then
  -- Before Redis 5, INFO (non-deterministic) would forbid the SET after it.
  redis.replicate_commands()
end
local guard = tonumber(ARGV[3])
if guard > 0 then
  local info = redis.call("INFO", "server")
  local seconds = tonumber(string.match(info, "uptime_in_seconds:(%-?%d+)"))
  if not seconds then
    return redis.error_reply("ERR no uptime_in_seconds in INFO server, which the restart guard reads")
  end
  local uptime = seconds * 1000
  if uptime < guard then
    -- A negative uptime (the server's clock stepped back) counts as none.
    return math.max(uptime, 0) - guard
  end
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return 1
end
-- pcall: a key of another type (WRONGTYPE) is simply someone else's.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
  return 1
end
return 0
