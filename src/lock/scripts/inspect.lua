-- requires: guard holder queue fence reader_records shared supersede
-- What one server holds for a lock, in one atomic read:
-- {occupant(), the restart guard's word, waiters}: occupant() comes from
-- holder.lua; the guard's word (restart_guard, from guard.lua) is false
-- when this server counts, else {"restarting", ms until it counts again,
-- clock} (ARGV[1] is the guard in ms, 0 turns it off, and KEYS[6] its
-- marker); waiters is how many stand in the lock's line (from queue.lua;
-- lapsed ones left out), then who broke the lock with release --force
-- ("<ms> <who>" from KEYS[7], or false). lock/scripts/inspect.rs parses
-- the reply. Last, the fencing counter's digits (fence.lua; false when
-- there is none, or it is not a counter), and the readers (shared.lua's
-- readers_seen: the first 16, and the token ARGV[2] if it is one of them),
-- and the pending superseding waiter's WHO (supersede.lua, KEYS[12]; false
-- for none).
local restarting = restart_guard(tonumber(ARGV[1]), KEYS[6], ARGV[#ARGV])
if restarting and restarting.err then
  return restarting
end
local seen = occupant()
local waiters = 0
if seen[5] then
  waiters = waiters_in_line(seen[5])
end
local broken = false
if KEYS[7] then
  broken = redis.pcall("GET", KEYS[7])
  if type(broken) ~= "string" then
    broken = false
  end
end
local fence = fence_read()
if type(fence) == "table" then
  fence = false
end
local superseder = false
if seen[5] then
  superseder = pending_superseder(KEYS[12], KEYS[4], tonumber(seen[5]))
end
return {seen, restarting, waiters, broken, fence, readers_seen(seen[5], ARGV[2]), superseder}
