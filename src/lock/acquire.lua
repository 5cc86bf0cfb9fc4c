-- Take the lock: SET key token NX PX ttl, unless this server started less
-- than ARGV[3] ms ago (the restart guard; 0 turns it off). A server that
-- restarted without persistence forgot the locks it held, so it must not
-- count toward a quorum until every lock it may have held has expired
-- (antirez, "Distributed locks with Redis": delayed restarts). Deciding it
-- here costs no extra round trip (restarting_ms comes from guard.lua).
-- Returns 1 taken (or already ours: a request retried after a dropped
-- connection may find its own SET done), 0 held by another value, -N
-- restarting: counted again in N ms.
if redis.replicate_commands then
  -- Before Redis 5, INFO (non-deterministic) would forbid the SET after it.
  redis.replicate_commands()
end
local restarting = restarting_ms(tonumber(ARGV[3]))
if type(restarting) == "table" then
  return restarting
end
if restarting > 0 then
  return -restarting
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return 1
end
-- pcall: a key of another type (WRONGTYPE) is simply someone else's.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
  return 1
end
return 0
