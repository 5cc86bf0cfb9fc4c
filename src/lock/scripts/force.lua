-- requires: holder queue shared
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
-- A string is broken only if it looks like a lock: it expires, and it is
-- no longer than ARGV[4] bytes (a token), unless ARGV[3] is "1"
-- (--any-key); and, when ARGV[2] is not empty (--if-token), only while
-- that token holds it. The third element says what was done: "deleted",
-- "none" (nothing there), or why it was left alone: "type", "no-expiry",
-- "too-long", "token". Anything left alone keeps its record and line. The
-- fourth is how many live readers (`--shared`) held it.
-- KEYS[7] records who broke a lock (see below).
local function verdict(seen)
  if seen[1] == "none" then
    return "none"
  elseif seen[1] ~= "string" then
    return "type"
  elseif ARGV[2] ~= "" and seen[2] ~= ARGV[2] then
    return "token"
  elseif ARGV[3] ~= "1" and seen[3] < 0 then
    return "no-expiry"
  elseif ARGV[3] ~= "1" and (type(seen[2]) ~= "string" or #seen[2] > tonumber(ARGV[4])) then
    -- occupant() gives a long value's length instead of its bytes.
    return "too-long"
  end
  return "deleted"
end

-- Where no key holds the lock, its readers (`--shared`, shared.lua) are
-- broken as a writer is: all of them, or with --if-token only that token
-- ("token" when it is not among them). A lock held by readers alone would
-- otherwise read as free, and stay in a writer's way.
local function break_readers(done, now)
  if done ~= "none" or live_readers(now) == 0 then
    return done
  end
  if ARGV[2] == "" then
    redis.call("DEL", KEYS[9])
    return "deleted"
  elseif redis.call("ZREM", KEYS[9], ARGV[2]) == 1 then
    return "deleted"
  end
  return "token"
end

local seen = occupant()
local readers = live_readers(seen[5])
local done = break_readers(verdict(seen), seen[5])
local waiters = 0
if done == "deleted" or done == "none" then
  if redis.call("TYPE", KEYS[2])["ok"] == "string" then
    redis.call("DEL", KEYS[2])
  end
  if seen[5] then
    waiters = clear_line(seen[5])
  end
  if done == "deleted" then
    redis.call("DEL", KEYS[1])
    -- Who broke it (ARGV[5]), beside it for what was left of its TTL, so
    -- that its holder and status can tell; information only.
    if ARGV[5] ~= "" and seen[5] and seen[3] > 0 then
      redis.pcall("SET", KEYS[7], seen[5] .. " " .. ARGV[5], "PX", seen[3])
    end
  end
  if done == "deleted" or waiters > 0 then
    redis.pcall("PUBLISH", ARGV[1], "")
  end
end
return {seen, waiters, done, readers}
