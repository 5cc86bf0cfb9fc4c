-- Shared by acquire.lua, extend.lua and inspect.lua, put in front of each.
-- KEYS[2] is the holder record beside the lock KEYS[1]: "<since> <record>",
-- where <since> is this server's clock in ms when the lock was taken (so
-- that the age shown never depends on two hosts' clocks agreeing) and
-- <record> is what the client wrote (lock/holder.rs). The record lives and
-- dies with the lock: same expiry, deleted with it.
if redis.replicate_commands then
  -- Before Redis 5, TIME and INFO (non-deterministic) would forbid writes.
  redis.replicate_commands()
end

local function now_ms()
  local time = redis.call("TIME")
  return string.format("%.0f", tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000))
end

-- The record under `record_key` (KEYS[2] by default), or false when there
-- is none (or it is not a string).
local function holder_record(record_key)
  local record = redis.pcall("GET", record_key or KEYS[2])
  if type(record) ~= "string" then
    return false
  end
  return record
end

-- Writes the record with the lock's remaining life; keeps the time the lock
-- was taken when it rewrites one. An empty record writes nothing.
local function write_holder(record, ttl_ms, keep_since)
  if record == "" or ttl_ms <= 0 then
    return
  end
  local since = nil
  if keep_since then
    local old = holder_record()
    since = old and string.match(old, "^(%d+) ")
  end
  redis.call("SET", KEYS[2], (since or now_ms()) .. " " .. record, "PX", ttl_ms)
end

-- Who occupies `key` (KEYS[1] by default; its record is `record_key`,
-- KEYS[2] by default), as status and a busy acquire show it:
-- {type, value (strings only, else false), remaining ms, record or false,
--  this server's clock in ms}.
local function occupant(key, record_key)
  key = key or KEYS[1]
  local kind = redis.call("TYPE", key)["ok"]
  local value = false
  if kind == "string" then
    value = redis.call("GET", key)
  end
  return {kind, value, redis.call("PTTL", key), holder_record(record_key), now_ms()}
end

