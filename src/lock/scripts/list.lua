-- requires: guard holder reader_records supersede
-- What one server holds for many locks at once, for `list`: KEYS[1] is the
-- restart guard's marker, then for each lock its key, its holder
-- record's key, its superseding waiters' hash, its line's lapse times
-- (supersede.lua) and its done mark's key, and, where ARGV[2] has a "1"
-- for it (one character per lock: SCAN found a readers' set beside it),
-- its readers' set and their records' key too (none at all is fine).
-- Returns the restart guard's word (restart_guard, from guard.lua: false
-- when this server counts, else {"restarting", ms until it counts again,
-- clock}; ARGV[1] is the guard in ms, 0 turns it off), then for each lock
-- its occupant() (from holder.lua), or, when live readers hold it,
-- {occupant(), readers_listed() (reader_records.lua)}: most locks have no
-- readers, and their reply stays as short as it was. A lock with a pending
-- superseding waiter is {occupant(), readers_listed() or false, its WHO}, and
-- one with a done mark {occupant(), readers_listed() or false, its WHO or
-- false, the mark}.
-- lock/scripts/list.rs parses the reply.
local restarting = restart_guard(tonumber(ARGV[1]), KEYS[1], ARGV[#ARGV])
if restarting and restarting.err then
  return restarting
end
local seen = {restarting}
-- One TIME for the batch: a batch takes well under a millisecond per key,
-- and the clock only dates the holders' ages.
local now = now_ms()
local i = 2
for n = 1, #ARGV[2] do
  local held = occupant(KEYS[i], KEYS[i + 1], now)
  local superseder = now and pending_superseder(KEYS[i + 2], KEYS[i + 3], tonumber(now))
  local mark = redis.call("GET", KEYS[i + 4])
  local readers = false
  if string.sub(ARGV[2], n, n) == "1" then
    readers = readers_listed(KEYS[i + 5], KEYS[i + 6], now)
    if readers[1] == 0 then
      readers = false
    end
    i = i + 7
  else
    i = i + 5
  end
  if mark then
    held = {held, readers, superseder or false, mark}
  elseif superseder then
    held = {held, readers, superseder}
  elseif readers then
    held = {held, readers}
  end
  seen[#seen + 1] = held
end
return seen
