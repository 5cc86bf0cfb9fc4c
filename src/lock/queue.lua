-- Shared by acquire.lua (and leave.lua), put after holder.lua.
-- The line of waiters for the lock KEYS[1]: KEYS[3] orders their tickets
-- (score: when the waiter started waiting, by its own clock; equal scores
-- fall back to the ticket's text, so every server orders the same tickets
-- the same way), KEYS[4] holds when each ticket lapses (score: this
-- server's clock in ms) unless its waiter comes back. Both keys expire a
-- linger after the last waiter's visit, so a line nobody stands in
-- vanishes. The line is advisory: it only ever keeps a caller from taking
-- the lock, never lets one take it, so it cannot weaken mutual exclusion.
-- Every call is a pcall: a server that will not keep a line (an ACL
-- without the sorted-set commands, a key of another type) has none.

-- Drops the waiters that stopped coming back by `now`; returns the first
-- one still in line (its ticket), or nil.
local function first_in_line(now)
  local lapsed = redis.pcall("ZRANGEBYSCORE", KEYS[4], "-inf", now, "LIMIT", 0, 64)
  if type(lapsed) == "table" and not lapsed.err and #lapsed > 0 then
    redis.pcall("ZREM", KEYS[3], unpack(lapsed))
    redis.pcall("ZREM", KEYS[4], unpack(lapsed))
  end
  local first = redis.pcall("ZRANGE", KEYS[3], 0, 0)
  if type(first) ~= "table" or first.err then
    return nil
  end
  return first[1]
end

-- Puts `ticket` in line (or keeps it there) until `now + linger` ms.
local function stand_in_line(ticket, score, now, linger)
  redis.pcall("ZADD", KEYS[3], "NX", score, ticket)
  redis.pcall("ZADD", KEYS[4], now + linger, ticket)
  redis.pcall("PEXPIRE", KEYS[3], linger)
  redis.pcall("PEXPIRE", KEYS[4], linger)
end

-- Takes `ticket` out of line.
local function leave_line(ticket)
  redis.pcall("ZREM", KEYS[3], ticket)
  redis.pcall("ZREM", KEYS[4], ticket)
end

