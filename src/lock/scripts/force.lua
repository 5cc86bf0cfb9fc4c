-- requires: holder queue
-- Break a lock whoever holds it (`release --force`): delete KEYS[1] and its
-- holder record KEYS[2] in one step, and return what was there before:
-- {occupant() (from holder.lua), how many waiters stood in the lock's line}
-- (lock/scripts/force.rs parses it; this script does not look at the
-- restart guard). The line is cleared too (clear_line comes from
-- queue.lua): a line of dead waiters is as much in the way as a dead
-- holder, and a live waiter takes its old place again at its next
-- attempt. Only a string is a lock: a key of another type is left alone
-- (its type is returned), and so is a record key of another type. A
-- record without its lock is deleted: it can describe no holder. A
-- deleted lock is announced on the channel ARGV[1]
-- (lock/notify.rs), as release.lua does, with pcall for the same reason.
local seen = occupant()
if seen[1] == "string" or seen[1] == "none" then
  if redis.call("TYPE", KEYS[2])["ok"] == "string" then
    redis.call("DEL", KEYS[2])
  end
end
local waiters = 0
if seen[5] then
  waiters = clear_line(seen[5])
end
if seen[1] == "string" or waiters > 0 then
  if seen[1] == "string" then
    redis.call("DEL", KEYS[1])
  end
  redis.pcall("PUBLISH", ARGV[1], "")
end
return {seen, waiters}
