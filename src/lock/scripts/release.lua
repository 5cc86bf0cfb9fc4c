-- requires: token holder queue reader_records shared
-- Compare-and-delete: remove the lock, and its holder record, only while it
-- still holds our token. (token_state comes from token.lua, record_writable
-- from holder.lua.) A delete is announced on the channel ARGV[2], when one
-- is given (lock/notify.rs), so that waiters try again at once. pcall: the
-- announcement is an optimisation, and an ACL without PUBLISH (or without
-- the channel) must not fail the release. The message is the ticket of
-- the waiter first in line (first_in_line, queue.lua), sent on that
-- waiter's own channel, or empty when nobody stands in line: only that
-- waiter can take the lock, so only it wakes, and the others wait for
-- their turn (announce, shared.lua). Undoing a failed attempt, the
-- waiter's ticket ARGV[3] (score ARGV[4], lingering ARGV[5] ms) goes back
-- in line, where the attempt took it out (acquire.lua). Returns 1 deleted,
-- else as not_held_reply says: 0 the key is gone, 2 another value holds it
-- (lock/scripts/token.rs parses it).
-- A call that puts no ticket back, releases no reader's token or announces
-- nothing leaves out that part (the `-- when` blocks, lock/scripts/
-- source.rs): a plain release is compare-and-delete and its record.
-- when line:
if ARGV[3] and ARGV[3] ~= "" then
  local now = now_ms()
  if now then
    stand_in_line(ARGV[3], ARGV[4], tonumber(now), tonumber(ARGV[5]))
  end
end
-- end when
local state = token_state()
if type(state) == "table" then
  return state
end
-- when readers:
if state ~= "held" and reader_state(state) == "held" then
  return release_reader()
end
-- end when
if state == "held" then
  if record_writable() then
    redis.pcall("DEL", KEYS[2])
  end
  local deleted = redis.call("DEL", KEYS[1])
  -- when announce:
  if ARGV[2] and ARGV[2] ~= "" then
    announce(ARGV[2])
  end
  -- end when
  return deleted
end
return not_held_reply(state)
