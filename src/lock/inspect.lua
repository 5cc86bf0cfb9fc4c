-- What one server holds for a lock, in one atomic read: occupant() (from
-- holder.lua) and then the ms until the restart guard counts this server
-- again (0: it counts). ARGV[1] is the restart guard in ms; 0 turns it off
-- (restarting_ms comes from guard.lua).
local restarting = restarting_ms(tonumber(ARGV[1]))
if type(restarting) == "table" then
  return restarting
end
local seen = occupant()
seen[6] = restarting
return seen
