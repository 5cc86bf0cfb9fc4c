-- What one server holds for many locks at once, for `list`: KEYS[1] is the
-- restart guard's marker, then pairs of a lock's key and its holder
-- record's key (none at all is fine). Returns the ms until the restart
-- guard counts this server again (0: it counts; ARGV[1] is the guard in ms,
-- 0 turns it off), then one occupant() per pair (restarting_ms comes from
-- guard.lua, occupant from holder.lua).
local restarting = restarting_ms(tonumber(ARGV[1]), KEYS[1])
if type(restarting) == "table" then
  return restarting
end
local seen = {restarting}
for i = 2, #KEYS, 2 do
  seen[#seen + 1] = occupant(KEYS[i], KEYS[i + 1])
end
return seen
