-- requires: token fence
-- The fencing round (lock/fence.rs): raise the counter KEYS[8] to ARGV[2]
-- (digits), never lowering it, and only while the lock KEYS[1] still holds
-- our token ARGV[1], so that the write lands before any later holder can
-- take the lock on this server, and so before its acquire reads the
-- counter here. The key is written without expiry: it must outlive every
-- lock of its name. (token_state comes from token.lua, fence_read and
-- fence_below from fence.lua.) Returns 1 written (or already at least
-- ARGV[2]), else as not_held_reply says: 0 the key is gone, 2 another
-- value holds it (lock/scripts/token.rs parses it).
local state = token_state()
if type(state) == "table" then
  return state
end
if state ~= "held" then
  return not_held_reply(state)
end
local counter = fence_read()
if type(counter) == "table" then
  return counter
end
if counter == false or fence_below(counter, ARGV[2]) then
  redis.call("SET", KEYS[8], ARGV[2])
end
return 1
