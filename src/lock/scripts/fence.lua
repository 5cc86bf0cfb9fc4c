-- required by: acquire inspect raise_fence
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/source.rs assembles them).
-- The lock's fencing counter, KEYS[8]: the highest fencing token handed
-- out for the name, in decimal digits, kept without expiry (lock/fence.rs).
-- Only a name taken with --fence has one. Counters are compared as digit
-- strings (by length, then by text), so that every u64 is exact: Lua's
-- numbers are doubles.

-- The counter: its digits, false when there is none, or an error reply
-- when the key holds anything but a counter (another type, or a string
-- that is not one): never read as 0, which would hand out a lower token.
local function fence_read()
  local raw = redis.pcall("GET", KEYS[8])
  if type(raw) == "table" and raw.err then
    return redis.error_reply("the fencing counter " .. raw.err)
  end
  if raw == false then
    return false
  end
  if #raw > 20 or not (raw == "0" or string.match(raw, "^[1-9]%d*$")) then
    return redis.error_reply("the fencing counter of this lock is not a number")
  end
  return raw
end

-- Whether the digit string a is below b (both without leading zeros).
local function fence_below(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end

-- acquire.lua's reply once the lock is ours: 1, or, when the caller fences
-- (ARGV[8] is "1"), {"taken", the counter's digits ("0" for none)}.
local function taken_reply()
  if ARGV[8] ~= "1" then
    return 1
  end
  local counter = fence_read()
  if type(counter) == "table" then
    return counter
  end
  return {"taken", counter or "0"}
end
