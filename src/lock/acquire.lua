-- Take the lock: SET key token NX PX ttl, unless this server started less
-- than ARGV[3] ms ago (the restart guard; 0 turns it off), and write the
-- holder record ARGV[4] beside it. A server that restarted without
-- persistence forgot the locks it held, so it must not count toward a
-- quorum until every lock it may have held has expired (antirez,
-- "Distributed locks with Redis": delayed restarts). Deciding it here costs
-- no extra round trip (restarting_ms comes from guard.lua, the holder
-- functions from holder.lua).
-- Returns 1 taken (or already ours: a request retried after a dropped
-- connection may find its own SET done), -N restarting: counted again in
-- N ms, or, when another value holds it, who does: occupant().
local restarting = restarting_ms(tonumber(ARGV[3]))
if type(restarting) == "table" then
  return restarting
end
if restarting > 0 then
  return -restarting
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  write_holder(ARGV[4], tonumber(ARGV[2]), false)
  return 1
end
-- pcall: a key of another type (WRONGTYPE) is simply someone else's.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
  return 1
end
return occupant()
