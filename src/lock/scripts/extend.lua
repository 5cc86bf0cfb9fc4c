-- requires: token holder queue reader_records shared limit
-- Compare-and-expire: push the expiry out to ARGV[2] ms from now, only while
-- the key still holds our token. Never shortens it: a process that extends
-- with a shorter TTL must not cut short a lease its supervisor relies on.
-- A missing key is never re-created: once it expired, it may already belong
-- to someone else on the other servers. The holder record follows the lock's
-- expiry; a non-empty ARGV[3] replaces it (exec adds the command's pid).
-- ARGV[4], when not empty, is a semaphore slot's K (limit.lua).
-- Returns 1 if the token holds the key, 0 if the key is gone, 2 if another
-- value holds it (lock/scripts/token.rs parses it). (token_state and
-- not_held_reply come from token.lua, the holder functions from
-- holder.lua.)
-- ARGV[5] is the request's deadline on this server's clock ("": none;
-- lock/server_clock.rs). An extension held up past it, in a partition or
-- behind a paused server, does nothing: delivered after its holder's
-- release, it would keep the key a whole TTL more, and the release behind
-- it may never arrive.
local now = now_ms()
local not_after = tonumber(ARGV[5])
if not_after and now and tonumber(now) > not_after then
  return {"late", now}
end
-- A slot's extension (ARGV[4] its K) must carry the slot's code, which
-- keeps its K recorded: refuse rather than fail open.
-- unless limit:
if ARGV[4] and ARGV[4] ~= "" then
  return redis.error_reply("ERR a slot's extension sent without the slot's code")
end
-- end when
local state = token_state()
if type(state) == "table" then
  return state
end
if state ~= "held" and reader_state(state) == "held" then
  return extend_reader()
elseif state ~= "held" then
  return not_held_reply(state)
end
local wanted = tonumber(ARGV[2])
local left = redis.call("PTTL", KEYS[1])
if left >= 0 and left < wanted then
  redis.call("PEXPIRE", KEYS[1], wanted)
  left = wanted
end
-- A semaphore's slot (ARGV[4] its K, KEYS[11] the record) keeps its K
-- recorded as long as it is held (limit.lua).
-- when limit:
limit_live_for(ARGV[4], left)
-- end when
if ARGV[3] ~= "" then
  write_holder(ARGV[3], left, true)
else
  follow_lock(left)
end
return 1
