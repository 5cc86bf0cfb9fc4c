-- requires: token holder queue
-- Compare-and-delete: remove the lock, and its holder record, only while it
-- still holds our token. (holds_token comes from token.lua, record_writable
-- from holder.lua.) A delete is announced on the channel ARGV[2], when one
-- is given (lock/notify.rs), so that waiters try again at once. pcall: the
-- announcement is an optimisation, and an ACL without PUBLISH (or without
-- the channel) must not fail the release. The message is the ticket of
-- the waiter first in line (first_in_line, queue.lua), or empty when nobody
-- stands in line: only that waiter can take the lock, so only it tries at
-- once, and the others wait for their turn. Returns 1 deleted, 0 not ours
-- (lock/scripts/token.rs parses it).
local held = holds_token()
if type(held) == "table" then
  return held
end
if held then
  if record_writable() then
    redis.pcall("DEL", KEYS[2])
  end
  local deleted = redis.call("DEL", KEYS[1])
  if ARGV[2] and ARGV[2] ~= "" then
    redis.pcall("PUBLISH", ARGV[2], next_waiter())
  end
  return deleted
end
return 0
