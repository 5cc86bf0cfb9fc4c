-- requires: guard holder
-- The plain acquire (issue 30): what a caller with none of acquire.lua's
-- features and no place in line sends (`acquire -n`, and a waiter's first
-- attempt; lock/scripts/acquire.rs picks it). It takes the lock only where
-- acquire.lua would take it without reading the line or the readers: the
-- key free, and no line (KEYS[3]), no count of how long the line kept the
-- lock free (KEYS[5]) and no readers (KEYS[9]) beside it. Where any of
-- those is there it writes nothing and answers {"crowded", clock}: the
-- caller's next attempt, at once, sends acquire.lua whole, which decides
-- (lock/core/retry.rs). So this text takes a free lock in a subset of the
-- cases that acquire.lua takes it in, and the line, the readers and the
-- step-aside are read only where they exist. (A request retried after a
-- dropped connection that finds its own SET counts it as its own here,
-- line or not; acquire.lua does so where nobody else is first in line.) The same KEYS and ARGV as acquire.lua; its
-- other replies are acquire.lua's: 1 taken (or already ours), {"held",
-- occupant()}, {"restarting", ...} (restart_guard, guard.lua), {"late",
-- clock}. TYPE, not EXISTS: the commands an ACL must allow stay those of
-- acquire.lua (docs/operations.md).
local now = now_ms()
local not_after = tonumber(ARGV[15])
if not_after and now and tonumber(now) > not_after then
  return {"late", now}
end
-- A waiter's or a feature's attempt must never get this text: it would
-- take a lock the line, the fence, the readers, a slot's K, a superseding
-- waiter or a done mark should have kept it from. Refuse, not fail open.
if ARGV[5] ~= "" or ARGV[8] == "1" or ARGV[9] == "1" or (ARGV[10] or "") ~= ""
  or ARGV[11] == "1" or (ARGV[12] or "") ~= "" or (ARGV[14] or "") ~= "" then
  return redis.error_reply("ERR a waiter's or a feature's attempt sent as a plain acquire")
end
local function present(key)
  return redis.call("TYPE", key)["ok"] ~= "none"
end
if present(KEYS[1]) then
  -- A request retried after a dropped connection may find its own SET.
  if holds_value(KEYS[1], ARGV[1]) then
    return 1
  end
  return {"held", occupant()}
end
if present(KEYS[3]) or present(KEYS[5]) or present(KEYS[9]) then
  return {"crowded", now}
end
local restarting = restart_guard(tonumber(ARGV[3]), KEYS[6], ARGV[#ARGV])
if restarting then
  return restarting
end
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return {"held", occupant()}
end
write_holder(ARGV[4], tonumber(ARGV[2]), false)
return 1
