-- Take the lock: SET key token NX PX ttl, unless this server started less
-- than ARGV[3] ms ago (the restart guard; 0 turns it off). A server that
-- restarted without persistence forgot the locks it held, so it must not
-- count toward a quorum until every lock it may have held has expired
-- (antirez, "Distributed locks with Redis": delayed restarts). Deciding it
-- here costs no extra round trip.
-- Returns 1 taken, 0 held by another value, -N restarting: counted again in
-- N ms.
local guard = tonumber(ARGV[3])
if guard > 0 then
  local info = redis.call("INFO", "server")
  local uptime = tonumber(string.match(info, "uptime_in_seconds:(%d+)")) * 1000
  if uptime < guard then
    return uptime - guard
  end
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return 1
end
return 0
