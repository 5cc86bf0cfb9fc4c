-- Break a lock whoever holds it (`release --force`): delete KEYS[1] and its
-- holder record KEYS[2] in one step, and return what was there before, as
-- occupant() (from holder.lua) shows it. Only a string is a lock: a key of
-- another type is left alone (its type is returned), and so is a record
-- key of another type. A record without its lock is deleted: it can
-- describe no holder. A deleted lock is announced on the channel ARGV[1]
-- (lock/notify.rs), as release.lua does, with pcall for the same reason.
local seen = occupant()
if seen[1] == "string" or seen[1] == "none" then
  if redis.call("TYPE", KEYS[2])["ok"] == "string" then
    redis.call("DEL", KEYS[2])
  end
end
if seen[1] == "string" then
  redis.call("DEL", KEYS[1])
  redis.pcall("PUBLISH", ARGV[1], "")
end
return seen
