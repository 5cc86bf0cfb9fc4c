-- requires: guard holder
-- What one server holds for many locks at once, for `list`: KEYS[1] is the
-- restart guard's marker, then pairs of a lock's key and its holder
-- record's key (none at all is fine). Returns the restart guard's word
-- (restart_guard, from guard.lua: false when this server counts, else
-- {"restarting", ms until it counts again, clock}; ARGV[1] is the guard in
-- ms, 0 turns it off), then one occupant() (from holder.lua) per pair.
-- lock/scripts/list.rs parses the reply.
local restarting = restart_guard(tonumber(ARGV[1]), KEYS[1])
if restarting and restarting.err then
  return restarting
end
local seen = {restarting}
-- One TIME for the batch: a batch takes well under a millisecond per key,
-- and the clock only dates the holders' ages.
local now = now_ms()
for i = 2, #KEYS, 2 do
  seen[#seen + 1] = occupant(KEYS[i], KEYS[i + 1], now)
end
return seen
