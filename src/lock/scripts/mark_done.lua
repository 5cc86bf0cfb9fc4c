-- requires: holder token
-- The done mark of a run once per period or key (lock/once.rs): written by
-- the holder after its command succeeded and before it releases, only
-- while the lock KEYS[1] still holds its token ARGV[1], so that no run
-- that lost its lock marks the period done. KEYS[13] is the mark: ARGV[2]
-- (the run's id, without NUL), then this server's clock in ms, ARGV[3]
-- (the command's status) and ARGV[4] (the holder record), NUL between
-- them; acquire.lua matches the id before the first NUL. It lapses at
-- ARGV[5] ms on this server's clock (PXAT: the period's end and a margin),
-- but never sooner than ARGV[6] ms (the margin) from now: a job that
-- outlasted its period's end and margin would otherwise write a mark that
-- is gone at once (PXAT in the past deletes the key), and a waiter of that
-- period would run it again. When ARGV[5] is empty it lapses after ARGV[6]
-- ms (PX: a key's keep time).
-- (token_state comes from token.lua, now_ms from holder.lua.) Returns 1 written, else as
-- not_held_reply says: 0 the key is gone, 2 another value holds it
-- (lock/scripts/once.rs parses it).
local state = token_state()
if type(state) == "table" then
  return state
end
if state ~= "held" then
  return not_held_reply(state)
end
local now = now_ms()
local mark = ARGV[2] .. "\0" .. (now or "") .. "\0" .. ARGV[3] .. "\0" .. ARGV[4]
local at = tonumber(ARGV[5])
if at and not (now and tonumber(now) + (tonumber(ARGV[6]) or 0) > at) then
  redis.call("SET", KEYS[13], mark, "PXAT", ARGV[5])
else
  redis.call("SET", KEYS[13], mark, "PX", ARGV[6])
end
return 1
