-- required by: acquire acquire_plain release extend inspect list force leave cancel cancelled mark_done
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them). Every script
-- requires it, if only for redis.replicate_commands() below.
-- KEYS[2] is the holder record beside the lock KEYS[1]: "<since> <record>",
-- where <since> is this server's clock in ms when the lock was taken (so
-- that the age shown never depends on two hosts' clocks agreeing) and
-- <record> is what the client wrote (lock/holder.rs). The record lives and
-- dies with the lock: same expiry, deleted with it.
if redis.replicate_commands then
  -- Before Redis 5, TIME and INFO (non-deterministic) would forbid writes.
  redis.replicate_commands()
end

-- This server's clock in ms, or false when TIME is denied (an ACL without
-- +time): the holder record is information only, never a reason to fail.
local function now_ms()
  local time = redis.pcall("TIME")
  if type(time) ~= "table" or time.err then
    return false
  end
  return string.format("%.0f", tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000))
end

-- The longest lock value and holder record read back: far above any token
-- a Redlock client uses and any record redlock writes (lock/holder.rs
-- caps those at 32 KiB), far below a reply that takes long to send. A
-- longer value is no token; it is never moved, only its length is.
local LONGEST_VALUE = 1024
local LONGEST_RECORD = 33 * 1024

-- The length of the string at `key`, or nil when STRLEN says nothing (a
-- key of another type, or an ACL from before redlock used STRLEN): then
-- the caller's GET decides, as it always did.
local function string_length(key)
  local length = redis.pcall("STRLEN", key)
  return type(length) == "number" and length or nil
end

-- Whether the string at `key` is `value`, without moving a longer one.
-- pcall: a key of another type (WRONGTYPE) is simply not `value`.
local function holds_value(key, value)
  local length = string_length(key)
  if length and length ~= #value then
    return false
  end
  return redis.pcall("GET", key) == value
end

-- The record under `record_key` (KEYS[2] by default), or false when there
-- is none (or it is not a string, or longer than any record).
local function holder_record(record_key)
  record_key = record_key or KEYS[2]
  local length = string_length(record_key)
  if length and length > LONGEST_RECORD then
    return false
  end
  local record = redis.pcall("GET", record_key)
  return type(record) == "string" and record
end

-- Whether KEYS[2] may be written or deleted: missing, or a string (a
-- record). A key of another type there is someone else's; left alone.
local function record_writable()
  local kind = redis.pcall("TYPE", KEYS[2])
  return type(kind) == "table" and (kind["ok"] == "none" or kind["ok"] == "string")
end

-- Writes the record with the lock's remaining life; keeps the time the lock
-- was taken when it rewrites one. An empty record writes nothing. The record
-- is information only: whatever fails here (an ACL without +time, a full
-- server) must not fail the lock operation it rides on, so every call is a
-- pcall and a failure just leaves no record.
local function write_holder(record, ttl_ms, keep_since)
  if record == "" or ttl_ms <= 0 or not record_writable() then
    return
  end
  local since = nil
  if keep_since then
    local old = holder_record()
    since = old and string.match(old, "^(%d+) ")
  end
  since = since or now_ms()
  if not since then
    return
  end
  redis.pcall("SET", KEYS[2], since .. " " .. record, "PX", ttl_ms)
end

-- Gives the record the lock's remaining life, or deletes it (left <= 0).
local function follow_lock(left)
  if not record_writable() then
    return
  end
  if left > 0 then
    redis.pcall("PEXPIRE", KEYS[2], left)
  elseif left == -2 then
    redis.pcall("DEL", KEYS[2])
  end
end

-- Who occupies `key` (KEYS[1] by default; its record is `record_key`,
-- KEYS[2] by default), as status and a busy acquire show it:
-- {type, value (strings only, else false; for a string longer than
--  LONGEST_VALUE its length instead), remaining ms, record or false,
--  this server's clock in ms or false}. `now` is that clock when the
-- caller read it already (list reads it once for a whole batch).
local function occupant(key, record_key, now)
  key = key or KEYS[1]
  local kind = redis.call("TYPE", key)["ok"]
  local value = false
  if kind == "string" then
    local length = string_length(key)
    if length and length > LONGEST_VALUE then
      value = length
    else
      value = redis.call("GET", key)
    end
  end
  return {kind, value, redis.call("PTTL", key), holder_record(record_key), now or now_ms()}
end

