-- required by: acquire inspect list
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/source.rs assembles them).
-- The restart guard: a server that may have lost the locks it held (it
-- restarted without persistence, was flushed, evicted keys, or was
-- replaced behind the same address) must not count toward a quorum until
-- every lock it may have lost has expired (antirez, "Distributed locks with
-- Redis": delayed restarts). Every lock's TTL is at most the guard, so the
-- guard, counted from the latest moment the loss can have happened, is
-- enough.
--
-- That moment is kept in a marker key (`marker`), written without expiry
-- the first time redlock sees the server, so that it goes wherever the
-- locks go: "<since ms> <run_id> <evicted_keys>", in this server's clock.
--   * no marker (a fresh or restarted server without persistence, a
--     FLUSHALL/FLUSHDB, the marker itself evicted, a new server behind the
--     address): the loss may have happened at any time up to now, so the
--     guard starts now. A server never seen before costs one guard too: it
--     cannot be told from one that lost its data.
--   * another run_id (it restarted and reloaded its data, marker included):
--     what it lost, it lost by the time it started, which is before
--     now - (uptime_in_seconds - 1) s, since that uptime is floor(now) -
--     floor(start) in whole seconds and can read 1 a few ms after start.
--   * more evicted_keys than the marker saw: a key may have been a lock, so
--     the guard starts now.
-- Times are this server's TIME in ms, never another host's clock.

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

-- When this server may last have lost locks, by its own clock (ms), given
-- the marker's value `old` (false when there is none), updated for what
-- INFO says now. Returns since, the marker's new value, or nil and an error.
local function loss_since(old, now)
  local server = redis.call("INFO", "server")
  local run_id = info_field(server, "run_id")
  local uptime = tonumber(info_field(server, "uptime_in_seconds") or "")
  local evicted = info_field(redis.call("INFO", "stats"), "evicted_keys")
  if not (run_id and uptime and evicted) then
    return nil, "ERR INFO lacks run_id, uptime_in_seconds or evicted_keys, which the restart guard reads"
  end
  local since = now
  local o_since, o_run, o_evicted = string.match(old or "", "^(%d+) (%S+) (%d+)$")
  if o_since and o_evicted == evicted then
    since = tonumber(o_since)
    if o_run ~= run_id then
      since = math.max(since, now - math.max(uptime - 1, 0) * 1000)
    end
  end
  return since, string.format("%.0f %s %s", since, run_id, evicted)
end

-- The restart guard's word on this server under a guard of `guard` ms (0
-- turns it off), in the one shape every script replies it in: false when
-- the server counts, {"restarting", ms until it counts again, this server's
-- clock in ms} when it does not; or an error reply (a table with `err`) to
-- return as it is. Writes the marker `marker` when it is missing or out of
-- date.
local function restart_guard(guard, marker)
  if guard <= 0 then
    return false
  end
  local old = redis.pcall("GET", marker)
  if type(old) == "table" and old.err then
    return redis.error_reply("ERR the restart guard's marker key is not a string: " .. old.err)
  end
  local now = time_ms()
  local since, value = loss_since(old, now)
  if not since then
    return redis.error_reply(value)
  end
  if value ~= old then
    redis.call("SET", marker, value)
  end
  -- A clock stepped back puts `since` in the future: the guard then runs
  -- from `since`, which is later, never earlier.
  local left = since + guard - now
  if left > 0 then
    return {"restarting", left, now}
  end
  return false
end
