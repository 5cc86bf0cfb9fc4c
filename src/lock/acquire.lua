-- Take the lock: SET key token NX PX ttl, unless this server started less
-- than ARGV[3] ms ago (the restart guard; 0 turns it off), or others are in
-- line before the caller; and write the holder record ARGV[4] beside it. A
-- server that restarted without persistence forgot the locks it held, so it
-- must not count toward a quorum until every lock it may have held has
-- expired (antirez, "Distributed locks with Redis": delayed restarts).
-- Deciding it here costs no extra round trip (restarting_ms comes from
-- guard.lua, the holder functions from holder.lua, the line from queue.lua).
-- ARGV[5] is the caller's ticket ("" for a caller that does not wait: it
-- never stands in line, and takes the lock only when nobody does), ARGV[6]
-- its score, ARGV[7] how long a ticket stays without its waiter.
-- Returns 1 taken (or already ours: a request retried after a dropped
-- connection may find its own SET done), -N restarting: counted again in
-- N ms, "queued" when the lock is free but others are first in line, or,
-- when another value holds it, who does: occupant().
local restarting = restarting_ms(tonumber(ARGV[3]))
if type(restarting) == "table" then
  return restarting
end
if restarting > 0 then
  return -restarting
end
local ticket = ARGV[5]
local now = now_ms()
local first = nil
if now then
  first = first_in_line(now)
end
if first == nil or first == ticket then
  if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    write_holder(ARGV[4], tonumber(ARGV[2]), false)
    if first then
      leave_line(ticket)
    end
    return 1
  end
  -- pcall: a key of another type (WRONGTYPE) is simply someone else's.
  if redis.pcall("GET", KEYS[1]) == ARGV[1] then
    return 1
  end
end
if ticket ~= "" and now then
  stand_in_line(ticket, ARGV[6], tonumber(now), tonumber(ARGV[7]))
end
local seen = occupant()
if seen[1] == "none" then
  return redis.status_reply("queued")
end
return seen
