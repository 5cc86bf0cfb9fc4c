-- required by: acquire release extend inspect force leave
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them).
-- The line of waiters for the lock KEYS[1]: KEYS[3] orders their tickets
-- (score: when the waiter arrived, by the servers' clocks as the waiter saw
-- them; equal scores fall back to the ticket's text, so every server orders
-- the same tickets the same way), KEYS[4] holds when each ticket lapses
-- (score: this server's clock in ms) unless its waiter comes back, and
-- KEYS[5] since when the line has kept a free lock from callers. All three
-- expire a linger after the last visit, so a line nobody stands in
-- vanishes. The line is advisory: it only ever keeps a caller from taking
-- the lock, never lets one take it, so it cannot weaken mutual exclusion.
-- Every call is a pcall, and a server where any of them fails (an ACL
-- without some of the sorted-set commands, a key of another type) has no
-- line at all: a half-kept line could keep dead tickets for ever.

local function failed(reply)
  return type(reply) == "table" and reply.err ~= nil
end

-- Drops the waiters that stopped coming back by `now`; returns the first
-- one still in line (its ticket), or nil when nobody is, or the line
-- cannot be kept here. A first ticket without a lapse time (left by a
-- failed write) counts as lapsed.
local function first_in_line(now)
  local lapsed = redis.pcall("ZRANGEBYSCORE", KEYS[4], "-inf", now, "LIMIT", 0, 64)
  if failed(lapsed) then
    return nil
  end
  if #lapsed > 0 and (failed(redis.pcall("ZREM", KEYS[3], unpack(lapsed)))
    or failed(redis.pcall("ZREM", KEYS[4], unpack(lapsed)))) then
    return nil
  end
  local first = redis.pcall("ZRANGE", KEYS[3], 0, 0)
  if failed(first) or first[1] == nil then
    return nil
  end
  local lapses = redis.pcall("ZSCORE", KEYS[4], first[1])
  if failed(lapses) then
    return nil
  end
  if not lapses then
    redis.pcall("ZREM", KEYS[3], first[1])
    return nil
  end
  return first[1]
end

-- The tickets ahead of `ticket` in line, the first 16 at most: a waiter
-- refused here tells from them whether the servers' lines disagree
-- (lock/line.rs). All of the first 16 when `ticket` is not among them.
local function tickets_ahead(ticket)
  local first = redis.pcall("ZRANGE", KEYS[3], 0, 15)
  if failed(first) then
    return {}
  end
  local ahead = {}
  for _, t in ipairs(first) do
    if t == ticket then
      break
    end
    ahead[#ahead + 1] = t
  end
  return ahead
end

-- How many waiters stand in line, lapsed ones left out (0 when the line
-- cannot be kept here).
local function waiters_in_line(now)
  local count = redis.pcall("ZCOUNT", KEYS[4], "(" .. now, "+inf")
  return failed(count) and 0 or count
end

-- Whether the line must step aside for a free lock: it has kept the free
-- lock from callers for `bound` ms in a row. Waiters that die one after
-- another each keep their place for a linger; this caps the sum, so that a
-- storm of dead waiters costs a free lock at most `bound` at a time.
-- A `since` that is not a number, or lies in this server's future (its
-- clock stepped back, or someone wrote it), starts the count afresh, with
-- an expiry: it would otherwise fail every acquire here, or keep the lock
-- from callers for as long as the key stays.
local function line_steps_aside(now, bound)
  local since = redis.pcall("GET", KEYS[5])
  if failed(since) then
    return true
  end
  since = since and tonumber(since)
  if not since or since ~= since or since > tonumber(now) then
    redis.pcall("SET", KEYS[5], string.format("%.0f", now), "PX", bound * 2)
    return false
  end
  return now - since >= bound
end

-- Puts `ticket` in line (or keeps it there) until `now + linger` ms, at
-- `score`; a ticket back after it lapsed gets its old score again.
local function stand_in_line(ticket, score, now, linger)
  redis.pcall("ZADD", KEYS[3], score, ticket)
  redis.pcall("ZADD", KEYS[4], now + linger, ticket)
  redis.pcall("PEXPIRE", KEYS[3], linger)
  redis.pcall("PEXPIRE", KEYS[4], linger)
end

-- Takes `ticket` out of line.
local function leave_line(ticket)
  redis.pcall("ZREM", KEYS[3], ticket)
  redis.pcall("ZREM", KEYS[4], ticket)
end

-- Removes the whole line; returns how many waiters stood in it.
local function clear_line(now)
  local waiters = waiters_in_line(now)
  redis.pcall("DEL", KEYS[3], KEYS[4], KEYS[5])
  return waiters
end
