-- required by: acquire inspect raise_fence
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them).
-- The lock's fencing counter, KEYS[8]: the highest fencing token handed
-- out for the name, in decimal digits, kept without expiry (lock/fence.rs).
-- Only a name taken with --fence has one. Counters are compared as digit
-- strings (by length, then by text), so that every u64 is exact: Lua's
-- numbers are doubles.

-- The counter: its digits, false when there is none, or an error reply
-- when the key holds anything but a counter redlock can have written
-- (another type, a string that is not one, or a number at or above
-- 2^63 - 1, FENCE_CEILING: redlock hands out at most 2^63 - 2): never read
-- as 0, which would hand out a lower token, nor used, which would hand out
-- one that storage keeping signed 64-bit numbers cannot hold. The error
-- names the value (cut to 40 bytes; the client escapes it), and starts
-- with an error code, as a Redis error does.
local FENCE_CEILING = "9223372036854775807"

local function fence_read()
  local raw = redis.pcall("GET", KEYS[8])
  if type(raw) == "table" and raw.err then
    return redis.error_reply("ERR the fencing counter cannot be read: " .. raw.err)
  end
  if raw == false then
    return false
  end
  if #raw > 20 or not (raw == "0" or string.match(raw, "^[1-9]%d*$")) then
    local shown = string.sub(raw, 1, 40)
    if #raw > 40 then
      shown = shown .. "...[+" .. (#raw - 40) .. " bytes]"
    end
    return redis.error_reply("ERR the fencing counter is not a number: '" .. shown .. "'")
  end
  if #raw > #FENCE_CEILING or (#raw == #FENCE_CEILING and raw >= FENCE_CEILING) then
    return redis.error_reply("ERR the fencing counter " .. raw
      .. " is at or above 2^63-1, which redlock never hands out")
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
