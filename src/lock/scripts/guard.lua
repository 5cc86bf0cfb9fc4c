-- required by: acquire acquire_plain inspect list
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them).
-- The restart guard: a server that may have lost the locks it held must
-- not count toward a quorum until every lock it may have lost has expired
-- (antirez, "Distributed locks with Redis": delayed restarts). Every lock's
-- TTL is at most the guard, so the guard, counted from the latest moment
-- the loss can have happened, is enough.
--
-- The marker witnesses the dataset behind the address, not only the
-- process: it is a key written without expiry beside the locks, so that it
-- goes wherever the locks go, and it records what the dataset was when it
-- was last read:
--   "2 <since ms> <cause> <db> <run_id> <master_replid> <evicted_keys>
--    <total_commands_processed>"
-- in this server's clock, rewritten on every read. Any change the server
-- cannot explain is a loss that happened now (since = now), and the cause
-- is kept for the messages:
--   unseen          no marker: never seen by redlock, or its data was lost
--                   (a restart without persistence, FLUSHALL/FLUSHDB, the
--                   marker evicted or deleted, SWAPDB with an empty db)
--   unreadable      a marker that does not parse
--   another-db      the marker of another db index (SWAPDB)
--   another-process another run_id: a restart that reloaded data, a
--                   failover to a replica, or another server behind the
--                   address. Its uptime says nothing: a replica promoted
--                   now has been up for long, and what it missed it lost
--                   now, so a restart costs the guard from first sight.
--   replication     another replication ID in the same process: it became
--                   a replica (a full resync replaced its data) and was
--                   promoted again (REPLICAOF host port, then NO ONE)
--   eviction        evicted_keys moved: a key may have been a lock
--   stats-reset     a counter went down (CONFIG RESETSTAT): evictions
--                   since the marker can no longer be counted
--   clock           the marker is dated after now: the server's clock went
--                   back, or the marker was written by hand; the guard is
--                   counted from now, never from the future
-- What the marker cannot see (DEBUG RELOAD of an older RDB in the same
-- process, a key deleted by hand) is listed in docs/safety.md, with the
-- setting that prevents it. Times are this server's TIME in ms, never
-- another host's clock.

-- This server's TIME in ms, as a number (exact in a double for millennia).
local function time_ms()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- The field `name` of an INFO section's text, or nil.
local function info_field(text, name)
  return string.match(text, "\n" .. name .. ":([^\r\n]*)")
    or string.match(text, "^" .. name .. ":([^\r\n]*)")
end

-- The INFO sections the guard reads: in one call where the server takes
-- several (Redis 7 and later), else one call each.
local function guard_info()
  local all = redis.pcall("INFO", "server", "replication", "stats")
  if type(all) == "string" then
    return all
  end
  return redis.call("INFO", "server") .. "\n" .. redis.call("INFO", "replication")
    .. "\n" .. redis.call("INFO", "stats")
end

-- What the dataset is now: {run_id, replid, evicted, commands}, or nil.
local function dataset_now()
  local info = guard_info()
  local now = {
    info_field(info, "run_id"), info_field(info, "master_replid"),
    tonumber(info_field(info, "evicted_keys") or ""),
    tonumber(info_field(info, "total_commands_processed") or ""),
  }
  if now[1] and now[2] and now[3] and now[4] then
    return now
  end
end

-- Why the dataset the marker `old` saw may not be the one behind the
-- address now (a cause, see above), or nil when nothing changed.
local function change(old, db, seen, now)
  if not old then
    return "unseen"
  end
  local since, cause, o_db, run, replid, evicted, commands = string.match(old,
    "^2 (%d+) (%S+) (%d+) (%S+) (%S+) (%d+) (%d+)$")
  if not since then
    return "unreadable"
  elseif o_db ~= db then
    return "another-db"
  elseif run ~= seen[1] then
    return "another-process"
  elseif replid ~= seen[2] then
    return "replication"
  elseif seen[3] > tonumber(evicted) then
    return "eviction"
  elseif seen[3] < tonumber(evicted) or seen[4] < tonumber(commands) then
    return "stats-reset"
  elseif tonumber(since) > now then
    return "clock"
  end
  return nil, tonumber(since), cause
end

-- The restart guard's word on this server under a guard of `guard` ms (0
-- turns it off), for the db index `db` the caller selected, in the one
-- shape every script replies it in: false when the server counts,
-- {"restarting", ms until it counts again, this server's clock in ms,
-- cause} when it does not; or an error reply (a table with `err`) to
-- return as it is. Rewrites the marker `marker`.
local function restart_guard(guard, marker, db)
  if guard <= 0 then
    return false
  end
  local old = redis.pcall("GET", marker)
  if type(old) == "table" and old.err then
    return redis.error_reply("ERR the restart guard's marker key is not a string: " .. old.err)
  end
  local seen = dataset_now()
  if not seen then
    return redis.error_reply("ERR INFO lacks run_id, master_replid, evicted_keys or "
      .. "total_commands_processed, which the restart guard reads")
  end
  local now = time_ms()
  local cause, since, kept = change(old, db, seen, now)
  since = since or now
  cause = cause or kept
  redis.call("SET", marker, string.format("2 %.0f %s %s %s %s %.0f %.0f",
    since, cause, db, seen[1], seen[2], seen[3], seen[4]))
  local left = since + guard - now
  if left > 0 then
    return {"restarting", left, now, cause}
  end
  return false
end
