-- requires: holder queue reader_records
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
-- A string is broken only if it looks like a lock, unless ARGV[3] is "1"
-- (--any-key): it expires, it is no longer than ARGV[4] bytes, and it is
-- redlock's: its value has a redlock token's shape (32 lowercase hex
-- digits, lock/key.rs) or a holder record stands beside it, or --if-token
-- named its value. An application's string with a TTL (a session, a
-- cache entry) is none of these; a lock another Redlock client took (a
-- UUID, say) needs --any-key. When ARGV[2] is not empty (--if-token), it
-- is broken only while that token holds it. The third element says what
-- was done: "deleted", "none" (nothing there), or why it was left alone:
-- "type", "no-expiry", "too-long", "not-token", "token". Anything left
-- alone keeps its record and line.
-- KEYS[7] records who broke a lock (see below). Readers (--shared) are
-- broken with the lock, their records with them (break_readers, from
-- reader_records.lua); the fourth element says how many live ones were.

-- Whether `value` has the shape of a redlock token: 128 random bits as 32
-- lowercase hex digits.
local function is_token(value)
  return type(value) == "string" and #value == 32 and not string.find(value, "[^0-9a-f]")
end

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
  elseif ARGV[3] ~= "1" and ARGV[2] == "" and not seen[4] and not is_token(seen[2]) then
    return "not-token"
  end
  return "deleted"
end

-- A key with a NUL byte in it is one redlock keeps beside a lock (a holder
-- record, a line, a fence counter, readers, the restart guard's marker), or
-- beside one under another prefix, never a lock: it is refused whatever
-- the flags, before anything is read or deleted. The client refuses such a
-- name first (lock/key.rs, reserved_in); this is for one that did not.
if string.find(KEYS[1], "\0", 1, true) then
  return redis.error_reply("redlock: refused to break a key holding a NUL byte: " ..
    "it is one of redlock's own keys, not a lock")
end

local seen = occupant()
local done = verdict(seen)
local waiters = 0
local readers = 0
if done == "deleted" or done == "none" then
  readers = break_readers(seen[5])
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
  if done == "deleted" or waiters > 0 or readers > 0 then
    redis.pcall("PUBLISH", ARGV[1], "")
  end
end
return {seen, waiters, done, readers}
