-- What one server holds for a lock, in one atomic read: occupant() (from
-- holder.lua), then the ms until the restart guard counts this server again
-- (0: it counts; ARGV[1] is the guard in ms, 0 turns it off, and KEYS[6]
-- its marker; restarting_ms comes from guard.lua), then how many waiters
-- stand in the lock's line (from queue.lua; lapsed ones left out).
local restarting = restarting_ms(tonumber(ARGV[1]), KEYS[6])
if type(restarting) == "table" then
  return restarting
end
local seen = occupant()
seen[6] = restarting
seen[7] = 0
if seen[5] then
  seen[7] = waiters_in_line(seen[5])
end
return seen
