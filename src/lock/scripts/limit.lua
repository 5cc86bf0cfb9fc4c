-- required by: acquire extend
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them).
-- A semaphore's K (--limit K), recorded beside its slots on each server
-- (KEYS[11], NAME\0limit; lock/semaphore.rs), so that clients that disagree
-- on K are refused instead of letting more than the smaller K in. Only a
-- slot's attempt or extension passes it; for every other call `limit` is
-- "" (or nil) and nothing is read or written. The record lives as long as
-- the longest slot held here (an attempt and an extension keep it alive
-- for at least their TTL): once the last holder is gone and its TTL has
-- passed, the record is gone and another K may be used.

-- nil when this server records no K for the semaphore, or `limit`; else
-- an error reply "LIMIT <limit> <the K recorded here>" (the record as
-- stored: any text, which the client escapes), or the error of a record of
-- another type. lock/servers.rs reads LIMIT as a refusal.
local function limit_conflict(limit)
  if not limit or limit == "" then
    return nil
  end
  local recorded = redis.pcall("GET", KEYS[11])
  if type(recorded) == "table" and recorded.err then
    return redis.error_reply("ERR the semaphore's --limit record cannot be read: "
      .. recorded.err)
  end
  if recorded and recorded ~= limit then
    return redis.error_reply("LIMIT " .. limit .. " " .. string.sub(recorded, 1, 40))
  end
  return nil
end

-- Records `limit` here for at least `ttl` ms from now, never shortening
-- it; a record of another K is left alone (limit_conflict refused it).
local function limit_live_for(limit, ttl)
  if not limit or limit == "" or ttl <= 0 then
    return
  end
  local recorded = redis.pcall("GET", KEYS[11])
  if recorded == false then
    redis.call("SET", KEYS[11], limit, "PX", ttl)
  elseif recorded == limit then
    local left = redis.call("PTTL", KEYS[11])
    if left >= 0 and left < ttl then
      redis.call("PEXPIRE", KEYS[11], ttl)
    end
  end
end
